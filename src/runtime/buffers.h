/*
 * buffers.h - the thread buffers (buffers.c): each recording thread's chain of blocks, the raw
 * record writers, and the consumer side that the collector drains them with.
 *
 * Instrumented threads write raw records (format.h's event table, raw widths) into their own
 * blocks. An event writer reserves room with mprof__reserve() (lifecycle.h: it also decides
 * whether the thread records at all), fills it with the mprof__w_* helpers, and publishes it with
 * mprof__commit(). Only the owning thread writes its blocks; the collector reads up to the
 * published cursor. Any module that adds an event writes it this way and never touches another
 * thread's buffer.
 */
#ifndef MPROF_BUFFERS_H
#define MPROF_BUFFERS_H

#include "mprof/mprof.h"
#include "format/format.h"
#include "visibility.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MPROF__BLOCK_BYTES (64u * 1024u)
#define MPROF__CACHE_LINE 64

typedef struct mprof__block {
    struct mprof__block *_Atomic next; /* set (release) by the owner when the block is full */
    struct mprof__block *free_next;    /* link in the owner's free list */
    unsigned char *_Atomic final_end;  /* where the data ends, set before next */
    size_t size;
    unsigned char data[];
} mprof__block;

/* One per thread that ever recorded; heap-allocated (64-byte aligned), freed by the drain after
 * the thread has exited and its blocks are drained. mprof__tls points at tb.
 *
 * The fields are grouped by who writes them, one cache line per group: the owner writes its
 * cursor on every event, and the collector writes its translation state on every event it
 * translates, so sharing a line would bounce it between the two cores while a drain runs (see
 * docs/OVERHEAD.md). */
typedef struct mprof__thread {
    /* Owner's line: the cursor (read, not written, by the collector) and owner-only state. */
    _Alignas(MPROF__CACHE_LINE) mprof__tbuf tb; /* must stay first */
    mprof__block *first;           /* owner: current block (tail) */
    mprof__block *spare;           /* owner: blocks taken from returned */
    uint64_t lost;                 /* owner: events dropped since the last LOST record */
    uint32_t idx;                  /* 1-based thread index in the capture (set once) */
    uint64_t os_tid;               /* set once */
    /* Collector's line: the drain's position, then the collector's translation state. */
    _Alignas(MPROF__CACHE_LINE) mprof__block *_Atomic head; /* oldest undrained block */
    unsigned char *col_pos;        /* drain: drained up to here in head */
    uint64_t col_last_ticks;       /* collector: previous TS in the current chunk */
    uint32_t col_chunk_seq;        /* collector: chunk in which last_ticks is valid */
    int col_named;                 /* collector: DEF_THREAD sent in this session */
    int col_ts_first;              /* collector: the next TS is the thread's first in the chunk */
    uint32_t col_leaf_loc;         /* collector: the chunk's ZONE_LEAF_LOC for it, 0 = none */
    struct mprof__thread *next;    /* registry list, under the registry's lock */
    /* Shared line, written rarely: drained blocks go back to their thread (already paged in, so
     * refilling costs no page faults): the drain pushes onto returned, the owner takes the
     * whole list at once. */
    _Alignas(MPROF__CACHE_LINE) mprof__block *_Atomic returned;
    _Atomic uint32_t n_returned;
    _Atomic int exited;
} mprof__thread;

/* The buffer of a thread that has none (cur == end == NULL): every event takes the slow path. */
extern MPROF__HIDDEN mprof__tbuf mprof__dummy_tbuf;
/* Thread blocks malloc'd rather than recycled (tests check that recycling works). */
extern MPROF__HIDDEN _Atomic uint64_t mprof__blocks_allocated;
/* Bumps each time a thread registers (relaxed): system tracing polls it to trace new threads
 * soon, without being called from here. */
extern MPROF__HIDDEN _Atomic uint32_t mprof__thread_generation;

/* ---- the owner's side ---------------------------------------------------------------------- */

/* Registers the calling thread (its record index, its first block) and returns it; NULL when out
 * of memory. Over the memory cap it is registered with no block, so that what it drops is
 * counted. The caller has checked that the profiler records (lifecycle.c). */
mprof__thread *mprof__thread_register(void);
/* Links a fresh block as th's current one and returns its start (room for any record up to
 * MPROF__BLOCK_BYTES / 2); or, at the memory cap or out of memory, counts one event as lost and
 * returns NULL. Owner thread. */
unsigned char *mprof__buffer_grow(mprof__thread *th);

/* Publishes the bytes up to end (end = reserved pointer + bytes written). */
static inline void mprof__commit(unsigned char *end)
{
    mprof__tbuf *t = mprof__tls;
    __atomic_store_n(&t->cur, end, __ATOMIC_RELEASE);
}

/* Raw field writers: each returns the pointer after what it wrote. */
static inline unsigned char *mprof__w_u8(unsigned char *p, uint8_t v) { *p = v; return p + 1; }
static inline unsigned char *mprof__w_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); return p + 4; }
static inline unsigned char *mprof__w_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); return p + 8; }
static inline unsigned char *mprof__w_ptr(unsigned char *p, const void *v) { memcpy(p, &v, 8); return p + 8; }
static inline unsigned char *mprof__w_f64(unsigned char *p, double v) { memcpy(p, &v, 8); return p + 8; }
static inline unsigned char *mprof__w_ts(unsigned char *p) { return mprof__w_u64(p, mprof__ticks()); }
/* STR: u16 length (clamped to 65535 - 1) then the bytes. */
static inline unsigned char *mprof__w_str(unsigned char *p, const char *s, size_t len)
{
    if (len > 0xfffe)
        len = 0xfffe;
    uint16_t l = (uint16_t)len;
    memcpy(p, &l, 2);
    if (len)
        memcpy(p + 2, s, len);
    return p + 2 + len;
}
#define MPROF__STR_BYTES(len) (2 + ((len) > 0xfffe ? 0xfffe : (len)))

/* ---- the consumer's side (the collector thread, or startup while it is not running) -------- */

/* Receives the published raw records [p, end) of thread th. */
typedef void (*mprof__drain_fn)(mprof__thread *th, const unsigned char *p,
                                const unsigned char *end);
/* Hands what every thread has published to fn (NULL: skips it), gives the drained blocks back
 * for reuse, and frees the threads that have exited and are fully drained. */
void mprof__buffers_drain(mprof__drain_fn fn);
/* Calls fn on every registered thread, under the registry's lock. */
void mprof__threads_each(void (*fn)(mprof__thread *th));
/* The number of registered threads. Any thread. */
uint32_t mprof__thread_count(void);
/* Frees the recycled blocks waiting for reuse (after a session, so that a stopped profiler
 * holds no more than its threads' own blocks). */
void mprof__buffers_release_pool(void);

/* ---- the process's own records -------------------------------------------------------------- */

/* Hands n_records raw records (the raw form of format.h, absolute tick timestamps) that belong
 * to the process rather than to a thread (thread 0: system tracing's SYS_* records) to the
 * collector's next drain, like a thread's buffer. For a background thread that is not
 * instrumented; takes a lock, never the hot path. Returns 0, or -1 when the queue is closed or
 * the profiler is not recording, or past the 16 MiB cap (the records are dropped; past the cap
 * they count as lost events). */
int mprof__process_records(const unsigned char *raw, size_t len, uint64_t n_records);
/* The collector opens the queue (empty) when its thread runs and closes it when joined. */
void mprof__process_queue_open(void);
void mprof__process_queue_close(void);
/* Swaps the records waiting with the empty buffer *spare: *spare then holds them. */
void mprof__process_queue_take(mprof_buf *spare);

#endif
