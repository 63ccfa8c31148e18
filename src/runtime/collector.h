/*
 * collector.h - the collector (collector.c): the background thread that drains the thread
 * buffers into capture chunks and hands them to the sinks it was given.
 *
 * The collector knows sinks and contributors only through sink.h: lifecycle.c opens the sinks
 * and lists who writes the INFO and END keys and the module map, and hands them over at start.
 * All of it runs under the lifecycle lock.
 */
#ifndef MPROF_COLLECTOR_H
#define MPROF_COLLECTOR_H

#include "mprof/mprof.h"
#include "sink/sink.h"

typedef struct mprof__collector_setup {
    mprof__sink *sinks[MPROF__MAX_SINKS]; /* every chunk goes to each, in this order */
    int n_sinks;
    int record;           /* the session starts recording (else idle until a sink asks) */
    mprof__kv_list info;  /* the INFO chunk's keys, written when a sink keeps whole captures */
    mprof__kv_list end;   /* END keys after the collector's own counts */
    /* Appends the definitions that precede a session's first DEF_CALLSTACK (the module map). */
    mprof__kv_fn before_stacks;
} mprof__collector_setup;

/* Makes what every session needs (the compression context), so that a start that would fail
 * for lack of memory fails before any sink is opened. MPROF_OK or MPROF_ERR_NOMEM. */
mprof_result mprof__collector_init(void);
/* Starts a session: takes the sinks (the collector owns them from here: it closes them at stop,
 * or at once when the start fails), announces every definition anew, writes INFO, sets the
 * recording mode and starts the thread. MPROF_OK or MPROF_ERR_STATE (no thread). */
mprof_result mprof__collector_start(const mprof__collector_setup *setup);
/* Drains everything, joins the thread, writes END and closes the sinks. */
void mprof__collector_stop(void);
/* Drains and writes everything now; returns when it is written. Any thread. */
void mprof__collector_flush(void);

#endif
