/*
 * stats.h - the statistics behind `mprof gate`: the Mann-Whitney U rank test and a
 * seeded bootstrap confidence interval of a percentile ratio.
 *
 * Frame times are not normally distributed (a floor, a long right tail, occasional hitches), so
 * every test here is distribution-free: ranks instead of means, resampling instead of a variance
 * formula. Everything is deterministic: the bootstrap takes an explicit seed, so the same inputs
 * always give the same verdict. docs/GATE.md explains how the gate combines these.
 *
 * All functions are pure (no global state) and may be called from any thread.
 */
#ifndef MPROF_GATE_STATS_H
#define MPROF_GATE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/percentile.h"

/*
 * A side of a comparison: values grouped into runs. run_start has n_runs + 1 entries; run k holds
 * values[run_start[k] .. run_start[k + 1]). A single run is {values, {0, n}, 1}.
 */
typedef struct mprof_sample_runs {
    const double *values;
    const size_t *run_start;
    size_t n_runs;
    size_t blocks_per_run; /* 0 or 1: values are independent; k >= 2: consecutive values are
                              correlated (frames share a burst of machine noise), so each run is
                              cut into k contiguous blocks that the tests treat as units */
} mprof_sample_runs;

/* Result of mprof__mann_whitney. */
typedef struct mprof_mwu {
    double u;           /* U statistic of b: pairs (a_i, b_j) with b_j > a_i, ties counting 1/2 */
    double z;           /* normal-approximation z score of u (0 when the exact test was used) */
    double p_greater;   /* one-sided p-value for "b tends to be larger than a" */
    double p_less;      /* one-sided p-value for "b tends to be smaller than a" */
    double effect;      /* u / (na * nb): probability that a random b exceeds a random a */
    int exact;          /* 1 when the p-values are exact (small samples without ties) */
    double design_effect; /* variance inflation applied for serial correlation (1 = none) */
} mprof_mwu;

/*
 * Mann-Whitney U test of sample b against sample a. For small samples (na, nb <= 20) without ties
 * the p-values are exact (the permutation distribution of U); otherwise they come from the normal
 * approximation with the tie-corrected variance
 *     var U = na nb / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))),   n = na + nb,
 * where t runs over the sizes of the groups of tied values, and a continuity correction of 1/2.
 * Returns 0, or -1 when a sample is empty or memory runs out (*out then zeroed).
 */
int mprof__mann_whitney(const double *a, size_t na, const double *b, size_t nb, mprof_mwu *out);

/*
 * The same test for serially correlated samples (frames of a run, in time order). Frames that
 * share a burst of machine noise are not independent, and the plain test then reports far too
 * small p-values. With blocks_per_run >= 2 on a side, the variance of U is multiplied by a design
 * effect estimated by batch means: each run is cut into that many contiguous blocks, and
 *     DE = m * var(block mean rank) / var(rank)        (m = values per block)
 * per side; the larger of 1 and the mean of the two sides' DE is used. The exact small-sample
 * path is not taken for correlated data. Returns 0, or -1 on empty input or out of memory.
 */
int mprof__mann_whitney_runs(const mprof_sample_runs *a, const mprof_sample_runs *b,
                             mprof_mwu *out);

/*
 * The smallest one-sided p-value a rank test can reach with samples of na and nb values:
 * 1 / C(na + nb, na) (every b above every a, no ties). With 3 runs per side it is 0.05, so
 * a run-level test at alpha 0.05 needs at least 4 runs per side.
 */
double mprof__mwu_min_p(size_t na, size_t nb);

/* Confidence interval of a ratio. */
typedef struct mprof_ratio_ci {
    double point; /* the ratio of the two samples' percentiles */
    double lo;    /* lower bound of the interval */
    double hi;    /* upper bound */
} mprof_ratio_ci;

/*
 * Percentile bootstrap of the ratio pct(cur) / pct(base), where pct is the p-th percentile.
 * Each of n_resamples rounds draws a resample of each side and records the ratio; the interval
 * is the (1 - level) / 2 and (1 + level) / 2 quantiles of the recorded ratios (level 0.95 gives a
 * 95 % interval). When a side has two or more runs the resampling is hierarchical: draw runs with
 * replacement, then values with replacement within each drawn run, so that run-to-run variation
 * (a slower machine state, a noisy neighbour) widens the interval as it should; a single run is
 * resampled by values. The random generator is xoshiro256** seeded with seed through splitmix64,
 * so the result depends only on the inputs. When a side sets blocks_per_run >= 2, whole blocks
 * of consecutive values are drawn instead of single values (a block bootstrap), so that bursts of
 * noise that slow many consecutive frames widen the interval instead of passing for evidence. Returns 0, or -1 on empty input, a zero baseline
 * percentile or out of memory.
 */
int mprof__bootstrap_ratio_ci(const mprof_sample_runs *base, const mprof_sample_runs *cur, double p,
                              int n_resamples, double level, uint64_t seed, mprof_ratio_ci *out);

/*
 * The run-level interval: a two-sample Student t interval, at level (0.95 for 95 %), of the
 * ratio of the geometric means of cur and base (one value per run, e.g. each run's p95),
 * computed on the logarithms with the pooled variance and nb + nc - 2 degrees of freedom
 * (*out_df). Its width comes from how much
 * the runs differ from each other, with the t distribution's allowance for estimating that from
 * few runs: with three runs per side and a 10 % spread between runs it spans about +-25 %, where
 * a bootstrap that resamples three runs is far narrower than the runs warrant. Needs two or more
 * positive values per side; returns 0, or -1 (then *out is zeroed).
 */
int mprof__runs_log_ratio_ci(const double *base, size_t nb, const double *cur, size_t nc,
                              double level, mprof_ratio_ci *out, double *out_df);

/*
 * The run-level test of a difference: the two-sample Student t statistic of mean(cur) -
 * mean(base) (one value per run, e.g. a zone's mean self time per frame in each run; values may
 * be zero), with the pooled variance and nb + nc - 2 degrees of freedom. Returns 1 when cur's
 * mean is greater with one-sided P < alpha (t > mprof__t_isf(alpha, df)), else 0; 0 with fewer
 * than two runs a side. Where both sides have no spread at all, any growth counts. *out_t gets
 * the statistic (0 when not computed).
 */
int mprof__runs_diff_greater(const double *base, size_t nb, const double *cur, size_t nc,
                             double alpha, double *out_t);

/*
 * How far apart two sides' runs are on a log scale, for planning how many runs a side a test
 * needs: *out_diff = mean log(cur) - mean log(base), *out_sd = the pooled standard deviation of
 * the logs (nb + nc - 2 degrees of freedom), the run-to-run spread as a fraction (0.05: runs
 * differ by about 5 %). Needs two or more positive values a side; returns 0, or -1 (both 0).
 */
int mprof__runs_log_spread(const double *base, size_t nb, const double *cur, size_t nc,
                           double *out_diff, double *out_sd);

/*
 * The smallest number of runs k a side (2..max_runs) with which a one-sided two-sample t test at
 * alpha would find a log difference diff with run-to-run spread sd: diff > t(alpha, 2k - 2)
 * sd sqrt(2 / k). 0 when diff is not positive (no number of runs shows growth), -1 when more
 * than max_runs would be needed.
 */
long mprof__runs_needed(double diff, double sd, double alpha, long max_runs);

/* Student's t upper quantile: t with P(T > t) = p for df degrees of freedom: exact for df in
 * [1, 2) (taken as 1) and [2, 3) (taken as 2), so never narrower than the truth there; from df 3
 * a Cornish-Fisher expansion, within 0.2 % of the exact value; +inf for df <= 0. */
double mprof__t_isf(double p, double df);

/* Standard normal upper tail: P(Z > z). */
double mprof__normal_sf(double z);
/* Inverse of the upper tail: z with P(Z > z) = p, for p in (0, 1). */
double mprof__normal_isf(double p);

#endif
