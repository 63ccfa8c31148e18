/*
 * fuzz_reader.c - libFuzzer target for the capture reader: any bytes must be read or refused
 * with a message, never crash, hang or read out of bounds. Built with -fsanitize=fuzzer when
 * MPROF_BUILD_FUZZ is on; replay_main.c replays the corpus in the normal test run.
 */
#include "format/format.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    mprof_reader *r = mprof_reader_open_mem(data, size, err, sizeof err);
    if (!r)
        return 0;
    mprof_event ev;
    uint64_t n = 0;
    while (mprof_reader_next(r, &ev) == 1 && n++ < 10000000) {
        if (ev.type == MPROF_EV_ZONE_BEGIN)
            (void)mprof_reader_srcloc(r, (uint32_t)ev.u[0]);
        if (ev.type == MPROF_EV_ALLOC) {
            uint32_t depth;
            (void)mprof_reader_callstack(r, (uint32_t)ev.u[3], &depth);
        }
    }
    (void)mprof_reader_info(r, "app");
    mprof_reader_close(r);
    return 0;
}
