/*
 * frames_read.c - frame exports (mprof.frames.v1) read into the run model of frames_run.h.
 *
 * A frame export comes from outside as often as from mprof export (a baseline kept in a
 * repository, a file a CI job downloaded, a run store's rolling baseline), so every value is
 * checked before it is believed: numbers must be finite and non-negative, per-frame arrays as
 * long as frameTimesMs, identity fields strings. A bad file gives one message that names the
 * file and the problem, and leaves nothing allocated. What the gate and the store accept is
 * therefore one rule, written once.
 */
#define _POSIX_C_SOURCE 200809L

#include "export/frames_run.h"
#include "util/tool.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_EXPORT_BYTES ((size_t)1 << 30) /* refuse frame exports past 1 GiB */

/* A string member, copied; NULL when absent or JSON null. -1 when present with another type. */
static int opt_string(const cJSON *obj, const char *key, char **out)
{
    *out = NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v) || !v->valuestring)
        return -1;
    *out = tool_strdup(v->valuestring);
    return *out ? 0 : -1;
}

/* A string member that is only informative (where the capture is, how it was started): copied
 * when it is a string, NULL otherwise. -1 out of memory. */
static int info_string(const cJSON *obj, const char *key, char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!cJSON_IsString(v) || !v->valuestring)
        return 0;
    *out = tool_strdup(v->valuestring);
    return *out ? 0 : -1;
}

/* Reads an array of non-negative finite numbers of exactly want entries (want == SIZE_MAX: any
 * length), dropping the first skip. Returns 0, or -1 with what is wrong in why. */
static int number_array(const cJSON *arr, size_t want, size_t skip, double **out, size_t *out_n,
                        const char **why)
{
    *out = NULL;
    *out_n = 0;
    if (!cJSON_IsArray(arr)) {
        *why = "is not an array";
        return -1;
    }
    size_t n = (size_t)cJSON_GetArraySize(arr);
    if (want != SIZE_MAX && n != want) {
        *why = "has a different length from frameTimesMs";
        return -1;
    }
    size_t keep = n > skip ? n - skip : 0;
    double *v = malloc((keep ? keep : 1) * sizeof *v);
    if (!v) {
        *why = "does not fit in memory";
        return -1;
    }
    size_t i = 0, k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0.0) {
            free(v);
            *why = "holds an entry that is not a non-negative number";
            return -1;
        }
        if (i++ >= skip)
            v[k++] = e->valuedouble;
    }
    *out = v;
    *out_n = k;
    return 0;
}

/* Reads the members keys[0..n) of obj that are there (null counts as there unless
 * null_absent) as arrays aligned with frameTimesMs (total_frames entries, the first skip
 * dropped) into *dst[k]. Returns 0, or -1 with the member in *bad_key and what is wrong in *why. */
static int aligned_arrays(const cJSON *obj, const char *const *keys, double **const *dst, int n,
                          size_t total_frames, size_t skip, int null_absent, const char **bad_key,
                          const char **why)
{
    for (int k = 0; k < n; k++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, keys[k]);
        if (!a || (null_absent && cJSON_IsNull(a)))
            continue;
        size_t got;
        if (number_array(a, total_frames, skip, dst[k], &got, why)) {
            *bad_key = keys[k];
            return -1;
        }
    }
    return 0;
}

/* The critical path (with switch reasons): "switchReasons", "criticalPath",
 * "pathTruncatedFrames", and framePreemptedMs, frameBlockedMs and frameWaitRunnableMs, which
 * must all be there when switchReasons is true, and must add up: preempted + blocked is the
 * off-CPU time, the waits' runnable part lies inside the blocked time, and what the decision
 * removes never exceeds the frame. Returns 0, or -1 with err set. */
static int parse_path(const cJSON *root, const cJSON *sys, const char *name, size_t total_frames,
                      size_t skip, mprof_frames_run *run, char *err, size_t errlen)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(sys, "switchReasons");
    if (b && !cJSON_IsBool(b)) {
        tool_seterr(err, errlen, "%s: \"system\": \"switchReasons\" is not true or false", name);
        return -1;
    }
    run->switch_reasons = b && cJSON_IsTrue(b);
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(sys, "criticalPath");
    if (cp && !cJSON_IsNull(cp)) {
        if (cJSON_IsString(cp) && strcmp(cp->valuestring, "wakers") == 0)
            run->critical_path = 2;
        else if (cJSON_IsString(cp) && strcmp(cp->valuestring, "inferred") == 0)
            run->critical_path = 1;
        else {
            tool_seterr(err, errlen, "%s: \"system\": \"criticalPath\" must be \"wakers\", "
                        "\"inferred\" or null (an export from a newer mprof?)", name);
            return -1;
        }
    }
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(sys, "pathTruncatedFrames");
    if (tr) {
        if (!cJSON_IsNumber(tr) || !(tr->valuedouble >= 0) || tr->valuedouble > 1e15 ||
            tr->valuedouble != floor(tr->valuedouble)) {
            tool_seterr(err, errlen, "%s: \"system\": \"pathTruncatedFrames\" is not a count",
                        name);
            return -1;
        }
        run->path_truncated = (size_t)tr->valuedouble;
    }
    if (run->critical_path && !run->switch_reasons) {
        tool_seterr(err, errlen, "%s: \"system\": \"criticalPath\" is set but \"switchReasons\" "
                    "is false", name);
        return -1;
    }
    if (!run->switch_reasons)
        return 0;
    const char *const ak[3] = {"framePreemptedMs", "frameBlockedMs", "frameWaitRunnableMs"};
    double **const av[3] = {&run->preempted_ms, &run->blocked_ms, &run->wait_runnable_ms};
    const char *bad = NULL, *why = NULL;
    if (aligned_arrays(root, ak, av, 3, total_frames, skip, 0, &bad, &why)) {
        tool_seterr(err, errlen, "%s: \"%s\" %s", name, bad, why);
        return -1;
    }
    for (int k = 0; k < 3; k++)
        if (!*av[k]) {
            tool_seterr(err, errlen, "%s: \"system\": \"switchReasons\" is true but \"%s\" is "
                        "missing", name, ak[k]);
            return -1;
        }
    if (!run->off_cpu_ms) {
        tool_seterr(err, errlen, "%s: \"system\": \"switchReasons\" is true but "
                    "\"frameOffCpuMs\" is missing", name);
        return -1;
    }
    /* The export rounds each figure to a nanosecond, so sums may differ by a few. */
    const double slack = 1e-5;
    for (size_t i = 0; i < run->n_frames; i++) {
        const char *what = NULL;
        if (fabs(run->preempted_ms[i] + run->blocked_ms[i] - run->off_cpu_ms[i]) > slack)
            what = "framePreemptedMs + frameBlockedMs is not frameOffCpuMs";
        else if (run->wait_runnable_ms[i] > run->blocked_ms[i] + slack)
            what = "frameWaitRunnableMs exceeds frameBlockedMs";
        else if (run->preempted_ms[i] + run->wait_runnable_ms[i] > run->frames_ms[i] + slack)
            what = "framePreemptedMs + frameWaitRunnableMs exceeds the frame time";
        if (what) {
            tool_seterr(err, errlen, "%s: frame %zu: %s", name, i + run->n_skipped, what);
            return -1;
        }
    }
    return 0;
}

/* System tracing (contract with the system-tracing export): the "system" object and, when it
 * says contextSwitches, the per-frame arrays aligned with frameTimesMs. An export without the
 * object (older versions) simply has no system data. Returns 0, or -1 with err set. */
static int parse_system(const cJSON *root, const char *name, size_t total_frames, size_t skip,
                        mprof_frames_run *run, char *err, size_t errlen)
{
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(root, "system");
    if (!sys || cJSON_IsNull(sys))
        return 0;
    if (!cJSON_IsObject(sys)) {
        tool_seterr(err, errlen, "%s: \"system\" is not an object", name);
        return -1;
    }
    const char *bk[2] = {"contextSwitches", "cpuUsage"};
    int *bv[2] = {&run->context_switches, &run->cpu_usage};
    for (int k = 0; k < 2; k++) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(sys, bk[k]);
        if (b && !cJSON_IsBool(b)) {
            tool_seterr(err, errlen, "%s: \"system\": \"%s\" is not true or false", name, bk[k]);
            return -1;
        }
        *bv[k] = b && cJSON_IsTrue(b);
    }
    if (opt_string(sys, "whyNot", &run->system_why_not)) {
        tool_seterr(err, errlen, "%s: \"system\": \"whyNot\" is not a string or null", name);
        return -1;
    }
    const char *const ak[4] = {"frameOnCpuMs", "frameOffCpuMs", "frameCpuMs",
                               "frameMachineBusy"};
    double **const av[4] = {&run->on_cpu_ms, &run->off_cpu_ms, &run->cpu_ms, &run->machine_busy};
    const char *bad = NULL, *why = NULL;
    if (aligned_arrays(root, ak, av, 4, total_frames, skip, 0, &bad, &why)) {
        tool_seterr(err, errlen, "%s: \"%s\" %s", name, bad, why);
        return -1;
    }
    for (size_t i = 0; run->machine_busy && i < run->n_frames; i++)
        if (run->machine_busy[i] > 1.0) {
            tool_seterr(err, errlen, "%s: \"frameMachineBusy\" holds %g, above 1", name,
                        run->machine_busy[i]);
            return -1;
        }
    /* The decision needs the off-CPU times; a capture that claims context switches without
     * them is treated as having none (the comparison then says so). */
    if (!run->off_cpu_ms)
        run->context_switches = 0;
    if (!run->machine_busy)
        run->cpu_usage = 0;
    return parse_path(root, sys, name, total_frames, skip, run, err, errlen);
}

/* frameOnCpuMs and frameOffCpuMs of an export without a "system" object
 * (MPROF_FRAMES_CPU_WITHOUT_SYSTEM): each absent, null, or as long as frameTimesMs. */
static int parse_cpu_arrays(const cJSON *root, const char *name, size_t total_frames, size_t skip,
                            mprof_frames_run *run, char *err, size_t errlen)
{
    const char *const ak[2] = {"frameOnCpuMs", "frameOffCpuMs"};
    double **const av[2] = {&run->on_cpu_ms, &run->off_cpu_ms};
    const char *bad = NULL, *why = NULL;
    if (aligned_arrays(root, ak, av, 2, total_frames, skip, 1, &bad, &why)) {
        tool_seterr(err, errlen, "%s: \"frameOnCpuMs\" or \"frameOffCpuMs\" is not an array of "
                    "non-negative numbers as long as \"frameTimesMs\"", name);
        return -1;
    }
    return 0;
}

/* The export's own figures of its frames; a member that is not a number reads as 0. */
static void parse_summary(const cJSON *root, mprof_frames_summary *s)
{
    const char *keys[6] = {"frameCount", "p50FrameTimeMs", "p90FrameTimeMs", "p95FrameTimeMs",
                           "p99FrameTimeMs", "meanFrameTimeMs"};
    double v[6];
    for (int k = 0; k < 6; k++) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, keys[k]);
        v[k] = cJSON_IsNumber(n) ? n->valuedouble : 0.0;
    }
    s->runs = 1;
    s->frames = v[0] >= 0 && v[0] < 1e18 ? (size_t)v[0] : 0;
    s->p50_ms = v[1];
    s->p90_ms = v[2];
    s->p95_ms = v[3];
    s->p99_ms = v[4];
    s->mean_ms = v[5];
}

/* One zone of "zones" (zi), whose per-frame arrays have total_frames entries. */
static int parse_zone(const cJSON *z, size_t zi, const char *name, size_t total_frames, size_t skip,
                      mprof_frames_zone *gz, char *err, size_t errlen)
{
    const cJSON *zn = cJSON_GetObjectItemCaseSensitive(z, "name");
    if (!cJSON_IsObject(z) || !cJSON_IsString(zn) || !zn->valuestring) {
        tool_seterr(err, errlen, "%s: zones[%zu] has no \"name\" string", name, zi);
        return -1;
    }
    gz->name = tool_strdup(zn->valuestring);
    const cJSON *zf = cJSON_GetObjectItemCaseSensitive(z, "function");
    int has_function = cJSON_IsString(zf) && zf->valuestring && zf->valuestring[0];
    if (has_function)
        gz->function = tool_strdup(zf->valuestring);
    if (!gz->name || (has_function && !gz->function)) {
        tool_seterr(err, errlen, "%s: out of memory", name);
        return -1;
    }
    gz->total_frames = total_frames;
    const char *tk[2] = {"selfTotalMs", "totalMs"};
    double *tv[2] = {&gz->self_total_ms, &gz->incl_total_ms};
    for (int k = 0; k < 2; k++) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(z, tk[k]);
        if (!t)
            continue;
        if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) || t->valuedouble < 0.0) {
            tool_seterr(err, errlen, "%s: zone \"%s\": \"%s\" is not a non-negative number", name,
                        gz->name, tk[k]);
            return -1;
        }
        *tv[k] = t->valuedouble;
    }
    const char *const ak[3] = {"selfPerFrameMs", "perFrameMs", "selfOffCpuPerFrameMs"};
    double **const av[3] = {&gz->self_ms, &gz->incl_ms, &gz->self_off_ms};
    const char *bad = NULL, *why = NULL;
    if (aligned_arrays(z, ak, av, 3, total_frames, skip, 0, &bad, &why)) {
        tool_seterr(err, errlen, "%s: zone \"%s\": \"%s\" %s", name, gz->name, bad, why);
        return -1;
    }
    return 0;
}

/* The "capture" object: identity checked (the machine guard compares it), the rest taken when it
 * is a string. */
static int parse_capture(const cJSON *root, const char *name, mprof_frames_run *run, char *err,
                         size_t errlen)
{
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(root, "capture");
    if (!cap)
        return 0;
    if (!cJSON_IsObject(cap)) {
        tool_seterr(err, errlen, "%s: \"capture\" is not an object", name);
        return -1;
    }
    if (opt_string(cap, "process", &run->process) || opt_string(cap, "gitSha", &run->git_sha) ||
        opt_string(cap, "hostname", &run->hostname) || opt_string(cap, "cpu", &run->cpu) ||
        opt_string(cap, "buildType", &run->build_type) ||
        opt_string(cap, "startTime", &run->start_time)) {
        tool_seterr(err, errlen, "%s: a \"capture\" identity field is not a string", name);
        return -1;
    }
    if (info_string(cap, "file", &run->file) ||
        info_string(cap, "commandLine", &run->command_line)) {
        tool_seterr(err, errlen, "%s: out of memory", name);
        return -1;
    }
    return 0;
}

int mprof__frames_parse(const char *json, size_t len, const char *name, int skip_frames,
                        unsigned flags, mprof_frames_run *run, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    const char *why = NULL;
    size_t skip = skip_frames > 0 ? (size_t)skip_frames : 0;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = (at && at >= json && at <= json + len) ? (long)(at - json) : -1;
        tool_seterr(err, errlen, "%s: malformed JSON (parse error near byte %ld)", name, off);
        return -1;
    }
    if (!cJSON_IsObject(root)) {
        tool_seterr(err, errlen, "%s: not a frame export (the top level is not a JSON object)",
                    name);
        goto fail;
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, MPROF_FRAMES_SCHEMA) != 0) {
        tool_seterr(err, errlen, "%s: not a frame export (\"schema\" must be \"%s\"; make one "
                    "with `mprof export CAPTURE --format frames`)", name, MPROF_FRAMES_SCHEMA);
        goto fail;
    }
    run->path = tool_strdup(name);
    if (parse_capture(root, name, run, err, errlen))
        goto fail;
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(root, "frameTimesMs");
    if (!frames) {
        tool_seterr(err, errlen, "%s: \"frameTimesMs\" is missing", name);
        goto fail;
    }
    if (number_array(frames, SIZE_MAX, skip, &run->frames_ms, &run->n_frames, &why)) {
        tool_seterr(err, errlen, "%s: \"frameTimesMs\" %s", name, why);
        goto fail;
    }
    size_t total_frames = (size_t)cJSON_GetArraySize(frames);
    run->n_skipped = total_frames < skip ? total_frames : skip;
    parse_summary(root, &run->summary);
    if (parse_system(root, name, total_frames, skip, run, err, errlen))
        goto fail;
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(root, "system");
    if ((flags & MPROF_FRAMES_CPU_WITHOUT_SYSTEM) && (!sys || cJSON_IsNull(sys)) &&
        parse_cpu_arrays(root, name, total_frames, skip, run, err, errlen))
        goto fail;

    const cJSON *zones = cJSON_GetObjectItemCaseSensitive(root, "zones");
    if (zones && !cJSON_IsArray(zones)) {
        tool_seterr(err, errlen, "%s: \"zones\" is not an array", name);
        goto fail;
    }
    size_t nz = zones ? (size_t)cJSON_GetArraySize(zones) : 0;
    if (nz) {
        run->zones = calloc(nz, sizeof *run->zones);
        if (!run->zones) {
            tool_seterr(err, errlen, "%s: out of memory", name);
            goto fail;
        }
    }
    const cJSON *z;
    cJSON_ArrayForEach(z, zones)
    {
        size_t zi = run->n_zones++;
        if (parse_zone(z, zi, name, total_frames, skip, &run->zones[zi], err, errlen))
            goto fail;
    }
    cJSON_Delete(root);
    return 0;
fail:
    cJSON_Delete(root);
    mprof__frames_run_clear(run);
    return -1;
}

int mprof__frames_read(const char *path, int skip_frames, unsigned flags, mprof_frames_run *run,
                       char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    size_t len;
    char *text = tool_read_file(path, MAX_EXPORT_BYTES, &len, err, errlen);
    if (!text)
        return -1;
    int rc = mprof__frames_parse(text, len, path, skip_frames, flags, run, err, errlen);
    free(text);
    return rc;
}

/* ---- a file or a directory of them ---------------------------------------------------------- */

/* File names in natural order: runs of digits compare by value, so frames-10.json follows
 * frames-9.json (run order matters to a reader of the report). */
static int cmp_natural(const void *a, const void *b)
{
    const unsigned char *x = *(const unsigned char *const *)a;
    const unsigned char *y = *(const unsigned char *const *)b;
    while (*x && *y) {
        if (isdigit(*x) && isdigit(*y)) {
            while (*x == '0' && isdigit(x[1]))
                x++;
            while (*y == '0' && isdigit(y[1]))
                y++;
            size_t nx = 0, ny = 0;
            while (isdigit(x[nx]))
                nx++;
            while (isdigit(y[ny]))
                ny++;
            if (nx != ny)
                return nx < ny ? -1 : 1;
            int c = memcmp(x, y, nx);
            if (c)
                return c;
            x += nx;
            y += ny;
            continue;
        }
        if (*x != *y)
            return *x < *y ? -1 : 1;
        x++;
        y++;
    }
    return *x ? 1 : (*y ? -1 : strcmp(*(char *const *)a, *(char *const *)b));
}

static int add_run(mprof_frames_runs *s, const char *path, int skip_frames, char *err,
                   size_t errlen)
{
    mprof_frames_run *nr = realloc(s->runs, (s->n_runs + 1) * sizeof *nr);
    if (!nr) {
        tool_seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    s->runs = nr;
    int rc = mprof__frames_read(path, skip_frames, 0, &s->runs[s->n_runs], err, errlen);
    if (rc == 0)
        s->n_runs++;
    return rc;
}

/* The *.json regular files of dir as "dir/name", in natural order, in *out (n_out of them).
 * Returns 0, or -1 out of memory. */
static int list_exports(const char *dir, DIR *d, char ***out, size_t *n_out)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int oom = 0;
    while (!oom && (de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
            continue;
        size_t pl = strlen(dir) + 1 + l + 1;
        char *p = malloc(pl);
        if (!p) {
            oom = 1;
            break;
        }
        snprintf(p, pl, "%s/%s", dir, de->d_name);
        struct stat fst;
        if (stat(p, &fst) != 0 || !S_ISREG(fst.st_mode)) {
            free(p);
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                free(p);
                oom = 1;
                break;
            }
            names = nn;
        }
        names[n++] = p;
    }
    if (!oom && n)
        qsort(names, n, sizeof *names, cmp_natural);
    *out = names;
    *n_out = n;
    return oom ? -1 : 0;
}

mprof_frames_runs *mprof__frames_load(const char *dir_or_file, int skip_frames, char *err,
                                      size_t errlen)
{
    struct stat st;
    if (stat(dir_or_file, &st) != 0) {
        tool_seterr(err, errlen, "%s: %s", dir_or_file, strerror(errno));
        return NULL;
    }
    mprof_frames_runs *s = calloc(1, sizeof *s);
    if (!s || !(s->origin = tool_strdup(dir_or_file))) {
        free(s);
        tool_seterr(err, errlen, "out of memory");
        return NULL;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (add_run(s, dir_or_file, skip_frames, err, errlen)) {
            mprof__frames_runs_free(s);
            return NULL;
        }
        return s;
    }
    DIR *d = opendir(dir_or_file);
    if (!d) {
        tool_seterr(err, errlen, "%s: cannot open directory: %s", dir_or_file, strerror(errno));
        mprof__frames_runs_free(s);
        return NULL;
    }
    char **names;
    size_t n;
    int oom = list_exports(dir_or_file, d, &names, &n);
    closedir(d);
    int failed = 0;
    if (oom) {
        tool_seterr(err, errlen, "%s: out of memory", dir_or_file);
        failed = 1;
    } else if (n == 0) {
        tool_seterr(err, errlen, "%s: no frame exports (*.json) in this directory", dir_or_file);
        failed = 1;
    }
    for (size_t i = 0; i < n && !failed; i++)
        failed = add_run(s, names[i], skip_frames, err, errlen) != 0;
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (failed) {
        mprof__frames_runs_free(s);
        return NULL;
    }
    return s;
}
