/*
 * test_util.h - helpers shared by the tests: temporary paths, reading a capture into counts,
 * running the mprof binary.
 */
#ifndef MPROF_TEST_UTIL_H
#define MPROF_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "format/format.h"

/* A fresh path under the test temp directory ($TMPDIR or /tmp), unique per call. */
const char *tu_temp_path(const char *stem);

typedef struct tu_counts {
    uint64_t by_type[256];
    uint64_t events;
    mprof_reader_stats st;
    char err[512];
    int rc; /* last mprof_reader_next result: 0 clean end, -1 error */
} tu_counts;

/* Reads the whole capture at path and counts its events by type. Returns 0 when the reader
 * ended without error. */
int tu_count_capture(const char *path, tu_counts *out);

/* Runs a shell command, captures stdout into out (NUL-terminated, truncated to n), returns the
 * exit status (or -1). */
int tu_run(const char *cmd, char *out, size_t n);

/* Scale for heavy tests: MPROF_TEST_SCALE (default 1.0), so sanitizer runs can do less. */
double tu_scale(void);

/* Path of the mprof binary under test (MPROF_BIN, set by ctest). */
const char *tu_mprof_bin(void);

#endif
