/*
 * index_sys_file.h - the layout of the system and lock section of the served viewer's index
 * (index_sys.h), shared by its writer (index_sys_build.c) and its reader (index_sys_answers.c).
 *
 * The idea is the zones' (index_file.h): sorted arrays of blocks in the index file and binary
 * searches. Off-CPU intervals of a thread are sorted and carry prefix sums of off and blocked
 * time, so the intervals narrower than a pixel become one run per pixel with its off share, in
 * one more binary search. Lock spans are sorted per lock and kind (waiting, holding) into runs
 * with prefix sums of their durations and the longest span of each block in the directory
 * (index_runs.h), so a range's figures of a lock are two binary searches per run plus the blocks
 * between them. Callstack samples are runs sorted by time and point into a table of distinct
 * stacks, symbolised once at build time into function-name ids.
 *
 * The big tables (off-CPU intervals, CPU points, samples, lock spans) are arrays of the index's
 * directory (VC_RAW), read a block at a time; the section itself is one block of the index file
 * with the small ones: this header at its start, every table 8-aligned after it, offsets relative
 * to the section, arrays named by their index in the directory.
 */
#ifndef MPROF_VIEW_INDEX_SYS_FILE_H
#define MPROF_VIEW_INDEX_SYS_FILE_H

#include <stdint.h>

#define VSYS_MAGIC "MPVSYS03"

typedef struct shead {
    char magic[8];
    uint64_t n_threads, threads_off; /* sthread */
    uint32_t off_arr, cpu_arr;       /* arrays: soff grouped by thread; scpu */
    uint64_t sample_arr0, n_sample_runs; /* arrays [sample_arr0, + n_sample_runs): vrsample runs */
    uint64_t n_samples;
    uint64_t n_tix, tix_off;         /* uint32 walker track of each sampled thread (vrsample.tix);
                                      * UINT32_MAX when no track has that OS thread */
    uint64_t n_stacks, stacks_off;   /* sstack */
    uint64_t n_frames, frames_off;   /* uint32 function-name ids, outermost first */
    uint64_t n_names, names_off;     /* sname */
    uint64_t text_len, text_off;     /* names' bytes */
    uint64_t n_locks, locks_off;     /* slock */
    uint64_t meta_len, meta_off;     /* the /api/system document */
    uint64_t bytes;
} shead;

typedef struct sthread {
    uint64_t tid;
    int64_t start, end;
    uint64_t first, n; /* its off intervals */
    uint32_t track, pad; /* walker track; UINT32_MAX when no track has this OS thread */
} sthread;
typedef struct soff { int64_t s, e, pre, pre_blk; uint32_t reason, pad; } soff;
typedef struct scpu { int64_t ts; double other, self; } scpu;
typedef struct sstack { uint64_t first; uint32_t n, pad; } sstack;
typedef struct sname { uint64_t off; uint32_t len, pad; } sname;
typedef struct slock {
    uint32_t track, pad;
    uint64_t arr0[2], n_runs[2]; /* its spans' runs (vrspan): [0] waiting, [1] holding */
    uint64_t n[2];               /* spans */
} slock;

#endif
