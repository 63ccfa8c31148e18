/*
 * stats.c - the process-wide statistics, one atomic counter each.
 *
 * The counters live apart from the modules that update them because several modules count into
 * the same figure (events are lost by a thread over its memory cap, by the collector out of
 * memory, by system tracing's queue) and one reader, mprof_get_stats, reports them all.
 */
#include "stats.h"

mprof__statistics mprof__stats;

void mprof__stats_new_session(void)
{
    atomic_store(&mprof__stats.events_lost, 0);
    atomic_store(&mprof__stats.events_recorded, 0);
    atomic_store(&mprof__stats.bytes_raw, 0);
    atomic_store(&mprof__stats.bytes_written, 0);
    atomic_store(&mprof__stats.chunks_written, 0);
    atomic_store(&mprof__stats.peak_buffered_bytes, atomic_load(&mprof__stats.buffered_bytes));
}
