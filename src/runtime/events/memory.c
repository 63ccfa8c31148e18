/*
 * memory.c - allocation events: ALLOC, FREE and POOL_DISCARD.
 *
 * mprof__alloc / mprof__free / mprof__pool_discard write ALLOC, FREE and POOL_DISCARD raw
 * records (format.h) into the calling thread's buffer. With a depth they also capture a
 * callstack (callstack.c) straight into the reserved record: the CS field's raw form is a u8
 * depth followed by depth 8-byte return addresses, innermost first, starting in the function
 * that called the MPROF_ALLOC_* macro. The timestamp is taken before the capture so that it
 * marks the allocation, not the end of the unwinding, and after the reservation, which starts
 * the profiler (and calibrates its clock) when this is the process's first event.
 *
 * Callstacks are only addresses; the module map that lets the tools symbolize them is written by
 * callstack.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "buffers.h"
#include "callstack.h"
#include "lifecycle.h"

/* tag + TS + PTR + U64 + NAME + CS depth byte */
#define ALLOC_FIXED (1 + 8 + 8 + 8 + 8 + 1)
/* tag + TS + PTR + NAME + CS depth byte */
#define FREE_FIXED (1 + 8 + 8 + 8 + 1)

static inline int clamp_depth(int depth)
{
    if (depth <= 0)
        return 0;
    return depth > MPROF_FMT_MAX_CALLSTACK ? MPROF_FMT_MAX_CALLSTACK : depth;
}

/* Fills the CS field at p (depth byte + frames). Returns the end. noinline keeps the frame count
 * between the macro's call site and the capture fixed: caller -> mprof__alloc -> write_cs. */
static __attribute__((noinline)) unsigned char *write_cs(unsigned char *p, int depth)
{
    uint64_t frames[MPROF_FMT_MAX_CALLSTACK];
    int n = mprof__callstack_capture(frames, depth, 2);
    *p++ = (unsigned char)n;
    memcpy(p, frames, (size_t)n * 8);
    return p + (size_t)n * 8;
}

void mprof__alloc(const void *ptr, size_t size, const char *pool, int depth)
{
    if (!ptr) /* a failed allocation allocated nothing */
        return;
    depth = clamp_depth(depth);
    /* Reserve first: the first event of a process starts the profiler, and the clock is only
     * calibrated (TSC or not) once it has. */
    unsigned char *p = mprof__record(MPROF_EV_ALLOC, ALLOC_FIXED + (size_t)depth * 8);
    if (!p)
        return;
    p = mprof__w_ptr(p, ptr);
    p = mprof__w_u64(p, (uint64_t)size);
    p = mprof__w_ptr(p, pool);
    if (depth)
        p = write_cs(p, depth);
    else
        *p++ = 0;
    mprof__commit(p);
}

void mprof__free(const void *ptr, const char *pool, int depth)
{
    if (!ptr) /* free(NULL) frees nothing */
        return;
    depth = clamp_depth(depth);
    unsigned char *p = mprof__record(MPROF_EV_FREE, FREE_FIXED + (size_t)depth * 8);
    if (!p)
        return;
    p = mprof__w_ptr(p, ptr);
    p = mprof__w_ptr(p, pool);
    if (depth)
        p = write_cs(p, depth);
    else
        *p++ = 0;
    mprof__commit(p);
}

void mprof__pool_discard(const char *pool)
{
    mprof__record_name(MPROF_EV_POOL_DISCARD, pool);
}
