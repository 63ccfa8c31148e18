/*
 * live_session.h - the session of a connected tool (live_session.c): its queue of chunks, the
 * sender thread that writes it to the socket, and the collector's side that attaches it and
 * hands it chunks.
 *
 * One session at a time. The listener creates it after a handshake (pending); the collector
 * attaches it on a chunk boundary and from then on delivers every chunk to its queue; the sender
 * ends it when the tool stops, goes away or stalls, or when the process shuts down.
 */
#ifndef MPROF_LIVE_SESSION_H
#define MPROF_LIVE_SESSION_H

#include "format/format.h"
#include "format/wire.h"
#include "sink.h"

#include <stddef.h>

typedef struct mprof__live_session mprof__live_session;

/* Before the listener starts: has_file (a file sink keeps the process recording), history_s
 * (the ring keeps the process recording when > 0), and the hook that asks for recording while
 * a tool is attached when nothing else does. */
void mprof__live_sessions_open(int has_file, double history_s, void (*set_recording)(int on));
/* At shutdown, after the listener stopped: a session that finished its handshake still gets
 * its stream; the active one is flushed (within a deadline), ended and joined. */
void mprof__live_sessions_close(void);

/* ---- the collector's side ------------------------------------------------------------------ */

/* A session waits to be attached (the collector then closes its chunk first). */
int mprof__live_session_pending(void);
/* Attaches the pending session: queues the definitions chunk and the history it asked for. */
void mprof__live_session_attach(void);
/* An attached session is streaming: chunks must be framed for it now. */
int mprof__live_session_streaming(void);
/* A new EVENTS chunk c: framed, or raw with lazy set (history nobody may read yet, framed
 * NULL). Kept in the history ring when there is one, and queued for a streaming session; a chunk
 * the tool cannot take in time is dropped and counted, never waited for. */
void mprof__live_deliver(const mprof__chunk *c, const mprof_buf *framed, int lazy);

/* ---- the listener's side ------------------------------------------------------------------- */

/* Sends a reply (status and payload) on a fresh connection, within a short deadline. */
void mprof__live_reply(int fd, int status, const void *payload, size_t len);
/* A session is active (attached or about to be). */
int mprof__live_session_busy(void);
/* Asks an active session whose tool has taken nothing for a while to go, and waits briefly
 * until it has: 1 when it went. */
int mprof__live_session_evict_stalled(void);
/* Joins and frees a session that ended (one slot). */
void mprof__live_session_reap(void);
/* A session for the tool on fd that sent hello; NULL when out of memory (fd untouched). */
mprof__live_session *mprof__live_session_new(int fd, const mprof_wire_hello *hello);
/* Makes s the active session, pending attachment, and starts its sender; when the thread
 * cannot start, closes fd and frees s. */
void mprof__live_session_begin(mprof__live_session *s);

#endif
