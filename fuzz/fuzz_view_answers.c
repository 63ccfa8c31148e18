/*
 * fuzz_view_answers.c - libFuzzer target over the answers of `mprof view --serve`
 * (mprof__vindex_answer): any bytes as a request target, parsed and, when the parser takes it,
 * answered from the index of a real capture (the first byte picks one of two: a view_demo
 * capture with zones, plots and frames, and one with system tracing). Extreme ranges and widths
 * are what it looks for: an answer is always one JSON document, and an answer drawn per pixel
 * is bounded by the request's width, whatever its range: per level, zones and merged spans at
 * most 6w + 8; per plot and for CPU usage, points at most 2w + 4; per thread, off-CPU runs at
 * most 4w + 8. Build: cmake -DMPROF_BUILD_FUZZ=ON -DCMAKE_C_COMPILER=clang; the corpus in
 * fuzz/corpus/view_answers is replayed by ctest (fuzz_view_answers_replay).
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index.h"
#include "view/query.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef MPROF_FUZZ_CORPUS
#define MPROF_FUZZ_CORPUS "fuzz/corpus"
#endif

static mprof_vindex *indexes[2];

static mprof_vindex *open_index(const char *capture, int k)
{
    char idx[256], err[512];
    snprintf(idx, sizeof idx, "/tmp/mprof-fuzz-answers-%ld-%d.vidx", (long)getpid(), k);
    if (mprof__vindex_build(capture, idx, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_view_answers: %s: %s\n", capture, err);
        abort();
    }
    mprof_vindex *x = mprof__vindex_open_built(idx, err, sizeof err);
    if (!x) {
        fprintf(stderr, "fuzz_view_answers: %s\n", err);
        abort();
    }
    unlink(idx); /* the mapping stays */
    return x;
}

/* The number of elements of array key in each member of the array list, at most limit each. */
static void check_per_item(const cJSON *list, const char *key, int per, long limit)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        long n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(it, key)) / per;
        if (n > limit)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!indexes[0]) {
        indexes[0] = open_index(MPROF_FUZZ_CORPUS "/timeline/view_demo_seed.mprof", 0);
        indexes[1] = open_index(MPROF_FUZZ_CORPUS "/timeline/system_switches_samples.mprof", 1);
    }
    if (!size)
        return 0;
    mprof_vindex *x = indexes[data[0] & 1];
    mprof_vquery q;
    char err[256];
    if (mprof__vquery_parse((const char *)data + 1, size - 1, &q, err, sizeof err) != 0)
        return 0;
    if (q.kind == MPROF_VQ_ASSET || q.kind == MPROF_VQ_LIVE)
        return 0;
    if (q.has_t && (mprof__vq_px_ns(&q) < 1 ||
                    (uint64_t)q.t1 - (uint64_t)q.t0 > (uint64_t)MPROF_VQ_MAX_SPAN_NS))
        abort();
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return 0;
    int rc = mprof__vindex_answer(x, &q, m, err, sizeof err);
    fclose(m);
    if (rc != 0) {
        if (!memchr(err, 0, sizeof err) || !err[0])
            abort(); /* a refusal says why */
        free(buf);
        return 0;
    }
    cJSON *j = cJSON_ParseWithLength(buf, len);
    if (!j)
        abort(); /* every answer is one JSON document */
    long w = (long)q.w;
    if (q.kind == MPROF_VQ_ZONES) {
        const cJSON *lv;
        cJSON_ArrayForEach(lv, cJSON_GetObjectItemCaseSensitive(j, "levels"))
        {
            long z = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(lv, "z")) / 4;
            long mg = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(lv, "m")) / 3;
            if (z + mg > 6 * w + 8)
                abort();
        }
    } else if (q.kind == MPROF_VQ_PLOTS) {
        check_per_item(cJSON_GetObjectItemCaseSensitive(j, "plots"), "p", 3, 2 * w + 4);
    } else if (q.kind == MPROF_VQ_CPU) {
        if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "p")) / 5 > 2 * w + 4)
            abort();
    } else if (q.kind == MPROF_VQ_STATES) {
        check_per_item(cJSON_GetObjectItemCaseSensitive(j, "threads"), "r", 4, 4 * w + 8);
    } else if (q.kind == MPROF_VQ_FRAMES) {
        if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "f")) / 3 > w)
            abort();
    }
    cJSON_Delete(j);
    free(buf);
    return 0;
}
