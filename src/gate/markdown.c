/*
 * markdown.c - the gate's verdict as Markdown for a pull-request comment: a headline, the sides'
 * figures as a table, one paragraph of evidence and one of noise, the zones as a table. Text
 * from exports (zone names, file paths in the reason) is kept from breaking the tables.
 */
#include "gate/internal.h"

#include <math.h>

/* Markdown table cells must not contain '|' or newlines. */
static void md_cell(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", out);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', out);
        else
            fputc(*s, out);
    }
}

int mprof__gate_write_markdown(const mprof_gate_result *r, FILE *out)
{
    const mprof_gate_opts *o = &r->opts;
    char pb[32];
    fprintf(out, "### mprof gate: **%s**\n\n", mprof__gate_verdict_name(r->verdict));
    md_cell(out, r->reason);
    fprintf(out, "\n\n| | Baseline | Current | Change |\n|---|---:|---:|---:|\n");
    fprintf(out, "| Runs | %zu | %zu | |\n", r->base.runs, r->cur.runs);
    fprintf(out, "| Frames | %zu | %zu | |\n", r->base.frames, r->cur.frames);
    const char *lbl[3] = {"p50 frame time", "p95 frame time", "p99 frame time"};
    double bvals[3] = {r->base.p50_ms, r->base.p95_ms, r->base.p99_ms};
    double cvals[3] = {r->cur.p50_ms, r->cur.p95_ms, r->cur.p99_ms};
    for (int i = 0; i < 3; i++)
        fprintf(out, "| %s | %.5g ms | %.5g ms | %+.1f %% |\n", lbl[i], bvals[i], cvals[i],
                mprof__gate_pct_change(cvals[i], bvals[i]));
    if (mprof__gate_tested(r)) {
        fprintf(out, "\nThreshold +%g %%. p95 ratio %.3f, %g %% interval %.3f to %.3f; "
                     "rank test p %s",
                o->threshold_pct, r->p95_ratio, 100.0 * (1.0 - o->alpha), r->ci_lo, r->ci_hi,
                mprof__gate_pstr(r->rank_p, pb, sizeof pb));
        if (r->run_ci)
            fprintf(out, "; run-level interval %.3f to %.3f", r->run_ci_lo, r->run_ci_hi);
        if (r->run_test)
            fprintf(out, "; per-run p95 test p %s", mprof__gate_pstr(r->run_p, pb, sizeof pb));
        fprintf(out, ".\n");
        if (r->shift_tested)
            fprintf(out, "\nEvery frame: median ratio %.3f over the frames, %.3f over the runs "
                         "(at least %.3f) (%s).\n",
                    r->frame_median_ratio, r->run_median_ratio, r->run_median_lo,
                    r->shift ? "every frame slower by more than the threshold" : "not shown");
    }
    if (r->verdict != MPROF_GATE_BAD_INPUT) {
        fputs("\nNoise: ", out);
        md_cell(out, mprof__gate_noise_text(r));
        if (r->noise_model)
            fprintf(out, " (model %s); decided p95 %.5g ms -> %.5g ms; removed %.1f %% / %.1f %% "
                         "of the p95 frames", mprof__gate_noise_model_name(r->noise_model),
                    r->base_dec.p95_ms, r->cur_dec.p95_ms, 100.0 * r->base_noise.p95_removed_share,
                    100.0 * r->cur_noise.p95_removed_share);
        if (r->base_p95_off_share >= 0 && r->cur_p95_off_share >= 0)
            fprintf(out, "; off-CPU share of the p95 frames %.1f %% (baseline), %.1f %% (current)",
                    100.0 * r->base_p95_off_share, 100.0 * r->cur_p95_off_share);
        fputs(".\n", out);
    }
    if (r->n_zones > 0) {
        fprintf(out, "\n| Zone (%s self time) | Baseline ms/frame | Current ms/frame | Change ms | "
                     "Change %% | Significant |\n|---|---:|---:|---:|---:|---|\n",
                r->zones[0].on_cpu ? "on-CPU" : "wall-clock");
        for (size_t i = 0; i < r->n_zones; i++) {
            const mprof_gate_attrib *a = &r->zones[i];
            fputs("| `", out);
            for (const char *s = a->name; *s; s++)
                fputc(*s == '`' ? '\'' : (*s == '|' || *s == '\n' ? ' ' : *s), out);
            fprintf(out, "` | %.4g | %.4g | %+.3g | ", a->base_ms, a->cur_ms, a->delta_ms);
            if (isinf(a->delta_pct))
                fputs("new | ", out);
            else
                fprintf(out, "%+.1f %% | ", a->delta_pct);
            fputs(a->exceeds       ? "yes, more than the threshold's share of the frame |\n"
                  : a->significant ? "yes |\n"
                                   : "no |\n",
                  out);
        }
    }
    if (r->n_warnings > 0) {
        fputc('\n', out);
        for (size_t i = 0; i < r->n_warnings; i++) {
            fputs("- warning: ", out);
            md_cell(out, r->warnings[i]);
            fputc('\n', out);
        }
    }
    char cmd[2200], addr[600];
    if (mprof__gate_view_link(r, cmd, sizeof cmd, addr, sizeof addr) == 0) {
        fputs("\nCompare the captures side by side: `", out);
        for (const char *s = cmd; *s; s++)
            fputc(*s == '`' ? '\'' : (*s == '\n' ? ' ' : *s), out);
        fprintf(out, "`, then open the printed address followed by `%s`.\n", addr);
    }
    return ferror(out) ? -1 : 0;
}

int mprof__gate_write_markdown_refused(const char *reason, FILE *out)
{
    fprintf(out, "### mprof gate: **bad-input**\n\n%s\n", reason);
    return ferror(out) ? -1 : 0;
}
