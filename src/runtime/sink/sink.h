/*
 * sink.h - where the collector's output goes.
 *
 * Data flows one way: instrumented threads write their buffers, the collector translates and
 * frames them into chunks, and hands every chunk to each open sink. A sink never calls back
 * into the collector; what it needs from the collector (a chunk boundary before a tool's stream
 * begins) it asks for through want_boundary, which the collector polls once per wake-up.
 *
 * Two sinks exist: the capture file (sink_file.c) and live capture (live.c: the history ring
 * and the connected tool). All hooks run on the collector thread, except open/close, which run
 * under mprof__g.lock while the collector thread is not running.
 */
#ifndef MPROF_SINK_H
#define MPROF_SINK_H

#include "core.h"

typedef struct mprof__sink mprof__sink;

/* A chunk produced by the collector. framed(c) frames the payload on first use (compressed at
 * the configured level for EVENTS) and returns the framed bytes, or NULL when out of memory;
 * a sink that keeps only some chunks, or compresses them its own way, need not call it. */
typedef struct mprof__chunk {
    int kind;                 /* MPROF_CHUNK_INFO, _EVENTS or _END */
    const mprof_buf *raw;     /* the uncompressed payload */
    const mprof_buf *(*framed)(const struct mprof__chunk *c);
    void *impl;               /* the collector's state for framed() */
} mprof__chunk;

typedef struct mprof__sink_ops {
    const char *name;
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

/* The file sink: writes the header and then every chunk to path. NULL (logged) when the file
 * cannot be created. bytes_written and the write error go to mprof__g. */
mprof__sink *mprof__sink_file_open(const char *path);

/* The live sink (live.c): opens the listener when the config asks for it. has_file: a file
 * sink is open. *out_record: set to 1 when the process must record now (listening with a
 * history ring). NULL when not listening. */
mprof__sink *mprof__sink_live_open(int has_file, int *out_record);

/* The INFO key/value payload (process, clock calibration, build), appended to out (info.c). */
void mprof__info_payload(mprof_buf *out);
/* Appends one key/value pair to an INFO or END payload, the value formatted like printf. */
void mprof__kvf(mprof_buf *b, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
