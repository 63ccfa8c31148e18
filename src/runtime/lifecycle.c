/*
 * profiler.c - lifecycle, configuration and per-thread buffers.
 *
 * Each thread that records owns an mprof__thread with a chain of 64 KiB blocks. The hot path
 * (inline in mprof.h) appends raw records at tb.cur and publishes the new cursor with a release
 * store; when a block is full the owner links a fresh one (the only allocation a recording thread
 * makes) and the collector frees the old one once drained. Blocks are counted against the memory
 * cap; past it the thread records nothing, counts what it dropped, and writes one LOST record
 * when it gets a block again, so losses reach the capture and the report.
 *
 * Zero setup: the first event on any thread starts the profiler with the default config (plus
 * environment overrides) and registers an atexit handler that flushes and closes the capture.
 */
#include "core.h"
#include "env_number.h"
#include "system/system.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

mprof__globals mprof__g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .threads_lock = PTHREAD_MUTEX_INITIALIZER,
};
/* Read by every event: it starts a cache line, so the line is not one that shares its bytes with
 * counters the collector updates. */
_Alignas(MPROF__CACHE_LINE) int mprof__mode = MPROF__MODE_OFF;
mprof__tbuf mprof__dummy_tbuf; /* cur == end == NULL: every event takes the slow path */
__thread mprof__tbuf *mprof__tls = &mprof__dummy_tbuf;

static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int lazy_tried;

static const char *const result_names[] = {
#define NAME(n, m) "MPROF_" #n,
    MPROF_RESULT_MAP(NAME)
#undef NAME
};
static const char *const result_msgs[] = {
#define MSG(n, m) m,
    MPROF_RESULT_MAP(MSG)
#undef MSG
};

const char *mprof_result_name(mprof_result r)
{
    return (unsigned)r < MPROF_RESULT_COUNT ? result_names[r] : "MPROF_UNKNOWN";
}

const char *mprof_result_str(mprof_result r)
{
    return (unsigned)r < MPROF_RESULT_COUNT ? result_msgs[r] : "unknown result";
}

/* ---- configuration ------------------------------------------------------------------------- */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int env_flag(const char *name, int dflt)
{
    const char *v = env(name);
    if (!v)
        return dflt;
    return !(strcmp(v, "0") == 0 || strcmp(v, "false") == 0 || strcmp(v, "off") == 0 ||
             strcmp(v, "no") == 0);
}

/* The one parser of numeric environment variables: 1 with *out set when name holds a number
 * from lo to hi (an integer when integer is set); 0 when it is unset; -1, after one warning
 * naming the variable, the value and the range, when it holds anything else (the setting then
 * keeps its configured or default value). */
static int env_number(const char *name, double lo, double hi, int integer, double *out)
{
    const char *v = env(name);
    if (!v)
        return 0;
    if (mprof__parse_number(v, lo, hi, integer, out) != 0) {
        mprof__log("%s='%s' is not %s from %g to %g; ignored", name, v,
                   integer ? "a whole number" : "a number", lo, hi);
        return -1;
    }
    return 1;
}

static void apply_config(const mprof_config *in)
{
    mprof_config c = in ? *in : (mprof_config){0};
    const char *v;
    if ((v = env("MPROF_CAPTURE")))
        c.capture_path = v;
    double d;
    if (env_number("MPROF_MEMORY_MIB", 1, 1 << 20, 1, &d) > 0)
        c.memory_limit_bytes = (size_t)d << 20;
    if (env_number("MPROF_ZSTD_LEVEL", 1, 19, 1, &d) > 0)
        c.compression_level = (int)d;
    if ((v = env("MPROF_TIMER")) && strcmp(v, "clock") == 0)
        c.invariant_check = MPROF__FORCE_OS_CLOCK;
    if (env("MPROF_NO_INVARIANT_CHECK") && env_flag("MPROF_NO_INVARIANT_CHECK", 0))
        c.invariant_check = MPROF_TOGGLE_OFF;
    if ((v = env("MPROF_LISTEN")))
        c.listen = env_flag("MPROF_LISTEN", 1) ? MPROF_TOGGLE_ON : MPROF_TOGGLE_OFF;
    if ((v = env("MPROF_ADDRESS")))
        c.listen_address = v;
    if (env_number("MPROF_PORT", 1, 65535, 1, &d) > 0)
        c.listen_port = (uint16_t)d;
    if (env_number("MPROF_HISTORY_SECONDS", 0, 86400, 0, &d) > 0)
        c.history_seconds = d;
    if ((v = env("MPROF_VERBOSE")))
        c.verbose = env_flag("MPROF_VERBOSE", 0) ? MPROF_TOGGLE_ON : MPROF_TOGGLE_OFF;

    if (!c.memory_limit_bytes)
        c.memory_limit_bytes = (size_t)256 << 20;
    if (c.memory_limit_bytes < 2 * MPROF__BLOCK_BYTES)
        c.memory_limit_bytes = 2 * MPROF__BLOCK_BYTES;
    if (c.compression_level <= 0)
        c.compression_level = 1;
    if (c.compression_level > 19)
        c.compression_level = 19;
    if (!c.flush_interval_ms)
        c.flush_interval_ms = 2;
    if (!c.chunk_bytes)
        c.chunk_bytes = 1u << 20;
    if (c.chunk_bytes < 4096)
        c.chunk_bytes = 4096;
    if (c.chunk_bytes > MPROF_FMT_MAX_CHUNK_BYTES / 2)
        c.chunk_bytes = MPROF_FMT_MAX_CHUNK_BYTES / 2;
    if (!c.app_name)
        c.app_name = mprof__program_name();
    if (!c.listen_address)
        c.listen_address = "127.0.0.1";
    if (!c.listen_port)
        c.listen_port = 8086;
    if (c.history_seconds == 0)
        c.history_seconds = 5;
    mprof__g.cfg = c;
}

/* ---- thread registry ----------------------------------------------------------------------- */

static void thread_exit(void *arg)
{
    mprof__thread *th = arg;
    if (mprof__tls == &th->tb) {
        unsigned char *p = mprof__reserve(9);
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

static void note_buffered(uint64_t add)
{
    uint64_t now = atomic_fetch_add(&mprof__g.buffered_bytes, add) + add;
    uint64_t peak = atomic_load(&mprof__g.peak_buffered_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&mprof__g.peak_buffered_bytes, &peak, now))
        ;
}

/* ---- recycled blocks ----------------------------------------------------------------------- */

/* Drained blocks that their own thread does not keep (it holds 8 spare already, or it has
 * exited) wait here for any thread's next block, so that a block's pages are faulted in once per
 * process and not once per use. A page fault costs ~0.1-0.3 us on hardware and ~11 us on this
 * project's VM (docs/OVERHEAD.md: it was most of the two-thread zone cost, ~7 ns a zone). Freed
 * blocks went back to malloc, which trims and re-faults them, and a new thread had no spares.
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

void mprof__block_recycle(mprof__block *b)
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

/* After a session: the pooled blocks go back to malloc, so a stopped profiler holds no more
 * than its threads' own blocks. */
static void pool_free_all(void)
{
    for (mprof__block *b; (b = pool_take());)
        free(b);
}

/* Links a fresh block as the thread's current one. 0 on success, -1 when the cap is reached. */
static int refill(mprof__thread *th)
{
    size_t bytes = sizeof(mprof__block) + MPROF__BLOCK_BYTES;
    if (atomic_load_explicit(&mprof__g.buffered_bytes, memory_order_relaxed) + bytes >
        mprof__g.cfg.memory_limit_bytes)
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
        atomic_fetch_add_explicit(&mprof__g.blocks_allocated, 1, memory_order_relaxed);
    }
    note_buffered(bytes);
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

static mprof__thread *register_thread(void)
{
    pthread_once(&key_once, make_key);
    /* Aligned so that the cursor's cache line holds nothing the collector writes. */
    mprof__thread *th = aligned_alloc(MPROF__CACHE_LINE, sizeof *th);
    if (!th)
        return NULL;
    memset(th, 0, sizeof *th);
    th->os_tid = mprof__os_tid();
    pthread_mutex_lock(&mprof__g.threads_lock);
    th->idx = ++mprof__g.next_thread_idx;
    th->next = mprof__g.threads;
    mprof__g.threads = th;
    pthread_mutex_unlock(&mprof__g.threads_lock);
    pthread_setspecific(thread_key, th);
    mprof__tls = &th->tb;
    mprof__system_thread_started();
    if (refill(th) != 0) {
        /* Registered, but over the cap: events are counted as lost until a block is free. */
        th->tb.cur = th->tb.end = NULL;
    }
    return th;
}

static void lazy_start_once(void)
{
    if (!__atomic_load_n(&lazy_tried, __ATOMIC_ACQUIRE))
        mprof_startup(NULL);
}

/* Threads that race to the first event all wait here until the profiler has started, so no
 * event is lost to start-up. After an explicit startup or a shutdown it does nothing. */
static void lazy_start(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, lazy_start_once);
}

mprof__thread *mprof__thread_get(void)
{
    int mode = __atomic_load_n(&mprof__mode, __ATOMIC_ACQUIRE);
    if (mode != MPROF__MODE_RECORDING) {
        if (mode == MPROF__MODE_OFF)
            lazy_start();
        if (__atomic_load_n(&mprof__mode, __ATOMIC_ACQUIRE) != MPROF__MODE_RECORDING)
            return NULL;
    }
    if (mprof__tls == &mprof__dummy_tbuf)
        return register_thread();
    return (mprof__thread *)mprof__tls;
}

unsigned char *mprof__reserve(size_t n)
{
    mprof__thread *th = mprof__thread_get();
    if (!th)
        return NULL;
    if (th->tb.cur && (size_t)(th->tb.end - th->tb.cur) >= n)
        return th->tb.cur;
    if (refill(th) != 0) {
        th->lost++;
        atomic_fetch_add_explicit(&mprof__g.events_lost, 1, memory_order_relaxed);
        return NULL;
    }
    return th->tb.cur;
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

static void at_exit(void)
{
    mprof_shutdown();
}

mprof_result mprof_startup(const mprof_config *cfg)
{
    pthread_mutex_lock(&mprof__g.lock);
    if (__atomic_load_n(&mprof__mode, __ATOMIC_ACQUIRE) != MPROF__MODE_OFF) {
        pthread_mutex_unlock(&mprof__g.lock);
        return MPROF_ERR_STATE;
    }
    __atomic_store_n(&lazy_tried, 1, __ATOMIC_RELEASE);
    apply_config(cfg);
    mprof__timer_init(mprof__g.cfg.invariant_check, mprof__g.cfg.verbose == MPROF_TOGGLE_ON);
    atomic_fetch_add(&mprof__g.session, 1);
    mprof__system_probe(); /* before INFO is written: it says what system tracing does */
    int r = mprof__collector_start();
    if (r != 0) {
        pthread_mutex_unlock(&mprof__g.lock);
        return (mprof_result)r;
    }
    mprof__system_start();
    if (!mprof__g.atexit_registered) {
        atexit(at_exit);
        mprof__g.atexit_registered = 1;
    }
    pthread_mutex_unlock(&mprof__g.lock);
    return MPROF_OK;
}

void mprof_shutdown(void)
{
    pthread_mutex_lock(&mprof__g.lock);
    int mode = __atomic_load_n(&mprof__mode, __ATOMIC_ACQUIRE);
    if (mode == MPROF__MODE_OFF) {
        pthread_mutex_unlock(&mprof__g.lock);
        return;
    }
    mprof__system_stop(); /* while still recording, so its last records reach the capture */
    __atomic_store_n(&mprof__mode, MPROF__MODE_OFF, __ATOMIC_RELEASE);
    mprof__collector_stop();
    pool_free_all();
    pthread_mutex_unlock(&mprof__g.lock);
}

int mprof_is_recording(void)
{
    return __atomic_load_n(&mprof__mode, __ATOMIC_ACQUIRE) == MPROF__MODE_RECORDING;
}

void mprof_get_stats(mprof_stats *out)
{
    memset(out, 0, sizeof *out);
    out->events_recorded = atomic_load(&mprof__g.events_recorded);
    out->events_lost = atomic_load(&mprof__g.events_lost);
    out->bytes_raw = atomic_load(&mprof__g.bytes_raw);
    out->bytes_written = atomic_load(&mprof__g.bytes_written);
    out->chunks_written = atomic_load(&mprof__g.chunks_written);
    out->buffered_bytes = atomic_load(&mprof__g.buffered_bytes);
    out->peak_buffered_bytes = atomic_load(&mprof__g.peak_buffered_bytes);
    out->sessions_dropped = atomic_load(&mprof__g.sessions_dropped);
    out->gpu_queries_lost = atomic_load(&mprof__g.gpu_queries_lost);
    pthread_mutex_lock(&mprof__g.threads_lock);
    for (mprof__thread *t = mprof__g.threads; t; t = t->next)
        out->threads++;
    pthread_mutex_unlock(&mprof__g.threads_lock);
}

void mprof_flush(void)
{
    if (__atomic_load_n(&mprof__mode, __ATOMIC_ACQUIRE) == MPROF__MODE_OFF)
        return;
    mprof__collector_flush();
}

/* ---- zone slow paths ----------------------------------------------------------------------- */

int mprof__zone_begin_slow(const mprof_srcloc *loc)
{
    unsigned char *p = mprof__reserve(MPROF__ZONE_BEGIN_BYTES);
    if (!p)
        return __atomic_load_n(&mprof__mode, __ATOMIC_RELAXED) == MPROF__MODE_RECORDING ? 2 : 0;
    p[0] = MPROF__EV_ZONE_BEGIN;
    p = mprof__w_ts(p + 1);
    p = mprof__w_ptr(p, loc);
    mprof__commit(p);
    return 1;
}

void mprof__zone_end_lost(void)
{
    mprof__tbuf *t = mprof__tls;
    if (t == &mprof__dummy_tbuf)
        return;
    ((mprof__thread *)t)->lost++;
    atomic_fetch_add_explicit(&mprof__g.events_lost, 1, memory_order_relaxed);
}

void mprof__zone_end_slow(void)
{
    uint64_t ts = mprof__ticks();
    unsigned char *p = mprof__reserve(MPROF__ZONE_END_BYTES);
    if (!p)
        return;
    p[0] = MPROF__EV_ZONE_END;
    p = mprof__w_u64(p + 1, ts);
    mprof__commit(p);
}
