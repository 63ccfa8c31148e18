/*
 * gpu.c - the GPU pass of `mprof report --gpu`: GPU zones joined from their CPU and GPU sides.
 *
 * A GPU zone arrives in pieces, in any order: GPU_ZONE_BEGIN and GPU_ZONE_END (CPU time of
 * submission, query ids), and two GPU_TIME records (GPU ticks), which may come frames later or,
 * across threads, even before the begin in file order. Each context keeps one slot per query
 * pair, filled as pieces come and emptied when the zone is complete (ids are reused only after
 * both timestamps returned, so a slot never mixes two zones; a piece that would, means the older
 * zone lost a record and it is counted as incomplete). Memory is per context, per query pair in
 * flight, per zone name and per frame, never per event. Query pairs and source locations come
 * from the file, so both are found through maps, not used as array indices: a corrupt capture
 * with huge ids costs nothing, and a pair past MAX_PAIRS is refused and counted.
 *
 * GPU ticks become CPU nanoseconds through the context's calibrations (GPU_CALIBRATE pairs, kept
 * per context: one a second at most, so few): between two of them by linear interpolation, which
 * follows the drift of the GPU clock against the CPU clock; outside them from the nearest one
 * with the nominal period: cpu_ns = cal_cpu_ns + (gpu - cal_gpu) * period_ns.
 * Per zone name: count, GPU duration (mean, p50, p95, max) and submit-to-start latency (GPU start
 * minus the CPU time the zone was recorded). Per frame (main frame marks): the GPU busy share,
 * the part of the frame's CPU interval during which at least one GPU zone of the context ran (the
 * union of the zones' intervals on the CPU timeline, kept merged, so overlapping or nested zones
 * count once and the share never exceeds 1), and the frames whose submitted GPU work (top-level
 * zones recorded in the frame) took longer than the frame (GPU-bound).
 */
#include "analysis/analysis.h"
#include "util/umap.h"
#include "util/grow.h"
#include "util/sorted.h"
#include "util/tool.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CTX 256
#define MAX_PAIRS (1u << 19)

enum { HAVE_BEGIN = 1, HAVE_END = 2, HAVE_T_BEGIN = 4, HAVE_T_END = 8, HAVE_ALL = 15 };

typedef struct slot {
    uint8_t have;
    uint32_t loc;
    uint32_t depth;
    uint32_t pair;      /* query id / 2 */
    uint32_t next_free; /* free list, index + 1, while unused */
    int64_t cpu_begin, cpu_end;
    int64_t gpu_begin, gpu_end;
} slot;

typedef struct zone_acc {
    char *name;       /* owned copy */
    uint64_t count;
    double dur_sum, lat_sum;
    mprof_hist dur;   /* ns */
    mprof_hist lat;   /* ns, negative values (calibration error) counted as 0 */
    int64_t lat_min;
} zone_acc;

typedef struct gctx {
    int seen;
    uint32_t id;
    char name[128];
    int api;
    double period_ns;
    uint64_t n_cal;
    int have_cal;
    int64_t cal_gpu, cal_cpu_ns; /* the latest */
    int64_t (*cals)[2];          /* {gpu, cpu_ns}, increasing in gpu */
    uint32_t n_cals, cap_cals;
    slot *slots;                /* zones in flight; unused ones are on the free list */
    uint32_t n_slots, cap_slots, free_slot; /* free_slot: free list head, index + 1 */
    mprof_umap slot_by_pair;    /* pair + 1 -> slots index */
    uint64_t ids_refused;       /* pieces with a query id past MAX_PAIRS pairs */
    uint64_t n_corrupt;         /* zones whose GPU times overflow, periods out of range */
    uint32_t *depth; /* per thread: open zones of this context */
    uint32_t n_depth;
    zone_acc *zones;
    uint32_t n_zones, cap_zones;
    mprof_umap zone_by_loc; /* srcloc id + 1 -> zones index + 1 */
    double *frame_gpu_ns; /* per frame index (see frame_of): GPU time submitted in the frame */
    uint32_t n_frames;
    int64_t (*busy)[2];   /* union of the zones' GPU intervals, CPU ns: sorted, disjoint */
    uint32_t n_busy, cap_busy;
    int busy_oom;
    uint64_t complete, incomplete;
} gctx;

typedef struct gpu_state {
    gctx *ctx[MAX_CTX];
    int64_t *marks; /* main frame marks, ns */
    uint32_t n_marks, cap_marks;
    uint64_t queries_lost;
    /* results, per context, filled by finish */
} gpu_state;

static const char *api_name(int api)
{
    switch (api) {
    case 1:
        return "Vulkan";
    case 2:
        return "OpenGL";
    case 3:
        return "CUDA";
    default:
        return "GPU";
    }
}

/* Grows arr (zero-filled) so that arr[idx] exists. Indices come from the capture, so a corrupt
 * one is refused rather than allocated for: -1 past 1 << 24 or when out of memory. */
static gctx *get_ctx(gpu_state *s, uint64_t id)
{
    if (id == 0 || id >= MAX_CTX)
        return NULL;
    if (!s->ctx[id]) {
        s->ctx[id] = calloc(1, sizeof(gctx));
        if (!s->ctx[id])
            return NULL;
        s->ctx[id]->id = (uint32_t)id;
        s->ctx[id]->period_ns = 1.0;
    }
    return s->ctx[id];
}

static void *gpu_create(mprof_analysis *a)
{
    (void)a;
    return calloc(1, sizeof(gpu_state));
}

static void gpu_destroy(void *p)
{
    gpu_state *s = p;
    if (!s)
        return;
    for (int i = 0; i < MAX_CTX; i++) {
        gctx *c = s->ctx[i];
        if (!c)
            continue;
        for (uint32_t z = 0; z < c->n_zones; z++) {
            mprof_hist_free(&c->zones[z].dur);
            mprof_hist_free(&c->zones[z].lat);
            free(c->zones[z].name);
        }
        free(c->zones);
        free(c->slots);
        mprof_umap_free(&c->slot_by_pair);
        free(c->depth);
        mprof_umap_free(&c->zone_by_loc);
        free(c->frame_gpu_ns);
        free(c->busy);
        free(c->cals);
        free(c);
    }
    free(s->marks);
    free(s);
}

/* Frame index of a CPU time: k when mark[k-1] <= t < mark[k] (frame k spans those marks);
 * 0 before the first mark; n_marks after the last (a frame not closed yet). */
static uint32_t frame_of(const gpu_state *s, int64_t t)
{
    return (uint32_t)mprof_first_after(s->marks, s->n_marks, t);
}

/* Caches srcloc loc -> zones index + 1 (a cache: nothing is lost if out of memory). */
static void cache_loc(gctx *c, uint32_t *cached, uint32_t loc, uint32_t zone)
{
    if (cached)
        *cached = zone;
    else
        (void)mprof_umap_put(&c->zone_by_loc, (uint64_t)loc + 1, zone);
}

static zone_acc *zone_for(gctx *c, const mprof_reader *r, uint32_t loc)
{
    /* The reader's tables may be redefined and reallocated as the capture goes on: names are
     * copied, and a cached mapping is used only while the name still matches. */
    const mprof_srcloc_def *d = mprof_reader_srcloc(r, loc);
    const char *name = d && d->name ? d->name : "?";
    uint32_t *cached = mprof_umap_get(&c->zone_by_loc, (uint64_t)loc + 1);
    if (cached && strcmp(c->zones[*cached - 1].name, name) == 0)
        return &c->zones[*cached - 1];
    for (uint32_t i = 0; i < c->n_zones; i++) {
        if (strcmp(c->zones[i].name, name) == 0) {
            cache_loc(c, cached, loc, i + 1);
            return &c->zones[i];
        }
    }
    if (MPROF_GROW(c->zones, c->cap_zones, c->n_zones + 1, 16) != 0)
        return NULL;
    char *copy = malloc(strlen(name) + 1);
    if (!copy)
        return NULL;
    strcpy(copy, name);
    zone_acc *z = &c->zones[c->n_zones++];
    memset(z, 0, sizeof *z);
    z->name = copy;
    z->lat_min = INT64_MAX;
    cache_loc(c, cached, loc, c->n_zones);
    return z;
}

/* a - b as a double, exact while it fits in int64_t (GPU ticks come from the file). */
static double diff_f(int64_t a, int64_t b)
{
    int64_t d;
    if (__builtin_sub_overflow(a, b, &d))
        return (double)a - (double)b;
    return (double)d;
}

/* v clamped to [0, 2^63) (NaN gives 0): converting a double out of range is undefined. */
static uint64_t clamp_u63(double v)
{
    if (!(v > 0))
        return 0;
    return v < 0x1p63 ? (uint64_t)v : (uint64_t)INT64_MAX;
}

/* v clamped to [-2^63, 2^63). */
static int64_t clamp_i64(double v)
{
    if (!(v < 0x1p63))
        return INT64_MAX;
    return v >= -0x1p63 ? (int64_t)v : INT64_MIN;
}

static double to_cpu_ns(const gctx *c, int64_t gpu)
{
    if (c->n_cals >= 2 && gpu >= c->cals[0][0] && gpu <= c->cals[c->n_cals - 1][0]) {
        uint32_t lo = 0, hi = c->n_cals - 1; /* cals[lo].gpu <= gpu <= cals[hi].gpu */
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (c->cals[mid][0] <= gpu)
                lo = mid;
            else
                hi = mid;
        }
        double g0 = (double)c->cals[lo][0], g1 = (double)c->cals[hi][0];
        double c0 = (double)c->cals[lo][1], c1 = (double)c->cals[hi][1];
        if (g1 > g0)
            return c0 + ((double)gpu - g0) * (c1 - c0) / (g1 - g0);
        return c0;
    }
    if (c->n_cals >= 1 && gpu < c->cals[0][0])
        return (double)c->cals[0][1] + diff_f(gpu, c->cals[0][0]) * c->period_ns;
    return (double)c->cal_cpu_ns + diff_f(gpu, c->cal_gpu) * c->period_ns;
}

/* Adds [b, e) to the context's busy union. Intervals mostly arrive in time order, so this is
 * usually an append or a merge with the last one. */
static void busy_add(gctx *c, int64_t b, int64_t e)
{
    if (e <= b || c->busy_oom)
        return;
    uint32_t lo = 0, hi = c->n_busy; /* first interval that ends at or after b */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->busy[mid][1] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t end = lo; /* intervals [lo, end) overlap or touch [b, e) */
    while (end < c->n_busy && c->busy[end][0] <= e)
        end++;
    if (end > lo) {
        if (c->busy[lo][0] < b)
            b = c->busy[lo][0];
        if (c->busy[end - 1][1] > e)
            e = c->busy[end - 1][1];
        c->busy[lo][0] = b;
        c->busy[lo][1] = e;
        memmove(&c->busy[lo + 1], &c->busy[end], (size_t)(c->n_busy - end) * sizeof *c->busy);
        c->n_busy -= end - lo - 1;
        return;
    }
    if (c->n_busy == c->cap_busy) {
        uint32_t nc = c->cap_busy ? c->cap_busy * 2 : 64;
        void *p = nc > (1u << 26) ? NULL : realloc(c->busy, (size_t)nc * sizeof *c->busy);
        if (!p) {
            c->busy_oom = 1; /* the share then falls back to submitted time, capped at 1 */
            return;
        }
        c->busy = p;
        c->cap_busy = nc;
    }
    memmove(&c->busy[lo + 1], &c->busy[lo], (size_t)(c->n_busy - lo) * sizeof *c->busy);
    c->busy[lo][0] = b;
    c->busy[lo][1] = e;
    c->n_busy++;
}

/* Returns slot z to the free list. */
static void slot_release(gctx *c, slot *z)
{
    uint32_t i = (uint32_t)(z - c->slots);
    mprof_umap_del(&c->slot_by_pair, (uint64_t)z->pair + 1);
    memset(z, 0, sizeof *z);
    z->next_free = c->free_slot;
    c->free_slot = i + 1;
}

static void complete(gpu_state *s, gctx *c, const mprof_reader *r, slot *z)
{
    int64_t ticks;
    if (__builtin_sub_overflow(z->gpu_end, z->gpu_begin, &ticks)) {
        c->n_corrupt++; /* GPU times no real clock gives */
        slot_release(c, z);
        return;
    }
    zone_acc *acc = zone_for(c, r, z->loc);
    double dur = (double)ticks * c->period_ns;
    if (dur < 0)
        dur = 0;
    c->complete++;
    if (acc) {
        acc->count++;
        acc->dur_sum += dur;
        (void)mprof_hist_add(&acc->dur, clamp_u63(dur));
        if (c->have_cal) {
            double lat = to_cpu_ns(c, z->gpu_begin) - (double)z->cpu_begin;
            acc->lat_sum += lat;
            if (clamp_i64(lat) < acc->lat_min)
                acc->lat_min = clamp_i64(lat);
            (void)mprof_hist_add(&acc->lat, clamp_u63(lat));
        }
    }
    if (c->have_cal)
        busy_add(c, clamp_i64(to_cpu_ns(c, z->gpu_begin)), clamp_i64(to_cpu_ns(c, z->gpu_end)));
    if (z->depth == 0 && s->n_marks > 0) {
        uint32_t f = frame_of(s, z->cpu_begin);
        if (mprof_grow_zeroed((void **)&c->frame_gpu_ns, &c->n_frames, f, sizeof *c->frame_gpu_ns, 1u << 24) == 0)
            c->frame_gpu_ns[f] += dur;
    }
    slot_release(c, z);
}

/* The slot of query's pair, taken from the free list if the pair has none yet. NULL for a pair
 * past MAX_PAIRS (counted) or when out of memory. The pointer is valid until the next call. */
static slot *slot_for(gctx *c, uint64_t query)
{
    uint64_t pair = query / 2;
    if (pair >= MAX_PAIRS) {
        c->ids_refused++;
        return NULL;
    }
    uint32_t *at = mprof_umap_get(&c->slot_by_pair, pair + 1);
    if (at)
        return &c->slots[*at];
    uint32_t i;
    if (c->free_slot) {
        i = c->free_slot - 1;
        c->free_slot = c->slots[i].next_free;
    } else {
        if (MPROF_GROW(c->slots, c->cap_slots, c->n_slots + 1, 64) != 0)
            return NULL;
        i = c->n_slots++;
    }
    slot *z = &c->slots[i];
    memset(z, 0, sizeof *z);
    z->pair = (uint32_t)pair;
    if (mprof_umap_put(&c->slot_by_pair, pair + 1, i) != 0) {
        z->next_free = c->free_slot;
        c->free_slot = i + 1;
        return NULL;
    }
    return z;
}

/* Clears z, keeping its pair, for a zone that reuses the pair before the zone that held it
 * completed; that zone is counted as incomplete. */
static void slot_restart(gctx *c, slot *z)
{
    c->incomplete++;
    uint32_t pair = z->pair;
    memset(z, 0, sizeof *z);
    z->pair = pair;
}

/* GPU_ZONE_BEGIN, GPU_ZONE_END and GPU_TIME: the three records that fill the slot of the query
 * pair they name (context id in u[0], query in u[1]); the zone completes when it has all four
 * times. */
static void zone_record(gpu_state *s, const mprof_reader *r, const mprof_event *ev)
{
    gctx *c = get_ctx(s, ev->u[0]);
    slot *z = c ? slot_for(c, ev->u[1]) : NULL;
    if (!z)
        return;
    switch (ev->type) {
    case MPROF_EV_GPU_ZONE_BEGIN:
        if (z->have & HAVE_BEGIN)
            slot_restart(c, z);
        if (mprof_grow_zeroed((void **)&c->depth, &c->n_depth, ev->thread, sizeof *c->depth, 1u << 24))
            return;
        z->have |= HAVE_BEGIN;
        z->loc = (uint32_t)ev->u[2];
        z->cpu_begin = ev->ts_ns;
        z->depth = c->depth[ev->thread]++;
        return;
    case MPROF_EV_GPU_ZONE_END:
        if (ev->thread < c->n_depth && c->depth[ev->thread] > 0)
            c->depth[ev->thread]--;
        if (!(z->have & HAVE_BEGIN)) {
            if (!z->have)
                slot_release(c, z);
            return; /* begun before the capture */
        }
        z->have |= HAVE_END;
        z->cpu_end = ev->ts_ns;
        break;
    default: { /* GPU_TIME: u[1]'s low bit says which end of the pair */
        uint8_t bit = (ev->u[1] & 1) ? HAVE_T_END : HAVE_T_BEGIN;
        if (z->have & bit)
            slot_restart(c, z);
        z->have |= bit;
        if (bit == HAVE_T_END)
            z->gpu_end = (int64_t)ev->u[2];
        else
            z->gpu_begin = (int64_t)ev->u[2];
        break;
    }
    }
    if (z->have == HAVE_ALL)
        complete(s, c, r, z);
}

static void gpu_event(void *p, mprof_analysis *a, const mprof_event *ev)
{
    gpu_state *s = p;
    const mprof_reader *r = mprof_analysis_reader(a);
    switch (ev->type) {
    case MPROF_EV_FRAME_MARK:
        if (ev->u[0] != 0)
            return; /* named frame sets are not the main loop */
        if (MPROF_GROW(s->marks, s->cap_marks, s->n_marks + 1, 256) != 0)
            return;
        /* Marks come from one thread in time order; keep the array sorted regardless. */
        if (s->n_marks && ev->ts_ns < s->marks[s->n_marks - 1])
            return;
        s->marks[s->n_marks++] = ev->ts_ns;
        return;
    case MPROF_EV_GPU_CONTEXT: {
        gctx *c = get_ctx(s, ev->u[0]);
        if (!c)
            return;
        c->seen = 1;
        const char *name = mprof_reader_string(r, (uint32_t)ev->u[1]);
        snprintf(c->name, sizeof c->name, "%s", name ? name : "?");
        c->api = (int)ev->u[2];
        double period = mprof_event_f64(ev, 3);
        /* No GPU ticks slower than a millisecond; anything else is corrupt (1 ns is assumed). */
        if (isfinite(period) && period > 0 && period <= 1e6) {
            c->period_ns = period;
        } else {
            c->period_ns = 1.0;
            c->n_corrupt++;
        }
        return;
    }
    case MPROF_EV_GPU_CALIBRATE: {
        gctx *c = get_ctx(s, ev->u[0]);
        if (!c)
            return;
        c->n_cal++;
        c->have_cal = 1;
        c->cal_gpu = (int64_t)ev->u[1];
        c->cal_cpu_ns = ev->ts_ns;
        /* Keep the series for interpolation while it stays increasing in both clocks; a
         * repeated announcement of the same pair (a new session) is skipped, and anything else
         * (a clock reset) starts the series again. */
        if (c->n_cals && c->cals[c->n_cals - 1][0] == c->cal_gpu)
            return;
        if (c->n_cals && (c->cal_gpu < c->cals[c->n_cals - 1][0] ||
                          c->cal_cpu_ns <= c->cals[c->n_cals - 1][1]))
            c->n_cals = 0;
        if (c->n_cals == c->cap_cals) {
            uint32_t nc = c->cap_cals ? c->cap_cals * 2 : 16;
            if (nc > (1u << 20))
                return;
            int64_t(*grown)[2] = realloc(c->cals, nc * sizeof *grown);
            if (!grown)
                return;
            c->cals = grown;
            c->cap_cals = nc;
        }
        c->cals[c->n_cals][0] = c->cal_gpu;
        c->cals[c->n_cals][1] = c->cal_cpu_ns;
        c->n_cals++;
        return;
    }
    case MPROF_EV_GPU_ZONE_BEGIN:
    case MPROF_EV_GPU_ZONE_END:
    case MPROF_EV_GPU_TIME:
        zone_record(s, r, ev);
        return;
    default:
        return;
    }
}

static void gpu_finish(void *p, mprof_analysis *a)
{
    gpu_state *s = p;
    const char *lost = mprof_reader_end_info(mprof_analysis_reader(a), "gpu_queries_lost");
    s->queries_lost = lost ? strtoull(lost, NULL, 10) : 0;
    for (int i = 0; i < MAX_CTX; i++) {
        gctx *c = s->ctx[i];
        if (!c)
            continue;
        /* Zones whose pieces never all arrived (still in flight when the capture ended). */
        for (uint32_t k = 0; k < c->n_slots; k++)
            if (c->slots[k].have & HAVE_BEGIN)
                c->incomplete++;
    }
}

typedef struct frame_stats {
    uint32_t frames;     /* complete frames (between two marks) */
    uint32_t gpu_bound;
    unsigned char *bound; /* per frame: submitted GPU work exceeded the frame (caller frees) */
    double share_mean, share_p50, share_p95, share_max;
    double *share;       /* per frame, frames entries (caller frees) */
} frame_stats;

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static frame_stats frames_of(const gpu_state *s, const gctx *c)
{
    frame_stats f;
    memset(&f, 0, sizeof f);
    if (s->n_marks < 2)
        return f;
    f.frames = s->n_marks - 1;
    f.share = calloc(f.frames, sizeof *f.share);
    f.bound = calloc(f.frames, 1);
    double *sorted = calloc(f.frames, sizeof *sorted);
    if (!f.share || !sorted || !f.bound) {
        free(f.share);
        free(f.bound);
        free(sorted);
        memset(&f, 0, sizeof f);
        return f;
    }
    double sum = 0;
    int use_union = c->have_cal && !c->busy_oom;
    uint32_t b = 0; /* sweep over the busy union, both sorted by time */
    for (uint32_t k = 1; k < s->n_marks; k++) {
        int64_t fs = s->marks[k - 1], fe = s->marks[k];
        double cpu = (double)(fe - fs);
        double gpu = k < c->n_frames ? c->frame_gpu_ns[k] : 0.0;
        double share;
        if (use_union) {
            while (b < c->n_busy && c->busy[b][1] <= fs)
                b++;
            double busy = 0;
            for (uint32_t i = b; i < c->n_busy && c->busy[i][0] < fe; i++) {
                int64_t lo = c->busy[i][0] > fs ? c->busy[i][0] : fs;
                int64_t hi = c->busy[i][1] < fe ? c->busy[i][1] : fe;
                if (hi > lo)
                    busy += (double)(hi - lo);
            }
            share = cpu > 0 ? busy / cpu : 0.0;
        } else {
            share = cpu > 0 ? gpu / cpu : 0.0; /* no calibration: submitted time, capped */
        }
        if (share > 1.0)
            share = 1.0;
        f.share[k - 1] = share;
        sorted[k - 1] = share;
        sum += share;
        f.bound[k - 1] = gpu > cpu;
        f.gpu_bound += gpu > cpu;
    }
    qsort(sorted, f.frames, sizeof *sorted, cmp_double);
    f.share_mean = sum / f.frames;
    f.share_p50 = mprof_quantile_sorted(sorted, f.frames, 0.50);
    f.share_p95 = mprof_quantile_sorted(sorted, f.frames, 0.95);
    f.share_max = sorted[f.frames - 1];
    free(sorted);
    return f;
}

static double lat_mean(const zone_acc *z)
{
    return z->lat.n ? z->lat_sum / (double)z->lat.n : 0.0;
}

static void gpu_print_text(void *p, mprof_analysis *a, FILE *out, int top_n)
{
    (void)a;
    gpu_state *s = p;
    fprintf(out, "\nGPU\n");
    int any = 0;
    for (int i = 0; i < MAX_CTX; i++) {
        gctx *c = s->ctx[i];
        if (!c || !c->seen)
            continue;
        any = 1;
        char e[256];
        fprintf(out, "  %s context \"%s\" (id %u): %" PRIu64 " zones, %" PRIu64
                     " incomplete, %" PRIu64 " calibrations, tick %.4g ns\n",
                api_name(c->api), tool_text(c->name, e, sizeof e), c->id, c->complete, c->incomplete,
                c->n_cal,
                c->period_ns);
        if (!c->have_cal)
            fprintf(out, "    no calibration: GPU times cannot be placed on the CPU timeline\n");
        if (c->n_corrupt)
            fprintf(out, "    %" PRIu64 " records ignored as corrupt (GPU times that overflow, a "
                         "tick period out of range)\n",
                    c->n_corrupt);
        if (c->ids_refused)
            fprintf(out, "    %" PRIu64 " records refused: query id past the %u pairs a context may "
                         "use (a corrupt capture)\n",
                    c->ids_refused, MAX_PAIRS);
        fprintf(out, "    %-28s %8s %10s %10s %10s %10s   %s\n", "zone", "count", "mean us",
                "p50 us", "p95 us", "max us", "submit->start mean/p50/p95 us");
        uint32_t shown = 0;
        for (uint32_t z = 0; z < c->n_zones && (int)shown < top_n; z++, shown++) {
            const zone_acc *x = &c->zones[z];
            if (!x->count)
                continue;
            fprintf(out, "    %-28.28s %8" PRIu64 " %10.2f %10.2f %10.2f %10.2f   %.1f / %.1f / %.1f\n",
                    tool_text(x->name, e, 29), x->count, x->dur_sum / (double)x->count / 1e3,
                    (double)mprof_hist_quantile(&x->dur, 0.5) / 1e3,
                    (double)mprof_hist_quantile(&x->dur, 0.95) / 1e3, (double)x->dur.max / 1e3,
                    lat_mean(x) / 1e3, (double)mprof_hist_quantile(&x->lat, 0.5) / 1e3,
                    (double)mprof_hist_quantile(&x->lat, 0.95) / 1e3);
        }
        frame_stats f = frames_of(s, c);
        if (f.frames) {
            fprintf(out, "    frames %u: GPU busy share mean %.1f %%, p50 %.1f %%, p95 %.1f %%, "
                         "max %.1f %%; GPU-bound frames %u%s\n",
                    f.frames, 100 * f.share_mean, 100 * f.share_p50, 100 * f.share_p95,
                    100 * f.share_max, f.gpu_bound,
                    f.gpu_bound ? "  <-- GPU work submitted in a frame took longer than the frame" : "");
        } else {
            fprintf(out, "    no main frame marks: per-frame GPU share not computed\n");
        }
        free(f.share);
        free(f.bound);
    }
    if (!any)
        fprintf(out, "  no GPU contexts in this capture\n");
    fprintf(out, "  GPU queries lost: %" PRIu64 "%s\n", s->queries_lost,
            s->queries_lost ? "  <-- zones dropped: collect more often or use more queries" : "");
}

static void json_hist(mprof_json *j, const char *key, double mean, const mprof_hist *h)
{
    mprof_json_obj_begin(j, key);
    mprof_json_f64(j, "mean", mean);
    mprof_json_u64(j, "p50", mprof_hist_quantile(h, 0.5));
    mprof_json_u64(j, "p95", mprof_hist_quantile(h, 0.95));
    mprof_json_u64(j, "max", h->max);
    mprof_json_obj_end(j);
}

static void gpu_print_json(void *p, mprof_analysis *a, mprof_json *j)
{
    (void)a;
    gpu_state *s = p;
    mprof_json_obj_begin(j, "gpu");
    mprof_json_u64(j, "queries_lost", s->queries_lost);
    mprof_json_arr_begin(j, "contexts");
    for (int i = 0; i < MAX_CTX; i++) {
        gctx *c = s->ctx[i];
        if (!c || !c->seen)
            continue;
        mprof_json_obj_begin(j, NULL);
        mprof_json_u64(j, "id", c->id);
        mprof_json_str(j, "name", c->name);
        mprof_json_str(j, "api", api_name(c->api));
        mprof_json_f64(j, "period_ns", c->period_ns);
        mprof_json_u64(j, "calibrations", c->n_cal);
        mprof_json_u64(j, "zones_complete", c->complete);
        mprof_json_u64(j, "zones_incomplete", c->incomplete);
        mprof_json_u64(j, "query_ids_refused", c->ids_refused);
        mprof_json_u64(j, "corrupt_records", c->n_corrupt);
        mprof_json_arr_begin(j, "zones");
        for (uint32_t z = 0; z < c->n_zones; z++) {
            const zone_acc *x = &c->zones[z];
            if (!x->count)
                continue;
            mprof_json_obj_begin(j, NULL);
            mprof_json_str(j, "name", x->name);
            mprof_json_u64(j, "count", x->count);
            json_hist(j, "gpu_ns", x->dur_sum / (double)x->count, &x->dur);
            json_hist(j, "submit_to_start_ns", lat_mean(x), &x->lat);
            mprof_json_obj_end(j);
        }
        mprof_json_arr_end(j);
        frame_stats f = frames_of(s, c);
        mprof_json_obj_begin(j, "frames");
        mprof_json_u64(j, "count", f.frames);
        mprof_json_u64(j, "gpu_bound", f.gpu_bound);
        mprof_json_f64(j, "busy_share_mean", f.share_mean);
        mprof_json_f64(j, "busy_share_p50", f.share_p50);
        mprof_json_f64(j, "busy_share_p95", f.share_p95);
        mprof_json_f64(j, "busy_share_max", f.share_max);
        mprof_json_arr_begin(j, "busy_share");
        for (uint32_t k = 0; k < f.frames; k++)
            mprof_json_f64(j, NULL, round(f.share[k] * 1e4) / 1e4);
        mprof_json_arr_end(j);
        mprof_json_arr_begin(j, "gpu_bound_frames");
        for (uint32_t k = 0; k < f.frames; k++)
            if (f.bound[k])
                mprof_json_u64(j, NULL, k + 1);
        mprof_json_arr_end(j);
        mprof_json_obj_end(j);
        free(f.share);
        free(f.bound);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
    mprof_json_obj_end(j);
}

/* Zones do not concern it: the events of the batch other than zones, in file order. */
static void gpu_batch(void *state, mprof_analysis *a, const mprof_batch *b)
{
    for (uint32_t i = 0; i < b->n_ev; i++)
        gpu_event(state, a, &b->ev[i]);
}

const mprof_pass_vtbl mprof__pass_gpu = {
    .name = "gpu",
    .always = false,
    MPROF_PASS_HOOKS(gpu),
    .batch = gpu_batch,
    .beside = true,
};
