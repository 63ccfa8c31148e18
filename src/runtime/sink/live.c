/*
 * live.c - live capture in the instrumented process: listener, history ring, definitions copy
 * and the capture session (protocol in format/wire.h, guide in docs/CAPTURE.md).
 *
 * The idea: live capture is one of the collector's sinks (sink.h), beside the capture file.
 * Every framed EVENTS chunk is handed here (live_chunk), where it is shared, by reference count, between
 * the history ring (the last history_seconds of chunks, at most half the memory cap) and the
 * queue of the connected tool. A chunk is decodable on its own except for definitions, which are
 * written once per process; so every definition record is also copied into a growing buffer,
 * and a tool that connects late first receives one EVENTS chunk holding all of them (plus the
 * thread names, plot configs and other "sticky" events), then the history it asked for, then
 * the live stream, which starts on a chunk boundary because the collector closes its chunk
 * before attaching the session.
 *
 * Threads: the collector thread produces (never blocking: when the queue is over the tool's
 * limit the chunk is dropped, counted, announced with a LOST record and the definitions are
 * re-sent before the next delivered chunk); one listener thread accepts and does handshakes;
 * one sender thread per session writes the queue to a non-blocking socket with MSG_NOSIGNAL,
 * so a vanished or stalled tool costs the game nothing but the dropped chunks.
 */
#include "live.h"
#include "config.h"
#include "format/wire.h"
#include "platform/platform.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define HANDSHAKE_MS 2000
#define SHUTDOWN_FLUSH_MS 2000
#define DEFAULT_QUEUE_MIB 64
/* The listener (issue 14): handshakes are served side by side, at most MAX_HANDSHAKES at once,
 * each within HANDSHAKE_MS; connections are accepted at most ACCEPTS_PER_S a second (bursts of
 * ACCEPT_BURST), so a flood of connections costs the game a bounded, small share of a core.
 * Replies are small and go to a fresh socket's buffer, so REPLY_MS is plenty. */
#define MAX_HANDSHAKES 8
#define ACCEPTS_PER_S 50
#define ACCEPT_BURST 16
#define REPLY_MS 250
/* A session whose tool has not taken a byte for SESSION_STALL_MS is dropped; one stalled for
 * PREEMPT_STALL_MS gives its place to a new tool that asks. */
#define SESSION_STALL_MS 10000
#define PREEMPT_STALL_MS 1000

/* Raw history lives in slabs of page-backed memory (see raw_blob_new). */
#define RAW_SLAB_BYTES ((size_t)4 << 20)

typedef struct raw_slab {
    unsigned char *mem;
    size_t bytes, used;
    uint32_t live; /* blobs in it not yet freed */
    struct raw_slab *next;
} raw_slab;

/* A framed chunk shared by the history ring and session queues. */
typedef struct blob {
    _Atomic int refs;
    uint64_t mono_ns; /* when it was produced */
    uint64_t ticks;   /* the same moment in timer ticks */
    int raw;          /* data is an unframed EVENTS payload (history nobody has asked for) */
    size_t len;
    raw_slab *slab;   /* a raw blob's slab (collector thread only) */
    unsigned char data[];
} blob;

typedef struct qitem {
    blob *b;
    struct qitem *next;
} qitem;

typedef struct hnode {
    blob *b;
    struct hnode *next;
} hnode;

typedef struct session {
    int fd;
    pthread_t thread;
    mprof_wire_hello hello;
    size_t limit_bytes;
    /* Under L.m. */
    qitem *head, *tail;
    size_t queued_bytes;
    int attached, closing;
    _Atomic int shutdown;
    uint64_t id;
    uint64_t dropped_chunks, dropped_events;
    uint64_t lost_at_attach; /* mprof__stats.events_lost when the stream began */
    int need_defs;            /* re-send definitions before the next delivered chunk */
    uint64_t unannounced_lost; /* dropped events not yet written as a LOST record */
    /* Sender thread writes, listener reads: when the tool last refused bytes without taking
     * any since (0 while it keeps up), and a request to drop the session. */
    _Atomic uint64_t stalled_since_ns;
    _Atomic int evict;
} session;

static struct {
    pthread_mutex_t m;
    int enabled;  /* listening */
    int has_file; /* a file sink exists (the process records regardless of sessions) */
    mprof__live_hooks hooks;
    int listen_fd;
    int wake[2];
    pthread_t listener;
    session *pending, *active, *reap; /* under m */
    uint64_t next_session_id;         /* under m */
    /* Collector thread only. */
    hnode *hist_head, *hist_tail;
    size_t hist_bytes, hist_cap_bytes;
    uint64_t hist_start_ticks; /* produced time of the chunk before the oldest one kept */
    double history_s;
    mprof_buf defs;   /* process-context definition records, compact form */
    mprof_buf sticky; /* [u32 thread][u64 ticks][u8 has_ts][u32 len][len bytes: tag + fields] */
    mprof_buf build, framed;
    void *cctx; /* zstd context for history framed on demand (ZSTD_CCtx) */
    raw_slab *slab_cur;   /* raw blobs are cut from here */
    raw_slab *slab_spare; /* an emptied slab, kept for the next */
    uint8_t *ts_done;
    uint32_t ts_done_cap;
} L = {.m = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1,
       .wake = {-1, -1}};

/* ---- blobs and the history ring ----------------------------------------------------------- */

/* Fills a blob made now: one reference, a copy of data. slab: a raw blob's slab, else NULL. */
static blob *blob_fill(blob *b, const void *data, size_t len, raw_slab *slab)
{
    atomic_init(&b->refs, 1);
    b->mono_ns = mprof__mono_ns();
    b->ticks = mprof__ticks();
    b->raw = slab != NULL;
    b->len = len;
    b->slab = slab;
    memcpy(b->data, data, len);
    return b;
}

static blob *blob_new(const void *data, size_t len)
{
    blob *b = malloc(sizeof *b + len);
    return b ? blob_fill(b, data, len, NULL) : NULL;
}

/* Raw history blobs, cut one after another from 4 MiB slabs of page-backed memory
 * (mprof__pages_alloc: populated at once, in huge pages where the kernel allows). Kept unframed,
 * a chunk is 10-30x the bytes of its compressed form, and while the ring fills (its first
 * MPROF_HISTORY_SECONDS) every one of them is fresh memory: faulted in one 4 KiB page at a time
 * that cost ~11-20 us a page on this project's VM, 10-14 ns an event, more than compressing.
 * A slab whose blobs are all freed (the ring drops the oldest first) is kept for the next one,
 * so a full ring reuses its memory. Collector thread only. */
static raw_slab *slab_new(size_t need)
{
    raw_slab *sl = L.slab_spare;
    if (sl && sl->bytes >= need) {
        L.slab_spare = NULL;
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
    if (!L.slab_spare || L.slab_spare->bytes < sl->bytes) {
        if (L.slab_spare)
            slab_free(L.slab_spare);
        L.slab_spare = sl;
    } else {
        slab_free(sl);
    }
}

static blob *raw_blob_new(const void *data, size_t len)
{
    size_t need = (sizeof(blob) + len + 63) & ~(size_t)63;
    raw_slab *sl = L.slab_cur;
    if (!sl || sl->bytes - sl->used < need) {
        raw_slab *n = slab_new(need);
        if (!n)
            return NULL;
        if (sl && !sl->live)
            slab_retire(sl);
        L.slab_cur = sl = n;
    }
    blob *b = (blob *)(sl->mem + sl->used);
    sl->used += need;
    sl->live++;
    return blob_fill(b, data, len, sl);
}

static void raw_blob_free(blob *b)
{
    raw_slab *sl = b->slab;
    if (--sl->live == 0 && sl != L.slab_cur)
        slab_retire(sl);
}

static void raw_slabs_free(void)
{
    if (L.slab_cur && !L.slab_cur->live)
        slab_free(L.slab_cur);
    if (L.slab_spare)
        slab_free(L.slab_spare);
    L.slab_cur = L.slab_spare = NULL;
}

/* The framed form of a raw history blob, produced when a tool asks for it; NULL when out of
 * memory. Keeps the moment the chunk was produced. */
static blob *blob_frame(const blob *r)
{
    L.framed.len = 0;
    if (!L.cctx)
        L.cctx = ZSTD_createCCtx(); /* NULL: mprof_fmt_chunk makes a context per call */
    if (mprof_fmt_chunk(&L.framed, MPROF_CHUNK_EVENTS, r->data, r->len,
                        mprof__config.compression_level, L.cctx) != 0)
        return NULL;
    blob *b = blob_new(L.framed.data, L.framed.len);
    if (b) {
        b->mono_ns = r->mono_ns;
        b->ticks = r->ticks;
    }
    return b;
}

/* A raw blob never reaches a session queue, so its last reference is dropped on the collector
 * thread, which owns the slabs. */
static void blob_unref(blob *b)
{
    if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    if (b->raw)
        raw_blob_free(b);
    else
        free(b);
}

static void hist_drop_head(void)
{
    hnode *h = L.hist_head;
    L.hist_head = h->next;
    if (!L.hist_head)
        L.hist_tail = NULL;
    L.hist_start_ticks = h->b->ticks;
    L.hist_bytes -= h->b->len;
    blob_unref(h->b);
    free(h);
}

static void hist_push(blob *b)
{
    hnode *h = malloc(sizeof *h);
    if (!h)
        return;
    atomic_fetch_add(&b->refs, 1);
    h->b = b;
    h->next = NULL;
    if (L.hist_tail)
        L.hist_tail->next = h;
    else
        L.hist_head = h;
    L.hist_tail = h;
    L.hist_bytes += b->len;
    uint64_t keep_ns = (uint64_t)(L.history_s * 1e9);
    while (L.hist_head && L.hist_head != L.hist_tail &&
           (L.hist_bytes > L.hist_cap_bytes || b->mono_ns - L.hist_head->b->mono_ns > keep_ns))
        hist_drop_head();
}

static void hist_clear(void)
{
    while (L.hist_head)
        hist_drop_head();
}

/* ---- definitions copy ---------------------------------------------------------------------- */

static void live_keep_def(const unsigned char *rec, const unsigned char *end)
{
    if (!L.enabled || end <= rec)
        return;
    size_t n = (size_t)(end - rec);
    if (mprof_buf_reserve(&L.defs, n) != 0)
        return;
    memcpy(L.defs.data + L.defs.len, rec, n);
    L.defs.len += n;
}

static int live_keeps(int tag)
{
    if (!L.enabled)
        return 0;
    switch (tag) {
    case MPROF_EV_THREAD_NAME:
    case MPROF_EV_APP_INFO:
    case MPROF_EV_PLOT_CONFIG:
    case MPROF_EV_LOCK_ANNOUNCE:
    case MPROF_EV_GPU_CONTEXT:
        return 1;
    default:
        return 0;
    }
}

#define STICKY_MAX_BYTES (4u << 20)

/* True when both byte ranges start with the same varint (a plot's name id). */
static int same_first_varint(const unsigned char *a, const unsigned char *aend,
                             const unsigned char *b, const unsigned char *bend)
{
    uint64_t x, y;
    return mprof_get_varint(&a, aend, &x) == 0 && mprof_get_varint(&b, bend, &y) == 0 && x == y;
}

static void live_keep_event(uint32_t thread, uint64_t ticks, const unsigned char *rec,
                            const unsigned char *end)
{
    if (!L.enabled || end <= rec)
        return;
    const mprof_event_desc *d = mprof_event_desc_get(rec[0]);
    if (!d)
        return;
    /* Keep the tag and the fields after the timestamp: the timestamp is re-encoded when the
     * definitions chunk is built, since deltas are relative to the chunk. */
    const unsigned char *body = rec + 1;
    uint64_t skip;
    if (d->has_ts && mprof_get_varint(&body, end, &skip) != 0)
        return;
    size_t blen = 1 + (size_t)(end - body);
    /* A thread's latest name and a plot's latest configuration replace the earlier ones, so a
     * program that renames threads or reconfigures plots in a loop does not grow this copy. */
    if (rec[0] == MPROF_EV_THREAD_NAME || rec[0] == MPROF_EV_PLOT_CONFIG) {
        for (size_t off = 0; off + 18 <= L.sticky.len;) {
            unsigned char *e = L.sticky.data + off;
            size_t elen = 17 + mprof_rd_u32(e + 13);
            int same = e[17] == rec[0] &&
                       (rec[0] == MPROF_EV_THREAD_NAME
                            ? mprof_rd_u32(e) == thread
                            : same_first_varint(e + 18, e + elen, body, end));
            if (same) {
                memmove(e, e + elen, L.sticky.len - off - elen);
                L.sticky.len -= elen;
                break;
            }
            off += elen;
        }
    }
    if (L.sticky.len + 17 + blen > STICKY_MAX_BYTES) {
        static int logged;
        if (!logged++)
            mprof__log("live capture: more than %u bytes of thread names, app info and "
                       "announcements; later ones reach only tools already connected",
                       STICKY_MAX_BYTES);
        return;
    }
    if (mprof_buf_reserve(&L.sticky, 17 + blen) != 0)
        return;
    unsigned char *o = L.sticky.data + L.sticky.len;
    mprof_wr_u32(o, thread);
    mprof_wr_u64(o + 4, d->has_ts ? ticks : 0);
    o[12] = d->has_ts ? 1 : 0;
    mprof_wr_u32(o + 13, (uint32_t)blen);
    o[17] = rec[0];
    memcpy(o + 18, body, blen - 1);
    L.sticky.len += 17 + blen;
}

/* Builds the definitions chunk into L.build: every definition so far, the sticky events with
 * their timestamps set to ts_ticks (no later than the first event the tool will receive, so the
 * capture does not appear to start earlier or run backwards), and a LOST record when lost > 0. */
static int build_defs(uint64_t ts_ticks, uint64_t lost)
{
    L.build.len = 0;
    if (mprof_buf_reserve(&L.build, L.defs.len + L.sticky.len + 64) != 0)
        return -1;
    if (L.defs.len) /* no definitions yet: L.defs.data is NULL, which memcpy may not take */
        memcpy(L.build.data, L.defs.data, L.defs.len);
    unsigned char *o = L.build.data + L.defs.len;
    uint32_t cur = 0;
    if (lost) {
        /* In the process context (thread 0), whose timestamp chain starts in this chunk. */
        *o++ = MPROF_EV_LOST;
        o = mprof_put_varint(o, mprof_zigzag((int64_t)ts_ticks));
        o = mprof_put_varint(o, lost);
    }
    if (L.ts_done)
        memset(L.ts_done, 0, L.ts_done_cap);
    for (size_t i = 0; i + 17 <= L.sticky.len;) {
        const unsigned char *s = L.sticky.data + i;
        uint32_t th = mprof_rd_u32(s), blen = mprof_rd_u32(s + 13);
        int has_ts = s[12];
        if (th != cur) {
            *o++ = MPROF_EV_THREAD;
            o = mprof_put_varint(o, th);
            cur = th;
        }
        *o++ = s[17];
        if (has_ts) {
            if (th >= L.ts_done_cap) {
                uint32_t nc = th * 2 + 16;
                uint8_t *nd = realloc(L.ts_done, nc);
                if (!nd)
                    return -1;
                memset(nd + L.ts_done_cap, 0, nc - L.ts_done_cap);
                L.ts_done = nd;
                L.ts_done_cap = nc;
            }
            o = mprof_put_varint(o, mprof_zigzag(L.ts_done[th] ? 0 : (int64_t)ts_ticks));
            L.ts_done[th] = 1;
        }
        memcpy(o, s + 18, blen - 1);
        o += blen - 1;
        i += 17 + blen;
    }
    L.build.len = (size_t)(o - L.build.data);
    return 0;
}

static blob *defs_blob(uint64_t ts_ticks, uint64_t lost)
{
    if (build_defs(ts_ticks, lost) != 0)
        return NULL;
    L.framed.len = 0;
    if (mprof_fmt_chunk(&L.framed, MPROF_CHUNK_EVENTS, L.build.data, L.build.len,
                        mprof__config.compression_level, NULL) != 0)
        return NULL;
    return blob_new(L.framed.data, L.framed.len);
}

/* ---- session queue (under L.m) ------------------------------------------------------------- */

/* The sender polls its socket every 20 ms while the queue is empty, so it needs no wake-up: a
 * chunk waits at most that long, and the collector never signals anything. */

static int enqueue_locked(session *s, blob *b)
{
    qitem *q = malloc(sizeof *q);
    if (!q)
        return -1;
    atomic_fetch_add(&b->refs, 1);
    q->b = b;
    q->next = NULL;
    if (s->tail)
        s->tail->next = q;
    else
        s->head = q;
    s->tail = q;
    s->queued_bytes += b->len;
    return 0;
}

static void queue_clear_locked(session *s)
{
    while (s->head) {
        qitem *q = s->head;
        s->head = q->next;
        blob_unref(q->b);
        free(q);
    }
    s->tail = NULL;
    s->queued_bytes = 0;
}

/* ---- collector hooks ----------------------------------------------------------------------- */

static void set_recording(int on)
{
    L.hooks.set_recording(on);
}

static int always_recording(void)
{
    return L.has_file || L.history_s > 0;
}

static int live_pending(void)
{
    if (!L.enabled)
        return 0;
    pthread_mutex_lock(&L.m);
    int p = L.pending != NULL;
    pthread_mutex_unlock(&L.m);
    return p;
}

static void live_attach(void)
{
    pthread_mutex_lock(&L.m);
    session *s = L.pending;
    L.pending = NULL;
    mprof_wire_hello hello = s ? s->hello : (mprof_wire_hello){0};
    uint64_t id = s ? s->id : 0;
    size_t limit = s ? s->limit_bytes : 0;
    pthread_mutex_unlock(&L.m);
    if (!s)
        return;
    /* History is chosen newest-first within half the tool's limit, then sent oldest-first.
     * History kept unframed while nobody could read it is compressed first, now that a tool
     * asks (so the limit applies to what is sent; the ring keeps the framed form, for the next
     * tool). A chunk that cannot be compressed (out of memory) is dropped and counted. */
    size_t n_hist = 0, n_raw_failed = 0;
    mprof_wire_counts raw_failed = {0};
    hnode *first = NULL, *before_first = NULL;
    if ((hello.flags & MPROF_WIRE_F_HISTORY) && hello.history_ms) {
        uint64_t now = mprof__mono_ns();
        uint64_t span = (uint64_t)hello.history_ms * 1000000u;
        for (hnode *h = L.hist_head; h; h = h->next) {
            if (!h->b->raw || now - h->b->mono_ns > span)
                continue;
            blob *f = blob_frame(h->b);
            if (!f) {
                mprof_wire_scan_events(h->b->data, h->b->len, &raw_failed, NULL, 0);
                n_raw_failed++;
                continue;
            }
            L.hist_bytes = L.hist_bytes - h->b->len + f->len;
            blob_unref(h->b);
            h->b = f;
        }
        size_t total = 0, count = 0;
        for (hnode *h = L.hist_head; h; h = h->next)
            if (now - h->b->mono_ns <= span) {
                total += h->b->len;
                count++;
            }
        for (hnode *h = L.hist_head, *prev = NULL; h && count; prev = h, h = h->next) {
            if (now - h->b->mono_ns > span)
                continue;
            if (total <= limit / 2) {
                first = h;
                before_first = prev;
                n_hist = count;
                break;
            }
            total -= h->b->len;
            count--;
        }
    }
    /* Sticky events are stamped with the start of what the tool receives: the production time
     * of the chunk before the first history chunk sent, or now without history. */
    uint64_t ts = mprof__ticks();
    if (first)
        ts = before_first ? before_first->b->ticks : L.hist_start_ticks;
    blob *d = defs_blob(ts, 0);
    pthread_mutex_lock(&L.m);
    s = L.active;
    if (s && s->id == id && !s->closing) {
        if (!d || enqueue_locked(s, d) != 0)
            s->need_defs = 1; /* out of memory: the next delivered chunk carries them */
        s->dropped_chunks += n_raw_failed; /* could not be compressed: out of memory */
        s->dropped_events += raw_failed.events;
        if (raw_failed.events) {
            s->unannounced_lost += raw_failed.events; /* a LOST record before the next chunk */
            s->need_defs = 1;
        }
        for (hnode *h = first; h && n_hist; h = h->next, n_hist--)
            if (h->b->raw || enqueue_locked(s, h->b) != 0)
                s->dropped_chunks += h->b->raw ? 0 : 1;
        s->lost_at_attach = atomic_load(&mprof__stats.events_lost);
        s->attached = 1;
        if (!always_recording())
            set_recording(1);
    }
    pthread_mutex_unlock(&L.m);
    blob_unref(d);
}

/* framed NULL with lazy set: keep the raw payload (history nobody may read yet). */
static void live_chunk(const mprof_buf *raw, const mprof_buf *framed, int lazy)
{
    if (!L.enabled)
        return;
    blob *b = lazy     ? raw_blob_new(raw->data, raw->len)
              : framed ? blob_new(framed->data, framed->len)
                       : NULL;
    if (!b) {
        /* Out of memory: a connected tool misses this chunk, which is counted as a drop. */
        mprof_wire_counts c = {0};
        mprof_wire_scan_events(raw->data, raw->len, &c, NULL, 0);
        pthread_mutex_lock(&L.m);
        session *s = L.active;
        if (s && s->attached && !s->closing) {
            s->dropped_chunks++;
            s->dropped_events += c.events;
            s->unannounced_lost += c.events;
            s->need_defs = 1;
        }
        pthread_mutex_unlock(&L.m);
        return;
    }
    if (L.history_s > 0)
        hist_push(b);
    /* The session may end at any time on its sender thread: it is looked up again by id under
     * the lock before anything is applied to it. The slow parts run outside the lock. */
    pthread_mutex_lock(&L.m);
    session *s = L.active;
    int live = s && s->attached && !s->closing;
    uint64_t id = live ? s->id : 0, lost = live ? s->unannounced_lost : 0;
    /* An empty queue takes any chunk, so a limit below one chunk's size still delivers. */
    int fits = live && (s->queued_bytes == 0 || s->queued_bytes + b->len <= s->limit_bytes);
    int need_defs = live && s->need_defs;
    pthread_mutex_unlock(&L.m);
    if (!live || b->raw) {
        /* A raw blob is only made while no tool is attached, and only the collector thread
         * attaches one, so a raw blob never reaches a queue. */
        blob_unref(b);
        return;
    }
    mprof_wire_counts c = {0};
    blob *d = NULL;
    if (fits && need_defs && !(d = defs_blob(mprof__ticks(), lost)))
        fits = 0; /* out of memory: the chunk cannot be delivered decodable, so drop it */
    if (!fits)
        mprof_wire_scan_events(raw->data, raw->len, &c, NULL, 0);
    pthread_mutex_lock(&L.m);
    s = L.active;
    if (s && s->id == id && !s->closing) {
        if (!fits) {
            /* The tool cannot keep up: drop this chunk, count its events, and re-send the
             * definitions it may have carried before the next chunk that is delivered. */
            s->dropped_chunks++;
            s->dropped_events += c.events;
            s->unannounced_lost += c.events;
            s->need_defs = 1;
        } else {
            int defs_ok = !d || enqueue_locked(s, d) == 0;
            if (d && defs_ok) {
                s->need_defs = 0;
                s->unannounced_lost -= lost;
            }
            if (!defs_ok || enqueue_locked(s, b) != 0) {
                /* Out of memory for a queue entry: the same as a drop. */
                mprof_wire_scan_events(raw->data, raw->len, &c, NULL, 0);
                s->dropped_chunks++;
                s->dropped_events += c.events;
                s->unannounced_lost += c.events;
                s->need_defs = 1;
            }
        }
    }
    pthread_mutex_unlock(&L.m);
    blob_unref(d);
    blob_unref(b);
}

/* ---- the sender ---------------------------------------------------------------------------- */

/* Sends len bytes. Returns 0, or -1 when the peer is gone or (give_up_ns != 0) time ran out.
 * While waiting it reads what the tool sends: a STOP byte sets *stop; EOF means gone. */
static int send_all(session *s, const unsigned char *p, size_t len, uint64_t give_up_ns,
                    int *stop)
{
    while (len) {
        ssize_t n = send(s->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            atomic_store(&s->stalled_since_ns, 0);
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        /* A tool that takes nothing for SESSION_STALL_MS (or is evicted for a new one) is
         * gone: otherwise a client that never reads would hold the only session forever. */
        uint64_t now = mprof__mono_ns(), since = atomic_load(&s->stalled_since_ns);
        if (!since)
            atomic_store(&s->stalled_since_ns, now);
        else if (now - since > (uint64_t)SESSION_STALL_MS * 1000000u)
            return -1;
        if (atomic_load(&s->evict))
            return -1;
        if (!give_up_ns && atomic_load(&s->shutdown))
            give_up_ns = mprof__mono_ns() + (uint64_t)SHUTDOWN_FLUSH_MS * 1000000u;
        if (give_up_ns && mprof__mono_ns() > give_up_ns)
            return -1;
        struct pollfd pf = {.fd = s->fd, .events = POLLOUT | POLLIN};
        if (poll(&pf, 1, 100) > 0 && (pf.revents & (POLLIN | POLLHUP | POLLERR))) {
            unsigned char c[64];
            ssize_t r = recv(s->fd, c, sizeof c, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
                return -1;
            for (ssize_t i = 0; i < r; i++)
                if (c[i] == MPROF_WIRE_STOP)
                    *stop = 1;
        }
    }
    return 0;
}

/* What the sender delivered, counted as the reader counts a capture, so that END can carry the
 * counts the reader checks the file against: a chunk lost between here and the file (or cut
 * out of the file later) is then reported missing, as for an in-process capture. */
typedef struct sent_counts {
    uint64_t chunks, events;
    int events_unknown; /* a delivered chunk could not be counted (out of memory) */
    mprof_buf raw;      /* scratch: the last payload */
    void *dctx;         /* ZSTD_DCtx, made on first use */
} sent_counts;

/* Adds a chunk that was sent whole. Decompressing and walking it costs the sender thread about
 * what the tool spends on the same chunk; the collector and the game threads pay nothing. */
static void count_sent(sent_counts *sc, const blob *b)
{
    mprof_wire_chunk ch;
    size_t used;
    sc->chunks++;
    if (mprof_wire_next_chunk(b->data, b->len, &ch, &used, NULL, 0) != MPROF_WIRE_DONE) {
        sc->events_unknown = 1;
        return;
    }
    if (ch.kind != MPROF_CHUNK_EVENTS)
        return;
    if (!sc->dctx)
        sc->dctx = ZSTD_createDCtx(); /* NULL: a context per call, slower but the same */
    mprof_wire_counts c = {0};
    if (mprof_wire_chunk_payload(&ch, &sc->raw, sc->dctx, NULL, 0) != 0 ||
        mprof_wire_scan_events(sc->raw.data, sc->raw.len, &c, NULL, 0) != 0)
        sc->events_unknown = 1;
    sc->events += c.events;
}

static blob *end_blob(session *s, const char *why, const sent_counts *sc)
{
    mprof_buf kv = {0}, fr = {0};
    char v[64];
    /* The chunks before END in the tool's file: its INFO chunk (made from the handshake reply)
     * and every chunk delivered; the events in them, as mprof_event_counted counts. */
    snprintf(v, sizeof v, "%" PRIu64, sc->chunks + 1);
    mprof_fmt_kv(&kv, "chunks", v);
    if (!sc->events_unknown) {
        snprintf(v, sizeof v, "%" PRIu64, sc->events);
        mprof_fmt_kv(&kv, "events", v);
    }
    pthread_mutex_lock(&L.m);
    uint64_t dropped = s->dropped_events, dchunks = s->dropped_chunks;
    pthread_mutex_unlock(&L.m);
    uint64_t lost = atomic_load(&mprof__stats.events_lost) - s->lost_at_attach + dropped;
    snprintf(v, sizeof v, "%" PRIu64, lost);
    mprof_fmt_kv(&kv, "events_lost", v);
    snprintf(v, sizeof v, "%" PRIu64, dropped);
    mprof_fmt_kv(&kv, "live_events_dropped", v);
    snprintf(v, sizeof v, "%" PRIu64, dchunks);
    mprof_fmt_kv(&kv, "live_chunks_dropped", v);
    snprintf(v, sizeof v, "%" PRIu64, mprof__ticks());
    mprof_fmt_kv(&kv, "end_ticks", v);
    mprof_fmt_kv(&kv, "ended_by", why);
    blob *b = NULL;
    if (mprof_fmt_chunk(&fr, MPROF_CHUNK_END, kv.data, kv.len, 0, NULL) == 0)
        b = blob_new(fr.data, fr.len);
    mprof_buf_free(&kv);
    mprof_buf_free(&fr);
    return b;
}

static void *sender_main(void *arg)
{
    session *s = arg;
    mprof__set_os_thread_name("mprof-sender");
    int stop = 0, gone = 0;
    uint64_t deadline = 0;
    sent_counts sc = {0};
    for (;;) {
        pthread_mutex_lock(&L.m);
        if (stop && !s->closing)
            s->closing = 1; /* the collector stops handing chunks; the queue is flushed */
        if (atomic_load(&s->shutdown) && !deadline)
            deadline = mprof__mono_ns() + (uint64_t)SHUTDOWN_FLUSH_MS * 1000000u;
        qitem *q = s->head;
        if (q) {
            s->head = q->next;
            if (!s->head)
                s->tail = NULL;
        }
        int closing = s->closing;
        pthread_mutex_unlock(&L.m);
        if (!q) {
            if (closing)
                break;
            /* Nothing to send: watch the socket for STOP or EOF for a little while. */
            struct pollfd pf = {.fd = s->fd, .events = POLLIN};
            if (poll(&pf, 1, 20) > 0) {
                unsigned char c[64];
                ssize_t r = recv(s->fd, c, sizeof c, MSG_DONTWAIT);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                    gone = 1;
                    break;
                }
                for (ssize_t i = 0; i < r; i++)
                    if (c[i] == MPROF_WIRE_STOP)
                        stop = 1;
            }
            continue;
        }
        int rc = send_all(s, q->b->data, q->b->len, deadline, &stop);
        if (rc == 0)
            count_sent(&sc, q->b);
        pthread_mutex_lock(&L.m);
        s->queued_bytes -= q->b->len;
        pthread_mutex_unlock(&L.m);
        blob_unref(q->b);
        free(q);
        if (rc != 0) {
            gone = 1;
            break;
        }
    }
    pthread_mutex_lock(&L.m);
    s->closing = 1;
    queue_clear_locked(s);
    pthread_mutex_unlock(&L.m);
    if (!gone) {
        blob *e = end_blob(s, atomic_load(&s->shutdown) ? "process-exit" : "tool-stop", &sc);
        if (e && send_all(s, e->data, e->len,
                          mprof__mono_ns() + (uint64_t)SHUTDOWN_FLUSH_MS * 1000000u, &stop) != 0)
            gone = 1;
        blob_unref(e);
        /* Let the tool read everything before the socket goes away. */
        shutdown(s->fd, SHUT_WR);
        uint64_t until = mprof__mono_ns() + 1000000000ull;
        while (!gone && mprof__mono_ns() < until) {
            struct pollfd pf = {.fd = s->fd, .events = POLLIN};
            if (poll(&pf, 1, 50) > 0) {
                unsigned char c[64];
                ssize_t r = recv(s->fd, c, sizeof c, MSG_DONTWAIT);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
                    break;
            }
        }
    }
    if (gone) {
        atomic_fetch_add(&mprof__stats.sessions_dropped, 1);
        if (mprof__config.verbose == MPROF_TOGGLE_ON)
            mprof__log("the capture tool went away; the session is closed");
    }
    mprof_buf_free(&sc.raw);
    ZSTD_freeDCtx(sc.dctx);
    close(s->fd);
    s->fd = -1;
    pthread_mutex_lock(&L.m);
    if (L.active == s)
        L.active = NULL;
    /* A session that ends before the collector attached it must not be attached later: the
     * listener frees it once reaped. */
    if (L.pending == s)
        L.pending = NULL;
    queue_clear_locked(s); /* anything attached after the first clear */
    L.reap = s;
    /* Under the lock, so a session attaching meanwhile cannot be switched off by this one. */
    if (!L.active && !always_recording())
        set_recording(0);
    pthread_mutex_unlock(&L.m);
    return NULL;
}

static void reap_locked_join(void)
{
    pthread_mutex_lock(&L.m);
    session *r = L.reap;
    L.reap = NULL;
    pthread_mutex_unlock(&L.m);
    if (r) {
        pthread_join(r->thread, NULL);
        free(r);
    }
}

/* ---- listener and handshake ---------------------------------------------------------------- */

static void reply(int fd, int status, const void *payload, size_t len)
{
    mprof_buf b = {0};
    if (mprof_wire_encode_reply(&b, (uint16_t)status, payload, len) == 0) {
        session tmp = {.fd = fd};
        int stop = 0;
        send_all(&tmp, b.data, b.len, mprof__mono_ns() + (uint64_t)REPLY_MS * 1000000u, &stop);
    }
    mprof_buf_free(&b);
}

static void refuse(int fd, int status, const char *msg)
{
    reply(fd, status, msg, strlen(msg));
    shutdown(fd, SHUT_WR);
    close(fd);
}

/* True when the active session's tool has taken nothing for PREEMPT_STALL_MS: it is asked to
 * go, and this waits (briefly) until it has. Listener thread. */
static int evict_stalled_session(void)
{
    pthread_mutex_lock(&L.m);
    session *a = L.active;
    uint64_t since = a ? atomic_load(&a->stalled_since_ns) : 0;
    int stalled = a && since && mprof__mono_ns() - since > (uint64_t)PREEMPT_STALL_MS * 1000000u;
    if (stalled)
        atomic_store(&a->evict, 1);
    pthread_mutex_unlock(&L.m);
    if (!stalled)
        return 0;
    /* The sender sees evict within its 100 ms poll. */
    for (int i = 0; i < 50; i++) {
        pthread_mutex_lock(&L.m);
        int gone = L.active != a;
        pthread_mutex_unlock(&L.m);
        if (gone)
            return 1;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* A complete hello was read from fd: refuse it or start the session. Listener thread. */
static void handshake_done(int fd, const mprof_wire_hello *hp)
{
    mprof_wire_hello hello = *hp;
    char msg[256];
    if (hello.version != MPROF_WIRE_VERSION) {
        snprintf(msg, sizeof msg,
                 "protocol version mismatch: this process (pid %ld) speaks mprof capture protocol "
                 "%d, the tool speaks %u; use the mprof tool that matches the library",
                 (long)getpid(), MPROF_WIRE_VERSION, (unsigned)hello.version);
        refuse(fd, MPROF_WIRE_VERSION_MISMATCH, msg);
        return;
    }
    pthread_mutex_lock(&L.m);
    int busy = L.active != NULL;
    pthread_mutex_unlock(&L.m);
    if (busy && evict_stalled_session()) {
        reap_locked_join();
        pthread_mutex_lock(&L.m);
        busy = L.active != NULL;
        pthread_mutex_unlock(&L.m);
    }
    if (busy) {
        snprintf(msg, sizeof msg,
                 "busy: another capture of this process (pid %ld) is in progress; one capture "
                 "session at a time",
                 (long)getpid());
        refuse(fd, MPROF_WIRE_BUSY, msg);
        return;
    }
    session *s = calloc(1, sizeof *s);
    if (!s) {
        refuse(fd, MPROF_WIRE_BUSY, "out of memory");
        return;
    }
    s->fd = fd;
    s->hello = hello;
    atomic_init(&s->shutdown, 0);
    atomic_init(&s->stalled_since_ns, 0);
    atomic_init(&s->evict, 0);
    /* The tool's -m, but never more than this process's own memory cap. */
    s->limit_bytes = (size_t)(hello.queue_mib ? hello.queue_mib : DEFAULT_QUEUE_MIB) << 20;
    if (s->limit_bytes > mprof__config.memory_limit_bytes)
        s->limit_bytes = mprof__config.memory_limit_bytes;
    mprof_buf info = {0};
    mprof__kv_list_write(&L.hooks.info, &info);
    char v[64];
    mprof_fmt_kv(&info, "capture", "live");
    snprintf(v, sizeof v, "%g", L.history_s > 0 ? L.history_s : 0.0);
    mprof_fmt_kv(&info, "history_seconds", v);
    reply(fd, MPROF_WIRE_OK, info.data, info.len);
    mprof_buf_free(&info);
    reap_locked_join(); /* L.reap has one slot: empty it before a new session can end */
    pthread_mutex_lock(&L.m);
    s->id = ++L.next_session_id;
    L.active = s;
    L.pending = s;
    pthread_mutex_unlock(&L.m);
    if (pthread_create(&s->thread, NULL, sender_main, s) != 0) {
        pthread_mutex_lock(&L.m);
        L.active = NULL;
        if (L.pending == s)
            L.pending = NULL;
        pthread_mutex_unlock(&L.m);
        /* The collector may have queued chunks meanwhile (it reaches a session only through
         * L.active under the lock, which is cleared now): free them. */
        pthread_mutex_lock(&L.m);
        queue_clear_locked(s);
        pthread_mutex_unlock(&L.m);
        close(fd);
        free(s);
    }
}

/* A connection whose hello is being read. */
typedef struct hs_slot {
    int fd;
    uint64_t until_ns;
    size_t got;
    unsigned char h[MPROF_WIRE_HELLO_BYTES];
} hs_slot;

/* Reads what fd has of its hello. 1 when the slot is finished (answered or closed), 0 while
 * more is needed. */
static int hs_progress(hs_slot *h)
{
    ssize_t n = recv(h->fd, h->h + h->got, sizeof h->h - h->got, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        close(h->fd);
        return 1;
    }
    if (n > 0)
        h->got += (size_t)n;
    if (h->got < 10)
        return 0;
    mprof_wire_hello hello;
    char err[160];
    int rc = mprof_wire_decode_hello(h->h, h->got, &hello, err, sizeof err);
    if (rc == MPROF_WIRE_NEED_MORE && h->got < sizeof h->h)
        return 0;
    if (rc != MPROF_WIRE_DONE)
        refuse(h->fd, MPROF_WIRE_BAD_HELLO, err);
    else
        handshake_done(h->fd, &hello);
    return 1;
}

static void *listener_main(void *arg)
{
    (void)arg;
    mprof__set_os_thread_name("mprof-listener");
    hs_slot slots[MAX_HANDSHAKES];
    int n_slots = 0;
    double tokens = ACCEPT_BURST;
    uint64_t refilled = mprof__mono_ns();
    for (;;) {
        uint64_t now = mprof__mono_ns();
        tokens += (double)(now - refilled) * ACCEPTS_PER_S / 1e9;
        if (tokens > ACCEPT_BURST)
            tokens = ACCEPT_BURST;
        refilled = now;
        /* The listening socket is watched only while a slot and a token are free: a pending
         * connection then waits in the backlog instead of waking this thread again and again. */
        int can_accept = n_slots < MAX_HANDSHAKES && tokens >= 1.0;
        struct pollfd pf[2 + MAX_HANDSHAKES];
        int np = 0;
        pf[np++] = (struct pollfd){.fd = L.wake[0], .events = POLLIN};
        int li = -1;
        if (can_accept) {
            li = np;
            pf[np++] = (struct pollfd){.fd = L.listen_fd, .events = POLLIN};
        }
        int first_slot = np;
        int timeout = 200;
        for (int i = 0; i < n_slots; i++) {
            pf[np++] = (struct pollfd){.fd = slots[i].fd, .events = POLLIN};
            int left = slots[i].until_ns > now ? (int)((slots[i].until_ns - now) / 1000000u) + 1 : 0;
            if (left < timeout)
                timeout = left;
        }
        if (!can_accept && n_slots < MAX_HANDSHAKES) {
            int wait_token = (int)((1.0 - tokens) * 1000.0 / ACCEPTS_PER_S) + 1;
            if (wait_token < timeout)
                timeout = wait_token;
        }
        int n = poll(pf, (nfds_t)np, timeout);
        reap_locked_join();
        if (n < 0 && errno != EINTR)
            break;
        if (pf[0].revents)
            break;
        now = mprof__mono_ns();
        /* Handshakes in progress: read, answer, or drop a peer that ran out of time. */
        for (int i = n_slots - 1; i >= 0; i--) {
            int done = 0;
            if (n > 0 && pf[first_slot + i].revents)
                done = hs_progress(&slots[i]);
            if (!done && now >= slots[i].until_ns) {
                close(slots[i].fd);
                done = 1;
            }
            if (done)
                slots[i] = slots[--n_slots];
        }
        if (li < 0 || n <= 0 || !(pf[li].revents & POLLIN))
            continue;
        int fd = accept4(L.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            /* Out of descriptors: the connection stays pending and poll would return at once;
             * back off instead of spinning a core. */
            if (errno == EMFILE || errno == ENFILE)
                poll(&pf[0], 1, 100);
            continue;
        }
        tokens -= 1.0;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        slots[n_slots++] = (hs_slot){.fd = fd, .until_ns = now + (uint64_t)HANDSHAKE_MS * 1000000u};
    }
    for (int i = 0; i < n_slots; i++)
        close(slots[i].fd);
    return NULL;
}

static int open_listener(void)
{
    char port[16];
    snprintf(port, sizeof port, "%u", (unsigned)mprof__config.listen_port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(mprof__config.listen_address, port, &hints, &res);
    if (gai != 0) {
        mprof__log("live capture disabled: cannot resolve listen address %s: %s",
                   mprof__config.listen_address, gai_strerror(gai));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        /* A backlog past MAX_HANDSHAKES: a burst of connections waits in it rather than having
         * its SYNs dropped (a dropped SYN costs a real tool a one-second retry). */
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 32) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        mprof__log("live capture disabled: cannot listen on %s:%s: %s", mprof__config.listen_address,
                   port, strerror(err));
    return fd;
}

/* ---- start and stop ------------------------------------------------------------------------ */

static int live_start(const mprof__live_hooks *hooks, int has_file)
{
    const mprof_config *c = &mprof__config;
    int want = c->listen == MPROF_TOGGLE_ON || (c->listen == MPROF_TOGGLE_DEFAULT && !c->capture_path);
    L.enabled = 0;
    L.hooks = *hooks;
    L.has_file = has_file;
    L.defs.len = L.sticky.len = 0;
    hist_clear();
    L.hist_start_ticks = mprof__ticks();
    if (!want)
        return 0;
    L.history_s = c->history_seconds > 0 ? c->history_seconds : 0;
    L.hist_cap_bytes = c->memory_limit_bytes / 2;
    L.listen_fd = open_listener();
    if (L.listen_fd < 0)
        return 0;
    int piped = pipe2(L.wake, O_CLOEXEC) == 0;
    if (!piped || pthread_create(&L.listener, NULL, listener_main, NULL) != 0) {
        mprof__log("live capture disabled: cannot start the listener thread");
        if (piped) {
            close(L.wake[0]);
            close(L.wake[1]);
        }
        close(L.listen_fd);
        L.listen_fd = -1;
        return 0;
    }
    L.enabled = 1;
    if (c->verbose == MPROF_TOGGLE_ON)
        mprof__log("listening for mprof capture on %s:%u (history %g s)", c->listen_address,
                   (unsigned)c->listen_port, L.history_s);
    return L.history_s > 0;
}

static void live_stop(void)
{
    if (!L.enabled)
        return;
    if (write(L.wake[1], "x", 1) < 0)
        mprof__log("cannot wake the listener: %s", strerror(errno));
    pthread_join(L.listener, NULL);
    close(L.listen_fd);
    close(L.wake[0]);
    close(L.wake[1]);
    L.listen_fd = L.wake[0] = L.wake[1] = -1;
    /* A session that finished its handshake but was not attached yet still gets its stream. */
    if (live_pending())
        live_attach();
    pthread_mutex_lock(&L.m);
    session *s = L.active;
    if (s) {
        atomic_store(&s->shutdown, 1);
        s->closing = 1;
        }
    pthread_mutex_unlock(&L.m);
    if (s) {
        pthread_join(s->thread, NULL);
        pthread_mutex_lock(&L.m);
        if (L.reap == s)
            L.reap = NULL;
        pthread_mutex_unlock(&L.m);
        free(s);
    }
    reap_locked_join();
    L.enabled = 0;
    hist_clear();
    raw_slabs_free();
    mprof_buf_free(&L.defs);
    mprof_buf_free(&L.sticky);
    mprof_buf_free(&L.build);
    mprof_buf_free(&L.framed);
    ZSTD_freeCCtx(L.cctx);
    L.cctx = NULL;
    free(L.ts_done);
    L.ts_done = NULL;
    L.ts_done_cap = 0;
}

/* ---- the sink interface (sink.h) ----------------------------------------------------------- */

/* A chunk nobody may read until a tool asks for history (no tool attached, and no file sink
 * that frames it anyway) is kept unframed: compressing it is most of the collector's work, and
 * most history is freed unread. It costs memory instead (about 2.5 bytes per event instead of
 * 0.1-0.5), within the ring's byte cap. */
static void sink_chunk(mprof__sink *s, const mprof__chunk *c)
{
    (void)s;
    if (c->kind != MPROF_CHUNK_EVENTS || !L.enabled)
        return;
    int lazy = 0;
    if (L.history_s > 0 && !L.has_file) {
        pthread_mutex_lock(&L.m);
        lazy = !(L.active && L.active->attached && !L.active->closing);
        pthread_mutex_unlock(&L.m);
    }
    live_chunk(c->raw, lazy ? NULL : c->framed(c), lazy);
}

static void sink_def(mprof__sink *s, const unsigned char *rec, const unsigned char *end)
{
    (void)s;
    live_keep_def(rec, end);
}

static int sink_keeps(mprof__sink *s, int tag)
{
    (void)s;
    return live_keeps(tag);
}

static void sink_keep(mprof__sink *s, uint32_t thread, uint64_t ticks, const unsigned char *rec,
                      const unsigned char *end)
{
    (void)s;
    live_keep_event(thread, ticks, rec, end);
}

static int sink_want_boundary(mprof__sink *s)
{
    (void)s;
    return live_pending();
}

static void sink_boundary(mprof__sink *s)
{
    (void)s;
    live_attach();
}

static void sink_close(mprof__sink *s)
{
    (void)s;
    live_stop();
}

static const mprof__sink_ops live_ops = {
    .name = "live",
    .chunk = sink_chunk,
    .def = sink_def,
    .keeps = sink_keeps,
    .keep = sink_keep,
    .want_boundary = sink_want_boundary,
    .boundary = sink_boundary,
    .close = sink_close,
};

/* One listener per process: the sink is a handle on the module's state. */
static mprof__sink live_sink = {&live_ops};

mprof__sink *mprof__sink_live_open(const mprof__live_hooks *hooks, int has_file,
                                   int *out_record)
{
    *out_record = live_start(hooks, has_file);
    return L.enabled ? &live_sink : NULL;
}
