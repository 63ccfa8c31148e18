/*
 * percentile.c - the one definition of a percentile over a set of values (frame times, per-run
 * figures): linear interpolation between the closest ranks, Hyndman-Fan definition 7.
 */
#include "analysis/percentile.h"
#include "analysis/hist.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

void mprof__sort_doubles(double *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_double);
}

double mprof__percentile_sorted(const double *sorted, size_t n, double p)
{
    /* One interpolation rule for the whole analysis: hist.c's, which takes a fraction. */
    return mprof_quantile_sorted(sorted, (uint64_t)n, p / 100.0);
}

static void swap_d(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* Places the k-th smallest value at v[k], smaller-or-equal values before it and greater-or-equal
 * after it. Three-way partitioning keeps it linear when many values are equal (quantised timers). */
static void select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n; /* the k-th lies in [lo, hi) */
    while (hi - lo > 1) {
        /* Median of three as the pivot. */
        size_t mid = lo + (hi - lo) / 2;
        double a = v[lo], b = v[mid], c = v[hi - 1];
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            if (v[i] < pivot)
                swap_d(&v[lt++], &v[i++]);
            else if (v[i] > pivot)
                swap_d(&v[i], &v[--gt]);
            else
                i++;
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return;
    }
}

double mprof__percentile_select(const double *v, size_t n, double p, double *scratch)
{
    if (n == 0)
        return 0.0;
    memcpy(scratch, v, n * sizeof *v);
    if (p < 0.0)
        p = 0.0;
    if (p > 100.0)
        p = 100.0;
    double h = (double)(n - 1) * p / 100.0;
    size_t k = (size_t)h;
    double frac = h - (double)k;
    select_kth(scratch, n, k);
    double x = scratch[k];
    if (frac <= 0.0 || k + 1 >= n)
        return x;
    /* The (k+1)-th smallest is the minimum of what lies after k. */
    double y = scratch[k + 1];
    for (size_t i = k + 2; i < n; i++)
        if (scratch[i] < y)
            y = scratch[i];
    return x + frac * (y - x);
}
