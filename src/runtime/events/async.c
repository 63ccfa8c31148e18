/*
 * async.c - async spans: work that begins on one thread and ends on another (a load handed to
 * an I/O thread, a job passed along a pipeline, a Rust future that moves between workers).
 *
 * A span is named by its track (a literal: "Asset loads") and an id the program chooses, unique
 * in that track while the span is open; spans of one track may overlap. Begin and end are
 * ordinary records in the calling thread's buffer (ASYNC_BEGIN, ASYNC_BEGIN_DYN with a runtime
 * name, ASYNC_END), so either side costs what a plot costs: no lock, no system call, no
 * allocation. Pairing is the tools' work (the async pass of src/analysis): an end without a begin,
 * a begin never ended or an id reused while open is counted there, never trusted.
 */
#include "buffers.h"
#include "lifecycle.h"

#include <string.h>

void mprof__async_begin(const char *track, uint64_t id, const char *name)
{
    unsigned char *p = mprof__record(MPROF_EV_ASYNC_BEGIN, 1 + 8 + 8 + 8 + 8);
    if (!p)
        return;
    p = mprof__w_ptr(p, track);
    p = mprof__w_u64(p, id);
    mprof__commit(mprof__w_ptr(p, name));
}

void mprof__async_begin_dyn(const char *track, uint64_t id, const char *name)
{
    size_t len = name ? strlen(name) : 0;
    unsigned char *p = mprof__record(MPROF_EV_ASYNC_BEGIN_DYN, 1 + 8 + 8 + 8 + MPROF__STR_BYTES(len));
    if (!p)
        return;
    p = mprof__w_ptr(p, track);
    p = mprof__w_u64(p, id);
    mprof__commit(mprof__w_str(p, name ? name : "", len));
}

void mprof__async_end(const char *track, uint64_t id)
{
    unsigned char *p = mprof__record(MPROF_EV_ASYNC_END, 1 + 8 + 8 + 8);
    if (!p)
        return;
    p = mprof__w_ptr(p, track);
    mprof__commit(mprof__w_u64(p, id));
}
