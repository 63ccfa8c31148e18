/*
 * fuzz_frames_export.c - libFuzzer target over the frame export (src/export/frames.c)
 * reading arbitrary captures: the input is written to a file in a private temporary directory and
 * exported to another file there. The corpus in fuzz/corpus/frames_export holds small real
 * captures and is replayed by ctest (fuzz_frames_export_replay).
 */
#define _POSIX_C_SOURCE 200809L

#include "export/frames.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void remove_dir(void)
{
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/mprof_fuzz_fexp_XXXXXX");
        if (!mkdtemp(dir))
            abort();
        atexit(remove_dir);
    }
    char in[128], out[128];
    snprintf(in, sizeof in, "%s/in.mprof", dir);
    snprintf(out, sizeof out, "%s/out.json", dir);
    FILE *f = fopen(in, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    char err[512];
    if (mprof__export_frames(in, out, err, sizeof err) == 0)
        remove(out);
    remove(in);
    return 0;
}
