/*
 * report.c - the CI report (mprof.ciReport.v1) written from its model and read back into it.
 *
 * The report is written whatever happened (a command that failed, an artifact that is missing,
 * a store that could not be reached), so every figure that may be unknown is null rather than a
 * number that looks real. Numbers print as they did when the report was made with cJSON, so a
 * script that reads them sees the same text. The reader takes what the run store needs to store
 * a run (docs/STORE.md): its verdict, commit, command, capture and frame exports.
 */
#define _POSIX_C_SOURCE 200809L

#include "ci/report.h"
#include "util/json_out.h"
#include "util/tool.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const verdicts[] = {"pass", "regression", "inconclusive", "no-baseline",
                                       "failed"};

int mprof__ci_verdict_known(const char *v)
{
    for (size_t i = 0; v && i < sizeof verdicts / sizeof verdicts[0]; i++)
        if (strcmp(v, verdicts[i]) == 0)
            return 1;
    return 0;
}

/* ---- writer --------------------------------------------------------------------------------- */

/* Milliseconds as the frame export writes them (%.6f). */
static double round_ms(double v)
{
    return isfinite(v) ? round(v * 1e6) / 1e6 : v;
}

static double round_s(double v)
{
    return round(v * 1000) / 1000;
}

static void num_or_null(mprof_json *j, const char *key, int known, double v)
{
    if (known)
        mprof_json_num(j, key, v);
    else
        mprof_json_null(j, key);
}

/* A string that says something, or null. */
static void str_or_null(mprof_json *j, const char *key, const char *v)
{
    if (v && *v)
        mprof_json_str(j, key, v);
    else
        mprof_json_null(j, key);
}

static void strings(mprof_json *j, const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mprof_json_str(j, NULL, v[i]);
}

static void command_end(mprof_json *j, int ran, int exit_code, int signal)
{
    num_or_null(j, "commandExitCode", ran && !signal, exit_code);
    num_or_null(j, "commandSignal", signal != 0, signal);
}

static void capture_json(mprof_json *j, const mprof_ci_report *r)
{
    mprof_json_obj_begin(j, "capture");
    mprof_json_str(j, "path", r->capture.path);
    str_or_null(j, "source", r->capture.source);
    if (r->capture.note && *r->capture.note)
        mprof_json_str(j, "note", r->capture.note);
    num_or_null(j, "bytes", r->capture.bytes >= 0, (double)r->capture.bytes);
    mprof_json_bool(j, "valid", r->capture.valid);
    mprof_json_bool(j, "complete", r->capture.complete);
    if (r->capture.valid)
        mprof_json_str(j, "ending", r->capture.ending);
    else
        mprof_json_null(j, "ending");
    mprof_json_num(j, "toolExitCode", r->capture.tool_exit_code);
    mprof_json_str(j, "log", r->capture.log);
    mprof_json_str(j, "address", r->capture.address);
    mprof_json_num(j, "port", r->capture.port);
    mprof_json_obj_end(j);
}

static void gate_json(mprof_json *j, const mprof_ci_report_gate *g)
{
    if (!g) {
        mprof_json_null(j, "gate");
        return;
    }
    mprof_json_obj_begin(j, "gate");
    mprof_json_str(j, "verdict", g->verdict);
    mprof_json_str(j, "reason", g->reason);
    const char *keys[3] = {"topZone", "report", "markdown"};
    const char *vals[3] = {g->top_zone, g->report, g->markdown};
    for (int k = 0; k < 3; k++)
        if (vals[k] && *vals[k])
            mprof_json_str(j, keys[k], vals[k]);
    mprof_json_obj_end(j);
}

static void run_json(mprof_json *j, const mprof_ci_report_run *x)
{
    mprof_json_obj_begin(j, NULL);
    mprof_json_str(j, "side", x->side);
    mprof_json_num(j, "run", x->run);
    mprof_json_bool(j, "ok", x->ok);
    command_end(j, x->command_ran, x->command_exit, x->command_signal);
    num_or_null(j, "frameCount", x->frames >= 0, (double)x->frames);
    num_or_null(j, "p95FrameTimeMs", x->frames > 0, round_ms(x->p95_ms));
    num_or_null(j, "eventsLost", x->valid, (double)x->events_lost);
    mprof_json_str(j, "capture", x->capture);
    str_or_null(j, "source", x->source);
    str_or_null(j, "frameExport", x->frame_export);
    mprof_json_num(j, "commandSeconds", round_s(x->command_seconds));
    mprof_json_obj_end(j);
}

static void store_json(mprof_json *j, const mprof_ci_report_store *s)
{
    mprof_json_obj_begin(j, "store");
    str_or_null(j, "url", s->url);
    num_or_null(j, "runId", s->run_id >= 0, (double)s->run_id);
    if (s->baseline) {
        mprof_json_obj_begin(j, "baseline");
        mprof_json_num(j, "last", (double)s->baseline_last);
        mprof_json_arr_begin(j, "runIds");
        for (size_t i = 0; i < s->n_baseline_ids; i++)
            mprof_json_num(j, NULL, (double)s->baseline_ids[i]);
        mprof_json_arr_end(j);
        mprof_json_str(j, "dir", s->baseline_dir);
        mprof_json_obj_end(j);
    } else {
        mprof_json_null(j, "baseline");
    }
    str_or_null(j, "error", s->error);
    mprof_json_obj_end(j);
}

static void write_json(mprof_json *j, const mprof_ci_report *r)
{
    mprof_json_obj_begin(j, NULL);
    mprof_json_str(j, "schema", MPROF_CI_REPORT_SCHEMA);
    mprof_json_str(j, "verdict", r->verdict);
    mprof_json_num(j, "exitCode", r->exit_code);
    mprof_json_arr_begin(j, "reasons");
    strings(j, r->reasons, r->n_reasons);
    if (r->store && r->store->error && *r->store->error) {
        char why[4300];
        snprintf(why, sizeof why, "the run store failed: %s", r->store->error);
        mprof_json_str(j, NULL, why);
    }
    mprof_json_arr_end(j);
    mprof_json_arr_begin(j, "warnings");
    strings(j, r->warnings, r->n_warnings);
    mprof_json_arr_end(j);
    str_or_null(j, "gitSha", r->git_sha);
    str_or_null(j, "runUid", r->run_uid);
    mprof_json_arr_begin(j, "command");
    strings(j, r->command, r->n_command);
    mprof_json_arr_end(j);
    command_end(j, r->command_ran, r->command_exit, r->command_signal);
    capture_json(j, r);
    num_or_null(j, "eventsLost", r->capture.valid, (double)r->events_lost);
    mprof_json_num(j, "maxEventsLost", (double)r->max_events_lost);
    num_or_null(j, "frameCount", r->have_frames, (double)r->frames);
    const char *pk[4] = {"p50FrameTimeMs", "p90FrameTimeMs", "p95FrameTimeMs", "p99FrameTimeMs"};
    const double pv[4] = {r->p50_ms, r->p90_ms, r->p95_ms, r->p99_ms};
    for (int k = 0; k < 4; k++)
        num_or_null(j, pk[k], r->have_frames, round_ms(pv[k]));
    mprof_json_str(j, "baseline", r->baseline);
    mprof_json_str(j, "baselineCommand", r->baseline_command);
    mprof_json_num(j, "runsPerSide", r->runs_per_side);
    mprof_json_arr_begin(j, "expectExit");
    for (size_t i = 0; i < r->n_expect_exit; i++)
        mprof_json_num(j, NULL, r->expect_exit[i]);
    mprof_json_arr_end(j);
    num_or_null(j, "baselineP95FrameTimeMs", r->have_baseline_p95, round_ms(r->baseline_p95_ms));
    mprof_json_num(j, "thresholdPct", r->threshold_pct);
    gate_json(j, r->gate);
    str_or_null(j, "frameExport", r->frame_export);
    mprof_json_arr_begin(j, "runs");
    for (size_t i = 0; i < r->n_runs; i++)
        run_json(j, &r->runs[i]);
    mprof_json_arr_end(j);
    mprof_json_obj_begin(j, "timings");
    mprof_json_num(j, "commandSeconds", round_s(r->command_seconds));
    mprof_json_num(j, "captureDrainSeconds", round_s(r->drain_seconds));
    mprof_json_num(j, "exportSeconds", round_s(r->export_seconds));
    mprof_json_num(j, "gateSeconds", round_s(r->gate_seconds));
    mprof_json_num(j, "totalSeconds", round_s(r->total_seconds));
    mprof_json_obj_end(j);
    if (r->store)
        store_json(j, r->store);
    mprof_json_obj_end(j);
}

int mprof__ci_report_write(const mprof_ci_report *report, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    mprof_json j;
    mprof_json_init(&j, f, 1);
    write_json(&j, report);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}

/* ---- reader --------------------------------------------------------------------------------- */

/* What a read report owns: the parsed text its strings point into, and its arrays. */
typedef struct owned {
    cJSON *root;
    const char **command;
    mprof_ci_report_run *runs;
} owned;

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

/* command[]: its strings (others are skipped); NULL when the report has no such array. */
static int read_command(const cJSON *cmd, owned *own, mprof_ci_report *r)
{
    if (!cJSON_IsArray(cmd))
        return 0;
    size_t n = (size_t)cJSON_GetArraySize(cmd);
    own->command = calloc(n ? n : 1, sizeof *own->command);
    if (!own->command)
        return -1;
    const cJSON *a;
    cJSON_ArrayForEach(a, cmd)
        if (cJSON_IsString(a) && a->valuestring)
            own->command[r->n_command++] = a->valuestring;
    r->command = own->command;
    return 0;
}

/* runs[]: each entry's side and frame export (NULL where an entry lacks them). */
static int read_runs(const cJSON *list, owned *own, mprof_ci_report *r)
{
    if (!cJSON_IsArray(list))
        return 0;
    size_t n = (size_t)cJSON_GetArraySize(list);
    own->runs = calloc(n ? n : 1, sizeof *own->runs);
    if (!own->runs)
        return -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        mprof_ci_report_run *x = &own->runs[r->n_runs++];
        x->side = jstr(e, "side");
        x->frame_export = jstr(e, "frameExport");
        x->frames = -1;
    }
    r->runs = own->runs;
    return 0;
}

int mprof__ci_report_parse(const char *json, size_t len, const char *name,
                           mprof_ci_report *report, char *err, size_t errlen)
{
    memset(report, 0, sizeof *report);
    owned *own = calloc(1, sizeof *own);
    if (!own) {
        tool_seterr(err, errlen, "out of memory");
        return -1;
    }
    report->owned = own;
    cJSON *root = own->root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        tool_seterr(err, errlen, "%s: not a JSON object", name);
        goto fail;
    }
    const char *schema = jstr(root, "schema");
    if (!schema || strcmp(schema, MPROF_CI_REPORT_SCHEMA) != 0) {
        tool_seterr(err, errlen, "%s: \"schema\" must be \"%s\"", name, MPROF_CI_REPORT_SCHEMA);
        goto fail;
    }
    report->verdict = jstr(root, "verdict");
    if (!mprof__ci_verdict_known(report->verdict)) {
        tool_seterr(err, errlen, "%s: \"verdict\" is missing or not one of pass, regression, "
                    "inconclusive, no-baseline, failed", name);
        goto fail;
    }
    report->git_sha = jstr(root, "gitSha");
    report->run_uid = jstr(root, "runUid");
    if (report->run_uid && !tool_is_random_id(report->run_uid)) {
        tool_seterr(err, errlen, "%s: \"runUid\" must be 32 lowercase hex digits", name);
        goto fail;
    }
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(root, "capture");
    const cJSON *bytes = cap ? cJSON_GetObjectItemCaseSensitive(cap, "bytes") : NULL;
    report->capture.path = jstr(cap, "path");
    report->capture.bytes = cJSON_IsNumber(bytes) && bytes->valuedouble >= 0 &&
                                    bytes->valuedouble < 9e18
                                ? (long long)bytes->valuedouble
                                : -1;
    report->frame_export = jstr(root, "frameExport");
    if (read_command(cJSON_GetObjectItemCaseSensitive(root, "command"), own, report) ||
        read_runs(cJSON_GetObjectItemCaseSensitive(root, "runs"), own, report)) {
        tool_seterr(err, errlen, "out of memory");
        goto fail;
    }
    return 0;
fail:
    mprof__ci_report_clear(report);
    return -1;
}

void mprof__ci_report_clear(mprof_ci_report *report)
{
    owned *own = report ? report->owned : NULL;
    if (own) {
        cJSON_Delete(own->root);
        free(own->command);
        free(own->runs);
        free(own);
    }
    if (report)
        memset(report, 0, sizeof *report);
}

const char *mprof__ci_report_locate(const char *report_path, const char *path, char *out,
                                    size_t n)
{
    FILE *probe = fopen(path, "rb");
    if (probe) {
        fclose(probe);
        return path;
    }
    if (!report_path || path[0] == '/')
        return path;
    /* A relative path in a report is relative to where ci ran; try the report's directory,
     * which is ci's --output-dir, too. */
    const char *slash = strrchr(report_path, '/');
    const char *rel = strchr(path, '/');
    if (!slash || !rel)
        return path;
    snprintf(out, n, "%.*s%s", (int)(slash - report_path), report_path, rel);
    return out;
}
