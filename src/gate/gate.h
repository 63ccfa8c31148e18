/*
 * gate.h - the regression gate behind `mprof gate`: loads frame exports (mprof.frames.v1) for a
 * baseline and a current side, decides pass / regression / inconclusive, attributes a regression
 * to zones and writes the verdict as text, JSON (mprof.gateReport.v1) and Markdown.
 *
 * A side is one frame export or a directory of them (every *.json file in it, in name order);
 * each export is one run. docs/GATE.md describes the rule; in short, a regression needs both
 *   magnitude:    current p95 > baseline p95 * (1 + threshold / 100), and
 *   significance: two or more runs on each side, the one-sided rank test on frame times gives
 *                 p < alpha, the bootstrap interval of the p95 ratio (runs, then blocks of frames
 *                 resampled) and the run-level t interval of the runs' p95s lie wholly above
 *                 1.0, and, with enough runs, the rank test on the per-run p95s gives p < alpha.
 * The frame times are the decision frame times: with system tracing, the part of each frame that
 * the machine took from the main thread is left out (mprof__gate_decision_ms).
 *
 * Threads: none; every function may be called from any thread on its own objects.
 * Memory: each *_load / mprof__gate_compare result is owned by the caller and freed with the
 * matching *_free, which accepts NULL.
 */
#ifndef MPROF_ANALYSIS_GATE_H
#define MPROF_ANALYSIS_GATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MPROF_FRAMES_SCHEMA "mprof.frames.v1"
#define MPROF_GATE_SCHEMA "mprof.gateReport.v1"

/* Verdicts double as the exit codes of `mprof gate`. */
typedef enum mprof_gate_verdict {
    MPROF_GATE_PASS = 0,
    MPROF_GATE_REGRESSION = 1,
    MPROF_GATE_INCONCLUSIVE = 2,
    MPROF_GATE_BAD_INPUT = 3
} mprof_gate_verdict;

const char *mprof__gate_verdict_name(mprof_gate_verdict v); /* "pass", "regression", ... */

/* Options. Zero-initialised means defaults (each field's comment gives it). */
typedef struct mprof_gate_opts {
    double threshold_pct;          /* magnitude threshold in percent; default 10 (0 = default,
                                      negative = 0 %) */
    double alpha;                  /* significance level; default 0.05 */
    int skip_frames;               /* warm-up frames dropped from the start of each run; 0 */
    int min_frames;                /* frames needed per side after skipping; default 60 */
    int allow_different_machines;  /* compare exports whose hostname/cpu/build type differ */
    int n_resamples;               /* bootstrap rounds; default 2000 */
    uint64_t seed;                 /* bootstrap seed; 0 = the fixed default, so runs repeat */
    int top_zones;                 /* zones listed in the attribution; default 5 */
    int blocks;                    /* contiguous blocks per run for the correlation-aware rank
                                      test and block bootstrap; default 10, 1 = frames are
                                      independent (stats.h) */
} mprof_gate_opts;

/* One zone's per-frame time in one run (self time: the zone minus its children). */
typedef struct mprof_gate_zone {
    char *name;
    char *function;   /* "function" of the export, NULL when absent (older exports) */
    double *self_ms;  /* per frame, frames of the run (after skipping); NULL when not exported */
    double *incl_ms;  /* inclusive per frame, or NULL */
    double *self_off_ms; /* per frame, the part of self_ms its thread spent off the CPU
                            (selfOffCpuPerFrameMs, system tracing); NULL when not exported */
    double self_total_ms, incl_total_ms; /* whole-capture totals (fallback without per-frame) */
    size_t total_frames;                 /* frames the totals cover */
} mprof_gate_zone;

/* One frame export. */
typedef struct mprof_gate_run {
    char *path;
    char *process, *git_sha, *hostname, *cpu, *build_type, *start_time;
    double *frames_ms; /* after --skip-frames */
    size_t n_frames;
    size_t n_skipped;
    mprof_gate_zone *zones;
    size_t n_zones;
    /* System tracing (the export's "system" object and the arrays aligned with frameTimesMs),
     * after --skip-frames like frames_ms. Each array is NULL when the export lacks it. */
    int context_switches, cpu_usage; /* "system": contextSwitches, cpuUsage */
    char *system_why_not;            /* "system": whyNot, or NULL */
    double *on_cpu_ms, *off_cpu_ms;  /* frameOnCpuMs, frameOffCpuMs: the main thread */
    double *cpu_ms;                  /* frameCpuMs: every thread of the process */
    double *machine_busy;            /* frameMachineBusy: 0..1, other processes' share */
} mprof_gate_run;

typedef struct mprof_gate_side {
    char *origin; /* the path given on the command line */
    mprof_gate_run *runs;
    size_t n_runs;
} mprof_gate_side;

/*
 * Loads a side from a frame export or a directory of them, dropping skip_frames warm-up frames
 * from the start of each run. Returns NULL with a message naming the file and the problem in err
 * (a missing file, malformed JSON, a wrong schema, a negative frame time, ...).
 */
mprof_gate_side *mprof__gate_load(const char *dir_or_file, int skip_frames, char *err,
                                  size_t errlen);
/* Parses one frame export held in memory into run (zeroed first). name labels errors. Returns 0,
 * or -1 with a message in err (run then holds nothing to free). */
int mprof__gate_parse_run(const char *json, size_t len, const char *name, int skip_frames,
                          mprof_gate_run *run, char *err, size_t errlen);
void mprof__gate_run_clear(mprof_gate_run *run);
void mprof__gate_side_free(mprof_gate_side *s);

/* A side's figures. */
typedef struct mprof_gate_summary {
    size_t runs, frames;
    double p50_ms, p90_ms, p95_ms, p99_ms, mean_ms;
} mprof_gate_summary;

/*
 * The pooled frame-time figures of a side (every run's frames after skipping). Returns 0, or -1
 * out of memory (*out then zeroed).
 */
int mprof__gate_summarize_side(const mprof_gate_side *s, mprof_gate_summary *out);

/*
 * The frame time the gate decides on, for frame i of run (docs/GATE.md, "Noise"): with system
 * tracing, the frame time less the part of its main-thread off-CPU time that the machine took,
 *     t - off * busy          when the export has frameMachineBusy,
 *     t - off                 when it has only frameOffCpuMs (all off-CPU time is the machine's),
 * never below the main thread's on-CPU time nor below 0; without system tracing, t.
 */
double mprof__gate_decision_ms(const mprof_gate_run *run, size_t i, int use_system);

/* One row of the attribution: a zone's mean per-frame self time on each side. */
typedef struct mprof_gate_attrib {
    char *name;
    char *function;           /* NULL when the exports did not say */
    double base_ms, cur_ms;   /* mean self ms per frame (the slowest 1 % of frames left out
                                 when per-frame data exists); on-CPU self time when on_cpu */
    int on_cpu;               /* 1 when base_ms/cur_ms/p are on-CPU self time (selfPerFrameMs
                                 - selfOffCpuPerFrameMs on every run of both sides) */
    double base_off_ms, cur_off_ms; /* mean off-CPU self ms per frame (0 unless on_cpu) */
    int significant;          /* grew (delta_ms > 0), run_significant, and p < alpha where
                                 per_frame */
    int run_significant;      /* the runs' means grew: mprof__runs_diff_greater at alpha */
    double run_t;             /* its t statistic (+inf when neither side varies) */
    double delta_ms;          /* cur - base */
    double delta_pct;         /* 100 * (cur / base - 1); +inf when the zone is new */
    double base_incl_ms, cur_incl_ms; /* mean inclusive ms per frame */
    double p;                 /* one-sided rank test on per-frame self times (1 when unknown) */
    int per_frame;            /* 1 when both sides had per-frame data for the zone */
} mprof_gate_attrib;

typedef struct mprof_gate_result {
    mprof_gate_verdict verdict;
    char reason[1024];         /* one sentence: why this verdict */
    mprof_gate_opts opts;     /* with defaults filled in */
    mprof_gate_summary base, cur; /* raw frame times */
    /* Noise: with system tracing on every run of both sides, the gate decides on the decision
     * frame times (mprof__gate_decision_ms); base_dec/cur_dec are their figures. Without it,
     * noise_model is 0 and base_dec/cur_dec equal base/cur. */
    int noise_model;              /* 0 none, 1 off-CPU only, 2 off-CPU and machine busy share */
    char noise_note[512];         /* why there is no noise model, or which one is used */
    mprof_gate_summary base_dec, cur_dec;
    double base_p95_off_share, cur_p95_off_share; /* off-CPU share of the time of the frames at
                                                     or above the side's raw p95; -1 unknown */
    double raw_p95_ratio;         /* cur.p95 / base.p95 (raw frame times) */
    double p95_ratio;         /* cur p95 / base p95 of the decision frame times */
    double ci_lo, ci_hi;      /* bootstrap interval of the ratio at level 1 - alpha */
    int magnitude;            /* the threshold rule holds */
    int significant;          /* all the significance tests hold */
    double rank_p, rank_u, rank_z, rank_effect;
    double rank_design_effect; /* variance inflation for correlated frames (1 = none) */
    int rank_exact;
    int run_ci;               /* 1 when the run-level interval was made (>= 2 runs per side) */
    double run_mean_ci_lo, run_mean_ci_hi; /* the same interval of the ratio of the runs' mean
                                              decision frame times (with run_ci) */
    double run_ci_lo, run_ci_hi, run_ci_df; /* Student t interval of the ratio of the runs' p95s
                                               (geometric means) at level 1 - alpha */
    int run_test;             /* 1 when the per-run p95 test was made (>= 2 runs per side) */
    double run_p;             /* its one-sided p */
    long need_frames;         /* more frames per side suggested by an inconclusive verdict, 0 */
    long need_runs;           /* more runs per side suggested, 0 */
    char **warnings;          /* notes that do not change the verdict */
    size_t n_warnings;
    int shifted;              /* the distribution clearly shifted although the p95 stayed
                                 within the threshold (a warning says so) */
    mprof_gate_attrib *zones; /* sorted by delta_ms, largest growth first; top_zones at most */
    size_t n_zones;
    char **base_paths, **cur_paths; /* the runs' files */
    char *base_git_sha, *cur_git_sha;
} mprof_gate_result;

/*
 * Compares the two sides. Returns the result (never NULL unless out of memory, reported in err);
 * a comparison refused by the machine guard has verdict MPROF_GATE_BAD_INPUT and says why.
 */
mprof_gate_result *mprof__gate_compare(const mprof_gate_side *base, const mprof_gate_side *cur,
                                       const mprof_gate_opts *opts, char *err, size_t errlen);
void mprof__gate_result_free(mprof_gate_result *r);

/* Writers. Each returns 0, or -1 when the stream reports an error. */
int mprof__gate_print_text(const mprof_gate_result *r, FILE *out);
int mprof__gate_write_json(const mprof_gate_result *r, FILE *out);
int mprof__gate_write_markdown(const mprof_gate_result *r, FILE *out);

#endif
