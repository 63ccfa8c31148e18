/*
 * fiber.c - fiber (coroutine) switches.
 *
 * A fiber scheduler calls MPROF_FIBER_ENTER(name) right after switching to a fiber and
 * MPROF_FIBER_LEAVE() right before switching away. Between the two, everything the thread
 * records belongs to the fiber: the fibers pass (src/analysis/fibers.c) moves those zones onto
 * the fiber's own track, stitching runs of the same fiber on different threads in time order,
 * so a zone opened before a switch and closed after the fiber resumed elsewhere is one zone.
 *
 * The records are FIBER_ENTER (TS, NAME) and FIBER_LEAVE (TS). The fiber's name is its identity:
 * use one literal per fiber (e.g. from a static table), not one shared by all fibers. Entering a
 * fiber while in another implies leaving the first.
 */
#include "buffers.h"
#include "lifecycle.h"

void mprof__fiber_enter(const char *name)
{
    mprof__record_name(MPROF_EV_FIBER_ENTER, name);
}

void mprof__fiber_leave(void)
{
    unsigned char *p = mprof__record(MPROF_EV_FIBER_LEAVE, 1 + 8);
    if (!p)
        return;
    mprof__commit(p);
}
