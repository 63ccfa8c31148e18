/*
 * span_read.c - the main frames' span in one read (span_read.h): the list of zones that wait for
 * the span, settled when full and at the end.
 */
#include "analysis/span_read.h"

#include <stdlib.h>

#define PEND_MAX (1u << 18) /* 6 MiB of waiting zones */

void mprof__span_init(mprof_span_read *s)
{
    *s = (mprof_span_read){.forgot_left = INT64_MIN, .forgot_right = INT64_MAX};
}

void mprof__span_free(mprof_span_read *s)
{
    free(s->pend);
    s->pend = NULL;
    s->n_pend = s->cap_pend = s->n_credited = 0;
}

static int64_t overlap_ns(int64_t s, int64_t e, int64_t lo, int64_t hi)
{
    int64_t a = s > lo ? s : lo, b = e < hi ? e : hi;
    return b > a ? b - a : 0;
}

/* Adds to each waiting zone its part inside [mark_lo, mark_hi] not added yet; zones wholly
 * inside leave the list. */
static void settle(mprof_span_read *s, mprof_site_stat *zones)
{
    if (!s->marks)
        return;
    int64_t lo = s->mark_lo, hi = s->mark_hi;
    uint32_t w = 0;
    for (uint32_t i = 0; i < s->n_pend; i++) {
        mprof_span_pend p = s->pend[i];
        int64_t had = i < s->n_credited ? overlap_ns(p.s, p.e, s->c_lo, s->c_hi) : 0;
        zones[p.loc].in_frames_ns += overlap_ns(p.s, p.e, lo, hi) - had;
        if (p.s < lo || p.e > hi)
            s->pend[w++] = p;
    }
    s->n_pend = s->n_credited = w;
    s->c_lo = lo;
    s->c_hi = hi;
}

/* Drops p, whose part inside [c_lo, c_hi] is added, remembering where it reaches outside. */
static void forget_one(mprof_span_read *s, mprof_span_pend p)
{
    s->forgot = 1;
    if (!s->marks) { /* no mark yet: start-up, outside the span unless it begins before p.e */
        s->forgot_left = p.e > s->forgot_left ? p.e : s->forgot_left;
        return;
    }
    if (p.s < s->c_lo) {
        int64_t le = p.e < s->c_lo ? p.e : s->c_lo;
        s->forgot_left = le > s->forgot_left ? le : s->forgot_left;
    }
    if (p.e > s->c_hi) {
        int64_t rs = p.s > s->c_hi ? p.s : s->c_hi;
        s->forgot_right = rs < s->forgot_right ? rs : s->forgot_right;
    }
}

/* The list is full: settled, and dropped when that leaves it over half full. */
__attribute__((noinline)) void mprof__span_full(mprof_span_read *s, mprof_site_stat *zones,
                                                uint32_t loc, int64_t start, int64_t end)
{
    if (!s->cap_pend && (s->pend = malloc((size_t)PEND_MAX * sizeof *s->pend)))
        s->cap_pend = PEND_MAX; /* its pages are touched only as zones wait */
    settle(s, zones);           /* now [c_lo, c_hi] is [mark_lo, mark_hi] */
    if (s->n_pend > s->cap_pend / 2) {
        for (uint32_t i = 0; i < s->n_pend; i++)
            forget_one(s, s->pend[i]);
        s->n_pend = s->n_credited = 0;
    }
    if (s->n_pend == s->cap_pend) { /* no list at all (out of memory) */
        if (s->marks)
            zones[loc].in_frames_ns += overlap_ns(start, end, s->c_lo, s->c_hi);
        forget_one(s, (mprof_span_pend){loc, start, end});
        return;
    }
    s->pend[s->n_pend++] = (mprof_span_pend){loc, start, end};
}

void mprof__span_mark(mprof_span_read *s, int64_t ts)
{
    if (!s->marks || ts < s->mark_lo)
        s->mark_lo = ts;
    if (!s->marks || ts > s->mark_hi)
        s->mark_hi = ts;
    s->marks++;
    if (s->forgot && (s->mark_lo < s->forgot_left || s->mark_hi > s->forgot_right))
        s->redo = 1;
}

void mprof__span_end(mprof_span_read *s, mprof_site_stat *zones, int64_t *first, int64_t *last)
{
    settle(s, zones);
    s->n_pend = s->n_credited = 0;
    if (s->marks >= 2 && s->mark_hi > s->mark_lo) {
        *first = s->mark_lo;
        *last = s->mark_hi;
        if (s->forgot && (s->mark_lo < s->forgot_left || s->mark_hi > s->forgot_right))
            s->redo = 1;
    }
}
