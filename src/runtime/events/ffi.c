/*
 * ffi.c - the zone hot path as exported functions, for language bindings (include/mprof/ffi.h).
 *
 * The bodies are the inline functions of mprof.h, compiled here once: a binding pays one call
 * per begin and end instead of inlining, and records exactly what MPROF_ZONE_C records.
 */
#include "mprof/ffi.h"

int mprof_ffi_zone_begin(const mprof_srcloc *loc) { return mprof__zone_begin(loc); }

void mprof_ffi_zone_end(int active) { mprof__zone_cleanup(&active); }

size_t mprof_ffi_sizeof(mprof_ffi_type type)
{
    switch (type) {
    case MPROF_FFI_TYPE_SRCLOC:
        return sizeof(mprof_srcloc);
    case MPROF_FFI_TYPE_CONFIG:
        return sizeof(mprof_config);
    case MPROF_FFI_TYPE_STATS:
        return sizeof(mprof_stats);
    case MPROF_FFI_TYPE_INVALID:
        break;
    }
    return 0;
}
