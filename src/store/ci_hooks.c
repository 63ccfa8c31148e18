/*
 * ci_hooks.c - what `mprof ci` does with a run store: --baseline store[:last=N] turns the last N
 * passing runs of this host and build type into frame exports the gate reads (a rolling
 * baseline), and --store records the run after ci-report.json is written, after which the report
 * is written again with a "store" member saying what happened.
 *
 * A store that cannot be used never costs the CI run its report: the report is written first,
 * the failure is added to it (reasons[], store.error), and the exit status becomes 4 when it
 * would have been 0, so a job can tell "the build is fine but the history missed it" from a
 * regression (1) or a broken run (3). The exit status of a store failure for `mprof store` and
 * `mprof history` is here too.
 */
#define _POSIX_C_SOURCE 200809L

#include "store/ci_hooks.h"

#include "store/store_json.h"
#include "util/tool.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_LAST 5

int mprof__store_exit_code(mprof_store_result rc)
{
    switch (rc) {
    case MPROF_STORE_OK:
        return EXIT_OK;
    case MPROF_STORE_BAD_URL:
        return EXIT_USAGE;
    case MPROF_STORE_BAD_INPUT:
        return EXIT_IO;
    default:
        return EXIT_STORE;
    }
}

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

/* ---- the rolling baseline ------------------------------------------------------------------- */

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

/* Writes every repetition with frames of the n runs as a frame export in st->baseline_dir.
 * Returns how many, or stops at the first that cannot be written (st->baseline_failed). */
static size_t write_baseline(mprof_ci_store *st, const mprof_store_run *runs, size_t n)
{
    size_t written = 0;
    for (size_t i = 0; i < n && !st->baseline_failed; i++) {
        for (size_t k = 0; k < runs[i].n_reps; k++) {
            if (runs[i].reps[k].n_frames == 0)
                continue;
            char path[1400];
            snprintf(path, sizeof path, "%s/run%06lld-%03zu.json", st->baseline_dir,
                     (long long)runs[i].id, k + 1);
            FILE *f = fopen(path, "w");
            int ok = f && mprof__store_write_export(&runs[i], k, f) == 0;
            if (f && fclose(f) != 0)
                ok = 0;
            if (!ok) {
                st->baseline_failed = 1;
                snprintf(st->baseline_error, sizeof st->baseline_error,
                         "cannot write the baseline export %s: %s", path, strerror(errno));
                tool_error("ci", EXIT_STORE, "%s (the gate is skipped)", st->baseline_error);
                break;
            }
            written++;
        }
        size_t max_ids = sizeof st->baseline_ids / sizeof st->baseline_ids[0];
        if (written && st->n_baseline_ids < max_ids &&
            (st->n_baseline_ids == 0 || st->baseline_ids[st->n_baseline_ids - 1] != runs[i].id))
            st->baseline_ids[st->n_baseline_ids++] = runs[i].id;
    }
    return written;
}

void mprof__ci_store_baseline(mprof_ci_store *st, const char *url, const char **baseline,
                              const char *dir, const char *current_export, int quiet)
{
    st->baseline_used = 1;
    st->baseline_failed = 0;
    st->n_baseline_ids = 0;
    st->baseline_last = parse_last(*baseline);
    *baseline = NULL;
    snprintf(st->baseline_dir, sizeof st->baseline_dir, "%.1100s/store-baseline", dir);
    /* The current run says which machine and build type to look up. */
    char err[2048];
    mprof_store_run cur;
    if (mprof__store_load_file(current_export, &cur, err, sizeof err) != MPROF_STORE_OK) {
        st->baseline_failed = 1;
        snprintf(st->baseline_error, sizeof st->baseline_error,
                 "cannot read the current export: %s", err);
        return;
    }
    mprof_store_result rc;
    mprof_store *s = mprof__store_open(url, &rc, err, sizeof err);
    mprof_store_run *runs = NULL;
    size_t n = 0;
    if (s)
        rc = mprof__store_baseline(s, cur.host, cur.build_type, st->baseline_last, &runs, &n, err,
                                   sizeof err);
    if (!s || rc != MPROF_STORE_OK) {
        st->baseline_failed = 1;
        snprintf(st->baseline_error, sizeof st->baseline_error, "no baseline from the store: %s",
                 err);
        tool_error("ci", EXIT_STORE, "%s (the gate is skipped)", st->baseline_error);
        mprof__store_close(s);
        mprof__store_run_clear(&cur);
        return;
    }
    mkdir(st->baseline_dir, 0777);
    clear_json_files(st->baseline_dir);
    size_t written = write_baseline(st, runs, n);
    if (!st->baseline_failed && written > 0)
        *baseline = st->baseline_dir;
    if (!quiet && !st->baseline_failed)
        printf("mprof ci: baseline from %s: %zu passing run%s of host \"%s\", build type \"%s\" "
               "(last=%zu)%s\n", mprof__store_display(s), st->n_baseline_ids,
               st->n_baseline_ids == 1 ? "" : "s", cur.host ? cur.host : "",
               cur.build_type ? cur.build_type : "", st->baseline_last,
               written ? "" : ": no gate, this run starts the history");
    mprof__store_runs_free(runs, n);
    mprof__store_close(s);
    mprof__store_run_clear(&cur);
}

/* ---- the record ----------------------------------------------------------------------------- */

int mprof__ci_store_asked(const mprof_ci_store *st, const char *url)
{
    return url || st->baseline_used;
}

/* "the run was not stored: " before the message in err. */
static void not_stored(char *err, size_t errlen)
{
    char m[2048];
    snprintf(m, sizeof m, "%s", err);
    tool_seterr(err, errlen, "the run was not stored: %s", m);
}

/* Stores the run that the report at report_path describes. Returns the stored run's id (with
 * how it was stored, when worth a word, in note), or -1 with the failure in err, which says
 * whether the run is not stored or, its commit in doubt, may be. */
static int64_t store_run(const char *url, const char *report_path, char *err, size_t errlen,
                         char *note, size_t notelen)
{
    mprof_store_run run;
    mprof_store_result rc = mprof__store_load_file(report_path, &run, err, errlen);
    if (rc != MPROF_STORE_OK) {
        not_stored(err, errlen);
        return -1;
    }
    int64_t id = -1;
    char branch[256];
    tool_git_branch(branch, sizeof branch);
    if (branch[0] && !run.branch)
        run.branch = tool_strdup(branch);
    mprof_store *s = mprof__store_open(url, &rc, err, errlen);
    if (!s)
        not_stored(err, errlen);
    else
        rc = mprof__store_add(s, &run, err, errlen);
    if (s && rc == MPROF_STORE_OK) {
        id = run.id;
        snprintf(note, notelen, "%s", mprof__store_added_note(&run));
    }
    mprof__store_close(s);
    mprof__store_run_clear(&run);
    return id;
}

int mprof__ci_store_record(mprof_ci_store *st, const char *url, const char *report_path,
                           int exit_code, int quiet)
{
    if (!mprof__ci_store_asked(st, url))
        return exit_code;
    st->recorded = 1;
    st->run_id = -1;
    st->url[0] = '\0';
    char err[2048] = "";
    int failed = st->baseline_failed;
    if (url) {
        mprof_store_url parsed;
        if (mprof__store_parse_url(url, &parsed, err, sizeof err) == MPROF_STORE_OK)
            snprintf(st->url, sizeof st->url, "%s", parsed.display);
        char note[256] = "";
        st->run_id = store_run(url, report_path, err, sizeof err, note, sizeof note);
        if (st->run_id < 0) {
            failed = 1;
            tool_error("ci", EXIT_STORE, "%s (%s is written)", err, report_path);
        } else if (!quiet) {
            printf("mprof ci: stored as run %lld in %s%s\n", (long long)st->run_id, st->url, note);
        }
    }
    st->error[0] = '\0';
    if (st->baseline_failed)
        snprintf(st->error, sizeof st->error, "%s", st->baseline_error);
    if (url && st->run_id < 0) {
        size_t l = strlen(st->error);
        snprintf(st->error + l, sizeof st->error - l, "%s%s", l ? "; " : "", err);
    }
    return failed && exit_code == EXIT_OK ? EXIT_STORE : exit_code;
}

const mprof_ci_report_store *mprof__ci_store_note(const mprof_ci_store *st,
                                                  mprof_ci_report_store *out)
{
    if (!st->recorded)
        return NULL;
    *out = (mprof_ci_report_store){
        .url = st->url,
        .run_id = st->run_id,
        .baseline = st->baseline_used,
        .baseline_last = st->baseline_last,
        .baseline_ids = st->baseline_ids,
        .n_baseline_ids = st->n_baseline_ids,
        .baseline_dir = st->baseline_dir,
        .error = st->error,
    };
    return out;
}
