/*
 * store_sqlite.c - the embedded backend of the run store (`sqlite:PATH`), on libsqlite3.
 *
 * The file is opened read-write and created when missing, in WAL mode so that `mprof history`
 * can read while a CI job writes. Writers take the write lock at the start of their transaction
 * (BEGIN IMMEDIATE), and a second writer waits for it up to 30 s (the busy timeout) instead of
 * failing, so two CI jobs storing at once both land.
 */
#include "store/store_backend.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUSY_TIMEOUT_MS 30000

static void set_lite_err(char *err, size_t n, const char *what, sqlite3 *db)
{
    snprintf(err, n, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
}

static mprof_store_result lite_exec(void *h, const char *sql, const store_param *p, int n,
                                    mprof_store_rows *out, char *err, size_t errlen)
{
    sqlite3 *db = h;
    sqlite3_stmt *st = NULL;
    if (out)
        memset(out, 0, sizeof *out);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        set_lite_err(err, errlen, "SQLite cannot prepare a statement", db);
        return MPROF_STORE_QUERY;
    }
    int rc = SQLITE_OK;
    for (int i = 0; i < n && rc == SQLITE_OK; i++) {
        switch (p[i].kind) {
        case STORE_P_TEXT:
            rc = p[i].s ? sqlite3_bind_text(st, i + 1, p[i].s, -1, SQLITE_STATIC)
                        : sqlite3_bind_null(st, i + 1);
            break;
        case STORE_P_INT:
            rc = sqlite3_bind_int64(st, i + 1, p[i].i);
            break;
        case STORE_P_REAL:
            rc = sqlite3_bind_double(st, i + 1, p[i].d);
            break;
        default:
            rc = sqlite3_bind_null(st, i + 1);
        }
    }
    if (rc != SQLITE_OK) {
        set_lite_err(err, errlen, "SQLite cannot bind a parameter", db);
        sqlite3_finalize(st);
        return MPROF_STORE_QUERY;
    }
    size_t cap = 0;
    mprof_store_result res = MPROF_STORE_OK;
    int ncol = sqlite3_column_count(st);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!out)
            continue;
        out->n_cols = (size_t)ncol;
        if ((out->n_rows + 1) * out->n_cols > cap) {
            size_t ncap = cap ? cap * 2 : 16 * out->n_cols;
            char **nc = realloc(out->cells, ncap * sizeof *nc);
            if (!nc) {
                res = MPROF_STORE_NOMEM;
                break;
            }
            out->cells = nc;
            cap = ncap;
        }
        char **row = out->cells + out->n_rows * out->n_cols;
        for (int c = 0; c < ncol; c++)
            row[c] = NULL;
        out->n_rows++;
        for (int c = 0; c < ncol; c++) {
            int t = sqlite3_column_type(st, c);
            if (t == SQLITE_NULL)
                continue;
            char num[40];
            const char *text = num;
            if (t == SQLITE_FLOAT)
                snprintf(num, sizeof num, "%.17g", sqlite3_column_double(st, c));
            else if (t == SQLITE_INTEGER)
                snprintf(num, sizeof num, "%lld", (long long)sqlite3_column_int64(st, c));
            else
                text = (const char *)sqlite3_column_text(st, c);
            if (text) {
                size_t len = t == SQLITE_TEXT ? (size_t)sqlite3_column_bytes(st, c) : strlen(text);
                row[c] = malloc(len + 1);
                if (!row[c]) {
                    res = MPROF_STORE_NOMEM;
                    break;
                }
                memcpy(row[c], text, len);
                row[c][len] = '\0';
            }
        }
        if (res != MPROF_STORE_OK)
            break;
    }
    if (res == MPROF_STORE_NOMEM) {
        snprintf(err, errlen, "out of memory reading SQLite rows");
    } else if (rc != SQLITE_DONE) {
        set_lite_err(err, errlen, "SQLite statement failed", db);
        res = MPROF_STORE_QUERY;
    }
    sqlite3_finalize(st);
    if (res != MPROF_STORE_OK && out)
        mprof__store_rows_clear(out);
    return res;
}

static void lite_close(void *h)
{
    sqlite3_close(h);
}

static const store_backend lite_backend = {
    .exec = lite_exec,
    .close = lite_close,
    .begin_write = "BEGIN IMMEDIATE",
    .lock_migration = NULL,
    .type_id = "INTEGER PRIMARY KEY AUTOINCREMENT",
    .type_int = "INTEGER",
    .type_real = "REAL",
};

void *mprof__store_sqlite_open(const char *path, const store_backend **out_be,
                               mprof_store_result *rc, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    int r = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (r != SQLITE_OK) {
        snprintf(err, errlen, "cannot open the SQLite store %s: %s", path,
                 db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        *rc = db ? MPROF_STORE_UNREACHABLE : MPROF_STORE_NOMEM;
        return NULL;
    }
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(db, 1);
    /* WAL lets readers work beside a writer; a file system without shared memory keeps the
     * default journal, which is only slower. Foreign keys make a deleted run take its rows. */
    mprof_store_rows rows;
    char e2[256];
    if (lite_exec(db, "PRAGMA journal_mode=WAL", NULL, 0, &rows, e2, sizeof e2) == MPROF_STORE_OK)
        mprof__store_rows_clear(&rows);
    if (lite_exec(db, "PRAGMA foreign_keys=ON", NULL, 0, NULL, err, errlen) != MPROF_STORE_OK) {
        /* A file that is not a database fails here first. */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", err);
        snprintf(err, errlen, "cannot use the SQLite store %s: %s", path, msg);
        sqlite3_close(db);
        *rc = MPROF_STORE_UNREACHABLE;
        return NULL;
    }
    *out_be = &lite_backend;
    *rc = MPROF_STORE_OK;
    return db;
}
