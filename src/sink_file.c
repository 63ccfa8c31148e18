/*
 * sink_file.c - the capture file sink: the file header, then every chunk the collector hands
 * over, written in order with write(2) on the collector thread.
 *
 * A write error is logged once and ends the file (recording goes on for the other sinks); the
 * bytes written are counted in mprof__g.bytes_written.
 */
#include "sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct file_sink {
    mprof__sink base;
    int fd;
    int failed;
} file_sink;

static int write_bytes(file_sink *f, const void *data, size_t len)
{
    if (f->failed)
        return -1;
    const unsigned char *p = data;
    while (len) {
        ssize_t n = write(f->fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            mprof__log("writing the capture failed: %s; recording stops", strerror(errno));
            f->failed = 1;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        atomic_fetch_add(&mprof__g.bytes_written, (uint64_t)n);
    }
    return 0;
}

static void file_chunk(mprof__sink *s, const mprof__chunk *c)
{
    file_sink *f = (file_sink *)s;
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
