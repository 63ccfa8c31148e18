/*
 * bench_locks.c - the cost of mprof_mutex and mprof_rwlock against bare pthreads, uncontended,
 * in the same run. Prints one JSON object per line: ns per lock+unlock pair for bare pthreads,
 * for the wrappers while a capture records (trylock + OBTAINED + RELEASED events), and for the
 * wrappers with no capture running. Built with MPROF_ENABLE; without it the wrappers are the
 * bare calls by construction (see include/mprof/lock.h), so "bare" is also that figure.
 * Each figure is the best of REPS runs.
 *
 * usage: bench_locks [--n N] [--dir DIR]
 */
#define MPROF_ENABLE 1
#include "mprof/lock.h"
#include "mprof/mprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS 5

static uint64_t n_pairs = 1000000;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef enum { BARE_MUTEX, MPROF_MUTEX, BARE_RD, MPROF_RD, BARE_WR, MPROF_WR } kind;

static pthread_mutex_t bare_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t bare_rw = PTHREAD_RWLOCK_INITIALIZER;
static mprof_mutex m;
static mprof_rwlock rw;

static double run(kind k)
{
    double best = 1e18;
    for (int r = 0; r < REPS; r++) {
        uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < n_pairs; i++) {
            switch (k) {
            case BARE_MUTEX:
                pthread_mutex_lock(&bare_m);
                pthread_mutex_unlock(&bare_m);
                break;
            case MPROF_MUTEX:
                mprof_mutex_lock(&m);
                mprof_mutex_unlock(&m);
                break;
            case BARE_RD:
                pthread_rwlock_rdlock(&bare_rw);
                pthread_rwlock_unlock(&bare_rw);
                break;
            case MPROF_RD:
                mprof_rwlock_rdlock(&rw);
                mprof_rwlock_rdunlock(&rw);
                break;
            case BARE_WR:
                pthread_rwlock_wrlock(&bare_rw);
                pthread_rwlock_unlock(&bare_rw);
                break;
            case MPROF_WR:
                mprof_rwlock_wrlock(&rw);
                mprof_rwlock_wrunlock(&rw);
                break;
            }
        }
        double v = (double)(now_ns() - t0) / (double)n_pairs;
        best = v < best ? v : best;
    }
    return best;
}

static void report(const char *lock, const char *state, double bare, double wrapped)
{
    printf("{\"bench\":\"locks\",\"lock\":\"%s\",\"capture\":\"%s\",\"bare_ns\":%.1f,"
           "\"mprof_ns\":%.1f,\"overhead_ns\":%.1f,\"ratio\":%.2f}\n",
           lock, state, bare, wrapped, wrapped - bare, wrapped / bare);
}

static void all(const char *state)
{
    double b = run(BARE_MUTEX), w = run(MPROF_MUTEX);
    report("mutex", state, b, w);
    b = run(BARE_RD);
    w = run(MPROF_RD);
    report("rwlock_shared", state, b, w);
    b = run(BARE_WR);
    w = run(MPROF_WR);
    report("rwlock_exclusive", state, b, w);
}

int main(int argc, char **argv)
{
    const char *dir = "/tmp";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n_pairs = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else {
            fprintf(stderr, "usage: bench_locks [--n N] [--dir DIR]\n");
            return 2;
        }
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/bench-locks-%ld.mprof", dir, (long)getpid());
    mprof_config cfg = {0};
    cfg.capture_path = path;
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.memory_limit_bytes = (size_t)2 << 30;
    if (mprof_startup(&cfg) != MPROF_OK) {
        fprintf(stderr, "bench_locks: cannot start a capture to %s\n", path);
        return 1;
    }
    MPROF_MUTEX_INIT(&m, "bench mutex");
    MPROF_RWLOCK_INIT(&rw, "bench rwlock");
    all("recording");
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    all("off");
    printf("{\"bench\":\"locks\",\"case\":\"summary\",\"events_recorded\":%llu,"
           "\"events_lost\":%llu}\n",
           (unsigned long long)st.events_recorded, (unsigned long long)st.events_lost);
    remove(path);
    return ferror(stdout) ? 1 : 0;
}
