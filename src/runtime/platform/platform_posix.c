/*
 * platform_posix.c - the few operating-system services the library needs (Linux and other
 * POSIX systems): thread ids and names, clocks, directory creation, the program name.
 */
#include "platform/platform.h"

#include <pthread.h>
#include <string.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t mprof__os_tid(void)
{
#if defined(SYS_gettid)
    return (uint64_t)syscall(SYS_gettid);
#else
    return (uint64_t)(uintptr_t)pthread_self();
#endif
}

uint64_t mprof__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t mprof__real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int mprof__mkdirs_for(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

const char *mprof__program_name(void)
{
    return program_invocation_short_name;
}

void mprof__set_os_thread_name(const char *name)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%s", name);
    pthread_setname_np(pthread_self(), buf);
}

void mprof__log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "mprof: %s\n", line);
}

/* Memory that is written soon after it is allocated and kept (the history ring's chunks): mapped
 * on 2 MiB boundaries, asked for transparent huge pages, and populated writable at once.
 * Touching fresh 4 KiB pages one fault at a time costs ~11-20 us a page on this project's VM
 * (its hypervisor maps each page on first touch) and ~0.1-0.3 us on hardware; populating
 * huge pages up front costs ~0.4-0.9 us per 4 KiB here (docs/OVERHEAD.md). Each advice may be
 * refused (an older kernel, THP off): the memory is then ordinary and faults as usual. */
#define HUGE_BYTES ((size_t)2 << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

void *mprof__pages_alloc(size_t bytes)
{
    size_t len = (bytes + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
    unsigned char *m = mmap(NULL, len + HUGE_BYTES, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    /* Keep the aligned part: unmap the slack before and after it. */
    uintptr_t a = ((uintptr_t)m + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1);
    unsigned char *p = (unsigned char *)a;
    if (p > m)
        munmap(m, (size_t)(p - m));
    if (m + len + HUGE_BYTES > p + len)
        munmap(p + len, (size_t)(m + len + HUGE_BYTES - (p + len)));
#ifdef MADV_HUGEPAGE
    (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    (void)madvise(p, len, MADV_POPULATE_WRITE);
    return p;
}

void mprof__pages_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, (bytes + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1));
}

int mprof__socket_unacked(int fd, uint64_t *out_bytes)
{
#ifdef TIOCOUTQ
    /* On a TCP socket, Linux answers with the bytes sent but not acknowledged, plus those not
     * sent yet (write_seq - snd_una). */
    int n = 0;
    if (ioctl(fd, TIOCOUTQ, &n) == 0 && n >= 0) {
        *out_bytes = (uint64_t)n;
        return 0;
    }
#else
    (void)fd;
#endif
    *out_bytes = 0;
    return -1;
}
