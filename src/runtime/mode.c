/*
 * mode.c - the recording mode's word, alone on its cache line.
 *
 * Every event reads it, so it starts a cache line, and the link order (CMakeLists.txt) puts the
 * configuration after it, which nothing writes while a session runs: a line shared with counters
 * that the collector updates would be pulled away from every recording core on each update. The
 * word sits below everything that reads it (the buffers' process queue, the collector) so that
 * no module has to reach up to lifecycle.c for it; mode.h says which modules may write it.
 */
#include "mode.h"

_Alignas(64) int mprof__mode = MPROF__MODE_OFF;

void mprof__mode_set(int mode)
{
    __atomic_store_n(&mprof__mode, mode, __ATOMIC_RELEASE);
}

void mprof__mode_switch(int from, int to)
{
    __atomic_compare_exchange_n(&mprof__mode, &from, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
