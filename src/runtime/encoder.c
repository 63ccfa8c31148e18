/*
 * encoder.c - turns raw records into capture chunks and hands them to the sinks.
 *
 * Each thread's new raw records are translated into the compact form of format.h: timestamps
 * become per-thread deltas, source-location and name pointers become small ids (announced once
 * with DEF_SRCLOC / DEF_STRING), callstacks are interned (after the module map, which is what
 * lets the tools symbolize them). Records of one thread are preceded by a THREAD record. The
 * definitions and the process-context records go to chunks of their own, the process chunks
 * (docs/FORMAT.md "Process chunks"), emitted before the threads' chunk that uses them, so a
 * reader of the system records and definitions alone decompresses only those. When a chunk
 * reaches chunk_bytes it is compressed and framed (format/writer.c) and handed to
 * every sink (sink.h); definitions and sticky records are also handed to sinks that keep them
 * apart. Data flows one way: the sinks never call back. Zone begin/end, which are nearly all of
 * the traffic, take a hand-written fast path; every other event is translated by walking its
 * field list in the event table.
 */
#include "encoder.h"
#include "buffers.h"
#include "config.h"
#include "info.h"
#include "platform/platform.h"
#include "stats.h"
#include "timer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
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

/* ---- encoder state ------------------------------------------------------------------------- */

/* A chunk being built and the encoding state that restarts with every chunk. */
typedef struct stream {
    mprof_buf chunk;       /* compact payload being built */
    uint32_t chunk_seq;    /* new for every chunk of either stream */
    uint32_t cur_thread;   /* thread context in the current chunk; 0 = none */
    /* TS_SCALE: timestamp deltas in the current chunk are divided by scale (1 = none). */
    int preamble_done;     /* the chunk's TS_SCALE record, if any, is written */
    uint64_t scale;        /* in effect in the current chunk */
    int scale_dropped;     /* a delta did not fit: scale is 1 until one fits the step again */
    unsigned rescales;     /* times the scale was restored in the current chunk */
    uint64_t chunk_started_ns;
    uint64_t events;       /* in the current chunk, as mprof_event_counted counts them */
    mprof__chunk_marks marks; /* the current chunk's unnamed frame marks */
} stream;

/* The main frames as the file holds them (analysis/range.h): the unnamed frame marks of the
 * thread that made the first one. */
typedef struct main_frames {
    uint32_t thread;       /* 0 = no mark yet */
    uint64_t marks, first_ticks, last_ticks;
} main_frames;

static struct {
    /* The stream records are written to: the threads' (main), or, while in_proc, the process
     * stream (MPROF_CHUNK_F_PROCESS): the process-context records and every definition, so a
     * reader that wants only those decompresses only its chunks. The two swap places. */
    stream s;
    stream other;
    int in_proc;
    uint32_t seq_next;
    uint64_t process_chunks; /* emitted this session */
    main_frames mf;
    mprof_buf framed;      /* framed chunks waiting for the sink */
    ZSTD_CCtx *cctx;
    map locs, names, name_text, stacks;
    uint32_t next_loc, next_name, next_stack;
    uint64_t q_lowmask, q_inv, q_max; /* divisibility by mprof__clock.tick_quantum, see ts_fits */
    unsigned q_shift;
    mprof__sink *sinks[MPROF__MAX_SINKS]; /* the sinks of this session */
    int n_sinks;
    mprof__kv_fn before_stacks;
    uint64_t events;       /* records translated this session */
    /* Process-context records (thread 0): CALIBRATION, and the raw records of the buffers'
     * process queue; proc carries their timestamp state. */
    mprof__thread proc;
} C;

/* The framed form of a chunk, made on first use (a sink may not need it). */
typedef struct chunk_impl {
    const mprof_buf *payload;
    unsigned flags;
    int done, ok;
} chunk_impl;

static const mprof_buf *chunk_framed(const mprof__chunk *c)
{
    chunk_impl *ci = c->impl;
    if (!ci->done) {
        ci->done = 1;
        C.framed.len = 0;
        int level = c->kind == MPROF_CHUNK_EVENTS ? mprof__config.compression_level : 0;
        ci->ok = mprof_fmt_chunk_ex(&C.framed, c->kind, ci->flags, ci->payload->data,
                                    ci->payload->len, level, C.cctx) == 0;
        if (!ci->ok)
            mprof__log("cannot frame a capture chunk (out of memory)");
    }
    return ci->ok ? &C.framed : NULL;
}

static void emit_flags(int kind, const mprof_buf *payload, unsigned flags, uint64_t events,
                       const mprof__chunk_marks *marks)
{
    chunk_impl ci = {payload, flags, 0, 0};
    /* framed() writes the flags into the chunk's header */
    mprof__chunk c = {kind, payload, events, flags, {0}, chunk_framed, &ci};
    if (marks)
        c.marks = *marks;
    for (int i = 0; i < C.n_sinks; i++)
        C.sinks[i]->ops->chunk(C.sinks[i], &c);
    atomic_fetch_add(&mprof__stats.chunks_written, 1);
}

void mprof__encoder_emit(int kind, const mprof_buf *payload)
{
    emit_flags(kind, payload, 0, 0, NULL);
}

/* Hands a definition record to the sinks that keep definitions apart from the chunks. */
static void keep_def(const unsigned char *rec, const unsigned char *end)
{
    for (int i = 0; i < C.n_sinks; i++)
        if (C.sinks[i]->ops->def)
            C.sinks[i]->ops->def(C.sinks[i], rec, end);
}

static int sinks_keep(int tag)
{
    for (int i = 0; i < C.n_sinks; i++)
        if (C.sinks[i]->ops->keeps && C.sinks[i]->ops->keeps(C.sinks[i], tag))
            return 1;
    return 0;
}

static void stream_reset(stream *st)
{
    st->chunk.len = 0;
    st->chunk_seq = ++C.seq_next;
    st->cur_thread = 0;
    st->preamble_done = 0;
    st->scale = 1;
    st->scale_dropped = 0;
    st->rescales = 0;
    st->chunk_started_ns = mprof__mono_ns();
    st->events = 0;
    memset(&st->marks, 0, sizeof st->marks);
}

static void stream_emit(stream *st, unsigned flags)
{
    if (st->chunk.len) {
        atomic_fetch_add(&mprof__stats.bytes_raw, st->chunk.len);
        emit_flags(MPROF_CHUNK_EVENTS, &st->chunk, flags, st->events, &st->marks);
        if (flags & MPROF_CHUNK_F_PROCESS)
            C.process_chunks++;
    }
    stream_reset(st);
}

/* Emits the chunk records are written to. A threads' chunk goes after the process stream's,
 * which holds the definitions it uses; a process chunk may go on its own. */
void mprof__encoder_emit_chunk(void)
{
    if (C.in_proc) {
        stream_emit(&C.s, MPROF_CHUNK_F_PROCESS);
        return;
    }
    if (C.other.chunk.len)
        stream_emit(&C.other, MPROF_CHUNK_F_PROCESS);
    stream_emit(&C.s, 0);
}

/* Records go to the process stream until leave_process. */
static void enter_process(void)
{
    stream t = C.s;
    C.s = C.other;
    C.other = t;
    C.in_proc = 1;
}

static void leave_process(void)
{
    stream t = C.s;
    C.s = C.other;
    C.other = t;
    C.in_proc = 0;
}

/* ---- compact encoding ---------------------------------------------------------------------- */

static unsigned char *out_reserve(size_t n)
{
    if (mprof_buf_reserve(&C.s.chunk, n) != 0)
        return NULL;
    return C.s.chunk.data + C.s.chunk.len;
}

static void out_commit(unsigned char *end)
{
    C.s.chunk.len = (size_t)(end - C.s.chunk.data);
}

/* Definitions go to the process stream, whichever stream is being written. */
static mprof_buf *defs_buf(void)
{
    return C.in_proc ? &C.s.chunk : &C.other.chunk;
}

static unsigned char *def_reserve(size_t n)
{
    mprof_buf *b = defs_buf();
    if (mprof_buf_reserve(b, n) != 0)
        return NULL;
    return b->data + b->len;
}

static void def_commit(unsigned char *end)
{
    mprof_buf *b = defs_buf();
    b->len = (size_t)(end - b->data);
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
    unsigned char *o = def_reserve(a + b + c + 64), *rec = o;
    if (!o)
        return 0;
    *o++ = MPROF_EV_DEF_SRCLOC;
    o = mprof_put_varint(o, id);
    o = mprof_put_varint(o, loc->line);
    o = mprof_put_varint(o, loc->color);
    o = mprof_put_str(o, name, a);
    o = mprof_put_str(o, fn, b);
    o = mprof_put_str(o, file, c);
    def_commit(o);
    keep_def(rec, o);
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
        unsigned char *o = def_reserve(len + 16), *rec = o;
        if (!o)
            return 0;
        *o++ = MPROF_EV_DEF_STRING;
        o = mprof_put_varint(o, id);
        o = mprof_put_str(o, s, len);
        def_commit(o);
        keep_def(rec, o);
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
        mprof_buf *defs = defs_buf();
        size_t before = defs->len;
        if (C.before_stacks) /* the module map precedes the session's first stack */
            C.before_stacks(defs);
        keep_def(defs->data + before, defs->data + defs->len);
    }
    id = ++C.next_stack;
    map_put(&C.stacks, h, id);
    unsigned char *o = def_reserve(16 + (size_t)depth * 10), *rec = o;
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
    def_commit(o);
    keep_def(rec, o);
    return id;
}

/* ---- timestamps ---------------------------------------------------------------------------- */

/* The clock of some virtual machines advances in steps (this project's VM: 21 ticks), so every
 * timestamp delta is a multiple of the step. A chunk whose first record is TS_SCALE q stores
 * deltas divided by q, which is exact and makes them small; a delta that is not a multiple
 * (a system record's timestamp, converted from the kernel's nanoseconds, is anywhere between
 * two steps) is written after a TS_SCALE 1 record, so the encoding never loses a tick, and the
 * next delta that is a multiple again restores the scale with TS_SCALE q. Without the restore
 * one context switch record would leave the rest of its chunk unscaled, and a capture's size
 * would grow with the number of chunks that have one. At most one restore per 64 bytes of
 * chunk: a clock that keeps breaking its step then stays unscaled for the rest of the chunk, so
 * the round trips (4 bytes each) cost at most ~6 % of it. mprof__clock.tick_quantum is measured
 * at start-up (timer.c). */
static inline unsigned max_rescales(void)
{
    return (unsigned)(mprof__config.chunk_bytes / 64) + 16;
}
static void scale_setup(void)
{
    uint64_t q = mprof__clock.tick_quantum > 1 ? mprof__clock.tick_quantum : 1;
    C.q_shift = 0;
    while (!(q & 1)) {
        q >>= 1;
        C.q_shift++;
    }
    C.q_lowmask = ((uint64_t)1 << C.q_shift) - 1;
    /* The inverse of the odd part modulo 2^64 (Newton's iteration): x * q_inv is x / q when q
     * divides x, and is above UINT64_MAX / q otherwise. */
    uint64_t inv = q;
    for (int i = 0; i < 6; i++)
        inv *= 2 - q * inv;
    C.q_inv = inv;
    C.q_max = UINT64_MAX / q;
}

static void write_scale(uint64_t q)
{
    unsigned char *o = out_reserve(12);
    if (!o) {
        C.s.scale = 1; /* nothing written: deltas stay unscaled, as the reader assumes */
        return;
    }
    *o++ = MPROF_EV_TS_SCALE;
    o = mprof_put_varint(o, q);
    out_commit(o);
    C.s.scale = q;
}

/* Before the first timestamp of a chunk: the chunk's TS_SCALE record when the clock steps. */
static inline void chunk_preamble(void)
{
    if (C.s.preamble_done)
        return;
    C.s.preamble_done = 1;
    C.s.scale = 1;
    if (mprof__clock.tick_quantum > 1)
        write_scale(mprof__clock.tick_quantum);
}

/* Whether the delta d (two's complement) is a whole number of clock steps (its magnitude within
 * UINT64_MAX / step). */
static inline int step_multiple(uint64_t d)
{
    uint64_t u = (int64_t)d < 0 ? (uint64_t)0 - d : d;
    return !(u & C.q_lowmask) && (u >> C.q_shift) * C.q_inv <= C.q_max;
}

/* The code of a TS: the absolute ticks for a thread's first TS in the chunk, else the zigzag of
 * the delta from its previous TS divided by the chunk's scale. Returns 0 when the delta is not
 * a multiple of the scale. */
static inline int ts_code(int first, uint64_t last, uint64_t ticks, uint64_t *out)
{
    int64_t d = first ? (int64_t)ticks : (int64_t)(ticks - last);
    if (first || C.s.scale == 1) {
        *out = mprof_zigzag(d);
        return 1;
    }
    uint64_t u = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
    if (u & C.q_lowmask)
        return 0;
    uint64_t qv = (u >> C.q_shift) * C.q_inv;
    if (qv > C.q_max)
        return 0;
    *out = mprof_zigzag(d < 0 ? -(int64_t)qv : (int64_t)qv);
    return 1;
}

/* Makes sure ticks can be encoded for th: drops the chunk's scale when it cannot. Call before
 * writing the record's tag (the TS_SCALE record must come between records). */
static inline void ts_fit(int first, uint64_t last, uint64_t ticks)
{
    uint64_t v;
    if (C.s.scale_dropped) {
        if (!first && step_multiple(ticks - last)) {
            write_scale(mprof__clock.tick_quantum);
            C.s.scale_dropped = 0;
            C.s.rescales++;
        }
        return;
    }
    if (!ts_code(first, last, ticks, &v)) {
        write_scale(1);
        C.s.scale_dropped = C.s.rescales < max_rescales();
    }
}

static void thread_context(mprof__thread *th)
{
    chunk_preamble();
    if (C.s.cur_thread == th->idx && th->col_chunk_seq == C.s.chunk_seq)
        return;
    if (!th->col_named) {
        unsigned char *d = def_reserve(32), *rec = d;
        if (!d)
            return;
        *d++ = MPROF_EV_DEF_THREAD;
        d = mprof_put_varint(d, th->idx);
        d = mprof_put_varint(d, th->os_tid);
        def_commit(d);
        th->col_named = 1;
        keep_def(rec, d);
    }
    unsigned char *o = out_reserve(16);
    if (!o)
        return;
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, th->idx);
    out_commit(o);
    C.s.cur_thread = th->idx;
    if (th->col_chunk_seq != C.s.chunk_seq) {
        th->col_chunk_seq = C.s.chunk_seq;
        th->col_last_ticks = 0;
        th->col_ts_first = 1;
        th->col_leaf_loc = 0;
    }
}

/* Writes ticks as th's next TS; ts_fit(...) was called for it before the record's tag. */
static inline unsigned char *put_ts(unsigned char *o, mprof__thread *th, uint64_t ticks)
{
    uint64_t v;
    if (!ts_code(th->col_ts_first, th->col_last_ticks, ticks, &v))
        v = mprof_zigzag((int64_t)(ticks - th->col_last_ticks)); /* unreachable after ts_fit */
    th->col_last_ticks = ticks;
    th->col_ts_first = 0;
    return mprof_put_varint(o, v);
}

/* An unnamed frame mark, in the order of the threads' chunks (the file's order), counted for the
 * session (END of a file) and for the chunk it is written to (END of a live capture). */
static void main_mark(uint32_t thread, uint64_t ticks)
{
    mprof__chunk_marks *cm = &C.s.marks;
    if (!C.mf.thread)
        C.mf.thread = thread;
    if (thread != C.mf.thread) {
        cm->others++;
        return;
    }
    if (!C.mf.marks || ticks < C.mf.first_ticks)
        C.mf.first_ticks = ticks;
    if (!C.mf.marks || ticks > C.mf.last_ticks)
        C.mf.last_ticks = ticks;
    C.mf.marks++;
    if (!cm->marks || ticks < cm->first_ticks)
        cm->first_ticks = ticks;
    if (!cm->marks || ticks > cm->last_ticks)
        cm->last_ticks = ticks;
    cm->thread = thread;
    cm->marks++;
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
    if (d->has_ts)
        ts_fit(th->col_ts_first, th->col_last_ticks, vals[0]);
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
            o = mprof_put_str(o, (const char *)strs[i], (size_t)vals[i]);
            break;
        default:
            o = mprof_put_varint(o, vals[i]);
            break;
        }
    }
    out_commit(o);
    if (tag == MPROF_EV_FRAME_MARK && !vals[1] && th->idx)
        main_mark(th->idx, vals[0]);
    if (sinks_keep(tag))
        for (int i = 0; i < C.n_sinks; i++)
            if (C.sinks[i]->ops->keep)
                C.sinks[i]->ops->keep(C.sinks[i], th->idx, d->has_ts ? vals[0] : 0, rec, o);
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
    atomic_fetch_add_explicit(&mprof__stats.events_lost, n, memory_order_relaxed);
    if (!logged++)
        mprof__log("the collector ran out of memory: %llu events dropped (counted as lost)",
                   (unsigned long long)n);
}

/* Source-location ids by address, in front of the map: zone begins are most of the traffic
 * and a program has few hot call sites. */
#define LOC_CACHE 256
static struct {
    const mprof_srcloc *key;
    uint32_t id;
} loc_cache[LOC_CACHE];

static void loc_cache_clear(void)
{
    memset(loc_cache, 0, sizeof loc_cache);
}

/* The id of loc, or 0 when it has none yet (intern_loc defines it). */
static inline uint32_t loc_id(const mprof_srcloc *loc)
{
    uintptr_t k = (uintptr_t)loc;
    size_t i = ((k >> 4) ^ (k >> 12)) & (LOC_CACHE - 1);
    if (loc_cache[i].key == loc)
        return loc_cache[i].id;
    uint32_t id = map_get(&C.locs, (uint64_t)k);
    if (id) {
        loc_cache[i].key = loc;
        loc_cache[i].id = id;
    }
    return id;
}

/* One record the careful way: a zone whose location is new or whose delta does not fit the
 * chunk's scale, or any other event. Returns the pointer after it, or NULL after dropping or
 * skipping the rest of [p, end). */
static const unsigned char *translate_one(mprof__thread *th, const unsigned char *p,
                                          const unsigned char *end)
{
    int tag = *p;
    if (tag == MPROF__EV_ZONE_BEGIN && end - p >= MPROF__ZONE_BEGIN_BYTES) {
        uint64_t ticks;
        const mprof_srcloc *loc;
        memcpy(&ticks, p + 1, 8);
        memcpy(&loc, p + 9, 8);
        uint32_t id = loc_id(loc);
        if (!id)
            id = intern_loc(loc);
        thread_context(th);
        ts_fit(th->col_ts_first, th->col_last_ticks, ticks);
        unsigned char *o = out_reserve(24);
        if (!o) {
            drop_rest(p, end);
            return NULL;
        }
        *o++ = MPROF__EV_ZONE_BEGIN;
        o = put_ts(o, th, ticks);
        o = mprof_put_varint(o, id);
        out_commit(o);
        return p + MPROF__ZONE_BEGIN_BYTES;
    }
    if (tag == MPROF__EV_ZONE_END && end - p >= MPROF__ZONE_END_BYTES) {
        uint64_t ticks;
        memcpy(&ticks, p + 1, 8);
        thread_context(th);
        ts_fit(th->col_ts_first, th->col_last_ticks, ticks);
        unsigned char *o = out_reserve(16);
        if (!o) {
            drop_rest(p, end);
            return NULL;
        }
        *o++ = MPROF__EV_ZONE_END;
        o = put_ts(o, th, ticks);
        out_commit(o);
        return p + MPROF__ZONE_END_BYTES;
    }
    const unsigned char *q = translate_generic(th, p, end);
    if (!q) {
        if (raw_len(p, end))
            drop_rest(p, end); /* well formed: the output buffer could not grow */
        else
            mprof__log("internal error: malformed record 0x%02x in a thread buffer; "
                       "the rest of the block is skipped", tag);
    }
    return q;
}

/* Translates the raw records in [p, end) of one thread. Zone begin/end records with a known
 * location go through a tight loop that writes into space reserved once for the rest of the
 * chunk (a compact zone record is at most 16 bytes); everything else takes translate_one. */
void mprof__encoder_translate(mprof__thread *th, const unsigned char *p, const unsigned char *end)
{
    uint64_t n = 0, n_in_chunk = 0; /* translated; of those, already added to a chunk's count */
    const size_t chunk_bytes = mprof__config.chunk_bytes;
    while (p < end) {
        if (C.s.chunk.len >= chunk_bytes) {
            C.s.events += n - n_in_chunk;
            n_in_chunk = n;
            mprof__encoder_emit_chunk();
        } else if (C.other.chunk.len >= chunk_bytes && !C.in_proc)
            stream_emit(&C.other, MPROF_CHUNK_F_PROCESS); /* many new names: definitions alone */
        thread_context(th);
        size_t room = chunk_bytes - C.s.chunk.len;
        if (C.s.chunk.len < chunk_bytes && mprof_buf_reserve(&C.s.chunk, room + 32) == 0) {
            unsigned char *o = C.s.chunk.data + C.s.chunk.len, *stop = o + room;
            /* Everything the loop reads lives in locals: its byte stores could alias any
             * global, which would make the compiler reload them after every byte. The thread's
             * first TS in a chunk (absolute) goes through translate_one. */
            const unsigned char *pe_begin = end - MPROF__ZONE_BEGIN_BYTES;
            const unsigned char *pe_end = end - MPROF__ZONE_END_BYTES;
            const uint64_t scale = C.s.scale, lowmask = C.q_lowmask, inv = C.q_inv,
                           qmax = C.q_max;
            const unsigned shift = C.q_shift;
            const int dropped = C.s.scale_dropped;
            uint64_t last = th->col_last_ticks;
            uint32_t leaf = th->col_leaf_loc;
            int first = th->col_ts_first;
            const unsigned char *pe_leaf = end - (MPROF__ZONE_BEGIN_BYTES + MPROF__ZONE_END_BYTES);
            while (!first && o < stop && p < end) {
                uint64_t ticks;
                int tag = *p;
                uint32_t id = 0;
                /* A zone without children whose begin and length are a few clock units is one
                 * byte (ZONE_LEAF, format.h), a longer one a tag and a varint (ZONE_LEAF_LONG),
                 * after a ZONE_LEAF_LOC when its location is not the thread's previous leaf's.
                 * Short repeated zones are where events are densest: this is most of what zstd
                 * then has to read, and most of what the collector writes. While the chunk's
                 * scale is dropped (a delta that was not a whole step) zones take the plain
                 * records, which restore it. */
                if (tag == MPROF__EV_ZONE_BEGIN && p <= pe_leaf &&
                    p[MPROF__ZONE_BEGIN_BYTES] == MPROF__EV_ZONE_END && !(scale == 1 && dropped)) {
                    const mprof_srcloc *loc;
                    uint64_t te;
                    memcpy(&ticks, p + 1, 8);
                    memcpy(&loc, p + 9, 8);
                    memcpy(&te, p + MPROF__ZONE_BEGIN_BYTES + 1, 8);
                    uint64_t db = ticks - last, de = te - ticks, qb = db, qe = de;
                    int exact = 1;
                    if (scale > 1) { /* in clock units: exact quotients only */
                        qb = (db >> shift) * inv;
                        qe = (de >> shift) * inv;
                        exact = !(db & lowmask) && !(de & lowmask) && qe <= qmax;
                    }
                    if (exact && qb <= MPROF_LEAF_LONG_BEGIN_MAX && (id = loc_id(loc)) != 0) {
                        if (id != leaf) {
                            *o++ = MPROF_EV_ZONE_LEAF_LOC;
                            o = mprof_put_varint(o, id);
                            leaf = id;
                        }
                        if (scale > 1 && qb <= MPROF_LEAF_BEGIN_MAX && qe <= MPROF_LEAF_DUR_MAX) {
                            *o++ = (unsigned char)(MPROF_EV_ZONE_LEAF | qb << 4 | qe);
                        } else {
                            *o++ = (unsigned char)(MPROF_EV_ZONE_LEAF_LONG | qb);
                            if (qe < 0x80)
                                *o++ = (unsigned char)qe;
                            else
                                o = mprof_put_varint(o, qe);
                        }
                        p += MPROF__ZONE_BEGIN_BYTES + MPROF__ZONE_END_BYTES;
                        last = te;
                        n += 2;
                        continue;
                    }
                    id = 0;
                }
                if (tag == MPROF__EV_ZONE_BEGIN && p <= pe_begin) {
                    const mprof_srcloc *loc;
                    memcpy(&ticks, p + 1, 8);
                    memcpy(&loc, p + 9, 8);
                    if (!(id = loc_id(loc)))
                        break;
                } else if (tag == MPROF__EV_ZONE_END && p <= pe_end) {
                    memcpy(&ticks, p + 1, 8);
                } else {
                    break;
                }
                int64_t d = (int64_t)(ticks - last);
                uint64_t v;
                if (scale == 1) {
                    if (dropped && step_multiple((uint64_t)d))
                        break; /* translate_one restores the chunk's scale */
                    v = mprof_zigzag(d);
                } else {
                    uint64_t u = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
                    uint64_t qv = (u >> shift) * inv;
                    if ((u & lowmask) || qv > qmax)
                        break;
                    v = mprof_zigzag(d < 0 ? -(int64_t)qv : (int64_t)qv);
                }
                *o++ = (unsigned char)tag;
                if (v < 0x80)
                    *o++ = (unsigned char)v;
                else
                    o = mprof_put_varint(o, v);
                if (id) {
                    if (id < 0x80)
                        *o++ = (unsigned char)id;
                    else
                        o = mprof_put_varint(o, id);
                    p += MPROF__ZONE_BEGIN_BYTES;
                } else {
                    p += MPROF__ZONE_END_BYTES;
                }
                last = ticks;
                n++;
            }
            th->col_last_ticks = last;
            th->col_leaf_loc = leaf;
            th->col_ts_first = first;
            out_commit(o);
            if (p >= end || C.s.chunk.len >= chunk_bytes)
                continue;
        }
        const unsigned char *q = translate_one(th, p, end);
        if (!q)
            break;
        p = q;
        n++;
    }
    C.s.events += n - n_in_chunk;
    if (C.s.chunk.len >= chunk_bytes)
        mprof__encoder_emit_chunk();
    C.events += n;
    atomic_fetch_add_explicit(&mprof__stats.events_recorded, n, memory_order_relaxed);
}


/* ---- the process context and the session ------------------------------------------------- */

void mprof__encoder_calibration(void)
{
    enter_process();
    /* A (ticks, CLOCK_MONOTONIC_RAW-based ns) pair in the process context lets a reader check
     * the rate over the whole capture. Thread 0's timestamp state is C.proc, shared with the
     * system records. */
    thread_context(&C.proc);
    uint64_t t = mprof__ticks();
    ts_fit(C.proc.col_ts_first, C.proc.col_last_ticks, t);
    unsigned char *o = out_reserve(32);
    if (!o)
        return;
    *o++ = MPROF_EV_CALIBRATION;
    o = put_ts(o, &C.proc, t);
    o = mprof_put_varint(o, mprof__mono_ns() - mprof__clock.mono0_ns);
    out_commit(o);
    leave_process();
}

void mprof__encoder_process(const unsigned char *p, const unsigned char *end)
{
    enter_process();
    mprof__encoder_translate(&C.proc, p, end);
    leave_process();
}

int mprof__encoder_chunk_empty(void)
{
    return C.s.chunk.len == 0 && C.other.chunk.len == 0;
}

uint64_t mprof__encoder_chunk_started_ns(void)
{
    uint64_t a = C.s.chunk_started_ns, b = C.other.chunk_started_ns;
    return a < b ? a : b;
}

void mprof__encoder_end_keys(mprof_buf *b)
{
    mprof__kvf(b, "process_chunks", "%" PRIu64, C.process_chunks);
    if (!C.mf.marks)
        return;
    mprof__kvf(b, "main_frame_thread", "%" PRIu32, C.mf.thread);
    mprof__kvf(b, "main_frame_marks", "%" PRIu64, C.mf.marks);
    mprof__kvf(b, "main_frame_first_ticks", "%" PRIu64, C.mf.first_ticks);
    mprof__kvf(b, "main_frame_last_ticks", "%" PRIu64, C.mf.last_ticks);
}

uint64_t mprof__encoder_events(void)
{
    return C.events;
}

mprof_result mprof__encoder_init(void)
{
    if (!C.cctx && !(C.cctx = ZSTD_createCCtx()))
        return MPROF_ERR_NOMEM;
    return MPROF_OK;
}

static void reset_thread(mprof__thread *t)
{
    t->col_named = 0;
}

void mprof__encoder_begin(mprof__sink *const *sinks, int n_sinks, mprof__kv_fn before_stacks)
{
    C.n_sinks = 0;
    for (int i = 0; i < n_sinks && i < MPROF__MAX_SINKS; i++)
        C.sinks[C.n_sinks++] = sinks[i];
    C.before_stacks = before_stacks;
    map_clear(&C.locs);
    map_clear(&C.names);
    map_clear(&C.name_text);
    map_clear(&C.stacks);
    loc_cache_clear();
    scale_setup();
    C.next_loc = C.next_name = C.next_stack = 0;
    C.proc.idx = 0;
    C.proc.col_named = 1; /* thread 0 is never defined */
    C.proc.col_chunk_seq = 0;
    C.events = 0;
    C.in_proc = 0;
    stream_reset(&C.s);
    stream_reset(&C.other);
    C.process_chunks = 0;
    memset(&C.mf, 0, sizeof C.mf);
    mprof__threads_each(reset_thread);
}
