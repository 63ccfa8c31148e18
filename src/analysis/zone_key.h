/*
 * zone_key.h - zone identity across captures: when is a zone of capture A the same zone as one
 * of capture B?
 *
 * Source location ids differ between captures, and line numbers and absolute paths change with
 * every edit and every checkout, so neither identifies a zone. A zone is the same zone when its
 * name and its function match; the file and the line only break ties between two sites that
 * share both, and files are compared without the directory they were built from (the longest
 * common run of trailing path components counts). `mprof diff`, `mprof gate`'s attribution and
 * the viewer's comparison all pair zones through this module, so they always agree.
 *
 * Pure functions, any thread.
 */
#ifndef MPROF_ANALYSIS_ZONE_KEY_H
#define MPROF_ANALYSIS_ZONE_KEY_H

#include <stddef.h>
#include <stdint.h>

typedef struct mprof_zone_key {
    const char *name;     /* required */
    const char *function; /* NULL or "" = unknown (matches any function) */
    const char *file;     /* NULL or "" = unknown */
    uint32_t line;        /* 0 = unknown */
} mprof_zone_key;

/* How well b matches a: 0 = not the same zone (names differ, or both functions are known and
 * differ); otherwise a score that grows with the evidence (known equal functions, trailing path
 * components in common, equal lines). */
int mprof__zone_key_score(const mprof_zone_key *a, const mprof_zone_key *b);

/* Non-zero when a and b are the same zone (mprof__zone_key_score > 0). */
int mprof__zone_key_same(const mprof_zone_key *a, const mprof_zone_key *b);

/* Trailing path components that two paths share ("/a/x/src/f.c" and "/b/src/f.c" share 2:
 * src/f.c); "." and ".." are not compared; 0 when a path is unknown or the file names differ. */
int mprof__zone_key_path_common(const char *a, const char *b);

/*
 * Pairs the zones of two captures one to one: out_b_of_a[i] receives the index in b of a's
 * zone i, or -1 when it has no partner. Candidates are taken best score first (ties: lower
 * indices first), so each zone gets the partner that matches it best. Returns 0, or -1 when out
 * of memory (out_b_of_a then all -1).
 */
int mprof__zone_key_pair(const mprof_zone_key *a, size_t n_a, const mprof_zone_key *b, size_t n_b,
                         ptrdiff_t *out_b_of_a);

#endif
