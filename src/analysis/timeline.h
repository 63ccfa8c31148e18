/*
 * timeline.h - rebuilds the timeline of a capture from its event stream: zones with their depth
 * and self time per thread, fiber and GPU context, frames, lock spans and memory use.
 *
 * Two layers:
 *   - The walker (mprof_walker) sees events one at a time and calls hooks as things complete:
 *     a zone when it ends, a lock span when it is released, a memory change when it happens.
 *     Its memory holds only what is open (zone stacks, live allocations, pending GPU queries)
 *     and the frame list, never the event stream, so the exports that use it stream.
 *   - The view builder (view/document.h) runs the walker twice over a file: once to learn the
 *     frames and where zones fall, once to keep the zones of the chosen range, and writes the
 *     document that `mprof view` embeds (schema in docs/VIEW.md).
 *
 * Tracks: every thread has one. A zone recorded while the thread is inside a fiber goes to that
 * fiber's track (a fiber may resume on another thread). Each GPU context and each lock has one.
 */
#ifndef MPROF_TIMELINE_H
#define MPROF_TIMELINE_H

#include "analysis/async.h"
#include "format/batch.h"
#include "format/format.h"

#include <stdint.h>
#include <stdio.h>

enum {
    MPROF_TRACK_THREAD = 1,
    MPROF_TRACK_FIBER = 2,
    MPROF_TRACK_GPU = 3,
    MPROF_TRACK_LOCK = 4
};

/* A zone, reported when it ends. Strings are valid during the hook only. */
typedef struct mprof_tl_zone {
    uint32_t track;   /* walker track index */
    uint32_t loc;     /* srcloc id of the reader */
    uint32_t depth;   /* 0 = outermost on its track */
    int64_t start_ns, end_ns;
    int64_t child_ns; /* time inside direct children: self = end - start - child */
    const char *text; /* MPROF_ZONE_TEXT, or NULL */
    uint32_t text_len;
    const char *name; /* MPROF_ZONE_NAME, or NULL */
    uint32_t name_len;
    uint64_t value;   /* MPROF_ZONE_VALUE when has_value */
    int has_value;
    int unfinished;   /* still open at the end of the capture: end_ns is the capture's end */
    int nested;       /* an instance of the same source location is open below it on its track
                         (recursion): its time is already inside that instance's */
    int64_t submit_ns;      /* GPU zones: when the CPU recorded its begin (GPU_ZONE_BEGIN) */
    uint32_t submit_thread; /* GPU zones: the reader thread that recorded it */
    uint32_t nest_depth; /* with nested: the depth of the nearest such instance */
} mprof_tl_zone;

/* A lock span: waiting for (contended only) or holding a lock. */
typedef struct mprof_tl_lockspan {
    uint32_t lock;   /* walker lock index */
    uint32_t row;    /* the thread's row in the lock's track (order of first use) */
    uint32_t thread; /* reader thread index */
    int waiting;     /* 1 = waited for the lock, 0 = held it */
    int shared;
    int64_t start_ns, end_ns;
} mprof_tl_lockspan;

typedef struct mprof_tl_hooks {
    void *user;
    void (*zone)(void *user, const mprof_tl_zone *z);
    void (*lock_span)(void *user, const mprof_tl_lockspan *s);
    /* Bytes in use in pool (walker pool index) changed at ts_ns. */
    void (*memory)(void *user, uint32_t pool, int64_t ts_ns, int64_t in_use_bytes);
    /* A frame of a frame set (walker set index) ended. */
    void (*frame)(void *user, uint32_t set, uint64_t index, int64_t start_ns, int64_t end_ns);
    /* An async span completed (analysis/async.h); at the end, every span still open. Its track's
     * name: mprof__async_track_name(mprof__walker_async(w), s->track). */
    void (*async_span)(void *user, const mprof_async_span *s);
    /* Every event other than a zone's begin or end, before the walker applies it (an export
     * that writes them in file order among the zones). Returns 0, or -1 to stop (out of
     * memory). */
    int (*other)(void *user, const mprof_event *ev);
} mprof_tl_hooks;

typedef struct mprof_tl_track {
    int kind;          /* MPROF_TRACK_* */
    uint32_t ref;      /* thread index, fiber name id, GPU context id or lock id */
    uint32_t process;  /* its process (mprof_thread_def.process): its thread's, or for a fiber,
                          GPU context or lock that of the thread whose event made it */
    uint64_t os_tid;   /* threads */
    uint64_t zones;    /* zones completed on this track */
    uint32_t max_depth;
} mprof_tl_track;

typedef struct mprof_tl_lock {
    uint32_t id, name, kind, track; /* track: walker track index */
    uint64_t acquisitions, contended, try_failed;
    int64_t wait_ns, max_wait_ns, hold_ns, max_hold_ns;
    uint32_t n_rows;
} mprof_tl_lock;

typedef struct mprof_tl_pool {
    uint32_t name;    /* string id; 0 = the default heap */
    uint32_t process; /* the process of its events: a pool is (process, name), so two processes'
                         heaps (and their addresses, which may coincide) never mix */
    uint64_t allocs, frees, bad_frees;
    uint64_t alloc_bytes;
    int64_t in_use, peak;
    uint64_t live; /* allocations not freed */
} mprof_tl_pool;

typedef struct mprof_tl_frameset {
    uint32_t name;    /* string id; 0 = the main frame set (MPROF_FRAME_MARK) */
    uint32_t process; /* the process of its marks (mprof_thread_def.process): a frame set is
                         (process, name), so two processes' marks never mix */
    uint64_t n;
    int64_t *start, *dur; /* n of each, in ns; only kept when the walker keeps frames */
    unsigned char *lossy; /* n flags when kept: 1 = the marking thread lost events inside the
                             frame, so marks may be missing and the frame is not a real one */
    uint64_t n_lossy;     /* frames flagged lossy */
} mprof_tl_frameset;

typedef struct mprof_walker mprof_walker;

/* Creates a walker over r's events (r may be NULL: then threads have no names or OS ids, and
 * events are fed by the caller). hooks may be NULL; keep_frames stores every frame's start
 * and duration (16 bytes a frame). Returns NULL when out of memory. */
mprof_walker *mprof__walker_new(const mprof_reader *r, const mprof_tl_hooks *hooks, int keep_frames);
void mprof__walker_free(mprof_walker *w);
/* Feeds one event. Returns 0, or -1 when out of memory. */
int mprof__walker_event(mprof_walker *w, const mprof_event *ev);
/* Feeds every record of a batch (format/batch.h): the same as feeding its events one at a time,
 * zone records without the call per event. Returns 0, or -1 when out of memory. */
int mprof__walker_batch(mprof_walker *w, const mprof_batch *b);
/* Ends the capture: open zones are reported as unfinished, ending at the last timestamp. */
void mprof__walker_finish(mprof_walker *w);
/* Feeds w every event left in r, the loop of a pass that walks a capture with hooks of its own.
 * It stops early when w runs out of memory or when *oom (NULL: never) is set by those hooks.
 * Returns 0 at the end of the capture; -1 when r fails, with "path: <the reader's message>" in
 * err; -2 out of memory, with "path: out of memory". Does not finish w. */
int mprof__walker_feed(mprof_walker *w, mprof_reader *r, const int *oom, const char *path,
                       char *err, size_t errlen);

/* Reads the whole capture at path through a new walker. Returns the walker (call
 * mprof__walker_free), or NULL with a message in err. The reader is closed afterwards, so the
 * accessors below that need names must be called from the hooks or use *out_reader. When
 * out_reader is not NULL the reader is kept open and returned there (caller closes). */
mprof_walker *mprof__walk_file(const char *path, const mprof_tl_hooks *hooks, int keep_frames,
                               mprof_reader **out_reader, char *err, size_t errlen);

uint32_t mprof__walker_track_count(const mprof_walker *w);
const mprof_tl_track *mprof__walker_track(const mprof_walker *w, uint32_t i);
/* A track's display name into buf ("Main", "fiber Job 3", "GPU Vulkan", "lock Mutex"). */
const char *mprof__walker_track_name(const mprof_walker *w, uint32_t i, char *buf, size_t len);
uint32_t mprof__walker_lock_count(const mprof_walker *w);
const mprof_tl_lock *mprof__walker_lock(const mprof_walker *w, uint32_t i);
/* Name of a thread's row in lock i's track. */
const char *mprof__walker_lock_row_name(const mprof_walker *w, uint32_t lock, uint32_t row,
                                        char *buf, size_t len);
uint32_t mprof__walker_pool_count(const mprof_walker *w);
const mprof_tl_pool *mprof__walker_pool(const mprof_walker *w, uint32_t i);
uint32_t mprof__walker_frameset_count(const mprof_walker *w);
const mprof_tl_frameset *mprof__walker_frameset(const mprof_walker *w, uint32_t i);
/* The main frame set (name 0 of the first process that marked one, else the first seen), or
 * NULL when there are no frames. */
const mprof_tl_frameset *mprof__walker_main_frames(const mprof_walker *w);
/* Process p's frame set of name 0, or NULL when it marked none. */
const mprof_tl_frameset *mprof__walker_process_main_frames(const mprof_walker *w, uint32_t p);
int64_t mprof__walker_first_ns(const mprof_walker *w);
int64_t mprof__walker_last_ns(const mprof_walker *w);
uint64_t mprof__walker_zone_count(const mprof_walker *w);
/* The async spans' pairer (track names, what did not pair); NULL without an async_span hook. */
const mprof_async *mprof__walker_async(const mprof_walker *w);
uint64_t mprof__walker_lost_events(const mprof_walker *w);

#endif
