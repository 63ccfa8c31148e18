/*
 * stats_workload.c - a small real program for tests/test_analysis.c: recursion recorded by the
 * real library, on two threads, and a flood of zones against a tiny memory cap.
 *
 * usage: stats_workload CAPTURE.mprof [--frames N] [--flood]
 *
 * Each of two threads ("Main", which marks the frames, and "Worker") runs N iterations of one
 * enclosing zone holding a direct recursion (Rec: a two-branch tree of depth 6, 127 calls) and a
 * mutual one (Even -> Odd -> Even ..., 8 calls). With --flood the main thread also records
 * 200,000 empty zones in every third frame: with MPROF_MEMORY_MIB=1 most are dropped, and frame
 * marks with them; the frames between floods are whole. The program prints nothing; the capture is the output.
 */
#define MPROF_ENABLE 1
#include "mprof/mprof.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per thread: the recursion runs on two threads at once (a shared sink is a data race). */
static _Thread_local volatile unsigned sink;

static void rec(int depth)
{
    MPROF_ZONE("Rec");
    sink += (unsigned)depth;
    if (depth > 0) {
        rec(depth - 1);
        rec(depth - 1);
    }
}

static void odd(int n);
static void even(int n)
{
    MPROF_ZONE("Even");
    sink += (unsigned)n;
    if (n > 0)
        odd(n - 1);
}
static void odd(int n)
{
    MPROF_ZONE("Odd");
    sink += (unsigned)n;
    if (n > 0)
        even(n - 1);
}

static int n_frames = 20;

static void *worker(void *arg)
{
    (void)arg;
    MPROF_THREAD_NAME("Worker");
    for (int i = 0; i < n_frames; i++) {
        MPROF_ZONE("Work");
        rec(6);
        even(7);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: stats_workload CAPTURE.mprof [--frames N] [--flood]\n");
        return 2;
    }
    int flood = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc)
            n_frames = atoi(argv[++i]);
        else if (strcmp(argv[i], "--flood") == 0)
            flood = 1;
    }
    mprof_config cfg = {0};
    cfg.capture_path = argv[1];
    cfg.app_name = "stats_workload";
    if (mprof_startup(&cfg) != MPROF_OK) {
        fprintf(stderr, "stats_workload: mprof_startup failed\n");
        return 1;
    }
    MPROF_THREAD_NAME("Main");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    MPROF_FRAME_MARK();
    for (int i = 0; i < n_frames; i++) {
        {
            MPROF_ZONE("Frame");
            rec(6);
            even(7);
            for (int k = 0; flood && i % 3 == 1 && k < 200000; k++) {
                MPROF_ZONE("Tiny");
            }
        }
        /* After a flood the collector drains before the mark, however slow a busy machine
         * makes it: the flooded frame ends with a mark that is kept, so it spans its losses. */
        if (flood && i % 3 == 1)
            mprof_flush();
        MPROF_FRAME_MARK();
    }
    pthread_join(t, NULL);
    mprof_shutdown();
    return 0;
}
