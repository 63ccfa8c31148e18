/*
 * server_guard.c - deadlines and admission for the served viewer's connections (server_guard.h).
 *
 * libmicrohttpd's own timeout counts from a connection's last activity, so a client that sends a
 * header line now and then keeps its connection forever, and its connection limit closes the
 * connections past it without a word. The guard instead gives each connection a deadline fixed
 * when its phase begins, which nothing the client sends can move, and a thread that ends the
 * connections past theirs; and it lets the daemon hold twice the connections it serves, so that
 * those past the served number are answered 503 with Retry-After rather than dropped.
 *
 * A connection is ended with shutdown(2) on its socket from the guard's thread: the daemon's
 * thread then reads the end of the stream and closes the connection itself. The socket cannot be
 * closed and its number reused meanwhile, because the daemon tells the guard that a connection
 * closed (the notify callback, which takes the guard's lock) before it closes the socket, and the
 * guard shuts sockets down only under that lock.
 */
#define _POSIX_C_SOURCE 200809L
#include "view/server_guard.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define SWEEP_MS 100u

enum { PHASE_HEADER = 1, PHASE_ANSWER, PHASE_ENDED };

typedef struct vconn {
    int fd;
    int phase;
    int excess;           /* came while the served number of connections were open: 503 */
    uint64_t deadline_ns; /* of its phase */
    struct vconn *prev, *next;
} vconn;

struct vguard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int stop;
    unsigned served;
    unsigned open;
    vconn head; /* a ring: head.next is the oldest */
    vguard_counts counts;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The connection's guard entry, set when it started. */
static vconn *entry_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Ends the connections past their deadline. Under g->mu. */
static void sweep_locked(vguard *g, uint64_t now)
{
    static const char timeout[] = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n"
                                  "Content-Length: 0\r\n\r\n";
    for (vconn *v = g->head.next; v != &g->head; v = v->next) {
        if (v->phase == PHASE_ENDED || now < v->deadline_ns)
            continue;
        if (v->phase == PHASE_HEADER) {
            /* Nothing of an answer is on its way in this phase: the 408 goes out alone. A full
             * socket buffer (a client that reads nothing) just loses it. */
            if (send(v->fd, timeout, sizeof timeout - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EINTR)
                (void)send(v->fd, timeout, sizeof timeout - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
            g->counts.header_late++;
        } else {
            g->counts.answer_late++;
        }
        shutdown(v->fd, SHUT_RDWR);
        v->phase = PHASE_ENDED;
    }
}

static void *guard_main(void *arg)
{
    vguard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)SWEEP_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int rc = pthread_cond_timedwait(&g->cv, &g->mu, &until);
        if (rc != 0 && rc != ETIMEDOUT)
            break;
        sweep_locked(g, now_ns());
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

vguard *mprof__vguard_new(unsigned served)
{
    vguard *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->served = served ? served : MPROF_VGUARD_DEFAULT_SERVED;
    g->head.next = g->head.prev = &g->head;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int ok = pthread_mutex_init(&g->mu, NULL) == 0;
    if (ok && pthread_cond_init(&g->cv, &ca) != 0) {
        pthread_mutex_destroy(&g->mu);
        ok = 0;
    }
    pthread_condattr_destroy(&ca);
    if (!ok) {
        free(g);
        return NULL;
    }
    if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return NULL;
    }
    return g;
}

void mprof__vguard_free(vguard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    /* The daemon has stopped and told the guard of every close; anything left is freed. */
    while (g->head.next != &g->head) {
        vconn *v = g->head.next;
        g->head.next = v->next;
        free(v);
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

void mprof__vguard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    vguard *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        vconn *v = ci ? calloc(1, sizeof *v) : NULL;
        *socket_context = v;
        if (!v)
            return; /* out of memory: served without a deadline, as the daemon alone would */
        v->fd = ci->connect_fd;
        v->phase = PHASE_HEADER;
        v->deadline_ns = now_ns() + (uint64_t)MPROF_VGUARD_HEADER_MS * 1000000u;
        pthread_mutex_lock(&g->mu);
        v->excess = g->open >= g->served;
        g->open++;
        g->counts.connections++;
        v->prev = g->head.prev;
        v->next = &g->head;
        g->head.prev->next = v;
        g->head.prev = v;
        pthread_mutex_unlock(&g->mu);
        return;
    }
    vconn *v = *socket_context;
    if (!v)
        return;
    pthread_mutex_lock(&g->mu);
    v->prev->next = v->next;
    v->next->prev = v->prev;
    g->open--;
    pthread_mutex_unlock(&g->mu);
    free(v);
    *socket_context = NULL;
}

int mprof__vguard_request(vguard *g, struct MHD_Connection *c)
{
    vconn *v = entry_of(c);
    if (!v)
        return 1;
    pthread_mutex_lock(&g->mu);
    int serve = !v->excess;
    if (v->phase == PHASE_HEADER) {
        v->phase = PHASE_ANSWER;
        v->deadline_ns = now_ns() + (uint64_t)MPROF_VGUARD_ANSWER_MS * 1000000u;
        if (!serve)
            g->counts.refused_full++;
    }
    pthread_mutex_unlock(&g->mu);
    return serve;
}

void mprof__vguard_request_done(vguard *g, struct MHD_Connection *c)
{
    vconn *v = entry_of(c);
    if (!v)
        return;
    pthread_mutex_lock(&g->mu);
    if (v->phase == PHASE_ANSWER) {
        v->phase = PHASE_HEADER;
        v->deadline_ns = now_ns() + (uint64_t)MPROF_VGUARD_HEADER_MS * 1000000u;
    }
    pthread_mutex_unlock(&g->mu);
}

vguard_counts mprof__vguard_counts(vguard *g)
{
    pthread_mutex_lock(&g->mu);
    vguard_counts c = g->counts;
    pthread_mutex_unlock(&g->mu);
    return c;
}

unsigned mprof__vguard_held_max(const vguard *g)
{
    return 2 * g->served;
}
