/*
 * store_json.c - between the run store and mprof's JSON files: a CI report (mprof.ciReport.v1)
 * or a frame export (mprof.frames.v1) becomes a run to store, and a stored run becomes frame
 * exports again, the rolling baseline that `mprof gate` reads.
 *
 * A frame export is parsed by the gate's own loader (mprof__gate_parse_run), so what the store
 * accepts is exactly what the gate accepts; the on/off-CPU arrays of the system-tracing contract
 * (frameOnCpuMs, frameOffCpuMs, aligned with frameTimesMs) are read beside it. Only the top
 * zones that carry per-frame self times are kept (MPROF_STORE_TOP_ZONES at most), since those are
 * what the gate attributes a regression to.
 */
#define _POSIX_C_SOURCE 200809L

#include "store/store_json.h"
#include "store/store_backend.h"

#include "gate/gate.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES (1u << 30)

static char *read_all(const char *path, size_t *out_len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        mprof__store_seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        if (len == cap) {
            char *nb = cap < MAX_FILE_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                mprof__store_seterr(err, errlen, "%s: too large or out of memory", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (!buf || ferror(f)) {
        mprof__store_seterr(err, errlen, "%s: cannot read: %s", path, buf ? strerror(errno) : "out of memory");
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *out_len = len;
    return buf;
}

/* An optional array aligned with the frames: NULL when absent, -1 when malformed. */
static int aligned_array(const cJSON *root, const char *key, size_t n, double **out)
{
    *out = NULL;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!a || cJSON_IsNull(a))
        return 0;
    if (!cJSON_IsArray(a) || (size_t)cJSON_GetArraySize(a) != n)
        return -1;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0.0) {
            free(v);
            return -1;
        }
        v[i++] = e->valuedouble;
    }
    *out = v;
    return 0;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

/* Sets *dst to a copy of src unless *dst is already set; -1 when out of memory. */
static int take(char **dst, const char *src)
{
    if (*dst || !src)
        return 0;
    *dst = mprof__store_strdup(src);
    return *dst ? 0 : -1;
}

mprof_store_result mprof__store_parse_export(const char *json, size_t len, const char *name,
                                             mprof_store_run *run, char *err, size_t errlen)
{
    mprof_gate_run g;
    char e[1024];
    if (mprof__gate_parse_run(json, len, name, 0, &g, e, sizeof e) != 0) {
        mprof__store_seterr(err, errlen, "%s", e);
        return MPROF_STORE_BAD_INPUT;
    }
    cJSON *root = cJSON_ParseWithLength(json, len);
    mprof_store_rep rep = {0};
    mprof_store_result rc = MPROF_STORE_OK;
    if (!root) {
        rc = MPROF_STORE_NOMEM;
        mprof__store_seterr(err, errlen, "%s: out of memory", name);
        goto out;
    }
    rep.n_frames = g.n_frames;
    rep.frames_ms = g.frames_ms;
    g.frames_ms = NULL;
    if (aligned_array(root, "frameOnCpuMs", rep.n_frames, &rep.on_cpu_ms) ||
        aligned_array(root, "frameOffCpuMs", rep.n_frames, &rep.off_cpu_ms)) {
        rc = MPROF_STORE_BAD_INPUT;
        mprof__store_seterr(err, errlen, "%s: \"frameOnCpuMs\" or \"frameOffCpuMs\" is not an array of "
               "non-negative numbers as long as \"frameTimesMs\"", name);
        goto out;
    }
    if (!rep.on_cpu_ms != !rep.off_cpu_ms) {
        /* One without the other cannot be summarised as on/off CPU: keep neither. */
        free(rep.on_cpu_ms);
        free(rep.off_cpu_ms);
        rep.on_cpu_ms = rep.off_cpu_ms = NULL;
    }
    size_t keep = 0;
    for (size_t z = 0; z < g.n_zones; z++)
        keep += g.zones[z].self_ms != NULL;
    if (keep > MPROF_STORE_TOP_ZONES)
        keep = MPROF_STORE_TOP_ZONES;
    rep.zones = keep ? calloc(keep, sizeof *rep.zones) : NULL;
    if (keep && !rep.zones) {
        rc = MPROF_STORE_NOMEM;
        mprof__store_seterr(err, errlen, "%s: out of memory", name);
        goto out;
    }
    /* The export lists zones by self time, largest first. */
    for (size_t z = 0; z < g.n_zones && rep.n_zones < keep; z++) {
        mprof_gate_zone *gz = &g.zones[z];
        if (!gz->self_ms)
            continue;
        mprof_store_zone *sz = &rep.zones[rep.n_zones++];
        sz->name = gz->name;
        gz->name = NULL;
        sz->self_ms = gz->self_ms;
        gz->self_ms = NULL;
        sz->self_total_ms = gz->self_total_ms;
    }
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(root, "capture");
    if (take(&run->git_sha, g.git_sha) || take(&run->host, g.hostname) ||
        take(&run->cpu, g.cpu) || take(&run->build_type, g.build_type) ||
        take(&run->start_time, g.start_time) || take(&run->command, jstr(cap, "commandLine")) ||
        take(&run->artifact_path, jstr(cap, "file"))) {
        rc = MPROF_STORE_NOMEM;
        mprof__store_seterr(err, errlen, "%s: out of memory", name);
        goto out;
    }
    mprof_store_rep *nr = realloc(run->reps, (run->n_reps + 1) * sizeof *nr);
    if (!nr) {
        rc = MPROF_STORE_NOMEM;
        mprof__store_seterr(err, errlen, "%s: out of memory", name);
        goto out;
    }
    run->reps = nr;
    run->reps[run->n_reps++] = rep;
    memset(&rep, 0, sizeof rep);
out:
    free(rep.frames_ms);
    free(rep.on_cpu_ms);
    free(rep.off_cpu_ms);
    for (size_t z = 0; z < rep.n_zones; z++) {
        free(rep.zones[z].name);
        free(rep.zones[z].self_ms);
    }
    free(rep.zones);
    cJSON_Delete(root);
    mprof__gate_run_clear(&g);
    return rc;
}

static mprof_store_result add_export_file(const char *path, const char *report_path,
                                          mprof_store_run *run, char *err, size_t errlen)
{
    char alt[4096];
    const char *use = path;
    FILE *probe = fopen(path, "rb");
    if (probe) {
        fclose(probe);
    } else if (report_path && path[0] != '/') {
        /* A relative path in a report is relative to where ci ran; try the report's directory,
         * which is ci's --output-dir, too. */
        const char *slash = strrchr(report_path, '/');
        const char *rel = strchr(path, '/');
        if (slash && rel) {
            snprintf(alt, sizeof alt, "%.*s%s", (int)(slash - report_path), report_path, rel);
            use = alt;
        }
    }
    size_t len;
    char *text = read_all(use, &len, err, errlen);
    if (!text)
        return MPROF_STORE_BAD_INPUT;
    mprof_store_result rc = mprof__store_parse_export(text, len, use, run, err, errlen);
    free(text);
    return rc;
}

/* The command line of a CI report: its arguments joined by spaces, single-quoted where needed. */
static char *join_command(const cJSON *cmd)
{
    size_t cap = 64, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
    const cJSON *a;
    cJSON_ArrayForEach(a, cmd)
    {
        if (!cJSON_IsString(a) || !a->valuestring)
            continue;
        const char *s = a->valuestring;
        int quote = !*s || strpbrk(s, " \t'\"\\$`*?;&|<>()[]{}") != NULL;
        size_t need = len + strlen(s) * 4 + 4;
        if (need >= cap) {
            char *n = realloc(out, need * 2);
            if (!n) {
                free(out);
                return NULL;
            }
            out = n;
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

mprof_store_result mprof__store_parse_file(const char *json, size_t len, const char *name,
                                           mprof_store_run *run, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    run->artifact_bytes = -1;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        mprof__store_seterr(err, errlen, "%s: not a JSON object (a CI report or a frame export)", name);
        return MPROF_STORE_BAD_INPUT;
    }
    const char *schema = jstr(root, "schema");
    mprof_store_result rc = MPROF_STORE_OK;
    if (schema && strcmp(schema, MPROF_FRAMES_SCHEMA) == 0) {
        cJSON_Delete(root);
        rc = mprof__store_parse_export(json, len, name, run, err, errlen);
        if (rc == MPROF_STORE_OK && !(run->verdict = mprof__store_strdup("no-baseline")))
            rc = MPROF_STORE_NOMEM;
        goto done;
    }
    if (!schema || strcmp(schema, "mprof.ciReport.v1") != 0) {
        cJSON_Delete(root);
        mprof__store_seterr(err, errlen, "%s: \"schema\" must be \"mprof.ciReport.v1\" (ci-report.json) or \"%s\" "
               "(mprof export --format frames)", name, MPROF_FRAMES_SCHEMA);
        return MPROF_STORE_BAD_INPUT;
    }
    const char *verdict = jstr(root, "verdict");
    static const char *const known[] = {"pass", "regression", "inconclusive", "no-baseline",
                                        "failed"};
    int ok = 0;
    for (size_t i = 0; verdict && i < sizeof known / sizeof known[0]; i++)
        ok |= strcmp(verdict, known[i]) == 0;
    if (!ok) {
        cJSON_Delete(root);
        mprof__store_seterr(err, errlen, "%s: \"verdict\" is missing or not one of pass, regression, "
               "inconclusive, no-baseline, failed", name);
        return MPROF_STORE_BAD_INPUT;
    }
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(root, "command");
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(root, "capture");
    const cJSON *bytes = cap ? cJSON_GetObjectItemCaseSensitive(cap, "bytes") : NULL;
    if (cJSON_IsNumber(bytes) && bytes->valuedouble >= 0 && bytes->valuedouble < 9e18)
        run->artifact_bytes = (int64_t)bytes->valuedouble;
    if (!(run->verdict = mprof__store_strdup(verdict)) || take(&run->git_sha, jstr(root, "gitSha")) ||
        take(&run->artifact_path, jstr(cap, "path")) ||
        (cJSON_IsArray(cmd) && !(run->command = join_command(cmd)))) {
        rc = MPROF_STORE_NOMEM;
        mprof__store_seterr(err, errlen, "out of memory");
    }
    /* The repetitions: the frame export of each current-side entry of runs[] (mprof ci --runs;
     * baseline-side entries measure the baseline build and are not this run), else the one
     * frameExport. A failed run may have none, and is stored without frames. */
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "runs");
    if (!cJSON_IsArray(list))
        list = NULL;
    const cJSON *one = cJSON_GetObjectItemCaseSensitive(root, "frameExport");
    size_t from_list = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        if (rc != MPROF_STORE_OK)
            break;
        const char *side = jstr(e, "side"), *path = jstr(e, "frameExport");
        if (!cJSON_IsObject(e) || (side && strcmp(side, "current") != 0) || !path)
            continue;
        rc = add_export_file(path, name, run, err, errlen);
        from_list++;
    }
    if (rc == MPROF_STORE_OK && !from_list && cJSON_IsString(one) && one->valuestring)
        rc = add_export_file(one->valuestring, name, run, err, errlen);
    cJSON_Delete(root);
done:
    if (rc == MPROF_STORE_OK && mprof__store_summarise(run) != 0) {
        rc = MPROF_STORE_NOMEM;
        mprof__store_seterr(err, errlen, "out of memory");
    }
    if (rc != MPROF_STORE_OK)
        mprof__store_run_clear(run);
    return rc;
}

mprof_store_result mprof__store_load_file(const char *path, mprof_store_run *run, char *err,
                                          size_t errlen)
{
    memset(run, 0, sizeof *run);
    size_t len;
    char *text = read_all(path, &len, err, errlen);
    if (!text)
        return MPROF_STORE_BAD_INPUT;
    mprof_store_result rc = mprof__store_parse_file(text, len, path, run, err, errlen);
    free(text);
    return rc;
}

static cJSON *num_array(const double *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) {
        cJSON *x = cJSON_CreateNumber(v[i]);
        if (!x) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, x);
    }
    return a;
}

static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v && *v)
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

char *mprof__store_export_json(const mprof_store_run *run, size_t rep_index)
{
    if (rep_index >= run->n_reps)
        return NULL;
    const mprof_store_rep *r = &run->reps[rep_index];
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    int ok = 1;
    cJSON_AddStringToObject(j, "schema", MPROF_FRAMES_SCHEMA);
    cJSON *cap = cJSON_AddObjectToObject(j, "capture");
    if (cap) {
        char label[64];
        snprintf(label, sizeof label, "store run %lld repetition %zu", (long long)run->id,
                 rep_index + 1);
        cJSON_AddStringToObject(cap, "file", run->artifact_path ? run->artifact_path : label);
        add_str(cap, "commandLine", run->command);
        add_str(cap, "startTime", run->start_time);
        add_str(cap, "gitSha", run->git_sha);
        cJSON_AddStringToObject(cap, "gitShaSource", "store");
        add_str(cap, "hostname", run->host);
        add_str(cap, "cpu", run->cpu);
        add_str(cap, "buildType", run->build_type);
        cJSON_AddBoolToObject(cap, "complete", 1);
        cJSON_AddNumberToObject(cap, "storeRunId", (double)run->id);
        cJSON_AddNumberToObject(cap, "storeRepetition", (double)(rep_index + 1));
    }
    cJSON_AddNullToObject(j, "frameSet");
    cJSON_AddNumberToObject(j, "frameCount", (double)r->n_frames);
    if (r->n_frames) {
        cJSON_AddNumberToObject(j, "p50FrameTimeMs", r->p50_ms);
        cJSON_AddNumberToObject(j, "p90FrameTimeMs", r->p90_ms);
        cJSON_AddNumberToObject(j, "p95FrameTimeMs", r->p95_ms);
        cJSON_AddNumberToObject(j, "p99FrameTimeMs", r->p99_ms);
        cJSON_AddNumberToObject(j, "meanFrameTimeMs", r->mean_ms);
    }
    cJSON *a = num_array(r->frames_ms, r->frames_ms ? r->n_frames : 0);
    ok &= a != NULL;
    if (a)
        cJSON_AddItemToObject(j, "frameTimesMs", a);
    if (r->on_cpu_ms && r->off_cpu_ms) {
        cJSON *on = num_array(r->on_cpu_ms, r->n_frames), *off = num_array(r->off_cpu_ms, r->n_frames);
        ok &= on && off;
        if (on)
            cJSON_AddItemToObject(j, "frameOnCpuMs", on);
        if (off)
            cJSON_AddItemToObject(j, "frameOffCpuMs", off);
    }
    cJSON *zones = cJSON_AddArrayToObject(j, "zones");
    for (size_t z = 0; zones && z < r->n_zones; z++) {
        const mprof_store_zone *sz = &r->zones[z];
        cJSON *o = cJSON_CreateObject();
        if (!o) {
            ok = 0;
            break;
        }
        cJSON_AddItemToArray(zones, o);
        cJSON_AddStringToObject(o, "name", sz->name);
        if (isfinite(sz->self_total_ms))
            cJSON_AddNumberToObject(o, "selfTotalMs", sz->self_total_ms);
        if (sz->self_ms) {
            cJSON *s = num_array(sz->self_ms, r->n_frames);
            ok &= s != NULL;
            if (s)
                cJSON_AddItemToObject(o, "selfPerFrameMs", s);
        }
    }
    cJSON_AddArrayToObject(j, "warnings");
    char *text = ok && zones && cap ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return text;
}
