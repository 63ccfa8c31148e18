/*
 * view_index.h - the on-disk index that `mprof view --serve` answers its page's queries from.
 *
 * One streaming pass over a capture (the timeline walker) writes every zone into the level of
 * its track and depth, every zone again into the instance list of its source location, plot and
 * memory series, messages and frames. Each of those is a sorted array in one index file, which
 * the server maps read-only: a query costs a few binary searches per drawn pixel, whatever the
 * capture's size, and the server's own memory holds only the level table. Zones of one depth of
 * one track never overlap, so both their starts and their ends are sorted, and "the zones under
 * a pixel" is one more binary search (the merge the static page does in JavaScript, here done
 * before anything is sent).
 *
 * The file is a cache: host byte order, stamped with the capture's size and modification time
 * and the index version, rebuilt when any differs. See docs/VIEW.md ("mprof view --serve").
 *
 * Threads: building is single-threaded; an opened index is read-only and may be queried from any
 * number of threads at once.
 */
#ifndef MPROF_VIEW_INDEX_H
#define MPROF_VIEW_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct mprof_vindex mprof_vindex;

/* Builds the index of the capture at capture_path into index_path (written to a temporary file
 * beside it, then renamed). Returns 0, or -1 with a message in err. */
int mprof__vindex_build(const char *capture_path, const char *index_path, char *err, size_t errlen);

/* Opens index_path for capture_path; when it is missing, stale or damaged, builds it first
 * (*out_built says whether it did). index_path NULL = capture_path + ".vidx", and when that
 * cannot be written, a file in $TMPDIR (removed when closed). Returns NULL with err set. */
mprof_vindex *mprof__vindex_open(const char *capture_path, const char *index_path, int *out_built,
                                 char *err, size_t errlen);
/* Opens an index just built by mprof__vindex_build without comparing it with its capture (a
 * live capture grows while it is indexed). NULL with err set when it is damaged. */
mprof_vindex *mprof__vindex_open_built(const char *index_path, char *err, size_t errlen);
void mprof__vindex_close(mprof_vindex *x); /* NULL is a no-op */

/* Whole-capture figures. */
uint64_t mprof__vindex_zone_count(const mprof_vindex *x);
uint64_t mprof__vindex_size_bytes(const mprof_vindex *x);
const char *mprof__vindex_path(const mprof_vindex *x);
/* Tiers of detail (runs of zones merged at coarse resolutions) over all levels, and their runs. */
uint64_t mprof__vindex_tier_count(const mprof_vindex *x, uint64_t *out_runs);

/* ---- queries ---------------------------------------------------------------------------------
 * The page's requests, parsed from a request target ("/api/zones?t0=0&t1=100&w=800") by
 * mprof__vquery_parse (strict: known paths and keys only, decimal integers in range, each key
 * once), answered by mprof__vindex_answer as one JSON document. */

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
    MPROF_VQ_SYSTEM,    /* /api/system: system tracing, locks and pools of the capture (view_index_sys.c) */
    MPROF_VQ_STATES,    /* /api/states?t0&t1&w: thread states, off-CPU runs merged per pixel */
    MPROF_VQ_CPU,       /* /api/cpu?t0&t1&w: CPU usage, min/max per pixel */
    MPROF_VQ_SAMPLES,   /* /api/samples?t0&t1[&track]: the flame graph of the samples of a range */
    MPROF_VQ_LOCKS,     /* /api/locks?t0&t1: waits and holds per lock in a range */
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
    char asset[64];     /* MPROF_VQ_ASSET: the path without the leading '/', "" for the page */
} mprof_vquery;

/* Parses target (the request's path and query). Returns 0, or -1 with a message in err. */
int mprof__vquery_parse(const char *target, size_t len, mprof_vquery *out, char *err,
                        size_t errlen);

/* Writes the answer to q (not MPROF_VQ_ASSET) as JSON to out. Returns 0, or -1 with err set
 * (a query that names something the capture lacks, or an I/O error). */
int mprof__vindex_answer(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err,
                         size_t errlen);

/* The page's files, compiled in (view_files.c, made by tools/view/embed_files.cmake from
 * tools/view/: "serve/index.html", "style.css", "js/util.js", ...). NULL when name is unknown. */
typedef struct mprof_view_file {
    const char *name;
    const unsigned char *data;
    size_t len;
} mprof_view_file;
const mprof_view_file *mprof__view_file(const char *name);

#endif
