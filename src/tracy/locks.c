/*
 * locks.c - Tracy's lock contexts as mprof lock events.
 *
 * Tracy's annotations come around every acquisition: before lock, after lock, after unlock, with
 * no word on whether the lock was free. mprof's report counts an acquisition as contended when a
 * LOCK_WAIT precedes its LOCK_OBTAINED, and measures the wait from it, so a wait recorded before
 * every acquisition would call every one contended. The context therefore keeps who holds the
 * lock, as its own annotations say: a thread about to lock records LOCK_WAIT only when another
 * thread holds it (exclusively, or, for an exclusive request on a shared lock, shared). The
 * holder is cleared after the unlock annotation, so an acquisition that races with a release can
 * be counted contended with a wait of a few nanoseconds; hold times run to the unlock
 * annotation, which Tracy's API places after the unlock.
 *
 * A lock is announced to mprof on its first use, so that a TracyCLockCustomName right after
 * TracyCLockAnnounce names it; a name given later announces it again under the new name.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct tracy_lock {
    _Atomic uint32_t id;             /* mprof's lock id; 0 until the first use */
    _Atomic uintptr_t owner;         /* the exclusive holder's tag, 0 = none */
    atomic_int readers;              /* shared holders */
    atomic_uint depth;               /* recursive exclusive holds by the owner; atomic since
                                        Tracy's unlock annotation runs after the unlock */
    mprof_lock_kind kind;
    const mprof_srcloc *site;        /* interned: captures refer to it by address */
    const char *name;                /* interned */
} tracy_lock;

struct __tracy_lockable_context_data {
    tracy_lock l;
};
struct __tracy_shared_lockable_context_data {
    tracy_lock l;
};

static pthread_mutex_t announce_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local char self_tag;

static uintptr_t self(void)
{
    return (uintptr_t)&self_tag;
}

static void init(tracy_lock *l, const struct ___tracy_source_location_data *s, mprof_lock_kind kind)
{
    memset(l, 0, sizeof *l);
    l->kind = kind;
    const char *fn = s && s->function ? s->function : "";
    const char *file = s && s->file ? s->file : "";
    const char *name = s && s->name ? s->name : fn;
    uint32_t line = s ? s->line : 0;
    l->site = mprof_tracy__intern(name, strlen(name), fn, strlen(fn), file, strlen(file), line,
                                  s ? s->color : 0);
    l->name = l->site ? l->site->name : NULL;
}

/* mprof's id of the lock, announcing it on first use; 0 while it cannot be announced. */
static uint32_t id_of(tracy_lock *l)
{
    uint32_t id = atomic_load_explicit(&l->id, memory_order_acquire);
    if (id)
        return id;
    pthread_mutex_lock(&announce_lock);
    id = atomic_load_explicit(&l->id, memory_order_relaxed);
    if (!id && l->name) {
        id = mprof__lock_announce(l->name, l->kind, l->site);
        atomic_store_explicit(&l->id, id, memory_order_release);
    }
    pthread_mutex_unlock(&announce_lock);
    return id;
}

static void before(tracy_lock *l, int shared)
{
    uint32_t id = id_of(l);
    if (!id)
        return;
    uintptr_t owner = atomic_load_explicit(&l->owner, memory_order_relaxed);
    int held = (owner && owner != self()) ||
               (!shared && atomic_load_explicit(&l->readers, memory_order_relaxed) > 0);
    if (held)
        mprof__lock_wait(id, shared);
}

static void after(tracy_lock *l, int shared)
{
    uint32_t id = id_of(l);
    if (shared) {
        atomic_fetch_add_explicit(&l->readers, 1, memory_order_relaxed);
    } else {
        if (atomic_load_explicit(&l->owner, memory_order_relaxed) == self()) {
            atomic_fetch_add_explicit(&l->depth, 1, memory_order_relaxed);
        } else {
            atomic_store_explicit(&l->depth, 1, memory_order_relaxed);
            atomic_store_explicit(&l->owner, self(), memory_order_relaxed);
        }
    }
    if (id)
        mprof__lock_obtained(id, shared);
}

static void after_unlock(tracy_lock *l, int shared)
{
    uint32_t id = id_of(l);
    if (shared) {
        atomic_fetch_sub_explicit(&l->readers, 1, memory_order_relaxed);
    } else if (atomic_load_explicit(&l->owner, memory_order_relaxed) == self() &&
               atomic_fetch_sub_explicit(&l->depth, 1, memory_order_relaxed) == 1) {
        uintptr_t me = self();
        atomic_compare_exchange_strong_explicit(&l->owner, &me, 0, memory_order_relaxed,
                                                memory_order_relaxed);
    }
    if (id)
        mprof__lock_released(id, shared);
}

static void after_try(tracy_lock *l, int shared, int32_t acquired)
{
    if (acquired) {
        after(l, shared);
        return;
    }
    uint32_t id = id_of(l);
    if (id)
        mprof__lock_try_failed(id, shared);
}

static void rename_lock(tracy_lock *l, const char *name, size_t n)
{
    if (!name || !l->site)
        return;
    const mprof_srcloc *s = l->site;
    const mprof_srcloc *named = mprof_tracy__intern(name, n, s->function, strlen(s->function),
                                                    s->file, strlen(s->file), s->line, s->color);
    if (!named)
        return;
    pthread_mutex_lock(&announce_lock);
    l->site = named;
    l->name = named->name;
    /* Announced already under another name: the next use announces it again. */
    atomic_store_explicit(&l->id, 0, memory_order_release);
    pthread_mutex_unlock(&announce_lock);
}

/* ---- exclusive locks ----------------------------------------------------------------------- */

struct __tracy_lockable_context_data *
___tracy_announce_lockable_ctx(const struct ___tracy_source_location_data *srcloc)
{
    struct __tracy_lockable_context_data *c = malloc(sizeof *c);
    if (c)
        init(&c->l, srcloc, MPROF_LOCK_KIND_MUTEX);
    return c;
}

void ___tracy_terminate_lockable_ctx(struct __tracy_lockable_context_data *c)
{
    free(c);
}

int32_t ___tracy_before_lock_lockable_ctx(struct __tracy_lockable_context_data *c)
{
    if (!c)
        return 0;
    before(&c->l, 0);
    return 1;
}

void ___tracy_after_lock_lockable_ctx(struct __tracy_lockable_context_data *c)
{
    if (c)
        after(&c->l, 0);
}

void ___tracy_after_unlock_lockable_ctx(struct __tracy_lockable_context_data *c)
{
    if (c)
        after_unlock(&c->l, 0);
}

void ___tracy_after_try_lock_lockable_ctx(struct __tracy_lockable_context_data *c, int32_t acquired)
{
    if (c)
        after_try(&c->l, 0, acquired);
}

void ___tracy_custom_name_lockable_ctx(struct __tracy_lockable_context_data *c, const char *name,
                                       size_t nameSz)
{
    if (c)
        rename_lock(&c->l, name, nameSz);
}

/* ---- shared locks -------------------------------------------------------------------------- */

struct __tracy_shared_lockable_context_data *
___tracy_announce_shared_lockable_ctx(const struct ___tracy_source_location_data *srcloc)
{
    struct __tracy_shared_lockable_context_data *c = malloc(sizeof *c);
    if (c)
        init(&c->l, srcloc, MPROF_LOCK_KIND_RWLOCK);
    return c;
}

void ___tracy_terminate_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *c)
{
    free(c);
}

int32_t ___tracy_before_lock_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *c)
{
    if (!c)
        return 0;
    before(&c->l, 0);
    return 1;
}

void ___tracy_after_lock_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *c)
{
    if (c)
        after(&c->l, 0);
}

void ___tracy_after_unlock_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *c)
{
    if (c)
        after_unlock(&c->l, 0);
}

void ___tracy_after_try_lock_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *c,
                                                 int32_t acquired)
{
    if (c)
        after_try(&c->l, 0, acquired);
}

int32_t
___tracy_before_lock_shared_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *c)
{
    if (!c)
        return 0;
    before(&c->l, 1);
    return 1;
}

void ___tracy_after_lock_shared_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *c)
{
    if (c)
        after(&c->l, 1);
}

void ___tracy_after_unlock_shared_shared_lockable_ctx(
    struct __tracy_shared_lockable_context_data *c)
{
    if (c)
        after_unlock(&c->l, 1);
}

void ___tracy_after_try_lock_shared_shared_lockable_ctx(
    struct __tracy_shared_lockable_context_data *c, int32_t acquired)
{
    if (c)
        after_try(&c->l, 1, acquired);
}

void ___tracy_custom_name_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *c,
                                              const char *name, size_t nameSz)
{
    if (c)
        rename_lock(&c->l, name, nameSz);
}
