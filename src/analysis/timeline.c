/*
 * timeline.c - the walker: rebuilds zones, frames, GPU zones, lock spans and memory use from a
 * capture's event stream, one event at a time (see timeline.h).
 *
 * State is what is open, not what happened: a zone stack per track, the queries of GPU zones
 * whose timestamps have not arrived yet, per-thread lock state, and the live allocations (so a
 * free knows its size). Completed things go to the hooks and are forgotten, except frames, which
 * the walker keeps when asked (the view and diff need every frame's duration).
 *
 * Contents: helpers - tracks - GPU - locks - memory - frames - the event switch - file walking.
 * The view document writer is in timeline_view.c.
 */
#include "analysis/timeline.h"
#include "util/grow.h"
#include "util/tool.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
/* A wait shorter than this is not counted as contention (cross-thread order in a capture is not
 * time order, so "was the lock held?" cannot be answered exactly; a measurable wait can). */
#define LOCK_CONTENDED_NS 1000

/* ---- helpers -------------------------------------------------------------------------------- */

/* Grows *arr (element size sz) to hold at least need elements, the new ones zeroed. Returns 0
 * or -1. */
static int grow(void **arr, uint32_t *cap, uint32_t need, size_t sz)
{
    uint32_t old = *cap;
    if (need <= old)
        return 0;
    if (mprof__grow32(arr, cap, need, sz, 8) != 0)
        return -1;
    memset((char *)*arr + (size_t)old * sz, 0, (size_t)(*cap - old) * sz);
    return 0;
}
#define GROW(arr, cap, need) grow((void **)&(arr), &(cap), (need), sizeof *(arr))

/* ---- tracks ---------------------------------------------------------------------------------- */

typedef struct open_zone {
    uint32_t loc;
    int64_t start, child;
    char *text, *name;
    uint32_t text_len, name_len;
    uint64_t value;
    int has_value;
} open_zone;

typedef struct track_st {
    mprof_tl_track pub;
    open_zone *stack;
    uint32_t depth, cap;
} track_st;

typedef struct thread_st {
    uint32_t track;       /* the thread's own track, NONE until used */
    uint32_t fiber_track; /* the fiber it is in, NONE when none */
} thread_st;

/* ---- GPU ---------------------------------------------------------------------------------- */

typedef struct gpu_pending {
    uint32_t loc, depth, thread;
    int64_t cpu_begin;
    int64_t gpu_begin, gpu_end;
    int have_begin, have_end, closed, used;
} gpu_pending;

typedef struct gpu_st {
    uint32_t id, name, track;
    double period_ns;
    int have_cal;
    int64_t cal_gpu, cal_cpu;
    uint32_t *stack; /* pending indices of zones begun and not ended (CPU order) */
    uint32_t depth, stack_cap;
    uint32_t *qmap; /* query id -> pending index * 2 + (0 begin, 1 end); NONE when free */
    uint32_t qcap;
    gpu_pending *pend;
    uint32_t n_pend, pend_cap;
    uint32_t *free_list;
    uint32_t n_free, free_cap;
} gpu_st;

/* ---- locks ----------------------------------------------------------------------------------- */

typedef struct lock_row {
    uint32_t thread;
    int64_t wait_start, hold_start;
    int hold_shared;
} lock_row;

typedef struct lock_st {
    mprof_tl_lock pub;
    lock_row *rows;
    uint32_t rows_cap;
} lock_st;

/* ---- memory ---------------------------------------------------------------------------------- */

typedef struct live_alloc {
    uint64_t ptr;
    uint64_t size;
    uint32_t pool; /* walker pool index + 1; 0 = empty slot */
} live_alloc;

struct mprof_walker {
    const mprof_reader *r;
    mprof_tl_hooks hooks;
    int keep_frames;
    track_st *tracks;
    uint32_t n_tracks, tracks_cap;
    thread_st *threads;
    uint32_t threads_cap;
    gpu_st *gpus;
    uint32_t n_gpus, gpus_cap;
    lock_st *locks;
    uint32_t n_locks, locks_cap;
    uint32_t *lock_by_id; /* lock id -> index + 1 */
    uint32_t lock_by_id_cap;
    mprof_tl_pool *pools;
    uint32_t n_pools, pools_cap;
    live_alloc *live; /* open addressing, linear probing */
    uint64_t live_cap, live_n;
    struct frameset_st {
        mprof_tl_frameset pub;
        int64_t last_mark, open_begin;
        uint64_t cap;
        uint32_t thread; /* thread of the last mark or begin */
        int tainted;     /* that thread lost events inside the open frame */
    } * sets;
    uint32_t n_sets, sets_cap;
    int64_t first_ns, last_ns;
    int have_ts;
    uint64_t zones, lost, unmatched_ends;
    mprof_async *async; /* with an async_span hook */
    uint32_t ev_process; /* the process of the event being applied: a fiber, GPU context or
                            lock track belongs to the process whose event made it */
    int oom;
};

/* The process of thread (0 without a reader or in a one-process capture). */
static uint32_t process_of(const mprof_walker *w, uint32_t thread)
{
    const mprof_thread_def *d = w->r ? mprof_reader_thread(w->r, thread) : NULL;
    return d ? d->process : 0;
}

/* A new track of process (its thread's, or that of the event that made it). */
static uint32_t new_track(mprof_walker *w, int kind, uint32_t ref, uint32_t process)
{
    if (GROW(w->tracks, w->tracks_cap, w->n_tracks + 1) != 0)
        return NONE;
    track_st *t = &w->tracks[w->n_tracks];
    memset(t, 0, sizeof *t);
    t->pub.kind = kind;
    t->pub.ref = ref;
    t->pub.process = process;
    return w->n_tracks++;
}

static thread_st *thread_of(mprof_walker *w, uint32_t idx)
{
    uint32_t old = w->threads_cap;
    if (GROW(w->threads, w->threads_cap, idx + 1) != 0)
        return NULL;
    for (uint32_t i = old; i < w->threads_cap; i++)
        w->threads[i].track = w->threads[i].fiber_track = NONE;
    thread_st *t = &w->threads[idx];
    if (t->track == NONE) {
        t->track = new_track(w, MPROF_TRACK_THREAD, idx, process_of(w, idx));
        if (t->track == NONE)
            return NULL;
        const mprof_thread_def *d = w->r ? mprof_reader_thread(w->r, idx) : NULL;
        if (d)
            w->tracks[t->track].pub.os_tid = d->os_tid;
    }
    return t;
}

/* The track a thread's zones go to now: its fiber's, or its own. */
static track_st *zone_track(mprof_walker *w, uint32_t thread)
{
    thread_st *t = thread_of(w, thread);
    if (!t)
        return NULL;
    return &w->tracks[t->fiber_track != NONE ? t->fiber_track : t->track];
}

static uint32_t fiber_track(mprof_walker *w, uint32_t name)
{
    for (uint32_t i = 0; i < w->n_tracks; i++)
        if (w->tracks[i].pub.kind == MPROF_TRACK_FIBER && w->tracks[i].pub.ref == name)
            return i;
    return new_track(w, MPROF_TRACK_FIBER, name, w->ev_process);
}

static void free_open(open_zone *z)
{
    free(z->text);
    free(z->name);
    z->text = z->name = NULL;
}

static void zone_begin(mprof_walker *w, track_st *t, uint32_t loc, int64_t ts)
{
    if (GROW(t->stack, t->cap, t->depth + 1) != 0) {
        w->oom = 1;
        return;
    }
    open_zone *z = &t->stack[t->depth++];
    memset(z, 0, sizeof *z);
    z->loc = loc;
    z->start = ts;
}

static void zone_end(mprof_walker *w, track_st *t, int64_t ts, int unfinished)
{
    if (!t->depth) {
        w->unmatched_ends++;
        return;
    }
    open_zone *z = &t->stack[--t->depth];
    int64_t dur = ts - z->start;
    if (dur < 0)
        dur = 0;
    if (t->depth)
        t->stack[t->depth - 1].child += dur;
    t->pub.zones++;
    if (t->depth > t->pub.max_depth)
        t->pub.max_depth = t->depth;
    w->zones++;
    if (w->hooks.zone) {
        int nested = 0;
        uint32_t nest_depth = 0;
        for (uint32_t k = t->depth; k-- > 0 && !nested;)
            if (t->stack[k].loc == z->loc) {
                nested = 1;
                nest_depth = k;
            }
        mprof_tl_zone out = {
            .track = (uint32_t)(t - w->tracks), .loc = z->loc, .depth = t->depth, .nested = nested,
            .nest_depth = nest_depth,
            .start_ns = z->start, .end_ns = z->start + dur, .child_ns = z->child,
            .text = z->text, .text_len = z->text_len, .name = z->name, .name_len = z->name_len,
            .value = z->value, .has_value = z->has_value, .unfinished = unfinished};
        w->hooks.zone(w->hooks.user, &out);
    }
    free_open(z);
}

static open_zone *top_zone(mprof_walker *w, uint32_t thread)
{
    track_st *t = zone_track(w, thread);
    return t && t->depth ? &t->stack[t->depth - 1] : NULL;
}

/* ---- GPU ---------------------------------------------------------------------------------- */

static gpu_st *gpu_of(mprof_walker *w, uint32_t id)
{
    for (uint32_t i = 0; i < w->n_gpus; i++)
        if (w->gpus[i].id == id)
            return &w->gpus[i];
    if (GROW(w->gpus, w->gpus_cap, w->n_gpus + 1) != 0)
        return NULL;
    uint32_t tr = new_track(w, MPROF_TRACK_GPU, id, w->ev_process);
    if (tr == NONE)
        return NULL;
    gpu_st *g = &w->gpus[w->n_gpus++];
    memset(g, 0, sizeof *g);
    g->id = id;
    g->track = tr;
    g->period_ns = 1.0;
    return g;
}

static int64_t gpu_to_cpu(gpu_st *g, int64_t gpu_ts)
{
    return g->cal_cpu + (int64_t)((double)(gpu_ts - g->cal_gpu) * g->period_ns);
}

static void gpu_try_emit(mprof_walker *w, gpu_st *g, uint32_t p)
{
    gpu_pending *z = &g->pend[p];
    if (!z->closed || !z->have_begin || !z->have_end)
        return;
    if (!g->have_cal) {
        /* No calibration: align the first zone's GPU start with its CPU submission. */
        g->have_cal = 1;
        g->cal_gpu = z->gpu_begin;
        g->cal_cpu = z->cpu_begin;
    }
    int64_t s = gpu_to_cpu(g, z->gpu_begin), e = gpu_to_cpu(g, z->gpu_end);
    if (e < s)
        e = s;
    track_st *t = &w->tracks[g->track];
    t->pub.zones++;
    if (z->depth > t->pub.max_depth)
        t->pub.max_depth = z->depth;
    w->zones++;
    if (w->hooks.zone) {
        mprof_tl_zone out = {.track = g->track, .loc = z->loc, .depth = z->depth,
                             .start_ns = s, .end_ns = e, .submit_ns = z->cpu_begin,
                             .submit_thread = z->thread};
        w->hooks.zone(w->hooks.user, &out);
    }
    z->used = 0;
    if (GROW(g->free_list, g->free_cap, g->n_free + 1) == 0)
        g->free_list[g->n_free++] = p;
}

static void gpu_map_query(mprof_walker *w, gpu_st *g, uint32_t query, uint32_t v)
{
    if (query >= (1u << 24))
        return; /* query ids come from a ring of at most a few thousand */
    uint32_t old = g->qcap;
    if (GROW(g->qmap, g->qcap, query + 1) != 0) {
        w->oom = 1;
        return;
    }
    for (uint32_t i = old; i < g->qcap; i++)
        g->qmap[i] = NONE;
    g->qmap[query] = v;
}

static void gpu_zone_begin(mprof_walker *w, gpu_st *g, uint32_t query, uint32_t loc, int64_t ts,
                           uint32_t thread)
{
    uint32_t p;
    if (g->n_free)
        p = g->free_list[--g->n_free];
    else {
        if (GROW(g->pend, g->pend_cap, g->n_pend + 1) != 0) {
            w->oom = 1;
            return;
        }
        p = g->n_pend++;
    }
    if (GROW(g->stack, g->stack_cap, g->depth + 1) != 0) {
        w->oom = 1;
        return;
    }
    gpu_pending *z = &g->pend[p];
    memset(z, 0, sizeof *z);
    z->used = 1;
    z->loc = loc;
    z->depth = g->depth;
    z->cpu_begin = ts;
    z->thread = thread;
    g->stack[g->depth++] = p;
    gpu_map_query(w, g, query, p * 2);
}

/* The zone an end closes: the one whose begin query is query - 1 (the GPU module hands out ids
 * in pairs, so ends can come in any order, from any thread), else the innermost open zone. */
static void gpu_zone_end(mprof_walker *w, gpu_st *g, uint32_t query)
{
    if (!g->depth) {
        w->unmatched_ends++;
        return;
    }
    uint32_t at = g->depth - 1;
    if (query > 0 && query - 1 < g->qcap && g->qmap[query - 1] != NONE && !(g->qmap[query - 1] & 1)) {
        uint32_t p = g->qmap[query - 1] / 2;
        for (uint32_t k = 0; k < g->depth; k++)
            if (g->stack[k] == p)
                at = k;
    }
    uint32_t p = g->stack[at];
    memmove(&g->stack[at], &g->stack[at + 1], (size_t)(g->depth - at - 1) * sizeof *g->stack);
    g->depth--;
    g->pend[p].closed = 1;
    gpu_map_query(w, g, query, p * 2 + 1);
    gpu_try_emit(w, g, p);
}

static void gpu_time(mprof_walker *w, gpu_st *g, uint32_t query, int64_t gpu_ts)
{
    if (query >= g->qcap || g->qmap[query] == NONE)
        return;
    uint32_t v = g->qmap[query];
    g->qmap[query] = NONE;
    uint32_t p = v / 2;
    if (p >= g->n_pend || !g->pend[p].used)
        return;
    if (v & 1) {
        g->pend[p].gpu_end = gpu_ts;
        g->pend[p].have_end = 1;
    } else {
        g->pend[p].gpu_begin = gpu_ts;
        g->pend[p].have_begin = 1;
    }
    gpu_try_emit(w, g, p);
}

/* ---- locks ----------------------------------------------------------------------------------- */

static lock_st *lock_of(mprof_walker *w, uint32_t id)
{
    if (id >= (1u << 24))
        return NULL;
    if (id < w->lock_by_id_cap && w->lock_by_id[id])
        return &w->locks[w->lock_by_id[id] - 1];
    if (GROW(w->lock_by_id, w->lock_by_id_cap, id + 1) != 0 ||
        GROW(w->locks, w->locks_cap, w->n_locks + 1) != 0)
        return NULL;
    uint32_t tr = new_track(w, MPROF_TRACK_LOCK, id, w->ev_process);
    if (tr == NONE)
        return NULL;
    lock_st *l = &w->locks[w->n_locks];
    memset(l, 0, sizeof *l);
    l->pub.id = id;
    l->pub.track = tr;
    w->lock_by_id[id] = ++w->n_locks;
    return l;
}

static lock_row *lock_row_of(lock_st *l, uint32_t thread)
{
    for (uint32_t i = 0; i < l->pub.n_rows; i++)
        if (l->rows[i].thread == thread)
            return &l->rows[i];
    if (GROW(l->rows, l->rows_cap, l->pub.n_rows + 1) != 0)
        return NULL;
    lock_row *row = &l->rows[l->pub.n_rows++];
    row->thread = thread;
    row->wait_start = row->hold_start = -1;
    return row;
}

static void lock_span(mprof_walker *w, lock_st *l, lock_row *row, int waiting, int64_t s, int64_t e)
{
    track_st *t = &w->tracks[l->pub.track];
    t->pub.zones++;
    if (l->pub.n_rows - 1 > t->pub.max_depth)
        t->pub.max_depth = l->pub.n_rows - 1;
    if (w->hooks.lock_span) {
        mprof_tl_lockspan sp = {.lock = (uint32_t)(l - w->locks), .row = (uint32_t)(row - l->rows),
                                .thread = row->thread, .waiting = waiting,
                                .shared = row->hold_shared, .start_ns = s, .end_ns = e};
        w->hooks.lock_span(w->hooks.user, &sp);
    }
}

static void lock_event(mprof_walker *w, const mprof_event *ev)
{
    lock_st *l = lock_of(w, (uint32_t)ev->u[0]);
    if (!l) {
        w->oom = 1;
        return;
    }
    if (ev->type == MPROF_EV_LOCK_ANNOUNCE) {
        l->pub.name = (uint32_t)ev->u[1];
        l->pub.kind = (uint32_t)ev->u[2];
        return;
    }
    lock_row *row = lock_row_of(l, ev->thread);
    if (!row) {
        w->oom = 1;
        return;
    }
    int64_t ts = ev->ts_ns;
    switch (ev->type) {
    case MPROF_EV_LOCK_WAIT:
        row->wait_start = ts;
        break;
    case MPROF_EV_LOCK_OBTAINED:
        l->pub.acquisitions++;
        if (row->wait_start >= 0) {
            int64_t wait = ts - row->wait_start;
            if (wait >= LOCK_CONTENDED_NS) {
                l->pub.contended++;
                l->pub.wait_ns += wait;
                if (wait > l->pub.max_wait_ns)
                    l->pub.max_wait_ns = wait;
                row->hold_shared = (int)ev->u[1];
                lock_span(w, l, row, 1, row->wait_start, ts);
            }
            row->wait_start = -1;
        }
        row->hold_start = ts;
        row->hold_shared = (int)ev->u[1];
        break;
    case MPROF_EV_LOCK_RELEASED:
        if (row->hold_start >= 0) {
            int64_t hold = ts - row->hold_start;
            if (hold < 0)
                hold = 0;
            l->pub.hold_ns += hold;
            if (hold > l->pub.max_hold_ns)
                l->pub.max_hold_ns = hold;
            lock_span(w, l, row, 0, row->hold_start, row->hold_start + hold);
            row->hold_start = -1;
        }
        break;
    case MPROF_EV_LOCK_TRY_FAILED:
        l->pub.try_failed++;
        row->wait_start = -1;
        break;
    default:
        break;
    }
}

/* ---- memory ---------------------------------------------------------------------------------- */

/* The pool (process of thread, name). */
static uint32_t pool_of(mprof_walker *w, uint32_t name, uint32_t thread)
{
    uint32_t process = process_of(w, thread);
    for (uint32_t i = 0; i < w->n_pools; i++)
        if (w->pools[i].name == name && w->pools[i].process == process)
            return i;
    if (GROW(w->pools, w->pools_cap, w->n_pools + 1) != 0)
        return NONE;
    memset(&w->pools[w->n_pools], 0, sizeof w->pools[0]);
    w->pools[w->n_pools].name = name;
    w->pools[w->n_pools].process = process;
    return w->n_pools++;
}

static uint64_t live_hash(uint64_t ptr, uint32_t pool)
{
    uint64_t h = ptr ^ ((uint64_t)pool * 0x9e3779b97f4a7c15ull);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static int live_rehash(mprof_walker *w)
{
    uint64_t nc = w->live_cap ? w->live_cap * 2 : 1024;
    live_alloc *n = calloc(nc, sizeof *n);
    if (!n)
        return -1;
    for (uint64_t i = 0; i < w->live_cap; i++) {
        live_alloc *a = &w->live[i];
        if (!a->pool)
            continue;
        uint64_t j = live_hash(a->ptr, a->pool) & (nc - 1);
        while (n[j].pool)
            j = (j + 1) & (nc - 1);
        n[j] = *a;
    }
    free(w->live);
    w->live = n;
    w->live_cap = nc;
    return 0;
}

/* Slot of (ptr, pool) or of the empty slot where it would go. */
static uint64_t live_find(const mprof_walker *w, uint64_t ptr, uint32_t pool)
{
    uint64_t j = live_hash(ptr, pool) & (w->live_cap - 1);
    while (w->live[j].pool && !(w->live[j].ptr == ptr && w->live[j].pool == pool))
        j = (j + 1) & (w->live_cap - 1);
    return j;
}

/* Removes slot j, shifting back the entries of its probe run (no tombstones). */
static void live_remove(mprof_walker *w, uint64_t j)
{
    uint64_t mask = w->live_cap - 1;
    w->live[j].pool = 0;
    w->live_n--;
    for (uint64_t k = (j + 1) & mask; w->live[k].pool; k = (k + 1) & mask) {
        uint64_t home = live_hash(w->live[k].ptr, w->live[k].pool) & mask;
        /* Move k into the hole when its home is not in (j, k]. */
        bool between = j <= k ? (home > j && home <= k) : (home > j || home <= k);
        if (!between) {
            w->live[j] = w->live[k];
            w->live[k].pool = 0;
            j = k;
        }
    }
}

static void mem_changed(mprof_walker *w, uint32_t p, int64_t ts)
{
    mprof_tl_pool *pool = &w->pools[p];
    if (pool->in_use > pool->peak)
        pool->peak = pool->in_use;
    if (w->hooks.memory)
        w->hooks.memory(w->hooks.user, p, ts, pool->in_use);
}

static void mem_alloc(mprof_walker *w, uint64_t ptr, uint64_t size, uint32_t name,
                      uint32_t thread, int64_t ts)
{
    uint32_t p = pool_of(w, name, thread);
    if (p == NONE || ((w->live_n + 1) * 4 > w->live_cap * 3 && live_rehash(w) != 0)) {
        w->oom = 1;
        return;
    }
    mprof_tl_pool *pool = &w->pools[p];
    pool->allocs++;
    pool->alloc_bytes += size;
    uint64_t j = live_find(w, ptr, p + 1);
    if (w->live[j].pool) {
        /* Allocated twice without a free between: the first one was lost. */
        pool->in_use -= (int64_t)w->live[j].size;
        pool->live--;
    } else
        w->live_n++;
    w->live[j] = (live_alloc){ptr, size, p + 1};
    pool->in_use += (int64_t)size;
    pool->live++;
    mem_changed(w, p, ts);
}

static void mem_free(mprof_walker *w, uint64_t ptr, uint32_t name, uint32_t thread, int64_t ts)
{
    if (!ptr)
        return;
    uint32_t p = pool_of(w, name, thread);
    if (p == NONE) {
        w->oom = 1;
        return;
    }
    mprof_tl_pool *pool = &w->pools[p];
    pool->frees++;
    if (!w->live_cap) {
        pool->bad_frees++;
        return;
    }
    uint64_t j = live_find(w, ptr, p + 1);
    if (!w->live[j].pool) {
        pool->bad_frees++;
        return;
    }
    pool->in_use -= (int64_t)w->live[j].size;
    pool->live--;
    live_remove(w, j);
    mem_changed(w, p, ts);
}

static void mem_discard(mprof_walker *w, uint32_t name, uint32_t thread, int64_t ts)
{
    uint32_t p = pool_of(w, name, thread);
    if (p == NONE || !w->live_cap)
        return;
    for (uint64_t j = 0; j < w->live_cap;) {
        if (w->live[j].pool == p + 1) {
            live_remove(w, j); /* an entry may have shifted into j: look at it again */
            continue;
        }
        j++;
    }
    w->pools[p].in_use = 0;
    w->pools[p].live = 0;
    mem_changed(w, p, ts);
}

/* ---- frames ---------------------------------------------------------------------------------- */

/* The frame set (process of thread, name): the marks of two processes of a merged capture
 * never mix, even where both use the main frame set. */
static struct frameset_st *set_of(mprof_walker *w, uint32_t name, uint32_t thread)
{
    uint32_t process = process_of(w, thread);
    for (uint32_t i = 0; i < w->n_sets; i++)
        if (w->sets[i].pub.name == name && w->sets[i].pub.process == process)
            return &w->sets[i];
    if (GROW(w->sets, w->sets_cap, w->n_sets + 1) != 0)
        return NULL;
    struct frameset_st *f = &w->sets[w->n_sets++];
    memset(f, 0, sizeof *f);
    f->pub.name = name;
    f->pub.process = process;
    f->last_mark = f->open_begin = -1;
    return f;
}

static void frame_add(mprof_walker *w, struct frameset_st *f, int64_t s, int64_t e)
{
    if (w->keep_frames) {
        if (f->pub.n == f->cap) {
            uint64_t nc = f->cap ? f->cap * 2 : 256;
            int64_t *a = realloc(f->pub.start, nc * sizeof *a);
            if (!a) {
                w->oom = 1;
                return;
            }
            f->pub.start = a;
            int64_t *b = realloc(f->pub.dur, nc * sizeof *b);
            if (!b) {
                w->oom = 1;
                return;
            }
            f->pub.dur = b;
            unsigned char *l = realloc(f->pub.lossy, nc);
            if (!l) {
                w->oom = 1;
                return;
            }
            f->pub.lossy = l;
            f->cap = nc;
        }
        f->pub.start[f->pub.n] = s;
        f->pub.dur[f->pub.n] = e - s;
        f->pub.lossy[f->pub.n] = (unsigned char)f->tainted;
    }
    f->pub.n_lossy += f->tainted != 0;
    f->tainted = 0;
    if (w->hooks.frame)
        w->hooks.frame(w->hooks.user, (uint32_t)(f - w->sets), f->pub.n, s, e);
    f->pub.n++;
}

/* ---- the event switch ----------------------------------------------------------------------- */

int mprof__walker_event(mprof_walker *w, const mprof_event *ev)
{
    w->ev_process = process_of(w, ev->thread);
    if (w->hooks.other && ev->type != MPROF_EV_ZONE_BEGIN && ev->type != MPROF_EV_ZONE_END &&
        w->hooks.other(w->hooks.user, ev) != 0)
        w->oom = 1;
    const mprof_event_desc *d = mprof_event_desc_get(ev->type);
    if (d && d->has_ts) {
        if (!w->have_ts || ev->ts_ns < w->first_ns)
            w->first_ns = ev->ts_ns;
        if (!w->have_ts || ev->ts_ns > w->last_ns)
            w->last_ns = ev->ts_ns;
        w->have_ts = 1;
    }
    switch (ev->type) {
    case MPROF_EV_ASYNC_BEGIN:
    case MPROF_EV_ASYNC_BEGIN_DYN:
    case MPROF_EV_ASYNC_END:
        if (w->async && mprof__async_event(w->async, w->r, ev) != 0)
            w->oom = 1;
        break;
    case MPROF_EV_ZONE_BEGIN: {
        track_st *t = zone_track(w, ev->thread);
        if (t)
            zone_begin(w, t, (uint32_t)ev->u[0], ev->ts_ns);
        else
            w->oom = 1;
        break;
    }
    case MPROF_EV_ZONE_END: {
        track_st *t = zone_track(w, ev->thread);
        if (t)
            zone_end(w, t, ev->ts_ns, 0);
        break;
    }
    case MPROF_EV_ZONE_TEXT:
    case MPROF_EV_ZONE_NAME: {
        open_zone *z = top_zone(w, ev->thread);
        if (!z)
            break;
        char *s = tool_strndup(ev->str ? ev->str : "", ev->str_len);
        if (!s) {
            w->oom = 1;
            break;
        }
        if (ev->type == MPROF_EV_ZONE_TEXT) {
            free(z->text);
            z->text = s;
            z->text_len = ev->str_len;
        } else {
            free(z->name);
            z->name = s;
            z->name_len = ev->str_len;
        }
        break;
    }
    case MPROF_EV_ZONE_VALUE: {
        open_zone *z = top_zone(w, ev->thread);
        if (z) {
            z->value = ev->u[0];
            z->has_value = 1;
        }
        break;
    }
    case MPROF_EV_LOST: {
        w->lost += ev->u[0];
        /* Zones open across the gap cannot be trusted: drop them, as `mprof report` does. */
        track_st *t = zone_track(w, ev->thread);
        if (t) {
            while (t->depth)
                free_open(&t->stack[--t->depth]);
        }
        /* Frame marks of this thread may be among the lost events: flag the open frame. */
        for (uint32_t i = 0; i < w->n_sets; i++)
            if (w->sets[i].thread == ev->thread &&
                (w->sets[i].last_mark >= 0 || w->sets[i].open_begin >= 0))
                w->sets[i].tainted = 1;
        break;
    }
    case MPROF_EV_FRAME_MARK: {
        struct frameset_st *f = set_of(w, (uint32_t)ev->u[0], ev->thread);
        if (!f) {
            w->oom = 1;
            break;
        }
        if (f->last_mark >= 0 && ev->ts_ns >= f->last_mark)
            frame_add(w, f, f->last_mark, ev->ts_ns);
        f->last_mark = ev->ts_ns;
        f->thread = ev->thread;
        f->tainted = 0;
        break;
    }
    case MPROF_EV_FRAME_BEGIN: {
        struct frameset_st *f = set_of(w, (uint32_t)ev->u[0], ev->thread);
        if (f) {
            f->open_begin = ev->ts_ns;
            f->thread = ev->thread;
            f->tainted = 0;
        }
        break;
    }
    case MPROF_EV_FRAME_END: {
        struct frameset_st *f = set_of(w, (uint32_t)ev->u[0], ev->thread);
        if (f && f->open_begin >= 0 && ev->ts_ns >= f->open_begin) {
            frame_add(w, f, f->open_begin, ev->ts_ns);
            f->open_begin = -1;
        }
        break;
    }
    case MPROF_EV_FIBER_ENTER: {
        thread_st *t = thread_of(w, ev->thread);
        uint32_t ft = t ? fiber_track(w, (uint32_t)ev->u[0]) : NONE;
        if (ft == NONE) {
            w->oom = 1;
            break;
        }
        w->threads[ev->thread].fiber_track = ft;
        break;
    }
    case MPROF_EV_FIBER_LEAVE: {
        thread_st *t = thread_of(w, ev->thread);
        if (t)
            t->fiber_track = NONE;
        break;
    }
    case MPROF_EV_GPU_CONTEXT: {
        gpu_st *g = gpu_of(w, (uint32_t)ev->u[0]);
        if (!g) {
            w->oom = 1;
            break;
        }
        g->name = (uint32_t)ev->u[1];
        double period = mprof_event_f64(ev, 3);
        g->period_ns = period > 0 ? period : 1.0;
        break;
    }
    case MPROF_EV_GPU_CALIBRATE: {
        gpu_st *g = gpu_of(w, (uint32_t)ev->u[0]);
        if (g) {
            g->have_cal = 1;
            g->cal_gpu = (int64_t)ev->u[1];
            g->cal_cpu = ev->ts_ns;
        }
        break;
    }
    case MPROF_EV_GPU_ZONE_BEGIN: {
        gpu_st *g = gpu_of(w, (uint32_t)ev->u[0]);
        if (g)
            gpu_zone_begin(w, g, (uint32_t)ev->u[1], (uint32_t)ev->u[2], ev->ts_ns, ev->thread);
        break;
    }
    case MPROF_EV_GPU_ZONE_END: {
        gpu_st *g = gpu_of(w, (uint32_t)ev->u[0]);
        if (g)
            gpu_zone_end(w, g, (uint32_t)ev->u[1]);
        break;
    }
    case MPROF_EV_GPU_TIME: {
        gpu_st *g = gpu_of(w, (uint32_t)ev->u[0]);
        if (g)
            gpu_time(w, g, (uint32_t)ev->u[1], (int64_t)ev->u[2]);
        break;
    }
    case MPROF_EV_LOCK_ANNOUNCE:
    case MPROF_EV_LOCK_WAIT:
    case MPROF_EV_LOCK_OBTAINED:
    case MPROF_EV_LOCK_RELEASED:
    case MPROF_EV_LOCK_TRY_FAILED:
        lock_event(w, ev);
        break;
    case MPROF_EV_ALLOC:
        mem_alloc(w, ev->u[0], ev->u[1], (uint32_t)ev->u[2], ev->thread, ev->ts_ns);
        break;
    case MPROF_EV_FREE:
        mem_free(w, ev->u[0], (uint32_t)ev->u[1], ev->thread, ev->ts_ns);
        break;
    case MPROF_EV_POOL_DISCARD:
        mem_discard(w, (uint32_t)ev->u[0], ev->thread, ev->ts_ns);
        break;
    default:
        /* Any other per-thread event makes the thread's track exist (a thread that only logs). */
        if (ev->type >= 0x10 && !thread_of(w, ev->thread))
            w->oom = 1;
        break;
    }
    return w->oom ? -1 : 0;
}

static void on_async(void *user, const mprof_async_span *s)
{
    mprof_walker *w = user;
    w->hooks.async_span(w->hooks.user, s);
}

/* A zone without children (a ZONE_LEAF record): zone_begin then zone_end, without the stack. */
static inline void leaf_zone(mprof_walker *w, track_st *t, uint32_t loc, int64_t ts, int64_t dur)
{
    uint32_t d = t->depth;
    if (d)
        t->stack[d - 1].child += dur;
    t->pub.zones++;
    if (d > t->pub.max_depth)
        t->pub.max_depth = d;
    w->zones++;
    if (w->hooks.zone) {
        int nested = 0;
        for (uint32_t k = 0; k < d && !nested; k++)
            nested = t->stack[k].loc == loc;
        mprof_tl_zone out = {.track = (uint32_t)(t - w->tracks), .loc = loc, .depth = d,
                             .nested = nested, .start_ns = ts, .end_ns = ts + dur};
        w->hooks.zone(w->hooks.user, &out);
    }
}

int mprof__walker_batch(mprof_walker *w, const mprof_batch *b)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t ri = 0; ri < b->n_run && !w->oom; ri++) {
        const mprof_run *run = &b->run[ri];
        track_st *t = NULL; /* the run's zone track; looked up again after any other event */
        for (const mprof_rec *e = b->rec + run->first, *end = b->rec + run->end; e < end; e++) {
            int64_t ts = e->ts_ns;
            switch (mprof_rec_type(e)) {
            case MPROF_REC_LEAF: {
                int64_t dur = mprof_rec_dur(e);
                lo = ts < lo ? ts : lo;
                hi = ts + dur > hi ? ts + dur : hi;
                if (!t && !(t = zone_track(w, run->thread))) {
                    w->oom = 1;
                    return -1;
                }
                leaf_zone(w, t, e->x, ts, dur);
                continue;
            }
            case MPROF_EV_ZONE_BEGIN:
                lo = ts < lo ? ts : lo;
                hi = ts > hi ? ts : hi;
                if (!t && !(t = zone_track(w, run->thread))) {
                    w->oom = 1;
                    return -1;
                }
                zone_begin(w, t, e->x, ts);
                continue;
            case MPROF_EV_ZONE_END:
                lo = ts < lo ? ts : lo;
                hi = ts > hi ? ts : hi;
                if (!t && !(t = zone_track(w, run->thread)))
                    continue;
                zone_end(w, t, ts, 0);
                continue;
            default:
                if (mprof__walker_event(w, &b->ev[e->x]) != 0)
                    return -1;
                t = NULL;
                continue;
            }
        }
    }
    if (lo <= hi) {
        if (!w->have_ts || lo < w->first_ns)
            w->first_ns = lo;
        if (!w->have_ts || hi > w->last_ns)
            w->last_ns = hi;
        w->have_ts = 1;
    }
    return w->oom ? -1 : 0;
}

void mprof__walker_finish(mprof_walker *w)
{
    if (w->async)
        mprof__async_finish(w->async, w->last_ns);
    for (uint32_t i = 0; i < w->n_tracks; i++) {
        track_st *t = &w->tracks[i];
        while (t->depth)
            zone_end(w, t, w->last_ns, 1);
    }
    for (uint32_t i = 0; i < w->n_locks; i++) {
        lock_st *l = &w->locks[i];
        for (uint32_t k = 0; k < l->pub.n_rows; k++) {
            lock_row *row = &l->rows[k];
            if (row->hold_start >= 0) {
                lock_span(w, l, row, 0, row->hold_start, w->last_ns);
                row->hold_start = -1;
            }
        }
    }
}

mprof_walker *mprof__walker_new(const mprof_reader *r, const mprof_tl_hooks *hooks, int keep_frames)
{
    mprof_walker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->r = r;
    if (hooks)
        w->hooks = *hooks;
    w->keep_frames = keep_frames;
    if (w->hooks.async_span && !(w->async = mprof__async_new(on_async, w))) {
        free(w);
        return NULL;
    }
    return w;
}

const mprof_async *mprof__walker_async(const mprof_walker *w)
{
    return w->async;
}

void mprof__walker_free(mprof_walker *w)
{
    if (!w)
        return;
    mprof__async_free(w->async);
    for (uint32_t i = 0; i < w->n_tracks; i++) {
        track_st *t = &w->tracks[i];
        for (uint32_t k = 0; k < t->depth; k++)
            free_open(&t->stack[k]);
        free(t->stack);
    }
    for (uint32_t i = 0; i < w->n_gpus; i++) {
        gpu_st *g = &w->gpus[i];
        free(g->stack);
        free(g->qmap);
        free(g->pend);
        free(g->free_list);
    }
    for (uint32_t i = 0; i < w->n_locks; i++)
        free(w->locks[i].rows);
    for (uint32_t i = 0; i < w->n_sets; i++) {
        free(w->sets[i].pub.start);
        free(w->sets[i].pub.dur);
        free(w->sets[i].pub.lossy);
    }
    free(w->tracks);
    free(w->threads);
    free(w->gpus);
    free(w->locks);
    free(w->lock_by_id);
    free(w->pools);
    free(w->live);
    free(w->sets);
    free(w);
}

/* ---- file walking and accessors ------------------------------------------------------------- */

typedef struct feed {
    mprof_walker *w;
    const int *oom;
} feed;

/* A batch to the walker; stops the read when out of memory (the walker's, or *oom). */
static int feed_batch(void *arg, const mprof_batch *b)
{
    feed *c = arg;
    return mprof__walker_batch(c->w, b) != 0 || (c->oom && *c->oom);
}

int mprof__walker_feed(mprof_walker *w, mprof_reader *r, const int *oom, const char *path,
                       char *err, size_t errlen)
{
    feed c = {w, oom};
    int rc = mprof_reader_each_batch(r, feed_batch, &c);
    if (rc == 1)
        rc = -2;
    if (rc == -1)
        tool_seterr(err, errlen, "%s: %s", path, mprof_reader_error(r));
    else if (rc == -2)
        tool_seterr(err, errlen, "%s: out of memory", path);
    return rc;
}

mprof_walker *mprof__walk_file(const char *path, const mprof_tl_hooks *hooks, int keep_frames,
                               mprof_reader **out_reader, char *err, size_t errlen)
{
    mprof_reader *r = mprof_reader_open(path, err, errlen);
    if (!r)
        return NULL;
    mprof_walker *w = mprof__walker_new(r, hooks, keep_frames);
    if (!w) {
        snprintf(err, errlen, "%s: out of memory", path);
        mprof_reader_close(r);
        return NULL;
    }
    feed c = {w, NULL};
    int rc = mprof_reader_each_batch(r, feed_batch, &c);
    if (rc == 1) {
        snprintf(err, errlen, "%s: out of memory while reading the capture", path);
        rc = -2;
    }
    if (rc == -1)
        snprintf(err, errlen, "%s: %s", path, mprof_reader_error(r));
    if (rc < 0) {
        mprof__walker_free(w);
        mprof_reader_close(r);
        return NULL;
    }
    mprof__walker_finish(w);
    if (out_reader)
        *out_reader = r;
    else {
        mprof_reader_close(r);
        w->r = NULL;
    }
    return w;
}

uint32_t mprof__walker_track_count(const mprof_walker *w) { return w->n_tracks; }
const mprof_tl_track *mprof__walker_track(const mprof_walker *w, uint32_t i)
{
    return i < w->n_tracks ? &w->tracks[i].pub : NULL;
}

const char *mprof__walker_track_name(const mprof_walker *w, uint32_t i, char *buf, size_t len)
{
    const mprof_tl_track *t = mprof__walker_track(w, i);
    const char *s;
    if (!t || !w->r) {
        snprintf(buf, len, "track %" PRIu32, i);
        return buf;
    }
    switch (t->kind) {
    case MPROF_TRACK_THREAD: {
        const mprof_thread_def *d = mprof_reader_thread(w->r, t->ref);
        if (d && d->name)
            snprintf(buf, len, "%s", d->name);
        else
            snprintf(buf, len, "thread %" PRIu64, d ? d->os_tid : (uint64_t)t->ref);
        break;
    }
    case MPROF_TRACK_FIBER:
        s = mprof_reader_string(w->r, t->ref);
        snprintf(buf, len, "fiber %s", s ? s : "?");
        break;
    case MPROF_TRACK_GPU: {
        const char *name = NULL;
        for (uint32_t k = 0; k < w->n_gpus; k++)
            if (w->gpus[k].track == i)
                name = mprof_reader_string(w->r, w->gpus[k].name);
        if (name)
            snprintf(buf, len, "GPU %s", name);
        else
            snprintf(buf, len, "GPU context %" PRIu32, t->ref);
        break;
    }
    default: {
        const char *name = NULL;
        for (uint32_t k = 0; k < w->n_locks; k++)
            if (w->locks[k].pub.track == i)
                name = mprof_reader_string(w->r, w->locks[k].pub.name);
        if (name)
            snprintf(buf, len, "lock %s", name);
        else
            snprintf(buf, len, "lock %" PRIu32, t->ref);
        break;
    }
    }
    return buf;
}

uint32_t mprof__walker_lock_count(const mprof_walker *w) { return w->n_locks; }
const mprof_tl_lock *mprof__walker_lock(const mprof_walker *w, uint32_t i)
{
    return i < w->n_locks ? &w->locks[i].pub : NULL;
}

const char *mprof__walker_lock_row_name(const mprof_walker *w, uint32_t lock, uint32_t row,
                                        char *buf, size_t len)
{
    if (lock >= w->n_locks || row >= w->locks[lock].pub.n_rows) {
        snprintf(buf, len, "?");
        return buf;
    }
    uint32_t th = w->locks[lock].rows[row].thread;
    const mprof_thread_def *d = w->r ? mprof_reader_thread(w->r, th) : NULL;
    if (d && d->name)
        snprintf(buf, len, "%s", d->name);
    else
        snprintf(buf, len, "thread %" PRIu64, d ? d->os_tid : (uint64_t)th);
    return buf;
}

uint32_t mprof__walker_pool_count(const mprof_walker *w) { return w->n_pools; }
const mprof_tl_pool *mprof__walker_pool(const mprof_walker *w, uint32_t i)
{
    return i < w->n_pools ? &w->pools[i] : NULL;
}
uint32_t mprof__walker_frameset_count(const mprof_walker *w) { return w->n_sets; }
const mprof_tl_frameset *mprof__walker_frameset(const mprof_walker *w, uint32_t i)
{
    return i < w->n_sets ? &w->sets[i].pub : NULL;
}
const mprof_tl_frameset *mprof__walker_main_frames(const mprof_walker *w)
{
    for (uint32_t i = 0; i < w->n_sets; i++)
        if (w->sets[i].pub.name == 0)
            return &w->sets[i].pub;
    return w->n_sets ? &w->sets[0].pub : NULL;
}
const mprof_tl_frameset *mprof__walker_process_main_frames(const mprof_walker *w, uint32_t p)
{
    for (uint32_t i = 0; i < w->n_sets; i++)
        if (w->sets[i].pub.name == 0 && w->sets[i].pub.process == p)
            return &w->sets[i].pub;
    return NULL;
}
int64_t mprof__walker_first_ns(const mprof_walker *w) { return w->have_ts ? w->first_ns : 0; }
int64_t mprof__walker_last_ns(const mprof_walker *w) { return w->have_ts ? w->last_ns : 0; }
uint64_t mprof__walker_zone_count(const mprof_walker *w) { return w->zones; }
uint64_t mprof__walker_lost_events(const mprof_walker *w) { return w->lost; }
