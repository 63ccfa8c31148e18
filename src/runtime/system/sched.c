/*
 * sched.c - context switches, wake-ups and CPU usage from the sched tracepoints.
 *
 * Where the tracepoints are allowed (tracefs mounted, system-wide per-CPU tracepoint events
 * permitted: root, CAP_PERFMON or perf_event_paranoid -1), one group of events per CPU replaces
 * the per-thread PERF_RECORD_SWITCH: sched_switch (every switch on the CPU, with the state the
 * thread left in), sched_waking (who woke whom), task_newtask / sched_process_exit (the
 * process's threads from birth to death) and, when the kernel has syscall tracepoints,
 * sys_enter/exit_sched_yield (so that a yield is told from a preemption). Field offsets come
 * from the events' format files. The library never mounts tracefs.
 *
 * Each CPU's events go into one ring buffer (that of its sched_switch event), so they come out
 * in time order per CPU; events of different CPUs are merged by time after a short hold
 * (TP_HOLD_NS), since one may depend on an older one on another CPU.
 */
#include "system/sched.h"
#include "mprof/mprof.h"
#include "format/format.h"
#include "system/kernel.h"
#include "system/records.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char sched_why[512]; /* for INFO */
static int cpu_on;          /* the CPU-usage plot comes from here */
static uint64_t self_tid;   /* the system thread: never traced */

/* ---- finding them -------------------------------------------------------------------------- */


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
        if (mprof__sys_read_small(path, buf, sizeof buf) > 0)
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
            if (mprof__sys_read_small(path, buf, sizeof buf) <= 0) {
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
    a->clockid = mprof__sys_clockid();
    a->watermark = 1;
    a->wakeup_watermark = 1u << 30;
}

static int tp_open(int id, int cpu)
{
    struct perf_event_attr a;
    tp_attr(&a, id);
    return (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Whether the tracepoint path can be used; sets sched_why either way. */
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
            snprintf(sched_why, sizeof sched_why,
                     "on (%s: sched_switch, sched_waking, task_newtask, sched_process_exit%s)",
                     TPD.dir, TPD.have_yield ? ", sys_enter/exit_sched_yield"
                                             : "; no syscall tracepoints, so a yield counts "
                                               "as preempted");
            return 1;
        }
        int e = errno;
        int p = mprof__sys_read_paranoid();
        snprintf(why, sizeof why,
                 "perf_event_open of the system-wide sched_switch tracepoint refused (%s, "
                 "perf_event_paranoid=%d; it needs root, CAP_PERFMON or perf_event_paranoid -1)",
                 strerror(e), p);
    }
    snprintf(sched_why, sizeof sched_why,
             "not used: %s; switch reasons come from PERF_RECORD_SWITCH (preempted, or blocked "
             "or yielded), with no waker",
             why);
    return 0;
}

/* ---- recording ----------------------------------------------------------------------------- */

/* Per CPU (2 MiB: 10 ms of a busy machine); halved when locked memory runs out. */
#define TP_PAGES 512
#define TP_HOLD_NS 2000000ull /* events younger than this wait for the next poll (see tp_poll) */
#define COMM_CACHE 1024

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
    if (tid == self_tid)
        return;
    tpthr *t = tp_thread(tid, 1);
    if (!t) {
        mprof__sys_untraced(tid, "out of memory", ENOMEM);
        return;
    }
    if (t->alive)
        return;
    t->alive = 1;
    t->in_yield = 0;
    mprof__sys_rec_track_start(ticks, tid, state);
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
        if (len < 16 + sizeof(mprof__sys_sample_id))
            return;
        mprof__sys_sample_id id;
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
            mprof__sys_dropped(1);
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
        mprof__sys_rec_cpu_core(mprof__sys_perf_ticks(t), (uint32_t)c->cpu, o, m);
        other += o;
        self += m;
        memset(c->acc, 0, sizeof c->acc);
    }
    if (TP.nc)
        mprof__sys_rec_cpu(mprof__sys_perf_ticks(t), other / TP.nc, self / TP.nc);
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
        else if (mprof__sys_read_small(path, buf, sizeof buf) <= 0)
            snprintf(buf, sizeof buf, "?");
        buf[strcspn(buf, "\n")] = 0;
        buf[15] = 0;
        memcpy(TP.comm[k].comm, buf, 16);
    }
    TP.comm[k].sent = 1;
    mprof__sys_rec_comm(ticks, tid, pid, TP.comm[k].comm);
}

static void tp_event(const tpev *e)
{
    if (cpu_on)
        while (e->time >= TP.win_start + MPROF__SYS_CPU_EVERY_MS * 1000000ull)
            tp_window(TP.win_start + MPROF__SYS_CPU_EVERY_MS * 1000000ull);
    uint64_t ticks = mprof__sys_perf_ticks(e->time);
    switch (e->kind) {
    case -1:
        mprof__sys_rec_lost(ticks, 0, (uint64_t)e->a);
        return;
    case TP_SWITCH: {
        tpcpu *c = tp_cpu(e->cpu);
        uint32_t prev = (uint32_t)e->a, next = (uint32_t)e->c;
        if (c) {
            int cls = prev == 0 ? 1 : e->pid == TP.pid ? 2 : 3;
            if (e->time > c->last)
                c->acc[cls] += e->time - c->last;
            c->last = e->time > c->last ? e->time : c->last;
            c->cls = next == 0 ? 1 : (tp_thread(next, 0) || next == self_tid) ? 2 : 3;
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
            mprof__sys_rec_switch(ticks, prev, MPROF_SYS_OUT, reason, e->cpu);
        }
        if (tp_thread(next, 0))
            mprof__sys_rec_switch(ticks, next, MPROF_SYS_IN, MPROF_SYS_REASON_UNKNOWN, e->cpu);
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
        mprof__sys_rec_wake(ticks, tid, e->tid, e->pid, ctx, (uint32_t)e->b);
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
            mprof__sys_rec_thread(ticks, t->tid, MPROF_SYS_TRACK_END, 0);
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
        mprof__sys_drain_buf(TP.c[i].base, TP.c[i].map_bytes, tp_record, &TP.c[i]);
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
    TP.clockid = mprof__sys_clockid();
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
            c->map_bytes = (1 + pages) * (size_t)mprof__sys_page();
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
        snprintf(sched_why, sizeof sched_why,
                 "not used: %s; switch reasons come from PERF_RECORD_SWITCH", why[0] ? why : "no CPU");
        return -1;
    }
    return 0;
}

/* At start: the threads of the process now (later ones come from task_newtask). */
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
            tp_member((uint32_t)tid, mprof__ticks(), mprof__sys_thread_state(tid));
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
    if (cpu_on && now - TP.win_start >= 10000000ull)
        tp_window(now); /* a shorter last window would be noise */
    for (size_t i = 0; i < TP.cap_th; i++)
        if (TP.th[i].used && TP.th[i].alive)
            mprof__sys_rec_thread(ticks, TP.th[i].tid, MPROF_SYS_TRACK_END, 0);
    for (int i = 0; i < TP.nc; i++)
        tp_close_cpu(&TP.c[i]);
    free(TP.c);
    free(TP.ev);
    free(TP.th);
    memset(&TP, 0, sizeof TP);
}


/* ---- the interface ------------------------------------------------------------------------- */

int mprof__sys_sched_probe(int switches_on, int want_cpu)
{
    cpu_on = want_cpu;
    sched_why[0] = 0;
    if (!switches_on) {
        snprintf(sched_why, sizeof sched_why, "not used: context switches are off");
        return 0;
    }
    /* Opened now, so that INFO says what happens; tp_start says why not in sched_why and
     * context switches come from PERF_RECORD_SWITCH then. */
    return tp_probe() && tp_start() == 0;
}

const char *mprof__sys_sched_why(void)
{
    return sched_why;
}

void mprof__sys_sched_begin(void)
{
    self_tid = 0;
    tp_scan();
}

void mprof__sys_sched_enter(uint64_t tid)
{
    self_tid = tid;
    tp_visit_cpus();
}

void mprof__sys_sched_poll(void)
{
    tp_poll(0);
}

void mprof__sys_sched_stop(uint64_t ticks)
{
    tp_stop(ticks);
}
