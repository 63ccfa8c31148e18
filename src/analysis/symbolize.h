/*
 * symbolize.h - return addresses to function, file and line, for the tools.
 *
 * A capture holds addresses and a module map (DEF_MODULE: mapped start, extent, path, build id).
 * The symbolizer loads each module's ELF and DWARF with elfutils' libdwfl at the recorded
 * address, so addresses from the captured process resolve in another process, later, as long as
 * the binaries still exist at their paths (or their debug files under /usr/lib/debug/.build-id).
 * A module whose file now has a different build id than recorded is refused: it would give
 * plausible but wrong names. Results are cached per address.
 *
 * Not thread-safe: one symbolizer per thread.
 */
#ifndef MPROF_ANALYSIS_SYMBOLIZE_H
#define MPROF_ANALYSIS_SYMBOLIZE_H

#include "format/format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct mprof_symbolizer mprof_symbolizer;

typedef struct mprof_symbol {
    const char *function; /* NULL when unknown */
    const char *file;     /* source file, NULL when the module has no line info */
    uint32_t line;        /* 0 when unknown */
    const char *module;   /* module path, NULL when the address is in no recorded module */
    uint64_t module_offset; /* address - module start */
} mprof_symbol;

/* NULL when out of memory. */
mprof_symbolizer *mprof_symbolizer_new(void);
/* Frees everything; strings returned by lookup die with it. NULL is a no-op. */
void mprof_symbolizer_free(mprof_symbolizer *s);
/* Records a module (a DEF_MODULE event). build_id is hex, "" or NULL when unknown. The file is
 * opened on first use. Returns 0, or -1 when out of memory. Duplicates are ignored. */
int mprof_symbolizer_add_module(mprof_symbolizer *s, uint64_t start, uint64_t size,
                                const char *path, const char *build_id);
/* The same from a DEF_MODULE event of a capture (its start, extent, path and build id). */
int mprof_symbolizer_add_event(mprof_symbolizer *s, const mprof_event *ev);
/* Resolves a return address (the instruction looked up is addr - 1, the call). Fills *out and
 * returns 1 when a function name was found, 0 otherwise (out still says which module). The
 * strings live as long as the symbolizer. */
int mprof_symbolizer_lookup(mprof_symbolizer *s, uint64_t addr, mprof_symbol *out);
/* Formats "function (file:line)" or "module+0xoff" or "0xaddr" into buf; returns buf. Paths
 * are shortened to their last two components. */
const char *mprof_symbolizer_format(mprof_symbolizer *s, uint64_t addr, char *buf, size_t len);
/* A sampled frame's short name: the function, else "module+0xoff" (the module's file name), else
 * "0xaddr" of the call (addr - 1); returns the function's string or buf. */
const char *mprof_symbolizer_frame_name(mprof_symbolizer *s, uint64_t addr, char *buf, size_t len);
/* A message when modules were refused or missing ("2 modules not found: ..."), else NULL. */
const char *mprof_symbolizer_warning(const mprof_symbolizer *s);

#endif
