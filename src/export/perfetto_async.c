/*
 * perfetto_async.c - async spans in the Perfetto export: a track per async track, under the
 * process, and child tracks for the spans that overlap.
 *
 * Perfetto needs the slices of one track properly nested, and the spans of an async track
 * overlap freely (many loads in flight), so each track's spans are laid out on lanes: in start
 * order, a span goes to the first lane whose last span has ended, or to a new lane. Lane 0 is
 * the track itself; lane k a child track "name (k)". The walker completes spans in end order,
 * so the spans of each track are kept until the end of the capture and written then, on one
 * sequence with absolute timestamps (trace processor sorts packets by time). Memory grows with
 * the capture's async spans; a span's name is copied once.
 */
#include "export/perfetto_internal.h"
#include "util/grow.h"

#include <stdlib.h>
#include <string.h>

typedef struct aspan {
    int64_t s, e;
    uint64_t id;
    char *name;      /* owned, NUL-terminated */
    uint8_t open_at_end, cut_by_reuse;
} aspan;

typedef struct atrack {
    aspan *v;
    uint32_t n, cap;
    uint32_t process; /* the process of its first span's begin (a merged capture's async track
                         names are each one process's) */
} atrack;

struct pf_async {
    atrack *t;
    uint32_t n_t; /* tracks, by the walker's async track index; zero-filled */
};

pf_async *pf_async_new(void)
{
    return calloc(1, sizeof(pf_async));
}

void pf_async_free(pf_async *a)
{
    if (!a)
        return;
    for (uint32_t i = 0; i < a->n_t; i++) {
        for (uint32_t k = 0; k < a->t[i].n; k++)
            free(a->t[i].v[k].name);
        free(a->t[i].v);
    }
    free(a->t);
    free(a);
}

void pf_async_span(pf *x, const mprof_async_span *s)
{
    pf_async *a = x->async;
    if (!mprof__range_overlaps(x->range, s->start_ns, s->end_ns))
        return;
    if (mprof_grow_zeroed((void **)&a->t, &a->n_t, s->track, sizeof *a->t, 1u << 20) != 0) {
        x->oom = 1;
        return;
    }
    atrack *t = &a->t[s->track];
    if (!t->n) {
        const mprof_thread_def *d = mprof_reader_thread(x->r, s->begin_thread);
        t->process = d ? d->process : 0;
    }
    char *name = malloc(s->name_len + 1);
    if (!name || MPROF_GROW(t->v, t->cap, t->n + 1, 64) != 0) {
        free(name);
        x->oom = 1;
        return;
    }
    memcpy(name, s->name, s->name_len);
    name[s->name_len] = 0;
    t->v[t->n++] = (aspan){s->start_ns, s->end_ns, s->id, name, (uint8_t)s->open_at_end,
                          (uint8_t)s->cut_by_reuse};
}

static uint64_t lane_uuid(uint32_t track, uint32_t lane)
{
    return pf_uuid(PF_UUID_ASYNC, (uint64_t)track << 20 | lane);
}

static int span_cmp(const void *pa, const void *pb)
{
    const aspan *a = pa, *b = pb;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    return a->e > b->e ? -1 : a->e < b->e; /* the longer first: it can hold the shorter */
}

static void annotation_str(mprof_pb *b, const char *key, const char *v)
{
    mprof__pb_open(b, PF_TE_DEBUG_ANNOTATIONS);
    mprof__pb_str(b, PF_DA_NAME, key);
    mprof__pb_str(b, PF_DA_STRING, v);
    mprof__pb_close(b);
}

static void annotation_uint(mprof_pb *b, const char *key, uint64_t v)
{
    mprof__pb_open(b, PF_TE_DEBUG_ANNOTATIONS);
    mprof__pb_str(b, PF_DA_NAME, key);
    mprof__pb_varint(b, PF_DA_UINT, v);
    mprof__pb_close(b);
}

static void write_span(pf *x, uint32_t si, uint64_t uuid, const aspan *s)
{
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, si, s->s);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_SLICE_BEGIN);
    mprof__pb_varint(b, PF_TE_TRACK_UUID, uuid);
    mprof__pb_str(b, PF_TE_NAME, s->name);
    annotation_uint(b, "async_id", s->id);
    if (s->open_at_end)
        annotation_str(b, "ended", "open at the end of the capture");
    else if (s->cut_by_reuse)
        annotation_str(b, "ended", "its id was begun again while open");
    mprof__pb_close(b);
    pf_packet_end(x);
    pf_packet_begin(x, si, s->e);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_SLICE_END);
    mprof__pb_varint(b, PF_TE_TRACK_UUID, uuid);
    mprof__pb_close(b);
    pf_packet_end(x);
    x->st->async_spans++;
}

/* Lays out and writes track i's spans. */
static void write_track(pf *x, uint32_t si, uint32_t i, const char *name)
{
    atrack *t = &x->async->t[i];
    mprof_async_lanes lanes = {0};
    if (t->n > 1) /* qsort takes no NULL array, even of no element */
        qsort(t->v, t->n, sizeof *t->v, span_cmp);
    for (uint32_t k = 0; k < t->n && !x->oom; k++) {
        const aspan *s = &t->v[k];
        uint32_t had = lanes.n;
        uint32_t l = mprof__async_lane(&lanes, s->s, s->e);
        if (l == UINT32_MAX) {
            x->oom = 1;
            break;
        }
        if (lanes.n > had) { /* a new lane: its track first */
            char lane_name[300];
            if (l == 0)
                pf_describe(x, lane_uuid(i, 0), pf_process_uuid(x, t->process), name, 0,
                            (int32_t)(0x4000 + (i & 0xfff)));
            else {
                snprintf(lane_name, sizeof lane_name, "%s (%u)", name, l);
                pf_describe(x, lane_uuid(i, l), lane_uuid(i, 0), lane_name, 0, (int32_t)l);
            }
        }
        write_span(x, si, lane_uuid(i, l), s);
        if (pf_flush(x, 0) != 0)
            x->oom = 1;
    }
    mprof__async_lanes_free(&lanes);
}

void pf_async_finish(pf *x)
{
    const mprof_async *pairer = mprof__walker_async(x->w);
    if (!x->async->n_t || !pairer)
        return;
    uint32_t si = pf_seq_new(x, 0, 0);
    if (si == PF_NONE)
        return;
    for (uint32_t i = 0; i < x->async->n_t && !x->oom; i++)
        if (x->async->t[i].n)
            write_track(x, si, i, mprof__async_track_name(pairer, i));
}
