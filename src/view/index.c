/*
 * view_index.c - the index behind `mprof view --serve` (see view_index.h for the idea).
 *
 * Contents:
 *   1. File layout       the header and tables of the index file
 *   2. Spool streams     records appended per level/location/series during the pass, in 4 KiB
 *                        chunks of one temporary file, copied contiguous at the end
 *   3. Build             the walker's hooks, the metadata document, the final file
 *   4. Open              validation against the capture, mmap
 *   5. Answers           zones with merging, plots with a min/max pyramid, messages, frames,
 *                        statistics, duration histograms, instances
 *
 * Source locations are renumbered: slot 0 is the lock track's "waiting", slot 1 its "holding",
 * and reader location k is slot k + 2. The metadata's "srclocs" array uses these slots.
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index.h"

#include "util/json_out.h"
#include "analysis/timeline.h"
#include "view/index_sys.h"
#include "format/format.h"
#include "mprof/mprof.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* ---- 1. File layout -------------------------------------------------------------------------- */

#define VIDX_MAGIC "MPVIDX01"
#define VIDX_VERSION 5u
#define HIST_BUCKETS 336 /* 8 per octave from 1 ns to 2^42 ns (73 min) */
#define MAX_LOC_SLOTS (1u << 20)
#define PYR_FANOUT 16

typedef struct vhead {
    char magic[8];
    uint32_t version, head_bytes;
    uint64_t cap_size;
    int64_t cap_mtime_ns;
    uint64_t total_zones;
    uint64_t n_levels, levels_off;
    uint64_t n_locs, locs_off;
    uint64_t n_plots, plots_off;
    uint64_t n_msgs, msgs_off, text_off, text_len;
    uint64_t n_frames, frames_off;
    uint64_t meta_off, meta_len;
    int64_t end_ns;
    uint64_t n_images, images_off, image_bytes_off, image_bytes_len;
    uint64_t n_tiers, tiers_off;
    uint64_t sys_off, sys_len; /* the system and lock section (view_index_sys.c) */
    uint64_t file_bytes;
} vhead;

typedef struct vzone { int64_t s, e, self; uint32_t loc, depth; } vzone;
typedef struct vinst { int64_t s, e; uint32_t track, depth; } vinst;
typedef struct vpoint { int64_t ts; double v; } vpoint;
typedef struct vmm { double mn, mx; } vmm;
typedef struct vmsg { int64_t ts; uint64_t text_off; uint32_t text_len, level, track, pad; } vmsg;
typedef struct vframe { int64_t s, d; } vframe;
typedef struct vimage { int64_t ts; uint64_t off; uint32_t len, w, h, codec; } vimage;

typedef struct vlevel { uint32_t track, depth; uint64_t off, n; uint32_t tier0, n_tiers; } vlevel;

/* Level of detail (section 6): a tier of a level is its zones merged at resolution res_ns, as a
 * sorted array of runs. A run is a maximal chain of zones each narrower than res_ns, each
 * starting less than res_ns after the previous one ends; a zone that is not in such a chain is a
 * run of its own (first = its index, with its self time and location). first is the index of the
 * run's first zone in the level, so a run's count is the next run's first minus its own. */
typedef struct vrun { int64_t s, e; uint64_t first; int64_t self; uint32_t loc, pad; } vrun;
typedef struct vtier { uint64_t off, n; int64_t res_ns; } vtier;
#define LOD_TIERS 17      /* resolutions 2^10, 2^12, ... 2^42 ns (1 us to 73 min) */
#define LOD_MIN_ZONES 1024 /* smaller levels are read whole */
typedef struct vloc {
    uint64_t off, n, hist_off;
    int64_t total, self, min, max;
} vloc;
typedef struct vplot {
    uint64_t off, n, pyr_off;
    uint32_t pyr_levels, pad;
} vplot;

/* ---- 2. Spool streams ------------------------------------------------------------------------ */

#define CHUNK_BYTES 4096

typedef struct chunk { uint64_t off; uint32_t len; } chunk;

typedef struct stream {
    uint32_t rec;           /* bytes per record */
    unsigned char *buf;     /* CHUNK_BYTES, allocated on first use */
    uint32_t used;
    chunk *chunks;
    size_t n_chunks, cap_chunks;
    uint64_t n;             /* records */
    int64_t last;           /* last start, for the order check */
    int unsorted;
    uint64_t out_off;       /* where it landed in the final file */
} stream;

typedef struct spool {
    FILE *f;
    uint64_t size;
    int failed;
} spool;

static int stream_flush(spool *sp, stream *s)
{
    if (!s->used)
        return 0;
    if (s->n_chunks == s->cap_chunks) {
        size_t nc = s->cap_chunks ? s->cap_chunks * 2 : 8;
        chunk *c = realloc(s->chunks, nc * sizeof *c);
        if (!c)
            return -1;
        s->chunks = c;
        s->cap_chunks = nc;
    }
    if (fwrite(s->buf, 1, s->used, sp->f) != s->used)
        return -1;
    s->chunks[s->n_chunks++] = (chunk){sp->size, s->used};
    sp->size += s->used;
    s->used = 0;
    return 0;
}

static int stream_put(spool *sp, stream *s, const void *rec, uint32_t len)
{
    const unsigned char *p = rec;
    while (len) {
        if (!s->buf && !(s->buf = malloc(CHUNK_BYTES)))
            return -1;
        uint32_t room = CHUNK_BYTES - s->used, k = len < room ? len : room;
        memcpy(s->buf + s->used, p, k);
        s->used += k;
        p += k;
        len -= k;
        if (s->used == CHUNK_BYTES && stream_flush(sp, s) != 0)
            return -1;
    }
    return 0;
}

static void stream_free(stream *s)
{
    free(s->buf);
    free(s->chunks);
}

static int put(FILE *f, const void *p, size_t n, uint64_t *pos)
{
    if (n && fwrite(p, 1, n, f) != n)
        return -1;
    *pos += n;
    return 0;
}

/* Pads the file to a multiple of 8 bytes, so that the next array or table is aligned in the map. */
static int align8(FILE *f, uint64_t *pos)
{
    static const unsigned char zero[8] = {0};
    return put(f, zero, (size_t)((8 - *pos % 8) % 8), pos);
}

/* Copies the stream's chunks, in order, to out at its current end. */
static int stream_copy(spool *sp, stream *s, FILE *out, uint64_t *out_pos)
{
    if (stream_flush(sp, s) != 0 || align8(out, out_pos) != 0)
        return -1;
    s->out_off = *out_pos;
    if (!s->n_chunks)
        return 0;
    if (fflush(sp->f) != 0)
        return -1;
    unsigned char tmp[CHUNK_BYTES];
    int fd = fileno(sp->f);
    for (size_t i = 0; i < s->n_chunks; i++) {
        if (pread(fd, tmp, s->chunks[i].len, (off_t)s->chunks[i].off) != (ssize_t)s->chunks[i].len)
            return -1;
        if (fwrite(tmp, 1, s->chunks[i].len, out) != s->chunks[i].len)
            return -1;
        *out_pos += s->chunks[i].len;
    }
    return 0;
}

/* ---- 3. Build -------------------------------------------------------------------------------- */

typedef struct blevel { uint32_t track, depth; stream st; } blevel;

typedef struct bloc {
    stream st;
    uint64_t *hist; /* HIST_BUCKETS, allocated with the first zone */
    int64_t total, self, min, max;
} bloc;

typedef struct bplot {
    int pool;          /* 1 = memory of walker pool id, 0 = a plot named by string id */
    uint32_t id;
    int format, style;
    uint32_t color;
    stream st;
} bplot;

typedef struct builder {
    spool sp;
    mprof_walker *w;
    size_t **by_track; /* by_track[track][depth]: index + 1 into levels (which moves), 0 = none */
    uint32_t *track_depths;
    uint32_t n_tracks;
    blevel *levels;    /* flat list, in creation order (pointers above index into it) */
    size_t n_levels, cap_levels;
    bloc *locs;
    uint32_t n_locs;
    bplot *plots;
    size_t n_plots, cap_plots;
    stream msgs, text, images, image_bytes;
    uint64_t n_zones;
    int64_t min_s, max_e; /* over every zone and span (GPU zones may start before the CPU's first) */
    mprof_vsys *sys;
    int oom;
} builder;

static int hist_bucket(int64_t d)
{
    if (d < 1)
        return 0;
    int b = (int)(log2((double)d) * 8.0);
    return b < 0 ? 0 : b >= HIST_BUCKETS ? HIST_BUCKETS - 1 : b;
}

static int64_t hist_edge(int b)
{
    return (int64_t)ceil(exp2((double)b / 8.0));
}

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
        if (b->n_levels == b->cap_levels) {
            size_t nc = b->cap_levels ? b->cap_levels * 2 : 16;
            blevel *l = realloc(b->levels, nc * sizeof *l);
            if (!l)
                return NULL;
            b->levels = l;
            b->cap_levels = nc;
        }
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
    lc->hist[hist_bucket(d)]++;
    if (!lc->st.n || d < lc->min)
        lc->min = d;
    if (!lc->st.n || d > lc->max)
        lc->max = d;
    lc->total += d;
    lc->self += self;
    if (stream_put(&b->sp, &l->st, &z, sizeof z) != 0 || stream_put(&b->sp, &lc->st, &in, sizeof in) != 0)
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
    if (b->n_plots == b->cap_plots) {
        size_t nc = b->cap_plots ? b->cap_plots * 2 : 8;
        bplot *p = realloc(b->plots, nc * sizeof *p);
        if (!p)
            return NULL;
        b->plots = p;
        b->cap_plots = nc;
    }
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
    if (stream_put(&b->sp, &p->st, &pt, sizeof pt) != 0)
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
        if (stream_put(&b->sp, &b->msgs, &m, sizeof m) != 0 ||
            (m.text_len && stream_put(&b->sp, &b->text, ev->str, m.text_len) != 0))
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
        if (stream_put(&b->sp, &b->images, &im, sizeof im) != 0 ||
            (im.len && stream_put(&b->sp, &b->image_bytes, ev->str, im.len) != 0))
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

/* The plot's min/max pyramid: level k holds one pair per PYR_FANOUT^k points. */
static int write_pyramid(FILE *f, vplot *vp, uint64_t *pos)
{
    vp->pyr_off = *pos;
    vp->pyr_levels = 0;
    if (vp->n <= PYR_FANOUT)
        return 0;
    if (fflush(f) != 0)
        return -1;
    int fd = fileno(f);
    uint64_t n_prev = vp->n, prev_off = vp->off;
    int from_points = 1;
    while (n_prev > PYR_FANOUT) {
        uint64_t n = (n_prev + PYR_FANOUT - 1) / PYR_FANOUT;
        for (uint64_t i = 0; i < n; i++) {
            vmm m = {INFINITY, -INFINITY};
            uint64_t a = i * PYR_FANOUT, e = a + PYR_FANOUT < n_prev ? a + PYR_FANOUT : n_prev;
            for (uint64_t k = a; k < e; k++) {
                double lo, hi;
                if (from_points) {
                    vpoint p;
                    if (pread(fd, &p, sizeof p, (off_t)(prev_off + k * sizeof p)) != (ssize_t)sizeof p)
                        return -1;
                    lo = hi = p.v;
                } else {
                    vmm q;
                    if (pread(fd, &q, sizeof q, (off_t)(prev_off + k * sizeof q)) != (ssize_t)sizeof q)
                        return -1;
                    lo = q.mn;
                    hi = q.mx;
                }
                if (lo < m.mn)
                    m.mn = lo;
                if (hi > m.mx)
                    m.mx = hi;
            }
            if (put(f, &m, sizeof m, pos) != 0)
                return -1;
        }
        if (fflush(f) != 0)
            return -1;
        prev_off = *pos - n * sizeof(vmm);
        n_prev = n;
        from_points = 0;
        vp->pyr_levels++;
    }
    return 0;
}

static int stat_stamp(const char *path, uint64_t *size, int64_t *mtime_ns)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    *size = (uint64_t)st.st_size;
    *mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return 0;
}

/* Tiers of detail of one level (see vrun): its zones are read back from the index file and fed
 * through a cascade of LOD_TIERS stages, each merging the items of the stage below at 4 times its
 * resolution (merging runs made at a finer resolution gives the runs of the zones themselves: every
 * zone of a fine run is narrower than the coarse resolution and follows the previous one closely
 * enough). A first pass counts each stage's runs; the second writes the stages kept: those with at
 * most half the runs of the last one kept (the level's zones at first), so tiers cost at most the
 * level's own size and usually far less. */
typedef struct titem { int64_t s, e; uint64_t first, n; int64_t self; uint32_t loc; } titem;
typedef struct tstage {
    int64_t res;
    int open;
    titem cur;
    uint64_t count;
    stream *st; /* the pass that writes it; NULL: counted only */
} tstage;

static int tier_cascade(spool *sp, tstage *g, int k, const titem *it);

static int tier_emit(spool *sp, tstage *g, int k, const titem *it)
{
    g[k].count++;
    if (g[k].st) {
        vrun r = {it->s, it->e, it->first, it->n == 1 ? it->self : 0, it->n == 1 ? it->loc : 0, 0};
        if (stream_put(sp, g[k].st, &r, sizeof r) != 0)
            return -1;
        g[k].st->n++;
    }
    return tier_cascade(sp, g, k + 1, it);
}

static int tier_cascade(spool *sp, tstage *g, int k, const titem *it)
{
    if (k == LOD_TIERS)
        return 0;
    tstage *t = &g[k];
    int narrow = it->n > 1 || it->e - it->s < t->res;
    if (t->open && narrow && it->s < t->cur.e + t->res) {
        t->cur.n += it->n;
        if (it->e > t->cur.e)
            t->cur.e = it->e;
        return 0;
    }
    if (t->open) {
        t->open = 0;
        if (tier_emit(sp, g, k, &t->cur) != 0)
            return -1;
    }
    if (narrow) {
        t->cur = *it;
        t->open = 1;
        return 0;
    }
    return tier_emit(sp, g, k, it);
}

/* Writes the kept tiers of the level of n zones at off in f to f's end; out gets them. */
static int level_tiers(spool *sp, FILE *f, uint64_t off, uint64_t n, uint64_t *pos, vtier *out, uint32_t *out_n)
{
    enum { BUF = 4096 };
    *out_n = 0;
    if (n < LOD_MIN_ZONES)
        return 0;
    vzone *buf = malloc(BUF * sizeof *buf);
    stream st[LOD_TIERS];
    tstage g[LOD_TIERS];
    memset(st, 0, sizeof st);
    int rc = -1;
    if (!buf || fflush(f) != 0)
        goto done;
    for (int pass = 0; pass < 2; pass++) {
        memset(g, 0, sizeof g);
        for (int k = 0; k < LOD_TIERS; k++) {
            g[k].res = INT64_C(1) << (10 + 2 * k);
            g[k].st = pass && st[k].rec ? &st[k] : NULL;
        }
        for (uint64_t i = 0; i < n; i += BUF) {
            size_t m = n - i < BUF ? (size_t)(n - i) : BUF;
            if (pread(fileno(f), buf, m * sizeof *buf, (off_t)(off + i * sizeof *buf)) != (ssize_t)(m * sizeof *buf))
                goto done;
            for (size_t j = 0; j < m; j++) {
                titem it = {buf[j].s, buf[j].e, i + j, 1, buf[j].self, buf[j].loc};
                if (tier_cascade(sp, g, 0, &it) != 0)
                    goto done;
            }
        }
        for (int k = 0; k < LOD_TIERS; k++)
            if (g[k].open) {
                g[k].open = 0;
                if (tier_emit(sp, g, k, &g[k].cur) != 0)
                    goto done;
            }
        if (!pass) {
            uint64_t prev = n;
            int any = 0;
            for (int k = 0; k < LOD_TIERS; k++)
                if (g[k].count && g[k].count <= prev / 2) {
                    st[k].rec = sizeof(vrun);
                    st[k].last = INT64_MIN;
                    prev = g[k].count;
                    any = 1;
                }
            if (!any) {
                rc = 0;
                goto done;
            }
        }
    }
    for (int k = 0; k < LOD_TIERS; k++) {
        if (!st[k].rec)
            continue;
        if (stream_copy(sp, &st[k], f, pos) != 0)
            goto done;
        out[(*out_n)++] = (vtier){st[k].out_off, st[k].n, g[k].res};
    }
    rc = 0;
done:
    for (int k = 0; k < LOD_TIERS; k++)
        stream_free(&st[k]);
    free(buf);
    return rc;
}

static void builder_free(builder *b)
{
    for (size_t i = 0; i < b->n_levels; i++)
        stream_free(&b->levels[i].st);
    for (uint32_t i = 0; i < b->n_locs; i++) {
        stream_free(&b->locs[i].st);
        free(b->locs[i].hist);
    }
    for (size_t i = 0; i < b->n_plots; i++)
        stream_free(&b->plots[i].st);
    stream_free(&b->msgs);
    stream_free(&b->text);
    stream_free(&b->images);
    stream_free(&b->image_bytes);
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

static int write_index(builder *b, mprof_reader *r, const char *cap_path, FILE *f, char *err, size_t errlen)
{
    vhead h;
    vtier *tiers = NULL;
    uint32_t *lt0 = NULL, *ltn = NULL; /* per level: its first tier and tier count */
    memset(&h, 0, sizeof h);
    memcpy(h.magic, VIDX_MAGIC, 8);
    h.version = VIDX_VERSION;
    h.head_bytes = sizeof h;
    if (stat_stamp(cap_path, &h.cap_size, &h.cap_mtime_ns) != 0) {
        snprintf(err, errlen, "%s: %s", cap_path, strerror(errno));
        return -1;
    }
    h.total_zones = mprof__walker_zone_count(b->w);
    h.end_ns = mprof__walker_last_ns(b->w);
    uint64_t pos = 0;
    if (put(f, &h, sizeof h, &pos) != 0)
        goto io;
    /* Data of every stream, then the tables that point into it. */
    for (size_t i = 0; i < b->n_levels; i++) {
        if (stream_copy(&b->sp, &b->levels[i].st, f, &pos) != 0)
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
        if (level_tiers(&b->sp, f, b->levels[i].st.out_off, b->levels[i].st.n, &pos, tiers + n_tiers, &ltn[i]) != 0)
            goto io;
        n_tiers += ltn[i];
    }
    if (align8(f, &pos) != 0)
        goto io;
    h.n_tiers = n_tiers;
    h.tiers_off = pos;
    if (put(f, tiers, n_tiers * sizeof *tiers, &pos) != 0)
        goto io;
    for (uint32_t i = 0; i < b->n_locs; i++)
        if (stream_copy(&b->sp, &b->locs[i].st, f, &pos) != 0)
            goto io;
    vplot *vp = calloc(b->n_plots + 1, sizeof *vp);
    if (!vp)
        goto oom;
    for (size_t i = 0; i < b->n_plots; i++) {
        if (stream_copy(&b->sp, &b->plots[i].st, f, &pos) != 0) {
            free(vp);
            goto io;
        }
        vp[i].off = b->plots[i].st.out_off;
        vp[i].n = b->plots[i].st.n;
        if (write_pyramid(f, &vp[i], &pos) != 0) {
            free(vp);
            goto io;
        }
    }
    if (stream_copy(&b->sp, &b->msgs, f, &pos) != 0 || stream_copy(&b->sp, &b->text, f, &pos) != 0) {
        free(vp);
        goto io;
    }
    if (stream_copy(&b->sp, &b->images, f, &pos) != 0 || stream_copy(&b->sp, &b->image_bytes, f, &pos) != 0) {
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
    if (align8(f, &pos) != 0) {
        free(vp);
        goto io;
    }
    h.frames_off = pos;
    h.n_frames = mf ? mf->n : 0;
    for (uint64_t i = 0; i < h.n_frames; i++) {
        vframe fr = {mf->start[i], mf->dur[i]};
        if (put(f, &fr, sizeof fr, &pos) != 0) {
            free(vp);
            goto io;
        }
    }
    h.n_plots = b->n_plots;
    if (align8(f, &pos) != 0) {
        free(vp);
        goto io;
    }
    h.plots_off = pos;
    if (put(f, vp, b->n_plots * sizeof *vp, &pos) != 0) {
        free(vp);
        goto io;
    }
    free(vp);
    h.n_levels = b->n_levels;
    if (align8(f, &pos) != 0)
        goto io;
    h.levels_off = pos;
    for (size_t i = 0; i < b->n_levels; i++) {
        vlevel l = {b->levels[i].track, b->levels[i].depth, b->levels[i].st.out_off, b->levels[i].st.n, lt0[i], ltn[i]};
        if (put(f, &l, sizeof l, &pos) != 0)
            goto io;
    }
    /* Histograms, then the location table. */
    if (align8(f, &pos) != 0)
        goto io;
    uint64_t hist_at = pos;
    for (uint32_t i = 0; i < b->n_locs; i++)
        if (b->locs[i].hist && put(f, b->locs[i].hist, HIST_BUCKETS * sizeof(uint64_t), &pos) != 0)
            goto io;
    h.n_locs = b->n_locs;
    if (align8(f, &pos) != 0)
        goto io;
    h.locs_off = pos;
    for (uint32_t i = 0; i < b->n_locs; i++) {
        const bloc *l = &b->locs[i];
        vloc v = {l->st.out_off, l->st.n, l->hist ? hist_at : 0, l->total, l->self, l->min, l->max};
        if (l->hist)
            hist_at += HIST_BUCKETS * sizeof(uint64_t);
        if (put(f, &v, sizeof v, &pos) != 0)
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
    snprintf(err, errlen, "cannot write the index: %s", errno ? strerror(errno) : "I/O error");
    free(tiers);
    free(lt0);
    free(ltn);
    return -1;
oom:
    snprintf(err, errlen, "out of memory while writing the index");
    free(tiers);
    free(lt0);
    free(ltn);
    return -1;
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
    mprof_tl_hooks hooks = {.user = &b, .zone = h_zone, .lock_span = h_lock, .memory = h_memory};
    b.w = mprof__walker_new(r, &hooks, 1);
    b.sp.f = tmpfile();
    b.sys = mprof__vsys_new();
    if (!b.w || !b.sp.f || !b.sys) {
        snprintf(err, errlen, "%s", b.w ? "cannot create a temporary file for the index" : "out of memory");
        mprof__walker_free(b.w);
        builder_free(&b);
        mprof_reader_close(r);
        return -1;
    }
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        on_event(&b, &ev);
        if (mprof__vsys_event(b.sys, r, &ev) != 0)
            b.oom = 1;
        if (mprof__walker_event(b.w, &ev) != 0 || b.oom || b.sp.failed) {
            rc = -2;
            break;
        }
    }
    int ret = -1;
    if (rc == -1)
        snprintf(err, errlen, "%s", mprof_reader_error(r));
    else if (rc == -2)
        snprintf(err, errlen, "%s: out of memory or temporary file full while indexing", capture_path);
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
            snprintf(err, errlen, "cannot create '%s': %s", index_path, strerror(errno));
            if (fd >= 0) {
                close(fd);
                unlink(tmp);
            }
        } else {
            ret = write_index(&b, r, capture_path, f, err, errlen);
            if (fclose(f) != 0 && ret == 0) {
                snprintf(err, errlen, "cannot write '%s': %s", index_path, strerror(errno));
                ret = -1;
            }
            if (ret == 0 && rename(tmp, index_path) != 0) {
                snprintf(err, errlen, "cannot rename the index to '%s': %s", index_path, strerror(errno));
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

/* ---- 4. Open --------------------------------------------------------------------------------- */

struct mprof_vindex {
    const unsigned char *map;
    size_t size;
    const vhead *h;
    const vlevel *levels;
    const vloc *locs;
    const vplot *plots;
    const vtier *tiers;
    char *path;
    int remove_on_close;
};

/* n records of rec bytes at off lie inside the map (and, for records wider than a byte, at an
 * aligned offset: the index aligns every table to 8 bytes). */
static int in_file(const mprof_vindex *x, uint64_t off, uint64_t n, uint64_t rec)
{
    return off <= x->size && (rec <= 1 || off % 8 == 0) && (rec == 0 || n <= (x->size - off) / rec);
}

/* Maps and checks an index; NULL when it is missing, stale or damaged (reason in err). */
static mprof_vindex *try_open(const char *cap_path, const char *index_path, char *err, size_t errlen)
{
    uint64_t cs = 0;
    int64_t cm = 0;
    if (cap_path && stat_stamp(cap_path, &cs, &cm) != 0) {
        snprintf(err, errlen, "%s: %s", cap_path, strerror(errno));
        return NULL;
    }
    int fd = open(index_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "no index");
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < sizeof(vhead)) {
        close(fd);
        snprintf(err, errlen, "index too short");
        return NULL;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "cannot map the index: %s", strerror(errno));
        return NULL;
    }
    mprof_vindex *x = calloc(1, sizeof *x);
    if (!x) {
        munmap(m, (size_t)st.st_size);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    x->map = m;
    x->size = (size_t)st.st_size;
    x->h = m;
    const vhead *h = x->h;
    const char *why = NULL;
    if (memcmp(h->magic, VIDX_MAGIC, 8) != 0 || h->version != VIDX_VERSION || h->head_bytes != sizeof *h)
        why = "index of another version";
    else if (cap_path && (h->cap_size != cs || h->cap_mtime_ns != cm))
        why = "index older than the capture";
    else if (h->file_bytes != x->size || !in_file(x, h->levels_off, h->n_levels, sizeof(vlevel)) ||
             !in_file(x, h->locs_off, h->n_locs, sizeof(vloc)) ||
             !in_file(x, h->plots_off, h->n_plots, sizeof(vplot)) ||
             !in_file(x, h->msgs_off, h->n_msgs, sizeof(vmsg)) || !in_file(x, h->text_off, h->text_len, 1) ||
             !in_file(x, h->frames_off, h->n_frames, sizeof(vframe)) || !in_file(x, h->meta_off, h->meta_len, 1) ||
             !in_file(x, h->images_off, h->n_images, sizeof(vimage)) ||
             !in_file(x, h->image_bytes_off, h->image_bytes_len, 1) ||
             !in_file(x, h->tiers_off, h->n_tiers, sizeof(vtier)) || !in_file(x, h->sys_off, h->sys_len, 1) ||
             (h->sys_len && h->sys_off % 8) || !mprof__vsys_check(x->map + h->sys_off, h->sys_len))
        why = "damaged index";
    if (!why) {
        x->levels = (const vlevel *)(x->map + h->levels_off);
        x->locs = (const vloc *)(x->map + h->locs_off);
        x->plots = (const vplot *)(x->map + h->plots_off);
        x->tiers = (const vtier *)(x->map + h->tiers_off);
        for (uint64_t i = 0; i < h->n_levels && !why; i++)
            if (!in_file(x, x->levels[i].off, x->levels[i].n, sizeof(vzone)) ||
                (uint64_t)x->levels[i].tier0 + x->levels[i].n_tiers > h->n_tiers)
                why = "damaged index";
        for (uint64_t i = 0; i < h->n_tiers && !why; i++)
            if (!in_file(x, x->tiers[i].off, x->tiers[i].n, sizeof(vrun)))
                why = "damaged index";
        for (uint64_t i = 0; i < h->n_locs && !why; i++)
            if (!in_file(x, x->locs[i].off, x->locs[i].n, sizeof(vinst)) ||
                (x->locs[i].hist_off && !in_file(x, x->locs[i].hist_off, HIST_BUCKETS, sizeof(uint64_t))))
                why = "damaged index";
        for (uint64_t i = 0; i < h->n_plots && !why; i++)
            if (!in_file(x, x->plots[i].off, x->plots[i].n, sizeof(vpoint)) || x->plots[i].pyr_levels > 20)
                why = "damaged index";
    }
    if (why) {
        snprintf(err, errlen, "%s", why);
        munmap(m, x->size);
        free(x);
        return NULL;
    }
    x->path = strdup(index_path);
    if (!x->path) {
        munmap(m, x->size);
        free(x);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return x;
}

mprof_vindex *mprof__vindex_open(const char *capture_path, const char *index_path, int *out_built,
                                 char *err, size_t errlen)
{
    char def[4096], why[256];
    int remove = 0;
    if (out_built)
        *out_built = 0;
    if (!index_path) {
        if (snprintf(def, sizeof def, "%s.vidx", capture_path) >= (int)sizeof def) {
            snprintf(err, errlen, "capture name too long");
            return NULL;
        }
        index_path = def;
    }
    mprof_vindex *x = try_open(capture_path, index_path, why, sizeof why);
    if (x)
        return x;
    if (mprof__vindex_build(capture_path, index_path, err, errlen) != 0) {
        if (index_path != def || strncmp(err, "cannot create", 13) != 0)
            return NULL;
        /* The capture's folder is read-only: a private index in $TMPDIR, removed on close. */
        const char *tmpdir = getenv("TMPDIR");
        const char *base = strrchr(capture_path, '/');
        snprintf(def, sizeof def, "%s/mprof-%ld-%s.vidx", tmpdir && *tmpdir ? tmpdir : "/tmp",
                 (long)getpid(), base ? base + 1 : capture_path);
        if (mprof__vindex_build(capture_path, def, err, errlen) != 0)
            return NULL;
        remove = 1;
    }
    if (out_built)
        *out_built = 1;
    x = try_open(capture_path, index_path, why, sizeof why);
    if (!x) {
        snprintf(err, errlen, "%s: %s after building it", index_path, why);
        if (remove)
            unlink(index_path);
        return NULL;
    }
    x->remove_on_close = remove;
    return x;
}

mprof_vindex *mprof__vindex_open_built(const char *index_path, char *err, size_t errlen)
{
    return try_open(NULL, index_path, err, errlen);
}

void mprof__vindex_close(mprof_vindex *x)
{
    if (!x)
        return;
    munmap((void *)x->map, x->size);
    if (x->remove_on_close)
        unlink(x->path);
    free(x->path);
    free(x);
}

uint64_t mprof__vindex_zone_count(const mprof_vindex *x)
{
    return x->h->total_zones;
}

uint64_t mprof__vindex_size_bytes(const mprof_vindex *x)
{
    return x->size;
}

const char *mprof__vindex_path(const mprof_vindex *x)
{
    return x->path;
}

uint64_t mprof__vindex_tier_count(const mprof_vindex *x, uint64_t *out_runs)
{
    uint64_t runs = 0;
    for (uint64_t i = 0; i < x->h->n_tiers; i++)
        runs += x->tiers[i].n;
    if (out_runs)
        *out_runs = runs;
    return x->h->n_tiers;
}

/* ---- 5. Answers ------------------------------------------------------------------------------ */

static const vzone *level_zones(const mprof_vindex *x, const vlevel *l)
{
    return (const vzone *)(x->map + l->off);
}

/* First zone of z[lo, n) that starts at or after t. */
static uint64_t first_start_from(const vzone *z, uint64_t lo, uint64_t n, int64_t t)
{
    uint64_t hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (z[mid].s < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A level's zones, or one of its tiers, seen alike by the merge: item i starts at s(i), ends at
 * e(i) and holds the zones [first(i), first(i + 1)) of the level (a zone holds itself). */
typedef struct seq {
    const vzone *z; /* the zones, or NULL for a tier */
    const vrun *r;
    uint64_t n, level_n;
} seq;

static int64_t sq_s(const seq *q, uint64_t i) { return q->z ? q->z[i].s : q->r[i].s; }
static int64_t sq_e(const seq *q, uint64_t i) { return q->z ? q->z[i].e : q->r[i].e; }

/* Clamped, so that a damaged tier can give wrong counts but never reads outside its level. */
static uint64_t sq_first(const seq *q, uint64_t i)
{
    if (q->z || i >= q->n)
        return i >= q->n ? q->level_n : i;
    return q->r[i].first < q->level_n ? q->r[i].first : q->level_n;
}

static uint64_t sq_count(const seq *q, uint64_t a, uint64_t b)
{
    uint64_t fa = sq_first(q, a), fb = sq_first(q, b);
    return fb > fa ? fb - fa : 0;
}

/* First item of [lo, hi) whose end is after t (ends are sorted within a level). */
static uint64_t sq_end_after(const seq *q, uint64_t lo, uint64_t hi, int64_t t)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (sq_e(q, mid) <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* First item of [lo, hi) that starts at or after t. */
static uint64_t sq_start_from(const seq *q, uint64_t lo, uint64_t hi, int64_t t)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (sq_s(q, mid) < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The merge of one level: zones at least a pixel wide are drawn; a run of narrower zones, each
 * starting less than a pixel after the previous one ends and before t1, is one merged span with
 * its count. It is fed items in order (zones, or runs of a tier whose resolution is at most a
 * pixel: such a run lies inside one merged span), and a run stays open from one feed to the next. */
typedef struct merge {
    FILE *out, *m;
    int64_t px, t1;
    int fz, fm, open;
    int64_t bs, be;
    uint64_t cnt, drawn, merged;
} merge;

static void merge_close(merge *g)
{
    if (!g->open)
        return;
    fprintf(g->m, "%s%" PRId64 ",%" PRId64 ",%" PRIu64, g->fm ? "" : ",", g->bs, g->be, g->cnt);
    g->fm = 0;
    g->merged += g->cnt;
    g->open = 0;
}

static int sq_wide(const seq *q, uint64_t i, int64_t px)
{
    return sq_e(q, i) - sq_s(q, i) >= px && sq_count(q, i, i + 1) == 1;
}

static void merge_feed(merge *g, const seq *q, uint64_t i, uint64_t end)
{
    while (i < end) {
        if (g->open) {
            int64_t lim = g->be + g->px < g->t1 ? g->be + g->px : g->t1;
            uint64_t k = sq_start_from(q, i, end, lim);
            if (k == i) {
                merge_close(g);
                continue;
            }
            /* Items of a level do not overlap: among [i, k) only the last can be wide. */
            int wide_last = sq_wide(q, k - 1, g->px);
            uint64_t e = wide_last ? k - 1 : k;
            if (e > i) {
                g->cnt += sq_count(q, i, e);
                if (sq_e(q, e - 1) > g->be)
                    g->be = sq_e(q, e - 1);
                i = e;
            }
            if (wide_last)
                merge_close(g);
            continue;
        }
        if (sq_s(q, i) >= g->t1)
            return;
        if (sq_wide(q, i, g->px)) {
            const vzone *z = q->z ? &q->z[i] : NULL;
            const vrun *r = q->r ? &q->r[i] : NULL;
            fprintf(g->out, "%s%" PRId64 ",%" PRId64 ",%" PRIu32 ",%" PRId64, g->fz ? "" : ",", z ? z->s : r->s,
                    z ? z->e : r->e, z ? z->loc : r->loc, z ? z->self : r->self);
            g->fz = 0;
            g->drawn++;
            i++;
            continue;
        }
        g->open = 1;
        g->bs = sq_s(q, i);
        g->be = sq_e(q, i);
        g->cnt = sq_count(q, i, i + 1);
        i++;
    }
}

/* Zones [a, b) of one run of a tier: they are narrower than a pixel and each follows the previous
 * one by less than a pixel, so they join one merged span whatever comes before or after; fed as
 * one item, without reading the zones between. */
static void merge_piece(merge *g, const vzone *z, uint64_t a, uint64_t b)
{
    if (a >= b)
        return;
    int64_t s = z[a].s, e = z[b - 1].e;
    int64_t lim = g->be + g->px < g->t1 ? g->be + g->px : g->t1;
    if (g->open && s < lim) {
        g->cnt += b - a;
        if (e > g->be)
            g->be = e;
        return;
    }
    merge_close(g);
    if (s >= g->t1)
        return;
    g->open = 1;
    g->bs = s;
    g->be = e;
    g->cnt = b - a;
}

/* The coarsest tier of l whose resolution is at most px; 0 when there is none (the zones). */
static const vtier *tier_for(const mprof_vindex *x, const vlevel *l, int64_t px)
{
    const vtier *best = NULL;
    for (uint32_t k = 0; k < l->n_tiers; k++)
        if (x->tiers[l->tier0 + k].res_ns <= px)
            best = &x->tiers[l->tier0 + k];
    return best;
}

static int answer_zones(const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    int64_t px = (q->t1 - q->t0) / (int64_t)q->w;
    if (px < 1)
        px = 1;
    uint64_t drawn = 0, merged = 0;
    fprintf(out, "{\"t0\":%" PRId64 ",\"t1\":%" PRId64 ",\"px_ns\":%" PRId64 ",\"levels\":[", q->t0, q->t1, px);
    int first_level = 1;
    for (uint64_t li = 0; li < x->h->n_levels; li++) {
        const vlevel *l = &x->levels[li];
        seq base = {level_zones(x, l), NULL, l->n, l->n};
        const vtier *tr = q->no_lod ? NULL : tier_for(x, l, px);
        seq tier = {NULL, tr ? (const vrun *)(x->map + tr->off) : NULL, tr ? tr->n : 0, l->n};
        const seq *top = tr ? &tier : &base;
        uint64_t i = sq_end_after(top, 0, top->n, q->t0);
        if (i >= top->n || sq_s(top, i) >= q->t1)
            continue;
        uint64_t j = sq_start_from(top, i, top->n, q->t1);
        fprintf(out, "%s{\"track\":%" PRIu32 ",\"depth\":%" PRIu32 ",\"z\":[", first_level ? "" : ",",
                l->track, l->depth);
        first_level = 0;
        /* Merged spans go to a second array, written after the zones from a small buffer. */
        char *mbuf = NULL;
        size_t mlen = 0;
        merge g = {out, open_memstream(&mbuf, &mlen), px, q->t1, 1, 1, 0, 0, 0, 0, 0, 0};
        if (!g.m)
            return -1;
        if (!tr)
            merge_feed(&g, &base, i, j);
        else {
            /* Runs of the tier that reach outside [t0, t1) hold zones that are not in the range:
             * those are read from the level's zones, up to the range's edges. */
            uint64_t ti = i, tj = j;
            if (sq_count(&tier, i, i + 1) > 1 && tier.r[i].s <= q->t0) {
                uint64_t f0 = sq_first(&tier, i), f1 = sq_first(&tier, i + 1);
                uint64_t a = sq_end_after(&base, f0, f1, q->t0);
                uint64_t b = i + 1 == j && tier.r[i].e >= q->t1 ? sq_start_from(&base, a, f1, q->t1) : f1;
                merge_piece(&g, base.z, a, b);
                ti = i + 1;
            }
            uint64_t tail = tj;
            if (tj > ti && sq_count(&tier, tj - 1, tj) > 1 && tier.r[tj - 1].e >= q->t1)
                tail = tj - 1;
            merge_feed(&g, &tier, ti, tail);
            if (tail < tj) {
                uint64_t f0 = sq_first(&tier, tail), f1 = sq_first(&tier, tail + 1);
                merge_piece(&g, base.z, f0, sq_start_from(&base, f0, f1, q->t1));
            }
        }
        merge_close(&g);
        fclose(g.m);
        drawn += g.drawn;
        merged += g.merged;
        fprintf(out, "],\"m\":[%s]}", mbuf ? mbuf : "");
        free(mbuf);
    }
    fprintf(out, "],\"drawn\":%" PRIu64 ",\"merged\":%" PRIu64 "}", drawn, merged);
    return 0;
}

/* Min and max of points [a, b) of a plot, from the pyramid where whole blocks fit. */
static void plot_minmax(const mprof_vindex *x, const vplot *p, uint64_t a, uint64_t b, double *mn, double *mx)
{
    const vpoint *pt = (const vpoint *)(x->map + p->off);
    while (a < b) {
        /* The largest block size that starts at a and fits in [a, b). */
        uint64_t bs = 1, off = p->pyr_off, lvl_n = p->n;
        int lvl = 0;
        uint64_t sizes[24], offs[24];
        sizes[0] = 1;
        offs[0] = 0;
        for (uint32_t k = 1; k <= p->pyr_levels && k < 24; k++) {
            lvl_n = (lvl_n + PYR_FANOUT - 1) / PYR_FANOUT;
            sizes[k] = sizes[k - 1] * PYR_FANOUT;
            offs[k] = off;
            off += lvl_n * sizeof(vmm);
        }
        for (uint32_t k = p->pyr_levels < 23 ? p->pyr_levels : 23; k >= 1; k--)
            if (a % sizes[k] == 0 && a + sizes[k] <= b) {
                lvl = (int)k;
                break;
            }
        bs = sizes[lvl];
        if (lvl == 0) {
            if (pt[a].v < *mn)
                *mn = pt[a].v;
            if (pt[a].v > *mx)
                *mx = pt[a].v;
        } else {
            const vmm *m = (const vmm *)(x->map + offs[lvl]);
            const vmm *e = &m[a / bs];
            if (in_file(x, offs[lvl] + (a / bs) * sizeof(vmm), 1, sizeof(vmm))) {
                if (e->mn < *mn)
                    *mn = e->mn;
                if (e->mx > *mx)
                    *mx = e->mx;
            }
        }
        a += bs;
    }
}

static uint64_t point_from(const vpoint *p, uint64_t n, int64_t t)
{
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (p[mid].ts < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void jdouble(FILE *out, double v)
{
    if (isfinite(v))
        fprintf(out, "%.17g", v);
    else
        fputs("null", out);
}

static int answer_plots(const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    int64_t px = (q->t1 - q->t0) / (int64_t)q->w;
    if (px < 1)
        px = 1;
    fputs("{\"plots\":[", out);
    for (uint64_t pi = 0; pi < x->h->n_plots; pi++) {
        const vplot *p = &x->plots[pi];
        const vpoint *pt = (const vpoint *)(x->map + p->off);
        /* [ts, min, max] per pixel, and the point before the range so a line enters it. */
        fprintf(out, "%s{\"id\":%" PRIu64 ",\"p\":[", pi ? "," : "", pi);
        uint64_t i = point_from(pt, p->n, q->t0);
        int first = 1;
        if (i > 0) {
            fprintf(out, "%" PRId64 ",", pt[i - 1].ts);
            jdouble(out, pt[i - 1].v);
            fputc(',', out);
            jdouble(out, pt[i - 1].v);
            first = 0;
        }
        while (i < p->n && pt[i].ts <= q->t1) {
            int64_t pix_end = pt[i].ts + px - (pt[i].ts - q->t0) % px;
            uint64_t e = point_from(pt, p->n, pix_end);
            double mn = INFINITY, mx = -INFINITY;
            plot_minmax(x, p, i, e, &mn, &mx);
            fprintf(out, "%s%" PRId64 ",", first ? "" : ",", pt[i].ts);
            jdouble(out, mn);
            fputc(',', out);
            jdouble(out, mx);
            first = 0;
            i = e;
        }
        if (i < p->n) {
            fprintf(out, "%s%" PRId64 ",", first ? "" : ",", pt[i].ts);
            jdouble(out, pt[i].v);
            fputc(',', out);
            jdouble(out, pt[i].v);
        }
        fputs("]}", out);
    }
    fputs("]}", out);
    return 0;
}

static int answer_messages(const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    const vmsg *m = (const vmsg *)(x->map + x->h->msgs_off);
    uint64_t n = x->h->n_msgs, lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (m[mid].ts < q->t0)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t limit = q->limit ? q->limit : 2000;
    uint64_t shown = 0, in_range = 0;
    fputs("{\"m\":[", out);
    for (uint64_t i = lo; i < n && m[i].ts <= q->t1; i++) {
        in_range++;
        if (shown >= limit)
            continue;
        const char *text = "";
        uint32_t tl = 0;
        if (in_file(x, x->h->text_off + m[i].text_off, m[i].text_len, 1) && m[i].text_off <= x->h->text_len &&
            m[i].text_len <= x->h->text_len - m[i].text_off) {
            text = (const char *)x->map + x->h->text_off + m[i].text_off;
            tl = m[i].text_len;
        }
        fprintf(out, "%s[%" PRId64 ",%" PRIu32 ",%" PRIu32 ",", shown ? "," : "", m[i].ts, m[i].level, m[i].track);
        mprof_json_write_string(out, text, tl);
        fputc(']', out);
        shown++;
        if (in_range > (uint64_t)limit * 64)
            break; /* counted enough to say there are more */
    }
    fprintf(out, "],\"shown\":%" PRIu64 ",\"in_range\":%" PRIu64 ",\"total\":%" PRIu64 "}", shown, in_range, n);
    return 0;
}

static int answer_frames(const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    const vframe *f = (const vframe *)(x->map + x->h->frames_off);
    uint64_t n = x->h->n_frames;
    uint64_t a = q->has_frames ? (uint64_t)q->from : 0, b = q->has_frames ? (uint64_t)q->to : n;
    if (b > n)
        b = n;
    if (a > b)
        a = b;
    fprintf(out, "{\"count\":%" PRIu64 ",\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"f\":[", n, a, b);
    uint64_t span = b - a, w = q->w;
    int first = 1;
    for (uint64_t px = 0; px < w && span; px++) {
        uint64_t s = a + span * px / w, e = a + span * (px + 1) / w;
        if (e <= s)
            continue;
        uint64_t worst = s;
        for (uint64_t i = s + 1; i < e; i++)
            if (f[i].d > f[worst].d)
                worst = i;
        fprintf(out, "%s%" PRIu64 ",%" PRId64 ",%" PRId64, first ? "" : ",", worst, f[worst].s, f[worst].d);
        first = 0;
    }
    fputs("]}", out);
    return 0;
}

/* The thumbnail of frame q->from: the last image recorded before the frame ended. */
static int answer_image(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    const vframe *f = (const vframe *)(x->map + x->h->frames_off);
    const vimage *im = (const vimage *)(x->map + x->h->images_off);
    uint64_t n = x->h->n_images;
    if ((uint64_t)q->from >= x->h->n_frames || !n) {
        snprintf(err, errlen, "no image of frame %lld", (long long)q->from);
        return -1;
    }
    int64_t end = f[q->from].s + f[q->from].d;
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (im[mid].ts < end)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || im[lo - 1].ts < f[q->from].s - f[q->from].d) {
        snprintf(err, errlen, "no image of frame %lld", (long long)q->from);
        return -1;
    }
    const vimage *m = &im[lo - 1];
    uint64_t raw_len = (uint64_t)m->w * m->h * 3;
    if (m->codec != 1 || !m->w || !m->h || raw_len > (1u << 20) || m->off > x->h->image_bytes_len ||
        m->len > x->h->image_bytes_len - m->off) {
        snprintf(err, errlen, "frame %lld: a damaged image", (long long)q->from);
        return -1;
    }
    unsigned char *raw = malloc(raw_len);
    if (!raw)
        return -1;
    size_t got = ZSTD_decompress(raw, raw_len, x->map + x->h->image_bytes_off + m->off, m->len);
    if (ZSTD_isError(got) || got != raw_len) {
        free(raw);
        snprintf(err, errlen, "frame %lld: the image does not decompress", (long long)q->from);
        return -1;
    }
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fprintf(out, "{\"frame\":%lld,\"ts\":%" PRId64 ",\"w\":%" PRIu32 ",\"h\":%" PRIu32 ",\"rgb\":\"", (long long)q->from,
            m->ts, m->w, m->h);
    for (uint64_t i = 0; i < raw_len; i += 3) /* raw_len is a multiple of 3: no padding */
        fprintf(out, "%c%c%c%c", b64[raw[i] >> 2], b64[((raw[i] & 3) << 4) | (raw[i + 1] >> 4)],
                b64[((raw[i + 1] & 15) << 2) | (raw[i + 2] >> 6)], b64[raw[i + 2] & 63]);
    fputs("\"}", out);
    free(raw);
    return 0;
}

typedef struct acc { uint64_t n; int64_t total, self, min, max; } acc;

static int answer_stats(const mprof_vindex *x, const mprof_vquery *q, FILE *out)
{
    uint64_t nl = x->h->n_locs;
    acc *a = calloc(nl + 1, sizeof *a);
    if (!a)
        return -1;
    uint64_t zones = 0;
    for (uint64_t li = 0; li < x->h->n_levels; li++) {
        const vlevel *l = &x->levels[li];
        const vzone *z = level_zones(x, l);
        uint64_t i = first_start_from(z, 0, l->n, q->t0);
        for (; i < l->n && z[i].s < q->t1; i++) {
            if (z[i].e > q->t1 || z[i].loc >= nl)
                continue;
            acc *c = &a[z[i].loc];
            int64_t d = z[i].e - z[i].s;
            if (!c->n || d < c->min)
                c->min = d;
            if (!c->n || d > c->max)
                c->max = d;
            c->n++;
            c->total += d;
            c->self += z[i].self;
            zones++;
        }
    }
    fprintf(out, "{\"t0\":%" PRId64 ",\"t1\":%" PRId64 ",\"zones\":%" PRIu64 ",\"rows\":[", q->t0, q->t1, zones);
    int first = 1;
    for (uint64_t i = 0; i < nl; i++) {
        if (!a[i].n)
            continue;
        fprintf(out, "%s[%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "]", first ? "" : ",",
                i, a[i].n, a[i].total, a[i].self, a[i].min, a[i].max);
        first = 0;
    }
    fputs("]}", out);
    free(a);
    return 0;
}

static int answer_hist(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    if (q->loc >= x->h->n_locs || !x->locs[q->loc].hist_off) {
        snprintf(err, errlen, "no zones of source location %" PRIu32, q->loc);
        return -1;
    }
    const vloc *l = &x->locs[q->loc];
    const uint64_t *h = (const uint64_t *)(x->map + l->hist_off);
    int lo = 0, hi = HIST_BUCKETS - 1;
    while (lo < hi && !h[lo])
        lo++;
    while (hi > lo && !h[hi])
        hi--;
    fprintf(out, "{\"loc\":%" PRIu32 ",\"count\":%" PRIu64 ",\"total\":%" PRId64 ",\"min\":%" PRId64
                 ",\"max\":%" PRId64 ",\"buckets\":[",
            q->loc, l->n, l->total, l->min, l->max);
    for (int b = lo; b <= hi; b++)
        fprintf(out, "%s%" PRId64 ",%" PRId64 ",%" PRIu64, b > lo ? "," : "", hist_edge(b), hist_edge(b + 1), h[b]);
    fputs("]}", out);
    return 0;
}

static int answer_instances(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    if (q->loc >= x->h->n_locs) {
        snprintf(err, errlen, "no zones of source location %" PRIu32, q->loc);
        return -1;
    }
    const vloc *l = &x->locs[q->loc];
    const vinst *in = (const vinst *)(x->map + l->off);
    uint32_t limit = q->limit ? q->limit : 100;
    int64_t dmax = q->dmax > 0 ? q->dmax : INT64_MAX;
    /* The longest `limit` matches: a min-heap of indices keyed by duration. */
    uint64_t *heap = malloc((size_t)limit * sizeof *heap);
    if (!heap)
        return -1;
    uint32_t hn = 0;
    uint64_t matched = 0;
#define DUR(i) (in[i].e - in[i].s)
    for (uint64_t i = 0; i < l->n; i++) {
        int64_t d = DUR(i);
        if (d < q->dmin || d >= dmax)
            continue;
        matched++;
        if (hn < limit) {
            uint32_t c = hn++;
            heap[c] = i;
            while (c && DUR(heap[(c - 1) / 2]) > DUR(heap[c])) {
                uint64_t t = heap[c];
                heap[c] = heap[(c - 1) / 2];
                heap[(c - 1) / 2] = t;
                c = (c - 1) / 2;
            }
        } else if (d > DUR(heap[0])) {
            heap[0] = i;
            uint32_t c = 0;
            for (;;) {
                uint32_t s = c, lc = 2 * c + 1, rc = lc + 1;
                if (lc < hn && DUR(heap[lc]) < DUR(heap[s]))
                    s = lc;
                if (rc < hn && DUR(heap[rc]) < DUR(heap[s]))
                    s = rc;
                if (s == c)
                    break;
                uint64_t t = heap[c];
                heap[c] = heap[s];
                heap[s] = t;
                c = s;
            }
        }
    }
    /* Longest first: pop the heap from the back. */
    uint64_t *sorted = malloc(((size_t)hn + 1) * sizeof *sorted);
    if (!sorted) {
        free(heap);
        return -1;
    }
    for (uint32_t k = hn; k > 0; k--) {
        sorted[k - 1] = heap[0];
        heap[0] = heap[--hn];
        uint32_t c = 0;
        for (;;) {
            uint32_t s = c, lc = 2 * c + 1, rc = lc + 1;
            if (lc < hn && DUR(heap[lc]) < DUR(heap[s]))
                s = lc;
            if (rc < hn && DUR(heap[rc]) < DUR(heap[s]))
                s = rc;
            if (s == c)
                break;
            uint64_t t = heap[c];
            heap[c] = heap[s];
            heap[s] = t;
            c = s;
        }
    }
#undef DUR
    uint32_t shown = (uint32_t)(matched < limit ? matched : limit);
    fprintf(out, "{\"loc\":%" PRIu32 ",\"matched\":%" PRIu64 ",\"i\":[", q->loc, matched);
    for (uint32_t k = 0; k < shown; k++) {
        const vinst *v = &in[sorted[k]];
        fprintf(out, "%s%" PRId64 ",%" PRId64 ",%" PRIu32 ",%" PRIu32, k ? "," : "", v->s, v->e, v->track, v->depth);
    }
    fputs("]}", out);
    free(sorted);
    free(heap);
    return 0;
}

int mprof__vindex_answer(const mprof_vindex *x, const mprof_vquery *q, FILE *out, char *err, size_t errlen)
{
    int rc;
    switch (q->kind) {
    case MPROF_VQ_META:
        rc = fwrite(x->map + x->h->meta_off, 1, x->h->meta_len, out) == x->h->meta_len ? 0 : -1;
        break;
    case MPROF_VQ_ZONES:
        rc = answer_zones(x, q, out);
        break;
    case MPROF_VQ_PLOTS:
        rc = answer_plots(x, q, out);
        break;
    case MPROF_VQ_MESSAGES:
        rc = answer_messages(x, q, out);
        break;
    case MPROF_VQ_FRAMES:
        rc = answer_frames(x, q, out);
        break;
    case MPROF_VQ_STATS:
        rc = answer_stats(x, q, out);
        break;
    case MPROF_VQ_HIST:
        return answer_hist(x, q, out, err, errlen);
    case MPROF_VQ_INSTANCES:
        return answer_instances(x, q, out, err, errlen);
    case MPROF_VQ_IMAGE:
        return answer_image(x, q, out, err, errlen);
    default:
        rc = mprof__vsys_answer(x->map + x->h->sys_off, x->h->sys_len, q, out, err, errlen);
        if (rc == 1)
            snprintf(err, errlen, "not a query");
        return rc ? -1 : 0;
    }
    if (rc != 0)
        snprintf(err, errlen, "out of memory or write error");
    return rc;
}
