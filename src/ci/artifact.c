/*
 * artifact.c - the capture a run leaves, checked and turned into frames.
 *
 * A capture that exists is not yet a capture of this run: it is read whole (every chunk and
 * event must decode), its process must be the instrumented one (another program may hold the
 * port), and it must have ended cleanly unless --allow-incomplete says otherwise. When the live
 * capture missed the run (a command shorter than the tool's retry, a port taken), the command's
 * own in-process file becomes the artifact and the report says so. Then its frames are exported
 * into the run's frame export, whose own figures the report quotes.
 */
#define _POSIX_C_SOURCE 200809L

#include "ci/ci.h"
#include "export/frames.h"
#include "export/frames_run.h"
#include "format/batch.h"
#include "format/format.h"
#include "util/tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void mprof__ci_check_artifact(const char *path, mprof_ci_result *r)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        mprof__ci_reason(r, "the capture artifact %s is missing", path);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        /* A device or a FIFO is no capture to read (opening a FIFO could wait forever). */
        mprof__ci_reason(r, "the capture artifact %s is not a regular file", path);
        return;
    }
    r->artifact_bytes = (long long)st.st_size;
    char err[512];
    mprof_reader *rd = mprof_reader_open(path, err, sizeof err);
    if (!rd) {
        mprof__ci_reason(r, "the capture artifact is invalid: %s", err);
        return;
    }
    /* Every chunk and event is decoded and checked; none needs handing out. */
    static const unsigned char none[MPROF_EV_MAX];
    mprof_reader_want(rd, none);
    mprof_batch b;
    int rc;
    while ((rc = mprof_reader_next_batch(rd, &b)) == 1)
        ;
    if (rc < 0) {
        mprof__ci_reason(r, "the capture artifact is invalid: %s: %s", path,
                         mprof_reader_error(rd));
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

/* Frame figures from the export just written: its frame count and percentiles as it wrote them. */
static void read_export(const char *path, mprof_ci_result *r)
{
    mprof_frames_run run;
    char err[512];
    if (mprof__frames_read(path, 0, 0, &run, err, sizeof err) != 0)
        return;
    r->frames = (long)run.summary.frames;
    r->p50 = run.summary.p50_ms;
    r->p90 = run.summary.p90_ms;
    r->p95 = run.summary.p95_ms;
    r->p99 = run.summary.p99_ms;
    mprof__frames_run_clear(&run);
}

/* Takes the live capture when it is this run's, else the in-process file. Returns 1 when r then
 * has a valid artifact. */
static int choose_artifact(const mprof_ci_opts *o, const char *artifact, const char *inprocess,
                           pid_t cmd, mprof_ci_result *r)
{
    int n_before = r->n_reasons;
    mprof__ci_check_artifact(artifact, r);
    /* The in-process file is written by the instrumented process itself, so its pid is the one
     * the live capture must show. The direct child's pid is only a stand-in when there is no
     * in-process file: the child may be a wrapper (sh -c, a script) that runs the process. */
    mprof_ci_result tmp;
    memset(&tmp, 0, sizeof tmp);
    mprof__ci_check_artifact(inprocess, &tmp);
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
        return 1;
    }
    /* The live capture is missing or unusable: fall back to the in-process file. Only a regular
     * file (or nothing) at the artifact path is replaced: renaming over a device node, a FIFO or
     * a symlink would destroy it, so then the in-process file stays where it is and is the
     * artifact. */
    struct stat ast;
    int keep = lstat(artifact, &ast) == 0 && !S_ISREG(ast.st_mode);
    if (tmp.artifact_valid && (keep || rename(inprocess, artifact) == 0)) {
        if (keep)
            snprintf(r->artifact_path, sizeof r->artifact_path, "%s", inprocess);
        r->n_reasons = n_before; /* the live artifact's problems no longer matter */
        mprof__ci_check_artifact(r->artifact_path, r);
        snprintf(r->source, sizeof r->source, "in-process");
        if (r->note[0]) {
            size_t l = strlen(r->note);
            snprintf(r->note + l, sizeof r->note - l,
                     "; the command's in-process capture is the artifact");
        } else {
            snprintf(r->note, sizeof r->note,
                     "mprof capture did not get the run (tool exit %d, see %s); the command's "
                     "in-process capture is the artifact",
                     r->capture_exit, r->capture_log);
        }
    } else {
        if (r->note[0])
            mprof__ci_reason(r, "%s", r->note);
        if (r->capture_exit != 0 && r->capture_exit != 1)
            mprof__ci_reason(r, "mprof capture exited %d (see %s)", r->capture_exit,
                             r->capture_log);
    }
    return r->artifact_valid;
}

int mprof__ci_artifact(const mprof_ci_opts *o, const char *artifact, const char *inprocess,
                       pid_t cmd, const char *side, mprof_ci_result *r)
{
    if (!choose_artifact(o, artifact, inprocess, cmd, r))
        return EXIT_IO;
    int failed = 0;
    if (!r->artifact_complete && !o->allow_incomplete) {
        mprof__ci_reason(r, "the capture did not end cleanly (%s); --allow-incomplete accepts it",
                         r->artifact_ending);
        failed = 1;
    }
    if ((unsigned long long)r->events_lost > o->max_lost) {
        mprof__ci_reason(r, "%lld events were lost (at most %llu allowed, --max-lost)",
                         r->events_lost, o->max_lost);
        failed = 1;
    }
    double te = mprof__ci_now();
    char err[1024];
    if (mprof__export_frames_process(r->artifact_path, NULL, o->process, r->export_path, err,
                                     sizeof err) != 0) {
        mprof__ci_reason(r, "the frame export failed: %s", err);
        r->export_path[0] = '\0';
        return EXIT_IO;
    }
    read_export(r->export_path, r);
    r->t_export = mprof__ci_now() - te;
    if (r->frames == 0) {
        /* Nothing to measure or compare: a broken run, not a pass with no baseline. */
        mprof__ci_reason(r, "no frames in %s: the run recorded no frame marks", side);
        return EXIT_IO;
    }
    return failed ? EXIT_VERDICT : EXIT_OK;
}
