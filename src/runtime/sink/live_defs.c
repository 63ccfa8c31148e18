/*
 * live_defs.c - the definitions copy of live capture.
 *
 * A chunk is decodable on its own except for definitions (source locations, strings, threads,
 * callstacks, modules), which the collector writes once per session. So every definition record
 * is also copied here, together with the "sticky" events a viewer needs whenever it starts
 * (thread names, app info, plot configurations, lock and GPU context announcements); a tool that
 * connects late first receives one EVENTS chunk built from this copy. The copy is also re-sent
 * after the tool missed chunks that may have carried definitions.
 */
#include "live_defs.h"
#include "config.h"
#include "platform/platform.h"

#include <stdlib.h>
#include <string.h>

/* Collector thread only (and startup/shutdown while it does not run). */
static struct {
    mprof_buf defs;   /* definition records, compact form */
    mprof_buf sticky; /* [u32 thread][u64 ticks][u8 has_ts][u32 len][len bytes: tag + fields] */
    mprof_buf build, framed; /* scratch: the definitions chunk, raw and framed */
    uint8_t *ts_done; /* per thread: its timestamp chain has started in the chunk being built */
    uint32_t ts_done_cap;
} D;

void mprof__live_defs_reset(void)
{
    D.defs.len = D.sticky.len = 0;
}

void mprof__live_defs_free(void)
{
    mprof_buf_free(&D.defs);
    mprof_buf_free(&D.sticky);
    mprof_buf_free(&D.build);
    mprof_buf_free(&D.framed);
    free(D.ts_done);
    D.ts_done = NULL;
    D.ts_done_cap = 0;
}

void mprof__live_defs_keep(const unsigned char *rec, const unsigned char *end)
{
    if (end <= rec)
        return;
    size_t n = (size_t)(end - rec);
    if (mprof_buf_reserve(&D.defs, n) != 0)
        return;
    memcpy(D.defs.data + D.defs.len, rec, n);
    D.defs.len += n;
}

int mprof__live_defs_keeps(int tag)
{
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

void mprof__live_defs_keep_event(uint32_t thread, uint64_t ticks, const unsigned char *rec,
                                 const unsigned char *end)
{
    if (end <= rec)
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
        for (size_t off = 0; off + 18 <= D.sticky.len;) {
            unsigned char *e = D.sticky.data + off;
            size_t elen = 17 + mprof_rd_u32(e + 13);
            int same = e[17] == rec[0] &&
                       (rec[0] == MPROF_EV_THREAD_NAME
                            ? mprof_rd_u32(e) == thread
                            : same_first_varint(e + 18, e + elen, body, end));
            if (same) {
                memmove(e, e + elen, D.sticky.len - off - elen);
                D.sticky.len -= elen;
                break;
            }
            off += elen;
        }
    }
    if (D.sticky.len + 17 + blen > STICKY_MAX_BYTES) {
        static int logged;
        if (!logged++)
            mprof__log("live capture: more than %u bytes of thread names, app info and "
                       "announcements; later ones reach only tools already connected",
                       STICKY_MAX_BYTES);
        return;
    }
    if (mprof_buf_reserve(&D.sticky, 17 + blen) != 0)
        return;
    unsigned char *o = D.sticky.data + D.sticky.len;
    mprof_wr_u32(o, thread);
    mprof_wr_u64(o + 4, d->has_ts ? ticks : 0);
    o[12] = d->has_ts ? 1 : 0;
    mprof_wr_u32(o + 13, (uint32_t)blen);
    o[17] = rec[0];
    memcpy(o + 18, body, blen - 1);
    D.sticky.len += 17 + blen;
}

/* Builds the definitions chunk into D.build: every definition so far, the sticky events with
 * their timestamps set to ts_ticks (no later than the first event the tool will receive, so the
 * capture does not appear to start earlier or run backwards), and a LOST record when lost > 0. */
static int build_defs(uint64_t ts_ticks, uint64_t lost)
{
    D.build.len = 0;
    if (mprof_buf_reserve(&D.build, D.defs.len + D.sticky.len + 64) != 0)
        return -1;
    if (D.defs.len) /* no definitions yet: D.defs.data is NULL, which memcpy may not take */
        memcpy(D.build.data, D.defs.data, D.defs.len);
    unsigned char *o = D.build.data + D.defs.len;
    uint32_t cur = 0;
    if (lost) {
        /* In the process context (thread 0), whose timestamp chain starts in this chunk. */
        *o++ = MPROF_EV_LOST;
        o = mprof_put_varint(o, mprof_zigzag((int64_t)ts_ticks));
        o = mprof_put_varint(o, lost);
    }
    if (D.ts_done)
        memset(D.ts_done, 0, D.ts_done_cap);
    for (size_t i = 0; i + 17 <= D.sticky.len;) {
        const unsigned char *s = D.sticky.data + i;
        uint32_t th = mprof_rd_u32(s), blen = mprof_rd_u32(s + 13);
        int has_ts = s[12];
        if (th != cur) {
            *o++ = MPROF_EV_THREAD;
            o = mprof_put_varint(o, th);
            cur = th;
        }
        *o++ = s[17];
        if (has_ts) {
            if (th >= D.ts_done_cap) {
                uint32_t nc = th * 2 + 16;
                uint8_t *nd = realloc(D.ts_done, nc);
                if (!nd)
                    return -1;
                memset(nd + D.ts_done_cap, 0, nc - D.ts_done_cap);
                D.ts_done = nd;
                D.ts_done_cap = nc;
            }
            o = mprof_put_varint(o, mprof_zigzag(D.ts_done[th] ? 0 : (int64_t)ts_ticks));
            D.ts_done[th] = 1;
        }
        memcpy(o, s + 18, blen - 1);
        o += blen - 1;
        i += 17 + blen;
    }
    D.build.len = (size_t)(o - D.build.data);
    return 0;
}

mprof__live_blob *mprof__live_defs_blob(uint64_t ts_ticks, uint64_t lost)
{
    if (build_defs(ts_ticks, lost) != 0)
        return NULL;
    D.framed.len = 0;
    /* Flagged as the process chunks that hold definitions are: a read of the process chunks
     * alone needs it (FORMAT.md "Process chunks"), and the sender's END counts it with them. */
    if (mprof_fmt_chunk_ex(&D.framed, MPROF_CHUNK_EVENTS, MPROF_CHUNK_F_PROCESS, D.build.data,
                           D.build.len, mprof__config.compression_level, NULL) != 0)
        return NULL;
    mprof__live_blob *b = mprof__live_blob_new(D.framed.data, D.framed.len);
    if (b)
        b->flags = MPROF_CHUNK_F_PROCESS;
    return b;
}
