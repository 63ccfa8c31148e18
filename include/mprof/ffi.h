/*
 * ffi.h - entry points for language bindings (the Rust crate in bindings/rust).
 *
 * Overview
 *   The C zone hot path is inline in mprof.h: it reads the calling thread's buffer cursor and
 *   writes the record in place. A binding in another language cannot inline C, and must not copy
 *   the buffer layout either, so libmprof exports that same inline path as two ordinary
 *   functions: one call per zone begin and one per end, still without a lock, a system call or an
 *   allocation (a full buffer block takes the same slow path as in C).
 *
 * Step by step
 *   static const mprof_srcloc loc = {"Physics::step", "physics", "physics.rs", 12, 0x2fa84f};
 *   int active = mprof_ffi_zone_begin(&loc);
 *   ... the zone's work ...
 *   mprof_ffi_zone_end(active);
 *   Every other event (frames, plots, messages, memory, locks, fibers) already has an exported
 *   entry point in mprof.h, which the binding calls directly.
 *
 * Threading
 *   Any thread; begin and end of one zone on the same thread, ends in reverse order of begins.
 *
 * Layout
 *   mprof_ffi_sizeof lets a binding check at test time that its mirrors of the public structs
 *   have the C sizes.
 */
#ifndef MPROF_FFI_H
#define MPROF_FFI_H

#include "mprof/mprof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Begins a zone at loc (static storage: only its address is recorded). Returns the token that
 * mprof_ffi_zone_end needs: 0 = not recorded (profiler off), 1 = recorded, 2 = dropped at the
 * memory cap (the end is then dropped and counted too, so the capture stays balanced). */
MPROF_API int mprof_ffi_zone_begin(const mprof_srcloc *loc);
/* Ends the innermost zone of the calling thread; active is what its begin returned. */
MPROF_API void mprof_ffi_zone_end(int active);

/* What mprof_ffi_sizeof measures. 0 is invalid. */
typedef enum mprof_ffi_type {
    MPROF_FFI_TYPE_INVALID = 0,
    MPROF_FFI_TYPE_SRCLOC = 1,
    MPROF_FFI_TYPE_CONFIG = 2,
    MPROF_FFI_TYPE_STATS = 3
} mprof_ffi_type;

/* sizeof the public struct named by type, or 0 for an unknown type. Any thread. */
MPROF_API size_t mprof_ffi_sizeof(mprof_ffi_type type);

#ifdef __cplusplus
}
#endif

#endif
