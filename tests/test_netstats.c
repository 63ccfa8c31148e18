/*
 * test_netstats.c - the network-stats helper: per-interval aggregation, the three plots it
 * emits (names, values, display config), defaults, and macros that vanish without
 * MPROF_ENABLE (checked by compiling a disabled translation unit in the same test).
 */
#define MPROF_ENABLE 1
#include "mprof/netstats.h"
#include "test_util.h"

#include <math.h>
#include <string.h>

#define MS 1000000ull

static const char *start_capture(const char *stem)
{
    const char *path = tu_temp_path(stem);
    mprof_config cfg = {0};
    cfg.capture_path = path;
    cfg.listen = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    return path;
}

typedef struct seen_plot {
    char name[32];
    double values[16];
    int n;
    int configured;
    int format;
} seen_plot;

/* Reads every PLOT_F64 and PLOT_CONFIG of the capture into plots[] (by name). */
static int read_plots(const char *path, seen_plot *plots, int max)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    int n = 0;
    mprof_event ev;
    while (mprof_reader_next(r, &ev) == 1) {
        if (ev.type != MPROF_EV_PLOT_F64 && ev.type != MPROF_EV_PLOT_CONFIG)
            continue;
        const char *name = mprof_reader_string(r, (uint32_t)ev.u[0]);
        assert_non_null(name);
        seen_plot *p = NULL;
        for (int i = 0; i < n; i++)
            if (!strcmp(plots[i].name, name))
                p = &plots[i];
        if (!p) {
            assert_true(n < max);
            p = &plots[n++];
            memset(p, 0, sizeof *p);
            snprintf(p->name, sizeof p->name, "%s", name);
        }
        if (ev.type == MPROF_EV_PLOT_CONFIG) {
            p->configured = 1;
            p->format = (int)ev.u[1];
        } else if (p->n < 16) {
            p->values[p->n++] = mprof_event_f64(&ev, 1);
        }
    }
    mprof_reader_close(r);
    return n;
}

static const seen_plot *find(const seen_plot *plots, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(plots[i].name, name))
            return &plots[i];
    return NULL;
}

static void test_defaults(void **state)
{
    (void)state;
    mprof_netstats ns;
    mprof_netstats_init(&ns, NULL);
    assert_int_equal(ns.desc.interval_ns, 100 * MS);
    assert_string_equal(ns.desc.packet_rate, "packet_rate");
    assert_string_equal(ns.desc.bandwidth, "bandwidth");
    assert_string_equal(ns.desc.rtt, "rtt");
    mprof_netstats_desc d = {.interval_ns = 5 * MS, .rtt = "net rtt"};
    mprof_netstats_init(&ns, &d);
    assert_int_equal(ns.desc.interval_ns, 5 * MS);
    assert_string_equal(ns.desc.rtt, "net rtt");
    assert_string_equal(ns.desc.bandwidth, "bandwidth");
    /* Configuring the plots was the first event: it started the profiler with defaults. */
    mprof_shutdown();
}

static void test_interval_aggregation(void **state)
{
    (void)state;
    const char *path = start_capture("netstats.mprof");
    static mprof_netstats ns;
    MPROF_NETSTATS_INIT(&ns, NULL);
    const uint64_t t0 = 1000 * MS;
    /* The first tick only opens the interval. */
    assert_int_equal(mprof_netstats_tick(&ns, t0), 0);
    /* Interval 1 (200 ms): 10 sent x 100 bytes, 30 received x 500 bytes, RTTs 2 and 4 ms. */
    for (int i = 0; i < 10; i++)
        MPROF_NETSTATS_SENT(&ns, 100);
    for (int i = 0; i < 30; i++)
        MPROF_NETSTATS_RECEIVED(&ns, 500);
    MPROF_NETSTATS_RTT(&ns, 2 * MS);
    MPROF_NETSTATS_RTT(&ns, 4 * MS);
    assert_int_equal(mprof_netstats_tick(&ns, t0 + 50 * MS), 0); /* not due yet */
    assert_int_equal(mprof_netstats_tick(&ns, t0 + 200 * MS), 1);
    assert_true(fabs(ns.last_packet_rate - 40 / 0.2) < 1e-6);
    assert_true(fabs(ns.last_bandwidth - (1000 + 15000) / 0.2) < 1e-6);
    assert_true(fabs(ns.last_rtt_ms - 3.0) < 1e-9);
    /* Interval 2 (100 ms): one packet, no RTT sample: rate and bandwidth only. */
    MPROF_NETSTATS_SENT(&ns, 64);
    assert_int_equal(mprof_netstats_tick(&ns, t0 + 300 * MS), 1);
    assert_true(fabs(ns.last_packet_rate - 10.0) < 1e-6);
    /* A clock that goes backwards restarts the interval instead of emitting garbage. */
    assert_int_equal(mprof_netstats_tick(&ns, t0), 0);
    assert_int_equal(ns.intervals_emitted, 2);
    assert_int_equal(ns.total_packets_sent, 11);
    assert_int_equal(ns.total_packets_received, 30);
    assert_int_equal(ns.total_bytes_received, 15000);
    assert_int_equal(ns.total_rtt_samples, 2);
    mprof_shutdown();

    seen_plot plots[8];
    int n = read_plots(path, plots, 8);
    const seen_plot *rate = find(plots, n, "packet_rate");
    const seen_plot *bw = find(plots, n, "bandwidth");
    const seen_plot *rtt = find(plots, n, "rtt");
    assert_non_null(rate);
    assert_non_null(bw);
    assert_non_null(rtt);
    assert_int_equal(rate->n, 2);
    assert_int_equal(bw->n, 2);
    assert_int_equal(rtt->n, 1); /* no sample in the second interval: no point */
    assert_true(fabs(rate->values[0] - 200.0) < 1e-6);
    assert_true(fabs(rate->values[1] - 10.0) < 1e-6);
    assert_true(fabs(bw->values[0] - 80000.0) < 1e-6);
    assert_true(fabs(rtt->values[0] - 3.0) < 1e-9);
    assert_true(bw->configured);
    assert_int_equal(bw->format, MPROF_PLOT_FORMAT_MEMORY);
    assert_true(rate->configured && rtt->configured);
    remove(path);
}

/* test_netstats_off.c: the macros without MPROF_ENABLE. */
int netstats_disabled_macros_evaluate_nothing(void);

static void test_disabled_macros(void **state)
{
    (void)state;
    assert_int_equal(netstats_disabled_macros_evaluate_nothing(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_interval_aggregation),
        cmocka_unit_test(test_disabled_macros),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
