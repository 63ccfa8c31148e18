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

/* What a read of a capture hands out that the report's first read needs (docs/FORMAT.md "Process
 * chunks"): the process-context records by type (thread 0), the count of every other event, and
 * the main frames (the unnamed frame marks of the thread that made the first one). Definitions
 * are left out. */
typedef struct tu_first_read {
    uint64_t process[MPROF_EV_MAX];
    uint64_t thread_events;
    uint32_t main_thread;
    uint64_t marks;
    int64_t first, last;
} tu_first_read;

/* Reads the whole capture at path (process_only: its process chunks alone) into s; fails the
 * test on a reader error. Returns the reader, read to its end (the caller closes it). */
mprof_reader *tu_first_read_of(const char *path, int process_only, tu_first_read *s);

/* Runs a shell command, captures stdout into out (NUL-terminated, truncated to n), returns the
 * exit status (or -1). */
int tu_run(const char *cmd, char *out, size_t n);

/* Scale for heavy tests: MPROF_TEST_SCALE (default 1.0), so sanitizer runs can do less. */
double tu_scale(void);

/* Path of the mprof binary under test (MPROF_BIN, set by ctest). */
const char *tu_mprof_bin(void);

/* A synthetic capture whose every timestamp is known (one tick = 1 ns), for tests that check a
 * figure exactly: events are appended in file order with the helpers below, tu_cap_write writes
 * the file (header, info, one events chunk, a clean end) and frees the events. Zero-initialised:
 * empty, on thread 0 until tu_cap_thread. */
typedef struct tu_cap {
    mprof_buf ev;
    int64_t last[64]; /* the last timestamp of each thread (timestamps are per-thread deltas) */
    uint32_t thread;
} tu_cap;

void tu_cap_thread(tu_cap *c, uint32_t t); /* the following events are thread t's (t < 64) */
void tu_cap_loc(tu_cap *c, uint32_t id, const char *name, const char *fn, const char *file,
                uint32_t line);
void tu_cap_string(tu_cap *c, uint32_t id, const char *s); /* a name for frame sets, fibers */
void tu_cap_begin(tu_cap *c, int64_t ts, uint32_t loc);
void tu_cap_end(tu_cap *c, int64_t ts);
void tu_cap_zone(tu_cap *c, int64_t start, int64_t end, uint32_t loc); /* begin and end */
void tu_cap_mark(tu_cap *c, int64_t ts, uint32_t name); /* name 0: a main frame mark */
void tu_cap_frame_begin(tu_cap *c, int64_t ts, uint32_t name);
void tu_cap_frame_end(tu_cap *c, int64_t ts, uint32_t name);
/* A lock record: tag MPROF_EV_LOCK_WAIT, _OBTAINED or _RELEASED of lock id (shared 1: a shared
 * acquisition). */
void tu_cap_lock(tu_cap *c, unsigned tag, int64_t ts, uint32_t id, int shared);
/* Writes the capture to path; 0, or -1 when it cannot be written. */
int tu_cap_write(tu_cap *c, const char *path);

#endif
