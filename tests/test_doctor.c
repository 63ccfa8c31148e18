/*
 * test_doctor.c - `mprof doctor` on machines made up for the test (a folder standing in for
 * /proc and /sys, and a perf_event_open that answers what each case chooses), then the real
 * command on this machine.
 */
#include "test_util.h"
#include "doctor/doctor.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the made-up machine ------------------------------------------------------------------ */

static char root[512];
static int open_result;     /* what every perf_event_open returns */
static int tracepoint_result; /* what a PERF_TYPE_TRACEPOINT open returns */
static int mmap_result;
static int invariant;
static int huge_result;
static const char *env_name, *env_value;

#include <linux/perf_event.h>

static int fake_open(struct perf_event_attr *a, int pid, int cpu)
{
    (void)pid;
    (void)cpu;
    return a->type == PERF_TYPE_TRACEPOINT ? tracepoint_result : open_result;
}

static int fake_mmap(int fd, size_t bytes)
{
    (void)fd;
    (void)bytes;
    return mmap_result;
}

static void fake_close(int fd)
{
    (void)fd;
}

static int fake_invariant(void)
{
    return invariant;
}

static int fake_huge(void)
{
    return huge_result;
}

static const char *fake_getenv(const char *name)
{
    return env_name && strcmp(name, env_name) == 0 ? env_value : NULL;
}

static void put(const char *path, const char *text)
{
    char full[1024];
    snprintf(full, sizeof full, "%s%s", root, path);
    for (char *s = full + strlen(root) + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(full, 0755);
            *s = '/';
        }
    FILE *f = fopen(full, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A Debian desktop as a user finds it: perf_event_paranoid 3, no tracefs, THP never, a virtual
 * machine that hides the invariant-counter bit. */
static void machine_debian(void)
{
    snprintf(root, sizeof root, "%s", tu_temp_path("doctor_root"));
    mkdir(root, 0755);
    put("/proc/sys/kernel/perf_event_paranoid", "3\n");
    put("/proc/sys/kernel/perf_event_mlock_kb", "516\n");
    put("/proc/sys/kernel/perf_event_max_sample_rate", "100000\n");
    put("/proc/sys/kernel/perf_event_max_stack", "127\n");
    put("/proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
    put("/proc/self/status", "Name:\tmprof\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n");
    put("/proc/self/limits", "Limit                     Soft Limit           Hard Limit           Units\n"
                             "Max locked memory         8388608              8388608              bytes\n");
    put("/proc/self/mounts", "proc /proc proc rw 0 0\n");
    put("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n");
    put("/sys/devices/system/cpu/online", "0-3\n");
    put("/sys/devices/system/clocksource/clocksource0/current_clocksource", "kvm-clock\n");
    put("/sys/devices/system/clocksource/clocksource0/available_clocksource", "kvm-clock tsc acpi_pm\n");
    put("/sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n");
    open_result = tracepoint_result = -EACCES;
    mmap_result = 0;
    invariant = 0;
    huge_result = 0;
    env_name = env_value = NULL;
}

/* A machine where everything works: root, tracefs mounted, invariant counter. */
static void machine_full(void)
{
    machine_debian();
    put("/proc/sys/kernel/perf_event_paranoid", "2\n");
    put("/proc/self/status", "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n");
    put("/sys/kernel/tracing/events/sched/sched_switch/id", "316\n");
    put("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n");
    put("/sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
    open_result = tracepoint_result = 5;
    invariant = 1;
    huge_result = 1;
}

static mprof_doctor_check checks[MPROF_DOCTOR_MAX_CHECKS];
static size_t n_checks;

static void run(void)
{
    mprof_doctor_sys sys;
    mprof_doctor_sys_default(&sys);
    sys.root = root;
    sys.perf_open = fake_open;
    sys.perf_mmap = fake_mmap;
    sys.close_fd = fake_close;
    sys.counter_invariant = fake_invariant;
    sys.huge_pages_probe = fake_huge;
    sys.getenv = fake_getenv;
    sys.page_bytes = 4096;
    n_checks = mprof_doctor_run(&sys, checks);
    assert_int_equal(n_checks, 7);
}

static const mprof_doctor_check *get(const char *id)
{
    for (size_t i = 0; i < n_checks; i++)
        if (strcmp(checks[i].id, id) == 0)
            return &checks[i];
    fail_msg("no check %s", id);
    return &checks[0]; /* not reached: fail_msg ends the test */
}

#define HAS(field, text)                                                                           \
    do {                                                                                           \
        if (!strstr((field), (text)))                                                              \
            fail_msg("'%s' not in '%s'", (text), (field));                                         \
    } while (0)

static void test_debian_defaults(void **state)
{
    (void)state;
    machine_debian();
    run();
    const mprof_doctor_check *c = get("clock");
    assert_int_equal(c->status, MPROF_DOCTOR_DEGRADED);
    HAS(c->found, "kvm-clock");
    HAS(c->fix, "MPROF_NO_INVARIANT_CHECK=1");
    c = get("perf_events");
    assert_int_equal(c->status, MPROF_DOCTOR_MISSING);
    HAS(c->found, "perf_event_paranoid=3");
    HAS(c->fix, "sudo sysctl -w kernel.perf_event_paranoid=2");
    HAS(c->fix, "/etc/sysctl.d/");
    HAS(c->fix, "setcap cap_perfmon+ep");
    c = get("context_switches");
    assert_int_equal(c->status, MPROF_DOCTOR_MISSING);
    HAS(c->found, "perf_event_open refused: Permission denied");
    HAS(c->gives_up, "preempted or blocked");
    HAS(c->fix, "kernel.perf_event_paranoid=2");
    c = get("sched_tracepoints");
    assert_int_equal(c->status, MPROF_DOCTOR_MISSING);
    HAS(c->found, "tracefs is not mounted");
    HAS(c->fix, "sudo mount -t tracefs nodev /sys/kernel/tracing");
    HAS(c->fix, "cap_perfmon");
    c = get("sampling");
    assert_int_equal(c->status, MPROF_DOCTOR_MISSING);
    HAS(c->gives_up, "MPROF_SAMPLE_HZ");
    c = get("locked_memory");
    /* 516 KiB x 4 CPUs + 8 MiB: 10256 KiB, 150 rings of 68 KiB, 39 of 260 KiB. */
    assert_int_equal(c->status, MPROF_DOCTOR_DEGRADED);
    HAS(c->found, "Room for 150 threads' context-switch rings");
    HAS(c->found, "39 threads' sampling rings");
    HAS(c->fix, "kernel.perf_event_mlock_kb=4160");
    c = get("huge_pages");
    assert_int_equal(c->status, MPROF_DOCTOR_DEGRADED);
    HAS(c->found, "never");
    HAS(c->fix, "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled");
    assert_false(mprof_doctor_ready(checks, n_checks));
}

static void test_full_machine(void **state)
{
    (void)state;
    machine_full();
    run();
    for (size_t i = 0; i < n_checks; i++) {
        if (checks[i].status != MPROF_DOCTOR_OK)
            fail_msg("%s: %s (%s)", checks[i].id, mprof_doctor_status_name(checks[i].status),
                     checks[i].found);
        assert_string_equal(checks[i].fix, "");
        assert_string_equal(checks[i].gives_up, "");
    }
    HAS(get("sched_tracepoints")->found, "/sys/kernel/tracing");
    HAS(get("locked_memory")->found, "CAP_IPC_LOCK");
    assert_true(mprof_doctor_ready(checks, n_checks));
}

/* A clocksource that the vDSO cannot read makes every timestamp a system call: missing. */
static void test_slow_clocksource(void **state)
{
    (void)state;
    machine_full();
    invariant = 0;
    put("/proc/cpuinfo", "flags\t\t: fpu tsc\n");
    put("/sys/devices/system/clocksource/clocksource0/current_clocksource", "hpet\n");
    put("/sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet acpi_pm\n");
    run();
    const mprof_doctor_check *c = get("clock");
    assert_int_equal(c->status, MPROF_DOCTOR_MISSING);
    HAS(c->gives_up, "system call");
    HAS(c->fix, "echo tsc | sudo tee /sys/devices/system/clocksource/clocksource0/current_clocksource");
    assert_false(mprof_doctor_ready(checks, n_checks));
}

/* perf_event_paranoid 2 as a user: per-thread events open; the tracepoints are refused. */
static void test_user_paranoid_2(void **state)
{
    (void)state;
    machine_full();
    put("/proc/sys/kernel/perf_event_paranoid", "2\n");
    put("/proc/self/status", "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n");
    put("/proc/self/limits", "Max locked memory         65536                65536                bytes\n");
    tracepoint_result = -EACCES;
    run();
    assert_int_equal(get("perf_events")->status, MPROF_DOCTOR_OK);
    assert_int_equal(get("context_switches")->status, MPROF_DOCTOR_OK);
    const mprof_doctor_check *c = get("sched_tracepoints");
    assert_int_equal(c->status, MPROF_DOCTOR_MISSING);
    HAS(c->found, "a system-wide sched_switch event refused: Permission denied");
    HAS(c->fix, "setcap cap_perfmon+ep");
    HAS(c->fix, "kernel.perf_event_paranoid=-1");
    c = get("locked_memory");
    /* 2064 + 64 KiB: 31 switch rings, 8 sampling rings. */
    HAS(c->found, "Room for 31 threads'");
    HAS(c->fix, "ulimit -l unlimited");
    assert_int_equal(c->status, MPROF_DOCTOR_DEGRADED);
}

/* A ring that cannot be mapped: the open works but the capture would have no switches. */
static void test_mmap_refused(void **state)
{
    (void)state;
    machine_full();
    put("/proc/self/status", "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n");
    mmap_result = -EPERM;
    run();
    const mprof_doctor_check *c = get("context_switches");
    assert_int_equal(c->status, MPROF_DOCTOR_MISSING);
    HAS(c->found, "mmap of its ring buffer refused: Operation not permitted");
    HAS(c->fix, "locked_memory");
}

/* Variables in the environment that turn parts off are said too. */
static void test_environment(void **state)
{
    (void)state;
    machine_full();
    env_name = "MPROF_CONTEXT_SWITCHES";
    env_value = "0";
    run();
    const mprof_doctor_check *c = get("context_switches");
    assert_int_equal(c->status, MPROF_DOCTOR_MISSING);
    HAS(c->fix, "unset MPROF_CONTEXT_SWITCHES");
    env_name = "MPROF_TIMER";
    env_value = "clock";
    run();
    c = get("clock");
    assert_int_equal(c->status, MPROF_DOCTOR_DEGRADED);
    HAS(c->fix, "unset MPROF_TIMER");
    /* Mounted but unreadable tracefs. */
    env_name = NULL;
    char p[1024];
    snprintf(p, sizeof p, "%s/sys/kernel/tracing/events/sched/sched_switch/id", root);
    remove(p);
    put("/proc/self/mounts", "tracefs /sys/kernel/tracing tracefs rw,relatime 0 0\n");
    run();
    c = get("sched_tracepoints");
    HAS(c->found, "mounted at /sys/kernel/tracing but its sched events cannot be read");
    HAS(c->fix, "chmod -R go+rX /sys/kernel/tracing/events");
}

/* No perf events in the kernel at all. */
static void test_no_perf(void **state)
{
    (void)state;
    machine_full();
    char p[1024];
    snprintf(p, sizeof p, "%s/proc/sys/kernel/perf_event_paranoid", root);
    remove(p);
    open_result = -ENOENT;
    run();
    const mprof_doctor_check *c = get("perf_events");
    assert_int_equal(c->status, MPROF_DOCTOR_MISSING);
    HAS(c->found, "CONFIG_PERF_EVENTS");
}

static void test_json(void **state)
{
    (void)state;
    machine_debian();
    run();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mprof_doctor_print_json(f, checks, n_checks);
    fclose(f);
    cJSON *doc = cJSON_Parse(buf);
    assert_non_null(doc);
    assert_string_equal(cJSON_GetObjectItem(doc, "schema")->valuestring, "mprof.doctor.v1");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(doc, "ready")));
    cJSON *arr = cJSON_GetObjectItem(doc, "checks");
    assert_int_equal(cJSON_GetArraySize(arr), 7);
    cJSON *first = cJSON_GetArrayItem(arr, 0);
    assert_string_equal(cJSON_GetObjectItem(first, "id")->valuestring, "clock");
    assert_string_equal(cJSON_GetObjectItem(first, "status")->valuestring, "degraded");
    cJSON_Delete(doc);
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    mprof_doctor_print_text(f, checks, n_checks);
    fclose(f);
    HAS(buf, "[MISSING ] Context switches");
    HAS(buf, "check(s) MISSING");
    free(buf);
}

/* The real command on this machine: its JSON and its exit status agree. */
static void test_command(void **state)
{
    (void)state;
    static char out[65536];
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s doctor --json", tu_mprof_bin());
    int rc = tu_run(cmd, out, sizeof out);
    cJSON *doc = cJSON_Parse(out);
    assert_non_null(doc);
    cJSON *ready = cJSON_GetObjectItem(doc, "ready");
    assert_true(cJSON_IsBool(ready));
    assert_int_equal(rc, cJSON_IsTrue(ready) ? 0 : 1);
    cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "checks"))
    {
        const char *st = cJSON_GetObjectItem(c, "status")->valuestring;
        assert_true(strcmp(st, "ok") == 0 || strcmp(st, "degraded") == 0 ||
                    strcmp(st, "missing") == 0);
        assert_true(strlen(cJSON_GetObjectItem(c, "found")->valuestring) > 0);
        if (strcmp(st, "ok") != 0)
            assert_true(strlen(cJSON_GetObjectItem(c, "fix")->valuestring) > 0);
        n++;
    }
    assert_int_equal(n, 7);
    cJSON_Delete(doc);
    snprintf(cmd, sizeof cmd, "%s doctor", tu_mprof_bin());
    rc = tu_run(cmd, out, sizeof out);
    assert_true(rc == 0 || rc == 1);
    HAS(out, "] Clock:");
    snprintf(cmd, sizeof cmd, "%s doctor --bogus 2>&1", tu_mprof_bin());
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s doctor some.mprof 2>&1", tu_mprof_bin());
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s doctor --help", tu_mprof_bin());
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    HAS(out, "usage: mprof doctor");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_debian_defaults), cmocka_unit_test(test_full_machine),
        cmocka_unit_test(test_slow_clocksource), cmocka_unit_test(test_user_paranoid_2),
        cmocka_unit_test(test_mmap_refused),    cmocka_unit_test(test_environment),
        cmocka_unit_test(test_no_perf),         cmocka_unit_test(test_json),
        cmocka_unit_test(test_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
