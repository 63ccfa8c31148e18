/*
 * lock.h - named pthread mutexes and rwlocks that record contention.
 *
 * Overview
 *   mprof_mutex and mprof_rwlock are a pthread lock plus a lock id. With MPROF_ENABLE each
 *   acquisition records LOCK_OBTAINED and LOCK_RELEASED; an acquisition that finds the lock taken
 *   (its first trylock fails) also records LOCK_WAIT before blocking, so `mprof report --locks`
 *   counts contended acquisitions exactly and measures their wait. A failed trylock records
 *   LOCK_TRY_FAILED. Without MPROF_ENABLE every function is the bare pthread call: no trylock,
 *   no branch, no call into libmprof.
 *
 * Step by step
 *   static mprof_mutex jobs_lock;
 *   MPROF_MUTEX_INIT(&jobs_lock, "JobQueue");      (or mprof_mutex_init(&jobs_lock, "JobQueue"))
 *   mprof_mutex_lock(&jobs_lock); ... mprof_mutex_unlock(&jobs_lock);
 *   mprof_mutex_destroy(&jobs_lock);
 *   rwlocks: mprof_rwlock_rdlock/rdunlock for shared, wrlock/wrunlock for exclusive holds.
 *
 * Locks you already have
 *   mprof_lock_id id = MPROF_LOCK_ANNOUNCE("Spin", MPROF_LOCK_KIND_SPIN);   once
 *   if (!try_acquire(l)) { MPROF_LOCK_WAIT(id, 0); acquire(l); }            only when contended
 *   MPROF_LOCK_OBTAINED(id, 0); ... MPROF_LOCK_RELEASED(id, 0); release(l);
 *   Record WAIT only when the first attempt fails: an OBTAINED with a WAIT before it is what the
 *   report counts as contended. Record RELEASED before the release, so that the next holder's
 *   OBTAINED never precedes it.
 *
 * Names are string literals (only the address is recorded). Return values are pthread's (0 or an
 * errno value). Threads: as pthreads; init/destroy once, from any thread.
 *
 * Feature macros: rwlocks are POSIX, hidden by a strict -std=c11. When no feature macro is set,
 * this header sets _POSIX_C_SOURCE to 200809L, which works when it is included before any system
 * header; otherwise compile with -D_POSIX_C_SOURCE=200809L (or _GNU_SOURCE, or -std=gnu11).
 */
#ifndef MPROF_LOCK_H
#define MPROF_LOCK_H

#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(_XOPEN_SOURCE) &&              \
    !defined(_DEFAULT_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "mprof/mprof.h"

#include <errno.h>
#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The layout is the same with and without MPROF_ENABLE, so translation units built either way
 * can share a lock. id 0 = not tracked. */
typedef struct mprof_mutex {
    pthread_mutex_t m;
    mprof_lock_id id;
} mprof_mutex;

typedef struct mprof_rwlock {
    pthread_rwlock_t l;
    mprof_lock_id id;
} mprof_rwlock;

/* Whether a lock event should be recorded: a tracked lock, and (where the header can see the
 * profiler's mode) a capture running. Not recording, a wrapper costs one load and a branch. */
#if defined(MPROF_ENABLE) && defined(MPROF__INLINE_HOT)
#define MPROF__LOCK_ON(id)                                                                         \
    ((id) && __atomic_load_n(&mprof__mode, __ATOMIC_RELAXED) == MPROF__MODE_RECORDING)
#else
#define MPROF__LOCK_ON(id) (id)
#endif

/* Init with a call-site location (the MPROF_*_INIT macros) or without (loc NULL). */
static inline int mprof__mutex_init_at(mprof_mutex *m, const char *name, const mprof_srcloc *loc)
{
    m->id = 0;
    int r = pthread_mutex_init(&m->m, NULL);
#ifdef MPROF_ENABLE
    if (r == 0)
        m->id = mprof__lock_announce(name, MPROF_LOCK_KIND_MUTEX, loc);
#else
    (void)name;
    (void)loc;
#endif
    return r;
}

static inline int mprof__rwlock_init_at(mprof_rwlock *l, const char *name,
                                        const mprof_srcloc *loc)
{
    l->id = 0;
    int r = pthread_rwlock_init(&l->l, NULL);
#ifdef MPROF_ENABLE
    if (r == 0)
        l->id = mprof__lock_announce(name, MPROF_LOCK_KIND_RWLOCK, loc);
#else
    (void)name;
    (void)loc;
#endif
    return r;
}

static inline int mprof_mutex_init(mprof_mutex *m, const char *name)
{
    return mprof__mutex_init_at(m, name, NULL);
}

static inline int mprof_rwlock_init(mprof_rwlock *l, const char *name)
{
    return mprof__rwlock_init_at(l, name, NULL);
}

#ifdef MPROF_ENABLE
#define MPROF_MUTEX_INIT(m, name)                                                                  \
    mprof__mutex_init_at((m), (name), ({                                                           \
                             MPROF__SRCLOC(mprof__loc_mx, name, 0);                                \
                             &mprof__loc_mx;                                                       \
                         }))
#define MPROF_RWLOCK_INIT(l, name)                                                                 \
    mprof__rwlock_init_at((l), (name), ({                                                          \
                              MPROF__SRCLOC(mprof__loc_rw, name, 0);                               \
                              &mprof__loc_rw;                                                      \
                          }))
#else
#define MPROF_MUTEX_INIT(m, name) mprof__mutex_init_at((m), (name), NULL)
#define MPROF_RWLOCK_INIT(l, name) mprof__rwlock_init_at((l), (name), NULL)
#endif

static inline int mprof_mutex_destroy(mprof_mutex *m) { return pthread_mutex_destroy(&m->m); }
static inline int mprof_rwlock_destroy(mprof_rwlock *l) { return pthread_rwlock_destroy(&l->l); }

static inline int mprof_mutex_lock(mprof_mutex *m)
{
#ifdef MPROF_ENABLE
    if (MPROF__LOCK_ON(m->id)) {
        int r = pthread_mutex_trylock(&m->m);
        if (r == EBUSY) {
            mprof__lock_wait(m->id, 0);
            r = pthread_mutex_lock(&m->m);
        }
        if (r == 0)
            mprof__lock_obtained(m->id, 0);
        return r;
    }
#endif
    return pthread_mutex_lock(&m->m);
}

static inline int mprof_mutex_trylock(mprof_mutex *m)
{
    int r = pthread_mutex_trylock(&m->m);
#ifdef MPROF_ENABLE
    if (MPROF__LOCK_ON(m->id)) {
        if (r == 0)
            mprof__lock_obtained(m->id, 0);
        else if (r == EBUSY)
            mprof__lock_try_failed(m->id, 0);
    }
#endif
    return r;
}

static inline int mprof_mutex_unlock(mprof_mutex *m)
{
#ifdef MPROF_ENABLE
    if (MPROF__LOCK_ON(m->id))
        mprof__lock_released(m->id, 0);
#endif
    return pthread_mutex_unlock(&m->m);
}

/* shared: 1 for rdlock, 0 for wrlock. */
static inline int mprof__rwlock_acquire(mprof_rwlock *l, int shared)
{
#ifdef MPROF_ENABLE
    if (MPROF__LOCK_ON(l->id)) {
        int r = shared ? pthread_rwlock_tryrdlock(&l->l) : pthread_rwlock_trywrlock(&l->l);
        if (r == EBUSY) {
            mprof__lock_wait(l->id, shared);
            r = shared ? pthread_rwlock_rdlock(&l->l) : pthread_rwlock_wrlock(&l->l);
        }
        if (r == 0)
            mprof__lock_obtained(l->id, shared);
        return r;
    }
#endif
    return shared ? pthread_rwlock_rdlock(&l->l) : pthread_rwlock_wrlock(&l->l);
}

static inline int mprof__rwlock_try(mprof_rwlock *l, int shared)
{
    int r = shared ? pthread_rwlock_tryrdlock(&l->l) : pthread_rwlock_trywrlock(&l->l);
#ifdef MPROF_ENABLE
    if (MPROF__LOCK_ON(l->id)) {
        if (r == 0)
            mprof__lock_obtained(l->id, shared);
        else if (r == EBUSY)
            mprof__lock_try_failed(l->id, shared);
    }
#endif
    return r;
}

static inline int mprof_rwlock_rdlock(mprof_rwlock *l)
{
#ifdef MPROF_ENABLE
    return mprof__rwlock_acquire(l, 1);
#else
    return pthread_rwlock_rdlock(&l->l);
#endif
}

static inline int mprof_rwlock_wrlock(mprof_rwlock *l)
{
#ifdef MPROF_ENABLE
    return mprof__rwlock_acquire(l, 0);
#else
    return pthread_rwlock_wrlock(&l->l);
#endif
}

static inline int mprof_rwlock_tryrdlock(mprof_rwlock *l) { return mprof__rwlock_try(l, 1); }
static inline int mprof_rwlock_trywrlock(mprof_rwlock *l) { return mprof__rwlock_try(l, 0); }

/* Releases a shared (rd) or an exclusive (wr) hold; both are pthread_rwlock_unlock. */
static inline int mprof_rwlock_rdunlock(mprof_rwlock *l)
{
#ifdef MPROF_ENABLE
    if (MPROF__LOCK_ON(l->id))
        mprof__lock_released(l->id, 1);
#endif
    return pthread_rwlock_unlock(&l->l);
}

static inline int mprof_rwlock_wrunlock(mprof_rwlock *l)
{
#ifdef MPROF_ENABLE
    if (MPROF__LOCK_ON(l->id))
        mprof__lock_released(l->id, 0);
#endif
    return pthread_rwlock_unlock(&l->l);
}

#ifdef __cplusplus
}
#endif

#endif
