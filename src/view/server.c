/*
 * server.c - the served viewer's HTTP server (server.h): libmicrohttpd does the HTTP, and every
 * request target goes through mprof__vquery_parse (view/query.h), which knows the page's files
 * (compiled into mprof, view/page_files.h) and the /api/ queries, and nothing else: no request
 * names a file of the machine. A query is answered from the index the server holds at the time;
 * an index replaced meanwhile (a live capture) is closed by its last request.
 *
 * What one request may cost is bounded: its answer is written into a stream that refuses to grow
 * past MPROF_VSERVER_ANSWER_MAX_BYTES (the one cap of every answer, whatever its range and width),
 * and its connection lives under the guard (server_guard.h): deadlines a trickle cannot extend,
 * and a 503 with Retry-After past the connections served at once.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include "view/server.h"

#include "util/json_out.h"
#include "util/tool.h"
#include "view/page_files.h"
#include "view/server_guard.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>

/* An index and the requests using it; a replaced one is closed by its last user. */
struct held {
    mprof_vindex *x;
    int refs, retired;
};

static void held_release(vserver *s, held *h)
{
    pthread_mutex_lock(&s->mu);
    int last = --h->refs == 0 && h->retired;
    pthread_mutex_unlock(&s->mu);
    if (last) {
        mprof__vindex_close(h->x);
        free(h);
    }
}

/* The index, its generation and its size change together under the lock, so /api/live never
 * names an index that is not the one served. */
int mprof__vserver_swap(vserver *s, mprof_vindex *x, uint64_t capture_bytes)
{
    held *h = calloc(1, sizeof *h);
    if (!h) {
        mprof__vindex_close(x);
        return -1;
    }
    h->x = x;
    h->refs = 1; /* the server's own reference */
    pthread_mutex_lock(&s->mu);
    held *old = s->cur;
    s->cur = h;
    s->generation++;
    s->capture_bytes = capture_bytes;
    if (old)
        old->retired = 1;
    pthread_mutex_unlock(&s->mu);
    if (old)
        held_release(s, old);
    return 0;
}

void mprof__vserver_capture_ended(vserver *s)
{
    pthread_mutex_lock(&s->mu);
    s->capturing = 0;
    pthread_mutex_unlock(&s->mu);
}

/* The full request target (path and query) as received, kept for the request's handler. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *con)
{
    (void)cls;
    (void)con;
    return tool_strdup(uri ? uri : "");
}

static void completed(void *cls, struct MHD_Connection *con, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    vserver *s = cls;
    (void)toe;
    if (s->guard)
        mprof__vguard_request_done(s->guard, con);
    free(*con_cls);
    *con_cls = NULL;
}

/* ---- the answer's stream: a memory buffer that refuses to pass its cap ---------------------- */

typedef struct capped {
    char *b;
    size_t n, alloc;
    size_t limit; /* MPROF_VSERVER_ANSWER_MAX_BYTES, or SIZE_MAX for /api/meta */
    int over;     /* a write would have passed the cap: the answer is refused */
} capped;

static ssize_t capped_write(void *cookie, const char *p, size_t n)
{
    capped *c = cookie;
    if (n > c->limit - c->n) {
        c->over = 1;
        return -1;
    }
    if (c->n + n > c->alloc) {
        size_t a = c->alloc ? c->alloc : 65536;
        while (a < c->n + n)
            a *= 2;
        if (a > c->limit)
            a = c->limit;
        char *nb = realloc(c->b, a);
        if (!nb)
            return -1;
        c->b = nb;
        c->alloc = a;
    }
    memcpy(c->b + c->n, p, n);
    c->n += n;
    return (ssize_t)n;
}

static int capped_close(void *cookie)
{
    (void)cookie;
    return 0;
}

static enum MHD_Result send_buf(struct MHD_Connection *c, unsigned status, const char *type, void *buf,
                                size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(buf);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg);

/* The server is full: this connection came while the served number were open. */
static enum MHD_Result send_full(struct MHD_Connection *c)
{
    static const char body[] = "{\"error\":\"the server is serving as many connections as it may; "
                               "retry in a second\"}\n";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "Retry-After", "1");
    MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
    char *b = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&b, &n);
    if (!m)
        return MHD_NO;
    fputs("{\"error\":", m);
    mprof_json_write_string(m, msg, strlen(msg));
    fputs("}\n", m);
    if (fclose(m) != 0) {
        free(b);
        return MHD_NO;
    }
    return send_buf(c, status, "application/json", b, n, MHD_RESPMEM_MUST_FREE);
}

static const char *mime_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot && strcmp(dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    if (dot && strcmp(dot, ".css") == 0)
        return "text/css; charset=utf-8";
    return "text/html; charset=utf-8";
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)url;
    (void)version;
    (void)upload;
    vserver *s = cls;
    if (s->guard && !mprof__vguard_request(s->guard, c))
        return send_full(c);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET");
    if (*upload_size)
        return send_error(c, MHD_HTTP_BAD_REQUEST, "a GET has no body");
    const char *target = *con_cls;
    if (!target)
        return MHD_NO;
    mprof_vquery q;
    char err[256];
    if (mprof__vquery_parse(target, strlen(target), &q, err, sizeof err) != 0)
        return send_error(c, strncmp(err, "no such file", 12) == 0 ? MHD_HTTP_NOT_FOUND : MHD_HTTP_BAD_REQUEST, err);
    if (q.kind == MPROF_VQ_ASSET) {
        const char *name = q.asset[0] ? q.asset : "serve/index.html";
        const mprof_view_file *f = mprof__view_file(name);
        if (!f)
            return send_error(c, MHD_HTTP_NOT_FOUND, "no such file");
        return send_buf(c, MHD_HTTP_OK, mime_of(name), (void *)f->data, f->len, MHD_RESPMEM_PERSISTENT);
    }
    char *b = NULL;
    if (q.kind == MPROF_VQ_LIVE) {
        pthread_mutex_lock(&s->mu);
        int k = asprintf(&b, "{\"live\":%s,\"capturing\":%s,\"generation\":%u,\"capture_bytes\":%llu}",
                         s->live ? "true" : "false", s->capturing ? "true" : "false", s->generation,
                         (unsigned long long)s->capture_bytes);
        pthread_mutex_unlock(&s->mu);
        if (k < 0)
            return MHD_NO;
        return send_buf(c, MHD_HTTP_OK, "application/json", b, (size_t)k, MHD_RESPMEM_MUST_FREE);
    }
    if (q.kind == MPROF_VQ_PAIRS || q.cap == 1) {
        if (!s->second)
            return send_error(c, MHD_HTTP_BAD_REQUEST, "one capture is served; a comparison needs two "
                                                        "(mprof view --serve A.mprof B.mprof)");
        if (q.kind == MPROF_VQ_PAIRS)
            return send_buf(c, MHD_HTTP_OK, "application/json", s->pairs, strlen(s->pairs), MHD_RESPMEM_PERSISTENT);
    }
    pthread_mutex_lock(&s->mu);
    held *h = s->cur;
    if (h)
        h->refs++;
    pthread_mutex_unlock(&s->mu);
    if (!h)
        return send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "waiting for the capture's first events");
    /* /api/meta is the capture's own document, the same whatever the request: it is not capped. */
    capped cap = {.limit = q.kind == MPROF_VQ_META ? SIZE_MAX : MPROF_VSERVER_ANSWER_MAX_BYTES};
    FILE *m = fopencookie(&cap, "w", (cookie_io_functions_t){.write = capped_write, .close = capped_close});
    if (!m) {
        held_release(s, h);
        return MHD_NO;
    }
    /* c=1 asks the comparison's second capture, fixed for the server's life. */
    int rc = mprof__vindex_answer(q.cap == 1 ? s->second : h->x, &q, m, err, sizeof err);
    held_release(s, h);
    if (fclose(m) != 0 || cap.over)
        rc = -1;
    if (cap.over)
        tool_seterr(err, sizeof err, "the answer would pass %u MiB: ask for a shorter range or fewer pixels",
                    (unsigned)(MPROF_VSERVER_ANSWER_MAX_BYTES >> 20));
    if (rc != 0) {
        free(cap.b);
        return send_error(c, MHD_HTTP_BAD_REQUEST, err);
    }
    return send_buf(c, MHD_HTTP_OK, "application/json", cap.b, cap.n, MHD_RESPMEM_MUST_FREE);
}

/* The daemon's messages: those of its start (a port it cannot bind) are printed; once it runs
 * they are about single connections (one a client closed, one the guard ended), which the
 * guard's counts already say, so they are counted and their number printed at the end. */
static void http_log(void *cls, const char *fmt, va_list ap)
{
    vserver *s = cls;
    pthread_mutex_lock(&s->mu);
    int quiet = s->started;
    if (quiet)
        s->quiet_messages++;
    pthread_mutex_unlock(&s->mu);
    if (quiet)
        return;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t l = strlen(line);
    while (l && line[l - 1] == '\n')
        line[--l] = 0;
    fprintf(stderr, "mprof view: the HTTP server: %s\n", line);
}

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a);
    }
    return 0;
}

/* The served number of connections that the open-file limit allows: the daemon holds twice that,
 * plus the index, the capture and the process's own files. The soft limit is raised toward the
 * hard one when it is short; what still does not fit lowers the number, said once. */
static unsigned fit_descriptors(unsigned served)
{
    const rlim_t spare = 64;
    rlim_t want = (rlim_t)served * 2 + spare;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return served;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rlim_t raised = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
        struct rlimit nl = {raised, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &nl) == 0)
            rl.rlim_cur = raised;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        unsigned fit = rl.rlim_cur > spare + 2 ? (unsigned)((rl.rlim_cur - spare) / 2) : 1;
        fprintf(stderr, "mprof view: warning: the open-file limit (%llu) allows %u connections served at "
                        "once, not %u\n", (unsigned long long)rl.rlim_cur, fit, served);
        return fit;
    }
    return served;
}

/* Starts the HTTP daemon on address:port for s; prints the URL. NULL after printing why. */
struct MHD_Daemon *mprof__vserver_start(vserver *s, const char *address, unsigned port, int *out_rc)
{
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%u", port);
    int gai = getaddrinfo(address, portbuf, &hints, &ai);
    if (gai != 0 || !ai) {
        *out_rc = tool_error("view", EXIT_USAGE, "--address %s: not a numeric IPv4 or IPv6 address (%s)", address,
                             gai ? gai_strerror(gai) : "no address");
        return NULL;
    }
    unsigned served = s->max_connections ? s->max_connections : MPROF_VGUARD_DEFAULT_SERVED;
    served = fit_descriptors(served);
    s->guard = mprof__vguard_new(served);
    if (!s->guard) {
        freeaddrinfo(ai);
        *out_rc = tool_error("view", EXIT_IO, "cannot start the connection guard (out of memory or threads)");
        return NULL;
    }
    /* An event loop (epoll where there is one) per thread, so the threads serve any number of
     * connections side by side; the daemon holds the served connections and as many again that
     * are told 503, and past that stops accepting (the rest wait in the listen backlog). Its own
     * idle timeout stays as a backstop behind the guard's deadlines. */
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, s,
                                            MHD_OPTION_EXTERNAL_LOGGER, http_log, s,
                                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, NULL,
                                            MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                                            MHD_OPTION_NOTIFY_CONNECTION, mprof__vguard_notify, s->guard,
                                            MHD_OPTION_THREAD_POOL_SIZE, 2u,
                                            MHD_OPTION_CONNECTION_LIMIT, mprof__vguard_held_max(s->guard),
                                            MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
                                            MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
    if (!d) {
        mprof__vguard_free(s->guard);
        s->guard = NULL;
        freeaddrinfo(ai);
        *out_rc = tool_error("view", EXIT_IO, "cannot listen on %s port %u (in use, or not an address of this machine)",
                             address, port);
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    s->started = 1;
    pthread_mutex_unlock(&s->mu);
    if (!is_loopback(ai->ai_addr))
        fprintf(stderr, "mprof view: warning: %s is not a loopback address; whoever reaches it can read the "
                        "capture\n", address);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("http://%s%s%s:%u/\n", ai->ai_family == AF_INET6 ? "[" : "", address,
           ai->ai_family == AF_INET6 ? "]" : "", info ? info->port : port);
    fflush(stdout);
    freeaddrinfo(ai);
    return d;
}

void mprof__vserver_block_signals(sigset_t *stop)
{
    sigemptyset(stop);
    sigaddset(stop, SIGINT);
    sigaddset(stop, SIGTERM);
    sigaddset(stop, SIGHUP);
    sigaddset(stop, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, stop, NULL);
}

void mprof__vserver_end(vserver *s, struct MHD_Daemon *d)
{
    if (d)
        MHD_stop_daemon(d);
    if (s->guard) {
        vguard_counts c = mprof__vguard_counts(s->guard);
        if (c.refused_full || c.header_late || c.answer_late || s->quiet_messages)
            fprintf(stderr, "mprof view: %llu connections; %llu answered 503 (more than %u open), %llu ended "
                            "with 408 (no whole request within %u s), %llu ended with their answer not taken "
                            "within %u s; %llu messages of the HTTP server about single connections\n",
                    (unsigned long long)c.connections, (unsigned long long)c.refused_full,
                    mprof__vguard_held_max(s->guard) / 2, (unsigned long long)c.header_late,
                    MPROF_VGUARD_HEADER_MS / 1000, (unsigned long long)c.answer_late, MPROF_VGUARD_ANSWER_MS / 1000,
                    (unsigned long long)s->quiet_messages);
        mprof__vguard_free(s->guard);
        s->guard = NULL;
    }
    if (s->cur) {
        s->cur->retired = 1;
        held_release(s, s->cur);
        s->cur = NULL;
    }
    mprof__vindex_close(s->second);
    s->second = NULL;
    free(s->pairs);
    s->pairs = NULL;
    pthread_mutex_destroy(&s->mu);
}
