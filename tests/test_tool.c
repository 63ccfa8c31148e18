/*
 * test_tool.c - the mprof command as a user meets it: help, typos, exit codes, and `mprof
 * report` on a real capture in text and JSON.
 */
#define MPROF_ENABLE 1
#include "mprof/mprof.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[1 << 17];

static int run(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", tu_mprof_bin(), args);
    return tu_run(cmd, out, sizeof out);
}

static void test_help_and_usage(void **state)
{
    (void)state;
    assert_int_equal(run("--help"), 0);
    assert_non_null(strstr(out, "report"));
    assert_int_equal(run("report --help"), 0);
    assert_non_null(strstr(out, "usage: mprof report"));
    assert_int_equal(run(""), 2);
    assert_int_equal(run("reprot x"), 2);
    assert_non_null(strstr(out, "Did you mean 'report'?"));
    assert_int_equal(run("report --bogus x"), 2);
    assert_non_null(strstr(out, "unknown option '--bogus'"));
    assert_int_equal(run("report --top nope x"), 2);
    assert_int_equal(run("report"), 2);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    assert_int_equal(run("report /nonexistent.mprof"), 3);
    assert_non_null(strstr(out, "/nonexistent.mprof"));
    const char *junk = tu_temp_path("junk.mprof");
    FILE *f = fopen(junk, "wb");
    fputs("this is not a capture at all", f);
    fclose(f);
    char args[1024];
    snprintf(args, sizeof args, "report %s", junk);
    assert_int_equal(run(args), 3);
    assert_non_null(strstr(out, "not an mprof capture"));
}

static volatile double work_sink;

static void frame_work(int f)
{
    MPROF_ZONE_C("Renderer::draw", MPROF_COLOR_RENDERER);
    {
        MPROF_ZONE_C("Physics::step", MPROF_COLOR_PHYSICS);
        for (int i = 0; i < 200000; i++)
            work_sink += i;
    }
    MPROF_PLOT("draw calls", 100 + f);
    MPROF_MESSAGEF(f % 2 ? MPROF_LOG_INFO : MPROF_LOG_WARN, "frame %d", f);
}

static void test_report_json(void **state)
{
    (void)state;
    const char *path = tu_temp_path("report.mprof");
    mprof_config cfg = {.capture_path = path, .listen = MPROF_TOGGLE_OFF};
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    MPROF_FRAME_MARK();
    for (int f = 0; f < 50; f++) {
        frame_work(f);
        MPROF_FRAME_MARK();
    }
    mprof_shutdown();

    char args[1024];
    snprintf(args, sizeof args, "report --json %s", path);
    assert_int_equal(run(args), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *frames = cJSON_GetObjectItem(j, "frames");
    assert_int_equal(cJSON_GetObjectItem(frames, "count")->valuedouble, 50);
    const char *keys[] = {"mean_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"};
    for (int i = 0; i < 5; i++)
        assert_true(cJSON_GetObjectItem(frames, keys[i])->valuedouble > 0);
    assert_true(cJSON_GetObjectItem(frames, "p95_ms")->valuedouble >=
                cJSON_GetObjectItem(frames, "p50_ms")->valuedouble);
    /* Each frame is its one zone but for the frame mark and the loop, so the share is near 1;
     * a thread preempted between a zone's end and the next mark (a loaded CI machine, a
     * sanitizer build) loses milliseconds outside the zones against frames of a fraction of
     * one, so the bound is loose; a share over 1 would be a bug. */
    double coverage = cJSON_GetObjectItem(frames, "coverage")->valuedouble;
    assert_true(coverage > 0.5);
    assert_true(coverage <= 1.0);
    cJSON *zones = cJSON_GetObjectItem(j, "zones");
    assert_int_equal(cJSON_GetArraySize(zones), 2);
    cJSON *z0 = cJSON_GetArrayItem(zones, 0);
    assert_string_equal(cJSON_GetObjectItem(z0, "name")->valuestring, "Renderer::draw");
    assert_string_equal(cJSON_GetObjectItem(z0, "color")->valuestring, "#2f6fde");
    assert_int_equal(cJSON_GetObjectItem(z0, "count")->valuedouble, 50);
    const char *zkeys[] = {"file", "line", "total_ns", "self_ns", "mean_ns", "p95_ns", "max_ns"};
    for (int i = 0; i < 7; i++)
        assert_non_null(cJSON_GetObjectItem(z0, zkeys[i]));
    cJSON *z1 = cJSON_GetArrayItem(zones, 1);
    /* self time of the parent excludes the child */
    assert_true(cJSON_GetObjectItem(z0, "self_ns")->valuedouble <
                cJSON_GetObjectItem(z0, "total_ns")->valuedouble -
                    cJSON_GetObjectItem(z1, "total_ns")->valuedouble * 0.99);
    cJSON *plots = cJSON_GetObjectItem(j, "plots");
    cJSON *p0 = cJSON_GetArrayItem(plots, 0);
    assert_string_equal(cJSON_GetObjectItem(p0, "name")->valuestring, "draw calls");
    assert_int_equal(cJSON_GetObjectItem(p0, "count")->valuedouble, 50);
    assert_int_equal(cJSON_GetObjectItem(p0, "min")->valuedouble, 100);
    assert_int_equal(cJSON_GetObjectItem(p0, "max")->valuedouble, 149);
    cJSON *msgs = cJSON_GetObjectItem(j, "messages");
    assert_int_equal(cJSON_GetObjectItem(msgs, "warn")->valuedouble, 25);
    assert_int_equal(cJSON_GetObjectItem(msgs, "info")->valuedouble, 25);
    cJSON *ev = cJSON_GetObjectItem(j, "events");
    assert_int_equal(cJSON_GetObjectItem(ev, "lost")->valuedouble, 0);
    assert_true(cJSON_GetObjectItem(ev, "total")->valuedouble >= 300);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "threads")), 1);
    cJSON_Delete(j);

    snprintf(args, sizeof args, "report --top 1 %s", path);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(out, "Zones (1 of 2 by total time)"));
    assert_non_null(strstr(out, "hot-path coverage"));
    assert_non_null(strstr(out, "Renderer::draw"));
}

static void test_report_cut_file(void **state)
{
    (void)state;
    const char *path = tu_temp_path("cut.mprof");
    mprof_config cfg = {.capture_path = path, .listen = MPROF_TOGGLE_OFF, .chunk_bytes = 4096};
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    for (int f = 0; f < 2000; f++) {
        MPROF_ZONE("z");
        MPROF_FRAME_MARK();
    }
    mprof_shutdown();
    FILE *f = fopen(path, "rb+");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fclose(f);
    assert_int_equal(truncate(path, sz - 7), 0);
    char args[1024];
    snprintf(args, sizeof args, "report %s", path);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(out, "incomplete"));
    assert_non_null(strstr(out, "cut-off chunk ignored"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_usage),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_report_json),
        cmocka_unit_test(test_report_cut_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
