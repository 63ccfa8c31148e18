/*
 * internal.h - what the doctor's checks share: reading the machine's files through the
 * mprof_doctor_sys, the process's privileges, and filling a check.
 */
#ifndef MPROF_DOCTOR_INTERNAL_H
#define MPROF_DOCTOR_INTERNAL_H

#include "doctor/doctor.h"

#include <stdarg.h>

/* The capabilities that change what perf_event_open allows (bits of /proc/self/status CapEff). */
#define DOCTOR_CAP_IPC_LOCK 14
#define DOCTOR_CAP_SYS_ADMIN 21
#define DOCTOR_CAP_PERFMON 38

/* What the checks learn once and share. */
typedef struct doctor_facts {
    int paranoid;       /* kernel.perf_event_paranoid; DOCTOR_NO_PERF when the file is missing */
    uint64_t cap_eff;   /* effective capabilities */
    int have_caps;      /* cap_eff was read */
    int uid;            /* real uid, -1 when unknown */
    long online_cpus;   /* from /sys/devices/system/cpu/online; 1 when unknown */
} doctor_facts;
#define DOCTOR_NO_PERF (-100)

/* Reads root + path (at most n - 1 bytes, NUL-terminated) into buf; returns the length, or -1. */
int doctor_read(const mprof_doctor_sys *sys, const char *path, char *buf, size_t n);
/* The first integer of root + path into *out: 0, or -1 when it cannot be read. */
int doctor_read_long(const mprof_doctor_sys *sys, const char *path, long *out);
void doctor_learn(const mprof_doctor_sys *sys, doctor_facts *f);
/* True when the process has cap (or, for PERFMON, CAP_SYS_ADMIN, which older kernels ask). */
int doctor_has_cap(const doctor_facts *f, int cap);
/* True when perf_event_paranoid does not restrict this process (root or CAP_PERFMON). */
int doctor_perf_privileged(const doctor_facts *f);

void doctor_begin(mprof_doctor_check *c, const char *id, const char *title);
/* Appends to one of the check's texts. */
void doctor_say(char *field, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define SAY(c, field, ...) doctor_say((c)->field, sizeof (c)->field, __VA_ARGS__)

/* The checks, in the order they print. */
void doctor_check_clock(const mprof_doctor_sys *sys, const doctor_facts *f, mprof_doctor_check *c);
void doctor_check_perf(const mprof_doctor_sys *sys, const doctor_facts *f, mprof_doctor_check *c);
void doctor_check_switches(const mprof_doctor_sys *sys, const doctor_facts *f,
                           mprof_doctor_check *c);
void doctor_check_sched(const mprof_doctor_sys *sys, const doctor_facts *f, mprof_doctor_check *c);
void doctor_check_sampling(const mprof_doctor_sys *sys, const doctor_facts *f,
                           mprof_doctor_check *c);
void doctor_check_memlock(const mprof_doctor_sys *sys, const doctor_facts *f,
                          mprof_doctor_check *c);
void doctor_check_huge_pages(const mprof_doctor_sys *sys, const doctor_facts *f,
                             mprof_doctor_check *c);

/* The sysctl fix for perf_event_paranoid, now and after a reboot. */
void doctor_fix_paranoid(mprof_doctor_check *c, int value);

#endif
