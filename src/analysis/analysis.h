/*
 * analysis.h - statistics over a capture, computed in streaming passes (docs/STATISTICS.md).
 *
 * A report reads the capture once: the core pass settles the part of each zone inside the main
 * frames' span (which tells time inside frames from start-up and shutdown) as the frame marks
 * come (analysis.c), and the passes run in the same read. A report is a set of passes. Each pass sees every event once, in file order (per-thread order
 * is time order; across threads it is not), keeps only per-source-location, per-frame or
 * per-object state, and prints its section as text and as JSON. Memory grows with the number of
 * distinct zones, frames and objects, never with the number of events.
 *
 * Adding a pass: implement mprof_pass_vtbl in src/analysis/<topic>.c and add it to the table in
 * analysis.c. The core pass (frames, zones, plots, messages, threads, events) is always on. A
 * pass whose figures need records that arrive out of time order with the zones (the system
 * thread's switches and samples) reads them in a prescan (the same read) and then walks the zone
 * records, which the read keeps for it up to a fixed size (else it reads them again), instead of
 * keeping every zone's figures; a capture without them needs nothing more.
 */
#ifndef MPROF_ANALYSIS_H
#define MPROF_ANALYSIS_H

#include "format/batch.h"
#include "format/format.h"
#include "util/json_out.h"
#include "analysis/hist.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct mprof_analysis mprof_analysis;

typedef struct mprof_pass_vtbl {
    const char *name;   /* "memory"; also the report flag --memory */
    bool always;        /* run even when not asked for */
    /* Runs beside the core pass, as the second stage of the read (mprof_reader_each_batch_then:
     * with jobs > 1 on another reader thread, on a batch while the core pass is on later ones):
     * it reads the reader's tables and writes its own state only. The core pass and the passes
     * without it take the batches one at a time in file order, on the reader's thread that
     * decoded each (mprof_reader_each_batch). */
    bool beside;
    void *(*create)(mprof_analysis *a);
    void (*event)(void *state, mprof_analysis *a, const mprof_event *ev);
    void (*finish)(void *state, mprof_analysis *a); /* after the last event */
    void (*print_text)(void *state, mprof_analysis *a, FILE *out, int top_n);
    void (*print_json)(void *state, mprof_analysis *a, mprof_json *j); /* writes "key": value */
    void (*destroy)(void *state);
    /* Optional: the first read (before any call to event), with that read's reader. It hands out
     * definitions, the main frame marks and the tags prescan_want sets in want; prescan_batch
     * sees each of its batches (batch.h: max_ts_ns covers the events left out too), and
     * prescan_end comes after the last, when the reader holds every definition. */
    void (*prescan_want)(unsigned char want[MPROF_EV_MAX]);
    void (*prescan_batch)(void *state, const mprof_reader *r, const mprof_batch *b);
    void (*prescan_end)(void *state, const mprof_reader *r);
    /* Optional: after prescan_end, whether the pass is done (the capture had nothing for its
     * batch or event hook). In one read (the analysis reads the capture once and runs the
     * prescans in that read), a pass that is not done reads the capture again on its own; NULL:
     * never done. */
    bool (*prescan_done)(const void *state);
    /* Its batch hook, after a prescan, reads b->rec and b->run only (not b->ev), so that one read
     * can keep those records for it (up to a fixed size) instead of reading the capture again. */
    bool records_only;
    /* Optional, in place of event: every record of a batch in file order (format/batch.h), so
     * that a pass walks records without a call per event, or reads only b->ev when zones do not
     * concern it. */
    void (*batch)(void *state, mprof_analysis *a, const mprof_batch *b);
    /* Optional: sets in need the tags whose events (fields, in b->ev or to the event hook) the
     * pass reads outside its prescan. When every pass of a read has it, the tags none of them
     * needs come as their records only (batch.h, MPROF_WANT_RECORD): a lock event, a zone value
     * costs a 16-byte record instead of a 128-byte event. NULL: the pass reads every tag. */
    void (*fields)(unsigned char need[MPROF_EV_MAX]);
} mprof_pass_vtbl;

/* The six hooks every pass has, named after its prefix: prefix_create, prefix_event, ... */
#define MPROF_PASS_HOOKS(prefix)                                                                  \
    .create = prefix##_create, .event = prefix##_event, .finish = prefix##_finish,                \
    .print_text = prefix##_print_text, .print_json = prefix##_print_json,                         \
    .destroy = prefix##_destroy

typedef struct mprof_analysis_opts {
    int top_n;                /* rows in each text table (0 = default 20; INT_MAX = all) */
    const char *passes;       /* comma list of optional passes to enable, "all", or NULL */
    int jobs;                 /* threads that decode the capture (0 = the process's setting,
                                 mprof_set_read_jobs; 1 = none) */
} mprof_analysis_opts;

/* Runs every pass over the capture at path. Returns NULL with a message in err on failure. */
mprof_analysis *mprof_analysis_run(const char *path, const mprof_analysis_opts *opts, char *err,
                                   size_t errlen);
void mprof_analysis_free(mprof_analysis *a);
void mprof_analysis_print_text(mprof_analysis *a, FILE *out);
void mprof_analysis_print_json(mprof_analysis *a, FILE *out);

/* For passes: the reader (names of srclocs, strings, threads) and the core pass's results. */
const mprof_reader *mprof_analysis_reader(const mprof_analysis *a);
void *mprof_analysis_pass_state(const mprof_analysis *a, const char *name);

/* Passes in their own modules (src/analysis/memory.c, locks.c, fibers.c). */
extern const mprof_pass_vtbl mprof__memory_pass;
extern const mprof_pass_vtbl mprof__locks_pass;
extern const mprof_pass_vtbl mprof__fibers_pass;
extern const mprof_pass_vtbl mprof__async_pass;
extern const mprof_pass_vtbl mprof__process_pass; /* process_pass.c: several processes */
/* Fiber hook: the core pass ignores zone events recorded inside a fiber (between FIBER_ENTER
 * and FIBER_LEAVE on a thread); the fibers pass matches them on the fiber's track, across
 * threads, and adds each completed zone to the zone table through this function (nested: an
 * instance of the same source location was open on the fiber, see the recursion rule). */
void mprof__analysis_fiber_zone(mprof_analysis *a, uint32_t loc, int64_t start, int64_t dur,
                                int64_t self, int nested);
/* Non-zero when the pass called name was asked for (--name or --all). */
int mprof__analysis_wants(const mprof_analysis *a, const char *name);
/* Share (0..1) of main-thread frame time covered by top-level zones. */
double mprof_analysis_coverage(const mprof_analysis *a);

#endif
