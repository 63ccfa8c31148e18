/*
 * site_stats.h - the statistics of zones, defined once. Every output that shows a figure of a
 * source location (a site: one MPROF_ZONE call) or of a set of frame times computes it here:
 * `mprof report`, the CSV statistics and `mprof diff` (zstats.h), the static page's document
 * (view/document.c) and the served index (view/index_*.c). A fix lands in all of them at once.
 *
 * The rules (docs/STATISTICS.md):
 *   - which zones count: CPU zones (of a thread or a fiber) that ended. A GPU zone is timed by
 *     the GPU and has figures of its own; a zone still open when the capture ends has no
 *     duration yet.
 *   - count, self, mean, min, max and percentiles cover every call; total is inclusive time
 *     with recursion counted once: a call that runs inside another call of the same site on its
 *     track adds nothing (the outer call holds that time), so each stretch of time counts once
 *     per track;
 *   - in a range, the rule is the same among the calls inside the range: a call adds its
 *     duration unless a call of its site that holds it is inside the range too;
 *   - the frame share is the part of total inside the main frames' span, over that span.
 *
 * Pure functions and plain structures; any thread, one structure per thread.
 */
#ifndef MPROF_ANALYSIS_SITE_STATS_H
#define MPROF_ANALYSIS_SITE_STATS_H

#include "analysis/hist.h"
#include "analysis/timeline.h"

#include <stdint.h>

/* The main frames' span, [first_ns, last_ns] (the first and the last main frame mark); first_ns
 * < 0 when the capture has fewer than two main frame marks. */
typedef struct mprof_frame_span {
    int64_t first_ns, last_ns;
} mprof_frame_span;

#define MPROF_NO_FRAME_SPAN ((mprof_frame_span){-1, -1})

/* One site's figures. Zero-initialised: no call yet. Free with mprof__site_free. */
typedef struct mprof_site_stat {
    uint64_t count;       /* every call */
    int64_t total_ns;     /* inclusive, recursion counted once */
    int64_t self_ns;      /* each call's duration minus its direct children's, summed */
    int64_t in_frames_ns; /* the part of total inside the main frames' span */
    mprof_hist hist;      /* every call's duration: min, max, mean, percentiles */
} mprof_site_stat;

/* Whether a zone of a track of kind (MPROF_TRACK_* of timeline.h) counts in the zone statistics;
 * unfinished: still open at the end of the capture. */
static inline int mprof__site_counts(int track_kind, int unfinished)
{
    return !unfinished && (track_kind == MPROF_TRACK_THREAD || track_kind == MPROF_TRACK_FIBER);
}

/* The recursion rule in a range. A zone inside the range adds its duration to total unless one of
 * its ancestors of the same site is inside the range too. Ancestors hold each other, so those
 * outside the range (they begin before it or end after it) are the outermost ones: with
 * `outside` the number of the zone's ancestors outside the range and nest_depth the depth of its
 * nearest ancestor of the same site (nested = it has one), it adds when !nested or nest_depth <
 * outside. Over the whole capture, outside is 0: it adds when !nested. */
static inline int mprof__site_outermost(int nested, uint32_t nest_depth, uint32_t outside)
{
    return !nested || nest_depth < outside;
}

/* Adds one call of dur_ns (self_ns of it outside its direct children) that started at start_ns;
 * outermost: it adds its duration to total (see above). span: the main frames (may say none).
 * Returns 0, or -1 when the histogram could not be allocated (the call is still counted).
 * Inline: the report adds every zone of the capture through it. */
static inline int mprof__site_add(mprof_site_stat *s, const mprof_frame_span *span, int64_t start_ns,
                                  int64_t dur_ns, int64_t self_ns, int outermost)
{
    if (dur_ns < 0)
        dur_ns = 0; /* out-of-order or corrupt timestamps */
    s->count++;
    s->self_ns += self_ns > 0 ? self_ns : 0;
    int rc = 0;
    if (s->hist.counts)
        mprof_hist_put(&s->hist, (uint64_t)dur_ns);
    else
        rc = mprof_hist_add(&s->hist, (uint64_t)dur_ns);
    if (!outermost)
        return rc;
    s->total_ns += dur_ns;
    if (span && span->first_ns >= 0) {
        int64_t a = start_ns > span->first_ns ? start_ns : span->first_ns;
        int64_t e = start_ns + dur_ns < span->last_ns ? start_ns + dur_ns : span->last_ns;
        if (e > a)
            s->in_frames_ns += e - a;
    }
    return rc;
}
/* Adds every call of src to dst (the sum of two disjoint sets of calls). 0, or -1 when out of
 * memory. */
int mprof__site_merge(mprof_site_stat *dst, const mprof_site_stat *src);
void mprof__site_free(mprof_site_stat *s);

/* Figures of a site. */
double mprof__site_mean_ns(const mprof_site_stat *s);
uint64_t mprof__site_min_ns(const mprof_site_stat *s);
uint64_t mprof__site_max_ns(const mprof_site_stat *s);
double mprof__site_stddev_ns(const mprof_site_stat *s);
/* The q-quantile (0..1) of the calls' durations, within 3 % (hist.h). */
uint64_t mprof__site_quantile_ns(const mprof_site_stat *s, double q);
/* in_frames over the span (0..1 per track); 0 without a span. */
double mprof__site_frame_share(const mprof_site_stat *s, const mprof_frame_span *span);
/* in_frames per frame, in ns; frames counts the main frames of the span (incomplete ones too:
 * their time is in the span). 0 without frames. */
double mprof__site_per_frame_ns(const mprof_site_stat *s, uint64_t frames);

/* Whether a zone [s, e] is inside the range [t0, t1): it starts and ends in it. */
static inline int mprof__site_inside(int64_t t0, int64_t t1, int64_t s, int64_t e)
{
    return s >= t0 && s < t1 && e <= t1;
}

/*
 * The figures of every site over a stream of the walker's zones (timeline.h), in the order the
 * walker reports them (a zone when it ends, children before their parent): the whole capture,
 * or the zones inside a range. In a range the recursion rule needs to know whether an ancestor
 * is inside the range, which is known only when the ancestor ends: the duration of a nested zone
 * waits with the ancestor it would fold into, and goes to the total when that ancestor turns out
 * to be outside the range. Zero-initialised but for what mprof__site_table_init sets.
 */
typedef struct mprof_site_pend {
    int64_t total_ns, in_frames_ns;
} mprof_site_pend;

typedef struct mprof_site_table {
    mprof_site_stat *site; /* indexed by srcloc id; count 0 = no call */
    uint32_t n_sites;
    mprof_frame_span span;
    int ranged;
    int64_t t0, t1;
    mprof_site_pend **pend; /* per walker track, per depth */
    uint32_t *pend_depths;
    uint32_t n_tracks;
    uint64_t zones; /* calls counted */
} mprof_site_table;

/* span: the main frames; range NULL: the whole capture, else [range[0], range[1]). */
void mprof__site_table_init(mprof_site_table *t, mprof_frame_span span, const int64_t *range);
/* Adds z, a zone of a track of kind track_kind, if it counts (mprof__site_counts). Returns 0, or
 * -1 when out of memory. */
int mprof__site_table_zone(mprof_site_table *t, int track_kind, const mprof_tl_zone *z);
/* The site of srcloc id loc, NULL when it has no call. */
const mprof_site_stat *mprof__site_table_get(const mprof_site_table *t, uint32_t loc);
void mprof__site_table_free(mprof_site_table *t);

/* The figures of a set of frame times, in the unit of the values. */
typedef struct mprof_frame_summary {
    uint64_t count;
    double total, mean, stddev, min, p50, p90, p95, p99, max;
} mprof_frame_summary;

/* Of n values sorted ascending; percentiles by percentile.h's one rule. All 0 when n is 0. */
mprof_frame_summary mprof__frame_summary(const double *sorted, uint64_t n);

#endif
