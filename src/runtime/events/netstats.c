/*
 * netstats.c - per-interval network statistics emitted as plots (see include/mprof/netstats.h).
 *
 * The helper is part of the library, so it always records: it uses the plot macros with
 * MPROF_ENABLE forced on in this file. Rates are computed from the measured length of the
 * interval (not the nominal one), so a late tick does not inflate them.
 */
#ifndef MPROF_ENABLE
#define MPROF_ENABLE 1
#endif
#include "mprof/netstats.h"

#include <string.h>

#define DEFAULT_INTERVAL_NS 100000000ull

void mprof_netstats_init(mprof_netstats *ns, const mprof_netstats_desc *desc)
{
    memset(ns, 0, sizeof *ns);
    if (desc)
        ns->desc = *desc;
    if (!ns->desc.interval_ns)
        ns->desc.interval_ns = DEFAULT_INTERVAL_NS;
    if (!ns->desc.packet_rate)
        ns->desc.packet_rate = "packet_rate";
    if (!ns->desc.bandwidth)
        ns->desc.bandwidth = "bandwidth";
    if (!ns->desc.rtt)
        ns->desc.rtt = "rtt";
    MPROF_PLOT_CONFIG(ns->desc.packet_rate, MPROF_PLOT_FORMAT_NUMBER, MPROF_PLOT_STYLE_STEP,
                      MPROF_COLOR_NETWORK);
    MPROF_PLOT_CONFIG(ns->desc.bandwidth, MPROF_PLOT_FORMAT_MEMORY, MPROF_PLOT_STYLE_STEP,
                      MPROF_COLOR_NETWORK);
    MPROF_PLOT_CONFIG(ns->desc.rtt, MPROF_PLOT_FORMAT_NUMBER, MPROF_PLOT_STYLE_LINE,
                      MPROF_COLOR_NETWORK);
}

void mprof_netstats_sent(mprof_netstats *ns, size_t bytes)
{
    ns->packets++;
    ns->bytes += bytes;
    ns->total_packets_sent++;
    ns->total_bytes_sent += bytes;
}

void mprof_netstats_received(mprof_netstats *ns, size_t bytes)
{
    ns->packets++;
    ns->bytes += bytes;
    ns->total_packets_received++;
    ns->total_bytes_received += bytes;
}

void mprof_netstats_rtt(mprof_netstats *ns, uint64_t rtt_ns)
{
    ns->rtt_sum_ns += rtt_ns;
    ns->rtt_count++;
    ns->total_rtt_samples++;
}

int mprof_netstats_tick(mprof_netstats *ns, uint64_t now_ns)
{
    if (ns->interval_start_ns == 0 || now_ns < ns->interval_start_ns) {
        ns->interval_start_ns = now_ns ? now_ns : 1;
        return 0;
    }
    uint64_t elapsed_ns = now_ns - ns->interval_start_ns;
    if (elapsed_ns < ns->desc.interval_ns)
        return 0;
    double seconds = (double)elapsed_ns * 1e-9;
    ns->last_packet_rate = (double)ns->packets / seconds;
    ns->last_bandwidth = (double)ns->bytes / seconds;
    MPROF_PLOT(ns->desc.packet_rate, ns->last_packet_rate);
    MPROF_PLOT(ns->desc.bandwidth, ns->last_bandwidth);
    if (ns->rtt_count) {
        ns->last_rtt_ms = (double)ns->rtt_sum_ns / (double)ns->rtt_count * 1e-6;
        MPROF_PLOT(ns->desc.rtt, ns->last_rtt_ms);
    }
    ns->packets = 0;
    ns->bytes = 0;
    ns->rtt_sum_ns = 0;
    ns->rtt_count = 0;
    ns->interval_start_ns = now_ns;
    ns->intervals_emitted++;
    return 1;
}
