/*
 * pb.c - the protocol-buffers encoder of pb.h: one growable buffer, nested messages closed by
 * writing their length in place.
 */
#include "export/pb.h"

#include <stdlib.h>

int mprof__pb_grow(mprof_pb *b, size_t n)
{
    if (b->oom)
        return -1;
    if (b->len + n <= b->cap)
        return 0;
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->len + n) {
        if (nc > SIZE_MAX / 2) {
            b->oom = 1;
            return -1;
        }
        nc *= 2;
    }
    unsigned char *p = realloc(b->p, nc);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = nc;
    return 0;
}

void mprof__pb_free(mprof_pb *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void mprof__pb_fixed64(mprof_pb *b, uint32_t field, uint64_t v)
{
    if (mprof__pb_reserve(b, 18) != 0)
        return;
    unsigned char *p = mprof__pb_put_varint(b->p + b->len, (uint64_t)field << 3 | 1);
    for (int i = 0; i < 8; i++)
        *p++ = (unsigned char)(v >> (8 * i));
    b->len = (size_t)(p - b->p);
}

void mprof__pb_double(mprof_pb *b, uint32_t field, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    mprof__pb_fixed64(b, field, u);
}

void mprof__pb_bytes(mprof_pb *b, uint32_t field, const void *data, size_t n)
{
    if (mprof__pb_reserve(b, n + 20) != 0)
        return;
    unsigned char *p = mprof__pb_put_varint(b->p + b->len, (uint64_t)field << 3 | 2);
    p = mprof__pb_put_varint(p, n);
    if (n)
        memcpy(p, data, n);
    b->len = (size_t)(p + n - b->p);
}

void mprof__pb_raw(mprof_pb *b, const void *data, size_t n)
{
    if (!n || mprof__pb_reserve(b, n) != 0)
        return;
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

/* mprof__pb_open that cannot open: too deep is an error like a failed growth (which set oom). */
void mprof__pb_open_failed(mprof_pb *b)
{
    if (b->depth >= MPROF_PB_MAX_DEPTH)
        b->oom = 1;
}

void mprof__pb_close_long(mprof_pb *b, size_t at, size_t body)
{
    unsigned char tmp[10];
    size_t n = (size_t)(mprof__pb_put_varint(tmp, body) - tmp);
    if (mprof__pb_reserve(b, n - 1) != 0)
        return;
    memmove(b->p + at + n, b->p + at + 1, body);
    b->len += n - 1;
    memcpy(b->p + at, tmp, n);
}
