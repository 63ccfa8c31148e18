/*
 * analysis.c - the core statistics pass (frames, zones, plots, messages, threads, events) and
 * the driver that runs every pass over one streaming read of a capture.
 *
 * Zones are matched per thread with a stack. Durations feed a histogram per source location, so
 * memory is bounded by the number of source locations; frame durations are kept exactly (one
 * double per frame), since frames are few and the gate needs exact percentiles.
 */
#include "analysis/analysis.h"
#include "analysis/range.h"
#include "analysis/site_stats.h"
#include "analysis/span_read.h"
#include "analysis/system.h"
#include "util/grow.h"
#include "util/tool.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Optional passes, added by their modules. */
extern const mprof_pass_vtbl mprof__pass_gpu;
static const mprof_pass_vtbl *const pass_table[] = {
    &mprof__pass_gpu,
    &mprof__memory_pass,
    &mprof__locks_pass,
    &mprof__fibers_pass,
    &mprof__system_pass,
    &mprof__async_pass,
    &mprof__process_pass,
    NULL,
};

typedef struct zone_frame {
    uint32_t loc;
    int64_t start;
    int64_t child;
} zone_frame;

typedef struct thread_acc {
    zone_frame *stack;
    uint32_t depth, cap;
    uint64_t events, zones;
    uint64_t unmatched_ends, lost_open;
    int had_loss; /* a LOST record was seen on this thread */
    int seen;
    int in_fiber; /* between FIBER_ENTER and FIBER_LEAVE: zones go to the fibers pass */
    int lost_since_mark; /* events were lost on this thread since its last frame mark */
    int top_open;        /* a top-level zone is open (coverage, on the main frame thread) */
    int64_t top_start;
} thread_acc;

/* A site's figures: site_stats.h, the one definition shared with every other output. */
typedef mprof_site_stat zone_acc;

typedef struct series {
    double *v;
    uint64_t n, cap;
} series;

typedef struct frameset {
    uint32_t name; /* string id; 0 = the main frame set */
    int64_t last_mark;
    int64_t open_begin; /* FRAME_BEGIN time, -1 when closed */
    int discontinuous;
    uint32_t thread;      /* thread of the last mark or begin */
    int tainted;          /* events of that thread were lost inside the open frame */
    uint64_t incomplete;  /* frames that spanned lost events: not in ms */
    series ms;
} frameset;

typedef struct plot_acc {
    uint64_t count;
    double min, max, sum, last;
    int fmt, style;
    uint32_t color;
} plot_acc;

struct mprof_analysis {
    mprof_reader *r;
    char path[1024];
    mprof_reader_stats rst;
    thread_acc *threads;
    uint32_t n_threads;
    zone_acc *zones;
    uint32_t n_zones;
    frameset *sets;
    uint32_t n_sets;
    plot_acc *plots; /* indexed by string id */
    uint32_t n_plots;
    uint64_t msgs[7];
    uint64_t events, lost, unmatched_ends;
    uint64_t unmatched_after_loss; /* of unmatched_ends: on a thread after its events were lost */
    int64_t first_ts, last_ts;
    int have_ts;
    /* By tag: whether the core pass counts it (1) and whether it has a time (2), looked up for
     * every event. */
    unsigned char tag_kind[MPROF_EV_MAX];
    /* hot-path coverage on the thread that marks main frames (the thread of the first unnamed
     * frame mark) */
    uint32_t main_thread;
    /* The process whose frame marks make the frame sets (the first to mark: a capture of several
     * processes has each one's in processes[], process_pass.c); 0 in a one-process capture. */
    uint32_t frames_process;
    int frames_process_set;
    int64_t first_mark, last_mark;
    int64_t covered, covered_at_last_mark;
    /* The main frames' span (-1: no main frames): from a first read of the frame marks, or, in
     * one read, from the marks read so far (span_read.h). */
    int64_t span_first, span_last;
    int one_read;
    mprof_span_read sp; /* one read: the span settled as the marks come (span_read.h) */
    /* One read: the records kept for the passes whose prescan needs a read of the zones after
     * it (records_only), while they fit in KEEP_MAX bytes. */
    int keep_on, keep_over;
    mprof_rec *keep_rec;
    mprof_run *keep_run;
    uint32_t n_keep_rec, cap_keep_rec, n_keep_run, cap_keep_run;
    mprof_analysis_opts opts;
    void *pass_state[sizeof pass_table / sizeof pass_table[0]];
    int pass_on[sizeof pass_table / sizeof pass_table[0]];
    int pass_pre[sizeof pass_table / sizeof pass_table[0]];  /* in its prescan (one read) */
    int pass_read[sizeof pass_table / sizeof pass_table[0]]; /* takes part in this read */
};

#define GROW(arr, n, idx) mprof_grow_zeroed((void **)&(arr), &(n), (idx), sizeof *(arr), 1u << 24)

static int series_add(series *s, double v)
{
    if (MPROF_GROW(s->v, s->cap, s->n + 1, 256) != 0)
        return -1;
    s->v[s->n++] = v;
    return 0;
}

static frameset *get_set(mprof_analysis *a, uint32_t name)
{
    for (uint32_t i = 0; i < a->n_sets; i++)
        if (a->sets[i].name == name)
            return &a->sets[i];
    frameset *p = realloc(a->sets, (a->n_sets + 1) * sizeof *p);
    if (!p)
        return NULL;
    a->sets = p;
    frameset *f = &a->sets[a->n_sets++];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->last_mark = -1;
    f->open_begin = -1;
    return f;
}

static void zone_begin(mprof_analysis *a, thread_acc *t, uint32_t tid, uint32_t loc, int64_t ts)
{
    if (MPROF_GROW(t->stack, t->cap, t->depth + 1, 32) != 0)
        return;
    t->stack[t->depth++] = (zone_frame){loc, ts, 0};
    (void)a;
    (void)tid;
    if (t->depth == 1) {
        t->top_open = 1;
        t->top_start = ts;
    }
}

/* The accumulator of loc, NULL when the reader does not know the location (yet). A location
 * with a call counted is known (once defined, a location stays defined), so the reader is asked
 * once per location. */
static inline __attribute__((always_inline)) zone_acc *zone_of(mprof_analysis *a, uint32_t loc)
{
    if (loc < a->n_zones && a->zones[loc].count)
        return &a->zones[loc];
    if (!mprof_reader_srcloc(a->r, loc) || GROW(a->zones, a->n_zones, loc) != 0)
        return NULL;
    return &a->zones[loc];
}

/* Adds one completed call. nested: another instance of loc was open on the same track. */
static inline __attribute__((always_inline)) void add_zone(mprof_analysis *a, uint32_t loc,
                                                           int64_t start, int64_t dur,
                                                           int64_t self, int nested)
{
    zone_acc *z = zone_of(a, loc);
    if (!z)
        return;
    int outermost = mprof__site_outermost(nested, 0, 0);
    if (!a->one_read) {
        mprof_frame_span span = {a->span_first, a->span_last};
        mprof__site_add(z, &span, start, dur, self, outermost);
        return;
    }
    mprof__site_add(z, NULL, start, dur, self, outermost);
    if (outermost && dur > 0)
        mprof__span_zone(&a->sp, a->zones, loc, start, start + dur);
}

static void zone_end(mprof_analysis *a, thread_acc *t, uint32_t tid, int64_t ts)
{
    if (!t->depth) {
        t->unmatched_ends++;
        a->unmatched_ends++;
        if (t->had_loss)
            a->unmatched_after_loss++;
        return;
    }
    zone_frame f = t->stack[--t->depth];
    int64_t dur;
    if (__builtin_sub_overflow(ts, f.start, &dur) || dur < 0)
        dur = 0; /* out-of-order or corrupt timestamps */
    if (t->depth)
        t->stack[t->depth - 1].child += dur;
    int nested = 0;
    for (uint32_t k = 0; k < t->depth && !nested; k++)
        nested = t->stack[k].loc == f.loc;
    add_zone(a, f.loc, f.start, dur, dur - f.child > 0 ? dur - f.child : 0, nested);
    t->zones++;
    if (t->depth == 0 && t->top_open) {
        if (a->first_mark >= 0 && tid == a->main_thread) {
            int64_t s = t->top_start > a->first_mark ? t->top_start : a->first_mark;
            if (ts > s)
                a->covered += ts - s;
        }
        t->top_open = 0;
    }
}

/* Whether a frame event of thread tid belongs to the process of the frame sets. */
static int frames_process_of(mprof_analysis *a, uint32_t tid)
{
    const mprof_thread_def *d = mprof_reader_thread(a->r, tid);
    uint32_t p = d ? d->process : 0;
    if (!a->frames_process_set) {
        a->frames_process = p;
        a->frames_process_set = 1;
    }
    return p == a->frames_process;
}

static void frame_mark(mprof_analysis *a, uint32_t tid, uint32_t name, int64_t ts)
{
    frameset *f = get_set(a, name);
    if (!f)
        return;
    if (f->last_mark >= 0 && f->tainted)
        f->incomplete++; /* marks may have been lost inside it: not a real frame */
    else if (f->last_mark >= 0)
        series_add(&f->ms, (double)(ts - f->last_mark) / 1e6);
    f->last_mark = ts;
    f->thread = tid;
    f->tainted = 0;
    if (name != 0)
        return;
    if (!a->main_thread)
        a->main_thread = tid;
    if (tid != a->main_thread)
        return;
    if (a->one_read)
        mprof__span_mark(&a->sp, ts);
    thread_acc *t = &a->threads[tid]; /* grown by core_event */
    if (a->first_mark < 0) {
        a->first_mark = ts;
        if (t->top_open)
            t->top_start = ts;
    }
    a->last_mark = ts;
    int64_t open = 0;
    if (t->top_open) {
        int64_t s = t->top_start > a->first_mark ? t->top_start : a->first_mark;
        open = ts > s ? ts - s : 0;
    }
    a->covered_at_last_mark = a->covered + open;
}

/* Counts an event of thread tid and follows its time: what every event does to the core
 * tables. NULL when the event does not count. */
static inline thread_acc *core_count(mprof_analysis *a, uint32_t tid, int type, int64_t ts)
{
    unsigned kind = a->tag_kind[type & (MPROF_EV_MAX - 1)];
    if (!(kind & 1) || GROW(a->threads, a->n_threads, tid) != 0)
        return NULL;
    thread_acc *t = &a->threads[tid];
    t->seen = 1;
    t->events++;
    a->events++;
    if (kind & 2) {
        if (!a->have_ts || ts < a->first_ts)
            a->first_ts = ts;
        if (!a->have_ts || ts > a->last_ts)
            a->last_ts = ts;
        a->have_ts = 1;
    }
    return t;
}

static void core_event(mprof_analysis *a, const mprof_event *ev)
{
    uint32_t tid = ev->thread;
    thread_acc *t = core_count(a, tid, ev->type, ev->ts_ns);
    if (!t)
        return;
    switch (ev->type) {
    case MPROF_EV_ZONE_BEGIN:
        if (!t->in_fiber)
            zone_begin(a, t, tid, (uint32_t)ev->u[0], ev->ts_ns);
        break;
    case MPROF_EV_ZONE_END:
        if (!t->in_fiber)
            zone_end(a, t, tid, ev->ts_ns);
        break;
    /* Fiber zones are matched by the fibers pass, which orders a fiber's runs across threads
     * and reports each zone back through mprof__analysis_fiber_zone. */
    case MPROF_EV_FIBER_ENTER:
        t->in_fiber = 1;
        break;
    case MPROF_EV_FIBER_LEAVE:
    case MPROF_EV_THREAD_EXIT:
        t->in_fiber = 0;
        break;
    case MPROF_EV_LOST:
        a->lost += ev->u[0];
        /* Zones open across the gap cannot be trusted: drop them (counted). */
        t->had_loss = 1;
        t->lost_open += t->depth;
        t->depth = 0;
        t->top_open = 0;
        /* Frame marks of this thread may be among the lost events: the frame open across the
         * gap is flagged incomplete instead of being stitched into one long frame. */
        for (uint32_t i = 0; i < a->n_sets; i++)
            if (a->sets[i].thread == tid && (a->sets[i].last_mark >= 0 || a->sets[i].open_begin >= 0))
                a->sets[i].tainted = 1;
        break;
    case MPROF_EV_FRAME_MARK:
        if (frames_process_of(a, tid))
            frame_mark(a, tid, (uint32_t)ev->u[0], ev->ts_ns);
        break;
    case MPROF_EV_FRAME_BEGIN: {
        frameset *f = frames_process_of(a, tid) ? get_set(a, (uint32_t)ev->u[0]) : NULL;
        if (f) {
            f->discontinuous = 1;
            f->open_begin = ev->ts_ns;
            f->thread = tid;
            f->tainted = 0;
        }
        break;
    }
    case MPROF_EV_FRAME_END: {
        frameset *f = frames_process_of(a, tid) ? get_set(a, (uint32_t)ev->u[0]) : NULL;
        if (f && f->open_begin >= 0) {
            if (f->tainted)
                f->incomplete++;
            else
                series_add(&f->ms, (double)(ev->ts_ns - f->open_begin) / 1e6);
            f->open_begin = -1;
            f->tainted = 0;
        }
        break;
    }
    case MPROF_EV_PLOT_F64:
    case MPROF_EV_PLOT_I64: {
        uint32_t id = (uint32_t)ev->u[0];
        if (!mprof_reader_string(a->r, id) || GROW(a->plots, a->n_plots, id) != 0)
            break; /* a plot must name a defined string */
        plot_acc *p = &a->plots[id];
        double v = ev->type == MPROF_EV_PLOT_F64 ? mprof_event_f64(ev, 1) : (double)(int64_t)ev->u[1];
        if (!p->count || v < p->min)
            p->min = v;
        if (!p->count || v > p->max)
            p->max = v;
        p->count++;
        p->sum += v;
        p->last = v;
        break;
    }
    case MPROF_EV_PLOT_CONFIG: {
        uint32_t id = (uint32_t)ev->u[0];
        if (!mprof_reader_string(a->r, id) || GROW(a->plots, a->n_plots, id) != 0)
            break;
        a->plots[id].fmt = (int)ev->u[1];
        a->plots[id].style = (int)ev->u[2];
        a->plots[id].color = (uint32_t)ev->u[3];
        break;
    }
    case MPROF_EV_MESSAGE:
        a->msgs[ev->u[0] <= 6 ? ev->u[0] : 0]++;
        break;
    default:
        break;
    }
}

/* A zone without children (a ZONE_LEAF record): what zone_begin then zone_end do, without the
 * stack. */
static inline __attribute__((always_inline)) void leaf_zone(mprof_analysis *a, thread_acc *t,
                                                            uint32_t tid, uint32_t loc,
                                                            int64_t start, int64_t dur)
{
    uint32_t d = t->depth;
    if (d)
        t->stack[d - 1].child += dur;
    int nested = 0;
    for (uint32_t k = 0; k < d && !nested; k++)
        nested = t->stack[k].loc == loc;
    add_zone(a, loc, start, dur, dur, nested);
    t->zones++;
    if (d == 0) {
        if (a->first_mark >= 0 && tid == a->main_thread) {
            int64_t s = start > a->first_mark ? start : a->first_mark;
            if (start + dur > s)
                a->covered += start + dur - s;
        }
        t->top_open = 0;
    }
}

/* The core pass reads the records ahead of where it is: with two jobs or more a worker decodes
 * a whole chunk (megabytes of records) before its turn to consume it comes, and by then they
 * have left its core's second-level cache (a load of a record was a fifth of the pass; reading
 * a kilobyte ahead took 5 % off bench_core's report with two jobs). */
#define PREFETCH_RECS 64

/* The core pass over a batch: zone records take the short way, every other record goes through
 * core_event. */
static void core_batch(mprof_analysis *a, const mprof_batch *b)
{
    for (uint32_t ri = 0; ri < b->n_run; ri++) {
        const mprof_run *run = &b->run[ri];
        uint32_t tid = run->thread;
        if (GROW(a->threads, a->n_threads, tid) != 0)
            continue;
        thread_acc *t = &a->threads[tid];
        uint64_t n = 0;
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (const mprof_rec *e = b->rec + run->first, *end = b->rec + run->end; e < end; e++) {
            /* (as an integer: past the batch's end it names no record) */
            __builtin_prefetch((const void *)((uintptr_t)e + PREFETCH_RECS * sizeof *e));
            int64_t ts = e->ts_ns;
            switch (mprof_rec_type(e)) {
            case MPROF_REC_LEAF: {
                int64_t dur = mprof_rec_dur(e);
                n += 2;
                lo = ts < lo ? ts : lo;
                hi = ts + dur > hi ? ts + dur : hi;
                if (!t->in_fiber)
                    leaf_zone(a, t, tid, e->x, ts, dur);
                break;
            }
            case MPROF_EV_ZONE_BEGIN:
                n++;
                lo = ts < lo ? ts : lo;
                hi = ts > hi ? ts : hi;
                if (!t->in_fiber)
                    zone_begin(a, t, tid, e->x, ts);
                break;
            case MPROF_EV_ZONE_END:
                n++;
                lo = ts < lo ? ts : lo;
                hi = ts > hi ? ts : hi;
                if (!t->in_fiber)
                    zone_end(a, t, tid, ts);
                break;
            default:
                if (e->x == MPROF_REC_NOEV)
                    core_count(a, tid, mprof_rec_type(e), ts);
                else
                    core_event(a, &b->ev[e->x]);
                break;
            }
        }
        if (n) {
            t->seen = 1;
            t->events += n;
            a->events += n;
            if (!a->have_ts || lo < a->first_ts)
                a->first_ts = lo;
            if (!a->have_ts || hi > a->last_ts)
                a->last_ts = hi;
            a->have_ts = 1;
        }
    }
}

/* Seconds between the first and last timestamps (in double: corrupt extremes cannot overflow). */
static double duration_s(const mprof_analysis *a)
{
    return a->have_ts ? ((double)a->last_ts - (double)a->first_ts) / 1e9 : 0.0;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

typedef struct first_ctx {
    mprof_analysis *a;
    const mprof_reader *r;
    uint32_t thread; /* of the main frame marks */
    uint64_t n;      /* main frame marks */
    int64_t lo, hi;
} first_ctx;

/* A batch of the first read: to the prescans, and its main frame marks counted. */
static int first_batch(void *arg, const mprof_batch *b)
{
    first_ctx *c = arg;
    mprof_analysis *a = c->a;
    for (size_t i = 0; pass_table[i]; i++)
        if (a->pass_on[i] && a->pass_state[i] && pass_table[i]->prescan_batch)
            pass_table[i]->prescan_batch(a->pass_state[i], c->r, b);
    for (uint32_t k = 0; k < b->n_ev; k++) {
        const mprof_event *ev = &b->ev[k];
        if (!mprof__is_main_mark(ev, &c->thread))
            continue;
        if (!c->n || ev->ts_ns < c->lo)
            c->lo = ev->ts_ns;
        if (!c->n || ev->ts_ns > c->hi)
            c->hi = ev->ts_ns;
        c->n++;
    }
    return 0;
}

/* The first pass: the span of the main frames (the unnamed frame marks of the thread that made
 * the first one), so that the zone pass can tell time inside frames from start-up and shutdown.
 * Events of different threads are not in time order in a file, so this needs the whole file
 * before the zones are read. Leaves span_first = -1 when there are fewer than two such marks.
 * The passes' prescan hooks see every event of this read (the system pass takes its switches
 * and samples here, so that it need not keep the zones).
 * process_only reads the process chunks alone and takes the span from END (docs/FORMAT.md
 * "Process chunks"): returns 1 when the capture does not allow it (the passes have seen part of
 * it then), else 0, or -1 on error. */
static int first_read(mprof_analysis *a, const char *path, int process_only, char *err,
                      size_t errlen)
{
    a->span_first = a->span_last = -1;
    mprof_reader *r = mprof_reader_open(path, err, errlen);
    if (!r)
        return -1;
    /* Only what the first read needs is handed out: the frame marks and what the passes ask
     * for (the reader still decodes, and counts, the rest). */
    unsigned char want[MPROF_EV_MAX] = {0};
    want[MPROF_EV_FRAME_MARK] = 1;
    for (size_t i = 0; pass_table[i]; i++)
        if (a->pass_on[i] && a->pass_state[i] && pass_table[i]->prescan_want)
            pass_table[i]->prescan_want(want);
    mprof_reader_want(r, want);
    if (process_only)
        mprof_reader_process_only(r);
    if (a->opts.jobs)
        mprof_reader_set_jobs(r, a->opts.jobs);
    first_ctx c = {.a = a, .r = r};
    int rc = mprof_reader_each_batch(r, first_batch, &c);
    uint32_t thread = c.thread;
    uint64_t n = c.n;
    int64_t lo = c.lo, hi = c.hi;
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, mprof_reader_error(r));
        mprof_reader_close(r);
        return -1;
    }
    if (process_only) {
        mprof_main_frames mf;
        if (!mprof_reader_main_frames(r, &mf)) {
            mprof_reader_close(r);
            return 1;
        }
        thread = mf.thread;
        n = mf.marks;
        lo = mf.first_ns;
        hi = mf.last_ns;
    }
    for (size_t i = 0; pass_table[i]; i++)
        if (a->pass_on[i] && a->pass_state[i] && pass_table[i]->prescan_end)
            pass_table[i]->prescan_end(a->pass_state[i], r);
    mprof_reader_close(r);
    if (n >= 2 && hi > lo) {
        a->span_first = lo;
        a->span_last = hi;
    }
    /* The main thread is known before the zones are read, so that a top-level zone already open
     * when the first frame mark comes counts in the coverage from that mark on. */
    a->main_thread = thread;
    return 0;
}

/* The first read of the process chunks alone where the capture keeps them apart (most of the
 * first read's time is otherwise the threads' records it does not use), else of everything.
 * MPROF_FULL_FIRST_READ reads everything, for tests that compare both. */
static int scan_frame_span(mprof_analysis *a, const char *path, char *err, size_t errlen)
{
    const char *sep = mprof_reader_info(a->r, "process_chunks");
    if (sep && strcmp(sep, "separate") == 0 && !getenv("MPROF_FULL_FIRST_READ")) {
        int rc = first_read(a, path, 1, err, errlen);
        if (rc != 1)
            return rc;
        /* Not every chunk the writer wrote is here (or its flags were lost on the way): the
         * passes start again on a read of everything. */
        for (size_t i = 0; pass_table[i]; i++)
            if (a->pass_state[i]) {
                pass_table[i]->destroy(a->pass_state[i]);
                a->pass_state[i] = pass_table[i]->create(a);
            }
    }
    return first_read(a, path, 0, err, errlen);
}

static void run_pass(mprof_analysis *a, size_t i, const mprof_batch *b);

/* Feeds a pass without a batch hook one event at a time, zone records as the events they
 * stand for. */
static void events_of_batch(const mprof_pass_vtbl *p, void *state, mprof_analysis *a,
                            const mprof_batch *b)
{
    for (uint32_t ri = 0; ri < b->n_run; ri++) {
        const mprof_run *run = &b->run[ri];
        for (uint32_t k = run->first; k < run->end; k++) {
            const mprof_rec *e = &b->rec[k];
            int type = mprof_rec_type(e);
            if (type != MPROF_REC_LEAF && type != MPROF_EV_ZONE_BEGIN && type != MPROF_EV_ZONE_END) {
                if (e->x == MPROF_REC_NOEV) { /* (only when the pass said it has no use for it) */
                    mprof_event ev = {.type = type, .thread = run->thread, .ts_ns = e->ts_ns};
                    p->event(state, a, &ev);
                } else {
                    p->event(state, a, &b->ev[e->x]);
                }
                continue;
            }
            mprof_event ev = {.type = type == MPROF_REC_LEAF ? MPROF_EV_ZONE_BEGIN : type,
                              .thread = run->thread, .ts_ns = e->ts_ns};
            if (type != MPROF_EV_ZONE_END)
                ev.u[0] = e->x;
            p->event(state, a, &ev);
            if (type == MPROF_REC_LEAF) {
                mprof_event end = {.type = MPROF_EV_ZONE_END, .thread = run->thread,
                                   .ts_ns = e->ts_ns + mprof_rec_dur(e)};
                p->event(state, a, &end);
            }
        }
    }
}

static int pass_wanted(const char *list, const char *name)
{
    if (!list)
        return 0;
    if (strcmp(list, "all") == 0)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
            return 1;
    return 0;
}

/* Pass i over a batch: its prescan hook while in its prescan (one read), else its batch hook,
 * or its event hook an event at a time. */
static void run_pass(mprof_analysis *a, size_t i, const mprof_batch *b)
{
    if (a->pass_pre[i])
        pass_table[i]->prescan_batch(a->pass_state[i], a->r, b);
    else if (pass_table[i]->batch)
        pass_table[i]->batch(a->pass_state[i], a, b);
    else
        events_of_batch(pass_table[i], a->pass_state[i], a, b);
}

#define KEEP_MAX (16u << 20) /* 1,048,576 records */

static void keep_free(mprof_analysis *a)
{
    free(a->keep_rec);
    free(a->keep_run);
    a->keep_rec = NULL;
    a->keep_run = NULL;
    a->n_keep_rec = a->cap_keep_rec = a->n_keep_run = a->cap_keep_run = 0;
}

/* Keeps b's records and runs (runs renumbered onto the kept records); past KEEP_MAX, nothing. */
static void keep_batch(mprof_analysis *a, const mprof_batch *b)
{
    uint64_t nr = (uint64_t)a->n_keep_rec + b->n_rec, nu = (uint64_t)a->n_keep_run + b->n_run;
    /* One allocation for the records: its pages are touched only as they are kept. */
    if (!a->cap_keep_rec && (a->keep_rec = malloc(KEEP_MAX)))
        a->cap_keep_rec = KEEP_MAX / sizeof(mprof_rec);
    if (nr * sizeof(mprof_rec) + nu * sizeof(mprof_run) > KEEP_MAX || nr > a->cap_keep_rec ||
        MPROF_GROW(a->keep_run, a->cap_keep_run, nu, 1u << 10) != 0) {
        keep_free(a);
        a->keep_over = 1;
        return;
    }
    memcpy(a->keep_rec + a->n_keep_rec, b->rec, (size_t)b->n_rec * sizeof *b->rec);
    for (uint32_t i = 0; i < b->n_run; i++) {
        mprof_run r = b->run[i];
        r.first += a->n_keep_rec;
        r.end += a->n_keep_rec;
        a->keep_run[a->n_keep_run++] = r;
    }
    a->n_keep_rec = (uint32_t)nr;
}

/* The tags whose fields the core pass reads (core_event); of every other tag it counts the
 * events and follows their times. */
static void core_fields(unsigned char need[MPROF_EV_MAX])
{
    static const int tags[] = {MPROF_EV_ZONE_BEGIN, MPROF_EV_ZONE_END, MPROF_EV_FIBER_ENTER,
                               MPROF_EV_FIBER_LEAVE, MPROF_EV_THREAD_EXIT, MPROF_EV_LOST,
                               MPROF_EV_FRAME_MARK, MPROF_EV_FRAME_BEGIN, MPROF_EV_FRAME_END,
                               MPROF_EV_PLOT_F64, MPROF_EV_PLOT_I64, MPROF_EV_PLOT_CONFIG,
                               MPROF_EV_MESSAGE};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        need[tags[i]] = 1;
}

/* The read with the core pass hands out whole only the events some pass of it reads; the rest
 * come as records (their times, threads and tags), when every pass says what it reads. */
static void want_fields(mprof_analysis *a, mprof_reader *r)
{
    if (getenv("MPROF_WHOLE_EVENTS")) /* every event whole, for tests that compare both */
        return;
    unsigned char need[MPROF_EV_MAX] = {0};
    core_fields(need);
    for (size_t i = 0; pass_table[i]; i++) {
        if (!a->pass_read[i])
            continue;
        if (!pass_table[i]->fields)
            return; /* it may read any tag: everything whole */
        pass_table[i]->fields(need);
        if (a->pass_pre[i] && pass_table[i]->prescan_want) /* its prescan runs in this read */
            pass_table[i]->prescan_want(need);
    }
    unsigned char want[MPROF_EV_MAX];
    for (int t = 0; t < MPROF_EV_MAX; t++)
        want[t] = need[t] ? MPROF_WANT_WHOLE : MPROF_WANT_RECORD;
    mprof_reader_want(r, want);
}

/* A batch of the read, first stage: to the core pass (core), the kept records and the passes of
 * pass_read that do not run beside it. Stops the read when a one-read analysis has to read
 * again (redo). */
typedef struct read_ctx {
    mprof_analysis *a;
    int core;
} read_ctx;

static int read_batch(void *arg, const mprof_batch *b)
{
    read_ctx *c = arg;
    mprof_analysis *a = c->a;
    if (c->core)
        core_batch(a, b);
    if (a->keep_on && !a->keep_over)
        keep_batch(a, b);
    for (size_t i = 0; pass_table[i]; i++)
        if (a->pass_read[i] && !pass_table[i]->beside)
            run_pass(a, i, b);
    return a->sp.redo;
}

/* The second stage: the passes beside the core pass, on whichever reader thread is free while
 * the first stage goes on with the next batches (mprof_reader_each_batch_then). */
static void beside_batch(void *arg, const mprof_batch *b)
{
    read_ctx *c = arg;
    mprof_analysis *a = c->a;
    for (size_t i = 0; pass_table[i]; i++)
        if (a->pass_read[i] && pass_table[i]->beside)
            run_pass(a, i, b);
}

/* One read of r: the core pass (core) and the passes of pass_read, batch by batch (on the
 * reader's threads). Stops early when a one-read analysis has to read again (redo). */
static int read_passes(mprof_analysis *a, mprof_reader *r, int core, char *err, size_t errlen)
{
    if (a->opts.jobs)
        mprof_reader_set_jobs(r, a->opts.jobs);
    if (core)
        want_fields(a, r);
    int any_beside = 0;
    for (size_t i = 0; pass_table[i]; i++)
        any_beside |= a->pass_read[i] && pass_table[i]->beside;
    read_ctx ctx = {a, core};
    int rc = mprof_reader_each_batch_then(r, read_batch, any_beside ? beside_batch : NULL, &ctx);
    if (a->sp.redo)
        return 0;
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", a->path, mprof_reader_error(r));
        return -1;
    }
    return 0;
}

/* Every pass over the capture. In one read (one_read) the core pass settles the main frames'
 * span as it goes, and passes with a prescan run it in the same read; a pass that still needs
 * the zones after its prescan (the system pass when the capture has switches or samples) then
 * walks the records the read kept for it (records_only, up to KEEP_MAX), or reads them again
 * on its own. Otherwise a first read finds the span (and runs the prescans), and a
 * second runs every pass. Returns 0, 1 when one read cannot settle the span (redo), -1 on
 * error. */
static int read_capture(mprof_analysis *a, char *err, size_t errlen)
{
    for (size_t i = 0; pass_table[i]; i++)
        a->pass_read[i] = a->pass_on[i] && a->pass_state[i];
    if (!a->one_read) {
        if (scan_frame_span(a, a->path, err, errlen) != 0)
            return -1;
        return read_passes(a, a->r, 1, err, errlen);
    }
    for (size_t i = 0; pass_table[i]; i++) {
        a->pass_pre[i] = a->pass_read[i] && pass_table[i]->prescan_batch != NULL;
        a->keep_on |= a->pass_pre[i] && pass_table[i]->records_only;
    }
    int rc = read_passes(a, a->r, 1, err, errlen);
    a->keep_on = 0;
    if (rc != 0)
        return -1;
    if (!a->sp.redo)
        mprof__span_end(&a->sp, a->zones, &a->span_first, &a->span_last);
    if (a->sp.redo)
        return 1;
    /* The span is known: zones added from now on (the fibers pass's, at its finish) take it as
     * two reads do. */
    a->one_read = 0;
    int more = 0;
    for (size_t i = 0; pass_table[i]; i++) {
        int pre = a->pass_pre[i];
        a->pass_pre[i] = 0;
        a->pass_read[i] = 0;
        if (!pre)
            continue;
        if (pass_table[i]->prescan_end)
            pass_table[i]->prescan_end(a->pass_state[i], a->r);
        a->pass_read[i] = !pass_table[i]->prescan_done || !pass_table[i]->prescan_done(a->pass_state[i]);
        more |= a->pass_read[i];
    }
    if (more && !a->keep_over) { /* the kept records, as one batch */
        mprof_batch kb = {.rec = a->keep_rec, .run = a->keep_run, .n_rec = a->n_keep_rec,
                          .n_run = a->n_keep_run, .max_ts_ns = INT64_MIN};
        for (size_t i = 0; pass_table[i]; i++)
            if (a->pass_read[i] && pass_table[i]->records_only) {
                run_pass(a, i, &kb);
                a->pass_read[i] = 0;
            }
        more = 0;
        for (size_t i = 0; pass_table[i]; i++)
            more |= a->pass_read[i];
    }
    keep_free(a);
    if (!more)
        return 0;
    mprof_reader *r = mprof_reader_open(a->path, err, errlen);
    if (!r)
        return -1;
    rc = read_passes(a, r, 0, err, errlen);
    mprof_reader_close(r);
    return rc;
}

static mprof_analysis *analysis_open(const char *path, const mprof_analysis_opts *opts,
                                     int one_read, char *err, size_t errlen)
{
    mprof_analysis *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a->r = mprof_reader_open(path, err, errlen);
    if (!a->r) {
        free(a);
        return NULL;
    }
    snprintf(a->path, sizeof a->path, "%s", path);
    /* With context switches or samples, the system pass attributes zones only once it has the
     * whole switch timeline: in one read it keeps the zone records, and past KEEP_MAX (about two
     * million events) it reads the whole capture again. A first read of the frame marks and the
     * system records, which decodes the zones but hands none out, costs less than that second
     * read, and knowing the span before the zones costs the core pass its pending list too. */
    mprof_sys_status st;
    mprof__sys_status(a->r, &st);
    if (st.context_switches || st.sampling)
        one_read = 0;
    if (opts)
        a->opts = *opts;
    if (a->opts.top_n <= 0)
        a->opts.top_n = 20;
    a->first_mark = a->last_mark = -1;
    a->span_first = a->span_last = -1;
    a->one_read = one_read;
    for (int t = 0; t < MPROF_EV_MAX; t++) {
        const mprof_event_desc *d = mprof_event_desc_get(t);
        a->tag_kind[t] = (unsigned char)((d && mprof_event_counted(t) ? 1 : 0) |
                                         (d && d->has_ts ? 2 : 0));
    }
    mprof__span_init(&a->sp);
    for (size_t i = 0; pass_table[i]; i++) {
        a->pass_on[i] = pass_table[i]->always || pass_wanted(a->opts.passes, pass_table[i]->name);
        if (a->pass_on[i])
            a->pass_state[i] = pass_table[i]->create(a);
    }
    return a;
}

mprof_analysis *mprof_analysis_run(const char *path, const mprof_analysis_opts *opts, char *err,
                                   size_t errlen)
{
    int one = !getenv("MPROF_TWO_READS"); /* the first-read way, for tests that compare both */
    mprof_analysis *a = analysis_open(path, opts, one, err, errlen);
    if (!a)
        return NULL;
    int rc = read_capture(a, err, errlen);
    if (rc == 1) {
        mprof_analysis_free(a);
        if (!(a = analysis_open(path, opts, 0, err, errlen)))
            return NULL;
        rc = read_capture(a, err, errlen);
    }
    if (rc != 0) {
        mprof_analysis_free(a);
        return NULL;
    }
    mprof_reader_get_stats(a->r, &a->rst);
    const char *el = mprof_reader_end_info(a->r, "events_lost");
    if (el && strtoull(el, NULL, 10) > a->lost)
        a->lost = strtoull(el, NULL, 10);
    for (uint32_t i = 0; i < a->n_sets; i++)
        if (a->sets[i].ms.n)
            qsort(a->sets[i].ms.v, a->sets[i].ms.n, sizeof(double), cmp_double);
    for (size_t i = 0; pass_table[i]; i++)
        if (a->pass_on[i] && a->pass_state[i] && pass_table[i]->finish)
            pass_table[i]->finish(a->pass_state[i], a);
    return a;
}

void mprof_analysis_free(mprof_analysis *a)
{
    if (!a)
        return;
    for (size_t i = 0; pass_table[i]; i++)
        if (a->pass_state[i])
            pass_table[i]->destroy(a->pass_state[i]);
    for (uint32_t i = 0; i < a->n_threads; i++)
        free(a->threads[i].stack);
    free(a->threads);
    for (uint32_t i = 0; i < a->n_zones; i++)
        mprof__site_free(&a->zones[i]);
    free(a->zones);
    for (uint32_t i = 0; i < a->n_sets; i++)
        free(a->sets[i].ms.v);
    free(a->sets);
    free(a->plots);
    mprof__span_free(&a->sp);
    keep_free(a);
    mprof_reader_close(a->r);
    free(a);
}

/* ---- hooks for the fibers pass ------------------------------------------------------------ */

void mprof__analysis_fiber_zone(mprof_analysis *a, uint32_t loc, int64_t start, int64_t dur,
                                int64_t self, int nested)
{
    add_zone(a, loc, start, dur, self, nested);
}

int mprof__analysis_wants(const mprof_analysis *a, const char *name)
{
    return pass_wanted(a->opts.passes, name);
}

const mprof_reader *mprof_analysis_reader(const mprof_analysis *a)
{
    return a->r;
}

void *mprof_analysis_pass_state(const mprof_analysis *a, const char *name)
{
    for (size_t i = 0; pass_table[i]; i++)
        if (strcmp(pass_table[i]->name, name) == 0)
            return a->pass_state[i];
    return NULL;
}

/* ---- results ------------------------------------------------------------------------------- */

typedef mprof_frame_summary frame_summary;

static frame_summary summarize(const series *s)
{
    return mprof__frame_summary(s->v, s->n);
}

static const frameset *main_set(const mprof_analysis *a)
{
    for (uint32_t i = 0; i < a->n_sets; i++)
        if (a->sets[i].name == 0)
            return &a->sets[i];
    return NULL;
}

double mprof_analysis_coverage(const mprof_analysis *a)
{
    if (a->first_mark < 0 || a->last_mark <= a->first_mark)
        return 0.0;
    return (double)a->covered_at_last_mark / (double)(a->last_mark - a->first_mark);
}

/* Frames inside the main span, including those flagged incomplete (their time is in the span). */
static uint64_t span_frames(const mprof_analysis *a)
{
    const frameset *ms = main_set(a);
    return a->span_first >= 0 && ms ? ms->ms.n + ms->incomplete : 0;
}

/* Share (0..1) of the main frames' span that a zone covers (on its threads, see site_stats.h). */
static double frame_share(const mprof_analysis *a, const zone_acc *z)
{
    mprof_frame_span span = {a->span_first, a->span_last};
    return mprof__site_frame_share(z, &span);
}

static double zone_mean_ns(const zone_acc *z)
{
    return mprof__site_mean_ns(z);
}

/* Time inside the main frames per frame of the span, in ms. */
static double per_frame_ms(const mprof_analysis *a, const zone_acc *z)
{
    return mprof__site_per_frame_ns(z, span_frames(a)) / 1e6;
}

/* A zone is timer-bound when its mean is within this factor of an empty zone's cost. */
#define TIMER_BOUND_FACTOR 10

/* The cost of an empty zone (INFO zone_cost_ns, measured by the library at start-up), 0 when the
 * capture does not say. */
static double zone_cost_ns(const mprof_analysis *a)
{
    const char *v = mprof_reader_info(a->r, "zone_cost_ns");
    if (!v)
        return 0.0;
    char *end;
    double c = strtod(v, &end);
    return end != v && isfinite(c) && c > 0 && c < 1e9 ? c : 0.0;
}

static int timer_bound(const mprof_analysis *a, const zone_acc *z)
{
    double c = zone_cost_ns(a);
    return c > 0 && z->count && zone_mean_ns(z) < TIMER_BOUND_FACTOR * c;
}

static const char *level_names[7] = {"unknown", "trace", "debug", "info", "warn", "error", "fatal"};

/* Zone ids sorted by total time, descending. */
static uint32_t *sorted_zones(const mprof_analysis *a, uint32_t *n_out)
{
    uint32_t n = 0;
    uint32_t *ids = malloc((a->n_zones ? a->n_zones : 1) * sizeof *ids);
    if (!ids) {
        *n_out = 0;
        return NULL;
    }
    for (uint32_t i = 0; i < a->n_zones; i++)
        if (a->zones[i].count)
            ids[n++] = i;
    for (uint32_t i = 1; i < n; i++) { /* insertion sort: zone counts are small */
        uint32_t x = ids[i], j = i;
        while (j > 0 && a->zones[ids[j - 1]].total_ns < a->zones[x].total_ns) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = x;
    }
    *n_out = n;
    return ids;
}

static void fmt_count(char *out, size_t n, uint64_t v)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    size_t len = strlen(tmp), o = 0;
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = tmp[i];
    }
    out[o] = 0;
}

static const char *thread_label(const mprof_analysis *a, uint32_t idx, char *buf, size_t n)
{
    const mprof_thread_def *t = mprof_reader_thread(a->r, idx);
    if (t && t->name)
        tool_text(t->name, buf, n);
    else
        snprintf(buf, n, "thread %u", idx);
    return buf;
}

void mprof_analysis_print_text(mprof_analysis *a, FILE *out)
{
    const mprof_reader *r = a->r;
    char b1[64], b2[64];
    const char *app = mprof_reader_info(r, "app");
    const char *pid = mprof_reader_info(r, "pid");
    const char *timer = mprof_reader_info(r, "timer");
    /* Every name from the capture is escaped (tool_text): a capture, or the peer that sent it,
     * must not reach the user's terminal with escape sequences. */
    char e1[256], e2[64];
    fputs("Capture   ", out);
    tool_put_text(out, a->path);
    fputc('\n', out);
    fprintf(out, "Process   %s", app ? tool_text(app, e1, sizeof e1) : "?");
    fprintf(out, " (pid %s)", pid ? tool_text(pid, e2, sizeof e2) : "?");
    const char *start = mprof_reader_info(r, "start_unix_ns");
    if (start) {
        time_t t = (time_t)(strtoull(start, NULL, 10) / 1000000000ull);
        struct tm tm;
        char when[64];
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
        fprintf(out, ", started %s", when);
    }
    fprintf(out, "\nClock     %s, %.3f MHz\n", timer ? tool_text(timer, e1, sizeof e1) : "?",
            1e3 / mprof_reader_ns_per_tick(r));
    fmt_count(b1, sizeof b1, a->events);
    fmt_count(b2, sizeof b2, a->lost);
    uint32_t nthreads = 0;
    for (uint32_t i = 1; i < a->n_threads; i++)
        nthreads += a->threads[i].seen;
    int write_failed = a->rst.complete && (a->rst.ending == MPROF_ENDING_DISK_FULL ||
                                           a->rst.ending == MPROF_ENDING_WRITE_ERROR);
    char b3[64] = "";
    if (write_failed) {
        fmt_count(b3 + 2, sizeof b3 - 2, a->rst.events_missing);
        memcpy(b3, ", ", 2);
        strncat(b3, " not written", sizeof b3 - strlen(b3) - 1);
    }
    fprintf(out, "Duration  %.3f s, %u threads, %s events, %s lost%s%s\n",
            duration_s(a), nthreads, b1, b2, b3,
            a->lost ? "  <-- events were dropped: raise the memory cap (MPROF_MEMORY_MIB)" : "");
    const char *ending = mprof_ending_text(a->rst.complete ? a->rst.ending : MPROF_ENDING_CUT);
    /* Not "complete" when the end record counts chunks the file does not hold. */
    if (a->rst.complete && a->rst.ending == MPROF_ENDING_CLEAN &&
        (a->rst.chunks_missing || a->rst.events_missing))
        ending = "incomplete: chunks are missing (the process closed the capture)";
    fprintf(out, "File      %.2f MB, %s", (double)a->rst.file_bytes / 1e6, ending);
    if (a->rst.truncated_bytes)
        fprintf(out, ", %" PRIu64 " bytes of a cut-off chunk ignored", a->rst.truncated_bytes);
    fprintf(out, "\n");
    const char *ended_by = mprof_reader_end_info(r, "ended_by");
    if (a->rst.complete && ended_by && a->rst.ending != MPROF_ENDING_CLEAN)
        fprintf(out, "Ended     %s\n", tool_text(ended_by, e1, sizeof e1));
    if (write_failed)
        fprintf(out, "Lost      %" PRIu64 " chunks, %" PRIu64 " events were not written (%s)\n",
                a->rst.chunks_missing, a->rst.events_missing,
                mprof_reader_end_info(r, "write_error")
                    ? tool_text(mprof_reader_end_info(r, "write_error"), e1, sizeof e1)
                    : "write failed");
    else if (a->rst.chunks_missing || a->rst.events_missing)
        fprintf(out, "Missing   %" PRIu64 " chunks, %" PRIu64 " events: the end record counts more "
                     "than the file holds (chunks were cut out of the middle)\n",
                a->rst.chunks_missing, a->rst.events_missing);
    if (a->unmatched_ends > a->unmatched_after_loss)
        fprintf(out, "Note      %" PRIu64 " zone ends had no begin (zones opened before recording started)\n",
                a->unmatched_ends - a->unmatched_after_loss);
    if (a->unmatched_after_loss)
        fprintf(out, "Note      %" PRIu64 " zone ends had no begin because events were lost at the memory cap\n",
                a->unmatched_after_loss);
    if (zone_cost_ns(a) > 0)
        fprintf(out, "Timer     an empty zone costs %.1f ns here (measured at start-up); zones marked * have a\n"
                     "          mean under %d times that: their times are mostly the profiler's own\n",
                zone_cost_ns(a), TIMER_BOUND_FACTOR);

    fprintf(out, "\nFrames\n");
    if (!a->n_sets)
        fprintf(out, "  no frame marks (call MPROF_FRAME_MARK() once per main-loop iteration)\n");
    for (uint32_t i = 0; i < a->n_sets; i++) {
        const frameset *f = &a->sets[i];
        frame_summary s = summarize(&f->ms);
        const char *name = f->name ? mprof_reader_string(r, f->name) : "main";
        if (name)
            name = tool_text(name, e1, 64);
        fprintf(out, "  %-18s %6" PRIu64 " frames  mean %7.2f  p50 %7.2f  p90 %7.2f  p95 %7.2f  p99 %7.2f  max %7.2f ms\n",
                name ? name : "?", s.count, s.mean, s.p50, s.p90, s.p95, s.p99, s.max);
        if (f->incomplete)
            fprintf(out, "  %-18s %6" PRIu64 " more frames spanned lost events: left out of these figures\n",
                     "", f->incomplete);
    }
    if (a->span_first >= 0) {
        double before = a->have_ts && a->first_ts < a->span_first ? (double)(a->span_first - a->first_ts) / 1e6 : 0;
        double after = a->have_ts && a->last_ts > a->span_last ? (double)(a->last_ts - a->span_last) / 1e6 : 0;
        fprintf(out, "  outside frames: %.3f ms before the first frame mark, %.3f ms after the last"
                     " (not in %%frame or per-frame figures)\n", before, after);
    }
    if (a->first_mark >= 0) {
        char tl[64];
        fprintf(out, "  hot-path coverage: %.1f %% of main-thread frame time is inside zones (%s)\n",
                100.0 * mprof_analysis_coverage(a), thread_label(a, a->main_thread, tl, sizeof tl));
    }

    uint32_t nz;
    uint32_t *ids = sorted_zones(a, &nz);
    uint32_t shown = nz < (uint32_t)a->opts.top_n ? nz : (uint32_t)a->opts.top_n;
    fprintf(out, "\nZones (%u of %u by total time)\n", shown, nz);
    int offcol = mprof__system_zone_off_ns(a, 0) >= 0; /* the capture has context switches */
    fprintf(out, "  %-32s %9s %10s %10s %9s %9s %9s %9s %7s %9s  %s%s\n", "name", "count", "total ms",
            "self ms", "mean us", "p50 us", "p95 us", "max us", "%frame", "ms/frame",
            offcol ? "off-CPU ms  " : "", "location");
    int any_bound = 0;
    for (uint32_t k = 0; k < shown; k++) {
        const zone_acc *z = &a->zones[ids[k]];
        const mprof_srcloc_def *d = mprof_reader_srcloc(r, ids[k]);
        const char *file = d ? d->file : "?";
        const char *slash = strrchr(file, '/');
        int bound = timer_bound(a, z);
        any_bound |= bound;
        char name[40], ename[40];
        snprintf(name, sizeof name, "%s%s", bound ? "*" : "", d ? tool_text(d->name, ename, 33) : "?");
        char offbuf[32] = "";
        if (offcol)
            snprintf(offbuf, sizeof offbuf, "%10.3f  ", (double)mprof__system_zone_off_ns(a, ids[k]) / 1e6);
        fprintf(out, "  %-32.32s %9" PRIu64 " %10.3f %10.3f %9.2f %9.2f %9.2f %9.2f %7.1f %9.3f  %s%s:%u\n",
                name, z->count, (double)z->total_ns / 1e6, (double)z->self_ns / 1e6,
                zone_mean_ns(z) / 1e3,
                (double)mprof__site_quantile_ns(z, 0.5) / 1e3,
                (double)mprof__site_quantile_ns(z, 0.95) / 1e3, (double)mprof__site_max_ns(z) / 1e3,
                100.0 * frame_share(a, z), per_frame_ms(a, z),
                offbuf,
                tool_text(slash ? slash + 1 : file, e1, sizeof e1), d ? d->line : 0);
    }
    if (shown < nz)
        fprintf(out, "  ... %u more (use --top 0 for all)\n", nz - shown);
    if (any_bound)
        fprintf(out, "  * timer-bound: the mean is within %d times the cost of an empty zone\n",
                TIMER_BOUND_FACTOR);
    free(ids);

    int any_plot = 0;
    for (uint32_t i = 0; i < a->n_plots; i++)
        any_plot |= a->plots[i].count > 0;
    if (any_plot) {
        fprintf(out, "\nPlots\n  %-24s %9s %14s %14s %14s\n", "name", "count", "min", "max", "mean");
        for (uint32_t i = 0; i < a->n_plots; i++) {
            const plot_acc *p = &a->plots[i];
            if (!p->count)
                continue;
            const char *name = mprof_reader_string(r, i);
            fprintf(out, "  %-24.24s %9" PRIu64 " %14.4g %14.4g %14.4g\n",
                    name ? tool_text(name, e1, 25) : "?",
                    p->count, p->min, p->max, p->sum / (double)p->count);
        }
    }

    fprintf(out, "\nMessages ");
    for (int l = 1; l <= 6; l++)
        fprintf(out, " %s %" PRIu64 "%s", level_names[l], a->msgs[l], l < 6 ? "," : "\n");

    fprintf(out, "\nThreads\n");
    for (uint32_t i = 1; i < a->n_threads; i++) {
        const thread_acc *t = &a->threads[i];
        if (!t->seen)
            continue;
        const mprof_thread_def *d = mprof_reader_thread(r, i);
        char tl[64];
        fprintf(out, "  %-24s tid %-8" PRIu64 " %10" PRIu64 " events %10" PRIu64 " zones%s\n",
                thread_label(a, i, tl, sizeof tl), d ? d->os_tid : 0, t->events, t->zones,
                t->depth ? "  (zones still open at the end)" : "");
    }
    for (size_t i = 0; pass_table[i]; i++)
        if (a->pass_on[i] && a->pass_state[i] && pass_table[i]->print_text)
            pass_table[i]->print_text(a->pass_state[i], a, out, a->opts.top_n);
}

static void json_frames(mprof_json *j, const char *key, const series *s)
{
    frame_summary f = summarize(s);
    mprof_json_obj_begin(j, key);
    mprof_json_u64(j, "count", f.count);
    mprof_json_f64(j, "mean_ms", f.mean);
    mprof_json_f64(j, "p50_ms", f.p50);
    mprof_json_f64(j, "p90_ms", f.p90);
    mprof_json_f64(j, "p95_ms", f.p95);
    mprof_json_f64(j, "p99_ms", f.p99);
    mprof_json_f64(j, "max_ms", f.max);
    mprof_json_f64(j, "total_ms", f.total);
}

void mprof_analysis_print_json(mprof_analysis *a, FILE *out)
{
    const mprof_reader *r = a->r;
    mprof_json j;
    mprof_json_init(&j, out, 1);
    mprof_json_obj_begin(&j, NULL);
    mprof_json_str(&j, "schema", "mprof.report.v1");
    mprof_json_obj_begin(&j, "capture");
    mprof_json_str(&j, "file", a->path);
    mprof_json_str(&j, "app", mprof_reader_info(r, "app"));
    const char *pid = mprof_reader_info(r, "pid");
    mprof_json_u64(&j, "pid", pid ? strtoull(pid, NULL, 10) : 0);
    mprof_json_str(&j, "timer", mprof_reader_info(r, "timer"));
    mprof_json_str(&j, "hostname", mprof_reader_info(r, "hostname"));
    mprof_json_str(&j, "git_sha", mprof_reader_info(r, "git_sha"));
    mprof_json_f64(&j, "duration_s", duration_s(a));
    mprof_json_u64(&j, "file_bytes", a->rst.file_bytes);
    /* complete: a clean end with nothing missing (a tool-written END after the process
     * vanished, a corrupt stream or a full disk is not a complete capture). */
    mprof_json_bool(&j, "complete", mprof_reader_stats_whole(&a->rst));
    mprof_json_u64(&j, "truncated_bytes", a->rst.truncated_bytes);
    mprof_json_str(&j, "ending", mprof_ending_name(a->rst.complete ? a->rst.ending : MPROF_ENDING_CUT));
    mprof_json_str(&j, "ended_by", mprof_reader_end_info(r, "ended_by"));
    mprof_json_bool(&j, "end_record", a->rst.complete);
    mprof_json_u64(&j, "chunks_missing", a->rst.chunks_missing);
    mprof_json_u64(&j, "events_missing", a->rst.events_missing);
    mprof_json_str(&j, "write_error", mprof_reader_end_info(r, "write_error"));
    mprof_json_obj_end(&j);

    mprof_json_obj_begin(&j, "events");
    mprof_json_u64(&j, "total", a->events);
    mprof_json_u64(&j, "lost", a->lost);
    mprof_json_u64(&j, "unmatched_zone_ends", a->unmatched_ends);
    mprof_json_u64(&j, "unmatched_zone_ends_after_loss", a->unmatched_after_loss);
    mprof_json_obj_end(&j);
    mprof_json_f64(&j, "zone_cost_ns", zone_cost_ns(a));

    const frameset *ms = main_set(a);
    series empty = {0};
    json_frames(&j, "frames", ms ? &ms->ms : &empty);
    mprof_json_f64(&j, "coverage", mprof_analysis_coverage(a));
    mprof_json_u64(&j, "main_thread", a->main_thread);
    mprof_json_u64(&j, "incomplete", ms ? ms->incomplete : 0);
    mprof_json_u64(&j, "span_frames", span_frames(a));
    mprof_json_f64(&j, "span_ms", a->span_first >= 0 ? (double)(a->span_last - a->span_first) / 1e6 : 0.0);
    mprof_json_f64(&j, "before_first_ms", a->span_first >= 0 && a->have_ts && a->first_ts < a->span_first
                                              ? (double)(a->span_first - a->first_ts) / 1e6 : 0.0);
    mprof_json_f64(&j, "after_last_ms", a->span_first >= 0 && a->have_ts && a->last_ts > a->span_last
                                            ? (double)(a->last_ts - a->span_last) / 1e6 : 0.0);
    mprof_json_obj_end(&j);
    mprof_json_arr_begin(&j, "frame_sets");
    for (uint32_t i = 0; i < a->n_sets; i++) {
        const frameset *f = &a->sets[i];
        json_frames(&j, NULL, &f->ms);
        const char *nm = f->name ? mprof_reader_string(r, f->name) : "main";
        mprof_json_str(&j, "name", nm ? nm : "?");
        mprof_json_bool(&j, "discontinuous", f->discontinuous);
        mprof_json_u64(&j, "incomplete", f->incomplete);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);

    uint32_t nz;
    uint32_t *ids = sorted_zones(a, &nz);
    mprof_json_arr_begin(&j, "zones");
    for (uint32_t k = 0; k < nz; k++) {
        const zone_acc *z = &a->zones[ids[k]];
        const mprof_srcloc_def *d = mprof_reader_srcloc(r, ids[k]);
        mprof_json_obj_begin(&j, NULL);
        mprof_json_u64(&j, "id", ids[k]);
        mprof_json_str(&j, "name", d ? d->name : "?");
        mprof_json_str(&j, "function", d ? d->function : "?");
        mprof_json_str(&j, "file", d ? d->file : "?");
        mprof_json_u64(&j, "line", d ? d->line : 0);
        char color[16];
        snprintf(color, sizeof color, "#%06x", d ? d->color & 0xffffff : 0);
        mprof_json_str(&j, "color", color);
        mprof_json_u64(&j, "count", z->count);
        mprof_json_u64(&j, "total_ns", (uint64_t)z->total_ns);
        mprof_json_u64(&j, "self_ns", (uint64_t)z->self_ns);
        mprof_json_u64(&j, "mean_ns", (uint64_t)zone_mean_ns(z));
        mprof_json_u64(&j, "min_ns", mprof__site_min_ns(z));
        mprof_json_u64(&j, "p50_ns", mprof__site_quantile_ns(z, 0.5));
        mprof_json_u64(&j, "p95_ns", mprof__site_quantile_ns(z, 0.95));
        mprof_json_u64(&j, "max_ns", mprof__site_max_ns(z));
        mprof_json_f64(&j, "frame_share", frame_share(a, z));
        mprof_json_u64(&j, "in_frames_ns", (uint64_t)z->in_frames_ns);
        mprof_json_f64(&j, "per_frame_ms", per_frame_ms(a, z));
        mprof_json_bool(&j, "timer_bound", timer_bound(a, z));
        mprof__system_zone_json(a, &j, ids[k]);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);
    free(ids);

    mprof_json_arr_begin(&j, "threads");
    for (uint32_t i = 1; i < a->n_threads; i++) {
        const thread_acc *t = &a->threads[i];
        if (!t->seen)
            continue;
        const mprof_thread_def *d = mprof_reader_thread(r, i);
        mprof_json_obj_begin(&j, NULL);
        mprof_json_u64(&j, "index", i);
        mprof_json_str(&j, "name", d && d->name ? d->name : NULL);
        mprof_json_u64(&j, "os_tid", d ? d->os_tid : 0);
        mprof_json_u64(&j, "events", t->events);
        mprof_json_u64(&j, "zones", t->zones);
        mprof__system_thread_json(a, &j, i);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);

    mprof_json_arr_begin(&j, "plots");
    for (uint32_t i = 0; i < a->n_plots; i++) {
        const plot_acc *p = &a->plots[i];
        if (!p->count)
            continue;
        mprof_json_obj_begin(&j, NULL);
        mprof_json_str(&j, "name", mprof_reader_string(r, i));
        mprof_json_u64(&j, "count", p->count);
        mprof_json_f64(&j, "min", p->min);
        mprof_json_f64(&j, "max", p->max);
        mprof_json_f64(&j, "mean", p->sum / (double)p->count);
        mprof_json_f64(&j, "last", p->last);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);

    mprof_json_obj_begin(&j, "messages");
    uint64_t total = 0;
    for (int l = 1; l <= 6; l++) {
        mprof_json_u64(&j, level_names[l], a->msgs[l]);
        total += a->msgs[l];
    }
    mprof_json_u64(&j, "total", total);
    mprof_json_obj_end(&j);

    for (size_t i = 0; pass_table[i]; i++)
        if (a->pass_on[i] && a->pass_state[i] && pass_table[i]->print_json)
            pass_table[i]->print_json(a->pass_state[i], a, &j);
    mprof_json_obj_end(&j);
}
