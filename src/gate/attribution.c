/*
 * attribution.c - where a slower build spent the time: every zone of both sides with its mean
 * self time per frame on each side, the zones that grew significantly first.
 *
 * A zone is named only when it grew by more than the runs of each side differ among themselves
 * (a run-level test), and, where both sides have its per-frame times, by the same
 * correlation-aware rank test the frames get: a burst of machine noise that slows a few hundred
 * consecutive frames of one run is not evidence of a code change. With system tracing on every
 * run, zones are compared by on-CPU self time, so a zone whose thread waited is measured by what
 * it ran.
 */
#include "gate/internal.h"
#include "gate/stats.h"
#include "analysis/zone_key.h"
#include "util/tool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How zones are paired across runs and sides: the one place that says when two zone entries
 * of two exports are the same zone. Zone identity (zone_key.h): name and function; an export
 * without functions matches by name. */
static int same_zone(const mprof_frames_zone *a, const mprof_frames_zone *b)
{
    mprof_zone_key ka = {a->name, a->function, NULL, 0}, kb = {b->name, b->function, NULL, 0};
    return mprof__zone_key_same(&ka, &kb);
}

/* The zone of run that is the same zone as key, or NULL when the run does not list it. */
static const mprof_frames_zone *find_zone(const mprof_frames_run *run, const mprof_frames_zone *key)
{
    for (size_t k = 0; k < run->n_zones; k++)
        if (same_zone(&run->zones[k], key))
            return &run->zones[k];
    return NULL;
}

/* Mean per-frame time of a zone over a side, and the pooled per-frame self times when every run
 * has them. A run that does not list the zone contributes zero time (exports list every zone's
 * totals). With per-frame data the self mean is trimmed: the zone's slowest TRIM_FRACTION of
 * frames are left out, so that a preemption or interrupt landing inside a small zone (a few
 * milliseconds in one frame) does not outweigh a real, steady slowdown of a large one. With
 * on_cpu, the per-frame values are on-CPU self time (self less selfOffCpuPerFrameMs): a zone
 * that waits (its thread blocked or preempted) is measured by what it ran, not by how long. */
#define TRIM_FRACTION 0.01
typedef struct zone_side {
    double self_ms, incl_ms, off_ms;
    double *frames; /* pooled per-frame self ms (on-CPU with on_cpu), or NULL */
    size_t n;
    double *run_means; /* per run with frames: the zone's mean self ms per frame (on-CPU where
                          the run has per-frame data and on_cpu; else its totals / frames) */
    size_t n_runs;
} zone_side;

static void zone_side_free(zone_side *z)
{
    free(z->frames);
    free(z->run_means);
}

static double zone_frame_ms(const mprof_frames_zone *z, size_t f, int on_cpu)
{
    if (!z)
        return 0.0;
    double v = z->self_ms[f];
    if (on_cpu && z->self_off_ms) {
        v -= z->self_off_ms[f];
        if (v < 0.0)
            v = 0.0;
    }
    return v;
}

static int zone_on_side(const mprof_frames_runs *s, const mprof_frames_zone *key, int on_cpu,
                        zone_side *out)
{
    memset(out, 0, sizeof *out);
    size_t total = 0;
    int per_frame = 1;
    double self_sum = 0, incl_sum = 0, off_sum = 0, frames_sum = 0;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_frames_run *run = &s->runs[i];
        total += run->n_frames;
        const mprof_frames_zone *z = find_zone(run, key);
        if (!z) {
            frames_sum += (double)run->n_frames;
            continue;
        }
        if (z->self_ms) {
            for (size_t f = 0; f < run->n_frames; f++) {
                self_sum += z->self_ms[f];
                incl_sum += z->incl_ms ? z->incl_ms[f] : z->self_ms[f];
                off_sum += on_cpu && z->self_off_ms ? z->self_off_ms[f] : 0.0;
            }
            frames_sum += (double)run->n_frames;
        } else {
            per_frame = 0;
            self_sum += z->self_total_ms;
            incl_sum += z->incl_total_ms;
            frames_sum += (double)z->total_frames;
        }
    }
    if (frames_sum > 0) {
        out->self_ms = self_sum / frames_sum;
        out->incl_ms = incl_sum / frames_sum;
        out->off_ms = off_sum / frames_sum;
    }
    /* One mean per run, for the run-level test (the same runs as the frames' run boundaries). */
    out->run_means = malloc((s->n_runs ? s->n_runs : 1) * sizeof *out->run_means);
    if (!out->run_means)
        return -1;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_frames_run *run = &s->runs[i];
        if (run->n_frames == 0)
            continue;
        const mprof_frames_zone *z = find_zone(run, key);
        double m = 0.0;
        if (z && z->self_ms) {
            for (size_t f = 0; f < run->n_frames; f++)
                m += zone_frame_ms(z, f, on_cpu);
            m /= (double)run->n_frames;
        } else if (z && z->total_frames) {
            m = z->self_total_ms / (double)z->total_frames;
        }
        out->run_means[out->n_runs++] = m;
    }
    if (!per_frame || total == 0)
        return 0;
    out->frames = malloc(total * sizeof *out->frames);
    if (!out->frames)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_frames_run *run = &s->runs[i];
        const mprof_frames_zone *z = find_zone(run, key);
        for (size_t f = 0; f < run->n_frames; f++)
            out->frames[k++] = zone_frame_ms(z, f, on_cpu);
    }
    out->n = k;
    double *sorted = malloc(k * sizeof *sorted);
    if (!sorted)
        return -1;
    memcpy(sorted, out->frames, k * sizeof *sorted);
    mprof__sort_doubles(sorted, k);
    size_t keep = k - (size_t)floor((double)k * TRIM_FRACTION);
    double sum = 0;
    for (size_t i = 0; i < keep; i++)
        sum += sorted[i];
    out->self_ms = sum / (double)keep;
    free(sorted);
    return 0;
}

/* Growths past the threshold's share of the frame first, then the other significant growths
 * (largest first), then the rest by growth. */
static int cmp_attrib(const void *pa, const void *pb)
{
    const mprof_gate_attrib *a = pa, *b = pb;
    if (a->exceeds != b->exceeds)
        return a->exceeds ? -1 : 1;
    if (a->significant != b->significant)
        return a->significant ? -1 : 1;
    if (a->delta_ms != b->delta_ms)
        return a->delta_ms < b->delta_ms ? 1 : -1;
    return strcmp(a->name, b->name);
}

/* 1 when every run of both sides carries selfOffCpuPerFrameMs for every zone with per-frame
 * self times: then zones are compared by on-CPU self time. */
static int zones_have_off_cpu(const mprof_frames_runs *b, const mprof_frames_runs *c)
{
    const mprof_frames_runs *sides[2] = {b, c};
    int any = 0;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->n_runs; i++)
            for (size_t k = 0; k < sides[s]->runs[i].n_zones; k++) {
                const mprof_frames_zone *z = &sides[s]->runs[i].zones[k];
                if (z->self_ms && !z->self_off_ms)
                    return 0;
                any |= z->self_off_ms != NULL;
            }
    return any;
}

/* One key per distinct zone of both sides, the first entry met standing for the zone, in *out
 * (n_out of them). Returns 0, or -1 out of memory. */
static int distinct_zones(const mprof_frames_runs *const sides[2], const mprof_frames_zone ***out,
                          size_t *n_out)
{
    const mprof_frames_zone **keys = NULL;
    size_t n = 0, cap = 0;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->n_runs; i++)
            for (size_t k = 0; k < sides[s]->runs[i].n_zones; k++) {
                const mprof_frames_zone *z = &sides[s]->runs[i].zones[k];
                int seen = 0;
                for (size_t j = 0; j < n && !seen; j++)
                    seen = same_zone(keys[j], z);
                if (seen)
                    continue;
                if (n == cap) {
                    cap = cap ? cap * 2 : 16;
                    const mprof_frames_zone **nk = realloc(keys, cap * sizeof *nk);
                    if (!nk) {
                        free(keys);
                        return -1;
                    }
                    keys = nk;
                }
                keys[n++] = z;
            }
    *out = keys;
    *n_out = n;
    return 0;
}

/* Run boundaries of a side's pooled per-frame zone values (runs without frames add none), as
 * mprof_sample_runs wants them. NULL out of memory. */
static size_t *run_starts(const mprof_frames_runs *s, size_t *out_runs)
{
    size_t *st = malloc((s->n_runs + 1) * sizeof *st);
    *out_runs = 0;
    if (!st)
        return NULL;
    st[0] = 0;
    for (size_t i = 0; i < s->n_runs; i++)
        if (s->runs[i].n_frames) {
            st[*out_runs + 1] = st[*out_runs] + s->runs[i].n_frames;
            (*out_runs)++;
        }
    return st;
}

/* The attribution row of zone key: its figures on both sides and whether it grew significantly.
 * starts/runs are the sides' run boundaries. The row borrows the key's name and function.
 * Returns 0, or -1 out of memory. */
static int score_zone(const mprof_frames_runs *b, const mprof_frames_runs *c,
                      const mprof_frames_zone *key, int on_cpu, size_t *const starts[2],
                      const size_t runs[2], const mprof_gate_opts *o, mprof_gate_attrib *a)
{
    zone_side zb, zc;
    memset(&zc, 0, sizeof zc);
    if (zone_on_side(b, key, on_cpu, &zb) || zone_on_side(c, key, on_cpu, &zc)) {
        zone_side_free(&zb);
        zone_side_free(&zc);
        return -1;
    }
    a->name = key->name;
    a->function = key->function;
    a->base_ms = zb.self_ms;
    a->cur_ms = zc.self_ms;
    a->base_incl_ms = zb.incl_ms;
    a->cur_incl_ms = zc.incl_ms;
    a->base_off_ms = zb.off_ms;
    a->cur_off_ms = zc.off_ms;
    a->delta_ms = zc.self_ms - zb.self_ms;
    a->delta_pct = zb.self_ms > 0 ? 100.0 * (zc.self_ms / zb.self_ms - 1.0)
                                  : (zc.self_ms > 0 ? INFINITY : 0.0);
    a->p = 1.0;
    if (zb.frames && zc.frames && zb.n && zc.n) {
        a->per_frame = 1;
        a->on_cpu = on_cpu;
        /* The same correlation-aware test as the frames: a zone slowed by a burst of noise over
         * a few hundred consecutive frames is not evidence of a code change. */
        size_t blocks = o->blocks >= 2 ? (size_t)o->blocks : 0;
        mprof_sample_runs sb = {zb.frames, starts[0], runs[0], blocks};
        mprof_sample_runs sc = {zc.frames, starts[1], runs[1], blocks};
        mprof_mwu m;
        if (mprof__mann_whitney_runs(&sb, &sc, &m) == 0)
            a->p = m.p_greater;
    }
    /* The run-level test: the zone's mean per run must have grown by more than the runs of each
     * side differ among themselves (a frame-level test alone takes a burst of noise in one run
     * for evidence, as it would for the frames). It is also what decides a zone that lacks
     * per-frame data on some run (a zone too small in one build to be among the export's
     * per-frame zones, then large in the other). */
    a->run_significant = mprof__runs_diff_greater(zb.run_means, zb.n_runs, zc.run_means,
                                                  zc.n_runs, o->alpha, &a->run_t);
    a->significant = a->delta_ms > 0 && a->run_significant && (!a->per_frame || a->p < o->alpha);
    zone_side_free(&zb);
    zone_side_free(&zc);
    return 0;
}

/* The top_zones rows of rows (sorted) into r->zones, with their own copies of the names; every
 * zone that exceeds the threshold's share of the frame is kept beyond top_zones. */
static int keep_top(const mprof_gate_attrib *rows, size_t n, mprof_gate_result *r)
{
    size_t keep = n < (size_t)r->opts.top_zones ? n : (size_t)r->opts.top_zones;
    while (keep < n && rows[keep].exceeds)
        keep++;
    r->zones = calloc(keep ? keep : 1, sizeof *r->zones);
    if (!r->zones)
        return -1;
    for (size_t j = 0; j < keep; j++) {
        r->zones[j] = rows[j];
        r->zones[j].name = tool_strdup(rows[j].name);
        r->zones[j].function = rows[j].function ? tool_strdup(rows[j].function) : NULL;
        r->n_zones = j + 1;
        if (!r->zones[j].name || (rows[j].function && !r->zones[j].function))
            return -1;
    }
    return 0;
}

int mprof__gate_attribute(const mprof_frames_runs *b, const mprof_frames_runs *c,
                          mprof_gate_result *r)
{
    const mprof_frames_runs *const sides[2] = {b, c};
    int on_cpu = zones_have_off_cpu(b, c);
    const mprof_frames_zone **keys;
    size_t n;
    if (distinct_zones(sides, &keys, &n))
        return -1;
    size_t runs[2];
    size_t *starts[2] = {run_starts(b, &runs[0]), run_starts(c, &runs[1])};
    mprof_gate_attrib *rows = calloc(n ? n : 1, sizeof *rows);
    int rc = rows && starts[0] && starts[1] ? 0 : -1;
    for (size_t j = 0; rc == 0 && j < n; j++)
        rc = score_zone(b, c, keys[j], on_cpu, starts, runs, &r->opts, &rows[j]);
    /* A zone that alone grew by more than the threshold's share of the frame is a regression's
     * cause on its own, whatever the frame figures say; the decision frame time is the frame
     * it is measured against (r->base_dec is set before the attribution). */
    double share_ms = r->opts.threshold_pct / 100.0 * r->base_dec.mean_ms;
    for (size_t j = 0; rc == 0 && j < n; j++)
        rows[j].exceeds = rows[j].significant && rows[j].delta_ms > share_ms;
    if (rc == 0) {
        qsort(rows, n, sizeof *rows, cmp_attrib);
        rc = keep_top(rows, n, r);
    }
    free(rows);
    free(starts[0]);
    free(starts[1]);
    free(keys);
    return rc;
}
