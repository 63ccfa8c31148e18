/*
 * store.h - the run store behind `mprof ci --store`, `mprof store add` and `mprof history`: one
 * row per `mprof ci` invocation (its repetitions and their per-frame data beside it), kept in an
 * embedded SQLite file or a shared PostgreSQL server, so a CI farm can gate each build against
 * the recent history of the same machine.
 *
 * One interface, two backends chosen by the URL:
 *   sqlite:PATH                  a file opened with libsqlite3 (created when missing)
 *   postgresql://... postgres:// a server reached with libpq (any libpq connection URI)
 *
 * Step by step: mprof__store_open() parses the URL, connects and migrates the schema (creating
 * it on first use, refusing a schema newer than this binary); mprof__store_add() inserts a run
 * in one transaction; mprof__store_query() lists runs newest first without their per-frame
 * data; mprof__store_baseline() loads the last N passing runs of a host and build type with
 * their per-frame data; mprof__store_close() ends it. docs/STORE.md describes the schema.
 *
 * Every statement is a constant string with bound parameters: nothing from a run, a filter or
 * the URL is ever pasted into SQL. Every value read back is checked (numbers must parse whole and
 * be finite, per-frame arrays must be JSON arrays of non-negative numbers of the stated length),
 * so a damaged or hostile database gives an error naming the run, never a crash.
 *
 * Threads: a store handle is used by one thread at a time; distinct handles are independent.
 * Two processes (two CI jobs) may write one store at once: each run is one transaction, and
 * SQLite waits for the other writer (busy timeout 30 s), PostgreSQL serialises them itself.
 * Memory: runs returned by query/baseline are owned by the caller, freed with
 * mprof__store_runs_free(); mprof__store_close(NULL) is a no-op.
 */
#ifndef MPROF_STORE_STORE_H
#define MPROF_STORE_STORE_H

#include "export/frames_run.h"

#include <stddef.h>
#include <stdint.h>

/* The schema version this binary writes; stores with a higher version are refused. */
#define MPROF_STORE_SCHEMA_VERSION 3

/* Results, 0 = OK. Names come from one list so messages and docs agree. */
#define MPROF_STORE_RESULTS(X)                                                                     \
    X(OK, "ok")                                                                                    \
    X(BAD_URL, "bad store URL")                                                                    \
    X(UNREACHABLE, "the store cannot be reached")                                                  \
    X(SCHEMA_TOO_NEW, "the store's schema is newer than this mprof")                              \
    X(QUERY, "a statement failed")                                                                 \
    X(BAD_ROW, "a stored value is malformed")                                                      \
    X(BAD_INPUT, "the run to store is malformed")                                                  \
    X(NOMEM, "out of memory")

typedef enum mprof_store_result {
#define MPROF_STORE_ENUM(name, text) MPROF_STORE_##name,
    MPROF_STORE_RESULTS(MPROF_STORE_ENUM)
#undef MPROF_STORE_ENUM
} mprof_store_result;

const char *mprof__store_result_text(mprof_store_result r);

typedef enum mprof_store_kind {
    MPROF_STORE_KIND_NONE = 0,
    MPROF_STORE_KIND_SQLITE,
    MPROF_STORE_KIND_POSTGRESQL
} mprof_store_kind;

/* A parsed URL. target is the SQLite path or the libpq URI; display is the URL with any
 * password replaced by "***", for messages. */
typedef struct mprof_store_url {
    mprof_store_kind kind;
    char target[4096];
    char display[4096];
} mprof_store_url;

/* Parses url. Returns MPROF_STORE_OK, or MPROF_STORE_BAD_URL with a message in err saying what is
 * wrong and what is accepted. Never touches the file system or the network. */
mprof_store_result mprof__store_parse_url(const char *url, mprof_store_url *out, char *err,
                                          size_t errlen);

/* A repetition of a run is one frame export, the run model of export/frames_run.h: what the store
 * keeps of it is its frames with their summary, the main thread's on/off-CPU time per frame
 * (both or neither), and up to MPROF_STORE_TOP_ZONES zones with their name, selfTotalMs, self
 * time per frame and its mean (self_mean_ms). A summary repetition (mprof_store_filter's
 * with_zone_means) holds only zones with their self_mean_ms. */
/* One stored run. Strings may be NULL (unknown); host and build_type are "" when unknown. */
/* How mprof__store_add stored a run (mprof_store_run.added), for its message. */
typedef enum mprof_store_added {
    MPROF_STORE_ADDED_NEW = 0, /* stored now */
    MPROF_STORE_ADDED_ALREADY, /* a run with its uid was stored before: it is not stored again */
    MPROF_STORE_ADDED_FOUND,   /* the connection was lost at the commit; the run was found stored
                                  on a new connection */
    MPROF_STORE_ADDED_RETRIED  /* the connection was lost before the run was stored; it was stored
                                  on a new connection */
} mprof_store_added;

typedef struct mprof_store_run {
    int64_t id;                  /* set by the store */
    char *uid;                   /* the run's unique id, made where the run is made (a CI
                                    report's runUid); mprof__store_add makes one when NULL or "".
                                    The store keeps one run per uid. */
    mprof_store_added added;     /* set by mprof__store_add */
    char *git_sha, *branch, *command, *host, *cpu, *build_type;
    char *start_time;            /* ISO 8601 UTC; the recording time when the capture had none */
    char *recorded_at;           /* ISO 8601 UTC, set by mprof__store_add when NULL */
    char *verdict;               /* pass, regression, inconclusive, no-baseline, failed */
    char *artifact_path;
    int64_t artifact_bytes;      /* -1 unknown */
    size_t frame_count;          /* all repetitions pooled */
    double p50_ms, p90_ms, p95_ms, p99_ms, mean_ms;
    int have_cpu;                /* the on/off-CPU means below are known */
    double on_cpu_mean_ms, off_cpu_mean_ms; /* main thread per frame, pooled */
    mprof_frames_run *reps;      /* the repetitions */
    size_t n_reps;               /* repetitions loaded in reps (0 in summaries) */
    size_t n_reps_stored;        /* repetitions the stored row counts */
} mprof_store_run;

/* Verdicts a rolling baseline may use: the run was not a failure. */
int mprof__store_verdict_is_passing(const char *verdict);

typedef struct mprof_store mprof_store;

/*
 * Opens the store at url and brings its schema to MPROF_STORE_SCHEMA_VERSION (created on first
 * use; two processes migrating at once are serialised). Returns the handle, or NULL with the
 * result in *out_rc (BAD_URL, UNREACHABLE, SCHEMA_TOO_NEW, QUERY, NOMEM) and a message in err.
 */
mprof_store *mprof__store_open(const char *url, mprof_store_result *out_rc, char *err,
                               size_t errlen);
void mprof__store_close(mprof_store *s);
/* The URL for messages (password hidden). */
const char *mprof__store_display(const mprof_store *s);
/* The schema version found when the store was opened (before migrating), 0 for a new store. */
int mprof__store_found_version(const mprof_store *s);

/* Computes the run's pooled frame count, percentiles and on/off-CPU means, and each repetition's
 * summary and zone self_mean_ms, from its repetitions. Returns 0, or -1 when out of memory. */
int mprof__store_summarise(mprof_store_run *run);

/* Adds run (its repetitions and zones) in one transaction, once per run->uid; sets run->id and
 * run->added. A run whose uid is stored already is not stored again (ADDED_ALREADY, its id). A
 * connection lost during the write is opened again (for up to MPROF_STORE_RECONNECT_S) and the
 * run looked up by its uid: found, it was stored by the commit whose answer was lost (FOUND);
 * missing, it is written again (RETRIED). So a run is stored exactly once, and on failure err
 * says whether it is not stored or, when the store did not come back, may be. */
#define MPROF_STORE_RECONNECT_S 20
mprof_store_result mprof__store_add(mprof_store *s, mprof_store_run *run, char *err,
                                    size_t errlen);
/* " (...)" saying how an added run was stored when it is worth a word, else "". */
const char *mprof__store_added_note(const mprof_store_run *run);

typedef struct mprof_store_filter {
    const char *host;       /* NULL = any */
    const char *build_type; /* NULL = any */
    size_t last;            /* at most this many runs; 0 = 100 */
    int passing_only;       /* only verdicts mprof__store_verdict_is_passing() accepts */
    int with_frames;        /* load repetitions with per-frame data and zones */
    int with_zone_means;    /* load one summary repetition whose zones hold each zone's mean
                               self time per frame over the run's repetitions (no per-frame
                               data) */
} mprof_store_filter;

/* Runs matching the filter, newest first (start time, then id). *out_runs is NULL when there are
 * none. */
mprof_store_result mprof__store_query(mprof_store *s, const mprof_store_filter *f,
                                      mprof_store_run **out_runs, size_t *out_n, char *err,
                                      size_t errlen);

/* The rolling baseline: the last n passing runs of host and build_type, with per-frame data. */
mprof_store_result mprof__store_baseline(mprof_store *s, const char *host, const char *build_type,
                                         size_t n, mprof_store_run **out_runs, size_t *out_n,
                                         char *err, size_t errlen);

void mprof__store_run_clear(mprof_store_run *run);
void mprof__store_runs_free(mprof_store_run *runs, size_t n);

/* Result rows as text: what both backends return and what the decoders below check. cells is
 * row-major, n_rows x n_cols, NULL for SQL NULL. */
typedef struct mprof_store_rows {
    size_t n_rows, n_cols;
    char **cells;
} mprof_store_rows;

void mprof__store_rows_clear(mprof_store_rows *rows);

/* Decoders of stored rows, exposed for the fuzz target and the tests. Each returns OK or BAD_ROW
 * with a message naming the column; out is zeroed first and holds nothing to free on failure. */
#define MPROF_STORE_RUN_COLS 21
mprof_store_result mprof__store_decode_run(const mprof_store_rows *rows, size_t row,
                                           mprof_store_run *out, char *err, size_t errlen);
#define MPROF_STORE_REP_COLS 9
mprof_store_result mprof__store_decode_rep(const mprof_store_rows *rows, size_t row,
                                           mprof_frames_run *out, char *err, size_t errlen);
/* A per-frame array as stored: a JSON array of exactly n non-negative finite numbers (n =
 * SIZE_MAX: any length, returned in *out_n). */
mprof_store_result mprof__store_decode_array(const char *text, size_t n, double **out,
                                             size_t *out_n, char *err, size_t errlen);

#endif
