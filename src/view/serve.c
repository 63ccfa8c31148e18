/*
 * serve.c - `mprof view --serve`: the viewer as a local web server over one capture, any size.
 *
 * The capture is indexed once (view/index.h; kept in the index cache, view/index_cache.h, and
 * rebuilt when the capture changes or the index does not check out) and the page asks for what it
 * draws: the zones and merged spans of a time range at its width in pixels, plots, messages,
 * frames, statistics and duration histograms. Given two captures it serves both, for the page's
 * comparison (view/compare.h). The server (server.h) binds 127.0.0.1 unless told otherwise and
 * stops on SIGINT/SIGTERM.
 */
#define _POSIX_C_SOURCE 200809L /* getaddrinfo, sigwait */
#include "view/serve.h"

#include "util/tool.h"
#include "view/compare.h"
#include "view/server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* Opens (building when needed) the index of capture and says which. NULL after printing why. */
static mprof_vindex *open_one(const char *capture, const char *index_path)
{
    char err[512];
    int built = 0;
    mprof_vindex *x = mprof__vindex_open(capture, index_path, &built, err, sizeof err);
    if (!x) {
        tool_error("view", EXIT_IO, "%s", err);
        return NULL;
    }
    fprintf(stderr, "mprof view: %s index %s (%.1f MB, %llu zones)\n", built ? "built" : "reusing",
            mprof__vindex_path(x), (double)mprof__vindex_size_bytes(x) / 1e6,
            (unsigned long long)mprof__vindex_zone_count(x));
    return x;
}

int mprof__view_serve(const char *capture, const char *compare, const char *index_path, const char *address,
                      unsigned port, unsigned max_connections)
{
    char err[512];
    int rc = EXIT_OK;
    sigset_t stop;
    mprof__vserver_block_signals(&stop);
    vserver s = {.mu = PTHREAD_MUTEX_INITIALIZER, .max_connections = max_connections};
    /* The address is checked before a long index build. */
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST}, *ai = NULL;
    if (getaddrinfo(address, NULL, &hints, &ai) != 0)
        return tool_error("view", EXIT_USAGE, "--address %s: not a numeric IPv4 or IPv6 address", address);
    freeaddrinfo(ai);
    mprof_vindex *x = open_one(capture, index_path);
    if (!x)
        return EXIT_IO;
    if (compare) {
        s.second = open_one(compare, NULL);
        s.pairs = s.second ? mprof__vcompare_pairs(x, s.second, err, sizeof err) : NULL;
        if (!s.pairs) {
            if (s.second)
                tool_error("view", EXIT_IO, "%s", err);
            mprof__vindex_close(x);
            mprof__vserver_end(&s, NULL);
            return EXIT_IO;
        }
    }
    struct stat cst;
    if (mprof__vserver_swap(&s, x, stat(capture, &cst) == 0 ? (uint64_t)cst.st_size : 0) != 0)
        return tool_error("view", EXIT_IO, "out of memory");
    if (compare)
        fprintf(stderr, "mprof view: comparing %s (A) with %s (B); stop with Ctrl-C\n", capture, compare);
    else
        fprintf(stderr, "mprof view: serving %s; stop with Ctrl-C\n", capture);
    struct MHD_Daemon *d = mprof__vserver_start(&s, address, port, &rc);
    if (!d) {
        mprof__vserver_end(&s, NULL);
        return rc;
    }
    int sig = 0;
    while (sigwait(&stop, &sig) != 0 || sig == SIGCHLD) {
    }
    mprof__vserver_end(&s, d);
    fprintf(stderr, "mprof view: stopped (signal %d)\n", sig);
    return EXIT_OK;
}
