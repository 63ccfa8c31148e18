/*
 * mprof/vulkan.h - GPU zones for Vulkan command buffers (header-only helper over mprof.h's
 * generic GPU context API). See docs/GPU.md.
 *
 * Overview
 *   One mprof_vk_ctx per VkQueue you want a GPU timeline for. It owns a timestamp query pool.
 *   MPROF_VK_ZONE(ctx, cmd, "Shadows") writes vkCmdWriteTimestamp at the start and end of the
 *   enclosing block of a command buffer and records, on the CPU, when the block was recorded.
 *   MPROF_VK_COLLECT(ctx, cmd) once per frame reads the queries that have finished
 *   (VK_QUERY_RESULT_WITH_AVAILABILITY_BIT: it never waits) and uploads them to the profiler.
 *   The CPU and GPU clocks are related through VK_EXT_calibrated_timestamps when the device
 *   enabled it, otherwise by a measured calibration (a timestamp submitted alone and timed).
 *
 * Step by step
 *   1. Optional, recommended: when mprof_vk_has_calibrated_timestamps() says so, add
 *      VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME to the device extensions; enable
 *      VkPhysicalDeviceVulkan12Features.hostQueryReset (or VK_EXT_host_query_reset) if you can.
 *   2. After vkCreateDevice:
 *        mprof_vk_config c = {0};
 *        c.instance = instance; c.physical_device = gpu; c.device = device;
 *        c.queue = queue; c.queue_family = family;
 *        c.calibrated_timestamps = have_ext; c.host_query_reset = have_reset;
 *        mprof_vk_ctx *vk = NULL;
 *        mprof_vk_context_create(&c, &vk);   (vk stays NULL on failure; zones then do nothing)
 *   3. Each frame, while recording a command buffer outside a render pass (first thing is best):
 *        MPROF_VK_COLLECT(vk, cmd);
 *      and around passes (scoped; or MPROF_VK_ZONE_BEGIN/END for other compilers):
 *        { MPROF_VK_ZONE_C(vk, cmd, "GBuffer", MPROF_COLOR_RENDERER); vkCmdBeginRenderPass(...);
 *          ...; vkCmdEndRenderPass(cmd); }
 *   4. At exit: vkDeviceWaitIdle(device); mprof_vk_context_destroy(vk); (uploads what is left).
 *
 * Contract (why: a query may be reset only after the command buffer that wrote it completed)
 *   - MPROF_VK_COLLECT is called once per frame from one thread. By the time it is called, every
 *     command buffer submitted frames_in_flight collects earlier has completed: the usual
 *     "wait for the fence of frame N - frames_in_flight before recording frame N" gives that.
 *   - Without host_query_reset, the collect command buffer must be outside a render pass and be
 *     submitted to the context's queue in the same frame; resets of read queries are recorded
 *     into it. With host_query_reset, cmd may be VK_NULL_HANDLE.
 *   - Queries written in a command buffer that is never submitted are never freed; their pairs
 *     are lost to the ring (and once all are, zones are counted in gpu_queries_lost).
 *   - A zone's begin and end go into the same command buffer, or into command buffers submitted
 *     in order to this context's queue.
 *
 * Compile-time options
 *   Without MPROF_ENABLE the macros expand to ((void)0) or a typed constant without evaluating
 *   their arguments, and the functions are inline no-ops (create returns MPROF_ERR_UNSUPPORTED);
 *   nothing references libmprof. With VK_NO_PROTOTYPES (volk and friends) set
 *   config.get_instance_proc_addr: no Vulkan symbol is referenced by this header then.
 *
 * Threading
 *   Zones: any thread, on command buffers that thread records (Vulkan's external
 *   synchronisation rules apply). create, collect, calibrate and destroy: one thread, the one
 *   that owns config.queue for create/calibrate/destroy (they may submit to it).
 */
#ifndef MPROF_VULKAN_H
#define MPROF_VULKAN_H

#include "mprof/mprof.h"

#include <stdint.h>
#include <stdlib.h>
#include <vulkan/vulkan.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Configuration. Zero-initialised fields take the default given in their comment. */
typedef struct mprof_vk_config {
    VkInstance instance;              /* required */
    VkPhysicalDevice physical_device; /* required */
    VkDevice device;                  /* required */
    VkQueue queue;                    /* required: the queue zones are submitted to */
    uint32_t queue_family;            /* required: family of queue (must have timestamps) */
    const char *name;                 /* context name, a literal; default "Vulkan" */
    uint32_t n_queries;               /* query pool size; default 4096 (2048 zones in flight) */
    uint32_t frames_in_flight;        /* see the contract above; default 3 */
    int host_query_reset;             /* the device enabled hostQueryReset; default 0 */
    int calibrated_timestamps;        /* the device enabled VK_EXT_calibrated_timestamps and it
                                         offers a CLOCK_MONOTONIC domain; default 0 = measured */
    uint32_t calibrate_interval_ms;   /* with calibrated timestamps, collect recalibrates this
                                         often to follow drift; default 1000 */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr; /* default vkGetInstanceProcAddr; required
                                                         with VK_NO_PROTOTYPES */
} mprof_vk_config;

/* One timeline. Created by mprof_vk_context_create, freed by mprof_vk_context_destroy. The fields
 * are private to this header. */
typedef struct mprof_vk_ctx {
    mprof_gpu_ctx gpu;
    VkDevice device;
    VkQueue queue;
    VkQueryPool pool;
    VkQueryPool cal_pool; /* one query, for measured calibration */
    VkCommandPool cmd_pool;
    VkCommandBuffer cal_cmd;
    VkFence fence;
    uint32_t n_queries;
    uint32_t frames_in_flight;
    int host_reset;
    int calibrated;          /* VK_EXT_calibrated_timestamps in use */
    VkTimeDomainEXT cpu_domain;
    uint64_t valid_mask;     /* timestampValidBits as a mask */
    uint32_t valid_bits;
    uint64_t calib_interval_ns;
    uint64_t last_calib_ns;  /* mprof_now_ns of the last calibration */
    int64_t ref_ts;          /* latest GPU time seen, unwrapped (for timestampValidBits < 64) */
    double period_ns;
    uint32_t serial;         /* collects so far, starting at 1 */
    uint32_t *retired;       /* per query: serial of the collect that read it; 0 = not read */
    int64_t *values;         /* per query: the value read, unwrapped */
    uint64_t *scratch;       /* n_queries x {value, availability} */
    uint64_t results;        /* timestamps uploaded so far */
    PFN_vkCmdWriteTimestamp CmdWriteTimestamp;
    PFN_vkCmdResetQueryPool CmdResetQueryPool;
    PFN_vkResetQueryPool ResetQueryPool;
    PFN_vkGetQueryPoolResults GetQueryPoolResults;
    PFN_vkGetCalibratedTimestampsEXT GetCalibratedTimestamps;
    PFN_vkDestroyQueryPool DestroyQueryPool;
    PFN_vkDestroyCommandPool DestroyCommandPool;
    PFN_vkDestroyFence DestroyFence;
    PFN_vkBeginCommandBuffer BeginCommandBuffer;
    PFN_vkEndCommandBuffer EndCommandBuffer;
    PFN_vkResetCommandBuffer ResetCommandBuffer;
    PFN_vkQueueSubmit QueueSubmit;
    PFN_vkWaitForFences WaitForFences;
    PFN_vkResetFences ResetFences;
} mprof_vk_ctx;

/* The scope a MPROF_VK_ZONE keeps. */
typedef struct mprof_vk__scope {
    mprof_vk_ctx *ctx;
    VkCommandBuffer cmd;
    uint32_t query;
} mprof_vk__scope;

#if defined(MPROF_ENABLE)

#if !defined(VK_NO_PROTOTYPES)
#define MPROF_VK__DEFAULT_GIPA vkGetInstanceProcAddr
#else
#define MPROF_VK__DEFAULT_GIPA NULL
#endif

/* Non-zero when physical_device offers VK_EXT_calibrated_timestamps with a CLOCK_MONOTONIC
 * domain, i.e. worth enabling at vkCreateDevice. gipa NULL = vkGetInstanceProcAddr. */
static inline int mprof_vk_has_calibrated_timestamps(VkInstance instance,
                                                     VkPhysicalDevice physical_device,
                                                     PFN_vkGetInstanceProcAddr gipa)
{
    if (!gipa)
        gipa = MPROF_VK__DEFAULT_GIPA;
    if (!gipa)
        return 0;
    PFN_vkEnumerateDeviceExtensionProperties enum_ext =
        (PFN_vkEnumerateDeviceExtensionProperties)gipa(instance,
                                                       "vkEnumerateDeviceExtensionProperties");
    PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT domains =
        (PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)gipa(
            instance, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT");
    if (!enum_ext || !domains)
        return 0;
    uint32_t n = 0;
    if (enum_ext(physical_device, NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return 0;
    VkExtensionProperties *ext = (VkExtensionProperties *)calloc(n, sizeof *ext);
    if (!ext)
        return 0;
    int found = 0;
    if (enum_ext(physical_device, NULL, &n, ext) == VK_SUCCESS) {
        for (uint32_t i = 0; i < n; i++) {
            if (strcmp(ext[i].extensionName, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) == 0)
                found = 1;
        }
    }
    free(ext);
    if (!found)
        return 0;
    VkTimeDomainEXT d[8];
    n = 8;
    VkResult r = domains(physical_device, &n, d);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE)
        return 0;
    int have_dev = 0, have_mono = 0;
    for (uint32_t i = 0; i < n; i++) {
        have_dev |= d[i] == VK_TIME_DOMAIN_DEVICE_EXT;
        have_mono |= d[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    }
    return have_dev && have_mono;
}

/* Raw GPU ticks to a continuous signed 64-bit timeline. With fewer than 64 valid bits the
 * counter wraps; a value is placed at the wrap nearest to the latest time seen (calibrations and
 * collected queries keep that recent), and the latest time seen moves forward with it. */
static inline int64_t mprof_vk__unwrap(mprof_vk_ctx *ctx, uint64_t raw)
{
    if (ctx->valid_bits >= 64)
        return (int64_t)raw;
    uint64_t delta = (raw - (uint64_t)ctx->ref_ts) & ctx->valid_mask;
    uint64_t half = ctx->valid_mask >> 1;
    int64_t d = delta > half ? (int64_t)delta - (int64_t)ctx->valid_mask - 1 : (int64_t)delta;
    int64_t v = ctx->ref_ts + d;
    if (v > ctx->ref_ts)
        ctx->ref_ts = v;
    return v;
}

/* Calibrates with VK_EXT_calibrated_timestamps: no queue work, error = the driver's deviation. */
static inline mprof_result mprof_vk__calibrate_ext(mprof_vk_ctx *ctx)
{
    VkCalibratedTimestampInfoEXT info[2];
    memset(info, 0, sizeof info);
    info[0].sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT;
    info[0].timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
    info[1].sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT;
    info[1].timeDomain = ctx->cpu_domain;
    uint64_t ts[2] = {0, 0}, deviation = 0;
    if (ctx->GetCalibratedTimestamps(ctx->device, 2, info, ts, &deviation) != VK_SUCCESS)
        return MPROF_ERR_IO;
    uint64_t cpu_ns = mprof_gpu_monotonic_to_ns(ts[1]);
    mprof_gpu_calibrate(ctx->gpu, mprof_vk__unwrap(ctx, ts[0] & ctx->valid_mask),
                        cpu_ns ? cpu_ns : 1);
    ctx->last_calib_ns = mprof_now_ns();
    return MPROF_OK;
}

/* Measured calibration: submits a lone timestamp several times, timing submit..fence on the
 * CPU; the tightest try's midpoint is paired with its GPU value. Stalls the queue briefly. */
static inline mprof_result mprof_vk__calibrate_measured(mprof_vk_ctx *ctx)
{
    uint64_t best_span = UINT64_MAX, best_cpu = 0, best_gpu = 0;
    for (int attempt = 0; attempt < 8; attempt++) {
        VkCommandBufferBeginInfo bi;
        memset(&bi, 0, sizeof bi);
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        if (ctx->ResetCommandBuffer(ctx->cal_cmd, 0) != VK_SUCCESS ||
            ctx->BeginCommandBuffer(ctx->cal_cmd, &bi) != VK_SUCCESS)
            return MPROF_ERR_IO;
        ctx->CmdResetQueryPool(ctx->cal_cmd, ctx->cal_pool, 0, 1);
        ctx->CmdWriteTimestamp(ctx->cal_cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, ctx->cal_pool, 0);
        if (ctx->EndCommandBuffer(ctx->cal_cmd) != VK_SUCCESS)
            return MPROF_ERR_IO;
        VkSubmitInfo si;
        memset(&si, 0, sizeof si);
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &ctx->cal_cmd;
        if (ctx->ResetFences(ctx->device, 1, &ctx->fence) != VK_SUCCESS)
            return MPROF_ERR_IO;
        uint64_t t0 = mprof_now_ns();
        if (ctx->QueueSubmit(ctx->queue, 1, &si, ctx->fence) != VK_SUCCESS)
            return MPROF_ERR_IO;
        if (ctx->WaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS)
            return MPROF_ERR_IO;
        uint64_t t1 = mprof_now_ns();
        uint64_t v[2] = {0, 0};
        if (ctx->GetQueryPoolResults(ctx->device, ctx->cal_pool, 0, 1, sizeof v, v, sizeof v,
                                     VK_QUERY_RESULT_64_BIT |
                                         VK_QUERY_RESULT_WITH_AVAILABILITY_BIT) != VK_SUCCESS ||
            !v[1])
            return MPROF_ERR_IO;
        if (t1 - t0 < best_span) {
            best_span = t1 - t0;
            best_cpu = t0 + (t1 - t0) / 2;
            best_gpu = v[0] & ctx->valid_mask;
            if (ctx->ref_ts == 0 && ctx->valid_bits < 64)
                ctx->ref_ts = (int64_t)best_gpu; /* first contact: no history to unwrap against */
        }
    }
    mprof_gpu_calibrate(ctx->gpu, mprof_vk__unwrap(ctx, best_gpu), best_cpu ? best_cpu : 1);
    ctx->last_calib_ns = mprof_now_ns();
    return MPROF_OK;
}

/* Relates the CPU and GPU clocks now: through VK_EXT_calibrated_timestamps when enabled (cheap),
 * otherwise measured (submits to the queue and waits for it). Done by create; call it again after
 * long pauses or when the GPU clock may have changed. Thread that owns the queue. */
static inline mprof_result mprof_vk_calibrate(mprof_vk_ctx *ctx)
{
    if (!ctx)
        return MPROF_ERR_INVALID;
    return ctx->calibrated ? mprof_vk__calibrate_ext(ctx) : mprof_vk__calibrate_measured(ctx);
}

/* Frees what create made. Tolerates a partly built ctx. */
static inline void mprof_vk__free(mprof_vk_ctx *ctx)
{
    if (ctx->pool && ctx->DestroyQueryPool)
        ctx->DestroyQueryPool(ctx->device, ctx->pool, NULL);
    if (ctx->cal_pool && ctx->DestroyQueryPool)
        ctx->DestroyQueryPool(ctx->device, ctx->cal_pool, NULL);
    if (ctx->fence && ctx->DestroyFence)
        ctx->DestroyFence(ctx->device, ctx->fence, NULL);
    if (ctx->cmd_pool && ctx->DestroyCommandPool)
        ctx->DestroyCommandPool(ctx->device, ctx->cmd_pool, NULL);
    mprof_gpu_context_destroy(ctx->gpu);
    free(ctx->retired);
    free(ctx->values);
    free(ctx->scratch);
    free(ctx);
}

/* Creates the context: query pools, a command pool and fence for calibration, the initial reset
 * of every query (one submission) and the first calibration. *out_ctx gets the context, or NULL
 * on failure (nothing is left allocated). Returns MPROF_ERR_INVALID for a bad config,
 * MPROF_ERR_UNSUPPORTED when the queue family has no timestamps, MPROF_ERR_NOMEM, or
 * MPROF_ERR_IO when a Vulkan call fails. Thread that owns cfg->queue. */
static inline mprof_result mprof_vk_context_create(const mprof_vk_config *cfg,
                                                   mprof_vk_ctx **out_ctx)
{
    if (!out_ctx)
        return MPROF_ERR_INVALID;
    *out_ctx = NULL;
    if (!cfg || !cfg->instance || !cfg->physical_device || !cfg->device || !cfg->queue)
        return MPROF_ERR_INVALID;
    PFN_vkGetInstanceProcAddr gipa =
        cfg->get_instance_proc_addr ? cfg->get_instance_proc_addr : MPROF_VK__DEFAULT_GIPA;
    if (!gipa)
        return MPROF_ERR_INVALID;
#define MPROF_VK__I(T, var, name) T var = (T)gipa(cfg->instance, name)
    MPROF_VK__I(PFN_vkGetDeviceProcAddr, gdpa, "vkGetDeviceProcAddr");
    MPROF_VK__I(PFN_vkGetPhysicalDeviceProperties, get_props, "vkGetPhysicalDeviceProperties");
    MPROF_VK__I(PFN_vkGetPhysicalDeviceQueueFamilyProperties, get_families,
                "vkGetPhysicalDeviceQueueFamilyProperties");
    MPROF_VK__I(PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT, get_domains,
                "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT");
#undef MPROF_VK__I
    if (!gdpa || !get_props || !get_families)
        return MPROF_ERR_INVALID;

    VkPhysicalDeviceProperties props;
    get_props(cfg->physical_device, &props);
    uint32_t n_fam = 0;
    get_families(cfg->physical_device, &n_fam, NULL);
    if (cfg->queue_family >= n_fam)
        return MPROF_ERR_INVALID;
    VkQueueFamilyProperties *fam = (VkQueueFamilyProperties *)calloc(n_fam, sizeof *fam);
    if (!fam)
        return MPROF_ERR_NOMEM;
    get_families(cfg->physical_device, &n_fam, fam);
    uint32_t valid_bits = fam[cfg->queue_family].timestampValidBits;
    free(fam);
    if (valid_bits == 0 || props.limits.timestampPeriod <= 0.0f)
        return MPROF_ERR_UNSUPPORTED;

    mprof_vk_ctx *ctx = (mprof_vk_ctx *)calloc(1, sizeof *ctx);
    if (!ctx)
        return MPROF_ERR_NOMEM;
    ctx->device = cfg->device;
    ctx->queue = cfg->queue;
    ctx->n_queries = cfg->n_queries ? cfg->n_queries & ~1u : 4096u;
    if (ctx->n_queries < 2)
        ctx->n_queries = 2;
    ctx->frames_in_flight = cfg->frames_in_flight ? cfg->frames_in_flight : 3u;
    ctx->host_reset = cfg->host_query_reset != 0;
    ctx->valid_bits = valid_bits;
    ctx->valid_mask = valid_bits >= 64 ? UINT64_MAX : ((uint64_t)1 << valid_bits) - 1;
    ctx->period_ns = (double)props.limits.timestampPeriod;
    ctx->calib_interval_ns =
        (uint64_t)(cfg->calibrate_interval_ms ? cfg->calibrate_interval_ms : 1000u) * 1000000u;
    ctx->serial = 0;

    mprof_result res = MPROF_ERR_IO;
#define MPROF_VK__D(field, name)                                                                   \
    do {                                                                                           \
        ctx->field = (PFN_##name)gdpa(cfg->device, #name);                          \
        if (!ctx->field)                                                                           \
            goto fail;                                                                             \
    } while (0)
    MPROF_VK__D(CmdWriteTimestamp, vkCmdWriteTimestamp);
    MPROF_VK__D(CmdResetQueryPool, vkCmdResetQueryPool);
    MPROF_VK__D(GetQueryPoolResults, vkGetQueryPoolResults);
    MPROF_VK__D(DestroyQueryPool, vkDestroyQueryPool);
    MPROF_VK__D(DestroyCommandPool, vkDestroyCommandPool);
    MPROF_VK__D(DestroyFence, vkDestroyFence);
    MPROF_VK__D(BeginCommandBuffer, vkBeginCommandBuffer);
    MPROF_VK__D(EndCommandBuffer, vkEndCommandBuffer);
    MPROF_VK__D(ResetCommandBuffer, vkResetCommandBuffer);
    MPROF_VK__D(QueueSubmit, vkQueueSubmit);
    MPROF_VK__D(WaitForFences, vkWaitForFences);
    MPROF_VK__D(ResetFences, vkResetFences);
#undef MPROF_VK__D
    if (ctx->host_reset) {
        ctx->ResetQueryPool = (PFN_vkResetQueryPool)gdpa(cfg->device,
                                                                        "vkResetQueryPool");
        if (!ctx->ResetQueryPool)
            ctx->ResetQueryPool = (PFN_vkResetQueryPool)gdpa(
                cfg->device, "vkResetQueryPoolEXT");
        if (!ctx->ResetQueryPool)
            ctx->host_reset = 0;
    }
    if (cfg->calibrated_timestamps && get_domains) {
        ctx->GetCalibratedTimestamps = (PFN_vkGetCalibratedTimestampsEXT)gdpa(
            cfg->device, "vkGetCalibratedTimestampsEXT");
        VkTimeDomainEXT d[8];
        uint32_t n = 8;
        VkResult r = get_domains(cfg->physical_device, &n, d);
        if (ctx->GetCalibratedTimestamps && (r == VK_SUCCESS || r == VK_INCOMPLETE)) {
            for (uint32_t i = 0; i < n; i++) {
                if (d[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT) {
                    ctx->cpu_domain = d[i];
                    ctx->calibrated = 1;
                }
            }
        }
    }

    ctx->retired = (uint32_t *)calloc(ctx->n_queries, sizeof *ctx->retired);
    ctx->values = (int64_t *)calloc(ctx->n_queries, sizeof *ctx->values);
    ctx->scratch = (uint64_t *)calloc((size_t)ctx->n_queries * 2, sizeof *ctx->scratch);
    if (!ctx->retired || !ctx->values || !ctx->scratch) {
        res = MPROF_ERR_NOMEM;
        goto fail;
    }

    {
        PFN_vkCreateQueryPool create_pool =
            (PFN_vkCreateQueryPool)gdpa(cfg->device, "vkCreateQueryPool");
        PFN_vkCreateCommandPool create_cmd_pool =
            (PFN_vkCreateCommandPool)gdpa(cfg->device, "vkCreateCommandPool");
        PFN_vkAllocateCommandBuffers alloc_cmd = (PFN_vkAllocateCommandBuffers)gdpa(
            cfg->device, "vkAllocateCommandBuffers");
        PFN_vkCreateFence create_fence =
            (PFN_vkCreateFence)gdpa(cfg->device, "vkCreateFence");
        if (!create_pool || !create_cmd_pool || !alloc_cmd || !create_fence)
            goto fail;
        VkQueryPoolCreateInfo qi;
        memset(&qi, 0, sizeof qi);
        qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
        qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qi.queryCount = ctx->n_queries;
        if (create_pool(cfg->device, &qi, NULL, &ctx->pool) != VK_SUCCESS)
            goto fail;
        qi.queryCount = 1;
        if (create_pool(cfg->device, &qi, NULL, &ctx->cal_pool) != VK_SUCCESS)
            goto fail;
        VkCommandPoolCreateInfo ci;
        memset(&ci, 0, sizeof ci);
        ci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        ci.queueFamilyIndex = cfg->queue_family;
        if (create_cmd_pool(cfg->device, &ci, NULL, &ctx->cmd_pool) != VK_SUCCESS)
            goto fail;
        VkCommandBufferAllocateInfo ai;
        memset(&ai, 0, sizeof ai);
        ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        ai.commandPool = ctx->cmd_pool;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        if (alloc_cmd(cfg->device, &ai, &ctx->cal_cmd) != VK_SUCCESS)
            goto fail;
        VkFenceCreateInfo fi;
        memset(&fi, 0, sizeof fi);
        fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
        if (create_fence(cfg->device, &fi, NULL, &ctx->fence) != VK_SUCCESS)
            goto fail;
    }

    {
        /* Every query starts reset, so polling one never written reads "not available". */
        VkCommandBufferBeginInfo bi;
        memset(&bi, 0, sizeof bi);
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        if (ctx->BeginCommandBuffer(ctx->cal_cmd, &bi) != VK_SUCCESS)
            goto fail;
        ctx->CmdResetQueryPool(ctx->cal_cmd, ctx->pool, 0, ctx->n_queries);
        if (ctx->EndCommandBuffer(ctx->cal_cmd) != VK_SUCCESS)
            goto fail;
        VkSubmitInfo si;
        memset(&si, 0, sizeof si);
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &ctx->cal_cmd;
        if (ctx->QueueSubmit(ctx->queue, 1, &si, ctx->fence) != VK_SUCCESS ||
            ctx->WaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS)
            goto fail;
    }

    ctx->gpu = mprof_gpu_context_new(cfg->name ? cfg->name : "Vulkan", MPROF_GPU_API_VULKAN,
                                     ctx->period_ns, ctx->n_queries);
    if (!ctx->gpu) {
        res = MPROF_ERR_NOMEM;
        goto fail;
    }
    res = mprof_vk_calibrate(ctx);
    if (res != MPROF_OK && ctx->calibrated) {
        ctx->calibrated = 0; /* the extension failed at run time: measure instead */
        res = mprof_vk_calibrate(ctx);
    }
    if (res != MPROF_OK)
        goto fail;
    *out_ctx = ctx;
    return MPROF_OK;
fail:
    mprof_vk__free(ctx);
    return res;
}

/* Uploads the retired queries whose reset is now safe (all of them when all_now), resetting them
 * on the host in host-reset mode unless no_reset. */
static inline uint32_t mprof_vk__release(mprof_vk_ctx *ctx, int all_now, int no_reset)
{
    uint32_t n = 0, run_start = 0, run_len = 0;
    for (uint32_t i = 0; i <= ctx->n_queries; i++) {
        int due = i < ctx->n_queries && ctx->retired[i] &&
                  (all_now || ctx->serial - ctx->retired[i] >= ctx->frames_in_flight);
        if (due) {
            if (run_len == 0)
                run_start = i;
            run_len++;
            continue;
        }
        if (run_len == 0)
            continue;
        if (ctx->host_reset && !no_reset)
            ctx->ResetQueryPool(ctx->device, ctx->pool, run_start, run_len);
        for (uint32_t q = run_start; q < run_start + run_len; q++) {
            ctx->retired[q] = 0;
            mprof_gpu_time(ctx->gpu, q, ctx->values[q]);
        }
        n += run_len;
        run_len = 0;
    }
    ctx->results += n;
    return n;
}

/* Reads queries [first, first + count) without waiting; remembers the finished ones. */
static inline void mprof_vk__read(mprof_vk_ctx *ctx, VkCommandBuffer cmd, uint32_t first,
                                  uint32_t count)
{
    if (count == 0)
        return;
    VkResult r = ctx->GetQueryPoolResults(ctx->device, ctx->pool, first, count,
                                          (size_t)count * 2 * sizeof(uint64_t), ctx->scratch,
                                          2 * sizeof(uint64_t),
                                          VK_QUERY_RESULT_64_BIT |
                                              VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    if (r != VK_SUCCESS && r != VK_NOT_READY)
        return;
    uint32_t run_start = 0, run_len = 0;
    for (uint32_t i = 0; i <= count; i++) {
        uint32_t q = first + i;
        int got = i < count && ctx->scratch[2 * i + 1] != 0 && ctx->retired[q] == 0;
        if (got) {
            ctx->values[q] = mprof_vk__unwrap(ctx, ctx->scratch[2 * i] & ctx->valid_mask);
            ctx->retired[q] = ctx->serial;
            if (run_len == 0)
                run_start = q;
            run_len++;
            continue;
        }
        if (run_len && !ctx->host_reset && cmd != VK_NULL_HANDLE)
            ctx->CmdResetQueryPool(cmd, ctx->pool, run_start, run_len);
        run_len = 0;
    }
}

/* Collects finished queries without waiting for the GPU and uploads those read
 * frames_in_flight collects ago (after their reset is safe); recalibrates when due. Returns the
 * number of timestamps uploaded. See the contract at the top for cmd. One thread, once a frame. */
static inline uint32_t mprof_vk_collect(mprof_vk_ctx *ctx, VkCommandBuffer cmd)
{
    if (!ctx)
        return 0;
    if (!ctx->host_reset && cmd == VK_NULL_HANDLE)
        return 0;
    ctx->serial++;
    uint32_t n = mprof_vk__release(ctx, 0, 0);
    uint32_t first = 0;
    uint32_t count = mprof_gpu_pending(ctx->gpu, &first);
    if (count > ctx->n_queries)
        count = ctx->n_queries;
    uint32_t head = ctx->n_queries - first < count ? ctx->n_queries - first : count;
    mprof_vk__read(ctx, cmd, first, head);
    mprof_vk__read(ctx, cmd, 0, count - head);
    if (ctx->calibrated && mprof_now_ns() - ctx->last_calib_ns >= ctx->calib_interval_ns)
        (void)mprof_vk__calibrate_ext(ctx);
    return n;
}

/* Reads every finished query, uploads it, and frees everything. The device must be idle
 * (vkDeviceWaitIdle). destroy(NULL) is a no-op. Thread that owns the queue. */
static inline void mprof_vk_context_destroy(mprof_vk_ctx *ctx)
{
    if (!ctx)
        return;
    /* Nothing is reused afterwards, so nothing is reset: read, upload, free. */
    ctx->serial++;
    uint32_t first = 0;
    uint32_t count = mprof_gpu_pending(ctx->gpu, &first);
    if (count > ctx->n_queries)
        count = ctx->n_queries;
    uint32_t head = ctx->n_queries - first < count ? ctx->n_queries - first : count;
    mprof_vk__read(ctx, VK_NULL_HANDLE, first, head);
    mprof_vk__read(ctx, VK_NULL_HANDLE, 0, count - head);
    mprof_vk__release(ctx, 1, 1);
    mprof_vk__free(ctx);
}

/* Timestamps uploaded by this context so far (for tests and overlays). */
static inline uint64_t mprof_vk_results(const mprof_vk_ctx *ctx)
{
    return ctx ? ctx->results : 0;
}

static inline uint32_t mprof_vk__zone_begin(mprof_vk_ctx *ctx, VkCommandBuffer cmd,
                                            const mprof_srcloc *loc)
{
    if (!ctx)
        return MPROF_GPU_NO_QUERY;
    uint32_t q = mprof_gpu_zone_begin(ctx->gpu, loc);
    if (q != MPROF_GPU_NO_QUERY)
        ctx->CmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, ctx->pool, q);
    return q;
}

static inline void mprof_vk__zone_end(mprof_vk_ctx *ctx, VkCommandBuffer cmd, uint32_t query)
{
    if (!ctx || query == MPROF_GPU_NO_QUERY)
        return;
    uint32_t q = mprof_gpu_zone_end(ctx->gpu, query);
    if (q != MPROF_GPU_NO_QUERY)
        ctx->CmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ctx->pool, q);
}

static inline void mprof_vk__scope_end(mprof_vk__scope *s)
{
    mprof_vk__zone_end(s->ctx, s->cmd, s->query);
}

#ifndef MPROF_NO_CLEANUP_ATTR
/* A GPU zone around the rest of the enclosing block of command buffer cmd. */
#define MPROF_VK_ZONE_C(ctx, cmd, name, color)                                                     \
    MPROF__SRCLOC(MPROF__CAT(mprof__vkloc_, __LINE__), name, color);                              \
    mprof_vk__scope MPROF__CAT(mprof__vkzone_, __LINE__)                                           \
        __attribute__((cleanup(mprof_vk__scope_end), unused)) = {                                  \
            (ctx), (cmd),                                                                          \
            mprof_vk__zone_begin((ctx), (cmd), &MPROF__CAT(mprof__vkloc_, __LINE__))}
#define MPROF_VK_ZONE(ctx, cmd, name) MPROF_VK_ZONE_C(ctx, cmd, name, 0)
#endif
/* Explicit pair: uint32_t q = MPROF_VK_ZONE_BEGIN(ctx, cmd, "Pass"); ... MPROF_VK_ZONE_END(ctx,
 * cmd, q); */
#define MPROF_VK_ZONE_BEGIN_C(ctx, cmd, name, color)                                               \
    mprof_vk__zone_begin((ctx), (cmd), ({                                                          \
                             MPROF__SRCLOC(mprof__loc_vk, name, color);                            \
                             &mprof__loc_vk;                                                       \
                         }))
#define MPROF_VK_ZONE_BEGIN(ctx, cmd, name) MPROF_VK_ZONE_BEGIN_C(ctx, cmd, name, 0)
#define MPROF_VK_ZONE_END(ctx, cmd, query) mprof_vk__zone_end((ctx), (cmd), (query))
#define MPROF_VK_COLLECT(ctx, cmd) ((void)mprof_vk_collect((ctx), (cmd)))

#else /* !MPROF_ENABLE: inline no-ops; nothing from libmprof is referenced. */

static inline int mprof_vk_has_calibrated_timestamps(VkInstance instance,
                                                     VkPhysicalDevice physical_device,
                                                     PFN_vkGetInstanceProcAddr gipa)
{
    (void)instance;
    (void)physical_device;
    (void)gipa;
    return 0;
}
static inline mprof_result mprof_vk_context_create(const mprof_vk_config *cfg,
                                                   mprof_vk_ctx **out_ctx)
{
    (void)cfg;
    if (out_ctx)
        *out_ctx = NULL;
    return MPROF_ERR_UNSUPPORTED;
}
static inline void mprof_vk_context_destroy(mprof_vk_ctx *ctx) { (void)ctx; }
static inline mprof_result mprof_vk_calibrate(mprof_vk_ctx *ctx)
{
    (void)ctx;
    return MPROF_ERR_UNSUPPORTED;
}
static inline uint32_t mprof_vk_collect(mprof_vk_ctx *ctx, VkCommandBuffer cmd)
{
    (void)ctx;
    (void)cmd;
    return 0;
}
static inline uint64_t mprof_vk_results(const mprof_vk_ctx *ctx)
{
    (void)ctx;
    return 0;
}
#define MPROF_VK_ZONE_C(ctx, cmd, name, color) ((void)0)
#define MPROF_VK_ZONE(ctx, cmd, name) ((void)0)
#define MPROF_VK_ZONE_BEGIN_C(ctx, cmd, name, color) ((uint32_t)MPROF_GPU_NO_QUERY)
#define MPROF_VK_ZONE_BEGIN(ctx, cmd, name) ((uint32_t)MPROF_GPU_NO_QUERY)
#define MPROF_VK_ZONE_END(ctx, cmd, query) ((void)sizeof(query))
#define MPROF_VK_COLLECT(ctx, cmd) ((void)0)

#endif /* MPROF_ENABLE */

#ifdef __cplusplus
}
#endif

#endif /* MPROF_VULKAN_H */
