/*
 * report.h - the CI report (mprof.ciReport.v1, ci-report.json): what one `mprof ci` invocation
 * did and decided, as a model in memory with its writer and its reader. `mprof ci` writes it
 * (ci.c fills the model from its result); the run store reads it back (`mprof store add`, and
 * `mprof ci --store` after the report is written). docs/GATE.md lists its members.
 *
 * The model borrows every string and array it points to: from the invocation that fills it, or,
 * for a report read from text, from storage the report owns until mprof__ci_report_clear().
 *
 * Threads: none; any thread on its own objects.
 */
#ifndef MPROF_CI_REPORT_H
#define MPROF_CI_REPORT_H

#include <stddef.h>
#include <stdint.h>

#define MPROF_CI_REPORT_SCHEMA "mprof.ciReport.v1"

/* True when v is one of the report's verdicts: pass, regression, inconclusive, no-baseline,
 * failed. */
int mprof__ci_verdict_known(const char *v);

/* One entry of runs[]. Figures that are not known are written as null. */
typedef struct mprof_ci_report_run {
    const char *side;         /* "baseline" or "current"; NULL when a read report omits it */
    int run;                  /* 1, 2, ... within its side */
    int ok;                   /* the run passed */
    int command_ran;          /* commandExitCode is known when the command ran unsignalled */
    int command_exit, command_signal; /* commandSignal: 0 when none */
    long frames;              /* frameCount; -1 unknown; p95FrameTimeMs is known when > 0 */
    double p95_ms;
    int valid;                /* the capture was read whole: eventsLost is known */
    long long events_lost;
    const char *capture;      /* the run's capture file */
    const char *source;       /* "live" or "in-process"; NULL or "" unknown */
    const char *frame_export; /* NULL or "" when there is none */
    double command_seconds;
} mprof_ci_report_run;

/* The gate's outcome ("gate"). */
typedef struct mprof_ci_report_gate {
    const char *verdict, *reason;
    const char *top_zone;       /* NULL or "": no zone grew significantly */
    const char *report, *markdown; /* the gate's own reports; NULL or "" when not written */
} mprof_ci_report_gate;

/* The run store's outcome ("store", with --store or --baseline store). */
typedef struct mprof_ci_report_store {
    const char *url;            /* the store, its password hidden; NULL or "" when none given */
    int64_t run_id;             /* the stored run; -1 when the run was not stored */
    int baseline;               /* --baseline store was asked for */
    size_t baseline_last;       /* store:last=N */
    const int64_t *baseline_ids; /* the stored runs the baseline came from */
    size_t n_baseline_ids;
    const char *baseline_dir;   /* where their frame exports were written */
    const char *error;          /* what failed; NULL or "" when nothing did (a failure is also
                                   added to reasons[]) */
} mprof_ci_report_store;

/* The whole report. Milliseconds are written as the frame export writes them (6 decimals),
 * seconds to the millisecond. */
typedef struct mprof_ci_report {
    const char *verdict;        /* mprof__ci_verdict_known */
    int exit_code;
    const char *const *reasons; /* failures only */
    size_t n_reasons;
    const char *const *warnings;
    size_t n_warnings;
    const char *git_sha;        /* NULL or "" unknown */
    const char *run_uid;        /* runUid: 32 hex digits, made once per invocation; the run store
                                   stores a run of one uid once. NULL or "": none (an older report) */
    const char *const *command; /* the command's arguments; NULL when a read report has none */
    size_t n_command;
    int command_ran, command_exit, command_signal; /* as in mprof_ci_report_run */
    struct {
        const char *path, *source, *note; /* source as in runs[]; note NULL or "": none */
        long long bytes;        /* -1 unknown */
        int valid, complete;
        const char *ending;     /* how the capture ended; written when valid */
        int tool_exit_code;     /* `mprof capture`'s exit status */
        const char *log, *address;
        unsigned port;
    } capture;
    long long events_lost;      /* known when capture.valid */
    unsigned long long max_events_lost;
    int have_frames;            /* frames and percentiles are known */
    long frames;
    double p50_ms, p90_ms, p95_ms, p99_ms;
    const char *baseline;       /* what the gate compared against; NULL when nothing */
    const char *baseline_command;
    int runs_per_side;
    const int *expect_exit;
    size_t n_expect_exit;
    int have_baseline_p95;
    double baseline_p95_ms;
    double threshold_pct;
    const mprof_ci_report_gate *gate;   /* NULL: the gate did not run */
    const char *frame_export;           /* NULL or "": none */
    const mprof_ci_report_run *runs;
    size_t n_runs;
    double command_seconds, drain_seconds, export_seconds, gate_seconds, total_seconds;
    const mprof_ci_report_store *store; /* NULL: no "store" member */
    void *owned;                        /* what a read report holds (mprof__ci_report_clear) */
} mprof_ci_report;

/* Writes report to path as indented JSON. Returns 0, or -1 with errno set. */
int mprof__ci_report_write(const mprof_ci_report *report, const char *path);

/*
 * Reads a CI report held in memory into report (zeroed first): verdict, gitSha, command,
 * capture.path and capture.bytes, frameExport and each runs[] entry's side and frameExport;
 * the other members stay zero. name labels errors. Returns 0, or -1 with a message in err (not
 * JSON, another schema, a verdict that is not one of the five; "out of memory"); report then
 * holds nothing.
 */
int mprof__ci_report_parse(const char *json, size_t len, const char *name,
                           mprof_ci_report *report, char *err, size_t errlen);
void mprof__ci_report_clear(mprof_ci_report *report);

/* Where a frame export that the report at report_path names is: as written, or, for a relative
 * path not found from here, under the report's folder (which is ci's --output-dir) with the
 * path's first folder taken for that one. Returns path or out. */
const char *mprof__ci_report_locate(const char *report_path, const char *path, char *out,
                                    size_t n);

#endif
