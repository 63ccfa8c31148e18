/*
 * index_block.c - the index's blocks (index_block.h): column encoding of zones and runs, zstd,
 * checksums, and the per-answer reader that checks and decodes them.
 *
 * A zone costs a few bytes before zstd: the gap from the previous zone's end and the duration
 * are small for the short zones that make a capture large, the time in children is 0 for a
 * leaf, the location and the flags repeat. Writing each of those as a column of varints puts
 * alike bytes together, which is what zstd compresses best.
 */
#define _POSIX_C_SOURCE 200809L /* pread */
#include "view/index_block.h"

#include "format/format.h"
#include "view/index_search.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

int mprof__vidx_fuzz_no_checksum;

/* ---- writing --------------------------------------------------------------------------------- */

int mprof__vbuf_put(vbuf *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n)
            c *= 2;
        unsigned char *q = realloc(b->p, c);
        if (!q)
            return -1;
        b->p = q;
        b->cap = c;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
    return 0;
}

int mprof__vbuf_room(vbuf *b, size_t n)
{
    if (b->n + n <= b->cap)
        return 0;
    size_t c = b->cap ? b->cap : 256;
    while (c < b->n + n)
        c *= 2;
    unsigned char *q = realloc(b->p, c);
    if (!q)
        return -1;
    b->p = q;
    b->cap = c;
    return 0;
}

void mprof__vab_init(vab *a, uint32_t codec, uint32_t rec)
{
    memset(a, 0, sizeof *a);
    a->codec = codec;
    a->rec = rec;
    a->cur.e_max = INT64_MIN;
}

static void vab_clear_block(vab *a)
{
    int64_t emax = a->cur.e_max;
    memset(&a->cur, 0, sizeof a->cur);
    a->cur.e_max = emax; /* a running maximum over the array */
    a->cur.first = a->n;
    a->pend = 0;
    a->prev_e = 0;
    for (int k = 0; k < 5; k++)
        a->col[k].n = 0;
}

/* Writes the block being filled. */
static int vab_flush(vab *a, vout *o)
{
    if (!a->pend)
        return 0;
    if (a->n_blk == a->cap_blk) {
        uint64_t c = a->cap_blk ? a->cap_blk * 2 : 4;
        vblk *p = realloc(a->blk, c * sizeof *p);
        if (!p) {
            o->failed = 1;
            return -1;
        }
        a->blk = p;
        a->cap_blk = c;
    }
    /* The block's bytes in one buffer of their own, handed to the vout (which frees it). */
    size_t len = a->codec == VC_RUNS ? 10 : 0;
    for (int k = 0; k < 5; k++)
        len += a->col[k].n;
    vbuf all = {malloc(len ? len : 1), 0, len ? len : 1};
    int rc = all.p ? 0 : -1;
    if (rc == 0 && a->codec == VC_RUNS)
        rc = mprof__vbuf_var(&all, a->run_first);
    for (int k = 0; k < 5 && rc == 0; k++)
        rc = mprof__vbuf_put(&all, a->col[k].p, a->col[k].n);
    if (rc != 0) {
        free(all.p);
        o->failed = 1;
        return -1;
    }
    if (mprof__vout_submit(o, all.p, all.n, &a->cur.at) != 0)
        return -1;
    a->cur.n = a->pend;
    a->blk[a->n_blk++] = a->cur;
    if (!o->pipe)
        a->n_res = a->n_blk; /* written already: at is where */
    vab_clear_block(a);
    return 0;
}

int mprof__vab_resolve(vab *a, vout *o)
{
    if (a->n_res == a->n_blk)
        return 0;
    if (mprof__vout_drain(o) != 0)
        return -1;
    for (uint64_t i = a->n_res; i < a->n_blk; i++)
        a->blk[i].at = mprof__vout_ref(o, a->blk[i].at.off);
    a->n_res = a->n_blk;
    return 0;
}

int mprof__vab_push(vab *a, vout *o, const void *rec, int64_t key)
{
    return mprof__vab_push_dur(a, o, rec, key, 0);
}

int mprof__vab_push_dur(vab *a, vout *o, const void *rec, int64_t key, int64_t dur)
{
    if (!a->pend) {
        vab_clear_block(a);
        a->cur.k_first = key;
    }
    if (mprof__vbuf_put(&a->col[0], rec, a->rec) != 0) {
        o->failed = 1;
        return -1;
    }
    a->cur.k_last = key;
    if (key > a->cur.e_max)
        a->cur.e_max = key;
    if (dur > a->cur.d_max)
        a->cur.d_max = dur;
    a->pend++;
    a->n++;
    if ((uint64_t)a->pend * a->rec >= REC_BLOCK_BYTES)
        return vab_flush(a, o);
    return 0;
}

int mprof__vab_bytes(vab *a, vout *o, const void *p, size_t len)
{
    const unsigned char *c = p;
    while (len) {
        if (!a->pend) {
            vab_clear_block(a);
            a->cur.k_first = (int64_t)a->n;
        }
        size_t room = REC_BLOCK_BYTES - a->pend, k = len < room ? len : room;
        if (mprof__vbuf_put(&a->col[0], c, k) != 0) {
            o->failed = 1;
            return -1;
        }
        a->pend += (uint32_t)k;
        a->n += k;
        a->cur.k_last = a->cur.e_max = (int64_t)a->n - 1;
        c += k;
        len -= k;
        if (a->pend >= REC_BLOCK_BYTES && vab_flush(a, o) != 0)
            return -1;
    }
    return 0;
}

int mprof__vab_zone(vab *a, vout *o, const vzone *z)
{
    if (!a->pend) {
        vab_clear_block(a);
        a->cur.k_first = z->s;
        if (a->codec == VC_RUNS)
            a->run_first = z->first;
    }
    int64_t d = z->e - z->s;
    int single = a->codec == VC_ZONES || z->flags == 1;
    int rc = mprof__vbuf_var(&a->col[0], mprof_zigzag(z->s - a->prev_e)) |
             mprof__vbuf_var(&a->col[1], (uint64_t)d) | mprof__vbuf_var(&a->col[2], z->flags);
    if (single)
        rc |= mprof__vbuf_var(&a->col[3], (uint64_t)(d - z->self)) | mprof__vbuf_var(&a->col[4], z->loc);
    if (rc) {
        o->failed = 1;
        return -1;
    }
    a->prev_e = z->e;
    a->cur.k_last = z->s;
    if (z->e > a->cur.e_max)
        a->cur.e_max = z->e;
    if (d > a->cur.d_max)
        a->cur.d_max = d;
    if (single)
        a->cur.loc_mask |= UINT64_C(1) << (z->loc % 64);
    a->pend++;
    a->n++;
    if (a->pend == ZONE_BLOCK)
        return vab_flush(a, o);
    return 0;
}

int mprof__vab_finish(vab *a, vout *o)
{
    if (vab_flush(a, o) != 0)
        return -1;
    return mprof__vab_resolve(a, o);
}

void mprof__vab_free(vab *a)
{
    free(a->blk);
    for (int k = 0; k < 5; k++)
        free(a->col[k].p);
    memset(a, 0, sizeof *a);
}

int mprof__vab_pending(const vab *a, vzone *out, uint32_t cap)
{
    if (a->codec == VC_RAW || a->pend > cap)
        return -1;
    vbuf all = {0};
    int rc = a->codec == VC_RUNS ? mprof__vbuf_var(&all, a->run_first) : 0;
    for (int k = 0; k < 5 && rc == 0; k++)
        rc = mprof__vbuf_put(&all, a->col[k].p, a->col[k].n);
    if (rc == 0)
        rc = mprof__vblk_decode(a->codec, sizeof(vzone), all.p, all.n, a->pend, a->cur.first, out);
    free(all.p);
    return rc;
}

/* ---- decoding -------------------------------------------------------------------------------- */

size_t mprof__vblk_raw_max(uint32_t codec, uint32_t rec, uint32_t n)
{
    if (codec == VC_RAW)
        return (size_t)rec * n;
    return 10 + (size_t)n * 50; /* five varints a zone at most */
}

/* Reads a varint of p[*at, n). 0, or -1 past the end or longer than 10 bytes. */
static int rd_var(const unsigned char *p, size_t n, size_t *at, uint64_t *v)
{
    uint64_t x = 0;
    for (int sh = 0; sh < 70; sh += 7) {
        if (*at >= n)
            return -1;
        unsigned char c = p[(*at)++];
        if (sh == 63 && c > 1)
            return -1;
        x |= (uint64_t)(c & 0x7f) << sh;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

int mprof__vblk_decode(uint32_t codec, uint32_t rec, const unsigned char *raw, size_t raw_len, uint32_t n,
                       uint64_t first, void *out)
{
    if (codec == VC_RAW) {
        if (!rec || raw_len != (size_t)rec * n)
            return -1;
        memcpy(out, raw, raw_len);
        return 0;
    }
    if ((codec != VC_ZONES && codec != VC_RUNS) || rec != sizeof(vzone))
        return -1;
    vzone *z = out;
    size_t at = 0;
    uint64_t v, run_first = first;
    if (codec == VC_RUNS && rd_var(raw, raw_len, &at, &run_first) != 0)
        return -1;
    int64_t prev_e = 0;
    for (uint32_t i = 0; i < n; i++) { /* gaps: starts; durations come next */
        if (rd_var(raw, raw_len, &at, &v) != 0)
            return -1;
        z[i].s = (int64_t)v; /* the zigzagged gap, resolved below */
    }
    for (uint32_t i = 0; i < n; i++) {
        if (rd_var(raw, raw_len, &at, &v) != 0 || v > (uint64_t)INT64_MAX)
            return -1;
        int64_t gap = mprof_unzigzag((uint64_t)z[i].s), s, e;
        if (__builtin_add_overflow(prev_e, gap, &s) || __builtin_add_overflow(s, (int64_t)v, &e))
            return -1;
        z[i].s = s;
        z[i].e = e;
        prev_e = e;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (rd_var(raw, raw_len, &at, &v) != 0 || v > UINT32_MAX || (codec == VC_RUNS && v == 0))
            return -1;
        z[i].flags = (uint32_t)v;
    }
    for (uint32_t i = 0; i < n; i++) {
        z[i].self = 0;
        z[i].loc = 0;
        if (codec == VC_ZONES) {
            z[i].first = first + i;
        } else {
            z[i].first = run_first;
            if (__builtin_add_overflow(run_first, (uint64_t)z[i].flags, &run_first))
                return -1;
        }
        if (codec == VC_RUNS && z[i].flags != 1)
            continue;
        if (rd_var(raw, raw_len, &at, &v) != 0 || v > (uint64_t)(z[i].e - z[i].s))
            return -1;
        z[i].self = (z[i].e - z[i].s) - (int64_t)v;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (codec == VC_RUNS && z[i].flags != 1)
            continue;
        if (rd_var(raw, raw_len, &at, &v) != 0 || v >= MAX_LOC_SLOTS)
            return -1;
        z[i].loc = (uint32_t)v;
    }
    return at == raw_len ? 0 : -1;
}

/* ---- reading --------------------------------------------------------------------------------- */

void mprof__vread_init(vread *r, const mprof_vindex *x)
{
    memset(r, 0, sizeof *r);
    r->x = x;
}

void mprof__vread_free(vread *r)
{
    for (int i = 0; i < VREAD_SLOTS; i++)
        free(r->slot[i].data);
    free(r->raw);
    free(r->zraw);
    ZSTD_freeDCtx(r->dctx);
    memset(r, 0, sizeof *r);
}

static void vr_fail(vread *r, const char *why)
{
    if (!r->err)
        snprintf(r->why, sizeof r->why, "%s", why);
    r->err = 1;
}

static int grow(unsigned char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    unsigned char *q = realloc(*p, need);
    if (!q)
        return -1;
    *p = q;
    *cap = need;
    return 0;
}

uint64_t mprof__varr_block_of(const mprof_vindex *x, const varr *a, uint64_t i)
{
    const vblk *b = x->blocks + a->blk0;
    uint64_t lo = 0, hi = a->n_blocks;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (b[mid].first <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Slot s now holds block bi of a: the most recently used. */
static const void *slot_holds(vread *r, vslot *sl, int s, const varr *a, uint64_t bi)
{
    sl->a = a;
    sl->b = bi;
    sl->used = ++r->clock;
    r->last = s;
    return sl->data;
}

const void *mprof__vread_block(vread *r, const varr *a, uint64_t bi)
{
    for (int i = 0; i < VREAD_SLOTS; i++)
        if (r->slot[i].a == a && r->slot[i].b == bi && r->slot[i].data) {
            r->slot[i].used = ++r->clock;
            r->last = i;
            return r->slot[i].data;
        }
    if (bi >= a->n_blocks) {
        vr_fail(r, "a block past its array");
        return NULL;
    }
    const vblk *b = &r->x->blocks[a->blk0 + bi];
    /* The least recently used slot. */
    int s = 0;
    for (int i = 1; i < VREAD_SLOTS; i++)
        if (r->slot[i].used < r->slot[s].used)
            s = i;
    vslot *sl = &r->slot[s];
    size_t need = (size_t)b->n * a->rec;
    if (grow(&r->zraw, &r->zcap, b->at.len ? b->at.len : 1) != 0 || grow(&sl->data, &sl->cap, need ? need : 1) != 0) {
        vr_fail(r, "out of memory");
        return NULL;
    }
    sl->a = NULL;
    ssize_t got = pread(r->x->fd, r->zraw, b->at.len, (off_t)b->at.off);
    if (got != (ssize_t)b->at.len) {
        vr_fail(r, "the index file changed under the server (a block reads short); restart mprof view to rebuild it");
        return NULL;
    }
    if (XXH3_64bits(r->zraw, b->at.len) != b->at.csum && !mprof__vidx_fuzz_no_checksum) {
        vr_fail(r, "the index file changed under the server (a block fails its checksum); restart mprof view to rebuild it");
        return NULL;
    }
    if (b->at.len != b->at.raw_len && !r->dctx && !(r->dctx = ZSTD_createDCtx())) {
        vr_fail(r, "out of memory");
        return NULL;
    }
    if (a->codec == VC_RAW && b->at.len != b->at.raw_len) {
        /* Raw records decompress straight into the slot: no copy of the block. */
        size_t z = b->at.raw_len == need ? ZSTD_decompressDCtx(r->dctx, sl->data, need, r->zraw, b->at.len) : 0;
        if (b->at.raw_len != need || ZSTD_isError(z) || z != need) {
            vr_fail(r, "a damaged block in the index");
            return NULL;
        }
        return slot_holds(r, sl, s, a, bi);
    }
    const unsigned char *raw = r->zraw;
    if (b->at.len != b->at.raw_len) {
        if (grow(&r->raw, &r->raw_cap, b->at.raw_len ? b->at.raw_len : 1) != 0) {
            vr_fail(r, "out of memory");
            return NULL;
        }
        size_t z = ZSTD_decompressDCtx(r->dctx, r->raw, b->at.raw_len, r->zraw, b->at.len);
        if (ZSTD_isError(z) || z != b->at.raw_len) {
            vr_fail(r, "a damaged block in the index");
            return NULL;
        }
        raw = r->raw;
    }
    if (mprof__vblk_decode(a->codec, a->rec, raw, b->at.raw_len, b->n, b->first, sl->data) != 0) {
        vr_fail(r, "a damaged block in the index");
        return NULL;
    }
    return slot_holds(r, sl, s, a, bi);
}

const void *mprof__vread_rec(vread *r, const varr *a, uint64_t i)
{
    static const uint64_t zero[8];
    if (i >= a->n || !a->n_blocks) {
        vr_fail(r, "a record past its array");
        return zero;
    }
    vslot *l = &r->slot[r->last];
    if (l->a == a) {
        const vblk *b = &r->x->blocks[a->blk0 + l->b];
        if (i >= b->first && i - b->first < b->n)
            return l->data + (i - b->first) * a->rec;
    }
    uint64_t bi = mprof__varr_block_of(r->x, a, i);
    const unsigned char *d = mprof__vread_block(r, a, bi);
    const vblk *b = &r->x->blocks[a->blk0 + bi];
    if (!d || i < b->first || i - b->first >= b->n) {
        vr_fail(r, "a record outside its block");
        return zero;
    }
    return d + (i - b->first) * a->rec;
}

uint64_t mprof__vread_search(vread *r, const varr *a, size_t key_off, uint64_t lo, uint64_t hi, int64_t t,
                             int after, int by_end)
{
    if (hi > a->n)
        hi = a->n;
    if (lo >= hi)
        return hi;
    const vblk *bk = r->x->blocks + a->blk0;
    uint64_t bl = mprof__varr_block_of(r->x, a, lo), bh = mprof__varr_block_of(r->x, a, hi - 1) + 1;
    /* The first block whose last key (or greatest end so far) passes t. */
    while (bl < bh) {
        uint64_t mid = bl + (bh - bl) / 2;
        int64_t k = by_end ? bk[mid].e_max : bk[mid].k_last;
        if (k < t || (after && k == t))
            bl = mid + 1;
        else
            bh = mid;
    }
    if (bl >= a->n_blocks)
        return hi;
    const unsigned char *d = mprof__vread_block(r, a, bl);
    if (!d)
        return hi;
    const vblk *b = &bk[bl];
    if (b->first >= hi)
        return hi;
    uint64_t a0 = lo > b->first ? lo - b->first : 0;
    uint64_t a1 = hi - b->first < b->n ? hi - b->first : b->n;
    uint64_t k = mprof__vsearch(d, a->rec, key_off, a0, a1, t, after);
    return b->first + k;
}

int mprof__vread_bytes(vread *r, const varr *a, uint64_t off, uint64_t n, void *out)
{
    unsigned char *o = out;
    if (a->rec != 1 || off > a->n || n > a->n - off) {
        vr_fail(r, "bytes past their array");
        return -1;
    }
    while (n) {
        uint64_t bi = mprof__varr_block_of(r->x, a, off);
        const unsigned char *d = mprof__vread_block(r, a, bi);
        const vblk *b = &r->x->blocks[a->blk0 + bi];
        if (!d || off < b->first || off - b->first >= b->n) {
            vr_fail(r, "bytes outside their block");
            return -1;
        }
        uint64_t in = off - b->first, k = b->n - in < n ? b->n - in : n;
        memcpy(o, d + in, (size_t)k);
        o += k;
        off += k;
        n -= k;
    }
    return 0;
}
