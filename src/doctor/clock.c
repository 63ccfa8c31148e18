/*
 * clock.c - the clock zones are stamped with.
 *
 * The runtime reads the CPU's counter (rdtsc, cntvct_el0) when it is invariant, a few
 * nanoseconds and no system call per timestamp; otherwise CLOCK_MONOTONIC through the vDSO.
 * That fallback is still exact, but costs more per zone; and when the kernel's clocksource
 * cannot be read from user space (hpet, acpi_pm), every timestamp is a system call, which puts
 * the profiler's own cost inside every zone it measures.
 */
#include "doctor/internal.h"

#include <string.h>

/* Clocksources the vDSO reads without a system call. */
static int vdso_clocksource(const char *cs)
{
    static const char *const fast[] = {"tsc", "kvm-clock", "arch_sys_counter",
                                       "hyperv_clocksource_tsc_page", "xen"};
    for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++)
        if (strcmp(cs, fast[i]) == 0)
            return 1;
    return 0;
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = 0;
}

void doctor_check_clock(const mprof_doctor_sys *sys, const doctor_facts *f, mprof_doctor_check *c)
{
    (void)f;
    doctor_begin(c, "clock", "Clock: an invariant CPU counter for zone timestamps");
    char cs[128] = "", avail[256] = "";
    if (doctor_read(sys, "/sys/devices/system/clocksource/clocksource0/current_clocksource", cs,
                    sizeof cs) < 0)
        strcpy(cs, "unknown");
    doctor_read(sys, "/sys/devices/system/clocksource/clocksource0/available_clocksource", avail,
                sizeof avail);
    trim(cs);
    trim(avail);
    int inv = sys->counter_invariant ? sys->counter_invariant() : -1;
    const char *timer = sys->getenv ? sys->getenv("MPROF_TIMER") : NULL;
    const char *nocheck = sys->getenv ? sys->getenv("MPROF_NO_INVARIANT_CHECK") : NULL;
    int forced_os = timer && strcmp(timer, "clock") == 0;
    int skip_check = nocheck && strcmp(nocheck, "1") == 0;
    int counter = !forced_os && (inv == 1 || (inv == 0 && skip_check));

    if (counter) {
        SAY(c, found, "zones use the CPU counter (%s)%s; the kernel's clocksource is %s",
#if defined(__aarch64__)
            "cntvct_el0, constant-rate by the architecture",
#else
            inv == 1 ? "rdtsc, invariant: CPUID 0x80000007 EDX bit 8" : "rdtsc",
#endif
            inv == 1 ? "" : ", used because MPROF_NO_INVARIANT_CHECK=1 is set", cs);
        return;
    }
    if (forced_os)
        SAY(c, found, "MPROF_TIMER=clock is set: zones use CLOCK_MONOTONIC. ");
    else if (inv == 0)
        SAY(c, found, "the CPU does not report an invariant counter (CPUID 0x80000007 EDX bit 8 "
                      "clear): zones use CLOCK_MONOTONIC. ");
    else
        SAY(c, found, "mprof has no counter for this CPU: zones use CLOCK_MONOTONIC. ");
    SAY(c, found, "The kernel's clocksource is %s", cs);
    if (avail[0])
        SAY(c, found, " (available: %s)", avail);
    SAY(c, found, ".");

    if (vdso_clocksource(cs)) {
        c->status = MPROF_DOCTOR_DEGRADED;
        SAY(c, gives_up, "nothing is lost, but every timestamp is a vDSO clock read (tens of "
                         "nanoseconds) instead of a counter read, so a zone costs about twice "
                         "as much");
    } else {
        c->status = MPROF_DOCTOR_MISSING;
        SAY(c, gives_up, "clocksource %s is not readable from user space: every timestamp is a "
                         "system call (about a microsecond), which lands inside the zones it "
                         "measures and swamps short ones", cs);
    }
    if (forced_os) {
        SAY(c, fix, "unset MPROF_TIMER");
    } else {
        char cpuinfo[16384];
        int n = doctor_read(sys, "/proc/cpuinfo", cpuinfo, sizeof cpuinfo);
        int flags_ok = n > 0 && strstr(cpuinfo, " constant_tsc") && strstr(cpuinfo, " nonstop_tsc");
        if (inv == 0 && flags_ok)
            SAY(c, fix, "the kernel reports constant_tsc and nonstop_tsc, so the counter is "
                        "stable and only the CPUID bit is hidden (a virtual machine): run the "
                        "program with MPROF_NO_INVARIANT_CHECK=1");
        else if (!vdso_clocksource(cs) && strstr(avail, "tsc"))
            SAY(c, fix, "echo tsc | sudo tee "
                        "/sys/devices/system/clocksource/clocksource0/current_clocksource");
        else
            SAY(c, fix, "none on this machine: profile on hardware with an invariant counter "
                        "for the lowest overhead");
    }
}
