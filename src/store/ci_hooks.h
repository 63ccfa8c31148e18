/*
 * ci_store.h - the run store's part of the mprof command: the hooks `mprof ci` calls for --store
 * and --baseline store[:last=N] (tools/ci_store.c), and what `mprof store` and `mprof history`
 * share. docs/STORE.md describes them.
 *
 * Threads: the tool's one thread.
 */
#ifndef MPROF_CI_STORE_H
#define MPROF_CI_STORE_H

#include "store/store.h"

/* The exit status of a store failure: 2 bad URL, 3 bad input file, 4 (EXIT_STORE) otherwise. */
int mprof__store_exit_code(mprof_store_result rc);

/* True when a --baseline value names the store ("store" or "store:last=N"). */
int mprof__ci_store_is_baseline(const char *baseline);
/* Checks --store and --baseline at option time; prints a usage error and returns -1, or 0. */
int mprof__ci_store_check_args(const char *store_url, const char *baseline);
/*
 * --baseline store[:last=N]: materialises the store's last N (default 5) passing runs of the
 * current export's host and build type as frame exports in DIR/store-baseline/ and points
 * *baseline at that directory; sets it to NULL when the store holds no such run (no gate,
 * verdict no-baseline) or cannot be used (the failure is printed and reported by
 * mprof__ci_store_record). quiet: print nothing on success.
 */
void mprof__ci_store_baseline(const char *store_url, const char **baseline, const char *dir,
                              const char *current_export, int quiet);
/*
 * After ci-report.json is written: stores the run it describes (with its frame exports) when
 * store_url is set, adds a "store" object to the report, and returns the exit code: exit_code,
 * or EXIT_STORE when it was 0 and the store (for the baseline or the record) failed; the report's
 * exitCode and reasons say so too.
 */
int mprof__ci_store_record(const char *store_url, const char *report_path, int exit_code,
                           int quiet);

#endif
