/*
 * perf.c - perf events: what perf_event_paranoid and the capabilities allow, and whether the
 * three things the runtime opens really open here: the per-thread context-switch event, the
 * system-wide sched tracepoints, and the cpu-clock sampling event.
 *
 * Each probe builds the perf_event_attr the runtime builds (src/runtime/system/system.c,
 * sched.c) and opens it on this process, so a refusal here is the refusal a capture would get.
 */
#include "doctor/internal.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SWITCH_RING_PAGES 16 /* the runtime's per-thread ring: 16 data pages, 64 with sampling */

static const char *paranoid_meaning(int p)
{
    if (p >= 3)
        return "unprivileged processes may open no perf event at all (a Debian and Android "
               "setting)";
    if (p == 2)
        return "unprivileged processes may watch their own threads in user space (what the "
               "per-thread events need)";
    if (p == 1)
        return "unprivileged processes may watch their own threads, kernel included";
    if (p == 0)
        return "unprivileged processes may watch their threads and CPU-wide events, but not "
               "tracepoints";
    return "no restriction: any process may open system-wide events and tracepoints";
}

static void describe_privilege(const doctor_facts *f, mprof_doctor_check *c)
{
    if (f->uid == 0 && doctor_perf_privileged(f))
        SAY(c, found, "running as root");
    else if (doctor_has_cap(f, DOCTOR_CAP_PERFMON))
        SAY(c, found, "this process has CAP_PERFMON (or CAP_SYS_ADMIN)");
    else
        SAY(c, found, "uid %d without CAP_PERFMON", f->uid);
}

void doctor_check_perf(const mprof_doctor_sys *sys, const doctor_facts *f, mprof_doctor_check *c)
{
    (void)sys;
    doctor_begin(c, "perf_events", "perf events: kernel.perf_event_paranoid and privileges");
    if (f->paranoid == DOCTOR_NO_PERF) {
        c->status = MPROF_DOCTOR_MISSING;
        SAY(c, found, "no /proc/sys/kernel/perf_event_paranoid: this kernel has no perf events "
                      "(CONFIG_PERF_EVENTS off), or /proc is not mounted");
        SAY(c, gives_up, "context switches, CPU usage per thread, sched tracepoints and callstack "
                         "samples");
        SAY(c, fix, "none from user space: a kernel built with CONFIG_PERF_EVENTS=y (every "
                    "distribution kernel is)");
        return;
    }
    SAY(c, found, "perf_event_paranoid=%d: %s; ", f->paranoid, paranoid_meaning(f->paranoid));
    describe_privilege(f, c);
    if (doctor_perf_privileged(f)) {
        SAY(c, found, ", so the setting does not restrict it");
        return;
    }
    if (f->paranoid >= 3) {
        c->status = MPROF_DOCTOR_MISSING;
        SAY(c, gives_up, "context switches and callstack samples (a capture says "
                         "\"perf_event_open refused\" and records the rest)");
        doctor_fix_paranoid(c, 2);
        SAY(c, fix, "; or give the program CAP_PERFMON: sudo setcap cap_perfmon+ep ./your-game "
                    "(Linux 5.8+)");
    }
}

static void switch_attr(struct perf_event_attr *a, int sampling)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->config = sampling ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_DUMMY;
    if (sampling)
        a->sample_period = 1000000000ull / 1000; /* MPROF_SAMPLE_HZ=1000 */
    a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                     (sampling ? PERF_SAMPLE_CALLCHAIN : 0);
    a->context_switch = 1;
    a->task = 1;
    a->sample_id_all = 1;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->exclude_callchain_kernel = 1;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC_RAW;
    a->watermark = 1;
    a->wakeup_watermark = 1u << 30;
}

/* Opens attr on this process and maps a ring of pages data pages: 0, or -errno with the step
 * that failed in *what. */
static int try_open(const mprof_doctor_sys *sys, struct perf_event_attr *a, int pid, int cpu,
                    size_t pages, const char **what)
{
    *what = "perf_event_open";
    int fd = sys->perf_open(a, pid, cpu);
    if (fd < 0)
        return fd;
    int r = 0;
    if (pages) {
        *what = "mmap of its ring buffer";
        r = sys->perf_mmap(fd, (1 + pages) * (size_t)sys->page_bytes);
    }
    sys->close_fd(fd);
    return r;
}

static void refused(const doctor_facts *f, mprof_doctor_check *c, const char *what, int err)
{
    SAY(c, found, "%s refused: %s (errno %d)", what, strerror(err), err);
    if (f->paranoid != DOCTOR_NO_PERF)
        SAY(c, found, ", perf_event_paranoid=%d", f->paranoid);
}

/* The fix for a refused per-thread event. */
static void fix_per_thread(const doctor_facts *f, mprof_doctor_check *c, int err, const char *what)
{
    if (strcmp(what, "perf_event_open") != 0) {
        SAY(c, fix, "raise the locked-memory limit (see the locked_memory check)");
    } else if (f->paranoid >= 3 && !doctor_perf_privileged(f)) {
        doctor_fix_paranoid(c, 2);
    } else if (err == ENOSYS || err == EPERM || err == EACCES) {
        SAY(c, fix, "a container's seccomp profile may refuse perf_event_open: run it with "
                    "--cap-add PERFMON --security-opt seccomp=unconfined (docker), or outside "
                    "the container");
    } else if (err == ENOENT || err == EOPNOTSUPP) {
        SAY(c, fix, "none from user space: this kernel lacks the software event");
    } else {
        SAY(c, fix, "see perf_event_open(2) for %s", strerror(err));
    }
}

void doctor_check_switches(const mprof_doctor_sys *sys, const doctor_facts *f,
                           mprof_doctor_check *c)
{
    doctor_begin(c, "context_switches", "Context switches: per-thread perf events");
    struct perf_event_attr a;
    switch_attr(&a, 0);
    const char *what;
    int r = try_open(sys, &a, 0, -1, SWITCH_RING_PAGES, &what);
    if (r == 0) {
        SAY(c, found, "a per-thread software event with context_switch=1 opens and maps its "
                      "ring (%d pages): each thread's on- and off-CPU times are recorded",
            SWITCH_RING_PAGES + 1);
    } else {
        c->status = MPROF_DOCTOR_MISSING;
        refused(f, c, what, -r);
        SAY(c, gives_up, "when each thread ran and why it stopped (preempted or blocked), the "
                         "on-CPU share of every frame and zone, and CPU usage per thread");
        fix_per_thread(f, c, -r, what);
    }
    const char *off = sys->getenv ? sys->getenv("MPROF_CONTEXT_SWITCHES") : NULL;
    if (off && (strcmp(off, "0") == 0 || strcmp(off, "off") == 0)) {
        c->status = MPROF_DOCTOR_MISSING;
        SAY(c, found, "; MPROF_CONTEXT_SWITCHES=%s is set in this environment, which turns them "
                      "off", off);
        SAY(c, fix, "%sunset MPROF_CONTEXT_SWITCHES", c->fix[0] ? "; " : "");
        if (!c->gives_up[0])
            SAY(c, gives_up, "context switches, while the variable is set");
    }
}

static int find_tracefs(const mprof_doctor_sys *sys, char *dir, size_t n, long *id,
                        int *mounted_unreadable)
{
    static const char *const roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
    *mounted_unreadable = 0;
    for (size_t i = 0; i < 2; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/events/sched/sched_switch/id", roots[i]);
        if (doctor_read_long(sys, path, id) == 0) {
            snprintf(dir, n, "%s", roots[i]);
            return 1;
        }
    }
    /* A mounted tracefs whose files this user cannot read still shows in /proc/self/mounts. */
    char mounts[16384];
    if (doctor_read(sys, "/proc/self/mounts", mounts, sizeof mounts) > 0 &&
        strstr(mounts, " tracefs ")) {
        *mounted_unreadable = 1;
        const char *p = strstr(mounts, " tracefs ");
        const char *s = p;
        while (s > mounts && s[-1] != '\n')
            s--;
        const char *sp = strchr(s, ' ');
        if (sp && sp < p) {
            const char *e = p;
            snprintf(dir, n, "%.*s", (int)(e - sp - 1), sp + 1);
        }
    }
    return 0;
}

void doctor_check_sched(const mprof_doctor_sys *sys, const doctor_facts *f, mprof_doctor_check *c)
{
    doctor_begin(c, "sched_tracepoints", "Scheduler tracepoints: sched_switch, sched_waking");
    char dir[256] = "";
    long id = -1;
    int unreadable = 0;
    SAY(c, gives_up, "the exact reason each thread stopped (sleep, lock, I/O, yield), which "
                     "thread woke it, threads traced from their first instant, and exact CPU "
                     "usage per core; context switches then come from the per-thread events");
    const char *off = sys->getenv ? sys->getenv("MPROF_SCHED_SWITCH") : NULL;
    if (off && (strcmp(off, "0") == 0 || strcmp(off, "off") == 0)) {
        c->status = MPROF_DOCTOR_MISSING;
        SAY(c, found, "MPROF_SCHED_SWITCH=%s is set in this environment, which turns them off",
            off);
        SAY(c, fix, "unset MPROF_SCHED_SWITCH");
        return;
    }
    if (!find_tracefs(sys, dir, sizeof dir, &id, &unreadable)) {
        c->status = MPROF_DOCTOR_MISSING;
        if (unreadable) {
            SAY(c, found, "tracefs is mounted at %s but its sched events cannot be read by this "
                          "user (uid %d)", dir[0] ? dir : "(unknown)", f->uid);
            SAY(c, fix, "run the program as root, or let its user read the event ids: sudo "
                        "chmod -R go+rX %s/events (and give it CAP_PERFMON, below)",
                dir[0] ? dir : "/sys/kernel/tracing");
        } else {
            SAY(c, found, "tracefs is not mounted (no /sys/kernel/tracing/events/sched/"
                          "sched_switch; the library never mounts it)");
            SAY(c, fix, "sudo mount -t tracefs nodev /sys/kernel/tracing (after a reboot too: "
                        "add 'tracefs /sys/kernel/tracing tracefs defaults 0 0' to /etc/fstab)");
        }
        if (!doctor_perf_privileged(f) && f->paranoid > -1)
            SAY(c, fix, "; then sudo setcap cap_perfmon+ep ./your-game, or sudo sysctl -w "
                        "kernel.perf_event_paranoid=-1");
        return;
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_TRACEPOINT;
    a.config = (uint64_t)id;
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
    a.sample_id_all = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC_RAW;
    const char *what;
    int r = try_open(sys, &a, -1, 0, 0, &what);
    if (r == 0) {
        SAY(c, found, "tracefs at %s; a system-wide sched_switch event opens on CPU 0", dir);
        c->gives_up[0] = 0;
        return;
    }
    c->status = MPROF_DOCTOR_MISSING;
    SAY(c, found, "tracefs at %s, but ", dir);
    refused(f, c, "a system-wide sched_switch event", -r);
    SAY(c, fix, "run the program as root, or sudo setcap cap_perfmon+ep ./your-game (Linux "
                "5.8+), or sudo sysctl -w kernel.perf_event_paranoid=-1 (any process may then "
                "trace the whole machine)");
}

void doctor_check_sampling(const mprof_doctor_sys *sys, const doctor_facts *f,
                           mprof_doctor_check *c)
{
    doctor_begin(c, "sampling", "Callstack sampling: cpu-clock events with callchains");
    struct perf_event_attr a;
    switch_attr(&a, 1);
    const char *what;
    int r = try_open(sys, &a, 0, -1, 64, &what);
    long max_rate = 0, max_stack = 0;
    int have_rate = doctor_read_long(sys, "/proc/sys/kernel/perf_event_max_sample_rate",
                                     &max_rate) == 0;
    int have_stack = doctor_read_long(sys, "/proc/sys/kernel/perf_event_max_stack", &max_stack) == 0;
    if (r == 0) {
        SAY(c, found, "a cpu-clock event with PERF_SAMPLE_CALLCHAIN opens on a thread of this "
                      "process (MPROF_SAMPLE_HZ=N turns sampling on)");
    } else {
        c->status = MPROF_DOCTOR_MISSING;
        refused(f, c, what, -r);
        SAY(c, gives_up, "callstack samples (MPROF_SAMPLE_HZ): the hot functions inside zones "
                         "that have no sub-zones");
        fix_per_thread(f, c, -r, what);
    }
    if (have_rate)
        SAY(c, found, "; the kernel allows at most %ld samples per second per event "
                      "(kernel.perf_event_max_sample_rate)", max_rate);
    if (have_stack)
        SAY(c, found, " and %ld frames per stack", max_stack);
    if (r == 0 && have_rate && max_rate < 1000) {
        c->status = MPROF_DOCTOR_DEGRADED;
        SAY(c, gives_up, "sampling above %ld Hz is refused by the kernel", max_rate);
        SAY(c, fix, "sudo sysctl -w kernel.perf_event_max_sample_rate=10000");
    }
}
