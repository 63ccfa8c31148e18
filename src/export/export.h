/*
 * export.h - captures to other tools' formats, streamed: each writer reads the capture once,
 * event by event, and writes what completes as it completes, so a capture larger than memory
 * exports. Only open state (zone stacks, per-source-location statistics) is held.
 *
 *   Chrome Trace Event JSON (Perfetto, chrome://tracing, Tracy's importer): docs/EXPORT.md.
 *   CSV: zone statistics per source location, or one row per zone.
 */
#ifndef MPROF_EXPORT_EXPORT_H
#define MPROF_EXPORT_EXPORT_H

#include "analysis/range.h"

#include <stdint.h>
#include <stdio.h>

/* Each returns 0, or -1 with a message in err (the capture's name included). What was written
 * before an error stays written. */
int mprof__export_chrome(const char *capture_path, FILE *out, char *err, size_t errlen);
int mprof__export_csv_stats(const char *capture_path, FILE *out, char *err, size_t errlen);
int mprof__export_csv_zones(const char *capture_path, FILE *out, char *err, size_t errlen);
/* The same, limited to a resolved range (analysis/range.h; NULL = everything). */
int mprof__export_chrome_range(const char *capture_path, const mprof_export_range *range,
                               FILE *out, char *err, size_t errlen);
int mprof__export_csv_stats_range(const char *capture_path, const mprof_export_range *range,
                                  FILE *out, char *err, size_t errlen);
int mprof__export_csv_zones_range(const char *capture_path, const mprof_export_range *range,
                                  FILE *out, char *err, size_t errlen);

#endif
