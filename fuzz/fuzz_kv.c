/*
 * fuzz_kv.c - libFuzzer target for the check `mprof capture` makes on a handshake's info block
 * (mprof_wire_kv_well_formed, format/wire.c): any bytes from a peer are judged whole or not,
 * never read out of bounds, and the judgement is consistent with itself: a list followed by a
 * list is a list, and a list that starts with a list continues with one. Seeds in
 * fuzz/corpus/kv are real INFO payloads and cut or bent copies; replayed by ctest
 * (fuzz_kv_replay).
 */
#include "format/wire.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes, so ASan sees a read past the block. */
    unsigned char *p = malloc(size ? size : 1);
    if (!p)
        return 0;
    memcpy(p, data, size);
    int whole = mprof_wire_kv_well_formed(p, size);
    /* Split at every point the list's own pairs end: both halves must be whole too. */
    if (whole) {
        const unsigned char *q = p, *end = p + size;
        while (q < end) {
            uint64_t l;
            for (int i = 0; i < 2; i++) {
                if (mprof_get_varint(&q, end, &l) || l > (uint64_t)(end - q))
                    abort(); /* called whole, but its pairs do not walk to the end */
                q += l;
            }
            size_t at = (size_t)(q - p);
            if (!mprof_wire_kv_well_formed(p, at) || !mprof_wire_kv_well_formed(p + at, size - at))
                abort();
        }
    }
    /* At an arbitrary split (the first byte picks it): whole + whole must be whole, and whole
     * prefix + whole total means a whole rest. */
    if (size) {
        size_t at = p[0] % (size + 1);
        int a = mprof_wire_kv_well_formed(p, at), b = mprof_wire_kv_well_formed(p + at, size - at);
        if (a && b && !whole)
            abort();
        if (a && whole && !b)
            abort();
    }
    /* What the tool does next with a whole block. */
    if (whole) {
        char v[64];
        mprof_wire_kv_get(p, size, "app", v, sizeof v);
        if (!memchr(v, 0, sizeof v))
            abort();
    }
    free(p);
    return 0;
}
