/*
 * view_serve.c - `mprof view --serve`: the viewer as a local web server over one capture.
 *
 * The capture is indexed once (src/analysis/view_index.c, cached beside it as FILE.vidx) and
 * the page asks for what it draws: the zones and merged spans of a time range at its width in
 * pixels, plots, messages, frames, statistics and duration histograms. libmicrohttpd does the
 * HTTP; every request target goes through mprof__vquery_parse, which knows the page's files
 * (compiled into mprof) and the /api/ queries, and nothing else: no request names a file of
 * the machine. The server binds 127.0.0.1 unless told otherwise and stops on SIGINT/SIGTERM.
 *
 * `mprof view --live` runs `mprof capture` (this binary, so the capture is exactly that command's)
 * as a child writing the capture file, and re-indexes the growing file: each new index replaces
 * the served one (requests in flight keep theirs, counted), and the page, which polls /api/live,
 * fetches the new metadata and frames and follows the end of the capture.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include "util/json_out.h"
#include "view/index.h"
#include "view/page_files.h"
#include "util/tool.h"
#include "view/serve.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* An index and the requests using it; a replaced one is closed by its last user. */
typedef struct held {
    mprof_vindex *x;
    int refs, retired;
} held;

typedef struct server {
    pthread_mutex_t mu;
    held *cur;          /* NULL until the first index (live: before the process answers) */
    int live, capturing;
    unsigned generation;
    uint64_t capture_bytes;
} server;

static void held_release(server *s, held *h)
{
    pthread_mutex_lock(&s->mu);
    int last = --h->refs == 0 && h->retired;
    pthread_mutex_unlock(&s->mu);
    if (last) {
        mprof__vindex_close(h->x);
        free(h);
    }
}

/* Serves x, the index of capture_bytes bytes of the capture, from now on (s takes it); the
 * previous index goes when its last request ends. The index, its generation and its size change
 * together under the lock, so /api/live never names an index that is not the one served. */
static int server_swap(server *s, mprof_vindex *x, uint64_t capture_bytes)
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
static struct MHD_Daemon *start_daemon(server *s, const char *address, unsigned port, int *out_rc)
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

static void block_stop_signals(sigset_t *stop)
{
    sigemptyset(stop);
    sigaddset(stop, SIGINT);
    sigaddset(stop, SIGTERM);
    sigaddset(stop, SIGHUP);
    sigaddset(stop, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, stop, NULL);
}

static void server_end(server *s, struct MHD_Daemon *d)
{
    if (d)
        MHD_stop_daemon(d);
    if (s->cur) {
        s->cur->retired = 1;
        held_release(s, s->cur);
        s->cur = NULL;
    }
    pthread_mutex_destroy(&s->mu);
}

int mprof__view_serve(const char *capture, const char *index_path, const char *address, unsigned port)
{
    char err[512];
    int built = 0, rc = EXIT_OK;
    sigset_t stop;
    block_stop_signals(&stop);
    server s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    /* The address is checked before a long index build. */
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST}, *ai = NULL;
    if (getaddrinfo(address, NULL, &hints, &ai) != 0)
        return tool_error("view", EXIT_USAGE, "--address %s: not a numeric IPv4 or IPv6 address", address);
    freeaddrinfo(ai);
    mprof_vindex *x = mprof__vindex_open(capture, index_path, &built, err, sizeof err);
    if (!x)
        return tool_error("view", EXIT_IO, "%s", err);
    fprintf(stderr, "mprof view: %s index %s (%.1f MB, %llu zones)\n", built ? "built" : "reusing",
            mprof__vindex_path(x), (double)mprof__vindex_size_bytes(x) / 1e6,
            (unsigned long long)mprof__vindex_zone_count(x));
    struct stat cst;
    if (server_swap(&s, x, stat(capture, &cst) == 0 ? (uint64_t)cst.st_size : 0) != 0)
        return tool_error("view", EXIT_IO, "out of memory");
    fprintf(stderr, "mprof view: serving %s; stop with Ctrl-C\n", capture);
    struct MHD_Daemon *d = start_daemon(&s, address, port, &rc);
    if (!d) {
        server_end(&s, NULL);
        return rc;
    }
    int sig = 0;
    while (sigwait(&stop, &sig) != 0 || sig == SIGCHLD) {
    }
    server_end(&s, d);
    fprintf(stderr, "mprof view: stopped (signal %d)\n", sig);
    return EXIT_OK;
}

extern char **environ;

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int mprof__view_live(const mprof_view_live_opts *o)
{
    sigset_t stop;
    block_stop_signals(&stop);
    struct stat st;
    if (!o->force && stat(o->capture, &st) == 0)
        return tool_error("view", EXIT_IO, "%s already exists; use -f to overwrite it", o->capture);
    server s = {.mu = PTHREAD_MUTEX_INITIALIZER, .live = 1, .capturing = 1};
    int rc = EXIT_OK;
    struct MHD_Daemon *d = start_daemon(&s, o->address, o->http_port, &rc);
    if (!d) {
        server_end(&s, NULL);
        return rc;
    }
    /* The capture is `mprof capture`, run by this same binary. */
    char port[16];
    snprintf(port, sizeof port, "%u", o->port);
    char *args[12];
    int n = 0;
    args[n++] = (char *)"mprof";
    args[n++] = (char *)"capture";
    args[n++] = (char *)"-o";
    args[n++] = (char *)o->capture;
    args[n++] = (char *)"-a";
    args[n++] = (char *)o->process_address;
    args[n++] = (char *)"-p";
    args[n++] = port;
    if (o->force)
        args[n++] = (char *)"-f";
    args[n] = NULL;
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none); /* the child stops on its own signals */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
    pid_t child;
    int e = posix_spawn(&child, "/proc/self/exe", NULL, &at, args, environ);
    posix_spawnattr_destroy(&at);
    if (e != 0) {
        server_end(&s, d);
        return tool_error("view", EXIT_IO, "cannot start mprof capture: %s", strerror(e));
    }
    char idx[4200];
    if (o->index_path)
        snprintf(idx, sizeof idx, "%s", o->index_path);
    else
        snprintf(idx, sizeof idx, "%s.vidx", o->capture);
    fprintf(stderr, "mprof view: live: capturing %s:%u into %s; the page follows it; stop with Ctrl-C\n",
            o->process_address, o->port, o->capture);
    uint64_t indexed = 0;
    double next = 0, build_s = 0;
    int child_rc = -1, sig = 0, stopping = 0, final_done = 0;
    for (;;) {
        struct timespec tick = {0, 250000000};
        sig = sigtimedwait(&stop, NULL, &tick);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            if (child_rc >= 0 || stopping)
                break;
            kill(child, SIGINT); /* mprof capture finalises the file, then we stop */
            stopping = 1;
        }
        if (child_rc < 0) {
            int ws;
            if (waitpid(child, &ws, WNOHANG) == child) {
                /* The page is told the capture ended only once the index of the finished file
                 * is served (below): a page that saw "ended" with the last growing index would
                 * stop polling and keep showing it. */
                child_rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128;
                if (child_rc != EXIT_OK && child_rc != EXIT_VERDICT && !indexed) {
                    server_end(&s, d);
                    return child_rc;
                }
            }
        }
        /* Re-index when the file grew, no more often than twice the last build took. */
        int have = stat(o->capture, &st) == 0;
        if (have && (uint64_t)st.st_size != indexed && (mono_s() >= next || child_rc >= 0)) {
            double t = mono_s();
            char err[512];
            uint64_t size = (uint64_t)st.st_size;
            mprof_vindex *x = NULL;
            if (mprof__vindex_build(o->capture, idx, err, sizeof err) == 0)
                x = mprof__vindex_open_built(idx, err, sizeof err);
            if (x && server_swap(&s, x, size) == 0)
                indexed = size;
            else if (child_rc >= 0) {
                /* The finished file does not index: say so once and keep serving the last index. */
                fprintf(stderr, "mprof view: cannot index the finished capture: %s\n", err);
                indexed = size;
            }
            build_s = mono_s() - t;
            next = mono_s() + (build_s * 2 > 0.5 ? build_s * 2 : 0.5);
        }
        if (child_rc >= 0 && (!have || (uint64_t)st.st_size == indexed) && !final_done) {
            final_done = 1;
            pthread_mutex_lock(&s.mu);
            s.capturing = 0; /* after the final index: the page's next /api/meta is the whole capture */
            pthread_mutex_unlock(&s.mu);
            fprintf(stderr, "mprof view: the capture ended (mprof capture exit %d); serving %s until Ctrl-C\n",
                    child_rc, o->capture);
            if (stopping)
                break;
        }
    }
    if (child_rc < 0) {
        kill(child, SIGINT);
        int ws;
        waitpid(child, &ws, 0);
    }
    server_end(&s, d);
    fprintf(stderr, "mprof view: stopped\n");
    return EXIT_OK;
}
