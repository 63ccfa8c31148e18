/*
 * site_stats.c - the one definition of a zone's figures and of a set of frame times
 * (site_stats.h): the report, the CSV statistics, diff, the static page and the served index
 * each feed calls in and read figures out, so none of them can count a call its own way.
 */
#include "analysis/site_stats.h"
#include "analysis/percentile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mprof__site_merge(mprof_site_stat *dst, const mprof_site_stat *src)
{
    if (!src->count)
        return 0;
    mprof_hist *d = &dst->hist;
    const mprof_hist *h = &src->hist;
    if (h->counts && !d->counts && !(d->counts = calloc(MPROF_HIST_BUCKETS, sizeof *d->counts)))
        return -1;
    if (!d->n || h->min < d->min)
        d->min = h->min;
    if (!d->n || h->max > d->max)
        d->max = h->max;
    d->n += h->n;
    d->sum += h->sum;
    d->sumsq += h->sumsq;
    if (h->counts)
        for (unsigned b = 0; b < MPROF_HIST_BUCKETS; b++)
            d->counts[b] += h->counts[b];
    dst->count += src->count;
    dst->total_ns += src->total_ns;
    dst->self_ns += src->self_ns;
    dst->in_frames_ns += src->in_frames_ns;
    return 0;
}

void mprof__site_free(mprof_site_stat *s)
{
    if (s)
        mprof_hist_free(&s->hist);
}

double mprof__site_mean_ns(const mprof_site_stat *s)
{
    return mprof_hist_mean(&s->hist);
}

uint64_t mprof__site_min_ns(const mprof_site_stat *s)
{
    return s->count ? s->hist.min : 0;
}

uint64_t mprof__site_max_ns(const mprof_site_stat *s)
{
    return s->count ? s->hist.max : 0;
}

double mprof__site_stddev_ns(const mprof_site_stat *s)
{
    return mprof_hist_stddev(&s->hist);
}

uint64_t mprof__site_quantile_ns(const mprof_site_stat *s, double q)
{
    return mprof_hist_quantile(&s->hist, q);
}

double mprof__site_frame_share(const mprof_site_stat *s, const mprof_frame_span *span)
{
    if (!span || span->first_ns < 0 || span->last_ns <= span->first_ns)
        return 0.0;
    return (double)s->in_frames_ns / (double)(span->last_ns - span->first_ns);
}

double mprof__site_per_frame_ns(const mprof_site_stat *s, uint64_t frames)
{
    return frames ? (double)s->in_frames_ns / (double)frames : 0.0;
}

void mprof__site_table_init(mprof_site_table *t, mprof_frame_span span, const int64_t *range)
{
    memset(t, 0, sizeof *t);
    t->span = span;
    if (range) {
        t->ranged = 1;
        t->t0 = range[0];
        t->t1 = range[1];
    }
}

static mprof_site_stat *site_of(mprof_site_table *t, uint32_t loc)
{
    if (loc >= t->n_sites) {
        if (loc >= (1u << 24))
            return NULL; /* no capture defines that many sites */
        uint32_t n = loc + 1 > t->n_sites * 2 ? loc + 1 : t->n_sites * 2;
        mprof_site_stat *p = realloc(t->site, (size_t)n * sizeof *p);
        if (!p)
            return NULL;
        memset(p + t->n_sites, 0, (size_t)(n - t->n_sites) * sizeof *p);
        t->site = p;
        t->n_sites = n;
    }
    return &t->site[loc];
}

/* The pending sums of the zone open at depth of track (grown as needed). */
static mprof_site_pend *pend_of(mprof_site_table *t, uint32_t track, uint32_t depth)
{
    if (track >= t->n_tracks) {
        uint32_t n = track + 8;
        mprof_site_pend **p = realloc(t->pend, (size_t)n * sizeof *p);
        if (!p)
            return NULL;
        t->pend = p;
        uint32_t *d = realloc(t->pend_depths, (size_t)n * sizeof *d);
        if (!d)
            return NULL;
        t->pend_depths = d;
        for (uint32_t i = t->n_tracks; i < n; i++) {
            t->pend[i] = NULL;
            t->pend_depths[i] = 0;
        }
        t->n_tracks = n;
    }
    if (depth >= t->pend_depths[track]) {
        uint32_t n = depth + 16;
        mprof_site_pend *p = realloc(t->pend[track], (size_t)n * sizeof *p);
        if (!p)
            return NULL;
        memset(p + t->pend_depths[track], 0, (size_t)(n - t->pend_depths[track]) * sizeof *p);
        t->pend[track] = p;
        t->pend_depths[track] = n;
    }
    return &t->pend[track][depth];
}

/* The part of [s, e) inside the span. */
static int64_t in_span(const mprof_frame_span *sp, int64_t s, int64_t e)
{
    if (sp->first_ns < 0)
        return 0;
    int64_t a = s > sp->first_ns ? s : sp->first_ns, b = e < sp->last_ns ? e : sp->last_ns;
    return b > a ? b - a : 0;
}

int mprof__site_table_zone(mprof_site_table *t, int track_kind, const mprof_tl_zone *z)
{
    int counts = mprof__site_counts(track_kind, z->unfinished);
    if (!t->ranged && !counts)
        return 0;
    int64_t dur = z->end_ns - z->start_ns, self = dur - z->child_ns;
    mprof_site_stat *st = site_of(t, z->loc);
    if (!st)
        return -1;
    if (!t->ranged) {
        t->zones++;
        return mprof__site_add(st, &t->span, z->start_ns, dur, self, mprof__site_outermost(z->nested, 0, 0));
    }
    if (track_kind != MPROF_TRACK_THREAD && track_kind != MPROF_TRACK_FIBER)
        return 0;
    mprof_site_pend *mine = pend_of(t, z->track, z->depth);
    if (!mine)
        return -1;
    mprof_site_pend held = *mine; /* what nested calls inside it left for it */
    mine->total_ns = mine->in_frames_ns = 0;
    if (mprof__site_inside(t->t0, t->t1, z->start_ns, z->end_ns)) {
        /* Inside the range it holds the nested calls that wait for it (a zone never ended
         * holds them as in the whole capture: their time stays out of the total). */
        if (!counts)
            return 0;
        t->zones++;
        if (!z->nested)
            return mprof__site_add(st, &t->span, z->start_ns, dur, self, 1);
        /* Outermost or not is known when its nearest ancestor of the same site ends. */
        mprof_site_pend *up = pend_of(t, z->track, z->nest_depth);
        if (!up)
            return -1;
        up->total_ns += dur > 0 ? dur : 0;
        up->in_frames_ns += in_span(&t->span, z->start_ns, z->end_ns);
        return mprof__site_add(st, &t->span, z->start_ns, dur, self, 0);
    }
    /* Outside the range: the calls inside it that would fold into it are outermost in the
     * range, since its own ancestors of the same site hold it and so are outside too. */
    st->total_ns += held.total_ns;
    st->in_frames_ns += held.in_frames_ns;
    return 0;
}

const mprof_site_stat *mprof__site_table_get(const mprof_site_table *t, uint32_t loc)
{
    return loc < t->n_sites && t->site[loc].count ? &t->site[loc] : NULL;
}

void mprof__site_table_free(mprof_site_table *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->n_sites; i++)
        mprof__site_free(&t->site[i]);
    free(t->site);
    for (uint32_t i = 0; i < t->n_tracks; i++)
        free(t->pend[i]);
    free(t->pend);
    free(t->pend_depths);
    memset(t, 0, sizeof *t);
}

mprof_frame_summary mprof__frame_summary(const double *sorted, uint64_t n)
{
    mprof_frame_summary f;
    memset(&f, 0, sizeof f);
    f.count = n;
    if (!n)
        return f;
    double sq = 0;
    for (uint64_t i = 0; i < n; i++)
        f.total += sorted[i];
    f.mean = f.total / (double)n;
    for (uint64_t i = 0; i < n; i++)
        sq += (sorted[i] - f.mean) * (sorted[i] - f.mean);
    f.stddev = n > 1 ? sqrt(sq / (double)n) : 0.0;
    f.min = sorted[0];
    f.p50 = mprof__percentile_sorted(sorted, (size_t)n, 50);
    f.p90 = mprof__percentile_sorted(sorted, (size_t)n, 90);
    f.p95 = mprof__percentile_sorted(sorted, (size_t)n, 95);
    f.p99 = mprof__percentile_sorted(sorted, (size_t)n, 99);
    f.max = sorted[n - 1];
    return f;
}
