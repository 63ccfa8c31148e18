/*
 * async.c - the async spans pass of `mprof report`: per track, how many spans completed, their
 * total, mean, p50, p95 and max duration, how many were still open at the end of the capture,
 * and what did not pair.
 *
 * A span is an ASYNC_BEGIN (or ASYNC_BEGIN_DYN) and the next ASYNC_END of the same track and id,
 * on any threads (docs/FORMAT.md, "Async spans"). Tracks are compared by their text: the capture
 * interns a track name per literal address, and two literals with one text are one track.
 * Events arrive in file order, which is time order within a thread but not across threads, so
 * an end read before its begin (written by another thread, in a later chunk) waits aside and
 * pairs when the begin arrives; what still waits at the end is an end without a begin. Memory
 * follows the spans open at once, the tracks, and the ends waiting for their begin.
 */
#include "analysis/analysis.h"
#include "util/grow.h"
#include "util/umap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Track i is name i of the pass's string table. */
typedef struct track_acc {
    uint64_t count;          /* completed spans */
    int64_t total_ns, max_ns;
    mprof_hist dur;          /* durations of the completed spans */
    uint64_t open_at_end;    /* begun and never ended */
    uint64_t unmatched_ends; /* ended without a begin */
    uint64_t reused_ids;     /* begun again while open: the earlier span ends at the new begin */
} track_acc;

typedef struct pending {
    uint64_t key;   /* the span's key (track, id); 0 = a free slot */
    int64_t ts_ns;  /* when it began (open) or ended (an end waiting for its begin) */
    uint32_t track; /* index into tracks */
    uint32_t next_free;
} pending;

/* A set of spans by key: the open begins, or the ends waiting for their begin. */
typedef struct span_set {
    mprof_umap by_key; /* key -> index + 1 into v */
    pending *v;
    uint32_t n, cap;
    uint32_t free_head; /* a free slot's index + 1, chained through next_free */
} span_set;

typedef struct async_state {
    mprof_strtab names; /* track names by text, in the order tracks were first seen */
    uint32_t *track_of; /* capture string id -> track index + 1, 0 = not seen yet */
    uint32_t n_track_of;
    track_acc *tracks;
    uint32_t n_tracks, cap_tracks;
    span_set open, early_ends;
    int oom;
} async_state;

static void *async_create(mprof_analysis *a)
{
    (void)a;
    return calloc(1, sizeof(async_state));
}

static void set_free(span_set *s)
{
    mprof_umap_free(&s->by_key);
    free(s->v);
}

static void async_destroy(void *state)
{
    async_state *s = state;
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n_tracks; i++)
        mprof_hist_free(&s->tracks[i].dur);
    free(s->tracks);
    free(s->track_of);
    mprof_strtab_free(&s->names);
    set_free(&s->open);
    set_free(&s->early_ends);
    free(s);
}

/* The track of capture string id sid: an index into tracks, or UINT32_MAX out of memory. */
static uint32_t track_of(async_state *s, const mprof_reader *r, uint64_t sid)
{
    if (sid < s->n_track_of && s->track_of[sid])
        return s->track_of[sid] - 1;
    const char *text = sid <= UINT32_MAX ? mprof_reader_string(r, (uint32_t)sid) : NULL;
    if (!text)
        text = "?";
    if (MPROF_GROW(s->tracks, s->cap_tracks, s->n_tracks + 1, 8) != 0)
        return UINT32_MAX;
    uint32_t t = mprof_strtab_id(&s->names, text);
    if (t == UINT32_MAX)
        return UINT32_MAX;
    if (t == s->n_tracks)
        memset(&s->tracks[s->n_tracks++], 0, sizeof s->tracks[t]);
    /* The id-to-track cache is an optimisation only: without room the text is looked up again. */
    if (sid < (1u << 24) && mprof_grow_zeroed((void **)&s->track_of, &s->n_track_of,
                                              (uint32_t)sid, sizeof *s->track_of, 1u << 24) == 0)
        s->track_of[sid] = t + 1;
    return t;
}

/* The key of span id in track t; never 0 (a free slot). */
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

static int set_add(span_set *s, uint64_t key, int64_t ts, uint32_t track)
{
    uint32_t i;
    if (s->free_head) {
        i = s->free_head - 1;
        s->free_head = s->v[i].next_free;
    } else {
        if (MPROF_GROW(s->v, s->cap, s->n + 1, 64) != 0)
            return -1;
        i = s->n++;
        s->v[i].key = 0;
    }
    if (mprof_umap_put(&s->by_key, key, i + 1) != 0) {
        s->v[i].next_free = s->free_head;
        s->free_head = i + 1;
        return -1;
    }
    s->v[i] = (pending){key, ts, track, 0};
    return 0;
}

static void set_remove(span_set *s, pending *p)
{
    mprof_umap_del(&s->by_key, p->key);
    p->key = 0;
    p->next_free = s->free_head;
    s->free_head = (uint32_t)(p - s->v) + 1;
}

static void complete(async_state *s, uint32_t t, int64_t begin, int64_t end)
{
    track_acc *a = &s->tracks[t];
    int64_t d = end > begin ? end - begin : 0;
    a->count++;
    a->total_ns += d;
    if (d > a->max_ns)
        a->max_ns = d;
    if (mprof_hist_add(&a->dur, (uint64_t)d) != 0)
        s->oom = 1;
}

static void async_event(void *state, mprof_analysis *an, const mprof_event *ev)
{
    async_state *s = state;
    if (ev->type != MPROF_EV_ASYNC_BEGIN && ev->type != MPROF_EV_ASYNC_BEGIN_DYN &&
        ev->type != MPROF_EV_ASYNC_END)
        return;
    uint32_t t = track_of(s, mprof_analysis_reader(an), ev->u[0]);
    if (t == UINT32_MAX) {
        s->oom = 1;
        return;
    }
    uint64_t key = span_key(t, ev->u[1]);
    if (ev->type == MPROF_EV_ASYNC_END) {
        pending *b = set_find(&s->open, key);
        if (b) {
            complete(s, t, b->ts_ns, ev->ts_ns);
            set_remove(&s->open, b);
        } else if (set_find(&s->early_ends, key) ||
                   set_add(&s->early_ends, key, ev->ts_ns, t) != 0) {
            s->tracks[t].unmatched_ends++; /* a second end of one id, or no room to wait */
        }
        return;
    }
    /* A begin: an end of this span read earlier (another thread's, in a later chunk) closes it. */
    pending *e = set_find(&s->early_ends, key);
    if (e && e->ts_ns >= ev->ts_ns) {
        complete(s, t, ev->ts_ns, e->ts_ns);
        set_remove(&s->early_ends, e);
        return;
    }
    pending *b = set_find(&s->open, key);
    if (b) {
        s->tracks[t].reused_ids++;
        complete(s, t, b->ts_ns, ev->ts_ns);
        b->ts_ns = ev->ts_ns;
        return;
    }
    if (set_add(&s->open, key, ev->ts_ns, t) != 0)
        s->oom = 1;
}

static void async_finish(void *state, mprof_analysis *an)
{
    (void)an;
    async_state *s = state;
    for (uint32_t i = 0; i < s->open.n; i++)
        if (s->open.v[i].key)
            s->tracks[s->open.v[i].track].open_at_end++;
    for (uint32_t i = 0; i < s->early_ends.n; i++)
        if (s->early_ends.v[i].key)
            s->tracks[s->early_ends.v[i].track].unmatched_ends++;
}

static const char *track_name(const async_state *s, const track_acc *t)
{
    return s->names.s[t - s->tracks];
}

static void async_print_text(void *state, mprof_analysis *a, FILE *out, int top_n)
{
    (void)a;
    async_state *s = state;
    if (!s->n_tracks)
        return;
    fprintf(out, "\nAsync spans (begun and ended on any threads)\n");
    fprintf(out, "  %-24s %8s %11s %10s %10s %10s %10s %8s %8s %7s\n", "track", "count",
            "total ms", "mean us", "p50 us", "p95 us", "max us", "open end", "no begin",
            "reused");
    for (uint32_t i = 0; i < s->n_tracks && (int)i < top_n; i++) {
        const track_acc *t = &s->tracks[i];
        fprintf(out,
                "  %-24.24s %8" PRIu64 " %11.3f %10.1f %10.1f %10.1f %10.1f %8" PRIu64
                " %8" PRIu64 " %7" PRIu64 "\n",
                track_name(s, t), t->count, (double)t->total_ns / 1e6,
                t->count ? (double)t->total_ns / (double)t->count / 1e3 : 0.0,
                (double)mprof_hist_quantile(&t->dur, 0.5) / 1e3,
                (double)mprof_hist_quantile(&t->dur, 0.95) / 1e3, (double)t->max_ns / 1e3,
                t->open_at_end, t->unmatched_ends, t->reused_ids);
    }
    if (s->oom)
        fprintf(out, "  (out of memory: some spans were not paired)\n");
}

static void async_print_json(void *state, mprof_analysis *a, mprof_json *j)
{
    (void)a;
    async_state *s = state;
    mprof_json_arr_begin(j, "async");
    for (uint32_t i = 0; i < s->n_tracks; i++) {
        const track_acc *t = &s->tracks[i];
        mprof_json_obj_begin(j, NULL);
        mprof_json_str(j, "track", track_name(s, t));
        mprof_json_u64(j, "count", t->count);
        mprof_json_i64(j, "total_ns", t->total_ns);
        mprof_json_i64(j, "mean_ns", t->count ? t->total_ns / (int64_t)t->count : 0);
        mprof_json_u64(j, "p50_ns", mprof_hist_quantile(&t->dur, 0.5));
        mprof_json_u64(j, "p95_ns", mprof_hist_quantile(&t->dur, 0.95));
        mprof_json_i64(j, "max_ns", t->max_ns);
        mprof_json_u64(j, "open_at_end", t->open_at_end);
        mprof_json_u64(j, "unmatched_ends", t->unmatched_ends);
        mprof_json_u64(j, "reused_ids", t->reused_ids);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
    if (s->oom)
        mprof_json_bool(j, "async_incomplete", 1);
}

const mprof_pass_vtbl mprof__async_pass = {
    .name = "async",
    .always = true, /* a capture's async spans are always reported: the section is empty without */
    MPROF_PASS_HOOKS(async),
};
