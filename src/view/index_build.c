/*
 * index_build.c - the one streaming pass that builds the served viewer's index (view/index.h).
 *
 * The timeline walker (analysis/timeline.h) reads the capture once and calls the hooks here for
 * every zone, lock span and memory sample; the reader's events feed messages, frame images and
 * plots. A zone goes to the block being filled of its level (track and depth), which goes to the
 * index file when full (index_block.h), and into the figures of its source location
 * (analysis/site_stats.h: the same figures `mprof report` prints). Memory holds the levels,
 * locations and series being filled, not the zones. The system section (index_sys.h) sees every
 * event and lock span too. At the end each large level is read back once for its tiers of
 * detail (index_detail.c), and index_write.c writes the directory, the metadata and the header.
 *
 * The file is built under a temporary name beside its final one, locked while it is written, and
 * renamed into place (index_cache.c removes what a killed build left).
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index_build.h"
#include "view/processes.h"
#include "view/index_cache.h"

#include "analysis/range.h"
#include "util/grow.h"
#include "util/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static blevel *level_of(builder *b, uint32_t track, uint32_t depth)
{
    if (track >= b->n_tracks) {
        uint32_t nt = track + 1;
        size_t **p = realloc(b->by_track, nt * sizeof *p);
        if (p)
            b->by_track = p;
        uint32_t *q = realloc(b->track_depths, nt * sizeof *q);
        if (q)
            b->track_depths = q;
        if (!p || !q)
            return NULL;
        for (uint32_t i = b->n_tracks; i < nt; i++) {
            b->by_track[i] = NULL;
            b->track_depths[i] = 0;
        }
        b->n_tracks = nt;
    }
    size_t **idx = b->by_track;
    if (depth >= b->track_depths[track]) {
        uint32_t nd = depth + 1 > b->track_depths[track] * 2 ? depth + 1 : b->track_depths[track] * 2;
        size_t *p = realloc(idx[track], nd * sizeof *p);
        if (!p)
            return NULL;
        for (uint32_t i = b->track_depths[track]; i < nd; i++)
            p[i] = 0;
        idx[track] = p;
        b->track_depths[track] = nd;
    }
    if (!idx[track][depth]) {
        if (MPROF_GROW(b->levels, b->cap_levels, b->n_levels + 1, 16) != 0)
            return NULL;
        blevel *l = &b->levels[b->n_levels];
        memset(l, 0, sizeof *l);
        l->stages = calloc(LOD_TIERS, sizeof *l->stages);
        if (!l->stages)
            return NULL;
        mprof__vidx_tier_reset(l->stages);
        l->track = track;
        l->depth = depth;
        const mprof_tl_track *t = mprof__walker_track(b->w, track);
        /* Track ids past the walker's are async tracks (index_async.c). */
        l->kind = t ? (uint32_t)t->kind : VTRACK_ASYNC;
        l->collect = l->kind == MPROF_TRACK_GPU; /* GPU zones end in any order */
        l->last_s = INT64_MIN;
        mprof__vab_init(&l->zones, VC_ZONES, sizeof(vzone));
        idx[track][depth] = ++b->n_levels;
    }
    return &b->levels[idx[track][depth] - 1];
}

static bloc *loc_of(builder *b, uint32_t slot)
{
    if (slot >= b->n_locs) {
        uint32_t nn = slot + 1 > b->n_locs * 2 ? slot + 1 : b->n_locs * 2;
        bloc *p = realloc(b->locs, nn * sizeof *p);
        if (!p)
            return NULL;
        memset(p + b->n_locs, 0, (nn - b->n_locs) * sizeof *p);
        b->locs = p;
        b->n_locs = nn;
    }
    return &b->locs[slot];
}

/* Notes that slot has zones in level li (levels of a location are few: the last one repeats). */
static int loc_level(bloc *lc, uint32_t li)
{
    for (uint32_t k = lc->n_lv; k-- > 0;)
        if (lc->lv[k] == li)
            return 0;
    if (MPROF_GROW(lc->lv, lc->cap_lv, lc->n_lv + 1, 4) != 0)
        return -1;
    lc->lv[lc->n_lv++] = li;
    return 0;
}

/* A zone into its level's array (and its tier counts), or into its level's memory. */
static int level_put(builder *b, blevel *l, const vzone *z)
{
    if (!l->collect && z->s < l->last_s) {
        /* Out of order: the level moves to memory, its blocks so far read back. */
        if (mprof__vab_resolve(&l->zones, &b->out) != 0)
            return -1;
        vzone *all = malloc((size_t)(l->zones.n + 1) * sizeof *all);
        if (!all)
            return -1;
        vread r;
        mprof_vindex fake;
        memset(&fake, 0, sizeof fake);
        fake.fd = b->out.fd;
        fake.blocks = l->zones.blk;
        varr a = {VC_ZONES, sizeof(vzone), l->zones.n - l->zones.pend, 0, l->zones.n_blk};
        mprof__vread_init(&r, &fake);
        uint64_t k = 0;
        for (uint64_t bi = 0; bi < a.n_blocks && !r.err; bi++) {
            const vzone *d = mprof__vread_block(&r, &a, bi);
            if (d)
                memcpy(all + k, d, l->zones.blk[bi].n * sizeof *d);
            k += l->zones.blk[bi].n;
        }
        int bad = r.err || mprof__vab_pending(&l->zones, all + k, (uint32_t)(l->zones.n - k + 1)) != 0;
        mprof__vread_free(&r);
        if (bad) {
            free(all);
            return -1;
        }
        l->mem = all;
        l->n_mem = l->cap_mem = l->zones.n;
        mprof__vab_free(&l->zones);
        mprof__vab_init(&l->zones, VC_ZONES, sizeof(vzone));
        mprof__vidx_spill_drop(b, l);
        mprof__vidx_tier_reset(l->stages);
        l->collect = 1;
    }
    if (l->collect) {
        if (MPROF_GROW(l->mem, l->cap_mem, l->n_mem + 1, 64) != 0)
            return -1;
        l->mem[l->n_mem++] = *z;
        return 0;
    }
    l->last_s = z->s;
    titem it = {z->s, z->e, l->zones.n, 1, z->self, z->loc};
    if (mprof__vab_zone(&l->zones, &b->out, z) != 0)
        return -1;
    if (mprof__vidx_tier_feed(l->stages, l->spill ? &b->spill : &b->out, &it) != 0) {
        if (!l->spill)
            return -1;
        mprof__vidx_spill_fail(b); /* the counts hold: the levels are read back at their ends */
    }
    if (l->spill ? l->zones.n % VIDX_SPILL_CHECK == 0 : l->zones.n == LOD_MIN_ZONES)
        return mprof__vidx_spill_step(b, l);
    return 0;
}

blevel *mprof__vidx_add_zone(builder *b, uint32_t track, uint32_t depth, uint32_t slot, int64_t s, int64_t e,
                             int64_t self, uint32_t flags, int counts, int outermost)
{
    if (b->oom)
        return NULL;
    if (e < s)
        e = s;
    if (self < 0)
        self = 0;
    if (self > e - s)
        self = e - s;
    if (slot >= MAX_LOC_SLOTS)
        slot = 2; /* an id past any real capture's: counted with reader location 0 */
    blevel *l = level_of(b, track, depth);
    bloc *lc = loc_of(b, slot);
    if (!l || !lc) {
        b->oom = 1;
        return NULL;
    }
    if (!b->n_zones++ || s < b->min_s)
        b->min_s = s;
    if (e > b->max_e || b->n_zones == 1)
        b->max_e = e;
    if (!lc->used) {
        lc->used = 1;
        lc->kind = l->kind == MPROF_TRACK_FIBER ? MPROF_TRACK_THREAD : l->kind;
    }
    if (l->kind == MPROF_TRACK_THREAD && b->several)
        mprof__vproc_note(&lc->process, mprof__vproc_of_track(b->r, b->w, track));
    if (counts && mprof__site_add(&lc->st, &b->span, s, e - s, self, outermost) != 0)
        b->oom = 1;
    vzone z = {s, e, self, 0, slot, flags};
    if (loc_level(lc, (uint32_t)(l - b->levels)) != 0 || level_put(b, l, &z) != 0)
        b->oom = 1;
    return b->oom ? NULL : l;
}

static void h_zone(void *user, const mprof_tl_zone *z)
{
    builder *b = user;
    int64_t self = z->end_ns - z->start_ns - z->child_ns;
    const mprof_tl_track *t = mprof__walker_track(b->w, z->track);
    int kind = t ? t->kind : MPROF_TRACK_THREAD;
    uint32_t flags = (z->unfinished ? VZ_UNFINISHED : 0) |
                     (z->nested && z->depth > z->nest_depth ? (z->depth - z->nest_depth) << VZ_NEST_SHIFT : 0);
    /* CPU zones by the one rule of site_stats.h; a GPU location's figures are its GPU zones. */
    int counts = kind == MPROF_TRACK_GPU ? !z->unfinished : mprof__site_counts(kind, z->unfinished);
    mprof__vidx_add_zone(b, z->track, z->depth, z->loc + 2, z->start_ns, z->end_ns, self, flags, counts,
                         mprof__site_outermost(z->nested, 0, 0));
}

static void h_lock(void *user, const mprof_tl_lockspan *s)
{
    builder *b = user;
    const mprof_tl_lock *l = mprof__walker_lock(b->w, s->lock);
    if (l)
        mprof__vidx_add_zone(b, l->track, s->row, s->waiting ? 0 : 1, s->start_ns, s->end_ns,
                             s->end_ns - s->start_ns, 0, 1, 1);
    if (mprof__vsys_lock(b->sys, b->w, s) != 0)
        b->oom = 1;
}

static void h_async(void *user, const mprof_async_span *s)
{
    builder *b = user;
    if (mprof__vidx_async_span(b, s) != 0)
        b->oom = 1;
}

static bplot *plot_of(builder *b, int pool, uint32_t id)
{
    for (size_t i = 0; i < b->n_plots; i++)
        if (b->plots[i].pool == pool && b->plots[i].id == id)
            return &b->plots[i];
    if (b->n_plots >= 4096 || MPROF_GROW(b->plots, b->cap_plots, b->n_plots + 1, 8) != 0)
        return NULL; /* a capture naming that many series is not one to draw */
    bplot *p = &b->plots[b->n_plots++];
    memset(p, 0, sizeof *p);
    p->pool = pool;
    p->id = id;
    p->format = pool ? 2 : 0;
    p->last = INT64_MIN;
    mprof__vab_init(&p->points, VC_RAW, sizeof(vpoint));
    return p;
}

static void plot_point(builder *b, bplot *p, int64_t ts, double v)
{
    if (!p) {
        b->oom = 1;
        return;
    }
    if (ts < p->last)
        ts = p->last; /* series stay sorted: a late point is drawn at the last time */
    p->last = ts;
    vpoint pt = {ts, v};
    if (mprof__vab_push(&p->points, &b->out, &pt, ts) != 0 || mprof__vidx_pyr_point(p, &b->out, v) != 0)
        b->oom = 1;
}

static void h_memory(void *user, uint32_t pool, int64_t ts, int64_t bytes)
{
    builder *b = user;
    plot_point(b, plot_of(b, 1, pool), ts, (double)bytes);
}

/* Appends len bytes to a byte array. */
static int put_bytes(vab *a, vout *o, const char *p, uint32_t len)
{
    return len ? mprof__vab_bytes(a, o, p, len) : 0;
}

static void on_event(builder *b, const mprof_event *ev)
{
    switch (ev->type) {
    case MPROF_EV_MESSAGE: {
        vmsg m = {ev->ts_ns, b->text.n, ev->str ? ev->str_len : 0, (uint32_t)ev->u[0], ev->thread, 0};
        if (m.ts < b->msgs_last)
            m.ts = b->msgs_last;
        b->msgs_last = m.ts;
        if (mprof__vab_push(&b->msgs, &b->out, &m, m.ts) != 0 || put_bytes(&b->text, &b->out, ev->str, m.text_len) != 0)
            b->oom = 1;
        break;
    }
    case MPROF_EV_FRAME_IMAGE: {
        vimage im = {ev->ts_ns, b->image_bytes.n, ev->str ? ev->str_len : 0, (uint32_t)ev->u[0], (uint32_t)ev->u[1],
                     (uint32_t)ev->u[2]};
        if (im.ts < b->images_last)
            im.ts = b->images_last;
        b->images_last = im.ts;
        if (mprof__vab_push(&b->images, &b->out, &im, im.ts) != 0 ||
            put_bytes(&b->image_bytes, &b->out, ev->str, im.len) != 0)
            b->oom = 1;
        break;
    }
    case MPROF_EV_PLOT_F64:
    case MPROF_EV_PLOT_I64:
        plot_point(b, plot_of(b, 0, (uint32_t)ev->u[0]), ev->ts_ns,
                   ev->type == MPROF_EV_PLOT_F64 ? mprof_event_f64(ev, 1) : (double)(int64_t)ev->u[1]);
        break;
    case MPROF_EV_PLOT_CONFIG: {
        bplot *p = plot_of(b, 0, (uint32_t)ev->u[0]);
        if (!p) {
            b->oom = 1;
            break;
        }
        p->format = (int)ev->u[1];
        p->style = (int)ev->u[2];
        p->color = (uint32_t)ev->u[3];
        break;
    }
    case MPROF_EV_FRAME_MARK:
        if (mprof__is_main_mark(ev, &b->mark_thread)) {
            if (!b->n_marks || ev->ts_ns < b->mark_lo)
                b->mark_lo = ev->ts_ns;
            if (!b->n_marks || ev->ts_ns > b->mark_hi)
                b->mark_hi = ev->ts_ns;
            b->n_marks++;
        }
        break;
    default:
        break;
    }
}

static int cmp_vzone(const void *a, const void *b)
{
    const vzone *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s ? 1 : x->e > y->e ? -1 : x->e < y->e;
}

/* Keeps the tiers of a level of n zones whose stages counted their runs: those with at most half
 * the runs of the last one kept (the zones at first). Returns a mask of the stages kept. */
static unsigned tiers_kept(const tstage *g, uint64_t n)
{
    unsigned mask = 0;
    uint64_t prev = n;
    if (n < LOD_MIN_ZONES)
        return 0;
    for (int k = 0; k < LOD_TIERS; k++)
        if (g[k].count && g[k].count <= prev / 2) {
            mask |= 1u << k;
            prev = g[k].count;
        }
    return mask;
}

/* Feeds a level's zones again, from memory or read back from the index, to its stages. */
static int level_read_back(builder *b, blevel *l)
{
    int rc = 0;
    if (l->collect) {
        for (uint64_t i = 0; i < l->n_mem && rc == 0; i++) {
            titem it = {l->mem[i].s, l->mem[i].e, i, 1, l->mem[i].self, l->mem[i].loc};
            rc = mprof__vidx_tier_feed(l->stages, &b->out, &it);
        }
    } else {
        vread r;
        mprof_vindex fake;
        memset(&fake, 0, sizeof fake);
        fake.fd = b->out.fd;
        fake.blocks = l->zones.blk;
        varr a = {VC_ZONES, sizeof(vzone), l->zones.n, 0, l->zones.n_blk};
        mprof__vread_init(&r, &fake);
        for (uint64_t bi = 0; bi < a.n_blocks && rc == 0; bi++) {
            const vzone *d = mprof__vread_block(&r, &a, bi);
            if (!d) {
                rc = -1;
                break;
            }
            for (uint32_t j = 0; j < l->zones.blk[bi].n && rc == 0; j++) {
                titem it = {d[j].s, d[j].e, d[j].first, 1, d[j].self, d[j].loc};
                rc = mprof__vidx_tier_feed(l->stages, &b->out, &it);
            }
        }
        mprof__vread_free(&r);
    }
    return rc;
}

/* The end of a level: its last block, and its tiers, copied from the spill file (index_detail.c)
 * or written from its zones read back once (or from memory for a level kept there, which is
 * sorted and written whole first). */
static int level_finish(builder *b, blevel *l)
{
    if (l->collect) {
        qsort(l->mem, (size_t)l->n_mem, sizeof *l->mem, cmp_vzone);
        for (uint64_t i = 0; i < l->n_mem; i++) {
            titem it = {l->mem[i].s, l->mem[i].e, i, 1, l->mem[i].self, l->mem[i].loc};
            if (mprof__vab_zone(&l->zones, &b->out, &l->mem[i]) != 0 || mprof__vidx_tier_feed(l->stages, &b->out, &it) != 0)
                return -1;
        }
    }
    if (mprof__vab_finish(&l->zones, &b->out) != 0)
        return -1;
    if (mprof__vidx_tier_close(l->stages, l->spill ? &b->spill : &b->out) != 0) {
        if (!l->spill)
            return -1;
        mprof__vidx_spill_fail(b);
    }
    if (l->has_thr && mprof__vab_finish(&l->thr, &b->out) != 0)
        return -1;
    unsigned mask = tiers_kept(l->stages, l->zones.n);
    l->tier0 = (uint32_t)b->n_tiers;
    vab outs[LOD_TIERS];
    /* The kept tiers, written during the pass (index_detail.c), or else from the level read
     * back. */
    int spilled = mask ? mprof__vidx_spill_keep(b, l, mask, outs) : 0;
    mprof__vidx_spill_drop(b, l);
    if (!mask || spilled < 0)
        return spilled;
    int rc = 0;
    if (!spilled) {
        for (int k = 0; k < LOD_TIERS; k++) {
            mprof__vab_init(&outs[k], VC_RUNS, sizeof(vzone));
            l->stages[k].out = mask & (1u << k) ? &outs[k] : NULL;
        }
        mprof__vidx_tier_reset(l->stages);
        rc = level_read_back(b, l);
        if (rc == 0)
            rc = mprof__vidx_tier_close(l->stages, &b->out);
    }
    for (int k = 0; k < LOD_TIERS; k++) {
        l->stages[k].out = NULL;
        if (!(mask & (1u << k)))
            continue;
        if (rc == 0 && mprof__vab_finish(&outs[k], &b->out) != 0)
            rc = -1;
        if (rc == 0 && MPROF_GROW(b->tiers, b->cap_tiers, b->n_tiers + 1, 16) != 0)
            rc = -1;
        if (rc == 0) {
            vab *p = realloc(b->tier_arrs, (b->n_tiers + 1) * sizeof *p);
            if (!p)
                rc = -1;
            else
                b->tier_arrs = p;
        }
        if (rc != 0) {
            mprof__vab_free(&outs[k]);
            continue;
        }
        b->tiers[b->n_tiers] = (vtier){0, 0, INT64_C(1) << (10 + 2 * k)};
        b->tier_arrs[b->n_tiers++] = outs[k];
        l->n_tiers++;
    }
    return rc;
}

static void builder_free(builder *b)
{
    for (size_t i = 0; i < b->n_levels; i++) {
        mprof__vidx_spill_drop(b, &b->levels[i]);
        mprof__vab_free(&b->levels[i].zones);
        if (b->levels[i].has_thr)
            mprof__vab_free(&b->levels[i].thr);
        free(b->levels[i].stages);
        free(b->levels[i].mem);
    }
    for (uint32_t i = 0; i < b->n_locs; i++) {
        mprof__site_free(&b->locs[i].st);
        free(b->locs[i].lv);
    }
    for (size_t i = 0; i < b->n_plots; i++) {
        mprof__vab_free(&b->plots[i].points);
        for (uint32_t k = 0; k < b->plots[i].n_pyr; k++)
            mprof__vab_free(&b->plots[i].pyr[k]);
    }
    for (size_t i = 0; i < b->n_tiers; i++)
        mprof__vab_free(&b->tier_arrs[i]);
    free(b->tier_arrs);
    free(b->tiers);
    mprof__vab_free(&b->msgs);
    mprof__vab_free(&b->text);
    mprof__vab_free(&b->images);
    mprof__vab_free(&b->image_bytes);
    for (uint32_t i = 0; i < b->n_tracks; i++)
        free(b->by_track[i]);
    free(b->by_track);
    free(b->track_depths);
    free(b->levels);
    free(b->locs);
    free(b->plots);
    mprof__vsys_free(b->sys);
    mprof__vidx_async_free(b->async);
    mprof__vout_free(&b->out);
    mprof__vout_free(&b->spill);
    if (b->spill_file)
        fclose(b->spill_file);
}

/* The part of each location's total inside the main frames' span (site_stats.h), once the span
 * is known: the total less the time of its outermost calls before the first mark and after the
 * last, read from the levels' first and last blocks. The figures were added without a span, so
 * the pass needs no read of the capture ahead of it. */
static int frame_share(builder *b)
{
    if (b->span.first_ns < 0)
        return 0;
    int64_t f = b->span.first_ns, l = b->span.last_ns;
    for (uint32_t i = 0; i < b->n_locs; i++)
        b->locs[i].st.in_frames_ns = b->locs[i].st.total_ns;
    mprof_vindex fake;
    memset(&fake, 0, sizeof fake);
    fake.fd = b->out.fd;
    int rc = 0;
    for (size_t li = 0; li < b->n_levels && rc == 0; li++) {
        blevel *lv = &b->levels[li];
        fake.blocks = lv->zones.blk;
        varr a = {VC_ZONES, sizeof(vzone), lv->zones.n, 0, lv->zones.n_blk};
        vread r;
        mprof__vread_init(&r, &fake);
        for (uint64_t bi = 0; bi < a.n_blocks && !r.err; bi++) {
            const vblk *bk = &lv->zones.blk[bi];
            if (bk->k_first >= f && bk->e_max <= l)
                continue; /* wholly inside the span */
            const vzone *z = mprof__vread_block(&r, &a, bi);
            for (uint32_t j = 0; z && j < bk->n; j++) {
                if ((z[j].flags & VZ_UNFINISHED) || (z[j].flags >> VZ_NEST_SHIFT) || z[j].loc >= b->n_locs)
                    continue; /* not counted, or not outermost: not in total */
                int64_t out = 0;
                if (z[j].s < f)
                    out += (z[j].e < f ? z[j].e : f) - z[j].s;
                if (z[j].e > l)
                    out += z[j].e - (z[j].s > l ? z[j].s : l);
                if (out > z[j].e - z[j].s)
                    out = z[j].e - z[j].s;
                b->locs[z[j].loc].st.in_frames_ns -= out;
            }
        }
        rc = r.err ? -1 : 0;
        mprof__vread_free(&r);
    }
    return rc;
}

/* The walker's hook for every event other than a zone's. */
static int h_other(void *user, const mprof_event *ev)
{
    builder *b = user;
    on_event(b, ev);
    if (mprof__vsys_event(b->sys, b->r, ev) != 0)
        b->oom = 1;
    return b->oom ? -1 : 0;
}

/* The pass and the file under tmp (fd, locked); 0, or -1 with err set. */
static int build_into(const char *capture_path, int fd, char *err, size_t errlen)
{
    builder b;
    memset(&b, 0, sizeof b);
    b.out.fd = fd;
    mprof__vab_init(&b.msgs, VC_RAW, sizeof(vmsg));
    mprof__vab_init(&b.text, VC_RAW, 1);
    mprof__vab_init(&b.images, VC_RAW, sizeof(vimage));
    mprof__vab_init(&b.image_bytes, VC_RAW, 1);
    b.msgs_last = b.images_last = INT64_MIN;
    b.span = MPROF_NO_FRAME_SPAN;
    mprof_reader *r = mprof_reader_open(capture_path, err, errlen);
    if (!r)
        return -1;
    /* Room for the header, written last. */
    vhead zero;
    memset(&zero, 0, sizeof zero);
    vref dummy;
    if (mprof__vout_plain(&b.out, &zero, sizeof zero, &dummy) != 0) {
        tool_seterr(err, errlen, "cannot write the index: %s", strerror(errno));
        mprof_reader_close(r);
        return -1;
    }
    /* The reader's decoder threads wait for this pass; zstd on a thread of its own shortens it. */
    b.spill_threads = mprof_read_jobs() > 1;
    if (b.spill_threads)
        (void)mprof__vout_start(&b.out); /* else the pass compresses its blocks itself */
    mprof_tl_hooks hooks = {.user = &b, .zone = h_zone, .lock_span = h_lock, .memory = h_memory,
                            .async_span = h_async, .other = h_other};
    b.r = r;
    b.w = mprof__walker_new(r, &hooks, 1);
    b.sys = mprof__vsys_new(&b.out);
    if (!b.w || !b.sys) {
        tool_seterr(err, errlen, "out of memory");
        mprof__walker_free(b.w);
        builder_free(&b);
        mprof_reader_close(r);
        return -1;
    }
    mprof_batch bt;
    int rc;
    while ((rc = mprof_reader_next_batch(r, &bt)) == 1) {
        /* Every event but the zones reaches h_other in file order; the zones' times reach the
         * system model as the batch's latest time. A batch's definitions (processes among them)
         * are applied when it is handed out: the process count holds for its zones. */
        b.several = mprof__vproc_several(r);
        if (mprof__walker_batch(b.w, &bt) != 0 || b.oom || b.out.failed) {
            rc = -2;
            break;
        }
        mprof__vsys_saw(b.sys, bt.max_ts_ns);
    }
    int ret = -1;
    if (rc == -1)
        tool_seterr(err, errlen, "%s", mprof_reader_error(r));
    else if (rc == -2)
        tool_seterr(err, errlen, "%s: %s while indexing", capture_path,
                    b.out.failed ? "cannot write the index (disk full?)" : "out of memory");
    else {
        b.several = mprof__vproc_several(r);
        mprof__walker_finish(b.w);
        /* Async spans into their lanes' levels (the span that holds every zone holds them). */
        int ok = !b.oom && mprof__vidx_async_finish(&b) == 0 && !b.oom;
        for (size_t i = 0; i < b.n_levels && ok; i++)
            ok = level_finish(&b, &b.levels[i]) == 0;
        if (b.n_marks >= 2 && b.mark_hi > b.mark_lo)
            b.span = (mprof_frame_span){b.mark_lo, b.mark_hi};
        ok = ok && frame_share(&b) == 0;
        for (size_t i = 0; i < b.n_plots && ok; i++)
            ok = mprof__vab_finish(&b.plots[i].points, &b.out) == 0 && mprof__vidx_pyr_finish(&b.plots[i], &b.out) == 0;
        ok = ok && mprof__vab_finish(&b.msgs, &b.out) == 0 && mprof__vab_finish(&b.text, &b.out) == 0 &&
             mprof__vab_finish(&b.images, &b.out) == 0 && mprof__vab_finish(&b.image_bytes, &b.out) == 0;
        if (!ok)
            tool_seterr(err, errlen, "%s: %s while indexing", capture_path,
                        b.out.failed ? "cannot write the index (disk full?)" : "out of memory");
        else
            ret = mprof__vidx_write(&b, r, capture_path, err, errlen);
    }
    mprof__walker_free(b.w);
    b.w = NULL;
    builder_free(&b);
    mprof_reader_close(r);
    return ret;
}

int mprof__vindex_build(const char *capture_path, const char *index_path, char *err, size_t errlen)
{
    char *tmp = NULL;
    int fd = mprof__vcache_temp(index_path, &tmp, err, errlen);
    if (fd < 0)
        return -1;
    /* No fsync: a file cut by a crash fails its checksums and is rebuilt. */
    int ret = build_into(capture_path, fd, err, errlen);
    if (ret == 0 && rename(tmp, index_path) != 0) {
        tool_seterr(err, errlen, "cannot rename the index to '%s': %s", index_path, strerror(errno));
        ret = -1;
    }
    if (ret != 0)
        unlink(tmp);
    close(fd); /* releases the build's lock */
    free(tmp);
    return ret;
}
