/*
 * document.c - writes the document that `mprof view` embeds in its HTML page (the schema is
 * docs/VIEW.md) and the page itself.
 *
 * Two passes over the capture. The first walks everything keeping only frames and a count of
 * zones per frame, which is enough to choose the range to embed: the whole capture when its
 * zones fit in max_zones, the frames asked for with --frames A:B, or else the window of frames
 * around the worst frame that fits. The second pass keeps the zones, lock spans, messages, plot
 * points and memory samples that overlap the range (plots and memory reduced to a min/max pair
 * per 1/4000 of the range) and the whole-capture statistics of locks and pools. The document
 * says what was left out.
 *
 * Contents: JSON helpers - pass 1 - range choice - pass 2 - writing the document - the page.
 */
#include "view/document.h"

#include "analysis/system.h"
#include "analysis/site_stats.h"
#include "analysis/timeline.h"
#include "mprof/mprof.h"
#include "util/tool.h"
#include "view/page_files.h"
#include "view/processes.h"
#include "util/json_out.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define DEFAULT_MAX_ZONES 1000000u
#define SAMPLE_BUCKETS 4000

/* ---- JSON helpers --------------------------------------------------------------------------- */

static void jstr(FILE *o, const char *s, size_t n)
{
    mprof_json_write_script_string(o, s, n);
}

static void jcstr(FILE *o, const char *s)
{
    if (!s)
        s = "";
    jstr(o, s, strlen(s));
}

/* Times and counts exact, other figures to 9 digits. */
static void jnum(FILE *o, double v)
{
    mprof_json_write_number(o, v, 9, 1, "null");
}

/* ---- growable arrays ------------------------------------------------------------------------ */

typedef struct vzone {
    int64_t start, dur;
    uint32_t loc, depth;
    uint32_t text, name; /* offset + 1 into the string arena, 0 = none */
    uint32_t value;      /* index + 1 into values, 0 = none */
    uint32_t unfinished; /* open at the end of the capture: drawn, not in the statistics */
} vzone;

typedef struct vtrack {
    vzone *z;
    size_t n, cap;
} vtrack;

typedef struct sample {
    int64_t ts;
    double v;
} sample;

/* A series reduced to the first, min and max point of each bucket of the range. */
typedef struct series {
    sample *s;
    size_t n, cap;
    int64_t bucket;
    int has;
    sample first, min, max;
    int have_before;
    sample before; /* the last point before the range: the value at its start */
    uint32_t name;
    int format, style;
    uint32_t color;
} series;

static int push(void **arr, size_t *n, size_t *cap, size_t sz)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        void *p = realloc(*arr, nc * sz);
        if (!p)
            return -1;
        *arr = p;
        *cap = nc;
    }
    (*n)++;
    return 0;
}
#define PUSH(a, n, cap) push((void **)&(a), &(n), &(cap), sizeof *(a))

/* ---- pass 1: frames and zones per frame ----------------------------------------------------- */

typedef struct pass1 {
    mprof_walker *w;
    uint64_t *per_frame; /* zones starting in main frame i (index 0 = before the first frame) */
    size_t n_per_frame, cap_per_frame;
    int oom;
} pass1;

static void p1_zone(void *user, const mprof_tl_zone *z)
{
    pass1 *p = user;
    const mprof_tl_frameset *f = mprof__walker_main_frames(p->w);
    size_t idx = 0; /* 0: before the first frame; k: frame k-1; n+1: the open frame */
    if (f && f->n) {
        /* Frames known so far are sorted by start: binary search. */
        size_t lo = 0, hi = f->n;
        while (lo < hi) {
            size_t m = (lo + hi) / 2;
            if (f->start[m] <= z->start_ns)
                lo = m + 1;
            else
                hi = m;
        }
        idx = lo;
    }
    while (p->n_per_frame <= idx) {
        if (PUSH(p->per_frame, p->n_per_frame, p->cap_per_frame) != 0) {
            p->oom = 1;
            return;
        }
        p->per_frame[p->n_per_frame - 1] = 0;
    }
    p->per_frame[idx]++;
}

/* ---- pass 2: what overlaps the range -------------------------------------------------------- */

typedef struct pass2 {
    mprof_walker *w;
    int64_t t0, t1, bucket_ns;
    vtrack *tracks; /* by walker track index */
    size_t n_tracks;
    char *arena;
    size_t arena_n, arena_cap;
    uint64_t *values;
    size_t n_values, cap_values;
    uint64_t kept, omitted, max_keep, over_cap;
    int keep_all;           /* the whole capture: no time filter (GPU zones may end after it) */
    int64_t min_start, max_end; /* of the kept zones */
    /* messages */
    int64_t *msg_ts;
    uint8_t *msg_level;
    uint32_t *msg_thread, *msg_text;
    size_t n_msg, cap_msg, cap_msg_b, cap_msg_c, cap_msg_d;
    series *plots; /* by plot name id order of appearance */
    size_t n_plots, cap_plots;
    series *mem; /* by walker pool index */
    size_t n_mem, cap_mem;
    /* The zone figures of the whole capture, every zone, embedded or not (analysis/site_stats.h:
     * the figures of mprof report), and of the GPU zones apart. */
    mprof_site_table stats;
    mprof_site_stat *gpu; /* by reader srcloc id */
    uint32_t n_gpu;
    mprof_vasync *async; /* the async spans (document_async.c) */
    /* With several processes: each source location's process (processes.h), by reader id. */
    const mprof_reader *r;
    uint32_t *loc_proc;
    uint32_t n_loc_proc;
    int oom;
} pass2;

static uint32_t arena_add(pass2 *p, const char *s, uint32_t n)
{
    while (p->arena_n + n + 1 > p->arena_cap) {
        size_t nc = p->arena_cap ? p->arena_cap * 2 : 4096;
        char *a = realloc(p->arena, nc);
        if (!a) {
            p->oom = 1;
            return 0;
        }
        p->arena = a;
        p->arena_cap = nc;
    }
    uint32_t off = (uint32_t)p->arena_n;
    memcpy(p->arena + off, s, n);
    p->arena[off + n] = 0;
    p->arena_n += n + 1;
    return off + 1;
}

static vtrack *vtrack_of(pass2 *p, uint32_t track)
{
    if (track >= p->n_tracks) {
        size_t nn = (size_t)track + 16;
        vtrack *t = realloc(p->tracks, nn * sizeof *t);
        if (!t) {
            p->oom = 1;
            return NULL;
        }
        memset(t + p->n_tracks, 0, (nn - p->n_tracks) * sizeof *t);
        p->tracks = t;
        p->n_tracks = nn;
    }
    return &p->tracks[track];
}

static void keep_zone(pass2 *p, uint32_t track, int64_t s, int64_t e, uint32_t loc, uint32_t depth,
                      const mprof_tl_zone *z)
{
    if (!p->keep_all && (e < p->t0 || s > p->t1)) {
        p->omitted++;
        return;
    }
    if (p->kept >= p->max_keep) {
        p->over_cap++;
        p->omitted++;
        return;
    }
    vtrack *t = vtrack_of(p, track);
    if (!t || PUSH(t->z, t->n, t->cap) != 0) {
        p->oom = 1;
        return;
    }
    vzone *v = &t->z[t->n - 1];
    memset(v, 0, sizeof *v);
    if (!p->kept || s < p->min_start)
        p->min_start = s;
    if (!p->kept || e > p->max_end)
        p->max_end = e;
    v->start = s;
    v->dur = e - s;
    v->loc = loc;
    v->depth = depth;
    if (z && z->text)
        v->text = arena_add(p, z->text, z->text_len);
    if (z && z->name)
        v->name = arena_add(p, z->name, z->name_len);
    v->unfinished = z && z->unfinished;
    if (z && z->has_value) {
        if (PUSH(p->values, p->n_values, p->cap_values) != 0) {
            p->oom = 1;
            return;
        }
        p->values[p->n_values - 1] = z->value;
        v->value = (uint32_t)p->n_values;
    }
    p->kept++;
}

static void p2_zone(void *user, const mprof_tl_zone *z)
{
    pass2 *p = user;
    keep_zone(p, z->track, z->start_ns, z->end_ns, z->loc, z->depth, z);
    if (p->r && mprof__vproc_several(p->r) && z->loc < (1u << 24)) {
        if (z->loc >= p->n_loc_proc &&
            mprof_grow_zeroed((void **)&p->loc_proc, &p->n_loc_proc, z->loc, sizeof *p->loc_proc, 1u << 24))
            p->oom = 1;
        else
            mprof__vproc_note(&p->loc_proc[z->loc], mprof__vproc_of_track(p->r, p->w, z->track));
    }
    const mprof_tl_track *t = mprof__walker_track(p->w, z->track);
    int kind = t ? t->kind : MPROF_TRACK_THREAD;
    if (kind != MPROF_TRACK_GPU) {
        if (mprof__site_table_zone(&p->stats, kind, z) != 0)
            p->oom = 1;
        return;
    }
    /* A GPU zone: timed by the GPU, figures of its own (site_stats.h). */
    if (z->unfinished || z->loc >= (1u << 24))
        return;
    if (z->loc >= p->n_gpu) {
        uint32_t n = z->loc + 16;
        mprof_site_stat *g = realloc(p->gpu, (size_t)n * sizeof *g);
        if (!g) {
            p->oom = 1;
            return;
        }
        memset(g + p->n_gpu, 0, (size_t)(n - p->n_gpu) * sizeof *g);
        p->gpu = g;
        p->n_gpu = n;
    }
    if (mprof__site_add(&p->gpu[z->loc], &p->stats.span, z->start_ns, z->end_ns - z->start_ns,
                        z->end_ns - z->start_ns - z->child_ns, 1) != 0)
        p->oom = 1;
}

static void p2_async(void *user, const mprof_async_span *s)
{
    pass2 *p = user;
    mprof__vasync_span(p->async, s);
}

/* Lock spans become zones of the lock's track: depth = the thread's row, loc = a marker that the
 * writer turns into the synthetic "waiting"/"holding" source locations. */
#define LOC_LOCK_WAIT 0xfffffff0u
#define LOC_LOCK_HOLD 0xfffffff1u

static void p2_lock(void *user, const mprof_tl_lockspan *s)
{
    pass2 *p = user;
    const mprof_tl_lock *l = mprof__walker_lock(p->w, s->lock);
    keep_zone(p, l->track, s->start_ns, s->end_ns, s->waiting ? LOC_LOCK_WAIT : LOC_LOCK_HOLD,
              s->row, NULL);
}

/* Appends the current bucket's first, min and max points in time order, each once. */
static void series_flush(pass2 *p, series *s)
{
    if (!s->has)
        return;
    sample pts[3] = {s->first, s->min, s->max};
    for (int i = 0; i < 3; i++)
        for (int k = i + 1; k < 3; k++)
            if (pts[k].ts < pts[i].ts) {
                sample t = pts[i];
                pts[i] = pts[k];
                pts[k] = t;
            }
    for (int i = 0; i < 3; i++) {
        if (i && pts[i].ts == pts[i - 1].ts && pts[i].v == pts[i - 1].v)
            continue;
        if (PUSH(s->s, s->n, s->cap) != 0) {
            p->oom = 1;
            return;
        }
        s->s[s->n - 1] = pts[i];
    }
    s->has = 0;
}

static void series_point(pass2 *p, series *s, int64_t ts, double v)
{
    if (ts < p->t0) {
        s->have_before = 1;
        s->before = (sample){ts, v};
        return;
    }
    if (ts > p->t1)
        return;
    int64_t b = (ts - p->t0) / p->bucket_ns;
    if (s->has && b != s->bucket)
        series_flush(p, s);
    sample x = {ts, v};
    if (!s->has) {
        s->has = 1;
        s->bucket = b;
        s->first = s->min = s->max = x;
    } else {
        if (v < s->min.v)
            s->min = x;
        if (v > s->max.v)
            s->max = x;
    }
}

static void p2_memory(void *user, uint32_t pool, int64_t ts, int64_t bytes)
{
    pass2 *p = user;
    while (p->n_mem <= pool) {
        if (PUSH(p->mem, p->n_mem, p->cap_mem) != 0) {
            p->oom = 1;
            return;
        }
        memset(&p->mem[p->n_mem - 1], 0, sizeof(series));
    }
    series_point(p, &p->mem[pool], ts, (double)bytes);
}

static series *plot_of(pass2 *p, uint32_t name)
{
    for (size_t i = 0; i < p->n_plots; i++)
        if (p->plots[i].name == name)
            return &p->plots[i];
    if (PUSH(p->plots, p->n_plots, p->cap_plots) != 0) {
        p->oom = 1;
        return NULL;
    }
    series *s = &p->plots[p->n_plots - 1];
    memset(s, 0, sizeof *s);
    s->name = name;
    return s;
}

static void p2_event(pass2 *p, const mprof_event *ev)
{
    switch (ev->type) {
    case MPROF_EV_MESSAGE:
        if (ev->ts_ns < p->t0 || ev->ts_ns > p->t1)
            break;
        if (p->n_msg == p->cap_msg) {
            size_t nc = p->cap_msg ? p->cap_msg * 2 : 256;
            int64_t *a = realloc(p->msg_ts, nc * sizeof *a);
            if (a)
                p->msg_ts = a;
            uint8_t *b = realloc(p->msg_level, nc);
            if (b)
                p->msg_level = b;
            uint32_t *c = realloc(p->msg_thread, nc * sizeof *c);
            if (c)
                p->msg_thread = c;
            uint32_t *d = realloc(p->msg_text, nc * sizeof *d);
            if (d)
                p->msg_text = d;
            if (!a || !b || !c || !d) {
                p->oom = 1;
                break;
            }
            p->cap_msg = nc;
        }
        p->msg_ts[p->n_msg] = ev->ts_ns;
        p->msg_level[p->n_msg] = (uint8_t)ev->u[0];
        p->msg_thread[p->n_msg] = ev->thread;
        p->msg_text[p->n_msg] = arena_add(p, ev->str ? ev->str : "", ev->str_len);
        p->n_msg++;
        break;
    case MPROF_EV_PLOT_F64:
    case MPROF_EV_PLOT_I64: {
        series *s = plot_of(p, (uint32_t)ev->u[0]);
        if (s)
            series_point(p, s, ev->ts_ns,
                         ev->type == MPROF_EV_PLOT_F64 ? mprof_event_f64(ev, 1)
                                                       : (double)(int64_t)ev->u[1]);
        break;
    }
    case MPROF_EV_PLOT_CONFIG: {
        series *s = plot_of(p, (uint32_t)ev->u[0]);
        if (s) {
            s->format = (int)ev->u[1];
            s->style = (int)ev->u[2];
            s->color = (uint32_t)ev->u[3];
        }
        break;
    }
    default:
        break;
    }
}

/* The walker's hook for the events other than zones: pass 2's messages and plots. */
static int p2_other(void *user, const mprof_event *ev)
{
    pass2 *p = user;
    p2_event(p, ev);
    return p->oom ? -1 : 0;
}

/* ---- range choice --------------------------------------------------------------------------- */

typedef struct range {
    int64_t t0, t1;
    int64_t first_frame, last_frame; /* embedded frames [first, last); -1 when none */
    const char *mode;
    char note[512];
} range;

static int choose_range(const mprof_view_opts *o, mprof_walker *w, const pass1 *p1, range *rg,
                        char *err, size_t errlen)
{
    const mprof_tl_frameset *f = mprof__walker_main_frames(w);
    uint64_t nf = f ? f->n : 0;
    uint64_t total = mprof__walker_zone_count(w);
    uint64_t max = o->max_zones ? o->max_zones : DEFAULT_MAX_ZONES;
    int64_t first = mprof__walker_first_ns(w), last = mprof__walker_last_ns(w);
    rg->first_frame = rg->last_frame = -1;
    rg->note[0] = 0;
    if (o->first_frame >= 0) {
        if (!nf) {
            tool_seterr(err, errlen, "--frames: the capture has no frames (no MPROF_FRAME_MARK)");
            return -1;
        }
        int64_t a = o->first_frame, b = o->last_frame;
        if (a >= (int64_t)nf || b <= a) {
            tool_seterr(err, errlen, "--frames %" PRId64 ":%" PRId64 ": the capture has frames 0:%" PRIu64,
                     a, b, nf);
            return -1;
        }
        if (b > (int64_t)nf)
            b = (int64_t)nf;
        rg->first_frame = a;
        rg->last_frame = b;
        rg->t0 = f->start[a];
        rg->t1 = f->start[b - 1] + f->dur[b - 1];
        rg->mode = "frames";
        return 0;
    }
    rg->t0 = first;
    rg->t1 = last;
    rg->mode = "all";
    if (total <= max)
        return 0;
    if (nf) {
        /* The worst frame, then neighbours while the zones fit (the smaller side first). */
        uint64_t worst = 0;
        for (uint64_t i = 1; i < nf; i++)
            if (f->dur[i] > f->dur[worst])
                worst = i;
#define CNT(i) ((i) + 1 < p1->n_per_frame ? p1->per_frame[(i) + 1] : 0)
        uint64_t a = worst, b = worst + 1, sum = CNT(worst);
        for (;;) {
            uint64_t left = a > 0 ? CNT(a - 1) : UINT64_MAX;
            uint64_t right = b < nf ? CNT(b) : UINT64_MAX;
            if (left == UINT64_MAX && right == UINT64_MAX)
                break;
            if (left <= right && sum + left <= max) {
                a--;
                sum += left;
            } else if (right != UINT64_MAX && sum + right <= max) {
                b++;
                sum += right;
            } else if (left != UINT64_MAX && sum + left <= max) {
                a--;
                sum += left;
            } else
                break;
        }
#undef CNT
        rg->first_frame = (int64_t)a;
        rg->last_frame = (int64_t)b;
        rg->t0 = f->start[a];
        rg->t1 = f->start[b - 1] + f->dur[b - 1];
        rg->mode = "worst";
        snprintf(rg->note, sizeof rg->note,
                 "The capture has %" PRIu64 " zones, more than the %" PRIu64
                 " this report embeds: it shows frames %" PRIu64 ":%" PRIu64
                 " around the worst frame, %" PRIu64 " (%.2f ms). Choose other frames with "
                 "mprof view --frames A:B, or raise --max-zones.",
                 total, max, a, b, worst, (double)f->dur[worst] / 1e6);
        return 0;
    }
    /* No frames to choose by: the start of the capture, assuming zones spread evenly. */
    rg->t1 = first + (int64_t)((double)(last - first) * ((double)max / (double)total));
    rg->mode = "start";
    snprintf(rg->note, sizeof rg->note,
             "The capture has %" PRIu64 " zones, more than the %" PRIu64
             " this report embeds, and no frames to choose by: it shows the first %.3f s. "
             "Raise --max-zones to see more.",
             total, max, (double)(rg->t1 - first) / 1e9);
    return 0;
}

/* ---- writing the document ------------------------------------------------------------------- */

static int cmp_vzone(const void *a, const void *b)
{
    const vzone *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return 0;
}

static const char *kind_name(int k)
{
    return k == MPROF_TRACK_FIBER ? "fiber" : k == MPROF_TRACK_GPU ? "gpu" : k == MPROF_TRACK_LOCK ? "lock" : "thread";
}

static void write_series(FILE *o, const series *s, int64_t t0)
{
    fputs("\"ts\":[", o);
    int64_t prev = 0;
    size_t k = 0;
    if (s->have_before) {
        fprintf(o, "%" PRId64, t0);
        prev = t0;
        k++;
    }
    for (size_t i = 0; i < s->n; i++, k++) {
        fprintf(o, "%s%" PRId64, k ? "," : "", s->s[i].ts - prev);
        prev = s->s[i].ts;
    }
    fputs("],\"value\":[", o);
    k = 0;
    if (s->have_before) {
        jnum(o, s->before.v);
        k++;
    }
    for (size_t i = 0; i < s->n; i++, k++) {
        if (k)
            fputc(',', o);
        jnum(o, s->s[i].v);
    }
    fputc(']', o);
}

/* The items of a JSON array of sorted times v[0, n), each as its difference from the one before
 * (the first from 0), which keeps the numbers short. */
static void write_deltas(FILE *o, const int64_t *v, uint64_t n)
{
    int64_t prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        fprintf(o, "%s%" PRId64, i ? "," : "", v[i] - prev);
        prev = v[i];
    }
}

static void write_frames(FILE *o, const mprof_tl_frameset *f, const char *name)
{
    fputs("{\"name\":", o);
    jcstr(o, name);
    fputs(",\"first\":0,\"start\":[", o);
    write_deltas(o, f->start, f->n);
    fputs("],\"dur\":[", o);
    for (uint64_t i = 0; i < f->n; i++)
        fprintf(o, "%s%" PRId64, i ? "," : "", f->dur[i]);
    fputs("]}", o);
}

static int write_doc(const char *path, const mprof_view_opts *o, mprof_reader *r, mprof_walker *w,
                     pass2 *p, const range *rg, uint64_t total_zones, FILE *out)
{
    /* Source locations in use, renumbered densely; the two lock markers come last. */
    uint32_t n_loc = mprof_reader_srcloc_count(r);
    uint32_t *remap = malloc(((size_t)n_loc + 2) * sizeof *remap);
    if (!remap)
        return -1;
    for (uint32_t i = 0; i < n_loc + 2; i++)
        remap[i] = NONE;
    uint32_t n_used = 0;
    for (size_t t = 0; t < p->n_tracks; t++)
        for (size_t i = 0; i < p->tracks[t].n; i++) {
            uint32_t l = p->tracks[t].z[i].loc;
            uint32_t slot = l == LOC_LOCK_WAIT ? n_loc : l == LOC_LOCK_HOLD ? n_loc + 1 : l;
            if (slot >= n_loc + 2)
                slot = 0; /* an id the capture never defined: shown as "?" */
            if (remap[slot] == NONE)
                remap[slot] = n_used++;
        }
    /* Locations with figures but no embedded zone (a range of a large capture) get one too: the
     * whole capture's statistics name them. */
    for (uint32_t l = 0; l < n_loc; l++)
        if (remap[l] == NONE && (mprof__site_table_get(&p->stats, l) || (l < p->n_gpu && p->gpu[l].count)))
            remap[l] = n_used++;

    char buf[256];
    const char *app = mprof_reader_info(r, "app");
    if (!app)
        app = mprof_reader_info(r, "process");
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    fputs("{\"schema\":\"mprof-view\",\"version\":1,\"capture\":{\"file\":", out);
    jcstr(out, o->display_name ? o->display_name : path);
    fputs(",\"app\":", out);
    jcstr(out, app);
    fprintf(out, ",\"duration_ns\":%" PRId64 ",\"events\":%" PRIu64 ",\"complete\":%s,\"zones\":%" PRIu64
                 ",\"threads\":%" PRIu32 ",\"lost_events\":%" PRIu64 ",\"timer\":",
            mprof__walker_last_ns(w), st.events, st.complete ? "true" : "false", total_zones,
            mprof_reader_thread_count(r), mprof__walker_lost_events(w));
    jcstr(out, mprof_reader_info(r, "timer"));
    int64_t t0 = rg->t0, t1 = rg->t1;
    if (p->keep_all && p->kept) {
        t0 = p->min_start < t0 ? p->min_start : t0;
        t1 = p->max_end > t1 ? p->max_end : t1;
    }
    fprintf(out, "},\"range\":{\"mode\":\"%s\",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64, rg->mode,
            t0, t1);
    if (rg->first_frame >= 0)
        fprintf(out, ",\"first_frame\":%" PRId64 ",\"last_frame\":%" PRId64, rg->first_frame,
                rg->last_frame);
    fprintf(out, ",\"zones\":%" PRIu64 ",\"omitted_zones\":%" PRIu64, p->kept, p->omitted);
    if (rg->note[0] || p->over_cap) {
        char note[768];
        snprintf(note, sizeof note, "%s%s", rg->note,
                 p->over_cap ? " Zones past the embedding limit inside the range were left out too."
                             : "");
        fputs(",\"note\":", out);
        jcstr(out, note);
    }
    fputs("},\"budget_ns\":", out);
    jnum(out, (o->budget_ms > 0 ? o->budget_ms : 1000.0 / 60.0) * 1e6);

    /* Frames: the main set in full, the others as frame_sets. */
    const mprof_tl_frameset *mf = mprof__walker_main_frames(w);
    if (mf) {
        fputs(",\"frames\":", out);
        const char *nm = mf->name ? mprof_reader_string(r, mf->name) : "Frame";
        write_frames(out, mf, nm ? nm : "Frame");
    }
    fputs(",\"frame_sets\":[", out);
    int first = 1;
    for (uint32_t i = 0; i < mprof__walker_frameset_count(w); i++) {
        const mprof_tl_frameset *f = mprof__walker_frameset(w, i);
        if (f == mf)
            continue;
        const char *nm = mprof_reader_string(r, f->name);
        if (!first)
            fputc(',', out);
        first = 0;
        write_frames(out, f, nm ? nm : "frames");
    }
    fputs("],\"srclocs\":[", out);
    {
        /* Inverse of remap, in dense order. */
        uint32_t *inv = malloc(((size_t)n_used + 1) * sizeof *inv);
        if (!inv) {
            free(remap);
            return -1;
        }
        for (uint32_t i = 0; i < n_loc + 2; i++)
            if (remap[i] != NONE)
                inv[remap[i]] = i;
        for (uint32_t k = 0; k < n_used; k++) {
            uint32_t i = inv[k];
            if (k)
                fputc(',', out);
            if (i == n_loc)
                fputs("[\"waiting\",\"\",\"\",0,12597547]", out); /* 0xc0392b */
            else if (i == n_loc + 1)
                fputs("[\"holding\",\"\",\"\",0,4037199]", out); /* 0x3d9a4f */
            else {
                const mprof_srcloc_def *d = mprof_reader_srcloc(r, i);
                fputc('[', out);
                jcstr(out, d ? d->name : "?");
                fputc(',', out);
                jcstr(out, d ? d->function : "");
                fputc(',', out);
                jcstr(out, d ? d->file : "");
                fprintf(out, ",%" PRIu32 ",%" PRIu32, d ? d->line : 0, d ? d->color : 0);
                /* With several processes: the process its zones ran in, where that is one. */
                if (i < p->n_loc_proc && p->loc_proc[i] && p->loc_proc[i] != MPROF_VPROC_NONE)
                    fprintf(out, ",%" PRIu32, p->loc_proc[i] - 1);
                fputc(']', out);
            }
        }
        free(inv);
    }

    /* Tracks: threads, fibers, GPU contexts, locks; those with nothing in range are left out. */
    fputs("],\"tracks\":[", out);
    int several = mprof__vproc_several(r);
    uint32_t nt = mprof__walker_track_count(w);
    uint32_t *track_out = malloc(((size_t)nt + 1) * sizeof *track_out);
    if (!track_out) {
        free(remap);
        return -1;
    }
    for (uint32_t i = 0; i < nt; i++)
        track_out[i] = NONE;
    /* Threads that logged messages in range keep a track even without zones. */
    for (size_t m = 0; m < p->n_msg; m++)
        for (uint32_t i = 0; i < nt; i++) {
            const mprof_tl_track *t = mprof__walker_track(w, i);
            if (t->kind == MPROF_TRACK_THREAD && t->ref == p->msg_thread[m] && track_out[i] == NONE)
                track_out[i] = NONE - 1; /* marked */
        }
    /* Output order: by kind, threads by their process and their index in the capture
     * (registration order), the rest in order of appearance (processes.h). */
    uint32_t *order = malloc(((size_t)nt + 1) * sizeof *order);
    if (!order) {
        free(track_out);
        free(remap);
        return -1;
    }
    for (uint32_t i = 0; i < nt; i++)
        order[i] = i;
    for (uint32_t i = 1; i < nt; i++) /* insertion sort: tracks are few */
        for (uint32_t k = i; k > 0; k--) {
            if (!mprof__vproc_track_after(r, w, order[k - 1], order[k]))
                break;
            uint32_t tmp = order[k];
            order[k] = order[k - 1];
            order[k - 1] = tmp;
        }
    uint32_t n_out = 0;
    first = 1;
    {
        for (uint32_t oi = 0; oi < nt; oi++) {
            uint32_t i = order[oi];
            const mprof_tl_track *t = mprof__walker_track(w, i);
            int kind = t->kind;
            vtrack *v = i < p->n_tracks ? &p->tracks[i] : NULL;
            if ((!v || !v->n) && track_out[i] != NONE - 1)
                continue;
            track_out[i] = n_out++;
            if (!first)
                fputc(',', out);
            first = 0;
            fprintf(out, "{\"kind\":\"%s\",\"name\":", kind_name(kind));
            jcstr(out, mprof__walker_track_name(w, i, buf, sizeof buf));
            if (kind == MPROF_TRACK_THREAD)
                fprintf(out, ",\"tid\":%" PRIu64, t->os_tid);
            if (kind == MPROF_TRACK_THREAD && several)
                fprintf(out, ",\"process\":%" PRIu32, mprof__vproc_of_track(r, w, i));
            if (kind == MPROF_TRACK_LOCK) {
                for (uint32_t l = 0; l < mprof__walker_lock_count(w); l++) {
                    const mprof_tl_lock *lk = mprof__walker_lock(w, l);
                    if (lk->track != i)
                        continue;
                    fputs(",\"rows\":[", out);
                    for (uint32_t rr = 0; rr < lk->n_rows; rr++) {
                        if (rr)
                            fputc(',', out);
                        jcstr(out, mprof__walker_lock_row_name(w, l, rr, buf, sizeof buf));
                    }
                    fputc(']', out);
                }
            }
            size_t n = v ? v->n : 0;
            if (n)
                qsort(v->z, n, sizeof *v->z, cmp_vzone);
            fputs(",\"zones\":{\"start\":[", out);
            int64_t prev = 0;
            for (size_t k = 0; k < n; k++) {
                fprintf(out, "%s%" PRId64, k ? "," : "", v->z[k].start - prev);
                prev = v->z[k].start;
            }
            fputs("],\"dur\":[", out);
            for (size_t k = 0; k < n; k++)
                fprintf(out, "%s%" PRId64, k ? "," : "", v->z[k].dur);
            fputs("],\"depth\":[", out);
            for (size_t k = 0; k < n; k++)
                fprintf(out, "%s%" PRIu32, k ? "," : "", v->z[k].depth);
            fputs("],\"loc\":[", out);
            for (size_t k = 0; k < n; k++) {
                uint32_t l = v->z[k].loc;
                uint32_t slot = l == LOC_LOCK_WAIT ? n_loc : l == LOC_LOCK_HOLD ? n_loc + 1 : l;
                if (slot >= n_loc + 2)
                    slot = 0;
                fprintf(out, "%s%" PRIu32, k ? "," : "", remap[slot]);
            }
            fputs("]}", out);
            /* Zones still open when the capture ended: drawn, not in the statistics. */
            int any_open = 0;
            for (size_t k = 0; k < n; k++)
                if (v->z[k].unfinished) {
                    fprintf(out, "%s%zu", any_open ? "," : ",\"unfinished\":[", k);
                    any_open = 1;
                }
            if (any_open)
                fputc(']', out);
            const char *keys[3] = {"text", "name_override", "value"};
            for (int which = 0; which < 3; which++) {
                int any = 0;
                for (size_t k = 0; k < n; k++) {
                    uint32_t ref = which == 0 ? v->z[k].text : which == 1 ? v->z[k].name : v->z[k].value;
                    if (!ref)
                        continue;
                    fprintf(out, "%s[%zu,", any ? "," : (fprintf(out, ",\"%s\":[", keys[which]), ""), k);
                    any = 1;
                    if (which < 2)
                        jcstr(out, p->arena + ref - 1);
                    else
                        fprintf(out, "%" PRIu64, p->values[ref - 1]);
                    fputc(']', out);
                }
                if (any)
                    fputc(']', out);
            }
            fputc('}', out);
        }
    }
    fputc(']', out);
    /* With several processes: each with its pid, name, threads and why it ended early. */
    if (several) {
        fputs(",\"processes\":[", out);
        for (uint32_t pi = 0; pi < mprof_reader_process_count(r); pi++) {
            const mprof_process_def *d = mprof_reader_process(r, pi);
            if (!d)
                break;
            fprintf(out, "%s{\"index\":%" PRIu32 ",\"pid\":%" PRIu64 ",\"name\":", pi ? "," : "", pi, d->pid);
            jcstr(out, d->name);
            fprintf(out, ",\"threads\":%" PRIu32, mprof__vproc_threads(r, w, pi));
            if (d->ended_by) {
                fputs(",\"ended_by\":", out);
                jcstr(out, d->ended_by);
            }
            fputc('}', out);
        }
        fputc(']', out);
    }

    /* Message level colors from the public header: one definition for viewer and exports. */
    fputs(",\"level_colors\":[", out);
    for (int lv = 0; lv <= 6; lv++)
        fprintf(out, "%s%" PRIu32, lv ? "," : "", mprof_log_level_color((mprof_log_level)lv));
    fputc(']', out);
    if (p->n_msg) {
        fputs(",\"messages\":{\"ts\":[", out);
        write_deltas(out, p->msg_ts, p->n_msg);
        fputs("],\"level\":[", out);
        for (size_t m = 0; m < p->n_msg; m++)
            fprintf(out, "%s%u", m ? "," : "", (unsigned)p->msg_level[m]);
        fputs("],\"track\":[", out);
        for (size_t m = 0; m < p->n_msg; m++) {
            uint32_t tr = NONE;
            for (uint32_t i = 0; i < nt; i++) {
                const mprof_tl_track *t = mprof__walker_track(w, i);
                if (t->kind == MPROF_TRACK_THREAD && t->ref == p->msg_thread[m])
                    tr = track_out[i];
            }
            fprintf(out, "%s%d", m ? "," : "", tr == NONE || tr == NONE - 1 ? -1 : (int)tr);
        }
        fputs("],\"text\":[", out);
        for (size_t m = 0; m < p->n_msg; m++) {
            if (m)
                fputc(',', out);
            jcstr(out, p->arena + p->msg_text[m] - 1);
        }
        fputs("]}", out);
    }

    fputs(",\"plots\":[", out);
    first = 1;
    for (size_t i = 0; i < p->n_plots; i++) {
        series *s = &p->plots[i];
        if (!s->n && !s->have_before)
            continue;
        if (!first)
            fputc(',', out);
        first = 0;
        fputs("{\"name\":", out);
        const char *nm = mprof_reader_string(r, s->name);
        jcstr(out, nm ? nm : "plot");
        fprintf(out, ",\"format\":%d,\"style\":%d,\"color\":%" PRIu32 ",", s->format, s->style, s->color);
        write_series(out, s, rg->t0);
        fputc('}', out);
    }
    for (size_t i = 0; i < p->n_mem; i++) {
        series *s = &p->mem[i];
        const mprof_tl_pool *pool = mprof__walker_pool(w, (uint32_t)i);
        if ((!s->n && !s->have_before) || !pool)
            continue;
        if (!first)
            fputc(',', out);
        first = 0;
        const char *nm = pool->name ? mprof_reader_string(r, pool->name) : "heap";
        snprintf(buf, sizeof buf, "Memory: %s", nm ? nm : "pool");
        fputs("{\"name\":", out);
        jcstr(out, buf);
        fputs(",\"format\":2,\"style\":2,\"color\":0,", out);
        write_series(out, s, rg->t0);
        fputc('}', out);
    }
    fputs("],\"locks\":[", out);
    for (uint32_t l = 0; l < mprof__walker_lock_count(w); l++) {
        const mprof_tl_lock *lk = mprof__walker_lock(w, l);
        const char *nm = mprof_reader_string(r, lk->name);
        if (l)
            fputc(',', out);
        fputs("{\"name\":", out);
        if (nm)
            jcstr(out, nm);
        else {
            snprintf(buf, sizeof buf, "lock %" PRIu32, lk->id);
            jcstr(out, buf);
        }
        uint32_t tr = track_out[lk->track];
        fprintf(out,
                ",\"kind\":%" PRIu32 ",\"track\":%d,\"acquisitions\":%" PRIu64 ",\"contended\":%" PRIu64
                ",\"try_failed\":%" PRIu64 ",\"wait_ns\":%" PRId64 ",\"max_wait_ns\":%" PRId64
                ",\"hold_ns\":%" PRId64 ",\"max_hold_ns\":%" PRId64 ",\"threads\":%" PRIu32 "}",
                lk->kind, tr >= NONE - 1 ? -1 : (int)tr, lk->acquisitions, lk->contended,
                lk->try_failed, lk->wait_ns, lk->max_wait_ns, lk->hold_ns, lk->max_hold_ns, lk->n_rows);
    }
    fputc(']', out);
    if (mprof__walker_pool_count(w)) {
        fputs(",\"memory\":{\"pools\":[", out);
        for (uint32_t i = 0; i < mprof__walker_pool_count(w); i++) {
            const mprof_tl_pool *pool = mprof__walker_pool(w, i);
            const char *nm = pool->name ? mprof_reader_string(r, pool->name) : "heap";
            if (i)
                fputc(',', out);
            fputs("{\"name\":", out);
            jcstr(out, nm ? nm : "pool");
            fprintf(out,
                    ",\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64
                    ",\"peak_bytes\":%" PRId64 ",\"end_bytes\":%" PRId64 ",\"live\":%" PRIu64
                    ",\"bad_frees\":%" PRIu64 "}",
                    pool->allocs, pool->frees, pool->alloc_bytes, pool->peak, pool->in_use,
                    pool->live, pool->bad_frees);
        }
        fputs("]}", out);
    }
    /* The zone figures of the whole capture (analysis/site_stats.h): the Statistics table shows
     * them for the whole capture, embedded or not, and the page's own figures of a range follow
     * the same rules. [slot, count, total, self, min, max, mean, p50, p95, in_frames]. */
    fprintf(out, ",\"zone_stats\":{\"span\":[%" PRId64 ",%" PRId64 "],\"rows\":[", p->stats.span.first_ns,
            p->stats.span.last_ns);
    for (int gpu = 0; gpu < 2; gpu++) {
        if (gpu)
            fputs("],\"gpu_rows\":[", out);
        int first_row = 1;
        uint32_t n = gpu ? p->n_gpu : p->stats.n_sites;
        for (uint32_t l = 0; l < n && l < n_loc; l++) {
            const mprof_site_stat *z = gpu ? &p->gpu[l] : mprof__site_table_get(&p->stats, l);
            if (!z || !z->count || remap[l] == NONE)
                continue;
            fprintf(out, "%s[%" PRIu32 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%.0f,%" PRIu64
                         ",%" PRIu64 ",%" PRId64 "]",
                    first_row ? "" : ",", remap[l], z->count, z->total_ns, z->self_ns, mprof__site_min_ns(z),
                    mprof__site_max_ns(z), mprof__site_mean_ns(z), mprof__site_quantile_ns(z, 0.5),
                    mprof__site_quantile_ns(z, 0.95), z->in_frames_ns);
            first_row = 0;
        }
    }
    fputs("]}", out);
    /* Async spans: a track per name, its spans on lanes (document_async.c). */
    if (mprof__vasync_write(p->async, w, r, out) != 0)
        p->oom = 1;
    /* System tracing (docs/SYSTEM.md): thread states, CPU usage, samples; left out when it
     * cannot be read (the rest of the document stands). */
    mprof__document_system_json(path, out, rg->t0, rg->t1);
    if (o->diff_json) {
        fputs(",\"diff\":", out);
        /* The comparison document is our own JSON; keep it safe inside <script> all the same. */
        for (const char *c = o->diff_json; *c; c++) {
            if (*c == '<')
                fputs("\\u003c", out);
            else
                fputc(*c, out);
        }
    }
    fputs("}\n", out);
    free(order);
    free(track_out);
    free(remap);
    return 0;
}

/* ---- the two passes ------------------------------------------------------------------------- */

static void pass2_free(pass2 *p)
{
    for (size_t i = 0; i < p->n_tracks; i++)
        free(p->tracks[i].z);
    free(p->tracks);
    free(p->loc_proc);
    free(p->arena);
    free(p->values);
    free(p->msg_ts);
    free(p->msg_level);
    free(p->msg_thread);
    free(p->msg_text);
    for (size_t i = 0; i < p->n_plots; i++)
        free(p->plots[i].s);
    free(p->plots);
    for (size_t i = 0; i < p->n_mem; i++)
        free(p->mem[i].s);
    free(p->mem);
    mprof__site_table_free(&p->stats);
    for (uint32_t i = 0; i < p->n_gpu; i++)
        mprof__site_free(&p->gpu[i]);
    free(p->gpu);
    mprof__vasync_free(p->async);
}

int mprof__view_write(const char *path, const mprof_view_opts *opts, FILE *out, char *err,
                      size_t errlen)
{
    mprof_view_opts o = *opts;
    if (!o.max_zones)
        o.max_zones = DEFAULT_MAX_ZONES;

    /* Pass 1. */
    pass1 p1 = {0};
    mprof_tl_hooks h1 = {.user = &p1, .zone = p1_zone};
    mprof_reader *r = mprof_reader_open(path, err, errlen);
    if (!r)
        return -1;
    mprof_walker *w1 = mprof__walker_new(r, &h1, 1);
    if (!w1) {
        mprof_reader_close(r);
        tool_seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    p1.w = w1;
    int rc = mprof__walker_feed(w1, r, &p1.oom, path, err, errlen);
    mprof_reader_close(r);
    if (rc < 0) {
        mprof__walker_free(w1);
        free(p1.per_frame);
        return -1;
    }
    mprof__walker_finish(w1);
    range rg;
    if (choose_range(&o, w1, &p1, &rg, err, errlen) != 0) {
        mprof__walker_free(w1);
        free(p1.per_frame);
        return -1;
    }
    free(p1.per_frame);
    uint64_t total_zones = mprof__walker_zone_count(w1);
    /* The main frames' span (the first and the last main frame mark), for the frame shares. */
    mprof_frame_span span = MPROF_NO_FRAME_SPAN;
    const mprof_tl_frameset *mf = mprof__walker_main_frames(w1);
    if (mf && mf->n && mf->start && mf->start[mf->n - 1] + mf->dur[mf->n - 1] > mf->start[0])
        span = (mprof_frame_span){mf->start[0], mf->start[mf->n - 1] + mf->dur[mf->n - 1]};
    mprof__walker_free(w1);
    w1 = NULL;

    /* Pass 2. */
    pass2 p2 = {0};
    mprof__site_table_init(&p2.stats, span, NULL);
    p2.t0 = rg.t0;
    p2.t1 = rg.t1;
    p2.bucket_ns = (rg.t1 - rg.t0) / SAMPLE_BUCKETS;
    if (p2.bucket_ns < 1)
        p2.bucket_ns = 1;
    /* Zones crossing the range's edges come on top of the budget; cap at 1.5 times. */
    p2.max_keep = o.max_zones + o.max_zones / 2;
    p2.keep_all = strcmp(rg.mode, "all") == 0;
    mprof_tl_hooks h2 = {.user = &p2, .zone = p2_zone, .lock_span = p2_lock, .memory = p2_memory,
                         .async_span = p2_async, .other = p2_other};
    p2.async = mprof__vasync_new(rg.t0, rg.t1, p2.keep_all, p2.max_keep);
    r = p2.async ? mprof_reader_open(path, err, errlen) : NULL;
    if (!p2.async)
        tool_seterr(err, errlen, "%s: out of memory", path);
    if (!r) {
        pass2_free(&p2);
        mprof__walker_free(w1);
        return -1;
    }
    mprof_walker *w2 = mprof__walker_new(r, &h2, 1);
    if (!w2) {
        tool_seterr(err, errlen, "%s: out of memory", path);
        mprof_reader_close(r);
        mprof__walker_free(w1);
        return -1;
    }
    p2.w = w2;
    p2.r = r;
    rc = mprof__walker_feed(w2, r, &p2.oom, path, err, errlen);
    int ret = 0;
    if (rc < 0) {
        ret = -1; /* walker_feed said why */
    } else {
        mprof__walker_finish(w2);
        for (size_t i = 0; i < p2.n_plots; i++)
            series_flush(&p2, &p2.plots[i]);
        for (size_t i = 0; i < p2.n_mem; i++)
            series_flush(&p2, &p2.mem[i]);
        if (write_doc(path, &o, r, w2, &p2, &rg, total_zones, out) != 0 || p2.oom ||
            mprof__vasync_oom(p2.async)) {
            tool_seterr(err, errlen, "%s: out of memory", path);
            ret = -1;
        }
    }
    mprof_reader_close(r);
    mprof__walker_free(w2);
    mprof__walker_free(w1);
    pass2_free(&p2);
    return ret;
}

int mprof__view_write_html(const char *path, const mprof_view_opts *opts, FILE *out, char *err,
                           size_t errlen)
{
    if (fwrite(mprof__view_head, 1, mprof__view_head_len, out) != mprof__view_head_len) {
        tool_seterr(err, errlen, "write error");
        return -1;
    }
    if (mprof__view_write(path, opts, out, err, errlen) != 0)
        return -1;
    if (fwrite(mprof__view_tail, 1, mprof__view_tail_len, out) != mprof__view_tail_len) {
        tool_seterr(err, errlen, "write error");
        return -1;
    }
    return 0;
}
