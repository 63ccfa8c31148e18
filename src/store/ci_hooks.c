/*
 * ci_store.c - what `mprof ci` does with a run store: --baseline store[:last=N] turns the last N
 * passing runs of this host and build type into frame exports the gate reads (a rolling
 * baseline), and --store records the run after ci-report.json is written, then adds a "store"
 * object to the report saying what happened.
 *
 * A store that cannot be used never costs the CI run its report: the report is written first,
 * the failure is added to it (reasons[], store.error), and the exit status becomes 4 when it
 * would have been 0, so a job can tell "the build is fine but the history missed it" from a
 * regression (1) or a broken run (3). cmd_ci.c calls the three hooks declared in ci_store.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "store/ci_hooks.h"

#include "gate/gate.h"
#include "util/tool.h"
#include "store/store_json.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_LAST 5

/* What the baseline step leaves for the record step (one ci run per process). */
static struct {
    int used;                /* --baseline store was asked for */
    int failed;              /* the store could not give a baseline */
    char error[2200];
    char dir[1200];          /* where the baseline exports went */
    size_t n_runs;
    int64_t ids[64];
    size_t last;
} g_base;

int mprof__ci_store_is_baseline(const char *b)
{
    return b && (strcmp(b, "store") == 0 || strncmp(b, "store:", 6) == 0);
}

/* "store" -> 5, "store:last=N" -> N (1..64); 0 when malformed. */
static size_t parse_last(const char *b)
{
    if (strcmp(b, "store") == 0)
        return DEFAULT_LAST;
    if (strncmp(b, "store:last=", 11) != 0)
        return 0;
    char *end;
    errno = 0;
    long v = strtol(b + 11, &end, 10);
    if (errno || end == b + 11 || *end || v < 1 || v > 64)
        return 0;
    return (size_t)v;
}

int mprof__ci_store_check_args(const char *url, const char *baseline)
{
    char err[2048];
    if (url) {
        mprof_store_url parsed;
        if (mprof__store_parse_url(url, &parsed, err, sizeof err) != MPROF_STORE_OK) {
            tool_error("ci", EXIT_USAGE, "--store: %s", err);
            return -1;
        }
    }
    if (mprof__ci_store_is_baseline(baseline)) {
        if (!parse_last(baseline)) {
            tool_error("ci", EXIT_USAGE, "--baseline %s: write store or store:last=N (N from 1 "
                       "to 64)", baseline);
            return -1;
        }
        if (!url) {
            tool_error("ci", EXIT_USAGE, "--baseline %s needs --store URL", baseline);
            return -1;
        }
    }
    return 0;
}

static void clear_json_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json") != 0)
            continue;
        char p[1600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        tool_remove_partial(p);
    }
    closedir(d);
}

void mprof__ci_store_baseline(const char *url, const char **baseline, const char *dir,
                              const char *current_export, int quiet)
{
    memset(&g_base, 0, sizeof g_base);
    g_base.used = 1;
    g_base.last = parse_last(*baseline);
    *baseline = NULL;
    snprintf(g_base.dir, sizeof g_base.dir, "%.1100s/store-baseline", dir);
    /* The current run says which machine and build type to look up. */
    char err[2048];
    mprof_store_run cur;
    if (mprof__store_load_file(current_export, &cur, err, sizeof err) != MPROF_STORE_OK) {
        g_base.failed = 1;
        snprintf(g_base.error, sizeof g_base.error, "cannot read the current export: %s", err);
        return;
    }
    mprof_store_result rc;
    mprof_store *s = mprof__store_open(url, &rc, err, sizeof err);
    mprof_store_run *runs = NULL;
    size_t n = 0;
    if (s)
        rc = mprof__store_baseline(s, cur.host, cur.build_type, g_base.last, &runs, &n, err,
                                   sizeof err);
    if (!s || rc != MPROF_STORE_OK) {
        g_base.failed = 1;
        snprintf(g_base.error, sizeof g_base.error, "no baseline from the store: %s", err);
        tool_error("ci", EXIT_STORE, "%s (the gate is skipped)", g_base.error);
        mprof__store_close(s);
        mprof__store_run_clear(&cur);
        return;
    }
    mkdir(g_base.dir, 0777);
    clear_json_files(g_base.dir);
    size_t written = 0;
    for (size_t i = 0; i < n && !g_base.failed; i++) {
        for (size_t k = 0; k < runs[i].n_reps; k++) {
            if (runs[i].reps[k].n_frames == 0)
                continue;
            char path[1400];
            snprintf(path, sizeof path, "%s/run%06lld-%03zu.json", g_base.dir,
                     (long long)runs[i].id, k + 1);
            FILE *f = fopen(path, "w");
            int ok = f && mprof__store_write_export(&runs[i], k, f) == 0;
            if (f && fclose(f) != 0)
                ok = 0;
            if (!ok) {
                g_base.failed = 1;
                snprintf(g_base.error, sizeof g_base.error, "cannot write the baseline export %s: "
                         "%s", path, strerror(errno));
                tool_error("ci", EXIT_STORE, "%s (the gate is skipped)", g_base.error);
                break;
            }
            written++;
        }
        if (written && g_base.n_runs < sizeof g_base.ids / sizeof g_base.ids[0] &&
            (g_base.n_runs == 0 || g_base.ids[g_base.n_runs - 1] != runs[i].id))
            g_base.ids[g_base.n_runs++] = runs[i].id;
    }
    if (!g_base.failed && written > 0)
        *baseline = g_base.dir;
    if (!quiet && !g_base.failed)
        printf("mprof ci: baseline from %s: %zu passing run%s of host \"%s\", build type \"%s\" "
               "(last=%zu)%s\n", mprof__store_display(s), g_base.n_runs, g_base.n_runs == 1 ? "" : "s",
               cur.host ? cur.host : "", cur.build_type ? cur.build_type : "", g_base.last,
               written ? "" : ": no gate, this run starts the history");
    mprof__store_runs_free(runs, n);
    mprof__store_close(s);
    mprof__store_run_clear(&cur);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 14, len = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

static void git_branch(char *out, size_t n)
{
    out[0] = '\0';
    const char *v = getenv("MPROF_GIT_BRANCH");
    if (v && *v) {
        snprintf(out, n, "%s", v);
        return;
    }
    FILE *p = popen("git rev-parse --abbrev-ref HEAD 2>/dev/null", "r");
    if (!p)
        return;
    char line[256] = "";
    char *got = fgets(line, sizeof line, p);
    if (pclose(p) != 0 || !got)
        return;
    line[strcspn(line, "\r\n")] = '\0';
    if (strcmp(line, "HEAD") != 0)
        snprintf(out, n, "%s", line);
}

int mprof__ci_store_record(const char *url, const char *report_path, int exit_code, int quiet)
{
    if (!url && !g_base.used)
        return exit_code;
    char err[2048] = "";
    int failed = g_base.failed;
    int64_t id = -1;
    char display[4096] = "";
    if (url) {
        mprof_store_url parsed;
        if (mprof__store_parse_url(url, &parsed, err, sizeof err) == MPROF_STORE_OK)
            snprintf(display, sizeof display, "%s", parsed.display);
        mprof_store_run run;
        mprof_store_result rc = mprof__store_load_file(report_path, &run, err, sizeof err);
        if (rc == MPROF_STORE_OK) {
            char branch[256];
            git_branch(branch, sizeof branch);
            if (branch[0] && !run.branch)
                run.branch = strdup(branch);
            mprof_store *s = mprof__store_open(url, &rc, err, sizeof err);
            if (s)
                rc = mprof__store_add(s, &run, err, sizeof err);
            if (s && rc == MPROF_STORE_OK)
                id = run.id;
            mprof__store_close(s);
            mprof__store_run_clear(&run);
        }
        if (id < 0) {
            failed = 1;
            tool_error("ci", EXIT_STORE, "the run was not stored: %s (%s is written)", err,
                       report_path);
        } else if (!quiet) {
            printf("mprof ci: stored as run %lld in %s\n", (long long)id, display);
        }
    }
    /* Tell the report. */
    char *text = read_text(report_path);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!j)
        return failed && exit_code == EXIT_OK ? EXIT_STORE : exit_code;
    int code = failed && exit_code == EXIT_OK ? EXIT_STORE : exit_code;
    cJSON *st = cJSON_CreateObject();
    if (st) {
        if (display[0])
            cJSON_AddStringToObject(st, "url", display);
        else
            cJSON_AddNullToObject(st, "url");
        if (id >= 0)
            cJSON_AddNumberToObject(st, "runId", (double)id);
        else
            cJSON_AddNullToObject(st, "runId");
        if (g_base.used) {
            cJSON *b = cJSON_AddObjectToObject(st, "baseline");
            if (b) {
                cJSON_AddNumberToObject(b, "last", (double)g_base.last);
                cJSON *ids = cJSON_AddArrayToObject(b, "runIds");
                for (size_t i = 0; ids && i < g_base.n_runs; i++)
                    cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)g_base.ids[i]));
                cJSON_AddStringToObject(b, "dir", g_base.dir);
            }
        } else {
            cJSON_AddNullToObject(st, "baseline");
        }
        char msg[4200] = "";
        if (g_base.failed)
            snprintf(msg, sizeof msg, "%s", g_base.error);
        if (url && id < 0)
            snprintf(msg + strlen(msg), sizeof msg - strlen(msg), "%sthe run was not stored: %s",
                     msg[0] ? "; " : "", err);
        if (msg[0])
            cJSON_AddStringToObject(st, "error", msg);
        else
            cJSON_AddNullToObject(st, "error");
        cJSON_AddItemToObject(j, "store", st);
        cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "reasons");
        if (msg[0] && cJSON_IsArray(rs)) {
            char r[4300];
            snprintf(r, sizeof r, "the run store failed: %s", msg);
            cJSON_AddItemToArray(rs, cJSON_CreateString(r));
        }
        cJSON *ec = cJSON_GetObjectItemCaseSensitive(j, "exitCode");
        if (cJSON_IsNumber(ec))
            cJSON_SetNumberValue(ec, code);
    }
    char *out = cJSON_Print(j);
    cJSON_Delete(j);
    FILE *f = out ? fopen(report_path, "w") : NULL;
    int ok = f && fprintf(f, "%s\n", out) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    free(out);
    if (!ok) {
        tool_error("ci", EXIT_IO, "%s: cannot add the store's outcome to the report", report_path);
        return EXIT_IO;
    }
    if (!quiet && failed)
        printf("mprof ci: the run store failed (exit %d): see \"store\" in %s\n", code,
               report_path);
    return code;
}
