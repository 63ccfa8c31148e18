/*
 * index_sys_answers.c - the reading side of the served viewer's system and lock section
 * (index_sys.h): whether a mapped section is whole and consistent, and its answers: /api/system,
 * /api/states (thread states merged per pixel), /api/cpu (CPU usage, min/max per pixel),
 * /api/samples (a range's flame graph) and /api/locks (waits and holds per lock in a range).
 *
 * A range's flame graph counts its samples per stack and merges the stacks into a tree on the
 * server, sending only the nodes at least 1/4000 of the range wide (the rest is counted, never
 * lost).
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index_sys.h"

#include "analysis/system.h"
#include "util/json_out.h"
#include "util/tool.h"
#include "util/umap.h"
#include "view/index_search.h"
#include "view/index_sys_file.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FLAME_MAX_NODES 20000u

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
    int64_t px = mprof__vq_px_ns(q);
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
            if (mprof__vq_len(s, e) < px) {
                j = mprof__vfirst_from(o, sizeof *o, offsetof(soff, s), i + 1, n, mprof__vq_add(s, px));
                if (j <= i)
                    j = i + 1;
                /* Stop before an interval that is wide enough to be drawn on its own. */
                for (uint64_t k = i + 1; k < j; k++)
                    if (mprof__vq_len(o[k].s, o[k].e) >= px) {
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
                if (mprof__vq_len(s, e) < px)
                    e = mprof__vq_add(s, px) < th[ti].end ? mprof__vq_add(s, px)
                        : e > th[ti].end                 ? e
                                                         : th[ti].end; /* its pixel */
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

/* Percentages: 4 digits are plenty. */
static void jnum(FILE *out, double v)
{
    mprof_json_write_number(out, v, 4, 0, "0");
}

/* The CPU-usage points of the view, percent of the machine: per pixel [ts, other min, other
 * max, self min, self max], with the points just outside the range. */
static int answer_cpu(const unsigned char *sec, const mprof_vquery *q, FILE *out)
{
    const shead *h = (const shead *)sec;
    const scpu *c = AT(scpu, h->cpu_off);
    uint64_t n = h->n_cpu;
    int64_t px = mprof__vq_px_ns(q);
    uint64_t i = cpu_from(c, n, q->t0);
    uint64_t a = i ? i - 1 : i;
    fputs("{\"p\":[", out);
    int first = 1;
    while (a < n) {
        uint64_t e;
        if (a < i || c[a].ts > q->t1)
            e = a + 1; /* the points outside the range, as they are */
        else {
            int64_t into = (int64_t)(((uint64_t)c[a].ts - (uint64_t)q->t0) % (uint64_t)px);
            int64_t pix_end = mprof__vq_add(c[a].ts, px - into);
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
        tool_seterr(err, errlen, "this index has no system section");
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
        tool_seterr(err, errlen, "out of memory or write error");
    return rc;
}

