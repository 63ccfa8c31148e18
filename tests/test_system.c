/*
 * test_system.c - system tracing end to end: a child process records a capture with the real
 * library (context switches, CPU usage, sampling), the parent reads it with the real reader,
 * the report pass and the frame export.
 *
 * Nothing here asserts a timing outcome that load can flip. A zone that sleeps 40 ms is off the
 * CPU for nearly all of it however busy the machine is (waiting to run again is off the CPU
 * too). A zone that spins is compared with the CPU time the child measured inside it
 * (CLOCK_THREAD_CPUTIME_ID), not with its wall time, which a loaded machine stretches: its
 * on-CPU time from the switch records must match that CPU time within 30 %. Samples are taken
 * on the cpu-clock, so their number follows CPU time, not wall time.
 *
 * Where the kernel refuses perf_event_open to the test itself (a CI container's seccomp
 * profile, perf_event_paranoid 3), the tests that need switch records check that the capture
 * says why and skip; the refused-by-seccomp test runs everywhere.
 */
#include "mprof/mprof.h"

#include "analysis/analysis.h"
#include "format/format.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Computes until the calling thread has used ms of CPU. No zones inside: what samples land here
 * must be attributed to the zone around the call. */
double spin_compute(double ms);
__attribute__((noinline)) double spin_compute(double ms)
{
    double start = thread_cpu_ms();
    double x = 0;
    /* Register arithmetic only (the empty asm keeps it from being folded): no memory access a
     * sanitizer would instrument, and the clock read rarely, so samples land here. */
    while (thread_cpu_ms() - start < ms)
        for (int i = 0; i < 2000000; i++) {
            x += i * 0.5;
            __asm__ __volatile__("" : "+r"(i));
        }
    return x;
}

/* ---- running a workload in a child ---------------------------------------------------------- */

typedef void (*workload_fn)(int fd);

/* Runs fn in a child with the environment variables in env ("K=V", NULL-terminated), capturing
 * to path; fn may write figures to fd. Returns the bytes the child wrote to fd, in out. */
static void run_child(const char *path, const char *const *env, int seccomp_perf, workload_fn fn,
                      void *out, size_t out_len)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        if (seccomp_perf) {
            /* perf_event_open fails with EACCES; everything else is allowed. */
            struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            };
            struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
            if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
                prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
                _exit(90);
        }
        mprof_config cfg = {0};
        cfg.capture_path = path;
        if (mprof_startup(&cfg) != MPROF_OK)
            _exit(91);
        fn(p[1]);
        mprof_shutdown();
        close(p[1]);
        _exit(0);
    }
    close(p[1]);
    size_t got = 0;
    while (got < out_len) {
        ssize_t n = read(p[0], (char *)out + got, out_len - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(p[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(got, out_len);
}

static cJSON *report_json(const char *path)
{
    char err[512];
    mprof_analysis_opts o = {.top_n = 20, .passes = "samples"};
    mprof_analysis *a = mprof_analysis_run(path, &o, err, sizeof err);
    if (!a)
        fail_msg("analysis failed: %s", err);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    mprof_analysis_print_json(a, f);
    fclose(f);
    /* The text report too, which must not crash either. */
    f = fopen("/dev/null", "w");
    mprof_analysis_print_text(a, f);
    fclose(f);
    mprof_analysis_free(a);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

static cJSON *zone_named(cJSON *rep, const char *name)
{
    cJSON *z;
    cJSON_ArrayForEach(z, cJSON_GetObjectItem(rep, "zones"))
    {
        if (strcmp(cJSON_GetObjectItem(z, "name")->valuestring, name) == 0)
            return z;
    }
    fail_msg("no zone %s", name);
    return NULL;
}

static double num(cJSON *o, const char *key)
{
    cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsNumber(v))
        fail_msg("no number %s", key);
    return v->valuedouble;
}

/* The INFO value of key in the capture at path (copied into out). */
static const char *info(const char *path, const char *key, char *out, size_t n)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    const char *v = mprof_reader_info(r, key);
    snprintf(out, n, "%s", v ? v : "");
    mprof_reader_close(r);
    return out;
}

/* Skips the test, saying why, when the capture has no context switches. */
static int switches_refused(const char *path)
{
    char v[512], why[512];
    if (strcmp(info(path, "system.context_switches", v, sizeof v), "on") == 0)
        return 0;
    info(path, "system.context_switches.why_not", why, sizeof why);
    assert_true(why[0] != 0); /* off, and the capture must say why */
    print_message("context switches unavailable here (%s): skipped\n", why);
    return 1;
}

/* ---- sleep versus compute, with sampling ---------------------------------------------------- */

#define FRAMES 4

static void sleep_compute_workload(int fd)
{
    double cpu = 0;
    for (int i = 0; i < FRAMES; i++) {
        MPROF_ZONE_BEGIN("sleeping");
        sleep_ms(40);
        MPROF_ZONE_END();
        MPROF_ZONE_BEGIN("computing");
        double c0 = thread_cpu_ms();
        spin_compute(30);
        cpu += thread_cpu_ms() - c0;
        MPROF_ZONE_END();
        MPROF_FRAME_MARK();
    }
    if (write(fd, &cpu, sizeof cpu) != (ssize_t)sizeof cpu)
        _exit(92);
}

static void test_sleep_versus_compute(void **state)
{
    (void)state;
    const char *path = tu_temp_path("system_sleep.mprof");
    static const char *const env[] = {"MPROF_SAMPLE_HZ=997", NULL};
    double cpu_ms = 0;
    run_child(path, env, 0, sleep_compute_workload, &cpu_ms, sizeof cpu_ms);
    if (switches_refused(path))
        skip();
    cJSON *rep = report_json(path);
    cJSON *sys = cJSON_GetObjectItem(rep, "system");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sys, "context_switches")));

    cJSON *sl = zone_named(rep, "sleeping");
    double sl_total = num(sl, "total_ns"), sl_off = num(sl, "off_cpu_ns");
    print_message("sleeping: %.1f of %.1f ms off CPU\n", sl_off / 1e6, sl_total / 1e6);
    assert_true(sl_off >= 0.8 * sl_total);

    cJSON *co = zone_named(rep, "computing");
    double co_total = num(co, "total_ns"), co_off = num(co, "off_cpu_ns");
    double co_on_ms = (co_total - co_off) / 1e6;
    print_message("computing: %.1f ms on CPU by the switch records, %.1f ms by the thread's CPU "
                  "clock, %.1f ms wall\n", co_on_ms, cpu_ms, co_total / 1e6);
    assert_true(co_on_ms >= 0.7 * cpu_ms && co_on_ms <= 1.3 * cpu_ms + 2.0);

    /* The main thread: traced, switched at least once per sleep. */
    cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "threads"), 0);
    assert_true(num(t, "context_switches") >= FRAMES);
    assert_true(num(t, "off_cpu_ns") >= 0.8 * FRAMES * 40e6);

    /* Samples inside "computing" name spin_compute. */
    if (!cJSON_IsTrue(cJSON_GetObjectItem(sys, "sampling"))) {
        print_message("sampling refused here (%s)\n",
                      cJSON_GetObjectItem(sys, "why_not")->valuestring);
    } else {
        cJSON *samples = cJSON_GetObjectItem(rep, "samples");
        assert_int_equal((int)num(samples, "hz"), 997);
        double in_zone = 0, in_fn = 0;
        cJSON *b;
        cJSON_ArrayForEach(b, cJSON_GetObjectItem(samples, "by_zone"))
        {
            cJSON *zn = cJSON_GetObjectItem(b, "zone");
            if (!cJSON_IsString(zn) || strcmp(zn->valuestring, "computing") != 0)
                continue;
            in_zone += num(b, "samples");
            if (strcmp(cJSON_GetObjectItem(b, "function")->valuestring, "spin_compute") == 0)
                in_fn += num(b, "samples");
        }
        print_message("samples in computing: %.0f, in spin_compute: %.0f\n", in_zone, in_fn);
        /* 4 x 30 ms of CPU at 997 Hz is about 120 samples. */
        assert_true(in_zone >= 20);
        assert_true(in_fn >= 0.6 * in_zone); /* and it is the top function there */
    }
    cJSON_Delete(rep);

    /* The frame export: the arrays of contract 1, aligned with frameTimesMs. */
    const char *fj = tu_temp_path("system_frames.json");
    char cmd[2048], out[256];
    snprintf(cmd, sizeof cmd, "'%s' export --format frames -o '%s' '%s'", tu_mprof_bin(), fj, path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    FILE *f = fopen(fj, "r");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *fr = cJSON_Parse(buf);
    assert_non_null(fr);
    cJSON *fs = cJSON_GetObjectItem(fr, "system");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fs, "contextSwitches")));
    int nf = cJSON_GetArraySize(cJSON_GetObjectItem(fr, "frameTimesMs"));
    assert_int_equal(nf, FRAMES - 1);
    static const char *const arrays[] = {"frameOnCpuMs", "frameOffCpuMs", "frameCpuMs"};
    for (int k = 0; k < 3; k++)
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(fr, arrays[k])), nf);
    if (cJSON_IsTrue(cJSON_GetObjectItem(fs, "cpuUsage")))
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(fr, "frameMachineBusy")), nf);
    for (int i = 0; i < nf; i++) {
        double ft = cJSON_GetArrayItem(cJSON_GetObjectItem(fr, "frameTimesMs"), i)->valuedouble;
        double on = cJSON_GetArrayItem(cJSON_GetObjectItem(fr, "frameOnCpuMs"), i)->valuedouble;
        double off = cJSON_GetArrayItem(cJSON_GetObjectItem(fr, "frameOffCpuMs"), i)->valuedouble;
        /* The main thread is traced the whole frame: on + off is the frame. */
        assert_true(on + off > ft - 0.01 && on + off < ft + 0.01);
        assert_true(off >= 0.8 * 40);
    }
    cJSON *z;
    int seen = 0;
    cJSON_ArrayForEach(z, cJSON_GetObjectItem(fr, "zones"))
    {
        cJSON *a = cJSON_GetObjectItem(z, "selfOffCpuPerFrameMs");
        assert_non_null(a);
        assert_int_equal(cJSON_GetArraySize(a), nf);
        if (strcmp(cJSON_GetObjectItem(z, "name")->valuestring, "sleeping") == 0) {
            seen = 1;
            for (int i = 0; i < nf; i++)
                assert_true(cJSON_GetArrayItem(a, i)->valuedouble >= 0.8 * 40);
        }
    }
    assert_true(seen);
    cJSON_Delete(fr);

    /* The viewer's document: the main thread's off-CPU intervals and the samples. */
    snprintf(cmd, sizeof cmd, "'%s' view --json -o '%s' '%s'", tu_mprof_bin(), fj, path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    f = fopen(fj, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *vd = cJSON_Parse(buf);
    assert_non_null(vd);
    cJSON *vs = cJSON_GetObjectItem(vd, "system");
    assert_non_null(vs);
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(vs, "threads")) >= 1);
    cJSON *off = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(vs, "threads"), 0), "off");
    assert_true(cJSON_GetArraySize(off) >= 3 * FRAMES);
    assert_int_equal(cJSON_GetArraySize(off) % 3, 0);
    cJSON_Delete(vd);

    /* The Chrome export: the sleeps are "blocked" slices on the main thread's state track. */
    snprintf(cmd, sizeof cmd, "'%s' export --format chrome -o '%s' '%s'", tu_mprof_bin(), fj, path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    f = fopen(fj, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *ch = cJSON_Parse(buf);
    assert_non_null(ch);
    double blocked_us = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(ch, "traceEvents"))
    {
        cJSON *pid = cJSON_GetObjectItem(e, "pid"), *nm = cJSON_GetObjectItem(e, "name");
        if (cJSON_IsNumber(pid) && pid->valueint == 5 && cJSON_IsString(nm) &&
            strcmp(nm->valuestring, "blocked") == 0)
            blocked_us += num(e, "dur");
    }
    assert_true(blocked_us >= 0.8 * FRAMES * 40e3);
    cJSON_Delete(ch);
    remove(fj);
    remove(path);
}

/* ---- refused by seccomp --------------------------------------------------------------------- */

static void simple_workload(int fd)
{
    for (int i = 0; i < 3; i++) {
        MPROF_ZONE_BEGIN("work");
        sleep_ms(5);
        MPROF_ZONE_END();
        MPROF_FRAME_MARK();
    }
    sleep_ms(150); /* long enough for a CPU-usage sample */
    int ok = 1;
    if (write(fd, &ok, sizeof ok) != (ssize_t)sizeof ok)
        _exit(92);
}

static void test_refused_by_seccomp(void **state)
{
    (void)state;
    const char *path = tu_temp_path("system_refused.mprof");
    static const char *const env[] = {"MPROF_SAMPLE_HZ=500", NULL};
    int ok = 0;
    run_child(path, env, 1, simple_workload, &ok, sizeof ok);
    char v[512];
    assert_string_equal(info(path, "system.context_switches", v, sizeof v), "off");
    info(path, "system.context_switches.why_not", v, sizeof v);
    assert_non_null(strstr(v, "perf_event_open refused"));
    assert_non_null(strstr(v, strerror(EACCES)));
    assert_string_equal(info(path, "system.sampling", v, sizeof v), "off");

    tu_counts c;
    assert_int_equal(tu_count_capture(path, &c), 0);
    assert_true(c.st.complete);
    assert_int_equal(c.by_type[MPROF_EV_SYS_SWITCH], 0);
    assert_int_equal(c.by_type[MPROF_EV_SYS_SAMPLE], 0);
    assert_int_equal(c.by_type[MPROF_EV_ZONE_BEGIN], 3);
    assert_int_equal(c.by_type[MPROF_EV_ZONE_END], 3);
    assert_int_equal(c.by_type[MPROF_EV_FRAME_MARK], 3);

    cJSON *rep = report_json(path);
    cJSON *sys = cJSON_GetObjectItem(rep, "system");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(sys, "context_switches")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(sys, "sampling")));
    assert_non_null(strstr(cJSON_GetObjectItem(sys, "why_not")->valuestring, "perf_event_open"));
    cJSON *w = zone_named(rep, "work");
    assert_int_equal((int)num(w, "count"), 3);
    assert_null(cJSON_GetObjectItem(w, "off_cpu_ns"));
    assert_int_equal((int)num(cJSON_GetObjectItem(rep, "samples"), "count"), 0);
    cJSON_Delete(rep);
    remove(path);
}

/* ---- turned off ----------------------------------------------------------------------------- */

static void test_turned_off(void **state)
{
    (void)state;
    const char *path = tu_temp_path("system_off.mprof");
    static const char *const env[] = {"MPROF_CONTEXT_SWITCHES=0", NULL};
    int ok = 0;
    run_child(path, env, 0, simple_workload, &ok, sizeof ok);
    char v[512];
    assert_string_equal(info(path, "system.context_switches", v, sizeof v), "off");
    assert_non_null(strstr(info(path, "system.context_switches.why_not", v, sizeof v),
                           "MPROF_CONTEXT_SWITCHES=0"));
    tu_counts c;
    assert_int_equal(tu_count_capture(path, &c), 0);
    assert_int_equal(c.by_type[MPROF_EV_SYS_SWITCH], 0);
    assert_int_equal(c.by_type[MPROF_EV_ZONE_END], 3);
    remove(path);
}

/* ---- two threads, one exiting mid-capture --------------------------------------------------- */

typedef struct sleeper_arg {
    int n;
    uint64_t tid;
} sleeper_arg;

static void *sleeper(void *arg)
{
    sleeper_arg *a = arg;
    a->tid = (uint64_t)syscall(SYS_gettid);
    sleep_ms(30); /* traced from its first event (the first zone) on, at the next poll */
    for (int i = 0; i < a->n; i++) {
        MPROF_ZONE_BEGIN("worker_sleep");
        sleep_ms(20);
        MPROF_ZONE_END();
    }
    return NULL;
}

static void threads_workload(int fd)
{
    pthread_t ta, tb;
    sleeper_arg a = {8, 0}, b = {2, 0};
    pthread_create(&ta, NULL, sleeper, &a);
    pthread_create(&tb, NULL, sleeper, &b);
    pthread_join(tb, NULL); /* b exits after about 70 ms; a and main go on */
    sleep_ms(20);           /* the next scan sees that b is gone */
    for (int i = 0; i < 6; i++) {
        MPROF_ZONE_BEGIN("main_sleep");
        sleep_ms(20);
        MPROF_ZONE_END();
        MPROF_FRAME_MARK();
    }
    pthread_join(ta, NULL);
    if (write(fd, &b.tid, sizeof b.tid) != (ssize_t)sizeof b.tid)
        _exit(92);
}

static void test_threads_and_exit(void **state)
{
    (void)state;
    const char *path = tu_temp_path("system_threads.mprof");
    uint64_t b_tid = 0;
    run_child(path, NULL, 0, threads_workload, &b_tid, sizeof b_tid);
    if (switches_refused(path))
        skip();
    /* The thread that exited mid-capture ends its tracing before main's last zone ends. */
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    mprof_event ev;
    int64_t b_end = -1, main_last_end = -1, b_start = -1;
    uint32_t main_idx = 0;
    while (mprof_reader_next(r, &ev) == 1) {
        if (ev.type == MPROF_EV_SYS_THREAD && ev.u[0] == b_tid)
            *(ev.u[1] == 2 ? &b_end : &b_start) = ev.ts_ns;
        if (ev.type == MPROF_EV_FRAME_MARK)
            main_idx = ev.thread;
        if (ev.type == MPROF_EV_ZONE_END && ev.thread == main_idx)
            main_last_end = ev.ts_ns;
    }
    mprof_reader_close(r);
    assert_true(b_start >= 0);
    assert_true(b_end > b_start);
    assert_true(main_last_end > b_end);

    cJSON *rep = report_json(path);
    int traced = 0;
    cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(rep, "threads"))
    {
        if (num(t, "zones") == 0)
            continue;
        assert_non_null(cJSON_GetObjectItem(t, "context_switches"));
        assert_true(num(t, "context_switches") >= 1);
        traced++;
    }
    assert_int_equal(traced, 3);
    /* main_sleep ran on a thread traced from the start. */
    cJSON *ms = zone_named(rep, "main_sleep");
    assert_true(num(ms, "off_cpu_ns") >= 0.8 * num(ms, "total_ns"));
    cJSON *ws = zone_named(rep, "worker_sleep");
    assert_int_equal((int)num(ws, "count"), 10);
    assert_non_null(cJSON_GetObjectItem(ws, "off_cpu_ns"));
    cJSON_Delete(rep);
    remove(path);
}

/* ---- the sched tracepoints (root) ----------------------------------------------------------- */

/* Makes tracefs available for the tracepoint tests: when root and not mounted, mounts it (the
 * library never does) in a mount namespace of this test's own, so that the machine, and the
 * tests that run beside this one, keep the fallback path they had. Returns NULL, or why the
 * tracepoint tests skip. */
static const char *tracefs_ready(void)
{
    static char why[256];
    if (access("/sys/kernel/tracing/events/sched/sched_switch/id", R_OK) == 0 ||
        access("/sys/kernel/debug/tracing/events/sched/sched_switch/id", R_OK) == 0)
        return NULL;
    if (geteuid() != 0)
        return "not root and tracefs is not mounted";
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        snprintf(why, sizeof why, "tracefs is not mounted and no private mount namespace (%s)",
                 strerror(errno));
        return why;
    }
    if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0 &&
        access("/sys/kernel/tracing/events/sched/sched_switch/id", R_OK) == 0)
        return NULL;
    snprintf(why, sizeof why, "tracefs is not mounted and mounting it failed (%s)",
             strerror(errno));
    return why;
}

/* Skips (saying why) when the capture did not use the tracepoints. */
static int sched_refused(const char *path)
{
    char v[512];
    if (switches_refused(path))
        return 1;
    info(path, "system.sched_switch", v, sizeof v);
    if (strncmp(v, "on", 2) == 0)
        return 0;
    assert_non_null(strstr(v, "not used: "));
    print_message("sched tracepoints unavailable here (%s): skipped\n", v);
    return 1;
}

static void pin_to(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

typedef struct cv_state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ticket, taken, stop;
    uint64_t tid;
} cv_state;

static void *signaller(void *arg)
{
    cv_state *c = arg;
    c->tid = (uint64_t)syscall(SYS_gettid);
    pthread_setname_np(pthread_self(), "signaller");
    MPROF_THREAD_NAME("signaller");
    for (;;) {
        sleep_ms(15);
        pthread_mutex_lock(&c->mu);
        if (c->stop) {
            pthread_mutex_unlock(&c->mu);
            return NULL;
        }
        c->ticket++;
        pthread_cond_signal(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
}

typedef struct sched_out {
    uint64_t signaller_tid, late_tid;
    double spin_cpu_ms;
} sched_out;

static atomic_int hog_stop; /* set by the workload, read by its hog thread */
static void *hog(void *arg)
{
    pin_to(*(int *)arg);
    while (!atomic_load_explicit(&hog_stop, memory_order_relaxed)) {
    }
    return NULL;
}

static void *late_thread(void *arg)
{
    *(uint64_t *)arg = (uint64_t)syscall(SYS_gettid);
    MPROF_ZONE_BEGIN("late_first");
    sleep_ms(5);
    MPROF_ZONE_END();
    return NULL;
}

static void sched_workload(int fd)
{
    sched_out o = {0};
    /* blocked on a condition variable, woken by "signaller" */
    cv_state c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0};
    pthread_t ts;
    pthread_create(&ts, NULL, signaller, &c);
    for (int i = 0; i < 6; i++) {
        MPROF_ZONE_BEGIN("wait_cv");
        pthread_mutex_lock(&c.mu);
        while (c.ticket == c.taken)
            pthread_cond_wait(&c.cv, &c.mu);
        c.taken = c.ticket;
        pthread_mutex_unlock(&c.mu);
        MPROF_ZONE_END();
        MPROF_FRAME_MARK();
    }
    pthread_mutex_lock(&c.mu);
    c.stop = 1;
    pthread_mutex_unlock(&c.mu);
    pthread_join(ts, NULL);
    o.signaller_tid = c.tid;

    /* beside a CPU hog pinned to the same CPU: yielding, then spinning (preempted) */
    int cpu = sched_getcpu();
    pin_to(cpu);
    atomic_store(&hog_stop, 0);
    pthread_t th;
    pthread_create(&th, NULL, hog, &cpu);
    sleep_ms(20);
    MPROF_ZONE_BEGIN("yielding");
    double c0 = thread_cpu_ms();
    for (int i = 0; i < 200 && thread_cpu_ms() - c0 < 30; i++)
        sched_yield();
    MPROF_ZONE_END();
    MPROF_ZONE_BEGIN("spinning");
    c0 = thread_cpu_ms();
    spin_compute(60);
    o.spin_cpu_ms = thread_cpu_ms() - c0;
    MPROF_ZONE_END();
    atomic_store(&hog_stop, 1);
    pthread_join(th, NULL);
    MPROF_FRAME_MARK();

    /* a thread created mid-capture */
    pthread_t tl;
    pthread_create(&tl, NULL, late_thread, &o.late_tid);
    pthread_join(tl, NULL);
    if (write(fd, &o, sizeof o) != (ssize_t)sizeof o)
        _exit(92);
}

static cJSON *thread_with_tid(cJSON *rep, const char *name)
{
    cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(rep, "threads"))
    {
        cJSON *n = cJSON_GetObjectItem(t, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return t;
    }
    return NULL;
}

static void test_sched_tracepoints(void **state)
{
    (void)state;
    const char *why = tracefs_ready();
    if (why) {
        print_message("sched tracepoints: %s: skipped\n", why);
        skip();
    }
    const char *path = tu_temp_path("system_sched.mprof");
    sched_out o;
    run_child(path, NULL, 0, sched_workload, &o, sizeof o);
    if (sched_refused(path))
        skip();
    char v[512];
    assert_non_null(strstr(info(path, "system.cpu_usage.source", v, sizeof v), "sched_switch"));
    tu_counts cnt;
    assert_int_equal(tu_count_capture(path, &cnt), 0);
    assert_true(cnt.by_type[MPROF_EV_SYS_WAKE] > 0);
    assert_true(cnt.by_type[MPROF_EV_SYS_CPU_CORE] > 0);

    /* The late thread: traced from birth (its SYS_THREAD start and first switch in precede
     * its first zone). */
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    mprof_event ev;
    int64_t late_start = -1, late_in = -1, late_zone = -1;
    uint64_t wakes_by_signaller = 0;
    while (mprof_reader_next(r, &ev) == 1) {
        if (ev.type == MPROF_EV_SYS_THREAD && ev.u[0] == o.late_tid && ev.u[1] == 1)
            late_start = ev.ts_ns;
        if (ev.type == MPROF_EV_SYS_SWITCH && ev.u[0] == o.late_tid && ev.u[1] == 1 && late_in < 0)
            late_in = ev.ts_ns;
        if (ev.type == MPROF_EV_ZONE_BEGIN && late_zone < 0) {
            const mprof_thread_def *d = mprof_reader_thread(r, ev.thread);
            if (d && d->os_tid == o.late_tid)
                late_zone = ev.ts_ns;
        }
        if (ev.type == MPROF_EV_SYS_WAKE && ev.u[1] == o.signaller_tid && ev.u[3] == 0)
            wakes_by_signaller++;
    }
    mprof_reader_close(r);
    print_message("late thread: start %lld, first in %lld, first zone %lld\n", (long long)late_start,
                  (long long)late_in, (long long)late_zone);
    assert_true(late_start >= 0 && late_in >= late_start && late_zone > late_in);
    assert_true(wakes_by_signaller >= 5);

    cJSON *rep = report_json(path);
    cJSON *sys = cJSON_GetObjectItem(rep, "system");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sys, "sched_switch")));
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(sys, "cpus")) >= 1);

    /* blocked, woken by signaller */
    cJSON *z = zone_named(rep, "wait_cv");
    double off = num(z, "self_off_cpu_ns"), blocked = num(z, "self_blocked_ns");
    print_message("wait_cv: %.1f ms off CPU, %.1f ms blocked, %.1f yielded, %.1f preempted\n",
                  off / 1e6, blocked / 1e6, num(z, "self_yielded_ns") / 1e6,
                  num(z, "self_preempted_ns") / 1e6);
    assert_true(blocked >= 0.5 * off && off > 0); /* the rest: preempted after it woke */
    /* The reasons split the zone's self off-CPU time exactly. */
    const char *zn[3] = {"wait_cv", "yielding", "spinning"};
    for (int i = 0; i < 3; i++) {
        cJSON *zz = zone_named(rep, zn[i]);
        assert_true(num(zz, "self_preempted_ns") + num(zz, "self_blocked_ns") +
                        num(zz, "self_yielded_ns") == num(zz, "self_off_cpu_ns"));
    }
    cJSON *wb = cJSON_GetArrayItem(cJSON_GetObjectItem(z, "woken_by"), 0);
    assert_non_null(wb);
    assert_string_equal(cJSON_GetObjectItem(wb, "name")->valuestring, "signaller");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(wb, "same_process")));
    assert_int_equal((uint64_t)num(wb, "tid"), o.signaller_tid);
    /* The signaller's wake-ups end the zone's blocked time. Its wake-up count is not asserted:
     * a wake-up counts to the zone its off-CPU interval began in, and a switch out a few
     * microseconds after the zone began can land before it once the tracepoint clock is turned
     * into the zone's ticks (seen under ASan: 0 of 6 counted, all 91 ms of blocked time the
     * signaller's). */
    assert_true(num(wb, "off_cpu_ns") >= 0.5 * blocked);

    /* yielded beside a hog on the same CPU */
    z = zone_named(rep, "yielding");
    double y = num(z, "self_yielded_ns");
    print_message("yielding: %.1f ms off CPU, %.1f yielded, %.1f preempted\n",
                  num(z, "self_off_cpu_ns") / 1e6, y / 1e6, num(z, "self_preempted_ns") / 1e6);
    assert_true(y > 0);
    assert_true(y >= num(z, "self_blocked_ns"));

    /* preempted: spinning beside the hog; its on-CPU time matches its own CPU clock */
    z = zone_named(rep, "spinning");
    double soff = num(z, "off_cpu_ns"), pre = num(z, "self_preempted_ns");
    double on_ms = (num(z, "total_ns") - soff) / 1e6;
    print_message("spinning: %.1f ms on CPU (%.1f by its clock), %.1f off, %.1f preempted\n",
                  on_ms, o.spin_cpu_ms, soff / 1e6, pre / 1e6);
    assert_true(soff > 0 && pre >= 0.8 * soff);
    assert_true(on_ms >= 0.7 * o.spin_cpu_ms && on_ms <= 1.3 * o.spin_cpu_ms + 2.0);

    /* The main thread (8 zones; which thread registered first depends on the scheduler). */
    cJSON *main_t = NULL, *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(rep, "threads"))
    {
        if (num(t, "zones") == 8)
            main_t = t;
    }
    assert_non_null(main_t);
    assert_true(num(main_t, "blocked_ns") > 0 && num(main_t, "preempted_ns") > 0);
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(main_t, "wakers")) >= 1);
    assert_non_null(thread_with_tid(rep, "signaller"));
    cJSON_Delete(rep);

    /* The Chrome export: the blocked slices carry their waker. */
    const char *fj = tu_temp_path("system_sched.json");
    char cmd[2048], out[256];
    snprintf(cmd, sizeof cmd, "'%s' export --format chrome -o '%s' '%s'", tu_mprof_bin(), fj, path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    FILE *f = fopen(fj, "r");
    assert_non_null(f);
    static char buf[16 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *ch = cJSON_Parse(buf);
    assert_non_null(ch);
    int by_signaller = 0, yielded = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(ch, "traceEvents"))
    {
        cJSON *pid = cJSON_GetObjectItem(e, "pid"), *nm = cJSON_GetObjectItem(e, "name");
        if (!cJSON_IsNumber(pid) || pid->valueint != 5 || !cJSON_IsString(nm))
            continue;
        cJSON *args = cJSON_GetObjectItem(e, "args");
        cJSON *wk = args ? cJSON_GetObjectItem(args, "waker_tid") : NULL;
        if (strcmp(nm->valuestring, "blocked") == 0 && cJSON_IsNumber(wk) &&
            (uint64_t)wk->valuedouble == o.signaller_tid)
            by_signaller++;
        if (strcmp(nm->valuestring, "yielded") == 0)
            yielded++;
    }
    assert_true(by_signaller >= 5);
    assert_true(yielded >= 1);
    cJSON_Delete(ch);
    remove(fj);
    remove(path);
}

/* Turned off: the capture says so and falls back to PERF_RECORD_SWITCH. */
static void test_sched_turned_off(void **state)
{
    (void)state;
    const char *path = tu_temp_path("system_sched_off.mprof");
    static const char *const env[] = {"MPROF_SCHED_SWITCH=0", NULL};
    int ok = 0;
    run_child(path, env, 0, simple_workload, &ok, sizeof ok);
    if (switches_refused(path))
        skip();
    char v[512];
    info(path, "system.sched_switch", v, sizeof v);
    print_message("sched_switch: %s\n", v);
    assert_non_null(strstr(v, "MPROF_SCHED_SWITCH=0"));
    assert_non_null(strstr(info(path, "system.cpu_usage.source", v, sizeof v), "/proc/stat"));
    tu_counts c;
    assert_int_equal(tu_count_capture(path, &c), 0);
    assert_true(c.by_type[MPROF_EV_SYS_SWITCH] > 0);
    assert_int_equal(c.by_type[MPROF_EV_SYS_WAKE], 0);
    assert_int_equal(c.by_type[MPROF_EV_SYS_CPU_CORE], 0);
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sleep_versus_compute),
        cmocka_unit_test(test_refused_by_seccomp),
        cmocka_unit_test(test_turned_off),
        cmocka_unit_test(test_threads_and_exit),
        cmocka_unit_test(test_sched_tracepoints),
        cmocka_unit_test(test_sched_turned_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
