/*
 * text.c - the gate's verdict for a terminal or a CI log: the verdict and its exit status, the
 * sides' figures side by side, the tests that decided, and where the time went.
 */
#include "gate/internal.h"

#include "util/tool.h"

#include <math.h>

/* The verdict as the first line shouts it; a refused comparison is REFUSED. */
static const char *verdict_upper(mprof_gate_verdict v)
{
    switch (v) {
    case MPROF_GATE_PASS: return "PASS";
    case MPROF_GATE_REGRESSION: return "REGRESSION";
    case MPROF_GATE_INCONCLUSIVE: return "INCONCLUSIVE";
    case MPROF_GATE_BAD_INPUT: return "REFUSED";
    }
    return "REFUSED";
}

int mprof__gate_print_text(const mprof_gate_result *r, FILE *out)
{
    const mprof_gate_opts *o = &r->opts;
    /* Zone names, file names and machine names come from the exports: escaped (tool_text). */
    char e[256];
    fprintf(out, "mprof gate: %s (exit %d)\n", verdict_upper(r->verdict), (int)r->verdict);
    fputs("  ", out);
    tool_put_text(out, r->reason);
    fputs("\n\n", out);
    fprintf(out, "  %-16s %12s %12s %9s\n", "", "baseline", "current", "change");
    fprintf(out, "  %-16s %12zu %12zu\n", "runs", r->base.runs, r->cur.runs);
    fprintf(out, "  %-16s %12zu %12zu\n", "frames", r->base.frames, r->cur.frames);
    const char *lbl[4] = {"p50 frame ms", "p95 frame ms", "p99 frame ms", "mean frame ms"};
    double bvals[4] = {r->base.p50_ms, r->base.p95_ms, r->base.p99_ms, r->base.mean_ms};
    double cvals[4] = {r->cur.p50_ms, r->cur.p95_ms, r->cur.p99_ms, r->cur.mean_ms};
    for (int i = 0; i < 4; i++)
        fprintf(out, "  %-16s %12.5g %12.5g %+8.1f%%\n", lbl[i], bvals[i], cvals[i],
                mprof__gate_pct_change(cvals[i], bvals[i]));
    if (r->noise_model)
        fprintf(out, "  %-16s %12.5g %12.5g %+8.1f%%\n", "p95 decided ms", r->base_dec.p95_ms,
                r->cur_dec.p95_ms, mprof__gate_pct_change(r->cur_dec.p95_ms, r->base_dec.p95_ms));
    if (r->base_p95_off_share >= 0 && r->cur_p95_off_share >= 0)
        fprintf(out, "  %-16s %11.1f%% %11.1f%%\n", "p95 off-CPU", 100.0 * r->base_p95_off_share,
                100.0 * r->cur_p95_off_share);
    if (r->base_noise.p95_runnable_share >= 0 && r->cur_noise.p95_runnable_share >= 0)
        fprintf(out, "  %-16s %11.1f%% %11.1f%%\n", "p95 runnable",
                100.0 * r->base_noise.p95_runnable_share, 100.0 * r->cur_noise.p95_runnable_share);
    if (r->noise_model)
        fprintf(out, "  %-16s %11.1f%% %11.1f%%\n", "p95 removed",
                100.0 * r->base_noise.p95_removed_share, 100.0 * r->cur_noise.p95_removed_share);
    if (r->verdict != MPROF_GATE_BAD_INPUT)
        fprintf(out, "\n  noise       %s%s%s\n",
                r->noise_model ? mprof__gate_noise_model_name(r->noise_model) : "",
                r->noise_model ? ": " : "", mprof__gate_noise_text(r));
    if (mprof__gate_tested(r)) {
        fprintf(out, "  magnitude   p95 ratio %.3f vs limit %.3f: %s\n", r->p95_ratio,
                1.0 + o->threshold_pct / 100.0, r->magnitude ? "exceeded" : "within");
        char pb[32];
        fprintf(out, "  rank test   one-sided p %s (%s, P(current > baseline) = %.2f, "
                     "correlation design effect %.1f)\n",
                mprof__gate_pstr(r->rank_p, pb, sizeof pb),
                r->rank_exact ? "exact" : "normal approximation", r->rank_effect,
                r->rank_design_effect);
        fprintf(out, "  bootstrap   %g %% interval of the p95 ratio: %.3f .. %.3f\n",
                100.0 * (1.0 - o->alpha), r->ci_lo, r->ci_hi);
        if (r->run_ci)
            fprintf(out, "  runs        %g %% run-level interval of the p95 ratio: %.3f .. %.3f, "
                         "of the mean ratio: %.3f .. %.3f (Student t, %.0f degrees of "
                         "freedom)\n",
                    100.0 * (1.0 - o->alpha), r->run_ci_lo, r->run_ci_hi, r->run_mean_ci_lo,
                    r->run_mean_ci_hi, r->run_ci_df);
        if (r->run_test)
            fprintf(out, "  runs        per-run p95 rank test p %s\n",
                    mprof__gate_pstr(r->run_p, pb, sizeof pb));
        if (r->shift_tested)
            fprintf(out, "  every frame median ratio: frames %.3f, runs %.3f (at least %.3f, "
                         "one-sided %g %%); frames against the baseline %+g %%: p %s: %s\n",
                    r->frame_median_ratio, r->run_median_ratio, r->run_median_lo,
                    100.0 * (1.0 - o->alpha), o->threshold_pct,
                    mprof__gate_pstr(r->shift_p, pb, sizeof pb),
                    r->shift ? "every frame slower by more than the threshold"
                    : r->shift_runs_ok || r->shift_frames_ok
                        ? "the frames and the runs disagree"
                        : "no");
    }
    if (r->n_zones > 0 && r->verdict != MPROF_GATE_BAD_INPUT) {
        fprintf(out, "\n  where the time went (%s self time per frame, significant growth first)\n",
                r->zones[0].on_cpu ? "on-CPU" : "wall-clock");
        fprintf(out, "  %-32s %10s %10s %10s %9s %8s\n", "zone", "base ms", "cur ms", "delta ms",
                "delta", "p");
        for (size_t i = 0; i < r->n_zones; i++) {
            const mprof_gate_attrib *a = &r->zones[i];
            char rel[32], p[32];
            if (isinf(a->delta_pct))
                snprintf(rel, sizeof rel, "new");
            else
                snprintf(rel, sizeof rel, "%+.1f%%", a->delta_pct);
            const char *mark = a->exceeds ? "*!" : a->significant ? "*" : "";
            if (a->per_frame)
                snprintf(p, sizeof p, "%.2g%s", a->p, mark);
            else
                snprintf(p, sizeof p, "runs%s", mark);
            fprintf(out, "  %-32.32s %10.4g %10.4g %+10.3g %9s %8s\n", tool_text(a->name, e, 33),
                    a->base_ms, a->cur_ms, a->delta_ms, rel, p);
        }
        fprintf(out, "  (* grew significantly; ! by more than the threshold's share of the frame, "
                     "%.3g ms)\n", o->threshold_pct / 100.0 * r->base_dec.mean_ms);
    }
    for (size_t i = 0; i < r->n_warnings; i++) {
        fputs("  warning: ", out);
        tool_put_text(out, r->warnings[i]);
        fputc('\n', out);
    }
    char cmd[2200], addr[600];
    if (mprof__gate_view_link(r, cmd, sizeof cmd, addr, sizeof addr) == 0)
        fprintf(out, "\n  compare the captures: %s, then open the printed address + %s\n", cmd, addr);
    return ferror(out) ? -1 : 0;
}
