/*
 * index_write.c - the end of the served viewer's index file (index_file.h), after the pass wrote
 * its data blocks: the directory (every array's block entries and the tables of levels, tiers,
 * source locations, plots and frames), the metadata document that /api/meta answers with as it
 * is, the system section, and last the header at offset 0, once every reference in it is known
 * and its own checksum can be taken.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream, pwrite */
#include "view/index_build.h"
#include "view/processes.h"

#include "mprof/mprof.h"
#include "util/json_out.h"
#include "util/tool.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

static const char *kind_name(int k)
{
    return k == MPROF_TRACK_THREAD ? "thread" : k == MPROF_TRACK_FIBER ? "fiber"
         : k == MPROF_TRACK_GPU ? "gpu" : k == (int)VTRACK_ASYNC ? "async" : "lock";
}

/* The main frame set first, then the others in the walker's order. */
static uint32_t set_order(const builder *b, uint32_t k)
{
    uint32_t n = mprof__walker_frameset_count(b->w);
    const mprof_tl_frameset *mf = mprof__walker_main_frames(b->w);
    uint32_t main_i = 0;
    for (uint32_t i = 0; i < n; i++)
        if (mprof__walker_frameset(b->w, i) == mf)
            main_i = i;
    if (!mf)
        return k;
    return k == 0 ? main_i : k <= main_i ? k - 1 : k;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The figures of a frame set's complete frames (site_stats.h's one summary), in ns. */
static void json_frame_figures(mprof_json *j, const mprof_tl_frameset *f, int *oom)
{
    double *d = malloc(((size_t)f->n + 1) * sizeof *d);
    uint64_t k = 0;
    if (!d) {
        *oom = 1;
        return;
    }
    for (uint64_t i = 0; i < f->n; i++)
        if (!f->lossy || !f->lossy[i])
            d[k++] = (double)f->dur[i];
    qsort(d, (size_t)k, sizeof *d, cmp_double);
    mprof_frame_summary s = mprof__frame_summary(d, k);
    free(d);
    mprof_json_u64(j, "complete", s.count);
    mprof_json_u64(j, "incomplete", f->n_lossy);
    mprof_json_f64(j, "mean_ns", s.mean);
    mprof_json_f64(j, "p50_ns", s.p50);
    mprof_json_f64(j, "p95_ns", s.p95);
    mprof_json_f64(j, "p99_ns", s.p99);
    mprof_json_f64(j, "max_ns", s.max);
}

static void write_meta(builder *b, mprof_reader *r, const char *path, FILE *out)
{
    mprof_json j;
    mprof_json_init(&j, out, 0);
    mprof_json_obj_begin(&j, NULL);
    mprof_json_str(&j, "schema", "mprof-serve");
    mprof_json_u64(&j, "version", 1);
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    mprof_json_obj_begin(&j, "capture");
    const char *slash = strrchr(path, '/');
    mprof_json_str(&j, "file", slash ? slash + 1 : path);
    const char *app = mprof_reader_info(r, "app");
    mprof_json_str(&j, "app", app ? app : mprof_reader_info(r, "process"));
    mprof_json_i64(&j, "duration_ns", mprof__walker_last_ns(b->w));
    mprof_json_u64(&j, "events", st.events);
    mprof_json_bool(&j, "complete", st.complete);
    mprof_json_u64(&j, "zones", mprof__walker_zone_count(b->w));
    mprof_json_u64(&j, "threads", mprof_reader_thread_count(r));
    mprof_json_u64(&j, "lost_events", mprof__walker_lost_events(b->w));
    mprof_json_str(&j, "timer", mprof_reader_info(r, "timer"));
    mprof_json_obj_end(&j);
    mprof_json_i64(&j, "budget_ns", 16666667);
    /* The span that holds every zone: the page's whole view. */
    int64_t last = mprof__walker_last_ns(b->w);
    mprof_json_i64(&j, "start_ns", b->n_zones && b->min_s < 0 ? b->min_s : 0);
    mprof_json_i64(&j, "end_ns", b->n_zones && b->max_e > last ? b->max_e : last);
    /* The first zone's start and the last zone's end (start_ns, end_ns also hold the capture's
     * first and last time stamps). */
    mprof_json_i64(&j, "zones_start_ns", b->n_zones ? b->min_s : 0);
    mprof_json_i64(&j, "zones_end_ns", b->n_zones ? b->max_e : 0);
    /* The main frames' span, which frame shares are over (site_stats.h). */
    mprof_json_i64(&j, "span_first_ns", b->span.first_ns);
    mprof_json_i64(&j, "span_last_ns", b->span.last_ns);
    const mprof_tl_frameset *mf = mprof__walker_main_frames(b->w);
    mprof_json_obj_begin(&j, "frames");
    const char *fname = mf && mf->name ? mprof_reader_string(r, mf->name) : NULL;
    mprof_json_str(&j, "name", fname ? fname : "Frame");
    mprof_json_u64(&j, "count", mf ? mf->n : 0);
    if (mf)
        json_frame_figures(&j, mf, &b->oom);
    mprof_json_obj_end(&j);
    /* Every frame set, the main one first (the `set` of /api/frames and /api/stats). */
    mprof_json_arr_begin(&j, "frame_sets");
    for (uint32_t k = 0; k < mprof__walker_frameset_count(b->w); k++) {
        const mprof_tl_frameset *f = mprof__walker_frameset(b->w, set_order(b, k));
        const char *nm = f->name ? mprof_reader_string(r, f->name) : NULL;
        mprof_json_obj_begin(&j, NULL);
        mprof_json_u64(&j, "set", k);
        mprof_json_str(&j, "name", nm ? nm : f == mf ? (fname ? fname : "Frame") : "?");
        mprof_json_bool(&j, "main", f == mf);
        mprof_json_u64(&j, "count", f->n);
        json_frame_figures(&j, f, &b->oom);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);

    /* Tracks in display order: by kind, threads by process and registration (processes.h). */
    int several = mprof__vproc_several(r);
    uint32_t nt = mprof__walker_track_count(b->w);
    uint32_t *order = malloc(((size_t)nt + 1) * sizeof *order);
    if (!order) {
        b->oom = 1;
        return;
    }
    for (uint32_t i = 0; i < nt; i++)
        order[i] = i;
    for (uint32_t i = 1; i < nt; i++)
        for (uint32_t k = i; k > 0; k--) {
            if (!mprof__vproc_track_after(r, b->w, order[k - 1], order[k]))
                break;
            uint32_t t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    mprof_json_arr_begin(&j, "tracks");
    for (uint32_t oi = 0; oi < nt; oi++) {
        uint32_t i = order[oi];
        const mprof_tl_track *t = mprof__walker_track(b->w, i);
        uint32_t depths = 0;
        uint64_t n = 0;
        for (size_t l = 0; l < b->n_levels; l++)
            if (b->levels[l].track == i) {
                n += b->levels[l].zones.n;
                if (b->levels[l].depth + 1 > depths)
                    depths = b->levels[l].depth + 1;
            }
        /* Thread 0 is the process itself (calibration, system-tracing records): it has no zones
         * of its own and is no track to draw. */
        if (t->kind == MPROF_TRACK_THREAD && t->ref == 0 && n == 0)
            continue;
        char name[256];
        mprof_json_obj_begin(&j, NULL);
        mprof_json_u64(&j, "id", i);
        mprof_json_str(&j, "kind", kind_name(t->kind));
        mprof_json_u64(&j, "ref", t->ref); /* threads: the reader's thread index (messages name it) */
        mprof_json_str(&j, "name", mprof__walker_track_name(b->w, i, name, sizeof name));
        mprof_json_u64(&j, "depths", depths);
        mprof_json_u64(&j, "zones", n);
        if (t->kind == MPROF_TRACK_THREAD && several)
            mprof_json_u64(&j, "process", mprof__vproc_of_track(r, b->w, i));
        if (t->kind == MPROF_TRACK_LOCK) {
            mprof_json_arr_begin(&j, "rows");
            for (uint32_t li = 0; li < mprof__walker_lock_count(b->w); li++) {
                const mprof_tl_lock *lk = mprof__walker_lock(b->w, li);
                if (lk->track != i)
                    continue;
                for (uint32_t row = 0; row < lk->n_rows; row++)
                    mprof_json_str(&j, NULL, mprof__walker_lock_row_name(b->w, li, row, name, sizeof name));
            }
            mprof_json_arr_end(&j);
        }
        mprof_json_obj_end(&j);
    }
    /* Async tracks below the others, a lane per level (index_async.c). */
    mprof__vidx_async_tracks(b, &j);
    mprof_json_arr_end(&j);
    free(order);
    mprof__vidx_async_threads(b, &j);
    if (several)
        mprof__vproc_json(r, b->w, &j);

    /* Source locations by slot; figures for those with zones. */
    uint32_t n_rl = mprof_reader_srcloc_count(r);
    uint32_t n_slots = n_rl + 2 > b->n_locs ? n_rl + 2 : b->n_locs;
    if (mprof__vidx_async_slots_end(b) > n_slots)
        n_slots = mprof__vidx_async_slots_end(b);
    mprof_json_arr_begin(&j, "srclocs");
    for (uint32_t s = 0; s < n_slots; s++) {
        const char *atrack = NULL, *aname = s >= n_rl + 2 ? mprof__vidx_async_slot(b, s, &atrack) : NULL;
        mprof_json_arr_begin(&j, NULL);
        if (aname) {
            /* A span name of an async track: its track where a zone has its function. */
            char where[300];
            snprintf(where, sizeof where, "async %s", atrack ? atrack : "");
            mprof_json_str(&j, NULL, aname);
            mprof_json_str(&j, NULL, where);
            mprof_json_str(&j, NULL, "");
            mprof_json_u64(&j, NULL, 0);
            mprof_json_u64(&j, NULL, 0);
        } else if (s < 2) {
            mprof_json_str(&j, NULL, s ? "holding" : "waiting");
            mprof_json_str(&j, NULL, "");
            mprof_json_str(&j, NULL, "");
            mprof_json_u64(&j, NULL, 0);
            mprof_json_u64(&j, NULL, s ? 0x3d9a4f : 0xc0392b);
        } else {
            const mprof_srcloc_def *d = mprof_reader_srcloc(r, s - 2);
            mprof_json_str(&j, NULL, d && d->name ? d->name : "?");
            mprof_json_str(&j, NULL, d && d->function ? d->function : "");
            mprof_json_str(&j, NULL, d && d->file ? d->file : "");
            mprof_json_u64(&j, NULL, d ? d->line : 0);
            mprof_json_u64(&j, NULL, d ? d->color : 0);
            /* With several processes: the process its zones ran in, where that is one. */
            if (s < b->n_locs && b->locs[s].process && b->locs[s].process != MPROF_VPROC_NONE)
                mprof_json_u64(&j, NULL, b->locs[s].process - 1);
        }
        mprof_json_arr_end(&j);
    }
    mprof_json_arr_end(&j);
    /* [slot, count, total, self, min, max, kind]: site_stats.h's figures of the whole capture. */
    mprof_json_arr_begin(&j, "loc_stats");
    for (uint32_t s = 0; s < b->n_locs; s++) {
        const bloc *l = &b->locs[s];
        if (!l->used)
            continue;
        mprof_json_arr_begin(&j, NULL);
        mprof_json_u64(&j, NULL, s);
        mprof_json_u64(&j, NULL, l->st.count);
        mprof_json_i64(&j, NULL, l->st.total_ns);
        mprof_json_i64(&j, NULL, l->st.self_ns);
        mprof_json_u64(&j, NULL, mprof__site_min_ns(&l->st));
        mprof_json_u64(&j, NULL, mprof__site_max_ns(&l->st));
        mprof_json_str(&j, NULL, kind_name((int)l->kind));
        mprof_json_arr_end(&j);
    }
    mprof_json_arr_end(&j);
    mprof_json_arr_begin(&j, "plots");
    for (size_t i = 0; i < b->n_plots; i++) {
        const bplot *p = &b->plots[i];
        char nm[300];
        if (p->pool) {
            const mprof_tl_pool *pl = mprof__walker_pool(b->w, p->id);
            const char *pn = pl && pl->name ? mprof_reader_string(r, pl->name) : NULL;
            snprintf(nm, sizeof nm, "Memory: %s", pn ? pn : "heap");
        } else {
            const char *pn = mprof_reader_string(r, p->id);
            snprintf(nm, sizeof nm, "%s", pn ? pn : "plot");
        }
        mprof_json_obj_begin(&j, NULL);
        mprof_json_u64(&j, "id", i);
        mprof_json_str(&j, "name", nm);
        mprof_json_u64(&j, "format", (uint64_t)p->format);
        mprof_json_u64(&j, "style", (uint64_t)p->style);
        mprof_json_u64(&j, "color", p->color);
        mprof_json_u64(&j, "points", p->points.n);
        mprof_json_bool(&j, "memory", p->pool);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);
    mprof_json_u64(&j, "messages", b->msgs.n);
    mprof_json_u64(&j, "frame_images", b->images.n);
    mprof_json_arr_begin(&j, "level_colors");
    for (int lv = 0; lv < 7; lv++)
        mprof_json_u64(&j, NULL, mprof_log_level_color((mprof_log_level)lv));
    mprof_json_arr_end(&j);
    mprof_json_obj_end(&j);
}

/* The directory's tables, gathered in one buffer with vdir at its start. */
typedef struct dirb {
    vbuf buf;
    vbuf blocks, arrays, levels, tiers, locs, loclevels, hbuckets, plots, sets, frames;
    int oom;
} dirb;

/* An array: its blocks join the directory's. Returns its index. */
static uint32_t add_array(dirb *d, const vab *a)
{
    assert(a->n_res == a->n_blk); /* finished: every block's place known */
    varr v = {a->codec, a->rec, a->n, d->blocks.n / sizeof(vblk), a->n_blk};
    d->oom |= mprof__vbuf_put(&d->blocks, a->blk, (size_t)a->n_blk * sizeof(vblk));
    uint32_t k = (uint32_t)(d->arrays.n / sizeof(varr));
    d->oom |= mprof__vbuf_put(&d->arrays, &v, sizeof v);
    return k;
}

static int put_table(dirb *d, const vbuf *t, uint64_t *count, uint64_t *off, size_t rec)
{
    static const unsigned char zero[8];
    if (mprof__vbuf_put(&d->buf, zero, (8 - d->buf.n % 8) % 8) != 0)
        return -1;
    *off = d->buf.n;
    *count = t->n / rec;
    return mprof__vbuf_put(&d->buf, t->p, t->n);
}

static void dirb_free(dirb *d)
{
    vbuf *all[] = {&d->buf, &d->blocks, &d->arrays, &d->levels, &d->tiers, &d->locs, &d->loclevels,
                   &d->hbuckets, &d->plots, &d->sets, &d->frames};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]->p);
}

/* The directory; *out_sys0 gets the index of the system section's first array. */
static int build_dir(builder *b, dirb *d, vdir *h, uint32_t *out_sys0)
{
    memset(h, 0, sizeof *h);
    /* Levels and their tiers. */
    for (size_t i = 0; i < b->n_levels; i++) {
        const blevel *l = &b->levels[i];
        vlevel v = {l->track, l->depth, l->kind, add_array(d, &l->zones), (uint32_t)(d->tiers.n / sizeof(vtier)), l->n_tiers,
                    l->has_thr ? add_array(d, &l->thr) : VNONE, 0};
        for (uint32_t k = 0; k < l->n_tiers; k++) {
            vtier t = b->tiers[l->tier0 + k];
            t.arr = add_array(d, &b->tier_arrs[l->tier0 + k]);
            d->oom |= mprof__vbuf_put(&d->tiers, &t, sizeof t);
        }
        d->oom |= mprof__vbuf_put(&d->levels, &v, sizeof v);
    }
    /* Source locations. */
    for (uint32_t s = 0; s < b->n_locs; s++) {
        const bloc *l = &b->locs[s];
        if (!l->used)
            continue;
        vloc v;
        memset(&v, 0, sizeof v);
        v.slot = s;
        v.kind = l->kind;
        v.count = l->st.count;
        v.total = l->st.total_ns;
        v.self = l->st.self_ns;
        v.in_frames = l->st.in_frames_ns;
        v.min = mprof__site_min_ns(&l->st);
        v.max = mprof__site_max_ns(&l->st);
        v.sum = l->st.hist.sum;
        v.sumsq = l->st.hist.sumsq;
        v.h0 = d->hbuckets.n / sizeof(vhb);
        if (l->st.hist.counts)
            for (uint32_t k = 0; k < MPROF_HIST_BUCKETS; k++)
                if (l->st.hist.counts[k]) {
                    vhb hb = {k, l->st.hist.counts[k]};
                    d->oom |= mprof__vbuf_put(&d->hbuckets, &hb, sizeof hb);
                    v.n_h++;
                }
        v.lv0 = (uint32_t)(d->loclevels.n / sizeof(uint32_t));
        v.n_lv = l->n_lv;
        d->oom |= mprof__vbuf_put(&d->loclevels, l->lv, (size_t)l->n_lv * sizeof(uint32_t));
        d->oom |= mprof__vbuf_put(&d->locs, &v, sizeof v);
    }
    /* Plots. */
    for (size_t i = 0; i < b->n_plots; i++) {
        vplot v;
        memset(&v, 0, sizeof v);
        v.points = add_array(d, &b->plots[i].points);
        v.n_pyr = b->plots[i].n_pyr;
        for (uint32_t k = 0; k < v.n_pyr; k++)
            v.pyr[k] = add_array(d, &b->plots[i].pyr[k]);
        d->oom |= mprof__vbuf_put(&d->plots, &v, sizeof v);
    }
    h->msgs = add_array(d, &b->msgs);
    h->text = add_array(d, &b->text);
    h->images = add_array(d, &b->images);
    h->image_bytes = add_array(d, &b->image_bytes);
    /* Frame sets, the main one first. */
    const mprof_tl_frameset *mf = mprof__walker_main_frames(b->w);
    for (uint32_t k = 0; k < mprof__walker_frameset_count(b->w); k++) {
        const mprof_tl_frameset *f = mprof__walker_frameset(b->w, set_order(b, k));
        vset v = {f == mf, 0, d->frames.n / sizeof(vframe), f->n, f->n_lossy};
        for (uint64_t i = 0; i < f->n && f->start; i++) {
            vframe fr = {f->start[i], f->dur[i], k, f->lossy && f->lossy[i] ? 1u : 0u};
            d->oom |= mprof__vbuf_put(&d->frames, &fr, sizeof fr);
        }
        d->oom |= mprof__vbuf_put(&d->sets, &v, sizeof v);
    }
    /* The system section's big tables (index_sys.h), in its order. */
    *out_sys0 = (uint32_t)(d->arrays.n / sizeof(varr));
    for (uint32_t k = 0; k < mprof__vsys_array_count(b->sys); k++)
        add_array(d, mprof__vsys_array(b->sys, k));
    h->total_zones = mprof__walker_zone_count(b->w);
    h->end_ns = mprof__walker_last_ns(b->w);
    h->min_s = b->n_zones ? b->min_s : 0;
    h->max_e = b->n_zones ? b->max_e : 0;
    h->span_first = b->span.first_ns;
    h->span_last = b->span.last_ns;
    if (d->oom || mprof__vbuf_put(&d->buf, h, sizeof *h) != 0 ||
        put_table(d, &d->blocks, &h->n_blocks, &h->blocks_off, sizeof(vblk)) != 0 ||
        put_table(d, &d->arrays, &h->n_arrays, &h->arrays_off, sizeof(varr)) != 0 ||
        put_table(d, &d->levels, &h->n_levels, &h->levels_off, sizeof(vlevel)) != 0 ||
        put_table(d, &d->tiers, &h->n_tiers, &h->tiers_off, sizeof(vtier)) != 0 ||
        put_table(d, &d->locs, &h->n_locs, &h->locs_off, sizeof(vloc)) != 0 ||
        put_table(d, &d->loclevels, &h->n_loclevels, &h->loclevels_off, sizeof(uint32_t)) != 0 ||
        put_table(d, &d->hbuckets, &h->n_hbuckets, &h->hbuckets_off, sizeof(vhb)) != 0 ||
        put_table(d, &d->plots, &h->n_plots, &h->plots_off, sizeof(vplot)) != 0 ||
        put_table(d, &d->sets, &h->n_sets, &h->sets_off, sizeof(vset)) != 0 ||
        put_table(d, &d->frames, &h->n_frames, &h->frames_off, sizeof(vframe)) != 0)
        return -1;
    memcpy(d->buf.p, h, sizeof *h);
    return 0;
}

int mprof__vidx_write(builder *b, mprof_reader *r, const char *cap_path, char *err, size_t errlen)
{
    vhead h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, VIDX_MAGIC, 8);
    h.version = VIDX_VERSION;
    h.head_bytes = sizeof h;
    if (mprof__vidx_stamp(cap_path, &h.cap_size, &h.cap_mtime_ns, &h.cap_print) != 0) {
        tool_seterr(err, errlen, "%s: %s", cap_path, strerror(errno));
        return -1;
    }
    dirb d;
    memset(&d, 0, sizeof d);
    vdir dh;
    char *meta = NULL;
    unsigned char *sys = NULL;
    size_t meta_len = 0, sys_len = 0;
    uint32_t sys0 = 0;
    int rc = -1;
    /* The system section's last blocks go before the directory, which lists them. */
    if (mprof__vsys_finish(b->sys, r, b->w) != 0) {
        if (b->out.failed)
            goto io;
        goto oom;
    }
    if (build_dir(b, &d, &dh, &sys0) != 0)
        goto oom;
    if (mprof__vout_block(&b->out, d.buf.p, d.buf.n, &h.dir) != 0)
        goto io;
    FILE *m = open_memstream(&meta, &meta_len);
    if (!m)
        goto oom;
    write_meta(b, r, cap_path, m);
    if (fclose(m) != 0 || b->oom)
        goto oom;
    if (mprof__vout_block(&b->out, meta, meta_len, &h.meta) != 0)
        goto io;
    if (mprof__vsys_section(b->sys, sys0, &sys, &sys_len) != 0)
        goto oom;
    if (mprof__vout_block(&b->out, sys, sys_len, &h.sys) != 0)
        goto io;
    h.file_bytes = b->out.pos;
    h.head_csum = XXH3_64bits(&h, sizeof h);
    if (pwrite(b->out.fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        goto io;
    rc = 0;
    goto done;
io:
    tool_seterr(err, errlen, "cannot write the index: %s", errno ? strerror(errno) : "I/O error");
    goto done;
oom:
    tool_seterr(err, errlen, "out of memory while writing the index");
done:
    dirb_free(&d);
    free(meta);
    free(sys);
    return rc;
}
