/*
 * encoder.h - the capture encoder (encoder.c): raw records in, compact chunks out to the sinks.
 *
 * The collector thread drives it: it hands over what the thread buffers and the process queue
 * published, and decides when a chunk is closed early (a flush, a chunk that waited too long, a
 * sink that needs a boundary). Collector thread only, or startup and shutdown while it does not
 * run.
 */
#ifndef MPROF_ENCODER_H
#define MPROF_ENCODER_H

#include "buffers.h"
#include "sink/sink.h"

#include <stdint.h>

/* Makes the compression context. MPROF_OK or MPROF_ERR_NOMEM. */
mprof_result mprof__encoder_init(void);
/* A new session: chunks go to sinks[0..n_sinks) (at most MPROF__MAX_SINKS); before_stacks writes
 * the definitions that precede the first callstack. Every definition is announced anew and
 * every thread is defined again when it next appears. */
void mprof__encoder_begin(mprof__sink *const *sinks, int n_sinks, mprof__kv_fn before_stacks);

/* Translates thread th's raw records [p, end) into the current chunk, emitting it whenever it
 * fills. An mprof__drain_fn (buffers.h). */
void mprof__encoder_translate(mprof__thread *th, const unsigned char *p, const unsigned char *end);
/* The same for records of the process context (thread 0: system tracing's). */
void mprof__encoder_process(const unsigned char *p, const unsigned char *end);
/* A CALIBRATION record (ticks and nanoseconds now) in the process context. */
void mprof__encoder_calibration(void);

/* Whether the current chunk holds anything, and since when it is being built. */
int mprof__encoder_chunk_empty(void);
uint64_t mprof__encoder_chunk_started_ns(void);
/* Compresses and hands the current chunk to the sinks, and starts a new one. */
void mprof__encoder_emit_chunk(void);
/* Hands a whole chunk of the given kind (INFO, END) with payload to the sinks. */
void mprof__encoder_emit(int kind, const mprof_buf *payload);
/* The END keys of the encoding (docs/FORMAT.md "Process chunks"): how many process chunks were
 * emitted, and the main frames' thread, count and first and last ticks. */
void mprof__encoder_end_keys(mprof_buf *b);
/* Records translated this session. */
uint64_t mprof__encoder_events(void);

#endif
