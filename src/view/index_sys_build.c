/*
 * index_sys_build.c - the system and lock section of the served viewer's index, built during
 * the index's pass (index_sys.h, layout in index_sys_file.h).
 *
 * The big tables go to the index file as blocks while the pass runs or at its end, never whole
 * in memory: lock spans and callstack samples into sorted runs as they come (index_runs.h), the
 * off-CPU intervals and CPU points from the system model at the end. The system model
 * (analysis/system.h) holds every switch while the index is built, as the report does. What
 * stays in memory is the small tables: threads, locks, distinct stacks and their function names,
 * the sampled threads, the /api/system document.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "view/index_sys.h"

#include "util/json_out.h"
#include "analysis/symbolize.h"
#include "analysis/system.h"
#include "util/umap.h"
#include "view/index_runs.h"
#include "view/index_sys_file.h"
#include "util/grow.h"

#include <stdlib.h>
#include <string.h>

struct mprof_vsys {
    vout *o;
    mprof_sysmodel *m;
    mprof_symbolizer *sym;
    vruns smp;        /* samples: stack = its distinct stack's id, tix = its thread's */
    mprof_umap stack_of; /* the reader's callstack id + 1 -> distinct stack, first seen first */
    uint32_t *stack_cs;  /* distinct stack -> the reader's callstack id */
    uint32_t n_stacks, cap_stacks;
    mprof_umap tix_of;   /* OS thread id + 1 -> sampled thread index */
    uint64_t *tix_tid;
    uint32_t n_tix, cap_tix;
    vruns *grp;       /* lock spans: group lock * 2 + (0 waiting, 1 holding) */
    uint32_t n_grp;
    int any;          /* a system record was seen */
    /* After mprof__vsys_finish. */
    vab off, cpu;
    sthread *th;
    uint32_t nth, n_cpu;
    slock *lk;
    uint32_t nl;
    uint32_t *tix_track;
    sstack *stacks;
    uint32_t *frames, n_frames, cap_frames;
    mprof_strtab nm;
    char *meta;
    size_t meta_len;
    const vab **arrs; /* the arrays, in the directory's order */
    uint32_t n_arrs;
};

mprof_vsys *mprof__vsys_new(vout *o)
{
    mprof_vsys *s = calloc(1, sizeof *s);
    if (s && !(s->m = mprof__sys_new())) {
        free(s);
        return NULL;
    }
    if (s) {
        s->o = o;
        mprof__vruns_init(&s->smp, VRUN_SAMPLES);
        mprof__vab_init(&s->off, VC_RAW, sizeof(soff));
        mprof__vab_init(&s->cpu, VC_RAW, sizeof(scpu));
    }
    return s;
}

void mprof__vsys_free(mprof_vsys *s)
{
    if (!s)
        return;
    mprof__sys_free(s->m);
    mprof_symbolizer_free(s->sym);
    mprof__vruns_free(&s->smp);
    mprof_umap_free(&s->stack_of);
    free(s->stack_cs);
    mprof_umap_free(&s->tix_of);
    free(s->tix_tid);
    for (uint32_t i = 0; i < s->n_grp; i++)
        mprof__vruns_free(&s->grp[i]);
    free(s->grp);
    mprof__vab_free(&s->off);
    mprof__vab_free(&s->cpu);
    free(s->th);
    free(s->lk);
    free(s->tix_track);
    free(s->stacks);
    free(s->frames);
    mprof_strtab_free(&s->nm);
    free(s->meta);
    free(s->arrs);
    free(s);
}

/* The distinct stack of the reader's callstack cs, numbered in the order first seen. */
static int stack_id(mprof_vsys *s, uint32_t cs, uint32_t *out)
{
    uint32_t *v = mprof_umap_get(&s->stack_of, (uint64_t)cs + 1);
    if (v) {
        *out = *v;
        return 0;
    }
    if (mprof_array_reserve((void **)&s->stack_cs, &s->cap_stacks, s->n_stacks + 1, sizeof *s->stack_cs) != 0 ||
        mprof_umap_put(&s->stack_of, (uint64_t)cs + 1, s->n_stacks) != 0)
        return -1;
    s->stack_cs[s->n_stacks] = cs;
    *out = s->n_stacks++;
    return 0;
}

/* The index of a sampled OS thread, numbered in the order first seen. */
static int thread_ix(mprof_vsys *s, uint64_t tid, uint32_t *out)
{
    uint32_t *v = tid + 1 ? mprof_umap_get(&s->tix_of, tid + 1) : NULL;
    if (v) {
        *out = *v;
        return 0;
    }
    if (mprof_array_reserve((void **)&s->tix_tid, &s->cap_tix, s->n_tix + 1, sizeof *s->tix_tid) != 0 ||
        (tid + 1 && mprof_umap_put(&s->tix_of, tid + 1, s->n_tix) != 0))
        return -1;
    s->tix_tid[s->n_tix] = tid;
    *out = s->n_tix++;
    return 0;
}

int mprof__vsys_event(mprof_vsys *s, const mprof_reader *r, const mprof_event *ev)
{
    if (ev->type >= MPROF_EV_SYS_SWITCH && ev->type <= MPROF_EV_SYS_CPU)
        s->any = 1;
    if (mprof__sys_event(s->m, r, ev) != 0)
        return -1;
    if (ev->type == MPROF_EV_SYS_SAMPLE) {
        uint32_t stack, tix;
        if (stack_id(s, (uint32_t)ev->u[1], &stack) != 0 || thread_ix(s, ev->u[0], &tix) != 0)
            return -1;
        vrun_item it = {ev->ts_ns, stack | (uint64_t)tix << 32};
        if (mprof__vruns_add(&s->smp, s->o, &it) != 0)
            return -1;
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
    uint32_t nl = mprof__walker_lock_count(w);
    if (span->lock >= nl)
        return 0; /* not a lock of the walker's: the section has no row for it */
    if ((uint64_t)span->lock * 2 + 2 > s->n_grp) {
        uint32_t ng = nl * 2 > s->n_grp * 2 ? nl * 2 : s->n_grp * 2;
        vruns *p = realloc(s->grp, (size_t)ng * sizeof *p);
        if (!p)
            return -1;
        for (uint32_t i = s->n_grp; i < ng; i++)
            mprof__vruns_init(&p[i], VRUN_SPANS);
        s->grp = p;
        s->n_grp = ng;
    }
    int64_t e = span->end_ns < span->start_ns ? span->start_ns : span->end_ns;
    vrun_item it = {span->start_ns, (uint64_t)(e - span->start_ns)};
    return mprof__vruns_add(&s->grp[(size_t)span->lock * 2 + (span->waiting ? 0u : 1u)], s->o, &it);
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

/* The /api/system document: what the capture traced, the threads with their tracks, the
 * whole-capture figures of every lock and memory pool. */
static void write_meta(const mprof_vsys *s, const mprof_reader *r, const mprof_walker *w, const sthread *th,
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

/* The distinct stacks symbolised in the order first seen, so that the function names are
 * numbered in the order a walk of the samples as they came meets them. */
static int symbolise(mprof_vsys *s, const mprof_reader *r)
{
    mprof_umap addr_name = {0};
    int rc = -1;
    s->stacks = calloc((size_t)s->n_stacks + 1, sizeof *s->stacks);
    if (!s->stacks)
        goto out;
    for (uint32_t k = 0; k < s->n_stacks; k++) {
        uint32_t depth = 0;
        const uint64_t *fr = mprof_reader_callstack(r, s->stack_cs[k], &depth);
        if (!fr)
            depth = 0;
        s->stacks[k] = (sstack){s->n_frames, depth, 0};
        if (mprof_array_reserve((void **)&s->frames, &s->cap_frames, s->n_frames + depth + 1, sizeof *s->frames) != 0)
            goto out;
        for (uint32_t d = depth; d-- > 0;) { /* outermost first */
            uint32_t *nv = mprof_umap_get(&addr_name, fr[d] + 1);
            uint32_t id;
            if (nv) {
                id = *nv;
            } else {
                char tmp[128];
                id = mprof_strtab_id(&s->nm, mprof_symbolizer_frame_name(s->sym, fr[d], tmp, sizeof tmp));
                if (id == UINT32_MAX || mprof_umap_put(&addr_name, fr[d] + 1, id) != 0)
                    goto out;
            }
            s->frames[s->n_frames++] = id;
        }
    }
    rc = 0;
out:
    mprof_umap_free(&addr_name);
    return rc;
}

int mprof__vsys_finish(mprof_vsys *s, const mprof_reader *r, const mprof_walker *w)
{
    mprof__sys_finish(s->m, r);
    vout *o = s->o;
    mprof_umap track_of = {0};
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
    s->th = calloc((size_t)nth + 1, sizeof *s->th);
    if (!s->th)
        goto out;
    s->nth = nth;
    uint64_t n_off = 0;
    for (uint32_t i = 0; i < nth; i++) {
        sthread *th = &s->th[i];
        uint32_t no;
        mprof__sys_tid_info(s->m, i, &th->tid, &th->start, &th->end, &no);
        uint32_t *tr = mprof_umap_get(&track_of, th->tid + 1);
        th->track = tr ? *tr : UINT32_MAX;
        th->first = n_off;
        th->n = no;
        n_off += no;
        int64_t pre = 0, pre_blk = 0;
        for (uint32_t k = 0; k < no; k++) {
            soff x = {0};
            int why;
            mprof__sys_tid_off(s->m, i, k, &x.s, &x.e, &why);
            if (x.e < x.s)
                x.e = x.s;
            x.pre = pre;
            x.pre_blk = pre_blk;
            x.reason = (uint32_t)why;
            pre += x.e - x.s;
            if (why == MPROF_SYS_REASON_BLOCKED)
                pre_blk += x.e - x.s;
            if (mprof__vab_push(&s->off, o, &x, x.s) != 0)
                goto out;
        }
        /* A thread's intervals end their block: the directory's keys of a block are then one
         * thread's, sorted, and searches of a thread start from them. */
        if (mprof__vab_finish(&s->off, o) != 0)
            goto out;
    }
    /* CPU usage. */
    s->n_cpu = mprof__sys_cpu_count(s->m);
    for (uint32_t i = 0; i < s->n_cpu; i++) {
        scpu c;
        mprof__sys_cpu_sample(s->m, i, &c.ts, &c.other, &c.self);
        if (mprof__vab_push(&s->cpu, o, &c, c.ts) != 0)
            goto out;
    }
    if (mprof__vab_finish(&s->cpu, o) != 0)
        goto out;
    /* Samples: their runs, their threads' tracks, their stacks. */
    if (mprof__vruns_finish(&s->smp, o) != 0)
        goto out;
    s->tix_track = calloc((size_t)s->n_tix + 1, sizeof *s->tix_track);
    if (!s->tix_track)
        goto out;
    for (uint32_t i = 0; i < s->n_tix; i++) {
        uint32_t *tr = s->tix_tid[i] + 1 ? mprof_umap_get(&track_of, s->tix_tid[i] + 1) : NULL;
        s->tix_track[i] = tr ? *tr : UINT32_MAX;
    }
    if (symbolise(s, r) != 0)
        goto out;
    /* Lock spans: every group's runs, waiting then holding, by lock. */
    s->nl = mprof__walker_lock_count(w);
    s->lk = calloc((size_t)s->nl + 1, sizeof *s->lk);
    uint64_t n_arrs = 2 + s->smp.n_done;
    if (!s->lk)
        goto out;
    for (uint32_t i = 0; i < s->nl; i++) {
        s->lk[i].track = mprof__walker_lock(w, i)->track;
        for (int k = 0; k < 2; k++) {
            vruns *g = (size_t)i * 2 + (size_t)k < s->n_grp ? &s->grp[(size_t)i * 2 + (size_t)k] : NULL;
            if (g && mprof__vruns_finish(g, o) != 0)
                goto out;
            s->lk[i].arr0[k] = n_arrs;
            s->lk[i].n_runs[k] = g ? g->n_done : 0;
            s->lk[i].n[k] = g ? g->n : 0;
            n_arrs += s->lk[i].n_runs[k];
        }
    }
    if (n_arrs > UINT32_MAX / 2 || !(s->arrs = malloc((size_t)n_arrs * sizeof *s->arrs)))
        goto out;
    s->arrs[s->n_arrs++] = &s->off;
    s->arrs[s->n_arrs++] = &s->cpu;
    for (uint32_t k = 0; k < s->smp.n_done; k++)
        s->arrs[s->n_arrs++] = &s->smp.done[k];
    for (uint32_t i = 0; i < s->nl; i++)
        for (int k = 0; k < 2; k++)
            for (uint32_t j = 0; j < s->lk[i].n_runs[k]; j++)
                s->arrs[s->n_arrs++] = &s->grp[(size_t)i * 2 + (size_t)k].done[j];
    /* The /api/system document. */
    FILE *mem = open_memstream(&s->meta, &s->meta_len);
    if (!mem)
        goto out;
    write_meta(s, r, w, s->th, nth, s->n_cpu, s->smp.n, s->n_stacks, mem);
    if (fclose(mem) != 0)
        goto out;
    rc = 0;
out:
    mprof_umap_free(&track_of);
    return rc;
}

uint32_t mprof__vsys_array_count(const mprof_vsys *s)
{
    return s->n_arrs;
}

const vab *mprof__vsys_array(const mprof_vsys *s, uint32_t k)
{
    return s->arrs[k];
}

int mprof__vsys_section(mprof_vsys *s, uint32_t arr0, unsigned char **out, size_t *out_len)
{
    shead h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, VSYS_MAGIC, 8);
    buf b = {0};
    bput(&b, &h, sizeof h);
    h.n_threads = s->nth;
    h.threads_off = bput(&b, s->th, (size_t)s->nth * sizeof *s->th);
    h.off_arr = arr0;
    h.cpu_arr = arr0 + 1;
    h.sample_arr0 = (uint64_t)arr0 + 2;
    h.n_sample_runs = s->smp.n_done;
    h.n_samples = s->smp.n;
    h.n_tix = s->n_tix;
    h.tix_off = bput(&b, s->tix_track, (size_t)s->n_tix * sizeof *s->tix_track);
    h.n_stacks = s->n_stacks;
    h.stacks_off = bput(&b, s->stacks, (size_t)s->n_stacks * sizeof *s->stacks);
    h.n_frames = s->n_frames;
    h.frames_off = bput(&b, s->frames, (size_t)s->n_frames * sizeof *s->frames);
    h.n_names = s->nm.n;
    h.names_off = bput(&b, NULL, 0);
    uint64_t text = 0;
    for (uint32_t i = 0; i < s->nm.n; i++) {
        sname sn = {text, (uint32_t)strlen(s->nm.s[i]), 0};
        text += sn.len;
        bput(&b, &sn, sizeof sn);
    }
    h.text_len = text;
    h.text_off = bput(&b, NULL, 0);
    for (uint32_t i = 0; i < s->nm.n; i++)
        bappend(&b, s->nm.s[i], strlen(s->nm.s[i]));
    h.n_locks = s->nl;
    h.locks_off = bput(&b, NULL, 0);
    for (uint32_t i = 0; i < s->nl; i++) {
        slock l = s->lk[i];
        l.arr0[0] += arr0;
        l.arr0[1] += arr0;
        bput(&b, &l, sizeof l);
    }
    h.meta_len = s->meta_len;
    h.meta_off = bput(&b, s->meta, s->meta_len);
    bput(&b, NULL, 0);
    if (b.oom) {
        free(b.p);
        return -1;
    }
    h.bytes = b.n;
    memcpy(b.p, &h, sizeof h);
    *out = b.p;
    *out_len = b.n;
    return 0;
}
