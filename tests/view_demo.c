/*
 * view_demo.c - a small instrumented program whose captures the view, export and diff tests read.
 *
 * usage: view_demo CAPTURE.mprof [frames] [tiny_zones_per_frame] [slow | deep=N | async]
 *
 * Two threads ("Main" and "Worker") record nested zones in the subsystem colors and one with
 * color 0, zone text, value and a dynamic name, frame marks, messages of every level, two plots,
 * a contended lock, heap allocations, a frame image per frame, a fiber and a GPU context (through the public GPU API, with
 * made-up GPU timestamps). Locks, memory and fibers are written with the library's internal
 * raw-event writer (lifecycle.h, buffers.h) so that the test does not depend on which wrapper API each module
 * offers; the records are those of format.h's event table.
 * "slow" makes Physics::step four times as long, for the diff test; "deep=N" adds a recursion
 * N zones deep ("Recurse") under Update, for the served page's layout test. "async" adds async
 * spans (tests/test_view_async.c): each frame Main begins two overlapping "Loads" spans that the
 * Worker ends, the Worker begins and ends "Loads" spans of its own at the same time, and Main
 * keeps one "Jobs" span open per frame, the last still open when the capture ends.
 */
#define MPROF_ENABLE 1
#include "buffers.h"
#include "lifecycle.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int slow, deep, async_spans;
static _Atomic int loads_begun; /* "Loads" ids 1..loads_begun were begun by Main */

static const char *const physics_frames = "Physics"; /* a named, discontinuous frame set */

static void spin_ns(uint64_t ns)
{
    uint64_t end = mprof_now_ns() + ns;
    while (mprof_now_ns() < end) {
    }
}

static void recurse(int d)
{
    MPROF_ZONE_C("Recurse", MPROF_COLOR_AI);
    spin_ns(3000);
    if (d > 1)
        recurse(d - 1);
}

/* ---- raw events for the modules without a public wrapper here ------------------------------ */

static void raw_lock(int tag, uint32_t id, int shared)
{
    unsigned char *p = mprof__reserve(14);
    if (!p)
        return;
    p[0] = (unsigned char)tag;
    p = mprof__w_ts(p + 1);
    p = mprof__w_u32(p, id);
    mprof__commit(mprof__w_u8(p, (uint8_t)shared));
}

static const mprof_srcloc lock_loc = {"frame_lock", "main", __FILE__, __LINE__, 0};

static void raw_lock_announce(uint32_t id, const char *name)
{
    unsigned char *p = mprof__reserve(30);
    if (!p)
        return;
    p[0] = MPROF_EV_LOCK_ANNOUNCE;
    p = mprof__w_ts(p + 1);
    p = mprof__w_u32(p, id);
    p = mprof__w_ptr(p, name);
    p = mprof__w_u8(p, MPROF_LOCK_KIND_MUTEX);
    mprof__commit(mprof__w_ptr(p, &lock_loc));
}

static void raw_alloc(const void *ptr, uint64_t size)
{
    unsigned char *p = mprof__reserve(35);
    if (!p)
        return;
    p[0] = MPROF_EV_ALLOC;
    p = mprof__w_ts(p + 1);
    p = mprof__w_ptr(p, ptr);
    p = mprof__w_u64(p, size);
    p = mprof__w_ptr(p, NULL);
    mprof__commit(mprof__w_u8(p, 0));
}

static void raw_free(const void *ptr)
{
    unsigned char *p = mprof__reserve(27);
    if (!p)
        return;
    p[0] = MPROF_EV_FREE;
    p = mprof__w_ts(p + 1);
    p = mprof__w_ptr(p, ptr);
    p = mprof__w_ptr(p, NULL);
    mprof__commit(mprof__w_u8(p, 0));
}

static void raw_fiber(const char *name)
{
    unsigned char *p = mprof__reserve(17);
    if (!p)
        return;
    p[0] = name ? MPROF_EV_FIBER_ENTER : MPROF_EV_FIBER_LEAVE;
    p = mprof__w_ts(p + 1);
    if (name)
        p = mprof__w_ptr(p, name);
    mprof__commit(p);
}

/* ---- the program ---------------------------------------------------------------------------- */

static pthread_mutex_t frame_lock = PTHREAD_MUTEX_INITIALIZER;
static int n_frames = 60, tiny = 40;
static _Atomic int done; /* set by main, read by the worker */
static void *kept[1024];
static mprof_gpu_ctx gpu;
static int n_kept;

static void locked_work(uint64_t ns)
{
    raw_lock(MPROF_EV_LOCK_WAIT, 1, 0);
    pthread_mutex_lock(&frame_lock);
    raw_lock(MPROF_EV_LOCK_OBTAINED, 1, 0);
    spin_ns(ns);
    raw_lock(MPROF_EV_LOCK_RELEASED, 1, 0);
    pthread_mutex_unlock(&frame_lock);
}

static void *worker(void *arg)
{
    (void)arg;
    MPROF_THREAD_NAME("Worker");
    int loads_ended = 0;
    uint64_t own = 0;
    while (!done) {
        if (async_spans) {
            /* Main's loads end here, on another thread; one of the Worker's own overlaps them. */
            for (int n = loads_begun; loads_ended < n;)
                MPROF_ASYNC_END("Loads", (uint64_t)++loads_ended);
            MPROF_ASYNC_BEGIN("Loads", 1000000 + own, "stream");
        }
        MPROF_ZONE_C("Job", MPROF_COLOR_JOBS);
        {
            MPROF_ZONE_C("Job::lock", MPROF_COLOR_JOBS);
            locked_work(150000);
        }
        raw_fiber("Loader fiber");
        {
            MPROF_ZONE_C("Fiber::load", MPROF_COLOR_IO);
            spin_ns(100000);
        }
        raw_fiber(NULL);
        if (async_spans)
            MPROF_ASYNC_END("Loads", 1000000 + own++);
        spin_ns(200000);
    }
    if (async_spans)
        for (int n = loads_begun; loads_ended < n;)
            MPROF_ASYNC_END("Loads", (uint64_t)++loads_ended);
    return NULL;
}

static void frame(int f)
{
    MPROF_ZONE("Frame");
    if (async_spans) {
        MPROF_ASYNC_BEGIN("Loads", 2 * f + 1, "texture");
        MPROF_ASYNC_BEGIN_DYN("Loads", 2 * f + 2, f % 2 ? "mesh odd" : "mesh even");
        loads_begun = 2 * f + 2;
        if (f)
            MPROF_ASYNC_END("Jobs", f - 1);
        MPROF_ASYNC_BEGIN("Jobs", f, "bake");
    }
    {
        MPROF_ZONE_C("Update", MPROF_COLOR_PHYSICS);
        {
            MPROF_FRAME_BEGIN(physics_frames);
            MPROF_ZONE_C("Physics::step", MPROF_COLOR_PHYSICS);
            spin_ns(slow ? 1200000 : 300000);
            MPROF_FRAME_END(physics_frames);
        }
        {
            MPROF_ZONE_C("AI::think", MPROF_COLOR_AI);
            char text[48];
            snprintf(text, sizeof text, "agents=%d, \"crowd\"", 10 + f % 5);
            MPROF_ZONE_TEXT(text, strlen(text));
            spin_ns(200000);
        }
        locked_work(50000);
        if (deep)
            recurse(deep);
    }
    {
        MPROF_ZONE_C("Render", MPROF_COLOR_RENDERER);
        /* The "GPU" runs the pass 0.5 ms after submission, for 0.4 ms (1 tick = 1 ns). */
        int64_t gpu0 = (int64_t)mprof_now_ns() + 500000;
        uint32_t q = MPROF_GPU_ZONE_BEGIN_C(gpu, "GPU shadow pass", MPROF_COLOR_AUDIO);
        for (int i = 0; i < tiny; i++) {
            MPROF_ZONE_C("DrawCall", MPROF_COLOR_RENDERER);
            MPROF_ZONE_VALUE(i);
            spin_ns(2000);
        }
        uint32_t qe = MPROF_GPU_ZONE_END(gpu, q);
        if (q != MPROF_GPU_NO_QUERY) {
            MPROF_GPU_TIME(gpu, qe, gpu0 + 400000);
            MPROF_GPU_TIME(gpu, q, gpu0);
        }
        MPROF_PLOT_INT("Draw calls", tiny);
        /* The "renderer's output": a 160 x 90 gradient whose red channel is the frame number
         * (times 4), so a test can tell whose thumbnail it got. */
        static unsigned char pic[160 * 90 * 4];
        for (int y = 0; y < 90; y++)
            for (int x = 0; x < 160; x++) {
                unsigned char *px = &pic[(y * 160 + x) * 4];
                px[0] = (unsigned char)(f * 4);
                px[1] = (unsigned char)(x * 255 / 159);
                px[2] = (unsigned char)(y * 255 / 89);
                px[3] = 255;
            }
        MPROF_FRAME_IMAGE(pic, 160, 90);
    }
    {
        MPROF_ZONE_C("Audio", MPROF_COLOR_AUDIO);
        MPROF_ZONE_NAME("Audio mix (dynamic)", 19);
        void *buf = malloc(4096 + (size_t)f * 64);
        raw_alloc(buf, 4096 + (uint64_t)f * 64);
        spin_ns(100000);
        if (f % 3) {
            raw_free(buf);
            free(buf);
        } else if (n_kept < 1024) {
            kept[n_kept++] = buf; /* kept alive on purpose: shows as live memory */
        } else
            free(buf);
    }
    if (f % 10 == 0)
        MPROF_MESSAGEF((f / 10) % 6 + 1, "frame %d: level %d message", f, (f / 10) % 6 + 1);
    if (f == n_frames / 2)
        spin_ns(2000000); /* one slow frame: the worst frame */
    MPROF_PLOT("Frame work", (double)(f % 7) * 0.5 + 1.0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: view_demo CAPTURE.mprof [frames] [tiny_zones] [slow]\n");
        return 2;
    }
    if (argc > 2)
        n_frames = atoi(argv[2]);
    if (argc > 3)
        tiny = atoi(argv[3]);
    slow = argc > 4 && strcmp(argv[4], "slow") == 0;
    deep = argc > 4 && strncmp(argv[4], "deep=", 5) == 0 ? atoi(argv[4] + 5) : 0;
    async_spans = argc > 4 && strcmp(argv[4], "async") == 0;
    mprof_config cfg = {0};
    cfg.capture_path = argv[1];
    cfg.app_name = "view_demo";
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.chunk_bytes = 16384; /* several chunks even in a short capture: the cut-file tests need them */
    if (mprof_startup(&cfg) != MPROF_OK) {
        fprintf(stderr, "view_demo: cannot start the profiler\n");
        return 1;
    }
    MPROF_THREAD_NAME("Main");
    raw_lock_announce(1, "frame_lock");
    gpu = MPROF_GPU_CONTEXT("Vulkan queue", MPROF_GPU_API_VULKAN, 1.0, 256);
    MPROF_GPU_CALIBRATE(gpu, (int64_t)mprof_now_ns(), 0); /* GPU ticks = CPU ns here */
    pthread_t th;
    pthread_create(&th, NULL, worker, NULL);
    MPROF_FRAME_MARK();
    for (int f = 0; f < n_frames; f++) {
        frame(f);
        MPROF_FRAME_MARK();
    }
    done = 1;
    pthread_join(th, NULL);
    mprof_shutdown();
    for (int i = 0; i < n_kept; i++)
        free(kept[i]);
    return 0;
}
