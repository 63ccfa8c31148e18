/*
 * fuzz_gate_json.c - libFuzzer target over the frame-export reader that the gate loads with
 * (mprof.frames.v1 JSON, src/export/frames_read.c), and, when an input parses, over the
 * comparison and its writers (src/gate/), with the input on both sides. Build: cmake
 * -DMPROF_BUILD_FUZZ=ON -DCMAKE_C_COMPILER=clang; the corpus in fuzz/corpus/gate_json is
 * replayed by ctest (fuzz_gate_json_replay).
 */
#include "gate/gate.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    mprof_frames_run run;
    int skip = size > 0 ? data[0] % 4 : 0;
    if (mprof__frames_parse((const char *)data, size, "fuzz.json", skip, 0, &run, err, sizeof err))
        return 0;
    /* Compare the run with itself: statistics on whatever the input holds (bounded work). */
    if (run.n_frames <= 4096 && run.n_zones <= 64) {
        mprof_frames_runs side = {(char *)"fuzz", &run, 1};
        mprof_gate_opts o = {.n_resamples = 20, .min_frames = 1, .blocks = 1 + (int)(size % 3)};
        mprof_gate_result *r = mprof__gate_compare(&side, &side, &o, err, sizeof err);
        if (r) {
            FILE *null = fopen("/dev/null", "w");
            if (null) {
                mprof__gate_print_text(r, null);
                mprof__gate_write_json(r, null);
                mprof__gate_write_markdown(r, null);
                fclose(null);
            }
            mprof__gate_result_free(r);
        }
    }
    mprof__frames_run_clear(&run);
    return 0;
}
