/*
 * zstats.h - zone statistics of a capture per source location, as site_stats.h defines them
 * (count, total with the recursion rule, self, time inside the main frames, a duration
 * histogram), with each location's names, and the main frames' durations. The CSV export and
 * `mprof diff` read them.
 */
#ifndef MPROF_ANALYSIS_ZSTATS_H
#define MPROF_ANALYSIS_ZSTATS_H

#include "analysis/range.h"
#include "analysis/site_stats.h"

#include <stddef.h>
#include <stdint.h>

/* Zone statistics of a capture, per source location (also used by mprof diff): the figures of
 * site_stats.h, with the location's names. */
typedef struct mprof_zstat {
    char *name, *function, *file; /* owned */
    uint32_t line, color;
    uint32_t process;     /* its process (index into mprof_zstats.procs): a merged capture's
                             source locations are each one process's */
    mprof_site_stat site; /* site.count 0 = unused */
} mprof_zstat;

/* A process of the capture (mprof_reader_process): every capture has at least one. */
typedef struct mprof_zproc {
    char *name;     /* owned; "" when unknown */
    uint64_t pid;
    uint32_t threads; /* threads with events */
} mprof_zproc;

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
    mprof_zproc *procs; /* n_procs of them, in the capture's order */
    uint32_t n_procs;
} mprof_zstats;

int mprof__zstats_collect(const char *capture_path, mprof_zstats *out, char *err, size_t errlen);
/* Only zones inside range (NULL = all: they start and end in it, with the recursion rule of a
 * range, site_stats.h), and only frames inside it. */
int mprof__zstats_collect_range(const char *capture_path, const mprof_export_range *range,
                                mprof_zstats *out, char *err, size_t errlen);
void mprof__zstats_free(mprof_zstats *s);

#endif
