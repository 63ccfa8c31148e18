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
 * level's zones at first), so tiers cost at most the level's own size and usually far less.
 *
 * Which stages are kept is known only at the level's end, but reading the level back then to
 * write them costs a fifth of the build (its blocks read, decompressed and decoded again). So a
 * level of LOD_MIN_ZONES zones or more writes the runs of every stage as they come to a file of
 * their own (the spill), and a stage stops when its runs outnumber 5/8 of the level's zones so
 * far (the zones of its first run: a kept stage has at most half). At the end the kept stages'
 * blocks are copied into the index, as stored and in the order they were written, which is the
 * order and the bytes a read back would have written. A level whose kept stage had stopped, or
 * one past SPILL_LEVELS levels spilling at once (each holds a block being filled a stage), is
 * read back as before (index_build.c).
 */
#define _POSIX_C_SOURCE 200809L /* fileno */
#include "view/index_build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Levels that spill at once, at most: each holds up to LOD_TIERS blocks being filled. */
#define SPILL_LEVELS 32

static int tier_cascade(tstage *g, vout *o, int k, const titem *it);

static int tier_emit(tstage *g, vout *o, int k, const titem *it)
{
    g[k].count++;
    int rc = 0;
    if (g[k].out) {
        vzone r = {it->s, it->e, it->n == 1 ? it->self : 0, it->first, it->n == 1 ? it->loc : 0, (uint32_t)it->n};
        if (it->n > UINT32_MAX || mprof__vab_zone(g[k].out, o, &r) != 0) {
            o->failed = 1;
            rc = -1;
        }
    }
    /* The stages above count on whatever became of this one's output: a spill that cannot be
     * written is dropped, and its levels read back with the counts intact. */
    return tier_cascade(g, o, k + 1, it) != 0 ? -1 : rc;
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

int mprof__vidx_spill_off;

/* The spill file, at the first level that spills: 0, or -1 (no spill; levels are read back). */
static int spill_open(builder *b)
{
    if (b->spill_file)
        return 0;
    /* mprof__vidx_spill_off 2 (tests): a file that takes no write, as a full disk would. */
    if (b->spill.failed ||
        !(b->spill_file = mprof__vidx_spill_off == 2 ? fopen("/dev/null", "rb") : tmpfile())) {
        b->spill.failed = 1;
        return -1;
    }
    b->spill.fd = fileno(b->spill_file);
    if (b->spill_threads)
        (void)mprof__vout_start(&b->spill); /* else the pass compresses the tiers itself */
    return 0;
}

/* Starts a level's spill at its LOD_MIN_ZONES-th zone: the stages count again from its first
 * zone, read from its pending block, now writing their runs. 0; 1 when the spill could not be
 * written (the counts are whole all the same); -1 out of memory. */
static int spill_start(builder *b, blevel *l)
{
    uint32_t n = (uint32_t)l->zones.n;
    vzone *z = malloc((size_t)n * sizeof *z);
    l->spill = calloc(LOD_TIERS, sizeof *l->spill);
    if (!z || !l->spill || mprof__vab_pending(&l->zones, z, n) != 0) {
        free(z);
        free(l->spill);
        l->spill = NULL;
        return -1;
    }
    b->n_spilling++;
    for (int k = 0; k < LOD_TIERS; k++) {
        mprof__vab_init(&l->spill[k], VC_RUNS, sizeof(vzone));
        l->stages[k].out = &l->spill[k];
    }
    l->spill_live = (1u << LOD_TIERS) - 1;
    mprof__vidx_tier_reset(l->stages);
    int failed = 0;
    for (uint32_t i = 0; i < n; i++) {
        /* Every zone, whatever becomes of the runs: the counts decide the tiers. */
        titem it = {z[i].s, z[i].e, i, 1, z[i].self, z[i].loc};
        failed |= mprof__vidx_tier_feed(l->stages, &b->spill, &it) != 0;
    }
    free(z);
    return failed;
}

int mprof__vidx_spill_step(builder *b, blevel *l)
{
    uint64_t n = l->zones.n;
    if (!l->spill) {
        if (n != LOD_MIN_ZONES || l->zones.n_blk || b->n_spilling >= SPILL_LEVELS ||
            mprof__vidx_spill_off == 1 || spill_open(b) != 0)
            return 0;
        int rc = spill_start(b, l);
        if (rc > 0)
            mprof__vidx_spill_fail(b); /* the level is read back at its end */
        else if (rc < 0) {
            b->oom = 1;
            return -1;
        }
        return 0;
    }
    if (n % VIDX_SPILL_CHECK)
        return 0;
    for (int k = 0; k < LOD_TIERS; k++)
        if ((l->spill_live & (1u << k)) && l->stages[k].count * 8 > n * 5) {
            l->stages[k].out = NULL;
            mprof__vab_free(&l->spill[k]);
            l->spill_live &= ~(1u << k);
        }
    if (!l->spill_live)
        mprof__vidx_spill_drop(b, l);
    return 0;
}

void mprof__vidx_spill_fail(builder *b)
{
    for (size_t i = 0; i < b->n_levels; i++)
        mprof__vidx_spill_drop(b, &b->levels[i]);
    b->spill.failed = 1; /* no level starts one again */
}

int mprof__vidx_spill_keep(builder *b, blevel *l, unsigned mask, vab *outs)
{
    if (!l->spill || (mask & ~l->spill_live))
        return 0;
    vab *sp = l->spill;
    for (int k = 0; k < LOD_TIERS; k++)
        if ((mask & (1u << k)) && mprof__vab_finish(&sp[k], &b->spill) != 0) {
            mprof__vidx_spill_fail(b);
            return 0;
        }
    /* Every stage's blocks are in the spill file in the order they filled; merged by offset. */
    uint64_t next[LOD_TIERS] = {0};
    for (;;) {
        int best = -1;
        for (int k = 0; k < LOD_TIERS; k++)
            if ((mask & (1u << k)) && next[k] < sp[k].n_blk &&
                (best < 0 || sp[k].blk[next[k]].at.off < sp[best].blk[next[best]].at.off))
                best = k;
        if (best < 0)
            break;
        vblk *bk = &sp[best].blk[next[best]++];
        if (mprof__vout_copy(&b->out, b->spill.fd, &bk->at, &bk->at) != 0) {
            if (b->out.failed)
                return -1;
            /* The spill could not be read: the level is read back (the blocks copied so far
             * stay in the file, unreferenced). */
            mprof__vidx_spill_fail(b);
            return 0;
        }
    }
    for (int k = 0; k < LOD_TIERS; k++)
        if (mask & (1u << k)) {
            outs[k] = sp[k]; /* moved: outs[k] owns its blocks and buffers */
            mprof__vab_init(&sp[k], VC_RUNS, sizeof(vzone));
        }
    return 1;
}

void mprof__vidx_spill_drop(builder *b, blevel *l)
{
    if (!l->spill)
        return;
    for (int k = 0; k < LOD_TIERS; k++) {
        l->stages[k].out = NULL;
        mprof__vab_free(&l->spill[k]);
    }
    free(l->spill);
    l->spill = NULL;
    l->spill_live = 0;
    b->n_spilling--;
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
