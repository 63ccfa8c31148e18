/*
 * store_json.h - a CI report or frame export read into a run to store, and a stored run written
 * back as a frame export (mprof.frames.v1) that `mprof gate` reads. store_json.c says why.
 *
 * Threads: none; any thread on its own objects. Memory: runs are cleared with
 * mprof__store_run_clear().
 */
#ifndef MPROF_STORE_JSON_H
#define MPROF_STORE_JSON_H

#include "store/store.h"

#include <stdio.h>

/* Top zones with per-frame self times kept per repetition. */
#define MPROF_STORE_TOP_ZONES 16

/* Parses a frame export held in memory and appends it to run as one repetition; identity fields
 * (git SHA, host, CPU, build type, start time, command, artifact) fill those run still lacks.
 * name labels messages. Returns OK, BAD_INPUT (with what is wrong in err) or NOMEM. */
mprof_store_result mprof__store_parse_export(const char *json, size_t len, const char *name,
                                             mprof_store_run *run, char *err, size_t errlen);

/* Parses a CI report (mprof.ciReport.v1: the frameExport of each runs[] entry of side
 * "current", else the top-level frameExport, is read as a repetition, resolved against the
 * report's directory when not found as written) or a frame
 * export (verdict "no-baseline": not gated) into run (zeroed first), summarised. */
mprof_store_result mprof__store_parse_file(const char *json, size_t len, const char *name,
                                           mprof_store_run *run, char *err, size_t errlen);
mprof_store_result mprof__store_load_file(const char *path, mprof_store_run *run, char *err,
                                          size_t errlen);

/* Writes repetition rep_index of run as a frame export (one line, export/frames_run.h) that
 * names the run and repetition in "capture" (storeRunId, storeRepetition). Returns 0, or -1 when
 * there is no such repetition or the stream reports an error. */
int mprof__store_write_export(const mprof_store_run *run, size_t rep_index, FILE *out);

#endif
