/*
 * index_sys_file.h - the layout of the system and lock section of the served viewer's index
 * (index_sys.h), shared by its writer (index_sys_build.c) and its reader (index_sys_answers.c).
 *
 * The idea is the zones' (index_file.h): sorted arrays in the mapped file and binary searches.
 * Off-CPU intervals of a thread are sorted and carry prefix sums of off and blocked time, so the
 * intervals narrower than a pixel become one run per pixel with its off share, in one more
 * binary search. Lock spans are sorted per lock and kind (waiting, holding) with prefix sums of
 * their durations and a maximum per block of LOCK_BLOCK, so a range's figures of a lock are two
 * binary searches plus the blocks between them. Callstack samples are sorted by time and point
 * into a table of distinct stacks, symbolised once at build time into function-name ids.
 *
 * The section is one block of the index file: this header at its start, every table 8-aligned
 * after it, offsets relative to the section.
 */
#ifndef MPROF_VIEW_INDEX_SYS_FILE_H
#define MPROF_VIEW_INDEX_SYS_FILE_H

#include <stdint.h>

#define VSYS_MAGIC "MPVSYS02"
#define LOCK_BLOCK 64

typedef struct shead {
    char magic[8];
    uint64_t n_threads, threads_off; /* sthread */
    uint64_t n_off, off_off;         /* soff, grouped by thread */
    uint64_t n_cpu, cpu_off;         /* scpu */
    uint64_t n_samples, samples_off; /* ssample, by time */
    uint64_t n_stacks, stacks_off;   /* sstack */
    uint64_t n_frames, frames_off;   /* uint32 function-name ids, outermost first */
    uint64_t n_names, names_off;     /* sname */
    uint64_t text_len, text_off;     /* names' bytes */
    uint64_t n_locks, locks_off;     /* slock */
    uint64_t n_spans, spans_off;     /* sspan, grouped by lock and kind */
    uint64_t n_blocks, blocks_off;   /* int64 maximum duration of each LOCK_BLOCK spans */
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
typedef struct ssample { int64_t ts; uint32_t stack, track; } ssample;
typedef struct sstack { uint64_t first; uint32_t n, pad; } sstack;
typedef struct sname { uint64_t off; uint32_t len, pad; } sname;
typedef struct slock {
    uint32_t track, pad;
    uint64_t first[2], n[2]; /* spans: [0] waiting, [1] holding */
    uint64_t block[2];       /* first block of each kind */
} slock;
/* A lock span: its start and the duration of the group's spans before it. Each group (lock,
 * kind) ends with a sentinel {INT64_MAX, total}, so span i lasts x[i + 1].pre - x[i].pre. */
typedef struct sspan { int64_t s, pre; } sspan;

#endif
