/*
 * span_read.h - the main frames' span in one read: how the core pass adds to each site the part
 * of a zone inside the span (the first to the last main frame mark) before the span is known.
 *
 * Threads are not in time order in a file, so in one read the span is known only at the end;
 * the marks read so far give [mark_lo, mark_hi], which only grows. A zone inside it is inside
 * the span: it is settled at once (nearly every zone, since the main thread's zones follow its
 * marks). Any other zone waits in a list with what it already added (its part inside
 * [c_lo, c_hi], the span when the list was last settled), and adds the rest when the list is
 * settled again: when full, and at the end, when the span is known. The list has a fixed size:
 * when it stays full, its zones are dropped, and the parts of them outside [c_lo, c_hi] are
 * remembered as two bounds (forgot_left, forgot_right). Those parts are outside the span unless
 * it grows past a bound (start-up and shutdown zones stay outside); if it does, redo is set and
 * the analysis reads the capture again with the span known first, so the figures never depend
 * on the list's size.
 */
#ifndef MPROF_ANALYSIS_SPAN_READ_H
#define MPROF_ANALYSIS_SPAN_READ_H

#include "analysis/site_stats.h"

#include <stdint.h>

typedef struct mprof_span_pend {
    uint32_t loc;
    int64_t s, e;
} mprof_span_pend;

typedef struct mprof_span_read {
    uint64_t marks;           /* main frame marks read so far */
    int64_t mark_lo, mark_hi; /* the earliest and latest of them */
    mprof_span_pend *pend;    /* zones whose part inside the span is not settled yet */
    uint32_t n_pend, cap_pend;
    uint32_t n_credited;      /* pend[0, n_credited) hold their part inside [c_lo, c_hi] */
    int64_t c_lo, c_hi;
    int forgot;               /* zones left the pending list unsettled (it was full) */
    int64_t forgot_left, forgot_right; /* they reach into the span if it grows past these */
    int redo;                 /* they do: the analysis reads again, the span first */
} mprof_span_read;

void mprof__span_init(mprof_span_read *s);
void mprof__span_free(mprof_span_read *s);
/* A main frame mark at ts. */
void mprof__span_mark(mprof_span_read *s, int64_t ts);
/* The end of the read: every waiting zone settled against the span, which goes to *first and
 * *last when there are two marks or more (they are left as they are otherwise). */
void mprof__span_end(mprof_span_read *s, mprof_site_stat *zones, int64_t *first, int64_t *last);
/* The list is full (span_read.c). */
void mprof__span_full(mprof_span_read *s, mprof_site_stat *zones, uint32_t loc, int64_t start,
                      int64_t end);

/* Zone [start, end) of site loc (zones[loc]), outermost: its part inside the span. */
static inline __attribute__((always_inline)) void mprof__span_zone(mprof_span_read *s,
                                                                   mprof_site_stat *zones,
                                                                   uint32_t loc, int64_t start,
                                                                   int64_t end)
{
    if (s->marks && start >= s->mark_lo && end <= s->mark_hi) {
        zones[loc].in_frames_ns += end - start;
        return;
    }
    if (s->n_pend == s->cap_pend) {
        mprof__span_full(s, zones, loc, start, end);
        return;
    }
    s->pend[s->n_pend++] = (mprof_span_pend){loc, start, end};
}

#endif
