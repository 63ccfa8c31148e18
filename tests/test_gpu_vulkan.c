/*
 * test_gpu_vulkan.c - mprof/vulkan.h on a real Vulkan driver (Mesa's lavapipe in CI, any GPU
 * where one exists). Renders several passes per frame (compute, a render pass, compute again)
 * over several frames with two frames in flight, captures, and checks the capture: every GPU
 * zone came back, GPU spans nest as submitted, they lie in plausible bounds once calibrated, and
 * the CPU recorded each zone before the GPU started it. Runs twice: with
 * VK_EXT_calibrated_timestamps and host query reset, and with the measured calibration and
 * resets recorded into command buffers. Exits 77 (skipped) when there is no Vulkan device.
 */
#define _POSIX_C_SOURCE 200809L
#define MPROF_ENABLE
#include "mprof/vulkan.h"

#include "gpu_capture.h"
#include "gpu_vk_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#define SKIP_CODE 77
#define FRAMES 8

static char capture_path[512];

/* Records and submits one frame: Frame { Simulate, Shade, Post { Resolve } }. */
static int frame(vkr *v, mprof_vk_ctx *vk, int f)
{
    int i = f % 2;
    VK_OK(vkWaitForFences(v->dev, 1, &v->fence[i], VK_TRUE, UINT64_MAX));
    VK_OK(vkResetFences(v->dev, 1, &v->fence[i]));
    VkCommandBuffer cmd = v->cmd[i];
    VK_OK(vkResetCommandBuffer(cmd, 0));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VK_OK(vkBeginCommandBuffer(cmd, &bi));
    MPROF_VK_COLLECT(vk, v->host_reset && (f & 1) ? VK_NULL_HANDLE : cmd);
    {
        MPROF_VK_ZONE_C(vk, cmd, "Frame", MPROF_COLOR_RENDERER);
        {
            MPROF_VK_ZONE(vk, cmd, "Simulate");
            compute_pass(v, cmd, 200);
        }
        {
            MPROF_VK_ZONE(vk, cmd, "Shade");
            render_pass(v, cmd, 64);
        }
        uint32_t post = MPROF_VK_ZONE_BEGIN(vk, cmd, "Post");
        {
            MPROF_VK_ZONE(vk, cmd, "Resolve");
            compute_pass(v, cmd, 50);
        }
        MPROF_VK_ZONE_END(vk, cmd, post);
    }
    VK_OK(vkEndCommandBuffer(cmd));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    VK_OK(vkQueueSubmit(v->queue, 1, &si, v->fence[i]));
    MPROF_FRAME_MARK();
    return 0;
}

static const char *const zone_names[] = {"Frame", "Simulate", "Shade", "Post", "Resolve"};

/* tiny: a query ring too small for a frame, so zones are dropped (counted) every frame. */
static void run(int calibrated, int host_reset, int tiny)
{
    gc_temp_path(capture_path, sizeof capture_path, calibrated ? "test_gpu_vk_cal" : "test_gpu_vk");
    mprof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.capture_path = capture_path;
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.invariant_check = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    int64_t t_start = (int64_t)mprof_now_ns();

    vkr v;
    int rc = vkr_init(&v, calibrated, host_reset);
    if (rc == 1) {
        vkr_free(&v);
        mprof_shutdown();
        remove(capture_path);
        skip();
    }
    assert_int_equal(rc, 0);
    if (calibrated)
        assert_true(v.calib_ext); /* lavapipe has it; a device without it is a setup problem */

    mprof_vk_config c;
    memset(&c, 0, sizeof c);
    c.instance = v.inst;
    c.physical_device = v.pd;
    c.device = v.dev;
    c.queue = v.queue;
    c.queue_family = v.family;
    c.name = calibrated ? "Graphics (calibrated)" : "Graphics (measured)";
    c.calibrated_timestamps = v.calib_ext;
    c.host_query_reset = v.host_reset;
    c.frames_in_flight = 2;
    c.n_queries = tiny ? 8 : 64; /* 64: the ring wraps several times over the run */
    mprof_vk_ctx *vk = NULL;
    assert_int_equal(mprof_vk_context_create(&c, &vk), MPROF_OK);
    assert_non_null(vk);
    assert_int_equal(vk->calibrated, v.calib_ext);

    for (int f = 0; f < FRAMES; f++)
        assert_int_equal(frame(&v, vk, f), 0);
    vkDeviceWaitIdle(v.dev);
    mprof_vk_context_destroy(vk);
    vkr_free(&v);
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    int64_t t_end_bound = (int64_t)mprof_now_ns();

    gc_capture cap;
    assert_int_equal(gc_read(capture_path, &cap), 0);
    int n_ctx = 0;
    uint32_t id = 0;
    for (uint32_t i = 1; i <= GC_MAX_CTX; i++)
        if (cap.ctx[i].seen) {
            n_ctx++;
            id = i;
        }
    assert_int_equal(n_ctx, 1);
    assert_int_equal(cap.ctx[id].api, MPROF_GPU_API_VULKAN);
    assert_true(cap.ctx[id].n_calibrations >= 1);

    /* Every zone came back. */
    if (tiny) {
        /* Dropped zones leave no record and write no timestamp; the others all came back. */
        assert_true(st.gpu_queries_lost > 0);
        assert_int_equal(cap.n_zones + (int)st.gpu_queries_lost, FRAMES * 5);
        assert_int_equal((int)cap.n_gpu_time, 2 * cap.n_zones);
        for (int i = 0; i < cap.n_zones; i++)
            assert_true(cap.zones[i].got_begin && cap.zones[i].got_end);
        char want[32];
        snprintf(want, sizeof want, "%llu", (unsigned long long)st.gpu_queries_lost);
        assert_string_equal(cap.end_gpu_lost, want);
        gc_free(&cap);
        if (!getenv("MPROF_TEST_KEEP"))
            remove(capture_path);
        return;
    }
    assert_int_equal(cap.n_zones, FRAMES * 5);
    assert_int_equal(cap.stray_times, 0);
    assert_int_equal((int)cap.n_gpu_time, FRAMES * 5 * 2);
    /* Calibration error allowance: the extension is exact to the driver's deviation; the
     * measured calibration to half a submit-and-wait round trip. */
    double tol_ns = calibrated ? 20000.0 : 2000000.0;
    for (int i = 0; i < cap.n_zones; i++) {
        gc_zone *z = &cap.zones[i];
        assert_string_equal(z->name, zone_names[i % 5]);
        assert_true(z->got_begin && z->got_end);
        assert_true(z->cpu_end_ns >= z->cpu_begin_ns);
        assert_true(z->gpu_end >= z->gpu_begin);
        double gb = gc_gpu_to_cpu_ns(&cap, id, z->gpu_begin);
        double ge = gc_gpu_to_cpu_ns(&cap, id, z->gpu_end);
        /* Plausible bounds: inside the run, and the CPU recorded the zone before the GPU ran it. */
        assert_true(gb >= (double)t_start - tol_ns);
        assert_true(ge <= (double)t_end_bound + tol_ns);
        assert_true((double)z->cpu_begin_ns <= gb + tol_ns);
        assert_true(ge - gb < 10e9);
        /* Spans nest as submitted. */
        int depth_expected = i % 5 == 0 ? 0 : (i % 5 == 4 ? 2 : 1);
        assert_int_equal(z->depth, depth_expected);
        if (z->parent >= 0) {
            gc_zone *p = &cap.zones[z->parent];
            assert_true(p->gpu_begin <= z->gpu_begin);
            assert_true(z->gpu_end <= p->gpu_end);
        }
    }
    /* Siblings run in submission order (one queue, barriers between the passes). */
    for (int f = 0; f < FRAMES; f++) {
        gc_zone *z = &cap.zones[f * 5];
        assert_true(z[1].gpu_begin <= z[2].gpu_begin && z[2].gpu_begin <= z[3].gpu_begin);
        if (f > 0)
            assert_true(z[-5].gpu_end <= z[0].gpu_end);
    }
    assert_int_equal(st.gpu_queries_lost, 0);
    if (getenv("MPROF_TEST_VERBOSE")) {
        for (int i = 0; i < cap.n_zones; i++) {
            gc_zone *z = &cap.zones[i];
            double gb = gc_gpu_to_cpu_ns(&cap, id, z->gpu_begin);
            fprintf(stderr, "  %-9s cpu %10lld..%10lld  gpu start %+9.0f ns after record, %8.0f ns\n",
                    z->name, (long long)z->cpu_begin_ns, (long long)z->cpu_end_ns,
                    gb - (double)z->cpu_begin_ns, (double)(z->gpu_end - z->gpu_begin) * cap.ctx[id].period_ns);
        }
    }
    fprintf(stderr, "%s: %d zones, %d calibrations, lost %llu\n", c.name, cap.n_zones,
            cap.ctx[id].n_calibrations, (unsigned long long)st.gpu_queries_lost);
    gc_free(&cap);
    if (!getenv("MPROF_TEST_KEEP"))
        remove(capture_path);
}

static void test_calibrated_host_reset(void **state)
{
    (void)state;
    run(1, 1, 0);
}

static void test_measured_command_reset(void **state)
{
    (void)state;
    run(0, 0, 0);
}

static void test_query_exhaustion(void **state)
{
    (void)state;
    run(1, 1, 1);
}

/* Bad configs fail cleanly, leaving no context. */
static void test_bad_config(void **state)
{
    (void)state;
    mprof_vk_ctx *vk = (mprof_vk_ctx *)1;
    mprof_vk_config c;
    memset(&c, 0, sizeof c);
    assert_int_equal(mprof_vk_context_create(&c, &vk), MPROF_ERR_INVALID);
    assert_null(vk);
    assert_int_equal(mprof_vk_context_create(NULL, &vk), MPROF_ERR_INVALID);
    assert_int_equal(mprof_vk_collect(NULL, VK_NULL_HANDLE), 0);
    mprof_vk_context_destroy(NULL);
}

int main(void)
{
    /* Probe once: no instance or no device means this machine cannot run the test. */
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    VkInstance inst = VK_NULL_HANDLE;
    uint32_t n = 0;
    if (vkCreateInstance(&ici, NULL, &inst) != VK_SUCCESS) {
        printf("skipped: no Vulkan instance (install mesa-vulkan-drivers for lavapipe)\n");
        return SKIP_CODE;
    }
    vkEnumeratePhysicalDevices(inst, &n, NULL);
    vkDestroyInstance(inst, NULL);
    if (n == 0) {
        printf("skipped: no Vulkan device (install mesa-vulkan-drivers for lavapipe)\n");
        return SKIP_CODE;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_calibrated_host_reset),
        cmocka_unit_test(test_measured_command_reset),
        cmocka_unit_test(test_query_exhaustion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
