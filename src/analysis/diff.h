/*
 * diff.h - compares two captures: frame-time percentiles side by side, and per zone (paired by
 * zone identity, zone_key.h) the count, mean and p95 of each side with the change of time per frame
 * ("impact"), sorted by the size of the impact; zones present on one side only are listed too.
 */
#ifndef MPROF_DIFF_H
#define MPROF_DIFF_H

#include <stdint.h>
#include <stdio.h>

typedef struct mprof_diff mprof_diff;

/* Reads both captures (streamed, one at a time). NULL with a message in err on failure. */
mprof_diff *mprof__diff_run(const char *path_a, const char *path_b, char *err, size_t errlen);
void mprof__diff_free(mprof_diff *d);
/* top_n: zone rows shown (0 = all). */
void mprof__diff_print_text(const mprof_diff *d, FILE *out, int top_n);
/* The comparison as one JSON object (the schema in docs/EXPORT.md, "mprof diff --json"). */
void mprof__diff_print_json(const mprof_diff *d, FILE *out, int top_n);

#endif
