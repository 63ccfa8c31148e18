/*
 * index_runs.c - groups of records written as sorted runs while they arrive nearly in order
 * (index_runs.h): the reorder windows and levels on the writing side, a range's span figures
 * summed over the runs on the reading side.
 */
#include "view/index_runs.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void mprof__vruns_init(vruns *g, uint32_t kind)
{
    memset(g, 0, sizeof *g);
    g->kind = kind;
    for (int k = 0; k < VRUN_LEVELS; k++) {
        g->lv[k].last = INT64_MIN;
        mprof__vab_init(&g->lv[k].run, VC_RAW, kind == VRUN_SPANS ? sizeof(vrspan) : sizeof(vrsample));
    }
}

void mprof__vruns_free(vruns *g)
{
    for (int k = 0; k < VRUN_LEVELS; k++) {
        free(g->lv[k].heap);
        mprof__vab_free(&g->lv[k].run);
    }
    for (uint32_t i = 0; i < g->n_done; i++)
        mprof__vab_free(&g->done[i]);
    free(g->done);
    memset(g, 0, sizeof *g);
}

/* Writes an item at the end of a level's run: it is at least the run's last key. */
static int emit(vruns *g, vrun_level *l, vout *o, const vrun_item *it)
{
    l->last = it->key;
    if (g->kind == VRUN_SPANS) {
        vrspan r = {it->key, l->pre};
        l->pre += (int64_t)it->val;
        return mprof__vab_push_dur(&l->run, o, &r, r.s, (int64_t)it->val);
    }
    vrsample r = {it->key, (uint32_t)it->val, (uint32_t)(it->val >> 32)};
    return mprof__vab_push(&l->run, o, &r, r.ts);
}

static void sift_down(vrun_item *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t m = i, c = 2 * i + 1;
        if (c < n && h[c].key < h[m].key)
            m = c;
        if (c + 1 < n && h[c + 1].key < h[m].key)
            m = c + 1;
        if (m == i)
            return;
        vrun_item t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Writes the level's window in order and closes its run (spans: with their sentinel); the level
 * starts over empty. */
static int close_level(vruns *g, vrun_level *l, vout *o)
{
    while (l->n) {
        vrun_item it = l->heap[0];
        l->heap[0] = l->heap[--l->n];
        sift_down(l->heap, l->n, 0);
        if (emit(g, l, o, &it) != 0)
            return -1;
    }
    if (!l->run.n)
        return 0;
    if (g->kind == VRUN_SPANS) {
        vrspan end = {INT64_MAX, l->pre};
        if (mprof__vab_push_dur(&l->run, o, &end, end.s, 0) != 0)
            return -1;
    }
    if (mprof__vab_finish(&l->run, o) != 0)
        return -1;
    if (g->n_done == g->cap_done) {
        uint32_t c = g->cap_done ? g->cap_done * 2 : 4;
        vab *p = realloc(g->done, c * sizeof *p);
        if (!p) {
            o->failed = 1;
            return -1;
        }
        g->done = p;
        g->cap_done = c;
    }
    g->done[g->n_done++] = l->run;
    mprof__vab_init(&l->run, VC_RAW, g->kind == VRUN_SPANS ? sizeof(vrspan) : sizeof(vrsample));
    l->last = INT64_MIN;
    l->pre = 0;
    return 0;
}

int mprof__vruns_add(vruns *g, vout *o, const vrun_item *it)
{
    int k = 0;
    while (k < VRUN_LEVELS && it->key < g->lv[k].last)
        k++;
    if (k == VRUN_LEVELS) {
        /* Too late for every run: the last level's run ends and a new one begins with it. */
        k = VRUN_LEVELS - 1;
        if (close_level(g, &g->lv[k], o) != 0)
            return -1;
    }
    vrun_level *l = &g->lv[k];
    if (!l->heap && !(l->heap = malloc(VRUN_WINDOW * sizeof *l->heap))) {
        o->failed = 1;
        return -1;
    }
    g->n++;
    if (l->n == VRUN_WINDOW) {
        /* A full window writes the smallest of its items and this one. */
        if (it->key <= l->heap[0].key)
            return emit(g, l, o, it);
        vrun_item least = l->heap[0];
        l->heap[0] = *it;
        sift_down(l->heap, l->n, 0);
        return emit(g, l, o, &least);
    }
    uint32_t i = l->n++;
    l->heap[i] = *it;
    while (i && l->heap[(i - 1) / 2].key > l->heap[i].key) {
        vrun_item t = l->heap[i];
        l->heap[i] = l->heap[(i - 1) / 2];
        l->heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
    return 0;
}

int mprof__vruns_finish(vruns *g, vout *o)
{
    for (int k = 0; k < VRUN_LEVELS; k++)
        if (close_level(g, &g->lv[k], o) != 0)
            return -1;
    return 0;
}

/* The duration-so-far of span i of run a. */
static int64_t pre_of(vread *r, const varr *a, uint64_t i)
{
    const vrspan *s = mprof__vread_rec(r, a, i);
    return s->pre;
}

void mprof__vruns_span_range(vread *r, uint64_t arr0, uint64_t n_runs, int64_t t0, int64_t t1, uint64_t *out_n,
                             int64_t *out_total, int64_t *out_max)
{
    *out_n = 0;
    *out_total = *out_max = 0;
    for (uint64_t k = 0; k < n_runs; k++) {
        const varr *a = &r->x->arrays[arr0 + k];
        if (a->codec != VC_RAW || a->rec != sizeof(vrspan) || !a->n)
            continue; /* the index's check refused such a run already */
        uint64_t n = a->n - 1; /* the spans, before the sentinel */
        uint64_t lo = mprof__vread_search(r, a, offsetof(vrspan, s), 0, n, t0, 0, 0);
        uint64_t hi = mprof__vread_search(r, a, offsetof(vrspan, s), lo, n, t1, 0, 0);
        if (hi <= lo)
            continue;
        *out_n += hi - lo;
        *out_total += pre_of(r, a, hi) - pre_of(r, a, lo);
        /* The longest: the directory's maximum of each block wholly inside, the others' spans
         * one by one. */
        const vblk *bk = r->x->blocks + a->blk0;
        uint64_t b0 = mprof__varr_block_of(r->x, a, lo), b1 = mprof__varr_block_of(r->x, a, hi - 1);
        int64_t mx = *out_max;
        for (uint64_t bi = b0; bi <= b1 && bi < a->n_blocks; bi++) {
            uint64_t first = bk[bi].first, end = first + bk[bi].n;
            if (first >= lo && end <= hi) {
                if (bk[bi].d_max > mx)
                    mx = bk[bi].d_max;
                continue;
            }
            uint64_t from = first > lo ? first : lo, to = end < hi ? end : hi;
            if (from >= to)
                continue;
            /* The span after the last (maybe in the next block) first: the block read after it
             * stays in the reader's cache for the loop. */
            int64_t tail = pre_of(r, a, to);
            const vrspan *d = mprof__vread_block(r, a, bi);
            for (uint64_t i = from; d && i < to; i++) {
                int64_t next = i + 1 < to ? d[i + 1 - first].pre : tail;
                if (next - d[i - first].pre > mx)
                    mx = next - d[i - first].pre;
            }
        }
        *out_max = mx;
    }
}
