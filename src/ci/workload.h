/*
 * workload.h - the instrumented workload of `mprof ci --self-test` (workload.c): a frame loop
 * with known zones, one of which can be slowed by a given share.
 */
#ifndef MPROF_CI_WORKLOAD_H
#define MPROF_CI_WORKLOAD_H

/* The instrumented workload of `mprof ci --self-test`. */
int mprof__ci_workload(long frames, double slow_pct);

#endif
