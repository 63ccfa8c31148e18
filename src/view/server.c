/*
 * server.c - the served viewer's HTTP server (server.h): libmicrohttpd does the HTTP, and every
 * request target goes through mprof__vquery_parse (view/query.h), which knows the page's files
 * (compiled into mprof, view/page_files.h) and the /api/ queries, and nothing else: no request
 * names a file of the machine. A query is answered from the index the server holds at the time;
 * an index replaced meanwhile (a live capture) is closed by its last request.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include "view/server.h"

#include "util/json_out.h"
#include "util/tool.h"
#include "view/page_files.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

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
    (void)cls;
    (void)con;
    (void)toe;
    free(*con_cls);
    *con_cls = NULL;
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
    size_t n = 0;
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
        FILE *m = open_memstream(&b, &n);
        if (!m)
            return MHD_NO;
        int rc = mprof__vindex_answer(s->second, &q, m, err, sizeof err);
        if (fclose(m) != 0)
            rc = -1;
        if (rc != 0) {
            free(b);
            return send_error(c, MHD_HTTP_BAD_REQUEST, err);
        }
        return send_buf(c, MHD_HTTP_OK, "application/json", b, n, MHD_RESPMEM_MUST_FREE);
    }
    pthread_mutex_lock(&s->mu);
    held *h = s->cur;
    if (h)
        h->refs++;
    pthread_mutex_unlock(&s->mu);
    if (!h)
        return send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "waiting for the capture's first events");
    FILE *m = open_memstream(&b, &n);
    if (!m) {
        held_release(s, h);
        return MHD_NO;
    }
    int rc = mprof__vindex_answer(h->x, &q, m, err, sizeof err);
    held_release(s, h);
    if (fclose(m) != 0)
        rc = -1;
    if (rc != 0) {
        free(b);
        return send_error(c, MHD_HTTP_BAD_REQUEST, err);
    }
    return send_buf(c, MHD_HTTP_OK, "application/json", b, n, MHD_RESPMEM_MUST_FREE);
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
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, s,
                                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, NULL,
                                            MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                                            MHD_OPTION_THREAD_POOL_SIZE, 2u,
                                            MHD_OPTION_CONNECTION_LIMIT, 64u,
                                            MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    if (!d) {
        freeaddrinfo(ai);
        *out_rc = tool_error("view", EXIT_IO, "cannot listen on %s port %u (in use, or not an address of this machine)",
                             address, port);
        return NULL;
    }
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
