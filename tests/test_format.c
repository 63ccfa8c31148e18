/*
 * test_format.c - the capture format: a round trip through the writer and the reader, files cut
 * off at every byte, corrupted bytes, wrong magic, unknown versions and chunk kinds. The reader
 * must never crash or read out of bounds (this test also runs under ASan) and must say clearly
 * what is wrong.
 */
#include "test_util.h"
#include "format/wire.h"

#include <stdlib.h>
#include <string.h>

/* A small capture built by hand: INFO, two EVENTS chunks, END. */
static mprof_buf make_capture(int level, int with_end)
{
    mprof_buf file = {0}, p = {0};
    assert_int_equal(mprof_buf_reserve(&file, 16), 0);
    mprof_fmt_file_header(file.data);
    file.len = 16;
    mprof_fmt_kv(&p, "app", "unit");
    mprof_fmt_kv(&p, "ns_per_tick", "0.5");
    mprof_fmt_kv(&p, "tick0", "1000");
    assert_int_equal(mprof_fmt_chunk(&file, MPROF_CHUNK_INFO, p.data, p.len, 0, NULL), 0);
    for (int c = 0; c < 2; c++) {
        p.len = 0;
        assert_int_equal(mprof_buf_reserve(&p, 4096), 0);
        unsigned char *o = p.data;
        if (c == 0) {
            *o++ = MPROF_EV_DEF_THREAD;
            o = mprof_put_varint(o, 1);
            o = mprof_put_varint(o, 4242);
            *o++ = MPROF_EV_DEF_SRCLOC;
            o = mprof_put_varint(o, 1);
            o = mprof_put_varint(o, 77);
            o = mprof_put_varint(o, 0x2f6fde);
            const char *strs[3] = {"zone", "fn", "file.c"};
            for (int i = 0; i < 3; i++) {
                size_t l = strlen(strs[i]);
                o = mprof_put_varint(o, l);
                memcpy(o, strs[i], l);
                o += l;
            }
        }
        *o++ = MPROF_EV_THREAD;
        o = mprof_put_varint(o, 1);
        uint64_t t = 1000 + (uint64_t)c * 100000;
        for (int i = 0; i < 100; i++) {
            *o++ = MPROF_EV_ZONE_BEGIN;
            o = mprof_put_varint(o, mprof_zigzag(i == 0 ? (int64_t)t : 10));
            o = mprof_put_varint(o, 1);
            *o++ = MPROF_EV_ZONE_END;
            o = mprof_put_varint(o, mprof_zigzag(20));
        }
        p.len = (size_t)(o - p.data);
        assert_int_equal(mprof_fmt_chunk(&file, MPROF_CHUNK_EVENTS, p.data, p.len, level, NULL), 0);
    }
    if (with_end) {
        p.len = 0;
        mprof_fmt_kv(&p, "events", "400");
        assert_int_equal(mprof_fmt_chunk(&file, MPROF_CHUNK_END, p.data, p.len, 0, NULL), 0);
    }
    mprof_buf_free(&p);
    return file;
}

typedef struct result {
    int open_ok, rc;
    uint64_t zones, events;
    int64_t first_ts, last_ts;
    mprof_reader_stats st;
    char err[256];
} result;

static result read_mem(const unsigned char *data, size_t len)
{
    result res = {0};
    mprof_reader *r = mprof_reader_open_mem(data, len, res.err, sizeof res.err);
    if (!r)
        return res;
    res.open_ok = 1;
    mprof_event ev;
    int first = 1;
    while ((res.rc = mprof_reader_next(r, &ev)) == 1) {
        res.events++;
        if (ev.type == MPROF_EV_ZONE_BEGIN) {
            res.zones++;
            if (first)
                res.first_ts = ev.ts_ns;
            first = 0;
        }
        if (ev.type == MPROF_EV_ZONE_END)
            res.last_ts = ev.ts_ns;
    }
    if (res.rc < 0)
        snprintf(res.err, sizeof res.err, "%s", mprof_reader_error(r));
    mprof_reader_get_stats(r, &res.st);
    mprof_reader_close(r);
    return res;
}

static void test_round_trip(void **state)
{
    (void)state;
    for (int level = 0; level <= 3; level += 3) {
        mprof_buf f = make_capture(level, 1);
        result r = read_mem(f.data, f.len);
        assert_true(r.open_ok);
        assert_int_equal(r.rc, 0);
        assert_int_equal(r.zones, 200);
        assert_true(r.st.complete);
        assert_int_equal(r.st.chunks, 4);
        assert_int_equal(r.st.truncated_bytes, 0);
        /* tick0 1000 is 0 ns at 0.5 ns per tick; the last zone of chunk 2 ends at
         * 1000 + 100000 + 20 + 99 * 30 ticks. */
        assert_int_equal(r.first_ts, 0);
        assert_int_equal(r.last_ts, (int64_t)((100000 + 20 + 99 * 30) * 0.5));
        mprof_buf_free(&f);
    }
}

static void test_every_cut_is_readable(void **state)
{
    (void)state;
    mprof_buf f = make_capture(3, 1);
    result full = read_mem(f.data, f.len);
    uint64_t prev_zones = 0;
    for (size_t cut = 0; cut <= f.len; cut++) {
        unsigned char *copy = malloc(cut ? cut : 1); /* exact size: ASan sees any overread */
        memcpy(copy, f.data, cut);
        result r = read_mem(copy, cut);
        free(copy);
        if (cut < MPROF_FMT_HEADER_BYTES) {
            assert_false(r.open_ok);
            assert_true(strlen(r.err) > 0);
            continue;
        }
        assert_true(r.open_ok);
        assert_int_equal(r.rc, 0);                     /* a cut is not an error */
        assert_true(r.zones >= prev_zones);            /* more bytes, never fewer events */
        assert_true(r.st.bytes_read + r.st.truncated_bytes == cut);
        assert_int_equal(r.st.complete, cut == f.len); /* END is the last chunk */
        prev_zones = r.zones;
    }
    assert_int_equal(prev_zones, full.zones);
    mprof_buf_free(&f);
}

static void test_corruption_is_detected(void **state)
{
    (void)state;
    mprof_buf f = make_capture(3, 1);
    result full = read_mem(f.data, f.len);
    int detected = 0;
    for (size_t i = 0; i < f.len; i++) {
        unsigned char *copy = malloc(f.len);
        memcpy(copy, f.data, f.len);
        copy[i] ^= 0x5a;
        result r = read_mem(copy, f.len);
        free(copy);
        if (i >= 10 && i < 16) { /* minor version and reserved flags are not checked */
            assert_int_equal(r.zones, full.zones);
            continue;
        }
        /* Everything else is caught: refused at open, an error, or a cut (a length field that
         * now points past the end), and never the full, unchanged result. */
        int caught = !r.open_ok || r.rc < 0 || r.st.truncated_bytes > 0;
        assert_true(caught);
        if (r.rc < 0)
            assert_true(strlen(r.err) > 10);
        detected++;
    }
    assert_true(detected > 0);
    mprof_buf_free(&f);
}

static void test_clear_errors(void **state)
{
    (void)state;
    mprof_buf f = make_capture(0, 1);
    result r;

    f.data[0] = 'X';
    r = read_mem(f.data, f.len);
    assert_false(r.open_ok);
    assert_non_null(strstr(r.err, "not an mprof capture"));
    f.data[0] = 'M';

    mprof_wr_u16(f.data + 8, 9);
    r = read_mem(f.data, f.len);
    assert_false(r.open_ok);
    assert_non_null(strstr(r.err, "unsupported capture format version 9."));
    mprof_wr_u16(f.data + 8, MPROF_FMT_VERSION_MAJOR);

    /* A flipped payload byte of the first EVENTS chunk: checksum error naming the chunk. */
    size_t info_len = 24 + mprof_rd_u32(f.data + 16 + 8);
    size_t ev_payload = 16 + info_len + 24;
    f.data[ev_payload + 3] ^= 1;
    r = read_mem(f.data, f.len);
    assert_int_equal(r.rc, -1);
    assert_non_null(strstr(r.err, "checksum mismatch"));
    assert_non_null(strstr(r.err, "offset"));
    f.data[ev_payload + 3] ^= 1;
    mprof_buf_free(&f);

    int cant_open = read_mem((const unsigned char *)"", 0).open_ok;
    assert_false(cant_open);
    char err[256];
    assert_null(mprof_reader_open("/nonexistent/x.mprof", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/x.mprof"));
}

static void test_unknown_chunks(void **state)
{
    (void)state;
    mprof_buf f = make_capture(0, 0);
    result before = read_mem(f.data, f.len);
    /* An unknown kind flagged optional is skipped by this reader ... */
    size_t at = f.len;
    assert_int_equal(mprof_fmt_chunk_ex(&f, 77, MPROF_CHUNK_F_OPTIONAL, "abc", 3, 0, NULL), 0);
    result r = read_mem(f.data, f.len);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.zones, before.zones);
    /* ... while a mandatory one is refused with its kind named. */
    f.len = at;
    assert_int_equal(mprof_fmt_chunk_ex(&f, 77, 0, "abc", 3, 0, NULL), 0);
    r = read_mem(f.data, f.len);
    assert_int_equal(r.rc, -1);
    assert_non_null(strstr(r.err, "unknown chunk kind 77"));
    mprof_buf_free(&f);
}

static void test_bad_events(void **state)
{
    (void)state;
    /* Events that lie about ids or lengths are refused, not trusted. */
    const unsigned char cases[][8] = {
        {MPROF_EV_ZONE_BEGIN, 0, 1},          /* zone before any THREAD record */
        {MPROF_EV_THREAD, 1, 0x5f},           /* unknown tag */
        {MPROF_EV_DEF_STRING, 1, 50, 'a'},    /* string longer than the chunk */
        {MPROF_EV_THREAD, 0xff, 0xff, 0xff},  /* varint runs off the end */
        {MPROF_EV_DEF_SRCLOC, 0},             /* id 0 */
        {MPROF_EV_DEF_STRING, 0xc0, 0x84, 0x3d, 1, 'a'}, /* id 1000000: far past any seen */
    };
    const size_t lens[] = {3, 3, 4, 4, 2, 6};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        mprof_buf f = {0};
        mprof_buf_reserve(&f, 16);
        mprof_fmt_file_header(f.data);
        f.len = 16;
        assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_EVENTS, cases[k], lens[k], 0, NULL), 0);
        result r = read_mem(f.data, f.len);
        assert_int_equal(r.rc, -1);
        assert_true(strlen(r.err) > 10);
        mprof_buf_free(&f);
    }
}

/* A capture in memory: the file header and an INFO chunk whose clock makes a tick a ns. */
static void unit_clock_capture(mprof_buf *f)
{
    mprof_buf p = {0};
    assert_int_equal(mprof_buf_reserve(f, 16), 0);
    mprof_fmt_file_header(f->data);
    f->len = 16;
    mprof_fmt_kv(&p, "ns_per_tick", "1");
    mprof_fmt_kv(&p, "tick0", "0");
    assert_int_equal(mprof_fmt_chunk(f, MPROF_CHUNK_INFO, p.data, p.len, 0, NULL), 0);
    mprof_buf_free(&p);
}

/* TS_SCALE (format 1.1): deltas after it are in units of the scale until the chunk ends or
 * another TS_SCALE changes it; a thread's first TS in a chunk stays absolute; it is applied by
 * the reader, not returned; a scale of 0 is refused. Exact ticks come back. */
static void test_ts_scale(void **state)
{
    (void)state;
    mprof_buf f = {0};
    unit_clock_capture(&f);
    unsigned char ev[64], *o = ev;
    *o++ = MPROF_EV_TS_SCALE;
    o = mprof_put_varint(o, 21);
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_BEGIN; /* absolute: 1000 */
    o = mprof_put_varint(o, mprof_zigzag(1000));
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_END; /* +2 steps of 21: 1042 */
    o = mprof_put_varint(o, mprof_zigzag(2));
    *o++ = MPROF_EV_TS_SCALE; /* a delta that is not a multiple follows */
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_BEGIN; /* +5: 1047 */
    o = mprof_put_varint(o, mprof_zigzag(5));
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_END; /* -1: 1046 */
    o = mprof_put_varint(o, mprof_zigzag(-1));
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_EVENTS, ev, (size_t)(o - ev), 1, NULL), 0);
    /* A second chunk starts unscaled: its first TS is absolute, the next delta is plain. */
    o = ev;
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_END;
    o = mprof_put_varint(o, mprof_zigzag(5000));
    *o++ = MPROF_EV_ZONE_END;
    o = mprof_put_varint(o, mprof_zigzag(3));
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_EVENTS, ev, (size_t)(o - ev), 0, NULL), 0);

    mprof_reader *r = mprof_reader_open_mem(f.data, f.len, NULL, 0);
    assert_non_null(r);
    const int64_t want[] = {1000, 1042, 1047, 1046, 5000, 5003};
    size_t n = 0;
    mprof_event e;
    while (mprof_reader_next(r, &e) == 1) {
        assert_int_not_equal(e.type, MPROF_EV_TS_SCALE);
        if (e.type == MPROF_EV_ZONE_BEGIN || e.type == MPROF_EV_ZONE_END) {
            assert_true(n < 6);
            assert_int_equal(e.ts_ns, want[n]);
            n++;
        }
    }
    assert_int_equal(n, 6);
    assert_string_equal(mprof_reader_error(r), "");
    mprof_reader_close(r);

    const unsigned char zero[] = {MPROF_EV_TS_SCALE, 0};
    mprof_buf z = {0};
    mprof_buf_reserve(&z, 16);
    mprof_fmt_file_header(z.data);
    z.len = 16;
    assert_int_equal(mprof_fmt_chunk(&z, MPROF_CHUNK_EVENTS, zero, sizeof zero, 0, NULL), 0);
    result bad = read_mem(z.data, z.len);
    assert_int_equal(bad.rc, -1);
    assert_non_null(strstr(bad.err, "TS_SCALE"));
    mprof_buf_free(&z);
    mprof_buf_free(&f);
}

/* ZONE_LEAF (format 1.2): one byte for a zone begun b and ended b + d steps after the thread's
 * previous timestamp, at the location the chunk's last ZONE_LEAF_LOC for the thread set; read
 * back as a ZONE_BEGIN and its ZONE_END, exact, each counted; the wire scan counts the same. A
 * leaf without a location in its chunk, or as the thread's first timestamp, or a location of 0,
 * is refused by name. */
static void test_zone_leaf(void **state)
{
    (void)state;
    mprof_buf f = {0};
    unit_clock_capture(&f);
    unsigned char ev[64], *o = ev;
    *o++ = MPROF_EV_TS_SCALE;
    o = mprof_put_varint(o, 21);
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_BEGIN; /* a parent, absolute: 1000, location 1 */
    o = mprof_put_varint(o, mprof_zigzag(1000));
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_LEAF_LOC;
    o = mprof_put_varint(o, 2);
    *o++ = (unsigned char)(MPROF_EV_ZONE_LEAF | 1 << 4 | 3); /* 1021 .. 1084, location 2 */
    *o++ = (unsigned char)(MPROF_EV_ZONE_LEAF | 0 << 4 | 15); /* 1084 .. 1399 */
    *o++ = (unsigned char)(MPROF_EV_ZONE_LEAF | 7 << 4 | 0);  /* 1546 .. 1546 */
    *o++ = MPROF_EV_ZONE_END; /* +1 step: 1567 */
    o = mprof_put_varint(o, mprof_zigzag(1));
    size_t len = (size_t)(o - ev);
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_EVENTS, ev, len, 1, NULL), 0);
    mprof_wire_counts wc = {0};
    assert_int_equal(mprof_wire_scan_events(ev, len, &wc, NULL, 0), 0);
    assert_int_equal(wc.events, 8);
    assert_int_equal(wc.zones, 4);

    mprof_reader *r = mprof_reader_open_mem(f.data, f.len, NULL, 0);
    assert_non_null(r);
    const int64_t want[] = {1000, 1021, 1084, 1084, 1399, 1546, 1546, 1567};
    const int types[] = {MPROF_EV_ZONE_BEGIN, MPROF_EV_ZONE_BEGIN, MPROF_EV_ZONE_END,
                         MPROF_EV_ZONE_BEGIN, MPROF_EV_ZONE_END, MPROF_EV_ZONE_BEGIN,
                         MPROF_EV_ZONE_END, MPROF_EV_ZONE_END};
    size_t n = 0;
    mprof_event e;
    while (mprof_reader_next(r, &e) == 1) {
        assert_int_not_equal(e.type, MPROF_EV_ZONE_LEAF_LOC);
        if (e.type != MPROF_EV_ZONE_BEGIN && e.type != MPROF_EV_ZONE_END)
            continue;
        assert_true(n < 8);
        assert_int_equal(e.type, types[n]);
        assert_int_equal(e.ts_ns, want[n]);
        assert_int_equal(e.thread, 1);
        if (e.type == MPROF_EV_ZONE_BEGIN)
            assert_int_equal(e.u[0], n == 0 ? 1 : 2);
        n++;
    }
    assert_int_equal(n, 8);
    assert_string_equal(mprof_reader_error(r), "");
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    assert_int_equal(st.events, 9); /* the THREAD record too */
    mprof_reader_close(r);

    const struct {
        unsigned char rec[8];
        size_t len;
        const char *err;
    } bad[] = {
        /* no ZONE_LEAF_LOC in the chunk */
        {{MPROF_EV_THREAD, 1, MPROF_EV_ZONE_END, 2, MPROF_EV_ZONE_LEAF | 0x11}, 5,
         "without a ZONE_LEAF_LOC"},
        /* the thread's first timestamp in the chunk */
        {{MPROF_EV_THREAD, 1, MPROF_EV_ZONE_LEAF_LOC, 1, MPROF_EV_ZONE_LEAF}, 5,
         "first timestamp"},
        {{MPROF_EV_THREAD, 1, MPROF_EV_ZONE_LEAF_LOC, 0}, 4, "location 0"},
        {{MPROF_EV_ZONE_LEAF}, 1, "before any THREAD"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        mprof_buf z = {0};
        mprof_buf_reserve(&z, 16);
        mprof_fmt_file_header(z.data);
        z.len = 16;
        assert_int_equal(mprof_fmt_chunk(&z, MPROF_CHUNK_EVENTS, bad[k].rec, bad[k].len, 0, NULL),
                         0);
        result res = read_mem(z.data, z.len);
        assert_int_equal(res.rc, -1);
        if (!strstr(res.err, bad[k].err))
            print_message("case %zu: %s\n", k, res.err);
        assert_non_null(strstr(res.err, bad[k].err));
        mprof_buf_free(&z);
    }
    mprof_buf_free(&f);
}

/* ZONE_LEAF_LONG (format 1.3): tag 0x60 | b and a varint length, in units of the chunk's scale
 * (ticks when unscaled), at the thread's ZONE_LEAF_LOC; returned as a ZONE_BEGIN and a ZONE_END,
 * counted as two events by the reader and the live stream's scan; its errors are ZONE_LEAF's,
 * and a length cut off by the chunk's end is one. */
static void test_zone_leaf_long(void **state)
{
    (void)state;
    mprof_buf f = {0};
    unit_clock_capture(&f);
    unsigned char ev[64], *o = ev;
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_BEGIN; /* a parent, absolute: 1000, location 1 */
    o = mprof_put_varint(o, mprof_zigzag(1000));
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_LEAF_LOC;
    o = mprof_put_varint(o, 2);
    *o++ = (unsigned char)(MPROF_EV_ZONE_LEAF_LONG | 31); /* unscaled: 1031 .. 2331 */
    o = mprof_put_varint(o, 1300);
    *o++ = MPROF_EV_TS_SCALE;
    o = mprof_put_varint(o, 21);
    *o++ = (unsigned char)(MPROF_EV_ZONE_LEAF_LONG | 2); /* scaled: 2373 .. 2373 + 62 * 21 */
    o = mprof_put_varint(o, 62);
    *o++ = MPROF_EV_ZONE_END; /* +1 step */
    o = mprof_put_varint(o, mprof_zigzag(1));
    size_t len = (size_t)(o - ev);
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_EVENTS, ev, len, 1, NULL), 0);
    mprof_wire_counts wc = {0};
    assert_int_equal(mprof_wire_scan_events(ev, len, &wc, NULL, 0), 0);
    assert_int_equal(wc.events, 6);
    assert_int_equal(wc.zones, 3);

    mprof_reader *r = mprof_reader_open_mem(f.data, f.len, NULL, 0);
    assert_non_null(r);
    const int64_t want[] = {1000, 1031, 2331, 2373, 2373 + 62 * 21, 2373 + 63 * 21};
    size_t n = 0;
    mprof_event e;
    while (mprof_reader_next(r, &e) == 1) {
        if (e.type != MPROF_EV_ZONE_BEGIN && e.type != MPROF_EV_ZONE_END)
            continue;
        assert_true(n < 6);
        assert_int_equal(e.type, n == 0 || n == 1 || n == 3 ? MPROF_EV_ZONE_BEGIN : MPROF_EV_ZONE_END);
        assert_int_equal(e.ts_ns, want[n]);
        if (e.type == MPROF_EV_ZONE_BEGIN)
            assert_int_equal(e.u[0], n == 0 ? 1 : 2);
        n++;
    }
    assert_int_equal(n, 6);
    assert_string_equal(mprof_reader_error(r), "");
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    assert_int_equal(st.events, 7); /* the THREAD record too */
    mprof_reader_close(r);

    const struct {
        unsigned char rec[8];
        size_t len;
        const char *err;
    } bad[] = {
        {{MPROF_EV_THREAD, 1, MPROF_EV_ZONE_END, 2, MPROF_EV_ZONE_LEAF_LONG, 5}, 6,
         "without a ZONE_LEAF_LOC"},
        {{MPROF_EV_THREAD, 1, MPROF_EV_ZONE_LEAF_LOC, 1, MPROF_EV_ZONE_LEAF_LONG, 5}, 6,
         "first timestamp"},
        {{MPROF_EV_THREAD, 1, MPROF_EV_ZONE_END, 2, MPROF_EV_ZONE_LEAF_LOC, 1,
          MPROF_EV_ZONE_LEAF_LONG, 0x85}, 8, "runs past the end"},
        {{MPROF_EV_ZONE_LEAF_LONG, 1}, 2, "before any THREAD"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        mprof_buf z = {0};
        mprof_buf_reserve(&z, 16);
        mprof_fmt_file_header(z.data);
        z.len = 16;
        assert_int_equal(mprof_fmt_chunk(&z, MPROF_CHUNK_EVENTS, bad[k].rec, bad[k].len, 0, NULL),
                         0);
        result res = read_mem(z.data, z.len);
        assert_int_equal(res.rc, -1);
        if (!strstr(res.err, bad[k].err))
            print_message("case %zu: %s\n", k, res.err);
        assert_non_null(strstr(res.err, bad[k].err));
        mprof_buf_free(&z);
    }
    mprof_buf_free(&f);
}

static void test_varint(void **state)
{
    (void)state;
    const uint64_t vals[] = {0, 1, 127, 128, 300, UINT32_MAX, UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        unsigned char b[16];
        unsigned char *e = mprof_put_varint(b, vals[i]);
        const unsigned char *p = b;
        uint64_t v;
        assert_int_equal(mprof_get_varint(&p, e, &v), 0);
        assert_true(v == vals[i]);
        assert_ptr_equal(p, e);
        p = b;
        assert_int_equal(mprof_get_varint(&p, e - 1, &v), -1); /* cut short */
    }
    assert_int_equal(mprof_unzigzag(mprof_zigzag(-5)), -5);
    assert_int_equal(mprof_unzigzag(mprof_zigzag(INT64_MIN)), INT64_MIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_every_cut_is_readable),
        cmocka_unit_test(test_corruption_is_detected),
        cmocka_unit_test(test_clear_errors),
        cmocka_unit_test(test_unknown_chunks),
        cmocka_unit_test(test_bad_events),
        cmocka_unit_test(test_ts_scale),
        cmocka_unit_test(test_zone_leaf),
        cmocka_unit_test(test_zone_leaf_long),
        cmocka_unit_test(test_varint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
