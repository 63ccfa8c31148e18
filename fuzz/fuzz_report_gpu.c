/*
 * fuzz_report_gpu.c - libFuzzer target for the GPU pass of `mprof report`: any capture bytes are
 * analysed (GPU pass on, text and JSON printed) or refused with a message, never crash, hang or
 * read out of bounds. The analysis reads files, so each input goes through a temporary file.
 *
 * An input that starts with the capture magic is used as a whole file. Any other input is the
 * payload of one EVENTS chunk, framed (with a valid checksum) between an INFO and an END chunk:
 * checksums and compression would otherwise stop nearly every mutation before the GPU pass.
 * Seeds: real captures from the Vulkan and OpenGL tests and their decompressed EVENTS payloads
 * (fuzz/corpus/report_gpu). replay_main.c replays the corpus in the normal test run.
 */
#define _POSIX_C_SOURCE 200809L
#include "analysis/analysis.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz_report_gpu-%ld.mprof", dir && *dir ? dir : "/tmp",
             (long)getpid());
    mprof_buf file = {0};
    if (size >= MPROF_FMT_MAGIC_LEN && memcmp(data, MPROF_FMT_MAGIC, MPROF_FMT_MAGIC_LEN) == 0) {
        if (mprof_buf_reserve(&file, size) != 0)
            return 0;
        memcpy(file.data, data, size);
        file.len = size;
    } else {
        mprof_buf info = {0}, end = {0};
        int bad = mprof_buf_reserve(&file, MPROF_FMT_HEADER_BYTES) != 0 ||
                  mprof_fmt_kv(&info, "ns_per_tick", "1") != 0 ||
                  mprof_fmt_kv(&info, "tick0", "0") != 0 ||
                  mprof_fmt_kv(&end, "gpu_queries_lost", "3") != 0;
        if (!bad) {
            mprof_fmt_file_header(file.data);
            file.len = MPROF_FMT_HEADER_BYTES;
            bad = mprof_fmt_chunk(&file, MPROF_CHUNK_INFO, info.data, info.len, 0, NULL) != 0 ||
                  mprof_fmt_chunk(&file, MPROF_CHUNK_EVENTS, data, size, 0, NULL) != 0 ||
                  mprof_fmt_chunk(&file, MPROF_CHUNK_END, end.data, end.len, 0, NULL) != 0;
        }
        mprof_buf_free(&info);
        mprof_buf_free(&end);
        if (bad) {
            mprof_buf_free(&file);
            return 0;
        }
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        mprof_buf_free(&file);
        return 0;
    }
    size_t wrote = fwrite(file.data, 1, file.len, f);
    fclose(f);
    mprof_buf_free(&file);
    if (wrote == 0)
        return 0;
    mprof_analysis_opts opts = {.top_n = 20, .passes = "gpu"};
    char err[512];
    mprof_analysis *a = mprof_analysis_run(path, &opts, err, sizeof err);
    if (a) {
        FILE *out = fopen("/dev/null", "w");
        if (out) {
            mprof_analysis_print_text(a, out);
            mprof_analysis_print_json(a, out);
            fclose(out);
        }
        mprof_analysis_free(a);
    }
    remove(path);
    return 0;
}
