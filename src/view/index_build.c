/*
 * index_build.c - the one streaming pass that builds the served viewer's index (view/index.h).
 *
 * The timeline walker (analysis/timeline.h) reads the capture once and calls the hooks here for
 * every zone, lock span and memory sample; the reader's events feed messages, frame images and
 * plots. Each record is appended to the spool stream of its level (track and depth), of its
 * source location (with the location's figures and duration histogram) or of its series, so
 * memory holds the levels and locations, not the zones. The system section (index_sys.h) sees
 * every event and lock span too. index_write.c then writes the file.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include "view/index_build.h"

#include "util/tool.h"
#include "util/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static blevel *level_of(builder *b, uint32_t track, uint32_t depth)
{
    if (track >= b->n_tracks) {
        uint32_t nt = track + 1;
        size_t **p = realloc(b->by_track, nt * sizeof *p);
        uint32_t *q = realloc(b->track_depths, nt * sizeof *q);
        if (p)
            b->by_track = p;
        if (q)
            b->track_depths = q;
        if (!p || !q)
            return NULL;
        for (uint32_t i = b->n_tracks; i < nt; i++) {
            b->by_track[i] = NULL;
            b->track_depths[i] = 0;
        }
        b->n_tracks = nt;
    }
    size_t **idx = b->by_track;
    if (depth >= b->track_depths[track]) {
        uint32_t nd = depth + 1 > b->track_depths[track] * 2 ? depth + 1 : b->track_depths[track] * 2;
        size_t *p = realloc(idx[track], nd * sizeof *p);
        if (!p)
            return NULL;
        for (uint32_t i = b->track_depths[track]; i < nd; i++)
            p[i] = 0;
        idx[track] = p;
        b->track_depths[track] = nd;
    }
    if (!idx[track][depth]) {
        if (MPROF_GROW(b->levels, b->cap_levels, b->n_levels + 1, 16) != 0)
            return NULL;
        blevel *l = &b->levels[b->n_levels++];
        memset(l, 0, sizeof *l);
        l->track = track;
        l->depth = depth;
        l->st.rec = sizeof(vzone);
        l->st.last = INT64_MIN;
        idx[track][depth] = b->n_levels;
    }
    return &b->levels[idx[track][depth] - 1];
}

static bloc *loc_of(builder *b, uint32_t slot)
{
    if (slot >= MAX_LOC_SLOTS)
        slot = 2; /* an id past any real capture's: counted with reader location 0 */
    if (slot >= b->n_locs) {
        uint32_t nn = slot + 1 > b->n_locs * 2 ? slot + 1 : b->n_locs * 2;
        bloc *p = realloc(b->locs, nn * sizeof *p);
        if (!p)
            return NULL;
        memset(p + b->n_locs, 0, (nn - b->n_locs) * sizeof *p);
        for (uint32_t i = b->n_locs; i < nn; i++)
            p[i].st.rec = sizeof(vinst);
        b->locs = p;
        b->n_locs = nn;
    }
    return &b->locs[slot];
}

static void add_zone(builder *b, uint32_t track, uint32_t depth, uint32_t slot, int64_t s, int64_t e,
                     int64_t self)
{
    if (b->oom)
        return;
    if (e < s)
        e = s;
    blevel *l = level_of(b, track, depth);
    bloc *lc = loc_of(b, slot);
    if (!l || !lc) {
        b->oom = 1;
        return;
    }
    if (slot >= MAX_LOC_SLOTS)
        slot = 2;
    vzone z = {s, e, self, slot, depth};
    if (!b->n_zones++ || s < b->min_s)
        b->min_s = s;
    if (e > b->max_e || b->n_zones == 1)
        b->max_e = e;
    if (s < l->st.last)
        l->st.unsorted = 1;
    l->st.last = s;
    vinst in = {s, e, track, depth};
    if (!lc->hist && !(lc->hist = calloc(HIST_BUCKETS, sizeof *lc->hist))) {
        b->oom = 1;
        return;
    }
    int64_t d = e - s;
    lc->hist[mprof__vidx_hist_bucket(d)]++;
    if (!lc->st.n || d < lc->min)
        lc->min = d;
    if (!lc->st.n || d > lc->max)
        lc->max = d;
    lc->total += d;
    lc->self += self;
    if (mprof__stream_put(&b->sp, &l->st, &z, sizeof z) != 0 || mprof__stream_put(&b->sp, &lc->st, &in, sizeof in) != 0)
        b->oom = 1;
    l->st.n++;
    lc->st.n++;
}

static void h_zone(void *user, const mprof_tl_zone *z)
{
    builder *b = user;
    int64_t self = z->end_ns - z->start_ns - z->child_ns;
    add_zone(b, z->track, z->depth, z->loc + 2, z->start_ns, z->end_ns, self < 0 ? 0 : self);
}

static void h_lock(void *user, const mprof_tl_lockspan *s)
{
    builder *b = user;
    const mprof_tl_lock *l = mprof__walker_lock(b->w, s->lock);
    if (l)
        add_zone(b, l->track, s->row, s->waiting ? 0 : 1, s->start_ns, s->end_ns, s->end_ns - s->start_ns);
    if (mprof__vsys_lock(b->sys, b->w, s) != 0)
        b->oom = 1;
}

static bplot *plot_of(builder *b, int pool, uint32_t id)
{
    for (size_t i = 0; i < b->n_plots; i++)
        if (b->plots[i].pool == pool && b->plots[i].id == id)
            return &b->plots[i];
    if (MPROF_GROW(b->plots, b->cap_plots, b->n_plots + 1, 8) != 0)
        return NULL;
    bplot *p = &b->plots[b->n_plots++];
    memset(p, 0, sizeof *p);
    p->pool = pool;
    p->id = id;
    p->format = pool ? 2 : 0;
    p->st.rec = sizeof(vpoint);
    p->st.last = INT64_MIN;
    return p;
}

static void plot_point(builder *b, bplot *p, int64_t ts, double v)
{
    if (!p) {
        b->oom = 1;
        return;
    }
    if (ts < p->st.last)
        ts = p->st.last; /* series stay sorted: a late point is drawn at the last time */
    p->st.last = ts;
    vpoint pt = {ts, v};
    if (mprof__stream_put(&b->sp, &p->st, &pt, sizeof pt) != 0)
        b->oom = 1;
    p->st.n++;
}

static void h_memory(void *user, uint32_t pool, int64_t ts, int64_t bytes)
{
    builder *b = user;
    plot_point(b, plot_of(b, 1, pool), ts, (double)bytes);
}

static void on_event(builder *b, const mprof_event *ev)
{
    switch (ev->type) {
    case MPROF_EV_MESSAGE: {
        vmsg m = {ev->ts_ns, b->text.n, ev->str ? ev->str_len : 0, (uint32_t)ev->u[0], ev->thread, 0};
        if (m.ts < b->msgs.last)
            m.ts = b->msgs.last;
        b->msgs.last = m.ts;
        if (mprof__stream_put(&b->sp, &b->msgs, &m, sizeof m) != 0 ||
            (m.text_len && mprof__stream_put(&b->sp, &b->text, ev->str, m.text_len) != 0))
            b->oom = 1;
        b->msgs.n++;
        b->text.n += m.text_len;
        break;
    }
    case MPROF_EV_FRAME_IMAGE: {
        vimage im = {ev->ts_ns, b->image_bytes.n, ev->str ? ev->str_len : 0, (uint32_t)ev->u[0], (uint32_t)ev->u[1],
                     (uint32_t)ev->u[2]};
        if (im.ts < b->images.last)
            im.ts = b->images.last;
        b->images.last = im.ts;
        if (mprof__stream_put(&b->sp, &b->images, &im, sizeof im) != 0 ||
            (im.len && mprof__stream_put(&b->sp, &b->image_bytes, ev->str, im.len) != 0))
            b->oom = 1;
        b->images.n++;
        b->image_bytes.n += im.len;
        break;
    }
    case MPROF_EV_PLOT_F64:
    case MPROF_EV_PLOT_I64:
        plot_point(b, plot_of(b, 0, (uint32_t)ev->u[0]), ev->ts_ns,
                   ev->type == MPROF_EV_PLOT_F64 ? mprof_event_f64(ev, 1) : (double)(int64_t)ev->u[1]);
        break;
    case MPROF_EV_PLOT_CONFIG: {
        bplot *p = plot_of(b, 0, (uint32_t)ev->u[0]);
        if (!p) {
            b->oom = 1;
            break;
        }
        p->format = (int)ev->u[1];
        p->style = (int)ev->u[2];
        p->color = (uint32_t)ev->u[3];
        break;
    }
    default:
        break;
    }
}
static void builder_free(builder *b)
{
    for (size_t i = 0; i < b->n_levels; i++)
        mprof__stream_free(&b->levels[i].st);
    for (uint32_t i = 0; i < b->n_locs; i++) {
        mprof__stream_free(&b->locs[i].st);
        free(b->locs[i].hist);
    }
    for (size_t i = 0; i < b->n_plots; i++)
        mprof__stream_free(&b->plots[i].st);
    mprof__stream_free(&b->msgs);
    mprof__stream_free(&b->text);
    mprof__stream_free(&b->images);
    mprof__stream_free(&b->image_bytes);
    for (uint32_t i = 0; i < b->n_tracks; i++)
        free(b->by_track[i]);
    free(b->by_track);
    free(b->track_depths);
    free(b->levels);
    free(b->locs);
    free(b->plots);
    mprof__vsys_free(b->sys);
    if (b->sp.f)
        fclose(b->sp.f);
}

/* The walker's hook for every event other than a zone's. */
static int h_other(void *user, const mprof_event *ev)
{
    builder *b = user;
    on_event(b, ev);
    if (mprof__vsys_event(b->sys, b->r, ev) != 0)
        b->oom = 1;
    return b->oom ? -1 : 0;
}

int mprof__vindex_build(const char *capture_path, const char *index_path, char *err, size_t errlen)
{
    builder b;
    memset(&b, 0, sizeof b);
    b.msgs.rec = sizeof(vmsg);
    b.msgs.last = INT64_MIN;
    b.text.rec = 1;
    b.images.rec = sizeof(vimage);
    b.images.last = INT64_MIN;
    b.image_bytes.rec = 1;
    mprof_reader *r = mprof_reader_open(capture_path, err, errlen);
    if (!r)
        return -1;
    mprof_tl_hooks hooks = {.user = &b, .zone = h_zone, .lock_span = h_lock, .memory = h_memory,
                            .other = h_other};
    b.r = r;
    b.w = mprof__walker_new(r, &hooks, 1);
    b.sp.f = tmpfile();
    b.sys = mprof__vsys_new();
    if (!b.w || !b.sp.f || !b.sys) {
        tool_seterr(err, errlen, "%s", b.w ? "cannot create a temporary file for the index" : "out of memory");
        mprof__walker_free(b.w);
        builder_free(&b);
        mprof_reader_close(r);
        return -1;
    }
    mprof_batch bt;
    int rc;
    while ((rc = mprof_reader_next_batch(r, &bt)) == 1) {
        /* Every event but the zones reaches h_other in file order; the zones' times reach the
         * system model as the batch's latest time. */
        if (mprof__walker_batch(b.w, &bt) != 0 || b.oom) {
            rc = -2;
            break;
        }
        mprof__vsys_saw(b.sys, bt.max_ts_ns);
    }
    int ret = -1;
    if (rc == -1)
        tool_seterr(err, errlen, "%s", mprof_reader_error(r));
    else if (rc == -2)
        tool_seterr(err, errlen, "%s: out of memory or temporary file full while indexing", capture_path);
    else {
        mprof__walker_finish(b.w);
        size_t tl = strlen(index_path) + 16;
        char *tmp = malloc(tl);
        int fd = -1;
        if (tmp) {
            snprintf(tmp, tl, "%s.XXXXXX", index_path);
            fd = mkstemp(tmp);
        }
        FILE *f = fd >= 0 ? fdopen(fd, "w+b") : NULL;
        if (!f) {
            tool_seterr(err, errlen, "cannot create '%s': %s", index_path, strerror(errno));
            if (fd >= 0) {
                close(fd);
                unlink(tmp);
            }
        } else {
            ret = mprof__vidx_write(&b, r, capture_path, f, err, errlen);
            if (fclose(f) != 0 && ret == 0) {
                tool_seterr(err, errlen, "cannot write '%s': %s", index_path, strerror(errno));
                ret = -1;
            }
            if (ret == 0 && rename(tmp, index_path) != 0) {
                tool_seterr(err, errlen, "cannot rename the index to '%s': %s", index_path, strerror(errno));
                ret = -1;
            }
            if (ret != 0)
                unlink(tmp);
        }
        free(tmp);
    }
    mprof__walker_free(b.w);
    builder_free(&b);
    mprof_reader_close(r);
    return ret;
}
