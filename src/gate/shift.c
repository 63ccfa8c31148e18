/*
 * shift.c - two questions that the p95 alone cannot answer on a busy machine.
 *
 * Did every frame get slower by more than the threshold? A slowdown of the whole frame moves
 * every percentile, but the p95 of a run rests on its slowest twentieth of frames, where the
 * machine's noise is largest, so it can stay within the threshold, or move too erratically to
 * be significant, while the bulk of the frames plainly moved. The gate asks the bulk directly,
 * with the two questions the p95 rule asks of the p95 (is it past the threshold, and is the
 * change real), at two levels that must agree: the frames (the pooled median decision frame
 * time past the threshold, and the correlation-corrected rank test of the frames) and the runs
 * (the ratio of the runs' medians past the threshold, and a one-sided t interval of it above 1,
 * which a run recorded while the machine was busier cannot bring about on its own). A rank test
 * of the current frames against the baseline's times 1 + threshold is reported beside them: how
 * sure the frames alone are that the shift exceeds the threshold itself, which neither rule
 * requires (frames whose cost follows the content, the same in both builds, make its
 * correlation correction large, so it misses slowdowns the runs plainly show).
 *
 * How many runs would settle an inconclusive verdict? Frames come in runs, and what the tests
 * lack is almost always runs: the run-level tests shrink with the square root of the runs a
 * side, and the frame-level tests with the square root of the frames, which grow with the runs.
 * So the advice is the `--runs` that the measured run-to-run spread says would make the tests
 * hold, for whichever of the two routes to a regression (the p95 rule, every frame slower)
 * needs fewer.
 */
#include "gate/internal.h"
#include "gate/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One statistic of every run of a side (p = 50: the median, 95: the p95; p < 0: the mean). */
static int per_run(const double *v, const size_t *st, size_t runs, double p, double *out,
                   double *scratch)
{
    for (size_t i = 0; i < runs; i++) {
        size_t n = st[i + 1] - st[i];
        if (p < 0) {
            double sum = 0;
            for (size_t k = 0; k < n; k++)
                sum += v[st[i] + k];
            out[i] = n ? sum / (double)n : 0.0;
        } else {
            out[i] = mprof__percentile_select(v + st[i], n, p, scratch);
        }
    }
    return 0;
}

/* The runs' figures of both sides for statistic p, as a log difference and spread. */
static int spread_of(const mprof_gate_sides *s, double p, double *scratch, double *out_diff,
                     double *out_sd)
{
    double *b = malloc(s->bruns * sizeof *b), *c = malloc(s->cruns * sizeof *c);
    int rc = -1;
    if (b && c) {
        per_run(s->bv, s->bs, s->bruns, p, b, scratch);
        per_run(s->cv, s->cs, s->cruns, p, c, scratch);
        rc = mprof__runs_log_spread(b, s->bruns, c, s->cruns, out_diff, out_sd) ? 1 : 0;
    }
    free(b);
    free(c);
    return rc;
}

int mprof__gate_shift(const mprof_gate_sides *s, mprof_gate_result *r)
{
    const mprof_gate_opts *o = &r->opts;
    size_t nb = s->bs[s->bruns], nc = s->cs[s->cruns];
    r->shift_p = 1.0;
    if (s->bruns < 2 || s->cruns < 2 || !nb || !nc)
        return 0;
    double k = 1.0 + o->threshold_pct / 100.0;
    size_t big = nb > nc ? nb : nc;
    double *scaled = malloc(nb * sizeof *scaled), *scratch = malloc(big * sizeof *scratch);
    int rc = -1;
    if (!scaled || !scratch)
        goto out;
    for (size_t i = 0; i < nb; i++)
        scaled[i] = s->bv[i] * k;
    size_t blocks = o->blocks >= 2 ? (size_t)o->blocks : 0;
    mprof_sample_runs sb = {scaled, s->bs, s->bruns, blocks}, sc = {s->cv, s->cs, s->cruns, blocks};
    mprof_mwu m;
    if (mprof__mann_whitney_runs(&sb, &sc, &m))
        goto out;
    r->shift_tested = 1;
    r->shift_p = m.p_greater;
    r->shift_effect = m.effect;
    r->shift_design_effect = m.design_effect;
    double diff, sd;
    int sr = spread_of(s, 50, scratch, &diff, &sd);
    if (sr < 0)
        goto out;
    if (sr == 0) {
        double df = (double)(s->bruns + s->cruns - 2);
        double se = sd * sqrt(1.0 / (double)s->bruns + 1.0 / (double)s->cruns);
        r->run_median_ratio = exp(diff);
        r->run_median_lo = exp(diff - mprof__t_isf(o->alpha, df) * se);
        r->run_median_sd = sd;
        /* The runs' own estimate must be past the threshold, and significantly above 1: the
         * same two things the p95 rule asks of the p95 (magnitude, and runs that agree it got
         * slower), here of the bulk of the frames. */
        r->shift_runs_ok = r->run_median_ratio > k && r->run_median_lo > 1.0;
    }
    double bmed = mprof__percentile_select(s->bv, nb, 50, scratch);
    double cmed = mprof__percentile_select(s->cv, nc, 50, scratch);
    r->frame_median_ratio = bmed > 0 ? cmed / bmed : 0.0;
    r->shift_frames_ok = r->frame_median_ratio > k && r->rank_p < o->alpha;
    r->shift = r->shift_frames_ok && r->shift_runs_ok;
    rc = 0;
out:
    free(scaled);
    free(scratch);
    return rc;
}

/* Runs a side for a frame-level test whose one-sided p is p now, with runs runs: its z grows
 * with the square root of the frames, which grow with the runs. 0 when the data show no effect
 * in that direction. */
static long runs_for_frames(double p, double alpha, size_t runs)
{
    double z = mprof__normal_isf(p), zn = mprof__normal_isf(alpha);
    if (p < alpha)
        return (long)runs;
    if (!(z > 0.05))
        return 0;
    return (long)ceil((double)runs * (zn / z) * (zn / z));
}

/* The larger of two requirements, where 0 (impossible) and -1 (too many) dominate. */
static long need_both(long a, long b)
{
    if (a == 0 || b == 0)
        return 0;
    if (a < 0 || b < 0)
        return -1;
    return a > b ? a : b;
}

/* The smaller of two alternatives. */
static long need_either(long a, long b)
{
    if (a <= 0)
        return b > 0 ? b : (a < 0 || b < 0 ? -1 : 0);
    if (b <= 0)
        return a;
    return a < b ? a : b;
}

int mprof__gate_advise(const mprof_gate_sides *s, mprof_gate_result *r)
{
    const mprof_gate_opts *o = &r->opts;
    size_t runs = s->bruns < s->cruns ? s->bruns : s->cruns;
    size_t nb = s->bs[s->bruns], nc = s->cs[s->cruns], big = nb > nc ? nb : nc;
    r->recommended_runs = 0;
    if (runs < 2) {
        /* Significance needs two runs a side whatever the frames say. */
        r->recommended_runs = 3;
        return 0;
    }
    double *scratch = malloc((big ? big : 1) * sizeof *scratch);
    if (!scratch)
        return -1;
    long max = MPROF_GATE_MAX_RUNS;
    double diff, sd;
    /* The p95 rule: the run-level interval of the p95s or of the means (each at alpha / 2),
     * and the frame-level rank test and bootstrap. */
    long run95 = 0;
    if (spread_of(s, 95, scratch, &diff, &sd) == 0) {
        run95 = mprof__runs_needed(diff, sd, o->alpha / 2.0, max);
        r->run_p95_sd = sd;
    }
    long runmean = spread_of(s, -1, scratch, &diff, &sd) == 0
                       ? mprof__runs_needed(diff, sd, o->alpha / 2.0, max) : 0;
    long p95_route = need_either(run95, runmean);
    p95_route = need_both(p95_route, runs_for_frames(r->rank_p, o->alpha, runs));
    if (r->ci_lo <= 1.0 && r->p95_ratio > 1.0 && r->ci_hi > r->ci_lo) {
        double half = r->p95_ratio - r->ci_lo, room = r->p95_ratio - 1.0;
        p95_route = need_both(p95_route, (long)ceil((double)runs * (half / room) * (half / room)));
    } else if (r->ci_lo <= 1.0) {
        p95_route = 0;
    }
    if (!r->magnitude)
        p95_route = 0;
    /* Every frame slower: both medians past 1 + threshold (more runs cannot move an estimate
     * that is not), the runs' interval above 1 and the frames' rank test. */
    long shift_route = 0;
    if (spread_of(s, 50, scratch, &diff, &sd) == 0 &&
        r->frame_median_ratio > 1.0 + o->threshold_pct / 100.0) {
        shift_route = diff > log(1.0 + o->threshold_pct / 100.0)
                          ? mprof__runs_needed(diff, sd, o->alpha, max) : 0;
        shift_route = need_both(shift_route, runs_for_frames(r->rank_p, o->alpha, runs));
    }
    long k = need_either(p95_route, shift_route);
    if (k > 0 && k <= (long)runs)
        k = (long)runs + 1; /* the estimate says enough, the tests did not: one more at least */
    if (k > max)
        k = -1;
    r->recommended_runs = k;
    free(scratch);
    return 0;
}
