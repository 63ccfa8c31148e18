/*
 * kernel.c - the kernel interfaces of system tracing: perf_event_open and its ring buffers,
 * the perf clock, and /proc.
 *
 * The events use use_clockid with CLOCK_MONOTONIC_RAW, the clock the timer calibrates the tick
 * counter against (CLOCK_MONOTONIC when the timer is the OS clock), and each timestamp is
 * converted to ticks here, so SYS_* records are on the same clock as zones.
 */
#include "system/kernel.h"
#include "timer.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long page;
static unsigned char scratch[65536]; /* a record that wraps around the ring buffer */

int mprof__sys_clockid(void)
{
    return mprof__use_tsc ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC;
}

long mprof__sys_page(void)
{
    if (page <= 0) {
        page = sysconf(_SC_PAGESIZE);
        if (page <= 0)
            page = 4096;
    }
    return page;
}

int mprof__sys_perf_open(struct perf_event_attr *a, pid_t tid)
{
    return (int)syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

uint64_t mprof__sys_perf_ticks(uint64_t ns)
{
    if (!mprof__use_tsc)
        return ns; /* the OS-clock timer ticks in CLOCK_MONOTONIC nanoseconds */
    double d = (double)(int64_t)(ns - mprof__clock.mono0_ns) / mprof__clock.ns_per_tick;
    return mprof__clock.tick0 + (uint64_t)(int64_t)d;
}

int mprof__sys_read_paranoid(void)
{
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    int v = -100;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -100;
        fclose(f);
    }
    return v;
}

void mprof__sys_refusal(char *out, size_t n, const char *what, int err)
{
    int p = mprof__sys_read_paranoid();
    char par[64] = "";
    if (p != -100)
        snprintf(par, sizeof par, ", perf_event_paranoid=%d", p);
    snprintf(out, n, "%s: perf_event_open refused (%s%s)", what, strerror(err), par);
}

int mprof__sys_read_small(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = 0;
    return (int)got;
}

int mprof__sys_thread_state(uint64_t tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%" PRIu64 "/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *c = strrchr(buf, ')');
    return c && c[1] == ' ' && c[2] ? c[2] : '?';
}

void mprof__sys_drain_buf(unsigned char *base, size_t map_bytes, mprof__sys_record_fn fn,
                          void *ctx)
{
    if (!base)
        return;
    struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)base;
    long page_bytes = mprof__sys_page();
    unsigned char *data = base + page_bytes;
    uint64_t size = map_bytes - (size_t)page_bytes;
    uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = pg->data_tail;
    while (head - tail >= sizeof(struct perf_event_header)) {
        struct perf_event_header h;
        uint64_t off = tail % size;
        for (size_t i = 0; i < sizeof h; i++)
            ((unsigned char *)&h)[i] = data[(off + i) % size];
        if (h.size < sizeof h || h.size > head - tail)
            break;
        const struct perf_event_header *rec;
        if (off + h.size <= size) {
            rec = (const struct perf_event_header *)(data + off);
        } else {
            size_t first = (size_t)(size - off);
            memcpy(scratch, data + off, first);
            memcpy(scratch + first, data, h.size - first);
            rec = (const struct perf_event_header *)scratch;
        }
        if (((uintptr_t)rec & 7) != 0) {
            memcpy(scratch, rec, h.size);
            rec = (const struct perf_event_header *)scratch;
        }
        fn(ctx, rec);
        tail += h.size;
    }
    __atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}
