/*
 * hist.c - log-linear histograms for streaming percentiles (see hist.h).
 */
#include "analysis/hist.h"

#include <math.h>
#include <stdlib.h>

static unsigned bucket_of(uint64_t v)
{
    return mprof_hist_bucket(v);
}

/* The middle of bucket b's value range. */
static uint64_t bucket_value(unsigned b)
{
    if (b < 64)
        return b;
    unsigned e = (b - 64) / MPROF_HIST_SUB + 6;
    unsigned sub = (b - 64) % MPROF_HIST_SUB;
    uint64_t lo = (1ull << e) + ((uint64_t)sub << (e - 5));
    return lo + (1ull << (e - 5)) / 2;
}

uint64_t mprof_hist_bucket_low(unsigned b)
{
    if (b < 64)
        return b;
    unsigned e = (b - 64) / MPROF_HIST_SUB + 6;
    unsigned sub = (b - 64) % MPROF_HIST_SUB;
    if (e > 63)
        return UINT64_MAX;
    return (1ull << e) + ((uint64_t)sub << (e - 5));
}

int mprof_hist_add(mprof_hist *h, uint64_t v)
{
    if (h->n == 0 || v < h->min)
        h->min = v;
    if (h->n == 0 || v > h->max)
        h->max = v;
    h->n++;
    h->sum += (double)v;
    h->sumsq += (double)v * (double)v;
    if (!h->counts) {
        h->counts = calloc(MPROF_HIST_BUCKETS, sizeof *h->counts);
        if (!h->counts)
            return -1;
    }
    h->counts[bucket_of(v)]++;
    return 0;
}

uint64_t mprof_hist_quantile(const mprof_hist *h, double q)
{
    if (!h->n || !h->counts)
        return 0;
    if (q <= 0)
        return h->min;
    if (q >= 1)
        return h->max;
    uint64_t rank = (uint64_t)ceil(q * (double)h->n);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned b = 0; b < MPROF_HIST_BUCKETS; b++) {
        seen += h->counts[b];
        if (seen >= rank) {
            uint64_t v = bucket_value(b);
            if (v < h->min)
                v = h->min;
            if (v > h->max)
                v = h->max;
            return v;
        }
    }
    return h->max;
}

double mprof_hist_mean(const mprof_hist *h)
{
    return h->n ? h->sum / (double)h->n : 0.0;
}

double mprof_hist_stddev(const mprof_hist *h)
{
    if (h->n < 2)
        return 0.0;
    double m = h->sum / (double)h->n;
    double var = h->sumsq / (double)h->n - m * m;
    return var > 0 ? sqrt(var) : 0.0;
}

void mprof_hist_free(mprof_hist *h)
{
    free(h->counts);
    h->counts = NULL;
}

double mprof_quantile_sorted(const double *v, uint64_t n, double q)
{
    if (!n)
        return 0.0;
    if (q <= 0)
        return v[0];
    if (q >= 1)
        return v[n - 1];
    double pos = q * (double)(n - 1);
    uint64_t i = (uint64_t)pos;
    double f = pos - (double)i;
    return i + 1 < n ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}
