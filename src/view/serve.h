/*
 * serve.h - `mprof view --serve` and `mprof view --live`: the viewer as a local web server over
 * one capture (serve.c), or over a capture while it is recorded (live.c).
 */
#ifndef MPROF_VIEW_SERVE_H
#define MPROF_VIEW_SERVE_H

/* mprof view --serve: indexes capture (index_path NULL = in the index cache, view/index_cache.h)
 * and serves the viewer on address:port (0 = any free port, printed on stdout) until SIGINT or
 * SIGTERM, max_connections at once (0: the default, server_guard.h). With compare (a second
 * capture, NULL: none) the page compares the two (view/compare.h). Returns an exit code. */
int mprof__view_serve(const char *capture, const char *compare, const char *index_path, const char *address,
                      unsigned port, unsigned max_connections);
/* mprof view --live: runs `mprof capture` into capture and serves the growing capture. With
 * several ports it runs the several-process `mprof capture` (parts in capture.parts/, merged into
 * capture at the end) and serves a merge of the parts as they grow. */
#define MPROF_VIEW_LIVE_MAX 64
typedef struct mprof_view_live_opts {
    const char *capture, *index_path;   /* -o FILE; --index */
    const char *process_address;        /* -a: the process (default 127.0.0.1) */
    unsigned port;                      /* -p: its port */
    const char *address;                /* --address: the viewer's server */
    unsigned http_port;                 /* --port */
    int force;                          /* -f */
    unsigned max_connections;           /* --max-connections; 0: the default */
    const unsigned *ports;              /* every -p in order (n_ports > 1: several processes) */
    unsigned n_ports;
    const char *const *process_addresses; /* every -a in order: one for all, or one a port */
    unsigned n_addresses;
} mprof_view_live_opts;
int mprof__view_live(const mprof_view_live_opts *o);

#endif
