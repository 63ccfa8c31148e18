/*
 * index_answers.c - the answers of the served viewer's index (mprof__vindex_answer, view/index.h)
 * except /api/zones (index_zones.c) and the system section's (index_sys.h): plots from min/max
 * pyramids, messages, the worst frame per pixel, frame thumbnails, the statistics of a range,
 * duration histograms and the longest instances of a source location. Each reads the mapped file
 * in place: a few binary searches and what it sends.
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index_file.h"

#include "util/json_out.h"
#include "util/tool.h"
#include "view/index_search.h"
#include "view/index_sys.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Min and max of points [a, b) of a plot, from the pyramid where whole blocks fit. */
static void plot_minmax(const mprof_vindex *x, const vplot *p, uint64_t a, uint64_t b, double *mn, double *mx)
{
    const vpoint *pt = (const vpoint *)(x->map + p->off);
    while (a < b) {
        /* The largest block size that starts at a and fits in [a, b). */
        uint64_t bs = 1, off = p->pyr_off, lvl_n = p->n;
        int lvl = 0;
        uint64_t sizes[24], offs[24];
        sizes[0] = 1;
        offs[0] = 0;
        for (uint32_t k = 1; k <= p->pyr_levels && k < 24; k++) {
            lvl_n = (lvl_n + PYR_FANOUT - 1) / PYR_FANOUT;
            sizes[k] = sizes[k - 1] * PYR_FANOUT;
            offs[k] = off;
            off += lvl_n * sizeof(vmm);
        }
        for (uint32_t k = p->pyr_levels < 23 ? p->pyr_levels : 23; k >= 1; k--)
            if (a % sizes[k] == 0 && a + sizes[k] <= b) {
                lvl = (int)k;
                break;
            }
        bs = sizes[lvl];
        if (lvl == 0) {
            if (pt[a].v < *mn)
                *mn = pt[a].v;
            if (pt[a].v > *mx)
                *mx = pt[a].v;
        } else {
            const vmm *m = (const vmm *)(x->map + offs[lvl]);
            const vmm *e = &m[a / bs];
            if (mprof__vidx_in_file(x, offs[lvl] + (a / bs) * sizeof(vmm), 1, sizeof(vmm))) {
                if (e->mn < *mn)
                    *mn = e->mn;
                if (e->mx > *mx)
                    *mx = e->mx;
            }
        }
        a += bs;
    }
}

/* The first point of p[0, n) at or after t. */
static uint64_t point_from(const vpoint *p, uint64_t n, int64_t t)
{
    return mprof__vfirst_from(p, sizeof *p, offsetof(vpoint, ts), 0, n, t);
}

/* A plot's value, exactly. */
static void jdouble(FILE *out, double v)
{
    mprof_json_write_number(out, v, 17, 0, "null");
}

static int answer_plots(const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    int64_t px = mprof__vq_px_ns(q);
    fputs("{\"plots\":[", out);
    for (uint64_t pi = 0; pi < x->h->n_plots; pi++) {
        const vplot *p = &x->plots[pi];
        const vpoint *pt = (const vpoint *)(x->map + p->off);
        /* [ts, min, max] per pixel, and the point before the range so a line enters it. */
        fprintf(out, "%s{\"id\":%" PRIu64 ",\"p\":[", pi ? "," : "", pi);
        uint64_t i = point_from(pt, p->n, q->t0);
        int first = 1;
        if (i > 0) {
            fprintf(out, "%" PRId64 ",", pt[i - 1].ts);
            jdouble(out, pt[i - 1].v);
            fputc(',', out);
            jdouble(out, pt[i - 1].v);
            first = 0;
        }
        while (i < p->n && pt[i].ts <= q->t1) {
            int64_t into = (int64_t)(((uint64_t)pt[i].ts - (uint64_t)q->t0) % (uint64_t)px);
            int64_t pix_end = mprof__vq_add(pt[i].ts, px - into);
            uint64_t e = point_from(pt, p->n, pix_end);
            double mn = INFINITY, mx = -INFINITY;
            plot_minmax(x, p, i, e, &mn, &mx);
            fprintf(out, "%s%" PRId64 ",", first ? "" : ",", pt[i].ts);
            jdouble(out, mn);
            fputc(',', out);
            jdouble(out, mx);
            first = 0;
            i = e;
        }
        if (i < p->n) {
            fprintf(out, "%s%" PRId64 ",", first ? "" : ",", pt[i].ts);
            jdouble(out, pt[i].v);
            fputc(',', out);
            jdouble(out, pt[i].v);
        }
        fputs("]}", out);
    }
    fputs("]}", out);
    return 0;
}

static int answer_messages(const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    const vmsg *m = (const vmsg *)(x->map + x->h->msgs_off);
    uint64_t n = x->h->n_msgs;
    uint64_t lo = mprof__vfirst_from(m, sizeof *m, offsetof(vmsg, ts), 0, n, q->t0);
    uint32_t limit = q->limit ? q->limit : 2000;
    uint64_t shown = 0, in_range = 0;
    fputs("{\"m\":[", out);
    for (uint64_t i = lo; i < n && m[i].ts <= q->t1; i++) {
        in_range++;
        if (shown >= limit)
            continue;
        const char *text = "";
        uint32_t tl = 0;
        if (mprof__vidx_in_file(x, x->h->text_off + m[i].text_off, m[i].text_len, 1) && m[i].text_off <= x->h->text_len &&
            m[i].text_len <= x->h->text_len - m[i].text_off) {
            text = (const char *)x->map + x->h->text_off + m[i].text_off;
            tl = m[i].text_len;
        }
        fprintf(out, "%s[%" PRId64 ",%" PRIu32 ",%" PRIu32 ",", shown ? "," : "", m[i].ts, m[i].level, m[i].track);
        mprof_json_write_string(out, text, tl);
        fputc(']', out);
        shown++;
        if (in_range > (uint64_t)limit * 64)
            break; /* counted enough to say there are more */
    }
    fprintf(out, "],\"shown\":%" PRIu64 ",\"in_range\":%" PRIu64 ",\"total\":%" PRIu64 "}", shown, in_range, n);
    return 0;
}

static int answer_frames(const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    const vframe *f = (const vframe *)(x->map + x->h->frames_off);
    uint64_t n = x->h->n_frames;
    uint64_t a = q->has_frames ? (uint64_t)q->from : 0, b = q->has_frames ? (uint64_t)q->to : n;
    if (b > n)
        b = n;
    if (a > b)
        a = b;
    fprintf(out, "{\"count\":%" PRIu64 ",\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"f\":[", n, a, b);
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
    fputs("]}", out);
    return 0;
}

/* The thumbnail of frame q->from: the last image recorded before the frame ended. */
static int answer_image(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    const vframe *f = (const vframe *)(x->map + x->h->frames_off);
    const vimage *im = (const vimage *)(x->map + x->h->images_off);
    uint64_t n = x->h->n_images;
    if ((uint64_t)q->from >= x->h->n_frames || !n) {
        tool_seterr(err, errlen, "no image of frame %lld", (long long)q->from);
        return -1;
    }
    int64_t end = f[q->from].s + f[q->from].d;
    uint64_t lo = mprof__vfirst_from(im, sizeof *im, offsetof(vimage, ts), 0, n, end);
    if (!lo || im[lo - 1].ts < f[q->from].s - f[q->from].d) {
        tool_seterr(err, errlen, "no image of frame %lld", (long long)q->from);
        return -1;
    }
    const vimage *m = &im[lo - 1];
    uint64_t raw_len = (uint64_t)m->w * m->h * 3;
    if (m->codec != 1 || !m->w || !m->h || raw_len > (1u << 20) || m->off > x->h->image_bytes_len ||
        m->len > x->h->image_bytes_len - m->off) {
        tool_seterr(err, errlen, "frame %lld: a damaged image", (long long)q->from);
        return -1;
    }
    unsigned char *raw = malloc(raw_len);
    if (!raw)
        return -1;
    size_t got = ZSTD_decompress(raw, raw_len, x->map + x->h->image_bytes_off + m->off, m->len);
    if (ZSTD_isError(got) || got != raw_len) {
        free(raw);
        tool_seterr(err, errlen, "frame %lld: the image does not decompress", (long long)q->from);
        return -1;
    }
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fprintf(out, "{\"frame\":%lld,\"ts\":%" PRId64 ",\"w\":%" PRIu32 ",\"h\":%" PRIu32 ",\"rgb\":\"", (long long)q->from,
            m->ts, m->w, m->h);
    for (uint64_t i = 0; i < raw_len; i += 3) /* raw_len is a multiple of 3: no padding */
        fprintf(out, "%c%c%c%c", b64[raw[i] >> 2], b64[((raw[i] & 3) << 4) | (raw[i + 1] >> 4)],
                b64[((raw[i + 1] & 15) << 2) | (raw[i + 2] >> 6)], b64[raw[i + 2] & 63]);
    fputs("\"}", out);
    free(raw);
    return 0;
}

typedef struct acc { uint64_t n; int64_t total, self, min, max; } acc;

static int answer_stats(const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    uint64_t nl = x->h->n_locs;
    acc *a = calloc(nl + 1, sizeof *a);
    if (!a)
        return -1;
    uint64_t zones = 0;
    for (uint64_t li = 0; li < x->h->n_levels; li++) {
        const vlevel *l = &x->levels[li];
        const vzone *z = mprof__vidx_level_zones(x, l);
        uint64_t i = mprof__vfirst_from(z, sizeof *z, offsetof(vzone, s), 0, l->n, q->t0);
        for (; i < l->n && z[i].s < q->t1; i++) {
            if (z[i].e > q->t1 || z[i].loc >= nl)
                continue;
            acc *c = &a[z[i].loc];
            int64_t d = z[i].e - z[i].s;
            if (!c->n || d < c->min)
                c->min = d;
            if (!c->n || d > c->max)
                c->max = d;
            c->n++;
            c->total += d;
            c->self += z[i].self;
            zones++;
        }
    }
    fprintf(out, "{\"t0\":%" PRId64 ",\"t1\":%" PRId64 ",\"zones\":%" PRIu64 ",\"rows\":[", q->t0, q->t1, zones);
    int first = 1;
    for (uint64_t i = 0; i < nl; i++) {
        if (!a[i].n)
            continue;
        fprintf(out, "%s[%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "]", first ? "" : ",",
                i, a[i].n, a[i].total, a[i].self, a[i].min, a[i].max);
        first = 0;
    }
    fputs("]}", out);
    free(a);
    return 0;
}

static int answer_hist(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    if (q->loc >= x->h->n_locs || !x->locs[q->loc].hist_off) {
        tool_seterr(err, errlen, "no zones of source location %" PRIu32, q->loc);
        return -1;
    }
    const vloc *l = &x->locs[q->loc];
    const uint64_t *h = (const uint64_t *)(x->map + l->hist_off);
    int lo = 0, hi = HIST_BUCKETS - 1;
    while (lo < hi && !h[lo])
        lo++;
    while (hi > lo && !h[hi])
        hi--;
    fprintf(out, "{\"loc\":%" PRIu32 ",\"count\":%" PRIu64 ",\"total\":%" PRId64 ",\"min\":%" PRId64
                 ",\"max\":%" PRId64 ",\"buckets\":[",
            q->loc, l->n, l->total, l->min, l->max);
    for (int b = lo; b <= hi; b++)
        fprintf(out, "%s%" PRId64 ",%" PRId64 ",%" PRIu64, b > lo ? "," : "", mprof__vidx_hist_edge(b), mprof__vidx_hist_edge(b + 1), h[b]);
    fputs("]}", out);
    return 0;
}

/* The instances kept by /api/instances: a min-heap of indices into in, keyed by duration, so that
 * the shortest of the longest so far is at its root. */
typedef struct iheap {
    uint64_t *at;
    uint32_t n;
    const vinst *in;
} iheap;

static int64_t dur_of(const iheap *h, uint32_t k)
{
    return h->in[h->at[k]].e - h->in[h->at[k]].s;
}

static void iheap_swap(iheap *h, uint32_t a, uint32_t b)
{
    uint64_t t = h->at[a];
    h->at[a] = h->at[b];
    h->at[b] = t;
}

/* Adds instance i (the heap has room for it). */
static void iheap_push(iheap *h, uint64_t i)
{
    uint32_t c = h->n++;
    h->at[c] = i;
    while (c && dur_of(h, (c - 1) / 2) > dur_of(h, c)) {
        iheap_swap(h, c, (c - 1) / 2);
        c = (c - 1) / 2;
    }
}

/* Restores the heap after its root changed. */
static void iheap_sift_root(iheap *h)
{
    uint32_t c = 0;
    for (;;) {
        uint32_t s = c, lc = 2 * c + 1, rc = lc + 1;
        if (lc < h->n && dur_of(h, lc) < dur_of(h, s))
            s = lc;
        if (rc < h->n && dur_of(h, rc) < dur_of(h, s))
            s = rc;
        if (s == c)
            break;
        iheap_swap(h, c, s);
        c = s;
    }
}

/* Takes the root: the shortest instance of the heap. */
static uint64_t iheap_pop(iheap *h)
{
    uint64_t top = h->at[0];
    h->at[0] = h->at[--h->n];
    iheap_sift_root(h);
    return top;
}

static int answer_instances(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    if (q->loc >= x->h->n_locs) {
        tool_seterr(err, errlen, "no zones of source location %" PRIu32, q->loc);
        return -1;
    }
    const vloc *l = &x->locs[q->loc];
    const vinst *in = (const vinst *)(x->map + l->off);
    uint32_t limit = q->limit ? q->limit : 100;
    int64_t dmax = q->dmax > 0 ? q->dmax : INT64_MAX;
    /* The longest `limit` matches. */
    iheap heap = {malloc((size_t)limit * sizeof(uint64_t)), 0, in};
    if (!heap.at)
        return -1;
    uint64_t matched = 0;
    for (uint64_t i = 0; i < l->n; i++) {
        int64_t d = in[i].e - in[i].s;
        if (d < q->dmin || d >= dmax)
            continue;
        matched++;
        if (heap.n < limit)
            iheap_push(&heap, i);
        else if (d > dur_of(&heap, 0)) {
            heap.at[0] = i;
            iheap_sift_root(&heap);
        }
    }
    /* Longest first: the heap pops the shortest, so it fills the list from the back. */
    uint64_t *sorted = malloc(((size_t)heap.n + 1) * sizeof *sorted);
    if (!sorted) {
        free(heap.at);
        return -1;
    }
    for (uint32_t k = heap.n; k > 0; k--)
        sorted[k - 1] = iheap_pop(&heap);
    uint32_t shown = (uint32_t)(matched < limit ? matched : limit);
    fprintf(out, "{\"loc\":%" PRIu32 ",\"matched\":%" PRIu64 ",\"i\":[", q->loc, matched);
    for (uint32_t k = 0; k < shown; k++) {
        const vinst *v = &in[sorted[k]];
        fprintf(out, "%s%" PRId64 ",%" PRId64 ",%" PRIu32 ",%" PRIu32, k ? "," : "", v->s, v->e, v->track, v->depth);
    }
    fputs("]}", out);
    free(sorted);
    free(heap.at);
    return 0;
}

int mprof__vindex_answer(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    int rc;
    switch (q->kind) {
    case MPROF_VQ_META:
        rc = fwrite(x->map + x->h->meta_off, 1, x->h->meta_len, out) == x->h->meta_len ? 0 : -1;
        break;
    case MPROF_VQ_ZONES:
        rc = mprof__vidx_answer_zones(x, q, out);
        break;
    case MPROF_VQ_PLOTS:
        rc = answer_plots(x, q, out);
        break;
    case MPROF_VQ_MESSAGES:
        rc = answer_messages(x, q, out);
        break;
    case MPROF_VQ_FRAMES:
        rc = answer_frames(x, q, out);
        break;
    case MPROF_VQ_STATS:
        rc = answer_stats(x, q, out);
        break;
    case MPROF_VQ_HIST:
        return answer_hist(x, q, out, err, errlen);
    case MPROF_VQ_INSTANCES:
        return answer_instances(x, q, out, err, errlen);
    case MPROF_VQ_IMAGE:
        return answer_image(x, q, out, err, errlen);
    default:
        rc = mprof__vsys_answer(x->map + x->h->sys_off, x->h->sys_len, q, out, err, errlen);
        if (rc == 1)
            tool_seterr(err, errlen, "not a query");
        return rc ? -1 : 0;
    }
    if (rc != 0)
        tool_seterr(err, errlen, "out of memory or write error");
    return rc;
}
