/*
 * zstats.c - zone statistics per source location, the figures that the CSV export and
 * `mprof diff` share.
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
    const mprof_export_range *range;
    int oom;
} collect;

static void zs_zone(void *user, const mprof_tl_zone *z)
{
    collect *c = user;
    mprof_zstats *s = c->s;
    if (!mprof__range_overlaps(c->range, z->start_ns, z->end_ns))
        return;
    if (z->loc >= s->n) {
        uint32_t nn = z->loc + 64;
        mprof_zstat *p = realloc(s->z, (size_t)nn * sizeof *p);
        if (!p) {
            c->oom = 1;
            return;
        }
        memset(p + s->n, 0, (size_t)(nn - s->n) * sizeof *p);
        s->z = p;
        s->n = nn;
    }
    mprof_zstat *st = &s->z[z->loc];
    if (!st->name) {
        const mprof_srcloc_def *d = mprof_reader_srcloc(c->r, z->loc);
        st->name = tool_strdup(d && d->name ? d->name : "?");
        st->function = tool_strdup(d && d->function ? d->function : "");
        st->file = tool_strdup(d && d->file ? d->file : "");
        st->line = d ? d->line : 0;
        st->color = d ? d->color : 0;
        if (!st->name || !st->function || !st->file) {
            c->oom = 1;
            return;
        }
    }
    int64_t dur = z->end_ns - z->start_ns;
    int64_t self = dur - z->child_ns;
    st->count++;
    if (!z->nested) { /* recursion: the outer instance already holds this time */
        st->total_ns += dur;
        if (s->span_first_ns >= 0) {
            int64_t a = z->start_ns > s->span_first_ns ? z->start_ns : s->span_first_ns;
            int64_t b = z->end_ns < s->span_last_ns ? z->end_ns : s->span_last_ns;
            if (b > a)
                st->in_frames_ns += b - a;
        }
    }
    st->self_ns += self > 0 ? self : 0;
    if (mprof_hist_add(&st->hist, (uint64_t)(dur > 0 ? dur : 0)) != 0)
        c->oom = 1;
    s->zones++;
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
    collect c = {.s = out, .range = range};
    /* The main frames' span first (per-frame figures count only time inside frames). */
    mprof_export_range span = {.first_frame = 0, .end_frame = INT64_MAX, .active = 1};
    char serr[256];
    out->span_first_ns = out->span_last_ns = -1;
    if (mprof__export_range_resolve(path, &span, serr, sizeof serr) == 0) {
        out->span_first_ns = span.t0_ns;
        out->span_last_ns = span.t1_ns;
    }
    mprof_tl_hooks h = {.user = &c, .zone = zs_zone};
    mprof_reader *r = mprof_reader_open(path, err, errlen);
    if (!r)
        return -1;
    c.r = r;
    mprof_walker *w = mprof__walker_new(r, &h, 1);
    if (!w) {
        mprof_reader_close(r);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int rc = mprof__walker_feed(w, r, &c.oom, path, err, errlen);
    if (rc == 0) {
        mprof__walker_finish(w);
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
        mprof_hist_free(&s->z[i].hist);
    }
    free(s->z);
    free(s->frame_ns);
    memset(s, 0, sizeof *s);
}
