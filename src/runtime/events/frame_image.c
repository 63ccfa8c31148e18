/*
 * frame_image.c - MPROF_FRAME_IMAGE: a small thumbnail of a frame, stored in the capture.
 *
 * The caller's RGBA picture is box-filtered down to fit 96 x 54 (aspect kept, never enlarged),
 * kept as RGB888 rows and compressed with zstd level 1 in the calling thread (31 KB of
 * scratch memory from malloc for the call), then written as one
 * FRAME_IMAGE record (format 1.1, tag 0x58: TS, width, height, codec 1, the compressed bytes) of
 * the thread's buffer. A thumbnail is at most 15,552 raw bytes, so the record always fits a block;
 * when the buffer is full it is lost and counted like any event. Work and memory are bounded by
 * the thumbnail: the source is read once, row by row.
 */
#include "buffers.h"
#include "lifecycle.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define THUMB_W 96u
#define THUMB_H 54u
#define THUMB_RAW (THUMB_W * THUMB_H * 3u)

void mprof__frame_image(const void *rgba, uint32_t width, uint32_t height)
{
    if (!rgba || !width || !height || !mprof__thread_get())
        return;
    /* Thumbnail size: fit in THUMB_W x THUMB_H, keep the aspect. */
    uint32_t tw = width, th = height;
    if (tw > THUMB_W || th > THUMB_H) {
        double sx = (double)THUMB_W / width, sy = (double)THUMB_H / height, sc = sx < sy ? sx : sy;
        tw = (uint32_t)(width * sc);
        th = (uint32_t)(height * sc);
        tw = tw ? tw : 1;
        th = th ? th : 1;
    }
    /* The two buffers (31 KB) are allocated per call rather than put on a game thread's stack. */
    unsigned char *raw = malloc(THUMB_RAW + ZSTD_COMPRESSBOUND(THUMB_RAW));
    if (!raw)
        return;
    unsigned char *packed = raw + THUMB_RAW;
    uint32_t acc[THUMB_W * 3];
    const unsigned char *src = rgba;
    for (uint32_t y = 0; y < th; y++) {
        uint32_t y0 = (uint32_t)((uint64_t)y * height / th), y1 = (uint32_t)((uint64_t)(y + 1) * height / th);
        if (y1 <= y0)
            y1 = y0 + 1;
        memset(acc, 0, sizeof acc);
        uint32_t rows = y1 - y0;
        for (uint32_t sy = y0; sy < y1; sy++) {
            const unsigned char *row = src + (size_t)sy * width * 4;
            for (uint32_t x = 0; x < tw; x++) {
                uint32_t x0 = (uint32_t)((uint64_t)x * width / tw), x1 = (uint32_t)((uint64_t)(x + 1) * width / tw);
                if (x1 <= x0)
                    x1 = x0 + 1;
                for (uint32_t sx = x0; sx < x1; sx++) {
                    acc[3 * x] += row[4 * sx];
                    acc[3 * x + 1] += row[4 * sx + 1];
                    acc[3 * x + 2] += row[4 * sx + 2];
                }
            }
        }
        for (uint32_t x = 0; x < tw; x++) {
            uint32_t x0 = (uint32_t)((uint64_t)x * width / tw), x1 = (uint32_t)((uint64_t)(x + 1) * width / tw);
            uint32_t n = (x1 > x0 ? x1 - x0 : 1) * rows;
            for (int c = 0; c < 3; c++)
                raw[((size_t)y * tw + x) * 3 + (size_t)c] = (unsigned char)((acc[3 * x + (uint32_t)c] + n / 2) / n);
        }
    }
    size_t raw_len = (size_t)tw * th * 3;
    size_t n = ZSTD_compress(packed, ZSTD_COMPRESSBOUND(THUMB_RAW), raw, raw_len, 1);
    unsigned char *p = ZSTD_isError(n) ? NULL : mprof__reserve(1 + 8 + 4 + 4 + 1 + MPROF__STR_BYTES(n));
    if (!p) {
        free(raw);
        return;
    }
    p[0] = MPROF_EV_FRAME_IMAGE;
    p = mprof__w_ts(p + 1);
    p = mprof__w_u32(p, tw);
    p = mprof__w_u32(p, th);
    p = mprof__w_u8(p, 1);
    mprof__commit(mprof__w_str(p, (const char *)packed, n));
    free(raw);
}
