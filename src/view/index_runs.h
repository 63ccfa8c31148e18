/*
 * index_runs.h - a group of records that arrive nearly in key order (the spans of one lock and
 * kind, which the walker hands out when they are released; callstack samples, in file order),
 * written to the served viewer's index as it arrives, as one or more arrays each sorted by key
 * (runs), without holding the group in memory.
 *
 * Each group keeps a few levels, each a reorder window (a min-heap of VRUN_WINDOW items) in
 * front of an open run: an item goes to the first level whose run it can still join (its key is
 * at least the key that run wrote last), and a full window writes its smallest item. Every item
 * in a window is at least its run's last key (it was when it came in, and a run writes only its
 * window's smallest), so every run is sorted. An item that no level can take closes the last
 * level's run (its window written, in order) and starts a new one there. A group released in
 * start order, or out of it by less than a window, is one run; a few long spans that end long
 * after others began (a shared lock's long holds) make a second level; only a capture out of
 * order at every scale makes many runs, which cost a directory entry each, never memory.
 *
 * The figures the answers need are sums and maxima over the items of a key range, which add up
 * over runs: a range's count, total and longest span is each run's, summed (the longest, the
 * greatest), so the runs are never merged.
 *
 * A run of spans is an array of vrspan: the start and the duration of the run's spans before it,
 * ending with a sentinel {INT64_MAX, the run's total}, so span i lasts pre[i + 1] - pre[i]; the
 * directory keeps each block's longest span (vblk.d_max). A run of samples is an array of
 * vrsample by time.
 *
 * Threads: a group belongs to the builder's thread; reading is a vread's.
 */
#ifndef MPROF_VIEW_INDEX_RUNS_H
#define MPROF_VIEW_INDEX_RUNS_H

#include "view/index_block.h"

#include <stdint.h>

#define VRUN_WINDOW 256 /* items each level holds back to put them in order */
#define VRUN_LEVELS 3

enum { VRUN_SPANS = 1, VRUN_SAMPLES = 2 };

/* An item as it arrives: spans: key the start, val the duration (>= 0); samples: key the time,
 * val the stack id | the sampled thread's index << 32. */
typedef struct vrun_item { int64_t key; uint64_t val; } vrun_item;

/* The records of the runs, as stored. */
typedef struct vrspan { int64_t s, pre; } vrspan;
typedef struct vrsample { int64_t ts; uint32_t stack, tix; } vrsample;

typedef struct vrun_level {
    vrun_item *heap; /* the window, a min-heap by key; VRUN_WINDOW items, allocated at first use */
    uint32_t n;
    int64_t last;    /* the key its run wrote last; INT64_MIN before any */
    int64_t pre;     /* spans: the duration its run holds so far */
    vab run;         /* the open run (n 0: none) */
} vrun_level;

typedef struct vruns {
    uint32_t kind;
    vrun_level lv[VRUN_LEVELS];
    vab *done;       /* closed runs, in the order they closed; owned, mprof__vruns_free frees */
    uint32_t n_done, cap_done;
    uint64_t n;      /* items added */
} vruns;

void mprof__vruns_init(vruns *g, uint32_t kind);
/* Adds an item. 0, or -1 when out of memory or on an I/O error (o->failed set). */
int mprof__vruns_add(vruns *g, vout *o, const vrun_item *it);
/* Closes every open run; afterwards the runs are g->done[0, g->n_done). 0, or -1. */
int mprof__vruns_finish(vruns *g, vout *o);
void mprof__vruns_free(vruns *g);

/* The spans of runs x->arrays[arr0, arr0 + n_runs) of r's index that start in [t0, t1): their
 * count, total and longest duration. A run that is not one of spans sets r->err. */
void mprof__vruns_span_range(vread *r, uint64_t arr0, uint64_t n_runs, int64_t t0, int64_t t1, uint64_t *out_n,
                             int64_t *out_total, int64_t *out_max);

#endif
