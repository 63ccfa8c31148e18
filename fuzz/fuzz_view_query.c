/*
 * fuzz_view_query.c - libFuzzer target over the request parser of `mprof view --serve`
 * (src/view/query.c): any bytes as a request target. What it accepts must hold the
 * parser's promises (a known kind, t1 > t0 when times are given, a width in 1..16384, a page
 * file name without ".." that the file table can be asked for). Build: cmake -DMPROF_BUILD_FUZZ=ON
 * -DCMAKE_C_COMPILER=clang; the corpus in fuzz/corpus/view_query is replayed by ctest
 * (fuzz_view_query_replay).
 */
#include "view/page_files.h"
#include "view/query.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mprof_vquery q;
    char err[256];
    if (mprof__vquery_parse((const char *)data, size, &q, err, sizeof err) != 0) {
        if (!memchr(err, 0, sizeof err) || !err[0])
            abort(); /* a refusal always says why */
        return 0;
    }
    if (q.kind <= MPROF_VQ_NONE || q.kind > MPROF_VQ_ASSET)
        abort();
    if (q.has_t && q.t1 <= q.t0)
        abort();
    if ((q.kind == MPROF_VQ_ZONES || q.kind == MPROF_VQ_PLOTS || q.kind == MPROF_VQ_FRAMES) &&
        (q.w < 1 || q.w > 16384))
        abort();
    if (q.has_frames && q.to < q.from)
        abort();
    if (q.cap > 1)
        abort(); /* c= names one of two captures */
    if (q.no_lod && q.kind != MPROF_VQ_ZONES)
        abort(); /* lod is a key of /api/zones only */
    if (q.kind == MPROF_VQ_ASSET) {
        if (strstr(q.asset, "..") || q.asset[0] == '/' || !memchr(q.asset, 0, sizeof q.asset))
            abort();
        (void)mprof__view_file(q.asset);
    }
    return 0;
}
