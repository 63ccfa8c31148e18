/*
 * test_process_exports.c - what reads a capture of several processes shows them: a real
 * live_game and a real stats_workload, each captured in-process, merged by `mprof merge`, then
 * read back by the real `mprof` binary. The Chrome export has both pids with their threads and
 * each process's zone count equal to its input's; the Perfetto export (decoded by protoc with
 * Perfetto's schema) has both processes with their threads under them and the same counts; the
 * CSV has the process column with each process's rows equal to its input's statistics; the frame
 * export of one process equals the frame export of its input alone, and without --process it is
 * refused naming both; `mprof gate --process` refuses an export of another process; `mprof
 * diff` of the merged capture against itself pairs every zone within its process with no change.
 */
#define _DEFAULT_SOURCE /* strsep */

#include "test_util.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char cap_a[512], cap_b[512], merged[512];
static uint64_t zones_a, zones_b, marks_a, marks_b;

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* Runs cmd; its stdout (and stderr when the command says 2>&1) into a buffer of the caller's. */
static int run(const char *cmd, char *out, size_t n)
{
    return tu_run(cmd, out, n);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s) {
        s[n] = 0;
        if (len)
            *len = (size_t)n;
    }
    return s;
}

static uint64_t zone_count(const char *path, uint64_t *marks)
{
    tu_counts c;
    assert_int_equal(tu_count_capture(path, &c), 0);
    *marks = c.by_type[MPROF_EV_FRAME_MARK];
    return c.by_type[MPROF_EV_ZONE_BEGIN];
}

static int setup(void **state)
{
    (void)state;
    char cmd[2048], out[4096];
    snprintf(cap_a, sizeof cap_a, "%s", tu_temp_path("game.mprof"));
    snprintf(cap_b, sizeof cap_b, "%s", tu_temp_path("stats.mprof"));
    snprintf(merged, sizeof merged, "%s", tu_temp_path("merged.mprof"));
    snprintf(cmd, sizeof cmd, "%s --frames 60 --capture %s >/dev/null 2>&1",
             env_or("LIVE_GAME", "./live_game"), cap_a);
    if (run(cmd, out, sizeof out) != 0)
        return -1;
    snprintf(cmd, sizeof cmd, "%s %s --frames 100 >/dev/null 2>&1",
             env_or("MPROF_STATS_WORKLOAD", "./stats_workload"), cap_b);
    if (run(cmd, out, sizeof out) != 0)
        return -1;
    snprintf(cmd, sizeof cmd, "%s merge %s %s -o %s 2>&1", tu_mprof_bin(), cap_a, cap_b, merged);
    if (run(cmd, out, sizeof out) != 0) {
        fprintf(stderr, "%s\n", out);
        return -1;
    }
    zones_a = zone_count(cap_a, &marks_a);
    zones_b = zone_count(cap_b, &marks_b);
    return zones_a > 100 && zones_b > 1000 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    unlink(cap_a);
    unlink(cap_b);
    unlink(merged);
    return 0;
}

/* ---- Chrome ---------------------------------------------------------------------------------- */

static void chrome_has_each_process(void **state)
{
    (void)state;
    const char *json = tu_temp_path("m.json");
    char cmd[2048], out[256];
    snprintf(cmd, sizeof cmd, "%s export -f chrome -o %s %s", tu_mprof_bin(), json, merged);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    char *s = slurp(json, NULL);
    assert_non_null(s);
    cJSON *root = cJSON_Parse(s);
    free(s);
    assert_non_null(root);
    uint64_t zones[2] = {0, 0}, threads[2] = {0, 0}, frames[2] = {0, 0};
    int frame_tracks = 0;
    int named[2] = {0, 0};
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const char *ph = cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring;
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        const char *name = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
        int pid = cJSON_GetObjectItemCaseSensitive(e, "pid")->valueint;
        /* Process 0 keeps pid 1; process 1 gets pid 11. */
        int k = pid == 1 ? 0 : pid == 11 ? 1 : -1;
        if (strcmp(ph, "X") == 0 && cat && strcmp(cat->valuestring, "zone") == 0) {
            assert_true(k >= 0);
            zones[k]++;
        }
        if (k >= 0 && strcmp(ph, "M") == 0 && strcmp(name, "thread_name") == 0)
            threads[k]++;
        /* Frames: a frame set per process (the walker's sets are (process, name)), each
         * track named with its process; set 0 is live_game's, which marked first. */
        const cJSON *tj = cJSON_GetObjectItemCaseSensitive(e, "tid"); /* counters have none */
        int tid = tj ? (int)(tj->valuedouble - 0x30000000) : -1;
        if (strcmp(ph, "X") == 0 && cat && strcmp(cat->valuestring, "frame") == 0) {
            assert_true(tid == 0 || tid == 1);
            frames[tid]++;
        }
        if (pid == 4 && strcmp(ph, "M") == 0 && strcmp(name, "thread_name") == 0) {
            const char *tn = cJSON_GetObjectItemCaseSensitive(
                                 cJSON_GetObjectItemCaseSensitive(e, "args"), "name")
                                 ->valuestring;
            assert_string_equal(tn, tid ? "Frames (stats_workload)" : "Frames (live_game)");
            frame_tracks++;
        }
        if (k >= 0 && strcmp(ph, "M") == 0 && strcmp(name, "process_name") == 0) {
            const char *pn = cJSON_GetObjectItemCaseSensitive(
                                 cJSON_GetObjectItemCaseSensitive(e, "args"), "name")
                                 ->valuestring;
            assert_non_null(strstr(pn, k ? "stats_workload (pid " : "live_game (pid "));
            /* Both parts ended cleanly: no note. */
            assert_null(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(e, "args"), "ended_early"));
            named[k]++;
        }
    }
    cJSON_Delete(root);
    unlink(json);
    assert_int_equal(zones[0], zones_a);
    assert_int_equal(zones[1], zones_b);
    assert_int_equal(frame_tracks, 2);
    assert_int_equal(frames[0], marks_a - 1);
    assert_int_equal(frames[1], marks_b - 1);
    assert_int_equal(named[0], 1);
    assert_int_equal(named[1], 1);
    assert_true(threads[0] >= 2); /* live_game's main and worker */
    assert_true(threads[1] >= 2); /* stats_workload's Main and Worker */
}

/* ---- Perfetto -------------------------------------------------------------------------------- */

#define MAX_TRACKS 256
#define MAX_SEQS 256

typedef struct pf_track {
    uint64_t uuid;
    int64_t pid; /* a thread track's pid, -1 otherwise */
} pf_track;

/* protoc's text format, line by line: the packets' track descriptors (process and thread) and
 * slice begins on thread tracks, by pid. */
typedef struct pf_read {
    int64_t proc_pid[8];
    char proc_name[8][64];
    int n_procs;
    pf_track tracks[MAX_TRACKS];
    int n_tracks;
    uint64_t seq_default[MAX_SEQS]; /* sequence id -> its default track uuid */
} pf_read;

static int64_t track_pid(const pf_read *p, uint64_t uuid)
{
    for (int i = 0; i < p->n_tracks; i++)
        if (p->tracks[i].uuid == uuid)
            return p->tracks[i].pid;
    return -1;
}

static const char *val(const char *line, const char *key)
{
    const char *s = strstr(line, key);
    return s ? s + strlen(key) : NULL;
}

/* Reads the decoded trace twice: descriptors first (they may follow the events of their
 * track), then the slice begins, each counted for its track's pid. */
static void perfetto_read(const char *text, pf_read *p, int64_t pids[2], uint64_t begins[2])
{
    memset(p, 0, sizeof *p);
    for (int pass = 0; pass < 2; pass++) {
        const char *s = text;
        int depth = 0, in_process = 0, in_thread = 0, is_begin = 0, has_uuid_ev = 0;
        uint64_t td_uuid = 0, seq = 0, ev_uuid = 0, def_uuid = 0;
        int64_t thread_pid = -1, proc_pid = -1;
        char proc_name[64] = "";
        while (*s) {
            const char *e = strchr(s, '\n');
            size_t n = e ? (size_t)(e - s) : strlen(s);
            char line[512];
            snprintf(line, sizeof line, "%.*s", (int)(n < 511 ? n : 511), s);
            s += n + (e ? 1 : 0);
            const char *v;
            if (strstr(line, "{")) {
                depth++;
                if (strstr(line, "process {"))
                    in_process = depth;
                if (strstr(line, "thread {"))
                    in_thread = depth;
                continue;
            }
            if (strstr(line, "}")) {
                if (in_process == depth)
                    in_process = 0;
                if (in_thread == depth)
                    in_thread = 0;
                depth--;
                if (depth == 0) { /* the end of a packet */
                    if (pass == 0 && proc_pid >= 0 && p->n_procs < 8) {
                        int known = 0;
                        for (int i = 0; i < p->n_procs; i++)
                            known |= p->proc_pid[i] == proc_pid;
                        if (!known) {
                            p->proc_pid[p->n_procs] = proc_pid;
                            snprintf(p->proc_name[p->n_procs++], 64, "%s", proc_name);
                        }
                    }
                    if (pass == 0 && thread_pid >= 0 && p->n_tracks < MAX_TRACKS &&
                        track_pid(p, td_uuid) < 0)
                        p->tracks[p->n_tracks++] = (pf_track){td_uuid, thread_pid};
                    if (pass == 0 && def_uuid && seq < MAX_SEQS)
                        p->seq_default[seq] = def_uuid;
                    if (pass == 1 && is_begin) {
                        uint64_t u = has_uuid_ev ? ev_uuid : seq < MAX_SEQS ? p->seq_default[seq] : 0;
                        int64_t pid = track_pid(p, u);
                        for (int k = 0; k < 2; k++)
                            if (pid >= 0 && pid == pids[k])
                                begins[k]++;
                    }
                    td_uuid = seq = ev_uuid = def_uuid = 0;
                    thread_pid = proc_pid = -1;
                    proc_name[0] = 0;
                    is_begin = has_uuid_ev = 0;
                }
                continue;
            }
            if ((v = val(line, "trusted_packet_sequence_id: ")))
                seq = strtoull(v, NULL, 10);
            else if ((v = val(line, "type: ")) && strstr(v, "TYPE_SLICE_BEGIN"))
                is_begin = 1;
            else if (in_process && (v = val(line, "pid: ")))
                proc_pid = strtoll(v, NULL, 10);
            else if (in_process && (v = val(line, "process_name: \""))) {
                snprintf(proc_name, sizeof proc_name, "%s", v);
                char *q = strchr(proc_name, '"');
                if (q)
                    *q = 0;
            } else if (in_thread && (v = val(line, "pid: ")))
                thread_pid = strtoll(v, NULL, 10);
            else if ((v = val(line, "  uuid: ")) && depth == 2)
                td_uuid = strtoull(v, NULL, 10);
            else if ((v = val(line, "track_uuid: "))) {
                if (depth == 2) { /* the event's own track */
                    ev_uuid = strtoull(v, NULL, 10);
                    has_uuid_ev = 1;
                } else { /* trace_packet_defaults' track_event_defaults */
                    def_uuid = strtoull(v, NULL, 10);
                }
            }
        }
    }
}

/* Perfetto's schema (beside the repository, ../shared/reference/perfetto, or
 * $MPROF_PERFETTO_PROTO_DIR) when it and protoc (Debian's protobuf-compiler) are there, else
 * NULL: nothing to decode with. */
static const char *proto_dir(void)
{
    const char *dir =
        env_or("MPROF_PERFETTO_PROTO_DIR", MPROF_SOURCE_DIR "/../shared/reference/perfetto");
    char cmd[2048], out[256];
    snprintf(cmd, sizeof cmd, "protoc --version >/dev/null 2>&1 && test -f %s/perfetto_trace.proto",
             dir);
    return run(cmd, out, sizeof out) == 0 ? dir : NULL;
}

static void perfetto_has_each_process(void **state)
{
    (void)state;
    const char *dir = proto_dir();
    char cmd[4096], out[256];
    if (!dir)
        skip();
    const char *trace = tu_temp_path("m.pftrace"), *text = tu_temp_path("m.txt");
    snprintf(cmd, sizeof cmd, "%s export -f perfetto -o %s %s", tu_mprof_bin(), trace, merged);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd,
             "protoc --decode=perfetto.protos.Trace -I %s %s/perfetto_trace.proto < %s > %s", dir,
             dir, trace, text);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    char *s = slurp(text, NULL);
    assert_non_null(s);
    /* The processes' real pids, from the merged capture. */
    char err[256];
    mprof_reader *r = mprof_reader_open(merged, err, sizeof err);
    assert_non_null(r);
    mprof_event ev;
    assert_int_equal(mprof_reader_next(r, &ev), 1);
    assert_int_equal(mprof_reader_process_count(r), 2);
    int64_t pids[2] = {(int64_t)mprof_reader_process(r, 0)->pid,
                       (int64_t)mprof_reader_process(r, 1)->pid};
    mprof_reader_close(r);
    pf_read *p = calloc(1, sizeof *p);
    uint64_t begins[2] = {0, 0};
    perfetto_read(s, p, pids, begins);
    free(s);
    assert_int_equal(p->n_procs, 2);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(p->proc_pid[k], pids[k]);
        assert_string_equal(p->proc_name[k], k ? "stats_workload" : "live_game");
        int threads = 0;
        for (int i = 0; i < p->n_tracks; i++)
            threads += p->tracks[i].pid == pids[k];
        assert_true(threads >= 2);
    }
    assert_int_equal(begins[0], zones_a);
    assert_int_equal(begins[1], zones_b);
    free(p);
    unlink(trace);
    unlink(text);
}

/* ---- CSV ------------------------------------------------------------------------------------- */

/* The rows of a CSV statistics export as "[process,]name,function,line,count,total_ns" lines
 * (the file column left out: it is the same file), sorted, joined by newlines. */
static char *csv_rows(const char *capture, const char *process_prefix, int has_process)
{
    char cmd[2048];
    static char out[1 << 20];
    snprintf(cmd, sizeof cmd, "%s export -f csv %s", tu_mprof_bin(), capture);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    char *save = NULL, *line = strtok_r(out, "\n", &save);
    assert_non_null(line);
    assert_int_equal(strncmp(line, "process,name,", 13) == 0, has_process);
    size_t cap = 1 << 16, len = 0;
    char *res = calloc(1, cap);
    while ((line = strtok_r(NULL, "\n", &save))) {
        char *f[20];
        int n = 0;
        for (char *q = line, *t; n < 20 && (t = strsep(&q, ","));)
            f[n++] = t;
        int o = has_process;
        assert_int_equal(n, 15 + o);
        if (has_process && strcmp(f[0], process_prefix) != 0)
            continue;
        len += (size_t)snprintf(res + len, cap - len, "%s,%s,%s,%s,%s\n", f[o], f[o + 1],
                                f[o + 3], f[o + 4], f[o + 5]);
    }
    return res;
}

static void csv_has_process_column(void **state)
{
    (void)state;
    char *a = csv_rows(cap_a, NULL, 0), *b = csv_rows(cap_b, NULL, 0);
    char *ma = csv_rows(merged, "live_game", 1), *mb = csv_rows(merged, "stats_workload", 1);
    assert_true(strlen(a) > 0 && strlen(b) > 0);
    /* Each process's rows: its input's, count and total to the nanosecond. */
    assert_string_equal(ma, a);
    assert_string_equal(mb, b);
    free(a);
    free(b);
    free(ma);
    free(mb);
}

/* ---- the frame export and the gate ----------------------------------------------------------- */

static cJSON *frames_json(const char *capture, const char *process, const char *path)
{
    char cmd[2048], out[4096];
    snprintf(cmd, sizeof cmd, "%s export -f frames %s%s -o %s %s 2>&1", tu_mprof_bin(),
             process ? "--process " : "", process ? process : "", path, capture);
    if (run(cmd, out, sizeof out) != 0)
        fail_msg("%s", out);
    char *s = slurp(path, NULL);
    assert_non_null(s);
    cJSON *j = cJSON_Parse(s);
    free(s);
    assert_non_null(j);
    return j;
}

static void frames_of_one_process(void **state)
{
    (void)state;
    char cmd[2048], out[4096];
    /* Without --process: refused, naming both, a usage error. */
    snprintf(cmd, sizeof cmd, "%s export -f frames -o %s %s 2>&1", tu_mprof_bin(),
             tu_temp_path("no.json"), merged);
    assert_int_equal(run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "live_game (pid "));
    assert_non_null(strstr(out, "stats_workload (pid "));
    assert_non_null(strstr(out, "--process"));
    /* A process the capture does not have: refused, naming them. */
    snprintf(cmd, sizeof cmd, "%s export -f frames --process nope %s 2>&1", tu_mprof_bin(),
             merged);
    assert_int_equal(run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "no process named \"nope\""));

    for (int k = 0; k < 2; k++) {
        const char *name = k ? "stats_workload" : "live_game";
        const char *pm = tu_temp_path("pm.json"), *pa = tu_temp_path("pa.json");
        cJSON *m = frames_json(merged, name, pm), *a = frames_json(k ? cap_b : cap_a, NULL, pa);
        const cJSON *mc = cJSON_GetObjectItemCaseSensitive(m, "capture");
        const cJSON *ac = cJSON_GetObjectItemCaseSensitive(a, "capture");
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(mc, "process")->valuestring, name);
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(mc, "pid")->valuedouble,
                         cJSON_GetObjectItemCaseSensitive(ac, "pid")->valuedouble);
        const cJSON *fm = cJSON_GetObjectItemCaseSensitive(m, "frameTimesMs");
        const cJSON *fa = cJSON_GetObjectItemCaseSensitive(a, "frameTimesMs");
        assert_true(cJSON_GetArraySize(fa) >= 59);
        assert_int_equal(cJSON_GetArraySize(fm), cJSON_GetArraySize(fa));
        for (int i = 0; i < cJSON_GetArraySize(fa); i++) {
            double d = cJSON_GetArrayItem(fm, i)->valuedouble - cJSON_GetArrayItem(fa, i)->valuedouble;
            assert_true(d < 1.5e-6 && d > -1.5e-6); /* ms: within 1 ns of rounding */
        }
        /* Its zones only: the same names and counts as its input's. */
        const cJSON *zm = cJSON_GetObjectItemCaseSensitive(m, "zones");
        const cJSON *za = cJSON_GetObjectItemCaseSensitive(a, "zones");
        assert_int_equal(cJSON_GetArraySize(zm), cJSON_GetArraySize(za));
        for (int i = 0; i < cJSON_GetArraySize(za); i++) {
            const cJSON *x = cJSON_GetArrayItem(zm, i), *y = cJSON_GetArrayItem(za, i);
            assert_string_equal(cJSON_GetObjectItemCaseSensitive(x, "name")->valuestring,
                                cJSON_GetObjectItemCaseSensitive(y, "name")->valuestring);
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(x, "count")->valuedouble,
                             cJSON_GetObjectItemCaseSensitive(y, "count")->valuedouble);
        }
        cJSON_Delete(m);
        cJSON_Delete(a);

        /* --frames A:B numbers the process's own frames: those of its input alone. */
        const char *rm = tu_temp_path("rm.json"), *ra = tu_temp_path("ra.json");
        snprintf(cmd, sizeof cmd, "%s export -f frames --process %s --frames 10:20 -o %s %s 2>&1",
                 tu_mprof_bin(), name, rm, merged);
        if (run(cmd, out, sizeof out) != 0)
            fail_msg("%s", out);
        snprintf(cmd, sizeof cmd, "%s export -f frames --frames 10:20 -o %s %s 2>&1",
                 tu_mprof_bin(), ra, k ? cap_b : cap_a);
        if (run(cmd, out, sizeof out) != 0)
            fail_msg("%s", out);
        char *s1 = slurp(rm, NULL), *s2 = slurp(ra, NULL);
        cJSON *x = cJSON_Parse(s1), *y = cJSON_Parse(s2);
        free(s1);
        free(s2);
        const cJSON *tx = cJSON_GetObjectItemCaseSensitive(x, "frameTimesMs");
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(y, "frameTimesMs");
        assert_int_equal(cJSON_GetArraySize(ty), 10);
        assert_int_equal(cJSON_GetArraySize(tx), 10);
        for (int i = 0; i < 10; i++) {
            double d = cJSON_GetArrayItem(tx, i)->valuedouble - cJSON_GetArrayItem(ty, i)->valuedouble;
            assert_true(d < 1.5e-6 && d > -1.5e-6);
        }
        cJSON_Delete(x);
        cJSON_Delete(y);
        unlink(rm);
        unlink(ra);

        /* The gate: --process of the export's own process compares; another's is bad input. */
        snprintf(cmd, sizeof cmd,
                 "%s gate --baseline %s --current %s --min-frames 10 --process %s >/dev/null 2>&1",
                 tu_mprof_bin(), pm, pa, name);
        int rc = run(cmd, out, sizeof out);
        assert_true(rc == 0 || rc == 2); /* pass or inconclusive: compared, not refused */
        snprintf(cmd, sizeof cmd,
                 "%s gate --baseline %s --current %s --min-frames 10 --process %s 2>&1",
                 tu_mprof_bin(), pm, pa, k ? "live_game" : "stats_workload");
        assert_int_equal(run(cmd, out, sizeof out), 3);
        assert_non_null(strstr(out, "is an export of process"));
        unlink(pm);
        unlink(pa);
    }
}

/* A one-process capture: --process of its own name is its export as without; the CSV has no
 * process column (csv_has_process_column checks the latter). */
static void one_process_unchanged(void **state)
{
    (void)state;
    const char *p1 = tu_temp_path("o1.json"), *p2 = tu_temp_path("o2.json");
    cJSON *x = frames_json(cap_b, "stats_workload", p1), *y = frames_json(cap_b, NULL, p2);
    char *s1 = cJSON_PrintUnformatted(x), *s2 = cJSON_PrintUnformatted(y);
    assert_string_equal(s1, s2);
    free(s1);
    free(s2);
    cJSON_Delete(x);
    cJSON_Delete(y);
    char cmd[2048], out[4096];
    snprintf(cmd, sizeof cmd, "%s export -f frames --process live_game %s 2>&1", tu_mprof_bin(),
             cap_b);
    assert_int_equal(run(cmd, out, sizeof out), 2);
    unlink(p1);
    unlink(p2);
}

/* mprof ci --process passes the name to its exports: a name the run's capture lacks fails the
 * export, naming the process it has; its own name exports as without. */
static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void ci_passes_process_on(void **state)
{
    (void)state;
    char dir[512], cmd[4096];
    static char out[1 << 16];
    for (int k = 0; k < 2; k++) {
        snprintf(dir, sizeof dir, "%s", tu_temp_path("ci"));
        snprintf(cmd, sizeof cmd,
                 "%s ci --output-dir %s --port %u --runs 1 --process %s -- %s ci "
                 "--self-test-workload --frames 100 2>&1",
                 tu_mprof_bin(), dir, free_port(), k ? "mprof" : "nope", tu_mprof_bin());
        int rc = run(cmd, out, sizeof out);
        if (k == 0) {
            assert_int_equal(rc, 3);
            assert_non_null(strstr(out, "no process named \"nope\" (the capture's processes: mprof"));
        } else {
            if (rc != 0)
                fail_msg("%s", out);
            char path[700];
            snprintf(path, sizeof path, "%s/current/frames.json", dir);
            char *s = slurp(path, NULL);
            assert_non_null(s);
            assert_non_null(strstr(s, "\"process\": \"mprof\""));
            free(s);
        }
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        run(cmd, out, sizeof out);
    }
}

/* ---- diff ------------------------------------------------------------------------------------ */

static void diff_pairs_per_process(void **state)
{
    (void)state;
    char cmd[2048];
    static char out[1 << 20];
    snprintf(cmd, sizeof cmd, "%s diff --json --top 0 %s %s", tu_mprof_bin(), merged, merged);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    for (int s = 0; s < 2; s++) {
        const cJSON *side = cJSON_GetObjectItemCaseSensitive(j, s ? "b" : "a");
        const cJSON *procs = cJSON_GetObjectItemCaseSensitive(side, "processes");
        assert_int_equal(cJSON_GetArraySize(procs), 2);
        for (int k = 0; k < 2; k++) {
            const cJSON *p = cJSON_GetArrayItem(procs, k);
            assert_string_equal(cJSON_GetObjectItemCaseSensitive(p, "name")->valuestring,
                                k ? "stats_workload" : "live_game");
            assert_true(cJSON_GetObjectItemCaseSensitive(p, "pid")->valuedouble > 0);
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(p, "threads")->valuedouble, 2);
        }
    }
    uint64_t per[2] = {0, 0};
    const cJSON *z;
    cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(j, "zones"))
    {
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(z, "status")->valuestring, "both");
        assert_true(cJSON_GetObjectItemCaseSensitive(z, "impact_ns")->valuedouble == 0.0);
        double ac = cJSON_GetObjectItemCaseSensitive(z, "a_count")->valuedouble;
        assert_true(ac == cJSON_GetObjectItemCaseSensitive(z, "b_count")->valuedouble);
        const char *p = cJSON_GetObjectItemCaseSensitive(z, "process")->valuestring;
        per[strcmp(p, "stats_workload") == 0] += (uint64_t)ac;
    }
    assert_int_equal(per[0], zones_a);
    assert_int_equal(per[1], zones_b);
    cJSON_Delete(j);
    /* Text: the processes, and a process column. */
    snprintf(cmd, sizeof cmd, "%s diff %s %s", tu_mprof_bin(), merged, cap_b);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "Processes\n  A: live_game (pid "));
    assert_non_null(strstr(out, "  B: stats_workload (pid "));
    assert_non_null(strstr(out, "  process           zone"));
    /* Only stats_workload's zones pair with B's; live_game's are A's alone. */
    assert_non_null(strstr(out, "zones compared: 5 in both, 6 only in A, 0 only in B"));
}

/* ---- a part that ended early ---------------------------------------------------------------- */

/* Two synthetic captures merged, the second cut off before its end: the exports say so. */
static void ended_early_is_shown(void **state)
{
    (void)state;
    char x[512], y[512], m[512], cmd[4096];
    static char out[1 << 20];
    snprintf(x, sizeof x, "%s", tu_temp_path("x.mprof"));
    snprintf(y, sizeof y, "%s", tu_temp_path("y.mprof"));
    snprintf(m, sizeof m, "%s", tu_temp_path("xy.mprof"));
    tu_cap c = {0};
    tu_cap_thread(&c, 1);
    tu_cap_loc(&c, 1, "x_zone", "fx", "x.c", 1);
    for (int i = 0; i < 20; i++) {
        tu_cap_mark(&c, i * 1000, 0);
        tu_cap_zone(&c, i * 1000 + 100, i * 1000 + 200, 1);
    }
    assert_int_equal(tu_cap_write(&c, x), 0);
    tu_cap_thread(&c, 1);
    tu_cap_loc(&c, 1, "y_zone", "fy", "y.c", 1);
    for (int i = 0; i < 20; i++) {
        tu_cap_mark(&c, i * 1000, 0);
        tu_cap_zone(&c, i * 1000 + 300, i * 1000 + 500, 1);
    }
    assert_int_equal(tu_cap_write(&c, y), 0);
    /* Its END record cut: its events stay, its end is missing. */
    struct stat st;
    assert_int_equal(stat(y, &st), 0);
    assert_int_equal(truncate(y, st.st_size - 1), 0);
    snprintf(cmd, sizeof cmd, "%s merge %s %s -o %s --offset %s=0 --name %s=xp --name %s=yp 2>&1",
             tu_mprof_bin(), x, y, m, y, x, y);
    if (run(cmd, out, sizeof out) != 0)
        fail_msg("%s", out);

    /* Chrome: yp's process_name says how its part ended; xp's says nothing. */
    snprintf(cmd, sizeof cmd, "%s export -f chrome %s", tu_mprof_bin(), m);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"pid\":11,\"tid\":0,\"args\":{\"name\":\"yp (pid "));
    assert_non_null(strstr(out, "\"ended_early\":\"cut-off\""));
    const char *xp = strstr(out, "{\"name\":\"xp (pid ");
    assert_non_null(xp);
    assert_true(strncmp(strchr(xp, ')'), ")\"}}", 4) == 0);

    /* The frame export of yp: incomplete, with a warning; xp's: complete. */
    snprintf(cmd, sizeof cmd, "%s export -f frames --process yp %s", tu_mprof_bin(), m);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"complete\": false"));
    assert_non_null(strstr(out, "ended early (cut-off)"));
    snprintf(cmd, sizeof cmd, "%s export -f frames --process xp %s", tu_mprof_bin(), m);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"complete\": true"));
    assert_null(strstr(out, "ended early"));

    /* Perfetto: yp's ProcessDescriptor's track says it (where protoc and the schema are). */
    const char *dir = proto_dir();
    if (dir) {
        const char *trace = tu_temp_path("xy.pftrace");
        snprintf(cmd, sizeof cmd, "%s export -f perfetto -o %s %s", tu_mprof_bin(), trace, m);
        assert_int_equal(run(cmd, out, sizeof out), 0);
        snprintf(cmd, sizeof cmd,
                 "protoc --decode=perfetto.protos.Trace -I %s %s/perfetto_trace.proto < %s", dir,
                 dir, trace);
        assert_int_equal(run(cmd, out, sizeof out), 0);
        const char *yd = strstr(out, "process_name: \"yp\"");
        assert_non_null(yd);
        assert_non_null(strstr(yd, "Its part of the capture ended early (cut-off)."));
        unlink(trace);
    }
    unlink(x);
    unlink(y);
    unlink(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chrome_has_each_process),
        cmocka_unit_test(perfetto_has_each_process),
        cmocka_unit_test(csv_has_process_column),
        cmocka_unit_test(frames_of_one_process),
        cmocka_unit_test(one_process_unchanged),
        cmocka_unit_test(ci_passes_process_on),
        cmocka_unit_test(diff_pairs_per_process),
        cmocka_unit_test(ended_early_is_shown),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
