/*
 * gate.c - the statistical regression gate: load frame exports, compare, attribute, report.
 *
 * The seed's CI rule is "fail when the current p95 frame time is more than 10 % above the
 * baseline's". On a shared machine the p95 of a few hundred frames moves by that much between
 * two runs of unchanged code, so taken alone the rule fails builds at random. Here the rule is the
 * magnitude test only; a regression also has to be significant (stats.h: a rank test on the
 * frames, a bootstrap interval of the p95 ratio that excludes 1.0, and a rank test on per-run
 * p95s when each side has several runs). When the magnitude rule holds but the evidence does not,
 * the verdict is "inconclusive" and says how much more data would settle it, instead of guessing.
 *
 * Sections: loading (cJSON), comparison, attribution, writers (text, JSON, Markdown).
 */
#define _POSIX_C_SOURCE 200809L

#include "gate/gate.h"
#include "gate/stats.h"
#include "analysis/zone_key.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_EXPORT_BYTES ((size_t)1 << 30) /* refuse frame exports past 1 GiB */
#define DEFAULT_SEED 0x6d70726f66676174ull /* "mprofgat" */

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

static char *xstrdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- loading -------------------------------------------------------------------------------- */

void mprof__gate_run_clear(mprof_gate_run *run)
{
    if (!run)
        return;
    free(run->path);
    free(run->process);
    free(run->git_sha);
    free(run->hostname);
    free(run->cpu);
    free(run->build_type);
    free(run->start_time);
    free(run->frames_ms);
    free(run->system_why_not);
    free(run->on_cpu_ms);
    free(run->off_cpu_ms);
    free(run->cpu_ms);
    free(run->machine_busy);
    for (size_t i = 0; i < run->n_zones; i++) {
        free(run->zones[i].name);
        free(run->zones[i].function);
        free(run->zones[i].self_ms);
        free(run->zones[i].incl_ms);
        free(run->zones[i].self_off_ms);
    }
    free(run->zones);
    memset(run, 0, sizeof *run);
}

void mprof__gate_side_free(mprof_gate_side *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_runs; i++)
        mprof__gate_run_clear(&s->runs[i]);
    free(s->runs);
    free(s->origin);
    free(s);
}

/* A string member, copied; NULL when absent or JSON null. -1 when present with another type. */
static int opt_string(const cJSON *obj, const char *key, char **out)
{
    *out = NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v) || !v->valuestring)
        return -1;
    *out = xstrdup(v->valuestring);
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

/* System tracing (contract with the system-tracing export): the "system" object and, when it
 * says contextSwitches, the per-frame arrays aligned with frameTimesMs. An export without the
 * object (older versions) simply has no system data. Returns 0, or -1 with err set. */
static int parse_system(const cJSON *root, const char *name, size_t total_frames, size_t skip,
                        mprof_gate_run *run, char *err, size_t errlen)
{
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(root, "system");
    if (!sys || cJSON_IsNull(sys))
        return 0;
    if (!cJSON_IsObject(sys)) {
        seterr(err, errlen, "%s: \"system\" is not an object", name);
        return -1;
    }
    const char *bk[2] = {"contextSwitches", "cpuUsage"};
    int *bv[2] = {&run->context_switches, &run->cpu_usage};
    for (int k = 0; k < 2; k++) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(sys, bk[k]);
        if (b && !cJSON_IsBool(b)) {
            seterr(err, errlen, "%s: \"system\": \"%s\" is not true or false", name, bk[k]);
            return -1;
        }
        *bv[k] = b && cJSON_IsTrue(b);
    }
    if (opt_string(sys, "whyNot", &run->system_why_not)) {
        seterr(err, errlen, "%s: \"system\": \"whyNot\" is not a string or null", name);
        return -1;
    }
    const char *ak[4] = {"frameOnCpuMs", "frameOffCpuMs", "frameCpuMs", "frameMachineBusy"};
    double **av[4] = {&run->on_cpu_ms, &run->off_cpu_ms, &run->cpu_ms, &run->machine_busy};
    for (int k = 0; k < 4; k++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, ak[k]);
        if (!a)
            continue;
        size_t got;
        const char *why = NULL;
        if (number_array(a, total_frames, skip, av[k], &got, &why)) {
            seterr(err, errlen, "%s: \"%s\" %s", name, ak[k], why);
            return -1;
        }
    }
    for (size_t i = 0; run->machine_busy && i < run->n_frames; i++)
        if (run->machine_busy[i] > 1.0) {
            seterr(err, errlen, "%s: \"frameMachineBusy\" holds %g, above 1", name,
                   run->machine_busy[i]);
            return -1;
        }
    /* The decision needs the off-CPU times; a capture that claims context switches without
     * them is treated as having none (the comparison then says so). */
    if (!run->off_cpu_ms)
        run->context_switches = 0;
    if (!run->machine_busy)
        run->cpu_usage = 0;
    return 0;
}

int mprof__gate_parse_run(const char *json, size_t len, const char *name, int skip_frames,
                          mprof_gate_run *run, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    const char *why = NULL;
    size_t skip = skip_frames > 0 ? (size_t)skip_frames : 0;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = (at && at >= json && at <= json + len) ? (long)(at - json) : -1;
        seterr(err, errlen, "%s: malformed JSON (parse error near byte %ld)", name, off);
        return -1;
    }
    if (!cJSON_IsObject(root)) {
        seterr(err, errlen, "%s: not a frame export (the top level is not a JSON object)", name);
        goto fail;
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, MPROF_FRAMES_SCHEMA) != 0) {
        seterr(err, errlen, "%s: not a frame export (\"schema\" must be \"%s\"; make one with "
               "`mprof export CAPTURE --format frames`)", name, MPROF_FRAMES_SCHEMA);
        goto fail;
    }
    run->path = xstrdup(name);
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(root, "capture");
    if (cap && !cJSON_IsObject(cap)) {
        seterr(err, errlen, "%s: \"capture\" is not an object", name);
        goto fail;
    }
    if (cap) {
        if (opt_string(cap, "process", &run->process) || opt_string(cap, "gitSha", &run->git_sha) ||
            opt_string(cap, "hostname", &run->hostname) || opt_string(cap, "cpu", &run->cpu) ||
            opt_string(cap, "buildType", &run->build_type) ||
            opt_string(cap, "startTime", &run->start_time)) {
            seterr(err, errlen, "%s: a \"capture\" identity field is not a string", name);
            goto fail;
        }
    }
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(root, "frameTimesMs");
    if (!frames) {
        seterr(err, errlen, "%s: \"frameTimesMs\" is missing", name);
        goto fail;
    }
    if (number_array(frames, SIZE_MAX, skip, &run->frames_ms, &run->n_frames, &why)) {
        seterr(err, errlen, "%s: \"frameTimesMs\" %s", name, why);
        goto fail;
    }
    size_t total_frames = (size_t)cJSON_GetArraySize(frames);
    run->n_skipped = total_frames < skip ? total_frames : skip;
    if (parse_system(root, name, total_frames, skip, run, err, errlen))
        goto fail;

    const cJSON *zones = cJSON_GetObjectItemCaseSensitive(root, "zones");
    if (zones && !cJSON_IsArray(zones)) {
        seterr(err, errlen, "%s: \"zones\" is not an array", name);
        goto fail;
    }
    size_t nz = zones ? (size_t)cJSON_GetArraySize(zones) : 0;
    if (nz) {
        run->zones = calloc(nz, sizeof *run->zones);
        if (!run->zones) {
            seterr(err, errlen, "%s: out of memory", name);
            goto fail;
        }
    }
    const cJSON *z;
    size_t zi = 0;
    cJSON_ArrayForEach(z, zones)
    {
        mprof_gate_zone *gz = &run->zones[zi];
        const cJSON *zn = cJSON_GetObjectItemCaseSensitive(z, "name");
        if (!cJSON_IsObject(z) || !cJSON_IsString(zn) || !zn->valuestring) {
            seterr(err, errlen, "%s: zones[%zu] has no \"name\" string", name, zi);
            goto fail;
        }
        gz->name = xstrdup(zn->valuestring);
        const cJSON *zf = cJSON_GetObjectItemCaseSensitive(z, "function");
        if (cJSON_IsString(zf) && zf->valuestring && zf->valuestring[0])
            gz->function = xstrdup(zf->valuestring);
        run->n_zones = ++zi;
        if (!gz->name || (cJSON_IsString(zf) && zf->valuestring && zf->valuestring[0] && !gz->function)) {
            seterr(err, errlen, "%s: out of memory", name);
            goto fail;
        }
        gz->total_frames = total_frames;
        const char *tk[2] = {"selfTotalMs", "totalMs"};
        double *tv[2] = {&gz->self_total_ms, &gz->incl_total_ms};
        for (int k = 0; k < 2; k++) {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(z, tk[k]);
            if (!t)
                continue;
            if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) || t->valuedouble < 0.0) {
                seterr(err, errlen, "%s: zone \"%s\": \"%s\" is not a non-negative number", name,
                       gz->name, tk[k]);
                goto fail;
            }
            *tv[k] = t->valuedouble;
        }
        const char *ak[3] = {"selfPerFrameMs", "perFrameMs", "selfOffCpuPerFrameMs"};
        double **av[3] = {&gz->self_ms, &gz->incl_ms, &gz->self_off_ms};
        for (int k = 0; k < 3; k++) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(z, ak[k]);
            if (!a)
                continue;
            size_t got;
            if (number_array(a, total_frames, skip, av[k], &got, &why)) {
                seterr(err, errlen, "%s: zone \"%s\": \"%s\" %s", name, gz->name, ak[k], why);
                goto fail;
            }
        }
    }
    cJSON_Delete(root);
    return 0;
fail:
    cJSON_Delete(root);
    mprof__gate_run_clear(run);
    return -1;
}

static char *read_file(const char *path, size_t *out_len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len == cap) {
            if (cap >= MAX_EXPORT_BYTES) {
                seterr(err, errlen, "%s: larger than 1 GiB, not a frame export", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (!buf) {
        seterr(err, errlen, "%s: out of memory", path);
        fclose(f);
        return NULL;
    }
    if (ferror(f)) {
        seterr(err, errlen, "%s: read error: %s", path, strerror(errno));
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *out_len = len;
    return buf;
}

/* File names in natural order: runs of digits compare by value, so frames-10.json follows
 * frames-9.json (run order matters to a reader of the report). */
static int cmp_str(const void *a, const void *b)
{
    const unsigned char *x = *(const unsigned char *const *)a, *y = *(const unsigned char *const *)b;
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

static int add_run(mprof_gate_side *s, const char *path, int skip_frames, char *err, size_t errlen)
{
    size_t len;
    char *text = read_file(path, &len, err, errlen);
    if (!text)
        return -1;
    mprof_gate_run *nr = realloc(s->runs, (s->n_runs + 1) * sizeof *nr);
    if (!nr) {
        free(text);
        seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    s->runs = nr;
    int rc = mprof__gate_parse_run(text, len, path, skip_frames, &s->runs[s->n_runs], err, errlen);
    free(text);
    if (rc == 0)
        s->n_runs++;
    return rc;
}

mprof_gate_side *mprof__gate_load(const char *dir_or_file, int skip_frames, char *err,
                                  size_t errlen)
{
    struct stat st;
    if (stat(dir_or_file, &st) != 0) {
        seterr(err, errlen, "%s: %s", dir_or_file, strerror(errno));
        return NULL;
    }
    mprof_gate_side *s = calloc(1, sizeof *s);
    if (!s || !(s->origin = xstrdup(dir_or_file))) {
        free(s);
        seterr(err, errlen, "out of memory");
        return NULL;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (add_run(s, dir_or_file, skip_frames, err, errlen)) {
            mprof__gate_side_free(s);
            return NULL;
        }
        return s;
    }
    DIR *d = opendir(dir_or_file);
    if (!d) {
        seterr(err, errlen, "%s: cannot open directory: %s", dir_or_file, strerror(errno));
        mprof__gate_side_free(s);
        return NULL;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int oom = 0;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
            continue;
        size_t pl = strlen(dir_or_file) + 1 + l + 1;
        char *p = malloc(pl);
        if (!p) {
            oom = 1;
            break;
        }
        snprintf(p, pl, "%s/%s", dir_or_file, de->d_name);
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
    closedir(d);
    int failed = 0;
    if (oom) {
        seterr(err, errlen, "%s: out of memory", dir_or_file);
        failed = 1;
    } else if (n == 0) {
        seterr(err, errlen, "%s: no frame exports (*.json) in this directory", dir_or_file);
        failed = 1;
    } else {
        qsort(names, n, sizeof *names, cmp_str);
        for (size_t i = 0; i < n && !failed; i++)
            failed = add_run(s, names[i], skip_frames, err, errlen) != 0;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (failed) {
        mprof__gate_side_free(s);
        return NULL;
    }
    return s;
}

/* ---- comparison ----------------------------------------------------------------------------- */

static void warn(mprof_gate_result *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void warn(mprof_gate_result *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **nw = realloc(r->warnings, (r->n_warnings + 1) * sizeof *nw);
    if (!nw)
        return;
    r->warnings = nw;
    char *w = xstrdup(buf);
    if (w)
        r->warnings[r->n_warnings++] = w;
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
    if (r->base_paths)
        for (size_t i = 0; i < r->base.runs; i++)
            free(r->base_paths[i]);
    if (r->cur_paths)
        for (size_t i = 0; i < r->cur.runs; i++)
            free(r->cur_paths[i]);
    free(r->base_paths);
    free(r->cur_paths);
    free(r->base_git_sha);
    free(r->cur_git_sha);
    free(r);
}

double mprof__gate_decision_ms(const mprof_gate_run *run, size_t i, int use_system)
{
    double t = run->frames_ms[i];
    if (!use_system || !run->off_cpu_ms)
        return t;
    double off = run->off_cpu_ms[i];
    if (run->machine_busy)
        off *= run->machine_busy[i];
    double d = t - off;
    /* The frame cannot have taken less than the time its main thread ran. */
    if (run->on_cpu_ms && d < run->on_cpu_ms[i])
        d = run->on_cpu_ms[i] < t ? run->on_cpu_ms[i] : t;
    return d > 0.0 ? d : 0.0;
}

/* Pooled frame times of a side with run boundaries (run_start has n_runs + 1 entries): the
 * decision frame times with use_system, else the raw ones. Runs without frames are left out.
 * Returns 0, or -1 out of memory. */
static int pool_side(const mprof_gate_side *s, int use_system, double **out_v, size_t **out_starts,
                     size_t *out_runs)
{
    size_t total = 0;
    for (size_t i = 0; i < s->n_runs; i++)
        total += s->runs[i].n_frames;
    double *v = malloc((total ? total : 1) * sizeof *v);
    size_t *st = malloc((s->n_runs + 1) * sizeof *st);
    if (!v || !st) {
        free(v);
        free(st);
        return -1;
    }
    size_t k = 0, nr = 0;
    st[0] = 0;
    for (size_t i = 0; i < s->n_runs; i++) {
        if (s->runs[i].n_frames == 0)
            continue;
        for (size_t f = 0; f < s->runs[i].n_frames; f++)
            v[k++] = mprof__gate_decision_ms(&s->runs[i], f, use_system);
        st[++nr] = k;
    }
    *out_v = v;
    *out_starts = st;
    *out_runs = nr;
    return 0;
}

static double mean_of(const double *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return n ? sum / (double)n : 0.0;
}

static int summarize(const double *v, size_t n, size_t runs, mprof_gate_summary *out)
{
    memset(out, 0, sizeof *out);
    out->runs = runs;
    out->frames = n;
    if (n == 0)
        return 0;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return -1;
    memcpy(s, v, n * sizeof *s);
    mprof__sort_doubles(s, n);
    out->p50_ms = mprof__percentile_sorted(s, n, 50);
    out->p90_ms = mprof__percentile_sorted(s, n, 90);
    out->p95_ms = mprof__percentile_sorted(s, n, 95);
    out->p99_ms = mprof__percentile_sorted(s, n, 99);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += s[i];
    out->mean_ms = sum / (double)n;
    free(s);
    return 0;
}

int mprof__gate_summarize_side(const mprof_gate_side *s, mprof_gate_summary *out)
{
    double *v = NULL;
    size_t *st = NULL, runs = 0;
    memset(out, 0, sizeof *out);
    if (pool_side(s, 0, &v, &st, &runs))
        return -1;
    int rc = summarize(v, st[runs], s->n_runs, out);
    free(v);
    free(st);
    return rc;
}

/* 1 when every run of the side has system tracing of context switches (level 1), and the
 * machine's busy share too (level 2); 0 otherwise. */
static int system_level(const mprof_gate_side *s)
{
    int level = 2;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_gate_run *run = &s->runs[i];
        if (!run->context_switches)
            return 0;
        if (!run->cpu_usage)
            level = 1;
    }
    return s->n_runs ? level : 0;
}

/* The share of off-CPU time in the frames at or above the side's raw p95 (the frames the p95
 * is made of): sum(off) / sum(t) over them. -1 without system tracing. */
static double p95_off_share(const mprof_gate_side *s, double p95)
{
    double off = 0, tot = 0;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_gate_run *run = &s->runs[i];
        if (!run->off_cpu_ms)
            return -1.0;
        for (size_t f = 0; f < run->n_frames; f++)
            if (run->frames_ms[f] >= p95) {
                tot += run->frames_ms[f];
                off += run->off_cpu_ms[f] < run->frames_ms[f] ? run->off_cpu_ms[f]
                                                              : run->frames_ms[f];
            }
    }
    return tot > 0 ? off / tot : 0.0;
}

/* Compares one identity field across every run of both sides. Returns 1 when two known values
 * differ (first pair described in msg). Runs without the field add a warning. */
static int identity_differs(const mprof_gate_side *b, const mprof_gate_side *c, size_t off,
                            const char *label, mprof_gate_result *r, char *msg, size_t msglen)
{
    const mprof_gate_side *sides[2] = {b, c};
    const char *first = NULL, *first_path = NULL;
    int unknown = 0;
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < sides[s]->n_runs; i++) {
            const mprof_gate_run *run = &sides[s]->runs[i];
            const char *v = *(char *const *)((const char *)run + off);
            if (!v || !*v) {
                unknown++;
                continue;
            }
            if (!first) {
                first = v;
                first_path = run->path;
            } else if (strcmp(first, v) != 0) {
                snprintf(msg, msglen, "%s differs: %s has \"%s\", %s has \"%s\"", label,
                         first_path, first, run->path, v);
                return 1;
            }
        }
    }
    if (unknown)
        warn(r, "%d run(s) do not record the %s; the machine guard cannot check it", unknown,
             label);
    return 0;
}

/* How zones are paired across runs and sides: the one place that says when two zone entries
 * of two exports are the same zone. Zone identity (zone_key.h): name and function; an export
 * without functions matches by name. */
static int same_zone(const mprof_gate_zone *a, const mprof_gate_zone *b)
{
    mprof_zone_key ka = {a->name, a->function, NULL, 0}, kb = {b->name, b->function, NULL, 0};
    return mprof__zone_key_same(&ka, &kb);
}

/* The zone of run that is the same zone as key, or NULL when the run does not list it. */
static const mprof_gate_zone *find_zone(const mprof_gate_run *run, const mprof_gate_zone *key)
{
    for (size_t k = 0; k < run->n_zones; k++)
        if (same_zone(&run->zones[k], key))
            return &run->zones[k];
    return NULL;
}

/* Mean per-frame time of a zone over a side, and the pooled per-frame self times when every run
 * has them. A run that does not list the zone contributes zero time (exports list every zone's
 * totals). With per-frame data the self mean is trimmed: the zone's slowest TRIM_FRACTION of
 * frames are left out, so that a preemption or interrupt landing inside a small zone (a few
 * milliseconds in one frame) does not outweigh a real, steady slowdown of a large one. With
 * on_cpu, the per-frame values are on-CPU self time (self less selfOffCpuPerFrameMs): a zone
 * that waits (its thread blocked or preempted) is measured by what it ran, not by how long. */
#define TRIM_FRACTION 0.01
typedef struct zone_side {
    double self_ms, incl_ms, off_ms;
    double *frames; /* pooled per-frame self ms (on-CPU with on_cpu), or NULL */
    size_t n;
    double *run_means; /* per run with frames: the zone's mean self ms per frame (on-CPU where
                          the run has per-frame data and on_cpu; else its totals / frames) */
    size_t n_runs;
} zone_side;

static void zone_side_free(zone_side *z)
{
    free(z->frames);
    free(z->run_means);
}

static double zone_frame_ms(const mprof_gate_zone *z, size_t f, int on_cpu)
{
    if (!z)
        return 0.0;
    double v = z->self_ms[f];
    if (on_cpu && z->self_off_ms) {
        v -= z->self_off_ms[f];
        if (v < 0.0)
            v = 0.0;
    }
    return v;
}

static int zone_on_side(const mprof_gate_side *s, const mprof_gate_zone *key, int on_cpu,
                        zone_side *out)
{
    memset(out, 0, sizeof *out);
    size_t total = 0;
    int per_frame = 1;
    double self_sum = 0, incl_sum = 0, off_sum = 0, frames_sum = 0;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_gate_run *run = &s->runs[i];
        total += run->n_frames;
        const mprof_gate_zone *z = find_zone(run, key);
        if (!z) {
            frames_sum += (double)run->n_frames;
            continue;
        }
        if (z->self_ms) {
            for (size_t f = 0; f < run->n_frames; f++) {
                self_sum += z->self_ms[f];
                incl_sum += z->incl_ms ? z->incl_ms[f] : z->self_ms[f];
                off_sum += on_cpu && z->self_off_ms ? z->self_off_ms[f] : 0.0;
            }
            frames_sum += (double)run->n_frames;
        } else {
            per_frame = 0;
            self_sum += z->self_total_ms;
            incl_sum += z->incl_total_ms;
            frames_sum += (double)z->total_frames;
        }
    }
    if (frames_sum > 0) {
        out->self_ms = self_sum / frames_sum;
        out->incl_ms = incl_sum / frames_sum;
        out->off_ms = off_sum / frames_sum;
    }
    /* One mean per run, for the run-level test (the same runs as the frames' run boundaries). */
    out->run_means = malloc((s->n_runs ? s->n_runs : 1) * sizeof *out->run_means);
    if (!out->run_means)
        return -1;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_gate_run *run = &s->runs[i];
        if (run->n_frames == 0)
            continue;
        const mprof_gate_zone *z = find_zone(run, key);
        double m = 0.0;
        if (z && z->self_ms) {
            for (size_t f = 0; f < run->n_frames; f++)
                m += zone_frame_ms(z, f, on_cpu);
            m /= (double)run->n_frames;
        } else if (z && z->total_frames) {
            m = z->self_total_ms / (double)z->total_frames;
        }
        out->run_means[out->n_runs++] = m;
    }
    if (!per_frame || total == 0)
        return 0;
    out->frames = malloc(total * sizeof *out->frames);
    if (!out->frames)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_gate_run *run = &s->runs[i];
        const mprof_gate_zone *z = find_zone(run, key);
        for (size_t f = 0; f < run->n_frames; f++)
            out->frames[k++] = zone_frame_ms(z, f, on_cpu);
    }
    out->n = k;
    double *sorted = malloc(k * sizeof *sorted);
    if (!sorted)
        return -1;
    memcpy(sorted, out->frames, k * sizeof *sorted);
    mprof__sort_doubles(sorted, k);
    size_t keep = k - (size_t)floor((double)k * TRIM_FRACTION);
    double sum = 0;
    for (size_t i = 0; i < keep; i++)
        sum += sorted[i];
    out->self_ms = sum / (double)keep;
    free(sorted);
    return 0;
}

/* Significant growths first (largest first), then the rest by growth. */
static int cmp_attrib(const void *pa, const void *pb)
{
    const mprof_gate_attrib *a = pa, *b = pb;
    if (a->significant != b->significant)
        return a->significant ? -1 : 1;
    if (a->delta_ms != b->delta_ms)
        return a->delta_ms < b->delta_ms ? 1 : -1;
    return strcmp(a->name, b->name);
}

/* 1 when every run of both sides carries selfOffCpuPerFrameMs for every zone with per-frame
 * self times: then zones are compared by on-CPU self time. */
static int zones_have_off_cpu(const mprof_gate_side *b, const mprof_gate_side *c)
{
    const mprof_gate_side *sides[2] = {b, c};
    int any = 0;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->n_runs; i++)
            for (size_t k = 0; k < sides[s]->runs[i].n_zones; k++) {
                const mprof_gate_zone *z = &sides[s]->runs[i].zones[k];
                if (z->self_ms && !z->self_off_ms)
                    return 0;
                any |= z->self_off_ms != NULL;
            }
    return any;
}

/* Every zone name of both sides, with its growth; keeps the top_zones rows, the zones that grew
 * significantly first. */
static int attribute(const mprof_gate_side *b, const mprof_gate_side *c, mprof_gate_result *r)
{
    const mprof_gate_side *sides[2] = {b, c};
    int on_cpu = zones_have_off_cpu(b, c);
    /* One key per distinct zone of both sides (the first entry met stands for the zone). */
    const mprof_gate_zone **keys = NULL;
    size_t n = 0, cap = 0;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->n_runs; i++)
            for (size_t k = 0; k < sides[s]->runs[i].n_zones; k++) {
                const mprof_gate_zone *z = &sides[s]->runs[i].zones[k];
                int seen = 0;
                for (size_t j = 0; j < n && !seen; j++)
                    seen = same_zone(keys[j], z);
                if (seen)
                    continue;
                if (n == cap) {
                    cap = cap ? cap * 2 : 16;
                    const mprof_gate_zone **nk = realloc(keys, cap * sizeof *nk);
                    if (!nk) {
                        free(keys);
                        return -1;
                    }
                    keys = nk;
                }
                keys[n++] = z;
            }
    /* Run boundaries of the pooled per-frame zone values (runs without frames add none). */
    size_t *zstarts[2] = {NULL, NULL}, zruns[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        zstarts[s] = malloc((sides[s]->n_runs + 1) * sizeof *zstarts[s]);
        if (!zstarts[s])
            continue;
        zstarts[s][0] = 0;
        for (size_t i = 0; i < sides[s]->n_runs; i++)
            if (sides[s]->runs[i].n_frames) {
                zstarts[s][zruns[s] + 1] = zstarts[s][zruns[s]] + sides[s]->runs[i].n_frames;
                zruns[s]++;
            }
    }
    mprof_gate_attrib *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows || !zstarts[0] || !zstarts[1]) {
        free(rows);
        free(zstarts[0]);
        free(zstarts[1]);
        free(keys);
        return -1;
    }
    int rc = 0;
    for (size_t j = 0; j < n; j++) {
        zone_side zb, zc;
        memset(&zc, 0, sizeof zc);
        if (zone_on_side(b, keys[j], on_cpu, &zb) || zone_on_side(c, keys[j], on_cpu, &zc)) {
            zone_side_free(&zb);
            zone_side_free(&zc);
            rc = -1;
            break;
        }
        mprof_gate_attrib *a = &rows[j];
        a->name = keys[j]->name; /* borrowed until the top rows are copied */
        a->function = keys[j]->function;
        a->base_ms = zb.self_ms;
        a->cur_ms = zc.self_ms;
        a->base_incl_ms = zb.incl_ms;
        a->cur_incl_ms = zc.incl_ms;
        a->base_off_ms = zb.off_ms;
        a->cur_off_ms = zc.off_ms;
        a->delta_ms = zc.self_ms - zb.self_ms;
        a->delta_pct = zb.self_ms > 0 ? 100.0 * (zc.self_ms / zb.self_ms - 1.0)
                                      : (zc.self_ms > 0 ? INFINITY : 0.0);
        a->p = 1.0;
        if (zb.frames && zc.frames && zb.n && zc.n) {
            a->per_frame = 1;
            a->on_cpu = on_cpu;
            /* The same correlation-aware test as the frames: a zone slowed by a burst of noise
             * over a few hundred consecutive frames is not evidence of a code change. */
            size_t blocks = r->opts.blocks >= 2 ? (size_t)r->opts.blocks : 0;
            mprof_sample_runs sb = {zb.frames, zstarts[0], zruns[0], blocks};
            mprof_sample_runs sc = {zc.frames, zstarts[1], zruns[1], blocks};
            mprof_mwu m;
            if (mprof__mann_whitney_runs(&sb, &sc, &m) == 0)
                a->p = m.p_greater;
        }
        /* The run-level test: the zone's mean per run must have grown by more than the runs
         * of each side differ among themselves (a frame-level test alone takes a burst of noise
         * in one run for evidence, as it would for the frames). It is also what decides a zone
         * that lacks per-frame data on some run (a zone too small in one build to be among the
         * export's per-frame zones, then large in the other). */
        a->run_significant = mprof__runs_diff_greater(zb.run_means, zb.n_runs, zc.run_means,
                                                      zc.n_runs, r->opts.alpha, &a->run_t);
        a->significant = a->delta_ms > 0 && a->run_significant &&
                         (!a->per_frame || a->p < r->opts.alpha);
        zone_side_free(&zb);
        zone_side_free(&zc);
    }
    if (rc == 0) {
        qsort(rows, n, sizeof *rows, cmp_attrib);
        size_t keep = n < (size_t)r->opts.top_zones ? n : (size_t)r->opts.top_zones;
        r->zones = calloc(keep ? keep : 1, sizeof *r->zones);
        if (!r->zones)
            rc = -1;
        for (size_t j = 0; rc == 0 && j < keep; j++) {
            r->zones[j] = rows[j];
            r->zones[j].name = xstrdup(rows[j].name);
            r->zones[j].function = rows[j].function ? xstrdup(rows[j].function) : NULL;
            r->n_zones = j + 1;
            if (!r->zones[j].name || (rows[j].function && !r->zones[j].function))
                rc = -1;
        }
    }
    free(rows);
    free(zstarts[0]);
    free(zstarts[1]);
    free(keys);
    return rc;
}

static int copy_paths(const mprof_gate_side *s, char ***out)
{
    *out = calloc(s->n_runs ? s->n_runs : 1, sizeof **out);
    if (!*out)
        return -1;
    for (size_t i = 0; i < s->n_runs; i++)
        if (!((*out)[i] = xstrdup(s->runs[i].path)))
            return -1;
    return 0;
}

/* A side's git SHA when all its runs agree, else NULL. */
static char *side_sha(const mprof_gate_side *s)
{
    const char *sha = NULL;
    for (size_t i = 0; i < s->n_runs; i++) {
        const char *v = s->runs[i].git_sha;
        if (!v)
            continue;
        if (sha && strcmp(sha, v) != 0)
            return xstrdup("mixed");
        sha = v;
    }
    return xstrdup(sha);
}

/* How many times more data a test with one-sided p-value p needs to reach alpha, assuming its
 * z score grows with the square root of the sample size. 0 when it cannot be estimated (the
 * data show no effect in that direction). */
static double growth_factor(double p, double alpha)
{
    double z = mprof__normal_isf(p), zn = mprof__normal_isf(alpha);
    if (!(z > 0.05))
        return 0.0;
    double f = (zn / z) * (zn / z);
    return f < 1.0 ? 1.0 : f;
}

/* "= 0.034" or "< 1e-16" (a normal tail below double precision prints as 0 otherwise). */
static const char *pstr(double p, char *buf, size_t n)
{
    if (p < 1e-16)
        snprintf(buf, n, "< 1e-16");
    else
        snprintf(buf, n, "= %.2g", p);
    return buf;
}

static double pct_change(double cur, double base)
{
    return base > 0 ? 100.0 * (cur / base - 1.0) : 0.0;
}

static void fill_defaults(mprof_gate_opts *o)
{
    if (o->threshold_pct <= 0.0)
        o->threshold_pct = o->threshold_pct < 0.0 ? 0.0 : 10.0;
    if (!(o->alpha > 0.0 && o->alpha < 1.0))
        o->alpha = 0.05;
    if (o->skip_frames < 0)
        o->skip_frames = 0;
    if (o->min_frames <= 0)
        o->min_frames = 60;
    if (o->n_resamples <= 0)
        o->n_resamples = 2000;
    if (o->seed == 0)
        o->seed = DEFAULT_SEED;
    if (o->top_zones <= 0)
        o->top_zones = 5;
    if (o->blocks <= 0)
        o->blocks = 10;
}

mprof_gate_result *mprof__gate_compare(const mprof_gate_side *base, const mprof_gate_side *cur,
                                       const mprof_gate_opts *opts, char *err, size_t errlen)
{
    mprof_gate_result *r = calloc(1, sizeof *r);
    if (!r) {
        seterr(err, errlen, "out of memory");
        return NULL;
    }
    if (opts)
        r->opts = *opts;
    fill_defaults(&r->opts);
    const mprof_gate_opts *o = &r->opts;
    char pb[32];
    r->rank_p = 1.0;
    r->run_p = 1.0;

    double *bv = NULL, *cv = NULL, *bp95 = NULL, *cp95 = NULL, *scratch = NULL;
    double *bmean = NULL, *cmean = NULL;
    size_t *bs = NULL, *cs = NULL, bruns = 0, cruns = 0;
    /* Noise: decide on the decision frame times when both sides carry system tracing. */
    int lb = system_level(base), lc = system_level(cur);
    r->noise_model = lb && lc ? (lb < lc ? lb : lc) : 0;
    if (mprof__gate_summarize_side(base, &r->base) || mprof__gate_summarize_side(cur, &r->cur))
        goto oom;
    if (pool_side(base, r->noise_model != 0, &bv, &bs, &bruns) ||
        pool_side(cur, r->noise_model != 0, &cv, &cs, &cruns))
        goto oom;
    size_t nb = bs[bruns], nc = cs[cruns];
    if (summarize(bv, nb, base->n_runs, &r->base_dec) ||
        summarize(cv, nc, cur->n_runs, &r->cur_dec))
        goto oom;
    r->base_p95_off_share = p95_off_share(base, r->base.p95_ms);
    r->cur_p95_off_share = p95_off_share(cur, r->cur.p95_ms);
    if (r->noise_model == 2)
        snprintf(r->noise_note, sizeof r->noise_note,
                 "frame times less the machine's share of their off-CPU time (system tracing: "
                 "context switches and CPU usage)");
    else if (r->noise_model == 1)
        snprintf(r->noise_note, sizeof r->noise_note,
                 "frame times less their off-CPU time (system tracing: context switches; no CPU "
                 "usage, so every off-CPU interval counts as the machine's)");
    else {
        const mprof_gate_side *without = lb ? cur : base;
        const char *why = NULL, *path = NULL;
        for (size_t i = 0; i < without->n_runs && !path; i++)
            if (!without->runs[i].context_switches) {
                path = without->runs[i].path;
                why = without->runs[i].system_why_not;
            }
        snprintf(r->noise_note, sizeof r->noise_note,
                 "no system tracing in %s%s%s%s: decided on raw frame times, so machine noise "
                 "(preemption, other processes) is not separated from the code", path ? path : "?",
                 why ? " (" : "", why ? why : "", why ? ")" : "");
    }
    if (copy_paths(base, &r->base_paths) || copy_paths(cur, &r->cur_paths))
        goto oom;
    r->base_git_sha = side_sha(base);
    r->cur_git_sha = side_sha(cur);
    if (attribute(base, cur, r))
        goto oom;
    if (r->base.p95_ms > 0)
        r->raw_p95_ratio = r->cur.p95_ms / r->base.p95_ms;
    if (r->base_dec.p95_ms > 0)
        r->p95_ratio = r->cur_dec.p95_ms / r->base_dec.p95_ms;

    /* The machine guard. */
    static const struct {
        size_t off;
        const char *label;
    } ids[] = {{offsetof(mprof_gate_run, hostname), "hostname"},
               {offsetof(mprof_gate_run, cpu), "CPU model"},
               {offsetof(mprof_gate_run, build_type), "build type"}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        char msg[384];
        if (!identity_differs(base, cur, ids[i].off, ids[i].label, r, msg, sizeof msg))
            continue;
        if (!o->allow_different_machines) {
            r->verdict = MPROF_GATE_BAD_INPUT;
            snprintf(r->reason, sizeof r->reason,
                     "refusing to compare: %s (timings from different machines or builds are not "
                     "comparable; pass --allow-different-machines to compare anyway)", msg);
            goto done;
        }
        warn(r, "%s; compared anyway (--allow-different-machines)", msg);
    }
    for (size_t i = 0; i < base->n_runs; i++)
        if (base->runs[i].n_frames == 0)
            warn(r, "%s has no frames after skipping %d; left out", base->runs[i].path,
                 o->skip_frames);
    for (size_t i = 0; i < cur->n_runs; i++)
        if (cur->runs[i].n_frames == 0)
            warn(r, "%s has no frames after skipping %d; left out", cur->runs[i].path,
                 o->skip_frames);

    /* A side without a single frame is not a small sample but a broken run (no frame marks,
     * or every frame skipped): waiting for more frames would never settle it. */
    if (nb == 0 || nc == 0) {
        const mprof_gate_side *empty = nb == 0 ? base : cur;
        size_t skipped = 0;
        for (size_t i = 0; i < empty->n_runs; i++)
            skipped += empty->runs[i].n_skipped;
        r->verdict = MPROF_GATE_BAD_INPUT;
        if (skipped > 0)
            snprintf(r->reason, sizeof r->reason,
                     "no frames in %s: all %zu were skipped (--skip-frames %d)",
                     nb == 0 ? "BASELINE" : "CURRENT", skipped, o->skip_frames);
        else
            snprintf(r->reason, sizeof r->reason,
                     "no frames in %s: the run recorded no frame marks",
                     nb == 0 ? "BASELINE" : "CURRENT");
        goto done;
    }

    if (!r->noise_model)
        warn(r, "%s", r->noise_note);

    /* Minimum frame count. */
    size_t minf = (size_t)o->min_frames;
    if (nb < minf || nc < minf) {
        size_t have = nb < nc ? nb : nc;
        r->verdict = MPROF_GATE_INCONCLUSIVE;
        r->need_frames = (long)(minf - have);
        snprintf(r->reason, sizeof r->reason,
                 "too few frames to decide: baseline has %zu, current %zu, at least %zu per side "
                 "are required (--min-frames); record %ld more",
                 nb, nc, minf, r->need_frames);
        goto done;
    }

    /* Significance: rank test on frames, bootstrap of the p95 ratio, rank test on run p95s. */
    size_t blocks = o->blocks >= 2 ? (size_t)o->blocks : 0;
    mprof_sample_runs sb = {bv, bs, bruns, blocks}, sc = {cv, cs, cruns, blocks};
    mprof_mwu m;
    if (mprof__mann_whitney_runs(&sb, &sc, &m))
        goto oom;
    r->rank_p = m.p_greater;
    r->rank_u = m.u;
    r->rank_z = m.z;
    r->rank_effect = m.effect;
    r->rank_exact = m.exact;
    r->rank_design_effect = m.design_effect;
    mprof_ratio_ci ci;
    if (mprof__bootstrap_ratio_ci(&sb, &sc, 95.0, o->n_resamples, 1.0 - o->alpha, o->seed, &ci)) {
        /* Only a zero baseline p95 gets here with enough frames. */
        r->verdict = MPROF_GATE_BAD_INPUT;
        snprintf(r->reason, sizeof r->reason,
                 "the baseline p95 frame time is zero; the exports hold no usable timings");
        goto done;
    }
    r->ci_lo = ci.lo;
    r->ci_hi = ci.hi;
    if (bruns >= 2 && cruns >= 2) {
        bp95 = malloc(bruns * sizeof *bp95);
        cp95 = malloc(cruns * sizeof *cp95);
        bmean = malloc(bruns * sizeof *bmean);
        cmean = malloc(cruns * sizeof *cmean);
        size_t big = nb > nc ? nb : nc;
        scratch = malloc(big * sizeof *scratch);
        if (!bp95 || !cp95 || !bmean || !cmean || !scratch)
            goto oom;
        for (size_t i = 0; i < bruns; i++) {
            bp95[i] = mprof__percentile_select(bv + bs[i], bs[i + 1] - bs[i], 95, scratch);
            bmean[i] = mean_of(bv + bs[i], bs[i + 1] - bs[i]);
        }
        for (size_t i = 0; i < cruns; i++) {
            cp95[i] = mprof__percentile_select(cv + cs[i], cs[i + 1] - cs[i], 95, scratch);
            cmean[i] = mean_of(cv + cs[i], cs[i + 1] - cs[i]);
        }
        /* The run-level interval: how far apart the runs' p95s are, with the t distribution's
         * allowance for judging that from a few runs. */
        mprof_ratio_ci rci;
        if (mprof__runs_log_ratio_ci(bp95, bruns, cp95, cruns, 1.0 - o->alpha, &rci,
                                      &r->run_ci_df) == 0) {
            r->run_ci = 1;
            r->run_ci_lo = rci.lo;
            r->run_ci_hi = rci.hi;
            /* The same interval over the runs' means: a run's p95 rests on its slowest twentieth
             * of frames, so under a busy neighbour it moves by far more from run to run than
             * the run's mean does. A slowdown that moves the whole distribution is seen by
             * the means when the p95s are too scattered; one that moves only the tail still
             * needs the p95s. */
            double df;
            if (mprof__runs_log_ratio_ci(bmean, bruns, cmean, cruns, 1.0 - o->alpha, &rci,
                                          &df) == 0) {
                r->run_mean_ci_lo = rci.lo;
                r->run_mean_ci_hi = rci.hi;
            } else {
                r->run_mean_ci_lo = 0.0;
                r->run_mean_ci_hi = INFINITY;
            }
        }
    }
    if (bruns >= 2 && cruns >= 2 && mprof__mwu_min_p(bruns, cruns) >= o->alpha) {
        size_t k = 2;
        while (mprof__mwu_min_p(k, k) >= o->alpha)
            k++;
        warn(r, "the per-run p95 rank test cannot reach p < %g with %zu and %zu runs (it needs %zu "
                "per side); run-to-run variation enters through the bootstrap and the run-level "
                "interval only",
             o->alpha, bruns, cruns, k);
    } else if (bruns >= 2 && cruns >= 2) {
        mprof_mwu rm;
        if (mprof__mann_whitney(bp95, bruns, cp95, cruns, &rm))
            goto oom;
        r->run_test = 1;
        r->run_p = rm.p_greater;
    } else if (bruns >= 2 || cruns >= 2) {
        warn(r, "the per-run p95 test needs two or more runs on each side (baseline %zu, "
                "current %zu); only the frame-level tests were made", bruns, cruns);
    }

    int rank_ok = r->rank_p < o->alpha;
    int ci_ok = r->ci_lo > 1.0;
    int run_ok = !r->run_test || r->run_p < o->alpha;
    /* One run on a side cannot tell a machine that was busier during that run from slower code:
     * every resample of its frames or blocks carries the same run-wide offset, so the interval
     * would be narrow around whatever that offset made of the ratio. Significance needs two or
     * more runs on each side, whose resampling is what carries run-to-run variation. */
    int runs_ok = bruns >= 2 && cruns >= 2;
    /* With a handful of runs, resampling them understates how much a run can differ from the
     * next (three runs give ten distinct resamples); the run-level interval must clear 1 too. */
    /* Either interval may clear 1: each is a one-sided test at alpha / 2 (the lower end of a
     * 1 - alpha two-sided interval), so the two together keep the false-alarm rate at alpha
     * (Bonferroni). */
    int run_ci_ok = r->run_ci && (r->run_ci_lo > 1.0 || r->run_mean_ci_lo > 1.0);
    r->magnitude =
        r->cur_dec.p95_ms > r->base_dec.p95_ms * (1.0 + o->threshold_pct / 100.0);
    r->significant = rank_ok && ci_ok && run_ok && runs_ok && run_ci_ok;
    double change = 100.0 * (r->p95_ratio - 1.0);
    const char *what = r->noise_model ? "p95 frame time (noise accounted)" : "p95 frame time";
    /* A zone named in a verdict must itself have grown significantly. */
    const mprof_gate_attrib *top =
        r->n_zones > 0 && r->zones[0].significant ? &r->zones[0] : NULL;

    if (!r->magnitude) {
        r->verdict = MPROF_GATE_PASS;
        snprintf(r->reason, sizeof r->reason,
                 "%s changed by %+.1f %%, within the +%g %% threshold%s", what, change,
                 o->threshold_pct,
                 r->significant ? " (the change is statistically significant, but small)" : "");
        /* A distribution that moved as a whole (the median or the mean past the threshold,
         * confirmed by the rank test) is worth a word even when the p95 did not move enough. */
        double p50c = pct_change(r->cur_dec.p50_ms, r->base_dec.p50_ms);
        double meanc = pct_change(r->cur_dec.mean_ms, r->base_dec.mean_ms);
        if (rank_ok && (p50c > o->threshold_pct || meanc > o->threshold_pct)) {
            r->shifted = 1;
            warn(r, "the frame time distribution shifted although its p95 stayed within the "
                    "threshold: p50 %+.1f %%, mean %+.1f %% (rank test p %s%s)%s%s%s",
                 p50c, meanc, pstr(r->rank_p, pb, sizeof pb),
                 runs_ok ? "" : "; one run on a side, so a busier machine could explain it",
                 top ? "; zone \"" : "", top ? top->name : "", top ? "\" grew most" : "");
        }
        goto done;
    }
    if (r->significant) {
        r->verdict = MPROF_GATE_REGRESSION;
        if (top)
            snprintf(r->reason, sizeof r->reason,
                     "%s rose %+.1f %% (threshold +%g %%; %g %% interval of the ratio "
                     "%.3f..%.3f, rank test p %s); most of the growth is in zone \"%s\" "
                     "(%+.3g ms %sper frame)",
                     what, change, o->threshold_pct, 100.0 * (1.0 - o->alpha), r->ci_lo,
                     r->ci_hi, pstr(r->rank_p, pb, sizeof pb), top->name, top->delta_ms,
                     top->on_cpu ? "on-CPU " : "");
        else
            snprintf(r->reason, sizeof r->reason,
                     "%s rose %+.1f %% (threshold +%g %%; %g %% interval of the ratio "
                     "%.3f..%.3f, rank test p %s); no zone grew significantly (the time is "
                     "outside zones, or spread over many)",
                     what, change, o->threshold_pct, 100.0 * (1.0 - o->alpha), r->ci_lo,
                     r->ci_hi, pstr(r->rank_p, pb, sizeof pb));
        goto done;
    }
    if (!runs_ok && rank_ok && ci_ok && run_ok) {
        r->verdict = MPROF_GATE_INCONCLUSIVE;
        r->need_runs = (long)(2 - (bruns < cruns ? bruns : cruns));
        snprintf(r->reason, sizeof r->reason,
                 "%s rose %+.1f %% (threshold +%g %%), but with %zu baseline and %zu current "
                 "run(s) a busier machine during one run cannot be told from slower code; "
                 "record about %ld more runs per side (mprof ci --runs 3 --baseline-cmd ...)",
                 what, change, o->threshold_pct, bruns, cruns, r->need_runs);
        goto done;
    }

    /* Magnitude without evidence: estimate how much more data would decide it. */
    r->verdict = MPROF_GATE_INCONCLUSIVE;
    double f = 1.0;
    int estimable = 1;
    if (!rank_ok) {
        double g = growth_factor(r->rank_p, o->alpha);
        if (g == 0.0)
            estimable = 0;
        else if (g > f)
            f = g;
    }
    if (!ci_ok && r->p95_ratio > 1.0) {
        /* The interval's half-width shrinks with the square root of the frame count. */
        double half = r->p95_ratio - r->ci_lo, room = r->p95_ratio - 1.0;
        double g = (half / room) * (half / room) * 1.1;
        if (g > f)
            f = g;
    }
    size_t have = nb > nc ? nb : nc;
    if (!rank_ok || !ci_ok)
        r->need_frames = estimable ? (long)ceil((double)have * (f - 1.0)) + 1 : 0;
    if (!runs_ok)
        r->need_runs = (long)(2 - (bruns < cruns ? bruns : cruns));
    if (runs_ok && !run_ci_ok && r->p95_ratio > 1.0 && r->run_ci) {
        /* The run-level interval's half-width (in logs) shrinks with the square root of the runs
         * (and its t factor with them: left out, so this is an upper estimate). */
        double half = log(r->p95_ratio) - log(r->run_ci_lo), room = log(r->p95_ratio);
        size_t runs = bruns < cruns ? bruns : cruns;
        long k = room > 0 ? (long)ceil((double)runs * (half / room) * (half / room)) : 0;
        if (k > (long)runs && k - (long)runs > r->need_runs)
            r->need_runs = k - (long)runs;
        else if (r->need_runs < 1)
            r->need_runs = 1;
    }
    if (r->run_test && !run_ok) {
        size_t runs = bruns < cruns ? bruns : cruns, k = runs;
        while (mprof__mwu_min_p(k, k) >= o->alpha)
            k++;
        double g = growth_factor(r->run_p, o->alpha);
        size_t by_z = g > 0 ? (size_t)ceil((double)runs * g) : k;
        if (by_z > k)
            k = by_z;
        r->need_runs = (long)(k - runs);
        if (r->need_runs < 1)
            r->need_runs = 1;
    }
    char more[160] = "";
    if (r->need_frames > 0 && r->need_runs > 0)
        snprintf(more, sizeof more, "; record about %ld more frames and %ld more runs per side",
                 r->need_frames, r->need_runs);
    else if (r->need_frames > 0)
        snprintf(more, sizeof more, "; record about %ld more frames per side", r->need_frames);
    else if (r->need_runs > 0)
        snprintf(more, sizeof more, "; record about %ld more runs per side", r->need_runs);
    else if (!estimable)
        snprintf(more, sizeof more, "; the frame distributions show no shift, only the p95 "
                                    "moved, so more frames alone may not settle it");
    snprintf(r->reason, sizeof r->reason,
             "%s rose %+.1f %% (threshold +%g %%) but not significantly "
             "(rank test p %s, interval %.3f..%.3f%s)%s",
             what, change, o->threshold_pct, pstr(r->rank_p, pb, sizeof pb), r->ci_lo, r->ci_hi,
             r->run_test ? (run_ok ? ", per-run p95s differ" : ", per-run p95s do not differ")
                         : (r->run_ci && !run_ci_ok ? ", the runs' p95s vary too much" : ""),
             more);

done:
    free(bv);
    free(cv);
    free(bs);
    free(cs);
    free(bp95);
    free(cp95);
    free(bmean);
    free(cmean);
    free(scratch);
    return r;
oom:
    free(bv);
    free(cv);
    free(bs);
    free(cs);
    free(bp95);
    free(cp95);
    free(bmean);
    free(cmean);
    free(scratch);
    mprof__gate_result_free(r);
    seterr(err, errlen, "out of memory");
    return NULL;
}

/* ---- writers -------------------------------------------------------------------------------- */

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
    fprintf(out, "mprof gate: %s (exit %d)\n", verdict_upper(r->verdict), (int)r->verdict);
    fprintf(out, "  %s\n\n", r->reason);
    fprintf(out, "  %-16s %12s %12s %9s\n", "", "baseline", "current", "change");
    fprintf(out, "  %-16s %12zu %12zu\n", "runs", r->base.runs, r->cur.runs);
    fprintf(out, "  %-16s %12zu %12zu\n", "frames", r->base.frames, r->cur.frames);
    const char *lbl[4] = {"p50 frame ms", "p95 frame ms", "p99 frame ms", "mean frame ms"};
    double bvals[4] = {r->base.p50_ms, r->base.p95_ms, r->base.p99_ms, r->base.mean_ms};
    double cvals[4] = {r->cur.p50_ms, r->cur.p95_ms, r->cur.p99_ms, r->cur.mean_ms};
    for (int i = 0; i < 4; i++)
        fprintf(out, "  %-16s %12.5g %12.5g %+8.1f%%\n", lbl[i], bvals[i], cvals[i],
                pct_change(cvals[i], bvals[i]));
    if (r->noise_model)
        fprintf(out, "  %-16s %12.5g %12.5g %+8.1f%%\n", "p95 decided ms", r->base_dec.p95_ms,
                r->cur_dec.p95_ms, pct_change(r->cur_dec.p95_ms, r->base_dec.p95_ms));
    if (r->base_p95_off_share >= 0 && r->cur_p95_off_share >= 0)
        fprintf(out, "  %-16s %11.1f%% %11.1f%%\n", "p95 off-CPU", 100.0 * r->base_p95_off_share,
                100.0 * r->cur_p95_off_share);
    if (r->verdict != MPROF_GATE_BAD_INPUT)
        fprintf(out, "\n  noise       %s\n", r->noise_model ? r->noise_note
                                                          : "none (no system tracing on both sides)");
    if (r->verdict != MPROF_GATE_BAD_INPUT && r->base.frames >= (size_t)o->min_frames &&
        r->cur.frames >= (size_t)o->min_frames) {
        fprintf(out, "  magnitude   p95 ratio %.3f vs limit %.3f: %s\n", r->p95_ratio,
                1.0 + o->threshold_pct / 100.0, r->magnitude ? "exceeded" : "within");
        char pb[32];
        fprintf(out, "  rank test   one-sided p %s (%s, P(current > baseline) = %.2f, "
                     "correlation design effect %.1f)\n",
                pstr(r->rank_p, pb, sizeof pb), r->rank_exact ? "exact" : "normal approximation",
                r->rank_effect,
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
                    pstr(r->run_p, pb, sizeof pb));
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
            if (a->per_frame)
                snprintf(p, sizeof p, "%.2g%s", a->p, a->significant ? "*" : "");
            else
                snprintf(p, sizeof p, "runs%s", a->significant ? "*" : "");
            fprintf(out, "  %-32.32s %10.4g %10.4g %+10.3g %9s %8s\n", a->name, a->base_ms,
                    a->cur_ms, a->delta_ms, rel, p);
        }
    }
    for (size_t i = 0; i < r->n_warnings; i++)
        fprintf(out, "  warning: %s\n", r->warnings[i]);
    return ferror(out) ? -1 : 0;
}

/* Rounds to 6 decimals so that reports do not print binary noise (16.666666666666668). */
static double r6(double v)
{
    if (!isfinite(v))
        return v;
    return round(v * 1e6) / 1e6;
}

static cJSON *side_json(const mprof_gate_summary *s, char *const *paths, const char *sha)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON *p = cJSON_AddArrayToObject(o, "files");
    for (size_t i = 0; p && i < s->runs; i++)
        cJSON_AddItemToArray(p, cJSON_CreateString(paths[i]));
    if (sha)
        cJSON_AddStringToObject(o, "gitSha", sha);
    else
        cJSON_AddNullToObject(o, "gitSha");
    cJSON_AddNumberToObject(o, "runs", (double)s->runs);
    cJSON_AddNumberToObject(o, "frameCount", (double)s->frames);
    cJSON_AddNumberToObject(o, "p50FrameTimeMs", r6(s->p50_ms));
    cJSON_AddNumberToObject(o, "p95FrameTimeMs", r6(s->p95_ms));
    cJSON_AddNumberToObject(o, "p99FrameTimeMs", r6(s->p99_ms));
    cJSON_AddNumberToObject(o, "meanFrameTimeMs", r6(s->mean_ms));
    return o;
}

int mprof__gate_write_json(const mprof_gate_result *r, FILE *out)
{
    const mprof_gate_opts *o = &r->opts;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return -1;
    cJSON_AddStringToObject(j, "schema", MPROF_GATE_SCHEMA);
    cJSON_AddStringToObject(j, "verdict", mprof__gate_verdict_name(r->verdict));
    cJSON_AddNumberToObject(j, "exitCode", (double)r->verdict);
    cJSON_AddStringToObject(j, "reason", r->reason);
    cJSON_AddNumberToObject(j, "thresholdPct", o->threshold_pct);
    cJSON_AddNumberToObject(j, "alpha", o->alpha);
    cJSON_AddNumberToObject(j, "skipFrames", o->skip_frames);
    cJSON_AddNumberToObject(j, "minFrames", o->min_frames);
    cJSON_AddBoolToObject(j, "allowDifferentMachines", o->allow_different_machines != 0);
    cJSON_AddItemToObject(j, "baseline", side_json(&r->base, r->base_paths, r->base_git_sha));
    cJSON_AddItemToObject(j, "current", side_json(&r->cur, r->cur_paths, r->cur_git_sha));
    cJSON *nz = cJSON_AddObjectToObject(j, "noise");
    if (nz) {
        static const char *const models[3] = {"none", "off-cpu", "off-cpu-machine-busy"};
        cJSON_AddStringToObject(nz, "model", models[r->noise_model]);
        cJSON_AddStringToObject(nz, "note", r->noise_note);
        const double shares[2] = {r->base_p95_off_share, r->cur_p95_off_share};
        const char *sk[2] = {"baselineP95OffCpuShare", "currentP95OffCpuShare"};
        for (int k = 0; k < 2; k++) {
            if (shares[k] >= 0)
                cJSON_AddNumberToObject(nz, sk[k], r6(shares[k]));
            else
                cJSON_AddNullToObject(nz, sk[k]);
        }
        cJSON_AddNumberToObject(nz, "baselineDecisionP95Ms", r6(r->base_dec.p95_ms));
        cJSON_AddNumberToObject(nz, "currentDecisionP95Ms", r6(r->cur_dec.p95_ms));
        cJSON_AddNumberToObject(nz, "baselineDecisionP50Ms", r6(r->base_dec.p50_ms));
        cJSON_AddNumberToObject(nz, "currentDecisionP50Ms", r6(r->cur_dec.p50_ms));
    }
    cJSON_AddNumberToObject(j, "rawP95Ratio", r6(r->raw_p95_ratio));
    cJSON_AddBoolToObject(j, "shifted", r->shifted != 0);
    cJSON_AddNumberToObject(j, "p95Ratio", r6(r->p95_ratio));
    cJSON_AddNumberToObject(j, "p95ChangePct", r6(100.0 * (r->p95_ratio - 1.0)));
    cJSON_AddBoolToObject(j, "magnitude", r->magnitude != 0);
    cJSON_AddBoolToObject(j, "significant", r->significant != 0);
    cJSON *ci = cJSON_AddObjectToObject(j, "p95RatioInterval");
    if (ci) {
        cJSON_AddNumberToObject(ci, "level", r6(1.0 - o->alpha));
        cJSON_AddNumberToObject(ci, "low", r6(r->ci_lo));
        cJSON_AddNumberToObject(ci, "high", r6(r->ci_hi));
        cJSON_AddNumberToObject(ci, "resamples", o->n_resamples);
    }
    cJSON *rk = cJSON_AddObjectToObject(j, "rankTest");
    if (rk) {
        cJSON_AddNumberToObject(rk, "u", r6(r->rank_u));
        cJSON_AddNumberToObject(rk, "z", r6(r->rank_z));
        cJSON_AddNumberToObject(rk, "pGreater", r->rank_p);
        cJSON_AddNumberToObject(rk, "effect", r6(r->rank_effect));
        cJSON_AddBoolToObject(rk, "exact", r->rank_exact != 0);
        cJSON_AddNumberToObject(rk, "designEffect", r6(r->rank_design_effect));
        cJSON_AddNumberToObject(rk, "blocksPerRun", o->blocks);
    }
    if (r->run_ci) {
        cJSON *ri = cJSON_AddObjectToObject(j, "runInterval");
        if (ri) {
            cJSON_AddNumberToObject(ri, "level", r6(1.0 - o->alpha));
            cJSON_AddNumberToObject(ri, "low", r6(r->run_ci_lo));
            cJSON_AddNumberToObject(ri, "high", r6(r->run_ci_hi));
            cJSON_AddNumberToObject(ri, "df", r6(r->run_ci_df));
            cJSON_AddNumberToObject(ri, "meanLow", r6(r->run_mean_ci_lo));
            if (isfinite(r->run_mean_ci_hi))
                cJSON_AddNumberToObject(ri, "meanHigh", r6(r->run_mean_ci_hi));
            else
                cJSON_AddNullToObject(ri, "meanHigh");
        }
    } else {
        cJSON_AddNullToObject(j, "runInterval");
    }
    if (r->run_test) {
        cJSON *rt = cJSON_AddObjectToObject(j, "runTest");
        if (rt)
            cJSON_AddNumberToObject(rt, "pGreater", r->run_p);
    } else {
        cJSON_AddNullToObject(j, "runTest");
    }
    cJSON_AddNumberToObject(j, "needMoreFrames", (double)r->need_frames);
    cJSON_AddNumberToObject(j, "needMoreRuns", (double)r->need_runs);
    cJSON *zs = cJSON_AddArrayToObject(j, "zones");
    for (size_t i = 0; zs && i < r->n_zones; i++) {
        const mprof_gate_attrib *a = &r->zones[i];
        cJSON *z = cJSON_CreateObject();
        if (!z)
            break;
        cJSON_AddStringToObject(z, "name", a->name);
        if (a->function)
            cJSON_AddStringToObject(z, "function", a->function);
        cJSON_AddNumberToObject(z, "baselineSelfMsPerFrame", r6(a->base_ms));
        cJSON_AddNumberToObject(z, "currentSelfMsPerFrame", r6(a->cur_ms));
        cJSON_AddNumberToObject(z, "deltaMs", r6(a->delta_ms));
        if (isinf(a->delta_pct))
            cJSON_AddNullToObject(z, "deltaPct");
        else
            cJSON_AddNumberToObject(z, "deltaPct", r6(a->delta_pct));
        cJSON_AddNumberToObject(z, "baselineInclusiveMsPerFrame", r6(a->base_incl_ms));
        cJSON_AddNumberToObject(z, "currentInclusiveMsPerFrame", r6(a->cur_incl_ms));
        if (a->per_frame)
            cJSON_AddNumberToObject(z, "pGreater", a->p);
        else
            cJSON_AddNullToObject(z, "pGreater");
        cJSON_AddBoolToObject(z, "significant", a->significant != 0);
        cJSON_AddBoolToObject(z, "runLevelSignificant", a->run_significant != 0);
        if (isfinite(a->run_t))
            cJSON_AddNumberToObject(z, "runLevelT", r6(a->run_t));
        else
            cJSON_AddNullToObject(z, "runLevelT");
        cJSON_AddBoolToObject(z, "onCpu", a->on_cpu != 0);
        cJSON_AddNumberToObject(z, "baselineOffCpuMsPerFrame", r6(a->base_off_ms));
        cJSON_AddNumberToObject(z, "currentOffCpuMsPerFrame", r6(a->cur_off_ms));
        cJSON_AddItemToArray(zs, z);
    }
    cJSON *ws = cJSON_AddArrayToObject(j, "warnings");
    for (size_t i = 0; ws && i < r->n_warnings; i++)
        cJSON_AddItemToArray(ws, cJSON_CreateString(r->warnings[i]));
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text)
        return -1;
    fputs(text, out);
    fputc('\n', out);
    free(text);
    return ferror(out) ? -1 : 0;
}

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
                pct_change(cvals[i], bvals[i]));
    if (r->verdict != MPROF_GATE_BAD_INPUT && r->base.frames >= (size_t)o->min_frames &&
        r->cur.frames >= (size_t)o->min_frames) {
        fprintf(out, "\nThreshold +%g %%. p95 ratio %.3f, %g %% interval %.3f to %.3f; "
                     "rank test p %s",
                o->threshold_pct, r->p95_ratio, 100.0 * (1.0 - o->alpha), r->ci_lo, r->ci_hi,
                pstr(r->rank_p, pb, sizeof pb));
        if (r->run_ci)
            fprintf(out, "; run-level interval %.3f to %.3f", r->run_ci_lo, r->run_ci_hi);
        if (r->run_test)
            fprintf(out, "; per-run p95 test p %s", pstr(r->run_p, pb, sizeof pb));
        fprintf(out, ".\n");
    }
    if (r->verdict != MPROF_GATE_BAD_INPUT) {
        fputs("\nNoise: ", out);
        md_cell(out, r->noise_model ? r->noise_note : "none (no system tracing on both sides)");
        if (r->noise_model)
            fprintf(out, "; decided p95 %.5g ms -> %.5g ms", r->base_dec.p95_ms, r->cur_dec.p95_ms);
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
            fputs(a->significant ? "yes |\n" : "no |\n", out);
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
    return ferror(out) ? -1 : 0;
}
