/*
 * decode.h - the reader's private interface between reading chunks, decoding them and handing
 * out their batches (reader.c, decode.c, readpool.c).
 *
 * A job is one chunk as the file holds it, read in file order by one place (the reader's input
 * is a stream). Decoding a job fills segments: fixed-size arrays of records, runs, events and
 * callstack frames, cut into batches. A segment is the unit that travels between a worker and
 * the reader's caller; a batch is what the caller sees. Decoding needs nothing but the job, the
 * clock in effect when it was read and a table of per-thread timestamps of its own, so any
 * worker can decode any job; what needs the reader's tables (definitions, counts, the END
 * record's checks) is done by the caller as it takes the job's segments, in file order.
 */
#ifndef MPROF_DECODE_H
#define MPROF_DECODE_H

#include "format/batch.h"
#include "format/format.h"

#include <stdint.h>

/* Segment capacities: records (16 bytes), events (128 bytes), runs, callstack frames and
 * batches. A segment is about 1.3 MiB. */
#define MPROF__SEG_RECS 32768u
#define MPROF__SEG_EVS 4096u
#define MPROF__SEG_RUNS 4096u
#define MPROF__SEG_FRAMES 8192u
#define MPROF__SEG_BATCHES 512u
#define MPROF__MAX_STACK_FRAMES 256u

/* A key/value list (INFO and END chunks). */
typedef struct mprof__kv {
    char *key, *value;
} mprof__kv;
typedef struct mprof__kvlist {
    mprof__kv *items;
    size_t n, cap;
} mprof__kvlist;

/* One batch inside a segment: its slices of the segment's arrays. The first n_defs records are
 * definitions (their events are the first n_defs of the slice). */
typedef struct mprof__bdesc {
    uint32_t rec0, n_rec, run0, n_run, ev0, n_ev;
    uint32_t n_defs;
    uint32_t max_thread; /* the largest thread index its records use */
    uint64_t events;     /* events it stands for, filtered-out ones included (leaf = 2) */
    uint64_t counted;    /* of those, the ones mprof_event_counted counts */
    int64_t max_ts;      /* the latest ts_ns of those (0 for an event without a time) */
} mprof__bdesc;

enum {
    MPROF__JOB_EVENTS = 1, /* an EVENTS chunk: batches */
    MPROF__JOB_INFO,       /* an INFO chunk: kv */
    MPROF__JOB_END,        /* an END chunk: kv */
    MPROF__JOB_SKIP,       /* an optional chunk of an unknown kind */
    MPROF__JOB_EOF,        /* no more chunks (truncated_bytes: a cut-off one) */
    MPROF__JOB_FAIL        /* the chunk cannot be read (err) */
};

/* A chunk read from the input, and what the caller applies when it reaches it. */
typedef struct mprof__job {
    int kind;
    uint64_t seq;         /* jobs are numbered in file order from 1 */
    uint64_t offset;      /* file offset of the chunk */
    uint64_t chunk_no;    /* chunks before it (for messages) */
    uint64_t bytes_after; /* file offset after it */
    uint64_t truncated_bytes;
    unsigned char header[MPROF_FMT_CHUNK_HEADER_BYTES];
    int codec;
    uint32_t stored_len, raw_len;
    mprof_buf stored; /* the chunk's bytes as stored */
    double ns_per_tick;
    uint64_t tick0;
    mprof__kvlist kv;
    char err[256];
} mprof__job;

/* Per-thread timestamp state of the chunk being decoded; stamps say which chunk it is from. */
typedef struct mprof__dthread {
    uint64_t last_ticks;
    uint64_t ts_stamp;   /* last_ticks belongs to the chunk with this stamp */
    uint64_t leaf_stamp; /* leaf_loc likewise */
    uint32_t leaf_loc;
} mprof__dthread;

/* What one decoder (a worker, or the caller with jobs = 1) keeps between chunks. The events of
 * a chunk point into its payload, so a worker keeps two payloads and decodes into the one whose
 * segments have all come back (raw_busy); with jobs = 1 the caller is done with a chunk before it
 * reads the next, and one is enough. */
typedef struct mprof__decoder {
    mprof_buf raw[2];        /* decompressed payloads */
    int raw_busy[2];
    int raw_cur;             /* the payload of the chunk in progress */
    void *dctx;              /* ZSTD_DCtx */
    mprof__dthread *threads; /* indexed by thread index */
    uint32_t n_threads;
    /* the chunk in progress */
    const unsigned char *p, *end;
    uint64_t stamp;
    uint64_t offset;
    uint32_t cur_thread;
    uint64_t ts_scale;
    double ns_per_tick;
    uint64_t tick0;
    int64_t dt_lim; /* tick_ns needs no clamp for |ticks - tick0| below this */
    int active;
    /* A worker's decoder whose records and events the caller reads, on another core. It
     * writes them with streaming stores, past its own cache: an ordinary store to a line that
     * the reading core still holds first takes the line back from it, which made decoding on a
     * worker twice as slow as on the caller (a ring of 512 KiB blocks between two cores here:
     * 0.16 s a GiB with ordinary stores, 0.04 s with streaming ones). A worker that consumes
     * its own segments (readpool.c's consumer mode) writes them into its cache as usual. */
    int stream;
} mprof__decoder;

typedef struct mprof__segment {
    mprof_rec *rec;
    mprof_run *run;
    mprof_event *ev;
    uint64_t *frames;
    mprof__bdesc *b;
    uint32_t n_rec, n_run, n_ev, n_frames, n_b;
    /* The job it comes from, for the caller, who applies it when it takes the job's first
     * segment: its kind, where it ends, and its key/values (INFO, END; the segment owns them). */
    int first, last;
    int job_kind;
    uint64_t bytes_after, truncated_bytes;
    mprof__kvlist kv;
    uint64_t offset; /* the chunk's file offset (for messages) */
    int raw_slot;    /* the decoder payload its events point into */
    int failed; /* decoding stopped with err after the last batch */
    char err[256];
    int owner;  /* readpool: the worker whose segment it is */
    struct mprof__segment *next;
    /* The batches the first stage was handed, for the second (mprof_reader_each_batch_then);
     * MPROF__SEG_BATCHES of them, allocated at the first such read. */
    mprof_batch *handed;
    uint32_t n_handed;
} mprof__segment;

/* Allocates a segment's arrays. Returns 0, or -1 when out of memory. */
int mprof__segment_init(mprof__segment *s);
void mprof__segment_free(mprof__segment *s);

void mprof__decoder_free(mprof__decoder *d);

/* Starts decoding job (an EVENTS chunk): checks its checksum and decompresses it. Returns 0, or
 * -1 with the message in err (the job then yields no batch). */
int mprof__decoder_start(mprof__decoder *d, const mprof__job *job, char *err, size_t errlen);

/* Decodes the started chunk into s (emptied first) until s is full or the chunk ends. want: 256
 * flags, NULL for all. Sets s->last when the chunk is done and s->failed (with s->err) when it
 * is malformed. */
void mprof__decoder_fill(mprof__decoder *d, mprof__segment *s, const unsigned char *want);

/* Frees the strings and the array of a kv list. */
void mprof__kv_free(mprof__kvlist *l);

/* The key/values of process idx (0-based; a one-process capture's are the capture's), INFO or
 * END, for the merger (merge.c); NULL past the count. mprof__reader_capture_kv: the capture's
 * own INFO or END. Valid until the next read. */
enum { MPROF__KV_INFO = 0, MPROF__KV_END = 1 };
const mprof__kvlist *mprof__reader_kv(const mprof_reader *r, int which, uint32_t idx);
const mprof__kvlist *mprof__reader_capture_kv(const mprof_reader *r, int which);

typedef struct mprof__pool mprof__pool;

/* Reads the next chunk of r into job (reader.c). The read stage: one caller at a time. */
void mprof__read_job(mprof_reader *r, mprof__job *job);

/* Turns job into the segments that carry it: fills s with the job's first or next part.
 * Starts decoding an EVENTS job when first is set, and then moves the job's key/values to s.
 * want: as mprof__decoder_fill. */
void mprof__produce(mprof__decoder *d, mprof__job *job, int first, mprof__segment *s,
                    const unsigned char *want);

/* Worker threads that read, decode and hand back segments in file order (readpool.c). */
/* A consumer: takes a segment (the worker gives it back after, or queues it for then); 0 goes
 * on, any other value stops the pool with it. p is the pool that calls it (mprof__pool_drain). */
typedef int (*mprof__consume_fn)(void *ctx, mprof__pool *p, mprof__segment *s);
/* A second stage: takes each segment that went through fn, in file order, one at a time, while
 * fn goes on with later segments; the pool gives the segment back after it. */
typedef void (*mprof__then_fn)(void *ctx, mprof__segment *s);
/* fn NULL: the caller takes the segments (mprof__pool_take). Else the workers consume them, in
 * file order, each segment on the thread that decoded it, one at a time, until fn stops them;
 * the caller waits for that with mprof__pool_wait. then (consumer mode, may be NULL) runs on a
 * worker that has nothing else to do, or on the caller at the end. */
mprof__pool *mprof__pool_start(mprof_reader *r, int workers, const unsigned char *want,
                               mprof__consume_fn fn, mprof__then_fn then, void *ctx);
/* From fn, with the segment s it holds: runs then on every segment before s (or waits for the
 * thread that does), then on s itself, so that fn may change what then reads; then takes what
 * of s it has not had yet (reader.c keeps the batches fn was handed in s). */
void mprof__pool_drain(mprof__pool *p, mprof__segment *s);
/* Consumer mode: waits until fn stops the pool and the segments it took have been through then;
 * returns the value fn stopped with. */
int mprof__pool_wait(mprof__pool *p);
/* The next segment in file order; NULL when out of memory (never at the end: the last job is an
 * EOF or FAIL job). The caller gives each back before it takes the next. */
mprof__segment *mprof__pool_take(mprof__pool *p);
void mprof__pool_give_back(mprof__pool *p, mprof__segment *s);
void mprof__pool_stop(mprof__pool *p);

#endif
