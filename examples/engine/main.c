/*
 * main.c - the sample engine's command line and the profiler's start and stop.
 *
 * This is the one file with profiler calls that are not macros: starting a capture is a
 * program decision (which file, whether to listen), so it happens here, under MPROF_ENABLE.
 * The shipping build (MPROF_SHIPPING, no MPROF_ENABLE) compiles the same sources with every
 * macro stripped and never references libmprof.
 */
#include "engine.h"

#include "mprof/mprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fputs("usage: mprof_engine [options]\n"
          "\n"
          "A small headless game engine instrumented with mprof.\n"
          "\n"
          "  --frames N        run N frames (default 600 unless --seconds or --listen)\n"
          "  --seconds S       run for S seconds of wall time\n"
          "  --capture PATH    write a capture to PATH (in-process capture)\n"
          "  --listen          listen for `mprof capture` (127.0.0.1:8086, MPROF_PORT)\n"
          "                    and run until interrupted unless --frames/--seconds\n"
          "  --slow SYS=PCT    make one subsystem PCT percent slower with real work;\n"
          "                    SYS: renderer, physics, souls (ai), nexus (network), audio,\n"
          "                    or a zone name such as Physics::step\n"
          "  --slow-cpu SYS=PCT  the same, PCT percent of the subsystem's CPU time on its\n"
          "                    thread rather than its wall time (which a busy machine\n"
          "                    stretches): the same extra work at any load\n"
          "  --threads N       worker threads for the job system (default 2)\n"
          "  --seed N          world seed (default 1); same seed, same frames: same world\n"
          "  --png PATH        write the last rendered frame as a PNG\n"
          "  --frame-images    send every rendered frame to the capture as a thumbnail\n"
          "                    (MPROF_FRAME_IMAGE, shown by mprof view --serve); the CPU\n"
          "                    renderer's pixels are in memory, but Vulkan's are read back,\n"
          "                    which waits for the GPU every frame and changes the timing\n"
          "  --renderer KIND   auto (default), vulkan or cpu\n"
          "  --size WxH        rendered frame size (default 320x180)\n"
          "  --bodies N        rigid bodies (default 600)\n"
          "  --souls N         AI agents at peak population (default 160)\n"
          "  --quiet           print only warnings and errors\n"
          "  --verbose         print debug lines too\n"
          "  --auto-capture T  arm a capture by mprof's automation (the engine listens):\n"
          "                    now, frame:N, or event:NAME (engine events: level-loaded,\n"
          "                    hitch = a frame over 50 ms); the tool is `mprof` next to the\n"
          "                    engine or on PATH (MPROF_TOOL overrides)\n"
          "  --auto-capture-seconds S   its length (default 1)\n"
          "  --auto-capture-output PATH (default Saved/Profiling/mprof/capture.mprof)\n"
          "  -h, --help        this help\n"
          "\n"
          "Exit status: 0 ok, 1 an --auto-capture failed, 2 usage error, 3 start-up or output\n"
          "failure.\n",
          out);
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int bad(const char *flag, const char *value, const char *why)
{
    if (value)
        fprintf(stderr, "mprof_engine: %s '%s': %s (see --help)\n", flag, value, why);
    else
        fprintf(stderr, "mprof_engine: %s: %s (see --help)\n", flag, why);
    return 2;
}

static int takes_value(const char *flag)
{
    static const char *const flags[] = {"--frames", "--seconds", "--capture", "--png",
                                        "--slow",   "--slow-cpu", "--threads", "--seed",
                                        "--renderer",
                                        "--size",   "--bodies",  "--souls",
                                        "--auto-capture", "--auto-capture-seconds",
                                        "--auto-capture-output"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (!strcmp(flag, flags[i]))
            return 1;
    return 0;
}

static int parse_args(int argc, char **argv, engine_options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--listen")) {
            o->listen = 1;
        } else if (!strcmp(a, "--frame-images")) {
            o->frame_images = 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--verbose")) {
            o->verbose = 1;
        } else if (!takes_value(a)) {
            return bad(a, NULL, "unknown option");
        } else if (!v) {
            return bad(a, NULL, "needs a value");
        } else if (!strcmp(a, "--frames")) {
            if (parse_u64(v, &n) || n == 0 || n > UINT32_MAX)
                return bad(a, v, "expected a frame count from 1");
            o->frames = (uint32_t)n;
            i++;
        } else if (!strcmp(a, "--seconds")) {
            char *end;
            o->seconds = strtod(v, &end);
            if (end == v || *end || !(o->seconds > 0))
                return bad(a, v, "expected a positive number of seconds");
            i++;
        } else if (!strcmp(a, "--capture")) {
            o->capture_path = v;
            i++;
        } else if (!strcmp(a, "--png")) {
            o->png_path = v;
            i++;
        } else if (!strcmp(a, "--slow") || !strcmp(a, "--slow-cpu")) {
            o->slow_cpu = !strcmp(a, "--slow-cpu");
            const char *eq = strchr(v, '=');
            char name[64];
            if (!eq || (size_t)(eq - v) >= sizeof name)
                return bad(a, v, "expected SYS=PCT, e.g. physics=50");
            memcpy(name, v, (size_t)(eq - v));
            name[eq - v] = 0;
            o->slow_sys = eng_sys_from_name(name);
            if (o->slow_sys == ENG_SYS_NONE)
                return bad(a, v, "unknown subsystem (renderer, physics, souls, nexus, audio)");
            if (parse_u64(eq + 1, &n) || n == 0 || n > 10000)
                return bad(a, v, "expected a percentage from 1 to 10000");
            o->slow_pct = (int)n;
            i++;
        } else if (!strcmp(a, "--threads")) {
            if (parse_u64(v, &n) || n > 32)
                return bad(a, v, "expected 0 to 32 worker threads");
            o->threads = (int)n;
            i++;
        } else if (!strcmp(a, "--seed")) {
            if (parse_u64(v, &o->seed))
                return bad(a, v, "expected an unsigned integer");
            i++;
        } else if (!strcmp(a, "--renderer")) {
            if (!strcmp(v, "auto"))
                o->renderer = ENG_RENDERER_AUTO;
            else if (!strcmp(v, "vulkan"))
                o->renderer = ENG_RENDERER_VULKAN;
            else if (!strcmp(v, "cpu"))
                o->renderer = ENG_RENDERER_CPU;
            else
                return bad(a, v, "expected auto, vulkan or cpu");
            i++;
        } else if (!strcmp(a, "--size")) {
            int w, h;
            char x;
            if (sscanf(v, "%d%c%d", &w, &x, &h) != 3 || x != 'x' || w < 16 || h < 16 ||
                w > 4096 || h > 4096)
                return bad(a, v, "expected WxH between 16x16 and 4096x4096");
            o->width = w;
            o->height = h;
            i++;
        } else if (!strcmp(a, "--auto-capture")) {
            if (capture_parse_spec(v))
                return bad(a, v, "expected now, frame:N or event:NAME");
            o->auto_capture = v;
            i++;
        } else if (!strcmp(a, "--auto-capture-seconds")) {
            char *end;
            o->auto_capture_seconds = strtod(v, &end);
            if (end == v || *end || !(o->auto_capture_seconds > 0))
                return bad(a, v, "expected a positive number of seconds");
            i++;
        } else if (!strcmp(a, "--auto-capture-output")) {
            o->auto_capture_output = v;
            i++;
        } else if (!strcmp(a, "--bodies")) {
            if (parse_u64(v, &n) || n > 100000)
                return bad(a, v, "expected 0 to 100000 bodies");
            o->bodies = (uint32_t)n;
            i++;
        } else if (!strcmp(a, "--souls")) {
            if (parse_u64(v, &n) || n > 4096)
                return bad(a, v, "expected 0 to 4096 souls");
            o->souls = (uint32_t)n;
            i++;
        } else {
            return bad(a, NULL, "unknown option");
        }
    }
    if (!o->frames && !(o->seconds > 0) && !o->listen)
        o->frames = 600;
    return 0;
}

#ifdef MPROF_ENABLE
static int profiler_start(const engine_options *o)
{
    mprof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.app_name = "mprof_engine";
    /* Capture automation spawns `mprof capture`, which connects to this process: listen. */
    int listen = o->listen || o->auto_capture;
    if (o->capture_path) {
        cfg.capture_path = o->capture_path;
        cfg.listen = listen ? MPROF_TOGGLE_ON : MPROF_TOGGLE_OFF;
    } else if (listen) {
        cfg.listen = MPROF_TOGGLE_ON;
    }
    mprof_result r = mprof_startup(&cfg);
    if (r != MPROF_OK) {
        fprintf(stderr, "mprof_engine: cannot start the profiler%s%s: %s\n",
                o->capture_path ? " for " : "", o->capture_path ? o->capture_path : "",
                mprof_result_str(r));
        return -1;
    }
    if (o->listen)
        log_msg(ENG_LOG_INFO, "listening for `mprof capture` (see docs/ENGINE.md); "
                "interrupt with Ctrl-C to stop");
    return 0;
}
#endif

int main(int argc, char **argv)
{
    engine_options o;
    memset(&o, 0, sizeof o);
    o.threads = 2;
    o.seed = 1;
    o.width = 320;
    o.height = 180;
    o.bodies = 600;
    o.souls = 160;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    log_set_level(o.quiet ? ENG_LOG_WARN : o.verbose ? ENG_LOG_DEBUG : ENG_LOG_INFO);

#ifdef MPROF_ENABLE
    if (profiler_start(&o))
        return 3;
    char info[160];
    snprintf(info, sizeof info, "mprof_engine seed=%" PRIu64 " threads=%d bodies=%u souls=%u",
             o.seed, o.threads, o.bodies, o.souls);
    MPROF_APP_INFO(info);
    MPROF_THREAD_NAME("Main");
#else
    if (o.capture_path || o.listen)
        log_msg(ENG_LOG_WARN, "this build has profiling compiled out (MPROF_SHIPPING): "
                "--capture and --listen do nothing");
#endif

    capture_auto_begin(&o);
    rc = kernel_run(&o);
    if (capture_auto_end() && rc == 0)
        rc = 1;

#ifdef MPROF_ENABLE
    mprof_shutdown();
#endif
    if (fflush(stdout) != 0 || ferror(stdout))
        rc = 3;
    return rc;
}
