/*
 * perfetto_gpu.c - GPU zones in the Perfetto export: slices on their queue's track, each joined
 * to the moment the CPU recorded it by a flow.
 *
 * The walker completes a GPU zone when its timestamps come back from the GPU, which is out of
 * order (a child before its parent, one queue's frames late). Perfetto needs each track's
 * slices properly nested in time order, so each queue keeps its completed zones until no
 * earlier one can still arrive: every zone starts on the GPU after the CPU recorded it, so a
 * zone can be written once it starts before the earliest submit still waiting for its
 * timestamps (and a margin behind the stream, whose threads arrive a little out of step). They
 * are then written in start order on lanes: lane 0 is the queue's track, and a zone that
 * overlaps another without nesting in it (two command buffers in flight) goes to the first lane
 * where it nests, or a new one, a child track of the queue's. Nothing is clipped or dropped. A
 * zone that still arrives after later ones were written (a submit given up after a second, a
 * calibration step) goes on a lane it cannot overlap, and is counted.
 *
 * The flow starts at an instant on the submitting thread's track at the submit time (inside the
 * CPU zone that recorded the GPU zone, its parent slice) and ends at the GPU slice.
 */
#include "export/perfetto_internal.h"
#include "util/grow.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* How far behind the stream's latest timestamp a queue's zones wait for earlier ones: the
 * collector drains each thread every 2 ms, so a thread's events reach the file this late at
 * most, unless the machine stalls. */
#define STREAM_SLACK_NS 250000000
/* A submit whose timestamps have not come back after this long is given up as a watermark. */
#define SUBMIT_GIVE_UP_NS 1000000000
/* Zones kept per queue before the oldest are written whatever may still come. */
#define MAX_BUFFERED 65536

typedef struct gzone {
    int64_t s, e;
    uint32_t loc;
    uint64_t flow; /* 0: none */
} gzone;

typedef struct glane {
    int64_t *open; /* ends of the slices open on the lane, outermost first */
    uint32_t depth, cap;
    int64_t max_end; /* the latest end written on the lane */
} glane;

typedef struct gend {
    int64_t e;
    uint32_t lane, depth;
} gend;

typedef struct gctx {
    uint32_t id;
    uint32_t seq;
    gzone *buf;
    uint32_t n, cap;
    int64_t *pend; /* submit times whose zone has not completed, sorted */
    uint32_t n_pend, pend_cap;
    glane *lanes;
    uint32_t n_lanes, lanes_cap;
    gend *ends; /* a min-heap of the ENDs to write */
    uint32_t n_ends, ends_cap;
    int64_t written; /* start of the last zone written in order */
    int any_written;
} gctx;

struct pf_gpu {
    gctx *c;
    uint32_t n, cap;
    int64_t now; /* the latest timestamp of the stream */
};

pf_gpu *pf_gpu_new(void)
{
    return calloc(1, sizeof(pf_gpu));
}

void pf_gpu_free(pf_gpu *g)
{
    if (!g)
        return;
    for (uint32_t i = 0; i < g->n; i++) {
        gctx *c = &g->c[i];
        for (uint32_t l = 0; l < c->n_lanes; l++)
            free(c->lanes[l].open);
        free(c->lanes);
        free(c->buf);
        free(c->pend);
        free(c->ends);
    }
    free(g->c);
    free(g);
}

uint64_t pf_gpu_flow_id(uint32_t ctx, uint32_t thread, int64_t cpu_ns, uint32_t loc)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    uint64_t parts[4] = {ctx, thread, (uint64_t)cpu_ns, loc};
    for (int i = 0; i < 4; i++) {
        h ^= parts[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return h ? h : 1;
}

static uint64_t lane_uuid(uint32_t ctx, uint32_t lane)
{
    return pf_uuid(PF_UUID_GPU, (uint64_t)ctx << 16 | (lane & 0xffff));
}

static gctx *ctx_of(pf *x, uint32_t id)
{
    pf_gpu *g = x->gpu;
    for (uint32_t i = 0; i < g->n; i++)
        if (g->c[i].id == id)
            return &g->c[i];
    if (g->n >= 4096 || MPROF_GROW(g->c, g->cap, (uint64_t)g->n + 1, 4) != 0) {
        x->oom = 1;
        return NULL;
    }
    uint32_t si = pf_seq_new(x, 1, lane_uuid(id, 0));
    if (si == PF_NONE)
        return NULL;
    gctx *c = &g->c[g->n++];
    memset(c, 0, sizeof *c);
    c->id = id;
    c->seq = si;
    return c;
}

/* ---- submits waiting for their zone --------------------------------------------------------- */

static uint32_t pend_lower(const gctx *c, int64_t ts)
{
    uint32_t lo = 0, hi = c->n_pend;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->pend[mid] < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void pend_add(pf *x, gctx *c, int64_t ts)
{
    if (c->n_pend >= (1u << 20))
        return; /* a watermark this far behind is given up anyway */
    if (MPROF_GROW(c->pend, c->pend_cap, (uint64_t)c->n_pend + 1, 64) != 0) {
        x->oom = 1;
        return;
    }
    uint32_t at = pend_lower(c, ts);
    memmove(&c->pend[at + 1], &c->pend[at], (size_t)(c->n_pend - at) * sizeof *c->pend);
    c->pend[at] = ts;
    c->n_pend++;
}

static void pend_remove(gctx *c, int64_t ts)
{
    uint32_t at = pend_lower(c, ts);
    if (at < c->n_pend && c->pend[at] == ts) {
        memmove(&c->pend[at], &c->pend[at + 1], (size_t)(c->n_pend - at - 1) * sizeof *c->pend);
        c->n_pend--;
    }
}

/* ---- lanes and the ENDs heap ----------------------------------------------------------------- */

static int end_less(const gend *a, const gend *b)
{
    /* At one instant the inner slice ends first. */
    return a->e < b->e || (a->e == b->e && a->depth > b->depth);
}

static void ends_push(pf *x, gctx *c, gend v)
{
    if (MPROF_GROW(c->ends, c->ends_cap, (uint64_t)c->n_ends + 1, 64) != 0) {
        x->oom = 1;
        return;
    }
    uint32_t i = c->n_ends++;
    while (i && end_less(&v, &c->ends[(i - 1) / 2])) {
        c->ends[i] = c->ends[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    c->ends[i] = v;
}

static gend ends_pop(gctx *c)
{
    gend top = c->ends[0], last = c->ends[--c->n_ends];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, m = i;
        const gend *best = &last;
        if (l < c->n_ends && end_less(&c->ends[l], best)) {
            m = l;
            best = &c->ends[l];
        }
        if (l + 1 < c->n_ends && end_less(&c->ends[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        c->ends[i] = c->ends[m];
        i = m;
    }
    if (c->n_ends)
        c->ends[i] = last;
    return top;
}

static void write_end(pf *x, gctx *c, uint32_t lane, int64_t e)
{
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, c->seq, e);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_SLICE_END);
    if (lane)
        mprof__pb_varint(b, PF_TE_TRACK_UUID, lane_uuid(c->id, lane));
    mprof__pb_close(b);
    pf_packet_end(x);
}

/* Writes the ENDs due at or before ts (all with ts = INT64_MAX). */
static void flush_ends(pf *x, gctx *c, int64_t ts)
{
    while (c->n_ends && c->ends[0].e <= ts) {
        gend v = ends_pop(c);
        glane *l = &c->lanes[v.lane];
        if (l->depth)
            l->depth--;
        if (v.e > l->max_end)
            l->max_end = v.e;
        write_end(x, c, v.lane, v.e);
    }
}

static void describe_lane(pf *x, gctx *c, uint32_t lane)
{
    char name[300], base[256];
    uint32_t track = PF_NONE, process = 0;
    for (uint32_t i = 0; i < mprof__walker_track_count(x->w); i++) {
        const mprof_tl_track *t = mprof__walker_track(x->w, i);
        if (t->kind == MPROF_TRACK_GPU && t->ref == c->id) {
            track = i;
            process = t->process; /* the process whose thread made the context */
        }
    }
    if (track != PF_NONE)
        mprof__walker_track_name(x->w, track, base, sizeof base);
    else
        snprintf(base, sizeof base, "GPU context %" PRIu32, c->id);
    if (lane == 0)
        pf_describe(x, lane_uuid(c->id, 0), pf_process_uuid(x, process), base, 0,
                    (int32_t)(0x8000 + (c->id & 0xfff)));
    else {
        snprintf(name, sizeof name, "%s (overlap %" PRIu32 ")", base, lane);
        pf_describe(x, lane_uuid(c->id, lane), lane_uuid(c->id, 0), name, 0, (int32_t)lane);
    }
}

static uint32_t new_lane(pf *x, gctx *c)
{
    if (c->n_lanes >= 0xffff ||
        MPROF_GROW(c->lanes, c->lanes_cap, (uint64_t)c->n_lanes + 1, 4) != 0) {
        x->oom = 1;
        return PF_NONE;
    }
    glane *l = &c->lanes[c->n_lanes];
    memset(l, 0, sizeof *l);
    l->max_end = INT64_MIN;
    describe_lane(x, c, c->n_lanes);
    return c->n_lanes++;
}

static void write_begin(pf *x, gctx *c, uint32_t lane, const gzone *z)
{
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, c->seq, z->s);
    pf_intern(x, c->seq, 1u << PF_FIX_CAT_GPU, z->loc);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_SLICE_BEGIN);
    if (lane)
        mprof__pb_varint(b, PF_TE_TRACK_UUID, lane_uuid(c->id, lane));
    mprof__pb_varint(b, PF_TE_CATEGORY_IIDS, PF_FIX_IID(PF_FIX_CAT_GPU));
    mprof__pb_varint(b, PF_TE_NAME_IID, PF_LOC_IID(z->loc));
    mprof__pb_varint(b, PF_TE_SOURCE_LOCATION_IID, PF_LOC_IID(z->loc));
    if (z->flow) {
        mprof__pb_fixed64(b, PF_TE_TERMINATING_FLOW_IDS, z->flow);
        x->st->gpu_flows++;
    }
    mprof__pb_close(b);
    pf_packet_end(x);
    x->st->gpu_zones++;
}

/* A zone written in start order: on the first lane where it nests. */
static void place(pf *x, gctx *c, const gzone *z)
{
    flush_ends(x, c, z->s);
    uint32_t lane = PF_NONE;
    for (uint32_t i = 0; i < c->n_lanes && lane == PF_NONE; i++) {
        glane *l = &c->lanes[i];
        if (l->depth ? l->open[l->depth - 1] >= z->e : l->max_end <= z->s)
            lane = i;
    }
    if (lane == PF_NONE && (lane = new_lane(x, c)) == PF_NONE)
        return;
    glane *l = &c->lanes[lane];
    if (MPROF_GROW(l->open, l->cap, (uint64_t)l->depth + 1, 8) != 0) {
        x->oom = 1;
        return;
    }
    l->open[l->depth++] = z->e;
    write_begin(x, c, lane, z);
    ends_push(x, c, (gend){z->e, lane, l->depth});
    c->written = z->s;
    c->any_written = 1;
}

/* A zone that starts before one already written: on a lane where nothing is open and nothing
 * ended after its start, with its BEGIN and END written at once. */
static void place_late(pf *x, gctx *c, const gzone *z)
{
    uint32_t lane = PF_NONE;
    for (uint32_t i = 0; i < c->n_lanes && lane == PF_NONE; i++)
        if (!c->lanes[i].depth && c->lanes[i].max_end <= z->s)
            lane = i;
    if (lane == PF_NONE && (lane = new_lane(x, c)) == PF_NONE)
        return;
    write_begin(x, c, lane, z);
    write_end(x, c, lane, z->e);
    if (z->e > c->lanes[lane].max_end)
        c->lanes[lane].max_end = z->e;
    x->st->gpu_late++;
}

static int zone_cmp(const void *pa, const void *pb)
{
    const gzone *a = pa, *b = pb;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    if (a->e != b->e)
        return a->e > b->e ? -1 : 1; /* the outer one first */
    return 0;
}

/* Writes the buffered zones that start at or before mark, in start order. */
static void emit(pf *x, gctx *c, int64_t mark)
{
    if (!c->n)
        return;
    qsort(c->buf, c->n, sizeof *c->buf, zone_cmp);
    uint32_t k = 0;
    while (k < c->n && (c->buf[k].s <= mark || c->n - k > MAX_BUFFERED)) {
        const gzone *z = &c->buf[k++];
        if (c->any_written && z->s < c->written)
            place_late(x, c, z);
        else
            place(x, c, z);
    }
    memmove(c->buf, c->buf + k, (size_t)(c->n - k) * sizeof *c->buf);
    c->n -= k;
}

/* ---- the interface --------------------------------------------------------------------------- */

void pf_gpu_submit(pf *x, const mprof_event *ev, uint32_t si, uint64_t track_uuid)
{
    uint32_t id = (uint32_t)ev->u[0], loc = (uint32_t)ev->u[2];
    gctx *c = ctx_of(x, id);
    if (!c)
        return;
    pend_add(x, c, ev->ts_ns);
    if (!mprof__range_has(x->range, ev->ts_ns))
        return;
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, si, ev->ts_ns);
    pf_intern(x, si, 1u << PF_FIX_CAT_GPU_SUBMIT, loc);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_INSTANT);
    if (track_uuid != x->seqs[si].default_track)
        mprof__pb_varint(b, PF_TE_TRACK_UUID, track_uuid);
    mprof__pb_varint(b, PF_TE_CATEGORY_IIDS, PF_FIX_IID(PF_FIX_CAT_GPU_SUBMIT));
    mprof__pb_varint(b, PF_TE_NAME_IID, PF_LOC_IID(loc));
    mprof__pb_fixed64(b, PF_TE_FLOW_IDS, pf_gpu_flow_id(id, ev->thread, ev->ts_ns, loc));
    mprof__pb_close(b);
    pf_packet_end(x);
}

void pf_gpu_zone(pf *x, const mprof_tl_zone *z)
{
    const mprof_tl_track *t = mprof__walker_track(x->w, z->track);
    gctx *c = t ? ctx_of(x, t->ref) : NULL;
    if (!c)
        return;
    pend_remove(c, z->submit_ns);
    if (!mprof__range_overlaps(x->range, z->start_ns, z->end_ns))
        return;
    if (MPROF_GROW(c->buf, c->cap, (uint64_t)c->n + 1, 64) != 0) {
        x->oom = 1;
        return;
    }
    gzone *g = &c->buf[c->n++];
    g->s = z->start_ns;
    g->e = z->end_ns < z->start_ns ? z->start_ns : z->end_ns;
    g->loc = z->loc;
    g->flow = mprof__range_has(x->range, z->submit_ns)
                  ? pf_gpu_flow_id(t->ref, z->submit_thread, z->submit_ns, z->loc)
                  : 0;
    if (c->n > MAX_BUFFERED)
        emit(x, c, INT64_MIN);
}

void pf_gpu_advance(pf *x, int64_t ts)
{
    pf_gpu *g = x->gpu;
    if (ts <= g->now)
        return;
    /* Every few milliseconds of the stream is often enough to bound what is held. */
    int64_t step = ts / 4000000 != g->now / 4000000;
    g->now = ts;
    if (!step)
        return;
    for (uint32_t i = 0; i < g->n; i++) {
        gctx *c = &g->c[i];
        uint32_t stale = 0;
        while (stale < c->n_pend && c->pend[stale] < ts - SUBMIT_GIVE_UP_NS)
            stale++;
        if (stale) {
            memmove(c->pend, c->pend + stale, (size_t)(c->n_pend - stale) * sizeof *c->pend);
            c->n_pend -= stale;
        }
        int64_t mark = ts - STREAM_SLACK_NS;
        if (c->n_pend && c->pend[0] < mark)
            mark = c->pend[0];
        emit(x, c, mark);
        flush_ends(x, c, mark);
    }
}

void pf_gpu_finish(pf *x)
{
    pf_gpu *g = x->gpu;
    for (uint32_t i = 0; i < g->n; i++) {
        gctx *c = &g->c[i];
        emit(x, c, INT64_MAX);
        flush_ends(x, c, INT64_MAX);
    }
}
