/*
 * compile_gpu.c - the GPU helper headers (mprof/vulkan.h, mprof/gl.h, and mprof/cuda.h where
 * the CUDA toolkit is) compile as C11 and C++11 (compile_gpu.cpp includes this file), with and
 * without MPROF_ENABLE, under -Wall -Wextra -Werror; without it, no mprof symbol is referenced
 * (checked with nm by ctest).
 */
#include "mprof/gl.h"
#include "mprof/vulkan.h"
#if defined(MPROF_COMPILE_CUDA)
#include "mprof/cuda.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif
int mprof_compile_gpu(mprof_vk_ctx *vk, VkCommandBuffer cmd, mprof_gl_ctx *gl);
#ifdef __cplusplus
}
#endif

int mprof_compile_gpu(mprof_vk_ctx *vk, VkCommandBuffer cmd, mprof_gl_ctx *gl)
{
    (void)vk;
    (void)cmd;
    (void)gl;
    MPROF_VK_COLLECT(vk, cmd);
    MPROF_GL_COLLECT(gl);
#ifndef MPROF_NO_CLEANUP_ATTR
    {
        MPROF_VK_ZONE_C(vk, cmd, "pass", MPROF_COLOR_RENDERER);
        MPROF_GL_ZONE(gl, "draw");
    }
#endif
    uint32_t q = MPROF_VK_ZONE_BEGIN(vk, cmd, "explicit");
    MPROF_VK_ZONE_END(vk, cmd, q);
    uint32_t g = MPROF_GL_ZONE_BEGIN_C(gl, "explicit", 0x123456);
    MPROF_GL_ZONE_END(gl, g);
#if defined(MPROF_COMPILE_CUDA)
    mprof_cuda_ctx *cu = NULL;
    cudaStream_t s = 0;
    MPROF_CUDA_COLLECT(cu);
    {
        MPROF_CUDA_ZONE(cu, s, "kernel");
    }
    uint32_t c = MPROF_CUDA_ZONE_BEGIN(cu, s, "explicit");
    MPROF_CUDA_ZONE_END(cu, s, c);
    (void)s;
    mprof_cuda_context_destroy(cu);
#endif
    mprof_vk_context_destroy(NULL);
    mprof_gl_context_destroy(NULL);
    return 0;
}
