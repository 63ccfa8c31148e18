/*
 * frames.c - writes a capture's frames as mprof.frames.v1 JSON for the regression gate (the
 * format's reader is frames_read.c).
 *
 * The gate needs three things from a capture: who made it (so it can refuse to compare runs from
 * different machines or builds), the duration of every frame (for percentiles and rank tests),
 * and how much of each frame each zone took (to say where a regression went). The last one needs
 * the frame boundaries before the zones are read, and events of different threads are not in time
 * order in the file, so the capture is read twice: the first pass collects frame marks and zone
 * totals, the second spreads the time of the top zones over the frames they overlap, using the
 * per-thread zone stacks to split self time (the zone minus its children) exactly. Memory grows
 * with frames x top zones, never with the number of events.
 */
#define _POSIX_C_SOURCE 200809L

#include "export/frames.h"
#include "export/frames_run.h"
#include "util/json_out.h"
#include "util/tool.h"
#include "analysis/percentile.h"
#include "analysis/system.h"
#include "format/batch.h"
#include "format/format.h"
#include "util/grow.h"
#include "util/sorted.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct i64_vec {
    int64_t *v;
    size_t n, cap;
} i64_vec;

static int vec_push(i64_vec *a, int64_t x)
{
    if (MPROF_GROW(a->v, a->cap, a->n + 1, 256) != 0)
        return -1;
    a->v[a->n++] = x;
    return 0;
}

/* A frame set: the unnamed main set (name 0) or a named one; marks or begin/end ranges. */
typedef struct fset {
    uint32_t name;  /* string id, 0 = main */
    int range;      /* FRAME_BEGIN/FRAME_END rather than marks */
    i64_vec marks;  /* FRAME_MARK times */
    i64_vec begins; /* range starts and ends, paired */
    i64_vec ends;
    int64_t open;   /* pending FRAME_BEGIN, -1 none */
    uint32_t thread; /* thread of the first mark or begin (0 = none yet) */
    i64_vec losses;  /* times of LOST records on that thread */
    /* Frames as intervals [start, end), sorted by start. Frames that span lost events of the
     * marking thread are left out (their marks may be among the lost events) and counted. */
    int64_t *fs, *fe;
    size_t nf, incomplete;
} fset;

/* One zone: source locations with the same name and function are merged (the zone identity of
 * zone_key.h, which `mprof gate` uses to pair zones of two exports). */
typedef struct zone {
    const char *name, *file, *function; /* the copies below */
    char *name_copy, *file_copy, *function_copy;
    uint32_t line;
    uint64_t count;
    int64_t incl_ns, self_ns;
    /* Per main frame, top zones only, in ns: sums of whole nanoseconds are exact, and print as
     * milliseconds without a float conversion. */
    int64_t *frame_self_ns, *frame_incl_ns;
    int64_t *frame_off_ns; /* when the capture has context switches */
} zone;

typedef struct open_zone {
    uint32_t loc;
    int64_t begin;
    int64_t mark; /* pass 1: children's time; pass 2: when self time last resumed */
} open_zone;

typedef struct tstack {
    open_zone *s;
    uint32_t depth, cap;
    size_t hint;             /* pass 2: where the thread's last spread began among the frames */
    int64_t tl;              /* pass 2: its CPU timeline + 2 (1: none, 0: not looked up) */
    uint32_t cursor;         /* and its place in it */
    int64_t c_lo, c_hi, c_val; /* its off-CPU time before t is c_val for t in [c_lo, c_hi] */
} tstack;

typedef struct exporter {
    const char *path;
    const mprof_export_range *range; /* NULL = the whole capture */
    fset *sets;
    size_t n_sets;
    /* per source location id: index into zones + 1 (0 = unknown) and pass-1 totals */
    uint32_t *loc_zone;
    uint64_t *loc_count;
    int64_t *loc_incl, *loc_self;
    uint32_t n_locs;
    zone *zones;
    size_t n_zones;
    tstack *stacks;
    uint32_t n_stacks;
    fset *main;
    const mprof_reader *r; /* the reader of the current pass */
    int sets_capped;       /* more than MAX_SETS frame sets: the rest are ignored */
    char **warnings;
    size_t n_warnings;
    char *err;
    size_t errlen;
    mprof_sysmodel *sys; /* context switches and CPU usage (src/analysis/system.h) */
    mprof_sys_status sys_st;
    int sys_switches;    /* the main frame set's thread was traced */
    const char *process_name; /* --process: the process whose frames are exported, or NULL */
    int64_t process;          /* its index once known; -1 = every thread (one process) */
    int multi;                /* the capture has several processes */
    int resolved;             /* process and multi are settled (after the first batch) */
    int bad_process;          /* the failure is the choice of process (a usage error) */
} exporter;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int fail(exporter *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (x->err && x->errlen)
        vsnprintf(x->err, x->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void warn(exporter *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tool_vappendf(&x->warnings, &x->n_warnings, fmt, ap);
    va_end(ap);
}

/* Frame sets beyond this many are ignored (a warning says so): real programs have a handful,
 * and a corrupt capture must not make the export quadratic. */
#define MAX_SETS 1024

/* The set named name, created on first use; NULL when out of memory or past MAX_SETS (*capped
 * then set). */
static fset *get_set(exporter *x, uint32_t name)
{
    for (size_t i = 0; i < x->n_sets; i++)
        if (x->sets[i].name == name)
            return &x->sets[i];
    if (x->n_sets >= MAX_SETS) {
        x->sets_capped = 1;
        return NULL;
    }
    fset *p = realloc(x->sets, (x->n_sets + 1) * sizeof *p);
    if (!p)
        return NULL;
    x->sets = p;
    fset *f = &p[x->n_sets++];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->open = -1;
    return f;
}

/* The frame set a frame event names, in *out; NULL past MAX_SETS (the event is then ignored). The
 * first thread to mark or begin a frame of the set is its thread (marks_thread). Returns 0, or -1
 * out of memory. */
static int event_set(exporter *x, const mprof_event *ev, int marks_thread, fset **out)
{
    fset *f = get_set(x, (uint32_t)ev->u[0]);
    *out = f;
    if (!f)
        return x->sets_capped ? 0 : fail(x, "out of memory");
    if (marks_thread && !f->thread)
        f->thread = ev->thread;
    return 0;
}

static tstack *get_stack(exporter *x, uint32_t tid)
{
    if (mprof_grow_zeroed((void **)&x->stacks, &x->n_stacks, tid, sizeof *x->stacks, 1u << 26))
        return NULL;
    return &x->stacks[tid];
}

/* Recursion: another instance of loc is open on the stack (its time is already counted). */
static int nested_in(const tstack *t, uint32_t loc)
{
    for (uint32_t k = 0; k < t->depth; k++)
        if (t->s[k].loc == loc)
            return 1;
    return 0;
}

static int push_zone(tstack *t, uint32_t loc, int64_t ts)
{
    if (MPROF_GROW(t->s, t->cap, t->depth + 1, 32) != 0)
        return -1;
    t->s[t->depth++] = (open_zone){loc, ts, 0};
    return 0;
}

static int ensure_loc(exporter *x, uint32_t loc)
{
    if (loc < x->n_locs)
        return 0;
    uint32_t n = x->n_locs;
    if (mprof_grow_zeroed((void **)&x->loc_zone, &n, loc, sizeof *x->loc_zone, 1u << 26))
        return -1;
    uint32_t n2 = x->n_locs, n3 = x->n_locs, n4 = x->n_locs;
    if (mprof_grow_zeroed((void **)&x->loc_count, &n2, loc, sizeof *x->loc_count, 1u << 26) ||
        mprof_grow_zeroed((void **)&x->loc_incl, &n3, loc, sizeof *x->loc_incl, 1u << 26) ||
        mprof_grow_zeroed((void **)&x->loc_self, &n4, loc, sizeof *x->loc_self, 1u << 26))
        return -1;
    x->n_locs = n;
    return 0;
}

/* Whether loc is a defined source location (a location counted once stays defined). */
static inline int loc_known(exporter *x, uint32_t loc)
{
    if (loc < x->n_locs && x->loc_count[loc])
        return 1;
    return loc != 0 && mprof_reader_srcloc(x->r, loc) != NULL;
}

/* ---- the process ----------------------------------------------------------------------------- */

/* Whether thread's events belong to the export: all of them, or those of the chosen process. */
static inline int thread_in(const exporter *x, uint32_t thread)
{
    if (x->process < 0)
        return 1;
    const mprof_thread_def *d = mprof_reader_thread(x->r, thread);
    return d && (int64_t)d->process == x->process;
}

/* "NAME (pid N), NAME (pid N)": the capture's processes, for the messages below. */
static void list_processes(const mprof_reader *r, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < mprof_reader_process_count(r) && used + 1 < n; i++) {
        const mprof_process_def *p = mprof_reader_process(r, i);
        int w = snprintf(buf + used, n - used, "%s%s (pid %" PRIu64 ")", i ? ", " : "",
                         p && *p->name ? p->name : "(unnamed)", p ? p->pid : 0);
        if (w < 0)
            break;
        used += (size_t)w < n - used ? (size_t)w : n - used - 1;
    }
}

/* Settles which process is exported, once the processes are known (a merged capture defines
 * them all before any thread's events, so after the first batch). A capture of several
 * processes needs --process: frames of mixed processes would mislead the gate. Returns 0, or -1
 * with the message. */
static int resolve_process(exporter *x, const mprof_reader *r)
{
    if (x->resolved)
        return 0;
    x->resolved = 1;
    uint32_t n = mprof_reader_process_count(r);
    x->multi = n > 1;
    if (!x->process_name)
        x->process = -1;
    char list[1024];
    x->bad_process = 1; /* until settled below */
    if (!x->process_name && n > 1) {
        list_processes(r, list, sizeof list);
        return fail(x, "%s: the capture has %" PRIu32 " processes (%s): choose one with "
                       "--process NAME (a frame export of mixed processes would mislead the "
                       "gate)", x->path, n, list);
    }
    if (!x->process_name) {
        x->bad_process = 0;
        return 0;
    }
    int64_t found = -1;
    for (uint32_t i = 0; i < n; i++) {
        const mprof_process_def *p = mprof_reader_process(r, i);
        if (p && strcmp(p->name, x->process_name) == 0) {
            if (found >= 0) {
                list_processes(r, list, sizeof list);
                return fail(x, "%s: several processes are named \"%s\" (%s): give them names of "
                               "their own with mprof merge --name FILE=NAME", x->path,
                            x->process_name, list);
            }
            found = i;
        }
    }
    if (found < 0) {
        list_processes(r, list, sizeof list);
        return fail(x, "%s: no process named \"%s\" (the capture's processes: %s)", x->path,
                    x->process_name, list);
    }
    /* A one-process capture exports every thread, as without --process. */
    x->process = n > 1 ? found : -1;
    x->bad_process = 0;
    return 0;
}

/* ---- pass 1: frames and zone totals --------------------------------------------------------- */

static int pass1_begin(exporter *x, uint32_t thread, uint32_t loc, int64_t ts)
{
    tstack *t = get_stack(x, thread);
    if (!t || push_zone(t, loc, ts))
        return fail(x, "out of memory");
    return 0;
}

static int pass1_end(exporter *x, uint32_t thread, int64_t ts)
{
    tstack *t = get_stack(x, thread);
    if (!t)
        return fail(x, "out of memory");
    if (t->depth == 0)
        return 0; /* unmatched end (its begin was lost): ignored, as mprof report does */
    open_zone z = t->s[--t->depth];
    int64_t dur = ts > z.begin ? ts - z.begin : 0;
    if (t->depth)
        t->s[t->depth - 1].mark += dur;
    /* Only defined source locations count (a corrupt id must not size the tables). */
    if (!loc_known(x, z.loc))
        return 0;
    if (!mprof__range_overlaps(x->range, z.begin, ts))
        return 0;
    if (ensure_loc(x, z.loc))
        return fail(x, "out of memory");
    x->loc_count[z.loc]++;
    if (!nested_in(t, z.loc))
        x->loc_incl[z.loc] += dur;
    x->loc_self[z.loc] += dur > z.mark ? dur - z.mark : 0;
    return 0;
}

static int pass1_event(exporter *x, const mprof_event *ev)
{
    switch (ev->type) {
    case MPROF_EV_FRAME_MARK: {
        fset *f;
        if (event_set(x, ev, 1, &f))
            return -1;
        if (f && vec_push(&f->marks, ev->ts_ns))
            return fail(x, "out of memory");
        return 0;
    }
    case MPROF_EV_FRAME_BEGIN: {
        fset *f;
        if (event_set(x, ev, 1, &f))
            return -1;
        if (f) {
            f->range = 1;
            f->open = ev->ts_ns;
        }
        return 0;
    }
    case MPROF_EV_FRAME_END: {
        fset *f;
        if (event_set(x, ev, 0, &f))
            return -1;
        if (f && f->open >= 0 && ev->ts_ns >= f->open &&
            (vec_push(&f->begins, f->open) || vec_push(&f->ends, ev->ts_ns)))
            return fail(x, "out of memory");
        if (f)
            f->open = -1;
        return 0;
    }
    case MPROF_EV_ZONE_BEGIN:
        return pass1_begin(x, ev->thread, (uint32_t)ev->u[0], ev->ts_ns);
    case MPROF_EV_ZONE_END:
        return pass1_end(x, ev->thread, ev->ts_ns);
    case MPROF_EV_LOST: {
        /* Zones open across lost events cannot be closed reliably: drop them. */
        tstack *t = get_stack(x, ev->thread);
        if (t)
            t->depth = 0;
        for (size_t i = 0; i < x->n_sets; i++)
            if (x->sets[i].thread == ev->thread && vec_push(&x->sets[i].losses, ev->ts_ns))
                return fail(x, "out of memory");
        return 0;
    }
    default:
        return 0;
    }
}

/* Pass 1 over a batch: zone records the short way, every other record through pass1_event. */
static int pass1_batch(exporter *x, const mprof_batch *b)
{
    for (uint32_t ri = 0; ri < b->n_run; ri++) {
        const mprof_run *run = &b->run[ri];
        tstack *t = NULL;
        if (!thread_in(x, run->thread))
            continue;
        for (const mprof_rec *e = b->rec + run->first, *end = b->rec + run->end; e < end; e++) {
            int type = mprof_rec_type(e);
            if (type != MPROF_REC_LEAF) {
                if (type == MPROF_EV_ZONE_BEGIN) {
                    if (pass1_begin(x, run->thread, e->x, e->ts_ns))
                        return -1;
                } else if (type == MPROF_EV_ZONE_END) {
                    if (pass1_end(x, run->thread, e->ts_ns))
                        return -1;
                } else if (pass1_event(x, &b->ev[e->x])) {
                    return -1;
                }
                t = NULL; /* the stacks may have moved */
                continue;
            }
            if (!t && !(t = get_stack(x, run->thread)))
                return fail(x, "out of memory");
            /* A zone without children: ZONE_BEGIN then ZONE_END, without the stack. */
            int64_t dur = mprof_rec_dur(e);
            uint32_t loc = e->x;
            if (t->depth)
                t->s[t->depth - 1].mark += dur;
            if (!loc_known(x, loc) || !mprof__range_overlaps(x->range, e->ts_ns, e->ts_ns + dur))
                continue;
            if (ensure_loc(x, loc))
                return fail(x, "out of memory");
            x->loc_count[loc]++;
            if (!nested_in(t, loc))
                x->loc_incl[loc] += dur;
            x->loc_self[loc] += dur;
        }
    }
    return 0;
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

typedef struct pair {
    int64_t s, e;
} pair;

static int cmp_pair(const void *pa, const void *pb)
{
    const pair *a = pa, *b = pb;
    return (a->s > b->s) - (a->s < b->s);
}

/* Whether a LOST record of the set's thread falls in (s, e]: the frame may hide lost marks. */
static int spans_loss(const fset *f, int64_t s, int64_t e)
{
    size_t lo = mprof_first_after(f->losses.v, f->losses.n, s);
    return lo < f->losses.n && f->losses.v[lo] <= e;
}

/* Drops the frames that span a loss (counted) and those outside the range, keeping the order. */
static void drop_lossy(fset *f, const mprof_export_range *range)
{
    size_t k = 0;
    for (size_t i = 0; i < f->nf; i++) {
        if (!mprof__range_has(range, f->fs[i]) || !mprof__range_has(range, f->fe[i] - (f->fe[i] > f->fs[i])))
            continue;
        if (f->losses.n && spans_loss(f, f->fs[i], f->fe[i])) {
            f->incomplete++;
            continue;
        }
        f->fs[k] = f->fs[i];
        f->fe[k] = f->fe[i];
        k++;
    }
    f->nf = k;
}

/* Turns a set's marks or ranges into sorted intervals. */
static int build_frames(fset *f, const mprof_export_range *range)
{
    if (f->losses.n > 1)
        qsort(f->losses.v, f->losses.n, sizeof *f->losses.v, cmp_i64);
    if (!f->range) {
        if (f->marks.n > 1)
            qsort(f->marks.v, f->marks.n, sizeof *f->marks.v, cmp_i64);
        size_t n = f->marks.n > 1 ? f->marks.n - 1 : 0;
        f->fs = malloc((n ? n : 1) * sizeof *f->fs);
        f->fe = malloc((n ? n : 1) * sizeof *f->fe);
        if (!f->fs || !f->fe)
            return -1;
        for (size_t i = 0; i < n; i++) {
            f->fs[i] = f->marks.v[i];
            f->fe[i] = f->marks.v[i + 1];
        }
        f->nf = n;
        drop_lossy(f, range);
        return 0;
    }
    size_t n = f->begins.n;
    pair *p = malloc((n ? n : 1) * sizeof *p);
    f->fs = malloc((n ? n : 1) * sizeof *f->fs);
    f->fe = malloc((n ? n : 1) * sizeof *f->fe);
    if (!p || !f->fs || !f->fe) {
        free(p);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (pair){f->begins.v[i], f->ends.v[i]};
    if (n > 1)
        qsort(p, n, sizeof *p, cmp_pair);
    for (size_t i = 0; i < n; i++) {
        f->fs[i] = p[i].s;
        f->fe[i] = p[i].e;
    }
    f->nf = n;
    free(p);
    drop_lossy(f, range);
    return 0;
}

static int cmp_zone(const void *pa, const void *pb)
{
    const zone *a = pa, *b = pb;
    if (a->self_ns != b->self_ns)
        return a->self_ns < b->self_ns ? 1 : -1;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->function, b->function);
}

/* Merges source locations by name and function into zones, sorted by self time, and maps locations to them. */
static int build_zones(exporter *x, const mprof_reader *r)
{
    for (uint32_t loc = 1; loc < x->n_locs; loc++) {
        if (!x->loc_count[loc])
            continue;
        const mprof_srcloc_def *d = mprof_reader_srcloc(r, loc);
        const char *name = d && d->name ? d->name : "(unknown zone)";
        const char *func = d && d->function ? d->function : "";
        size_t k = 0;
        while (k < x->n_zones &&
               (strcmp(x->zones[k].name, name) != 0 || strcmp(x->zones[k].function, func) != 0))
            k++;
        if (k == x->n_zones) {
            zone *z = realloc(x->zones, (x->n_zones + 1) * sizeof *z);
            if (!z)
                return -1;
            x->zones = z;
            memset(&z[k], 0, sizeof z[k]);
            z[k].name_copy = tool_strdup(name);
            z[k].file_copy = tool_strdup(d && d->file ? d->file : "");
            z[k].function_copy = tool_strdup(func);
            if (!z[k].name_copy || !z[k].file_copy || !z[k].function_copy) {
                free(z[k].name_copy);
                free(z[k].file_copy);
                free(z[k].function_copy);
                return -1;
            }
            z[k].name = z[k].name_copy;
            z[k].file = z[k].file_copy;
            z[k].function = z[k].function_copy;
            z[k].line = d ? d->line : 0;
            x->n_zones++;
        }
        x->zones[k].count += x->loc_count[loc];
        x->zones[k].incl_ns += x->loc_incl[loc];
        x->zones[k].self_ns += x->loc_self[loc];
    }
    if (x->n_zones > 1)
        qsort(x->zones, x->n_zones, sizeof *x->zones, cmp_zone);
    /* Map each location to its zone (index + 1) after sorting. */
    for (uint32_t loc = 1; loc < x->n_locs; loc++) {
        x->loc_zone[loc] = 0;
        if (!x->loc_count[loc])
            continue;
        const mprof_srcloc_def *d = mprof_reader_srcloc(r, loc);
        const char *name = d && d->name ? d->name : "(unknown zone)";
        const char *func = d && d->function ? d->function : "";
        for (size_t k = 0; k < x->n_zones; k++)
            if (strcmp(x->zones[k].name, name) == 0 && strcmp(x->zones[k].function, func) == 0) {
                x->loc_zone[loc] = (uint32_t)k + 1;
                break;
            }
    }
    size_t top = x->n_zones < MPROF_FRAMES_TOP_ZONES ? x->n_zones : MPROF_FRAMES_TOP_ZONES;
    size_t nf = x->main ? x->main->nf : 0;
    for (size_t k = 0; k < top && nf > 0; k++) {
        x->zones[k].frame_self_ns = calloc(nf, sizeof(int64_t));
        x->zones[k].frame_incl_ns = calloc(nf, sizeof(int64_t));
        if (!x->zones[k].frame_self_ns || !x->zones[k].frame_incl_ns)
            return -1;
    }
    return 0;
}

/* ---- pass 2: per-frame time of the top zones ------------------------------------------------ */

/* Adds the overlap of [a, b) with every main frame to acc (milliseconds). The search for the
 * first frame starts at *hint, where the thread's last one began (its times mostly grow), and
 * moves it. */
static void spread_at(const fset *f, int64_t a, int64_t b, int64_t *acc, size_t *hint)
{
    if (!acc || b <= a || f->nf == 0)
        return;
    size_t i = *hint;
    if (i > f->nf || (i > 0 && f->fe[i - 1] > a))
        i = mprof_first_after(f->fe, f->nf, a);
    else
        for (int k = 0; i < f->nf && f->fe[i] <= a; k++, i++)
            if (k == 8) {
                i = mprof_first_after(f->fe, f->nf, a);
                break;
            }
    *hint = i;
    for (; i < f->nf && f->fs[i] < b; i++) {
        int64_t s = a > f->fs[i] ? a : f->fs[i];
        int64_t e = b < f->fe[i] ? b : f->fe[i];
        if (e > s)
            acc[i] += e - s;
    }
}

/* The thread's off-CPU time before t (its cached span answers without a search). */
static int64_t off_at(const exporter *x, tstack *t, uint32_t thread, int64_t ts)
{
    if (t->tl && ts >= t->c_lo && ts <= t->c_hi)
        return t->c_val;
    if (!t->tl)
        t->tl = mprof__sys_thread_tidx(x->sys, thread) + 2;
    if (t->tl < 2) {
        t->c_lo = INT64_MIN;
        t->c_hi = INT64_MAX;
        return t->c_val = 0;
    }
    t->c_val = mprof__sys_off_at(x->sys, (uint32_t)(t->tl - 2), ts, &t->cursor, &t->c_lo, &t->c_hi);
    return t->c_val;
}

/* The same for the part of [a, b) during which the zone's thread was off the CPU: nothing to
 * add when the thread was on the CPU all along (its off-CPU time is the same at a and b). */
static void spread_off(const exporter *x, tstack *t, uint32_t thread, int64_t a, int64_t b,
                       int64_t *acc)
{
    if (!acc || !x->sys_switches || b <= a)
        return;
    if (off_at(x, t, thread, a) == off_at(x, t, thread, b))
        return;
    mprof__sys_spread_off(x->sys, thread, x->main->fs, x->main->fe, x->main->nf, a, b, acc);
}

static zone *zone_of(exporter *x, uint32_t loc)
{
    if (loc == 0 || loc >= x->n_locs || x->loc_zone[loc] == 0)
        return NULL;
    return &x->zones[x->loc_zone[loc] - 1];
}

/* A zone of thread t begins at ts: its parent's self time pauses while it runs. */
static inline void pause_parent(exporter *x, tstack *t, uint32_t thread, int64_t ts)
{
    if (!t->depth)
        return;
    open_zone *p = &t->s[t->depth - 1];
    zone *pz = zone_of(x, p->loc);
    if (pz) {
        spread_at(x->main, p->mark, ts, pz->frame_self_ns, &t->hint);
        spread_off(x, t, thread, p->mark, ts, pz->frame_off_ns);
    }
}

/* Zone z of thread t (already off its stack) ends at ts. */
static inline void zone_ended(exporter *x, tstack *t, uint32_t thread, const open_zone *z,
                              int64_t ts)
{
    zone *zz = zone_of(x, z->loc);
    if (zz) {
        spread_at(x->main, z->mark, ts, zz->frame_self_ns, &t->hint);
        spread_off(x, t, thread, z->mark, ts, zz->frame_off_ns);
        if (!nested_in(t, z->loc))
            spread_at(x->main, z->begin, ts, zz->frame_incl_ns, &t->hint);
    }
    if (t->depth)
        t->s[t->depth - 1].mark = ts;
}

static int pass2_begin(exporter *x, uint32_t thread, uint32_t loc, int64_t ts)
{
    tstack *t = get_stack(x, thread);
    if (!t)
        return fail(x, "out of memory");
    pause_parent(x, t, thread, ts);
    if (push_zone(t, loc, ts))
        return fail(x, "out of memory");
    t->s[t->depth - 1].mark = ts;
    return 0;
}

static int pass2_end(exporter *x, uint32_t thread, int64_t ts)
{
    tstack *t = get_stack(x, thread);
    if (!t)
        return fail(x, "out of memory");
    if (t->depth == 0)
        return 0;
    open_zone z = t->s[--t->depth];
    zone_ended(x, t, thread, &z, ts);
    return 0;
}

static int pass2_lost(exporter *x, uint32_t thread)
{
    tstack *t = get_stack(x, thread);
    if (t)
        t->depth = 0;
    return 0;
}

/* Pass 2 over a batch: only zones and losses matter. */
static int pass2_batch(exporter *x, const mprof_batch *b)
{
    for (uint32_t ri = 0; ri < b->n_run; ri++) {
        const mprof_run *run = &b->run[ri];
        tstack *t = NULL;
        if (!thread_in(x, run->thread))
            continue;
        for (const mprof_rec *e = b->rec + run->first, *end = b->rec + run->end; e < end; e++) {
            int type = mprof_rec_type(e);
            if (type != MPROF_REC_LEAF) {
                int rc = type == MPROF_EV_ZONE_BEGIN ? pass2_begin(x, run->thread, e->x, e->ts_ns)
                         : type == MPROF_EV_ZONE_END ? pass2_end(x, run->thread, e->ts_ns)
                         : type == MPROF_EV_LOST     ? pass2_lost(x, run->thread)
                                                     : 0;
                if (rc)
                    return -1;
                t = NULL;
                continue;
            }
            if (!t && !(t = get_stack(x, run->thread)))
                return fail(x, "out of memory");
            /* A zone without children: begins (its parent pauses) and ends at once. */
            int64_t ts = e->ts_ns, te = ts + mprof_rec_dur(e);
            pause_parent(x, t, run->thread, ts);
            open_zone z = {e->x, ts, ts};
            zone_ended(x, t, run->thread, &z, te);
        }
    }
    return 0;
}

typedef struct pass_read {
    exporter *x;
    mprof_reader *r;
    int pass;
    int sys_warned;
    int failed; /* the pass failed (x says why): the read stopped */
} pass_read;

/* A batch of a read: to pass 1 (with the system records) or pass 2. */
static int pass_batch(void *arg, const mprof_batch *b)
{
    pass_read *c = arg;
    exporter *x = c->x;
    if (c->pass == 1 && resolve_process(x, c->r) != 0)
        return c->failed = 1;
    if (c->pass == 1 && x->sys && mprof__sys_batch(x->sys, c->r, b) != 0 && !c->sys_warned++)
        warn(x, "out of memory reading the system records: on/off-CPU figures are incomplete");
    if ((c->pass == 1 ? pass1_batch(x, b) : pass2_batch(x, b)) != 0)
        return c->failed = 1;
    return 0;
}

static int read_pass(exporter *x, int pass, mprof_reader **keep)
{
    char rerr[512];
    mprof_reader *r = mprof_reader_open(x->path, rerr, sizeof rerr);
    if (!r)
        return fail(x, "%s", rerr);
    for (uint32_t i = 0; i < x->n_stacks; i++)
        x->stacks[i].depth = 0;
    x->r = r;
    /* Pass 1 needs frames, zones, losses and the system records; pass 2 zones and losses. The
     * rest (lock events, zone values, fiber switches: most of a game's other events) is decoded
     * and counted but not handed out. */
    unsigned char want[MPROF_EV_MAX] = {0};
    want[MPROF_EV_ZONE_BEGIN] = want[MPROF_EV_LOST] = 1;
    if (pass == 1) {
        want[MPROF_EV_FRAME_MARK] = want[MPROF_EV_FRAME_BEGIN] = want[MPROF_EV_FRAME_END] = 1;
        if (x->sys)
            mprof__sys_want(want);
    }
    mprof_reader_want(r, want);
    pass_read c = {x, r, pass, 0, 0};
    int rc = mprof_reader_each_batch(r, pass_batch, &c);
    if (c.failed) {
        mprof_reader_close(r);
        return -1;
    }
    if (rc < 0) {
        fail(x, "%s: %s", x->path, mprof_reader_error(r));
        mprof_reader_close(r);
        return -1;
    }
    if (pass == 1 && resolve_process(x, r) != 0) {
        mprof_reader_close(r);
        return -1;
    }
    if (keep)
        *keep = r;
    else
        mprof_reader_close(r);
    return 0;
}

/* ---- output --------------------------------------------------------------------------------- */

/* Milliseconds with nanosecond resolution and no trailing zeros: 16.666667, 0, 2.5. */
static void put_ms(FILE *out, double ms)
{
    char buf[64];
    if (!isfinite(ms))
        ms = 0;
    snprintf(buf, sizeof buf, "%.6f", ms);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *e = buf + strlen(buf) - 1;
        while (e > dot && *e == '0')
            *e-- = '\0';
        if (e == dot)
            *e = '\0';
    }
    if (strcmp(buf, "-0") == 0)
        strcpy(buf, "0");
    fputs(buf, out);
}

static void put_str(FILE *out, const char *s)
{
    if (s)
        mprof_json_write_string(out, s, strlen(s));
    else
        fputs("null", out);
}

/* Whole nanoseconds as put_ms writes their milliseconds (the same text: a double holds ns / 1e6
 * closer than half the last printed digit below 2^30 ms), without a float conversion. */
static void put_ns_ms(FILE *out, int64_t ns)
{
    if (ns < 0 || ns >= ((int64_t)1 << 50)) {
        put_ms(out, (double)ns / 1e6);
        return;
    }
    char buf[32], *e = buf + sizeof buf, *o = e;
    int64_t frac = ns % 1000000, whole = ns / 1000000;
    int digits = 6;
    while (digits && frac % 10 == 0) { /* no trailing zeros */
        frac /= 10;
        digits--;
    }
    if (digits) {
        for (int i = 0; i < digits; i++, frac /= 10)
            *--o = (char)('0' + frac % 10);
        *--o = '.';
    }
    do
        *--o = (char)('0' + whole % 10);
    while ((whole /= 10) > 0);
    fwrite(o, 1, (size_t)(e - o), out);
}

static void put_ms_array(FILE *out, const double *v, size_t n)
{
    fputc('[', out);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', out);
        put_ms(out, v[i]);
    }
    fputc(']', out);
}

static void put_ns_array(FILE *out, const int64_t *v, size_t n)
{
    fputc('[', out);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', out);
        put_ns_ms(out, v[i]);
    }
    fputc(']', out);
}

/* Frame durations of a set in ms (caller frees). */
static double *durations(const fset *f)
{
    double *d = malloc((f->nf ? f->nf : 1) * sizeof *d);
    if (d)
        for (size_t i = 0; i < f->nf; i++)
            d[i] = (double)(f->fe[i] - f->fs[i]) / 1e6;
    return d;
}

/* Writes the summary fields ("frameCount", percentiles) of durations d. */
static int put_summary(FILE *out, const double *d, size_t n, const char *indent)
{
    double *s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return -1;
    memcpy(s, d, n * sizeof *s);
    mprof__sort_doubles(s, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += s[i];
    fprintf(out, "%s\"frameCount\": %zu,\n", indent, n);
    const char *names[] = {"p50FrameTimeMs", "p90FrameTimeMs", "p95FrameTimeMs", "p99FrameTimeMs"};
    const double ps[] = {50, 90, 95, 99};
    for (int i = 0; i < 4; i++) {
        fprintf(out, "%s\"%s\": ", indent, names[i]);
        put_ms(out, mprof__percentile_sorted(s, n, ps[i]));
        fputs(",\n", out);
    }
    fprintf(out, "%s\"meanFrameTimeMs\": ", indent);
    put_ms(out, n ? sum / (double)n : 0);
    fprintf(out, ",\n%s\"minFrameTimeMs\": ", indent);
    put_ms(out, n ? s[0] : 0);
    fprintf(out, ",\n%s\"maxFrameTimeMs\": ", indent);
    put_ms(out, n ? s[n - 1] : 0);
    fputs(",\n", out);
    free(s);
    return 0;
}

/* The git SHA: capture INFO, else $MPROF_GIT_SHA, else `git rev-parse HEAD`. */
static void git_sha(const mprof_reader *r, uint32_t p, char *out, size_t n, const char **source)
{
    const char *v = mprof_reader_process_info(r, p, "git_sha");
    if (v && *v) {
        snprintf(out, n, "%s", v);
        *source = "capture";
        return;
    }
    tool_git_sha(out, n, source);
}

static void start_time(const mprof_reader *r, uint32_t p, char *out, size_t n)
{
    out[0] = '\0';
    const char *v = mprof_reader_process_info(r, p, "start_unix_ns");
    if (!v || !*v)
        return;
    char *end;
    errno = 0;
    unsigned long long ns = strtoull(v, &end, 10);
    if (errno || *end)
        return;
    time_t sec = (time_t)(ns / 1000000000ull);
    struct tm tm;
    if (!gmtime_r(&sec, &tm))
        return;
    char base[40];
    if (strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        return;
    snprintf(out, n, "%s.%03uZ", base, (unsigned)((ns / 1000000ull) % 1000ull));
}

static const char *set_name(const mprof_reader *r, const fset *f)
{
    if (f->name == 0)
        return NULL;
    const char *s = mprof_reader_string(r, f->name);
    return s ? s : "(unnamed)";
}

/* The "system" object and the per-frame CPU arrays (docs/GATE.md, docs/SYSTEM.md). With switch
 * reasons, the main thread's off-CPU time is split into preempted and blocked, and the part of
 * its waits that the critical path spent runnable (analysis/system.h) is given, so that the gate
 * computes each frame's decision time without the capture. */
/* frameCpuMs of one process of a capture of several: the CPU time of its own traced threads
 * in each frame (the system model's process CPU is every traced thread's, both processes'). */
static void process_cpu(const exporter *x, const mprof_reader *r, const fset *m, double *all)
{
    for (size_t i = 0; i < m->nf; i++)
        all[i] = 0;
    for (uint32_t t = 1; t < mprof_reader_thread_count(r); t++) {
        const mprof_thread_def *d = mprof_reader_thread(r, t);
        if (!d || (int64_t)d->process != x->process || !mprof__sys_thread_traced(x->sys, t))
            continue;
        for (size_t i = 0; i < m->nf; i++) {
            int64_t off, traced;
            mprof__sys_thread_time(x->sys, t, m->fs[i], m->fe[i], &off, &traced);
            all[i] += (double)(traced - off) / 1e6;
        }
    }
}

static int write_system(exporter *x, const mprof_reader *r, FILE *out)
{
    int cpu = x->sys_st.cpu_usage && mprof__sys_has_busy(x->sys);
    const char *why = x->sys_st.why_not;
    if (x->sys_st.context_switches && !x->sys_switches)
        why = "the main frame set's thread has no context-switch records";
    int path = x->sys_switches ? mprof__sys_path_model(x->sys) : MPROF_SYS_PATH_NONE;
    const fset *m = x->main;
    size_t n = m && m->nf ? m->nf : 1;
    double *on = NULL, *off = NULL, *all = NULL, *busy = NULL, *pre = NULL, *wait = NULL;
    size_t truncated = 0, unrecorded = 0;
    int rc = -1;
    if (x->sys_switches) {
        on = calloc(n, sizeof *on);
        off = calloc(n, sizeof *off);
        all = calloc(n, sizeof *all);
        busy = calloc(n, sizeof *busy);
        pre = calloc(n, sizeof *pre);
        wait = calloc(n, sizeof *wait);
        if (!on || !off || !all || !busy || !pre || !wait)
            goto out;
        mprof__sys_frames(x->sys, m->thread, m->fs, m->fe, m->nf, on, off, all, busy);
        if (x->process >= 0)
            process_cpu(x, r, m, all);
        if (path != MPROF_SYS_PATH_NONE)
            truncated = mprof__sys_frames_path(x->sys, m->thread, m->fs, m->fe, m->nf, pre, wait,
                                               &unrecorded);
        if (truncated)
            warn(x, "the critical path of %zu frames was followed only part of the way (too many "
                    "waits inside them): their frameWaitRunnableMs are lower bounds", truncated);
    }
    fprintf(out, ",\n  \"system\": {\"contextSwitches\": %s, \"cpuUsage\": %s, \"sampling\": %s, "
                 "\"switchReasons\": %s, \"criticalPath\": %s, \"pathTruncatedFrames\": %zu, "
                 "\"unrecordedWakeups\": %zu, \"whyNot\": ",
            x->sys_switches ? "true" : "false", cpu ? "true" : "false",
            x->sys_st.sampling ? "true" : "false", path != MPROF_SYS_PATH_NONE ? "true" : "false",
            path == MPROF_SYS_PATH_WAKERS    ? "\"wakers\""
            : path == MPROF_SYS_PATH_INFERRED ? "\"inferred\""
                                              : "null",
            truncated, unrecorded);
    put_str(out, why);
    fputc('}', out);
    rc = 0;
    if (!x->sys_switches)
        goto out;
    fputs(",\n  \"frameOnCpuMs\": ", out);
    put_ms_array(out, on, m->nf);
    fputs(",\n  \"frameOffCpuMs\": ", out);
    put_ms_array(out, off, m->nf);
    fputs(",\n  \"frameCpuMs\": ", out);
    put_ms_array(out, all, m->nf);
    if (cpu) {
        fputs(",\n  \"frameMachineBusy\": [", out);
        for (size_t i = 0; i < m->nf; i++)
            fprintf(out, "%s%.4f", i ? ", " : "", busy[i]);
        fputc(']', out);
    }
    if (path != MPROF_SYS_PATH_NONE) {
        /* Blocked is the rest of the off-CPU time: waits, yields, and intervals of unknown
         * reason (before the thread's first switch). */
        for (size_t i = 0; i < m->nf; i++)
            off[i] = off[i] > pre[i] ? off[i] - pre[i] : 0.0;
        fputs(",\n  \"framePreemptedMs\": ", out);
        put_ms_array(out, pre, m->nf);
        fputs(",\n  \"frameBlockedMs\": ", out);
        put_ms_array(out, off, m->nf);
        fputs(",\n  \"frameWaitRunnableMs\": ", out);
        put_ms_array(out, wait, m->nf);
    }
out:
    free(on);
    free(off);
    free(all);
    free(busy);
    free(pre);
    free(wait);
    return rc;
}

/* A frame set's summary, its incomplete frames and its frame times, at the given indent. */
static int put_set_frames(FILE *out, const fset *f, const char *indent)
{
    double *d = durations(f);
    if (!d || put_summary(out, d, f->nf, indent)) {
        free(d);
        return -1;
    }
    fprintf(out, "%s\"incompleteFrames\": %zu,\n", indent, f->incomplete);
    fprintf(out, "%s\"frameTimesMs\": ", indent);
    put_ms_array(out, d, f->nf);
    free(d);
    return 0;
}

static int write_export(exporter *x, const mprof_reader *r, FILE *out)
{
    /* The identity is the exported process's (its own INFO in a merged capture; a one-process
     * capture's INFO is process 0's). */
    uint32_t pi = x->process > 0 ? (uint32_t)x->process : 0;
    const mprof_process_def *pd = mprof_reader_process(r, pi);
    char sha[128], when[64], pidbuf[24], lostbuf[24];
    const char *sha_src;
    git_sha(r, pi, sha, sizeof sha, &sha_src);
    start_time(r, pi, when, sizeof when);
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    const char *lost = mprof_reader_end_info(r, "events_lost");
    const char *pid = mprof_reader_info(r, "pid");
    const char *app = mprof_reader_info(r, "app");
    if (x->multi && pd) {
        snprintf(pidbuf, sizeof pidbuf, "%" PRIu64, pd->pid);
        snprintf(lostbuf, sizeof lostbuf, "%" PRIu64, pd->events_lost);
        pid = pidbuf;
        lost = lostbuf;
        app = pd->name;
        st.complete = st.complete && !pd->ended_by;
    }

    fputs("{\n  \"schema\": \"" MPROF_FRAMES_SCHEMA "\",\n  \"capture\": {\n    \"file\": ", out);
    put_str(out, x->path);
    fputs(",\n    \"process\": ", out);
    put_str(out, app);
    fputs(",\n    \"pid\": ", out);
    if (pid && *pid && strspn(pid, "0123456789") == strlen(pid))
        fputs(pid, out);
    else
        fputs("null", out);
    fputs(",\n    \"commandLine\": ", out);
    put_str(out, mprof_reader_process_info(r, pi, "cmdline"));
    fputs(",\n    \"startTime\": ", out);
    put_str(out, when[0] ? when : NULL);
    fputs(",\n    \"gitSha\": ", out);
    put_str(out, sha[0] ? sha : NULL);
    fputs(",\n    \"gitShaSource\": ", out);
    put_str(out, sha_src);
    fputs(",\n    \"hostname\": ", out);
    put_str(out, mprof_reader_process_info(r, pi, "hostname"));
    fputs(",\n    \"cpu\": ", out);
    put_str(out, mprof_reader_process_info(r, pi, "cpu"));
    fputs(",\n    \"os\": ", out);
    put_str(out, mprof_reader_process_info(r, pi, "os"));
    fputs(",\n    \"buildType\": ", out);
    put_str(out, mprof_reader_process_info(r, pi, "build_type"));
    fprintf(out, ",\n    \"complete\": %s", st.complete ? "true" : "false");
    fputs(",\n    \"eventsLost\": ", out);
    if (lost && *lost && strspn(lost, "0123456789") == strlen(lost))
        fputs(lost, out);
    else
        fputs("null", out);
    fputs("\n  },\n  \"frameSet\": ", out);
    put_str(out, x->main ? set_name(r, x->main) : NULL);
    fputs(",\n  \"range\": ", out);
    if (x->range && x->range->active) {
        fputs("{\"firstFrame\": ", out);
        if (x->range->first_frame >= 0)
            fprintf(out, "%" PRId64 ", \"endFrame\": %" PRId64, x->range->first_frame,
                    x->range->end_frame);
        else
            fputs("null, \"endFrame\": null", out);
        fprintf(out, ", \"startNs\": %" PRId64 ", \"endNs\": %" PRId64 "}", x->range->t0_ns,
                x->range->t1_ns);
    } else {
        fputs("null", out);
    }
    fputs(",\n", out);

    /* The main set's summary and frames at the top level. */
    static const fset empty = {0};
    const fset *m = x->main ? x->main : &empty;
    if (put_set_frames(out, m, "  ") || write_system(x, r, out))
        return -1;

    fputs(",\n  \"frameSets\": [", out);
    for (size_t i = 0; i < x->n_sets; i++) {
        const fset *f = &x->sets[i];
        fputs(i ? ",\n    {\n      \"name\": " : "\n    {\n      \"name\": ", out);
        put_str(out, set_name(r, f));
        fprintf(out, ",\n      \"kind\": \"%s\",\n", f->range ? "range" : "mark");
        if (put_set_frames(out, f, "      "))
            return -1;
        fputs("\n    }", out);
    }
    fputs(x->n_sets ? "\n  ],\n" : "],\n", out);

    fprintf(out, "  \"zoneCount\": %zu,\n  \"topZonesPerFrame\": %d,\n  \"zones\": [", x->n_zones,
            MPROF_FRAMES_TOP_ZONES);
    for (size_t k = 0; k < x->n_zones; k++) {
        const zone *z = &x->zones[k];
        fputs(k ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
        put_str(out, z->name);
        fputs(", \"function\": ", out);
        put_str(out, z->function);
        fputs(", \"file\": ", out);
        put_str(out, z->file);
        fprintf(out, ", \"line\": %" PRIu32 ", \"count\": %" PRIu64 ", \"totalMs\": ", z->line,
                z->count);
        put_ms(out, (double)z->incl_ns / 1e6);
        fputs(", \"selfTotalMs\": ", out);
        put_ms(out, (double)z->self_ns / 1e6);
        if (z->frame_self_ns) {
            fputs(",\n     \"perFrameMs\": ", out);
            put_ns_array(out, z->frame_incl_ns, m->nf);
            fputs(",\n     \"selfPerFrameMs\": ", out);
            put_ns_array(out, z->frame_self_ns, m->nf);
            if (z->frame_off_ns) {
                fputs(",\n     \"selfOffCpuPerFrameMs\": ", out);
                put_ns_array(out, z->frame_off_ns, m->nf);
            }
        }
        fputc('}', out);
    }
    fputs(x->n_zones ? "\n  ],\n  \"warnings\": [" : "],\n  \"warnings\": [", out);
    for (size_t i = 0; i < x->n_warnings; i++) {
        fputs(i ? ", " : "", out);
        put_str(out, x->warnings[i]);
    }
    fputs("]\n}\n", out);
    return ferror(out) ? -1 : 0;
}

static void exporter_free(exporter *x)
{
    for (size_t i = 0; i < x->n_sets; i++) {
        free(x->sets[i].marks.v);
        free(x->sets[i].begins.v);
        free(x->sets[i].ends.v);
        free(x->sets[i].losses.v);
        free(x->sets[i].fs);
        free(x->sets[i].fe);
    }
    free(x->sets);
    free(x->loc_zone);
    free(x->loc_count);
    free(x->loc_incl);
    free(x->loc_self);
    for (size_t k = 0; k < x->n_zones; k++) {
        free(x->zones[k].name_copy);
        free(x->zones[k].file_copy);
        free(x->zones[k].function_copy);
        free(x->zones[k].frame_self_ns);
        free(x->zones[k].frame_incl_ns);
        free(x->zones[k].frame_off_ns);
    }
    free(x->zones);
    for (uint32_t i = 0; i < x->n_stacks; i++)
        free(x->stacks[i].s);
    free(x->stacks);
    for (size_t i = 0; i < x->n_warnings; i++)
        free(x->warnings[i]);
    free(x->warnings);
    mprof__sys_free(x->sys);
}

int mprof__export_frames(const char *capture_path, const char *out_path, char *err,
                         size_t errlen)
{
    return mprof__export_frames_range(capture_path, NULL, out_path, err, errlen);
}

int mprof__export_frames_range(const char *capture_path, const mprof_export_range *range,
                               const char *out_path, char *err, size_t errlen)
{
    return mprof__export_frames_process(capture_path, range, NULL, out_path, err, errlen);
}

int mprof__export_frames_process(const char *capture_path, const mprof_export_range *range,
                                 const char *process_name, const char *out_path, char *err,
                                 size_t errlen)
{
    exporter x;
    memset(&x, 0, sizeof x);
    x.path = capture_path;
    x.process_name = process_name;
    x.process = -1;
    x.range = range;
    x.err = err;
    x.errlen = errlen;
    mprof_reader *r = NULL;
    int rc = -1;
    if (!capture_path || !out_path) {
        fail(&x, "a capture path and an output path are required");
        goto out;
    }
    {
        /* An output that is the capture itself would replace it (mprof ci and mprof export
         * both get here), so it is refused before anything is read or written. */
        struct stat cs, os;
        if (strcmp(out_path, "-") != 0 && stat(capture_path, &cs) == 0 &&
            stat(out_path, &os) == 0 && cs.st_dev == os.st_dev && cs.st_ino == os.st_ino) {
            fail(&x, "%s: the output is the capture itself; choose another output", out_path);
            goto out;
        }
    }
    x.sys = mprof__sys_new(); /* NULL (out of memory): the export has no system figures */
    if (read_pass(&x, 1, &r))
        goto out;
    mprof__sys_status(r, &x.sys_st);
    if (x.sys)
        mprof__sys_finish(x.sys, r);

    /* The main frame set: unnamed marks, else the named set with the most frames. */
    for (size_t i = 0; i < x.n_sets; i++)
        if (build_frames(&x.sets[i], range)) {
            fail(&x, "out of memory");
            goto out;
        }
    for (size_t i = 0; i < x.n_sets; i++)
        if (x.sets[i].name == 0 && (x.sets[i].nf > 0 || x.sets[i].incomplete > 0))
            x.main = &x.sets[i];
    if (!x.main) {
        for (size_t i = 0; i < x.n_sets; i++)
            if (x.sets[i].nf > 0 && (!x.main || x.sets[i].nf > x.main->nf))
                x.main = &x.sets[i];
        if (x.main)
            warn(&x, "no unnamed frame marks; the frame set \"%s\" is used as the main one",
                 set_name(r, x.main));
        else
            warn(&x, "no frames in this capture (call MPROF_FRAME_MARK() once per main-loop "
                     "iteration)");
    }
    if (x.main && x.main->incomplete)
        warn(&x, "%zu frames spanned lost events (their marks may be lost) and are left out",
             x.main->incomplete);
    if (x.sets_capped)
        warn(&x, "more than %d frame sets; the others are left out", MAX_SETS);
    {
        mprof_reader_stats st;
        mprof_reader_get_stats(r, &st);
        if (!st.complete)
            warn(&x, "the capture is incomplete (no END chunk; %" PRIu64 " bytes cut off): the "
                     "program did not shut down cleanly", st.truncated_bytes);
        const char *lost = mprof_reader_end_info(r, "events_lost");
        char lostbuf[24];
        const mprof_process_def *pd =
            x.multi ? mprof_reader_process(r, x.process > 0 ? (uint32_t)x.process : 0) : NULL;
        if (pd) {
            snprintf(lostbuf, sizeof lostbuf, "%" PRIu64, pd->events_lost);
            lost = lostbuf;
            if (pd->ended_by)
                warn(&x, "the process's part of the capture ended early (%s)", pd->ended_by);
        }
        if (lost && strcmp(lost, "0") != 0)
            warn(&x, "%s events were lost; frame and zone times near the gaps are incomplete",
                 lost);
    }
    x.sys_switches = x.sys && x.main && x.sys_st.context_switches &&
                     mprof__sys_thread_traced(x.sys, x.main->thread);
    if (build_zones(&x, r)) {
        fail(&x, "out of memory");
        goto out;
    }
    for (size_t k = 0; x.sys_switches && k < x.n_zones; k++) {
        if (!x.zones[k].frame_self_ns)
            continue;
        x.zones[k].frame_off_ns = calloc(x.main->nf ? x.main->nf : 1, sizeof(int64_t));
        if (!x.zones[k].frame_off_ns) {
            fail(&x, "out of memory");
            goto out;
        }
    }
    if (x.main && x.n_zones > 0 && read_pass(&x, 2, NULL))
        goto out;

    int to_stdout = strcmp(out_path, "-") == 0;
    /* Anything at the path that is not a plain regular file (/dev/null, a FIFO, a symlink) is
     * written in place: renaming over it would replace the device, the FIFO or the link. */
    struct stat ost;
    if (!to_stdout && lstat(out_path, &ost) == 0 && !S_ISREG(ost.st_mode)) {
        FILE *df = fopen(out_path, "w");
        if (!df) {
            fail(&x, "%s: cannot open: %s", out_path, strerror(errno));
            goto out;
        }
        int drc = write_export(&x, r, df);
        if (fclose(df) != 0 || drc)
            fail(&x, "%s: writing failed", out_path);
        else
            rc = 0;
        goto out;
    }
    /* A fresh temp file next to the output (mkstemp: a file the user already has is never
     * opened), renamed into place once complete. */
    size_t tl = strlen(out_path) + 8;
    char *tmp = to_stdout ? NULL : malloc(tl);
    if (!to_stdout && !tmp) {
        fail(&x, "out of memory");
        goto out;
    }
    FILE *f = stdout;
    if (tmp) {
        snprintf(tmp, tl, "%s.XXXXXX", out_path);
        int fd = mkstemp(tmp);
        if (fd >= 0) {
            /* mkstemp makes it 0600; the export gets the mode a plain create would give. */
            mode_t um = umask(0);
            umask(um);
            fchmod(fd, 0666 & ~um);
        }
        f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) {
            fail(&x, "%s: cannot create: %s", tmp, strerror(errno));
            if (fd >= 0) {
                close(fd);
                remove(tmp);
            }
            free(tmp);
            goto out;
        }
    }
    int wrc = write_export(&x, r, f);
    if (to_stdout) {
        if (wrc || fflush(stdout) != 0)
            fail(&x, "writing the frame export to stdout failed");
        else
            rc = 0;
    } else {
        int saved = errno;
        if (fclose(f) != 0 || wrc) {
            fail(&x, "%s: writing failed: %s", out_path, strerror(wrc ? saved : errno));
            remove(tmp);
        } else if (rename(tmp, out_path) != 0) {
            fail(&x, "%s: cannot rename the finished export into place: %s", out_path,
                 strerror(errno));
            remove(tmp);
        } else {
            rc = 0;
        }
        free(tmp);
    }
out:
    mprof_reader_close(r);
    exporter_free(&x);
    return rc != 0 && x.bad_process ? -2 : rc;
}
