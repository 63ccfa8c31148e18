/*
 * view_serve.c - `mprof view --serve`: the viewer as a local web server over one capture.
 *
 * The capture is indexed once (src/analysis/view_index.c, cached beside it as FILE.vidx) and
 * the page asks for what it draws: the zones and merged spans of a time range at its width in
 * pixels, plots, messages, frames, statistics and duration histograms. libmicrohttpd does the
 * HTTP; every request target goes through mprof__vquery_parse, which knows the page's files
 * (compiled into mprof) and the /api/ queries, and nothing else: no request names a file of
 * the machine. The server binds 127.0.0.1 unless told otherwise and stops on SIGINT/SIGTERM.
 */
#define _POSIX_C_SOURCE 200809L
#include "analysis/json_out.h"
#include "analysis/view_index.h"
#include "mprof_tool.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef struct server {
    mprof_vindex *x;
} server;

/* The full request target (path and query) as received, kept for the request's handler. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *con)
{
    (void)cls;
    (void)con;
    return strdup(uri ? uri : "");
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
    server *s = cls;
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
    FILE *m = open_memstream(&b, &n);
    if (!m)
        return MHD_NO;
    int rc = mprof__vindex_answer(s->x, &q, m, err, sizeof err);
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

int mprof__view_serve(const char *capture, const char *index_path, const char *address, unsigned port)
{
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%u", port);
    int gai = getaddrinfo(address, portbuf, &hints, &ai);
    if (gai != 0 || !ai)
        return tool_error("view", EXIT_USAGE, "--address %s: not a numeric IPv4 or IPv6 address (%s)", address,
                          gai ? gai_strerror(gai) : "no address");
    char err[512];
    int built = 0;
    mprof_vindex *x = mprof__vindex_open(capture, index_path, &built, err, sizeof err);
    if (!x) {
        freeaddrinfo(ai);
        return tool_error("view", EXIT_IO, "%s", err);
    }
    /* The server threads inherit a mask that blocks the stop signals; this thread waits for them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    server s = {x};
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, &s,
                                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, NULL,
                                            MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                                            MHD_OPTION_THREAD_POOL_SIZE, 2u,
                                            MHD_OPTION_CONNECTION_LIMIT, 64u,
                                            MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    int loop = is_loopback(ai->ai_addr);
    if (!d) {
        freeaddrinfo(ai);
        mprof__vindex_close(x);
        return tool_error("view", EXIT_IO, "cannot listen on %s port %u (in use, or not an address of this machine)",
                          address, port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned bound = info ? info->port : port;
    fprintf(stderr, "mprof view: %s index %s (%.1f MB, %llu zones)\n", built ? "built" : "reusing",
            mprof__vindex_path(x), (double)mprof__vindex_size_bytes(x) / 1e6,
            (unsigned long long)mprof__vindex_zone_count(x));
    if (!loop)
        fprintf(stderr, "mprof view: warning: %s is not a loopback address; whoever reaches it can read the "
                        "capture\n", address);
    fprintf(stderr, "mprof view: serving %s; stop with Ctrl-C\n", capture);
    printf("http://%s%s%s:%u/\n", ai->ai_family == AF_INET6 ? "[" : "", address,
           ai->ai_family == AF_INET6 ? "]" : "", bound);
    fflush(stdout);
    freeaddrinfo(ai);
    int sig = 0;
    while (sigwait(&stop, &sig) != 0) {
    }
    MHD_stop_daemon(d);
    mprof__vindex_close(x);
    fprintf(stderr, "mprof view: stopped (signal %d)\n", sig);
    return EXIT_OK;
}
