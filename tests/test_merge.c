/*
 * test_merge.c - several processes in one capture (format 1.5): the reader's DEF_PROCESS,
 * THREAD_PROCESS and PROCESS_END (and its refusal of bad ones), the merger on synthetic
 * captures whose every time is known, `mprof merge` of two in-process captures of a real program
 * against the sum of their reports, and `mprof capture -p A -p B` of two real programs (LIVE_GAME
 * = tests/live_game.c) over loopback: every zone of each exact against its own in-process
 * capture, and one of them killed mid-capture, marked, with the other complete.
 */
#include "test_util.h"

#include "format/merge.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- captures built by hand ---------------------------------------------------------------- */

static unsigned char *put_str(unsigned char *o, const char *s, size_t n)
{
    o = mprof_put_varint(o, n);
    memcpy(o, s, n);
    return o + n;
}

/* A capture in memory: header, INFO (one tick a ns), one EVENTS chunk of payload, END when
 * with_end. */
static mprof_buf mem_capture(const unsigned char *payload, size_t n, int with_end)
{
    mprof_buf f = {0}, kv = {0};
    assert_int_equal(mprof_buf_reserve(&f, 16), 0);
    mprof_fmt_file_header(f.data);
    f.len = 16;
    mprof_fmt_kv(&kv, "app", "merged");
    mprof_fmt_kv(&kv, "ns_per_tick", "1");
    mprof_fmt_kv(&kv, "tick0", "0");
    mprof_fmt_kv(&kv, "processes", "2");
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_INFO, kv.data, kv.len, 0, NULL), 0);
    assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_EVENTS, payload, n, 3, NULL), 0);
    if (with_end) {
        kv.len = 0;
        mprof_fmt_kv(&kv, "events", "2");
        assert_int_equal(mprof_fmt_chunk(&f, MPROF_CHUNK_END, kv.data, kv.len, 0, NULL), 0);
    }
    mprof_buf_free(&kv);
    return f;
}

static unsigned char *def_process(unsigned char *o, uint32_t idx, uint64_t pid, const char *name,
                                  const mprof_buf *info)
{
    *o++ = MPROF_EV_DEF_PROCESS;
    o = mprof_put_varint(o, idx);
    o = mprof_put_varint(o, pid);
    o = put_str(o, name, strlen(name));
    return put_str(o, info ? (const char *)info->data : "", info ? info->len : 0);
}

static unsigned char *pair(unsigned char *o, int tag, uint64_t a, uint64_t b)
{
    *o++ = (unsigned char)tag;
    o = mprof_put_varint(o, a);
    return mprof_put_varint(o, b);
}

/* Reads a capture in memory to its end: the reader's result (0 or -1) and its error. */
static int read_all(const mprof_buf *f, char *err, size_t n, mprof_reader **keep)
{
    mprof_reader *r = mprof_reader_open_mem(f->data, f->len, err, n);
    assert_non_null(r);
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1)
        ;
    if (rc < 0)
        snprintf(err, n, "%s", mprof_reader_error(r));
    if (keep)
        *keep = r;
    else
        mprof_reader_close(r);
    return rc;
}

static void reader_processes(void **state)
{
    (void)state;
    unsigned char p[512], *o = p;
    mprof_buf info = {0}, end = {0};
    mprof_fmt_kv(&info, "hostname", "alpha-host");
    o = def_process(o, 1, 100, "alpha", &info);
    o = def_process(o, 2, 200, "beta", NULL);
    o = pair(o, MPROF_EV_DEF_THREAD, 1, 11);
    o = pair(o, MPROF_EV_THREAD_PROCESS, 1, 1);
    o = pair(o, MPROF_EV_DEF_THREAD, 2, 22);
    o = pair(o, MPROF_EV_THREAD_PROCESS, 2, 2);
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 2);
    *o++ = MPROF_EV_FRAME_MARK;
    o = mprof_put_varint(o, mprof_zigzag(10));
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_THREAD_EXIT;
    o = mprof_put_varint(o, mprof_zigzag(5));
    mprof_fmt_kv(&end, "ended_by", "connection-lost");
    mprof_fmt_kv(&end, "events", "2");
    mprof_fmt_kv(&end, "events_lost", "3");
    *o++ = MPROF_EV_PROCESS_END;
    o = mprof_put_varint(o, 2);
    o = put_str(o, (const char *)end.data, end.len);
    mprof_buf f = mem_capture(p, (size_t)(o - p), 1);
    char err[256];
    mprof_reader *r;
    assert_int_equal(read_all(&f, err, sizeof err, &r), 0);
    assert_int_equal(mprof_reader_process_count(r), 2);
    const mprof_process_def *a = mprof_reader_process(r, 0), *b = mprof_reader_process(r, 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(mprof_reader_process(r, 2));
    assert_int_equal(a->pid, 100);
    assert_string_equal(a->name, "alpha");
    assert_null(a->ended_by);
    assert_string_equal(mprof_reader_process_info(r, 0, "hostname"), "alpha-host");
    assert_null(mprof_reader_process_info(r, 1, "hostname"));
    assert_int_equal(b->pid, 200);
    assert_string_equal(b->ended_by, "connection-lost");
    assert_int_equal(b->events, 2);
    assert_int_equal(b->events_lost, 3);
    assert_int_equal(mprof_reader_thread(r, 1)->process, 0);
    assert_int_equal(mprof_reader_thread(r, 2)->process, 1);
    mprof_reader_close(r);
    mprof_buf_free(&f);
    mprof_buf_free(&info);
    mprof_buf_free(&end);

    /* Without DEF_PROCESS: one process, from INFO and END. */
    tu_cap c = {0};
    tu_cap_thread(&c, 1);
    tu_cap_loc(&c, 1, "z", "f", "f.c", 1);
    tu_cap_zone(&c, 10, 20, 1);
    const char *path = tu_temp_path("single.mprof");
    assert_int_equal(tu_cap_write(&c, path), 0);
    r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(mprof_reader_process_count(r), 1);
    assert_int_equal(mprof_reader_process(r, 0)->pid, 7);
    assert_string_equal(mprof_reader_process(r, 0)->name, "synthetic");
    assert_string_equal(mprof_reader_process_info(r, 0, "app"), "synthetic");
    assert_null(mprof_reader_process(r, 1));
    mprof_reader_close(r);
    unlink(path);
}

static void reader_refuses_bad_process_records(void **state)
{
    (void)state;
    static const char *const expect[] = {
        "not defined before it",      /* THREAD_PROCESS of an undefined process */
        "process index 0",            /* DEF_PROCESS 0 */
        "process index out of order", /* DEF_PROCESS 2 first */
        "malformed process info",     /* info that is not a key/value list */
        "not defined before it",      /* PROCESS_END of an undefined process */
        "thread index out of range",  /* THREAD_PROCESS of thread 0 */
    };
    for (int k = 0; k < 6; k++) {
        unsigned char p[256], *o = p;
        mprof_buf bad = {0};
        switch (k) {
        case 0:
            o = pair(o, MPROF_EV_THREAD_PROCESS, 1, 1);
            break;
        case 1:
            o = def_process(o, 0, 1, "x", NULL);
            break;
        case 2:
            o = def_process(o, 2, 1, "x", NULL);
            break;
        case 3:
            mprof_buf_reserve(&bad, 8);
            memcpy(bad.data, "\x05" "ab", 3); /* a key of 5 bytes with 2 there */
            bad.len = 3;
            o = def_process(o, 1, 1, "x", &bad);
            break;
        case 4:
            o = def_process(o, 1, 1, "x", NULL);
            *o++ = MPROF_EV_PROCESS_END;
            o = mprof_put_varint(o, 3);
            o = mprof_put_varint(o, 0);
            break;
        default:
            o = def_process(o, 1, 1, "x", NULL);
            o = pair(o, MPROF_EV_THREAD_PROCESS, 0, 1);
            break;
        }
        mprof_buf f = mem_capture(p, (size_t)(o - p), 1);
        char err[256];
        assert_int_equal(read_all(&f, err, sizeof err, NULL), -1);
        if (!strstr(err, expect[k]))
            fail_msg("case %d: '%s' does not say '%s'", k, err, expect[k]);
        /* The message names the tag and where it is. */
        assert_non_null(strstr(err, "chunk at offset"));
        mprof_buf_free(&f);
        mprof_buf_free(&bad);
    }
}

/* ---- the merger on captures whose every time is known ------------------------------------- */

typedef struct zone_seen {
    char name[32];
    int64_t begin, end;
    uint32_t process;
} zone_seen;

/* The zones of a capture in file order (at most n), with their processes. */
static int zones_of(const char *path, zone_seen *z, int n, mprof_reader_stats *st)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    mprof_event ev;
    int k = 0, rc;
    int open[64][8], depth[64] = {0}; /* each thread's open zones */
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        assert_true(ev.thread < 64);
        if (ev.type == MPROF_EV_ZONE_BEGIN && k < n) {
            const mprof_srcloc_def *d = mprof_reader_srcloc(r, (uint32_t)ev.u[0]);
            assert_non_null(d);
            snprintf(z[k].name, sizeof z[k].name, "%s", d->name);
            z[k].begin = ev.ts_ns;
            z[k].process = mprof_reader_thread(r, ev.thread)->process;
            assert_true(depth[ev.thread] < 8);
            open[ev.thread][depth[ev.thread]++] = k++;
        } else if (ev.type == MPROF_EV_ZONE_END) {
            assert_true(depth[ev.thread] > 0);
            z[open[ev.thread][--depth[ev.thread]]].end = ev.ts_ns;
        }
    }
    assert_int_equal(rc, 0);
    mprof_reader_get_stats(r, st);
    mprof_reader_close(r);
    return k;
}

static const zone_seen *find_zone(const zone_seen *z, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(z[i].name, name) == 0)
            return &z[i];
    fail_msg("no zone %s", name);
    return NULL;
}

static void merge_synthetic_exact(void **state)
{
    (void)state;
    const char *a = strdup(tu_temp_path("a.mprof")), *b = strdup(tu_temp_path("b.mprof"));
    const char *m = strdup(tu_temp_path("m.mprof")), *m3 = strdup(tu_temp_path("m3.mprof"));
    tu_cap c = {0};
    tu_cap_thread(&c, 1);
    tu_cap_loc(&c, 1, "a_zone", "fa", "a.c", 1);
    tu_cap_mark(&c, 0, 0);
    tu_cap_zone(&c, 100, 200, 1);
    tu_cap_mark(&c, 1000, 0);
    tu_cap_mark(&c, 2000, 0);
    assert_int_equal(tu_cap_write(&c, a), 0);
    tu_cap_thread(&c, 1);
    tu_cap_loc(&c, 1, "b_zone", "fb", "b.c", 1); /* the same id as a_zone, in another process */
    tu_cap_loc(&c, 2, "b_inner", "fb", "b.c", 2);
    tu_cap_begin(&c, 50, 1);
    tu_cap_zone(&c, 60, 70, 2);
    tu_cap_end(&c, 80);
    tu_cap_thread(&c, 2);
    tu_cap_zone(&c, 10, 30, 2);
    assert_int_equal(tu_cap_write(&c, b), 0);

    /* Synthetic captures have no host, timer or wall clock: placing them needs --offset. */
    mprof_merge_input in[3] = {{.path = a}, {.path = b}};
    mprof_merge_result res;
    char err[512];
    assert_int_equal(mprof_merge(in, 2, m, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "--offset"));
    in[1].has_offset = 1;
    in[1].offset_ns = 5000;
    in[1].name = "the-b";
    assert_int_equal(mprof_merge(in, 2, m, &res, err, sizeof err), 0);
    assert_int_equal(res.processes, 2);
    assert_string_equal(res.alignment, "offset");
    assert_int_equal(res.ended_early, 0);

    zone_seen z[16];
    mprof_reader_stats st;
    int n = zones_of(m, z, 16, &st);
    assert_int_equal(n, 4);
    assert_true(mprof_reader_stats_whole(&st));
    const zone_seen *za = find_zone(z, n, "a_zone"), *zb = find_zone(z, n, "b_zone");
    assert_int_equal(za->begin, 100);
    assert_int_equal(za->end, 200);
    assert_int_equal(za->process, 0);
    assert_int_equal(zb->begin, 5050);
    assert_int_equal(zb->end, 5080);
    assert_int_equal(zb->process, 1);
    int inner = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(z[i].name, "b_inner") == 0) {
            assert_int_equal(z[i].process, 1);
            assert_true((z[i].begin == 5060 && z[i].end == 5070) ||
                        (z[i].begin == 5010 && z[i].end == 5030));
            inner++;
        }
    assert_int_equal(inner, 2);
    char err2[256];
    mprof_reader *r = mprof_reader_open(m, err2, sizeof err2);
    assert_non_null(r);
    tu_counts ca, cb, cm;
    assert_int_equal(tu_count_capture(a, &ca), 0);
    assert_int_equal(tu_count_capture(b, &cb), 0);
    assert_int_equal(tu_count_capture(m, &cm), 0);
    assert_int_equal(cm.by_type[MPROF_EV_ZONE_BEGIN],
                     ca.by_type[MPROF_EV_ZONE_BEGIN] + cb.by_type[MPROF_EV_ZONE_BEGIN]);
    assert_int_equal(cm.by_type[MPROF_EV_FRAME_MARK], 3);
    mprof_event ev;
    while (mprof_reader_next(r, &ev) == 1)
        ;
    assert_int_equal(mprof_reader_process_count(r), 2);
    assert_string_equal(mprof_reader_process(r, 0)->name, "synthetic");
    assert_string_equal(mprof_reader_process(r, 1)->name, "the-b");
    assert_int_equal(mprof_reader_process(r, 1)->pid, 7);
    assert_string_equal(mprof_reader_info(r, "merge_alignment"), "offset");
    assert_string_equal(mprof_reader_process_info(r, 1, "merge_offset_ns"), "5000");
    assert_string_equal(mprof_reader_info(r, "processes"), "2");
    mprof_reader_close(r);

    /* A merged capture merged again keeps its processes; the new input comes after them. */
    in[0].path = m;
    in[1].path = a;
    in[1].name = NULL;
    in[1].offset_ns = 100000;
    assert_int_equal(mprof_merge(in, 2, m3, &res, err, sizeof err), 0);
    assert_int_equal(res.processes, 3);
    n = zones_of(m3, z, 16, &st);
    assert_int_equal(n, 5);
    assert_true(mprof_reader_stats_whole(&st));
    int in_third = 0;
    for (int i = 0; i < n; i++)
        if (z[i].process == 2) {
            assert_string_equal(z[i].name, "a_zone");
            assert_int_equal(z[i].begin, 100100);
            in_third++;
        }
    assert_int_equal(in_third, 1);
    assert_int_equal(find_zone(z, n, "b_zone")->begin, 5050);
    r = mprof_reader_open(m3, err2, sizeof err2);
    while (mprof_reader_next(r, &ev) == 1)
        ;
    assert_int_equal(mprof_reader_process_count(r), 3);
    assert_string_equal(mprof_reader_process(r, 1)->name, "the-b");
    mprof_reader_close(r);

    /* An input cut off (no END) is merged and marked. */
    FILE *f = fopen(b, "r+b");
    assert_non_null(f);
    struct stat sb;
    assert_int_equal(stat(b, &sb), 0);
    assert_int_equal(ftruncate(fileno(f), sb.st_size - 10), 0);
    fclose(f);
    in[0].path = a;
    in[1].path = b;
    in[1].offset_ns = 0;
    assert_int_equal(mprof_merge(in, 2, m, &res, err, sizeof err), 0);
    assert_int_equal(res.ended_early, 1);
    r = mprof_reader_open(m, err2, sizeof err2);
    while (mprof_reader_next(r, &ev) == 1)
        ;
    assert_null(mprof_reader_process(r, 0)->ended_by);
    assert_string_equal(mprof_reader_process(r, 1)->ended_by, "cut-off");
    mprof_reader_close(r);

    /* Bad inputs: a message naming the file, and no output. */
    unlink(m);
    in[1].path = "/nonexistent/x.mprof";
    assert_int_equal(mprof_merge(in, 2, m, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/x.mprof"));
    struct stat so;
    assert_int_not_equal(stat(m, &so), 0);
    for (const char *p[] = {a, b, m, m3}, **q = p; q < p + 4; q++) {
        unlink(*q);
        free((char *)*q);
    }
}

/* ---- real programs ------------------------------------------------------------------------- */

static const char *game_bin(void)
{
    const char *g = getenv("LIVE_GAME");
    return g && *g ? g : "./live_game";
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

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

/* Spawns argv with MPROF_LISTEN=1 and env1; stdout and stderr go to out_path. */
static pid_t spawn(char *const argv[], const char *env1, const char *out_path)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + 4, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "MPROF_LISTEN=", 13) != 0)
            envp[k++] = environ[i];
    envp[k++] = "MPROF_LISTEN=1";
    envp[k++] = "MPROF_HISTORY_SECONDS=600";
    if (env1)
        envp[k++] = (char *)env1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    assert_int_equal(rc, 0);
    return pid;
}

static int wait_exit(pid_t pid, int timeout_ms)
{
    for (int t = 0; t < timeout_ms; t += 10) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static int wait_for(const char *p, long min_size, int timeout_ms)
{
    struct stat st;
    for (int t = 0; t < timeout_ms; t += 10) {
        if (stat(p, &st) == 0 && st.st_size >= min_size)
            return 0;
        sleep_ms(10);
    }
    return -1;
}

typedef struct game {
    pid_t pid;
    unsigned port;
    char port_env[32], out[512], until[512], ready[512], inproc[512];
} game;

/* live_game on a fresh port, with its own in-process capture; runs until game_finish when
 * until is set, else for its frames. */
static void game_start(game *g, const char *frames, int until)
{
    g->port = free_port();
    snprintf(g->port_env, sizeof g->port_env, "MPROF_PORT=%u", g->port);
    snprintf(g->out, sizeof g->out, "%s", tu_temp_path("game.out"));
    snprintf(g->until, sizeof g->until, "%s", tu_temp_path("until"));
    snprintf(g->ready, sizeof g->ready, "%s", tu_temp_path("ready"));
    snprintf(g->inproc, sizeof g->inproc, "%s", tu_temp_path("inproc.mprof"));
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)game_bin();
    argv[n++] = "--frames";
    argv[n++] = (char *)frames;
    argv[n++] = "--capture";
    argv[n++] = g->inproc;
    argv[n++] = "--ready";
    argv[n++] = g->ready;
    if (until) {
        argv[n++] = "--until";
        argv[n++] = g->until;
    }
    argv[n] = NULL;
    g->pid = spawn(argv, g->port_env, g->out);
}

static int game_finish(game *g)
{
    FILE *f = fopen(g->until, "w");
    if (f)
        fclose(f);
    int rc = wait_exit(g->pid, 20000);
    unlink(g->until);
    unlink(g->ready);
    unlink(g->out);
    return rc;
}

/* Per process of a capture: zones, frame marks and plots (the events each program recorded
 * that do not depend on when a tool connected). */
typedef struct per_proc {
    uint64_t zones, marks, plots, allocs;
} per_proc;

static uint32_t count_by_process(const char *path, per_proc *out, uint32_t max)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    if (!r)
        fail_msg("%s", err);
    memset(out, 0, max * sizeof *out);
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        const mprof_thread_def *t = mprof_reader_thread(r, ev.thread);
        uint32_t p = t ? t->process : 0;
        assert_true(p < max);
        out[p].zones += ev.type == MPROF_EV_ZONE_BEGIN;
        out[p].marks += ev.type == MPROF_EV_FRAME_MARK;
        out[p].plots += ev.type == MPROF_EV_PLOT_I64 || ev.type == MPROF_EV_PLOT_F64;
        out[p].allocs += ev.type == MPROF_EV_ALLOC;
    }
    assert_int_equal(rc, 0);
    uint32_t n = mprof_reader_process_count(r);
    mprof_reader_close(r);
    return n;
}

static void same_counts(const per_proc *merged, const char *inproc)
{
    per_proc one;
    assert_int_equal(count_by_process(inproc, &one, 1), 1);
    assert_true(one.zones > 100);
    assert_int_equal(merged->zones, one.zones);
    assert_int_equal(merged->marks, one.marks);
    assert_int_equal(merged->plots, one.plots);
    assert_int_equal(merged->allocs, one.allocs);
}

static cJSON *report_json(const char *path)
{
    char cmd[1024];
    static char out[1 << 20];
    snprintf(cmd, sizeof cmd, "%s report --json %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    return j;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_non_null(v);
    return v->valuedouble;
}

/* The sum over a report's zones named name of key. */
static double zone_sum(const cJSON *rep, const char *name, const char *key)
{
    double s = 0;
    const cJSON *z;
    cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(rep, "zones"))
        if (strcmp(cJSON_GetObjectItemCaseSensitive(z, "name")->valuestring, name) == 0)
            s += num(z, key);
    return s;
}

/* Two in-process captures of a real program, merged: the merged report is their sum. */
static void merge_equals_sum_of_reports(void **state)
{
    (void)state;
    game g[2];
    for (int i = 0; i < 2; i++) {
        game_start(&g[i], "60", 0);
        assert_int_equal(wait_exit(g[i].pid, 30000), 0);
        unlink(g[i].ready);
        unlink(g[i].out);
    }
    const char *m = strdup(tu_temp_path("merged.mprof"));
    char cmd[2048], out[4096];
    snprintf(cmd, sizeof cmd, "%s merge %s %s -o %s 2>&1", tu_mprof_bin(), g[0].inproc,
             g[1].inproc, m);
    if (tu_run(cmd, out, sizeof out) != 0)
        fail_msg("%s", out);
    assert_non_null(strstr(out, "2 processes"));
    /* One host, one timer: aligned by their clocks. */
    assert_non_null(strstr(out, "aligned by clock"));
    /* Refused again without -f. */
    assert_int_equal(tu_run(cmd, out, sizeof out), 3);
    cJSON *ra = report_json(g[0].inproc), *rb = report_json(g[1].inproc), *rm = report_json(m);
    const cJSON *ev[3] = {cJSON_GetObjectItemCaseSensitive(ra, "events"),
                          cJSON_GetObjectItemCaseSensitive(rb, "events"),
                          cJSON_GetObjectItemCaseSensitive(rm, "events")};
    assert_true(num(ev[0], "total") > 1000);
    assert_int_equal((uint64_t)num(ev[2], "total"),
                     (uint64_t)num(ev[0], "total") + (uint64_t)num(ev[1], "total"));
    assert_int_equal((uint64_t)num(ev[2], "lost"), 0);
    static const char *const zones[] = {"frame", "update", "render", "early_zone", "late_zone",
                                        "job"};
    for (size_t k = 0; k < sizeof zones / sizeof *zones; k++) {
        assert_true(zone_sum(ra, zones[k], "count") > 0);
        assert_int_equal((uint64_t)zone_sum(rm, zones[k], "count"),
                         (uint64_t)zone_sum(ra, zones[k], "count") +
                             (uint64_t)zone_sum(rb, zones[k], "count"));
        assert_int_equal((uint64_t)zone_sum(rm, zones[k], "total_ns"),
                         (uint64_t)zone_sum(ra, zones[k], "total_ns") +
                             (uint64_t)zone_sum(rb, zones[k], "total_ns"));
    }
    int ta = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ra, "threads"));
    int tb = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rb, "threads"));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rm, "threads")), ta + tb);
    /* processes[]: each input with its pid, name, threads and frames. */
    const cJSON *procs = cJSON_GetObjectItemCaseSensitive(rm, "processes");
    assert_int_equal(cJSON_GetArraySize(procs), 2);
    assert_null(cJSON_GetObjectItemCaseSensitive(ra, "processes"));
    const cJSON *reps[2] = {ra, rb};
    for (int i = 0; i < 2; i++) {
        const cJSON *p = cJSON_GetArrayItem(procs, i);
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(reps[i], "capture");
        assert_int_equal((uint64_t)num(p, "pid"), (uint64_t)num(cap, "pid"));
        assert_int_equal((uint64_t)num(p, "pid"), (uint64_t)g[i].pid);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(p, "name")->valuestring,
                            cJSON_GetObjectItemCaseSensitive(cap, "app")->valuestring);
        assert_int_equal((int)num(p, "threads"),
                         cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(reps[i], "threads")));
        assert_null(cJSON_GetObjectItemCaseSensitive(p, "ended_by"));
        const cJSON *fm = cJSON_GetObjectItemCaseSensitive(p, "frames");
        const cJSON *fr = cJSON_GetObjectItemCaseSensitive(reps[i], "frames");
        assert_int_equal((uint64_t)num(fm, "count"), (uint64_t)num(fr, "count"));
        assert_true(num(fm, "p95_ms") > 0);
    }
    /* The capture's own frames are the first marking process's, not the two interleaved. */
    assert_int_equal((uint64_t)num(cJSON_GetObjectItemCaseSensitive(rm, "frames"), "count"),
                     (uint64_t)num(cJSON_GetObjectItemCaseSensitive(ra, "frames"), "count"));
    cJSON_Delete(ra);
    cJSON_Delete(rb);
    cJSON_Delete(rm);
    /* The text report lists the processes. */
    snprintf(cmd, sizeof cmd, "%s report %s", tu_mprof_bin(), m);
    static char text[1 << 16];
    assert_int_equal(tu_run(cmd, text, sizeof text), 0);
    assert_non_null(strstr(text, "Processes (2, aligned by clock)"));
    for (int i = 0; i < 2; i++)
        unlink(g[i].inproc);
    unlink(m);
    free((char *)m);
}

/* Starts `mprof capture -o out -p A -p B --history 600 --wait 10 [-s S]`. */
static pid_t capture_two(const game *a, const game *b, const char *out, const char *log,
                         const char *seconds)
{
    char pa[16], pb[16];
    snprintf(pa, sizeof pa, "%u", a->port);
    snprintf(pb, sizeof pb, "%u", b->port);
    char *argv[24];
    int n = 0;
    argv[n++] = (char *)tu_mprof_bin();
    argv[n++] = "capture";
    argv[n++] = "-o";
    argv[n++] = (char *)out;
    argv[n++] = "-p";
    argv[n++] = pa;
    argv[n++] = "-a";
    argv[n++] = "127.0.0.1";
    argv[n++] = "-p";
    argv[n++] = pb;
    argv[n++] = "--history";
    argv[n++] = "600";
    argv[n++] = "--wait";
    argv[n++] = "10";
    if (seconds) {
        argv[n++] = "-s";
        argv[n++] = (char *)seconds;
    }
    argv[n] = NULL;
    return spawn(argv, NULL, log);
}

static void two_processes_one_capture(void **state)
{
    (void)state;
    game a, b;
    game_start(&a, "150", 1);
    game_start(&b, "120", 1);
    assert_int_equal(wait_for(a.ready, 0, 10000), 0);
    assert_int_equal(wait_for(b.ready, 0, 10000), 0);
    char out[512], log[512], part[600];
    snprintf(out, sizeof out, "%s", tu_temp_path("two.mprof"));
    snprintf(log, sizeof log, "%s", tu_temp_path("two.log"));
    pid_t tool = capture_two(&a, &b, out, log, NULL);
    for (int k = 1; k <= 2; k++) {
        snprintf(part, sizeof part, "%s.parts/%d.mprof", out, k);
        assert_int_equal(wait_for(part, 400, 10000), 0);
    }
    assert_int_equal(game_finish(&a), 0);
    assert_int_equal(game_finish(&b), 0);
    assert_int_equal(wait_exit(tool, 20000), 0);
    /* The parts are gone, merged into out. */
    struct stat st;
    snprintf(part, sizeof part, "%s.parts", out);
    assert_int_not_equal(stat(part, &st), 0);
    per_proc pp[4];
    assert_int_equal(count_by_process(out, pp, 4), 2);
    same_counts(&pp[0], a.inproc);
    same_counts(&pp[1], b.inproc);
    char err[256];
    mprof_reader *r = mprof_reader_open(out, err, sizeof err);
    mprof_event ev;
    while (mprof_reader_next(r, &ev) == 1)
        ;
    assert_int_equal(mprof_reader_process(r, 0)->pid, (uint64_t)a.pid);
    assert_int_equal(mprof_reader_process(r, 1)->pid, (uint64_t)b.pid);
    assert_string_equal(mprof_reader_process(r, 0)->name, "live_game");
    assert_null(mprof_reader_process(r, 0)->ended_by);
    assert_null(mprof_reader_process(r, 1)->ended_by);
    assert_string_equal(mprof_reader_info(r, "merge_alignment"), "clock");
    mprof_reader_stats rs;
    mprof_reader_get_stats(r, &rs);
    assert_true(mprof_reader_stats_whole(&rs));
    mprof_reader_close(r);
    unlink(out);
    unlink(log);
    unlink(a.inproc);
    unlink(b.inproc);
}

static void killed_process_marked_other_complete(void **state)
{
    (void)state;
    game a, b;
    game_start(&a, "150", 1);
    game_start(&b, "100000", 1);
    assert_int_equal(wait_for(a.ready, 0, 10000), 0);
    assert_int_equal(wait_for(b.ready, 0, 10000), 0);
    char out[512], log[512], part[600];
    snprintf(out, sizeof out, "%s", tu_temp_path("killed.mprof"));
    snprintf(log, sizeof log, "%s", tu_temp_path("killed.log"));
    pid_t tool = capture_two(&a, &b, out, log, NULL);
    for (int k = 1; k <= 2; k++) {
        snprintf(part, sizeof part, "%s.parts/%d.mprof", out, k);
        assert_int_equal(wait_for(part, 400, 10000), 0);
    }
    /* B's part holds zones (what it had recorded came first, as history) before B dies. */
    snprintf(part, sizeof part, "%s.parts/2.mprof", out);
    tu_counts pc = {0};
    for (int t = 0; t < 1000 && pc.by_type[MPROF_EV_ZONE_BEGIN] == 0; t++) {
        tu_count_capture(part, &pc);
        sleep_ms(10);
    }
    assert_true(pc.by_type[MPROF_EV_ZONE_BEGIN] > 0);
    kill(b.pid, SIGKILL);
    assert_int_equal(wait_exit(b.pid, 5000), 128 + SIGKILL);
    assert_int_equal(game_finish(&a), 0);
    assert_int_equal(wait_exit(tool, 20000), 0);
    per_proc pp[4];
    assert_int_equal(count_by_process(out, pp, 4), 2);
    same_counts(&pp[0], a.inproc);
    assert_true(pp[1].zones > 0); /* what the killed one sent before it died */
    cJSON *rep = report_json(out);
    const cJSON *procs = cJSON_GetObjectItemCaseSensitive(rep, "processes");
    assert_int_equal(cJSON_GetArraySize(procs), 2);
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(procs, 0), "ended_by"));
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(procs, 1), "ended_by");
    assert_non_null(by);
    assert_string_equal(by->valuestring, "connection-lost");
    assert_int_equal((uint64_t)num(cJSON_GetArrayItem(procs, 1), "pid"), (uint64_t)b.pid);
    /* The capture as a whole is complete: the merger closed it. */
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(rep, "capture");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cap, "complete")));
    cJSON_Delete(rep);
    unlink(out);
    unlink(log);
    unlink(a.inproc);
    unlink(b.inproc);
    unlink(b.out);
    unlink(b.until);
    unlink(b.ready);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reader_processes),
        cmocka_unit_test(reader_refuses_bad_process_records),
        cmocka_unit_test(merge_synthetic_exact),
        cmocka_unit_test(merge_equals_sum_of_reports),
        cmocka_unit_test(two_processes_one_capture),
        cmocka_unit_test(killed_process_marked_other_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
