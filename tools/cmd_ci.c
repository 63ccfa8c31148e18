/*
 * cmd_ci.c - `mprof ci`: wrap a test command with a live capture, export its frames, gate them
 * against a baseline and write one CI report (mprof.ciReport.v1).
 *
 * The command runs as a child with MPROF_LISTEN=1 and the chosen address and port in its
 * environment; `mprof capture` (this same binary) runs beside it with --history, so the frames
 * from before the tool connected are in the capture too. When the command ends, the process
 * hands the session its last chunks and END, and the capture tool exits by itself; if it does
 * not within --drain-seconds (the process never connected, say), it is stopped with SIGINT, which
 * finalises whatever it wrote. Then the artifact is checked by reading it whole, its frames are
 * exported into DIR/current/, the gate runs when there is a baseline, and the report is written
 * whatever happened, with the reasons for a failure in it. docs/GATE.md describes it.
 */
#define _POSIX_C_SOURCE 200809L

#include "export/frames.h"
#include "gate/gate.h"
#include "store/ci_hooks.h"
#include "format/format.h"
#include "mprof_tool.h"
#include "ci/workload.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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
    "  -h, --help                show this help\n"
    "\n"
    "The environment of COMMAND gets MPROF_LISTEN=1, MPROF_ADDRESS, MPROF_PORT, MPROF_GIT_SHA\n"
    "(from the environment, else `git rev-parse HEAD`) and MPROF_CAPTURE=DIR/inprocess-capture.mprof:\n"
    "when the live capture misses the run (a command shorter than the tool's 100 ms retry), the\n"
    "in-process file becomes the artifact and the report says so (capture.source).\n"
    "\n"
    "Exit status: 0 pass (also no baseline, or inconclusive without --fail-on-inconclusive);\n"
    "1 regression, the command failed, or too many events were lost; 2 usage error; 3 the\n"
    "artifact is missing or invalid, the run has no frames, the gate refused the input (bad\n"
    "input), or an output cannot be written; 4 the run store (--store, --baseline store) could\n"
    "not be used though the run itself passed (ci-report.json is written and says why).\n";

#define DEFAULT_DIR "Saved/Profiling/mprofCI"
#define DEFAULT_RUNS 3

#define MAX_RUNS 64      /* --runs at most; both sides' runs are recorded */
#define MAX_EXPECT 16    /* --expect-exit codes at most */
#define MAX_REASONS 16

typedef struct ci_opts {
    const char *dir, *artifact, *baseline, *address;
    double threshold;
    int skip_frames;
    unsigned port;
    double seconds, drain_seconds;
    unsigned long long max_lost;
    int fail_on_inconclusive;
    int allow_incomplete; /* --allow-incomplete (issue 14) */
    char **command;
    int n_command;
    int runs;                 /* --runs: runs of the command (and of the baseline command) */
    const char *baseline_cmd; /* --baseline-cmd, as given */
    char **baseline_argv;     /* the baseline command's argv (sh -c CMD), or NULL */
    int expect_exit[MAX_EXPECT]; /* --expect-exit: accepted exit statuses; none given: 0 */
    int n_expect_exit;
    int quiet; /* self-test: one line per step instead of the command's output */
    const char *store; /* --store URL: the run store (tools/ci_store.c) */
} ci_opts;

/* One run of one side, for the report's runs[]. */
typedef struct ci_run_rec {
    int baseline, index, code;
    int cmd_exit, cmd_signal, cmd_ran, valid;
    long frames;
    double p95, seconds;
    long long events_lost;
    char source[16];
    char artifact[1100], export_path[1300];
} ci_run_rec;

typedef struct ci_result {
    char verdict[32];
    int exit_code;
    char reasons[MAX_REASONS][512];
    int n_reasons;
    char warnings[MAX_REASONS][640];
    int n_warnings;
    ci_run_rec runs[MAX_RUNS];
    int n_runs;
    int cmd_failed_seen;
    char git_sha[128];
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
    char source[16];  /* "live" or "in-process": where the artifact came from */
    char artifact_path[1100]; /* --required-artifact, or the in-process file when that path
                               * is not a regular file and so cannot be replaced by it */
    long artifact_pid; /* the captured process (INFO pid) */
    char note[1200];  /* what is worth knowing but not a failure */
} ci_result;

static volatile sig_atomic_t g_interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void reason(ci_result *r, const char *fmt, ...)
{
    if (r->n_reasons >= MAX_REASONS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reasons[r->n_reasons++], sizeof r->reasons[0], fmt, ap);
    va_end(ap);
}

/* What the report should say that is not a failure (the gate's warnings, an inconclusive gate). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void warning(ci_result *r, const char *fmt, ...)
{
    if (r->n_warnings >= MAX_REASONS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->warnings[r->n_warnings++], sizeof r->warnings[0], fmt, ap);
    va_end(ap);
}

/* An exit status the command may end with: --expect-exit's list, or 0 without it. */
static int exit_expected(const ci_opts *o, int code)
{
    if (o->n_expect_exit == 0)
        return code == 0;
    for (int i = 0; i < o->n_expect_exit; i++)
        if (o->expect_exit[i] == code)
            return 1;
    return 0;
}

static int baseline_given(const ci_opts *o)
{
    return o->baseline || o->baseline_argv;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* mkdir -p; returns 0 or -1 (errno set). */
static int make_dirs(const char *path)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (!buf[0])
        return 0; /* "" is the parent of a file in the root directory: nothing to create */
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static void git_sha(char *out, size_t n)
{
    out[0] = '\0';
    const char *v = getenv("MPROF_GIT_SHA");
    if (v && *v) {
        snprintf(out, n, "%s", v);
        return;
    }
    FILE *p = popen("git rev-parse HEAD 2>/dev/null", "r");
    if (!p)
        return;
    char line[128] = "";
    char *got = fgets(line, sizeof line, p);
    if (pclose(p) != 0 || !got)
        return;
    line[strcspn(line, "\r\n")] = '\0';
    if (strlen(line) >= 7 && strspn(line, "0123456789abcdef") == strlen(line))
        snprintf(out, n, "%s", line);
}

/* The path of this executable, to run `mprof capture` and the self-test workload. */
static int self_path(char *out, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", out, n - 1);
    if (len <= 0)
        return -1;
    out[len] = '\0';
    return 0;
}

/* Waits for pid until deadline (monotonic seconds; <0 = forever). Returns 1 and the status when
 * it exited, 0 when still running at the deadline. */
static int wait_until(pid_t pid, double deadline, int *status)
{
    for (;;) {
        pid_t w = waitpid(pid, status, deadline < 0 ? 0 : WNOHANG);
        if (w == pid)
            return 1;
        if (w < 0 && errno != EINTR) {
            *status = 0;
            return 1;
        }
        if (deadline >= 0 && now_s() >= deadline)
            return 0;
        if (deadline >= 0) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

static pid_t spawn_capture(const ci_opts *o, const char *self, const char *artifact,
                           const char *log)
{
    char port[16], secs[32];
    snprintf(port, sizeof port, "%u", o->port);
    snprintf(secs, sizeof secs, "%g", o->seconds);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    FILE *f = freopen(log, "w", stdout);
    if (f)
        dup2(fileno(stdout), 2);
    const char *argv[20];
    int k = 0;
    argv[k++] = self;
    argv[k++] = "capture";
    argv[k++] = "-o";
    argv[k++] = artifact;
    argv[k++] = "-f";
    argv[k++] = "-a";
    argv[k++] = o->address;
    argv[k++] = "-p";
    argv[k++] = port;
    argv[k++] = "--history";
    argv[k++] = "60";
    if (o->seconds > 0) {
        argv[k++] = "-s";
        argv[k++] = secs;
    }
    argv[k] = NULL;
    execv(self, (char *const *)argv);
    _exit(127);
}

static pid_t spawn_command(const ci_opts *o, char **argv, const char *sha, const char *inprocess)
{
    char port[16];
    snprintf(port, sizeof port, "%u", o->port);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    setenv("MPROF_LISTEN", "1", 1);
    setenv("MPROF_ADDRESS", o->address, 1);
    setenv("MPROF_PORT", port, 1);
    /* Both sinks: the live session, and an in-process file in case the command ends before the
     * tool has connected (a run shorter than the tool's 100 ms retry). */
    setenv("MPROF_CAPTURE", inprocess, 1);
    if (sha[0])
        setenv("MPROF_GIT_SHA", sha, 1);
    if (o->quiet) {
        FILE *f = freopen("/dev/null", "w", stdout);
        (void)f;
    }
    execvp(argv[0], argv);
    fprintf(stderr, "mprof ci: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* True when the file at path contains needle (the capture tool's log). */
static int log_says(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* Reads the artifact whole: valid when every chunk and event decodes. */
static void check_artifact(const char *path, ci_result *r)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        reason(r, "the capture artifact %s is missing", path);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        /* A device or a FIFO is no capture to read (opening a FIFO could wait forever). */
        reason(r, "the capture artifact %s is not a regular file", path);
        return;
    }
    r->artifact_bytes = (long long)st.st_size;
    char err[512];
    mprof_reader *rd = mprof_reader_open(path, err, sizeof err);
    if (!rd) {
        reason(r, "the capture artifact is invalid: %s", err);
        return;
    }
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(rd, &ev)) == 1)
        ;
    if (rc < 0) {
        reason(r, "the capture artifact is invalid: %s: %s", path, mprof_reader_error(rd));
        mprof_reader_close(rd);
        return;
    }
    mprof_reader_stats rs;
    mprof_reader_get_stats(rd, &rs);
    r->artifact_valid = 1;
    r->artifact_complete = mprof_reader_stats_whole(&rs);
    snprintf(r->artifact_ending, sizeof r->artifact_ending, "%s",
             mprof_ending_name(rs.complete ? rs.ending : MPROF_ENDING_CUT));
    const char *pid = mprof_reader_info(rd, "pid");
    r->artifact_pid = pid ? strtol(pid, NULL, 10) : 0;
    const char *lost = mprof_reader_end_info(rd, "events_lost");
    r->events_lost = lost ? strtoll(lost, NULL, 10) : 0;
    const char *dropped = mprof_reader_end_info(rd, "live_events_dropped");
    if (dropped)
        r->events_lost += strtoll(dropped, NULL, 10);
    mprof_reader_close(rd);
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

/* Frame figures from the export just written. */
static void read_export(const char *path, ci_result *r)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n > 0 ? malloc((size_t)n) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    cJSON *j = buf ? cJSON_ParseWithLength(buf, got) : NULL;
    free(buf);
    if (!j)
        return;
    r->frames = (long)jnum(j, "frameCount");
    r->p50 = jnum(j, "p50FrameTimeMs");
    r->p90 = jnum(j, "p90FrameTimeMs");
    r->p95 = jnum(j, "p95FrameTimeMs");
    r->p99 = jnum(j, "p99FrameTimeMs");
    cJSON_Delete(j);
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

static int write_file_with(const char *path, const mprof_gate_result *g,
                           int (*fn)(const mprof_gate_result *, FILE *))
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = fn(g, f);
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

static void run_gate(const ci_opts *o, const char *baseline, const char *current, ci_result *r)
{
    char err[1024];
    mprof_frames_runs *b = mprof__frames_load(baseline, o->skip_frames, err, sizeof err);
    mprof_frames_runs *c = b ? mprof__frames_load(current, o->skip_frames, err, sizeof err) : NULL;
    mprof_gate_opts go = {0};
    go.threshold_pct = o->threshold > 0 ? o->threshold : (o->threshold == 0 ? -1 : 10);
    go.skip_frames = o->skip_frames;
    mprof_gate_result *g = (b && c) ? mprof__gate_compare(b, c, &go, err, sizeof err) : NULL;
    mprof__frames_runs_free(b);
    mprof__frames_runs_free(c);
    if (!g) {
        snprintf(r->gate_verdict, sizeof r->gate_verdict, "bad-input");
        snprintf(r->gate_reason, sizeof r->gate_reason, "%s", err);
        reason(r, "the gate could not compare: %s", err);
        return;
    }
    r->have_baseline = 1;
    r->base_p95 = g->base.p95_ms;
    for (size_t i = 0; i < g->n_warnings; i++)
        warning(r, "gate: %s", g->warnings[i]);
    snprintf(r->gate_verdict, sizeof r->gate_verdict, "%s", mprof__gate_verdict_name(g->verdict));
    snprintf(r->gate_reason, sizeof r->gate_reason, "%s", g->reason);
    if (g->n_zones > 0 && g->zones[0].significant) /* only a zone that grew is named */
        snprintf(r->top_zone, sizeof r->top_zone, "%s", g->zones[0].name);
    snprintf(r->gate_json, sizeof r->gate_json, "%s/gate-report.json", o->dir);
    snprintf(r->gate_md, sizeof r->gate_md, "%s/gate-report.md", o->dir);
    if (write_file_with(r->gate_json, g, mprof__gate_write_json) ||
        write_file_with(r->gate_md, g, mprof__gate_write_markdown))
        reason(r, "cannot write the gate reports in %s", o->dir);
    if (!o->quiet)
        mprof__gate_print_text(g, stdout);
    if (g->verdict == MPROF_GATE_REGRESSION)
        reason(r, "regression: %s", g->reason);
    else if (g->verdict == MPROF_GATE_BAD_INPUT)
        reason(r, "the gate refused: %s", g->reason);
    mprof__gate_result_free(g);
}

/* Milliseconds as the frame export writes them (%.6f). */
static double round_ms(double v)
{
    return isfinite(v) ? round(v * 1e6) / 1e6 : v;
}

static void add_num_or_null(cJSON *o, const char *k, int have, double v)
{
    if (have)
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static int write_report(const ci_opts *o, const ci_result *r, const char *path)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return -1;
    cJSON_AddStringToObject(j, "schema", "mprof.ciReport.v1");
    cJSON_AddStringToObject(j, "verdict", r->verdict);
    cJSON_AddNumberToObject(j, "exitCode", r->exit_code);
    cJSON *rs = cJSON_AddArrayToObject(j, "reasons");
    for (int i = 0; rs && i < r->n_reasons; i++)
        cJSON_AddItemToArray(rs, cJSON_CreateString(r->reasons[i]));
    cJSON *ws = cJSON_AddArrayToObject(j, "warnings");
    for (int i = 0; ws && i < r->n_warnings; i++)
        cJSON_AddItemToArray(ws, cJSON_CreateString(r->warnings[i]));
    if (r->git_sha[0])
        cJSON_AddStringToObject(j, "gitSha", r->git_sha);
    else
        cJSON_AddNullToObject(j, "gitSha");
    cJSON *cmd = cJSON_AddArrayToObject(j, "command");
    for (int i = 0; cmd && i < o->n_command; i++)
        cJSON_AddItemToArray(cmd, cJSON_CreateString(o->command[i]));
    add_num_or_null(j, "commandExitCode", r->cmd_ran && !r->cmd_signal, r->cmd_exit);
    add_num_or_null(j, "commandSignal", r->cmd_signal != 0, r->cmd_signal);
    cJSON *cap = cJSON_AddObjectToObject(j, "capture");
    if (cap) {
        cJSON_AddStringToObject(cap, "path", r->artifact_path);
        if (r->source[0])
            cJSON_AddStringToObject(cap, "source", r->source);
        else
            cJSON_AddNullToObject(cap, "source");
        if (r->note[0])
            cJSON_AddStringToObject(cap, "note", r->note);
        add_num_or_null(cap, "bytes", r->artifact_bytes >= 0, (double)r->artifact_bytes);
        cJSON_AddBoolToObject(cap, "valid", r->artifact_valid);
        cJSON_AddBoolToObject(cap, "complete", r->artifact_complete);
        if (r->artifact_valid)
            cJSON_AddStringToObject(cap, "ending", r->artifact_ending);
        else
            cJSON_AddNullToObject(cap, "ending");
        cJSON_AddNumberToObject(cap, "toolExitCode", r->capture_exit);
        cJSON_AddStringToObject(cap, "log", r->capture_log);
        cJSON_AddStringToObject(cap, "address", o->address);
        cJSON_AddNumberToObject(cap, "port", o->port);
    }
    add_num_or_null(j, "eventsLost", r->artifact_valid, (double)r->events_lost);
    cJSON_AddNumberToObject(j, "maxEventsLost", (double)o->max_lost);
    int have_frames = r->export_path[0] && r->frames >= 0;
    add_num_or_null(j, "frameCount", have_frames, (double)r->frames);
    add_num_or_null(j, "p50FrameTimeMs", have_frames, round_ms(r->p50));
    add_num_or_null(j, "p90FrameTimeMs", have_frames, round_ms(r->p90));
    add_num_or_null(j, "p95FrameTimeMs", have_frames, round_ms(r->p95));
    add_num_or_null(j, "p99FrameTimeMs", have_frames, round_ms(r->p99));
    char base_runs[1200];
    snprintf(base_runs, sizeof base_runs, "%s/baseline-runs", o->dir);
    if (o->baseline_argv)
        cJSON_AddStringToObject(j, "baseline", base_runs);
    else if (o->baseline)
        cJSON_AddStringToObject(j, "baseline", o->baseline);
    else
        cJSON_AddNullToObject(j, "baseline");
    if (o->baseline_cmd)
        cJSON_AddStringToObject(j, "baselineCommand", o->baseline_cmd);
    else
        cJSON_AddNullToObject(j, "baselineCommand");
    cJSON_AddNumberToObject(j, "runsPerSide", o->runs);
    cJSON *ee = cJSON_AddArrayToObject(j, "expectExit");
    for (int i = 0; ee && i < (o->n_expect_exit ? o->n_expect_exit : 1); i++)
        cJSON_AddItemToArray(ee, cJSON_CreateNumber(o->n_expect_exit ? o->expect_exit[i] : 0));
    add_num_or_null(j, "baselineP95FrameTimeMs", r->have_baseline, round_ms(r->base_p95));
    cJSON_AddNumberToObject(j, "thresholdPct", o->threshold >= 0 ? o->threshold : 10);
    if (r->gate_verdict[0]) {
        cJSON *g = cJSON_AddObjectToObject(j, "gate");
        if (g) {
            cJSON_AddStringToObject(g, "verdict", r->gate_verdict);
            cJSON_AddStringToObject(g, "reason", r->gate_reason);
            if (r->top_zone[0])
                cJSON_AddStringToObject(g, "topZone", r->top_zone);
            if (r->gate_json[0])
                cJSON_AddStringToObject(g, "report", r->gate_json);
            if (r->gate_md[0])
                cJSON_AddStringToObject(g, "markdown", r->gate_md);
        }
    } else {
        cJSON_AddNullToObject(j, "gate");
    }
    if (r->export_path[0])
        cJSON_AddStringToObject(j, "frameExport", r->export_path);
    else
        cJSON_AddNullToObject(j, "frameExport");
    cJSON *runs = cJSON_AddArrayToObject(j, "runs");
    for (int i = 0; runs && i < r->n_runs; i++) {
        const ci_run_rec *rec = &r->runs[i];
        cJSON *x = cJSON_CreateObject();
        if (!x)
            break;
        cJSON_AddStringToObject(x, "side", rec->baseline ? "baseline" : "current");
        cJSON_AddNumberToObject(x, "run", rec->index);
        cJSON_AddBoolToObject(x, "ok", rec->code == EXIT_OK);
        add_num_or_null(x, "commandExitCode", rec->cmd_ran && !rec->cmd_signal, rec->cmd_exit);
        add_num_or_null(x, "commandSignal", rec->cmd_signal != 0, rec->cmd_signal);
        add_num_or_null(x, "frameCount", rec->frames >= 0, (double)rec->frames);
        add_num_or_null(x, "p95FrameTimeMs", rec->frames > 0, round_ms(rec->p95));
        add_num_or_null(x, "eventsLost", rec->valid, (double)rec->events_lost);
        cJSON_AddStringToObject(x, "capture", rec->artifact);
        if (rec->source[0])
            cJSON_AddStringToObject(x, "source", rec->source);
        else
            cJSON_AddNullToObject(x, "source");
        if (rec->export_path[0])
            cJSON_AddStringToObject(x, "frameExport", rec->export_path);
        else
            cJSON_AddNullToObject(x, "frameExport");
        cJSON_AddNumberToObject(x, "commandSeconds", round(rec->seconds * 1000) / 1000);
        cJSON_AddItemToArray(runs, x);
    }
    cJSON *t = cJSON_AddObjectToObject(j, "timings");
    if (t) {
        cJSON_AddNumberToObject(t, "commandSeconds", round(r->t_command * 1000) / 1000);
        cJSON_AddNumberToObject(t, "captureDrainSeconds", round(r->t_drain * 1000) / 1000);
        cJSON_AddNumberToObject(t, "exportSeconds", round(r->t_export * 1000) / 1000);
        cJSON_AddNumberToObject(t, "gateSeconds", round(r->t_gate * 1000) / 1000);
        cJSON_AddNumberToObject(t, "totalSeconds", round(r->t_total * 1000) / 1000);
    }
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text)
        return -1;
    FILE *f = fopen(path, "w");
    int rc = -1;
    if (f) {
        fprintf(f, "%s\n", text);
        rc = fclose(f) == 0 ? 0 : -1;
    }
    free(text);
    return rc;
}

/* One run of one command (argv) under a live capture to artifact, its frames exported to
 * r->export_path. r is this run's own result (reasons, capture, frames). Returns EXIT_OK,
 * EXIT_VERDICT (the command failed, events were lost) or EXIT_IO (no usable artifact, no
 * export, no frames). */
static int capture_one(const ci_opts *o, char **argv, const char *side, const char *artifact,
                       const char *self, ci_result *r)
{
    int failed = 0;
    snprintf(r->artifact_path, sizeof r->artifact_path, "%s", artifact);
    tool_remove_partial(artifact);
    fflush(stdout);
    fflush(stderr);
    /* Ctrl-C reaches the command and the tool (same process group); ci itself stays to collect
     * what there is and write the report. The children get default handlers back at exec. */
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    pid_t cap = spawn_capture(o, self, artifact, r->capture_log);
    if (cap < 0) {
        reason(r, "cannot start mprof capture: %s", strerror(errno));
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        return EXIT_IO;
    }
    double tc = now_s();
    char inprocess[1100];
    snprintf(inprocess, sizeof inprocess, "%.1000s/inprocess-capture.mprof", o->dir);
    tool_remove_partial(inprocess);
    pid_t cmd = spawn_command(o, argv, r->git_sha, inprocess);
    int status = 0;
    if (cmd < 0) {
        reason(r, "cannot start the command: %s", strerror(errno));
        failed = 1;
    } else {
        /* A signal sent to ci alone is passed on to the command, once. */
        int forwarded = 0;
        for (;;) {
            pid_t w = waitpid(cmd, &status, 0);
            if (w == cmd || (w < 0 && errno != EINTR))
                break;
            if (g_interrupted && !forwarded) {
                kill(cmd, SIGINT);
                forwarded = 1;
            }
        }
        r->cmd_ran = 1;
        if (WIFEXITED(status)) {
            r->cmd_exit = WEXITSTATUS(status);
            if (!exit_expected(o, r->cmd_exit)) {
                if (r->cmd_exit == 127)
                    reason(r, "the command could not be run (exit 127)");
                else
                    reason(r, "the command failed with exit code %d%s", r->cmd_exit,
                           o->n_expect_exit ? " (not one of --expect-exit)" : "");
            }
        } else if (WIFSIGNALED(status)) {
            r->cmd_signal = WTERMSIG(status);
            reason(r, "the command was killed by signal %d", r->cmd_signal);
        }
        failed = !exit_expected(o, r->cmd_exit) || r->cmd_signal != 0;
    }
    r->t_command = now_s() - tc;
    if (g_interrupted) {
        reason(r, "interrupted (SIGINT or SIGTERM) while the command ran");
        failed = 1;
    }

    /* Let the capture finish on its own (the process sends END at exit), then stop it. A tool
     * that never connected gets one second, not the whole drain time. */
    double td = now_s();
    int cst = 0;
    int exited = wait_until(cap, now_s() + (o->drain_seconds < 1.0 ? o->drain_seconds : 1.0), &cst);
    if (!exited && log_says(r->capture_log, "capturing"))
        exited = wait_until(cap, td + o->drain_seconds, &cst);
    if (!exited) {
        kill(cap, SIGINT);
        if (!wait_until(cap, now_s() + 5.0, &cst)) {
            kill(cap, SIGKILL);
            wait_until(cap, -1, &cst);
        }
    }
    r->capture_exit = WIFEXITED(cst) ? WEXITSTATUS(cst) : 128 + (WIFSIGNALED(cst) ? WTERMSIG(cst) : 0);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    r->t_drain = now_s() - td;

    int n_before = r->n_reasons;
    check_artifact(artifact, r);
    /* The in-process file is written by the instrumented process itself, so its pid is the one
     * the live capture must show. The direct child's pid is only a stand-in when there is no
     * in-process file: the child may be a wrapper (sh -c, a script) that runs the process. */
    ci_result tmp;
    memset(&tmp, 0, sizeof tmp);
    check_artifact(inprocess, &tmp);
    long own_pid = tmp.artifact_valid ? tmp.artifact_pid : (long)cmd;
    if (r->artifact_valid && cmd > 0 && r->artifact_pid != own_pid) {
        /* Another instrumented process owns the port: that capture is not this run's. */
        snprintf(r->note, sizeof r->note,
                 "the live capture recorded another process (pid %ld, not the command's %ld): "
                 "port %u is taken, choose another with --port",
                 r->artifact_pid, own_pid, o->port);
        r->artifact_valid = 0;
        tool_remove_partial(artifact);
    }
    if (r->artifact_valid) {
        snprintf(r->source, sizeof r->source, "live");
        tool_remove_partial(inprocess);
    } else {
        /* The live capture is missing or unusable: fall back to the in-process file. */
        /* Only a regular file (or nothing) at the artifact path is replaced: renaming over a
         * device node, a FIFO or a symlink would destroy it, so then the in-process file
         * stays where it is and is the artifact. */
        struct stat ast;
        int keep = lstat(artifact, &ast) == 0 && !S_ISREG(ast.st_mode);
        if (tmp.artifact_valid && (keep || rename(inprocess, artifact) == 0)) {
            if (keep)
                snprintf(r->artifact_path, sizeof r->artifact_path, "%s", inprocess);
            r->n_reasons = n_before; /* the live artifact's problems no longer matter */
            check_artifact(r->artifact_path, r);
            snprintf(r->source, sizeof r->source, "in-process");
            if (r->note[0]) {
                size_t l = strlen(r->note);
                snprintf(r->note + l, sizeof r->note - l,
                         "; the command's in-process capture is the artifact");
            } else {
                snprintf(r->note, sizeof r->note,
                         "mprof capture did not get the run (tool exit %d, see %s); the "
                         "command's in-process capture is the artifact",
                         r->capture_exit, r->capture_log);
            }
        } else {
            if (r->note[0])
                reason(r, "%s", r->note);
            if (r->capture_exit != 0 && r->capture_exit != 1)
                reason(r, "mprof capture exited %d (see %s)", r->capture_exit, r->capture_log);
        }
    }
    if (!r->artifact_valid) {
        return EXIT_IO;
    }
    if (!r->artifact_complete && !o->allow_incomplete) {
        reason(r, "the capture did not end cleanly (%s); --allow-incomplete accepts it",
               r->artifact_ending);
        failed = 1;
    }
    if ((unsigned long long)r->events_lost > o->max_lost) {
        reason(r, "%lld events were lost (at most %llu allowed, --max-lost)", r->events_lost,
               o->max_lost);
        failed = 1;
    }

    double te = now_s();
    char err[1024];
    if (mprof__export_frames(r->artifact_path, r->export_path, err, sizeof err) != 0) {
        reason(r, "the frame export failed: %s", err);
        r->export_path[0] = '\0';
        return EXIT_IO;
    }
    read_export(r->export_path, r);
    r->t_export = now_s() - te;
    if (r->frames == 0) {
        /* Nothing to measure or compare: a broken run, not a pass with no baseline. */
        reason(r, "no frames in %s: the run recorded no frame marks", side);
        return EXIT_IO;
    }

    return failed ? EXIT_VERDICT : EXIT_OK;
}

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

/* Adds one run's outcome to the invocation's result: its record, and its reasons prefixed with
 * the run when there are several. */
static void add_run(const ci_opts *o, ci_result *r, const ci_result *one, int baseline, int k,
                    int code)
{
    if (r->n_runs < MAX_RUNS) {
        ci_run_rec *rec = &r->runs[r->n_runs++];
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
            reason(r, "%s run %d: %s", baseline ? "baseline" : "current", k, one->reasons[i]);
        else
            reason(r, "%s", one->reasons[i]);
    }
}

/* One CI invocation: runs runs of the command (interleaved with the baseline command when there
 * is one: baseline 1, current 1, baseline 2, ...), gates the current runs against the baseline
 * and writes the report. Fills r; returns the exit code. */
static int ci_run(const ci_opts *o, ci_result *r)
{
    double t0 = now_s();
    ci_opts from_store; /* o with --baseline store replaced by the store's exports */
    memset(r, 0, sizeof *r);
    r->artifact_bytes = -1;
    r->frames = -1;
    r->capture_exit = -1;
    snprintf(r->artifact_path, sizeof r->artifact_path, "%s", o->artifact);
    int io_failure = 0, failed = 0;
    git_sha(r->git_sha, sizeof r->git_sha);
    char self[1024];
    char report_path[1200], current_dir[1200], runs_dir[1200], base_runs_dir[1200];
    snprintf(report_path, sizeof report_path, "%s/ci-report.json", o->dir);
    snprintf(current_dir, sizeof current_dir, "%s/current", o->dir);
    snprintf(runs_dir, sizeof runs_dir, "%s/runs", o->dir);
    snprintf(base_runs_dir, sizeof base_runs_dir, "%s/baseline-runs", o->dir);
    snprintf(r->capture_log, sizeof r->capture_log, "%s/capture.log", o->dir);

    char art_dir[1024];
    snprintf(art_dir, sizeof art_dir, "%s", o->artifact);
    char *slash = strrchr(art_dir, '/');
    if (slash)
        *slash = '\0';
    if (make_dirs(o->dir) || make_dirs(current_dir) || (slash && make_dirs(art_dir)) ||
        ((o->runs > 1 || o->baseline_argv) && make_dirs(runs_dir)) ||
        (o->baseline_argv && make_dirs(base_runs_dir))) {
        reason(r, "cannot create %s: %s", o->dir, strerror(errno));
        io_failure = 1;
        goto report;
    }
    if (self_path(self, sizeof self)) {
        reason(r, "cannot find the mprof executable (/proc/self/exe)");
        io_failure = 1;
        goto report;
    }
    clear_exports(current_dir);
    if (o->baseline_argv)
        clear_exports(base_runs_dir);
    g_interrupted = 0;

    for (int k = 1; k <= o->runs && !g_interrupted; k++) {
        for (int side = o->baseline_argv ? 1 : 0; side >= 0 && !g_interrupted; side--) {
            ci_result one;
            memset(&one, 0, sizeof one);
            one.artifact_bytes = -1;
            one.frames = -1;
            one.capture_exit = -1;
            memcpy(one.git_sha, r->git_sha, sizeof one.git_sha);
            char artifact[1100];
            const char *label = side ? "baseline" : "current";
            /* The last current run's capture is the required artifact; the others stay in
             * DIR/runs/ beside their logs. */
            if (!side && k == o->runs)
                snprintf(artifact, sizeof artifact, "%s", o->artifact);
            else
                snprintf(artifact, sizeof artifact, "%.1000s/%s-%d.mprof", runs_dir, label, k);
            if (o->runs == 1 && !side)
                snprintf(one.capture_log, sizeof one.capture_log, "%s", r->capture_log);
            else
                snprintf(one.capture_log, sizeof one.capture_log, "%.990s/%s-%d.log", runs_dir,
                         label, k);
            if (o->runs == 1 && !side)
                snprintf(one.export_path, sizeof one.export_path, "%.1200s/frames.json",
                         current_dir);
            else
                snprintf(one.export_path, sizeof one.export_path, "%.1200s/frames-%d.json",
                         side ? base_runs_dir : current_dir, k);
            int code = capture_one(o, side ? o->baseline_argv : o->command,
                                   side ? "BASELINE" : "CURRENT", artifact, self, &one);
            add_run(o, r, &one, side, k, code);
            if (code == EXIT_IO)
                io_failure = 1;
            else if (code != EXIT_OK)
                failed = 1;
            if (side)
                continue;
            /* The report's command, capture and event fields describe the last current run,
             * or the first current run that failed. */
            if (!r->cmd_failed_seen) {
                r->cmd_failed_seen = code != EXIT_OK;
                r->cmd_ran = one.cmd_ran;
                r->cmd_exit = one.cmd_exit;
                r->cmd_signal = one.cmd_signal;
                r->capture_exit = one.capture_exit;
                r->artifact_bytes = one.artifact_bytes;
                r->artifact_valid = one.artifact_valid;
                r->artifact_complete = one.artifact_complete;
                memcpy(r->artifact_ending, one.artifact_ending, sizeof r->artifact_ending);
                r->events_lost = one.events_lost;
                r->artifact_pid = one.artifact_pid;
                memcpy(r->source, one.source, sizeof r->source);
                memcpy(r->artifact_path, one.artifact_path, sizeof r->artifact_path);
                memcpy(r->note, one.note, sizeof r->note);
                memcpy(r->capture_log, one.capture_log, sizeof r->capture_log);
            }
            r->t_command += one.t_command;
            r->t_drain += one.t_drain;
            r->t_export += one.t_export;
            if (one.export_path[0] && one.frames > 0)
                snprintf(r->export_path, sizeof r->export_path, "%s", one.export_path);
        }
    }
    if (g_interrupted && !failed) {
        reason(r, "interrupted (SIGINT or SIGTERM) before every run was made");
        failed = 1;
    }
    if (io_failure)
        goto report;

    /* The current side's figures: every run's frames pooled. */
    {
        char err[1024];
        mprof_frames_runs *cs = mprof__frames_load(o->runs == 1 ? r->export_path : current_dir, 0,
                                               err, sizeof err);
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

    const char *baseline = o->baseline_argv ? base_runs_dir : o->baseline;
    if (mprof__ci_store_is_baseline(baseline)) {
        /* The store's recent passing runs, written out as frame exports, are the baseline. */
        from_store = *o;
        mprof__ci_store_baseline(o->store, &from_store.baseline, o->dir, r->export_path, o->quiet);
        o = &from_store;
        baseline = o->baseline;
    }
    if (baseline) {
        double tg = now_s();
        run_gate(o, baseline, o->runs == 1 ? r->export_path : current_dir, r);
        r->t_gate = now_s() - tg;
    }

report:
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
            reason(r, "the gate was inconclusive: %s", r->gate_reason);
        else
            warning(r, "the gate was inconclusive: %s", r->gate_reason);
    } else if (!baseline_given(o)) {
        snprintf(r->verdict, sizeof r->verdict, "no-baseline");
        r->exit_code = EXIT_OK;
    } else {
        snprintf(r->verdict, sizeof r->verdict, "pass");
        r->exit_code = EXIT_OK;
    }
    r->t_total = now_s() - t0;
    if (write_report(o, r, report_path) != 0) {
        tool_error("ci", EXIT_IO, "%s: cannot write the report: %s", report_path, strerror(errno));
        r->exit_code = EXIT_IO;
    } else {
        r->exit_code = mprof__ci_store_record(o->store, report_path, r->exit_code, o->quiet);
    }
    if (!o->quiet) {
        printf("mprof ci: %s (exit %d): %s\n", r->verdict, r->exit_code, report_path);
        for (int i = 0; i < r->n_reasons; i++)
            printf("  %s\n", r->reasons[i]);
        for (int i = 0; i < r->n_warnings; i++)
            printf("  warning: %s\n", r->warnings[i]);
        if (r->note[0])
            printf("  note: %s\n", r->note);
    }
    return r->exit_code;
}

/* A free TCP port on the loopback interface (the kernel's pick), or 0. */
static unsigned free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    unsigned port = 0;
    if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(s);
    return port;
}

/* --self-test: record (no baseline), unchanged (three runs of the workload interleaved with
 * three baseline runs of the same: must pass) and slowed (Physics 30 % slower against three
 * interleaved baseline runs: must be a regression naming Physics). A timing check: it belongs
 * to `make proof`, not to `make test`. */
static int self_test(const char *dir)
{
    char self[1024];
    if (strlen(dir) > 900)
        return tool_error("ci", EXIT_USAGE, "--output-dir is too long");
    if (self_path(self, sizeof self))
        return tool_error("ci", EXIT_IO, "cannot find the mprof executable");
    char steps[3][1000], art[3][1100];
    const char *names[3] = {"record-baseline", "unchanged", "slowed"};
    const char *slow[3] = {"0", "0", "30"};
    char *base_cmd[] = {self, (char *)"ci", (char *)"--self-test-workload", (char *)"--slow",
                        (char *)"0", NULL};
    int ok = 1;
    printf("mprof ci --self-test in %s\n", dir);
    for (int i = 0; i < 3; i++) {
        snprintf(steps[i], sizeof steps[i], "%.900s/%s", dir, names[i]);
        snprintf(art[i], sizeof art[i], "%.950s/ci-capture.mprof", steps[i]);
        char *cmd[] = {self, (char *)"ci", (char *)"--self-test-workload", (char *)"--slow",
                       (char *)slow[i], NULL};
        unsigned port = free_port();
        ci_opts o = {.dir = steps[i], .artifact = art[i], .address = "127.0.0.1",
                     .threshold = 10, .skip_frames = 10, .port = port ? port : 8086,
                     .drain_seconds = 10, .command = cmd, .n_command = 5,
                     .runs = i ? DEFAULT_RUNS : 1, .baseline_cmd = i ? "(the workload)" : NULL,
                     .baseline_argv = i ? base_cmd : NULL, .quiet = 1};
        ci_result r;
        int code = ci_run(&o, &r);
        const char *want = i == 0 ? "no-baseline" : (i == 1 ? "pass" : "regression");
        int good = strcmp(r.verdict, want) == 0 && (i < 2 || strcmp(r.top_zone, "Physics") == 0);
        printf("  %-16s %-13s exit %d, %d run(s) per side, %ld frames, p95 %.4f ms%s%s  [%s]\n",
               names[i], r.verdict, code, o.runs, r.frames, r.p95,
               r.top_zone[0] ? ", top zone " : "", r.top_zone, good ? "ok" : "UNEXPECTED");
        for (int k = 0; !good && k < r.n_reasons; k++)
            printf("    %s\n", r.reasons[k]);
        if (!good && r.gate_reason[0])
            printf("    gate: %s\n", r.gate_reason);
        ok &= good;
        if (!ok)
            break;
    }
    printf("mprof ci --self-test: %s\n", ok ? "PASS" : "FAIL");
    return tool_finish("ci", ok ? EXIT_OK : EXIT_VERDICT);
}

/* --expect-exit CODES: a comma-separated list of exit statuses 0..255. */
static int parse_exit_codes(const char *v, ci_opts *o)
{
    o->n_expect_exit = 0;
    const char *p = v;
    while (p && *p) {
        char *end;
        errno = 0;
        long c = strtol(p, &end, 10);
        if (end == p || errno || c < 0 || c > 255 || (*end && *end != ',') ||
            o->n_expect_exit >= MAX_EXPECT) {
            tool_error("ci", EXIT_USAGE, "--expect-exit needs up to %d exit statuses 0..255 "
                                         "separated by commas (e.g. 0,255), not '%s'",
                       MAX_EXPECT, v);
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

int cmd_ci(int argc, char **argv)
{
    ci_opts o = {.dir = DEFAULT_DIR, .address = "127.0.0.1", .threshold = 10, .port = 8086,
                 .drain_seconds = 10, .runs = DEFAULT_RUNS};
    int self = 0;
    double slow = 0, frames = 10000, exit_with = 0;
    int workload = 0;
    unsigned long long u;
    char art_default[1200], base_default[1200];
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (tool_is_help(a)) {
            fputs(help, stdout);
            return tool_finish("ci", EXIT_OK);
        } else if (strcmp(a, "--self-test") == 0) {
            self = 1;
        } else if (strcmp(a, "--self-test-workload") == 0) {
            workload = 1; /* internal: the instrumented workload the self-test runs */
        } else if (strcmp(a, "--slow") == 0 || strcmp(a, "--frames") == 0 ||
                   strcmp(a, "--exit") == 0) {
            /* internal, with --self-test-workload: the slowdown, frames and exit code */
            if (parse_double(a, v, 0, 1e7, a[2] == 's' ? &slow : (a[2] == 'f' ? &frames : &exit_with)))
                return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--output-dir") == 0 || strcmp(a, "--required-artifact") == 0 ||
                   strcmp(a, "--baseline") == 0 || strcmp(a, "--address") == 0) {
            if (!v || !*v)
                return tool_error("ci", EXIT_USAGE, "%s needs a value", a);
            if (a[2] == 'o')
                o.dir = v;
            else if (a[2] == 'r')
                o.artifact = v;
            else if (a[2] == 'b')
                o.baseline = v;
            else
                o.address = v;
            i++;
        } else if (strcmp(a, "--threshold") == 0) {
            if (parse_double(a, v, 0, 10000, &o.threshold))
                return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--seconds") == 0 || strcmp(a, "--drain-seconds") == 0) {
            if (parse_double(a, v, 0, 1e6, a[2] == 's' ? &o.seconds : &o.drain_seconds))
                return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--port") == 0) {
            if (tool_parse_uint("ci", a, v, 65535, &u))
                return EXIT_USAGE;
            o.port = (unsigned)u;
            i++;
        } else if (strcmp(a, "--skip-frames") == 0) {
            if (tool_parse_uint("ci", a, v, 100000000, &u))
                return EXIT_USAGE;
            o.skip_frames = (int)u;
            i++;
        } else if (strcmp(a, "--max-lost") == 0) {
            if (tool_parse_uint("ci", a, v, ~0ull, &o.max_lost))
                return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--fail-on-inconclusive") == 0) {
            o.fail_on_inconclusive = 1;
        } else if (strcmp(a, "--store") == 0) {
            if (!v || !*v)
                return tool_error("ci", EXIT_USAGE, "%s needs a value", a);
            o.store = v;
            i++;
        } else if (strcmp(a, "--allow-incomplete") == 0) {
            o.allow_incomplete = 1;
        } else if (strcmp(a, "--runs") == 0) {
            if (tool_parse_uint("ci", a, v, MAX_RUNS / 2, &u))
                return EXIT_USAGE;
            if (u == 0)
                return tool_error("ci", EXIT_USAGE, "--runs needs at least 1");
            o.runs = (int)u;
            i++;
        } else if (strcmp(a, "--baseline-cmd") == 0) {
            if (!v || !*v)
                return tool_error("ci", EXIT_USAGE, "--baseline-cmd needs a command");
            o.baseline_cmd = v;
            i++;
        } else if (strcmp(a, "--expect-exit") == 0) {
            if (parse_exit_codes(v, &o))
                return EXIT_USAGE;
            i++;
        } else if (a[0] == '-') {
            return tool_error("ci", EXIT_USAGE, "unknown option '%s' (see --help)", a);
        } else {
            break; /* the command starts here (the -- is optional) */
        }
    }
    if (workload) {
        mprof__ci_workload((long)frames, slow);
        return (int)exit_with & 255;
    }
    if (self) {
        if (i < argc)
            return tool_error("ci", EXIT_USAGE, "--self-test runs its own workload; no COMMAND");
        char dir[1100];
        if (strcmp(o.dir, DEFAULT_DIR) == 0)
            snprintf(dir, sizeof dir, "%s/self-test", DEFAULT_DIR);
        else
            snprintf(dir, sizeof dir, "%s", o.dir);
        return self_test(dir);
    }
    if (i >= argc)
        return tool_error("ci", EXIT_USAGE, "no command to run (mprof ci [options] -- COMMAND)");
    if (mprof__ci_store_check_args(o.store, o.baseline))
        return EXIT_USAGE;
    o.command = argv + i;
    o.n_command = argc - i;
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
    ci_result r;
    int code = ci_run(&o, &r);
    return tool_finish("ci", code);
}
