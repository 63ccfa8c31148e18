/*
 * merge.c - several captures re-encoded into one, each input a process of it (merge.h).
 *
 * Each input is read one event at a time (mprof_reader_next, which checks everything the reader
 * checks); the inputs are interleaved by a k-way merge on their events' times moved onto the
 * merged timeline, taking always the input whose next event is earliest. Inside an input the
 * file order is kept, so every thread's events stay in their order and definitions precede
 * their uses; an event without a time goes with the one before it. Ids are renumbered as their
 * definitions come (a definition always makes a new id, so a redefined id stays apart), and an
 * id used without a definition gets a new id of its own, so nothing of one process can name
 * another's. The output is framed as the library frames it: EVENTS chunks of about 1 MiB,
 * compressed with zstd, each restarting the timestamp deltas and the thread context.
 *
 * The merged clock is nanoseconds (ns_per_tick 1, tick0 0). Where each input's time 0 lies on
 * it: `--offset` when given; else, for inputs of one host with one timer (INFO `hostname` and
 * `timer` equal to the first input's), the distance between their tick0 on the first input's
 * clock (`clock`); else the distance between their wall-clock starts (`wallclock`). The
 * earliest origin becomes time 0.
 */
#include "format/merge.h"
#include "format/decode.h"
#include "format/format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define CHUNK_BYTES (1u << 20)
#define ZSTD_LEVEL 3
#define MAX_MAP (1u << 24) /* the reader's own limit on ids */

/* Old id -> merged id (0 = not mapped yet). */
typedef struct idmap {
    uint32_t *v;
    uint32_t n;
} idmap;

typedef struct src {
    const mprof_merge_input *in;
    mprof_reader *r;
    int multi;          /* a merged capture: its processes are kept */
    uint32_t base;      /* merged index (1-based) of its first process, minus 1 */
    uint32_t n_procs;
    unsigned char *proc_ended; /* PROCESS_END seen, per process */
    int64_t shift_ns;   /* added to its times */
    const char *alignment;
    mprof_event head;
    int done;
    int64_t key;        /* the time of head on the merged timeline (or of the event before it) */
    uint64_t counted, lost;
    idmap locs, strs, threads, stacks, locks, gpus;
} src;

typedef struct tstate {
    uint64_t last, stamp;
} tstate;

typedef struct merger {
    FILE *f;
    mprof_buf ev, framed;
    ZSTD_CCtx *cctx;
    uint64_t chunk_no; /* stamp of the chunk being filled (from 1) */
    uint32_t cur;
    int cur_set;
    tstate *ts;
    uint32_t n_ts;
    uint64_t chunks, counted;
    uint32_t next_loc, next_str, next_thread, next_stack, next_lock, next_gpu;
    char *err;
    size_t errlen;
} merger;

static int mfail(merger *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int mfail(merger *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, m->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The merged id of old, a new one from *next the first time. Returns 0, or -1 (old past the
 * reader's limit, or out of memory). */
static int map_id(idmap *mp, uint32_t old, uint32_t *next, uint32_t *out)
{
    if (old >= mp->n && mprof_grow_zeroed((void **)&mp->v, &mp->n, old, sizeof *mp->v, MAX_MAP))
        return -1;
    if (!mp->v[old])
        mp->v[old] = ++*next;
    *out = mp->v[old];
    return 0;
}

/* A definition: always a new merged id. */
static int map_new(idmap *mp, uint32_t old, uint32_t *next, uint32_t *out)
{
    if (old >= mp->n && mprof_grow_zeroed((void **)&mp->v, &mp->n, old, sizeof *mp->v, MAX_MAP))
        return -1;
    *out = mp->v[old] = ++*next;
    return 0;
}

/* ---- the output: chunks framed as the library frames them -------------------------------- */

static int write_bytes(merger *m, const void *p, size_t n)
{
    return fwrite(p, 1, n, m->f) == n ? 0 : -1;
}

static int flush_events(merger *m)
{
    if (!m->ev.len)
        return 0;
    m->framed.len = 0;
    if (mprof_fmt_chunk(&m->framed, MPROF_CHUNK_EVENTS, m->ev.data, m->ev.len, ZSTD_LEVEL,
                        m->cctx) != 0 ||
        write_bytes(m, m->framed.data, m->framed.len) != 0)
        return -1;
    m->chunks++;
    m->chunk_no++;
    m->ev.len = 0;
    m->cur_set = 0; /* a chunk starts in the process context, with absolute timestamps */
    return 0;
}

static int write_kv_chunk(merger *m, int kind, const mprof_buf *kv)
{
    m->framed.len = 0;
    if (mprof_fmt_chunk(&m->framed, kind, kv->data, kv->len, 0, NULL) != 0 ||
        write_bytes(m, m->framed.data, m->framed.len) != 0)
        return -1;
    m->chunks++;
    return 0;
}

static int needs_thread(int tag)
{
    return (tag >= 0x10 || tag == MPROF_EV_THREAD_EXIT) && tag != MPROF_EV_TS_SCALE &&
           !MPROF_EV_IS_PROCESS(tag);
}

/* Appends ev (merged ids, thread ev->thread) in the compact form, its TS at ts_ns. The event
 * table drives it: one encoder for every tag. Returns 0, or -1. */
static int emit(merger *m, const mprof_event *ev, int64_t ts_ns)
{
    const mprof_event_desc *d = mprof_event_desc_get(ev->type);
    if (!d)
        return mfail(m, "event tag 0x%02x has no description", ev->type);
    size_t need = 32 + 10 * MPROF_MAX_FIELDS + 3 * 10;
    for (int i = 0; i < 3; i++)
        need += ev->str_lens[i];
    if (ev->type == MPROF_EV_DEF_CALLSTACK)
        need += 10 * (size_t)ev->u[1];
    if (m->ev.len && m->ev.len + need > CHUNK_BYTES && flush_events(m) != 0)
        return -1;
    if (mprof_buf_reserve(&m->ev, need) != 0)
        return mfail(m, "out of memory");
    unsigned char *p = m->ev.data + m->ev.len;
    if ((d->has_ts || needs_thread(ev->type)) && (!m->cur_set || m->cur != ev->thread)) {
        if (ev->thread >= m->n_ts &&
            mprof_grow_zeroed((void **)&m->ts, &m->n_ts, ev->thread, sizeof *m->ts, MAX_MAP))
            return mfail(m, "out of memory");
        *p++ = MPROF_EV_THREAD;
        p = mprof_put_varint(p, ev->thread);
        m->cur = ev->thread;
        m->cur_set = 1;
    }
    *p++ = (unsigned char)ev->type;
    int ui = 0, si = 0;
    for (int i = 0; i < d->n_fields; i++) {
        switch (d->fields[i]) {
        case MPROF_F_TS: {
            /* A thread's first TS in a chunk is absolute, the next ones deltas (scale 1). */
            tstate *t = &m->ts[m->cur];
            uint64_t ticks = (uint64_t)ts_ns;
            int64_t v = t->stamp == m->chunk_no ? (int64_t)(ticks - t->last) : (int64_t)ticks;
            t->last = ticks;
            t->stamp = m->chunk_no;
            p = mprof_put_varint(p, mprof_zigzag(v));
            break;
        }
        case MPROF_F_U8:
            *p++ = (unsigned char)ev->u[ui++];
            break;
        case MPROF_F_F64:
            mprof_wr_u64(p, ev->u[ui++]);
            p += 8;
            break;
        case MPROF_F_I64:
            p = mprof_put_varint(p, mprof_zigzag((int64_t)ev->u[ui++]));
            break;
        case MPROF_F_STR: {
            uint32_t n = si < 3 && ev->strs[si] ? ev->str_lens[si] : 0;
            p = mprof_put_str(p, n ? ev->strs[si] : "", n);
            si++;
            break;
        }
        default:
            p = mprof_put_varint(p, ev->u[ui++]);
            break;
        }
    }
    if (ev->type == MPROF_EV_DEF_CALLSTACK)
        for (uint64_t k = 0; k < ev->u[1]; k++)
            p = mprof_put_varint(p, ev->frames[k]);
    m->ev.len = (size_t)(p - m->ev.data);
    m->counted += mprof_event_counted(ev->type) != 0;
    return 0;
}

/* Appends the pairs of l to b, but those of key skip (NULL: none). */
static int kv_encode(mprof_buf *b, const mprof__kvlist *l, const char *skip)
{
    for (size_t i = 0; l && i < l->n; i++)
        if ((!skip || strcmp(l->items[i].key, skip) != 0) &&
            mprof_fmt_kv(b, l->items[i].key, l->items[i].value) != 0)
            return -1;
    return 0;
}

static const char *kv_find(const mprof__kvlist *l, const char *key)
{
    for (size_t i = l ? l->n : 0; i-- > 0;)
        if (strcmp(l->items[i].key, key) == 0)
            return l->items[i].value;
    return NULL;
}

/* ---- one input ------------------------------------------------------------------------------ */

/* The merged index of a thread of s, made (with its THREAD_PROCESS) the first time. */
static int map_thread(merger *m, src *s, uint32_t old, uint32_t *out)
{
    if (old == 0) {
        *out = 0; /* the process context: one for all (its records name OS threads) */
        return 0;
    }
    uint32_t before = m->next_thread;
    if (map_id(&s->threads, old, &m->next_thread, out) != 0)
        return mfail(m, "%s: thread index %u out of range", s->in->path, old);
    if (m->next_thread == before)
        return 0;
    uint32_t proc = 0;
    if (s->multi) {
        const mprof_thread_def *t = mprof_reader_thread(s->r, old);
        proc = t ? t->process : 0;
    }
    mprof_event tp = {.type = MPROF_EV_THREAD_PROCESS};
    tp.u[0] = *out;
    tp.u[1] = s->base + proc + 1;
    return emit(m, &tp, 0);
}

/* Reads the next event of s that goes to the output into s->head (s->done at the end). */
static int advance(merger *m, src *s)
{
    for (;;) {
        int rc = mprof_reader_next(s->r, &s->head);
        if (rc < 0)
            return mfail(m, "%s: %s", s->in->path, mprof_reader_error(s->r));
        if (rc == 0) {
            s->done = 1;
            return 0;
        }
        int t = s->head.type;
        /* Thread switches are the output's own; calibrations tie ticks to a clock the merged
         * capture does not have (its ticks are nanoseconds); a merged input's processes were
         * defined before everything else. */
        if (t == MPROF_EV_THREAD || t == MPROF_EV_CALIBRATION ||
            (t == MPROF_EV_DEF_PROCESS && s->multi))
            continue;
        const mprof_event_desc *d = mprof_event_desc_get(t);
        if (d && d->has_ts)
            s->key = s->head.ts_ns + s->shift_ns;
        return 0;
    }
}

static int is_lock(int t)
{
    return t >= MPROF_EV_LOCK_ANNOUNCE && t <= MPROF_EV_LOCK_TRY_FAILED;
}

static int is_gpu(int t)
{
    return t >= MPROF_EV_GPU_CONTEXT && t <= MPROF_EV_GPU_TIME;
}

/* Writes s->head with its ids renumbered. */
static int take(merger *m, src *s)
{
    mprof_event ev = s->head;
    const mprof_event_desc *d = mprof_event_desc_get(ev.type);
    if (!d)
        return mfail(m, "%s: event tag 0x%02x has no description", s->in->path, ev.type);
    uint32_t id = 0;
    int bad = 0;
    switch (ev.type) {
    case MPROF_EV_DEF_SRCLOC:
        bad = map_new(&s->locs, (uint32_t)ev.u[0], &m->next_loc, &id);
        ev.u[0] = id;
        break;
    case MPROF_EV_DEF_STRING:
        bad = map_new(&s->strs, (uint32_t)ev.u[0], &m->next_str, &id);
        ev.u[0] = id;
        break;
    case MPROF_EV_DEF_CALLSTACK:
        bad = map_new(&s->stacks, (uint32_t)ev.u[0], &m->next_stack, &id);
        ev.u[0] = id;
        break;
    case MPROF_EV_DEF_THREAD:
    case MPROF_EV_THREAD_PROCESS:
        if (map_thread(m, s, (uint32_t)ev.u[0], &id) != 0)
            return -1;
        ev.u[0] = id;
        if (ev.type == MPROF_EV_THREAD_PROCESS)
            ev.u[1] += s->base;
        break;
    case MPROF_EV_PROCESS_END:
        if (ev.u[0] >= 1 && ev.u[0] <= s->n_procs)
            s->proc_ended[ev.u[0] - 1] = 1;
        ev.u[0] += s->base;
        break;
    default: {
        /* Every LOC, NAME and CS field, by the event table. */
        int ui = 0;
        for (int i = 0; i < d->n_fields && !bad; i++) {
            int k = d->fields[i];
            if (k == MPROF_F_TS || k == MPROF_F_STR)
                continue;
            uint64_t *u = &ev.u[ui++];
            if (*u == 0 || (k != MPROF_F_LOC && k != MPROF_F_NAME && k != MPROF_F_CS))
                continue;
            idmap *mp = k == MPROF_F_LOC ? &s->locs : k == MPROF_F_NAME ? &s->strs : &s->stacks;
            uint32_t *next = k == MPROF_F_LOC    ? &m->next_loc
                             : k == MPROF_F_NAME ? &m->next_str
                                                 : &m->next_stack;
            bad = map_id(mp, (uint32_t)*u, next, &id);
            *u = id;
        }
        /* Lock ids and GPU contexts are the process's own numbering too (GPU context 0 is
         * none). */
        if (!bad && is_lock(ev.type)) {
            bad = map_id(&s->locks, (uint32_t)ev.u[0], &m->next_lock, &id);
            ev.u[0] = id;
        } else if (!bad && is_gpu(ev.type) && ev.u[0]) {
            bad = map_id(&s->gpus, (uint32_t)ev.u[0], &m->next_gpu, &id);
            ev.u[0] = id;
        }
        break;
    }
    }
    if (bad)
        return mfail(m, "%s: an id of event tag 0x%02x is out of range", s->in->path, ev.type);
    if (map_thread(m, s, ev.thread, &id) != 0)
        return -1;
    ev.thread = id;
    if (mprof_event_counted(ev.type))
        s->counted++;
    if (ev.type == MPROF_EV_LOST)
        s->lost += ev.u[0];
    return emit(m, &ev, ev.ts_ns + s->shift_ns);
}

/* The PROCESS_END records of an input that has no more events, for each of its processes that
 * did not have one: its END (an input that is one process), marked when it ended early. */
static int finish_src(merger *m, src *s, mprof_merge_result *res)
{
    mprof_reader_stats st;
    mprof_reader_get_stats(s->r, &st);
    for (uint32_t p = 0; p < s->n_procs; p++) {
        if (s->proc_ended[p]) {
            const mprof_process_def *pd = mprof_reader_process(s->r, p);
            if (pd && pd->ended_by)
                res->ended_early++;
            res->events_lost += pd ? pd->events_lost : 0;
            continue;
        }
        mprof_buf kv = {0};
        int oom = 0;
        const mprof__kvlist *end = mprof__reader_capture_kv(s->r, MPROF__KV_END);
        const char *by = NULL;
        uint64_t lost = s->lost;
        if (!s->multi) {
            /* A whole part's END says nothing of an early end, whatever it holds. */
            int whole = mprof_reader_stats_whole(&st);
            oom |= kv_encode(&kv, end, whole ? "ended_by" : NULL);
            const char *l = kv_find(end, "events_lost");
            if (l && strtoull(l, NULL, 10) > lost)
                lost = strtoull(l, NULL, 10);
            if (!mprof_reader_stats_whole(&st)) {
                by = kv_find(end, "ended_by");
                if (!by || !*by) {
                    by = st.complete ? (st.chunks_missing || st.events_missing ? "chunks-missing"
                                                                               : mprof_ending_name(st.ending))
                                     : "cut-off";
                    oom |= mprof_fmt_kv(&kv, "ended_by", by);
                }
            }
            if (!st.complete) {
                char v[32];
                snprintf(v, sizeof v, "%" PRIu64, s->counted);
                oom |= mprof_fmt_kv(&kv, "events", v);
                snprintf(v, sizeof v, "%" PRIu64, lost);
                oom |= mprof_fmt_kv(&kv, "events_lost", v);
            }
        } else {
            /* A merged input cut off before this process's end. */
            by = "cut-off";
            oom |= mprof_fmt_kv(&kv, "ended_by", by);
            lost = 0;
        }
        if (by)
            res->ended_early++;
        res->events_lost += lost;
        mprof_event pe = {.type = MPROF_EV_PROCESS_END};
        pe.u[0] = s->base + p + 1;
        pe.strs[0] = pe.str = (const char *)kv.data;
        pe.str_lens[0] = pe.str_len = (uint32_t)kv.len;
        int rc = oom ? mfail(m, "out of memory") : emit(m, &pe, 0);
        mprof_buf_free(&kv);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Where each input's time 0 lies, relative to the first's; the alignment it was placed by. */
static int place(merger *m, src *s, uint32_t n, int64_t *pos)
{
    const mprof_reader *r0 = s[0].r;
    const char *host0 = mprof_reader_info(r0, "hostname"), *timer0 = mprof_reader_info(r0, "timer");
    const char *t00 = mprof_reader_info(r0, "tick0"), *w0 = mprof_reader_info(r0, "start_unix_ns");
    double npt0 = mprof_reader_ns_per_tick(r0);
    for (uint32_t i = 0; i < n; i++) {
        const mprof_reader *r = s[i].r;
        const char *host = mprof_reader_info(r, "hostname"), *timer = mprof_reader_info(r, "timer");
        const char *t0 = mprof_reader_info(r, "tick0"), *w = mprof_reader_info(r, "start_unix_ns");
        if (s[i].in->has_offset) {
            if (i == 0)
                return mfail(m, "%s: the first input is where the others are placed from: "
                             "--offset applies to the others", s[i].in->path);
            pos[i] = s[i].in->offset_ns;
            s[i].alignment = "offset";
        } else if (i == 0) {
            pos[i] = 0;
            s[i].alignment = NULL; /* the reference: as the others are */
        } else if (!s[0].multi && !s[i].multi && host && host0 && *host && strcmp(host, host0) == 0 &&
                   timer && timer0 && *timer && strcmp(timer, timer0) == 0 && t0 && t00) {
            int64_t dt = (int64_t)(strtoull(t0, NULL, 10) - strtoull(t00, NULL, 10));
            pos[i] = (int64_t)((double)dt * npt0);
            s[i].alignment = "clock";
        } else {
            if (!w || !w0)
                return mfail(m, "%s: cannot be placed beside %s: they are not of one host and "
                             "clock, and one has no wall-clock start (give --offset %s=NS)",
                             s[i].in->path, s[0].in->path, s[i].in->path);
            pos[i] = (int64_t)(strtoull(w, NULL, 10) - strtoull(w0, NULL, 10));
            s[i].alignment = "wallclock";
        }
    }
    const char *first = n > 1 ? s[1].alignment : "clock";
    s[0].alignment = first;
    return 0;
}

/* The processes of a merged input: a second reader reads up to its first event that is not a
 * definition (the merger writes them all first). */
static int procs_of(merger *m, src *s)
{
    char err[256];
    if (!s->multi) {
        s->n_procs = 1;
    } else {
        mprof_reader *r = mprof_reader_open(s->in->path, err, sizeof err);
        if (!r)
            return mfail(m, "%s", err);
        mprof_event ev;
        int rc;
        while ((rc = mprof_reader_next(r, &ev)) == 1 && ev.type != MPROF_EV_THREAD_PROCESS &&
               !mprof_event_counted(ev.type))
            ;
        if (rc < 0) {
            mfail(m, "%s: %s", s->in->path, mprof_reader_error(r));
            mprof_reader_close(r);
            return -1;
        }
        s->n_procs = mprof_reader_process_count(r);
        mprof_reader_close(r);
    }
    s->proc_ended = calloc(s->n_procs, 1);
    return s->proc_ended ? 0 : mfail(m, "out of memory");
}

/* DEF_PROCESS for each process of s (a merged input's: read again up to its definitions). */
static int define_procs(merger *m, src *s)
{
    char err[256];
    mprof_reader *r = s->r;
    int own = 0;
    if (s->multi) {
        if (!(r = mprof_reader_open(s->in->path, err, sizeof err)))
            return mfail(m, "%s", err);
        own = 1;
        mprof_event ev;
        int rc;
        while ((rc = mprof_reader_next(r, &ev)) == 1 && ev.type != MPROF_EV_THREAD_PROCESS &&
               !mprof_event_counted(ev.type))
            ;
    }
    int rc = 0;
    for (uint32_t p = 0; p < s->n_procs && rc == 0; p++) {
        const mprof_process_def *pd = mprof_reader_process(r, p);
        mprof_buf info = {0};
        int oom = kv_encode(&info, mprof__reader_kv(r, MPROF__KV_INFO, p), NULL);
        if (!s->multi) {
            char v[32];
            snprintf(v, sizeof v, "%" PRId64, s->shift_ns);
            oom |= mprof_fmt_kv(&info, "merge_alignment", s->alignment);
            oom |= mprof_fmt_kv(&info, "merge_offset_ns", v);
            oom |= mprof_fmt_kv(&info, "merge_source", s->in->path);
        }
        const char *name = !s->multi && s->in->name ? s->in->name : pd ? pd->name : "";
        mprof_event dp = {.type = MPROF_EV_DEF_PROCESS};
        dp.u[0] = s->base + p + 1;
        dp.u[1] = pd ? pd->pid : 0;
        dp.strs[0] = dp.str = name;
        dp.str_lens[0] = dp.str_len = (uint32_t)strlen(name);
        dp.strs[1] = (const char *)info.data;
        dp.str_lens[1] = (uint32_t)info.len;
        rc = oom ? mfail(m, "out of memory") : emit(m, &dp, 0);
        mprof_buf_free(&info);
    }
    if (own)
        mprof_reader_close(r);
    return rc;
}

/* The merged INFO: the clock (nanoseconds from 0), the earliest start, the processes, how they
 * were aligned, and the keys every input agrees on that readers use. */
static int write_info(merger *m, src *s, uint32_t n, int64_t min_pos, uint32_t procs,
                      const char *alignment)
{
    mprof_buf kv = {0};
    char v[64];
    int oom = 0;
    snprintf(v, sizeof v, "mprof %d.%d", MPROF_FMT_VERSION_MAJOR, MPROF_FMT_VERSION_MINOR);
    oom |= mprof_fmt_kv(&kv, "format", v);
    /* The app: the processes' names, joined. */
    mprof_buf app = {0};
    for (uint32_t i = 0; i < n && !oom; i++) {
        const char *a = s[i].in->name ? s[i].in->name : mprof_reader_info(s[i].r, "app");
        if (!a)
            a = "?";
        size_t l = strlen(a);
        oom |= mprof_buf_reserve(&app, l + 4);
        if (oom)
            break;
        if (app.len) {
            memcpy(app.data + app.len, " + ", 3);
            app.len += 3;
        }
        memcpy(app.data + app.len, a, l + 1);
        app.len += l;
    }
    if (!oom)
        oom |= mprof_fmt_kv(&kv, "app", app.len ? (const char *)app.data : "");
    mprof_buf_free(&app);
    oom |= mprof_fmt_kv(&kv, "ns_per_tick", "1");
    oom |= mprof_fmt_kv(&kv, "tick0", "0");
    const char *w0 = mprof_reader_info(s[0].r, "start_unix_ns");
    if (w0) {
        snprintf(v, sizeof v, "%" PRId64, (int64_t)strtoull(w0, NULL, 10) + min_pos);
        oom |= mprof_fmt_kv(&kv, "start_unix_ns", v);
    }
    snprintf(v, sizeof v, "%" PRIu32, procs);
    oom |= mprof_fmt_kv(&kv, "processes", v);
    oom |= mprof_fmt_kv(&kv, "merge_alignment", alignment);
    oom |= mprof_fmt_kv(&kv, "merged_by", "mprof merge");
    /* Keys the inputs agree on, and the first input's system tracing keys (which say what the
     * system records mean). */
    static const char *const same[] = {"hostname", "timer", "os", "cpu", "cores", "zone_cost_ns"};
    for (size_t k = 0; k < sizeof same / sizeof *same; k++) {
        const char *v0 = mprof_reader_info(s[0].r, same[k]);
        int all = v0 != NULL;
        for (uint32_t i = 1; i < n && all; i++) {
            const char *vi = mprof_reader_info(s[i].r, same[k]);
            all = vi && strcmp(vi, v0) == 0;
        }
        if (all)
            oom |= mprof_fmt_kv(&kv, same[k], v0);
    }
    const mprof__kvlist *i0 = mprof__reader_capture_kv(s[0].r, MPROF__KV_INFO);
    for (size_t k = 0; k < i0->n; k++)
        if (strncmp(i0->items[k].key, "system.", 7) == 0)
            oom |= mprof_fmt_kv(&kv, i0->items[k].key, i0->items[k].value);
    int rc = oom ? mfail(m, "out of memory") : write_kv_chunk(m, MPROF_CHUNK_INFO, &kv);
    mprof_buf_free(&kv);
    return rc;
}

static int write_end(merger *m, const mprof_merge_result *res)
{
    mprof_buf kv = {0};
    char v[32];
    int oom = 0;
    snprintf(v, sizeof v, "%" PRIu64, m->counted);
    oom |= mprof_fmt_kv(&kv, "events", v);
    snprintf(v, sizeof v, "%" PRIu64, res->events_lost);
    oom |= mprof_fmt_kv(&kv, "events_lost", v);
    snprintf(v, sizeof v, "%" PRIu64, m->chunks);
    oom |= mprof_fmt_kv(&kv, "chunks", v);
    snprintf(v, sizeof v, "%" PRIu32, res->ended_early);
    oom |= mprof_fmt_kv(&kv, "processes_ended_early", v);
    int rc = oom ? mfail(m, "out of memory") : write_kv_chunk(m, MPROF_CHUNK_END, &kv);
    mprof_buf_free(&kv);
    return rc;
}

static int run(merger *m, src *s, uint32_t n, mprof_merge_result *res)
{
    int64_t *pos = calloc(n, sizeof *pos);
    if (!pos)
        return mfail(m, "out of memory");
    int rc = place(m, s, n, pos);
    int64_t min_pos = 0;
    for (uint32_t i = 0; i < n; i++)
        min_pos = pos[i] < min_pos ? pos[i] : min_pos;
    /* Every input's alignment, and the merged capture's: one word, or "mixed". */
    const char *alignment = s[0].alignment;
    uint32_t procs = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        s[i].shift_ns = pos[i] - min_pos;
        if (strcmp(s[i].alignment, alignment) != 0)
            alignment = "mixed";
        s[i].base = procs;
        rc = procs_of(m, &s[i]);
        procs += s[i].n_procs;
    }
    free(pos);
    if (rc != 0)
        return -1;
    res->processes = procs;
    snprintf(res->alignment, sizeof res->alignment, "%s", alignment);
    unsigned char fh[MPROF_FMT_HEADER_BYTES];
    mprof_fmt_file_header(fh);
    if (write_bytes(m, fh, sizeof fh) != 0 || write_info(m, s, n, min_pos, procs, alignment) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (define_procs(m, &s[i]) != 0)
            return -1;
        s[i].key = INT64_MIN;
        if (advance(m, &s[i]) != 0)
            return -1;
    }
    for (;;) {
        src *best = NULL;
        for (uint32_t i = 0; i < n; i++)
            if (!s[i].done && (!best || s[i].key < best->key))
                best = &s[i];
        if (!best)
            break;
        if (take(m, best) != 0 || advance(m, best) != 0)
            return -1;
        if (best->done && finish_src(m, best, res) != 0)
            return -1;
    }
    if (flush_events(m) != 0)
        return -1;
    res->events = m->counted;
    return write_end(m, res);
}

int mprof_merge(const mprof_merge_input *in, uint32_t n, const char *out_path,
                mprof_merge_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    err[0] = 0;
    if (n == 0) {
        snprintf(err, errlen, "no input to merge");
        return -1;
    }
    merger m = {.chunk_no = 1, .err = err, .errlen = errlen};
    src *s = calloc(n, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        s[i].in = &in[i];
        s[i].r = mprof_reader_open(in[i].path, err, errlen);
        if (!s[i].r)
            rc = -1;
        else
            s[i].multi = mprof_reader_info(s[i].r, "processes") != NULL;
    }
    /* Written beside out_path, renamed when whole: a failed merge leaves nothing half-made. */
    size_t pl = strlen(out_path) + 16;
    char *tmp = malloc(pl);
    if (rc == 0 && !tmp)
        rc = mfail(&m, "out of memory");
    if (rc == 0) {
        snprintf(tmp, pl, "%s.merging", out_path);
        m.cctx = ZSTD_createCCtx();
        m.f = fopen(tmp, "wb");
        if (!m.f)
            rc = mfail(&m, "cannot create %s: %s", tmp, strerror(errno));
        else if (!m.cctx)
            rc = mfail(&m, "out of memory");
    }
    if (rc == 0 && run(&m, s, n, res) != 0)
        rc = -1;
    if (m.f) {
        int io = ferror(m.f);
        if (fclose(m.f) != 0 || io) {
            if (rc == 0)
                rc = mfail(&m, "writing %s failed: %s", tmp, strerror(errno ? errno : EIO));
        }
        if (rc == 0 && rename(tmp, out_path) != 0)
            rc = mfail(&m, "cannot rename %s to %s: %s", tmp, out_path, strerror(errno));
        if (rc != 0)
            remove(tmp);
    }
    /* A write that failed inside the run names no file: say which. */
    if (rc != 0 && !err[0])
        snprintf(err, errlen, "writing %s failed", out_path);
    free(tmp);
    for (uint32_t i = 0; i < n; i++) {
        mprof_reader_close(s[i].r);
        free(s[i].proc_ended);
        free(s[i].locs.v);
        free(s[i].strs.v);
        free(s[i].threads.v);
        free(s[i].stacks.v);
        free(s[i].locks.v);
        free(s[i].gpus.v);
    }
    free(s);
    mprof_buf_free(&m.ev);
    mprof_buf_free(&m.framed);
    free(m.ts);
    ZSTD_freeCCtx(m.cctx);
    return rc;
}
