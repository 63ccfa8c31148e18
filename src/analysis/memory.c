/*
 * memory.c - the memory pass: per pool allocations, frees, live bytes, peaks, lifetimes, leaks
 * and the callstacks behind them (`mprof report --memory`, JSON key "memory").
 *
 * State is one entry per live allocation, keyed by (pool, address), plus one accumulator per
 * pool and per (pool, callstack). An allocation's lifetime is recorded when it is freed or its
 * pool discarded: in nanoseconds, and in frames (main frame marks crossed between allocation and
 * free, counted as marks processed in between). What is still live at the end is a leak,
 * grouped by allocation callstack.
 *
 * Ordering: events of one thread arrive in time order, but a FREE on one thread can be read
 * before the ALLOC it releases on another (the collector drains threads one after the other,
 * every couple of milliseconds). So memory events and main frame marks first go through a
 * reorder window: a min-heap by timestamp that releases an event once the newest timestamp seen
 * is REORDER_WINDOW_NS past it. The window bounds the pass's memory by the events of that span,
 * and within it the analysis sees allocations, frees, discards and frames in time order, which
 * keeps live bytes and peaks exact. An event later than the window (a collector that stalled)
 * is still handled: a free whose allocation was not seen yet is parked (in a ring of the last
 * PARKED_MAX such frees, indexed by address); when an ALLOC for the same pool and address arrives
 * with an earlier timestamp, the two are paired. Frees evicted from the ring or still parked at
 * the end were of allocations the capture never saw (made before it started) and are counted as
 * unmatched. Likewise an ALLOC read after a POOL_DISCARD of its pool but timestamped before it
 * is discarded at once.
 */
#include "analysis/analysis.h"
#include "analysis/symbolize.h"
#include "analysis/passes.h"
#include "util/umap.h"
#include "util/grow.h"
#include "util/tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SERIES_MAX 2048u /* live-bytes samples kept per pool; older ones are merged pairwise */
#define REORDER_WINDOW_NS 200000000ll /* 200 ms: far beyond the collector's drain interval */
/* Pools kept: key_of puts pool index + 1 in the top 16 bits of a key, so it must fit there and
 * be nonzero (a zero key is the umap's empty slot). Events of further pools are refused. */
#define POOLS_MAX 0xffffu
/* Larger allocations are refused as corrupt: no address space has 2^48 bytes to hand out, and
 * the bound keeps live byte counts far from overflowing. */
#define SIZE_MAX_BYTES (1ull << 48)

typedef struct mev {
    int64_t ts;
    uint64_t seq; /* arrival order: keeps one thread's equal timestamps in order */
    uint64_t u[4];
    uint32_t thread;
    int type;
} mev;

typedef struct alloc_ent {
    uint64_t ptr, size;
    int64_t ts;
    uint64_t frame; /* main frame marks processed before the allocation */
    uint32_t cs, pool;
    uint32_t same;       /* next entry with the same key, index + 1 */
    uint32_t prev, next; /* the pool's live list, index + 1 */
} alloc_ent;

typedef struct pool_acc {
    uint32_t name; /* string id, 0 = the default heap */
    uint64_t n_allocs, n_frees, n_discards, n_discarded, n_unmatched;
    uint64_t bytes_allocated, bytes_freed;
    int64_t live_bytes;
    uint64_t live_count;
    int64_t peak_bytes, peak_ts;
    uint32_t peak_cs;
    int64_t last_discard_ts;
    int discarded_once;
    uint32_t live_head;
    mprof_hist life_ns, life_frames;
    /* live bytes per frame: the highest value within each group of `stride` frames */
    int64_t *series;
    uint32_t n_series, stride, in_group;
    int64_t group_max;
} pool_acc;

typedef struct cs_acc {
    uint32_t pool, cs;
    uint64_t n_allocs, bytes;
    uint64_t live_count, live_bytes;
} cs_acc;

#define PARKED_MAX 4096u

typedef struct parked_free {
    uint64_t key;
    int64_t ts;
    uint32_t pool;
    int valid;
} parked_free;

typedef struct mem_state {
    pool_acc *pools;
    uint32_t n_pools, cap_pools;
    mprof_umap pool_by_name; /* string id + 1 -> pool index */
    alloc_ent *ents;
    uint32_t n_ents, cap_ents, free_ent; /* free_ent: free list head, index + 1 */
    mprof_umap live;                     /* key -> first entry index + 1 */
    cs_acc *css;
    uint32_t n_css, cap_css;
    mprof_umap cs_by_key;
    parked_free *parked; /* ring of PARKED_MAX, allocated on first use */
    uint32_t parked_next;
    mprof_umap parked_by_key; /* key -> valid parked frees with that key */
    int64_t *marks;
    size_t n_marks, cap_marks;
    uint32_t main_thread;
    uint64_t events;
    uint64_t n_corrupt; /* events refused: a null address, a pool past POOLS_MAX, a size past
                           SIZE_MAX_BYTES or live bytes past INT64_MAX, a lifetime that
                           overflows */
    mprof_symbolizer *sym;
    mev *heap;
    size_t n_heap, cap_heap;
    uint64_t seq;
    int64_t newest;
} mem_state;

/* Never 0: pool < POOLS_MAX (get_pool refuses more), so pool + 1 is in 1..0xffff. */
static uint64_t key_of(uint32_t pool, uint64_t ptr)
{
    return (ptr & 0xffffffffffffull) ^ ((uint64_t)(pool + 1) << 48);
}

static pool_acc *get_pool(mem_state *m, uint32_t name, uint32_t *out_idx)
{
    uint32_t *p = mprof_umap_get(&m->pool_by_name, (uint64_t)name + 1);
    if (p) {
        *out_idx = *p;
        return &m->pools[*p];
    }
    if (m->n_pools >= POOLS_MAX) {
        m->n_corrupt++;
        return NULL;
    }
    if (mprof_array_reserve((void **)&m->pools, &m->cap_pools, m->n_pools + 1, sizeof *m->pools))
        return NULL;
    if (mprof_umap_put(&m->pool_by_name, (uint64_t)name + 1, m->n_pools) != 0)
        return NULL;
    pool_acc *pa = &m->pools[m->n_pools];
    memset(pa, 0, sizeof *pa);
    pa->name = name;
    pa->stride = 1;
    *out_idx = m->n_pools++;
    return pa;
}

static cs_acc *get_cs(mem_state *m, uint32_t pool, uint32_t cs)
{
    uint64_t k = ((uint64_t)(pool + 1) << 32) | cs;
    uint32_t *p = mprof_umap_get(&m->cs_by_key, k);
    if (p)
        return &m->css[*p];
    if (mprof_array_reserve((void **)&m->css, &m->cap_css, m->n_css + 1, sizeof *m->css))
        return NULL;
    if (mprof_umap_put(&m->cs_by_key, k, m->n_css) != 0)
        return NULL;
    cs_acc *c = &m->css[m->n_css++];
    memset(c, 0, sizeof *c);
    c->pool = pool;
    c->cs = cs;
    return c;
}

/* Frames crossed between a and b: main marks m with a < m <= b. */
static uint64_t frames_between(const mem_state *m, int64_t a, int64_t b)
{
    size_t lo = 0, hi = m->n_marks;
    while (lo < hi) { /* first mark > a */
        size_t mid = (lo + hi) / 2;
        if (m->marks[mid] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t ia = lo;
    hi = m->n_marks;
    while (lo < hi) { /* first mark > b */
        size_t mid = (lo + hi) / 2;
        if (m->marks[mid] <= b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - ia;
}

/* Records a lifetime: ns, and main frames crossed. */
static void record_lifetime(mem_state *m, uint32_t pool, int64_t alloc_ts, int64_t free_ts,
                            uint64_t frames)
{
    int64_t d;
    if (__builtin_sub_overflow(free_ts, alloc_ts, &d)) {
        m->n_corrupt++; /* timestamps no real capture has */
        return;
    }
    mprof_hist_add(&m->pools[pool].life_ns, (uint64_t)(d > 0 ? d : 0));
    mprof_hist_add(&m->pools[pool].life_frames, frames);
}

static void note_live(pool_acc *p, uint32_t cs, int64_t ts)
{
    if (p->live_bytes > p->peak_bytes) {
        p->peak_bytes = p->live_bytes;
        p->peak_ts = ts;
        p->peak_cs = cs;
    }
    if (p->live_bytes > p->group_max)
        p->group_max = p->live_bytes;
}

/* Accounts an allocation and its immediate release (free read before alloc, or discarded). */
static void alloc_and_release(mem_state *m, uint32_t pi, uint64_t size, uint32_t cs, int64_t ts,
                              int64_t rel_ts, int discarded)
{
    pool_acc *p = &m->pools[pi];
    p->n_allocs++;
    p->bytes_allocated += size;
    p->live_bytes += (int64_t)size;
    note_live(p, cs, ts);
    p->live_bytes -= (int64_t)size;
    p->bytes_freed += size;
    if (discarded)
        p->n_discarded++;
    else
        p->n_frees++;
    cs_acc *c = get_cs(m, pi, cs);
    if (c) {
        c->n_allocs++;
        c->bytes += size;
    }
    /* Paired out of order: count the marks between the two timestamps. */
    record_lifetime(m, pi, ts, rel_ts, frames_between(m, ts, rel_ts));
}

static uint32_t ent_new(mem_state *m)
{
    if (m->free_ent) {
        uint32_t i = m->free_ent - 1;
        m->free_ent = m->ents[i].same;
        return i + 1;
    }
    if (MPROF_GROW(m->ents, m->cap_ents, m->n_ents + 1, 1024) != 0)
        return 0;
    return ++m->n_ents;
}

/* Invalidates parked slot i. */
static void unpark(mem_state *m, uint32_t i)
{
    parked_free *f = &m->parked[i];
    uint32_t *n = mprof_umap_get(&m->parked_by_key, f->key);
    if (n && --*n == 0)
        mprof_umap_del(&m->parked_by_key, f->key);
    f->valid = 0;
}

/* Parks a free whose allocation has not been seen; evicts (as unmatched) the oldest parked. */
static void park(mem_state *m, uint64_t key, int64_t ts, uint32_t pool)
{
    if (!m->parked && !(m->parked = calloc(PARKED_MAX, sizeof *m->parked))) {
        m->pools[pool].n_unmatched++;
        return;
    }
    uint32_t i = m->parked_next;
    m->parked_next = (i + 1) % PARKED_MAX;
    if (m->parked[i].valid) {
        m->pools[m->parked[i].pool].n_unmatched++;
        unpark(m, i);
    }
    uint32_t *n = mprof_umap_get(&m->parked_by_key, key);
    if (n)
        ++*n;
    else if (mprof_umap_put(&m->parked_by_key, key, 1) != 0) {
        m->pools[pool].n_unmatched++;
        return;
    }
    m->parked[i] = (parked_free){key, ts, pool, 1};
}

static void on_alloc(mem_state *m, const mprof_event *ev)
{
    uint64_t ptr = ev->u[0], size = ev->u[1];
    uint32_t name = (uint32_t)ev->u[2], cs = (uint32_t)ev->u[3], pi;
    if (!ptr) { /* the library never records NULL: a corrupt capture */
        m->n_corrupt++;
        return;
    }
    pool_acc *p = get_pool(m, name, &pi);
    if (!p)
        return;
    if (size > SIZE_MAX_BYTES || p->live_bytes > INT64_MAX - (int64_t)size) {
        m->n_corrupt++;
        return;
    }
    uint64_t key = key_of(pi, ptr);
    /* A free of this address read earlier but timestamped later pairs with this allocation. */
    uint32_t best = UINT32_MAX;
    uint32_t *np = mprof_umap_get(&m->parked_by_key, key);
    for (uint32_t i = 0; np && i < PARKED_MAX; i++)
        if (m->parked[i].valid && m->parked[i].key == key && m->parked[i].ts >= ev->ts_ns &&
            (best == UINT32_MAX || m->parked[i].ts < m->parked[best].ts))
            best = i;
    if (best != UINT32_MAX) {
        int64_t fts = m->parked[best].ts;
        unpark(m, best);
        alloc_and_release(m, pi, size, cs, ev->ts_ns, fts, 0);
        return;
    }
    if (p->discarded_once && ev->ts_ns <= p->last_discard_ts) {
        alloc_and_release(m, pi, size, cs, ev->ts_ns, p->last_discard_ts, 1);
        return;
    }
    uint32_t e = ent_new(m);
    if (!e)
        return;
    /* Into the key map first: if that fails the entry goes back to the free list and nothing
     * else has changed. */
    uint32_t same = 0;
    uint32_t *head = mprof_umap_get(&m->live, key);
    if (head) {
        same = *head;
        *head = e;
    } else if (mprof_umap_put(&m->live, key, e) != 0) {
        m->ents[e - 1].same = m->free_ent;
        m->free_ent = e;
        return;
    }
    p = &m->pools[pi];
    m->ents[e - 1] = (alloc_ent){ptr, size, ev->ts_ns, m->n_marks, cs, pi, same, 0, p->live_head};
    if (p->live_head)
        m->ents[p->live_head - 1].prev = e;
    p->live_head = e;
    p->n_allocs++;
    p->bytes_allocated += size;
    p->live_bytes += (int64_t)size;
    p->live_count++;
    note_live(p, cs, ev->ts_ns);
    cs_acc *c = get_cs(m, pi, cs);
    if (c) {
        c->n_allocs++;
        c->bytes += size;
        c->live_count++;
        c->live_bytes += size;
    }
}

/* Unlinks entry e (index + 1) from its pool's live list and counters; the caller unlinks it from
 * the key chain. */
static void release(mem_state *m, uint32_t e, int64_t ts, int discarded)
{
    alloc_ent *a = &m->ents[e - 1];
    pool_acc *p = &m->pools[a->pool];
    if (a->prev)
        m->ents[a->prev - 1].next = a->next;
    else
        p->live_head = a->next;
    if (a->next)
        m->ents[a->next - 1].prev = a->prev;
    p->live_bytes -= (int64_t)a->size;
    p->live_count--;
    p->bytes_freed += a->size;
    if (discarded)
        p->n_discarded++;
    else
        p->n_frees++;
    cs_acc *c = get_cs(m, a->pool, a->cs);
    if (c) {
        c->live_count--;
        c->live_bytes -= a->size;
    }
    /* Events are handled in time order (stream order for equal timestamps), so the marks
     * processed since the allocation are exactly the frames it lived across. */
    record_lifetime(m, a->pool, a->ts, ts, m->n_marks - a->frame);
    a->same = m->free_ent;
    m->free_ent = e;
}

static void on_free(mem_state *m, const mprof_event *ev)
{
    uint64_t ptr = ev->u[0];
    uint32_t pi;
    if (!ptr) { /* free(NULL) is never recorded */
        m->n_corrupt++;
        return;
    }
    if (!get_pool(m, (uint32_t)ev->u[1], &pi))
        return;
    uint64_t key = key_of(pi, ptr);
    uint32_t *head = mprof_umap_get(&m->live, key);
    /* The allocation this frees: the latest one at or before the free. */
    uint32_t best = 0, best_prev = 0;
    for (uint32_t e = head ? *head : 0, prev = 0; e; prev = e, e = m->ents[e - 1].same)
        if (m->ents[e - 1].ts <= ev->ts_ns && (!best || m->ents[e - 1].ts > m->ents[best - 1].ts)) {
            best = e;
            best_prev = prev;
        }
    if (!best) {
        park(m, key, ev->ts_ns, pi);
        return;
    }
    uint32_t next = m->ents[best - 1].same;
    if (best_prev)
        m->ents[best_prev - 1].same = next;
    else if (next)
        *head = next;
    else
        mprof_umap_del(&m->live, key);
    release(m, best, ev->ts_ns, 0);
}

static void on_discard(mem_state *m, const mprof_event *ev)
{
    uint32_t pi;
    pool_acc *p = get_pool(m, (uint32_t)ev->u[0], &pi);
    if (!p)
        return;
    p->n_discards++;
    if (!p->discarded_once || ev->ts_ns > p->last_discard_ts)
        p->last_discard_ts = ev->ts_ns;
    p->discarded_once = 1;
    uint32_t e = p->live_head;
    while (e) {
        alloc_ent *a = &m->ents[e - 1];
        uint32_t next = a->next;
        if (a->ts <= ev->ts_ns) {
            uint64_t key = key_of(pi, a->ptr);
            /* Unlink e from its key chain. */
            uint32_t *head = mprof_umap_get(&m->live, key);
            if (head && *head == e) {
                if (a->same)
                    *head = a->same;
                else
                    mprof_umap_del(&m->live, key);
            } else if (head) {
                for (uint32_t x = *head; x; x = m->ents[x - 1].same)
                    if (m->ents[x - 1].same == e) {
                        m->ents[x - 1].same = a->same;
                        break;
                    }
            }
            release(m, e, ev->ts_ns, 1);
        }
        e = next;
    }
}

/* One main frame ended: close the current sample group of every pool. */
static void on_main_mark(mem_state *m, int64_t ts)
{
    if (MPROF_GROW(m->marks, m->cap_marks, m->n_marks + 1, 1024) != 0)
        return;
    m->marks[m->n_marks++] = ts;
    for (uint32_t i = 0; i < m->n_pools; i++) {
        pool_acc *p = &m->pools[i];
        if (++p->in_group < p->stride)
            continue;
        if (p->n_series == SERIES_MAX) {
            for (uint32_t k = 0; k < SERIES_MAX / 2; k++)
                p->series[k] = p->series[2 * k] > p->series[2 * k + 1] ? p->series[2 * k]
                                                                       : p->series[2 * k + 1];
            p->n_series = SERIES_MAX / 2;
            p->stride *= 2;
        }
        if (!p->series && !(p->series = malloc(SERIES_MAX * sizeof *p->series)))
            continue;
        p->series[p->n_series++] = p->group_max;
        p->in_group = 0;
        p->group_max = p->live_bytes;
    }
}

static void *mem_create(mprof_analysis *a)
{
    (void)a;
    mem_state *m = calloc(1, sizeof *m);
    if (m)
        m->sym = mprof_symbolizer_new();
    return m;
}

static int mev_less(const mev *x, const mev *y)
{
    return x->ts < y->ts || (x->ts == y->ts && x->seq < y->seq);
}

static int heap_push(mem_state *m, const mprof_event *ev)
{
    if (MPROF_GROW(m->heap, m->cap_heap, m->n_heap + 1, 1024) != 0)
        return -1;
    mev e = {ev->ts_ns, m->seq++, {ev->u[0], ev->u[1], ev->u[2], ev->u[3]}, ev->thread, ev->type};
    size_t i = m->n_heap++;
    while (i > 0 && mev_less(&e, &m->heap[(i - 1) / 2])) {
        m->heap[i] = m->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->heap[i] = e;
    return 0;
}

static mev heap_pop(mem_state *m)
{
    mev top = m->heap[0], last = m->heap[--m->n_heap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m->n_heap)
            break;
        if (c + 1 < m->n_heap && mev_less(&m->heap[c + 1], &m->heap[c]))
            c++;
        if (!mev_less(&m->heap[c], &last))
            break;
        m->heap[i] = m->heap[c];
        i = c;
    }
    if (m->n_heap)
        m->heap[i] = last;
    return top;
}

/* Handles one memory event or main frame mark, in time order. */
static void apply(mem_state *m, const mev *e)
{
    mprof_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = e->type;
    ev.thread = e->thread;
    ev.ts_ns = e->ts;
    memcpy(ev.u, e->u, sizeof e->u);
    switch (e->type) {
    case MPROF_EV_ALLOC:
        on_alloc(m, &ev);
        break;
    case MPROF_EV_FREE:
        on_free(m, &ev);
        break;
    case MPROF_EV_POOL_DISCARD:
        on_discard(m, &ev);
        break;
    default:
        on_main_mark(m, e->ts);
        break;
    }
}

static void release_window(mem_state *m, int all)
{
    while (m->n_heap && (all || m->heap[0].ts <= m->newest - REORDER_WINDOW_NS)) {
        mev e = heap_pop(m);
        apply(m, &e);
    }
}

static void mem_event(void *state, mprof_analysis *a, const mprof_event *ev)
{
    (void)a;
    mem_state *m = state;
    switch (ev->type) {
    case MPROF_EV_ALLOC:
    case MPROF_EV_FREE:
    case MPROF_EV_POOL_DISCARD:
        m->events++;
        break;
    case MPROF_EV_FRAME_MARK:
        if (ev->u[0] != 0)
            return;
        if (!m->main_thread)
            m->main_thread = ev->thread;
        if (ev->thread != m->main_thread)
            return;
        break;
    case MPROF_EV_DEF_MODULE:
        if (m->sym)
            mprof_symbolizer_add_event(m->sym, ev);
        return;
    default:
        return;
    }
    if (ev->ts_ns > m->newest)
        m->newest = ev->ts_ns;
    if (heap_push(m, ev) != 0) {
        /* Out of memory: handle it now, out of order if need be. */
        mev e = {ev->ts_ns, m->seq++, {ev->u[0], ev->u[1], ev->u[2], ev->u[3]}, ev->thread,
                 ev->type};
        apply(m, &e);
        return;
    }
    release_window(m, 0);
}

static void mem_finish(void *state, mprof_analysis *a)
{
    (void)a;
    mem_state *m = state;
    release_window(m, 1);
    for (uint32_t i = 0; m->parked && i < PARKED_MAX; i++)
        if (m->parked[i].valid) {
            m->pools[m->parked[i].pool].n_unmatched++;
            unpark(m, i);
        }
}

static void mem_destroy(void *state)
{
    mem_state *m = state;
    if (!m)
        return;
    for (uint32_t i = 0; i < m->n_pools; i++) {
        mprof_hist_free(&m->pools[i].life_ns);
        mprof_hist_free(&m->pools[i].life_frames);
        free(m->pools[i].series);
    }
    free(m->pools);
    mprof_umap_free(&m->pool_by_name);
    free(m->ents);
    mprof_umap_free(&m->live);
    free(m->css);
    mprof_umap_free(&m->cs_by_key);
    free(m->parked);
    mprof_umap_free(&m->parked_by_key);
    free(m->marks);
    free(m->heap);
    mprof_symbolizer_free(m->sym);
    free(m);
}

/* ---- output --------------------------------------------------------------------------------- */

static const char *pool_name(const mprof_analysis *a, const pool_acc *p)
{
    const char *n = p->name ? mprof_reader_string(mprof_analysis_reader(a), p->name) : NULL;
    return n ? n : "heap";
}

static const char *fmt_bytes(char *buf, size_t n, double v)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double a = v < 0 ? -v : v;
    while (a >= 1024 && u < 4) {
        a /= 1024;
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%.0f %s", v, unit[u]);
    else
        snprintf(buf, n, "%.1f %s", v, unit[u]);
    return buf;
}

static void print_stack(mem_state *m, mprof_analysis *a, FILE *out, uint32_t cs, int max_frames)
{
    uint32_t n = 0;
    const uint64_t *fr = cs ? mprof_reader_callstack(mprof_analysis_reader(a), cs, &n) : NULL;
    if (!fr || !n) {
        fprintf(out, "        (no callstack: use the _CS macros or the kit's callstack_depth)\n");
        return;
    }
    char buf[512], e[1024];
    /* Symbols and module paths come from files the capture names: escaped like its names. */
    for (uint32_t i = 0; i < n && (int)i < max_frames; i++)
        fprintf(out, "        %s\n",
                tool_text(mprof_symbolizer_format(m->sym, fr[i], buf, sizeof buf), e, sizeof e));
    if ((int)n > max_frames)
        fprintf(out, "        ... %u more frames\n", n - (uint32_t)max_frames);
}

static int cmp_u64_desc(uint64_t a, uint64_t b) { return (a < b) - (a > b); }

/* Ties fall back to pool and callstack id, so the order is the same on every run. */
static int cmp_ids(const cs_acc *x, const cs_acc *y)
{
    if (x->pool != y->pool)
        return x->pool < y->pool ? -1 : 1;
    return (x->cs > y->cs) - (x->cs < y->cs);
}

/* Leaks: live bytes, then live count, descending. */
static int cmp_leak(const void *a, const void *b)
{
    const cs_acc *x = *(const cs_acc *const *)a, *y = *(const cs_acc *const *)b;
    int c = cmp_u64_desc(x->live_bytes, y->live_bytes);
    if (!c)
        c = cmp_u64_desc(x->live_count, y->live_count);
    return c ? c : cmp_ids(x, y);
}

/* Top allocators: allocation count, then bytes, descending. */
static int cmp_top(const void *a, const void *b)
{
    const cs_acc *x = *(const cs_acc *const *)a, *y = *(const cs_acc *const *)b;
    int c = cmp_u64_desc(x->n_allocs, y->n_allocs);
    if (!c)
        c = cmp_u64_desc(x->bytes, y->bytes);
    return c ? c : cmp_ids(x, y);
}

static cs_acc **sorted_cs(mem_state *m, int leaks, uint32_t *out_n)
{
    cs_acc **v = malloc((m->n_css ? m->n_css : 1) * sizeof *v);
    uint32_t n = 0;
    if (!v) {
        *out_n = 0;
        return NULL;
    }
    for (uint32_t i = 0; i < m->n_css; i++)
        if (!leaks || m->css[i].live_count)
            v[n++] = &m->css[i];
    if (n > 1)
        qsort(v, n, sizeof *v, leaks ? cmp_leak : cmp_top);
    *out_n = n;
    return v;
}

static void print_corrupt(const mem_state *m, FILE *out)
{
    if (m->n_corrupt)
        fprintf(out,
                "  %" PRIu64 " memory events ignored as corrupt (a null address, a pool past the "
                "first %u, a size past 2^48 bytes or timestamps too far apart)\n",
                m->n_corrupt, POOLS_MAX);
}

static void mem_print_text(void *state, mprof_analysis *a, FILE *out, int top_n)
{
    mem_state *m = state;
    char b1[32], b2[32], b3[32], e[256];
    fprintf(out, "\nMemory\n");
    if (!m->n_pools) {
        fprintf(out, "  no allocation events (MPROF_ALLOC/MPROF_FREE or the allocator kit)\n");
        print_corrupt(m, out);
        return;
    }
    fprintf(out, "  %-16s %10s %10s %9s %12s %12s %10s  %-22s %s\n", "pool", "allocs", "frees",
            "discards", "live at end", "peak", "peak at s", "lifetime ms p50/p95/max",
            "frames p50/p95/max");
    for (uint32_t i = 0; i < m->n_pools; i++) {
        pool_acc *p = &m->pools[i];
        char life[64];
        snprintf(life, sizeof life, "%.3f/%.3f/%.3f",
                 (double)mprof_hist_quantile(&p->life_ns, 0.5) / 1e6,
                 (double)mprof_hist_quantile(&p->life_ns, 0.95) / 1e6, (double)p->life_ns.max / 1e6);
        fprintf(out, "  %-16s %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %12s %12s %10.3f  %-22s %" PRIu64
                     "/%" PRIu64 "/%" PRIu64 "\n",
                tool_text(pool_name(a, p), e, sizeof e), p->n_allocs, p->n_frees + p->n_discarded,
                p->n_discards,
                fmt_bytes(b1, sizeof b1, (double)p->live_bytes),
                fmt_bytes(b2, sizeof b2, (double)p->peak_bytes), (double)p->peak_ts / 1e9,
                p->life_ns.n ? life : "-", mprof_hist_quantile(&p->life_frames, 0.5),
                mprof_hist_quantile(&p->life_frames, 0.95), p->life_frames.max);
        if (p->n_unmatched)
            fprintf(out, "  %-16s %" PRIu64 " frees of addresses allocated before the capture\n", "",
                    p->n_unmatched);
    }
    for (uint32_t i = 0; i < m->n_pools; i++) {
        pool_acc *p = &m->pools[i];
        if (!p->peak_bytes)
            continue;
        fprintf(out, "  Peak of '%s': %s at %.3f s, reached by:\n", tool_text(pool_name(a, p), e, sizeof e),
                fmt_bytes(b1, sizeof b1, (double)p->peak_bytes), (double)p->peak_ts / 1e9);
        print_stack(m, a, out, p->peak_cs, 6);
    }
    uint32_t n;
    cs_acc **v = sorted_cs(m, 1, &n);
    if (n) {
        uint64_t cnt = 0, bytes = 0;
        for (uint32_t i = 0; i < n; i++) {
            cnt += v[i]->live_count;
            bytes += v[i]->live_bytes;
        }
        fprintf(out, "  Leaks: %" PRIu64 " allocations (%s) still live at the end, by callstack:\n",
                cnt, fmt_bytes(b1, sizeof b1, (double)bytes));
        for (uint32_t i = 0; i < n && (int)i < top_n; i++) {
            fprintf(out, "    %" PRIu64 " x, %s in '%s':\n", v[i]->live_count,
                    fmt_bytes(b2, sizeof b2, (double)v[i]->live_bytes),
                    tool_text(pool_name(a, &m->pools[v[i]->pool]), e, sizeof e));
            print_stack(m, a, out, v[i]->cs, 6);
        }
    } else {
        fprintf(out, "  Leaks: none (every allocation was freed or discarded)\n");
    }
    free(v);
    v = sorted_cs(m, 0, &n);
    if (n) {
        fprintf(out, "  Top allocating callstacks:\n");
        for (uint32_t i = 0; i < n && (int)i < (top_n < 10 ? top_n : 10); i++) {
            fprintf(out, "    %" PRIu64 " allocs, %s in '%s':\n", v[i]->n_allocs,
                    fmt_bytes(b3, sizeof b3, (double)v[i]->bytes),
                    tool_text(pool_name(a, &m->pools[v[i]->pool]), e, sizeof e));
            print_stack(m, a, out, v[i]->cs, 4);
        }
    }
    free(v);
    print_corrupt(m, out);
    const char *w = mprof_symbolizer_warning(m->sym);
    if (w)
        fprintf(out, "  Symbols: %s\n", tool_text(w, e, sizeof e));
}

static void json_stack(mem_state *m, mprof_analysis *a, mprof_json *j, const char *key,
                       uint32_t cs)
{
    uint32_t n = 0;
    const uint64_t *fr = cs ? mprof_reader_callstack(mprof_analysis_reader(a), cs, &n) : NULL;
    mprof_json_arr_begin(j, key);
    for (uint32_t i = 0; fr && i < n; i++) {
        mprof_symbol s;
        mprof_symbolizer_lookup(m->sym, fr[i], &s);
        char addr[24];
        snprintf(addr, sizeof addr, "0x%" PRIx64, fr[i]);
        mprof_json_obj_begin(j, NULL);
        mprof_json_str(j, "addr", addr);
        if (s.function)
            mprof_json_strn(j, "function", s.function, strcspn(s.function, "@"));
        else
            mprof_json_null(j, "function");
        if (s.file)
            mprof_json_str(j, "file", s.file);
        else
            mprof_json_null(j, "file");
        mprof_json_u64(j, "line", s.line);
        if (s.module)
            mprof_json_str(j, "module", s.module);
        else
            mprof_json_null(j, "module");
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
}

static void json_dist(mprof_json *j, const char *key, const mprof_hist *h, double scale)
{
    mprof_json_obj_begin(j, key);
    mprof_json_u64(j, "count", h->n);
    mprof_json_f64(j, "p50", (double)mprof_hist_quantile(h, 0.5) / scale);
    mprof_json_f64(j, "p95", (double)mprof_hist_quantile(h, 0.95) / scale);
    mprof_json_f64(j, "max", (double)h->max / scale);
    mprof_json_f64(j, "mean", mprof_hist_mean(h) / scale);
    mprof_json_obj_end(j);
}

static void mem_print_json(void *state, mprof_analysis *a, mprof_json *j)
{
    mem_state *m = state;
    mprof_json_obj_begin(j, "memory");
    mprof_json_u64(j, "events", m->events);
    mprof_json_u64(j, "corrupt_events", m->n_corrupt);
    mprof_json_arr_begin(j, "pools");
    for (uint32_t i = 0; i < m->n_pools; i++) {
        pool_acc *p = &m->pools[i];
        mprof_json_obj_begin(j, NULL);
        mprof_json_str(j, "name", pool_name(a, p));
        mprof_json_u64(j, "allocs", p->n_allocs);
        mprof_json_u64(j, "frees", p->n_frees);
        mprof_json_u64(j, "discards", p->n_discards);
        mprof_json_u64(j, "discarded_allocs", p->n_discarded);
        mprof_json_u64(j, "unmatched_frees", p->n_unmatched);
        mprof_json_u64(j, "bytes_allocated", p->bytes_allocated);
        mprof_json_u64(j, "bytes_freed", p->bytes_freed);
        mprof_json_i64(j, "live_bytes", p->live_bytes);
        mprof_json_u64(j, "live_count", p->live_count);
        mprof_json_i64(j, "peak_bytes", p->peak_bytes);
        mprof_json_i64(j, "peak_ns", p->peak_ts);
        json_stack(m, a, j, "peak_callstack", p->peak_cs);
        json_dist(j, "lifetime_ms", &p->life_ns, 1e6);
        json_dist(j, "lifetime_frames", &p->life_frames, 1.0);
        mprof_json_obj_begin(j, "live_bytes_per_frame");
        mprof_json_u64(j, "frames_per_value", p->stride);
        mprof_json_arr_begin(j, "values");
        for (uint32_t k = 0; k < p->n_series; k++)
            mprof_json_i64(j, NULL, p->series[k]);
        mprof_json_arr_end(j);
        mprof_json_obj_end(j);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
    for (int leaks = 1; leaks >= 0; leaks--) {
        uint32_t n;
        cs_acc **v = sorted_cs(m, leaks, &n);
        mprof_json_arr_begin(j, leaks ? "leaks" : "top_callstacks");
        for (uint32_t i = 0; i < n; i++) {
            mprof_json_obj_begin(j, NULL);
            mprof_json_str(j, "pool", pool_name(a, &m->pools[v[i]->pool]));
            if (leaks) {
                mprof_json_u64(j, "count", v[i]->live_count);
                mprof_json_u64(j, "bytes", v[i]->live_bytes);
            } else {
                mprof_json_u64(j, "allocs", v[i]->n_allocs);
                mprof_json_u64(j, "bytes", v[i]->bytes);
            }
            mprof_json_u64(j, "callstack_id", v[i]->cs);
            json_stack(m, a, j, "callstack", v[i]->cs);
            mprof_json_obj_end(j);
        }
        mprof_json_arr_end(j);
        free(v);
    }
    const char *w = mprof_symbolizer_warning(m->sym);
    if (w)
        mprof_json_str(j, "symbol_warning", w);
    else
        mprof_json_null(j, "symbol_warning");
    mprof_json_obj_end(j);
}

/* Zones do not concern it: the events of the batch other than zones, in file order. */
static void mem_batch(void *state, mprof_analysis *a, const mprof_batch *b)
{
    for (uint32_t i = 0; i < b->n_ev; i++)
        mem_event(state, a, &b->ev[i]);
}

const mprof_pass_vtbl mprof__memory_pass = {
    .name = "memory",
    .always = false,
    MPROF_PASS_HOOKS(mem),
    .batch = mem_batch,
    .beside = true,
};

/* ---- results for tests and tools (passes.h) ------------------------------------------------- */

int mprof__memory_pool(mprof_analysis *a, const char *name, mprof_pool_result *out)
{
    mem_state *m = mprof_analysis_pass_state(a, "memory");
    for (uint32_t i = 0; m && i < m->n_pools; i++) {
        pool_acc *p = &m->pools[i];
        if (strcmp(pool_name(a, p), name) != 0)
            continue;
        *out = (mprof_pool_result){
            .name = pool_name(a, p),
            .allocs = p->n_allocs,
            .frees = p->n_frees,
            .discards = p->n_discards,
            .discarded_allocs = p->n_discarded,
            .unmatched_frees = p->n_unmatched,
            .live_count = p->live_count,
            .live_bytes = p->live_bytes,
            .peak_bytes = p->peak_bytes,
            .peak_ns = p->peak_ts,
            .peak_callstack = p->peak_cs,
            .lifetime_count = p->life_ns.n,
            .lifetime_p50_ns = mprof_hist_quantile(&p->life_ns, 0.5),
            .lifetime_max_ns = p->life_ns.max,
            .lifetime_frames_p50 = mprof_hist_quantile(&p->life_frames, 0.5),
            .lifetime_frames_max = p->life_frames.max,
        };
        return 0;
    }
    return -1;
}

int mprof__memory_leak(mprof_analysis *a, uint32_t i, mprof_leak_result *out)
{
    mem_state *m = mprof_analysis_pass_state(a, "memory");
    if (!m)
        return -1;
    uint32_t n;
    cs_acc **v = sorted_cs(m, 1, &n);
    int rc = -1;
    if (v && i < n) {
        *out = (mprof_leak_result){pool_name(a, &m->pools[v[i]->pool]), v[i]->live_count,
                                   v[i]->live_bytes, v[i]->cs};
        rc = 0;
    }
    free(v);
    return rc;
}
