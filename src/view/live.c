/*
 * live.c - `mprof view --live`: the served viewer following a capture while it is recorded.
 *
 * It runs `mprof capture` (this binary, so the capture is exactly that command's) as a child
 * writing the capture file, and re-indexes the growing file: each new index replaces the served
 * one (requests in flight keep theirs), and the page, which polls /api/live, fetches the new
 * metadata and frames and follows the end of the capture.
 *
 * With several processes (several -p) the child is the several-process capture, which writes
 * one part a process (FILE.parts/N.mprof) and joins them into FILE only at the end. While it
 * records, each refresh merges the parts that have begun into a snapshot beside FILE
 * (FILE.live.mprof, the merger of format/merge.h: a part cut mid-chunk reads up to its last
 * whole chunk) and indexes that; once the child has ended, FILE itself is indexed and the
 * snapshot removed. A refresh costs a merge and an index of the whole capture so far, as the
 * one-process refresh costs an index of it, so refreshes stay twice their cost apart.
 */
#define _POSIX_C_SOURCE 200809L /* sigtimedwait, posix_spawn */
#include "view/serve.h"

#include "format/format.h"
#include "format/merge.h"
#include "util/tool.h"
#include "view/index_cache.h"
#include "view/server.h"

#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The parts of a several-process capture that have begun (a reader opens them: header and INFO
 * are in), merged into snap. *size gets the parts' bytes, whether or not they merge; returns 1
 * when snap was written, 0 when nothing changed since last_size or no part has begun, -1 with a
 * message in err. */
static int merge_parts(const mprof_view_live_opts *o, const char *snap, uint64_t last_size,
                       uint64_t *size, char *err, size_t errlen)
{
    static char paths[MPROF_VIEW_LIVE_MAX][4200];
    mprof_merge_input in[MPROF_VIEW_LIVE_MAX];
    uint32_t n = 0;
    uint64_t total = 0;
    for (unsigned k = 0; k < o->n_ports && k < MPROF_VIEW_LIVE_MAX; k++) {
        struct stat st;
        snprintf(paths[k], sizeof paths[k], "%s.parts/%u.mprof", o->capture, k + 1);
        if (stat(paths[k], &st) != 0)
            continue;
        total += (uint64_t)st.st_size;
    }
    *size = total;
    if (total == last_size)
        return 0;
    for (unsigned k = 0; k < o->n_ports && k < MPROF_VIEW_LIVE_MAX; k++) {
        char e[256];
        mprof_reader *r = mprof_reader_open(paths[k], e, sizeof e);
        if (!r)
            continue; /* not begun: its process has not answered yet */
        mprof_reader_close(r);
        in[n++] = (mprof_merge_input){.path = paths[k]};
    }
    if (!n)
        return 0;
    mprof_merge_result res;
    if (mprof_merge(in, n, snap, &res, err, errlen) != 0)
        return -1;
    return 1;
}

int mprof__view_live(const mprof_view_live_opts *o)
{
    sigset_t stop;
    mprof__vserver_block_signals(&stop);
    struct stat st;
    if (!o->force && stat(o->capture, &st) == 0)
        return tool_error("view", EXIT_IO, "%s already exists; use -f to overwrite it", o->capture);
    vserver s = {.mu = PTHREAD_MUTEX_INITIALIZER, .live = 1, .capturing = 1,
                 .max_connections = o->max_connections};
    int rc = EXIT_OK;
    struct MHD_Daemon *d = mprof__vserver_start(&s, o->address, o->http_port, &rc);
    if (!d) {
        mprof__vserver_end(&s, NULL);
        return rc;
    }
    /* The capture is `mprof capture`, run by this same binary. */
    int multi = o->n_ports > 1;
    static char ports[MPROF_VIEW_LIVE_MAX][16];
    char *args[8 + 4 * MPROF_VIEW_LIVE_MAX];
    int n = 0;
    args[n++] = (char *)"mprof";
    args[n++] = (char *)"capture";
    args[n++] = (char *)"-o";
    args[n++] = (char *)o->capture;
    if (!multi || o->n_addresses <= 1) {
        args[n++] = (char *)"-a";
        args[n++] = (char *)o->process_address;
    }
    for (unsigned k = 0; k < (multi ? o->n_ports : 1) && k < MPROF_VIEW_LIVE_MAX; k++) {
        snprintf(ports[k], sizeof ports[k], "%u", multi ? o->ports[k] : o->port);
        if (multi && o->n_addresses > 1) {
            args[n++] = (char *)"-a";
            args[n++] = (char *)o->process_addresses[k];
        }
        args[n++] = (char *)"-p";
        args[n++] = ports[k];
    }
    if (o->force)
        args[n++] = (char *)"-f";
    args[n] = NULL;
    /* The snapshot of the parts a several-process page is served from while they grow. */
    char snap[4300];
    snprintf(snap, sizeof snap, "%s.live.mprof", o->capture);
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
        mprof__vserver_end(&s, d);
        return tool_error("view", EXIT_IO, "cannot start mprof capture: %s", strerror(e));
    }
    char idx[4200] = "";
    if (o->index_path)
        snprintf(idx, sizeof idx, "%s", o->index_path);
    if (multi)
        fprintf(stderr, "mprof view: live: capturing %u processes into %s; the page follows them; "
                "stop with Ctrl-C\n", o->n_ports, o->capture);
    else
        fprintf(stderr, "mprof view: live: capturing %s:%u into %s; the page follows it; stop with Ctrl-C\n",
                o->process_address, o->port, o->capture);
    uint64_t indexed = 0, parts_seen = 0;
    char snap_idx[4400] = "";
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
                if (child_rc != EXIT_OK && child_rc != EXIT_VERDICT && !indexed && !parts_seen) {
                    mprof__vserver_end(&s, d);
                    return child_rc;
                }
            }
        }
        /* Several processes, still recording: the parts' merge, when they grew, no more often
         * than twice the last merge and build took. */
        if (multi && child_rc < 0) {
            if (mono_s() < next)
                continue;
            double t = mono_s();
            char err[512];
            uint64_t size = 0;
            int m = merge_parts(o, snap, parts_seen, &size, err, sizeof err);
            if (m < 0)
                fprintf(stderr, "mprof view: cannot merge the parts so far: %s\n", err);
            if (m == 1) {
                if (!snap_idx[0] && mprof__vcache_path(snap, snap_idx, sizeof snap_idx, err, sizeof err) != 0)
                    snprintf(snap_idx, sizeof snap_idx, "%s.vidx", snap);
                mprof_vindex *x = NULL;
                if (mprof__vindex_build(snap, snap_idx, err, sizeof err) == 0)
                    x = mprof__vindex_open_built(snap_idx, err, sizeof err);
                if (x && mprof__vserver_swap(&s, x, size) == 0)
                    parts_seen = size;
            }
            build_s = mono_s() - t;
            next = mono_s() + (build_s * 2 > 0.5 ? build_s * 2 : 0.5);
            continue;
        }
        /* Re-index when the file grew, no more often than twice the last build took. */
        int have = stat(o->capture, &st) == 0;
        if (have && (uint64_t)st.st_size != indexed && (mono_s() >= next || child_rc >= 0)) {
            double t = mono_s();
            char err[512];
            /* The index cache's name for the capture, once it exists (view/index_cache.h); where
             * there is no cache folder, beside the capture. */
            if (!idx[0] && mprof__vcache_path(o->capture, idx, sizeof idx, err, sizeof err) != 0)
                snprintf(idx, sizeof idx, "%s.vidx", o->capture);
            uint64_t size = (uint64_t)st.st_size;
            mprof_vindex *x = NULL;
            if (mprof__vindex_build(o->capture, idx, err, sizeof err) == 0)
                x = mprof__vindex_open_built(idx, err, sizeof err);
            if (x && mprof__vserver_swap(&s, x, size) == 0)
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
            /* After the final index: the page's next /api/meta is the whole capture. */
            mprof__vserver_capture_ended(&s);
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
    mprof__vserver_end(&s, d);
    if (multi) {
        unlink(snap);
        if (snap_idx[0] && strcmp(snap_idx, idx) != 0)
            unlink(snap_idx);
    }
    fprintf(stderr, "mprof view: stopped\n");
    return EXIT_OK;
}

