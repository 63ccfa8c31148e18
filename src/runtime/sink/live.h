/*
 * live.h - live capture inside the instrumented process (live.c): the listener that accepts
 * `mprof capture`, the history ring of recent chunks, the copy of every definition, and the
 * session that streams chunks to the tool. Toward the collector it is one sink (sink.h); none of
 * its hooks blocks on the network.
 */
#ifndef MPROF_LIVE_H
#define MPROF_LIVE_H

#include "sink.h"

/* What live capture needs from the rest of the process, given at open. */
typedef struct mprof__live_hooks {
    /* The INFO keys of the handshake reply, which the tool stores as its file's INFO chunk. */
    mprof__kv_list info;
    /* Asks for recording (on = 1, a tool attached) or idling (0, it went) when nothing else
     * keeps the process recording. Called on the collector or a sender thread. */
    void (*set_recording)(int on);
} mprof__live_hooks;

/* Opens the listener when the configuration asks for it (mprof__config). has_file: a file sink
 * is open too. *out_record: set to 1 when the process must record from the start (listening
 * with a history ring). NULL when not listening. Under the lifecycle lock. */
mprof__sink *mprof__sink_live_open(const mprof__live_hooks *hooks, int has_file,
                                   int *out_record);

#endif
