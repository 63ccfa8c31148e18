/*
 * self_test.h - `mprof ci --self-test` (self_test.c).
 */
#ifndef MPROF_CI_SELF_TEST_H
#define MPROF_CI_SELF_TEST_H

#include "ci/ci.h"

/* The ci sequence (tools/cmd_ci.c): runs o, fills r, returns the exit status. */
typedef int (*mprof_ci_sequence)(const mprof_ci_opts *o, mprof_ci_result *r);

/* Runs the self-test in dir with run as the ci sequence, printing a line per step; returns the
 * exit status (0 PASS, 1 FAIL, 2 usage, 3 I/O). */
int mprof__ci_self_test(const char *dir, mprof_ci_sequence run);

#endif
