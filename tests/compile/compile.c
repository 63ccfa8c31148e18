/* Compiled as C11 and as C++ (compile.cpp includes it), with and without MPROF_ENABLE: every
 * macro of the public header must compile in both languages and both modes. */
#include "mprof/mprof.h"
#include "mprof/ffi.h"

int mprof_compile_check(int x);
int mprof_compile_check(int x)
{
    /* Declarations first: compile.c is also built with -Wdeclaration-after-statement. */
    mprof_lock_id lk;
    mprof_gpu_ctx g;
    uint32_t q0, q1;
    MPROF_ZONE("scoped");
    MPROF_ZONE_C("colored", MPROF_COLOR_AI);
    MPROF_ZONE_BEGIN("explicit");
    MPROF_ZONE_BEGIN_C("explicit colored", MPROF_COLOR_AUDIO);
    MPROF_ZONE_TEXT("t", 1);
    MPROF_ZONE_NAME("n", 1);
    MPROF_ZONE_VALUE(x);
    MPROF_ZONE_END();
    MPROF_ZONE_END();
    MPROF_FRAME_MARK();
    MPROF_FRAME_MARK_NAMED("f");
    MPROF_FRAME_IMAGE(&x, 1, 1);
    MPROF_FRAME_BEGIN("d");
    MPROF_FRAME_END("d");
    MPROF_PLOT("p", 1.5);
    MPROF_PLOT_INT("q", x);
    MPROF_PLOT_CONFIG("q", MPROF_PLOT_FORMAT_MEMORY, MPROF_PLOT_STYLE_STEP, 0);
    MPROF_MESSAGE(MPROF_LOG_INFO, "m");
    MPROF_MESSAGEF(MPROF_LOG_WARN, "m %d", x);
    MPROF_THREAD_NAME("t");
    MPROF_APP_INFO("a");
    MPROF_ALLOC(&x, 4);
    MPROF_FREE(&x);
    MPROF_ALLOC_NAMED(&x, 4, "pool");
    MPROF_FREE_NAMED(&x, "pool");
    MPROF_ALLOC_CS(&x, 4, 8);
    MPROF_FREE_CS(&x, 8);
    MPROF_ALLOC_NAMED_CS(&x, 4, "pool", 8);
    MPROF_FREE_NAMED_CS(&x, "pool", 8);
    MPROF_POOL_DISCARD("pool");
    MPROF_FIBER_ENTER("fiber");
    MPROF_FIBER_LEAVE();
    MPROF_ASYNC_BEGIN("loads", x, "texture");
    MPROF_ASYNC_BEGIN_DYN("loads", (uint64_t)x + 1, "built at run time");
    MPROF_ASYNC_END("loads", x);
    lk = MPROF_LOCK_ANNOUNCE("lock", MPROF_LOCK_KIND_MUTEX);
    MPROF_LOCK_WAIT(lk, 0);
    MPROF_LOCK_OBTAINED(lk, 0);
    MPROF_LOCK_RELEASED(lk, 0);
    MPROF_LOCK_TRY_FAILED(lk, 1);
    g = MPROF_GPU_CONTEXT("gpu", MPROF_GPU_API_OTHER, 1.0, 64);
    MPROF_GPU_CALIBRATE(g, 0, 0);
    q0 = MPROF_GPU_ZONE_BEGIN(g, "pass");
    q1 = MPROF_GPU_ZONE_END(g, q0);
    MPROF_GPU_TIME(g, q0, 1);
    MPROF_GPU_TIME(g, q1, 2);
    (void)lk;
    (void)g;
    return x + (int)(q0 & 1) + (int)(q1 & 1);
}
