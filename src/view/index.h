/*
 * index.h - the on-disk index that `mprof view --serve` answers its page's queries from.
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

#include "view/query.h"

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
/* Where an index's bytes go, for bench/bench_view_index.c. */
typedef struct mprof_vindex_parts {
    uint64_t zones, tiers, plots, messages, images, directory, meta, system, header;
} mprof_vindex_parts;
void mprof__vindex_parts(const mprof_vindex *x, mprof_vindex_parts *out);
/* Tiers of detail (runs of zones merged at coarse resolutions) over all levels, and their runs. */
uint64_t mprof__vindex_tier_count(const mprof_vindex *x, uint64_t *out_runs);

/* Writes the answer to q (parsed by mprof__vquery_parse; not MPROF_VQ_ASSET) as JSON to out.
 * Returns 0, or -1 with err set (a query that names something the capture lacks, or an I/O
 * error). */
int mprof__vindex_answer(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err,
                         size_t errlen);

#endif
