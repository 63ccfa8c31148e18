/*
 * bench_gpu.c - what a GPU zone costs on the CPU, and how well GPU time is placed on the CPU
 * timeline. Prints one JSON object per line.
 *
 *   gpu_zone_cpu_cost   begin + end of a generic GPU zone (the query-pair ring and the two
 *                       records), without the graphics driver's own call, best of 5 runs;
 *                       next to it a CPU zone and two raw timer reads from the same run, and
 *                       the cost of uploading one timestamp (mprof_gpu_time).
 *   gpu_vk_zone_cpu_cost   the same through MPROF_VK_ZONE on the installed Vulkan driver,
 *                       vkCmdWriteTimestamp included (for scale).
 *   gpu_calibration     one compute pass per submission, submitted alone and waited for, R
 *                       times, recorded by two contexts on the same queue: one calibrated with
 *                       VK_EXT_calibrated_timestamps, one with the measured fallback. For each:
 *                       GPU-reported duration vs CPU-measured submit-to-fence time, and where
 *                       the calibrated GPU span falls inside the CPU bracket (start_offset =
 *                       GPU start - CPU submit, end_offset = CPU fence return - GPU end; both
 *                       are >= 0 when the calibration is right). Finally the measured
 *                       calibration's own pairing vs the extension's on the same GPU tick.
 *
 * usage: bench_gpu [--zones N] [--passes R] [--dir DIR]
 */
#define _POSIX_C_SOURCE 200809L
#define MPROF_ENABLE 1
#include "mprof/mprof.h"

#include "gpu_capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(MPROF_BENCH_VULKAN)
#include "gpu_vk_util.h"
#endif

#define REPS 5
#define BATCH 4096u

static uint64_t n_zones = 1000000;
static int n_passes = 20;
static const char *dir = "/tmp";
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int start(const char *path)
{
    mprof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.capture_path = path;
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.invariant_check = MPROF_TOGGLE_OFF;
    return mprof_startup(&cfg) == MPROF_OK ? 0 : -1;
}

/* ---- CPU cost ------------------------------------------------------------------------------ */

static uint32_t queries[BATCH];

static void cpu_cost(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/bench_gpu_cost.mprof", dir);
    if (start(path) != 0) {
        fprintf(stderr, "bench_gpu: cannot start the profiler (%s)\n", path);
        exit(1);
    }
    mprof_gpu_ctx ctx = mprof_gpu_context_new("bench", MPROF_GPU_API_OTHER, 1.0, 2 * BATCH);
    double best_zone = 1e30, best_upload = 1e30, best_cpu = 1e30, best_timer = 1e30;
    for (int rep = 0; rep < REPS; rep++) {
        uint64_t zone_ns = 0, upload_ns = 0, done = 0;
        while (done < n_zones) {
            uint64_t t0 = now_ns();
            for (uint32_t i = 0; i < BATCH; i++) {
                uint32_t q = MPROF_GPU_ZONE_BEGIN(ctx, "gpu zone");
                queries[i] = MPROF_GPU_ZONE_END(ctx, q);
            }
            uint64_t t1 = now_ns();
            for (uint32_t i = 0; i < BATCH; i++) {
                MPROF_GPU_TIME(ctx, queries[i], (int64_t)(2 * i + 1));
                MPROF_GPU_TIME(ctx, queries[i] - 1, (int64_t)(2 * i));
            }
            uint64_t t2 = now_ns();
            zone_ns += t1 - t0;
            upload_ns += t2 - t1;
            done += BATCH;
        }
        double z = (double)zone_ns / (double)done, u = (double)upload_ns / (double)(2 * done);
        best_zone = z < best_zone ? z : best_zone;
        best_upload = u < best_upload ? u : best_upload;

        uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < done; i++) {
            MPROF_ZONE("cpu zone");
        }
        double c = (double)(now_ns() - t0) / (double)done;
        best_cpu = c < best_cpu ? c : best_cpu;

        uint64_t acc = 0;
        t0 = now_ns();
        for (uint64_t i = 0; i < done; i++)
            acc += mprof_now_ns();
        double t = (double)(now_ns() - t0) / (double)done;
        sink += acc;
        best_timer = t < best_timer ? t : best_timer;
        mprof_flush();
    }
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_gpu_context_destroy(ctx);
    mprof_shutdown();
    remove(path);
    printf("{\"bench\":\"gpu_zone_cpu_cost\",\"zones\":%llu,\"ns_per_gpu_zone\":%.1f,"
           "\"ns_per_timestamp_upload\":%.1f,\"ns_per_cpu_zone\":%.1f,\"ns_per_now_ns\":%.1f,"
           "\"gpu_zone_over_cpu_zone\":%.2f,\"events_lost\":%llu,\"gpu_queries_lost\":%llu}\n",
           (unsigned long long)n_zones, best_zone, best_upload, best_cpu, best_timer,
           best_zone / best_cpu, (unsigned long long)st.events_lost,
           (unsigned long long)st.gpu_queries_lost);
}

#if defined(MPROF_BENCH_VULKAN)

/* ---- Vulkan: zone cost with the driver call, calibration error ----------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0.0;
}

static double minimum(const double *v, int n)
{
    double m = n ? v[0] : 0.0;
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

static mprof_vk_ctx *make_ctx(vkr *v, const char *name, int calibrated)
{
    mprof_vk_config c;
    memset(&c, 0, sizeof c);
    c.instance = v->inst;
    c.physical_device = v->pd;
    c.device = v->dev;
    c.queue = v->queue;
    c.queue_family = v->family;
    c.name = name;
    c.calibrated_timestamps = calibrated;
    c.host_query_reset = v->host_reset;
    c.frames_in_flight = 1;
    c.n_queries = 2 * BATCH;
    mprof_vk_ctx *ctx = NULL;
    mprof_result r = mprof_vk_context_create(&c, &ctx);
    if (r != MPROF_OK)
        fprintf(stderr, "bench_gpu: %s: %s\n", name, mprof_result_str(r));
    return ctx;
}

static int submit_wait(vkr *v, VkCommandBuffer cmd, uint64_t *t_submit, uint64_t *t_done)
{
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    VK_OK(vkResetFences(v->dev, 1, &v->fence[0]));
    *t_submit = mprof_now_ns();
    VK_OK(vkQueueSubmit(v->queue, 1, &si, v->fence[0]));
    VK_OK(vkWaitForFences(v->dev, 1, &v->fence[0], VK_TRUE, UINT64_MAX));
    *t_done = mprof_now_ns();
    return 0;
}

static void vk_zone_cost(vkr *v, mprof_vk_ctx *ctx)
{
    VkCommandBuffer cmd = v->cmd[1];
    double best = 1e30;
    for (int rep = 0; rep < REPS; rep++) {
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        vkResetCommandBuffer(cmd, 0);
        vkBeginCommandBuffer(cmd, &bi);
        MPROF_VK_COLLECT(ctx, VK_NULL_HANDLE);
        uint64_t t0 = now_ns();
        for (uint32_t i = 0; i < BATCH / 2; i++) {
            MPROF_VK_ZONE(ctx, cmd, "empty");
        }
        uint64_t t1 = now_ns();
        vkEndCommandBuffer(cmd);
        uint64_t a, b;
        submit_wait(v, cmd, &a, &b);
        for (int k = 0; k < 2; k++)
            MPROF_VK_COLLECT(ctx, VK_NULL_HANDLE); /* frames_in_flight = 1: read, then free */
        double z = (double)(t1 - t0) / (BATCH / 2);
        best = z < best ? z : best;
    }
    printf("{\"bench\":\"gpu_vk_zone_cpu_cost\",\"driver\":\"%s\",\"ns_per_vk_zone\":%.1f}\n",
           "lavapipe-or-installed", best);
}

static void calibration(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/bench_gpu_cal.mprof", dir);
    if (start(path) != 0)
        exit(1);
    vkr v;
    int rc = vkr_init(&v, 1, 1);
    if (rc != 0) {
        printf("{\"bench\":\"gpu_calibration\",\"skipped\":\"no Vulkan device\"}\n");
        vkr_free(&v);
        mprof_shutdown();
        remove(path);
        return;
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(v.pd, &props);
    mprof_vk_ctx *ext = v.calib_ext ? make_ctx(&v, "ext", 1) : NULL;
    mprof_vk_ctx *meas = make_ctx(&v, "measured", 0);
    if (!meas) {
        vkr_free(&v);
        mprof_shutdown();
        exit(1);
    }
    vk_zone_cost(&v, meas);

    double *t_sub = calloc((size_t)n_passes, sizeof(double));
    double *t_done = calloc((size_t)n_passes, sizeof(double));
    VkCommandBuffer cmd = v.cmd[0];
    for (int r = 0; r < n_passes; r++) {
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        vkResetCommandBuffer(cmd, 0);
        vkBeginCommandBuffer(cmd, &bi);
        MPROF_VK_COLLECT(ext, VK_NULL_HANDLE);
        MPROF_VK_COLLECT(meas, VK_NULL_HANDLE);
        {
            MPROF_VK_ZONE(ext, cmd, "pass");
            MPROF_VK_ZONE(meas, cmd, "pass");
            compute_pass(&v, cmd, 300);
        }
        vkEndCommandBuffer(cmd);
        uint64_t a = 0, b = 0;
        if (submit_wait(&v, cmd, &a, &b) != 0)
            break;
        t_sub[r] = (double)a;
        t_done[r] = (double)b;
    }
    vkDeviceWaitIdle(v.dev);
    mprof_vk_context_destroy(ext);
    mprof_vk_context_destroy(meas);
    vkr_free(&v);
    mprof_shutdown();

    gc_capture cap;
    if (gc_read(path, &cap) != 0)
        exit(1);
    uint32_t id_ext = 0, id_meas = 0;
    for (uint32_t i = 1; i <= GC_MAX_CTX; i++) {
        if (!cap.ctx[i].seen)
            continue;
        if (strcmp(cap.ctx[i].name, "ext") == 0)
            id_ext = i;
        if (strcmp(cap.ctx[i].name, "measured") == 0)
            id_meas = i;
    }
    double *gpu = calloc((size_t)n_passes, sizeof(double));
    double *diff = calloc((size_t)n_passes, sizeof(double));
    double *so = calloc((size_t)n_passes, sizeof(double));
    double *eo = calloc((size_t)n_passes, sizeof(double));
    for (int m = 0; m < 2; m++) {
        uint32_t id = m == 0 ? id_ext : id_meas;
        if (!id)
            continue;
        int n = 0;
        for (int i = 0; i < cap.n_zones && n < n_passes; i++) {
            gc_zone *z = &cap.zones[i];
            if (z->ctx != id || strcmp(z->name, "pass") != 0 || !z->got_begin || !z->got_end)
                continue;
            double gb = gc_gpu_to_cpu_ns(&cap, id, z->gpu_begin);
            double ge = gc_gpu_to_cpu_ns(&cap, id, z->gpu_end);
            gpu[n] = ge - gb;
            diff[n] = (t_done[n] - t_sub[n]) - gpu[n];
            so[n] = gb - t_sub[n];
            eo[n] = t_done[n] - ge;
            n++;
        }
        double so_min = minimum(so, n), eo_min = minimum(eo, n);
        printf("{\"bench\":\"gpu_calibration\",\"device\":\"%s\",\"method\":\"%s\",\"passes\":%d,"
               "\"gpu_ns_median\":%.0f,\"cpu_minus_gpu_ns_median\":%.0f,"
               "\"start_offset_ns_median\":%.0f,\"start_offset_ns_min\":%.0f,"
               "\"end_offset_ns_median\":%.0f,\"end_offset_ns_min\":%.0f}\n",
               props.deviceName, m == 0 ? "VK_EXT_calibrated_timestamps" : "measured", n,
               median(gpu, n), median(diff, n), median(so, n), so_min, median(eo, n), eo_min);
    }
    if (id_ext && id_meas) {
        /* The measured pairing (gpu_b, cpu_b) against the extension's line through the same tick. */
        const gc_ctx *e = &cap.ctx[id_ext], *mm = &cap.ctx[id_meas];
        double cpu_by_ext = (double)e->cal_cpu_ns + (double)(mm->cal_gpu - e->cal_gpu) * e->period_ns;
        printf("{\"bench\":\"gpu_calibration_measured_vs_ext\",\"error_ns\":%.0f}\n",
               (double)mm->cal_cpu_ns - cpu_by_ext);
    }
    free(t_sub);
    free(t_done);
    free(gpu);
    free(diff);
    free(so);
    free(eo);
    gc_free(&cap);
    remove(path);
}
#endif

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--zones") == 0 && i + 1 < argc)
            n_zones = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--passes") == 0 && i + 1 < argc)
            n_passes = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else {
            fprintf(stderr, "usage: bench_gpu [--zones N] [--passes R] [--dir DIR]\n");
            return 2;
        }
    }
    if (n_zones < BATCH)
        n_zones = BATCH;
    if (n_passes < 1)
        n_passes = 1;
    cpu_cost();
#if defined(MPROF_BENCH_VULKAN)
    calibration();
#else
    printf("{\"bench\":\"gpu_calibration\",\"skipped\":\"built without Vulkan\"}\n");
#endif
    return 0;
}
