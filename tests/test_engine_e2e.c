/*
 * test_engine_e2e.c - end to end: the real sample engine, captured in process, read back by
 * the real `mprof report --json` and by the capture reader.
 *
 * One 120-frame run (three worker threads, seed 7) is captured once in the group setup and read
 * with `mprof report --json --all`; each test asserts one promise of the engine
 * (docs/ENGINE.md): frame count and zone coverage, the subsystem zone colours, the plots,
 * messages of several severities, GPU zones when Vulkan works (also counted in the raw events),
 * lock contention, fiber tracks, balanced named pools, determinism from a seed, --slow making
 * its subsystem measurably slower, and clear usage errors.
 *
 * Environment (set by ctest): MPROF_BIN (mprof), MPROF_ENGINE_BIN (mprof_engine),
 * MPROF_ENGINE_SHIPPING_BIN (mprof_engine_shipping).
 */
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* Frames of the main run: 120, fewer under sanitizers (MPROF_TEST_SCALE), never under 30. */
static int n_frames = 120;
static int n_short_frames = 60;

/* Mesa's lavapipe is not built with ThreadSanitizer, and TSan reports its internal fence
 * handling as races; under TSan the engine renders on the CPU back end instead. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifdef UNDER_TSAN
#define RENDERER_ARG "--renderer cpu"
#else
#define RENDERER_ARG ""
#endif
/* The Vulkan loader and lavapipe leak a few hundred bytes per process (a bare
 * vkCreateInstance/vkDestroyInstance program shows the same), so the Vulkan run is not
 * leak-checked under AddressSanitizer; the CPU-renderer runs below still are. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifdef UNDER_ASAN
#define ENGINE_ENV "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "
#else
#define ENGINE_ENV ""
#endif

static struct {
    const char *engine, *shipping, *capture, *png;
    char run_out[4096];
    char renderer[32];
    cJSON *report;
    /* from the raw events */
    uint64_t gpu_begins, gpu_ends, gpu_times;
} e;

static const char *env_or_fail(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "test_engine_e2e: %s is not set (run through ctest)\n", name);
        return NULL;
    }
    return v;
}

/* Counts the GPU events of the capture: every zone must get its two timestamps. */
static int scan_capture(const char *path)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        e.gpu_begins += ev.type == MPROF_EV_GPU_ZONE_BEGIN;
        e.gpu_ends += ev.type == MPROF_EV_GPU_ZONE_END;
        e.gpu_times += ev.type == MPROF_EV_GPU_TIME;
    }
    if (rc < 0)
        fprintf(stderr, "%s: %s\n", path, mprof_reader_error(r));
    mprof_reader_close(r);
    return rc;
}

static int group_setup(void **state)
{
    (void)state;
    n_frames = (int)(120 * tu_scale());
    if (n_frames < 30)
        n_frames = 30;
    n_short_frames = n_frames / 2;
    e.engine = env_or_fail("MPROF_ENGINE_BIN");
    e.shipping = env_or_fail("MPROF_ENGINE_SHIPPING_BIN");
    if (!e.engine || !e.shipping || !tu_mprof_bin())
        return -1;
    e.capture = strdup(tu_temp_path("engine_e2e.mprof"));
    e.png = strdup(tu_temp_path("engine_e2e.png"));
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             ENGINE_ENV "'%s' --frames %d --threads 3 --seed 7 --capture '%s' --png '%s' "
             "--quiet %s 2>/dev/null",
             e.engine, n_frames, e.capture, e.png, RENDERER_ARG);
    if (tu_run(cmd, e.run_out, sizeof e.run_out) != 0) {
        fprintf(stderr, "engine run failed: %s\n%s\n", cmd, e.run_out);
        return -1;
    }
    const char *r = strstr(e.run_out, "renderer=");
    if (r)
        sscanf(r + 9, "%31s", e.renderer);
    static char json[1 << 20];
    snprintf(cmd, sizeof cmd, "'%s' report --json --all '%s'", tu_mprof_bin(), e.capture);
    if (tu_run(cmd, json, sizeof json) != 0 || !(e.report = cJSON_Parse(json))) {
        fprintf(stderr, "mprof report --json failed\n");
        return -1;
    }
    return scan_capture(e.capture) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    cJSON_Delete(e.report);
    if (e.capture)
        remove(e.capture);
    if (e.png)
        remove(e.png);
    return 0;
}

static double num(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(obj, key);
    assert_non_null(v);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void test_run_and_png(void **state)
{
    (void)state;
    char want[32];
    snprintf(want, sizeof want, "frames=%d ", n_frames);
    assert_non_null(strstr(e.run_out, want));
    assert_true(!strcmp(e.renderer, "vulkan") || !strcmp(e.renderer, "cpu"));
    FILE *f = fopen(e.png, "rb");
    assert_non_null(f);
    unsigned char sig[8] = {0};
    assert_int_equal(fread(sig, 1, 8, f), 8);
    fclose(f);
    assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
}

static void test_frames_and_coverage(void **state)
{
    (void)state;
    const cJSON *frames = cJSON_GetObjectItem(e.report, "frames");
    assert_non_null(frames);
    assert_int_equal((int)num(frames, "count"), n_frames);
    assert_true(num(frames, "coverage") >= 0.95);
    /* Not only the frame zone: the subsystems' zones inside it account for all but a sliver. */
    const cJSON *z;
    double frame_total = -1, frame_self = -1;
    cJSON_ArrayForEach(z, cJSON_GetObjectItem(e.report, "zones"))
    {
        if (!strcmp(cJSON_GetObjectItem(z, "name")->valuestring, "Kernel::frame")) {
            frame_total = num(z, "total_ns");
            frame_self = num(z, "self_ns");
        }
    }
    assert_true(frame_total > 0);
    assert_true(frame_self < 0.05 * frame_total);
    const cJSON *events = cJSON_GetObjectItem(e.report, "events");
    assert_int_equal((int)num(events, "lost"), 0);
}

static void test_subsystem_zone_colors(void **state)
{
    (void)state;
    static const struct {
        const char *prefix, *color;
    } subs[] = {{"Renderer::", "#2f6fde"}, {"Physics::", "#2fa84f"}, {"Souls::", "#d63a3a"},
                {"Audio::", "#9b59d0"},    {"Nexus::", "#e08a1e"},   {"Jobs::", "#22a6b3"}};
    const cJSON *zones = cJSON_GetObjectItem(e.report, "zones");
    assert_true(cJSON_IsArray(zones));
    for (size_t s = 0; s < sizeof subs / sizeof subs[0]; s++) {
        int found = 0, wrong = 0;
        const cJSON *z;
        cJSON_ArrayForEach(z, zones)
        {
            const char *name = cJSON_GetObjectItem(z, "name")->valuestring;
            if (strncmp(name, subs[s].prefix, strlen(subs[s].prefix)) != 0)
                continue;
            found++;
            if (strcmp(cJSON_GetObjectItem(z, "color")->valuestring, subs[s].color) != 0) {
                fprintf(stderr, "zone %s has colour %s, want %s\n", name,
                        cJSON_GetObjectItem(z, "color")->valuestring, subs[s].color);
                wrong++;
            }
        }
        if (!found)
            fprintf(stderr, "no zone named %s*\n", subs[s].prefix);
        assert_true(found >= 1);
        assert_int_equal(wrong, 0);
    }
}

static const cJSON *plot(const char *name)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(e.report, "plots"))
    {
        if (!strcmp(cJSON_GetObjectItem(p, "name")->valuestring, name))
            return p;
    }
    fprintf(stderr, "no plot named %s\n", name);
    return NULL;
}

static void test_plots_plausible(void **state)
{
    (void)state;
    const cJSON *p;
    /* Three passes, at least one batch each; a few thousand triangles at least. */
    assert_non_null(p = plot("draw_calls"));
    assert_int_equal((int)num(p, "count"), n_frames);
    assert_true(num(p, "min") >= 3 && num(p, "max") < 1000);
    assert_non_null(p = plot("triangles"));
    assert_true(num(p, "min") > 1000);
    /* Plotted once per fixed step: two per frame. 600 bodies by default. */
    assert_non_null(p = plot("bodies"));
    assert_int_equal((int)num(p, "count"), 2 * n_frames);
    assert_true(num(p, "max") > 0 && num(p, "max") <= 600);
    assert_non_null(p = plot("entities"));
    assert_true(num(p, "min") > 0 && num(p, "max") <= 160 + 16);
    assert_non_null(p = plot("voices"));
    assert_true(num(p, "max") > 0 && num(p, "max") <= 48);
    /* Network: one input and at least one snapshot per frame; loopback RTT well under 1 s. */
    assert_non_null(p = plot("packet_rate"));
    assert_true(num(p, "count") >= 1 && num(p, "max") > 0);
    assert_non_null(p = plot("bandwidth"));
    assert_true(num(p, "max") > 100);
    assert_non_null(p = plot("rtt"));
    assert_true(num(p, "min") > 0 && num(p, "max") < 1000);
}

static void test_message_severities(void **state)
{
    (void)state;
    const cJSON *m = cJSON_GetObjectItem(e.report, "messages");
    assert_non_null(m);
    static const char *levels[] = {"trace", "debug", "info", "warn", "error", "fatal"};
    int used = 0;
    for (int i = 0; i < 6; i++)
        used += num(m, levels[i]) > 0;
    assert_true(used >= 3);
    assert_true(num(m, "info") >= 3); /* start-up lines of the kernel, nexus and renderer */
}

static void test_gpu_zones(void **state)
{
    (void)state;
    if (!strcmp(e.renderer, "vulkan")) {
        /* Three passes per frame, each with a begin and an end, all resolved. */
        assert_true(e.gpu_begins >= 3u * n_frames);
        assert_int_equal(e.gpu_ends, e.gpu_begins);
        assert_int_equal(e.gpu_times, e.gpu_begins + e.gpu_ends);
        /* The report's GPU section: one Vulkan context, every pass once per frame, complete. */
        const cJSON *gpu = cJSON_GetObjectItem(e.report, "gpu");
        assert_non_null(gpu);
        const cJSON *ctxs = cJSON_GetObjectItem(gpu, "contexts");
        assert_int_equal(cJSON_GetArraySize(ctxs), 1);
        const cJSON *ctx = cJSON_GetArrayItem(ctxs, 0);
        assert_string_equal(cJSON_GetObjectItem(ctx, "api")->valuestring, "Vulkan");
        assert_int_equal((int)num(ctx, "zones_incomplete"), 0);
        assert_true(num(ctx, "calibrations") >= 1);
        static const char *passes[] = {"GPU::shadow_pass", "GPU::main_pass", "GPU::post_pass"};
        for (int i = 0; i < 3; i++) {
            int count = -1;
            const cJSON *z;
            cJSON_ArrayForEach(z, cJSON_GetObjectItem(ctx, "zones"))
            {
                if (!strcmp(cJSON_GetObjectItem(z, "name")->valuestring, passes[i]))
                    count = (int)num(z, "count");
            }
            assert_int_equal(count, n_frames);
        }
    } else {
        fprintf(stderr, "note: no Vulkan device here; the CPU renderer has no GPU zones\n");
        assert_int_equal(e.gpu_begins, 0);
    }
}

/* The element of array key whose "name" is name, or NULL. */
static const cJSON *named(const cJSON *obj, const char *key, const char *name)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(obj, key))
    {
        const cJSON *n = cJSON_GetObjectItem(it, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
            return it;
    }
    fprintf(stderr, "report: no %s named %s\n", key, name);
    return NULL;
}

static void test_lock_contention(void **state)
{
    (void)state;
    static const char *locks[] = {"Jobs::queue", "Souls::blackboard", "Souls::world",
                                  "Physics::grid"};
    double contended = 0;
    for (int i = 0; i < 4; i++) {
        const cJSON *l = named(e.report, "locks", locks[i]);
        assert_non_null(l);
        assert_true(num(l, "acquisitions") > 100);
        contended += num(l, "contended");
    }
    const cJSON *q = named(e.report, "locks", "Jobs::queue");
    fprintf(stderr, "locks: Jobs::queue %.0f acquisitions, %.0f contended; all locks %.0f "
            "contended\n", num(q, "acquisitions"), num(q, "contended"), contended);
    /* Three workers and the main thread share one queue: some acquisitions must wait. */
    assert_true(num(q, "contended") >= 1);
}

static void test_fiber_tracks(void **state)
{
    (void)state;
    const cJSON *fibers = cJSON_GetObjectItem(e.report, "fibers");
    assert_true(cJSON_IsArray(fibers));
    assert_int_equal(cJSON_GetArraySize(fibers), 4);
    static const char *names[] = {"Souls fiber 0", "Souls fiber 1", "Souls fiber 2",
                                  "Souls fiber 3"};
    for (int i = 0; i < 4; i++) {
        const cJSON *f = named(e.report, "fibers", names[i]);
        assert_non_null(f);
        /* Entered at least once per fixed step, and balanced: no zone left open. */
        assert_true(num(f, "runs") >= 2.0 * n_frames);
        assert_int_equal((int)num(f, "open_zones_at_end"), 0);
        assert_int_equal((int)num(f, "unmatched_zone_ends"), 0);
        assert_non_null(named(f, "zones", "Souls::think"));
    }
}

static void test_pools_balance(void **state)
{
    (void)state;
    static const char *want[] = {"Souls::entities", "Kernel::frame_arena", "Physics::scratch",
                                 "Nexus::packets"};
    const cJSON *memory = cJSON_GetObjectItem(e.report, "memory");
    assert_non_null(memory);
    for (int i = 0; i < 4; i++) {
        const cJSON *p = named(memory, "pools", want[i]);
        assert_non_null(p);
        assert_true(num(p, "allocs") > 0);
        if (num(p, "live_count") != 0)
            fprintf(stderr, "pool %s: %.0f allocations live at exit\n", want[i],
                    num(p, "live_count"));
        assert_int_equal((int)num(p, "live_count"), 0);
        assert_int_equal((int)num(p, "live_bytes"), 0);
        assert_int_equal((int)num(p, "unmatched_frees"), 0);
    }
}

static void run_hash(const char *bin, const char *args, char *hash, size_t n)
{
    char cmd[1024], out[1024];
    snprintf(cmd, sizeof cmd, "'%s' --renderer cpu --quiet %s 2>/dev/null", bin, args);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    const char *h = strstr(out, "world_hash=");
    assert_non_null(h);
    snprintf(hash, n, "%.16s", h + 11);
}

static void test_determinism(void **state)
{
    (void)state;
    char a[32], b[32], c[32], args[128];
    snprintf(args, sizeof args, "--frames %d --seed 7 --threads 0", n_short_frames);
    run_hash(e.shipping, args, a, sizeof a);
    snprintf(args, sizeof args, "--frames %d --seed 7 --threads 3", n_short_frames);
    run_hash(e.shipping, args, b, sizeof b);
    snprintf(args, sizeof args, "--frames %d --seed 8 --threads 3", n_short_frames);
    run_hash(e.shipping, args, c, sizeof c);
    assert_string_equal(a, b);        /* same seed: same world, whatever the threads */
    assert_string_not_equal(a, c);    /* another seed: another world */
}

static double zone_field(const cJSON *report, const char *name, const char *field)
{
    const cJSON *z;
    cJSON_ArrayForEach(z, cJSON_GetObjectItem(report, "zones"))
    {
        if (!strcmp(cJSON_GetObjectItem(z, "name")->valuestring, name))
            return num(z, field);
    }
    return -1;
}

/* Self time of a zone as a multiple of its children's time. */
static double self_ratio(const cJSON *report, const char *name)
{
    double total = zone_field(report, name, "total_ns"), self = zone_field(report, name, "self_ns");
    assert_true(total > 0 && self >= 0 && total > self);
    return self / (total - self);
}

static void test_slow_option(void **state)
{
    (void)state;
    const char *cap = tu_temp_path("engine_slow.mprof");
    char cmd[2048], out[256];
    snprintf(cmd, sizeof cmd,
             "'%s' --frames %d --threads 3 --seed 7 --renderer cpu --slow physics=300 "
             "--capture '%s' --quiet 2>/dev/null",
             e.engine, n_short_frames, cap);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    static char json[1 << 20];
    snprintf(cmd, sizeof cmd, "'%s' report --json '%s'", tu_mprof_bin(), cap);
    assert_int_equal(tu_run(cmd, json, sizeof json), 0);
    cJSON *slow = cJSON_Parse(json);
    assert_non_null(slow);
    /* --slow burns 300 % of Physics::step's own measured time inside Physics::step, on top of
     * its children (broadphase, narrow phase, integration): its self time becomes about three
     * times its children's, on a busy machine too, since both are measured in the same run.
     * Without --slow, and in the other subsystems, self time is a small share. */
    double phys = self_ratio(slow, "Physics::step"), souls = self_ratio(slow, "Souls::step");
    double phys_base = self_ratio(e.report, "Physics::step");
    cJSON_Delete(slow);
    remove(cap);
    fprintf(stderr, "Physics::step self/children: %.2f with --slow physics=300, %.2f without; "
            "Souls::step %.2f\n", phys, phys_base, souls);
    assert_true(phys > 2.0);
    assert_true(phys_base < 0.5);
    assert_true(souls < 0.5);
}

static void test_usage_errors(void **state)
{
    (void)state;
    static const char *bad[] = {"--bogus", "--frames", "--frames 0", "--slow physics",
                                "--slow warp=10", "--slow physics=0", "--renderer gl",
                                "--size 8x8", "--threads 99", "--seconds -1"};
    char cmd[1024], out[4096];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", e.shipping, bad[i]);
        int rc = tu_run(cmd, out, sizeof out);
        if (rc != 2)
            fprintf(stderr, "'%s' exited %d, want 2\n", bad[i], rc);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(out, "mprof_engine: ")); /* says which option is wrong */
    }
    snprintf(cmd, sizeof cmd, "'%s' --help", e.shipping);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "--slow SYS=PCT"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_and_png),
        cmocka_unit_test(test_frames_and_coverage),
        cmocka_unit_test(test_subsystem_zone_colors),
        cmocka_unit_test(test_plots_plausible),
        cmocka_unit_test(test_message_severities),
        cmocka_unit_test(test_gpu_zones),
        cmocka_unit_test(test_lock_contention),
        cmocka_unit_test(test_fiber_tracks),
        cmocka_unit_test(test_pools_balance),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_slow_option),
        cmocka_unit_test(test_usage_errors),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
