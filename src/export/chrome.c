/*
 * chrome.c - a capture as Chrome Trace Event JSON (the "JSON Object Format": an object
 * with a traceEvents array), written while the capture is read.
 *
 * Mapping (docs/EXPORT.md):
 *   zone          "X" complete event, pid 1, tid = the OS thread id, args: source location,
 *                 text, value; a zone in a fiber goes to the fiber's own tid
 *   GPU zone      "X" on pid 2 ("GPU"), one tid per GPU context
 *   lock span     "X" on pid 3 ("Locks"), one tid per (lock, thread): "waiting" / "holding"
 *   frame         "X" named "Frame N" on pid 4 ("Frames"), one tid per frame set
 *   message       "i" instant event, thread scope, on its thread; args.level, args.severity
 *   plot, memory  "C" counter events on pid 1, args.<counter name> (bytes for memory)
 *   system        thread states as slices on pid 5 ("Thread states"), CPU usage as counters
 *                 (chrome_system.c)
 *   names         "M" metadata events (process_name, thread_name, thread_sort_index) at the end,
 *                 since thread names may arrive late in the stream; the format allows any order.
 * Timestamps and durations are microseconds with three decimals (nanosecond precision).
 */
#include "export/export.h"
#include "util/json_out.h"
#include "analysis/system.h"
#include "export/chrome_system.h"
#include "analysis/timeline.h"
#include "mprof/mprof.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PID_CPU 1
#define PID_GPU 2
#define PID_LOCKS 3
#define PID_FRAMES 4
/* Synthetic thread ids are distinct across pids too, for importers that ignore pid (Tracy's). */
#define GPU_TID_BASE 0x10000000u
#define LOCK_TID_BASE 0x20000000u
#define FRAME_TID_BASE 0x30000000u
#define FIBER_TID_BASE 0x40000000u

typedef struct chrome {
    FILE *out;
    mprof_reader *r;
    mprof_walker *w;
    uint64_t events;
    const mprof_export_range *range; /* NULL = everything */
    mprof_sys_chrome *sys;
} chrome;

static void sep(chrome *c)
{
    fputs(c->events++ ? ",\n" : "\n", c->out);
}

static void us(FILE *o, int64_t ns)
{
    /* Integer arithmetic: exact for any capture length. */
    int64_t a = ns < 0 ? -ns : ns;
    fprintf(o, "%s%" PRId64 ".%03d", ns < 0 ? "-" : "", a / 1000, (int)(a % 1000));
}

static uint64_t track_tid(chrome *c, uint32_t track)
{
    const mprof_tl_track *t = mprof__walker_track(c->w, track);
    if (t->kind == MPROF_TRACK_THREAD)
        return t->os_tid ? t->os_tid : (uint64_t)track + 1;
    if (t->kind == MPROF_TRACK_FIBER)
        return FIBER_TID_BASE + track;
    return GPU_TID_BASE + track;
}

static void on_zone(void *user, const mprof_tl_zone *z)
{
    chrome *c = user;
    FILE *o = c->out;
    const mprof_tl_track *t = mprof__walker_track(c->w, z->track);
    const mprof_srcloc_def *d = mprof_reader_srcloc(c->r, z->loc);
    if (!mprof__range_overlaps(c->range, z->start_ns, z->end_ns))
        return;
    sep(c);
    fputs("{\"ph\":\"X\",\"name\":", o);
    if (z->name)
        mprof_json_write_string(o, z->name, z->name_len);
    else
        mprof_json_write_string(o, d && d->name ? d->name : "?", strlen(d && d->name ? d->name : "?"));
    fprintf(o, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":",
            t->kind == MPROF_TRACK_GPU ? "gpu" : "zone", t->kind == MPROF_TRACK_GPU ? PID_GPU : PID_CPU,
            track_tid(c, z->track));
    us(o, z->start_ns);
    fputs(",\"dur\":", o);
    us(o, z->end_ns - z->start_ns);
    fputs(",\"args\":{", o);
    if (d) {
        fputs("\"file\":", o);
        mprof_json_write_string(o, d->file ? d->file : "", strlen(d->file ? d->file : ""));
        fprintf(o, ",\"line\":%" PRIu32 ",\"function\":", d->line);
        mprof_json_write_string(o, d->function ? d->function : "", strlen(d->function ? d->function : ""));
    } else
        fputs("\"file\":\"\"", o);
    if (t->kind != MPROF_TRACK_GPU) {
        fputs(",\"self_us\":", o);
        us(o, z->end_ns - z->start_ns - z->child_ns);
    }
    if (z->text) {
        fputs(",\"text\":", o);
        mprof_json_write_string(o, z->text, z->text_len);
    }
    if (z->has_value)
        fprintf(o, ",\"value\":%" PRIu64, z->value);
    if (z->unfinished)
        fputs(",\"unfinished\":true", o);
    fputs("}}", o);
}

static void on_lock(void *user, const mprof_tl_lockspan *s)
{
    chrome *c = user;
    FILE *o = c->out;
    if (!mprof__range_overlaps(c->range, s->start_ns, s->end_ns))
        return;
    sep(c);
    fprintf(o, "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"lock\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":",
            s->waiting ? "waiting" : "holding", PID_LOCKS, LOCK_TID_BASE + (uint64_t)s->lock * 1024 + s->row);
    us(o, s->start_ns);
    fputs(",\"dur\":", o);
    us(o, s->end_ns - s->start_ns);
    fprintf(o, ",\"args\":{\"shared\":%s}}", s->shared ? "true" : "false");
}

static void on_memory(void *user, uint32_t pool, int64_t ts, int64_t bytes)
{
    chrome *c = user;
    FILE *o = c->out;
    if (!mprof__range_has(c->range, ts))
        return;
    const mprof_tl_pool *p = mprof__walker_pool(c->w, pool);
    const char *nm = p && p->name ? mprof_reader_string(c->r, p->name) : "heap";
    char name[300];
    snprintf(name, sizeof name, "Memory: %s", nm ? nm : "pool");
    sep(c);
    fputs("{\"ph\":\"C\",\"name\":", o);
    mprof_json_write_string(o, name, strlen(name));
    fprintf(o, ",\"pid\":%d,\"ts\":", PID_CPU);
    us(o, ts);
    /* The argument is named after the counter: Tracy's importer names a plot by the argument
     * key (so "value" for every counter would merge all plots into one), Perfetto names the
     * track "<name> <key>"; both then keep one counter per plot. */
    fputs(",\"args\":{", o);
    mprof_json_write_string(o, name, strlen(name));
    fprintf(o, ":%" PRId64 "}}", bytes);
}

static void on_frame(void *user, uint32_t set, uint64_t index, int64_t s, int64_t e)
{
    chrome *c = user;
    FILE *o = c->out;
    if (!mprof__range_overlaps(c->range, s, e))
        return;
    const mprof_tl_frameset *f = mprof__walker_frameset(c->w, set);
    const char *nm = f && f->name ? mprof_reader_string(c->r, f->name) : "Frame";
    char name[300];
    snprintf(name, sizeof name, "%s %" PRIu64, nm ? nm : "Frame", index);
    sep(c);
    fputs("{\"ph\":\"X\",\"name\":", o);
    mprof_json_write_string(o, name, strlen(name));
    fprintf(o, ",\"cat\":\"frame\",\"pid\":%d,\"tid\":%" PRIu32 ",\"ts\":", PID_FRAMES,
            FRAME_TID_BASE + set);
    us(o, s);
    fputs(",\"dur\":", o);
    us(o, e - s);
    fputs("}", o);
}

static uint64_t thread_tid(chrome *c, uint32_t thread)
{
    const mprof_thread_def *d = mprof_reader_thread(c->r, thread);
    if (d && d->os_tid)
        return d->os_tid;
    for (uint32_t i = 0; i < mprof__walker_track_count(c->w); i++) {
        const mprof_tl_track *t = mprof__walker_track(c->w, i);
        if (t->kind == MPROF_TRACK_THREAD && t->ref == thread)
            return track_tid(c, i);
    }
    return (uint64_t)thread + 1;
}

static void on_event(chrome *c, const mprof_event *ev)
{
    FILE *o = c->out;
    static const char *levels[] = {"", "trace", "debug", "info", "warn", "error", "fatal"};
    if ((ev->type == MPROF_EV_MESSAGE || ev->type == MPROF_EV_PLOT_F64 ||
         ev->type == MPROF_EV_PLOT_I64) && !mprof__range_has(c->range, ev->ts_ns))
        return;
    if (ev->type == MPROF_EV_MESSAGE) {
        sep(c);
        fputs("{\"ph\":\"i\",\"s\":\"t\",\"name\":", o);
        mprof_json_write_string(o, ev->str ? ev->str : "", ev->str_len);
        fprintf(o, ",\"cat\":\"message\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":", PID_CPU,
                thread_tid(c, ev->thread));
        us(o, ev->ts_ns);
        fprintf(o, ",\"args\":{\"level\":\"%s\",\"severity\":%d,\"color\":\"#%06" PRIx32 "\"}}",
                ev->u[0] <= 6 ? levels[ev->u[0]] : "info", ev->u[0] <= 6 ? (int)ev->u[0] : 3,
                mprof_log_level_color((mprof_log_level)(ev->u[0] <= 6 ? ev->u[0] : 0)));
    } else if (ev->type == MPROF_EV_PLOT_F64 || ev->type == MPROF_EV_PLOT_I64) {
        const char *nm = mprof_reader_string(c->r, (uint32_t)ev->u[0]);
        double v = ev->type == MPROF_EV_PLOT_F64 ? mprof_event_f64(ev, 1) : (double)(int64_t)ev->u[1];
        sep(c);
        fputs("{\"ph\":\"C\",\"name\":", o);
        mprof_json_write_string(o, nm ? nm : "plot", strlen(nm ? nm : "plot"));
        fprintf(o, ",\"pid\":%d,\"ts\":", PID_CPU);
        us(o, ev->ts_ns);
        fputs(",\"args\":{", o); /* keyed by the plot's name: see on_memory */
        mprof_json_write_string(o, nm ? nm : "plot", strlen(nm ? nm : "plot"));
        fputc(':', o);
        if (isfinite(v))
            fprintf(o, "%.17g", v);
        else
            fputs("0", o);
        fputs("}}", o);
    }
}

/* An async span as a pair of nestable async events ("b" and "e") of category "async" keyed by
 * its track and id, so that importers give each track its rows; a span still open at the end
 * of the capture ends there, marked. */
static void on_async(void *user, const mprof_async_span *s)
{
    chrome *c = user;
    if (!mprof__range_overlaps(c->range, s->start_ns, s->end_ns))
        return;
    FILE *o = c->out;
    const char *track = mprof__async_track_name(mprof__walker_async(c->w), s->track);
    for (int end = 0; end < 2; end++) {
        sep(c);
        fprintf(o, "{\"ph\":\"%s\",\"cat\":\"async\",\"name\":", end ? "e" : "b");
        mprof_json_write_string(o, s->name, s->name_len);
        fputs(",\"id2\":{\"local\":", o);
        char id[300];
        snprintf(id, sizeof id, "%s:%" PRIx64, track, s->id);
        mprof_json_write_string(o, id, strlen(id));
        fprintf(o, "},\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":", PID_CPU,
                thread_tid(c, end && s->end_thread ? s->end_thread : s->begin_thread));
        us(o, end ? s->end_ns : s->start_ns);
        if (!end) {
            fputs(",\"args\":{\"track\":", o);
            mprof_json_write_string(o, track, strlen(track));
            fprintf(o, ",\"id\":%" PRIu64 "%s%s}", s->id,
                    s->open_at_end ? ",\"open_at_end\":true" : "",
                    s->cut_by_reuse ? ",\"ended_by_reused_id\":true" : "");
        }
        fputc('}', o);
    }
}

static void meta(chrome *c, const char *what, int pid, uint64_t tid, const char *name, int sort)
{
    FILE *o = c->out;
    sep(c);
    fprintf(o, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%" PRIu64 ",\"args\":{\"name\":", what,
            pid, tid);
    mprof_json_write_string(o, name, strlen(name));
    fputs("}}", o);
    if (sort >= 0 && strcmp(what, "thread_name") == 0) {
        sep(c);
        fprintf(o,
                "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%" PRIu64
                ",\"args\":{\"sort_index\":%d}}",
                pid, tid, sort);
    }
}

static void write_metadata(chrome *c)
{
    char buf[300], name[400];
    const char *app = mprof_reader_info(c->r, "app");
    if (!app)
        app = mprof_reader_info(c->r, "process");
    meta(c, "process_name", PID_CPU, 0, app ? app : "process", -1);
    int gpu = 0, locks = 0;
    for (uint32_t i = 0; i < mprof__walker_track_count(c->w); i++) {
        const mprof_tl_track *t = mprof__walker_track(c->w, i);
        mprof__walker_track_name(c->w, i, buf, sizeof buf);
        if (t->kind == MPROF_TRACK_THREAD || t->kind == MPROF_TRACK_FIBER)
            meta(c, "thread_name", PID_CPU, track_tid(c, i), buf, (int)i);
        else if (t->kind == MPROF_TRACK_GPU) {
            meta(c, "thread_name", PID_GPU, track_tid(c, i), buf, (int)i);
            gpu = 1;
        } else
            locks = 1;
    }
    if (gpu)
        meta(c, "process_name", PID_GPU, 0, "GPU", -1);
    if (locks) {
        meta(c, "process_name", PID_LOCKS, 0, "Locks", -1);
        for (uint32_t l = 0; l < mprof__walker_lock_count(c->w); l++) {
            const mprof_tl_lock *lk = mprof__walker_lock(c->w, l);
            const char *ln = mprof_reader_string(c->r, lk->name);
            for (uint32_t row = 0; row < lk->n_rows; row++) {
                snprintf(name, sizeof name, "%s (%s)", ln ? ln : "lock",
                         mprof__walker_lock_row_name(c->w, l, row, buf, sizeof buf));
                meta(c, "thread_name", PID_LOCKS, LOCK_TID_BASE + (uint64_t)l * 1024 + row, name,
                     (int)(l * 1024 + row));
            }
        }
    }
    if (mprof__walker_frameset_count(c->w)) {
        meta(c, "process_name", PID_FRAMES, 0, "Frames", -1);
        for (uint32_t i = 0; i < mprof__walker_frameset_count(c->w); i++) {
            const mprof_tl_frameset *f = mprof__walker_frameset(c->w, i);
            const char *nm = f->name ? mprof_reader_string(c->r, f->name) : "Frames";
            meta(c, "thread_name", PID_FRAMES, FRAME_TID_BASE + i, nm ? nm : "frames", (int)i);
        }
    }
}

int mprof__export_chrome(const char *path, FILE *out, char *err, size_t errlen)
{
    return mprof__export_chrome_range(path, NULL, out, err, errlen);
}

int mprof__export_chrome_range(const char *path, const mprof_export_range *range, FILE *out,
                               char *err, size_t errlen)
{
    chrome c = {.out = out, .range = range};
    c.r = mprof_reader_open(path, err, errlen);
    if (!c.r)
        return -1;
    mprof_tl_hooks h = {.user = &c, .zone = on_zone, .lock_span = on_lock, .memory = on_memory,
                        .frame = on_frame, .async_span = on_async};
    c.w = mprof__walker_new(c.r, &h, 0);
    if (!c.w) {
        snprintf(err, errlen, "%s: out of memory", path);
        mprof_reader_close(c.r);
        return -1;
    }
    c.sys = mprof__sys_chrome_new(); /* NULL: no thread states (out of memory) */
    fputs("{\"traceEvents\":[", out);
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(c.r, &ev)) == 1) {
        on_event(&c, &ev);
        if ((c.sys && mprof__sys_chrome_event(c.sys, out, &c.events, c.range, &ev) != 0) ||
            mprof__walker_event(c.w, &ev) != 0) {
            rc = -2;
            break;
        }
    }
    int ret = 0;
    if (rc == -1) {
        snprintf(err, errlen, "%s: %s", path, mprof_reader_error(c.r));
        ret = -1;
    } else if (rc == -2) {
        snprintf(err, errlen, "%s: out of memory", path);
        ret = -1;
    } else {
        mprof__walker_finish(c.w);
        write_metadata(&c);
        if (c.sys)
            mprof__sys_chrome_meta(c.sys, c.r, out, &c.events);
        fputs("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":\"mprof\",\"capture\":", out);
        mprof_json_write_string(out, path, strlen(path));
        fputs("}}\n", out);
    }
    mprof__sys_chrome_free(c.sys);
    mprof__walker_free(c.w);
    mprof_reader_close(c.r);
    return ret;
}
