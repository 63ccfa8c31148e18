/*
 * store_backend.h - what the run store (store.c) asks of a database: run one statement with
 * bound parameters and hand back its rows as text. store_sqlite.c and store_pg.c implement it;
 * nothing else in mprof sees either library.
 *
 * Statements are written with `?` placeholders (the PostgreSQL backend renumbers them $1, $2,
 * ...), parameters are bound, never pasted. A REAL column comes back as "%.17g" text from SQLite
 * and as PostgreSQL's own shortest exact text, so both round-trip a double.
 */
#ifndef MPROF_STORE_BACKEND_H
#define MPROF_STORE_BACKEND_H

#include "store/store.h"

typedef enum store_param_kind {
    STORE_P_NULL = 0,
    STORE_P_TEXT,
    STORE_P_INT,
    STORE_P_REAL
} store_param_kind;

typedef struct store_param {
    store_param_kind kind;
    const char *s;
    int64_t i;
    double d;
} store_param;

typedef struct store_backend {
    /* Runs sql with n bound parameters; fills out (when not NULL) with the result rows. Returns
     * OK, or QUERY / NOMEM / UNREACHABLE with the database's message in err. */
    mprof_store_result (*exec)(void *h, const char *sql, const store_param *p, int n,
                               mprof_store_rows *out, char *err, size_t errlen);
    void (*close)(void *h);
    const char *begin_write;    /* starts a transaction that holds the write lock */
    const char *lock_migration; /* run after begin_write before migrating, or NULL */
    const char *type_id;        /* an auto-numbered 64-bit primary key */
    const char *type_int;       /* a 64-bit integer */
    const char *type_real;      /* a double */
} store_backend;

/* Each returns the backend's handle, or NULL with the result in *rc and a message in err. */
void *mprof__store_sqlite_open(const char *path, const store_backend **out_be,
                               mprof_store_result *rc, char *err, size_t errlen);
void *mprof__store_pg_open(const char *uri, const store_backend **out_be, mprof_store_result *rc,
                           char *err, size_t errlen);
/* Checks a libpq URI without connecting; returns 0 or -1 with libpq's message in err. */
int mprof__store_pg_check_uri(const char *uri, char *err, size_t errlen);

#endif
