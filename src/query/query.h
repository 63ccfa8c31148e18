/*
 * query.h - SQL over a capture: `mprof query`.
 *
 * A capture is streamed once into an SQLite database (query_build.c) whose tables are what a
 * capture holds, one row per thing: threads, zones (with their parent and self time), frames,
 * plots, messages, allocations, lock spans, GPU zones (with the CPU zone that submitted them),
 * context switches, callstack samples. The database is a cache beside the capture
 * (FILE.mprof.qdb), stamped with the capture's size and modification time and the schema's
 * version, and rebuilt when any differs. Queries (query_run.c) run on a read-only connection:
 * one statement, which must only read; rows go out as an aligned table, CSV or JSON.
 * docs/QUERY.md has the schema and examples.
 */
#ifndef MPROF_QUERY_QUERY_H
#define MPROF_QUERY_QUERY_H

#include "format/format.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The schema's version: part of the cache's stamp, so a new mprof rebuilds old caches. */
#define MPROF_QUERY_SCHEMA_VERSION 1

typedef struct mprof_query_stats {
    uint64_t zones, gpu_zones, frames, plots, messages, allocs, lock_spans, switches, samples;
    uint64_t zones_dropped_by_loss; /* open when their thread lost events: not rows (as the
                                       report drops them) */
    uint64_t zones_unfinished;      /* open at the end: rows with unfinished = 1 */
} mprof_query_stats;

/* Results of the calls below: 0 ok; BAD: the SQL or the request is wrong (usage, exit 2); IO:
 * the capture or the database cannot be read or written (exit 3). A message is in err. */
enum { MPROF_QUERY_OK = 0, MPROF_QUERY_BAD = 2, MPROF_QUERY_IO = 3 };

/* Creates the tables, views and the meta table of the schema in db (empty). */
int mprof__query_schema(sqlite3 *db, char *err, size_t errlen);

/* Streams the capture read by r (name: for messages) into db, which has the schema, and then
 * creates the indexes. stats may be NULL. */
int mprof__query_fill(sqlite3 *db, mprof_reader *r, const char *name, mprof_query_stats *stats,
                      char *err, size_t errlen);

/* Opens the database of capture for reading: db_path, or capture + ".qdb" when NULL, built
 * first when missing, stale or when rebuild is set (into a temporary file renamed into place,
 * so a failed build leaves no half database). When the capture's folder cannot be written, the
 * database is built in $TMPDIR and *out_temp says so (the caller removes it: path in
 * out_path). *out_built says whether it was built. */
int mprof__query_open(const char *capture, const char *db_path, int rebuild, sqlite3 **out_db,
                      char *out_path, size_t pathlen, int *out_built, int *out_temp,
                      mprof_query_stats *stats, char *err, size_t errlen);

enum { MPROF_QUERY_TABLE = 1, MPROF_QUERY_CSV = 2, MPROF_QUERY_JSON = 3 };

/* Runs one reading statement on db and writes its rows to out in format. A syntax error, an
 * unknown table or column, more than one statement, or a statement that would write: BAD. */
int mprof__query_run(sqlite3 *db, const char *sql, int format, FILE *out, char *err,
                     size_t errlen);

/* Copies db into a standalone SQLite file at dest (replacing it), which sqlite3, DuckDB or
 * pandas open. */
int mprof__query_save(sqlite3 *db, const char *dest, char *err, size_t errlen);

#endif
