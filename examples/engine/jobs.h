/*
 * jobs.h - the job system: worker threads that split a parallel loop between them.
 *
 * The main thread calls jobs_parallel_for(); the range is cut into grains that the workers and
 * the main thread itself take from one shared queue under a mutex ("Jobs::queue"), so the
 * timeline shows real contention when there are more threads than cores. A job writes only
 * the outputs of its own range, which keeps results independent of scheduling (determinism).
 */
#ifndef ENGINE_JOBS_H
#define ENGINE_JOBS_H

#include <stdint.h>

/* Runs items [begin, end) of a loop. worker is 0 on the main thread, 1..n on workers: an index
 * into per-worker scratch space. */
typedef void (*job_fn)(void *user, uint32_t begin, uint32_t end, uint32_t worker);

/* Starts n_workers threads (0 = everything runs on the main thread). Main thread. Returns 0 or
 * -1 when a thread cannot be created (then none runs). */
int jobs_init(int n_workers);
/* Stops and joins the workers. Main thread. */
void jobs_shutdown(void);
/* Threads that may run a job: workers + the main thread. */
uint32_t jobs_thread_count(void);
/* Runs fn over [0, count) in grains of `grain` items and returns when all are done. Main
 * thread only; not reentrant (a job must not call it). */
void jobs_parallel_for(job_fn fn, void *user, uint32_t count, uint32_t grain);

#endif
