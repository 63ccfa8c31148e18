/*
 * fibers.c - the fibers pass: zones on fiber tracks, run time, resumes and scheduling gaps
 * (`mprof report --fibers`, JSON key "fibers").
 *
 * While a thread runs a fiber (between FIBER_ENTER and FIBER_LEAVE on that thread) its zones
 * belong to the fiber. A fiber can leave thread A with zones open and resume on thread B, which
 * closes them; in the file, B's part may come before A's, because the collector drains threads
 * one after the other. So each run of a fiber is buffered as a segment (enter, leave and the
 * zone begins/ends inside it) and segments are replayed per fiber in enter-time order, onto the
 * fiber's own zone stack. A closed segment is replayed once the newest timestamp read is
 * REORDER_WINDOW_NS past its enter time (far more than the collector's drain interval, so no
 * earlier run of that fiber can still be unread, even on a thread not seen yet), or at the end.
 * Memory is bounded by the fiber runs of that window.
 *
 * The core pass skips zone events inside fibers (analysis.c); this pass feeds each completed
 * fiber zone back into the zone table with mprof__analysis_fiber_zone, so `mprof report` zone
 * statistics include them. A zone's duration is wall time from begin to end, time suspended
 * included. A scheduling gap is the time from a fiber's leave to its next enter.
 */
#include "analysis/analysis.h"
#include "analysis/passes.h"
#include "util/umap.h"
#include "util/grow.h"
#include "util/tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define REORDER_WINDOW_NS 200000000ll /* 200 ms, as in the memory pass */
#define DRAIN_STEP_NS 10000000ll      /* 10 ms */
#define SPARE_SEGMENTS 4096

typedef struct zop {
    int64_t ts;
    uint32_t loc; /* 0 = end */
} zop;

typedef struct segment {
    uint32_t fiber, thread;
    int64_t enter, leave;
    int closed;
    zop *ops;
    uint32_t n_ops, cap_ops;
} segment;

typedef struct open_zone {
    uint32_t loc;
    int64_t start, child;
} open_zone;

typedef struct fzone {
    uint32_t loc;
    uint64_t count;
    int64_t total, self;
} fzone;

typedef struct fiber_acc {
    uint32_t name;
    segment **pending; /* sorted by enter time */
    uint32_t n_pending, cap_pending;
    open_zone *stack;
    uint32_t depth, cap_stack;
    uint64_t runs, migrations, unmatched_ends;
    int64_t run_total, last_leave;
    uint32_t last_thread;
    mprof_hist gaps;
    fzone *zones;
    uint32_t n_zones, cap_zones;
} fiber_acc;

typedef struct fthread {
    segment *cur;
    int64_t last_ts;
} fthread;

typedef struct fibers_state {
    fiber_acc *fibers;
    uint32_t n_fibers, cap_fibers;
    mprof_umap by_name;
    fthread *threads;
    uint32_t n_threads;
    uint64_t segments;
    int64_t newest;     /* latest timestamp read */
    uint32_t inside;    /* threads inside a fiber now */
    int64_t next_drain; /* the next sweep happens once the watermark passes this */
    unsigned char has_ts[MPROF_EV_MAX]; /* tags whose first field is TS */
    /* Replayed segments kept for the next ones with their ops arrays: a job system switches
     * fibers hundreds of thousands of times, and an allocation per segment and per growth of
     * its ops was a tenth of the pass. */
    segment *spare[SPARE_SEGMENTS];
    uint32_t n_spare;
    /* A bit per fiber whose oldest pending segment is closed: the only ones a sweep can replay,
     * visited in fiber order as a sweep of every fiber would (thousands of fibers, each a
     * cache miss, made the sweeps a tenth of the report). */
    uint64_t *ready;
    uint32_t n_ready;    /* words */
    int64_t *head_enter; /* per fiber with its ready bit: its oldest segment's enter */
    uint32_t n_head;
} fibers_state;

static fthread *get_thread(fibers_state *s, uint32_t idx)
{
    if (mprof_grow_zeroed((void **)&s->threads, &s->n_threads, idx, sizeof *s->threads, 1u << 20))
        return NULL;
    return &s->threads[idx];
}

static int get_fiber(fibers_state *s, uint32_t name, uint32_t *out)
{
    uint32_t *p = mprof_umap_get(&s->by_name, (uint64_t)name + 1);
    if (p) {
        *out = *p;
        return 0;
    }
    if (mprof_array_reserve((void **)&s->fibers, &s->cap_fibers, s->n_fibers + 1,
                            sizeof *s->fibers) ||
        mprof_grow_zeroed((void **)&s->ready, &s->n_ready, s->n_fibers >> 6, sizeof *s->ready,
                          1u << 26) ||
        mprof_grow_zeroed((void **)&s->head_enter, &s->n_head, s->n_fibers,
                          sizeof *s->head_enter, 1u << 31))
        return -1;
    if (mprof_umap_put(&s->by_name, (uint64_t)name + 1, s->n_fibers) != 0)
        return -1;
    memset(&s->fibers[s->n_fibers], 0, sizeof *s->fibers);
    s->fibers[s->n_fibers].name = name;
    *out = s->n_fibers++;
    return 0;
}

static void seg_free(segment *g)
{
    if (g) {
        free(g->ops);
        free(g);
    }
}

/* A replayed segment goes back to the spares (or is freed past SPARE_SEGMENTS). */
static void seg_done(fibers_state *s, segment *g)
{
    if (s->n_spare < SPARE_SEGMENTS)
        s->spare[s->n_spare++] = g;
    else
        seg_free(g);
}

static segment *seg_new(fibers_state *s)
{
    if (!s->n_spare)
        return calloc(1, sizeof(segment));
    segment *g = s->spare[--s->n_spare];
    /* Spares were replayed long ago and have left the cache: the next two are fetched now, the
     * header of the one after next and the ops of the next, whose header came last time. */
    if (s->n_spare >= 2)
        __builtin_prefetch(s->spare[s->n_spare - 2], 1);
    if (s->n_spare >= 1)
        __builtin_prefetch(s->spare[s->n_spare - 1]->ops, 1);
    zop *ops = g->ops;
    uint32_t cap = g->cap_ops;
    *g = (segment){.ops = ops, .cap_ops = cap};
    return g;
}

static void fiber_zone_end(fiber_acc *f, mprof_analysis *a, int64_t ts)
{
    if (!f->depth) {
        f->unmatched_ends++;
        return;
    }
    open_zone z = f->stack[--f->depth];
    int64_t dur;
    if (__builtin_sub_overflow(ts, z.start, &dur) || dur < 0)
        dur = 0; /* out-of-order or corrupt timestamps */
    int64_t self = dur - z.child > 0 ? dur - z.child : 0;
    if (f->depth)
        f->stack[f->depth - 1].child += dur;
    int nested = 0; /* recursion: the outer instance already counts this time */
    for (uint32_t k = 0; k < f->depth && !nested; k++)
        nested = f->stack[k].loc == z.loc;
    fzone *fz = NULL;
    for (uint32_t i = 0; i < f->n_zones; i++)
        if (f->zones[i].loc == z.loc)
            fz = &f->zones[i];
    if (!fz && f->n_zones == f->cap_zones) {
        uint32_t nc = f->cap_zones ? f->cap_zones * 2 : 16;
        fzone *n = realloc(f->zones, nc * sizeof *n);
        if (n) {
            f->zones = n;
            f->cap_zones = nc;
        }
    }
    if (!fz && f->n_zones < f->cap_zones) {
        fz = &f->zones[f->n_zones++];
        *fz = (fzone){z.loc, 0, 0, 0};
    }
    if (fz) {
        fz->count++;
        fz->total += nested ? 0 : dur;
        fz->self += self;
    }
    mprof__analysis_fiber_zone(a, z.loc, z.start, dur, self, nested);
}

static void replay(fiber_acc *f, mprof_analysis *a, segment *g)
{
    if (f->runs) {
        int64_t gap = g->enter - f->last_leave;
        mprof_hist_add(&f->gaps, (uint64_t)(gap > 0 ? gap : 0));
        if (g->thread != f->last_thread)
            f->migrations++;
    }
    f->runs++;
    f->run_total += g->leave > g->enter ? g->leave - g->enter : 0;
    f->last_leave = g->leave;
    f->last_thread = g->thread;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        zop *o = &g->ops[i];
        if (!o->loc) {
            fiber_zone_end(f, a, o->ts);
            continue;
        }
        if (MPROF_GROW(f->stack, f->cap_stack, f->depth + 1, 16) != 0)
            continue;
        f->stack[f->depth++] = (open_zone){o->loc == UINT32_MAX ? 0 : o->loc, o->ts, 0};
    }
}

/* Sets fiber fi's ready bit from its oldest pending segment. */
static inline void ready_update(fibers_state *s, uint32_t fi)
{
    const fiber_acc *f = &s->fibers[fi];
    uint64_t bit = (uint64_t)1 << (fi & 63);
    if (f->n_pending && f->pending[0]->closed) {
        s->ready[fi >> 6] |= bit;
        s->head_enter[fi] = f->pending[0]->enter;
    } else {
        s->ready[fi >> 6] &= ~bit;
    }
}

/* Replays every fiber's closed segments that can no longer be preceded by an unread one. */
static void drain(fibers_state *s, mprof_analysis *a, int all)
{
    int64_t wm = s->newest - REORDER_WINDOW_NS;
    /* Sweep every fiber at most once per DRAIN_STEP_NS of capture time, not on every switch:
     * job systems have thousands of fibers. */
    if (!all) {
        if (wm < s->next_drain)
            return;
        s->next_drain = wm + DRAIN_STEP_NS;
    }
    for (uint32_t w = 0; w < s->n_ready; w++) {
        for (uint64_t bits = s->ready[w]; bits; bits &= bits - 1) {
            uint32_t fi = w * 64 + (uint32_t)__builtin_ctzll(bits);
            if (!all && s->head_enter[fi] > wm)
                continue;
            fiber_acc *f = &s->fibers[fi];
            uint32_t k = 0;
            /* A pending segment was written a reorder window ago and has left the cache: the
             * segments ahead are fetched while one is replayed (the header two ahead, the ops
             * of the next, whose header came one replay earlier). */
            if (f->n_pending > 1)
                __builtin_prefetch(f->pending[1]);
            if (f->n_pending)
                __builtin_prefetch(f->pending[0]->ops);
            while (k < f->n_pending && f->pending[k]->closed &&
                   (all || f->pending[k]->enter <= wm)) {
                if (k + 2 < f->n_pending)
                    __builtin_prefetch(f->pending[k + 2]);
                if (k + 1 < f->n_pending)
                    __builtin_prefetch(f->pending[k + 1]->ops);
                replay(f, a, f->pending[k]);
                seg_done(s, f->pending[k]);
                k++;
            }
            if (k) {
                memmove(f->pending, f->pending + k, (f->n_pending - k) * sizeof *f->pending);
                f->n_pending -= k;
                ready_update(s, fi);
            }
        }
    }
}

static void close_segment(fibers_state *s, mprof_analysis *a, fthread *t, int64_t ts)
{
    if (!t->cur)
        return;
    segment *g = t->cur;
    g->leave = ts;
    g->closed = 1;
    if (s->fibers[g->fiber].pending[0] == g)
        ready_update(s, g->fiber);
    t->cur = NULL;
    s->inside--;
    drain(s, a, 0);
}

static void open_segment(fibers_state *s, fthread *t, uint32_t thread, uint32_t name, int64_t ts)
{
    uint32_t fi;
    if (get_fiber(s, name, &fi) != 0)
        return;
    fiber_acc *f = &s->fibers[fi];
    if (f->n_pending == f->cap_pending) {
        uint32_t nc = f->cap_pending ? f->cap_pending * 2 : 8;
        segment **n = realloc(f->pending, nc * sizeof *n);
        if (!n)
            return;
        f->pending = n;
        f->cap_pending = nc;
    }
    segment *g = seg_new(s);
    if (!g)
        return;
    g->fiber = fi;
    g->thread = thread;
    g->enter = g->leave = ts;
    uint32_t at = f->n_pending;
    while (at > 0 && f->pending[at - 1]->enter > ts)
        at--;
    memmove(f->pending + at + 1, f->pending + at, (f->n_pending - at) * sizeof *f->pending);
    f->pending[at] = g;
    if (at == 0)
        ready_update(s, fi); /* an open segment is now the oldest */
    f->n_pending++;
    s->segments++;
    t->cur = g;
    s->inside++;
}

static void add_op(segment *g, int64_t ts, uint32_t loc)
{
    if (MPROF_GROW(g->ops, g->cap_ops, g->n_ops + 1, 16) != 0)
        return;
    g->ops[g->n_ops++] = (zop){ts, loc};
}

static void *fibers_create(mprof_analysis *a)
{
    (void)a;
    fibers_state *s = calloc(1, sizeof(fibers_state));
    for (int t = 0; s && t < MPROF_EV_MAX; t++) {
        const mprof_event_desc *d = mprof_event_desc_get(t);
        s->has_ts[t] = d && d->has_ts;
    }
    return s;
}

/* A fiber event (enter, leave, a thread's exit) of thread t, whose zone events before it have
 * been read. */
static void fiber_event(fibers_state *s, mprof_analysis *a, fthread *t, const mprof_event *ev)
{
    switch (ev->type) {
    case MPROF_EV_FIBER_ENTER:
        /* Entering a fiber while in another implies leaving the first. */
        close_segment(s, a, t, ev->ts_ns);
        open_segment(s, t, ev->thread, (uint32_t)ev->u[0], ev->ts_ns);
        break;
    case MPROF_EV_FIBER_LEAVE:
    case MPROF_EV_THREAD_EXIT:
        close_segment(s, a, t, ev->ts_ns);
        break;
    default:
        break;
    }
}

/* Every record in file order: each thread's latest time, the newest time overall (the replay's
 * watermark), and the zone events of threads inside a fiber, which go to the fiber's run. */
static void fibers_batch(void *state, mprof_analysis *a, const mprof_batch *b)
{
    fibers_state *s = state;
    /* No thread inside a fiber and no fiber event in the batch (fiber events come whole, in
     * b->ev): only the newest time moves, and the batch's latest time is it (every event of the
     * read is a record; one without a time counts as 0, before any drain can happen). A
     * thread's latest time matters only inside a fiber, where a later batch sets it again. */
    if (!s->inside && b->max_ts_ns >= 0) {
        uint32_t i = 0;
        while (i < b->n_ev && b->ev[i].type != MPROF_EV_FIBER_ENTER &&
               b->ev[i].type != MPROF_EV_FIBER_LEAVE && b->ev[i].type != MPROF_EV_THREAD_EXIT)
            i++;
        if (i == b->n_ev) {
            if (b->max_ts_ns > s->newest)
                s->newest = b->max_ts_ns;
            return;
        }
    }
    int64_t newest = s->newest;
    for (uint32_t ri = 0; ri < b->n_run; ri++) {
        const mprof_run *run = &b->run[ri];
        fthread *t = NULL;
        segment *cur = NULL; /* t->cur, which only a fiber event changes */
        int64_t last = 0;
        int timed = 0;
        for (const mprof_rec *e = b->rec + run->first, *end = b->rec + run->end; e < end; e++) {
            int type = mprof_rec_type(e);
            if (type < 0x10 && type != MPROF_EV_THREAD_EXIT)
                continue;
            if (!t) {
                if (!(t = get_thread(s, run->thread)))
                    break;
                cur = t->cur;
            }
            int64_t ts = e->ts_ns;
            if (type == MPROF_REC_LEAF) {
                int64_t te = ts + mprof_rec_dur(e); /* te >= ts */
                last = te;
                timed = 1;
                newest = te > newest ? te : newest;
                if (cur) {
                    add_op(cur, ts, e->x ? e->x : UINT32_MAX);
                    add_op(cur, te, 0);
                }
                continue;
            }
            if (type == MPROF_EV_ZONE_BEGIN || type == MPROF_EV_ZONE_END) {
                last = ts;
                timed = 1;
                newest = ts > newest ? ts : newest;
                if (cur)
                    add_op(cur, ts, type == MPROF_EV_ZONE_END ? 0 : e->x ? e->x : UINT32_MAX);
                continue;
            }
            if (s->has_ts[type]) {
                last = ts;
                timed = 1;
                newest = ts > newest ? ts : newest;
            }
            if (type == MPROF_EV_FIBER_ENTER || type == MPROF_EV_FIBER_LEAVE ||
                type == MPROF_EV_THREAD_EXIT) {
                s->newest = newest;
                if (timed)
                    t->last_ts = last;
                fiber_event(s, a, t, &b->ev[e->x]);
                cur = t->cur;
            }
        }
        if (t && timed)
            t->last_ts = last;
    }
    s->newest = newest;
}

static void fibers_finish(void *state, mprof_analysis *a)
{
    fibers_state *s = state;
    for (uint32_t i = 0; i < s->n_threads; i++)
        if (s->threads[i].cur)
            close_segment(s, a, &s->threads[i], s->threads[i].last_ts);
    drain(s, a, 1);
}

static void fibers_destroy(void *state)
{
    fibers_state *s = state;
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n_fibers; i++) {
        fiber_acc *f = &s->fibers[i];
        for (uint32_t k = 0; k < f->n_pending; k++)
            seg_free(f->pending[k]);
        free(f->pending);
        free(f->stack);
        free(f->zones);
        mprof_hist_free(&f->gaps);
    }
    for (uint32_t i = 0; i < s->n_spare; i++)
        seg_free(s->spare[i]);
    free(s->ready);
    free(s->head_enter);
    free(s->fibers);
    mprof_umap_free(&s->by_name);
    free(s->threads);
    free(s);
}

/* ---- output --------------------------------------------------------------------------------- */

static const char *fiber_name(const mprof_analysis *a, const fiber_acc *f)
{
    const char *n = f->name ? mprof_reader_string(mprof_analysis_reader(a), f->name) : NULL;
    return n ? n : "(unnamed fiber)";
}

static const char *zone_name(const mprof_analysis *a, uint32_t loc)
{
    const mprof_srcloc_def *d =
        loc && loc != UINT32_MAX ? mprof_reader_srcloc(mprof_analysis_reader(a), loc) : NULL;
    return d && d->name ? d->name : "?";
}

static int cmp_fzone(const void *x, const void *y)
{
    const fzone *a = x, *b = y;
    return (a->total < b->total) - (a->total > b->total);
}

static void fibers_print_text(void *state, mprof_analysis *a, FILE *out, int top_n)
{
    fibers_state *s = state;
    if (!mprof__analysis_wants(a, "fibers"))
        return;
    fprintf(out, "\nFibers\n");
    if (!s->n_fibers) {
        fprintf(out, "  no fiber events (MPROF_FIBER_ENTER/MPROF_FIBER_LEAVE)\n");
        return;
    }
    fprintf(out, "  %-20s %8s %8s %10s %10s %10s %10s %10s\n", "fiber", "runs", "moved",
            "run ms", "gap p50", "gap p95", "gap max", "open zones");
    for (uint32_t i = 0; i < s->n_fibers && (int)i < top_n; i++) {
        fiber_acc *f = &s->fibers[i];
        char e[256];
        fprintf(out, "  %-20s %8" PRIu64 " %8" PRIu64 " %10.3f %8.3fms %8.3fms %8.3fms %10u\n",
                tool_text(fiber_name(a, f), e, sizeof e), f->runs, f->migrations, (double)f->run_total / 1e6,
                (double)mprof_hist_quantile(&f->gaps, 0.5) / 1e6,
                (double)mprof_hist_quantile(&f->gaps, 0.95) / 1e6, (double)f->gaps.max / 1e6,
                f->depth);
        if (f->n_zones > 1)
            qsort(f->zones, f->n_zones, sizeof *f->zones, cmp_fzone);
        for (uint32_t k = 0; k < f->n_zones && k < 5; k++)
            fprintf(out, "      %-30s %8" PRIu64 " x %10.3f ms\n",
                    tool_text(zone_name(a, f->zones[k].loc), e, sizeof e),
                    f->zones[k].count, (double)f->zones[k].total / 1e6);
    }
}

static void fibers_print_json(void *state, mprof_analysis *a, mprof_json *j)
{
    fibers_state *s = state;
    if (!mprof__analysis_wants(a, "fibers"))
        return;
    mprof_json_arr_begin(j, "fibers");
    for (uint32_t i = 0; i < s->n_fibers; i++) {
        fiber_acc *f = &s->fibers[i];
        mprof_json_obj_begin(j, NULL);
        mprof_json_str(j, "name", fiber_name(a, f));
        mprof_json_u64(j, "runs", f->runs);
        mprof_json_u64(j, "resumes", f->runs ? f->runs - 1 : 0);
        mprof_json_u64(j, "migrations", f->migrations);
        mprof_json_f64(j, "run_ms", (double)f->run_total / 1e6);
        mprof_json_obj_begin(j, "gap_ms");
        mprof_json_u64(j, "count", f->gaps.n);
        mprof_json_f64(j, "p50", (double)mprof_hist_quantile(&f->gaps, 0.5) / 1e6);
        mprof_json_f64(j, "p95", (double)mprof_hist_quantile(&f->gaps, 0.95) / 1e6);
        mprof_json_f64(j, "max", (double)f->gaps.max / 1e6);
        mprof_json_f64(j, "mean", mprof_hist_mean(&f->gaps) / 1e6);
        mprof_json_obj_end(j);
        mprof_json_u64(j, "open_zones_at_end", f->depth);
        mprof_json_u64(j, "unmatched_zone_ends", f->unmatched_ends);
        if (f->n_zones > 1)
            qsort(f->zones, f->n_zones, sizeof *f->zones, cmp_fzone);
        mprof_json_arr_begin(j, "zones");
        for (uint32_t k = 0; k < f->n_zones; k++) {
            mprof_json_obj_begin(j, NULL);
            mprof_json_str(j, "name", zone_name(a, f->zones[k].loc));
            mprof_json_u64(j, "count", f->zones[k].count);
            mprof_json_f64(j, "total_ms", (double)f->zones[k].total / 1e6);
            mprof_json_f64(j, "self_ms", (double)f->zones[k].self / 1e6);
            mprof_json_obj_end(j);
        }
        mprof_json_arr_end(j);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
}

/* Zones and the other events come as records: only their times and threads matter here. */
static void fibers_fields(unsigned char need[MPROF_EV_MAX])
{
    need[MPROF_EV_FIBER_ENTER] = need[MPROF_EV_FIBER_LEAVE] = need[MPROF_EV_THREAD_EXIT] = 1;
}

const mprof_pass_vtbl mprof__fibers_pass = {
    .name = "fibers",
    .always = true, /* fiber zones must reach the zone table even without --fibers */
    .create = fibers_create,
    .batch = fibers_batch,
    .fields = fibers_fields,
    .finish = fibers_finish,
    .print_text = fibers_print_text,
    .print_json = fibers_print_json,
    .destroy = fibers_destroy,
};

/* ---- results for tests and tools (passes.h) ------------------------------------------------- */

static fiber_acc *find_fiber(mprof_analysis *a, const char *name)
{
    fibers_state *s = mprof_analysis_pass_state(a, "fibers");
    for (uint32_t i = 0; s && i < s->n_fibers; i++)
        if (strcmp(fiber_name(a, &s->fibers[i]), name) == 0)
            return &s->fibers[i];
    return NULL;
}

int mprof__fibers_get(mprof_analysis *a, const char *name, mprof_fiber_result *out)
{
    fiber_acc *f = find_fiber(a, name);
    if (!f)
        return -1;
    *out = (mprof_fiber_result){
        .name = fiber_name(a, f),
        .runs = f->runs,
        .migrations = f->migrations,
        .unmatched_zone_ends = f->unmatched_ends,
        .open_zones = f->depth,
        .run_ns = f->run_total,
        .gap_count = f->gaps.n,
        .gap_p50_ns = mprof_hist_quantile(&f->gaps, 0.5),
        .gap_p95_ns = mprof_hist_quantile(&f->gaps, 0.95),
        .gap_max_ns = f->gaps.max,
    };
    return 0;
}

int mprof__fibers_zone(mprof_analysis *a, const char *fiber, const char *zone,
                       mprof_fiber_zone_result *out)
{
    fiber_acc *f = find_fiber(a, fiber);
    for (uint32_t i = 0; f && i < f->n_zones; i++)
        if (strcmp(zone_name(a, f->zones[i].loc), zone) == 0) {
            *out = (mprof_fiber_zone_result){f->zones[i].count, f->zones[i].total,
                                             f->zones[i].self};
            return 0;
        }
    return -1;
}
