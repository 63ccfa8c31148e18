/*
 * cmd_ci.c - `mprof ci`: wrap a test command with a live capture, export its frames, gate them
 * against a baseline and write one CI report (mprof.ciReport.v1). docs/GATE.md describes it.
 *
 * This file holds the options and the order of the steps; src/ci/ holds the steps themselves
 * (ci/ci.h lists them) and src/store/ci_hooks.c what is done with a run store. Each run of the
 * command (and of the baseline command, interleaved with it) is supervised beside `mprof
 * capture`, its artifact checked and its frames exported; then the current runs' figures are
 * pooled, the gate runs when there is a baseline, and the report is written whatever happened,
 * with the reasons for a failure in it.
 */
#define _POSIX_C_SOURCE 200809L

#include "ci/ci.h"
#include "ci/self_test.h"
#include "ci/workload.h"
#include "export/frames_run.h"
#include "mprof_tool.h"
#include "store/ci_hooks.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const help =
    "usage: mprof ci [options] -- COMMAND [ARGS...]\n"
    "       mprof ci --self-test [--output-dir DIR]\n"
    "\n"
    "Runs COMMAND (an instrumented test program) under a live capture, requires the capture,\n"
    "exports its frames into DIR/current/, gates them against the baseline when there is one,\n"
    "and writes DIR/ci-report.json (schema mprof.ciReport.v1): git SHA, command and exit code,\n"
    "capture path and size, events lost, frame count and percentiles, baseline p95, threshold,\n"
    "verdict, reasons (failures only), warnings, every run, and timings.\n"
    "\n"
    "Options:\n"
    "  --output-dir DIR          where everything goes (default Saved/Profiling/mprofCI)\n"
    "  --required-artifact PATH  the capture file (default DIR/ci-capture.mprof)\n"
    "  --baseline DIR            frame exports to gate against (default DIR/baseline when it\n"
    "                            holds any *.json; no baseline: no gate, verdict no-baseline)\n"
    "  --threshold PCT           the gate's magnitude threshold (default 10)\n"
    "  --skip-frames N           warm-up frames the gate drops (default 0)\n"
    "  --address A               address the command listens on (default 127.0.0.1)\n"
    "  --port P                  port (default 8086)\n"
    "  --seconds S               stop the capture after S seconds (default: when the command ends)\n"
    "  --max-lost N              events that may be lost before the run fails (default 0)\n"
    "  --allow-incomplete        accept a capture that did not end cleanly (cut off, the\n"
    "                            process vanished, a corrupt stream, a full disk, chunks\n"
    "                            missing); by default such a run fails\n"
    "  --drain-seconds S         how long the capture may take to finish after the command\n"
    "                            ends before it is stopped (default 10)\n"
    "  --fail-on-inconclusive    exit 1 when the gate is inconclusive (default: exit 0, noted)\n"
    "  --store URL               record the run in a run store: sqlite:PATH or\n"
    "                            postgresql://... (docs/STORE.md)\n"
    "  --baseline store[:last=N] gate against the last N (default 5) passing runs of this host\n"
    "                            and build type in the --store\n"
    "  --runs N                  run COMMAND N times and gate on all of them (default 3; the\n"
    "                            gate needs 2 or more runs per side to call anything significant)\n"
    "  --baseline-cmd CMD        also run the baseline build's command (a shell command line)\n"
    "                            N times, interleaved with COMMAND (baseline 1, current 1,\n"
    "                            baseline 2, ...) on the same machine, and gate against those\n"
    "                            runs (DIR/baseline-runs/) instead of --baseline\n"
    "  --expect-exit CODES       exit statuses the commands may end with, comma-separated\n"
    "                            (default 0; e.g. 0,255 for a timedemo that exits 255)\n"
    "  --self-test               check this installation: run a built-in instrumented workload\n"
    "                            against its own baseline (must pass) and with Physics made 30 %\n"
    "                            slower (must be a regression naming Physics)\n"
    "  --process NAME            export the frames of process NAME (a capture of several\n"
    "                            processes, as mprof export --process)\n"
    "  --jobs N                  threads that decode the capture (default: one a core; 1:\n"
    "                            none); the export is the same for any N\n"
    "  -h, --help                show this help\n"
    "\n"
    "The environment of COMMAND gets MPROF_LISTEN=1, MPROF_ADDRESS, MPROF_PORT, MPROF_GIT_SHA\n"
    "(from the environment, else `git rev-parse HEAD`) and MPROF_CAPTURE=DIR/inprocess-capture.mprof:\n"
    "when the live capture misses the run (a command shorter than the tool's 100 ms retry), the\n"
    "in-process file becomes the artifact and the report says so (capture.source).\n"
    "COMMAND runs in a process group of its own; a SIGINT or SIGTERM to ci is passed on to it.\n"
    "However ci ends, a SIGKILL included, COMMAND (and what it started) and the capture end\n"
    "with it: they are told of ci's death (PR_SET_PDEATHSIG), the group gets SIGTERM, then\n"
    "SIGKILL 5 s later, and the port is free again.\n"
    "\n"
    "Exit status: 0 pass (also no baseline, or inconclusive without --fail-on-inconclusive);\n"
    "1 regression, the command failed, or too many events were lost; 2 usage error; 3 the\n"
    "artifact is missing or invalid, the run has no frames, the gate refused the input (bad\n"
    "input), or an output cannot be written; 4 the run store (--store, --baseline store) could\n"
    "not be used though the run itself passed (ci-report.json is written and says why).\n";

#define DEFAULT_DIR "Saved/Profiling/mprofCI"
#define DEFAULT_RUNS 3

/* Where one invocation puts things (under --output-dir). */
typedef struct ci_paths {
    char self[1024];          /* this executable */
    char report[1200];        /* ci-report.json */
    char current[1200];       /* the current runs' frame exports */
    char runs[1200];          /* the other runs' captures and logs */
    char base_runs[1200];     /* the baseline command's frame exports */
} ci_paths;

/* Removes the frame exports a previous `mprof ci` left in dir (frames.json, frames-K.json), so
 * that a side holds this invocation's runs only. */
static void clear_exports(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[1400];
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, "frames", 6) != 0 || l < 11 || strcmp(e->d_name + l - 5, ".json"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* Creates the folders of the invocation and clears the frame exports of an earlier one. Returns
 * 0, or -1 with a reason in r. */
static int prepare(const mprof_ci_opts *o, ci_paths *p, mprof_ci_result *r)
{
    snprintf(p->report, sizeof p->report, "%s/ci-report.json", o->dir);
    snprintf(p->current, sizeof p->current, "%s/current", o->dir);
    snprintf(p->runs, sizeof p->runs, "%s/runs", o->dir);
    snprintf(p->base_runs, sizeof p->base_runs, "%s/baseline-runs", o->dir);
    snprintf(r->capture_log, sizeof r->capture_log, "%s/capture.log", o->dir);
    char art_dir[1024];
    snprintf(art_dir, sizeof art_dir, "%s", o->artifact);
    char *slash = strrchr(art_dir, '/');
    if (slash)
        *slash = '\0';
    if (tool_mkdirs(o->dir) || tool_mkdirs(p->current) || (slash && tool_mkdirs(art_dir)) ||
        ((o->runs > 1 || o->baseline_argv) && tool_mkdirs(p->runs)) ||
        (o->baseline_argv && tool_mkdirs(p->base_runs))) {
        mprof__ci_reason(r, "cannot create %s: %s", o->dir, strerror(errno));
        return -1;
    }
    if (mprof__ci_self_path(p->self, sizeof p->self)) {
        mprof__ci_reason(r, "cannot find the mprof executable (/proc/self/exe)");
        return -1;
    }
    clear_exports(p->current);
    if (o->baseline_argv)
        clear_exports(p->base_runs);
    return 0;
}

/* One run of one command (argv) under a live capture to artifact, its frames exported to
 * r->export_path. r is this run's own result (reasons, capture, frames). Returns EXIT_OK,
 * EXIT_VERDICT (the command failed, events were lost) or EXIT_IO (no usable artifact, no
 * export, no frames). */
static int capture_one(const mprof_ci_opts *o, char **argv, const char *side,
                       const char *artifact, const char *self, mprof_ci_result *r)
{
    snprintf(r->artifact_path, sizeof r->artifact_path, "%s", artifact);
    tool_remove_partial(artifact);
    char inprocess[1100];
    snprintf(inprocess, sizeof inprocess, "%.1000s/inprocess-capture.mprof", o->dir);
    pid_t cmd;
    int failed = mprof__ci_supervise(o, argv, artifact, self, inprocess, r, &cmd);
    if (failed < 0)
        return EXIT_IO;
    int code = mprof__ci_artifact(o, artifact, inprocess, cmd, side, r);
    return code != EXIT_OK ? code : (failed ? EXIT_VERDICT : EXIT_OK);
}

/* Run k of one side (baseline: the baseline command), with its artifact, log and export named
 * after it. Returns capture_one's exit code, the run's outcome in one. */
static int run_side(const mprof_ci_opts *o, const ci_paths *p, int side, int k,
                    const mprof_ci_result *r, mprof_ci_result *one)
{
    memset(one, 0, sizeof *one);
    one->artifact_bytes = -1;
    one->frames = -1;
    one->capture_exit = -1;
    memcpy(one->git_sha, r->git_sha, sizeof one->git_sha);
    char artifact[1100];
    const char *label = side ? "baseline" : "current";
    /* The last current run's capture is the required artifact; the others stay in DIR/runs/
     * beside their logs. */
    if (!side && k == o->runs)
        snprintf(artifact, sizeof artifact, "%s", o->artifact);
    else
        snprintf(artifact, sizeof artifact, "%.1000s/%s-%d.mprof", p->runs, label, k);
    if (o->runs == 1 && !side)
        snprintf(one->capture_log, sizeof one->capture_log, "%s", r->capture_log);
    else
        snprintf(one->capture_log, sizeof one->capture_log, "%.990s/%s-%d.log", p->runs, label,
                 k);
    if (o->runs == 1 && !side)
        snprintf(one->export_path, sizeof one->export_path, "%.1200s/frames.json", p->current);
    else
        snprintf(one->export_path, sizeof one->export_path, "%.1200s/frames-%d.json",
                 side ? p->base_runs : p->current, k);
    return capture_one(o, side ? o->baseline_argv : o->command, side ? "BASELINE" : "CURRENT",
                       artifact, p->self, one);
}

/* A current run's outcome in the invocation's result. The report's command, capture and event
 * fields describe the last current run, or the first current run that failed. */
static void take_current(mprof_ci_result *r, const mprof_ci_result *one, int code)
{
    if (!r->cmd_failed_seen) {
        r->cmd_failed_seen = code != EXIT_OK;
        r->cmd_ran = one->cmd_ran;
        r->cmd_exit = one->cmd_exit;
        r->cmd_signal = one->cmd_signal;
        r->capture_exit = one->capture_exit;
        r->artifact_bytes = one->artifact_bytes;
        r->artifact_valid = one->artifact_valid;
        r->artifact_complete = one->artifact_complete;
        memcpy(r->artifact_ending, one->artifact_ending, sizeof r->artifact_ending);
        r->events_lost = one->events_lost;
        r->artifact_pid = one->artifact_pid;
        memcpy(r->source, one->source, sizeof r->source);
        memcpy(r->artifact_path, one->artifact_path, sizeof r->artifact_path);
        memcpy(r->note, one->note, sizeof r->note);
        memcpy(r->capture_log, one->capture_log, sizeof r->capture_log);
    }
    r->t_command += one->t_command;
    r->t_drain += one->t_drain;
    r->t_export += one->t_export;
    if (one->export_path[0] && one->frames > 0)
        snprintf(r->export_path, sizeof r->export_path, "%s", one->export_path);
}

/* Every run of both sides, interleaved (baseline 1, current 1, baseline 2, ...) so that both
 * meet the same machine. Sets *io_failure and *failed from the runs' exit codes. */
static void run_all(const mprof_ci_opts *o, const ci_paths *p, mprof_ci_result *r,
                    int *io_failure, int *failed)
{
    mprof_ci_result *one = malloc(sizeof *one);
    if (!one) {
        mprof__ci_reason(r, "out of memory");
        *io_failure = 1;
        return;
    }
    mprof__ci_clear_interrupt();
    for (int k = 1; k <= o->runs && !mprof__ci_interrupted(); k++) {
        for (int side = o->baseline_argv ? 1 : 0; side >= 0 && !mprof__ci_interrupted(); side--) {
            int code = run_side(o, p, side, k, r, one);
            mprof__ci_add_run(o, r, one, side, k, code);
            if (code == EXIT_IO)
                *io_failure = 1;
            else if (code != EXIT_OK)
                *failed = 1;
            if (!side)
                take_current(r, one, code);
        }
    }
    free(one);
    if (mprof__ci_interrupted() && !*failed) {
        mprof__ci_reason(r, "interrupted (SIGINT or SIGTERM) before every run was made");
        *failed = 1;
    }
}

/* The current side's figures: every run's frames pooled. */
static void pool_current(const char *current, mprof_ci_result *r)
{
    char err[1024];
    mprof_frames_runs *cs = mprof__frames_load(current, 0, err, sizeof err);
    mprof_frames_summary sum;
    if (cs && mprof__frames_runs_summarize(cs, &sum) == 0) {
        r->frames = (long)sum.frames;
        r->p50 = sum.p50_ms;
        r->p90 = sum.p90_ms;
        r->p95 = sum.p95_ms;
        r->p99 = sum.p99_ms;
    }
    mprof__frames_runs_free(cs);
}

/* The invocation's verdict and exit status from its runs and the gate. */
static void settle(const mprof_ci_opts *o, int io_failure, int failed, mprof_ci_result *r)
{
    if (io_failure || strcmp(r->gate_verdict, "bad-input") == 0) {
        /* The gate's bad input (no frames, other machines, unreadable exports) is the gate's
         * exit 3 too. */
        snprintf(r->verdict, sizeof r->verdict, "failed");
        r->exit_code = EXIT_IO;
    } else if (failed || strcmp(r->gate_verdict, "regression") == 0) {
        snprintf(r->verdict, sizeof r->verdict, "%s",
                 strcmp(r->gate_verdict, "regression") == 0 && !failed ? "regression" : "failed");
        r->exit_code = EXIT_VERDICT;
    } else if (strcmp(r->gate_verdict, "inconclusive") == 0) {
        snprintf(r->verdict, sizeof r->verdict, "inconclusive");
        r->exit_code = o->fail_on_inconclusive ? EXIT_VERDICT : EXIT_OK;
        /* A reason is why the run failed; an inconclusive gate that passes is a warning. */
        if (o->fail_on_inconclusive)
            mprof__ci_reason(r, "the gate was inconclusive: %s", r->gate_reason);
        else
            mprof__ci_warning(r, "the gate was inconclusive: %s", r->gate_reason);
    } else if (!o->baseline && !o->baseline_argv) {
        snprintf(r->verdict, sizeof r->verdict, "no-baseline");
        r->exit_code = EXIT_OK;
    } else {
        snprintf(r->verdict, sizeof r->verdict, "pass");
        r->exit_code = EXIT_OK;
    }
}

/* Writes the report; with a store, records the run and writes the report again with what the
 * store did. Sets r->exit_code. */
static void report(const mprof_ci_opts *o, const char *path, mprof_ci_store *st,
                   mprof_ci_result *r)
{
    if (mprof__ci_write_report(o, r, NULL, path) != 0) {
        tool_error("ci", EXIT_IO, "%s: cannot write the report: %s", path, strerror(errno));
        r->exit_code = EXIT_IO;
        return;
    }
    if (!mprof__ci_store_asked(st, o->store))
        return;
    r->exit_code = mprof__ci_store_record(st, o->store, path, r->exit_code, o->quiet);
    mprof_ci_report_store note;
    if (mprof__ci_write_report(o, r, mprof__ci_store_note(st, &note), path) != 0) {
        tool_error("ci", EXIT_IO, "%s: cannot add the store's outcome to the report", path);
        r->exit_code = EXIT_IO;
        return;
    }
    if (!o->quiet && st->error[0])
        printf("mprof ci: the run store failed (exit %d): see \"store\" in %s\n", r->exit_code,
               path);
}

/* One CI invocation: runs runs of the command (interleaved with the baseline command when there
 * is one), gates the current runs against the baseline and writes the report. Fills r; returns
 * the exit code. */
static int ci_run(const mprof_ci_opts *o, mprof_ci_result *r)
{
    double t0 = mprof__ci_now();
    mprof_ci_opts from_store; /* o with --baseline store replaced by the store's exports */
    mprof_ci_store st;
    memset(&st, 0, sizeof st);
    memset(r, 0, sizeof *r);
    r->artifact_bytes = -1;
    r->frames = -1;
    r->capture_exit = -1;
    snprintf(r->artifact_path, sizeof r->artifact_path, "%s", o->artifact);
    int io_failure = 0, failed = 0;
    tool_git_sha(r->git_sha, sizeof r->git_sha, NULL);
    tool_random_id(r->run_uid); /* "" without randomness: the store then makes one */
    ci_paths *p = calloc(1, sizeof *p);
    if (!p) {
        mprof__ci_reason(r, "out of memory");
        io_failure = 1;
    } else if (prepare(o, p, r) != 0) {
        io_failure = 1;
    } else {
        run_all(o, p, r, &io_failure, &failed);
    }
    if (!io_failure) {
        const char *current = o->runs == 1 ? r->export_path : p->current;
        pool_current(current, r);
        const char *baseline = o->baseline_argv ? p->base_runs : o->baseline;
        if (mprof__ci_store_is_baseline(baseline)) {
            /* The store's recent passing runs, written out as frame exports, are the baseline. */
            from_store = *o;
            mprof__ci_store_baseline(&st, o->store, &from_store.baseline, o->dir, r->export_path,
                                     o->quiet);
            o = &from_store;
            baseline = o->baseline;
        }
        if (baseline) {
            double tg = mprof__ci_now();
            mprof__ci_gate(o, baseline, current, r);
            r->t_gate = mprof__ci_now() - tg;
        }
    }
    settle(o, io_failure, failed, r);
    r->t_total = mprof__ci_now() - t0;
    char path[1200];
    snprintf(path, sizeof path, "%s/ci-report.json", o->dir);
    report(o, path, &st, r);
    free(p);
    if (!o->quiet) {
        printf("mprof ci: %s (exit %d): %s\n", r->verdict, r->exit_code, path);
        for (int i = 0; i < r->n_reasons; i++)
            printf("  %s\n", r->reasons[i]);
        for (int i = 0; i < r->n_warnings; i++)
            printf("  warning: %s\n", r->warnings[i]);
        if (r->note[0])
            printf("  note: %s\n", r->note);
    }
    return r->exit_code;
}

/* --expect-exit CODES: a comma-separated list of exit statuses 0..255. */
static int parse_exit_codes(const char *v, mprof_ci_opts *o)
{
    o->n_expect_exit = 0;
    const char *p = v;
    while (p && *p) {
        char *end;
        errno = 0;
        long c = strtol(p, &end, 10);
        if (end == p || errno || c < 0 || c > 255 || (*end && *end != ',') ||
            o->n_expect_exit >= MPROF_CI_MAX_EXPECT) {
            tool_error("ci", EXIT_USAGE, "--expect-exit needs up to %d exit statuses 0..255 "
                                         "separated by commas (e.g. 0,255), not '%s'",
                       MPROF_CI_MAX_EXPECT, v);
            return -1;
        }
        o->expect_exit[o->n_expect_exit++] = (int)c;
        p = *end ? end + 1 : end;
    }
    if (o->n_expect_exit == 0) {
        tool_error("ci", EXIT_USAGE, "--expect-exit needs a list of exit statuses (e.g. 0,255)");
        return -1;
    }
    return 0;
}

static int parse_double(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : 0;
    if (!v || !*v || errno || *end || !isfinite(d) || d < lo || d > hi) {
        tool_error("ci", EXIT_USAGE, "%s needs a number from %g to %g", flag, lo, hi);
        return -1;
    }
    *out = d;
    return 0;
}

static int has_json(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        found = e->d_name[0] != '.' && l > 5 && strcmp(e->d_name + l - 5, ".json") == 0;
    }
    closedir(d);
    return found;
}

/* A value option of ci: the next argument, or NULL after a usage error (printed). */
static const char *need_value(tool_args *args, const char *flag, const char *what)
{
    const char *v = tool_args_value(args);
    if (!v || !*v) {
        tool_error("ci", EXIT_USAGE, "%s needs %s", flag, what);
        return NULL;
    }
    return v;
}

int cmd_ci(int argc, char **argv)
{
    mprof_ci_opts o = {.dir = DEFAULT_DIR, .address = "127.0.0.1", .threshold = 10,
                       .port = 8086, .drain_seconds = 10, .runs = DEFAULT_RUNS};
    int self = 0, workload = 0;
    double slow = 0, frames = 10000, exit_with = 0;
    unsigned long long u;
    char art_default[1200], base_default[1200];
    int first = argc; /* where COMMAND starts */
    tool_args args = tool_args_start("ci", help, argc, argv, NULL, 0);
    const char *a;
    for (int k; (k = tool_args_next(&args, &a)) != TOOL_ARG_END;) {
        if (k == TOOL_ARG_FILE) {
            if (!args.files_only && strcmp(a, "-") == 0)
                return tool_args_unknown(&args, a);
            first = args.i - 1; /* the command starts here (the -- is optional) */
            break;
        } else if (strcmp(a, "--jobs") == 0) {
            if (tool_jobs("ci", &args))
                return EXIT_USAGE;
        } else if (strcmp(a, "--self-test") == 0) {
            self = 1;
        } else if (strcmp(a, "--self-test-workload") == 0) {
            workload = 1; /* internal: the instrumented workload the self-test runs */
        } else if (strcmp(a, "--slow") == 0 || strcmp(a, "--frames") == 0 ||
                   strcmp(a, "--exit") == 0) {
            /* internal, with --self-test-workload: the slowdown, frames and exit code */
            double *dst = a[2] == 's' ? &slow : (a[2] == 'f' ? &frames : &exit_with);
            if (parse_double(a, tool_args_value(&args), 0, 1e7, dst))
                return EXIT_USAGE;
        } else if (strcmp(a, "--output-dir") == 0 || strcmp(a, "--required-artifact") == 0 ||
                   strcmp(a, "--baseline") == 0 || strcmp(a, "--address") == 0 ||
                   strcmp(a, "--store") == 0) {
            const char *v = need_value(&args, a, "a value");
            if (!v)
                return EXIT_USAGE;
            const char **dst[5] = {&o.dir, &o.artifact, &o.baseline, &o.address, &o.store};
            const char *names[5] = {"--output-dir", "--required-artifact", "--baseline",
                                    "--address", "--store"};
            for (int n = 0; n < 5; n++)
                if (strcmp(a, names[n]) == 0)
                    *dst[n] = v;
        } else if (strcmp(a, "--threshold") == 0) {
            if (parse_double(a, tool_args_value(&args), 0, 10000, &o.threshold))
                return EXIT_USAGE;
        } else if (strcmp(a, "--seconds") == 0 || strcmp(a, "--drain-seconds") == 0) {
            double *dst = a[2] == 's' ? &o.seconds : &o.drain_seconds;
            if (parse_double(a, tool_args_value(&args), 0, 1e6, dst))
                return EXIT_USAGE;
        } else if (strcmp(a, "--port") == 0) {
            if (tool_parse_uint("ci", a, tool_args_value(&args), 65535, &u))
                return EXIT_USAGE;
            o.port = (unsigned)u;
        } else if (strcmp(a, "--process") == 0) {
            if (!(o.process = tool_args_value(&args)) || !*o.process)
                return tool_error("ci", EXIT_USAGE, "--process needs a process name");
        } else if (strcmp(a, "--skip-frames") == 0) {
            if (tool_parse_uint("ci", a, tool_args_value(&args), 100000000, &u))
                return EXIT_USAGE;
            o.skip_frames = (int)u;
        } else if (strcmp(a, "--max-lost") == 0) {
            if (tool_parse_uint("ci", a, tool_args_value(&args), ~0ull, &o.max_lost))
                return EXIT_USAGE;
        } else if (strcmp(a, "--fail-on-inconclusive") == 0) {
            o.fail_on_inconclusive = 1;
        } else if (strcmp(a, "--allow-incomplete") == 0) {
            o.allow_incomplete = 1;
        } else if (strcmp(a, "--runs") == 0) {
            if (tool_parse_uint("ci", a, tool_args_value(&args), MPROF_CI_MAX_RUNS / 2, &u))
                return EXIT_USAGE;
            if (u == 0)
                return tool_error("ci", EXIT_USAGE, "--runs needs at least 1");
            o.runs = (int)u;
        } else if (strcmp(a, "--baseline-cmd") == 0) {
            if (!(o.baseline_cmd = need_value(&args, a, "a command")))
                return EXIT_USAGE;
        } else if (strcmp(a, "--expect-exit") == 0) {
            if (parse_exit_codes(tool_args_value(&args), &o))
                return EXIT_USAGE;
        } else {
            return tool_args_unknown(&args, a);
        }
    }
    if (args.stop)
        return args.code;
    if (workload) {
        mprof__ci_workload((long)frames, slow);
        return (int)exit_with & 255;
    }
    if (self) {
        if (first < argc)
            return tool_error("ci", EXIT_USAGE, "--self-test runs its own workload; no COMMAND");
        char dir[1100];
        if (strcmp(o.dir, DEFAULT_DIR) == 0)
            snprintf(dir, sizeof dir, "%s/self-test", DEFAULT_DIR);
        else
            snprintf(dir, sizeof dir, "%s", o.dir);
        return mprof__ci_self_test(dir, ci_run);
    }
    if (first >= argc)
        return tool_error("ci", EXIT_USAGE, "no command to run (mprof ci [options] -- COMMAND)");
    if (mprof__ci_store_check_args(o.store, o.baseline))
        return EXIT_USAGE;
    o.command = argv + first;
    o.n_command = argc - first;
    char *base_argv[4] = {(char *)"/bin/sh", (char *)"-c", (char *)o.baseline_cmd, NULL};
    if (o.baseline_cmd) {
        if (o.baseline)
            return tool_error("ci", EXIT_USAGE, "--baseline and --baseline-cmd exclude each other "
                                                "(the baseline is either stored or run now)");
        o.baseline_argv = base_argv;
    }
    if (!o.artifact) {
        snprintf(art_default, sizeof art_default, "%s/ci-capture.mprof", o.dir);
        o.artifact = art_default;
    }
    if (!o.baseline) {
        snprintf(base_default, sizeof base_default, "%s/baseline", o.dir);
        if (has_json(base_default))
            o.baseline = base_default;
    }
    mprof_ci_result *r = malloc(sizeof *r);
    if (!r)
        return tool_error("ci", EXIT_IO, "out of memory");
    int code = ci_run(&o, r);
    free(r);
    return tool_finish("ci", code);
}
