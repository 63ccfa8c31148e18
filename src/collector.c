/*
 * collector.c - drains thread buffers into capture chunks and hands them to the sink.
 *
 * One background thread wakes every flush_interval_ms (or when asked), walks the registered
 * threads, and translates each thread's new raw records into the compact form of format.h:
 * timestamps become per-thread deltas, source-location and name pointers become small ids
 * (announced once with DEF_SRCLOC / DEF_STRING), callstacks are interned. Records of one thread
 * are preceded by a THREAD record. When the chunk reaches chunk_bytes (or has waited 250 ms) it
 * is compressed and framed (format/writer.c) and written to the sink; a crash loses at most
 * that much. Zone begin/end, which are nearly all of the traffic, take a hand-written fast path;
 * every other event is translated by walking its field list in the event table.
 */
#include "core.h"
#include "callstack.h"
#include "live.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

/* ---- pointer and content maps (open addressing, power-of-two sizes) ------------------------ */

typedef struct map {
    uint64_t *keys; /* 0 = empty */
    uint32_t *vals;
    uint32_t cap, n;
} map;

static uint32_t map_slot(uint64_t k, uint32_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k & (cap - 1);
}

static uint32_t map_get(const map *m, uint64_t k)
{
    if (!m->cap)
        return 0;
    for (uint32_t i = map_slot(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == k)
            return m->vals[i];
        if (!m->keys[i])
            return 0;
    }
}

static int map_put(map *m, uint64_t k, uint32_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        uint32_t nc = m->cap ? m->cap * 2 : 256;
        map nm = {calloc(nc, sizeof(uint64_t)), calloc(nc, sizeof(uint32_t)), nc, 0};
        if (!nm.keys || !nm.vals) {
            free(nm.keys);
            free(nm.vals);
            return -1;
        }
        for (uint32_t i = 0; i < m->cap; i++)
            if (m->keys[i])
                map_put(&nm, m->keys[i], m->vals[i]);
        free(m->keys);
        free(m->vals);
        *m = nm;
    }
    uint32_t i = map_slot(k, m->cap);
    while (m->keys[i] && m->keys[i] != k)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        m->n++;
    m->keys[i] = k;
    m->vals[i] = v;
    return 0;
}

static void map_clear(map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- collector state ----------------------------------------------------------------------- */

static struct {
    pthread_t thread;
    pthread_mutex_t m;
    pthread_cond_t wake, done;
    int running, stop;
    uint64_t flush_req, flush_done;
    mprof_buf chunk;       /* compact payload being built */
    mprof_buf framed;      /* framed chunks waiting for the sink */
    ZSTD_CCtx *cctx;
    map locs, names, name_text, stacks;
    uint32_t next_loc, next_name, next_stack;
    uint32_t chunk_seq;    /* bumps for every chunk emitted */
    uint32_t cur_thread;   /* thread context in the current chunk; 0 = none */
    uint64_t chunk_started_ns;
    int fd;                /* file sink, -1 when none */
    int sink_failed;
    int sink_errno;        /* why the sink failed (ENOSPC: the disk is full) */
    /* File offsets just after the last few whole writes (header, chunks), newest last, so a
     * failed write can be cut back to a chunk boundary and END written after it. */
    uint64_t sink_ends[8];
    uint64_t n_sink_writes;
    uint64_t unwritten_chunks, unwritten_bytes; /* chunks the sink refused, with their bytes */
    uint64_t events;       /* records translated this session */
    mprof__thread **snap;
    size_t snap_cap;
} C = {.m = PTHREAD_MUTEX_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER,
       .done = PTHREAD_COND_INITIALIZER,
       .fd = -1};

static int sink_write(const void *data, size_t len)
{
    if (C.fd < 0)
        return -1;
    if (C.sink_failed) {
        C.unwritten_chunks++;
        C.unwritten_bytes += len;
        return -1;
    }
    const unsigned char *p = data;
    size_t whole = len;
    while (len) {
        ssize_t n = write(C.fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            /* Logged once: the retries of sink_recover fail quietly. */
            int e = errno;
            if (!C.sink_errno) {
                C.sink_errno = e;
                mprof__log("writing the capture failed: %s; recording stops (the capture's end "
                           "record says so and counts what was not written)",
                           e == ENOSPC || e == EDQUOT ? "the disk is full" : strerror(e));
            }
            C.sink_failed = 1;
            C.unwritten_chunks++;
            C.unwritten_bytes += whole;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        atomic_fetch_add(&mprof__g.bytes_written, (uint64_t)n);
    }
    uint64_t prev = C.n_sink_writes ? C.sink_ends[(C.n_sink_writes - 1) % 8] : 0;
    C.sink_ends[C.n_sink_writes++ % 8] = prev + whole;
    return 0;
}

static void kvf(mprof_buf *b, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* After a failed write: cuts the file back to its last whole chunk and writes END there, giving
 * back whole chunks (counted as not written) until it fits; the file header and INFO (the first
 * two writes) are kept. base is END's payload without the not-written counts. 0 when END was
 * written. */
static int sink_recover(const mprof_buf *base)
{
    int full = C.sink_errno == ENOSPC || C.sink_errno == EDQUOT;
    int rc = -1;
    mprof_buf b = {0};
    for (int drop = 0; C.n_sink_writes >= 2; drop++) {
        uint64_t at = C.sink_ends[(C.n_sink_writes - 1) % 8];
        if (ftruncate(C.fd, (off_t)at) != 0 || lseek(C.fd, (off_t)at, SEEK_SET) < 0)
            break;
        b.len = 0;
        if (mprof_buf_reserve(&b, base->len) != 0)
            break;
        memcpy(b.data, base->data, base->len);
        b.len = base->len;
        /* The reader compares END's events and chunks with what the file holds, so these say
         * what was not written; ended_by says why. */
        kvf(&b, "ended_by", "%s", full ? "disk-full" : "write-error");
        kvf(&b, "write_error", "%s", strerror(C.sink_errno));
        kvf(&b, "chunks_not_written", "%" PRIu64, C.unwritten_chunks);
        kvf(&b, "bytes_not_written", "%" PRIu64, C.unwritten_bytes);
        C.framed.len = 0;
        if (mprof_fmt_chunk(&C.framed, MPROF_CHUNK_END, b.data, b.len, 0, NULL) != 0)
            break;
        C.sink_failed = 0;
        if (sink_write(C.framed.data, C.framed.len) == 0) {
            rc = 0;
            break;
        }
        C.unwritten_chunks--; /* END is not one of the capture's chunks */
        C.unwritten_bytes -= C.framed.len;
        /* Not even END fits: give back the last whole chunk (never INFO) to make room; the
         * ring of 8 boundaries allows 6 of them. */
        if (drop == 6 || C.n_sink_writes <= 2)
            break;
        C.unwritten_chunks++;
        C.unwritten_bytes += at - C.sink_ends[(C.n_sink_writes - 2) % 8];
        C.n_sink_writes--;
    }
    if (rc != 0 && C.n_sink_writes)
        (void)!ftruncate(C.fd, (off_t)C.sink_ends[(C.n_sink_writes - 1) % 8]);
    mprof_buf_free(&b);
    return rc;
}

static void emit_framed(int kind, const mprof_buf *payload)
{
    C.framed.len = 0;
    int level = kind == MPROF_CHUNK_EVENTS ? mprof__g.cfg.compression_level : 0;
    if (mprof_fmt_chunk(&C.framed, kind, payload->data, payload->len, level, C.cctx) != 0) {
        mprof__log("cannot frame a capture chunk (out of memory)");
        return;
    }
    sink_write(C.framed.data, C.framed.len);
    atomic_fetch_add(&mprof__g.chunks_written, 1);
    if (kind == MPROF_CHUNK_EVENTS)
        mprof__live_chunk(payload, &C.framed);
}

/* Compresses and writes the chunk being built, then starts a new one. */
static void emit_chunk(void)
{
    if (C.chunk.len) {
        atomic_fetch_add(&mprof__g.bytes_raw, C.chunk.len);
        emit_framed(MPROF_CHUNK_EVENTS, &C.chunk);
    }
    C.chunk.len = 0;
    C.chunk_seq++;
    C.cur_thread = 0;
    C.chunk_started_ns = mprof__mono_ns();
}

/* ---- compact encoding ---------------------------------------------------------------------- */

static unsigned char *out_reserve(size_t n)
{
    if (mprof_buf_reserve(&C.chunk, n) != 0)
        return NULL;
    return C.chunk.data + C.chunk.len;
}

static void out_commit(unsigned char *end)
{
    C.chunk.len = (size_t)(end - C.chunk.data);
}

static unsigned char *put_str(unsigned char *o, const char *s, size_t len)
{
    o = mprof_put_varint(o, len);
    memcpy(o, s, len);
    return o + len;
}

static uint32_t intern_loc(const mprof_srcloc *loc)
{
    uint32_t id = map_get(&C.locs, (uint64_t)(uintptr_t)loc);
    if (id)
        return id;
    id = ++C.next_loc;
    if (map_put(&C.locs, (uint64_t)(uintptr_t)loc, id) != 0)
        return 0;
    const char *name = loc->name ? loc->name : "";
    const char *fn = loc->function ? loc->function : "";
    const char *file = loc->file ? loc->file : "";
    size_t a = strlen(name), b = strlen(fn), c = strlen(file);
    unsigned char *o = out_reserve(a + b + c + 64), *rec = o;
    if (!o)
        return 0;
    *o++ = MPROF_EV_DEF_SRCLOC;
    o = mprof_put_varint(o, id);
    o = mprof_put_varint(o, loc->line);
    o = mprof_put_varint(o, loc->color);
    o = put_str(o, name, a);
    o = put_str(o, fn, b);
    o = put_str(o, file, c);
    out_commit(o);
    mprof__live_keep_def(rec, o);
    return id;
}

/* Names are interned by address, and by content so that equal literals share one id. */
static uint32_t intern_name(const char *s)
{
    if (!s)
        return 0;
    uint32_t id = map_get(&C.names, (uint64_t)(uintptr_t)s);
    if (id)
        return id;
    size_t len = strlen(s);
    uint64_t h = XXH3_64bits(s, len) | 1;
    id = map_get(&C.name_text, h);
    if (!id) {
        id = ++C.next_name;
        unsigned char *o = out_reserve(len + 16), *rec = o;
        if (!o)
            return 0;
        *o++ = MPROF_EV_DEF_STRING;
        o = mprof_put_varint(o, id);
        o = put_str(o, s, len);
        out_commit(o);
        mprof__live_keep_def(rec, o);
        map_put(&C.name_text, h, id);
    }
    map_put(&C.names, (uint64_t)(uintptr_t)s, id);
    return id;
}

static uint32_t intern_stack(const unsigned char *frames, unsigned depth)
{
    if (!depth)
        return 0;
    uint64_t h = XXH3_64bits(frames, (size_t)depth * 8) | 1;
    uint32_t id = map_get(&C.stacks, h);
    if (id)
        return id;
    if (C.next_stack == 0) {
        size_t before = C.chunk.len;
        mprof__modules_emit(&C.chunk); /* the module map precedes the session's first stack */
        mprof__live_keep_def(C.chunk.data + before, C.chunk.data + C.chunk.len);
    }
    id = ++C.next_stack;
    map_put(&C.stacks, h, id);
    unsigned char *o = out_reserve(16 + (size_t)depth * 10), *rec = o;
    if (!o)
        return 0;
    *o++ = MPROF_EV_DEF_CALLSTACK;
    o = mprof_put_varint(o, id);
    o = mprof_put_varint(o, depth);
    for (unsigned i = 0; i < depth; i++) {
        uint64_t a;
        memcpy(&a, frames + 8 * i, 8);
        o = mprof_put_varint(o, a);
    }
    out_commit(o);
    mprof__live_keep_def(rec, o);
    return id;
}

static void thread_context(mprof__thread *th)
{
    if (C.cur_thread == th->idx && th->col_chunk_seq == C.chunk_seq)
        return;
    unsigned char *o = out_reserve(32);
    if (!o)
        return;
    if (!th->col_named) {
        unsigned char *rec = o;
        *o++ = MPROF_EV_DEF_THREAD;
        o = mprof_put_varint(o, th->idx);
        o = mprof_put_varint(o, th->os_tid);
        th->col_named = 1;
        mprof__live_keep_def(rec, o);
    }
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, th->idx);
    out_commit(o);
    C.cur_thread = th->idx;
    if (th->col_chunk_seq != C.chunk_seq) {
        th->col_chunk_seq = C.chunk_seq;
        th->col_last_ticks = 0;
    }
}

static inline unsigned char *put_ts(unsigned char *o, mprof__thread *th, uint64_t ticks)
{
    o = mprof_put_varint(o, mprof_zigzag((int64_t)(ticks - th->col_last_ticks)));
    th->col_last_ticks = ticks;
    return o;
}

/* Translates a generic record at p. Returns the pointer after it, or NULL if the record is
 * malformed (which means a bug in an emitter: the rest of the block is skipped). */
static const unsigned char *translate_generic(mprof__thread *th, const unsigned char *p,
                                              const unsigned char *end)
{
    int tag = *p;
    const mprof_event_desc *d = mprof_event_desc_get(tag);
    if (!d || (size_t)(end - p) < d->raw_fixed)
        return NULL;
    /* Interning may write definitions, so resolve ids before reserving the record's bytes. */
    uint64_t vals[MPROF_MAX_FIELDS];
    const unsigned char *strs[MPROF_MAX_FIELDS];
    const unsigned char *q = p + 1;
    size_t extra = 0;
    for (int i = 0; i < d->n_fields; i++) {
        switch (d->fields[i]) {
        case MPROF_F_U8:
            vals[i] = *q++;
            break;
        case MPROF_F_U32: {
            uint32_t v;
            memcpy(&v, q, 4);
            vals[i] = v;
            q += 4;
            break;
        }
        case MPROF_F_STR: {
            uint16_t l;
            memcpy(&l, q, 2);
            if ((size_t)(end - q) < 2u + l)
                return NULL;
            strs[i] = q + 2;
            vals[i] = l;
            extra += l;
            q += 2 + l;
            break;
        }
        case MPROF_F_CS: {
            unsigned depth = *q;
            if ((size_t)(end - q) < 1u + depth * 8u)
                return NULL;
            vals[i] = intern_stack(q + 1, depth);
            q += 1 + depth * 8u;
            break;
        }
        case MPROF_F_LOC: {
            const mprof_srcloc *loc;
            memcpy(&loc, q, 8);
            vals[i] = intern_loc(loc);
            q += 8;
            break;
        }
        case MPROF_F_NAME: {
            const char *s;
            memcpy(&s, q, 8);
            vals[i] = intern_name(s);
            q += 8;
            break;
        }
        default:
            memcpy(&vals[i], q, 8);
            q += 8;
            break;
        }
    }
    thread_context(th);
    unsigned char *o = out_reserve(1 + (size_t)d->n_fields * 10 + extra + 8), *rec = o;
    if (!o)
        return NULL;
    *o++ = (unsigned char)tag;
    for (int i = 0; i < d->n_fields; i++) {
        switch (d->fields[i]) {
        case MPROF_F_TS:
            o = put_ts(o, th, vals[i]);
            break;
        case MPROF_F_U8:
            *o++ = (unsigned char)vals[i];
            break;
        case MPROF_F_F64:
            mprof_wr_u64(o, vals[i]);
            o += 8;
            break;
        case MPROF_F_I64:
            o = mprof_put_varint(o, mprof_zigzag((int64_t)vals[i]));
            break;
        case MPROF_F_STR:
            o = put_str(o, (const char *)strs[i], (size_t)vals[i]);
            break;
        default:
            o = mprof_put_varint(o, vals[i]);
            break;
        }
    }
    out_commit(o);
    if (mprof__live_keeps(tag))
        mprof__live_keep_event(th->idx, d->has_ts ? vals[0] : 0, rec, o);
    return q;
}

/* Length of the raw record at p (0 when it is malformed). Used to count what an out-of-memory
 * collector has to drop, so even that loss is counted rather than silent. */
static size_t raw_len(const unsigned char *p, const unsigned char *end)
{
    const mprof_event_desc *d = mprof_event_desc_get(*p);
    if (!d || (size_t)(end - p) < d->raw_fixed)
        return 0;
    size_t len = 1;
    for (int i = 0; i < d->n_fields; i++) {
        if (d->fields[i] == MPROF_F_STR)
            len += 2u + mprof_rd_u16(p + len);
        else if (d->fields[i] == MPROF_F_CS)
            len += 1u + p[len] * 8u;
        else
            len += d->fields[i] == MPROF_F_U8 ? 1 : d->fields[i] == MPROF_F_U32 ? 4 : 8;
        if (len > (size_t)(end - p))
            return 0;
    }
    return len;
}

static void drop_rest(const unsigned char *p, const unsigned char *end)
{
    static int logged;
    uint64_t n = 0;
    for (size_t l; p < end && (l = raw_len(p, end)) > 0; p += l)
        n++;
    atomic_fetch_add_explicit(&mprof__g.events_lost, n, memory_order_relaxed);
    if (!logged++)
        mprof__log("the collector ran out of memory: %llu events dropped (counted as lost)",
                   (unsigned long long)n);
}

/* Translates the raw records in [p, end) of one thread. */
static void translate(mprof__thread *th, const unsigned char *p, const unsigned char *end)
{
    uint64_t n = 0;
    while (p < end) {
        int tag = *p;
        if (tag == MPROF__EV_ZONE_BEGIN && end - p >= MPROF__ZONE_BEGIN_BYTES) {
            uint64_t ticks;
            const mprof_srcloc *loc;
            memcpy(&ticks, p + 1, 8);
            memcpy(&loc, p + 9, 8);
            uint32_t id = map_get(&C.locs, (uint64_t)(uintptr_t)loc);
            if (!id)
                id = intern_loc(loc);
            thread_context(th);
            unsigned char *o = out_reserve(24);
            if (!o) {
                drop_rest(p, end);
                break;
            }
            *o++ = MPROF__EV_ZONE_BEGIN;
            o = put_ts(o, th, ticks);
            o = mprof_put_varint(o, id);
            out_commit(o);
            p += MPROF__ZONE_BEGIN_BYTES;
        } else if (tag == MPROF__EV_ZONE_END && end - p >= MPROF__ZONE_END_BYTES) {
            uint64_t ticks;
            memcpy(&ticks, p + 1, 8);
            thread_context(th);
            unsigned char *o = out_reserve(16);
            if (!o) {
                drop_rest(p, end);
                break;
            }
            *o++ = MPROF__EV_ZONE_END;
            o = put_ts(o, th, ticks);
            out_commit(o);
            p += MPROF__ZONE_END_BYTES;
        } else {
            const unsigned char *q = translate_generic(th, p, end);
            if (!q) {
                if (raw_len(p, end)) {
                    drop_rest(p, end); /* well formed: the output buffer could not grow */
                } else {
                    mprof__log("internal error: malformed record 0x%02x in a thread buffer; "
                               "the rest of the block is skipped", tag);
                }
                break;
            }
            p = q;
        }
        n++;
        if (C.chunk.len >= mprof__g.cfg.chunk_bytes)
            emit_chunk();
    }
    C.events += n;
    atomic_fetch_add_explicit(&mprof__g.events_recorded, n, memory_order_relaxed);
}

/* Returns a drained block to its thread for reuse; a thread keeps at most 8 spare blocks. */
static void give_back(mprof__thread *th, mprof__block *b)
{
    if (atomic_load_explicit(&th->n_returned, memory_order_relaxed) >= 8 ||
        atomic_load_explicit(&th->exited, memory_order_relaxed)) {
        free(b);
        return;
    }
    atomic_fetch_add_explicit(&th->n_returned, 1, memory_order_relaxed);
    b->free_next = atomic_load_explicit(&th->returned, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&th->returned, &b->free_next, b,
                                                  memory_order_release, memory_order_relaxed))
        ;
}

/* Drains what thread th has published. discard: skip instead of translating. Returns 1 when the
 * thread has exited and everything it wrote has been drained (it can be freed). */
static int drain(mprof__thread *th, int discard)
{
    for (;;) {
        mprof__block *b = atomic_load_explicit(&th->head, memory_order_acquire);
        if (!b)
            return atomic_load_explicit(&th->exited, memory_order_acquire);
        if (!th->col_pos)
            th->col_pos = b->data;
        int exited = atomic_load_explicit(&th->exited, memory_order_acquire);
        mprof__block *next = atomic_load_explicit(&b->next, memory_order_acquire);
        unsigned char *lim;
        if (next) {
            lim = atomic_load_explicit(&b->final_end, memory_order_acquire);
        } else {
            lim = __atomic_load_n(&th->tb.cur, __ATOMIC_ACQUIRE);
            if (lim < b->data || lim > b->data + b->size)
                continue; /* the owner moved to a new block just now: next is set, retry */
        }
        if (lim > th->col_pos && !discard)
            translate(th, th->col_pos, lim);
        th->col_pos = lim;
        if (!next)
            return exited;
        atomic_store_explicit(&th->head, next, memory_order_release);
        th->col_pos = next->data;
        atomic_fetch_sub(&mprof__g.buffered_bytes, sizeof(mprof__block) + MPROF__BLOCK_BYTES);
        give_back(th, b);
    }
}

static void free_thread(mprof__thread *th)
{
    for (mprof__block *f = atomic_load(&th->returned), *nx; f; f = nx) {
        nx = f->free_next;
        free(f);
    }
    for (mprof__block *f = th->spare, *nx; f; f = nx) {
        nx = f->free_next;
        free(f);
    }
    mprof__block *b = atomic_load(&th->head);
    while (b) {
        mprof__block *n = atomic_load(&b->next);
        free(b);
        atomic_fetch_sub(&mprof__g.buffered_bytes, sizeof(mprof__block) + MPROF__BLOCK_BYTES);
        b = n;
    }
    free(th);
}

/* Drains every thread; frees the ones that have exited. */
static void drain_all(int discard)
{
    pthread_mutex_lock(&mprof__g.threads_lock);
    size_t n = 0;
    for (mprof__thread *t = mprof__g.threads; t; t = t->next)
        n++;
    if (n > C.snap_cap) {
        mprof__thread **s = realloc(C.snap, n * 2 * sizeof *s);
        if (s) {
            C.snap = s;
            C.snap_cap = n * 2;
        }
    }
    n = 0;
    for (mprof__thread *t = mprof__g.threads; t && n < C.snap_cap; t = t->next)
        C.snap[n++] = t;
    pthread_mutex_unlock(&mprof__g.threads_lock);

    int any_gone = 0;
    for (size_t i = 0; i < n; i++)
        if (drain(C.snap[i], discard))
            any_gone = 1;
    if (!any_gone)
        return;
    pthread_mutex_lock(&mprof__g.threads_lock);
    for (mprof__thread **pp = &mprof__g.threads; *pp;) {
        mprof__thread *t = *pp;
        int gone = atomic_load_explicit(&t->exited, memory_order_acquire);
        if (gone) {
            mprof__block *b = atomic_load(&t->head);
            gone = !b || (!atomic_load(&b->next) && t->col_pos == __atomic_load_n(&t->tb.cur, __ATOMIC_ACQUIRE));
        }
        if (gone) {
            *pp = t->next;
            free_thread(t);
        } else {
            pp = &t->next;
        }
    }
    pthread_mutex_unlock(&mprof__g.threads_lock);
}

/* ---- INFO and END chunks ------------------------------------------------------------------- */

static void kvf(mprof_buf *b, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void kvf(mprof_buf *b, const char *key, const char *fmt, ...)
{
    char v[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    mprof_fmt_kv(b, key, v);
}

static void read_small_file(const char *path, char *out, size_t n, int nul_to_space)
{
    out[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    size_t got = fread(out, 1, n - 1, f);
    fclose(f);
    out[got] = 0;
    for (size_t i = 0; i < got; i++)
        if (out[i] == 0 && nul_to_space)
            out[i] = ' ';
    while (got && (out[got - 1] == ' ' || out[got - 1] == '\n'))
        out[--got] = 0;
}

static void cpu_model(char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ')
                    c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(out, n, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

void mprof__collector_info(mprof_buf *out)
{
    mprof_buf b = *out;
    struct utsname u;
    char buf[1024];
    kvf(&b, "format", "mprof %d.%d", MPROF_FMT_VERSION_MAJOR, MPROF_FMT_VERSION_MINOR);
    kvf(&b, "library", "%d.%d", MPROF_VERSION_MAJOR, MPROF_VERSION_MINOR);
    kvf(&b, "app", "%s", mprof__g.cfg.app_name);
    kvf(&b, "pid", "%ld", (long)getpid());
    read_small_file("/proc/self/cmdline", buf, sizeof buf, 1);
    kvf(&b, "cmdline", "%s", buf);
    kvf(&b, "start_unix_ns", "%" PRIu64, mprof__g.real0_ns);
    kvf(&b, "timer", "%s", mprof__g.timer_name);
    kvf(&b, "ns_per_tick", "%.17g", mprof__g.ns_per_tick);
    kvf(&b, "tick0", "%" PRIu64, mprof__g.tick0);
    if (mprof__g.zone_cost_ns > 0)
        kvf(&b, "zone_cost_ns", "%.1f", mprof__g.zone_cost_ns);
    if (uname(&u) == 0) {
        kvf(&b, "hostname", "%s", u.nodename);
        kvf(&b, "os", "%s %s %s", u.sysname, u.release, u.machine);
    }
    cpu_model(buf, sizeof buf);
    if (buf[0])
        kvf(&b, "cpu", "%s", buf);
    kvf(&b, "cores", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    const char *v;
    if ((v = getenv("MPROF_GIT_SHA")) && *v)
        kvf(&b, "git_sha", "%s", v);
    if ((v = getenv("MPROF_BUILD_TYPE")) && *v)
        kvf(&b, "build_type", "%s", v);
    kvf(&b, "memory_limit_bytes", "%zu", mprof__g.cfg.memory_limit_bytes);
    *out = b;
}

static void write_info(void)
{
    mprof_buf b = {0};
    mprof__collector_info(&b);
    emit_framed(MPROF_CHUNK_INFO, &b);
    mprof_buf_free(&b);
}

static void write_end(void)
{
    mprof_buf b = {0};
    kvf(&b, "events", "%" PRIu64, C.events);
    kvf(&b, "events_lost", "%" PRIu64, atomic_load(&mprof__g.events_lost));
    kvf(&b, "bytes_raw", "%" PRIu64, atomic_load(&mprof__g.bytes_raw));
    kvf(&b, "chunks", "%" PRIu64, atomic_load(&mprof__g.chunks_written));
    kvf(&b, "peak_buffered_bytes", "%" PRIu64, atomic_load(&mprof__g.peak_buffered_bytes));
    kvf(&b, "gpu_queries_lost", "%" PRIu64, atomic_load(&mprof__g.gpu_queries_lost));
    kvf(&b, "end_ticks", "%" PRIu64, mprof__ticks());
    if (C.sink_failed) {
        if (sink_recover(&b) != 0)
            mprof__log("the capture's end record could not be written either: the file reads "
                       "as cut off");
        mprof_buf_free(&b);
        return;
    }
    emit_framed(MPROF_CHUNK_END, &b);
    mprof_buf_free(&b);
}

/* ---- the thread ---------------------------------------------------------------------------- */

static void calibration_record(void)
{
    /* A (ticks, CLOCK_MONOTONIC_RAW-based ns) pair in the process context lets a reader check
     * the rate over the whole capture. */
    unsigned char *o = out_reserve(32);
    if (!o)
        return;
    if (C.cur_thread != 0) {
        *o++ = MPROF_EV_THREAD;
        o = mprof_put_varint(o, 0);
        C.cur_thread = 0;
    }
    static uint64_t last_ticks;
    static uint32_t last_seq;
    uint64_t t = mprof__ticks();
    uint64_t base = last_seq == C.chunk_seq ? last_ticks : 0;
    last_ticks = t;
    last_seq = C.chunk_seq;
    *o++ = MPROF_EV_CALIBRATION;
    o = mprof_put_varint(o, mprof_zigzag((int64_t)(t - base)));
    o = mprof_put_varint(o, mprof__mono_ns() - mprof__g.mono0_ns);
    out_commit(o);
}

/* A tool finished its handshake: close the current chunk so its stream starts on a chunk
 * boundary, then hand the session its definitions and history (live.c). */
static void live_poll(void)
{
    if (mprof__live_pending()) {
        emit_chunk();
        mprof__live_attach();
    }
}

static void *collector_main(void *arg)
{
    (void)arg;
    mprof__set_os_thread_name("mprof-collector");
    uint64_t last_cal = mprof__mono_ns();
    pthread_mutex_lock(&C.m);
    while (!C.stop) {
        uint64_t req = C.flush_req;
        pthread_mutex_unlock(&C.m);

        drain_all(0);
        live_poll();
        uint64_t now = mprof__mono_ns();
        if (now - last_cal > 1000000000ull) {
            calibration_record();
            last_cal = now;
        }
        if (C.chunk.len && (req != C.flush_done || now - C.chunk_started_ns > 250000000ull))
            emit_chunk();

        pthread_mutex_lock(&C.m);
        if (req != C.flush_done) {
            C.flush_done = req;
            pthread_cond_broadcast(&C.done);
        }
        if (C.stop || C.flush_req != C.flush_done)
            continue;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)mprof__g.cfg.flush_interval_ms * 1000000u;
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&C.wake, &C.m, &ts);
    }
    pthread_mutex_unlock(&C.m);
    drain_all(0);
    emit_chunk();
    return NULL;
}

int mprof__collector_start(void)
{
    const char *path = mprof__g.cfg.capture_path;
    C.fd = -1;
    C.sink_failed = 0;
    C.sink_errno = 0;
    C.n_sink_writes = C.unwritten_chunks = C.unwritten_bytes = 0;
    if (path) {
        if (mprof__mkdirs_for(path) != 0) {
            mprof__log("cannot create the directories for %s: %s", path, strerror(errno));
            return MPROF_ERR_IO;
        }
        C.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (C.fd < 0) {
            mprof__log("cannot open %s: %s", path, strerror(errno));
            return MPROF_ERR_IO;
        }
    }
    if (!C.cctx && !(C.cctx = ZSTD_createCCtx())) {
        if (C.fd >= 0)
            close(C.fd);
        C.fd = -1;
        return MPROF_ERR_NOMEM;
    }
    /* A new session: leftovers written after the previous stop are discarded, and every
     * definition is announced again. */
    drain_all(1);
    map_clear(&C.locs);
    map_clear(&C.names);
    map_clear(&C.name_text);
    map_clear(&C.stacks);
    C.next_loc = C.next_name = C.next_stack = 0;
    C.events = 0;
    C.chunk.len = 0;
    C.chunk_seq++;
    C.cur_thread = 0;
    C.chunk_started_ns = mprof__mono_ns();
    atomic_store(&mprof__g.events_lost, 0);
    atomic_store(&mprof__g.events_recorded, 0);
    atomic_store(&mprof__g.bytes_raw, 0);
    atomic_store(&mprof__g.bytes_written, 0);
    atomic_store(&mprof__g.chunks_written, 0);
    atomic_store(&mprof__g.peak_buffered_bytes, atomic_load(&mprof__g.buffered_bytes));
    pthread_mutex_lock(&mprof__g.threads_lock);
    for (mprof__thread *t = mprof__g.threads; t; t = t->next)
        t->col_named = 0;
    pthread_mutex_unlock(&mprof__g.threads_lock);

    if (C.fd >= 0) {
        unsigned char h[MPROF_FMT_HEADER_BYTES];
        mprof_fmt_file_header(h);
        sink_write(h, sizeof h);
        write_info();
    }
    int live_recording = mprof__live_start(C.fd >= 0);
    int recording = C.fd >= 0 || live_recording;
    C.stop = 0;
    C.flush_req = C.flush_done = 0;
    /* The mode is set before the thread starts so that a capture session attached by the
     * collector (which may switch IDLE to RECORDING) is never overwritten. */
    __atomic_store_n(&mprof__mode, recording ? MPROF__MODE_RECORDING : MPROF__MODE_IDLE,
                     __ATOMIC_RELEASE);
    if (pthread_create(&C.thread, NULL, collector_main, NULL) != 0) {
        __atomic_store_n(&mprof__mode, MPROF__MODE_OFF, __ATOMIC_RELEASE);
        mprof__live_stop();
        if (C.fd >= 0)
            close(C.fd);
        C.fd = -1;
        return MPROF_ERR_STATE;
    }
    C.running = 1;
    if (mprof__g.cfg.verbose == MPROF_TOGGLE_ON)
        mprof__log("started%s%s%s", C.fd >= 0 ? ", capturing to " : "", C.fd >= 0 ? path : "",
                   live_recording ? ", keeping history for live capture"
                                  : (recording ? "" : " (not recording)"));
    return MPROF_OK;
}

void mprof__collector_stop(void)
{
    if (!C.running)
        return;
    pthread_mutex_lock(&C.m);
    C.stop = 1;
    pthread_cond_signal(&C.wake);
    pthread_mutex_unlock(&C.m);
    pthread_join(C.thread, NULL);
    C.running = 0;
    uint64_t lost = atomic_load(&mprof__g.events_lost);
    if (C.fd >= 0) {
        write_end();
        if (close(C.fd) != 0)
            mprof__log("closing the capture failed: %s", strerror(errno));
        C.fd = -1;
    }
    mprof__live_stop();
    if (lost)
        mprof__log("%" PRIu64 " events were dropped (memory cap %zu MiB reached); they are "
                   "counted in the capture",
                   lost, mprof__g.cfg.memory_limit_bytes >> 20);
    if (mprof__g.cfg.verbose == MPROF_TOGGLE_ON)
        mprof__log("stopped: %" PRIu64 " events, %" PRIu64 " bytes written", C.events,
                   atomic_load(&mprof__g.bytes_written));
}

void mprof__collector_flush(void)
{
    pthread_mutex_lock(&C.m);
    if (!C.running) {
        pthread_mutex_unlock(&C.m);
        return;
    }
    uint64_t want = ++C.flush_req;
    pthread_cond_signal(&C.wake);
    while (C.flush_done < want && !C.stop)
        pthread_cond_wait(&C.done, &C.m);
    pthread_mutex_unlock(&C.m);
}
