/*
 * server.h - the HTTP server of the served viewer (server.c), shared by `mprof view --serve`
 * (serve.c) and `mprof view --live` (live.c). It answers the page's files and its /api/ queries
 * from the index it holds; a live capture hands it a new index while requests are in flight.
 *
 * Threads: libmicrohttpd's threads answer the requests; the command's own thread starts and ends
 * the server, swaps its index and says when the capture ended.
 */
#ifndef MPROF_VIEW_SERVER_H
#define MPROF_VIEW_SERVER_H

#include "view/index.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

struct MHD_Daemon;
typedef struct held held; /* an index and the requests using it (server.c) */
typedef struct vguard vguard; /* the connections' deadlines and admission (server_guard.h) */

/* The most bytes one answer may have, whatever its range and width: past it the request is
 * refused (400) and asked to narrow, and the server's memory stays bounded per request. */
#define MPROF_VSERVER_ANSWER_MAX_BYTES ((size_t)32 << 20)

/* Zero-initialised but for mu (PTHREAD_MUTEX_INITIALIZER): no index yet. */
typedef struct vserver {
    pthread_mutex_t mu;
    held *cur;          /* NULL until the first index (live: before the process answers) */
    int live, capturing;
    unsigned generation;
    uint64_t capture_bytes;
    unsigned max_connections; /* served at once; 0: MPROF_VGUARD_DEFAULT_SERVED */
    vguard *guard;            /* set by mprof__vserver_start */
    int started;              /* under mu: the daemon runs; its messages are counted, not printed */
    uint64_t quiet_messages;  /* under mu */
    /* A comparison (`--serve A B`): the second capture's index, answered for queries with c=1,
     * and /api/pairs (view/compare.h); both fixed before the server starts. */
    mprof_vindex *second;
    char *pairs;
} vserver;

/* Serves x, the index of capture_bytes bytes of the capture, to every later request (s takes
 * it); the previous index goes when its last request ends. Returns 0, or -1 when out of memory (x is
 * closed). */
int mprof__vserver_swap(vserver *s, mprof_vindex *x, uint64_t capture_bytes);
/* Says that the capture ended, once its final index is served: the page's next /api/live says
 * so. */
void mprof__vserver_capture_ended(vserver *s);
/* Starts the HTTP daemon on address:port for s and prints its URL on stdout. NULL after printing
 * why, with the exit code in *out_rc. */
struct MHD_Daemon *mprof__vserver_start(vserver *s, const char *address, unsigned port,
                                        int *out_rc);
/* Stops the daemon d (NULL: none was started) and closes the index once its requests end. */
void mprof__vserver_end(vserver *s, struct MHD_Daemon *d);
/* Blocks the signals that stop the server (SIGINT, SIGTERM, SIGHUP) and SIGCHLD in the calling
 * thread, before the daemon's threads start, so that the command waits for them (sigwait). */
void mprof__vserver_block_signals(sigset_t *stop);

#endif
