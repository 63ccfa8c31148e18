/*
 * gate.h - the regression gate behind `mprof gate`: compares the frame exports of a baseline and
 * a current side (export/frames_run.h reads them), decides pass / regression / inconclusive,
 * attributes a regression to zones and writes the verdict as text, JSON (mprof.gateReport.v1)
 * and Markdown.
 *
 * A side is one frame export or a directory of them (mprof__frames_load); each export is one run.
 * docs/GATE.md describes the rule; in short, a regression needs either the p95 rule,
 *   magnitude:    current p95 > baseline p95 * (1 + threshold / 100), and
 *   significance: two or more runs on each side, the one-sided rank test on frame times gives
 *                 p < alpha, the bootstrap interval of the p95 ratio (runs, then blocks of frames
 *                 resampled) and the run-level t interval of the runs' p95s lie wholly above
 *                 1.0, and, with enough runs, the rank test on the per-run p95s gives p < alpha,
 * or every frame slower: the frames (their median past 1 + threshold, the rank test significant)
 * and the runs (their medians past 1 + threshold, significantly above 1) agree (shift.c).
 * The frame times are the decision frame times: with system tracing, the part of each frame that
 * its critical path spent runnable but not running is left out (mprof__gate_decision_ms).
 *
 * Files: decide.c (the rule, step by step), noise.c (decision frame times and the noise model),
 * attribution.c (which zone grew), result.c (the result and its shared wording), text.c,
 * json.c and markdown.c (the writers), stats.c (the statistics).
 *
 * Threads: none; every function may be called from any thread on its own objects.
 * Memory: a mprof__gate_compare result is owned by the caller and freed with
 * mprof__gate_result_free, which accepts NULL.
 */
#ifndef MPROF_GATE_GATE_H
#define MPROF_GATE_GATE_H

#include "export/frames_run.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MPROF_GATE_SCHEMA "mprof.gateReport.v1"
/* The most runs a side the advice names (`mprof ci --runs` takes 1 to 32). */
#define MPROF_GATE_MAX_RUNS 32

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
    const char *process;           /* --process: every export of both sides must be of the
                                      process of this name (capture.process); NULL = any. Not
                                      copied: it must outlive the result */
} mprof_gate_opts;

/* The noise models, weakest first (noise.c; docs/GATE.md, DECISION TIME). The gate uses the
 * best one that every run of both sides allows. */
enum {
    MPROF_GATE_NOISE_NONE = 0,              /* raw frame times */
    MPROF_GATE_NOISE_OFF_CPU = 1,           /* less all off-CPU time */
    MPROF_GATE_NOISE_OFF_CPU_BUSY = 2,      /* less off-CPU time x the machine's busy share */
    MPROF_GATE_NOISE_PREEMPTED = 3,         /* less the main thread's preempted time */
    MPROF_GATE_NOISE_CRITICAL_INFERRED = 4, /* less the critical path's runnable time, wakers
                                               inferred */
    MPROF_GATE_NOISE_CRITICAL = 5           /* the same with the wakers recorded */
};

/*
 * The frame time the gate decides on, for frame i of run under model (docs/GATE.md, "Decision
 * time"): the frame time less what the model says the machine took from its critical path,
 *     t - preempted - waitRunnable     critical-path models,
 *     t - preempted                    preempted,
 *     t - off * busy, t - off          the off-CPU models,
 * never below the main thread's on-CPU time nor below 0; t when the run lacks what the model
 * needs.
 */
double mprof__gate_decision_ms(const mprof_frames_run *run, size_t i, int model);

/* What the noise model did to one side. Shares are of the side's frame time; -1 when unknown. */
typedef struct mprof_gate_noise_side {
    double p95_off_share;      /* off-CPU share of the frames at or above the side's raw p95 */
    double runnable_share;     /* what the capture knows the critical path spent runnable
                                  (framePreemptedMs + frameWaitRunnableMs), all frames */
    double removed_share;      /* what the model removed, all frames */
    double p95_runnable_share, p95_removed_share; /* the same over the frames at or above the
                                                     raw p95 */
    double p95_busy_removed_share; /* what off-CPU x machine busy would remove of those */
    size_t truncated_frames;   /* frames whose critical path was followed part of the way */
} mprof_gate_noise_side;

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
    int exceeds;              /* significant, and its growth is more than the threshold's share
                                 of the baseline's mean decision frame time: always listed, and
                                 first */
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
    mprof_frames_summary base, cur; /* raw frame times */
    /* Noise: with system tracing on every run of both sides, the gate decides on the decision
     * frame times (mprof__gate_decision_ms); base_dec/cur_dec are their figures. Without it,
     * noise_model is 0 and base_dec/cur_dec equal base/cur. */
    int noise_model;              /* MPROF_GATE_NOISE_* */
    char noise_note[512];         /* why there is no noise model, or which one is used */
    mprof_frames_summary base_dec, cur_dec;
    double base_p95_off_share, cur_p95_off_share; /* off-CPU share of the time of the frames at
                                                     or above the side's raw p95; -1 unknown */
    mprof_gate_noise_side base_noise, cur_noise;
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
    /* Every frame slower (shift.c): the frames (their pooled median decision frame time past
     * 1 + threshold, and the rank test) and the runs (their medians past the same ratio and
     * significantly above 1) agree; a regression when both hold, whatever the p95 did. */
    int shift_tested;         /* two or more runs a side */
    double frame_median_ratio; /* pooled median decision frame time, current / baseline */
    int shift_frames_ok;      /* frame_median_ratio > 1 + threshold and rank_p < alpha */
    double shift_p, shift_effect, shift_design_effect; /* the rank test of the current frames
                                                          against the baseline's times 1 +
                                                          threshold: reported, not required */
    double run_median_ratio;  /* geometric mean of the current runs' medians / the baseline's */
    double run_median_lo;     /* its one-sided lower bound at 1 - alpha */
    double run_median_sd;     /* the runs' medians' spread (pooled sd of their logs) */
    int shift_runs_ok;        /* run_median_ratio > 1 + threshold and run_median_lo > 1 */
    int shift;                /* both tests hold */
    /* An inconclusive verdict's advice: the runs a side (`mprof ci --runs`) that the measured
     * run-to-run spread says would settle it; 0 when no number would (no growth to find), -1
     * when more than MPROF_GATE_MAX_RUNS would. */
    long recommended_runs;
    double run_p95_sd;        /* the runs' p95s' spread (pooled sd of their logs), 0 unknown */
    char **warnings;          /* notes that do not change the verdict */
    size_t n_warnings;
    int shifted;              /* the distribution clearly shifted although the p95 stayed
                                 within the threshold (a warning says so) */
    mprof_gate_attrib *zones; /* sorted by delta_ms, largest growth first; top_zones at most */
    size_t n_zones;
    char **base_paths, **cur_paths; /* the runs' files */
    char *base_capture, *cur_capture; /* the captures of each side's first run (the exports'
                                         capture.file), NULL when they do not say */
    char *base_git_sha, *cur_git_sha;
} mprof_gate_result;

/*
 * Compares the two sides. Returns the result (never NULL unless out of memory, reported in err);
 * a comparison refused by the machine guard has verdict MPROF_GATE_BAD_INPUT and says why.
 */
mprof_gate_result *mprof__gate_compare(const mprof_frames_runs *base, const mprof_frames_runs *cur,
                                       const mprof_gate_opts *opts, char *err, size_t errlen);
void mprof__gate_result_free(mprof_gate_result *r);

/* Writers. Each returns 0, or -1 when the stream reports an error. */
int mprof__gate_print_text(const mprof_gate_result *r, FILE *out);
int mprof__gate_write_json(const mprof_gate_result *r, FILE *out);
int mprof__gate_write_markdown(const mprof_gate_result *r, FILE *out);
/* The reports of a comparison that could not be made (the inputs could not be read): the
 * verdict bad-input and why, so that a CI log still finds a report. */
int mprof__gate_write_json_refused(const char *reason, FILE *out);
int mprof__gate_write_markdown_refused(const char *reason, FILE *out);

#endif
