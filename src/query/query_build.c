/*
 * query_build.c - a capture streamed into SQLite tables (query.h, docs/QUERY.md).
 *
 * One pass over the capture. Zones are numbered when they begin, so a child's row knows its
 * parent's id, and written when they end (with their duration and self time); the open zones
 * of each track (a thread's own, or a fiber's) are all that is held. The walker
 * (analysis/timeline.h) gives what completes later than it begins: frames, lock spans, GPU zones
 * (joined to the CPU zone that was open on the submitting thread when it recorded them). An
 * allocation's row gets its free time when the free comes, through a map of the live ones.
 * Everything goes in one transaction with the journal off (the file is a cache, written to a
 * temporary name and renamed when whole); the indexes are made after the rows, which is several
 * times faster than keeping them up to date row by row.
 *
 * Zones lost with their thread's events (a LOST record) are not rows, as mprof report drops
 * them; zones open at the end are rows with unfinished = 1, ending at the capture's last time.
 */
#include "query/query.h"
#include "analysis/symbolize.h"
#include "analysis/timeline.h"
#include "format/batch.h"
#include "util/grow.h"
#include "util/tool.h"
#include "util/umap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

static const char *const schema_sql =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE threads(id INTEGER PRIMARY KEY, name TEXT, tid INTEGER);"
    "CREATE TABLE locations(loc INTEGER PRIMARY KEY, name TEXT, function TEXT, file TEXT,"
    " line INTEGER, color INTEGER);"
    "CREATE TABLE zone_rows(id INTEGER PRIMARY KEY, thread INTEGER, loc INTEGER,"
    " start_ns INTEGER, dur_ns INTEGER, self_ns INTEGER, depth INTEGER, parent_id INTEGER,"
    " fiber TEXT, dynamic_name TEXT, text TEXT, value INTEGER, unfinished INTEGER);"
    "CREATE VIEW zones AS SELECT z.id AS id, z.thread AS thread, l.name AS name,"
    " l.function AS function, l.file AS file, l.line AS line, z.start_ns AS start_ns,"
    " z.dur_ns AS dur_ns, z.self_ns AS self_ns, z.depth AS depth, z.parent_id AS parent_id,"
    " l.color AS color, z.fiber AS fiber, z.dynamic_name AS dynamic_name, z.text AS text,"
    " z.value AS value, z.unfinished AS unfinished, z.loc AS loc"
    " FROM zone_rows z LEFT JOIN locations l ON l.loc = z.loc;"
    "CREATE TABLE frames(frame_set TEXT, number INTEGER, start_ns INTEGER, dur_ns INTEGER);"
    "CREATE TABLE plots(name TEXT, thread INTEGER, ts_ns INTEGER, value REAL);"
    "CREATE TABLE messages(id INTEGER PRIMARY KEY, thread INTEGER, ts_ns INTEGER,"
    " level INTEGER, level_name TEXT, text TEXT);"
    "CREATE TABLE allocs(id INTEGER PRIMARY KEY, thread INTEGER, pool TEXT, ptr INTEGER,"
    " size INTEGER, ts_ns INTEGER, free_ns INTEGER, free_thread INTEGER);"
    "CREATE TABLE locks(lock INTEGER, name TEXT, thread INTEGER, kind TEXT, start_ns INTEGER,"
    " dur_ns INTEGER, shared INTEGER);"
    "CREATE TABLE gpu_rows(id INTEGER PRIMARY KEY, context INTEGER, context_name TEXT,"
    " loc INTEGER, start_ns INTEGER, dur_ns INTEGER, depth INTEGER, submit_ns INTEGER,"
    " submit_thread INTEGER, cpu_zone_id INTEGER);"
    "CREATE VIEW gpu_zones AS SELECT g.id AS id, g.context AS context,"
    " g.context_name AS context_name, l.name AS name, l.function AS function, l.file AS file,"
    " l.line AS line, g.start_ns AS start_ns, g.dur_ns AS dur_ns, g.depth AS depth,"
    " g.submit_ns AS submit_ns, g.submit_thread AS submit_thread,"
    " g.cpu_zone_id AS cpu_zone_id, g.loc AS loc"
    " FROM gpu_rows g LEFT JOIN locations l ON l.loc = g.loc;"
    "CREATE TABLE switches(ts_ns INTEGER, tid INTEGER, thread INTEGER, cpu INTEGER,"
    " direction TEXT, reason TEXT);"
    "CREATE TABLE samples(id INTEGER PRIMARY KEY, ts_ns INTEGER, tid INTEGER,"
    " thread INTEGER, callstack INTEGER, function TEXT, file TEXT, line INTEGER);"
    "CREATE TABLE callstacks(callstack INTEGER, depth INTEGER, address INTEGER,"
    " function TEXT, file TEXT, line INTEGER, PRIMARY KEY(callstack, depth));";

/* The usual joins: zones of a thread by time, zones in a frame (by start), zones of a site,
 * a zone's children; the rest by time. */
static const char *const index_sql =
    "CREATE INDEX zones_thread_start ON zone_rows(thread, start_ns);"
    "CREATE INDEX zones_start ON zone_rows(start_ns);"
    "CREATE INDEX zones_loc ON zone_rows(loc);"
    "CREATE INDEX zones_parent ON zone_rows(parent_id);"
    "CREATE INDEX locations_name ON locations(name);"
    "CREATE INDEX frames_start ON frames(frame_set, start_ns);"
    "CREATE INDEX plots_name ON plots(name, ts_ns);"
    "CREATE INDEX messages_ts ON messages(ts_ns);"
    "CREATE INDEX allocs_ts ON allocs(ts_ns);"
    "CREATE INDEX locks_start ON locks(start_ns);"
    "CREATE INDEX gpu_start ON gpu_rows(start_ns);"
    "CREATE INDEX gpu_cpu_zone ON gpu_rows(cpu_zone_id);"
    "CREATE INDEX switches_tid ON switches(tid, ts_ns);"
    "CREATE INDEX samples_ts ON samples(ts_ns);";

int mprof__query_schema(sqlite3 *db, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db, schema_sql, NULL, NULL, &msg) != SQLITE_OK) {
        tool_seterr(err, errlen, "cannot create the query tables: %s", msg ? msg : "?");
        sqlite3_free(msg);
        return MPROF_QUERY_IO;
    }
    return MPROF_QUERY_OK;
}

/* ---- the builder's state --------------------------------------------------------------------- */

enum {
    S_ZONE, S_FRAME, S_PLOT, S_MSG, S_ALLOC, S_FREE, S_LOCK, S_GPU, S_SWITCH, S_SAMPLE,
    S_CALLSTACK, S_THREAD, S_LOC, S_META, S_COUNT
};

static const char *const stmt_sql[S_COUNT] = {
    [S_ZONE] = "INSERT INTO zone_rows VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [S_FRAME] = "INSERT INTO frames VALUES(?,?,?,?)",
    [S_PLOT] = "INSERT INTO plots VALUES(?,?,?,?)",
    [S_MSG] = "INSERT INTO messages VALUES(NULL,?,?,?,?,?)",
    [S_ALLOC] = "INSERT INTO allocs VALUES(?,?,?,?,?,?,NULL,NULL)",
    [S_FREE] = "UPDATE allocs SET free_ns = ?, free_thread = ? WHERE id = ?",
    [S_LOCK] = "INSERT INTO locks VALUES(?,?,?,?,?,?,?)",
    [S_GPU] = "INSERT INTO gpu_rows VALUES(NULL,?,?,?,?,?,?,?,?,?)",
    [S_SWITCH] = "INSERT INTO switches VALUES(?,?,?,?,?,?)",
    [S_SAMPLE] = "INSERT INTO samples VALUES(NULL,?,?,?,?,?,?,?)",
    [S_CALLSTACK] = "INSERT OR IGNORE INTO callstacks VALUES(?,?,?,?,?,?)",
    [S_THREAD] = "INSERT INTO threads VALUES(?,?,?)",
    [S_LOC] = "INSERT OR REPLACE INTO locations VALUES(?,?,?,?,?,?)",
    [S_META] = "INSERT OR REPLACE INTO meta VALUES(?,?)",
};

typedef struct qzone {
    int64_t id, start, child;
    uint32_t loc, thread;
    char *text, *name;
    uint32_t text_len, name_len;
    uint64_t value;
    int has_value;
} qzone;

typedef struct qtrack {
    uint32_t fiber_name; /* 0: a thread's own */
    qzone *stack;
    uint32_t depth, cap;
} qtrack;

typedef struct qthread {
    int used;
    uint32_t track, fiber; /* qtracks; fiber NONE when outside */
} qthread;

typedef struct qsubmit {
    uint64_t key;
    int64_t zone; /* the CPU zone open then, -1 none */
} qsubmit;

typedef struct qb {
    sqlite3 *db;
    mprof_reader *r;
    mprof_walker *w;
    sqlite3_stmt *st[S_COUNT];
    qthread *threads;
    uint32_t threads_cap;
    qtrack *tracks;
    uint32_t n_tracks, tracks_cap;
    mprof_umap fibers;     /* fiber name + 1 -> track */
    int64_t next_zone;
    qsubmit *subs;         /* GPU zones recorded and not completed */
    uint32_t n_subs, subs_cap;
    mprof_umap live;       /* hash of (pool, ptr) -> index into live_ids */
    int64_t *live_ids;
    uint32_t *live_pool; /* per slot: pool + 1, 0 when the slot is free */
    uint64_t *live_key;
    uint32_t n_live, live_cap, live_pool_cap, live_key_cap;
    uint32_t *live_free;
    uint32_t n_live_free, live_free_cap;
    int64_t next_alloc;
    uint32_t cur_thread;
    mprof_symbolizer *sym;
    unsigned char *stack_done; /* per callstack id: its rows are written */
    uint32_t stack_cap;
    mprof_query_stats *stats;
    int failed; /* an SQLite call failed: message in err */
    char err[512];
    int oom;
    const mprof_batch *bat; /* the batch being read: its records up to cur_rec are handled */
    uint32_t cur_run, cur_rec;
} qb;

static void step(qb *b, int s)
{
    sqlite3_stmt *st = b->st[s];
    if (b->failed)
        return;
    if (sqlite3_step(st) != SQLITE_DONE) {
        snprintf(b->err, sizeof b->err, "writing the query database failed: %s",
                 sqlite3_errmsg(b->db));
        b->failed = 1;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s, int n)
{
    if (s)
        sqlite3_bind_text(st, i, s, n, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* ---- zones ----------------------------------------------------------------------------------- */

static uint32_t new_track(qb *b, uint32_t fiber_name)
{
    if (MPROF_GROW(b->tracks, b->tracks_cap, (uint64_t)b->n_tracks + 1, 16) != 0) {
        b->oom = 1;
        return NONE;
    }
    qtrack *t = &b->tracks[b->n_tracks];
    memset(t, 0, sizeof *t);
    t->fiber_name = fiber_name;
    return b->n_tracks++;
}

static qthread *thread_of(qb *b, uint32_t t)
{
    if (t >= b->threads_cap) {
        uint32_t old = b->threads_cap;
        if (t >= (1u << 20) || MPROF_GROW(b->threads, b->threads_cap, (uint64_t)t + 1, 16) != 0) {
            b->oom = 1;
            return NULL;
        }
        memset(b->threads + old, 0, (b->threads_cap - old) * sizeof *b->threads);
    }
    qthread *q = &b->threads[t];
    if (!q->used) {
        uint32_t k = new_track(b, 0);
        if (k == NONE)
            return NULL;
        q = &b->threads[t];
        q->used = 1;
        q->track = k;
        q->fiber = NONE;
    }
    return q;
}

static qtrack *cur_track(qb *b, qthread *q)
{
    return &b->tracks[q->fiber != NONE ? q->fiber : q->track];
}

static void free_zone(qzone *z)
{
    free(z->text);
    free(z->name);
    z->text = z->name = NULL;
}

static void write_zone(qb *b, qtrack *t, qzone *z, int64_t end, int unfinished)
{
    int64_t dur = end - z->start;
    if (dur < 0)
        dur = 0;
    uint32_t depth = t->depth; /* z was popped: its depth is the stack's size now */
    if (depth)
        t->stack[depth - 1].child += dur;
    sqlite3_stmt *st = b->st[S_ZONE];
    sqlite3_bind_int64(st, 1, z->id);
    sqlite3_bind_int64(st, 2, z->thread);
    sqlite3_bind_int64(st, 3, z->loc);
    sqlite3_bind_int64(st, 4, z->start);
    sqlite3_bind_int64(st, 5, dur);
    sqlite3_bind_int64(st, 6, dur - z->child > 0 ? dur - z->child : 0);
    sqlite3_bind_int64(st, 7, depth);
    if (depth)
        sqlite3_bind_int64(st, 8, t->stack[depth - 1].id);
    if (t->fiber_name) {
        const char *fn = mprof_reader_string(b->r, t->fiber_name);
        bind_text(st, 9, fn ? fn : "?", -1);
    }
    if (z->name)
        bind_text(st, 10, z->name, (int)z->name_len);
    if (z->text)
        bind_text(st, 11, z->text, (int)z->text_len);
    if (z->has_value)
        sqlite3_bind_int64(st, 12, (int64_t)z->value);
    sqlite3_bind_int(st, 13, unfinished);
    step(b, S_ZONE);
    b->stats->zones++;
    b->stats->zones_unfinished += unfinished != 0;
    free_zone(z);
}

static void zone_begin(qb *b, qthread *q, const mprof_event *ev)
{
    qtrack *t = cur_track(b, q);
    if (MPROF_GROW(t->stack, t->cap, (uint64_t)t->depth + 1, 16) != 0) {
        b->oom = 1;
        return;
    }
    qzone *z = &t->stack[t->depth++];
    memset(z, 0, sizeof *z);
    z->id = b->next_zone++;
    z->start = ev->ts_ns;
    z->loc = (uint32_t)ev->u[0];
    z->thread = ev->thread;
}

static void zone_end(qb *b, qthread *q, int64_t ts)
{
    qtrack *t = cur_track(b, q);
    if (!t->depth)
        return; /* an end without a begin: the report counts them, they are no zone */
    qzone z = t->stack[--t->depth];
    write_zone(b, t, &z, ts, 0);
}

static char *dup(qb *b, const char *s, uint32_t n)
{
    char *c = tool_strndup(s ? s : "", n);
    if (!c)
        b->oom = 1;
    return c;
}

static void zone_annotate(qb *b, qthread *q, const mprof_event *ev)
{
    qtrack *t = cur_track(b, q);
    if (!t->depth)
        return;
    qzone *z = &t->stack[t->depth - 1];
    if (ev->type == MPROF_EV_ZONE_VALUE) {
        z->value = ev->u[0];
        z->has_value = 1;
    } else if (ev->type == MPROF_EV_ZONE_TEXT) {
        free(z->text);
        z->text = dup(b, ev->str, ev->str_len);
        z->text_len = ev->str_len;
    } else {
        free(z->name);
        z->name = dup(b, ev->str, ev->str_len);
        z->name_len = ev->str_len;
    }
}

static uint32_t fiber_track(qb *b, uint32_t name)
{
    uint32_t *v = mprof_umap_get(&b->fibers, (uint64_t)name + 1);
    if (v)
        return *v;
    uint32_t k = new_track(b, name);
    if (k == NONE || mprof_umap_put(&b->fibers, (uint64_t)name + 1, k) != 0) {
        b->oom = 1;
        return NONE;
    }
    return k;
}

/* ---- GPU submits, allocations ---------------------------------------------------------------- */

static uint64_t submit_key(uint32_t ctx, uint32_t thread, int64_t ts, uint32_t loc)
{
    uint64_t h = (uint64_t)ts * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)ctx << 40 | (uint64_t)thread << 20 | loc) * 0xff51afd7ed558ccdull;
    h ^= h >> 31;
    return h ? h : 1;
}

static void gpu_submit(qb *b, qthread *q, const mprof_event *ev)
{
    qtrack *t = cur_track(b, q);
    if (b->n_subs >= (1u << 16))
        return; /* queries that never come back: the oldest stop being joined */
    if (MPROF_GROW(b->subs, b->subs_cap, (uint64_t)b->n_subs + 1, 64) != 0) {
        b->oom = 1;
        return;
    }
    b->subs[b->n_subs++] = (qsubmit){
        submit_key((uint32_t)ev->u[0], ev->thread, ev->ts_ns, (uint32_t)ev->u[2]),
        t->depth ? t->stack[t->depth - 1].id : -1};
}

static uint64_t alloc_key(uint32_t pool, uint64_t ptr)
{
    uint64_t h = (ptr ^ ((uint64_t)pool << 48)) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    return h ? h : 1;
}

static void alloc_event(qb *b, const mprof_event *ev)
{
    uint32_t pool = (uint32_t)ev->u[2];
    const char *pn = pool ? mprof_reader_string(b->r, pool) : "heap";
    int64_t id = b->next_alloc++;
    sqlite3_stmt *st = b->st[S_ALLOC];
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, ev->thread);
    bind_text(st, 3, pn ? pn : "?", -1);
    sqlite3_bind_int64(st, 4, (int64_t)ev->u[0]);
    sqlite3_bind_int64(st, 5, (int64_t)ev->u[1]);
    sqlite3_bind_int64(st, 6, ev->ts_ns);
    step(b, S_ALLOC);
    b->stats->allocs++;
    uint64_t key = alloc_key(pool, ev->u[0]);
    uint32_t *v = mprof_umap_get(&b->live, key);
    uint32_t slot;
    if (v) {
        slot = *v; /* allocated twice without a free between: the newer one is live */
    } else if (b->n_live_free) {
        slot = b->live_free[--b->n_live_free];
    } else {
        if (MPROF_GROW(b->live_ids, b->live_cap, (uint64_t)b->n_live + 1, 256) != 0 ||
            MPROF_GROW(b->live_pool, b->live_pool_cap, (uint64_t)b->n_live + 1, 256) != 0 ||
            MPROF_GROW(b->live_key, b->live_key_cap, (uint64_t)b->n_live + 1, 256) != 0) {
            b->oom = 1;
            return;
        }
        slot = b->n_live++;
    }
    b->live_ids[slot] = id;
    b->live_pool[slot] = pool + 1;
    b->live_key[slot] = key;
    if (!v && mprof_umap_put(&b->live, key, slot) != 0)
        b->oom = 1;
}

static void free_slot(qb *b, uint32_t slot, const mprof_event *ev)
{
    sqlite3_stmt *st = b->st[S_FREE];
    sqlite3_bind_int64(st, 1, ev->ts_ns);
    sqlite3_bind_int64(st, 2, ev->thread);
    sqlite3_bind_int64(st, 3, b->live_ids[slot]);
    step(b, S_FREE);
    mprof_umap_del(&b->live, b->live_key[slot]);
    b->live_pool[slot] = 0;
    if (MPROF_GROW(b->live_free, b->live_free_cap, (uint64_t)b->n_live_free + 1, 256) != 0) {
        b->oom = 1;
        return;
    }
    b->live_free[b->n_live_free++] = slot;
}

static void free_event(qb *b, const mprof_event *ev)
{
    uint32_t *v = mprof_umap_get(&b->live, alloc_key((uint32_t)ev->u[1], ev->u[0]));
    if (v)
        free_slot(b, *v, ev);
}

/* POOL_DISCARD: every live allocation of the pool is freed at once (an arena's reset). */
static void discard_event(qb *b, const mprof_event *ev)
{
    uint32_t pool = (uint32_t)ev->u[0] + 1;
    for (uint32_t i = 0; i < b->n_live && !b->oom; i++)
        if (b->live_pool[i] == pool)
            free_slot(b, i, ev);
}

/* ---- system records -------------------------------------------------------------------------- */

static int64_t thread_of_tid(qb *b, uint64_t tid)
{
    uint32_t n = mprof_reader_thread_count(b->r);
    for (uint32_t i = 1; i < n; i++) {
        const mprof_thread_def *d = mprof_reader_thread(b->r, i);
        if (d && d->os_tid == tid)
            return i;
    }
    return -1;
}

static void bind_thread(sqlite3_stmt *st, int i, int64_t t)
{
    if (t >= 0)
        sqlite3_bind_int64(st, i, t);
    else
        sqlite3_bind_null(st, i);
}

static void callstack_rows(qb *b, uint32_t cs, const uint64_t *a, uint32_t n)
{
    if (cs >= (1u << 26))
        return;
    if (cs >= b->stack_cap) {
        uint32_t old = b->stack_cap;
        if (MPROF_GROW(b->stack_done, b->stack_cap, (uint64_t)cs + 1, 256) != 0) {
            b->oom = 1;
            return;
        }
        memset(b->stack_done + old, 0, b->stack_cap - old);
    }
    if (b->stack_done[cs])
        return;
    b->stack_done[cs] = 1;
    for (uint32_t i = 0; i < n; i++) {
        mprof_symbol s = {0};
        int ok = b->sym && mprof_symbolizer_lookup(b->sym, a[i], &s);
        sqlite3_stmt *st = b->st[S_CALLSTACK];
        sqlite3_bind_int64(st, 1, cs);
        sqlite3_bind_int64(st, 2, i);
        sqlite3_bind_int64(st, 3, (int64_t)a[i]);
        bind_text(st, 4, ok ? s.function : NULL, -1);
        bind_text(st, 5, ok ? s.file : NULL, -1);
        if (ok && s.line)
            sqlite3_bind_int64(st, 6, s.line);
        step(b, S_CALLSTACK);
    }
}

static void system_event(qb *b, const mprof_event *ev)
{
    static const char *const reasons[] = {"unknown", "preempted", "blocked", "yielded"};
    if (ev->type == MPROF_EV_SYS_SWITCH) {
        sqlite3_stmt *st = b->st[S_SWITCH];
        sqlite3_bind_int64(st, 1, ev->ts_ns);
        sqlite3_bind_int64(st, 2, (int64_t)ev->u[0]);
        bind_thread(st, 3, thread_of_tid(b, ev->u[0]));
        sqlite3_bind_int64(st, 4, (int64_t)ev->u[3]);
        bind_text(st, 5, ev->u[1] == MPROF_SYS_OUT ? "out" : "in", -1);
        if (ev->u[1] == MPROF_SYS_OUT)
            bind_text(st, 6, reasons[ev->u[2] <= 3 ? ev->u[2] : 0], -1);
        step(b, S_SWITCH);
        b->stats->switches++;
    } else if (ev->type == MPROF_EV_SYS_SAMPLE) {
        uint32_t n = 0, cs = (uint32_t)ev->u[1];
        const uint64_t *a = mprof_reader_callstack(b->r, cs, &n);
        mprof_symbol s = {0};
        int ok = a && n && b->sym && mprof_symbolizer_lookup(b->sym, a[0], &s);
        sqlite3_stmt *st = b->st[S_SAMPLE];
        sqlite3_bind_int64(st, 1, ev->ts_ns);
        sqlite3_bind_int64(st, 2, (int64_t)ev->u[0]);
        bind_thread(st, 3, thread_of_tid(b, ev->u[0]));
        sqlite3_bind_int64(st, 4, cs);
        bind_text(st, 5, ok ? s.function : NULL, -1);
        bind_text(st, 6, ok ? s.file : NULL, -1);
        if (ok && s.line)
            sqlite3_bind_int64(st, 7, s.line);
        step(b, S_SAMPLE);
        b->stats->samples++;
        if (a && n)
            callstack_rows(b, cs, a, n);
    }
}

/* ---- events and hooks ------------------------------------------------------------------------ */

static void on_event(qb *b, const mprof_event *ev)
{
    if (ev->type == MPROF_EV_DEF_MODULE) {
        if (!b->sym && !(b->sym = mprof_symbolizer_new()))
            b->oom = 1;
        else if (mprof_symbolizer_add_event(b->sym, ev) != 0)
            b->oom = 1;
        return;
    }
    if (MPROF_EV_IS_PROCESS(ev->type)) {
        system_event(b, ev);
        return;
    }
    if (ev->type < 0x10 && ev->type != MPROF_EV_LOST && ev->type != MPROF_EV_THREAD_EXIT)
        return;
    qthread *q = thread_of(b, ev->thread);
    if (!q)
        return;
    static const char *const levels[] = {"", "trace", "debug", "info", "warn", "error", "fatal"};
    switch (ev->type) {
    case MPROF_EV_ZONE_BEGIN:
        zone_begin(b, q, ev);
        break;
    case MPROF_EV_ZONE_END:
        zone_end(b, q, ev->ts_ns);
        break;
    case MPROF_EV_ZONE_TEXT:
    case MPROF_EV_ZONE_NAME:
    case MPROF_EV_ZONE_VALUE:
        zone_annotate(b, q, ev);
        break;
    case MPROF_EV_LOST: {
        qtrack *t = cur_track(b, q);
        b->stats->zones_dropped_by_loss += t->depth;
        while (t->depth)
            free_zone(&t->stack[--t->depth]);
        break;
    }
    case MPROF_EV_FIBER_ENTER:
        q->fiber = fiber_track(b, (uint32_t)ev->u[0]);
        break;
    case MPROF_EV_FIBER_LEAVE:
    case MPROF_EV_THREAD_EXIT:
        q->fiber = NONE;
        break;
    case MPROF_EV_MESSAGE: {
        int l = ev->u[0] >= 1 && ev->u[0] <= 6 ? (int)ev->u[0] : 3;
        sqlite3_stmt *st = b->st[S_MSG];
        sqlite3_bind_int64(st, 1, ev->thread);
        sqlite3_bind_int64(st, 2, ev->ts_ns);
        sqlite3_bind_int64(st, 3, l);
        bind_text(st, 4, levels[l], -1);
        bind_text(st, 5, ev->str ? ev->str : "", (int)ev->str_len);
        step(b, S_MSG);
        b->stats->messages++;
        break;
    }
    case MPROF_EV_PLOT_F64:
    case MPROF_EV_PLOT_I64: {
        const char *nm = mprof_reader_string(b->r, (uint32_t)ev->u[0]);
        sqlite3_stmt *st = b->st[S_PLOT];
        bind_text(st, 1, nm ? nm : "plot", -1);
        sqlite3_bind_int64(st, 2, ev->thread);
        sqlite3_bind_int64(st, 3, ev->ts_ns);
        sqlite3_bind_double(st, 4, ev->type == MPROF_EV_PLOT_F64 ? mprof_event_f64(ev, 1)
                                                                   : (double)(int64_t)ev->u[1]);
        step(b, S_PLOT);
        b->stats->plots++;
        break;
    }
    case MPROF_EV_ALLOC:
        alloc_event(b, ev);
        break;
    case MPROF_EV_FREE:
        free_event(b, ev);
        break;
    case MPROF_EV_POOL_DISCARD:
        discard_event(b, ev);
        break;
    case MPROF_EV_GPU_ZONE_BEGIN:
        gpu_submit(b, q, ev);
        break;
    default:
        break;
    }
}

static void on_zone(void *user, const mprof_tl_zone *z)
{
    qb *b = user;
    const mprof_tl_track *t = mprof__walker_track(b->w, z->track);
    if (!t || t->kind != MPROF_TRACK_GPU)
        return;
    char name[256];
    mprof__walker_track_name(b->w, z->track, name, sizeof name);
    uint64_t key = submit_key(t->ref, z->submit_thread, z->submit_ns, z->loc);
    int64_t cpu_zone = -1;
    for (uint32_t i = b->n_subs; i-- > 0;)
        if (b->subs[i].key == key) {
            cpu_zone = b->subs[i].zone;
            b->subs[i] = b->subs[--b->n_subs];
            break;
        }
    sqlite3_stmt *st = b->st[S_GPU];
    sqlite3_bind_int64(st, 1, t->ref);
    bind_text(st, 2, name, -1);
    sqlite3_bind_int64(st, 3, z->loc);
    sqlite3_bind_int64(st, 4, z->start_ns);
    sqlite3_bind_int64(st, 5, z->end_ns - z->start_ns);
    sqlite3_bind_int64(st, 6, z->depth);
    sqlite3_bind_int64(st, 7, z->submit_ns);
    sqlite3_bind_int64(st, 8, z->submit_thread);
    if (cpu_zone >= 0)
        sqlite3_bind_int64(st, 9, cpu_zone);
    step(b, S_GPU);
    b->stats->gpu_zones++;
}

static void on_frame(void *user, uint32_t set, uint64_t index, int64_t s, int64_t e)
{
    qb *b = user;
    const mprof_tl_frameset *f = mprof__walker_frameset(b->w, set);
    const char *nm = f && f->name ? mprof_reader_string(b->r, f->name) : "main";
    sqlite3_stmt *st = b->st[S_FRAME];
    bind_text(st, 1, nm ? nm : "?", -1);
    sqlite3_bind_int64(st, 2, (int64_t)index);
    sqlite3_bind_int64(st, 3, s);
    sqlite3_bind_int64(st, 4, e - s);
    step(b, S_FRAME);
    b->stats->frames++;
}

static void on_lock(void *user, const mprof_tl_lockspan *s)
{
    qb *b = user;
    const mprof_tl_lock *lk = mprof__walker_lock(b->w, s->lock);
    const char *ln = lk ? mprof_reader_string(b->r, lk->name) : NULL;
    sqlite3_stmt *st = b->st[S_LOCK];
    sqlite3_bind_int64(st, 1, lk ? lk->id : s->lock);
    bind_text(st, 2, ln ? ln : "?", -1);
    sqlite3_bind_int64(st, 3, s->thread);
    bind_text(st, 4, s->waiting ? "wait" : "hold", -1);
    sqlite3_bind_int64(st, 5, s->start_ns);
    sqlite3_bind_int64(st, 6, s->end_ns - s->start_ns);
    sqlite3_bind_int(st, 7, s->shared);
    step(b, S_LOCK);
    b->stats->lock_spans++;
}

/* ---- the pass -------------------------------------------------------------------------------- */

static void meta(qb *b, const char *k, const char *v)
{
    sqlite3_stmt *st = b->st[S_META];
    bind_text(st, 1, k, -1);
    bind_text(st, 2, v ? v : "", -1);
    step(b, S_META);
}

static void finish_rows(qb *b, const char *name)
{
    int64_t last = mprof__walker_last_ns(b->w);
    for (uint32_t i = 0; i < b->n_tracks; i++) {
        qtrack *t = &b->tracks[i];
        while (t->depth) {
            qzone z = t->stack[--t->depth];
            write_zone(b, t, &z, last, 1);
        }
    }
    uint32_t nt = mprof_reader_thread_count(b->r);
    for (uint32_t i = 1; i < nt; i++) {
        const mprof_thread_def *d = mprof_reader_thread(b->r, i);
        if (!d || (!d->name && (i >= b->threads_cap || !b->threads[i].used)))
            continue; /* a thread slot the capture never used */
        char buf[32];
        snprintf(buf, sizeof buf, "thread %" PRIu32, i);
        sqlite3_stmt *st = b->st[S_THREAD];
        sqlite3_bind_int64(st, 1, i);
        bind_text(st, 2, d->name ? d->name : buf, -1);
        if (d->os_tid)
            sqlite3_bind_int64(st, 3, (int64_t)d->os_tid);
        step(b, S_THREAD);
    }
    uint32_t nl = mprof_reader_srcloc_count(b->r);
    for (uint32_t i = 0; i < nl; i++) {
        const mprof_srcloc_def *d = mprof_reader_srcloc(b->r, i);
        if (!d)
            continue;
        sqlite3_stmt *st = b->st[S_LOC];
        sqlite3_bind_int64(st, 1, i);
        bind_text(st, 2, d->name, -1);
        bind_text(st, 3, d->function, -1);
        bind_text(st, 4, d->file, -1);
        sqlite3_bind_int64(st, 5, d->line);
        sqlite3_bind_int64(st, 6, d->color);
        step(b, S_LOC);
    }
    char num[64];
    meta(b, "capture", name);
    snprintf(num, sizeof num, "%d", MPROF_QUERY_SCHEMA_VERSION);
    meta(b, "schema_version", num);
    const char *app = mprof_reader_info(b->r, "app");
    meta(b, "app", app ? app : mprof_reader_info(b->r, "process"));
    snprintf(num, sizeof num, "%" PRIu64, mprof__walker_lost_events(b->w));
    meta(b, "lost_events", num);
    snprintf(num, sizeof num, "%" PRIu64, b->stats->zones_dropped_by_loss);
    meta(b, "zones_dropped_by_loss", num);
    snprintf(num, sizeof num, "%" PRIu64, b->stats->zones_unfinished);
    meta(b, "zones_unfinished", num);
}

static void qb_free(qb *b)
{
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(b->st[i]);
    for (uint32_t i = 0; i < b->n_tracks; i++) {
        for (uint32_t d = 0; d < b->tracks[i].depth; d++)
            free_zone(&b->tracks[i].stack[d]);
        free(b->tracks[i].stack);
    }
    free(b->tracks);
    free(b->threads);
    free(b->subs);
    free(b->live_ids);
    free(b->live_pool);
    free(b->live_key);
    free(b->live_free);
    free(b->stack_done);
    mprof_umap_free(&b->fibers);
    mprof_umap_free(&b->live);
    mprof_symbolizer_free(b->sym);
    mprof__walker_free(b->w);
}

/* ---- reading batches -------------------------------------------------------------------------
 * The rows are those of one event at a time: each event is handled (on_event), then applied by
 * the walker, whose hooks add GPU zones, lock spans and frames among them. The walker walks a
 * batch and calls on_other before it applies each event other than a zone's; there the zone
 * records before that event are handled first, so that rows keep their order and ids. */

static void zone_record(qb *b, uint32_t thread, int type, int64_t ts, uint32_t loc)
{
    mprof_event ev = {.type = type, .thread = thread, .ts_ns = ts};
    ev.u[0] = loc;
    b->cur_thread = thread;
    on_event(b, &ev);
}

/* Handles the batch's records from the cursor up to the record of its event ev_index (which the
 * caller handles), or to the end of the batch (UINT32_MAX). */
static void handle_records(qb *b, uint32_t ev_index)
{
    const mprof_batch *bt = b->bat;
    for (; b->cur_run < bt->n_run; b->cur_run++) {
        const mprof_run *run = &bt->run[b->cur_run];
        if (b->cur_rec < run->first)
            b->cur_rec = run->first;
        for (; b->cur_rec < run->end; b->cur_rec++) {
            if (b->oom || b->failed)
                return;
            const mprof_rec *e = &bt->rec[b->cur_rec];
            switch (mprof_rec_type(e)) {
            case MPROF_REC_LEAF:
                zone_record(b, run->thread, MPROF_EV_ZONE_BEGIN, e->ts_ns, e->x);
                zone_record(b, run->thread, MPROF_EV_ZONE_END, e->ts_ns + mprof_rec_dur(e), 0);
                break;
            case MPROF_EV_ZONE_BEGIN:
                zone_record(b, run->thread, MPROF_EV_ZONE_BEGIN, e->ts_ns, e->x);
                break;
            case MPROF_EV_ZONE_END:
                zone_record(b, run->thread, MPROF_EV_ZONE_END, e->ts_ns, 0);
                break;
            default:
                if (e->x == ev_index) {
                    b->cur_rec++;
                    return;
                }
                break; /* the walker hands every other event to on_other: not reached */
            }
        }
    }
}

static int on_other(void *user, const mprof_event *ev)
{
    qb *b = user;
    handle_records(b, (uint32_t)(ev - b->bat->ev));
    if (b->oom || b->failed)
        return -1;
    b->cur_thread = ev->thread;
    on_event(b, ev);
    return b->oom || b->failed ? -1 : 0;
}

int mprof__query_fill(sqlite3 *db, mprof_reader *r, const char *name, mprof_query_stats *stats,
                      char *err, size_t errlen)
{
    mprof_query_stats local;
    qb b = {.db = db, .r = r, .stats = stats ? stats : &local};
    memset(b.stats, 0, sizeof *b.stats);
    mprof_tl_hooks h = {.user = &b, .zone = on_zone, .lock_span = on_lock, .frame = on_frame,
                        .other = on_other};
    b.w = mprof__walker_new(r, &h, 0);
    if (!b.w) {
        tool_seterr(err, errlen, "%s: out of memory", name);
        return MPROF_QUERY_IO;
    }
    for (int i = 0; i < S_COUNT; i++)
        if (sqlite3_prepare_v2(db, stmt_sql[i], -1, &b.st[i], NULL) != SQLITE_OK) {
            tool_seterr(err, errlen, "%s: cannot prepare the query database: %s", name,
                        sqlite3_errmsg(db));
            qb_free(&b);
            return MPROF_QUERY_IO;
        }
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    mprof_batch bt;
    int rc;
    while ((rc = mprof_reader_next_batch(r, &bt)) == 1) {
        b.bat = &bt;
        b.cur_run = b.cur_rec = 0;
        int wrc = mprof__walker_batch(b.w, &bt);
        if (!b.oom && !b.failed)
            handle_records(&b, UINT32_MAX); /* the zone records after its last other event */
        if (wrc != 0 && !b.failed)
            b.oom = 1;
        if (b.oom || b.failed)
            break;
    }
    if (rc == 0 && !b.oom && !b.failed) {
        mprof__walker_finish(b.w);
        finish_rows(&b, name);
    }
    int ret = MPROF_QUERY_OK;
    char *msg = NULL;
    if (rc < 0) {
        tool_seterr(err, errlen, "%s: %s", name, mprof_reader_error(r));
        ret = MPROF_QUERY_IO;
    } else if (b.oom) {
        tool_seterr(err, errlen, "%s: out of memory", name);
        ret = MPROF_QUERY_IO;
    } else if (b.failed) {
        tool_seterr(err, errlen, "%s: %s", name, b.err);
        ret = MPROF_QUERY_IO;
    } else if (sqlite3_exec(db, index_sql, NULL, NULL, &msg) != SQLITE_OK ||
               sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
        tool_seterr(err, errlen, "%s: indexing the query database failed: %s", name,
                    msg ? msg : "?");
        ret = MPROF_QUERY_IO;
    }
    sqlite3_free(msg);
    if (ret != MPROF_QUERY_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    qb_free(&b);
    return ret;
}
