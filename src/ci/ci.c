/*
 * ci.c - what a `mprof ci` invocation found, and the report that says it.
 *
 * Each run of a command fills a result of its own; the invocation's result gathers them: a
 * record per run, each run's reasons (named after the run when there are several), and the
 * command and capture fields of the run the report describes. Reasons are failures only;
 * anything else worth a word (the gate's warnings, an inconclusive gate that does not fail the
 * job) is a warning, so a CI log that lists reasons lists why the job failed.
 */
#include "ci/ci.h"
#include "util/tool.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Formats line n of a list of MPROF_CI_MAX_REASONS lines of len bytes each; a line past the
 * last is dropped. */
static void add_line(char *lines, size_t len, int *n, const char *fmt, va_list ap)
{
    if (*n < MPROF_CI_MAX_REASONS)
        vsnprintf(lines + (size_t)(*n)++ * len, len, fmt, ap);
}

void mprof__ci_reason(mprof_ci_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_line((char *)r->reasons, sizeof r->reasons[0], &r->n_reasons, fmt, ap);
    va_end(ap);
}

void mprof__ci_warning(mprof_ci_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_line((char *)r->warnings, sizeof r->warnings[0], &r->n_warnings, fmt, ap);
    va_end(ap);
}

int mprof__ci_exit_expected(const mprof_ci_opts *o, int code)
{
    if (o->n_expect_exit == 0)
        return code == 0;
    for (int i = 0; i < o->n_expect_exit; i++)
        if (o->expect_exit[i] == code)
            return 1;
    return 0;
}

void mprof__ci_add_run(const mprof_ci_opts *o, mprof_ci_result *r, const mprof_ci_result *one,
                       int baseline, int k, int code)
{
    if (r->n_runs < MPROF_CI_MAX_RUNS) {
        mprof_ci_run_rec *rec = &r->runs[r->n_runs++];
        rec->baseline = baseline;
        rec->index = k;
        rec->code = code;
        rec->cmd_exit = one->cmd_exit;
        rec->cmd_signal = one->cmd_signal;
        rec->cmd_ran = one->cmd_ran;
        rec->frames = one->frames;
        rec->p95 = one->p95;
        rec->events_lost = one->events_lost;
        rec->valid = one->artifact_valid;
        snprintf(rec->source, sizeof rec->source, "%s", one->source);
        snprintf(rec->artifact, sizeof rec->artifact, "%s", one->artifact_path);
        if (one->frames >= 0)
            snprintf(rec->export_path, sizeof rec->export_path, "%s", one->export_path);
        rec->seconds = one->t_command;
    }
    for (int i = 0; i < one->n_reasons; i++) {
        if (o->runs > 1 || baseline)
            mprof__ci_reason(r, "%s run %d: %s", baseline ? "baseline" : "current", k,
                             one->reasons[i]);
        else
            mprof__ci_reason(r, "%s", one->reasons[i]);
    }
}

/* The report's view of the result: what it borrows besides the result's own buffers. */
typedef struct report_parts {
    const char *reasons[MPROF_CI_MAX_REASONS], *warnings[MPROF_CI_MAX_REASONS];
    mprof_ci_report_run runs[MPROF_CI_MAX_RUNS];
    mprof_ci_report_gate gate;
    char baseline_runs[1200];
} report_parts;

static void report_runs(const mprof_ci_result *r, report_parts *p, mprof_ci_report *out)
{
    for (int i = 0; i < r->n_runs; i++) {
        const mprof_ci_run_rec *rec = &r->runs[i];
        p->runs[i] = (mprof_ci_report_run){
            .side = rec->baseline ? "baseline" : "current",
            .run = rec->index,
            .ok = rec->code == EXIT_OK,
            .command_ran = rec->cmd_ran,
            .command_exit = rec->cmd_exit,
            .command_signal = rec->cmd_signal,
            .frames = rec->frames,
            .p95_ms = rec->p95,
            .valid = rec->valid,
            .events_lost = rec->events_lost,
            .capture = rec->artifact,
            .source = rec->source,
            .frame_export = rec->export_path,
            .command_seconds = rec->seconds,
        };
    }
    out->runs = p->runs;
    out->n_runs = (size_t)r->n_runs;
}

/* Fills out (borrowing from o, r and p) with what the report says of the invocation. */
static void report_of(const mprof_ci_opts *o, const mprof_ci_result *r, report_parts *p,
                      mprof_ci_report *out)
{
    static const int no_list[1] = {0};
    memset(out, 0, sizeof *out);
    out->verdict = r->verdict;
    out->exit_code = r->exit_code;
    for (int i = 0; i < r->n_reasons; i++)
        p->reasons[i] = r->reasons[i];
    for (int i = 0; i < r->n_warnings; i++)
        p->warnings[i] = r->warnings[i];
    out->reasons = p->reasons;
    out->n_reasons = (size_t)r->n_reasons;
    out->warnings = p->warnings;
    out->n_warnings = (size_t)r->n_warnings;
    out->git_sha = r->git_sha;
    out->run_uid = r->run_uid;
    out->command = (const char *const *)o->command;
    out->n_command = (size_t)o->n_command;
    out->command_ran = r->cmd_ran;
    out->command_exit = r->cmd_exit;
    out->command_signal = r->cmd_signal;
    out->capture.path = r->artifact_path;
    out->capture.source = r->source;
    out->capture.note = r->note;
    out->capture.bytes = r->artifact_bytes;
    out->capture.valid = r->artifact_valid;
    out->capture.complete = r->artifact_complete;
    out->capture.ending = r->artifact_ending;
    out->capture.tool_exit_code = r->capture_exit;
    out->capture.log = r->capture_log;
    out->capture.address = o->address;
    out->capture.port = o->port;
    out->events_lost = r->events_lost;
    out->max_events_lost = o->max_lost;
    out->have_frames = r->export_path[0] && r->frames >= 0;
    out->frames = r->frames;
    out->p50_ms = r->p50;
    out->p90_ms = r->p90;
    out->p95_ms = r->p95;
    out->p99_ms = r->p99;
    snprintf(p->baseline_runs, sizeof p->baseline_runs, "%s/baseline-runs", o->dir);
    out->baseline = o->baseline_argv ? p->baseline_runs : o->baseline;
    out->baseline_command = o->baseline_cmd;
    out->runs_per_side = o->runs;
    out->expect_exit = o->n_expect_exit ? o->expect_exit : no_list;
    out->n_expect_exit = o->n_expect_exit ? (size_t)o->n_expect_exit : 1;
    out->have_baseline_p95 = r->have_baseline;
    out->baseline_p95_ms = r->base_p95;
    out->threshold_pct = o->threshold >= 0 ? o->threshold : 10;
    if (r->gate_verdict[0]) {
        p->gate = (mprof_ci_report_gate){r->gate_verdict, r->gate_reason, r->top_zone,
                                         r->gate_json, r->gate_md};
        out->gate = &p->gate;
    }
    out->frame_export = r->export_path;
    report_runs(r, p, out);
    out->command_seconds = r->t_command;
    out->drain_seconds = r->t_drain;
    out->export_seconds = r->t_export;
    out->gate_seconds = r->t_gate;
    out->total_seconds = r->t_total;
}

int mprof__ci_write_report(const mprof_ci_opts *o, const mprof_ci_result *r,
                           const mprof_ci_report_store *store, const char *path)
{
    report_parts *p = malloc(sizeof *p);
    if (!p)
        return -1;
    mprof_ci_report rep;
    report_of(o, r, p, &rep);
    rep.store = store;
    int rc = mprof__ci_report_write(&rep, path);
    free(p);
    return rc;
}
