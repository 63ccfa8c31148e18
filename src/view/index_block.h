/*
 * index_block.h - the blocks of the served viewer's index (index_file.h): how an array of
 * records is cut into checksummed, compressed blocks while the index is built, and how an
 * answer reads them back.
 *
 * Writing: a vout appends blocks to the index file as the one pass fills them (index_out.c), on
 * a thread of its own when the build has a core for it; a vab gathers one array's records (raw
 * records, or zones and runs, encoded column by column as they come) and hands each full block
 * to the vout, keeping only its directory entries.
 *
 * Reading: every answer has a vread, its own small cache of decoded blocks. A block is read with
 * pread (never mapped: a file cut under a running server is a short read, not a SIGBUS), checked
 * against its checksum and decoded; a block that fails sets the vread's error and reads as zeros,
 * so the answer is refused instead of served. Binary searches look at the directory's keys first
 * and decode one block.
 *
 * Threads: a vout, a vab and a vread belong to one thread (a vout's own compressing thread
 * apart); an opened index may be read by any number of vreads at once.
 */
#ifndef MPROF_VIEW_INDEX_BLOCK_H
#define MPROF_VIEW_INDEX_BLOCK_H

#include "view/index_file.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Set only by the index reader's fuzz target (fuzz/fuzz_view_index.c), so that its inputs reach
 * the decoders behind the checksums; never set otherwise. */
extern int mprof__vidx_fuzz_no_checksum;

/* ---- writing --------------------------------------------------------------------------------- */

typedef struct vpipe vpipe;

typedef struct vout {
    int fd;
    uint64_t pos;
    int failed; /* an I/O error or out of memory; the build fails */
    void *zctx; /* ZSTD_CCtx */
    unsigned char *zbuf;
    size_t zcap;
    vpipe *pipe; /* the thread that compresses and writes the arrays' blocks; NULL: the caller */
} vout;

/* Appends raw_len bytes of raw as one compressed block at the file's end; *out gets where. 0, or
 * -1 (o->failed is set). Blocks handed to the thread before are written first. */
int mprof__vout_block(vout *o, const void *raw, size_t raw_len, vref *out);
/* Appends raw_len bytes uncompressed (a block whose bytes are read as they are). 0, or -1. */
int mprof__vout_plain(vout *o, const void *raw, size_t raw_len, vref *out);
/* Compresses and writes the arrays' blocks on a thread of their own from now on, so that the
 * pass that fills them does not wait for zstd: for a build that has a core to spare. The file
 * is the same byte for byte (one thread writes the blocks in the order they came). 0, or -1
 * (the caller goes on writing them itself). */
int mprof__vout_start(vout *o);
/* Hands over raw (malloc'd; the vout frees it) as the next block. Without a thread it is written
 * at once and *out is where; with one, out->off is the block's ticket until mprof__vout_ref. 0,
 * or -1 (o->failed is set). */
int mprof__vout_submit(vout *o, void *raw, size_t raw_len, vref *out);
/* Waits until every block handed over is written. 0, or -1 (o->failed is set: the thread failed
 * to write one). */
int mprof__vout_drain(vout *o);
/* Where the block of a ticket went, once drained. */
vref mprof__vout_ref(const vout *o, uint64_t ticket);
/* Appends block at of the file src_fd as it is stored (a block written by another vout); *out
 * gets where, with the same sizes and checksum. 0, or -1: o->failed is set when this file could
 * not be written, not when src_fd could not be read. */
int mprof__vout_copy(vout *o, int src_fd, const vref *at, vref *out);
/* Stops the thread (after the blocks handed over) and frees the vout's buffers. */
void mprof__vout_free(vout *o);

/* A growable byte buffer. */
typedef struct vbuf {
    unsigned char *p;
    size_t n, cap;
} vbuf;

int mprof__vbuf_put(vbuf *b, const void *p, size_t n);
/* Room for n more bytes: 0, or -1 out of memory. */
int mprof__vbuf_room(vbuf *b, size_t n);

/* Appends v as a varint. Inline: the index writes five a zone. */
static inline int mprof__vbuf_var(vbuf *b, uint64_t v)
{
    if (b->n + 10 > b->cap && mprof__vbuf_room(b, 10) != 0)
        return -1;
    unsigned char *p = b->p + b->n;
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    b->n = (size_t)(p - b->p);
    return 0;
}

/* One array being built. Zero-initialised but for codec and rec (mprof__vab_init). */
typedef struct vab {
    uint32_t codec, rec;
    uint64_t n;      /* records pushed */
    vblk *blk;       /* the blocks written */
    uint64_t n_blk, cap_blk;
    uint64_t n_res;  /* blocks whose place is known: the others' at.off is a ticket (vout_submit) */
    /* The block being filled. */
    uint32_t pend;   /* its records */
    vblk cur;        /* its keys so far */
    vbuf col[5];     /* VC_ZONES, VC_RUNS: the columns; VC_RAW: col[0] holds the records */
    int64_t prev_e;  /* the previous zone's end (the gap's origin) */
    uint64_t run_first; /* VC_RUNS: the first zone of the block's first run */
} vab;

void mprof__vab_init(vab *a, uint32_t codec, uint32_t rec);
/* Appends a record of a raw array whose key (for binary search) is key. 0, or -1 (o->failed). */
int mprof__vab_push(vab *a, vout *o, const void *rec, int64_t key);
/* The same, with a duration whose maximum over the block the directory keeps (vblk.d_max). */
int mprof__vab_push_dur(vab *a, vout *o, const void *rec, int64_t key, int64_t dur);
/* Appends len bytes to a byte array (VC_RAW, rec 1). 0, or -1 (o->failed). */
int mprof__vab_bytes(vab *a, vout *o, const void *p, size_t len);
/* Appends a zone (VC_ZONES: flags are VZ_*) or a run (VC_RUNS: flags is its count, first its
 * first zone). Keys: the start; e >= s and 0 <= self <= e - s are the caller's to keep. */
int mprof__vab_zone(vab *a, vout *o, const vzone *z);
/* Writes the last, partial block and learns where every block went: the array's directory is
 * whole after it. 0, or -1. */
int mprof__vab_finish(vab *a, vout *o);
/* Learns where the blocks written so far went (before reading them back). 0, or -1. */
int mprof__vab_resolve(vab *a, vout *o);
void mprof__vab_free(vab *a);
/* The records held by a vab not yet finished, decoded (the pending block only). */
int mprof__vab_pending(const vab *a, vzone *out, uint32_t cap);

/* ---- decoding -------------------------------------------------------------------------------- */

/* Decodes the raw (decompressed) bytes of a block of n records of an array of codec and rec into
 * out (n * rec bytes); first: the block's first index. 0, or -1 when the bytes do not make n
 * records (a damaged block). */
int mprof__vblk_decode(uint32_t codec, uint32_t rec, const unsigned char *raw, size_t raw_len, uint32_t n,
                       uint64_t first, void *out);
/* The largest raw size a block of n records of rec bytes may have (larger is damage). */
size_t mprof__vblk_raw_max(uint32_t codec, uint32_t rec, uint32_t n);

/* ---- reading --------------------------------------------------------------------------------- */

#define VREAD_SLOTS 24

typedef struct vslot {
    const varr *a;
    uint64_t b;         /* block index within the array */
    unsigned char *data; /* decoded records */
    size_t cap;
    uint64_t used;      /* last use, for eviction */
} vslot;

typedef struct vread {
    const mprof_vindex *x;
    vslot slot[VREAD_SLOTS];
    int last;           /* the slot used last */
    uint64_t clock;
    unsigned char *raw; /* a block's stored and decompressed bytes */
    size_t raw_cap, zcap;
    unsigned char *zraw;
    void *dctx;         /* ZSTD_DCtx, made at the first compressed block: one per call would
                         * allocate (and fault in) its window each time */
    int err;            /* a block could not be read, failed its checksum or did not decode */
    char why[128];
} vread;

void mprof__vread_init(vread *r, const mprof_vindex *x);
void mprof__vread_free(vread *r);

/* The decoded records of block b of array a (b < a->n_blocks); NULL on error (r->err set). */
const void *mprof__vread_block(vread *r, const varr *a, uint64_t b);
/* Record i of array a (i < a->n); on error a record of zeros (r->err set). */
const void *mprof__vread_rec(vread *r, const varr *a, uint64_t i);
/* The block of a that holds record i. */
uint64_t mprof__varr_block_of(const mprof_vindex *x, const varr *a, uint64_t i);

/* Binary searches over records [lo, hi) of a, sorted by the int64_t at key_off: the first whose
 * key is at least t (after: greater than t); hi when none. by_end: the key is a zone's end,
 * searched through the directory's e_max. */
uint64_t mprof__vread_search(vread *r, const varr *a, size_t key_off, uint64_t lo, uint64_t hi, int64_t t,
                             int after, int by_end);

/* Copies n bytes at byte offset off of a byte array (rec 1) into out. 0, or -1 (r->err set). */
int mprof__vread_bytes(vread *r, const varr *a, uint64_t off, uint64_t n, void *out);

#endif
