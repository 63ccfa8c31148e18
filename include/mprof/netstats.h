/*
 * netstats.h - network statistics for mprof: packet rate, bandwidth and round-trip time plots.
 *
 * A networked program counts what it sends and receives and the round trips it measures; the
 * helper aggregates them over a fixed interval and, when an interval ends, emits three plots:
 *   packet rate  packets per second, sent + received               (number)
 *   bandwidth    bytes per second, sent + received                 (memory format: KiB/s)
 *   rtt          mean round-trip time of the interval, milliseconds (number; only when at
 *                least one sample arrived in the interval)
 * Per-interval aggregation keeps the plots readable at any packet rate and costs a few adds
 * per packet.
 *
 * Step by step
 *   static mprof_netstats net;                         // zero-initialised: defaults
 *   MPROF_NETSTATS_INIT(&net, NULL);                   // or a mprof_netstats_desc
 *   MPROF_NETSTATS_SENT(&net, bytes);                  // after each send
 *   MPROF_NETSTATS_RECEIVED(&net, bytes);              // after each receive
 *   MPROF_NETSTATS_RTT(&net, rtt_ns);                  // when a round trip completes
 *   MPROF_NETSTATS_TICK(&net, now_ns);                 // once per frame; emits when due
 *
 * Without MPROF_ENABLE the macros expand to ((void)0) and never evaluate their arguments, like
 * every other mprof macro; the functions stay available in libmprof.
 *
 * Threading: one mprof_netstats belongs to one thread at a time (it takes no lock). Use one
 * per connection or per network thread, with distinct plot names.
 */
#ifndef MPROF_NETSTATS_H
#define MPROF_NETSTATS_H

#include "mprof/mprof.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Options. Zero-initialised means defaults. Plot names must be literals. */
typedef struct mprof_netstats_desc {
    uint64_t interval_ns;       /* aggregation interval; default 100 ms */
    const char *packet_rate;    /* plot name; default "packet_rate" */
    const char *bandwidth;      /* plot name; default "bandwidth" */
    const char *rtt;            /* plot name; default "rtt" */
} mprof_netstats_desc;

/* The state of one aggregator. Plain data: embed it or make it static; no destroy needed. */
typedef struct mprof_netstats {
    mprof_netstats_desc desc;   /* effective options (defaults applied) */
    uint64_t interval_start_ns; /* 0 until the first tick */
    uint64_t packets;           /* this interval, sent + received */
    uint64_t bytes;
    uint64_t rtt_sum_ns;
    uint32_t rtt_count;
    /* Totals since init. */
    uint64_t total_packets_sent, total_packets_received;
    uint64_t total_bytes_sent, total_bytes_received;
    uint64_t total_rtt_samples;
    uint64_t intervals_emitted;
    /* Last emitted values (for programs that show them too). */
    double last_packet_rate, last_bandwidth, last_rtt_ms;
} mprof_netstats;

/* Sets defaults for the fields of desc left at 0 (desc NULL = all defaults), clears the
 * counters and configures the plots' display. */
MPROF_API void mprof_netstats_init(mprof_netstats *ns, const mprof_netstats_desc *desc);
MPROF_API void mprof_netstats_sent(mprof_netstats *ns, size_t bytes);
MPROF_API void mprof_netstats_received(mprof_netstats *ns, size_t bytes);
MPROF_API void mprof_netstats_rtt(mprof_netstats *ns, uint64_t rtt_ns);
/* Ends the interval when now_ns is interval_ns or more past its start: emits the plots,
 * returns 1 and starts the next interval; otherwise returns 0. now_ns is any monotonic clock
 * in nanoseconds (the same one for every call). The first call only starts an interval. */
MPROF_API int mprof_netstats_tick(mprof_netstats *ns, uint64_t now_ns);

#ifdef MPROF_ENABLE
#define MPROF_NETSTATS_INIT(ns, desc) mprof_netstats_init((ns), (desc))
#define MPROF_NETSTATS_SENT(ns, bytes) mprof_netstats_sent((ns), (bytes))
#define MPROF_NETSTATS_RECEIVED(ns, bytes) mprof_netstats_received((ns), (bytes))
#define MPROF_NETSTATS_RTT(ns, rtt_ns) mprof_netstats_rtt((ns), (rtt_ns))
#define MPROF_NETSTATS_TICK(ns, now_ns) ((void)mprof_netstats_tick((ns), (now_ns)))
#else
#define MPROF_NETSTATS_INIT(ns, desc) ((void)0)
#define MPROF_NETSTATS_SENT(ns, bytes) ((void)0)
#define MPROF_NETSTATS_RECEIVED(ns, bytes) ((void)0)
#define MPROF_NETSTATS_RTT(ns, rtt_ns) ((void)0)
#define MPROF_NETSTATS_TICK(ns, now_ns) ((void)0)
#endif

#ifdef __cplusplus
}
#endif

#endif /* MPROF_NETSTATS_H */
