/*
 * test_batch.c - the reader's batches and its workers (format/batch.h, decode.c, readpool.c):
 * whatever the number of jobs, the same events in the same order with the same tables, counts,
 * errors and cut-offs as a one-at-a-time read on the caller's thread; a reader that hands out
 * only some tags still applies every definition and counts every event.
 *
 * The capture is built here record by record: many chunks, three threads, every record the
 * decoder reads in its own loop (zone begin, end, ZONE_LEAF, ZONE_LEAF_LONG, fixed-field
 * events), strings, callstacks, system records of the process context, TS_SCALE changes,
 * definitions between events (a batch holds them only at its start), and chunks larger than a
 * segment (more records, events and batches than one holds).
 */
#include "test_util.h"
#include "format/batch.h"
#include "format/format.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct builder {
    unsigned char *p;
    size_t len, cap;
    uint64_t last[4]; /* per thread: the last TS written in the chunk, 0 = none yet */
    uint32_t thread;
    uint32_t next_loc, next_str, next_stack;
    uint64_t rng;
} builder;

static unsigned char *room(builder *b, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    return b->p + b->len;
}

static uint32_t rnd(builder *b, uint32_t n)
{
    b->rng = b->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(b->rng >> 33) % n;
}

static void put_v(builder *b, uint64_t v)
{
    unsigned char *o = room(b, 10);
    b->len = (size_t)(mprof_put_varint(o, v) - b->p);
}

static void put_byte(builder *b, unsigned char c)
{
    *room(b, 1) = c;
    b->len++;
}

static void put_s(builder *b, const char *s)
{
    size_t n = strlen(s);
    unsigned char *o = room(b, n + 10);
    b->len = (size_t)(mprof_put_str(o, s, n) - b->p);
}

/* A TS field for the current thread: absolute the first time in the chunk, else a delta (in
 * units of scale, which the caller keeps in step with the TS_SCALE records it wrote). */
static void put_ts(builder *b, uint64_t dt_units, uint64_t scale)
{
    uint64_t *l = &b->last[b->thread];
    if (!*l) {
        *l = 1000000 + dt_units * scale;
        put_v(b, mprof_zigzag((int64_t)*l));
    } else {
        *l += dt_units * scale;
        put_v(b, mprof_zigzag((int64_t)dt_units));
    }
}

static void switch_thread(builder *b, uint32_t t)
{
    put_byte(b, MPROF_EV_THREAD);
    put_v(b, t);
    b->thread = t;
}

/* One EVENTS chunk's payload: n mixed records. big: many definitions between events. */
static void chunk_payload(builder *b, int n, int big)
{
    b->len = 0;
    memset(b->last, 0, sizeof b->last);
    b->thread = 0;
    uint64_t scale = 1;
    int leaf_loc_set[4] = {0, 0, 0, 0};
    switch_thread(b, 1 + rnd(b, 3));
    for (int i = 0; i < n; i++) {
        uint32_t k = rnd(b, big ? 24 : 20);
        uint32_t th = b->thread;
        switch (k) {
        case 0:
            switch_thread(b, 1 + rnd(b, 3));
            break;
        case 1: /* process context: a context switch (thread 0 needs no THREAD record) */
            put_byte(b, MPROF_EV_SYS_SWITCH);
            put_ts(b, 1 + rnd(b, 50), scale);
            put_v(b, 100 + rnd(b, 3));
            put_byte(b, (unsigned char)rnd(b, 2));
            put_byte(b, (unsigned char)rnd(b, 3));
            put_v(b, rnd(b, 4));
            break;
        case 2:
            scale = rnd(b, 2) ? 21 : 1;
            put_byte(b, MPROF_EV_TS_SCALE);
            put_v(b, scale);
            break;
        case 3: {
            put_byte(b, MPROF_EV_MESSAGE);
            put_ts(b, rnd(b, 9), scale);
            put_byte(b, (unsigned char)(1 + rnd(b, 6)));
            char text[32];
            snprintf(text, sizeof text, "message %u", rnd(b, 1000));
            put_s(b, text);
            break;
        }
        case 4:
            put_byte(b, MPROF_EV_PLOT_I64);
            put_ts(b, rnd(b, 9), scale);
            put_v(b, 1);
            put_v(b, mprof_zigzag(-(int64_t)rnd(b, 100000)));
            break;
        case 5: /* a callstack, then an allocation that uses it */
            put_byte(b, MPROF_EV_DEF_CALLSTACK);
            put_v(b, ++b->next_stack);
            put_v(b, 3);
            for (int f = 0; f < 3; f++)
                put_v(b, 0x400000 + rnd(b, 1 << 20));
            put_byte(b, MPROF_EV_ALLOC);
            put_ts(b, rnd(b, 9), scale);
            put_v(b, 0x10000 + 16 * (uint64_t)rnd(b, 1000));
            put_v(b, 16 + rnd(b, 100));
            put_v(b, 0);
            put_v(b, b->next_stack);
            break;
        case 6:
            put_byte(b, MPROF_EV_ZONE_VALUE);
            put_v(b, rnd(b, 1u << 30));
            break;
        case 7:
            put_byte(b, MPROF_EV_LOCK_OBTAINED);
            put_ts(b, rnd(b, 9), scale);
            put_v(b, 7);
            put_byte(b, 0);
            break;
        case 8:
        case 9: /* a short zone without children */
            if (!leaf_loc_set[th] || rnd(b, 8) == 0) {
                put_byte(b, MPROF_EV_ZONE_LEAF_LOC);
                put_v(b, 1 + rnd(b, 3));
                leaf_loc_set[th] = 1;
            }
            if (b->last[th] == 0) { /* a leaf is never a thread's first TS in its chunk */
                put_byte(b, MPROF_EV_ZONE_END);
                put_ts(b, 0, scale);
            }
            if (k == 8) {
                uint32_t bb = rnd(b, 8), dd = rnd(b, 16);
                put_byte(b, (unsigned char)(MPROF_EV_ZONE_LEAF | bb << 4 | dd));
                b->last[th] += (uint64_t)(bb + dd) * scale;
            } else {
                uint32_t bb = rnd(b, 32), dd = rnd(b, 5000);
                put_byte(b, (unsigned char)(MPROF_EV_ZONE_LEAF_LONG | bb));
                put_v(b, dd);
                b->last[th] += (uint64_t)(bb + dd) * scale;
            }
            break;
        case 10:
            put_byte(b, MPROF_EV_FRAME_MARK);
            put_ts(b, rnd(b, 100), scale);
            put_v(b, 0);
            break;
        case 20: /* definitions between events: each begins a batch */
        case 21:
            put_byte(b, MPROF_EV_DEF_STRING);
            put_v(b, ++b->next_str);
            put_s(b, "a late string");
            break;
        case 22:
        case 23: {
            char name[32];
            snprintf(name, sizeof name, "zone %u", b->next_loc + 1);
            put_byte(b, MPROF_EV_DEF_SRCLOC);
            put_v(b, ++b->next_loc);
            put_v(b, 10 + b->next_loc);
            put_v(b, 0xff00ff);
            put_s(b, name);
            put_s(b, "function");
            put_s(b, "file.c");
            break;
        }
        default: /* zone begin or end */
            put_byte(b, rnd(b, 2) ? MPROF_EV_ZONE_BEGIN : MPROF_EV_ZONE_END);
            if (b->p[b->len - 1] == MPROF_EV_ZONE_BEGIN) {
                put_ts(b, rnd(b, 200), scale);
                put_v(b, 1 + rnd(b, 3));
            } else {
                put_ts(b, rnd(b, 200), scale);
            }
            break;
        }
    }
}

/* A capture of n_chunks chunks (chunk 0 defines the first locations and threads; chunk 7 is
 * larger than a segment); *out_len gets its size. */
static unsigned char *make_capture(int n_chunks, size_t *out_len)
{
    mprof_buf f = {0};
    assert_int_equal(mprof_buf_reserve(&f, 16), 0);
    mprof_fmt_file_header(f.data);
    f.len = 16;
    mprof_buf kv = {0};
    mprof_fmt_kv(&kv, "ns_per_tick", "0.3846153846");
    mprof_fmt_kv(&kv, "tick0", "1000000");
    mprof_fmt_kv(&kv, "app", "test_batch");
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_INFO, kv.data, kv.len, 1, NULL), 0);
    mprof_buf_free(&kv);
    builder b = {.rng = 42};
    /* Definitions first: three locations, a plot name, three threads with OS ids. */
    for (uint32_t t = 1; t <= 3; t++) {
        put_byte(&b, MPROF_EV_DEF_THREAD);
        put_v(&b, t);
        put_v(&b, 100 + t);
    }
    put_byte(&b, MPROF_EV_DEF_STRING);
    put_v(&b, ++b.next_str);
    put_s(&b, "plot");
    for (int l = 0; l < 3; l++) {
        put_byte(&b, MPROF_EV_DEF_SRCLOC);
        put_v(&b, ++b.next_loc);
        put_v(&b, 1);
        put_v(&b, 0);
        put_s(&b, l == 0 ? "Physics" : l == 1 ? "Render" : "AI");
        put_s(&b, "step");
        put_s(&b, "engine.c");
    }
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_EVENTS, b.p, b.len, 1, NULL), 0);
    for (int c = 1; c < n_chunks; c++) {
        int big = c == 7;
        chunk_payload(&b, big ? 60000 : 2000 + (int)rnd(&b, 3000), big);
        assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_EVENTS, b.p, b.len, 1, NULL), 0);
        if (c == 3) { /* an optional chunk of a kind the reader does not know: skipped */
            unsigned char x[4] = {1, 2, 3, 4};
            assert_int_equal(mprof_fmt_chunk_ex(&f, 9, MPROF_CHUNK_F_OPTIONAL, x, 4, 0, NULL), 0);
        }
    }
    mprof_buf end = {0};
    mprof_fmt_kv(&end, "chunks", "999"); /* more than the file holds: counted as missing */
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_END, end.data, end.len, 1, NULL), 0);
    mprof_buf_free(&end);
    free(b.p);
    *out_len = f.len;
    return f.data;
}

/* Everything a read gives, to compare two reads by. */
typedef struct trace {
    uint64_t hash, n;
    int rc;
    char err[256];
    mprof_reader_stats st;
    uint64_t tables;
} trace;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t mix_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = mix(h, c[i]);
    return mix(h, n);
}

static uint64_t event_hash(uint64_t h, const mprof_event *e)
{
    h = mix(h, (uint64_t)e->type);
    h = mix(h, e->thread);
    h = mix(h, (uint64_t)e->ts_ns);
    for (int i = 0; i < MPROF_MAX_FIELDS; i++)
        h = mix(h, e->u[i]);
    for (int i = 0; i < 3; i++)
        if (e->strs[i])
            h = mix_bytes(h, e->strs[i], e->str_lens[i]);
    if (e->type == MPROF_EV_DEF_CALLSTACK)
        h = mix_bytes(h, e->frames, e->u[1] * sizeof *e->frames);
    return h;
}

static uint64_t tables_hash(const mprof_reader *r)
{
    uint64_t h = 1;
    for (uint32_t i = 0; i < mprof_reader_srcloc_count(r); i++) {
        const mprof_srcloc_def *d = mprof_reader_srcloc(r, i);
        if (d)
            h = mix_bytes(mix(h, i), d->name, strlen(d->name));
    }
    for (uint32_t i = 1; i < 64; i++) {
        const char *s = mprof_reader_string(r, i);
        if (s)
            h = mix_bytes(mix(h, i), s, strlen(s));
        uint32_t n;
        const uint64_t *fr = mprof_reader_callstack(r, i, &n);
        if (fr)
            h = mix_bytes(h, fr, n * sizeof *fr);
        const mprof_thread_def *t = mprof_reader_thread(r, i);
        if (t)
            h = mix(mix(h, t->os_tid), (uint64_t)t->exited);
    }
    return h;
}

static trace read_events(const unsigned char *data, size_t len, int jobs,
                         const unsigned char *want)
{
    trace t = {.hash = 1};
    char err[256];
    mprof_reader *r = mprof_reader_open_mem(data, len, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(mprof_reader_set_jobs(r, jobs), 0);
    if (want)
        mprof_reader_want(r, want);
    mprof_event e;
    while ((t.rc = mprof_reader_next(r, &e)) == 1) {
        t.hash = event_hash(t.hash, &e);
        t.n++;
    }
    snprintf(t.err, sizeof t.err, "%s", mprof_reader_error(r));
    mprof_reader_get_stats(r, &t.st);
    t.tables = tables_hash(r);
    assert_int_equal(mprof_reader_set_jobs(r, 2), -1); /* too late: reading has begun */
    mprof_reader_close(r);
    return t;
}

/* A read through batches, as the events they stand for. */
typedef struct batch_read {
    trace t;
    int64_t max_ts;
    pthread_t caller;
    uint64_t batches, off_caller; /* batches, and those handed out on another thread */
    uint64_t stop_after;          /* stop after this many batches (0: never) */
    uint64_t bad;                 /* checks that failed (on a reader's thread cmocka cannot
                                     fail the test: the caller asserts this is 0) */
} batch_read;

#define CHECK(c, cond) ((c)->bad += !(cond))

/* Adds a batch's records, expanded into the events they stand for, to the trace. */
static int hash_batch(void *arg, const mprof_batch *b)
{
    batch_read *c = arg;
    c->batches++;
    c->off_caller += !pthread_equal(pthread_self(), c->caller);
    if (b->max_ts_ns > c->max_ts)
        c->max_ts = b->max_ts_ns;
    uint32_t covered = 0;
    for (uint32_t ri = 0; ri < b->n_run; ri++) {
        const mprof_run *run = &b->run[ri];
        CHECK(c, run->first == covered); /* runs tile the batch */
        CHECK(c, run->end > run->first);
        covered = run->end;
        for (uint32_t k = run->first; k < run->end; k++) {
            const mprof_rec *x = &b->rec[k];
            int type = mprof_rec_type(x);
            mprof_event e;
            if (type == MPROF_REC_LEAF || type == MPROF_EV_ZONE_BEGIN ||
                type == MPROF_EV_ZONE_END) {
                memset(&e, 0, sizeof e);
                e.type = type == MPROF_REC_LEAF ? MPROF_EV_ZONE_BEGIN : type;
                e.thread = run->thread;
                e.ts_ns = x->ts_ns;
                if (type != MPROF_EV_ZONE_END)
                    e.u[0] = x->x;
                c->t.hash = event_hash(c->t.hash, &e);
                c->t.n++;
                if (type == MPROF_REC_LEAF) {
                    memset(&e, 0, sizeof e);
                    e.type = MPROF_EV_ZONE_END;
                    e.thread = run->thread;
                    e.ts_ns = x->ts_ns + mprof_rec_dur(x);
                    c->t.hash = event_hash(c->t.hash, &e);
                    c->t.n++;
                }
                continue;
            }
            if (x->x >= b->n_ev) {
                c->bad++;
                continue;
            }
            CHECK(c, b->ev[x->x].type == type);
            CHECK(c, b->ev[x->x].thread == run->thread);
            CHECK(c, b->ev[x->x].ts_ns == x->ts_ns);
            c->t.hash = event_hash(c->t.hash, &b->ev[x->x]);
            c->t.n++;
        }
    }
    CHECK(c, covered == b->n_rec);
    return c->stop_after && c->batches >= c->stop_after;
}

/* The same through batches (each: mprof_reader_each_batch, else mprof_reader_next_batch). */
static batch_read read_batches_by(const unsigned char *data, size_t len, int jobs, int each,
                                  uint64_t stop_after)
{
    batch_read c = {.t = {.hash = 1}, .max_ts = INT64_MIN, .caller = pthread_self(),
                    .stop_after = stop_after};
    char err[256];
    mprof_reader *r = mprof_reader_open_mem(data, len, err, sizeof err);
    assert_non_null(r);
    mprof_reader_set_jobs(r, jobs);
    if (each) {
        c.t.rc = mprof_reader_each_batch(r, hash_batch, &c);
    } else {
        mprof_batch b;
        while ((c.t.rc = mprof_reader_next_batch(r, &b)) == 1)
            if (hash_batch(&c, &b))
                break;
    }
    assert_int_equal(c.bad, 0);
    snprintf(c.t.err, sizeof c.t.err, "%s", mprof_reader_error(r));
    mprof_reader_get_stats(r, &c.t.st);
    c.t.tables = tables_hash(r);
    if (each && c.t.rc == 1) { /* stopped: the reader reads no more */
        mprof_batch b;
        assert_int_equal(mprof_reader_next_batch(r, &b), -1);
    }
    mprof_reader_close(r);
    return c;
}

static trace read_batches(const unsigned char *data, size_t len, int jobs, int64_t *max_ts)
{
    batch_read c = read_batches_by(data, len, jobs, 0, 0);
    *max_ts = c.max_ts;
    return c.t;
}

static void same(const trace *a, const trace *b)
{
    assert_int_equal(a->rc, b->rc);
    assert_string_equal(a->err, b->err);
    assert_int_equal(a->n, b->n);
    assert_true(a->hash == b->hash);
    assert_true(a->tables == b->tables);
    assert_int_equal(a->st.events, b->st.events);
    assert_int_equal(a->st.chunks, b->st.chunks);
    assert_int_equal(a->st.bytes_read, b->st.bytes_read);
    assert_int_equal(a->st.truncated_bytes, b->st.truncated_bytes);
    assert_int_equal(a->st.complete, b->st.complete);
    assert_int_equal(a->st.ending, b->st.ending);
    assert_int_equal(a->st.chunks_missing, b->st.chunks_missing);
    assert_int_equal(a->st.events_missing, b->st.events_missing);
}

static void test_jobs_same_events(void **state)
{
    (void)state;
    size_t len;
    unsigned char *cap = make_capture(24, &len);
    trace one = read_events(cap, len, 1, NULL);
    assert_int_equal(one.rc, 0);
    assert_true(one.n > 100000);
    assert_int_equal(one.st.events, one.n);
    assert_int_equal(one.st.chunks, 27); /* INFO, 24 EVENTS, the skipped one, END */
    assert_true(one.st.complete);
    assert_int_equal(one.st.chunks_missing, 999 - 26);
    for (int jobs = 2; jobs <= 5; jobs++) {
        trace t = read_events(cap, len, jobs, NULL);
        same(&one, &t);
        int64_t max_ts;
        trace tb = read_batches(cap, len, jobs == 5 ? 1 : jobs, &max_ts);
        same(&one, &tb);
    }
    free(cap);
}

/* mprof_reader_each_batch: the batches of mprof_reader_next_batch, in the same order, with any
 * number of jobs; with more than one, handed out on the threads that decoded them; stopped
 * after any batch, the same batches up to there, and a reader that reads no more. */
static void test_each_batch(void **state)
{
    (void)state;
    size_t len;
    unsigned char *cap = make_capture(24, &len);
    batch_read one = read_batches_by(cap, len, 1, 0, 0);
    assert_int_equal(one.t.rc, 0);
    assert_true(one.batches > 24);
    for (int jobs = 1; jobs <= 5; jobs++) {
        batch_read e = read_batches_by(cap, len, jobs, 1, 0);
        same(&one.t, &e.t);
        assert_true(e.max_ts == one.max_ts);
        assert_int_equal(e.batches, one.batches);
        assert_int_equal(e.off_caller, jobs > 1 ? e.batches : 0);
        uint64_t stops[] = {1, 7, one.batches / 2, one.batches - 1};
        for (size_t k = 0; k < sizeof stops / sizeof stops[0]; k++) {
            batch_read a = read_batches_by(cap, len, 1, 0, stops[k]);
            batch_read b = read_batches_by(cap, len, jobs, 1, stops[k]);
            assert_int_equal(a.t.rc, 1);
            assert_int_equal(b.t.rc, 1);
            assert_int_equal(b.batches, stops[k]);
            assert_int_equal(b.t.n, a.t.n);
            assert_true(b.t.hash == a.t.hash);
            assert_non_null(strstr(b.t.err, "stopped"));
        }
    }
    free(cap);
}

/* mprof_reader_each_batch_then: the second stage has every batch the first had, in the same
 * order, each after the first stage is done with it, and sees the reader's tables as the first
 * stage saw them with that batch (the capture defines callstacks all through it, so a later
 * batch's definitions applied too early show); stopped, the second stage has the batches up to
 * the stop. */
#define THEN_MAX 65536

typedef struct then_read {
    batch_read c;     /* the first stage's */
    const mprof_reader *r;
    uint32_t stacks;  /* callstacks defined, as the first stage last saw */
    uint32_t fn_stacks[THEN_MAX];
    _Atomic uint64_t fn_done; /* batches the first stage is done with */
    uint64_t then_batches, then_n, then_hash, bad;
} then_read;

static uint32_t stacks_defined(const mprof_reader *r, uint32_t from)
{
    uint32_t n;
    while (mprof_reader_callstack(r, from + 1, &n))
        from++;
    return from;
}

static int then_first(void *arg, const mprof_batch *b)
{
    then_read *t = arg;
    uint64_t k = t->c.batches;
    int stop = hash_batch(&t->c, b);
    t->stacks = stacks_defined(t->r, t->stacks);
    if (k < THEN_MAX)
        t->fn_stacks[k] = t->stacks;
    t->fn_done = k + 1;
    return stop;
}

static void then_second(void *arg, const mprof_batch *b)
{
    then_read *t = arg;
    uint64_t k = t->then_batches++;
    uint32_t n;
    t->bad += k >= t->fn_done; /* the first stage is done with it */
    if (k < THEN_MAX) {
        uint32_t seen = t->fn_stacks[k];
        t->bad += seen && !mprof_reader_callstack(t->r, seen, &n);
        t->bad += mprof_reader_callstack(t->r, seen + 1, &n) != NULL;
    }
    for (uint32_t i = 0; i < b->n_rec; i++)
        t->then_hash = mix(mix(t->then_hash, (uint64_t)b->rec[i].ts_ns), b->rec[i].y);
    t->then_n += b->n_rec;
}

static then_read *read_then(const unsigned char *data, size_t len, int jobs, uint64_t stop_after)
{
    then_read *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->c = (batch_read){.t = {.hash = 1}, .max_ts = INT64_MIN, .caller = pthread_self(),
                        .stop_after = stop_after};
    t->then_hash = 1;
    char err[256];
    mprof_reader *r = mprof_reader_open_mem(data, len, err, sizeof err);
    assert_non_null(r);
    mprof_reader_set_jobs(r, jobs);
    t->r = r;
    t->c.t.rc = mprof_reader_each_batch_then(r, then_first, then_second, t);
    assert_int_equal(t->c.bad, 0);
    assert_int_equal(t->bad, 0);
    mprof_reader_close(r);
    return t;
}

static void test_each_batch_then(void **state)
{
    (void)state;
    size_t len;
    unsigned char *cap = make_capture(24, &len);
    then_read *one = read_then(cap, len, 1, 0);
    assert_int_equal(one->c.t.rc, 0);
    assert_true(one->c.batches > 24 && one->c.batches < THEN_MAX);
    assert_true(one->stacks > 100); /* definitions all through the capture */
    assert_int_equal(one->then_batches, one->c.batches);
    for (int jobs = 1; jobs <= 5; jobs++) {
        then_read *t = read_then(cap, len, jobs, 0);
        assert_int_equal(t->c.t.rc, 0);
        assert_true(t->c.t.hash == one->c.t.hash);
        assert_int_equal(t->then_batches, one->c.batches);
        assert_int_equal(t->then_n, one->then_n);
        assert_true(t->then_hash == one->then_hash);
        free(t);
        uint64_t stops[] = {1, 7, one->c.batches / 2};
        for (size_t k = 0; k < sizeof stops / sizeof stops[0]; k++) {
            t = read_then(cap, len, jobs, stops[k]);
            assert_int_equal(t->c.t.rc, 1);
            assert_int_equal(t->c.batches, stops[k]);
            assert_int_equal(t->then_batches, stops[k]);
            free(t);
        }
    }
    free(one);
    free(cap);
}

/* The records a reader applies to its tables, handed out whatever it wants. */
static int is_definition(int type)
{
    return type == MPROF_EV_DEF_SRCLOC || type == MPROF_EV_DEF_STRING ||
           type == MPROF_EV_DEF_THREAD || type == MPROF_EV_DEF_CALLSTACK ||
           type == MPROF_EV_THREAD_NAME || type == MPROF_EV_THREAD_EXIT;
}

/* A reader told to hand out only some tags: those, every definition, in the same order; the
 * same tables and counts; each batch's latest time covers what it left out. */
static void test_want(void **state)
{
    (void)state;
    size_t len;
    unsigned char *cap = make_capture(12, &len);
    unsigned char want[MPROF_EV_MAX] = {0};
    want[MPROF_EV_FRAME_MARK] = want[MPROF_EV_SYS_SWITCH] = 1;
    /* What a full read gives, filtered here. */
    char err[256];
    mprof_reader *r = mprof_reader_open_mem(cap, len, err, sizeof err);
    assert_non_null(r);
    uint64_t h = 1, n = 0;
    int64_t latest = INT64_MIN;
    mprof_event e;
    while (mprof_reader_next(r, &e) == 1) {
        if (e.ts_ns > latest)
            latest = e.ts_ns;
        if (!is_definition(e.type) && !want[e.type])
            continue;
        h = event_hash(h, &e);
        n++;
    }
    mprof_reader_stats full;
    mprof_reader_get_stats(r, &full);
    uint64_t tables = tables_hash(r);
    mprof_reader_close(r);
    for (int jobs = 1; jobs <= 3; jobs++) {
        r = mprof_reader_open_mem(cap, len, err, sizeof err);
        mprof_reader_set_jobs(r, jobs);
        mprof_reader_want(r, want);
        mprof_batch b;
        uint64_t h2 = 1, n2 = 0;
        int64_t latest2 = INT64_MIN;
        while (mprof_reader_next_batch(r, &b) == 1) {
            if (b.max_ts_ns > latest2)
                latest2 = b.max_ts_ns;
            for (uint32_t k = 0; k < b.n_rec; k++) {
                int type = mprof_rec_type(&b.rec[k]);
                assert_true(is_definition(type) || want[type]); /* asked for, or definitions */
                assert_true(type != MPROF_REC_LEAF && type != MPROF_EV_ZONE_BEGIN);
                h2 = event_hash(h2, &b.ev[b.rec[k].x]);
                n2++;
            }
        }
        mprof_reader_stats st;
        mprof_reader_get_stats(r, &st);
        assert_int_equal(st.events, full.events);
        assert_true(tables_hash(r) == tables);
        assert_int_equal(n2, n);
        assert_true(h2 == h);
        assert_int_equal(latest2, latest);
        mprof_reader_close(r);
    }
    free(cap);
}

/* Tags wanted as records only: each comes as its record (time, thread, tag, x = MPROF_REC_NOEV)
 * in its place, without an event; a one-at-a-time read gives it without fields; counts, tables
 * and every other event are those of a full read. */
static uint64_t timing_hash(uint64_t h, int type, uint32_t thread, int64_t ts)
{
    return mix(mix(mix(h, (uint64_t)type), thread), (uint64_t)ts);
}

static void test_want_record(void **state)
{
    (void)state;
    size_t len;
    unsigned char *cap = make_capture(12, &len);
    unsigned char want[MPROF_EV_MAX];
    for (int t = 0; t < MPROF_EV_MAX; t++)
        want[t] = is_definition(t) || t == MPROF_EV_ZONE_BEGIN ? MPROF_WANT_WHOLE : MPROF_WANT_RECORD;
    want[MPROF_EV_ZONE_END] = MPROF_WANT_WHOLE; /* (zones follow want[MPROF_EV_ZONE_BEGIN]) */
    want[MPROF_EV_PLOT_F64] = MPROF_WANT_WHOLE;
    char err[256];
    mprof_reader *r = mprof_reader_open_mem(cap, len, err, sizeof err);
    assert_non_null(r);
    uint64_t h = 1, n = 0, n_rec_only = 0;
    mprof_event e;
    while (mprof_reader_next(r, &e) == 1) {
        h = timing_hash(h, e.type, e.thread, e.ts_ns);
        n++;
        n_rec_only += want[e.type] == MPROF_WANT_RECORD;
    }
    assert_true(n_rec_only > 1000); /* the capture has such events (frame marks, switches) */
    mprof_reader_stats full;
    mprof_reader_get_stats(r, &full);
    uint64_t tables = tables_hash(r);
    mprof_reader_close(r);
    for (int jobs = 1; jobs <= 3; jobs++) {
        r = mprof_reader_open_mem(cap, len, err, sizeof err);
        mprof_reader_set_jobs(r, jobs);
        mprof_reader_want(r, want);
        mprof_batch b;
        uint64_t h2 = 1, n2 = 0, rec_only = 0;
        while (mprof_reader_next_batch(r, &b) == 1) {
            for (uint32_t ri = 0; ri < b.n_run; ri++) {
                for (uint32_t k = b.run[ri].first; k < b.run[ri].end; k++) {
                    const mprof_rec *x = &b.rec[k];
                    int type = mprof_rec_type(x);
                    h2 = timing_hash(h2, type == MPROF_REC_LEAF ? MPROF_EV_ZONE_BEGIN : type,
                                     b.run[ri].thread, x->ts_ns);
                    n2++;
                    if (type == MPROF_REC_LEAF) {
                        h2 = timing_hash(h2, MPROF_EV_ZONE_END, b.run[ri].thread,
                                         x->ts_ns + mprof_rec_dur(x));
                        n2++;
                        continue;
                    }
                    if (type == MPROF_EV_ZONE_BEGIN || type == MPROF_EV_ZONE_END)
                        continue;
                    if (want[type] == MPROF_WANT_RECORD) {
                        assert_int_equal(x->x, MPROF_REC_NOEV);
                        rec_only++;
                    } else {
                        assert_true(x->x < b.n_ev);
                        assert_int_equal(b.ev[x->x].type, type);
                    }
                }
            }
        }
        mprof_reader_stats st;
        mprof_reader_get_stats(r, &st);
        assert_int_equal(st.events, full.events);
        assert_true(tables_hash(r) == tables);
        assert_int_equal(n2, n);
        assert_true(h2 == h);
        assert_int_equal(rec_only, n_rec_only);
        mprof_reader_close(r);
        /* One at a time: the same events, those wanted as records without fields. */
        r = mprof_reader_open_mem(cap, len, err, sizeof err);
        mprof_reader_set_jobs(r, jobs);
        mprof_reader_want(r, want);
        uint64_t h3 = 1;
        while (mprof_reader_next(r, &e) == 1) {
            h3 = timing_hash(h3, e.type, e.thread, e.ts_ns);
            if (want[e.type] == MPROF_WANT_RECORD)
                assert_int_equal(e.u[0], 0);
        }
        assert_true(h3 == h);
        mprof_reader_close(r);
    }
    free(cap);
}

/* A switch or wake-up with a value this reader does not know (a newer writer's) is refused with
 * the same message by the decoder's fast path and its field list, with any number of jobs. */
static unsigned char *one_sys_event(int tag, unsigned bad, size_t *out_len)
{
    mprof_buf f = {0};
    assert_int_equal(mprof_buf_reserve(&f, 16), 0);
    mprof_fmt_file_header(f.data);
    f.len = 16;
    mprof_buf kv = {0};
    mprof_fmt_kv(&kv, "ns_per_tick", "1");
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_INFO, kv.data, kv.len, 1, NULL), 0);
    mprof_buf_free(&kv);
    builder b = {.rng = 7};
    for (int i = 0; i < 3; i++) { /* good ones first, then the bad one */
        int last = i == 2;
        put_byte(&b, (unsigned char)tag);
        put_ts(&b, 10, 1);
        put_v(&b, 100);
        if (tag == MPROF_EV_SYS_SWITCH) {
            put_byte(&b, (unsigned char)(last && bad == 1 ? 2 : MPROF_SYS_IN));
            put_byte(&b, (unsigned char)(last && bad == 2 ? MPROF_SYS_REASON_MAX + 1 : 0));
            put_v(&b, 1);
        } else {
            put_v(&b, 200);
            put_v(&b, 3);
            put_byte(&b, (unsigned char)(last ? MPROF_SYS_WAKE_MAX + 1 : 0));
            put_v(&b, 1);
        }
    }
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_EVENTS, b.p, b.len, 1, NULL), 0);
    free(b.p);
    *out_len = f.len;
    return f.data;
}

static void test_unknown_sys_values(void **state)
{
    (void)state;
    const struct { int tag; unsigned bad; const char *msg; } cases[] = {
        {MPROF_EV_SYS_SWITCH, 1, "unknown switch direction or reason"},
        {MPROF_EV_SYS_SWITCH, 2, "unknown switch direction or reason"},
        {MPROF_EV_SYS_WAKE, 0, "unknown wake-up context"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t len;
        unsigned char *cap = one_sys_event(cases[c].tag, cases[c].bad, &len);
        for (int jobs = 1; jobs <= 2; jobs++) {
            int64_t max_ts;
            trace t = read_batches(cap, len, jobs, &max_ts);
            assert_int_equal(t.rc, -1);
            assert_int_equal(t.n, 2); /* the two good ones */
            assert_non_null(strstr(t.err, cases[c].msg));
            trace e = read_events(cap, len, jobs, NULL);
            same(&t, &e);
        }
        free(cap);
    }
}

/* The byte at offset of chunk k (k = 0: the INFO chunk) of a capture. */
static size_t chunk_offset(const unsigned char *cap, size_t len, int k)
{
    size_t off = MPROF_FMT_HEADER_BYTES;
    for (int i = 0; i < k && off + MPROF_FMT_CHUNK_HEADER_BYTES <= len; i++)
        off += MPROF_FMT_CHUNK_HEADER_BYTES + mprof_rd_u32(cap + off + 8);
    return off;
}

/* A damaged chunk, a definition out of range, a cut-off file: the same events before the error
 * and the same message (or the same cut-off bytes) with any number of jobs. */
static void test_jobs_same_errors(void **state)
{
    (void)state;
    size_t len;
    unsigned char *cap = make_capture(16, &len);
    unsigned char *bad = malloc(len);
    assert_non_null(bad);
    /* A flipped payload byte in chunk 9: its checksum. */
    memcpy(bad, cap, len);
    bad[chunk_offset(cap, len, 9) + MPROF_FMT_CHUNK_HEADER_BYTES + 5] ^= 0x40;
    trace one = read_events(bad, len, 1, NULL);
    assert_int_equal(one.rc, -1);
    assert_non_null(strstr(one.err, "checksum"));
    for (int jobs = 2; jobs <= 4; jobs++) {
        trace t = read_events(bad, len, jobs, NULL);
        same(&one, &t);
        batch_read e = read_batches_by(bad, len, jobs, 1, 0);
        same(&one, &e.t);
    }
    /* A cut at any of these bytes. */
    size_t cuts[] = {len - 1, chunk_offset(cap, len, 5) + 7, chunk_offset(cap, len, 12) + 30,
                     chunk_offset(cap, len, 2)};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        trace a = read_events(cap, cuts[c], 1, NULL);
        assert_int_equal(a.rc, 0);
        assert_false(a.st.complete);
        for (int jobs = 2; jobs <= 3; jobs++) {
            trace t = read_events(cap, cuts[c], jobs, NULL);
            same(&a, &t);
            int64_t m;
            trace tb = read_batches(cap, cuts[c], jobs, &m);
            same(&a, &tb);
            batch_read e = read_batches_by(cap, cuts[c], jobs, 1, 0);
            same(&a, &e.t);
        }
    }
    free(bad);
    free(cap);
    /* A definition whose id jumps far beyond the others, after events in its chunk: refused as
     * its batch is handed out, after the events before it. */
    mprof_buf f = {0};
    mprof_buf_reserve(&f, 16);
    mprof_fmt_file_header(f.data);
    f.len = 16;
    builder b = {.rng = 7};
    for (int c = 0; c < 6; c++) {
        chunk_payload(&b, 3000, 0);
        if (c == 4) {
            put_byte(&b, MPROF_EV_DEF_STRING);
            put_v(&b, 1u << 22);
            put_s(&b, "far");
            for (int i = 0; i < 3; i++) {
                put_byte(&b, MPROF_EV_PLOT_I64);
                put_ts(&b, 5, 1);
                put_v(&b, 1);
                put_v(&b, 8);
            }
        }
        assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_EVENTS, b.p, b.len, 1, NULL), 0);
    }
    free(b.p);
    trace d1 = read_events(f.data, f.len, 1, NULL);
    assert_int_equal(d1.rc, -1);
    assert_non_null(strstr(d1.err, "string id out of range"));
    assert_true(d1.n > 4 * 3000 / 2); /* the chunks before it, and its events before it */
    for (int jobs = 2; jobs <= 3; jobs++) {
        trace t = read_events(f.data, f.len, jobs, NULL);
        same(&d1, &t);
        batch_read e = read_batches_by(f.data, f.len, jobs, 1, 0);
        same(&d1, &e.t);
    }
    mprof_buf_free(&f);
}

/* The same through a file (the workers read it under their lock), and a reader closed before
 * the end of the capture (its workers stop). */
static void test_file_and_early_close(void **state)
{
    (void)state;
    size_t len;
    unsigned char *cap = make_capture(20, &len);
    char path[] = "/tmp/mprof-test-batch-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, cap, len), (ssize_t)len);
    close(fd);
    trace one = read_events(cap, len, 1, NULL);
    for (int jobs = 1; jobs <= 3; jobs++) {
        char err[256];
        mprof_reader *r = mprof_reader_open(path, err, sizeof err);
        assert_non_null(r);
        mprof_reader_set_jobs(r, jobs);
        mprof_event e;
        uint64_t h = 1, n = 0;
        int rc;
        while ((rc = mprof_reader_next(r, &e)) == 1) {
            h = event_hash(h, &e);
            n++;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(n, one.n);
        assert_true(h == one.hash);
        mprof_reader_close(r);
        /* Stop after a few batches. */
        r = mprof_reader_open(path, err, sizeof err);
        mprof_reader_set_jobs(r, jobs);
        mprof_batch b;
        for (int i = 0; i < 3 && mprof_reader_next_batch(r, &b) == 1; i++)
            ;
        mprof_reader_close(r);
    }
    /* The process setting reaches readers opened after it. */
    mprof_set_read_jobs(3);
    assert_int_equal(mprof_read_jobs(), 3);
    trace t3 = read_events(cap, len, 0, NULL);
    same(&one, &t3);
    mprof_set_read_jobs(1);
    assert_true(mprof_default_jobs() >= 1);
    unlink(path);
    free(cap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobs_same_events),
        cmocka_unit_test(test_each_batch),
        cmocka_unit_test(test_each_batch_then),
        cmocka_unit_test(test_want),
        cmocka_unit_test(test_want_record),
        cmocka_unit_test(test_unknown_sys_values),
        cmocka_unit_test(test_jobs_same_errors),
        cmocka_unit_test(test_file_and_early_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
