/*
 * index_stats.c - the zone figures of the served viewer (/api/stats, /api/hist, /api/instances),
 * by the one definition of analysis/site_stats.h, so that the page's Statistics table says what
 * `mprof report` says.
 *
 * The whole capture's figures were computed by the build with site_stats.h itself and are in the
 * directory. A range, or a section (the frames of a frame set), is read from the levels: the zones
 * inside each interval, with the recursion rule of a range: a nested zone adds its duration unless
 * an ancestor of its site is inside the interval too. Its ancestors outside the interval are the
 * zones of its track that cross the interval's edges (the track's stack at each edge, one binary
 * search per level), which hold each other, so counting how many of them hold it is a binary
 * search over depths; its nearest ancestor of its site is stored with it (index_file.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index_block.h"

#include "analysis/site_stats.h"
#include "util/tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The figures of a vloc as a site_stats.h site (the histogram allocated: mprof__site_free). */
static int site_of_vloc(const mprof_vindex *x, const vloc *l, mprof_site_stat *s)
{
    memset(s, 0, sizeof *s);
    s->count = l->count;
    s->total_ns = l->total;
    s->self_ns = l->self;
    s->in_frames_ns = l->in_frames;
    s->hist.n = l->count;
    s->hist.min = l->min;
    s->hist.max = l->max;
    s->hist.sum = l->sum;
    s->hist.sumsq = l->sumsq;
    if (!l->count)
        return 0;
    s->hist.counts = calloc(MPROF_HIST_BUCKETS, sizeof *s->hist.counts);
    if (!s->hist.counts)
        return -1;
    for (uint32_t k = 0; k < l->n_h; k++)
        s->hist.counts[x->hbuckets[l->h0 + k].bucket] = x->hbuckets[l->h0 + k].count;
    return 0;
}

/* The intervals a query covers: [t0, t1), or the frames of its set inside [t0, t1) (a frame
 * that crosses t0 or t1 is cut there). *out (caller frees) gets pairs. */
static int intervals(const mprof_vindex *x, const mprof_vquery *q, int64_t **out, uint64_t *n, char *err,
                     size_t errlen)
{
    int64_t t0 = q->has_t ? q->t0 : INT64_MIN / 2, t1 = q->has_t ? q->t1 : INT64_MAX / 2;
    if (!q->has_set) {
        *out = malloc(2 * sizeof **out);
        if (!*out)
            return -1;
        (*out)[0] = t0;
        (*out)[1] = t1;
        *n = 1;
        return 0;
    }
    if (q->set >= x->d->n_sets) {
        tool_seterr(err, errlen, "no frame set %" PRIu32 " (the capture has %" PRIu64 ")", q->set, x->d->n_sets);
        return -1;
    }
    const vset *st = &x->sets[q->set];
    *out = malloc((size_t)(2 * st->n + 2) * sizeof **out);
    if (!*out)
        return -1;
    *n = 0;
    for (uint64_t i = 0; i < st->n; i++) {
        const vframe *f = &x->frames[st->f0 + i];
        int64_t a = f->s > t0 ? f->s : t0, b = f->s + f->d < t1 ? f->s + f->d : t1;
        if (b > a) {
            (*out)[2 * *n] = a;
            (*out)[2 * *n + 1] = b;
            (*n)++;
        }
    }
    return 0;
}

/* A track's stacks at the edges of each interval k: the ends of the zones that cross its start
 * (a0[k * depths + d], for d < n0[k]) and the starts of those that cross its end (b1, n1): the
 * ancestors a zone inside the interval may have outside it. */
typedef struct edges {
    int64_t *a0, *b1;
    uint32_t *n0, *n1;
    uint32_t depths;
} edges;

/* The number of ancestors of a zone [s, e] at depth d that lie outside interval k. */
static uint32_t outside(const edges *g, uint64_t k, uint32_t d, int64_t s, int64_t e)
{
    /* Ancestors before the interval hold the zone when they end at or after e: a prefix of the
     * depths (ends fall with depth); those after it when they start at or before s (starts rise
     * with depth). Both prefixes from depth 0: binary searches. */
    const int64_t *a0 = g->a0 + k * g->depths, *b1 = g->b1 + k * g->depths;
    uint32_t lo = 0, hi = g->n0[k] < d ? g->n0[k] : d;
    while (lo < hi) {
        uint32_t m = (lo + hi) / 2;
        if (a0[m] >= e)
            lo = m + 1;
        else
            hi = m;
    }
    uint32_t na = lo;
    lo = 0;
    hi = g->n1[k] < d ? g->n1[k] : d;
    while (lo < hi) {
        uint32_t m = (lo + hi) / 2;
        if (b1[m] <= s)
            lo = m + 1;
        else
            hi = m;
    }
    return na > lo ? na : lo;
}

/* Whether a zone of a level of kind counts for its location (site_stats.h; a GPU location's
 * figures are its GPU zones, a lock's its spans). */
static int zone_counts(uint32_t kind, const vzone *z)
{
    return kind == MPROF_TRACK_LOCK || !(z->flags & VZ_UNFINISHED);
}

/* The zone at index i of a level (copied: the reader's blocks move). */
static vzone zone_at(vread *r, const varr *a, uint64_t i)
{
    vzone z;
    memcpy(&z, mprof__vread_rec(r, a, i), sizeof z);
    return z;
}

/* Fills the edges of level li (depth d) for every interval: its zone that crosses each start and
 * each end. The intervals are sorted, so the searches move forward through the level. */
static void level_edges(vread *r, const mprof_vindex *x, uint64_t li, const int64_t *iv, uint64_t n_iv, edges *g)
{
    const vlevel *l = &x->levels[li];
    const varr *za = &x->arrays[l->arr];
    uint32_t d = l->depth;
    uint64_t pos = 0;
    for (uint64_t k = 0; k < n_iv && !r->err; k++) {
        int64_t a = iv[2 * k], b = iv[2 * k + 1];
        uint64_t i = mprof__vread_search(r, za, offsetof(vzone, e), pos, za->n, a, 1, 1);
        pos = i;
        vzone z;
        if (i < za->n && (z = zone_at(r, za, i)).s < a)
            g->a0[k * g->depths + d] = z.e;
        else if (d < g->n0[k])
            g->n0[k] = d;
        uint64_t j = mprof__vread_search(r, za, offsetof(vzone, e), pos, za->n, b, 1, 1);
        if (j < za->n && (z = zone_at(r, za, j)).s < b)
            g->b1[k * g->depths + d] = z.s;
        else if (d < g->n1[k])
            g->n1[k] = d;
    }
}

/* Feeds the zones of level li inside each interval (of source location only, unless only is
 * UINT32_MAX) to sites (by slot), moving forward through the level. */
static int level_scan(vread *r, const mprof_vindex *x, uint64_t li, const int64_t *iv, uint64_t n_iv, const edges *g,
                      uint32_t only, mprof_site_stat *sites, mprof_frame_span span, uint64_t *zones)
{
    const vlevel *l = &x->levels[li];
    const varr *za = &x->arrays[l->arr];
    const vblk *bk = x->blocks + za->blk0;
    uint64_t pos = 0;
    for (uint64_t k = 0; k < n_iv && !r->err; k++) {
        int64_t a = iv[2 * k], b = iv[2 * k + 1];
        uint64_t i = mprof__vread_search(r, za, offsetof(vzone, s), pos, za->n, a, 0, 0);
        while (i < za->n && !r->err) {
            uint64_t bi = mprof__varr_block_of(x, za, i);
            if (bk[bi].k_first >= b)
                break;
            uint64_t end = bk[bi].first + bk[bi].n;
            if (only != UINT32_MAX && !(bk[bi].loc_mask & (UINT64_C(1) << (only % 64)))) {
                i = end;
                continue;
            }
            const vzone *z = mprof__vread_block(r, za, bi);
            if (!z)
                return -1;
            for (; i < end; i++) {
                const vzone *zz = &z[i - bk[bi].first];
                if (zz->s >= b)
                    break;
                if (zz->e > b || zz->loc >= x->n_slots || (only != UINT32_MAX && zz->loc != only) || !zone_counts(l->kind, zz))
                    continue;
                uint32_t up = zz->flags >> VZ_NEST_SHIFT;
                int outermost = up == 0 || up > l->depth ||
                                mprof__site_outermost(1, l->depth - up, outside(g, k, l->depth, zz->s, zz->e));
                if (mprof__site_add(&sites[zz->loc], &span, zz->s, zz->e - zz->s, zz->self, outermost) != 0)
                    return -1;
                (*zones)++;
            }
            if (i < end)
                break; /* reached b inside this block */
        }
        pos = i;
    }
    return r->err ? -1 : 0;
}

/* The sites of the zones inside the query's intervals (of source location only, or all): track
 * by track, each level read once, forward, for all the intervals. */
static int scan_sites(const mprof_vindex *x, const mprof_vquery *q, uint32_t only, mprof_site_stat **out_sites,
                      uint64_t *out_zones, int64_t *out_len, char *err, size_t errlen)
{
    int64_t *iv = NULL;
    uint64_t n_iv = 0, zones = 0;
    if (intervals(x, q, &iv, &n_iv, err, errlen) != 0)
        return -1;
    mprof_site_stat *sites = calloc((size_t)x->n_slots + 1, sizeof *sites);
    uint32_t n_tracks = 0;
    for (uint64_t i = 0; i < x->d->n_levels; i++)
        if (x->levels[i].track + 1 > n_tracks)
            n_tracks = x->levels[i].track + 1;
    const vloc *ol = only != UINT32_MAX ? mprof__vidx_loc(x, only) : NULL;
    char *wanted = calloc((size_t)x->d->n_levels + 1, 1); /* the levels to read */
    int rc = sites && wanted ? 0 : -1;
    for (uint64_t i = 0; rc == 0 && i < x->d->n_levels; i++)
        wanted[i] = only == UINT32_MAX;
    for (uint32_t k = 0; rc == 0 && ol && k < ol->n_lv; k++)
        wanted[x->loclevels[ol->lv0 + k]] = 1;
    vread r;
    mprof__vread_init(&r, x);
    mprof_frame_span span = {x->d->span_first, x->d->span_last};
    edges g = {0};
    for (uint32_t t = 0; t < n_tracks && rc == 0; t++) {
        uint32_t depths = 0;
        int any = 0;
        for (uint64_t i = 0; i < x->d->n_levels; i++)
            if (x->levels[i].track == t) {
                if (x->levels[i].depth + 1 > depths)
                    depths = x->levels[i].depth + 1;
                any |= wanted[i];
            }
        if (!any)
            continue;
        size_t cells = (size_t)n_iv * depths;
        g.depths = depths;
        g.a0 = calloc(cells + 1, sizeof *g.a0);
        g.b1 = calloc(cells + 1, sizeof *g.b1);
        g.n0 = malloc(((size_t)n_iv + 1) * sizeof *g.n0);
        g.n1 = malloc(((size_t)n_iv + 1) * sizeof *g.n1);
        if (!g.a0 || !g.b1 || !g.n0 || !g.n1)
            rc = -1;
        for (uint64_t k = 0; rc == 0 && k < n_iv; k++)
            g.n0[k] = g.n1[k] = depths; /* lowered to the first depth without a crossing */
        /* Every level of the track gives its edges (an ancestor may sit at any depth). */
        for (uint64_t i = 0; rc == 0 && i < x->d->n_levels; i++)
            if (x->levels[i].track == t && x->levels[i].depth < depths)
                level_edges(&r, x, i, iv, n_iv, &g);
        for (uint64_t i = 0; rc == 0 && !r.err && i < x->d->n_levels; i++)
            if (x->levels[i].track == t && wanted[i])
                rc = level_scan(&r, x, i, iv, n_iv, &g, only, sites, span, &zones);
        free(g.a0);
        free(g.b1);
        free(g.n0);
        free(g.n1);
        memset(&g, 0, sizeof g);
        if (r.err)
            rc = -1;
    }
    int64_t len = 0;
    for (uint64_t k = 0; k < n_iv; k++)
        len += iv[2 * k + 1] - iv[2 * k];
    if (rc != 0 && r.err)
        tool_seterr(err, errlen, "%s", r.why);
    else if (rc != 0 && !err[0])
        tool_seterr(err, errlen, "out of memory");
    mprof__vread_free(&r);
    free(wanted);
    free(iv);
    if (rc != 0) {
        if (sites)
            for (uint32_t sl = 0; sl < x->n_slots; sl++)
                mprof__site_free(&sites[sl]);
        free(sites);
        return -1;
    }
    *out_sites = sites;
    *out_zones = zones;
    *out_len = len;
    return 0;
}

/* Whether the query covers the whole capture, whose figures are in the directory. */
static int whole(const mprof_vindex *x, const mprof_vquery *q)
{
    return !q->has_set && (!q->has_t || (q->t0 <= x->d->min_s && q->t1 > x->d->max_e));
}

static void json_row(FILE *out, int *first, uint32_t slot, const mprof_site_stat *s)
{
    fprintf(out, "%s[%" PRIu32 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%.0f,%" PRIu64 ",%" PRIu64
                 ",%" PRId64 "]",
            *first ? "" : ",", slot, s->count, s->total_ns, s->self_ns, mprof__site_min_ns(s), mprof__site_max_ns(s),
            mprof__site_mean_ns(s), mprof__site_quantile_ns(s, 0.5), mprof__site_quantile_ns(s, 0.95), s->in_frames_ns);
    *first = 0;
}

/* The main frames inside [a, b): their number, and the part of [a, b) inside their span. */
static void frames_inside(const mprof_vindex *x, const int64_t *iv, uint64_t n_iv, uint64_t *frames, int64_t *span_ns)
{
    *frames = 0;
    *span_ns = 0;
    const vset *m = x->d->n_sets && x->sets[0].main ? &x->sets[0] : NULL;
    for (uint64_t k = 0; k < n_iv; k++) {
        int64_t a = iv[2 * k], b = iv[2 * k + 1];
        if (x->d->span_first >= 0) {
            int64_t s = a > x->d->span_first ? a : x->d->span_first, e = b < x->d->span_last ? b : x->d->span_last;
            *span_ns += e > s ? e - s : 0;
        }
        if (!m)
            continue;
        /* Frames are sorted by start: from the first that starts at a, while they start before b. */
        uint64_t lo = 0, hi = m->n;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (x->frames[m->f0 + mid].s < a)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (uint64_t i = lo; i < m->n && x->frames[m->f0 + i].s < b; i++)
            *frames += x->frames[m->f0 + i].s + x->frames[m->f0 + i].d <= b;
    }
}

/* Async spans (index_async.c): a row per span name of a track (its slot) and a row per track,
 * [track id, ...], the slots of the track merged: the figures of `mprof report`'s async[]. */
static int async_rows(const mprof_vindex *x, int all, const mprof_site_stat *sites, FILE *out)
{
    uint32_t n_tracks = 0;
    for (uint64_t i = 0; i < x->d->n_levels; i++)
        if (x->levels[i].kind == VTRACK_ASYNC && x->levels[i].track + 1 > n_tracks)
            n_tracks = x->levels[i].track + 1;
    mprof_site_stat *per = calloc((size_t)n_tracks + 1, sizeof *per);
    if (!per)
        return -1;
    int rc = 0, first = 1;
    fputs(",\"async_rows\":[", out);
    for (uint64_t i = 0; i < x->d->n_locs && rc == 0; i++) {
        const vloc *l = &x->locs[i];
        if (l->kind != VTRACK_ASYNC || !l->n_lv)
            continue;
        mprof_site_stat s;
        const mprof_site_stat *sp = &s;
        if (!all)
            sp = &sites[l->slot];
        else if (site_of_vloc(x, l, &s) != 0) {
            rc = -1;
            break;
        }
        uint32_t t = x->levels[x->loclevels[l->lv0]].track;
        if (sp->count) {
            json_row(out, &first, l->slot, sp);
            if (t < n_tracks && mprof__site_merge(&per[t], sp) != 0)
                rc = -1;
        }
        if (all)
            mprof__site_free(&s);
    }
    fputs("],\"async_tracks\":[", out);
    first = 1;
    for (uint32_t t = 0; t < n_tracks; t++) {
        if (per[t].count)
            json_row(out, &first, t, &per[t]);
        mprof__site_free(&per[t]);
    }
    fputc(']', out);
    free(per);
    return rc;
}

int mprof__vidx_answer_stats(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    mprof_site_stat *sites = NULL;
    uint64_t zones = 0;
    int64_t len = 0;
    int all = whole(x, q);
    err[0] = 0;
    if (!all && scan_sites(x, q, UINT32_MAX, &sites, &zones, &len, err, errlen) != 0)
        return -1;
    int64_t *iv = NULL;
    uint64_t n_iv = 0, frames = 0;
    int64_t span_ns = 0;
    if (intervals(x, q, &iv, &n_iv, err, errlen) != 0) {
        free(sites);
        return -1;
    }
    frames_inside(x, iv, n_iv, &frames, &span_ns);
    free(iv);
    fprintf(out, "{\"t0\":%" PRId64 ",\"t1\":%" PRId64 ",\"set\":%" PRId64 ",\"whole\":%s,\"frames\":%" PRIu64
                 ",\"span_ns\":%" PRId64 ",\"columns\":[\"loc\",\"count\",\"total\",\"self\",\"min\",\"max\",\"mean\","
                 "\"p50\",\"p95\",\"in_frames\"]",
            q->t0, q->t1, q->has_set ? (int64_t)q->set : -1, all ? "true" : "false", frames, span_ns);
    int rc = 0;
    for (int gpu = 0; gpu < 2 && rc == 0; gpu++) {
        fprintf(out, ",\"%s\":[", gpu ? "gpu_rows" : "rows");
        int first = 1;
        for (uint64_t i = 0; i < x->d->n_locs; i++) {
            const vloc *l = &x->locs[i];
            if (l->kind != (gpu ? MPROF_TRACK_GPU : MPROF_TRACK_THREAD))
                continue;
            if (all) {
                mprof_site_stat s;
                if (site_of_vloc(x, l, &s) != 0) {
                    rc = -1;
                    break;
                }
                if (s.count) {
                    json_row(out, &first, l->slot, &s);
                    zones += gpu ? 0 : s.count;
                }
                mprof__site_free(&s);
            } else if (sites[l->slot].count)
                json_row(out, &first, l->slot, &sites[l->slot]);
        }
        fputs("]", out);
    }
    if (rc == 0)
        rc = async_rows(x, all, sites, out);
    if (!all) /* zones: the CPU zones of the rows (lock and async spans are no zones, GPU zones have
               * theirs) */
        for (uint64_t i = 0; i < x->d->n_locs; i++)
            if (x->locs[i].kind != MPROF_TRACK_THREAD)
                zones -= sites[x->locs[i].slot].count;
    fprintf(out, ",\"zones\":%" PRIu64 "}", zones);
    if (sites)
        for (uint32_t s = 0; s < x->n_slots; s++)
            mprof__site_free(&sites[s]);
    free(sites);
    if (rc)
        tool_seterr(err, errlen, "out of memory");
    return rc;
}

int mprof__vidx_answer_hist(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    const vloc *l = mprof__vidx_loc(x, q->loc);
    err[0] = 0;
    if (!l) {
        tool_seterr(err, errlen, "no zones of source location %" PRIu32, q->loc);
        return -1;
    }
    mprof_site_stat s;
    mprof_site_stat *sites = NULL;
    uint64_t zones;
    int64_t len;
    int all = whole(x, q);
    if (all) {
        if (site_of_vloc(x, l, &s) != 0) {
            tool_seterr(err, errlen, "out of memory");
            return -1;
        }
    } else {
        if (scan_sites(x, q, q->loc, &sites, &zones, &len, err, errlen) != 0)
            return -1;
        (void)zones;
        (void)len;
        s = sites[q->loc];
        free(sites); /* the other slots had no zones: nothing else to free */
    }
    fprintf(out, "{\"loc\":%" PRIu32 ",\"whole\":%s,\"count\":%" PRIu64 ",\"total\":%" PRId64 ",\"self\":%" PRId64
                 ",\"min\":%" PRIu64 ",\"max\":%" PRIu64 ",\"mean\":%.0f,\"p50\":%" PRIu64 ",\"p95\":%" PRIu64
                 ",\"stddev\":%.0f,\"in_frames\":%" PRId64 ",\"buckets\":[",
            q->loc, all ? "true" : "false", s.count, s.total_ns, s.self_ns, mprof__site_min_ns(&s), mprof__site_max_ns(&s),
            mprof__site_mean_ns(&s), mprof__site_quantile_ns(&s, 0.5), mprof__site_quantile_ns(&s, 0.95),
            mprof__site_stddev_ns(&s), s.in_frames_ns);
    /* Bars of 4 of mprof_hist's buckets (8 per octave): [low, high, count], where /api/instances
     * with dmin=low&dmax=high finds the bar's zones. */
    int first = 1;
    for (unsigned b = 0; s.hist.counts && b < MPROF_HIST_BUCKETS; b += 4) {
        uint64_t c = 0;
        for (unsigned k = b; k < b + 4; k++)
            c += s.hist.counts[k];
        if (!c)
            continue;
        fprintf(out, "%s%" PRIu64 ",%" PRIu64 ",%" PRIu64, first ? "" : ",", mprof_hist_bucket_low(b),
                mprof_hist_bucket_low(b + 4), c);
        first = 0;
    }
    fputs("]}", out);
    mprof__site_free(&s);
    return 0;
}

/* The instances kept by /api/instances: a min-heap keyed by duration, so that the shortest of
 * the longest so far is at its root. */
typedef struct inst { int64_t s, e; uint32_t track, depth; } inst;
typedef struct iheap { inst *at; uint32_t n; } iheap;

static int64_t dur_of(const iheap *h, uint32_t k) { return h->at[k].e - h->at[k].s; }

static void iheap_swap(iheap *h, uint32_t a, uint32_t b)
{
    inst t = h->at[a];
    h->at[a] = h->at[b];
    h->at[b] = t;
}

static void iheap_push(iheap *h, inst v)
{
    uint32_t c = h->n++;
    h->at[c] = v;
    while (c && dur_of(h, (c - 1) / 2) > dur_of(h, c)) {
        iheap_swap(h, c, (c - 1) / 2);
        c = (c - 1) / 2;
    }
}

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

static inst iheap_pop(iheap *h)
{
    inst top = h->at[0];
    h->at[0] = h->at[--h->n];
    iheap_sift_root(h);
    return top;
}

/* The longest `limit` zones of a location with dmin <= duration < dmax (inside the range or
 * section when the query gives one): the zones its histogram counts, read from the levels it
 * appears in, skipping blocks without it or without a zone long enough. */
int mprof__vidx_answer_instances(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    const vloc *l = mprof__vidx_loc(x, q->loc);
    if (!l) {
        tool_seterr(err, errlen, "no zones of source location %" PRIu32, q->loc);
        return -1;
    }
    uint32_t limit = q->limit ? q->limit : 100;
    int64_t dmax = q->dmax > 0 ? q->dmax : INT64_MAX;
    iheap heap = {malloc((size_t)limit * sizeof(inst)), 0};
    inst *sorted = malloc(((size_t)limit + 1) * sizeof *sorted);
    int64_t *iv = NULL;
    uint64_t n_iv = 0, matched = 0;
    err[0] = 0;
    if (!heap.at || !sorted || intervals(x, q, &iv, &n_iv, err, errlen) != 0) {
        free(heap.at);
        free(sorted);
        if (!err[0])
            tool_seterr(err, errlen, "out of memory");
        return -1;
    }
    vread r;
    mprof__vread_init(&r, x);
    uint64_t bit = UINT64_C(1) << (q->loc % 64);
    for (uint32_t k = 0; k < l->n_lv && !r.err; k++) {
        const vlevel *lv = &x->levels[x->loclevels[l->lv0 + k]];
        const varr *za = &x->arrays[lv->arr];
        const vblk *bk = x->blocks + za->blk0;
        for (uint64_t bi = 0; bi < za->n_blocks && !r.err; bi++) {
            if (!(bk[bi].loc_mask & bit) || bk[bi].d_max < q->dmin)
                continue;
            const vzone *z = mprof__vread_block(&r, za, bi);
            for (uint32_t j = 0; z && j < bk[bi].n; j++) {
                int64_t d = z[j].e - z[j].s;
                if (z[j].loc != q->loc || d < q->dmin || d >= dmax || !zone_counts(lv->kind, &z[j]))
                    continue;
                int in = 0;
                for (uint64_t m = 0; m < n_iv && !in; m++)
                    in = mprof__site_inside(iv[2 * m], iv[2 * m + 1], z[j].s, z[j].e);
                if (!in)
                    continue;
                matched++;
                inst v = {z[j].s, z[j].e, lv->track, lv->depth};
                if (heap.n < limit)
                    iheap_push(&heap, v);
                else if (d > dur_of(&heap, 0)) {
                    heap.at[0] = v;
                    iheap_sift_root(&heap);
                }
            }
        }
    }
    free(iv);
    if (r.err) {
        tool_seterr(err, errlen, "%s", r.why);
        mprof__vread_free(&r);
        free(heap.at);
        free(sorted);
        return -1;
    }
    mprof__vread_free(&r);
    /* Longest first: the heap pops the shortest, so it fills the list from the back. */
    uint32_t shown = heap.n;
    for (uint32_t k = heap.n; k > 0; k--)
        sorted[k - 1] = iheap_pop(&heap);
    fprintf(out, "{\"loc\":%" PRIu32 ",\"matched\":%" PRIu64 ",\"i\":[", q->loc, matched);
    for (uint32_t k = 0; k < shown; k++)
        fprintf(out, "%s%" PRId64 ",%" PRId64 ",%" PRIu32 ",%" PRIu32, k ? "," : "", sorted[k].s, sorted[k].e,
                sorted[k].track, sorted[k].depth);
    fputs("]}", out);
    free(sorted);
    free(heap.at);
    return 0;
}
