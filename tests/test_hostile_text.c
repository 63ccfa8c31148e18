/*
 * test_hostile_text.c - names from a capture never reach the terminal raw. A program records a
 * capture whose app, thread, zone, frame set, plot and lock names hold terminal escapes (OSC
 * title, clear screen, a C1 CSI, a bidirectional override, a carriage return, bytes that are not
 * UTF-8) beside a well-formed UTF-8 name; every text output of the real mprof (report, diff,
 * gate, history, an error) shows them as \xNN and keeps the UTF-8 name as it is, and the JSON
 * outputs are valid JSON that keeps each name's characters (a byte that is not UTF-8 as U+FFFD).
 */
#define MPROF_ENABLE 1
#include "mprof/lock.h"
#include "mprof/mprof.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[1 << 20];

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", tu_mprof_bin(), args);
    return tu_run(cmd, out, sizeof out);
}

#define EVIL_ZONE "Zone\x1b[2J\r\xff\xfe"
#define NICE_ZONE "Physics::step \xe7\x89\xa9\xe7\x90\x86"
#define EVIL_APP "game\x1b]0;owned\x07"
#define EVIL_THREAD "main\x1b[H\xc2\x9b" "31m"
#define EVIL_FRAMES "Phys\x1b[31m"
#define EVIL_PLOT "plot\x07\xe2\x80\xae"
#define EVIL_LOCK "lock\x1b[5m"

static mprof_mutex lk;
static volatile double sink; /* the zones' work, kept */

static void work(int n)
{
    double x = 0;
    for (int k = 0; k < n; k++)
        x += k * 0.5;
    sink += x;
}

static void *worker(void *arg)
{
    (void)arg;
    MPROF_THREAD_NAME("worker\x1b[2K");
    for (int i = 0; i < 200; i++) {
        mprof_mutex_lock(&lk);
        MPROF_ZONE(EVIL_ZONE);
        mprof_mutex_unlock(&lk);
    }
    return NULL;
}

/* Records a capture with hostile names into path; slow makes the evil zone longer (for diff and
 * the gate, whose reports name the zone that grew). */
static void record(const char *path, int slow)
{
    mprof_config cfg = {.capture_path = path, .app_name = EVIL_APP};
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    MPROF_THREAD_NAME(EVIL_THREAD);
    mprof_mutex_init(&lk, EVIL_LOCK);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, worker, NULL), 0);
    for (int f = 0; f < 300; f++) {
        {
            MPROF_ZONE(EVIL_ZONE);
            work(slow ? 40000 : 10000);
        }
        {
            MPROF_ZONE(NICE_ZONE);
            work(2000);
        }
        MPROF_PLOT(EVIL_PLOT, (double)f);
        MPROF_FRAME_MARK_NAMED(EVIL_FRAMES);
        MPROF_FRAME_MARK();
    }
    pthread_join(th, NULL);
    mprof_shutdown();
}

/* The output holds no control character but newlines, no C1 control, no bidirectional override
 * and no byte that is not UTF-8. */
static void assert_clean(const char *what)
{
    const unsigned char *p = (const unsigned char *)out;
    for (size_t i = 0; p[i]; i++) {
        if ((p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7f)
            fail_msg("%s: control byte 0x%02x at %zu", what, p[i], i);
        if (p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] < 0xa0)
            fail_msg("%s: a C1 control at %zu", what, i);
        if (p[i] == 0xe2 && p[i + 1] == 0x80 && p[i + 2] == 0xae)
            fail_msg("%s: a bidirectional override at %zu", what, i);
        if (p[i] >= 0xf5 || p[i] == 0xc0 || p[i] == 0xc1)
            fail_msg("%s: a byte that is not UTF-8 (0x%02x) at %zu", what, p[i], i);
    }
}

static char cap_a[512], cap_b[512];

static int setup(void **state)
{
    (void)state;
    snprintf(cap_a, sizeof cap_a, "%s", tu_temp_path("evil_a.mprof"));
    snprintf(cap_b, sizeof cap_b, "%s", tu_temp_path("evil_b.mprof"));
    record(cap_a, 0);
    record(cap_b, 1);
    return 0;
}

static void test_report_text(void **state)
{
    (void)state;
    assert_int_equal(run("report --all --top 0 %s", cap_a), 0);
    assert_clean("report");
    assert_non_null(strstr(out, "Zone\\x1b[2J\\x0d\\xff\\xfe"));
    assert_non_null(strstr(out, NICE_ZONE)); /* UTF-8 as it is */
    assert_non_null(strstr(out, "game\\x1b]0;owned\\x07"));
    assert_non_null(strstr(out, "main\\x1b[H\\xc2\\x9b31m"));
    assert_non_null(strstr(out, "Phys\\x1b[31m"));
    assert_non_null(strstr(out, "plot\\x07\\xe2\\x80\\xae"));
    assert_non_null(strstr(out, "lock\\x1b[5m"));
}

static void test_report_json(void **state)
{
    (void)state;
    assert_int_equal(run("report --json --top 0 %s", cap_a), 0);
    assert_clean("report --json");
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    /* The names' characters survive: controls as \u escapes, bytes that are not UTF-8 as U+FFFD. */
    cJSON *z, *found = NULL;
    cJSON_ArrayForEach(z, cJSON_GetObjectItem(j, "zones"))
    {
        const cJSON *n = cJSON_GetObjectItem(z, "name");
        if (cJSON_IsString(n) && strncmp(n->valuestring, "Zone", 4) == 0)
            found = z;
    }
    assert_non_null(found);
    assert_string_equal(cJSON_GetObjectItem(found, "name")->valuestring,
                        "Zone\x1b[2J\r\xef\xbf\xbd\xef\xbf\xbd");
    assert_non_null(strstr(out, "\\u001b[2J"));
    assert_non_null(strstr(out, "\\u009b"));
    cJSON_Delete(j);
}

static void test_diff_and_gate(void **state)
{
    (void)state;
    assert_int_equal(run("diff %s %s", cap_a, cap_b), 0);
    assert_clean("diff");
    assert_non_null(strstr(out, "Zone\\x1b[2J"));
    const char *fa = tu_temp_path("evil_a.json"), *fb = tu_temp_path("evil_b.json");
    assert_int_equal(run("export --format frames -o %s %s", fa, cap_a), 0);
    assert_int_equal(run("export --format frames -o %s %s", fb, cap_b), 0);
    int rc = run("gate --baseline %s --current %s", fa, fb);
    assert_true(rc == 0 || rc == 1 || rc == 2); /* any verdict: the text is what is checked */
    assert_clean("gate");
    assert_non_null(strstr(out, "Zone\\x1b[2J"));
}

static void test_history_text(void **state)
{
    (void)state;
    const char *fa = tu_temp_path("evil_h.json");
    assert_int_equal(run("export --format frames -o %s %s", fa, cap_a), 0);
    char url[600];
    snprintf(url, sizeof url, "sqlite:%s", tu_temp_path("evil.db"));
    assert_int_equal(run("store add %s --store %s --branch '\x1b[J\xc2\x85'", fa, url), 0);
    assert_int_equal(run("history --store %s", url), 0);
    assert_clean("history");
    assert_non_null(strstr(out, "\\x1b[J\\xc2\\x85"));
}

static void test_error_message(void **state)
{
    (void)state;
    /* A message that quotes what it was given. */
    assert_int_equal(run("report 'nothing\x1b]0;owned\x07.mprof'"), 3);
    assert_clean("error");
    assert_non_null(strstr(out, "nothing\\x1b]0;owned\\x07.mprof"));
}

int main(void)
{
    setenv("MPROF_LISTEN", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_text),   cmocka_unit_test(test_report_json),
        cmocka_unit_test(test_diff_and_gate), cmocka_unit_test(test_history_text),
        cmocka_unit_test(test_error_message),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
