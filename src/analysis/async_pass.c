/*
 * async_pass.c - the async spans section of `mprof report`: per track, the spans that
 * completed (count, total, mean, p50, p95, max: the durations by hist.h, as zones are), the
 * spans still open at the end of the capture, the ends without a begin and the ids begun again
 * while open. The spans come from the one pairer every tool uses (async.h).
 */
#include "analysis/analysis.h"
#include "analysis/async.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct track_acc {
    uint64_t count; /* completed spans (cut by a reused id included, open ones not) */
    int64_t total_ns, max_ns;
    mprof_hist dur;
} track_acc;

typedef struct async_state {
    mprof_async *pairer;
    track_acc *tracks; /* by the pairer's track index, zero-filled */
    uint32_t cap;
    int64_t last_ns;
    int oom;
} async_state;

static void on_span(void *user, const mprof_async_span *s)
{
    async_state *st = user;
    if (mprof_grow_zeroed((void **)&st->tracks, &st->cap, s->track, sizeof *st->tracks,
                          1u << 24) != 0) {
        st->oom = 1;
        return;
    }
    if (s->open_at_end)
        return; /* counted by the pairer, and not a duration */
    track_acc *t = &st->tracks[s->track];
    int64_t d = s->end_ns - s->start_ns;
    t->count++;
    t->total_ns += d;
    if (d > t->max_ns)
        t->max_ns = d;
    if (mprof_hist_add(&t->dur, (uint64_t)d) != 0)
        st->oom = 1;
}

static void *async_create(mprof_analysis *a)
{
    (void)a;
    async_state *s = calloc(1, sizeof *s);
    if (s && !(s->pairer = mprof__async_new(on_span, s))) {
        free(s);
        return NULL;
    }
    return s;
}

static void async_destroy(void *state)
{
    async_state *s = state;
    if (!s)
        return;
    for (uint32_t i = 0; i < s->cap; i++)
        mprof_hist_free(&s->tracks[i].dur);
    free(s->tracks);
    mprof__async_free(s->pairer);
    free(s);
}

static void async_event(void *state, mprof_analysis *a, const mprof_event *ev)
{
    async_state *s = state;
    if (ev->ts_ns > s->last_ns)
        s->last_ns = ev->ts_ns;
    mprof__async_event(s->pairer, mprof_analysis_reader(a), ev);
}

/* Only the async events concern the pass, and the latest time of every event (spans still open
 * end there): b->max_ts_ns is that time over the events the batch stands for, so the zone
 * records need no walk. */
static void async_batch(void *state, mprof_analysis *a, const mprof_batch *b)
{
    async_state *s = state;
    if (b->max_ts_ns > s->last_ns)
        s->last_ns = b->max_ts_ns;
    for (uint32_t i = 0; i < b->n_ev; i++) {
        int t = b->ev[i].type;
        if (t == MPROF_EV_ASYNC_BEGIN || t == MPROF_EV_ASYNC_BEGIN_DYN || t == MPROF_EV_ASYNC_END)
            mprof__async_event(s->pairer, mprof_analysis_reader(a), &b->ev[i]);
    }
}

static void async_finish(void *state, mprof_analysis *a)
{
    (void)a;
    async_state *s = state;
    mprof__async_finish(s->pairer, s->last_ns);
    /* Every track the pairer met has a row, completed spans or not. */
    uint32_t n = mprof__async_track_count(s->pairer);
    if (n && mprof_grow_zeroed((void **)&s->tracks, &s->cap, n - 1, sizeof *s->tracks,
                               1u << 24) != 0)
        s->oom = 1;
}

static int incomplete(const async_state *s)
{
    return s->oom || mprof__async_incomplete(s->pairer);
}

static void async_print_text(void *state, mprof_analysis *a, FILE *out, int top_n)
{
    (void)a;
    async_state *s = state;
    uint32_t n = mprof__async_track_count(s->pairer);
    if (!n)
        return;
    fprintf(out, "\nAsync spans (begun and ended on any threads)\n");
    fprintf(out, "  %-24s %8s %11s %10s %10s %10s %10s %8s %8s %7s\n", "track", "count",
            "total ms", "mean us", "p50 us", "p95 us", "max us", "open end", "no begin",
            "reused");
    for (uint32_t i = 0; i < n && i < s->cap && (int)i < top_n; i++) {
        const track_acc *t = &s->tracks[i];
        const mprof_async_counts *c = mprof__async_counts(s->pairer, i);
        fprintf(out,
                "  %-24.24s %8" PRIu64 " %11.3f %10.1f %10.1f %10.1f %10.1f %8" PRIu64
                " %8" PRIu64 " %7" PRIu64 "\n",
                mprof__async_track_name(s->pairer, i), t->count, (double)t->total_ns / 1e6,
                t->count ? (double)t->total_ns / (double)t->count / 1e3 : 0.0,
                (double)mprof_hist_quantile(&t->dur, 0.5) / 1e3,
                (double)mprof_hist_quantile(&t->dur, 0.95) / 1e3, (double)t->max_ns / 1e3,
                c->open_at_end, c->unmatched_ends, c->reused_ids);
    }
    if (incomplete(s))
        fprintf(out, "  (out of memory: some spans were not paired)\n");
}

static void async_print_json(void *state, mprof_analysis *a, mprof_json *j)
{
    (void)a;
    async_state *s = state;
    mprof_json_arr_begin(j, "async");
    for (uint32_t i = 0; i < mprof__async_track_count(s->pairer) && i < s->cap; i++) {
        const track_acc *t = &s->tracks[i];
        const mprof_async_counts *c = mprof__async_counts(s->pairer, i);
        mprof_json_obj_begin(j, NULL);
        mprof_json_str(j, "track", mprof__async_track_name(s->pairer, i));
        mprof_json_u64(j, "count", t->count);
        mprof_json_i64(j, "total_ns", t->total_ns);
        mprof_json_i64(j, "mean_ns", t->count ? t->total_ns / (int64_t)t->count : 0);
        mprof_json_u64(j, "p50_ns", mprof_hist_quantile(&t->dur, 0.5));
        mprof_json_u64(j, "p95_ns", mprof_hist_quantile(&t->dur, 0.95));
        mprof_json_i64(j, "max_ns", t->max_ns);
        mprof_json_u64(j, "open_at_end", c->open_at_end);
        mprof_json_u64(j, "unmatched_ends", c->unmatched_ends);
        mprof_json_u64(j, "reused_ids", c->reused_ids);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
    if (incomplete(s))
        mprof_json_bool(j, "async_incomplete", 1);
}

static void async_fields(unsigned char need[MPROF_EV_MAX])
{
    need[MPROF_EV_ASYNC_BEGIN] = need[MPROF_EV_ASYNC_BEGIN_DYN] = need[MPROF_EV_ASYNC_END] = 1;
}

const mprof_pass_vtbl mprof__async_pass = {
    .name = "async",
    .always = true, /* async spans are always reported; the section is empty without them */
    MPROF_PASS_HOOKS(async),
    .batch = async_batch,
    .fields = async_fields,
};
