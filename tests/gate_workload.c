/*
 * gate_workload.c - a small instrumented "engine" for the gate's proof on noise (gate_noise.sh).
 *
 *   gate_workload --capture OUT.mprof [--export OUT.json] [--frames N] [--slow PCT] [--iters N]
 *
 * Each frame runs three zones of fixed CPU work - Physics (most of the frame), AI and Render -
 * and marks the frame. The work is a fixed number of iterations, not a time calibrated at start,
 * so that two runs do the same work and differ only by the machine's noise; --slow PCT makes
 * Physics do PCT percent more iterations, a real slowdown of that zone. Like a game's, the frames
 * vary: Physics's work in frame f is scaled by 0.7 + 0.6 * frac(f * 0.618...), the same sequence
 * in every run, so the p95 lies inside the workload's own spread rather than on the edge where
 * machine noise begins. The capture is written
 * in-process (mprof_startup with a capture path) and, with --export, turned into a frame export
 * with the same code as `mprof export --format frames`.
 */
#include <mprof/mprof.h>

#include "export/frames.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Iterations of the mixing loop; about 2.5 ns each on a 2020s x86 core. */
#define PHYSICS_ITERS 10000u
#define AI_ITERS 100u
#define RENDER_ITERS 100u

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

static int parse_num(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : 0;
    if (!v || errno || *end || d < lo || d > hi) {
        fprintf(stderr, "gate_workload: %s needs a number from %g to %g\n", flag, lo, hi);
        return -1;
    }
    *out = d;
    return 0;
}

int main(int argc, char **argv)
{
    const char *capture = NULL, *export_path = NULL;
    double frames = 10000, slow = 0, iters = PHYSICS_ITERS;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--capture") == 0 && v) {
            capture = v;
            i++;
        } else if (strcmp(a, "--export") == 0 && v) {
            export_path = v;
            i++;
        } else if (strcmp(a, "--frames") == 0) {
            if (parse_num(a, v, 2, 1e6, &frames))
                return 2;
            i++;
        } else if (strcmp(a, "--iters") == 0) {
            /* Physics iterations per frame: bigger frames make additive machine noise (timer
             * interrupts, cache refills) a smaller share of each frame. */
            if (parse_num(a, v, 100, 1e8, &iters))
                return 2;
            i++;
        } else if (strcmp(a, "--slow") == 0) {
            if (parse_num(a, v, 0, 1000, &slow))
                return 2;
            i++;
        } else {
            fprintf(stderr, "usage: gate_workload --capture OUT.mprof [--export OUT.json] "
                            "[--frames N] [--slow PCT]\n");
            return 2;
        }
    }
    if (!capture) {
        fprintf(stderr, "gate_workload: --capture is required\n");
        return 2;
    }
    mprof_config cfg = {0};
    cfg.capture_path = capture;
    cfg.app_name = "gate_workload";
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.flush_interval_ms = 100; /* fewer collector wake-ups competing with the frames */
    mprof_result r = mprof_startup(&cfg);
    if (r != MPROF_OK) {
        fprintf(stderr, "gate_workload: mprof_startup: %s\n", mprof_result_str(r));
        return 3;
    }
    uint64_t physics = (uint64_t)(iters * (1.0 + slow / 100.0));
    MPROF_FRAME_MARK();
    for (long f = 0; f < (long)frames; f++) {
        {
            MPROF_ZONE_C("Physics", MPROF_COLOR_PHYSICS);
            double spread = (double)f * 0.6180339887498949;
            spread = 0.7 + 0.6 * (spread - (double)(long)spread);
            work((uint64_t)((double)physics * spread), (uint64_t)f);
        }
        {
            MPROF_ZONE_C("AI", MPROF_COLOR_AI);
            work(AI_ITERS, (uint64_t)f + 1);
        }
        {
            MPROF_ZONE_C("Render", MPROF_COLOR_RENDERER);
            work(RENDER_ITERS, (uint64_t)f + 2);
        }
        MPROF_FRAME_MARK();
    }
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    if (st.events_lost) {
        fprintf(stderr, "gate_workload: %llu events lost\n", (unsigned long long)st.events_lost);
        return 3;
    }
    if (export_path) {
        char err[512];
        if (mprof__export_frames(capture, export_path, err, sizeof err) != 0) {
            fprintf(stderr, "gate_workload: %s\n", err);
            return 3;
        }
    }
    return 0;
}
