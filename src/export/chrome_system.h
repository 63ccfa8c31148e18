/*
 * chrome_system.h - the system records of a capture in the Chrome export.
 */
#ifndef MPROF_EXPORT_CHROME_SYSTEM_H
#define MPROF_EXPORT_CHROME_SYSTEM_H

#include "analysis/range.h"
#include "format/format.h"

#include <stdint.h>
#include <stdio.h>

/* The Chrome export's system tracks (chrome_system.c): per traced thread a state track
 * (running / preempted / blocked slices, pid 5) and the CPU-usage counters. count is the
 * export's event counter (for the separators). _event returns -1 when out of memory. */
typedef struct mprof_sys_chrome mprof_sys_chrome;
mprof_sys_chrome *mprof__sys_chrome_new(void);
void mprof__sys_chrome_free(mprof_sys_chrome *s);
/* range: only what overlaps it (NULL = everything; analysis/range.h). */
int mprof__sys_chrome_event(mprof_sys_chrome *s, FILE *out, uint64_t *count,
                            const mprof_export_range *range, const mprof_event *ev);
void mprof__sys_chrome_meta(const mprof_sys_chrome *s, const mprof_reader *r, FILE *out,
                            uint64_t *count);

#endif
