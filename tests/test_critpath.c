/*
 * test_critpath.c - the critical path of a frame (src/analysis/sysmodel.c) through the frame
 * export, on synthetic captures whose every switch and wake-up is known, so each frame's
 * preempted time, blocked time and the runnable part of its waits can be checked to the
 * nanosecond: with the wakers the sched tracepoints record, with wakers inferred (the
 * PERF_RECORD_SWITCH path), and without switch reasons (an old kernel), where the export must
 * not pretend to know.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "export/frames.h"
#include "export/frames_run.h"
#include "format/format.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS 1000000LL /* ns */
#define US 1000LL

static char tmpdir[64];

/* ---- a capture writer with exact timestamps (ticks = ns) ------------------------------------ */

typedef struct cap {
    mprof_buf ev;
    int64_t last[8];
    uint32_t thread;
} cap;

static void put(cap *c, const void *p, size_t n)
{
    assert_int_equal(mprof_buf_reserve(&c->ev, n), 0);
    memcpy(c->ev.data + c->ev.len, p, n);
    c->ev.len += n;
}
static void put_u8(cap *c, unsigned v)
{
    unsigned char b = (unsigned char)v;
    put(c, &b, 1);
}
static void put_var(cap *c, uint64_t v)
{
    unsigned char b[10], *e = mprof_put_varint(b, v);
    put(c, b, (size_t)(e - b));
}
static void put_ts(cap *c, int64_t ts)
{
    put_var(c, mprof_zigzag(ts - c->last[c->thread]));
    c->last[c->thread] = ts;
}
static void thread(cap *c, uint32_t t)
{
    put_u8(c, MPROF_EV_THREAD);
    put_var(c, t);
    c->thread = t;
}
static void def_thread(cap *c, uint32_t idx, uint64_t os_tid)
{
    put_u8(c, MPROF_EV_DEF_THREAD);
    put_var(c, idx);
    put_var(c, os_tid);
}
static void mark(cap *c, int64_t ts)
{
    thread(c, 1);
    put_u8(c, MPROF_EV_FRAME_MARK);
    put_ts(c, ts);
    put_var(c, 0);
}
/* Process records (thread 0). */
static void sys_thread(cap *c, int64_t ts, uint64_t tid, int kind, int state)
{
    thread(c, 0);
    put_u8(c, MPROF_EV_SYS_THREAD);
    put_ts(c, ts);
    put_var(c, tid);
    put_u8(c, (unsigned)kind);
    put_u8(c, (unsigned)state);
}
static void sw(cap *c, int64_t ts, uint64_t tid, int dir, int reason)
{
    thread(c, 0);
    put_u8(c, MPROF_EV_SYS_SWITCH);
    put_ts(c, ts);
    put_var(c, tid);
    put_u8(c, (unsigned)dir);
    put_u8(c, (unsigned)reason);
    put_var(c, 0);
}
/* Thread tid off the CPU over [s, e) for reason. */
static void off(cap *c, uint64_t tid, int64_t s, int64_t e, int reason)
{
    sw(c, s, tid, MPROF_SYS_OUT, reason);
    sw(c, e, tid, MPROF_SYS_IN, MPROF_SYS_REASON_UNKNOWN);
}
static void wake(cap *c, int64_t ts, uint64_t woken, uint64_t waker, uint64_t pid, int ctx)
{
    thread(c, 0);
    put_u8(c, MPROF_EV_SYS_WAKE);
    put_ts(c, ts);
    put_var(c, woken);
    put_var(c, waker);
    put_var(c, pid);
    put_u8(c, (unsigned)ctx);
    put_var(c, 0);
}

enum { INFO_SCHED = 1, INFO_OLD_KERNEL = 2 };

static void write_capture(const char *path, cap *c, int info)
{
    mprof_buf out = {0}, in = {0}, fin = {0};
    assert_int_equal(mprof_buf_reserve(&out, MPROF_FMT_HEADER_BYTES), 0);
    mprof_fmt_file_header(out.data);
    out.len = MPROF_FMT_HEADER_BYTES;
    mprof_fmt_kv(&in, "app", "engine");
    mprof_fmt_kv(&in, "pid", "4242");
    mprof_fmt_kv(&in, "ns_per_tick", "1");
    mprof_fmt_kv(&in, "tick0", "0");
    mprof_fmt_kv(&in, "os", info & INFO_OLD_KERNEL ? "Linux 4.9.0 x86_64" : "Linux 6.1.0 x86_64");
    mprof_fmt_kv(&in, "system.context_switches", "on");
    mprof_fmt_kv(&in, "system.cpu_usage", "off");
    mprof_fmt_kv(&in, "system.sampling", "off");
    mprof_fmt_kv(&in, "system.sched_switch",
                 info & INFO_SCHED ? "on (/sys/kernel/tracing: sched_switch, sched_waking)"
                                   : "not used: tracefs is not mounted");
    assert_int_equal(mprof_fmt_chunk(&out, MPROF_CHUNK_INFO, in.data, in.len, 0, NULL), 0);
    assert_int_equal(mprof_fmt_chunk(&out, MPROF_CHUNK_EVENTS, c->ev.data, c->ev.len, 3, NULL), 0);
    mprof_fmt_kv(&fin, "events_lost", "0");
    assert_int_equal(mprof_fmt_chunk(&out, MPROF_CHUNK_END, fin.data, fin.len, 0, NULL), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(out.data, 1, out.len, f), out.len);
    fclose(f);
    mprof_buf_free(&out);
    mprof_buf_free(&in);
    mprof_buf_free(&fin);
    mprof_buf_free(&c->ev);
}

static char *tp(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static cJSON *export_json(const char *name)
{
    char err[512] = "", out[300];
    snprintf(out, sizeof out, "%s.json", tp(name));
    if (mprof__export_frames(tp(name), out, err, sizeof err) != 0)
        fail_msg("export failed: %s", err);
    FILE *f = fopen(out, "rb");
    assert_non_null(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    /* The gate's reader takes what the exporter writes. */
    mprof_frames_run run;
    if (mprof__frames_parse(text, n, out, 0, 0, &run, err, sizeof err) != 0)
        fail_msg("the export does not read back: %s", err);
    mprof__frames_run_clear(&run);
    return j;
}

static void expect_ms(const cJSON *j, const char *key, const double *want, int n)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsArray(a))
        fail_msg("%s missing", key);
    assert_int_equal(cJSON_GetArraySize(a), n);
    for (int i = 0; i < n; i++) {
        double got = cJSON_GetArrayItem(a, i)->valuedouble;
        if (got < want[i] - 1e-6 || got > want[i] + 1e-6)
            fail_msg("%s[%d] = %.6f, expected %.6f", key, i, got, want[i]);
    }
}

/*
 * The program: Main (capture thread 1, OS thread 101) marks frames at 0, 10, 20, 30 and 40 ms;
 * workers 102 and 103 (capture threads 2 and 3). In milliseconds:
 *   frame 0: Main preempted [2, 3).
 *   frame 1: Main waits [12, 18) for 102, which wakes it at 17.5. Meanwhile 102 is preempted
 *            [13, 15) and itself waits [15.5, 16) for 103 (woken at 15.8), which was preempted
 *            [14, 15.7) and stops at 15.9; 102 stops at 17.6.
 *   frame 2: Main sleeps [22, 25), ended by a timer interrupt at 24; then waits [26, 27) for a
 *            thread of another process (woken at 26.2).
 *   frame 3: Main yields [31, 32); then waits [33, 35) with no wake-up recorded, while 102 runs
 *            until 34.5 (preempted [33.2, 33.5)) and 103 does not run.
 * with_wakes: the SYS_WAKE records are written (the sched tracepoints).
 */
static void program(const char *path, int with_wakes, int info, int reasons)
{
    cap c;
    memset(&c, 0, sizeof c);
    int pre = reasons ? MPROF_SYS_REASON_PREEMPTED : MPROF_SYS_REASON_BLOCKED;
    def_thread(&c, 1, 101);
    def_thread(&c, 2, 102);
    def_thread(&c, 3, 103);
    for (uint64_t t = 101; t <= 103; t++)
        sys_thread(&c, 0, t, MPROF_SYS_TRACK_START, 'R');
    for (int i = 0; i <= 4; i++)
        mark(&c, i * 10 * MS);
    /* Main */
    off(&c, 101, 2 * MS, 3 * MS, pre);
    off(&c, 101, 12 * MS, 18 * MS, MPROF_SYS_REASON_BLOCKED);
    off(&c, 101, 22 * MS, 25 * MS, MPROF_SYS_REASON_BLOCKED);
    off(&c, 101, 26 * MS, 27 * MS, MPROF_SYS_REASON_BLOCKED);
    off(&c, 101, 31 * MS, 32 * MS, reasons ? MPROF_SYS_REASON_YIELDED : MPROF_SYS_REASON_BLOCKED);
    off(&c, 101, 33 * MS, 35 * MS, MPROF_SYS_REASON_BLOCKED);
    /* 102 */
    off(&c, 102, 0, 11 * MS, MPROF_SYS_REASON_BLOCKED);
    off(&c, 102, 13 * MS, 15 * MS, pre);
    off(&c, 102, 15500 * US, 16 * MS, MPROF_SYS_REASON_BLOCKED);
    off(&c, 102, 17600 * US, 33 * MS, MPROF_SYS_REASON_BLOCKED);
    off(&c, 102, 33200 * US, 33500 * US, pre);
    off(&c, 102, 34500 * US, 45 * MS, MPROF_SYS_REASON_BLOCKED);
    /* 103 */
    off(&c, 103, 0, 13 * MS, MPROF_SYS_REASON_BLOCKED);
    off(&c, 103, 14 * MS, 15700 * US, pre);
    off(&c, 103, 15900 * US, 45 * MS, MPROF_SYS_REASON_BLOCKED);
    if (with_wakes) {
        wake(&c, 17500 * US, 101, 102, 4242, MPROF_SYS_WAKE_TASK);
        wake(&c, 15800 * US, 102, 103, 4242, MPROF_SYS_WAKE_TASK);
        wake(&c, 24 * MS, 101, 0, 0, MPROF_SYS_WAKE_HARDIRQ);
        wake(&c, 26200 * US, 101, 555, 999, MPROF_SYS_WAKE_TASK);
        /* 102 and 103 are woken at the start of their waits' ends, nothing of Main's frames */
        wake(&c, 10900 * US, 102, 101, 4242, MPROF_SYS_WAKE_TASK);
        wake(&c, 12900 * US, 103, 101, 4242, MPROF_SYS_WAKE_TASK);
        wake(&c, 32900 * US, 102, 101, 4242, MPROF_SYS_WAKE_TASK);
    }
    for (uint64_t t = 101; t <= 103; t++)
        sys_thread(&c, 45 * MS, t, MPROF_SYS_TRACK_END, 0);
    mark(&c, 45 * MS); /* the capture's last event: a frame of 5 ms with nothing in it */
    write_capture(path, &c, info);
}

static const char *path_model(const cJSON *j)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "system"), "criticalPath");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* With the recorded wakers every wait is followed exactly. */
static void test_recorded_wakers(void **state)
{
    (void)state;
    program(tp("wakers.mprof"), 1, INFO_SCHED, 1);
    cJSON *j = export_json("wakers.mprof");
    assert_string_equal(path_model(j), "wakers");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "system"),
                                                 "switchReasons")));
    const double pre[5] = {1, 0, 0, 0, 0};
    /* Frame 3: the yield (1 ms) and the wait (2 ms) are both blocked, not preempted. */
    const double blocked[5] = {0, 6, 4, 3, 0};
    /* Frame 1: Main's wake-up latency 0.5, 102 preempted 2, 102's wake-up latency 0.2 and
     * 103's preemption inside 102's wait [15.5, 15.8) 0.2: 2.9. Frame 2: the interrupt's
     * wake-up latency 1 and the other process's 0.8, nothing followed. Frame 3: no wake-up
     * recorded, so inferred: 102 stopped last (34.5): latency 0.5 and its preemption 0.3. */
    const double wait[5] = {0, 2.9, 1.8, 0.8, 0};
    expect_ms(j, "framePreemptedMs", pre, 5);
    expect_ms(j, "frameBlockedMs", blocked, 5);
    expect_ms(j, "frameWaitRunnableMs", wait, 5);
    const double offcpu[5] = {1, 6, 4, 3, 0};
    expect_ms(j, "frameOffCpuMs", offcpu, 5);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "system"),
                                         "pathTruncatedFrames")->valueint, 0);
    /* Frame 3's wait is the one whose wake-up the tracepoints missed. */
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "system"),
                                         "unrecordedWakeups")->valueint, 1);
    cJSON_Delete(j);
}

/* The same program recorded without the tracepoints: the wakers are inferred from who ran last,
 * and come out as above except where the inference sees less (a waker's stop, not its wake-up). */
static void test_inferred_wakers(void **state)
{
    (void)state;
    program(tp("inferred.mprof"), 0, 0, 1);
    cJSON *j = export_json("inferred.mprof");
    assert_string_equal(path_model(j), "inferred");
    const double pre[5] = {1, 0, 0, 0, 0};
    /* Frame 1: 102 stopped last (17.6): latency 0.4; 102 preempted 2; 102's wait [15.5, 16):
     * 103 stopped last (15.9): latency 0.1 and 103's preemption in [15.5, 15.9) 0.2: 2.7.
     * Frame 2: no program thread ran during either wait: nothing (a sleep stays in the frame).
     * Frame 3: as with the tracepoints, 0.8. */
    const double wait[5] = {0, 2.7, 0, 0.8, 0};
    expect_ms(j, "framePreemptedMs", pre, 5);
    expect_ms(j, "frameWaitRunnableMs", wait, 5);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "system"),
                                         "unrecordedWakeups")->valueint, 0);
    cJSON_Delete(j);
}

/* A kernel before 4.17 without the tracepoints marks every switch-out blocked: the export says
 * it cannot tell preemption from waiting and writes no split, rather than zeros. */
static void test_no_reasons(void **state)
{
    (void)state;
    program(tp("old.mprof"), 0, INFO_OLD_KERNEL, 0);
    cJSON *j = export_json("old.mprof");
    const cJSON *sys = cJSON_GetObjectItem(j, "system");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sys, "contextSwitches")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(sys, "switchReasons")));
    assert_null(path_model(j));
    assert_null(cJSON_GetObjectItem(j, "framePreemptedMs"));
    assert_null(cJSON_GetObjectItem(j, "frameWaitRunnableMs"));
    assert_non_null(cJSON_GetObjectItem(j, "frameOffCpuMs"));
    cJSON_Delete(j);
    /* The same old kernel, but a switch that says preempted proves the reasons are there. */
    program(tp("old2.mprof"), 0, INFO_OLD_KERNEL, 1);
    j = export_json("old2.mprof");
    assert_string_equal(path_model(j), "inferred");
    cJSON_Delete(j);
}

/* A wait whose waker blocked thousands of times inside it: the walk stops at its budget, the
 * frame counts as truncated and a warning says so, and what was removed stays a lower bound. */
static void test_budget(void **state)
{
    (void)state;
    cap c;
    memset(&c, 0, sizeof c);
    def_thread(&c, 1, 101);
    def_thread(&c, 2, 102);
    sys_thread(&c, 0, 101, MPROF_SYS_TRACK_START, 'R');
    sys_thread(&c, 0, 102, MPROF_SYS_TRACK_START, 'R');
    mark(&c, 0);
    mark(&c, 100 * MS);
    off(&c, 101, 1 * MS, 99 * MS, MPROF_SYS_REASON_BLOCKED);
    for (int k = 0; k < 6000; k++)
        off(&c, 102, 1 * MS + k * 16 * US, 1 * MS + k * 16 * US + 8 * US,
            MPROF_SYS_REASON_PREEMPTED);
    off(&c, 102, 98 * MS, 100 * MS, MPROF_SYS_REASON_BLOCKED);
    wake(&c, 97900 * US, 101, 102, 4242, MPROF_SYS_WAKE_TASK);
    mark(&c, 101 * MS);
    write_capture(tp("budget.mprof"), &c, INFO_SCHED);
    cJSON *j = export_json("budget.mprof");
    const cJSON *sys = cJSON_GetObjectItem(j, "system");
    assert_int_equal(cJSON_GetObjectItem(sys, "pathTruncatedFrames")->valueint, 1);
    double w = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "frameWaitRunnableMs"), 0)->valuedouble;
    /* Latency 1.1 ms plus 8 us for each preemption visited before the budget ran out. */
    assert_true(w > 1.1 + 0.008 * 4000 && w < 1.1 + 0.008 * 4096 + 1e-6);
    int warned = 0;
    const cJSON *wn;
    cJSON_ArrayForEach(wn, cJSON_GetObjectItem(j, "warnings"))
        warned |= strstr(wn->valuestring, "followed only part of the way") != NULL;
    assert_true(warned);
    cJSON_Delete(j);
}

/* Wakers that wake each other inside one wait (each named as the other's waker) cannot make the
 * walk count a moment twice: what is removed stays within the wait. */
static void test_cycles_stay_in_the_frame(void **state)
{
    (void)state;
    cap c;
    memset(&c, 0, sizeof c);
    def_thread(&c, 1, 101);
    def_thread(&c, 2, 102);
    def_thread(&c, 3, 103);
    for (uint64_t t = 101; t <= 103; t++)
        sys_thread(&c, 0, t, MPROF_SYS_TRACK_START, 'R');
    mark(&c, 0);
    mark(&c, 10 * MS);
    off(&c, 101, 1 * MS, 9 * MS, MPROF_SYS_REASON_BLOCKED);
    wake(&c, 8 * MS, 101, 102, 4242, MPROF_SYS_WAKE_TASK);
    /* 102 and 103 wait for each other in turn, preempted in between. */
    for (int k = 0; k < 6; k++) {
        int64_t s = 1 * MS + k * 1 * MS;
        uint64_t a = k % 2 ? 103 : 102, b = k % 2 ? 102 : 103;
        off(&c, a, s, s + 600 * US, MPROF_SYS_REASON_BLOCKED);
        wake(&c, s + 500 * US, a, b, 4242, MPROF_SYS_WAKE_TASK);
        off(&c, b, s + 100 * US, s + 400 * US, MPROF_SYS_REASON_PREEMPTED);
    }
    mark(&c, 11 * MS);
    write_capture(tp("cycle.mprof"), &c, INFO_SCHED);
    cJSON *j = export_json("cycle.mprof");
    double w = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "frameWaitRunnableMs"), 0)->valuedouble;
    double b = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "frameBlockedMs"), 0)->valuedouble;
    assert_true(w > 0.0);
    assert_true(w <= b + 1e-9);
    assert_true(b > 7.99 && b < 8.01);
    cJSON_Delete(j);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mprof_test_critpath_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_wakers),
        cmocka_unit_test(test_inferred_wakers),
        cmocka_unit_test(test_no_reasons),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_cycles_stay_in_the_frame),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
