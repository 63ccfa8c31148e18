/*
 * live_ring.c - what live capture keeps of the stream: shared chunks and the history ring.
 *
 * Every framed EVENTS chunk is shared, by reference count, between the history ring (the last
 * history_seconds of chunks, at most half the memory cap) and the queue of the connected tool,
 * so a chunk costs its memory once however many hold it. History that no tool may read yet is
 * kept unframed in page-backed slabs (see mprof__live_raw_blob_new) and compressed only when a
 * tool asks for it (mprof__live_ring_pick).
 */
#include "live_ring.h"
#include "config.h"
#include "platform/platform.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Raw history lives in slabs of page-backed memory (see mprof__live_raw_blob_new). */
#define RAW_SLAB_BYTES ((size_t)4 << 20)

typedef mprof__live_blob blob;
typedef mprof__live_hnode hnode;

typedef struct mprof__live_slab {
    unsigned char *mem;
    size_t bytes, used;
    uint32_t live; /* blobs in it not yet freed */
    struct mprof__live_slab *next;
} raw_slab;

/* Collector thread only (and startup/shutdown while it does not run). */
static struct {
    hnode *hist_head, *hist_tail;
    size_t hist_bytes, hist_cap_bytes;
    uint64_t hist_start_ticks; /* produced time of the chunk before the oldest one kept */
    double history_s;
    mprof_buf framed;     /* scratch: a raw chunk framed for a tool */
    void *cctx;           /* zstd context for history framed on demand (ZSTD_CCtx) */
    raw_slab *slab_cur;   /* raw blobs are cut from here */
    raw_slab *slab_spare; /* an emptied slab, kept for the next */
} R;

/* ---- blobs --------------------------------------------------------------------------------- */

/* Fills a blob made now: one reference, a copy of data. slab: a raw blob's slab, else NULL. */
static blob *blob_fill(blob *b, const void *data, size_t len, raw_slab *slab)
{
    atomic_init(&b->refs, 1);
    b->mono_ns = mprof__mono_ns();
    b->ticks = mprof__ticks();
    b->raw = slab != NULL;
    b->events = MPROF__LIVE_EVENTS_UNKNOWN;
    b->flags = 0;
    memset(&b->marks, 0, sizeof b->marks);
    b->len = len;
    b->slab = slab;
    memcpy(b->data, data, len);
    return b;
}

mprof__live_blob *mprof__live_blob_new(const void *data, size_t len)
{
    blob *b = malloc(sizeof *b + len);
    return b ? blob_fill(b, data, len, NULL) : NULL;
}

/* Raw history blobs, cut one after another from 4 MiB slabs of page-backed memory
 * (mprof__pages_alloc: populated at once, in huge pages where the kernel allows). Kept unframed,
 * a chunk is 10-30x the bytes of its compressed form, and while the ring fills (its first
 * MPROF_HISTORY_SECONDS) every one of them is fresh memory: faulted in one 4 KiB page at a time
 * that costs ~11-20 us a page on this project's VM, 10-14 ns an event, more than compressing.
 * A slab whose blobs are all freed (the ring drops the oldest first) is kept for the next one,
 * so a full ring reuses its memory. Collector thread only. */
static raw_slab *slab_new(size_t need)
{
    raw_slab *sl = R.slab_spare;
    if (sl && sl->bytes >= need) {
        R.slab_spare = NULL;
    } else {
        sl = malloc(sizeof *sl);
        if (!sl)
            return NULL;
        sl->bytes = need > RAW_SLAB_BYTES ? need : RAW_SLAB_BYTES;
        if (!(sl->mem = mprof__pages_alloc(sl->bytes))) {
            free(sl);
            return NULL;
        }
    }
    sl->used = 0;
    sl->live = 0;
    sl->next = NULL;
    return sl;
}

static void slab_free(raw_slab *sl)
{
    mprof__pages_free(sl->mem, sl->bytes);
    free(sl);
}

/* A slab nothing is cut from any more and nothing lives in: the spare, or gone. */
static void slab_retire(raw_slab *sl)
{
    if (!R.slab_spare || R.slab_spare->bytes < sl->bytes) {
        if (R.slab_spare)
            slab_free(R.slab_spare);
        R.slab_spare = sl;
    } else {
        slab_free(sl);
    }
}

mprof__live_blob *mprof__live_raw_blob_new(const void *data, size_t len)
{
    size_t need = (sizeof(blob) + len + 63) & ~(size_t)63;
    raw_slab *sl = R.slab_cur;
    if (!sl || sl->bytes - sl->used < need) {
        raw_slab *n = slab_new(need);
        if (!n)
            return NULL;
        if (sl && !sl->live)
            slab_retire(sl);
        R.slab_cur = sl = n;
    }
    blob *b = (blob *)(sl->mem + sl->used);
    sl->used += need;
    sl->live++;
    return blob_fill(b, data, len, sl);
}

static void raw_blob_free(blob *b)
{
    raw_slab *sl = b->slab;
    if (--sl->live == 0 && sl != R.slab_cur)
        slab_retire(sl);
}

static void raw_slabs_free(void)
{
    if (R.slab_cur && !R.slab_cur->live)
        slab_free(R.slab_cur);
    if (R.slab_spare)
        slab_free(R.slab_spare);
    R.slab_cur = R.slab_spare = NULL;
}

/* The framed form of a raw history blob, produced when a tool asks for it; NULL when out of
 * memory. Keeps the moment the chunk was produced. */
static blob *blob_frame(const blob *r)
{
    R.framed.len = 0;
    if (!R.cctx)
        R.cctx = ZSTD_createCCtx(); /* NULL: mprof_fmt_chunk makes a context per call */
    if (mprof_fmt_chunk_ex(&R.framed, MPROF_CHUNK_EVENTS, r->flags, r->data, r->len,
                           mprof__config.compression_level, R.cctx) != 0)
        return NULL;
    blob *b = mprof__live_blob_new(R.framed.data, R.framed.len);
    if (b) {
        b->mono_ns = r->mono_ns;
        b->ticks = r->ticks;
        b->events = r->events;
        b->flags = r->flags;
        b->marks = r->marks;
    }
    return b;
}

/* A raw blob never reaches a session queue, so its last reference is dropped on the collector
 * thread, which owns the slabs. */
void mprof__live_blob_unref(blob *b)
{
    if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    if (b->raw)
        raw_blob_free(b);
    else
        free(b);
}

/* ---- the history ring --------------------------------------------------------------------- */

static void hist_drop_head(void)
{
    hnode *h = R.hist_head;
    R.hist_head = h->next;
    if (!R.hist_head)
        R.hist_tail = NULL;
    R.hist_start_ticks = h->b->ticks;
    R.hist_bytes -= h->b->len;
    mprof__live_blob_unref(h->b);
    free(h);
}

void mprof__live_ring_push(blob *b)
{
    hnode *h = malloc(sizeof *h);
    if (!h)
        return;
    mprof__live_blob_ref(b);
    h->b = b;
    h->next = NULL;
    if (R.hist_tail)
        R.hist_tail->next = h;
    else
        R.hist_head = h;
    R.hist_tail = h;
    R.hist_bytes += b->len;
    uint64_t keep_ns = (uint64_t)(R.history_s * 1e9);
    while (R.hist_head && R.hist_head != R.hist_tail &&
           (R.hist_bytes > R.hist_cap_bytes || b->mono_ns - R.hist_head->b->mono_ns > keep_ns))
        hist_drop_head();
}

static void hist_clear(void)
{
    while (R.hist_head)
        hist_drop_head();
}

void mprof__live_ring_reset(void)
{
    hist_clear();
    R.hist_start_ticks = mprof__ticks();
}

void mprof__live_ring_open(double history_s, size_t cap_bytes)
{
    R.history_s = history_s;
    R.hist_cap_bytes = cap_bytes;
}

void mprof__live_ring_close(void)
{
    hist_clear();
    raw_slabs_free();
    mprof_buf_free(&R.framed);
    ZSTD_freeCCtx(R.cctx);
    R.cctx = NULL;
}

void mprof__live_ring_pick(uint64_t span_ns, size_t budget_bytes, mprof__live_pick *out)
{
    memset(out, 0, sizeof *out);
    uint64_t now = mprof__mono_ns();
    for (hnode *h = R.hist_head; h; h = h->next) {
        if (!h->b->raw || now - h->b->mono_ns > span_ns)
            continue;
        blob *f = blob_frame(h->b);
        if (!f) {
            mprof_wire_scan_events(h->b->data, h->b->len, &out->raw_failed, NULL, 0);
            out->n_raw_failed++;
            continue;
        }
        R.hist_bytes = R.hist_bytes - h->b->len + f->len;
        mprof__live_blob_unref(h->b);
        h->b = f;
    }
    size_t total = 0, count = 0;
    for (hnode *h = R.hist_head; h; h = h->next)
        if (now - h->b->mono_ns <= span_ns) {
            total += h->b->len;
            count++;
        }
    for (hnode *h = R.hist_head, *prev = NULL; h && count; prev = h, h = h->next) {
        if (now - h->b->mono_ns > span_ns)
            continue;
        if (total <= budget_bytes) {
            out->first = h;
            out->n = count;
            out->start_ticks = prev ? prev->b->ticks : R.hist_start_ticks;
            break;
        }
        total -= h->b->len;
        count--;
    }
}
