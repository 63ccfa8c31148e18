/*
 * index_build.h - what the parts of the index builder share: the builder's state during and
 * after the one pass over the capture (index_build.c), the tiers of detail and plot pyramids
 * (index_detail.c), and the writer of the directory, metadata and header (index_write.c).
 *
 * The pass writes the index file front to back: each array's blocks go to the file as soon as
 * they are full, so the builder's memory holds one block per array being filled (a few KiB per
 * level, plot and source location, and per tier of the levels that spill), whatever the
 * capture's size.
 *
 * Threads: the builder's one thread (and its vouts' own, index_out.c).
 */
#ifndef MPROF_VIEW_INDEX_BUILD_H
#define MPROF_VIEW_INDEX_BUILD_H

#include "analysis/site_stats.h"
#include "analysis/timeline.h"
#include "format/format.h"
#include "view/index_block.h"
#include "view/index_file.h"
#include "view/index_sys.h"
#include "util/json_out.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One stage of a level's tiers of detail: the items of the stage below merged at res. */
typedef struct titem { int64_t s, e; uint64_t first, n; int64_t self; uint32_t loc; } titem;
typedef struct tstage {
    int64_t res;
    int open;
    titem cur;
    uint64_t count; /* runs it made */
    vab *out;       /* the runs, when this stage is kept; NULL: counted only */
} tstage;

/* A level: the zones of one depth of one track. Zones arrive sorted by start for threads,
 * fibers and locks; a GPU level (or one whose zones came out of order) is kept in memory and
 * sorted at the end. */
typedef struct blevel {
    uint32_t track, depth, kind;
    vab zones;
    tstage *stages; /* LOD_TIERS, counting while the pass runs */
    int64_t last_s;
    int collect;
    vzone *mem;
    uint64_t n_mem, cap_mem;
    uint32_t tier0, n_tiers; /* after the build: its tiers in the builder's list */
    vab *spill;              /* LOD_TIERS: its tiers written as the pass goes (index_detail.c) */
    unsigned spill_live;     /* the tiers of spill still written */
    vab thr;                 /* async lanes: each span's threads (vthr), when has_thr */
    int has_thr;
} blevel;

/* A source location slot: its figures and the levels it appears in. */
typedef struct bloc {
    mprof_site_stat st;
    uint32_t kind;
    uint32_t *lv;
    uint32_t n_lv, cap_lv;
    int used;
    uint32_t process; /* several processes: its zones' process (processes.h: mprof__vproc_note) */
} bloc;

typedef struct bplot {
    int pool;          /* 1 = memory of walker pool id, 0 = a plot named by string id */
    uint32_t id;
    int format, style;
    uint32_t color;
    int64_t last;      /* the last time stamp (series stay sorted) */
    vab points;
    vab pyr[PYR_LEVELS];
    vmm acc[PYR_LEVELS]; /* the group of each pyramid level being filled */
    uint32_t acc_n[PYR_LEVELS];
    uint32_t n_pyr;
} bplot;

/* What the pass gathered; index_build.c fills it, index_write.c writes the rest of the file. */
typedef struct builder {
    vout out;
    mprof_walker *w;
    const mprof_reader *r; /* the capture's reader (for the system records) */
    int several;           /* mprof__vproc_several(r), as of the batch being walked */
    size_t **by_track; /* by_track[track][depth]: index + 1 into levels (which moves), 0 = none */
    uint32_t *track_depths;
    uint32_t n_tracks;
    blevel *levels;
    size_t n_levels, cap_levels;
    bloc *locs;
    uint32_t n_locs;
    bplot *plots;
    size_t n_plots, cap_plots;
    vab msgs, text, images, image_bytes;
    int64_t msgs_last, images_last;
    vtier *tiers;      /* every level's kept tiers */
    vab *tier_arrs;
    size_t n_tiers, cap_tiers;
    uint64_t n_zones;
    int64_t min_s, max_e; /* over every zone and span (GPU zones may start before the CPU's
                           * first) */
    mprof_frame_span span; /* known after the pass */
    uint32_t mark_thread;  /* the main frame marks (analysis/range.h) */
    uint64_t n_marks;
    int64_t mark_lo, mark_hi;
    mprof_vsys *sys;
    struct vasync_b *async; /* async spans until they go to their levels (index_async.c) */
    vout spill;             /* the tiers written during the pass, in a file of their own */
    FILE *spill_file;
    uint32_t n_spilling;    /* levels that have spill */
    int spill_threads;      /* the spill's vout gets a thread of its own (mprof__vout_start) */
    int oom;
} builder;

typedef struct vasync_b vasync_b;

/* index_build.c: a zone of slot into level (track, depth) and its slot's figures (counts: it
 * counts; outermost: it adds its duration to total, site_stats.h). Returns its level, or NULL
 * when out of memory (b->oom set). */
blevel *mprof__vidx_add_zone(builder *b, uint32_t track, uint32_t depth, uint32_t slot, int64_t s, int64_t e,
                             int64_t self, uint32_t flags, int counts, int outermost);

/* index_async.c: async spans. The walker's hook: keeps a span (0, or -1 out of memory). */
int mprof__vidx_async_span(builder *b, const mprof_async_span *s);
/* After the walker finished, before the levels are: lays each track's spans out on lanes and
 * adds them to the levels of track ids after the walker's. 0, or -1 out of memory. */
int mprof__vidx_async_finish(builder *b);
/* The span name of a slot at or after the capture's source locations and its track's name; NULL
 * when slot is no span name. */
const char *mprof__vidx_async_slot(const builder *b, uint32_t slot, const char **out_track);
/* The end of the span names' slots (0 without async spans). */
uint32_t mprof__vidx_async_slots_end(const builder *b);
/* The metadata: the async tracks, as objects of its "tracks" array; "async_threads", the
 * capture's thread names by index (the spans' vthr name them). */
void mprof__vidx_async_tracks(const builder *b, mprof_json *j);
void mprof__vidx_async_threads(const builder *b, mprof_json *j);
void mprof__vidx_async_free(vasync_b *a); /* NULL is a no-op */

/* index_detail.c: feeds one zone (its index in the level in first) to the stages of a level,
 * counting runs, or writing the runs of the stages that have an output. 0, or -1 (o->failed). */
int mprof__vidx_tier_feed(tstage *g, vout *o, const titem *it);
/* Closes every stage's open run. 0, or -1. */
int mprof__vidx_tier_close(tstage *g, vout *o);
/* Resets the stages to count again from the first zone (resolutions 2^10, 2^12, ... ns). */
void mprof__vidx_tier_reset(tstage *g);
/* The tiers of a level written while the pass runs, so that the level is not read back at its
 * end: a level that reaches LOD_MIN_ZONES zones starts writing every stage's runs to the spill
 * file (its zones so far fed again from its pending block); a stage whose runs outnumber 5/8 of
 * the zones stops (it cannot be kept, or hardly). Starts the level's spill when it is due; call
 * after each zone the level takes in order. 0, or -1 (out of memory: b->oom). */
int mprof__vidx_spill_step(builder *b, blevel *l);
/* How often (in zones of a level) its spilled stages are weighed: spill_step has work only at a
 * multiple of this, or at LOD_MIN_ZONES. */
#define VIDX_SPILL_CHECK 1024
/* Set only by tests: 1 reads every level back, 2 spills to a file that takes no write (the
 * levels are read back after the failure); the file must come out the same. */
extern int mprof__vidx_spill_off;
/* At the level's end, after its stages closed: the tiers of mask, copied from the spill file to
 * the index in the order they were written, into outs (which then own them). 1 done; 0 when a
 * tier of mask was not written through or the spill failed (the caller reads the level back);
 * -1 when the index could not be written. */
int mprof__vidx_spill_keep(builder *b, blevel *l, unsigned mask, vab *outs);
/* Frees a level's spill (its tiers are not written, or no longer). */
void mprof__vidx_spill_drop(builder *b, blevel *l);
/* The spill file failed (full, or out of memory for its blocks): every level drops its spill and
 * is read back at its end; none starts one again. */
void mprof__vidx_spill_fail(builder *b);
/* A point of a plot, into its pyramid. 0, or -1. */
int mprof__vidx_pyr_point(bplot *p, vout *o, double v);
/* The pyramid's last, partial groups. 0, or -1. */
int mprof__vidx_pyr_finish(bplot *p, vout *o);

/* index_write.c: the directory, the metadata document, the system section and the header, after
 * the data blocks (b->out's end). 0, or -1 with a message in err. */
int mprof__vidx_write(builder *b, mprof_reader *r, const char *cap_path, char *err, size_t errlen);

#endif
