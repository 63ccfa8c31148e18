/*
 * diff.c - the comparison of two captures (see diff.h).
 *
 * Each capture is reduced to its per-source-location statistics (export.h), then zones are
 * paired by zone identity (zone_key.h: name and function; file, without its build directory,
 * and line only break ties), so a rebuild with moved lines or from another checkout matches. The impact of a zone is the
 * change in its time inside frames per frame, (in_b / frames_b) - (in_a / frames_a), where
 * "in" is the zone's total (recursion counted once) inside the main frames' span and frames
 * counts the frames of that span; start-up and shutdown do not move it. A zone that
 * got slower per call but runs less often can have no impact, and the sort shows first what
 * moved the frame time most. Captures without frames compare total time per second instead.
 *
 * When either capture has several processes (mprof merge), both sides' processes are listed and
 * zones pair only within a process of one name, so that a zone of the client never pairs with
 * the server's; each row says its process.
 */
#include "analysis/diff.h"
#include "analysis/zstats.h"
#include "analysis/hist.h"
#include "util/json_out.h"
#include "analysis/zone_key.h"
#include "util/tool.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct diff_row {
    const mprof_zstat *a, *b; /* NULL when only on the other side */
    double impact_ns;
} diff_row;

struct mprof_diff {
    char *path_a, *path_b;
    mprof_zstats a, b;
    diff_row *rows;
    size_t n_rows;
    int per_frame; /* impact per frame (both have frames) or per second */
    int multi;     /* either side has several processes */
};

/* The process name of a zone of side s. */
static const char *proc_name(const mprof_zstats *s, const mprof_zstat *z)
{
    return z && z->process < s->n_procs ? s->procs[z->process].name : "";
}

/* Time per frame (or per second without frames) of a zone. */
static double rate(const mprof_diff *d, const mprof_zstats *s, const mprof_zstat *z)
{
    if (!z)
        return 0.0;
    if (d->per_frame && s->span_first_ns >= 0) /* time inside frames, frames in the span */
        return (double)z->site.in_frames_ns / (double)(s->n_frames + s->n_lossy);
    if (d->per_frame)
        return (double)z->site.total_ns / (double)s->n_frames;
    return s->duration_ns > 0 ? (double)z->site.total_ns / ((double)s->duration_ns / 1e9) : 0.0;
}

static int cmp_rows(const void *x, const void *y)
{
    const diff_row *a = x, *b = y;
    double ia = fabs(a->impact_ns), ib = fabs(b->impact_ns);
    if (ia != ib)
        return ia > ib ? -1 : 1;
    const mprof_zstat *za = a->a ? a->a : a->b, *zb = b->a ? b->a : b->b;
    return strcmp(za->name, zb->name);
}

static mprof_zone_key key_of(const mprof_zstat *z)
{
    return (mprof_zone_key){z->name, z->function, z->file, z->line};
}

/* Pairs the zones of A and B as mprof__zone_key_pair does, within each process name of A:
 * pair[i] is the index in B of A's zone i, or -1. Returns 0, or -1 out of memory. */
static int pair_per_process(const mprof_diff *d, const mprof_zstat **za, const mprof_zone_key *ka,
                            size_t na, const mprof_zstat **zb, const mprof_zone_key *kb,
                            size_t nb, ptrdiff_t *pair)
{
    for (size_t i = 0; i < na; i++)
        pair[i] = -1;
    size_t *ia = malloc((na + 1) * sizeof *ia), *ib = malloc((nb + 1) * sizeof *ib);
    mprof_zone_key *sa = malloc((na + 1) * sizeof *sa), *sb = malloc((nb + 1) * sizeof *sb);
    ptrdiff_t *sp = malloc((na + 1) * sizeof *sp);
    int rc = ia && ib && sa && sb && sp ? 0 : -1;
    for (uint32_t p = 0; rc == 0 && p < d->a.n_procs; p++) {
        const char *name = d->a.procs[p].name;
        /* A name that an earlier process of A has was paired with it already. */
        int seen = 0;
        for (uint32_t q = 0; q < p && !seen; q++)
            seen = strcmp(d->a.procs[q].name, name) == 0;
        if (seen)
            continue;
        size_t n1 = 0, n2 = 0;
        for (size_t i = 0; i < na; i++)
            if (strcmp(proc_name(&d->a, za[i]), name) == 0) {
                ia[n1] = i;
                sa[n1++] = ka[i];
            }
        for (size_t k = 0; k < nb; k++)
            if (strcmp(proc_name(&d->b, zb[k]), name) == 0) {
                ib[n2] = k;
                sb[n2++] = kb[k];
            }
        if (!n1 || !n2)
            continue;
        if (mprof__zone_key_pair(sa, n1, sb, n2, sp) != 0) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < n1; i++)
            pair[ia[i]] = sp[i] >= 0 ? (ptrdiff_t)ib[sp[i]] : -1;
    }
    free(ia);
    free(ib);
    free(sa);
    free(sb);
    free(sp);
    return rc;
}

mprof_diff *mprof__diff_run(const char *path_a, const char *path_b, char *err, size_t errlen)
{
    mprof_diff *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->path_a = tool_strdup(path_a);
    d->path_b = tool_strdup(path_b);
    if (!d->path_a || !d->path_b || mprof__zstats_collect(path_a, &d->a, err, errlen) != 0 ||
        mprof__zstats_collect(path_b, &d->b, err, errlen) != 0) {
        if (!d->path_a || !d->path_b)
            snprintf(err, errlen, "out of memory");
        mprof__diff_free(d);
        return NULL;
    }
    d->per_frame = d->a.n_frames > 0 && d->b.n_frames > 0;
    size_t cap = 0;
    for (uint32_t i = 0; i < d->a.n; i++)
        cap += d->a.z[i].site.count > 0;
    for (uint32_t i = 0; i < d->b.n; i++)
        cap += d->b.z[i].site.count > 0;
    d->rows = calloc(cap + 1, sizeof *d->rows);
    if (!d->rows) {
        snprintf(err, errlen, "out of memory");
        mprof__diff_free(d);
        return NULL;
    }
    /* The used zones of each side, as keys, paired one to one. */
    const mprof_zstat **za = malloc((cap + 1) * sizeof *za), **zb = malloc((cap + 1) * sizeof *zb);
    mprof_zone_key *ka = malloc((cap + 1) * sizeof *ka), *kb = malloc((cap + 1) * sizeof *kb);
    ptrdiff_t *pair = malloc((cap + 1) * sizeof *pair);
    char *matched = calloc(cap + 1, 1);
    size_t na = 0, nb = 0;
    if (za && zb && ka && kb && pair && matched) {
        for (uint32_t i = 0; i < d->a.n; i++)
            if (d->a.z[i].site.count) {
                za[na] = &d->a.z[i];
                ka[na++] = key_of(&d->a.z[i]);
            }
        for (uint32_t i = 0; i < d->b.n; i++)
            if (d->b.z[i].site.count) {
                zb[nb] = &d->b.z[i];
                kb[nb++] = key_of(&d->b.z[i]);
            }
    }
    d->multi = d->a.n_procs > 1 || d->b.n_procs > 1;
    int ok = za && zb && ka && kb && pair && matched &&
             (d->multi ? pair_per_process(d, za, ka, na, zb, kb, nb, pair)
                       : mprof__zone_key_pair(ka, na, kb, nb, pair)) == 0;
    for (size_t i = 0; ok && i < na; i++) {
        diff_row *row = &d->rows[d->n_rows++];
        row->a = za[i];
        if (pair[i] >= 0) {
            row->b = zb[pair[i]];
            matched[pair[i]] = 1;
        }
    }
    for (size_t k = 0; ok && k < nb; k++)
        if (!matched[k])
            d->rows[d->n_rows++].b = zb[k];
    free(za);
    free(zb);
    free(ka);
    free(kb);
    free(pair);
    free(matched);
    if (!ok) {
        snprintf(err, errlen, "out of memory");
        mprof__diff_free(d);
        return NULL;
    }
    for (size_t i = 0; i < d->n_rows; i++)
        d->rows[i].impact_ns = rate(d, &d->b, d->rows[i].b) - rate(d, &d->a, d->rows[i].a);
    qsort(d->rows, d->n_rows, sizeof *d->rows, cmp_rows);
    return d;
}

void mprof__diff_free(mprof_diff *d)
{
    if (!d)
        return;
    mprof__zstats_free(&d->a);
    mprof__zstats_free(&d->b);
    free(d->rows);
    free(d->path_a);
    free(d->path_b);
    free(d);
}

typedef struct fstats {
    uint64_t n;
    double mean, p50, p90, p95, p99, max;
} fstats;

static fstats frame_stats(const mprof_zstats *s)
{
    mprof_frame_summary m = mprof__frame_summary(s->frame_ns, s->n_frames);
    return (fstats){m.count, m.mean, m.p50, m.p90, m.p95, m.p99, m.max};
}

static void ms_cell(FILE *o, double ns)
{
    fprintf(o, " %10.3f", ns / 1e6);
}

/* Each side's processes, when either has several. */
static void processes_text(const mprof_diff *d, FILE *o)
{
    if (!d->multi)
        return;
    fputs("Processes\n", o);
    const mprof_zstats *sides[2] = {&d->a, &d->b};
    for (int s = 0; s < 2; s++) {
        fprintf(o, "  %s:", s ? "B" : "A");
        for (uint32_t k = 0; k < sides[s]->n_procs; k++) {
            const mprof_zproc *p = &sides[s]->procs[k];
            char e[128];
            fprintf(o, "%s %s (pid %" PRIu64 ", %" PRIu32 " threads)", k ? "," : "",
                    tool_text(p->name, e, sizeof e), p->pid, p->threads);
        }
        fputc('\n', o);
    }
    fputs("  (zones pair within a process of one name)\n\n", o);
}

static void delta_cell(FILE *o, double a, double b)
{
    fprintf(o, " %+10.3f", (b - a) / 1e6);
    if (a > 0)
        fprintf(o, " %+7.1f %%", 100.0 * (b - a) / a);
    else
        fprintf(o, " %9s", "");
}

void mprof__diff_print_text(const mprof_diff *d, FILE *o, int top_n)
{
    fstats fa = frame_stats(&d->a), fb = frame_stats(&d->b);
    /* Names from the captures are escaped (tool_text): none reaches the terminal raw. */
    fputs("mprof diff\n  A: ", o);
    tool_put_text(o, d->path_a);
    fputs("\n  B: ", o);
    tool_put_text(o, d->path_b);
    fputs("\n  (deltas are B - A; positive is slower in B)\n\n", o);
    processes_text(d, o);
    fprintf(o, "Frames (ms)            A          B      B - A   change\n");
    fprintf(o, "  %-8s %12" PRIu64 " %10" PRIu64 " %+10" PRId64 "\n", "count", fa.n, fb.n,
            (int64_t)fb.n - (int64_t)fa.n);
    const char *names[] = {"mean", "p50", "p90", "p95", "p99", "max"};
    double va[] = {fa.mean, fa.p50, fa.p90, fa.p95, fa.p99, fa.max};
    double vb[] = {fb.mean, fb.p50, fb.p90, fb.p95, fb.p99, fb.max};
    if (fa.n && fb.n)
        for (int i = 0; i < 6; i++) {
            fprintf(o, "  %-8s  ", names[i]);
            ms_cell(o, va[i]);
            ms_cell(o, vb[i]);
            delta_cell(o, va[i], vb[i]);
            fputc('\n', o);
        }
    else
        fprintf(o, "  (%s: zone impact is per second of capture)\n",
                fa.n ? "B has no frames" : fb.n ? "A has no frames" : "neither capture has frames");
    fprintf(o, "\nZones by impact (change of %s, us)\n",
            d->per_frame ? "time inside frames per frame" : "total time per second");
    if (d->multi)
        fprintf(o, "  %-16s", "process");
    fprintf(o, "  %-28s %9s %9s %10s %10s %10s %10s %12s  %s\n", "zone", "count A", "count B",
            "mean A us", "mean B us", "p95 A us", "p95 B us", "impact us", "location");
    size_t n = top_n > 0 && (size_t)top_n < d->n_rows ? (size_t)top_n : d->n_rows;
    for (size_t i = 0; i < n; i++) {
        const diff_row *r = &d->rows[i];
        const mprof_zstat *z = r->a ? r->a : r->b;
        char name[64], ename[64], efile[256];
        snprintf(name, sizeof name, "%s%s", tool_text(z->name, ename, 29),
                 !r->a ? " (B only)" : !r->b ? " (A only)" : "");
        if (d->multi) {
            char ep[32];
            fprintf(o, "  %-16.16s",
                    tool_text(r->a ? proc_name(&d->a, r->a) : proc_name(&d->b, r->b), ep, 17));
        }
        fprintf(o, "  %-28.28s %9" PRIu64 " %9" PRIu64 " %10.2f %10.2f %10.2f %10.2f %+12.2f  %s:%" PRIu32 "\n",
                name, r->a ? r->a->site.count : 0, r->b ? r->b->site.count : 0,
                r->a ? mprof__site_mean_ns(&r->a->site) / 1e3 : 0.0,
                r->b ? mprof__site_mean_ns(&r->b->site) / 1e3 : 0.0,
                r->a ? (double)mprof__site_quantile_ns(&r->a->site, 0.95) / 1e3 : 0.0,
                r->b ? (double)mprof__site_quantile_ns(&r->b->site, 0.95) / 1e3 : 0.0,
                r->impact_ns / 1e3, tool_text(z->file, efile, sizeof efile), z->line);
    }
    if (n < d->n_rows)
        fprintf(o, "  ... %zu more (use --top 0 for all)\n", d->n_rows - n);
    size_t only_a = 0, only_b = 0;
    for (size_t i = 0; i < d->n_rows; i++) {
        only_a += !d->rows[i].b;
        only_b += !d->rows[i].a;
    }
    fprintf(o, "\n%zu zones compared: %zu in both, %zu only in A, %zu only in B\n", d->n_rows,
            d->n_rows - only_a - only_b, only_a, only_b);
}

void mprof__diff_print_json(const mprof_diff *d, FILE *o, int top_n)
{
    mprof_json j;
    mprof_json_init(&j, o, 0);
    mprof_json_obj_begin(&j, NULL);
    const mprof_zstats *sides[2] = {&d->a, &d->b};
    const char *paths[2] = {d->path_a, d->path_b};
    for (int s = 0; s < 2; s++) {
        fstats f = frame_stats(sides[s]);
        mprof_json_obj_begin(&j, s ? "b" : "a");
        mprof_json_str(&j, "file", paths[s]);
        mprof_json_u64(&j, "frames", f.n);
        mprof_json_u64(&j, "incomplete_frames", sides[s]->n_lossy);
        mprof_json_f64(&j, "mean_ns", f.mean);
        mprof_json_f64(&j, "p50_ns", f.p50);
        mprof_json_f64(&j, "p90_ns", f.p90);
        mprof_json_f64(&j, "p95_ns", f.p95);
        mprof_json_f64(&j, "p99_ns", f.p99);
        mprof_json_f64(&j, "max_ns", f.max);
        mprof_json_u64(&j, "zones", sides[s]->zones);
        if (d->multi) {
            mprof_json_arr_begin(&j, "processes");
            for (uint32_t k = 0; k < sides[s]->n_procs; k++) {
                const mprof_zproc *p = &sides[s]->procs[k];
                mprof_json_obj_begin(&j, NULL);
                mprof_json_str(&j, "name", p->name);
                mprof_json_u64(&j, "pid", p->pid);
                mprof_json_u64(&j, "threads", p->threads);
                mprof_json_obj_end(&j);
            }
            mprof_json_arr_end(&j);
        }
        mprof_json_obj_end(&j);
    }
    mprof_json_str(&j, "impact_per", d->per_frame ? "frame" : "second");
    mprof_json_arr_begin(&j, "zones");
    size_t n = top_n > 0 && (size_t)top_n < d->n_rows ? (size_t)top_n : d->n_rows;
    for (size_t i = 0; i < n; i++) {
        const diff_row *r = &d->rows[i];
        const mprof_zstat *z = r->a ? r->a : r->b;
        mprof_json_obj_begin(&j, NULL);
        if (d->multi)
            mprof_json_str(&j, "process",
                           r->a ? proc_name(&d->a, r->a) : proc_name(&d->b, r->b));
        mprof_json_str(&j, "name", z->name);
        mprof_json_str(&j, "function", z->function);
        mprof_json_str(&j, "file", z->file);
        mprof_json_u64(&j, "line", z->line);
        if (r->a && r->b) {
            mprof_json_str(&j, "b_file", r->b->file);
            mprof_json_u64(&j, "b_line", r->b->line);
        }
        mprof_json_str(&j, "status", !r->a ? "only_b" : !r->b ? "only_a" : "both");
        mprof_json_u64(&j, "a_count", r->a ? r->a->site.count : 0);
        mprof_json_u64(&j, "b_count", r->b ? r->b->site.count : 0);
        mprof_json_f64(&j, "a_mean_ns", r->a ? mprof__site_mean_ns(&r->a->site) : 0.0);
        mprof_json_f64(&j, "b_mean_ns", r->b ? mprof__site_mean_ns(&r->b->site) : 0.0);
        mprof_json_u64(&j, "a_p50_ns", r->a ? mprof__site_quantile_ns(&r->a->site, 0.50) : 0);
        mprof_json_u64(&j, "b_p50_ns", r->b ? mprof__site_quantile_ns(&r->b->site, 0.50) : 0);
        mprof_json_u64(&j, "a_p95_ns", r->a ? mprof__site_quantile_ns(&r->a->site, 0.95) : 0);
        mprof_json_u64(&j, "b_p95_ns", r->b ? mprof__site_quantile_ns(&r->b->site, 0.95) : 0);
        mprof_json_i64(&j, "a_total_ns", r->a ? r->a->site.total_ns : 0);
        mprof_json_i64(&j, "b_total_ns", r->b ? r->b->site.total_ns : 0);
        mprof_json_i64(&j, "a_in_frames_ns", r->a ? r->a->site.in_frames_ns : 0);
        mprof_json_i64(&j, "b_in_frames_ns", r->b ? r->b->site.in_frames_ns : 0);
        mprof_json_f64(&j, "impact_ns", r->impact_ns);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);
    mprof_json_obj_end(&j);
    fputc('\n', o);
}
