/*
 * locks.c - the locks pass: per lock acquisitions, contention, wait and hold times, and the
 * threads and zones that waited longest (`mprof report --locks`, JSON key "locks").
 *
 * An acquisition is contended when its LOCK_OBTAINED follows a LOCK_WAIT of the same lock on the
 * same thread; mprof_mutex/mprof_rwlock record LOCK_WAIT only when the lock was not free at the
 * first attempt, so the count is exact. Wait time runs from LOCK_WAIT to LOCK_OBTAINED, hold time
 * from LOCK_OBTAINED to LOCK_RELEASED (outermost, for recursive and shared holds). All of that is
 * per thread, where events arrive in time order, so no cross-thread reordering is needed.
 *
 * The zone that waited is the innermost zone open on the waiting thread's track when LOCK_WAIT
 * was recorded: the thread's own zone stack, or the running fiber's (fibers keep their own stacks
 * here too, switched on FIBER_ENTER/FIBER_LEAVE).
 */
#include "analysis/analysis.h"
#include "analysis/passes.h"
#include "util/umap.h"
#include "util/grow.h"
#include "util/tool.h"
#include "mprof/mprof.h" /* lock kinds */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define TOP_WAITERS 3

typedef struct waiter {
    uint32_t key; /* thread index, or srcloc id (0 = outside any zone) */
    uint64_t count;
    int64_t total;
} waiter;

typedef struct waiters {
    waiter *v;
    uint32_t n, cap;
} waiters;

typedef struct lock_acc {
    uint32_t id, name, loc;
    uint8_t kind;
    uint64_t acquisitions, contended, shared_acquisitions, try_failed;
    uint64_t waits_abandoned; /* LOCK_WAIT never followed by LOCK_OBTAINED */
    int64_t wait_total, hold_total; /* saturate at INT64_MAX */
    uint64_t n_corrupt; /* waits or holds whose length overflows: a corrupt capture */
    mprof_hist wait, hold;
    waiters by_thread, by_zone;
} lock_acc;

typedef struct holder {
    uint32_t lock;
    int64_t wait_ts; /* -1 = not waiting */
    uint32_t wait_zone;
    uint32_t depth;  /* holds by this thread */
    int64_t hold_start;
} holder;

typedef struct zstack {
    uint32_t *v;
    uint32_t n, cap;
} zstack;

typedef struct lthread {
    zstack own;
    uint32_t fiber; /* index + 1 into fibers, 0 = none */
} lthread;

typedef struct locks_state {
    lock_acc *locks;
    uint32_t n_locks, cap_locks;
    mprof_umap lock_by_id;
    holder *holders;
    uint32_t n_holders, cap_holders;
    mprof_umap holder_by_key;
    lthread *threads;
    uint32_t n_threads;
    zstack *fibers;
    uint32_t n_fibers, cap_fibers;
    mprof_umap fiber_by_name;
} locks_state;

static lock_acc *get_lock(locks_state *s, uint32_t id)
{
    uint32_t *p = mprof_umap_get(&s->lock_by_id, (uint64_t)id + 1);
    if (p)
        return &s->locks[*p];
    if (mprof_array_reserve((void **)&s->locks, &s->cap_locks, s->n_locks + 1, sizeof *s->locks))
        return NULL;
    if (mprof_umap_put(&s->lock_by_id, (uint64_t)id + 1, s->n_locks) != 0)
        return NULL;
    lock_acc *l = &s->locks[s->n_locks++];
    memset(l, 0, sizeof *l);
    l->id = id;
    return l;
}

static holder *get_holder(locks_state *s, uint32_t lock, uint32_t thread)
{
    uint64_t k = ((uint64_t)lock << 32) | thread;
    k = k ? k : ~0ull;
    uint32_t *p = mprof_umap_get(&s->holder_by_key, k);
    if (p)
        return &s->holders[*p];
    if (mprof_array_reserve((void **)&s->holders, &s->cap_holders, s->n_holders + 1,
                            sizeof *s->holders))
        return NULL;
    if (mprof_umap_put(&s->holder_by_key, k, s->n_holders) != 0)
        return NULL;
    holder *h = &s->holders[s->n_holders++];
    memset(h, 0, sizeof *h);
    h->lock = lock;
    h->wait_ts = -1;
    return h;
}

static lthread *get_thread(locks_state *s, uint32_t idx)
{
    if (mprof_grow_zeroed((void **)&s->threads, &s->n_threads, idx, sizeof *s->threads, 1u << 20))
        return NULL;
    return &s->threads[idx];
}

static zstack *track_of(locks_state *s, lthread *t)
{
    return t->fiber ? &s->fibers[t->fiber - 1] : &t->own;
}

static void zpush(zstack *z, uint32_t loc)
{
    if (MPROF_GROW(z->v, z->cap, z->n + 1, 16) != 0)
        return;
    z->v[z->n++] = loc;
}

/* a + b for b >= 0, saturating at INT64_MAX (totals of capture values). */
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* *out = end - start, at least 0. 0 when it overflows (timestamps no real capture has), which
 * the caller counts as corrupt. */
static int span_ns(int64_t start, int64_t end, int64_t *out)
{
    if (__builtin_sub_overflow(end, start, out))
        return 0;
    if (*out < 0)
        *out = 0;
    return 1;
}

static void add_waiter(waiters *w, uint32_t key, int64_t dur)
{
    for (uint32_t i = 0; i < w->n; i++)
        if (w->v[i].key == key) {
            w->v[i].count++;
            w->v[i].total = sat_add(w->v[i].total, dur);
            return;
        }
    if (MPROF_GROW(w->v, w->cap, w->n + 1, 8) != 0)
        return;
    w->v[w->n++] = (waiter){key, 1, dur};
}

static void *locks_create(mprof_analysis *a)
{
    (void)a;
    return calloc(1, sizeof(locks_state));
}

static void locks_event(void *state, mprof_analysis *a, const mprof_event *ev)
{
    (void)a;
    locks_state *s = state;
    lthread *t;
    switch (ev->type) {
    case MPROF_EV_ZONE_BEGIN:
        if ((t = get_thread(s, ev->thread)))
            zpush(track_of(s, t), (uint32_t)ev->u[0]);
        return;
    case MPROF_EV_ZONE_END:
        if ((t = get_thread(s, ev->thread))) {
            zstack *z = track_of(s, t);
            if (z->n)
                z->n--;
        }
        return;
    case MPROF_EV_FIBER_ENTER: {
        if (!(t = get_thread(s, ev->thread)))
            return;
        uint64_t k = ev->u[0] + 1;
        uint32_t *p = mprof_umap_get(&s->fiber_by_name, k);
        if (!p) {
            if (mprof_array_reserve((void **)&s->fibers, &s->cap_fibers, s->n_fibers + 1,
                                    sizeof *s->fibers) ||
                mprof_umap_put(&s->fiber_by_name, k, s->n_fibers) != 0)
                return;
            memset(&s->fibers[s->n_fibers], 0, sizeof *s->fibers);
            p = mprof_umap_get(&s->fiber_by_name, k);
            s->n_fibers++;
        }
        t->fiber = *p + 1;
        return;
    }
    case MPROF_EV_FIBER_LEAVE:
        if ((t = get_thread(s, ev->thread)))
            t->fiber = 0;
        return;
    case MPROF_EV_LOCK_ANNOUNCE: {
        lock_acc *l = get_lock(s, (uint32_t)ev->u[0]);
        if (l) {
            l->name = (uint32_t)ev->u[1];
            l->kind = (uint8_t)ev->u[2];
            l->loc = (uint32_t)ev->u[3];
        }
        return;
    }
    case MPROF_EV_LOCK_WAIT:
    case MPROF_EV_LOCK_OBTAINED:
    case MPROF_EV_LOCK_RELEASED:
    case MPROF_EV_LOCK_TRY_FAILED:
        break;
    default:
        return;
    }
    uint32_t id = (uint32_t)ev->u[0];
    lock_acc *l = get_lock(s, id);
    holder *h = l ? get_holder(s, id, ev->thread) : NULL;
    if (!h)
        return;
    switch (ev->type) {
    case MPROF_EV_LOCK_WAIT:
        if (h->wait_ts >= 0)
            l->waits_abandoned++;
        h->wait_ts = ev->ts_ns;
        t = get_thread(s, ev->thread);
        {
            zstack *z = t ? track_of(s, t) : NULL;
            h->wait_zone = z && z->n ? z->v[z->n - 1] : 0;
        }
        break;
    case MPROF_EV_LOCK_OBTAINED:
        l->acquisitions++;
        if (ev->u[1])
            l->shared_acquisitions++;
        if (h->wait_ts >= 0) {
            int64_t w;
            l->contended++;
            if (span_ns(h->wait_ts, ev->ts_ns, &w)) {
                l->wait_total = sat_add(l->wait_total, w);
                mprof_hist_add(&l->wait, (uint64_t)w);
                add_waiter(&l->by_thread, ev->thread, w);
                add_waiter(&l->by_zone, h->wait_zone, w);
            } else {
                l->n_corrupt++;
            }
            h->wait_ts = -1;
        }
        if (h->depth++ == 0)
            h->hold_start = ev->ts_ns;
        break;
    case MPROF_EV_LOCK_RELEASED:
        if (h->depth && --h->depth == 0) {
            int64_t d;
            if (span_ns(h->hold_start, ev->ts_ns, &d)) {
                l->hold_total = sat_add(l->hold_total, d);
                mprof_hist_add(&l->hold, (uint64_t)d);
            } else {
                l->n_corrupt++;
            }
        }
        break;
    case MPROF_EV_LOCK_TRY_FAILED:
        l->try_failed++;
        break;
    default:
        break;
    }
}

static void locks_finish(void *state, mprof_analysis *a)
{
    (void)a;
    locks_state *s = state;
    for (uint32_t i = 0; i < s->n_holders; i++) {
        if (s->holders[i].wait_ts < 0)
            continue;
        lock_acc *l = get_lock(s, s->holders[i].lock);
        if (l)
            l->waits_abandoned++;
        s->holders[i].wait_ts = -1;
    }
}

static void locks_destroy(void *state)
{
    locks_state *s = state;
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n_locks; i++) {
        mprof_hist_free(&s->locks[i].wait);
        mprof_hist_free(&s->locks[i].hold);
        free(s->locks[i].by_thread.v);
        free(s->locks[i].by_zone.v);
    }
    free(s->locks);
    mprof_umap_free(&s->lock_by_id);
    free(s->holders);
    mprof_umap_free(&s->holder_by_key);
    for (uint32_t i = 0; i < s->n_threads; i++)
        free(s->threads[i].own.v);
    free(s->threads);
    for (uint32_t i = 0; i < s->n_fibers; i++)
        free(s->fibers[i].v);
    free(s->fibers);
    mprof_umap_free(&s->fiber_by_name);
    free(s);
}

/* ---- output --------------------------------------------------------------------------------- */

static const char *kind_name(uint8_t k)
{
    switch (k) {
    case MPROF_LOCK_KIND_RWLOCK:
        return "rwlock";
    case MPROF_LOCK_KIND_SPIN:
        return "spin";
    default:
        return "mutex";
    }
}

static const char *lock_name(const mprof_analysis *a, const lock_acc *l, char *buf, size_t n)
{
    const char *s = l->name ? mprof_reader_string(mprof_analysis_reader(a), l->name) : NULL;
    if (s)
        return s;
    snprintf(buf, n, "lock #%u", l->id);
    return buf;
}

static const char *thread_name(const mprof_analysis *a, uint32_t idx, char *buf, size_t n)
{
    const mprof_thread_def *t = mprof_reader_thread(mprof_analysis_reader(a), idx);
    if (t && t->name)
        return t->name;
    snprintf(buf, n, "thread %u", idx);
    return buf;
}

static const char *zone_name(const mprof_analysis *a, uint32_t loc)
{
    const mprof_srcloc_def *d = loc ? mprof_reader_srcloc(mprof_analysis_reader(a), loc) : NULL;
    return d && d->name ? d->name : "(no zone)";
}

static int cmp_waiter(const void *x, const void *y)
{
    const waiter *a = x, *b = y;
    return (a->total < b->total) - (a->total > b->total);
}

/* Total wait, then acquisitions, descending; then id. */
static int cmp_lock(const void *a, const void *b)
{
    const lock_acc *x = *(const lock_acc *const *)a, *y = *(const lock_acc *const *)b;
    if (x->wait_total != y->wait_total)
        return x->wait_total > y->wait_total ? -1 : 1;
    if (x->acquisitions != y->acquisitions)
        return x->acquisitions > y->acquisitions ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Locks sorted by total wait, then acquisitions. */
static lock_acc **sorted_locks(locks_state *s)
{
    lock_acc **v = malloc((s->n_locks ? s->n_locks : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (uint32_t i = 0; i < s->n_locks; i++)
        v[i] = &s->locks[i];
    if (s->n_locks > 1)
        qsort(v, s->n_locks, sizeof *v, cmp_lock);
    for (uint32_t i = 0; i < s->n_locks; i++) {
        if (s->locks[i].by_thread.n > 1)
            qsort(s->locks[i].by_thread.v, s->locks[i].by_thread.n, sizeof(waiter), cmp_waiter);
        if (s->locks[i].by_zone.n > 1)
            qsort(s->locks[i].by_zone.v, s->locks[i].by_zone.n, sizeof(waiter), cmp_waiter);
    }
    return v;
}

static void locks_print_text(void *state, mprof_analysis *a, FILE *out, int top_n)
{
    locks_state *s = state;
    char nb[64], tb[64], e[256];
    fprintf(out, "\nLocks\n");
    if (!s->n_locks) {
        fprintf(out, "  no lock events (mprof_mutex, mprof_rwlock or MPROF_LOCK_*)\n");
        return;
    }
    lock_acc **v = sorted_locks(s);
    if (!v)
        return;
    fprintf(out, "  %-20s %-6s %9s %9s %6s %10s %9s %9s %9s %10s %9s\n", "lock", "kind", "acquired",
            "contended", "%", "wait ms", "p50 us", "p95 us", "max us", "hold ms", "hold p95");
    for (uint32_t i = 0; i < s->n_locks && (int)i < top_n; i++) {
        lock_acc *l = v[i];
        fprintf(out,
                "  %-20s %-6s %9" PRIu64 " %9" PRIu64 " %5.1f%% %10.3f %9.1f %9.1f %9.1f %10.3f "
                "%8.1fus\n",
                tool_text(lock_name(a, l, nb, sizeof nb), e, sizeof e), kind_name(l->kind), l->acquisitions,
                l->contended, l->acquisitions ? 100.0 * (double)l->contended / (double)l->acquisitions : 0.0,
                (double)l->wait_total / 1e6, (double)mprof_hist_quantile(&l->wait, 0.5) / 1e3,
                (double)mprof_hist_quantile(&l->wait, 0.95) / 1e3, (double)l->wait.max / 1e3,
                (double)l->hold_total / 1e6, (double)mprof_hist_quantile(&l->hold, 0.95) / 1e3);
    }
    for (uint32_t i = 0; i < s->n_locks && (int)i < top_n; i++) {
        lock_acc *l = v[i];
        if (!l->contended)
            continue;
        fprintf(out, "  '%s' waited longest in:", tool_text(lock_name(a, l, nb, sizeof nb), e, sizeof e));
        for (uint32_t k = 0; k < l->by_thread.n && k < TOP_WAITERS; k++)
            fprintf(out, "%s %s %.3f ms (%" PRIu64 "x)", k ? "," : "",
                    tool_text(thread_name(a, l->by_thread.v[k].key, tb, sizeof tb), e, sizeof e),
                    (double)l->by_thread.v[k].total / 1e6, l->by_thread.v[k].count);
        fprintf(out, "\n    zones:");
        for (uint32_t k = 0; k < l->by_zone.n && k < TOP_WAITERS; k++)
            fprintf(out, "%s %s %.3f ms (%" PRIu64 "x)", k ? "," : "",
                    tool_text(zone_name(a, l->by_zone.v[k].key), e, sizeof e),
                    (double)l->by_zone.v[k].total / 1e6,
                    l->by_zone.v[k].count);
        fprintf(out, "\n");
    }
    uint64_t corrupt = 0;
    for (uint32_t i = 0; i < s->n_locks; i++)
        corrupt += s->locks[i].n_corrupt;
    if (corrupt)
        fprintf(out, "  %" PRIu64 " waits or holds ignored as corrupt (timestamps too far apart)\n",
                corrupt);
    free(v);
}

static void json_waiters(mprof_json *j, const char *key, const waiters *w, mprof_analysis *a,
                         int zones)
{
    char tb[64];
    mprof_json_arr_begin(j, key);
    for (uint32_t k = 0; k < w->n; k++) {
        mprof_json_obj_begin(j, NULL);
        if (zones) {
            mprof_json_str(j, "zone", zone_name(a, w->v[k].key));
        } else {
            mprof_json_u64(j, "thread", w->v[k].key);
            mprof_json_str(j, "name", thread_name(a, w->v[k].key, tb, sizeof tb));
        }
        mprof_json_u64(j, "waits", w->v[k].count);
        mprof_json_f64(j, "wait_ms", (double)w->v[k].total / 1e6);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
}

/* "key": {total, p50, p95, max} in milliseconds, of durations in ns. */
static void json_ms(mprof_json *j, const char *key, int64_t total_ns, const mprof_hist *h)
{
    mprof_json_obj_begin(j, key);
    mprof_json_f64(j, "total", (double)total_ns / 1e6);
    mprof_json_f64(j, "p50", (double)mprof_hist_quantile(h, 0.5) / 1e6);
    mprof_json_f64(j, "p95", (double)mprof_hist_quantile(h, 0.95) / 1e6);
    mprof_json_f64(j, "max", (double)h->max / 1e6);
    mprof_json_obj_end(j);
}

static void locks_print_json(void *state, mprof_analysis *a, mprof_json *j)
{
    locks_state *s = state;
    char nb[64];
    lock_acc **v = sorted_locks(s);
    mprof_json_arr_begin(j, "locks");
    for (uint32_t i = 0; v && i < s->n_locks; i++) {
        lock_acc *l = v[i];
        mprof_json_obj_begin(j, NULL);
        mprof_json_u64(j, "id", l->id);
        mprof_json_str(j, "name", lock_name(a, l, nb, sizeof nb));
        mprof_json_str(j, "kind", kind_name(l->kind));
        const mprof_srcloc_def *d = l->loc ? mprof_reader_srcloc(mprof_analysis_reader(a), l->loc) : NULL;
        if (d && d->file && d->file[0]) {
            mprof_json_str(j, "file", d->file);
            mprof_json_u64(j, "line", d->line);
        }
        mprof_json_u64(j, "acquisitions", l->acquisitions);
        mprof_json_u64(j, "shared_acquisitions", l->shared_acquisitions);
        mprof_json_u64(j, "contended", l->contended);
        mprof_json_u64(j, "try_failed", l->try_failed);
        mprof_json_u64(j, "corrupt_intervals", l->n_corrupt);
        mprof_json_u64(j, "waits_abandoned", l->waits_abandoned);
        json_ms(j, "wait_ms", l->wait_total, &l->wait);
        json_ms(j, "hold_ms", l->hold_total, &l->hold);
        json_waiters(j, "waiting_threads", &l->by_thread, a, 0);
        json_waiters(j, "waiting_zones", &l->by_zone, a, 1);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
    free(v);
}

const mprof_pass_vtbl mprof__locks_pass = {
    .name = "locks",
    .always = false,
    MPROF_PASS_HOOKS(locks),
    .beside = true,
};

/* ---- results for tests and tools (passes.h) ------------------------------------------------- */

int mprof__locks_get(mprof_analysis *a, const char *name, mprof_lock_result *out)
{
    locks_state *s = mprof_analysis_pass_state(a, "locks");
    char nb[64];
    lock_acc **v = s ? sorted_locks(s) : NULL; /* also sorts the waiter lists */
    free(v);
    for (uint32_t i = 0; s && i < s->n_locks; i++) {
        lock_acc *l = &s->locks[i];
        if (strcmp(lock_name(a, l, nb, sizeof nb), name) != 0)
            continue;
        *out = (mprof_lock_result){
            .name = l->name ? mprof_reader_string(mprof_analysis_reader(a), l->name) : NULL,
            .acquisitions = l->acquisitions,
            .shared_acquisitions = l->shared_acquisitions,
            .contended = l->contended,
            .try_failed = l->try_failed,
            .waits_abandoned = l->waits_abandoned,
            .wait_count = l->wait.n,
            .wait_p50_ns = mprof_hist_quantile(&l->wait, 0.5),
            .wait_p95_ns = mprof_hist_quantile(&l->wait, 0.95),
            .wait_max_ns = l->wait.max,
            .wait_total_ns = l->wait_total,
            .hold_total_ns = l->hold_total,
            .hold_count = l->hold.n,
            .top_zone = l->by_zone.n ? zone_name(a, l->by_zone.v[0].key) : NULL,
            .top_thread = l->by_thread.n ? l->by_thread.v[0].key : 0,
        };
        return 0;
    }
    return -1;
}
