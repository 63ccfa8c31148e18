/*
 * lifecycle.h - starting and stopping the profiler (lifecycle.c), and the gate every event
 * passes: whether the calling thread records now, and where its next record goes.
 */
#ifndef MPROF_LIFECYCLE_H
#define MPROF_LIFECYCLE_H

#include "buffers.h"
#include "visibility.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Bumps on every startup: modules that announce something once per capture (locks, GPU
 * contexts) compare it with the session they last announced in. */
extern MPROF__HIDDEN _Atomic uint32_t mprof__session;

/* The calling thread's buffer, registering the thread on its first event; NULL when not
 * recording. When the profiler has never started, this starts it first (zero setup). */
mprof__thread *mprof__thread_get(void);
/* Reserves n raw bytes in the calling thread's buffer. NULL when not recording or when the
 * memory cap is reached (then the event is counted as lost). n <= MPROF__BLOCK_BYTES / 2.
 * Fill the bytes with the mprof__w_* writers and publish them with mprof__commit (buffers.h). */
unsigned char *mprof__reserve(size_t n);
/* Reserves n bytes for a record of tag stamped now (the clock is read after the reserve, which
 * may have started the profiler and calibrated it) and writes the tag and the timestamp. The
 * pointer after them, or NULL when nothing is recorded. */
static inline unsigned char *mprof__record(int tag, size_t n)
{
    unsigned char *p = mprof__reserve(n);
    if (!p)
        return NULL;
    p[0] = (unsigned char)tag;
    return mprof__w_ts(p + 1);
}

/* Records tag stamped now with one name (a pointer the tools resolve to its string): the whole
 * of the frame marks, FIBER_ENTER and POOL_DISCARD. */
static inline void mprof__record_name(int tag, const char *name)
{
    unsigned char *p = mprof__record(tag, 1 + 8 + 8);
    if (p)
        mprof__commit(mprof__w_ptr(p, name));
}

#endif
