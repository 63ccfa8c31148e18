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
 * SYS_* records and hands them to the collector as process-context records (thread 0); every
 * 100 ms it reads /proc/stat and /proc/self/stat for a SYS_CPU record (the CPU-usage plot).
 *
 * Clock: the events use use_clockid with CLOCK_MONOTONIC_RAW, the clock the timer calibrates the
 * tick counter against (CLOCK_MONOTONIC when the timer is the OS clock), and each timestamp is
 * converted to ticks here, so SYS_* records are on the same clock as zones.
 *
 * Threads that exist at startup are traced before mprof_startup returns; a thread that registers
 * with mprof later (its first event) asks for a scan at the next poll (at most POLL_MS late, more
 * on a loaded machine), other threads are found by the full rescan every SCAN_EVERY_MS; a thread that
 * exits is drained, ends with SYS_THREAD(end) at the kernel's exit time, and its event is closed.
 * Whatever the kernel refuses (perf_event_open, mmap, /proc) is said in INFO and counted in END;
 * nothing else stops.
 */

#include "system/system.h"
#include "buffers.h"
#include "platform/platform.h"
#include "timer.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS 10
#define CPU_EVERY_MS 100
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
    char switches_why[256], cpu_why[256], sampling_why[256], sched_why[512];
    /* the thread */
    pthread_t thread;
    int running;
    _Atomic int stop;
    uint32_t seen_generation; /* mprof__thread_generation at the last poll */
    uint64_t self_tid;
    traced *t;
    size_t n, cap;
    uint32_t scan;
    long page;
    size_t data_pages; /* per thread; halves when the kernel refuses the locked memory */
    /* counters for END */
    uint64_t n_switches, n_samples, n_lost_records, n_threads, n_untracked;
    uint64_t thread_cpu_ns, n_dropped;
    char untracked_why[256];
    /* raw records waiting to be handed to the collector */
    mprof_buf out;
    uint64_t out_records;
    /* CPU usage */
    uint64_t last_total, last_busy, last_self;
    int have_last;
    unsigned char scratch[65536]; /* a record that wraps around the ring buffer */
} S;

static int perf_open(struct perf_event_attr *a, pid_t tid)
{
    return (int)syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

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
    a->clockid = mprof__use_tsc ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC;
    a->watermark = 1;
    a->wakeup_watermark = 1u << 30; /* the thread polls; the kernel never needs to wake it */
}

/* perf time (ns of the event clock) -> ticks. */
static uint64_t perf_ticks(uint64_t ns)
{
    if (!mprof__use_tsc)
        return ns; /* the OS-clock timer ticks in CLOCK_MONOTONIC nanoseconds */
    double d = (double)(int64_t)(ns - mprof__clock.mono0_ns) / mprof__clock.ns_per_tick;
    return mprof__clock.tick0 + (uint64_t)(int64_t)d;
}

static int read_paranoid(void)
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

static void refusal(char *out, size_t n, const char *what, int err)
{
    int p = read_paranoid();
    char par[64] = "";
    if (p != -100)
        snprintf(par, sizeof par, ", perf_event_paranoid=%d", p);
    snprintf(out, n, "%s: perf_event_open refused (%s%s)", what, strerror(err), par);
}

/* ---- the sched tracepoints: finding them -------------------------------------------------- */

/* Where the tracepoints are allowed (tracefs mounted, system-wide per-CPU tracepoint events
 * permitted: root, CAP_PERFMON or perf_event_paranoid -1), one group of events per CPU replaces
 * the per-thread PERF_RECORD_SWITCH: sched_switch (every switch on the CPU, with the state the
 * thread left in), sched_waking (who woke whom), task_newtask / sched_process_exit (the
 * process's threads from birth to death) and, when the kernel has syscall tracepoints,
 * sys_enter/exit_sched_yield (so that a yield is told from a preemption). Field offsets come
 * from the events' format files. The library never mounts tracefs. */

enum { TP_SWITCH, TP_WAKING, TP_NEWTASK, TP_EXIT, TP_YIELD_IN, TP_YIELD_OUT, TP_N };
static const char *const tp_names[TP_N] = {
    "sched/sched_switch",       "sched/sched_waking",
    "task/task_newtask",        "sched/sched_process_exit",
    "syscalls/sys_enter_sched_yield", "syscalls/sys_exit_sched_yield"};

typedef struct tp_field {
    int off, size;
} tp_field;

enum {
    F_TYPE, F_FLAGS,                                                      /* common */
    F_SW_PREV_COMM, F_SW_PREV_PID, F_SW_PREV_STATE, F_SW_NEXT_COMM, F_SW_NEXT_PID, /* switch */
    F_WK_PID, F_WK_CPU,                                                   /* waking */
    F_NT_PID, F_NT_FLAGS,                                                 /* newtask */
    F_EX_PID,                                                             /* exit */
    F_N
};
static const struct {
    int tp;
    const char *name;
} tp_fields[F_N] = {
    {TP_SWITCH, "common_type"},  {TP_SWITCH, "common_flags"},  {TP_SWITCH, "prev_comm"},
    {TP_SWITCH, "prev_pid"},     {TP_SWITCH, "prev_state"},    {TP_SWITCH, "next_comm"},
    {TP_SWITCH, "next_pid"},     {TP_WAKING, "pid"},           {TP_WAKING, "target_cpu"},
    {TP_NEWTASK, "pid"},         {TP_NEWTASK, "clone_flags"},  {TP_EXIT, "pid"},
};

static struct {
    char dir[64];      /* .../tracing/events */
    int id[TP_N];      /* -1 when the kernel has no such event */
    tp_field f[F_N];
    int have_yield;
} TPD;

/* Reads a small file into buf (NUL-terminated). Returns its length, or -1. */
static int read_small(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = 0;
    return (int)got;
}

/* Finds "field:<decl> name[N];\toffset:O;\tsize:S;" in a format file. */
static int fmt_field(const char *text, const char *name, tp_field *out)
{
    size_t nl = strlen(name);
    for (const char *l = strstr(text, "field:"); l; l = strstr(l + 1, "field:")) {
        const char *semi = strchr(l, ';');
        if (!semi)
            return -1;
        const char *e = semi;
        const char *br = memchr(l, '[', (size_t)(semi - l));
        if (br)
            e = br;
        if ((size_t)(e - l) < nl || memcmp(e - nl, name, nl) != 0 ||
            (e - nl > l && ((e[-(long)nl - 1] >= 'a' && e[-(long)nl - 1] <= 'z') ||
                            e[-(long)nl - 1] == '_')))
            continue;
        const char *o = strstr(semi, "offset:"), *sz = strstr(semi, "size:");
        if (!o || !sz)
            return -1;
        out->off = atoi(o + 7);
        out->size = atoi(sz + 5);
        return out->off >= 0 && out->size > 0 && out->size <= 64 ? 0 : -1;
    }
    return -1;
}

/* Fills TPD and says in why why the tracepoints cannot be used (returns -1). */
static int tp_find(char *why, size_t n)
{
    static const char *const roots[] = {"/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events"};
    char path[256], buf[8192];
    TPD.dir[0] = 0;
    for (int i = 0; i < 2 && !TPD.dir[0]; i++) {
        snprintf(path, sizeof path, "%s/sched/sched_switch/id", roots[i]);
        if (access(path, R_OK) == 0)
            snprintf(TPD.dir, sizeof TPD.dir, "%s", roots[i]);
    }
    if (!TPD.dir[0]) {
        snprintf(why, n, "tracefs is not mounted or not readable (no /sys/kernel/tracing/events/"
                         "sched/sched_switch; the library never mounts it)");
        return -1;
    }
    for (int t = 0; t < TP_N; t++) {
        TPD.id[t] = -1;
        snprintf(path, sizeof path, "%s/%s/id", TPD.dir, tp_names[t]);
        if (read_small(path, buf, sizeof buf) > 0)
            TPD.id[t] = atoi(buf);
        if (TPD.id[t] < 0 && t < TP_YIELD_IN) {
            snprintf(why, n, "no tracepoint %s under %s", tp_names[t], TPD.dir);
            return -1;
        }
    }
    TPD.have_yield = TPD.id[TP_YIELD_IN] >= 0 && TPD.id[TP_YIELD_OUT] >= 0;
    int last = -1;
    for (int k = 0; k < F_N; k++) {
        int t = tp_fields[k].tp;
        if (t != last) {
            snprintf(path, sizeof path, "%s/%s/format", TPD.dir, tp_names[t]);
            if (read_small(path, buf, sizeof buf) <= 0) {
                snprintf(why, n, "cannot read %s: %s", path, strerror(errno));
                return -1;
            }
            last = t;
        }
        if (fmt_field(buf, tp_fields[k].name, &TPD.f[k]) != 0) {
            snprintf(why, n, "%s/format has no usable field %s", tp_names[t], tp_fields[k].name);
            return -1;
        }
    }
    return 0;
}

static void tp_attr(struct perf_event_attr *a, int id)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_TRACEPOINT;
    a->config = (uint64_t)id;
    a->sample_period = 1;
    a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
    a->sample_id_all = 1;
    a->use_clockid = 1;
    a->clockid = mprof__use_tsc ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC;
    a->watermark = 1;
    a->wakeup_watermark = 1u << 30;
}

static int tp_open(int id, int cpu)
{
    struct perf_event_attr a;
    tp_attr(&a, id);
    return (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Whether the tracepoint path can be used; sets S.sched_why either way. */
static int tp_probe(void)
{
    char why[384];
    const char *v = getenv("MPROF_SCHED_SWITCH");
    if (v && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0)) {
        snprintf(why, sizeof why, "turned off by MPROF_SCHED_SWITCH=0");
    } else if (tp_find(why, sizeof why) == 0) {
        int fd = tp_open(TPD.id[TP_SWITCH], (int)sched_getcpu() >= 0 ? sched_getcpu() : 0);
        if (fd >= 0) {
            close(fd);
            snprintf(S.sched_why, sizeof S.sched_why,
                     "on (%s: sched_switch, sched_waking, task_newtask, sched_process_exit%s)",
                     TPD.dir, TPD.have_yield ? ", sys_enter/exit_sched_yield"
                                             : "; no syscall tracepoints, so a yield counts "
                                               "as preempted");
            return 1;
        }
        int e = errno;
        int p = read_paranoid();
        snprintf(why, sizeof why,
                 "perf_event_open of the system-wide sched_switch tracepoint refused (%s, "
                 "perf_event_paranoid=%d; it needs root, CAP_PERFMON or perf_event_paranoid -1)",
                 strerror(e), p);
    }
    snprintf(S.sched_why, sizeof S.sched_why,
             "not used: %s; switch reasons come from PERF_RECORD_SWITCH (preempted, or blocked "
             "or yielded), with no waker",
             why);
    return 0;
}

static int tp_start(void);

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
    S.switches_why[0] = S.cpu_why[0] = S.sampling_why[0] = S.sched_why[0] = 0;
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
        int fd = perf_open(&a, 0);
        if (fd < 0 && S.sampling_on && S.switches_on) {
            int e = errno;
            /* Sampling may be what is refused; try switches alone. */
            S.sampling_on = 0;
            make_attr(&a);
            fd = perf_open(&a, 0);
            if (fd >= 0)
                refusal(S.sampling_why, sizeof S.sampling_why, "sampling", e);
            else
                S.sampling_on = 1;
        }
        if (fd < 0) {
            int e = errno;
            if (S.switches_on)
                refusal(S.switches_why, sizeof S.switches_why, "context switches", e);
            if (S.sampling_on)
                refusal(S.sampling_why, sizeof S.sampling_why, "sampling", e);
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
    if (S.switches_on && tp_probe()) {
        /* Opened now, so that INFO says what happens; tp_start says why not in S.sched_why
         * and context switches come from PERF_RECORD_SWITCH then. */
        S.page = sysconf(_SC_PAGESIZE);
        if (S.page <= 0)
            S.page = 4096;
        S.sched_on = tp_start() == 0;
    } else if (!S.switches_on) {
        snprintf(S.sched_why, sizeof S.sched_why, "not used: context switches are off");
    }
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
    mprof_fmt_kv(b, "system.sched_switch", S.sched_why);
    if (S.cpu_on)
        mprof_fmt_kv(b, "system.cpu_usage.source",
                     S.sched_on ? "sched_switch tracepoint (exact, per CPU: SYS_CPU_CORE)"
                                : "/proc/stat every 100 ms (10 ms ticks)");
    mprof_fmt_kv(b, "system.clock", mprof__use_tsc ? "CLOCK_MONOTONIC_RAW, converted to ticks by the library"
                                                   : "CLOCK_MONOTONIC (the OS-clock timer's ticks)");
}

void mprof__system_end_info(mprof_buf *b)
{
    char v[64];
    snprintf(v, sizeof v, "%" PRIu64, S.n_switches);
    mprof_fmt_kv(b, "system.switch_records", v);
    snprintf(v, sizeof v, "%" PRIu64, S.n_samples);
    mprof_fmt_kv(b, "system.samples", v);
    snprintf(v, sizeof v, "%" PRIu64, S.n_lost_records);
    mprof_fmt_kv(b, "system.lost_records", v);
    snprintf(v, sizeof v, "%" PRIu64, S.n_threads);
    mprof_fmt_kv(b, "system.threads_traced", v);
    snprintf(v, sizeof v, "%" PRIu64, S.n_untracked);
    mprof_fmt_kv(b, "system.threads_untraced", v);
    if (S.n_untracked)
        mprof_fmt_kv(b, "system.threads_untraced.why", S.untracked_why);
    snprintf(v, sizeof v, "%" PRIu64, S.thread_cpu_ns);
    mprof_fmt_kv(b, "system.thread_cpu_ns", v);
    snprintf(v, sizeof v, "%" PRIu64, S.n_dropped);
    mprof_fmt_kv(b, "system.records_dropped", v);
}

/* ---- records -------------------------------------------------------------------------------- */

/* Records are built in S.out (raw form) and handed to the collector after each poll as
 * process-context records: the system thread is not an instrumented thread, so captures have no
 * extra thread, name or exit because of it. */
static unsigned char *reserve(size_t n)
{
    if (mprof_buf_reserve(&S.out, n) != 0) {
        S.n_dropped++;
        return NULL;
    }
    return S.out.data + S.out.len;
}

static void commit(unsigned char *end)
{
    S.out.len = (size_t)(end - S.out.data);
    S.out_records++;
}

static void hand_over(void)
{
    if (!S.out.len)
        return;
    if (mprof__process_records(S.out.data, S.out.len, S.out_records) != 0)
        S.n_dropped += S.out_records;
    S.out.len = 0;
    S.out_records = 0;
}

static void rec_cpu(uint64_t ticks, double other, double self)
{
    unsigned char *p = reserve(25);
    if (!p)
        return;
    p[0] = MPROF_EV_SYS_CPU;
    p = mprof__w_u64(p + 1, ticks);
    p = mprof__w_f64(p, other);
    commit(mprof__w_f64(p, self));
}

static void rec_thread(uint64_t ticks, uint64_t tid, int what, int state)
{
    unsigned char *p = reserve(19);
    if (!p)
        return;
    p[0] = MPROF_EV_SYS_THREAD;
    p = mprof__w_u64(p + 1, ticks);
    p = mprof__w_u64(p, tid);
    p = mprof__w_u8(p, (uint8_t)what);
    commit(mprof__w_u8(p, (uint8_t)state));
}

static void rec_switch(uint64_t ticks, uint64_t tid, int dir, int reason, uint32_t cpu)
{
    unsigned char *p = reserve(23);
    if (!p)
        return;
    p[0] = MPROF_EV_SYS_SWITCH;
    p = mprof__w_u64(p + 1, ticks);
    p = mprof__w_u64(p, tid);
    p = mprof__w_u8(p, (uint8_t)dir);
    p = mprof__w_u8(p, (uint8_t)reason);
    commit(mprof__w_u32(p, cpu));
    S.n_switches++;
}

static void rec_lost(uint64_t ticks, uint64_t tid, uint64_t n)
{
    unsigned char *p = reserve(25);
    if (!p)
        return;
    p[0] = MPROF_EV_SYS_LOST;
    p = mprof__w_u64(p + 1, ticks);
    p = mprof__w_u64(p, tid);
    commit(mprof__w_u64(p, n));
    S.n_lost_records += n;
}

static void rec_sample(uint64_t ticks, uint64_t tid, const uint64_t *ips, unsigned n)
{
    if (n > MPROF_FMT_MAX_CALLSTACK)
        n = MPROF_FMT_MAX_CALLSTACK;
    unsigned char *p = reserve(18 + 8u * n);
    if (!p)
        return;
    p[0] = MPROF_EV_SYS_SAMPLE;
    p = mprof__w_u64(p + 1, ticks);
    p = mprof__w_u64(p, tid);
    p = mprof__w_u8(p, (uint8_t)n);
    for (unsigned i = 0; i < n; i++)
        p = mprof__w_u64(p, ips[i]);
    commit(p);
    S.n_samples++;
}

/* ---- ring buffers --------------------------------------------------------------------------- */

/* The sample_id trailer of non-sample records (sample_type TID | TIME | CPU). */
typedef struct sample_id {
    uint32_t pid, tid;
    uint64_t time;
    uint32_t cpu, res;
} sample_id;

static void handle(traced *t, const struct perf_event_header *h)
{
    const unsigned char *body = (const unsigned char *)(h + 1);
    size_t len = h->size - sizeof *h;
    switch (h->type) {
    case PERF_RECORD_SWITCH: {
        if (len < sizeof(sample_id))
            return;
        sample_id id;
        memcpy(&id, body, sizeof id);
        int out = (h->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
        int reason = !out ? MPROF_SYS_REASON_UNKNOWN
                     : (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? MPROF_SYS_REASON_PREEMPTED
                                                                       : MPROF_SYS_REASON_BLOCKED;
        rec_switch(perf_ticks(id.time), t->tid, out ? MPROF_SYS_OUT : MPROF_SYS_IN, reason, id.cpu);
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
            rec_sample(perf_ticks(time), t->tid, ips, n);
        return;
    }
    case PERF_RECORD_LOST: {
        /* id, lost, sample_id */
        if (len < 16 + sizeof(sample_id))
            return;
        uint64_t lost;
        sample_id id;
        memcpy(&lost, body + 8, 8);
        memcpy(&id, body + 16, sizeof id);
        rec_lost(perf_ticks(id.time), t->tid, lost);
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
            t->exit_ticks = perf_ticks(time);
        return;
    }
    default:
        return;
    }
}

typedef void (*record_fn)(void *ctx, const struct perf_event_header *h);

/* Hands every complete record in a perf ring buffer to fn and frees the space. */
static void drain_buf(unsigned char *base, size_t map_bytes, record_fn fn, void *ctx)
{
    if (!base)
        return;
    struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)base;
    unsigned char *data = base + S.page;
    uint64_t size = map_bytes - (size_t)S.page;
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
            memcpy(S.scratch, data + off, first);
            memcpy(S.scratch + first, data, h.size - first);
            rec = (const struct perf_event_header *)S.scratch;
        }
        if (((uintptr_t)rec & 7) != 0) {
            memcpy(S.scratch, rec, h.size);
            rec = (const struct perf_event_header *)S.scratch;
        }
        fn(ctx, rec);
        tail += h.size;
    }
    __atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

static void handle_thread(void *ctx, const struct perf_event_header *h)
{
    handle(ctx, h);
}

static void drain_ring(traced *t)
{
    drain_buf(t->base, t->map_bytes, handle_thread, t);
}

/* The thread's scheduler state letter from /proc (R running, S sleeping, D disk wait...). */
static int thread_state(uint64_t tid)
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

static void untraced(uint64_t tid, const char *what, int err)
{
    S.n_untracked++;
    snprintf(S.untracked_why, sizeof S.untracked_why, "thread %" PRIu64 ": %s: %s", tid, what,
             strerror(err));
}

static void trace_thread(uint64_t tid)
{
    if (S.n == S.cap) {
        size_t nc = S.cap ? S.cap * 2 : 16;
        traced *p = realloc(S.t, nc * sizeof *p);
        if (!p) {
            untraced(tid, "out of memory", ENOMEM);
            return;
        }
        S.t = p;
        S.cap = nc;
    }
    struct perf_event_attr a;
    make_attr(&a);
    uint64_t ticks = mprof__ticks();
    int fd = perf_open(&a, (pid_t)tid);
    if (fd < 0) {
        if (errno != ESRCH) /* gone already */
            untraced(tid, "perf_event_open", errno);
        return;
    }
    void *m = MAP_FAILED;
    size_t bytes = 0;
    int err = 0;
    for (;;) {
        bytes = (1 + S.data_pages) * (size_t)S.page;
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
        untraced(tid, "mmap of the perf ring buffer", err);
        return;
    }
    traced *t = &S.t[S.n++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->fd = fd;
    t->base = m;
    t->map_bytes = bytes;
    t->seen_scan = S.scan;
    if (!S.sched_on) { /* else the tracepoints say when the thread starts and ends */
        S.n_threads++;
        rec_thread(ticks, tid, MPROF_SYS_TRACK_START, thread_state(tid));
    }
}

static void untrace(size_t i, uint64_t ticks)
{
    traced *t = &S.t[i];
    drain_ring(t);
    if (!S.sched_on)
        rec_thread(t->exit_ticks ? t->exit_ticks : ticks, t->tid, MPROF_SYS_TRACK_END, 0);
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
        rec_cpu(mprof__ticks(), other / dt, mine / dt);
    }
    S.last_total = total;
    S.last_busy = busy;
    S.last_self = self;
    S.have_last = 1;
}

/* ---- the sched tracepoints: recording ------------------------------------------------------ */

#define TP_PAGES 512 /* per CPU (2 MiB: 10 ms of a busy machine); halved when locked memory runs out */
#define TP_HOLD_NS 2000000ull /* events younger than this wait for the next poll (see tp_poll) */
#define COMM_CACHE 1024

static void rec_wake(uint64_t ticks, uint64_t tid, uint64_t waker_tid, uint64_t waker_pid,
                     int ctx, uint32_t cpu)
{
    unsigned char *p = reserve(1 + 8 * 4 + 1 + 4);
    if (!p)
        return;
    p[0] = MPROF_EV_SYS_WAKE;
    p = mprof__w_u64(p + 1, ticks);
    p = mprof__w_u64(p, tid);
    p = mprof__w_u64(p, waker_tid);
    p = mprof__w_u64(p, waker_pid);
    p = mprof__w_u8(p, (uint8_t)ctx);
    commit(mprof__w_u32(p, cpu));
}

static void rec_comm(uint64_t ticks, uint64_t tid, uint64_t pid, const char *comm)
{
    size_t n = strnlen(comm, 16);
    unsigned char *p = reserve(1 + 8 * 3 + 2 + n);
    if (!p)
        return;
    p[0] = MPROF_EV_SYS_COMM;
    p = mprof__w_u64(p + 1, ticks);
    p = mprof__w_u64(p, tid);
    p = mprof__w_u64(p, pid);
    commit(mprof__w_str(p, comm, n));
}

static void rec_cpu_core(uint64_t ticks, uint32_t cpu, double other, double self)
{
    unsigned char *p = reserve(1 + 8 + 4 + 16);
    if (!p)
        return;
    p[0] = MPROF_EV_SYS_CPU_CORE;
    p = mprof__w_u64(p + 1, ticks);
    p = mprof__w_u32(p, cpu);
    p = mprof__w_f64(p, other);
    commit(mprof__w_f64(p, self));
}

/* One event read from a CPU's ring buffer, parsed. */
typedef struct tpev {
    uint64_t time, seq;
    uint32_t cpu, pid, tid; /* pid, tid: the task that was running (sample header) */
    int kind;               /* TP_*, or -1 for PERF_RECORD_LOST (a = records lost) */
    uint8_t flags;
    int64_t a, b, c; /* switch: prev_pid, prev_state, next_pid; waking: pid, target_cpu;
                        newtask: pid, clone_flags; exit: pid */
    char comm[16], comm2[16];
} tpev;

/* A thread of the process, as the tracepoints see it. */
typedef struct tpthr {
    uint32_t tid;
    uint8_t used, alive, in_yield;
} tpthr;

typedef struct tpcpu {
    int cpu;
    int fd[TP_N];
    unsigned char *base;
    size_t map_bytes;
    uint64_t last;  /* time of the last switch (or the window start) */
    int cls;        /* who runs now: 0 unknown, 1 idle, 2 this process, 3 others */
    uint64_t acc[4]; /* ns per class in the current window */
} tpcpu;

static struct {
    tpcpu *c;
    int nc;
    uint32_t pid;
    tpev *ev;
    size_t n_ev, cap_ev;
    uint64_t seq;
    tpthr *th;
    size_t cap_th, n_th;
    struct {
        uint32_t tid, pid;
        uint8_t sent;
        char comm[16];
    } comm[COMM_CACHE];
    uint64_t win_start;
    int clockid;
} TP;

static uint64_t tp_now(void)
{
    struct timespec ts;
    clock_gettime(TP.clockid, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static tpthr *tp_thread(uint32_t tid, int add)
{
    if (!tid)
        return NULL;
    if (add && (TP.n_th + 1) * 2 > TP.cap_th) {
        size_t nc = TP.cap_th ? TP.cap_th * 2 : 256;
        tpthr *nt = calloc(nc, sizeof *nt);
        if (!nt)
            return NULL;
        for (size_t i = 0; i < TP.cap_th; i++) {
            if (!TP.th[i].used)
                continue;
            size_t k = (TP.th[i].tid * 2654435761u) & (nc - 1);
            while (nt[k].used)
                k = (k + 1) & (nc - 1);
            nt[k] = TP.th[i];
        }
        free(TP.th);
        TP.th = nt;
        TP.cap_th = nc;
    }
    if (!TP.cap_th)
        return NULL;
    size_t k = (tid * 2654435761u) & (TP.cap_th - 1);
    while (TP.th[k].used) {
        if (TP.th[k].tid == tid)
            return add || TP.th[k].alive ? &TP.th[k] : NULL;
        k = (k + 1) & (TP.cap_th - 1);
    }
    if (!add)
        return NULL;
    TP.th[k] = (tpthr){tid, 1, 0, 0};
    TP.n_th++;
    return &TP.th[k];
}

/* Starts tracing tid (a thread of the process) at ticks. */
static void tp_member(uint32_t tid, uint64_t ticks, int state)
{
    if (tid == S.self_tid)
        return;
    tpthr *t = tp_thread(tid, 1);
    if (!t) {
        untraced(tid, "out of memory", ENOMEM);
        return;
    }
    if (t->alive)
        return;
    t->alive = 1;
    t->in_yield = 0;
    S.n_threads++;
    rec_thread(ticks, tid, MPROF_SYS_TRACK_START, state);
}

static int64_t tp_get(const unsigned char *raw, uint32_t len, int f)
{
    tp_field d = TPD.f[f];
    if ((uint32_t)(d.off + d.size) > len)
        return 0;
    const unsigned char *p = raw + d.off;
    switch (d.size) {
    case 1: return p[0];
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { int32_t v; memcpy(&v, p, 4); return v; }
    case 8: { int64_t v; memcpy(&v, p, 8); return v; }
    default: return 0;
    }
}

static void tp_comm(const unsigned char *raw, uint32_t len, int f, char out[16])
{
    tp_field d = TPD.f[f];
    memset(out, 0, 16);
    if ((uint32_t)(d.off + d.size) <= len)
        memcpy(out, raw + d.off, d.size < 16 ? (size_t)d.size : 15);
    out[15] = 0;
}

static void tp_record(void *ctx, const struct perf_event_header *h)
{
    tpcpu *c = ctx;
    const unsigned char *body = (const unsigned char *)(h + 1);
    size_t len = h->size - sizeof *h;
    tpev e;
    memset(&e, 0, sizeof e);
    e.cpu = (uint32_t)c->cpu;
    if (h->type == PERF_RECORD_LOST) {
        if (len < 16 + sizeof(sample_id))
            return;
        sample_id id;
        memcpy(&e.a, body + 8, 8);
        memcpy(&id, body + 16, sizeof id);
        e.time = id.time;
        e.kind = -1;
    } else if (h->type == PERF_RECORD_SAMPLE) {
        /* pid, tid, time, cpu, res, raw size, raw */
        if (len < 28)
            return;
        uint32_t rs;
        memcpy(&e.pid, body, 4);
        memcpy(&e.tid, body + 4, 4);
        memcpy(&e.time, body + 8, 8);
        memcpy(&rs, body + 24, 4);
        if (rs > len - 28)
            return;
        const unsigned char *raw = body + 28;
        int type = (int)tp_get(raw, rs, F_TYPE);
        e.flags = (uint8_t)tp_get(raw, rs, F_FLAGS);
        e.kind = -2;
        for (int t = 0; t < TP_N; t++)
            if (TPD.id[t] == type)
                e.kind = t;
        switch (e.kind) {
        case TP_SWITCH:
            e.a = tp_get(raw, rs, F_SW_PREV_PID);
            e.b = tp_get(raw, rs, F_SW_PREV_STATE);
            e.c = tp_get(raw, rs, F_SW_NEXT_PID);
            tp_comm(raw, rs, F_SW_PREV_COMM, e.comm);
            tp_comm(raw, rs, F_SW_NEXT_COMM, e.comm2);
            break;
        case TP_WAKING:
            e.a = tp_get(raw, rs, F_WK_PID);
            e.b = tp_get(raw, rs, F_WK_CPU);
            break;
        case TP_NEWTASK:
            e.a = tp_get(raw, rs, F_NT_PID);
            e.b = tp_get(raw, rs, F_NT_FLAGS);
            break;
        case TP_EXIT:
            e.a = tp_get(raw, rs, F_EX_PID);
            break;
        case TP_YIELD_IN:
        case TP_YIELD_OUT:
            break;
        default:
            return;
        }
    } else {
        return;
    }
    if (TP.n_ev == TP.cap_ev) {
        size_t nc = TP.cap_ev ? TP.cap_ev * 2 : 4096;
        tpev *p = realloc(TP.ev, nc * sizeof *p);
        if (!p) {
            S.n_dropped++;
            return;
        }
        TP.ev = p;
        TP.cap_ev = nc;
    }
    e.seq = TP.seq++;
    TP.ev[TP.n_ev++] = e;
}

static int cmp_tpev(const void *x, const void *y)
{
    const tpev *a = x, *b = y;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Closes the CPU-usage window at t: one SYS_CPU_CORE per CPU and one SYS_CPU for the machine.
 * Time before a CPU's first switch counts as idle (tp_start makes one on every CPU it may). */
static void tp_window(uint64_t t)
{
    if (t <= TP.win_start)
        return;
    double w = (double)(t - TP.win_start), other = 0, self = 0;
    for (int i = 0; i < TP.nc; i++) {
        tpcpu *c = &TP.c[i];
        if (t > c->last) {
            c->acc[c->cls] += t - c->last;
            c->last = t;
        }
        double o = (double)c->acc[3] / w, m = (double)c->acc[2] / w;
        o = o > 1 ? 1 : o;
        m = m > 1 ? 1 : m;
        rec_cpu_core(perf_ticks(t), (uint32_t)c->cpu, o, m);
        other += o;
        self += m;
        memset(c->acc, 0, sizeof c->acc);
    }
    if (TP.nc)
        rec_cpu(perf_ticks(t), other / TP.nc, self / TP.nc);
    TP.win_start = t;
}

static tpcpu *tp_cpu(uint32_t cpu)
{
    for (int i = 0; i < TP.nc; i++)
        if (TP.c[i].cpu == (int)cpu)
            return &TP.c[i];
    return NULL;
}

/* The name of a waker: from the switches seen, else /proc. */
static void tp_send_comm(uint64_t ticks, uint32_t tid, uint32_t pid)
{
    unsigned k = tid % COMM_CACHE;
    if (TP.comm[k].tid == tid && TP.comm[k].pid == pid && TP.comm[k].sent)
        return;
    if (TP.comm[k].tid != tid || TP.comm[k].pid != pid) {
        char path[96], buf[64];
        TP.comm[k].tid = tid;
        TP.comm[k].pid = pid;
        snprintf(path, sizeof path, "/proc/%u/task/%u/comm", pid, tid);
        if (tid == 0)
            snprintf(buf, sizeof buf, "swapper");
        else if (read_small(path, buf, sizeof buf) <= 0)
            snprintf(buf, sizeof buf, "?");
        buf[strcspn(buf, "\n")] = 0;
        buf[15] = 0;
        memcpy(TP.comm[k].comm, buf, 16);
    }
    TP.comm[k].sent = 1;
    rec_comm(ticks, tid, pid, TP.comm[k].comm);
}

static void tp_event(const tpev *e)
{
    if (S.cpu_on)
        while (e->time >= TP.win_start + CPU_EVERY_MS * 1000000ull)
            tp_window(TP.win_start + CPU_EVERY_MS * 1000000ull);
    uint64_t ticks = perf_ticks(e->time);
    switch (e->kind) {
    case -1:
        rec_lost(ticks, 0, (uint64_t)e->a);
        return;
    case TP_SWITCH: {
        tpcpu *c = tp_cpu(e->cpu);
        uint32_t prev = (uint32_t)e->a, next = (uint32_t)e->c;
        if (c) {
            int cls = prev == 0 ? 1 : e->pid == TP.pid ? 2 : 3;
            if (e->time > c->last)
                c->acc[cls] += e->time - c->last;
            c->last = e->time > c->last ? e->time : c->last;
            c->cls = next == 0 ? 1 : (tp_thread(next, 0) || next == S.self_tid) ? 2 : 3;
        }
        if (prev) {
            unsigned k = prev % COMM_CACHE;
            if (TP.comm[k].tid != prev || TP.comm[k].pid != e->pid ||
                strncmp(TP.comm[k].comm, e->comm, 16) != 0) {
                TP.comm[k].tid = prev;
                TP.comm[k].pid = e->pid;
                TP.comm[k].sent = 0;
                memcpy(TP.comm[k].comm, e->comm, 16);
            }
        }
        tpthr *t = tp_thread(prev, 0);
        if (t) {
            /* The low byte of prev_state is the task state (S, D, T, t, X, Z, P, I); 0 is
             * runnable: preempted, or yielded when it was inside sched_yield. Newer kernels
             * mark a preemption with a bit above it (shown "R+"). */
            int reason = (e->b & 0xff) ? MPROF_SYS_REASON_BLOCKED
                         : t->in_yield  ? MPROF_SYS_REASON_YIELDED
                                        : MPROF_SYS_REASON_PREEMPTED;
            rec_switch(ticks, prev, MPROF_SYS_OUT, reason, e->cpu);
        }
        if (tp_thread(next, 0))
            rec_switch(ticks, next, MPROF_SYS_IN, MPROF_SYS_REASON_UNKNOWN, e->cpu);
        return;
    }
    case TP_WAKING: {
        uint32_t tid = (uint32_t)e->a;
        if (!tp_thread(tid, 0))
            return;
        /* common_flags: the kernel's trace flags (hardirq 0x08, softirq 0x10, NMI 0x40). */
        int ctx = (e->flags & 0x40) ? MPROF_SYS_WAKE_NMI
                  : (e->flags & 0x08) ? MPROF_SYS_WAKE_HARDIRQ
                  : (e->flags & 0x10) ? MPROF_SYS_WAKE_SOFTIRQ
                                      : MPROF_SYS_WAKE_TASK;
        if (ctx == MPROF_SYS_WAKE_TASK)
            tp_send_comm(ticks, e->tid, e->pid);
        rec_wake(ticks, tid, e->tid, e->pid, ctx, (uint32_t)e->b);
        return;
    }
    case TP_NEWTASK:
        if (e->pid == TP.pid && ((uint64_t)e->b & CLONE_THREAD))
            tp_member((uint32_t)e->a, ticks, 'R');
        return;
    case TP_EXIT: {
        tpthr *t = tp_thread((uint32_t)e->a, 0);
        if (t && e->pid == TP.pid) {
            t->alive = 0;
            rec_thread(ticks, t->tid, MPROF_SYS_TRACK_END, 0);
        }
        return;
    }
    case TP_YIELD_IN:
    case TP_YIELD_OUT: {
        tpthr *t = e->pid == TP.pid ? tp_thread(e->tid, 0) : NULL;
        if (t)
            t->in_yield = e->kind == TP_YIELD_IN;
        return;
    }
    default:
        return;
    }
}


/* Reads every CPU's buffer and handles, in time order, the events older than TP_HOLD_NS: an
 * event on one CPU may depend on an older one on another (a thread's task_newtask before its
 * first switch), which is in its buffer by then. final: everything. */
static void tp_poll(int final)
{
    uint64_t now = tp_now();
    for (int i = 0; i < TP.nc; i++)
        drain_buf(TP.c[i].base, TP.c[i].map_bytes, tp_record, &TP.c[i]);
    if (TP.n_ev > 1)
        qsort(TP.ev, TP.n_ev, sizeof *TP.ev, cmp_tpev);
    uint64_t cut = final ? UINT64_MAX : now - TP_HOLD_NS;
    size_t k = 0;
    while (k < TP.n_ev && TP.ev[k].time < cut)
        tp_event(&TP.ev[k++]);
    memmove(TP.ev, TP.ev + k, (TP.n_ev - k) * sizeof *TP.ev);
    TP.n_ev -= k;
}

static void tp_close_cpu(tpcpu *c)
{
    if (c->base)
        munmap(c->base, c->map_bytes);
    for (int t = 0; t < TP_N; t++)
        if (c->fd[t] >= 0)
            close(c->fd[t]);
}

/* Opens the events on every CPU (before the thread starts, so that the threads of the process
 * are traced when mprof_startup returns), then lists the process's threads. */
static int tp_start(void)
{
    memset(&TP, 0, sizeof TP);
    TP.clockid = mprof__use_tsc ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC;
    TP.pid = (uint32_t)getpid();
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (ncpu <= 0 || ncpu > 4096)
        ncpu = 1;
    TP.c = calloc((size_t)ncpu, sizeof *TP.c);
    if (!TP.c)
        return -1;
    size_t pages = TP_PAGES;
    char why[256] = "";
    for (int cpu = 0; cpu < ncpu; cpu++) {
        tpcpu *c = &TP.c[TP.nc];
        memset(c, 0, sizeof *c);
        c->cpu = cpu;
        for (int t = 0; t < TP_N; t++)
            c->fd[t] = -1;
        int ok = 1;
        for (int t = 0; t < TP_N && ok; t++) {
            if (TPD.id[t] < 0)
                continue;
            c->fd[t] = tp_open(TPD.id[t], cpu);
            if (c->fd[t] < 0) {
                if (errno == ENODEV || errno == EINVAL)
                    ok = 0; /* an offline CPU */
                else if (t >= TP_YIELD_IN)
                    c->fd[t] = -1; /* yields then count as preempted on this CPU */
                else {
                    snprintf(why, sizeof why, "CPU %d: perf_event_open of %s: %s", cpu,
                             tp_names[t], strerror(errno));
                    ok = 0;
                }
            }
        }
        void *m = MAP_FAILED;
        while (ok) {
            c->map_bytes = (1 + pages) * (size_t)S.page;
            m = mmap(NULL, c->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd[0], 0);
            if (m != MAP_FAILED || pages <= 2)
                break;
            pages /= 2;
        }
        if (ok && m == MAP_FAILED) {
            snprintf(why, sizeof why, "CPU %d: mmap of the ring buffer: %s", cpu, strerror(errno));
            ok = 0;
        }
        /* The CPU's other events write into the sched_switch event's buffer (which must exist
         * first), so that one buffer holds the CPU's events in time order. */
        for (int t = 1; ok && t < TP_N; t++) {
            if (c->fd[t] >= 0 && ioctl(c->fd[t], PERF_EVENT_IOC_SET_OUTPUT, c->fd[0]) != 0) {
                snprintf(why, sizeof why, "CPU %d: PERF_EVENT_IOC_SET_OUTPUT: %s", cpu,
                         strerror(errno));
                ok = 0;
            }
        }
        if (!ok && m != MAP_FAILED)
            munmap(m, c->map_bytes);
        if (!ok) {
            c->base = NULL;
            tp_close_cpu(c);
            if (why[0])
                break;
            continue;
        }
        c->base = m;
        TP.nc++;
    }
    if (why[0] || !TP.nc) {
        for (int i = 0; i < TP.nc; i++)
            tp_close_cpu(&TP.c[i]);
        free(TP.c);
        TP.c = NULL;
        TP.nc = 0;
        snprintf(S.sched_why, sizeof S.sched_why,
                 "not used: %s; switch reasons come from PERF_RECORD_SWITCH", why[0] ? why : "no CPU");
        return -1;
    }
    return 0;
}

/* In mprof__system_start: the threads of the process now (later ones come from task_newtask). */
static void tp_scan(void)
{
    TP.win_start = tp_now();
    for (int i = 0; i < TP.nc; i++)
        TP.c[i].last = TP.win_start;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9') {
            uint64_t tid = strtoull(e->d_name, NULL, 10);
            tp_member((uint32_t)tid, mprof__ticks(), thread_state(tid));
        }
    }
    if (d)
        closedir(d);
}

/* In the system thread, first: runs once on every CPU it may, so that every CPU switches and
 * the CPU-usage figures know who was running there. */
static void tp_visit_cpus(void)
{
    cpu_set_t old, one;
    if (sched_getaffinity(0, sizeof old, &old) != 0)
        return;
    for (int i = 0; i < TP.nc; i++) {
        if (TP.c[i].cpu >= CPU_SETSIZE || !CPU_ISSET(TP.c[i].cpu, &old))
            continue;
        CPU_ZERO(&one);
        CPU_SET(TP.c[i].cpu, &one);
        sched_setaffinity(0, sizeof one, &one);
    }
    sched_setaffinity(0, sizeof old, &old);
}

static void tp_stop(uint64_t ticks)
{
    tp_poll(1);
    uint64_t now = tp_now();
    if (S.cpu_on && now - TP.win_start >= 10000000ull)
        tp_window(now); /* a shorter last window would be noise */
    for (size_t i = 0; i < TP.cap_th; i++)
        if (TP.th[i].used && TP.th[i].alive)
            rec_thread(ticks, TP.th[i].tid, MPROF_SYS_TRACK_END, 0);
    for (int i = 0; i < TP.nc; i++)
        tp_close_cpu(&TP.c[i]);
    free(TP.c);
    free(TP.ev);
    free(TP.th);
    memset(&TP, 0, sizeof TP);
}

/* ---- the thread ----------------------------------------------------------------------------- */

static void *system_main(void *arg)
{
    (void)arg;
    mprof__set_os_thread_name("mprof-system");
    S.self_tid = mprof__os_tid();
    if (S.sched_on)
        tp_visit_cpus();
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
            tp_poll(0);
        uint64_t now = mprof__mono_ns();
        if (S.cpu_on && !S.sched_on && now - last_cpu >= CPU_EVERY_MS * 1000000ull) {
            cpu_sample();
            last_cpu = now;
        }
        hand_over();
        struct timespec d = {0, POLL_MS * 1000000L};
        nanosleep(&d, NULL);
    }
    uint64_t now = mprof__ticks();
    while (S.n)
        untrace(S.n - 1, now);
    if (S.sched_on)
        tp_stop(now);
    hand_over();
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        S.thread_cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return NULL;
}

void mprof__system_start(void)
{
    if (S.running || (!S.switches_on && !S.sampling_on && !S.cpu_on))
        return;
    S.page = sysconf(_SC_PAGESIZE);
    if (S.page <= 0)
        S.page = 4096;
    S.data_pages = S.sampling_on ? 64 : 16;
    S.n_switches = S.n_samples = S.n_lost_records = S.n_threads = S.n_untracked = 0;
    S.thread_cpu_ns = 0;
    S.have_last = 0;
    S.scan = 0;
    S.self_tid = 0;
    atomic_store(&S.stop, 0);
    /* The threads that exist now are traced before startup returns, so that a zone begun
     * right after mprof_startup() is covered; later threads wait for the next scan. */
    S.n_dropped = 0;
    S.out.len = 0;
    S.out_records = 0;
    if (S.sched_on)
        tp_scan();
    if ((S.switches_on && !S.sched_on) || S.sampling_on)
        scan_threads();
    hand_over();
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
    mprof_buf_free(&S.out);
}
