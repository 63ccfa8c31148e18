/*
 * store_json.c - between the run store and mprof's JSON files: a CI report (mprof.ciReport.v1)
 * or a frame export (mprof.frames.v1) becomes a run to store, and a stored run becomes frame
 * exports again, the rolling baseline that `mprof gate` reads.
 *
 * A frame export is read by the format's own reader (export/frames_run.h), so what the store
 * accepts is exactly what the gate accepts; the store asks it also for the on/off-CPU arrays that
 * come without a "system" object, as its own baseline exports carry them. Only the top zones that
 * carry per-frame self times are kept (MPROF_STORE_TOP_ZONES at most), since those are what the
 * gate attributes a regression to.
 */
#define _POSIX_C_SOURCE 200809L

#include "store/store_json.h"

#include "ci/report.h"
#include "util/tool.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES ((size_t)1 << 30) /* refuse reports and exports past 1 GiB */

/* Sets *dst to a copy of src unless *dst is already set; -1 when out of memory. */
static int take(char **dst, const char *src)
{
    if (*dst || !src)
        return 0;
    *dst = tool_strdup(src);
    return *dst ? 0 : -1;
}

/* Leaves in rep what the store keeps of a repetition (store.h): frames, on/off-CPU time when it
 * has both, and the first MPROF_STORE_TOP_ZONES zones with per-frame self times (the export lists
 * zones by self time, largest first) with their name, totals and self times. */
static void keep_stored_parts(mprof_frames_run *rep)
{
    if (!rep->on_cpu_ms != !rep->off_cpu_ms) {
        /* One without the other cannot be summarised as on/off CPU: keep neither. */
        free(rep->on_cpu_ms);
        free(rep->off_cpu_ms);
        rep->on_cpu_ms = rep->off_cpu_ms = NULL;
    }
    free(rep->cpu_ms);
    free(rep->machine_busy);
    free(rep->system_why_not);
    rep->cpu_ms = rep->machine_busy = NULL;
    rep->system_why_not = NULL;
    rep->context_switches = rep->cpu_usage = 0;
    size_t kept = 0;
    for (size_t z = 0; z < rep->n_zones; z++) {
        mprof_frames_zone *zn = &rep->zones[z];
        free(zn->function);
        free(zn->incl_ms);
        free(zn->self_off_ms);
        zn->function = NULL;
        zn->incl_ms = zn->self_off_ms = NULL;
        if (zn->self_ms && kept < MPROF_STORE_TOP_ZONES) {
            rep->zones[kept++] = *zn;
        } else {
            free(zn->name);
            free(zn->self_ms);
        }
    }
    rep->n_zones = kept;
    if (!kept) {
        free(rep->zones);
        rep->zones = NULL;
    }
}

mprof_store_result mprof__store_parse_export(const char *json, size_t len, const char *name,
                                             mprof_store_run *run, char *err, size_t errlen)
{
    mprof_frames_run rep;
    if (mprof__frames_parse(json, len, name, 0, MPROF_FRAMES_CPU_WITHOUT_SYSTEM, &rep, err,
                            errlen) != 0)
        return MPROF_STORE_BAD_INPUT;
    keep_stored_parts(&rep);
    mprof_frames_run *nr = NULL;
    if (take(&run->git_sha, rep.git_sha) || take(&run->host, rep.hostname) ||
        take(&run->cpu, rep.cpu) || take(&run->build_type, rep.build_type) ||
        take(&run->start_time, rep.start_time) || take(&run->command, rep.command_line) ||
        take(&run->artifact_path, rep.file) ||
        !(nr = realloc(run->reps, (run->n_reps + 1) * sizeof *nr))) {
        mprof__frames_run_clear(&rep);
        tool_seterr(err, errlen, "%s: out of memory", name);
        return MPROF_STORE_NOMEM;
    }
    run->reps = nr;
    run->reps[run->n_reps++] = rep;
    return MPROF_STORE_OK;
}

typedef mprof_store_result (*parse_fn)(const char *json, size_t len, const char *name,
                                       mprof_store_run *run, char *err, size_t errlen);

/* The file at path given to parse. */
static mprof_store_result parse_path(const char *path, parse_fn parse, mprof_store_run *run,
                                     char *err, size_t errlen)
{
    size_t len;
    char *text = tool_read_file(path, MAX_FILE_BYTES, &len, err, errlen);
    if (!text)
        return MPROF_STORE_BAD_INPUT;
    mprof_store_result rc = parse(text, len, path, run, err, errlen);
    free(text);
    return rc;
}

/* Adds the frame export at path, which the report at report_path names, as a repetition. */
static mprof_store_result add_export_file(const char *path, const char *report_path,
                                          mprof_store_run *run, char *err, size_t errlen)
{
    char alt[4096];
    const char *use = mprof__ci_report_locate(report_path, path, alt, sizeof alt);
    return parse_path(use, mprof__store_parse_export, run, err, errlen);
}

/* The command line of a CI report: its arguments joined by spaces, single-quoted where needed. */
static char *join_command(const char *const *args, size_t n)
{
    size_t cap = 64, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *s = args[i];
        int quote = !*s || strpbrk(s, " \t'\"\\$`*?;&|<>()[]{}") != NULL;
        size_t need = len + strlen(s) * 4 + 4;
        if (need >= cap) {
            char *nb = realloc(out, need * 2);
            if (!nb) {
                free(out);
                return NULL;
            }
            out = nb;
            cap = need * 2;
        }
        if (len)
            out[len++] = ' ';
        if (quote)
            out[len++] = '\'';
        for (; *s; s++) {
            if (*s == '\'' && quote) {
                memcpy(out + len, "'\\''", 4);
                len += 4;
            } else {
                out[len++] = *s;
            }
        }
        if (quote)
            out[len++] = '\'';
        out[len] = '\0';
    }
    return out;
}

/* A CI report into run: its verdict, commit, command and capture, and as repetitions the frame
 * export of each current-side entry of runs[] (mprof ci --runs; baseline-side entries measure the
 * baseline build and are not this run), else the one frameExport. A failed run may have none,
 * and is stored without frames. */
static mprof_store_result from_report(const char *json, size_t len, const char *name,
                                      mprof_store_run *run, char *err, size_t errlen)
{
    mprof_ci_report rep;
    if (mprof__ci_report_parse(json, len, name, &rep, err, errlen) != 0)
        return MPROF_STORE_BAD_INPUT;
    mprof_store_result rc = MPROF_STORE_OK;
    run->artifact_bytes = rep.capture.bytes;
    if (!(run->verdict = tool_strdup(rep.verdict)) || take(&run->git_sha, rep.git_sha) ||
        take(&run->uid, rep.run_uid) || take(&run->artifact_path, rep.capture.path) ||
        (rep.command && !(run->command = join_command(rep.command, rep.n_command)))) {
        rc = MPROF_STORE_NOMEM;
        tool_seterr(err, errlen, "out of memory");
    }
    size_t from_list = 0;
    for (size_t i = 0; rc == MPROF_STORE_OK && i < rep.n_runs; i++) {
        const mprof_ci_report_run *x = &rep.runs[i];
        if ((x->side && strcmp(x->side, "current") != 0) || !x->frame_export)
            continue;
        rc = add_export_file(x->frame_export, name, run, err, errlen);
        from_list++;
    }
    if (rc == MPROF_STORE_OK && !from_list && rep.frame_export)
        rc = add_export_file(rep.frame_export, name, run, err, errlen);
    mprof__ci_report_clear(&rep);
    return rc;
}

mprof_store_result mprof__store_parse_file(const char *json, size_t len, const char *name,
                                           mprof_store_run *run, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    run->artifact_bytes = -1;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        tool_seterr(err, errlen, "%s: not a JSON object (a CI report or a frame export)", name);
        return MPROF_STORE_BAD_INPUT;
    }
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schema");
    const char *schema = cJSON_IsString(sv) && sv->valuestring ? sv->valuestring : "";
    int frames = strcmp(schema, MPROF_FRAMES_SCHEMA) == 0;
    int report = strcmp(schema, MPROF_CI_REPORT_SCHEMA) == 0;
    cJSON_Delete(root);
    mprof_store_result rc;
    if (frames) {
        rc = mprof__store_parse_export(json, len, name, run, err, errlen);
        if (rc == MPROF_STORE_OK && !(run->verdict = tool_strdup("no-baseline")))
            rc = MPROF_STORE_NOMEM;
    } else if (report) {
        rc = from_report(json, len, name, run, err, errlen);
    } else {
        tool_seterr(err, errlen, "%s: \"schema\" must be \"%s\" (ci-report.json) or \"%s\" "
                    "(mprof export --format frames)", name, MPROF_CI_REPORT_SCHEMA,
                    MPROF_FRAMES_SCHEMA);
        return MPROF_STORE_BAD_INPUT;
    }
    if (rc == MPROF_STORE_OK && mprof__store_summarise(run) != 0) {
        rc = MPROF_STORE_NOMEM;
        tool_seterr(err, errlen, "out of memory");
    }
    if (rc != MPROF_STORE_OK)
        mprof__store_run_clear(run);
    return rc;
}

mprof_store_result mprof__store_load_file(const char *path, mprof_store_run *run, char *err,
                                          size_t errlen)
{
    memset(run, 0, sizeof *run);
    return parse_path(path, mprof__store_parse_file, run, err, errlen);
}

/* The store's own members of a baseline export's "capture": which run and repetition it is. */
typedef struct store_ids {
    int64_t run_id;
    size_t repetition;
} store_ids;

static void capture_ids(mprof_json *j, const void *ctx)
{
    const store_ids *ids = ctx;
    mprof_json_num(j, "storeRunId", (double)ids->run_id);
    mprof_json_num(j, "storeRepetition", (double)ids->repetition);
}

int mprof__store_write_export(const mprof_store_run *run, size_t rep_index, FILE *out)
{
    if (rep_index >= run->n_reps)
        return -1;
    /* The repetition as it is stored, under the identity of its run. */
    mprof_frames_run view = run->reps[rep_index];
    char label[64];
    snprintf(label, sizeof label, "store run %lld repetition %zu", (long long)run->id,
             rep_index + 1);
    view.file = run->artifact_path ? run->artifact_path : label;
    view.command_line = run->command;
    view.start_time = run->start_time;
    view.git_sha = run->git_sha;
    view.hostname = run->host;
    view.cpu = run->cpu;
    view.build_type = run->build_type;
    store_ids ids = {run->id, rep_index + 1};
    mprof_frames_origin origin = {.git_sha_source = "store", .complete = 1,
                                  .capture_extra = capture_ids, .ctx = &ids};
    return mprof__frames_write(&view, &origin, out);
}
