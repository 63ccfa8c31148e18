/*
 * async.c - async spans paired from a capture (see async.h for the idea).
 *
 * Two sets of pending records, each a map from the span's key (track, id) to a slot: the open
 * begins, and the ends read before their begin. File order is time order within a thread but
 * not across threads, so an end can be read before the begin another thread wrote earlier; it
 * waits, and pairs when that begin arrives with a time at or before it. A begin of an id that
 * is already open closes the open span at the new begin (counted as an id reused while open).
 */
#include "analysis/async.h"
#include "util/grow.h"
#include "util/umap.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct pending {
    uint64_t key;    /* the span's key; 0 = a free slot */
    uint64_t id;
    int64_t ts_ns;   /* when it began (open) or ended (an end waiting for its begin) */
    uint32_t track;
    uint32_t thread;
    uint32_t name_sid; /* the name's string id (ASYNC_BEGIN) */
    char *name_copy;   /* the name of an ASYNC_BEGIN_DYN (owned), NULL otherwise */
    uint32_t name_len;
    uint32_t next_free;
} pending;

typedef struct span_set {
    mprof_umap by_key; /* key -> index + 1 into v */
    pending *v;
    uint32_t n, cap;
    uint32_t free_head; /* a free slot's index + 1, chained through next_free */
} span_set;

struct mprof_async {
    mprof_async_fn fn;
    void *user;
    const mprof_reader *r;
    mprof_strtab names;       /* track names by text: track i is name i */
    mprof_async_counts *counts;
    uint32_t counts_cap;
    uint32_t *track_of;       /* capture string id -> track + 1; 0 = not looked up yet */
    uint32_t n_track_of;
    span_set open, early_ends;
    int oom;
};

mprof_async *mprof__async_new(mprof_async_fn fn, void *user)
{
    mprof_async *a = calloc(1, sizeof *a);
    if (a) {
        a->fn = fn;
        a->user = user;
    }
    return a;
}

static void set_free(span_set *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        free(s->v[i].name_copy);
    mprof_umap_free(&s->by_key);
    free(s->v);
}

void mprof__async_free(mprof_async *a)
{
    if (!a)
        return;
    set_free(&a->open);
    set_free(&a->early_ends);
    mprof_strtab_free(&a->names);
    free(a->counts);
    free(a->track_of);
    free(a);
}

/* The track of capture string id sid, or UINT32_MAX when out of memory. */
static uint32_t track_of(mprof_async *a, uint64_t sid)
{
    if (sid < a->n_track_of && a->track_of[sid])
        return a->track_of[sid] - 1;
    const char *text = sid <= UINT32_MAX ? mprof_reader_string(a->r, (uint32_t)sid) : NULL;
    if (!text)
        text = "?";
    if (MPROF_GROW(a->counts, a->counts_cap, a->names.n + 1, 8) != 0)
        return UINT32_MAX;
    uint32_t t = mprof_strtab_id(&a->names, text);
    if (t == UINT32_MAX)
        return UINT32_MAX;
    if (t + 1 == a->names.n)
        memset(&a->counts[t], 0, sizeof a->counts[t]);
    /* The id-to-track cache saves a lookup by text; without room the text is looked up again. */
    if (sid < (1u << 24) && mprof_grow_zeroed((void **)&a->track_of, &a->n_track_of,
                                              (uint32_t)sid, sizeof *a->track_of, 1u << 24) == 0)
        a->track_of[sid] = t + 1;
    return t;
}

/* Never 0 (a free slot). */
static uint64_t span_key(uint32_t t, uint64_t id)
{
    uint64_t in[2] = {t, id};
    uint64_t k = XXH3_64bits(in, sizeof in);
    return k ? k : 1;
}

static pending *set_find(span_set *s, uint64_t key)
{
    uint32_t *v = mprof_umap_get(&s->by_key, key);
    return v ? &s->v[*v - 1] : NULL;
}

static pending *set_add(span_set *s, uint64_t key)
{
    uint32_t i;
    if (s->free_head) {
        i = s->free_head - 1;
        s->free_head = s->v[i].next_free;
    } else {
        if (MPROF_GROW(s->v, s->cap, s->n + 1, 64) != 0)
            return NULL;
        i = s->n++;
    }
    memset(&s->v[i], 0, sizeof s->v[i]);
    if (mprof_umap_put(&s->by_key, key, i + 1) != 0) {
        s->v[i].next_free = s->free_head;
        s->free_head = i + 1;
        return NULL;
    }
    s->v[i].key = key;
    return &s->v[i];
}

static void set_remove(span_set *s, pending *p)
{
    mprof_umap_del(&s->by_key, p->key);
    free(p->name_copy);
    memset(p, 0, sizeof *p);
    p->next_free = s->free_head;
    s->free_head = (uint32_t)(p - s->v) + 1;
}

/* Hands the span begun by b to the callback. */
static void deliver(mprof_async *a, const pending *b, int64_t end, uint32_t end_thread,
                    int open_at_end, int cut_by_reuse)
{
    mprof_async_span s = {.track = b->track, .id = b->id, .start_ns = b->ts_ns,
                          .end_ns = end > b->ts_ns ? end : b->ts_ns,
                          .begin_thread = b->thread, .end_thread = end_thread,
                          .open_at_end = open_at_end, .cut_by_reuse = cut_by_reuse};
    if (b->name_copy) {
        s.name = b->name_copy;
        s.name_len = b->name_len;
    } else {
        s.name = b->name_sid ? mprof_reader_string(a->r, b->name_sid) : NULL;
        if (!s.name)
            s.name = "?";
        s.name_len = strlen(s.name);
    }
    a->fn(a->user, &s);
}

/* Fills b from the begin record ev. */
static int take_begin(pending *b, const mprof_event *ev, uint32_t t)
{
    b->id = ev->u[1];
    b->ts_ns = ev->ts_ns;
    b->track = t;
    b->thread = ev->thread;
    free(b->name_copy);
    b->name_copy = NULL;
    b->name_sid = 0;
    if (ev->type == MPROF_EV_ASYNC_BEGIN) {
        b->name_sid = (uint32_t)ev->u[2];
        return 0;
    }
    b->name_len = ev->str_len;
    b->name_copy = malloc((size_t)ev->str_len + 1);
    if (!b->name_copy)
        return -1;
    memcpy(b->name_copy, ev->str ? ev->str : "", ev->str_len);
    b->name_copy[ev->str_len] = 0;
    return 0;
}

int mprof__async_event(mprof_async *a, const mprof_reader *r, const mprof_event *ev)
{
    if (ev->type != MPROF_EV_ASYNC_BEGIN && ev->type != MPROF_EV_ASYNC_BEGIN_DYN &&
        ev->type != MPROF_EV_ASYNC_END)
        return 0;
    a->r = r;
    uint32_t t = track_of(a, ev->u[0]);
    if (t == UINT32_MAX) {
        a->oom = 1;
        return -1;
    }
    uint64_t key = span_key(t, ev->u[1]);
    if (ev->type == MPROF_EV_ASYNC_END) {
        pending *b = set_find(&a->open, key);
        if (b) {
            deliver(a, b, ev->ts_ns, ev->thread, 0, 0);
            set_remove(&a->open, b);
            return 0;
        }
        pending *e = set_find(&a->early_ends, key);
        if (e || !(e = set_add(&a->early_ends, key))) {
            a->counts[t].unmatched_ends++; /* a second end of one id, or no room to wait */
            return 0;
        }
        e->id = ev->u[1];
        e->ts_ns = ev->ts_ns;
        e->track = t;
        e->thread = ev->thread;
        return 0;
    }
    /* A begin: an end of this span read earlier (another thread's, in a later chunk) ends it. */
    pending *e = set_find(&a->early_ends, key);
    if (e && e->ts_ns >= ev->ts_ns) {
        pending b = {0};
        int rc = take_begin(&b, ev, t);
        if (rc == 0)
            deliver(a, &b, e->ts_ns, e->thread, 0, 0);
        free(b.name_copy);
        set_remove(&a->early_ends, e);
        if (rc != 0)
            a->oom = 1;
        return rc;
    }
    pending *b = set_find(&a->open, key);
    if (b) {
        a->counts[t].reused_ids++;
        deliver(a, b, ev->ts_ns, ev->thread, 0, 1);
    } else if (!(b = set_add(&a->open, key))) {
        a->oom = 1;
        return -1;
    }
    if (take_begin(b, ev, t) != 0) {
        set_remove(&a->open, b);
        a->oom = 1;
        return -1;
    }
    return 0;
}

void mprof__async_finish(mprof_async *a, int64_t last_ns)
{
    for (uint32_t i = 0; i < a->open.n; i++) {
        pending *b = &a->open.v[i];
        if (!b->key)
            continue;
        a->counts[b->track].open_at_end++;
        deliver(a, b, last_ns, 0, 1, 0);
        set_remove(&a->open, b);
    }
    for (uint32_t i = 0; i < a->early_ends.n; i++) {
        pending *e = &a->early_ends.v[i];
        if (e->key) {
            a->counts[e->track].unmatched_ends++;
            set_remove(&a->early_ends, e);
        }
    }
}

uint32_t mprof__async_track_count(const mprof_async *a)
{
    return a->names.n;
}

const char *mprof__async_track_name(const mprof_async *a, uint32_t track)
{
    return track < a->names.n ? a->names.s[track] : "?";
}

const mprof_async_counts *mprof__async_counts(const mprof_async *a, uint32_t track)
{
    static const mprof_async_counts none;
    return track < a->names.n ? &a->counts[track] : &none;
}

int mprof__async_incomplete(const mprof_async *a)
{
    return a->oom;
}

uint32_t mprof__async_lane(mprof_async_lanes *l, int64_t start, int64_t end)
{
    uint32_t k = 0;
    while (k < l->n && l->end[k] > start)
        k++;
    if (k == l->n) {
        if (l->n >= MPROF_ASYNC_MAX_LANES || MPROF_GROW(l->end, l->cap, l->n + 1, 4) != 0)
            return UINT32_MAX;
        l->n++;
    }
    l->end[k] = end;
    return k;
}

void mprof__async_lanes_free(mprof_async_lanes *l)
{
    free(l->end);
    memset(l, 0, sizeof *l);
}
