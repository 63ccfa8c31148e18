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
    uint32_t n_off;
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
            m->wakers[w] = (waker){wt, wp, ctx};
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

static int push_off(otid *t, uint32_t *cap, int64_t s, int64_t e, int reason)
{
    if (e <= s)
        return 0;
    if (t->n_off == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 64;
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
        *cap = nc;
    }
    t->orsn[t->n_off] = (uint8_t)reason;
    t->owk[t->n_off] = UINT32_MAX;
    t->by_reason[reason <= MPROF_SYS_REASON_MAX ? reason : 0] += e - s;
    t->pre[t->n_off] = t->n_off ? t->pre[t->n_off - 1] + (t->oe[t->n_off - 1] - t->os[t->n_off - 1]) : 0;
    t->os[t->n_off] = s;
    t->oe[t->n_off] = e;
    t->n_off++;
    return 0;
}

static void build(mprof_sysmodel *m, otid *t)
{
    if (t->n_sw > 1)
        qsort(t->sw, t->n_sw, sizeof *t->sw, cmp_sw);
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
        while (w < t->n_wk && t->wk[w].ts <= t->oe[k])
            last = t->wk[w++].waker;
        t->owk[k] = last;
    }
}

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
        if (v)
            m->idx_t[i] = *v + 1;
    }
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
                           const int64_t *fe, size_t nf, int64_t a, int64_t b, double *acc)
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
        acc[i] += (double)off / 1e6;
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
