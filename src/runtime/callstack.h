/*
 * callstack.h - capturing the calling thread's return addresses, fast.
 *
 * Two methods, chosen once per process (env MPROF_CALLSTACK):
 *   "unwind" (default)  libunwind's unw_backtrace: DWARF CFI with libunwind's per-address cache,
 *                       correct for code built without frame pointers (the distribution default).
 *   "fp"                a frame-pointer walk, about ten times faster, correct only when the whole
 *                       stack was compiled with -fno-omit-frame-pointer. Every frame pointer is
 *                       checked against the thread's stack bounds, so a missing frame pointer
 *                       ends the walk early instead of reading wild memory.
 * bench/bench_memory measures both (ns per capture and per frame); docs/MEMORY.md has figures.
 */
#ifndef MPROF_CALLSTACK_H
#define MPROF_CALLSTACK_H

#include "format/format.h"

#include <stdint.h>

enum { MPROF__CS_UNWIND = 1, MPROF__CS_FP = 2 };

/* Writes up to depth (<= MPROF_FMT_MAX_CALLSTACK) return addresses into out, innermost first.
 * skip 0: out[0] is the return address into the function that called this one; skip n leaves
 * out n more frames (mprof__alloc passes 1 so that out[0] lies in the instrumented function).
 * Returns how many were written. Any thread. */
int mprof__callstack_capture(uint64_t *out, int depth, int skip);
/* The same with an explicit method (for the benchmark and tests). */
int mprof__callstack_capture_with(int method, uint64_t *out, int depth, int skip);
/* The method in use (MPROF__CS_*), read from MPROF_CALLSTACK on first use. */
int mprof__callstack_method(void);
/* Overrides the method for the whole process (benchmarks and tests). */
void mprof__callstack_set_method(int method);

/* Appends one compact DEF_MODULE record (format.h) per loaded ELF object to out: mapped start
 * address, extent in bytes, path, GNU build id in hex ("" when none). The collector calls it
 * once per session before the first DEF_CALLSTACK. On out-of-memory it stops early; every record
 * written is complete. An mprof__kv_fn (sink.h), handed to the collector by lifecycle.c. Any
 * thread. */
void mprof__modules_emit(mprof_buf *out);

#endif
