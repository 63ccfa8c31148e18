/*
 * server_guard.h - the served viewer's connection guard (server_guard.c): every connection has a
 * deadline that its own bytes cannot move, and connections past the number served at once get a
 * 503 with Retry-After instead of a slot, so slow or idle clients (a slowloris) can neither hold
 * the server nor make it drop a real request without an answer.
 *
 * The phases of a connection and their deadlines, from libmicrohttpd's callbacks:
 *   header   from the connection's start, or the end of its previous answer (keep-alive), its
 *            next request's header must be in whole within MPROF_VGUARD_HEADER_MS;
 *   answer   from the header's end, the answer must be taken whole within MPROF_VGUARD_ANSWER_MS.
 * A connection past its deadline is shut down by the guard's thread (shutdown(2) on its socket:
 * the daemon then sees the end of the stream and closes it); one still in its header phase is
 * told "408 Request Timeout" first.
 *
 * Threads: the callbacks run on the daemon's threads; the guard's own thread sweeps deadlines;
 * counts may be read from any thread.
 */
#ifndef MPROF_VIEW_SERVER_GUARD_H
#define MPROF_VIEW_SERVER_GUARD_H

#include <microhttpd.h>

#include <stdint.h>

#define MPROF_VGUARD_HEADER_MS 10000u
#define MPROF_VGUARD_ANSWER_MS 30000u
/* Connections served at once by default (mprof view --max-connections). */
#define MPROF_VGUARD_DEFAULT_SERVED 1024u

typedef struct vguard vguard;

typedef struct vguard_counts {
    uint64_t connections;   /* accepted */
    uint64_t refused_full;  /* answered 503: more than the served number were open */
    uint64_t header_late;   /* ended in their header phase: 408 */
    uint64_t answer_late;   /* ended while their answer was not taken */
} vguard_counts;

/* A guard serving at most served connections at once (0: the default); starts its thread. NULL
 * when out of memory or when the thread cannot start. */
vguard *mprof__vguard_new(unsigned served);
/* Stops the thread and frees g, after the daemon has stopped (NULL: no-op). */
void mprof__vguard_free(vguard *g);
/* MHD_OPTION_NOTIFY_CONNECTION's callback, with the guard as its closure. */
void mprof__vguard_notify(void *g, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code);
/* The request of c has its header: its answer phase begins. 1 when it may be served, 0 when it
 * gets a 503 (it came while more than the served number of connections were open). */
int mprof__vguard_request(vguard *g, struct MHD_Connection *c);
/* The request of c ended (MHD_OPTION_NOTIFY_COMPLETED): its next header phase begins. */
void mprof__vguard_request_done(vguard *g, struct MHD_Connection *c);
vguard_counts mprof__vguard_counts(vguard *g);
/* The connections the guard holds at most: served ones, and as many again that are told 503. */
unsigned mprof__vguard_held_max(const vguard *g);

#endif
