/*
 * test_contract.c - the workflow's contract checks (docs/WORKFLOW.md), each proved on a real
 * capture of the sample engine rather than by reading source.
 *
 *   test_contract --setup DIR        run the engine once with a capture; write DIR/engine.mprof,
 *                                    DIR/report.json and DIR/engine.out (ctest fixture)
 *   test_contract --check NAME DIR   one check over what --setup wrote; exit 0 pass, 1 fail,
 *                                    77 skipped (with the reason)
 *
 * Environment: MPROF_BIN (mprof), MPROF_ENGINE_BIN and MPROF_ENGINE_SHIPPING_BIN (the engines).
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Under ThreadSanitizer the engine renders on the CPU: Mesa's lavapipe threads race inside
 * the driver (not our code). Under AddressSanitizer leak checking is off for the engine run:
 * the Vulkan loader and lavapipe keep ~240 bytes to exit. */
#if defined(__SANITIZE_THREAD__)
#define RENDERER "--renderer cpu"
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RENDERER "--renderer cpu"
#endif
#endif
#ifndef RENDERER
#define RENDERER ""
#endif

#define FRAMES 120
#define SKIP 77

static int failures;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(ok ? "  ok    " : "  FAIL  ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    if (!ok)
        failures++;
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static int sh(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    b[got] = 0;
    fclose(f);
    return b;
}

static int setup(const char *dir)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && rm -f '%s'/*.mprof", dir, dir);
    if (sh(cmd) != 0)
        return 1;
    snprintf(cmd, sizeof cmd,
             "ASAN_OPTIONS=detect_leaks=0 MPROF_LISTEN=0 '%s' --frames %d --threads 3 --seed 7 "
             "%s --capture '%s/engine.mprof' > '%s/engine.out' 2>&1",
             env_or("MPROF_ENGINE_BIN", "mprof_engine"), FRAMES, RENDERER, dir, dir);
    if (sh(cmd) != 0) {
        fprintf(stderr, "setup: the engine failed: %s (see %s/engine.out)\n", cmd, dir);
        return 1;
    }
    snprintf(cmd, sizeof cmd, "'%s' report --json --all '%s/engine.mprof' > '%s/report.json'",
             env_or("MPROF_BIN", "mprof"), dir, dir);
    if (sh(cmd) != 0) {
        fprintf(stderr, "setup: mprof report failed\n");
        return 1;
    }
    /* The shipping engine, told to capture, must write nothing: it has no profiler. */
    snprintf(cmd, sizeof cmd,
             "ASAN_OPTIONS=detect_leaks=0 MPROF_LISTEN=0 MPROF_CAPTURE='%s/shipping.mprof' '%s' "
             "--frames 10 --quiet %s > '%s/shipping.out' 2>&1",
             dir, env_or("MPROF_ENGINE_SHIPPING_BIN", "mprof_engine_shipping"), RENDERER, dir);
    if (sh(cmd) != 0) {
        fprintf(stderr, "setup: the shipping engine failed\n");
        return 1;
    }
    printf("setup: engine capture, report and shipping run in %s\n", dir);
    return 0;
}

static cJSON *report;

static cJSON *get(cJSON *o, const char *k)
{
    return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static double num(cJSON *o, const char *k)
{
    cJSON *v = get(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static cJSON *find_named(cJSON *arr, const char *name)
{
    cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        cJSON *n = get(it, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return it;
    }
    return NULL;
}

static int zone_prefix_count(const char *prefix, const char *color)
{
    int n = 0;
    cJSON *z;
    cJSON_ArrayForEach(z, get(report, "zones"))
    {
        const char *name = get(z, "name")->valuestring;
        if (strncmp(name, prefix, strlen(prefix)) != 0)
            continue;
        if (color && strcmp(get(z, "color")->valuestring, color) != 0) {
            check(0, "zone %s has color %s, expected %s", name, get(z, "color")->valuestring,
                  color);
            continue;
        }
        n++;
    }
    return n;
}

static int c_client_dependencies(const char *dir)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/engine.mprof", dir);
    check(stat(p, &st) == 0 && st.st_size > 1000, "the MPROF_ENABLE build wrote a capture");
    snprintf(p, sizeof p, "%s/shipping.mprof", dir);
    check(stat(p, &st) != 0,
          "the build without MPROF_ENABLE wrote nothing, even with MPROF_CAPTURE set");
    check(strcmp(get(report, "schema")->valuestring, "mprof.report.v1") == 0,
          "the capture is read by the same-version tools");
    return 0;
}

static int c_zone_macros(const char *dir)
{
    (void)dir;
    cJSON *fr = get(report, "frames");
    double cov = num(fr, "coverage");
    check(cov >= 0.95, "hot-path coverage %.1f %% >= 95 %% of main-thread frame time", cov * 100);
    const char *subs[] = {"Kernel::", "Renderer::", "Physics::", "Souls::", "Nexus::", "Audio::",
                          "Jobs::"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        check(zone_prefix_count(subs[i], NULL) > 0, "%s zones recorded", subs[i]);
    check(num(get(report, "events"), "lost") == 0, "no events lost");
    return 0;
}

static int c_frame_mark(const char *dir)
{
    (void)dir;
    cJSON *fr = get(report, "frames");
    check(num(fr, "count") == FRAMES, "%d frames for --frames %d", (int)num(fr, "count"), FRAMES);
    check(num(fr, "p95_ms") >= num(fr, "p50_ms") && num(fr, "p50_ms") > 0,
          "frame percentiles ordered (p50 %.2f ms, p95 %.2f ms)", num(fr, "p50_ms"),
          num(fr, "p95_ms"));
    return 0;
}

static int c_gpu_zones(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/engine.out", dir);
    char *out = slurp(p);
    int vulkan = out && strstr(out, "renderer=vulkan");
    free(out);
    if (!vulkan) {
        printf("skipped: the engine did not render with Vulkan (no device, or a ThreadSanitizer "
               "build, which renders on the CPU)\n");
        return SKIP;
    }
    cJSON *ctx = cJSON_GetArrayItem(get(get(report, "gpu"), "contexts"), 0);
    check(ctx != NULL, "a GPU context was recorded");
    if (!ctx)
        return 0;
    check(num(ctx, "zones_complete") >= 3 * FRAMES, "%d GPU passes came back (3 per frame)",
          (int)num(ctx, "zones_complete"));
    check(num(ctx, "zones_incomplete") == 0, "no GPU zone is missing its timestamps");
    check(num(ctx, "calibrations") >= 1, "the GPU clock was calibrated");
    cJSON *z;
    cJSON_ArrayForEach(z, get(ctx, "zones"))
    {
        cJSON *lat = get(z, "submit_to_start_ns");
        check(num(lat, "mean") > 0 && num(get(z, "gpu_ns"), "mean") > 0,
              "%s: GPU time %.0f us, CPU submission %.0f us before GPU start (mean)",
              get(z, "name")->valuestring, num(get(z, "gpu_ns"), "mean") / 1e3,
              num(lat, "mean") / 1e3);
    }
    return 0;
}

static int c_memory_tracking(const char *dir)
{
    (void)dir;
    cJSON *pools = get(get(report, "memory"), "pools");
    const char *kinds[] = {"Kernel::frame_arena", "Souls::entities", "Nexus::packets",
                           "Physics::scratch"};
    for (int i = 0; i < 4; i++) {
        cJSON *p = find_named(pools, kinds[i]);
        check(p && num(p, "allocs") > 0, "pool %s allocates (%d)", kinds[i],
              p ? (int)num(p, "allocs") : 0);
        check(p && num(p, "live_bytes") == 0, "pool %s balances at exit", kinds[i]);
    }
    cJSON *ent = find_named(pools, "Souls::entities");
    check(cJSON_GetArraySize(get(ent, "peak_callstack")) > 2,
          "the entity pool's peak has a symbolised callstack");
    return 0;
}

static int c_lock_tracking(const char *dir)
{
    (void)dir;
    cJSON *locks = get(report, "locks");
    int mutex = 0, rwlock = 0, contended = 0;
    cJSON *l;
    cJSON_ArrayForEach(l, locks)
    {
        const char *kind = get(l, "kind")->valuestring;
        mutex += strcmp(kind, "mutex") == 0;
        rwlock += strcmp(kind, "rwlock") == 0;
        contended += num(l, "contended") > 0;
    }
    check(mutex > 0 && rwlock > 0, "mutexes (%d) and rwlocks (%d) tracked", mutex, rwlock);
    check(contended > 0, "contention recorded under --threads 3 (%d locks)", contended);
    return 0;
}

static int c_message_logging(const char *dir)
{
    (void)dir;
    cJSON *m = get(report, "messages");
    int levels = 0;
    const char *names[] = {"trace", "debug", "info", "warn", "error", "fatal"};
    for (int i = 0; i < 6; i++)
        levels += num(m, names[i]) > 0;
    check(levels >= 3, "log lines at %d severities reached the timeline", levels);
    return 0;
}

static int plots_exist(const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        cJSON *p = find_named(get(report, "plots"), names[i]);
        check(p && num(p, "count") > 0 && num(p, "max") > 0, "plot %s (%d samples, max %.4g)",
              names[i], p ? (int)num(p, "count") : 0, p ? num(p, "max") : 0);
    }
    return 0;
}

static int c_plot_tracking(const char *dir)
{
    (void)dir;
    const char *names[] = {"entities", "draw_calls", "triangles", "bodies", "voices"};
    return plots_exist(names, 5);
}

static int c_network_profiling(const char *dir)
{
    (void)dir;
    const char *names[] = {"packet_rate", "bandwidth", "rtt"};
    return plots_exist(names, 3);
}

static int c_fiber_tracking(const char *dir)
{
    (void)dir;
    cJSON *fibers = get(report, "fibers");
    check(cJSON_GetArraySize(fibers) >= 1, "%d fiber tracks", cJSON_GetArraySize(fibers));
    cJSON *f;
    cJSON_ArrayForEach(f, fibers)
    {
        check(num(f, "resumes") > 0 && num(get(f, "gap_ms"), "count") > 0,
              "%s: %d resumes, scheduling gap p95 %.3f ms", get(f, "name")->valuestring,
              (int)num(f, "resumes"), num(get(f, "gap_ms"), "p95"));
        check(num(f, "open_zones_at_end") == 0, "%s: no zone left open",
              get(f, "name")->valuestring);
    }
    return 0;
}

static int c_zone_colors(const char *dir)
{
    (void)dir;
    check(zone_prefix_count("Renderer::", "#2f6fde") > 0, "renderer zones are blue");
    check(zone_prefix_count("Physics::", "#2fa84f") > 0, "physics zones are green");
    check(zone_prefix_count("Souls::", "#d63a3a") > 0, "AI zones are red");
    return 0;
}

/* A loopback port nobody listens on right now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Runs the engine with --auto-capture; returns its stdout (caller frees). */
static char *auto_run(const char *dir, const char *tool, const char *spec, const char *out)
{
    char cmd[16384], log[4096];
    snprintf(log, sizeof log, "%s/auto-%s.out", dir, out);
    snprintf(cmd, sizeof cmd,
             "ASAN_OPTIONS=detect_leaks=0 MPROF_PORT=%d MPROF_TOOL='%s' '%s' --frames 150 "
             "--renderer cpu --quiet --auto-capture %s --auto-capture-seconds 0.5 "
             "--auto-capture-output '%s/%s.mprof' > '%s' 2>&1",
             free_port(), tool, env_or("MPROF_ENGINE_BIN", "mprof_engine"), spec, dir, out, log);
    int rc = sh(cmd);
    printf("  (engine exit %d: %s)\n", rc, spec);
    return slurp(log);
}

static int c_capture_automation(const char *dir)
{
    const char *mprof = env_or("MPROF_BIN", "mprof");
    const char *specs[] = {"frame:20", "event:level-loaded", "now"};
    const char *names[] = {"auto-frame", "auto-named", "auto-manual"};
    for (int i = 0; i < 3; i++) {
        char *out = auto_run(dir, mprof, specs[i], names[i]);
        check(out && strstr(out, "auto_capture=saved"), "trigger %s reached Saved", specs[i]);
        free(out);
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "'%s' report --json '%s/%s.mprof' | grep -q '\"complete\": true'",
                 mprof, dir, names[i]);
        check(sh(cmd) == 0, "%s: the artifact is a complete, valid capture", names[i]);
    }
    char *out = auto_run(dir, "/nonexistent/mprof", "frame:5", "auto-missing-tool");
    check(out && strstr(out, "auto_capture=failed reason="), "a missing tool ends in Failed");
    if (out) {
        const char *r = strstr(out, "reason=");
        printf("  (%.*s)\n", r ? (int)strcspn(r, "\n") : 0, r ? r : "");
    }
    free(out);
    return 0;
}

static const struct {
    const char *name;
    int (*fn)(const char *dir);
} checks[] = {
    {"client_dependencies", c_client_dependencies},
    {"zone_macros", c_zone_macros},
    {"frame_mark", c_frame_mark},
    {"gpu_zones", c_gpu_zones},
    {"memory_tracking", c_memory_tracking},
    {"lock_tracking", c_lock_tracking},
    {"message_logging", c_message_logging},
    {"plot_tracking", c_plot_tracking},
    {"fiber_tracking", c_fiber_tracking},
    {"network_profiling", c_network_profiling},
    {"zone_colors", c_zone_colors},
    {"capture_automation", c_capture_automation},
};

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--setup") == 0)
        return setup(argv[2]);
    if (argc != 4 || strcmp(argv[1], "--check") != 0) {
        fprintf(stderr, "usage: test_contract --setup DIR | --check NAME DIR\n");
        return 2;
    }
    char p[4096];
    snprintf(p, sizeof p, "%s/report.json", argv[3]);
    char *text = slurp(p);
    report = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!report) {
        fprintf(stderr, "contract: cannot read %s (did the setup fixture run?)\n", p);
        return 1;
    }
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (strcmp(checks[i].name, argv[2]) != 0)
            continue;
        printf("contract %s\n", argv[2]);
        int r = checks[i].fn(argv[3]);
        cJSON_Delete(report);
        if (r == SKIP)
            return SKIP;
        printf("%s: %s\n", argv[2], failures ? "FAILED" : "passed");
        return failures ? 1 : 0;
    }
    fprintf(stderr, "contract: unknown check '%s'\n", argv[2]);
    cJSON_Delete(report);
    return 2;
}
