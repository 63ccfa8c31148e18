/*
 * index_out.c - the index file's writer (index_block.h, "Writing"): blocks compressed with zstd,
 * checksummed and appended at the file's end, by the caller or by a thread of the vout's own.
 *
 * zstd takes about a fifth of an index build's CPU, all of it on the thread of the pass, while
 * the capture's decoder threads wait for that pass. With a core to spare the arrays' blocks go
 * to one compressing thread through a short queue: one thread writing in the order the blocks
 * came keeps the file the same byte for byte, and the pass learns where a block went only when
 * it reads the block back or writes the directory (mprof__vab_resolve), which is rare.
 */
#define _POSIX_C_SOURCE 200809L /* pread */
#include "view/index_block.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

/* zstd's fastest levels keep the build one cheap pass; the columns already did most of the work. */
#define VIDX_ZLEVEL 1
/* Blocks handed over and not yet written, at most: a few MB of raw blocks, enough to ride out
 * the pass's bursts (a level finished, a tier closed) without holding memory that grows. */
#define VPIPE_QUEUE 16
/* The thread is woken when this many blocks wait, not at each one: a wake-up is a system call,
 * which costs this machine's kind of VM about what compressing a block saves. */
#define VPIPE_BATCH 6

typedef struct vjob {
    void *raw;
    size_t len;
} vjob;

struct vpipe {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work; /* the thread waits here for a block or the stop */
    pthread_cond_t done; /* the caller waits here for room or the drain */
    vjob q[VPIPE_QUEUE];
    /* q[head % N] .. q[tail % N] are waiting, the first one being written while the thread
     * holds it; a block's ticket is its place in that sequence (tail: the next). */
    uint64_t head, tail;
    vref *refs;          /* by ticket: where each written block went */
    uint64_t cap_refs;
    int asleep;          /* the thread waits on work */
    int failed;          /* a block could not be written: the build fails */
    int stop;
};

static int write_all(int fd, uint64_t *pos, const void *p, size_t n)
{
    const unsigned char *c = p;
    while (n) {
        ssize_t k = pwrite(fd, c, n, (off_t)*pos);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
        *pos += (uint64_t)k;
    }
    return 0;
}

static int put_plain(vout *o, const void *raw, size_t raw_len, vref *out)
{
    memset(out, 0, sizeof *out);
    out->off = o->pos;
    out->len = out->raw_len = (uint32_t)raw_len;
    out->csum = XXH3_64bits(raw, raw_len);
    return write_all(o->fd, &o->pos, raw, raw_len);
}

/* One block compressed and written at o->pos, by whichever thread owns the vout's writing at the
 * time (the caller's, or the pipe's while it has blocks). 0, or -1; sets nothing else. */
static int put_block(vout *o, const void *raw, size_t raw_len, vref *out)
{
    if (raw_len > UINT32_MAX)
        return -1;
    size_t bound = ZSTD_compressBound(raw_len);
    if (bound > o->zcap) {
        unsigned char *p = realloc(o->zbuf, bound);
        if (!p)
            return -1;
        o->zbuf = p;
        o->zcap = bound;
    }
    if (!o->zctx && !(o->zctx = ZSTD_createCCtx()))
        return -1;
    size_t z = ZSTD_compressCCtx(o->zctx, o->zbuf, o->zcap, raw, raw_len, VIDX_ZLEVEL);
    if (ZSTD_isError(z) || z >= raw_len)
        return put_plain(o, raw, raw_len, out); /* stored as it is: len == raw_len */
    memset(out, 0, sizeof *out);
    out->off = o->pos;
    out->len = (uint32_t)z;
    out->raw_len = (uint32_t)raw_len;
    out->csum = XXH3_64bits(o->zbuf, z);
    return write_all(o->fd, &o->pos, o->zbuf, z);
}

/* The pipe's thread. It owns o->pos, o->zctx and o->zbuf while it holds a block; the caller
 * touches them only with the queue drained (mprof__vout_drain), so the mutex orders the two. */
static void *pipe_main(void *arg)
{
    vout *o = arg;
    vpipe *p = o->pipe;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->head == p->tail && !p->stop) {
            p->asleep = 1;
            pthread_cond_wait(&p->work, &p->mu);
            p->asleep = 0;
        }
        if (p->head == p->tail)
            break;
        vjob j = p->q[p->head % VPIPE_QUEUE];
        int skip = p->failed || p->stop; /* a build stopped early keeps none of its blocks */
        pthread_mutex_unlock(&p->mu);
        vref at;
        int rc = skip ? -1 : put_block(o, j.raw, j.len, &at);
        free(j.raw);
        pthread_mutex_lock(&p->mu);
        if (rc != 0)
            p->failed = 1;
        else
            p->refs[p->head] = at;
        p->head++;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int mprof__vout_start(vout *o)
{
    if (o->pipe)
        return 0;
    vpipe *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return -1;
    }
    if (pthread_cond_init(&p->work, NULL) != 0 || pthread_cond_init(&p->done, NULL) != 0) {
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return -1;
    }
    o->pipe = p;
    if (pthread_create(&p->th, NULL, pipe_main, o) != 0) {
        o->pipe = NULL;
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return -1;
    }
    return 0;
}

int mprof__vout_drain(vout *o)
{
    vpipe *p = o->pipe;
    if (!p)
        return o->failed ? -1 : 0;
    pthread_mutex_lock(&p->mu);
    if (p->asleep && p->head != p->tail)
        pthread_cond_signal(&p->work);
    while (p->head != p->tail)
        pthread_cond_wait(&p->done, &p->mu);
    if (p->failed)
        o->failed = 1;
    pthread_mutex_unlock(&p->mu);
    return o->failed ? -1 : 0;
}

vref mprof__vout_ref(const vout *o, uint64_t ticket)
{
    return o->pipe->refs[ticket];
}

int mprof__vout_submit(vout *o, void *raw, size_t raw_len, vref *out)
{
    vpipe *p = o->pipe;
    if (o->failed || raw_len > UINT32_MAX) {
        free(raw);
        o->failed = 1;
        return -1;
    }
    if (!p) {
        int rc = put_block(o, raw, raw_len, out);
        free(raw);
        if (rc != 0)
            o->failed = 1;
        return rc;
    }
    pthread_mutex_lock(&p->mu);
    while (p->tail - p->head == VPIPE_QUEUE) {
        if (p->asleep)
            pthread_cond_signal(&p->work);
        pthread_cond_wait(&p->done, &p->mu);
    }
    int rc = p->failed ? -1 : 0;
    if (rc == 0 && p->tail == p->cap_refs) {
        uint64_t c = p->cap_refs ? p->cap_refs * 2 : 256;
        vref *r = realloc(p->refs, c * sizeof *r);
        if (r) {
            p->refs = r;
            p->cap_refs = c;
        } else
            rc = -1;
    }
    if (rc == 0) {
        memset(out, 0, sizeof *out);
        out->off = p->tail;
        p->q[p->tail % VPIPE_QUEUE] = (vjob){raw, raw_len};
        p->tail++;
        if (p->asleep && p->tail - p->head >= VPIPE_BATCH)
            pthread_cond_signal(&p->work);
    }
    pthread_mutex_unlock(&p->mu);
    if (rc != 0) {
        free(raw);
        o->failed = 1;
    }
    return rc;
}

int mprof__vout_plain(vout *o, const void *raw, size_t raw_len, vref *out)
{
    if (mprof__vout_drain(o) != 0 || raw_len > UINT32_MAX || put_plain(o, raw, raw_len, out) != 0) {
        o->failed = 1;
        return -1;
    }
    return 0;
}

int mprof__vout_block(vout *o, const void *raw, size_t raw_len, vref *out)
{
    if (mprof__vout_drain(o) != 0 || put_block(o, raw, raw_len, out) != 0) {
        o->failed = 1;
        return -1;
    }
    return 0;
}

int mprof__vout_copy(vout *o, int src_fd, const vref *at, vref *out)
{
    if (mprof__vout_drain(o) != 0)
        return -1;
    if (at->len > o->zcap) {
        unsigned char *p = realloc(o->zbuf, at->len);
        if (!p) {
            o->failed = 1;
            return -1;
        }
        o->zbuf = p;
        o->zcap = at->len;
    }
    vref to = *at;
    to.off = o->pos;
    if (pread(src_fd, o->zbuf, at->len, (off_t)at->off) != (ssize_t)at->len)
        return -1; /* the other file's failure, not this one's */
    if (write_all(o->fd, &o->pos, o->zbuf, at->len) != 0) {
        o->failed = 1;
        return -1;
    }
    *out = to;
    return 0;
}

void mprof__vout_free(vout *o)
{
    vpipe *p = o->pipe;
    if (p) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_signal(&p->work);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
        free(p->refs);
        free(p);
        o->pipe = NULL;
    }
    ZSTD_freeCCtx(o->zctx);
    free(o->zbuf);
    o->zctx = NULL;
    o->zbuf = NULL;
}
