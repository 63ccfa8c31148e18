/*
 * index_sys.h - the system-tracing and lock section of the served viewer's index
 * (view/index.h): thread states, CPU usage and callstack samples (tags 0x50-0x54,
 * docs/SYSTEM.md), and every lock span with prefix sums, so that the page's strips, CPU plot,
 * sample flame graph and lock panel cost a few binary searches per pixel or per lock, whatever
 * the capture's size (index_sys_file.h: the layout).
 *
 * The index calls it at four points: each event and lock span during the build
 * (mprof__vsys_event, mprof__vsys_lock: index_build.c), once when it writes the index
 * (mprof__vsys_write, which appends the section: index_write.c), once when it opens one
 * (mprof__vsys_check: index_open.c) and for the queries it does not answer itself
 * (mprof__vsys_answer: index_answers.c). index_sys_build.c builds the section,
 * index_sys_answers.c reads it.
 *
 * Threads: building is single-threaded; answering reads the mapped section only.
 */
#ifndef MPROF_VIEW_INDEX_SYS_H
#define MPROF_VIEW_INDEX_SYS_H

#include "analysis/timeline.h"
#include "view/query.h"
#include "format/format.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct mprof_vsys mprof_vsys;

/* NULL when out of memory. */
mprof_vsys *mprof__vsys_new(void);
void mprof__vsys_free(mprof_vsys *s); /* NULL is a no-op */
/* Feeds one event of the capture. Returns 0, or -1 when out of memory. */
int mprof__vsys_event(mprof_vsys *s, const mprof_reader *r, const mprof_event *ev);
/* The capture reached time ts (events the walker takes without a call: zones). */
void mprof__vsys_saw(mprof_vsys *s, int64_t ts);
/* A lock span of the walker (its hook). Returns 0, or -1 when out of memory. */
int mprof__vsys_lock(mprof_vsys *s, const mprof_walker *w, const mprof_tl_lockspan *span);
/* After the walker finished: writes the section at f's end (*pos, 8-aligned) and returns its
 * offset and length in the file. Returns 0, or -1 on an I/O error or out of memory. */
int mprof__vsys_write(mprof_vsys *s, const mprof_reader *r, const mprof_walker *w, FILE *f,
                      uint64_t *pos, uint64_t *out_off, uint64_t *out_len);
/* Whether the section at sec[0, len) is whole and consistent (len 0: an index without one). */
int mprof__vsys_check(const unsigned char *sec, uint64_t len);
/* Answers the section's queries (MPROF_VQ_SYSTEM, _STATES, _CPU, _SAMPLES, _LOCKS). Returns 0,
 * -1 with err set, or 1 when q is none of them. */
int mprof__vsys_answer(const unsigned char *sec, uint64_t len, const mprof_vquery *q, FILE *out,
                       char *err, size_t errlen);

#endif
