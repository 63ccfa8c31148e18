/*
 * result.c - the gate's result: its verdict names, its warnings, its memory, and the few
 * phrasings that the reason and every writer share, so that a p-value or a change reads the same
 * in the text, JSON and Markdown reports.
 */
#include "gate/internal.h"
#include "util/tool.h"

#include <stdarg.h>
#include <stdlib.h>

const char *mprof__gate_verdict_name(mprof_gate_verdict v)
{
    switch (v) {
    case MPROF_GATE_PASS: return "pass";
    case MPROF_GATE_REGRESSION: return "regression";
    case MPROF_GATE_INCONCLUSIVE: return "inconclusive";
    case MPROF_GATE_BAD_INPUT: return "bad-input";
    }
    return "bad-input";
}

void mprof__gate_warn(mprof_gate_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tool_vappendf(&r->warnings, &r->n_warnings, fmt, ap);
    va_end(ap);
}

static void free_paths(char **paths, size_t n)
{
    for (size_t i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
}

void mprof__gate_result_free(mprof_gate_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_warnings; i++)
        free(r->warnings[i]);
    free(r->warnings);
    for (size_t i = 0; i < r->n_zones; i++) {
        free(r->zones[i].name);
        free(r->zones[i].function);
    }
    free(r->zones);
    free_paths(r->base_paths, r->base.runs);
    free_paths(r->cur_paths, r->cur.runs);
    free(r->base_capture);
    free(r->cur_capture);
    free(r->base_git_sha);
    free(r->cur_git_sha);
    free(r);
}

const char *mprof__gate_pstr(double p, char *buf, size_t n)
{
    if (p < 1e-16)
        snprintf(buf, n, "< 1e-16");
    else
        snprintf(buf, n, "= %.2g", p);
    return buf;
}

double mprof__gate_pct_change(double cur, double base)
{
    return base > 0 ? 100.0 * (cur / base - 1.0) : 0.0;
}

const char *mprof__gate_noise_text(const mprof_gate_result *r)
{
    return r->noise_model ? r->noise_note : "none (no system tracing on both sides)";
}

int mprof__gate_tested(const mprof_gate_result *r)
{
    return r->verdict != MPROF_GATE_BAD_INPUT && r->base.frames >= (size_t)r->opts.min_frames &&
           r->cur.frames >= (size_t)r->opts.min_frames;
}
