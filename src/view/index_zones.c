/*
 * index_zones.c - /api/zones: the zones of a time range at the page's width, drawn or merged.
 *
 * Zones of one level (a track's depth) never overlap, so their starts and their ends are both
 * sorted: the zones of the range are two binary searches away, and the zones narrower than a
 * pixel that follow each other within a pixel become one merged span with its count, as the
 * static page merges them in JavaScript. When a pixel is wider than the resolution of one of the
 * level's tiers of detail (index_detail.c), the merge reads the tier's runs instead of the zones:
 * the same answer from far fewer records.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "view/index_block.h"

#include "util/tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A level's zones, or one of its tiers, seen alike by the merge: item i starts at s(i), ends at
 * e(i) and holds the zones [first(i), first(i + 1)) of the level (a zone holds itself). */
typedef struct seq {
    vread *r;
    const varr *a;
    int tier;
    uint64_t n, level_n;
} seq;

/* Item i, copied out of the reader's cache. */
static vzone sq_at(const seq *q, uint64_t i)
{
    vzone z;
    memcpy(&z, mprof__vread_rec(q->r, q->a, i), sizeof z);
    return z;
}

static int64_t sq_s(const seq *q, uint64_t i) { return sq_at(q, i).s; }
static int64_t sq_e(const seq *q, uint64_t i) { return sq_at(q, i).e; }

/* Clamped, so that a damaged tier can give wrong counts but never reads outside its level. */
static uint64_t sq_first(const seq *q, uint64_t i)
{
    if (!q->tier || i >= q->n)
        return i >= q->n ? q->level_n : i;
    uint64_t f = sq_at(q, i).first;
    return f < q->level_n ? f : q->level_n;
}

static uint64_t sq_count(const seq *q, uint64_t a, uint64_t b)
{
    uint64_t fa = sq_first(q, a), fb = sq_first(q, b);
    return fb > fa ? fb - fa : 0;
}

/* First item of [lo, hi) whose end is after t (ends are sorted within a level). */
static uint64_t sq_end_after(const seq *q, uint64_t lo, uint64_t hi, int64_t t)
{
    return mprof__vread_search(q->r, q->a, offsetof(vzone, e), lo, hi, t, 1, 1);
}

/* First item of [lo, hi) that starts at or after t. */
static uint64_t sq_start_from(const seq *q, uint64_t lo, uint64_t hi, int64_t t)
{
    return mprof__vread_search(q->r, q->a, offsetof(vzone, s), lo, hi, t, 0, 0);
}

/* The merge of one level: zones at least a pixel wide are drawn; a run of narrower zones, each
 * starting less than a pixel after the previous one ends and before t1, is one merged span with
 * its count. It is fed items in order (zones, or runs of a tier whose resolution is at most a
 * pixel: such a run lies inside one merged span), and a run stays open from one feed to the next. */
typedef struct merge {
    FILE *out, *m;
    int64_t px, t1;
    int fz, fm, open;
    int64_t bs, be;
    uint64_t cnt, drawn, merged;
    FILE *th;         /* async lanes: each drawn span's threads, else NULL */
    const varr *thr;  /* their vthr array */
    vread *r;
} merge;

static void merge_close(merge *g)
{
    if (!g->open)
        return;
    fprintf(g->m, "%s%" PRId64 ",%" PRId64 ",%" PRIu64, g->fm ? "" : ",", g->bs, g->be, g->cnt);
    g->fm = 0;
    g->merged += g->cnt;
    g->open = 0;
}

static int sq_wide(const seq *q, uint64_t i, int64_t px)
{
    return mprof__vq_len(sq_s(q, i), sq_e(q, i)) >= px && sq_count(q, i, i + 1) == 1;
}

static void merge_feed(merge *g, const seq *q, uint64_t i, uint64_t end)
{
    while (i < end) {
        if (g->open) {
            int64_t lim = mprof__vq_add(g->be, g->px) < g->t1 ? mprof__vq_add(g->be, g->px) : g->t1;
            uint64_t k = sq_start_from(q, i, end, lim);
            if (k == i) {
                merge_close(g);
                continue;
            }
            /* Items of a level do not overlap: among [i, k) only the last can be wide. */
            int wide_last = sq_wide(q, k - 1, g->px);
            uint64_t e = wide_last ? k - 1 : k;
            if (e > i) {
                g->cnt += sq_count(q, i, e);
                if (sq_e(q, e - 1) > g->be)
                    g->be = sq_e(q, e - 1);
                i = e;
            }
            if (wide_last)
                merge_close(g);
            continue;
        }
        if (sq_s(q, i) >= g->t1)
            return;
        if (sq_wide(q, i, g->px)) {
            vzone z = sq_at(q, i);
            if (g->th) {
                /* z.first is the span's index in its lane (a run of one names its zone). */
                vthr t;
                memcpy(&t, mprof__vread_rec(g->r, g->thr, z.first < g->thr->n ? z.first : 0), sizeof t);
                fprintf(g->th, "%s%" PRIu32 ",%" PRId64 ",%" PRIu32, g->fz ? "" : ",", t.begin,
                        t.end == VNONE ? INT64_C(-1) : (int64_t)t.end, t.cut);
            }
            fprintf(g->out, "%s%" PRId64 ",%" PRId64 ",%" PRIu32 ",%" PRId64, g->fz ? "" : ",", z.s, z.e, z.loc, z.self);
            g->fz = 0;
            g->drawn++;
            i++;
            continue;
        }
        g->open = 1;
        g->bs = sq_s(q, i);
        g->be = sq_e(q, i);
        g->cnt = sq_count(q, i, i + 1);
        i++;
    }
}

/* Zones [a, b) of one run of a tier: they are narrower than a pixel and each follows the previous
 * one by less than a pixel, so they join one merged span whatever comes before or after; fed as
 * one item, without reading the zones between. */
static void merge_piece(merge *g, const seq *z, uint64_t a, uint64_t b)
{
    if (a >= b)
        return;
    int64_t s = sq_s(z, a), e = sq_e(z, b - 1);
    int64_t lim = mprof__vq_add(g->be, g->px) < g->t1 ? mprof__vq_add(g->be, g->px) : g->t1;
    if (g->open && s < lim) {
        g->cnt += b - a;
        if (e > g->be)
            g->be = e;
        return;
    }
    merge_close(g);
    if (s >= g->t1)
        return;
    g->open = 1;
    g->bs = s;
    g->be = e;
    g->cnt = b - a;
}

/* The coarsest tier of l whose resolution is at most px; NULL when there is none (the zones). */
static const vtier *tier_for(const mprof_vindex *x, const vlevel *l, int64_t px)
{
    const vtier *best = NULL;
    for (uint32_t k = 0; k < l->n_tiers; k++)
        if (x->tiers[l->tier0 + k].res_ns <= px)
            best = &x->tiers[l->tier0 + k];
    return best;
}

int mprof__vidx_answer_zones(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    int64_t px = mprof__vq_px_ns(q);
    uint64_t drawn = 0, merged = 0;
    vread rd;
    mprof__vread_init(&rd, x);
    fprintf(out, "{\"t0\":%" PRId64 ",\"t1\":%" PRId64 ",\"px_ns\":%" PRId64 ",\"levels\":[", q->t0, q->t1, px);
    int first_level = 1;
    for (uint64_t li = 0; li < x->d->n_levels && !rd.err; li++) {
        const vlevel *l = &x->levels[li];
        const varr *za = &x->arrays[l->arr];
        seq base = {&rd, za, 0, za->n, za->n};
        const vtier *tr = q->no_lod ? NULL : tier_for(x, l, px);
        seq tier = {&rd, tr ? &x->arrays[tr->arr] : NULL, 1, tr ? x->arrays[tr->arr].n : 0, za->n};
        const seq *top = tr ? &tier : &base;
        uint64_t i = sq_end_after(top, 0, top->n, q->t0);
        if (i >= top->n || sq_s(top, i) >= q->t1)
            continue;
        uint64_t j = sq_start_from(top, i, top->n, q->t1);
        fprintf(out, "%s{\"track\":%" PRIu32 ",\"depth\":%" PRIu32 ",\"z\":[", first_level ? "" : ",",
                l->track, l->depth);
        first_level = 0;
        /* Merged spans go to a second array, written after the zones from a small buffer. */
        char *mbuf = NULL, *tbuf = NULL;
        size_t mlen = 0, tlen = 0;
        merge g = {out, open_memstream(&mbuf, &mlen), px, q->t1, 1, 1, 0, 0, 0, 0, 0, 0, NULL, NULL, &rd};
        /* An async lane: the threads of its drawn spans, in a third array. */
        if (l->thr != VNONE) {
            g.thr = &x->arrays[l->thr];
            g.th = open_memstream(&tbuf, &tlen);
        }
        if (!g.m || (l->thr != VNONE && !g.th)) {
            if (g.m)
                fclose(g.m);
            if (g.th)
                fclose(g.th);
            free(mbuf);
            free(tbuf);
            mprof__vread_free(&rd);
            tool_seterr(err, errlen, "out of memory");
            return -1;
        }
        if (!tr)
            merge_feed(&g, &base, i, j);
        else {
            /* Runs of the tier that reach outside [t0, t1) hold zones that are not in the range:
             * those are read from the level's zones, up to the range's edges. */
            uint64_t ti = i, tj = j;
            if (sq_count(&tier, i, i + 1) > 1 && sq_s(&tier, i) <= q->t0) {
                uint64_t f0 = sq_first(&tier, i), f1 = sq_first(&tier, i + 1);
                uint64_t a = sq_end_after(&base, f0, f1, q->t0);
                uint64_t b = i + 1 == j && sq_e(&tier, i) >= q->t1 ? sq_start_from(&base, a, f1, q->t1) : f1;
                merge_piece(&g, &base, a, b);
                ti = i + 1;
            }
            uint64_t tail = tj;
            if (tj > ti && sq_count(&tier, tj - 1, tj) > 1 && sq_e(&tier, tj - 1) >= q->t1)
                tail = tj - 1;
            merge_feed(&g, &tier, ti, tail);
            if (tail < tj) {
                uint64_t f0 = sq_first(&tier, tail), f1 = sq_first(&tier, tail + 1);
                merge_piece(&g, &base, f0, sq_start_from(&base, f0, f1, q->t1));
            }
        }
        merge_close(&g);
        fclose(g.m);
        drawn += g.drawn;
        merged += g.merged;
        fprintf(out, "],\"m\":[%s]", mbuf ? mbuf : "");
        if (g.th) {
            fclose(g.th);
            fprintf(out, ",\"th\":[%s]", tbuf ? tbuf : "");
        }
        fputc('}', out);
        free(mbuf);
        free(tbuf);
    }
    fprintf(out, "],\"drawn\":%" PRIu64 ",\"merged\":%" PRIu64 "}", drawn, merged);
    int rc = rd.err ? -1 : 0;
    if (rc)
        tool_seterr(err, errlen, "%s", rd.why);
    mprof__vread_free(&rd);
    return rc;
}
