/*
 * format.h - the .mprof capture format: constants, the event table, encoders and the reader.
 *
 * A capture is a 16-byte file header followed by chunks. Each chunk has a 24-byte header
 * (magic, kind, codec, lengths, checksum) and a payload that is usually one zstd frame, so a
 * file cut off at any byte is readable up to its last complete chunk. EVENTS chunks carry a
 * stream of records; each record is a one-byte tag followed by the fields the event table below
 * gives it. The same table describes the "raw" form that instrumented threads write into their
 * buffers (fixed-width fields, absolute timestamps, pointers) and the "compact" form that the
 * collector writes into chunks (varints, per-thread timestamp deltas, interned ids). One table,
 * so the library, the reader and the docs cannot disagree. docs/FORMAT.md is the specification.
 */
#ifndef MPROF_FORMAT_H
#define MPROF_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MPROF_FMT_MAGIC "MPROF\r\n\x1a"
#define MPROF_FMT_MAGIC_LEN 8
#define MPROF_FMT_VERSION_MAJOR 1
#define MPROF_FMT_VERSION_MINOR 6
#define MPROF_FMT_HEADER_BYTES 16
#define MPROF_FMT_CHUNK_MAGIC 0x4b43504du /* "MPCK" little-endian */
#define MPROF_FMT_CHUNK_HEADER_BYTES 24
#define MPROF_FMT_MAX_CHUNK_BYTES (64u << 20) /* readers refuse larger chunks */
#define MPROF_FMT_MAX_CALLSTACK 64

/* Chunk kinds. A reader that meets an unknown kind skips it when MPROF_CHUNK_F_OPTIONAL is set
 * and rejects the file otherwise. */
enum {
    MPROF_CHUNK_INFO = 1,   /* key/value strings: process, clock calibration, build */
    MPROF_CHUNK_EVENTS = 2, /* compact event records */
    MPROF_CHUNK_END = 3     /* key/value strings: final counters; marks a complete capture */
};
#define MPROF_CHUNK_F_OPTIONAL 0x0001u
/* An EVENTS chunk of process-context records and definitions only (docs/FORMAT.md "Process
 * chunks"); readers that do not know the flag read it as any other. */
#define MPROF_CHUNK_F_PROCESS 0x0002u
enum { MPROF_CODEC_NONE = 0, MPROF_CODEC_ZSTD = 1 };

/* Field kinds: raw width -> compact encoding. */
enum {
    MPROF_F_END = 0,
    MPROF_F_TS,   /* raw u64 ticks -> zigzag varint delta from the thread's previous TS */
    MPROF_F_LOC,  /* raw pointer to mprof_srcloc -> varint srcloc id (DEF_SRCLOC) */
    MPROF_F_NAME, /* raw pointer to a static string or NULL -> varint string id, 0 = NULL */
    MPROF_F_U8,   /* raw 1 byte -> 1 byte */
    MPROF_F_U32,  /* raw 4 bytes -> varint */
    MPROF_F_U64,  /* raw 8 bytes -> varint */
    MPROF_F_I64,  /* raw 8 bytes -> zigzag varint */
    MPROF_F_F64,  /* raw 8 bytes -> 8 bytes (IEEE-754 little-endian) */
    MPROF_F_PTR,  /* raw 8-byte address -> varint */
    MPROF_F_STR,  /* raw u16 length + bytes -> varint length + bytes */
    MPROF_F_CS    /* raw u8 depth + depth x 8-byte return addresses -> varint callstack id */
};
#define MPROF_MAX_FIELDS 6

/*
 * The event table: X(NAME, tag, field kinds...). Tags below 0x10 are written only by the
 * collector (definitions and context); the rest are written by instrumented threads.
 * Append new events; never renumber (a renumbering is a major format version).
 */
#define MPROF_EVENT_TABLE(X)                                                                       \
    X(THREAD, 0x01, MPROF_F_U32)                                                                   \
    X(DEF_SRCLOC, 0x02, MPROF_F_U32, MPROF_F_U32, MPROF_F_U32, MPROF_F_STR, MPROF_F_STR,           \
      MPROF_F_STR)                                                                                 \
    X(DEF_STRING, 0x03, MPROF_F_U32, MPROF_F_STR)                                                  \
    X(DEF_THREAD, 0x04, MPROF_F_U32, MPROF_F_U64)                                                  \
    X(DEF_CALLSTACK, 0x05, MPROF_F_U32, MPROF_F_U32) /* + that many varint addresses */            \
    X(LOST, 0x06, MPROF_F_TS, MPROF_F_U64)                                                         \
    X(CALIBRATION, 0x07, MPROF_F_TS, MPROF_F_U64)                                                  \
    X(DEF_MODULE, 0x08, MPROF_F_U64, MPROF_F_U64, MPROF_F_STR, MPROF_F_STR)                        \
    X(THREAD_EXIT, 0x09, MPROF_F_TS)                                                               \
    /* format 1.5: several processes in one capture (written by `mprof merge`): a process (index \
     * >= 1, pid, name, its INFO as a key/value payload), a thread's process, a process's END */ \
    X(DEF_PROCESS, 0x0a, MPROF_F_U32, MPROF_F_U64, MPROF_F_STR, MPROF_F_STR)                       \
    X(THREAD_PROCESS, 0x0b, MPROF_F_U32, MPROF_F_U32)                                              \
    X(PROCESS_END, 0x0c, MPROF_F_U32, MPROF_F_STR)                                                 \
    X(ZONE_BEGIN, 0x10, MPROF_F_TS, MPROF_F_LOC)                                                   \
    X(ZONE_END, 0x11, MPROF_F_TS)                                                                  \
    X(ZONE_TEXT, 0x12, MPROF_F_STR)                                                                \
    X(ZONE_NAME, 0x13, MPROF_F_STR)                                                                \
    X(ZONE_VALUE, 0x14, MPROF_F_U64)                                                               \
    X(FRAME_MARK, 0x18, MPROF_F_TS, MPROF_F_NAME)                                                  \
    X(FRAME_BEGIN, 0x19, MPROF_F_TS, MPROF_F_NAME)                                                 \
    X(FRAME_END, 0x1a, MPROF_F_TS, MPROF_F_NAME)                                                   \
    /* format 1.3: async spans, begun and ended on any threads: TS, the track's name, the        \
     * program's id of the span (unique in its track while open), the span's name */              \
    X(ASYNC_BEGIN, 0x1b, MPROF_F_TS, MPROF_F_NAME, MPROF_F_U64, MPROF_F_NAME)                     \
    X(ASYNC_BEGIN_DYN, 0x1c, MPROF_F_TS, MPROF_F_NAME, MPROF_F_U64, MPROF_F_STR)                  \
    X(ASYNC_END, 0x1d, MPROF_F_TS, MPROF_F_NAME, MPROF_F_U64)                                      \
    X(PLOT_F64, 0x20, MPROF_F_TS, MPROF_F_NAME, MPROF_F_F64)                                       \
    X(PLOT_I64, 0x21, MPROF_F_TS, MPROF_F_NAME, MPROF_F_I64)                                       \
    X(PLOT_CONFIG, 0x22, MPROF_F_NAME, MPROF_F_U8, MPROF_F_U8, MPROF_F_U32)                        \
    X(MESSAGE, 0x28, MPROF_F_TS, MPROF_F_U8, MPROF_F_STR)                                          \
    X(THREAD_NAME, 0x29, MPROF_F_STR)                                                              \
    X(APP_INFO, 0x2a, MPROF_F_STR)                                                                 \
    X(ALLOC, 0x30, MPROF_F_TS, MPROF_F_PTR, MPROF_F_U64, MPROF_F_NAME, MPROF_F_CS)                 \
    X(FREE, 0x31, MPROF_F_TS, MPROF_F_PTR, MPROF_F_NAME, MPROF_F_CS)                               \
    X(POOL_DISCARD, 0x32, MPROF_F_TS, MPROF_F_NAME)                                                \
    X(LOCK_ANNOUNCE, 0x38, MPROF_F_TS, MPROF_F_U32, MPROF_F_NAME, MPROF_F_U8, MPROF_F_LOC)         \
    X(LOCK_WAIT, 0x39, MPROF_F_TS, MPROF_F_U32, MPROF_F_U8)                                        \
    X(LOCK_OBTAINED, 0x3a, MPROF_F_TS, MPROF_F_U32, MPROF_F_U8)                                    \
    X(LOCK_RELEASED, 0x3b, MPROF_F_TS, MPROF_F_U32, MPROF_F_U8)                                    \
    X(LOCK_TRY_FAILED, 0x3c, MPROF_F_TS, MPROF_F_U32, MPROF_F_U8)                                  \
    X(FIBER_ENTER, 0x40, MPROF_F_TS, MPROF_F_NAME)                                                 \
    X(FIBER_LEAVE, 0x41, MPROF_F_TS)                                                               \
    X(GPU_CONTEXT, 0x48, MPROF_F_TS, MPROF_F_U32, MPROF_F_NAME, MPROF_F_U8, MPROF_F_F64)           \
    X(GPU_CALIBRATE, 0x49, MPROF_F_TS, MPROF_F_U32, MPROF_F_I64)                                   \
    X(GPU_ZONE_BEGIN, 0x4a, MPROF_F_TS, MPROF_F_U32, MPROF_F_U32, MPROF_F_LOC)                     \
    X(GPU_ZONE_END, 0x4b, MPROF_F_TS, MPROF_F_U32, MPROF_F_U32)                                    \
    X(GPU_TIME, 0x4c, MPROF_F_U32, MPROF_F_U32, MPROF_F_I64)                                       \
    /* System tracing (src/system/, format 1.1): process-context records (thread 0) about the    \
     * process's threads; the U64 is the OS thread id that DEF_THREAD gives a capture thread. */   \
    X(SYS_SWITCH, 0x50, MPROF_F_TS, MPROF_F_U64, MPROF_F_U8, MPROF_F_U8, MPROF_F_U32)              \
    X(SYS_THREAD, 0x51, MPROF_F_TS, MPROF_F_U64, MPROF_F_U8, MPROF_F_U8)                           \
    X(SYS_SAMPLE, 0x52, MPROF_F_TS, MPROF_F_U64, MPROF_F_CS)                                       \
    X(SYS_LOST, 0x53, MPROF_F_TS, MPROF_F_U64, MPROF_F_U64)                                       \
    X(SYS_CPU, 0x54, MPROF_F_TS, MPROF_F_F64, MPROF_F_F64)                                         \
    /* the sched tracepoints (root): who woke a thread, an OS thread's name, one CPU's usage */   \
    X(SYS_WAKE, 0x55, MPROF_F_TS, MPROF_F_U64, MPROF_F_U64, MPROF_F_U64, MPROF_F_U8, MPROF_F_U32)  \
    X(SYS_COMM, 0x56, MPROF_F_TS, MPROF_F_U64, MPROF_F_U64, MPROF_F_STR)                           \
    X(SYS_CPU_CORE, 0x57, MPROF_F_TS, MPROF_F_U32, MPROF_F_F64, MPROF_F_F64)                       \
    /* format 1.1: a frame's thumbnail (width, height, codec 1 = zstd of RGB888 rows) */          \
    X(FRAME_IMAGE, 0x58, MPROF_F_TS, MPROF_F_U32, MPROF_F_U32, MPROF_F_U8, MPROF_F_STR)            \
    /* 0x5c-0x5f: compaction (format 1.1). TS_SCALE applies to the rest of its chunk. */         \
    X(TS_SCALE, 0x5c, MPROF_F_U64)                                                                 \
    /* format 1.2: the location of the thread's ZONE_LEAF records (0x80-0xff) in this chunk */    \
    X(ZONE_LEAF_LOC, 0x5d, MPROF_F_LOC)

enum {
#define MPROF__EV_ENUM(name, tag, ...) MPROF_EV_##name = tag,
    MPROF_EVENT_TABLE(MPROF__EV_ENUM)
#undef MPROF__EV_ENUM
    MPROF_EV_MAX = 0x100
};

/* ZONE_LEAF (format 1.2): one byte for a zone without children, begun b and ended b + d clock
 * units (TS_SCALE) after the thread's previous timestamp, b 0..7, d 0..15, at the location the
 * thread's last ZONE_LEAF_LOC in the chunk set: tag = 0x80 | b << 4 | d. The reader returns it
 * as a ZONE_BEGIN and its ZONE_END, and counts two events. */
#define MPROF_EV_ZONE_LEAF 0x80
#define MPROF_LEAF_BEGIN_MAX 7u
#define MPROF_LEAF_DUR_MAX 15u
#define MPROF_EV_IS_LEAF(tag) ((tag) >= MPROF_EV_ZONE_LEAF && (tag) <= 0xff)

/* ZONE_LEAF_LONG (format 1.4): a zone without children too long for a ZONE_LEAF, begun b clock
 * units (0..31) after the thread's previous timestamp: tag = 0x60 | b, then a varint d, its
 * length in clock units, at the location of the thread's last ZONE_LEAF_LOC in the chunk. On a
 * counter without a step (clock units are ticks) it is how short zones are written; on one with
 * a step it takes the zones a ZONE_LEAF cannot. Read and counted as a ZONE_LEAF is. */
#define MPROF_EV_ZONE_LEAF_LONG 0x60
#define MPROF_LEAF_LONG_BEGIN_MAX 31u
#define MPROF_EV_IS_LEAF_LONG(tag) (((tag) & 0xe0) == MPROF_EV_ZONE_LEAF_LONG)

/* Tags 0x50-0x57 (system tracing) belong to the process context, thread 0; every other tag
 * from 0x10 up needs a thread context. */
#define MPROF_EV_IS_PROCESS(tag) ((tag) >= 0x50 && (tag) <= 0x57)

/* SYS_SWITCH direction and reason, SYS_THREAD kinds (docs/FORMAT.md). */
enum { MPROF_SYS_OUT = 0, MPROF_SYS_IN = 1 };
enum {
    MPROF_SYS_REASON_UNKNOWN = 0,
    MPROF_SYS_REASON_PREEMPTED = 1,
    MPROF_SYS_REASON_BLOCKED = 2, /* without the tracepoints: blocked or yielded */
    MPROF_SYS_REASON_YIELDED = 3, /* only from the tracepoints (sched_yield) */
    MPROF_SYS_REASON_MAX = 3
};
/* SYS_WAKE: the context the wake-up came from (the waker is the interrupted task unless 0). */
enum { MPROF_SYS_WAKE_TASK = 0, MPROF_SYS_WAKE_HARDIRQ = 1, MPROF_SYS_WAKE_SOFTIRQ = 2,
       MPROF_SYS_WAKE_NMI = 3, MPROF_SYS_WAKE_MAX = 3 };
enum { MPROF_SYS_TRACK_START = 1, MPROF_SYS_TRACK_END = 2 };

typedef struct mprof_event_desc {
    const char *name; /* "ZONE_BEGIN"; NULL for unused tags */
    uint8_t fields[MPROF_MAX_FIELDS + 1];
    uint8_t n_fields;
    uint8_t has_ts;     /* first field is TS */
    uint16_t raw_fixed; /* raw bytes of the record (tag included) without STR/CS payloads */
} mprof_event_desc;

/* The description of tag, or NULL for a tag the table does not define. Any thread. */
const mprof_event_desc *mprof_event_desc_get(int tag);

/* Whether a record counts as an event in the figures users read (`mprof capture`, `mprof
 * report`, END "events"): what the program recorded, not the stream's own structure (thread
 * switches, definitions, calibrations, modules, TS_SCALE). LOST and THREAD_EXIT count. */
static inline int mprof_event_counted(int tag)
{
    /* TS_SCALE and ZONE_LEAF_LOC are chunk encoding state, which the reader applies and never
     * returns. A ZONE_LEAF is returned, and counted, as the ZONE_BEGIN and ZONE_END it stands
     * for. */
    return (tag >= 0x10 && tag != MPROF_EV_TS_SCALE && tag != MPROF_EV_ZONE_LEAF_LOC) ||
           tag == MPROF_EV_LOST || tag == MPROF_EV_THREAD_EXIT;
}

/* ---- little helpers shared by encoders and decoders ---------------------------------------- */

typedef struct mprof_buf {
    unsigned char *data;
    size_t len, cap;
} mprof_buf;

/* Grows b to hold extra more bytes. Returns 0, or -1 when out of memory (b unchanged). */
int mprof_buf_reserve(mprof_buf *b, size_t extra);
void mprof_buf_free(mprof_buf *b);

/* Grows the zero-filled array *arr of *n elements of es bytes (doubling) so that index idx
 * exists. Returns 0, or -1 when idx >= limit or memory runs out (the array is unchanged).
 * Every table indexed by an id read from a capture grows through this one place. */
int mprof_grow_zeroed(void **arr, uint32_t *n, uint32_t idx, size_t es, uint32_t limit);

static inline unsigned char *mprof_put_varint(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}
/* Writes n bytes of s as a STR field is encoded (a varint length, then the bytes) at p, which
 * has room for n + 10 bytes. Returns the end. */
static inline unsigned char *mprof_put_str(unsigned char *p, const void *s, size_t n)
{
    p = mprof_put_varint(p, n);
    memcpy(p, s, n);
    return p + n;
}
static inline uint64_t mprof_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t mprof_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}
/* Reads a varint from [*p, end). Returns 0, or -1 when it runs past end or past 10 bytes. */
int mprof_get_varint(const unsigned char **p, const unsigned char *end, uint64_t *out);
/* Reads one encoded field of kind (MPROF_F_*) from [*p, end) and moves *p past it: U8 and F64
 * give their byte or their 8 bytes' bits, STR its length (the bytes are the *out before the new
 * *p), every other kind its varint as stored (TS and I64 still zigzagged). Returns 0, or -1 when
 * the field runs past end (*p unchanged). The reader and the live stream's scan read fields
 * through it. */
int mprof_get_field(const unsigned char **p, const unsigned char *end, int kind, uint64_t *out);

static inline void mprof_wr_u16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static inline void mprof_wr_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void mprof_wr_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint16_t mprof_rd_u16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t mprof_rd_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t mprof_rd_u64(const unsigned char *p)
{
    return (uint64_t)mprof_rd_u32(p) | ((uint64_t)mprof_rd_u32(p + 4) << 32);
}

/* ---- writer: file header and chunks ------------------------------------------------------- */

/* Writes the 16-byte file header into out. */
void mprof_fmt_file_header(unsigned char out[MPROF_FMT_HEADER_BYTES]);

/* Frames payload as a chunk of the given kind into out (appended): compresses with zstd at level
 * when level > 0 (keeping it stored if compression does not help), adds the header and checksum.
 * cctx is a ZSTD_CCtx* or NULL (one is created). Returns 0, or -1 on failure (out unchanged). */
int mprof_fmt_chunk(mprof_buf *out, int kind, const void *payload, size_t len, int level,
                    void *cctx);

/* The same with chunk flags (MPROF_CHUNK_F_OPTIONAL for a kind old readers may skip). */
int mprof_fmt_chunk_ex(mprof_buf *out, int kind, unsigned flags, const void *payload, size_t len,
                       int level, void *cctx);

/* Appends a key/value pair to an INFO/END payload. */
int mprof_fmt_kv(mprof_buf *b, const char *key, const char *value);

/* Validates a chunk header read from a stream: fills kind, codec, stored and raw lengths.
 * Returns NULL when valid, or a message saying what is wrong. */
const char *mprof_fmt_check_chunk_header(const unsigned char h[MPROF_FMT_CHUNK_HEADER_BYTES],
                                         int *kind, int *codec, uint32_t *stored_len,
                                         uint32_t *raw_len);

/* Checks a chunk's checksum against its payload: 0 when they match, -1 when not. */
int mprof_fmt_chunk_verify(const unsigned char h[MPROF_FMT_CHUNK_HEADER_BYTES],
                           const void *payload, size_t stored_len);

/* ---- reader -------------------------------------------------------------------------------- */

typedef struct mprof_srcloc_def {
    const char *name, *function, *file;
    uint32_t line, color;
} mprof_srcloc_def;

typedef struct mprof_thread_def {
    uint64_t os_tid;
    char *name; /* NULL until named */
    int exited;
    uint32_t process; /* its process (mprof_reader_process): 0-based, 0 in a one-process capture */
} mprof_thread_def;

/* A process of the capture (format 1.5). A capture without DEF_PROCESS records has exactly one,
 * made from INFO (`pid`, `app`) and END (`events`, `events_lost`); a merged capture (`mprof
 * merge`, `mprof capture -p A -p B`) has one per DEF_PROCESS, in index order. */
typedef struct mprof_process_def {
    uint64_t pid;
    const char *name;     /* never NULL ("" when unknown) */
    const char *ended_by; /* NULL while unknown or complete; else why its part ended early
                             ("connection-lost", "cut-off", ...) */
    uint64_t events, events_lost; /* its END's counts when known (0 before) */
} mprof_process_def;

/* A decoded event. Timestamps are nanoseconds since the capture's start. Fields appear in the
 * order of the event table, TS excluded: integers, ids and F64 (bit pattern) in u[], the string
 * (STR) in str/str_len, valid until the next call to mprof_reader_next. */
typedef struct mprof_event {
    int type;
    uint32_t thread; /* thread index (mprof_reader_thread) */
    int64_t ts_ns;   /* 0 when the event has no TS field */
    uint64_t u[MPROF_MAX_FIELDS];
    const char *str; /* the first STR field (not NUL-terminated) */
    uint32_t str_len;
    const char *strs[3]; /* every STR field in order (DEF_SRCLOC has three) */
    uint32_t str_lens[3];
    const uint64_t *frames; /* DEF_CALLSTACK: the addresses, u[1] of them */
} mprof_event;

static inline double mprof_event_f64(const mprof_event *e, int i)
{
    double d;
    memcpy(&d, &e->u[i], sizeof d);
    return d;
}

typedef struct mprof_reader mprof_reader;

/* Opens a capture file. Returns NULL on failure with a message in err (file name included). */
mprof_reader *mprof_reader_open(const char *path, char *err, size_t errlen);
/* Reads a capture held in memory (the data must outlive the reader). */
mprof_reader *mprof_reader_open_mem(const void *data, size_t len, char *err, size_t errlen);
void mprof_reader_close(mprof_reader *r);

/* Next event: 1 = *ev filled, 0 = end of capture, -1 = error (mprof_reader_error). Definition
 * events (DEF_*, THREAD) are applied to the reader's tables and also returned. */
int mprof_reader_next(mprof_reader *r, mprof_event *ev);
const char *mprof_reader_error(const mprof_reader *r);

/* Value of an INFO key, or NULL. */
const char *mprof_reader_info(const mprof_reader *r, const char *key);
/* Value of an END key, or NULL (NULL also when the capture has no END chunk yet). */
const char *mprof_reader_end_info(const mprof_reader *r, const char *key);

const mprof_srcloc_def *mprof_reader_srcloc(const mprof_reader *r, uint32_t id);
uint32_t mprof_reader_srcloc_count(const mprof_reader *r);
const char *mprof_reader_string(const mprof_reader *r, uint32_t id); /* NULL for 0/unknown */
const mprof_thread_def *mprof_reader_thread(const mprof_reader *r, uint32_t idx);
uint32_t mprof_reader_thread_count(const mprof_reader *r);
/* The processes of the capture (at least 1), and the idx-th of them (0-based; NULL past the
 * count). A merged capture defines them all before any thread's events, so the count is final
 * once the first batch is read; ended_by and the counts come with PROCESS_END, at the end of the
 * process's part. Valid until the next read (a later DEF_PROCESS may move it) or the close; the
 * caller's thread, like every reader call. */
uint32_t mprof_reader_process_count(const mprof_reader *r);
const mprof_process_def *mprof_reader_process(const mprof_reader *r, uint32_t idx);
/* The value of key in the INFO of process idx (a one-process capture: the capture's INFO), or
 * NULL. */
const char *mprof_reader_process_info(const mprof_reader *r, uint32_t idx, const char *key);
/* Addresses of callstack id (NULL when unknown); *n gets the depth. */
const uint64_t *mprof_reader_callstack(const mprof_reader *r, uint32_t id, uint32_t *n);

/* How a capture ended, from its END record (or its absence). Only MPROF_ENDING_CLEAN with no
 * chunk or event missing is a whole capture. */
typedef enum mprof_ending {
    MPROF_ENDING_CUT = 0,   /* no END record: cut off (a killed process or tool, or still being
                               written) */
    MPROF_ENDING_CLEAN,     /* the process's own END: closed cleanly */
    MPROF_ENDING_PEER_LOST, /* END written by mprof capture: the process vanished or never sent
                               its END (killed, crashed, hung) */
    MPROF_ENDING_CORRUPT,   /* END written by mprof capture after a corrupt stream */
    MPROF_ENDING_DISK_FULL, /* END written after writing failed (the disk filled up): what
                               follows the failure was not written (END's *_not_written keys) */
    MPROF_ENDING_WRITE_ERROR /* END written after another write error */
} mprof_ending;
/* A word for the ending ("clean", "cut-off", "peer-lost", "corrupt-stream", "disk-full",
 * "write-error"), and a sentence saying what it means. Any thread. */
const char *mprof_ending_name(int ending);
const char *mprof_ending_text(int ending);

typedef struct mprof_reader_stats {
    uint64_t file_bytes;      /* size of the input */
    uint64_t bytes_read;      /* bytes of complete, valid chunks (header included) */
    uint64_t truncated_bytes; /* bytes after the last complete chunk (a cut-off file) */
    uint64_t chunks;
    uint64_t events;
    int complete;             /* the END chunk was seen (see ending for how it was written) */
    int ending;               /* mprof_ending */
    /* END states how many chunks and events came before it; these are what the file lacks
     * (0 when END has no count or nothing is missing): a chunk cut out of the middle. */
    uint64_t chunks_missing, events_missing;
} mprof_reader_stats;
void mprof_reader_get_stats(const mprof_reader *r, mprof_reader_stats *out);
/* True when the capture is whole: a clean END and nothing missing. */
int mprof_reader_stats_whole(const mprof_reader_stats *st);

/* Clock of the capture: nanoseconds per tick, from INFO. */
double mprof_reader_ns_per_tick(const mprof_reader *r);

#endif
