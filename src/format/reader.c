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
#include "format/format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
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

typedef struct kv {
    char *key, *value;
} kv;

typedef struct kvlist {
    kv *items;
    size_t n, cap;
} kvlist;

typedef struct thread_state {
    mprof_thread_def def;
    uint64_t last_ticks;
    uint64_t chunk_seq; /* last_ticks is valid while this equals the reader's chunk count */
    uint32_t leaf_loc;  /* ZONE_LEAF_LOC, valid while leaf_seq equals the chunk count */
    uint64_t leaf_seq;
} thread_state;

typedef struct callstack {
    uint64_t *frames;
    uint32_t n;
} callstack;

struct mprof_reader {
    FILE *f;
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    uint64_t offset; /* file offset of the next unread byte */
    mprof_reader_stats st;
    int done, failed;
    char err[256];
    kvlist info, end;
    mprof_buf stored, raw;
    const unsigned char *p, *pend; /* undecoded events of the current chunk */
    uint64_t chunk_offset;
    uint32_t cur_thread;
    uint64_t ts_scale; /* TS_SCALE in effect in the current chunk (1 = none) */
    double ns_per_tick;
    uint64_t tick0;
    mprof_srcloc_def *locs;
    uint32_t n_locs;
    char **strings;
    uint32_t n_strings;
    thread_state *threads;
    uint32_t n_threads;
    callstack *stacks;
    uint32_t n_stacks;
    uint32_t max_loc, max_str, max_stack; /* largest definition ids seen */
    uint64_t thread_events; /* events as mprof_event_counted counts them (END's "events") */
    int leaf_pending;       /* a ZONE_LEAF's end is the next event */
    int64_t leaf_end_ns;
    uint32_t leaf_thread;
    uint64_t frames_tmp[256];
};

static int next_chunk(mprof_reader *r);

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

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static int parse_kv(mprof_reader *r, kvlist *l, const unsigned char *p, const unsigned char *end)
{
    while (p < end) {
        uint64_t kl, vl;
        if (mprof_get_varint(&p, end, &kl) || kl > (uint64_t)(end - p))
            return fail(r, "malformed key/value chunk at offset %" PRIu64, r->chunk_offset);
        const unsigned char *k = p;
        p += kl;
        if (mprof_get_varint(&p, end, &vl) || vl > (uint64_t)(end - p))
            return fail(r, "malformed key/value chunk at offset %" PRIu64, r->chunk_offset);
        const unsigned char *v = p;
        p += vl;
        if (l->n == l->cap) {
            size_t nc = l->cap ? l->cap * 2 : 16;
            kv *ni = realloc(l->items, nc * sizeof *ni);
            if (!ni)
                return fail(r, "out of memory");
            l->items = ni;
            l->cap = nc;
        }
        l->items[l->n].key = dupn((const char *)k, kl);
        l->items[l->n].value = dupn((const char *)v, vl);
        if (!l->items[l->n].key || !l->items[l->n].value) {
            free(l->items[l->n].key);
            free(l->items[l->n].value);
            return fail(r, "out of memory");
        }
        l->n++;
    }
    return 0;
}

static const char *kv_get(const kvlist *l, const char *key)
{
    /* The last value wins, so a live capture can restate a key. */
    for (size_t i = l->n; i-- > 0;)
        if (strcmp(l->items[i].key, key) == 0)
            return l->items[i].value;
    return NULL;
}

static void apply_clock(mprof_reader *r)
{
    const char *v = kv_get(&r->info, "ns_per_tick");
    double npt = v ? strtod(v, NULL) : 1.0;
    r->ns_per_tick = (npt > 0 && npt < 1e6) ? npt : 1.0;
    v = kv_get(&r->info, "tick0");
    r->tick0 = v ? strtoull(v, NULL, 10) : 0;
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
    r->ns_per_tick = 1.0;
    r->st.bytes_read = MPROF_FMT_HEADER_BYTES;
    /* Thread 0 is the process context (collector records such as CALIBRATION). */
    if (mprof_grow_zeroed((void **)&r->threads, &r->n_threads, 0, sizeof *r->threads, MAX_THREADS) != 0) {
        snprintf(err, errlen, "%s: out of memory", name);
        mprof_reader_close(r);
        return NULL;
    }
    /* Read up to the first EVENTS chunk so that INFO is available right away. An error here
     * is reported by the first mprof_reader_next call. */
    if (next_chunk(r) == 0)
        r->p = r->pend = NULL;
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

static void kv_free(kvlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
}

void mprof_reader_close(mprof_reader *r)
{
    if (!r)
        return;
    if (r->f)
        fclose(r->f);
    kv_free(&r->info);
    kv_free(&r->end);
    mprof_buf_free(&r->stored);
    mprof_buf_free(&r->raw);
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
        free(r->threads[i].def.name);
    free(r->threads);
    for (uint32_t i = 0; i < r->n_stacks; i++)
        free(r->stacks[i].frames);
    free(r->stacks);
    free(r);
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

/* Loads the next chunk. Returns 1 when an EVENTS chunk is ready, 0 at the end, -1 on error. */
static int next_chunk(mprof_reader *r)
{
    for (;;) {
        unsigned char h[MPROF_FMT_CHUNK_HEADER_BYTES];
        uint64_t at = r->offset;
        size_t got = input(r, h, sizeof h);
        if (got == 0) {
            r->done = 1;
            return 0;
        }
        if (got < sizeof h) {
            r->st.truncated_bytes = got;
            r->done = 1;
            return 0;
        }
        int kind, codec;
        uint32_t stored, rawlen;
        const char *why = mprof_fmt_check_chunk_header(h, &kind, &codec, &stored, &rawlen);
        if (why)
            return fail(r, "chunk %" PRIu64 " at offset %" PRIu64 ": %s", r->st.chunks, at, why);
        r->stored.len = 0;
        if (mprof_buf_reserve(&r->stored, stored ? stored : 1) != 0)
            return fail(r, "out of memory reading chunk at offset %" PRIu64, at);
        got = input(r, r->stored.data, stored);
        if (got < stored) {
            const char *damage = damaged_length(h, r->stored.data, got);
            if (damage)
                return fail(r, "chunk %" PRIu64 " at offset %" PRIu64 ": %s (corrupt file)",
                            r->st.chunks, at, damage);
            r->st.truncated_bytes = sizeof h + got;
            r->done = 1;
            return 0;
        }
        /* Fuzz builds skip the checksum so that mutated inputs reach the decoders behind it. */
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
        if (mprof_fmt_chunk_verify(h, r->stored.data, stored) != 0)
            return fail(r, "chunk %" PRIu64 " at offset %" PRIu64 ": checksum mismatch (corrupt file)",
                        r->st.chunks, at);
#endif
        const unsigned char *payload = r->stored.data;
        if (codec == MPROF_CODEC_ZSTD) {
            r->raw.len = 0;
            if (mprof_buf_reserve(&r->raw, rawlen ? rawlen : 1) != 0)
                return fail(r, "out of memory reading chunk at offset %" PRIu64, at);
            size_t n = ZSTD_decompress(r->raw.data, rawlen, r->stored.data, stored);
            if (ZSTD_isError(n) || n != rawlen)
                return fail(r, "chunk %" PRIu64 " at offset %" PRIu64 ": cannot decompress (%s)",
                            r->st.chunks, at,
                            ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
            payload = r->raw.data;
        }
        r->chunk_offset = at;
        r->st.chunks++;
        r->st.bytes_read = r->offset;
        switch (kind) {
        case MPROF_CHUNK_INFO:
            if (parse_kv(r, &r->info, payload, payload + rawlen) != 0)
                return -1;
            apply_clock(r);
            continue;
        case MPROF_CHUNK_END:
            if (parse_kv(r, &r->end, payload, payload + rawlen) != 0)
                return -1;
            r->st.complete = 1;
            check_end(r);
            continue;
        case MPROF_CHUNK_EVENTS:
            r->p = payload;
            r->pend = payload + rawlen;
            r->cur_thread = 0;
            r->ts_scale = 1;
            return 1;
        default:
            if (mprof_rd_u16(h + 6) & MPROF_CHUNK_F_OPTIONAL)
                continue;
            return fail(r, "chunk %" PRIu64 " at offset %" PRIu64 ": unknown chunk kind %d",
                        r->st.chunks - 1, at, kind);
        }
    }
}

static int bad_event(mprof_reader *r, const char *what, int tag)
{
    return fail(r, "chunk at offset %" PRIu64 ", event tag 0x%02x: %s", r->chunk_offset, tag, what);
}

static int apply_def(mprof_reader *r, mprof_event *ev)
{
    switch (ev->type) {
    case MPROF_EV_DEF_SRCLOC: {
        uint32_t id = (uint32_t)ev->u[0];
        if (!id_ok(id, &r->max_loc) || mprof_grow_zeroed((void **)&r->locs, &r->n_locs, id, sizeof *r->locs, MAX_IDS) != 0)
            return bad_event(r, "source location id out of range", ev->type);
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
            return bad_event(r, "string id out of range", ev->type);
        free(r->strings[id]);
        r->strings[id] = dupn(ev->str, ev->str_len);
        return r->strings[id] ? 0 : fail(r, "out of memory");
    }
    case MPROF_EV_DEF_THREAD: {
        uint32_t idx = (uint32_t)ev->u[0];
        if (idx == 0 || mprof_grow_zeroed((void **)&r->threads, &r->n_threads, idx, sizeof *r->threads,
                             MAX_THREADS))
            return bad_event(r, "thread index out of range", ev->type);
        r->threads[idx].def.os_tid = ev->u[1];
        return 0;
    }
    case MPROF_EV_DEF_CALLSTACK: {
        uint32_t id = (uint32_t)ev->u[0];
        if (!id_ok(id, &r->max_stack) || mprof_grow_zeroed((void **)&r->stacks, &r->n_stacks, id, sizeof *r->stacks, MAX_IDS))
            return bad_event(r, "callstack id out of range", ev->type);
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
    case MPROF_EV_THREAD_NAME: {
        thread_state *t = &r->threads[ev->thread];
        free(t->def.name);
        t->def.name = dupn(ev->str, ev->str_len);
        return t->def.name ? 0 : fail(r, "out of memory");
    }
    case MPROF_EV_THREAD_EXIT:
        r->threads[ev->thread].def.exited = 1;
        return 0;
    default:
        return 0;
    }
}

/* Ticks to ns since the start; clamped, so a corrupt delta cannot make the conversion
 * undefined. */
static int64_t tick_ns(const mprof_reader *r, uint64_t ticks)
{
    double ns = (double)(int64_t)(ticks - r->tick0) * r->ns_per_tick;
    return ns >= 9.2e18 ? INT64_MAX : ns <= -9.2e18 ? INT64_MIN : (int64_t)ns;
}

/* A ZONE_LEAF record (format.h): returns its ZONE_BEGIN now and its ZONE_END on the next call. */
static int leaf_event(mprof_reader *r, int tag, mprof_event *ev)
{
    if (r->cur_thread == 0)
        return fail(r, "chunk at offset %" PRIu64 ": ZONE_LEAF before any THREAD record",
                    r->chunk_offset);
    thread_state *t = &r->threads[r->cur_thread];
    if (t->chunk_seq != r->st.chunks)
        return bad_event(r, "ZONE_LEAF as the thread's first timestamp in its chunk", tag);
    if (t->leaf_seq != r->st.chunks || !t->leaf_loc)
        return bad_event(r, "ZONE_LEAF without a ZONE_LEAF_LOC before it in its chunk", tag);
    uint64_t begin = t->last_ticks + (uint64_t)((tag >> 4) & 7) * r->ts_scale;
    uint64_t end = begin + (uint64_t)(tag & 15) * r->ts_scale;
    t->last_ticks = end;
    memset(ev, 0, sizeof *ev);
    ev->type = MPROF_EV_ZONE_BEGIN;
    ev->thread = r->cur_thread;
    ev->ts_ns = tick_ns(r, begin);
    ev->u[0] = t->leaf_loc;
    r->leaf_pending = 1;
    r->leaf_end_ns = tick_ns(r, end);
    r->leaf_thread = r->cur_thread;
    r->st.events++;
    r->thread_events++;
    return 1;
}

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
        r->st.events++;
        r->thread_events++;
        return 1;
    }
    for (;;) {
        if (r->p >= r->pend) {
            if (r->done)
                return 0;
            int c = next_chunk(r);
            if (c <= 0)
                return c;
            continue;
        }
        const unsigned char *p = r->p, *end = r->pend;
        int tag = *p++;
        if (MPROF_EV_IS_LEAF(tag)) {
            r->p = p;
            return leaf_event(r, tag, ev);
        }
        const mprof_event_desc *d = mprof_event_desc_get(tag);
        if (!d)
            return fail(r, "chunk at offset %" PRIu64 ": unknown event tag 0x%02x", r->chunk_offset,
                        tag);
        memset(ev, 0, sizeof *ev);
        ev->type = tag;
        ev->thread = r->cur_thread;
        if ((tag >= 0x10 || tag == MPROF_EV_THREAD_EXIT) && tag != MPROF_EV_TS_SCALE &&
            !MPROF_EV_IS_PROCESS(tag) &&
            r->cur_thread == 0)
            return fail(r, "chunk at offset %" PRIu64 ": event 0x%02x before any THREAD record",
                        r->chunk_offset, tag);
        int ui = 0, si = 0;
        for (int i = 0; i < d->n_fields; i++) {
            uint64_t v = 0;
            if (mprof_get_field(&p, end, d->fields[i], &v))
                goto truncated;
            switch (d->fields[i]) {
            case MPROF_F_TS: {
                thread_state *t = &r->threads[r->cur_thread];
                /* A thread's first TS in a chunk is absolute; later ones are deltas, in units
                 * of the chunk's TS_SCALE (unsigned arithmetic: a corrupt value wraps). */
                uint64_t ticks = t->chunk_seq == r->st.chunks
                                     ? t->last_ticks + (uint64_t)mprof_unzigzag(v) * r->ts_scale
                                     : (uint64_t)mprof_unzigzag(v);
                t->last_ticks = ticks;
                t->chunk_seq = r->st.chunks;
                ev->ts_ns = tick_ns(r, ticks);
                continue;
            }
            case MPROF_F_STR:
                if (si < 3) {
                    ev->strs[si] = (const char *)p - v;
                    ev->str_lens[si] = (uint32_t)v;
                    si++;
                }
                continue;
            case MPROF_F_I64:
                v = (uint64_t)mprof_unzigzag(v);
                break;
            case MPROF_F_U32:
            case MPROF_F_LOC:
            case MPROF_F_NAME:
            case MPROF_F_CS:
                if (v > UINT32_MAX)
                    return bad_event(r, "32-bit field out of range", tag);
                break;
            default:
                break;
            }
            ev->u[ui++] = v;
        }
        ev->str = ev->strs[0];
        ev->str_len = ev->str_lens[0];
        if (tag == MPROF_EV_DEF_CALLSTACK) {
            if (ev->u[1] > sizeof r->frames_tmp / sizeof r->frames_tmp[0])
                return bad_event(r, "callstack deeper than 256 frames", tag);
            for (uint64_t i = 0; i < ev->u[1]; i++)
                if (mprof_get_varint(&p, end, &r->frames_tmp[i]))
                    goto truncated;
            ev->frames = r->frames_tmp;
        }
        r->p = p;
        /* Values this reader does not know are a newer writer's: refused, not guessed. */
        if (tag == MPROF_EV_SYS_SWITCH && (ev->u[1] > MPROF_SYS_IN || ev->u[2] > MPROF_SYS_REASON_MAX))
            return bad_event(r, "unknown switch direction or reason", tag);
        if (tag == MPROF_EV_SYS_WAKE && ev->u[3] > MPROF_SYS_WAKE_MAX)
            return bad_event(r, "unknown wake-up context", tag);
        if (tag == MPROF_EV_TS_SCALE) {
            /* Chunk-level encoding state, not an event: it is applied and not returned. */
            if (ev->u[0] == 0)
                return bad_event(r, "TS_SCALE of 0", tag);
            r->ts_scale = ev->u[0];
            continue;
        }
        if (tag == MPROF_EV_ZONE_LEAF_LOC) {
            /* Encoding state too: the location of the thread's next ZONE_LEAF records. */
            if (ev->u[0] == 0)
                return bad_event(r, "ZONE_LEAF_LOC of location 0", tag);
            thread_state *t = &r->threads[r->cur_thread];
            t->leaf_loc = (uint32_t)ev->u[0];
            t->leaf_seq = r->st.chunks;
            continue;
        }
        if (tag == MPROF_EV_THREAD) {
            uint32_t idx = (uint32_t)ev->u[0];
            if (mprof_grow_zeroed((void **)&r->threads, &r->n_threads, idx, sizeof *r->threads, MAX_THREADS))
                return bad_event(r, "thread index out of range", tag);
            r->cur_thread = idx;
            ev->thread = idx;
        }
        if (apply_def(r, ev) != 0)
            return -1;
        r->st.events++;
        if (mprof_event_counted(tag))
            r->thread_events++;
        return 1;
    truncated:
        return bad_event(r, "event runs past the end of its chunk", tag);
    }
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
    return idx && idx < r->n_threads ? &r->threads[idx].def : NULL;
}

uint32_t mprof_reader_thread_count(const mprof_reader *r)
{
    return r->n_threads;
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
