/*
 * sys.c - the real machine behind mprof_doctor_sys: perf_event_open, the ring buffer's mmap,
 * the CPU's counter and a huge-page probe of this process.
 */
#include "doctor/internal.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int real_perf_open(struct perf_event_attr *a, int pid, int cpu)
{
    int fd = (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

static int real_perf_mmap(int fd, size_t bytes)
{
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -errno;
    munmap(m, bytes);
    return 0;
}

static void real_close(int fd)
{
    close(fd);
}

static int real_counter_invariant(void)
{
#if defined(__x86_64__)
    uint32_t a, b, c, d;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
    if (a < 0x80000007u)
        return 0;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
    return (int)((d >> 8) & 1);
#elif defined(__aarch64__)
    return 1;
#else
    return -1;
#endif
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* What the runtime's history ring does (mprof__pages_alloc): 2 MiB-aligned anonymous memory
 * advised MADV_HUGEPAGE and populated writable, then /proc/self/smaps says whether the kernel
 * backed it with huge pages. */
static int real_huge_pages_probe(void)
{
    const size_t huge = (size_t)2 << 20, len = 2 * huge;
    unsigned char *m = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    if (m == MAP_FAILED)
        return -1;
    unsigned char *p = (unsigned char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
    int result = -1;
#ifdef MADV_HUGEPAGE
    if (madvise(p, len, MADV_HUGEPAGE) == 0) {
        if (madvise(p, len, MADV_POPULATE_WRITE) != 0)
            memset(p, 1, len);
        FILE *f = fopen("/proc/self/smaps", "r");
        if (f) {
            char line[512];
            int in = 0;
            result = 0;
            while (fgets(line, sizeof line, f)) {
                unsigned long lo, hi;
                if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
                    in = lo <= (uintptr_t)p && (uintptr_t)p < hi;
                else if (in && strncmp(line, "AnonHugePages:", 14) == 0)
                    result = strtol(line + 14, NULL, 10) > 0 ? 1 : result;
            }
            fclose(f);
        }
    }
#endif
    munmap(m, len + huge);
    return result;
}

static const char *real_getenv(const char *name)
{
    return getenv(name);
}

void mprof_doctor_sys_default(mprof_doctor_sys *sys)
{
    memset(sys, 0, sizeof *sys);
    sys->root = "";
    sys->perf_open = real_perf_open;
    sys->perf_mmap = real_perf_mmap;
    sys->close_fd = real_close;
    sys->counter_invariant = real_counter_invariant;
    sys->huge_pages_probe = real_huge_pages_probe;
    sys->getenv = real_getenv;
    long page = sysconf(_SC_PAGESIZE);
    sys->page_bytes = page > 0 ? page : 4096;
}
