/*
 * query.h - the page's requests to `mprof view --serve`, parsed from a request target
 * ("/api/zones?t0=0&t1=100&w=800") by mprof__vquery_parse (query.c: strict, known paths and keys
 * only, decimal integers in range, each key once) and answered by mprof__vindex_answer
 * (view/index.h) as one JSON document.
 *
 * Threads: parsing is pure; any thread may call it.
 */
#ifndef MPROF_VIEW_QUERY_H
#define MPROF_VIEW_QUERY_H

#include <stddef.h>
#include <stdint.h>

enum {
    MPROF_VQ_NONE = 0,
    MPROF_VQ_META,      /* /api/meta: capture, tracks, source locations, plots, whole-capture stats */
    MPROF_VQ_ZONES,     /* /api/zones?t0&t1&w[&lod=0]: zones and merged spans (lod=0: from the
                         * zones themselves, not the tiers of detail; the same answer, slower) */
    MPROF_VQ_PLOTS,     /* /api/plots?t0&t1&w: min/max per pixel of each series */
    MPROF_VQ_MESSAGES,  /* /api/messages?t0&t1[&limit] */
    MPROF_VQ_FRAMES,    /* /api/frames?from&to&w: the worst frame of each pixel */
    MPROF_VQ_STATS,     /* /api/stats?t0&t1: per source location, zones inside the range */
    MPROF_VQ_HIST,      /* /api/hist?loc: durations of one source location over the capture */
    MPROF_VQ_INSTANCES, /* /api/instances?loc[&dmin&dmax&limit]: its zones, longest first */
    MPROF_VQ_IMAGE,     /* /api/image?frame: the thumbnail of a frame (MPROF_FRAME_IMAGE), RGB base64 */
    MPROF_VQ_LIVE,      /* /api/live: whether the server follows a live capture (the server answers) */
    MPROF_VQ_SYSTEM,    /* /api/system: system tracing, locks and pools (index_sys.h) */
    MPROF_VQ_STATES,    /* /api/states?t0&t1&w: thread states, off-CPU runs merged per pixel */
    MPROF_VQ_CPU,       /* /api/cpu?t0&t1&w: CPU usage, min/max per pixel */
    MPROF_VQ_SAMPLES,   /* /api/samples?t0&t1[&track]: the flame graph of the samples of a range */
    MPROF_VQ_LOCKS,     /* /api/locks?t0&t1: waits and holds per lock in a range */
    MPROF_VQ_PAIRS,     /* /api/pairs: the zones of two compared captures paired (the server) */
    MPROF_VQ_ASSET      /* any other path: a file of the page (name in asset) */
};

typedef struct mprof_vquery {
    int kind;
    int64_t t0, t1;     /* ns since the capture's start */
    int64_t from, to;   /* frame indices [from, to) */
    uint32_t w;         /* pixels (1..16384) */
    uint32_t loc;       /* /api/samples: its track= filter */
    int64_t dmin, dmax; /* duration filter, ns */
    uint32_t limit;
    int has_t, has_frames, has_loc;
    int no_lod;         /* /api/zones: lod=0 */
    uint32_t set;       /* a frame set (its index in /api/meta's frame_sets) */
    int has_set;
    uint32_t cap;       /* c=: which capture of a comparison (0 or 1) */
    char asset[64];     /* MPROF_VQ_ASSET: the path without the leading '/', "" for the page */
} mprof_vquery;

/* Parses target (the request's path and query). Returns 0, or -1 with a message in err. */
int mprof__vquery_parse(const char *target, size_t len, mprof_vquery *out, char *err,
                        size_t errlen);

#endif
