/*
 * zstats.c - zone statistics per source location, the figures that the CSV export and
 * `mprof diff` share: the walker's zones through the one definition of site_stats.h, with each
 * location's names.
 *
 * Statistics keep one histogram per source location (fixed size, see hist.h), so their memory
 * follows the number of call sites, not of zones.
 */
#include "analysis/zstats.h"
#include "analysis/timeline.h"
#include "util/tool.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct collect {
    mprof_zstats *s;
    const mprof_reader *r;
    mprof_walker *w;
    mprof_site_table t;
    uint32_t *loc_process; /* by srcloc id: the process of its zones */
    uint32_t n_loc_process;
    int oom;
} collect;

static void zs_zone(void *user, const mprof_tl_zone *z)
{
    collect *c = user;
    const mprof_tl_track *tr = mprof__walker_track(c->w, z->track);
    if (mprof__site_table_zone(&c->t, tr ? tr->kind : 0, z) != 0)
        c->oom = 1;
    if (tr && tr->process) {
        if (z->loc >= c->n_loc_process &&
            mprof_grow_zeroed((void **)&c->loc_process, &c->n_loc_process, z->loc,
                              sizeof *c->loc_process, 1u << 26) != 0) {
            c->oom = 1;
            return;
        }
        c->loc_process[z->loc] = tr->process;
    }
}

/* The capture's processes, with their threads that have events (the walker's thread tracks). */
static int take_processes(collect *c)
{
    mprof_zstats *s = c->s;
    uint32_t n = mprof_reader_process_count(c->r);
    s->procs = calloc(n ? n : 1, sizeof *s->procs);
    if (!s->procs)
        return -1;
    s->n_procs = n;
    for (uint32_t k = 0; k < n; k++) {
        const mprof_process_def *p = mprof_reader_process(c->r, k);
        s->procs[k].name = tool_strdup(p ? p->name : "");
        s->procs[k].pid = p ? p->pid : 0;
        if (!s->procs[k].name)
            return -1;
    }
    for (uint32_t i = 0; i < mprof__walker_track_count(c->w); i++) {
        const mprof_tl_track *t = mprof__walker_track(c->w, i);
        /* Thread 0 is the process context (system records), not a thread. */
        if (t->kind == MPROF_TRACK_THREAD && t->ref != 0 && t->process < n)
            s->procs[t->process].threads++;
    }
    return 0;
}

/* The names of every location with calls, and their figures moved out of the table. */
static int take_sites(collect *c)
{
    mprof_zstats *s = c->s;
    s->n = c->t.n_sites;
    s->z = calloc(s->n ? s->n : 1, sizeof *s->z);
    if (!s->z)
        return -1;
    for (uint32_t i = 0; i < s->n; i++) {
        mprof_zstat *st = &s->z[i];
        st->site = c->t.site[i];
        memset(&c->t.site[i], 0, sizeof c->t.site[i]);
        if (!st->site.count)
            continue;
        st->process = i < c->n_loc_process ? c->loc_process[i] : 0;
        const mprof_srcloc_def *d = mprof_reader_srcloc(c->r, i);
        st->name = tool_strdup(d && d->name ? d->name : "?");
        st->function = tool_strdup(d && d->function ? d->function : "");
        st->file = tool_strdup(d && d->file ? d->file : "");
        st->line = d ? d->line : 0;
        st->color = d ? d->color : 0;
        if (!st->name || !st->function || !st->file)
            return -1;
        s->zones += st->site.count;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int mprof__zstats_collect(const char *path, mprof_zstats *out, char *err, size_t errlen)
{
    return mprof__zstats_collect_range(path, NULL, out, err, errlen);
}

int mprof__zstats_collect_range(const char *path, const mprof_export_range *range,
                                mprof_zstats *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    collect c = {.s = out};
    /* The main frames' span first (per-frame figures count only time inside frames). */
    mprof_export_range span = {.first_frame = 0, .end_frame = INT64_MAX, .active = 1};
    char serr[256];
    out->span_first_ns = out->span_last_ns = -1;
    if (mprof__export_range_resolve(path, &span, serr, sizeof serr) == 0) {
        out->span_first_ns = span.t0_ns;
        out->span_last_ns = span.t1_ns;
    }
    int64_t window[2] = {range && range->active ? range->t0_ns : 0, range && range->active ? range->t1_ns : 0};
    mprof__site_table_init(&c.t, (mprof_frame_span){out->span_first_ns, out->span_last_ns},
                           range && range->active ? window : NULL);
    mprof_tl_hooks h = {.user = &c, .zone = zs_zone};
    mprof_reader *r = mprof_reader_open(path, err, errlen);
    if (!r) {
        mprof__site_table_free(&c.t);
        return -1;
    }
    c.r = r;
    mprof_walker *w = mprof__walker_new(r, &h, 1);
    c.w = w;
    if (!w) {
        mprof__site_table_free(&c.t);
        mprof_reader_close(r);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int rc = mprof__walker_feed(w, r, &c.oom, path, err, errlen);
    if (rc == 0) {
        mprof__walker_finish(w);
        if (c.oom || take_sites(&c) != 0 || take_processes(&c) != 0) {
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -2;
        }
    }
    if (rc == 0) {
        const mprof_tl_frameset *f = mprof__walker_main_frames(w);
        if (f && f->n) {
            out->frame_ns = malloc(f->n * sizeof *out->frame_ns);
            if (!out->frame_ns) {
                snprintf(err, errlen, "%s: out of memory", path);
                rc = -2;
            } else {
                uint64_t k = 0; /* frames that spanned lost events are not real frames */
                for (uint64_t i = 0; i < f->n; i++)
                    if (!f->lossy[i] && mprof__range_has(range, f->start[i]) &&
                        mprof__range_has(range, f->start[i] + f->dur[i] - (f->dur[i] > 0)))
                        out->frame_ns[k++] = (double)f->dur[i];
                qsort(out->frame_ns, k, sizeof *out->frame_ns, cmp_double);
                out->n_frames = k;
                out->n_lossy = f->n_lossy;
            }
        }
        out->duration_ns = mprof__walker_last_ns(w) - mprof__walker_first_ns(w);
    }
    mprof__walker_free(w);
    mprof_reader_close(r);
    mprof__site_table_free(&c.t);
    free(c.loc_process);
    if (rc < 0) {
        mprof__zstats_free(out);
        return -1;
    }
    return 0;
}

void mprof__zstats_free(mprof_zstats *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n; i++) {
        free(s->z[i].name);
        free(s->z[i].function);
        free(s->z[i].file);
        mprof__site_free(&s->z[i].site);
    }
    free(s->z);
    free(s->frame_ns);
    for (uint32_t k = 0; k < s->n_procs; k++)
        free(s->procs[k].name);
    free(s->procs);
    memset(s, 0, sizeof *s);
}
