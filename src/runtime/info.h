/*
 * info.h - key/value payloads (info.c): the process's own INFO keys, and the helper every
 * contributor to INFO and END writes its pairs with.
 */
#ifndef MPROF_INFO_H
#define MPROF_INFO_H

#include "format/format.h"

/* Appends the INFO keys that describe the process: format and library versions, program, pid,
 * clock calibration, machine, build, memory cap. An mprof__kv_fn (sink.h). */
void mprof__process_info(mprof_buf *out);
/* Appends one key/value pair to an INFO or END payload, the value formatted like printf. */
void mprof__kvf(mprof_buf *b, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
