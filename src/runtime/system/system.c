/*
 * system.c - context switches, CPU usage and callstack samples of the profiled process, recorded
 * by one background thread.
 *
 * The idea: Linux's perf_event_open gives a process its own threads' scheduling without root
 * (perf_event_paranoid <= 2). For every thread of the process (found in /proc/self/task, rescanned
 * every poll) the system thread opens one per-thread software event with context_switch = 1, so
 * the kernel writes a PERF_RECORD_SWITCH into the event's ring buffer each time the thread goes
 * on or off a CPU, with the CPU and whether it was preempted. When sampling is on
 * (MPROF_SAMPLE_HZ) the same event is a cpu-clock sampler with callchains, so one ring buffer per
 * thread carries both. The system thread wakes every POLL_MS, turns what the kernel wrote into
 * SYS_* records (records.c) and hands them to the collector as process-context records
 * (thread 0); every 100 ms it reads /proc/stat and /proc/self/stat for a SYS_CPU record (the
 * CPU-usage plot). Where the kernel allows the sched tracepoints, they replace the per-thread
 * switch records and /proc/stat (sched.c). The perf clock is converted to ticks (kernel.c), so
 * SYS_* records are on the same clock as zones.
 *
 * Threads that exist at startup are traced before mprof_startup returns; a thread that registers
 * with mprof later (its first event) asks for a scan at the next poll (at most POLL_MS late, more
 * on a loaded machine), other threads are found by the full rescan every SCAN_EVERY_MS; a thread
 * that exits is drained, ends with SYS_THREAD(end) at the kernel's exit time, and its event is
 * closed.
 * Whatever the kernel refuses (perf_event_open, mmap, /proc) is said in INFO and counted in END;
 * nothing else stops.
 */

#include "system/system.h"
#include "buffers.h"
#include "mprof/mprof.h"
#include "platform/platform.h"
#include "system/kernel.h"
#include "system/records.h"
#include "system/sched.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS 10
#define SCAN_EVERY_MS 100 /* full rescan; a thread registering with mprof asks for one sooner */
#define MAX_SAMPLE_HZ 10000

/* One traced thread. */
typedef struct traced {
    uint64_t tid;
    int fd;
    unsigned char *base; /* the mmap'ed ring buffer: a control page then data */
    size_t map_bytes;
    uint64_t exit_ticks; /* from PERF_RECORD_EXIT; 0 when not seen */
    uint32_t seen_scan;  /* last scan that listed the thread */
} traced;

static struct {
    /* decided by the probe, read-only while the thread runs */
    int switches_on, cpu_on, sampling_on;
    int sched_on; /* the sched tracepoints replace PERF_RECORD_SWITCH and /proc/stat */
    unsigned sample_hz;
    char switches_why[256], cpu_why[256], sampling_why[256];
    /* the thread */
    pthread_t thread;
    int running;
    _Atomic int stop;
    uint32_t seen_generation; /* mprof__thread_generation at the last poll */
    uint64_t self_tid;
    traced *t;
    size_t n, cap;
    uint32_t scan;
    size_t data_pages; /* per thread; halves when the kernel refuses the locked memory */
    uint64_t thread_cpu_ns; /* the system thread's own CPU time, for END */
    /* CPU usage */
    uint64_t last_total, last_busy, last_self;
    int have_last;
} S;

static void make_attr(struct perf_event_attr *a)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    if (S.sampling_on) {
        a->config = PERF_COUNT_SW_CPU_CLOCK;
        a->sample_period = 1000000000ull / S.sample_hz;
    } else {
        a->config = PERF_COUNT_SW_DUMMY;
    }
    a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                     (S.sampling_on ? PERF_SAMPLE_CALLCHAIN : 0);
    a->context_switch = S.switches_on && !S.sched_on ? 1 : 0;
    a->task = 1; /* PERF_RECORD_EXIT gives a thread's exit time */
    a->sample_id_all = 1;
    a->exclude_kernel = 1; /* what perf_event_paranoid 2 allows */
    a->exclude_hv = 1;
    a->exclude_callchain_kernel = 1;
    a->use_clockid = 1;
    a->clockid = mprof__sys_clockid();
    a->watermark = 1;
    a->wakeup_watermark = 1u << 30; /* the thread polls; the kernel never needs to wake it */
}

/* ---- the probe ------------------------------------------------------------------------------ */

static int env_off(const char *name)
{
    const char *v = getenv(name);
    return v && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "false") == 0 ||
                 strcmp(v, "no") == 0);
}

void mprof__system_probe(void)
{
    S.sched_on = 0;
    S.switches_on = !env_off("MPROF_CONTEXT_SWITCHES");
    S.cpu_on = !env_off("MPROF_CPU_USAGE");
    S.switches_why[0] = S.cpu_why[0] = S.sampling_why[0] = 0;
    if (!S.switches_on)
        snprintf(S.switches_why, sizeof S.switches_why, "turned off by MPROF_CONTEXT_SWITCHES=0");
    if (!S.cpu_on)
        snprintf(S.cpu_why, sizeof S.cpu_why, "turned off by MPROF_CPU_USAGE=0");
    const char *hz = getenv("MPROF_SAMPLE_HZ");
    long v = hz && *hz ? strtol(hz, NULL, 10) : 0;
    S.sample_hz = v <= 0 ? 0 : v > MAX_SAMPLE_HZ ? MAX_SAMPLE_HZ : (unsigned)v;
    S.sampling_on = S.sample_hz > 0;
    if (!S.sampling_on)
        snprintf(S.sampling_why, sizeof S.sampling_why, "off by default (MPROF_SAMPLE_HZ=N turns it on)");

    if (S.switches_on || S.sampling_on) {
        /* Try the exact event the thread will open, on this thread. */
        struct perf_event_attr a;
        make_attr(&a);
        int fd = mprof__sys_perf_open(&a, 0);
        if (fd < 0 && S.sampling_on && S.switches_on) {
            int e = errno;
            /* Sampling may be what is refused; try switches alone. */
            S.sampling_on = 0;
            make_attr(&a);
            fd = mprof__sys_perf_open(&a, 0);
            if (fd >= 0)
                mprof__sys_refusal(S.sampling_why, sizeof S.sampling_why, "sampling", e);
            else
                S.sampling_on = 1;
        }
        if (fd < 0) {
            int e = errno;
            if (S.switches_on)
                mprof__sys_refusal(S.switches_why, sizeof S.switches_why, "context switches", e);
            if (S.sampling_on)
                mprof__sys_refusal(S.sampling_why, sizeof S.sampling_why, "sampling", e);
            S.switches_on = S.sampling_on = 0;
        } else {
            close(fd);
        }
    }
    if (S.cpu_on) {
        FILE *f = fopen("/proc/stat", "r");
        if (!f) {
            S.cpu_on = 0;
            snprintf(S.cpu_why, sizeof S.cpu_why, "cannot read /proc/stat: %s", strerror(errno));
        } else {
            fclose(f);
        }
    }
    S.sched_on = mprof__sys_sched_probe(S.switches_on, S.cpu_on);
}

void mprof__system_info(mprof_buf *b)
{
    char v[32];
    mprof_fmt_kv(b, "system.context_switches", S.switches_on ? "on" : "off");
    if (!S.switches_on)
        mprof_fmt_kv(b, "system.context_switches.why_not", S.switches_why);
    mprof_fmt_kv(b, "system.cpu_usage", S.cpu_on ? "on" : "off");
    if (!S.cpu_on)
        mprof_fmt_kv(b, "system.cpu_usage.why_not", S.cpu_why);
    mprof_fmt_kv(b, "system.sampling", S.sampling_on ? "on" : "off");
    if (!S.sampling_on)
        mprof_fmt_kv(b, "system.sampling.why_not", S.sampling_why);
    snprintf(v, sizeof v, "%u", S.sampling_on ? S.sample_hz : 0);
    mprof_fmt_kv(b, "system.sample_hz", v);
    mprof_fmt_kv(b, "system.sched_switch", mprof__sys_sched_why());
    if (S.cpu_on)
        mprof_fmt_kv(b, "system.cpu_usage.source",
                     S.sched_on ? "sched_switch tracepoint (exact, per CPU: SYS_CPU_CORE)"
                                : "/proc/stat every 100 ms (10 ms ticks)");
    mprof_fmt_kv(b, "system.clock",
                 mprof__use_tsc ? "CLOCK_MONOTONIC_RAW, converted to ticks by the library"
                                : "CLOCK_MONOTONIC (the OS-clock timer's ticks)");
}

void mprof__system_end_info(mprof_buf *b)
{
    const mprof__sys_counts *c = &mprof__sys_count;
    char v[64];
    snprintf(v, sizeof v, "%" PRIu64, c->n_switches);
    mprof_fmt_kv(b, "system.switch_records", v);
    snprintf(v, sizeof v, "%" PRIu64, c->n_samples);
    mprof_fmt_kv(b, "system.samples", v);
    snprintf(v, sizeof v, "%" PRIu64, c->n_lost_records);
    mprof_fmt_kv(b, "system.lost_records", v);
    snprintf(v, sizeof v, "%" PRIu64, c->n_threads);
    mprof_fmt_kv(b, "system.threads_traced", v);
    snprintf(v, sizeof v, "%" PRIu64, c->n_untracked);
    mprof_fmt_kv(b, "system.threads_untraced", v);
    if (c->n_untracked)
        mprof_fmt_kv(b, "system.threads_untraced.why", c->untracked_why);
    snprintf(v, sizeof v, "%" PRIu64, S.thread_cpu_ns);
    mprof_fmt_kv(b, "system.thread_cpu_ns", v);
    snprintf(v, sizeof v, "%" PRIu64, c->n_dropped);
    mprof_fmt_kv(b, "system.records_dropped", v);
}

/* ---- ring buffers --------------------------------------------------------------------------- */

static void handle(traced *t, const struct perf_event_header *h)
{
    const unsigned char *body = (const unsigned char *)(h + 1);
    size_t len = h->size - sizeof *h;
    switch (h->type) {
    case PERF_RECORD_SWITCH: {
        if (len < sizeof(mprof__sys_sample_id))
            return;
        mprof__sys_sample_id id;
        memcpy(&id, body, sizeof id);
        int out = (h->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
        int reason = !out ? MPROF_SYS_REASON_UNKNOWN
                     : (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? MPROF_SYS_REASON_PREEMPTED
                                                                       : MPROF_SYS_REASON_BLOCKED;
        mprof__sys_rec_switch(mprof__sys_perf_ticks(id.time), t->tid,
                              out ? MPROF_SYS_OUT : MPROF_SYS_IN, reason, id.cpu);
        return;
    }
    case PERF_RECORD_SAMPLE: {
        /* pid, tid, time, cpu, res, nr, ips[nr] */
        if (len < 32)
            return;
        uint64_t time, nr;
        memcpy(&time, body + 8, 8);
        memcpy(&nr, body + 24, 8);
        if (nr > (len - 32) / 8)
            return;
        uint64_t ips[MPROF_FMT_MAX_CALLSTACK];
        unsigned n = 0;
        for (uint64_t i = 0; i < nr && n < MPROF_FMT_MAX_CALLSTACK; i++) {
            uint64_t ip;
            memcpy(&ip, body + 32 + 8 * i, 8);
            if (ip >= (uint64_t)PERF_CONTEXT_MAX)
                continue; /* a context marker (PERF_CONTEXT_USER), not an address */
            /* Readers treat every address as a return address and look up addr - 1; the first
             * is the sampled instruction itself, so it is stored + 1. */
            ips[n] = n == 0 ? ip + 1 : ip;
            n++;
        }
        if (n)
            mprof__sys_rec_sample(mprof__sys_perf_ticks(time), t->tid, ips, n);
        return;
    }
    case PERF_RECORD_LOST: {
        /* id, lost, sample_id */
        if (len < 16 + sizeof(mprof__sys_sample_id))
            return;
        uint64_t lost;
        mprof__sys_sample_id id;
        memcpy(&lost, body + 8, 8);
        memcpy(&id, body + 16, sizeof id);
        mprof__sys_rec_lost(mprof__sys_perf_ticks(id.time), t->tid, lost);
        return;
    }
    case PERF_RECORD_EXIT: {
        /* pid, ppid, tid, ptid, time, sample_id */
        if (len < 24)
            return;
        uint32_t tid;
        uint64_t time;
        memcpy(&tid, body + 8, 4);
        memcpy(&time, body + 16, 8);
        if (tid == t->tid)
            t->exit_ticks = mprof__sys_perf_ticks(time);
        return;
    }
    default:
        return;
    }
}

static void handle_thread(void *ctx, const struct perf_event_header *h)
{
    handle(ctx, h);
}

static void drain_ring(traced *t)
{
    mprof__sys_drain_buf(t->base, t->map_bytes, handle_thread, t);
}

static void trace_thread(uint64_t tid)
{
    if (S.n == S.cap) {
        size_t nc = S.cap ? S.cap * 2 : 16;
        traced *p = realloc(S.t, nc * sizeof *p);
        if (!p) {
            mprof__sys_untraced(tid, "out of memory", ENOMEM);
            return;
        }
        S.t = p;
        S.cap = nc;
    }
    struct perf_event_attr a;
    make_attr(&a);
    uint64_t ticks = mprof__ticks();
    int fd = mprof__sys_perf_open(&a, (pid_t)tid);
    if (fd < 0) {
        if (errno != ESRCH) /* gone already */
            mprof__sys_untraced(tid, "perf_event_open", errno);
        return;
    }
    void *m = MAP_FAILED;
    size_t bytes = 0;
    int err = 0;
    for (;;) {
        bytes = (1 + S.data_pages) * (size_t)mprof__sys_page();
        m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED)
            break;
        err = errno;
        /* Locked memory is limited per user (perf_event_mlock_kb): smaller buffers, polled as
         * often, hold fewer switches between polls but still work. */
        if (S.data_pages <= 2)
            break;
        S.data_pages /= 2;
    }
    if (m == MAP_FAILED) {
        close(fd);
        mprof__sys_untraced(tid, "mmap of the perf ring buffer", err);
        return;
    }
    traced *t = &S.t[S.n++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->fd = fd;
    t->base = m;
    t->map_bytes = bytes;
    t->seen_scan = S.scan;
    if (!S.sched_on) /* else the tracepoints say when the thread starts and ends */
        mprof__sys_rec_track_start(ticks, tid, mprof__sys_thread_state(tid));
}

static void untrace(size_t i, uint64_t ticks)
{
    traced *t = &S.t[i];
    drain_ring(t);
    if (!S.sched_on)
        mprof__sys_rec_thread(t->exit_ticks ? t->exit_ticks : ticks, t->tid, MPROF_SYS_TRACK_END,
                              0);
    munmap(t->base, t->map_bytes);
    close(t->fd);
    S.t[i] = S.t[--S.n];
}

static traced *find(uint64_t tid)
{
    for (size_t i = 0; i < S.n; i++)
        if (S.t[i].tid == tid)
            return &S.t[i];
    return NULL;
}

/* Starts tracing the threads that appeared since the last scan, and ends those that are gone. */
static void scan_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    S.scan++;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        uint64_t tid = strtoull(e->d_name, NULL, 10);
        if (tid == S.self_tid)
            continue;
        traced *t = find(tid);
        if (t)
            t->seen_scan = S.scan;
        else
            trace_thread(tid);
    }
    closedir(d);
    uint64_t now = mprof__ticks();
    for (size_t i = 0; i < S.n;) {
        if (S.t[i].seen_scan != S.scan)
            untrace(i, now);
        else
            i++;
    }
}

/* ---- CPU usage ------------------------------------------------------------------------------ */

static void cpu_sample(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return;
    unsigned long long v[8] = {0};
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                     &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (got < 4)
        return;
    uint64_t total = 0;
    for (int i = 0; i < 8; i++)
        total += v[i];
    uint64_t busy = total - v[3] - v[4]; /* minus idle and iowait */
    char buf[1024];
    f = fopen("/proc/self/stat", "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *c = strrchr(buf, ')');
    if (!c)
        return;
    /* Fields after the command: 3 state ... 14 utime 15 stime. */
    unsigned long long ut = 0, st = 0;
    c += 2;
    for (int field = 3; field < 14 && c; field++) {
        c = strchr(c, ' ');
        if (c)
            c++;
    }
    if (!c || sscanf(c, "%llu %llu", &ut, &st) != 2)
        return;
    uint64_t self = ut + st;
    if (S.have_last && total > S.last_total) {
        double dt = (double)(total - S.last_total);
        double other = (double)(busy - S.last_busy) - (double)(self - S.last_self);
        double mine = (double)(self - S.last_self);
        other = other < 0 ? 0 : other > dt ? dt : other;
        mine = mine < 0 ? 0 : mine > dt ? dt : mine;
        mprof__sys_rec_cpu(mprof__ticks(), other / dt, mine / dt);
    }
    S.last_total = total;
    S.last_busy = busy;
    S.last_self = self;
    S.have_last = 1;
}

/* ---- the thread ----------------------------------------------------------------------------- */

static void *system_main(void *arg)
{
    (void)arg;
    mprof__set_os_thread_name("mprof-system");
    S.self_tid = mprof__os_tid();
    if (S.sched_on)
        mprof__sys_sched_enter(S.self_tid);
    if (S.cpu_on && !S.sched_on)
        cpu_sample();
    /* the per-thread events: context switches without the tracepoints, and samples */
    int tracing = (S.switches_on && !S.sched_on) || S.sampling_on;
    uint64_t last_cpu = mprof__mono_ns(), last_scan = last_cpu;
    while (!atomic_load(&S.stop)) {
        if (tracing) {
            uint64_t t = mprof__mono_ns();
            /* A thread that registered with mprof since the last poll asks for a scan now. */
            uint32_t gen = atomic_load_explicit(&mprof__thread_generation, memory_order_relaxed);
            int registered = gen != S.seen_generation;
            S.seen_generation = gen;
            if (registered || t - last_scan >= SCAN_EVERY_MS * 1000000ull) {
                scan_threads();
                last_scan = t;
            }
            for (size_t i = 0; i < S.n; i++)
                drain_ring(&S.t[i]);
        }
        if (S.sched_on)
            mprof__sys_sched_poll();
        uint64_t now = mprof__mono_ns();
        if (S.cpu_on && !S.sched_on && now - last_cpu >= MPROF__SYS_CPU_EVERY_MS * 1000000ull) {
            cpu_sample();
            last_cpu = now;
        }
        mprof__sys_hand_over();
        struct timespec d = {0, POLL_MS * 1000000L};
        nanosleep(&d, NULL);
    }
    uint64_t now = mprof__ticks();
    while (S.n)
        untrace(S.n - 1, now);
    if (S.sched_on)
        mprof__sys_sched_stop(now);
    mprof__sys_hand_over();
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        S.thread_cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return NULL;
}

void mprof__system_start(void)
{
    if (S.running || (!S.switches_on && !S.sampling_on && !S.cpu_on))
        return;
    S.data_pages = S.sampling_on ? 64 : 16;
    S.thread_cpu_ns = 0;
    S.have_last = 0;
    S.scan = 0;
    S.self_tid = 0;
    atomic_store(&S.stop, 0);
    /* The threads that exist now are traced before startup returns, so that a zone begun
     * right after mprof_startup() is covered; later threads wait for the next scan. */
    mprof__sys_records_reset();
    if (S.sched_on)
        mprof__sys_sched_begin();
    if ((S.switches_on && !S.sched_on) || S.sampling_on)
        scan_threads();
    mprof__sys_hand_over();
    if (pthread_create(&S.thread, NULL, system_main, NULL) != 0) {
        mprof__log("cannot start the system-tracing thread; the capture has no system records");
        return;
    }
    S.running = 1;
}

void mprof__system_stop(void)
{
    if (!S.running)
        return;
    atomic_store(&S.stop, 1);
    pthread_join(S.thread, NULL);
    S.running = 0;
    free(S.t);
    S.t = NULL;
    S.n = S.cap = 0;
    mprof__sys_records_free();
}
