/*
 * kernel.h - what system tracing asks of the kernel (kernel.c): perf_event_open and reading its
 * ring buffers, the perf clock in the profiler's ticks, and small /proc reads.
 * System thread only (and the probe, under the lifecycle lock).
 */
#ifndef MPROF_SYSTEM_KERNEL_H
#define MPROF_SYSTEM_KERNEL_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The sample_id trailer of non-sample records (sample_type TID | TIME | CPU). */
typedef struct mprof__sys_sample_id {
    uint32_t pid, tid;
    uint64_t time;
    uint32_t cpu, res;
} mprof__sys_sample_id;

/* perf_event_open for thread tid (0: the calling thread) on any CPU, close-on-exec. */
int mprof__sys_perf_open(struct perf_event_attr *a, pid_t tid);
/* The clock the events are stamped with: the one the timer calibrated its counter against
 * (CLOCK_MONOTONIC_RAW), or CLOCK_MONOTONIC when the timer is the OS clock. */
int mprof__sys_clockid(void);
/* perf time (ns of that clock) -> ticks, so that SYS_* records share the zones' clock. */
uint64_t mprof__sys_perf_ticks(uint64_t ns);
/* The page size, which perf ring buffers are counted in. */
long mprof__sys_page(void);

/* Receives one record of a ring buffer (complete, 8-byte aligned). */
typedef void (*mprof__sys_record_fn)(void *ctx, const struct perf_event_header *h);
/* Hands every complete record in the perf ring buffer mapped at base to fn and frees the
 * space. NULL base: nothing. */
void mprof__sys_drain_buf(unsigned char *base, size_t map_bytes, mprof__sys_record_fn fn,
                          void *ctx);

/* /proc/sys/kernel/perf_event_paranoid, or -100 when it cannot be read. */
int mprof__sys_read_paranoid(void);
/* Writes "<what>: perf_event_open refused (<err>, perf_event_paranoid=N)" into out. */
void mprof__sys_refusal(char *out, size_t n, const char *what, int err);
/* Reads a small file into buf (NUL-terminated). Returns its length, or -1. */
int mprof__sys_read_small(const char *path, char *buf, size_t n);
/* The thread's scheduler state letter from /proc (R running, S sleeping, D disk wait...), or
 * '?'. */
int mprof__sys_thread_state(uint64_t tid);

#endif
