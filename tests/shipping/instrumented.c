/*
 * instrumented.c - a small program that uses every mprof macro, for the shipping-strip test
 * (check_shipping.cmake). Each macro use is a whole line, so the test can make a copy with every
 * macro line blanked out (keeping line numbers) and compare the compiled code of that copy with
 * the shipping build of this file. The value-returning macros are inside the VALUE_MACROS block:
 * their variables are dead stores at -O0, so the -O0 comparison leaves them out.
 */
#include <mprof/mprof.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int side_effects;

/* A call that must never happen in a shipping build: macros do not evaluate their arguments. */
static double costly(double x)
{
    side_effects++;
    printf("costly(%g)\n", x);
    return x * 2.0;
}

static double physics_step(double *state, int n)
{
    MPROF_ZONE_C("Physics::step", MPROF_COLOR_PHYSICS);
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        MPROF_ZONE("Physics::body");
        state[i] = state[i] * 0.99 + 0.5;
        sum += state[i];
    }
    MPROF_ZONE_VALUE(n);
    MPROF_ZONE_TEXT("bodies", 6);
    MPROF_PLOT("physics.sum", costly(sum));
    MPROF_PLOT_INT("physics.n", n);
    return sum;
}

static void render(int frame)
{
    MPROF_ZONE_BEGIN_C("Render", MPROF_COLOR_RENDERER);
    MPROF_ZONE_NAME("Render (dynamic)", 16);
    MPROF_MESSAGEF(MPROF_LOG_INFO, "frame %d rendered, %g", frame, costly(frame));
    MPROF_ZONE_END();
    MPROF_ZONE_BEGIN("Present");
    MPROF_MESSAGE(MPROF_LOG_DEBUG, "present");
    MPROF_ZONE_END();
}

int main(int argc, char **argv)
{
    (void)argv;
    MPROF_THREAD_NAME("main");
    MPROF_APP_INFO("shipping strip test");
    MPROF_PLOT_CONFIG("physics.sum", MPROF_PLOT_FORMAT_NUMBER, MPROF_PLOT_STYLE_LINE, 0);
    int n = 16 + argc;
    double *state = malloc((size_t)n * sizeof *state);
    if (!state)
        return 1;
    MPROF_ALLOC(state, (size_t)n * sizeof *state);
    MPROF_ALLOC_NAMED(state, 8, "pool");
    MPROF_ALLOC_CS(state, 8, 4);
    MPROF_ALLOC_NAMED_CS(state, 8, "pool", 4);
    for (int i = 0; i < n; i++)
        state[i] = (double)i;
#ifndef NO_VALUE_MACROS
    mprof_lock_id lock = MPROF_LOCK_ANNOUNCE("state lock", MPROF_LOCK_KIND_MUTEX);
    mprof_gpu_ctx gpu = MPROF_GPU_CONTEXT("gpu", MPROF_GPU_API_OTHER, 1.0, 64);
#endif
    double total = 0.0;
    for (int frame = 0; frame < 3; frame++) {
        MPROF_FRAME_BEGIN("Update");
        MPROF_FIBER_ENTER("job fiber");
#ifndef NO_VALUE_MACROS
        MPROF_LOCK_WAIT(lock, 0);
        MPROF_LOCK_OBTAINED(lock, 0);
        total += physics_step(state, n);
        MPROF_LOCK_RELEASED(lock, 0);
        MPROF_LOCK_TRY_FAILED(lock, 1);
        uint32_t q0 = MPROF_GPU_ZONE_BEGIN_C(gpu, "draw", MPROF_COLOR_RENDERER);
        uint32_t q1 = MPROF_GPU_ZONE_BEGIN(gpu, "blit");
        uint32_t q2 = MPROF_GPU_ZONE_END(gpu, q1);
        MPROF_GPU_TIME(gpu, q0, 100);
        MPROF_GPU_TIME(gpu, q1, 200);
        MPROF_GPU_TIME(gpu, q2, 300);
        MPROF_GPU_CALIBRATE(gpu, 1000, 2000);
#else
        total += physics_step(state, n);
#endif
        MPROF_FIBER_LEAVE();
        MPROF_ASYNC_BEGIN("loads", (uint64_t)costly(3.0), "texture");
        MPROF_ASYNC_BEGIN_DYN("loads", (uint64_t)frame + 10, costly(1.0) > 0 ? "dyn" : "name");
        MPROF_ASYNC_END("loads", (uint64_t)costly(4.0));
        MPROF_FRAME_END("Update");
        render(frame);
        MPROF_FRAME_IMAGE(state, (int)costly(2.0), (int)costly(1.0));
        MPROF_FRAME_MARK_NAMED("Render");
        MPROF_FRAME_MARK();
    }
    MPROF_FREE_NAMED_CS(state, "pool", 4);
    MPROF_FREE_CS(state, 4);
    MPROF_FREE_NAMED(state, "pool");
    MPROF_POOL_DISCARD("pool");
    MPROF_FREE(state);
    free(state);
    printf("total %.3f, side effects %d\n", total, side_effects);
    return side_effects != 0;
}
