/*
 * decode.c - one EVENTS chunk, checked, decompressed and decoded into segments of batches.
 *
 * This is the reader's only decoder of the compact event stream: mprof_reader_next and
 * mprof_reader_next_batch both read what it writes. It needs nothing of the reader but the job
 * (the chunk's bytes and the clock in effect), so workers run it on different chunks at once.
 * Every length and id is checked before use, with the messages the reader has always given, and
 * a malformed chunk ends its last segment with the message: the records before it still count.
 *
 * Zone records take the short way through the loop (a ZONE_LEAF byte becomes one record, a
 * ZONE_BEGIN or ZONE_END one record each); every other tag walks its field list in the event
 * table and becomes a record plus its decoded mprof_event. A definition begins a new batch when
 * the batch already holds anything else, so that the caller can apply a batch's definitions
 * before it hands the batch out (batch.h).
 */
#include "format/decode.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#define MAX_THREADS (1u << 20)

int mprof__segment_init(mprof__segment *s)
{
    memset(s, 0, sizeof *s);
    s->rec = malloc(MPROF__SEG_RECS * sizeof *s->rec);
    s->run = malloc(MPROF__SEG_RUNS * sizeof *s->run);
    s->ev = malloc(MPROF__SEG_EVS * sizeof *s->ev);
    s->frames = malloc(MPROF__SEG_FRAMES * sizeof *s->frames);
    s->b = malloc(MPROF__SEG_BATCHES * sizeof *s->b);
    if (!s->rec || !s->run || !s->ev || !s->frames || !s->b) {
        mprof__segment_free(s);
        return -1;
    }
    return 0;
}

void mprof__segment_free(mprof__segment *s)
{
    free(s->rec);
    free(s->run);
    free(s->ev);
    free(s->frames);
    free(s->b);
    free(s->handed);
    s->handed = NULL;
    s->rec = NULL;
    s->run = NULL;
    s->ev = NULL;
    s->frames = NULL;
    s->b = NULL;
}

void mprof__decoder_free(mprof__decoder *d)
{
    mprof_buf_free(&d->raw[0]);
    mprof_buf_free(&d->raw[1]);
    ZSTD_freeDCtx(d->dctx);
    free(d->threads);
    memset(d, 0, sizeof *d);
}

void mprof__kv_free(mprof__kvlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

static inline int is_def(int tag);

static inline void put_event_plain(mprof_event *at, int tag, uint32_t th, int64_t ts_ns,
                                   const uint64_t *u)
{
    at->type = tag;
    at->thread = th;
    at->ts_ns = ts_ns;
    memcpy(at->u, u, sizeof at->u);
    at->str = NULL;
    at->str_len = 0;
    memset(at->strs, 0, sizeof at->strs);
    memset(at->str_lens, 0, sizeof at->str_lens);
    at->frames = NULL;
}

/* A record written with a streaming store (mprof__decoder.stream) or an ordinary one. */
#if defined(__SSE2__)
#include <emmintrin.h>
static inline __attribute__((always_inline)) void put_rec(mprof_rec *at, int64_t ts, uint32_t x,
                                                          uint32_t y, const int stream)
{
    if (stream)
        _mm_stream_si128((__m128i *)(void *)at,
                         _mm_set_epi64x((long long)((uint64_t)x | (uint64_t)y << 32), (long long)ts));
    else
        *at = (mprof_rec){ts, x, y};
}
static inline void stream_fence(void)
{
    _mm_sfence();
}
/* An event of fixed fields (no strings, no frames) at at. */
static inline __attribute__((always_inline)) void put_event(mprof_event *at, int tag, uint32_t th,
                                                            int64_t ts_ns, const uint64_t *u,
                                                            const int stream)
{
    if (!stream) {
        put_event_plain(at, tag, th, ts_ns, u);
        return;
    }
    mprof_event e = {.type = tag, .thread = th, .ts_ns = ts_ns};
    memcpy(e.u, u, sizeof e.u);
    _Static_assert(sizeof e % 16 == 0, "an event is whole 16-byte stores");
    const __m128i *from = (const __m128i *)(const void *)&e;
    __m128i *to = (__m128i *)(void *)at;
    for (size_t i = 0; i < sizeof e / 16; i++)
        _mm_stream_si128(to + i, _mm_loadu_si128(from + i));
}
#else
static inline void put_rec(mprof_rec *at, int64_t ts, uint32_t x, uint32_t y, const int stream)
{
    (void)stream;
    *at = (mprof_rec){ts, x, y};
}
static inline void stream_fence(void)
{
}
static inline void put_event(mprof_event *at, int tag, uint32_t th, int64_t ts_ns,
                             const uint64_t *u, const int stream)
{
    (void)stream;
    put_event_plain(at, tag, th, ts_ns, u);
}
#endif

/* The event table by tag, fetched once (mprof_event_desc_get takes a once-lock per call), and
 * the tags that the decoding loop reads itself (simple: fixed fields only, no string or
 * callstack, nothing applied to the decoder or the reader's tables, no value to refuse). */
static const mprof_event_desc *descs[MPROF_EV_MAX];
static unsigned char simple[MPROF_EV_MAX], counted[MPROF_EV_MAX], needs_thread[MPROF_EV_MAX];
/* Simple tags of the commonest layouts, read without walking their field list (lock, fiber
 * and frame events are most of a game's events besides zones): a TS, then up to one 32-bit id
 * (U32, LOC or NAME), then up to one U8. 0: another layout. */
enum { SHAPE_OTHER, SHAPE_TS, SHAPE_TS_ID, SHAPE_TS_ID_U8 };
static unsigned char shape[MPROF_EV_MAX];
static pthread_once_t descs_once = PTHREAD_ONCE_INIT;
static void descs_load(void)
{
    for (int t = 0; t < MPROF_EV_MAX; t++) {
        const mprof_event_desc *d = descs[t] = mprof_event_desc_get(t);
        counted[t] = (unsigned char)mprof_event_counted(t);
        needs_thread[t] = (t >= 0x10 || t == MPROF_EV_THREAD_EXIT) && t != MPROF_EV_TS_SCALE &&
                          !MPROF_EV_IS_PROCESS(t);
        if (!d || is_def(t) || t == MPROF_EV_THREAD || t == MPROF_EV_TS_SCALE ||
            t == MPROF_EV_ZONE_LEAF_LOC || t == MPROF_EV_ZONE_BEGIN || t == MPROF_EV_ZONE_END)
            continue;
        int ok = 1;
        for (int i = 0; i < d->n_fields; i++)
            ok &= d->fields[i] != MPROF_F_STR && d->fields[i] != MPROF_F_CS;
        simple[t] = (unsigned char)ok;
        int id1 = d->n_fields > 1 && (d->fields[1] == MPROF_F_U32 || d->fields[1] == MPROF_F_LOC ||
                                      d->fields[1] == MPROF_F_NAME);
        if (ok && d->n_fields >= 1 && d->fields[0] == MPROF_F_TS)
            shape[t] = d->n_fields == 1                                  ? SHAPE_TS
                       : d->n_fields == 2 && id1                         ? SHAPE_TS_ID
                       : d->n_fields == 3 && id1 && d->fields[2] == MPROF_F_U8 ? SHAPE_TS_ID_U8
                                                                         : SHAPE_OTHER;
    }
}

int mprof__decoder_start(mprof__decoder *d, const mprof__job *job, char *err, size_t errlen)
{
    pthread_once(&descs_once, descs_load);
    d->active = 0;
    /* Fuzz builds skip the checksum so that mutated inputs reach the decoders behind it. */
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    if (mprof_fmt_chunk_verify(job->header, job->stored.data, job->stored_len) != 0) {
        snprintf(err, errlen, "chunk %" PRIu64 " at offset %" PRIu64 ": checksum mismatch (corrupt file)",
                 job->chunk_no, job->offset);
        return -1;
    }
#endif
    /* The payload goes to the decoder's own buffer even when stored as is: the job's buffer
     * takes the next chunk while this one's events are still being read. */
    mprof_buf *raw = &d->raw[d->raw_cur];
    raw->len = 0;
    if (mprof_buf_reserve(raw, job->raw_len ? job->raw_len : 1) != 0) {
        snprintf(err, errlen, "out of memory reading chunk at offset %" PRIu64, job->offset);
        return -1;
    }
    if (job->codec == MPROF_CODEC_ZSTD) {
        if (!d->dctx && !(d->dctx = ZSTD_createDCtx())) {
            snprintf(err, errlen, "out of memory reading chunk at offset %" PRIu64, job->offset);
            return -1;
        }
        size_t n = ZSTD_decompressDCtx(d->dctx, raw->data, job->raw_len, job->stored.data,
                                       job->stored_len);
        if (ZSTD_isError(n) || n != job->raw_len) {
            snprintf(err, errlen, "chunk %" PRIu64 " at offset %" PRIu64 ": cannot decompress (%s)",
                     job->chunk_no, job->offset,
                     ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
            return -1;
        }
    } else {
        memcpy(raw->data, job->stored.data, job->raw_len);
    }
    const unsigned char *payload = raw->data;
    if (mprof_grow_zeroed((void **)&d->threads, &d->n_threads, 0, sizeof *d->threads, MAX_THREADS)) {
        snprintf(err, errlen, "out of memory reading chunk at offset %" PRIu64, job->offset);
        return -1;
    }
    d->p = payload;
    d->end = payload + job->raw_len;
    d->stamp = job->seq;
    d->offset = job->offset;
    d->cur_thread = 0;
    d->ts_scale = 1;
    d->ns_per_tick = job->ns_per_tick;
    d->tick0 = job->tick0;
    /* |dt| below this keeps |dt * ns_per_tick| under 9.0e18, clear of the clamp at 9.2e18. */
    double lim = 9.0e18 / d->ns_per_tick;
    d->dt_lim = lim >= 9.2e18 ? INT64_MAX : (int64_t)lim;
    d->active = 1;
    return 0;
}

/* Ticks to ns since the start; clamped, so a corrupt delta cannot make the conversion
 * undefined. */
static int64_t tick_ns_slow(const mprof__decoder *d, int64_t dt)
{
    double ns = (double)dt * d->ns_per_tick;
    return ns >= 9.2e18 ? INT64_MAX : ns <= -9.2e18 ? INT64_MIN : (int64_t)ns;
}

/* The same for dt = ticks - tick0, with the clamp decided on dt when it cannot apply (d->dt_lim
 * keeps the product well inside the range), so the usual case is one multiply. The results are
 * those of the formula above for every dt. */
static inline int64_t tick_ns(const mprof__decoder *d, int64_t dt)
{
    if (dt < d->dt_lim && dt > -d->dt_lim)
        return (int64_t)((double)dt * d->ns_per_tick);
    return tick_ns_slow(d, dt);
}

static inline int varint(const unsigned char **p, const unsigned char *end, uint64_t *out)
{
    const unsigned char *q = *p;
    if (q < end && *q < 0x80) {
        *out = *q;
        *p = q + 1;
        return 0;
    }
    if (end - q >= 2 && q[1] < 0x80) {
        *out = (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
        *p = q + 2;
        return 0;
    }
    return mprof_get_varint(p, end, out);
}

static inline int is_def(int tag)
{
    return tag == MPROF_EV_DEF_SRCLOC || tag == MPROF_EV_DEF_STRING || tag == MPROF_EV_DEF_THREAD ||
           tag == MPROF_EV_DEF_CALLSTACK || tag == MPROF_EV_THREAD_NAME ||
           tag == MPROF_EV_THREAD_EXIT || tag == MPROF_EV_DEF_PROCESS ||
           tag == MPROF_EV_THREAD_PROCESS || tag == MPROF_EV_PROCESS_END;
}

/* The segment being filled: its open batch and open run. */
typedef struct filler {
    mprof__decoder *d;
    mprof__segment *s;
    mprof__bdesc *b;
    int run_open;
    uint32_t run_thread;
    int only_defs; /* the open batch holds definitions only (or nothing) */
    uint64_t events, counted;
    int64_t max_ts;
    int64_t max_dt; /* the latest zone time, as ticks since tick0 (INT64_MIN: none) */
} filler;

static void close_batch(filler *f)
{
    mprof__segment *s = f->s;
    mprof__bdesc *b = f->b;
    if (f->run_open)
        s->run[s->n_run - 1].end = s->n_rec - b->rec0;
    f->run_open = 0;
    b->n_rec = s->n_rec - b->rec0;
    b->n_run = s->n_run - b->run0;
    b->n_ev = s->n_ev - b->ev0;
    b->events += f->events;
    b->counted += f->counted;
    /* Times only grow with ticks, so the latest zone time is converted once. */
    if (f->max_dt != INT64_MIN) {
        int64_t ns = tick_ns(f->d, f->max_dt);
        if (ns > f->max_ts)
            f->max_ts = ns;
    }
    if (f->max_ts > b->max_ts)
        b->max_ts = f->max_ts;
    f->events = f->counted = 0;
    f->max_ts = f->max_dt = INT64_MIN;
}

static void open_batch(filler *f)
{
    mprof__segment *s = f->s;
    mprof__bdesc *b = &s->b[s->n_b++];
    memset(b, 0, sizeof *b);
    b->rec0 = s->n_rec;
    b->run0 = s->n_run;
    b->ev0 = s->n_ev;
    b->max_ts = INT64_MIN;
    f->b = b;
    f->run_open = 0;
    f->only_defs = 1;
}

/* The next record goes to thread's run. */
static inline void run_for(filler *f, uint32_t thread)
{
    if (f->run_open && f->run_thread == thread)
        return;
    mprof__segment *s = f->s;
    if (f->run_open)
        s->run[s->n_run - 1].end = s->n_rec - f->b->rec0;
    s->run[s->n_run++] = (mprof_run){thread, s->n_rec - f->b->rec0, 0};
    f->run_open = 1;
    f->run_thread = thread;
}

static void seg_fail(mprof__segment *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void seg_fail(mprof__segment *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    s->failed = 1;
}

#define BAD_EVENT(what)                                                                            \
    do {                                                                                           \
        seg_fail(s, "chunk at offset %" PRIu64 ", event tag 0x%02x: %s", d->offset, tag, what);   \
        goto stop;                                                                                 \
    } while (0)

/* One record other than a zone's: its field list, into s->ev when it is handed out. Returns 1
 * when it was decoded (*pp moved past it), 0 when the segment is full (nothing changed), -1 when
 * it is malformed (s->failed). */
static int general(filler *f, const unsigned char **pp, const unsigned char *end,
                   const unsigned char *want)
{
    mprof__decoder *d = f->d;
    mprof__segment *s = f->s;
    const uint64_t stamp = d->stamp;
    const unsigned char *p = *pp;
    int tag = *p;
    if (s->n_rec + 2 > MPROF__SEG_RECS || s->n_ev + 1 > MPROF__SEG_EVS ||
        s->n_run + 2 > MPROF__SEG_RUNS || s->n_b + 1 > MPROF__SEG_BATCHES ||
        s->n_frames + MPROF__MAX_STACK_FRAMES > MPROF__SEG_FRAMES)
        return 0;
    const mprof_event_desc *dd = descs[tag];
    if (!dd) {
        seg_fail(s, "chunk at offset %" PRIu64 ": unknown event tag 0x%02x", d->offset, tag);
        return -1;
    }
    if ((tag >= 0x10 || tag == MPROF_EV_THREAD_EXIT) && tag != MPROF_EV_TS_SCALE &&
        !MPROF_EV_IS_PROCESS(tag) && d->cur_thread == 0) {
        seg_fail(s, "chunk at offset %" PRIu64 ": event 0x%02x before any THREAD record",
                 d->offset, tag);
        return -1;
    }
    int def = is_def(tag);
    if (def && !f->only_defs) {
        close_batch(f);
        open_batch(f);
    }
    /* The fields go to locals first; the event is written only when it is handed out. */
    const unsigned char *q = p + 1;
    uint64_t u[MPROF_MAX_FIELDS] = {0};
    const char *strs[3] = {NULL, NULL, NULL};
    uint32_t str_lens[3] = {0, 0, 0};
    int64_t ts_ns = 0;
    int ui = 0, si = 0;
    for (int i = 0; i < dd->n_fields; i++) {
        uint64_t v = 0;
        int kind = dd->fields[i];
        switch (kind) {
        case MPROF_F_U8:
            if (q >= end)
                BAD_EVENT("event runs past the end of its chunk");
            v = *q++;
            break;
        case MPROF_F_F64:
            if (end - q < 8)
                BAD_EVENT("event runs past the end of its chunk");
            v = mprof_rd_u64(q);
            q += 8;
            break;
        case MPROF_F_STR:
            if (varint(&q, end, &v) || v > (uint64_t)(end - q))
                BAD_EVENT("event runs past the end of its chunk");
            if (si < 3) {
                strs[si] = (const char *)q;
                str_lens[si] = (uint32_t)v;
                si++;
            }
            q += v;
            continue;
        default:
            if (varint(&q, end, &v))
                BAD_EVENT("event runs past the end of its chunk");
            break;
        }
        switch (kind) {
        case MPROF_F_TS: {
            mprof__dthread *t = &d->threads[d->cur_thread];
            /* A thread's first TS in a chunk is absolute; later ones are deltas, in units of the
             * chunk's TS_SCALE (unsigned arithmetic: a corrupt value wraps). */
            uint64_t ticks = t->ts_stamp == stamp
                                 ? t->last_ticks + (uint64_t)mprof_unzigzag(v) * d->ts_scale
                                 : (uint64_t)mprof_unzigzag(v);
            t->last_ticks = ticks;
            t->ts_stamp = stamp;
            ts_ns = tick_ns(d, (int64_t)(ticks - d->tick0));
            continue;
        }
        case MPROF_F_I64:
            v = (uint64_t)mprof_unzigzag(v);
            break;
        case MPROF_F_U32:
        case MPROF_F_LOC:
        case MPROF_F_NAME:
        case MPROF_F_CS:
            if (v > UINT32_MAX)
                BAD_EVENT("32-bit field out of range");
            break;
        default:
            break;
        }
        u[ui++] = v;
    }
    mprof_event *ev = &s->ev[s->n_ev]; /* written in place; committed below if handed out */
    ev->type = tag;
    ev->thread = d->cur_thread;
    ev->ts_ns = ts_ns;
    memcpy(ev->u, u, sizeof u);
    ev->str = strs[0];
    ev->str_len = str_lens[0];
    memcpy(ev->strs, strs, sizeof strs);
    memcpy(ev->str_lens, str_lens, sizeof str_lens);
    ev->frames = NULL;
    if (tag == MPROF_EV_DEF_CALLSTACK) {
        if (ev->u[1] > MPROF__MAX_STACK_FRAMES)
            BAD_EVENT("callstack deeper than 256 frames");
        uint64_t *fr = s->frames + s->n_frames;
        for (uint64_t i = 0; i < ev->u[1]; i++)
            if (mprof_get_varint(&q, end, &fr[i]))
                BAD_EVENT("event runs past the end of its chunk");
        ev->frames = fr;
    }
    *pp = q;
    /* Values this reader does not know are a newer writer's: refused, not guessed. */
    if (tag == MPROF_EV_SYS_SWITCH && (ev->u[1] > MPROF_SYS_IN || ev->u[2] > MPROF_SYS_REASON_MAX))
        BAD_EVENT("unknown switch direction or reason");
    if (tag == MPROF_EV_SYS_WAKE && ev->u[3] > MPROF_SYS_WAKE_MAX)
        BAD_EVENT("unknown wake-up context");
    if (tag == MPROF_EV_TS_SCALE) {
        /* Chunk-level encoding state, not an event: it is applied and not handed out. */
        if (ev->u[0] == 0)
            BAD_EVENT("TS_SCALE of 0");
        d->ts_scale = ev->u[0];
        return 1;
    }
    if (tag == MPROF_EV_ZONE_LEAF_LOC) {
        /* Encoding state too: the location of the thread's next ZONE_LEAF records. */
        if (ev->u[0] == 0)
            BAD_EVENT("ZONE_LEAF_LOC of location 0");
        mprof__dthread *t = &d->threads[d->cur_thread];
        t->leaf_loc = (uint32_t)ev->u[0];
        t->leaf_stamp = stamp;
        return 1;
    }
    if (tag == MPROF_EV_THREAD) {
        uint32_t idx = (uint32_t)ev->u[0];
        if (mprof_grow_zeroed((void **)&d->threads, &d->n_threads, idx, sizeof *d->threads,
                              MAX_THREADS))
            BAD_EVENT("thread index out of range");
        d->cur_thread = idx;
        ev->thread = idx;
        if (idx > f->b->max_thread)
            f->b->max_thread = idx;
    }
    f->events++;
    if (mprof_event_counted(tag))
        f->counted++;
    if (ev->ts_ns > f->max_ts)
        f->max_ts = ev->ts_ns;
    /* Any counted event ends the batch's definitions, handed out or not: a definition that
     * fails to apply counts the events before it as the first n_defs of its batch. */
    if (!def)
        f->only_defs = 0;
    if (!def && want && !want[tag])
        return 1;
    if (!def && want && want[tag] == MPROF_WANT_RECORD) {
        run_for(f, ev->thread);
        if (ev->thread > f->b->max_thread)
            f->b->max_thread = ev->thread;
        s->rec[s->n_rec++] = (mprof_rec){ev->ts_ns, MPROF_REC_NOEV, (uint32_t)tag};
        return 1;
    }
    if (def)
        f->b->n_defs++;
    if (tag == MPROF_EV_DEF_CALLSTACK)
        s->n_frames += (uint32_t)ev->u[1];
    run_for(f, ev->thread);
    if (ev->thread > f->b->max_thread)
        f->b->max_thread = ev->thread;
    s->rec[s->n_rec++] = (mprof_rec){ev->ts_ns, s->n_ev - f->b->ev0, (uint32_t)tag};
    s->n_ev++;
    return 1;
stop:
    return -1;
}

/* The loop over a chunk's records, compiled twice: want_zones says whether zone records are
 * handed out (a read that leaves them out converts no time and writes no record for them). */
static inline __attribute__((always_inline)) void fill(mprof__decoder *d, mprof__segment *s,
                                                       const unsigned char *want,
                                                       const int want_zones, const int stream)
{
    filler f = {.d = d, .s = s, .max_ts = INT64_MIN, .max_dt = INT64_MIN};
    open_batch(&f);
    const unsigned char *p = d->p, *end = d->end;
    const uint64_t stamp = d->stamp, tick0 = d->tick0;
    const double npt = d->ns_per_tick;
    const uint64_t lim = (uint64_t)d->dt_lim, lim2 = 2 * (uint64_t)d->dt_lim;
    int tag = 0;
    /* The hot state lives in locals (stores to the records could alias the structures) and is
     * written back before general() or the end: the current thread's timestamp state, the
     * output cursor, and whether the open run is the current thread's. */
    uint32_t th = d->cur_thread;
    mprof__dthread *t = &d->threads[th];
    uint64_t scale = d->ts_scale, last = t->last_ticks;
    int ts_ok = t->ts_stamp == stamp;
    uint32_t leaf_loc = t->leaf_stamp == stamp ? t->leaf_loc : 0;
    int leaf_ok = ts_ok && leaf_loc && th;
    /* A leaf's begin and end as tick offsets from the thread's last time, by tag. */
    uint64_t lb[128], le[128];
    uint64_t table_scale = 0;
    mprof_rec *out = s->rec, *const out_lim = s->rec + MPROF__SEG_RECS - 2;
    int run_ok = 0;
    uint64_t zone_events = 0;
    int64_t max_dt = INT64_MIN, max_ns = INT64_MIN;
#define CONV(dt)                                                                                   \
    ((uint64_t)(dt) + lim < lim2 ? (int64_t)((double)(dt) * npt) : tick_ns_slow(d, (dt)))
#define SYNC()                                                                                     \
    do {                                                                                           \
        t->last_ticks = last;                                                                      \
        if (ts_ok)                                                                                 \
            t->ts_stamp = stamp;                                                                   \
        s->n_rec = (uint32_t)(out - s->rec);                                                       \
        f.events += zone_events;                                                                   \
        f.counted += zone_events;                                                                  \
        zone_events = 0;                                                                           \
        f.max_dt = max_dt > f.max_dt ? max_dt : f.max_dt;                                          \
        max_dt = INT64_MIN;                                                                        \
        f.max_ts = max_ns > f.max_ts ? max_ns : f.max_ts;                                          \
        max_ns = INT64_MIN;                                                                        \
    } while (0)
    for (;;) {
        if (p >= end) {
            s->last = 1;
            break;
        }
        tag = *p;
        if (want_zones && (out > out_lim || !run_ok)) {
            /* Before a zone record: room for two records and the thread's run. */
            if (out > out_lim || s->n_run + 2 > MPROF__SEG_RUNS ||
                !(MPROF_EV_IS_LEAF(tag) || MPROF_EV_IS_LEAF_LONG(tag) || tag == MPROF_EV_ZONE_BEGIN ||
                  tag == MPROF_EV_ZONE_END))
                goto slow;
            if (th) { /* (before any THREAD record the zone paths below refuse it) */
                s->n_rec = (uint32_t)(out - s->rec);
                f.only_defs = 0;
                run_for(&f, th);
                run_ok = 1;
            }
        }
        if (MPROF_EV_IS_LEAF(tag) || MPROF_EV_IS_LEAF_LONG(tag)) {
            if (!leaf_ok) {
                SYNC();
                if (th == 0)
                    seg_fail(s, "chunk at offset %" PRIu64 ": ZONE_LEAF before any THREAD record", d->offset);
                else if (!ts_ok)
                    seg_fail(s, "chunk at offset %" PRIu64 ", event tag 0x%02x: %s", d->offset, tag,
                             "ZONE_LEAF as the thread's first timestamp in its chunk");
                else
                    seg_fail(s, "chunk at offset %" PRIu64 ", event tag 0x%02x: %s", d->offset, tag,
                             "ZONE_LEAF without a ZONE_LEAF_LOC before it in its chunk");
                goto failed;
            }
            uint64_t begin;
            if (MPROF_EV_IS_LEAF(tag)) {
                if (table_scale != scale) {
                    for (unsigned k = 0; k < 128; k++) {
                        lb[k] = (uint64_t)((k >> 4) & 7) * scale;
                        le[k] = lb[k] + (uint64_t)(k & 15) * scale;
                    }
                    table_scale = scale;
                }
                p++;
                begin = last + lb[tag & 0x7f];
                last += le[tag & 0x7f];
            } else {
                const unsigned char *q = p + 1;
                uint64_t dq;
                if (varint(&q, end, &dq)) {
                    SYNC();
                    BAD_EVENT("event runs past the end of its chunk");
                }
                p = q;
                begin = last + (uint64_t)(tag & 0x1f) * scale;
                last = begin + dq * scale;
            }
            zone_events += 2;
            int64_t db = (int64_t)(begin - tick0), de = (int64_t)(last - tick0);
            if (!want_zones) {
                int64_t later = db > de ? db : de;
                max_dt = later > max_dt ? later : max_dt;
                f.only_defs = 0;
                continue;
            }
            int64_t b_ns = CONV(db), e_ns = CONV(de);
            uint64_t dur = (uint64_t)e_ns - (uint64_t)b_ns;
            if (e_ns >= b_ns && dur <= MPROF_REC_DUR_MAX) {
                put_rec(out++, b_ns, leaf_loc, (uint32_t)MPROF_REC_LEAF | (uint32_t)dur << 8, stream);
                max_ns = e_ns > max_ns ? e_ns : max_ns;
            } else {
                put_rec(out++, b_ns, leaf_loc, MPROF_EV_ZONE_BEGIN, stream);
                put_rec(out++, e_ns, 0, MPROF_EV_ZONE_END, stream);
                int64_t later = b_ns > e_ns ? b_ns : e_ns;
                max_ns = later > max_ns ? later : max_ns;
            }
            continue;
        }
        if ((tag == MPROF_EV_ZONE_BEGIN || tag == MPROF_EV_ZONE_END) && th) {
            const unsigned char *q = p + 1;
            uint64_t v, loc = 0;
            if (varint(&q, end, &v)) {
                SYNC();
                BAD_EVENT("event runs past the end of its chunk");
            }
            last = ts_ok ? last + (uint64_t)mprof_unzigzag(v) * scale : (uint64_t)mprof_unzigzag(v);
            if (!ts_ok) {
                ts_ok = 1;
                leaf_ok = leaf_loc != 0;
            }
            if (tag == MPROF_EV_ZONE_BEGIN && (varint(&q, end, &loc) || loc > UINT32_MAX)) {
                SYNC();
                BAD_EVENT(loc > UINT32_MAX ? "32-bit field out of range"
                                           : "event runs past the end of its chunk");
            }
            p = q;
            zone_events++;
            int64_t dt = (int64_t)(last - tick0);
            if (!want_zones) {
                max_dt = dt > max_dt ? dt : max_dt;
                f.only_defs = 0;
                continue;
            }
            int64_t ns = CONV(dt);
            put_rec(out++, ns, (uint32_t)loc, (uint32_t)tag, stream);
            max_ns = ns > max_ns ? ns : max_ns;
            continue;
        }
        if (simple[tag] && out <= out_lim && s->n_ev + 1 <= MPROF__SEG_EVS &&
            (th || !needs_thread[tag]) && (run_ok || s->n_run + 2 <= MPROF__SEG_RUNS)) {
            /* A record of fixed fields: read here, with the thread's time in the locals. */
            const unsigned char *q = p + 1;
            uint64_t u[MPROF_MAX_FIELDS] = {0};
            int64_t ts_ns = 0, ts_dt = 0;
            int timed = 0;
            const int sh = shape[tag];
            /* The timestamp read is written out on each path, as on the zone path above: one
             * shared through a macro made the workers' variant of this loop (streaming stores)
             * decode at half speed, a matter of the compiler's register allocation. */
            if (sh != SHAPE_OTHER) {
                uint64_t v;
                if (varint(&q, end, &v)) {
                    SYNC();
                    BAD_EVENT("event runs past the end of its chunk");
                }
                last = ts_ok ? last + (uint64_t)mprof_unzigzag(v) * scale : (uint64_t)mprof_unzigzag(v);
                if (!ts_ok) {
                    ts_ok = 1;
                    leaf_ok = leaf_loc && th;
                }
                ts_dt = (int64_t)(last - tick0);
                timed = 1;
                if (sh != SHAPE_TS) {
                    if (varint(&q, end, &u[0])) {
                        SYNC();
                        BAD_EVENT("event runs past the end of its chunk");
                    }
                    if (u[0] > UINT32_MAX) {
                        SYNC();
                        BAD_EVENT("32-bit field out of range");
                    }
                    if (sh == SHAPE_TS_ID_U8) {
                        if (q >= end) {
                            SYNC();
                            BAD_EVENT("event runs past the end of its chunk");
                        }
                        u[1] = *q++;
                    }
                }
            } else {
                const mprof_event_desc *dd = descs[tag];
                int ui = 0;
                for (int i = 0; i < dd->n_fields; i++) {
                    uint64_t v;
                    int kind = dd->fields[i];
                    if (kind == MPROF_F_U8) {
                        if (q >= end) {
                            SYNC();
                            BAD_EVENT("event runs past the end of its chunk");
                        }
                        u[ui++] = *q++;
                        continue;
                    }
                    if (kind == MPROF_F_F64) {
                        if (end - q < 8) {
                            SYNC();
                            BAD_EVENT("event runs past the end of its chunk");
                        }
                        u[ui++] = mprof_rd_u64(q);
                        q += 8;
                        continue;
                    }
                    if (varint(&q, end, &v)) {
                        SYNC();
                        BAD_EVENT("event runs past the end of its chunk");
                    }
                    if (kind == MPROF_F_TS) {
                        last = ts_ok ? last + (uint64_t)mprof_unzigzag(v) * scale
                                     : (uint64_t)mprof_unzigzag(v);
                        if (!ts_ok) {
                            ts_ok = 1;
                            leaf_ok = leaf_loc && th;
                        }
                        ts_dt = (int64_t)(last - tick0);
                        timed = 1;
                        continue;
                    }
                    if (kind == MPROF_F_I64)
                        v = (uint64_t)mprof_unzigzag(v);
                    else if ((kind == MPROF_F_U32 || kind == MPROF_F_LOC || kind == MPROF_F_NAME) &&
                             v > UINT32_MAX) {
                        SYNC();
                        BAD_EVENT("32-bit field out of range");
                    }
                    u[ui++] = v;
                }
            }
            /* Values this reader does not know are a newer writer's: refused (as general()). */
            if ((tag == MPROF_EV_SYS_SWITCH && (u[1] > MPROF_SYS_IN || u[2] > MPROF_SYS_REASON_MAX)) ||
                (tag == MPROF_EV_SYS_WAKE && u[3] > MPROF_SYS_WAKE_MAX)) {
                SYNC();
                BAD_EVENT(tag == MPROF_EV_SYS_SWITCH ? "unknown switch direction or reason"
                                                     : "unknown wake-up context");
            }
            p = q;
            f.events++;
            f.counted += counted[tag];
            f.only_defs = 0;
            if (want && !want[tag]) {
                /* Left out: its time counts in the batch's latest as ticks, converted once. */
                if (timed)
                    max_dt = ts_dt > max_dt ? ts_dt : max_dt;
                else
                    max_ns = 0 > max_ns ? 0 : max_ns;
                continue;
            }
            if (timed)
                ts_ns = CONV(ts_dt);
            max_ns = ts_ns > max_ns ? ts_ns : max_ns;
            if (want && want[tag] == MPROF_WANT_RECORD) {
                /* Its record only: the time and tag without the 128-byte event. */
                if (!run_ok) {
                    s->n_rec = (uint32_t)(out - s->rec);
                    run_for(&f, th);
                    run_ok = 1;
                }
                put_rec(out++, ts_ns, MPROF_REC_NOEV, (uint32_t)tag, stream);
                continue;
            }
            if (!run_ok) {
                s->n_rec = (uint32_t)(out - s->rec);
                run_for(&f, th);
                run_ok = 1;
            }
            put_event(&s->ev[s->n_ev], tag, th, ts_ns, u, stream);
            put_rec(out++, ts_ns, s->n_ev - f.b->ev0, (uint32_t)tag, stream);
            s->n_ev++;
            continue;
        }
    slow:
        /* Every other tag, a zone record before any THREAD, and a zone when the segment is
         * nearly full: the field list. */
        SYNC();
        int rc = general(&f, &p, end, want);
        if (rc < 0)
            goto failed;
        if (rc == 0)
            break;
        out = s->rec + s->n_rec;
        /* While the batch holds only definitions, the next zone takes the way that ends them
         * (the zone paths below leave only_defs alone), so that a definition after it starts a
         * batch of its own, in a whole read as in a filtered one. */
        run_ok = f.run_open && f.run_thread == d->cur_thread && !f.only_defs;
        th = d->cur_thread;
        t = &d->threads[th];
        scale = d->ts_scale;
        last = t->last_ticks;
        ts_ok = t->ts_stamp == stamp;
        leaf_loc = t->leaf_stamp == stamp ? t->leaf_loc : 0;
        leaf_ok = ts_ok && leaf_loc && th;
    }
    SYNC();
    d->p = p;
    goto done;
stop:
failed:
    d->p = p;
    s->last = 1;
done:
    close_batch(&f);
    if (s->last)
        d->active = 0;
#undef CONV
#undef SYNC
}

void mprof__decoder_fill(mprof__decoder *d, mprof__segment *s, const unsigned char *want)
{
    s->n_rec = s->n_run = s->n_ev = s->n_frames = s->n_b = 0;
    s->last = s->failed = 0;
    s->err[0] = 0;
    if (want && !want[MPROF_EV_ZONE_BEGIN])
        fill(d, s, want, 0, 0);
    else if (d->stream)
        fill(d, s, want, 1, 1);
    else
        fill(d, s, want, 1, 0);
    if (d->stream)
        stream_fence(); /* the segment's stores are visible before it is handed over */
}

void mprof__produce(mprof__decoder *d, mprof__job *job, int first, mprof__segment *s,
                    const unsigned char *want)
{
    s->n_rec = s->n_run = s->n_ev = s->n_frames = s->n_b = 0;
    s->first = first;
    s->offset = job->offset;
    s->raw_slot = job->kind == MPROF__JOB_EVENTS ? d->raw_cur : -1;
    s->last = s->failed = 0;
    s->err[0] = 0;
    memset(&s->kv, 0, sizeof s->kv);
    if (first) {
        s->job_kind = job->kind;
        s->bytes_after = job->bytes_after;
        s->truncated_bytes = job->truncated_bytes;
        s->kv = job->kv;
        memset(&job->kv, 0, sizeof job->kv);
        if (job->kind != MPROF__JOB_EVENTS) {
            if (job->kind == MPROF__JOB_FAIL) {
                s->failed = 1;
                snprintf(s->err, sizeof s->err, "%s", job->err);
            }
            s->last = 1;
            return;
        }
        if (mprof__decoder_start(d, job, s->err, sizeof s->err) != 0) {
            s->failed = 1;
            s->last = 1;
            return;
        }
    }
    mprof__decoder_fill(d, s, want);
}
