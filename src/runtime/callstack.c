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
 *
 * Callstacks are only addresses; turning them into function, file and line happens in the tools
 * (src/analysis/symbolize.c), possibly on another machine. What that needs is the module map:
 * for each loaded ELF object its mapped start address, extent, path and GNU build id.
 * mprof__modules_emit writes it as DEF_MODULE records, here beside the capture that needs it;
 * the collector calls it once per session, before the first callstack definition.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define UNW_LOCAL_ONLY
#include "callstack.h"

#include "format/format.h"

#include <elf.h>
#include <libunwind.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ---- module map ---------------------------------------------------------------------------- */

typedef struct emit_ctx {
    mprof_buf *out;
    int index;
    int failed;
} emit_ctx;

/* Hex of the NT_GNU_BUILD_ID note in the object's PT_NOTE segments, or "" when it has none. */
static void build_id_hex(const struct dl_phdr_info *info, char *hex, size_t cap)
{
    hex[0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        const unsigned char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) nh;
            memcpy(&nh, p, sizeof nh);
            const unsigned char *name = p + sizeof nh;
            const unsigned char *desc = name + ((nh.n_namesz + 3) & ~3u);
            const unsigned char *next = desc + ((nh.n_descsz + 3) & ~3u);
            if (next > end)
                break;
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                size_t n = nh.n_descsz;
                if (n * 2 + 1 > cap)
                    n = (cap - 1) / 2;
                for (size_t k = 0; k < n; k++)
                    snprintf(hex + 2 * k, 3, "%02x", desc[k]);
                return;
            }
            p = next;
        }
    }
}

static int emit_one(struct dl_phdr_info *info, size_t size, void *user)
{
    (void)size;
    emit_ctx *c = user;
    int first = c->index++ == 0;
    char path[PATH_MAX];
    const char *name = info->dlpi_name;
    if (first && (!name || !name[0])) {
        /* The main program has no name in the list. */
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0)
            return 0;
        path[n] = 0;
        name = path;
    }
    /* Only objects with a file: not the vDSO ("linux-vdso.so.1"), which no reader can open. */
    if (!name || name[0] != '/')
        return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (ph->p_vaddr < lo)
            lo = ph->p_vaddr;
        if (ph->p_vaddr + ph->p_memsz > hi)
            hi = ph->p_vaddr + ph->p_memsz;
    }
    if (lo >= hi)
        return 0;
    char bid[129];
    build_id_hex(info, bid, sizeof bid);
    size_t nl = strlen(name), bl = strlen(bid);
    if (nl > 0xfffe)
        return 0;
    if (mprof_buf_reserve(c->out, 1 + 10 + 10 + 10 + nl + 10 + bl) != 0) {
        c->failed = 1;
        return 1;
    }
    unsigned char *o = c->out->data + c->out->len;
    *o++ = MPROF_EV_DEF_MODULE;
    o = mprof_put_varint(o, (uint64_t)(info->dlpi_addr + lo));
    o = mprof_put_varint(o, (uint64_t)(hi - lo));
    o = mprof_put_str(o, name, nl);
    o = mprof_put_str(o, bid, bl);
    c->out->len = (size_t)(o - c->out->data);
    return 0;
}

void mprof__modules_emit(mprof_buf *out)
{
    emit_ctx c = {out, 0, 0};
    dl_iterate_phdr(emit_one, &c);
}
