/*
 * file.c - the capture file sink: the file header, then every chunk the collector hands
 * over, written in order with write(2) on the collector thread.
 *
 * A write error (a full disk, a size limit) is logged once and ends the file (recording goes on
 * for the other sinks); the chunks that could not be written are counted. When END arrives after
 * a failure, the file is cut back to its last whole chunk and END is written there with
 * ended_by=disk-full|write-error, the error and the counts of what was not written, giving back
 * whole chunks (up to six) until it fits; the reader compares END's chunk and event counts with
 * what the file holds, so the report says what is missing. The bytes written are counted in
 * mprof__stats.bytes_written.
 */
#include "file.h"
#include "info.h"
#include "platform/platform.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_ENDS 8 /* file offsets kept after the last whole writes */

typedef struct file_sink {
    mprof__sink base;
    int fd;
    int failed;
    int err; /* errno of the failed write (ENOSPC: the disk is full) */
    /* File offsets just after the last few whole writes (header, chunks), newest last, so a
     * failed write can be cut back to a chunk boundary and END written after it. */
    uint64_t ends[N_ENDS];
    uint64_t n_writes;
    uint64_t unwritten_chunks, unwritten_bytes; /* chunks refused, with their bytes */
} file_sink;

static int write_bytes(file_sink *f, const void *data, size_t len)
{
    if (f->failed) {
        f->unwritten_chunks++;
        f->unwritten_bytes += len;
        return -1;
    }
    const unsigned char *p = data;
    size_t whole = len;
    while (len) {
        ssize_t n = write(f->fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            /* Logged once: the retries of recover() fail quietly. */
            if (!f->err) {
                f->err = e;
                mprof__log("writing the capture failed: %s; recording stops (the capture's end "
                           "record says so and counts what was not written)",
                           e == ENOSPC || e == EDQUOT ? "the disk is full" : strerror(e));
            }
            f->failed = 1;
            f->unwritten_chunks++;
            f->unwritten_bytes += whole;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        atomic_fetch_add(&mprof__stats.bytes_written, (uint64_t)n);
    }
    uint64_t prev = f->n_writes ? f->ends[(f->n_writes - 1) % N_ENDS] : 0;
    f->ends[f->n_writes++ % N_ENDS] = prev + whole;
    return 0;
}

/* After a failed write: cuts the file back to its last whole chunk and writes END there (base:
 * the collector's END payload, to which the not-written counts are added), giving back whole
 * chunks (counted as not written) until it fits; the file header and INFO (the first two
 * writes) are kept. 0 when END was written. */
static int recover(file_sink *f, const mprof_buf *base)
{
    int full = f->err == ENOSPC || f->err == EDQUOT;
    int rc = -1;
    mprof_buf b = {0}, framed = {0};
    for (int drop = 0; f->n_writes >= 2; drop++) {
        uint64_t at = f->ends[(f->n_writes - 1) % N_ENDS];
        if (ftruncate(f->fd, (off_t)at) != 0 || lseek(f->fd, (off_t)at, SEEK_SET) < 0)
            break;
        b.len = 0;
        if (mprof_buf_reserve(&b, base->len) != 0)
            break;
        memcpy(b.data, base->data, base->len);
        b.len = base->len;
        mprof__kvf(&b, "ended_by", "%s", full ? "disk-full" : "write-error");
        mprof__kvf(&b, "write_error", "%s", strerror(f->err));
        mprof__kvf(&b, "chunks_not_written", "%" PRIu64, f->unwritten_chunks);
        mprof__kvf(&b, "bytes_not_written", "%" PRIu64, f->unwritten_bytes);
        framed.len = 0;
        if (mprof_fmt_chunk(&framed, MPROF_CHUNK_END, b.data, b.len, 0, NULL) != 0)
            break;
        f->failed = 0;
        if (write_bytes(f, framed.data, framed.len) == 0) {
            rc = 0;
            break;
        }
        f->unwritten_chunks--; /* END is not one of the capture's chunks */
        f->unwritten_bytes -= framed.len;
        /* Not even END fits: give back the last whole chunk (never INFO) to make room; the
         * ring of boundaries allows six of them. */
        if (drop == N_ENDS - 2 || f->n_writes <= 2)
            break;
        f->unwritten_chunks++;
        f->unwritten_bytes += at - f->ends[(f->n_writes - 2) % N_ENDS];
        f->n_writes--;
    }
    if (rc != 0 && f->n_writes)
        (void)!ftruncate(f->fd, (off_t)f->ends[(f->n_writes - 1) % N_ENDS]);
    mprof_buf_free(&b);
    mprof_buf_free(&framed);
    return rc;
}

static void file_chunk(mprof__sink *s, const mprof__chunk *c)
{
    file_sink *f = (file_sink *)s;
    if (c->kind == MPROF_CHUNK_END && f->failed) {
        if (recover(f, c->raw) != 0)
            mprof__log("the capture's end record could not be written either: the file reads "
                       "as cut off");
        return;
    }
    const mprof_buf *fr = c->framed(c);
    if (fr)
        write_bytes(f, fr->data, fr->len);
}

static void file_close(mprof__sink *s)
{
    file_sink *f = (file_sink *)s;
    if (close(f->fd) != 0)
        mprof__log("closing the capture failed: %s", strerror(errno));
    free(f);
}

static const mprof__sink_ops file_ops = {
    .name = "file",
    .whole_capture = 1,
    .chunk = file_chunk,
    .close = file_close,
};

mprof__sink *mprof__sink_file_open(const char *path)
{
    if (mprof__mkdirs_for(path) != 0) {
        mprof__log("cannot create the directories for %s: %s", path, strerror(errno));
        return NULL;
    }
    file_sink *f = calloc(1, sizeof *f);
    if (!f) {
        mprof__log("cannot open %s: out of memory", path);
        return NULL;
    }
    f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        mprof__log("cannot open %s: %s", path, strerror(errno));
        free(f);
        return NULL;
    }
    f->base.ops = &file_ops;
    unsigned char h[MPROF_FMT_HEADER_BYTES];
    mprof_fmt_file_header(h);
    write_bytes(f, h, sizeof h);
    return &f->base;
}
