/*
 * internal.h - what the files of libmprof_tracy share: the table of call sites made at run time.
 */
#ifndef MPROF_TRACY_INTERNAL_H
#define MPROF_TRACY_INTERNAL_H

#include "mprof/tracy/TracyC.h"

/* The one call site with these fields (strings given with their lengths, copied), made on first
 * use and never freed, since captures refer to it by address for the rest of the process; NULL
 * when out of memory. Any thread. */
const mprof_srcloc *mprof_tracy__intern(const char *name, size_t nn, const char *fn, size_t fnn,
                                        const char *file, size_t filen, uint32_t line,
                                        uint32_t color);

#endif
