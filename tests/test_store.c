/*
 * test_store.c - the run store (src/store/) against both backends: SQLite in a temporary file and
 * a real PostgreSQL server that the ctest fixture store_pg starts (tests/pg_cluster.sh; its state
 * file is in MPROF_TEST_PG_STATE). Every backend test runs once per backend on a fresh database.
 *
 * Library level: URL parsing, schema creation and migration from version 1, a schema newer than
 * the binary refused, runs round-tripped exactly, the rolling baseline's filters and order, and
 * tampered rows reported instead of crashing. End to end with the real mprof: two `mprof store
 * add` loops writing at once lose no run; `mprof ci --store --baseline store:last=N` records runs
 * and gates against the stored ones; an unreachable store or a too-new schema still leaves
 * ci-report.json and exits 4; `mprof history --json/--html`, the page opened in headless
 * Chromium (required when CI=true, like test_view).
 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "store/store.h"
#include "store/store_json.h"
#include "util/tool.h"

#include <cjson/cJSON.h>
#include <libpq-fe.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUT_SIZE (1 << 20)
static char *out;

typedef enum { BE_SQLITE = 1, BE_PG = 2 } backend;
static backend be_sqlite = BE_SQLITE, be_pg = BE_PG;

/* ---- databases ---------------------------------------------------------------------------- */

static char pg_socket[1100];

static int load_pg_state(void)
{
    if (pg_socket[0])
        return 0;
    const char *state = getenv("MPROF_TEST_PG_STATE");
    FILE *f = state ? fopen(state, "r") : NULL;
    if (!f)
        return -1;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "socketdir=", 10) == 0)
            snprintf(pg_socket, sizeof pg_socket, "%s", line + 10);
    }
    fclose(f);
    return pg_socket[0] ? 0 : -1;
}

static void pg_url(const char *db, char *url, size_t n)
{
    snprintf(url, n, "postgresql:///%s?host=%.900s&port=5432&user=mprof", db, pg_socket);
}

/* A fresh, empty store of the backend; its URL in url. */
static void fresh_store(backend b, char *url, size_t n)
{
    if (b == BE_SQLITE) {
        snprintf(url, n, "sqlite:%s", tu_temp_path("store.db"));
        return;
    }
    if (load_pg_state() != 0)
        fail_msg("no PostgreSQL: run through ctest, whose fixture store_pg starts one "
                 "(MPROF_TEST_PG_STATE)");
    static unsigned counter;
    char db[64], admin[1024], sql[128];
    snprintf(db, sizeof db, "mprof_t_%ld_%u", (long)getpid(), counter++);
    pg_url("postgres", admin, sizeof admin);
    PGconn *c = PQconnectdb(admin + 0);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("CREATE DATABASE failed: %s", PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    pg_url(db, url, n);
}

/* Runs sql directly on the store's database (tampering the tests need); returns the first cell
 * of the result as an integer, or -1. */
static long raw(const char *url, const char *sql)
{
    long v = -1;
    if (strncmp(url, "sqlite:", 7) == 0) {
        sqlite3 *db;
        assert_int_equal(sqlite3_open(url + 7, &db), SQLITE_OK);
        sqlite3_stmt *st;
        const char *tail = sql;
        while (tail && *tail) {
            assert_int_equal(sqlite3_prepare_v2(db, tail, -1, &st, &tail), SQLITE_OK);
            if (!st)
                break;
            int rc = sqlite3_step(st);
            if (rc == SQLITE_ROW)
                v = sqlite3_column_int(st, 0);
            else
                assert_int_equal(rc, SQLITE_DONE);
            sqlite3_finalize(st);
        }
        sqlite3_close(db);
        return v;
    }
    PGconn *c = PQconnectdb(url);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PGresult *r = PQexec(c, sql);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    if (s == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
        v = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return v;
}

/* ---- synthetic runs ------------------------------------------------------------------------ */

static double *seq(size_t n, double base, double step)
{
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = base + step * (double)(i % 7) + 1e-9 * (double)i;
    return v;
}

static void make_run(mprof_store_run *r, const char *host, const char *bt, const char *verdict,
                     const char *start, double base_ms)
{
    memset(r, 0, sizeof *r);
    r->git_sha = strdup("0123456789abcdef0123456789abcdef01234567");
    r->branch = strdup("main");
    r->command = strdup("./game --frames 50 'it''s'; DROP TABLE mprof_runs; --");
    r->host = strdup(host);
    r->cpu = strdup("Test CPU");
    r->build_type = strdup(bt);
    r->start_time = strdup(start);
    r->verdict = strdup(verdict);
    r->artifact_path = strdup("Saved/ci-capture.mprof");
    r->artifact_bytes = 123456;
    r->n_reps = 2;
    r->reps = calloc(2, sizeof *r->reps);
    for (size_t k = 0; k < 2; k++) {
        mprof_frames_run *p = &r->reps[k];
        p->n_frames = 40 + k * 10;
        p->frames_ms = seq(p->n_frames, base_ms, 0.25);
        p->on_cpu_ms = seq(p->n_frames, base_ms * 0.8, 0.1);
        p->off_cpu_ms = seq(p->n_frames, base_ms * 0.2, 0.05);
        p->n_zones = 2;
        p->zones = calloc(2, sizeof *p->zones);
        p->zones[0].name = strdup("Physics \"step\" <b>");
        p->zones[0].self_ms = seq(p->n_frames, base_ms * 0.6, 0.2);
        p->zones[0].self_total_ms = 100;
        p->zones[1].name = strdup("Render");
        p->zones[1].self_ms = seq(p->n_frames, base_ms * 0.1, 0.01);
        p->zones[1].self_total_ms = 10;
    }
    assert_int_equal(mprof__store_summarise(r), 0);
}

/* Repetition k of run as the frame export the store writes for the gate. */
static char *export_text(const mprof_store_run *run, size_t k)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(mprof__store_write_export(run, k, f), 0);
    assert_int_equal(fclose(f), 0);
    return text;
}

static mprof_store *open_ok(const char *url)
{
    char err[2048];
    mprof_store_result rc;
    mprof_store *s = mprof__store_open(url, &rc, err, sizeof err);
    if (!s)
        fail_msg("open %s: %s", url, err);
    return s;
}

static void add_ok(mprof_store *s, mprof_store_run *r)
{
    char err[2048];
    if (mprof__store_add(s, r, err, sizeof err) != MPROF_STORE_OK)
        fail_msg("add: %s", err);
    assert_true(r->id > 0);
}

/* ---- library tests ------------------------------------------------------------------------- */

static void test_url(void **state)
{
    (void)state;
    mprof_store_url u;
    char err[1024];
    assert_int_equal(mprof__store_parse_url("sqlite:runs.db", &u, err, sizeof err), MPROF_STORE_OK);
    assert_int_equal(u.kind, MPROF_STORE_KIND_SQLITE);
    assert_string_equal(u.target, "runs.db");
    assert_int_equal(mprof__store_parse_url("sqlite:///var/lib/x.db", &u, err, sizeof err),
                     MPROF_STORE_OK);
    assert_string_equal(u.target, "/var/lib/x.db");
    assert_int_equal(mprof__store_parse_url("postgresql://ci:s3cret@db.example:5433/perf?"
                                            "sslmode=require", &u, err, sizeof err),
                     MPROF_STORE_OK);
    assert_int_equal(u.kind, MPROF_STORE_KIND_POSTGRESQL);
    assert_null(strstr(u.display, "s3cret"));
    assert_non_null(strstr(u.display, "ci:***@db.example"));
    assert_int_equal(mprof__store_parse_url("postgres:///perf?host=/run/pg&password=hunter2", &u,
                                            err, sizeof err), MPROF_STORE_OK);
    assert_null(strstr(u.display, "hunter2"));

    const char *bad[] = {"", "sqlite:", "sqlite://host/x.db", "sqlite::memory:", "mysql://x/y",
                         "runs.db", "postgresql://h/db?nosuchoption=1", "sqlite:a\nb",
                         "postgresql://[::1/db"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(mprof__store_parse_url(bad[i], &u, err, sizeof err), MPROF_STORE_BAD_URL);
        assert_true(strlen(err) > 10);
    }
    mprof__store_parse_url("mysql://x/y", &u, err, sizeof err);
    assert_non_null(strstr(err, "unknown store URL scheme 'mysql'"));
    assert_non_null(strstr(err, "sqlite:PATH"));
    mprof__store_parse_url("postgresql://u:pw@h/db?nosuchoption=1", &u, err, sizeof err);
    assert_non_null(strstr(err, "nosuchoption"));
    assert_null(strstr(err, ":pw@"));
    assert_int_equal(mprof__store_open("sqlite:/nonexistent-dir/x.db", NULL, err, sizeof err) ==
                         NULL, 1);
    assert_non_null(strstr(err, "/nonexistent-dir/x.db"));
}

static void test_roundtrip(void **state)
{
    backend b = *(backend *)*state;
    char url[1024], err[2048];
    fresh_store(b, url, sizeof url);
    mprof_store *s = open_ok(url);
    assert_int_equal(mprof__store_found_version(s), 0);
    mprof_store_run in;
    make_run(&in, "ci-7", "Release", "pass", "2026-12-01T10:00:00.000Z", 16.5);
    add_ok(s, &in);
    mprof__store_close(s);

    s = open_ok(url);
    assert_int_equal(mprof__store_found_version(s), MPROF_STORE_SCHEMA_VERSION);
    mprof_store_run *runs;
    size_t n;
    assert_int_equal(mprof__store_baseline(s, "ci-7", "Release", 5, &runs, &n, err, sizeof err),
                     MPROF_STORE_OK);
    assert_int_equal(n, 1);
    mprof_store_run *o = &runs[0];
    assert_int_equal(o->id, in.id);
    assert_string_equal(o->command, in.command); /* quotes and SQL travel as data */
    assert_string_equal(o->git_sha, in.git_sha);
    assert_string_equal(o->branch, "main");
    assert_string_equal(o->cpu, "Test CPU");
    assert_string_equal(o->start_time, in.start_time);
    assert_non_null(o->recorded_at);
    assert_int_equal(o->artifact_bytes, 123456);
    assert_int_equal(o->frame_count, 90);
    assert_true(o->p95_ms == in.p95_ms && o->p50_ms == in.p50_ms && o->mean_ms == in.mean_ms);
    assert_true(o->have_cpu);
    assert_true(fabs(o->on_cpu_mean_ms - in.on_cpu_mean_ms) < 1e-12);
    assert_int_equal(o->n_reps, 2);
    for (size_t k = 0; k < 2; k++) {
        assert_int_equal(o->reps[k].n_frames, in.reps[k].n_frames);
        for (size_t f = 0; f < o->reps[k].n_frames; f++) {
            assert_true(fabs(o->reps[k].frames_ms[f] - in.reps[k].frames_ms[f]) < 1e-9);
            assert_true(fabs(o->reps[k].off_cpu_ms[f] - in.reps[k].off_cpu_ms[f]) < 1e-9);
        }
        assert_int_equal(o->reps[k].n_zones, 2);
        assert_string_equal(o->reps[k].zones[0].name, "Physics \"step\" <b>");
        assert_true(fabs(o->reps[k].zones[1].self_ms[3] - in.reps[k].zones[1].self_ms[3]) < 1e-9);
    }
    /* The stored run becomes a frame export the gate accepts. */
    char *text = export_text(o, 1);
    assert_non_null(text);
    mprof_store_run back;
    assert_int_equal(mprof__store_parse_file(text, strlen(text), "x", &back, err, sizeof err),
                     MPROF_STORE_OK);
    assert_int_equal(back.frame_count, 50);
    assert_string_equal(back.host, "ci-7");
    assert_true(back.have_cpu);
    mprof__store_run_clear(&back);
    free(text);
    mprof__store_runs_free(runs, n);

    /* Summaries: no per-frame data, the stored repetition count. */
    mprof_store_filter f = {.last = 10};
    assert_int_equal(mprof__store_query(s, &f, &runs, &n, err, sizeof err), MPROF_STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(runs[0].n_reps, 0);
    assert_int_equal(runs[0].n_reps_stored, 2);
    mprof__store_runs_free(runs, n);
    mprof__store_close(s);
    mprof__store_run_clear(&in);
}

static void test_migration_and_newer_schema(void **state)
{
    backend b = *(backend *)*state;
    char url[1024], err[2048];
    fresh_store(b, url, sizeof url);
    mprof__store_close(open_ok(url));
    /* Back to version 1: the migrations to 2 and 3 must run again on the next open. */
    raw(url, "DROP INDEX mprof_runs_machine");
    raw(url, "DROP INDEX mprof_runs_time");
    raw(url, "DROP INDEX mprof_runs_uid");
    raw(url, "ALTER TABLE mprof_runs DROP COLUMN run_uid");
    raw(url, "UPDATE mprof_schema SET version = 1");
    mprof_store *s = open_ok(url);
    assert_int_equal(mprof__store_found_version(s), 1);
    mprof__store_close(s);
    assert_int_equal(raw(url, "SELECT MAX(version) FROM mprof_schema"), 3);
    assert_int_equal(raw(url, b == BE_SQLITE ? "SELECT COUNT(*) FROM sqlite_master WHERE "
                                               "type = 'index' AND name = 'mprof_runs_machine'"
                                             : "SELECT COUNT(*) FROM pg_indexes WHERE "
                                               "indexname = 'mprof_runs_machine'"),
                     1);

    raw(url, "UPDATE mprof_schema SET version = 99");
    mprof_store_result rc;
    assert_null(mprof__store_open(url, &rc, err, sizeof err));
    assert_int_equal(rc, MPROF_STORE_SCHEMA_TOO_NEW);
    assert_non_null(strstr(err, "schema version 99, newer than this mprof understands (3)"));
    assert_int_equal(raw(url, "SELECT MAX(version) FROM mprof_schema"), 99); /* left alone */

    /* The commands say so and exit 4. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s history --store '%s' 2>&1", tu_mprof_bin(), url);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 4);
    assert_non_null(strstr(out, "newer than this mprof"));
}

/* One run per run id: a run added again with its uid is not stored twice (the retry of a write
 * whose commit was in doubt, or the same CI report added again), a run without one gets a fresh
 * one, and runs stored before schema 3 (no uid) stay. */
static void test_run_stored_once(void **state)
{
    backend b = *(backend *)*state;
    char url[1024];
    fresh_store(b, url, sizeof url);
    mprof_store *s = open_ok(url);
    mprof_store_run a, c;
    make_run(&a, "ci-1", "Release", "pass", "2026-12-01T10:00:00.000Z", 16.5);
    add_ok(s, &a);
    assert_int_equal(a.added, MPROF_STORE_ADDED_NEW);
    assert_non_null(a.uid);
    assert_true(tool_is_random_id(a.uid));
    assert_string_equal(mprof__store_added_note(&a), "");
    int64_t first = a.id;
    a.id = 0;
    add_ok(s, &a);
    assert_int_equal(a.id, first);
    assert_int_equal(a.added, MPROF_STORE_ADDED_ALREADY);
    assert_non_null(strstr(mprof__store_added_note(&a), "not stored again"));
    make_run(&c, "ci-1", "Release", "pass", "2026-12-01T10:00:00.000Z", 16.5);
    add_ok(s, &c);
    assert_true(c.id != first);
    assert_string_not_equal(c.uid, a.uid);
    mprof__store_close(s);
    assert_int_equal(raw(url, "SELECT COUNT(*) FROM mprof_runs"), 2);
    /* A run stored by an older mprof has no uid; several may. */
    raw(url, "UPDATE mprof_runs SET run_uid = NULL");
    s = open_ok(url);
    mprof_store_run d;
    make_run(&d, "ci-1", "Release", "pass", "2026-12-01T10:00:00.000Z", 16.5);
    add_ok(s, &d);
    mprof__store_close(s);
    assert_int_equal(raw(url, "SELECT COUNT(*) FROM mprof_runs"), 3);
    assert_int_equal(raw(url, "SELECT COUNT(*) FROM mprof_runs WHERE run_uid IS NULL"), 2);
    mprof__store_run_clear(&a);
    mprof__store_run_clear(&c);
    mprof__store_run_clear(&d);
}

static void test_baseline_filters(void **state)
{
    backend b = *(backend *)*state;
    char url[1024], err[2048];
    fresh_store(b, url, sizeof url);
    mprof_store *s = open_ok(url);
    struct {
        const char *host, *bt, *verdict, *start;
    } rows[] = {
        {"a", "Release", "no-baseline", "2026-12-01T10:00:00.000Z"},
        {"a", "Release", "pass", "2026-12-01T11:00:00.000Z"},
        {"a", "Release", "regression", "2026-12-01T12:00:00.000Z"},
        {"a", "Debug", "pass", "2026-12-01T13:00:00.000Z"},
        {"b", "Release", "pass", "2026-12-01T14:00:00.000Z"},
        {"a", "Release", "pass", "2026-12-01T15:00:00.000Z"},
        {"a", "Release", "failed", "2026-12-01T16:00:00.000Z"},
        {"a", "Release", "inconclusive", "2026-12-01T17:00:00.000Z"},
    };
    int64_t ids[8];
    for (size_t i = 0; i < 8; i++) {
        mprof_store_run r;
        make_run(&r, rows[i].host, rows[i].bt, rows[i].verdict, rows[i].start, 10.0 + (double)i);
        add_ok(s, &r);
        ids[i] = r.id;
        mprof__store_run_clear(&r);
    }
    mprof_store_run *runs;
    size_t n;
    assert_int_equal(mprof__store_baseline(s, "a", "Release", 2, &runs, &n, err, sizeof err),
                     MPROF_STORE_OK);
    assert_int_equal(n, 2); /* newest passing first: 15:00 then 11:00 */
    assert_int_equal(runs[0].id, ids[5]);
    assert_int_equal(runs[1].id, ids[1]);
    mprof__store_runs_free(runs, n);
    assert_int_equal(mprof__store_baseline(s, "a", "Release", 10, &runs, &n, err, sizeof err),
                     MPROF_STORE_OK);
    assert_int_equal(n, 3);
    assert_int_equal(runs[2].id, ids[0]); /* no-baseline counts as passing */
    mprof__store_runs_free(runs, n);
    assert_int_equal(mprof__store_baseline(s, "c", "Release", 10, &runs, &n, err, sizeof err),
                     MPROF_STORE_OK);
    assert_int_equal(n, 0);
    assert_null(runs);
    mprof_store_filter f = {.host = "b"};
    assert_int_equal(mprof__store_query(s, &f, &runs, &n, err, sizeof err), MPROF_STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(runs[0].id, ids[4]);
    mprof__store_runs_free(runs, n);
    f = (mprof_store_filter){.last = 3, .with_zone_means = 1};
    assert_int_equal(mprof__store_query(s, &f, &runs, &n, err, sizeof err), MPROF_STORE_OK);
    assert_int_equal(n, 3);
    assert_int_equal(runs[0].id, ids[7]);
    assert_string_equal(runs[0].verdict, "inconclusive");
    assert_int_equal(runs[0].reps[0].n_zones, 2);
    assert_true(runs[0].reps[0].zones[0].self_mean_ms > runs[0].reps[0].zones[1].self_mean_ms);
    mprof__store_runs_free(runs, n);
    mprof__store_close(s);
}

static void test_tampered_rows(void **state)
{
    backend b = *(backend *)*state;
    char url[1024], err[2048];
    fresh_store(b, url, sizeof url);
    mprof_store *s = open_ok(url);
    mprof_store_run r;
    make_run(&r, "h", "Release", "pass", "2026-12-01T10:00:00.000Z", 5);
    add_ok(s, &r);
    mprof__store_run_clear(&r);
    const char *bad[] = {
        "UPDATE mprof_reps SET frames_ms = '[1, 2' WHERE idx = 0",
        "UPDATE mprof_reps SET frames_ms = '[1, -2]' WHERE idx = 0",
        "UPDATE mprof_reps SET frames_ms = '{\"a\": 1}' WHERE idx = 0",
        "UPDATE mprof_reps SET on_cpu_ms = NULL WHERE idx = 1",
        "UPDATE mprof_zones SET self_ms = '[1e999]' WHERE idx = 0",
        "UPDATE mprof_runs SET n_reps = 3",
        "UPDATE mprof_runs SET frame_count = -5",
    };
    mprof_store_run *runs;
    size_t n;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mprof__store_close(s);
        fresh_store(b, url, sizeof url);
        s = open_ok(url);
        make_run(&r, "h", "Release", "pass", "2026-12-01T10:00:00.000Z", 5);
        add_ok(s, &r);
        mprof__store_run_clear(&r);
        raw(url, bad[i]);
        err[0] = '\0';
        mprof_store_result rc = mprof__store_baseline(s, "h", "Release", 5, &runs, &n, err,
                                                      sizeof err);
        if (rc == MPROF_STORE_OK)
            fail_msg("tampering '%s' was not noticed", bad[i]);
        assert_int_equal(rc, MPROF_STORE_BAD_ROW);
        assert_null(runs);
        assert_non_null(strstr(err, "run"));
    }
    if (b == BE_SQLITE) {
        /* SQLite keeps any type in any column: text where a number belongs. */
        raw(url, "UPDATE mprof_runs SET frame_count = 90, p95_ms = 'fast'");
        mprof_store_filter f = {0};
        assert_int_equal(mprof__store_query(s, &f, &runs, &n, err, sizeof err),
                         MPROF_STORE_BAD_ROW);
        assert_non_null(strstr(err, "percentile"));
    }
    mprof__store_close(s);
}

/* ---- end to end ---------------------------------------------------------------------------- */

/* A frame export file of a synthetic run (repetition 1). */
static const char *write_export(const char *host, double base_ms)
{
    mprof_store_run r;
    make_run(&r, host, "Release", "pass", "2026-12-01T10:00:00.000Z", base_ms);
    char *text = export_text(&r, 0);
    assert_non_null(text);
    const char *path = tu_temp_path("export.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
    mprof__store_run_clear(&r);
    return path;
}

static void test_concurrent_add(void **state)
{
    backend b = *(backend *)*state;
    char url[1024], cmd[4096];
    fresh_store(b, url, sizeof url);
    const char *exp = write_export("writer", 8);
    /* Two writers from the first use on: both create-or-migrate, then 12 adds each. */
    snprintf(cmd, sizeof cmd,
             "w() { for i in 1 2 3 4 5 6 7 8 9 10 11 12; do %s store add '%s' --store '%s' "
             "--branch w$1 >/dev/null || echo FAIL$1; done; }; w 1 & w 2 & wait",
             tu_mprof_bin(), exp, url);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 0);
    assert_null(strstr(out, "FAIL"));
    char err[2048];
    mprof_store *s = open_ok(url);
    mprof_store_filter f = {.last = 100};
    mprof_store_run *runs;
    size_t n;
    assert_int_equal(mprof__store_query(s, &f, &runs, &n, err, sizeof err), MPROF_STORE_OK);
    assert_int_equal(n, 24);
    size_t w1 = 0;
    for (size_t i = 0; i < n; i++) {
        w1 += strcmp(runs[i].branch, "w1") == 0;
        for (size_t k = 0; k < i; k++)
            assert_true(runs[i].id != runs[k].id);
        assert_int_equal(runs[i].frame_count, 40);
        assert_string_equal(runs[i].verdict, "no-baseline");
    }
    assert_int_equal(w1, 12);
    mprof__store_runs_free(runs, n);
    mprof__store_close(s);
}

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    return cJSON_Parse(buf);
}

static int run_ci(const char *dir, const char *extra, const char *url)
{
    /* A port of its own per run (a taken one only makes ci fall back to the in-process file). */
    static unsigned k;
    unsigned port = 20000 + (unsigned)(getpid() % 20000) + 7 * k++;
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "MPROF_BUILD_TYPE=StoreTest MPROF_GIT_SHA=%s %s ci --output-dir %s --port %u "
             "--drain-seconds 2 --store '%s' %s -- %s ci --self-test-workload --frames 400 2>&1",
             dir[strlen(dir) - 1] == '1' ? "1111111111111111111111111111111111111111"
                                         : "2222222222222222222222222222222222222222",
             tu_mprof_bin(), dir, port % 65536, url, extra, tu_mprof_bin());
    return tu_run(cmd, out, OUT_SIZE);
}

static void test_ci_store(void **state)
{
    backend b = *(backend *)*state;
    char url[1024], dir[2][600], path[1400];
    fresh_store(b, url, sizeof url);
    for (int i = 0; i < 2; i++) {
        snprintf(dir[i], sizeof dir[i], "%s%d", tu_temp_path("ci"), i + 1);
        int code = run_ci(dir[i], "--baseline store:last=3", url);
        snprintf(path, sizeof path, "%s/ci-report.json", dir[i]);
        cJSON *rep = read_json(path);
        assert_non_null(rep);
        const cJSON *st = cJSON_GetObjectItem(rep, "store");
        assert_non_null(st);
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(st, "error")));
        assert_int_equal((int)cJSON_GetObjectItem(st, "runId")->valuedouble, i + 1);
        const cJSON *ids = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "baseline"), "runIds");
        assert_int_equal(cJSON_GetArraySize(ids), i);
        const char *verdict = cJSON_GetObjectItem(rep, "verdict")->valuestring;
        if (i == 0) {
            assert_int_equal(code, 0);
            assert_string_equal(verdict, "no-baseline");
        } else {
            /* The gate ran against the stored run (its verdict depends on the machine's load,
             * so only that it compared is asserted). */
            assert_int_equal((int)cJSON_GetArrayItem(ids, 0)->valuedouble, 1);
            assert_true(strcmp(verdict, "pass") == 0 || strcmp(verdict, "inconclusive") == 0 ||
                        strcmp(verdict, "regression") == 0);
            assert_true(code == 0 || code == 1);
            snprintf(path, sizeof path, "%s/gate-report.json", dir[i]);
            cJSON *g = read_json(path);
            assert_non_null(g);
            const cJSON *base = cJSON_GetObjectItem(g, "baseline");
            /* One export per stored repetition (one, or --runs of them on the gate branch). */
            assert_true(cJSON_GetObjectItem(base, "runs")->valuedouble >= 1);
            assert_string_equal(cJSON_GetObjectItem(base, "gitSha")->valuestring,
                                "1111111111111111111111111111111111111111");
            const cJSON *files = cJSON_GetObjectItem(base, "files");
            assert_non_null(strstr(cJSON_GetArrayItem(files, 0)->valuestring,
                                   "/store-baseline/run000001-001.json"));
            cJSON_Delete(g);
        }
        cJSON_Delete(rep);
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s history --store '%s' --json --build-type StoreTest",
             tu_mprof_bin(), url);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 0);
    cJSON *h = cJSON_Parse(out);
    assert_non_null(h);
    const cJSON *runs = cJSON_GetObjectItem(h, "runs");
    assert_int_equal(cJSON_GetArraySize(runs), 2);
    const cJSON *newest = cJSON_GetArrayItem(runs, 0);
    assert_int_equal((int)cJSON_GetObjectItem(newest, "id")->valuedouble, 2);
    assert_string_equal(cJSON_GetObjectItem(newest, "gitSha")->valuestring,
                        "2222222222222222222222222222222222222222");
    assert_true(cJSON_IsString(cJSON_GetObjectItem(newest, "host")));
    assert_true(cJSON_IsString(cJSON_GetObjectItem(newest, "startTime")));
    assert_true(cJSON_GetObjectItem(newest, "p95FrameTimeMs")->valuedouble > 0);
    assert_true(cJSON_GetObjectItem(newest, "artifactBytes")->valuedouble > 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 1), "verdict")->valuestring,
                        "no-baseline");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(newest,
                                                                                   "zones"),
                                                               0),
                                            "name")
                            ->valuestring,
                        "Physics");
    cJSON_Delete(h);
    /* Another build type has no history. */
    snprintf(cmd, sizeof cmd, "%s history --store '%s' --json --build-type Other", tu_mprof_bin(),
             url);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 0);
    assert_non_null(strstr(out, "\"runs\": []"));
}

static void test_ci_store_failures(void **state)
{
    backend b = *(backend *)*state;
    char url[1024], dir[600], path[1400];
    if (b == BE_PG)
        snprintf(url, sizeof url, "postgresql:///none?host=/nonexistent-mprof-dir&port=5999");
    else
        snprintf(url, sizeof url, "sqlite:/nonexistent-mprof-dir/runs.db");
    for (int with_baseline = 0; with_baseline < 2; with_baseline++) {
        snprintf(dir, sizeof dir, "%s", tu_temp_path("cifail1"));
        int code = run_ci(dir, with_baseline ? "--baseline store" : "", url);
        assert_int_equal(code, 4);
        assert_non_null(strstr(out, "the run was not stored"));
        snprintf(path, sizeof path, "%s/ci-report.json", dir);
        cJSON *rep = read_json(path);
        assert_non_null(rep);
        assert_string_equal(cJSON_GetObjectItem(rep, "verdict")->valuestring, "no-baseline");
        assert_int_equal((int)cJSON_GetObjectItem(rep, "exitCode")->valuedouble, 4);
        const cJSON *err = cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "store"), "error");
        assert_true(cJSON_IsString(err));
        assert_non_null(strstr(err->valuestring, b == BE_PG ? "cannot connect" : "cannot open"));
        if (with_baseline)
            assert_non_null(strstr(err->valuestring, "no baseline from the store"));
        cJSON_Delete(rep);
    }
    /* A store whose schema is newer than this mprof. */
    fresh_store(b, url, sizeof url);
    mprof__store_close(open_ok(url));
    raw(url, "UPDATE mprof_schema SET version = 7");
    snprintf(dir, sizeof dir, "%s", tu_temp_path("cifail1"));
    assert_int_equal(run_ci(dir, "", url), 4);
    snprintf(path, sizeof path, "%s/ci-report.json", dir);
    cJSON *rep = read_json(path);
    assert_non_null(rep);
    const cJSON *err = cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "store"), "error");
    assert_non_null(strstr(err->valuestring, "schema version 7, newer than this mprof"));
    cJSON_Delete(rep);
    /* Bad URLs are usage errors, before anything runs. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s ci --store mysql://x -- true 2>&1", tu_mprof_bin());
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 2);
    assert_non_null(strstr(out, "unknown store URL scheme 'mysql'"));
    snprintf(cmd, sizeof cmd, "%s ci --baseline store -- true 2>&1", tu_mprof_bin());
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 2);
    assert_non_null(strstr(out, "needs --store"));
    snprintf(cmd, sizeof cmd, "%s ci --store sqlite:x.db --baseline store:last=0 -- true 2>&1",
             tu_mprof_bin());
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 2);
}

static void test_store_add_cli(void **state)
{
    (void)state;
    char url[1024], cmd[2048];
    fresh_store(BE_SQLITE, url, sizeof url);
    const char *bad = tu_temp_path("bad.json");
    FILE *f = fopen(bad, "w");
    fputs("{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [1, -1]}", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s store add %s --store '%s' 2>&1", tu_mprof_bin(), bad, url);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 3);
    assert_non_null(strstr(out, "frameTimesMs"));
    const char *exp = write_export("cli", 3);
    snprintf(cmd, sizeof cmd, "%s store add %s --store '%s' --verdict bogus 2>&1", tu_mprof_bin(),
             exp, url);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 2);
    snprintf(cmd, sizeof cmd, "%s store add %s --store '%s' --verdict regression", tu_mprof_bin(),
             exp, url);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 0);
    assert_non_null(strstr(out, "as run 1"));
    snprintf(cmd, sizeof cmd, "%s history --store '%s'", tu_mprof_bin(), url);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 0);
    assert_non_null(strstr(out, "regression"));
    assert_non_null(strstr(out, "cli"));

    /* A ci report of mprof ci --runs: the current side's exports are the repetitions, the
     * baseline side's are not stored. */
    const char *e2 = write_export("cli", 4), *e3 = write_export("cli", 5);
    const char *report = tu_temp_path("ci-report.json");
    f = fopen(report, "w");
    fprintf(f, "{\"schema\": \"mprof.ciReport.v1\", \"verdict\": \"pass\", \"gitSha\": \"abc\", "
            "\"command\": [\"./game\", \"a b\"], \"capture\": {\"path\": \"x.mprof\", \"bytes\": 99}, "
            "\"frameExport\": \"%s\", \"runs\": [{\"side\": \"baseline\", \"frameExport\": \"%s\"}, "
            "{\"side\": \"current\", \"frameExport\": \"%s\"}, {\"side\": \"current\", "
            "\"frameExport\": \"%s\"}]}", e3, exp, e2, e3);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s store add %s --store '%s'", tu_mprof_bin(), report, url);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 0);
    assert_non_null(strstr(out, "as run 2"));
    assert_non_null(strstr(out, "80 frames, 2 repetitions, verdict pass"));
    char err[2048];
    mprof_store *s = open_ok(url);
    mprof_store_run *runs;
    size_t n;
    assert_int_equal(mprof__store_baseline(s, "cli", "Release", 1, &runs, &n, err, sizeof err),
                     MPROF_STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(runs[0].n_reps, 2);
    assert_string_equal(runs[0].command, "./game 'a b'");
    assert_int_equal(runs[0].artifact_bytes, 99);
    assert_true(runs[0].reps[0].frames_ms[0] < runs[0].reps[1].frames_ms[0]); /* 4 ms, 5 ms */
    mprof__store_runs_free(runs, n);
    mprof__store_close(s);
}

/* ---- the HTML page in a browser ------------------------------------------------------------- */

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

static const char *status_attr(const char *name)
{
    static char val[1024];
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

static void test_history_html(void **state)
{
    (void)state;
    char url[1024], err[2048], cmd[4096];
    fresh_store(BE_SQLITE, url, sizeof url);
    mprof_store *s = open_ok(url);
    for (int i = 0; i < 4; i++) {
        mprof_store_run r;
        char start[64];
        snprintf(start, sizeof start, "2026-12-0%dT10:00:00.000Z", i + 1);
        make_run(&r, "h", "Release", i == 3 ? "regression" : "pass", start, 10 + i);
        add_ok(s, &r);
        mprof__store_run_clear(&r);
    }
    (void)err;
    mprof__store_close(s);
    const char *page = tu_temp_path("history.html");
    snprintf(cmd, sizeof cmd, "%s history --store '%s' --html %s", tu_mprof_bin(), url, page);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 0);
    FILE *f = fopen(page, "r");
    assert_non_null(f);
    size_t len = fread(out, 1, OUT_SIZE - 1, f);
    fclose(f);
    out[len] = '\0';
    assert_non_null(strstr(out, "Content-Security-Policy\" content=\"default-src 'none'"));
    assert_null(strstr(out, "http://"));
    assert_null(strstr(out, "https://"));
    assert_null(strstr(out, "<b>")); /* the zone name is escaped */
    assert_non_null(strstr(out, "Physics &quot;step&quot; &lt;b&gt;"));

    const char *browser = find_browser();
    if (!browser) {
        const char *ci = getenv("CI");
        if (ci && strcmp(ci, "true") == 0)
            fail_msg("no browser: install Debian's chromium (scripts/deps.txt)");
        print_message("no chromium found: browser check skipped\n");
        return;
    }
    char profile[] = "/tmp/mprof-chromium-XXXXXX";
    assert_non_null(mkdtemp(profile));
    snprintf(cmd, sizeof cmd,
             "timeout 120 %s --headless --no-sandbox --disable-gpu --no-first-run "
             "--disable-background-networking --disable-component-update --disable-sync "
             "--user-data-dir=%s --dump-dom 'file://%s' 2>/dev/null; rm -rf %s",
             browser, profile, page, profile);
    assert_int_equal(tu_run(cmd, out, OUT_SIZE), 0);
    assert_string_equal(status_attr("data-state"), "ready");
    assert_null(status_attr("data-errors"));
    assert_string_equal(status_attr("data-runs"), "4");
    /* p50 and p95, plus one chart per top zone (2): 4 points each. */
    assert_string_equal(status_attr("data-series"), "4");
    assert_string_equal(status_attr("data-points"), "16");
    assert_string_equal(status_attr("data-zone-charts"), "2");
    assert_string_equal(status_attr("data-visible-zone-charts"), "1");
}

static int setup(void **state)
{
    (void)state;
    out = malloc(OUT_SIZE);
    return out ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(out);
    return 0;
}

#define BOTH(fn)                                                                                   \
    cmocka_unit_test_prestate(fn, &be_sqlite), cmocka_unit_test_prestate(fn, &be_pg)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url),
        BOTH(test_roundtrip),
        BOTH(test_migration_and_newer_schema),
        BOTH(test_run_stored_once),
        BOTH(test_baseline_filters),
        BOTH(test_tampered_rows),
        BOTH(test_concurrent_add),
        BOTH(test_ci_store),
        BOTH(test_ci_store_failures),
        cmocka_unit_test(test_store_add_cli),
        cmocka_unit_test(test_history_html),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
