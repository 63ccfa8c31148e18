/*
 * live_ring.h - the chunks live capture keeps (live_ring.c): reference-counted blobs shared
 * between the history ring and a tool's queue, and the ring of the last history_seconds.
 *
 * The ring, the raw slabs and blob_new's raw form belong to the collector thread; a framed blob
 * may be released on any thread (a sender's queue holds references too).
 */
#ifndef MPROF_LIVE_RING_H
#define MPROF_LIVE_RING_H

#include "format/wire.h"
#include "sink.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define MPROF__LIVE_EVENTS_UNKNOWN UINT64_MAX

/* A chunk shared by the history ring and session queues. */
typedef struct mprof__live_blob {
    _Atomic int refs;
    uint64_t mono_ns; /* when it was produced */
    uint64_t ticks;   /* the same moment in timer ticks */
    int raw;          /* data is an unframed EVENTS payload (history nobody has asked for) */
    uint64_t events;  /* the events it holds as END counts them, or MPROF__LIVE_EVENTS_UNKNOWN */
    unsigned flags;   /* an EVENTS chunk's MPROF_CHUNK_F_* (a raw blob is framed with them) */
    mprof__chunk_marks marks; /* its unnamed frame marks (valid when events is known) */
    size_t len;
    struct mprof__live_slab *slab; /* a raw blob's slab (collector thread only) */
    unsigned char data[];
} mprof__live_blob;

/* A node of the history ring, oldest first. */
typedef struct mprof__live_hnode {
    mprof__live_blob *b;
    struct mprof__live_hnode *next;
} mprof__live_hnode;

/* A framed chunk (a copy of data) with one reference, stamped now; NULL when out of memory. */
mprof__live_blob *mprof__live_blob_new(const void *data, size_t len);
/* An unframed EVENTS payload kept for history, cut from page-backed slabs. Collector thread. */
mprof__live_blob *mprof__live_raw_blob_new(const void *data, size_t len);
static inline void mprof__live_blob_ref(mprof__live_blob *b)
{
    atomic_fetch_add(&b->refs, 1);
}
/* Drops a reference (NULL: nothing); the last one frees the blob. A raw blob's last reference
 * is dropped on the collector thread, which owns the slabs. */
void mprof__live_blob_unref(mprof__live_blob *b);

/* Empties the ring; the stream a tool may later ask for starts now. */
void mprof__live_ring_reset(void);
/* Keeps history_s seconds of chunks, at most cap_bytes. */
void mprof__live_ring_open(double history_s, size_t cap_bytes);
/* Adds b (the ring takes its own reference) and drops what is too old or over the cap. */
void mprof__live_ring_push(mprof__live_blob *b);
/* Empties the ring and frees the slabs and the compression context. */
void mprof__live_ring_close(void);

/* The history a tool asked for (mprof__live_ring_pick). */
typedef struct mprof__live_pick {
    mprof__live_hnode *first; /* oldest chunk to send; NULL: none */
    size_t n;                 /* chunks from first on */
    uint64_t start_ticks;     /* when the sent history starts (valid when first is set) */
    size_t n_raw_failed;      /* raw chunks that could not be framed (out of memory) */
    mprof_wire_counts raw_failed; /* their events */
} mprof__live_pick;

/* Chooses the chunks of the last span_ns, newest first within budget_bytes, to be sent oldest
 * first. Raw chunks in the span are framed first (the ring keeps the framed form for the next
 * tool), so that the budget applies to what is sent. Collector thread. */
void mprof__live_ring_pick(uint64_t span_ns, size_t budget_bytes, mprof__live_pick *out);

#endif
