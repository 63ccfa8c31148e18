/*
 * pb.h - a small protocol-buffers encoder: varints, fixed 64-bit and double fields, bytes, and
 * nested messages whose length is known only when they close.
 *
 * A nested message is opened with one byte reserved for its length; closing it writes the
 * length as a minimal varint, moving the body when the length needs more than one byte. Most
 * messages mprof writes are under 128 bytes, so the move is rare and the output is the same as
 * a two-pass encoder's. Only the wire format is encoded here: which field numbers mean what is
 * the business of the writer that uses it (perfetto.c).
 *
 * Out of memory is sticky: the first failed growth sets oom, later calls do nothing, and the
 * caller checks oom once at the end of its unit of work.
 */
#ifndef MPROF_EXPORT_PB_H
#define MPROF_EXPORT_PB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MPROF_PB_MAX_DEPTH 16

typedef struct mprof_pb {
    unsigned char *p;
    size_t len, cap;
    size_t open[MPROF_PB_MAX_DEPTH]; /* offset of each open message's length byte */
    int depth;
    int oom; /* growth failed, or a message was nested too deep */
} mprof_pb;

/* Room for n more bytes. 0, or -1 (oom set). Inline while there is room: a trace packet writes
 * a dozen fields, each of which asks. */
int mprof__pb_grow(mprof_pb *b, size_t n);
static inline int mprof__pb_reserve(mprof_pb *b, size_t n)
{
    if (__builtin_expect(!b->oom && b->len + n <= b->cap, 1))
        return 0;
    return mprof__pb_grow(b, n);
}
void mprof__pb_free(mprof_pb *b);

static inline unsigned char *mprof__pb_put_varint(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

/* Field with wire type 0 (uint32, uint64, int32 >= 0, bool, enum). */
static inline void mprof__pb_varint(mprof_pb *b, uint32_t field, uint64_t v)
{
    if (mprof__pb_reserve(b, 20) != 0)
        return;
    unsigned char *p = mprof__pb_put_varint(b->p + b->len, (uint64_t)field << 3);
    b->len = (size_t)(mprof__pb_put_varint(p, v) - b->p);
}

/* A signed int32/int64 field: negative values take ten bytes, as the format says. */
static inline void mprof__pb_int(mprof_pb *b, uint32_t field, int64_t v)
{
    mprof__pb_varint(b, field, (uint64_t)v);
}

/* Field with wire type 1: fixed64 or double. */
void mprof__pb_fixed64(mprof_pb *b, uint32_t field, uint64_t v);
void mprof__pb_double(mprof_pb *b, uint32_t field, double v);
/* Field with wire type 2: n bytes (a string or bytes field). */
void mprof__pb_bytes(mprof_pb *b, uint32_t field, const void *data, size_t n);
static inline void mprof__pb_str(mprof_pb *b, uint32_t field, const char *s)
{
    mprof__pb_bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}
/* Appends n bytes already encoded (fields written into another buffer). */
void mprof__pb_raw(mprof_pb *b, const void *data, size_t n);
/* Opens a nested message as field; every open needs its close. */
void mprof__pb_open_failed(mprof_pb *b);
static inline void mprof__pb_open(mprof_pb *b, uint32_t field)
{
    if (__builtin_expect(b->depth >= MPROF_PB_MAX_DEPTH || mprof__pb_reserve(b, 12) != 0, 0)) {
        mprof__pb_open_failed(b);
        return;
    }
    unsigned char *p = mprof__pb_put_varint(b->p + b->len, (uint64_t)field << 3 | 2);
    b->len = (size_t)(p - b->p);
    b->open[b->depth++] = b->len;
    b->p[b->len++] = 0; /* the length, one byte until the close knows better */
}
/* Closes the innermost open message: its length written in front of it, the body moved up when
 * the length needs more than the byte kept for it (a body of 128 bytes or more). */
void mprof__pb_close_long(mprof_pb *b, size_t at, size_t body);
static inline void mprof__pb_close(mprof_pb *b)
{
    if (b->oom || b->depth <= 0)
        return;
    size_t at = b->open[--b->depth];
    size_t body = b->len - at - 1;
    if (__builtin_expect(body < 0x80, 1))
        b->p[at] = (unsigned char)body;
    else
        mprof__pb_close_long(b, at, body);
}

#endif
