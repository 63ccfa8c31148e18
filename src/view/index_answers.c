/*
 * index_answers.c - the answers of the served viewer's index (mprof__vindex_answer, view/index.h)
 * but /api/zones (index_zones.c), the zone figures (index_stats.c) and the system section's
 * (index_sys.h): plots from min/max pyramids, messages, frames with their figures and
 * distribution, and frame thumbnails. Each reads the blocks it needs through its own reader
 * (index_block.h): a few binary searches and what it sends.
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index_block.h"

#include "analysis/percentile.h"
#include "analysis/site_stats.h"
#include "util/json_out.h"
#include "util/tool.h"
#include "view/index_sys.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static vpoint point_at(vread *r, const varr *a, uint64_t i)
{
    vpoint p;
    memcpy(&p, mprof__vread_rec(r, a, i), sizeof p);
    return p;
}

/* Min and max of points [a, b) of a plot, from the pyramid where whole groups fit. */
static void plot_minmax(vread *r, const mprof_vindex *x, const vplot *p, uint64_t a, uint64_t b, double *mn, double *mx)
{
    const varr *pts = &x->arrays[p->points];
    uint64_t sizes[PYR_LEVELS + 1];
    sizes[0] = 1;
    for (uint32_t k = 1; k <= p->n_pyr; k++)
        sizes[k] = sizes[k - 1] * PYR_FANOUT;
    while (a < b && !r->err) {
        /* The largest group that starts at a and fits in [a, b). */
        uint32_t lvl = 0;
        for (uint32_t k = p->n_pyr; k >= 1; k--)
            if (a % sizes[k] == 0 && a + sizes[k] <= b && a / sizes[k] < x->arrays[p->pyr[k - 1]].n) {
                lvl = k;
                break;
            }
        double lo, hi;
        if (lvl == 0) {
            lo = hi = point_at(r, pts, a).v;
        } else {
            vmm m;
            memcpy(&m, mprof__vread_rec(r, &x->arrays[p->pyr[lvl - 1]], a / sizes[lvl]), sizeof m);
            lo = m.mn;
            hi = m.mx;
        }
        if (lo < *mn)
            *mn = lo;
        if (hi > *mx)
            *mx = hi;
        a += sizes[lvl];
    }
}

/* A plot's value, exactly. */
static void jdouble(FILE *out, double v)
{
    mprof_json_write_number(out, v, 17, 0, "null");
}

static int answer_plots(vread *r, const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    int64_t px = mprof__vq_px_ns(q);
    fputs("{\"plots\":[", out);
    for (uint64_t pi = 0; pi < x->d->n_plots && !r->err; pi++) {
        const vplot *p = &x->plots[pi];
        const varr *pts = &x->arrays[p->points];
        uint64_t n = pts->n;
        /* [ts, min, max] per pixel, and the point before the range so a line enters it. */
        fprintf(out, "%s{\"id\":%" PRIu64 ",\"p\":[", pi ? "," : "", pi);
        uint64_t i = mprof__vread_search(r, pts, offsetof(vpoint, ts), 0, n, q->t0, 0, 0);
        int first = 1;
        if (i > 0) {
            vpoint b = point_at(r, pts, i - 1);
            fprintf(out, "%" PRId64 ",", b.ts);
            jdouble(out, b.v);
            fputc(',', out);
            jdouble(out, b.v);
            first = 0;
        }
        while (i < n && !r->err) {
            vpoint c = point_at(r, pts, i);
            if (c.ts > q->t1)
                break;
            int64_t into = (int64_t)(((uint64_t)c.ts - (uint64_t)q->t0) % (uint64_t)px);
            int64_t pix_end = mprof__vq_add(c.ts, px - into);
            uint64_t e = mprof__vread_search(r, pts, offsetof(vpoint, ts), i + 1, n, pix_end, 0, 0);
            double mn = INFINITY, mx = -INFINITY;
            plot_minmax(r, x, p, i, e, &mn, &mx);
            fprintf(out, "%s%" PRId64 ",", first ? "" : ",", c.ts);
            jdouble(out, mn);
            fputc(',', out);
            jdouble(out, mx);
            first = 0;
            i = e;
        }
        if (i < n) {
            vpoint c = point_at(r, pts, i);
            fprintf(out, "%s%" PRId64 ",", first ? "" : ",", c.ts);
            jdouble(out, c.v);
            fputc(',', out);
            jdouble(out, c.v);
        }
        fputs("]}", out);
    }
    fputs("]}", out);
    return 0;
}

static int answer_messages(vread *r, const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    const varr *ma = &x->arrays[x->d->msgs], *ta = &x->arrays[x->d->text];
    uint64_t n = ma->n;
    uint64_t lo = mprof__vread_search(r, ma, offsetof(vmsg, ts), 0, n, q->t0, 0, 0);
    uint32_t limit = q->limit ? q->limit : 2000;
    uint64_t shown = 0, in_range = 0;
    char *text = NULL;
    size_t cap = 0;
    fputs("{\"m\":[", out);
    for (uint64_t i = lo; i < n && !r->err; i++) {
        vmsg m;
        memcpy(&m, mprof__vread_rec(r, ma, i), sizeof m);
        if (m.ts > q->t1)
            break;
        in_range++;
        if (shown >= limit)
            continue;
        uint32_t tl = 0;
        if (m.text_off <= ta->n && m.text_len <= ta->n - m.text_off) {
            if (m.text_len > cap) {
                char *p = realloc(text, m.text_len);
                if (!p)
                    break;
                text = p;
                cap = m.text_len;
            }
            if (mprof__vread_bytes(r, ta, m.text_off, m.text_len, text) == 0)
                tl = m.text_len;
        }
        fprintf(out, "%s[%" PRId64 ",%" PRIu32 ",%" PRIu32 ",", shown ? "," : "", m.ts, m.level, m.track);
        mprof_json_write_string(out, tl ? text : "", tl);
        fputc(']', out);
        shown++;
        if (in_range > (uint64_t)limit * 64)
            break; /* counted enough to say there are more */
    }
    free(text);
    fprintf(out, "],\"shown\":%" PRIu64 ",\"in_range\":%" PRIu64 ",\"total\":%" PRIu64 "}", shown, in_range, n);
    return 0;
}

/* The frame set of a query (the main one, first, unless `set` says). NULL when there is none. */
static const vset *set_of(const mprof_vindex *x, const mprof_vquery *q, char *err, size_t errlen)
{
    uint32_t k = q->has_set ? q->set : 0;
    if (k >= x->d->n_sets) {
        if (q->has_set)
            tool_seterr(err, errlen, "no frame set %" PRIu32 " (the capture has %" PRIu64 ")", k, x->d->n_sets);
        return NULL;
    }
    return &x->sets[k];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The worst frame of each of w buckets of frames [from, to) of a set, the figures of its complete
 * frames there (site_stats.h's frame summary, as `mprof report` prints) and their distribution in
 * the buckets of /api/hist (8 per octave). */
static int answer_frames(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    const vset *st = set_of(x, q, err, errlen);
    if (!st && q->has_set)
        return -1;
    const vframe *f = st ? x->frames + st->f0 : NULL;
    uint64_t n = st ? st->n : 0;
    uint64_t a = q->has_frames ? (uint64_t)q->from : 0, b = q->has_frames ? (uint64_t)q->to : n;
    if (b > n)
        b = n;
    if (a > b)
        a = b;
    fprintf(out, "{\"count\":%" PRIu64 ",\"set\":%" PRIu32 ",\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"f\":[", n,
            q->has_set ? q->set : 0, a, b);
    uint64_t span = b - a, w = q->w;
    int first = 1;
    for (uint64_t px = 0; px < w && span; px++) {
        uint64_t s = a + span * px / w, e = a + span * (px + 1) / w;
        if (e <= s)
            continue;
        uint64_t worst = s;
        for (uint64_t i = s + 1; i < e; i++)
            if (f[i].d > f[worst].d)
                worst = i;
        fprintf(out, "%s%" PRIu64 ",%" PRId64 ",%" PRId64, first ? "" : ",", worst, f[worst].s, f[worst].d);
        first = 0;
    }
    fputs("]", out);
    /* The time the frames [from, to) cover: the first one's start, the last one's end. */
    if (span)
        fprintf(out, ",\"t0\":%" PRId64 ",\"t1\":%" PRId64, f[a].s, f[b - 1].s + f[b - 1].d);
    double *d = malloc((size_t)(span + 1) * sizeof *d);
    if (!d) {
        tool_seterr(err, errlen, "out of memory");
        return -1;
    }
    uint64_t k = 0, lossy = 0;
    for (uint64_t i = a; i < b; i++) {
        if (f[i].flags & 1)
            lossy++;
        else
            d[k++] = (double)f[i].d;
    }
    qsort(d, (size_t)k, sizeof *d, cmp_double);
    mprof_frame_summary sm = mprof__frame_summary(d, k);
    fprintf(out, ",\"complete\":%" PRIu64 ",\"incomplete\":%" PRIu64, sm.count, lossy);
    const char *names[] = {"total", "mean", "stddev", "min", "p50", "p90", "p95", "p99", "max"};
    double vals[] = {sm.total, sm.mean, sm.stddev, sm.min, sm.p50, sm.p90, sm.p95, sm.p99, sm.max};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        fprintf(out, ",\"%s\":", names[i]);
        mprof_json_write_number(out, vals[i], 17, 0, "0");
    }
    /* The distribution: [low, high, count] of each non-empty group of 4 of mprof_hist's buckets
     * (8 per octave), the frames being sorted. */
    fputs(",\"hist\":[", out);
    first = 1;
    unsigned bk = 0;
    for (uint64_t i = 0; i < k;) {
        uint64_t v = (uint64_t)d[i];
        while (bk + 8 <= MPROF_HIST_BUCKETS && mprof_hist_bucket_low(bk + 4) <= v)
            bk += 4;
        uint64_t lo = mprof_hist_bucket_low(bk), hi = mprof_hist_bucket_low(bk + 4);
        uint64_t c = 0;
        while (i < k && ((uint64_t)d[i] < hi || bk + 8 > MPROF_HIST_BUCKETS)) {
            c++;
            i++;
        }
        fprintf(out, "%s%" PRIu64 ",%" PRIu64 ",%" PRIu64, first ? "" : ",", lo, hi, c);
        first = 0;
    }
    fputs("]}", out);
    free(d);
    return 0;
}

/* The thumbnail of frame q->from of the main set: the last image recorded before the frame
 * ended. */
static int answer_image(vread *r, const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    const varr *ia = &x->arrays[x->d->images], *ba = &x->arrays[x->d->image_bytes];
    uint64_t n = ia->n;
    const vset *st = x->d->n_sets ? &x->sets[0] : NULL;
    if (!st || (uint64_t)q->from >= st->n || !n) {
        tool_seterr(err, errlen, "no image of frame %lld", (long long)q->from);
        return -1;
    }
    const vframe *f = &x->frames[st->f0 + (uint64_t)q->from];
    int64_t end = f->s + f->d;
    uint64_t lo = mprof__vread_search(r, ia, offsetof(vimage, ts), 0, n, end, 0, 0);
    vimage m;
    if (lo)
        memcpy(&m, mprof__vread_rec(r, ia, lo - 1), sizeof m);
    if (!lo || r->err || m.ts < f->s - f->d) {
        tool_seterr(err, errlen, "no image of frame %lld", (long long)q->from);
        return -1;
    }
    uint64_t raw_len = (uint64_t)m.w * m.h * 3;
    if (m.codec != 1 || !m.w || !m.h || raw_len > (1u << 20) || m.off > ba->n || m.len > ba->n - m.off || m.len > (1u << 22)) {
        tool_seterr(err, errlen, "frame %lld: a damaged image", (long long)q->from);
        return -1;
    }
    unsigned char *raw = malloc(raw_len), *z = malloc(m.len ? m.len : 1);
    if (!raw || !z || mprof__vread_bytes(r, ba, m.off, m.len, z) != 0) {
        free(raw);
        free(z);
        tool_seterr(err, errlen, "frame %lld: the image cannot be read", (long long)q->from);
        return -1;
    }
    size_t got = ZSTD_decompress(raw, raw_len, z, m.len);
    free(z);
    if (ZSTD_isError(got) || got != raw_len) {
        free(raw);
        tool_seterr(err, errlen, "frame %lld: the image does not decompress", (long long)q->from);
        return -1;
    }
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fprintf(out, "{\"frame\":%lld,\"ts\":%" PRId64 ",\"w\":%" PRIu32 ",\"h\":%" PRIu32 ",\"rgb\":\"", (long long)q->from,
            m.ts, m.w, m.h);
    for (uint64_t i = 0; i < raw_len; i += 3) /* raw_len is a multiple of 3: no padding */
        fprintf(out, "%c%c%c%c", b64[raw[i] >> 2], b64[((raw[i] & 3) << 4) | (raw[i + 1] >> 4)],
                b64[((raw[i + 1] & 15) << 2) | (raw[i + 2] >> 6)], b64[raw[i + 2] & 63]);
    fputs("\"}", out);
    free(raw);
    return 0;
}

int mprof__vindex_answer(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    vread r;
    mprof__vread_init(&r, x);
    int rc;
    switch (q->kind) {
    case MPROF_VQ_META:
        rc = fwrite(x->meta, 1, x->meta_len, out) == x->meta_len ? 0 : -1;
        break;
    case MPROF_VQ_ZONES:
        mprof__vread_free(&r);
        return mprof__vidx_answer_zones(x, q, out, err, errlen);
    case MPROF_VQ_STATS:
        mprof__vread_free(&r);
        return mprof__vidx_answer_stats(x, q, out, err, errlen);
    case MPROF_VQ_HIST:
        mprof__vread_free(&r);
        return mprof__vidx_answer_hist(x, q, out, err, errlen);
    case MPROF_VQ_INSTANCES:
        mprof__vread_free(&r);
        return mprof__vidx_answer_instances(x, q, out, err, errlen);
    case MPROF_VQ_PLOTS:
        rc = answer_plots(&r, x, q, out);
        break;
    case MPROF_VQ_MESSAGES:
        rc = answer_messages(&r, x, q, out);
        break;
    case MPROF_VQ_FRAMES:
        mprof__vread_free(&r);
        return answer_frames(x, q, out, err, errlen);
    case MPROF_VQ_IMAGE:
        rc = answer_image(&r, x, q, out, err, errlen);
        if (rc == 0 && r.err)
            tool_seterr(err, errlen, "%s", r.why);
        rc = rc || r.err ? -1 : 0;
        mprof__vread_free(&r);
        return rc;
    default:
        mprof__vread_free(&r);
        rc = mprof__vsys_answer(x, q, out, err, errlen);
        if (rc == 1)
            tool_seterr(err, errlen, "not a query");
        return rc ? -1 : 0;
    }
    if (r.err) {
        tool_seterr(err, errlen, "%s", r.why);
        rc = -1;
    } else if (rc != 0)
        tool_seterr(err, errlen, "out of memory or write error");
    mprof__vread_free(&r);
    return rc;
}
