/*
 * index_spool.h - the spool of the index builder: records appended to many streams at once
 * (one per level, source location, plot series...) during the one pass over the capture, kept
 * in 4 KiB chunks of one temporary file, and copied contiguous, stream by stream, into the
 * index file at the end. The builder's memory holds one chunk per stream, whatever the capture's
 * size.
 *
 * Threads: the builder's one thread.
 */
#ifndef MPROF_VIEW_INDEX_SPOOL_H
#define MPROF_VIEW_INDEX_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CHUNK_BYTES 4096

/* A piece of a stream in the spool file. */
typedef struct chunk { uint64_t off; uint32_t len; } chunk;

/* Zero-initialised but for rec (and last, for a stream kept sorted): empty. */
typedef struct stream {
    uint32_t rec;           /* bytes per record */
    unsigned char *buf;     /* CHUNK_BYTES, allocated on first use */
    uint32_t used;
    chunk *chunks;
    size_t n_chunks, cap_chunks;
    uint64_t n;             /* records */
    int64_t last;           /* last start, for the order check */
    int unsorted;
    uint64_t out_off;       /* where it landed in the final file */
} stream;

/* The temporary file every stream of one build shares. */
typedef struct spool {
    FILE *f;       /* tmpfile(), owned by the builder */
    uint64_t size; /* bytes written to it */
} spool;

/* Appends len bytes of rec to s (records are counted by the caller in s->n). 0, or -1 when out
 * of memory or the spool cannot be written. */
int mprof__stream_put(spool *sp, stream *s, const void *rec, uint32_t len);
/* Copies the stream's chunks, in order, to out at its current end (*out_pos, 8-aligned first);
 * s->out_off gets where they start. 0, or -1 on an I/O error. */
int mprof__stream_copy(spool *sp, stream *s, FILE *out, uint64_t *out_pos);
/* Frees the stream's memory (not the stream itself). */
void mprof__stream_free(stream *s);

/* Writes n bytes of p to f and adds n to *pos. 0, or -1 on an I/O error. */
int mprof__file_put(FILE *f, const void *p, size_t n, uint64_t *pos);
/* Pads the file to a multiple of 8 bytes, so that the next array or table is aligned in the map. */
int mprof__file_align8(FILE *f, uint64_t *pos);

#endif
