/*
 * lock.c - lock identities and lock events.
 *
 * mprof__lock_announce gives each lock a small integer id and remembers its name, kind and
 * call site in a paged table (ids never move, pages are never freed). A lock is announced once,
 * often before any capture runs, but every capture session must see its LOCK_ANNOUNCE: so the
 * record is written lazily, by the first event of that lock in each session (an atomic
 * compare-and-swap on the session number makes it exactly once per session). A reader may
 * therefore meet a lock's first LOCK_WAIT on another thread before its announcement; the locks
 * pass handles events before names.
 *
 * Each event is one raw record: tag, TS, U32 id, U8 shared (format.h).
 */
#include "buffers.h"
#include "lifecycle.h"

#include <pthread.h>
#include <stdlib.h>

#define PAGE_LOCKS 1024u
#define MAX_PAGES 1024u /* ids up to 1,048,575; later locks are not tracked (id 0) */

typedef struct lock_info {
    const char *name;
    const mprof_srcloc *loc;
    uint8_t kind;
    _Atomic uint32_t session; /* session whose stream has the announcement */
} lock_info;

static lock_info *_Atomic pages[MAX_PAGES];
static _Atomic uint32_t next_id = 1;
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;

/* Used when a lock is initialised without a call site (mprof_mutex_init). */
static const mprof_srcloc no_site = {"lock", "", "", 0, 0};

static lock_info *info_of(mprof_lock_id id)
{
    lock_info *pg = atomic_load_explicit(&pages[id / PAGE_LOCKS], memory_order_acquire);
    return pg ? &pg[id % PAGE_LOCKS] : NULL;
}

mprof_lock_id mprof__lock_announce(const char *name, mprof_lock_kind kind, const mprof_srcloc *loc)
{
    uint32_t id = atomic_fetch_add(&next_id, 1);
    if (id >= PAGE_LOCKS * MAX_PAGES)
        return 0;
    uint32_t pi = id / PAGE_LOCKS;
    lock_info *pg = atomic_load_explicit(&pages[pi], memory_order_acquire);
    if (!pg) {
        pthread_mutex_lock(&grow_lock);
        pg = atomic_load_explicit(&pages[pi], memory_order_relaxed);
        if (!pg) {
            pg = calloc(PAGE_LOCKS, sizeof *pg);
            if (pg)
                atomic_store_explicit(&pages[pi], pg, memory_order_release);
        }
        pthread_mutex_unlock(&grow_lock);
        if (!pg)
            return 0;
    }
    /* Like any first event, an announcement starts the profiler when it is not running yet
     * (MPROF_CAPTURE), so that the wrappers' "is it recording" check can succeed. */
    (void)mprof__thread_get();
    lock_info *li = &pg[id % PAGE_LOCKS];
    li->name = name ? name : "lock";
    li->loc = loc ? loc : &no_site;
    li->kind = (uint8_t)(kind ? kind : MPROF_LOCK_KIND_MUTEX);
    atomic_store_explicit(&li->session, 0, memory_order_release);
    return id;
}

/* Writes the announcement if this session has not had it yet. */
static void ensure_announced(mprof_lock_id id, lock_info *li, uint64_t ts)
{
    uint32_t s = atomic_load_explicit(&mprof__session, memory_order_relaxed);
    uint32_t seen = atomic_load_explicit(&li->session, memory_order_relaxed);
    if (seen == s || !atomic_compare_exchange_strong(&li->session, &seen, s))
        return;
    unsigned char *p = mprof__reserve(1 + 8 + 4 + 8 + 1 + 8);
    if (!p) {
        /* Not recording (or over the cap): let a later event try again. */
        atomic_store_explicit(&li->session, 0, memory_order_relaxed);
        return;
    }
    *p = MPROF_EV_LOCK_ANNOUNCE;
    p = mprof__w_u64(p + 1, ts); /* the event's time keeps the thread's stream in order */
    p = mprof__w_u32(p, id);
    p = mprof__w_ptr(p, li->name);
    p = mprof__w_u8(p, li->kind);
    p = mprof__w_ptr(p, li->loc);
    mprof__commit(p);
}

static void lock_event(int tag, mprof_lock_id id, int shared)
{
    lock_info *li = id ? info_of(id) : NULL;
    /* thread_get first: it starts the profiler on a first event, which calibrates the clock. */
    if (!li || !mprof__thread_get())
        return;
    uint64_t ts = mprof__ticks();
    ensure_announced(id, li, ts);
    unsigned char *p = mprof__reserve(1 + 8 + 4 + 1);
    if (!p)
        return;
    *p = (unsigned char)tag;
    p = mprof__w_u64(p + 1, ts);
    p = mprof__w_u32(p, id);
    p = mprof__w_u8(p, shared ? 1 : 0);
    mprof__commit(p);
}

void mprof__lock_wait(mprof_lock_id id, int shared) { lock_event(MPROF_EV_LOCK_WAIT, id, shared); }

void mprof__lock_obtained(mprof_lock_id id, int shared)
{
    lock_event(MPROF_EV_LOCK_OBTAINED, id, shared);
}

void mprof__lock_released(mprof_lock_id id, int shared)
{
    lock_event(MPROF_EV_LOCK_RELEASED, id, shared);
}

void mprof__lock_try_failed(mprof_lock_id id, int shared)
{
    lock_event(MPROF_EV_LOCK_TRY_FAILED, id, shared);
}
