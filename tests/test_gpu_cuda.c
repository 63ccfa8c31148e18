/*
 * test_gpu_cuda.c - mprof/cuda.h on a real NVIDIA GPU: several passes per frame (device memset,
 * device-to-device copies) on a stream over several frames, two frames in flight; the capture
 * is checked like the Vulkan and GL ones. Built wherever the CUDA toolkit is; where there is no
 * NVIDIA GPU it prints the reason and exits 77, which ctest reports as skipped.
 */
#define _POSIX_C_SOURCE 200809L
#define MPROF_ENABLE
#include "mprof/cuda.h"

#include "gpu_capture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#define SKIP_CODE 77
#define FRAMES 8
#define BYTES (64u << 20)

static char capture_path[512];

static const char *const zone_names[] = {"Frame", "Clear", "Copy", "Post", "CopyBack"};

static void test_cuda_zones(void **state)
{
    (void)state;
    gc_temp_path(capture_path, sizeof capture_path, "test_gpu_cuda");
    mprof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.capture_path = capture_path;
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.invariant_check = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    int64_t t_start = (int64_t)mprof_now_ns();

    void *a = NULL, *b = NULL;
    cudaStream_t stream;
    assert_int_equal(cudaMalloc(&a, BYTES), cudaSuccess);
    assert_int_equal(cudaMalloc(&b, BYTES), cudaSuccess);
    assert_int_equal(cudaStreamCreate(&stream), cudaSuccess);
    cudaEvent_t done[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming), cudaSuccess);

    mprof_cuda_config c;
    memset(&c, 0, sizeof c);
    c.name = "CUDA";
    c.n_queries = 64;
    mprof_cuda_ctx *cu = NULL;
    assert_int_equal(mprof_cuda_context_create(&c, &cu), MPROF_OK);
    assert_non_null(cu);

    for (int f = 0; f < FRAMES; f++) {
        if (f >= 2)
            assert_int_equal(cudaEventSynchronize(done[f % 2]), cudaSuccess);
        MPROF_CUDA_COLLECT(cu);
        {
            MPROF_CUDA_ZONE_C(cu, stream, "Frame", MPROF_COLOR_RENDERER);
            {
                MPROF_CUDA_ZONE(cu, stream, "Clear");
                assert_int_equal(cudaMemsetAsync(a, f, BYTES, stream), cudaSuccess);
            }
            {
                MPROF_CUDA_ZONE(cu, stream, "Copy");
                assert_int_equal(cudaMemcpyAsync(b, a, BYTES, cudaMemcpyDeviceToDevice, stream),
                                 cudaSuccess);
            }
            uint32_t post = MPROF_CUDA_ZONE_BEGIN(cu, stream, "Post");
            {
                MPROF_CUDA_ZONE(cu, stream, "CopyBack");
                assert_int_equal(cudaMemcpyAsync(a, b, BYTES, cudaMemcpyDeviceToDevice, stream),
                                 cudaSuccess);
            }
            MPROF_CUDA_ZONE_END(cu, stream, post);
        }
        assert_int_equal(cudaEventRecord(done[f % 2], stream), cudaSuccess);
        MPROF_FRAME_MARK();
    }
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    mprof_cuda_context_destroy(cu);
    for (int i = 0; i < 2; i++)
        cudaEventDestroy(done[i]);
    cudaStreamDestroy(stream);
    cudaFree(a);
    cudaFree(b);
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    int64_t t_end = (int64_t)mprof_now_ns();
    assert_int_equal(st.gpu_queries_lost, 0);

    gc_capture cap;
    assert_int_equal(gc_read(capture_path, &cap), 0);
    uint32_t id = 0;
    for (uint32_t i = 1; i <= GC_MAX_CTX; i++)
        if (cap.ctx[i].seen)
            id = i;
    assert_int_not_equal(id, 0);
    assert_int_equal(cap.ctx[id].api, MPROF_GPU_API_CUDA);
    assert_int_equal(cap.n_zones, FRAMES * 5);
    assert_int_equal(cap.stray_times, 0);
    /* Calibration: an event on an idle stream between two clock reads, ~10 us. */
    const double tol_ns = 100000.0;
    for (int i = 0; i < cap.n_zones; i++) {
        gc_zone *z = &cap.zones[i];
        assert_string_equal(z->name, zone_names[i % 5]);
        assert_true(z->got_begin && z->got_end);
        assert_true(z->gpu_end >= z->gpu_begin);
        double gb = gc_gpu_to_cpu_ns(&cap, id, z->gpu_begin);
        double ge = gc_gpu_to_cpu_ns(&cap, id, z->gpu_end);
        assert_true(gb >= (double)t_start - tol_ns);
        assert_true(ge <= (double)t_end + tol_ns);
        assert_true((double)z->cpu_begin_ns <= gb + tol_ns);
        if (z->parent >= 0) {
            gc_zone *p = &cap.zones[z->parent];
            assert_true(p->gpu_begin <= z->gpu_begin);
            assert_true(z->gpu_end <= p->gpu_end);
        }
        fprintf(stderr, "  %-9s gpu start %+10.0f ns after issue, %9.0f ns\n", z->name,
                gb - (double)z->cpu_begin_ns, ge - gb);
    }
    gc_free(&cap);
    if (!getenv("MPROF_TEST_KEEP"))
        remove(capture_path);
}

int main(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("skipped: no usable NVIDIA GPU (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
        return SKIP_CODE;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_zones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
