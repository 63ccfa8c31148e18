/*
 * index_write.c - the served viewer's index file (index_file.h) written from what the builder
 * gathered (index_build.h): every stream copied contiguous and sorted, the tiers of detail and
 * plot pyramids (index_detail.c), the tables that point into them, the system section, and the
 * metadata document that /api/meta answers with as it is. The header goes last, at offset 0,
 * once every offset in it is known.
 */
#define _POSIX_C_SOURCE 200809L /* pread, pwrite */
#include "view/index_build.h"

#include "mprof/mprof.h"
#include "util/json_out.h"
#include "util/tool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static const char *kind_name(int k)
{
    return k == MPROF_TRACK_THREAD ? "thread" : k == MPROF_TRACK_FIBER ? "fiber"
         : k == MPROF_TRACK_GPU ? "gpu" : "lock";
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
    const mprof_tl_frameset *mf = mprof__walker_main_frames(b->w);
    mprof_json_obj_begin(&j, "frames");
    const char *fname = mf && mf->name ? mprof_reader_string(r, mf->name) : NULL;
    mprof_json_str(&j, "name", fname ? fname : "Frame");
    mprof_json_u64(&j, "count", mf ? mf->n : 0);
    mprof_json_obj_end(&j);

    /* Tracks in display order: by kind, threads by registration. */
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
            const mprof_tl_track *x = mprof__walker_track(b->w, order[k - 1]);
            const mprof_tl_track *y = mprof__walker_track(b->w, order[k]);
            if (!(x->kind > y->kind || (x->kind == y->kind && x->kind == MPROF_TRACK_THREAD && x->ref > y->ref)))
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
                n += b->levels[l].st.n;
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
    mprof_json_arr_end(&j);
    free(order);

    /* Source locations by slot; stats for those with zones. */
    uint32_t n_rl = mprof_reader_srcloc_count(r);
    uint32_t n_slots = n_rl + 2 > b->n_locs ? n_rl + 2 : b->n_locs;
    mprof_json_arr_begin(&j, "srclocs");
    for (uint32_t s = 0; s < n_slots; s++) {
        mprof_json_arr_begin(&j, NULL);
        if (s < 2) {
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
        }
        mprof_json_arr_end(&j);
    }
    mprof_json_arr_end(&j);
    mprof_json_arr_begin(&j, "loc_stats"); /* [slot, count, total, self, min, max] */
    for (uint32_t s = 0; s < b->n_locs; s++) {
        const bloc *l = &b->locs[s];
        if (!l->st.n)
            continue;
        mprof_json_arr_begin(&j, NULL);
        mprof_json_u64(&j, NULL, s);
        mprof_json_u64(&j, NULL, l->st.n);
        mprof_json_i64(&j, NULL, l->total);
        mprof_json_i64(&j, NULL, l->self);
        mprof_json_i64(&j, NULL, l->min);
        mprof_json_i64(&j, NULL, l->max);
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
        mprof_json_u64(&j, "points", p->st.n);
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

static int cmp_vzone(const void *a, const void *b)
{
    const vzone *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s ? 1 : x->e > y->e ? -1 : x->e < y->e;
}

/* Sorts a level that arrived out of order (GPU zones may): in memory, then rewritten in place. */
static int sort_level(FILE *f, uint64_t off, uint64_t n)
{
    if (n > SIZE_MAX / sizeof(vzone))
        return -1;
    vzone *z = malloc((size_t)n * sizeof *z);
    if (!z)
        return -1;
    int fd = fileno(f);
    int ok = fflush(f) == 0 && pread(fd, z, (size_t)n * sizeof *z, (off_t)off) == (ssize_t)(n * sizeof *z);
    if (ok) {
        qsort(z, (size_t)n, sizeof *z, cmp_vzone);
        ok = pwrite(fd, z, (size_t)n * sizeof *z, (off_t)off) == (ssize_t)(n * sizeof *z);
    }
    free(z);
    return ok ? 0 : -1;
}

int mprof__vidx_write(builder *b, mprof_reader *r, const char *cap_path, FILE *f, char *err, size_t errlen)
{
    vhead h;
    vtier *tiers = NULL;
    uint32_t *lt0 = NULL, *ltn = NULL; /* per level: its first tier and tier count */
    memset(&h, 0, sizeof h);
    memcpy(h.magic, VIDX_MAGIC, 8);
    h.version = VIDX_VERSION;
    h.head_bytes = sizeof h;
    if (mprof__vidx_stamp(cap_path, &h.cap_size, &h.cap_mtime_ns) != 0) {
        tool_seterr(err, errlen, "%s: %s", cap_path, strerror(errno));
        return -1;
    }
    h.total_zones = mprof__walker_zone_count(b->w);
    h.end_ns = mprof__walker_last_ns(b->w);
    uint64_t pos = 0;
    if (mprof__file_put(f, &h, sizeof h, &pos) != 0)
        goto io;
    /* Data of every stream, then the tables that point into it. */
    for (size_t i = 0; i < b->n_levels; i++) {
        if (mprof__stream_copy(&b->sp, &b->levels[i].st, f, &pos) != 0)
            goto io;
        if (b->levels[i].st.unsorted && sort_level(f, b->levels[i].st.out_off, b->levels[i].st.n) != 0)
            goto io;
        if (fseek(f, 0, SEEK_END) != 0)
            goto io;
    }
    /* Tiers of detail of the levels, then everything else. */
    tiers = calloc(b->n_levels * LOD_TIERS + 1, sizeof *tiers);
    lt0 = calloc(b->n_levels + 1, sizeof *lt0);
    ltn = calloc(b->n_levels + 1, sizeof *ltn);
    if (!tiers || !lt0 || !ltn)
        goto oom;
    uint64_t n_tiers = 0;
    for (size_t i = 0; i < b->n_levels; i++) {
        lt0[i] = (uint32_t)n_tiers;
        if (mprof__vidx_level_tiers(&b->sp, f, b->levels[i].st.out_off, b->levels[i].st.n, &pos, tiers + n_tiers, &ltn[i]) != 0)
            goto io;
        n_tiers += ltn[i];
    }
    if (mprof__file_align8(f, &pos) != 0)
        goto io;
    h.n_tiers = n_tiers;
    h.tiers_off = pos;
    if (mprof__file_put(f, tiers, n_tiers * sizeof *tiers, &pos) != 0)
        goto io;
    for (uint32_t i = 0; i < b->n_locs; i++)
        if (mprof__stream_copy(&b->sp, &b->locs[i].st, f, &pos) != 0)
            goto io;
    vplot *vp = calloc(b->n_plots + 1, sizeof *vp);
    if (!vp)
        goto oom;
    for (size_t i = 0; i < b->n_plots; i++) {
        if (mprof__stream_copy(&b->sp, &b->plots[i].st, f, &pos) != 0) {
            free(vp);
            goto io;
        }
        vp[i].off = b->plots[i].st.out_off;
        vp[i].n = b->plots[i].st.n;
        if (mprof__vidx_write_pyramid(f, &vp[i], &pos) != 0) {
            free(vp);
            goto io;
        }
    }
    if (mprof__stream_copy(&b->sp, &b->msgs, f, &pos) != 0 || mprof__stream_copy(&b->sp, &b->text, f, &pos) != 0) {
        free(vp);
        goto io;
    }
    if (mprof__stream_copy(&b->sp, &b->images, f, &pos) != 0 || mprof__stream_copy(&b->sp, &b->image_bytes, f, &pos) != 0) {
        free(vp);
        goto io;
    }
    h.n_images = b->images.n;
    h.images_off = b->images.out_off;
    h.image_bytes_off = b->image_bytes.out_off;
    h.image_bytes_len = b->image_bytes.n;
    h.n_msgs = b->msgs.n;
    h.msgs_off = b->msgs.out_off;
    h.text_off = b->text.out_off;
    h.text_len = b->text.n;
    const mprof_tl_frameset *mf = mprof__walker_main_frames(b->w);
    if (mprof__file_align8(f, &pos) != 0) {
        free(vp);
        goto io;
    }
    h.frames_off = pos;
    h.n_frames = mf ? mf->n : 0;
    for (uint64_t i = 0; i < h.n_frames; i++) {
        vframe fr = {mf->start[i], mf->dur[i]};
        if (mprof__file_put(f, &fr, sizeof fr, &pos) != 0) {
            free(vp);
            goto io;
        }
    }
    h.n_plots = b->n_plots;
    if (mprof__file_align8(f, &pos) != 0) {
        free(vp);
        goto io;
    }
    h.plots_off = pos;
    if (mprof__file_put(f, vp, b->n_plots * sizeof *vp, &pos) != 0) {
        free(vp);
        goto io;
    }
    free(vp);
    h.n_levels = b->n_levels;
    if (mprof__file_align8(f, &pos) != 0)
        goto io;
    h.levels_off = pos;
    for (size_t i = 0; i < b->n_levels; i++) {
        vlevel l = {b->levels[i].track, b->levels[i].depth, b->levels[i].st.out_off, b->levels[i].st.n, lt0[i], ltn[i]};
        if (mprof__file_put(f, &l, sizeof l, &pos) != 0)
            goto io;
    }
    /* Histograms, then the location table. */
    if (mprof__file_align8(f, &pos) != 0)
        goto io;
    uint64_t hist_at = pos;
    for (uint32_t i = 0; i < b->n_locs; i++)
        if (b->locs[i].hist && mprof__file_put(f, b->locs[i].hist, HIST_BUCKETS * sizeof(uint64_t), &pos) != 0)
            goto io;
    h.n_locs = b->n_locs;
    if (mprof__file_align8(f, &pos) != 0)
        goto io;
    h.locs_off = pos;
    for (uint32_t i = 0; i < b->n_locs; i++) {
        const bloc *l = &b->locs[i];
        vloc v = {l->st.out_off, l->st.n, l->hist ? hist_at : 0, l->total, l->self, l->min, l->max};
        if (l->hist)
            hist_at += HIST_BUCKETS * sizeof(uint64_t);
        if (mprof__file_put(f, &v, sizeof v, &pos) != 0)
            goto io;
    }
    if (mprof__vsys_write(b->sys, r, b->w, f, &pos, &h.sys_off, &h.sys_len) != 0)
        goto io;
    h.meta_off = pos;
    long before = ftell(f);
    write_meta(b, r, cap_path, f);
    if (b->oom)
        goto oom;
    long after = ftell(f);
    if (before < 0 || after < before)
        goto io;
    h.meta_len = (uint64_t)(after - before);
    pos += h.meta_len;
    h.file_bytes = pos;
    if (fflush(f) != 0 || pwrite(fileno(f), &h, sizeof h, 0) != (ssize_t)sizeof h)
        goto io;
    free(tiers);
    free(lt0);
    free(ltn);
    return 0;
io:
    tool_seterr(err, errlen, "cannot write the index: %s", errno ? strerror(errno) : "I/O error");
    free(tiers);
    free(lt0);
    free(ltn);
    return -1;
oom:
    tool_seterr(err, errlen, "out of memory while writing the index");
    free(tiers);
    free(lt0);
    free(ltn);
    return -1;
}
