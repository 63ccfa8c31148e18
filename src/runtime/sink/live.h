/*
 * live.h - live capture inside the instrumented process (live.c): the listener that accepts
 * `mprof capture`, the history ring of recent chunks, the copy of every definition, and the
 * session that streams chunks to the tool. Toward the collector it is one sink (sink.h,
 * mprof__sink_live_open); none of its hooks blocks on the network.
 */
#ifndef MPROF_LIVE_H
#define MPROF_LIVE_H

#include "sink.h"

#endif
