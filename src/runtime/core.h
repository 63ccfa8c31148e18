/*
 * core.h - what the library's modules share: thread buffers, the raw event writer, the
 * collector's hooks and the global state.
 *
 * Instrumented threads write raw records (format.h's event table, raw widths) into their own
 * blocks. A record is reserved with mprof__reserve(), filled with the mprof__w_* helpers, and
 * published with mprof__commit(). Only the owning thread writes its blocks; the collector reads
 * up to the published cursor. Any module that adds an event (memory, locks, fibers, GPU) writes
 * it this way and never touches another thread's buffer.
 */
#ifndef MPROF_CORE_H
#define MPROF_CORE_H

#include "mprof/mprof.h"
#include "format/format.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define MPROF__BLOCK_BYTES (64u * 1024u)

enum { MPROF__MODE_OFF = 0, MPROF__MODE_IDLE = 1 /* started, not recording */ };

typedef struct mprof__block {
    struct mprof__block *_Atomic next; /* set (release) by the owner when the block is full */
    struct mprof__block *free_next;    /* link in the owner's free list */
    unsigned char *_Atomic final_end;  /* where the data ends, set before next */
    size_t size;
    unsigned char data[];
} mprof__block;

/* One per thread that ever recorded; heap-allocated (64-byte aligned), freed by the collector
 * after the thread has exited and its blocks are drained. mprof__tls points at tb.
 *
 * The fields are grouped by who writes them, one cache line per group: the owner writes its
 * cursor on every event, and the collector writes its translation state on every event it
 * translates, so sharing a line would bounce it between the two cores while a drain runs (see
 * docs/OVERHEAD.md). */
#define MPROF__CACHE_LINE 64
typedef struct mprof__thread {
    /* Owner's line: the cursor (read, not written, by the collector) and owner-only state. */
    _Alignas(MPROF__CACHE_LINE) mprof__tbuf tb; /* must stay first */
    mprof__block *first;           /* owner: current block (tail) */
    mprof__block *spare;           /* owner: blocks taken from returned */
    uint64_t lost;                 /* owner: events dropped since the last LOST record */
    uint32_t idx;                  /* 1-based thread index in the capture (set once) */
    uint64_t os_tid;               /* set once */
    /* Collector's line. */
    _Alignas(MPROF__CACHE_LINE) mprof__block *_Atomic head; /* oldest undrained block */
    unsigned char *col_pos;        /* collector: drained up to here in head */
    uint64_t col_last_ticks;       /* collector: previous TS in the current chunk */
    uint32_t col_chunk_seq;        /* collector: chunk in which last_ticks is valid */
    int col_named;                 /* collector: DEF_THREAD sent in this session */
    int col_ts_first;              /* collector: the next TS is the thread's first in the chunk */
    uint32_t col_leaf_loc;         /* collector: the chunk's ZONE_LEAF_LOC for it, 0 = none */
    struct mprof__thread *next;    /* registry list, under mprof__g.threads_lock */
    /* Shared line, written rarely: drained blocks go back to their thread (already paged in, so
     * refilling costs no page faults): the collector pushes onto returned, the owner takes the
     * whole list at once. */
    _Alignas(MPROF__CACHE_LINE) mprof__block *_Atomic returned;
    _Atomic uint32_t n_returned;
    _Atomic int exited;
} mprof__thread;

/* Global state. One instance: mprof__g. */
typedef struct mprof__globals {
    pthread_mutex_t lock;          /* startup/shutdown, sink changes */
    pthread_mutex_t threads_lock;  /* the threads list */
    mprof__thread *threads;
    uint32_t next_thread_idx;
    mprof_config cfg;              /* effective config (defaults and env applied) */
    _Atomic uint64_t buffered_bytes;
    _Atomic uint64_t peak_buffered_bytes;
    _Atomic uint64_t events_lost;
    _Atomic uint64_t events_recorded;
    _Atomic uint64_t bytes_raw;
    _Atomic uint64_t bytes_written;
    _Atomic uint64_t chunks_written;
    _Atomic uint32_t sessions_dropped;
    _Atomic uint64_t gpu_queries_lost;
    _Atomic uint64_t blocks_allocated; /* thread blocks malloc'd (not recycled), for tests */
    _Atomic uint64_t frames_marked; /* MPROF_FRAME_MARK() calls, recording or not (automation) */
    _Atomic uint32_t session;      /* bumps on every startup */
    int atexit_registered;
    /* timer calibration */
    double ns_per_tick;
    uint64_t tick_quantum;         /* every counter step is a multiple of this (1 = none seen) */
    uint64_t tick0;                /* ticks at startup */
    uint64_t mono0_ns;             /* CLOCK_MONOTONIC at tick0 */
    uint64_t real0_ns;             /* CLOCK_REALTIME at tick0 */
    const char *timer_name;        /* "tsc", "cntvct" or "clock" */
    double zone_cost_ns;           /* an empty zone's cost, measured at start-up (timer.c) */
} mprof__globals;

extern mprof__globals mprof__g;
extern mprof__tbuf mprof__dummy_tbuf;

/* Timer (timer.c). */
/* check: MPROF_TOGGLE_DEFAULT/ON check the counter, OFF trusts it, MPROF__FORCE_OS_CLOCK uses
 * the OS clock (env MPROF_TIMER=clock). */
#define MPROF__FORCE_OS_CLOCK ((mprof_toggle)99)
void mprof__timer_init(mprof_toggle check, bool verbose);
uint64_t mprof__ticks_to_ns(uint64_t ticks); /* ns since tick0 */

/* Thread buffers (profiler.c). */
mprof__thread *mprof__thread_get(void); /* registers the calling thread when needed; NULL when
                                           not recording */
/* Reserves n raw bytes in the calling thread's buffer. NULL when not recording or when the
 * memory cap is reached (then the event is counted as lost). n <= MPROF__BLOCK_BYTES / 2. */
unsigned char *mprof__reserve(size_t n);
/* Gives a drained block (not counted as buffered any more) to any thread's next refill, or frees
 * it when 256 are waiting already. Lock-free; called by the collector. */
void mprof__block_recycle(mprof__block *b);
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

/* Collector (collector.c). */
int mprof__collector_start(void);   /* after the sink is open */
void mprof__collector_stop(void);   /* drains everything, writes END, joins */
void mprof__collector_flush(void);  /* drains and writes everything now */
/* Hands n_records raw records (the raw form of format.h, absolute tick timestamps) that belong
 * to the process rather than to a thread (thread 0: system tracing's SYS_* records) to the
 * collector, which translates them on its next drain. For a background thread that is not
 * instrumented; takes a lock, never the hot path. Returns 0, or -1 when not recording or past
 * the 16 MiB cap (the records are dropped; past the cap they count as lost events). */
int mprof__collector_process_records(const unsigned char *raw, size_t len, uint64_t n_records);

/* Sinks: see sink.h (the collector hands chunks to the file and live sinks). */

/* Platform (platform/platform_posix.c). */
uint64_t mprof__os_tid(void);
uint64_t mprof__mono_ns(void);
uint64_t mprof__real_ns(void);
int mprof__mkdirs_for(const char *path); /* creates the parent directories of path */
/* Page-aligned memory populated up front (huge pages where the kernel allows): for large
 * buffers written right away and kept, whose page faults would cost more than the data. NULL
 * when out of memory. Free with the same size. */
void *mprof__pages_alloc(size_t bytes);
void mprof__pages_free(void *p, size_t bytes);
const char *mprof__program_name(void);
void mprof__set_os_thread_name(const char *name);

/* Logs a line on stderr: "mprof: ..." (used rarely, never on the hot path). */
void mprof__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
