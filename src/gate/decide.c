/*
 * decide.c - the gate's rule: pass, regression, inconclusive or refused, and the one sentence
 * that says why.
 *
 * A CI rule of "fail when the current p95 frame time is more than 10 % above the baseline's"
 * fails builds at random on a shared machine, where the p95 of a few hundred frames moves by that
 * much between two runs of unchanged code. Here that rule is the magnitude test only; a
 * regression also has to be significant (stats.h: a rank test on the frames, a bootstrap interval
 * of the p95 ratio that excludes 1.0, a run-level interval, and a rank test on per-run p95s when
 * each side has enough runs). When the magnitude rule holds but the evidence does not, the
 * verdict is "inconclusive" and says how much more data would settle it, instead of guessing.
 *
 * A slowdown of every frame by more than the threshold is a regression too, when the frames and
 * the runs agree on it, whatever the p95 did (shift.c): the p95 rests on the frames where a busy
 * machine's noise is largest. When neither rule is made out, an inconclusive verdict names the
 * `--runs` that the runs' spread says would settle it.
 *
 * mprof__gate_compare takes the steps in order, each of which may settle the verdict: the
 * figures of both sides, the machine guard, the frames each side has, the significance tests,
 * every frame slower, then the verdict.
 */
#include "gate/internal.h"
#include "gate/stats.h"
#include "util/tool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SEED 0x6d70726f66676174ull /* "mprofgat" */

/* One comparison in progress: the result, and the decision frame times pooled per side with
 * their run boundaries (bs/cs have bruns + 1 / cruns + 1 entries; nb, nc frames). */
typedef struct decision {
    const mprof_frames_runs *base, *cur;
    mprof_gate_result *r;
    double *bv, *cv;
    size_t *bs, *cs, bruns, cruns, nb, nc;
    /* What the significance tests found (test_significance). */
    int rank_ok, ci_ok, run_ok, runs_ok, run_ci_ok;
} decision;

static void fill_defaults(mprof_gate_opts *o)
{
    if (o->threshold_pct <= 0.0)
        o->threshold_pct = o->threshold_pct < 0.0 ? 0.0 : 10.0;
    if (!(o->alpha > 0.0 && o->alpha < 1.0))
        o->alpha = 0.05;
    if (o->skip_frames < 0)
        o->skip_frames = 0;
    if (o->min_frames <= 0)
        o->min_frames = 60;
    if (o->n_resamples <= 0)
        o->n_resamples = 2000;
    if (o->seed == 0)
        o->seed = DEFAULT_SEED;
    if (o->top_zones <= 0)
        o->top_zones = 5;
    if (o->blocks <= 0)
        o->blocks = 10;
}

/* ---- the figures of both sides -------------------------------------------------------------- */

static int copy_paths(const mprof_frames_runs *s, char ***out)
{
    *out = calloc(s->n_runs ? s->n_runs : 1, sizeof **out);
    if (!*out)
        return -1;
    for (size_t i = 0; i < s->n_runs; i++)
        if (!((*out)[i] = tool_strdup(s->runs[i].path)))
            return -1;
    return 0;
}

/* A side's git SHA when all its runs that record one agree, "mixed" when they differ, NULL when
 * none records one. */
static char *side_sha(const mprof_frames_runs *s)
{
    const char *sha = NULL;
    for (size_t i = 0; i < s->n_runs; i++) {
        const char *v = s->runs[i].git_sha;
        if (!v)
            continue;
        if (sha && strcmp(sha, v) != 0)
            return tool_strdup("mixed");
        sha = v;
    }
    return tool_strdup(sha);
}

/* Summaries raw and decided, the noise model, the runs' files, the attribution and the p95
 * ratios. Returns 0, or -1 out of memory. */
static int figures(decision *d)
{
    mprof_gate_result *r = d->r;
    if (mprof__frames_runs_summarize(d->base, &r->base) ||
        mprof__frames_runs_summarize(d->cur, &r->cur))
        return -1;
    mprof__gate_noise(d->base, d->cur, r);
    if (mprof__gate_pool(d->base, r->noise_model, &d->bv, &d->bs, &d->bruns) ||
        mprof__gate_pool(d->cur, r->noise_model, &d->cv, &d->cs, &d->cruns))
        return -1;
    d->nb = d->bs[d->bruns];
    d->nc = d->cs[d->cruns];
    if (mprof__frames_summarize(d->bv, d->nb, d->base->n_runs, &r->base_dec) ||
        mprof__frames_summarize(d->cv, d->nc, d->cur->n_runs, &r->cur_dec))
        return -1;
    if (copy_paths(d->base, &r->base_paths) || copy_paths(d->cur, &r->cur_paths))
        return -1;
    r->base_git_sha = side_sha(d->base);
    r->cur_git_sha = side_sha(d->cur);
    /* The captures themselves, for the viewer's comparison (view_link.c). */
    if (d->base->n_runs && d->base->runs[0].file)
        r->base_capture = tool_strdup(d->base->runs[0].file);
    if (d->cur->n_runs && d->cur->runs[0].file)
        r->cur_capture = tool_strdup(d->cur->runs[0].file);
    if (mprof__gate_attribute(d->base, d->cur, r))
        return -1;
    if (r->base.p95_ms > 0)
        r->raw_p95_ratio = r->cur.p95_ms / r->base.p95_ms;
    if (r->base_dec.p95_ms > 0)
        r->p95_ratio = r->cur_dec.p95_ms / r->base_dec.p95_ms;
    return 0;
}

/* ---- the machine guard ---------------------------------------------------------------------- */

/* Compares one identity field across every run of both sides. Returns 1 when two known values
 * differ (first pair described in msg). Runs without the field add a warning. */
static int identity_differs(const decision *d, size_t off, const char *label, char *msg,
                            size_t msglen)
{
    const mprof_frames_runs *sides[2] = {d->base, d->cur};
    const char *first = NULL, *first_path = NULL;
    int unknown = 0;
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < sides[s]->n_runs; i++) {
            const mprof_frames_run *run = &sides[s]->runs[i];
            const char *v = *(char *const *)((const char *)run + off);
            if (!v || !*v) {
                unknown++;
                continue;
            }
            if (!first) {
                first = v;
                first_path = run->path;
            } else if (strcmp(first, v) != 0) {
                snprintf(msg, msglen, "%s differs: %s has \"%s\", %s has \"%s\"", label,
                         first_path, first, run->path, v);
                return 1;
            }
        }
    }
    if (unknown)
        mprof__gate_warn(d->r, "%d run(s) do not record the %s; the machine guard cannot check it",
                         unknown, label);
    return 0;
}

/* Timings from different machines or builds are not comparable. Returns 1 when the comparison
 * is refused (the verdict is then set). */
static int machine_guard(decision *d)
{
    static const struct {
        size_t off;
        const char *label;
    } ids[] = {{offsetof(mprof_frames_run, hostname), "hostname"},
               {offsetof(mprof_frames_run, cpu), "CPU model"},
               {offsetof(mprof_frames_run, build_type), "build type"}};
    mprof_gate_result *r = d->r;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        char msg[384];
        if (!identity_differs(d, ids[i].off, ids[i].label, msg, sizeof msg))
            continue;
        if (!r->opts.allow_different_machines) {
            r->verdict = MPROF_GATE_BAD_INPUT;
            snprintf(r->reason, sizeof r->reason,
                     "refusing to compare: %s (timings from different machines or builds are not "
                     "comparable; pass --allow-different-machines to compare anyway)", msg);
            return 1;
        }
        mprof__gate_warn(r, "%s; compared anyway (--allow-different-machines)", msg);
    }
    return 0;
}

/* With --process, every export of both sides must be of that process: a merged capture's
 * exports name the process they were made for, and frames of another process compare nothing.
 * Returns 1 when the comparison is refused (the verdict is then set). */
static int process_guard(decision *d)
{
    mprof_gate_result *r = d->r;
    const char *want = r->opts.process;
    if (!want)
        return 0;
    const mprof_frames_runs *sides[2] = {d->base, d->cur};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->n_runs; i++) {
            const mprof_frames_run *run = &sides[s]->runs[i];
            if (run->process && strcmp(run->process, want) == 0)
                continue;
            r->verdict = MPROF_GATE_BAD_INPUT;
            if (run->process)
                snprintf(r->reason, sizeof r->reason,
                         "refusing to compare: %s is an export of process \"%.100s\", not of "
                         "\"%.100s\" (--process)", run->path ? run->path : "?", run->process,
                         want);
            else
                snprintf(r->reason, sizeof r->reason,
                         "refusing to compare: %s does not name its process, and --process "
                         "\"%.100s\" asks for it", run->path ? run->path : "?", want);
            return 1;
        }
    return 0;
}

/* ---- the frames each side has --------------------------------------------------------------- */

/* A side without a single frame is not a small sample but a broken run (no frame marks, or every
 * frame skipped): waiting for more frames would never settle it. Returns 1 when that is so (the
 * verdict is then set). */
static int frames_missing(decision *d)
{
    mprof_gate_result *r = d->r;
    const mprof_frames_runs *sides[2] = {d->base, d->cur};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->n_runs; i++)
            if (sides[s]->runs[i].n_frames == 0)
                mprof__gate_warn(r, "%s has no frames after skipping %d; left out",
                                 sides[s]->runs[i].path, r->opts.skip_frames);
    if (d->nb && d->nc)
        return 0;
    const mprof_frames_runs *empty = d->nb == 0 ? d->base : d->cur;
    const char *side = d->nb == 0 ? "BASELINE" : "CURRENT";
    size_t skipped = 0;
    for (size_t i = 0; i < empty->n_runs; i++)
        skipped += empty->runs[i].n_skipped;
    r->verdict = MPROF_GATE_BAD_INPUT;
    if (skipped > 0)
        snprintf(r->reason, sizeof r->reason, "no frames in %s: all %zu were skipped "
                 "(--skip-frames %d)", side, skipped, r->opts.skip_frames);
    else
        snprintf(r->reason, sizeof r->reason, "no frames in %s: the run recorded no frame marks",
                 side);
    return 1;
}

/* Fewer frames than --min-frames on a side: inconclusive, with how many more to record. Returns
 * 1 when that is so. */
static int too_few_frames(decision *d)
{
    mprof_gate_result *r = d->r;
    size_t minf = (size_t)r->opts.min_frames;
    if (d->nb >= minf && d->nc >= minf)
        return 0;
    size_t have = d->nb < d->nc ? d->nb : d->nc;
    r->verdict = MPROF_GATE_INCONCLUSIVE;
    r->need_frames = (long)(minf - have);
    snprintf(r->reason, sizeof r->reason,
             "too few frames to decide: baseline has %zu, current %zu, at least %zu per side are "
             "required (--min-frames); record %ld more", d->nb, d->nc, minf, r->need_frames);
    return 1;
}

/* ---- significance --------------------------------------------------------------------------- */

static double mean_of(const double *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return n ? sum / (double)n : 0.0;
}

/* The run-level intervals (two or more runs per side): of the ratio of the runs' p95s and of
 * their means, and the rank test on the per-run p95s when enough runs make it able to reach
 * alpha. Returns 0, or -1 out of memory. */
static int run_level(decision *d)
{
    mprof_gate_result *r = d->r;
    const mprof_gate_opts *o = &r->opts;
    size_t big = d->nb > d->nc ? d->nb : d->nc;
    double *bp95 = malloc(d->bruns * sizeof *bp95), *cp95 = malloc(d->cruns * sizeof *cp95);
    double *bmean = malloc(d->bruns * sizeof *bmean), *cmean = malloc(d->cruns * sizeof *cmean);
    double *scratch = malloc(big * sizeof *scratch);
    int rc = -1;
    if (!bp95 || !cp95 || !bmean || !cmean || !scratch)
        goto out;
    for (size_t i = 0; i < d->bruns; i++) {
        size_t n = d->bs[i + 1] - d->bs[i];
        bp95[i] = mprof__percentile_select(d->bv + d->bs[i], n, 95, scratch);
        bmean[i] = mean_of(d->bv + d->bs[i], n);
    }
    for (size_t i = 0; i < d->cruns; i++) {
        size_t n = d->cs[i + 1] - d->cs[i];
        cp95[i] = mprof__percentile_select(d->cv + d->cs[i], n, 95, scratch);
        cmean[i] = mean_of(d->cv + d->cs[i], n);
    }
    /* How far apart the runs' p95s are, with the t distribution's allowance for judging that
     * from a few runs. */
    mprof_ratio_ci rci;
    if (mprof__runs_log_ratio_ci(bp95, d->bruns, cp95, d->cruns, 1.0 - o->alpha, &rci,
                                  &r->run_ci_df) == 0) {
        r->run_ci = 1;
        r->run_ci_lo = rci.lo;
        r->run_ci_hi = rci.hi;
        /* The same interval over the runs' means: a run's p95 rests on its slowest twentieth of
         * frames, so under a busy neighbour it moves by far more from run to run than the run's
         * mean does. A slowdown that moves the whole distribution is seen by the means when the
         * p95s are too scattered; one that moves only the tail still needs the p95s. */
        double df;
        if (mprof__runs_log_ratio_ci(bmean, d->bruns, cmean, d->cruns, 1.0 - o->alpha, &rci,
                                      &df) == 0) {
            r->run_mean_ci_lo = rci.lo;
            r->run_mean_ci_hi = rci.hi;
        } else {
            r->run_mean_ci_lo = 0.0;
            r->run_mean_ci_hi = INFINITY;
        }
    }
    if (mprof__mwu_min_p(d->bruns, d->cruns) >= o->alpha) {
        size_t k = 2;
        while (mprof__mwu_min_p(k, k) >= o->alpha)
            k++;
        mprof__gate_warn(r, "the per-run p95 rank test cannot reach p < %g with %zu and %zu runs "
                         "(it needs %zu per side); run-to-run variation enters through the "
                         "bootstrap and the run-level interval only",
                         o->alpha, d->bruns, d->cruns, k);
    } else {
        mprof_mwu rm;
        if (mprof__mann_whitney(bp95, d->bruns, cp95, d->cruns, &rm))
            goto out;
        r->run_test = 1;
        r->run_p = rm.p_greater;
    }
    rc = 0;
out:
    free(bp95);
    free(cp95);
    free(bmean);
    free(cmean);
    free(scratch);
    return rc;
}

/* The rank test on the frames, the bootstrap of the p95 ratio and the run-level tests, and what
 * each says. Returns 0, 1 when the verdict is settled (a zero baseline p95), or -1 out of
 * memory. */
static int test_significance(decision *d)
{
    mprof_gate_result *r = d->r;
    const mprof_gate_opts *o = &r->opts;
    size_t blocks = o->blocks >= 2 ? (size_t)o->blocks : 0;
    mprof_sample_runs sb = {d->bv, d->bs, d->bruns, blocks}, sc = {d->cv, d->cs, d->cruns, blocks};
    mprof_mwu m;
    if (mprof__mann_whitney_runs(&sb, &sc, &m))
        return -1;
    r->rank_p = m.p_greater;
    r->rank_u = m.u;
    r->rank_z = m.z;
    r->rank_effect = m.effect;
    r->rank_exact = m.exact;
    r->rank_design_effect = m.design_effect;
    mprof_ratio_ci ci;
    if (mprof__bootstrap_ratio_ci(&sb, &sc, 95.0, o->n_resamples, 1.0 - o->alpha, o->seed, &ci)) {
        /* Only a zero baseline p95 gets here with enough frames. */
        r->verdict = MPROF_GATE_BAD_INPUT;
        snprintf(r->reason, sizeof r->reason,
                 "the baseline p95 frame time is zero; the exports hold no usable timings");
        return 1;
    }
    r->ci_lo = ci.lo;
    r->ci_hi = ci.hi;
    if (d->bruns >= 2 && d->cruns >= 2) {
        if (run_level(d))
            return -1;
    } else if (d->bruns >= 2 || d->cruns >= 2) {
        mprof__gate_warn(r, "the per-run p95 test needs two or more runs on each side (baseline "
                         "%zu, current %zu); only the frame-level tests were made",
                         d->bruns, d->cruns);
    }
    d->rank_ok = r->rank_p < o->alpha;
    d->ci_ok = r->ci_lo > 1.0;
    d->run_ok = !r->run_test || r->run_p < o->alpha;
    /* One run on a side cannot tell a machine that was busier during that run from slower code:
     * every resample of its frames or blocks carries the same run-wide offset, so the interval
     * would be narrow around whatever that offset made of the ratio. Significance needs two or
     * more runs on each side, whose resampling is what carries run-to-run variation. */
    d->runs_ok = d->bruns >= 2 && d->cruns >= 2;
    /* With a handful of runs, resampling them understates how much a run can differ from the
     * next (three runs give ten distinct resamples); the run-level interval must clear 1 too.
     * Either interval may clear 1: each is a one-sided test at alpha / 2 (the lower end of a
     * 1 - alpha two-sided interval), so the two together keep the false-alarm rate at alpha
     * (Bonferroni). */
    d->run_ci_ok = r->run_ci && (r->run_ci_lo > 1.0 || r->run_mean_ci_lo > 1.0);
    r->magnitude = r->cur_dec.p95_ms > r->base_dec.p95_ms * (1.0 + o->threshold_pct / 100.0);
    r->significant = d->rank_ok && d->ci_ok && d->run_ok && d->runs_ok && d->run_ci_ok;
    return 0;
}

/* ---- the verdict ---------------------------------------------------------------------------- */

static const char *what_decided(const mprof_gate_result *r)
{
    return r->noise_model ? "p95 frame time (noise accounted)" : "p95 frame time";
}

/* The zone a verdict may name: the top row, when it grew significantly itself. */
static const mprof_gate_attrib *top_zone(const mprof_gate_result *r)
{
    return r->n_zones > 0 && r->zones[0].significant ? &r->zones[0] : NULL;
}

/* Within the threshold. A distribution that moved as a whole (the median or the mean past the
 * threshold, confirmed by the rank test) is worth a word even when the p95 did not move enough. */
static void decide_pass(decision *d)
{
    mprof_gate_result *r = d->r;
    const mprof_gate_opts *o = &r->opts;
    const mprof_gate_attrib *top = top_zone(r);
    char pb[32];
    r->verdict = MPROF_GATE_PASS;
    snprintf(r->reason, sizeof r->reason, "%s changed by %+.1f %%, within the +%g %% threshold%s",
             what_decided(r), 100.0 * (r->p95_ratio - 1.0), o->threshold_pct,
             r->significant ? " (the change is statistically significant, but small)" : "");
    double p50c = mprof__gate_pct_change(r->cur_dec.p50_ms, r->base_dec.p50_ms);
    double meanc = mprof__gate_pct_change(r->cur_dec.mean_ms, r->base_dec.mean_ms);
    if (d->rank_ok && (p50c > o->threshold_pct || meanc > o->threshold_pct)) {
        r->shifted = 1;
        mprof__gate_warn(r, "the frame time distribution shifted although its p95 stayed within "
                         "the threshold: p50 %+.1f %%, mean %+.1f %% (rank test p %s%s)%s%s%s",
                         p50c, meanc, mprof__gate_pstr(r->rank_p, pb, sizeof pb),
                         d->runs_ok ? "" : "; one run on a side, so a busier machine could "
                                           "explain it",
                         top ? "; zone \"" : "", top ? top->name : "", top ? "\" grew most" : "");
    }
}

static void decide_regression(decision *d)
{
    mprof_gate_result *r = d->r;
    const mprof_gate_opts *o = &r->opts;
    const mprof_gate_attrib *top = top_zone(r);
    double change = 100.0 * (r->p95_ratio - 1.0);
    char pb[32];
    r->verdict = MPROF_GATE_REGRESSION;
    if (top)
        snprintf(r->reason, sizeof r->reason,
                 "%s rose %+.1f %% (threshold +%g %%; %g %% interval of the ratio %.3f..%.3f, "
                 "rank test p %s); most of the growth is in zone \"%s\" (%+.3g ms %sper frame)",
                 what_decided(r), change, o->threshold_pct, 100.0 * (1.0 - o->alpha), r->ci_lo,
                 r->ci_hi, mprof__gate_pstr(r->rank_p, pb, sizeof pb), top->name, top->delta_ms,
                 top->on_cpu ? "on-CPU " : "");
    else
        snprintf(r->reason, sizeof r->reason,
                 "%s rose %+.1f %% (threshold +%g %%; %g %% interval of the ratio %.3f..%.3f, "
                 "rank test p %s); no zone grew significantly (the time is outside zones, or "
                 "spread over many)",
                 what_decided(r), change, o->threshold_pct, 100.0 * (1.0 - o->alpha), r->ci_lo,
                 r->ci_hi, mprof__gate_pstr(r->rank_p, pb, sizeof pb));
}

/* Every frame slower by more than the threshold, by the frames and by the runs: a regression
 * whatever the p95 did (shift.c). */
static void decide_shifted(decision *d)
{
    mprof_gate_result *r = d->r;
    const mprof_gate_opts *o = &r->opts;
    const mprof_gate_attrib *top = top_zone(r);
    char pb[32], zone[320] = "; no zone grew significantly (the time is outside zones, or spread "
                             "over many)";
    r->verdict = MPROF_GATE_REGRESSION;
    if (top)
        snprintf(zone, sizeof zone, "; most of the growth is in zone \"%s\" (%+.3g ms %sper frame)",
                 top->name, top->delta_ms, top->on_cpu ? "on-CPU " : "");
    snprintf(r->reason, sizeof r->reason,
             "every frame got slower by more than the +%g %% threshold: the median %s rose "
             "%+.1f %% over the frames (rank test p %s) and %+.1f %% over the runs (at least "
             "%+.1f %%, one-sided %g %%), while the p95 changed %+.1f %%%s%s",
             o->threshold_pct, r->noise_model ? "decision frame time" : "frame time",
             100.0 * (r->frame_median_ratio - 1.0), mprof__gate_pstr(r->rank_p, pb, sizeof pb),
             100.0 * (r->run_median_ratio - 1.0), 100.0 * (r->run_median_lo - 1.0),
             100.0 * (1.0 - o->alpha), 100.0 * (r->p95_ratio - 1.0),
             r->magnitude ? " (not significant on its own: the slowest frames are where the "
                            "machine's noise is)"
                          : "",
             zone);
}

/* A zone that grew significantly by more than the threshold's share of the frame is named in
 * every verdict's reason (a regression's already names its top zone). */
static void name_exceeding_zone(decision *d)
{
    mprof_gate_result *r = d->r;
    if (r->verdict == MPROF_GATE_REGRESSION || r->n_zones == 0 || !r->zones[0].exceeds)
        return;
    const mprof_gate_attrib *a = &r->zones[0];
    size_t len = strlen(r->reason);
    char rel[32] = "new";
    if (!isinf(a->delta_pct))
        snprintf(rel, sizeof rel, "%+.0f %%", a->delta_pct);
    snprintf(r->reason + len, sizeof r->reason - len,
             "; zone \"%s\" grew significantly by %+.3g ms %sper frame (%s), more than the "
             "threshold's share of the frame (%.3g ms)",
             a->name, a->delta_ms, a->on_cpu ? "on-CPU " : "", rel,
             r->opts.threshold_pct / 100.0 * r->base_dec.mean_ms);
}

/* How many times more data a test with one-sided p-value p needs to reach alpha, assuming its
 * z score grows with the square root of the sample size. 0 when it cannot be estimated (the
 * data show no effect in that direction). */
static double growth_factor(double p, double alpha)
{
    double z = mprof__normal_isf(p), zn = mprof__normal_isf(alpha);
    if (!(z > 0.05))
        return 0.0;
    double f = (zn / z) * (zn / z);
    return f < 1.0 ? 1.0 : f;
}

/* Magnitude without evidence: how many more frames (r->need_frames) and runs (r->need_runs) per
 * side would settle it. Returns 0 when the frames cannot say (they show no shift at all). */
static int estimate_more(decision *d)
{
    mprof_gate_result *r = d->r;
    const mprof_gate_opts *o = &r->opts;
    size_t runs = d->bruns < d->cruns ? d->bruns : d->cruns;
    double f = 1.0;
    int estimable = 1;
    if (!d->rank_ok) {
        double g = growth_factor(r->rank_p, o->alpha);
        if (g == 0.0)
            estimable = 0;
        else if (g > f)
            f = g;
    }
    if (!d->ci_ok && r->p95_ratio > 1.0) {
        /* The interval's half-width shrinks with the square root of the frame count. */
        double half = r->p95_ratio - r->ci_lo, room = r->p95_ratio - 1.0;
        double g = (half / room) * (half / room) * 1.1;
        if (g > f)
            f = g;
    }
    size_t have = d->nb > d->nc ? d->nb : d->nc;
    if (!d->rank_ok || !d->ci_ok)
        r->need_frames = estimable ? (long)ceil((double)have * (f - 1.0)) + 1 : 0;
    if (!d->runs_ok)
        r->need_runs = (long)(2 - runs);
    if (d->runs_ok && !d->run_ci_ok && r->p95_ratio > 1.0 && r->run_ci) {
        /* The run-level interval's half-width (in logs) shrinks with the square root of the runs
         * (and its t factor with them: left out, so this is an upper estimate). */
        double half = log(r->p95_ratio) - log(r->run_ci_lo), room = log(r->p95_ratio);
        long k = room > 0 ? (long)ceil((double)runs * (half / room) * (half / room)) : 0;
        if (k > (long)runs && k - (long)runs > r->need_runs)
            r->need_runs = k - (long)runs;
        else if (r->need_runs < 1)
            r->need_runs = 1;
    }
    if (r->run_test && !d->run_ok) {
        size_t k = runs;
        while (mprof__mwu_min_p(k, k) >= o->alpha)
            k++;
        double g = growth_factor(r->run_p, o->alpha);
        size_t by_z = g > 0 ? (size_t)ceil((double)runs * g) : k;
        if (by_z > k)
            k = by_z;
        r->need_runs = (long)(k - runs);
        if (r->need_runs < 1)
            r->need_runs = 1;
    }
    return estimable;
}

/* Past the threshold without the evidence: inconclusive, saying how many runs a side would
 * decide it (shift.c: from the measured run-to-run spread). Returns 0, or -1 out of memory. */
static int decide_unproven(decision *d, const mprof_gate_sides *sides)
{
    mprof_gate_result *r = d->r;
    const mprof_gate_opts *o = &r->opts;
    double change = 100.0 * (r->p95_ratio - 1.0);
    size_t runs = d->bruns < d->cruns ? d->bruns : d->cruns;
    char pb[32];
    r->verdict = MPROF_GATE_INCONCLUSIVE;
    estimate_more(d); /* needMoreFrames, for the JSON report */
    if (!d->runs_ok) {
        /* One run cannot say how much runs differ: three a side is where the tests start. */
        r->recommended_runs = 3;
        r->need_runs = (long)(3 - runs);
        if (d->rank_ok && d->ci_ok && d->run_ok)
            snprintf(r->reason, sizeof r->reason,
                     "%s rose %+.1f %% (threshold +%g %%), but with %zu baseline and %zu current "
                     "run(s) a busier machine during one run cannot be told from slower code; "
                     "rerun with --runs 3 (mprof ci --runs 3 --baseline-cmd ...)",
                     what_decided(r), change, o->threshold_pct, d->bruns, d->cruns);
        else
            snprintf(r->reason, sizeof r->reason,
                     "%s rose %+.1f %% (threshold +%g %%) but not significantly (rank test p %s, "
                     "interval %.3f..%.3f); with %zu baseline and %zu current run(s) nothing says "
                     "how much runs differ: rerun with --runs 3 (mprof ci --runs 3 "
                     "--baseline-cmd ...)",
                     what_decided(r), change, o->threshold_pct,
                     mprof__gate_pstr(r->rank_p, pb, sizeof pb), r->ci_lo, r->ci_hi, d->bruns,
                     d->cruns);
        return 0;
    }
    if (mprof__gate_advise(sides, r))
        return -1;
    long k = r->recommended_runs;
    r->need_runs = k > (long)runs ? k - (long)runs : 0;
    char more[320];
    if (k > 0)
        snprintf(more, sizeof more, "; rerun with --runs %ld: the runs' p95s differ by about "
                 "%.1f %% from run to run, and %ld runs a side would tell a change of this size "
                 "from that", k, 100.0 * r->run_p95_sd, k);
    else if (k < 0)
        snprintf(more, sizeof more, "; the change is within what the runs differ by (about "
                 "%.1f %% from run to run): more than %d runs a side would be needed to tell them "
                 "apart", 100.0 * r->run_p95_sd, MPROF_GATE_MAX_RUNS);
    else
        snprintf(more, sizeof more, "; the frame distributions show no shift, only the p95 "
                 "moved, so more runs alone may not settle it");
    snprintf(r->reason, sizeof r->reason,
             "%s rose %+.1f %% (threshold +%g %%) but not significantly (rank test p %s, interval "
             "%.3f..%.3f%s)%s",
             what_decided(r), change, o->threshold_pct, mprof__gate_pstr(r->rank_p, pb, sizeof pb),
             r->ci_lo, r->ci_hi,
             r->run_test ? (d->run_ok ? ", per-run p95s differ" : ", per-run p95s do not differ")
                         : (r->run_ci && !d->run_ci_ok ? ", the runs' p95s vary too much" : ""),
             more);
    return 0;
}

/* The bulk of the frames past the threshold by the frames (rank test significant) and by the
 * runs' own estimate, but the runs' interval still reaches 1: a pass on the p95 alone would hide
 * a change every frame shows, so the verdict is inconclusive and says how many runs a side would
 * settle it. */
static int shift_unproven(const mprof_gate_result *r)
{
    return r->shift_frames_ok && !r->shift_runs_ok &&
           r->run_median_ratio > 1.0 + r->opts.threshold_pct / 100.0;
}

static int decide_shift_unproven(decision *d, const mprof_gate_sides *sides)
{
    mprof_gate_result *r = d->r;
    const mprof_gate_opts *o = &r->opts;
    size_t runs = d->bruns < d->cruns ? d->bruns : d->cruns;
    char pb[32], more[320];
    r->verdict = MPROF_GATE_INCONCLUSIVE;
    if (mprof__gate_advise(sides, r))
        return -1;
    long k = r->recommended_runs;
    r->need_runs = k > (long)runs ? k - (long)runs : 0;
    if (k > 0)
        snprintf(more, sizeof more, "; rerun with --runs %ld: the runs' medians differ by about "
                 "%.1f %% from run to run, and %ld runs a side would tell a change of this size "
                 "from that", k, 100.0 * r->run_median_sd, k);
    else
        snprintf(more, sizeof more, "; the change is within what the runs differ by (about "
                 "%.1f %% from run to run): more than %d runs a side would be needed to tell them "
                 "apart", 100.0 * r->run_median_sd, MPROF_GATE_MAX_RUNS);
    snprintf(r->reason, sizeof r->reason,
             "every frame may have got slower by more than the +%g %% threshold: the median %s "
             "rose %+.1f %% over the frames (rank test p %s) and %+.1f %% over the runs, but the "
             "runs do not confirm it (at least %+.1f %%, one-sided %g %%), while the p95 changed "
             "%+.1f %%%s",
             o->threshold_pct, r->noise_model ? "decision frame time" : "frame time",
             100.0 * (r->frame_median_ratio - 1.0), mprof__gate_pstr(r->rank_p, pb, sizeof pb),
             100.0 * (r->run_median_ratio - 1.0), 100.0 * (r->run_median_lo - 1.0),
             100.0 * (1.0 - o->alpha), 100.0 * (r->p95_ratio - 1.0), more);
    return 0;
}

/* Settles r's verdict. Returns 0, or -1 out of memory. */
static int decide(decision *d)
{
    int rc;
    if ((rc = figures(d)) != 0 || process_guard(d) || machine_guard(d) || frames_missing(d))
        return rc;
    if (!d->r->noise_model)
        mprof__gate_warn(d->r, "%s", d->r->noise_note);
    if (too_few_frames(d) || (rc = test_significance(d)) != 0)
        return rc < 0 ? -1 : 0;
    mprof_gate_sides sides = {d->bv, d->cv, d->bs, d->cs, d->bruns, d->cruns};
    if (mprof__gate_shift(&sides, d->r))
        return -1;
    if (d->r->magnitude && d->r->significant)
        decide_regression(d);
    else if (d->r->shift)
        decide_shifted(d);
    else if (!d->r->magnitude && shift_unproven(d->r)) {
        if (decide_shift_unproven(d, &sides))
            return -1;
    } else if (!d->r->magnitude)
        decide_pass(d);
    else if (decide_unproven(d, &sides))
        return -1;
    name_exceeding_zone(d);
    return 0;
}

mprof_gate_result *mprof__gate_compare(const mprof_frames_runs *base, const mprof_frames_runs *cur,
                                       const mprof_gate_opts *opts, char *err, size_t errlen)
{
    mprof_gate_result *r = calloc(1, sizeof *r);
    if (!r) {
        tool_seterr(err, errlen, "out of memory");
        return NULL;
    }
    if (opts)
        r->opts = *opts;
    fill_defaults(&r->opts);
    r->rank_p = 1.0;
    r->run_p = 1.0;
    decision d = {.base = base, .cur = cur, .r = r};
    int rc = decide(&d);
    free(d.bv);
    free(d.cv);
    free(d.bs);
    free(d.cs);
    if (rc) {
        mprof__gate_result_free(r);
        tool_seterr(err, errlen, "out of memory");
        return NULL;
    }
    return r;
}
