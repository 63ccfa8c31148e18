/*
 * test_frames_export.c - the frame export (src/export/frames.c) on synthetic captures
 * whose every timestamp is known, written with the format's own chunk writer, so frame times,
 * percentiles and the per-frame split of zones (self and inclusive, across frame boundaries and
 * threads) can be checked exactly. Ends with the whole path: two exports into the gate.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analysis/analysis.h"
#include "export/frames.h"
#include "gate/gate.h"
#include "gate/stats.h"
#include "format/format.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MS 1000000LL /* ns */

static char tmpdir[64];

/* ---- a capture writer with exact timestamps (ticks = ns) ------------------------------------ */

typedef struct cap {
    mprof_buf ev;
    int64_t last[8];
    uint32_t thread;
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
static void def_loc(cap *c, uint32_t id, const char *name)
{
    put_u8(c, MPROF_EV_DEF_SRCLOC);
    put_var(c, id);
    put_var(c, 10 + id); /* line */
    put_var(c, 0);       /* color */
    put_s(c, name);
    put_s(c, "fn");
    put_s(c, "engine.c");
}
static void def_str(cap *c, uint32_t id, const char *s)
{
    put_u8(c, MPROF_EV_DEF_STRING);
    put_var(c, id);
    put_s(c, s);
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
static void mark(cap *c, int tag, int64_t ts, uint32_t name)
{
    put_u8(c, (unsigned)tag);
    put_ts(c, ts);
    put_var(c, name);
}

/* Writes header, INFO (with git_sha when sha), the events and END (unless truncated). */
static void write_capture(const char *path, cap *c, const char *sha, const char *host, int end)
{
    mprof_buf out = {0}, info = {0}, fin = {0};
    assert_int_equal(mprof_buf_reserve(&out, MPROF_FMT_HEADER_BYTES), 0);
    mprof_fmt_file_header(out.data);
    out.len = MPROF_FMT_HEADER_BYTES;
    mprof_fmt_kv(&info, "app", "engine");
    mprof_fmt_kv(&info, "pid", "4242");
    mprof_fmt_kv(&info, "start_unix_ns", "1796000000123000000");
    mprof_fmt_kv(&info, "ns_per_tick", "1");
    mprof_fmt_kv(&info, "tick0", "0");
    mprof_fmt_kv(&info, "hostname", host);
    mprof_fmt_kv(&info, "cpu", "Synthetic CPU");
    mprof_fmt_kv(&info, "build_type", "Release");
    if (sha)
        mprof_fmt_kv(&info, "git_sha", sha);
    assert_int_equal(mprof_fmt_chunk(&out, MPROF_CHUNK_INFO, info.data, info.len, 0, NULL), 0);
    assert_int_equal(mprof_fmt_chunk(&out, MPROF_CHUNK_EVENTS, c->ev.data, c->ev.len, 3, NULL), 0);
    mprof_fmt_kv(&fin, "events_lost", "0");
    if (end)
        assert_int_equal(mprof_fmt_chunk(&out, MPROF_CHUNK_END, fin.data, fin.len, 0, NULL), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(out.data, 1, out.len, f), out.len);
    fclose(f);
    mprof_buf_free(&out);
    mprof_buf_free(&info);
    mprof_buf_free(&fin);
    mprof_buf_free(&c->ev);
}

/*
 * The engine: N_MARKS marks on thread 1 at t_0 = 0, t_{i+1} = t_i + d_i with
 * d_i = (10 + i % 10 + p - 3) ms, where p (phys_ms) is the Physics time, 3 ms in the baseline.
 * In frame i: Update [t+1, t+4+p) containing Physics [t+2, t+2+p), so Update's self time is
 * 3 ms; on thread 2, Stream [t+5+p, t+9+p) (4 ms), which crosses into the next frame when the
 * frame is shorter than 9 + p ms. A named "Render" mark every second frame and a "Load" range
 * [t+1, t+3) in frames 0..9. Frames: N_MARKS - 1.
 */
enum { N_MARKS = 101 };

static int64_t frame_start(int i, double phys_ms)
{
    int64_t t = 0;
    for (int k = 0; k < i; k++)
        t += (10 + k % 10) * MS + (int64_t)((phys_ms - 3.0) * MS);
    return t;
}

static void engine(const char *path, double phys_ms, const char *sha, const char *host)
{
    cap c;
    memset(&c, 0, sizeof c);
    def_loc(&c, 1, "Update");
    def_loc(&c, 2, "Physics");
    def_loc(&c, 3, "Stream");
    def_str(&c, 1, "Render");
    def_str(&c, 2, "Load");
    for (int i = 0; i < N_MARKS; i++) {
        int64_t t = frame_start(i, phys_ms);
        int64_t p = (int64_t)(phys_ms * MS);
        thread(&c, 1);
        mark(&c, MPROF_EV_FRAME_MARK, t, 0);
        if (i % 2 == 0)
            mark(&c, MPROF_EV_FRAME_MARK, t, 1);
        if (i == N_MARKS - 1)
            break;
        if (i < 10)
            mark(&c, MPROF_EV_FRAME_BEGIN, t + 1 * MS, 2);
        zb(&c, t + 1 * MS, 1);
        zb(&c, t + 2 * MS, 2);
        ze(&c, t + 2 * MS + p);
        ze(&c, t + 4 * MS + p);
        if (i < 10)
            mark(&c, MPROF_EV_FRAME_END, t + 3 * MS, 2);
        thread(&c, 2);
        zb(&c, t + 5 * MS + p, 3);
        ze(&c, t + 9 * MS + p);
    }
    write_capture(path, &c, sha, host, 1);
}

static char *slurp(const char *path)
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
    return b;
}

static cJSON *export_json(const char *cap_path, const char *out_path)
{
    char err[512] = "";
    if (mprof__export_frames(cap_path, out_path, err, sizeof err) != 0)
        fail_msg("export failed: %s", err);
    char *text = slurp(out_path);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static const cJSON *find_zone(const cJSON *j, const char *name)
{
    const cJSON *z;
    cJSON_ArrayForEach(z, cJSON_GetObjectItem(j, "zones"))
    {
        if (strcmp(cJSON_GetObjectItem(z, "name")->valuestring, name) == 0)
            return z;
    }
    fail_msg("zone %s not exported", name);
    return NULL;
}

static char *tp(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void test_frames_and_summary(void **state)
{
    (void)state;
    engine(tp("a.mprof"), 3.0, "0123456789abcdef0123456789abcdef01234567", "host-a");
    cJSON *j = export_json(tp("a.mprof"), tp("a.json"));
    assert_string_equal(cJSON_GetObjectItem(j, "schema")->valuestring, "mprof.frames.v1");
    const cJSON *capo = cJSON_GetObjectItem(j, "capture");
    assert_string_equal(cJSON_GetObjectItem(capo, "file")->valuestring, tp("a.mprof"));
    assert_string_equal(cJSON_GetObjectItem(capo, "process")->valuestring, "engine");
    assert_int_equal((int)num(capo, "pid"), 4242);
    assert_string_equal(cJSON_GetObjectItem(capo, "gitSha")->valuestring,
                        "0123456789abcdef0123456789abcdef01234567");
    assert_string_equal(cJSON_GetObjectItem(capo, "gitShaSource")->valuestring, "capture");
    assert_string_equal(cJSON_GetObjectItem(capo, "hostname")->valuestring, "host-a");
    assert_string_equal(cJSON_GetObjectItem(capo, "cpu")->valuestring, "Synthetic CPU");
    assert_string_equal(cJSON_GetObjectItem(capo, "buildType")->valuestring, "Release");
    /* 1796000000.123 s after the epoch, UTC */
    assert_string_equal(cJSON_GetObjectItem(capo, "startTime")->valuestring,
                        "2026-11-30T00:53:20.123Z");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(capo, "complete")));
    assert_int_equal((int)num(capo, "eventsLost"), 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "frameSet")));

    /* Every frame's duration, and the percentiles of exactly those. */
    double d[N_MARKS - 1];
    for (int i = 0; i < N_MARKS - 1; i++)
        d[i] = 10.0 + i % 10;
    assert_int_equal((int)num(j, "frameCount"), N_MARKS - 1);
    const cJSON *ft = cJSON_GetObjectItem(j, "frameTimesMs");
    assert_int_equal(cJSON_GetArraySize(ft), N_MARKS - 1);
    for (int i = 0; i < N_MARKS - 1; i++)
        assert_float_equal(cJSON_GetArrayItem(ft, i)->valuedouble, d[i], 1e-9);
    mprof__sort_doubles(d, N_MARKS - 1);
    assert_float_equal(num(j, "p50FrameTimeMs"), mprof__percentile_sorted(d, N_MARKS - 1, 50), 1e-4);
    assert_float_equal(num(j, "p95FrameTimeMs"), mprof__percentile_sorted(d, N_MARKS - 1, 95), 1e-4);
    assert_float_equal(num(j, "p99FrameTimeMs"), mprof__percentile_sorted(d, N_MARKS - 1, 99), 1e-4);
    assert_float_equal(num(j, "p95FrameTimeMs"), 19.0, 1e-9);
    assert_float_equal(num(j, "meanFrameTimeMs"), 14.5, 1e-9);
    assert_float_equal(num(j, "minFrameTimeMs"), 10.0, 1e-9);
    assert_float_equal(num(j, "maxFrameTimeMs"), 19.0, 1e-9);

    /* Named sets: Render (marks every second frame: 50 frames of 21, 23, ... ms) and the Load
     * range set (10 frames of 2 ms). */
    const cJSON *sets = cJSON_GetObjectItem(j, "frameSets"), *s;
    int seen = 0;
    cJSON_ArrayForEach(s, sets)
    {
        const cJSON *nm = cJSON_GetObjectItem(s, "name");
        if (cJSON_IsNull(nm)) {
            assert_int_equal((int)num(s, "frameCount"), N_MARKS - 1);
            seen |= 1;
        } else if (strcmp(nm->valuestring, "Render") == 0) {
            assert_string_equal(cJSON_GetObjectItem(s, "kind")->valuestring, "mark");
            assert_int_equal((int)num(s, "frameCount"), 50);
            assert_float_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "frameTimesMs"), 0)
                                   ->valuedouble, 21.0, 1e-9);
            seen |= 2;
        } else if (strcmp(nm->valuestring, "Load") == 0) {
            assert_string_equal(cJSON_GetObjectItem(s, "kind")->valuestring, "range");
            assert_int_equal((int)num(s, "frameCount"), 10);
            assert_float_equal(num(s, "p95FrameTimeMs"), 2.0, 1e-9);
            seen |= 4;
        }
    }
    assert_int_equal(seen, 7);

    /* `mprof report` agrees: same frames, same percentile definition. */
    char err[256];
    mprof_analysis *an = mprof_analysis_run(tp("a.mprof"), &(mprof_analysis_opts){0}, err,
                                            sizeof err);
    assert_non_null(an);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mprof_analysis_print_json(an, f);
    fclose(f);
    mprof_analysis_free(an);
    cJSON *rep = cJSON_Parse(buf);
    free(buf);
    assert_non_null(rep);
    const cJSON *fr = cJSON_GetObjectItem(rep, "frames");
    assert_int_equal((int)num(fr, "count"), (int)num(j, "frameCount"));
    assert_float_equal(num(fr, "p50_ms"), num(j, "p50FrameTimeMs"), 1e-4);
    assert_float_equal(num(fr, "p90_ms"), num(j, "p90FrameTimeMs"), 1e-4);
    assert_float_equal(num(fr, "p95_ms"), num(j, "p95FrameTimeMs"), 1e-4);
    assert_float_equal(num(fr, "p99_ms"), num(j, "p99FrameTimeMs"), 1e-4);
    cJSON_Delete(rep);
    cJSON_Delete(j);
}

static void test_zone_split(void **state)
{
    (void)state;
    engine(tp("b.mprof"), 3.0, NULL, "host-a");
    cJSON *j = export_json(tp("b.mprof"), tp("b.json"));
    assert_int_equal((int)num(j, "zoneCount"), 3);
    /* Sorted by self time: Stream 4 ms/frame, then Physics 3, Update 3 (tie broken by name). */
    const cJSON *zs = cJSON_GetObjectItem(j, "zones");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(zs, 0), "name")->valuestring,
                        "Stream");
    const cJSON *upd = find_zone(j, "Update"), *phy = find_zone(j, "Physics"),
                *str = find_zone(j, "Stream");
    assert_int_equal((int)num(upd, "count"), N_MARKS - 1);
    assert_string_equal(cJSON_GetObjectItem(upd, "file")->valuestring, "engine.c");
    assert_int_equal((int)num(upd, "line"), 11);
    assert_float_equal(num(upd, "totalMs"), 6.0 * (N_MARKS - 1), 1e-6);
    assert_float_equal(num(upd, "selfTotalMs"), 3.0 * (N_MARKS - 1), 1e-6);
    assert_float_equal(num(phy, "selfTotalMs"), 3.0 * (N_MARKS - 1), 1e-6);
    const cJSON *us = cJSON_GetObjectItem(upd, "selfPerFrameMs"),
                *ui = cJSON_GetObjectItem(upd, "perFrameMs"),
                *ps = cJSON_GetObjectItem(phy, "selfPerFrameMs"),
                *ss = cJSON_GetObjectItem(str, "selfPerFrameMs");
    assert_int_equal(cJSON_GetArraySize(us), N_MARKS - 1);
    for (int i = 0; i < N_MARKS - 1; i++) {
        assert_float_equal(cJSON_GetArrayItem(us, i)->valuedouble, 3.0, 1e-9);
        assert_float_equal(cJSON_GetArrayItem(ui, i)->valuedouble, 6.0, 1e-9);
        assert_float_equal(cJSON_GetArrayItem(ps, i)->valuedouble, 3.0, 1e-9);
    }
    /* Stream [t+8, t+12) on thread 2: frame 0 (10 ms) keeps 2 ms and passes 2 ms to frame 1;
     * frame 1 (11 ms) keeps 3 ms of its own: 5 ms; frame 2 (12 ms): 1 + 4 = 5 ms; frame 3: 4. */
    assert_float_equal(cJSON_GetArrayItem(ss, 0)->valuedouble, 2.0, 1e-9);
    assert_float_equal(cJSON_GetArrayItem(ss, 1)->valuedouble, 5.0, 1e-9);
    assert_float_equal(cJSON_GetArrayItem(ss, 2)->valuedouble, 5.0, 1e-9);
    assert_float_equal(cJSON_GetArrayItem(ss, 3)->valuedouble, 4.0, 1e-9);
    /* The last frame lasts 19 ms, so every Stream lies within the frames: the per-frame times
     * add up to the total. */
    double sum = 0;
    for (int i = 0; i < N_MARKS - 1; i++)
        sum += cJSON_GetArrayItem(ss, i)->valuedouble;
    assert_float_equal(num(str, "selfTotalMs"), 4.0 * (N_MARKS - 1), 1e-6);
    assert_float_equal(sum, 4.0 * (N_MARKS - 1), 1e-6);
    cJSON_Delete(j);
}

static void test_git_sha_fallback_and_stdout(void **state)
{
    (void)state;
    engine(tp("c.mprof"), 3.0, NULL, "host-a");
    setenv("MPROF_GIT_SHA", "feedbeef", 1);
    cJSON *j = export_json(tp("c.mprof"), tp("c.json"));
    const cJSON *capo = cJSON_GetObjectItem(j, "capture");
    assert_string_equal(cJSON_GetObjectItem(capo, "gitSha")->valuestring, "feedbeef");
    assert_string_equal(cJSON_GetObjectItem(capo, "gitShaSource")->valuestring, "environment");
    cJSON_Delete(j);
    unsetenv("MPROF_GIT_SHA");
    /* Outside a git work tree with no environment: null. */
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(tmpdir), 0);
    setenv("GIT_CEILING_DIRECTORIES", "/tmp", 1);
    j = export_json(tp("c.mprof"), tp("c2.json"));
    unsetenv("GIT_CEILING_DIRECTORIES");
    assert_int_equal(chdir(cwd), 0);
    capo = cJSON_GetObjectItem(j, "capture");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(capo, "gitSha")));
    cJSON_Delete(j);
}

static void test_bad_captures(void **state)
{
    (void)state;
    char err[512] = "";
    assert_int_equal(mprof__export_frames(tp("missing.mprof"), tp("x.json"), err, sizeof err), -1);
    assert_non_null(strstr(err, "missing.mprof"));
    assert_int_equal(access(tp("x.json"), F_OK), -1);
    assert_int_equal(access(tp("x.json.tmp"), F_OK), -1);
    FILE *f = fopen(tp("junk.mprof"), "wb");
    assert_non_null(f);
    fputs("this is not a capture at all, just text", f);
    fclose(f);
    err[0] = 0;
    assert_int_equal(mprof__export_frames(tp("junk.mprof"), tp("x.json"), err, sizeof err), -1);
    assert_true(strlen(err) > 0);
    assert_int_equal(access(tp("x.json"), F_OK), -1);
    /* An output directory that does not exist. */
    engine(tp("d.mprof"), 3.0, NULL, "host-a");
    err[0] = 0;
    assert_int_equal(mprof__export_frames(tp("d.mprof"), tp("no/such/dir/x.json"), err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "cannot create"));

    /* A capture with zones but no frame marks, cut off before its END chunk: an export with no
     * frames and warnings saying why. */
    cap c;
    memset(&c, 0, sizeof c);
    def_loc(&c, 1, "Lonely");
    thread(&c, 1);
    zb(&c, 1 * MS, 1);
    ze(&c, 3 * MS);
    write_capture(tp("e.mprof"), &c, NULL, "host-a", 0);
    cJSON *j = export_json(tp("e.mprof"), tp("e.json"));
    assert_int_equal((int)num(j, "frameCount"), 0);
    assert_float_equal(num(j, "p95FrameTimeMs"), 0.0, 0);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "capture"), "complete")));
    assert_float_equal(num(find_zone(j, "Lonely"), "totalMs"), 2.0, 1e-9);
    assert_null(cJSON_GetObjectItem(find_zone(j, "Lonely"), "perFrameMs"));
    const cJSON *w = cJSON_GetObjectItem(j, "warnings");
    assert_int_equal(cJSON_GetArraySize(w), 2);
    assert_non_null(strstr(cJSON_GetArrayItem(w, 0)->valuestring, "no frames"));
    assert_non_null(strstr(cJSON_GetArrayItem(w, 1)->valuestring, "incomplete"));
    cJSON_Delete(j);
}

/* The temporary file is a fresh one (mkstemp), so a user's "<out>.tmp" survives, and a
 * symlinked output is written through, in place, so the link survives the export. */
static void test_temp_file_and_symlinked_output(void **state)
{
    (void)state;
    engine(tp("t.mprof"), 3.0, NULL, "host-a");
    char out[300];
    snprintf(out, sizeof out, "%s", tp("t.json"));
    char mine[320];
    snprintf(mine, sizeof mine, "%s.tmp", out);
    FILE *f = fopen(mine, "w");
    assert_non_null(f);
    fputs("mine", f);
    fclose(f);
    cJSON *j = export_json(tp("t.mprof"), out);
    assert_true(num(j, "frameCount") > 0);
    cJSON_Delete(j);
    char *s = slurp(mine);
    assert_non_null(s);
    assert_string_equal(s, "mine");
    free(s);

    char target[300], link[300];
    snprintf(target, sizeof target, "%s", tp("t_target.json"));
    snprintf(link, sizeof link, "%s", tp("t_link.json"));
    f = fopen(target, "w");
    assert_non_null(f);
    fputs("old", f);
    fclose(f);
    assert_int_equal(symlink(target, link), 0);
    j = export_json(tp("t.mprof"), link);
    assert_true(num(j, "frameCount") > 0);
    cJSON_Delete(j);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    s = slurp(target);
    assert_non_null(s);
    assert_non_null(strstr(s, "mprof.frames.v1"));
    free(s);
}

/* An output that is the capture itself (or a link to it) is refused: the capture survives. */
static void test_output_is_the_capture(void **state)
{
    (void)state;
    engine(tp("same.mprof"), 3.0, NULL, "host-a");
    struct stat before, after;
    assert_int_equal(stat(tp("same.mprof"), &before), 0);
    char err[512] = "";
    assert_int_equal(mprof__export_frames(tp("same.mprof"), tp("same.mprof"), err, sizeof err), -1);
    assert_non_null(strstr(err, "the capture itself"));
    assert_int_equal(symlink(tp("same.mprof"), tp("same_link.json")), 0);
    err[0] = 0;
    assert_int_equal(mprof__export_frames(tp("same.mprof"), tp("same_link.json"), err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "the capture itself"));
    assert_int_equal(stat(tp("same.mprof"), &after), 0);
    assert_int_equal(after.st_ino, before.st_ino);
    assert_int_equal(after.st_size, before.st_size);
    cJSON *j = export_json(tp("same.mprof"), tp("same_ok.json"));
    assert_true(num(j, "frameCount") > 0);
    cJSON_Delete(j);
}

static void test_export_into_gate(void **state)
{
    (void)state;
    /* Baseline Physics 3 ms; current 5 ms: frames grow by 2 ms (p95 19 -> 21 ms, +10.5 %). */
    engine(tp("base.mprof"), 3.0, "aaaa111", "host-a");
    engine(tp("cur.mprof"), 5.0, "bbbb222", "host-a");
    char err[512];
    assert_int_equal(mprof__export_frames(tp("base.mprof"), tp("base.json"), err, sizeof err), 0);
    assert_int_equal(mprof__export_frames(tp("cur.mprof"), tp("cur.json"), err, sizeof err), 0);
    /* The gate needs two runs per side to call anything significant: each capture is exported
     * twice (the same run twice: the comparison is still exact). */
    assert_int_equal(mkdir(tp("based"), 0755), 0);
    assert_int_equal(mkdir(tp("curd"), 0755), 0);
    assert_int_equal(mprof__export_frames(tp("base.mprof"), tp("based/1.json"), err, sizeof err), 0);
    assert_int_equal(mprof__export_frames(tp("base.mprof"), tp("based/2.json"), err, sizeof err), 0);
    assert_int_equal(mprof__export_frames(tp("cur.mprof"), tp("curd/1.json"), err, sizeof err), 0);
    assert_int_equal(mprof__export_frames(tp("cur.mprof"), tp("curd/2.json"), err, sizeof err), 0);
    mprof_frames_runs *b = mprof__frames_load(tp("based"), 0, err, sizeof err);
    mprof_frames_runs *c = mprof__frames_load(tp("curd"), 0, err, sizeof err);
    assert_non_null(b);
    assert_non_null(c);
    assert_int_equal(b->n_runs, 2);
    assert_string_equal(b->runs[0].hostname, "host-a");
    assert_string_equal(b->runs[0].build_type, "Release");
    mprof_gate_opts o = {.threshold_pct = 5};
    mprof_gate_result *r = mprof__gate_compare(b, c, &o, err, sizeof err);
    assert_non_null(r);
    if (r->verdict != MPROF_GATE_REGRESSION)
        fail_msg("verdict %d: %s", (int)r->verdict, r->reason);
    assert_string_equal(r->zones[0].name, "Physics");
    assert_float_equal(r->zones[0].delta_ms, 2.0, 1e-9);
    assert_float_equal(r->zones[0].delta_pct, 100.0 * (5.0 / 3.0 - 1.0), 1e-6);
    /* Update's self time is unchanged; its inclusive time grew with Physics. */
    for (size_t i = 0; i < r->n_zones; i++)
        if (strcmp(r->zones[i].name, "Update") == 0) {
            assert_float_equal(r->zones[i].delta_ms, 0.0, 1e-9);
            assert_float_equal(r->zones[i].cur_incl_ms - r->zones[i].base_incl_ms, 2.0, 1e-9);
        }
    assert_string_equal(r->base_git_sha, "aaaa111");
    assert_string_equal(r->cur_git_sha, "bbbb222");
    mprof__gate_result_free(r);
    /* The same capture on both sides passes. */
    mprof_frames_runs *b2 = mprof__frames_load(tp("base.json"), 0, err, sizeof err);
    r = mprof__gate_compare(b, b2, NULL, err, sizeof err);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    assert_float_equal(r->p95_ratio, 1.0, 0);
    mprof__gate_result_free(r);
    mprof__frames_runs_free(b);
    mprof__frames_runs_free(b2);
    mprof__frames_runs_free(c);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mprof_test_fexp_XXXXXX");
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
        cmocka_unit_test(test_frames_and_summary),
        cmocka_unit_test(test_zone_split),
        cmocka_unit_test(test_git_sha_fallback_and_stdout),
        cmocka_unit_test(test_bad_captures),
        cmocka_unit_test(test_export_into_gate),
        cmocka_unit_test(test_output_is_the_capture),
        cmocka_unit_test(test_temp_file_and_symlinked_output),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
