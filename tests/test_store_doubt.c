/*
 * test_store_doubt.c - a run stored exactly once when its commit is in doubt: the real
 * `mprof store add` writes a CI report to a real PostgreSQL server through a proxy that breaks
 * the write at its commit, in each of the ways a killed server or a cut connection can: the
 * answer to a COMMIT that took effect is lost; the COMMIT never reaches the server; the server is
 * killed at the COMMIT and comes back; the server is killed and stays away past the writer's
 * patience. Each time the run is in the store once (or the writer says it may be, and adding the
 * same report again makes it once), and the writer's message says which.
 *
 * The server is a cluster of this test's own (tests/pg_cluster.sh, path in MPROF_PG_CLUSTER), since
 * killing it would break the other store tests' shared one.
 */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static char state_path[512], socketdir[80], proxydir[80];
static char cluster_sh[1024];
static char out[1 << 16];

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Runs pg_cluster.sh; its output goes to its own buffer (the proxy's thread kills and restarts
 * the server while the main thread reads the writer's output). */
static int cluster(const char *what)
{
    char cmd[2048], said[4096];
    snprintf(cmd, sizeof cmd, "sh '%s' %s '%s' 2>&1", cluster_sh, what, state_path);
    int rc = tu_run(cmd, said, sizeof said);
    if (rc != 0)
        fprintf(stderr, "pg_cluster.sh %s: exit %d: %s", what, rc, said);
    return rc;
}

/* ---- the proxy ----------------------------------------------------------------------------- */

enum { CUT_NONE = 0, CUT_AFTER_COMMIT, CUT_BEFORE_COMMIT, KILL_AT_COMMIT, KILL_AND_STAY_DOWN };

static atomic_int mode;
static atomic_int fired; /* the mode's break happened */
static int listen_fd = -1;

/* Frames a stream of PostgreSQL protocol messages: the client's first message has no type byte. */
typedef struct framer {
    unsigned char buf[1 << 20];
    size_t len;
    int untyped_first;
} framer;

/* The next whole message in f (its type, body and body length); 0 when none is whole yet. A
 * message too long for the buffer is skipped over as it goes by (only short ones matter). */
static int next_message(framer *f, char *type, const unsigned char **body, size_t *blen, size_t *whole)
{
    size_t hdr = f->untyped_first ? 4 : 5;
    if (f->len < hdr)
        return 0;
    const unsigned char *p = f->buf + (f->untyped_first ? 0 : 1);
    size_t l = ((size_t)p[0] << 24) | ((size_t)p[1] << 16) | ((size_t)p[2] << 8) | p[3];
    size_t total = (f->untyped_first ? 0 : 1) + l;
    if (total > sizeof f->buf || f->len < total)
        return 0;
    *type = f->untyped_first ? 0 : (char)f->buf[0];
    *body = f->buf + hdr;
    *blen = total - hdr;
    *whole = total;
    return 1;
}

static void consume(framer *f, size_t n)
{
    memmove(f->buf, f->buf + n, f->len - n);
    f->len -= n;
    f->untyped_first = 0;
}

static int send_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *restart_later(void *arg)
{
    (void)arg;
    sleep_ms(2000);
    cluster("restart");
    return NULL;
}

/* One client connection: passes whole messages both ways; breaks the run's COMMIT (the first
 * COMMIT after an INSERT INTO mprof_runs) as the mode says, once. */
static void *conn_main(void *arg)
{
    int c = (int)(intptr_t)arg;
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%.79s/.s.PGSQL.5432", socketdir);
    if (u < 0 || connect(u, (struct sockaddr *)&a, sizeof a) != 0) {
        if (u >= 0)
            close(u);
        close(c);
        return NULL;
    }
    framer *fc = malloc(sizeof *fc), *fs = malloc(sizeof *fs);
    if (!fc || !fs) {
        free(fc);
        free(fs);
        close(u);
        close(c);
        return NULL;
    }
    fc->len = fs->len = 0;
    fc->untyped_first = 1;
    fs->untyped_first = 0;
    int saw_insert = 0, commit_sent = 0, hold_server = 0;
    for (;;) {
        struct pollfd pf[2] = {{.fd = c, .events = POLLIN}, {.fd = u, .events = POLLIN}};
        if (poll(pf, 2, 1000) < 0 && errno != EINTR)
            break;
        if (pf[0].revents) {
            ssize_t n = recv(c, fc->buf + fc->len, sizeof fc->buf - fc->len, 0);
            if (n <= 0)
                break;
            fc->len += (size_t)n;
            char t;
            const unsigned char *body;
            size_t bl, whole;
            int cut = 0;
            while (!cut && next_message(fc, &t, &body, &bl, &whole)) {
                if (t == 'P' && bl > 1) {
                    const char *q = (const char *)body + strnlen((const char *)body, bl) + 1;
                    size_t ql = (size_t)((const char *)body + bl - q);
                    if (strnlen(q, ql) >= 23 && strncmp(q, "INSERT INTO mprof_runs ", 23) == 0)
                        saw_insert = 1;
                    if (saw_insert && !atomic_load(&fired) && ql >= 6 && strncmp(q, "COMMIT", 6) == 0 &&
                        atomic_load(&mode) != CUT_NONE) {
                        commit_sent = 1;
                        if (atomic_load(&mode) == CUT_BEFORE_COMMIT) {
                            atomic_store(&fired, 1);
                            cut = 1;
                            break;
                        }
                    }
                }
                if (send_all(u, fc->buf, whole) != 0) {
                    cut = 1;
                    break;
                }
                consume(fc, whole);
                if (commit_sent && t == 'S' && !atomic_load(&fired)) {
                    /* The COMMIT is on its way to the server. */
                    int m = atomic_load(&mode);
                    if (m == KILL_AT_COMMIT || m == KILL_AND_STAY_DOWN) {
                        atomic_store(&fired, 1);
                        cluster("kill");
                        if (m == KILL_AT_COMMIT) {
                            pthread_t th;
                            pthread_create(&th, NULL, restart_later, NULL);
                            pthread_detach(th);
                        }
                        cut = 1;
                    } else if (m == CUT_AFTER_COMMIT) {
                        hold_server = 1; /* the server's answer is read, never passed on */
                    }
                }
            }
            if (cut)
                break;
        }
        if (pf[1].revents) {
            ssize_t n = recv(u, fs->buf + fs->len, sizeof fs->buf - fs->len, 0);
            if (n <= 0)
                break;
            fs->len += (size_t)n;
            char t;
            const unsigned char *body;
            size_t bl, whole;
            int cut = 0;
            while (next_message(fs, &t, &body, &bl, &whole)) {
                if (hold_server) {
                    consume(fs, whole);
                    if (t == 'Z') { /* ReadyForQuery: the COMMIT is done, its answer lost */
                        atomic_store(&fired, 1);
                        cut = 1;
                        break;
                    }
                    continue;
                }
                if (send_all(c, fs->buf, whole) != 0) {
                    cut = 1;
                    break;
                }
                consume(fs, whole);
            }
            if (cut)
                break;
        }
    }
    free(fc);
    free(fs);
    close(u);
    close(c);
    return NULL;
}

static void *accept_main(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(listen_fd, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        pthread_t th;
        if (pthread_create(&th, NULL, conn_main, (void *)(intptr_t)c) != 0)
            close(c);
        else
            pthread_detach(th);
    }
}

/* ---- fixture ------------------------------------------------------------------------------- */

static pthread_t acceptor;

static int setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    const char *sh = getenv("MPROF_PG_CLUSTER");
    if (!sh)
        return -1;
    snprintf(cluster_sh, sizeof cluster_sh, "%s", sh);
    snprintf(state_path, sizeof state_path, "%s", tu_temp_path("pgdoubt.state"));
    if (cluster("start") != 0)
        return -1;
    FILE *f = fopen(state_path, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "socketdir=", 10) == 0)
            snprintf(socketdir, sizeof socketdir, "%.79s", line + 10);
    }
    if (f)
        fclose(f);
    /* A short path: a unix socket's name holds 107 bytes. */
    snprintf(proxydir, sizeof proxydir, "/tmp/mprof-pgproxy-%ld", (long)getpid());
    mkdir(proxydir, 0755);
    listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%.79s/.s.PGSQL.5433", proxydir);
    if (!socketdir[0] || bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(listen_fd, 64) != 0)
        return -1;
    return pthread_create(&acceptor, NULL, accept_main, NULL) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cluster("stop");
    return 0;
}

/* A fresh database; the URL through the proxy in url. */
static void fresh_db(const char *name, char *url, size_t n)
{
    char admin[1100], sql[128];
    snprintf(admin, sizeof admin, "postgresql:///postgres?host=%s&port=5432&user=mprof", socketdir);
    PGconn *c = PQconnectdb(admin);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    PGresult *r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(c);
    snprintf(url, n, "postgresql:///%s?host=%s&port=5433&user=mprof", name, proxydir);
}

/* The number of stored runs (straight to the server, not through the proxy). */
static long count_runs(const char *db)
{
    char u[1100];
    snprintf(u, sizeof u, "postgresql:///%s?host=%s&port=5432&user=mprof", db, socketdir);
    PGconn *c = NULL;
    for (int i = 0; i < 100; i++) { /* the server may be coming back */
        c = PQconnectdb(u);
        if (PQstatus(c) == CONNECTION_OK)
            break;
        PQfinish(c);
        c = NULL;
        sleep_ms(200);
    }
    assert_non_null(c);
    PGresult *r = PQexec(c, "SELECT COUNT(*) FROM mprof_runs");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    long v = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return v;
}

/* A CI report with its runUid and one frame export, as `mprof ci` writes them. */
static const char *make_report(void)
{
    static char report[512];
    if (report[0])
        return report;
    char frames[512];
    snprintf(frames, sizeof frames, "%s", tu_temp_path("frames.json"));
    FILE *f = fopen(frames, "w");
    assert_non_null(f);
    fprintf(f, "{\"schema\": \"mprof.frames.v1\", \"frameCount\": 200, \"frameTimesMs\": [");
    for (int i = 0; i < 200; i++)
        fprintf(f, "%s%.3f", i ? "," : "", 16.0 + (i % 7) * 0.1);
    fprintf(f, "], \"zones\": []}\n");
    fclose(f);
    snprintf(report, sizeof report, "%s", tu_temp_path("ci-report.json"));
    f = fopen(report, "w");
    assert_non_null(f);
    fprintf(f, "{\"schema\": \"mprof.ciReport.v1\", \"verdict\": \"pass\", \"exitCode\": 0, "
               "\"runUid\": \"5f1e0c3a9b7d4e2f8a6c1b0d9e8f7a6b\", \"runs\": [{\"side\": \"current\", "
               "\"run\": 1, \"frameExport\": \"%s\"}]}\n",
            frames);
    fclose(f);
    return report;
}

static int store_add(const char *url)
{
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "%s store add '%s' --store '%s' 2>&1", tu_mprof_bin(), make_report(), url);
    return tu_run(cmd, out, sizeof out);
}

static void arm(int m)
{
    atomic_store(&fired, 0);
    atomic_store(&mode, m);
}

/* The server committed but its answer was lost (the writer used to say "the run was not stored",
 * and a retry stored it twice): the writer finds it stored, once. */
static void test_answer_lost_after_commit(void **state)
{
    (void)state;
    char url[1200];
    fresh_db("doubt_after", url, sizeof url);
    arm(CUT_AFTER_COMMIT);
    int rc = store_add(url);
    print_message("answer lost: exit %d: %s", rc, out);
    assert_true(atomic_load(&fired));
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "found stored on a new connection, once"));
    assert_int_equal(count_runs("doubt_after"), 1);
    /* The same report again: stored before, not again. */
    arm(CUT_NONE);
    assert_int_equal(store_add(url), 0);
    assert_non_null(strstr(out, "not stored again"));
    assert_int_equal(count_runs("doubt_after"), 1);
}

/* The COMMIT never reached the server: the run is written again on a new connection, once. */
static void test_cut_before_commit(void **state)
{
    (void)state;
    char url[1200];
    fresh_db("doubt_before", url, sizeof url);
    arm(CUT_BEFORE_COMMIT);
    int rc = store_add(url);
    print_message("cut before the commit: exit %d: %s", rc, out);
    assert_true(atomic_load(&fired));
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "stored on a new connection"));
    assert_int_equal(count_runs("doubt_before"), 1);
}

/* The server is killed as the COMMIT reaches it and comes back 2 s later: whether the commit took
 * effect or not, the run is stored once, and the message says which. */
static void test_server_killed_at_commit(void **state)
{
    (void)state;
    char url[1200];
    fresh_db("doubt_killed", url, sizeof url);
    arm(KILL_AT_COMMIT);
    int rc = store_add(url);
    print_message("server killed at the commit: exit %d: %s", rc, out);
    assert_true(atomic_load(&fired));
    assert_int_equal(rc, 0);
    assert_true(strstr(out, "found stored on a new connection, once") ||
                strstr(out, "the run was stored on a new connection"));
    assert_int_equal(count_runs("doubt_killed"), 1);
}

/* The server is killed at the COMMIT and stays away past the writer's 20 s: it says the run may
 * or may not be stored and names it; once the server is back, adding the same report again
 * leaves exactly one run. */
static void test_server_gone_at_commit(void **state)
{
    (void)state;
    char url[1200];
    fresh_db("doubt_gone", url, sizeof url);
    arm(KILL_AND_STAY_DOWN);
    int rc = store_add(url);
    print_message("server gone at the commit: exit %d: %s", rc, out);
    assert_true(atomic_load(&fired));
    assert_int_equal(rc, 4);
    assert_non_null(strstr(out, "may or may not be stored"));
    assert_non_null(strstr(out, "5f1e0c3a9b7d4e2f8a6c1b0d9e8f7a6b"));
    assert_int_equal(cluster("restart"), 0);
    arm(CUT_NONE);
    assert_int_equal(store_add(url), 0);
    assert_int_equal(count_runs("doubt_gone"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answer_lost_after_commit),
        cmocka_unit_test(test_cut_before_commit),
        cmocka_unit_test(test_server_killed_at_commit),
        cmocka_unit_test(test_server_gone_at_commit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
