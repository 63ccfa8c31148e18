/*
 * reader.c - reads a capture, chunk by chunk, and decodes its events.
 *
 * The reader holds one decompressed chunk at a time, so memory does not grow with the capture.
 * Definitions (source locations, strings, threads, callstacks) accumulate in tables. Every
 * length and id from the file is checked before use: a bad file yields an error message naming
 * the chunk and offset, never a crash or an out-of-bounds read. A file cut off mid-chunk is
 * read up to its last complete chunk and the lost bytes are reported in the stats.
 *
 * A cut-off is believed only when nothing says otherwise: a chunk whose length runs past the end
 * of the file is an error when its checksum matches the bytes that are there at a length one bit
 * away (a flipped bit in the length field), or when a whole, valid chunk follows inside what it
 * claims. The END record's chunk and event counts are checked against what was read, so a chunk
 * cut out of the middle is reported as missing, and its ended_by / end_written_by keys say how
 * the capture ended (mprof_ending).
 */
#include "format/decode.h"
#include "format/format.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#define MAX_IDS (1u << 24)
/* Writers number definitions 1, 2, 3... in file order. An id far beyond the largest seen so
 * far is corruption; refusing it keeps a bad file from making the reader allocate gigabytes. */
#define MAX_ID_JUMP 65536u

static int id_ok(uint32_t id, uint32_t *max_seen)
{
    if (id == 0 || id > *max_seen + MAX_ID_JUMP)
        return 0;
    if (id > *max_seen)
        *max_seen = id;
    return 1;
}
#define MAX_THREADS (1u << 20)

typedef struct callstack {
    uint64_t *frames;
    uint32_t n;
} callstack;

/* A process of a merged capture (format 1.5): its definition, INFO and END key/values. */
typedef struct proc {
    mprof_process_def def;
    char *name;
    mprof__kvlist info, end;
} proc;
#define MAX_PROCESSES 65536u

struct mprof_reader {
    /* The read stage: the input, read one chunk at a time in file order (by the caller, or by
     * the worker that holds the pool's lock). */
    FILE *f;
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    uint64_t offset;    /* file offset of the next unread byte */
    uint64_t rd_chunks; /* chunks read */
    uint64_t rd_seq;    /* jobs made */
    int rd_done;        /* the input is at its end or broken */
    char *rd_npt, *rd_tick0; /* the clock keys of the INFO chunks read so far (last wins) */
    double rd_ns_per_tick;
    uint64_t rd_tick0_v;
    mprof_buf rd_raw; /* INFO and END payloads */

    /* The caller's side: what the jobs handed out so far have made. */
    mprof_reader_stats st;
    int done, failed;
    char err[256];
    mprof__kvlist info, end;
    double ns_per_tick;
    mprof_srcloc_def *locs;
    uint32_t n_locs;
    char **strings;
    uint32_t n_strings;
    mprof_thread_def *threads;
    uint32_t n_threads;
    callstack *stacks;
    uint32_t n_stacks;
    uint32_t max_loc, max_str, max_stack; /* largest definition ids seen */
    /* Processes: procs[1..max_proc] from DEF_PROCESS (procs[0] unused); without them, single
     * stands for the one process, made from INFO and END as they arrive. */
    proc *procs;
    uint32_t n_procs, max_proc;
    mprof_process_def single;
    uint64_t thread_events; /* events as mprof_event_counted counts them (END's "events") */

    /* Decoding: on the caller's thread (jobs 1) or in a pool of workers. */
    int jobs, started;
    unsigned char want[MPROF_EV_MAX];
    int want_some; /* want is in force */
    int process_only;           /* EVENTS chunks without MPROF_CHUNK_F_PROCESS are skipped */
    uint64_t process_chunks;    /* process chunks read (process_only) */
    mprof__job first_job; /* the job read at open, not yet handed out */
    int have_first;
    mprof__job job;       /* jobs 1: the job being decoded */
    mprof__decoder dec;
    mprof__segment seg;
    int seg_ready;        /* jobs 1: seg is allocated */
    mprof__pool *pool;
    mprof__segment *cur;  /* the segment being handed out, NULL between segments */
    uint32_t cur_b;       /* its next batch */
    int cur_truncated;    /* a definition of the current batch failed: fail after it */

    /* mprof_reader_next: the batch it walks */
    mprof_batch lb;
    uint32_t li, lrun;
    int leaf_pending; /* a ZONE_LEAF's end is the next event */
    int64_t leaf_end_ns;
    uint32_t leaf_thread;
};

static int fail(mprof_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(mprof_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    r->failed = 1;
    return -1;
}

/* Reads up to n bytes; returns how many were read. */
static size_t input(mprof_reader *r, void *dst, size_t n)
{
    size_t got;
    if (r->mem) {
        size_t left = r->mem_len - r->mem_pos;
        got = n < left ? n : left;
        memcpy(dst, r->mem + r->mem_pos, got);
        r->mem_pos += got;
    } else {
        got = fread(dst, 1, n, r->f);
    }
    r->offset += got;
    return got;
}

/* Moves past n bytes without reading them when all of them are there (in memory, or in a file
 * of the size it had at open, which can seek). Returns 1, or 0 with nothing moved. */
static int skip_input(mprof_reader *r, size_t n)
{
    if (r->mem) {
        if (r->mem_len - r->mem_pos < n)
            return 0;
        r->mem_pos += n;
    } else {
        if (r->st.file_bytes < r->offset || r->st.file_bytes - r->offset < n ||
            n > (size_t)LONG_MAX || fseek(r->f, (long)n, SEEK_CUR) != 0)
            return 0;
    }
    r->offset += n;
    return 1;
}

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static int kv_add(mprof__kvlist *l, const char *k, size_t kl, const char *v, size_t vl)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        mprof__kv *ni = realloc(l->items, nc * sizeof *ni);
        if (!ni)
            return -1;
        l->items = ni;
        l->cap = nc;
    }
    l->items[l->n].key = dupn(k, kl);
    l->items[l->n].value = dupn(v, vl);
    if (!l->items[l->n].key || !l->items[l->n].value) {
        free(l->items[l->n].key);
        free(l->items[l->n].value);
        return -1;
    }
    l->n++;
    return 0;
}

/* Parses a key/value payload into l. Returns NULL, or what is wrong. */
static const char *parse_kv(mprof__kvlist *l, const unsigned char *p, const unsigned char *end)
{
    while (p < end) {
        uint64_t kl, vl;
        if (mprof_get_varint(&p, end, &kl) || kl > (uint64_t)(end - p))
            return "malformed";
        const unsigned char *k = p;
        p += kl;
        if (mprof_get_varint(&p, end, &vl) || vl > (uint64_t)(end - p))
            return "malformed";
        const unsigned char *v = p;
        p += vl;
        if (kv_add(l, (const char *)k, kl, (const char *)v, vl) != 0)
            return "out of memory";
    }
    return NULL;
}

static const char *kv_get(const mprof__kvlist *l, const char *key)
{
    /* The last value wins, so a live capture can restate a key. */
    for (size_t i = l->n; i-- > 0;)
        if (strcmp(l->items[i].key, key) == 0)
            return l->items[i].value;
    return NULL;
}

/* The clock of a list of INFO values: nanoseconds per tick, and the tick of time 0. */
static void clock_of(const char *npt_s, const char *tick0_s, double *npt_out, uint64_t *tick0_out)
{
    double npt = npt_s ? strtod(npt_s, NULL) : 1.0;
    *npt_out = (npt > 0 && npt < 1e6) ? npt : 1.0;
    *tick0_out = tick0_s ? strtoull(tick0_s, NULL, 10) : 0;
}

/* The read stage keeps the clock keys it has read, for the chunks that follow. */
static void rd_clock(mprof_reader *r, const mprof__kvlist *kv)
{
    const char *npt = kv_get(kv, "ns_per_tick"), *t0 = kv_get(kv, "tick0");
    if (npt) {
        free(r->rd_npt);
        r->rd_npt = dupn(npt, strlen(npt));
    }
    if (t0) {
        free(r->rd_tick0);
        r->rd_tick0 = dupn(t0, strlen(t0));
    }
    clock_of(r->rd_npt, r->rd_tick0, &r->rd_ns_per_tick, &r->rd_tick0_v);
}

/* A chunk whose stored length runs past the end of the input, with the have bytes that are
 * there: NULL when it looks like a real cut-off, or why its header cannot be trusted. */
static const char *damaged_length(const unsigned char h[MPROF_FMT_CHUNK_HEADER_BYTES],
                                  const unsigned char *have, size_t n)
{
    /* Fuzz builds run this too: it only ever trusts a matching checksum. */
    /* One flipped bit in the length: the checksum covers the header, so the true length makes
     * it match again. Shorter lengths only (a longer one would not run past the end). */
    uint32_t stored = mprof_rd_u32(h + 8);
    unsigned char alt[MPROF_FMT_CHUNK_HEADER_BYTES];
    memcpy(alt, h, sizeof alt);
    for (int b = 0; b < 32; b++) {
        uint32_t len = stored ^ (1u << b);
        if (len >= stored || len > n)
            continue;
        mprof_wr_u32(alt + 8, len);
        if (h[5] == MPROF_CODEC_NONE)
            mprof_wr_u32(alt + 12, len);
        if (mprof_fmt_chunk_verify(alt, have, len) == 0)
            return "the chunk's length field is damaged (its checksum matches a length one bit "
                   "away)";
    }
    /* Other damage: a whole, valid chunk inside what this one claims to hold. */
    for (size_t p = 0; p + MPROF_FMT_CHUNK_HEADER_BYTES <= n; p++) {
        const unsigned char *q = memchr(have + p, 'M', n - p);
        if (!q)
            break;
        p = (size_t)(q - have);
        if (p + MPROF_FMT_CHUNK_HEADER_BYTES > n)
            break;
        int kind, codec;
        uint32_t sl, rl;
        if (mprof_fmt_check_chunk_header(q, &kind, &codec, &sl, &rl) != NULL ||
            sl > n - p - MPROF_FMT_CHUNK_HEADER_BYTES)
            continue;
        if (mprof_fmt_chunk_verify(q, q + MPROF_FMT_CHUNK_HEADER_BYTES, sl) == 0)
            return "the chunk's header is damaged (a whole chunk follows inside the length it "
                   "claims)";
    }
    return NULL;
}

static void job_fail(mprof__job *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_fail(mprof__job *job, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(job->err, sizeof job->err, fmt, ap);
    va_end(ap);
    job->kind = MPROF__JOB_FAIL;
}

void mprof__read_job(mprof_reader *r, mprof__job *job)
{
    if (r->have_first) {
        /* The job read at open (so that INFO was there at once) comes first. */
        mprof__job t = *job;
        *job = r->first_job;
        r->first_job = t;
        r->have_first = 0;
        return;
    }
    job->seq = ++r->rd_seq;
    job->truncated_bytes = 0;
    job->err[0] = 0;
    mprof__kv_free(&job->kv);
    if (r->rd_done) {
        job->kind = MPROF__JOB_EOF;
        return;
    }
    for (;;) {
        unsigned char *h = job->header;
        uint64_t at = r->offset;
        job->offset = at;
        job->chunk_no = r->rd_chunks;
        size_t got = input(r, h, MPROF_FMT_CHUNK_HEADER_BYTES);
        if (got < MPROF_FMT_CHUNK_HEADER_BYTES) {
            job->truncated_bytes = got;
            job->kind = MPROF__JOB_EOF;
            r->rd_done = 1;
            return;
        }
        int kind, codec;
        uint32_t stored, rawlen;
        const char *why = mprof_fmt_check_chunk_header(h, &kind, &codec, &stored, &rawlen);
        if (why) {
            job_fail(job, "chunk %" PRIu64 " at offset %" PRIu64 ": %s", r->rd_chunks, at, why);
            r->rd_done = 1;
            return;
        }
        if (kind == MPROF_CHUNK_EVENTS && r->process_only &&
            !(mprof_rd_u16(h + 6) & MPROF_CHUNK_F_PROCESS) && skip_input(r, stored)) {
            r->rd_chunks++;
            job->bytes_after = r->offset;
            job->kind = MPROF__JOB_SKIP;
            return;
        }
        job->stored.len = 0;
        if (mprof_buf_reserve(&job->stored, stored ? stored : 1) != 0) {
            job_fail(job, "out of memory reading chunk at offset %" PRIu64, at);
            r->rd_done = 1;
            return;
        }
        got = input(r, job->stored.data, stored);
        if (got < stored) {
            const char *damage = damaged_length(h, job->stored.data, got);
            if (damage)
                job_fail(job, "chunk %" PRIu64 " at offset %" PRIu64 ": %s (corrupt file)",
                         r->rd_chunks, at, damage);
            else {
                job->truncated_bytes = MPROF_FMT_CHUNK_HEADER_BYTES + got;
                job->kind = MPROF__JOB_EOF;
            }
            r->rd_done = 1;
            return;
        }
        job->codec = codec;
        job->stored_len = stored;
        job->raw_len = rawlen;
        job->ns_per_tick = r->rd_ns_per_tick;
        job->tick0 = r->rd_tick0_v;
        if (kind == MPROF_CHUNK_EVENTS) {
            /* Checked and decompressed by whoever decodes it. */
            r->rd_chunks++;
            job->bytes_after = r->offset;
            job->kind = r->process_only && !(mprof_rd_u16(h + 6) & MPROF_CHUNK_F_PROCESS)
                            ? MPROF__JOB_SKIP
                            : MPROF__JOB_EVENTS;
            return;
        }
        /* Fuzz builds skip the checksum so that mutated inputs reach the decoders behind it. */
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
        if (mprof_fmt_chunk_verify(h, job->stored.data, stored) != 0) {
            job_fail(job, "chunk %" PRIu64 " at offset %" PRIu64 ": checksum mismatch (corrupt file)",
                     r->rd_chunks, at);
            r->rd_done = 1;
            return;
        }
#endif
        const unsigned char *payload = job->stored.data;
        if (codec == MPROF_CODEC_ZSTD) {
            r->rd_raw.len = 0;
            if (mprof_buf_reserve(&r->rd_raw, rawlen ? rawlen : 1) != 0) {
                job_fail(job, "out of memory reading chunk at offset %" PRIu64, at);
                r->rd_done = 1;
                return;
            }
            size_t n = ZSTD_decompress(r->rd_raw.data, rawlen, job->stored.data, stored);
            if (ZSTD_isError(n) || n != rawlen) {
                job_fail(job, "chunk %" PRIu64 " at offset %" PRIu64 ": cannot decompress (%s)",
                         r->rd_chunks, at, ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
                r->rd_done = 1;
                return;
            }
            payload = r->rd_raw.data;
        }
        r->rd_chunks++;
        job->bytes_after = r->offset;
        switch (kind) {
        case MPROF_CHUNK_INFO:
        case MPROF_CHUNK_END: {
            const char *bad = parse_kv(&job->kv, payload, payload + rawlen);
            if (bad) {
                if (strcmp(bad, "out of memory") == 0)
                    job_fail(job, "out of memory");
                else
                    job_fail(job, "malformed key/value chunk at offset %" PRIu64, at);
                r->rd_done = 1;
                return;
            }
            if (kind == MPROF_CHUNK_INFO)
                rd_clock(r, &job->kv);
            job->kind = kind == MPROF_CHUNK_INFO ? MPROF__JOB_INFO : MPROF__JOB_END;
            return;
        }
        default:
            if (mprof_rd_u16(h + 6) & MPROF_CHUNK_F_OPTIONAL) {
                job->kind = MPROF__JOB_SKIP;
                return;
            }
            job_fail(job, "chunk %" PRIu64 " at offset %" PRIu64 ": unknown chunk kind %d",
                     r->rd_chunks - 1, at, kind);
            r->rd_done = 1;
            return;
        }
    }
}

/* Compares END's counts with what was read and classifies how the capture ended. */
static void check_end(mprof_reader *r)
{
    const char *by = kv_get(&r->end, "ended_by");
    const char *writer = kv_get(&r->end, "end_written_by");
    if (by && strcmp(by, "disk-full") == 0)
        r->st.ending = MPROF_ENDING_DISK_FULL;
    else if (by && strcmp(by, "write-error") == 0)
        r->st.ending = MPROF_ENDING_WRITE_ERROR;
    else if (writer && by && strcmp(by, "corrupt-stream") == 0)
        r->st.ending = MPROF_ENDING_CORRUPT;
    else if (writer)
        r->st.ending = MPROF_ENDING_PEER_LOST;
    else
        r->st.ending = MPROF_ENDING_CLEAN;
    /* Both the library and mprof capture count the chunks before END and the events as
     * mprof_event_counted does (not the stream's definitions and thread switches). */
    const char *v = kv_get(&r->end, "chunks");
    uint64_t before = r->st.chunks - 1;
    r->st.chunks_missing = 0;
    if (v) {
        uint64_t want = strtoull(v, NULL, 10);
        r->st.chunks_missing = want > before ? want - before : 0;
    }
    v = kv_get(&r->end, "events");
    r->st.events_missing = 0;
    if (v) {
        uint64_t want = strtoull(v, NULL, 10);
        uint64_t have = r->thread_events;
        r->st.events_missing = want > have ? want - have : 0;
    }
}

/* Moves the key/values of src to the end of dst. */
static int kv_move(mprof__kvlist *dst, mprof__kvlist *src)
{
    for (size_t i = 0; i < src->n; i++) {
        if (dst->n == dst->cap) {
            size_t nc = dst->cap ? dst->cap * 2 : 16;
            mprof__kv *ni = realloc(dst->items, nc * sizeof *ni);
            if (!ni) {
                for (size_t k = i; k < src->n; k++) {
                    free(src->items[k].key);
                    free(src->items[k].value);
                }
                free(src->items);
                memset(src, 0, sizeof *src);
                return -1;
            }
            dst->items = ni;
            dst->cap = nc;
        }
        dst->items[dst->n++] = src->items[i];
    }
    free(src->items);
    memset(src, 0, sizeof *src);
    return 0;
}

/* The one process of a capture without DEF_PROCESS records, from INFO and END as they are. */
static void single_update(mprof_reader *r)
{
    const char *app = kv_get(&r->info, "app"), *pid = kv_get(&r->info, "pid");
    const char *ev = kv_get(&r->end, "events"), *lost = kv_get(&r->end, "events_lost");
    r->single.name = app ? app : "";
    r->single.pid = pid ? strtoull(pid, NULL, 10) : 0;
    r->single.events = ev ? strtoull(ev, NULL, 10) : 0;
    r->single.events_lost = lost ? strtoull(lost, NULL, 10) : 0;
    r->single.ended_by = NULL;
}

/* The caller reaches a job: its counts, and what its chunk kind means. Returns 0, or -1. */
static int take_job(mprof_reader *r, mprof__segment *s)
{
    switch (s->job_kind) {
    case MPROF__JOB_EOF:
        r->st.truncated_bytes = s->truncated_bytes;
        r->done = 1;
        return 0;
    case MPROF__JOB_FAIL:
        return 0; /* the segment's failure says why */
    default:
        break;
    }
    r->st.chunks++;
    r->st.bytes_read = s->bytes_after;
    if (s->job_kind == MPROF__JOB_EVENTS && r->process_only)
        r->process_chunks++;
    if (s->job_kind == MPROF__JOB_INFO) {
        if (kv_move(&r->info, &s->kv) != 0)
            return fail(r, "out of memory");
        const char *npt = kv_get(&r->info, "ns_per_tick"), *t0 = kv_get(&r->info, "tick0");
        uint64_t tick0;
        clock_of(npt, t0, &r->ns_per_tick, &tick0);
    } else if (s->job_kind == MPROF__JOB_END) {
        if (kv_move(&r->end, &s->kv) != 0)
            return fail(r, "out of memory");
        r->st.complete = 1;
        check_end(r);
    }
    single_update(r);
    return 0;
}

static int bad_event(mprof_reader *r, uint64_t offset, const char *what, int tag)
{
    return fail(r, "chunk at offset %" PRIu64 ", event tag 0x%02x: %s", offset, tag, what);
}

/* Applies a definition of the chunk at offset to the tables. Returns 0, or -1. */
static int apply_def(mprof_reader *r, const mprof_event *ev, uint64_t offset)
{
    switch (ev->type) {
    case MPROF_EV_DEF_SRCLOC: {
        uint32_t id = (uint32_t)ev->u[0];
        if (!id_ok(id, &r->max_loc) || mprof_grow_zeroed((void **)&r->locs, &r->n_locs, id, sizeof *r->locs, MAX_IDS) != 0)
            return bad_event(r, offset, "source location id out of range", ev->type);
        mprof_srcloc_def *d = &r->locs[id];
        free((char *)d->name);
        free((char *)d->function);
        free((char *)d->file);
        d->line = (uint32_t)ev->u[1];
        d->color = (uint32_t)ev->u[2];
        d->name = dupn(ev->strs[0], ev->str_lens[0]);
        d->function = dupn(ev->strs[1], ev->str_lens[1]);
        d->file = dupn(ev->strs[2], ev->str_lens[2]);
        if (!d->name || !d->function || !d->file)
            return fail(r, "out of memory");
        return 0;
    }
    case MPROF_EV_DEF_STRING: {
        uint32_t id = (uint32_t)ev->u[0];
        if (!id_ok(id, &r->max_str) || mprof_grow_zeroed((void **)&r->strings, &r->n_strings, id, sizeof *r->strings, MAX_IDS))
            return bad_event(r, offset, "string id out of range", ev->type);
        free(r->strings[id]);
        r->strings[id] = dupn(ev->str, ev->str_len);
        return r->strings[id] ? 0 : fail(r, "out of memory");
    }
    case MPROF_EV_DEF_THREAD: {
        uint32_t idx = (uint32_t)ev->u[0];
        if (idx == 0 || mprof_grow_zeroed((void **)&r->threads, &r->n_threads, idx, sizeof *r->threads,
                             MAX_THREADS))
            return bad_event(r, offset, "thread index out of range", ev->type);
        r->threads[idx].os_tid = ev->u[1];
        return 0;
    }
    case MPROF_EV_DEF_CALLSTACK: {
        uint32_t id = (uint32_t)ev->u[0];
        if (!id_ok(id, &r->max_stack) || mprof_grow_zeroed((void **)&r->stacks, &r->n_stacks, id, sizeof *r->stacks, MAX_IDS))
            return bad_event(r, offset, "callstack id out of range", ev->type);
        callstack *c = &r->stacks[id];
        uint64_t *fr = malloc((ev->u[1] ? ev->u[1] : 1) * sizeof *fr);
        if (!fr)
            return fail(r, "out of memory");
        memcpy(fr, ev->frames, ev->u[1] * sizeof *fr);
        free(c->frames);
        c->frames = fr;
        c->n = (uint32_t)ev->u[1];
        return 0;
    }
    case MPROF_EV_DEF_PROCESS: {
        /* Indexes come in order from 1 (a later definition of one replaces it). */
        uint32_t idx = (uint32_t)ev->u[0];
        if (idx == 0 || idx > r->max_proc + 1 || idx >= MAX_PROCESSES ||
            mprof_grow_zeroed((void **)&r->procs, &r->n_procs, idx, sizeof *r->procs,
                              MAX_PROCESSES) != 0)
            return bad_event(r, offset, idx == 0 ? "process index 0"
                                                 : "process index out of order", ev->type);
        proc *pr = &r->procs[idx];
        mprof__kvlist kv = {0};
        const unsigned char *ip = (const unsigned char *)ev->strs[1];
        const char *bad = parse_kv(&kv, ip, ip + ev->str_lens[1]);
        if (bad) {
            mprof__kv_free(&kv);
            return strcmp(bad, "out of memory") == 0
                       ? fail(r, "out of memory")
                       : bad_event(r, offset, "malformed process info (not a key/value list)",
                                   ev->type);
        }
        char *name = dupn(ev->strs[0], ev->str_lens[0]);
        if (!name) {
            mprof__kv_free(&kv);
            return fail(r, "out of memory");
        }
        free(pr->name);
        mprof__kv_free(&pr->info);
        mprof__kv_free(&pr->end);
        memset(&pr->def, 0, sizeof pr->def);
        pr->name = name;
        pr->info = kv;
        pr->def.pid = ev->u[1];
        pr->def.name = pr->name;
        if (idx > r->max_proc)
            r->max_proc = idx;
        return 0;
    }
    case MPROF_EV_THREAD_PROCESS: {
        uint32_t idx = (uint32_t)ev->u[0], pidx = (uint32_t)ev->u[1];
        if (pidx == 0 || pidx > r->max_proc)
            return bad_event(r, offset, "THREAD_PROCESS names a process not defined before it",
                             ev->type);
        if (idx == 0 || mprof_grow_zeroed((void **)&r->threads, &r->n_threads, idx,
                                          sizeof *r->threads, MAX_THREADS))
            return bad_event(r, offset, "thread index out of range", ev->type);
        r->threads[idx].process = pidx - 1;
        return 0;
    }
    case MPROF_EV_PROCESS_END: {
        uint32_t pidx = (uint32_t)ev->u[0];
        if (pidx == 0 || pidx > r->max_proc)
            return bad_event(r, offset, "PROCESS_END names a process not defined before it",
                             ev->type);
        proc *pr = &r->procs[pidx];
        mprof__kvlist kv = {0};
        const unsigned char *ep = (const unsigned char *)ev->strs[0];
        const char *bad = parse_kv(&kv, ep, ep + ev->str_lens[0]);
        if (bad) {
            mprof__kv_free(&kv);
            return strcmp(bad, "out of memory") == 0
                       ? fail(r, "out of memory")
                       : bad_event(r, offset, "malformed process end (not a key/value list)",
                                   ev->type);
        }
        mprof__kv_free(&pr->end);
        pr->end = kv;
        const char *by = kv_get(&pr->end, "ended_by");
        const char *evs = kv_get(&pr->end, "events"), *lost = kv_get(&pr->end, "events_lost");
        pr->def.ended_by = by && *by ? by : NULL;
        pr->def.events = evs ? strtoull(evs, NULL, 10) : 0;
        pr->def.events_lost = lost ? strtoull(lost, NULL, 10) : 0;
        return 0;
    }
    case MPROF_EV_THREAD_NAME: {
        mprof_thread_def *t = &r->threads[ev->thread];
        free(t->name);
        t->name = dupn(ev->str, ev->str_len);
        return t->name ? 0 : fail(r, "out of memory");
    }
    case MPROF_EV_THREAD_EXIT:
        r->threads[ev->thread].exited = 1;
        return 0;
    default:
        return 0;
    }
}

static mprof_reader *open_common(mprof_reader *r, char *err, size_t errlen, const char *name)
{
    unsigned char h[MPROF_FMT_HEADER_BYTES];
    size_t got = input(r, h, sizeof h);
    const char *why = NULL;
    char buf[160];
    if (got < MPROF_FMT_MAGIC_LEN || memcmp(h, MPROF_FMT_MAGIC, MPROF_FMT_MAGIC_LEN) != 0) {
        why = "not an mprof capture (bad magic)";
    } else if (got < sizeof h) {
        why = "truncated file header";
    } else if (mprof_rd_u16(h + 8) != MPROF_FMT_VERSION_MAJOR) {
        snprintf(buf, sizeof buf,
                 "unsupported capture format version %u.%u (this reader reads %u.x)",
                 mprof_rd_u16(h + 8), mprof_rd_u16(h + 10), MPROF_FMT_VERSION_MAJOR);
        why = buf;
    }
    if (why) {
        snprintf(err, errlen, "%s: %s", name, why);
        mprof_reader_close(r);
        return NULL;
    }
    r->ns_per_tick = r->rd_ns_per_tick = 1.0;
    r->single.name = "";
    r->jobs = mprof_read_jobs();
    r->st.bytes_read = MPROF_FMT_HEADER_BYTES;
    /* Thread 0 is the process context (collector records such as CALIBRATION). */
    if (mprof_grow_zeroed((void **)&r->threads, &r->n_threads, 0, sizeof *r->threads, MAX_THREADS) != 0) {
        snprintf(err, errlen, "%s: out of memory", name);
        mprof_reader_close(r);
        return NULL;
    }
    /* Read up to the first EVENTS chunk so that INFO is available right away. An error here
     * is reported by the first read. */
    for (;;) {
        mprof__read_job(r, &r->first_job);
        int k = r->first_job.kind;
        if (k != MPROF__JOB_INFO && k != MPROF__JOB_END && k != MPROF__JOB_SKIP)
            break;
        mprof__segment s = {0};
        s.job_kind = k;
        s.bytes_after = r->first_job.bytes_after;
        s.kv = r->first_job.kv;
        memset(&r->first_job.kv, 0, sizeof r->first_job.kv);
        if (take_job(r, &s) != 0) {
            mprof__kv_free(&s.kv);
            break; /* the first read reports it */
        }
    }
    r->have_first = 1;
    return r;
}

mprof_reader *mprof_reader_open(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    mprof_reader *r = calloc(1, sizeof *r);
    if (!r) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    r->f = f;
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        r->st.file_bytes = sz > 0 ? (uint64_t)sz : 0;
        fseek(f, 0, SEEK_SET);
    }
    return open_common(r, err, errlen, path);
}

mprof_reader *mprof_reader_open_mem(const void *data, size_t len, char *err, size_t errlen)
{
    mprof_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->mem = data;
    r->mem_len = len;
    r->st.file_bytes = len;
    return open_common(r, err, errlen, "capture");
}

static void job_free(mprof__job *j)
{
    mprof_buf_free(&j->stored);
    mprof__kv_free(&j->kv);
}

void mprof_reader_close(mprof_reader *r)
{
    if (!r)
        return;
    if (r->pool)
        mprof__pool_stop(r->pool); /* the workers are gone before the input closes */
    if (r->f)
        fclose(r->f);
    mprof__kv_free(&r->info);
    mprof__kv_free(&r->end);
    free(r->rd_npt);
    free(r->rd_tick0);
    mprof_buf_free(&r->rd_raw);
    job_free(&r->first_job);
    job_free(&r->job);
    mprof__decoder_free(&r->dec);
    if (r->seg_ready) {
        mprof__kv_free(&r->seg.kv);
        mprof__segment_free(&r->seg);
    }
    for (uint32_t i = 0; i < r->n_locs; i++) {
        free((char *)r->locs[i].name);
        free((char *)r->locs[i].function);
        free((char *)r->locs[i].file);
    }
    free(r->locs);
    for (uint32_t i = 0; i < r->n_strings; i++)
        free(r->strings[i]);
    free(r->strings);
    for (uint32_t i = 0; i < r->n_threads; i++)
        free(r->threads[i].name);
    free(r->threads);
    for (uint32_t i = 0; i < r->n_stacks; i++)
        free(r->stacks[i].frames);
    free(r->stacks);
    for (uint32_t i = 0; i < r->n_procs; i++) {
        free(r->procs[i].name);
        mprof__kv_free(&r->procs[i].info);
        mprof__kv_free(&r->procs[i].end);
    }
    free(r->procs);
    free(r);
}

/* ---- handing out batches ------------------------------------------------------------------ */

int mprof_reader_set_jobs(mprof_reader *r, int jobs)
{
    if (r->started)
        return -1;
    r->jobs = jobs <= 0 ? mprof_default_jobs() : jobs;
    return 0;
}

void mprof_reader_want(mprof_reader *r, const unsigned char want[MPROF_EV_MAX])
{
    if (r->started)
        return;
    r->want_some = want != NULL;
    if (want)
        memcpy(r->want, want, sizeof r->want);
}

void mprof_reader_process_only(mprof_reader *r)
{
    if (!r->started)
        r->process_only = 1;
}

static int kv_u64(const mprof__kvlist *l, const char *key, uint64_t *out)
{
    const char *v = kv_get(l, key);
    char *e;
    if (!v || !*v || *v == '-')
        return -1;
    errno = 0;
    *out = strtoull(v, &e, 10);
    return *e || errno ? -1 : 0;
}

/* Ticks to ns as the decoder converts them (decode.c tick_ns). */
static int64_t ticks_ns(double npt, uint64_t tick0, uint64_t ticks)
{
    double ns = (double)(int64_t)(ticks - tick0) * npt;
    return ns >= 9.2e18 ? INT64_MAX : ns <= -9.2e18 ? INT64_MIN : (int64_t)ns;
}

int mprof_reader_main_frames(const mprof_reader *r, mprof_main_frames *out)
{
    memset(out, 0, sizeof *out);
    const char *sep = kv_get(&r->info, "process_chunks");
    uint64_t want_proc, want_chunks;
    if (!r->process_only || !r->done || r->failed || !r->st.complete || r->st.truncated_bytes ||
        !sep || strcmp(sep, "separate") != 0 || kv_u64(&r->end, "process_chunks", &want_proc) ||
        kv_u64(&r->end, "chunks", &want_chunks) || want_proc != r->process_chunks ||
        want_chunks != r->st.chunks - 1)
        return 0;
    uint64_t th, marks, first, last;
    if (kv_u64(&r->end, "main_frame_marks", &marks))
        return 1; /* no unnamed frame mark */
    if (kv_u64(&r->end, "main_frame_thread", &th) || !th || th > UINT32_MAX || !marks ||
        kv_u64(&r->end, "main_frame_first_ticks", &first) ||
        kv_u64(&r->end, "main_frame_last_ticks", &last) || first > last)
        return 0;
    double npt;
    uint64_t tick0;
    clock_of(kv_get(&r->info, "ns_per_tick"), kv_get(&r->info, "tick0"), &npt, &tick0);
    out->thread = (uint32_t)th;
    out->marks = marks;
    out->first_ns = ticks_ns(npt, tick0, first);
    out->last_ns = ticks_ns(npt, tick0, last);
    return 1;
}

/* The next segment in file order, NULL when out of memory. */
static mprof__segment *next_segment(mprof_reader *r)
{
    const unsigned char *want = r->want_some ? r->want : NULL;
    if (r->pool)
        return mprof__pool_take(r->pool);
    if (!r->seg_ready) {
        if (mprof__segment_init(&r->seg) != 0)
            return NULL;
        r->seg_ready = 1;
    }
    if (r->dec.active) {
        mprof__produce(&r->dec, &r->job, 0, &r->seg, want);
        return &r->seg;
    }
    mprof__read_job(r, &r->job);
    mprof__produce(&r->dec, &r->job, 1, &r->seg, want);
    return &r->seg;
}

static void release_segment(mprof_reader *r)
{
    if (!r->cur)
        return;
    mprof__kv_free(&r->cur->kv);
    if (r->pool)
        mprof__pool_give_back(r->pool, r->cur);
    r->cur = NULL;
}

static int start(mprof_reader *r)
{
    r->started = 1;
    if (r->jobs <= 1)
        return 0;
    r->pool = mprof__pool_start(r, r->jobs, r->want_some ? r->want : NULL, NULL, NULL, NULL);
    if (!r->pool)
        return fail(r, "out of memory (cannot start %d reader threads)", r->jobs);
    return 0;
}

/* Hands out a batch of the current segment: its definitions applied, its counts added. */
static int hand_out(mprof_reader *r, const mprof__segment *s, const mprof__bdesc *b,
                    mprof_batch *out)
{
    if (b->max_thread >= r->n_threads &&
        mprof_grow_zeroed((void **)&r->threads, &r->n_threads, b->max_thread, sizeof *r->threads,
                          MAX_THREADS) != 0)
        return fail(r, "out of memory");
    out->rec = s->rec + b->rec0;
    out->run = s->run + b->run0;
    out->ev = s->ev + b->ev0;
    out->n_rec = b->n_rec;
    out->n_run = b->n_run;
    out->n_ev = b->n_ev;
    out->max_ts_ns = b->max_ts;
    for (uint32_t i = 0; i < b->n_defs; i++) {
        if (apply_def(r, &out->ev[i], s->offset) == 0)
            continue;
        /* Hand out the definitions before it, then fail: as a one-at-a-time read does. */
        r->failed = 0;
        r->cur_truncated = 1;
        out->n_rec = i;
        out->n_ev = i;
        uint32_t nr = 0;
        while (nr < out->n_run && out->run[nr].first < i)
            nr++;
        out->n_run = nr;
        out->max_ts_ns = i ? 0 : INT64_MIN;
        r->st.events += i;
        for (uint32_t k = 0; k < i; k++)
            r->thread_events += mprof_event_counted(out->ev[k].type);
        return 1;
    }
    r->st.events += b->events;
    r->thread_events += b->counted;
    return 1;
}

/* The next batch of the current segment: 1 = *out filled, 0 = the segment is done, -1 = failed
 * (a definition of the batch handed out before failed, or the segment's decoding did). */
static int segment_batch(mprof_reader *r, mprof_batch *out)
{
    for (;;) {
        if (r->cur_truncated) {
            r->cur_truncated = 0;
            r->failed = 1;
            return -1;
        }
        if (r->cur_b == r->cur->n_b)
            return r->cur->failed ? fail(r, "%s", r->cur->err) : 0;
        const mprof__bdesc *b = &r->cur->b[r->cur_b++];
        if (hand_out(r, r->cur, b, out) < 0)
            return -1;
        if (out->n_rec || r->cur_truncated || out->max_ts_ns != INT64_MIN)
            return 1;
    }
}

/* Makes s the current segment: its job taken when it is the job's first. */
static int enter_segment(mprof_reader *r, mprof__segment *s)
{
    r->cur = s;
    r->cur_b = 0;
    return s->first ? take_job(r, s) : 0;
}

int mprof_reader_next_batch(mprof_reader *r, mprof_batch *out)
{
    memset(out, 0, sizeof *out);
    if (r->failed)
        return -1;
    if (!r->started && start(r) != 0)
        return -1;
    for (;;) {
        if (r->cur) {
            int rc = segment_batch(r, out);
            if (rc == 1)
                return 1;
            release_segment(r);
            if (rc < 0)
                return -1;
        }
        if (r->done)
            return 0;
        mprof__segment *s = next_segment(r);
        if (!s)
            return fail(r, "out of memory");
        if (enter_segment(r, s) != 0)
            return -1;
    }
}

/* ---- every batch to a function ------------------------------------------------------------ */

typedef struct each {
    mprof_reader *r;
    mprof_batch_fn fn;
    mprof_batch_then_fn then;
    void *ctx;
} each;

enum { EACH_END = 1, EACH_FAILED = -1, EACH_STOPPED = 2 };

/* Whether the next batch of the current segment (the batch segment_batch hands out next: the
 * next with records or a time, and the empty ones before it) changes what the second stage may
 * read: a definition, or a thread index beyond the reader's table. */
static int next_changes_tables(const mprof_reader *r)
{
    const mprof__segment *s = r->cur;
    for (uint32_t i = r->cur_b; i < s->n_b; i++) {
        const mprof__bdesc *b = &s->b[i];
        if (b->n_defs || b->max_thread >= r->n_threads)
            return 1;
        if (b->n_rec || b->max_ts != INT64_MIN)
            return 0;
    }
    return 0;
}

/* The pool's consumer: the batches of s to fn, on the worker that decoded s; with a second
 * stage, kept in s for it (then_segment). Before a job's INFO or END, or a batch that changes
 * the reader's tables, the second stage catches up with fn (mprof__pool_drain). */
static int consume_segment(void *arg, mprof__pool *p, mprof__segment *s)
{
    each *e = arg;
    mprof_reader *r = e->r;
    s->n_handed = 0;
    if (e->then) {
        if (!s->handed && !(s->handed = malloc(MPROF__SEG_BATCHES * sizeof *s->handed))) {
            fail(r, "out of memory");
            return EACH_FAILED;
        }
        if (s->first && s->job_kind != MPROF__JOB_EVENTS)
            mprof__pool_drain(p, s);
    }
    int rc = enter_segment(r, s);
    mprof_batch b;
    while (rc == 0) {
        if (e->then && next_changes_tables(r))
            mprof__pool_drain(p, s);
        if ((rc = segment_batch(r, &b)) != 1)
            break;
        if (e->then)
            s->handed[s->n_handed++] = b;
        rc = e->fn(e->ctx, &b) == 0 ? 0 : EACH_STOPPED;
    }
    mprof__kv_free(&s->kv);
    r->cur = NULL; /* the pool gives s back, or queues it for then */
    if (rc < 0)
        return EACH_FAILED;
    if (rc == EACH_STOPPED)
        return rc;
    return r->done ? EACH_END : 0;
}

/* The pool's second stage: the batches fn had of s, to then. */
static void then_segment(void *arg, mprof__segment *s)
{
    each *e = arg;
    for (uint32_t i = 0; i < s->n_handed; i++)
        e->then(e->ctx, &s->handed[i]);
    s->n_handed = 0;
}

int mprof_reader_each_batch_then(mprof_reader *r, mprof_batch_fn fn, mprof_batch_then_fn then,
                                 void *ctx)
{
    if (r->failed)
        return -1;
    int rc;
    if (r->started || r->jobs <= 1) {
        mprof_batch b;
        while ((rc = mprof_reader_next_batch(r, &b)) == 1) {
            int stop = fn(ctx, &b);
            if (then)
                then(ctx, &b);
            if (stop != 0)
                break;
        }
        if (rc != 1)
            return rc;
    } else {
        r->started = 1;
        each e = {r, fn, then, ctx};
        r->pool = mprof__pool_start(r, r->jobs, r->want_some ? r->want : NULL, consume_segment,
                                    then ? then_segment : NULL, &e);
        if (!r->pool)
            return fail(r, "out of memory (cannot start %d reader threads)", r->jobs);
        rc = mprof__pool_wait(r->pool);
        /* The segments decoded past a stop are gone with the pool. */
        mprof__pool_stop(r->pool);
        r->pool = NULL;
        if (rc != EACH_STOPPED)
            return rc == EACH_END ? 0 : -1;
    }
    fail(r, "the read was stopped");
    return 1;
}

int mprof_reader_each_batch(mprof_reader *r, mprof_batch_fn fn, void *ctx)
{
    return mprof_reader_each_batch_then(r, fn, NULL, ctx);
}

/* ---- one event at a time ------------------------------------------------------------------ */

int mprof_reader_next(mprof_reader *r, mprof_event *ev)
{
    if (r->failed)
        return -1;
    if (r->leaf_pending) {
        memset(ev, 0, sizeof *ev);
        ev->type = MPROF_EV_ZONE_END;
        ev->thread = r->leaf_thread;
        ev->ts_ns = r->leaf_end_ns;
        r->leaf_pending = 0;
        return 1;
    }
    while (r->li >= r->lb.n_rec) {
        int rc = mprof_reader_next_batch(r, &r->lb);
        if (rc <= 0)
            return rc;
        r->li = 0;
        r->lrun = 0;
    }
    const mprof_rec *e = &r->lb.rec[r->li];
    while (r->li >= r->lb.run[r->lrun].end)
        r->lrun++;
    uint32_t thread = r->lb.run[r->lrun].thread;
    r->li++;
    int type = mprof_rec_type(e);
    if (type == MPROF_REC_LEAF || type == MPROF_EV_ZONE_BEGIN || type == MPROF_EV_ZONE_END) {
        memset(ev, 0, sizeof *ev);
        ev->type = type == MPROF_REC_LEAF ? MPROF_EV_ZONE_BEGIN : type;
        ev->thread = thread;
        ev->ts_ns = e->ts_ns;
        if (type != MPROF_EV_ZONE_END)
            ev->u[0] = e->x;
        if (type == MPROF_REC_LEAF) {
            r->leaf_pending = 1;
            r->leaf_end_ns = e->ts_ns + mprof_rec_dur(e);
            r->leaf_thread = thread;
        }
        return 1;
    }
    if (e->x == MPROF_REC_NOEV) { /* wanted as its record only: no fields */
        memset(ev, 0, sizeof *ev);
        ev->type = type;
        ev->thread = thread;
        ev->ts_ns = e->ts_ns;
        return 1;
    }
    *ev = r->lb.ev[e->x];
    return 1;
}

const char *mprof_reader_error(const mprof_reader *r)
{
    return r->err;
}

const char *mprof_reader_info(const mprof_reader *r, const char *key)
{
    return kv_get(&r->info, key);
}

const char *mprof_reader_end_info(const mprof_reader *r, const char *key)
{
    return kv_get(&r->end, key);
}

const mprof_srcloc_def *mprof_reader_srcloc(const mprof_reader *r, uint32_t id)
{
    return id && id < r->n_locs && r->locs[id].name ? &r->locs[id] : NULL;
}

uint32_t mprof_reader_srcloc_count(const mprof_reader *r)
{
    return r->n_locs;
}

const char *mprof_reader_string(const mprof_reader *r, uint32_t id)
{
    return id && id < r->n_strings ? r->strings[id] : NULL;
}

const mprof_thread_def *mprof_reader_thread(const mprof_reader *r, uint32_t idx)
{
    return idx && idx < r->n_threads ? &r->threads[idx] : NULL;
}

uint32_t mprof_reader_thread_count(const mprof_reader *r)
{
    return r->n_threads;
}

uint32_t mprof_reader_process_count(const mprof_reader *r)
{
    return r->max_proc ? r->max_proc : 1;
}

const mprof_process_def *mprof_reader_process(const mprof_reader *r, uint32_t idx)
{
    if (!r->max_proc)
        return idx == 0 ? &r->single : NULL;
    return idx < r->max_proc ? &r->procs[idx + 1].def : NULL;
}

const char *mprof_reader_process_info(const mprof_reader *r, uint32_t idx, const char *key)
{
    if (!r->max_proc)
        return idx == 0 ? kv_get(&r->info, key) : NULL;
    return idx < r->max_proc ? kv_get(&r->procs[idx + 1].info, key) : NULL;
}

const mprof__kvlist *mprof__reader_kv(const mprof_reader *r, int which, uint32_t idx)
{
    if (!r->max_proc)
        return idx != 0 ? NULL : which == MPROF__KV_END ? &r->end : &r->info;
    if (idx >= r->max_proc)
        return NULL;
    return which == MPROF__KV_END ? &r->procs[idx + 1].end : &r->procs[idx + 1].info;
}

const mprof__kvlist *mprof__reader_capture_kv(const mprof_reader *r, int which)
{
    return which == MPROF__KV_END ? &r->end : &r->info;
}

const uint64_t *mprof_reader_callstack(const mprof_reader *r, uint32_t id, uint32_t *n)
{
    if (!id || id >= r->n_stacks || !r->stacks[id].frames) {
        *n = 0;
        return NULL;
    }
    *n = r->stacks[id].n;
    return r->stacks[id].frames;
}

void mprof_reader_get_stats(const mprof_reader *r, mprof_reader_stats *out)
{
    *out = r->st;
}

int mprof_reader_stats_whole(const mprof_reader_stats *st)
{
    return st->complete && st->ending == MPROF_ENDING_CLEAN && !st->chunks_missing &&
           !st->events_missing;
}

const char *mprof_ending_name(int ending)
{
    switch (ending) {
    case MPROF_ENDING_CLEAN: return "clean";
    case MPROF_ENDING_PEER_LOST: return "peer-lost";
    case MPROF_ENDING_CORRUPT: return "corrupt-stream";
    case MPROF_ENDING_DISK_FULL: return "disk-full";
    case MPROF_ENDING_WRITE_ERROR: return "write-error";
    default: return "cut-off";
    }
}

const char *mprof_ending_text(int ending)
{
    switch (ending) {
    case MPROF_ENDING_CLEAN:
        return "complete (the process closed the capture)";
    case MPROF_ENDING_PEER_LOST:
        return "ended by mprof capture: the process vanished or never sent its end record "
               "(killed, crashed or hung)";
    case MPROF_ENDING_CORRUPT:
        return "ended by mprof capture after a corrupt stream (the rest was not recorded)";
    case MPROF_ENDING_DISK_FULL:
        return "cut short: the disk was full (what followed was not written)";
    case MPROF_ENDING_WRITE_ERROR:
        return "cut short: writing the capture failed (what followed was not written)";
    default:
        return "incomplete (no end record: the process or the tool was killed, the disk filled "
               "up, or it is still being written)";
    }
}

double mprof_reader_ns_per_tick(const mprof_reader *r)
{
    return r->ns_per_tick;
}
