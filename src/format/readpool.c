/*
 * readpool.c - the reader's workers: chunks read in file order, decoded at once, handed back in
 * file order.
 *
 * A worker takes the next chunk (reading its bytes is the one step done under the lock, since
 * the input is a stream), decompresses and decodes it into segments of its own, and publishes
 * them in the job's slot of a ring. The caller takes segments from the ring in job order and
 * gives each back to its worker when it is done with it. A worker owns SEGS_PER_WORKER
 * segments, so it decodes ahead while the caller reads, and it stops (and waits) when none is
 * free: memory stays at those segments and two chunks a worker however far the decoding runs
 * ahead. Each thread waits on a condition of its own and is signalled only when what it waits
 * for is there (a worker: half its segments back, a chunk's payload free, room in the ring),
 * so a segment costs no wake-up of threads that cannot use it. The caller gives a segment back
 * before it takes the next, so the worker of the job it waits for has all its segments back
 * and is woken: no wait can close into a circle.
 *
 * With a consumer (mprof__pool_start's fn, mprof_reader_each_batch) the caller waits and the
 * workers hand out the batches themselves: each segment is consumed, in file order, by the
 * worker that decoded it, one at a time. A batch is then read on the core that wrote it, from
 * its own cache: read on another core, the passes that follow the decoding cost a quarter more
 * (the engine's report), and the decoding must write past its cache (mprof__decoder.stream).
 * The segment at the head of the order is always its owner's to consume, and a worker that waits
 * for anything consumes its turn first, so the order cannot stall: the owner of the head has
 * either published it (and consumes it) or holds a free segment to decode it into (its other
 * segments are the head job's, consumed first, or free).
 *
 * A consumer may have a second stage (then, mprof_reader_each_batch_then): a segment fn is done
 * with waits in a queue, in file order, and then takes it there, one segment at a time, on a
 * worker that would otherwise wait (or on the caller once fn has stopped); the segment goes back
 * to its worker after that. So then's work leaves the chain of fn's turns, which is what bounds
 * the read with two jobs. A segment waiting for then is not free: a worker whose segments wait
 * there takes no new chunk and runs then instead, so the queue cannot outgrow the segments.
 * fn catches then up (mprof__pool_drain) before it changes what then reads (reader.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "format/decode.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define SEGS_PER_WORKER 4
/* In consumer mode a worker holds enough segments to decode a whole chunk of a megabyte (about
 * 14 segments of compact zone records) before its turn comes: a chunk's decoding and consuming
 * are otherwise one after the other on its worker (bench_core's report: 0.17 s with 4, 0.13 s
 * with 16). Memory: a segment's pages are touched only as they fill. A worker claims the next
 * chunk only while fewer than CLAIM_PENDING of its segments wait to be consumed, so that the
 * chunks go round the workers instead of queueing behind one. */
#define SEGS_CONSUME 16
#define CLAIM_PENDING 2
/* A worker that waits for a segment is woken when this many are free, not at each one: the
 * caller is usually the slower side, and a wake-up per segment costs both threads a context
 * switch (thousands a second, most of the second core's gain on a virtual machine). */
#define WAKE_FREE(p) ((p)->n_seg / 2)

typedef struct worker {
    struct mprof__pool *pool;
    pthread_t th;
    int started;
    pthread_cond_t cv; /* the worker waits here, whatever it waits for */
    int waiting;
    int n_free;
    mprof__decoder dec;
    mprof__job job;
    mprof__segment seg[SEGS_CONSUME];
    int free[SEGS_CONSUME];
} worker;

typedef struct slot {
    uint64_t seq;                 /* the job it holds; 0 = none */
    mprof__segment *head, *tail;  /* published, not yet taken */
} slot;

struct mprof__pool {
    mprof_reader *r;
    const unsigned char *want;
    pthread_mutex_t mu;
    pthread_cond_t cv_caller;
    int caller_waiting;
    worker *w;
    int n;
    int n_seg; /* segments a worker holds */
    slot *ring;
    uint64_t n_ring;
    uint64_t next_claim; /* the next job a worker takes */
    uint64_t next_take;  /* the job the caller is on */
    int input_done;      /* the read stage has given its last job */
    int stop;
    /* Consumer mode: fn takes each segment in order on its owner's thread; consuming is set
     * while it runs, result is what stopped it (0 while it runs). */
    mprof__consume_fn fn;
    void *ctx;
    int consuming;
    int result;
    /* The second stage (then): the segments through fn, in file order, waiting for it; one runs
     * at a time (then_running). A thread that waits for the queue to empty waits on cv_then. */
    mprof__then_fn then;
    mprof__segment *then_head, *then_tail;
    int then_running;
    int then_waiting;
    pthread_cond_t cv_then;
};

/* Appends s to the list [*head, *tail]. */
static void seg_append(mprof__segment **head, mprof__segment **tail, mprof__segment *s)
{
    s->next = NULL;
    if (*tail)
        (*tail)->next = s;
    else
        *head = s;
    *tail = s;
}

static mprof__segment *free_segment(worker *w)
{
    for (int i = 0; i < w->pool->n_seg; i++)
        if (w->free[i]) {
            w->free[i] = 0;
            w->n_free--;
            return &w->seg[i];
        }
    return NULL;
}

static void wake_waiting_workers(mprof__pool *p);

/* Takes the first segment of the slot of the job in turn (published); the job's last frees the
 * slot for a later job and puts the next job in turn. */
static mprof__segment *pop_head(mprof__pool *p, slot *sl)
{
    mprof__segment *s = sl->head;
    sl->head = s->next;
    if (!sl->head)
        sl->tail = NULL;
    if (s->last) {
        sl->seq = 0;
        p->next_take++;
    }
    return s;
}

/* The head of the order, when it is published and w's: takes it as mprof__pool_take does. */
static mprof__segment *take_turn(worker *w)
{
    mprof__pool *p = w->pool;
    slot *sl = &p->ring[p->next_take % p->n_ring];
    if (p->stop || p->consuming || sl->seq != p->next_take || !sl->head ||
        sl->head->owner != (int)(w - p->w))
        return NULL;
    return pop_head(p, sl);
}

static void give_back_locked(mprof__pool *p, mprof__segment *s);

/* A segment fn is done with: back to its worker, or to the second stage's queue. */
static void done_with(mprof__pool *p, mprof__segment *s)
{
    if (!p->then) {
        give_back_locked(p, s);
        return;
    }
    seg_append(&p->then_head, &p->then_tail, s);
}

/* Runs then on the first segment of its queue unless another thread is on it (p->mu held, let
 * go while then runs). Returns whether it ran. */
static int run_then(mprof__pool *p)
{
    mprof__segment *s = p->then_head;
    if (!s || p->then_running)
        return 0;
    p->then_head = s->next;
    if (!p->then_head)
        p->then_tail = NULL;
    p->then_running = 1;
    pthread_mutex_unlock(&p->mu);
    p->then(p->ctx, s);
    pthread_mutex_lock(&p->mu);
    p->then_running = 0;
    give_back_locked(p, s);
    if (p->then_waiting)
        pthread_cond_broadcast(&p->cv_then);
    if (p->then_head)
        wake_waiting_workers(p); /* the next is anybody's to run */
    return 1;
}

/* Until the second stage's queue is empty and nobody runs then (p->mu held). */
static void drain_locked(mprof__pool *p)
{
    while (p->then_head || p->then_running) {
        if (run_then(p))
            continue;
        p->then_waiting++;
        pthread_cond_wait(&p->cv_then, &p->mu);
        p->then_waiting--;
    }
}

void mprof__pool_drain(mprof__pool *p, mprof__segment *s)
{
    pthread_mutex_lock(&p->mu);
    drain_locked(p);
    p->then_running = 1;
    pthread_mutex_unlock(&p->mu);
    p->then(p->ctx, s);
    pthread_mutex_lock(&p->mu);
    p->then_running = 0;
    if (p->then_waiting)
        pthread_cond_broadcast(&p->cv_then);
    pthread_mutex_unlock(&p->mu);
}

/* Consumer mode: consumes w's segments while the head of the order is one (p->mu held, let go
 * while fn runs). Returns whether it consumed any. */
static int consume_turns(worker *w)
{
    mprof__pool *p = w->pool;
    int any = 0;
    mprof__segment *s;
    while (p->fn && (s = take_turn(w))) {
        p->consuming = 1;
        pthread_mutex_unlock(&p->mu);
        int rc = p->fn(p->ctx, p, s);
        pthread_mutex_lock(&p->mu);
        p->consuming = 0;
        done_with(p, s);
        any = 1;
        if (rc != 0) {
            p->result = rc;
            p->stop = 1;
            pthread_cond_signal(&p->cv_caller);
        }
        /* The next head may be another worker's, or the ring has room again. */
        wake_waiting_workers(p);
    }
    return any;
}

/* Waits on the worker's own condition (p->mu held); in consumer mode it consumes its turn
 * instead when it has one, or else runs the second stage when it can. */
static void worker_wait(worker *w)
{
    if (consume_turns(w) || run_then(w->pool))
        return;
    w->waiting = 1;
    pthread_cond_wait(&w->cv, &w->pool->mu);
    w->waiting = 0;
}

static void wake_waiting_workers(mprof__pool *p)
{
    for (int i = 0; i < p->n; i++)
        if (p->w[i].waiting)
            pthread_cond_signal(&p->w[i].cv);
}

static void *work(void *arg)
{
    worker *w = arg;
    mprof__pool *p = w->pool;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        /* In consumer mode, a worker with a chunk's segments still to consume leaves the next
         * chunk to another: taking it would make it decode that one on its own turn. */
        while (!p->stop && !p->input_done &&
               (p->next_claim - p->next_take >= p->n_ring ||
                (p->fn && p->n_seg - w->n_free >= CLAIM_PENDING)))
            worker_wait(w);
        if (p->fn && !p->stop && p->input_done) {
            worker_wait(w); /* its published segments are still its to consume */
            continue;
        }
        if (p->stop || p->input_done)
            break;
        uint64_t seq = p->next_claim++;
        slot *sl = &p->ring[seq % p->n_ring];
        sl->seq = seq;
        sl->head = sl->tail = NULL;
        mprof__read_job(p->r, &w->job);
        if (w->job.kind == MPROF__JOB_EOF || w->job.kind == MPROF__JOB_FAIL)
            p->input_done = 1;
        if (w->job.kind == MPROF__JOB_EVENTS) {
            /* A payload whose segments have all come back. */
            while (!p->stop && w->dec.raw_busy[0] && w->dec.raw_busy[1])
                worker_wait(w);
            if (p->stop)
                break;
            w->dec.raw_cur = w->dec.raw_busy[0] ? 1 : 0;
            w->dec.raw_busy[w->dec.raw_cur] = 1;
        }
        for (int first = 1;; first = 0) {
            mprof__segment *s;
            while (!p->stop && !(s = free_segment(w)))
                worker_wait(w);
            if (p->stop)
                goto out;
            pthread_mutex_unlock(&p->mu);
            mprof__produce(&w->dec, &w->job, first, s, p->want);
            pthread_mutex_lock(&p->mu);
            seg_append(&sl->head, &sl->tail, s);
            if (p->caller_waiting && !p->fn)
                pthread_cond_signal(&p->cv_caller);
            consume_turns(w);
            if (s->last)
                break;
        }
    }
out:
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

mprof__segment *mprof__pool_take(mprof__pool *p)
{
    pthread_mutex_lock(&p->mu);
    uint64_t seq = p->next_take;
    slot *sl = &p->ring[seq % p->n_ring];
    while (!(sl->seq == seq && sl->head)) {
        p->caller_waiting = 1;
        pthread_cond_wait(&p->cv_caller, &p->mu);
        p->caller_waiting = 0;
    }
    mprof__segment *s = pop_head(p, sl);
    if (s->last)
        wake_waiting_workers(p); /* the ring has room for a later job */
    pthread_mutex_unlock(&p->mu);
    return s;
}

static void give_back_locked(mprof__pool *p, mprof__segment *s)
{
    worker *w = &p->w[s->owner];
    w->free[s - w->seg] = 1;
    w->n_free++;
    int raw_freed = s->last && s->raw_slot >= 0;
    if (raw_freed)
        w->dec.raw_busy[s->raw_slot] = 0; /* the chunk's events are all read */
    if (w->waiting && (raw_freed || w->n_free >= WAKE_FREE(p)))
        pthread_cond_signal(&w->cv);
}

void mprof__pool_give_back(mprof__pool *p, mprof__segment *s)
{
    pthread_mutex_lock(&p->mu);
    give_back_locked(p, s);
    pthread_mutex_unlock(&p->mu);
}

int mprof__pool_wait(mprof__pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        p->caller_waiting = 1;
        pthread_cond_wait(&p->cv_caller, &p->mu);
        p->caller_waiting = 0;
    }
    /* The workers stop at once; the segments fn took still go through then. */
    drain_locked(p);
    int rc = p->result;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void mprof__pool_stop(mprof__pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    for (int i = 0; p->w && i < p->n; i++)
        pthread_cond_signal(&p->w[i].cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; p->w && i < p->n; i++) {
        worker *w = &p->w[i];
        if (w->started)
            pthread_join(w->th, NULL);
        for (int k = 0; k < p->n_seg; k++) {
            mprof__kv_free(&w->seg[k].kv);
            mprof__segment_free(&w->seg[k]);
        }
        mprof__decoder_free(&w->dec);
        mprof_buf_free(&w->job.stored);
        mprof__kv_free(&w->job.kv);
        pthread_cond_destroy(&w->cv);
    }
    pthread_cond_destroy(&p->cv_caller);
    pthread_cond_destroy(&p->cv_then);
    pthread_mutex_destroy(&p->mu);
    free(p->ring);
    free(p->w);
    free(p);
}

mprof__pool *mprof__pool_start(mprof_reader *r, int workers, const unsigned char *want,
                               mprof__consume_fn fn, mprof__then_fn then, void *ctx)
{
    mprof__pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->r = r;
    p->want = want;
    p->fn = fn;
    p->then = fn ? then : NULL;
    p->ctx = ctx;
    p->n = workers;
    p->n_seg = fn ? SEGS_CONSUME : SEGS_PER_WORKER;
    p->n_ring = (uint64_t)workers * (uint64_t)p->n_seg + 2;
    p->next_claim = p->next_take = 1;
    p->w = calloc((size_t)workers, sizeof *p->w);
    p->ring = calloc(p->n_ring, sizeof *p->ring);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_caller, NULL);
    pthread_cond_init(&p->cv_then, NULL);
    for (int i = 0; p->w && i < workers; i++)
        pthread_cond_init(&p->w[i].cv, NULL);
    if (!p->w || !p->ring) {
        mprof__pool_stop(p);
        return NULL;
    }
    for (int i = 0; i < workers; i++) {
        worker *w = &p->w[i];
        w->pool = p;
        for (int k = 0; k < p->n_seg; k++) {
            if (mprof__segment_init(&w->seg[k]) != 0) {
                mprof__pool_stop(p);
                return NULL;
            }
            w->seg[k].owner = i;
            w->free[k] = 1;
        }
        w->n_free = p->n_seg;
        w->dec.stream = fn == NULL; /* without a consumer, the caller's core reads the records */
    }
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&p->w[i].th, NULL, work, &p->w[i]) != 0) {
            if (i == 0) {
                mprof__pool_stop(p);
                return NULL;
            }
            break; /* fewer workers than asked still read the whole capture */
        }
        p->w[i].started = 1;
    }
    return p;
}

static _Atomic int read_jobs = 1;

void mprof_set_read_jobs(int jobs)
{
    read_jobs = jobs <= 0 ? mprof_default_jobs() : jobs;
}

int mprof_read_jobs(void)
{
    return read_jobs;
}

int mprof_default_jobs(void)
{
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
