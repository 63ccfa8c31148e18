/*
 * hist.h - a log-linear histogram of non-negative integers (durations in ns).
 *
 * Values below 64 have their own bucket; above, each power of two is split into 32 buckets, so
 * a percentile read from the histogram is within about 3 % of the true value while the memory
 * per histogram is fixed (about 15 KiB) however many values it holds.
 */
#ifndef MPROF_HIST_H
#define MPROF_HIST_H

#include <stdint.h>

#define MPROF_HIST_SUB 32
#define MPROF_HIST_BUCKETS (64 + 58 * MPROF_HIST_SUB)

typedef struct mprof_hist {
    uint32_t *counts; /* allocated on first add */
    uint64_t n;
    uint64_t min, max;
    double sum, sumsq;
} mprof_hist;

/* Adds v. Returns 0, or -1 when out of memory (the value is still counted in n/min/max/sum). */
int mprof_hist_add(mprof_hist *h, uint64_t v);

/* The bucket of v (hist.c's layout). */
static inline unsigned mprof_hist_bucket(uint64_t v)
{
    if (v < 64)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* v in [2^e, 2^(e+1)), e >= 6 */
    unsigned sub = (unsigned)((v >> (e - 5)) & (MPROF_HIST_SUB - 1));
    return 64 + (e - 6) * MPROF_HIST_SUB + sub;
}

/* mprof_hist_add for loops that add millions of values: the same result, inlined once the
 * histogram holds a value. */
static inline void mprof_hist_put(mprof_hist *h, uint64_t v)
{
    if (!h->counts) {
        mprof_hist_add(h, v);
        return;
    }
    h->min = v < h->min ? v : h->min;
    h->max = v > h->max ? v : h->max;
    h->n++;
    h->sum += (double)v;
    h->sumsq += (double)v * (double)v;
    h->counts[mprof_hist_bucket(v)]++;
}
/* The q-quantile (0..1), e.g. 0.95. 0 for an empty histogram. */
uint64_t mprof_hist_quantile(const mprof_hist *h, double q);
double mprof_hist_mean(const mprof_hist *h);
double mprof_hist_stddev(const mprof_hist *h);
void mprof_hist_free(mprof_hist *h);
/* The smallest value of bucket b (b == MPROF_HIST_BUCKETS: one past the largest value kept), so
 * that bucket b holds [mprof_hist_bucket_low(b), mprof_hist_bucket_low(b + 1)). */
uint64_t mprof_hist_bucket_low(unsigned b);

/* Exact quantile of a sorted array (linear interpolation between closest ranks). */
double mprof_quantile_sorted(const double *v, uint64_t n, double q);

#endif
