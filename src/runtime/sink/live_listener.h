/*
 * live_listener.h - the listening socket of live capture and its handshakes (live_listener.c).
 */
#ifndef MPROF_LIVE_LISTENER_H
#define MPROF_LIVE_LISTENER_H

#include "sink.h"

/* Listens on the configured address and port and starts the listener thread. info: the INFO
 * keys of every handshake reply (copied); history_s: what the reply says of the ring. 0, or -1
 * (logged: live capture is then off). */
int mprof__live_listener_open(const mprof__kv_list *info, double history_s);
/* Stops the listener thread and closes the socket; handshakes in progress are dropped. */
void mprof__live_listener_close(void);

#endif
