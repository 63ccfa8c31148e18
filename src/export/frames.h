/*
 * frames.h - the frame export (`mprof export FILE --format frames`): a capture's frame times as
 * JSON with schema mprof.frames.v1, the input of `mprof gate` and `mprof ci`. The format's reader
 * and its model in memory are in frames_run.h. docs/GATE.md specifies the schema.
 */
#ifndef MPROF_EXPORT_FRAMES_H
#define MPROF_EXPORT_FRAMES_H

#include "analysis/range.h"

#include <stddef.h>

/* Zones whose per-frame times are exported (the largest by total self time); every zone's totals
 * are exported regardless. */
#define MPROF_FRAMES_TOP_ZONES 64

/*
 * Reads the capture at capture_path and writes its frame export to out_path ("-" = stdout).
 * Identity: file, process, pid, start time, hostname, CPU, build type from the capture's INFO
 * keys; the git SHA from INFO "git_sha", else the environment variable MPROF_GIT_SHA, else
 * `git rev-parse HEAD` in the current directory, else null. Returns 0, or -1 with a message in
 * err naming the file and the problem (unreadable or corrupt capture, a capture without frame
 * marks, an output that cannot be written). On failure no partial output file is left behind.
 * Any thread; no shared state.
 */
int mprof__export_frames(const char *capture_path, const char *out_path, char *err,
                         size_t errlen);

/* The same for the frames inside a resolved range (analysis/range.h; NULL = all): frames wholly
 * inside the window, zones that overlap it. */
int mprof__export_frames_range(const char *capture_path, const mprof_export_range *range,
                               const char *out_path, char *err, size_t errlen);

/* The same for one process of the capture, named process_name (mprof_reader_process): its
 * threads' frame marks, zones and main thread's system figures, and its own identity (name, pid,
 * INFO). NULL = every thread, which a capture of several processes refuses (naming them), as it
 * refuses a name that is not one of its processes' or that several share: -2 then (a usage
 * error), -1 for any other failure. */
int mprof__export_frames_process(const char *capture_path, const mprof_export_range *range,
                                 const char *process_name, const char *out_path, char *err,
                                 size_t errlen);

#endif
