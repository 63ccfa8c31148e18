/*
 * compare.h - two captures served side by side (`mprof view --serve A.mprof B.mprof`): which zone
 * of A is which zone of B, by the zone identity rule of `mprof diff` (analysis/zone_key.h), and
 * which frame set of A is which of B (by name), answered once as /api/pairs (compare.c).
 *
 * Everything else the comparison shows the page asks each capture's index for, with c=0 or c=1
 * on any query (the figures of both sides come from the same code, analysis/site_stats.h).
 *
 * Threads: computed once on the command's thread, before the server starts.
 */
#ifndef MPROF_VIEW_COMPARE_H
#define MPROF_VIEW_COMPARE_H

#include "view/index.h"

/* The /api/pairs document of indexes a and b (caller frees), or NULL with err set. */
char *mprof__vcompare_pairs(const mprof_vindex *a, const mprof_vindex *b, char *err, size_t errlen);

#endif
