/*
 * test_wire.c - the live-capture protocol decoders (format/wire.c): round trips, every way a
 * peer can send bad bytes, and the fuzz regressions (fuzz/regressions/wire-*).
 */
#include "test_util.h"

#include "format/wire.h"

#include <stdlib.h>
#include <string.h>

static void hello_round_trip(void **state)
{
    (void)state;
    unsigned char b[MPROF_WIRE_HELLO_BYTES];
    mprof_wire_hello h = {.version = MPROF_WIRE_VERSION, .flags = MPROF_WIRE_F_HISTORY,
                          .history_ms = 2500, .queue_mib = 32};
    mprof_wire_encode_hello(b, &h);
    mprof_wire_hello d;
    char err[128];
    for (size_t n = 0; n < sizeof b; n++)
        assert_int_equal(mprof_wire_decode_hello(b, n, &d, err, sizeof err), MPROF_WIRE_NEED_MORE);
    assert_int_equal(mprof_wire_decode_hello(b, sizeof b, &d, err, sizeof err), MPROF_WIRE_DONE);
    assert_int_equal(d.version, MPROF_WIRE_VERSION);
    assert_int_equal(d.flags, MPROF_WIRE_F_HISTORY);
    assert_int_equal(d.history_ms, 2500);
    assert_int_equal(d.queue_mib, 32);
}

static void hello_rejects_garbage(void **state)
{
    (void)state;
    mprof_wire_hello d;
    char err[128] = "";
    const unsigned char http[] = "GET / HTTP/1.1\r\n\r\n";
    assert_int_equal(mprof_wire_decode_hello(http, sizeof http - 1, &d, err, sizeof err),
                     MPROF_WIRE_ERROR);
    assert_non_null(strstr(err, "magic"));
    /* Another version is decoded from its first ten bytes only, so it can be refused. */
    unsigned char b[10];
    memcpy(b, MPROF_WIRE_MAGIC, 8);
    mprof_wr_u16(b + 8, 99);
    assert_int_equal(mprof_wire_decode_hello(b, sizeof b, &d, err, sizeof err), MPROF_WIRE_DONE);
    assert_int_equal(d.version, 99);
}

static void reply_round_trip_and_limits(void **state)
{
    (void)state;
    mprof_buf b = {0};
    assert_int_equal(mprof_wire_encode_reply(&b, MPROF_WIRE_BUSY, "busy", 4), 0);
    mprof_wire_reply r;
    size_t used = 0;
    char err[128];
    assert_int_equal(mprof_wire_decode_reply(b.data, b.len - 1, &r, &used, err, sizeof err),
                     MPROF_WIRE_NEED_MORE);
    assert_int_equal(mprof_wire_decode_reply(b.data, b.len, &r, &used, err, sizeof err),
                     MPROF_WIRE_DONE);
    assert_int_equal(used, b.len);
    assert_int_equal(r.status, MPROF_WIRE_BUSY);
    assert_memory_equal(r.payload, "busy", 4);
    /* A payload length past the protocol's limit is an error, not an allocation. */
    mprof_wr_u32(b.data + 12, MPROF_WIRE_MAX_REPLY_PAYLOAD + 1);
    assert_int_equal(mprof_wire_decode_reply(b.data, b.len, &r, &used, err, sizeof err),
                     MPROF_WIRE_ERROR);
    b.data[0] ^= 1;
    assert_int_equal(mprof_wire_decode_reply(b.data, b.len, &r, &used, err, sizeof err),
                     MPROF_WIRE_ERROR);
    mprof_buf_free(&b);
}

static void chunk_stream_checks_every_byte(void **state)
{
    (void)state;
    /* An EVENTS payload: THREAD 1, DEF_THREAD, a zone, a frame, a plot, LOST 7. */
    unsigned char ev[64], *o = ev;
    *o++ = MPROF_EV_DEF_THREAD;
    o = mprof_put_varint(o, 1);
    o = mprof_put_varint(o, 1234);
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_BEGIN;
    o = mprof_put_varint(o, mprof_zigzag(100));
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_FRAME_MARK;
    o = mprof_put_varint(o, 2);
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_PLOT_F64;
    o = mprof_put_varint(o, 2);
    o = mprof_put_varint(o, 3);
    memset(o, 0, 8);
    o += 8;
    *o++ = MPROF_EV_LOST;
    o = mprof_put_varint(o, 2);
    o = mprof_put_varint(o, 7);
    size_t n = (size_t)(o - ev);
    mprof_buf fr = {0};
    assert_int_equal(mprof_fmt_chunk(&fr, MPROF_CHUNK_EVENTS, ev, n, 3, NULL), 0);
    mprof_wire_chunk ch;
    size_t used;
    char err[128];
    assert_int_equal(mprof_wire_next_chunk(fr.data, fr.len - 1, &ch, &used, err, sizeof err),
                     MPROF_WIRE_NEED_MORE);
    assert_int_equal(mprof_wire_next_chunk(fr.data, fr.len, &ch, &used, err, sizeof err),
                     MPROF_WIRE_DONE);
    assert_int_equal(used, fr.len);
    mprof_buf raw = {0};
    assert_int_equal(mprof_wire_chunk_payload(&ch, &raw, NULL, err, sizeof err), 0);
    mprof_wire_counts c = {0};
    assert_int_equal(mprof_wire_scan_events(raw.data, raw.len, &c, err, sizeof err), 0);
    assert_int_equal(c.events, 4); /* as mprof report counts: not THREAD and DEF_THREAD */
    assert_int_equal(c.zones, 1);
    assert_int_equal(c.frames, 1);
    assert_int_equal(c.plots, 1);
    assert_int_equal(c.lost, 7);
    assert_int_equal(c.max_thread, 1);
    /* A cut record is an error, never a read past the end. */
    mprof_wire_counts c2 = {0};
    assert_int_equal(mprof_wire_scan_events(raw.data, raw.len - 1, &c2, err, sizeof err),
                     MPROF_WIRE_ERROR);
    /* Every flipped bit of the chunk is caught. */
    for (size_t i = 0; i < fr.len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            fr.data[i] ^= (unsigned char)(1 << bit);
            int rc = mprof_wire_next_chunk(fr.data, fr.len, &ch, &used, err, sizeof err);
            assert_true(rc == MPROF_WIRE_ERROR || rc == MPROF_WIRE_NEED_MORE);
            fr.data[i] ^= (unsigned char)(1 << bit);
        }
    }
    mprof_buf_free(&raw);
    mprof_buf_free(&fr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hello_round_trip),
        cmocka_unit_test(hello_rejects_garbage),
        cmocka_unit_test(reply_round_trip_and_limits),
        cmocka_unit_test(chunk_stream_checks_every_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
