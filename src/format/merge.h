/*
 * merge.h - several captures into one, each input a process of it (format 1.5, docs/FORMAT.md
 * "Several processes").
 *
 * The merger re-encodes: it reads every input's events and writes them into one stream, with
 * every id (source locations, strings, threads, callstacks, lock ids, GPU context ids) renumbered
 * so that processes never collide, every timestamp moved onto one timeline (nanoseconds, tick0 0)
 * and DEF_PROCESS / THREAD_PROCESS / PROCESS_END records that say which process each thread
 * belongs to and how its part ended. Readers then need nothing new beyond those three records.
 * `mprof merge` and the several-port `mprof capture` both call it.
 */
#ifndef MPROF_MERGE_H
#define MPROF_MERGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct mprof_merge_input {
    const char *path;
    const char *name; /* the process's name; NULL: the input's own (INFO `app`) */
    int has_offset;   /* offset_ns is given (--offset): it overrides the clocks */
    int64_t offset_ns; /* where the input's time 0 lies after the first input's time 0 */
} mprof_merge_input;

typedef struct mprof_merge_result {
    uint32_t processes;
    uint64_t events, events_lost;
    uint32_t ended_early;  /* processes whose part ended before its end record */
    char alignment[16];    /* "clock", "wallclock", "offset" or "mixed" */
} mprof_merge_result;

/* Merges the n inputs (in that order: their processes get indexes in it, an input that is a
 * merged capture keeping its own) into out_path, which is written whole or not at all (a
 * temporary file renamed at the end; an existing out_path is replaced). Returns 0 and fills
 * *res, or -1 with a message naming the file in err. Any thread; it touches only its
 * arguments. */
int mprof_merge(const mprof_merge_input *in, uint32_t n, const char *out_path,
                mprof_merge_result *res, char *err, size_t errlen);

#endif
