/*
 * view_index_sys.c - the served viewer's system and lock section (view_index_sys.h).
 *
 * Contents:
 *   1. Layout   the section's header and records
 *   2. Build    collecting samples and lock spans, the system model, writing the section
 *   3. Answers  /api/system, /api/states, /api/cpu, /api/samples, /api/locks
 *
 * The idea is the zones' (view_index.c): sorted arrays in the mapped file and binary searches.
 * Off-CPU intervals of a thread are sorted and carry prefix sums of off and blocked time, so the
 * intervals narrower than a pixel become one run per pixel with its off share, in one more
 * binary search. Lock spans are sorted per lock and kind (waiting, holding) with prefix sums of
 * their durations and a maximum per block of 64, so a range's figures of a lock are two binary
 * searches plus the blocks between them. Callstack samples are sorted by time and point into a
 * table of distinct stacks, symbolised once at build time into function-name ids; a range's
 * flame graph counts its samples per stack and merges the stacks into a tree on the server,
 * sending only the nodes at least 1/4000 of the range wide (the rest is counted, never lost).
 *
 * The system model (sysmodel.c) holds every switch while the index is built, as the report does;
 * the server's memory holds none of it.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "view/index_sys.h"

#include "util/json_out.h"
#include "analysis/symbolize.h"
#include "analysis/system.h"
#include "util/umap.h"
#include "view/index_search.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- 1. Layout ------------------------------------------------------------------------------- */

#define VSYS_MAGIC "MPVSYS02"
#define LOCK_BLOCK 64
#define FLAME_MAX_NODES 20000u

typedef struct shead {
    char magic[8];
    uint64_t n_threads, threads_off; /* sthread */
    uint64_t n_off, off_off;         /* soff, grouped by thread */
    uint64_t n_cpu, cpu_off;         /* scpu */
    uint64_t n_samples, samples_off; /* ssample, by time */
    uint64_t n_stacks, stacks_off;   /* sstack */
    uint64_t n_frames, frames_off;   /* uint32 function-name ids, outermost first */
    uint64_t n_names, names_off;     /* sname */
    uint64_t text_len, text_off;     /* names' bytes */
    uint64_t n_locks, locks_off;     /* slock */
    uint64_t n_spans, spans_off;     /* sspan, grouped by lock and kind */
    uint64_t n_blocks, blocks_off;   /* int64 maximum duration of each LOCK_BLOCK spans */
    uint64_t meta_len, meta_off;     /* the /api/system document */
    uint64_t bytes;
} shead;

typedef struct sthread {
    uint64_t tid;
    int64_t start, end;
    uint64_t first, n; /* its off intervals */
    uint32_t track, pad; /* walker track; UINT32_MAX when no track has this OS thread */
} sthread;
typedef struct soff { int64_t s, e, pre, pre_blk; uint32_t reason, pad; } soff;
typedef struct scpu { int64_t ts; double other, self; } scpu;
typedef struct ssample { int64_t ts; uint32_t stack, track; } ssample;
typedef struct sstack { uint64_t first; uint32_t n, pad; } sstack;
typedef struct sname { uint64_t off; uint32_t len, pad; } sname;
typedef struct slock {
    uint32_t track, pad;
    uint64_t first[2], n[2]; /* spans: [0] waiting, [1] holding */
    uint64_t block[2];       /* first block of each kind */
} slock;
/* A lock span: its start and the duration of the group's spans before it. Each group (lock,
 * kind) ends with a sentinel {INT64_MAX, total}, so span i lasts x[i + 1].pre - x[i].pre. */
typedef struct sspan { int64_t s, pre; } sspan;

/* ---- 2. Build -------------------------------------------------------------------------------- */

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

static int grow(void **p, size_t *cap, size_t n, size_t es)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 1024;
    void *q = realloc(*p, nc * es);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

int mprof__vsys_event(mprof_vsys *s, const mprof_reader *r, const mprof_event *ev)
{
    if (ev->type >= MPROF_EV_SYS_SWITCH && ev->type <= MPROF_EV_SYS_CPU)
        s->any = 1;
    if (mprof__sys_event(s->m, r, ev) != 0)
        return -1;
    if (ev->type == MPROF_EV_SYS_SAMPLE) {
        size_t cap = s->cap_smp;
        if (grow((void **)&s->smp, &cap, s->n_smp, sizeof *s->smp) != 0)
            return -1;
        size_t cap2 = s->cap_smp;
        if (grow((void **)&s->smp_tid, &cap2, s->n_smp, sizeof *s->smp_tid) != 0)
            return -1;
        s->cap_smp = cap < cap2 ? cap : cap2;
        s->smp[s->n_smp] = (ssample){ev->ts_ns, (uint32_t)ev->u[1], UINT32_MAX};
        s->smp_tid[s->n_smp++] = ev->u[0];
    } else if (ev->type == MPROF_EV_DEF_MODULE) {
        if (!s->sym && !(s->sym = mprof_symbolizer_new()))
            return -1;
        char p[4096], bid[160];
        snprintf(p, sizeof p, "%.*s", (int)ev->str_lens[0], ev->strs[0]);
        snprintf(bid, sizeof bid, "%.*s", (int)ev->str_lens[1], ev->strs[1]);
        if (mprof_symbolizer_add_module(s->sym, ev->u[0], ev->u[1], p, bid) != 0)
            return -1;
    }
    return 0;
}

int mprof__vsys_lock(mprof_vsys *s, const mprof_walker *w, const mprof_tl_lockspan *span)
{
    (void)w;
    if (grow((void **)&s->sp, &s->cap_sp, s->n_sp, sizeof *s->sp) != 0)
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
    /* at[k] is now the end of group k. */
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

/* n records of rec bytes at off, inside [0, len) and 8-aligned. */
static int fits(uint64_t len, uint64_t off, uint64_t n, uint64_t rec)
{
    return off <= len && off % 8 == 0 && (rec == 0 || n <= (len - off) / rec);
}

int mprof__vsys_check(const unsigned char *sec, uint64_t len)
{
    if (!len)
        return 1;
    if (len < sizeof(shead))
        return 0;
    const shead *h = (const shead *)sec;
    if (memcmp(h->magic, VSYS_MAGIC, 8) != 0 || h->bytes != len ||
        !fits(len, h->threads_off, h->n_threads, sizeof(sthread)) || !fits(len, h->off_off, h->n_off, sizeof(soff)) ||
        !fits(len, h->cpu_off, h->n_cpu, sizeof(scpu)) || !fits(len, h->samples_off, h->n_samples, sizeof(ssample)) ||
        !fits(len, h->stacks_off, h->n_stacks, sizeof(sstack)) ||
        !fits(len, h->frames_off, h->n_frames, sizeof(uint32_t)) || !fits(len, h->names_off, h->n_names, sizeof(sname)) ||
        !(h->text_off <= len && h->text_len <= len - h->text_off) ||
        !fits(len, h->locks_off, h->n_locks, sizeof(slock)) || !fits(len, h->spans_off, h->n_spans, sizeof(sspan)) ||
        !fits(len, h->blocks_off, h->n_blocks, sizeof(int64_t)) ||
        !(h->meta_off <= len && h->meta_len <= len - h->meta_off))
        return 0;
    const sthread *th = (const sthread *)(sec + h->threads_off);
    for (uint64_t i = 0; i < h->n_threads; i++)
        if (th[i].first > h->n_off || th[i].n > h->n_off - th[i].first)
            return 0;
    const ssample *sm = (const ssample *)(sec + h->samples_off);
    for (uint64_t i = 0; i < h->n_samples; i++)
        if (sm[i].stack >= h->n_stacks)
            return 0;
    const sstack *st = (const sstack *)(sec + h->stacks_off);
    for (uint64_t i = 0; i < h->n_stacks; i++)
        if (st[i].first > h->n_frames || st[i].n > h->n_frames - st[i].first)
            return 0;
    const uint32_t *fr = (const uint32_t *)(sec + h->frames_off);
    for (uint64_t i = 0; i < h->n_frames; i++)
        if (fr[i] >= h->n_names)
            return 0;
    const sname *nm = (const sname *)(sec + h->names_off);
    for (uint64_t i = 0; i < h->n_names; i++)
        if (nm[i].off > h->text_len || nm[i].len > h->text_len - nm[i].off)
            return 0;
    const slock *lk = (const slock *)(sec + h->locks_off);
    for (uint64_t i = 0; i < h->n_locks; i++)
        for (int k = 0; k < 2; k++)
            if (lk[i].first[k] > h->n_spans || (lk[i].n[k] && lk[i].n[k] >= h->n_spans - lk[i].first[k]) ||
                lk[i].block[k] > h->n_blocks || (lk[i].n[k] + LOCK_BLOCK - 1) / LOCK_BLOCK > h->n_blocks - lk[i].block[k])
                return 0;
    return 1;
}

/* ---- 3. Answers ------------------------------------------------------------------------------ */

#define AT(T, off) ((const T *)(sec + (off)))

/* Per thread, the off-CPU runs of the view: [start, end, reason, off per mille]. An interval at
 * least a pixel wide is one run (1000 per mille); narrower neighbours within a pixel become one
 * run with their share of off time and the reason that took most of it. */
static int answer_states(const unsigned char *sec, const mprof_vquery *q, FILE *out)
{
    const shead *h = (const shead *)sec;
    int64_t px = (q->t1 - q->t0) / (int64_t)q->w;
    if (px < 1)
        px = 1;
    const sthread *th = AT(sthread, h->threads_off);
    fprintf(out, "{\"px_ns\":%" PRId64 ",\"threads\":[", px);
    uint64_t runs = 0, intervals = 0;
    for (uint64_t ti = 0; ti < h->n_threads; ti++) {
        const soff *o = AT(soff, h->off_off) + th[ti].first;
        uint64_t n = th[ti].n;
        fprintf(out, "%s{\"tid\":%" PRIu64 ",\"track\":", ti ? "," : "", th[ti].tid);
        if (th[ti].track == UINT32_MAX)
            fputs("null", out);
        else
            fprintf(out, "%" PRIu32, th[ti].track);
        fprintf(out, ",\"start\":%" PRId64 ",\"end\":%" PRId64 ",\"r\":[", th[ti].start, th[ti].end);
        int first = 1;
        for (uint64_t i = mprof__vfirst_after(o, sizeof *o, offsetof(soff, e), 0, n, q->t0);
             i < n && o[i].s < q->t1;) {
            uint64_t j = i + 1;
            int64_t s = o[i].s, e = o[i].e, permille = 1000;
            uint32_t reason = o[i].reason;
            if (e - s < px) {
                j = mprof__vfirst_from(o, sizeof *o, offsetof(soff, s), i + 1, n, s + px);
                if (j <= i)
                    j = i + 1;
                /* Stop before an interval that is wide enough to be drawn on its own. */
                for (uint64_t k = i + 1; k < j; k++)
                    if (o[k].e - o[k].s >= px) {
                        j = k;
                        break;
                    }
                e = o[j - 1].e;
                int64_t off = o[j - 1].pre + (o[j - 1].e - o[j - 1].s) - o[i].pre;
                int64_t blk = o[j - 1].pre_blk + (o[j - 1].reason == MPROF_SYS_REASON_BLOCKED ? o[j - 1].e - o[j - 1].s : 0) -
                              o[i].pre_blk;
                int64_t span = e - s > px ? e - s : px;
                permille = off * 1000 / span;
                reason = j - i == 1 ? o[i].reason : blk * 2 >= off ? MPROF_SYS_REASON_BLOCKED : MPROF_SYS_REASON_PREEMPTED;
                if (e - s < px)
                    e = s + px < th[ti].end ? s + px : e > th[ti].end ? e : th[ti].end; /* its pixel */
                if (j < n && e > o[j].s)
                    e = o[j].s > o[j - 1].e ? o[j].s : o[j - 1].e; /* up to the next run */
            }
            fprintf(out, "%s%" PRId64 ",%" PRId64 ",%" PRIu32 ",%" PRId64, first ? "" : ",", s, e, reason, permille);
            first = 0;
            runs++;
            intervals += j - i;
            i = j;
        }
        fputs("]}", out);
    }
    fprintf(out, "],\"runs\":%" PRIu64 ",\"intervals\":%" PRIu64 "}", runs, intervals);
    return 0;
}

/* The first CPU-usage point of c[0, n) at or after t. */
static uint64_t cpu_from(const scpu *c, uint64_t n, int64_t t)
{
    return mprof__vfirst_from(c, sizeof *c, offsetof(scpu, ts), 0, n, t);
}

static void jnum(FILE *out, double v)
{
    fprintf(out, "%.4g", isfinite(v) ? v : 0.0);
}

/* The CPU-usage points of the view, percent of the machine: per pixel [ts, other min, other
 * max, self min, self max], with the points just outside the range. */
static int answer_cpu(const unsigned char *sec, const mprof_vquery *q, FILE *out)
{
    const shead *h = (const shead *)sec;
    const scpu *c = AT(scpu, h->cpu_off);
    uint64_t n = h->n_cpu;
    int64_t px = (q->t1 - q->t0) / (int64_t)q->w;
    if (px < 1)
        px = 1;
    uint64_t i = cpu_from(c, n, q->t0);
    uint64_t a = i ? i - 1 : i;
    fputs("{\"p\":[", out);
    int first = 1;
    while (a < n) {
        uint64_t e;
        if (a < i || c[a].ts > q->t1)
            e = a + 1; /* the points outside the range, as they are */
        else {
            int64_t pix_end = c[a].ts + px - (c[a].ts - q->t0) % px;
            e = cpu_from(c, n, pix_end);
            if (e <= a)
                e = a + 1;
        }
        double omn = INFINITY, omx = -INFINITY, smn = INFINITY, smx = -INFINITY;
        for (uint64_t k = a; k < e; k++) {
            omn = fmin(omn, c[k].other);
            omx = fmax(omx, c[k].other);
            smn = fmin(smn, c[k].self);
            smx = fmax(smx, c[k].self);
        }
        fprintf(out, "%s%" PRId64 ",", first ? "" : ",", c[a].ts);
        jnum(out, 100 * omn);
        fputc(',', out);
        jnum(out, 100 * omx);
        fputc(',', out);
        jnum(out, 100 * smn);
        fputc(',', out);
        jnum(out, 100 * smx);
        first = 0;
        int past = c[a].ts > q->t1;
        a = e;
        if (past)
            break;
    }
    fprintf(out, "],\"points\":%" PRIu64 "}", n);
    return 0;
}

typedef struct fnode { uint32_t parent, name, first_child, next; uint64_t count; } fnode;

/* The flame graph of the samples in [t0, t1): distinct stacks counted, merged into a tree. */
static int answer_samples(const unsigned char *sec, const mprof_vquery *q, FILE *out)
{
    const shead *h = (const shead *)sec;
    const ssample *sm = AT(ssample, h->samples_off);
    const sstack *st = AT(sstack, h->stacks_off);
    const uint32_t *fr = AT(uint32_t, h->frames_off);
    uint64_t lo = mprof__vfirst_from(sm, sizeof *sm, offsetof(ssample, ts), 0, h->n_samples, q->t0);
    uint64_t *cnt = calloc(h->n_stacks + 1, sizeof *cnt);
    if (!cnt)
        return -1;
    uint64_t total = 0;
    for (uint64_t i = lo; i < h->n_samples && sm[i].ts < q->t1; i++) {
        if (q->has_loc && sm[i].track != q->loc)
            continue; /* /api/samples?track=N: the parser keeps the track in loc */
        cnt[sm[i].stack]++;
        total++;
    }
    /* The tree; node 0 is the root. Children are found by a walk of the sibling list, which is
     * short for real call graphs (a few callees per caller). */
    fnode *nd = NULL;
    uint32_t nn = 0, cap = 0;
    int rc = -1;
    if (mprof_array_reserve((void **)&nd, &cap, 1, sizeof *nd) != 0)
        goto out;
    nd[nn++] = (fnode){UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, total};
    for (uint64_t k = 0; k < h->n_stacks; k++) {
        if (!cnt[k])
            continue;
        uint32_t cur = 0;
        for (uint32_t d = 0; d < st[k].n; d++) {
            uint32_t name = fr[st[k].first + d], c = nd[cur].first_child;
            while (c != UINT32_MAX && nd[c].name != name)
                c = nd[c].next;
            if (c == UINT32_MAX) {
                if (nn >= (1u << 26) || mprof_array_reserve((void **)&nd, &cap, nn + 1, sizeof *nd) != 0)
                    goto out;
                c = nn++;
                nd[c] = (fnode){cur, name, UINT32_MAX, nd[cur].first_child, 0};
                nd[cur].first_child = c;
            }
            nd[c].count += cnt[k];
            cur = c;
        }
    }
    /* Nodes at least 1/4000 of the total, parents before children (they were created so). */
    uint64_t min_count = total / 4000 + 1;
    uint32_t *out_idx = malloc(((size_t)nn + 1) * sizeof *out_idx);
    if (!out_idx)
        goto out;
    uint32_t shown = 0;
    uint64_t hidden = 0;
    fputs("{\"n\":[", out);
    for (uint32_t i = 1; i < nn; i++) {
        out_idx[i] = UINT32_MAX;
        uint32_t p = nd[i].parent;
        if ((p != 0 && out_idx[p] == UINT32_MAX) || nd[i].count < min_count || shown >= FLAME_MAX_NODES) {
            if (p == 0 || out_idx[p] != UINT32_MAX)
                hidden += nd[i].count; /* the top of a left-out subtree */
            continue;
        }
        out_idx[i] = shown;
        fprintf(out, "%s%d,%" PRIu32 ",%" PRIu64, shown ? "," : "", p ? (int)out_idx[p] : -1, nd[i].name, nd[i].count);
        shown++;
    }
    out_idx[0] = UINT32_MAX;
    /* The names of what was sent. */
    fputs("],\"names\":{", out);
    const sname *nms = AT(sname, h->names_off);
    int firstn = 1;
    unsigned char *sent = calloc(h->n_names + 1, 1);
    if (!sent) {
        free(out_idx);
        goto out;
    }
    for (uint32_t i = 1; i < nn; i++) {
        if (out_idx[i] == UINT32_MAX || sent[nd[i].name])
            continue;
        sent[nd[i].name] = 1;
        fprintf(out, "%s\"%" PRIu32 "\":", firstn ? "" : ",", nd[i].name);
        mprof_json_write_string(out, (const char *)sec + h->text_off + nms[nd[i].name].off, nms[nd[i].name].len);
        firstn = 0;
    }
    free(sent);
    free(out_idx);
    fprintf(out, "},\"samples\":%" PRIu64 ",\"nodes\":%" PRIu32 ",\"shown\":%" PRIu32 ",\"hidden_samples\":%" PRIu64 "}",
            total, nn - 1, shown, hidden);
    rc = 0;
out:
    free(nd);
    free(cnt);
    return rc;
}

/* Spans of x[0, n) that start in [t0, t1): their count, total and longest duration. */
static void span_range(const sspan *x, uint64_t n, const int64_t *blk, int64_t t0, int64_t t1,
                       uint64_t *out_n, int64_t *out_total, int64_t *out_max)
{
    *out_n = 0;
    *out_total = *out_max = 0;
    if (!n)
        return; /* a group without spans has no sentinel either */
    uint64_t a = mprof__vfirst_from(x, sizeof *x, offsetof(sspan, s), 0, n, t0);
    uint64_t b = mprof__vfirst_from(x, sizeof *x, offsetof(sspan, s), a, n, t1);
    *out_n = b - a;
    *out_total = x[b].pre - x[a].pre;
    int64_t mx = 0;
    uint64_t i = a;
    while (i < b) {
        if (i % LOCK_BLOCK == 0 && i + LOCK_BLOCK <= b) {
            if (blk[i / LOCK_BLOCK] > mx)
                mx = blk[i / LOCK_BLOCK];
            i += LOCK_BLOCK;
        } else {
            if (x[i + 1].pre - x[i].pre > mx)
                mx = x[i + 1].pre - x[i].pre;
            i++;
        }
    }
    *out_max = mx;
}

/* Per lock, the waits and holds that start in [t0, t1). */
static int answer_locks(const unsigned char *sec, const mprof_vquery *q, FILE *out)
{
    const shead *h = (const shead *)sec;
    const slock *lk = AT(slock, h->locks_off);
    const sspan *sp = AT(sspan, h->spans_off);
    const int64_t *blk = AT(int64_t, h->blocks_off);
    fprintf(out, "{\"t0\":%" PRId64 ",\"t1\":%" PRId64 ",\"locks\":[", q->t0, q->t1);
    for (uint64_t i = 0; i < h->n_locks; i++) {
        uint64_t n[2];
        int64_t tot[2], mx[2];
        for (int k = 0; k < 2; k++)
            span_range(sp + lk[i].first[k], lk[i].n[k], blk + lk[i].block[k], q->t0, q->t1, &n[k], &tot[k],
                       &mx[k]);
        fprintf(out,
                "%s{\"lock\":%" PRIu64 ",\"track\":%" PRIu32 ",\"waits\":%" PRIu64 ",\"wait_ns\":%" PRId64
                ",\"max_wait_ns\":%" PRId64 ",\"holds\":%" PRIu64 ",\"hold_ns\":%" PRId64 ",\"max_hold_ns\":%" PRId64 "}",
                i ? "," : "", i, lk[i].track, n[0], tot[0], mx[0], n[1], tot[1], mx[1]);
    }
    fputs("]}", out);
    return 0;
}

int mprof__vsys_answer(const unsigned char *sec, uint64_t len, const mprof_vquery *q, FILE *out,
                       char *err, size_t errlen)
{
    if (q->kind != MPROF_VQ_SYSTEM && q->kind != MPROF_VQ_STATES && q->kind != MPROF_VQ_CPU &&
        q->kind != MPROF_VQ_SAMPLES && q->kind != MPROF_VQ_LOCKS)
        return 1;
    if (len < sizeof(shead)) {
        snprintf(err, errlen, "this index has no system section");
        return -1;
    }
    const shead *h = (const shead *)sec;
    int rc;
    switch (q->kind) {
    case MPROF_VQ_SYSTEM:
        rc = fwrite(sec + h->meta_off, 1, h->meta_len, out) == h->meta_len ? 0 : -1;
        break;
    case MPROF_VQ_STATES:
        rc = answer_states(sec, q, out);
        break;
    case MPROF_VQ_CPU:
        rc = answer_cpu(sec, q, out);
        break;
    case MPROF_VQ_SAMPLES:
        rc = answer_samples(sec, q, out);
        break;
    default:
        rc = answer_locks(sec, q, out);
        break;
    }
    if (rc != 0)
        snprintf(err, errlen, "out of memory or write error");
    return rc;
}
