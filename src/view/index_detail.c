/*
 * index_detail.c - the coarse views of the served viewer's index, written once with it so that
 * an answer reads about as much as it draws: the tiers of detail of each level of zones (runs of
 * zones merged at coarser and coarser resolutions, which /api/zones reads instead of the zones
 * when a pixel is wider than a tier's resolution) and the min/max pyramid of each plot series
 * (which /api/plots reads for whole blocks of points).
 */
#define _POSIX_C_SOURCE 200809L /* pread */
#include "view/index_build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The plot's min/max pyramid: level k holds one pair per PYR_FANOUT^k points. */
int mprof__vidx_write_pyramid(FILE *f, vplot *vp, uint64_t *pos)
{
    vp->pyr_off = *pos;
    vp->pyr_levels = 0;
    if (vp->n <= PYR_FANOUT)
        return 0;
    if (fflush(f) != 0)
        return -1;
    int fd = fileno(f);
    uint64_t n_prev = vp->n, prev_off = vp->off;
    int from_points = 1;
    while (n_prev > PYR_FANOUT) {
        uint64_t n = (n_prev + PYR_FANOUT - 1) / PYR_FANOUT;
        for (uint64_t i = 0; i < n; i++) {
            vmm m = {INFINITY, -INFINITY};
            uint64_t a = i * PYR_FANOUT, e = a + PYR_FANOUT < n_prev ? a + PYR_FANOUT : n_prev;
            for (uint64_t k = a; k < e; k++) {
                double lo, hi;
                if (from_points) {
                    vpoint p;
                    if (pread(fd, &p, sizeof p, (off_t)(prev_off + k * sizeof p)) != (ssize_t)sizeof p)
                        return -1;
                    lo = hi = p.v;
                } else {
                    vmm q;
                    if (pread(fd, &q, sizeof q, (off_t)(prev_off + k * sizeof q)) != (ssize_t)sizeof q)
                        return -1;
                    lo = q.mn;
                    hi = q.mx;
                }
                if (lo < m.mn)
                    m.mn = lo;
                if (hi > m.mx)
                    m.mx = hi;
            }
            if (mprof__file_put(f, &m, sizeof m, pos) != 0)
                return -1;
        }
        if (fflush(f) != 0)
            return -1;
        prev_off = *pos - n * sizeof(vmm);
        n_prev = n;
        from_points = 0;
        vp->pyr_levels++;
    }
    return 0;
}

/* Tiers of detail of one level (see vrun): its zones are read back from the index file and fed
 * through a cascade of LOD_TIERS stages, each merging the items of the stage below at 4 times its
 * resolution (merging runs made at a finer resolution gives the runs of the zones themselves: every
 * zone of a fine run is narrower than the coarse resolution and follows the previous one closely
 * enough). A first pass counts each stage's runs; the second writes the stages kept: those with at
 * most half the runs of the last one kept (the level's zones at first), so tiers cost at most the
 * level's own size and usually far less. */
typedef struct titem { int64_t s, e; uint64_t first, n; int64_t self; uint32_t loc; } titem;
typedef struct tstage {
    int64_t res;
    int open;
    titem cur;
    uint64_t count;
    stream *st; /* the pass that writes it; NULL: counted only */
} tstage;

static int tier_cascade(spool *sp, tstage *g, int k, const titem *it);

static int tier_emit(spool *sp, tstage *g, int k, const titem *it)
{
    g[k].count++;
    if (g[k].st) {
        vrun r = {it->s, it->e, it->first, it->n == 1 ? it->self : 0, it->n == 1 ? it->loc : 0, 0};
        if (mprof__stream_put(sp, g[k].st, &r, sizeof r) != 0)
            return -1;
        g[k].st->n++;
    }
    return tier_cascade(sp, g, k + 1, it);
}

static int tier_cascade(spool *sp, tstage *g, int k, const titem *it)
{
    if (k == LOD_TIERS)
        return 0;
    tstage *t = &g[k];
    int narrow = it->n > 1 || it->e - it->s < t->res;
    if (t->open && narrow && it->s < t->cur.e + t->res) {
        t->cur.n += it->n;
        if (it->e > t->cur.e)
            t->cur.e = it->e;
        return 0;
    }
    if (t->open) {
        t->open = 0;
        if (tier_emit(sp, g, k, &t->cur) != 0)
            return -1;
    }
    if (narrow) {
        t->cur = *it;
        t->open = 1;
        return 0;
    }
    return tier_emit(sp, g, k, it);
}

int mprof__vidx_level_tiers(spool *sp, FILE *f, uint64_t off, uint64_t n, uint64_t *pos, vtier *out, uint32_t *out_n)
{
    enum { BUF = 4096 };
    *out_n = 0;
    if (n < LOD_MIN_ZONES)
        return 0;
    vzone *buf = malloc(BUF * sizeof *buf);
    stream st[LOD_TIERS];
    tstage g[LOD_TIERS];
    memset(st, 0, sizeof st);
    int rc = -1;
    if (!buf || fflush(f) != 0)
        goto done;
    for (int pass = 0; pass < 2; pass++) {
        memset(g, 0, sizeof g);
        for (int k = 0; k < LOD_TIERS; k++) {
            g[k].res = INT64_C(1) << (10 + 2 * k);
            g[k].st = pass && st[k].rec ? &st[k] : NULL;
        }
        for (uint64_t i = 0; i < n; i += BUF) {
            size_t m = n - i < BUF ? (size_t)(n - i) : BUF;
            if (pread(fileno(f), buf, m * sizeof *buf, (off_t)(off + i * sizeof *buf)) != (ssize_t)(m * sizeof *buf))
                goto done;
            for (size_t j = 0; j < m; j++) {
                titem it = {buf[j].s, buf[j].e, i + j, 1, buf[j].self, buf[j].loc};
                if (tier_cascade(sp, g, 0, &it) != 0)
                    goto done;
            }
        }
        for (int k = 0; k < LOD_TIERS; k++)
            if (g[k].open) {
                g[k].open = 0;
                if (tier_emit(sp, g, k, &g[k].cur) != 0)
                    goto done;
            }
        if (!pass) {
            uint64_t prev = n;
            int any = 0;
            for (int k = 0; k < LOD_TIERS; k++)
                if (g[k].count && g[k].count <= prev / 2) {
                    st[k].rec = sizeof(vrun);
                    st[k].last = INT64_MIN;
                    prev = g[k].count;
                    any = 1;
                }
            if (!any) {
                rc = 0;
                goto done;
            }
        }
    }
    for (int k = 0; k < LOD_TIERS; k++) {
        if (!st[k].rec)
            continue;
        if (mprof__stream_copy(sp, &st[k], f, pos) != 0)
            goto done;
        out[(*out_n)++] = (vtier){st[k].out_off, st[k].n, g[k].res};
    }
    rc = 0;
done:
    for (int k = 0; k < LOD_TIERS; k++)
        mprof__stream_free(&st[k]);
    free(buf);
    return rc;
}

