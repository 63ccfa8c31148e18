/*
 * live_defs.h - the copy of every definition and "sticky" event (live_defs.c), from which a
 * tool that connects late gets one chunk that makes the rest of the stream decodable.
 * Collector thread only.
 */
#ifndef MPROF_LIVE_DEFS_H
#define MPROF_LIVE_DEFS_H

#include "live_ring.h"

#include <stdint.h>

/* Forgets every definition (a new session announces them all again). */
void mprof__live_defs_reset(void);
/* Frees the copies. */
void mprof__live_defs_free(void);
/* Copies a definition record (compact form, tag included). */
void mprof__live_defs_keep(const unsigned char *rec, const unsigned char *end);
/* Whether records with this tag are sticky: a late tool must see them (thread names, app info,
 * plot configs, lock and GPU context announcements). */
int mprof__live_defs_keeps(int tag);
/* Copies a sticky record of thread (compact form; ticks: its timestamp, when it has one). A
 * thread's latest name and a plot's latest configuration replace the earlier ones. */
void mprof__live_defs_keep_event(uint32_t thread, uint64_t ticks, const unsigned char *rec,
                                 const unsigned char *end);
/* The definitions chunk, framed: every definition so far, the sticky events stamped ts_ticks,
 * and a LOST record of lost events when lost > 0. NULL when out of memory. */
mprof__live_blob *mprof__live_defs_blob(uint64_t ts_ticks, uint64_t lost);

#endif
