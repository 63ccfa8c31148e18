/*
 * live.h - live capture inside the instrumented process (live.c): the listener that accepts
 * `mprof capture`, the history ring of recent chunks, the copy of every definition, and the
 * session that streams chunks to the tool. The collector calls these hooks; none of them blocks
 * on the network.
 */
#ifndef MPROF_LIVE_H
#define MPROF_LIVE_H

#include "core.h"

/* Collector start (under mprof__g.lock, before the collector thread runs). Opens the listener
 * when the config asks for it. has_file: a file sink is open. Returns 1 when the process must
 * record now (listening with a history ring), else 0. */
int mprof__live_start(int has_file);

/* Collector thread, once per wake-up: non-zero when a tool has finished its handshake and waits
 * for the stream. The collector then closes its current chunk and calls mprof__live_attach. */
int mprof__live_pending(void);
void mprof__live_attach(void);

/* Collector thread: a framed EVENTS chunk (raw = its uncompressed payload) was produced. */
void mprof__live_chunk(const mprof_buf *raw, const mprof_buf *framed);

/* Collector thread: a definition record (DEF_SRCLOC, DEF_STRING, DEF_THREAD, DEF_CALLSTACK,
 * DEF_MODULE) was written into the chunk; [rec, end) is its compact form, tag included. */
void mprof__live_keep_def(const unsigned char *rec, const unsigned char *end);

/* Collector thread: an event that a late tool must also see (THREAD_NAME, APP_INFO,
 * PLOT_CONFIG, LOCK_ANNOUNCE, GPU_CONTEXT) was written for thread idx; [rec, end) is its
 * compact form. ticks is its timestamp when the event has one. */
void mprof__live_keep_event(uint32_t thread, uint64_t ticks, const unsigned char *rec,
                            const unsigned char *end);
/* True for the tags mprof__live_keep_event keeps (and only while listening). */
int mprof__live_keeps(int tag);

/* Collector stop, after the last chunk: ends the session (END chunk), closes the listener. */
void mprof__live_stop(void);

/* collector.c: the INFO key/value payload (process, clock calibration, build). */
void mprof__collector_info(mprof_buf *out);

#endif
