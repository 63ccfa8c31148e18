/*
 * chrome_system.c - the system records of a capture in the Chrome export (docs/EXPORT.md):
 * each traced thread gets a "state" track (pid 5, "Thread states", tid = 0x50000000 + the OS
 * thread id) whose slices say when the thread was running, preempted or blocked, and the CPU
 * usage becomes two counters on the process. Written while the capture is read: a thread's
 * switch records are in time order in the file, so one pending switch per thread is enough.
 */
#include "analysis/range.h"
#include "util/json_out.h"
#include "analysis/system.h"
#include "export/chrome_system.h"
#include "export/decimal.h"
#include "util/umap.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PID_STATES 5
/* Thread ids are distinct across pids (chrome.c): state tracks are 0x50000000 + tid. */
#define STATE_TID(tid) ((uint64_t)0x50000000u + ((tid) & (uint64_t)0x0fffffffu))

typedef struct tstate {
    uint64_t tid;
    int64_t since; /* start of the current state */
    int off;       /* current state: 0 running, 1 off the CPU */
    int reason;    /* why off */
    int known;     /* a switch was seen */
    uint32_t cpu;  /* of the last switch */
    int woken;     /* a SYS_WAKE arrived while off */
    uint64_t wtid, wpid;
    int wctx;
} tstate;

struct mprof_sys_chrome {
    tstate *t;
    uint32_t n, cap;
    mprof_umap by_tid;
    mprof_sys_comms comms;
};

mprof_sys_chrome *mprof__sys_chrome_new(void)
{
    return calloc(1, sizeof(mprof_sys_chrome));
}

void mprof__sys_chrome_free(mprof_sys_chrome *s)
{
    if (!s)
        return;
    free(s->t);
    mprof_umap_free(&s->by_tid);
    mprof__sys_comms_free(&s->comms);
    free(s);
}

static void sep(FILE *o, uint64_t *count)
{
    fputs((*count)++ ? ",\n" : "\n", o);
}

static const mprof_export_range *cur_range; /* of the event being handled */

static const mprof_sys_chrome *cur_s;

/* The rest of an off-CPU slice's args (slice_x writes the CPU it left): who woke it (the sched
 * tracepoints). */
static void slice_args(FILE *o, const tstate *t)
{
    static const char *const ctx[] = {"task", "hardirq", "softirq", "nmi"};
    if (t->woken) {
        fprintf(o, ",\"waker_tid\":%" PRIu64 ",\"waker_pid\":%" PRIu64 ",\"waker_context\":\"%s\"",
                t->wtid, t->wpid, ctx[t->wctx & 3]);
        const char *name = cur_s && t->wctx == MPROF_SYS_WAKE_TASK
                               ? mprof__sys_comms_name(&cur_s->comms, t->wtid, t->wpid)
                               : NULL;
        if (name) {
            fputs(",\"waker\":", o);
            mprof_json_write_string(o, name, strlen(name));
        }
    }
    fputs("}", o);
}

static void slice_x(FILE *o, uint64_t *count, uint64_t tid, const char *name, int64_t s,
                    int64_t e, const tstate *t);

static void slice(FILE *o, uint64_t *count, uint64_t tid, const char *name, int64_t s, int64_t e)
{
    slice_x(o, count, tid, name, s, e, NULL);
}

static void slice_x(FILE *o, uint64_t *count, uint64_t tid, const char *name, int64_t s,
                    int64_t e, const tstate *t)
{
    if (e <= s || !mprof__range_overlaps(cur_range, s, e))
        return;
    /* A slice for every switch: its text is put together here and written at once (names are
     * this file's, a dozen bytes; numbers at most 26 bytes each). */
    char b[256], *p = b;
#define ADD(str) (memcpy(p, (str), strlen(str)), p += strlen(str))
    const char *lead = (*count)++ ? ",\n{\"ph\":\"X\",\"name\":\"" : "\n{\"ph\":\"X\",\"name\":\"";
    ADD(lead);
    ADD(name);
    ADD("\",\"cat\":\"thread state\",\"pid\":");
    p = mprof__fmt_u64(p, PID_STATES);
    ADD(",\"tid\":");
    p = mprof__fmt_u64(p, STATE_TID(tid));
    ADD(",\"ts\":");
    p = mprof__fmt_us(p, s);
    ADD(",\"dur\":");
    p = mprof__fmt_us(p, e - s);
    if (t) {
        ADD(",\"args\":{\"cpu\":");
        p = mprof__fmt_u64(p, t->cpu);
    }
#undef ADD
    fwrite(b, 1, (size_t)(p - b), o);
    if (t)
        slice_args(o, t);
    fputs("}", o);
}

static const char *off_name(int reason)
{
    return reason == MPROF_SYS_REASON_PREEMPTED ? "preempted"
           : reason == MPROF_SYS_REASON_BLOCKED ? "blocked"
           : reason == MPROF_SYS_REASON_YIELDED ? "yielded"
                                                : "off CPU";
}

int mprof__sys_chrome_event(mprof_sys_chrome *s, FILE *o, uint64_t *count,
                            const mprof_export_range *range, const mprof_event *ev)
{
    cur_range = range;
    if (ev->type == MPROF_EV_SYS_CPU) {
        if (!mprof__range_has(range, ev->ts_ns))
            return 0;
        static const char *const names[2] = {"CPU: other processes %", "CPU: this process %"};
        for (int i = 0; i < 2; i++) {
            double v = mprof_event_f64(ev, i) * 100;
            sep(o, count);
            fprintf(o, "{\"ph\":\"C\",\"name\":\"%s\",\"pid\":1,\"ts\":", names[i]);
            mprof__write_us(o, ev->ts_ns);
            /* Keyed by the counter's own name, as chrome.c writes plots. */
            fprintf(o, ",\"args\":{\"%s\":%.3f}}", names[i], isfinite(v) ? v : 0.0);
        }
        return 0;
    }
    cur_s = s;
    if (ev->type == MPROF_EV_SYS_COMM)
        return mprof__sys_comms_note(&s->comms, ev, 0);
    if (ev->type != MPROF_EV_SYS_SWITCH && ev->type != MPROF_EV_SYS_THREAD &&
        ev->type != MPROF_EV_SYS_WAKE)
        return 0;
    uint64_t tid = ev->u[0];
    uint32_t *v = mprof_umap_get(&s->by_tid, tid + 1);
    tstate *t;
    if (v) {
        t = &s->t[*v];
    } else {
        if (tid == UINT64_MAX || s->n >= (1u << 20) ||
            mprof_array_reserve((void **)&s->t, &s->cap, s->n + 1, sizeof *s->t) != 0 ||
            mprof_umap_put(&s->by_tid, tid + 1, s->n) != 0)
            return -1;
        t = &s->t[s->n++];
        memset(t, 0, sizeof *t);
        t->tid = tid;
        t->since = ev->ts_ns;
    }
    if (ev->type == MPROF_EV_SYS_WAKE) {
        if (t->known && t->off) {
            t->woken = 1;
            t->wtid = ev->u[1];
            t->wpid = ev->u[2];
            t->wctx = (int)ev->u[3];
        }
        return 0;
    }
    if (ev->type == MPROF_EV_SYS_THREAD) {
        if (ev->u[1] == MPROF_SYS_TRACK_START) {
            t->since = ev->ts_ns;
            t->known = 0;
        } else if (ev->u[1] == MPROF_SYS_TRACK_END && t->known) {
            slice(o, count, tid, t->off ? off_name(t->reason) : "running", t->since, ev->ts_ns);
            t->known = 0;
        }
        return 0;
    }
    int out = ev->u[1] == MPROF_SYS_OUT;
    if (!t->known) {
        /* Before the first switch the state is its opposite. */
        slice(o, count, tid, out ? "running" : "off CPU", t->since, ev->ts_ns);
    } else if (out && !t->off) {
        slice(o, count, tid, "running", t->since, ev->ts_ns);
    } else if (!out && t->off) {
        slice_x(o, count, tid, off_name(t->reason), t->since, ev->ts_ns, t);
    } else {
        return 0; /* the same direction twice: keep the first */
    }
    t->known = 1;
    t->woken = 0;
    if (out)
        t->cpu = (uint32_t)ev->u[3];
    t->off = out;
    t->reason = (int)ev->u[2];
    t->since = ev->ts_ns;
    return 0;
}

void mprof__sys_chrome_meta(const mprof_sys_chrome *s, const mprof_reader *r, FILE *o,
                            uint64_t *count)
{
    if (!s->n)
        return;
    sep(o, count);
    fprintf(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":"
               "\"Thread states\"}}",
            PID_STATES);
    uint32_t nt = mprof_reader_thread_count(r);
    for (uint32_t i = 0; i < s->n; i++) {
        char name[300];
        snprintf(name, sizeof name, "tid %" PRIu64 " state", s->t[i].tid);
        for (uint32_t k = 1; k < nt; k++) {
            const mprof_thread_def *d = mprof_reader_thread(r, k);
            if (d && d->os_tid == s->t[i].tid) {
                if (d->name)
                    snprintf(name, sizeof name, "%s state", d->name);
                else
                    snprintf(name, sizeof name, "thread %u state", k);
                break;
            }
        }
        sep(o, count);
        fprintf(o, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRIu64
                   ",\"args\":{\"name\":",
                PID_STATES, STATE_TID(s->t[i].tid));
        mprof_json_write_string(o, name, strlen(name));
        fputs("}}", o);
    }
}
