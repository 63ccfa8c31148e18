/*
 * index_detail.c - the coarse views of the served viewer's index, built with it so that an
 * answer reads about as much as it draws: the tiers of detail of each level of zones (runs of
 * zones merged at coarser and coarser resolutions, which /api/zones reads instead of the zones
 * when a pixel is wider than a tier's resolution) and the min/max pyramid of each plot series
 * (which /api/plots reads for whole groups of points).
 *
 * Tiers: a level's zones go through a cascade of LOD_TIERS stages, each merging the items of the
 * stage below at 4 times its resolution (merging runs made at a finer resolution gives the runs of
 * the zones themselves: every zone of a fine run is narrower than the coarse resolution and
 * follows the previous one closely enough). While the pass runs the stages only count their runs;
 * at the end, the stages kept are those with at most half the runs of the last one kept (the
 * level's zones at first), so tiers cost at most the level's own size and usually far less, and
 * the level is read back once to write them (index_build.c).
 */
#include "view/index_build.h"

#include <math.h>
#include <string.h>

static int tier_cascade(tstage *g, vout *o, int k, const titem *it);

static int tier_emit(tstage *g, vout *o, int k, const titem *it)
{
    g[k].count++;
    if (g[k].out) {
        vzone r = {it->s, it->e, it->n == 1 ? it->self : 0, it->first, it->n == 1 ? it->loc : 0, (uint32_t)it->n};
        if (it->n > UINT32_MAX || mprof__vab_zone(g[k].out, o, &r) != 0) {
            o->failed = 1;
            return -1;
        }
    }
    return tier_cascade(g, o, k + 1, it);
}

static int tier_cascade(tstage *g, vout *o, int k, const titem *it)
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
        if (tier_emit(g, o, k, &t->cur) != 0)
            return -1;
    }
    if (narrow) {
        t->cur = *it;
        t->open = 1;
        return 0;
    }
    return tier_emit(g, o, k, it);
}

int mprof__vidx_tier_feed(tstage *g, vout *o, const titem *it)
{
    return tier_cascade(g, o, 0, it);
}

int mprof__vidx_tier_close(tstage *g, vout *o)
{
    for (int k = 0; k < LOD_TIERS; k++)
        if (g[k].open) {
            g[k].open = 0;
            if (tier_emit(g, o, k, &g[k].cur) != 0)
                return -1;
        }
    return 0;
}

void mprof__vidx_tier_reset(tstage *g)
{
    for (int k = 0; k < LOD_TIERS; k++) {
        vab *out = g[k].out;
        memset(&g[k], 0, sizeof g[k]);
        g[k].res = INT64_C(1) << (10 + 2 * k);
        g[k].out = out;
    }
}

/* The plot's min/max pyramid: level k holds one pair per PYR_FANOUT^(k + 1) points, filled as the
 * points come; a level's pair is written when its group is whole and feeds the level above. */
static int pyr_put(bplot *p, vout *o, uint32_t k, vmm m)
{
    if (k >= PYR_LEVELS)
        return 0;
    if (k >= p->n_pyr) {
        mprof__vab_init(&p->pyr[k], VC_RAW, sizeof(vmm));
        p->n_pyr = k + 1;
    }
    if (!p->acc_n[k] || m.mn < p->acc[k].mn)
        p->acc[k].mn = m.mn;
    if (!p->acc_n[k] || m.mx > p->acc[k].mx)
        p->acc[k].mx = m.mx;
    if (++p->acc_n[k] < PYR_FANOUT)
        return 0;
    vmm whole = p->acc[k];
    p->acc_n[k] = 0;
    if (mprof__vab_push(&p->pyr[k], o, &whole, (int64_t)p->pyr[k].n) != 0)
        return -1;
    return pyr_put(p, o, k + 1, whole);
}

int mprof__vidx_pyr_point(bplot *p, vout *o, double v)
{
    return pyr_put(p, o, 0, (vmm){v, v});
}

int mprof__vidx_pyr_finish(bplot *p, vout *o)
{
    for (uint32_t k = 0; k < p->n_pyr; k++) {
        if (p->acc_n[k]) {
            vmm part = p->acc[k];
            p->acc_n[k] = 0;
            if (mprof__vab_push(&p->pyr[k], o, &part, (int64_t)p->pyr[k].n) != 0)
                return -1;
            /* A partial group never spans a whole block of the level above: it is not fed up. */
        }
        if (mprof__vab_finish(&p->pyr[k], o) != 0)
            return -1;
    }
    return 0;
}
