/*
 * zstats.h - zone statistics of a capture per source location: count, total (with the recursion
 * rule of docs/STATISTICS.md), self, time inside the main frames and a duration histogram, and
 * the main frames' durations. The CSV export and `mprof diff` read them.
 */
#ifndef MPROF_ANALYSIS_ZSTATS_H
#define MPROF_ANALYSIS_ZSTATS_H

#include "analysis/hist.h"
#include "analysis/range.h"

#include <stddef.h>
#include <stdint.h>

/* Zone statistics of a capture, per source location (also used by mprof diff). */
typedef struct mprof_zstat {
    char *name, *function, *file; /* owned */
    uint32_t line, color;
    uint64_t count;
    int64_t total_ns, self_ns; /* total: inclusive, an instance nested in another instance of
                                  the same location on its track adds nothing (recursion) */
    int64_t in_frames_ns;      /* the part of total inside the main frames' span */
    mprof_hist hist; /* durations of every call */
} mprof_zstat;

typedef struct mprof_zstats {
    mprof_zstat *z; /* indexed by the capture's srcloc id; count 0 = unused */
    uint32_t n;
    double *frame_ns; /* durations of the main frame set, sorted (frames that spanned lost
                         events left out) */
    uint64_t n_frames;
    uint64_t n_lossy; /* main frames left out because they spanned lost events */
    int64_t span_first_ns, span_last_ns; /* first and last main frame mark; -1 when none */
    int64_t duration_ns;
    uint64_t zones;
} mprof_zstats;

int mprof__zstats_collect(const char *capture_path, mprof_zstats *out, char *err, size_t errlen);
/* Only zones overlapping range (NULL = all), and only frames inside it. */
int mprof__zstats_collect_range(const char *capture_path, const mprof_export_range *range,
                                mprof_zstats *out, char *err, size_t errlen);
void mprof__zstats_free(mprof_zstats *s);

#endif
