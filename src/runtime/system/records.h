/*
 * records.h - the SYS_* records of system tracing (records.c), written in raw form and handed
 * to the buffers' process queue after each poll, and the counts the END chunk reports about
 * them. System thread only (and mprof__system_start before the thread runs).
 */
#ifndef MPROF_SYSTEM_RECORDS_H
#define MPROF_SYSTEM_RECORDS_H

#include "visibility.h"

#include <stdint.h>

/* The CPU-usage window: one SYS_CPU (and SYS_CPU_CORE per CPU) record each. */
#define MPROF__SYS_CPU_EVERY_MS 100

/* What END says about system tracing; written here only, reset by mprof__sys_records_reset. */
typedef struct mprof__sys_counts {
    uint64_t n_switches, n_samples, n_lost_records, n_threads, n_untracked, n_dropped;
    char untracked_why[256]; /* the last thread that could not be traced, and why */
} mprof__sys_counts;

extern MPROF__HIDDEN mprof__sys_counts mprof__sys_count;

/* A new session: no records waiting, the counts restart (untracked_why stays until replaced). */
void mprof__sys_records_reset(void);
/* Frees the buffer (after the system thread was joined). */
void mprof__sys_records_free(void);
/* Hands the records written since the last call to the process queue; refused ones are
 * counted as dropped. */
void mprof__sys_hand_over(void);
/* Counts n records that could not be written (out of memory). */
void mprof__sys_dropped(uint64_t n);
/* Counts a thread that could not be traced and says why (what failed, errno). */
void mprof__sys_untraced(uint64_t tid, const char *what, int err);

void mprof__sys_rec_cpu(uint64_t ticks, double other, double self);
void mprof__sys_rec_cpu_core(uint64_t ticks, uint32_t cpu, double other, double self);
/* SYS_THREAD (what: MPROF_SYS_TRACK_START or _END, state: the /proc state letter). */
void mprof__sys_rec_thread(uint64_t ticks, uint64_t tid, int what, int state);
/* SYS_THREAD start of a newly traced thread, counted in n_threads. */
void mprof__sys_rec_track_start(uint64_t ticks, uint64_t tid, int state);
void mprof__sys_rec_switch(uint64_t ticks, uint64_t tid, int dir, int reason, uint32_t cpu);
void mprof__sys_rec_lost(uint64_t ticks, uint64_t tid, uint64_t n);
void mprof__sys_rec_sample(uint64_t ticks, uint64_t tid, const uint64_t *ips, unsigned n);
void mprof__sys_rec_wake(uint64_t ticks, uint64_t tid, uint64_t waker_tid, uint64_t waker_pid,
                         int ctx, uint32_t cpu);
void mprof__sys_rec_comm(uint64_t ticks, uint64_t tid, uint64_t pid, const char *comm);

#endif
