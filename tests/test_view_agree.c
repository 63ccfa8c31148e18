/*
 * test_view_agree.c - the served viewer says what `mprof report` says, and its index cannot lie.
 *
 * Agreement, through the real programs: the sample engine, view_demo with a recursion 72 levels
 * deep, and stats_workload (direct and mutual recursion on two threads) are recorded; for each,
 * every zone's count, total, self, min, max, p50, p95 and time in frames from `mprof report
 * --json` equals the served /api/stats of the whole capture (from the build's figures, and again
 * from the levels, the path a range takes), and the frame count, p50, p95 and max equal
 * /api/frames'. Random ranges and a frame set's section are checked against the CSV statistics'
 * code (zstats, which streams the same rule another way) and against their frames' sum.
 *
 * The index: bit flips anywhere, a cut, a header or a whole index from another capture, and a
 * capture replaced by one of the same size and time are each rebuilt, never served (the answers
 * equal a fresh index's); a file cut under a running server makes its answer an error and the
 * server lives on; a build killed halfway leaves a temporary file the next run removes; the cache
 * folder is used and capped; the index of tiny zones and of a deep recursion is at most 16 bytes a
 * zone. Two captures served together pair their zones as `mprof diff` does.
 */
#define _POSIX_C_SOURCE 200809L
#include "analysis/zstats.h"
#include "view/index.h"
#include "view/index_cache.h"
#include "test_util.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char out[1 << 20];

/* ---- helpers ---------------------------------------------------------------------------------- */

static const char *demo(void)
{
    const char *d = getenv("MPROF_VIEW_DEMO");
    return d ? d : "tests/view_demo";
}

static void run_ok(const char *cmd)
{
    if (tu_run(cmd, out, sizeof out) != 0)
        fail_msg("'%s' failed: %.400s", cmd, out);
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

static cJSON *report(const char *cap)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s report --json %s", tu_mprof_bin(), cap);
    run_ok(cmd);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    return j;
}

/* The answer to target from an index in this process, as JSON (caller deletes). */
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

static char *ask_text(const mprof_vindex *x, const char *target)
{
    mprof_vquery q;
    char err[256];
    assert_int_equal(mprof__vquery_parse(target, strlen(target), &q, err, sizeof err), 0);
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    if (mprof__vindex_answer(x, &q, m, err, sizeof err) != 0)
        fail_msg("%s: %s", target, err);
    fclose(m);
    return buf;
}

/* ---- the real server ---------------------------------------------------------------------------- */

typedef struct server {
    pid_t pid;
    int port;
    FILE *in;
} server;

/* Servers still running: a failed check longjmps past stop(), and a server left behind would
 * keep the test's output open (ctest waits for it); the group's teardown stops them. */
static pid_t running[8];

/* Starts `mprof view --serve` with argv's captures and options; waits for its URL. */
static server serve(const char *const *argv)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    server s = {0};
    s.pid = fork();
    assert_true(s.pid >= 0);
    if (s.pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        const char *args[16];
        int n = 0;
        args[n++] = tu_mprof_bin();
        args[n++] = "view";
        args[n++] = "--serve";
        args[n++] = "--port";
        args[n++] = "0";
        for (int i = 0; argv[i] && n < 15; i++)
            args[n++] = argv[i];
        args[n] = NULL;
        execv(args[0], (char *const *)args);
        _exit(127);
    }
    close(fds[1]);
    for (int i = 0; i < 8; i++)
        if (!running[i]) {
            running[i] = s.pid;
            break;
        }
    s.in = fdopen(fds[0], "r");
    char line[256] = "";
    assert_non_null(fgets(line, sizeof line, s.in));
    assert_int_equal(sscanf(line, "http://127.0.0.1:%d/", &s.port), 1);
    return s;
}

static void stop(server *s)
{
    for (int i = 0; i < 8; i++)
        if (running[i] == s->pid)
            running[i] = 0;
    kill(s->pid, SIGTERM);
    int st;
    assert_int_equal(waitpid(s->pid, &st, 0), s->pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    fclose(s->in);
}

/* GET target; the status code, the body in *body (a static buffer). */
static int get(const server *s, const char *target, const char **body)
{
    static char resp[1 << 22];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[600];
    snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", target);
    assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    size_t got = 0;
    ssize_t k;
    while (got + 1 < sizeof resp && (k = read(fd, resp + got, sizeof resp - 1 - got)) > 0)
        got += (size_t)k;
    resp[got] = 0;
    close(fd);
    int code = 0;
    assert_int_equal(sscanf(resp, "HTTP/1.%*d %d", &code), 1);
    const char *b = strstr(resp, "\r\n\r\n");
    *body = b ? b + 4 : "";
    return code;
}

static cJSON *get_json(const server *s, const char *target)
{
    const char *body;
    int code = get(s, target, &body);
    if (code != 200)
        fail_msg("%s: HTTP %d: %.300s", target, code, body);
    cJSON *j = cJSON_Parse(body);
    if (!j)
        fail_msg("%s: not JSON", target);
    return j;
}

/* ---- report == served ------------------------------------------------------------------------ */

static const cJSON *row_of(const cJSON *rows, int slot)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, rows) if ((int)at(r, 0) == slot) return r;
    return NULL;
}

/* Every zone of the report in rows (and nothing else), figure for figure. */
static void zones_agree(const char *what, const cJSON *rep, const cJSON *rows)
{
    const cJSON *zones = cJSON_GetObjectItemCaseSensitive(rep, "zones"), *z;
    int n = 0;
    cJSON_ArrayForEach(z, zones) {
        int slot = (int)num(z, "id") + 2;
        const cJSON *r = row_of(rows, slot);
        const char *name = cJSON_GetObjectItemCaseSensitive(z, "name")->valuestring;
        if (!r)
            fail_msg("%s: zone %s of the report is not served", what, name);
        struct { const char *key; int col; } f[] = {{"count", 1}, {"total_ns", 2}, {"self_ns", 3}, {"min_ns", 4},
                                                      {"max_ns", 5}, {"p50_ns", 7}, {"p95_ns", 8}, {"in_frames_ns", 9}};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
            if (num(z, f[k].key) != at(r, f[k].col))
                fail_msg("%s: %s %s: report %.0f, served %.0f", what, name, f[k].key, num(z, f[k].key), at(r, f[k].col));
        if (fabs(num(z, "mean_ns") - at(r, 6)) > 1) /* the report truncates, the server rounds */
            fail_msg("%s: %s mean: report %.0f, served %.0f", what, name, num(z, "mean_ns"), at(r, 6));
        n++;
    }
    assert_true(n > 0);
    assert_int_equal(cJSON_GetArraySize(rows), n);
}

/* Every async track of the report in the served async_tracks (by the track's id in meta),
 * figure for figure; returns the tracks with completed spans. */
static int async_agree(const char *what, const cJSON *rep, const cJSON *meta, const cJSON *st)
{
    const cJSON *a, *t, *rows = cJSON_GetObjectItemCaseSensitive(st, "async_tracks");
    int n = 0;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(rep, "async")) {
        const char *name = cJSON_GetObjectItemCaseSensitive(a, "track")->valuestring;
        int id = -1;
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(meta, "tracks"))
            if (strcmp(cJSON_GetObjectItemCaseSensitive(t, "kind")->valuestring, "async") == 0 &&
                strcmp(cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring, name) == 0)
                id = (int)num(t, "id");
        if (id < 0)
            fail_msg("%s: async track %s of the report has no served track", what, name);
        const cJSON *r = row_of(rows, id);
        if (!num(a, "count")) {
            assert_null(r);
            continue;
        }
        if (!r)
            fail_msg("%s: async track %s of the report has no statistics row", what, name);
        struct { const char *key; int col; } f[] = {{"count", 1}, {"total_ns", 2}, {"max_ns", 5}, {"p50_ns", 7}, {"p95_ns", 8}};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
            if (num(a, f[k].key) != at(r, f[k].col))
                fail_msg("%s: async %s %s: report %.0f, served %.0f", what, name, f[k].key, num(a, f[k].key), at(r, f[k].col));
        n++;
    }
    assert_int_equal(cJSON_GetArraySize(rows), n);
    return n;
}

/* The report writes frame times in ms with 6 significant digits: equal up to that rounding. */
static void close_ns(const char *what, double report_ms, double served_ns)
{
    double a = report_ms * 1e6;
    if (fabs(a - served_ns) > 5e-6 * fabs(served_ns) + 1)
        fail_msg("%s: report %.3f ns, served %.3f ns", what, a, served_ns);
}

/* The served figures of cap (and of extra options) against its report; with async, cap has
 * async spans. */
static void check_capture(const char *what, const char *cap, int async)
{
    cJSON *rep = report(cap);
    char idx[600];
    snprintf(idx, sizeof idx, "%s.agree.vidx", cap);
    const char *argv[] = {cap, "--index", idx, NULL};
    server s = serve(argv);
    cJSON *meta = get_json(&s, "/api/meta");
    long long t0 = (long long)num(meta, "start_ns"), t1 = (long long)num(meta, "end_ns");
    char q[300];
    snprintf(q, sizeof q, "/api/stats?t0=%lld&t1=%lld", t0, t1 + 1);
    cJSON *st = get_json(&s, q);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "whole")));
    zones_agree(what, rep, cJSON_GetObjectItemCaseSensitive(st, "rows"));
    int n_async = async_agree(what, rep, meta, st);
    if (async)
        assert_true(n_async > 0);
    /* The same from the levels (a range that ends at the last zone's end is not "whole"): the
     * recursion rule of a range over the whole capture is the report's. */
    snprintf(q, sizeof q, "/api/stats?t0=%lld&t1=%lld", (long long)num(meta, "zones_start_ns"),
             (long long)num(meta, "zones_end_ns"));
    cJSON *sc = get_json(&s, q);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sc, "whole")));
    zones_agree(what, rep, cJSON_GetObjectItemCaseSensitive(sc, "rows"));
    assert_int_equal((long long)num(sc, "zones"), (long long)num(st, "zones"));
    /* Frames. */
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(rep, "frames");
    cJSON *f = get_json(&s, "/api/frames?w=1");
    assert_int_equal((long long)num(f, "complete"), (long long)num(fr, "count"));
    assert_int_equal((long long)num(f, "incomplete"), (long long)num(fr, "incomplete"));
    close_ns("p50", num(fr, "p50_ms"), num(f, "p50"));
    close_ns("p95", num(fr, "p95_ms"), num(f, "p95"));
    close_ns("p99", num(fr, "p99_ms"), num(f, "p99"));
    close_ns("max", num(fr, "max_ms"), num(f, "max"));
    close_ns("mean", num(fr, "mean_ms"), num(f, "mean"));
    /* The frame-time distribution holds every complete frame. */
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(f, "hist");
    double inh = 0;
    for (int i = 2; i < cJSON_GetArraySize(h); i += 3)
        inh += at(h, i);
    assert_int_equal((long long)inh, (long long)num(fr, "count"));
    cJSON_Delete(f);
    cJSON_Delete(sc);
    cJSON_Delete(st);
    cJSON_Delete(meta);
    cJSON_Delete(rep);
    stop(&s);
    unlink(idx);
}

static void test_engine_agrees(void **state)
{
    (void)state;
    const char *engine = getenv("MPROF_ENGINE");
    if (!engine || access(engine, X_OK) != 0)
        skip();
    const char *cap = tu_temp_path("agree_engine.mprof");
    char cmd[1200];
    int frames = tu_scale() < 1 ? 30 : 120;
    snprintf(cmd, sizeof cmd, "%s --frames %d --capture %s --quiet --renderer cpu 2>&1", engine, frames, cap);
    run_ok(cmd);
    check_capture("engine", cap, 1); /* it streams assets with async spans */
}

static void test_recursion_agrees(void **state)
{
    (void)state;
    const char *cap = tu_temp_path("agree_deep.mprof");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s %s 40 20 deep=72 2>&1", demo(), cap);
    run_ok(cmd);
    check_capture("view_demo deep=72", cap, 0);
    const char *wl = getenv("MPROF_STATS_WORKLOAD");
    if (!wl || access(wl, X_OK) != 0)
        return;
    const char *cap2 = tu_temp_path("agree_workload.mprof");
    snprintf(cmd, sizeof cmd, "%s %s --frames 30 2>&1", wl, cap2);
    run_ok(cmd);
    check_capture("stats_workload", cap2, 0);
}

/* Ranges: the index's rule (ancestors at the edges) against zstats' (nested calls waiting for
 * their ancestor), on the deep recursion; and a section is the sum of its frames. */
static void test_ranges_and_sections(void **state)
{
    (void)state;
    const char *cap = tu_temp_path("ranges.mprof");
    char cmd[1200], err[512], q[300];
    snprintf(cmd, sizeof cmd, "%s %s 30 10 deep=40 2>&1", demo(), cap);
    run_ok(cmd);
    char idx[600];
    snprintf(idx, sizeof idx, "%s.vidx", cap);
    mprof_vindex *x = mprof__vindex_open(cap, idx, NULL, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    cJSON *meta = ask(x, "/api/meta");
    int64_t t0 = (int64_t)num(meta, "start_ns"), t1 = (int64_t)num(meta, "end_ns");
    uint64_t rnd = 88172645463325252ull;
    int nested_checked = 0;
    for (int k = 0; k < 24; k++) {
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        int64_t a = t0 + (int64_t)(rnd % (uint64_t)(t1 - t0));
        int64_t b = a + 1 + (int64_t)((rnd >> 20) % (uint64_t)(t1 - a));
        mprof_export_range r = {.first_frame = -1, .t0_ns = a, .t1_ns = b, .active = 1};
        mprof_zstats zs;
        assert_int_equal(mprof__zstats_collect_range(cap, &r, &zs, err, sizeof err), 0);
        snprintf(q, sizeof q, "/api/stats?t0=%lld&t1=%lld", (long long)a, (long long)b);
        cJSON *st = ask(x, q);
        const cJSON *rows = cJSON_GetObjectItemCaseSensitive(st, "rows");
        int n = 0;
        for (uint32_t i = 0; i < zs.n; i++) {
            const mprof_site_stat *s = &zs.z[i].site;
            if (!s->count)
                continue;
            const cJSON *row = row_of(rows, (int)i + 2);
            if (!row)
                fail_msg("range %d: %s is not served", k, zs.z[i].name);
            if (at(row, 1) != (double)s->count || at(row, 2) != (double)s->total_ns || at(row, 3) != (double)s->self_ns ||
                at(row, 9) != (double)s->in_frames_ns)
                fail_msg("range [%lld, %lld) %s: zstats %llu %lld %lld, served %.0f %.0f %.0f", (long long)a, (long long)b,
                         zs.z[i].name, (unsigned long long)s->count, (long long)s->total_ns, (long long)s->self_ns,
                         at(row, 1), at(row, 2), at(row, 3));
            nested_checked += strcmp(zs.z[i].name, "Recurse") == 0 && s->count > 1;
            n++;
        }
        assert_int_equal(cJSON_GetArraySize(rows), n);
        cJSON_Delete(st);
        mprof__zstats_free(&zs);
    }
    assert_true(nested_checked > 3);
    /* A section: the Physics frames (frame set 1) add up frame by frame. */
    const cJSON *sets = cJSON_GetObjectItemCaseSensitive(meta, "frame_sets");
    assert_true(cJSON_GetArraySize(sets) >= 2);
    snprintf(q, sizeof q, "/api/stats?t0=%lld&t1=%lld&set=1", (long long)t0 - 1, (long long)t1 + 1);
    cJSON *sec = ask(x, q);
    snprintf(q, sizeof q, "/api/frames?w=100000&set=1");
    cJSON *fr = ask(x, "/api/frames?w=16384&set=1");
    const cJSON *fa = cJSON_GetObjectItemCaseSensitive(fr, "f");
    double count = 0, total = 0;
    for (int i = 0; i + 2 < cJSON_GetArraySize(fa); i += 3) {
        snprintf(q, sizeof q, "/api/stats?t0=%lld&t1=%lld", (long long)at(fa, i + 1), (long long)(at(fa, i + 1) + at(fa, i + 2)));
        cJSON *one = ask(x, q);
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(one, "rows")) {
            count += at(r, 1);
            total += at(r, 2);
        }
        cJSON_Delete(one);
    }
    double scount = 0, stotal = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(sec, "rows")) {
        scount += at(r, 1);
        stotal += at(r, 2);
    }
    assert_true(cJSON_GetArraySize(fa) / 3 == (int)num(fr, "count"));
    assert_true(scount == count && stotal == total);
    assert_int_equal((long long)num(sec, "frames") >= 0, 1);
    /* Find zone over a range: its histogram and its instances count the same zones. */
    int slot = -1;
    const cJSON *ls;
    cJSON_ArrayForEach(ls, cJSON_GetObjectItemCaseSensitive(meta, "loc_stats")) {
        const cJSON *nm = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(meta, "srclocs"),
                                                                (int)at(ls, 0)), 0);
        if (strcmp(nm->valuestring, "Recurse") == 0)
            slot = (int)at(ls, 0);
    }
    assert_true(slot >= 0);
    /* From a third of the capture to its middle, or to the end of the first instance that begins
     * after the third: on a loaded machine the workload may leave that stretch without a call. */
    int64_t a = t0 + (t1 - t0) / 3, b = t0 + (t1 - t0) / 2;
    snprintf(q, sizeof q, "/api/instances?loc=%d&t0=%lld&t1=%lld&limit=1", slot, (long long)a, (long long)t1);
    cJSON *after = ask(x, q);
    const cJSON *first = cJSON_GetObjectItemCaseSensitive(after, "i");
    assert_true(cJSON_GetArraySize(first) >= 2);
    if (at(first, 1) > (double)b)
        b = (int64_t)at(first, 1);
    cJSON_Delete(after);
    snprintf(q, sizeof q, "/api/hist?loc=%d&t0=%lld&t1=%lld", slot, (long long)a, (long long)b);
    cJSON *h = ask(x, q);
    snprintf(q, sizeof q, "/api/instances?loc=%d&t0=%lld&t1=%lld&limit=10000", slot, (long long)a, (long long)b);
    cJSON *in = ask(x, q);
    assert_true(num(h, "count") > 0);
    assert_true(num(in, "matched") == num(h, "count"));
    const cJSON *ia = cJSON_GetObjectItemCaseSensitive(in, "i");
    for (int i = 0; i + 3 < cJSON_GetArraySize(ia); i += 4)
        assert_true(at(ia, i) >= (double)a && at(ia, i + 1) <= (double)b);
    cJSON_Delete(h);
    cJSON_Delete(in);
    cJSON_Delete(fr);
    cJSON_Delete(sec);
    cJSON_Delete(meta);
    mprof__vindex_close(x);
    unlink(idx);
}

/* ---- the index cannot lie --------------------------------------------------------------------- */

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long l = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)l + 1);
    assert_int_equal(fread(p, 1, (size_t)l, f), (size_t)l);
    fclose(f);
    *n = (size_t)l;
    return p;
}

static void spit(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* The answers that must not change, as one string. */
static char *answers(const mprof_vindex *x)
{
    cJSON *meta = ask(x, "/api/meta");
    long long t0 = (long long)num(meta, "start_ns"), t1 = (long long)num(meta, "end_ns") + 1;
    cJSON_Delete(meta);
    const char *fmt[] = {"/api/meta", "/api/zones?t0=%lld&t1=%lld&w=700", "/api/zones?t0=%lld&t1=%lld&w=16384",
                         "/api/stats?t0=%lld&t1=%lld", "/api/frames?w=500", "/api/messages?t0=%lld&t1=%lld",
                         "/api/plots?t0=%lld&t1=%lld&w=300", "/api/system"};
    size_t len = 0;
    char *all = NULL;
    FILE *m = open_memstream(&all, &len);
    for (size_t i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
        char q[200];
        snprintf(q, sizeof q, fmt[i], t0, t1);
        char *a = ask_text(x, q);
        fputs(a, m);
        free(a);
    }
    fclose(m);
    return all;
}

static void test_damaged_index_rebuilt(void **state)
{
    (void)state;
    const char *cap = tu_temp_path("damage.mprof"), *cap2 = tu_temp_path("damage2.mprof");
    char cmd[1200], err[512], idx[600], idx2[600];
    snprintf(cmd, sizeof cmd, "%s %s 20 30 2>&1", demo(), cap);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "%s %s 25 30 2>&1", demo(), cap2);
    run_ok(cmd);
    snprintf(idx, sizeof idx, "%s.vidx", cap);
    snprintf(idx2, sizeof idx2, "%s.vidx", cap2);
    int built = 0;
    mprof_vindex *x = mprof__vindex_open(cap, idx, &built, err, sizeof err);
    assert_non_null(x);
    assert_int_equal(built, 1);
    char *ref = answers(x);
    mprof__vindex_close(x);
    mprof__vindex_close(mprof__vindex_open(cap2, idx2, NULL, err, sizeof err));
    size_t n, n2;
    char *good = slurp(idx, &n), *other = slurp(idx2, &n2);
    uint64_t rnd = 0x9e3779b97f4a7c15ull;
    int flips = tu_scale() < 1 ? 20 : 60;
    for (int k = 0; k < flips + 3; k++) {
        char *bad = malloc(n);
        memcpy(bad, good, n);
        size_t len = n;
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        if (k < flips) /* one bit anywhere: header, blocks, directory, metadata, system section */
            bad[rnd % n] ^= (char)(1u << (rnd >> 40) % 8);
        else if (k == flips) /* cut */
            len = (size_t)(rnd % n);
        else if (k == flips + 1) /* the header of another capture's index */
            memcpy(bad, other, 256 < n2 ? 256 : n2);
        else { /* another capture's whole index */
            free(bad);
            bad = malloc(n2);
            memcpy(bad, other, n2);
            len = n2;
        }
        spit(idx, bad, len);
        free(bad);
        x = mprof__vindex_open(cap, idx, &built, err, sizeof err);
        if (!x)
            fail_msg("case %d: %s", k, err);
        if (!built)
            fail_msg("case %d: a damaged index was served", k);
        char *got = answers(x);
        assert_string_equal(got, ref);
        free(got);
        mprof__vindex_close(x);
    }
    /* A capture replaced by another of the same size and modification time: the fingerprint of
     * its first and last bytes tells them apart. */
    tu_cap c = {0};
    tu_cap_thread(&c, 1);
    tu_cap_loc(&c, 1, "Alpha", "a", "/a.c", 1);
    tu_cap_zone(&c, 1000, 5000, 1);
    tu_cap_mark(&c, 1000, 0);
    tu_cap_mark(&c, 9000, 0);
    const char *syn = tu_temp_path("same_size.mprof");
    assert_int_equal(tu_cap_write(&c, syn), 0);
    char sidx[600];
    snprintf(sidx, sizeof sidx, "%s.vidx", syn);
    mprof__vindex_close(mprof__vindex_open(syn, sidx, NULL, err, sizeof err));
    struct stat st0;
    assert_int_equal(stat(syn, &st0), 0);
    tu_cap_thread(&c, 1);
    tu_cap_loc(&c, 1, "Omega", "o", "/o.c", 1); /* same lengths: same size */
    tu_cap_zone(&c, 1000, 6000, 1);
    tu_cap_mark(&c, 1000, 0);
    tu_cap_mark(&c, 9000, 0);
    assert_int_equal(tu_cap_write(&c, syn), 0);
    struct stat st1;
    assert_int_equal(stat(syn, &st1), 0);
    assert_int_equal(st1.st_size, st0.st_size);
    struct timespec ts[2] = {st0.st_atim, st0.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, syn, ts, 0), 0);
    x = mprof__vindex_open(syn, sidx, &built, err, sizeof err);
    assert_non_null(x);
    assert_int_equal(built, 1);
    cJSON *meta = ask(x, "/api/meta");
    const cJSON *loc = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(meta, "srclocs"), 3);
    assert_string_equal(cJSON_GetArrayItem(loc, 0)->valuestring, "Omega");
    cJSON_Delete(meta);
    mprof__vindex_close(x);
    free(ref);
    free(good);
    free(other);
}

/* A file cut or rewritten under a running server: the answers that need it fail, the server
 * goes on (a mapped file would have killed it with SIGBUS). */
static void test_index_changed_under_server(void **state)
{
    (void)state;
    const char *cap = tu_temp_path("under.mprof");
    char cmd[1200], idx[600];
    snprintf(cmd, sizeof cmd, "%s %s 40 200 2>&1", demo(), cap);
    run_ok(cmd);
    snprintf(idx, sizeof idx, "%s.vidx", cap);
    const char *argv[] = {cap, "--index", idx, NULL};
    server s = serve(argv);
    cJSON *meta = get_json(&s, "/api/meta");
    long long t0 = (long long)num(meta, "start_ns"), t1 = (long long)num(meta, "end_ns") + 1;
    cJSON_Delete(meta);
    char q[200];
    snprintf(q, sizeof q, "/api/zones?t0=%lld&t1=%lld&w=16384&lod=0", t0, t1);
    const char *body;
    assert_int_equal(get(&s, q, &body), 200);
    assert_int_equal(truncate(idx, 600), 0);
    assert_int_equal(get(&s, q, &body), 400);
    assert_non_null(strstr(body, "changed under the server"));
    /* Rewritten in place with other bytes. */
    size_t n;
    char *junk = slurp(cap, &n);
    int fd = open(idx, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, junk, n), (ssize_t)n);
    close(fd);
    free(junk);
    assert_int_equal(get(&s, q, &body), 400);
    assert_int_equal(get(&s, "/api/meta", &body), 200); /* held in memory since the start */
    stop(&s);
    /* The next start rebuilds it. */
    char err[512];
    int built = 0;
    mprof_vindex *x = mprof__vindex_open(cap, idx, &built, err, sizeof err);
    assert_non_null(x);
    assert_int_equal(built, 1);
    mprof__vindex_close(x);
}

static int count_temps(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".build-") != NULL;
    closedir(d);
    return n;
}

/* A build killed halfway leaves its temporary file, locked no more: the next run removes it; one
 * whose builder still runs (still locked) is left alone. */
static void test_killed_build_swept(void **state)
{
    (void)state;
    char dir[512], cap[600], idx[700], cmd[1400];
    snprintf(dir, sizeof dir, "%s", tu_temp_path("sweep"));
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(cap, sizeof cap, "%s/big.mprof", dir);
    snprintf(idx, sizeof idx, "%s/big.vidx", dir);
    int tiny = tu_scale() < 1 ? 1500 : 4000;
    snprintf(cmd, sizeof cmd, "%s %s 300 %d 2>&1", demo(), cap, tiny);
    run_ok(cmd);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        execl(tu_mprof_bin(), tu_mprof_bin(), "view", "--serve", cap, "--port", "0", "--index", idx, (char *)NULL);
        _exit(127);
    }
    int seen = 0;
    for (int i = 0; i < 20000 && !seen; i++) {
        seen = count_temps(dir) > 0;
        if (!seen)
            usleep(500);
    }
    usleep(20000); /* into the build */
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    if (!seen || access(idx, F_OK) == 0)
        skip(); /* the build finished before the kill: nothing to sweep on this machine */
    assert_int_equal(count_temps(dir), 1);
    /* A temporary file of a build that still runs: locked by this process. */
    char live[800];
    snprintf(live, sizeof live, "%s/other.vidx.build-abcdef", dir);
    int lfd = open(live, O_CREAT | O_WRONLY, 0600);
    assert_true(lfd >= 0);
    assert_int_equal(flock(lfd, LOCK_EX), 0);
    char err[512];
    mprof_vindex *x = mprof__vindex_open(cap, idx, NULL, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    mprof__vindex_close(x);
    assert_int_equal(count_temps(dir), 1); /* only the live one */
    assert_int_equal(access(live, F_OK), 0);
    close(lfd);
    assert_int_equal(mprof__vcache_sweep(dir), 1);
    assert_int_equal(count_temps(dir), 0);
}

/* The default index lives in the cache folder, named after the capture; the folder is capped and
 * the least recently used go first. */
static void test_cache_folder(void **state)
{
    (void)state;
    char home[512], path[1200], err[512];
    snprintf(home, sizeof home, "%s", tu_temp_path("xdg"));
    assert_int_equal(mkdir(home, 0700), 0);
    setenv("XDG_CACHE_HOME", home, 1);
    const char *cap = tu_temp_path("cached.mprof");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s %s 10 10 2>&1", demo(), cap);
    run_ok(cmd);
    assert_int_equal(mprof__vcache_path(cap, path, sizeof path, err, sizeof err), 0);
    assert_true(strncmp(path, home, strlen(home)) == 0);
    char want[700];
    snprintf(want, sizeof want, "/mprof/%s-", strrchr(cap, '/') + 1);
    assert_non_null(strstr(path, want));
    /* Two old indexes of 600 KiB each and a cap of 1 MiB: the older goes. */
    char old1[1300], old2[1300];
    snprintf(old1, sizeof old1, "%s/mprof/old1-0000000000000001.vidx", home);
    snprintf(old2, sizeof old2, "%s/mprof/old2-0000000000000002.vidx", home);
    static char blob[600 * 1024];
    spit(old1, blob, sizeof blob);
    spit(old2, blob, sizeof blob);
    struct timespec t1[2] = {{1000, 0}, {1000, 0}}, t2[2] = {{2000, 0}, {2000, 0}};
    assert_int_equal(utimensat(AT_FDCWD, old1, t1, 0), 0);
    assert_int_equal(utimensat(AT_FDCWD, old2, t2, 0), 0);
    setenv("MPROF_VIEW_CACHE_MB", "1", 1);
    int built = 0;
    mprof_vindex *x = mprof__vindex_open(cap, NULL, &built, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    assert_int_equal(built, 1);
    assert_string_equal(mprof__vindex_path(x), path);
    mprof__vindex_close(x);
    assert_int_equal(access(path, F_OK), 0);
    assert_int_equal(access(old1, F_OK), -1); /* the least recently used */
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    if ((uint64_t)sb.st_size + sizeof blob <= (1u << 20))
        assert_int_equal(access(old2, F_OK), 0); /* the rest fits */
    x = mprof__vindex_open(cap, NULL, &built, err, sizeof err);
    assert_non_null(x);
    assert_int_equal(built, 0); /* reused */
    mprof__vindex_close(x);
    unsetenv("MPROF_VIEW_CACHE_MB");
}

/* At most 16 bytes a zone: tiny zones, and a deep recursion. */
static void test_bytes_per_zone(void **state)
{
    (void)state;
    const char *caps[2] = {tu_temp_path("tiny.mprof"), tu_temp_path("deep.mprof")};
    const char *args[2] = {"60 3000", "150 10 deep=72"};
    for (int i = 0; i < 2; i++) {
        char cmd[1200], idx[600], err[512];
        snprintf(cmd, sizeof cmd, "%s %s %s 2>&1", demo(), caps[i], args[i]);
        run_ok(cmd);
        snprintf(idx, sizeof idx, "%s.vidx", caps[i]);
        mprof_vindex *x = mprof__vindex_open(caps[i], idx, NULL, err, sizeof err);
        assert_non_null(x);
        double zn = (double)mprof__vindex_zone_count(x);
        double per = (double)mprof__vindex_size_bytes(x) / zn;
        mprof_vindex_parts p;
        mprof__vindex_parts(x, &p);
        /* What is the zones' own: the file without view_demo's frame images, plots, messages and
         * system section (a few zones a frame beside a picture a frame). */
        double own = (double)(mprof__vindex_size_bytes(x) - p.images - p.plots - p.messages - p.system) / zn;
        printf("# %s: %.2f bytes a zone in all, %.2f of zone data (zones %.2f, tiers %.2f), %.0f zones\n", args[i], per,
               own, (double)p.zones / zn, (double)p.tiers / zn, zn);
        assert_true(own <= 16.0);
        if (i == 0)
            assert_true(per <= 16.0);
        mprof__vindex_close(x);
        unlink(idx);
    }
}

/* Two captures: zones paired by the rule of `mprof diff`, each side's figures from its own index. */
static void test_compare_pairs(void **state)
{
    (void)state;
    const char *a = tu_temp_path("cmp_a.mprof"), *b = tu_temp_path("cmp_b.mprof");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s %s 20 10 2>&1", demo(), a);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "%s %s 20 10 slow 2>&1", demo(), b);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "%s diff --json --top 0 %s %s", tu_mprof_bin(), a, b);
    run_ok(cmd);
    cJSON *diff = cJSON_Parse(out);
    assert_non_null(diff);
    const char *argv[] = {a, b, NULL};
    server s = serve(argv);
    cJSON *pairs = get_json(&s, "/api/pairs");
    cJSON *ma = get_json(&s, "/api/meta"), *mb = get_json(&s, "/api/meta?c=1");
    cJSON *sa = get_json(&s, "/api/stats?t0=-1000000000&t1=100000000000");
    cJSON *sb = get_json(&s, "/api/stats?t0=-1000000000&t1=100000000000&c=1");
    const cJSON *z;
    int both = 0;
    cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(diff, "zones")) {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(z, "status")->valuestring, "both") != 0)
            continue;
        const char *name = cJSON_GetObjectItemCaseSensitive(z, "name")->valuestring;
        /* The served pair of this name, and each side's total. */
        const cJSON *p;
        int found = 0;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(pairs, "pairs")) {
            const cJSON *la = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ma, "srclocs"), (int)at(p, 0));
            const cJSON *lb = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(mb, "srclocs"), (int)at(p, 1));
            if (strcmp(cJSON_GetArrayItem(la, 0)->valuestring, name) != 0)
                continue;
            assert_string_equal(cJSON_GetArrayItem(lb, 0)->valuestring, name);
            const cJSON *ra = row_of(cJSON_GetObjectItemCaseSensitive(sa, "rows"), (int)at(p, 0));
            const cJSON *rb = row_of(cJSON_GetObjectItemCaseSensitive(sb, "rows"), (int)at(p, 1));
            assert_non_null(ra);
            assert_non_null(rb);
            assert_true(at(ra, 2) == num(z, "a_total_ns"));
            assert_true(at(rb, 2) == num(z, "b_total_ns"));
            found = 1;
        }
        assert_true(found);
        both++;
    }
    assert_true(both >= 8);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(pairs, "only_a")), 0);
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(pairs, "sets")) >= 2);
    const char *body;
    assert_int_equal(get(&s, "/api/frames?w=10&c=1", &body), 200);
    cJSON_Delete(pairs);
    cJSON_Delete(ma);
    cJSON_Delete(mb);
    cJSON_Delete(sa);
    cJSON_Delete(sb);
    stop(&s);
    /* One capture served: no comparison. */
    const char *one[] = {a, NULL};
    s = serve(one);
    assert_int_equal(get(&s, "/api/pairs", &body), 400);
    assert_non_null(strstr(body, "comparison needs two"));
    assert_int_equal(get(&s, "/api/meta?c=1", &body), 400);
    stop(&s);
    cJSON_Delete(diff);
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 8; i++)
        if (running[i]) {
            kill(running[i], SIGKILL);
            waitpid(running[i], NULL, 0);
            running[i] = 0;
        }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_engine_agrees, teardown),
        cmocka_unit_test_teardown(test_recursion_agrees, teardown),
        cmocka_unit_test_teardown(test_ranges_and_sections, teardown),
        cmocka_unit_test_teardown(test_damaged_index_rebuilt, teardown),
        cmocka_unit_test_teardown(test_index_changed_under_server, teardown),
        cmocka_unit_test_teardown(test_killed_build_swept, teardown),
        cmocka_unit_test_teardown(test_cache_folder, teardown),
        cmocka_unit_test_teardown(test_bytes_per_zone, teardown),
        cmocka_unit_test_teardown(test_compare_pairs, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
