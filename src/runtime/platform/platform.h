/*
 * platform.h - the few operating-system services the runtime needs (platform_posix.c): thread
 * ids and names, clocks, directories, page-backed memory, the program name and the log line.
 *
 * Every other module reaches the operating system for these through here, so a port touches
 * this folder only. None of them is called on the zone hot path.
 */
#ifndef MPROF_PLATFORM_H
#define MPROF_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* The calling thread's kernel id. Any thread. */
uint64_t mprof__os_tid(void);
/* CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds. Any thread. */
uint64_t mprof__mono_ns(void);
uint64_t mprof__real_ns(void);
/* Creates the parent directories of path. 0, or -1 with errno set. */
int mprof__mkdirs_for(const char *path);
/* Page-aligned memory populated up front (huge pages where the kernel allows): for large
 * buffers written right away and kept, whose page faults would cost more than the data. NULL
 * when out of memory. The caller frees it with mprof__pages_free and the same size. */
void *mprof__pages_alloc(size_t bytes);
void mprof__pages_free(void *p, size_t bytes);
/* The program's short name (the default app name). */
const char *mprof__program_name(void);
/* Names the calling thread for debuggers and top (truncated to 15 bytes). */
void mprof__set_os_thread_name(const char *name);
/* The bytes written to the TCP socket fd that its peer has not acknowledged yet (TIOCOUTQ).
 * 0, or -1 when the system cannot say. Any thread. */
int mprof__socket_unacked(int fd, uint64_t *out_bytes);

/* Logs a line on stderr: "mprof: ..." (used rarely, never on the hot path). Any thread. */
void mprof__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
