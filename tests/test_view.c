/*
 * test_view.c - `mprof view` in a real browser. view_demo records a capture; mprof view writes
 * the page; headless Chromium (Debian's chromium) opens it. The page reports its outcome in
 * #mprof-status (state, tracks, zones, script errors), which --dump-dom shows; the test compares
 * that with the embedded document (mprof view --json) and with the capture, and saves
 * screenshots (view_timeline.png, view_frame_flame.png in the test's directory) for a person.
 *
 * Without a browser the browser checks are skipped, except in CI (CI=true) or with
 * MPROF_REQUIRE_BROWSER=1, where a missing browser fails the test.
 */
#include "mprof/mprof.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *out; /* command output: the DOM dump holds the whole page */
#define OUT_SIZE (8u << 20)
static char cap[512], cap_slow[512], big[512];
static const char *browser;

static int run(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", tu_mprof_bin(), args);
    return tu_run(cmd, out, OUT_SIZE);
}

static int make_capture(const char *path, const char *args)
{
    const char *demo = getenv("MPROF_VIEW_DEMO");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s 2>&1", demo ? demo : "tests/view_demo", path, args);
    return tu_run(cmd, out, OUT_SIZE);
}

static const char *find_browser(void)
{
    const char *env = getenv("MPROF_CHROMIUM");
    if (env && *env)
        return env;
    static const char *const paths[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser",
                                        "/usr/bin/google-chrome"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], X_OK) == 0)
            return paths[i];
    return NULL;
}

static int setup(void **state)
{
    (void)state;
    out = malloc(OUT_SIZE);
    if (!out)
        return -1;
    snprintf(cap, sizeof cap, "%s", tu_temp_path("view.mprof"));
    snprintf(cap_slow, sizeof cap_slow, "%s", tu_temp_path("view_slow.mprof"));
    snprintf(big, sizeof big, "%s", tu_temp_path("view_big.mprof"));
    if (make_capture(cap, "60 40") != 0 || make_capture(cap_slow, "60 40 slow") != 0 ||
        make_capture(big, "150 400") != 0)
        return -1;
    browser = find_browser();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(out);
    return 0;
}

static void need_browser(void)
{
    if (browser)
        return;
    const char *req = getenv("MPROF_REQUIRE_BROWSER"), *ci = getenv("CI");
    if ((req && strcmp(req, "1") == 0) || (ci && strcmp(ci, "true") == 0))
        fail_msg("no browser: install Debian's chromium (or set MPROF_CHROMIUM)");
    print_message("no chromium found: browser checks skipped\n");
    skip();
}

/* Opens url headless; dumps the DOM into out, or saves a screenshot when shot is set. */
static int open_page(const char *url, const char *shot)
{
    char profile[] = "/tmp/mprof-chromium-XXXXXX";
    if (!mkdtemp(profile))
        return -1;
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "timeout 120 %s --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
             "--disable-background-networking --disable-component-update --disable-sync "
             "--user-data-dir=%s --window-size=1600,1000 --hide-scrollbars %s%s '%s' 2>/dev/null",
             browser, profile, shot ? "--screenshot=" : "--dump-dom", shot ? shot : "", url);
    int rc = tu_run(cmd, out, OUT_SIZE);
    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf %s", profile);
    if (system(rm) != 0)
        print_message("could not remove %s\n", profile);
    return rc;
}

/* Value of attribute name in the #mprof-status element of the dumped DOM (static buffer). */
static const char *status_attr(const char *name)
{
    static char val[4096];
    const char *div = strstr(out, "id=\"mprof-status\"");
    assert_non_null(div);
    const char *end = strchr(div, '>');
    char key[128];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *a = strstr(div, key);
    if (!a || a > end)
        return NULL;
    a += strlen(key);
    const char *q = strchr(a, '"');
    size_t n = (size_t)(q - a) < sizeof val - 1 ? (size_t)(q - a) : sizeof val - 1;
    memcpy(val, a, n);
    val[n] = 0;
    return val;
}

static long status_num(const char *name)
{
    const char *v = status_attr(name);
    assert_non_null(v);
    return atol(v);
}

/* The document mprof view embeds, parsed. */
static cJSON *view_doc(const char *args)
{
    const char *path = tu_temp_path("doc.json");
    char a[2048];
    snprintf(a, sizeof a, "view --json -o %s %s", path, args);
    assert_int_equal(run(a), 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(out, 1, OUT_SIZE - 1, f);
    fclose(f);
    out[n] = 0;
    cJSON *doc = cJSON_Parse(out);
    assert_non_null(doc);
    return doc;
}

static long doc_zones(const cJSON *doc)
{
    long n = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(doc, "tracks"))
    {
        const cJSON *z = cJSON_GetObjectItemCaseSensitive(t, "zones");
        n += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(z, "dur"));
    }
    return n;
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void test_document(void **state)
{
    (void)state;
    cJSON *doc = view_doc(cap);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(doc, "schema")->valuestring, "mprof-view");
    const cJSON *range = cJSON_GetObjectItemCaseSensitive(doc, "range");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(range, "mode")->valuestring, "all");
    assert_int_equal((long)jnum(range, "omitted_zones"), 0);
    /* Every zone of the capture is embedded: thread and fiber zones, GPU zones, lock spans. */
    tu_counts c;
    assert_int_equal(tu_count_capture(cap, &c), 0);
    const cJSON *capture = cJSON_GetObjectItemCaseSensitive(doc, "capture");
    assert_int_equal((long)jnum(capture, "zones"),
                     (long)(c.by_type[MPROF_EV_ZONE_BEGIN] + c.by_type[MPROF_EV_GPU_ZONE_BEGIN]));
    const char *kinds[] = {"thread", "thread", "fiber", "gpu", "lock"};
    const char *names[] = {"Main", "Worker", "fiber Loader fiber", "GPU Vulkan queue", "lock frame_lock"};
    const cJSON *tracks = cJSON_GetObjectItemCaseSensitive(doc, "tracks");
    assert_int_equal(cJSON_GetArraySize(tracks), 5);
    for (int i = 0; i < 5; i++) {
        const cJSON *t = cJSON_GetArrayItem(tracks, i);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(t, "kind")->valuestring, kinds[i]);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring, names[i]);
    }
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(doc, "frames");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(frames, "dur")), 60);
    const cJSON *sets = cJSON_GetObjectItemCaseSensitive(doc, "frame_sets");
    assert_int_equal(cJSON_GetArraySize(sets), 1);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(sets, 0), "name")->valuestring, "Physics");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(sets, 0), "dur")), 60);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(doc, "messages"), "text")),
                     (int)c.by_type[MPROF_EV_MESSAGE]);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "plots")), 3);
    /* Message colors are the public header's, so page and exports agree. */
    const cJSON *lc = cJSON_GetObjectItemCaseSensitive(doc, "level_colors");
    assert_int_equal(cJSON_GetArraySize(lc), 7);
    assert_int_equal((long)cJSON_GetArrayItem(lc, MPROF_LOG_ERROR)->valuedouble,
                     (long)mprof_log_level_color(MPROF_LOG_ERROR));
    const cJSON *lock = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "locks"), 0);
    assert_true(jnum(lock, "acquisitions") >= 60);
    const cJSON *pool = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "memory"), "pools"), 0);
    assert_int_equal((long)jnum(pool, "allocs"), 60);
    assert_int_equal((long)jnum(pool, "live"), 20); /* every third allocation is kept */
    cJSON_Delete(doc);
}

static void test_page_renders(void **state)
{
    (void)state;
    const char *html = tu_temp_path("view.html");
    char args[2048];
    snprintf(args, sizeof args, "view -o %s %s", html, cap);
    assert_int_equal(run(args), 0);
    /* Self-contained: nothing to fetch. */
    FILE *f = fopen(html, "rb");
    assert_non_null(f);
    size_t n = fread(out, 1, OUT_SIZE - 1, f);
    fclose(f);
    out[n] = 0;
    assert_null(strstr(out, "http://"));
    assert_null(strstr(out, "https://"));
    assert_non_null(strstr(out, "Content-Security-Policy"));
    cJSON *doc = view_doc(cap);
    long zones = doc_zones(doc);
    /* System tracing adds two CPU-usage plots when the capture has CPU samples (SYSTEM.md). */
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(doc, "system");
    const cJSON *cpu_ts = sys ? cJSON_GetObjectItemCaseSensitive(
                                    cJSON_GetObjectItemCaseSensitive(sys, "cpu"), "ts")
                              : NULL;
    int cpu_plots = cJSON_GetArraySize(cpu_ts) > 0 ? 2 : 0;
    cJSON_Delete(doc);

    need_browser();
    char url[1024];
    snprintf(url, sizeof url, "file://%s", html);
    assert_int_equal(open_page(url, NULL), 0);
    assert_string_equal(status_attr("data-state"), "ok");
    assert_int_equal(status_num("data-errors"), 0);
    assert_int_equal(status_num("data-tracks"), 5);
    assert_string_equal(status_attr("data-track-names"),
                        "Main|Worker|fiber Loader fiber|GPU Vulkan queue|lock frame_lock");
    assert_string_equal(status_attr("data-track-kinds"), "thread:2,fiber:1,gpu:1,lock:1");
    assert_int_equal(status_num("data-zones"), zones);
    assert_int_equal(status_num("data-frames"), 60);
    assert_int_equal(status_num("data-plots"), 3 + cpu_plots);
    assert_int_equal(status_num("data-messages"), 6);
    assert_int_equal(status_num("data-locks"), 1);
    assert_int_equal(status_num("data-memory"), 1);
    assert_int_equal(status_num("data-stats-rows"), 11);
    /* The whole capture in view: everything drawn or merged, nothing lost. */
    assert_true(status_num("data-drawn-zones") > 0);
    assert_true(status_num("data-drawn-zones") + status_num("data-merged-zones") <= zones);

    const char *shot = "view_timeline.png";
    assert_int_equal(open_page(url, shot), 0);
    f = fopen(shot, "rb");
    assert_non_null(f);
    unsigned char sig[8];
    assert_int_equal(fread(sig, 1, 8, f), 8);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
    assert_true(size > 20000); /* a drawn page, not a blank one */

    /* Zoomed to the slow frame with the flame graph open. */
    snprintf(url, sizeof url, "file://%s#frame=30&tab=flame", html);
    assert_int_equal(open_page(url, "view_frame_flame.png"), 0);
    snprintf(url, sizeof url, "file://%s#frame=30&tab=flame", html);
    assert_int_equal(open_page(url, NULL), 0);
    assert_string_equal(status_attr("data-state"), "ok");
    /* Zoomed in, zones are drawn one by one rather than merged. */
    assert_true(status_num("data-drawn-zones") > 0);
}

/* A capture over the embedding limit: the worst frame and its neighbours, and a note. */
static void test_worst_frames_range(void **state)
{
    (void)state;
    char args[2048];
    snprintf(args, sizeof args, "--max-zones 20000 %s", big);
    cJSON *doc = view_doc(args);
    const cJSON *range = cJSON_GetObjectItemCaseSensitive(doc, "range");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(range, "mode")->valuestring, "worst");
    assert_true(jnum(range, "omitted_zones") > 0);
    assert_non_null(strstr(cJSON_GetObjectItemCaseSensitive(range, "note")->valuestring, "--frames"));
    long first = (long)jnum(range, "first_frame"), last = (long)jnum(range, "last_frame");
    assert_true(first < last);
    /* The worst frame of the whole capture is inside the embedded range. */
    const cJSON *dur = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "frames"), "dur");
    assert_int_equal(cJSON_GetArraySize(dur), 150);
    long worst = 0;
    for (int i = 1; i < cJSON_GetArraySize(dur); i++)
        if (cJSON_GetArrayItem(dur, i)->valuedouble > cJSON_GetArrayItem(dur, (int)worst)->valuedouble)
            worst = i;
    assert_true(worst >= first && worst < last);
    long zones = doc_zones(doc);
    assert_int_equal(zones, (long)jnum(range, "zones"));
    assert_true(zones <= 30000 && zones > 1000);
    cJSON_Delete(doc);

    need_browser();
    const char *html = tu_temp_path("big.html");
    snprintf(args, sizeof args, "view --max-zones 20000 -o %s %s", html, big);
    assert_int_equal(run(args), 0);
    char url[1024];
    snprintf(url, sizeof url, "file://%s", html);
    assert_int_equal(open_page(url, NULL), 0);
    assert_string_equal(status_attr("data-state"), "ok");
    assert_int_equal(status_num("data-zones"), zones);
    assert_non_null(strstr(out, "Left out:"));
}

static void test_frames_option(void **state)
{
    (void)state;
    char args[2048];
    snprintf(args, sizeof args, "--frames 10:20 %s", cap);
    cJSON *doc = view_doc(args);
    const cJSON *range = cJSON_GetObjectItemCaseSensitive(doc, "range");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(range, "mode")->valuestring, "frames");
    assert_int_equal((long)jnum(range, "first_frame"), 10);
    assert_int_equal((long)jnum(range, "last_frame"), 20);
    double t0 = jnum(range, "start_ns"), t1 = jnum(range, "end_ns");
    /* Every embedded zone overlaps the range. */
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(doc, "tracks"))
    {
        const cJSON *z = cJSON_GetObjectItemCaseSensitive(t, "zones");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(z, "start");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(z, "dur");
        double start = 0;
        for (int i = 0; i < cJSON_GetArraySize(s); i++) {
            start += cJSON_GetArrayItem(s, i)->valuedouble;
            assert_true(start <= t1 && start + cJSON_GetArrayItem(d, i)->valuedouble >= t0);
        }
    }
    assert_true(jnum(range, "omitted_zones") > 0);
    cJSON_Delete(doc);
    /* Regression: a failed run must not remove() an output that is not a regular file, which
     * would delete a device node such as /dev/null as root. A symlink stands in for any such
     * output: it must stay a link, and its target must survive. */
    char target[512], link[512];
    snprintf(target, sizeof target, "%s", tu_temp_path("view_target.html"));
    snprintf(link, sizeof link, "%s", tu_temp_path("view_link.html"));
    FILE *tf = fopen(target, "w");
    assert_non_null(tf);
    fputs("keep", tf);
    fclose(tf);
    assert_int_equal(symlink(target, link), 0);
    struct stat ls;
    snprintf(args, sizeof args, "view /nonexistent.mprof -o %s", link);
    assert_int_equal(run(args), 3);
    assert_int_equal(lstat(link, &ls), 0);
    assert_true(S_ISLNK(ls.st_mode));
    tf = fopen(target, "r");
    assert_non_null(tf);
    char kept[16] = "";
    assert_non_null(fgets(kept, sizeof kept, tf));
    fclose(tf);
    assert_string_equal(kept, "keep"); /* the capture is opened before the output */
    snprintf(args, sizeof args, "view --frames 500:600 %s -o %s", cap, link);
    assert_int_equal(run(args), 2);
    assert_non_null(strstr(out, "frames 0:60"));
    assert_int_equal(lstat(link, &ls), 0);
    assert_true(S_ISLNK(ls.st_mode));
    assert_int_equal(lstat(target, &ls), 0);
    assert_true(S_ISREG(ls.st_mode));
    snprintf(args, sizeof args, "view --frames 5 %s", cap);
    assert_int_equal(run(args), 2);
    assert_int_equal(run("view --help"), 0);
    assert_non_null(strstr(out, "usage: mprof view"));
    assert_int_equal(run("view --bogus x.mprof"), 2);
    snprintf(args, sizeof args, "view --budget -3 %s", cap);
    assert_int_equal(run(args), 2);
    assert_int_equal(run("view"), 2);
}

/* Regression: -o naming an input capture (or a link to it) truncated it before it was read. */
static void test_output_is_the_capture(void **state)
{
    (void)state;
    const char *copy = tu_temp_path("view_same.mprof");
    const char *link = tu_temp_path("view_same_link.html");
    char args[2048];
    snprintf(args, sizeof args, "cp %s %s && ln -s %s %s", cap, copy, copy, link);
    assert_int_equal(tu_run(args, out, OUT_SIZE), 0);
    struct stat before, after;
    assert_int_equal(stat(copy, &before), 0);
    snprintf(args, sizeof args, "view %s -o %s", copy, copy);
    assert_int_equal(run(args), 2);
    assert_non_null(strstr(out, "the capture"));
    snprintf(args, sizeof args, "view --json %s -o %s", copy, link);
    assert_int_equal(run(args), 2);
    snprintf(args, sizeof args, "view %s %s -o %s", copy, cap_slow, link);
    assert_int_equal(run(args), 2);
    assert_int_equal(stat(copy, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    cJSON_Delete(view_doc(copy));
}

static void test_two_captures(void **state)
{
    (void)state;
    char args[2048];
    snprintf(args, sizeof args, "%s %s", cap, cap_slow);
    cJSON *doc = view_doc(args);
    const cJSON *diff = cJSON_GetObjectItemCaseSensitive(doc, "diff");
    assert_true(cJSON_IsObject(diff));
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(diff, "zones")) >= 10);
    cJSON_Delete(doc);

    need_browser();
    const char *html = tu_temp_path("diff.html");
    snprintf(args, sizeof args, "view -o %s %s %s", html, cap, cap_slow);
    assert_int_equal(run(args), 0);
    char url[1024];
    snprintf(url, sizeof url, "file://%s", html);
    assert_int_equal(open_page(url, NULL), 0);
    assert_string_equal(status_attr("data-state"), "ok");
    assert_int_equal(status_num("data-diff"), 1);
    assert_non_null(strstr(out, "Frame times"));
}

/* A page whose data is damaged says so instead of failing silently. */
static void test_damaged_page_reports_error(void **state)
{
    (void)state;
    need_browser();
    const char *html = tu_temp_path("damaged.html");
    char args[2048];
    snprintf(args, sizeof args, "view -o %s %s", html, cap);
    assert_int_equal(run(args), 0);
    /* Cut the embedded document in half. */
    FILE *f = fopen(html, "rb");
    assert_non_null(f);
    size_t n = fread(out, 1, OUT_SIZE - 1, f);
    fclose(f);
    out[n] = 0;
    char *data = strstr(out, "id=\"mprof-data\">");
    char *end = data ? strstr(data, "</script>") : NULL;
    assert_non_null(end);
    char *mid = data + (end - data) / 2;
    f = fopen(html, "wb");
    assert_non_null(f);
    fwrite(out, 1, (size_t)(mid - out), f);
    fwrite(end, 1, strlen(end), f);
    fclose(f);
    char url[1024];
    snprintf(url, sizeof url, "file://%s", html);
    assert_int_equal(open_page(url, NULL), 0);
    assert_string_equal(status_attr("data-state"), "error");
    assert_true(status_num("data-errors") >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document),
        cmocka_unit_test(test_page_renders),
        cmocka_unit_test(test_worst_frames_range),
        cmocka_unit_test(test_frames_option),
        cmocka_unit_test(test_two_captures),
        cmocka_unit_test(test_output_is_the_capture),
        cmocka_unit_test(test_damaged_page_reports_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
