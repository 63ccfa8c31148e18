/*
 * test_ffi.c - the exported zone entry points for language bindings (include/mprof/ffi.h):
 * zones begun and ended through them reach the capture exactly like MPROF_ZONE_C's, nest,
 * carry their call site, give 0 while the profiler is off, count a dropped end as lost, and
 * mprof_ffi_sizeof reports the public structs' sizes.
 */
#include "mprof/ffi.h"
#include "test_util.h"

#include <string.h>

static const mprof_srcloc outer_loc = {"ffi_outer", "test_fn", "ffi.rs", 12, MPROF_COLOR_PHYSICS};
static const mprof_srcloc inner_loc = {"ffi_inner", "test_fn", "ffi.rs", 13, 0};

static void test_zones_reach_the_capture(void **state)
{
    (void)state;
    const char *path = tu_temp_path("ffi.mprof");
    mprof_config cfg = {0};
    cfg.capture_path = path;
    cfg.listen = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    enum { FRAMES = 7, INNER = 3 };
    for (int f = 0; f < FRAMES; f++) {
        int a = mprof_ffi_zone_begin(&outer_loc);
        assert_int_equal(a, 1);
        for (int i = 0; i < INNER; i++) {
            int b = mprof_ffi_zone_begin(&inner_loc);
            assert_int_equal(b, 1);
            mprof_ffi_zone_end(b);
        }
        mprof_ffi_zone_end(a);
        mprof__frame_mark(NULL);
    }
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    assert_int_equal(st.events_lost, 0);

    tu_counts c;
    assert_int_equal(tu_count_capture(path, &c), 0);
    assert_int_equal(c.by_type[MPROF_EV_ZONE_BEGIN], FRAMES * (1 + INNER));
    assert_int_equal(c.by_type[MPROF_EV_ZONE_END], FRAMES * (1 + INNER));
    assert_true(c.st.complete);

    char cmd[1024], out[1 << 16];
    snprintf(cmd, sizeof cmd, "%s report --json %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    const char *outer = strstr(out, "\"name\": \"ffi_outer\"");
    const char *inner = strstr(out, "\"name\": \"ffi_inner\"");
    assert_non_null(outer);
    assert_non_null(inner);
    assert_non_null(strstr(outer, "\"count\": 7"));
    assert_non_null(strstr(inner, "\"count\": 21"));
    assert_non_null(strstr(out, "\"file\": \"ffi.rs\""));
}

static void test_off_and_lost(void **state)
{
    (void)state;
    /* Not started and no MPROF_CAPTURE: the first event tries the lazy start, which records
     * nothing without a capture path or a listener. Either way the end must accept the token. */
    int a = mprof_ffi_zone_begin(&outer_loc);
    assert_true(a == 0 || a == 1);
    mprof_ffi_zone_end(a);
    mprof_shutdown();
    assert_int_equal(mprof_ffi_zone_begin(&outer_loc), 0);
    mprof_ffi_zone_end(0);

    /* A token of 2 (begin dropped at the cap) counts the end as lost instead of writing it. */
    const char *path = tu_temp_path("ffi_lost.mprof");
    mprof_config cfg = {0};
    cfg.capture_path = path;
    cfg.listen = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    mprof_ffi_zone_end(mprof_ffi_zone_begin(&inner_loc)); /* this thread now records */
    mprof_stats before, after;
    mprof_get_stats(&before);
    mprof_ffi_zone_end(2);
    mprof_get_stats(&after);
    mprof_shutdown();
    assert_int_equal(after.events_lost, before.events_lost + 1);
}

static void test_sizeof(void **state)
{
    (void)state;
    assert_int_equal(mprof_ffi_sizeof(MPROF_FFI_TYPE_SRCLOC), sizeof(mprof_srcloc));
    assert_int_equal(mprof_ffi_sizeof(MPROF_FFI_TYPE_CONFIG), sizeof(mprof_config));
    assert_int_equal(mprof_ffi_sizeof(MPROF_FFI_TYPE_STATS), sizeof(mprof_stats));
    assert_int_equal(mprof_ffi_sizeof(MPROF_FFI_TYPE_INVALID), 0);
    assert_int_equal(mprof_ffi_sizeof((mprof_ffi_type)99), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zones_reach_the_capture),
        cmocka_unit_test(test_off_and_lost),
        cmocka_unit_test(test_sizeof),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
