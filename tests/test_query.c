/*
 * test_query.c - `mprof query`: the tables of real captures (view_demo's: threads, a fiber, a
 * 12-deep recursion, locks, plots, memory, messages, a GPU context; the sample engine's: system
 * tracing with context switches and samples, Vulkan GPU zones) counted against `mprof report
 * --json` of the same capture, the parent links checked, the output formats read back (CSV by
 * its header, JSON by cJSON), --save opened by Debian's sqlite3, the cache reused and rebuilt,
 * and every refusal (bad SQL, an unknown table, a write, ATTACH, two statements) an exit 2.
 */
#include "test_util.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

static char out[1 << 20];
static char demo_cap[512], engine_cap[512];
static tu_counts engine_counts;

static int query(const char *cap, const char *opts, const char *sql)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s query %s %s \"%s\" 2>&1", tu_mprof_bin(), cap, opts, sql);
    return tu_run(cmd, out, sizeof out);
}

/* The single number a query printed as CSV (header, then one value). */
static int64_t scalar(const char *cap, const char *sql)
{
    int rc = query(cap, "--format csv", sql);
    if (rc != 0)
        fail_msg("query failed (%d): %s: %s", rc, sql, out);
    char *nl = strchr(out, '\n');
    assert_non_null(nl);
    return strtoll(nl + 1, NULL, 10);
}

/* The value of key in "key,value" CSV rows, -1 when absent. */
static int64_t csv_lookup(const char *csv, const char *key)
{
    size_t kl = strlen(key);
    for (const char *line = strchr(csv, '\n'); line; line = strchr(line + 1, '\n')) {
        const char *l = line + 1;
        if (strncmp(l, key, kl) == 0 && l[kl] == ',')
            return strtoll(l + kl + 1, NULL, 10);
    }
    return -1;
}

static cJSON *report(const char *cap)
{
    static char buf[1 << 22];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s report --json --all %s", tu_mprof_bin(), cap);
    assert_int_equal(tu_run(cmd, buf, sizeof buf), 0);
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    return j;
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static const char *jstr(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* The Vulkan loader and lavapipe leak a few hundred bytes per process and race inside the
 * driver, so the engine (not mprof) runs without LeakSanitizer and with the GPU drivers' TSan
 * suppressions, as tests/test_engine_e2e.c and test_gpu_vulkan do. */
#define ENGINE_ENV                                                                                  \
    "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "                                  \
    "TSAN_OPTIONS=${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=" MPROF_SOURCE_DIR                    \
    "/tests/tsan_gpu_drivers.supp"

static int setup(void **state)
{
    (void)state;
    const char *demo = getenv("MPROF_VIEW_DEMO");
    const char *engine = getenv("MPROF_ENGINE_BIN");
    if (!demo || !engine) {
        fprintf(stderr, "MPROF_VIEW_DEMO and MPROF_ENGINE_BIN must name the programs\n");
        return -1;
    }
    char cmd[2048];
    snprintf(demo_cap, sizeof demo_cap, "%s", tu_temp_path("q_demo.mprof"));
    snprintf(cmd, sizeof cmd, "%s %s 40 30 deep=12 2>&1", demo, demo_cap);
    if (tu_run(cmd, out, sizeof out) != 0)
        return -1;
    int frames = (int)(60 * tu_scale());
    snprintf(engine_cap, sizeof engine_cap, "%s", tu_temp_path("q_engine.mprof"));
    snprintf(cmd, sizeof cmd,
             "%s MPROF_SAMPLE_HZ=400 %s --frames %d --threads 2 --quiet --capture %s 2>&1",
             ENGINE_ENV, engine,
             frames < 4 ? 4 : frames, engine_cap);
    if (tu_run(cmd, out, sizeof out) != 0)
        return -1;
    return tu_count_capture(engine_cap, &engine_counts);
}

/* Zones per name (and their self time), per thread, GPU zones, frames, messages per level and
 * plot values equal the report's. */
static void check_against_report(const char *cap)
{
    cJSON *rep = report(cap);
    const cJSON *z, *t, *c, *p;
    assert_int_equal(query(cap, "--format csv",
                           "SELECT name, count(*) FROM zones GROUP BY name"), 0);
    int n = 0;
    cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(rep, "zones"))
    {
        int64_t got = csv_lookup(out, jstr(z, "name"));
        if (got != (int64_t)jnum(z, "count"))
            fail_msg("zone %s: %" PRId64 " rows, the report %.0f", jstr(z, "name"), got,
                     jnum(z, "count"));
        n++;
    }
    assert_true(n > 5);
    assert_int_equal(query(cap, "--format csv",
                           "SELECT name, sum(self_ns) FROM zones GROUP BY name"), 0);
    cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(rep, "zones"))
    assert_int_equal(csv_lookup(out, jstr(z, "name")), (int64_t)jnum(z, "self_ns"));
    assert_int_equal(query(cap, "--format csv",
                           "SELECT thread, count(*) FROM zones WHERE fiber IS NULL GROUP BY 1"), 0);
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(rep, "threads"))
    {
        char key[32];
        snprintf(key, sizeof key, "%.0f", jnum(t, "index"));
        int64_t got = csv_lookup(out, key);
        assert_int_equal(got < 0 ? 0 : got, (int64_t)jnum(t, "zones"));
    }
    int64_t gpu = 0;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(rep, "gpu");
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(g, "contexts"))
    cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(c, "zones"))
    gpu += (int64_t)jnum(z, "count");
    assert_true(gpu > 0);
    assert_int_equal(scalar(cap, "SELECT count(*) FROM gpu_zones"), gpu);
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(rep, "frames");
    assert_int_equal(scalar(cap, "SELECT count(*) FROM frames WHERE frame_set = 'main'"),
                     (int64_t)jnum(fr, "count"));
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(rep, "messages");
    assert_int_equal(scalar(cap, "SELECT count(*) FROM messages"), (int64_t)jnum(m, "total"));
    assert_int_equal(query(cap, "--format csv",
                           "SELECT level_name, count(*) FROM messages GROUP BY 1"), 0);
    static const char *const levels[] = {"trace", "debug", "info", "warn", "error", "fatal"};
    for (int l = 0; l < 6; l++) {
        int64_t got = csv_lookup(out, levels[l]);
        assert_int_equal(got < 0 ? 0 : got, (int64_t)jnum(m, levels[l]));
    }
    assert_int_equal(query(cap, "--format csv", "SELECT name, count(*) FROM plots GROUP BY 1"), 0);
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(rep, "plots"))
    assert_int_equal(csv_lookup(out, jstr(p, "name")), (int64_t)jnum(p, "count"));
    /* Parents: every child lies inside its parent, one level below; roots are depth 0. */
    assert_int_equal(scalar(cap, "SELECT count(*) FROM zone_rows c JOIN zone_rows p ON "
                                 "c.parent_id = p.id WHERE c.start_ns < p.start_ns OR "
                                 "c.start_ns + c.dur_ns > p.start_ns + p.dur_ns OR "
                                 "c.depth != p.depth + 1"),
                     0);
    assert_int_equal(scalar(cap, "SELECT count(*) FROM zone_rows WHERE (parent_id IS NULL) != "
                                 "(depth = 0)"),
                     0);
    /* Self time: a zone's duration less its children's. */
    assert_int_equal(scalar(cap, "SELECT count(*) FROM zone_rows p WHERE p.self_ns != p.dur_ns - "
                                 "(SELECT coalesce(sum(c.dur_ns), 0) FROM zone_rows c WHERE "
                                 "c.parent_id = p.id)"),
                     0);
    cJSON_Delete(rep);
}

static void test_demo(void **state)
{
    (void)state;
    check_against_report(demo_cap);
    /* the recursion: 12 levels of Recurse under each other */
    assert_true(scalar(demo_cap, "SELECT max(depth) - min(depth) FROM zones WHERE name = "
                                 "'Recurse'") >= 11);
    assert_true(scalar(demo_cap, "SELECT count(*) FROM zones WHERE fiber IS NOT NULL") > 0);
    assert_true(scalar(demo_cap, "SELECT count(*) FROM locks WHERE kind = 'hold'") > 0);
    assert_true(scalar(demo_cap, "SELECT count(*) FROM allocs") > 0);
    assert_true(scalar(demo_cap, "SELECT count(*) FROM zones WHERE text IS NOT NULL") > 0);
}

static void test_engine(void **state)
{
    (void)state;
    check_against_report(engine_cap);
    assert_int_equal(scalar(engine_cap, "SELECT count(*) FROM switches"),
                     (int64_t)engine_counts.by_type[MPROF_EV_SYS_SWITCH]);
    assert_int_equal(scalar(engine_cap, "SELECT count(*) FROM samples"),
                     (int64_t)engine_counts.by_type[MPROF_EV_SYS_SAMPLE]);
    assert_true(engine_counts.by_type[MPROF_EV_SYS_SWITCH] > 0);
    /* every GPU zone knows the CPU zone it was recorded in, on the thread that recorded it */
    assert_int_equal(scalar(engine_cap, "SELECT count(*) FROM gpu_zones g LEFT JOIN zones z ON "
                                        "z.id = g.cpu_zone_id WHERE z.id IS NULL OR z.thread != "
                                        "g.submit_thread OR g.submit_ns < z.start_ns OR "
                                        "g.submit_ns > z.start_ns + z.dur_ns"),
                     0);
    /* the engine's pools balance: every allocation has its free */
    assert_int_equal(scalar(engine_cap, "SELECT count(*) FROM allocs WHERE free_ns IS NULL"), 0);
}

static void test_formats(void **state)
{
    (void)state;
    /* options before and after the capture */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s query --format csv %s \"SELECT id, name FROM threads ORDER BY id\"",
             tu_mprof_bin(), demo_cap);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_int_equal(strncmp(out, "id,name\n1,", 10), 0);
    assert_int_equal(query(demo_cap, "--format json",
                           "SELECT name, count(*) AS n, 1.5 AS x, NULL AS missing FROM zones "
                           "GROUP BY name ORDER BY n DESC"),
                     0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    assert_true(cJSON_IsArray(j) && cJSON_GetArraySize(j) > 5);
    cJSON *first = cJSON_GetArrayItem(j, 0);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(first, "n")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(first, "missing")));
    assert_true(jnum(first, "x") == 1.5);
    cJSON_Delete(j);
    assert_int_equal(query(demo_cap, "", "SELECT 'a,b' AS s, 42 AS n"), 0);
    assert_non_null(strstr(out, "(1 row)"));
    assert_int_equal(query(demo_cap, "--format csv", "SELECT 'a,\\\"b' AS s"), 0);
    assert_string_equal(out, "s\n\"a,\"\"b\"\n");
    /* standard input */
    snprintf(cmd, sizeof cmd, "echo 'SELECT count(*) FROM frames' | %s query %s - --format csv",
             tu_mprof_bin(), demo_cap);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_int_equal(strncmp(out, "count(*)\n", 9), 0);
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *sql, *says;
    } bad[] = {
        {"SELEC * FROM zones", "syntax error"},
        {"SELECT * FROM nope", "the tables are"},
        {"SELECT nope FROM zones", "no such column"},
        {"DELETE FROM zone_rows", "read-only"},
        {"DROP TABLE zone_rows", "read-only"},
        {"CREATE TABLE x(a)", "read-only"},
        {"ATTACH '/tmp/mprof_attack.db' AS x", "ATTACH"},
        {"SELECT 1; SELECT 2", "one statement"},
        {"", "no statement"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = query(demo_cap, "", bad[i].sql);
        if (rc != 2 || !strstr(out, bad[i].says))
            fail_msg("'%s': exit %d, '%s'", bad[i].sql, rc, out);
    }
    assert_int_not_equal(access("/tmp/mprof_attack.db", F_OK), 0);
    assert_int_equal(query("/nonexistent/x.mprof", "", "SELECT 1"), 3);
    assert_non_null(strstr(out, "x.mprof"));
    assert_int_equal(query(demo_cap, "--format yaml", "SELECT 1"), 2);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s query %s 2>&1", tu_mprof_bin(), demo_cap);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s query --help", tu_mprof_bin());
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "gpu_zones"));
    /* a file that is no capture */
    char junk[512];
    snprintf(junk, sizeof junk, "%s", tu_temp_path("q_junk.mprof"));
    FILE *f = fopen(junk, "w");
    assert_non_null(f);
    fputs("not a capture at all", f);
    fclose(f);
    assert_int_equal(query(junk, "", "SELECT 1"), 3);
    char junk_db[600];
    snprintf(junk_db, sizeof junk_db, "%s.qdb", junk);
    assert_int_not_equal(access(junk_db, F_OK), 0); /* a failed build leaves no database */
}

static time_t mtime_of(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? st.st_mtime : 0;
}

static void test_cache_and_save(void **state)
{
    (void)state;
    char qdb[600], saved[512], cmd[2048];
    snprintf(qdb, sizeof qdb, "%s.qdb", demo_cap);
    assert_int_equal(query(demo_cap, "", "SELECT 1"), 0);
    struct stat a, b;
    assert_int_equal(stat(qdb, &a), 0);
    assert_int_equal(query(demo_cap, "", "SELECT 1"), 0);
    assert_int_equal(stat(qdb, &b), 0);
    assert_true(a.st_ino == b.st_ino); /* reused, not rebuilt (a rebuild renames a new file) */
    /* the capture changes (its time): rebuilt */
    struct utimbuf ut = {.actime = mtime_of(demo_cap) + 10, .modtime = mtime_of(demo_cap) + 10};
    assert_int_equal(utime(demo_cap, &ut), 0);
    assert_int_equal(query(demo_cap, "", "SELECT 1"), 0);
    assert_int_equal(stat(qdb, &b), 0);
    assert_true(a.st_ino != b.st_ino);
    /* --save: a file sqlite3 opens, with the same rows */
    snprintf(saved, sizeof saved, "%s", tu_temp_path("q_saved.db"));
    snprintf(cmd, sizeof cmd, "%s query %s --save %s 2>&1", tu_mprof_bin(), demo_cap, saved);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    int64_t zones = scalar(demo_cap, "SELECT count(*) FROM zones");
    snprintf(cmd, sizeof cmd, "sqlite3 %s 'SELECT count(*) FROM zones' 2>&1", saved);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_int_equal(strtoll(out, NULL, 10), zones);
    assert_true(zones > 0);
    /* the copy is an ordinary database: it can be changed */
    snprintf(cmd, sizeof cmd, "sqlite3 %s 'DELETE FROM zone_rows; SELECT count(*) FROM zones' 2>&1",
             saved);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_int_equal(strtoll(out, NULL, 10), 0);
    snprintf(cmd, sizeof cmd, "%s query %s --save %s 2>&1", tu_mprof_bin(), demo_cap, demo_cap);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
}

/* The database is the same whatever the threads that decode the capture (--jobs). */
static void test_jobs(void **state)
{
    (void)state;
    static char dump[2][1 << 22];
    for (int k = 0; k < 2; k++) {
        char saved[512], cmd[2048];
        snprintf(saved, sizeof saved, "%s", tu_temp_path(k ? "q_jobs3.db" : "q_jobs1.db"));
        unlink(saved);
        snprintf(cmd, sizeof cmd, "%s query --rebuild --jobs %d %s --save %s 2>&1", tu_mprof_bin(),
                 k ? 3 : 1, engine_cap, saved);
        assert_int_equal(tu_run(cmd, out, sizeof out), 0);
        snprintf(cmd, sizeof cmd, "sqlite3 %s .dump 2>&1", saved);
        assert_int_equal(tu_run(cmd, dump[k], sizeof dump[k]), 0);
    }
    assert_true(strlen(dump[0]) > 1000);
    assert_string_equal(dump[0], dump[1]);
    assert_int_equal(query(engine_cap, "--jobs x", "SELECT 1"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo),
        cmocka_unit_test(test_engine),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_cache_and_save),
        cmocka_unit_test(test_jobs),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
