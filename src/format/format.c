/*
 * format.c - the event table and the small encoders shared by the writer and the reader.
 *
 * The table in format.h is expanded here into mprof_event_descs[], indexed by tag, with each
 * event's field kinds and the fixed part of its raw size, so every consumer walks records the
 * same way.
 */
#include "format/format.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static uint16_t raw_width(uint8_t kind)
{
    switch (kind) {
    case MPROF_F_U8:
        return 1;
    case MPROF_F_U32:
        return 4;
    case MPROF_F_STR:
        return 2; /* the length; the bytes follow */
    case MPROF_F_CS:
        return 1; /* the depth; the addresses follow */
    default:
        return 8;
    }
}

#define DESC_ENTRY(name_, tag_, ...) [tag_] = {#name_, {__VA_ARGS__, MPROF_F_END}, 0, 0, 0},
static mprof_event_desc descs[MPROF_EV_MAX] = {MPROF_EVENT_TABLE(DESC_ENTRY)};
#undef DESC_ENTRY

/* n_fields, has_ts and raw_fixed are derived from the field lists once. */
static _Atomic int derived;
static void derive(void)
{
    for (int t = 0; t < MPROF_EV_MAX; t++) {
        mprof_event_desc *d = &descs[t];
        if (!d->name)
            continue;
        uint16_t raw = 1;
        uint8_t n = 0;
        while (n < MPROF_MAX_FIELDS && d->fields[n] != MPROF_F_END) {
            raw = (uint16_t)(raw + raw_width(d->fields[n]));
            n++;
        }
        d->n_fields = n;
        d->has_ts = d->fields[0] == MPROF_F_TS;
        d->raw_fixed = raw;
    }
    atomic_store_explicit(&derived, 1, memory_order_release);
}

static pthread_once_t derive_once = PTHREAD_ONCE_INIT;

const mprof_event_desc *mprof_event_desc_get(int tag)
{
    /* The readers ask once an event: after the first time, one load instead of a call. */
    if (!atomic_load_explicit(&derived, memory_order_acquire))
        pthread_once(&derive_once, derive);
    if (tag < 0 || tag >= MPROF_EV_MAX || !descs[tag].name)
        return NULL;
    return &descs[tag];
}

int mprof_buf_reserve(mprof_buf *b, size_t extra)
{
    if (b->cap - b->len >= extra)
        return 0;
    size_t want = b->cap ? b->cap : 4096;
    while (want - b->len < extra) {
        if (want > SIZE_MAX / 2)
            return -1;
        want *= 2;
    }
    unsigned char *p = realloc(b->data, want);
    if (!p)
        return -1;
    b->data = p;
    b->cap = want;
    return 0;
}

void mprof_buf_free(mprof_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int mprof_grow_zeroed(void **arr, uint32_t *n, uint32_t idx, size_t es, uint32_t limit)
{
    if (idx < *n)
        return 0;
    if (idx >= limit)
        return -1;
    uint64_t nn = *n ? *n : 16;
    while (nn <= idx)
        nn *= 2;
    if (nn > limit)
        nn = limit;
    void *p = realloc(*arr, (size_t)nn * es);
    if (!p)
        return -1;
    memset((char *)p + (size_t)*n * es, 0, (size_t)(nn - *n) * es);
    *arr = p;
    *n = (uint32_t)nn;
    return 0;
}

int mprof_get_field(const unsigned char **p, const unsigned char *end, int kind, uint64_t *out)
{
    const unsigned char *q = *p;
    switch (kind) {
    case MPROF_F_U8:
        if (q >= end)
            return -1;
        *out = *q;
        *p = q + 1;
        return 0;
    case MPROF_F_F64:
        if (end - q < 8)
            return -1;
        *out = mprof_rd_u64(q);
        *p = q + 8;
        return 0;
    case MPROF_F_STR:
        if (mprof_get_varint(&q, end, out) || *out > (uint64_t)(end - q))
            return -1;
        *p = q + *out;
        return 0;
    default:
        return mprof_get_varint(p, end, out);
    }
}

int mprof_get_varint(const unsigned char **p, const unsigned char *end, uint64_t *out)
{
    const unsigned char *q = *p;
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (q >= end)
            return -1;
        unsigned char c = *q++;
        if (shift == 63 && c > 1)
            return -1;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *p = q;
            *out = v;
            return 0;
        }
    }
    return -1;
}
