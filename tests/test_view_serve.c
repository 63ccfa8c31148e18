/*
 * test_view_serve.c - the index and the server of `mprof view --serve` (docs/VIEW.md).
 *
 * The index over a view_demo capture: every zone comes back, drawn or counted in a merged span,
 * whatever the width; a narrow range returns only what crosses it; statistics, histograms and
 * instances agree with each other; the plot pyramid gives the same minimum and maximum as the
 * points; the cache is reused, and rebuilt when the capture changes or the index is damaged.
 * The query parser accepts the page's requests and refuses the rest. The real `mprof view
 * --serve` answers over loopback, refuses paths outside its page and stops on SIGTERM.
 * The browser checks are tests/view_serve_browser.js (ctest test_view_serve_browser).
 */
#define _POSIX_C_SOURCE 200809L
#include "format/batch.h"
#include "view/index.h"
#include "view/index_build.h"
#include "view/page_files.h"
#include "test_util.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char cap[512], idx[512];
static char out[1 << 16];

static int setup(void **state)
{
    (void)state;
    snprintf(cap, sizeof cap, "%s", tu_temp_path("serve.mprof"));
    snprintf(idx, sizeof idx, "%s", tu_temp_path("serve.vidx"));
    const char *demo = getenv("MPROF_VIEW_DEMO");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s %s 80 40 2>&1", demo ? demo : "tests/view_demo", cap);
    return tu_run(cmd, out, sizeof out) == 0 ? 0 : -1;
}

/* The answer to target as parsed JSON (caller deletes). */
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
        fail_msg("%s: the answer is not JSON: %.200s", target, buf);
    free(buf);
    return j;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        fail_msg("no number '%s'", k);
    return v->valuedouble;
}

static mprof_vindex *open_index(int *built)
{
    char err[512];
    mprof_vindex *x = mprof__vindex_open(cap, idx, built, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    return x;
}

static uint64_t level_zones(cJSON *meta)
{
    uint64_t n = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(meta, "tracks")) n += (uint64_t)num(t, "zones");
    return n;
}

static void test_every_zone_reachable(void **state)
{
    (void)state;
    int built;
    mprof_vindex *x = open_index(&built);
    cJSON *meta = ask(x, "/api/meta");
    const cJSON *capj = cJSON_GetObjectItem(meta, "capture");
    uint64_t zones = (uint64_t)num(capj, "zones");
    assert_true(zones > 1000);
    assert_int_equal(mprof__vindex_zone_count(x), zones);
    uint64_t in_levels = level_zones(meta); /* zones and lock spans */
    assert_true(in_levels >= zones);
    int64_t start = (int64_t)num(meta, "start_ns"), end = (int64_t)num(meta, "end_ns");
    /* Whatever the width, each zone is drawn or counted in one merged span. */
    static const int widths[] = {1, 7, 300, 16384};
    uint64_t merged_w1 = 0;
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
        char t[128];
        snprintf(t, sizeof t, "/api/zones?t0=%lld&t1=%lld&w=%d", (long long)start, (long long)end + 1, widths[k]);
        cJSON *z = ask(x, t);
        uint64_t drawn = (uint64_t)num(z, "drawn"), merged = (uint64_t)num(z, "merged");
        assert_int_equal(drawn + merged, in_levels);
        /* Recount from the arrays. */
        uint64_t n = 0;
        const cJSON *lv;
        cJSON_ArrayForEach(lv, cJSON_GetObjectItem(z, "levels")) {
            n += (uint64_t)cJSON_GetArraySize(cJSON_GetObjectItem(lv, "z")) / 4;
            const cJSON *m = cJSON_GetObjectItem(lv, "m");
            for (int i = 2; i < cJSON_GetArraySize(m); i += 3)
                n += (uint64_t)cJSON_GetArrayItem(m, i)->valuedouble;
        }
        assert_int_equal(n, in_levels);
        if (widths[k] == 1)
            merged_w1 = merged;
        if (widths[k] == 16384)
            assert_true(merged < merged_w1); /* more pixels, fewer merges */
        cJSON_Delete(z);
    }
    /* A narrow range: everything returned crosses it; wide zones are at least a pixel. */
    int64_t a = end / 3, b = a + end / 50;
    char t[128];
    snprintf(t, sizeof t, "/api/zones?t0=%lld&t1=%lld&w=500", (long long)a, (long long)b);
    cJSON *z = ask(x, t);
    int64_t px = (int64_t)num(z, "px_ns");
    const cJSON *lv;
    uint64_t seen = 0;
    cJSON_ArrayForEach(lv, cJSON_GetObjectItem(z, "levels")) {
        const cJSON *arr = cJSON_GetObjectItem(lv, "z");
        for (int i = 0; i + 3 < cJSON_GetArraySize(arr); i += 4) {
            int64_t s = (int64_t)cJSON_GetArrayItem(arr, i)->valuedouble;
            int64_t e = (int64_t)cJSON_GetArrayItem(arr, i + 1)->valuedouble;
            assert_true(e > a && s < b);
            assert_true(e - s >= px);
            seen++;
        }
    }
    assert_true(seen > 0);
    assert_true(seen + num(z, "merged") < in_levels);
    cJSON_Delete(z);
    cJSON_Delete(meta);
    mprof__vindex_close(x);
}

/* The answer to target as text (caller frees). */
static char *ask_text(const mprof_vindex *x, const char *target)
{
    mprof_vquery q;
    char err[256];
    if (mprof__vquery_parse(target, strlen(target), &q, err, sizeof err) != 0)
        fail_msg("%s: %s", target, err);
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    assert_non_null(m);
    if (mprof__vindex_answer(x, &q, m, err, sizeof err) != 0)
        fail_msg("%s: %s", target, err);
    fclose(m);
    return buf;
}

/* The tiers of detail give the answer the zones give (lod=0), byte for byte, for ranges that
 * start and end anywhere (inside merged runs too) at any width; and each answer counts exactly the
 * zones that cross its range (recounted from a 16384-pixel answer of lod=0 over a range that
 * leaves nothing merged is not possible here, so from the whole-capture count at the edges). */
static void test_lod_same_answer(void **state)
{
    (void)state;
    mprof_vindex *x = open_index(NULL);
    uint64_t runs = 0, tiers = mprof__vindex_tier_count(x, &runs);
    assert_true(tiers > 0); /* view_demo's tiny zones fill levels of thousands */
    assert_true(runs < mprof__vindex_zone_count(x));
    cJSON *meta = ask(x, "/api/meta");
    int64_t start = (int64_t)num(meta, "start_ns"), end = (int64_t)num(meta, "end_ns");
    uint64_t in_levels = level_zones(meta);
    cJSON_Delete(meta);
    uint64_t rnd = 0x9e3779b97f4a7c15u;
    int differing_px = 0;
    for (int k = 0; k < 400; k++) {
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        int64_t span = end - start + 1;
        int64_t len = k < 40 ? span : 1 + (int64_t)(rnd % (uint64_t)span) / (1 + (int64_t)(k % 7) * 40);
        int64_t a = start - 1000 + (int64_t)((rnd >> 11) % (uint64_t)(span + 2000));
        if (k < 40)
            a = start;
        int w = 1 + (int)((rnd >> 29) % 4000);
        char t[200], t0[220];
        snprintf(t, sizeof t, "/api/zones?t0=%lld&t1=%lld&w=%d", (long long)a, (long long)(a + len), w);
        snprintf(t0, sizeof t0, "%s&lod=0", t);
        char *p = ask_text(x, t), *r = ask_text(x, t0);
        if (strcmp(p, r) != 0)
            fail_msg("%s: the tiers answer\n%.300s\nthe zones\n%.300s", t, p, r);
        if (k < 40) { /* the whole capture: every zone, drawn or merged */
            cJSON *j = cJSON_Parse(p);
            assert_non_null(j);
            assert_int_equal((uint64_t)num(j, "drawn") + (uint64_t)num(j, "merged"), in_levels);
            differing_px += num(j, "px_ns") >= 1024;
            cJSON_Delete(j);
        }
        free(p);
        free(r);
    }
    assert_true(differing_px > 0); /* some answers did come from a tier */
    mprof__vindex_close(x);
}

static void test_stats_hist_instances(void **state)
{
    (void)state;
    mprof_vindex *x = open_index(NULL);
    cJSON *meta = ask(x, "/api/meta");
    int64_t start = (int64_t)num(meta, "start_ns"), end = (int64_t)num(meta, "end_ns");
    char t[160];
    snprintf(t, sizeof t, "/api/stats?t0=%lld&t1=%lld", (long long)start, (long long)end + 1);
    cJSON *st = ask(x, t);
    /* Whole-capture stats count the CPU zones that ended (analysis/site_stats.h): not the lock
     * spans, nor the GPU zones, which have rows of their own. */
    const cJSON *ls = cJSON_GetObjectItem(meta, "loc_stats");
    uint64_t cpu_zones = 0, gpu_zones = 0;
    const cJSON *lr;
    cJSON_ArrayForEach(lr, ls) {
        const char *kind = cJSON_GetArrayItem(lr, 6)->valuestring;
        if (strcmp(kind, "thread") == 0)
            cpu_zones += (uint64_t)cJSON_GetArrayItem(lr, 1)->valuedouble;
        else if (strcmp(kind, "gpu") == 0)
            gpu_zones += (uint64_t)cJSON_GetArrayItem(lr, 1)->valuedouble;
    }
    assert_int_equal((uint64_t)num(st, "zones"), cpu_zones);
    assert_true(gpu_zones > 0 && cJSON_GetArraySize(cJSON_GetObjectItem(st, "gpu_rows")) > 0);
    assert_true(cpu_zones + gpu_zones < level_zones(meta)); /* lock spans are in the levels only */
    /* Whole-capture stats equal the metadata's per-location figures; hist and instances agree. */
    assert_true(cJSON_GetArraySize(ls) > 5);
    const cJSON *row;
    int checked = 0;
    cJSON_ArrayForEach(row, ls) {
        int loc = (int)cJSON_GetArrayItem(row, 0)->valuedouble;
        double count = cJSON_GetArrayItem(row, 1)->valuedouble;
        double mx = cJSON_GetArrayItem(row, 5)->valuedouble;
        snprintf(t, sizeof t, "/api/hist?loc=%d", loc);
        cJSON *h = ask(x, t);
        assert_true(num(h, "count") == count);
        const cJSON *b = cJSON_GetObjectItem(h, "buckets");
        double sum = 0;
        for (int i = 0; i + 2 < cJSON_GetArraySize(b); i += 3) {
            double lo = cJSON_GetArrayItem(b, i)->valuedouble, hi = cJSON_GetArrayItem(b, i + 1)->valuedouble;
            assert_true(hi > lo);
            sum += cJSON_GetArrayItem(b, i + 2)->valuedouble;
        }
        assert_true(sum == count);
        snprintf(t, sizeof t, "/api/instances?loc=%d&limit=5", loc);
        cJSON *in = ask(x, t);
        assert_true(num(in, "matched") == count);
        const cJSON *arr = cJSON_GetObjectItem(in, "i");
        int n = cJSON_GetArraySize(arr) / 4;
        assert_int_equal(n, count < 5 ? (int)count : 5);
        double prev = 1e300;
        for (int i = 0; i < n; i++) {
            double d = cJSON_GetArrayItem(arr, 4 * i + 1)->valuedouble - cJSON_GetArrayItem(arr, 4 * i)->valuedouble;
            assert_true(d <= prev); /* longest first */
            if (i == 0)
                assert_true(d == mx);
            prev = d;
        }
        /* One bar's instances: all inside the bar. */
        if (cJSON_GetArraySize(b) >= 3) {
            long long lo = (long long)cJSON_GetArrayItem(b, 0)->valuedouble;
            long long hi = (long long)cJSON_GetArrayItem(b, 1)->valuedouble;
            snprintf(t, sizeof t, "/api/instances?loc=%d&dmin=%lld&dmax=%lld", loc, lo, hi);
            cJSON *bi = ask(x, t);
            assert_true(num(bi, "matched") == cJSON_GetArrayItem(b, 2)->valuedouble);
            cJSON_Delete(bi);
        }
        cJSON_Delete(in);
        cJSON_Delete(h);
        checked++;
    }
    assert_true(checked > 5);
    cJSON_Delete(st);
    cJSON_Delete(meta);
    mprof__vindex_close(x);
}

static void test_plots_frames_messages(void **state)
{
    (void)state;
    mprof_vindex *x = open_index(NULL);
    cJSON *meta = ask(x, "/api/meta");
    int64_t end = (int64_t)num(cJSON_GetObjectItem(meta, "capture"), "duration_ns");
    int n_plots = cJSON_GetArraySize(cJSON_GetObjectItem(meta, "plots"));
    assert_true(n_plots >= 2);
    char t[160];
    /* One pixel (the pyramid) and every point apart give the same minimum and maximum. */
    snprintf(t, sizeof t, "/api/plots?t0=0&t1=%lld&w=1", (long long)end + 1);
    cJSON *one = ask(x, t);
    snprintf(t, sizeof t, "/api/plots?t0=0&t1=%lld&w=16384", (long long)end + 1);
    cJSON *all = ask(x, t);
    for (int k = 0; k < n_plots; k++) {
        const cJSON *p1 = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(one, "plots"), k), "p");
        const cJSON *pa = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(all, "plots"), k), "p");
        double mn = 1e300, mx = -1e300;
        for (int i = 0; i + 2 < cJSON_GetArraySize(pa); i += 3) {
            mn = fmin(mn, cJSON_GetArrayItem(pa, i + 1)->valuedouble);
            mx = fmax(mx, cJSON_GetArrayItem(pa, i + 2)->valuedouble);
        }
        assert_true(cJSON_GetArraySize(p1) >= 3);
        assert_true(cJSON_GetArrayItem(p1, 1)->valuedouble == mn);
        assert_true(cJSON_GetArrayItem(p1, 2)->valuedouble == mx);
    }
    cJSON_Delete(one);
    cJSON_Delete(all);
    /* A range before the first point of every plot: only the next point, still valid JSON (a
     * leading comma was written here once). */
    cJSON_Delete(ask(x, "/api/plots?t0=-1000&t1=-10&w=100"));
    cJSON_Delete(ask(x, "/api/plots?t0=0&t1=1&w=100"));
    cJSON *f = ask(x, "/api/frames?w=1000");
    assert_int_equal((int)num(f, "count"), 80);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f, "f")), 80 * 3);
    cJSON_Delete(f);
    f = ask(x, "/api/frames?from=10&to=50&w=4");
    const cJSON *fa = cJSON_GetObjectItem(f, "f");
    assert_int_equal(cJSON_GetArraySize(fa), 4 * 3);
    for (int i = 0; i < 4; i++) {
        int idx_f = (int)cJSON_GetArrayItem(fa, 3 * i)->valuedouble;
        assert_true(idx_f >= 10 + 10 * i && idx_f < 20 + 10 * i); /* the worst of its ten */
    }
    cJSON_Delete(f);
    snprintf(t, sizeof t, "/api/messages?t0=0&t1=%lld&limit=3", (long long)end + 1);
    cJSON *m = ask(x, t);
    assert_true(num(m, "total") > 3);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(m, "m")), 3);
    assert_true(num(m, "in_range") > 3);
    cJSON_Delete(m);
    /* A location the capture lacks is an error, not a crash. */
    mprof_vquery q;
    char err[256];
    assert_int_equal(mprof__vquery_parse("/api/hist?loc=999999", 20, &q, err, sizeof err), 0);
    FILE *null = fopen("/dev/null", "w");
    assert_int_equal(mprof__vindex_answer(x, &q, null, err, sizeof err), -1);
    assert_non_null(strstr(err, "999999"));
    fclose(null);
    cJSON_Delete(meta);
    mprof__vindex_close(x);
}

static void test_cache(void **state)
{
    (void)state;
    int built = -1;
    mprof_vindex *x = open_index(&built);
    mprof__vindex_close(x);
    x = open_index(&built);
    assert_int_equal(built, 0); /* reused */
    mprof__vindex_close(x);
    /* A newer capture: rebuilt. */
    struct timespec ts[2] = {{.tv_nsec = UTIME_NOW}, {.tv_sec = time(NULL) + 5}};
    assert_int_equal(utimensat(AT_FDCWD, cap, ts, 0), 0);
    x = open_index(&built);
    assert_int_equal(built, 1);
    mprof__vindex_close(x);
    /* A damaged index (cut short, or garbage): rebuilt, never trusted. */
    assert_int_equal(truncate(idx, 4000), 0);
    x = open_index(&built);
    assert_int_equal(built, 1);
    mprof__vindex_close(x);
    FILE *f = fopen(idx, "r+b");
    assert_non_null(f);
    fseek(f, 48, SEEK_SET);
    uint64_t junk = UINT64_C(0xffffffffffff);
    fwrite(&junk, sizeof junk, 1, f); /* n_levels far past the file */
    fclose(f);
    x = open_index(&built);
    assert_int_equal(built, 1);
    cJSON *meta = ask(x, "/api/meta");
    assert_non_null(cJSON_GetObjectItem(meta, "tracks"));
    cJSON_Delete(meta);
    mprof__vindex_close(x);
    /* A capture that is not one: a message, no index. */
    char err[512];
    const char *bad = tu_temp_path("notacapture.mprof");
    f = fopen(bad, "wb");
    fputs("hello", f);
    fclose(f);
    assert_null(mprof__vindex_open(bad, NULL, NULL, err, sizeof err));
    assert_true(strlen(err) > 0);
}

/* Two files the same byte for byte; returns their size. */
static size_t same_file(const char *one, const char *two)
{
    FILE *a = fopen(one, "rb"), *b = fopen(two, "rb");
    assert_non_null(a);
    assert_non_null(b);
    static unsigned char ba[1 << 16], bb[1 << 16];
    size_t total = 0, na, nb;
    do {
        na = fread(ba, 1, sizeof ba, a);
        nb = fread(bb, 1, sizeof bb, b);
        assert_int_equal(na, nb);
        assert_memory_equal(ba, bb, na);
        total += na;
    } while (na == sizeof ba);
    fclose(a);
    fclose(b);
    return total;
}

/* The index is the same file byte for byte whether the pass compresses its blocks or hands them
 * to the writer's own thread (taken when the reader has several jobs), and whether the tiers of
 * detail were written during the pass (index_detail.c) or from each level read back at its end
 * (as when the spill file cannot be written), on a capture of a few hundred blocks, so that the
 * thread's queue fills and the pass waits for room. */
static void test_threads_same_file(void **state)
{
    (void)state;
    char big[512], one[512], two[512], back[512], err[512], cmd[1200];
    snprintf(big, sizeof big, "%s", tu_temp_path("jobs.mprof"));
    snprintf(one, sizeof one, "%s", tu_temp_path("jobs1.vidx"));
    snprintf(two, sizeof two, "%s", tu_temp_path("jobs2.vidx"));
    snprintf(back, sizeof back, "%s", tu_temp_path("readback.vidx"));
    const char *demo = getenv("MPROF_VIEW_DEMO");
    snprintf(cmd, sizeof cmd, "%s %s 300 2000 async 2>&1", demo ? demo : "tests/view_demo", big);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    mprof_set_read_jobs(1);
    assert_int_equal(mprof__vindex_build(big, one, err, sizeof err), 0);
    mprof__vidx_spill_off = 1;
    int rc = mprof__vindex_build(big, back, err, sizeof err);
    mprof__vidx_spill_off = 0;
    if (rc != 0)
        fail_msg("%s", err);
    assert_true(same_file(one, back) > 300 * 1024); /* hundreds of blocks, not a handful */
    for (int jobs = 1; jobs <= 2; jobs++) {
        /* A spill file that fails: the levels are read back. */
        mprof_set_read_jobs(jobs);
        mprof__vidx_spill_off = 2;
        rc = mprof__vindex_build(big, back, err, sizeof err);
        mprof__vidx_spill_off = 0;
        if (rc != 0)
            fail_msg("%s", err);
        same_file(one, back);
    }
    mprof_set_read_jobs(2);
    rc = mprof__vindex_build(big, two, err, sizeof err);
    mprof_set_read_jobs(1);
    if (rc != 0)
        fail_msg("%s", err);
    same_file(one, two);
    mprof_vindex *x = mprof__vindex_open(big, two, NULL, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    cJSON *meta = ask(x, "/api/meta");
    assert_true(level_zones(meta) >= 300 * 2000);
    cJSON_Delete(meta);
    mprof__vindex_close(x);
}

static void test_query_parser(void **state)
{
    (void)state;
    static const char *const good[] = {
        "/api/meta", "/api/zones?t0=0&t1=10&w=5", "/api/zones?t1=10&w=16384&t0=-5",
        "/api/plots?t0=1&t1=2&w=1", "/api/messages?t0=0&t1=9&limit=10", "/api/frames?w=3",
        "/api/frames?from=0&to=0&w=3", "/api/stats?t0=0&t1=1", "/api/hist?loc=4",
        "/api/instances?loc=1&dmin=0&dmax=100&limit=10000", "/", "/serve/serve.js", "/js/util.js",
        "/style.css", "/api/system", "/api/states?t0=0&t1=10&w=5", "/api/cpu?t0=0&t1=10&w=5",
        "/api/samples?t0=0&t1=10", "/api/samples?t0=0&t1=10&track=3", "/api/locks?t0=0&t1=10",
        "/serve/panels.js", "/js/system.js", "/api/pairs", "/api/meta?c=1", "/api/zones?t0=0&t1=10&w=5&c=0",
        "/api/stats?t0=0&t1=9&set=2", "/api/frames?w=4&set=1", "/api/hist?loc=3&t0=0&t1=5",
        "/api/hist?loc=3&t0=0&t1=5&set=0", "/api/instances?loc=3&t0=1&t1=5&limit=3", "/serve/compare.js",
        "/serve/framegraph.js", "/serve/plots.js",
    };
    static const char *const bad[] = {
        "", "api/meta", "/api/meta?x=1", "/api/zones?t0=0&t1=10", "/api/zones?t0=0&t1=10&w=0",
        "/api/zones?t0=0&t1=10&w=16385", "/api/zones?t0=10&t1=10&w=5", "/api/zones?t0=0&t0=1&t1=5&w=5",
        "/api/zones?t0=0&t1=1e3&w=5", "/api/zones?t0=0&t1=10&w=5&", "/api/zones?t0=&t1=10&w=5",
        "/api/zones?t0=0&t1=99999999999999999999&w=5", "/api/zones?t0=0&t1=10&w=5&file=/etc/passwd",
        "/api/hist", "/api/hist?loc=-1", "/api/hist?loc=4294967296", "/api/frames?from=3&w=1",
        "/api/frames?from=3&to=2&w=1", "/api/instances?loc=1&limit=0", "/api/nothing",
        "/../etc/passwd", "/js/../../etc/passwd", "/a//b", "/Serve.js", "/x?y", "/%2e%2e/etc/passwd",
        "/api/zones?t0=0&t1=10&w=5%00", "/api/meta#frag", "/api/states?t0=0&t1=10",
        "/api/samples?t0=0&t1=10&track=-1", "/api/samples?t0=0&t1=10&loc=1", "/api/locks?t0=5&t1=5",
        "/api/system?w=1", "/api/cpu?t0=0&t1=10&w=0", "/api/meta?c=2", "/api/meta?c=-1", "/api/hist?loc=3&t0=5",
        "/api/hist?loc=3&t1=5", "/api/stats?t0=0&t1=9&set=-1", "/api/pairs?x=1", "/api/meta?c=1&c=1",
        "/api/frames?w=4&set=4294967296",
    };
    mprof_vquery q;
    char err[256];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (mprof__vquery_parse(good[i], strlen(good[i]), &q, err, sizeof err) != 0)
            fail_msg("refused '%s': %s", good[i], err);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        if (mprof__vquery_parse(bad[i], strlen(bad[i]), &q, err, sizeof err) == 0)
            fail_msg("accepted '%s'", bad[i]);
        assert_true(strlen(err) > 5);
    }
    assert_int_equal(mprof__vquery_parse("/api/zones?t0=5&t1=10&w=7", 25, &q, err, sizeof err), 0);
    assert_int_equal(q.kind, MPROF_VQ_ZONES);
    assert_int_equal(q.t0, 5);
    assert_int_equal(q.t1, 10);
    assert_int_equal(q.w, 7);
    /* A NUL inside the given length is refused, not cut there. */
    assert_int_equal(mprof__vquery_parse("/api/meta\0x", 11, &q, err, sizeof err), -1);
    /* Every page file the server names exists; one that does not is not served. */
    assert_non_null(mprof__view_file("serve/index.html"));
    assert_non_null(mprof__view_file("serve/serve.js"));
    assert_non_null(mprof__view_file("js/util.js"));
    assert_non_null(mprof__view_file("style.css"));
    assert_non_null(mprof__view_file("serve/panels.js"));
    assert_non_null(mprof__view_file("js/system.js"));
    assert_non_null(mprof__view_file("serve/compare.js"));
    assert_non_null(mprof__view_file("serve/framegraph.js"));
    assert_non_null(mprof__view_file("serve/plots.js"));
    assert_int_equal(mprof__vquery_parse("/api/stats?t0=1&t1=9&set=3&c=1", 30, &q, err, sizeof err), 0);
    assert_true(q.has_set && q.set == 3 && q.cap == 1);
    assert_null(mprof__view_file("../CMakeLists.txt"));
}

/* ---- the real server ----------------------------------------------------------------------- */

static int http_get(int port, const char *req, char *resp, size_t n)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        close(s);
        return -1;
    }
    if (write(s, req, strlen(req)) != (ssize_t)strlen(req)) {
        close(s);
        return -1;
    }
    size_t got = 0;
    ssize_t k;
    while (got + 1 < n && (k = read(s, resp + got, n - 1 - got)) > 0)
        got += (size_t)k;
    resp[got] = 0;
    close(s);
    int code = 0;
    if (sscanf(resp, "HTTP/1.%*d %d", &code) != 1)
        return -1;
    return code;
}

static void test_server(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    const char *bin = tu_mprof_bin();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(bin, bin, "view", "--serve", cap, "--port", "0", "--index", idx, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    char line[256] = "";
    assert_non_null(fgets(line, sizeof line, in));
    int port = 0;
    assert_int_equal(sscanf(line, "http://127.0.0.1:%d/", &port), 1); /* loopback by default */
    assert_true(port > 0);
    static char resp[1 << 20];
    assert_int_equal(http_get(port, "GET / HTTP/1.0\r\n\r\n", resp, sizeof resp), 200);
    assert_non_null(strstr(resp, "id=\"mprof-status\""));
    assert_non_null(strstr(resp, "serve/serve.js"));
    assert_int_equal(http_get(port, "GET /serve/serve.js HTTP/1.0\r\n\r\n", resp, sizeof resp), 200);
    assert_non_null(strstr(resp, "text/javascript"));
    assert_int_equal(http_get(port, "GET /api/meta HTTP/1.0\r\n\r\n", resp, sizeof resp), 200);
    assert_non_null(strstr(resp, "\"schema\":\"mprof-serve\""));
    assert_int_equal(http_get(port, "GET /api/zones?t0=0&t1=1000000&w=100 HTTP/1.0\r\n\r\n", resp, sizeof resp), 200);
    assert_non_null(strstr(resp, "\"levels\""));
    assert_int_equal(http_get(port, "GET /../../etc/passwd HTTP/1.0\r\n\r\n", resp, sizeof resp), 404);
    assert_null(strstr(resp, "root:"));
    assert_int_equal(http_get(port, "GET /api/zones?t0=0&t1=1&w=1&file=/etc/passwd HTTP/1.0\r\n\r\n", resp,
                              sizeof resp), 400);
    assert_non_null(strstr(resp, "unknown query key"));
    char abs_req[700];
    snprintf(abs_req, sizeof abs_req, "GET %s HTTP/1.0\r\n\r\n", cap); /* the capture by its path */
    assert_int_equal(http_get(port, abs_req, resp, sizeof resp), 404);
    assert_int_equal(http_get(port, "POST /api/meta HTTP/1.0\r\nContent-Length: 0\r\n\r\n", resp, sizeof resp), 405);
    assert_int_equal(http_get(port, "GET /api/hist?loc=99999 HTTP/1.0\r\n\r\n", resp, sizeof resp), 400);
    kill(pid, SIGTERM);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    fclose(in);
    /* Usage errors. */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s view --serve %s --address localhost 2>&1", bin, cap);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "numeric"));
    snprintf(cmd, sizeof cmd, "%s view --serve %s -o x.html 2>&1", bin, cap);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s view --serve %s --index %s 2>&1", bin, cap, cap);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
}

/* A free loopback port (the kernel's pick, released again). */
static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    int port = -1;
    if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &al) == 0)
        port = ntohs(a.sin_port);
    if (s >= 0)
        close(s);
    return port;
}

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* `mprof view --live` on tests/live_game: the first /api/live that says the capture ended comes
 * with the index of the finished file, so /api/meta at that moment has every zone of it (the
 * page stops polling there; before the fix the flag came before the last re-index). */
static void test_live_end(void **state)
{
    (void)state;
    const char *game = getenv("LIVE_GAME");
    if (!game || access(game, X_OK) != 0)
        skip();
    const char *bin = tu_mprof_bin();
    char file[512], port_s[16], env_port[40];
    snprintf(file, sizeof file, "%s", tu_temp_path("live_end.mprof"));
    int gport = free_port();
    assert_true(gport > 0);
    snprintf(port_s, sizeof port_s, "%d", gport);
    snprintf(env_port, sizeof env_port, "MPROF_PORT=%d", gport);
    pid_t g = fork();
    assert_true(g >= 0);
    if (g == 0) {
        putenv((char *)"MPROF_LISTEN=1");
        putenv(env_port);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        execl(game, game, "--frames", "300", "--frame-ms", "4", (char *)NULL);
        _exit(127);
    }
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(bin, bin, "view", "--live", "-f", "-o", file, "-p", port_s, "--port", "0", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    char line[256] = "";
    assert_non_null(fgets(line, sizeof line, in));
    int port = 0;
    assert_int_equal(sscanf(line, "http://127.0.0.1:%d/", &port), 1);
    static char resp[1 << 20];
    int ended = 0, grew = 0;
    uint64_t served_zones = 0;
    double deadline = mono_now() + 240; /* generous: a loaded machine */
    while (!ended && mono_now() < deadline) {
        if (http_get(port, "GET /api/live HTTP/1.0\r\n\r\n", resp, sizeof resp) == 200) {
            if (strstr(resp, "\"capturing\":true") && !strstr(resp, "\"generation\":0"))
                grew = 1;
            if (strstr(resp, "\"capturing\":false")) {
                ended = 1;
                assert_int_equal(http_get(port, "GET /api/meta HTTP/1.0\r\n\r\n", resp, sizeof resp), 200);
                const char *body = strstr(resp, "\r\n\r\n");
                assert_non_null(body);
                cJSON *m = cJSON_Parse(body + 4);
                assert_non_null(m);
                served_zones = (uint64_t)num(cJSON_GetObjectItem(m, "capture"), "zones");
                cJSON_Delete(m);
            }
        }
        usleep(500); /* polled closely: the window the fix closed lasts one re-index */
    }
    assert_true(ended);
    assert_true(grew);
    kill(pid, SIGTERM);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fclose(in);
    kill(g, SIGTERM);
    waitpid(g, &st, 0);
    /* The finished file, indexed on its own. */
    char fidx[600], err[512];
    snprintf(fidx, sizeof fidx, "%s.check.vidx", file);
    mprof_vindex *x = mprof__vindex_open(file, fidx, NULL, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    assert_true(mprof__vindex_zone_count(x) > 0);
    assert_int_equal(served_zones, mprof__vindex_zone_count(x));
    mprof__vindex_close(x);
    unlink(fidx);
}

/* A game on port gport, 4 ms frames: its pid. */
static pid_t start_game(const char *game, int gport, int frames)
{
    pid_t g = fork();
    assert_true(g >= 0);
    if (g == 0) {
        static char env_port[40], fr[16];
        snprintf(env_port, sizeof env_port, "MPROF_PORT=%d", gport);
        snprintf(fr, sizeof fr, "%d", frames);
        putenv((char *)"MPROF_LISTEN=1");
        putenv(env_port);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        execl(game, game, "--frames", fr, "--frame-ms", "4", (char *)NULL);
        _exit(127);
    }
    return g;
}

/* `mprof view --live -p A -p B`: two games captured into one file. While they record, the page
 * is served a merge of the parts so far (zones of both processes before the end); once both
 * have exited, the served index is the finished, merged file's, whose two processes are there,
 * and the parts and the snapshot are gone. */
static void test_live_two_processes(void **state)
{
    (void)state;
    const char *game = getenv("LIVE_GAME");
    if (!game || access(game, X_OK) != 0)
        skip();
    const char *bin = tu_mprof_bin();
    char file[512], snap[600], parts[600], pa[16], pb[16];
    snprintf(file, sizeof file, "%s", tu_temp_path("live_two.mprof"));
    snprintf(snap, sizeof snap, "%s.live.mprof", file);
    snprintf(parts, sizeof parts, "%s.parts", file);
    int ga = free_port(), gb = free_port();
    while (gb == ga)
        gb = free_port();
    assert_true(ga > 0 && gb > 0);
    snprintf(pa, sizeof pa, "%d", ga);
    snprintf(pb, sizeof pb, "%d", gb);
    pid_t g1 = start_game(game, ga, 900), g2 = start_game(game, gb, 700);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(bin, bin, "view", "--live", "-f", "-o", file, "-p", pa, "-p", pb, "--port", "0",
              (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    char line[256] = "";
    assert_non_null(fgets(line, sizeof line, in));
    int port = 0;
    assert_int_equal(sscanf(line, "http://127.0.0.1:%d/", &port), 1);
    static char resp[1 << 20];
    int ended = 0;
    uint64_t zones_while = 0, served_zones = 0;
    double deadline = mono_now() + 240;
    while (!ended && mono_now() < deadline) {
        if (http_get(port, "GET /api/live HTTP/1.0\r\n\r\n", resp, sizeof resp) == 200) {
            int capturing = strstr(resp, "\"capturing\":true") != NULL;
            ended = strstr(resp, "\"capturing\":false") != NULL;
            if ((capturing && !zones_while) || ended) {
                if (http_get(port, "GET /api/meta HTTP/1.0\r\n\r\n", resp, sizeof resp) == 200) {
                    const char *body = strstr(resp, "\r\n\r\n");
                    cJSON *m = body ? cJSON_Parse(body + 4) : NULL;
                    uint64_t z = m ? (uint64_t)num(cJSON_GetObjectItem(m, "capture"), "zones") : 0;
                    if (ended)
                        served_zones = z;
                    else
                        zones_while = z;
                    cJSON_Delete(m);
                }
            }
        }
        usleep(20000);
    }
    assert_true(ended);
    assert_true(zones_while > 0); /* the parts were served merged while they grew */
    kill(pid, SIGTERM);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fclose(in);
    waitpid(g1, &st, 0);
    waitpid(g2, &st, 0);
    /* The finished file: both processes, every zone served. */
    char err[512];
    mprof_reader *r = mprof_reader_open(file, err, sizeof err);
    if (!r)
        fail_msg("%s", err);
    mprof_event ev;
    while (mprof_reader_next(r, &ev) == 1)
        ;
    assert_int_equal(mprof_reader_process_count(r), 2);
    mprof_reader_close(r);
    char fidx[600];
    snprintf(fidx, sizeof fidx, "%s.check.vidx", file);
    mprof_vindex *x = mprof__vindex_open(file, fidx, NULL, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    assert_int_equal(served_zones, mprof__vindex_zone_count(x));
    assert_true(served_zones >= zones_while); /* a late first poll may see every zone already */
    mprof__vindex_close(x);
    unlink(fidx);
    assert_int_not_equal(access(snap, F_OK), 0);
    assert_int_not_equal(access(parts, F_OK), 0);
}

static cJSON *json_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    cJSON *j = cJSON_Parse(b);
    free(b);
    if (!j)
        fail_msg("%s is not JSON", path);
    return j;
}

/* The processes of a document or /api/meta against mprof report's (pid, name, threads); every
 * thread track has a process, the tracks of each process together, as many as its threads (each
 * live_game thread has zones); "update" is a source location of each process. */
static void check_processes(const cJSON *doc, const cJSON *rep)
{
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(doc, "processes");
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(rep, "processes");
    assert_int_equal(cJSON_GetArraySize(ps), 2);
    assert_int_equal(cJSON_GetArraySize(want), 2);
    for (int i = 0; i < 2; i++) {
        const cJSON *p = cJSON_GetArrayItem(ps, i), *w = cJSON_GetArrayItem(want, i);
        assert_int_equal((int)num(p, "index"), i);
        assert_int_equal((uint64_t)num(p, "pid"), (uint64_t)num(w, "pid"));
        assert_true(num(p, "threads") >= 2);
        assert_int_equal((uint64_t)num(p, "threads"), (uint64_t)num(w, "threads"));
        assert_string_equal(cJSON_GetObjectItem(p, "name")->valuestring, i ? "second" : "live_game");
        assert_null(cJSON_GetObjectItem(p, "ended_by"));
    }
    int per[2] = {0, 0}, last = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(doc, "tracks"))
    {
        const char *kind = cJSON_GetObjectItem(t, "kind")->valuestring;
        if (strcmp(kind, "thread") != 0) {
            assert_null(cJSON_GetObjectItem(t, "process"));
            continue;
        }
        int p = (int)num(t, "process");
        assert_true(p >= 0 && p < 2);
        assert_true(p >= last); /* grouped: process 0's tracks, then process 1's */
        last = p;
        per[p]++;
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(per[i], (int)num(cJSON_GetArrayItem(ps, i), "threads"));
    int update[2] = {0, 0};
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(doc, "srclocs"))
    {
        if (strcmp(cJSON_GetArrayItem(l, 0)->valuestring, "update") != 0)
            continue;
        assert_int_equal(cJSON_GetArraySize(l), 6);
        int p = (int)cJSON_GetArrayItem(l, 5)->valuedouble;
        assert_true(p >= 0 && p < 2);
        update[p]++;
    }
    assert_int_equal(update[0], 1);
    assert_int_equal(update[1], 1);
}

/* A merged capture of two live_games: the static document and /api/meta name both processes
 * (mprof report's pids and threads), each thread track its process; a one-process capture's
 * have none of it. */
static void test_processes_shown(void **state)
{
    (void)state;
    const char *game = getenv("LIVE_GAME");
    if (!game || access(game, X_OK) != 0)
        skip();
    char a[512], b[512], m[512], doc[512], rep[512], midx[512], cmd[8192];
    snprintf(a, sizeof a, "%s", tu_temp_path("proc_a.mprof"));
    snprintf(b, sizeof b, "%s", tu_temp_path("proc_b.mprof"));
    snprintf(m, sizeof m, "%s", tu_temp_path("procs.mprof"));
    snprintf(doc, sizeof doc, "%s", tu_temp_path("procs.json"));
    snprintf(rep, sizeof rep, "%s", tu_temp_path("procs_report.json"));
    snprintf(midx, sizeof midx, "%s", tu_temp_path("procs.vidx"));
    snprintf(cmd, sizeof cmd,
             "%s --frames 30 --capture %s >/dev/null 2>&1 && %s --frames 20 --capture %s >/dev/null 2>&1 && "
             "%s merge -f %s %s -o %s --name %s=second 2>&1 && %s report --json %s > %s && "
             "%s view --json -f -o %s %s 2>&1",
             game, a, game, b, tu_mprof_bin(), a, b, m, b, tu_mprof_bin(), m, rep, tu_mprof_bin(), doc, m);
    if (tu_run(cmd, out, sizeof out) != 0)
        fail_msg("%s", out);
    cJSON *r = json_file(rep), *d = json_file(doc);
    check_processes(d, r);
    char err[512];
    mprof_vindex *x = mprof__vindex_open(m, midx, NULL, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    cJSON *meta = ask(x, "/api/meta");
    check_processes(meta, r);
    cJSON_Delete(meta);
    mprof__vindex_close(x);
    cJSON_Delete(r);
    cJSON_Delete(d);
    /* The second input cut off (its END gone): its process is marked, in both. */
    snprintf(cmd, sizeof cmd,
             "truncate -s -10 %s && %s merge -f %s %s -o %s 2>&1 && %s view --json -f -o %s %s 2>&1", b,
             tu_mprof_bin(), a, b, m, tu_mprof_bin(), doc, m);
    if (tu_run(cmd, out, sizeof out) != 0)
        fail_msg("%s", out);
    d = json_file(doc);
    const cJSON *ps = cJSON_GetObjectItem(d, "processes");
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(ps, 0), "ended_by"));
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ps, 1), "ended_by")->valuestring, "cut-off");
    cJSON_Delete(d);
    x = mprof__vindex_open(m, midx, NULL, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    meta = ask(x, "/api/meta");
    ps = cJSON_GetObjectItem(meta, "processes");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ps, 1), "ended_by")->valuestring, "cut-off");
    cJSON_Delete(meta);
    mprof__vindex_close(x);
    /* One process: no processes, no track's process. */
    x = open_index(NULL);
    meta = ask(x, "/api/meta");
    assert_null(cJSON_GetObjectItem(meta, "processes"));
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(meta, "tracks")) assert_null(cJSON_GetObjectItem(t, "process"));
    cJSON_Delete(meta);
    mprof__vindex_close(x);
    unlink(midx);
}

/* The system and lock section (src/view/index_sys.h) of a capture with 1 kHz sampling: every off-CPU
 * interval comes back, alone or in a merged run, at any width; a range's lock waits and samples
 * add up over its halves to the whole capture's. */
static void test_system_section(void **state)
{
    (void)state;
    char cap2[512], idx2[512], cmd[1400], err[512];
    snprintf(cap2, sizeof cap2, "%s", tu_temp_path("serve_sys.mprof"));
    snprintf(idx2, sizeof idx2, "%s", tu_temp_path("serve_sys.vidx"));
    const char *demo = getenv("MPROF_VIEW_DEMO");
    snprintf(cmd, sizeof cmd, "MPROF_SAMPLE_HZ=1000 %s %s 40 40 2>&1", demo ? demo : "tests/view_demo", cap2);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    int built = 0;
    mprof_vindex *x = mprof__vindex_open(cap2, idx2, &built, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    cJSON *sys = ask(x, "/api/system");
    cJSON *meta = ask(x, "/api/meta");
    long t0 = (long)num(meta, "start_ns"), t1 = (long)num(meta, "end_ns") + 1, mid = (t0 + t1) / 2;
    char q[256];
    /* Locks: view_demo's frame_lock is contended; the halves add up to the whole. */
    const cJSON *lk = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sys, "locks"), 0);
    assert_non_null(lk);
    assert_true(num(lk, "contended") > 0);
    long waits = 0, holds = 0;
    double wait_ns = 0, max_wait = 0;
    for (int h = 0; h < 3; h++) {
        snprintf(q, sizeof q, "/api/locks?t0=%ld&t1=%ld", h == 2 ? mid : t0, h == 1 ? mid : t1);
        cJSON *a = ask(x, q);
        const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a, "locks"), 0);
        if (h == 0) {
            assert_int_equal((long)num(l, "waits"), (long)num(lk, "contended"));
            assert_int_equal((long)num(l, "holds"), (long)num(lk, "acquisitions"));
            assert_true(fabs(num(l, "wait_ns") - num(lk, "wait_ns")) < 1);
            assert_true(fabs(num(l, "max_wait_ns") - num(lk, "max_wait_ns")) < 1);
        } else {
            waits += (long)num(l, "waits");
            holds += (long)num(l, "holds");
            wait_ns += num(l, "wait_ns");
            if (num(l, "max_wait_ns") > max_wait)
                max_wait = num(l, "max_wait_ns");
        }
        cJSON_Delete(a);
    }
    assert_int_equal(waits, (long)num(lk, "contended"));
    assert_int_equal(holds, (long)num(lk, "acquisitions"));
    assert_true(fabs(wait_ns - num(lk, "wait_ns")) < 1);
    assert_true(fabs(max_wait - num(lk, "max_wait_ns")) < 1);
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sys, "context_switches"))) {
        cJSON_Delete(sys);
        cJSON_Delete(meta);
        mprof__vindex_close(x);
        skip(); /* the kernel refused perf events: no states, no samples */
    }
    /* States: at every width each interval is in exactly one run; runs do not overlap. */
    long total_off = 0;
    const cJSON *th;
    cJSON_ArrayForEach(th, cJSON_GetObjectItemCaseSensitive(sys, "threads")) total_off += (long)num(th, "off");
    assert_true(total_off > 0);
    static const int widths[] = {1, 7, 100, 1600, 16384};
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
        snprintf(q, sizeof q, "/api/states?t0=%ld&t1=%ld&w=%d", t0 - 1000000000L, t1 + 1000000000L, widths[wi]);
        cJSON *a = ask(x, q);
        assert_int_equal((long)num(a, "intervals"), total_off);
        cJSON_ArrayForEach(th, cJSON_GetObjectItemCaseSensitive(a, "threads"))
        {
            const cJSON *r = cJSON_GetObjectItemCaseSensitive(th, "r");
            int n = cJSON_GetArraySize(r);
            assert_int_equal(n % 4, 0);
            for (int i = 4; i < n; i += 4)
                assert_true(cJSON_GetArrayItem(r, i)->valuedouble >= cJSON_GetArrayItem(r, i - 3)->valuedouble);
            for (int i = 3; i < n; i += 4)
                assert_true(cJSON_GetArrayItem(r, i)->valuedouble >= 0 && cJSON_GetArrayItem(r, i)->valuedouble <= 1000);
        }
        cJSON_Delete(a);
    }
    /* Samples: the whole range has every sample; the halves add up; a node has at most its
     * parent's samples. */
    long n_samples = (long)num(sys, "samples");
    snprintf(q, sizeof q, "/api/samples?t0=%ld&t1=%ld", t0 - 1000000000L, t1 + 1000000000L);
    cJSON *all = ask(x, q);
    assert_int_equal((long)num(all, "samples"), n_samples);
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(all, "n");
    int nn = cJSON_GetArraySize(nodes);
    assert_true(n_samples == 0 || nn >= 3);
    for (int i = 0; i < nn; i += 3) {
        int parent = (int)cJSON_GetArrayItem(nodes, i)->valuedouble;
        double c = cJSON_GetArrayItem(nodes, i + 2)->valuedouble;
        assert_true(parent < i / 3);
        assert_true(c <= (parent < 0 ? (double)n_samples : cJSON_GetArrayItem(nodes, 3 * parent + 2)->valuedouble));
    }
    cJSON_Delete(all);
    long halves = 0;
    for (int h = 0; h < 2; h++) {
        snprintf(q, sizeof q, "/api/samples?t0=%ld&t1=%ld", h ? mid : t0 - 1000000000L, h ? t1 + 1000000000L : mid);
        cJSON *a = ask(x, q);
        halves += (long)num(a, "samples");
        cJSON_Delete(a);
    }
    assert_int_equal(halves, n_samples);
    /* CPU: one pixel over everything holds the largest point. */
    snprintf(q, sizeof q, "/api/cpu?t0=%ld&t1=%ld&w=1", t0, t1);
    cJSON *c1 = ask(x, q);
    snprintf(q, sizeof q, "/api/cpu?t0=%ld&t1=%ld&w=16384", t0, t1);
    cJSON *cn = ask(x, q);
    double mx1 = 0, mxn = 0;
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c1, "p")) if (i++ % 5 == 2 && e->valuedouble > mx1) mx1 = e->valuedouble;
    i = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cn, "p")) if (i++ % 5 == 2 && e->valuedouble > mxn) mxn = e->valuedouble;
    assert_true(fabs(mx1 - mxn) < 1e-9);
    assert_int_equal((long)num(c1, "points"), (long)num(sys, "cpu_points"));
    cJSON_Delete(c1);
    cJSON_Delete(cn);
    cJSON_Delete(sys);
    cJSON_Delete(meta);
    mprof__vindex_close(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_zone_reachable),
        cmocka_unit_test(test_lod_same_answer),
        cmocka_unit_test(test_stats_hist_instances),
        cmocka_unit_test(test_plots_frames_messages),
        cmocka_unit_test(test_query_parser),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_threads_same_file),
        cmocka_unit_test(test_server),
        cmocka_unit_test(test_live_end),
        cmocka_unit_test(test_live_two_processes),
        cmocka_unit_test(test_processes_shown),
        cmocka_unit_test(test_system_section),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
