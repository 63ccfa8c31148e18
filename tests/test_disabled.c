/*
 * test_disabled.c - without MPROF_ENABLE every macro compiles away: arguments are never
 * evaluated, typed constants have their documented values, and (checked by nm in
 * check_no_symbols.sh) the object references no mprof symbol.
 */
#include "mprof/mprof.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static int evaluated;
static __attribute__((unused)) int touch(void)
{
    return ++evaluated;
}

static void test_arguments_not_evaluated(void **state)
{
    (void)state;
    MPROF_ZONE_TEXT("x", (size_t)touch());
    MPROF_ZONE_VALUE(touch());
    MPROF_PLOT("p", touch());
    MPROF_PLOT_INT("p", touch());
    MPROF_MESSAGEF(MPROF_LOG_INFO, "%d", touch());
    MPROF_ALLOC((void *)0, (size_t)touch());
    MPROF_LOCK_WAIT((mprof_lock_id)touch(), 0);
    MPROF_GPU_TIME(0, (uint32_t)touch(), 0);
    MPROF_FRAME_IMAGE((const void *)(size_t)touch(), touch(), touch());
    MPROF_ASYNC_BEGIN("loads", touch(), "texture");
    MPROF_ASYNC_BEGIN_DYN("loads", touch(), touch() ? "a" : "b");
    MPROF_ASYNC_END("loads", touch());
    assert_int_equal(evaluated, 0);
}

static void test_typed_constants(void **state)
{
    (void)state;
    mprof_lock_id lk = MPROF_LOCK_ANNOUNCE("l", MPROF_LOCK_KIND_MUTEX);
    mprof_gpu_ctx g = MPROF_GPU_CONTEXT("g", MPROF_GPU_API_VULKAN, 1.0, 8);
    assert_int_equal(lk, 0);
    assert_int_equal(g, 0);
    assert_int_equal(MPROF_GPU_ZONE_BEGIN(g, "x"), MPROF_GPU_NO_QUERY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arguments_not_evaluated),
        cmocka_unit_test(test_typed_constants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
