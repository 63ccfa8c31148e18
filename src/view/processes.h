/*
 * processes.h - the processes of a capture with several (format 1.5: `mprof merge`, `mprof
 * capture -p A -p B`) as both viewers show them: a process per header row, each thread track
 * under its process, a source location named with the process its zones ran in. A capture of
 * one process shows none of this: its document and answers stay as they were.
 */
#ifndef MPROF_VIEW_PROCESSES_H
#define MPROF_VIEW_PROCESSES_H

#include "analysis/timeline.h"
#include "format/format.h"
#include "util/json_out.h"

#include <stdint.h>
#include <stdio.h>

#define MPROF_VPROC_NONE UINT32_MAX

/* Whether the capture has several processes (the viewer shows them only then). */
int mprof__vproc_several(const mprof_reader *r);
/* The process of walker track i (0-based): a thread track's thread's; MPROF_VPROC_NONE for the
 * other kinds of track. */
uint32_t mprof__vproc_of_track(const mprof_reader *r, const mprof_walker *w, uint32_t i);
/* Whether walker track a goes after track b in display order: by kind, threads by their process
 * and then their index in the capture (registration order), the rest in order of appearance.
 * With one process this is the order the viewer always had. */
int mprof__vproc_track_after(const mprof_reader *r, const mprof_walker *w, uint32_t a, uint32_t b);
/* The threads of process p: the walker's thread tracks of its threads (threads with events; the
 * process context, thread 0, apart), as `mprof report` counts them. */
uint32_t mprof__vproc_threads(const mprof_reader *r, const mprof_walker *w, uint32_t p);

/* A source location's process, kept as zones arrive: 0 none seen yet, k + 1 process k, and
 * MPROF_VPROC_NONE when zones of several ran at it (a merged capture never shares one, but an
 * input of its own might be merged). */
static inline void mprof__vproc_note(uint32_t *slot, uint32_t process)
{
    if (process == MPROF_VPROC_NONE)
        return;
    if (!*slot)
        *slot = process + 1;
    else if (*slot != process + 1)
        *slot = MPROF_VPROC_NONE;
}

/* The served index's /api/meta: "processes": [{index, pid, name, threads, ended_by}]. */
void mprof__vproc_json(const mprof_reader *r, const mprof_walker *w, mprof_json *j);

#endif
