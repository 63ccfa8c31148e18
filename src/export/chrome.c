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
 *   processes     a capture of several processes (mprof merge): process 0 keeps pid 1, process
 *                 k > 0 gets pid 10 + k, each with its threads, fibers, plots, messages, memory
 *                 and async spans; its process_name is "NAME (pid N)", with "ended_early" in
 *                 the args where its part ended early. GPU, locks and frames keep their pids
 *                 (a frame set's track says its process).
 * Timestamps and durations are microseconds with three decimals (nanosecond precision).
 *
 * Zones are nearly all of the output, so they are written without printf: into a buffer of the
 * exporter's own, from pieces made once per source location (its escaped name, its args) and
 * per track (its cat, pid and tid), with the numbers formatted by hand. Every other writer
 * empties the buffer first, so the output is in file order byte for byte.
 */
#include "export/export.h"
#include "util/json_out.h"
#include "analysis/system.h"
#include "export/chrome_system.h"
#include "export/decimal.h"
#include "analysis/timeline.h"
#include "mprof/mprof.h"
#include "format/batch.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PID_CPU 1
#define PID_GPU 2
#define PID_LOCKS 3
#define PID_FRAMES 4
#define PID_PROCESS_BASE 10 /* + k: process k > 0 of a capture of several */
/* Synthetic thread ids are distinct across pids too, for importers that ignore pid (Tracy's). */
#define GPU_TID_BASE 0x10000000u
#define LOCK_TID_BASE 0x20000000u
#define FRAME_TID_BASE 0x30000000u
#define FIBER_TID_BASE 0x40000000u

/* A piece of output made once: bytes and length. */
typedef struct piece {
    char *s;
    size_t n;
} piece;

#define BUF_BYTES (256u << 10)

typedef struct chrome {
    FILE *out;
    mprof_reader *r;
    mprof_walker *w;
    uint64_t events;
    const mprof_export_range *range; /* NULL = everything */
    mprof_sys_chrome *sys;
    char *buf; /* zones' output not yet written */
    size_t len;
    piece *loc_name, *loc_args; /* by source location: "name" and "file":...,"function":... */
    uint32_t n_loc;
    piece *trk; /* by track: ,"cat":...,"pid":...,"tid":...,"ts": */
    uint32_t n_trk;
    int oom;
} chrome;

/* Writes out what the buffer holds; every writer other than on_zone calls it first. */
static void flush_buf(chrome *c)
{
    if (c->len)
        fwrite(c->buf, 1, c->len, c->out);
    c->len = 0;
}

static inline void put(chrome *c, const char *s, size_t n)
{
    if (c->len + n > BUF_BYTES) {
        flush_buf(c);
        if (n > BUF_BYTES) {
            fwrite(s, 1, n, c->out);
            return;
        }
    }
    memcpy(c->buf + c->len, s, n);
    c->len += n;
}
#define PUT_LIT(c, lit) put((c), (lit), sizeof(lit) - 1)

/* Room for n more bytes in the buffer; returns where they go. */
static inline char *reserve(chrome *c, size_t n)
{
    if (c->len + n > BUF_BYTES)
        flush_buf(c);
    return c->buf + c->len;
}

/* Copies a string literal to p, a char * into room reserve() gave, and moves p past it. */
#define LIT(s)                                                                                     \
    do {                                                                                           \
        memcpy(p, s, sizeof(s) - 1);                                                               \
        p += sizeof(s) - 1;                                                                        \
    } while (0)

static void sep(chrome *c)
{
    if (c->events++)
        PUT_LIT(c, ",\n");
    else
        PUT_LIT(c, "\n");
}

/* Pieces keep this many bytes after their end, so that they are copied 16 bytes at a time. */
#define PIECE_PAD 16

/* Copies a piece to p, which has PIECE_PAD bytes of room after it; returns the end. */
static inline char *put_piece(char *p, const piece *pc)
{
    for (size_t i = 0; i < pc->n; i += 16)
        memcpy(p + i, pc->s + i, 16);
    return p + pc->n;
}

/* A copy of what an in-memory stream wrote, padded (the caller frees it). */
static int padded(char *s, size_t n, piece *out)
{
    out->s = malloc(n + PIECE_PAD);
    if (out->s) {
        memcpy(out->s, s, n);
        memset(out->s + n, 0, PIECE_PAD);
    }
    out->n = out->s ? n : 0;
    free(s);
    return out->s ? 0 : -1;
}

/* A JSON string as mprof_json_write_string writes it, in memory (the caller frees it). */
static int json_piece(const char *s, size_t n, piece *out)
{
    char *m_s = NULL;
    size_t m_n = 0;
    out->s = NULL;
    out->n = 0;
    FILE *m = open_memstream(&m_s, &m_n);
    if (!m)
        return -1;
    mprof_json_write_string(m, s, n);
    if (fclose(m) != 0) {
        free(m_s);
        return -1;
    }
    return padded(m_s, m_n, out);
}

static void piece_free(piece *p)
{
    free(p->s);
    p->s = NULL;
    p->n = 0;
}

/* The pid of process k: process 0 is pid 1, as in a one-process capture. */
static int process_pid(uint32_t k)
{
    return k == 0 ? PID_CPU : PID_PROCESS_BASE + (int)(k < 1000000 ? k : 1000000);
}

/* The pid of reader thread idx's process. */
static int thread_pid(chrome *c, uint32_t idx)
{
    const mprof_thread_def *d = mprof_reader_thread(c->r, idx);
    return process_pid(d ? d->process : 0);
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

/* The pieces of source location loc (made on first use; a redefinition drops them). */
static int loc_pieces(chrome *c, uint32_t loc)
{
    if (loc >= c->n_loc) {
        uint32_t n = c->n_loc;
        if (mprof_grow_zeroed((void **)&c->loc_name, &n, loc, sizeof *c->loc_name, 1u << 24))
            return -1;
        n = c->n_loc;
        if (mprof_grow_zeroed((void **)&c->loc_args, &n, loc, sizeof *c->loc_args, 1u << 24))
            return -1;
        c->n_loc = n;
    }
    if (c->loc_name[loc].s)
        return 0;
    const mprof_srcloc_def *d = mprof_reader_srcloc(c->r, loc);
    const char *nm = d && d->name ? d->name : "?";
    if (json_piece(nm, strlen(nm), &c->loc_name[loc]) != 0)
        return -1;
    char *a = NULL;
    size_t an = 0;
    FILE *m = open_memstream(&a, &an);
    if (!m)
        return -1;
    if (d) {
        fputs("\"file\":", m);
        mprof_json_write_string(m, d->file ? d->file : "", strlen(d->file ? d->file : ""));
        fprintf(m, ",\"line\":%" PRIu32 ",\"function\":", d->line);
        mprof_json_write_string(m, d->function ? d->function : "", strlen(d->function ? d->function : ""));
    } else
        fputs("\"file\":\"\"", m);
    if (fclose(m) != 0) {
        free(a);
        return -1;
    }
    return padded(a, an, &c->loc_args[loc]);
}

static uint64_t track_tid(chrome *c, uint32_t track);

/* The piece of a track: its cat, pid and tid. */
static int track_piece(chrome *c, uint32_t track)
{
    if (track < c->n_trk && c->trk[track].s)
        return 0;
    uint32_t n = c->n_trk;
    if (mprof_grow_zeroed((void **)&c->trk, &n, track, sizeof *c->trk, 1u << 24))
        return -1;
    c->n_trk = n;
    const mprof_tl_track *t = mprof__walker_track(c->w, track);
    char tmp[128];
    int k = snprintf(tmp, sizeof tmp, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":",
                     t->kind == MPROF_TRACK_GPU ? "gpu" : "zone",
                     t->kind == MPROF_TRACK_GPU ? PID_GPU : process_pid(t->process),
                     track_tid(c, track));
    char *p = malloc((size_t)k + PIECE_PAD);
    if (!p)
        return -1;
    memcpy(p, tmp, (size_t)k);
    memset(p + k, 0, PIECE_PAD);
    c->trk[track] = (piece){p, (size_t)k};
    return 0;
}

static void on_zone(void *user, const mprof_tl_zone *z)
{
    chrome *c = user;
    if (!mprof__range_overlaps(c->range, z->start_ns, z->end_ns))
        return;
    if (loc_pieces(c, z->loc) != 0 || track_piece(c, z->track) != 0) {
        c->oom = 1;
        return;
    }
    piece nm = c->loc_name[z->loc], tx = {0};
    if ((z->name && json_piece(z->name, z->name_len, &nm) != 0) ||
        (z->text && json_piece(z->text, z->text_len, &tx) != 0)) {
        if (z->name)
            piece_free(&nm);
        c->oom = 1;
        return;
    }
    const piece *trk = &c->trk[z->track], *args = &c->loc_args[z->loc];
    size_t need = 256 + 4 * PIECE_PAD + nm.n + trk->n + args->n + tx.n;
    if (need > BUF_BYTES) { /* a zone text of megabytes: the slow way */
        sep(c);
        PUT_LIT(c, "{\"ph\":\"X\",\"name\":");
        put(c, nm.s, nm.n);
        put(c, trk->s, trk->n);
        char tmp[64];
        put(c, tmp, (size_t)(mprof__fmt_us(tmp, z->start_ns) - tmp));
        PUT_LIT(c, ",\"dur\":");
        put(c, tmp, (size_t)(mprof__fmt_us(tmp, z->end_ns - z->start_ns) - tmp));
        PUT_LIT(c, ",\"args\":{");
        put(c, args->s, args->n);
        if (mprof__walker_track(c->w, z->track)->kind != MPROF_TRACK_GPU) {
            PUT_LIT(c, ",\"self_us\":");
            put(c, tmp, (size_t)(mprof__fmt_us(tmp, z->end_ns - z->start_ns - z->child_ns) - tmp));
        }
        if (z->text) {
            PUT_LIT(c, ",\"text\":");
            put(c, tx.s, tx.n);
        }
        if (z->has_value) {
            PUT_LIT(c, ",\"value\":");
            put(c, tmp, (size_t)(mprof__fmt_u64(tmp, z->value) - tmp));
        }
        if (z->unfinished)
            PUT_LIT(c, ",\"unfinished\":true");
        PUT_LIT(c, "}}");
    } else {
        char *p = reserve(c, need), *p0 = p;
        if (c->events++)
            LIT(",\n{\"ph\":\"X\",\"name\":");
        else
            LIT("\n{\"ph\":\"X\",\"name\":");
        p = put_piece(p, &nm);
        p = put_piece(p, trk);
        p = mprof__fmt_us(p, z->start_ns);
        LIT(",\"dur\":");
        p = mprof__fmt_us(p, z->end_ns - z->start_ns);
        LIT(",\"args\":{");
        p = put_piece(p, args);
        if (mprof__walker_track(c->w, z->track)->kind != MPROF_TRACK_GPU) {
            LIT(",\"self_us\":");
            p = mprof__fmt_us(p, z->end_ns - z->start_ns - z->child_ns);
        }
        if (z->text) {
            LIT(",\"text\":");
            p = put_piece(p, &tx);
        }
        if (z->has_value) {
            LIT(",\"value\":");
            p = mprof__fmt_u64(p, z->value);
        }
        if (z->unfinished)
            LIT(",\"unfinished\":true");
        LIT("}}");
        c->len += (size_t)(p - p0);
    }
    if (z->name)
        piece_free(&nm);
    piece_free(&tx);
}

/* A lock span, written as on_zone writes a zone (a lock-heavy capture has one for every few
 * zones): 92 bytes of text at most, a 20-digit tid and two times of at most 26 bytes. */
static void on_lock(void *user, const mprof_tl_lockspan *s)
{
    chrome *c = user;
    if (!mprof__range_overlaps(c->range, s->start_ns, s->end_ns))
        return;
    sep(c);
    char *p = reserve(c, 192), *p0 = p;
    if (s->waiting)
        LIT("{\"ph\":\"X\",\"name\":\"waiting\",\"cat\":\"lock\",\"pid\":");
    else
        LIT("{\"ph\":\"X\",\"name\":\"holding\",\"cat\":\"lock\",\"pid\":");
    p = mprof__fmt_u64(p, PID_LOCKS);
    LIT(",\"tid\":");
    p = mprof__fmt_u64(p, LOCK_TID_BASE + (uint64_t)s->lock * 1024 + s->row);
    LIT(",\"ts\":");
    p = mprof__fmt_us(p, s->start_ns);
    LIT(",\"dur\":");
    p = mprof__fmt_us(p, s->end_ns - s->start_ns);
    if (s->shared)
        LIT(",\"args\":{\"shared\":true}}");
    else
        LIT(",\"args\":{\"shared\":false}}");
    c->len += (size_t)(p - p0);
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
    flush_buf(c);
    fputs("{\"ph\":\"C\",\"name\":", o);
    mprof_json_write_string(o, name, strlen(name));
    fprintf(o, ",\"pid\":%d,\"ts\":", process_pid(p ? p->process : 0));
    mprof__write_us(o, ts);
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
    flush_buf(c);
    fputs("{\"ph\":\"X\",\"name\":", o);
    mprof_json_write_string(o, name, strlen(name));
    fprintf(o, ",\"cat\":\"frame\",\"pid\":%d,\"tid\":%" PRIu32 ",\"ts\":", PID_FRAMES,
            FRAME_TID_BASE + set);
    mprof__write_us(o, s);
    fputs(",\"dur\":", o);
    mprof__write_us(o, e - s);
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
        flush_buf(c);
        fputs("{\"ph\":\"i\",\"s\":\"t\",\"name\":", o);
        mprof_json_write_string(o, ev->str ? ev->str : "", ev->str_len);
        fprintf(o, ",\"cat\":\"message\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":",
                thread_pid(c, ev->thread), thread_tid(c, ev->thread));
        mprof__write_us(o, ev->ts_ns);
        fprintf(o, ",\"args\":{\"level\":\"%s\",\"severity\":%d,\"color\":\"#%06" PRIx32 "\"}}",
                ev->u[0] <= 6 ? levels[ev->u[0]] : "info", ev->u[0] <= 6 ? (int)ev->u[0] : 3,
                mprof_log_level_color((mprof_log_level)(ev->u[0] <= 6 ? ev->u[0] : 0)));
    } else if (ev->type == MPROF_EV_PLOT_F64 || ev->type == MPROF_EV_PLOT_I64) {
        const char *nm = mprof_reader_string(c->r, (uint32_t)ev->u[0]);
        double v = ev->type == MPROF_EV_PLOT_F64 ? mprof_event_f64(ev, 1) : (double)(int64_t)ev->u[1];
        sep(c);
        flush_buf(c);
        fputs("{\"ph\":\"C\",\"name\":", o);
        mprof_json_write_string(o, nm ? nm : "plot", strlen(nm ? nm : "plot"));
        fprintf(o, ",\"pid\":%d,\"ts\":", thread_pid(c, ev->thread));
        mprof__write_us(o, ev->ts_ns);
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
        flush_buf(c);
        fprintf(o, "{\"ph\":\"%s\",\"cat\":\"async\",\"name\":", end ? "e" : "b");
        mprof_json_write_string(o, s->name, s->name_len);
        fputs(",\"id2\":{\"local\":", o);
        char id[300];
        snprintf(id, sizeof id, "%s:%" PRIx64, track, s->id);
        mprof_json_write_string(o, id, strlen(id));
        uint32_t th = end && s->end_thread ? s->end_thread : s->begin_thread;
        fprintf(o, "},\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":", thread_pid(c, th),
                thread_tid(c, th));
        mprof__write_us(o, end ? s->end_ns : s->start_ns);
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
    flush_buf(c);
    fprintf(o, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%" PRIu64 ",\"args\":{\"name\":", what,
            pid, tid);
    mprof_json_write_string(o, name, strlen(name));
    fputs("}}", o);
    if (sort >= 0 && strcmp(what, "thread_name") == 0) {
        sep(c);
        flush_buf(c);
        fprintf(o,
                "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%" PRIu64
                ",\"args\":{\"sort_index\":%d}}",
                pid, tid, sort);
    }
}

/* Each process's process_name in a capture of several: "NAME (pid N)", and why its part ended
 * early where it did. */
static void process_metadata(chrome *c)
{
    FILE *o = c->out;
    for (uint32_t k = 0; k < mprof_reader_process_count(c->r); k++) {
        const mprof_process_def *p = mprof_reader_process(c->r, k);
        char name[400];
        snprintf(name, sizeof name, "%s (pid %" PRIu64 ")", p && *p->name ? p->name : "process",
                 p ? p->pid : 0);
        sep(c);
        flush_buf(c);
        fprintf(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":"
                   "{\"name\":", process_pid(k));
        mprof_json_write_string(o, name, strlen(name));
        if (p && p->ended_by) {
            fputs(",\"ended_early\":", o);
            mprof_json_write_string(o, p->ended_by, strlen(p->ended_by));
        }
        fputs("}}", o);
        sep(c);
        flush_buf(c);
        fprintf(o, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"sort_index\":%" PRIu32 "}}", process_pid(k), k);
    }
}

static void write_metadata(chrome *c)
{
    char buf[300], name[400];
    int multi = mprof_reader_process_count(c->r) > 1;
    if (multi) {
        process_metadata(c);
    } else {
        const char *app = mprof_reader_info(c->r, "app");
        if (!app)
            app = mprof_reader_info(c->r, "process");
        meta(c, "process_name", PID_CPU, 0, app ? app : "process", -1);
    }
    int gpu = 0, locks = 0;
    for (uint32_t i = 0; i < mprof__walker_track_count(c->w); i++) {
        const mprof_tl_track *t = mprof__walker_track(c->w, i);
        mprof__walker_track_name(c->w, i, buf, sizeof buf);
        if (t->kind == MPROF_TRACK_THREAD || t->kind == MPROF_TRACK_FIBER)
            meta(c, "thread_name", process_pid(t->process), track_tid(c, i), buf, (int)i);
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
            const mprof_process_def *p = multi ? mprof_reader_process(c->r, f->process) : NULL;
            if (p) { /* whose frames they are */
                snprintf(name, sizeof name, "%s (%s)", nm ? nm : "frames", p->name);
                nm = name;
            }
            meta(c, "thread_name", PID_FRAMES, FRAME_TID_BASE + i, nm ? nm : "frames", (int)i);
        }
    }
}

int mprof__export_chrome(const char *path, FILE *out, char *err, size_t errlen)
{
    return mprof__export_chrome_range(path, NULL, out, err, errlen);
}

/* The walker's hook for every event other than a zone's: messages, plots, the system records,
 * and a redefined source location's pieces dropped. */
static int on_other(void *user, const mprof_event *ev)
{
    chrome *c = user;
    if (ev->type == MPROF_EV_DEF_SRCLOC && ev->u[0] < c->n_loc) {
        piece_free(&c->loc_name[ev->u[0]]);
        piece_free(&c->loc_args[ev->u[0]]);
    }
    on_event(c, ev);
    if (c->sys && MPROF_EV_IS_PROCESS(ev->type)) {
        flush_buf(c);
        if (mprof__sys_chrome_event(c->sys, c->out, &c->events, c->range, ev) != 0)
            return -1;
    }
    return c->oom ? -1 : 0;
}

static void chrome_free(chrome *c)
{
    for (uint32_t i = 0; i < c->n_loc; i++) {
        piece_free(&c->loc_name[i]);
        piece_free(&c->loc_args[i]);
    }
    for (uint32_t i = 0; i < c->n_trk; i++)
        piece_free(&c->trk[i]);
    free(c->loc_name);
    free(c->loc_args);
    free(c->trk);
    free(c->buf);
    mprof__sys_chrome_free(c->sys);
    mprof__walker_free(c->w);
    mprof_reader_close(c->r);
}

int mprof__export_chrome_range(const char *path, const mprof_export_range *range, FILE *out,
                               char *err, size_t errlen)
{
    chrome c = {.out = out, .range = range};
    c.r = mprof_reader_open(path, err, errlen);
    if (!c.r)
        return -1;
    mprof_tl_hooks h = {.user = &c, .zone = on_zone, .lock_span = on_lock, .memory = on_memory,
                        .frame = on_frame, .async_span = on_async,
                        .other = on_other};
    c.w = mprof__walker_new(c.r, &h, 0);
    c.buf = malloc(BUF_BYTES);
    if (!c.w || !c.buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        chrome_free(&c);
        return -1;
    }
    c.sys = mprof__sys_chrome_new(); /* NULL: no thread states (out of memory) */
    fputs("{\"traceEvents\":[", out);
    mprof_batch b;
    int rc;
    while ((rc = mprof_reader_next_batch(c.r, &b)) == 1) {
        if (mprof__walker_batch(c.w, &b) != 0 || c.oom) {
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
        flush_buf(&c);
        if (c.sys)
            mprof__sys_chrome_meta(c.sys, c.r, out, &c.events);
        fputs("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":\"mprof\",\"capture\":", out);
        mprof_json_write_string(out, path, strlen(path));
        fputs("}}\n", out);
    }
    flush_buf(&c);
    chrome_free(&c);
    return ret;
}
