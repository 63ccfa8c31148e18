/*
 * index_spool.c - the builder's spool of record streams (index_spool.h): one temporary file
 * shared by every stream, each stream a list of 4 KiB chunks in it, so that thousands of streams
 * grow at once in little memory and each lands contiguous in the index file.
 */
#define _POSIX_C_SOURCE 200809L /* pread */
#include "view/index_spool.h"
#include "util/grow.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Moves the stream's filled chunk to the spool file and notes where it went. */
static int stream_flush(spool *sp, stream *s)
{
    if (!s->used)
        return 0;
    if (MPROF_GROW(s->chunks, s->cap_chunks, s->n_chunks + 1, 8) != 0)
        return -1;
    if (fwrite(s->buf, 1, s->used, sp->f) != s->used)
        return -1;
    s->chunks[s->n_chunks++] = (chunk){sp->size, s->used};
    sp->size += s->used;
    s->used = 0;
    return 0;
}

int mprof__stream_put(spool *sp, stream *s, const void *rec, uint32_t len)
{
    const unsigned char *p = rec;
    while (len) {
        if (!s->buf && !(s->buf = malloc(CHUNK_BYTES)))
            return -1;
        uint32_t room = CHUNK_BYTES - s->used, k = len < room ? len : room;
        memcpy(s->buf + s->used, p, k);
        s->used += k;
        p += k;
        len -= k;
        if (s->used == CHUNK_BYTES && stream_flush(sp, s) != 0)
            return -1;
    }
    return 0;
}

void mprof__stream_free(stream *s)
{
    free(s->buf);
    free(s->chunks);
}

int mprof__file_put(FILE *f, const void *p, size_t n, uint64_t *pos)
{
    if (n && fwrite(p, 1, n, f) != n)
        return -1;
    *pos += n;
    return 0;
}

int mprof__file_align8(FILE *f, uint64_t *pos)
{
    static const unsigned char zero[8] = {0};
    return mprof__file_put(f, zero, (size_t)((8 - *pos % 8) % 8), pos);
}

int mprof__stream_copy(spool *sp, stream *s, FILE *out, uint64_t *out_pos)
{
    if (stream_flush(sp, s) != 0 || mprof__file_align8(out, out_pos) != 0)
        return -1;
    s->out_off = *out_pos;
    if (!s->n_chunks)
        return 0;
    if (fflush(sp->f) != 0)
        return -1;
    unsigned char tmp[CHUNK_BYTES];
    int fd = fileno(sp->f);
    for (size_t i = 0; i < s->n_chunks; i++) {
        if (pread(fd, tmp, s->chunks[i].len, (off_t)s->chunks[i].off) != (ssize_t)s->chunks[i].len)
            return -1;
        if (fwrite(tmp, 1, s->chunks[i].len, out) != s->chunks[i].len)
            return -1;
        *out_pos += s->chunks[i].len;
    }
    return 0;
}
