/*
 * buffers.c - per-thread buffers: the thread registry, the blocks, their recycling, and the
 * drain that empties them.
 *
 * Each thread that records owns an mprof__thread with a chain of 64 KiB blocks. The hot path
 * (inline in mprof.h) appends raw records at tb.cur and publishes the new cursor with a release
 * store; when a block is full the owner links a fresh one (the only allocation a recording thread
 * makes) and the drain, on the collector thread, hands the old one back once it is read. Blocks
 * are counted against the memory cap; past it the thread records nothing, counts what it
 * dropped, and writes one LOST record when it gets a block again, so losses reach the capture
 * and the report.
 *
 * The process's own records (system tracing's) take the same road through a locked queue that
 * the drain empties like a thread's buffer; see mprof__process_records.
 */
#include "buffers.h"
#include "config.h"
#include "mode.h"
#include "platform/platform.h"
#include "stats.h"

#include <pthread.h>
#include <stdlib.h>

mprof__tbuf mprof__dummy_tbuf; /* cur == end == NULL: every event takes the slow path */
__thread mprof__tbuf *mprof__tls = &mprof__dummy_tbuf;
_Atomic uint64_t mprof__blocks_allocated;
_Atomic uint32_t mprof__thread_generation;

/* Every thread that registered and has not been freed yet. */
static struct {
    pthread_mutex_t lock;
    mprof__thread *threads;
    uint32_t next_idx;
    mprof__thread **snap; /* the drain's copy of the list (drain only) */
    size_t snap_cap;
} registry = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* ---- recycled blocks ----------------------------------------------------------------------- */

/* Drained blocks that their own thread does not keep (it holds 8 spare already, or it has
 * exited) wait here for any thread's next block, so that a block's pages are faulted in once per
 * process and not once per use. A page fault costs ~0.1-0.3 us on hardware and ~11 us on this
 * project's VM (docs/OVERHEAD.md: without the pool it is most of the two-thread zone cost, ~7 ns
 * a zone): a freed block goes back to malloc, which trims it and faults it in again, and a new
 * thread would start with no spares.
 *
 * A bounded multi-producer, multi-consumer queue (a ring of cells with sequence numbers, after
 * Vyukov): the collector puts, any thread's refill takes. Neither waits: a full queue frees the
 * block, an empty one (or a cell another thread is filling right now) makes refill malloc. At
 * most POOL_SLOTS blocks (16 MiB) stay in it; they are not counted as buffered, and
 * mprof_shutdown frees them. */
#define POOL_SLOTS 256u
static struct {
    struct {
        _Atomic size_t seq;
        mprof__block *b;
    } cell[POOL_SLOTS];
    _Alignas(MPROF__CACHE_LINE) _Atomic size_t put_pos;
    _Alignas(MPROF__CACHE_LINE) _Atomic size_t take_pos;
    _Atomic int ready;
} pool;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_init(void)
{
    for (size_t i = 0; i < POOL_SLOTS; i++)
        atomic_init(&pool.cell[i].seq, i);
    atomic_store_explicit(&pool.ready, 1, memory_order_release);
}

static void block_recycle(mprof__block *b)
{
    pthread_once(&pool_once, pool_init);
    size_t pos = atomic_load_explicit(&pool.put_pos, memory_order_relaxed);
    for (;;) {
        size_t seq = atomic_load_explicit(&pool.cell[pos % POOL_SLOTS].seq, memory_order_acquire);
        intptr_t diff = (intptr_t)seq - (intptr_t)pos;
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&pool.put_pos, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed))
                break;
        } else if (diff < 0) {
            free(b); /* full */
            return;
        } else {
            pos = atomic_load_explicit(&pool.put_pos, memory_order_relaxed);
        }
    }
    pool.cell[pos % POOL_SLOTS].b = b;
    atomic_store_explicit(&pool.cell[pos % POOL_SLOTS].seq, pos + 1, memory_order_release);
}

/* A recycled block, or NULL (none, or none ready this instant). */
static mprof__block *pool_take(void)
{
    if (!atomic_load_explicit(&pool.ready, memory_order_acquire))
        return NULL; /* nothing was ever recycled */
    size_t pos = atomic_load_explicit(&pool.take_pos, memory_order_relaxed);
    for (;;) {
        size_t seq = atomic_load_explicit(&pool.cell[pos % POOL_SLOTS].seq, memory_order_acquire);
        intptr_t diff = (intptr_t)seq - (intptr_t)(pos + 1);
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&pool.take_pos, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed))
                break;
        } else if (diff < 0) {
            return NULL;
        } else {
            pos = atomic_load_explicit(&pool.take_pos, memory_order_relaxed);
        }
    }
    mprof__block *b = pool.cell[pos % POOL_SLOTS].b;
    atomic_store_explicit(&pool.cell[pos % POOL_SLOTS].seq, pos + POOL_SLOTS, memory_order_release);
    return b;
}

void mprof__buffers_release_pool(void)
{
    for (mprof__block *b; (b = pool_take());)
        free(b);
}

/* ---- the owner's side ---------------------------------------------------------------------- */

/* Links a fresh block as the thread's current one. 0 on success, -1 when the cap is reached.
 * Inlined into its two callers, so that a full block costs the event writer one call. */
static inline __attribute__((always_inline)) int refill(mprof__thread *th)
{
    size_t bytes = sizeof(mprof__block) + MPROF__BLOCK_BYTES;
    if (atomic_load_explicit(&mprof__stats.buffered_bytes, memory_order_relaxed) + bytes >
        mprof__config.memory_limit_bytes)
        return -1;
    if (!th->spare)
        th->spare = atomic_exchange_explicit(&th->returned, NULL, memory_order_acquire);
    mprof__block *b = th->spare;
    if (b) {
        th->spare = b->free_next;
        atomic_fetch_sub_explicit(&th->n_returned, 1, memory_order_relaxed);
    } else if (!(b = pool_take())) {
        if (!(b = malloc(bytes)))
            return -1;
        atomic_fetch_add_explicit(&mprof__blocks_allocated, 1, memory_order_relaxed);
    }
    mprof__stats_add_buffered(bytes);
    atomic_init(&b->next, NULL);
    atomic_init(&b->final_end, NULL);
    b->size = MPROF__BLOCK_BYTES;
    mprof__block *old = th->first;
    if (old) {
        atomic_store_explicit(&old->final_end, th->tb.cur, memory_order_release);
        atomic_store_explicit(&old->next, b, memory_order_release);
    } else {
        atomic_store_explicit(&th->head, b, memory_order_release);
    }
    th->first = b;
    th->tb.end = b->data + b->size;
    __atomic_store_n(&th->tb.cur, b->data, __ATOMIC_RELEASE);
    if (th->lost) {
        unsigned char *p = th->tb.cur;
        p[0] = MPROF_EV_LOST;
        p = mprof__w_ts(p + 1);
        p = mprof__w_u64(p, th->lost);
        th->lost = 0;
        __atomic_store_n(&th->tb.cur, p, __ATOMIC_RELEASE);
    }
    return 0;
}

unsigned char *mprof__buffer_grow(mprof__thread *th)
{
    if (refill(th) != 0) {
        th->lost++;
        atomic_fetch_add_explicit(&mprof__stats.events_lost, 1, memory_order_relaxed);
        return NULL;
    }
    return th->tb.cur;
}

/* At the thread's exit (its key's destructor): a THREAD_EXIT record when it still records, then
 * the thread is marked exited so that the drain frees it once its blocks are read. */
static void thread_exit(void *arg)
{
    mprof__thread *th = arg;
    if (mprof__tls == &th->tb && mprof__mode_now() == MPROF__MODE_RECORDING) {
        unsigned char *p = th->tb.cur && (size_t)(th->tb.end - th->tb.cur) >= 9
                               ? th->tb.cur
                               : mprof__buffer_grow(th);
        if (p) {
            p[0] = MPROF_EV_THREAD_EXIT;
            mprof__commit(mprof__w_ts(p + 1));
        }
    }
    mprof__tls = &mprof__dummy_tbuf;
    atomic_store_explicit(&th->exited, 1, memory_order_release);
}

static void make_key(void)
{
    pthread_key_create(&thread_key, thread_exit);
}

mprof__thread *mprof__thread_register(void)
{
    pthread_once(&key_once, make_key);
    /* Aligned so that the cursor's cache line holds nothing the collector writes. */
    mprof__thread *th = aligned_alloc(MPROF__CACHE_LINE, sizeof *th);
    if (!th)
        return NULL;
    memset(th, 0, sizeof *th);
    th->os_tid = mprof__os_tid();
    pthread_mutex_lock(&registry.lock);
    th->idx = ++registry.next_idx;
    th->next = registry.threads;
    registry.threads = th;
    pthread_mutex_unlock(&registry.lock);
    pthread_setspecific(thread_key, th);
    mprof__tls = &th->tb;
    atomic_fetch_add_explicit(&mprof__thread_generation, 1, memory_order_relaxed);
    if (refill(th) != 0) {
        /* Registered, but over the cap: events are counted as lost until a block is free. */
        th->tb.cur = th->tb.end = NULL;
    }
    return th;
}

/* ---- the drain ----------------------------------------------------------------------------- */

/* Returns a drained block to its thread for reuse; a thread keeps at most 8 spare blocks. */
static void give_back(mprof__thread *th, mprof__block *b)
{
    if (atomic_load_explicit(&th->n_returned, memory_order_relaxed) >= 8 ||
        atomic_load_explicit(&th->exited, memory_order_relaxed)) {
        block_recycle(b);
        return;
    }
    atomic_fetch_add_explicit(&th->n_returned, 1, memory_order_relaxed);
    b->free_next = atomic_load_explicit(&th->returned, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&th->returned, &b->free_next, b,
                                                  memory_order_release, memory_order_relaxed))
        ;
}

/* Hands what thread th has published to fn (NULL: skips it). Returns 1 when the thread has
 * exited and everything it wrote has been drained (it can be freed). */
static int drain(mprof__thread *th, mprof__drain_fn fn)
{
    for (;;) {
        mprof__block *b = atomic_load_explicit(&th->head, memory_order_acquire);
        if (!b)
            return atomic_load_explicit(&th->exited, memory_order_acquire);
        if (!th->col_pos)
            th->col_pos = b->data;
        int exited = atomic_load_explicit(&th->exited, memory_order_acquire);
        mprof__block *next = atomic_load_explicit(&b->next, memory_order_acquire);
        unsigned char *lim;
        if (next) {
            lim = atomic_load_explicit(&b->final_end, memory_order_acquire);
        } else {
            lim = __atomic_load_n(&th->tb.cur, __ATOMIC_ACQUIRE);
            if (lim < b->data || lim > b->data + b->size)
                continue; /* the owner moved to a new block just now: next is set, retry */
        }
        if (lim > th->col_pos && fn)
            fn(th, th->col_pos, lim);
        th->col_pos = lim;
        if (!next)
            return exited;
        atomic_store_explicit(&th->head, next, memory_order_release);
        th->col_pos = next->data;
        atomic_fetch_sub(&mprof__stats.buffered_bytes, sizeof(mprof__block) + MPROF__BLOCK_BYTES);
        give_back(th, b);
    }
}

static void free_thread(mprof__thread *th)
{
    for (mprof__block *f = atomic_load(&th->returned), *nx; f; f = nx) {
        nx = f->free_next;
        block_recycle(f);
    }
    for (mprof__block *f = th->spare, *nx; f; f = nx) {
        nx = f->free_next;
        block_recycle(f);
    }
    mprof__block *b = atomic_load(&th->head);
    while (b) {
        mprof__block *n = atomic_load(&b->next);
        block_recycle(b);
        atomic_fetch_sub(&mprof__stats.buffered_bytes, sizeof(mprof__block) + MPROF__BLOCK_BYTES);
        b = n;
    }
    free(th);
}

void mprof__buffers_drain(mprof__drain_fn fn)
{
    pthread_mutex_lock(&registry.lock);
    size_t n = 0;
    for (mprof__thread *t = registry.threads; t; t = t->next)
        n++;
    if (n > registry.snap_cap) {
        mprof__thread **s = realloc(registry.snap, n * 2 * sizeof *s);
        if (s) {
            registry.snap = s;
            registry.snap_cap = n * 2;
        }
    }
    n = 0;
    for (mprof__thread *t = registry.threads; t && n < registry.snap_cap; t = t->next)
        registry.snap[n++] = t;
    pthread_mutex_unlock(&registry.lock);

    int any_gone = 0;
    for (size_t i = 0; i < n; i++)
        if (drain(registry.snap[i], fn))
            any_gone = 1;
    if (!any_gone)
        return;
    pthread_mutex_lock(&registry.lock);
    for (mprof__thread **pp = &registry.threads; *pp;) {
        mprof__thread *t = *pp;
        int gone = atomic_load_explicit(&t->exited, memory_order_acquire);
        if (gone) {
            mprof__block *b = atomic_load(&t->head);
            gone = !b || (!atomic_load(&b->next) &&
                           t->col_pos == __atomic_load_n(&t->tb.cur, __ATOMIC_ACQUIRE));
        }
        if (gone) {
            *pp = t->next;
            free_thread(t);
        } else {
            pp = &t->next;
        }
    }
    pthread_mutex_unlock(&registry.lock);
}

void mprof__threads_each(void (*fn)(mprof__thread *th))
{
    pthread_mutex_lock(&registry.lock);
    for (mprof__thread *t = registry.threads; t; t = t->next)
        fn(t);
    pthread_mutex_unlock(&registry.lock);
}

uint32_t mprof__thread_count(void)
{
    uint32_t n = 0;
    pthread_mutex_lock(&registry.lock);
    for (mprof__thread *t = registry.threads; t; t = t->next)
        n++;
    pthread_mutex_unlock(&registry.lock);
    return n;
}

/* ---- the process's own records ------------------------------------------------------------- */

/* Raw process-context records waiting for the drain are capped; past it they are dropped and
 * counted as lost. */
#define PROC_RAW_LIMIT (16u << 20)

static struct {
    pthread_mutex_t lock;
    int open;
    mprof_buf raw;
} proc = {.lock = PTHREAD_MUTEX_INITIALIZER};

int mprof__process_records(const unsigned char *raw, size_t len, uint64_t n_records)
{
    int rc = -1;
    pthread_mutex_lock(&proc.lock);
    if (proc.open && mprof__mode_now() == MPROF__MODE_RECORDING) {
        if (proc.raw.len + len <= PROC_RAW_LIMIT && mprof_buf_reserve(&proc.raw, len) == 0) {
            memcpy(proc.raw.data + proc.raw.len, raw, len);
            proc.raw.len += len;
            rc = 0;
        } else {
            atomic_fetch_add_explicit(&mprof__stats.events_lost, n_records, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&proc.lock);
    return rc;
}

void mprof__process_queue_open(void)
{
    pthread_mutex_lock(&proc.lock);
    proc.raw.len = 0;
    proc.open = 1;
    pthread_mutex_unlock(&proc.lock);
}

void mprof__process_queue_close(void)
{
    pthread_mutex_lock(&proc.lock);
    proc.open = 0;
    pthread_mutex_unlock(&proc.lock);
}

void mprof__process_queue_take(mprof_buf *spare)
{
    pthread_mutex_lock(&proc.lock);
    mprof_buf t = *spare;
    *spare = proc.raw;
    proc.raw = t;
    proc.raw.len = 0;
    pthread_mutex_unlock(&proc.lock);
}
