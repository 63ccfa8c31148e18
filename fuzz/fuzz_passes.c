/*
 * fuzz_passes.c - libFuzzer target for the memory, locks, fibers and system passes (and the core pass
 * they hook into): any capture the reader accepts must be analysed and printed, as text and as
 * JSON, without crashing, hanging or reading out of bounds. The input goes through a memfd,
 * since the analysis reads a path. Module paths inside the input are opened by the symbolizer,
 * which refuses anything but regular files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "analysis/analysis.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("mprof-fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64], err[256];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    mprof_analysis_opts o = {.top_n = 5, .passes = "memory,locks,fibers,samples"};
    mprof_analysis *a = mprof_analysis_run(path, &o, err, sizeof err);
    if (a) {
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            mprof_analysis_print_text(a, null);
            mprof_analysis_print_json(a, null);
            fclose(null);
        }
        mprof_analysis_free(a);
    }
    close(fd);
    return 0;
}
