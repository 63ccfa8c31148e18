/*
 * sysmodel.c - per-thread CPU timelines built from a capture's system records (system.h), and
 * the machine's busy share from its SYS_CPU samples.
 *
 * Each OS thread the library traced has a traced range (SYS_THREAD start .. end, or the end of
 * the capture) and a list of switches. After the last event the switches are sorted and turned
 * into off-CPU intervals with a prefix sum, so "how long was thread T off the CPU between a and
 * b" is two binary searches. The state before the first switch follows from its direction (a
 * switch in means the thread was off), or, for a thread with no switch at all, from the state
 * /proc gave when tracing started. Corrupt input (switches out of order, twice the same
 * direction, times outside the traced range) is clamped or ignored, never trusted.
 */
#include "analysis/system.h"
#include "util/sorted.h"
#include "util/umap.h"

#include <stdlib.h>
#include <string.h>

typedef struct sw {
    int64_t ts;
    uint8_t dir, reason;
} sw;

typedef struct wake {
    int64_t ts;
    uint32_t waker; /* index into the model's wakers */
} wake;

typedef struct waker {
    uint64_t tid, pid; /* 0, 0 for an interrupt */
    int ctx;
    uint32_t tidx; /* the traced thread of this process it is, UINT32_MAX when none */
} waker;

typedef struct otid {
    uint64_t tid;
    int64_t start, end;
    int have_start, have_end, start_state;
    sw *sw;
    uint32_t n_sw, cap_sw;
    int64_t *os, *oe, *pre; /* off intervals [os, oe) and the off time before each */
    uint8_t *orsn;          /* why each interval is off (MPROF_SYS_REASON_*) */
    uint32_t *owk;          /* who woke it (index into wakers), UINT32_MAX when unknown */
    int64_t *owts;          /* when it was woken, INT64_MIN when unknown */
    uint32_t n_off;
    int program;            /* a capture thread: it recorded events, so it is the program's */
    wake *wk;
    uint32_t n_wk, cap_wk;
    int64_t by_reason[MPROF_SYS_REASON_MAX + 1]; /* off-CPU ns */
    uint64_t n_out; /* switches off the CPU */
} otid;

struct mprof_sysmodel {
    otid *t;
    uint32_t n_t, cap_t;
    mprof_umap by_tid;    /* tid + 1 -> index into t */
    int64_t *bts;
    double *bv, *bself;
    uint32_t nb, capb;
    uint32_t *idx_t; /* capture thread index -> index into t + 1 */
    uint32_t n_idx;
    double busy_sum, busy_max, self_sum;
    waker *wakers;
    uint32_t n_wakers, cap_wakers;
    mprof_umap waker_by_key;
    mprof_sys_comms comms;
    struct core { uint32_t cpu, n; double other, self; } *core;
    uint32_t n_core, cap_core;
    int any_wake;
    int any_reason;   /* a switch said preempted or yielded, so reasons are recorded */
    int reasons;      /* switch reasons are known (path_model) */
    uint64_t pid;     /* INFO pid: which wakers are threads of the program */
    int64_t last_ts;
    int incomplete, any_switch, finished;
};

mprof_sysmodel *mprof__sys_new(void)
{
    return calloc(1, sizeof(mprof_sysmodel));
}

void mprof__sys_free(mprof_sysmodel *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->n_t; i++) {
        free(m->t[i].sw);
        free(m->t[i].os);
        free(m->t[i].oe);
        free(m->t[i].pre);
        free(m->t[i].orsn);
        free(m->t[i].owk);
        free(m->t[i].owts);
        free(m->t[i].wk);
    }
    free(m->wakers);
    mprof_umap_free(&m->waker_by_key);
    mprof__sys_comms_free(&m->comms);
    free(m->core);
    free(m->t);
    mprof_umap_free(&m->by_tid);
    free(m->bts);
    free(m->bv);
    free(m->bself);
    free(m->idx_t);
    free(m);
}

int mprof__sys_incomplete(const mprof_sysmodel *m)
{
    return m->incomplete;
}

int mprof__sys_has_switches(const mprof_sysmodel *m)
{
    return m->any_switch;
}

static otid *get_tid(mprof_sysmodel *m, uint64_t tid)
{
    uint32_t *v = mprof_umap_get(&m->by_tid, tid + 1);
    if (v)
        return &m->t[*v];
    if (tid == UINT64_MAX || m->n_t >= (1u << 20) ||
        mprof_array_reserve((void **)&m->t, &m->cap_t, m->n_t + 1, sizeof *m->t) != 0 ||
        mprof_umap_put(&m->by_tid, tid + 1, m->n_t) != 0)
        return NULL;
    otid *t = &m->t[m->n_t++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    return t;
}

void mprof__sys_want(unsigned char want[MPROF_EV_MAX])
{
    for (int t = 0x50; t <= 0x57; t++)
        if (MPROF_EV_IS_PROCESS(t))
            want[t] = 1;
}

int mprof__sys_batch(mprof_sysmodel *m, const mprof_reader *r, const mprof_batch *b)
{
    int rc = 0;
    for (uint32_t i = 0; i < b->n_ev; i++)
        if (MPROF_EV_IS_PROCESS(b->ev[i].type) && mprof__sys_event(m, r, &b->ev[i]) != 0)
            rc = -1;
    mprof__sys_saw(m, b->max_ts_ns);
    return rc;
}

void mprof__sys_saw(mprof_sysmodel *m, int64_t ts)
{
    if (ts > m->last_ts)
        m->last_ts = ts;
}

int mprof__sys_event(mprof_sysmodel *m, const mprof_reader *r, const mprof_event *ev)
{
    (void)r; /* kept for records that need the reader's tables */
    if (ev->ts_ns > m->last_ts)
        m->last_ts = ev->ts_ns;
    switch (ev->type) {
    case MPROF_EV_SYS_THREAD: {
        otid *t = get_tid(m, ev->u[0]);
        if (!t)
            break;
        if (ev->u[1] == MPROF_SYS_TRACK_START) {
            if (!t->have_start || ev->ts_ns < t->start) {
                t->start = ev->ts_ns;
                t->start_state = (int)ev->u[2];
            }
            t->have_start = 1;
        } else if (ev->u[1] == MPROF_SYS_TRACK_END) {
            if (!t->have_end || ev->ts_ns > t->end)
                t->end = ev->ts_ns;
            t->have_end = 1;
        }
        return 0;
    }
    case MPROF_EV_SYS_SWITCH: {
        otid *t = get_tid(m, ev->u[0]);
        if (!t || mprof_array_reserve((void **)&t->sw, &t->cap_sw, t->n_sw + 1, sizeof *t->sw))
            break;
        t->sw[t->n_sw++] = (sw){ev->ts_ns, (uint8_t)(ev->u[1] != 0), (uint8_t)ev->u[2]};
        m->any_switch = 1;
        if (ev->u[1] == MPROF_SYS_OUT &&
            (ev->u[2] == MPROF_SYS_REASON_PREEMPTED || ev->u[2] == MPROF_SYS_REASON_YIELDED))
            m->any_reason = 1;
        return 0;
    }
    case MPROF_EV_SYS_WAKE: {
        otid *t = get_tid(m, ev->u[0]);
        int ctx = (int)ev->u[3];
        uint64_t wt = ctx == MPROF_SYS_WAKE_TASK ? ev->u[1] : 0;
        uint64_t wp = ctx == MPROF_SYS_WAKE_TASK ? ev->u[2] : 0;
        uint64_t key = ((wt & 0xffffffffffull) << 22 ^ (wp & 0x3fffff) << 2 ^ (uint64_t)(ctx & 3)) + 1;
        uint32_t *v = mprof_umap_get(&m->waker_by_key, key);
        uint32_t w;
        if (v && m->wakers[*v].tid == wt && m->wakers[*v].pid == wp && m->wakers[*v].ctx == ctx) {
            w = *v;
        } else {
            if (v || m->n_wakers >= (1u << 20) ||
                mprof_array_reserve((void **)&m->wakers, &m->cap_wakers, m->n_wakers + 1,
                                    sizeof *m->wakers) != 0 ||
                mprof_umap_put(&m->waker_by_key, key, m->n_wakers) != 0)
                break; /* a key collision (corrupt ids) counts as incomplete */
            w = m->n_wakers++;
            m->wakers[w] = (waker){wt, wp, ctx, UINT32_MAX};
        }
        if (!t || mprof_array_reserve((void **)&t->wk, &t->cap_wk, t->n_wk + 1, sizeof *t->wk))
            break;
        t->wk[t->n_wk++] = (wake){ev->ts_ns, w};
        m->any_wake = 1;
        return 0;
    }
    case MPROF_EV_SYS_COMM:
        if (mprof__sys_comms_note(&m->comms, ev, 1) != 0)
            break;
        return 0;
    case MPROF_EV_SYS_CPU_CORE: {
        uint32_t cpu = (uint32_t)ev->u[0], k = 0;
        while (k < m->n_core && m->core[k].cpu != cpu)
            k++;
        if (k == m->n_core) {
            if (m->n_core >= 4096 ||
                mprof_array_reserve((void **)&m->core, &m->cap_core, m->n_core + 1, sizeof *m->core))
                break;
            m->core[m->n_core++] = (struct core){cpu, 0, 0, 0};
        }
        double o = mprof_event_f64(ev, 1), sf = mprof_event_f64(ev, 2);
        m->core[k].other += o >= 0 && o <= 1 ? o : 0;
        m->core[k].self += sf >= 0 && sf <= 1 ? sf : 0;
        m->core[k].n++;
        return 0;
    }
    case MPROF_EV_SYS_CPU: {
        if (mprof_array_reserve((void **)&m->bts, &m->capb, m->nb + 1, sizeof *m->bts) != 0)
            break;
        double *nv = realloc(m->bv, (size_t)m->capb * sizeof *nv);
        if (!nv)
            break;
        m->bv = nv;
        nv = realloc(m->bself, (size_t)m->capb * sizeof *nv);
        if (!nv)
            break;
        m->bself = nv;
        double v = mprof_event_f64(ev, 0);
        if (!(v >= 0))
            v = 0; /* NaN or negative from a corrupt file */
        if (v > 1)
            v = 1;
        double self = mprof_event_f64(ev, 1);
        if (!(self >= 0 && self <= 1))
            self = 0;
        m->self_sum += self;
        m->bself[m->nb] = self;
        m->bts[m->nb] = ev->ts_ns;
        m->bv[m->nb++] = v;
        m->busy_sum += v;
        if (v > m->busy_max)
            m->busy_max = v;
        return 0;
    }
    default:
        return 0;
    }
    m->incomplete = 1;
    return -1;
}

static int cmp_sw(const void *pa, const void *pb)
{
    const sw *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (int)a->dir - (int)b->dir; /* out before in at one instant */
}

static int cmp_wake(const void *pa, const void *pb)
{
    const wake *a = pa, *b = pb;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* Room for nc intervals in a thread's interval arrays (*cap is their capacity). */
static int reserve_off(otid *t, uint32_t *cap, uint32_t nc)
{
    if (nc > *cap) {
        int64_t *a = realloc(t->os, nc * sizeof *a);
        if (!a)
            return -1;
        t->os = a;
        a = realloc(t->oe, nc * sizeof *a);
        if (!a)
            return -1;
        t->oe = a;
        a = realloc(t->pre, nc * sizeof *a);
        if (!a)
            return -1;
        t->pre = a;
        uint8_t *r = realloc(t->orsn, nc);
        if (!r)
            return -1;
        t->orsn = r;
        uint32_t *w = realloc(t->owk, nc * sizeof *w);
        if (!w)
            return -1;
        t->owk = w;
        a = realloc(t->owts, nc * sizeof *a);
        if (!a)
            return -1;
        t->owts = a;
        *cap = nc;
    }
    return 0;
}

static int push_off(otid *t, uint32_t *cap, int64_t s, int64_t e, int reason)
{
    if (e <= s)
        return 0;
    if (t->n_off == *cap && reserve_off(t, cap, *cap ? *cap * 2 : 64) != 0)
        return -1;
    t->orsn[t->n_off] = (uint8_t)reason;
    t->owk[t->n_off] = UINT32_MAX;
    t->owts[t->n_off] = INT64_MIN;
    t->by_reason[reason <= MPROF_SYS_REASON_MAX ? reason : 0] += e - s;
    t->pre[t->n_off] = t->n_off ? t->pre[t->n_off - 1] + (t->oe[t->n_off - 1] - t->os[t->n_off - 1]) : 0;
    t->os[t->n_off] = s;
    t->oe[t->n_off] = e;
    t->n_off++;
    return 0;
}

/* Sorts a thread's switches as a stable sort does. They come nearly in order (a thread's
 * switches are out of order only across the CPUs it ran on), so insertion does it in a pass or
 * two; past a budget of moves the rest goes to qsort (glibc's is a merge sort, stable: an
 * insertion never passes an equal element, so the order it leaves sorts to the same result). */
static void sort_switches(sw *v, uint32_t n)
{
    uint64_t budget = 8 * (uint64_t)n + 64;
    for (uint32_t i = 1; i < n; i++) {
        if (cmp_sw(&v[i - 1], &v[i]) <= 0)
            continue;
        sw x = v[i];
        uint32_t j = i;
        while (j > 0 && cmp_sw(&v[j - 1], &x) > 0 && budget) {
            v[j] = v[j - 1];
            j--;
            budget--;
        }
        v[j] = x;
        if (!budget) {
            qsort(v, n, sizeof *v, cmp_sw);
            return;
        }
    }
}

static void build(mprof_sysmodel *m, otid *t)
{
    if (t->n_sw > 1)
        sort_switches(t->sw, t->n_sw);
    if (!t->have_start) {
        if (!t->n_sw) {
            t->start = t->end = 0;
            return;
        }
        t->start = t->sw[0].ts;
    }
    if (!t->have_end)
        t->end = m->last_ts;
    if (t->end < t->start)
        t->end = t->start;
    int off;
    if (t->n_sw)
        off = t->sw[0].dir == MPROF_SYS_IN;
    else
        off = !(t->start_state == 'R');
    int64_t off_start = t->start;
    int reason = MPROF_SYS_REASON_UNKNOWN;
    uint32_t cap = 0;
    /* An interval ends at a switch in that follows a switch out, or at the end, so this bounds
     * their number: the arrays are sized once, where growing would copy them and fault their
     * pages in twice. */
    if (reserve_off(t, &cap, t->n_sw / 2 + 2) != 0) {
        m->incomplete = 1;
        return;
    }
    for (uint32_t i = 0; i < t->n_sw; i++) {
        int64_t ts = t->sw[i].ts;
        ts = ts < t->start ? t->start : ts > t->end ? t->end : ts;
        if (t->sw[i].dir == MPROF_SYS_OUT && !off) {
            off = 1;
            t->n_out++;
            off_start = ts;
            reason = t->sw[i].reason;
        } else if (t->sw[i].dir == MPROF_SYS_IN && off) {
            off = 0;
            if (push_off(t, &cap, off_start, ts, reason) != 0) {
                m->incomplete = 1;
                return;
            }
        }
    }
    if (off && push_off(t, &cap, off_start, t->end, reason) != 0)
        m->incomplete = 1;
    /* Who woke each interval: the last wake-up within it (it precedes the switch in). */
    if (t->n_wk > 1)
        qsort(t->wk, t->n_wk, sizeof *t->wk, cmp_wake);
    uint32_t w = 0;
    for (uint32_t k = 0; k < t->n_off; k++) {
        while (w < t->n_wk && t->wk[w].ts < t->os[k])
            w++;
        uint32_t last = UINT32_MAX;
        int64_t when = INT64_MIN;
        while (w < t->n_wk && t->wk[w].ts <= t->oe[k]) {
            when = t->wk[w].ts;
            last = t->wk[w++].waker;
        }
        t->owk[k] = last;
        t->owts[k] = when;
    }
}

static void path_prepare(mprof_sysmodel *m, const mprof_reader *r);

void mprof__sys_finish(mprof_sysmodel *m, const mprof_reader *r)
{
    if (m->finished)
        return;
    m->finished = 1;
    for (uint32_t i = 0; i < m->n_t; i++)
        build(m, &m->t[i]);
    uint32_t n = mprof_reader_thread_count(r);
    if (n > (1u << 24))
        n = 1u << 24;
    m->idx_t = calloc(n ? n : 1, sizeof *m->idx_t);
    if (!m->idx_t) {
        m->incomplete = 1;
        return;
    }
    m->n_idx = n;
    for (uint32_t i = 1; i < n; i++) {
        const mprof_thread_def *d = mprof_reader_thread(r, i);
        uint32_t *v = d ? mprof_umap_get(&m->by_tid, d->os_tid + 1) : NULL;
        if (v) {
            m->idx_t[i] = *v + 1;
            m->t[*v].program = 1;
        }
    }
    path_prepare(m, r);
    /* The busy samples are normally in time order; a corrupt file may not be. */
    for (uint32_t i = 1; i < m->nb; i++) {
        for (uint32_t k = i; k > 0 && m->bts[k - 1] > m->bts[k]; k--) {
            int64_t t = m->bts[k];
            m->bts[k] = m->bts[k - 1];
            m->bts[k - 1] = t;
            double v = m->bv[k];
            m->bv[k] = m->bv[k - 1];
            m->bv[k - 1] = v;
            if (i - k > 64)
                break; /* bounded: a wildly shuffled file gets approximate figures, fast */
        }
    }
}

/* Off-CPU time of t before instant x (x within [start, end]). */
static int64_t off_before(const otid *t, int64_t x)
{
    /* The first interval that starts after x. */
    uint32_t lo = (uint32_t)mprof_first_after(t->os, t->n_off, x);
    if (lo == 0)
        return 0;
    uint32_t k = lo - 1;
    int64_t e = x < t->oe[k] ? x : t->oe[k];
    return t->pre[k] + (e - t->os[k]);
}

int64_t mprof__sys_off_at(const mprof_sysmodel *m, uint32_t tx, int64_t x, uint32_t *cursor,
                          int64_t *out_lo, int64_t *out_hi)
{
    const otid *t = &m->t[tx];
    int64_t raw = x;
    if (x < t->start)
        x = t->start;
    if (x > t->end)
        x = t->end;
    uint32_t lo = *cursor;
    if (lo > t->n_off || (lo > 0 && t->os[lo - 1] > x))
        lo = (uint32_t)mprof_first_after(t->os, t->n_off, x); /* went back: search */
    else
        while (lo < t->n_off && t->os[lo] <= x)
            lo++;
    *cursor = lo;
    /* Between two intervals (or outside all) the value holds from the end of the one before to
     * the start of the next; inside an interval it holds only at x. Clamping stretches the
     * span to everything before the traced start or after its end when those fall in it. */
    int64_t a = lo ? t->oe[lo - 1] : INT64_MIN, b = lo < t->n_off ? t->os[lo] - 1 : INT64_MAX;
    if (lo && x < t->oe[lo - 1]) {
        *out_lo = *out_hi = raw;
    } else {
        *out_lo = a <= t->start ? INT64_MIN : a;
        *out_hi = b >= t->end ? INT64_MAX : b;
    }
    if (lo == 0)
        return 0;
    uint32_t k = lo - 1;
    int64_t e = x < t->oe[k] ? x : t->oe[k];
    return t->pre[k] + (e - t->os[k]);
}

void mprof__sys_tid_clamp(const mprof_sysmodel *m, uint32_t tx, int64_t *a, int64_t *b)
{
    const otid *t = &m->t[tx];
    if (*a < t->start)
        *a = t->start;
    if (*b > t->end)
        *b = t->end;
}

static void tid_time(const otid *t, int64_t a, int64_t b, int64_t *off, int64_t *traced)
{
    *off = *traced = 0;
    if (a < t->start)
        a = t->start;
    if (b > t->end)
        b = t->end;
    if (b <= a)
        return;
    *traced = b - a;
    *off = off_before(t, b) - off_before(t, a);
}

void mprof__sys_thread_time(const mprof_sysmodel *m, uint32_t idx, int64_t a, int64_t b,
                            int64_t *out_off, int64_t *out_traced)
{
    *out_off = *out_traced = 0;
    if (!m->finished || idx >= m->n_idx || !m->idx_t[idx])
        return;
    tid_time(&m->t[m->idx_t[idx] - 1], a, b, out_off, out_traced);
}

uint64_t mprof__sys_thread_switches(const mprof_sysmodel *m, uint32_t idx)
{
    if (!m->finished || idx >= m->n_idx || !m->idx_t[idx])
        return 0;
    return m->t[m->idx_t[idx] - 1].n_out;
}

int mprof__sys_thread_traced(const mprof_sysmodel *m, uint32_t idx)
{
    return m->finished && idx < m->n_idx && m->idx_t[idx];
}

int64_t mprof__sys_process_cpu(const mprof_sysmodel *m, int64_t a, int64_t b)
{
    int64_t sum = 0;
    for (uint32_t i = 0; m->finished && i < m->n_t; i++) {
        int64_t off, traced;
        tid_time(&m->t[i], a, b, &off, &traced);
        sum += traced - off;
    }
    return sum;
}

double mprof__sys_machine_busy(const mprof_sysmodel *m, int64_t a, int64_t b)
{
    if (!m->nb || b <= a)
        return -1;
    /* Sample i covers (bts[i-1], bts[i]]; the first covers the 100 ms before it, and the last
     * value holds after it (the capture ends less than 100 ms later). */
    if (a >= m->bts[m->nb - 1])
        return m->bv[m->nb - 1];
    uint32_t lo = (uint32_t)mprof_first_after(m->bts, m->nb, a);
    double w = 0, sum = 0;
    for (uint32_t i = lo; i < m->nb; i++) {
        int64_t s = i ? m->bts[i - 1] : m->bts[0] - 100000000;
        if (s >= b)
            break;
        int64_t e = i + 1 == m->nb ? INT64_MAX : m->bts[i];
        int64_t os = s > a ? s : a, oe = e < b ? e : b;
        if (oe > os) {
            w += (double)(oe - os);
            sum += (double)(oe - os) * m->bv[i];
        }
    }
    return w > 0 ? sum / w : -1;
}

void mprof__sys_status(const mprof_reader *r, mprof_sys_status *out)
{
    memset(out, 0, sizeof *out);
    const char *v = mprof_reader_info(r, "system.context_switches");
    out->context_switches = v && strcmp(v, "on") == 0;
    v = mprof_reader_info(r, "system.cpu_usage");
    out->cpu_usage = v && strcmp(v, "on") == 0;
    v = mprof_reader_info(r, "system.sampling");
    out->sampling = v && strcmp(v, "on") == 0;
    v = mprof_reader_info(r, "system.sample_hz");
    unsigned long hz = v ? strtoul(v, NULL, 10) : 0;
    out->sample_hz = hz > 1000000 ? 1000000 : (unsigned)hz;
    if (!mprof_reader_info(r, "system.context_switches")) {
        out->why_not = "the capture has no system records (recorded by a library without "
                       "system tracing, format 1.0)";
        return;
    }
    static const char *const keys[] = {"system.context_switches.why_not",
                                       "system.cpu_usage.why_not", "system.sampling.why_not"};
    int on[3] = {out->context_switches, out->cpu_usage, out->sampling};
    for (int i = 0; i < 3; i++)
        if (!on[i] && (v = mprof_reader_info(r, keys[i])) && !out->why_not)
            out->why_not = v;
}

int mprof__sys_has_busy(const mprof_sysmodel *m)
{
    return m->nb > 0;
}

void mprof__sys_busy_summary(const mprof_sysmodel *m, uint32_t *out_n, double *out_mean,
                             double *out_max, double *out_self_mean)
{
    *out_n = m->nb;
    *out_mean = m->nb ? m->busy_sum / m->nb : 0;
    *out_max = m->busy_max;
    *out_self_mean = m->nb ? m->self_sum / m->nb : 0;
}

void mprof__sys_frames(const mprof_sysmodel *m, uint32_t idx, const int64_t *fs,
                       const int64_t *fe, size_t nf, double *out_on_ms, double *out_off_ms,
                       double *out_cpu_ms, double *out_busy)
{
    for (size_t i = 0; i < nf; i++) {
        int64_t off, traced;
        mprof__sys_thread_time(m, idx, fs[i], fe[i], &off, &traced);
        if (out_on_ms)
            out_on_ms[i] = (double)(traced - off) / 1e6;
        if (out_off_ms)
            out_off_ms[i] = (double)off / 1e6;
        if (out_cpu_ms)
            out_cpu_ms[i] = (double)mprof__sys_process_cpu(m, fs[i], fe[i]) / 1e6;
        if (out_busy) {
            double b = mprof__sys_machine_busy(m, fs[i], fe[i]);
            out_busy[i] = b < 0 ? 0 : b;
        }
    }
}

void mprof__sys_spread_off(const mprof_sysmodel *m, uint32_t idx, const int64_t *fs,
                           const int64_t *fe, size_t nf, int64_t a, int64_t b, int64_t *acc)
{
    if (!acc || b <= a || !nf || !mprof__sys_thread_traced(m, idx))
        return;
    for (size_t i = mprof_first_after(fe, nf, a); i < nf && fs[i] < b; i++) {
        int64_t s = a > fs[i] ? a : fs[i];
        int64_t e = b < fe[i] ? b : fe[i];
        if (e <= s)
            continue;
        int64_t off, traced;
        mprof__sys_thread_time(m, idx, s, e, &off, &traced);
        acc[i] += off;
    }
}

uint32_t mprof__sys_tid_count(const mprof_sysmodel *m)
{
    return m->finished ? m->n_t : 0;
}

void mprof__sys_tid_info(const mprof_sysmodel *m, uint32_t i, uint64_t *out_tid,
                         int64_t *out_start, int64_t *out_end, uint32_t *out_n_off)
{
    const otid *t = &m->t[i];
    *out_tid = t->tid;
    *out_start = t->start;
    *out_end = t->end;
    *out_n_off = t->n_off;
}

void mprof__sys_tid_off(const mprof_sysmodel *m, uint32_t i, uint32_t k, int64_t *out_s,
                        int64_t *out_e, int *out_reason)
{
    const otid *t = &m->t[i];
    *out_s = t->os[k];
    *out_e = t->oe[k];
    *out_reason = t->orsn[k];
}

uint32_t mprof__sys_cpu_count(const mprof_sysmodel *m)
{
    return m->nb;
}

void mprof__sys_cpu_sample(const mprof_sysmodel *m, uint32_t i, int64_t *out_ts,
                           double *out_other, double *out_self)
{
    *out_ts = m->bts[i];
    *out_other = m->bv[i];
    *out_self = m->bself[i];
}

int mprof__sys_has_wakes(const mprof_sysmodel *m)
{
    return m->any_wake;
}

void mprof__sys_thread_reasons(const mprof_sysmodel *m, uint32_t idx, int64_t *out)
{
    memset(out, 0, (MPROF_SYS_REASON_MAX + 1) * sizeof *out);
    if (!m->finished || idx >= m->n_idx || !m->idx_t[idx])
        return;
    memcpy(out, m->t[m->idx_t[idx] - 1].by_reason, (MPROF_SYS_REASON_MAX + 1) * sizeof *out);
}

int64_t mprof__sys_thread_tidx(const mprof_sysmodel *m, uint32_t idx)
{
    if (!m->finished || idx >= m->n_idx || !m->idx_t[idx])
        return -1;
    return (int64_t)m->idx_t[idx] - 1;
}

uint32_t mprof__sys_tid_waker(const mprof_sysmodel *m, uint32_t i, uint32_t k)
{
    return m->t[i].owk ? m->t[i].owk[k] : UINT32_MAX;
}

uint32_t mprof__sys_waker_count(const mprof_sysmodel *m)
{
    return m->n_wakers;
}

void mprof__sys_waker_info(const mprof_sysmodel *m, uint32_t w, uint64_t *out_tid,
                           uint64_t *out_pid, int *out_ctx, const char **out_comm)
{
    const waker *k = &m->wakers[w];
    *out_tid = k->tid;
    *out_pid = k->pid;
    *out_ctx = k->ctx;
    *out_comm = NULL;
    if (k->ctx == MPROF_SYS_WAKE_TASK)
        *out_comm = mprof__sys_comms_name(&m->comms, k->tid, k->pid);
}

uint32_t mprof__sys_core_count(const mprof_sysmodel *m)
{
    return m->n_core;
}

void mprof__sys_core(const mprof_sysmodel *m, uint32_t i, uint32_t *out_cpu, uint32_t *out_n,
                     double *out_other_mean, double *out_self_mean)
{
    *out_cpu = m->core[i].cpu;
    *out_n = m->core[i].n;
    *out_other_mean = m->core[i].n ? m->core[i].other / m->core[i].n : 0;
    *out_self_mean = m->core[i].n ? m->core[i].self / m->core[i].n : 0;
}

/* ---- the critical path of a frame ----------------------------------------------------------- */

/*
 * A frame is slow for the code's sake when its main thread ran longer or waited longer for the
 * program's own work, and for the machine's sake when something on its critical path was
 * runnable but not running: the main thread preempted, the main thread woken but not yet on a
 * CPU, or the thread it waited for preempted while the main thread waited. The walk goes back
 * along that path: each off-CPU interval of a thread in a window is either preempted (counted),
 * or a wait whose waker is followed into its own window, [start of the wait, wake-up), with its
 * wake-up latency (wake-up to switch-in) counted. The windows of one walk never overlap (a
 * thread's intervals are disjoint, and a wait's window lies inside the wait), so nothing is
 * counted twice and the total never exceeds the frame.
 *
 * Who woke a wait is recorded with the sched tracepoints (SYS_WAKE). Without them (and for a
 * wait whose wake-up they missed) it is inferred: the waker ran at the wake-up, so it is a
 * program thread still running when the wait ended, or the one that stopped last before (a job
 * worker that signals and then waits for more work, handing its CPU to the woken thread); the
 * candidate that removes least is taken, and a wait during which no program thread ran (a
 * sleep, I/O) removes nothing. On the sample engine under a CPU hog the inference removed 95-99 %
 * of what the recorded wakers did, waits differing by more than 0.3 ms in fewer than 1 in 200
 * (docs/GATE.md). Yields and waits for anything else stay in the frame: they are the program's.
 */

#define PATH_DEPTH 6     /* waits followed into wakers' waits, at most */
#define PATH_TIES 4      /* inferred wakers tied for "ran last" that are each walked */
#define PATH_BUDGET 4096 /* intervals and candidates visited per frame */

/* Kernels from 4.17 mark a preempted PERF_RECORD_SWITCH (PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
 * before, every switch-out reads as blocked. */
static int kernel_marks_preemption(const char *os)
{
    unsigned major = 0, minor = 0;
    if (!os || sscanf(os, "Linux %u.%u", &major, &minor) != 2)
        return 0;
    return major > 4 || (major == 4 && minor >= 17);
}

static void path_prepare(mprof_sysmodel *m, const mprof_reader *r)
{
    const char *v = mprof_reader_info(r, "pid");
    m->pid = v ? strtoull(v, NULL, 10) : 0;
    v = mprof_reader_info(r, "system.sched_switch");
    int sched = v && strncmp(v, "on", 2) == 0;
    m->reasons = sched || m->any_reason || kernel_marks_preemption(mprof_reader_info(r, "os"));
    for (uint32_t w = 0; w < m->n_wakers; w++) {
        waker *k = &m->wakers[w];
        uint32_t *t = k->ctx == MPROF_SYS_WAKE_TASK && m->pid && k->pid == m->pid
                          ? mprof_umap_get(&m->by_tid, k->tid + 1)
                          : NULL;
        k->tidx = t ? *t : UINT32_MAX;
    }
}

int mprof__sys_path_model(const mprof_sysmodel *m)
{
    if (!m->finished || !m->any_switch || !m->reasons)
        return MPROF_SYS_PATH_NONE;
    return m->any_wake ? MPROF_SYS_PATH_WAKERS : MPROF_SYS_PATH_INFERRED;
}

typedef struct path_walk {
    const mprof_sysmodel *m;
    int model;
    int budget;
    int truncated;
    size_t unrecorded; /* waits of the wakers model whose wake-up was not recorded */
} path_walk;

static int64_t clip_len(int64_t s, int64_t e, int64_t a, int64_t b)
{
    s = s > a ? s : a;
    e = e < b ? e : b;
    return e > s ? e - s : 0;
}

/* The last instant in (s, x] at which t was on the CPU; INT64_MIN when it was off, or not
 * traced, throughout. */
static int64_t last_on(const otid *t, int64_t s, int64_t x)
{
    int64_t y = x < t->end ? x : t->end;
    if (y <= s || y <= t->start)
        return INT64_MIN;
    size_t j = mprof_first_after(t->os, t->n_off, y - 1); /* the first that starts at y or later */
    if (j == 0 || t->oe[j - 1] <= y)
        return y;
    return t->os[j - 1] > s ? t->os[j - 1] : INT64_MIN;
}

static int64_t path_thread(path_walk *w, uint32_t ti, int64_t a, int64_t b, int depth);

/* The runnable time on the critical path of wait k of thread ti, within [a, b): the wake-up
 * latency, and the waker's own path up to the wake-up. */
static int64_t path_wait(path_walk *w, uint32_t ti, uint32_t k, int64_t a, int64_t b, int depth)
{
    const mprof_sysmodel *m = w->m;
    const otid *t = &m->t[ti];
    int64_t s = t->os[k], x = t->oe[k];
    int64_t woken = t->owts[k];
    if (w->model == MPROF_SYS_PATH_WAKERS && woken == INT64_MIN)
        w->unrecorded++;
    if (w->model == MPROF_SYS_PATH_WAKERS && woken != INT64_MIN) {
        int64_t sum = clip_len(woken, x, a, b);
        uint32_t wi = t->owk[k] < m->n_wakers ? m->wakers[t->owk[k]].tidx : UINT32_MAX;
        if (wi != UINT32_MAX && wi != ti && depth < PATH_DEPTH)
            sum += path_thread(w, wi, s > a ? s : a, woken < b ? woken : b, depth + 1);
        return sum;
    }
    /* Inferred (also for a wait whose wake-up the tracepoints did not record). The waker ran at
     * the wake-up, which came before x: either it still runs at x
     * (and the wait ended on another CPU), or it is the program thread that stopped last before
     * x (a worker that signals and then waits for more work, handing its CPU to the woken
     * thread). Each of those is a candidate, and the one that removes least is taken. */
    uint32_t run[PATH_TIES], stop[PATH_TIES], cand[2 * PATH_TIES];
    int64_t at[2 * PATH_TIES];
    int n_run = 0, n_stop = 0, n = 0;
    int64_t last = INT64_MIN;
    for (uint32_t c = 0; c < m->n_t; c++) {
        if (c == ti || !m->t[c].program)
            continue;
        if (--w->budget < 0) {
            w->truncated = 1;
            return 0;
        }
        int64_t l = last_on(&m->t[c], s, x);
        if (l == INT64_MIN)
            continue;
        if (l == x) {
            if (n_run < PATH_TIES)
                run[n_run++] = c;
        } else if (l >= last) {
            if (l > last)
                n_stop = 0;
            last = l;
            if (n_stop < PATH_TIES)
                stop[n_stop++] = c;
        }
    }
    for (int i = 0; i < n_run; i++) {
        cand[n] = run[i];
        at[n++] = x;
    }
    for (int i = 0; i < n_stop; i++) {
        cand[n] = stop[i];
        at[n++] = last;
    }
    if (n == 0)
        return 0;
    int64_t least = INT64_MAX;
    for (int i = 0; i < n; i++) {
        int64_t v = clip_len(at[i], x, a, b);
        if (depth < PATH_DEPTH)
            v += path_thread(w, cand[i], s > a ? s : a, at[i] < b ? at[i] : b, depth + 1);
        if (v < least)
            least = v;
    }
    return least;
}

/* The runnable time on thread ti's part of the critical path within [a, b): its preempted
 * intervals and what its waits' wakers contributed. */
static int64_t path_thread(path_walk *w, uint32_t ti, int64_t a, int64_t b, int depth)
{
    const otid *t = &w->m->t[ti];
    int64_t sum = 0;
    if (b <= a)
        return 0;
    /* Intervals are disjoint and sorted, so their ends are sorted too. */
    for (size_t k = mprof_first_after(t->oe, t->n_off, a); k < t->n_off && t->os[k] < b; k++) {
        if (--w->budget < 0) {
            w->truncated = 1;
            break;
        }
        if (t->orsn[k] == MPROF_SYS_REASON_PREEMPTED)
            sum += clip_len(t->os[k], t->oe[k], a, b);
        else if (t->orsn[k] == MPROF_SYS_REASON_BLOCKED)
            sum += path_wait(w, ti, (uint32_t)k, a, b, depth);
    }
    return sum;
}

size_t mprof__sys_frames_path(const mprof_sysmodel *m, uint32_t idx, const int64_t *fs,
                              const int64_t *fe, size_t nf, double *out_preempted_ms,
                              double *out_wait_ms, size_t *out_unrecorded)
{
    path_walk w = {m, mprof__sys_path_model(m), 0, 0, 0};
    int64_t ti = mprof__sys_thread_tidx(m, idx);
    size_t truncated = 0;
    for (size_t i = 0; i < nf; i++) {
        int64_t pre = 0, wait = 0;
        if (ti >= 0 && w.model != MPROF_SYS_PATH_NONE) {
            const otid *t = &m->t[ti];
            w.budget = PATH_BUDGET;
            w.truncated = 0;
            for (size_t k = mprof_first_after(t->oe, t->n_off, fs[i]);
                 k < t->n_off && t->os[k] < fe[i]; k++) {
                if (t->orsn[k] == MPROF_SYS_REASON_PREEMPTED)
                    pre += clip_len(t->os[k], t->oe[k], fs[i], fe[i]);
                else if (t->orsn[k] == MPROF_SYS_REASON_BLOCKED)
                    wait += path_wait(&w, (uint32_t)ti, (uint32_t)k, fs[i], fe[i], 0);
            }
            truncated += w.truncated != 0;
        }
        if (out_preempted_ms)
            out_preempted_ms[i] = (double)pre / 1e6;
        if (out_wait_ms)
            out_wait_ms[i] = (double)wait / 1e6;
    }
    if (out_unrecorded)
        *out_unrecorded = w.unrecorded;
    return truncated;
}

/* ---- thread names --------------------------------------------------------------------------- */

int mprof__sys_comms_note(mprof_sys_comms *c, const mprof_event *ev, int printable)
{
    uint32_t *v = mprof_umap_get(&c->by_tid, ev->u[0] + 1);
    uint32_t k;
    if (v) {
        k = *v;
    } else {
        if (ev->u[0] == UINT64_MAX || c->n >= (1u << 20) ||
            mprof_array_reserve((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v) != 0 ||
            mprof_umap_put(&c->by_tid, ev->u[0] + 1, c->n) != 0)
            return -1;
        k = c->n++;
    }
    mprof_sys_comm *e = &c->v[k];
    e->tid = ev->u[0];
    e->pid = ev->u[1];
    size_t n = ev->str_len < 16 ? ev->str_len : 16;
    memcpy(e->name, ev->str, n);
    e->name[n] = 0;
    for (size_t i = 0; printable && i < n; i++)
        if ((unsigned char)e->name[i] < 0x20 || e->name[i] == '"' || e->name[i] == '\\' ||
            (unsigned char)e->name[i] >= 0x7f)
            e->name[i] = '?'; /* a name from the kernel: printable ASCII only */
    return 0;
}

const char *mprof__sys_comms_name(const mprof_sys_comms *c, uint64_t tid, uint64_t pid)
{
    const uint32_t *v = mprof_umap_get(&c->by_tid, tid + 1);
    return v && c->v[*v].pid == pid ? c->v[*v].name : NULL;
}

void mprof__sys_comms_free(mprof_sys_comms *c)
{
    mprof_umap_free(&c->by_tid);
    free(c->v);
    memset(c, 0, sizeof *c);
}
