/*
 * index_build.h - what the parts of the index builder share: the builder's state after the one
 * pass over the capture (index_build.c), which the writer turns into the index file
 * (index_write.c) with the tiers of detail and plot pyramids of index_detail.c.
 *
 * Threads: the builder's one thread.
 */
#ifndef MPROF_VIEW_INDEX_BUILD_H
#define MPROF_VIEW_INDEX_BUILD_H

#include "analysis/timeline.h"
#include "format/format.h"
#include "view/index_file.h"
#include "view/index_spool.h"
#include "view/index_sys.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A level (the zones of one depth of one track), a source location with its figures and
 * duration histogram, a plot or memory series: each a spool stream of its records. */
typedef struct blevel { uint32_t track, depth; stream st; } blevel;

typedef struct bloc {
    stream st;
    uint64_t *hist; /* HIST_BUCKETS, allocated with the first zone */
    int64_t total, self, min, max;
} bloc;

typedef struct bplot {
    int pool;          /* 1 = memory of walker pool id, 0 = a plot named by string id */
    uint32_t id;
    int format, style;
    uint32_t color;
    stream st;
} bplot;

/* What the pass gathered; index_build.c fills it, index_write.c writes it out. */
typedef struct builder {
    spool sp;
    mprof_walker *w;
    const mprof_reader *r; /* the capture's reader (for the system records) */
    size_t **by_track; /* by_track[track][depth]: index + 1 into levels (which moves), 0 = none */
    uint32_t *track_depths;
    uint32_t n_tracks;
    blevel *levels;    /* flat list, in creation order (pointers above index into it) */
    size_t n_levels, cap_levels;
    bloc *locs;
    uint32_t n_locs;
    bplot *plots;
    size_t n_plots, cap_plots;
    stream msgs, text, images, image_bytes;
    uint64_t n_zones;
    int64_t min_s, max_e; /* over every zone and span (GPU zones may start before the CPU's
                           * first) */
    mprof_vsys *sys;
    int oom;
} builder;

/* Writes the index of what b gathered to f (a fresh file): the streams, the tiers of detail,
 * the tables, the system section, the metadata document, and last the header. 0, or -1 with a
 * message in err (an I/O error, out of memory). */
int mprof__vidx_write(builder *b, mprof_reader *r, const char *cap_path, FILE *f, char *err,
                      size_t errlen);

/* index_detail.c: the coarse views written with the index, so that an answer reads little.
 * The plot's min/max pyramid at f's end (*pos); vp->off and vp->n name its points, and
 * vp->pyr_off and vp->pyr_levels get where the pyramid lies. 0, or -1 on an I/O error. */
int mprof__vidx_write_pyramid(FILE *f, vplot *vp, uint64_t *pos);
/* The tiers of detail of the level of n zones at off in f, written at f's end (*pos); out gets
 * the tiers kept (LOD_TIERS at most), *out_n their count. 0, or -1 on an I/O error or out of
 * memory. */
int mprof__vidx_level_tiers(spool *sp, FILE *f, uint64_t off, uint64_t n, uint64_t *pos,
                            vtier *out, uint32_t *out_n);

#endif
