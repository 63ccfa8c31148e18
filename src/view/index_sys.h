/*
 * index_sys.h - the system-tracing and lock section of the served viewer's index
 * (view/index.h): thread states, CPU usage and callstack samples (tags 0x50-0x54,
 * docs/SYSTEM.md), and every lock span with prefix sums, so that the page's strips, CPU plot,
 * sample flame graph and lock panel cost a few binary searches per pixel or per lock, whatever
 * the capture's size (index_sys_file.h: the layout).
 *
 * The index calls it at four points: each event and lock span during the build
 * (mprof__vsys_event, mprof__vsys_lock: index_build.c), which go to the index file's blocks as
 * they come; when it writes the index (mprof__vsys_finish before the directory, whose arrays its
 * big tables are, then mprof__vsys_section, the small tables as one block: index_write.c); once
 * when it opens one (mprof__vsys_check: index_open.c) and for the queries it does not answer
 * itself (mprof__vsys_answer: index_answers.c). index_sys_build.c builds the section,
 * index_sys_answers.c reads it.
 *
 * Threads: building is single-threaded; an answer reads the small tables in memory and the big
 * ones a block at a time through its own vread.
 */
#ifndef MPROF_VIEW_INDEX_SYS_H
#define MPROF_VIEW_INDEX_SYS_H

#include "analysis/timeline.h"
#include "view/query.h"
#include "format/format.h"
#include "view/index_block.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct mprof_vsys mprof_vsys;

/* Writes its arrays' blocks through o (the index being built). NULL when out of memory. */
mprof_vsys *mprof__vsys_new(vout *o);
void mprof__vsys_free(mprof_vsys *s); /* NULL is a no-op */
/* Feeds one event of the capture. Returns 0, or -1 when out of memory or on an I/O error. */
int mprof__vsys_event(mprof_vsys *s, const mprof_reader *r, const mprof_event *ev);
/* The capture reached time ts (events the walker takes without a call: zones). */
void mprof__vsys_saw(mprof_vsys *s, int64_t ts);
/* A lock span of the walker (its hook). Returns 0, or -1 when out of memory or on an I/O error. */
int mprof__vsys_lock(mprof_vsys *s, const mprof_walker *w, const mprof_tl_lockspan *span);
/* After the walker finished: writes the rest of the section's arrays and gathers its small
 * tables. Returns 0, or -1 when out of memory or on an I/O error (the vout's failed set). */
int mprof__vsys_finish(mprof_vsys *s, const mprof_reader *r, const mprof_walker *w);
/* After mprof__vsys_finish: its arrays, in the order the directory takes them. */
uint32_t mprof__vsys_array_count(const mprof_vsys *s);
const vab *mprof__vsys_array(const mprof_vsys *s, uint32_t k);
/* The section's block, its arrays being the directory's [arr0, arr0 + mprof__vsys_array_count):
 * *out is the caller's to free. Returns 0, or -1 when out of memory. */
int mprof__vsys_section(mprof_vsys *s, uint32_t arr0, unsigned char **out, size_t *out_len);
/* Whether x's section (x->sys, x->sys_len; 0 bytes: an index without one) is whole and
 * consistent with x's directory (checked before). */
int mprof__vsys_check(const mprof_vindex *x);
/* Answers the section's queries (MPROF_VQ_SYSTEM, _STATES, _CPU, _SAMPLES, _LOCKS). Returns 0,
 * -1 with err set, or 1 when q is none of them. */
int mprof__vsys_answer(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen);

#endif
