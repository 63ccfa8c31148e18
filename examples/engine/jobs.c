/*
 * jobs.c - worker threads sharing one batch queue (see jobs.h).
 *
 * One batch is active at a time: {fn, user, count, grain, next, done}. Every taker (workers and
 * the main thread) locks the queue, claims the next grain, unlocks, runs it, and locks again to
 * count it done. A frame runs many short batches back to back, so a worker that runs out of
 * work first spins for a little while (watching the batch counter, without the lock) and only
 * then sleeps on a condition variable: woken threads would arrive after a short batch is over.
 * The main thread sleeps on another condition variable until the last grain is counted. The
 * queue mutex is an mprof_mutex (include/mprof/lock.h), so the profiler sees each contended
 * acquisition.
 */
#include "jobs.h"

#include "engine.h"

#include "mprof/lock.h"
#include "mprof/mprof.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_WORKERS 32
#define SPIN_NS 25000u /* how long an idle worker watches for the next batch before sleeping */

static struct {
    mprof_mutex lock;
    pthread_cond_t work_cv;
    pthread_cond_t done_cv;
    pthread_t threads[MAX_WORKERS];
    int n_workers;
    _Atomic int quit;
    _Atomic uint64_t batch_seq; /* bumps with every batch; idle workers watch it */
    job_fn fn;
    void *user;
    uint32_t count, grain, next, done;
} q;

/* Sleeps on cond with the queue lock held, releasing it meanwhile. The profiler sees a release
 * and, once the wait returns with the lock, a new hold: sleeping is not contention. */
static void queue_wait(pthread_cond_t *cond)
{
    MPROF_LOCK_RELEASED(q.lock.id, 0);
    pthread_cond_wait(cond, &q.lock.m);
    MPROF_LOCK_OBTAINED(q.lock.id, 0);
}

/* Claims a grain under the lock. Returns 0 when none is left. */
static int claim(uint32_t *begin, uint32_t *end)
{
    if (!q.fn || q.next >= q.count)
        return 0;
    *begin = q.next;
    *end = q.next + q.grain < q.count ? q.next + q.grain : q.count;
    q.next = *end;
    return 1;
}

static void run_grain(job_fn fn, void *user, uint32_t begin, uint32_t end, uint32_t worker)
{
    MPROF_ZONE_C("Jobs::run", MPROF_COLOR_JOBS);
    MPROF_ZONE_VALUE(end - begin);
    fn(user, begin, end, worker);
}

typedef struct worker_arg {
    uint32_t index;
} worker_arg;

static worker_arg worker_args[MAX_WORKERS];

/* Returns when a new batch was posted (the counter moved), on quit, or after SPIN_NS. */
static void spin_for_batch(uint64_t seen)
{
    const uint64_t t0 = eng_now_ns();
    while (atomic_load_explicit(&q.batch_seq, memory_order_acquire) == seen &&
           !atomic_load_explicit(&q.quit, memory_order_relaxed)) {
        for (int i = 0; i < 64; i++)
            __asm__ __volatile__("" ::: "memory");
        if (eng_now_ns() - t0 > SPIN_NS)
            return;
    }
}

static void *worker_main(void *arg)
{
    uint32_t self = ((worker_arg *)arg)->index;
    char name[32];
    snprintf(name, sizeof name, "Worker %u", self);
    MPROF_THREAD_NAME(name);
    for (;;) {
        uint32_t begin = 0, end = 0;
        mprof_mutex_lock(&q.lock);
        int got = claim(&begin, &end);
        while (!got && !q.quit) {
            uint64_t seen = atomic_load(&q.batch_seq);
            mprof_mutex_unlock(&q.lock);
            spin_for_batch(seen);
            mprof_mutex_lock(&q.lock);
            got = claim(&begin, &end);
            if (!got && !q.quit && atomic_load(&q.batch_seq) == seen) {
                queue_wait(&q.work_cv);
                got = claim(&begin, &end);
            }
        }
        if (!got) { /* quit */
            mprof_mutex_unlock(&q.lock);
            return NULL;
        }
        job_fn fn = q.fn;
        void *user = q.user;
        mprof_mutex_unlock(&q.lock);
        run_grain(fn, user, begin, end, self);
        mprof_mutex_lock(&q.lock);
        q.done += end - begin;
        if (q.done == q.count)
            pthread_cond_signal(&q.done_cv);
        mprof_mutex_unlock(&q.lock);
    }
}

int jobs_init(int n_workers)
{
    if (n_workers < 0)
        n_workers = 0;
    if (n_workers > MAX_WORKERS)
        n_workers = MAX_WORKERS;
    MPROF_MUTEX_INIT(&q.lock, "Jobs::queue");
    pthread_cond_init(&q.work_cv, NULL);
    pthread_cond_init(&q.done_cv, NULL);
    q.quit = 0;
    q.fn = NULL;
    for (int i = 0; i < n_workers; i++) {
        worker_args[i].index = (uint32_t)i + 1;
        if (pthread_create(&q.threads[i], NULL, worker_main, &worker_args[i]) != 0) {
            q.n_workers = i;
            jobs_shutdown();
            return -1;
        }
    }
    q.n_workers = n_workers;
    return 0;
}

void jobs_shutdown(void)
{
    mprof_mutex_lock(&q.lock);
    q.quit = 1;
    pthread_cond_broadcast(&q.work_cv);
    mprof_mutex_unlock(&q.lock);
    for (int i = 0; i < q.n_workers; i++)
        pthread_join(q.threads[i], NULL);
    q.n_workers = 0;
    pthread_cond_destroy(&q.work_cv);
    pthread_cond_destroy(&q.done_cv);
    mprof_mutex_destroy(&q.lock);
}

uint32_t jobs_thread_count(void)
{
    return (uint32_t)q.n_workers + 1;
}

void jobs_parallel_for(job_fn fn, void *user, uint32_t count, uint32_t grain)
{
    if (count == 0)
        return;
    if (grain == 0)
        grain = 1;
    if (q.n_workers == 0 || count <= grain) {
        run_grain(fn, user, 0, count, 0);
        return;
    }
    mprof_mutex_lock(&q.lock);
    q.fn = fn;
    q.user = user;
    q.count = count;
    q.grain = grain;
    q.next = 0;
    q.done = 0;
    atomic_fetch_add_explicit(&q.batch_seq, 1, memory_order_release);
    pthread_cond_broadcast(&q.work_cv);
    /* The main thread takes grains too instead of idling. */
    uint32_t begin, end;
    while (claim(&begin, &end)) {
        mprof_mutex_unlock(&q.lock);
        run_grain(fn, user, begin, end, 0);
        mprof_mutex_lock(&q.lock);
        q.done += end - begin;
    }
    if (q.done != q.count) {
        MPROF_ZONE_C("Jobs::wait", MPROF_COLOR_JOBS);
        while (q.done != q.count)
            queue_wait(&q.done_cv);
    }
    q.fn = NULL;
    mprof_mutex_unlock(&q.lock);
}
