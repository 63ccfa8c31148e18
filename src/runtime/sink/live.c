/*
 * live.c - live capture in the instrumented process, as one of the collector's sinks
 * (protocol in format/wire.h, guide in docs/CAPTURE.md).
 *
 * The idea: live capture is a sink (sink.h) beside the capture file. Every EVENTS chunk is
 * handed here and shared between the history ring (live_ring.c) and the queue of the connected
 * tool (live_session.c). A chunk is decodable on its own except for definitions, which are
 * written once per session; so every definition is also copied (live_defs.c), and a tool that
 * connects late first receives one chunk holding all of them, then the history it asked for,
 * then the live stream. The listener (live_listener.c) accepts tools and does handshakes.
 *
 * This file starts and stops those parts and adapts them to the sink interface; it decides only
 * one thing itself: whether a chunk is kept unframed because nobody may read it yet.
 */
#include "live.h"
#include "config.h"
#include "live_defs.h"
#include "live_listener.h"
#include "live_ring.h"
#include "live_session.h"
#include "platform/platform.h"

/* Set at open, under the lifecycle lock; read on the collector thread. */
static struct {
    int enabled;  /* listening */
    int has_file; /* a file sink exists (the process records regardless of sessions) */
    double history_s;
} L;

/* ---- start and stop ------------------------------------------------------------------------ */

static int live_start(const mprof__live_hooks *hooks, int has_file)
{
    const mprof_config *c = &mprof__config;
    int want = c->listen == MPROF_TOGGLE_ON ||
               (c->listen == MPROF_TOGGLE_DEFAULT && !c->capture_path);
    L.enabled = 0;
    L.has_file = has_file;
    mprof__live_defs_reset();
    mprof__live_ring_reset();
    if (!want)
        return 0;
    L.history_s = c->history_seconds > 0 ? c->history_seconds : 0;
    mprof__live_ring_open(L.history_s, c->memory_limit_bytes / 2);
    mprof__live_sessions_open(has_file, L.history_s, hooks->set_recording);
    if (mprof__live_listener_open(&hooks->info, L.history_s) != 0)
        return 0;
    L.enabled = 1;
    if (c->verbose == MPROF_TOGGLE_ON)
        mprof__log("listening for mprof capture on %s:%u (history %g s)", c->listen_address,
                   (unsigned)c->listen_port, L.history_s);
    return L.history_s > 0;
}

static void live_stop(void)
{
    if (!L.enabled)
        return;
    mprof__live_listener_close();
    mprof__live_sessions_close();
    L.enabled = 0;
    mprof__live_ring_close();
    mprof__live_defs_free();
}

/* ---- the sink interface (sink.h) ----------------------------------------------------------- */

/* A chunk nobody may read until a tool asks for history (no tool attached, and no file sink
 * that frames it anyway) is kept unframed: compressing it is most of the collector's work, and
 * most history is freed unread. It costs memory instead (about 2.5 bytes per event instead of
 * 0.1-0.5), within the ring's byte cap. */
static void sink_chunk(mprof__sink *s, const mprof__chunk *c)
{
    (void)s;
    if (c->kind != MPROF_CHUNK_EVENTS || !L.enabled)
        return;
    int lazy = 0;
    if (L.history_s > 0 && !L.has_file)
        lazy = !mprof__live_session_streaming();
    mprof__live_deliver(c, lazy ? NULL : c->framed(c), lazy);
}

static void sink_def(mprof__sink *s, const unsigned char *rec, const unsigned char *end)
{
    (void)s;
    if (L.enabled)
        mprof__live_defs_keep(rec, end);
}

static int sink_keeps(mprof__sink *s, int tag)
{
    (void)s;
    return L.enabled && mprof__live_defs_keeps(tag);
}

static void sink_keep(mprof__sink *s, uint32_t thread, uint64_t ticks, const unsigned char *rec,
                      const unsigned char *end)
{
    (void)s;
    if (L.enabled)
        mprof__live_defs_keep_event(thread, ticks, rec, end);
}

static int sink_want_boundary(mprof__sink *s)
{
    (void)s;
    return L.enabled && mprof__live_session_pending();
}

static void sink_boundary(mprof__sink *s)
{
    (void)s;
    mprof__live_session_attach();
}

static void sink_close(mprof__sink *s)
{
    (void)s;
    live_stop();
}

static const mprof__sink_ops live_ops = {
    .name = "live",
    .chunk = sink_chunk,
    .def = sink_def,
    .keeps = sink_keeps,
    .keep = sink_keep,
    .want_boundary = sink_want_boundary,
    .boundary = sink_boundary,
    .close = sink_close,
};

/* One listener per process: the sink is a handle on the module's state. */
static mprof__sink live_sink = {&live_ops};

mprof__sink *mprof__sink_live_open(const mprof__live_hooks *hooks, int has_file,
                                   int *out_record)
{
    *out_record = live_start(hooks, has_file);
    return L.enabled ? &live_sink : NULL;
}
