/*
 * index_file.h - the layout of the served viewer's index file (view/index.h), shared by the parts
 * of the index: the builder writes it (index_build.c, index_write.c, index_detail.c), the opener
 * checks and maps it (index_open.c), the answers read it (index_zones.c, index_answers.c).
 *
 * A header (vhead) at offset 0 says where every table lies; each table is an array of fixed-size
 * records starting at a multiple of 8 bytes, so that the mapped file is read in place. Host byte
 * order: the file is a cache, and VIDX_VERSION changes with any record.
 *
 * Source locations are renumbered: slot 0 is the lock track's "waiting", slot 1 its "holding",
 * and reader location k is slot k + 2. The metadata's "srclocs" array uses these slots.
 */
#ifndef MPROF_VIEW_INDEX_FILE_H
#define MPROF_VIEW_INDEX_FILE_H

#include "view/index.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define VIDX_MAGIC "MPVIDX01"
#define VIDX_VERSION 5u
#define HIST_BUCKETS 336 /* 8 per octave from 1 ns to 2^42 ns (73 min) */
#define MAX_LOC_SLOTS (1u << 20)
#define PYR_FANOUT 16

typedef struct vhead {
    char magic[8];
    uint32_t version, head_bytes;
    uint64_t cap_size;
    int64_t cap_mtime_ns;
    uint64_t total_zones;
    uint64_t n_levels, levels_off;
    uint64_t n_locs, locs_off;
    uint64_t n_plots, plots_off;
    uint64_t n_msgs, msgs_off, text_off, text_len;
    uint64_t n_frames, frames_off;
    uint64_t meta_off, meta_len;
    int64_t end_ns;
    uint64_t n_images, images_off, image_bytes_off, image_bytes_len;
    uint64_t n_tiers, tiers_off;
    uint64_t sys_off, sys_len; /* the system and lock section (index_sys.h) */
    uint64_t file_bytes;
} vhead;

typedef struct vzone { int64_t s, e, self; uint32_t loc, depth; } vzone;
typedef struct vinst { int64_t s, e; uint32_t track, depth; } vinst;
typedef struct vpoint { int64_t ts; double v; } vpoint;
typedef struct vmm { double mn, mx; } vmm;
typedef struct vmsg { int64_t ts; uint64_t text_off; uint32_t text_len, level, track, pad; } vmsg;
typedef struct vframe { int64_t s, d; } vframe;
typedef struct vimage { int64_t ts; uint64_t off; uint32_t len, w, h, codec; } vimage;

typedef struct vlevel { uint32_t track, depth; uint64_t off, n; uint32_t tier0, n_tiers; } vlevel;

/* Level of detail (index_detail.c): a tier of a level is its zones merged at resolution res_ns,
 * as a sorted array of runs. A run is a maximal chain of zones each narrower than res_ns, each
 * starting less than res_ns after the previous one ends; a zone that is not in such a chain is a
 * run of its own (first = its index, with its self time and location). first is the index of the
 * run's first zone in the level, so a run's count is the next run's first minus its own. */
typedef struct vrun { int64_t s, e; uint64_t first; int64_t self; uint32_t loc, pad; } vrun;
typedef struct vtier { uint64_t off, n; int64_t res_ns; } vtier;
#define LOD_TIERS 17      /* resolutions 2^10, 2^12, ... 2^42 ns (1 us to 73 min) */
#define LOD_MIN_ZONES 1024 /* smaller levels are read whole */
typedef struct vloc {
    uint64_t off, n, hist_off;
    int64_t total, self, min, max;
} vloc;
typedef struct vplot {
    uint64_t off, n, pyr_off;
    uint32_t pyr_levels, pad;
} vplot;

/* The opened index: the mapped file and its tables (index_open.c checked them). */
struct mprof_vindex {
    const unsigned char *map;
    size_t size;
    const vhead *h;
    const vlevel *levels;
    const vloc *locs;
    const vplot *plots;
    const vtier *tiers;
    char *path;
    int remove_on_close;
};

/* n records of rec bytes at off lie inside the map (and, for records wider than a byte, at an
 * aligned offset: the index aligns every table to 8 bytes). */
static inline int mprof__vidx_in_file(const mprof_vindex *x, uint64_t off, uint64_t n,
                                      uint64_t rec)
{
    return off <= x->size && (rec <= 1 || off % 8 == 0) && (rec == 0 || n <= (x->size - off) / rec);
}

/* The zones of level l, sorted by start (and so by end). */
static inline const vzone *mprof__vidx_level_zones(const mprof_vindex *x, const vlevel *l)
{
    return (const vzone *)(x->map + l->off);
}

/* The duration histograms of source locations: bucket b holds durations in
 * [mprof__vidx_hist_edge(b), mprof__vidx_hist_edge(b + 1)). */
static inline int mprof__vidx_hist_bucket(int64_t d)
{
    if (d < 1)
        return 0;
    int b = (int)(log2((double)d) * 8.0);
    return b < 0 ? 0 : b >= HIST_BUCKETS ? HIST_BUCKETS - 1 : b;
}

static inline int64_t mprof__vidx_hist_edge(int b)
{
    return (int64_t)ceil(exp2((double)b / 8.0));
}

/* The capture's size and modification time, which the header is stamped with. 0, or -1 with
 * errno set (index_open.c). */
int mprof__vidx_stamp(const char *path, uint64_t *size, int64_t *mtime_ns);

/* /api/zones (index_zones.c), for mprof__vindex_answer (index_answers.c). */
int mprof__vidx_answer_zones(const mprof_vindex *x, const mprof_vquery *q, FILE *out);

#endif
