/*
 * callstack.c - return-address capture for allocation callstacks.
 *
 * The default is libunwind's unw_backtrace, which follows DWARF call-frame information and
 * caches it per address, so it is correct for code built without frame pointers: 7-10 ns per
 * frame here, within noise of glibc's backtrace(), which however dlopens libgcc_s on its first
 * call (bench/bench_memory measures all three). The frame-pointer walk (MPROF_CALLSTACK=fp)
 * costs about 1 ns per frame but is only right when every frame keeps its frame pointer; it
 * validates each one against the thread's stack bounds and falls back to libunwind when the
 * walk starts outside them (on a fiber's own stack).
 *
 * Frame accounting: the worker is always inlined into the two exported functions. unw_backtrace
 * reports the exported function's own frame first, which is dropped; the frame-pointer walk
 * starts from the exported function's frame record, whose return address is already the caller's.
 * Both therefore agree that out[0] lies in the caller (tests/test_memory.c checks it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define UNW_LOCAL_ONLY
#include "callstack.h"

#include "format/format.h"

#include <libunwind.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int cs_method;
static __thread uintptr_t stack_lo, stack_hi;
static __thread int stack_known;

int mprof__callstack_method(void)
{
    int m = cs_method;
    if (m)
        return m;
    const char *e = getenv("MPROF_CALLSTACK");
    m = (e && strcmp(e, "fp") == 0) ? MPROF__CS_FP : MPROF__CS_UNWIND;
    cs_method = m;
    return m;
}

void mprof__callstack_set_method(int method)
{
    cs_method = method == MPROF__CS_FP ? MPROF__CS_FP : MPROF__CS_UNWIND;
}

static void stack_bounds(void)
{
    pthread_attr_t attr;
    stack_known = -1;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size) {
        stack_lo = (uintptr_t)addr;
        stack_hi = (uintptr_t)addr + size;
        stack_known = 1;
    }
    pthread_attr_destroy(&attr);
}

static inline __attribute__((always_inline)) int capture_impl(int method, uint64_t *out,
                                                              int depth, int skip)
{
    if (depth <= 0)
        return 0;
    if (depth > MPROF_FMT_MAX_CALLSTACK)
        depth = MPROF_FMT_MAX_CALLSTACK;
    if (skip < 0)
        skip = 0;
    int want = depth + skip;
    if (method == MPROF__CS_FP) {
        if (!stack_known)
            stack_bounds();
        uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
        if (stack_known > 0 && fp >= stack_lo && fp < stack_hi) {
            int n = 0, i = 0;
            /* fp[0] = caller's fp, fp[1] = return address into the caller. */
            while (n < depth && fp >= stack_lo && fp + 16 <= stack_hi && !(fp & 7)) {
                const uintptr_t *f = (const uintptr_t *)fp;
                uintptr_t ret = f[1], next = f[0];
                if (!ret)
                    break;
                if (i++ >= skip)
                    out[n++] = ret;
                if (next <= fp)
                    break;
                fp = next;
            }
            return n;
        }
    }
    void *buf[MPROF_FMT_MAX_CALLSTACK + 16];
    if (want > (int)(sizeof buf / sizeof buf[0]) - 1)
        want = (int)(sizeof buf / sizeof buf[0]) - 1;
    int got = unw_backtrace(buf, want + 1);
    int n = 0;
    for (int i = 1 + skip; i < got && n < depth; i++)
        out[n++] = (uint64_t)(uintptr_t)buf[i];
    return n;
}

__attribute__((noinline)) int mprof__callstack_capture(uint64_t *out, int depth, int skip)
{
    return capture_impl(mprof__callstack_method(), out, depth, skip);
}

__attribute__((noinline)) int mprof__callstack_capture_with(int method, uint64_t *out, int depth,
                                                            int skip)
{
    return capture_impl(method, out, depth, skip);
}
