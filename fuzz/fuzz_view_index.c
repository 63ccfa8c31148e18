/*
 * fuzz_view_index.c - libFuzzer target over the index reader of `mprof view --serve`
 * (src/view/index_open.c, index_block.c and the answers): any bytes as an index file, opened as
 * the server opens one, then asked every kind of query over its whole span and a part of it. The
 * checksums are skipped (mprof__vidx_fuzz_no_checksum), so mutated inputs reach the directory
 * checks and the block decoders behind them; the checksums themselves are tested in
 * tests/test_view_agree.c. Nothing may crash, read outside what was read, or leak; a refused index
 * or query says why.
 *
 * Build: cmake -DMPROF_BUILD_FUZZ=ON -DCMAKE_C_COMPILER=clang. The corpus in fuzz/corpus/view_index
 * (indexes, version 9, of tests/view_demo captures: 3 frames; 2 frames with a recursion 8 deep;
 * 4 frames of 300 tiny zones, which have tiers of detail; 3 frames with async spans, whose lanes
 * carry their threads; 3 frames sampled at 1 kHz, whose system section has off-CPU intervals,
 * samples and lock spans in runs) is replayed by ctest (fuzz_view_index_replay).
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index_block.h"
#include "view/query.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void remove_file(void)
{
    unlink(path);
}

static void ask(const mprof_vindex *x, const char *target)
{
    mprof_vquery q;
    char err[256];
    if (mprof__vquery_parse(target, strlen(target), &q, err, sizeof err) != 0)
        abort(); /* the target's own queries are well formed */
    FILE *null = fopen("/dev/null", "w");
    if (!null)
        return;
    err[0] = 0;
    if (mprof__vindex_answer(x, &q, null, err, sizeof err) != 0 && !err[0])
        abort(); /* a refusal says why */
    fclose(null);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mprof__vidx_fuzz_no_checksum = 1;
    if (!path[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%.40s/mprof-fuzz-vidx-%ld", tmp && *tmp ? tmp : "/tmp", (long)getpid());
        atexit(remove_file);
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    char err[256];
    mprof_vindex *x = mprof__vindex_open_built(path, err, sizeof err);
    if (!x) {
        if (!err[0])
            abort();
        return 0;
    }
    int64_t t0 = x->d->min_s, t1 = x->d->max_e > t0 ? x->d->max_e : t0 + 1;
    int64_t mid = t0 + (t1 - t0) / 3;
    uint32_t w = size ? 1 + data[size - 1] * 61u : 700;
    char q[256];
    const char *fixed[] = {"/api/meta", "/api/system", "/api/frames?w=7", "/api/frames?w=3&set=1", "/api/pairs"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] - 1; i++)
        ask(x, fixed[i]);
    const char *ranged[] = {"/api/zones?t0=%lld&t1=%lld&w=%u", "/api/zones?t0=%lld&t1=%lld&w=%u&lod=0",
                            "/api/plots?t0=%lld&t1=%lld&w=%u", "/api/states?t0=%lld&t1=%lld&w=%u",
                            "/api/cpu?t0=%lld&t1=%lld&w=%u"};
    const char *plain[] = {"/api/stats?t0=%lld&t1=%lld", "/api/stats?t0=%lld&t1=%lld&set=0",
                           "/api/messages?t0=%lld&t1=%lld&limit=50", "/api/samples?t0=%lld&t1=%lld",
                           "/api/locks?t0=%lld&t1=%lld"};
    for (int part = 0; part < 2; part++) {
        long long a = part ? (long long)mid : (long long)t0 - 1, b = part ? (long long)mid + (t1 - t0) / 4 + 1 : (long long)t1 + 1;
        for (size_t i = 0; i < sizeof ranged / sizeof ranged[0]; i++) {
            snprintf(q, sizeof q, ranged[i], a, b, w > 16384 ? 16384u : w);
            ask(x, q);
        }
        for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
            snprintf(q, sizeof q, plain[i], a, b);
            ask(x, q);
        }
    }
    /* Find zone over the first few locations that have zones. */
    for (uint64_t i = 0; i < x->d->n_locs && i < 4; i++) {
        snprintf(q, sizeof q, "/api/hist?loc=%u", x->locs[i].slot);
        ask(x, q);
        snprintf(q, sizeof q, "/api/hist?loc=%u&t0=%lld&t1=%lld", x->locs[i].slot, (long long)mid, (long long)t1 + 1);
        ask(x, q);
        snprintf(q, sizeof q, "/api/instances?loc=%u&limit=5", x->locs[i].slot);
        ask(x, q);
    }
    ask(x, "/api/image?frame=0");
    mprof__vindex_close(x);
    return 0;
}
