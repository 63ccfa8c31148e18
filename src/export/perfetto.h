/*
 * perfetto.h - a capture as a Perfetto trace (protobuf: the TracePacket stream that
 * ui.perfetto.dev and trace processor open natively), written while the capture is read.
 *
 * Zones become slices on thread tracks (a sequence of packets per thread, names and source
 * locations interned, timestamps as deltas on the sequence's own clock); plots, memory pools
 * and CPU usage become counter tracks; messages log messages with their priority; GPU zones
 * slices on their queue's track, joined to their CPU submit by a flow; lock waits and holds
 * slices on lock tracks; frames slices on a frames track; context switches and wake-ups
 * ftrace sched_switch / sched_waking events, from which Perfetto builds thread states and CPU
 * lanes; callstack samples perf samples with interned callstacks. docs/EXPORT.md has the
 * mapping and the fields written.
 *
 * Memory does not grow with the capture's length: what is held is open state (zone stacks,
 * GPU zones whose queue may still get an earlier one, a bounded batch of scheduler events per
 * CPU) and interning tables bounded by the capture's distinct source locations, sampled
 * addresses and a capped number of message texts per thread.
 */
#ifndef MPROF_EXPORT_PERFETTO_H
#define MPROF_EXPORT_PERFETTO_H

#include "analysis/range.h"
#include "format/format.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What an export wrote and what it had to leave out or change, so that the command can say it
 * and the trace's process track carries it in its description. */
typedef struct mprof_perfetto_stats {
    uint64_t packets, bytes;
    uint64_t zones;          /* slices of zones written (CPU, fibers) */
    uint64_t gpu_zones;      /* slices of GPU zones written */
    uint64_t gpu_flows;      /* submits joined to their GPU zone */
    uint64_t gpu_late;       /* GPU zones that arrived after later ones of their queue were
                                written: put on a lane of their own */
    uint64_t lock_spans, frames, messages, counter_values;
    uint64_t async_spans;    /* async spans written (on lanes of their track) */
    uint64_t sched_switches, sched_wakings, samples;
    uint64_t zones_unfinished; /* open at the end of the capture: ended there, marked */
    uint64_t zones_cut_by_loss; /* open when their thread lost events: ended at the loss,
                                   marked (mprof report drops them) */
    uint64_t zones_dropped_by_loss; /* begun, never written, then lost (report drops them too) */
    uint64_t unmatched_ends; /* zone ends without a begin on their track */
    uint64_t lost_events;    /* events the capture itself lost (its LOST records) */
    uint64_t kernel_lost;    /* scheduler records the kernel dropped (SYS_LOST) */
    uint64_t clamped_ts;     /* timestamps before the capture's start, written as 0 */
} mprof_perfetto_stats;

/* Exports the capture at path (range: analysis/range.h, NULL = everything) to out. Returns 0,
 * or -1 with a message in err naming the capture. What was written before an error stays
 * written. stats may be NULL. */
int mprof__export_perfetto(const char *path, const mprof_export_range *range, FILE *out,
                           mprof_perfetto_stats *stats, char *err, size_t errlen);
/* The same from an open reader (name: the capture's name for messages and the trace); the
 * reader is read to its end, not closed. */
int mprof__export_perfetto_reader(mprof_reader *r, const char *name,
                                  const mprof_export_range *range, FILE *out,
                                  mprof_perfetto_stats *stats, char *err, size_t errlen);

#endif
