/*
 * stats.h - the process-wide statistics (stats.c): what mprof_get_stats returns and the
 * END chunk reports.
 *
 * Each figure is one atomic counter, updated by the module that does the counted thing (a
 * thread's buffer, the collector, a sink, GPU contexts) with a relaxed atomic add, so counting
 * never takes a lock and is never on the zone hot path except where an event is dropped.
 */
#ifndef MPROF_STATS_H
#define MPROF_STATS_H

#include "visibility.h"

#include <stdatomic.h>
#include <stdint.h>

typedef struct mprof__statistics {
    _Atomic uint64_t buffered_bytes;      /* thread blocks not yet drained (buffers.c) */
    _Atomic uint64_t peak_buffered_bytes; /* the most buffered_bytes reached this session */
    _Atomic uint64_t events_lost;         /* dropped: memory cap, collector out of memory */
    _Atomic uint64_t events_recorded;     /* translated by the collector */
    _Atomic uint64_t bytes_raw;           /* uncompressed EVENTS payloads */
    _Atomic uint64_t bytes_written;       /* by the file sink */
    _Atomic uint64_t chunks_written;      /* handed to the sinks */
    _Atomic uint32_t sessions_dropped;    /* live sessions whose tool went away */
    _Atomic uint64_t gpu_queries_lost;    /* GPU zones dropped: every query id in flight */
    _Atomic uint64_t frames_marked; /* MPROF_FRAME_MARK() calls, recording or not (automation) */
} mprof__statistics;

extern MPROF__HIDDEN mprof__statistics mprof__stats;

/* Adds bytes to buffered_bytes and raises the peak when it is passed. Any thread; inline
 * because a thread's block refill calls it. */
static inline void mprof__stats_add_buffered(uint64_t bytes)
{
    uint64_t now = atomic_fetch_add(&mprof__stats.buffered_bytes, bytes) + bytes;
    uint64_t peak = atomic_load(&mprof__stats.peak_buffered_bytes);
    while (now > peak &&
           !atomic_compare_exchange_weak(&mprof__stats.peak_buffered_bytes, &peak, now))
        ;
}
/* A new session starts (the collector, before recording): the per-session counters restart
 * and the peak restarts at what is buffered now. */
void mprof__stats_new_session(void);

#endif
