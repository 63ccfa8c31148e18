/*
 * writer.c - framing of capture files: the file header and self-checking chunks.
 *
 * A chunk is [magic u32][kind u8][codec u8][flags u16][stored_len u32][raw_len u32][checksum u64]
 * then stored_len payload bytes. The checksum is XXH3-64 of the payload seeded with XXH3-64 of
 * the first 16 header bytes, so a flipped bit in the header or the payload is caught. xxHash is
 * used (libxxhash) because it is the fastest well-kept checksum in Debian and zstd already
 * depends on the same family.
 */
#include "format/format.h"

#include <xxhash.h>
#include <zstd.h>

void mprof_fmt_file_header(unsigned char out[MPROF_FMT_HEADER_BYTES])
{
    memcpy(out, MPROF_FMT_MAGIC, MPROF_FMT_MAGIC_LEN);
    mprof_wr_u16(out + 8, MPROF_FMT_VERSION_MAJOR);
    mprof_wr_u16(out + 10, MPROF_FMT_VERSION_MINOR);
    mprof_wr_u32(out + 12, 0); /* flags, reserved */
}

static uint64_t chunk_checksum(const unsigned char *header, const void *payload, size_t len)
{
    XXH64_hash_t seed = XXH3_64bits(header, 16);
    return XXH3_64bits_withSeed(payload, len, seed);
}

int mprof_fmt_chunk(mprof_buf *out, int kind, const void *payload, size_t len, int level,
                    void *cctx)
{
    return mprof_fmt_chunk_ex(out, kind, 0, payload, len, level, cctx);
}

int mprof_fmt_chunk_ex(mprof_buf *out, int kind, unsigned flags, const void *payload, size_t len,
                       int level, void *cctx)
{
    if (len > MPROF_FMT_MAX_CHUNK_BYTES)
        return -1;
    size_t bound = level > 0 ? ZSTD_compressBound(len) : len;
    if (mprof_buf_reserve(out, MPROF_FMT_CHUNK_HEADER_BYTES + bound) != 0)
        return -1;
    unsigned char *h = out->data + out->len;
    unsigned char *body = h + MPROF_FMT_CHUNK_HEADER_BYTES;
    int codec = MPROF_CODEC_NONE;
    size_t stored = len;
    if (level > 0 && len > 0) {
        ZSTD_CCtx *own = NULL;
        ZSTD_CCtx *c = cctx;
        if (!c)
            c = own = ZSTD_createCCtx();
        if (!c)
            return -1;
        size_t n = ZSTD_compressCCtx(c, body, bound, payload, len, level);
        ZSTD_freeCCtx(own);
        if (!ZSTD_isError(n) && n < len) {
            codec = MPROF_CODEC_ZSTD;
            stored = n;
        }
    }
    if (codec == MPROF_CODEC_NONE && len)
        memcpy(body, payload, len);
    mprof_wr_u32(h, MPROF_FMT_CHUNK_MAGIC);
    h[4] = (unsigned char)kind;
    h[5] = (unsigned char)codec;
    mprof_wr_u16(h + 6, (uint16_t)flags);
    mprof_wr_u32(h + 8, (uint32_t)stored);
    mprof_wr_u32(h + 12, (uint32_t)len);
    mprof_wr_u64(h + 16, chunk_checksum(h, body, stored));
    out->len += MPROF_FMT_CHUNK_HEADER_BYTES + stored;
    return 0;
}

int mprof_fmt_kv(mprof_buf *b, const char *key, const char *value)
{
    size_t kl = strlen(key), vl = strlen(value);
    if (mprof_buf_reserve(b, kl + vl + 20) != 0)
        return -1;
    unsigned char *p = b->data + b->len;
    p = mprof_put_str(p, key, kl);
    p = mprof_put_str(p, value, vl);
    b->len = (size_t)(p - b->data);
    return 0;
}

const char *mprof_fmt_check_chunk_header(const unsigned char h[MPROF_FMT_CHUNK_HEADER_BYTES],
                                         int *kind, int *codec, uint32_t *stored_len,
                                         uint32_t *raw_len)
{
    if (mprof_rd_u32(h) != MPROF_FMT_CHUNK_MAGIC)
        return "bad chunk magic";
    *kind = h[4];
    *codec = h[5];
    *stored_len = mprof_rd_u32(h + 8);
    *raw_len = mprof_rd_u32(h + 12);
    if (*codec != MPROF_CODEC_NONE && *codec != MPROF_CODEC_ZSTD)
        return "unknown chunk codec";
    if (*stored_len > MPROF_FMT_MAX_CHUNK_BYTES || *raw_len > MPROF_FMT_MAX_CHUNK_BYTES)
        return "chunk larger than the format allows";
    if (*codec == MPROF_CODEC_NONE && *stored_len != *raw_len)
        return "stored chunk with mismatched lengths (its header is damaged)";
    return NULL;
}

int mprof_fmt_chunk_verify(const unsigned char h[MPROF_FMT_CHUNK_HEADER_BYTES],
                           const void *payload, size_t stored_len)
{
    return chunk_checksum(h, payload, stored_len) == mprof_rd_u64(h + 16) ? 0 : -1;
}
