/*
 * fuzz_wire.c - libFuzzer target for the live-capture protocol (format/wire.c): any bytes from a
 * peer must be decoded or refused with a message, never crash, hang or read out of bounds.
 *
 * The input is used both ways: as a tool's HELLO (what the process decodes) and as what the
 * process sends a tool (REPLY, then the chunk stream fed in pieces of varying size, as recv()
 * would deliver it). Seeds in fuzz/corpus/wire are real sessions; replayed by ctest.
 */
#include "format/wire.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    mprof_wire_hello h;
    (void)mprof_wire_decode_hello(data, size, &h, err, sizeof err);

    mprof_wire_reply rep;
    size_t used = 0;
    if (mprof_wire_decode_reply(data, size, &rep, &used, err, sizeof err) != MPROF_WIRE_DONE)
        return 0;
    char v[64];
    mprof_wire_kv_get(rep.payload, rep.payload_len, "app", v, sizeof v);
    const uint8_t *p = data + used;
    size_t n = size - used;
    /* Feed the stream in growing windows, keeping what was not consumed, like the tool. */
    mprof_wire_stream s = {0};
    size_t start = 0, avail = 0, step = 1;
    while (start < n) {
        avail = avail + step > n - start ? n - start : avail + step;
        step = step * 3 + 1;
        size_t consumed = 0;
        int rc = mprof_wire_feed(&s, p + start, avail, &consumed, NULL, NULL);
        start += consumed;
        avail -= consumed;
        if (rc != MPROF_WIRE_NEED_MORE || (start + avail >= n && consumed == 0))
            break;
    }
    mprof_wire_stream_free(&s);
    return 0;
}
