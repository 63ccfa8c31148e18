/*
 * ci.h - the parts of `mprof ci` (tools/cmd_ci.c keeps its options and the order of its steps):
 * what an invocation is asked to do, what each run and the whole invocation found, and the steps
 * that fill it in. docs/GATE.md describes the command.
 *
 *   supervise.c  run a command beside `mprof capture` and see both end
 *   artifact.c   check the capture, fall back to the in-process file, export its frames
 *   gate_step.c  gate the current runs against the baseline and write the gate's reports
 *   ci.c         reasons, warnings, the runs' records, and the report (report.h) they make
 *   self_test.c  `mprof ci --self-test`, on the instrumented workload of workload.c
 *
 * Threads: the tool's one thread. Interrupts (SIGINT, SIGTERM) during a run are noted, not fatal.
 */
#ifndef MPROF_CI_CI_H
#define MPROF_CI_CI_H

#include "ci/report.h"

#include <sys/types.h>

#define MPROF_CI_MAX_RUNS 64    /* --runs at most twice over: both sides' runs are recorded */
#define MPROF_CI_MAX_EXPECT 16  /* --expect-exit codes at most */
#define MPROF_CI_MAX_REASONS 16 /* reasons, and warnings, kept at most */

/* What one invocation is asked to do (the options of `mprof ci`). */
typedef struct mprof_ci_opts {
    const char *dir, *artifact, *baseline, *address;
    double threshold;
    int skip_frames;
    unsigned port;
    double seconds, drain_seconds;
    unsigned long long max_lost;
    int fail_on_inconclusive;
    int allow_incomplete;     /* --allow-incomplete: a capture that did not end cleanly passes */
    char **command;
    int n_command;
    int runs;                 /* --runs: runs of the command (and of the baseline command) */
    const char *baseline_cmd; /* --baseline-cmd, as given */
    char **baseline_argv;     /* the baseline command's argv (sh -c CMD), or NULL */
    int expect_exit[MPROF_CI_MAX_EXPECT]; /* --expect-exit: accepted exit statuses; none: 0 */
    int n_expect_exit;
    int quiet;                /* self-test: one line per step instead of the command's output */
    const char *store;        /* --store URL: the run store */
    const char *process;      /* --process NAME: the process whose frames are exported (a
                                 capture of several processes); NULL = the only one */
} mprof_ci_opts;

/* One run of one side, for the report's runs[]. */
typedef struct mprof_ci_run_rec {
    int baseline, index, code;
    int cmd_exit, cmd_signal, cmd_ran, valid;
    long frames;
    double p95, seconds;
    long long events_lost;
    char source[16];
    char artifact[1100], export_path[1300];
} mprof_ci_run_rec;

/* What a run found, and what the invocation found: the same fields, since the report's command,
 * capture and event fields are those of one of the runs (the last current run, or the first
 * current run that failed). */
typedef struct mprof_ci_result {
    char verdict[32];
    int exit_code;
    char reasons[MPROF_CI_MAX_REASONS][512]; /* why the run failed */
    int n_reasons;
    char warnings[MPROF_CI_MAX_REASONS][640]; /* what is worth a word but is not a failure */
    int n_warnings;
    mprof_ci_run_rec runs[MPROF_CI_MAX_RUNS];
    int n_runs;
    int cmd_failed_seen;
    char git_sha[128];
    char run_uid[33]; /* the invocation's unique id (tool_random_id): the store keeps it once */
    int cmd_exit, cmd_signal, cmd_ran;
    int capture_exit;
    long long artifact_bytes;
    int artifact_valid, artifact_complete;
    char artifact_ending[32]; /* mprof_ending_name of the capture */
    long long events_lost;
    long frames;
    double p50, p90, p95, p99;
    int have_baseline;
    double base_p95;
    char gate_verdict[32], gate_reason[1024], top_zone[256];
    char export_path[1300], gate_json[1024], gate_md[1024], capture_log[1024];
    double t_command, t_drain, t_export, t_gate, t_total;
    char source[16];          /* "live" or "in-process": where the artifact came from */
    char artifact_path[1100]; /* --required-artifact, or the in-process file when that path is
                                 not a regular file and so cannot be replaced by it */
    long artifact_pid;        /* the captured process (INFO pid) */
    char note[1200];          /* what is worth knowing but not a failure */
} mprof_ci_result;

/* ci.c */
/* A reason (a failure) or a warning; past MPROF_CI_MAX_REASONS they are dropped. */
void mprof__ci_reason(mprof_ci_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mprof__ci_warning(mprof_ci_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* An exit status the command may end with: --expect-exit's list, or 0 without it. */
int mprof__ci_exit_expected(const mprof_ci_opts *o, int code);
/* Adds run k of a side (baseline or current) to the invocation's result: its record, and its
 * reasons, prefixed with the run when there are several. */
void mprof__ci_add_run(const mprof_ci_opts *o, mprof_ci_result *r, const mprof_ci_result *one,
                       int baseline, int k, int code);
/* Writes the invocation's report to path (store: the run store's outcome, or NULL). Returns 0,
 * or -1 with errno set. */
int mprof__ci_write_report(const mprof_ci_opts *o, const mprof_ci_result *r,
                           const mprof_ci_report_store *store, const char *path);

/* supervise.c */
/* Seconds on the monotonic clock. */
double mprof__ci_now(void);
/* The path of this executable (to run `mprof capture` and the workload). 0, or -1. */
int mprof__ci_self_path(char *out, size_t n);
/* True once SIGINT or SIGTERM reached ci during a run; cleared by mprof__ci_clear_interrupt. */
int mprof__ci_interrupted(void);
void mprof__ci_clear_interrupt(void);
/*
 * Runs argv with the live-capture environment beside `self capture` writing artifact, then lets
 * the capture finish (or stops it after --drain-seconds). The command also writes the in-process
 * file inprocess (removed first). Fills r's command and capture-tool fields, t_command, t_drain
 * and reasons; *out_cmd gets the command's pid (-1 when it could not start). Returns 1 when the
 * command failed (an unexpected exit, a signal, an interrupt), 0 when it did not, -1 when the
 * capture tool could not start.
 */
int mprof__ci_supervise(const mprof_ci_opts *o, char **argv, const char *artifact,
                        const char *self, const char *inprocess, mprof_ci_result *r,
                        pid_t *out_cmd);

/* artifact.c */
/* Reads the capture at path whole: r->artifact_valid when every chunk and event decodes, with
 * its size, ending, pid and lost events; a reason otherwise. */
void mprof__ci_check_artifact(const char *path, mprof_ci_result *r);
/*
 * After a supervised run: takes the live capture at artifact when it is this run's (the
 * instrumented process's pid, cmd the command's), else the in-process file; checks it ended
 * cleanly and lost no more than --max-lost; exports its frames to r->export_path and reads their
 * figures. side ("BASELINE" or "CURRENT") names the side in messages. Returns EXIT_OK,
 * EXIT_VERDICT (incomplete, events lost) or EXIT_IO (no usable artifact, no export, no frames).
 */
int mprof__ci_artifact(const mprof_ci_opts *o, const char *artifact, const char *inprocess,
                       pid_t cmd, const char *side, mprof_ci_result *r);

/* gate_step.c */
/* Gates the frame exports at current against baseline (a file or directory each) with the
 * invocation's threshold and skip, writes DIR/gate-report.json and .md, prints the verdict unless
 * quiet, and notes it in r (gate fields, reasons, warnings). */
void mprof__ci_gate(const mprof_ci_opts *o, const char *baseline, const char *current,
                    mprof_ci_result *r);

#endif
