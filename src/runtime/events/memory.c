/*
 * memory.c - allocation events and the module map.
 *
 * mprof__alloc / mprof__free / mprof__pool_discard write ALLOC, FREE and POOL_DISCARD raw
 * records (format.h) into the calling thread's buffer. With a depth they also capture a
 * callstack (callstack.c) straight into the reserved record: the CS field's raw form is a u8
 * depth followed by depth 8-byte return addresses, innermost first, starting in the function
 * that called the MPROF_ALLOC_* macro. The timestamp is taken before the capture so that it
 * marks the allocation, not the end of the unwinding, and after the reservation, which starts
 * the profiler (and calibrates its clock) when this is the process's first event.
 *
 * Callstacks are only addresses; turning them into function, file and line happens in the tools
 * (src/analysis/symbolize.c), possibly on another machine. What that needs is the module map:
 * for each loaded ELF object its mapped start address, extent, path and GNU build id.
 * mprof__modules_emit writes it as DEF_MODULE records; the collector calls it once per session,
 * before the first callstack definition.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core.h"
#include "callstack.h"

#include <elf.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

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
    unsigned char *p = mprof__reserve(ALLOC_FIXED + (size_t)depth * 8);
    if (!p)
        return;
    uint64_t ts = mprof__ticks();
    *p = MPROF_EV_ALLOC;
    p = mprof__w_u64(p + 1, ts);
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
    unsigned char *p = mprof__reserve(FREE_FIXED + (size_t)depth * 8);
    if (!p)
        return;
    uint64_t ts = mprof__ticks();
    *p = MPROF_EV_FREE;
    p = mprof__w_u64(p + 1, ts);
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
    unsigned char *p = mprof__reserve(1 + 8 + 8);
    if (!p)
        return;
    *p = MPROF_EV_POOL_DISCARD;
    p = mprof__w_ts(p + 1);
    p = mprof__w_ptr(p, pool);
    mprof__commit(p);
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
    o = mprof_put_varint(o, nl);
    memcpy(o, name, nl);
    o += nl;
    o = mprof_put_varint(o, bl);
    memcpy(o, bid, bl);
    o += bl;
    c->out->len = (size_t)(o - c->out->data);
    return 0;
}

void mprof__modules_emit(mprof_buf *out)
{
    emit_ctx c = {out, 0, 0};
    dl_iterate_phdr(emit_one, &c);
}
