/*
 * test_site_stats.c - the one definition of the zone figures (src/analysis/site_stats.h):
 *   - the recursion rule in a range, against a brute force: a site's total over a range is, per
 *     track, the length of the union of its calls inside the range, for random call trees with
 *     recursion (direct and through other sites) and random ranges;
 *   - the figures of a set of frame times;
 *   - `mprof report`'s hot-path coverage counts a top-level zone that is already open when the
 *     first frame mark comes, and is never below the frame share of one of its zones.
 */
#define _POSIX_C_SOURCE 200809L
#include "analysis/site_stats.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000LL

/* ---- random call trees ---------------------------------------------------------------------- */

enum { SITES = 4, TRACKS = 3, MAXZ = 4096 };

typedef struct gen {
    uint64_t rnd;
    mprof_tl_zone z[MAXZ]; /* in the walker's order: a zone when it ends */
    int n;
    uint32_t stack_loc[64];
} gen;

static uint64_t next(gen *g)
{
    g->rnd ^= g->rnd << 13;
    g->rnd ^= g->rnd >> 7;
    g->rnd ^= g->rnd << 17;
    return g->rnd;
}

/* Children of a zone [s, e) at depth d on track t, then the zone itself (post-order). */
static void tree(gen *g, uint32_t t, uint32_t d, uint32_t loc, int64_t s, int64_t e)
{
    g->stack_loc[d] = loc;
    int64_t at = s;
    while (d < 12 && g->n < MAXZ - 64 && at < e && next(g) % 3) {
        int64_t gap = (int64_t)(next(g) % 4) * (e - s) / 16;
        int64_t len = 1 + (int64_t)(next(g) % (uint64_t)((e - s) / 2 + 1));
        int64_t cs = at + gap, ce = cs + len;
        if (ce > e)
            break;
        tree(g, t, d + 1, (uint32_t)(next(g) % SITES), cs, ce);
        at = ce;
        g->stack_loc[d] = loc;
    }
    mprof_tl_zone *z = &g->z[g->n++];
    memset(z, 0, sizeof *z);
    z->track = t;
    z->loc = loc;
    z->depth = d;
    z->start_ns = s;
    z->end_ns = e;
    for (uint32_t k = d; k-- > 0;)
        if (g->stack_loc[k] == loc) {
            z->nested = 1;
            z->nest_depth = k;
            break;
        }
    /* Time in direct children: those at d + 1 that ended inside it, just before it. */
    for (int i = g->n - 2; i >= 0 && g->z[i].start_ns >= s && g->z[i].track == t; i--)
        if (g->z[i].depth == d + 1)
            z->child_ns += g->z[i].end_ns - g->z[i].start_ns;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The length of the union of the calls of loc on track t inside [t0, t1). */
static int64_t union_inside(const gen *g, uint32_t t, uint32_t loc, int64_t t0, int64_t t1)
{
    static int64_t iv[MAXZ][2];
    int n = 0;
    for (int i = 0; i < g->n; i++)
        if (g->z[i].track == t && g->z[i].loc == loc && mprof__site_inside(t0, t1, g->z[i].start_ns, g->z[i].end_ns)) {
            iv[n][0] = g->z[i].start_ns;
            iv[n][1] = g->z[i].end_ns;
            n++;
        }
    qsort(iv, (size_t)n, sizeof iv[0], cmp_i64);
    int64_t total = 0, cs = 0, ce = -1;
    for (int i = 0; i < n; i++) {
        if (iv[i][0] >= ce) {
            total += ce > cs ? ce - cs : 0;
            cs = iv[i][0];
            ce = iv[i][1];
        } else if (iv[i][1] > ce)
            ce = iv[i][1];
    }
    return total + (ce > cs ? ce - cs : 0);
}

static void test_range_rule(void **state)
{
    (void)state;
    static gen g;
    g.rnd = 0x2545f4914f6cdd1dull;
    int ranges_checked = 0, nested_seen = 0;
    for (int round = 0; round < 40; round++) {
        g.n = 0;
        for (uint32_t t = 0; t < TRACKS; t++) {
            int64_t at = 0;
            for (int top = 0; top < 6; top++) {
                int64_t len = 1000 + (int64_t)(next(&g) % 100000);
                tree(&g, t, 0, (uint32_t)(next(&g) % SITES), at, at + len);
                at += len + (int64_t)(next(&g) % 3000);
            }
        }
        for (int i = 0; i < g.n; i++)
            nested_seen += g.z[i].nested;
        int64_t end = 0;
        for (int i = 0; i < g.n; i++)
            end = g.z[i].end_ns > end ? g.z[i].end_ns : end;
        for (int r = 0; r < 25; r++) {
            int64_t range[2];
            range[0] = r == 0 ? 0 : (int64_t)(next(&g) % (uint64_t)end);
            range[1] = r == 0 ? end + 1 : range[0] + 1 + (int64_t)(next(&g) % (uint64_t)(end - range[0] + 1));
            mprof_site_table t;
            mprof__site_table_init(&t, MPROF_NO_FRAME_SPAN, range);
            for (int i = 0; i < g.n; i++)
                assert_int_equal(mprof__site_table_zone(&t, MPROF_TRACK_THREAD, &g.z[i]), 0);
            for (uint32_t loc = 0; loc < SITES; loc++) {
                uint64_t count = 0;
                int64_t self = 0, total = 0;
                for (int i = 0; i < g.n; i++)
                    if (g.z[i].loc == loc && mprof__site_inside(range[0], range[1], g.z[i].start_ns, g.z[i].end_ns)) {
                        count++;
                        self += g.z[i].end_ns - g.z[i].start_ns - g.z[i].child_ns;
                    }
                for (uint32_t tr = 0; tr < TRACKS; tr++)
                    total += union_inside(&g, tr, loc, range[0], range[1]);
                const mprof_site_stat *st = mprof__site_table_get(&t, loc);
                if (!count) {
                    assert_null(st);
                    continue;
                }
                assert_non_null(st);
                assert_int_equal(st->count, count);
                assert_int_equal(st->self_ns, self);
                if (st->total_ns != total)
                    fail_msg("round %d range [%lld, %lld) site %u: total %lld, the union is %lld", round,
                             (long long)range[0], (long long)range[1], loc, (long long)st->total_ns, (long long)total);
                /* Per track the total never exceeds the range. */
                assert_true(st->total_ns <= TRACKS * (range[1] - range[0]));
                ranges_checked++;
            }
            mprof__site_table_free(&t);
        }
    }
    assert_true(nested_seen > 100); /* the trees did recurse */
    assert_true(ranges_checked > 1000);
}

/* A whole-capture table counts like `mprof report`: nested calls add nothing to total. */
static void test_whole_capture_rule(void **state)
{
    (void)state;
    mprof_site_table t;
    mprof_frame_span span = {10, 90};
    mprof__site_table_init(&t, span, NULL);
    /* Rec [0, 100) > Rec [20, 60) > Rec [30, 40); a GPU zone and an unfinished zone do not count. */
    mprof_tl_zone z[] = {
        {.track = 0, .loc = 1, .depth = 2, .start_ns = 30, .end_ns = 40, .nested = 1, .nest_depth = 1},
        {.track = 0, .loc = 1, .depth = 1, .start_ns = 20, .end_ns = 60, .child_ns = 10, .nested = 1},
        {.track = 0, .loc = 1, .depth = 0, .start_ns = 0, .end_ns = 100, .child_ns = 40},
    };
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(mprof__site_table_zone(&t, MPROF_TRACK_THREAD, &z[i]), 0);
    mprof_tl_zone gpu = {.loc = 2, .start_ns = 0, .end_ns = 50}, open = {.loc = 3, .start_ns = 0, .end_ns = 99, .unfinished = 1};
    assert_int_equal(mprof__site_table_zone(&t, MPROF_TRACK_GPU, &gpu), 0);
    assert_int_equal(mprof__site_table_zone(&t, MPROF_TRACK_THREAD, &open), 0);
    const mprof_site_stat *s = mprof__site_table_get(&t, 1);
    assert_non_null(s);
    assert_int_equal(s->count, 3);
    assert_int_equal(s->total_ns, 100);
    assert_int_equal(s->self_ns, 60 + 30 + 10);
    assert_int_equal(s->in_frames_ns, 80);
    assert_float_equal(mprof__site_frame_share(s, &span), 1.0, 1e-12);
    assert_float_equal(mprof__site_mean_ns(s), 50.0, 1e-9);
    assert_int_equal(mprof__site_min_ns(s), 10);
    assert_int_equal(mprof__site_max_ns(s), 100);
    assert_null(mprof__site_table_get(&t, 2));
    assert_null(mprof__site_table_get(&t, 3));
    assert_int_equal(t.zones, 3);
    mprof__site_table_free(&t);
}

static void test_frame_summary(void **state)
{
    (void)state;
    double v[] = {1, 2, 3, 4, 10};
    mprof_frame_summary f = mprof__frame_summary(v, 5);
    assert_int_equal(f.count, 5);
    assert_float_equal(f.total, 20, 0);
    assert_float_equal(f.mean, 4, 0);
    assert_float_equal(f.p50, 3, 0);
    assert_float_equal(f.p90, 7.6, 1e-12); /* between 4 and 10, Hyndman-Fan 7 */
    assert_float_equal(f.max, 10, 0);
    assert_float_equal(f.min, 1, 0);
    assert_float_equal(f.stddev, 3.1622776601683795, 1e-12);
    f = mprof__frame_summary(NULL, 0);
    assert_int_equal(f.count, 0);
    assert_float_equal(f.p95, 0, 0);
}

/* ---- hot-path coverage ------------------------------------------------------------------------ */

static cJSON *report_json(const char *path)
{
    static char buf[1 << 20];
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s report --json %s", tu_mprof_bin(), path);
    if (tu_run(cmd, buf, sizeof buf) != 0)
        fail_msg("%s failed: %.300s", cmd, buf);
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    return j;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        fail_msg("no number '%s'", k);
    return v->valuedouble;
}

static const cJSON *zone_named(const cJSON *report, const char *name)
{
    const cJSON *z;
    cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(report, "zones")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(z, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return z;
    }
    fail_msg("no zone %s", name);
    return NULL;
}

/* A game whose main loop is one zone, begun before its first frame mark: the zone covers every
 * frame, so coverage is 100 %, not 0 (the main thread was known only from its first mark, too late
 * for a zone already open). A second capture leaves the loop open at the end. */
static void test_coverage_zone_open_at_first_mark(void **state)
{
    (void)state;
    for (int open_at_end = 0; open_at_end < 2; open_at_end++) {
        tu_cap c = {0};
        tu_cap_thread(&c, 1);
        tu_cap_loc(&c, 1, "Main loop", "main", "/src/main.c", 10);
        tu_cap_loc(&c, 2, "Update", "update", "/src/main.c", 20);
        tu_cap_loc(&c, 3, "Worker job", "job", "/src/job.c", 5);
        tu_cap_begin(&c, 0, 1);
        for (int f = 0; f < 10; f++) {
            tu_cap_mark(&c, 10 * MS + f * 10 * MS, 0);
            tu_cap_zone(&c, 11 * MS + f * 10 * MS, 15 * MS + f * 10 * MS, 2);
        }
        tu_cap_mark(&c, 110 * MS, 0);
        if (!open_at_end)
            tu_cap_end(&c, 115 * MS);
        else
            tu_cap_zone(&c, 112 * MS, 113 * MS, 2);
        tu_cap_thread(&c, 2); /* another thread's zones are not main-thread coverage */
        tu_cap_zone(&c, 5 * MS, 50 * MS, 3);
        const char *path = tu_temp_path(open_at_end ? "cov_open.mprof" : "cov.mprof");
        assert_int_equal(tu_cap_write(&c, path), 0);
        cJSON *j = report_json(path);
        double cov = num(cJSON_GetObjectItemCaseSensitive(j, "frames"), "coverage");
        assert_float_equal(cov, 1.0, 1e-12);
        if (!open_at_end) {
            /* The report's own figures: no part above the whole. */
            double share = num(zone_named(j, "Main loop"), "frame_share");
            assert_float_equal(share, 1.0, 1e-12);
            assert_true(cov >= share);
            assert_true(cov >= num(zone_named(j, "Update"), "frame_share"));
        }
        cJSON_Delete(j);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_rule),
        cmocka_unit_test(test_whole_capture_rule),
        cmocka_unit_test(test_frame_summary),
        cmocka_unit_test(test_coverage_zone_open_at_first_mark),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
