/*
 * mode.h - the recording mode (mode.c): the one word every event reads first to know whether
 * to record.
 *
 *   MPROF__MODE_OFF        not started; the first event starts the profiler (lifecycle.c)
 *   MPROF__MODE_IDLE       started, recording nothing (listening for a tool, no history)
 *   MPROF__MODE_RECORDING  events go to the thread buffers (mprof.h defines the value, since
 *                          the inline hot path compares with it)
 *
 * The hot path in mprof.h reads mprof__mode directly. It is changed only by lifecycle.c (start
 * and shutdown, and for the live sink, which asks through a hook when a tool attaches or goes)
 * and by the collector (the mode a session starts in, set before its thread runs).
 */
#ifndef MPROF_MODE_H
#define MPROF_MODE_H

#include "mprof/mprof.h"

enum { MPROF__MODE_OFF = 0, MPROF__MODE_IDLE = 1 };

/* The mode now (acquire: what the profiler set up before switching it is visible). */
static inline int mprof__mode_now(void)
{
    return __atomic_load_n(&mprof__mode, __ATOMIC_ACQUIRE);
}

/* Sets the mode (release). Lifecycle and collector only. */
void mprof__mode_set(int mode);
/* Switches the mode from one value to another, and leaves it alone when it is something else:
 * so that a late request cannot undo a start or a shutdown that came in between. */
void mprof__mode_switch(int from, int to);

#endif
