/*
 * query_run.c - the database of a capture opened (built when missing or stale), a statement run
 * on it, its rows written as a table, CSV or JSON, and the database saved elsewhere.
 *
 * The cache is trusted only when its meta table says it was built from a file of the capture's
 * size and modification time by this schema version; anything else, including a file SQLite
 * cannot read, is rebuilt. Queries get a read-only connection, the statement must be the only
 * one and must only read (sqlite3_stmt_readonly), and ATTACH is refused, so a query cannot
 * change the cache or write a file.
 */
#include "query/query.h"
#include "util/json_out.h"
#include "util/tool.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the cache ------------------------------------------------------------------------------- */

static void stamp_of(const struct stat *st, char *buf, size_t n)
{
    snprintf(buf, n, "%d:%lld:%lld.%09ld", MPROF_QUERY_SCHEMA_VERSION, (long long)st->st_size,
             (long long)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec);
}

/* Whether the database at path was built from the capture with stamp. */
static int cache_fresh(const char *path, const char *stamp)
{
    sqlite3 *db = NULL;
    int fresh = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'stamp'", -1, &st, NULL) ==
                SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            const unsigned char *v = sqlite3_column_text(st, 0);
            fresh = v && strcmp((const char *)v, stamp) == 0;
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return fresh;
}

/* Builds the database of capture at path: into a temporary file beside it, renamed when whole. */
static int build(const char *capture, const char *path, const char *stamp,
                 mprof_query_stats *stats, char *err, size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    unlink(tmp);
    mprof_reader *r = mprof_reader_open(capture, err, errlen);
    if (!r)
        return MPROF_QUERY_IO;
    sqlite3 *db = NULL;
    int rc = MPROF_QUERY_OK;
    if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        tool_seterr(err, errlen, "cannot create %s: %s", tmp, db ? sqlite3_errmsg(db) : "?");
        rc = MPROF_QUERY_IO;
    }
    /* A cache: no journal, no syncs, a larger page cache; the rename makes it appear whole. */
    if (rc == MPROF_QUERY_OK)
        sqlite3_exec(db,
                     "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536;"
                     "PRAGMA locking_mode=EXCLUSIVE; PRAGMA temp_store=FILE;",
                     NULL, NULL, NULL);
    if (rc == MPROF_QUERY_OK)
        rc = mprof__query_schema(db, err, errlen);
    if (rc == MPROF_QUERY_OK)
        rc = mprof__query_fill(db, r, capture, stats, err, errlen);
    if (rc == MPROF_QUERY_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta VALUES('stamp', ?)", -1, &st,
                               NULL) != SQLITE_OK ||
            sqlite3_bind_text(st, 1, stamp, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
            sqlite3_step(st) != SQLITE_DONE) {
            tool_seterr(err, errlen, "writing %s failed: %s", tmp, sqlite3_errmsg(db));
            rc = MPROF_QUERY_IO;
        }
        sqlite3_finalize(st);
    }
    if (db && sqlite3_close(db) != SQLITE_OK && rc == MPROF_QUERY_OK) {
        tool_seterr(err, errlen, "writing %s failed", tmp);
        rc = MPROF_QUERY_IO;
    }
    mprof_reader_close(r);
    if (rc == MPROF_QUERY_OK && rename(tmp, path) != 0) {
        tool_seterr(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        rc = MPROF_QUERY_IO;
    }
    if (rc != MPROF_QUERY_OK)
        unlink(tmp);
    return rc;
}

static int deny_attach(void *user, int action, const char *a, const char *b, const char *c,
                       const char *d)
{
    (void)user, (void)a, (void)b, (void)c, (void)d;
    return action == SQLITE_ATTACH || action == SQLITE_DETACH ? SQLITE_DENY : SQLITE_OK;
}

static int writable_dir_of(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = 0;
    else
        snprintf(dir, sizeof dir, ".");
    return access(dir, W_OK) == 0;
}

int mprof__query_open(const char *capture, const char *db_path, int rebuild, sqlite3 **out_db,
                      char *out_path, size_t pathlen, int *out_built, int *out_temp,
                      mprof_query_stats *stats, char *err, size_t errlen)
{
    *out_db = NULL;
    *out_built = *out_temp = 0;
    struct stat st;
    if (stat(capture, &st) != 0) {
        tool_seterr(err, errlen, "%s: %s", capture, strerror(errno));
        return MPROF_QUERY_IO;
    }
    if (!S_ISREG(st.st_mode)) {
        tool_seterr(err, errlen, "%s: not a capture file", capture);
        return MPROF_QUERY_IO;
    }
    char stamp[128];
    stamp_of(&st, stamp, sizeof stamp);
    if (db_path)
        snprintf(out_path, pathlen, "%s", db_path);
    else if (writable_dir_of(capture))
        snprintf(out_path, pathlen, "%s.qdb", capture);
    else {
        const char *t = getenv("TMPDIR");
        snprintf(out_path, pathlen, "%s/mprof-query-%ld.qdb", t && *t ? t : "/tmp", (long)getpid());
        *out_temp = 1;
        rebuild = 1;
    }
    if (rebuild || !cache_fresh(out_path, stamp)) {
        int rc = build(capture, out_path, stamp, stats, err, errlen);
        if (rc != MPROF_QUERY_OK)
            return rc;
        *out_built = 1;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(out_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        tool_seterr(err, errlen, "cannot open %s: %s", out_path, db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        return MPROF_QUERY_IO;
    }
    sqlite3_set_authorizer(db, deny_attach, NULL);
    *out_db = db;
    return MPROF_QUERY_OK;
}

/* ---- running a statement --------------------------------------------------------------------- */

#define TABLE_SAMPLE_ROWS 1000 /* column widths come from the first rows; the rest stream */
#define TABLE_MAX_WIDTH 60

static void csv_field(FILE *out, const char *s, size_t n)
{
    int quote = 0;
    for (size_t i = 0; i < n && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
    if (!quote) {
        fwrite(s, 1, n, out);
        return;
    }
    fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            fputc('"', out);
        fputc(s[i], out);
    }
    fputc('"', out);
}

/* A cell as text: integers and reals as SQLite prints them, NULL empty (csv) or "NULL". */
static const char *cell(sqlite3_stmt *st, int c, int null_word, size_t *n)
{
    if (sqlite3_column_type(st, c) == SQLITE_NULL) {
        *n = null_word ? 4 : 0;
        return null_word ? "NULL" : "";
    }
    const char *s = (const char *)sqlite3_column_text(st, c);
    *n = s ? (size_t)sqlite3_column_bytes(st, c) : 0;
    return s ? s : "";
}

static void json_row(FILE *out, sqlite3_stmt *st, int ncol)
{
    fputc('{', out);
    for (int c = 0; c < ncol; c++) {
        const char *name = sqlite3_column_name(st, c);
        if (c)
            fputc(',', out);
        mprof_json_write_string(out, name ? name : "?", strlen(name ? name : "?"));
        fputc(':', out);
        switch (sqlite3_column_type(st, c)) {
        case SQLITE_NULL:
            fputs("null", out);
            break;
        case SQLITE_INTEGER:
            fprintf(out, "%lld", (long long)sqlite3_column_int64(st, c));
            break;
        case SQLITE_FLOAT:
            mprof_json_write_number(out, sqlite3_column_double(st, c), 17, 0, "null");
            break;
        case SQLITE_BLOB: {
            const unsigned char *p = sqlite3_column_blob(st, c);
            int n = sqlite3_column_bytes(st, c);
            fputc('"', out);
            for (int i = 0; i < n; i++)
                fprintf(out, "%02x", p[i]);
            fputc('"', out);
            break;
        }
        default: {
            const char *s = (const char *)sqlite3_column_text(st, c);
            mprof_json_write_string(out, s ? s : "", s ? (size_t)sqlite3_column_bytes(st, c) : 0);
        }
        }
    }
    fputc('}', out);
}

/* Table: widths from the rows read so far, numbers right-aligned. */
typedef struct table {
    int ncol;
    int *width, *numeric;
} table;

static void table_row(FILE *out, const table *t, sqlite3_stmt *st)
{
    for (int c = 0; c < t->ncol; c++) {
        size_t n;
        const char *s = cell(st, c, 1, &n);
        int num = sqlite3_column_type(st, c) == SQLITE_INTEGER ||
                  sqlite3_column_type(st, c) == SQLITE_FLOAT;
        int pad = t->width[c] > (int)n ? t->width[c] - (int)n : 0;
        if (c)
            fputs("  ", out);
        if (num)
            fprintf(out, "%*s", pad, "");
        for (size_t i = 0; i < n; i++)
            fputc(s[i] == '\n' || s[i] == '\t' ? ' ' : s[i], out);
        if (!num && c + 1 < t->ncol)
            fprintf(out, "%*s", pad, "");
    }
    fputc('\n', out);
}

/* The kinds of SQL error that are the user's: SQLite's message says what is wrong. */
static int prepare_one(sqlite3 *db, const char *sql, sqlite3_stmt **out, char *err, size_t errlen)
{
    const char *tail = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, out, &tail);
    if (rc != SQLITE_OK) {
        const char *m = sqlite3_errmsg(db);
        int off = sqlite3_error_offset(db);
        if (strstr(m, "no such table"))
            tool_seterr(err, errlen,
                        "%s (the tables are threads, zones, frames, plots, messages, allocs, "
                        "locks, gpu_zones, switches, samples, callstacks, locations, meta)",
                        m);
        else if (rc == SQLITE_AUTH)
            tool_seterr(err, errlen, "ATTACH and DETACH are not allowed: %s", m);
        else if (off >= 0)
            tool_seterr(err, errlen, "%s (at offset %d of the SQL)", m, off);
        else
            tool_seterr(err, errlen, "%s", m);
        *out = NULL;
        return MPROF_QUERY_BAD;
    }
    if (!*out) {
        tool_seterr(err, errlen, "the SQL holds no statement");
        return MPROF_QUERY_BAD;
    }
    for (; tail && *tail; tail++)
        if (*tail != ' ' && *tail != '\t' && *tail != '\n' && *tail != '\r' && *tail != ';') {
            tool_seterr(err, errlen, "one statement at a time (more SQL after the first: "
                                     "'%.40s')",
                        tail);
            sqlite3_finalize(*out);
            *out = NULL;
            return MPROF_QUERY_BAD;
        }
    if (!sqlite3_stmt_readonly(*out)) {
        tool_seterr(err, errlen, "the database of a capture is read-only: only statements "
                                 "that read (SELECT, WITH, read-only PRAGMA) run; --save "
                                 "FILE.db gives a copy to change");
        sqlite3_finalize(*out);
        *out = NULL;
        return MPROF_QUERY_BAD;
    }
    return MPROF_QUERY_OK;
}

int mprof__query_run(sqlite3 *db, const char *sql, int format, FILE *out, char *err,
                     size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare_one(db, sql, &st, err, errlen);
    if (rc != MPROF_QUERY_OK)
        return rc;
    int ncol = sqlite3_column_count(st);
    table t = {.ncol = ncol};
    if (format == MPROF_QUERY_TABLE) {
        t.width = calloc((size_t)ncol + 1, sizeof *t.width);
        t.numeric = calloc((size_t)ncol + 1, sizeof *t.numeric);
        if (!t.width || !t.numeric) {
            free(t.width);
            free(t.numeric);
            sqlite3_finalize(st);
            tool_seterr(err, errlen, "out of memory");
            return MPROF_QUERY_IO;
        }
        for (int c = 0; c < ncol; c++) {
            const char *nm = sqlite3_column_name(st, c);
            t.width[c] = (int)strlen(nm ? nm : "");
        }
    } else if (format == MPROF_QUERY_CSV) {
        for (int c = 0; c < ncol; c++) {
            const char *nm = sqlite3_column_name(st, c);
            if (c)
                fputc(',', out);
            csv_field(out, nm ? nm : "", strlen(nm ? nm : ""));
        }
        fputc('\n', out);
    } else {
        fputc('[', out);
    }
    uint64_t rows = 0;
    int s;
    /* Tables: the first rows are read twice, once to size, once to print (SQLite resets). */
    if (format == MPROF_QUERY_TABLE) {
        uint64_t n = 0;
        while (n < TABLE_SAMPLE_ROWS && (s = sqlite3_step(st)) == SQLITE_ROW) {
            for (int c = 0; c < ncol; c++) {
                size_t len;
                cell(st, c, 1, &len);
                int ty = sqlite3_column_type(st, c);
                if (ty == SQLITE_INTEGER || ty == SQLITE_FLOAT)
                    t.numeric[c] = 1;
                if ((int)len > t.width[c])
                    t.width[c] = len > TABLE_MAX_WIDTH ? TABLE_MAX_WIDTH : (int)len;
            }
            n++;
        }
        sqlite3_reset(st);
        for (int c = 0; c < ncol; c++) {
            const char *nm = sqlite3_column_name(st, c);
            if (t.numeric[c])
                fprintf(out, "%s%*s", c ? "  " : "", t.width[c], nm ? nm : "");
            else
                fprintf(out, "%s%-*s", c ? "  " : "", c + 1 < ncol ? t.width[c] : 0, nm ? nm : "");
        }
        fputc('\n', out);
        for (int c = 0; c < ncol; c++) {
            fputs(c ? "  " : "", out);
            for (int i = 0; i < t.width[c]; i++)
                fputc('-', out);
        }
        fputc('\n', out);
    }
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (format == MPROF_QUERY_TABLE) {
            table_row(out, &t, st);
        } else if (format == MPROF_QUERY_CSV) {
            for (int c = 0; c < ncol; c++) {
                size_t n;
                const char *v = cell(st, c, 0, &n);
                if (c)
                    fputc(',', out);
                csv_field(out, v, n);
            }
            fputc('\n', out);
        } else {
            fputs(rows ? ",\n" : "\n", out);
            json_row(out, st, ncol);
        }
        rows++;
    }
    if (format == MPROF_QUERY_JSON)
        fputs(rows ? "\n]\n" : "]\n", out);
    else if (format == MPROF_QUERY_TABLE)
        fprintf(out, "(%" PRIu64 " row%s)\n", rows, rows == 1 ? "" : "s");
    free(t.width);
    free(t.numeric);
    rc = MPROF_QUERY_OK;
    if (s != SQLITE_DONE) {
        /* The statement compiled; what fails now is the data (an integer overflow in a sum, a
         * function given a wrong argument) or the file. */
        int code = sqlite3_errcode(db);
        tool_seterr(err, errlen, "the query stopped after %" PRIu64 " rows: %s", rows,
                    sqlite3_errmsg(db));
        rc = code == SQLITE_IOERR || code == SQLITE_CORRUPT || code == SQLITE_NOMEM ||
                     code == SQLITE_FULL
                 ? MPROF_QUERY_IO
                 : MPROF_QUERY_BAD;
    }
    sqlite3_finalize(st);
    return rc;
}

int mprof__query_save(sqlite3 *db, const char *dest, char *err, size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", dest, (long)getpid());
    unlink(tmp);
    sqlite3 *to = NULL;
    int rc = MPROF_QUERY_OK;
    if (sqlite3_open_v2(tmp, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        tool_seterr(err, errlen, "cannot create %s: %s", dest, to ? sqlite3_errmsg(to) : "?");
        rc = MPROF_QUERY_IO;
    } else {
        sqlite3_backup *bk = sqlite3_backup_init(to, "main", db, "main");
        if (!bk || sqlite3_backup_step(bk, -1) != SQLITE_DONE) {
            tool_seterr(err, errlen, "writing %s failed: %s", dest, sqlite3_errmsg(to));
            rc = MPROF_QUERY_IO;
        }
        sqlite3_backup_finish(bk);
        /* The copy is an ordinary database: the cache's stamp would mean nothing there. */
        if (rc == MPROF_QUERY_OK)
            sqlite3_exec(to, "DELETE FROM meta WHERE key = 'stamp'; PRAGMA journal_mode=DELETE;",
                         NULL, NULL, NULL);
    }
    if (to && sqlite3_close(to) != SQLITE_OK && rc == MPROF_QUERY_OK) {
        tool_seterr(err, errlen, "writing %s failed", dest);
        rc = MPROF_QUERY_IO;
    }
    if (rc == MPROF_QUERY_OK && rename(tmp, dest) != 0) {
        tool_seterr(err, errlen, "cannot write %s: %s", dest, strerror(errno));
        rc = MPROF_QUERY_IO;
    }
    if (rc != MPROF_QUERY_OK)
        unlink(tmp);
    return rc;
}
