/*
 * memory.c - the memory a capture pins and maps: locked memory for the perf rings, and
 * transparent huge pages for the live-capture history ring.
 *
 * The kernel charges a perf ring's pages first to a per-user allowance (perf_event_mlock_kb on
 * each online CPU) and the rest to the process's RLIMIT_MEMLOCK, unless the process has
 * CAP_IPC_LOCK or perf_event_paranoid is -1. The runtime maps one ring per traced thread and
 * halves a ring that does not fit, down to 2 data pages, before it gives up on the thread (which
 * the capture then counts as untraced).
 */
#include "doctor/internal.h"

#include <stdlib.h>
#include <string.h>

#define TARGET_THREADS 64
#define SWITCH_RING_PAGES 17   /* 16 data pages and the control page */
#define SAMPLING_RING_PAGES 65 /* with MPROF_SAMPLE_HZ */

/* RLIMIT_MEMLOCK (soft) from /proc/self/limits in bytes; -1 unlimited, -2 unknown. */
static long long memlock_limit(const mprof_doctor_sys *sys)
{
    char buf[4096];
    if (doctor_read(sys, "/proc/self/limits", buf, sizeof buf) <= 0)
        return -2;
    const char *p = strstr(buf, "Max locked memory");
    if (!p)
        return -2;
    p += strlen("Max locked memory");
    while (*p == ' ')
        p++;
    if (strncmp(p, "unlimited", 9) == 0)
        return -1;
    char *end;
    long long v = strtoll(p, &end, 10);
    return end == p ? -2 : v;
}

void doctor_check_memlock(const mprof_doctor_sys *sys, const doctor_facts *f,
                          mprof_doctor_check *c)
{
    doctor_begin(c, "locked_memory", "Locked memory for the perf ring buffers");
    long mlock_kb = 0;
    int have_kb = doctor_read_long(sys, "/proc/sys/kernel/perf_event_mlock_kb", &mlock_kb) == 0;
    long long rl = memlock_limit(sys);
    long page_kib = sys->page_bytes / 1024 > 0 ? sys->page_bytes / 1024 : 4;
    if (doctor_has_cap(f, DOCTOR_CAP_IPC_LOCK) || f->paranoid == -1) {
        SAY(c, found, "%s: the perf rings are not limited",
            doctor_has_cap(f, DOCTOR_CAP_IPC_LOCK) ? "this process has CAP_IPC_LOCK"
                                                   : "perf_event_paranoid=-1");
        return;
    }
    long long per_user_kib = have_kb ? (long long)mlock_kb * f->online_cpus : 0;
    if (have_kb)
        SAY(c, found, "perf_event_mlock_kb=%ld on %ld CPU(s): %lld KiB per user for all its "
                      "processes; ", mlock_kb, f->online_cpus, per_user_kib);
    if (rl == -1) {
        SAY(c, found, "RLIMIT_MEMLOCK unlimited: the rings are not limited");
        return;
    }
    if (rl == -2)
        SAY(c, found, "RLIMIT_MEMLOCK unknown (no /proc/self/limits)");
    else
        SAY(c, found, "RLIMIT_MEMLOCK %lld KiB", rl / 1024);
    long long budget_kib = per_user_kib + (rl > 0 ? rl / 1024 : 0);
    long long sw = budget_kib / (SWITCH_RING_PAGES * page_kib);
    long long sa = budget_kib / (SAMPLING_RING_PAGES * page_kib);
    SAY(c, found, ". Room for %lld threads' context-switch rings (%ld KiB each) or %lld threads' "
                  "sampling rings (%ld KiB each)", sw, SWITCH_RING_PAGES * page_kib, sa,
        SAMPLING_RING_PAGES * page_kib);
    if (sw >= TARGET_THREADS && sa >= TARGET_THREADS)
        return;
    long long need_kib = (long long)TARGET_THREADS * SAMPLING_RING_PAGES * page_kib;
    c->status = sw >= 1 ? MPROF_DOCTOR_DEGRADED : MPROF_DOCTOR_MISSING;
    SAY(c, gives_up, "threads past those get smaller rings, which overflow sooner between the "
                     "10 ms polls (lost records are counted in the capture); a thread whose "
                     "smallest ring does not fit is not traced at all");
    SAY(c, fix, "ulimit -l unlimited in the shell that starts the program (for good: "
                "'* - memlock unlimited' in /etc/security/limits.d/mprof.conf), or sudo sysctl "
                "-w kernel.perf_event_mlock_kb=%lld (room for %d threads with sampling)",
        (need_kib + f->online_cpus - 1) / f->online_cpus, TARGET_THREADS);
}

void doctor_check_huge_pages(const mprof_doctor_sys *sys, const doctor_facts *f,
                             mprof_doctor_check *c)
{
    (void)f;
    doctor_begin(c, "huge_pages", "Huge pages for the history ring (live capture)");
    char mode[256] = "";
    int have = doctor_read(sys, "/sys/kernel/mm/transparent_hugepage/enabled", mode,
                           sizeof mode) > 0;
    const char *sel = have ? strchr(mode, '[') : NULL;
    char chosen[32] = "";
    if (sel) {
        const char *e = strchr(sel, ']');
        if (e && e - sel - 1 < (long)sizeof chosen)
            snprintf(chosen, sizeof chosen, "%.*s", (int)(e - sel - 1), sel + 1);
    }
    char rel[128] = "";
    doctor_read(sys, "/proc/sys/kernel/osrelease", rel, sizeof rel);
    rel[strcspn(rel, "\n")] = 0;
    int major = atoi(rel), minor = 0;
    const char *dot = strchr(rel, '.');
    if (dot)
        minor = atoi(dot + 1);
    int populate = major > 5 || (major == 5 && minor >= 14);
    int got = -1;
    if (!have) {
        SAY(c, found, "no /sys/kernel/mm/transparent_hugepage: this kernel has no transparent "
                      "huge pages");
    } else {
        SAY(c, found, "transparent_hugepage/enabled is %s", chosen[0] ? chosen : "unreadable");
        if (strcmp(chosen, "never") != 0 && sys->huge_pages_probe) {
            got = sys->huge_pages_probe();
            SAY(c, found, "; a 4 MiB mapping advised MADV_HUGEPAGE %s",
                got == 1 ? "got huge pages"
                         : got == 0 ? "got 4 KiB pages (memory too fragmented, or THP defrag "
                                      "off)"
                                    : "could not be checked");
        }
    }
    if (rel[0])
        SAY(c, found, "; kernel %s %s MADV_POPULATE_WRITE", rel,
            populate ? "has" : "lacks (before 5.14)");
    if (got == 1 && populate)
        return;
    c->status = MPROF_DOCTOR_DEGRADED;
    SAY(c, gives_up, "nothing is lost, but the history ring (MPROF_HISTORY_SECONDS, 5 s by "
                     "default) is faulted in 4 KiB at a time while the game runs: a fault "
                     "costs 0.1-20 us, far more on a virtual machine (docs/OVERHEAD.md)");
    if (!have || (!populate && got == 1))
        SAY(c, fix, "none from user space: a kernel with transparent huge pages%s",
            populate ? "" : " and Linux 5.14 or later");
    else if (strcmp(chosen, "never") == 0)
        SAY(c, fix, "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled");
    else
        SAY(c, fix, "echo defer+madvise | sudo tee /sys/kernel/mm/transparent_hugepage/defrag "
                    "(lets the kernel compact memory for advised mappings)");
}
