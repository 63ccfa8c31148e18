/*
 * document_async.c - the "async" object of the static page's document (docs/VIEW.md): one track
 * per async track name, its spans laid out on lanes, and the whole capture's figures of each
 * track.
 *
 * The spans come from the walker's async_span hook, that is from the one pairer every tool uses
 * (analysis/async.h), so the page shows the spans `mprof report` counts in its async[] and the
 * exports write. The pairer hands a span out when it ends, so a track's spans are kept until the
 * end of the pass and then sorted by start; a span goes to the lowest lane whose last span has
 * ended by its start (the Perfetto export's rule, export/perfetto_async.c), so that spans of one
 * lane never overlap and the page draws a lane like one depth of a thread. Only spans that
 * overlap the embedded range are kept (at most max_keep), but every completed span of the
 * capture goes into the figures of its track and of its name on the track, by site_stats.h as
 * a zone would (no recursion: each span adds its duration to total), which gives the report's
 * count, total, p50, p95 and max.
 */
#include "view/document.h"

#include "analysis/site_stats.h"
#include "util/grow.h"
#include "util/json_out.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct dspan {
    int64_t s, e;
    uint32_t name; /* index into the track's names */
    uint32_t begin_thread, end_thread;
    uint32_t lane;
    uint8_t open_at_end, cut_by_reuse;
} dspan;

/* A span name of a track and the figures of its spans that ended (the whole capture). */
typedef struct dname {
    char *s; /* owned */
    mprof_site_stat st;
} dname;

typedef struct dtrack {
    dspan *v;
    uint32_t n, cap;
    dname *names; /* distinct span names of the track */
    uint32_t n_names, cap_names;
    mprof_site_stat st; /* completed spans of the whole capture */
    uint64_t omitted;   /* spans outside the range or past max_keep */
} dtrack;

struct mprof_vasync {
    int64_t t0, t1;
    int keep_all;
    uint64_t max_keep, kept;
    dtrack *t; /* by the pairer's track index, zero-filled */
    uint32_t n_t;
    int oom;
};

mprof_vasync *mprof__vasync_new(int64_t t0, int64_t t1, int keep_all, uint64_t max_keep)
{
    mprof_vasync *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->t0 = t0;
    a->t1 = t1;
    a->keep_all = keep_all;
    a->max_keep = max_keep;
    return a;
}

void mprof__vasync_free(mprof_vasync *a)
{
    if (!a)
        return;
    for (uint32_t i = 0; i < a->n_t; i++) {
        dtrack *t = &a->t[i];
        for (uint32_t k = 0; k < t->n_names; k++) {
            free(t->names[k].s);
            mprof__site_free(&t->names[k].st);
        }
        free(t->names);
        free(t->v);
        mprof__site_free(&t->st);
    }
    free(a->t);
    free(a);
}

int mprof__vasync_oom(const mprof_vasync *a)
{
    return a->oom;
}

/* The index of a span name in t's names, added when new (spans of a track share few names). */
static uint32_t name_of(mprof_vasync *a, dtrack *t, const char *s, size_t len)
{
    for (uint32_t k = t->n_names; k-- > 0;)
        if (strlen(t->names[k].s) == len && memcmp(t->names[k].s, s, len) == 0)
            return k;
    char *c = malloc(len + 1);
    if (!c || MPROF_GROW(t->names, t->cap_names, t->n_names + 1, 8) != 0) {
        free(c);
        a->oom = 1;
        return UINT32_MAX;
    }
    memcpy(c, s, len);
    c[len] = 0;
    memset(&t->names[t->n_names], 0, sizeof t->names[0]);
    t->names[t->n_names].s = c;
    return t->n_names++;
}

void mprof__vasync_span(mprof_vasync *a, const mprof_async_span *s)
{
    if (mprof_grow_zeroed((void **)&a->t, &a->n_t, s->track, sizeof *a->t, 1u << 20) != 0) {
        a->oom = 1;
        return;
    }
    dtrack *t = &a->t[s->track];
    int64_t d = s->end_ns - s->start_ns;
    uint32_t nm = name_of(a, t, s->name ? s->name : "", s->name ? s->name_len : 0);
    if (nm == UINT32_MAX)
        return;
    /* The report's figures, of the track and of the name: completed spans (an id begun again
     * ends its span there). */
    if (!s->open_at_end && (mprof__site_add(&t->st, NULL, s->start_ns, d, d, 1) != 0 ||
                            mprof__site_add(&t->names[nm].st, NULL, s->start_ns, d, d, 1) != 0))
        a->oom = 1;
    if ((!a->keep_all && (s->end_ns < a->t0 || s->start_ns > a->t1)) || a->kept >= a->max_keep) {
        t->omitted++;
        return;
    }
    if (MPROF_GROW(t->v, t->cap, t->n + 1, 64) != 0) {
        a->oom = 1;
        return;
    }
    t->v[t->n++] = (dspan){s->start_ns, s->end_ns < s->start_ns ? s->start_ns : s->end_ns, nm,
                           s->begin_thread, s->open_at_end ? UINT32_MAX : s->end_thread, 0,
                           (uint8_t)s->open_at_end, (uint8_t)s->cut_by_reuse};
    a->kept++;
}

static int span_cmp(const void *pa, const void *pb)
{
    const dspan *x = pa, *y = pb;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return x->e > y->e ? -1 : x->e < y->e; /* the longer first, as the Perfetto export */
}

/* Sorts t's spans and gives each its lane; returns the number of lanes, or UINT32_MAX when out
 * of memory. */
static uint32_t lay_out(dtrack *t)
{
    mprof_async_lanes lanes = {0};
    if (t->n > 1) /* qsort takes no NULL array, even of no element */
        qsort(t->v, t->n, sizeof *t->v, span_cmp);
    for (uint32_t k = 0; k < t->n; k++) {
        uint32_t l = mprof__async_lane(&lanes, t->v[k].s, t->v[k].e);
        if (l == UINT32_MAX) {
            mprof__async_lanes_free(&lanes);
            return UINT32_MAX;
        }
        t->v[k].lane = l;
    }
    uint32_t n = lanes.n;
    mprof__async_lanes_free(&lanes);
    return n;
}

static void jstr(FILE *o, const char *s)
{
    mprof_json_write_script_string(o, s ? s : "", s ? strlen(s) : 0);
}

/* A thread's name as the tracks show it. */
static void thread_name(FILE *o, const mprof_reader *r, uint32_t idx)
{
    const mprof_thread_def *d = mprof_reader_thread(r, idx);
    if (d && d->name) {
        jstr(o, d->name);
        return;
    }
    char buf[48];
    snprintf(buf, sizeof buf, "thread %" PRIu32, idx);
    jstr(o, buf);
}

int mprof__vasync_write(mprof_vasync *a, const mprof_walker *w, const mprof_reader *r, FILE *out)
{
    const mprof_async *pairer = mprof__walker_async(w);
    uint32_t n = pairer ? mprof__async_track_count(pairer) : 0;
    if (!n)
        return a->oom ? -1 : 0;
    if (mprof_grow_zeroed((void **)&a->t, &a->n_t, n - 1, sizeof *a->t, 1u << 20) != 0)
        return -1;
    /* Threads by capture index: the spans name theirs by index into this list. */
    fputs(",\"async\":{\"threads\":[", out);
    for (uint32_t i = 0; i < mprof_reader_thread_count(r); i++) {
        if (i)
            fputc(',', out);
        thread_name(out, r, i);
    }
    fputs("],\"tracks\":[", out);
    for (uint32_t i = 0; i < n; i++) {
        dtrack *t = &a->t[i];
        uint32_t lanes = lay_out(t);
        if (lanes == UINT32_MAX)
            return -1;
        const mprof_async_counts *c = mprof__async_counts(pairer, i);
        fputs(i ? ",{\"name\":" : "{\"name\":", out);
        jstr(out, mprof__async_track_name(pairer, i));
        fprintf(out, ",\"lanes\":%" PRIu32 ",\"names\":[", lanes);
        for (uint32_t k = 0; k < t->n_names; k++) {
            if (k)
                fputc(',', out);
            jstr(out, t->names[k].s);
        }
        fputs("],\"spans\":{\"start\":[", out);
        int64_t prev = 0;
        for (uint32_t k = 0; k < t->n; k++) {
            fprintf(out, "%s%" PRId64, k ? "," : "", t->v[k].s - prev);
            prev = t->v[k].s;
        }
        fputs("],\"dur\":[", out);
        for (uint32_t k = 0; k < t->n; k++)
            fprintf(out, "%s%" PRId64, k ? "," : "", t->v[k].e - t->v[k].s);
        fputs("],\"lane\":[", out);
        for (uint32_t k = 0; k < t->n; k++)
            fprintf(out, "%s%" PRIu32, k ? "," : "", t->v[k].lane);
        fputs("],\"name\":[", out);
        for (uint32_t k = 0; k < t->n; k++)
            fprintf(out, "%s%" PRIu32, k ? "," : "", t->v[k].name);
        fputs("],\"begin\":[", out);
        for (uint32_t k = 0; k < t->n; k++)
            fprintf(out, "%s%" PRIu32, k ? "," : "", t->v[k].begin_thread);
        fputs("],\"end\":[", out);
        for (uint32_t k = 0; k < t->n; k++)
            fprintf(out, "%s%" PRId64, k ? "," : "",
                    t->v[k].end_thread == UINT32_MAX ? INT64_C(-1) : (int64_t)t->v[k].end_thread);
        fputs("]}", out);
        const char *keys[2] = {"open", "cut"};
        for (int which = 0; which < 2; which++) {
            int any = 0;
            for (uint32_t k = 0; k < t->n; k++)
                if (which ? t->v[k].cut_by_reuse : t->v[k].open_at_end) {
                    fprintf(out, "%s%" PRIu32, any ? "," : (fprintf(out, ",\"%s\":[", keys[which]), ""), k);
                    any = 1;
                }
            if (any)
                fputc(']', out);
        }
        /* [name, count, total, min, max, mean, p50, p95] of each name's spans that ended. */
        fputs(",\"name_stats\":[", out);
        int first = 1;
        for (uint32_t k = 0; k < t->n_names; k++) {
            const mprof_site_stat *z = &t->names[k].st;
            if (!z->count)
                continue;
            fprintf(out, "%s[%" PRIu32 ",%" PRIu64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%.0f,%" PRIu64 ",%" PRIu64 "]",
                    first ? "" : ",", k, z->count, z->total_ns, mprof__site_min_ns(z), mprof__site_max_ns(z),
                    mprof__site_mean_ns(z), mprof__site_quantile_ns(z, 0.5), mprof__site_quantile_ns(z, 0.95));
            first = 0;
        }
        fputc(']', out);
        /* [count, total, min, max, mean, p50, p95] of the whole capture (site_stats.h). */
        const mprof_site_stat *z = &t->st;
        fprintf(out,
                ",\"stats\":[%" PRIu64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%.0f,%" PRIu64 ",%" PRIu64
                "],\"open_at_end\":%" PRIu64 ",\"unmatched_ends\":%" PRIu64 ",\"reused_ids\":%" PRIu64
                ",\"omitted\":%" PRIu64 "}",
                z->count, z->total_ns, mprof__site_min_ns(z), mprof__site_max_ns(z),
                z->count ? mprof__site_mean_ns(z) : 0.0, mprof__site_quantile_ns(z, 0.5),
                mprof__site_quantile_ns(z, 0.95), c->open_at_end, c->unmatched_ends, c->reused_ids,
                t->omitted);
    }
    fputs("]}", out);
    return a->oom ? -1 : 0;
}
