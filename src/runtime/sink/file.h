/*
 * file.h - the capture file sink (file.c).
 */
#ifndef MPROF_SINK_FILE_H
#define MPROF_SINK_FILE_H

#include "sink.h"

/* Creates path (and its directories) and writes the file header; every chunk handed to the
 * sink is then appended. NULL (logged) when the file cannot be created. The bytes written are
 * counted in mprof__stats.bytes_written. */
mprof__sink *mprof__sink_file_open(const char *path);

#endif
