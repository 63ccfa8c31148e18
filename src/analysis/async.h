/*
 * async.h - async spans paired from a capture's ASYNC_BEGIN, ASYNC_BEGIN_DYN and ASYNC_END
 * records (docs/FORMAT.md, "Async spans"), for every tool that shows them: the report's pass,
 * the exports and the viewer all pair spans with this one module, so they agree on every span
 * and on what did not pair.
 *
 * Feed it every event of a capture in file order; it calls back with each span as it
 * completes (an end that arrives before its begin, written by another thread into a later
 * chunk, waits for it), and at the end with each span still open. Tracks are identified by
 * their text; track i is the i-th distinct track name met. Memory follows the spans open at
 * once, the tracks, and the ends waiting for their begin.
 *
 * Threads: one pairer per thread.
 */
#ifndef MPROF_ANALYSIS_ASYNC_H
#define MPROF_ANALYSIS_ASYNC_H

#include "format/format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct mprof_async mprof_async;

typedef struct mprof_async_span {
    uint32_t track;          /* index of the track (mprof__async_track_name) */
    uint64_t id;             /* the program's id */
    int64_t start_ns, end_ns;
    uint32_t begin_thread, end_thread; /* capture thread indices; end_thread 0 when open */
    const char *name;        /* the span's name (not NUL-terminated), valid during the call */
    size_t name_len;
    int open_at_end;         /* begun and never ended: end_ns is the capture's last event */
    int cut_by_reuse;        /* its id was begun again while it was open: it ends there */
} mprof_async_span;

typedef void (*mprof_async_fn)(void *user, const mprof_async_span *span);

/* Per track, what did not pair. */
typedef struct mprof_async_counts {
    uint64_t unmatched_ends; /* ends without a begin */
    uint64_t reused_ids;     /* begins of an id already open */
    uint64_t open_at_end;    /* spans never ended */
} mprof_async_counts;

/* fn receives every span; NULL when out of memory. */
mprof_async *mprof__async_new(mprof_async_fn fn, void *user);
void mprof__async_free(mprof_async *a);
/* Feeds one event (others than the async records are ignored). r resolves the track and span
 * names. Returns 0, or -1 when out of memory (the pairer counts it and goes on). */
int mprof__async_event(mprof_async *a, const mprof_reader *r, const mprof_event *ev);
/* After the last event: every span still open completes with open_at_end set and end_ns =
 * last_ns, and every end still waiting becomes an end without a begin. */
void mprof__async_finish(mprof_async *a, int64_t last_ns);
uint32_t mprof__async_track_count(const mprof_async *a);
const char *mprof__async_track_name(const mprof_async *a, uint32_t track);
const mprof_async_counts *mprof__async_counts(const mprof_async *a, uint32_t track);
/* Non-zero when memory ran out and some spans were not paired. */
int mprof__async_incomplete(const mprof_async *a);

/* Lanes for a track's spans, so that overlapping spans never share one: fed the spans in order
 * of their start, each goes in the lowest lane free at its start. Every output that draws a
 * track (the static page, the served index, the Perfetto export) lays it out here, so they agree
 * on every span's lane. Zero-initialised; mprof__async_lanes_free releases it. */
typedef struct mprof_async_lanes {
    int64_t *end; /* when each lane's last span ends */
    uint32_t n, cap;
} mprof_async_lanes;
#define MPROF_ASYNC_MAX_LANES (1u << 20)
/* The lane of a span [start, end): an existing one, or a new one (l->n grows by one). Returns
 * UINT32_MAX out of memory or past MPROF_ASYNC_MAX_LANES lanes. */
uint32_t mprof__async_lane(mprof_async_lanes *l, int64_t start, int64_t end);
void mprof__async_lanes_free(mprof_async_lanes *l);

#endif
