/*
 * range.h - the part of a capture that an export or a statistic covers: `--frames A:B` (frames A to B - 1 of
 * the main frame set, numbered from 0 as in `mprof view`) or `--time S0:S1` (seconds on the
 * capture's clock, the clock of the Chrome export's "ts"), so that a large capture yields a
 * small trace.
 *
 * A range is resolved once into a window [t0_ns, t1_ns); every export then keeps what overlaps
 * the window: whole zones, lock spans and frames that overlap it, messages, plots and memory
 * changes inside it. Zones are kept whole (not clipped), as the viewer's statistics do.
 */
#ifndef MPROF_ANALYSIS_RANGE_H
#define MPROF_ANALYSIS_RANGE_H

#include "format/format.h"

#include <stddef.h>
#include <stdint.h>

/* Whether ev marks a frame of the main frame set: an unnamed frame mark of the thread that made
 * the first one. *main_thread (0 until then) learns that thread from the first unnamed mark. */
static inline int mprof__is_main_mark(const mprof_event *ev, uint32_t *main_thread)
{
    if (ev->type != MPROF_EV_FRAME_MARK || ev->u[0] != 0)
        return 0;
    if (!*main_thread)
        *main_thread = ev->thread;
    return ev->thread == *main_thread;
}

typedef struct mprof_export_range {
    int64_t first_frame, end_frame; /* --frames A:B (B exclusive); first_frame < 0 = not given */
    int64_t t0_ns, t1_ns;           /* the window: [t0, t1) */
    int active;                     /* 0 = the whole capture */
} mprof_export_range;

/* Parses "A:B" (frames: integers, A < B; time: seconds, S0 < S1; either side may be empty for
 * "from the start" / "to the end"). Returns 0, or -1 with a message in err. */
int mprof__export_range_parse_frames(const char *arg, mprof_export_range *r, char *err,
                                     size_t errlen);
int mprof__export_range_parse_time(const char *arg, mprof_export_range *r, char *err,
                                   size_t errlen);

/* Turns --frames into a window by reading the capture's main frame marks (the unnamed marks of
 * the thread that made the first one). No-op for a time range. Returns 0, or -1 with a message
 * in err (an unreadable capture, no frames, A past the last frame). */
int mprof__export_range_resolve(const char *capture_path, mprof_export_range *r, char *err,
                                size_t errlen);
/* The same counting the main frames of the process named process only (mprof_reader_process;
 * NULL, or a name the capture lacks: every thread, as above): `--frames A:B --process NAME`. */
int mprof__export_range_resolve_process(const char *capture_path, mprof_export_range *r,
                                        const char *process, char *err, size_t errlen);

/* Whether [s, e) overlaps the window (always 1 without a range); an empty [s, s) counts when s
 * is inside it. */
static inline int mprof__range_overlaps(const mprof_export_range *r, int64_t s, int64_t e)
{
    return !r || !r->active || (s < r->t1_ns && (e > r->t0_ns || s >= r->t0_ns));
}

/* Whether the instant t is inside the window. */
static inline int mprof__range_has(const mprof_export_range *r, int64_t t)
{
    return !r || !r->active || (t >= r->t0_ns && t < r->t1_ns);
}

#endif
