/*
 * index_async.c - async spans in the served viewer's index: each async track becomes a track of
 * kind VTRACK_ASYNC whose levels are its lanes, stored like any level of zones (index_file.h), so
 * /api/zones draws and merges them, /api/stats, /api/hist and /api/instances count them, and
 * find zone finds them, with no answer of their own.
 *
 * The spans come from the walker's async_span hook, the one pairer every tool uses
 * (analysis/async.h), so the index holds the spans that `mprof report` counts in its async[].
 * A span name of a track is a source location slot of its own after the capture's (its figures
 * are site_stats.h's, each span adding its duration: the report's rule), and /api/stats merges
 * the slots of a track into the track's row. A lane needs the spans that began before it, and
 * the pairer hands a span out when it ends, so the build keeps a track's spans (40 bytes each)
 * until the walker is done, sorts them by start and gives each the lowest lane free at its start
 * (the Perfetto export's rule, export/perfetto_async.c); then they go to the levels' blocks, and
 * the memory is freed. Answering reads them from the file like zones. Beside each lane's zones a
 * raw array holds each span's begin and end threads (vthr), for the page's tooltip.
 */
#include "view/index_build.h"

#include "util/grow.h"

#include <stdlib.h>
#include <string.h>

typedef struct bspan {
    int64_t s, e;
    uint32_t name, begin, end; /* end: UINT32_MAX when open at the end of the capture */
    uint32_t lane;
    uint8_t open, cut;
} bspan;

typedef struct btrack {
    bspan *v;
    uint64_t n, cap;
    char **names; /* distinct span names, owned */
    uint32_t n_names, cap_names;
    uint32_t slot0; /* the slot of names[0] */
    uint32_t lanes;
} btrack;

struct vasync_b {
    btrack *t; /* by the pairer's track index, zero-filled */
    uint32_t n_t;
    uint32_t track0; /* the index track id of async track 0: after the walker's tracks */
    uint32_t slot_end; /* the slots of span names are [first slot0, slot_end) */
};

void mprof__vidx_async_free(vasync_b *a)
{
    if (!a)
        return;
    for (uint32_t i = 0; i < a->n_t; i++) {
        for (uint32_t k = 0; k < a->t[i].n_names; k++)
            free(a->t[i].names[k]);
        free(a->t[i].names);
        free(a->t[i].v);
    }
    free(a->t);
    free(a);
}

static uint32_t name_of(btrack *t, const char *s, size_t len)
{
    for (uint32_t k = t->n_names; k-- > 0;)
        if (strlen(t->names[k]) == len && memcmp(t->names[k], s, len) == 0)
            return k;
    char *c = malloc(len + 1);
    if (!c || MPROF_GROW(t->names, t->cap_names, t->n_names + 1, 8) != 0) {
        free(c);
        return UINT32_MAX;
    }
    memcpy(c, s, len);
    c[len] = 0;
    t->names[t->n_names] = c;
    return t->n_names++;
}

int mprof__vidx_async_span(builder *b, const mprof_async_span *s)
{
    if (!b->async && !(b->async = calloc(1, sizeof *b->async)))
        return -1;
    vasync_b *a = b->async;
    if (mprof_grow_zeroed((void **)&a->t, &a->n_t, s->track, sizeof *a->t, 1u << 20) != 0)
        return -1;
    btrack *t = &a->t[s->track];
    uint32_t nm = name_of(t, s->name ? s->name : "", s->name ? s->name_len : 0);
    if (nm == UINT32_MAX || MPROF_GROW(t->v, t->cap, t->n + 1, 64) != 0)
        return -1;
    t->v[t->n++] = (bspan){s->start_ns, s->end_ns < s->start_ns ? s->start_ns : s->end_ns, nm, s->begin_thread,
                           s->open_at_end ? UINT32_MAX : s->end_thread, 0, (uint8_t)s->open_at_end,
                           (uint8_t)s->cut_by_reuse};
    return 0;
}

static int span_cmp(const void *pa, const void *pb)
{
    const bspan *x = pa, *y = pb;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return x->e > y->e ? -1 : x->e < y->e; /* the longer first, as the Perfetto export */
}

int mprof__vidx_async_finish(builder *b)
{
    const mprof_async *pairer = mprof__walker_async(b->w);
    uint32_t n = pairer ? mprof__async_track_count(pairer) : 0;
    if (!n)
        return 0;
    if (!b->async && !(b->async = calloc(1, sizeof *b->async)))
        return -1;
    vasync_b *a = b->async;
    /* Every track the pairer met is shown, spans or not (its counts say what did not pair). */
    if (mprof_grow_zeroed((void **)&a->t, &a->n_t, n - 1, sizeof *a->t, 1u << 20) != 0)
        return -1;
    a->track0 = mprof__walker_track_count(b->w);
    /* Span names take the slots after the capture's source locations (and any slot in use). */
    uint32_t slot = mprof_reader_srcloc_count(b->r) + 2;
    for (uint32_t s = slot; s < b->n_locs; s++)
        if (b->locs[s].used)
            slot = s + 1;
    for (uint32_t i = 0; i < a->n_t; i++) {
        btrack *t = &a->t[i];
        t->slot0 = slot;
        slot += t->n_names;
        if (slot >= MAX_LOC_SLOTS)
            return -1; /* a million span names: not a capture to index */
        if (t->n > 1) /* qsort takes no NULL array, even of no element */
            qsort(t->v, (size_t)t->n, sizeof *t->v, span_cmp);
        mprof_async_lanes lanes = {0};
        int rc = 0;
        for (uint64_t k = 0; k < t->n && rc == 0; k++) {
            bspan *sp = &t->v[k];
            uint32_t l = mprof__async_lane(&lanes, sp->s, sp->e);
            if (l == UINT32_MAX) {
                rc = -1;
                break;
            }
            t->lanes = lanes.n;
            sp->lane = l;
            blevel *lv = mprof__vidx_add_zone(b, a->track0 + i, l, t->slot0 + sp->name, sp->s, sp->e, sp->e - sp->s,
                                              sp->open ? VZ_UNFINISHED : 0, !sp->open, 1);
            if (!lv) {
                rc = -1;
                break;
            }
            if (!lv->has_thr) {
                mprof__vab_init(&lv->thr, VC_RAW, sizeof(vthr));
                lv->has_thr = 1;
            }
            vthr th = {sp->begin, sp->end, sp->cut, 0};
            rc = mprof__vab_push(&lv->thr, &b->out, &th, sp->s);
        }
        mprof__async_lanes_free(&lanes);
        /* The spans are in the levels now. */
        free(t->v);
        t->v = NULL;
        if (rc != 0)
            return -1;
    }
    a->slot_end = slot;
    return 0;
}

const char *mprof__vidx_async_slot(const builder *b, uint32_t slot, const char **out_track)
{
    const vasync_b *a = b->async;
    const mprof_async *pairer = mprof__walker_async(b->w);
    if (!a || !pairer || slot >= a->slot_end)
        return NULL;
    for (uint32_t i = 0; i < a->n_t; i++) {
        const btrack *t = &a->t[i];
        if (slot >= t->slot0 && slot < t->slot0 + t->n_names) {
            *out_track = mprof__async_track_name(pairer, i);
            return t->names[slot - t->slot0];
        }
    }
    return NULL;
}

uint32_t mprof__vidx_async_slots_end(const builder *b)
{
    return b->async ? b->async->slot_end : 0;
}

void mprof__vidx_async_tracks(const builder *b, mprof_json *j)
{
    const vasync_b *a = b->async;
    const mprof_async *pairer = mprof__walker_async(b->w);
    if (!a || !pairer)
        return;
    for (uint32_t i = 0; i < a->n_t && i < mprof__async_track_count(pairer); i++) {
        const btrack *t = &a->t[i];
        const mprof_async_counts *c = mprof__async_counts(pairer, i);
        uint64_t n = 0;
        for (size_t l = 0; l < b->n_levels; l++)
            if (b->levels[l].track == a->track0 + i)
                n += b->levels[l].zones.n;
        mprof_json_obj_begin(j, NULL);
        mprof_json_u64(j, "id", a->track0 + i);
        mprof_json_str(j, "kind", "async");
        mprof_json_u64(j, "ref", i);
        mprof_json_str(j, "name", mprof__async_track_name(pairer, i));
        mprof_json_u64(j, "depths", t->lanes);
        mprof_json_u64(j, "zones", n);
        mprof_json_u64(j, "open_at_end", c->open_at_end);
        mprof_json_u64(j, "unmatched_ends", c->unmatched_ends);
        mprof_json_u64(j, "reused_ids", c->reused_ids);
        mprof_json_obj_end(j);
    }
}

void mprof__vidx_async_threads(const builder *b, mprof_json *j)
{
    if (!b->async)
        return;
    mprof_json_arr_begin(j, "async_threads");
    for (uint32_t i = 0; i < mprof_reader_thread_count(b->r); i++) {
        const mprof_thread_def *d = mprof_reader_thread(b->r, i);
        char buf[48];
        snprintf(buf, sizeof buf, "thread %u", (unsigned)i);
        mprof_json_str(j, NULL, d && d->name ? d->name : buf);
    }
    mprof_json_arr_end(j);
}
