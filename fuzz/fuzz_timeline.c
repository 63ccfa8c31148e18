/*
 * fuzz_timeline.c - libFuzzer target for the timeline walker (src/analysis/timeline.c), which
 * turns any event stream the reader accepts into zones, GPU zones, lock spans and memory use:
 * mismatched ends, unknown ids, GPU queries that never resolve, huge lock or query ids and frees
 * of unknown pointers must be counted or ignored, never crash. replay_main.c replays the corpus
 * in the normal test run.
 */
#include "analysis/timeline.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t sink;

static void on_zone(void *user, const mprof_tl_zone *z)
{
    (void)user;
    sink += (uint64_t)(z->end_ns - z->start_ns) + z->depth + (z->text ? z->text_len : 0);
}

static void on_lock(void *user, const mprof_tl_lockspan *s)
{
    (void)user;
    sink += (uint64_t)(s->end_ns - s->start_ns) + s->row;
}

static void on_memory(void *user, uint32_t pool, int64_t ts, int64_t bytes)
{
    (void)user;
    sink += pool + (uint64_t)ts + (uint64_t)bytes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256], buf[128];
    mprof_reader *r = mprof_reader_open_mem(data, size, err, sizeof err);
    if (!r)
        return 0;
    mprof_tl_hooks h = {.zone = on_zone, .lock_span = on_lock, .memory = on_memory};
    mprof_walker *w = mprof__walker_new(r, &h, 1);
    if (w) {
        mprof_event ev;
        uint64_t n = 0;
        while (mprof_reader_next(r, &ev) == 1 && n++ < 10000000)
            if (mprof__walker_event(w, &ev) != 0)
                break;
        mprof__walker_finish(w);
        for (uint32_t i = 0; i < mprof__walker_track_count(w); i++)
            sink += mprof__walker_track_name(w, i, buf, sizeof buf)[0];
        for (uint32_t l = 0; l < mprof__walker_lock_count(w); l++)
            for (uint32_t row = 0; row < mprof__walker_lock(w, l)->n_rows; row++)
                sink += mprof__walker_lock_row_name(w, l, row, buf, sizeof buf)[0];
        mprof__walker_free(w);
    }
    mprof_reader_close(r);
    return 0;
}
