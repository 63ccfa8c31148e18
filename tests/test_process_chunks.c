/*
 * test_process_chunks.c - process chunks (docs/FORMAT.md "Process chunks") end to end: a child
 * records a capture with the real library in small chunks, with zones whose locations first
 * appear late, threads that start late, frame marks and process-context records (switch and
 * sample records handed to the process queue, as system tracing does). The parent checks that
 * every definition and process record lies in chunks flagged MPROF_CHUNK_F_PROCESS, that a read
 * of those chunks alone sees the same definitions and process records as a read of everything
 * and END's main frames are the file's, and that the report, whose first read takes the process
 * chunks alone, is byte for byte the report of a first read of everything; a capture missing a
 * chunk or its END is read whole instead, with the same report.
 */
#include "mprof/mprof.h"

#include "analysis/analysis.h"
#include "buffers.h"
#include "format/format.h"
#include "test_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FRAMES 300
#define FAKE_TID 999999u /* no thread of the child: the records only have to be carried */

static void spin_us(long us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

/* A switch record and, every tenth call, a sample with a two-frame stack, in raw form (format.h:
 * TS and U64 as 8 bytes, U8 as one, U32 as four, CS as a depth byte and 8-byte frames). */
static void process_records(int i)
{
    unsigned char raw[64], *o = raw;
    uint64_t t = mprof__ticks(), tid = FAKE_TID;
    uint32_t cpu = 0;
    *o++ = MPROF_EV_SYS_SWITCH;
    memcpy(o, &t, 8), o += 8;
    memcpy(o, &tid, 8), o += 8;
    *o++ = (unsigned char)(i & 1);
    *o++ = 0;
    memcpy(o, &cpu, 4), o += 4;
    uint64_t n = 1;
    if (i % 10 == 0) {
        uint64_t pc[2] = {(uint64_t)(uintptr_t)&process_records + 1,
                          (uint64_t)(uintptr_t)&spin_us + 1 + (uint64_t)(i / 10)};
        *o++ = MPROF_EV_SYS_SAMPLE;
        memcpy(o, &t, 8), o += 8;
        memcpy(o, &tid, 8), o += 8;
        *o++ = 2;
        memcpy(o, pc, 16), o += 16;
        n++;
    }
    if (mprof__process_records(raw, (size_t)(o - raw), n) != 0)
        _exit(93);
}

static void *late_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 40; i++) {
        MPROF_ZONE_BEGIN("late_worker");
        spin_us(50);
        MPROF_ZONE_END();
    }
    return NULL;
}

/* Names the program makes at run time, each a definition: in a few frames more of them than a
 * chunk holds, so that the process chunk fills before the threads' chunk that uses them. */
static char names[600][48];

static void workload(void)
{
    pthread_t th;
    for (int f = 0; f < FRAMES; f++) {
        if (f >= 10 && f < 14)
            for (int k = 0; k < 150; k++) {
                char *n = names[(f - 10) * 150 + k];
                snprintf(n, sizeof names[0], "run-time plot name number %d of frame %d", k, f);
                MPROF_PLOT(n, k);
            }
        MPROF_ZONE_BEGIN("frame");
        for (int k = 0; k < 200; k++) {
            MPROF_ZONE_BEGIN("early");
            MPROF_ZONE_END();
        }
        if (f >= FRAMES / 2) { /* a location first seen halfway */
            MPROF_ZONE_BEGIN("second_half");
            spin_us(20);
            MPROF_ZONE_END();
        }
        spin_us(200);
        MPROF_ZONE_END();
        process_records(f);
        if (f == FRAMES / 3)
            pthread_create(&th, NULL, late_worker, NULL);
        if (f % 7 == 0)
            MPROF_FRAME_MARK_NAMED("physics");
        MPROF_FRAME_MARK();
    }
    pthread_join(th, NULL);
}

static void record(const char *path)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        mprof_config cfg = {0};
        cfg.capture_path = path;
        cfg.chunk_bytes = 4096; /* many chunks */
        cfg.flush_interval_ms = 5;
        if (mprof_startup(&cfg) != MPROF_OK)
            _exit(91);
        workload();
        mprof_shutdown();
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- the file's chunks ---------------------------------------------------------------------- */

typedef struct chunk {
    long at, len; /* header offset, header and payload bytes */
    int kind;
    unsigned flags;
    uint32_t raw; /* payload bytes after decompression */
} chunk;

static unsigned char *load(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *d = malloc((size_t)*len);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, (size_t)*len, f), (size_t)*len);
    fclose(f);
    return d;
}

static int chunks_of(const unsigned char *d, long len, chunk *out, int max)
{
    int n = 0;
    for (long at = MPROF_FMT_HEADER_BYTES; at + MPROF_FMT_CHUNK_HEADER_BYTES <= len && n < max;) {
        int kind, codec;
        uint32_t stored, raw;
        assert_null(mprof_fmt_check_chunk_header(d + at, &kind, &codec, &stored, &raw));
        out[n] = (chunk){at, MPROF_FMT_CHUNK_HEADER_BYTES + (long)stored, kind,
                         mprof_rd_u16(d + at + 6), raw};
        at += out[n++].len;
    }
    return n;
}

/* The capture without chunk k (or, k < 0, without its END), at a new path. */
static const char *without(const char *path, int k, const char *stem)
{
    long len;
    unsigned char *d = load(path, &len);
    static chunk c[4096];
    int n = chunks_of(d, len, c, 4096);
    if (k < 0)
        k = n - 1;
    assert_true(k < n);
    const char *out = tu_temp_path(stem);
    FILE *f = fopen(out, "wb");
    assert_non_null(f);
    fwrite(d, 1, (size_t)c[k].at, f);
    fwrite(d + c[k].at + c[k].len, 1, (size_t)(len - c[k].at - c[k].len), f);
    fclose(f);
    free(d);
    return out;
}

/* ---- what a read sees ----------------------------------------------------------------------- */

typedef struct seen {
    tu_first_read f;        /* process records by tag, thread events, main frames */
    uint32_t locs, threads;
} seen;

static mprof_reader *read_all(const char *path, int process_only, seen *s)
{
    mprof_reader *r = tu_first_read_of(path, process_only, &s->f);
    s->locs = mprof_reader_srcloc_count(r);
    s->threads = mprof_reader_thread_count(r);
    return r;
}

static char *report(const char *path, int full_first_read)
{
    if (full_first_read)
        setenv("MPROF_FULL_FIRST_READ", "1", 1);
    else
        unsetenv("MPROF_FULL_FIRST_READ");
    char err[512];
    mprof_analysis_opts o = {.top_n = 50, .passes = "all"};
    mprof_analysis *a = mprof_analysis_run(path, &o, err, sizeof err);
    unsetenv("MPROF_FULL_FIRST_READ");
    if (!a)
        fail_msg("analysis failed: %s", err);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    mprof_analysis_print_json(a, f);
    mprof_analysis_print_text(a, f);
    fclose(f);
    mprof_analysis_free(a);
    return text;
}

/* Byte for byte the report of a first read of everything: as the analysis chooses (two reads
 * when the capture has context switches, which depends on the machine), and with two reads
 * forced (MPROF_TWO_READS), which always takes the first read. */
static void same_report(const char *path)
{
    for (int two = 0; two < 2; two++) {
        if (two)
            setenv("MPROF_TWO_READS", "1", 1);
        char *a = report(path, 0), *b = report(path, 1);
        unsetenv("MPROF_TWO_READS");
        assert_true(strlen(a) > 1000);
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
}

/* ---- the tests ------------------------------------------------------------------------------ */

static const char *capture_path;

static int setup(void **state)
{
    (void)state;
    capture_path = tu_temp_path("process_chunks.mprof");
    record(capture_path);
    return 0;
}

static void test_chunks_flagged(void **state)
{
    (void)state;
    long len;
    unsigned char *d = load(capture_path, &len);
    static chunk c[4096];
    int n = chunks_of(d, len, c, 4096), proc = 0, other = 0;
    /* Either stream closes its chunk once past chunk_bytes (4096, and a record or the module
     * map), the process one too while only definitions fill it. */
    for (int i = 0; i < n; i++)
        if (c[i].kind == MPROF_CHUNK_EVENTS && c[i].raw > 2 * 4096)
            fail_msg("chunk %d holds %u bytes (flags %u)", i, c[i].raw, c[i].flags);
    for (int i = 0; i < n; i++)
        if (c[i].kind == MPROF_CHUNK_EVENTS && (c[i].flags & MPROF_CHUNK_F_PROCESS))
            proc++;
        else if (c[i].kind == MPROF_CHUNK_EVENTS)
            other++;
    free(d);
    print_message("%d chunks: %d process chunks, %d of the threads\n", n, proc, other);
    assert_true(proc >= 2 && other >= 10);

    seen all, part;
    mprof_reader *ra = read_all(capture_path, 0, &all);
    mprof_reader *rp = read_all(capture_path, 1, &part);
    /* Every process record and definition is in the process chunks, and nothing else is. */
    /* (System tracing adds its own where the machine allows it.) */
    assert_true(all.f.process[MPROF_EV_SYS_SWITCH] >= FRAMES);
    assert_true(all.f.process[MPROF_EV_SYS_SAMPLE] >= FRAMES / 10);
    assert_memory_equal(all.f.process, part.f.process, sizeof all.f.process);
    assert_int_equal(part.f.thread_events, 0);
    assert_true(all.f.thread_events > FRAMES * 400);
    assert_int_equal(part.locs, all.locs);
    assert_int_equal(part.threads, all.threads);
    assert_true(all.threads >= 2);
    /* END's main frames are the file's. */
    mprof_main_frames mf;
    assert_int_equal(mprof_reader_main_frames(ra, &mf), 0); /* not a process-only read */
    assert_int_equal(mprof_reader_main_frames(rp, &mf), 1);
    assert_int_equal(all.f.marks, FRAMES);
    assert_int_equal(mf.thread, all.f.main_thread);
    assert_int_equal(mf.marks, all.f.marks);
    assert_int_equal(mf.first_ns, all.f.first);
    assert_int_equal(mf.last_ns, all.f.last);
    mprof_reader_close(ra);
    mprof_reader_close(rp);
}

static void test_report_same(void **state)
{
    (void)state;
    same_report(capture_path);
}

/* A chunk of the threads cut out, or END: the process chunks alone cannot stand for the file
 * (END's main frames may not be its own), and the first read reads everything. */
static void test_incomplete_read_whole(void **state)
{
    (void)state;
    long len;
    unsigned char *d = load(capture_path, &len);
    static chunk c[4096];
    int n = chunks_of(d, len, c, 4096), k = -1;
    free(d);
    for (int i = n / 2; i < n && k < 0; i++)
        if (c[i].kind == MPROF_CHUNK_EVENTS && !(c[i].flags & MPROF_CHUNK_F_PROCESS))
            k = i;
    assert_true(k > 0);
    const char *paths[2] = {without(capture_path, k, "process_chunks_cut.mprof"),
                            without(capture_path, -1, "process_chunks_noend.mprof")};
    for (int i = 0; i < 2; i++) {
        seen part;
        mprof_main_frames mf;
        mprof_reader *r = read_all(paths[i], 1, &part);
        assert_int_equal(mprof_reader_main_frames(r, &mf), 0);
        mprof_reader_close(r);
        same_report(paths[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks_flagged),
        cmocka_unit_test(test_report_same),
        cmocka_unit_test(test_incomplete_read_whole),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
