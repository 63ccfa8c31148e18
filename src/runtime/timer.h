/*
 * timer.h - the profiler clock (timer.c): which counter stamps events, and the calibration that
 * turns its ticks into nanoseconds.
 *
 * Reading the clock is mprof__ticks() in mprof.h (inline, on the hot path). This header is the
 * rest: the start-up calibration, which timer.c alone writes and everyone else only reads once
 * the profiler has started.
 */
#ifndef MPROF_TIMER_H
#define MPROF_TIMER_H

#include "mprof/mprof.h"
#include "visibility.h"

#include <stdbool.h>
#include <stdint.h>

/* The calibration of the current session, set by mprof__timer_init before the collector starts
 * and read-only while it runs. */
typedef struct mprof__clock {
    double ns_per_tick;
    uint64_t tick_quantum;  /* every counter step is a multiple of this (1 = none seen) */
    uint64_t tick0;         /* ticks at startup */
    uint64_t mono0_ns;      /* CLOCK_MONOTONIC (CLOCK_MONOTONIC_RAW for the counter) at tick0 */
    uint64_t real0_ns;      /* CLOCK_REALTIME at tick0 */
    const char *timer_name; /* "tsc", "cntvct" or "clock" */
    double zone_cost_ns;    /* an empty zone's cost, measured at start-up */
} mprof__clock_state;

extern MPROF__HIDDEN mprof__clock_state mprof__clock;

/* The check argument of mprof__timer_init: MPROF_TOGGLE_DEFAULT/ON check that the counter is
 * invariant, OFF trusts it, MPROF__FORCE_OS_CLOCK uses the OS clock (env MPROF_TIMER=clock). */
#define MPROF__FORCE_OS_CLOCK ((mprof_toggle)99)

/* Chooses the counter and calibrates it (about 5 ms). Under the lifecycle lock, before the
 * collector starts. */
void mprof__timer_init(mprof_toggle check, bool verbose);
/* Nanoseconds since tick0. Any thread. */
uint64_t mprof__ticks_to_ns(uint64_t ticks);

#endif
