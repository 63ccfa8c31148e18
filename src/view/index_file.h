/*
 * index_file.h - the layout of the served viewer's index file (view/index.h), shared by the parts
 * of the index: the builder writes it (index_build.c, index_detail.c, index_write.c), the opener
 * checks it and loads its tables (index_open.c), the answers read it (index_zones.c,
 * index_answers.c, index_stats.c) through the block reader (index_block.h).
 *
 * The file is a header and checksummed blocks, written front to back in one pass:
 *
 *   [vhead]  [data blocks, in the order the pass filled them]  [directory]  [meta]  [sys]
 *
 * Every array of records (the zones of a level, a tier of detail, a plot, its pyramid, messages,
 * their text, frame images) is cut into blocks of at most a few thousand records; each block is
 * compressed with zstd and its directory entry (vblk) holds where it lies, its first and last
 * keys (for binary search without reading it) and the XXH3-64 of its bytes. The directory (one
 * block: every table below) and the header are checksummed too, so a file cut short, written
 * over or made for another capture is found out at open (index_open.c) and rebuilt, and a block
 * that changes under a running server is refused when read instead of served.
 *
 * Zones are stored column by column within a block: the gap from the previous zone's end, the
 * duration, the time in children (0 for a leaf), the source location and the recursion flags,
 * each as a varint (docs/VIEW.md, "The index"). The depth and the track are the level's, and the
 * index of a zone is its block's first index plus its place, so nothing else is stored.
 *
 * Host byte order: the file is a cache, and VIDX_VERSION changes with any record.
 *
 * Source locations are renumbered: slot 0 is the lock track's "waiting", slot 1 its "holding",
 * and reader location k is slot k + 2. The metadata's "srclocs" array uses these slots.
 */
#ifndef MPROF_VIEW_INDEX_FILE_H
#define MPROF_VIEW_INDEX_FILE_H

#include "analysis/hist.h"
#include "view/index.h"

#include <stddef.h>
#include <stdint.h>

#define VIDX_MAGIC "MPVIDX02"
#define VIDX_VERSION 9u /* 7: async tracks (index_async.c); 8: processes in the metadata (processes.c);
                         * 9: the system section's big tables in blocks (index_sys_file.h) */
#define MAX_LOC_SLOTS (1u << 20)
#define PYR_FANOUT 16
#define PYR_LEVELS 8

/* Records per block of each kind of array. */
#define ZONE_BLOCK 2048
#define REC_BLOCK_BYTES 65536 /* raw arrays: as many records as fit */

/* How a block's bytes decode. */
enum {
    VC_RAW = 1,   /* records as they are in memory, zstd */
    VC_ZONES = 2, /* vzone columns (see above), zstd; first = the block's first + place */
    VC_RUNS = 3,  /* tier runs: vzone columns with a count in place of the flags, zstd */
};

/* A reference to one block of the file. csum: XXH3-64 of its len stored bytes. */
typedef struct vref {
    uint64_t off;
    uint32_t len, raw_len;
    uint64_t csum;
} vref;

/* The header, at offset 0. */
typedef struct vhead {
    char magic[8];
    uint32_t version, head_bytes;
    uint64_t cap_size;         /* the capture it indexes: size, */
    int64_t cap_mtime_ns;      /* modification time */
    uint64_t cap_print;        /* and XXH3-64 of its first and last 64 KiB */
    uint64_t file_bytes;       /* this file's length */
    vref dir, meta, sys;       /* the directory, the /api/meta document, the system section */
    uint64_t head_csum;        /* XXH3-64 of this header with head_csum 0 */
} vhead;

/* A block of an array, as the directory holds it. */
typedef struct vblk {
    vref at;
    uint32_t n, pad;       /* records */
    uint64_t first;        /* the index of its first record in its array */
    int64_t k_first;       /* the first and last record's key (start, time stamp) */
    int64_t k_last;
    int64_t e_max;         /* zones: the greatest end in this block and the blocks before it */
    int64_t d_max;         /* zones, lock spans: the longest duration in this block */
    uint64_t loc_mask;     /* zones: bit (slot % 64) for each source location in it */
} vblk;

/* An array: its blocks are blk[blk0, blk0 + n_blocks) of the directory. */
typedef struct varr {
    uint32_t codec, rec; /* rec: bytes per decoded record */
    uint64_t n;          /* records */
    uint64_t blk0, n_blocks;
} varr;

/* A zone as the answers see it, decoded from VC_ZONES or VC_RUNS. */
typedef struct vzone {
    int64_t s, e, self;
    uint64_t first; /* zones: its own index; runs: the index of the run's first zone */
    uint32_t loc;
    uint32_t flags; /* zones: VZ_* below; runs: the zones in the run */
} vzone;

#define VZ_UNFINISHED 1u /* open when the capture ended: drawn, not in the figures */
#define VZ_NEST_SHIFT 1  /* flags >> 1: depth - the depth of its nearest ancestor of the same
                          * site (0: none; site_stats.h's recursion rule) */

typedef struct vpoint { int64_t ts; double v; } vpoint;
typedef struct vmm { double mn, mx; } vmm;
typedef struct vmsg { int64_t ts; uint64_t text_off; uint32_t text_len, level, track, pad; } vmsg;
typedef struct vimage { int64_t ts; uint64_t off; uint32_t len, w, h, codec; } vimage;
typedef struct vframe { int64_t s, d; uint32_t set, flags; } vframe; /* flags 1: lossy */

/* A level: the zones of one depth of one track. kind: the track's MPROF_TRACK_*, or VTRACK_ASYNC
 * for a lane of an async track (index_async.c), whose zones are its spans. */
typedef struct vlevel {
    uint32_t track, depth, kind, arr; /* arr: the zones */
    uint32_t tier0, n_tiers;          /* its tiers: tiers[tier0, tier0 + n_tiers) */
    uint32_t thr, pad;                /* async lanes: an array of vthr, one per zone; else VNONE */
} vlevel;

/* The track kind of async tracks in the index (after timeline.h's MPROF_TRACK_*). Their track
 * ids follow the walker's tracks; their span names are source location slots after the
 * capture's. */
#define VTRACK_ASYNC 5u
#define VNONE UINT32_MAX
/* An async span's threads (capture thread indices; end VNONE: open at the end of the capture)
 * and whether its id was begun again while it was open (cut 1). */
typedef struct vthr { uint32_t begin, end, cut, pad; } vthr;

/* Level of detail (index_detail.c): a tier of a level is its zones merged at resolution res_ns,
 * as an array of runs (VC_RUNS). A run is a maximal chain of zones each narrower than res_ns,
 * each starting less than res_ns after the previous one ends; a zone that is not in such a chain
 * is a run of its own (count 1, with its self time and location). A run's first is the index of
 * its first zone in the level, so its count is the next run's first minus its own. */
typedef struct vtier { uint32_t arr, pad; int64_t res_ns; } vtier;
#define LOD_TIERS 17       /* resolutions 2^10, 2^12, ... 2^42 ns (1 us to 73 min) */
#define LOD_MIN_ZONES 1024 /* smaller levels are read whole */

/* A source location slot with zones: its figures (site_stats.h, the zones of its track kind
 * that count), its duration histogram (mprof_hist's buckets that are not empty,
 * hbuckets[h0, h0 + n_h), by bucket) and the levels it appears in (loclevels[lv0, lv0 + n_lv)). */
typedef struct vloc {
    uint32_t slot, kind; /* kind: the track kind of its zones (thread for thread and fiber) */
    uint64_t count;
    int64_t total, self, in_frames;
    uint64_t min, max;
    double sum, sumsq;
    uint64_t h0;
    uint32_t n_h, lv0, n_lv, pad;
} vloc;
typedef struct vhb { uint32_t bucket, count; } vhb;

typedef struct vplot {
    uint32_t points;        /* array of vpoint */
    uint32_t n_pyr;         /* pyramid levels */
    uint32_t pyr[PYR_LEVELS]; /* arrays of vmm: level k holds one pair per PYR_FANOUT^(k+1) points */
} vplot;

/* A frame set: its frames are frames[f0, f0 + n), by start. name: its string's offset in the
 * meta document's "frame_sets" (the sets are listed there in this order). */
typedef struct vset { uint32_t main, pad; uint64_t f0, n, lossy; } vset;

/* The directory block: this header, then each table 8-aligned, offsets from the block's start. */
typedef struct vdir {
    uint64_t n_blocks, blocks_off;       /* vblk */
    uint64_t n_arrays, arrays_off;       /* varr */
    uint64_t n_levels, levels_off;       /* vlevel */
    uint64_t n_tiers, tiers_off;         /* vtier */
    uint64_t n_locs, locs_off;           /* vloc, by slot */
    uint64_t n_loclevels, loclevels_off; /* uint32_t level ids */
    uint64_t n_hbuckets, hbuckets_off;   /* vhb */
    uint64_t n_plots, plots_off;         /* vplot */
    uint64_t n_sets, sets_off;           /* vset; the main set first */
    uint64_t n_frames, frames_off;       /* vframe */
    uint32_t msgs, text, images, image_bytes; /* arrays */
    uint64_t total_zones;
    int64_t end_ns;                      /* the capture's last time stamp */
    int64_t min_s, max_e;                /* the span that holds every zone */
    int64_t span_first, span_last;       /* the main frames' span (mprof_frame_span) */
} vdir;

/* The opened index: its file and its tables, in memory (index_open.c checked them). */
struct mprof_vindex {
    int fd;
    uint64_t size;
    vhead h;
    unsigned char *dir_buf; /* the directory block, decoded; the pointers below point into it */
    const vdir *d;
    const vblk *blocks;
    const varr *arrays;
    const vlevel *levels;
    const vtier *tiers;
    const vloc *locs;
    const uint32_t *loclevels;
    const vhb *hbuckets;
    const vplot *plots;
    const vset *sets;
    const vframe *frames;
    char *meta;
    size_t meta_len;
    unsigned char *sys;
    size_t sys_len;
    uint32_t *loc_of_slot; /* slot -> index into locs, UINT32_MAX: no zones */
    uint32_t n_slots;
    char *path;
    int remove_on_close;
};

/* The capture's size, modification time and fingerprint, which the header is stamped with. 0, or
 * -1 with errno set (index_open.c). */
int mprof__vidx_stamp(const char *path, uint64_t *size, int64_t *mtime_ns, uint64_t *print);

/* The vloc of a slot, NULL when it has no zones. */
static inline const vloc *mprof__vidx_loc(const mprof_vindex *x, uint32_t slot)
{
    return slot < x->n_slots && x->loc_of_slot[slot] != UINT32_MAX ? &x->locs[x->loc_of_slot[slot]] : NULL;
}

/* The answers of the index's parts, for mprof__vindex_answer (index_answers.c). */
int mprof__vidx_answer_zones(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err,
                             size_t errlen);
int mprof__vidx_answer_stats(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err,
                             size_t errlen);
int mprof__vidx_answer_hist(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err,
                            size_t errlen);
int mprof__vidx_answer_instances(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err,
                                 size_t errlen);

#endif
