/*
 * sync.h - the engine's locks: a mutex and a reader/writer lock that the profiler can see.
 *
 * Each lock is announced once with its name and annotated at its wait, obtain and release
 * points (MPROF_LOCK_*), so the timeline shows who waited for whom and `mprof report --locks`
 * shows contention. These wrap plain pthreads; the library's include/mprof/lock.h offers the
 * same as mprof_mutex / mprof_rwlock, and switching is a matter of replacing these bodies.
 */
#ifndef ENGINE_SYNC_H
#define ENGINE_SYNC_H

#include "mprof/mprof.h"

#include <pthread.h>

typedef struct eng_mutex {
    pthread_mutex_t m;
    mprof_lock_id id;
} eng_mutex;

typedef struct eng_rwlock {
    pthread_rwlock_t rw;
    mprof_lock_id id;
} eng_rwlock;

/* name must be a literal: it names the lock in the capture. */
#define eng_mutex_init(l, name)                                                                    \
    do {                                                                                           \
        pthread_mutex_init(&(l)->m, NULL);                                                         \
        (l)->id = MPROF_LOCK_ANNOUNCE(name, MPROF_LOCK_KIND_MUTEX);                                \
    } while (0)
#define eng_rwlock_init(l, name)                                                                   \
    do {                                                                                           \
        pthread_rwlock_init(&(l)->rw, NULL);                                                       \
        (l)->id = MPROF_LOCK_ANNOUNCE(name, MPROF_LOCK_KIND_RWLOCK);                               \
    } while (0)

static inline void eng_mutex_destroy(eng_mutex *l) { pthread_mutex_destroy(&l->m); }
static inline void eng_rwlock_destroy(eng_rwlock *l) { pthread_rwlock_destroy(&l->rw); }

/* WAIT is recorded only when the first attempt finds the lock taken, so the report counts an
 * acquisition as contended exactly when it had to wait; RELEASED is recorded before the release
 * so the next holder's OBTAINED never precedes it. */
static inline void eng_mutex_lock(eng_mutex *l)
{
    if (pthread_mutex_trylock(&l->m) != 0) {
        MPROF_LOCK_WAIT(l->id, 0);
        pthread_mutex_lock(&l->m);
    }
    MPROF_LOCK_OBTAINED(l->id, 0);
}
static inline void eng_mutex_unlock(eng_mutex *l)
{
    MPROF_LOCK_RELEASED(l->id, 0);
    pthread_mutex_unlock(&l->m);
}
/* Waits on cond, releasing the mutex meanwhile: the profiler sees a release and, once the
 * wait returns with the mutex, a new hold (sleeping on a condition is not contention). */
static inline void eng_cond_wait(pthread_cond_t *c, eng_mutex *l)
{
    MPROF_LOCK_RELEASED(l->id, 0);
    pthread_cond_wait(c, &l->m);
    MPROF_LOCK_OBTAINED(l->id, 0);
}
static inline void eng_rwlock_rdlock(eng_rwlock *l)
{
    if (pthread_rwlock_tryrdlock(&l->rw) != 0) {
        MPROF_LOCK_WAIT(l->id, 1);
        pthread_rwlock_rdlock(&l->rw);
    }
    MPROF_LOCK_OBTAINED(l->id, 1);
}
static inline void eng_rwlock_wrlock(eng_rwlock *l)
{
    if (pthread_rwlock_trywrlock(&l->rw) != 0) {
        MPROF_LOCK_WAIT(l->id, 0);
        pthread_rwlock_wrlock(&l->rw);
    }
    MPROF_LOCK_OBTAINED(l->id, 0);
}
static inline void eng_rwlock_unlock(eng_rwlock *l, int shared)
{
    MPROF_LOCK_RELEASED(l->id, shared);
    pthread_rwlock_unlock(&l->rw);
    (void)shared;
}

#endif
