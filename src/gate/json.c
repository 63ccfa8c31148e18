/*
 * json.c - the gate's verdict as JSON (mprof.gateReport.v1, docs/GATE.md), for CI systems and
 * dashboards: every figure the decision used, so that a verdict can be checked without rerunning
 * it. Figures are rounded to 6 decimals so that reports do not print binary noise
 * (16.666666666666668); p-values are not, since they can be far smaller.
 */
#include "gate/internal.h"

#include <math.h>

/* Rounds to 6 decimals. */
static double r6(double v)
{
    if (!isfinite(v))
        return v;
    return round(v * 1e6) / 1e6;
}

/* A figure, or null where it is not known (negative: unknown) or not finite. */
static void num_or_null(mprof_json *j, const char *key, int known, double v)
{
    if (known && isfinite(v))
        mprof_json_num(j, key, v);
    else
        mprof_json_null(j, key);
}

static void side_json(mprof_json *j, const char *key, const mprof_frames_summary *s,
                      char *const *paths, const char *sha)
{
    mprof_json_obj_begin(j, key);
    mprof_json_arr_begin(j, "files");
    for (size_t i = 0; paths && i < s->runs; i++)
        mprof_json_str(j, NULL, paths[i]);
    mprof_json_arr_end(j);
    mprof_json_str(j, "gitSha", sha);
    mprof_json_num(j, "runs", (double)s->runs);
    mprof_json_num(j, "frameCount", (double)s->frames);
    mprof_json_num(j, "p50FrameTimeMs", r6(s->p50_ms));
    mprof_json_num(j, "p95FrameTimeMs", r6(s->p95_ms));
    mprof_json_num(j, "p99FrameTimeMs", r6(s->p99_ms));
    mprof_json_num(j, "meanFrameTimeMs", r6(s->mean_ms));
    mprof_json_obj_end(j);
}

static void noise_json(mprof_json *j, const mprof_gate_result *r)
{
    mprof_json_obj_begin(j, "noise");
    mprof_json_str(j, "model", mprof__gate_noise_model_name(r->noise_model));
    mprof_json_str(j, "note", r->noise_note);
    mprof_json_num(j, "baselineP95OffCpuShare", r->base_p95_off_share >= 0
                                                    ? r6(r->base_p95_off_share) : NAN);
    mprof_json_num(j, "currentP95OffCpuShare", r->cur_p95_off_share >= 0
                                                   ? r6(r->cur_p95_off_share) : NAN);
    /* How much was removed next to how much the capture knows was runnable but not running
     * (null where the exports lack switch reasons), over all frames and the p95 frames, and
     * what the off-CPU x machine busy estimate would have removed of the p95 frames. */
    const mprof_gate_noise_side *ns[2] = {&r->base_noise, &r->cur_noise};
    static const char *const side[2] = {"baseline", "current"};
    for (int k = 0; k < 2; k++) {
        char key[64];
        snprintf(key, sizeof key, "%sRunnableShare", side[k]);
        num_or_null(j, key, ns[k]->runnable_share >= 0, r6(ns[k]->runnable_share));
        snprintf(key, sizeof key, "%sRemovedShare", side[k]);
        mprof_json_num(j, key, r6(ns[k]->removed_share));
        snprintf(key, sizeof key, "%sP95RunnableShare", side[k]);
        num_or_null(j, key, ns[k]->p95_runnable_share >= 0, r6(ns[k]->p95_runnable_share));
        snprintf(key, sizeof key, "%sP95RemovedShare", side[k]);
        mprof_json_num(j, key, r6(ns[k]->p95_removed_share));
        snprintf(key, sizeof key, "%sP95BusyModelRemovedShare", side[k]);
        num_or_null(j, key, ns[k]->p95_busy_removed_share >= 0,
                    r6(ns[k]->p95_busy_removed_share));
    }
    mprof_json_num(j, "truncatedFrames",
                   (double)(r->base_noise.truncated_frames + r->cur_noise.truncated_frames));
    mprof_json_num(j, "baselineDecisionP95Ms", r6(r->base_dec.p95_ms));
    mprof_json_num(j, "currentDecisionP95Ms", r6(r->cur_dec.p95_ms));
    mprof_json_num(j, "baselineDecisionP50Ms", r6(r->base_dec.p50_ms));
    mprof_json_num(j, "currentDecisionP50Ms", r6(r->cur_dec.p50_ms));
    mprof_json_obj_end(j);
}

/* The tests: the rank test and the bootstrap always, the run-level interval and test or null. */
static void tests_json(mprof_json *j, const mprof_gate_result *r)
{
    const mprof_gate_opts *o = &r->opts;
    mprof_json_obj_begin(j, "p95RatioInterval");
    mprof_json_num(j, "level", r6(1.0 - o->alpha));
    mprof_json_num(j, "low", r6(r->ci_lo));
    mprof_json_num(j, "high", r6(r->ci_hi));
    mprof_json_num(j, "resamples", o->n_resamples);
    mprof_json_obj_end(j);
    mprof_json_obj_begin(j, "rankTest");
    mprof_json_num(j, "u", r6(r->rank_u));
    mprof_json_num(j, "z", r6(r->rank_z));
    mprof_json_num(j, "pGreater", r->rank_p);
    mprof_json_num(j, "effect", r6(r->rank_effect));
    mprof_json_bool(j, "exact", r->rank_exact != 0);
    mprof_json_num(j, "designEffect", r6(r->rank_design_effect));
    mprof_json_num(j, "blocksPerRun", o->blocks);
    mprof_json_obj_end(j);
    if (r->run_ci) {
        mprof_json_obj_begin(j, "runInterval");
        mprof_json_num(j, "level", r6(1.0 - o->alpha));
        mprof_json_num(j, "low", r6(r->run_ci_lo));
        mprof_json_num(j, "high", r6(r->run_ci_hi));
        mprof_json_num(j, "df", r6(r->run_ci_df));
        mprof_json_num(j, "meanLow", r6(r->run_mean_ci_lo));
        num_or_null(j, "meanHigh", 1, r6(r->run_mean_ci_hi));
        mprof_json_obj_end(j);
    } else {
        mprof_json_null(j, "runInterval");
    }
    if (r->run_test) {
        mprof_json_obj_begin(j, "runTest");
        mprof_json_num(j, "pGreater", r->run_p);
        mprof_json_obj_end(j);
    } else {
        mprof_json_null(j, "runTest");
    }
}

/* Every frame slower: the scaled rank test and the runs' medians, or null without two runs a
 * side. */
static void shift_json(mprof_json *j, const mprof_gate_result *r)
{
    if (!r->shift_tested) {
        mprof_json_null(j, "shift");
        return;
    }
    mprof_json_obj_begin(j, "shift");
    mprof_json_num(j, "thresholdRatio", r6(1.0 + r->opts.threshold_pct / 100.0));
    mprof_json_num(j, "frameMedianRatio", r6(r->frame_median_ratio));
    mprof_json_bool(j, "framesAgree", r->shift_frames_ok != 0);
    mprof_json_num(j, "pAboveThreshold", r->shift_p);
    mprof_json_num(j, "aboveThresholdEffect", r6(r->shift_effect));
    mprof_json_num(j, "aboveThresholdDesignEffect", r6(r->shift_design_effect));
    num_or_null(j, "runMedianRatio", r->run_median_ratio > 0, r6(r->run_median_ratio));
    num_or_null(j, "runMedianLow", r->run_median_lo > 0, r6(r->run_median_lo));
    mprof_json_num(j, "runMedianSpreadPct", r6(100.0 * r->run_median_sd));
    mprof_json_bool(j, "runsAgree", r->shift_runs_ok != 0);
    mprof_json_bool(j, "holds", r->shift != 0);
    mprof_json_obj_end(j);
}

static void zone_json(mprof_json *j, const mprof_gate_attrib *a)
{
    mprof_json_obj_begin(j, NULL);
    mprof_json_str(j, "name", a->name);
    if (a->function)
        mprof_json_str(j, "function", a->function);
    mprof_json_num(j, "baselineSelfMsPerFrame", r6(a->base_ms));
    mprof_json_num(j, "currentSelfMsPerFrame", r6(a->cur_ms));
    mprof_json_num(j, "deltaMs", r6(a->delta_ms));
    num_or_null(j, "deltaPct", !isinf(a->delta_pct), r6(a->delta_pct));
    mprof_json_num(j, "baselineInclusiveMsPerFrame", r6(a->base_incl_ms));
    mprof_json_num(j, "currentInclusiveMsPerFrame", r6(a->cur_incl_ms));
    num_or_null(j, "pGreater", a->per_frame, a->p);
    mprof_json_bool(j, "significant", a->significant != 0);
    mprof_json_bool(j, "exceedsThreshold", a->exceeds != 0);
    mprof_json_bool(j, "runLevelSignificant", a->run_significant != 0);
    num_or_null(j, "runLevelT", 1, r6(a->run_t));
    mprof_json_bool(j, "onCpu", a->on_cpu != 0);
    mprof_json_num(j, "baselineOffCpuMsPerFrame", r6(a->base_off_ms));
    mprof_json_num(j, "currentOffCpuMsPerFrame", r6(a->cur_off_ms));
    mprof_json_obj_end(j);
}

int mprof__gate_write_json(const mprof_gate_result *r, FILE *out)
{
    const mprof_gate_opts *o = &r->opts;
    mprof_json j;
    mprof_json_init(&j, out, 1);
    mprof_json_obj_begin(&j, NULL);
    mprof_json_str(&j, "schema", MPROF_GATE_SCHEMA);
    mprof_json_str(&j, "verdict", mprof__gate_verdict_name(r->verdict));
    mprof_json_num(&j, "exitCode", (double)r->verdict);
    mprof_json_str(&j, "reason", r->reason);
    mprof_json_num(&j, "thresholdPct", o->threshold_pct);
    mprof_json_num(&j, "alpha", o->alpha);
    mprof_json_num(&j, "skipFrames", o->skip_frames);
    mprof_json_num(&j, "minFrames", o->min_frames);
    mprof_json_bool(&j, "allowDifferentMachines", o->allow_different_machines != 0);
    if (o->process)
        mprof_json_str(&j, "process", o->process);
    side_json(&j, "baseline", &r->base, r->base_paths, r->base_git_sha);
    side_json(&j, "current", &r->cur, r->cur_paths, r->cur_git_sha);
    noise_json(&j, r);
    mprof_json_num(&j, "rawP95Ratio", r6(r->raw_p95_ratio));
    mprof_json_bool(&j, "shifted", r->shifted != 0);
    mprof_json_num(&j, "p95Ratio", r6(r->p95_ratio));
    mprof_json_num(&j, "p95ChangePct", r6(100.0 * (r->p95_ratio - 1.0)));
    mprof_json_bool(&j, "magnitude", r->magnitude != 0);
    mprof_json_bool(&j, "significant", r->significant != 0);
    tests_json(&j, r);
    mprof_json_num(&j, "needMoreFrames", (double)r->need_frames);
    mprof_json_num(&j, "needMoreRuns", (double)r->need_runs);
    num_or_null(&j, "recommendedRuns", r->recommended_runs > 0, (double)r->recommended_runs);
    num_or_null(&j, "runP95SpreadPct", r->run_p95_sd > 0, r6(100.0 * r->run_p95_sd));
    shift_json(&j, r);
    mprof_json_arr_begin(&j, "zones");
    for (size_t i = 0; i < r->n_zones; i++)
        zone_json(&j, &r->zones[i]);
    mprof_json_arr_end(&j);
    mprof_json_arr_begin(&j, "warnings");
    for (size_t i = 0; i < r->n_warnings; i++)
        mprof_json_str(&j, NULL, r->warnings[i]);
    mprof_json_arr_end(&j);
    char cmd[2200], addr[600];
    if (mprof__gate_view_link(r, cmd, sizeof cmd, addr, sizeof addr) == 0) {
        mprof_json_obj_begin(&j, "compare"); /* the captures side by side in the viewer */
        mprof_json_str(&j, "command", cmd);
        mprof_json_str(&j, "address", addr);
        mprof_json_obj_end(&j);
    }
    mprof_json_obj_end(&j);
    return ferror(out) ? -1 : 0;
}

int mprof__gate_write_json_refused(const char *reason, FILE *out)
{
    mprof_json j;
    mprof_json_init(&j, out, 1);
    mprof_json_obj_begin(&j, NULL);
    mprof_json_str(&j, "schema", MPROF_GATE_SCHEMA);
    mprof_json_str(&j, "verdict", "bad-input");
    mprof_json_num(&j, "exitCode", MPROF_GATE_BAD_INPUT);
    mprof_json_str(&j, "reason", reason);
    mprof_json_obj_end(&j);
    return ferror(out) ? -1 : 0;
}
