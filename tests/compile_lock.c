/*
 * compile_lock.c - lock.h compiles as C11 and C++11, with and without MPROF_ENABLE, and
 * without it references no mprof symbol (checked with nm by ctest): the wrappers are the bare
 * pthread calls. alloc.h is compiled alongside (its types only: its functions are the kit's,
 * a library in both builds). Compiled, never run.
 */
#include "mprof/lock.h"
#include "mprof/alloc.h"

int mprof_compile_lock_use(void);

int mprof_compile_lock_use(void)
{
    static mprof_mutex m;
    static mprof_rwlock rw;
    int r = MPROF_MUTEX_INIT(&m, "m") | mprof_mutex_init(&m, "m2");
    r |= MPROF_RWLOCK_INIT(&rw, "rw") | mprof_rwlock_init(&rw, "rw2");
    r |= mprof_mutex_lock(&m) | mprof_mutex_trylock(&m) | mprof_mutex_unlock(&m);
    r |= mprof_rwlock_rdlock(&rw) | mprof_rwlock_rdunlock(&rw);
    r |= mprof_rwlock_wrlock(&rw) | mprof_rwlock_wrunlock(&rw);
    r |= mprof_rwlock_tryrdlock(&rw) | mprof_rwlock_trywrlock(&rw);
    mprof_lock_id id = MPROF_LOCK_ANNOUNCE("spin", MPROF_LOCK_KIND_SPIN);
    MPROF_LOCK_WAIT(id, 0);
    MPROF_LOCK_OBTAINED(id, 0);
    MPROF_LOCK_RELEASED(id, 0);
    MPROF_LOCK_TRY_FAILED(id, 1);
    (void)id;
    r |= mprof_mutex_destroy(&m) | mprof_rwlock_destroy(&rw);
    static mprof_pool_desc pd;
    static mprof_alloc_stats st;
    static mprof_stack_marker mk;
    r |= (int)(pd.n_blocks + st.n_allocs + mk.offset);
    return r;
}
