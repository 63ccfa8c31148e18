/*
 * mprof/gl.h - GPU zones for OpenGL (header-only helper over mprof.h's generic GPU context API).
 * See docs/GPU.md.
 *
 * Overview
 *   One mprof_gl_ctx per GL context. It owns an array of query objects; a zone issues
 *   glQueryCounter(GL_TIMESTAMP) at its start and end and records, on the CPU, when it was
 *   issued. MPROF_GL_COLLECT() once per frame asks each issued query whether its result is
 *   available (GL_QUERY_RESULT_AVAILABLE: never waits) and uploads the finished ones. The clocks
 *   are related by reading GL_TIMESTAMP with glGetInteger64v between two CPU clock reads.
 *
 * Step by step
 *   mprof_gl_config c = {0};
 *   c.get_proc_address = (mprof_gl_loader)eglGetProcAddress;  (or glfwGetProcAddress, ...)
 *   mprof_gl_ctx *gl = NULL;
 *   mprof_gl_context_create(&c, &gl);          (GL context current; gl NULL on failure)
 *   each frame:  MPROF_GL_COLLECT(gl);
 *                { MPROF_GL_ZONE(gl, "Shadows"); ...draw... }
 *   at exit:     glFinish(); mprof_gl_context_destroy(gl);
 *
 * No GL header is included: the few entry points are loaded through get_proc_address, so this
 * works with any loader (glad, epoxy, GLEW, none). Desktop GL 3.3+ or ARB_timer_query; on OpenGL
 * ES, EXT_disjoint_timer_query (the *EXT entry points are tried when the core ones are missing).
 *
 * Compile-time options
 *   Without MPROF_ENABLE the macros expand to ((void)0) or a typed constant without evaluating
 *   their arguments and the functions are inline no-ops (create returns MPROF_ERR_UNSUPPORTED).
 *
 * Threading
 *   Everything on the thread where the GL context is current.
 */
#ifndef MPROF_GL_H
#define MPROF_GL_H

#include "mprof/mprof.h"

#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && !defined(__CYGWIN__)
#define MPROF_GL__APIENTRY __stdcall
#else
#define MPROF_GL__APIENTRY
#endif

/* What eglGetProcAddress / glfwGetProcAddress / SDL_GL_GetProcAddress return, as one type. */
typedef void (*mprof_gl_proc)(void);
typedef mprof_gl_proc (*mprof_gl_loader)(const char *name);

typedef struct mprof_gl_config {
    mprof_gl_loader get_proc_address; /* required */
    const char *name;                 /* context name, a literal; default "OpenGL" */
    uint32_t n_queries;               /* query objects; default 1024 (512 zones in flight) */
    uint32_t calibrate_interval_ms;   /* collect recalibrates this often; default 1000 */
} mprof_gl_config;

typedef void(MPROF_GL__APIENTRY *mprof_gl__gen_queries)(int n, unsigned int *ids);
typedef void(MPROF_GL__APIENTRY *mprof_gl__delete_queries)(int n, const unsigned int *ids);
typedef void(MPROF_GL__APIENTRY *mprof_gl__query_counter)(unsigned int id, unsigned int target);
typedef void(MPROF_GL__APIENTRY *mprof_gl__get_query_objectiv)(unsigned int id,
                                                               unsigned int pname, int *params);
typedef void(MPROF_GL__APIENTRY *mprof_gl__get_query_objectui64v)(unsigned int id,
                                                                  unsigned int pname,
                                                                  uint64_t *params);
typedef void(MPROF_GL__APIENTRY *mprof_gl__get_integer64v)(unsigned int pname, int64_t *data);
typedef void(MPROF_GL__APIENTRY *mprof_gl__get_queryiv)(unsigned int target, unsigned int pname,
                                                        int *params);

/* One GL timeline. Fields are private to this header. */
typedef struct mprof_gl_ctx {
    mprof_gpu_ctx gpu;
    uint32_t n_queries;
    unsigned int *names;   /* GL query object per id */
    unsigned char *issued; /* per id: glQueryCounter issued, result not yet uploaded */
    uint32_t counter_bits;
    uint64_t calib_interval_ns;
    uint64_t last_calib_ns;
    uint64_t results;
    mprof_gl__gen_queries GenQueries;
    mprof_gl__delete_queries DeleteQueries;
    mprof_gl__query_counter QueryCounter;
    mprof_gl__get_query_objectiv GetQueryObjectiv;
    mprof_gl__get_query_objectui64v GetQueryObjectui64v;
    mprof_gl__get_integer64v GetInteger64v;
} mprof_gl_ctx;

typedef struct mprof_gl__scope {
    mprof_gl_ctx *ctx;
    uint32_t query;
} mprof_gl__scope;

#define MPROF_GL__TIMESTAMP 0x8E28u
#define MPROF_GL__QUERY_COUNTER_BITS 0x8864u
#define MPROF_GL__QUERY_RESULT 0x8866u
#define MPROF_GL__QUERY_RESULT_AVAILABLE 0x8867u

#if defined(MPROF_ENABLE)

static inline mprof_gl_proc mprof_gl__load(mprof_gl_loader load, const char *name,
                                           const char *ext_name)
{
    mprof_gl_proc p = load(name);
    return p ? p : load(ext_name);
}

/* Relates the CPU and GPU clocks now: GL_TIMESTAMP read between two CPU clock reads (the best of
 * a few tries), paired with their midpoint. Does not wait for queued GL work. GL thread. */
static inline mprof_result mprof_gl_calibrate(mprof_gl_ctx *ctx)
{
    if (!ctx)
        return MPROF_ERR_INVALID;
    uint64_t best_span = UINT64_MAX, best_cpu = 0;
    int64_t best_gpu = 0;
    for (int i = 0; i < 4; i++) {
        int64_t gpu = 0;
        uint64_t t0 = mprof_now_ns();
        ctx->GetInteger64v(MPROF_GL__TIMESTAMP, &gpu);
        uint64_t t1 = mprof_now_ns();
        if (t1 - t0 < best_span) {
            best_span = t1 - t0;
            best_cpu = t0 + (t1 - t0) / 2;
            best_gpu = gpu;
        }
    }
    if (best_gpu == 0)
        return MPROF_ERR_IO;
    mprof_gpu_calibrate(ctx->gpu, best_gpu, best_cpu ? best_cpu : 1);
    ctx->last_calib_ns = mprof_now_ns();
    return MPROF_OK;
}

/* Frees what create made (tolerates a partly built ctx). */
static inline void mprof_gl__free(mprof_gl_ctx *ctx)
{
    if (ctx->names && ctx->DeleteQueries)
        ctx->DeleteQueries((int)ctx->n_queries, ctx->names);
    mprof_gpu_context_destroy(ctx->gpu);
    free(ctx->names);
    free(ctx->issued);
    free(ctx);
}

/* Creates the context: the query objects and a first calibration. *out_ctx gets it, or NULL on
 * failure. MPROF_ERR_INVALID (bad config), MPROF_ERR_UNSUPPORTED (no timer queries, or
 * GL_QUERY_COUNTER_BITS is 0), MPROF_ERR_NOMEM, MPROF_ERR_IO. GL thread, context current. */
static inline mprof_result mprof_gl_context_create(const mprof_gl_config *cfg,
                                                   mprof_gl_ctx **out_ctx)
{
    if (!out_ctx)
        return MPROF_ERR_INVALID;
    *out_ctx = NULL;
    if (!cfg || !cfg->get_proc_address)
        return MPROF_ERR_INVALID;
    mprof_gl_ctx *ctx = (mprof_gl_ctx *)calloc(1, sizeof *ctx);
    if (!ctx)
        return MPROF_ERR_NOMEM;
    mprof_gl_loader load = cfg->get_proc_address;
    ctx->GenQueries = (mprof_gl__gen_queries)mprof_gl__load(load, "glGenQueries", "glGenQueriesEXT");
    ctx->DeleteQueries =
        (mprof_gl__delete_queries)mprof_gl__load(load, "glDeleteQueries", "glDeleteQueriesEXT");
    ctx->QueryCounter =
        (mprof_gl__query_counter)mprof_gl__load(load, "glQueryCounter", "glQueryCounterEXT");
    ctx->GetQueryObjectiv = (mprof_gl__get_query_objectiv)mprof_gl__load(
        load, "glGetQueryObjectiv", "glGetQueryObjectivEXT");
    ctx->GetQueryObjectui64v = (mprof_gl__get_query_objectui64v)mprof_gl__load(
        load, "glGetQueryObjectui64v", "glGetQueryObjectui64vEXT");
    ctx->GetInteger64v =
        (mprof_gl__get_integer64v)mprof_gl__load(load, "glGetInteger64v", "glGetInteger64vEXT");
    mprof_gl__get_queryiv get_queryiv =
        (mprof_gl__get_queryiv)mprof_gl__load(load, "glGetQueryiv", "glGetQueryivEXT");
    mprof_result res = MPROF_ERR_UNSUPPORTED;
    if (!ctx->GenQueries || !ctx->DeleteQueries || !ctx->QueryCounter || !ctx->GetQueryObjectiv ||
        !ctx->GetQueryObjectui64v || !ctx->GetInteger64v || !get_queryiv)
        goto fail;
    {
        int bits = 0;
        get_queryiv(MPROF_GL__TIMESTAMP, MPROF_GL__QUERY_COUNTER_BITS, &bits);
        if (bits <= 0)
            goto fail;
        ctx->counter_bits = (uint32_t)bits;
    }
    ctx->n_queries = cfg->n_queries ? cfg->n_queries & ~1u : 1024u;
    if (ctx->n_queries < 2)
        ctx->n_queries = 2;
    ctx->calib_interval_ns =
        (uint64_t)(cfg->calibrate_interval_ms ? cfg->calibrate_interval_ms : 1000u) * 1000000u;
    ctx->names = (unsigned int *)calloc(ctx->n_queries, sizeof *ctx->names);
    ctx->issued = (unsigned char *)calloc(ctx->n_queries, 1);
    res = MPROF_ERR_NOMEM;
    if (!ctx->names || !ctx->issued)
        goto fail;
    ctx->GenQueries((int)ctx->n_queries, ctx->names);
    res = MPROF_ERR_IO;
    if (ctx->names[ctx->n_queries - 1] == 0)
        goto fail;
    /* GL_TIMESTAMP values are nanoseconds. */
    ctx->gpu = mprof_gpu_context_new(cfg->name ? cfg->name : "OpenGL", MPROF_GPU_API_OPENGL, 1.0,
                                     ctx->n_queries);
    res = MPROF_ERR_NOMEM;
    if (!ctx->gpu)
        goto fail;
    res = mprof_gl_calibrate(ctx);
    if (res != MPROF_OK)
        goto fail;
    *out_ctx = ctx;
    return MPROF_OK;
fail:
    mprof_gl__free(ctx);
    return res;
}

/* Uploads every issued query whose result is available, without waiting; recalibrates when
 * due. Returns the number of timestamps uploaded. GL thread, once a frame. */
static inline uint32_t mprof_gl_collect(mprof_gl_ctx *ctx)
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
        if (!ctx->issued[q])
            continue;
        int avail = 0;
        ctx->GetQueryObjectiv(ctx->names[q], MPROF_GL__QUERY_RESULT_AVAILABLE, &avail);
        if (!avail)
            continue;
        uint64_t v = 0;
        ctx->GetQueryObjectui64v(ctx->names[q], MPROF_GL__QUERY_RESULT, &v);
        ctx->issued[q] = 0;
        mprof_gpu_time(ctx->gpu, q, (int64_t)v);
        n++;
    }
    ctx->results += n;
    if (mprof_now_ns() - ctx->last_calib_ns >= ctx->calib_interval_ns)
        (void)mprof_gl_calibrate(ctx);
    return n;
}

/* Uploads what has finished and frees everything. Call glFinish() first so that is everything.
 * destroy(NULL) is a no-op. GL thread. */
static inline void mprof_gl_context_destroy(mprof_gl_ctx *ctx)
{
    if (!ctx)
        return;
    (void)mprof_gl_collect(ctx);
    mprof_gl__free(ctx);
}

/* Timestamps uploaded so far. */
static inline uint64_t mprof_gl_results(const mprof_gl_ctx *ctx)
{
    return ctx ? ctx->results : 0;
}

static inline uint32_t mprof_gl__zone_begin(mprof_gl_ctx *ctx, const mprof_srcloc *loc)
{
    if (!ctx)
        return MPROF_GPU_NO_QUERY;
    uint32_t q = mprof_gpu_zone_begin(ctx->gpu, loc);
    if (q != MPROF_GPU_NO_QUERY) {
        ctx->QueryCounter(ctx->names[q], MPROF_GL__TIMESTAMP);
        ctx->issued[q] = 1;
    }
    return q;
}

static inline void mprof_gl__zone_end(mprof_gl_ctx *ctx, uint32_t query)
{
    if (!ctx || query == MPROF_GPU_NO_QUERY)
        return;
    uint32_t q = mprof_gpu_zone_end(ctx->gpu, query);
    if (q != MPROF_GPU_NO_QUERY) {
        ctx->QueryCounter(ctx->names[q], MPROF_GL__TIMESTAMP);
        ctx->issued[q] = 1;
    }
}

static inline void mprof_gl__scope_end(mprof_gl__scope *s)
{
    mprof_gl__zone_end(s->ctx, s->query);
}

#ifndef MPROF_NO_CLEANUP_ATTR
#define MPROF_GL_ZONE_C(ctx, name, color)                                                          \
    MPROF__SRCLOC(MPROF__CAT(mprof__glloc_, __LINE__), name, color);                              \
    mprof_gl__scope MPROF__CAT(mprof__glzone_, __LINE__)                                           \
        __attribute__((cleanup(mprof_gl__scope_end), unused)) = {                                  \
            (ctx), mprof_gl__zone_begin((ctx), &MPROF__CAT(mprof__glloc_, __LINE__))}
#define MPROF_GL_ZONE(ctx, name) MPROF_GL_ZONE_C(ctx, name, 0)
#endif
#define MPROF_GL_ZONE_BEGIN_C(ctx, name, color)                                                    \
    mprof_gl__zone_begin((ctx), ({                                                                 \
                             MPROF__SRCLOC(mprof__loc_gl, name, color);                            \
                             &mprof__loc_gl;                                                       \
                         }))
#define MPROF_GL_ZONE_BEGIN(ctx, name) MPROF_GL_ZONE_BEGIN_C(ctx, name, 0)
#define MPROF_GL_ZONE_END(ctx, query) mprof_gl__zone_end((ctx), (query))
#define MPROF_GL_COLLECT(ctx) ((void)mprof_gl_collect(ctx))

#else /* !MPROF_ENABLE */

static inline mprof_result mprof_gl_context_create(const mprof_gl_config *cfg,
                                                   mprof_gl_ctx **out_ctx)
{
    (void)cfg;
    if (out_ctx)
        *out_ctx = NULL;
    return MPROF_ERR_UNSUPPORTED;
}
static inline void mprof_gl_context_destroy(mprof_gl_ctx *ctx) { (void)ctx; }
static inline mprof_result mprof_gl_calibrate(mprof_gl_ctx *ctx)
{
    (void)ctx;
    return MPROF_ERR_UNSUPPORTED;
}
static inline uint32_t mprof_gl_collect(mprof_gl_ctx *ctx)
{
    (void)ctx;
    return 0;
}
static inline uint64_t mprof_gl_results(const mprof_gl_ctx *ctx)
{
    (void)ctx;
    return 0;
}
#define MPROF_GL_ZONE_C(ctx, name, color) ((void)0)
#define MPROF_GL_ZONE(ctx, name) ((void)0)
#define MPROF_GL_ZONE_BEGIN_C(ctx, name, color) ((uint32_t)MPROF_GPU_NO_QUERY)
#define MPROF_GL_ZONE_BEGIN(ctx, name) ((uint32_t)MPROF_GPU_NO_QUERY)
#define MPROF_GL_ZONE_END(ctx, query) ((void)sizeof(query))
#define MPROF_GL_COLLECT(ctx) ((void)0)

#endif /* MPROF_ENABLE */

#ifdef __cplusplus
}
#endif

#endif /* MPROF_GL_H */
