/*
 * workload.c - the instrumented workload built into the mprof command for `mprof ci
 * --self-test` (compiled with MPROF_ENABLE; the rest of the tool is not instrumented).
 *
 * Each frame runs Physics (most of the frame, its work varying from frame to frame like a
 * game's), AI and Render as fixed amounts of CPU work and marks the frame. slow_pct makes Physics
 * do that much more work: a real slowdown of one zone, which the gate must find and name.
 */
#include <mprof/mprof.h>

#include "ci/workload.h"

#include <stdint.h>

#define PHYSICS_ITERS 10000u
#define SMALL_ITERS 100u

static volatile uint64_t sink;

static void work(uint64_t iters, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (uint64_t i = 0; i < iters; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink += x;
}

int mprof__ci_workload(long frames, double slow_pct)
{
    uint64_t physics = (uint64_t)((double)PHYSICS_ITERS * (1.0 + slow_pct / 100.0));
    MPROF_THREAD_NAME("main");
    MPROF_FRAME_MARK();
    for (long f = 0; f < frames; f++) {
        {
            MPROF_ZONE_C("Physics", MPROF_COLOR_PHYSICS);
            double spread = (double)f * 0.6180339887498949;
            spread = 0.7 + 0.6 * (spread - (double)(long)spread);
            work((uint64_t)((double)physics * spread), (uint64_t)f);
        }
        {
            MPROF_ZONE_C("AI", MPROF_COLOR_AI);
            work(SMALL_ITERS, (uint64_t)f + 1);
        }
        {
            MPROF_ZONE_C("Render", MPROF_COLOR_RENDERER);
            work(SMALL_ITERS, (uint64_t)f + 2);
        }
        MPROF_FRAME_MARK();
    }
    mprof_shutdown();
    return 0;
}
