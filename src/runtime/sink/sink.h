/*
 * sink.h - where the collector's output goes.
 *
 * Data flows one way: instrumented threads write their buffers, the collector translates and
 * frames them into chunks, and hands every chunk to each sink it was given. A sink never calls
 * back into the collector; what it needs from the collector (a chunk boundary before a tool's
 * stream begins) it asks for through want_boundary, which the collector polls once per wake-up.
 *
 * Two sinks exist: the capture file (file.c) and live capture (live.c: the history ring and the
 * connected tool). lifecycle.c opens them and hands them to the collector at start; the
 * collector never names one. All hooks run on the collector thread, except open and close,
 * which run under the lifecycle lock while the collector thread is not running.
 *
 * What the capture says about the process (the INFO and END keys, the module map) comes from
 * contributors handed over the same way, as mprof__kv_fn lists.
 */
#ifndef MPROF_SINK_H
#define MPROF_SINK_H

#include "format/format.h"

typedef struct mprof__sink mprof__sink;

/* The unnamed frame marks an EVENTS chunk holds, which a live capture's END adds up into the main
 * frames (docs/FORMAT.md "Process chunks"): those of the session's main frame thread (the first
 * to make one; 0 before any), their first and last ticks, and how many other threads' unnamed
 * marks it holds (a file that has any may name another thread first: its END names none). */
typedef struct mprof__chunk_marks {
    uint32_t thread;
    uint64_t marks, first_ticks, last_ticks;
    uint64_t others;
} mprof__chunk_marks;

/* A chunk produced by the collector. framed(c) frames the payload on first use (compressed at
 * the configured level for EVENTS) and returns the framed bytes, or NULL when out of memory;
 * a sink that keeps only some chunks, or compresses them its own way, need not call it. */
typedef struct mprof__chunk {
    int kind;                 /* MPROF_CHUNK_INFO, _EVENTS or _END */
    const mprof_buf *raw;     /* the uncompressed payload */
    uint64_t events;          /* EVENTS: the events it holds (END's "events" counts the same) */
    unsigned flags;           /* EVENTS: MPROF_CHUNK_F_* (framed() writes them) */
    mprof__chunk_marks marks; /* EVENTS: its unnamed frame marks */
    const mprof_buf *(*framed)(const struct mprof__chunk *c);
    void *impl;               /* the collector's state for framed() */
} mprof__chunk;

typedef struct mprof__sink_ops {
    const char *name;
    /* Non-zero for a sink that stores a whole capture (the file): the collector then writes the
     * INFO chunk first and the END chunk last. Other sinks receive them too and may ignore them. */
    int whole_capture;
    /* A chunk, in order. */
    void (*chunk)(mprof__sink *s, const mprof__chunk *c);
    /* A definition record (DEF_SRCLOC, DEF_STRING, DEF_THREAD, DEF_CALLSTACK, DEF_MODULE) was
     * written into the current chunk: [rec, end) is its compact form, tag included. NULL: the
     * sink does not need definitions apart from the chunks. */
    void (*def)(mprof__sink *s, const unsigned char *rec, const unsigned char *end);
    /* Tags whose records the sink wants copied (keep) besides the chunk: a late tool must see
     * them (thread names, plot configs). NULL: none. */
    int (*keeps)(mprof__sink *s, int tag);
    void (*keep)(mprof__sink *s, uint32_t thread, uint64_t ticks, const unsigned char *rec,
                 const unsigned char *end);
    /* Non-zero when the sink needs the current chunk closed now; the collector then emits it
     * and calls boundary(). NULL: never. */
    int (*want_boundary)(mprof__sink *s);
    void (*boundary)(mprof__sink *s);
    /* After the last chunk (END included): flush, close and free. */
    void (*close)(mprof__sink *s);
} mprof__sink_ops;

struct mprof__sink {
    const mprof__sink_ops *ops;
};

/* The most sinks a session has at once (the file and live capture). */
#define MPROF__MAX_SINKS 2

/* A contributor to an INFO or END payload (or the module map): appends its part to out. */
typedef void (*mprof__kv_fn)(mprof_buf *out);

/* Contributors, called in order: their keys appear in that order. */
#define MPROF__MAX_KV 4
typedef struct mprof__kv_list {
    mprof__kv_fn fn[MPROF__MAX_KV];
    int n;
} mprof__kv_list;

static inline void mprof__kv_list_write(const mprof__kv_list *l, mprof_buf *out)
{
    for (int i = 0; i < l->n; i++)
        l->fn[i](out);
}

#endif
