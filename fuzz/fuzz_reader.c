/*
 * fuzz_reader.c - libFuzzer target for the capture reader: any bytes must be read or refused
 * with a message, never crash, hang or read out of bounds. Built with -fsanitize=fuzzer when
 * MPROF_BUILD_FUZZ is on; replay_main.c replays the corpus in the normal test run.
 *
 * The same bytes are then read through batches, by two workers, handing out only a few tags:
 * every way of reading must count the same events and stop with the same message (a
 * difference aborts, which the fuzzer reports as a crash). Last, a read of the process chunks
 * alone, and what END then says of the main frames, which may be anything but a crash.
 */
#include "format/batch.h"
#include "format/format.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads data through batches with jobs workers; *events gets the reader's count. filter 2:
 * the process chunks alone (mprof_reader_process_only). */
static int batch_read(const uint8_t *data, size_t size, int jobs, int filter, uint64_t *events,
                      char *err, size_t errlen)
{
    char e[256];
    mprof_reader *r = mprof_reader_open_mem(data, size, e, sizeof e);
    if (!r)
        return -2;
    mprof_reader_set_jobs(r, jobs);
    if (filter == 2)
        mprof_reader_process_only(r);
    else if (filter) {
        unsigned char want[MPROF_EV_MAX] = {0};
        want[MPROF_EV_FRAME_MARK] = want[MPROF_EV_SYS_SWITCH] = want[MPROF_EV_MESSAGE] = 1;
        mprof_reader_want(r, want);
    }
    mprof_batch b;
    int rc;
    uint64_t n = 0;
    while ((rc = mprof_reader_next_batch(r, &b)) == 1 && n++ < 10000000)
        for (uint32_t i = 0; i < b.n_rec; i++)
            if (b.rec[i].x >= b.n_ev && mprof_rec_type(&b.rec[i]) != MPROF_REC_LEAF &&
                mprof_rec_type(&b.rec[i]) != MPROF_EV_ZONE_BEGIN &&
                mprof_rec_type(&b.rec[i]) != MPROF_EV_ZONE_END)
                abort(); /* a record pointing past its batch's events */
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    *events = st.events;
    snprintf(err, errlen, "%s", mprof_reader_error(r));
    mprof_main_frames mf;
    if (mprof_reader_main_frames(r, &mf) && filter != 2)
        abort(); /* only a process-only read can stand for the whole capture */
    mprof_reader_close(r);
    return rc;
}

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
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    int rc = mprof_reader_next(r, &ev);
    char err1[256];
    snprintf(err1, sizeof err1, "%s", mprof_reader_error(r));
    mprof_reader_close(r);
    if (n >= 10000000)
        return 0;
    const struct {
        int jobs, filter;
    } ways[] = {{1, 0}, {2, 0}, {2, 1}};
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        uint64_t events;
        char err2[256];
        int rc2 = batch_read(data, size, ways[w].jobs, ways[w].filter, &events, err2, sizeof err2);
        if (rc2 != rc || events != st.events || strcmp(err1, err2) != 0)
            abort();
    }
    for (int jobs = 1; jobs <= 2; jobs++) {
        uint64_t events;
        char err2[256];
        (void)batch_read(data, size, jobs, 2, &events, err2, sizeof err2);
    }
    return 0;
}
