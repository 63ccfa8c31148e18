/*
 * gpu.c - generic GPU contexts: query-id rings and the GPU_* records.
 *
 * The idea: a GPU zone has two clocks. The CPU side (when the work was recorded) is known at
 * once and written like any event. The GPU side is two timestamp queries that the program reads
 * back later, in any order, possibly frames later, and uploads with mprof_gpu_time. The capture
 * keeps both: GPU_ZONE_BEGIN/END carry the CPU time and the query ids, GPU_TIME carries a query's
 * GPU ticks, GPU_CALIBRATE pairs a GPU tick value with a CPU time. The analysis joins them.
 *
 * Query ids. Each context owns a ring of n_queries ids handed out in pairs (2p for the begin,
 * 2p + 1 for the end), so a Vulkan query pool or a GL query array can be indexed by id directly.
 * A pair is in flight from zone_begin until both of its timestamps have been uploaded; it is
 * never handed out again before that. The window of `span` pairs from `tail`, in ring order,
 * holds every pair in flight (and some already freed out of order); tail moves forward lazily
 * over freed pairs, and new pairs are taken at the window's end. When the window covers the
 * whole ring (an old query is late, or was never submitted), pairs freed inside it are found by
 * a cursor, so one stuck query costs one pair, not the ring. When every pair is in flight,
 * zone_begin drops the zone, counts it in mprof__stats.gpu_queries_lost and logs once.
 *
 * Contexts may be created before mprof_startup. Each context remembers the session it was last
 * announced in (GPU_CONTEXT and its latest GPU_CALIBRATE); any GPU call made in a newer session
 * announces it again, so every capture is self-contained.
 */
#include "buffers.h"
#include "lifecycle.h"
#include "platform/platform.h"
#include "stats.h"
#include "timer.h"

#include <math.h>
#include <sched.h>
#include <pthread.h>
#include <stdlib.h>

#define MAX_CONTEXTS 255u
#define DEFAULT_QUERIES 4096u
#define MAX_QUERIES (1u << 20)

enum { PAIR_FREE = 0, PAIR_INFLIGHT = 0x80, PAIR_GOT_BEGIN = 0x01, PAIR_GOT_END = 0x02 };

typedef struct gpu_context {
    atomic_flag lock; /* held for a few dozen instructions: a spinlock beats a mutex here */
    mprof_gpu_ctx id;
    const char *name;
    mprof_gpu_api api;
    double period_ns;
    uint32_t n_pairs;
    uint32_t tail;      /* oldest pair that may be in flight */
    uint32_t span;      /* pairs in the window starting at tail (n_pairs: the whole ring) */
    uint32_t inflight;  /* pairs in flight */
    uint32_t cursor;    /* where the search for a free pair resumes when the window is full */
    uint8_t *state;     /* per pair: PAIR_* flags */
    uint32_t announced; /* session in which GPU_CONTEXT was last written; 0 = never */
    int have_calibration;
    int64_t cal_gpu;
    uint64_t cal_ticks;
} gpu_context;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static gpu_context *_Atomic registry[MAX_CONTEXTS + 1];
static atomic_int lost_logged;

static void ctx_lock(gpu_context *c)
{
    unsigned spins = 0;
    while (atomic_flag_test_and_set_explicit(&c->lock, memory_order_acquire)) {
        if (++spins % 64 == 0)
            sched_yield(); /* the holder was preempted */
    }
}

static void ctx_unlock(gpu_context *c)
{
    atomic_flag_clear_explicit(&c->lock, memory_order_release);
}

static gpu_context *lookup(mprof_gpu_ctx id)
{
    if (id == 0 || id > MAX_CONTEXTS)
        return NULL;
    return atomic_load_explicit(&registry[id], memory_order_acquire);
}

/* CPU nanoseconds (the mprof_now_ns clock) to raw ticks: the inverse of mprof__ticks_to_ns. */
static uint64_t ns_to_ticks(uint64_t ns)
{
    double per = mprof__clock.ns_per_tick > 0.0 ? mprof__clock.ns_per_tick : 1.0;
    return mprof__clock.tick0 + (uint64_t)((double)ns / per + 0.5);
}

static void write_calibrate(gpu_context *c)
{
    unsigned char *p = mprof__reserve(21);
    if (!p)
        return;
    unsigned char *w = mprof__w_u8(p, MPROF_EV_GPU_CALIBRATE);
    w = mprof__w_u64(w, c->cal_ticks);
    w = mprof__w_u32(w, c->id);
    w = mprof__w_u64(w, (uint64_t)c->cal_gpu);
    mprof__commit(w);
}

/* Writes GPU_CONTEXT (and the latest calibration) when this session has not seen it. Called with
 * c->lock held. Returns 0 when not recording. */
static int announce(gpu_context *c)
{
    uint32_t session = atomic_load_explicit(&mprof__session, memory_order_relaxed);
    if (c->announced == session && session != 0)
        return 1;
    unsigned char *p = mprof__reserve(30);
    if (!p)
        return 0;
    unsigned char *w = mprof__w_u8(p, MPROF_EV_GPU_CONTEXT);
    w = mprof__w_ts(w);
    w = mprof__w_u32(w, c->id);
    w = mprof__w_ptr(w, c->name);
    w = mprof__w_u8(w, (uint8_t)c->api);
    w = mprof__w_f64(w, c->period_ns);
    mprof__commit(w);
    c->announced = session;
    if (c->have_calibration)
        write_calibrate(c);
    return 1;
}

mprof_gpu_ctx mprof_gpu_context_new(const char *name, mprof_gpu_api api, double period_ns,
                                    uint32_t n_queries)
{
    if (!(period_ns > 0.0) || !isfinite(period_ns))
        return 0;
    if (n_queries == 0)
        n_queries = DEFAULT_QUERIES;
    if (n_queries > MAX_QUERIES)
        n_queries = MAX_QUERIES;
    n_queries &= ~1u;
    if (n_queries < 2)
        n_queries = 2;
    gpu_context *c = calloc(1, sizeof *c);
    if (!c)
        return 0;
    c->state = calloc(n_queries / 2, 1);
    atomic_flag_clear(&c->lock);
    if (!c->state) {
        free(c);
        return 0;
    }
    c->name = name ? name : "GPU";
    c->api = api == MPROF_GPU_API_DEFAULT ? MPROF_GPU_API_OTHER : api;
    c->period_ns = period_ns;
    c->n_pairs = n_queries / 2;

    pthread_mutex_lock(&registry_lock);
    for (uint32_t i = 1; i <= MAX_CONTEXTS; i++) {
        if (!atomic_load_explicit(&registry[i], memory_order_relaxed)) {
            c->id = i;
            atomic_store_explicit(&registry[i], c, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    if (!c->id) {
        free(c->state);
        free(c);
        return 0;
    }
    ctx_lock(c);
    (void)announce(c);
    ctx_unlock(c);
    return c->id;
}

void mprof_gpu_context_destroy(mprof_gpu_ctx ctx)
{
    gpu_context *c = lookup(ctx);
    if (!c)
        return;
    pthread_mutex_lock(&registry_lock);
    atomic_store_explicit(&registry[ctx], NULL, memory_order_release);
    pthread_mutex_unlock(&registry_lock);
    free(c->state);
    free(c);
}

uint64_t mprof_gpu_monotonic_to_ns(uint64_t monotonic_ns)
{
    /* The offset between the two clocks, measured now, bracketed so its error is half the
     * bracket (tens of nanoseconds). Measuring each time follows any drift between them. */
    uint64_t m0 = mprof__mono_ns();
    uint64_t now = mprof_now_ns();
    uint64_t m1 = mprof__mono_ns();
    int64_t offset = (int64_t)now - (int64_t)(m0 + (m1 - m0) / 2);
    int64_t v = (int64_t)monotonic_ns + offset;
    return v > 0 ? (uint64_t)v : 0;
}

void mprof_gpu_calibrate(mprof_gpu_ctx ctx, int64_t gpu_ts, uint64_t cpu_ns)
{
    uint64_t ticks = cpu_ns ? ns_to_ticks(cpu_ns) : mprof__ticks();
    gpu_context *c = lookup(ctx);
    if (!c)
        return;
    ctx_lock(c);
    c->have_calibration = 1;
    c->cal_gpu = gpu_ts;
    c->cal_ticks = ticks;
    uint32_t session = atomic_load_explicit(&mprof__session, memory_order_relaxed);
    if (c->announced != session || session == 0)
        (void)announce(c); /* writes the calibration too */
    else
        write_calibrate(c);
    ctx_unlock(c);
}

/* Moves tail over pairs already freed. Called with c->lock held. */
static void advance_tail(gpu_context *c)
{
    while (c->span > 0 && c->state[c->tail] == PAIR_FREE) {
        c->tail = c->tail + 1 == c->n_pairs ? 0 : c->tail + 1;
        c->span--;
    }
}

static void count_lost(gpu_context *c)
{
    atomic_fetch_add_explicit(&mprof__stats.gpu_queries_lost, 1, memory_order_relaxed);
    if (atomic_exchange_explicit(&lost_logged, 1, memory_order_relaxed) == 0)
        mprof__log("GPU context '%s': all %u query ids are in flight; GPU zones are dropped and "
                   "counted (gpu_queries_lost). Collect more often or create it with more queries.",
                   c->name, c->n_pairs * 2);
}

uint32_t mprof_gpu_zone_begin(mprof_gpu_ctx ctx, const mprof_srcloc *loc)
{
    gpu_context *c = lookup(ctx);
    if (!c)
        return MPROF_GPU_NO_QUERY;
    uint32_t q = MPROF_GPU_NO_QUERY;
    ctx_lock(c);
    if (!announce(c))
        goto out; /* not recording */
    if (c->inflight == c->n_pairs) {
        count_lost(c);
        goto out;
    }
    unsigned char *p = mprof__reserve(25);
    if (!p)
        goto out; /* memory cap: counted as a lost event by reserve */
    advance_tail(c);
    uint32_t pair;
    if (c->span < c->n_pairs) {
        /* Everything outside the window is free: take the pair at its end. */
        pair = c->tail + c->span;
        if (pair >= c->n_pairs)
            pair -= c->n_pairs;
        c->span++;
    } else {
        /* The window is the whole ring: find a pair freed out of order (one exists). */
        pair = c->cursor;
        while (c->state[pair] != PAIR_FREE)
            pair = pair + 1 == c->n_pairs ? 0 : pair + 1;
        c->cursor = pair + 1 == c->n_pairs ? 0 : pair + 1;
    }
    c->state[pair] = PAIR_INFLIGHT;
    c->inflight++;
    q = pair * 2;
    unsigned char *w = mprof__w_u8(p, MPROF_EV_GPU_ZONE_BEGIN);
    w = mprof__w_ts(w);
    w = mprof__w_u32(w, c->id);
    w = mprof__w_u32(w, q);
    w = mprof__w_ptr(w, loc);
    mprof__commit(w);
out:
    ctx_unlock(c);
    return q;
}

uint32_t mprof_gpu_zone_end(mprof_gpu_ctx ctx, uint32_t begin_query)
{
    if (begin_query == MPROF_GPU_NO_QUERY)
        return MPROF_GPU_NO_QUERY;
    uint64_t ts = mprof__ticks();
    gpu_context *c = lookup(ctx);
    if (!c || (begin_query & 1u) || begin_query / 2 >= c->n_pairs)
        return MPROF_GPU_NO_QUERY;
    /* The end id is the begin's partner whether or not the record fits: the program writes the
     * timestamp either way, and the pair is freed only when both come back. */
    uint32_t q = begin_query + 1;
    unsigned char *p = mprof__reserve(17);
    if (p) {
        unsigned char *w = mprof__w_u8(p, MPROF_EV_GPU_ZONE_END);
        w = mprof__w_u64(w, ts);
        w = mprof__w_u32(w, c->id);
        w = mprof__w_u32(w, q);
        mprof__commit(w);
    }
    return q;
}

void mprof_gpu_time(mprof_gpu_ctx ctx, uint32_t query_id, int64_t gpu_ts)
{
    gpu_context *c = lookup(ctx);
    if (!c)
        return;
    ctx_lock(c);
    uint32_t pair = query_id / 2;
    uint8_t bit = (query_id & 1u) ? PAIR_GOT_END : PAIR_GOT_BEGIN;
    if (query_id == MPROF_GPU_NO_QUERY || pair >= c->n_pairs ||
        !(c->state[pair] & PAIR_INFLIGHT) || (c->state[pair] & bit))
        goto out; /* not in flight, or uploaded twice: ignored */
    c->state[pair] |= bit;
    if ((c->state[pair] & (PAIR_GOT_BEGIN | PAIR_GOT_END)) == (PAIR_GOT_BEGIN | PAIR_GOT_END)) {
        c->state[pair] = PAIR_FREE;
        c->inflight--;
    }
    if (announce(c)) {
        unsigned char *p = mprof__reserve(17);
        if (p) {
            unsigned char *w = mprof__w_u8(p, MPROF_EV_GPU_TIME);
            w = mprof__w_u32(w, c->id);
            w = mprof__w_u32(w, query_id);
            w = mprof__w_u64(w, (uint64_t)gpu_ts);
            mprof__commit(w);
        }
    }
out:
    ctx_unlock(c);
}

uint32_t mprof_gpu_pending(mprof_gpu_ctx ctx, uint32_t *out_first)
{
    gpu_context *c = lookup(ctx);
    if (out_first)
        *out_first = 0;
    if (!c)
        return 0;
    ctx_lock(c);
    advance_tail(c);
    if (out_first)
        *out_first = c->tail * 2;
    uint32_t n = c->span * 2;
    ctx_unlock(c);
    return n;
}
