/*
 * passes.h - read access to the memory, locks and fibers passes' results, for tests and for
 * tools that want numbers rather than text (e.g. a gate on leaked bytes). Each function returns
 * 0 and fills *out, or -1 when the pass did not run or has no such entry. Strings belong to the
 * analysis.
 */
#ifndef MPROF_ANALYSIS_PASSES_H
#define MPROF_ANALYSIS_PASSES_H

#include "analysis/analysis.h"

typedef struct mprof_pool_result {
    const char *name;
    uint64_t allocs, frees, discards, discarded_allocs, unmatched_frees, live_count;
    int64_t live_bytes, peak_bytes, peak_ns;
    uint32_t peak_callstack;
    uint64_t lifetime_count, lifetime_p50_ns, lifetime_max_ns;
    uint64_t lifetime_frames_p50, lifetime_frames_max;
} mprof_pool_result;

typedef struct mprof_leak_result {
    const char *pool;
    uint64_t count, bytes;
    uint32_t callstack;
} mprof_leak_result;

/* Pool by name ("heap" = the default pool). */
int mprof__memory_pool(mprof_analysis *a, const char *name, mprof_pool_result *out);
/* The i-th leak group, largest first. */
int mprof__memory_leak(mprof_analysis *a, uint32_t i, mprof_leak_result *out);

typedef struct mprof_lock_result {
    const char *name;
    uint64_t acquisitions, shared_acquisitions, contended, try_failed, waits_abandoned;
    uint64_t wait_count, wait_p50_ns, wait_p95_ns, wait_max_ns;
    int64_t wait_total_ns, hold_total_ns;
    uint64_t hold_count;
    const char *top_zone;        /* zone that waited longest, NULL when none */
    uint32_t top_thread;         /* thread that waited longest, 0 when none */
} mprof_lock_result;

int mprof__locks_get(mprof_analysis *a, const char *name, mprof_lock_result *out);

typedef struct mprof_fiber_result {
    const char *name;
    uint64_t runs, migrations, unmatched_zone_ends;
    uint32_t open_zones;
    int64_t run_ns;
    uint64_t gap_count, gap_p50_ns, gap_p95_ns, gap_max_ns;
} mprof_fiber_result;

typedef struct mprof_fiber_zone_result {
    uint64_t count;
    int64_t total_ns, self_ns;
} mprof_fiber_zone_result;

int mprof__fibers_get(mprof_analysis *a, const char *name, mprof_fiber_result *out);
/* The zone named zone on fiber's track. */
int mprof__fibers_zone(mprof_analysis *a, const char *fiber, const char *zone,
                       mprof_fiber_zone_result *out);

#endif
