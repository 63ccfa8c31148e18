/*
 * kernel.c - the main loop, the fixed-step simulation clock, the frame arena and --slow.
 *
 * One iteration is one frame, wrapped in the "Kernel::frame" zone and closed by
 * MPROF_FRAME_MARK(). The simulation advances in fixed steps of 1/120 s, two per frame, on a
 * virtual clock: the game time of frame N is always N/60 s, whatever the wall clock says, which
 * is what makes runs reproducible from a seed. (An interactive engine would feed wall time into
 * an accumulator; a profiling workload wants the same work every run.)
 */
#include "engine.h"
#include "jobs.h"

#include "mprof/mprof.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define FRAME_ARENA_BYTES (16u << 20)

static const engine_options *kopt;
static mprof_arena *frame_arena;
static volatile sig_atomic_t stop_requested;

uint64_t eng_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

mprof_arena *eng_frame_arena(void)
{
    return frame_arena;
}

void *eng_frame_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = mprof_arena_alloc(frame_arena, count * size, 16);
    if (p)
        memset(p, 0, count * size);
    return p;
}

static const struct {
    const char *name;
    eng_sys sys;
} sys_names[] = {
    {"renderer", ENG_SYS_RENDERER}, {"render", ENG_SYS_RENDERER}, {"physics", ENG_SYS_PHYSICS},
    {"souls", ENG_SYS_SOULS},       {"ai", ENG_SYS_SOULS},        {"nexus", ENG_SYS_NEXUS},
    {"network", ENG_SYS_NEXUS},     {"audio", ENG_SYS_AUDIO},
};

eng_sys eng_sys_from_name(const char *name)
{
    /* "Physics::step" names the physics subsystem: the part before "::" decides. */
    size_t len = strcspn(name, ":");
    for (size_t i = 0; i < sizeof sys_names / sizeof sys_names[0]; i++)
        if (strlen(sys_names[i].name) == len && strncasecmp(sys_names[i].name, name, len) == 0)
            return sys_names[i].sys;
    return ENG_SYS_NONE;
}

const char *eng_sys_name(eng_sys s)
{
    for (size_t i = 0; i < sizeof sys_names / sizeof sys_names[0]; i++)
        if (sys_names[i].sys == s)
            return sys_names[i].name;
    return "none";
}

/* The clock --slow measures with: CLOCK_MONOTONIC, or the thread's CPU time with --slow-cpu, so
 * that a subsystem preempted by a busy machine is not slowed by more than its work. */
static uint64_t slow_clock(void)
{
    if (!kopt || !kopt->slow_cpu)
        return eng_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t eng_slow_begin(void)
{
    return slow_clock();
}

void eng_slowdown(eng_sys sys, uint64_t t0_ns)
{
    if (!kopt || sys != kopt->slow_sys || kopt->slow_pct <= 0)
        return;
    uint64_t now = slow_clock();
    uint64_t until = now + (now - t0_ns) * (uint64_t)kopt->slow_pct / 100u;
    /* Real work, not a sleep: the slowed subsystem burns CPU like an accidental O(n^2) would,
     * so the extra time shows up as self time of its zones. */
    volatile double sink = 0;
    double x = 1.0;
    while (slow_clock() < until)
        for (int i = 0; i < 256; i++) {
            x = x * 1.0000001 + 1e-9;
            sink += sqrt(x);
        }
    (void)sink;
}

static void on_sigint(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static int init_all(const engine_options *opt)
{
    MPROF_ZONE_C("Kernel::init", 0);
    mprof_arena_desc ad = {.name = "Kernel::frame_arena", .capacity_bytes = FRAME_ARENA_BYTES};
    if (mprof_arena_create(&ad, &frame_arena) != MPROF_OK) {
        log_msg(ENG_LOG_FATAL, "kernel: out of memory for the frame arena");
        return -1;
    }
    if (jobs_init(opt->threads)) {
        log_msg(ENG_LOG_FATAL, "kernel: cannot start %d worker threads", opt->threads);
        return -1;
    }
    if (physics_init(opt) || souls_init(opt) || audio_init(opt)) {
        log_msg(ENG_LOG_FATAL, "kernel: out of memory while creating the world");
        return -1;
    }
    if (nexus_init(opt))
        log_msg(ENG_LOG_ERROR, "kernel: running without networking");
    if (streaming_init(opt))
        log_msg(ENG_LOG_ERROR, "kernel: running without asset streaming");
    if (renderer_init(opt)) {
        log_msg(ENG_LOG_FATAL, "kernel: no renderer could start");
        return -1;
    }
    MPROF_PLOT_CONFIG("bodies", MPROF_PLOT_FORMAT_NUMBER, MPROF_PLOT_STYLE_STEP,
                      MPROF_COLOR_PHYSICS);
    MPROF_PLOT_CONFIG("entities", MPROF_PLOT_FORMAT_NUMBER, MPROF_PLOT_STYLE_STEP, MPROF_COLOR_AI);
    MPROF_PLOT_CONFIG("voices", MPROF_PLOT_FORMAT_NUMBER, MPROF_PLOT_STYLE_STEP,
                      MPROF_COLOR_AUDIO);
    MPROF_PLOT_CONFIG("frame_ms", MPROF_PLOT_FORMAT_NUMBER, MPROF_PLOT_STYLE_LINE, 0);
    return 0;
}

static void shutdown_all(void)
{
    MPROF_ZONE_C("Kernel::shutdown", 0);
    renderer_shutdown();
    streaming_shutdown();
    nexus_shutdown();
    audio_shutdown();
    souls_shutdown();
    physics_shutdown();
    jobs_shutdown();
    if (frame_arena)
        mprof_arena_reset(frame_arena); /* the last frame's allocations, freed */
    mprof_arena_destroy(frame_arena);
    frame_arena = NULL;
}

static void simulate(void)
{
    MPROF_ZONE_C("Kernel::simulate", 0);
    uint32_t impacts = 0, events = 0;
    float energy = 0;
    for (int s = 0; s < ENG_STEPS_PER_FRAME; s++) {
        MPROF_ZONE_C("Kernel::fixed_step", 0);
        physics_step(ENG_SIM_DT);
        souls_step(ENG_SIM_DT);
        float e;
        impacts += physics_impacts(&e);
        energy += e;
        events += souls_events();
    }
    audio_frame(impacts, energy, events);
}

int kernel_run(const engine_options *opt)
{
    kopt = opt;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    if (init_all(opt)) {
        shutdown_all();
        return 3;
    }
    log_msg(ENG_LOG_INFO, "kernel: seed %" PRIu64 ", %d worker threads, %u bodies, %u souls, "
            "renderer %s", opt->seed, opt->threads, opt->bodies, opt->souls,
            renderer_backend_name());
    if (opt->slow_sys != ENG_SYS_NONE)
        log_msg(ENG_LOG_WARN, "kernel: --slow%s: %s runs %d%% slower on purpose",
                opt->slow_cpu ? "-cpu" : "", eng_sys_name(opt->slow_sys), opt->slow_pct);

    /* The first mark closes start-up, so frame N is the time between marks N and N+1 and a run
     * of --frames N reports exactly N frames. */
    MPROF_FRAME_MARK();
    capture_auto_event("level-loaded");
    const uint64_t start = eng_now_ns();
    uint64_t last_status = start, frame_start = start;
    uint32_t frames_since_status = 0;
    uint64_t frame;
    for (frame = 0;; frame++) {
        if (stop_requested || (opt->frames && frame >= opt->frames) ||
            (opt->seconds > 0 && (double)(frame_start - start) * 1e-9 >= opt->seconds))
            break;
        {
            MPROF_ZONE_C("Kernel::frame", 0);
            MPROF_ZONE_VALUE(frame);
            {
                MPROF_ZONE_C("Kernel::begin_frame", 0);
                mprof_arena_reset(frame_arena);
            }
            nexus_frame(frame);
            streaming_frame(frame);
            simulate();
            renderer_frame(frame);
            {
                MPROF_ZONE_C("Kernel::end_frame", 0);
                uint64_t now = eng_now_ns();
                double frame_ms = (double)(now - frame_start) * 1e-6;
                MPROF_PLOT("frame_ms", frame_ms);
                if (frame_ms > 100.0)
                    log_msg(ENG_LOG_WARN, "kernel: frame %" PRIu64 " took %.1f ms", frame,
                            frame_ms);
                if (frame_ms > 50.0)
                    capture_auto_event("hitch");
                if (frame % 60 == 0)
                    log_msg(ENG_LOG_DEBUG, "kernel: frame %" PRIu64 ": %u active bodies, "
                            "%u souls, %u voices", frame, physics_active_bodies(), souls_count(),
                            audio_voices());
                frames_since_status++;
                if (now - last_status >= 1000000000ull) {
                    log_msg(ENG_LOG_INFO, "kernel: frame %" PRIu64 ", %.0f fps, %u souls, "
                            "%u active bodies", frame,
                            frames_since_status / ((double)(now - last_status) * 1e-9),
                            souls_count(), physics_active_bodies());
                    last_status = now;
                    frames_since_status = 0;
                }
                frame_start = now;
            }
        }
        MPROF_FRAME_MARK();
        capture_auto_frame();
    }
    double seconds = (double)(eng_now_ns() - start) * 1e-9;
    uint64_t hash = physics_hash() ^ (souls_hash() * 31u) ^ (audio_hash() * 131u);
    log_msg(ENG_LOG_INFO, "kernel: %" PRIu64 " frames in %.2f s (%.1f fps), world hash %016"
            PRIx64, frame, seconds, seconds > 0 ? (double)frame / seconds : 0.0, hash);
    int rc = 0;
    if (opt->png_path && renderer_write_png(opt->png_path) != 0)
        rc = 3;
    shutdown_all();
    printf("frames=%" PRIu64 " seconds=%.3f world_hash=%016" PRIx64 " renderer=%s\n", frame,
           seconds, hash, renderer_backend_name());
    return rc;
}
