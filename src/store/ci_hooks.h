/*
 * ci_hooks.h - the run store's part of the mprof command: the hooks `mprof ci` calls for --store
 * and --baseline store[:last=N] (tools/cmd_ci.c), and the exit status that `mprof store` and
 * `mprof history` share. docs/STORE.md describes them.
 *
 * Threads: the tool's one thread.
 */
#ifndef MPROF_STORE_CI_HOOKS_H
#define MPROF_STORE_CI_HOOKS_H

#include "ci/report.h"
#include "store/store.h"

/* The exit status of a store failure: 2 bad URL, 3 bad input file, 4 (EXIT_STORE) otherwise. */
int mprof__store_exit_code(mprof_store_result rc);

/* True when a --baseline value names the store ("store" or "store:last=N"). */
int mprof__ci_store_is_baseline(const char *baseline);
/* Checks --store and --baseline at option time; prints a usage error and returns -1, or 0. */
int mprof__ci_store_check_args(const char *store_url, const char *baseline);

/* What the store did for one `mprof ci` invocation: the baseline step leaves it for the record
 * step, and the report says it. Zero-initialised before the first hook. */
typedef struct mprof_ci_store {
    int baseline_used;       /* --baseline store was asked for */
    int baseline_failed;     /* the store could not give a baseline */
    char baseline_error[2200];
    char baseline_dir[1200]; /* where the baseline exports went */
    size_t baseline_last;
    int64_t baseline_ids[64]; /* the stored runs they came from */
    size_t n_baseline_ids;
    int recorded;            /* the record step ran */
    int64_t run_id;          /* the stored run, -1 when not stored */
    char url[4096];          /* the store for messages, its password hidden */
    char error[4200];        /* what failed, "" when nothing did */
} mprof_ci_store;

/*
 * --baseline store[:last=N]: materialises the store's last N (default 5) passing runs of the
 * current export's host and build type as frame exports in DIR/store-baseline/ and points
 * *baseline at that directory; sets it to NULL when the store holds no such run (no gate,
 * verdict no-baseline) or cannot be used (the failure is printed and kept in st for the record
 * step). quiet: print nothing on success.
 */
void mprof__ci_store_baseline(mprof_ci_store *st, const char *store_url, const char **baseline,
                              const char *dir, const char *current_export, int quiet);
/*
 * After ci-report.json is written: stores the run it describes (with its frame exports) when
 * store_url is set, and returns the exit status: exit_code, or EXIT_STORE when it was 0 and the
 * store (for the baseline or the record) failed. mprof__ci_store_note then says what happened
 * for the report to be written again with it.
 */
int mprof__ci_store_record(mprof_ci_store *st, const char *store_url, const char *report_path,
                           int exit_code, int quiet);
/* True when the invocation asked anything of a store (--store, or --baseline store). */
int mprof__ci_store_asked(const mprof_ci_store *st, const char *store_url);
/* The report's "store" member for st, in out (which borrows from st). */
const mprof_ci_report_store *mprof__ci_store_note(const mprof_ci_store *st,
                                                  mprof_ci_report_store *out);

#endif
