/*
 * gate_step.c - the gate inside `mprof ci`: the current runs' frame exports against the
 * baseline's, with the invocation's threshold and warm-up frames. Its reports land beside
 * ci-report.json (gate-report.json, gate-report.md); its verdict, reason and the zone it names
 * go into the CI report, a regression or a refusal as a reason, its warnings as warnings.
 */
#include "ci/ci.h"
#include "gate/gate.h"

#include <stdio.h>

static int write_file_with(const char *path, const mprof_gate_result *g,
                           int (*fn)(const mprof_gate_result *, FILE *))
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = fn(g, f);
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

void mprof__ci_gate(const mprof_ci_opts *o, const char *baseline, const char *current,
                    mprof_ci_result *r)
{
    char err[1024];
    mprof_frames_runs *b = mprof__frames_load(baseline, o->skip_frames, err, sizeof err);
    mprof_frames_runs *c = b ? mprof__frames_load(current, o->skip_frames, err, sizeof err) : NULL;
    mprof_gate_opts go = {0};
    go.threshold_pct = o->threshold > 0 ? o->threshold : (o->threshold == 0 ? -1 : 10);
    go.skip_frames = o->skip_frames;
    mprof_gate_result *g = (b && c) ? mprof__gate_compare(b, c, &go, err, sizeof err) : NULL;
    mprof__frames_runs_free(b);
    mprof__frames_runs_free(c);
    if (!g) {
        snprintf(r->gate_verdict, sizeof r->gate_verdict, "bad-input");
        snprintf(r->gate_reason, sizeof r->gate_reason, "%s", err);
        mprof__ci_reason(r, "the gate could not compare: %s", err);
        return;
    }
    r->have_baseline = 1;
    r->base_p95 = g->base.p95_ms;
    for (size_t i = 0; i < g->n_warnings; i++)
        mprof__ci_warning(r, "gate: %s", g->warnings[i]);
    snprintf(r->gate_verdict, sizeof r->gate_verdict, "%s", mprof__gate_verdict_name(g->verdict));
    snprintf(r->gate_reason, sizeof r->gate_reason, "%s", g->reason);
    if (g->n_zones > 0 && g->zones[0].significant) /* only a zone that grew is named */
        snprintf(r->top_zone, sizeof r->top_zone, "%s", g->zones[0].name);
    snprintf(r->gate_json, sizeof r->gate_json, "%s/gate-report.json", o->dir);
    snprintf(r->gate_md, sizeof r->gate_md, "%s/gate-report.md", o->dir);
    if (write_file_with(r->gate_json, g, mprof__gate_write_json) ||
        write_file_with(r->gate_md, g, mprof__gate_write_markdown))
        mprof__ci_reason(r, "cannot write the gate reports in %s", o->dir);
    if (!o->quiet)
        mprof__gate_print_text(g, stdout);
    if (g->verdict == MPROF_GATE_REGRESSION)
        mprof__ci_reason(r, "regression: %s", g->reason);
    else if (g->verdict == MPROF_GATE_BAD_INPUT)
        mprof__ci_reason(r, "the gate refused: %s", g->reason);
    mprof__gate_result_free(g);
}
