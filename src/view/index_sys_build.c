/*
 * index_sys_build.c - the system and lock section of the served viewer's index, built during
 * the index's pass (index_sys.h) and written as one block (index_sys_file.h).
 *
 * The system model (analysis/system.h) holds every switch while the index is built, as the
 * report does; the callstack samples and lock spans are kept as they come, then sorted, grouped
 * and summed once at the end. The server's memory holds none of it: it maps the section.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "view/index_sys.h"

#include "util/json_out.h"
#include "analysis/symbolize.h"
#include "analysis/system.h"
#include "util/umap.h"
#include "view/index_sys_file.h"
#include "util/grow.h"

#include <stdlib.h>
#include <string.h>

typedef struct bspan { int64_t s, e; uint32_t lock, waiting; } bspan;

struct mprof_vsys {
    mprof_sysmodel *m;
    mprof_symbolizer *sym;
    ssample *smp;     /* stack = the reader's callstack id until written */
    uint64_t *smp_tid;
    size_t n_smp, cap_smp;
    bspan *sp;
    size_t n_sp, cap_sp;
    int any;          /* a system record was seen */
};

mprof_vsys *mprof__vsys_new(void)
{
    mprof_vsys *s = calloc(1, sizeof *s);
    if (s && !(s->m = mprof__sys_new())) {
        free(s);
        return NULL;
    }
    return s;
}

void mprof__vsys_free(mprof_vsys *s)
{
    if (!s)
        return;
    mprof__sys_free(s->m);
    mprof_symbolizer_free(s->sym);
    free(s->smp);
    free(s->smp_tid);
    free(s->sp);
    free(s);
}

int mprof__vsys_event(mprof_vsys *s, const mprof_reader *r, const mprof_event *ev)
{
    if (ev->type >= MPROF_EV_SYS_SWITCH && ev->type <= MPROF_EV_SYS_CPU)
        s->any = 1;
    if (mprof__sys_event(s->m, r, ev) != 0)
        return -1;
    if (ev->type == MPROF_EV_SYS_SAMPLE) {
        size_t cap = s->cap_smp;
        if (MPROF_GROW(s->smp, cap, s->n_smp + 1, 1024) != 0)
            return -1;
        size_t cap2 = s->cap_smp;
        if (MPROF_GROW(s->smp_tid, cap2, s->n_smp + 1, 1024) != 0)
            return -1;
        s->cap_smp = cap < cap2 ? cap : cap2;
        s->smp[s->n_smp] = (ssample){ev->ts_ns, (uint32_t)ev->u[1], UINT32_MAX};
        s->smp_tid[s->n_smp++] = ev->u[0];
    } else if (ev->type == MPROF_EV_DEF_MODULE) {
        if (!s->sym && !(s->sym = mprof_symbolizer_new()))
            return -1;
        if (mprof_symbolizer_add_event(s->sym, ev) != 0)
            return -1;
    }
    return 0;
}

void mprof__vsys_saw(mprof_vsys *s, int64_t ts)
{
    mprof__sys_saw(s->m, ts);
}

int mprof__vsys_lock(mprof_vsys *s, const mprof_walker *w, const mprof_tl_lockspan *span)
{
    (void)w;
    if (MPROF_GROW(s->sp, s->cap_sp, s->n_sp + 1, 1024) != 0)
        return -1;
    s->sp[s->n_sp++] = (bspan){span->start_ns, span->end_ns < span->start_ns ? span->start_ns : span->end_ns,
                               span->lock, span->waiting ? 0u : 1u};
    return 0;
}

/* A growable byte buffer; every table is appended 8-aligned. */
typedef struct buf { unsigned char *p; size_t n, cap; int oom; } buf;

/* Appends n bytes (d NULL: zeros) without alignment; returns where they start. */
static uint64_t bappend(buf *b, const void *d, size_t n)
{
    if (b->oom || b->n + n < b->n) {
        b->oom = 1;
        return 0;
    }
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + n)
            nc *= 2;
        unsigned char *q = realloc(b->p, nc);
        if (!q) {
            b->oom = 1;
            return 0;
        }
        b->p = q;
        b->cap = nc;
    }
    uint64_t at = b->n;
    if (n && d)
        memcpy(b->p + b->n, d, n);
    else if (n)
        memset(b->p + b->n, 0, n);
    b->n += n;
    return at;
}

/* Appends a table at the next multiple of 8 bytes; returns its offset. */
static uint64_t bput(buf *b, const void *d, size_t n)
{
    bappend(b, NULL, (8 - b->n % 8) % 8);
    return b->oom ? 0 : bappend(b, d, n);
}

static int cmp_sample(const void *a, const void *b)
{
    const ssample *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_span(const void *a, const void *b)
{
    const bspan *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s;
}

/* Groups the spans by lock and kind (a counting sort, stable), then sorts each group by start
 * only when it is out of order: spans arrive when released, which is nearly in start order.
 * Spans of a lock past n_locks are dropped. Returns 0, or -1 when out of memory. */
static int group_spans(mprof_vsys *s, uint32_t n_locks)
{
    size_t nk = (size_t)n_locks * 2 + 1;
    size_t *at = calloc(nk + 1, sizeof *at);
    bspan *out = malloc((s->n_sp + 1) * sizeof *out);
    if (!at || !out) {
        free(at);
        free(out);
        return -1;
    }
    for (size_t i = 0; i < s->n_sp; i++)
        if (s->sp[i].lock < n_locks)
            at[(size_t)s->sp[i].lock * 2 + s->sp[i].waiting + 1]++;
    for (size_t k = 1; k <= nk; k++)
        at[k] += at[k - 1];
    size_t n = at[nk - 1];
    for (size_t i = 0; i < s->n_sp; i++)
        if (s->sp[i].lock < n_locks)
            out[at[(size_t)s->sp[i].lock * 2 + s->sp[i].waiting]++] = s->sp[i];
    /* Placing moved each at[k] to the end of group k. */
    for (size_t k = 0, a = 0; k + 1 < nk; a = at[k], k++) {
        size_t e = at[k];
        for (size_t i = a + 1; i < e; i++)
            if (out[i].s < out[i - 1].s) {
                qsort(out + a, e - a, sizeof *out, cmp_span);
                break;
            }
    }
    free(s->sp);
    free(at);
    s->sp = out;
    s->n_sp = n;
    s->cap_sp = n + 1;
    return 0;
}

/* The /api/system document: what the capture traced, the threads with their tracks, the
 * whole-capture figures of every lock and memory pool. */
static void write_meta(mprof_vsys *s, const mprof_reader *r, const mprof_walker *w, const sthread *th,
                       uint64_t nth, uint64_t n_cpu, uint64_t n_samples, uint64_t n_stacks, FILE *out)
{
    mprof_sys_status st;
    mprof__sys_status(r, &st);
    mprof_json j;
    mprof_json_init(&j, out, 0);
    mprof_json_obj_begin(&j, NULL);
    mprof_json_bool(&j, "system", s->any || mprof_reader_info(r, "system.context_switches") != NULL);
    mprof_json_bool(&j, "context_switches", st.context_switches);
    mprof_json_bool(&j, "cpu_usage", st.cpu_usage);
    mprof_json_bool(&j, "sampling", st.sampling);
    mprof_json_u64(&j, "hz", st.sample_hz);
    if (st.why_not)
        mprof_json_str(&j, "why_not", st.why_not);
    else
        mprof_json_null(&j, "why_not");
    mprof_json_u64(&j, "cpu_points", n_cpu);
    mprof_json_u64(&j, "samples", n_samples);
    mprof_json_u64(&j, "stacks", n_stacks);
    mprof_json_arr_begin(&j, "threads");
    for (uint64_t i = 0; i < nth; i++) {
        mprof_json_obj_begin(&j, NULL);
        mprof_json_u64(&j, "tid", th[i].tid);
        if (th[i].track == UINT32_MAX)
            mprof_json_null(&j, "track");
        else
            mprof_json_u64(&j, "track", th[i].track);
        mprof_json_i64(&j, "start", th[i].start);
        mprof_json_i64(&j, "end", th[i].end);
        mprof_json_u64(&j, "off", th[i].n);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);
    mprof_json_arr_begin(&j, "locks");
    for (uint32_t i = 0; i < mprof__walker_lock_count(w); i++) {
        const mprof_tl_lock *l = mprof__walker_lock(w, i);
        const char *nm = l->name ? mprof_reader_string(r, l->name) : NULL;
        mprof_json_obj_begin(&j, NULL);
        mprof_json_u64(&j, "lock", i);
        mprof_json_str(&j, "name", nm ? nm : "lock");
        mprof_json_u64(&j, "track", l->track);
        mprof_json_u64(&j, "acquisitions", l->acquisitions);
        mprof_json_u64(&j, "contended", l->contended);
        mprof_json_u64(&j, "try_failed", l->try_failed);
        mprof_json_i64(&j, "wait_ns", l->wait_ns);
        mprof_json_i64(&j, "max_wait_ns", l->max_wait_ns);
        mprof_json_i64(&j, "hold_ns", l->hold_ns);
        mprof_json_i64(&j, "max_hold_ns", l->max_hold_ns);
        mprof_json_u64(&j, "threads", l->n_rows);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);
    mprof_json_arr_begin(&j, "pools");
    for (uint32_t i = 0; i < mprof__walker_pool_count(w); i++) {
        const mprof_tl_pool *p = mprof__walker_pool(w, i);
        const char *nm = p->name ? mprof_reader_string(r, p->name) : NULL;
        mprof_json_obj_begin(&j, NULL);
        mprof_json_u64(&j, "pool", i);
        mprof_json_str(&j, "name", nm ? nm : "heap");
        mprof_json_u64(&j, "allocs", p->allocs);
        mprof_json_u64(&j, "frees", p->frees);
        mprof_json_u64(&j, "alloc_bytes", p->alloc_bytes);
        mprof_json_i64(&j, "peak_bytes", p->peak);
        mprof_json_i64(&j, "end_bytes", p->in_use);
        mprof_json_u64(&j, "live", p->live);
        mprof_json_u64(&j, "bad_frees", p->bad_frees);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);
    mprof_json_obj_end(&j);
}

int mprof__vsys_write(mprof_vsys *s, const mprof_reader *r, const mprof_walker *w, FILE *f,
                      uint64_t *pos, uint64_t *out_off, uint64_t *out_len)
{
    mprof__sys_finish(s->m, r);
    shead h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, VSYS_MAGIC, 8);
    buf b = {0};
    bput(&b, &h, sizeof h);
    mprof_strtab nm = {0};
    mprof_umap track_of = {0}, stack_of = {0}, addr_name = {0};
    uint32_t *frames = NULL, n_frames = 0, cap_frames = 0;
    sstack *stacks = NULL;
    uint32_t n_stacks = 0, cap_stacks = 0;
    sthread *th = NULL;
    char *meta = NULL;
    size_t meta_len = 0;
    int rc = -1;

    /* OS thread id -> walker track. */
    for (uint32_t i = 0; i < mprof__walker_track_count(w); i++) {
        const mprof_tl_track *t = mprof__walker_track(w, i);
        if (t->kind == MPROF_TRACK_THREAD && t->os_tid && !mprof_umap_get(&track_of, t->os_tid + 1) &&
            mprof_umap_put(&track_of, t->os_tid + 1, i) != 0)
            goto out;
    }
    /* Threads and their off intervals with prefix sums. */
    uint32_t nth = mprof__sys_tid_count(s->m);
    th = calloc((size_t)nth + 1, sizeof *th);
    if (!th)
        goto out;
    uint64_t n_off = 0;
    for (uint32_t i = 0; i < nth; i++) {
        uint32_t no;
        mprof__sys_tid_info(s->m, i, &th[i].tid, &th[i].start, &th[i].end, &no);
        uint32_t *tr = mprof_umap_get(&track_of, th[i].tid + 1);
        th[i].track = tr ? *tr : UINT32_MAX;
        th[i].first = n_off;
        th[i].n = no;
        n_off += no;
    }
    h.n_off = n_off;
    h.off_off = bput(&b, NULL, 0);
    for (uint32_t i = 0; i < nth; i++) {
        int64_t pre = 0, pre_blk = 0;
        for (uint32_t k = 0; k < th[i].n; k++) {
            soff o = {0};
            int why;
            mprof__sys_tid_off(s->m, i, k, &o.s, &o.e, &why);
            if (o.e < o.s)
                o.e = o.s;
            o.pre = pre;
            o.pre_blk = pre_blk;
            o.reason = (uint32_t)why;
            pre += o.e - o.s;
            if (why == MPROF_SYS_REASON_BLOCKED)
                pre_blk += o.e - o.s;
            bput(&b, &o, sizeof o);
        }
    }
    h.n_threads = nth;
    h.threads_off = bput(&b, th, (size_t)nth * sizeof *th);
    /* CPU usage. */
    uint32_t nc = mprof__sys_cpu_count(s->m);
    h.n_cpu = nc;
    h.cpu_off = bput(&b, NULL, 0);
    for (uint32_t i = 0; i < nc; i++) {
        scpu c;
        mprof__sys_cpu_sample(s->m, i, &c.ts, &c.other, &c.self);
        bput(&b, &c, sizeof c);
    }
    /* Samples: distinct stacks, symbolised once per address. */
    for (size_t i = 0; i < s->n_smp; i++) {
        uint32_t cs = s->smp[i].stack;
        uint32_t *tr = mprof_umap_get(&track_of, s->smp_tid[i] + 1);
        s->smp[i].track = tr ? *tr : UINT32_MAX;
        uint32_t *v = mprof_umap_get(&stack_of, (uint64_t)cs + 1);
        if (v) {
            s->smp[i].stack = *v;
            continue;
        }
        if (mprof_array_reserve((void **)&stacks, &cap_stacks, n_stacks + 1, sizeof *stacks) != 0 ||
            mprof_umap_put(&stack_of, (uint64_t)cs + 1, n_stacks) != 0)
            goto out;
        uint32_t depth = 0;
        const uint64_t *fr = mprof_reader_callstack(r, cs, &depth);
        if (!fr)
            depth = 0;
        stacks[n_stacks] = (sstack){n_frames, depth, 0};
        if (mprof_array_reserve((void **)&frames, &cap_frames, n_frames + depth + 1, sizeof *frames) != 0)
            goto out;
        for (uint32_t d = depth; d-- > 0;) { /* outermost first */
            uint32_t *nv = mprof_umap_get(&addr_name, fr[d] + 1);
            uint32_t id;
            if (nv) {
                id = *nv;
            } else {
                char tmp[128];
                id = mprof_strtab_id(&nm,
                                     mprof_symbolizer_frame_name(s->sym, fr[d], tmp, sizeof tmp));
                if (id == UINT32_MAX || mprof_umap_put(&addr_name, fr[d] + 1, id) != 0)
                    goto out;
            }
            frames[n_frames++] = id;
        }
        s->smp[i].stack = n_stacks++;
    }
    if (s->n_smp > 1) /* qsort's array must not be NULL, even for no samples */
        qsort(s->smp, s->n_smp, sizeof *s->smp, cmp_sample);
    h.n_samples = s->n_smp;
    h.samples_off = bput(&b, s->smp, s->n_smp * sizeof *s->smp);
    h.n_stacks = n_stacks;
    h.stacks_off = bput(&b, stacks, (size_t)n_stacks * sizeof *stacks);
    h.n_frames = n_frames;
    h.frames_off = bput(&b, frames, (size_t)n_frames * sizeof *frames);
    h.n_names = nm.n;
    h.names_off = bput(&b, NULL, 0);
    uint64_t text = 0;
    for (uint32_t i = 0; i < nm.n; i++) {
        sname sn = {text, (uint32_t)strlen(nm.s[i]), 0};
        text += sn.len;
        bput(&b, &sn, sizeof sn);
    }
    h.text_len = text;
    h.text_off = bput(&b, NULL, 0);
    for (uint32_t i = 0; i < nm.n; i++)
        bappend(&b, nm.s[i], strlen(nm.s[i]));
    /* Lock spans per lock and kind, prefix sums, block maxima. */
    uint32_t nl = mprof__walker_lock_count(w);
    if (group_spans(s, nl) != 0)
        goto out;
    slock *lk = calloc((size_t)nl + 1, sizeof *lk);
    uint64_t *src = calloc((size_t)nl * 2 + 1, sizeof *src); /* each group's first span in s->sp */
    if (!lk || !src) {
        free(lk);
        free(src);
        goto out;
    }
    h.spans_off = bput(&b, NULL, 0);
    int64_t pre = 0;
    uint64_t written = 0;
    for (size_t i = 0; i < s->n_sp; i++) {
        const bspan *x = &s->sp[i];
        slock *l = &lk[x->lock];
        if (!l->n[x->waiting]) {
            if (i) { /* the previous group's sentinel */
                sspan end = {INT64_MAX, pre};
                bput(&b, &end, sizeof end);
                written++;
            }
            l->first[x->waiting] = written;
            src[(size_t)x->lock * 2 + x->waiting] = i;
            pre = 0;
        }
        l->n[x->waiting]++;
        sspan y = {x->s, pre};
        pre += x->e - x->s;
        bput(&b, &y, sizeof y);
        written++;
    }
    if (s->n_sp) {
        sspan end = {INT64_MAX, pre};
        bput(&b, &end, sizeof end);
        written++;
    }
    h.n_spans = written;
    h.n_blocks = 0;
    h.blocks_off = bput(&b, NULL, 0);
    for (uint32_t i = 0; i < nl; i++) {
        lk[i].track = mprof__walker_lock(w, i)->track;
        for (int k = 0; k < 2; k++) {
            lk[i].block[k] = h.n_blocks;
            for (uint64_t a = 0; a < lk[i].n[k]; a += LOCK_BLOCK) {
                int64_t mx = 0;
                for (uint64_t e = a; e < a + LOCK_BLOCK && e < lk[i].n[k]; e++) {
                    const bspan *x = &s->sp[src[(size_t)i * 2 + (size_t)k] + e];
                    if (x->e - x->s > mx)
                        mx = x->e - x->s;
                }
                bput(&b, &mx, sizeof mx);
                h.n_blocks++;
            }
        }
    }
    h.n_locks = nl;
    h.locks_off = bput(&b, lk, (size_t)nl * sizeof *lk);
    free(lk);
    free(src);
    FILE *mem = open_memstream(&meta, &meta_len);
    if (!mem)
        goto out;
    write_meta(s, r, w, th, nth, nc, s->n_smp, n_stacks, mem);
    if (fclose(mem) != 0)
        goto out;
    h.meta_len = meta_len;
    h.meta_off = bput(&b, meta, meta_len);
    bput(&b, NULL, 0);
    if (b.oom)
        goto out;
    h.bytes = b.n;
    memcpy(b.p, &h, sizeof h);
    /* Into the index, 8-aligned. */
    static const unsigned char zero[8] = {0};
    size_t pad = (size_t)((8 - *pos % 8) % 8);
    if ((pad && fwrite(zero, 1, pad, f) != pad) || fwrite(b.p, 1, b.n, f) != b.n)
        goto out;
    *pos += pad;
    *out_off = *pos;
    *out_len = b.n;
    *pos += b.n;
    rc = 0;
out:
    mprof_strtab_free(&nm);
    mprof_umap_free(&track_of);
    mprof_umap_free(&stack_of);
    mprof_umap_free(&addr_name);
    free(frames);
    free(stacks);
    free(th);
    free(meta);
    free(b.p);
    return rc;
}
