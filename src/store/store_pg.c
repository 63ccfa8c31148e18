/*
 * store_pg.c - the shared backend of the run store (`postgresql://...`), on libpq.
 *
 * The URL is handed to libpq whole (any libpq connection URI works: host, port, user, password,
 * sslmode, a unix socket directory in ?host=). mprof adds connect_timeout=10 unless the URL sets
 * one, so an unreachable server fails a CI job in seconds, not at the TCP timeout. Statements
 * are sent with PQexecParams, their `?` placeholders renumbered $1, $2, ...; values travel as
 * text parameters, never inside the statement. Server notices ("relation already exists,
 * skipping") are dropped instead of printed.
 */
#include "store/store_backend.h"

#include <dlfcn.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libpq is loaded when a store first names PostgreSQL, not linked: its libraries (TLS, Kerberos,
 * LDAP) cost every mprof command about 5 ms of start-up, and only `postgresql://` stores use it.
 * The header still gives every function its type. */
#define PQ_FUNCS(X)                                                                                \
    X(PQconnectdbParams) X(PQstatus) X(PQfinish) X(PQerrorMessage) X(PQsetNoticeProcessor)        \
    X(PQexecParams) X(PQresultStatus) X(PQresultErrorMessage) X(PQclear) X(PQntuples)             \
    X(PQnfields) X(PQgetisnull) X(PQgetlength) X(PQgetvalue) X(PQconninfoParse)                  \
    X(PQconninfoFree) X(PQfreemem)
static struct {
#define PQ_DECL(f) __typeof__(f) *f;
    PQ_FUNCS(PQ_DECL)
#undef PQ_DECL
} pq;
static char pq_why[512]; /* why libpq cannot be used; empty when loaded */
static pthread_once_t pq_once = PTHREAD_ONCE_INIT;

static void pq_load(void)
{
    void *lib = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(pq_why, sizeof pq_why, "cannot load libpq.so.5 (%s): install libpq5",
                 e ? e : "not found");
        return;
    }
#define PQ_LOAD(f)                                                                                 \
    {                                                                                              \
        void *sym = dlsym(lib, #f);                                                                \
        if (!sym) {                                                                                \
            snprintf(pq_why, sizeof pq_why, "libpq.so.5 lacks %s", #f);                           \
            return;                                                                                \
        }                                                                                          \
        memcpy(&pq.f, &sym, sizeof sym);                                                           \
    }
    PQ_FUNCS(PQ_LOAD)
#undef PQ_LOAD
}

/* 0 when libpq is there, else -1 with why in err. */
static int pq_ready(char *err, size_t errlen)
{
    pthread_once(&pq_once, pq_load);
    if (!pq_why[0])
        return 0;
    snprintf(err, errlen, "PostgreSQL: %s", pq_why);
    return -1;
}

#define MAX_PARAMS 32

static void set_pg_err(char *err, size_t n, const char *what, const char *msg)
{
    char m[1024];
    snprintf(m, sizeof m, "%s", msg ? msg : "");
    size_t l = strlen(m);
    while (l > 0 && (m[l - 1] == '\n' || m[l - 1] == ' '))
        m[--l] = '\0';
    for (char *c = m; *c; c++)
        if (*c == '\n')
            *c = ' ';
    snprintf(err, n, "%s: %s", what, m);
}

/* "a = ? AND b = ?" -> "a = $1 AND b = $2". The statements are mprof's own constants, which hold
 * no ? inside string literals. */
static char *renumber(const char *sql)
{
    size_t n = 0;
    for (const char *c = sql; *c; c++)
        n += *c == '?';
    char *out = malloc(strlen(sql) + n * 3 + 1);
    if (!out)
        return NULL;
    char *o = out;
    int k = 0;
    for (const char *c = sql; *c; c++) {
        if (*c == '?')
            o += sprintf(o, "$%d", ++k);
        else
            *o++ = *c;
    }
    *o = '\0';
    return out;
}

static mprof_store_result pg_exec(void *h, const char *sql, const store_param *p, int n,
                                  mprof_store_rows *out, char *err, size_t errlen)
{
    PGconn *c = h;
    if (out)
        memset(out, 0, sizeof *out);
    if (n > MAX_PARAMS) {
        snprintf(err, errlen, "too many parameters");
        return MPROF_STORE_QUERY;
    }
    char numbuf[MAX_PARAMS][40];
    const char *vals[MAX_PARAMS];
    for (int i = 0; i < n; i++) {
        switch (p[i].kind) {
        case STORE_P_TEXT:
            vals[i] = p[i].s;
            break;
        case STORE_P_INT:
            snprintf(numbuf[i], sizeof numbuf[i], "%lld", (long long)p[i].i);
            vals[i] = numbuf[i];
            break;
        case STORE_P_REAL:
            snprintf(numbuf[i], sizeof numbuf[i], "%.17g", p[i].d);
            vals[i] = numbuf[i];
            break;
        default:
            vals[i] = NULL;
        }
    }
    char *q = renumber(sql);
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return MPROF_STORE_NOMEM;
    }
    PGresult *r = pq.PQexecParams(c, q, n, NULL, vals, NULL, NULL, 0);
    free(q);
    ExecStatusType st = r ? pq.PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        int gone = pq.PQstatus(c) != CONNECTION_OK;
        set_pg_err(err, errlen, gone ? "the PostgreSQL connection was lost" : "PostgreSQL",
                   r ? pq.PQresultErrorMessage(r) : pq.PQerrorMessage(c));
        pq.PQclear(r);
        return gone ? MPROF_STORE_UNREACHABLE : MPROF_STORE_QUERY;
    }
    mprof_store_result res = MPROF_STORE_OK;
    if (out && st == PGRES_TUPLES_OK) {
        int rows = pq.PQntuples(r), cols = pq.PQnfields(r);
        out->n_rows = (size_t)rows;
        out->n_cols = (size_t)cols;
        if (rows > 0 && cols > 0) {
            out->cells = calloc((size_t)rows * (size_t)cols, sizeof *out->cells);
            if (!out->cells)
                res = MPROF_STORE_NOMEM;
        }
        for (int i = 0; res == MPROF_STORE_OK && i < rows; i++)
            for (int j = 0; res == MPROF_STORE_OK && j < cols; j++) {
                if (pq.PQgetisnull(r, i, j))
                    continue;
                size_t len = (size_t)pq.PQgetlength(r, i, j);
                char *v = malloc(len + 1);
                if (!v) {
                    res = MPROF_STORE_NOMEM;
                    break;
                }
                memcpy(v, pq.PQgetvalue(r, i, j), len);
                v[len] = '\0';
                out->cells[(size_t)i * (size_t)cols + (size_t)j] = v;
            }
        if (res != MPROF_STORE_OK) {
            snprintf(err, errlen, "out of memory reading PostgreSQL rows");
            mprof__store_rows_clear(out);
        }
    }
    pq.PQclear(r);
    return res;
}

static void pg_close(void *h)
{
    pq.PQfinish(h);
}

static void quiet_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static const store_backend pg_backend = {
    .exec = pg_exec,
    .close = pg_close,
    .begin_write = "BEGIN",
    /* One lock number for every mprof migration: the second job waits, then finds the schema
     * current. */
    .lock_migration = "SELECT pg_advisory_xact_lock(7306154018)",
    .type_id = "BIGSERIAL PRIMARY KEY",
    .type_int = "BIGINT",
    .type_real = "DOUBLE PRECISION",
};

int mprof__store_pg_check_uri(const char *uri, char *err, size_t errlen)
{
    if (pq_ready(err, errlen) != 0)
        return -1;
    char *msg = NULL;
    PQconninfoOption *opts = pq.PQconninfoParse(uri, &msg);
    if (!opts) {
        set_pg_err(err, errlen, "libpq rejects it", msg ? msg : "out of memory");
        pq.PQfreemem(msg);
        return -1;
    }
    pq.PQconninfoFree(opts);
    return 0;
}

void *mprof__store_pg_open(const char *uri, const store_backend **out_be, mprof_store_result *rc,
                           char *err, size_t errlen)
{
    /* Keywords before dbname are defaults that the URI's own settings override. */
    const char *keys[] = {"connect_timeout", "fallback_application_name", "dbname", NULL};
    const char *vals[] = {"10", "mprof", uri, NULL};
    if (pq_ready(err, errlen) != 0) {
        *rc = MPROF_STORE_UNREACHABLE;
        return NULL;
    }
    PGconn *c = pq.PQconnectdbParams(keys, vals, 1);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        *rc = MPROF_STORE_NOMEM;
        return NULL;
    }
    if (pq.PQstatus(c) != CONNECTION_OK) {
        set_pg_err(err, errlen, "cannot connect to PostgreSQL", pq.PQerrorMessage(c));
        pq.PQfinish(c);
        *rc = MPROF_STORE_UNREACHABLE;
        return NULL;
    }
    pq.PQsetNoticeProcessor(c, quiet_notice, NULL);
    *out_be = &pg_backend;
    *rc = MPROF_STORE_OK;
    return c;
}
