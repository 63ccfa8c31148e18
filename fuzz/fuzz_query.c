/*
 * fuzz_query.c - libFuzzer target for `mprof query` (src/query/): the first byte chooses what
 * the rest is. 'S' then SQL: run through the refusing front (one statement, read-only, no
 * ATTACH) on a database built from a small fixed capture, in each output format; anything else:
 * a capture, streamed into the tables of an in-memory database. Neither may crash, leak or
 * write. replay_main.c replays the corpus in the normal test run.
 */
#include "query/query.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sqlite3 *fixed; /* the tables with a few rows, for the SQL inputs */
static int budget;     /* progress callbacks left for the current input */

/* A statement may run forever (a recursive CTE without an end); each input gets a budget of
 * SQLite's virtual-machine steps, and then the statement is interrupted, as Ctrl-C would. */
static int progress(void *u)
{
    (void)u;
    return --budget < 0;
}

static int deny_attach(void *u, int action, const char *a, const char *b, const char *c,
                       const char *d)
{
    (void)u, (void)a, (void)b, (void)c, (void)d;
    return action == SQLITE_ATTACH || action == SQLITE_DETACH ? SQLITE_DENY : SQLITE_OK;
}

static sqlite3 *fixed_db(void)
{
    if (fixed)
        return fixed;
    char err[256];
    if (sqlite3_open(":memory:", &fixed) != SQLITE_OK || mprof__query_schema(fixed, err, sizeof err))
        abort();
    sqlite3_exec(fixed,
                 "INSERT INTO threads VALUES(1,'Main',100),(2,'Worker',101);"
                 "INSERT INTO locations VALUES(0,'Frame','main','a.c',1,0),"
                 "(1,'Physics','step','b.c',2,255);"
                 "INSERT INTO zone_rows VALUES(0,1,0,0,1000,400,0,NULL,NULL,NULL,NULL,NULL,0),"
                 "(1,1,1,100,600,600,1,0,NULL,'dyn','text',7,0);"
                 "INSERT INTO frames VALUES('main',0,0,1000),('main',1,1000,900);"
                 "INSERT INTO messages VALUES(NULL,1,5,4,'warn','hello, \"world\"');",
                 NULL, NULL, NULL);
    sqlite3_set_authorizer(fixed, deny_attach, NULL);
    sqlite3_progress_handler(fixed, 1000, progress, NULL);
    return fixed;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    if (size && data[0] == 'S') {
        char *sql = malloc(size);
        if (!sql)
            return 0;
        memcpy(sql, data + 1, size - 1);
        sql[size - 1] = 0;
        FILE *out = fopen("/dev/null", "w");
        if (out) {
            sqlite3 *db = fixed_db();
            budget = 10000;
            mprof__query_run(db, sql, 1 + (int)(size % 3), out, err, sizeof err);
            fclose(out);
        }
        free(sql);
        return 0;
    }
    mprof_reader *r = mprof_reader_open_mem(data, size, err, sizeof err);
    if (!r)
        return 0;
    sqlite3 *db = NULL;
    if (sqlite3_open(":memory:", &db) == SQLITE_OK &&
        mprof__query_schema(db, err, sizeof err) == MPROF_QUERY_OK)
        mprof__query_fill(db, r, "fuzz", NULL, err, sizeof err);
    sqlite3_close(db);
    mprof_reader_close(r);
    return 0;
}
