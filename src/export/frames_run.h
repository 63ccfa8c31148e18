/*
 * frames_run.h - a frame export (mprof.frames.v1) in memory: the one model of a run that the
 * gate decides on and the run store keeps, its reader and its writer. frames.h writes the format
 * from a capture; here it is read back (frames_read.c), figured and written from memory
 * (frames_run.c). docs/GATE.md specifies the schema.
 *
 * Threads: none; every function may be called from any thread on its own objects.
 * Memory: a run owns every string and array it points to and is emptied with
 * mprof__frames_run_clear(); mprof__frames_load() results are freed with mprof__frames_runs_free(),
 * which accepts NULL.
 */
#ifndef MPROF_EXPORT_FRAMES_RUN_H
#define MPROF_EXPORT_FRAMES_RUN_H

#include "util/json_out.h"

#include <stddef.h>
#include <stdio.h>

#define MPROF_FRAMES_SCHEMA "mprof.frames.v1"

/* Frame-time figures: of one run's frames, or of several runs' frames pooled. */
typedef struct mprof_frames_summary {
    size_t runs, frames;
    double p50_ms, p90_ms, p95_ms, p99_ms, mean_ms;
} mprof_frames_summary;

/* One zone of a run. Per-frame arrays hold one value per frame of the run (after skipping). */
typedef struct mprof_frames_zone {
    char *name;
    char *function;      /* "function", NULL when absent or empty */
    double *self_ms;     /* "selfPerFrameMs": self time (the zone less its children), or NULL */
    double *incl_ms;     /* "perFrameMs": inclusive time, or NULL */
    double *self_off_ms; /* "selfOffCpuPerFrameMs": the part of self_ms its thread spent off the
                            CPU (system tracing), or NULL */
    double self_total_ms, incl_total_ms; /* "selfTotalMs", "totalMs" over the whole capture (0
                                            when absent) */
    size_t total_frames; /* frames the totals cover: the export's, before skipping */
    double self_mean_ms; /* mean self ms per frame: set by mprof__frames_run_summarize, or by
                            whoever made the run (a stored run's zone means) */
} mprof_frames_zone;

/* One frame export: who made it, its frames, the main thread's CPU per frame, its zones. */
typedef struct mprof_frames_run {
    char *path; /* the file it was read from, which names it in messages; NULL when made in
                   memory */
    /* "capture": the identity that the gate's machine guard compares. NULL when unknown. */
    char *file, *process, *command_line, *git_sha, *hostname, *cpu, *build_type, *start_time;
    double *frames_ms; /* "frameTimesMs", after skipping */
    size_t n_frames;
    size_t n_skipped;  /* warm-up frames dropped from the start */
    /* The export's own figures ("frameCount", "p50FrameTimeMs", ...: of all its frames, before
     * skipping) as it wrote them; mprof__frames_run_summarize replaces them with figures of
     * frames_ms. runs is 1. */
    mprof_frames_summary summary;
    /* System tracing: the export's "system" object and the arrays aligned with frameTimesMs,
     * after skipping like frames_ms. Each array is NULL when the export lacks it. */
    int context_switches, cpu_usage; /* "system": contextSwitches, cpuUsage */
    char *system_why_not;            /* "system": whyNot, or NULL */
    double *on_cpu_ms, *off_cpu_ms;  /* frameOnCpuMs, frameOffCpuMs: the main thread */
    double *cpu_ms;                  /* frameCpuMs: every thread of the process */
    double *machine_busy;            /* frameMachineBusy: 0..1, other processes' share */
    /* With switch reasons ("system": switchReasons true): the main thread's preempted and
     * blocked time per frame, and the part of its waits that the critical path spent runnable
     * (framePreemptedMs, frameBlockedMs, frameWaitRunnableMs; all three or none). */
    int switch_reasons;
    int critical_path;               /* "criticalPath": 0 null, 1 "inferred", 2 "wakers" */
    size_t path_truncated;           /* "pathTruncatedFrames" */
    double *preempted_ms, *blocked_ms, *wait_runnable_ms;
    mprof_frames_zone *zones;        /* as the export lists them: largest self time first */
    size_t n_zones;
} mprof_frames_run;

/* The runs of one path: a frame export, or every *.json file of a directory in natural name
 * order (frames-9.json before frames-10.json). */
typedef struct mprof_frames_runs {
    char *origin; /* the path given */
    mprof_frames_run *runs;
    size_t n_runs;
} mprof_frames_runs;

/* Reading. */
enum {
    /* Read frameOnCpuMs and frameOffCpuMs also when the export has no "system" object (the run
     * store keeps them whenever they are there; the gate decides only on CPU times that a
     * "system" object vouches for, and leaves them out otherwise). */
    MPROF_FRAMES_CPU_WITHOUT_SYSTEM = 1
};

/* Parses one frame export held in memory into run (zeroed first), dropping skip_frames warm-up
 * frames from the start; flags are MPROF_FRAMES_* bits. name labels errors and becomes run->path.
 * Returns 0, or -1 with a message naming name and the problem in err (malformed JSON, a wrong
 * schema, a negative frame time, arrays of different lengths, ...); run then holds nothing. */
int mprof__frames_parse(const char *json, size_t len, const char *name, int skip_frames,
                        unsigned flags, mprof_frames_run *run, char *err, size_t errlen);
/* The same for the file at path (at most 1 GiB). */
int mprof__frames_read(const char *path, int skip_frames, unsigned flags, mprof_frames_run *run,
                       char *err, size_t errlen);
/* Loads a frame export or a directory of them (mprof_frames_runs) with flags 0. Returns NULL with
 * a message naming the file and the problem in err (a missing file, an empty directory, a
 * malformed export). */
mprof_frames_runs *mprof__frames_load(const char *dir_or_file, int skip_frames, char *err,
                                      size_t errlen);
void mprof__frames_run_clear(mprof_frames_run *run);
void mprof__frames_runs_free(mprof_frames_runs *s);

/* Figures: the one definition of a frame-time summary (percentiles as in percentile.h, the mean
 * over the sorted values). */
/* The figures of n values (any order), counted as runs runs. 0, or -1 out of memory (*out then
 * zeroed). */
int mprof__frames_summarize(const double *v, size_t n, size_t runs, mprof_frames_summary *out);
/* Every run's frames pooled; runs is s->n_runs. 0, or -1 out of memory. */
int mprof__frames_runs_summarize(const mprof_frames_runs *s, mprof_frames_summary *out);
/* run->summary from frames_ms, and each zone's self_mean_ms from its self_ms. 0, or -1 out of
 * memory. */
int mprof__frames_run_summarize(mprof_frames_run *run);

/* Writing. What a written export says of its capture besides the run's identity. */
typedef struct mprof_frames_origin {
    const char *git_sha_source; /* "gitShaSource" */
    int complete;               /* "complete" */
    /* Writes more members inside "capture", after the others (NULL: none). */
    void (*capture_extra)(mprof_json *j, const void *ctx);
    const void *ctx;
} mprof_frames_origin;

/*
 * Writes run as a frame export on one line: the capture identity (file, commandLine, startTime,
 * gitSha, hostname, cpu, buildType: null when unknown), the run's summary when it has frames,
 * frameTimesMs, frameOnCpuMs and frameOffCpuMs when it has both, and each zone's name, function,
 * selfTotalMs, perFrameMs, selfPerFrameMs and selfOffCpuPerFrameMs where known. There is no
 * "system" object: the gate reading it back decides on raw frame times. Returns 0, or -1 when
 * the stream reports an error.
 */
int mprof__frames_write(const mprof_frames_run *run, const mprof_frames_origin *origin, FILE *out);

#endif
