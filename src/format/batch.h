/*
 * batch.h - the fast path from chunks to analysis: a capture's events as flat batches.
 *
 * mprof_reader_next hands out one event at a time, as a 128-byte mprof_event; that is the easy
 * way to read a capture and the slow one. Every tool that reads a whole capture reads it here
 * instead: the reader decodes chunks into batches of 16-byte records (mprof_rec), a batch at a
 * time, and a pass walks the records with a switch and no call per event. Zone begin, end and
 * leaf (the bulk of any capture) are records of their own; every other event is a record that
 * points at its decoded mprof_event in the batch.
 *
 * Chunks are independent zstd frames with their own timestamp bases, so with jobs > 1 the reader
 * decodes them on worker threads (one a core by default): chunks are handed out in file order,
 * each worker decompresses, checks and decodes its own, and batches come back to the caller in
 * file order. Definitions (source locations, strings, threads, callstacks) are applied to the
 * reader's tables on the thread that hands out the batch that holds them, as it does; a batch
 * holds definitions only at its start, so a pass sees the tables exactly as a one-at-a-time read
 * would. The records, and every figure computed from them, are the same for any jobs.
 *
 * Memory: each worker holds one chunk and four segments of batches (about 5.5 MiB), whatever the
 * capture's size.
 */
#ifndef MPROF_BATCH_H
#define MPROF_BATCH_H

#include "format/format.h"

#include <stdint.h>

/* A record. y holds the event tag in its low byte; for a ZONE_LEAF record (MPROF_REC_LEAF) the
 * zone's duration in nanoseconds is in its upper 24 bits. x is the source location id of
 * ZONE_BEGIN and ZONE_LEAF records, unused for ZONE_END, and for every other tag the index of its
 * mprof_event in mprof_batch.ev, or MPROF_REC_NOEV for a tag wanted as MPROF_WANT_RECORD. */
typedef struct mprof_rec {
    int64_t ts_ns; /* the event's time (ZONE_LEAF: when the zone began) */
    uint32_t x;
    uint32_t y;
} mprof_rec;

/* A zone without children in one record: it begins at ts_ns and ends mprof_rec_dur later. A
 * one-at-a-time read returns it as a ZONE_BEGIN and a ZONE_END. Zones too long for 24 bits of
 * nanoseconds come as the two records. */
#define MPROF_REC_LEAF MPROF_EV_ZONE_LEAF
#define MPROF_REC_DUR_MAX 0xffffffu

static inline int mprof_rec_type(const mprof_rec *e)
{
    return (int)(e->y & 0xff);
}
static inline int64_t mprof_rec_dur(const mprof_rec *e)
{
    return (int64_t)(e->y >> 8);
}

/* Consecutive records of one thread (the reader thread index, as mprof_event.thread). */
typedef struct mprof_run {
    uint32_t thread;
    uint32_t first, end; /* records [first, end) of the batch */
} mprof_run;

/* A batch: records in file order, split into runs of one thread. Valid until the next call to
 * mprof_reader_next_batch, mprof_reader_next or mprof_reader_close (the strings of its events
 * too). */
typedef struct mprof_batch {
    const mprof_rec *rec;
    const mprof_run *run;
    const mprof_event *ev; /* the events of records other than zone begin, end and leaf */
    uint32_t n_rec, n_run, n_ev;
    /* The latest ts_ns of the events the batch stands for, those mprof_reader_want leaves out
     * included (0 for an event without a time); INT64_MIN when it stands for none. */
    int64_t max_ts_ns;
} mprof_batch;

/* Decodes with jobs threads from the first batch on: 1 = on the caller's thread, 0 = one a
 * core (mprof_default_jobs). Call before the first read; returns 0, or -1 when reading has
 * begun (nothing changes). The caller's thread only takes batches when jobs > 1. A reader
 * starts with the process's setting (mprof_set_read_jobs). */
int mprof_reader_set_jobs(mprof_reader *r, int jobs);

/* The jobs of every reader opened from now on (1 until set: a library that reads a capture
 * starts no thread unless its program asks). The tools set it from --jobs, one a core by
 * default. Any thread; readers already open keep theirs. */
void mprof_set_read_jobs(int jobs);
int mprof_read_jobs(void);

/* Only records of the tags set in want (256 values; MPROF_EV_ZONE_BEGIN stands for zone begin,
 * end and leaf) are handed out; definitions are applied, and every event counted, either way.
 * MPROF_WANT_WHOLE (1, or any value but 0 and 2) hands a tag out as its record and its event;
 * MPROF_WANT_RECORD hands out only its record (time, thread, tag) with x = MPROF_REC_NOEV: a
 * reader that counts events or follows time without their fields saves the event's 128 bytes.
 * NULL wants everything whole (the default). Call before the first read. */
#define MPROF_WANT_WHOLE 1
#define MPROF_WANT_RECORD 2
#define MPROF_REC_NOEV UINT32_MAX
void mprof_reader_want(mprof_reader *r, const unsigned char want[MPROF_EV_MAX]);

/* Leaves out every EVENTS chunk not flagged MPROF_CHUNK_F_PROCESS, undecompressed: a read of the
 * process-context records and the definitions only, which is the whole of them in a capture
 * whose writer keeps them apart (docs/FORMAT.md "Process chunks"; mprof_reader_main_frames says
 * after the read whether this capture is one). Call before the first read. */
void mprof_reader_process_only(mprof_reader *r);

/* What END says of the main frames (analysis/range.h: the unnamed frame marks of the thread that
 * made the first one), times as a read converts them. */
typedef struct mprof_main_frames {
    uint32_t thread; /* 0: the capture has no unnamed frame mark */
    uint64_t marks;
    int64_t first_ns, last_ns;
} mprof_main_frames;

/* After a process-only read to its end: 1 with *out filled when the capture's writer kept the
 * process records and definitions in chunks of their own and the file holds every chunk it
 * wrote (so the read saw all of them, and END's main frames are the file's), else 0. */
int mprof_reader_main_frames(const mprof_reader *r, mprof_main_frames *out);

/* The next batch: 1 = *out filled (it may hold no record: then its definitions were applied and
 * its events counted), 0 = end of capture, -1 = error (mprof_reader_error). */
int mprof_reader_next_batch(mprof_reader *r, mprof_batch *out);

/* Every batch from here on to fn, in file order, as mprof_reader_next_batch hands them out; fn
 * returns 0 to go on, anything else to stop the read. With jobs > 1 (and this the reader's first
 * read) fn runs on the reader's threads, on the one that decoded the batch, one call at a time
 * (each call sees what the ones before it did): the batch is read from the cache it was
 * written to. fn may call the reader's table look-ups (mprof_reader_srcloc, ...) but not read.
 * Returns 0 at the end of the capture, 1 when fn stopped it (the reader then reads no more),
 * -1 on error (mprof_reader_error). */
typedef int (*mprof_batch_fn)(void *ctx, const mprof_batch *b);
int mprof_reader_each_batch(mprof_reader *r, mprof_batch_fn fn, void *ctx);

/* As mprof_reader_each_batch, and every batch fn had then goes to then, in the same order, one
 * call at a time (each call sees what the ones before it did): with jobs > 1 on whichever of the
 * reader's threads has nothing else to do, while fn goes on with later batches. then sees the
 * reader's tables as fn saw them with the same batch: the reader applies a later batch's
 * definitions only once then is done with every batch before it. then must not read what fn
 * writes (fn and then are two stages of a pipeline, with state of their own). then also has the
 * batch fn stopped the read with; the call returns once then is done with every batch. */
typedef void (*mprof_batch_then_fn)(void *ctx, const mprof_batch *b);
int mprof_reader_each_batch_then(mprof_reader *r, mprof_batch_fn fn, mprof_batch_then_fn then,
                                 void *ctx);

/* The cores this process may run on (at least 1): what --jobs defaults to. Any thread. */
int mprof_default_jobs(void);

#endif
