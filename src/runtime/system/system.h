/*
 * system.h - the library's view of the operating system during a capture: when each thread of
 * the process ran (context switches), how busy the rest of the machine was (CPU usage), and
 * what the threads were executing (callstack samples). docs/SYSTEM.md describes it.
 *
 * Everything happens on one background thread ("mprof-system"), never on the zone hot path. It
 * is not an instrumented thread: its records (SYS_* in format.h) belong to the process (thread
 * 0) and reach the collector through the buffers' process queue (mprof__process_records), so a
 * capture has no extra thread, thread name or plot because of it. Threads that register with
 * mprof are noticed by polling mprof__thread_generation; nothing calls in here from the buffers.
 *
 * Lifecycle, called by lifecycle.c only, under the lifecycle lock:
 *   mprof__system_probe()      before the collector starts: reads the environment and asks the
 *                              kernel what is allowed, so that INFO can say what is on and why not
 *   mprof__system_start()      after the collector started: starts the system thread
 *   mprof__system_stop()       before recording stops: the thread drains the kernel's buffers,
 *                              writes its last records and is joined
 * and two contributors (sink.h's mprof__kv_fn) that lifecycle.c hands to the collector:
 *   mprof__system_info(b)      INFO keys, written with the INFO chunk
 *   mprof__system_end_info(b)  END keys, written with the END chunk
 * None of them fails: whatever the kernel refuses is said in INFO and the capture goes on.
 */
#ifndef MPROF_SYSTEM_H
#define MPROF_SYSTEM_H

#include "format/format.h"

void mprof__system_probe(void);
void mprof__system_info(mprof_buf *b);
void mprof__system_start(void);
void mprof__system_stop(void);
void mprof__system_end_info(mprof_buf *b);

#endif
