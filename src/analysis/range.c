/*
 * range.c - parsing and resolving a --frames / --time range of a capture (range.h).
 */
#include "analysis/range.h"
#include "format/batch.h"
#include "format/format.h"
#include "util/grow.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Splits "A:B" at the colon; empty sides stay NULL. */
static int split(const char *arg, char *a, char *b, size_t n)
{
    const char *colon = arg ? strchr(arg, ':') : NULL;
    if (!colon || strchr(colon + 1, ':'))
        return -1;
    size_t la = (size_t)(colon - arg), lb = strlen(colon + 1);
    if (la >= n || lb >= n || (la == 0 && lb == 0))
        return -1;
    memcpy(a, arg, la);
    a[la] = 0;
    memcpy(b, colon + 1, lb + 1);
    return 0;
}

int mprof__export_range_parse_frames(const char *arg, mprof_export_range *r, char *err,
                                     size_t errlen)
{
    char a[32], b[32];
    if (split(arg, a, b, sizeof a) != 0) {
        snprintf(err, errlen, "--frames wants A:B (frames A to B - 1, from 0), not '%s'",
                 arg ? arg : "");
        return -1;
    }
    long long va = 0, vb = INT64_MAX;
    char *end;
    errno = 0;
    if (a[0]) {
        va = strtoll(a, &end, 10);
        if (errno || *end || va < 0)
            goto bad;
    }
    if (b[0]) {
        vb = strtoll(b, &end, 10);
        if (errno || *end || vb <= va)
            goto bad;
    }
    r->first_frame = va;
    r->end_frame = vb;
    r->active = 1;
    return 0;
bad:
    snprintf(err, errlen, "--frames %s: A and B are frame numbers with 0 <= A < B", arg);
    return -1;
}

static int seconds(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < -9e9 || v > 9e9)
        return -1;
    *out = (int64_t)llround(v * 1e9);
    return 0;
}

int mprof__export_range_parse_time(const char *arg, mprof_export_range *r, char *err,
                                   size_t errlen)
{
    char a[64], b[64];
    int64_t t0 = INT64_MIN, t1 = INT64_MAX;
    if (split(arg, a, b, sizeof a) != 0 || (a[0] && seconds(a, &t0) != 0) ||
        (b[0] && seconds(b, &t1) != 0) || t1 <= t0) {
        snprintf(err, errlen, "--time wants S0:S1 (seconds on the capture's clock, S0 < S1), not '%s'",
                 arg ? arg : "");
        return -1;
    }
    r->first_frame = -1;
    r->t0_ns = t0;
    r->t1_ns = t1;
    r->active = 1;
    return 0;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

int mprof__export_range_resolve(const char *path, mprof_export_range *r, char *err, size_t errlen)
{
    return mprof__export_range_resolve_process(path, r, NULL, err, errlen);
}

/* The index of the process named name, or UINT32_MAX: none, or no name given (every thread
 * counts then; a name the capture lacks is for the export to refuse, naming the processes). */
static uint32_t process_named(const mprof_reader *rd, const char *name)
{
    for (uint32_t k = 0; name && k < mprof_reader_process_count(rd); k++) {
        const mprof_process_def *p = mprof_reader_process(rd, k);
        if (p && strcmp(p->name, name) == 0)
            return k;
    }
    return UINT32_MAX;
}

int mprof__export_range_resolve_process(const char *path, mprof_export_range *r,
                                        const char *process, char *err, size_t errlen)
{
    if (!r->active || r->first_frame < 0)
        return 0;
    mprof_reader *rd = mprof_reader_open(path, err, errlen);
    if (!rd)
        return -1;
    int64_t *marks = NULL;
    size_t n = 0, cap = 0;
    uint32_t thread = 0;
    unsigned char want[MPROF_EV_MAX] = {0};
    want[MPROF_EV_FRAME_MARK] = 1; /* only the marks are handed out */
    mprof_reader_want(rd, want);
    mprof_batch b;
    int rc, first = 1;
    uint32_t only = UINT32_MAX; /* the process whose marks count; UINT32_MAX: every thread's */
    while ((rc = mprof_reader_next_batch(rd, &b)) == 1) {
        if (first) { /* the processes are known after the first batch */
            only = process_named(rd, process);
            first = 0;
        }
        for (uint32_t i = 0; i < b.n_ev; i++) {
            if (only != UINT32_MAX && b.ev[i].type == MPROF_EV_FRAME_MARK) {
                const mprof_thread_def *d = mprof_reader_thread(rd, b.ev[i].thread);
                if (!d || d->process != only)
                    continue;
            }
            if (!mprof__is_main_mark(&b.ev[i], &thread))
                continue;
            if (MPROF_GROW(marks, cap, n + 1, 1024) != 0) {
                snprintf(err, errlen, "%s: out of memory", path);
                free(marks);
                mprof_reader_close(rd);
                return -1;
            }
            marks[n++] = b.ev[i].ts_ns;
        }
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, mprof_reader_error(rd));
        free(marks);
        mprof_reader_close(rd);
        return -1;
    }
    mprof_reader_close(rd);
    size_t frames = n > 1 ? n - 1 : 0;
    if ((uint64_t)r->first_frame >= frames) {
        snprintf(err, errlen, "--frames %lld:...: the capture has %zu frames (0 to %zu)",
                 (long long)r->first_frame, frames, frames ? frames - 1 : 0);
        free(marks);
        return -1;
    }
    qsort(marks, n, sizeof *marks, cmp_i64);
    size_t end = (uint64_t)r->end_frame < frames ? (size_t)r->end_frame : frames;
    r->t0_ns = marks[r->first_frame];
    r->t1_ns = marks[end];
    free(marks);
    return 0;
}
