/*
 * test_hist.c - streaming percentiles stay within the histogram's stated error.
 */
#include "analysis/hist.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

static void test_small_values_exact(void **state)
{
    (void)state;
    mprof_hist h = {0};
    for (uint64_t v = 1; v <= 50; v++)
        mprof_hist_add(&h, v);
    assert_int_equal(mprof_hist_quantile(&h, 0.5), 25);
    assert_int_equal(mprof_hist_quantile(&h, 1.0), 50);
    assert_int_equal(h.min, 1);
    assert_int_equal(h.n, 50);
    mprof_hist_free(&h);
}

static void test_relative_error(void **state)
{
    (void)state;
    mprof_hist h = {0};
    enum { N = 100000 };
    for (uint64_t i = 1; i <= N; i++)
        mprof_hist_add(&h, i * 997); /* 997 .. 99.7M ns */
    const double qs[] = {0.5, 0.9, 0.95, 0.99};
    for (int k = 0; k < 4; k++) {
        double truth = qs[k] * N * 997;
        double got = (double)mprof_hist_quantile(&h, qs[k]);
        assert_true(got > truth * 0.97 && got < truth * 1.03);
    }
    assert_true(mprof_hist_mean(&h) > 997.0 * (N + 1) / 2 * 0.999);
    assert_true(mprof_hist_stddev(&h) > 0);
    mprof_hist_free(&h);
}

static void test_quantile_sorted(void **state)
{
    (void)state;
    double v[] = {1, 2, 3, 4, 5};
    assert_true(mprof_quantile_sorted(v, 5, 0.5) == 3);
    assert_true(mprof_quantile_sorted(v, 5, 0.25) == 2);
    assert_true(mprof_quantile_sorted(v, 5, 1.0) == 5);
    assert_true(mprof_quantile_sorted(v, 0, 0.5) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_values_exact),
        cmocka_unit_test(test_relative_error),
        cmocka_unit_test(test_quantile_sorted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
