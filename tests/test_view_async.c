/*
 * test_view_async.c - async spans in `mprof view`, static and served (docs/VIEW.md).
 *
 * view_demo in its "async" mode records spans begun on Main and ended on the Worker, overlapping
 * on one track ("Loads"), begun on both threads at once, and one "Jobs" span still open at the
 * end. The static page's document and the served index must give exactly what `mprof report`'s
 * async[] gives for each track (count, total, p95, max, open at the end, ends without a begin),
 * lay the spans on lanes where no two spans of a lane overlap, name each span's threads, and
 * find a span by its name (the served histogram and instances of its name). The page itself is
 * checked in Chromium by tests/view_serve_browser.js.
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static char cap[512], idx[512], doc_path[512];
static char out[1 << 20];

static int setup(void **state)
{
    (void)state;
    snprintf(cap, sizeof cap, "%s", tu_temp_path("async.mprof"));
    snprintf(idx, sizeof idx, "%s", tu_temp_path("async.vidx"));
    snprintf(doc_path, sizeof doc_path, "%s", tu_temp_path("async_view.json"));
    const char *demo = getenv("MPROF_VIEW_DEMO");
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "%s %s 40 10 async 2>&1", demo ? demo : "tests/view_demo", cap);
    if (tu_run(cmd, out, sizeof out) != 0) {
        fprintf(stderr, "view_demo: %s\n", out);
        return -1;
    }
    snprintf(cmd, sizeof cmd, "%s view --json -o %s %s 2>&1", tu_mprof_bin(), doc_path, cap);
    if (tu_run(cmd, out, sizeof out) != 0) {
        fprintf(stderr, "mprof view: %s\n", out);
        return -1;
    }
    return 0;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        fail_msg("no number '%s'", k);
    return v->valuedouble;
}

static double at(const cJSON *a, int i)
{
    const cJSON *v = cJSON_GetArrayItem(a, i);
    if (!cJSON_IsNumber(v))
        fail_msg("no number at %d", i);
    return v->valuedouble;
}

static cJSON *report(void)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s report --json %s", tu_mprof_bin(), cap);
    if (tu_run(cmd, out, sizeof out) != 0)
        fail_msg("mprof report: %.300s", out);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    return j;
}

static cJSON *document(void)
{
    FILE *f = fopen(doc_path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    assert_non_null(j);
    return j;
}

static cJSON *ask(const mprof_vindex *x, const char *target)
{
    mprof_vquery q;
    char err[256];
    if (mprof__vquery_parse(target, strlen(target), &q, err, sizeof err) != 0)
        fail_msg("%s: %s", target, err);
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    assert_non_null(m);
    int rc = mprof__vindex_answer(x, &q, m, err, sizeof err);
    fclose(m);
    if (rc != 0)
        fail_msg("%s: %s", target, err);
    cJSON *j = cJSON_Parse(buf);
    if (!j)
        fail_msg("%s: not JSON: %.200s", target, buf);
    free(buf);
    return j;
}

/* The report's async[] entry of a track. */
static const cJSON *rep_track(const cJSON *rep, const char *name)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(rep, "async"))
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "track")), name) == 0)
        return t;
    fail_msg("the report has no async track '%s'", name);
    return NULL;
}

/* The static page's document: a track per name, the report's figures, lanes that never
 * overlap, the threads of each span. */
static void test_document(void **state)
{
    (void)state;
    cJSON *rep = report(), *doc = document();
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, "async");
    assert_non_null(a);
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(a, "threads");
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rep, "async")) == 2);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "tracks")), 2);
    int cross = 0, loads_lanes = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(a, "tracks"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        const cJSON *r = rep_track(rep, name);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(t, "stats");
        /* [count, total, min, max, mean, p50, p95] against the report */
        assert_true(num(r, "count") > 10);
        assert_int_equal((uint64_t)at(st, 0), (uint64_t)num(r, "count"));
        assert_int_equal((int64_t)at(st, 1), (int64_t)num(r, "total_ns"));
        assert_int_equal((int64_t)at(st, 3), (int64_t)num(r, "max_ns"));
        assert_int_equal((uint64_t)at(st, 5), (uint64_t)num(r, "p50_ns"));
        assert_int_equal((uint64_t)at(st, 6), (uint64_t)num(r, "p95_ns"));
        assert_int_equal((uint64_t)num(t, "open_at_end"), (uint64_t)num(r, "open_at_end"));
        assert_int_equal((uint64_t)num(t, "unmatched_ends"), (uint64_t)num(r, "unmatched_ends"));
        assert_int_equal((uint64_t)num(t, "omitted"), 0);
        /* The whole capture is embedded: every span, open ones too. */
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(t, "spans");
        const cJSON *start = cJSON_GetObjectItemCaseSensitive(sp, "start"), *dur = cJSON_GetObjectItemCaseSensitive(sp, "dur"),
                    *lane = cJSON_GetObjectItemCaseSensitive(sp, "lane"), *begin = cJSON_GetObjectItemCaseSensitive(sp, "begin"),
                    *end = cJSON_GetObjectItemCaseSensitive(sp, "end");
        int n = cJSON_GetArraySize(dur);
        assert_int_equal(n, (int)(num(r, "count") + num(r, "open_at_end")));
        const cJSON *open = cJSON_GetObjectItemCaseSensitive(t, "open");
        assert_int_equal(cJSON_GetArraySize(open), (int)num(r, "open_at_end"));
        /* Lanes: a span starts no earlier than the last span of its lane ends. */
        int lanes = (int)num(t, "lanes");
        int64_t lane_end[64];
        assert_true(lanes >= 1 && lanes <= 64);
        for (int l = 0; l < lanes; l++)
            lane_end[l] = INT64_MIN;
        int64_t s = 0, total = 0;
        for (int k = 0; k < n; k++) {
            s += (int64_t)at(start, k);
            int64_t d = (int64_t)at(dur, k);
            int l = (int)at(lane, k);
            assert_true(l >= 0 && l < lanes);
            if (lane_end[l] > s)
                fail_msg("%s: span %d starts at %lld, inside the last span of lane %d (to %lld)", name, k,
                         (long long)s, l, (long long)lane_end[l]);
            /* the lowest lane free at its start */
            for (int m = 0; m < l; m++)
                assert_true(lane_end[m] > s);
            lane_end[l] = s + d;
            int b = (int)at(begin, k), e = (int)at(end, k);
            assert_true(b >= 0 && b < cJSON_GetArraySize(threads));
            cross += e >= 0 && e != b;
            int is_open = 0;
            const cJSON *o;
            cJSON_ArrayForEach(o, open) is_open |= (int)o->valuedouble == k;
            assert_true(is_open == (e < 0));
            if (!is_open)
                total += d;
        }
        assert_int_equal(total, (int64_t)num(r, "total_ns"));
        /* The figures of each span name add up to the track's; "texture": one a frame. */
        const cJSON *ns, *names = cJSON_GetObjectItemCaseSensitive(t, "names");
        uint64_t by_name = 0;
        cJSON_ArrayForEach(ns, cJSON_GetObjectItemCaseSensitive(t, "name_stats"))
        {
            by_name += (uint64_t)at(ns, 1);
            const char *nm = cJSON_GetStringValue(cJSON_GetArrayItem(names, (int)at(ns, 0)));
            assert_non_null(nm);
            if (strcmp(nm, "texture") == 0)
                assert_int_equal((uint64_t)at(ns, 1), 40);
        }
        assert_int_equal(by_name, (uint64_t)num(r, "count"));
        if (strcmp(name, "Loads") == 0)
            loads_lanes = lanes;
        else
            assert_int_equal((uint64_t)num(r, "open_at_end"), 1); /* Jobs: the last one */
    }
    assert_true(cross > 0);       /* begun on Main, ended on the Worker */
    assert_true(loads_lanes >= 2); /* overlapping spans on one track */
    cJSON_Delete(doc);
    cJSON_Delete(rep);
}

/* The served index: async tracks in the metadata, lanes in /api/zones with each span's threads,
 * /api/stats' rows per track equal to the report's (whole capture and a range), find zone. */
static void test_served(void **state)
{
    (void)state;
    cJSON *rep = report(), *doc = document();
    char err[512];
    int built = 0;
    mprof_vindex *x = mprof__vindex_open(cap, idx, &built, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    cJSON *meta = ask(x, "/api/meta");
    uint32_t ids[2] = {0, 0};
    const char *names[2] = {NULL, NULL};
    int n_async = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(meta, "tracks"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "kind")), "async") != 0)
            continue;
        assert_true(n_async < 2);
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        const cJSON *r = rep_track(rep, name);
        ids[n_async] = (uint32_t)num(t, "id");
        names[n_async++] = name;
        assert_int_equal((uint64_t)num(t, "zones"), (uint64_t)(num(r, "count") + num(r, "open_at_end")));
        assert_int_equal((uint64_t)num(t, "open_at_end"), (uint64_t)num(r, "open_at_end"));
        /* the same lanes as the static page */
        const cJSON *dt;
        cJSON_ArrayForEach(dt, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "async"), "tracks"))
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(dt, "name")), name) == 0)
            assert_int_equal((uint64_t)num(t, "depths"), (uint64_t)num(dt, "lanes"));
    }
    assert_int_equal(n_async, 2);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(meta, "async_threads"));
    /* The spans are no zones of the capture. */
    assert_int_equal(mprof__vindex_zone_count(x), (uint64_t)num(cJSON_GetObjectItemCaseSensitive(meta, "capture"), "zones"));

    /* Statistics of the whole capture: a row per track, the report's. */
    int64_t start = (int64_t)num(meta, "start_ns"), end = (int64_t)num(meta, "end_ns");
    char q[256];
    snprintf(q, sizeof q, "/api/stats?t0=%lld&t1=%lld", (long long)start - 1, (long long)end + 1);
    cJSON *st = ask(x, q);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "whole")));
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(st, "async_tracks");
    assert_int_equal(cJSON_GetArraySize(rows), 2);
    const cJSON *row;
    cJSON_ArrayForEach(row, rows)
    {
        uint32_t id = (uint32_t)at(row, 0);
        const char *name = id == ids[0] ? names[0] : id == ids[1] ? names[1] : NULL;
        assert_non_null(name);
        const cJSON *r = rep_track(rep, name);
        assert_int_equal((uint64_t)at(row, 1), (uint64_t)num(r, "count"));
        assert_int_equal((int64_t)at(row, 2), (int64_t)num(r, "total_ns"));
        assert_int_equal((uint64_t)at(row, 5), (uint64_t)num(r, "max_ns"));
        assert_int_equal((uint64_t)at(row, 7), (uint64_t)num(r, "p50_ns"));
        assert_int_equal((uint64_t)at(row, 8), (uint64_t)num(r, "p95_ns"));
    }
    /* The spans are no zones: the zones counted are those of the zone rows. */
    uint64_t in_rows = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(st, "rows")) in_rows += (uint64_t)at(row, 1);
    assert_int_equal((uint64_t)num(st, "zones"), in_rows);
    cJSON_Delete(st);

    /* A range (read from the levels): the spans inside it that ended, by the static document. */
    int64_t t0 = start + (end - start) / 4, t1 = start + (end - start) * 3 / 4;
    snprintf(q, sizeof q, "/api/stats?t0=%lld&t1=%lld", (long long)t0, (long long)t1);
    st = ask(x, q);
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "async"), "tracks"))
    {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(t, "spans");
        const cJSON *sa = cJSON_GetObjectItemCaseSensitive(sp, "start"), *da = cJSON_GetObjectItemCaseSensitive(sp, "dur"),
                    *ea = cJSON_GetObjectItemCaseSensitive(sp, "end");
        uint64_t count = 0;
        int64_t total = 0, s = 0;
        for (int k = 0; k < cJSON_GetArraySize(da); k++) {
            s += (int64_t)at(sa, k);
            int64_t d = (int64_t)at(da, k);
            if (s >= t0 && s < t1 && s + d <= t1 && at(ea, k) >= 0) {
                count++;
                total += d;
            }
        }
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        uint32_t id = strcmp(name, names[0]) == 0 ? ids[0] : ids[1];
        uint64_t got = 0;
        int64_t got_total = 0;
        cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(st, "async_tracks"))
        if ((uint32_t)at(row, 0) == id) {
            got = (uint64_t)at(row, 1);
            got_total = (int64_t)at(row, 2);
        }
        assert_true(count > 0);
        assert_int_equal(got, count);
        assert_int_equal(got_total, total);
    }
    cJSON_Delete(st);

    /* Lanes in /api/zones: every span drawn (the widest view), none overlapping in its lane, each
     * with its threads. */
    snprintf(q, sizeof q, "/api/zones?t0=%lld&t1=%lld&w=16384&lod=0", (long long)start, (long long)end + 1);
    cJSON *z = ask(x, q);
    uint64_t spans = 0;
    int cross = 0, open = 0;
    const cJSON *lv;
    cJSON_ArrayForEach(lv, cJSON_GetObjectItemCaseSensitive(z, "levels"))
    {
        uint32_t track = (uint32_t)num(lv, "track");
        const cJSON *za = cJSON_GetObjectItemCaseSensitive(lv, "z"), *th = cJSON_GetObjectItemCaseSensitive(lv, "th");
        if (track != ids[0] && track != ids[1]) {
            assert_null(th);
            continue;
        }
        assert_non_null(th);
        int n = cJSON_GetArraySize(za) / 4;
        assert_int_equal(cJSON_GetArraySize(th), 3 * n);
        for (int k = 0; k < n; k++) {
            if (k)
                assert_true(at(za, 4 * k) >= at(za, 4 * (k - 1) + 1));
            cross += at(th, 3 * k + 1) >= 0 && at(th, 3 * k + 1) != at(th, 3 * k);
            open += at(th, 3 * k + 1) < 0;
        }
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(lv, "m");
        for (int i = 2; i < cJSON_GetArraySize(m); i += 3)
            spans += (uint64_t)at(m, i);
        spans += (uint64_t)n;
    }
    uint64_t want = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(rep, "async"))
    want += (uint64_t)(num(r, "count") + num(r, "open_at_end"));
    assert_int_equal(spans, want);
    assert_true(cross > 0);
    assert_int_equal(open, 1); /* drawn, so its threads came too */
    cJSON_Delete(z);

    /* Find zone: "texture" is a source location of its own; its histogram counts its spans. */
    const cJSON *locs = cJSON_GetObjectItemCaseSensitive(meta, "srclocs");
    int slot = -1;
    for (int i = 0; i < cJSON_GetArraySize(locs); i++)
        if (strcmp(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetArrayItem(locs, i), 0)), "texture") == 0)
            slot = i;
    assert_true(slot >= 0);
    snprintf(q, sizeof q, "/api/hist?loc=%d", slot);
    cJSON *h = ask(x, q);
    assert_int_equal((uint64_t)num(h, "count"), 40); /* one a frame, all ended */
    cJSON_Delete(h);
    snprintf(q, sizeof q, "/api/instances?loc=%d&limit=5", slot);
    cJSON *in = ask(x, q);
    assert_int_equal((uint64_t)num(in, "matched"), 40);
    const cJSON *ia = cJSON_GetObjectItemCaseSensitive(in, "i");
    assert_int_equal(cJSON_GetArraySize(ia), 20);
    for (int k = 0; k < 5; k++)
        assert_true((uint32_t)at(ia, 4 * k + 2) == ids[0] || (uint32_t)at(ia, 4 * k + 2) == ids[1]);
    cJSON_Delete(in);

    cJSON_Delete(meta);
    mprof__vindex_close(x);
    cJSON_Delete(doc);
    cJSON_Delete(rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document),
        cmocka_unit_test(test_served),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
