/*
 * zone.c - the slow half of zone begin and end.
 *
 * The fast half is inline in mprof.h: it writes a ZONE_BEGIN or ZONE_END record at the thread's
 * cursor when the current block has room. Everything else lands here: the first event of a
 * thread (or of the process, which starts the profiler through mprof__reserve), a full block,
 * and a thread over the memory cap, whose lost zone ends are counted like any lost event.
 */
#include "buffers.h"
#include "lifecycle.h"
#include "stats.h"

int mprof__zone_begin_slow(const mprof_srcloc *loc)
{
    unsigned char *p = mprof__record(MPROF__EV_ZONE_BEGIN, MPROF__ZONE_BEGIN_BYTES);
    if (!p)
        return __atomic_load_n(&mprof__mode, __ATOMIC_RELAXED) == MPROF__MODE_RECORDING ? 2 : 0;
    p = mprof__w_ptr(p, loc);
    mprof__commit(p);
    return 1;
}

void mprof__zone_end_lost(void)
{
    mprof__tbuf *t = mprof__tls;
    if (t == &mprof__dummy_tbuf)
        return;
    ((mprof__thread *)t)->lost++;
    atomic_fetch_add_explicit(&mprof__stats.events_lost, 1, memory_order_relaxed);
}

void mprof__zone_end_slow(void)
{
    uint64_t ts = mprof__ticks(); /* before the reserve, which may take a new block */
    unsigned char *p = mprof__reserve(MPROF__ZONE_END_BYTES);
    if (!p)
        return;
    p[0] = MPROF__EV_ZONE_END;
    mprof__commit(mprof__w_u64(p + 1, ts));
}
