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

/* The range of a query is at most this long (2^62 ns, 146 years): t1 - t0 and a time plus a
 * pixel then never leave int64, and a longer range is refused rather than wrapped. */
#define MPROF_VQ_MAX_SPAN_NS (INT64_C(1) << 62)

/* a + b, held at INT64_MIN or INT64_MAX instead of wrapping: the answers add a pixel to times
 * that come from a capture, which may hold any value. */
static inline int64_t mprof__vq_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

/* e - s for s <= e, held at INT64_MAX: the length of an interval from a capture. */
static inline int64_t mprof__vq_len(int64_t s, int64_t e)
{
    uint64_t d = (uint64_t)e - (uint64_t)s;
    return e < s ? 0 : d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* The nanoseconds of one pixel of q's range (t0, t1, w), at least 1. Every answer drawn per
 * pixel takes its pixel from here, so its size follows w whatever the range. */
static inline int64_t mprof__vq_px_ns(const mprof_vquery *q)
{
    int64_t px = mprof__vq_len(q->t0, q->t1) / (int64_t)(q->w ? q->w : 1);
    return px < 1 ? 1 : px;
}

#endif
