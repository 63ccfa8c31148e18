/*
 * index_sys_answers.c - the reading side of the served viewer's system and lock section
 * (index_sys.h): whether a mapped section is whole and consistent, and its answers: /api/system,
 * /api/states (thread states merged per pixel), /api/cpu (CPU usage, min/max per pixel),
 * /api/samples (a range's flame graph) and /api/locks (waits and holds per lock in a range).
 *
 * The small tables are in memory (the section's block); the big ones are arrays of the index,
 * read a block at a time through the answer's vread, so a damaged block refuses the answer.
 * Searches read the directory's keys first (a thread's off-CPU intervals have blocks of their
 * own; lock spans and samples are sorted runs, index_runs.h), or gallop from where the answer
 * is; CPU points are searched with the very probes of mprof__vsearch (index_search.h).
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
#include "view/index_runs.h"
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

/* Whether directory array ai is a raw array of rec-byte records. */
static int raw_array(const mprof_vindex *x, uint64_t ai, uint32_t rec)
{
    return ai < x->d->n_arrays && x->arrays[ai].codec == VC_RAW && x->arrays[ai].rec == rec;
}

/* Whether arrays [arr0, arr0 + n) are runs of rec-byte records whose records add up to total
 * (spans: each run with its sentinel). */
static int runs_ok(const mprof_vindex *x, uint64_t arr0, uint64_t n, uint32_t rec, int sentinel, uint64_t total)
{
    if (arr0 > x->d->n_arrays || n > x->d->n_arrays - arr0)
        return 0;
    uint64_t sum = 0;
    for (uint64_t k = 0; k < n; k++) {
        if (!raw_array(x, arr0 + k, rec) || x->arrays[arr0 + k].n < (uint64_t)sentinel + 1)
            return 0;
        sum += x->arrays[arr0 + k].n - (uint64_t)sentinel;
    }
    return sum == total;
}

int mprof__vsys_check(const mprof_vindex *x)
{
    const unsigned char *sec = x->sys;
    uint64_t len = x->sys_len;
    if (!len)
        return 1;
    if (len < sizeof(shead))
        return 0;
    const shead *h = (const shead *)sec;
    if (memcmp(h->magic, VSYS_MAGIC, 8) != 0 || h->bytes != len ||
        !fits(len, h->threads_off, h->n_threads, sizeof(sthread)) || !fits(len, h->tix_off, h->n_tix, sizeof(uint32_t)) ||
        !fits(len, h->stacks_off, h->n_stacks, sizeof(sstack)) ||
        !fits(len, h->frames_off, h->n_frames, sizeof(uint32_t)) || !fits(len, h->names_off, h->n_names, sizeof(sname)) ||
        !(h->text_off <= len && h->text_len <= len - h->text_off) ||
        !fits(len, h->locks_off, h->n_locks, sizeof(slock)) ||
        !(h->meta_off <= len && h->meta_len <= len - h->meta_off))
        return 0;
    if (!raw_array(x, h->off_arr, sizeof(soff)) || !raw_array(x, h->cpu_arr, sizeof(scpu)) ||
        !runs_ok(x, h->sample_arr0, h->n_sample_runs, sizeof(vrsample), 0, h->n_samples))
        return 0;
    uint64_t n_off = x->arrays[h->off_arr].n;
    const sthread *th = (const sthread *)(sec + h->threads_off);
    for (uint64_t i = 0; i < h->n_threads; i++)
        if (th[i].first > n_off || th[i].n > n_off - th[i].first)
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
            if (!runs_ok(x, lk[i].arr0[k], lk[i].n_runs[k], sizeof(vrspan), 1, lk[i].n[k]))
                return 0;
    return 1;
}

/* ---- 3. Answers ------------------------------------------------------------------------------ */

#define AT(T, off) ((const T *)(x->sys + (off)))
#define HEAD(x) ((const shead *)(x)->sys)

/* mprof__vsearch over records [lo, hi) of array a, read through r: the same probes, so the same
 * answer whatever the records are. */
static uint64_t rsearch(vread *r, const varr *a, size_t key_off, uint64_t lo, uint64_t hi, int64_t t, int after)
{
    while (lo < hi && !r->err) {
        uint64_t mid = lo + (hi - lo) / 2;
        int64_t k;
        memcpy(&k, (const unsigned char *)mprof__vread_rec(r, a, mid) + key_off, sizeof k);
        if (k < t || (after && k == t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The same over sorted keys, galloping from lo: the records near lo are read first, where an
 * answer's per-pixel searches find what they look for. The system model's off-CPU intervals of a
 * thread are disjoint and in order (analysis/sysmodel.c), so both searches give one answer. */
static uint64_t rgallop(vread *r, const varr *a, size_t key_off, uint64_t lo, uint64_t hi, int64_t t, int after)
{
    uint64_t from = lo, probe = lo, step = 1;
    while (probe < hi && !r->err) {
        int64_t k;
        memcpy(&k, (const unsigned char *)mprof__vread_rec(r, a, probe) + key_off, sizeof k);
        if (!(k < t || (after && k == t)))
            break;
        from = probe + 1;
        probe = hi - lo > step ? lo + step : hi;
        step *= 2;
    }
    return rsearch(r, a, key_off, from, probe < hi ? probe : hi, t, after);
}

static soff off_at(vread *r, const varr *a, uint64_t i)
{
    soff o;
    memcpy(&o, mprof__vread_rec(r, a, i), sizeof o);
    return o;
}

static void damaged(vread *r)
{
    if (!r->err)
        snprintf(r->why, sizeof r->why, "a damaged system section in the index");
    r->err = 1;
}

/* Per thread, the off-CPU runs of the view: [start, end, reason, off per mille]. An interval at
 * least a pixel wide is one run (1000 per mille); narrower neighbours within a pixel become one
 * run with their share of off time and the reason that took most of it. */
static int answer_states(vread *r, const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    const shead *h = HEAD(x);
    const varr *oa = &x->arrays[h->off_arr];
    int64_t px = mprof__vq_px_ns(q);
    const sthread *th = AT(sthread, h->threads_off);
    fprintf(out, "{\"px_ns\":%" PRId64 ",\"threads\":[", px);
    uint64_t runs = 0, intervals = 0;
    for (uint64_t ti = 0; ti < h->n_threads && !r->err; ti++) {
        uint64_t base = th[ti].first, n = th[ti].n;
        fprintf(out, "%s{\"tid\":%" PRIu64 ",\"track\":", ti ? "," : "", th[ti].tid);
        if (th[ti].track == UINT32_MAX)
            fputs("null", out);
        else
            fprintf(out, "%" PRIu32, th[ti].track);
        fprintf(out, ",\"start\":%" PRId64 ",\"end\":%" PRId64 ",\"r\":[", th[ti].start, th[ti].end);
        int first = 1;
        /* The first interval that ends after t0: the one before the first that starts after t0,
         * when it ends after t0 (a thread's intervals are disjoint and in order), found through
         * the directory's keys (a thread's intervals have blocks of their own). */
        uint64_t i = mprof__vread_search(r, oa, offsetof(soff, s), base, base + n, q->t0, 1, 0);
        if (i > base && off_at(r, oa, i - 1).e > q->t0)
            i--;
        i -= base;
        while (i < n && !r->err) {
            soff oi = off_at(r, oa, base + i);
            if (oi.s >= q->t1)
                break;
            uint64_t j = i + 1;
            int64_t s = oi.s, e = oi.e, permille = 1000;
            uint32_t reason = oi.reason;
            if (mprof__vq_len(s, e) < px) {
                j = rgallop(r, oa, offsetof(soff, s), base + i + 1, base + n, mprof__vq_add(s, px), 0) - base;
                if (j <= i)
                    j = i + 1;
                /* Stop before an interval that is wide enough to be drawn on its own. */
                for (uint64_t k = i + 1; k < j && !r->err; k++) {
                    soff ok = off_at(r, oa, base + k);
                    if (mprof__vq_len(ok.s, ok.e) >= px) {
                        j = k;
                        break;
                    }
                }
                soff last = off_at(r, oa, base + j - 1);
                e = last.e;
                int64_t off = last.pre + (last.e - last.s) - oi.pre;
                int64_t blk = last.pre_blk + (last.reason == MPROF_SYS_REASON_BLOCKED ? last.e - last.s : 0) - oi.pre_blk;
                int64_t span = e - s > px ? e - s : px;
                permille = off * 1000 / span;
                reason = j - i == 1 ? oi.reason : blk * 2 >= off ? MPROF_SYS_REASON_BLOCKED : MPROF_SYS_REASON_PREEMPTED;
                if (mprof__vq_len(s, e) < px)
                    e = mprof__vq_add(s, px) < th[ti].end ? mprof__vq_add(s, px)
                        : e > th[ti].end                 ? e
                                                         : th[ti].end; /* its pixel */
                if (j < n) {
                    soff next = off_at(r, oa, base + j);
                    if (e > next.s)
                        e = next.s > last.e ? next.s : last.e; /* up to the next run */
                }
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

static scpu cpu_at(vread *r, const varr *a, uint64_t i)
{
    scpu c;
    memcpy(&c, mprof__vread_rec(r, a, i), sizeof c);
    return c;
}

/* The first CPU-usage point of array c at or after t. */
static uint64_t cpu_from(vread *r, const varr *c, int64_t t)
{
    return rsearch(r, c, offsetof(scpu, ts), 0, c->n, t, 0);
}

/* Percentages: 4 digits are plenty. */
static void jnum(FILE *out, double v)
{
    mprof_json_write_number(out, v, 4, 0, "0");
}

/* The CPU-usage points of the view, percent of the machine: per pixel [ts, other min, other
 * max, self min, self max], with the points just outside the range. */
static int answer_cpu(vread *r, const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    const varr *c = &x->arrays[HEAD(x)->cpu_arr];
    uint64_t n = c->n;
    int64_t px = mprof__vq_px_ns(q);
    uint64_t i = cpu_from(r, c, q->t0);
    uint64_t a = i ? i - 1 : i;
    fputs("{\"p\":[", out);
    int first = 1;
    while (a < n && !r->err) {
        uint64_t e;
        scpu ca = cpu_at(r, c, a);
        if (a < i || ca.ts > q->t1)
            e = a + 1; /* the points outside the range, as they are */
        else {
            int64_t into = (int64_t)(((uint64_t)ca.ts - (uint64_t)q->t0) % (uint64_t)px);
            int64_t pix_end = mprof__vq_add(ca.ts, px - into);
            e = cpu_from(r, c, pix_end);
            if (e <= a)
                e = a + 1;
        }
        double omn = INFINITY, omx = -INFINITY, smn = INFINITY, smx = -INFINITY;
        for (uint64_t k = a; k < e; k++) {
            scpu ck = cpu_at(r, c, k);
            omn = fmin(omn, ck.other);
            omx = fmax(omx, ck.other);
            smn = fmin(smn, ck.self);
            smx = fmax(smx, ck.self);
        }
        fprintf(out, "%s%" PRId64 ",", first ? "" : ",", ca.ts);
        jnum(out, 100 * omn);
        fputc(',', out);
        jnum(out, 100 * omx);
        fputc(',', out);
        jnum(out, 100 * smn);
        fputc(',', out);
        jnum(out, 100 * smx);
        first = 0;
        int past = ca.ts > q->t1;
        a = e;
        if (past)
            break;
    }
    fprintf(out, "],\"points\":%" PRIu64 "}", n);
    return 0;
}

typedef struct fnode { uint32_t parent, name, first_child, next; uint64_t count; } fnode;

/* The flame graph of the samples in [t0, t1): distinct stacks counted over every run of
 * samples, merged into a tree. */
static int answer_samples(vread *r, const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    const unsigned char *sec = x->sys;
    const shead *h = HEAD(x);
    const sstack *st = AT(sstack, h->stacks_off);
    const uint32_t *fr = AT(uint32_t, h->frames_off);
    const uint32_t *tix_track = AT(uint32_t, h->tix_off);
    uint64_t *cnt = calloc(h->n_stacks + 1, sizeof *cnt);
    if (!cnt)
        return -1;
    uint64_t total = 0;
    for (uint64_t k = 0; k < h->n_sample_runs && !r->err; k++) {
        const varr *a = &x->arrays[h->sample_arr0 + k];
        for (uint64_t i = mprof__vread_search(r, a, offsetof(vrsample, ts), 0, a->n, q->t0, 0, 0); i < a->n && !r->err; i++) {
            vrsample sm;
            memcpy(&sm, mprof__vread_rec(r, a, i), sizeof sm);
            if (sm.ts >= q->t1)
                break;
            if (sm.stack >= h->n_stacks || sm.tix >= h->n_tix) {
                damaged(r);
                break;
            }
            if (q->has_loc && tix_track[sm.tix] != q->loc)
                continue; /* /api/samples?track=N: the parser keeps the track in loc */
            cnt[sm.stack]++;
            total++;
        }
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

/* Per lock, the waits and holds that start in [t0, t1). */
static int answer_locks(vread *r, const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    const shead *h = HEAD(x);
    const slock *lk = AT(slock, h->locks_off);
    fprintf(out, "{\"t0\":%" PRId64 ",\"t1\":%" PRId64 ",\"locks\":[", q->t0, q->t1);
    for (uint64_t i = 0; i < h->n_locks && !r->err; i++) {
        uint64_t n[2];
        int64_t tot[2], mx[2];
        for (int k = 0; k < 2; k++)
            mprof__vruns_span_range(r, lk[i].arr0[k], lk[i].n_runs[k], q->t0, q->t1, &n[k], &tot[k], &mx[k]);
        fprintf(out,
                "%s{\"lock\":%" PRIu64 ",\"track\":%" PRIu32 ",\"waits\":%" PRIu64 ",\"wait_ns\":%" PRId64
                ",\"max_wait_ns\":%" PRId64 ",\"holds\":%" PRIu64 ",\"hold_ns\":%" PRId64 ",\"max_hold_ns\":%" PRId64 "}",
                i ? "," : "", i, lk[i].track, n[0], tot[0], mx[0], n[1], tot[1], mx[1]);
    }
    fputs("]}", out);
    return 0;
}

int mprof__vsys_answer(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    if (q->kind != MPROF_VQ_SYSTEM && q->kind != MPROF_VQ_STATES && q->kind != MPROF_VQ_CPU &&
        q->kind != MPROF_VQ_SAMPLES && q->kind != MPROF_VQ_LOCKS)
        return 1;
    if (x->sys_len < sizeof(shead)) {
        tool_seterr(err, errlen, "this index has no system section");
        return -1;
    }
    const shead *h = HEAD(x);
    vread r;
    mprof__vread_init(&r, x);
    int rc;
    switch (q->kind) {
    case MPROF_VQ_SYSTEM:
        rc = fwrite(x->sys + h->meta_off, 1, h->meta_len, out) == h->meta_len ? 0 : -1;
        break;
    case MPROF_VQ_STATES:
        rc = answer_states(&r, x, q, out);
        break;
    case MPROF_VQ_CPU:
        rc = answer_cpu(&r, x, q, out);
        break;
    case MPROF_VQ_SAMPLES:
        rc = answer_samples(&r, x, q, out);
        break;
    default:
        rc = answer_locks(&r, x, q, out);
        break;
    }
    if (r.err) {
        tool_seterr(err, errlen, "%s", r.why);
        rc = -1;
    } else if (rc != 0)
        tool_seterr(err, errlen, "out of memory or write error");
    mprof__vread_free(&r);
    return rc;
}
