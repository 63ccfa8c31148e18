/*
 * percentile.h - percentiles of a set of values, defined once for every output that shows one
 * (the frame export, the gate, the run store).
 *
 * Pure functions, any thread.
 */
#ifndef MPROF_ANALYSIS_PERCENTILE_H
#define MPROF_ANALYSIS_PERCENTILE_H

#include <stddef.h>

/* Sorts v ascending in place (NaN must not occur; callers validate input). */
void mprof__sort_doubles(double *v, size_t n);

/*
 * The p-th percentile (p in [0, 100]) of n ascending values, by linear interpolation between the
 * closest ranks: rank h = (n - 1) * p / 100, result v[floor h] + frac(h) * (v[floor h + 1] -
 * v[floor h]). This is Hyndman-Fan definition 7, the default of NumPy and R. Returns 0 for n == 0.
 */
double mprof__percentile_sorted(const double *sorted, size_t n, double p);

/*
 * The same percentile of unsorted values, computed by selection in O(n) expected time. scratch
 * must hold n doubles; v is left unchanged. Returns 0 for n == 0.
 */
double mprof__percentile_select(const double *v, size_t n, double p, double *scratch);

#endif
