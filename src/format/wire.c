/*
 * wire.c - encoders and decoders of the live-capture protocol (see wire.h).
 *
 * Everything here works on byte arrays, so the process, the tool and the fuzzer share one
 * implementation, and every length read from the peer is checked before it is used.
 */
#include "format/wire.h"

#include <stdarg.h>
#include <stdlib.h>
#include <zstd.h>

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return MPROF_WIRE_ERROR;
}

const char *mprof_wire_status_name(int status)
{
    switch (status) {
    case MPROF_WIRE_OK:
        return "OK";
    case MPROF_WIRE_BUSY:
        return "BUSY";
    case MPROF_WIRE_VERSION_MISMATCH:
        return "VERSION_MISMATCH";
    case MPROF_WIRE_BAD_HELLO:
        return "BAD_HELLO";
    default:
        return "UNKNOWN";
    }
}

void mprof_wire_encode_hello(unsigned char out[MPROF_WIRE_HELLO_BYTES], const mprof_wire_hello *h)
{
    memcpy(out, MPROF_WIRE_MAGIC, MPROF_WIRE_MAGIC_LEN);
    mprof_wr_u16(out + 8, h->version);
    mprof_wr_u16(out + 10, h->flags);
    mprof_wr_u32(out + 12, h->history_ms);
    mprof_wr_u32(out + 16, h->queue_mib);
    mprof_wr_u32(out + 20, 0);
}

int mprof_wire_decode_hello(const unsigned char *p, size_t n, mprof_wire_hello *out, char *err,
                            size_t errlen)
{
    size_t m = n < MPROF_WIRE_MAGIC_LEN ? n : MPROF_WIRE_MAGIC_LEN;
    if (memcmp(p, MPROF_WIRE_MAGIC, m) != 0)
        return fail(err, errlen, "not an mprof capture request (bad magic)");
    if (n < 10)
        return MPROF_WIRE_NEED_MORE;
    memset(out, 0, sizeof *out);
    out->version = mprof_rd_u16(p + 8);
    if (out->version != MPROF_WIRE_VERSION)
        return MPROF_WIRE_DONE; /* the rest belongs to another version: do not read it */
    if (n < MPROF_WIRE_HELLO_BYTES)
        return MPROF_WIRE_NEED_MORE;
    out->flags = mprof_rd_u16(p + 10);
    out->history_ms = mprof_rd_u32(p + 12);
    out->queue_mib = mprof_rd_u32(p + 16);
    return MPROF_WIRE_DONE;
}

int mprof_wire_encode_reply(mprof_buf *out, uint16_t status, const void *payload, size_t len)
{
    if (len > MPROF_WIRE_MAX_REPLY_PAYLOAD)
        return -1;
    if (mprof_buf_reserve(out, MPROF_WIRE_REPLY_HEADER_BYTES + len) != 0)
        return -1;
    unsigned char *h = out->data + out->len;
    memcpy(h, MPROF_WIRE_MAGIC, MPROF_WIRE_MAGIC_LEN);
    mprof_wr_u16(h + 8, MPROF_WIRE_VERSION);
    mprof_wr_u16(h + 10, status);
    mprof_wr_u32(h + 12, (uint32_t)len);
    if (len)
        memcpy(h + MPROF_WIRE_REPLY_HEADER_BYTES, payload, len);
    out->len += MPROF_WIRE_REPLY_HEADER_BYTES + len;
    return 0;
}

int mprof_wire_decode_reply(const unsigned char *p, size_t n, mprof_wire_reply *out,
                            size_t *consumed, char *err, size_t errlen)
{
    size_t m = n < MPROF_WIRE_MAGIC_LEN ? n : MPROF_WIRE_MAGIC_LEN;
    if (memcmp(p, MPROF_WIRE_MAGIC, m) != 0)
        return fail(err, errlen, "the peer is not an mprof-instrumented process (bad magic)");
    if (n < MPROF_WIRE_REPLY_HEADER_BYTES)
        return MPROF_WIRE_NEED_MORE;
    memset(out, 0, sizeof *out);
    out->version = mprof_rd_u16(p + 8);
    out->status = mprof_rd_u16(p + 10);
    out->payload_len = mprof_rd_u32(p + 12);
    if (out->payload_len > MPROF_WIRE_MAX_REPLY_PAYLOAD)
        return fail(err, errlen, "reply payload of %u bytes is larger than the protocol allows",
                    (unsigned)out->payload_len);
    if (n - MPROF_WIRE_REPLY_HEADER_BYTES < out->payload_len)
        return MPROF_WIRE_NEED_MORE;
    out->payload = p + MPROF_WIRE_REPLY_HEADER_BYTES;
    *consumed = MPROF_WIRE_REPLY_HEADER_BYTES + out->payload_len;
    return MPROF_WIRE_DONE;
}

int mprof_wire_next_chunk(const unsigned char *p, size_t n, mprof_wire_chunk *out,
                          size_t *consumed, char *err, size_t errlen)
{
    if (n < MPROF_FMT_CHUNK_HEADER_BYTES)
        return MPROF_WIRE_NEED_MORE;
    memset(out, 0, sizeof *out);
    const char *why = mprof_fmt_check_chunk_header(p, &out->kind, &out->codec, &out->stored_len,
                                                   &out->raw_len);
    if (why)
        return fail(err, errlen, "bad chunk in the stream: %s", why);
    if (out->kind != MPROF_CHUNK_EVENTS && out->kind != MPROF_CHUNK_END &&
        out->kind != MPROF_CHUNK_INFO && !(mprof_rd_u16(p + 6) & MPROF_CHUNK_F_OPTIONAL))
        return fail(err, errlen, "bad chunk in the stream: unknown kind %d", out->kind);
    if (n - MPROF_FMT_CHUNK_HEADER_BYTES < out->stored_len)
        return MPROF_WIRE_NEED_MORE;
    if (mprof_fmt_chunk_verify(p, p + MPROF_FMT_CHUNK_HEADER_BYTES, out->stored_len) != 0)
        return fail(err, errlen, "bad chunk in the stream: checksum mismatch");
    out->bytes = p;
    out->size = MPROF_FMT_CHUNK_HEADER_BYTES + (size_t)out->stored_len;
    *consumed = out->size;
    return MPROF_WIRE_DONE;
}

int mprof_wire_chunk_payload(const mprof_wire_chunk *ch, mprof_buf *raw, void *dctx, char *err,
                             size_t errlen)
{
    const unsigned char *body = ch->bytes + MPROF_FMT_CHUNK_HEADER_BYTES;
    raw->len = 0;
    if (mprof_buf_reserve(raw, ch->raw_len ? ch->raw_len : 1) != 0)
        return fail(err, errlen, "out of memory");
    if (ch->codec == MPROF_CODEC_NONE) {
        memcpy(raw->data, body, ch->raw_len);
    } else {
        size_t got = dctx ? ZSTD_decompressDCtx(dctx, raw->data, ch->raw_len, body, ch->stored_len)
                          : ZSTD_decompress(raw->data, ch->raw_len, body, ch->stored_len);
        if (ZSTD_isError(got) || got != ch->raw_len)
            return fail(err, errlen, "cannot decompress a chunk (%s)",
                        ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong length");
    }
    raw->len = ch->raw_len;
    return 0;
}

int mprof_wire_scan_events(const unsigned char *p, size_t n, mprof_wire_counts *c, char *err,
                           size_t errlen)
{
    const unsigned char *end = p + n;
    while (p < end) {
        int tag = *p++;
        if (MPROF_EV_IS_LEAF(tag)) { /* a zone begin and end in one byte (format 1.2) */
            c->events += 2;
            c->zones++;
            continue;
        }
        if (MPROF_EV_IS_LEAF_LONG(tag)) { /* the same with a varint length (format 1.4) */
            uint64_t d;
            if (mprof_get_varint(&p, end, &d))
                goto truncated;
            c->events += 2;
            c->zones++;
            continue;
        }
        const mprof_event_desc *d = mprof_event_desc_get(tag);
        if (!d)
            return fail(err, errlen, "unknown event tag 0x%02x in the stream", tag);
        uint64_t first = 0, second = 0;
        for (int i = 0; i < d->n_fields; i++) {
            uint64_t v = 0;
            if (mprof_get_field(&p, end, d->fields[i], &v))
                goto truncated;
            if (i == 0)
                first = v;
            else if (i == 1)
                second = v;
        }
        if (tag == MPROF_EV_DEF_CALLSTACK) {
            if (second > 256)
                return fail(err, errlen, "callstack deeper than 256 frames in the stream");
            for (uint64_t i = 0; i < second; i++) {
                uint64_t a;
                if (mprof_get_varint(&p, end, &a))
                    goto truncated;
            }
        }
        if (mprof_event_counted(tag))
            c->events++; /* as `mprof report` counts them */
        switch (tag) {
        case MPROF_EV_ZONE_BEGIN:
            c->zones++;
            break;
        case MPROF_EV_FRAME_MARK:
            c->frames++;
            break;
        case MPROF_EV_PLOT_F64:
        case MPROF_EV_PLOT_I64:
            c->plots++;
            break;
        case MPROF_EV_LOST:
            c->lost += second;
            break;
        case MPROF_EV_DEF_THREAD:
            if (first <= UINT32_MAX && first > c->max_thread)
                c->max_thread = (uint32_t)first;
            break;
        default:
            break;
        }
    }
    return 0;
truncated:
    return fail(err, errlen, "an event runs past the end of its chunk in the stream");
}

void mprof_wire_kv_get(const unsigned char *p, size_t n, const char *key, char *out, size_t outn)
{
    const unsigned char *end = p + n;
    size_t klen = strlen(key);
    out[0] = 0;
    while (p < end) {
        uint64_t kl, vl;
        if (mprof_get_varint(&p, end, &kl) || kl > (uint64_t)(end - p))
            return;
        const unsigned char *k = p;
        p += kl;
        if (mprof_get_varint(&p, end, &vl) || vl > (uint64_t)(end - p))
            return;
        if (kl == klen && memcmp(k, key, kl) == 0)
            snprintf(out, outn, "%.*s", (int)(vl < outn ? vl : outn - 1), (const char *)p);
        p += vl;
    }
}

int mprof_wire_kv_well_formed(const unsigned char *p, size_t n)
{
    const unsigned char *end = p + n;
    while (p < end) {
        uint64_t l;
        for (int i = 0; i < 2; i++) {
            if (mprof_get_varint(&p, end, &l) || l > (uint64_t)(end - p))
                return 0;
            p += l;
        }
    }
    return 1;
}

int mprof_wire_feed(mprof_wire_stream *s, const unsigned char *p, size_t n, size_t *consumed,
                    mprof_wire_chunk_fn fn, void *user)
{
    size_t pos = 0;
    int rc = MPROF_WIRE_NEED_MORE;
    while (!s->end_seen) {
        mprof_wire_chunk ch;
        size_t used = 0;
        rc = mprof_wire_next_chunk(p + pos, n - pos, &ch, &used, s->err, sizeof s->err);
        if (rc != MPROF_WIRE_DONE)
            break;
        /* The payload is checked before the chunk is stored, so a capture file only ever
         * holds chunks that decode. */
        int end = 0;
        if (ch.kind == MPROF_CHUNK_EVENTS || ch.kind == MPROF_CHUNK_END) {
            if (!s->dctx && ch.codec == MPROF_CODEC_ZSTD && !(s->dctx = ZSTD_createDCtx())) {
                rc = fail(s->err, sizeof s->err, "out of memory");
                break;
            }
            if (mprof_wire_chunk_payload(&ch, &s->raw, s->dctx, s->err, sizeof s->err) != 0) {
                rc = MPROF_WIRE_ERROR;
                break;
            }
            if (ch.kind == MPROF_CHUNK_EVENTS) {
                if (mprof_wire_scan_events(s->raw.data, s->raw.len, &s->counts, s->err,
                                           sizeof s->err) != 0) {
                    rc = MPROF_WIRE_ERROR;
                    break;
                }
            } else {
                char v[32];
                mprof_wire_kv_get(s->raw.data, s->raw.len, "events_lost", v, sizeof v);
                s->end_events_lost = strtoull(v, NULL, 10);
                end = 1;
            }
        }
        if (fn && fn(user, &ch) != 0) {
            snprintf(s->err, sizeof s->err, "cannot store a chunk");
            rc = MPROF_WIRE_ERROR;
            break;
        }
        pos += used;
        s->chunks++;
        s->end_seen = end;
    }
    *consumed = pos;
    if (s->end_seen)
        return MPROF_WIRE_DONE;
    return rc == MPROF_WIRE_ERROR ? MPROF_WIRE_ERROR : MPROF_WIRE_NEED_MORE;
}

void mprof_wire_stream_free(mprof_wire_stream *s)
{
    mprof_buf_free(&s->raw);
    ZSTD_freeDCtx(s->dctx);
    s->dctx = NULL;
}
