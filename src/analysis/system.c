/*
 * system.c - the report's system section: per thread on-CPU and off-CPU time and switches, per
 * zone the time its instances spent off the CPU, and what the callstack samples hit (per
 * function, and per innermost zone at the sampled instant).
 *
 * Switch and sample records come from the library's system thread, out of time order with the
 * zones they explain, so they are read in the analysis's first read (prescan): the switches
 * become each thread's timeline (sysmodel.c), the samples are symbolized and sorted by thread
 * and time. The zones then stream by in the second read with one stack per thread: when a zone
 * ends, its off-CPU time is a query on its thread's timeline, its self off-CPU time that minus
 * its children's (summed on the stack); before each zone event of a thread at time t, that
 * thread's samples taken before t go to the zone on top of the stack (the innermost zone open
 * at the sample). Memory grows with the switches, samples and stack depth, not with the zones.
 */
#include "analysis/system.h"
#include "analysis/symbolize.h"
#include "util/umap.h"
#include "util/tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct zopen {
    uint32_t loc;
    int64_t begin;
    int64_t child_off; /* off-CPU time of its closed children */
    int64_t off_at;    /* the thread's off-CPU time before begin (mprof__sys_off_at) */
} zopen;

typedef struct zthread {
    zopen *stack;
    uint32_t depth, scap;
    int in_fiber;
    uint32_t s_next, s_end; /* this thread's samples not yet attributed: p->s[s_next, s_end) */
    int64_t tx;             /* its timeline in the system model; -1 none */
    uint32_t o_next, o_n;   /* its off-CPU intervals not yet given to a zone: [o_next, o_n) */
    int64_t o_os, o_oe;     /* interval o_next, when o_next < o_n */
    int64_t mark;           /* its last zone event (flush_waits) */
    int64_t tl;             /* its timeline for zone off-CPU times; -1 none, -2 not looked up */
    uint32_t cursor;        /* its place in that timeline (mprof__sys_off_at) */
    int64_t c_lo, c_hi, c_val; /* off_at is c_val on [c_lo, c_hi] */
    /* Zone events from mark up to quiet have nothing to flush: no sample of the thread before
     * them, no off-CPU interval starting by then. */
    int64_t quiet;
} zthread;

typedef struct sample {
    int64_t ts;
    uint64_t tid;
    uint32_t stack;
    uint32_t thread; /* capture thread index; 0: no thread has this tid */
    uint32_t fn;     /* index into funcs, UINT32_MAX when it could not be added */
    uint32_t order;  /* position in the file */
} sample;

typedef struct func {
    char *name, *module;
    uint64_t samples;
} func;

typedef struct byzone {
    uint32_t loc, fn; /* fn: index into funcs */
    uint64_t samples;
} byzone;

typedef struct zwake {
    uint32_t loc, waker;
    uint64_t count;
    int64_t ns;
} zwake;

typedef struct sys_pass {
    mprof_sysmodel *m;
    mprof_sys_status st;
    int keep_zones;
    int track; /* follow the zones (set by the prescan) */
    zthread *th;
    uint32_t n_th;
    sample *s;
    uint32_t n_s, cap_s;
    uint64_t lost_records;
    mprof_symbolizer *sym;
    int64_t *zone_off, *zone_self_off; /* per source location */
    uint32_t n_loc;
    func *fn;
    uint32_t n_fn, cap_fn;
    mprof_umap fn_by_hash;
    byzone *bz;
    uint32_t n_bz, cap_bz;
    mprof_umap bz_by_key;
    uint64_t samples_in_no_zone, samples_unmapped;
    int incomplete;
    /* per zone, the off-CPU intervals that began while it was the innermost open zone, by
     * reason and (with the sched tracepoints) by waker */
    int64_t (*zone_reason)[MPROF_SYS_REASON_MAX + 1];
    zwake *zw;
    uint32_t n_zw, cap_zw;
    mprof_umap zw_by_key;
    uint64_t own_pid;
    int sched_on, zw_sorted;
} sys_pass;

#define GROW(arr, n, idx) mprof_grow_zeroed((void **)&(arr), &(n), (idx), sizeof *(arr), 1u << 24)

static void *sys_create(mprof_analysis *a)
{
    sys_pass *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->m = mprof__sys_new();
    if (!p->m) {
        free(p);
        return NULL;
    }
    mprof__sys_status(mprof_analysis_reader(a), &p->st);
    p->keep_zones = p->st.context_switches || p->st.sampling;
    const mprof_reader *r = mprof_analysis_reader(a);
    const char *v = mprof_reader_info(r, "pid");
    p->own_pid = v ? strtoull(v, NULL, 10) : 0;
    v = mprof_reader_info(r, "system.sched_switch");
    p->sched_on = v && strncmp(v, "on", 2) == 0;
    return p;
}

static zthread *zt(sys_pass *p, uint32_t idx)
{
    uint32_t old = p->n_th;
    if (GROW(p->th, p->n_th, idx) != 0)
        return NULL;
    for (uint32_t i = old; i < p->n_th; i++) {
        p->th[i].tx = -1;
        p->th[i].tl = -2;
        p->th[i].c_lo = 1;
        p->th[i].c_hi = 0; /* empty: the first question asks the model */
        p->th[i].quiet = INT64_MAX;
        p->th[i].mark = INT64_MIN;
    }
    return &p->th[idx];
}

static void count_by_zone(sys_pass *p, uint32_t loc, uint32_t fn);

/* After the thread's samples or intervals moved on: how far zone events need no flush. */
static void refresh_quiet(const sys_pass *p, zthread *t)
{
    int64_t q = t->s_next < t->s_end ? p->s[t->s_next].ts : INT64_MAX;
    if (p->zone_reason && t->tx >= 0 && t->o_next < t->o_n) {
        int64_t o = t->o_os > INT64_MIN ? t->o_os - 1 : INT64_MIN;
        q = o < q ? o : q;
    }
    t->quiet = q;
}

/* The innermost zone open on thread t, 0 when none. */
static inline uint32_t top_loc(const zthread *t)
{
    return t->depth ? t->stack[t->depth - 1].loc : 0;
}

/* Attributes thread t's samples taken before ts to loc, the zone on top of its stack. */
static void flush_samples_to(sys_pass *p, zthread *t, int64_t ts, uint32_t loc)
{
    while (t->s_next < t->s_end && (p->s[t->s_next].ts < ts || ts == INT64_MAX)) {
        const sample *s = &p->s[t->s_next++];
        if (s->fn == UINT32_MAX)
            continue;
        if (!loc)
            p->samples_in_no_zone++;
        count_by_zone(p, loc, s->fn);
    }
    refresh_quiet(p, t);
}

static inline void flush_samples(sys_pass *p, zthread *t, int64_t ts)
{
    if (t->s_next < t->s_end)
        flush_samples_to(p, t, ts, top_loc(t));
}

static void give_wait(sys_pass *p, uint32_t loc, uint32_t tx, uint32_t k, int reason, int64_t ns,
                      int first)
{
    p->zone_reason[loc][reason >= 0 && reason <= MPROF_SYS_REASON_MAX ? reason : 0] += ns;
    uint32_t w = mprof__sys_tid_waker(p->m, tx, k);
    if (w == UINT32_MAX)
        return;
    uint64_t key = ((uint64_t)loc << 32 | w) + 1;
    uint32_t *v = mprof_umap_get(&p->zw_by_key, key);
    if (!v) {
        if (mprof_array_reserve((void **)&p->zw, &p->cap_zw, p->n_zw + 1, sizeof *p->zw) ||
            mprof_umap_put(&p->zw_by_key, key, p->n_zw) != 0) {
            p->incomplete = 1;
            return;
        }
        p->zw[p->n_zw] = (zwake){loc, w, 0, 0};
        v = mprof_umap_get(&p->zw_by_key, key);
        p->n_zw++;
        if (!v)
            return;
    }
    p->zw[*v].count += first ? 1 : 0;
    p->zw[*v].ns += ns;
}

/* Gives the zone on top of thread t's stack the part of each off-CPU interval of the thread that
 * falls in [t->mark, ts), the time since the thread's last zone event, during which that zone
 * was the innermost open one (its self time): by reason, and by waker when the tracepoints said
 * who. An interval that spans zone events is split among the zones, as self_off is; its wake-up
 * is counted once, to the zone it began in. */
static void next_interval(sys_pass *p, zthread *t)
{
    int reason;
    if (t->o_next < t->o_n)
        mprof__sys_tid_off(p->m, (uint32_t)t->tx, t->o_next, &t->o_os, &t->o_oe, &reason);
}

static void flush_waits_to(sys_pass *p, zthread *t, int64_t ts, uint32_t loc)
{
    if (!p->zone_reason || t->tx < 0)
        return;
    int64_t a = t->mark;
    t->mark = ts;
    /* Nothing of the next interval falls in [a, ts): the usual case, decided without a call. */
    if (t->o_next >= t->o_n || (t->o_os >= ts && t->o_oe > a))
        return;
    uint32_t before = t->o_next;
    while (t->o_next < t->o_n) {
        int64_t os, oe;
        int reason;
        uint32_t k = t->o_next;
        mprof__sys_tid_off(p->m, (uint32_t)t->tx, k, &os, &oe, &reason);
        if (oe <= a) { /* wholly before this stretch */
            t->o_next++;
            continue;
        }
        if (os >= ts)
            break;
        int ended = oe <= ts;
        if (ended)
            t->o_next++;
        int64_t s0 = os > a ? os : a, e0 = oe < ts ? oe : ts;
        if (loc && loc < p->n_loc && e0 > s0)
            give_wait(p, loc, (uint32_t)t->tx, k, reason, e0 - s0, os >= a);
        if (!ended)
            break; /* it goes on past ts: the rest belongs to the next stretch */
    }
    if (t->o_next != before) {
        next_interval(p, t);
        refresh_quiet(p, t);
    }
}

static inline void flush_waits(sys_pass *p, zthread *t, int64_t ts)
{
    flush_waits_to(p, t, ts, top_loc(t));
}

static int64_t off_at_slow(sys_pass *p, zthread *t, uint32_t idx, int64_t ts)
{
    if (t->tl == -2)
        t->tl = mprof__sys_thread_tidx(p->m, idx);
    if (t->tl < 0) {
        t->c_lo = INT64_MIN;
        t->c_hi = INT64_MAX;
        t->c_val = 0;
        return 0;
    }
    t->c_val = mprof__sys_off_at(p->m, (uint32_t)t->tl, ts, &t->cursor, &t->c_lo, &t->c_hi);
    return t->c_val;
}

/* The thread's off-CPU time before ts on its timeline (0 for an untraced thread). */
static inline int64_t off_at(sys_pass *p, zthread *t, uint32_t idx, int64_t ts)
{
    if (ts >= t->c_lo && ts <= t->c_hi)
        return t->c_val;
    return off_at_slow(p, t, idx, ts);
}

/* Off-CPU time of a zone of thread t open over [begin, end) whose off_at(begin) was off_begin. */
static inline int64_t zone_off(sys_pass *p, zthread *t, uint32_t idx, int64_t begin, int64_t end,
                               int64_t off_begin)
{
    int64_t off_end = off_at(p, t, idx, end);
    if (off_end == off_begin || t->tl < 0)
        return 0;
    int64_t a = begin, b = end;
    mprof__sys_tid_clamp(p->m, (uint32_t)t->tl, &a, &b);
    return b > a ? off_end - off_begin : 0;
}

/* A zone of thread t ends with its off-CPU time off: its own, its self time's, its parent's. */
static inline void zone_done(sys_pass *p, zthread *t, uint32_t loc, int64_t off, int64_t child_off)
{
    if (loc < p->n_loc) {
        p->zone_off[loc] += off;
        int64_t self = off - child_off;
        p->zone_self_off[loc] += self > 0 ? self : 0;
    }
    if (t->depth)
        t->stack[t->depth - 1].child_off += off;
}

static void track_begin(sys_pass *p, zthread *t, uint32_t idx, uint32_t loc, int64_t ts)
{
    flush_samples(p, t, ts);
    flush_waits(p, t, ts);
    if (mprof_array_reserve((void **)&t->stack, &t->scap, t->depth + 1, sizeof *t->stack) != 0) {
        p->incomplete = 1;
        return;
    }
    t->stack[t->depth++] = (zopen){loc, ts, 0, off_at(p, t, idx, ts)};
}

static void track_end(sys_pass *p, zthread *t, uint32_t idx, int64_t ts)
{
    flush_samples(p, t, ts);
    flush_waits(p, t, ts);
    const zopen z = t->stack[--t->depth];
    int64_t end = ts > z.begin ? ts : z.begin;
    zone_done(p, t, z.loc, zone_off(p, t, idx, z.begin, end, z.off_at), z.child_off);
}

/* A zone without children, begun at ts, dur long: track_begin then track_end, without the
 * stack. */
static void track_leaf(sys_pass *p, zthread *t, uint32_t idx, uint32_t loc, int64_t ts,
                       int64_t dur)
{
    flush_samples(p, t, ts);
    flush_waits(p, t, ts);
    int64_t off_begin = off_at(p, t, idx, ts), end = ts + dur;
    if (t->s_next < t->s_end)
        flush_samples_to(p, t, end, loc);
    flush_waits_to(p, t, end, loc);
    zone_done(p, t, loc, zone_off(p, t, idx, ts, end, off_begin), 0);
}

/* The zone read: each thread's zones with their off-CPU time, its samples and its waits. */
static void sys_batch(void *state, mprof_analysis *a, const mprof_batch *b)
{
    sys_pass *p = state;
    (void)a;
    if (!p->track)
        return;
    for (uint32_t ri = 0; ri < b->n_run; ri++) {
        const mprof_run *run = &b->run[ri];
        uint32_t idx = run->thread;
        zthread *t = zt(p, idx);
        if (!t) {
            p->incomplete = 1;
            continue;
        }
        for (const mprof_rec *e = b->rec + run->first, *end = b->rec + run->end; e < end; e++) {
            int64_t ts = e->ts_ns;
            switch (mprof_rec_type(e)) {
            case MPROF_REC_LEAF: {
                if (t->in_fiber)
                    continue;
                int64_t te = ts + mprof_rec_dur(e);
                /* Nothing to flush and no time off the CPU inside: nothing to count. */
                if (ts >= t->mark && te <= t->quiet && ts >= t->c_lo && te <= t->c_hi) {
                    t->mark = te;
                    continue;
                }
                track_leaf(p, t, idx, e->x, ts, te - ts);
                continue;
            }
            case MPROF_EV_ZONE_BEGIN:
                if (t->in_fiber)
                    continue;
                if (ts >= t->mark && ts <= t->quiet && t->depth < t->scap) {
                    t->mark = ts;
                    t->stack[t->depth++] = (zopen){e->x, ts, 0, off_at(p, t, idx, ts)};
                    continue;
                }
                track_begin(p, t, idx, e->x, ts);
                continue;
            case MPROF_EV_ZONE_END:
                if (t->in_fiber || !t->depth)
                    continue;
                if (ts >= t->mark && ts <= t->quiet) {
                    const zopen *z = &t->stack[t->depth - 1];
                    int64_t zend = ts > z->begin ? ts : z->begin;
                    if (zend >= t->c_lo && zend <= t->c_hi && z->off_at == t->c_val &&
                        !z->child_off) {
                        t->mark = ts;
                        t->depth--; /* no time off the CPU in it or its children */
                        continue;
                    }
                }
                track_end(p, t, idx, ts);
                continue;
            case MPROF_EV_FIBER_ENTER:
                t->in_fiber = 1;
                continue;
            case MPROF_EV_FIBER_LEAVE:
                t->in_fiber = 0;
                continue;
            case MPROF_EV_LOST:
                flush_samples(p, t, e->ts_ns);
                flush_waits(p, t, e->ts_ns);
                t->depth = 0; /* the zones open here never get their ends */
                continue;
            default:
                continue;
            }
        }
    }
}

/* The first read: system records, samples and modules. */
static void sys_prescan_want(unsigned char want[MPROF_EV_MAX])
{
    mprof__sys_want(want);
    want[MPROF_EV_DEF_MODULE] = 1;
}

static void sys_prescan_event(sys_pass *p, const mprof_event *ev)
{
    switch (ev->type) {
    case MPROF_EV_SYS_SAMPLE:
        if (p->n_s == UINT32_MAX ||
            mprof_array_reserve((void **)&p->s, &p->cap_s, p->n_s + 1, sizeof *p->s) != 0) {
            p->incomplete = 1;
            return;
        }
        p->s[p->n_s] = (sample){ev->ts_ns, ev->u[0], (uint32_t)ev->u[1], 0, UINT32_MAX, p->n_s};
        p->n_s++;
        return;
    case MPROF_EV_SYS_LOST:
        p->lost_records += ev->u[1];
        return;
    case MPROF_EV_DEF_MODULE:
        if (!p->sym)
            p->sym = mprof_symbolizer_new();
        if (p->sym)
            mprof_symbolizer_add_event(p->sym, ev);
        return;
    default:
        return;
    }
}

static void sys_prescan_batch(void *state, const mprof_reader *r, const mprof_batch *b)
{
    sys_pass *p = state;
    if (mprof__sys_batch(p->m, r, b) != 0)
        p->incomplete = 1;
    for (uint32_t i = 0; i < b->n_ev; i++)
        sys_prescan_event(p, &b->ev[i]);
}

/* After its prescan the pass reads records only (records_only). */
static void sys_fields(unsigned char need[MPROF_EV_MAX])
{
    (void)need;
}

/* Without switches or samples the zone read has nothing to do (sys_batch returns at once). */
static bool sys_prescan_done(const void *state)
{
    return !((const sys_pass *)state)->track;
}

/* ---- finish: samples ------------------------------------------------------------------------ */

static uint64_t fnv(const char *s, uint64_t h)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Index of the function (name, module) in the table, added when new; UINT32_MAX on failure. */
static uint32_t func_id(sys_pass *p, const char *name, const char *module)
{
    uint64_t h = fnv(module, fnv(name, 0xcbf29ce484222325ull) ^ 0x9e37) | 1;
    for (;; h = (h * 31 + 7) | 1) {
        uint32_t *v = mprof_umap_get(&p->fn_by_hash, h);
        if (!v)
            break;
        func *f = &p->fn[*v];
        if (strcmp(f->name, name) == 0 && strcmp(f->module, module) == 0)
            return *v;
    }
    if (mprof_array_reserve((void **)&p->fn, &p->cap_fn, p->n_fn + 1, sizeof *p->fn) != 0)
        return UINT32_MAX;
    func *f = &p->fn[p->n_fn];
    f->name = tool_strdup(name);
    f->module = tool_strdup(module);
    f->samples = 0;
    if (!f->name || !f->module || mprof_umap_put(&p->fn_by_hash, h, p->n_fn) != 0) {
        free(f->name);
        free(f->module);
        return UINT32_MAX;
    }
    return p->n_fn++;
}

static void count_by_zone(sys_pass *p, uint32_t loc, uint32_t fn)
{
    uint64_t key = ((uint64_t)loc << 32 | fn) + 1;
    uint32_t *v = mprof_umap_get(&p->bz_by_key, key);
    if (v) {
        p->bz[*v].samples++;
        return;
    }
    if (mprof_array_reserve((void **)&p->bz, &p->cap_bz, p->n_bz + 1, sizeof *p->bz) != 0 ||
        mprof_umap_put(&p->bz_by_key, key, p->n_bz) != 0) {
        p->incomplete = 1;
        return;
    }
    p->bz[p->n_bz++] = (byzone){loc, fn, 1};
}

static uint32_t thread_of_tid(const mprof_reader *r, uint64_t tid)
{
    uint32_t n = mprof_reader_thread_count(r);
    for (uint32_t i = 1; i < n; i++) {
        const mprof_thread_def *d = mprof_reader_thread(r, i);
        if (d && d->os_tid == tid)
            return i;
    }
    return 0;
}

/* Each sample's function (named in file order, so the table's order does not depend on the
 * zones) and capture thread. */
static void name_samples(sys_pass *p, const mprof_reader *r)
{
    uint64_t last_tid = UINT64_MAX;
    uint32_t last_idx = 0;
    for (uint32_t i = 0; i < p->n_s; i++) {
        sample *s = &p->s[i];
        uint32_t depth = 0;
        const uint64_t *fr = mprof_reader_callstack(r, s->stack, &depth);
        char buf[256];
        const char *name = "?", *module = "?";
        if (fr && depth) {
            mprof_symbol sy = {0};
            if (p->sym && mprof_symbolizer_lookup(p->sym, fr[0], &sy) && sy.function) {
                name = sy.function;
            } else if (sy.module) {
                snprintf(buf, sizeof buf, "%s+0x%" PRIx64,
                         strrchr(sy.module, '/') ? strrchr(sy.module, '/') + 1 : sy.module,
                         sy.module_offset);
                name = buf;
            } else {
                snprintf(buf, sizeof buf, "0x%" PRIx64, fr[0] - 1);
                name = buf;
            }
            if (sy.module)
                module = sy.module;
        }
        s->fn = func_id(p, name, module);
        if (s->fn == UINT32_MAX) {
            p->incomplete = 1;
            continue;
        }
        p->fn[s->fn].samples++;
        if (s->tid != last_tid) {
            last_tid = s->tid;
            last_idx = thread_of_tid(r, s->tid);
        }
        s->thread = last_idx;
        if (!last_idx)
            p->samples_unmapped++;
    }
}

static int cmp_sample(const void *x, const void *y)
{
    const sample *a = x, *b = y;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* After the first read: the timelines are built, the samples named and sorted by thread and
 * time, and each thread's share of them marked for the zone read. */
static void sys_prescan_end(void *state, const mprof_reader *r)
{
    sys_pass *p = state;
    mprof__sys_finish(p->m, r);
    if (mprof__sys_incomplete(p->m))
        p->incomplete = 1;
    name_samples(p, r);
    if (p->n_s > 1)
        qsort(p->s, p->n_s, sizeof *p->s, cmp_sample);
    for (uint32_t i = 0; i < p->n_s;) {
        uint32_t k = i;
        while (k < p->n_s && p->s[k].thread == p->s[i].thread)
            k++;
        zthread *t = p->s[i].thread ? zt(p, p->s[i].thread) : NULL;
        if (t) {
            t->s_next = i;
            t->s_end = k;
            refresh_quiet(p, t);
        } else if (p->s[i].thread) {
            p->incomplete = 1;
        }
        i = k;
    }
    p->track = p->keep_zones || mprof__sys_has_switches(p->m) || p->n_s;
    if (!p->track)
        return;
    uint32_t nloc = mprof_reader_srcloc_count(r);
    if (nloc > (1u << 24))
        nloc = 1u << 24;
    p->zone_off = calloc(nloc ? nloc : 1, sizeof *p->zone_off);
    p->zone_self_off = calloc(nloc ? nloc : 1, sizeof *p->zone_self_off);
    if (!p->zone_off || !p->zone_self_off) {
        p->incomplete = 1;
        return;
    }
    p->n_loc = nloc;
    if (!mprof__sys_has_switches(p->m))
        return;
    /* Each traced thread's off-CPU intervals, given to zones as the zones stream by. */
    p->zone_reason = calloc(nloc ? nloc : 1, sizeof *p->zone_reason);
    if (!p->zone_reason) {
        p->incomplete = 1;
        return;
    }
    uint32_t nth = mprof_reader_thread_count(r);
    for (uint32_t ti = 1; ti < nth; ti++) {
        int64_t tx = mprof__sys_thread_tidx(p->m, ti);
        if (tx < 0)
            continue;
        zthread *t = zt(p, ti);
        if (!t) {
            p->incomplete = 1;
            return;
        }
        uint64_t tid;
        int64_t a, b;
        uint32_t n_off;
        mprof__sys_tid_info(p->m, (uint32_t)tx, &tid, &a, &b, &n_off);
        t->tx = tx;
        t->o_next = 0;
        t->o_n = n_off;
        t->mark = INT64_MIN;
        next_interval(p, t);
        refresh_quiet(p, t);
    }
}

/* After the zone read: the samples after each thread's last zone event go to the zone still
 * open on top of its stack (or none). */
static void sys_finish(void *state, mprof_analysis *a)
{
    sys_pass *p = state;
    (void)a;
    for (uint32_t i = 0; i < p->n_th; i++) {
        flush_samples(p, &p->th[i], INT64_MAX);
        flush_waits(p, &p->th[i], INT64_MAX);
    }
}

/* ---- wakers --------------------------------------------------------------------------------- */

static const char *const ctx_names[] = {"task", "hardirq", "softirq", "nmi"};

/* A waker's name: the capture thread's name for a thread of this process, else the OS name
 * (SYS_COMM), else "tid N"; an interrupt is "interrupt (hardirq)" and so on. */
static const char *waker_name(const sys_pass *p, const mprof_reader *r, uint32_t w, char *buf,
                              size_t n)
{
    uint64_t tid, pid;
    int ctx;
    const char *comm;
    mprof__sys_waker_info(p->m, w, &tid, &pid, &ctx, &comm);
    if (ctx != MPROF_SYS_WAKE_TASK) {
        snprintf(buf, n, "interrupt (%s)", ctx_names[ctx & 3]);
        return buf;
    }
    if (pid == p->own_pid) {
        uint32_t idx = thread_of_tid(r, tid);
        const mprof_thread_def *d = idx ? mprof_reader_thread(r, idx) : NULL;
        if (d && d->name)
            return d->name;
    }
    if (comm)
        return comm;
    snprintf(buf, n, "tid %" PRIu64, tid);
    return buf;
}

static void waker_json(const sys_pass *p, const mprof_reader *r, mprof_json *j, uint32_t w,
                       uint64_t count, int64_t ns)
{
    uint64_t tid, pid;
    int ctx;
    const char *comm;
    char buf[64];
    mprof__sys_waker_info(p->m, w, &tid, &pid, &ctx, &comm);
    mprof_json_obj_begin(j, NULL);
    mprof_json_str(j, "name", waker_name(p, r, w, buf, sizeof buf));
    mprof_json_str(j, "context", ctx_names[ctx & 3]);
    mprof_json_u64(j, "tid", tid);
    mprof_json_u64(j, "pid", pid);
    mprof_json_bool(j, "same_process", ctx == MPROF_SYS_WAKE_TASK && pid == p->own_pid);
    mprof_json_u64(j, "wakeups", count);
    mprof_json_u64(j, "off_cpu_ns", (uint64_t)ns);
    mprof_json_obj_end(j);
}

/* The top n wakers of capture thread idx: waker ids, counts and off-CPU ns of the intervals
 * they ended. Returns how many (at most n). */
static uint32_t thread_wakers(const sys_pass *p, uint32_t idx, uint32_t n, uint32_t *w,
                              uint64_t *cnt, int64_t *ns)
{
    int64_t tx = mprof__sys_thread_tidx(p->m, idx);
    uint32_t nw = mprof__sys_waker_count(p->m);
    if (tx < 0 || !nw)
        return 0;
    uint64_t *c = calloc(nw, sizeof *c);
    int64_t *t = calloc(nw, sizeof *t);
    uint32_t got = 0;
    if (c && t) {
        uint64_t tid;
        int64_t a, b;
        uint32_t n_off;
        mprof__sys_tid_info(p->m, (uint32_t)tx, &tid, &a, &b, &n_off);
        for (uint32_t k = 0; k < n_off; k++) {
            uint32_t x = mprof__sys_tid_waker(p->m, (uint32_t)tx, k);
            int64_t os, oe;
            int reason;
            mprof__sys_tid_off(p->m, (uint32_t)tx, k, &os, &oe, &reason);
            if (x < nw) {
                c[x]++;
                t[x] += oe - os;
            }
        }
        for (; got < n; got++) { /* n is small: selection */
            uint32_t best = UINT32_MAX;
            for (uint32_t x = 0; x < nw; x++)
                if (c[x] && (best == UINT32_MAX || t[x] > t[best]))
                    best = x;
            if (best == UINT32_MAX)
                break;
            w[got] = best;
            cnt[got] = c[best];
            ns[got] = t[best];
            c[best] = 0;
        }
    }
    free(c);
    free(t);
    return got;
}

static int cmp_zw(const void *x, const void *y)
{
    const zwake *a = x, *b = y;
    if (a->loc != b->loc)
        return a->loc < b->loc ? -1 : 1;
    return a->ns > b->ns ? -1 : a->ns < b->ns;
}

/* ---- output --------------------------------------------------------------------------------- */

static const sys_pass *sort_ctx; /* qsort has no context argument in C11 */

static int cmp_fn_idx(const void *x, const void *y)
{
    const func *a = &sort_ctx->fn[*(const uint32_t *)x], *b = &sort_ctx->fn[*(const uint32_t *)y];
    if (a->samples != b->samples)
        return a->samples > b->samples ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int cmp_bz(const void *x, const void *y)
{
    const byzone *a = x, *b = y;
    if (a->samples != b->samples)
        return a->samples > b->samples ? -1 : 1;
    if (a->loc != b->loc)
        return a->loc < b->loc ? -1 : 1;
    return a->fn < b->fn ? -1 : a->fn > b->fn;
}

/* Function indices, most sampled first (NULL when there are none or memory runs out). */
static uint32_t *sorted_funcs(const sys_pass *p)
{
    if (!p->n_fn)
        return NULL;
    uint32_t *ids = malloc(p->n_fn * sizeof *ids);
    if (!ids)
        return NULL;
    for (uint32_t i = 0; i < p->n_fn; i++)
        ids[i] = i;
    sort_ctx = p;
    qsort(ids, p->n_fn, sizeof *ids, cmp_fn_idx);
    return ids;
}

static const char *zone_name(const mprof_reader *r, uint32_t loc)
{
    const mprof_srcloc_def *d = loc ? mprof_reader_srcloc(r, loc) : NULL;
    return d && d->name ? d->name : NULL;
}

static const char *thread_name(const mprof_reader *r, uint32_t idx, char *buf, size_t n)
{
    const mprof_thread_def *d = mprof_reader_thread(r, idx);
    if (d && d->name)
        return d->name;
    snprintf(buf, n, "thread %u", idx);
    return buf;
}

static void sys_print_text(void *state, mprof_analysis *a, FILE *out, int top_n)
{
    sys_pass *p = state;
    const mprof_reader *r = mprof_analysis_reader(a);
    if (!mprof_reader_info(r, "system.context_switches") && !p->n_s &&
        !mprof__sys_has_switches(p->m) && !mprof__analysis_wants(a, "samples"))
        return; /* a capture from before system tracing: nothing to say */
    fprintf(out, "\nSystem    context switches %s, CPU usage %s, sampling ",
            p->st.context_switches ? "on" : "off", p->st.cpu_usage ? "on" : "off");
    if (p->st.sampling)
        fprintf(out, "%u Hz\n", p->st.sample_hz);
    else
        fprintf(out, "off\n");
    /* Names from the capture (threads, zones, symbols, its own reasons) are escaped. */
    char e[256], e2[256];
    if (p->st.why_not)
        fprintf(out, "  why not: %s\n", tool_text(p->st.why_not, e, sizeof e));
    uint32_t nb;
    double bmean, bmax, smean;
    mprof__sys_busy_summary(p->m, &nb, &bmean, &bmax, &smean);
    if (nb)
        fprintf(out, "  CPU used by other processes: mean %.1f %%, max %.1f %% of the machine; by "
                     "this process: mean %.1f %% (%u samples)\n",
                100 * bmean, 100 * bmax, 100 * smean, nb);
    if (p->lost_records)
        fprintf(out, "  %" PRIu64 " kernel records lost (ring buffer full): figures are low\n",
                p->lost_records);
    if (p->incomplete)
        fprintf(out, "  out of memory while reading: the system figures are incomplete\n");
    if (mprof__sys_has_switches(p->m)) {
        fprintf(out, "  %-24s %10s %12s %12s %7s %12s %12s %12s  %s\n", "thread", "switches",
                "on-CPU ms", "off-CPU ms", "%off", "preempted", "blocked", "yielded",
                p->sched_on ? "woken most by" : "");
        uint32_t n = mprof_reader_thread_count(r);
        for (uint32_t i = 1; i < n; i++) {
            if (!mprof__sys_thread_traced(p->m, i))
                continue;
            int64_t off, traced;
            mprof__sys_thread_time(p->m, i, INT64_MIN / 2, INT64_MAX / 2, &off, &traced);
            char tb[32];
            int64_t rs[MPROF_SYS_REASON_MAX + 1];
            mprof__sys_thread_reasons(p->m, i, rs);
            uint32_t w;
            uint64_t wc = 0;
            int64_t wns = 0;
            char wb[96] = "", wname[64];
            if (thread_wakers(p, i, 1, &w, &wc, &wns))
                snprintf(wb, sizeof wb, "%s (%" PRIu64 "x)",
                         tool_text(waker_name(p, r, w, wname, sizeof wname), e2, 64), wc);
            fprintf(out, "  %-24.24s %10" PRIu64 " %12.3f %12.3f %7.1f %12.3f %12.3f %12.3f  %s\n",
                    tool_text(thread_name(r, i, tb, sizeof tb), e, 25), mprof__sys_thread_switches(p->m, i),
                    (double)(traced - off) / 1e6, (double)off / 1e6,
                    traced > 0 ? 100.0 * (double)off / (double)traced : 0.0,
                    (double)rs[MPROF_SYS_REASON_PREEMPTED] / 1e6,
                    (double)rs[MPROF_SYS_REASON_BLOCKED] / 1e6,
                    (double)rs[MPROF_SYS_REASON_YIELDED] / 1e6, wb);
        }
        if (p->n_zw) {
            if (!p->zw_sorted)
                qsort(p->zw, p->n_zw, sizeof *p->zw, cmp_zw);
            p->zw_sorted = 1;
            mprof_umap_free(&p->zw_by_key);
            fprintf(out, "  zones woken by (off-CPU intervals begun in the zone, its top waker):\n");
            for (uint32_t k = 0; k < p->n_zw; k++) {
                if (k && p->zw[k].loc == p->zw[k - 1].loc)
                    continue;
                char wb[64];
                const char *zn = zone_name(r, p->zw[k].loc);
                fprintf(out, "    %-32.32s %-28.28s %8" PRIu64 " wake-ups %12.3f ms\n",
                        zn ? tool_text(zn, e, 33) : "?",
                        tool_text(waker_name(p, r, p->zw[k].waker, wb, sizeof wb), e2, 29),
                        p->zw[k].count, (double)p->zw[k].ns / 1e6);
            }
        }
    }
    if (!mprof__analysis_wants(a, "samples"))
        return;
    fprintf(out, "\nHot functions (%u samples", p->n_s);
    if (p->st.sample_hz)
        fprintf(out, " at %u Hz", p->st.sample_hz);
    fprintf(out, ")\n");
    if (!p->n_s) {
        fprintf(out, "  no samples (%s)\n",
                p->st.sampling ? "the threads never ran while sampled"
                               : (p->st.why_not ? tool_text(p->st.why_not, e, sizeof e)
                                                : "sampling was off"));
        return;
    }
    uint32_t *ids = sorted_funcs(p);
    uint32_t shown = p->n_fn < (uint32_t)top_n ? p->n_fn : (uint32_t)top_n;
    fprintf(out, "  %9s %6s  %-40s %s\n", "samples", "%", "function", "module");
    for (uint32_t k = 0; ids && k < shown; k++) {
        const func *f = &p->fn[ids[k]];
        const char *slash = strrchr(f->module, '/');
        fprintf(out, "  %9" PRIu64 " %6.1f  %-40.40s %s\n", f->samples,
                100.0 * (double)f->samples / (double)p->n_s, tool_text(f->name, e, 41),
                tool_text(slash ? slash + 1 : f->module, e2, sizeof e2));
    }
    free(ids);
    if (p->n_bz) {
        qsort(p->bz, p->n_bz, sizeof *p->bz, cmp_bz);
        /* the key map indexes the old order */
        mprof_umap_free(&p->bz_by_key);
        shown = p->n_bz < (uint32_t)top_n ? p->n_bz : (uint32_t)top_n;
        fprintf(out, "\nSamples by innermost zone\n  %-32s %-40s %9s\n", "zone", "function",
                "samples");
        for (uint32_t k = 0; k < shown; k++) {
            const char *zn = zone_name(r, p->bz[k].loc);
            fprintf(out, "  %-32.32s %-40.40s %9" PRIu64 "\n", zn ? tool_text(zn, e, 33) : "(no zone)",
                    tool_text(p->fn[p->bz[k].fn].name, e2, 41), p->bz[k].samples);
        }
    }
}

static void sys_print_json(void *state, mprof_analysis *a, mprof_json *j)
{
    sys_pass *p = state;
    const mprof_reader *r = mprof_analysis_reader(a);
    mprof_json_obj_begin(j, "samples");
    mprof_json_u64(j, "count", p->n_s);
    mprof_json_u64(j, "hz", p->st.sampling ? p->st.sample_hz : 0);
    mprof_json_arr_begin(j, "functions");
    uint32_t *ids = sorted_funcs(p);
    for (uint32_t k = 0; ids && k < p->n_fn; k++) {
        const func *f = &p->fn[ids[k]];
        mprof_json_obj_begin(j, NULL);
        mprof_json_str(j, "name", f->name);
        mprof_json_str(j, "module", f->module);
        mprof_json_u64(j, "samples", f->samples);
        mprof_json_obj_end(j);
    }
    free(ids);
    mprof_json_arr_end(j);
    if (p->n_bz > 1) {
        qsort(p->bz, p->n_bz, sizeof *p->bz, cmp_bz);
        mprof_umap_free(&p->bz_by_key);
    }
    mprof_json_arr_begin(j, "by_zone");
    for (uint32_t k = 0; k < p->n_bz; k++) {
        mprof_json_obj_begin(j, NULL);
        mprof_json_str(j, "zone", zone_name(r, p->bz[k].loc));
        mprof_json_str(j, "function", p->fn[p->bz[k].fn].name);
        mprof_json_u64(j, "samples", p->bz[k].samples);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
    mprof_json_u64(j, "unattributed", p->samples_unmapped);
    mprof_json_obj_end(j);

    mprof_json_obj_begin(j, "system");
    mprof_json_bool(j, "context_switches", p->st.context_switches);
    mprof_json_bool(j, "cpu_usage", p->st.cpu_usage);
    mprof_json_bool(j, "sampling", p->st.sampling);
    mprof_json_str(j, "why_not", p->st.why_not);
    mprof_json_u64(j, "lost_records", p->lost_records);
    uint32_t nb;
    double bmean, bmax, smean;
    mprof__sys_busy_summary(p->m, &nb, &bmean, &bmax, &smean);
    mprof_json_u64(j, "cpu_samples", nb);
    mprof_json_f64(j, "other_cpu_mean", bmean);
    mprof_json_f64(j, "other_cpu_max", bmax);
    mprof_json_f64(j, "self_cpu_mean", smean);
    mprof_json_bool(j, "incomplete", p->incomplete);
    mprof_json_bool(j, "sched_switch", p->sched_on);
    mprof_json_str(j, "cpu_usage_source", mprof_reader_info(r, "system.cpu_usage.source"));
    mprof_json_arr_begin(j, "cpus");
    for (uint32_t i = 0; i < mprof__sys_core_count(p->m); i++) {
        uint32_t cpu, n;
        double o, sf;
        mprof__sys_core(p->m, i, &cpu, &n, &o, &sf);
        mprof_json_obj_begin(j, NULL);
        mprof_json_u64(j, "cpu", cpu);
        mprof_json_u64(j, "samples", n);
        mprof_json_f64(j, "other_cpu_mean", o);
        mprof_json_f64(j, "self_cpu_mean", sf);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
    mprof_json_obj_end(j);
}

static void sys_destroy(void *state)
{
    sys_pass *p = state;
    if (!p)
        return;
    mprof__sys_free(p->m);
    for (uint32_t i = 0; i < p->n_th; i++)
        free(p->th[i].stack);
    free(p->th);
    free(p->s);
    mprof_symbolizer_free(p->sym);
    free(p->zone_off);
    free(p->zone_self_off);
    free(p->zone_reason);
    free(p->zw);
    mprof_umap_free(&p->zw_by_key);
    for (uint32_t i = 0; i < p->n_fn; i++) {
        free(p->fn[i].name);
        free(p->fn[i].module);
    }
    free(p->fn);
    mprof_umap_free(&p->fn_by_hash);
    free(p->bz);
    mprof_umap_free(&p->bz_by_key);
    free(p);
}

const mprof_pass_vtbl mprof__system_pass = {
    .name = "samples",
    .always = true,
    .beside = true,
    .create = sys_create,
    .batch = sys_batch,
    .finish = sys_finish,
    .print_text = sys_print_text,
    .print_json = sys_print_json,
    .destroy = sys_destroy,
    .prescan_want = sys_prescan_want,
    .prescan_batch = sys_prescan_batch,
    .prescan_end = sys_prescan_end,
    .prescan_done = sys_prescan_done,
    .records_only = true,
    .fields = sys_fields,
};

/* ---- hooks for the core tables -------------------------------------------------------------- */

static const sys_pass *state_of(const mprof_analysis *a)
{
    return mprof_analysis_pass_state(a, "samples");
}

int64_t mprof__system_zone_off_ns(const mprof_analysis *a, uint32_t loc)
{
    const sys_pass *p = state_of(a);
    if (!p || !mprof__sys_has_switches(p->m) || !p->zone_off)
        return -1;
    return loc < p->n_loc ? p->zone_off[loc] : 0;
}

void mprof__system_zone_json(const mprof_analysis *a, mprof_json *j, uint32_t loc)
{
    int64_t off = mprof__system_zone_off_ns(a, loc);
    if (off < 0)
        return;
    const sys_pass *p = state_of(a);
    mprof_json_u64(j, "off_cpu_ns", (uint64_t)off);
    mprof_json_u64(j, "self_off_cpu_ns", loc < p->n_loc ? (uint64_t)p->zone_self_off[loc] : 0);
    if (!p->zone_reason || loc >= p->n_loc)
        return;
    mprof_json_u64(j, "self_preempted_ns", (uint64_t)p->zone_reason[loc][MPROF_SYS_REASON_PREEMPTED]);
    mprof_json_u64(j, "self_blocked_ns", (uint64_t)p->zone_reason[loc][MPROF_SYS_REASON_BLOCKED]);
    mprof_json_u64(j, "self_yielded_ns", (uint64_t)p->zone_reason[loc][MPROF_SYS_REASON_YIELDED]);
    if (!p->sched_on)
        return;
    sys_pass *mp = (sys_pass *)p; /* sorted once, on first use */
    if (!mp->zw_sorted) {
        if (mp->n_zw > 1) /* qsort's array must not be NULL, even for no elements */
            qsort(mp->zw, mp->n_zw, sizeof *mp->zw, cmp_zw);
        mprof_umap_free(&mp->zw_by_key);
        mp->zw_sorted = 1;
    }
    uint32_t lo = 0, hi = p->n_zw;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->zw[mid].loc < loc)
            lo = mid + 1;
        else
            hi = mid;
    }
    mprof_json_arr_begin(j, "woken_by");
    for (uint32_t k = lo, shown = 0; k < p->n_zw && p->zw[k].loc == loc && shown < 5; k++, shown++)
        waker_json(p, mprof_analysis_reader(a), j, p->zw[k].waker, p->zw[k].count, p->zw[k].ns);
    mprof_json_arr_end(j);
}

void mprof__system_thread_json(const mprof_analysis *a, mprof_json *j, uint32_t idx)
{
    const sys_pass *p = state_of(a);
    if (!p || !mprof__sys_thread_traced(p->m, idx))
        return;
    int64_t off, traced;
    mprof__sys_thread_time(p->m, idx, INT64_MIN / 2, INT64_MAX / 2, &off, &traced);
    mprof_json_u64(j, "context_switches", mprof__sys_thread_switches(p->m, idx));
    mprof_json_u64(j, "on_cpu_ns", (uint64_t)(traced - off));
    mprof_json_u64(j, "off_cpu_ns", (uint64_t)off);
    int64_t rs[MPROF_SYS_REASON_MAX + 1];
    mprof__sys_thread_reasons(p->m, idx, rs);
    mprof_json_u64(j, "preempted_ns", (uint64_t)rs[MPROF_SYS_REASON_PREEMPTED]);
    mprof_json_u64(j, "blocked_ns", (uint64_t)rs[MPROF_SYS_REASON_BLOCKED]);
    mprof_json_u64(j, "yielded_ns", (uint64_t)rs[MPROF_SYS_REASON_YIELDED]);
    if (!p->sched_on)
        return;
    uint32_t w[5];
    uint64_t c[5];
    int64_t ns[5];
    uint32_t n = thread_wakers(p, idx, 5, w, c, ns);
    mprof_json_arr_begin(j, "wakers");
    for (uint32_t k = 0; k < n; k++)
        waker_json(p, mprof_analysis_reader(a), j, w[k], c[k], ns[k]);
    mprof_json_arr_end(j);
}
