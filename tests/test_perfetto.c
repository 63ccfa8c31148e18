/*
 * test_perfetto.c - `mprof export --format perfetto` read back by protoc and counted against
 * `mprof report --json` of the same capture.
 *
 * Two real captures: view_demo's (threads, a fiber, a 12-deep recursion, zone text, values and
 * dynamic names, locks, plots, memory, messages of every level, a GPU context) and the sample
 * engine's (system tracing: context switches and callstack samples; Vulkan GPU zones through
 * lavapipe). Each trace is decoded twice by Debian's protoc: with Perfetto's own schema
 * (`--decode=perfetto.protos.Trace`, from ../shared/reference/perfetto or MPROF_PERFETTO_PROTO),
 * which must know every field written, and with `--decode_raw`, which needs no schema. Without
 * the schema the raw decode still carries the structural checks (field numbers, nesting,
 * per-thread counts); the checks by name and of the packed scheduler fields need the schema.
 *
 * The trace is then replayed as trace processor would: each sequence's clock (the incremental
 * clock 64 of its clock snapshot, or the absolute clock a packet names), then every track's
 * events sorted by time, keeping file order for equal times; every BEGIN must be closed by an
 * END on its track, in order.
 */
#include "test_util.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[1 << 16];

/* ---- protoc's text format as a tree ---------------------------------------------------------- */

typedef struct node {
    char *key, *val;   /* val NULL for a message */
    uint32_t child, next; /* indices + 1; 0 = none */
} node;

typedef struct tree {
    node *n;
    uint32_t count, cap;
    char *text;
    int unknown; /* fields the schema did not know (a numeric key in a schema decode) */
} tree;

static uint32_t add_node(tree *t, char *key, char *val)
{
    if (t->count == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1 << 16;
        t->n = realloc(t->n, t->cap * sizeof *t->n);
        assert_non_null(t->n);
    }
    t->n[t->count] = (node){key, val, 0, 0};
    return ++t->count;
}

/* Parses protoc's output (its lines: "key {", "key: value", "}"). Returns 0 when well formed. */
static int parse_text(tree *t, char *text, int schema)
{
    memset(t, 0, sizeof *t);
    t->text = text;
    uint32_t stack[64], last[64];
    int depth = 0;
    uint32_t root = add_node(t, "", NULL);
    stack[0] = root;
    last[0] = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        while (*line == ' ')
            line++;
        if (!*line)
            continue;
        uint32_t id;
        if (strcmp(line, "}") == 0) {
            if (depth == 0)
                return -1;
            depth--;
            continue;
        }
        size_t len = strlen(line);
        char *colon = strstr(line, ": ");
        if (len > 2 && strcmp(line + len - 2, " {") == 0 && (!colon || colon > line + len - 2)) {
            line[len - 2] = 0;
            id = add_node(t, line, NULL);
        } else if (colon) {
            *colon = 0;
            id = add_node(t, line, colon + 2);
        } else {
            return -1;
        }
        if (schema && line[0] >= '0' && line[0] <= '9')
            t->unknown++;
        node *parent = &t->n[stack[depth] - 1];
        if (last[depth])
            t->n[last[depth] - 1].next = id;
        else
            parent->child = id;
        last[depth] = id;
        if (!t->n[id - 1].val) {
            if (depth + 1 >= 64)
                return -1;
            stack[++depth] = id;
            last[depth] = 0;
        }
    }
    return depth == 0 ? 0 : -1;
}

/* The first child named name (the schema's name) or num (its field number). */
static node *child(tree *t, node *p, const char *name, const char *num)
{
    for (uint32_t c = p ? p->child : 0; c; c = t->n[c - 1].next) {
        node *k = &t->n[c - 1];
        if (strcmp(k->key, name) == 0 || strcmp(k->key, num) == 0)
            return k;
    }
    return NULL;
}

static node *next_named(tree *t, node *k, const char *name, const char *num)
{
    for (uint32_t c = k->next; c; c = t->n[c - 1].next) {
        node *n = &t->n[c - 1];
        if (strcmp(n->key, name) == 0 || strcmp(n->key, num) == 0)
            return n;
    }
    return NULL;
}

#define FOR_EACH(t, p, name, num, it)                                                              \
    for (node *it = child(t, p, name, num); it; it = next_named(t, it, name, num))

static int has(tree *t, node *p, const char *name, const char *num)
{
    return child(t, p, name, num) != NULL;
}

/* A number: decimal, hex (raw fixed64), or a known enum name. */
static uint64_t num_of(const node *k)
{
    static const struct {
        const char *name;
        uint64_t v;
    } enums[] = {{"TYPE_SLICE_BEGIN", 1}, {"TYPE_SLICE_END", 2}, {"TYPE_INSTANT", 3},
                 {"TYPE_COUNTER", 4},     {"PRIO_VERBOSE", 2},   {"PRIO_DEBUG", 3},
                 {"PRIO_INFO", 4},        {"PRIO_WARN", 5},      {"PRIO_ERROR", 6},
                 {"PRIO_FATAL", 7},       {"true", 1},           {"false", 0}};
    if (!k || !k->val)
        return 0;
    for (size_t i = 0; i < sizeof enums / sizeof *enums; i++)
        if (strcmp(k->val, enums[i].name) == 0)
            return enums[i].v;
    return strtoull(k->val, NULL, 0);
}

static uint64_t get(tree *t, node *p, const char *name, const char *num)
{
    return num_of(child(t, p, name, num));
}

/* A string value without its quotes (escapes kept: names here have none). */
static const char *str_of(tree *t, node *p, const char *name, const char *num, char *buf, size_t n)
{
    node *k = child(t, p, name, num);
    if (!k || !k->val || k->val[0] != '"')
        return NULL;
    snprintf(buf, n, "%s", k->val + 1);
    size_t l = strlen(buf);
    if (l && buf[l - 1] == '"')
        buf[l - 1] = 0;
    return buf;
}

/* ---- the trace replayed ---------------------------------------------------------------------- */

typedef struct tev {
    int64_t ts;
    uint32_t order;
    int type;
} tev;

typedef struct track {
    uint64_t uuid, parent;
    int described, thread;
    int64_t tid;
    char name[128];
    tev *ev;
    uint32_t n, cap;
    uint64_t begins, counters;
    uint64_t by_loc[512]; /* BEGINs per source location iid (zones) */
} track;

typedef struct seq {
    uint32_t id;
    uint64_t default_track, clock;
    int64_t last;
    int incremental;
    char names[512][64]; /* interned event names by iid (source locations: iid = loc + 32) */
} seq;

typedef struct replay {
    track *tr;
    uint32_t n_tracks;
    seq *sq;
    uint32_t n_seqs;
    uint64_t messages, by_prio[8], samples, switches, wakings, flows_out, flows_in, seeds;
    unsigned char cpu_seen[4096];
    uint64_t flow_ids[4096];
    uint32_t n_flow_ids;
    int flow_unmatched;
    uint32_t order;
    uint64_t events_without_track;
} replay;

static track *track_of(replay *r, uint64_t uuid)
{
    for (uint32_t i = 0; i < r->n_tracks; i++)
        if (r->tr[i].uuid == uuid)
            return &r->tr[i];
    r->tr = realloc(r->tr, (r->n_tracks + 1) * sizeof *r->tr);
    assert_non_null(r->tr);
    track *k = &r->tr[r->n_tracks++];
    memset(k, 0, sizeof *k);
    k->uuid = uuid;
    return k;
}

static seq *seq_of(replay *r, uint32_t id)
{
    for (uint32_t i = 0; i < r->n_seqs; i++)
        if (r->sq[i].id == id)
            return &r->sq[i];
    r->sq = realloc(r->sq, (r->n_seqs + 1) * sizeof *r->sq);
    assert_non_null(r->sq);
    seq *s = &r->sq[r->n_seqs++];
    memset(s, 0, sizeof *s);
    s->id = id;
    s->clock = 6;
    return s;
}

static void replay_packet(replay *r, tree *t, node *p, int schema)
{
    seq *s = seq_of(r, (uint32_t)get(t, p, "trusted_packet_sequence_id", "10"));
    if (get(t, p, "sequence_flags", "13") & 1) {
        memset(s->names, 0, sizeof s->names);
        s->incremental = 0;
    }
    node *d = child(t, p, "trace_packet_defaults", "59");
    if (d) {
        if (has(t, d, "timestamp_clock_id", "58"))
            s->clock = get(t, d, "timestamp_clock_id", "58");
        node *te = child(t, d, "track_event_defaults", "11");
        if (te)
            s->default_track = get(t, te, "track_uuid", "11");
    }
    node *cs = child(t, p, "clock_snapshot", "6");
    if (cs) {
        FOR_EACH(t, cs, "clocks", "1", c)
        if (get(t, c, "clock_id", "1") == 64) {
            s->last = (int64_t)get(t, c, "timestamp", "2");
            s->incremental = get(t, c, "is_incremental", "3") != 0;
        }
    }
    int64_t ts = -1;
    if (has(t, p, "timestamp", "8")) {
        uint64_t clock = has(t, p, "timestamp_clock_id", "58") ? get(t, p, "timestamp_clock_id", "58")
                                                               : s->clock;
        uint64_t v = get(t, p, "timestamp", "8");
        if (clock == 64) {
            assert_true(s->incremental); /* a delta needs the sequence's incremental clock */
            s->last += (int64_t)v;
            ts = s->last;
        } else {
            assert_int_equal(clock, 6);
            ts = (int64_t)v;
        }
    }
    node *id = child(t, p, "interned_data", "12");
    if (id && schema) {
        FOR_EACH(t, id, "event_names", "2", en)
        {
            uint64_t iid = get(t, en, "iid", "1");
            char buf[64];
            if (iid < 512 && str_of(t, en, "name", "2", buf, sizeof buf))
                snprintf(s->names[iid], sizeof s->names[iid], "%s", buf);
        }
    }
    node *td = child(t, p, "track_descriptor", "60");
    if (td) {
        track *k = track_of(r, get(t, td, "uuid", "1"));
        k->described = 1;
        k->parent = get(t, td, "parent_uuid", "5");
        node *th = child(t, td, "thread", "4");
        if (th) {
            k->thread = 1;
            k->tid = (int64_t)get(t, th, "tid", "2");
        }
        if (schema)
            str_of(t, td, "name", "2", k->name, sizeof k->name);
    }
    node *te = child(t, p, "track_event", "11");
    if (te) {
        assert_true(ts >= 0);
        uint64_t uuid = has(t, te, "track_uuid", "11") ? get(t, te, "track_uuid", "11") : s->default_track;
        if (!uuid) {
            r->events_without_track++;
            return;
        }
        track *k = track_of(r, uuid);
        int type = (int)get(t, te, "type", "9");
        if (type == 1 || type == 2) {
            if (k->n == k->cap) {
                k->cap = k->cap ? k->cap * 2 : 256;
                k->ev = realloc(k->ev, k->cap * sizeof *k->ev);
                assert_non_null(k->ev);
            }
            k->ev[k->n++] = (tev){ts, r->order++, type};
        }
        if (type == 1) {
            k->begins++;
            uint64_t loc = get(t, te, "source_location_iid", "34");
            if (loc < 512)
                k->by_loc[loc]++;
        }
        if (type == 4)
            k->counters++;
        node *lm = child(t, te, "log_message", "21");
        if (lm) {
            r->messages++;
            uint64_t prio = get(t, lm, "prio", "3");
            if (prio < 8)
                r->by_prio[prio]++;
        }
        FOR_EACH(t, te, "flow_ids", "47", f)
        {
            r->flows_out++;
            if (r->n_flow_ids < 4096)
                r->flow_ids[r->n_flow_ids++] = num_of(f);
        }
        FOR_EACH(t, te, "terminating_flow_ids", "48", f)
        {
            r->flows_in++;
            int found = 0;
            for (uint32_t i = 0; i < r->n_flow_ids && !found; i++)
                found = r->flow_ids[i] == num_of(f);
            r->flow_unmatched += !found;
        }
    }
    if (has(t, p, "perf_sample", "66"))
        r->samples++;
    node *fe = child(t, p, "ftrace_events", "1");
    if (fe && schema) {
        node *c = child(t, fe, "compact_sched", "4");
        if (c) {
            FOR_EACH(t, c, "switch_timestamp", "1", x)
            r->switches++;
            /* each CPU's first bundle starts with a switch to the idle task at time 0 */
            uint64_t cpu = get(t, fe, "cpu", "1");
            if (cpu < 4096 && !r->cpu_seen[cpu]) {
                r->cpu_seen[cpu] = 1;
                r->seeds++;
                node *first = child(t, c, "switch_timestamp", "1");
                node *pid = child(t, c, "switch_next_pid", "3");
                assert_true(first && num_of(first) == 0 && pid && num_of(pid) == 0);
            }
        }
        FOR_EACH(t, fe, "event", "2", e)
        if (has(t, e, "sched_waking", "20"))
            r->wakings++;
    }
}

static int cmp_tev(const void *pa, const void *pb)
{
    const tev *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Every track's slices nest in time order, as trace processor's slice tracker needs. */
static void check_nesting(replay *r)
{
    for (uint32_t i = 0; i < r->n_tracks; i++) {
        track *k = &r->tr[i];
        if (k->n)
            qsort(k->ev, k->n, sizeof *k->ev, cmp_tev);
        int64_t depth = 0;
        for (uint32_t e = 0; e < k->n; e++) {
            depth += k->ev[e].type == 1 ? 1 : -1;
            if (depth < 0)
                fail_msg("track %" PRIu64 " (%s): an END without its BEGIN at %" PRId64, k->uuid,
                         k->name, k->ev[e].ts);
        }
        if (depth != 0)
            fail_msg("track %" PRIu64 " (%s): %" PRId64 " slices never end", k->uuid, k->name,
                     depth);
        if (k->n || k->counters)
            assert_true(k->described); /* every track used has its descriptor */
    }
}

/* ---- running the tools ----------------------------------------------------------------------- */

static const char *schema_dir(void)
{
    static char dir[1024];
    const char *e = getenv("MPROF_PERFETTO_PROTO_DIR");
    if (e && *e)
        snprintf(dir, sizeof dir, "%s", e);
    else
        snprintf(dir, sizeof dir, "%s/../shared/reference/perfetto", MPROF_SOURCE_DIR);
    char proto[1200];
    snprintf(proto, sizeof proto, "%s/perfetto_trace.proto", dir);
    return access(proto, R_OK) == 0 ? dir : NULL;
}

static char *slurp_cmd(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t len = 0, cap = 1 << 20;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t k;
    while ((k = fread(s + len, 1, cap - len - 1, p)) > 0) {
        len += k;
        if (cap - len < 2) {
            cap *= 2;
            s = realloc(s, cap);
            assert_non_null(s);
        }
    }
    s[len] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return s;
}

static cJSON *report(const char *cap)
{
    char cmd[2048];
    int st;
    snprintf(cmd, sizeof cmd, "%s report --json --all %s", tu_mprof_bin(), cap);
    char *s = slurp_cmd(cmd, &st);
    assert_int_equal(st, 0);
    cJSON *j = cJSON_Parse(s);
    free(s);
    assert_non_null(j);
    return j;
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* Decodes trace with protoc (schema or raw) and replays it into r. */
static void decode(const char *trace, int schema, replay *r)
{
    char cmd[4096];
    const char *dir = schema_dir();
    if (schema)
        snprintf(cmd, sizeof cmd,
                 "protoc --decode=perfetto.protos.Trace -I %s %s/perfetto_trace.proto < %s", dir,
                 dir, trace);
    else
        snprintf(cmd, sizeof cmd, "protoc --decode_raw < %s", trace);
    int st;
    char *text = slurp_cmd(cmd, &st);
    if (st != 0)
        fail_msg("protoc failed (%d) on %s", st, trace);
    tree t;
    assert_int_equal(parse_text(&t, text, schema), 0);
    if (schema && t.unknown)
        fail_msg("%s: %d fields Perfetto's schema does not know", trace, t.unknown);
    memset(r, 0, sizeof *r);
    node *root = &t.n[0];
    uint64_t packets = 0;
    FOR_EACH(&t, root, "packet", "1", p)
    {
        replay_packet(r, &t, p, schema);
        packets++;
    }
    assert_true(packets > 10);
    check_nesting(r);
    assert_int_equal(r->events_without_track, 0);
    free(t.n);
    free(text);
}

static void replay_free(replay *r)
{
    for (uint32_t i = 0; i < r->n_tracks; i++)
        free(r->tr[i].ev);
    free(r->tr);
    free(r->sq);
}

static void export_trace(const char *cap, const char *trace, const char *extra)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s export %s --format perfetto %s -o %s 2>&1", tu_mprof_bin(), cap,
             extra ? extra : "", trace);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0)
        fail_msg("export failed (%d): %s", rc, out);
}

/* Zone slices per thread equal the report's zones per thread; fibers' and GPU queues' likewise;
 * counter values per plot; log messages per priority. by_name: the schema decode, which has
 * names. */
static void check_counts(const replay *r, const cJSON *rep, int by_name)
{
    uint64_t fiber_slices = 0, gpu_slices = 0, zone_slices = 0;
    /* threads */
    const cJSON *th;
    cJSON_ArrayForEach(th, cJSON_GetObjectItemCaseSensitive(rep, "threads"))
    {
        int64_t tid = (int64_t)jnum(th, "os_tid");
        uint64_t want = (uint64_t)jnum(th, "zones");
        int found = 0;
        for (uint32_t i = 0; i < r->n_tracks; i++)
            if (r->tr[i].thread && r->tr[i].tid == tid) {
                found = 1;
                if (r->tr[i].begins != want)
                    fail_msg("thread tid %" PRId64 ": %" PRIu64 " slices, the report %" PRIu64
                             " zones", tid, r->tr[i].begins, want);
            }
        assert_true(found || want == 0);
    }
    for (uint32_t i = 0; i < r->n_tracks; i++) {
        uint64_t kind = r->tr[i].uuid & 15;
        if (kind == 2)
            zone_slices += r->tr[i].begins;
        if (kind == 3)
            fiber_slices += r->tr[i].begins;
        if (kind == 4)
            gpu_slices += r->tr[i].begins;
    }
    uint64_t want_fiber = 0, want_gpu = 0, want_zones = 0;
    const cJSON *f, *z, *c;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(rep, "fibers"))
    {
        uint64_t n = 0;
        cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(f, "zones"))
        n += (uint64_t)jnum(z, "count");
        want_fiber += n;
        if (by_name) {
            char name[160];
            snprintf(name, sizeof name, "fiber %s",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "name")));
            uint64_t got = 0;
            for (uint32_t i = 0; i < r->n_tracks; i++)
                if (strcmp(r->tr[i].name, name) == 0)
                    got += r->tr[i].begins;
            if (got != n)
                fail_msg("%s: %" PRIu64 " slices, the report %" PRIu64, name, got, n);
        }
    }
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(rep, "gpu");
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(gpu, "contexts"))
    cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(c, "zones"))
    want_gpu += (uint64_t)jnum(z, "count");
    cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(rep, "zones"))
    want_zones += (uint64_t)jnum(z, "count");
    assert_true(zone_slices > 0 && fiber_slices > 0 && gpu_slices > 0);
    assert_true(r->messages > 0);
    assert_int_equal(fiber_slices, want_fiber);
    assert_int_equal(gpu_slices, want_gpu);
    /* zones[] of the report holds every CPU zone, on threads and in fibers */
    assert_int_equal(zone_slices + fiber_slices, want_zones);
    if (by_name) {
        /* per source location: the name interned for its iid on any sequence */
        cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(rep, "zones"))
        {
            const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(z, "name"));
            uint64_t got = 0;
            for (uint32_t i = 0; i < r->n_tracks; i++) {
                uint64_t kind = r->tr[i].uuid & 15;
                if (kind != 2 && kind != 3)
                    continue;
                for (uint32_t loc = 0; loc < 512; loc++) {
                    if (!r->tr[i].by_loc[loc])
                        continue;
                    int named = 0;
                    for (uint32_t s = 0; s < r->n_seqs && !named; s++)
                        named = strcmp(r->sq[s].names[loc], name) == 0;
                    if (named)
                        got += r->tr[i].by_loc[loc];
                }
            }
            if (got != (uint64_t)jnum(z, "count"))
                fail_msg("zone %s: %" PRIu64 " slices, the report %.0f", name, got,
                         jnum(z, "count"));
        }
    }
    /* plots: the counter values of each plot's track */
    const cJSON *p;
    uint64_t want_counts[256], got_counts[256];
    uint32_t nw = 0, ng = 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(rep, "plots"))
    {
        if (nw < 256)
            want_counts[nw++] = (uint64_t)jnum(p, "count");
        if (by_name) {
            const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "name"));
            uint64_t got = 0;
            for (uint32_t i = 0; i < r->n_tracks; i++)
                if ((r->tr[i].uuid & 15) == 8 && strcmp(r->tr[i].name, name) == 0)
                    got += r->tr[i].counters;
            if (got != (uint64_t)jnum(p, "count"))
                fail_msg("plot %s: %" PRIu64 " counter values, the report %.0f", name, got,
                         jnum(p, "count"));
        }
    }
    for (uint32_t i = 0; i < r->n_tracks; i++)
        if ((r->tr[i].uuid & 15) == 8 && ng < 256)
            got_counts[ng++] = r->tr[i].counters;
    assert_int_equal(ng, nw);
    /* the same multiset of counts */
    for (uint32_t i = 0; i < nw; i++) {
        int found = 0;
        for (uint32_t k = 0; k < ng && !found; k++)
            if (got_counts[k] == want_counts[i]) {
                got_counts[k] = UINT64_MAX;
                found = 1;
            }
        assert_true(found);
    }
    /* messages: per level, mprof's level n is Perfetto's priority n + 1 */
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(rep, "messages");
    assert_int_equal(r->messages, (uint64_t)jnum(m, "total"));
    static const char *const levels[] = {"trace", "debug", "info", "warn", "error", "fatal"};
    for (int l = 0; l < 6; l++)
        assert_int_equal(r->by_prio[l + 2], (uint64_t)jnum(m, levels[l]));
}

static char demo_cap[512], engine_cap[512];
static tu_counts engine_counts;

/* The Vulkan loader and lavapipe leak a few hundred bytes per process and race inside the
 * driver, so the engine (not mprof) runs without LeakSanitizer and with the GPU drivers' TSan
 * suppressions, as tests/test_engine_e2e.c and test_gpu_vulkan do. */
#define ENGINE_ENV                                                                                  \
    "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "                                  \
    "TSAN_OPTIONS=${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=" MPROF_SOURCE_DIR                    \
    "/tests/tsan_gpu_drivers.supp"

static int setup(void **state)
{
    (void)state;
    const char *demo = getenv("MPROF_VIEW_DEMO");
    const char *engine = getenv("MPROF_ENGINE_BIN");
    if (!demo || !engine) {
        fprintf(stderr, "MPROF_VIEW_DEMO and MPROF_ENGINE_BIN must name the programs\n");
        return -1;
    }
    char cmd[2048];
    snprintf(demo_cap, sizeof demo_cap, "%s", tu_temp_path("pf_demo.mprof"));
    snprintf(cmd, sizeof cmd, "%s %s 40 30 deep=12 2>&1", demo, demo_cap);
    if (tu_run(cmd, out, sizeof out) != 0) {
        fprintf(stderr, "view_demo: %s\n", out);
        return -1;
    }
    int frames = (int)(60 * tu_scale());
    snprintf(engine_cap, sizeof engine_cap, "%s", tu_temp_path("pf_engine.mprof"));
    snprintf(cmd, sizeof cmd,
             "%s MPROF_SAMPLE_HZ=400 %s --frames %d --threads 2 --quiet --capture %s 2>&1",
             ENGINE_ENV, engine,
             frames < 4 ? 4 : frames, engine_cap);
    if (tu_run(cmd, out, sizeof out) != 0) {
        fprintf(stderr, "engine: %s\n", out);
        return -1;
    }
    return tu_count_capture(engine_cap, &engine_counts);
}

/* Async spans: every span of the report (completed, or open at the end) is a slice on a lane of
 * its track (uuid kind 12), and the engine makes some. */
static void check_async(const replay *r, const cJSON *rep, int engine)
{
    uint64_t want = 0, got = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(rep, "async"))
        want += (uint64_t)jnum(t, "count") + (uint64_t)jnum(t, "open_at_end");
    for (uint32_t i = 0; i < r->n_tracks; i++)
        if ((r->tr[i].uuid & 15) == 12)
            got += r->tr[i].begins;
    assert_int_equal(got, want);
    if (engine)
        assert_true(want > 0);
}

static void check_capture(const char *cap, const char *name, int engine)
{
    char trace[512];
    snprintf(trace, sizeof trace, "%s", tu_temp_path(name));
    export_trace(cap, trace, NULL);
    cJSON *rep = report(cap);
    replay r;
    decode(trace, 0, &r); /* no schema: field numbers and nesting */
    check_counts(&r, rep, 0);
    check_async(&r, rep, engine);
    replay_free(&r);
    if (!schema_dir()) {
        printf("perfetto schema not found (../shared/reference/perfetto): raw checks only\n");
        cJSON_Delete(rep);
        return;
    }
    decode(trace, 1, &r);
    check_counts(&r, rep, 1);
    if (engine) {
        assert_int_equal(r.switches - r.seeds, engine_counts.by_type[MPROF_EV_SYS_SWITCH]);
        assert_int_equal(r.wakings, engine_counts.by_type[MPROF_EV_SYS_WAKE]);
        assert_int_equal(r.samples, engine_counts.by_type[MPROF_EV_SYS_SAMPLE]);
        assert_true(r.switches > 0);
    }
    /* every GPU zone ends the flow its submit started */
    assert_int_equal(r.flow_unmatched, 0);
    uint64_t gpu = 0;
    for (uint32_t i = 0; i < r.n_tracks; i++)
        if ((r.tr[i].uuid & 15) == 4)
            gpu += r.tr[i].begins;
    assert_true(gpu > 0);
    assert_int_equal(r.flows_in, gpu);
    assert_int_equal(r.flows_out, gpu);
    replay_free(&r);
    cJSON_Delete(rep);
}

static void test_demo_capture(void **state)
{
    (void)state;
    check_capture(demo_cap, "pf_demo.pftrace", 0);
}

static void test_engine_capture(void **state)
{
    (void)state;
    assert_true(engine_counts.by_type[MPROF_EV_SYS_SWITCH] > 0); /* system tracing was on */
    check_capture(engine_cap, "pf_engine.pftrace", 1);
}

/* A capture recorded with the sched tracepoints (root): wake-ups with their waker and interrupt
 * context, switch reasons. Every wake-up is a sched_waking, every switch a compact switch. */
static void test_sched_capture(void **state)
{
    (void)state;
    const char *cap = MPROF_SOURCE_DIR "/fuzz/corpus/timeline/system_sched.mprof";
    tu_counts c;
    assert_int_equal(tu_count_capture(cap, &c), 0);
    assert_true(c.by_type[MPROF_EV_SYS_WAKE] > 0);
    char trace[512];
    snprintf(trace, sizeof trace, "%s", tu_temp_path("pf_sched.pftrace"));
    export_trace(cap, trace, NULL);
    replay r;
    decode(trace, 0, &r);
    replay_free(&r);
    if (!schema_dir())
        return;
    decode(trace, 1, &r);
    assert_int_equal(r.wakings, c.by_type[MPROF_EV_SYS_WAKE]);
    assert_int_equal(r.switches - r.seeds, c.by_type[MPROF_EV_SYS_SWITCH]);
    replay_free(&r);
}

static size_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* --frames keeps the zones that overlap the frames, as the Chrome export does. */
static void test_range(void **state)
{
    (void)state;
    char trace[512], json[512], cmd[2048];
    snprintf(trace, sizeof trace, "%s", tu_temp_path("pf_range.pftrace"));
    snprintf(json, sizeof json, "%s", tu_temp_path("pf_range.json"));
    export_trace(demo_cap, trace, "--frames 10:20");
    snprintf(cmd, sizeof cmd, "%s export %s --format chrome --frames 10:20 -o %s", tu_mprof_bin(),
             demo_cap, json);
    assert_int_equal(tu_run(cmd, NULL, 0), 0);
    int st;
    snprintf(cmd, sizeof cmd, "grep -o '\"cat\":\"zone\"' %s | wc -l", json);
    char *n = slurp_cmd(cmd, &st);
    uint64_t want = strtoull(n, NULL, 10);
    free(n);
    replay r;
    decode(trace, 0, &r);
    uint64_t got = 0;
    for (uint32_t i = 0; i < r.n_tracks; i++)
        if ((r.tr[i].uuid & 15) == 2 || (r.tr[i].uuid & 15) == 3)
            got += r.tr[i].begins;
    assert_true(want > 0);
    assert_int_equal(got, want);
    replay_free(&r);
    char whole[512];
    snprintf(whole, sizeof whole, "%s", tu_temp_path("pf_whole.pftrace"));
    export_trace(demo_cap, whole, NULL);
    assert_true(file_size(trace) < file_size(whole));
}

static void test_errors(void **state)
{
    (void)state;
    char cmd[2048], trace[512];
    snprintf(trace, sizeof trace, "%s", tu_temp_path("pf_missing.pftrace"));
    snprintf(cmd, sizeof cmd, "%s export /nonexistent/x.mprof --format perfetto -o %s 2>&1",
             tu_mprof_bin(), trace);
    assert_int_equal(tu_run(cmd, out, sizeof out), 3);
    assert_non_null(strstr(out, "x.mprof"));
    assert_int_not_equal(access(trace, F_OK), 0);
    snprintf(cmd, sizeof cmd, "%s export %s --format perfetto --frames 5:2 -o %s 2>&1",
             tu_mprof_bin(), demo_cap, trace);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s export --help", tu_mprof_bin());
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "perfetto"));
    /* A capture cut in the middle exports what it holds; open zones end, marked unfinished. */
    char cut[512];
    snprintf(cut, sizeof cut, "%s", tu_temp_path("pf_cut.mprof"));
    snprintf(cmd, sizeof cmd, "head -c %zu %s > %s", file_size(demo_cap) / 2, demo_cap, cut);
    assert_int_equal(tu_run(cmd, NULL, 0), 0);
    export_trace(cut, trace, NULL);
    replay r;
    decode(trace, 0, &r);
    replay_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_capture),
        cmocka_unit_test(test_engine_capture),
        cmocka_unit_test(test_sched_capture),
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
