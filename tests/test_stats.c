/*
 * test_stats.c - percentiles, the Mann-Whitney U test and the bootstrap (src/gate/stats.c).
 * Expected values are worked by hand in the comments, so a wrong formula cannot pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gate/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_percentile_sorted(void **state)
{
    (void)state;
    const double v[5] = {1, 2, 3, 4, 5};
    assert_float_equal(mprof__percentile_sorted(v, 5, 0), 1.0, 1e-12);
    assert_float_equal(mprof__percentile_sorted(v, 5, 50), 3.0, 1e-12);
    /* h = 4 * 0.95 = 3.8: v[3] + 0.8 * (v[4] - v[3]) = 4.8 */
    assert_float_equal(mprof__percentile_sorted(v, 5, 95), 4.8, 1e-12);
    /* h = 4 * 0.25 = 1: exactly v[1] */
    assert_float_equal(mprof__percentile_sorted(v, 5, 25), 2.0, 1e-12);
    assert_float_equal(mprof__percentile_sorted(v, 5, 100), 5.0, 1e-12);
    assert_float_equal(mprof__percentile_sorted(v, 1, 95), 1.0, 1e-12);
    assert_float_equal(mprof__percentile_sorted(v, 0, 95), 0.0, 1e-12);
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static void test_percentile_select_matches_sort(void **state)
{
    (void)state;
    uint64_t seed = 42;
    for (int round = 0; round < 50; round++) {
        size_t n = 1 + (size_t)(lcg(&seed) % 500);
        double *v = malloc(n * sizeof *v), *sorted = malloc(n * sizeof *v),
               *scratch = malloc(n * sizeof *v);
        assert_non_null(v);
        assert_non_null(sorted);
        assert_non_null(scratch);
        for (size_t i = 0; i < n; i++) /* few distinct values on even rounds: many ties */
            v[i] = (double)(lcg(&seed) % (round % 2 ? 100000 : 7)) / 10.0;
        memcpy(sorted, v, n * sizeof *v);
        mprof__sort_doubles(sorted, n);
        const double ps[] = {0, 1, 50, 90, 95, 99, 99.9, 100};
        for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
            assert_float_equal(mprof__percentile_select(v, n, ps[k], scratch),
                               mprof__percentile_sorted(sorted, n, ps[k]), 1e-9);
        for (size_t i = 1; i < n; i++)
            assert_true(sorted[i - 1] <= sorted[i]);
        free(v);
        free(sorted);
        free(scratch);
    }
}

static void test_normal(void **state)
{
    (void)state;
    assert_float_equal(mprof__normal_sf(0.0), 0.5, 1e-12);
    assert_float_equal(mprof__normal_sf(1.959963985), 0.025, 1e-6);
    assert_float_equal(mprof__normal_isf(0.05), 1.644853627, 1e-6);
    assert_float_equal(mprof__normal_isf(0.5), 0.0, 1e-9);
    assert_float_equal(mprof__normal_isf(0.975), -1.959963985, 1e-6);
}

static void test_mwu_exact(void **state)
{
    (void)state;
    mprof_mwu m;
    /* Complete separation, 5 vs 5: U = 25, p = 1 / C(10, 5) = 1 / 252. */
    const double a[5] = {1, 2, 3, 4, 5}, b[5] = {6, 7, 8, 9, 10};
    assert_int_equal(mprof__mann_whitney(a, 5, b, 5, &m), 0);
    assert_true(m.exact);
    assert_float_equal(m.u, 25.0, 1e-12);
    assert_float_equal(m.p_greater, 1.0 / 252.0, 1e-12);
    assert_float_equal(m.p_less, 1.0, 1e-12);
    assert_float_equal(m.effect, 1.0, 1e-12);

    /* Interleaved 3 vs 3: a = {1,3,5}, b = {2,4,6}. U_b = 1 + 2 + 3 = 6. The counts of U for
     * m = n = 3 are 1,1,2,3,3,3,3,2,1,1 (sum 20), so P(U >= 6) = (3+2+1+1)/20 = 0.35 and
     * P(U <= 6) = (1+1+2+3+3+3+3)/20 = 0.8. */
    const double c[3] = {1, 3, 5}, d[3] = {2, 4, 6};
    assert_int_equal(mprof__mann_whitney(c, 3, d, 3, &m), 0);
    assert_float_equal(m.u, 6.0, 1e-12);
    assert_float_equal(m.p_greater, 0.35, 1e-12);
    assert_float_equal(m.p_less, 0.8, 1e-12);

    assert_float_equal(mprof__mwu_min_p(3, 3), 0.05, 1e-12);
    assert_float_equal(mprof__mwu_min_p(4, 4), 1.0 / 70.0, 1e-12);
    assert_float_equal(mprof__mwu_min_p(1, 9), 0.1, 1e-12);
}

static void test_mwu_ties_normal(void **state)
{
    (void)state;
    /* a = {1,2,3,4}, b = {3,4,5,6}: ranks 1, 2, 3.5, 3.5, 5.5, 5.5, 7, 8; R_b = 24, U_b = 14.
     * Two tie groups of 2: sum(t^3 - t) = 12; var = 16/12 * (9 - 12/56) = 11.7142857;
     * z = (14 - 8 - 0.5) / 3.4226139 = 1.606959; p = 0.0540317. */
    const double a[4] = {1, 2, 3, 4}, b[4] = {3, 4, 5, 6};
    mprof_mwu m;
    assert_int_equal(mprof__mann_whitney(a, 4, b, 4, &m), 0);
    assert_false(m.exact);
    assert_float_equal(m.u, 14.0, 1e-12);
    assert_float_equal(m.z, 6.0 / 3.422613871631697, 1e-9);
    assert_float_equal(m.p_greater, 0.05403168646878431, 1e-9);
    assert_float_equal(m.p_less, 0.9712265245628569, 1e-9);
    /* All values tied: no evidence either way. */
    const double t[3] = {2, 2, 2};
    assert_int_equal(mprof__mann_whitney(t, 3, t, 3, &m), 0);
    assert_float_equal(m.p_greater, 1.0, 1e-12);
    /* Empty input is refused. */
    assert_int_equal(mprof__mann_whitney(a, 0, b, 4, &m), -1);
}

static void test_mwu_large_shift(void **state)
{
    (void)state;
    enum { N = 400 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    uint64_t s = 7;
    for (int i = 0; i < N; i++) {
        a[i] = 10.0 + (double)(lcg(&s) % 1000) / 1000.0;
        b[i] = 10.0 + (double)(lcg(&s) % 1000) / 1000.0;
        c[i] = 10.3 + (double)(lcg(&s) % 1000) / 1000.0;
    }
    mprof_mwu m;
    assert_int_equal(mprof__mann_whitney(a, N, b, N, &m), 0);
    assert_false(m.exact);
    assert_true(m.p_greater > 0.01); /* same distribution */
    assert_int_equal(mprof__mann_whitney(a, N, c, N, &m), 0);
    assert_true(m.p_greater < 1e-6); /* shifted by 30 % of the spread */
    assert_true(m.p_less > 0.99);
    free(a);
    free(b);
    free(c);
}

static void test_bootstrap(void **state)
{
    (void)state;
    enum { N = 300 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    uint64_t s = 99;
    for (int i = 0; i < N; i++) {
        a[i] = 10.0 + (double)(lcg(&s) % 1000) / 500.0;
        b[i] = a[i] * 1.2;
    }
    size_t st[2] = {0, N};
    mprof_sample_runs ra = {a, st, 1, 0}, rb = {b, st, 1, 0};
    mprof_ratio_ci ci, ci2;
    /* Against itself: the point ratio is 1 and the interval contains it. */
    assert_int_equal(mprof__bootstrap_ratio_ci(&ra, &ra, 95, 1000, 0.95, 1, &ci), 0);
    assert_float_equal(ci.point, 1.0, 1e-12);
    assert_true(ci.lo <= 1.0 && ci.hi >= 1.0);
    /* Scaled by 1.2: point 1.2, interval around it and above 1. */
    assert_int_equal(mprof__bootstrap_ratio_ci(&ra, &rb, 95, 1000, 0.95, 1, &ci), 0);
    assert_float_equal(ci.point, 1.2, 1e-9);
    assert_true(ci.lo > 1.0 && ci.lo < 1.2 && ci.hi > 1.2);
    /* Same seed, same answer; another seed, another (close) answer. */
    assert_int_equal(mprof__bootstrap_ratio_ci(&ra, &rb, 95, 1000, 0.95, 1, &ci2), 0);
    assert_memory_equal(&ci, &ci2, sizeof ci);
    assert_int_equal(mprof__bootstrap_ratio_ci(&ra, &rb, 95, 1000, 0.95, 2, &ci2), 0);
    assert_float_equal(ci2.point, ci.point, 1e-12); /* the point estimate takes no resampling */
    assert_true(ci2.lo != ci.lo || ci2.hi != ci.hi);
    assert_float_equal(ci2.lo, ci.lo, 0.02);
    assert_float_equal(ci2.hi, ci.hi, 0.02);
    /* Hierarchical: three runs per side, the third baseline run much slower; the run-level
     * resampling must widen the interval against the single-run view. */
    for (int i = 200; i < N; i++)
        a[i] *= 1.5;
    size_t st3[4] = {0, 100, 200, N};
    mprof_sample_runs h_a = {a, st3, 3, 0}, h_b = {b, st3, 3, 0}, f_a = {a, st, 1, 0}, f_b = {b, st, 1, 0};
    mprof_ratio_ci hc, fc;
    assert_int_equal(mprof__bootstrap_ratio_ci(&h_a, &h_b, 95, 1000, 0.95, 3, &hc), 0);
    assert_int_equal(mprof__bootstrap_ratio_ci(&f_a, &f_b, 95, 1000, 0.95, 3, &fc), 0);
    assert_float_equal(hc.point, fc.point, 1e-12);
    assert_true(hc.hi - hc.lo > fc.hi - fc.lo);
    /* Bad input. */
    size_t empty[2] = {0, 0};
    mprof_sample_runs re = {a, empty, 1, 0};
    assert_int_equal(mprof__bootstrap_ratio_ci(&re, &rb, 95, 100, 0.95, 1, &ci), -1);
    double zeros[3] = {0, 0, 0};
    size_t st0[2] = {0, 3};
    mprof_sample_runs rz = {zeros, st0, 1, 0};
    assert_int_equal(mprof__bootstrap_ratio_ci(&rz, &rb, 95, 100, 0.95, 1, &ci), -1);
    free(a);
    free(b);
}


/* Serially correlated samples: 20 bursts of 100 frames, each burst shifted by its own offset,
 * the same process on both sides. Frame by frame the sides differ "significantly"; block by
 * block they do not, and the design effect says how correlated the frames are. */
static void test_correlated(void **state)
{
    (void)state;
    enum { N = 2000, BURST = 100 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    uint64_t s = 5;
    double off_a = 0, off_b = 0;
    for (int i = 0; i < N; i++) {
        if (i % BURST == 0) {
            off_a = (double)(lcg(&s) % 1000) / 500.0; /* 0 .. 2 */
            off_b = (double)(lcg(&s) % 1000) / 500.0;
        }
        a[i] = 10.0 + off_a + (double)(lcg(&s) % 1000) / 5000.0;
        b[i] = 10.0 + off_b + (double)(lcg(&s) % 1000) / 5000.0;
    }
    size_t st[2] = {0, N};
    mprof_sample_runs ia = {a, st, 1, 0}, ib = {b, st, 1, 0};
    mprof_sample_runs ca = {a, st, 1, 20}, cb = {b, st, 1, 20};
    mprof_mwu plain, corr;
    assert_int_equal(mprof__mann_whitney_runs(&ia, &ib, &plain), 0);
    assert_int_equal(mprof__mann_whitney_runs(&ca, &cb, &corr), 0);
    assert_float_equal(plain.design_effect, 1.0, 0);
    assert_float_equal(plain.u, corr.u, 1e-9);
    /* Blocks of 100 frames that move together: the design effect is near 100. */
    assert_true(corr.design_effect > 30.0);
    /* The z score shrinks by the square root of the design effect. */
    assert_float_equal(corr.z, plain.z / sqrt(corr.design_effect), 1e-9);
    assert_true(fmin(corr.p_greater, corr.p_less) > fmin(plain.p_greater, plain.p_less));

    /* Independent frames: the design effect stays near 1. */
    for (int i = 0; i < N; i++) {
        a[i] = 10.0 + (double)(lcg(&s) % 1000) / 500.0;
        b[i] = 10.0 + (double)(lcg(&s) % 1000) / 500.0;
    }
    assert_int_equal(mprof__mann_whitney_runs(&ca, &cb, &corr), 0);
    assert_true(corr.design_effect < 3.0);

    /* The block bootstrap widens the interval of bursty data against the frame bootstrap. */
    for (int i = 0; i < N; i++) {
        if (i % BURST == 0)
            off_a = (double)(lcg(&s) % 1000) / 200.0;
        a[i] = 10.0 + off_a + (double)(lcg(&s) % 1000) / 5000.0;
        b[i] = a[(i + 7 * BURST) % N];
    }
    mprof_ratio_ci fi, bl;
    assert_int_equal(mprof__bootstrap_ratio_ci(&ia, &ib, 95, 500, 0.95, 9, &fi), 0);
    assert_int_equal(mprof__bootstrap_ratio_ci(&ca, &cb, 95, 500, 0.95, 9, &bl), 0);
    assert_float_equal(fi.point, bl.point, 0);
    assert_true(bl.hi - bl.lo > 1.5 * (fi.hi - fi.lo));
    free(a);
    free(b);
}

/* Student's t quantiles against the tables (exact for 1 and 2 degrees of freedom), and the
 * run-level interval on hand-worked values. */
static void test_t_and_run_interval(void **state)
{
    (void)state;
    assert_float_equal(mprof__t_isf(0.025, 1), 12.7062047, 1e-6);
    assert_float_equal(mprof__t_isf(0.025, 1.7), 12.7062047, 1e-6); /* taken as 1: wider */
    assert_float_equal(mprof__t_isf(0.025, 2), 4.30265273, 1e-6);
    assert_float_equal(mprof__t_isf(0.025, 3), 3.18245, 3.18245 * 0.002);
    assert_float_equal(mprof__t_isf(0.025, 4), 2.77645, 2.77645 * 0.002);
    assert_float_equal(mprof__t_isf(0.025, 10), 2.22814, 2.22814 * 0.002);
    assert_float_equal(mprof__t_isf(0.05, 30), 1.69726, 1.69726 * 0.002);
    assert_true(isinf(mprof__t_isf(0.025, 0)));

    /* logs: base {0, 0.2}, cur {0.5, 0.7}; difference 0.5, pooled variance 0.02, standard error
     * sqrt(0.02 (1/2 + 1/2)), 2 degrees of freedom: exp(0.5 -+ 4.3027 * 0.14142). */
    double b[2] = {1.0, exp(0.2)}, c[2] = {exp(0.5), exp(0.7)};
    mprof_ratio_ci ci;
    double df;
    assert_int_equal(mprof__runs_log_ratio_ci(b, 2, c, 2, 0.95, &ci, &df), 0);
    assert_float_equal(df, 2.0, 0);
    assert_float_equal(ci.point, exp(0.5), 1e-12);
    assert_float_equal(ci.lo, 0.8971905721613571, 1e-9);
    assert_float_equal(ci.hi, 3.0297708344288865, 1e-9);
    /* No spread between runs: the interval is the point. */
    double b2[3] = {2, 2, 2}, c2[3] = {3, 3, 3};
    assert_int_equal(mprof__runs_log_ratio_ci(b2, 3, c2, 3, 0.95, &ci, &df), 0);
    assert_float_equal(ci.lo, 1.5, 1e-12);
    assert_float_equal(ci.hi, 1.5, 1e-12);
    assert_float_equal(df, 4.0, 0);
    /* One run on a side, or a non-positive value: refused. */
    assert_int_equal(mprof__runs_log_ratio_ci(b2, 1, c2, 3, 0.95, &ci, &df), -1);
    double z[2] = {0, 1};
    assert_int_equal(mprof__runs_log_ratio_ci(z, 2, c2, 3, 0.95, &ci, &df), -1);
}

/* The run-to-run spread on logs and the runs a side a t test needs, against hand-worked values:
 * base logs {0, 0.1} and current logs {0.2, 0.3} differ by 0.2 with a pooled sd of
 * sqrt((4 x 0.05^2) / 2) = 0.0707; at two runs a side the one-sided 5 % t test needs
 * t(0.05, 2) = 2.920 x 0.0707 x 1 = 0.206 > 0.2, at three 2.132 x 0.0707 x 0.816 = 0.123. */
static void test_runs_needed(void **state)
{
    (void)state;
    const double b[2] = {1.0, exp(0.1)}, c[2] = {exp(0.2), exp(0.3)};
    double diff, sd;
    assert_int_equal(mprof__runs_log_spread(b, 2, c, 2, &diff, &sd), 0);
    assert_float_equal(diff, 0.2, 1e-12);
    assert_float_equal(sd, sqrt(0.005), 1e-12);
    assert_int_equal(mprof__runs_needed(diff, sd, 0.05, 32), 3);
    assert_int_equal(mprof__runs_needed(diff, 0.0, 0.05, 32), 2);
    assert_int_equal(mprof__runs_needed(0.0, sd, 0.05, 32), 0);
    assert_int_equal(mprof__runs_needed(-0.1, sd, 0.05, 32), 0);
    assert_int_equal(mprof__runs_needed(0.01, 0.2, 0.05, 32), -1);
    /* Needs two positive values a side. */
    assert_int_equal(mprof__runs_log_spread(b, 1, c, 2, &diff, &sd), -1);
    const double z[2] = {1.0, 0.0};
    assert_int_equal(mprof__runs_log_spread(z, 2, c, 2, &diff, &sd), -1);
    assert_float_equal(diff, 0.0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentile_sorted),
        cmocka_unit_test(test_percentile_select_matches_sort),
        cmocka_unit_test(test_normal),
        cmocka_unit_test(test_mwu_exact),
        cmocka_unit_test(test_mwu_ties_normal),
        cmocka_unit_test(test_mwu_large_shift),
        cmocka_unit_test(test_bootstrap),
        cmocka_unit_test(test_correlated),
        cmocka_unit_test(test_t_and_run_interval),
        cmocka_unit_test(test_runs_needed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
