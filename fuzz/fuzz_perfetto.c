/*
 * fuzz_perfetto.c - libFuzzer target for the Perfetto export (src/export/perfetto*.c): any
 * capture the reader accepts becomes a trace without a crash, a leak or an unbalanced message
 * (zones that never end, ends without a begin, GPU zones out of any order, switches on CPUs past
 * any real count, callstacks of unknown ids). The trace goes to an in-memory stream. replay_main.c
 * replays the corpus in the normal test run.
 */
#include "export/perfetto.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    mprof_reader *r = mprof_reader_open_mem(data, size, err, sizeof err);
    if (!r)
        return 0;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (out) {
        /* Half the inputs through a window, so the held-back zones are fuzzed too. */
        mprof_export_range range = {.first_frame = -1, .t0_ns = 1000, .t1_ns = 5000000,
                                    .active = size & 1};
        mprof_perfetto_stats st;
        mprof__export_perfetto_reader(r, "fuzz", &range, out, &st, err, sizeof err);
        fclose(out);
    }
    free(buf);
    mprof_reader_close(r);
    return 0;
}
