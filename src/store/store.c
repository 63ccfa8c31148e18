/*
 * store.c - the run store: URL parsing, the versioned schema and its migrations, adding a run in
 * one transaction, and reading runs back with every value checked. The SQL is the same for both
 * backends (store_sqlite.c, store_pg.c) except for three column types, which each backend names.
 *
 * Per-frame data (frame times, on/off-CPU times, a zone's self time per frame) is kept as a JSON
 * array of numbers in a TEXT column: both databases store it as it is, and reading it back goes
 * through one checked decoder (mprof__store_decode_array), which the fuzz target exercises.
 *
 * Contents: results and URLs; rows and decoders; schema and migrations; open/close; add; query.
 */
#define _POSIX_C_SOURCE 200809L

#include "store/store.h"

#include "analysis/percentile.h"
#include "store/store_backend.h"
#include "util/tool.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- results and URLs ------------------------------------------------------------------- */

const char *mprof__store_result_text(mprof_store_result r)
{
    switch (r) {
#define MPROF_STORE_TEXT(name, text)                                                               \
    case MPROF_STORE_##name:                                                                       \
        return text;
        MPROF_STORE_RESULTS(MPROF_STORE_TEXT)
#undef MPROF_STORE_TEXT
    }
    return "unknown result";
}

int mprof__store_verdict_is_passing(const char *verdict)
{
    return verdict && (strcmp(verdict, "pass") == 0 || strcmp(verdict, "no-baseline") == 0);
}

/* Copies url into out with the password of "scheme://user:password@host" and any
 * "password=..." parameter replaced by "***". */
static void redact(const char *url, char *out, size_t n)
{
    snprintf(out, n, "%s", url);
    char *auth = strstr(out, "://");
    if (auth) {
        auth += 3;
        size_t alen = strcspn(auth, "/?");
        char *at = NULL;
        for (char *c = auth; c < auth + alen; c++)
            if (*c == '@')
                at = c;
        char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
        if (colon && colon + 1 < at) {
            char rest[4096];
            snprintf(rest, sizeof rest, "%s", at);
            snprintf(colon + 1, n - (size_t)(colon + 1 - out), "***%s", rest);
        }
    }
    for (char *p = strstr(out, "password="); p; p = strstr(p + 1, "password=")) {
        char *v = p + 9;
        size_t vl = strcspn(v, "& ");
        if (vl == 0 || (vl == 3 && strncmp(v, "***", 3) == 0))
            continue;
        char rest[4096];
        snprintf(rest, sizeof rest, "%s", v + vl);
        snprintf(v, n - (size_t)(v - out), "***%s", rest);
    }
}

mprof_store_result mprof__store_parse_url(const char *url, mprof_store_url *out, char *err,
                                          size_t errlen)
{
    memset(out, 0, sizeof *out);
    static const char accepted[] =
        "use sqlite:PATH (a file, created when missing) or postgresql://[USER[:PASSWORD]@]HOST"
        "[:PORT]/DATABASE[?PARAM=VALUE...] (any libpq URI)";
    if (!url || !*url) {
        tool_seterr(err, errlen, "no store URL given: %s", accepted);
        return MPROF_STORE_BAD_URL;
    }
    size_t len = strlen(url);
    if (len >= sizeof out->target) {
        tool_seterr(err, errlen, "the store URL is %zu bytes long, more than the %zu accepted", len,
                    sizeof out->target - 1);
        return MPROF_STORE_BAD_URL;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)url[i];
        if (c < 0x20 || c == 0x7f) {
            tool_seterr(err, errlen, "the store URL holds a control character (byte %zu)", i);
            return MPROF_STORE_BAD_URL;
        }
    }
    if (strncmp(url, "sqlite:", 7) == 0) {
        const char *path = url + 7;
        if (strncmp(path, "//", 2) == 0) {
            if (path[2] != '/') {
                tool_seterr(err, errlen, "'%.200s': a sqlite URL names no host; write sqlite:PATH "
                            "or sqlite:///ABSOLUTE/PATH", url);
                return MPROF_STORE_BAD_URL;
            }
            path += 2;
        }
        if (!*path) {
            tool_seterr(err, errlen, "'%s' names no file: write sqlite:PATH, e.g. sqlite:runs.db",
                        url);
            return MPROF_STORE_BAD_URL;
        }
        if (strcmp(path, ":memory:") == 0 || strncmp(path, "file:", 5) == 0) {
            tool_seterr(err, errlen, "'%.200s': the store must be a plain file path (an in-memory "
                        "or URI database keeps nothing between runs)", url);
            return MPROF_STORE_BAD_URL;
        }
        out->kind = MPROF_STORE_KIND_SQLITE;
        snprintf(out->target, sizeof out->target, "%s", path);
        snprintf(out->display, sizeof out->display, "sqlite:%s", path);
        return MPROF_STORE_OK;
    }
    if (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0) {
        char msg[512];
        if (mprof__store_pg_check_uri(url, msg, sizeof msg) != 0) {
            char shown[4096];
            redact(url, shown, sizeof shown);
            tool_seterr(err, errlen, "bad PostgreSQL URL '%.300s': %s", shown, msg);
            return MPROF_STORE_BAD_URL;
        }
        out->kind = MPROF_STORE_KIND_POSTGRESQL;
        snprintf(out->target, sizeof out->target, "%s", url);
        redact(url, out->display, sizeof out->display);
        return MPROF_STORE_OK;
    }
    size_t scheme = strcspn(url, ":/");
    if (url[scheme] == ':')
        tool_seterr(err, errlen, "unknown store URL scheme '%.*s': %s",
                    (int)(scheme > 40 ? 40 : scheme), url, accepted);
    else
        tool_seterr(err, errlen, "a store URL needs a scheme: %s", accepted);
    return MPROF_STORE_BAD_URL;
}

/* ---- rows and decoders ------------------------------------------------------------------ */

void mprof__store_rows_clear(mprof_store_rows *rows)
{
    if (!rows)
        return;
    for (size_t i = 0; rows->cells && i < rows->n_rows * rows->n_cols; i++)
        free(rows->cells[i]);
    free(rows->cells);
    memset(rows, 0, sizeof *rows);
}

static const char *cell(const mprof_store_rows *r, size_t row, size_t col)
{
    return r->cells[row * r->n_cols + col];
}

/* Whether rows has a row number row of at least cols columns, the first check of every row
 * decoder; when not, a message about the kind of row (what: "run", "repetition") in err. */
static int row_fits(const mprof_store_rows *rows, size_t row, int cols, const char *what,
                    char *err, size_t errlen)
{
    if (row < rows->n_rows && rows->n_cols >= (size_t)cols)
        return 1;
    tool_seterr(err, errlen, "a %s row has %zu columns, %d expected", what, rows->n_cols, cols);
    return 0;
}

/* Parses a whole integer cell in [lo, hi]; NULL cells give dflt when allow_null. */
static int dec_int(const char *v, int allow_null, int64_t dflt, int64_t lo, int64_t hi,
                   int64_t *out)
{
    if (!v) {
        *out = dflt;
        return allow_null ? 0 : -1;
    }
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

/* Parses a whole finite number cell >= 0 (or any sign when signed_ok). */
static int dec_real(const char *v, int allow_null, double *out)
{
    if (!v) {
        *out = NAN;
        return allow_null ? 0 : -1;
    }
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (!*v || *end || !isfinite(d) || d < 0.0)
        return -1;
    *out = d;
    return 0;
}

static int dec_str(const char *v, char **out)
{
    *out = NULL;
    if (!v)
        return 0;
    *out = tool_strdup(v);
    return *out ? 0 : -1;
}

/* Stored per-frame arrays are at most this long (about 2.3 hours at 120 frames per second). */
#define MAX_FRAMES 1000000u

mprof_store_result mprof__store_decode_array(const char *text, size_t n, double **out,
                                             size_t *out_n, char *err, size_t errlen)
{
    *out = NULL;
    if (out_n)
        *out_n = 0;
    if (!text) {
        tool_seterr(err, errlen, "a per-frame array is NULL");
        return MPROF_STORE_BAD_ROW;
    }
    cJSON *j = cJSON_ParseWithLength(text, strlen(text));
    if (!j || !cJSON_IsArray(j)) {
        cJSON_Delete(j);
        tool_seterr(err, errlen, "a per-frame array is not a JSON array");
        return MPROF_STORE_BAD_ROW;
    }
    size_t got = (size_t)cJSON_GetArraySize(j);
    if (got > MAX_FRAMES || (n != SIZE_MAX && got != n)) {
        cJSON_Delete(j);
        if (got > MAX_FRAMES)
            tool_seterr(err, errlen, "a per-frame array holds %zu values, more than %u", got,
                        MAX_FRAMES);
        else
            tool_seterr(err, errlen, "a per-frame array holds %zu values where the run has %zu "
                        "frames", got, n);
        return MPROF_STORE_BAD_ROW;
    }
    double *v = malloc((got ? got : 1) * sizeof *v);
    if (!v) {
        cJSON_Delete(j);
        tool_seterr(err, errlen, "out of memory");
        return MPROF_STORE_NOMEM;
    }
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, j)
    {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0.0) {
            free(v);
            cJSON_Delete(j);
            tool_seterr(err, errlen, "a per-frame array holds an entry (index %zu) that is not a "
                        "non-negative number", i);
            return MPROF_STORE_BAD_ROW;
        }
        v[i++] = e->valuedouble;
    }
    cJSON_Delete(j);
    *out = v;
    if (out_n)
        *out_n = got;
    return MPROF_STORE_OK;
}

/* Column order of RUN_COLUMNS below. */
enum {
    RC_ID, RC_GIT_SHA, RC_BRANCH, RC_COMMAND, RC_HOST, RC_CPU, RC_BUILD_TYPE, RC_START, RC_RECORDED,
    RC_VERDICT, RC_ARTIFACT, RC_ARTIFACT_BYTES, RC_FRAMES, RC_P50, RC_P90, RC_P95, RC_P99, RC_MEAN,
    RC_ON_CPU, RC_OFF_CPU, RC_N_REPS, RC_SCHEMA_COLS
};
#define RUN_COLUMNS                                                                                \
    "id, git_sha, branch, command, host, cpu, build_type, start_time, recorded_at, verdict, "      \
    "artifact_path, artifact_bytes, frame_count, p50_ms, p90_ms, p95_ms, p99_ms, mean_ms, "        \
    "on_cpu_mean_ms, off_cpu_mean_ms, n_reps"
_Static_assert(RC_SCHEMA_COLS <= MPROF_STORE_RUN_COLS, "decoder column count");

mprof_store_result mprof__store_decode_run(const mprof_store_rows *rows, size_t row,
                                           mprof_store_run *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!row_fits(rows, row, RC_SCHEMA_COLS, "run", err, errlen))
        return MPROF_STORE_BAD_ROW;
    const char *what = NULL;
    int64_t v;
    if (dec_int(cell(rows, row, RC_ID), 0, 0, 1, INT64_MAX, &out->id)) {
        tool_seterr(err, errlen, "a run row has no valid id");
        return MPROF_STORE_BAD_ROW;
    }
    char **strs[] = {&out->git_sha, &out->branch, &out->command, &out->host, &out->cpu,
                     &out->build_type, &out->start_time, &out->recorded_at, &out->verdict,
                     &out->artifact_path};
    int scol[] = {RC_GIT_SHA, RC_BRANCH, RC_COMMAND, RC_HOST, RC_CPU, RC_BUILD_TYPE, RC_START,
                  RC_RECORDED, RC_VERDICT, RC_ARTIFACT};
    for (size_t i = 0; i < sizeof scol / sizeof scol[0]; i++)
        if (dec_str(cell(rows, row, (size_t)scol[i]), strs[i])) {
            mprof__store_run_clear(out);
            tool_seterr(err, errlen, "out of memory");
            return MPROF_STORE_NOMEM;
        }
    if (!out->host || !out->build_type || !out->start_time || !out->verdict)
        what = "host, build_type, start_time and verdict must not be NULL";
    else if (dec_int(cell(rows, row, RC_ARTIFACT_BYTES), 1, -1, 0, INT64_MAX, &out->artifact_bytes))
        what = "artifact_bytes";
    else if (dec_int(cell(rows, row, RC_FRAMES), 0, 0, 0, (int64_t)MAX_FRAMES * 1000, &v))
        what = "frame_count";
    if (!what) {
        out->frame_count = (size_t)v;
        if (dec_real(cell(rows, row, RC_P50), 1, &out->p50_ms) ||
            dec_real(cell(rows, row, RC_P90), 1, &out->p90_ms) ||
            dec_real(cell(rows, row, RC_P95), 1, &out->p95_ms) ||
            dec_real(cell(rows, row, RC_P99), 1, &out->p99_ms) ||
            dec_real(cell(rows, row, RC_MEAN), 1, &out->mean_ms))
            what = "a percentile";
        else if (dec_real(cell(rows, row, RC_ON_CPU), 1, &out->on_cpu_mean_ms) ||
                 dec_real(cell(rows, row, RC_OFF_CPU), 1, &out->off_cpu_mean_ms))
            what = "on_cpu_mean_ms or off_cpu_mean_ms";
        else if (dec_int(cell(rows, row, RC_N_REPS), 0, 0, 0, 100000, &v))
            what = "n_reps";
        else
            out->n_reps_stored = (size_t)v;
    }
    if (what) {
        int64_t id = out->id;
        mprof__store_run_clear(out);
        tool_seterr(err, errlen, "stored run %" PRId64 ": %s is malformed", id, what);
        return MPROF_STORE_BAD_ROW;
    }
    out->have_cpu = !isnan(out->on_cpu_mean_ms) && !isnan(out->off_cpu_mean_ms);
    return MPROF_STORE_OK;
}

/* Column order of REP_COLUMNS. */
#define REP_COLUMNS                                                                                \
    "frame_count, p50_ms, p90_ms, p95_ms, p99_ms, mean_ms, frames_ms, on_cpu_ms, off_cpu_ms"

mprof_store_result mprof__store_decode_rep(const mprof_store_rows *rows, size_t row,
                                           mprof_frames_run *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!row_fits(rows, row, MPROF_STORE_REP_COLS, "repetition", err, errlen))
        return MPROF_STORE_BAD_ROW;
    int64_t n;
    if (dec_int(cell(rows, row, 0), 0, 0, 0, MAX_FRAMES, &n)) {
        tool_seterr(err, errlen, "a repetition's frame_count is malformed");
        return MPROF_STORE_BAD_ROW;
    }
    out->n_frames = (size_t)n;
    out->summary.runs = 1;
    out->summary.frames = (size_t)n;
    mprof_frames_summary *s = &out->summary;
    double *pv[] = {&s->p50_ms, &s->p90_ms, &s->p95_ms, &s->p99_ms, &s->mean_ms};
    for (size_t i = 0; i < 5; i++)
        if (dec_real(cell(rows, row, 1 + i), 1, pv[i])) {
            tool_seterr(err, errlen, "a repetition's percentile is malformed");
            return MPROF_STORE_BAD_ROW;
        }
    char e2[256];
    mprof_store_result rc = mprof__store_decode_array(cell(rows, row, 6), out->n_frames,
                                                      &out->frames_ms, NULL, e2, sizeof e2);
    if (rc == MPROF_STORE_OK && cell(rows, row, 7))
        rc = mprof__store_decode_array(cell(rows, row, 7), out->n_frames, &out->on_cpu_ms, NULL,
                                       e2, sizeof e2);
    if (rc == MPROF_STORE_OK && cell(rows, row, 8))
        rc = mprof__store_decode_array(cell(rows, row, 8), out->n_frames, &out->off_cpu_ms, NULL,
                                       e2, sizeof e2);
    if (rc == MPROF_STORE_OK && (!out->on_cpu_ms) != (!out->off_cpu_ms)) {
        rc = MPROF_STORE_BAD_ROW;
        snprintf(e2, sizeof e2, "on_cpu_ms and off_cpu_ms must both be present or both NULL");
    }
    if (rc != MPROF_STORE_OK) {
        mprof__frames_run_clear(out);
        tool_seterr(err, errlen, "a repetition: %s", e2);
    }
    return rc;
}

void mprof__store_run_clear(mprof_store_run *run)
{
    if (!run)
        return;
    free(run->uid);
    free(run->git_sha);
    free(run->branch);
    free(run->command);
    free(run->host);
    free(run->cpu);
    free(run->build_type);
    free(run->start_time);
    free(run->recorded_at);
    free(run->verdict);
    free(run->artifact_path);
    for (size_t i = 0; i < run->n_reps; i++)
        mprof__frames_run_clear(&run->reps[i]);
    free(run->reps);
    memset(run, 0, sizeof *run);
}

void mprof__store_runs_free(mprof_store_run *runs, size_t n)
{
    for (size_t i = 0; runs && i < n; i++)
        mprof__store_run_clear(&runs[i]);
    free(runs);
}

/* ---- schema and migrations -------------------------------------------------------------- */

/* Each migration is a list of statements; {id}, {int} and {real} are replaced by the backend's
 * column types. Version k is reached by running migrations[0..k-1]. Never edit a shipped
 * migration: add the next one (and raise MPROF_STORE_SCHEMA_VERSION). */
static const char *const migration_1[] = {
    "CREATE TABLE mprof_runs (id {id}, git_sha TEXT, branch TEXT, command TEXT, "
    "host TEXT NOT NULL, cpu TEXT, build_type TEXT NOT NULL, start_time TEXT NOT NULL, "
    "recorded_at TEXT NOT NULL, verdict TEXT NOT NULL, artifact_path TEXT, artifact_bytes {int}, "
    "frame_count {int} NOT NULL, p50_ms {real}, p90_ms {real}, p95_ms {real}, p99_ms {real}, "
    "mean_ms {real}, on_cpu_mean_ms {real}, off_cpu_mean_ms {real}, n_reps {int} NOT NULL)",
    "CREATE TABLE mprof_reps (run_id {int} NOT NULL REFERENCES mprof_runs (id) ON DELETE CASCADE, "
    "idx {int} NOT NULL, frame_count {int} NOT NULL, p50_ms {real}, p90_ms {real}, "
    "p95_ms {real}, p99_ms {real}, mean_ms {real}, frames_ms TEXT NOT NULL, on_cpu_ms TEXT, "
    "off_cpu_ms TEXT, PRIMARY KEY (run_id, idx))",
    "CREATE TABLE mprof_zones (run_id {int} NOT NULL REFERENCES mprof_runs (id) ON DELETE CASCADE, "
    "rep {int} NOT NULL, idx {int} NOT NULL, name TEXT NOT NULL, self_total_ms {real}, "
    "self_mean_ms {real}, self_ms TEXT, PRIMARY KEY (run_id, rep, idx))",
    NULL};
/* Version 2: the rolling baseline and `mprof history --host` look runs up by machine and time. */
static const char *const migration_2[] = {
    "CREATE INDEX mprof_runs_machine ON mprof_runs (host, build_type, start_time)",
    "CREATE INDEX mprof_runs_time ON mprof_runs (start_time)",
    NULL};
/* Version 3: each run's client-made unique id, so that a write retried after a lost connection
 * (a commit whose answer never came) stores the run once. Older runs have none (NULL, which a
 * unique index lets repeat). */
static const char *const migration_3[] = {
    "ALTER TABLE mprof_runs ADD COLUMN run_uid TEXT",
    "CREATE UNIQUE INDEX mprof_runs_uid ON mprof_runs (run_uid)",
    NULL};
static const char *const *const migrations[] = {migration_1, migration_2, migration_3};
_Static_assert(sizeof migrations / sizeof migrations[0] == MPROF_STORE_SCHEMA_VERSION,
               "one migration per schema version");

struct mprof_store {
    const store_backend *be;
    void *h;
    mprof_store_url url;
    int found_version;
};

static mprof_store_result sx(mprof_store *s, const char *sql, const store_param *p, int n,
                             mprof_store_rows *out, char *err, size_t errlen)
{
    return s->be->exec(s->h, sql, p, n, out, err, errlen);
}

/* sql with {id}/{int}/{real} replaced; NULL when out of memory. */
static char *with_types(const store_backend *be, const char *sql)
{
    size_t cap = strlen(sql) * 2 + 64;
    char *out = malloc(cap), *o = out;
    if (!out)
        return NULL;
    for (const char *c = sql; *c;) {
        const char *rep = NULL;
        size_t skip = 0;
        if (strncmp(c, "{id}", 4) == 0)
            rep = be->type_id, skip = 4;
        else if (strncmp(c, "{int}", 5) == 0)
            rep = be->type_int, skip = 5;
        else if (strncmp(c, "{real}", 6) == 0)
            rep = be->type_real, skip = 6;
        if (rep) {
            size_t l = strlen(rep);
            memcpy(o, rep, l);
            o += l;
            c += skip;
        } else {
            *o++ = *c++;
        }
    }
    *o = '\0';
    return out;
}

static void rollback(mprof_store *s)
{
    char e[256];
    sx(s, "ROLLBACK", NULL, 0, NULL, e, sizeof e);
}

static mprof_store_result migrate(mprof_store *s, char *err, size_t errlen)
{
    char e[1024];
    mprof_store_result rc = sx(s, s->be->begin_write, NULL, 0, NULL, e, sizeof e);
    if (rc == MPROF_STORE_OK && s->be->lock_migration) {
        mprof_store_rows rows;
        rc = sx(s, s->be->lock_migration, NULL, 0, &rows, e, sizeof e);
        mprof__store_rows_clear(&rows);
    }
    if (rc != MPROF_STORE_OK) {
        tool_seterr(err, errlen, "%s: cannot start a transaction: %s", s->url.display, e);
        return rc;
    }
    char *sql = with_types(s->be, "CREATE TABLE IF NOT EXISTS mprof_schema (version {int} NOT NULL)");
    rc = sql ? sx(s, sql, NULL, 0, NULL, e, sizeof e) : MPROF_STORE_NOMEM;
    free(sql);
    mprof_store_rows rows = {0};
    if (rc == MPROF_STORE_OK)
        rc = sx(s, "SELECT MAX(version) FROM mprof_schema", NULL, 0, &rows, e, sizeof e);
    int64_t version = 0;
    if (rc == MPROF_STORE_OK && (rows.n_rows != 1 || rows.n_cols != 1 ||
                                 dec_int(rows.cells[0], 1, 0, 0, INT32_MAX, &version))) {
        rc = MPROF_STORE_BAD_ROW;
        snprintf(e, sizeof e, "the mprof_schema table holds no valid version");
    }
    mprof__store_rows_clear(&rows);
    if (rc == MPROF_STORE_OK && version > MPROF_STORE_SCHEMA_VERSION) {
        rollback(s);
        s->found_version = (int)version;
        tool_seterr(err, errlen, "%s has schema version %" PRId64 ", newer than this mprof "
                    "understands (%d): upgrade mprof, or use another store", s->url.display,
                    version, MPROF_STORE_SCHEMA_VERSION);
        return MPROF_STORE_SCHEMA_TOO_NEW;
    }
    s->found_version = (int)version;
    for (int64_t k = version; rc == MPROF_STORE_OK && k < MPROF_STORE_SCHEMA_VERSION; k++) {
        for (const char *const *st = migrations[k]; rc == MPROF_STORE_OK && *st; st++) {
            sql = with_types(s->be, *st);
            rc = sql ? sx(s, sql, NULL, 0, NULL, e, sizeof e) : MPROF_STORE_NOMEM;
            free(sql);
        }
    }
    if (rc == MPROF_STORE_OK && version < MPROF_STORE_SCHEMA_VERSION) {
        store_param p = {.kind = STORE_P_INT, .i = MPROF_STORE_SCHEMA_VERSION};
        rc = sx(s, "DELETE FROM mprof_schema", NULL, 0, NULL, e, sizeof e);
        if (rc == MPROF_STORE_OK)
            rc = sx(s, "INSERT INTO mprof_schema (version) VALUES (?)", &p, 1, NULL, e, sizeof e);
    }
    if (rc == MPROF_STORE_OK)
        rc = sx(s, "COMMIT", NULL, 0, NULL, e, sizeof e);
    if (rc != MPROF_STORE_OK) {
        rollback(s);
        tool_seterr(err, errlen, "%s: cannot bring the schema from version %" PRId64 " to %d: %s",
                    s->url.display, version, MPROF_STORE_SCHEMA_VERSION, e);
    }
    return rc;
}

/* ---- open/close ------------------------------------------------------------------------- */

mprof_store *mprof__store_open(const char *url, mprof_store_result *out_rc, char *err,
                               size_t errlen)
{
    mprof_store_result rc_local;
    mprof_store_result *rc = out_rc ? out_rc : &rc_local;
    mprof_store *s = calloc(1, sizeof *s);
    if (!s) {
        *rc = MPROF_STORE_NOMEM;
        tool_seterr(err, errlen, "out of memory");
        return NULL;
    }
    *rc = mprof__store_parse_url(url, &s->url, err, errlen);
    if (*rc != MPROF_STORE_OK) {
        free(s);
        return NULL;
    }
    char e[1024];
    if (s->url.kind == MPROF_STORE_KIND_SQLITE)
        s->h = mprof__store_sqlite_open(s->url.target, &s->be, rc, e, sizeof e);
    else
        s->h = mprof__store_pg_open(s->url.target, &s->be, rc, e, sizeof e);
    if (!s->h) {
        tool_seterr(err, errlen, "%s: %s", s->url.display, e);
        free(s);
        return NULL;
    }
    *rc = migrate(s, err, errlen);
    if (*rc != MPROF_STORE_OK) {
        mprof__store_close(s);
        return NULL;
    }
    return s;
}

void mprof__store_close(mprof_store *s)
{
    if (!s)
        return;
    if (s->h)
        s->be->close(s->h);
    free(s);
}

const char *mprof__store_display(const mprof_store *s)
{
    return s->url.display;
}

int mprof__store_found_version(const mprof_store *s)
{
    return s->found_version;
}

/* ---- add -------------------------------------------------------------------------------- */

int mprof__store_summarise(mprof_store_run *run)
{
    size_t total = 0, with_cpu = 0;
    for (size_t i = 0; i < run->n_reps; i++) {
        mprof_frames_run *r = &run->reps[i];
        total += r->n_frames;
        with_cpu += r->on_cpu_ms && r->off_cpu_ms;
        if (mprof__frames_run_summarize(r))
            return -1;
    }
    run->frame_count = total;
    run->have_cpu = run->n_reps > 0 && with_cpu == run->n_reps;
    if (total == 0)
        return 0;
    double *all = malloc(total * sizeof *all);
    if (!all)
        return -1;
    size_t k = 0;
    double on = 0, off = 0;
    for (size_t i = 0; i < run->n_reps; i++) {
        const mprof_frames_run *r = &run->reps[i];
        if (r->frames_ms)
            memcpy(all + k, r->frames_ms, r->n_frames * sizeof *all);
        else
            for (size_t f = 0; f < r->n_frames; f++)
                all[k + f] = 0;
        k += r->n_frames;
        if (run->have_cpu)
            for (size_t f = 0; f < r->n_frames; f++) {
                on += r->on_cpu_ms[f];
                off += r->off_cpu_ms[f];
            }
    }
    mprof_frames_summary sum;
    int rc = mprof__frames_summarize(all, total, run->n_reps, &sum);
    free(all);
    if (rc)
        return -1;
    run->p50_ms = sum.p50_ms;
    run->p90_ms = sum.p90_ms;
    run->p95_ms = sum.p95_ms;
    run->p99_ms = sum.p99_ms;
    run->mean_ms = sum.mean_ms;
    run->on_cpu_mean_ms = run->have_cpu ? on / (double)total : 0;
    run->off_cpu_mean_ms = run->have_cpu ? off / (double)total : 0;
    return 0;
}

/* A per-frame array as JSON text ("[1.5,2]"), or NULL when out of memory. %.12g keeps a
 * nanosecond of a frame up to 1000 s. */
static char *encode_array(const double *v, size_t n)
{
    size_t cap = n * 20 + 3;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t len = 0;
    out[len++] = '[';
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(out + len, cap - len, "%s%.12g", i ? "," : "", v[i]);
        if (w < 0 || (size_t)w >= cap - len) {
            free(out);
            return NULL;
        }
        len += (size_t)w;
    }
    out[len++] = ']';
    out[len] = '\0';
    return out;
}

static int array_ok(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || v[i] < 0.0)
            return 0;
    return 1;
}

static void now_iso(char *out, size_t n)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, n, "%.24s.%03dZ", base, (int)(ts.tv_nsec / 1000000) % 1000);
}

static store_param ptext(const char *s)
{
    return (store_param){.kind = s ? STORE_P_TEXT : STORE_P_NULL, .s = s};
}
static store_param pint(int64_t i)
{
    return (store_param){.kind = STORE_P_INT, .i = i};
}
static store_param preal(double d)
{
    return (store_param){.kind = isfinite(d) ? STORE_P_REAL : STORE_P_NULL, .d = d};
}

static mprof_store_result check_run(const mprof_store_run *run, char *err, size_t errlen)
{
    if (!run->verdict || !*run->verdict) {
        tool_seterr(err, errlen, "the run has no verdict");
        return MPROF_STORE_BAD_INPUT;
    }
    for (size_t i = 0; i < run->n_reps; i++) {
        const mprof_frames_run *r = &run->reps[i];
        if (r->n_frames > MAX_FRAMES || (r->n_frames && !r->frames_ms) ||
            (r->frames_ms && !array_ok(r->frames_ms, r->n_frames)) ||
            (r->on_cpu_ms && !array_ok(r->on_cpu_ms, r->n_frames)) ||
            (r->off_cpu_ms && !array_ok(r->off_cpu_ms, r->n_frames)) ||
            (!r->on_cpu_ms) != (!r->off_cpu_ms)) {
            tool_seterr(err, errlen, "repetition %zu has missing, negative or non-finite per-frame "
                        "data (or too many frames)", i + 1);
            return MPROF_STORE_BAD_INPUT;
        }
        for (size_t z = 0; z < r->n_zones; z++)
            if (!r->zones[z].name ||
                (r->zones[z].self_ms && !array_ok(r->zones[z].self_ms, r->n_frames))) {
                tool_seterr(err, errlen, "repetition %zu: zone %zu has no name or bad per-frame "
                            "times", i + 1, z + 1);
                return MPROF_STORE_BAD_INPUT;
            }
    }
    return MPROF_STORE_OK;
}

/* The id of the stored run whose uid is uid in *out_id (0: none). */
static mprof_store_result find_uid(mprof_store *s, const char *uid, int64_t *out_id, char *e,
                                   size_t elen)
{
    store_param p = ptext(uid);
    mprof_store_rows rows = {0};
    *out_id = 0;
    mprof_store_result rc = sx(s, "SELECT id FROM mprof_runs WHERE run_uid = ?", &p, 1, &rows, e, elen);
    if (rc == MPROF_STORE_OK && rows.n_rows > 0 &&
        (rows.n_cols != 1 || dec_int(rows.cells[0], 0, 0, 1, INT64_MAX, out_id))) {
        rc = MPROF_STORE_BAD_ROW;
        snprintf(e, elen, "the stored run of id %s has no valid row id", uid);
    }
    mprof__store_rows_clear(&rows);
    return rc;
}

/* One try at writing run in one transaction: OK with run->id (and ADDED_ALREADY when its uid was
 * stored before), or a failure with the database's message in e and *at_commit set when it was
 * the COMMIT that failed (whether the run is stored is then unknown). */
static mprof_store_result insert_once(mprof_store *s, mprof_store_run *run, int *at_commit,
                                      char *e, size_t elen)
{
    *at_commit = 0;
    char recorded[40];
    now_iso(recorded, sizeof recorded);
    const char *rec = run->recorded_at ? run->recorded_at : recorded;
    const char *start = run->start_time && *run->start_time ? run->start_time : rec;
    mprof_store_result rc = sx(s, s->be->begin_write, NULL, 0, NULL, e, elen);
    if (rc != MPROF_STORE_OK)
        return rc;
    /* Inside the write: a run of this uid stored before is not stored again. */
    int64_t found = 0;
    rc = find_uid(s, run->uid, &found, e, elen);
    if (rc == MPROF_STORE_OK && found) {
        rollback(s);
        run->id = found;
        run->added = MPROF_STORE_ADDED_ALREADY;
        return MPROF_STORE_OK;
    }
    if (rc != MPROF_STORE_OK) {
        rollback(s);
        return rc;
    }
    store_param p[21] = {
        ptext(run->git_sha), ptext(run->branch), ptext(run->command),
        ptext(run->host ? run->host : ""), ptext(run->cpu),
        ptext(run->build_type ? run->build_type : ""), ptext(start), ptext(rec),
        ptext(run->verdict), ptext(run->artifact_path),
        run->artifact_bytes >= 0 ? pint(run->artifact_bytes) : ptext(NULL),
        pint((int64_t)run->frame_count),
        run->frame_count ? preal(run->p50_ms) : ptext(NULL),
        run->frame_count ? preal(run->p90_ms) : ptext(NULL),
        run->frame_count ? preal(run->p95_ms) : ptext(NULL),
        run->frame_count ? preal(run->p99_ms) : ptext(NULL),
        run->frame_count ? preal(run->mean_ms) : ptext(NULL),
        run->have_cpu ? preal(run->on_cpu_mean_ms) : ptext(NULL),
        run->have_cpu ? preal(run->off_cpu_mean_ms) : ptext(NULL),
        pint((int64_t)run->n_reps), ptext(run->uid)};
    mprof_store_rows rows = {0};
    rc = sx(s,
            "INSERT INTO mprof_runs (git_sha, branch, command, host, cpu, build_type, start_time, "
            "recorded_at, verdict, artifact_path, artifact_bytes, frame_count, p50_ms, p90_ms, "
            "p95_ms, p99_ms, mean_ms, on_cpu_mean_ms, off_cpu_mean_ms, n_reps, run_uid) VALUES (?, "
            "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            p, 21, &rows, e, elen);
    int64_t id = 0;
    if (rc == MPROF_STORE_OK &&
        (rows.n_rows != 1 || dec_int(rows.cells[0], 0, 0, 1, INT64_MAX, &id))) {
        rc = MPROF_STORE_BAD_ROW;
        snprintf(e, elen, "the insert returned no run id");
    }
    mprof__store_rows_clear(&rows);
    for (size_t i = 0; rc == MPROF_STORE_OK && i < run->n_reps; i++) {
        const mprof_frames_run *r = &run->reps[i];
        const mprof_frames_summary *rs = &r->summary;
        char *fr = encode_array(r->frames_ms, r->frames_ms ? r->n_frames : 0);
        char *on = r->on_cpu_ms ? encode_array(r->on_cpu_ms, r->n_frames) : NULL;
        char *off = r->off_cpu_ms ? encode_array(r->off_cpu_ms, r->n_frames) : NULL;
        if (!fr || (r->on_cpu_ms && !on) || (r->off_cpu_ms && !off)) {
            rc = MPROF_STORE_NOMEM;
            snprintf(e, elen, "out of memory");
        } else {
            int hf = r->n_frames > 0;
            store_param q[] = {pint(id), pint((int64_t)i), pint((int64_t)r->n_frames),
                               hf ? preal(rs->p50_ms) : ptext(NULL),
                               hf ? preal(rs->p90_ms) : ptext(NULL),
                               hf ? preal(rs->p95_ms) : ptext(NULL),
                               hf ? preal(rs->p99_ms) : ptext(NULL),
                               hf ? preal(rs->mean_ms) : ptext(NULL), ptext(fr), ptext(on),
                               ptext(off)};
            rc = sx(s,
                    "INSERT INTO mprof_reps (run_id, idx, frame_count, p50_ms, p90_ms, p95_ms, "
                    "p99_ms, mean_ms, frames_ms, on_cpu_ms, off_cpu_ms) VALUES (?, ?, ?, ?, ?, ?, "
                    "?, ?, ?, ?, ?)",
                    q, 11, NULL, e, elen);
        }
        free(fr);
        free(on);
        free(off);
        for (size_t z = 0; rc == MPROF_STORE_OK && z < r->n_zones; z++) {
            const mprof_frames_zone *zn = &r->zones[z];
            char *sm = zn->self_ms ? encode_array(zn->self_ms, r->n_frames) : NULL;
            if (zn->self_ms && !sm) {
                rc = MPROF_STORE_NOMEM;
                snprintf(e, elen, "out of memory");
                break;
            }
            store_param q[] = {pint(id), pint((int64_t)i), pint((int64_t)z), ptext(zn->name),
                               preal(zn->self_total_ms), preal(zn->self_mean_ms), ptext(sm)};
            rc = sx(s,
                    "INSERT INTO mprof_zones (run_id, rep, idx, name, self_total_ms, "
                    "self_mean_ms, self_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    q, 7, NULL, e, elen);
            free(sm);
        }
    }
    if (rc == MPROF_STORE_OK) {
        rc = sx(s, "COMMIT", NULL, 0, NULL, e, elen);
        *at_commit = rc != MPROF_STORE_OK;
    }
    if (rc != MPROF_STORE_OK) {
        rollback(s);
        return rc;
    }
    run->id = id;
    run->added = MPROF_STORE_ADDED_NEW;
    return MPROF_STORE_OK;
}

/* Opens the store's connection again after it was lost, trying until deadline (seconds on the
 * monotonic clock). 0, or -1 with the last failure in e. */
static int reconnect(mprof_store *s, double deadline, char *e, size_t elen)
{
    for (;;) {
        if (s->h)
            s->be->close(s->h);
        s->h = NULL;
        mprof_store_result rc;
        const store_backend *be = s->be;
        if (s->url.kind == MPROF_STORE_KIND_SQLITE)
            s->h = mprof__store_sqlite_open(s->url.target, &be, &rc, e, elen);
        else
            s->h = mprof__store_pg_open(s->url.target, &be, &rc, e, elen);
        if (s->h) {
            s->be = be;
            return 0;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)now.tv_sec + (double)now.tv_nsec / 1e9 + 1.0 > deadline)
            return -1;
        struct timespec one = {1, 0};
        nanosleep(&one, NULL);
    }
}

/* What to do about a run whose commit stayed in doubt. */
static const char *again_note(int made_uid)
{
    return made_uid ? " (the file has no runUid: look for the run with mprof history before adding it again)"
                    : " (the store keeps one run per uid, so adding the same CI report again is safe)";
}

mprof_store_result mprof__store_add(mprof_store *s, mprof_store_run *run, char *err,
                                    size_t errlen)
{
    mprof_store_result rc = check_run(run, err, errlen);
    if (rc != MPROF_STORE_OK)
        return rc;
    int made_uid = !run->uid || !*run->uid;
    if (made_uid) {
        char uid[33];
        free(run->uid);
        run->uid = NULL;
        if (tool_random_id(uid) != 0 || !(run->uid = tool_strdup(uid))) {
            tool_seterr(err, errlen, "%s: the run was not stored: no unique id for it (no system "
                        "randomness, or out of memory)", s->url.display);
            return MPROF_STORE_NOMEM;
        }
    }
    char e[1024];
    int at_commit = 0;
    rc = insert_once(s, run, &at_commit, e, sizeof e);
    if (rc == MPROF_STORE_OK)
        return rc;
    if (rc != MPROF_STORE_UNREACHABLE) {
        tool_seterr(err, errlen, "%s: the run was not stored: %s", s->url.display, e);
        return rc;
    }
    /* The connection was lost: before the commit the server drops the transaction, at the commit
     * it may have kept it. A new connection says which, by the run's uid; a run not found is
     * written again, which its uid makes safe. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double deadline = (double)now.tv_sec + (double)now.tv_nsec / 1e9 + MPROF_STORE_RECONNECT_S;
    char lost[1024], e2[1024];
    snprintf(lost, sizeof lost, "%s", e);
    int64_t found = 0;
    if (reconnect(s, deadline, e2, sizeof e2) != 0) {
        if (at_commit)
            tool_seterr(err, errlen, "%s: the connection was lost during the commit (%s) and the store did "
                        "not answer again within %d s: the run may or may not be stored; its uid is %s%s",
                        s->url.display, lost, MPROF_STORE_RECONNECT_S, run->uid, again_note(made_uid));
        else
            tool_seterr(err, errlen, "%s: the run was not stored: the connection was lost (%s) and the store "
                        "did not answer again within %d s", s->url.display, lost, MPROF_STORE_RECONNECT_S);
        return MPROF_STORE_UNREACHABLE;
    }
    rc = find_uid(s, run->uid, &found, e2, sizeof e2);
    if (rc == MPROF_STORE_OK && found) {
        run->id = found;
        run->added = MPROF_STORE_ADDED_FOUND;
        return MPROF_STORE_OK;
    }
    if (rc == MPROF_STORE_OK)
        rc = insert_once(s, run, &at_commit, e2, sizeof e2);
    if (rc == MPROF_STORE_OK) {
        if (run->added == MPROF_STORE_ADDED_NEW)
            run->added = MPROF_STORE_ADDED_RETRIED;
        return rc;
    }
    if (rc == MPROF_STORE_UNREACHABLE && at_commit)
        tool_seterr(err, errlen, "%s: the connection was lost twice, the second time during the commit (%s): "
                    "the run may or may not be stored; its uid is %s%s", s->url.display, e2, run->uid,
                    again_note(made_uid));
    else
        tool_seterr(err, errlen, "%s: the run was not stored: the connection was lost (%s), and on a new "
                    "connection: %s", s->url.display, lost, e2);
    return rc;
}

const char *mprof__store_added_note(const mprof_store_run *run)
{
    switch (run->added) {
    case MPROF_STORE_ADDED_ALREADY:
        return " (stored before with the same uid: not stored again)";
    case MPROF_STORE_ADDED_FOUND:
        return " (the connection was lost during the commit; the run was found stored on a new "
               "connection, once)";
    case MPROF_STORE_ADDED_RETRIED:
        return " (the connection was lost before the commit; the run was stored on a new connection)";
    default:
        return "";
    }
}

/* ---- query ------------------------------------------------------------------------------ */

static mprof_store_result load_reps(mprof_store *s, mprof_store_run *run, char *err,
                                    size_t errlen)
{
    char e[1024];
    store_param p[2] = {pint(run->id), pint(0)};
    mprof_store_rows rows = {0};
    mprof_store_result rc = sx(s, "SELECT " REP_COLUMNS " FROM mprof_reps WHERE run_id = ? "
                                  "ORDER BY idx", p, 1, &rows, e, sizeof e);
    if (rc != MPROF_STORE_OK) {
        tool_seterr(err, errlen, "%s: %s", s->url.display, e);
        return rc;
    }
    if (rows.n_rows != run->n_reps_stored) {
        tool_seterr(err, errlen, "stored run %" PRId64 " has %zu repetitions where its row says "
                    "%zu", run->id, rows.n_rows, run->n_reps_stored);
        mprof__store_rows_clear(&rows);
        return MPROF_STORE_BAD_ROW;
    }
    run->reps = rows.n_rows ? calloc(rows.n_rows, sizeof *run->reps) : NULL;
    if (rows.n_rows && !run->reps) {
        mprof__store_rows_clear(&rows);
        tool_seterr(err, errlen, "out of memory");
        return MPROF_STORE_NOMEM;
    }
    for (size_t i = 0; rc == MPROF_STORE_OK && i < rows.n_rows; i++) {
        rc = mprof__store_decode_rep(&rows, i, &run->reps[i], e, sizeof e);
        if (rc == MPROF_STORE_OK)
            run->n_reps++;
    }
    mprof__store_rows_clear(&rows);
    for (size_t i = 0; rc == MPROF_STORE_OK && i < run->n_reps; i++) {
        mprof_frames_run *r = &run->reps[i];
        p[1] = pint((int64_t)i);
        rc = sx(s, "SELECT name, self_total_ms, self_mean_ms, self_ms FROM mprof_zones WHERE "
                   "run_id = ? AND rep = ? ORDER BY idx", p, 2, &rows, e, sizeof e);
        if (rc != MPROF_STORE_OK)
            break;
        r->zones = rows.n_rows ? calloc(rows.n_rows, sizeof *r->zones) : NULL;
        if (rows.n_rows && !r->zones) {
            rc = MPROF_STORE_NOMEM;
            snprintf(e, sizeof e, "out of memory");
        }
        for (size_t z = 0; rc == MPROF_STORE_OK && z < rows.n_rows; z++) {
            mprof_frames_zone *zn = &r->zones[z];
            if (rows.n_cols < 4 || !cell(&rows, z, 0) ||
                dec_real(cell(&rows, z, 1), 1, &zn->self_total_ms) ||
                dec_real(cell(&rows, z, 2), 1, &zn->self_mean_ms)) {
                rc = MPROF_STORE_BAD_ROW;
                snprintf(e, sizeof e, "a zone row is malformed");
                break;
            }
            zn->name = tool_strdup(cell(&rows, z, 0));
            r->n_zones++;
            if (!zn->name) {
                rc = MPROF_STORE_NOMEM;
                snprintf(e, sizeof e, "out of memory");
                break;
            }
            if (cell(&rows, z, 3))
                rc = mprof__store_decode_array(cell(&rows, z, 3), r->n_frames, &zn->self_ms,
                                               NULL, e, sizeof e);
        }
        mprof__store_rows_clear(&rows);
    }
    if (rc != MPROF_STORE_OK)
        tool_seterr(err, errlen, "stored run %" PRId64 ": %s", run->id, e);
    return rc;
}

/* The run's zones averaged over its repetitions, as one summary repetition without per-frame
 * data. */
static mprof_store_result load_zone_means(mprof_store *s, mprof_store_run *run, char *err,
                                          size_t errlen)
{
    char e[1024];
    store_param p = pint(run->id);
    mprof_store_rows rows = {0};
    mprof_store_result rc = sx(s, "SELECT name, AVG(self_mean_ms) FROM mprof_zones WHERE "
                                  "run_id = ? GROUP BY name ORDER BY 2 DESC, name", &p, 1,
                               &rows, e, sizeof e);
    if (rc != MPROF_STORE_OK) {
        tool_seterr(err, errlen, "%s: %s", s->url.display, e);
        return rc;
    }
    run->reps = calloc(1, sizeof *run->reps);
    mprof_frames_run *r = run->reps;
    if (r) {
        run->n_reps = 1;
        r->zones = rows.n_rows ? calloc(rows.n_rows, sizeof *r->zones) : NULL;
    }
    if (!r || (rows.n_rows && !r->zones)) {
        mprof__store_rows_clear(&rows);
        tool_seterr(err, errlen, "out of memory");
        return MPROF_STORE_NOMEM;
    }
    for (size_t z = 0; z < rows.n_rows; z++) {
        mprof_frames_zone *zn = &r->zones[z];
        if (rows.n_cols < 2 || !cell(&rows, z, 0) ||
            dec_real(cell(&rows, z, 1), 1, &zn->self_mean_ms)) {
            rc = MPROF_STORE_BAD_ROW;
            tool_seterr(err, errlen, "stored run %" PRId64 ": a zone row is malformed", run->id);
            break;
        }
        zn->name = tool_strdup(cell(&rows, z, 0));
        if (!zn->name) {
            rc = MPROF_STORE_NOMEM;
            tool_seterr(err, errlen, "out of memory");
            break;
        }
        r->n_zones++;
    }
    mprof__store_rows_clear(&rows);
    return rc;
}

mprof_store_result mprof__store_query(mprof_store *s, const mprof_store_filter *f,
                                      mprof_store_run **out_runs, size_t *out_n, char *err,
                                      size_t errlen)
{
    *out_runs = NULL;
    *out_n = 0;
    size_t last = f->last ? f->last : 100;
    if (last > 100000)
        last = 100000;
    char e[1024];
    /* Optional filters with fixed SQL: a NULL parameter matches every row. */
    store_param p[] = {ptext(f->host), ptext(f->host), ptext(f->build_type),
                       ptext(f->build_type), pint(f->passing_only ? 1 : 0), pint((int64_t)last)};
    mprof_store_rows rows = {0};
    mprof_store_result rc = sx(
        s,
        "SELECT " RUN_COLUMNS " FROM mprof_runs WHERE (CAST(? AS TEXT) IS NULL OR host = ?) AND "
        "(CAST(? AS TEXT) IS NULL OR build_type = ?) AND (CAST(? AS INTEGER) = 0 OR verdict IN "
        "('pass', 'no-baseline')) ORDER BY start_time DESC, id DESC LIMIT ?",
        p, 6, &rows, e, sizeof e);
    if (rc != MPROF_STORE_OK) {
        tool_seterr(err, errlen, "%s: %s", s->url.display, e);
        return rc;
    }
    mprof_store_run *runs = rows.n_rows ? calloc(rows.n_rows, sizeof *runs) : NULL;
    if (rows.n_rows && !runs) {
        mprof__store_rows_clear(&rows);
        tool_seterr(err, errlen, "out of memory");
        return MPROF_STORE_NOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; rc == MPROF_STORE_OK && i < rows.n_rows; i++) {
        rc = mprof__store_decode_run(&rows, i, &runs[n], err, errlen);
        if (rc == MPROF_STORE_OK)
            n++;
    }
    mprof__store_rows_clear(&rows);
    for (size_t i = 0; rc == MPROF_STORE_OK && i < n; i++) {
        if (f->with_frames)
            rc = load_reps(s, &runs[i], err, errlen);
        else if (f->with_zone_means)
            rc = load_zone_means(s, &runs[i], err, errlen);
    }
    if (rc != MPROF_STORE_OK) {
        mprof__store_runs_free(runs, n);
        return rc;
    }
    *out_runs = runs;
    *out_n = n;
    return MPROF_STORE_OK;
}

mprof_store_result mprof__store_baseline(mprof_store *s, const char *host, const char *build_type,
                                         size_t n, mprof_store_run **out_runs, size_t *out_n,
                                         char *err, size_t errlen)
{
    mprof_store_filter f = {.host = host ? host : "", .build_type = build_type ? build_type : "",
                            .last = n ? n : 5, .passing_only = 1, .with_frames = 1};
    return mprof__store_query(s, &f, out_runs, out_n, err, errlen);
}
