/*
 * test_tracy.c - a program written only against Tracy's C API (tracy_game.c), built unchanged
 * against mprof's tracy/TracyC.h, records the zones, frames, plots, messages, allocations, lock,
 * fiber, thread names and app info it counted itself: the real `mprof report --json --all` of
 * its capture and the capture's own events agree with the program's counts.
 */
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static cJSON *expected, *report;
static char capture[512];

static cJSON *read_json_file(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    return j;
}

static int setup(void **state)
{
    (void)state;
    const char *game = getenv("TRACY_GAME");
    assert_non_null(game);
    snprintf(capture, sizeof capture, "%s", tu_temp_path("tracy_game.mprof"));
    char counts[512], cmd[2048];
    snprintf(counts, sizeof counts, "%s", tu_temp_path("tracy_game.json"));
    snprintf(cmd, sizeof cmd, "MPROF_LISTEN=0 MPROF_CAPTURE=%s %s %s", capture, game, counts);
    assert_int_equal(tu_run(cmd, NULL, 0), 0);
    expected = read_json_file(counts);
    static char out[1 << 22];
    snprintf(cmd, sizeof cmd, "%s report --json --all %s", tu_mprof_bin(), capture);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    report = cJSON_Parse(out);
    assert_non_null(report);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cJSON_Delete(expected);
    cJSON_Delete(report);
    return 0;
}

static cJSON *by_name(cJSON *arr, const char *name)
{
    cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        cJSON *n = cJSON_GetObjectItem(e, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return e;
    }
    return NULL;
}

static double num(cJSON *o, const char *key)
{
    cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsNumber(v))
        fail_msg("no number '%s'", key);
    return v->valuedouble;
}

/* The same zones, each as many times as the program ran it, and nothing else. */
static void test_zones(void **state)
{
    (void)state;
    cJSON *zones = cJSON_GetObjectItem(report, "zones"), *e;
    int want = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(expected, "zones"))
    {
        cJSON *z = by_name(zones, e->string);
        if (e->valueint == 0) {
            if (z)
                fail_msg("zone %s was switched off (active 0) but recorded", e->string);
            continue;
        }
        want++;
        if (!z)
            fail_msg("zone %s missing from the report", e->string);
        if ((int)num(z, "count") != e->valueint)
            fail_msg("zone %s: %d in the report, %d run", e->string, (int)num(z, "count"),
                     e->valueint);
        const char *file = cJSON_GetObjectItem(z, "file")->valuestring;
        assert_non_null(strstr(file, "tracy_game.c"));
        assert_true(num(z, "line") > 0);
    }
    assert_int_equal(cJSON_GetArraySize(zones), want);
    /* Colors and functions of the call sites, as Tracy's macros gave them. */
    assert_string_equal(cJSON_GetObjectItem(by_name(zones, "Physics::step"), "color")->valuestring,
                        "#2fa84f");
    assert_string_equal(cJSON_GetObjectItem(by_name(zones, "render"), "color")->valuestring,
                        "#2f6fde");
    assert_string_equal(cJSON_GetObjectItem(by_name(zones, "Job"), "color")->valuestring, "#22a6b3");
    assert_string_equal(cJSON_GetObjectItem(by_name(zones, "Script::tick"), "color")->valuestring,
                        "#d63a3a");
    assert_string_equal(cJSON_GetObjectItem(by_name(zones, "ai_think"), "function")->valuestring,
                        "ai_think");
    assert_string_equal(
        cJSON_GetObjectItem(by_name(zones, "Script::tick"), "function")->valuestring, "run_script");
    cJSON *ev = cJSON_GetObjectItem(report, "events");
    assert_int_equal((int)num(ev, "lost"), 0);
    assert_int_equal((int)num(ev, "unmatched_zone_ends"), 0);
}

/* Frames: mprof counts the frames between marks, so N marks make N - 1 frames. */
static void test_frames(void **state)
{
    (void)state;
    int marks = (int)num(expected, "frames");
    assert_int_equal((int)num(cJSON_GetObjectItem(report, "frames"), "count"), marks - 1);
    cJSON *sets = cJSON_GetObjectItem(report, "frame_sets");
    cJSON *phys = by_name(sets, "Physics tick");
    assert_non_null(phys);
    cJSON *want = cJSON_GetObjectItem(expected, "frame_sets");
    assert_int_equal((int)num(phys, "count"), (int)num(want, "Physics tick") - 1);
    cJSON *load = by_name(sets, "Load");
    assert_non_null(load);
    assert_int_equal((int)num(load, "count"), (int)num(want, "Load"));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(load, "discontinuous")));
}

static void test_plots_messages(void **state)
{
    (void)state;
    cJSON *plots = cJSON_GetObjectItem(report, "plots"), *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(expected, "plots"))
    {
        cJSON *p = by_name(plots, e->string);
        if (!p)
            fail_msg("plot %s missing", e->string);
        assert_int_equal((int)num(p, "count"), e->valueint);
    }
    assert_int_equal((int)num(by_name(plots, "frame_ms"), "max"), 16); /* 16.5 as a float */
    cJSON *m = cJSON_GetObjectItem(report, "messages");
    assert_int_equal((int)num(m, "total"), (int)num(expected, "messages"));
    assert_int_equal((int)num(m, "info"), (int)num(expected, "messages"));
}

static void test_memory_locks_fibers_threads(void **state)
{
    (void)state;
    cJSON *pools = cJSON_GetObjectItem(cJSON_GetObjectItem(report, "memory"), "pools");
    cJSON *heap = by_name(pools, "heap"), *assets = by_name(pools, "Assets"),
          *scratch = by_name(pools, "Scratch");
    assert_non_null(heap);
    assert_non_null(assets);
    assert_non_null(scratch);
    assert_int_equal((int)num(heap, "allocs"), (int)num(expected, "allocs"));
    assert_int_equal((int)num(heap, "frees"), (int)num(expected, "allocs"));
    assert_int_equal((int)num(assets, "allocs"), (int)num(expected, "asset_allocs"));
    assert_int_equal((int)num(assets, "live_bytes"), 0);
    assert_int_equal((int)num(scratch, "discards"), 1);

    cJSON *lock = by_name(cJSON_GetObjectItem(report, "locks"), "JobQueue");
    assert_non_null(lock); /* the name TracyCLockCustomName gave */
    assert_string_equal(cJSON_GetObjectItem(lock, "kind")->valuestring, "mutex");
    int acq = (int)num(lock, "acquisitions");
    assert_int_equal(acq, (int)num(expected, "lock_acquisitions"));
    /* A wait is recorded only when another thread held the lock, so the contended count is at
     * most the acquisitions that could overlap, never all of them by construction. */
    assert_true(num(lock, "contended") <= acq);
    assert_int_equal((int)num(lock, "waits_abandoned"), 0);

    /* The shared lock: named after the expression given to TracyCSharedLockAnnounce. */
    cJSON *world = by_name(cJSON_GetObjectItem(report, "locks"), "world_lock_ctx");
    assert_non_null(world);
    assert_string_equal(cJSON_GetObjectItem(world, "kind")->valuestring, "rwlock");
    assert_int_equal((int)num(world, "shared_acquisitions"), (int)num(expected, "world_reads"));
    assert_int_equal((int)num(world, "acquisitions"),
                     (int)num(expected, "world_reads") + (int)num(expected, "world_writes"));
    assert_true(num(world, "contended") <= num(world, "acquisitions"));

    cJSON *fiber = by_name(cJSON_GetObjectItem(report, "fibers"), "Loader");
    assert_non_null(fiber);
    assert_int_equal((int)num(fiber, "runs"), 1);
    cJSON *fz = by_name(cJSON_GetObjectItem(fiber, "zones"), "Load::step");
    assert_non_null(fz);
    assert_int_equal((int)num(fz, "count"), 3);

    cJSON *threads = cJSON_GetObjectItem(report, "threads");
    assert_non_null(by_name(threads, "Main"));
    assert_non_null(by_name(threads, "Worker 0"));
    assert_non_null(by_name(threads, "Worker 1"));
    assert_non_null(by_name(threads, "Worker 2"));
}

/* What the report does not print, read from the capture's events: app info, zone texts and
 * values, frame images. */
static void test_events(void **state)
{
    (void)state;
    tu_counts c;
    assert_int_equal(tu_count_capture(capture, &c), 0);
    assert_int_equal((int)c.by_type[MPROF_EV_APP_INFO], 1);
    assert_int_equal((int)c.by_type[MPROF_EV_FRAME_IMAGE], (int)num(expected, "images"));
    /* ai_think's formatted text and render's text, each frame. */
    assert_int_equal((int)c.by_type[MPROF_EV_ZONE_TEXT], 2 * (int)num(expected, "frames"));
    assert_int_equal((int)c.by_type[MPROF_EV_ZONE_VALUE], (int)num(expected, "frames"));
    assert_int_equal((int)c.by_type[MPROF_EV_THREAD_NAME], 4);
    assert_int_equal((int)c.by_type[MPROF_EV_PLOT_CONFIG], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zones),
        cmocka_unit_test(test_frames),
        cmocka_unit_test(test_plots_messages),
        cmocka_unit_test(test_memory_locks_fibers_threads),
        cmocka_unit_test(test_events),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
