/*
 * mprof/cuda.h - GPU zones for CUDA streams (header-only helper over mprof.h's generic GPU
 * context API, using the CUDA runtime's events). See docs/GPU.md.
 *
 * Overview
 *   One mprof_cuda_ctx per device. It owns a pool of timing events; a zone records an event on
 *   the stream at its start and end (cudaEventRecord) and notes, on the CPU, when it was issued.
 *   MPROF_CUDA_COLLECT() asks each issued event whether it has completed (cudaEventQuery: never
 *   waits) and uploads the finished ones. CUDA events carry no absolute time, only differences
 *   (cudaEventElapsedTime), so the context keeps *reference* events: calibration records one on
 *   a private non-blocking stream between two CPU clock reads and waits for it; every zone event
 *   is then timed against the newest reference, and references are chained to each other, which
 *   gives one nanosecond timeline per device. Resolution is CUDA's (about half a microsecond).
 *
 * Step by step
 *   mprof_cuda_config c = {0};
 *   mprof_cuda_ctx *cu = NULL;
 *   mprof_cuda_context_create(&c, &cu);            (current device; cu NULL on failure)
 *   each frame:  MPROF_CUDA_COLLECT(cu);
 *                { MPROF_CUDA_ZONE(cu, stream, "Solve"); kernel<<<g, b, 0, stream>>>(...); }
 *   at exit:     cudaDeviceSynchronize(); mprof_cuda_context_destroy(cu);
 *
 * Compile-time options
 *   Without MPROF_ENABLE the macros expand to ((void)0) or a typed constant without evaluating
 *   their arguments and the functions are inline no-ops (create returns MPROF_ERR_UNSUPPORTED).
 *   Link the CUDA runtime (CUDA::cudart) when MPROF_ENABLE is defined.
 *
 * Threading
 *   Zones: any thread, but one context's zones must not be issued concurrently from two threads
 *   (the event pool is shared without a lock). create, collect, calibrate, destroy: one thread.
 */
#ifndef MPROF_CUDA_H
#define MPROF_CUDA_H

#include "mprof/mprof.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPROF_CUDA__REFS 16

typedef struct mprof_cuda_config {
    const char *name;               /* context name, a literal; default "CUDA" */
    uint32_t n_queries;             /* timing events; default 1024 (512 zones in flight) */
    uint32_t calibrate_interval_ms; /* collect adds a reference this often; default 1000 */
} mprof_cuda_config;

/* One device timeline. Fields are private to this header. */
typedef struct mprof_cuda_ctx {
    mprof_gpu_ctx gpu;
    uint32_t n_queries;
    cudaEvent_t *events;
    unsigned char *issued; /* per id: recorded, not yet uploaded */
    unsigned char *ref_of; /* per id: the reference it is timed against */
    cudaStream_t cal_stream;
    cudaEvent_t refs[MPROF_CUDA__REFS];
    int64_t ref_ns[MPROF_CUDA__REFS]; /* GPU time of each reference on the device timeline */
    uint32_t cur_ref;
    int have_ref;
    uint64_t calib_interval_ns;
    uint64_t last_calib_ns;
    uint64_t results;
} mprof_cuda_ctx;

typedef struct mprof_cuda__scope {
    mprof_cuda_ctx *ctx;
    cudaStream_t stream;
    uint32_t query;
} mprof_cuda__scope;

#if defined(MPROF_ENABLE)

/* Adds a reference event now: records it on the private stream between two CPU clock reads and
 * waits for it (microseconds; the stream has no other work). GPU time of the first reference is
 * 0; later ones are placed by their elapsed time from the previous. Thread that collects. */
static inline mprof_result mprof_cuda_calibrate(mprof_cuda_ctx *ctx)
{
    if (!ctx)
        return MPROF_ERR_INVALID;
    uint32_t next = ctx->have_ref ? (ctx->cur_ref + 1) % MPROF_CUDA__REFS : 0;
    uint64_t t0 = mprof_now_ns();
    if (cudaEventRecord(ctx->refs[next], ctx->cal_stream) != cudaSuccess ||
        cudaEventSynchronize(ctx->refs[next]) != cudaSuccess)
        return MPROF_ERR_IO;
    uint64_t t1 = mprof_now_ns();
    int64_t gpu_ns = 0;
    if (ctx->have_ref) {
        float ms = 0.0f;
        if (cudaEventElapsedTime(&ms, ctx->refs[ctx->cur_ref], ctx->refs[next]) != cudaSuccess)
            return MPROF_ERR_IO;
        gpu_ns = ctx->ref_ns[ctx->cur_ref] + (int64_t)((double)ms * 1e6);
    }
    ctx->ref_ns[next] = gpu_ns;
    ctx->cur_ref = next;
    ctx->have_ref = 1;
    mprof_gpu_calibrate(ctx->gpu, gpu_ns, t0 + (t1 - t0) / 2);
    ctx->last_calib_ns = t1;
    return MPROF_OK;
}

static inline void mprof_cuda__free(mprof_cuda_ctx *ctx)
{
    if (ctx->events) {
        for (uint32_t i = 0; i < ctx->n_queries; i++)
            if (ctx->events[i])
                cudaEventDestroy(ctx->events[i]);
    }
    for (int i = 0; i < MPROF_CUDA__REFS; i++)
        if (ctx->refs[i])
            cudaEventDestroy(ctx->refs[i]);
    if (ctx->cal_stream)
        cudaStreamDestroy(ctx->cal_stream);
    mprof_gpu_context_destroy(ctx->gpu);
    free(ctx->events);
    free(ctx->issued);
    free(ctx->ref_of);
    free(ctx);
}

/* Creates the context on the current device: events, the calibration stream, a first reference.
 * *out_ctx gets it, or NULL on failure: MPROF_ERR_INVALID, MPROF_ERR_UNSUPPORTED (no CUDA
 * device), MPROF_ERR_NOMEM, MPROF_ERR_IO. */
static inline mprof_result mprof_cuda_context_create(const mprof_cuda_config *cfg,
                                                     mprof_cuda_ctx **out_ctx)
{
    if (!out_ctx)
        return MPROF_ERR_INVALID;
    *out_ctx = NULL;
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0)
        return MPROF_ERR_UNSUPPORTED;
    mprof_cuda_ctx *ctx = (mprof_cuda_ctx *)calloc(1, sizeof *ctx);
    if (!ctx)
        return MPROF_ERR_NOMEM;
    ctx->n_queries = cfg && cfg->n_queries ? cfg->n_queries & ~1u : 1024u;
    if (ctx->n_queries < 2)
        ctx->n_queries = 2;
    ctx->calib_interval_ns =
        (uint64_t)(cfg && cfg->calibrate_interval_ms ? cfg->calibrate_interval_ms : 1000u) *
        1000000u;
    mprof_result res = MPROF_ERR_NOMEM;
    ctx->events = (cudaEvent_t *)calloc(ctx->n_queries, sizeof *ctx->events);
    ctx->issued = (unsigned char *)calloc(ctx->n_queries, 1);
    ctx->ref_of = (unsigned char *)calloc(ctx->n_queries, 1);
    if (!ctx->events || !ctx->issued || !ctx->ref_of)
        goto fail;
    res = MPROF_ERR_IO;
    for (uint32_t i = 0; i < ctx->n_queries; i++)
        if (cudaEventCreateWithFlags(&ctx->events[i], cudaEventDefault) != cudaSuccess)
            goto fail;
    for (int i = 0; i < MPROF_CUDA__REFS; i++)
        if (cudaEventCreateWithFlags(&ctx->refs[i], cudaEventDefault) != cudaSuccess)
            goto fail;
    if (cudaStreamCreateWithFlags(&ctx->cal_stream, cudaStreamNonBlocking) != cudaSuccess)
        goto fail;
    /* The device timeline is in nanoseconds. */
    ctx->gpu = mprof_gpu_context_new(cfg && cfg->name ? cfg->name : "CUDA", MPROF_GPU_API_CUDA,
                                     1.0, ctx->n_queries);
    res = MPROF_ERR_NOMEM;
    if (!ctx->gpu)
        goto fail;
    res = mprof_cuda_calibrate(ctx);
    if (res != MPROF_OK)
        goto fail;
    *out_ctx = ctx;
    return MPROF_OK;
fail:
    mprof_cuda__free(ctx);
    return res;
}

/* Uploads every issued event that has completed, without waiting; adds a reference when due.
 * Returns the number of timestamps uploaded. */
static inline uint32_t mprof_cuda_collect(mprof_cuda_ctx *ctx)
{
    if (!ctx)
        return 0;
    uint32_t first = 0, n = 0;
    uint32_t count = mprof_gpu_pending(ctx->gpu, &first);
    if (count > ctx->n_queries)
        count = ctx->n_queries;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t q = first + i;
        if (q >= ctx->n_queries)
            q -= ctx->n_queries;
        if (!ctx->issued[q] || cudaEventQuery(ctx->events[q]) != cudaSuccess)
            continue;
        float ms = 0.0f;
        uint32_t r = ctx->ref_of[q];
        if (cudaEventElapsedTime(&ms, ctx->refs[r], ctx->events[q]) != cudaSuccess)
            continue;
        ctx->issued[q] = 0;
        mprof_gpu_time(ctx->gpu, q, ctx->ref_ns[r] + (int64_t)((double)ms * 1e6));
        n++;
    }
    ctx->results += n;
    if (mprof_now_ns() - ctx->last_calib_ns >= ctx->calib_interval_ns)
        (void)mprof_cuda_calibrate(ctx);
    return n;
}

/* Uploads what has completed and frees everything; cudaDeviceSynchronize() first so that is
 * everything. destroy(NULL) is a no-op. */
static inline void mprof_cuda_context_destroy(mprof_cuda_ctx *ctx)
{
    if (!ctx)
        return;
    (void)mprof_cuda_collect(ctx);
    mprof_cuda__free(ctx);
}

static inline uint64_t mprof_cuda_results(const mprof_cuda_ctx *ctx)
{
    return ctx ? ctx->results : 0;
}

static inline void mprof_cuda__record(mprof_cuda_ctx *ctx, cudaStream_t stream, uint32_t q)
{
    /* When recording fails (a broken CUDA context), nothing will come back for q: its pair
     * stays in flight, like a query never submitted. */
    ctx->issued[q] = cudaEventRecord(ctx->events[q], stream) == cudaSuccess;
    ctx->ref_of[q] = (unsigned char)ctx->cur_ref;
}

static inline uint32_t mprof_cuda__zone_begin(mprof_cuda_ctx *ctx, cudaStream_t stream,
                                              const mprof_srcloc *loc)
{
    if (!ctx)
        return MPROF_GPU_NO_QUERY;
    uint32_t q = mprof_gpu_zone_begin(ctx->gpu, loc);
    if (q != MPROF_GPU_NO_QUERY)
        mprof_cuda__record(ctx, stream, q);
    return q;
}

static inline void mprof_cuda__zone_end(mprof_cuda_ctx *ctx, cudaStream_t stream, uint32_t query)
{
    if (!ctx || query == MPROF_GPU_NO_QUERY)
        return;
    uint32_t q = mprof_gpu_zone_end(ctx->gpu, query);
    if (q != MPROF_GPU_NO_QUERY)
        mprof_cuda__record(ctx, stream, q);
}

static inline void mprof_cuda__scope_end(mprof_cuda__scope *s)
{
    mprof_cuda__zone_end(s->ctx, s->stream, s->query);
}

#ifndef MPROF_NO_CLEANUP_ATTR
#define MPROF_CUDA_ZONE_C(ctx, stream, name, color)                                                \
    MPROF__SRCLOC(MPROF__CAT(mprof__culoc_, __LINE__), name, color);                              \
    mprof_cuda__scope MPROF__CAT(mprof__cuzone_, __LINE__)                                         \
        __attribute__((cleanup(mprof_cuda__scope_end), unused)) = {                                \
            (ctx), (stream),                                                                       \
            mprof_cuda__zone_begin((ctx), (stream), &MPROF__CAT(mprof__culoc_, __LINE__))}
#define MPROF_CUDA_ZONE(ctx, stream, name) MPROF_CUDA_ZONE_C(ctx, stream, name, 0)
#endif
#define MPROF_CUDA_ZONE_BEGIN_C(ctx, stream, name, color)                                          \
    mprof_cuda__zone_begin((ctx), (stream), ({                                                     \
                               MPROF__SRCLOC(mprof__loc_cu, name, color);                          \
                               &mprof__loc_cu;                                                     \
                           }))
#define MPROF_CUDA_ZONE_BEGIN(ctx, stream, name) MPROF_CUDA_ZONE_BEGIN_C(ctx, stream, name, 0)
#define MPROF_CUDA_ZONE_END(ctx, stream, query) mprof_cuda__zone_end((ctx), (stream), (query))
#define MPROF_CUDA_COLLECT(ctx) ((void)mprof_cuda_collect(ctx))

#else /* !MPROF_ENABLE */

static inline mprof_result mprof_cuda_context_create(const mprof_cuda_config *cfg,
                                                     mprof_cuda_ctx **out_ctx)
{
    (void)cfg;
    if (out_ctx)
        *out_ctx = NULL;
    return MPROF_ERR_UNSUPPORTED;
}
static inline void mprof_cuda_context_destroy(mprof_cuda_ctx *ctx) { (void)ctx; }
static inline mprof_result mprof_cuda_calibrate(mprof_cuda_ctx *ctx)
{
    (void)ctx;
    return MPROF_ERR_UNSUPPORTED;
}
static inline uint32_t mprof_cuda_collect(mprof_cuda_ctx *ctx)
{
    (void)ctx;
    return 0;
}
static inline uint64_t mprof_cuda_results(const mprof_cuda_ctx *ctx)
{
    (void)ctx;
    return 0;
}
#define MPROF_CUDA_ZONE_C(ctx, stream, name, color) ((void)0)
#define MPROF_CUDA_ZONE(ctx, stream, name) ((void)0)
#define MPROF_CUDA_ZONE_BEGIN_C(ctx, stream, name, color) ((uint32_t)MPROF_GPU_NO_QUERY)
#define MPROF_CUDA_ZONE_BEGIN(ctx, stream, name) ((uint32_t)MPROF_GPU_NO_QUERY)
#define MPROF_CUDA_ZONE_END(ctx, stream, query) ((void)sizeof(query))
#define MPROF_CUDA_COLLECT(ctx) ((void)0)

#endif /* MPROF_ENABLE */

#ifdef __cplusplus
}
#endif

#endif /* MPROF_CUDA_H */
