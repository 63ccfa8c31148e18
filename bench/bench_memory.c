/*
 * bench_memory.c - what an allocation event costs, with and without a callstack, and what a
 * callstack capture costs per frame, for each capture method. Prints one JSON object per line.
 * Every figure is the best of REPS runs, and is also given as a ratio to two raw timer reads
 * measured in the same run (this machine is shared and noisy). Events are really recorded: a
 * capture runs to a file in --dir (default /tmp), removed afterwards.
 *
 * The callstack cases run 40 frames deep, so that depth 32 is really 32 frames.
 *
 * usage: bench_memory [--n N] [--dir DIR]
 */
#define MPROF_ENABLE 1
#include "mprof/alloc.h"
#include "mprof/mprof.h"

#include "callstack.h"

#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS 5
#define STACK_DEPTH 40

static uint64_t n_events = 200000;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double timer_pair_ns(uint64_t n)
{
    uint64_t acc = 0, t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t a = mprof__ticks();
        uint64_t b = mprof__ticks();
        acc += b - a;
    }
    sink += acc;
    return (double)(now_ns() - t0) / (double)n;
}

/* ns per MPROF_ALLOC_NAMED_CS event at the given depth (0 = no callstack). */
static double alloc_events(int depth, uint64_t n)
{
    static char block[64];
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++)
        MPROF_ALLOC_NAMED_CS(block + (i & 31), 32, "bench", depth);
    return (double)(now_ns() - t0) / (double)n;
}

static double free_events(uint64_t n)
{
    static char block[64];
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++)
        MPROF_FREE_NAMED(block + (i & 31), "bench");
    return (double)(now_ns() - t0) / (double)n;
}

/* ns per capture at depth with method (3 = glibc backtrace, for comparison). */
static double captures(int method, int depth, uint64_t n, int *out_frames)
{
    uint64_t fr[64];
    void *gb[64];
    int got = 0;
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++)
        got = method == 3 ? backtrace(gb, depth) : mprof__callstack_capture_with(method, fr, depth, 0);
    *out_frames = got;
    return (double)(now_ns() - t0) / (double)n;
}

static double pool_pairs(mprof_pool *p, uint64_t n)
{
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        void *b = mprof_pool_alloc(p);
        mprof_pool_free(p, b);
    }
    return (double)(now_ns() - t0) / (double)n;
}

typedef struct results {
    double timer;
} results;

static const char *method_name(int m)
{
    return m == MPROF__CS_FP ? "fp" : m == 3 ? "glibc_backtrace" : "unwind";
}

/* Runs the measurements from STACK_DEPTH frames down. */
static __attribute__((noinline)) uint64_t measure(int frames_left, results *r)
{
    if (frames_left > 0) {
        uint64_t v = measure(frames_left - 1, r);
        sink += v;
        return v + 1;
    }
    double b;
    /* Allocation events, no callstack and depth 8/16/32, both methods. */
    b = 1e18;
    for (int k = 0; k < REPS; k++) {
        double v = alloc_events(0, n_events);
        b = b < v ? b : v;
    }
    printf("{\"bench\":\"memory\",\"case\":\"alloc_event\",\"depth\":0,\"ns\":%.1f,"
           "\"timer_pairs\":%.2f}\n",
           b, b / r->timer);
    b = 1e18;
    for (int k = 0; k < REPS; k++) {
        double v = free_events(n_events);
        b = b < v ? b : v;
    }
    printf("{\"bench\":\"memory\",\"case\":\"free_event\",\"depth\":0,\"ns\":%.1f,"
           "\"timer_pairs\":%.2f}\n",
           b, b / r->timer);
    for (int m = MPROF__CS_UNWIND; m <= MPROF__CS_FP; m++) {
        mprof__callstack_set_method(m);
        for (int d = 8; d <= 32; d *= 2) {
            b = 1e18;
            for (int k = 0; k < REPS; k++) {
                double v = alloc_events(d, n_events / 4);
                b = b < v ? b : v;
            }
            printf("{\"bench\":\"memory\",\"case\":\"alloc_event_cs\",\"method\":\"%s\","
                   "\"depth\":%d,\"ns\":%.1f,\"ns_per_frame\":%.2f,\"timer_pairs\":%.2f}\n",
                   method_name(m), d, b, b / d, b / r->timer);
        }
    }
    mprof__callstack_set_method(MPROF__CS_UNWIND);
    for (int m = MPROF__CS_UNWIND; m <= 3; m++)
        for (int d = 8; d <= 32; d *= 2) {
            int got = 0;
            b = 1e18;
            for (int k = 0; k < REPS; k++) {
                double v = captures(m, d, n_events / 4, &got);
                b = b < v ? b : v;
            }
            printf("{\"bench\":\"memory\",\"case\":\"capture\",\"method\":\"%s\",\"depth\":%d,"
                   "\"frames\":%d,\"ns\":%.1f,\"ns_per_frame\":%.2f}\n",
                   method_name(m), d, got, b, got ? b / got : 0.0);
        }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = "/tmp";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n_events = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else {
            fprintf(stderr, "usage: bench_memory [--n N] [--dir DIR]\n");
            return 2;
        }
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/bench-memory-%ld.mprof", dir, (long)getpid());
    mprof_config cfg = {0};
    cfg.capture_path = path;
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.memory_limit_bytes = (size_t)2 << 30;
    if (mprof_startup(&cfg) != MPROF_OK) {
        fprintf(stderr, "bench_memory: cannot start a capture to %s\n", path);
        return 1;
    }
    results r;
    r.timer = 1e18;
    for (int k = 0; k < REPS; k++) {
        double v = timer_pair_ns(n_events);
        r.timer = r.timer < v ? r.timer : v;
    }
    printf("{\"bench\":\"memory\",\"case\":\"timer_pair\",\"ns\":%.1f}\n", r.timer);
    measure(STACK_DEPTH, &r);

    mprof_pool *p = NULL;
    mprof_pool_desc pd = {.name = "bench_pool", .block_bytes = 64, .n_blocks = 16};
    mprof_pool_create(&pd, &p);
    double b = 1e18;
    for (int k = 0; k < REPS; k++) {
        double v = pool_pairs(p, n_events);
        b = b < v ? b : v;
    }
    mprof_pool_destroy(p);
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    printf("{\"bench\":\"memory\",\"case\":\"kit_pool_alloc_free_recorded\",\"ns\":%.1f}\n", b);
    /* The same pair with no capture running: the instrumentation's idle cost. */
    mprof_pool_create(&pd, &p);
    b = 1e18;
    for (int k = 0; k < REPS; k++) {
        double v = pool_pairs(p, n_events);
        b = b < v ? b : v;
    }
    mprof_pool_destroy(p);
    printf("{\"bench\":\"memory\",\"case\":\"kit_pool_alloc_free_idle\",\"ns\":%.1f}\n", b);
    printf("{\"bench\":\"memory\",\"case\":\"summary\",\"events_recorded\":%llu,"
           "\"events_lost\":%llu}\n",
           (unsigned long long)st.events_recorded, (unsigned long long)st.events_lost);
    remove(path);
    return ferror(stdout) ? 1 : 0;
}
