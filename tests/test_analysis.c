/*
 * test_analysis.c - the statistics users read (src/analysis/analysis.c, and the same rules in
 * the CSV statistics, diff, the frame export and the gate) on synthetic captures whose every
 * timestamp is known, so each number can be checked exactly and no assertion depends on timing:
 *   - recursion: direct and mutual, on two threads, counts each stretch of time once;
 *   - frames: %frame and per-frame figures count only time inside frames, start-up and shutdown
 *     are reported apart;
 *   - lost events: a frame that spans a loss of its marking thread is left out and counted, and
 *     zone ends without a begin name the right cause;
 *   - timer-bound zones are flagged against the capture's zone_cost_ns;
 *   - zone identity: a rebuild with moved lines from another directory pairs every zone, in
 *     diff and in the gate, and same-named zones of two functions stay apart;
 *   - --top 0 prints every row;
 *   - the GPU busy share of a frame is the union of overlapping GPU zones, never above 1;
 * and, through the real library and the real mprof binary (tests/stats_workload.c), recursion
 * on two threads and frame marks under a tiny memory cap.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analysis/analysis.h"
#include "analysis/diff.h"
#include "analysis/zstats.h"
#include "export/export.h"
#include "export/frames.h"
#include "gate/gate.h"
#include "analysis/zone_key.h"
#include "format/format.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS 1000000LL /* ns */

static char tmpdir[64];

static const char *tp(const char *name)
{
    static char bufs[8][256];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, 256, "%s/%s", tmpdir, name);
    return b;
}

/* ---- a capture writer with exact timestamps (ticks = ns) ------------------------------------ */

typedef struct cap {
    mprof_buf ev;
    int64_t last[8];
    uint32_t thread;
    const char *info_k[4], *info_v[4];
    int n_info;
} cap;

static void put(cap *c, const void *p, size_t n)
{
    assert_int_equal(mprof_buf_reserve(&c->ev, n), 0);
    memcpy(c->ev.data + c->ev.len, p, n);
    c->ev.len += n;
}
static void put_u8(cap *c, unsigned v)
{
    unsigned char b = (unsigned char)v;
    put(c, &b, 1);
}
static void put_var(cap *c, uint64_t v)
{
    unsigned char b[10], *e = mprof_put_varint(b, v);
    put(c, b, (size_t)(e - b));
}
static void put_s(cap *c, const char *s)
{
    put_var(c, strlen(s));
    put(c, s, strlen(s));
}
static void put_ts(cap *c, int64_t ts)
{
    put_var(c, mprof_zigzag(ts - c->last[c->thread]));
    c->last[c->thread] = ts;
}
static void thread(cap *c, uint32_t t)
{
    put_u8(c, MPROF_EV_THREAD);
    put_var(c, t);
    c->thread = t;
}
static void def_loc(cap *c, uint32_t id, const char *name, const char *fn, const char *file,
                    uint32_t line)
{
    put_u8(c, MPROF_EV_DEF_SRCLOC);
    put_var(c, id);
    put_var(c, line);
    put_var(c, 0);
    put_s(c, name);
    put_s(c, fn);
    put_s(c, file);
}
static void zb(cap *c, int64_t ts, uint32_t loc)
{
    put_u8(c, MPROF_EV_ZONE_BEGIN);
    put_ts(c, ts);
    put_var(c, loc);
}
static void ze(cap *c, int64_t ts)
{
    put_u8(c, MPROF_EV_ZONE_END);
    put_ts(c, ts);
}
static void zone(cap *c, int64_t s, int64_t e, uint32_t loc)
{
    zb(c, s, loc);
    ze(c, e);
}
static void mark(cap *c, int64_t ts)
{
    put_u8(c, MPROF_EV_FRAME_MARK);
    put_ts(c, ts);
    put_var(c, 0);
}
static void lost(cap *c, int64_t ts, uint64_t n)
{
    put_u8(c, MPROF_EV_LOST);
    put_ts(c, ts);
    put_var(c, n);
}
static void info(cap *c, const char *k, const char *v)
{
    c->info_k[c->n_info] = k;
    c->info_v[c->n_info++] = v;
}

static void write_capture(const char *path, cap *c)
{
    mprof_buf out = {0}, inf = {0}, fin = {0};
    assert_int_equal(mprof_buf_reserve(&out, MPROF_FMT_HEADER_BYTES), 0);
    mprof_fmt_file_header(out.data);
    out.len = MPROF_FMT_HEADER_BYTES;
    mprof_fmt_kv(&inf, "app", "stats");
    mprof_fmt_kv(&inf, "pid", "7");
    mprof_fmt_kv(&inf, "ns_per_tick", "1");
    mprof_fmt_kv(&inf, "tick0", "0");
    mprof_fmt_kv(&inf, "hostname", "host-a");
    mprof_fmt_kv(&inf, "cpu", "Synthetic CPU");
    mprof_fmt_kv(&inf, "build_type", "Release");
    for (int i = 0; i < c->n_info; i++)
        mprof_fmt_kv(&inf, c->info_k[i], c->info_v[i]);
    assert_int_equal(mprof_fmt_chunk(&out, MPROF_CHUNK_INFO, inf.data, inf.len, 0, NULL), 0);
    assert_int_equal(mprof_fmt_chunk(&out, MPROF_CHUNK_EVENTS, c->ev.data, c->ev.len, 3, NULL), 0);
    mprof_fmt_kv(&fin, "events_lost", "0");
    assert_int_equal(mprof_fmt_chunk(&out, MPROF_CHUNK_END, fin.data, fin.len, 0, NULL), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(out.data, 1, out.len, f), out.len);
    fclose(f);
    mprof_buf_free(&out);
    mprof_buf_free(&inf);
    mprof_buf_free(&fin);
    mprof_buf_free(&c->ev);
}

/* ---- reading results ------------------------------------------------------------------------ */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* The report of path as JSON (and its text into *text when text is not NULL). */
static cJSON *report(const char *path, int top_n, char **text)
{
    char err[512];
    mprof_analysis_opts o = {.top_n = top_n};
    mprof_analysis *a = mprof_analysis_run(path, &o, err, sizeof err);
    if (!a)
        fail_msg("%s", err);
    const char *jp = tp("report.json"), *tx = tp("report.txt");
    FILE *f = fopen(jp, "w");
    mprof_analysis_print_json(a, f);
    fclose(f);
    f = fopen(tx, "w");
    mprof_analysis_print_text(a, f);
    fclose(f);
    mprof_analysis_free(a);
    char *s = slurp(jp);
    cJSON *j = cJSON_Parse(s);
    free(s);
    assert_non_null(j);
    if (text)
        *text = slurp(tx);
    return j;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v) && !cJSON_IsBool(v))
        fail_msg("no number \"%s\"", k);
    return cJSON_IsBool(v) ? (double)cJSON_IsTrue(v) : v->valuedouble;
}

static const cJSON *zone_named(const cJSON *arr, const char *name, const char *fn)
{
    const cJSON *z;
    cJSON_ArrayForEach(z, arr)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(z, "name");
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(z, "function");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0 &&
            (!fn || (cJSON_IsString(f) && strcmp(f->valuestring, fn) == 0)))
            return z;
    }
    fail_msg("no zone %s", name);
    return NULL;
}

static const mprof_zstat *zstat_named(const mprof_zstats *s, const char *name)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->z[i].site.count && strcmp(s->z[i].name, name) == 0)
            return &s->z[i];
    fail_msg("no zone %s", name);
    return NULL;
}

/* ---- recursion and frames ------------------------------------------------------------------- */

enum { L_LOAD = 1, L_OUTER, L_REC, L_A, L_B, L_SHUT };

/*
 * Thread 1 marks frames at 10 and 110 ms (one 100 ms frame). Load [0, 10) runs before the first
 * mark, Shutdown [110, 115) after the last. In the frame, Outer [20, 80) holds a direct
 * recursion Rec [20, 80) > Rec [30, 70) > Rec [40, 60). Thread 2 runs a mutual recursion
 * A [20, 80) > B [25, 75) > A [30, 70) > B [35, 65).
 */
static void recursive_capture(const char *path)
{
    cap c = {0};
    thread(&c, 1);
    def_loc(&c, L_LOAD, "Load", "load", "/src/main.c", 5);
    def_loc(&c, L_OUTER, "Outer", "outer", "/src/main.c", 10);
    def_loc(&c, L_REC, "Rec", "rec", "/src/rec.c", 20);
    def_loc(&c, L_A, "A", "a", "/src/mut.c", 30);
    def_loc(&c, L_B, "B", "b", "/src/mut.c", 40);
    def_loc(&c, L_SHUT, "Shutdown", "shut", "/src/main.c", 50);
    zone(&c, 0, 10 * MS, L_LOAD);
    mark(&c, 10 * MS);
    zb(&c, 20 * MS, L_OUTER);
    zb(&c, 20 * MS, L_REC);
    zb(&c, 30 * MS, L_REC);
    zone(&c, 40 * MS, 60 * MS, L_REC);
    ze(&c, 70 * MS);
    ze(&c, 80 * MS);
    ze(&c, 80 * MS);
    mark(&c, 110 * MS);
    zone(&c, 110 * MS, 115 * MS, L_SHUT);
    thread(&c, 2);
    zb(&c, 20 * MS, L_A);
    zb(&c, 25 * MS, L_B);
    zb(&c, 30 * MS, L_A);
    zone(&c, 35 * MS, 65 * MS, L_B);
    ze(&c, 70 * MS);
    ze(&c, 75 * MS);
    ze(&c, 80 * MS);
    write_capture(path, &c);
}

static void test_recursion_report(void **state)
{
    (void)state;
    recursive_capture(tp("rec.mprof"));
    char *text;
    cJSON *j = report(tp("rec.mprof"), 0, &text);
    const cJSON *zs = cJSON_GetObjectItemCaseSensitive(j, "zones");
    const cJSON *rec = zone_named(zs, "Rec", NULL), *outer = zone_named(zs, "Outer", NULL);
    assert_int_equal((int)num(rec, "count"), 3);
    assert_int_equal((int64_t)num(rec, "total_ns"), 60 * MS); /* not 60 + 40 + 20 */
    assert_int_equal((int64_t)num(rec, "self_ns"), 60 * MS);
    assert_int_equal((int64_t)num(rec, "mean_ns"), 40 * MS); /* every call's duration */
    assert_true(num(rec, "total_ns") <= num(outer, "total_ns"));
    assert_float_equal(num(rec, "frame_share"), 0.6, 1e-9);
    const cJSON *za = zone_named(zs, "A", NULL), *zbb = zone_named(zs, "B", NULL);
    assert_int_equal((int)num(za, "count"), 2);
    assert_int_equal((int64_t)num(za, "total_ns"), 60 * MS);
    assert_int_equal((int64_t)num(zbb, "total_ns"), 50 * MS);
    assert_int_equal((int64_t)num(za, "self_ns"), 10 * MS + 10 * MS);
    /* No zone exceeds the frame on its thread. */
    const cJSON *z;
    cJSON_ArrayForEach(z, zs) assert_true(num(z, "frame_share") <= 1.0);
    /* Start-up and shutdown are outside the frames: no frame share, reported apart. */
    const cJSON *load = zone_named(zs, "Load", NULL), *shut = zone_named(zs, "Shutdown", NULL);
    assert_int_equal((int64_t)num(load, "total_ns"), 10 * MS);
    assert_float_equal(num(load, "frame_share"), 0.0, 0);
    assert_float_equal(num(shut, "per_frame_ms"), 0.0, 0);
    assert_float_equal(num(outer, "per_frame_ms"), 60.0, 1e-9);
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(j, "frames");
    assert_float_equal(num(fr, "before_first_ms"), 10.0, 1e-9);
    assert_float_equal(num(fr, "after_last_ms"), 5.0, 1e-9);
    assert_int_equal((int)num(fr, "count"), 1);
    assert_non_null(strstr(text, "outside frames: 10.000 ms before the first frame mark, 5.000 ms after"));
    assert_non_null(strstr(text, "ms/frame"));
    free(text);
    cJSON_Delete(j);
}

static void test_recursion_csv_diff_frames(void **state)
{
    (void)state;
    recursive_capture(tp("rec2.mprof"));
    char err[512];
    /* The statistics behind the CSV export and diff. */
    mprof_zstats s;
    assert_int_equal(mprof__zstats_collect(tp("rec2.mprof"), &s, err, sizeof err), 0);
    assert_int_equal(zstat_named(&s, "Rec")->site.total_ns, 60 * MS);
    assert_int_equal(zstat_named(&s, "Rec")->site.count, 3);
    assert_int_equal(zstat_named(&s, "A")->site.total_ns, 60 * MS);
    assert_int_equal(zstat_named(&s, "B")->site.total_ns, 50 * MS);
    assert_int_equal(zstat_named(&s, "B")->site.self_ns, 40 * MS);
    mprof__zstats_free(&s);
    /* The CSV file itself. */
    FILE *f = fopen(tp("rec.csv"), "w");
    assert_int_equal(mprof__export_csv_stats(tp("rec2.mprof"), f, err, sizeof err), 0);
    fclose(f);
    char *csv = slurp(tp("rec.csv"));
    assert_non_null(strstr(csv, "Rec,rec,/src/rec.c,20,3,60000000,60000000,"));
    free(csv);
    /* The frame export (the gate's input): inclusive totals and per-frame inclusive time. */
    assert_int_equal(mprof__export_frames(tp("rec2.mprof"), tp("rec.json"), err, sizeof err), 0);
    char *js = slurp(tp("rec.json"));
    cJSON *j = cJSON_Parse(js);
    free(js);
    const cJSON *zs = cJSON_GetObjectItemCaseSensitive(j, "zones");
    const cJSON *rec = zone_named(zs, "Rec", "rec");
    assert_float_equal(num(rec, "totalMs"), 60.0, 1e-9);
    assert_float_equal(num(rec, "selfTotalMs"), 60.0, 1e-9);
    assert_float_equal(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rec, "perFrameMs"), 0)->valuedouble,
                       60.0, 1e-9);
    assert_float_equal(num(zone_named(zs, "A", "a"), "totalMs"), 60.0, 1e-9);
    cJSON_Delete(j);
    /* diff of the capture against itself: impact 0, Rec's total is the folded one. */
    mprof_diff *d = mprof__diff_run(tp("rec2.mprof"), tp("rec2.mprof"), err, sizeof err);
    assert_non_null(d);
    f = fopen(tp("diff.json"), "w");
    mprof__diff_print_json(d, f, 0);
    fclose(f);
    mprof__diff_free(d);
    js = slurp(tp("diff.json"));
    j = cJSON_Parse(js);
    free(js);
    rec = zone_named(cJSON_GetObjectItemCaseSensitive(j, "zones"), "Rec", "rec");
    assert_float_equal(num(rec, "a_total_ns"), 60.0 * MS, 0);
    cJSON_Delete(j);
}

/* ---- lost events ----------------------------------------------------------------------------- */

static void test_lost_frame_marks(void **state)
{
    (void)state;
    /* Marks every 10 ms on thread 1; the marks at 30 ms (and the zone end of Work) were lost:
     * the LOST record at 35 ms says so. Without the rule, [20, 40) would be a 20 ms frame. */
    cap c = {0};
    thread(&c, 1);
    def_loc(&c, 1, "Work", "work", "/src/w.c", 1);
    for (int i = 0; i <= 2; i++)
        mark(&c, i * 10 * MS);
    zb(&c, 22 * MS, 1);
    lost(&c, 35 * MS, 1000);
    ze(&c, 37 * MS); /* its begin was dropped with the gap */
    mark(&c, 40 * MS);
    mark(&c, 50 * MS);
    thread(&c, 2);
    ze(&c, 1 * MS); /* opened before recording started */
    write_capture(tp("lost.mprof"), &c);

    char *text;
    cJSON *j = report(tp("lost.mprof"), 0, &text);
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(j, "frames");
    assert_int_equal((int)num(fr, "count"), 3);
    assert_int_equal((int)num(fr, "incomplete"), 1);
    assert_float_equal(num(fr, "max_ms"), 10.0, 1e-9);
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "events");
    assert_int_equal((int)num(ev, "unmatched_zone_ends"), 2);
    assert_int_equal((int)num(ev, "unmatched_zone_ends_after_loss"), 1);
    assert_non_null(strstr(text, "1 more frames spanned lost events"));
    assert_non_null(strstr(text, "1 zone ends had no begin because events were lost"));
    assert_non_null(strstr(text, "1 zone ends had no begin (zones opened before recording started)"));
    free(text);
    cJSON_Delete(j);

    char err[512];
    assert_int_equal(mprof__export_frames(tp("lost.mprof"), tp("lost.json"), err, sizeof err), 0);
    char *js = slurp(tp("lost.json"));
    j = cJSON_Parse(js);
    free(js);
    assert_int_equal((int)num(j, "frameCount"), 3);
    assert_int_equal((int)num(j, "incompleteFrames"), 1);
    assert_float_equal(num(j, "maxFrameTimeMs"), 10.0, 1e-9);
    cJSON_Delete(j);

    mprof_zstats s;
    assert_int_equal(mprof__zstats_collect(tp("lost.mprof"), &s, err, sizeof err), 0);
    assert_int_equal(s.n_frames, 3);
    assert_int_equal(s.n_lossy, 1);
    assert_float_equal(s.frame_ns[s.n_frames - 1], 10.0 * MS, 0);
    mprof__zstats_free(&s);
}

/* ---- timer-bound zones, --top 0 --------------------------------------------------------------- */

static void test_timer_bound_and_top(void **state)
{
    (void)state;
    cap c = {0};
    info(&c, "zone_cost_ns", "20.0");
    thread(&c, 1);
    def_loc(&c, 1, "Tiny", "tiny", "/src/t.c", 1);
    def_loc(&c, 2, "Big", "big", "/src/t.c", 2);
    mark(&c, 0);
    for (int i = 0; i < 100; i++)
        zone(&c, 1000 + i * 1000, 1000 + i * 1000 + 50, 1); /* 50 ns: 2.5 x the cost */
    zone(&c, 200000, 200000 + MS, 2);
    for (uint32_t k = 3; k < 30; k++) {
        def_loc(&c, k, "Many", "many", "/src/m.c", k);
        zone(&c, 2 * MS + k * 1000, 2 * MS + k * 1000 + 500, k);
    }
    mark(&c, 3 * MS);
    write_capture(tp("tiny.mprof"), &c);
    char *text;
    cJSON *j = report(tp("tiny.mprof"), INT_MAX, &text);
    assert_float_equal(num(j, "zone_cost_ns"), 20.0, 1e-9);
    const cJSON *zs = cJSON_GetObjectItemCaseSensitive(j, "zones");
    assert_true(num(zone_named(zs, "Tiny", NULL), "timer_bound"));
    assert_false(num(zone_named(zs, "Big", NULL), "timer_bound"));
    assert_non_null(strstr(text, "*Tiny"));
    assert_non_null(strstr(text, "an empty zone costs 20.0 ns"));
    assert_non_null(strstr(text, "Zones (29 of 29"));
    free(text);
    cJSON_Delete(j);
    /* The default still cuts at 20 rows and says how to see the rest. */
    j = report(tp("tiny.mprof"), 0, &text);
    assert_non_null(strstr(text, "Zones (20 of 29"));
    assert_non_null(strstr(text, "9 more (use --top 0 for all)"));
    free(text);
    cJSON_Delete(j);
}

/* ---- GPU busy share --------------------------------------------------------------------------- */

static void put_f64(cap *c, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(u >> (8 * i));
    put(c, b, 8);
}

static void gpu_zone(cap *c, int64_t submit, uint32_t q, int64_t gb, int64_t ge)
{
    put_u8(c, MPROF_EV_GPU_ZONE_BEGIN);
    put_ts(c, submit);
    put_var(c, 1);
    put_var(c, q);
    put_var(c, 1);
    put_u8(c, MPROF_EV_GPU_ZONE_END);
    put_ts(c, submit);
    put_var(c, 1);
    put_var(c, q + 1);
    put_u8(c, MPROF_EV_GPU_TIME);
    put_var(c, 1);
    put_var(c, q);
    put_var(c, mprof_zigzag(gb));
    put_u8(c, MPROF_EV_GPU_TIME);
    put_var(c, 1);
    put_var(c, q + 1);
    put_var(c, mprof_zigzag(ge));
}

static void test_gpu_busy_union(void **state)
{
    (void)state;
    /* Frames [0, 10) and [10, 20) ms. Frame 1 submits two passes that both run on the GPU over
     * [2, 8) ms (two queues): busy 6 ms, not 12. Frame 2's pass runs [12, 14). GPU tick = CPU ns. */
    cap c = {0};
    thread(&c, 1);
    put_u8(&c, MPROF_EV_DEF_STRING);
    put_var(&c, 1);
    put_s(&c, "Queue");
    def_loc(&c, 1, "Pass", "draw", "/src/gpu.c", 1);
    put_u8(&c, MPROF_EV_GPU_CONTEXT);
    put_ts(&c, 0);
    put_var(&c, 1);
    put_var(&c, 1);
    put_u8(&c, 0);
    put_f64(&c, 1.0);
    put_u8(&c, MPROF_EV_GPU_CALIBRATE);
    put_ts(&c, 0);
    put_var(&c, 1);
    put_var(&c, mprof_zigzag(0));
    mark(&c, 0);
    gpu_zone(&c, 1 * MS, 0, 2 * MS, 8 * MS);
    gpu_zone(&c, 1 * MS, 2, 2 * MS, 8 * MS);
    mark(&c, 10 * MS);
    gpu_zone(&c, 11 * MS, 4, 12 * MS, 14 * MS);
    mark(&c, 20 * MS);
    write_capture(tp("gpu.mprof"), &c);

    char err[512];
    mprof_analysis_opts o = {.passes = "gpu"};
    mprof_analysis *a = mprof_analysis_run(tp("gpu.mprof"), &o, err, sizeof err);
    if (!a)
        fail_msg("%s", err);
    FILE *f = fopen(tp("gpu.json"), "w");
    mprof_analysis_print_json(a, f);
    fclose(f);
    mprof_analysis_free(a);
    char *js = slurp(tp("gpu.json"));
    cJSON *j = cJSON_Parse(js);
    free(js);
    assert_non_null(j);
    const cJSON *ctx = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "gpu"), "contexts"), 0);
    assert_non_null(ctx);
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(ctx, "frames");
    const cJSON *share = cJSON_GetObjectItemCaseSensitive(fr, "busy_share");
    assert_int_equal(cJSON_GetArraySize(share), 2);
    assert_float_equal(cJSON_GetArrayItem(share, 0)->valuedouble, 0.6, 1e-9);
    assert_float_equal(cJSON_GetArrayItem(share, 1)->valuedouble, 0.2, 1e-9);
    assert_float_equal(num(fr, "busy_share_max"), 0.6, 1e-9);
    /* 12 ms of work submitted in a 10 ms frame: GPU-bound all the same. */
    assert_int_equal((int)num(fr, "gpu_bound"), 1);
    cJSON_Delete(j);
}

/* ---- zone identity ---------------------------------------------------------------------------- */

/*
 * The same program built twice: B moved every line down by 2 and was built in another
 * directory. Its Update in ai_update takes 2 ms a frame instead of 1; Update in game_update and
 * both lock sites (same name and function: told apart by line) are unchanged. 20 frames.
 */
static void identity_capture(const char *path, int b)
{
    const char *dir = b ? "/home/someone/checkout/src/" : "/build/ci/src/";
    char f1[128], f2[128];
    snprintf(f1, sizeof f1, "%sgame.c", dir);
    snprintf(f2, sizeof f2, "%sjobs.c", dir);
    uint32_t dl = b ? 2 : 0;
    cap c = {0};
    thread(&c, 1);
    def_loc(&c, 1, "Update", "game_update", f1, 10 + dl);
    def_loc(&c, 2, "Update", "ai_update", f1, 40 + dl);
    def_loc(&c, 3, "lock", "jobs_run", f2, 30 + dl);
    def_loc(&c, 4, "lock", "jobs_run", f2, 50 + dl);
    for (int i = 0; i < 20; i++) {
        int64_t t = i * 10 * MS;
        mark(&c, t);
        zone(&c, t + 1 * MS, t + 3 * MS, 1);
        zone(&c, t + 3 * MS, t + (b ? 5 : 4) * MS, 2);
        zone(&c, t + 6 * MS, t + 6 * MS + 100000, 3);
        zone(&c, t + 7 * MS, t + 7 * MS + 300000, 4);
    }
    mark(&c, 200 * MS);
    write_capture(path, &c);
}

static void test_zone_key(void **state)
{
    (void)state;
    assert_int_equal(mprof__zone_key_path_common("/build/ci/src/game.c", "/home/x/src/game.c"), 2);
    assert_int_equal(mprof__zone_key_path_common("../src/./game.c", "src/game.c"), 2);
    assert_int_equal(mprof__zone_key_path_common("a/game.c", "a/other.c"), 0);
    mprof_zone_key a = {"Update", "game_update", "/a/src/game.c", 10};
    mprof_zone_key b = {"Update", "game_update", "/b/src/game.c", 12};
    mprof_zone_key c = {"Update", "ai_update", "/a/src/game.c", 10};
    mprof_zone_key d = {"Update", NULL, NULL, 0};
    assert_true(mprof__zone_key_same(&a, &b));
    assert_false(mprof__zone_key_same(&a, &c));
    assert_true(mprof__zone_key_same(&a, &d)); /* an unknown function matches by name */
    /* Ties: two sites sharing name and function pair by line when the lines still match. */
    mprof_zone_key l1[2] = {{"lock", "f", "x.c", 30}, {"lock", "f", "x.c", 50}};
    mprof_zone_key l2[2] = {{"lock", "f", "x.c", 50}, {"lock", "f", "x.c", 30}};
    ptrdiff_t p[2];
    assert_int_equal(mprof__zone_key_pair(l1, 2, l2, 2, p), 0);
    assert_int_equal(p[0], 1);
    assert_int_equal(p[1], 0);
}

static void test_rebuild_diff_and_gate(void **state)
{
    (void)state;
    identity_capture(tp("id_a.mprof"), 0);
    identity_capture(tp("id_b.mprof"), 1);
    char err[512];
    mprof_diff *d = mprof__diff_run(tp("id_a.mprof"), tp("id_b.mprof"), err, sizeof err);
    assert_non_null(d);
    FILE *f = fopen(tp("id.txt"), "w");
    mprof__diff_print_text(d, f, 0);
    fclose(f);
    f = fopen(tp("id.json"), "w");
    mprof__diff_print_json(d, f, 0);
    fclose(f);
    mprof__diff_free(d);
    char *text = slurp(tp("id.txt"));
    assert_non_null(strstr(text, "4 zones compared: 4 in both, 0 only in A, 0 only in B"));
    free(text);
    char *js = slurp(tp("id.json"));
    cJSON *j = cJSON_Parse(js);
    free(js);
    const cJSON *zs = cJSON_GetObjectItemCaseSensitive(j, "zones");
    const cJSON *ai = zone_named(zs, "Update", "ai_update");
    assert_float_equal(num(ai, "impact_ns"), 1.0 * MS, 1e-3);
    assert_float_equal(num(zone_named(zs, "Update", "game_update"), "impact_ns"), 0.0, 1e-3);
    /* The lock sites keep their own partners (line 30 -> 32, 50 -> 52). */
    const cJSON *z;
    cJSON_ArrayForEach(z, zs)
    {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(z, "name")->valuestring, "lock") != 0)
            continue;
        assert_int_equal((int)num(z, "b_line"), (int)num(z, "line") + 2);
        assert_float_equal(num(z, "impact_ns"), 0.0, 1e-3);
    }
    cJSON_Delete(j);

    /* The gate pairs the same way: Update of ai_update grew by 1 ms a frame, Update of
     * game_update by nothing (merging by name would blame "Update" as one zone). */
    assert_int_equal(mprof__export_frames(tp("id_a.mprof"), tp("id_a.json"), err, sizeof err), 0);
    assert_int_equal(mprof__export_frames(tp("id_b.mprof"), tp("id_b.json"), err, sizeof err), 0);
    mprof_frames_runs *b = mprof__frames_load(tp("id_a.json"), 0, err, sizeof err);
    mprof_frames_runs *c = mprof__frames_load(tp("id_b.json"), 0, err, sizeof err);
    assert_non_null(b);
    assert_non_null(c);
    mprof_gate_opts o = {.top_zones = 100};
    mprof_gate_result *r = mprof__gate_compare(b, c, &o, err, sizeof err);
    assert_non_null(r);
    int seen = 0;
    for (size_t i = 0; i < r->n_zones; i++) {
        const mprof_gate_attrib *a = &r->zones[i];
        assert_non_null(a->function);
        assert_true(a->base_ms > 0 && a->cur_ms > 0); /* every zone found on both sides */
        if (strcmp(a->function, "ai_update") == 0) {
            assert_float_equal(a->delta_ms, 1.0, 1e-9);
            seen |= 1;
        } else if (strcmp(a->function, "game_update") == 0) {
            assert_float_equal(a->delta_ms, 0.0, 1e-9);
            seen |= 2;
        }
    }
    assert_int_equal(seen, 3);
    assert_int_equal(r->n_zones, 3); /* Update x 2 and lock (one identity, merged per run) */
    /* Every writer links to the two captures side by side in the viewer, on the zone that grew. */
    FILE *g = fopen(tp("gate.txt"), "w+");
    assert_int_equal(mprof__gate_print_text(r, g), 0);
    fclose(g);
    char *gt = slurp(tp("gate.txt"));
    char want[1200];
    snprintf(want, sizeof want, "mprof view --serve %s %s", tp("id_a.mprof"), tp("id_b.mprof"));
    assert_non_null(strstr(gt, want));
    assert_non_null(strstr(gt, "#compare&zone=Update"));
    free(gt);
    g = fopen(tp("gate.json"), "w+");
    assert_int_equal(mprof__gate_write_json(r, g), 0);
    fclose(g);
    gt = slurp(tp("gate.json"));
    cJSON *gj = cJSON_Parse(gt);
    free(gt);
    const cJSON *cmpj = cJSON_GetObjectItemCaseSensitive(gj, "compare");
    assert_non_null(cmpj);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(cmpj, "command")->valuestring, want);
    cJSON_Delete(gj);
    mprof__gate_result_free(r);
    mprof__frames_runs_free(b);
    mprof__frames_runs_free(c);
}

/* ---- the real library and binary ----------------------------------------------------------- */

static const char *workload(void)
{
    const char *w = getenv("MPROF_STATS_WORKLOAD");
    return w ? w : "tests/stats_workload";
}

/* mprof report --json of path through the real binary. */
static cJSON *report_bin(const char *path)
{
    static char out[1 << 20];
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s report --json %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    return j;
}

static void test_real_recursion_two_threads(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "MPROF_LISTEN=0 %s %s --frames 20", workload(), tp("real.mprof"));
    char out[256];
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    cJSON *j = report_bin(tp("real.mprof"));
    const cJSON *zs = cJSON_GetObjectItemCaseSensitive(j, "zones");
    const cJSON *rec = zone_named(zs, "Rec", "rec"), *even = zone_named(zs, "Even", "even");
    const cJSON *odd = zone_named(zs, "Odd", "odd");
    double frame = num(zone_named(zs, "Frame", "main"), "total_ns");
    double work = num(zone_named(zs, "Work", "worker"), "total_ns");
    /* Every call is counted: 127 Rec, 4 Even and 4 Odd per iteration, 20 iterations, 2 threads. */
    assert_int_equal((int)num(rec, "count"), 127 * 20 * 2);
    assert_int_equal((int)num(even, "count"), 4 * 20 * 2);
    assert_int_equal((int)num(odd, "count"), 4 * 20 * 2);
    /* Each thread's recursion lies inside its enclosing zone, so the totals cannot exceed the
     * enclosing zones' (counted once per level, Rec alone was about 6 times them). */
    assert_true(num(rec, "total_ns") <= frame + work);
    assert_true(num(even, "total_ns") <= frame + work);
    assert_true(num(odd, "total_ns") <= num(even, "total_ns"));
    assert_true(num(rec, "self_ns") <= num(rec, "total_ns"));
    assert_true(num(zone_named(zs, "Frame", "main"), "frame_share") <= 1.0 + 1e-9);
    /* The library measured what an empty zone costs and wrote it into the capture. */
    assert_true(num(j, "zone_cost_ns") > 0);
    cJSON_Delete(j);
}

static void test_real_tiny_memory_cap(void **state)
{
    (void)state;
    char cmd[1024], out[256];
    snprintf(cmd, sizeof cmd, "MPROF_LISTEN=0 MPROF_MEMORY_MIB=1 %s %s --frames 30 --flood",
             workload(), tp("cap.mprof"));
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    cJSON *j = report_bin(tp("cap.mprof"));
    double lost = num(cJSON_GetObjectItemCaseSensitive(j, "events"), "lost");
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(j, "frames");
    double complete = num(fr, "count"), incomplete = num(fr, "incomplete");
    cJSON_Delete(j);
    if (lost == 0) {
        /* The collector kept up with 6 million zones in 1 MiB: nothing to check here. */
        skip();
    }
    /* The main thread floods: its frames that span its losses are flagged, not stitched into
     * long frames, and the frames between floods are kept. */
    assert_true(incomplete >= 1);
    assert_true(complete >= 1);
    assert_true(complete + incomplete <= 30);
    char err[512];
    assert_int_equal(mprof__export_frames(tp("cap.mprof"), tp("cap.json"), err, sizeof err), 0);
    char *js = slurp(tp("cap.json"));
    j = cJSON_Parse(js);
    free(js);
    assert_float_equal(num(j, "incompleteFrames"), incomplete, 0);
    assert_float_equal(num(j, "frameCount"), complete, 0);
    cJSON_Delete(j);
}

/* Loading that got slower before the first frame moves no per-frame figure in diff. */
static void startup_capture(const char *path, int load_ms)
{
    cap c = {0};
    thread(&c, 1);
    def_loc(&c, 1, "Load", "load", "/src/main.c", 1);
    def_loc(&c, 2, "Update", "update", "/src/main.c", 2);
    zone(&c, 0, load_ms * MS, 1);
    for (int i = 0; i <= 10; i++) {
        int64_t t = (load_ms + i * 10) * MS;
        mark(&c, t);
        if (i < 10)
            zone(&c, t + MS, t + 3 * MS, 2);
    }
    write_capture(path, &c);
}

static void test_diff_startup(void **state)
{
    (void)state;
    startup_capture(tp("su_a.mprof"), 10);
    startup_capture(tp("su_b.mprof"), 50);
    char err[512];
    mprof_diff *d = mprof__diff_run(tp("su_a.mprof"), tp("su_b.mprof"), err, sizeof err);
    assert_non_null(d);
    FILE *f = fopen(tp("su.json"), "w");
    mprof__diff_print_json(d, f, 0);
    fclose(f);
    mprof__diff_free(d);
    char *js = slurp(tp("su.json"));
    cJSON *j = cJSON_Parse(js);
    free(js);
    const cJSON *zs = cJSON_GetObjectItemCaseSensitive(j, "zones");
    assert_float_equal(num(zone_named(zs, "Load", "load"), "impact_ns"), 0.0, 0);
    assert_float_equal(num(zone_named(zs, "Load", "load"), "b_total_ns"), 50.0 * MS, 0);
    assert_float_equal(num(zone_named(zs, "Update", "update"), "impact_ns"), 0.0, 0);
    assert_float_equal(num(zone_named(zs, "Update", "update"), "a_in_frames_ns"), 20.0 * MS, 0);
    cJSON_Delete(j);
}

/* One read settles each zone's part inside the main frames' span as the span grows; zones read
 * before the marks that frame them wait, and when more wait than the list holds, the report
 * reads again with the span first. Either way the figures are those of two reads. */
static void worker_first_capture(const char *path, int zones)
{
    cap c = {0};
    thread(&c, 2);
    def_loc(&c, 1, "Job", "job", "/src/job.c", 1);
    /* The worker's zones come first in the file: 1 ms each, from 5 ms to 5 + zones ms (step
     * 1 ms), so that some are before the first mark (10 ms), and some after the last. */
    for (int i = 0; i < zones; i++)
        zone(&c, (5 + (int64_t)i) * MS, (5 + (int64_t)i) * MS + MS / 2, 1);
    thread(&c, 1);
    def_loc(&c, 2, "Frame", "frame", "/src/main.c", 2);
    int64_t last = 10 * MS + (int64_t)zones * MS / 2;
    for (int64_t t = 10 * MS; t <= last; t += 10 * MS) {
        mark(&c, t);
        zone(&c, t + MS, t + 2 * MS, 2);
    }
    write_capture(path, &c);
}

static char *report_json_text(const char *path)
{
    char err[512];
    mprof_analysis *a = mprof_analysis_run(path, NULL, err, sizeof err);
    if (!a)
        fail_msg("%s", err);
    FILE *f = fopen(tp("span.json"), "w");
    mprof_analysis_print_json(a, f);
    fclose(f);
    mprof_analysis_free(a);
    return slurp(tp("span.json"));
}

static void test_span_one_read(void **state)
{
    (void)state;
    int sizes[] = {1000, 300000};
    for (int k = 0; k < 2; k++) {
        int n = sizes[k];
        worker_first_capture(tp("span.mprof"), n);
        char *one = report_json_text(tp("span.mprof"));
        setenv("MPROF_TWO_READS", "1", 1);
        char *two = report_json_text(tp("span.mprof"));
        unsetenv("MPROF_TWO_READS");
        assert_string_equal(one, two);
        cJSON *j = cJSON_Parse(one);
        assert_non_null(j);
        /* The span: 10 ms to the last mark; the worker's zones inside it, whole or in part. */
        int64_t lo = 10 * MS, hi = 10 * MS + ((int64_t)n * MS / 2) / (10 * MS) * (10 * MS);
        int64_t want = 0;
        for (int i = 0; i < n; i++) {
            int64_t s = (5 + (int64_t)i) * MS, e = s + MS / 2;
            int64_t a = s > lo ? s : lo, b = e < hi ? e : hi;
            want += b > a ? b - a : 0;
        }
        const cJSON *zs = cJSON_GetObjectItemCaseSensitive(j, "zones");
        assert_float_equal(num(zone_named(zs, "Job", "job"), "in_frames_ns"), (double)want, 0);
        assert_float_equal(num(zone_named(zs, "Job", "job"), "count"), (double)n, 0);
        cJSON_Delete(j);
        free(one);
        free(two);
    }
}

/* The report's read hands out whole only the events its passes say they read (their `fields`);
 * on the sample engine's capture (locks, fibers, plots, messages, zone values, switches) the
 * report is the same as with every event whole, with one job and with three. */
static void test_fields_complete(void **state)
{
    (void)state;
    const char *path = getenv("MPROF_TEST_ENGINE_CAPTURE");
    assert_non_null(path);
    /* The capture has events that the default report reads as records only. */
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    uint64_t locks = 0, values = 0;
    mprof_event ev;
    while (mprof_reader_next(r, &ev) == 1) {
        locks += ev.type == MPROF_EV_LOCK_WAIT || ev.type == MPROF_EV_LOCK_RELEASED;
        values += ev.type == MPROF_EV_ZONE_VALUE;
    }
    mprof_reader_close(r);
    assert_true(locks > 100);
    assert_true(values > 100);
    for (int jobs = 1; jobs <= 3; jobs += 2) {
        mprof_set_read_jobs(jobs);
        char *records = report_json_text(path);
        setenv("MPROF_WHOLE_EVENTS", "1", 1);
        char *whole = report_json_text(path);
        unsetenv("MPROF_WHOLE_EVENTS");
        assert_string_equal(records, whole);
        free(records);
        free(whole);
    }
    mprof_set_read_jobs(1);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mprof_test_analysis_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recursion_report),
        cmocka_unit_test(test_span_one_read),
        cmocka_unit_test(test_fields_complete),
        cmocka_unit_test(test_recursion_csv_diff_frames),
        cmocka_unit_test(test_lost_frame_marks),
        cmocka_unit_test(test_timer_bound_and_top),
        cmocka_unit_test(test_gpu_busy_union),
        cmocka_unit_test(test_zone_key),
        cmocka_unit_test(test_rebuild_diff_and_gate),
        cmocka_unit_test(test_diff_startup),
        cmocka_unit_test(test_real_recursion_two_threads),
        cmocka_unit_test(test_real_tiny_memory_cap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
