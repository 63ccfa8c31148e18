/*
 * csv.c - zones as CSV (RFC 4180: comma-separated, fields with a comma, quote or line break
 * quoted, quotes doubled): the per-source-location statistics of zstats.h, or one row per zone,
 * written as each zone ends. A capture of several processes (mprof merge) gets a first column,
 * process, with each row's process name; its statistics are per process already (a source
 * location is one process's).
 */
#include "export/export.h"
#include "analysis/timeline.h"
#include "analysis/zstats.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void csv_field(FILE *o, const char *s, size_t n)
{
    int quote = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r') {
            quote = 1;
            break;
        }
    if (!quote) {
        fwrite(s, 1, n, o);
        return;
    }
    fputc('"', o);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            fputc('"', o);
        fputc(s[i], o);
    }
    fputc('"', o);
}

static void csv_str(FILE *o, const char *s)
{
    csv_field(o, s ? s : "", s ? strlen(s) : 0);
}

/* ---- statistics ----------------------------------------------------------------------------- */

static const mprof_zstats *sort_ctx;
static int cmp_total(const void *a, const void *b)
{
    const mprof_zstat *x = &sort_ctx->z[*(const uint32_t *)a], *y = &sort_ctx->z[*(const uint32_t *)b];
    if (x->site.total_ns != y->site.total_ns)
        return x->site.total_ns > y->site.total_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

int mprof__export_csv_stats(const char *path, FILE *out, char *err, size_t errlen)
{
    return mprof__export_csv_stats_range(path, NULL, out, err, errlen);
}

int mprof__export_csv_stats_range(const char *path, const mprof_export_range *range, FILE *out,
                                  char *err, size_t errlen)
{
    mprof_zstats s;
    if (mprof__zstats_collect_range(path, range, &s, err, errlen) != 0)
        return -1;
    uint32_t *order = malloc(((size_t)s.n + 1) * sizeof *order);
    if (!order) {
        mprof__zstats_free(&s);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < s.n; i++)
        if (s.z[i].site.count)
            order[n++] = i;
    sort_ctx = &s;
    qsort(order, n, sizeof *order, cmp_total);
    int multi = s.n_procs > 1;
    if (multi)
        fputs("process,", out);
    fputs("name,function,file,line,count,total_ns,self_ns,mean_ns,min_ns,max_ns,stddev_ns,p50_ns,p90_ns,"
          "p95_ns,p99_ns\n",
          out);
    for (uint32_t k = 0; k < n; k++) {
        const mprof_zstat *z = &s.z[order[k]];
        if (multi) {
            csv_str(out, z->process < s.n_procs ? s.procs[z->process].name : "");
            fputc(',', out);
        }
        csv_str(out, z->name);
        fputc(',', out);
        csv_str(out, z->function);
        fputc(',', out);
        csv_str(out, z->file);
        fprintf(out,
                ",%" PRIu32 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%.0f,%" PRIu64 ",%" PRIu64
                ",%.0f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                z->line, z->site.count, z->site.total_ns, z->site.self_ns, mprof__site_mean_ns(&z->site),
                mprof__site_min_ns(&z->site), mprof__site_max_ns(&z->site), mprof__site_stddev_ns(&z->site),
                mprof__site_quantile_ns(&z->site, 0.50), mprof__site_quantile_ns(&z->site, 0.90),
                mprof__site_quantile_ns(&z->site, 0.95), mprof__site_quantile_ns(&z->site, 0.99));
    }
    free(order);
    mprof__zstats_free(&s);
    return 0;
}

/* ---- one row per zone ----------------------------------------------------------------------- */

typedef struct per_zone {
    FILE *out;
    mprof_reader *r;
    mprof_walker *w;
    const mprof_export_range *range;
    int header; /* written (after the first batch, when the processes are known) */
    int multi;  /* several processes: the process column */
} per_zone;

/* The header, once: the processes are known when the first zone ends. */
static void pz_header(per_zone *p)
{
    if (p->header)
        return;
    p->header = 1;
    p->multi = mprof_reader_process_count(p->r) > 1;
    fputs(p->multi ? "process," : "", p->out);
    fputs("track,kind,name,file,line,start_ns,dur_ns,self_ns,depth,text,value,unfinished\n",
          p->out);
}

/* The process column of a row of thread t's process (reader thread index). */
static void pz_process(per_zone *p, uint32_t process)
{
    if (!p->multi)
        return;
    const mprof_process_def *d = mprof_reader_process(p->r, process);
    csv_str(p->out, d ? d->name : "");
    fputc(',', p->out);
}

static void pz_zone(void *user, const mprof_tl_zone *z)
{
    per_zone *p = user;
    FILE *o = p->out;
    char buf[256];
    if (!mprof__range_overlaps(p->range, z->start_ns, z->end_ns))
        return;
    const mprof_srcloc_def *d = mprof_reader_srcloc(p->r, z->loc);
    const mprof_tl_track *t = mprof__walker_track(p->w, z->track);
    static const char *kinds[] = {"", "thread", "fiber", "gpu", "lock"};
    pz_header(p);
    pz_process(p, t->process);
    csv_str(o, mprof__walker_track_name(p->w, z->track, buf, sizeof buf));
    fprintf(o, ",%s,", kinds[t->kind]);
    if (z->name)
        csv_field(o, z->name, z->name_len);
    else
        csv_str(o, d ? d->name : "?");
    fputc(',', o);
    csv_str(o, d ? d->file : "");
    int64_t dur = z->end_ns - z->start_ns;
    int64_t self = dur - z->child_ns;
    fprintf(o, ",%" PRIu32 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRIu32 ",", d ? d->line : 0,
            z->start_ns, dur, self > 0 ? self : 0, z->depth);
    if (z->text)
        csv_field(o, z->text, z->text_len);
    fputc(',', o);
    if (z->has_value)
        fprintf(o, "%" PRIu64, z->value);
    fputs(z->unfinished ? ",1\n" : ",0\n", o);
}

/* An async span: kind "async", its track "async <name>", no file, depth 0, self = its
 * duration, value = its id, unfinished when it was still open at the end of the capture. */
static void pz_async(void *user, const mprof_async_span *s)
{
    per_zone *p = user;
    FILE *o = p->out;
    if (!mprof__range_overlaps(p->range, s->start_ns, s->end_ns))
        return;
    pz_header(p);
    const mprof_thread_def *bt = mprof_reader_thread(p->r, s->begin_thread);
    pz_process(p, bt ? bt->process : 0);
    char track[300];
    snprintf(track, sizeof track, "async %s",
             mprof__async_track_name(mprof__walker_async(p->w), s->track));
    csv_str(o, track);
    fputs(",async,", o);
    csv_field(o, s->name, s->name_len);
    int64_t dur = s->end_ns - s->start_ns;
    fprintf(o, ",,0,%" PRId64 ",%" PRId64 ",%" PRId64 ",0,,%" PRIu64 ",%d\n", s->start_ns, dur, dur,
            s->id, s->open_at_end);
}

int mprof__export_csv_zones(const char *path, FILE *out, char *err, size_t errlen)
{
    return mprof__export_csv_zones_range(path, NULL, out, err, errlen);
}

int mprof__export_csv_zones_range(const char *path, const mprof_export_range *range, FILE *out,
                                  char *err, size_t errlen)
{
    per_zone p = {.out = out, .range = range};
    p.r = mprof_reader_open(path, err, errlen);
    if (!p.r)
        return -1;
    mprof_tl_hooks h = {.user = &p, .zone = pz_zone, .async_span = pz_async};
    p.w = mprof__walker_new(p.r, &h, 0);
    if (!p.w) {
        mprof_reader_close(p.r);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int ret = mprof__walker_feed(p.w, p.r, NULL, path, err, errlen) == 0 ? 0 : -1;
    if (ret == 0)
        mprof__walker_finish(p.w);
    pz_header(&p); /* no zone before the end or the failure: the header alone, as ever */
    mprof__walker_free(p.w);
    mprof_reader_close(p.r);
    return ret;
}
