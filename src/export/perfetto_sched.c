/*
 * perfetto_sched.c - the system records of a capture in the Perfetto export: context switches
 * and wake-ups as the kernel's own scheduler events, CPU usage as counters, callstack samples
 * as perf samples.
 *
 * Perfetto builds thread states (running, runnable, sleeping, who woke a thread) and one lane
 * per CPU from ftrace's sched_switch and sched_waking. mprof records its own threads only, so
 * each SYS_SWITCH becomes one sched_switch with the idle task on the other side: off the CPU,
 * the thread hands the CPU to "swapper"; on, it takes it from "swapper". Perfetto so shows this
 * process's threads exactly, and a CPU lane is empty where anything else ran (idle or another
 * process; the CPU-usage counters say how busy the others kept the machine). The reason of a
 * switch-out is its prev_state: preempted or yielded is runnable (R), blocked is sleeping (S).
 * A SYS_WAKE is a sched_waking whose common pid is the waker, with the interrupt flags of its
 * context, so a wake-up from an interrupt is not blamed on the task it interrupted.
 *
 * Events wait in a batch per CPU (a bounded buffer) and are written as one FtraceEventBundle,
 * the switches in ftrace's compact form (about 9 bytes a switch); Perfetto sorts every event by
 * time, so the order of the file's per-thread switch records does not matter. Samples intern their callstacks, frames (function names from mprof's symbolizer) and
 * mappings (the capture's modules, with their build ids) on the system sequence.
 */
#include "analysis/symbolize.h"
#include "analysis/system.h"
#include "export/perfetto_internal.h"
#include "util/grow.h"
#include "util/tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_EVENTS 4096
#define PRIO_NORMAL 120
#define STATE_RUNNABLE 0
#define STATE_SLEEPING 1
/* The kernel's trace flags of an interrupt context, as sched_waking's common_flags carry them. */
#define FLAG_HARDIRQ 0x08
#define FLAG_SOFTIRQ 0x10
#define FLAG_NMI 0x40
#define UNKNOWN_MAPPING_IID 0x7fffffffu

typedef struct sw_rec {
    int64_t ts;
    uint64_t tid;
    int out;
    int64_t prev_state; /* of the task switched out */
} sw_rec;

typedef struct cpu_batch {
    uint32_t cpu;
    sw_rec *sw; /* switches, written in the compact form, sorted by time */
    uint32_t n, cap;
    mprof_pb wake; /* encoded sched_waking FtraceEvents (field 2 of the bundle) */
    uint32_t n_wake;
} cpu_batch;

typedef struct module {
    uint64_t base, size;
    char *path, *build_id;
    int sent;
} module;

struct pf_sys {
    cpu_batch *cpus;
    uint32_t n_cpus, cpus_cap;
    mprof_sys_comms comms;
    mprof_umap tid_thread; /* OS thread id + 1 -> capture thread */
    uint32_t threads_mapped; /* reader threads looked at so far */
    uint32_t cpu_described; /* bit 0: the machine's counters; per core: cores below */
    mprof_umap cores;        /* cpu + 1 -> 1 when its counters are described */
    /* samples */
    mprof_symbolizer *sym;
    module *mods;
    uint32_t n_mods, mods_cap;
    unsigned char *stack_sent; /* per callstack id */
    uint32_t stack_cap;
    mprof_umap frames;    /* address -> frame iid */
    mprof_umap functions; /* hash of a function name -> iid */
    uint64_t next_frame, next_function;
    int unknown_mapping_sent;
};

pf_sys *pf_sys_new(void)
{
    pf_sys *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->next_frame = s->next_function = 1;
    return s;
}

void pf_sys_free(pf_sys *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n_cpus; i++) {
        mprof__pb_free(&s->cpus[i].wake);
        free(s->cpus[i].sw);
    }
    free(s->cpus);
    mprof__sys_comms_free(&s->comms);
    mprof_umap_free(&s->tid_thread);
    mprof_umap_free(&s->cores);
    mprof_symbolizer_free(s->sym);
    for (uint32_t i = 0; i < s->n_mods; i++) {
        free(s->mods[i].path);
        free(s->mods[i].build_id);
    }
    free(s->mods);
    free(s->stack_sent);
    mprof_umap_free(&s->frames);
    mprof_umap_free(&s->functions);
    free(s);
}

/* ---- names ----------------------------------------------------------------------------------- */

/* The capture thread with OS thread id tid, or PF_NONE. */
static uint32_t capture_thread(pf *x, uint64_t tid)
{
    pf_sys *s = x->sys;
    uint32_t n = mprof_reader_thread_count(x->r);
    for (; s->threads_mapped < n; s->threads_mapped++) {
        const mprof_thread_def *d = mprof_reader_thread(x->r, s->threads_mapped);
        if (d && d->os_tid && mprof_umap_put(&s->tid_thread, d->os_tid + 1, s->threads_mapped))
            x->oom = 1;
    }
    uint32_t *v = tid == UINT64_MAX ? NULL : mprof_umap_get(&s->tid_thread, tid + 1);
    return v ? *v : PF_NONE;
}

const char *pf_thread_comm(pf *x, uint64_t tid, char *buf, size_t len)
{
    uint32_t t = capture_thread(x, tid);
    const mprof_thread_def *d = t != PF_NONE ? mprof_reader_thread(x->r, t) : NULL;
    const char *name = d && d->name ? d->name : NULL;
    if (!name)
        name = mprof__sys_comms_name(&x->sys->comms, tid, (uint64_t)x->pid);
    if (!name)
        name = mprof__sys_comms_name(&x->sys->comms, tid, 0);
    if (name)
        snprintf(buf, len, "%.15s", name);
    else
        snprintf(buf, len, "tid %" PRIu64, tid);
    return buf;
}

/* ---- scheduler events ------------------------------------------------------------------------ */

static cpu_batch *batch_of(pf *x, uint32_t cpu)
{
    pf_sys *s = x->sys;
    for (uint32_t i = 0; i < s->n_cpus; i++)
        if (s->cpus[i].cpu == cpu)
            return &s->cpus[i];
    if (s->n_cpus >= 4096 || MPROF_GROW(s->cpus, s->cpus_cap, (uint64_t)s->n_cpus + 1, 8) != 0) {
        x->oom = 1;
        return NULL;
    }
    cpu_batch *b = &s->cpus[s->n_cpus++];
    memset(b, 0, sizeof *b);
    b->cpu = cpu;
    /* Perfetto takes the task a compact switch switches out from the CPU's previous switch, so
     * it drops the first switch of each CPU. A first switch to the idle task at the start of
     * the trace gives every real switch its predecessor. */
    if (MPROF_GROW(b->sw, b->cap, 1, 64) != 0) {
        x->oom = 1;
        return NULL;
    }
    b->sw[b->n++] = (sw_rec){0, 0, 1, STATE_RUNNABLE};
    return b;
}

static int sw_cmp(const void *pa, const void *pb)
{
    const sw_rec *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->out > b->out ? -1 : a->out < b->out; /* at one instant, out before in */
}

/* One packed repeated field from the n values of v. */
static void packed(mprof_pb *b, mprof_pb *tmp, uint32_t field, const uint64_t *v, uint32_t n)
{
    tmp->len = 0;
    if (mprof__pb_reserve(tmp, (size_t)n * 10) != 0)
        return;
    unsigned char *p = tmp->p;
    for (uint32_t i = 0; i < n; i++)
        p = mprof__pb_put_varint(p, v[i]);
    tmp->len = (size_t)(p - tmp->p);
    mprof__pb_bytes(b, field, tmp->p, tmp->len);
}

/* The batch as one FtraceEventBundle: the switches in the compact form (time deltas, the
 * switched-out task's state, the next task and an index into the bundle's table of names; the
 * previous task is the one the last switch put on the CPU), the wake-ups as whole events. */
static void batch_flush(pf *x, cpu_batch *c)
{
    if (!c->n && !c->n_wake)
        return;
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, 0, INT64_MIN);
    mprof__pb_open(b, PF_PKT_FTRACE_EVENTS);
    mprof__pb_varint(b, PF_BUNDLE_CPU, c->cpu);
    mprof__pb_raw(b, c->wake.p, c->wake.len);
    if (c->n) {
        qsort(c->sw, c->n, sizeof *c->sw, sw_cmp);
        uint64_t *v = malloc((size_t)c->n * sizeof *v);
        uint32_t *comm = malloc((size_t)c->n * sizeof *comm);
        mprof_umap names = {0};
        mprof_pb tmp = {0};
        if (!v || !comm) {
            x->oom = 1;
        } else {
            mprof__pb_open(b, PF_BUNDLE_COMPACT_SCHED);
            /* The table of names: the idle task first, then each thread once. */
            char name[32];
            snprintf(name, sizeof name, "swapper/%" PRIu32, c->cpu);
            mprof__pb_str(b, PF_CS_INTERN_TABLE, name);
            uint32_t n_names = 1;
            for (uint32_t i = 0; i < c->n; i++) {
                if (c->sw[i].out) {
                    comm[i] = 0;
                    continue;
                }
                uint32_t *k = mprof_umap_get(&names, c->sw[i].tid + 1);
                if (k) {
                    comm[i] = *k;
                    continue;
                }
                if (mprof_umap_put(&names, c->sw[i].tid + 1, n_names) != 0)
                    x->oom = 1;
                comm[i] = n_names++;
                mprof__pb_str(b, PF_CS_INTERN_TABLE, pf_thread_comm(x, c->sw[i].tid, name,
                                                                    sizeof name));
            }
            int64_t prev = 0;
            for (uint32_t i = 0; i < c->n; i++) {
                int64_t t = c->sw[i].ts < 0 ? 0 : c->sw[i].ts;
                v[i] = (uint64_t)(t - prev);
                prev = t;
            }
            packed(b, &tmp, PF_CS_SWITCH_TIMESTAMP, v, c->n);
            for (uint32_t i = 0; i < c->n; i++)
                v[i] = (uint64_t)c->sw[i].prev_state;
            packed(b, &tmp, PF_CS_SWITCH_PREV_STATE, v, c->n);
            for (uint32_t i = 0; i < c->n; i++)
                v[i] = c->sw[i].out ? 0 : c->sw[i].tid;
            packed(b, &tmp, PF_CS_SWITCH_NEXT_PID, v, c->n);
            for (uint32_t i = 0; i < c->n; i++)
                v[i] = PRIO_NORMAL;
            packed(b, &tmp, PF_CS_SWITCH_NEXT_PRIO, v, c->n);
            for (uint32_t i = 0; i < c->n; i++)
                v[i] = comm[i];
            packed(b, &tmp, PF_CS_SWITCH_NEXT_COMM_INDEX, v, c->n);
            mprof__pb_close(b);
            if (tmp.oom)
                x->oom = 1;
        }
        free(v);
        free(comm);
        mprof_umap_free(&names);
        mprof__pb_free(&tmp);
    }
    mprof__pb_close(b);
    pf_packet_end(x);
    if (c->wake.oom)
        x->oom = 1;
    c->wake.len = 0;
    c->n = c->n_wake = 0;
}

static void sched_switch(pf *x, const mprof_event *ev)
{
    uint64_t tid = ev->u[0];
    cpu_batch *c = batch_of(x, (uint32_t)ev->u[3]);
    if (!c || tid > INT32_MAX)
        return;
    if (MPROF_GROW(c->sw, c->cap, (uint64_t)c->n + 1, 64) != 0) {
        x->oom = 1;
        return;
    }
    int out = ev->u[1] == MPROF_SYS_OUT;
    int blocked = ev->u[2] == MPROF_SYS_REASON_BLOCKED || ev->u[2] == MPROF_SYS_REASON_UNKNOWN;
    c->sw[c->n++] = (sw_rec){ev->ts_ns, tid, out,
                             out && blocked ? STATE_SLEEPING : STATE_RUNNABLE};
    x->st->sched_switches++;
    if (c->n >= BATCH_EVENTS)
        batch_flush(x, c);
}

static void sched_waking(pf *x, const mprof_event *ev)
{
    uint64_t tid = ev->u[0], waker = ev->u[1];
    int ctx = (int)ev->u[3];
    uint32_t cpu = (uint32_t)ev->u[4];
    cpu_batch *c = batch_of(x, cpu);
    if (!c || tid > INT32_MAX || waker > INT32_MAX)
        return;
    char comm[32];
    pf_thread_comm(x, tid, comm, sizeof comm);
    mprof_pb *b = &c->wake;
    mprof__pb_open(b, PF_BUNDLE_EVENT);
    mprof__pb_varint(b, PF_FT_TIMESTAMP, ev->ts_ns < 0 ? 0 : (uint64_t)ev->ts_ns);
    mprof__pb_varint(b, PF_FT_PID, waker);
    uint32_t flags = ctx == MPROF_SYS_WAKE_HARDIRQ   ? FLAG_HARDIRQ
                     : ctx == MPROF_SYS_WAKE_SOFTIRQ ? FLAG_SOFTIRQ
                     : ctx == MPROF_SYS_WAKE_NMI     ? FLAG_NMI
                                                     : 0;
    if (flags)
        mprof__pb_varint(b, PF_FT_COMMON_FLAGS, flags);
    mprof__pb_open(b, PF_FT_SCHED_WAKING);
    mprof__pb_str(b, PF_WK_COMM, comm);
    mprof__pb_varint(b, PF_WK_PID, tid);
    mprof__pb_varint(b, PF_WK_PRIO, PRIO_NORMAL);
    mprof__pb_varint(b, PF_WK_SUCCESS, 1);
    mprof__pb_varint(b, PF_WK_TARGET_CPU, cpu);
    mprof__pb_close(b);
    mprof__pb_close(b);
    x->st->sched_wakings++;
    if (++c->n_wake >= BATCH_EVENTS)
        batch_flush(x, c);
}

/* ---- CPU usage ------------------------------------------------------------------------------- */

static void cpu_usage(pf *x, const mprof_event *ev)
{
    pf_sys *s = x->sys;
    static const char *const what[2] = {"other processes", "this process"};
    int core = ev->type == MPROF_EV_SYS_CPU_CORE;
    uint32_t cpu = core ? (uint32_t)ev->u[0] : 0;
    uint64_t base = core ? 2 + (uint64_t)cpu * 2 : 0;
    int described = core ? mprof_umap_get(&s->cores, (uint64_t)cpu + 1) != NULL
                         : (int)(s->cpu_described & 1);
    if (!described) {
        for (int i = 0; i < 2; i++) {
            char name[64];
            if (core)
                snprintf(name, sizeof name, "CPU %" PRIu32 ": %s %%", cpu, what[i]);
            else
                snprintf(name, sizeof name, "CPU: %s %%", what[i]);
            pf_describe(x, pf_uuid(PF_UUID_CPU, base + (uint64_t)i), 0, name, -1,
                        core ? (int32_t)(base + (uint64_t)i) : i);
        }
        if (core ? mprof_umap_put(&s->cores, (uint64_t)cpu + 1, 1) != 0 : 0)
            x->oom = 1;
        s->cpu_described |= core ? 0 : 1;
    }
    for (int i = 0; i < 2; i++)
        pf_counter(x, 0, pf_uuid(PF_UUID_CPU, base + (uint64_t)i), ev->ts_ns,
                   mprof_event_f64(ev, core + i) * 100, 0);
}

/* ---- samples --------------------------------------------------------------------------------- */

static const module *module_of(const pf_sys *s, uint64_t addr, uint32_t *out_index)
{
    for (uint32_t i = 0; i < s->n_mods; i++)
        if (addr >= s->mods[i].base && addr - s->mods[i].base < s->mods[i].size) {
            *out_index = i;
            return &s->mods[i];
        }
    return NULL;
}

static void add_module(pf *x, const mprof_event *ev)
{
    pf_sys *s = x->sys;
    if (!s->sym && !(s->sym = mprof_symbolizer_new())) {
        x->oom = 1;
        return;
    }
    if (mprof_symbolizer_add_event(s->sym, ev) != 0 || s->n_mods >= 65536 ||
        MPROF_GROW(s->mods, s->mods_cap, (uint64_t)s->n_mods + 1, 16) != 0) {
        x->oom = 1;
        return;
    }
    module *m = &s->mods[s->n_mods];
    memset(m, 0, sizeof *m);
    m->base = ev->u[0];
    m->size = ev->u[1];
    m->path = tool_strndup(ev->strs[0] ? ev->strs[0] : "", ev->str_lens[0]);
    m->build_id = tool_strndup(ev->strs[1] ? ev->strs[1] : "", ev->str_lens[1]);
    if (!m->path || !m->build_id) {
        free(m->path);
        free(m->build_id);
        x->oom = 1;
        return;
    }
    s->n_mods++;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The interned entries a mapping needs: its path, build id (as bytes) and the mapping. */
static void intern_mapping(pf *x, mprof_pb *b, uint32_t i, const module *m)
{
    mprof__pb_open(b, PF_ID_MAPPING_PATHS);
    mprof__pb_varint(b, PF_IID, (uint64_t)i + 1);
    mprof__pb_str(b, PF_INAME, m->path);
    mprof__pb_close(b);
    size_t n = strlen(m->build_id) / 2;
    unsigned char id[64];
    size_t k = 0;
    for (; k < n && k < sizeof id; k++) {
        int hi = hexval(m->build_id[2 * k]), lo = hexval(m->build_id[2 * k + 1]);
        if (hi < 0 || lo < 0)
            break;
        id[k] = (unsigned char)(hi << 4 | lo);
    }
    if (k) {
        mprof__pb_open(b, PF_ID_BUILD_IDS);
        mprof__pb_varint(b, PF_IID, (uint64_t)i + 1);
        mprof__pb_bytes(b, PF_INAME, id, k);
        mprof__pb_close(b);
    }
    mprof__pb_open(b, PF_ID_MAPPINGS);
    mprof__pb_varint(b, PF_IID, (uint64_t)i + 1);
    if (k)
        mprof__pb_varint(b, PF_MAPPING_BUILD_ID, (uint64_t)i + 1);
    mprof__pb_varint(b, PF_MAPPING_START_OFFSET, 0);
    mprof__pb_varint(b, PF_MAPPING_START, m->base);
    mprof__pb_varint(b, PF_MAPPING_END, m->base + m->size);
    mprof__pb_varint(b, PF_MAPPING_PATH_STRING_IDS, (uint64_t)i + 1);
    mprof__pb_close(b);
    (void)x;
}

/* The iid of the frame of return address addr, interning it (and its function and mapping). */
static uint64_t intern_frame(pf *x, mprof_pb *b, uint64_t addr)
{
    pf_sys *s = x->sys;
    uint32_t *v = mprof_umap_get(&s->frames, addr + 1);
    if (v)
        return *v;
    uint64_t iid = s->next_frame++;
    if (iid >= UINT32_MAX || mprof_umap_put(&s->frames, addr + 1, (uint32_t)iid) != 0) {
        x->oom = 1;
        return 0;
    }
    uint32_t mi = 0;
    module *m = (module *)module_of(s, addr - 1, &mi);
    uint64_t mapping = UNKNOWN_MAPPING_IID;
    if (m) {
        if (!m->sent)
            intern_mapping(x, b, mi, m);
        m->sent = 1;
        mapping = (uint64_t)mi + 1;
    } else if (!s->unknown_mapping_sent) {
        mprof__pb_open(b, PF_ID_MAPPINGS);
        mprof__pb_varint(b, PF_IID, UNKNOWN_MAPPING_IID);
        mprof__pb_close(b);
        s->unknown_mapping_sent = 1;
    }
    uint64_t fn = 0;
    mprof_symbol sym;
    if (s->sym && mprof_symbolizer_lookup(s->sym, addr, &sym) && sym.function) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (const char *p = sym.function; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        h = h ? h : 1;
        uint32_t *f = mprof_umap_get(&s->functions, h);
        if (f) {
            fn = *f;
        } else {
            fn = s->next_function++;
            if (fn >= UINT32_MAX || mprof_umap_put(&s->functions, h, (uint32_t)fn) != 0) {
                x->oom = 1;
                return 0;
            }
            mprof__pb_open(b, PF_ID_FUNCTION_NAMES);
            mprof__pb_varint(b, PF_IID, fn);
            mprof__pb_str(b, PF_INAME, sym.function);
            mprof__pb_close(b);
        }
    }
    mprof__pb_open(b, PF_ID_FRAMES);
    mprof__pb_varint(b, PF_IID, iid);
    if (fn)
        mprof__pb_varint(b, PF_FRAME_FUNCTION_NAME_ID, fn);
    mprof__pb_varint(b, PF_FRAME_MAPPING_ID, mapping);
    /* The call instruction, relative to the module's start (addresses are return addresses). */
    mprof__pb_varint(b, PF_FRAME_REL_PC, m ? addr - 1 - m->base : addr - 1);
    mprof__pb_close(b);
    return iid;
}

static void sample(pf *x, const mprof_event *ev)
{
    pf_sys *s = x->sys;
    uint64_t tid = ev->u[0];
    uint32_t cs = (uint32_t)ev->u[1], n = 0;
    const uint64_t *addrs = mprof_reader_callstack(x->r, cs, &n);
    if (!addrs || !n || tid > INT32_MAX || cs >= (1u << 26))
        return;
    if (cs >= s->stack_cap) {
        uint32_t old = s->stack_cap;
        if (MPROF_GROW(s->stack_sent, s->stack_cap, (uint64_t)cs + 1, 256) != 0) {
            x->oom = 1;
            return;
        }
        memset(s->stack_sent + old, 0, s->stack_cap - old);
    }
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, 0, ev->ts_ns);
    if (!s->stack_sent[cs]) {
        uint64_t frames[MPROF_FMT_MAX_CALLSTACK];
        uint32_t k = n < MPROF_FMT_MAX_CALLSTACK ? n : MPROF_FMT_MAX_CALLSTACK;
        mprof__pb_open(b, PF_PKT_INTERNED_DATA);
        for (uint32_t i = 0; i < k; i++)
            frames[i] = intern_frame(x, b, addrs[i]);
        mprof__pb_open(b, PF_ID_CALLSTACKS);
        mprof__pb_varint(b, PF_IID, (uint64_t)cs + 1);
        /* mprof stores the innermost frame first; Perfetto wants the root first. */
        for (uint32_t i = k; i-- > 0;)
            mprof__pb_varint(b, PF_CALLSTACK_FRAME_IDS, frames[i]);
        mprof__pb_close(b);
        mprof__pb_close(b);
        s->stack_sent[cs] = 1;
    }
    mprof__pb_open(b, PF_PKT_PERF_SAMPLE);
    mprof__pb_varint(b, PF_PS_PID, (uint64_t)x->pid);
    mprof__pb_varint(b, PF_PS_TID, tid);
    mprof__pb_varint(b, PF_PS_CALLSTACK_IID, (uint64_t)cs + 1);
    mprof__pb_close(b);
    pf_packet_end(x);
    x->st->samples++;
}

/* ---- the interface --------------------------------------------------------------------------- */

void pf_sys_event(pf *x, const mprof_event *ev)
{
    pf_sys *s = x->sys;
    switch (ev->type) {
    case MPROF_EV_DEF_MODULE:
        add_module(x, ev);
        return;
    case MPROF_EV_SYS_COMM:
        if (mprof__sys_comms_note(&s->comms, ev, 0) != 0)
            x->oom = 1;
        return;
    case MPROF_EV_SYS_LOST:
        x->st->kernel_lost += ev->u[1];
        return;
    default:
        break;
    }
    if (!mprof__range_has(x->range, ev->ts_ns))
        return;
    switch (ev->type) {
    case MPROF_EV_SYS_SWITCH:
        sched_switch(x, ev);
        break;
    case MPROF_EV_SYS_WAKE:
        sched_waking(x, ev);
        break;
    case MPROF_EV_SYS_CPU:
    case MPROF_EV_SYS_CPU_CORE:
        cpu_usage(x, ev);
        break;
    case MPROF_EV_SYS_SAMPLE:
        sample(x, ev);
        break;
    default:
        break;
    }
}

/* The threads Perfetto should know by name: this process's, and the other processes' threads
 * that woke them (their names from SYS_COMM). */
static void process_tree(pf *x)
{
    pf_sys *s = x->sys;
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, 0, 0);
    mprof__pb_open(b, PF_PKT_PROCESS_TREE);
    mprof__pb_open(b, PF_PT_PROCESSES);
    mprof__pb_int(b, PF_PTP_PID, x->pid);
    const char *app = mprof_reader_info(x->r, "app");
    if (!app)
        app = mprof_reader_info(x->r, "process");
    mprof__pb_str(b, PF_PTP_CMDLINE, app ? app : "process");
    mprof__pb_close(b);
    uint32_t nt = mprof_reader_thread_count(x->r);
    for (uint32_t t = 1; t < nt; t++) {
        const mprof_thread_def *d = mprof_reader_thread(x->r, t);
        if (!d || !d->os_tid || d->os_tid > INT32_MAX)
            continue;
        char comm[32];
        mprof__pb_open(b, PF_PT_THREADS);
        mprof__pb_int(b, PF_PTT_TID, (int64_t)d->os_tid);
        mprof__pb_int(b, PF_PTT_TGID, x->pid);
        mprof__pb_str(b, PF_PTT_NAME, d->name ? d->name : pf_thread_comm(x, d->os_tid, comm,
                                                                          sizeof comm));
        mprof__pb_close(b);
    }
    for (uint32_t i = 0; i < s->comms.n; i++) {
        const mprof_sys_comm *c = &s->comms.v[i];
        if (c->tid > INT32_MAX || c->pid > INT32_MAX || !c->tid ||
            capture_thread(x, c->tid) != PF_NONE)
            continue;
        mprof__pb_open(b, PF_PT_THREADS);
        mprof__pb_int(b, PF_PTT_TID, (int64_t)c->tid);
        if (c->pid)
            mprof__pb_int(b, PF_PTT_TGID, (int64_t)c->pid);
        mprof__pb_str(b, PF_PTT_NAME, c->name);
        mprof__pb_close(b);
    }
    mprof__pb_close(b);
    pf_packet_end(x);
}

void pf_sys_finish(pf *x)
{
    pf_sys *s = x->sys;
    for (uint32_t i = 0; i < s->n_cpus; i++)
        batch_flush(x, &s->cpus[i]);
    if (s->n_cpus || s->comms.n || x->st->samples)
        process_tree(x);
}
