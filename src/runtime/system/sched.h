/*
 * sched.h - context switches from the kernel's sched tracepoints (sched.c), where the process
 * may open them: exact switch reasons, wake-ups with their waker, threads from birth to death,
 * and exact per-CPU usage. Otherwise system.c falls back to per-thread PERF_RECORD_SWITCH and
 * /proc/stat. The probe runs under the lifecycle lock; the rest on the system thread.
 */
#ifndef MPROF_SYSTEM_SCHED_H
#define MPROF_SYSTEM_SCHED_H

#include <stdint.h>

/* Decides whether the tracepoints are used (switches_on: context switches are wanted at all;
 * cpu_on: the CPU-usage plot is wanted, and then comes from the tracepoints too) and, when
 * they are, opens them on every CPU so that the process's threads are covered as soon as
 * startup returns. 1 when they are used. */
int mprof__sys_sched_probe(int switches_on, int cpu_on);
/* What INFO says of them: "on (...)" or "not used: <why>". */
const char *mprof__sys_sched_why(void);
/* At start, before the system thread runs: the process's threads now. */
void mprof__sys_sched_begin(void);
/* First thing on the system thread (self_tid: its id, never traced): runs once on every CPU
 * it may, so that each CPU switches and the usage figures know who ran there. */
void mprof__sys_sched_enter(uint64_t self_tid);
/* Reads every CPU's buffer and turns what is old enough into records. */
void mprof__sys_sched_poll(void);
/* Reads the rest, ends every live thread's track at ticks and closes the events. */
void mprof__sys_sched_stop(uint64_t ticks);

#endif
