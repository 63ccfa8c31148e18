/*
 * doctor.h - what this machine allows a capture: `mprof doctor`.
 *
 * A capture is only as complete as the kernel lets it be: the invariant counter that stamps
 * zones, perf events for context switches and samples, the sched tracepoints for switch reasons
 * and wakers, locked memory for the perf rings, huge pages for the history ring. The library
 * probes each of them the way the runtime will (the same perf_event_attr, the same files), and
 * says for each what it found, what a capture gives up without it, and the exact command that
 * enables it.
 *
 * The tool side never links the runtime, so the probes here are written again, from the same
 * facts: docs/SYSTEM.md and src/runtime/system/ say what the runtime opens. Everything the probes
 * read or try goes through an mprof_doctor_sys, so tests give them a machine of their own (a
 * folder standing in for /proc and /sys, and a perf_event_open that answers what they choose).
 *
 * Threads: one at a time (the checks read and write their own out array only).
 */
#ifndef MPROF_DOCTOR_H
#define MPROF_DOCTOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A check's verdict. OK: a capture has all of it. DEGRADED: a capture is complete but costs
 * more, or keeps less history (the command still exits 0). MISSING: a capture lacks something
 * (the command exits 1). */
typedef enum mprof_doctor_status {
    MPROF_DOCTOR_OK = 1,
    MPROF_DOCTOR_DEGRADED = 2,
    MPROF_DOCTOR_MISSING = 3
} mprof_doctor_status;

typedef struct mprof_doctor_check {
    const char *id;    /* stable: "clock", "perf_events", ... (the JSON key) */
    const char *title; /* a short heading */
    mprof_doctor_status status;
    char found[640];    /* what this machine has, in words */
    char gives_up[512]; /* what a capture lacks or pays without it; "" when OK */
    char fix[640];      /* the command that enables it; "" when OK or when nothing can */
} mprof_doctor_check;

/* How the checks see the machine. mprof_doctor_sys_default fills the real one. */
struct perf_event_attr;
typedef struct mprof_doctor_sys {
    const char *root; /* prefix of every /proc and /sys path read; "" = this machine */
    /* Reads path (with root before it) into buf, NUL-terminated, at most n - 1 bytes: the
     * length, or -1. NULL: the file itself (fuzz/fuzz_doctor.c gives made-up contents). */
    int (*read_file)(const char *path, char *buf, size_t n);
    /* perf_event_open(attr, pid, cpu): a file descriptor, or -errno. */
    int (*perf_open)(struct perf_event_attr *attr, int pid, int cpu);
    /* mmap of bytes of a perf event's ring buffer, unmapped at once: 0 or -errno. */
    int (*perf_mmap)(int fd, size_t bytes);
    void (*close_fd)(int fd);
    /* 1 when the CPU's counter is invariant (CPUID 0x80000007 EDX bit 8 on x86-64; arm64's
     * generic timer is constant-rate), 0 when not, -1 on a CPU mprof has no counter for. */
    int (*counter_invariant)(void);
    /* 1 when a 4 MiB anonymous mapping advised MADV_HUGEPAGE got huge pages once populated,
     * 0 when it did not, -1 when that cannot be told. */
    int (*huge_pages_probe)(void);
    const char *(*getenv)(const char *name);
    long page_bytes;
} mprof_doctor_sys;

void mprof_doctor_sys_default(mprof_doctor_sys *sys);

#define MPROF_DOCTOR_MAX_CHECKS 8

/* Runs every check into out (MPROF_DOCTOR_MAX_CHECKS entries); returns how many. */
size_t mprof_doctor_run(const mprof_doctor_sys *sys, mprof_doctor_check *out);
/* 1 when no check is MISSING: everything a full capture needs is there. */
int mprof_doctor_ready(const mprof_doctor_check *checks, size_t n);
/* The checks as text (one block each) or as one JSON object (schema mprof.doctor.v1,
 * docs/DOCTOR.md). */
void mprof_doctor_print_text(FILE *out, const mprof_doctor_check *checks, size_t n);
void mprof_doctor_print_json(FILE *out, const mprof_doctor_check *checks, size_t n);
const char *mprof_doctor_status_name(mprof_doctor_status s);

#endif
