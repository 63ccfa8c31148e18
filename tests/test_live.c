/*
 * test_live.c - live capture end to end: the real `mprof capture` (MPROF_BIN) against a real
 * instrumented program (LIVE_GAME = tests/live_game.c) over loopback, each test on its own free
 * port. Covers the list: live counts equal the in-process capture of the same run, a
 * late tool gets every definition, history reaches back before the connection, a killed tool
 * leaves the game running and a readable file, a killed game leaves a readable file, -f, a
 * protocol mismatch both ways, a second tool refused, and the capture automation triggers.
 */
#include "test_util.h"

#include "format/batch.h"
#include "format/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
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

/* ---- helpers ------------------------------------------------------------------------------- */

/* Temporary paths, removed after each test (with the automation's directories). */
static char *tmps[64];
static int n_tmps;

static const char *tmp(const char *stem)
{
    const char *p = tu_temp_path(stem);
    if (n_tmps < 64)
        tmps[n_tmps++] = strdup(p);
    return n_tmps <= 64 ? tmps[n_tmps - 1] : p;
}

static int cleanup(void **state)
{
    (void)state;
    for (int i = 0; i < n_tmps; i++) {
        unlink(tmps[i]);
        char log[600];
        snprintf(log, sizeof log, "%s.log", tmps[i]);
        unlink(log);
        /* tmp("auto/dir/capture.mprof"): remove the directories it created. */
        char *slash;
        while ((slash = strrchr(tmps[i], '/')) && strstr(tmps[i], "-auto")) {
            *slash = 0;
            if (rmdir(tmps[i]) != 0)
                break;
        }
        free(tmps[i]);
    }
    n_tmps = 0;
    return 0;
}

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

/* A port that was free a moment ago (bind to 0, read it back, close). */
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

/* Spawns argv with extra environment entries; stdout+stderr go to out_path. */
static pid_t spawn(char *const argv[], const char *env1, const char *env2, const char *out_path)
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
    if (env1)
        envp[k++] = (char *)env1;
    if (env2)
        envp[k++] = (char *)env2;
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

/* Waits for pid up to timeout_ms; returns its exit code, 128+signal, or -1 (then it is killed). */
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

static long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static int wait_for(const char *p, long min_size, int timeout_ms)
{
    for (int t = 0; t < timeout_ms; t += 10) {
        if (file_size(p) >= min_size)
            return 0;
        sleep_ms(10);
    }
    return -1;
}

static void touch(const char *p)
{
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
}

static char *slurp(const char *p)
{
    static char buf[8192];
    buf[0] = 0;
    FILE *f = fopen(p, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    return buf;
}

typedef struct game {
    pid_t pid;
    char port_env[32], out[512], until[512], ready[512];
    unsigned port;
} game;

/* Starts live_game on port; extra args are appended. */
static void game_start_on(game *g, unsigned port, const char *history_env, char *const extra[])
{
    g->port = port;
    snprintf(g->port_env, sizeof g->port_env, "MPROF_PORT=%u", g->port);
    snprintf(g->out, sizeof g->out, "%s", tmp("game.out"));
    snprintf(g->until, sizeof g->until, "%s", tmp("until"));
    snprintf(g->ready, sizeof g->ready, "%s", tmp("ready"));
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)game_bin();
    argv[n++] = "--ready";
    argv[n++] = g->ready;
    argv[n++] = "--until";
    argv[n++] = g->until;
    for (int i = 0; extra && extra[i]; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    g->pid = spawn(argv, g->port_env, history_env, g->out);
}

/* Starts live_game on a fresh port. */
static void game_start(game *g, const char *history_env, char *const extra[])
{
    game_start_on(g, free_port(), history_env, extra);
}

static int game_finish(game *g)
{
    touch(g->until);
    int rc = wait_exit(g->pid, 20000);
    unlink(g->until);
    unlink(g->ready);
    return rc;
}

/* Runs `mprof capture -o out -p port ARGS...` in the background. */
static pid_t tool_start(unsigned port, const char *out, const char *log, char *const args[])
{
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%u", port);
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)tu_mprof_bin();
    argv[n++] = "capture";
    argv[n++] = "-o";
    argv[n++] = (char *)out;
    argv[n++] = "-p";
    argv[n++] = portbuf;
    for (int i = 0; args && args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return spawn(argv, NULL, NULL, log);
}

/* Counts ZONE_BEGIN events of the zone named `name`, and checks that every zone, thread and
 * plot reference in the capture resolves to a definition. */
static uint64_t zone_count(const char *path, const char *name, int *unresolved, int *threads_named,
                           int64_t *min_frame_index)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    mprof_event ev;
    uint64_t n = 0;
    *unresolved = 0;
    *min_frame_index = INT64_MAX;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        if (ev.type == MPROF_EV_ZONE_BEGIN) {
            const mprof_srcloc_def *d = mprof_reader_srcloc(r, (uint32_t)ev.u[0]);
            if (!d)
                (*unresolved)++;
            else if (strcmp(d->name, name) == 0)
                n++;
        } else if (ev.type == MPROF_EV_ALLOC || ev.type == MPROF_EV_FREE) {
            uint32_t depth, cs = (uint32_t)ev.u[ev.type == MPROF_EV_ALLOC ? 3 : 2];
            if (!cs || !mprof_reader_callstack(r, cs, &depth))
                (*unresolved)++;
        } else if (ev.type == MPROF_EV_PLOT_I64 || ev.type == MPROF_EV_PLOT_F64) {
            const char *pn = mprof_reader_string(r, (uint32_t)ev.u[0]);
            if (!pn)
                (*unresolved)++;
            else if (ev.type == MPROF_EV_PLOT_I64 && strcmp(pn, "frame_index") == 0 &&
                     (int64_t)ev.u[1] < *min_frame_index)
                *min_frame_index = (int64_t)ev.u[1];
        }
    }
    assert_int_equal(rc, 0);
    *threads_named = 0;
    for (uint32_t i = 1; i < mprof_reader_thread_count(r); i++) {
        const mprof_thread_def *t = mprof_reader_thread(r, i);
        if (t && t->name && (!strcmp(t->name, "worker") || !strcmp(t->name, "main")))
            (*threads_named)++;
    }
    mprof_reader_close(r);
    return n;
}

/* END's "events" equals the events the file holds, as the reader counts them: the sender adds
 * up the counts the collector hands with each chunk, and any miscount shows here (a count too
 * low is no error to the reader, which reports only events missing). */
static void end_counts_what_the_file_holds(const char *path)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    mprof_event ev;
    uint64_t n = 0;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1)
        n += mprof_event_counted(ev.type);
    assert_int_equal(rc, 0);
    const char *v = mprof_reader_end_info(r, "events");
    assert_non_null(v);
    print_message("%s: END says %s events, the file holds %llu\n", path, v, (unsigned long long)n);
    assert_true(n > 0);
    assert_int_equal(strtoull(v, NULL, 10), n);
    mprof_reader_close(r);
}

/* A read of the process chunks alone stands for the file (docs/FORMAT.md "Process chunks"): the
 * sender's END counts the process chunks it delivered and gives their main frames as an
 * in-process END does, so the report's first read of a live capture takes those chunks alone,
 * and it sees the process records and main frames that a read of everything sees. */
static void process_chunks_stand_for_file(const char *path)
{
    tu_first_read all, part;
    mprof_reader *ra = tu_first_read_of(path, 0, &all);
    mprof_reader *rp = tu_first_read_of(path, 1, &part);
    mprof_main_frames mf;
    if (mprof_reader_end_info(rp, "end_written_by")) {
        /* The tool's own END (the process's did not come in time, as on a loaded machine)
         * counts no process chunks: the first read reads everything. */
        print_message("%s: END written by the tool\n", path);
        assert_int_equal(mprof_reader_main_frames(rp, &mf), 0);
        mprof_reader_close(ra);
        mprof_reader_close(rp);
        return;
    }
    assert_int_equal(mprof_reader_main_frames(rp, &mf), 1);
    assert_memory_equal(all.process, part.process, sizeof all.process);
    assert_true(all.marks > 0);
    assert_int_equal(mf.thread, all.main_thread);
    assert_int_equal(mf.marks, all.marks);
    assert_int_equal(mf.first_ns, all.first);
    assert_int_equal(mf.last_ns, all.last);
    mprof_reader_close(ra);
    mprof_reader_close(rp);
}

/* ---- tests --------------------------------------------------------------------------------- */

/* Both sinks at once: the in-process file and a live tool that asked for all the history, so
 * the live capture holds the whole run however late the tool connected. */
static void live_counts_equal_in_process(void **state)
{
    (void)state;
    const char *inproc = tmp("inproc.mprof");
    const char *live = tmp("live.mprof");
    const char *log = tmp("tool.log");
    game g;
    game_start(&g, "MPROF_HISTORY_SECONDS=600",
               (char *[]){"--frames", "150", "--capture", (char *)inproc, NULL});
    assert_int_equal(wait_for(g.ready, 0, 10000), 0);
    pid_t tool = tool_start(g.port, live, log, (char *[]){"--history", "600", "--wait", "10", NULL});
    assert_int_equal(wait_for(live, 400, 10000), 0); /* connected, the stream has begun */
    assert_int_equal(game_finish(&g), 0);
    assert_int_equal(wait_exit(tool, 10000), 0);
    tu_counts a, b;
    assert_int_equal(tu_count_capture(inproc, &a), 0);
    assert_int_equal(tu_count_capture(live, &b), 0);
    assert_true(a.st.complete);
    assert_true(b.st.complete);
    assert_true(a.by_type[MPROF_EV_FRAME_MARK] >= 150);
    assert_true(a.by_type[MPROF_EV_ZONE_BEGIN] > 600);
    assert_int_equal(b.by_type[MPROF_EV_ZONE_BEGIN], a.by_type[MPROF_EV_ZONE_BEGIN]);
    assert_int_equal(b.by_type[MPROF_EV_ZONE_END], a.by_type[MPROF_EV_ZONE_END]);
    assert_int_equal(b.by_type[MPROF_EV_FRAME_MARK], a.by_type[MPROF_EV_FRAME_MARK]);
    assert_int_equal(b.by_type[MPROF_EV_PLOT_I64], a.by_type[MPROF_EV_PLOT_I64]);
    assert_int_equal(b.by_type[MPROF_EV_PLOT_F64], a.by_type[MPROF_EV_PLOT_F64]);
    assert_int_equal(b.by_type[MPROF_EV_LOST], 0);
    assert_non_null(strstr(slurp(log), "0 events lost"));
    end_counts_what_the_file_holds(inproc);
    end_counts_what_the_file_holds(live);
    process_chunks_stand_for_file(inproc);
    process_chunks_stand_for_file(live);
    /* The tool and `mprof report` count events the same way (records the program made, not the
     * stream's definitions and thread switches). */
    const char *w = strstr(slurp(log), " s, ");
    assert_non_null(w);
    unsigned long long tool_events = strtoull(w + 4, NULL, 10);
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof cmd, "%s report --json %s | grep -A1 '\"events\"' | grep '\"total\"'",
             tu_mprof_bin(), live);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    const char *t = strstr(out, ":");
    assert_non_null(t);
    assert_true(tool_events > 0);
    assert_int_equal(strtoull(t + 1, NULL, 10), tool_events);
}

/* `mprof capture` started before the program (it waits for it, the usual workflow) holds
 * every zone, frame and plot from the program's first event, without --history: exactly what
 * the in-process capture of the same run holds. The process keeps its default history; the
 * order is made certain by starting the game only once the tool says it is waiting. */
static void tool_first_gets_everything_from_start(void **state)
{
    (void)state;
    const char *inproc = tmp("first-inproc.mprof");
    const char *live = tmp("first-live.mprof");
    const char *log = tmp("first-tool.log");
    unsigned port = free_port();
    pid_t tool = tool_start(port, live, log, (char *[]){"--wait", "30", NULL});
    for (int t = 0; t < 10000 && !strstr(slurp(log), "waiting for a process"); t += 10)
        sleep_ms(10);
    assert_non_null(strstr(slurp(log), "waiting for a process"));
    game g;
    game_start_on(&g, port, NULL,
                  (char *[]){"--frames", "150", "--frame-ms", "2", "--capture", (char *)inproc,
                             NULL});
    assert_int_equal(wait_for(g.ready, 0, 10000), 0);
    assert_int_equal(wait_for(live, 400, 10000), 0); /* connected, the stream has begun */
    assert_int_equal(game_finish(&g), 0);
    assert_int_equal(wait_exit(tool, 10000), 0);
    assert_non_null(strstr(slurp(log), "from the process's first event"));
    process_chunks_stand_for_file(live);
    tu_counts a, b;
    assert_int_equal(tu_count_capture(inproc, &a), 0);
    assert_int_equal(tu_count_capture(live, &b), 0);
    assert_true(b.st.complete);
    assert_true(a.by_type[MPROF_EV_FRAME_MARK] >= 150);
    assert_int_equal(b.by_type[MPROF_EV_ZONE_BEGIN], a.by_type[MPROF_EV_ZONE_BEGIN]);
    assert_int_equal(b.by_type[MPROF_EV_ZONE_END], a.by_type[MPROF_EV_ZONE_END]);
    assert_int_equal(b.by_type[MPROF_EV_FRAME_MARK], a.by_type[MPROF_EV_FRAME_MARK]);
    assert_int_equal(b.by_type[MPROF_EV_PLOT_I64], a.by_type[MPROF_EV_PLOT_I64]);
    assert_int_equal(b.by_type[MPROF_EV_PLOT_F64], a.by_type[MPROF_EV_PLOT_F64]);
    assert_int_equal(b.by_type[MPROF_EV_LOST], 0);
    int unresolved, named;
    int64_t min_idx;
    assert_int_equal(zone_count(live, "early_zone", &unresolved, &named, &min_idx), 20);
    assert_int_equal(unresolved, 0);
    assert_int_equal(min_idx, 0);
}

/* A tool that connects late gets every definition; with --history it also gets the frames from
 * before it connected, without it none of them. */
static void late_connection_and_history(void **state)
{
    (void)state;
    game g;
    game_start(&g, "MPROF_HISTORY_SECONDS=30",
               (char *[]){"--frames", "40", "--ready-after", "20", NULL});
    assert_int_equal(wait_for(g.ready, 0, 10000), 0);
    sleep_ms(100);
    const char *late = tmp("late.mprof"), *hist = tmp("hist.mprof");
    const char *log = tmp("tool.log");
    assert_int_equal(wait_exit(tool_start(g.port, late, log, (char *[]){"-s", "0.4", NULL}), 10000),
                     0);
    assert_int_equal(
        wait_exit(tool_start(g.port, hist, log, (char *[]){"-s", "0.4", "--history", "30", NULL}),
                  10000),
        0);
    assert_int_equal(game_finish(&g), 0);

    int unresolved, named;
    int64_t min_idx;
    /* Without history: no early frames, but every name the stream uses is defined. */
    assert_int_equal(zone_count(late, "early_zone", &unresolved, &named, &min_idx), 0);
    assert_int_equal(unresolved, 0);
    assert_int_equal(named, 2);
    assert_true(zone_count(late, "late_zone", &unresolved, &named, &min_idx) > 10);
    assert_true(min_idx >= 20);
    /* Callstacks and the module map were defined before the tool came; it has them. */
    tu_counts lc;
    assert_int_equal(tu_count_capture(late, &lc), 0);
    assert_true(lc.by_type[MPROF_EV_ALLOC] > 10);
    assert_true(lc.by_type[MPROF_EV_DEF_CALLSTACK] > 0);
    assert_true(lc.by_type[MPROF_EV_DEF_MODULE] > 0);
    /* With history: the 20 early frames, from frame 0, all resolved. */
    assert_int_equal(zone_count(hist, "early_zone", &unresolved, &named, &min_idx), 20);
    assert_int_equal(unresolved, 0);
    assert_int_equal(named, 2);
    assert_int_equal(min_idx, 0);
    tu_counts c;
    assert_int_equal(tu_count_capture(hist, &c), 0);
    assert_true(c.st.complete);
    /* The history was kept unframed (no file sink) and framed when asked for. */
    end_counts_what_the_file_holds(late);
    end_counts_what_the_file_holds(hist);
    process_chunks_stand_for_file(late);
    process_chunks_stand_for_file(hist);
}

/* The frame_index plot values of a capture: count, smallest, largest, and whether each value
 * between them is there exactly once. */
static int frame_indices_contiguous(const char *path, uint64_t *count, int64_t *lo, int64_t *hi)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    size_t n = 0, cap = 1024;
    int64_t *v = malloc(cap * sizeof *v);
    assert_non_null(v);
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        if (ev.type != MPROF_EV_PLOT_I64)
            continue;
        const char *pn = mprof_reader_string(r, (uint32_t)ev.u[0]);
        if (!pn || strcmp(pn, "frame_index") != 0)
            continue;
        if (n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
            assert_non_null(v);
        }
        v[n++] = (int64_t)ev.u[1];
    }
    assert_int_equal(rc, 0);
    mprof_reader_close(r);
    int ok = n > 0;
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[i - 1] + 1)
            ok = 0; /* one thread plots them in order: a gap or a repeat is a broken chunk */
    *count = n;
    *lo = n ? v[0] : -1;
    *hi = n ? v[n - 1] : -1;
    free(v);
    return ok;
}

/* The history ring once it is full: every chunk is kept in the memory of one the ring dropped
 * (live.c's raw spares). A ring of 0.2 s, overwritten for ~1.5 s by a game writing ~50 KiB a
 * frame, then a tool asks for its history: what it gets decodes, every name resolves and the
 * frames run on without a gap or a repeat from the oldest frame kept to the end. */
static void full_history_ring_reuses_its_memory(void **state)
{
    (void)state;
    game g;
    game_start(&g, "MPROF_HISTORY_SECONDS=0.2",
               (char *[]){"--frames", "0", "--frame-ms", "1", "--noise", "200", NULL});
    assert_int_equal(wait_for(g.ready, 0, 10000), 0);
    sleep_ms(1500);
    const char *out = tmp("ring.mprof"), *log = tmp("tool.log");
    assert_int_equal(
        wait_exit(tool_start(g.port, out, log, (char *[]){"-s", "0.3", "--history", "1", NULL}),
                  15000),
        0);
    assert_int_equal(game_finish(&g), 0);
    uint64_t n = 0;
    int64_t lo = 0, hi = 0;
    int contiguous = frame_indices_contiguous(out, &n, &lo, &hi);
    print_message("frames %lld..%lld (%llu)\n", (long long)lo, (long long)hi,
                  (unsigned long long)n);
    assert_true(contiguous);
    assert_true(lo > 20); /* the ring had dropped the first frames */
    assert_true(n > 20);
    int unresolved, named;
    int64_t min_idx;
    assert_true(zone_count(out, "noise", &unresolved, &named, &min_idx) > 0);
    assert_int_equal(unresolved, 0);
    tu_counts c;
    assert_int_equal(tu_count_capture(out, &c), 0);
    assert_true(c.st.complete);
    assert_int_equal(c.by_type[MPROF_EV_LOST], 0);
}

static void killed_tool_leaves_game_running_and_file_readable(void **state)
{
    (void)state;
    game g;
    game_start(&g, NULL, (char *[]){"--frames", "0", NULL});
    const char *out = tmp("killed-tool.mprof"), *log = tmp("tool.log");
    pid_t tool = tool_start(g.port, out, log, (char *[]){"--wait", "10", NULL});
    /* Header + INFO + the definitions chunk and some stream. */
    assert_int_equal(wait_for(out, 400, 10000), 0);
    sleep_ms(300);
    kill(tool, SIGKILL);
    waitpid(tool, NULL, 0);
    sleep_ms(300);
    assert_int_equal(waitpid(g.pid, NULL, WNOHANG), 0); /* the game is still running */
    tu_counts c;
    assert_int_equal(tu_count_capture(out, &c), 0);
    assert_true(c.by_type[MPROF_EV_ZONE_BEGIN] > 0);
    assert_false(c.st.complete);
    /* The next tool can connect (once the game has noticed the first one is gone: on a loaded
     * machine that can take a moment, and a tool that arrives earlier is told BUSY, exit 4). */
    const char *out2 = tmp("after.mprof");
    int rc = -1;
    for (int attempt = 0; attempt < 20 && rc != 0; attempt++) {
        rc = wait_exit(tool_start(g.port, out2, log, (char *[]){"-f", "-s", "0.3", NULL}), 10000);
        if (rc == 4)
            sleep_ms(250);
        else
            break;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(tu_count_capture(out2, &c), 0);
    assert_true(c.st.complete);
    assert_int_equal(game_finish(&g), 0);
    assert_non_null(strstr(slurp(g.out), "sessions_dropped=1"));
}

static void killed_game_leaves_file_readable(void **state)
{
    (void)state;
    game g;
    game_start(&g, NULL, (char *[]){"--frames", "0", NULL});
    const char *out = tmp("killed-game.mprof"), *log = tmp("tool.log");
    pid_t tool = tool_start(g.port, out, log, (char *[]){"--wait", "10", NULL});
    assert_int_equal(wait_for(out, 400, 10000), 0);
    sleep_ms(300);
    kill(g.pid, SIGKILL);
    waitpid(g.pid, NULL, 0);
    assert_int_equal(wait_exit(tool, 10000), 0);
    tu_counts c;
    assert_int_equal(tu_count_capture(out, &c), 0);
    assert_true(c.by_type[MPROF_EV_ZONE_BEGIN] > 0);
    assert_true(c.st.complete); /* the tool wrote its own END */
    assert_non_null(strstr(slurp(log), "closed the connection"));
    unlink(g.until);
    unlink(g.ready);
}

/* A tool that stops reading: the game does not block; chunks past the tool's -m are dropped,
 * counted (LOST records, END events_lost, the tool's exit status with --fail-on-lost) and the
 * definitions are re-sent, so everything delivered after the gap still resolves. */
static void slow_tool_drops_are_counted(void **state)
{
    (void)state;
    game g;
    const char *file = tmp("slow-inproc.mprof");
    game_start(&g, "MPROF_HISTORY_SECONDS=1",
               (char *[]){"--frames", "0", "--noise", "400", "--capture", (char *)file, NULL});
    const char *out = tmp("slow.mprof"), *log = tmp("tool.log");
    pid_t tool = tool_start(g.port, out, log,
                            (char *[]){"-m", "1", "--fail-on-lost", "--wait", "10", NULL});
    assert_int_equal(wait_for(out, 100000, 20000), 0);
    kill(tool, SIGSTOP);
    /* The in-process capture of the same run measures what the game produced meanwhile: more
     * than the loopback socket buffers and the 1 MiB queue can hold, whatever this machine's
     * speed (sanitizer builds are several times slower). */
    long base = file_size(file);
    assert_int_equal(wait_for(file, base + (24l << 20), 60000), 0);
    assert_int_equal(waitpid(g.pid, NULL, WNOHANG), 0); /* the game kept running */
    kill(tool, SIGCONT);
    sleep_ms(500);
    kill(tool, SIGINT);
    assert_int_equal(wait_exit(tool, 15000), 1); /* --fail-on-lost */
    assert_int_equal(game_finish(&g), 0);
    tu_counts c;
    assert_int_equal(tu_count_capture(out, &c), 0);
    assert_true(c.st.complete);
    assert_true(c.by_type[MPROF_EV_LOST] > 0);
    int unresolved, named;
    int64_t min_idx;
    assert_true(zone_count(out, "noise", &unresolved, &named, &min_idx) > 0);
    assert_int_equal(unresolved, 0);
    assert_non_null(strstr(slurp(log), "events were lost"));
    /* The game's own file lost nothing: only the slow tool's stream had gaps. */
    tu_counts f;
    assert_int_equal(tu_count_capture(file, &f), 0);
    assert_int_equal(f.by_type[MPROF_EV_LOST], 0);
}

/* The listener binds loopback only by default; a second process on the same port logs once and
 * runs on without listening. */
static void loopback_by_default_and_port_in_use(void **state)
{
    (void)state;
    game a, b;
    game_start(&a, NULL, (char *[]){"--frames", "0", NULL});
    assert_int_equal(wait_for(a.ready, 0, 10000), 0);
    /* /proc/net/tcp: local address 127.0.0.1 (0100007F) on our port, state LISTEN (0A). */
    char want[32], line[512];
    snprintf(want, sizeof want, "0100007F:%04X 00000000:0000 0A", a.port);
    int found = 0, any_addr = 0;
    char anyw[32];
    snprintf(anyw, sizeof anyw, "00000000:%04X 00000000:0000 0A", a.port);
    FILE *f = fopen("/proc/net/tcp", "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f)) {
        found |= strstr(line, want) != NULL;
        any_addr |= strstr(line, anyw) != NULL;
    }
    fclose(f);
    assert_true(found);
    assert_false(any_addr);
    /* Same port: b runs, says why it is not listening, once. */
    b = a;
    snprintf(b.out, sizeof b.out, "%s", tmp("game-b.out"));
    snprintf(b.until, sizeof b.until, "%s", tmp("until-b"));
    snprintf(b.ready, sizeof b.ready, "%s", tmp("ready-b"));
    char *argv[] = {(char *)game_bin(), "--frames", "30", "--ready", b.ready, NULL};
    b.pid = spawn(argv, a.port_env, NULL, b.out);
    assert_int_equal(wait_exit(b.pid, 20000), 0);
    const char *text = slurp(b.out);
    const char *first = strstr(text, "cannot listen");
    assert_non_null(first);
    assert_null(strstr(first + 1, "cannot listen"));
    /* a is still the one being captured. */
    const char *out = tmp("a.mprof"), *log = tmp("tool.log");
    assert_int_equal(wait_exit(tool_start(a.port, out, log, (char *[]){"-s", "0.2", NULL}), 10000), 0);
    assert_non_null(strstr(slurp(log), "pid"));
    assert_int_equal(game_finish(&a), 0);
}

static void existing_file_refused_without_f(void **state)
{
    (void)state;
    const char *out = tmp("exists.mprof"), *log = tmp("tool.log");
    FILE *f = fopen(out, "w");
    fputs("keep me", f);
    fclose(f);
    assert_int_equal(wait_exit(tool_start(free_port(), out, log, (char *[]){"--wait", "0", NULL}),
                               5000),
                     3);
    assert_string_equal(slurp(out), "keep me");
    assert_non_null(strstr(slurp(log), "use -f"));
    /* With -f and no process the file is not touched either (exit 4: nothing to capture). */
    assert_int_equal(
        wait_exit(tool_start(free_port(), out, log, (char *[]){"-f", "--wait", "0.2", NULL}), 5000),
        4);
    assert_string_equal(slurp(out), "keep me");
}

/* A client of another protocol version gets a clear refusal from the game. */
static void protocol_mismatch_refused_by_game(void **state)
{
    (void)state;
    game g;
    game_start(&g, NULL, (char *[]){"--frames", "0", NULL});
    int fd = -1;
    for (int i = 0; i < 500 && fd < 0; i++) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g.port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
            close(fd);
            fd = -1;
            sleep_ms(20);
        }
    }
    assert_true(fd >= 0);
    unsigned char h[MPROF_WIRE_HELLO_BYTES];
    mprof_wire_hello hello = {.version = 99};
    mprof_wire_encode_hello(h, &hello);
    assert_int_equal(send(fd, h, sizeof h, 0), (ssize_t)sizeof h);
    unsigned char buf[1024];
    size_t got = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + got, sizeof buf - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    mprof_wire_reply rep;
    size_t used;
    char err[128];
    assert_int_equal(mprof_wire_decode_reply(buf, got, &rep, &used, err, sizeof err),
                     MPROF_WIRE_DONE);
    assert_int_equal(rep.status, MPROF_WIRE_VERSION_MISMATCH);
    char msg[512];
    snprintf(msg, sizeof msg, "%.*s", (int)rep.payload_len, (const char *)rep.payload);
    assert_non_null(strstr(msg, "version"));

    /* Not an mprof tool at all: refused with BAD_HELLO, never garbage. */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g.port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(fd, http, sizeof http - 1, 0), (ssize_t)sizeof http - 1);
    got = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + got, sizeof buf - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    assert_int_equal(mprof_wire_decode_reply(buf, got, &rep, &used, err, sizeof err),
                     MPROF_WIRE_DONE);
    assert_int_equal(rep.status, MPROF_WIRE_BAD_HELLO);

    /* A peer that connects and says nothing does not keep a real tool out. */
    int silent = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(silent, (struct sockaddr *)&a, sizeof a), 0);
    const char *out = tmp("after-silent.mprof"), *log = tmp("tool.log");
    assert_int_equal(wait_exit(tool_start(g.port, out, log, (char *[]){"-s", "0.2", NULL}), 10000),
                     0);
    close(silent);
    assert_int_equal(game_finish(&g), 0);
}

/* Regression: tools that vanish right after the handshake, before a slow collector attached
 * their session, once made the collector read a freed session (and leak its history). The game
 * must keep serving: a real tool still captures, and the game exits cleanly (ASan/LSan builds
 * check the memory). */
static void tools_vanishing_before_attach(void **state)
{
    (void)state;
    game g;
    game_start(&g, "MPROF_HISTORY_SECONDS=2", (char *[]){"--frames", "0", "--flush-ms", "1000", NULL});
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g.port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int served = 0;
    for (int k = 0; k < 5; k++) {
        int fd = -1;
        for (int i = 0; i < 500 && fd < 0; i++) {
            fd = socket(AF_INET, SOCK_STREAM, 0);
            if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
                close(fd);
                fd = -1;
                sleep_ms(20);
            }
        }
        assert_true(fd >= 0);
        unsigned char h[MPROF_WIRE_HELLO_BYTES], rep[16];
        mprof_wire_hello hello = {.version = MPROF_WIRE_VERSION,
                                  .flags = MPROF_WIRE_F_HISTORY,
                                  .history_ms = 1000};
        mprof_wire_encode_hello(h, &hello);
        assert_int_equal(send(fd, h, sizeof h, 0), (ssize_t)sizeof h);
        served += recv(fd, rep, sizeof rep, MSG_WAITALL) == (ssize_t)sizeof rep;
        close(fd); /* gone before the collector's next drain (1 s) attaches the session */
        sleep_ms(400);
    }
    assert_int_equal(served, 5);
    const char *out = tmp("after-vanished.mprof"), *log = tmp("tool.log");
    assert_int_equal(wait_exit(tool_start(g.port, out, log, (char *[]){"-s", "2", NULL}), 15000),
                     0);
    int unresolved = 0, named = 0;
    int64_t min_idx = 0;
    assert_true(zone_count(out, "frame", &unresolved, &named, &min_idx) > 0);
    assert_int_equal(unresolved, 0);
    assert_int_equal(game_finish(&g), 0);
}

/* A process of another protocol version: the tool exits 5 with the process's message. */
static void *fake_process(void *arg)
{
    int lfd = *(int *)arg;
    int fd = accept(lfd, NULL, NULL);
    unsigned char h[MPROF_WIRE_HELLO_BYTES];
    size_t got = 0;
    while (got < sizeof h) {
        ssize_t n = recv(fd, h + got, sizeof h - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    unsigned char rep[16 + 9];
    memcpy(rep, MPROF_WIRE_MAGIC, 8);
    mprof_wr_u16(rep + 8, 7);
    mprof_wr_u16(rep + 10, MPROF_WIRE_VERSION_MISMATCH);
    mprof_wr_u32(rep + 12, 9);
    memcpy(rep + 16, "version 7", 9);
    send(fd, rep, sizeof rep, MSG_NOSIGNAL);
    close(fd);
    return NULL;
}

static void protocol_mismatch_tool_exit_code(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 1), 0);
    getsockname(lfd, (struct sockaddr *)&a, &l);
    pthread_t t;
    pthread_create(&t, NULL, fake_process, &lfd);
    const char *out = tmp("mismatch.mprof"), *log = tmp("tool.log");
    assert_int_equal(
        wait_exit(tool_start(ntohs(a.sin_port), out, log, (char *[]){"--wait", "5", NULL}), 10000),
        5);
    pthread_join(t, NULL);
    close(lfd);
    assert_non_null(strstr(slurp(log), "VERSION_MISMATCH"));
    assert_int_equal(file_size(out), -1); /* no file for a refused capture */
}

static void second_tool_refused_busy(void **state)
{
    (void)state;
    game g;
    game_start(&g, NULL, (char *[]){"--frames", "0", NULL});
    const char *out = tmp("first.mprof"), *out2 = tmp("second.mprof");
    const char *log = tmp("tool.log"), *log2 = tmp("tool2.log");
    pid_t first = tool_start(g.port, out, log, (char *[]){"--wait", "10", NULL});
    assert_int_equal(wait_for(out, 400, 10000), 0);
    assert_int_equal(wait_exit(tool_start(g.port, out2, log2, (char *[]){"--wait", "2", NULL}), 10000),
                     4);
    assert_non_null(strstr(slurp(log2), "BUSY"));
    /* Ctrl-C finalises the first capture with the process's END chunk. */
    kill(first, SIGINT);
    assert_int_equal(wait_exit(first, 10000), 0);
    tu_counts c;
    assert_int_equal(tu_count_capture(out, &c), 0);
    assert_true(c.st.complete);
    assert_int_equal(game_finish(&g), 0);
}

/* min_frame: the capture must start at or after this frame (the trigger's frame), -1 = any. */
static void automation(const char *kind, const char *tool, const char *expect, int64_t min_frame)
{
    game g;
    const char *out = tmp("auto/dir/capture.mprof");
    game_start(&g, NULL,
               (char *[]){"--frames", "40", "--automation", (char *)kind, "--tool", (char *)tool,
                          "--auto-out", (char *)out, NULL});
    assert_int_equal(game_finish(&g), 0);
    const char *text = slurp(g.out);
    if (!strstr(text, expect))
        fprintf(stderr, "game output:\n%s\n", text);
    assert_non_null(strstr(text, expect));
    if (strcmp(expect, "automation: saved") == 0) {
        tu_counts c;
        assert_int_equal(tu_count_capture(out, &c), 0);
        assert_true(c.st.complete);
        assert_true(c.by_type[MPROF_EV_FRAME_MARK] > 0);
        int unresolved = 0, named = 0;
        int64_t first = 0;
        zone_count(out, "frame", &unresolved, &named, &first);
        assert_true(first >= min_frame);
    }
}

static void automation_manual_saved(void **state)
{
    (void)state;
    automation("manual", tu_mprof_bin(), "automation: saved", -1);
}

static void automation_frame_saved(void **state)
{
    (void)state;
    automation("frame", tu_mprof_bin(), "automation: saved", 10); /* trigger: frame 10 */
}

static void automation_named_saved(void **state)
{
    (void)state;
    automation("named", tu_mprof_bin(), "automation: saved", 15); /* "hitch" fired at 15 */
}

static void automation_missing_tool_failed(void **state)
{
    (void)state;
    automation("manual", "/nonexistent/mprof", "automation: failed: capture tool not found", -1);
}

/* A tool that fails, and one that "succeeds" without writing anything: FAILED with the reason. */
static void automation_tool_exit_code_and_no_file_failed(void **state)
{
    (void)state;
    automation("manual", "/bin/false", "automation: failed: the capture tool exited with code 1", -1);
    automation("frame", "/bin/true", "automation: failed: the capture tool exited 0 but wrote no file", -1);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(live_counts_equal_in_process, cleanup),
        cmocka_unit_test_teardown(late_connection_and_history, cleanup),
        cmocka_unit_test_teardown(full_history_ring_reuses_its_memory, cleanup),
        cmocka_unit_test_teardown(tool_first_gets_everything_from_start, cleanup),
        cmocka_unit_test_teardown(killed_tool_leaves_game_running_and_file_readable, cleanup),
        cmocka_unit_test_teardown(killed_game_leaves_file_readable, cleanup),
        cmocka_unit_test_teardown(slow_tool_drops_are_counted, cleanup),
        cmocka_unit_test_teardown(loopback_by_default_and_port_in_use, cleanup),
        cmocka_unit_test_teardown(existing_file_refused_without_f, cleanup),
        cmocka_unit_test_teardown(protocol_mismatch_refused_by_game, cleanup),
        cmocka_unit_test_teardown(protocol_mismatch_tool_exit_code, cleanup),
        cmocka_unit_test_teardown(second_tool_refused_busy, cleanup),
        cmocka_unit_test_teardown(tools_vanishing_before_attach, cleanup),
        cmocka_unit_test_teardown(automation_manual_saved, cleanup),
        cmocka_unit_test_teardown(automation_frame_saved, cleanup),
        cmocka_unit_test_teardown(automation_named_saved, cleanup),
        cmocka_unit_test_teardown(automation_missing_tool_failed, cleanup),
        cmocka_unit_test_teardown(automation_tool_exit_code_and_no_file_failed, cleanup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
