/*
 * cmd_query.c - `mprof query`: SQL over a capture. The capture is streamed once into an SQLite
 * database cached beside it (query/query.h); each query runs read-only on that database.
 */
#include "mprof_tool.h"
#include "query/query.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const help =
    "usage: mprof query [options] FILE.mprof [SQL]\n"
    "\n"
    "Runs one SQL statement (SQLite's dialect) on the tables of a capture and prints its rows.\n"
    "The capture is read once into a database cached beside it (FILE.mprof.qdb, rebuilt when\n"
    "the capture changes); later queries start at once.\n"
    "\n"
    "Tables (docs/QUERY.md has every column):\n"
    "  threads(id, name, tid)\n"
    "  zones(id, thread, name, function, file, line, start_ns, dur_ns, self_ns, depth,\n"
    "        parent_id, color, fiber, dynamic_name, text, value, unfinished, loc)\n"
    "  frames(frame_set, number, start_ns, dur_ns)       frame_set: 'main' or the set's name\n"
    "  plots(name, thread, ts_ns, value)\n"
    "  messages(id, thread, ts_ns, level, level_name, text)\n"
    "  allocs(id, thread, pool, ptr, size, ts_ns, free_ns, free_thread)\n"
    "  locks(lock, name, thread, kind, start_ns, dur_ns, shared)   kind: 'wait' or 'hold'\n"
    "  gpu_zones(id, context, context_name, name, function, file, line, start_ns, dur_ns, depth,\n"
    "            submit_ns, submit_thread, cpu_zone_id)\n"
    "  switches(ts_ns, tid, thread, cpu, direction, reason)\n"
    "  samples(id, ts_ns, tid, thread, callstack, function, file, line)\n"
    "  callstacks(callstack, depth, address, function, file, line)\n"
    "  locations(loc, name, function, file, line, color), meta(key, value)\n"
    "Times are nanoseconds since the capture's start (mprof export --time's seconds x 1e9).\n"
    "\n"
    "Options:\n"
    "  --format F       table (default), csv (a header row, then RFC 4180 rows) or json (an\n"
    "                   array of objects)\n"
    "  --save FILE.db   also write the database as a standalone SQLite file (sqlite3, DuckDB,\n"
    "                   pandas); the SQL may then be left out\n"
    "  --rebuild        build the database again even if the cache is fresh\n"
    "  --db FILE        keep the database at FILE instead of beside the capture\n"
    "  --jobs N         threads that decode the capture while the database is built (default:\n"
    "                   one a core; 1: none, for reproducible timings); the database is the\n"
    "                   same for any N\n"
    "  -h, --help       show this help\n"
    "SQL '-' reads the statement from standard input.\n"
    "\n"
    "Example:\n"
    "  mprof query game.mprof \"SELECT name, count(*), sum(self_ns)/1e6 AS self_ms FROM zones\n"
    "                         GROUP BY name ORDER BY self_ms DESC LIMIT 10\"\n"
    "\n"
    "Exit status: 0 ok; 2 usage error, bad SQL (a syntax error, an unknown table or column,\n"
    "more than one statement) or a statement that would write; 3 the capture cannot be read\n"
    "or the database or the output cannot be written.\n";

static char *read_stdin(void)
{
    size_t len = 0, cap = 4096;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    size_t k;
    while ((k = fread(s + len, 1, cap - len - 1, stdin)) > 0) {
        len += k;
        if (cap - len < 2) {
            if (cap > (64u << 20)) {
                free(s);
                return NULL;
            }
            char *n = realloc(s, cap * 2);
            if (!n) {
                free(s);
                return NULL;
            }
            s = n;
            cap *= 2;
        }
    }
    s[len] = 0;
    return s;
}

int cmd_query(int argc, char **argv)
{
    const char *path = NULL, *sql = NULL, *save = NULL, *db_path = NULL, *format = "table";
    int rebuild = 0;
    tool_args args = tool_args_start("query", help, argc, argv, NULL, 0);
    const char *a;
    for (int kind; (kind = tool_args_next(&args, &a)) != TOOL_ARG_END;) {
        if (kind == TOOL_ARG_FILE) {
            if (!path)
                path = a;
            else if (!sql)
                sql = a;
            else
                return tool_error("query", EXIT_USAGE,
                                  "one capture and one SQL statement ('%s' is one argument too "
                                  "many: quote the SQL)",
                                  a);
        } else if (strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) {
            if (!(format = tool_args_value(&args)))
                return tool_error("query", EXIT_USAGE, "%s needs a value: table, csv or json", a);
        } else if (strcmp(a, "--save") == 0) {
            if (!(save = tool_args_value(&args)) || !*save)
                return tool_error("query", EXIT_USAGE, "--save needs a file name");
        } else if (strcmp(a, "--db") == 0) {
            if (!(db_path = tool_args_value(&args)) || !*db_path)
                return tool_error("query", EXIT_USAGE, "--db needs a file name");
        } else if (strcmp(a, "--rebuild") == 0) {
            rebuild = 1;
        } else if (strcmp(a, "--jobs") == 0) {
            if (tool_jobs("query", &args))
                return EXIT_USAGE;
        } else {
            return tool_args_unknown(&args, a);
        }
    }
    if (args.stop)
        return args.code;
    int fmt = strcmp(format, "table") == 0 ? MPROF_QUERY_TABLE
              : strcmp(format, "csv") == 0 ? MPROF_QUERY_CSV
              : strcmp(format, "json") == 0 ? MPROF_QUERY_JSON
                                            : 0;
    if (!fmt)
        return tool_error("query", EXIT_USAGE, "unknown format '%s': table, csv or json", format);
    if (!path)
        return tool_error("query", EXIT_USAGE, "which capture? (mprof query FILE.mprof \"SQL\")");
    if (!sql && !save)
        return tool_error("query", EXIT_USAGE,
                          "no SQL: give a statement, '-' to read it from standard input, or "
                          "--save FILE.db");
    if (save && tool_same_file(path, save))
        return tool_error("query", EXIT_USAGE, "--save %s is the capture itself", save);
    if (db_path && tool_same_file(path, db_path))
        return tool_error("query", EXIT_USAGE, "--db %s is the capture itself", db_path);
    char *owned = NULL;
    if (sql && strcmp(sql, "-") == 0) {
        if (!(owned = read_stdin()))
            return tool_error("query", EXIT_IO, "cannot read the SQL from standard input");
        sql = owned;
    }
    char err[1024], dbp[4200];
    sqlite3 *db = NULL;
    int built = 0, temp = 0;
    int rc = mprof__query_open(path, db_path, rebuild, &db, dbp, sizeof dbp, &built, &temp, NULL,
                               err, sizeof err);
    if (rc != MPROF_QUERY_OK) {
        free(owned);
        return tool_error("query", rc == MPROF_QUERY_BAD ? EXIT_USAGE : EXIT_IO, "%s", err);
    }
    if (save && (rc = mprof__query_save(db, save, err, sizeof err)) != MPROF_QUERY_OK) {
        sqlite3_close(db);
        if (temp)
            unlink(dbp);
        free(owned);
        return tool_error("query", EXIT_IO, "%s", err);
    }
    if (sql)
        rc = mprof__query_run(db, sql, fmt, stdout, err, sizeof err);
    sqlite3_close(db);
    if (temp)
        unlink(dbp);
    free(owned);
    if (rc != MPROF_QUERY_OK)
        return tool_error("query", rc == MPROF_QUERY_BAD ? EXIT_USAGE : EXIT_IO, "%s", err);
    return tool_finish("query", EXIT_OK);
}
