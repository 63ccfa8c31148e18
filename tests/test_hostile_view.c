/*
 * test_hostile_view.c - the served viewer (`mprof view --serve`, the real binary) against hostile
 * local clients: a query whose range overflows, a slowloris of 130 connections beside real
 * requests, and a thousand requests at once, with and without the server full (docs/VIEW.md,
 * "Limits of the served viewer").
 *
 * Outcomes are counted: every real request is answered (200, or 503 with Retry-After when the
 * server is full), never dropped without a word, and every slow connection is ended. Deadlines
 * are several times the server's own (10 s for a request's header), so a loaded machine passes.
 */
#define _POSIX_C_SOURCE 200809L
#include "view/query.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char cap[512];
static char out[1 << 16];

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int setup(void **state)
{
    (void)state;
    /* A thousand client sockets and the slow ones: the soft limit up to the hard one. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096) {
        rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    snprintf(cap, sizeof cap, "%s", tu_temp_path("hostile.mprof"));
    const char *demo = getenv("MPROF_VIEW_DEMO");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s %s 200 40 2>&1", demo ? demo : "tests/view_demo", cap);
    return tu_run(cmd, out, sizeof out) == 0 ? 0 : -1;
}

/* ---- the server and its clients ------------------------------------------------------------ */

typedef struct server {
    pid_t pid;
    int port;
    FILE *out;
    char err_path[512];
} server;

/* Starts mprof view --serve on the capture with extra arguments (NULL-terminated). */
static void server_start(server *s, const char *extra)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    snprintf(s->err_path, sizeof s->err_path, "%s", tu_temp_path("serve.err"));
    const char *bin = tu_mprof_bin();
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        dup2(fds[1], 1);
        int e = open(s->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (e >= 0)
            dup2(e, 2);
        close(fds[0]);
        if (extra)
            execl(bin, bin, "view", "--serve", cap, "--port", "0", "--max-connections", extra, (char *)NULL);
        else
            execl(bin, bin, "view", "--serve", cap, "--port", "0", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    s->out = fdopen(fds[0], "r");
    char line[256] = "";
    assert_non_null(fgets(line, sizeof line, s->out));
    assert_int_equal(sscanf(line, "http://127.0.0.1:%d/", &s->port), 1);
}

/* Stops it; returns what it said on stderr (the counts of connections it ended or refused). */
static const char *server_stop(server *s)
{
    kill(s->pid, SIGTERM);
    int st;
    assert_int_equal(waitpid(s->pid, &st, 0), s->pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    fclose(s->out);
    FILE *f = fopen(s->err_path, "r");
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = 0;
    if (f)
        fclose(f);
    return out;
}

static int connect_to(int port, int nonblock)
{
    int fd = socket(AF_INET, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One request on a fresh connection, its whole answer read within timeout_ms. The status, 0
 * when the connection ended without an HTTP answer, -1 when it did not end in time. *len gets
 * the answer's size (headers included). */
static int request(int port, const char *target, int timeout_ms, char *resp, size_t n, size_t *len)
{
    int fd = connect_to(port, 0);
    if (fd < 0)
        return 0;
    char req[1024];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target);
    if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
        close(fd);
        return 0;
    }
    double until = mono_s() + timeout_ms / 1000.0;
    size_t got = 0, total = 0;
    int ended = 0;
    while (mono_s() < until) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 100) != 1)
            continue;
        char tmp[65536];
        ssize_t k = recv(fd, tmp, sizeof tmp, 0);
        if (k <= 0) {
            ended = 1;
            break;
        }
        if (got + 1 < n) {
            size_t c = (size_t)k < n - 1 - got ? (size_t)k : n - 1 - got;
            memcpy(resp + got, tmp, c);
            got += c;
        }
        total += (size_t)k;
    }
    close(fd);
    resp[got] = 0;
    if (len)
        *len = total;
    if (!ended)
        return -1;
    int code = 0;
    return sscanf(resp, "HTTP/1.%*d %d", &code) == 1 ? code : 0;
}

/* Connections that send a request line and then one header line a second, never ending the
 * header: each is done when the server answers (408) or ends it. */
typedef struct slow_set {
    int n, port;
    int fd[256];
    atomic_int ended[256]; /* the server answered (408) or ended it */
    atomic_int got_408;
    atomic_int stop;
    pthread_t th;
} slow_set;

static void *slow_main(void *arg)
{
    slow_set *s = arg;
    for (int k = 0; !atomic_load(&s->stop); k++) {
        int left = 0;
        for (int i = 0; i < s->n; i++) {
            if (atomic_load(&s->ended[i]))
                continue;
            char buf[256];
            ssize_t r = recv(s->fd[i], buf, sizeof buf - 1, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || r > 0) {
                if (r > 0) {
                    buf[r] = 0;
                    if (strncmp(buf, "HTTP/1.1 408", 12) == 0)
                        atomic_fetch_add(&s->got_408, 1);
                }
                atomic_store(&s->ended[i], 1);
                continue;
            }
            char line[64];
            int l = snprintf(line, sizeof line, "X-Slow-%d: %d\r\n", k, i);
            send(s->fd[i], line, (size_t)l, MSG_NOSIGNAL | MSG_DONTWAIT);
            left++;
        }
        if (!left)
            break;
        for (int t = 0; t < 10 && !atomic_load(&s->stop); t++)
            sleep_ms(100);
    }
    return NULL;
}

static void slow_start(slow_set *s, int port, int n)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->port = port;
    for (int i = 0; i < n; i++) {
        s->fd[i] = connect_to(port, 0);
        assert_true(s->fd[i] >= 0);
        const char *rl = "GET /api/meta HTTP/1.1\r\n";
        assert_int_equal(send(s->fd[i], rl, strlen(rl), MSG_NOSIGNAL), (ssize_t)strlen(rl));
    }
    assert_int_equal(pthread_create(&s->th, NULL, slow_main, s), 0);
}

/* Waits up to timeout_s for every slow connection to be ended; returns how many were. */
static int slow_wait_ended(slow_set *s, double timeout_s)
{
    double until = mono_s() + timeout_s;
    int ended = 0;
    while (mono_s() < until) {
        ended = 0;
        for (int i = 0; i < s->n; i++)
            ended += atomic_load(&s->ended[i]) != 0;
        if (ended == s->n)
            break;
        sleep_ms(200);
    }
    return ended;
}

static void slow_stop(slow_set *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    for (int i = 0; i < s->n; i++)
        close(s->fd[i]);
}

/* n requests at once, each on its own connection, every answer read (within timeout_s), counted
 * by status: 200, 503 (and how many of those carried Retry-After), another, none at all. */
typedef struct burst {
    int ok, full, full_retry_after, other, none;
} burst;

static burst request_burst(int port, int n, const char *target, double timeout_s)
{
    burst b = {0};
    int *fd = calloc((size_t)n, sizeof *fd);
    int *sent = calloc((size_t)n, sizeof *sent);
    char **resp = calloc((size_t)n, sizeof *resp);
    size_t *got = calloc((size_t)n, sizeof *got);
    struct pollfd *pf = calloc((size_t)n, sizeof *pf);
    assert_true(fd && sent && resp && got && pf);
    for (int i = 0; i < n; i++) {
        fd[i] = connect_to(port, 1);
        resp[i] = calloc(1, 512);
        assert_non_null(resp[i]);
    }
    char req[512];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target);
    double until = mono_s() + timeout_s;
    int open_n = n;
    for (int i = 0; i < n; i++)
        if (fd[i] < 0) {
            open_n--;
            got[i] = 0;
        }
    while (open_n > 0 && mono_s() < until) {
        int np = 0;
        for (int i = 0; i < n; i++)
            if (fd[i] >= 0)
                pf[np++] = (struct pollfd){.fd = fd[i], .events = sent[i] ? POLLIN : POLLOUT};
        if (poll(pf, (nfds_t)np, 100) <= 0)
            continue;
        for (int k = 0, i = 0; k < np; k++) {
            while (fd[i] != pf[k].fd)
                i++;
            if (!pf[k].revents)
                continue;
            if (!sent[i]) {
                if (send(fd[i], req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req))
                    sent[i] = 1;
                else {
                    close(fd[i]);
                    fd[i] = -1;
                    open_n--;
                }
                continue;
            }
            char tmp[65536];
            ssize_t r = recv(fd[i], tmp, sizeof tmp, 0);
            if (r > 0) {
                size_t c = got[i] + (size_t)r < 511 ? (size_t)r : 511 - got[i];
                memcpy(resp[i] + got[i], tmp, c);
                got[i] += c;
                continue;
            }
            close(fd[i]);
            fd[i] = -1;
            open_n--;
        }
    }
    for (int i = 0; i < n; i++) {
        if (fd[i] >= 0)
            close(fd[i]);
        int code = 0;
        if (sscanf(resp[i], "HTTP/1.%*d %d", &code) != 1)
            b.none++;
        else if (code == 200)
            b.ok++;
        else if (code == 503) {
            b.full++;
            b.full_retry_after += strstr(resp[i], "Retry-After: 1") != NULL;
        } else
            b.other++;
        free(resp[i]);
    }
    free(fd);
    free(sent);
    free(resp);
    free(got);
    free(pf);
    return b;
}

/* ---- the tests ----------------------------------------------------------------------------- */

/* A range whose length does not fit in int64 was taken as the whole capture at one nanosecond a
 * pixel (30.7 MB for a 1 M-zone capture): now it is refused, and the longest range allowed comes
 * back with its width in pixels bounding the answer. */
static void test_range_overflow(void **state)
{
    (void)state;
    static const char *const probe = "/api/zones?t0=-4611686018427387904&t1=4611686018427387904&w=1";
    mprof_vquery q;
    char err[256];
    assert_int_equal(mprof__vquery_parse(probe, strlen(probe), &q, err, sizeof err), -1);
    assert_non_null(strstr(err, "t1 - t0"));
    static const char *const widest = "/api/zones?t0=-2305843009213693952&t1=2305843009213693952&w=1";
    assert_int_equal(mprof__vquery_parse(widest, strlen(widest), &q, err, sizeof err), 0);
    assert_true(mprof__vq_px_ns(&q) == MPROF_VQ_MAX_SPAN_NS);
    q.t0 = INT64_MIN;
    q.t1 = INT64_MAX;
    q.w = 3;
    assert_true(mprof__vq_px_ns(&q) == INT64_MAX / 3);
    assert_true(mprof__vq_add(INT64_MAX - 1, 5) == INT64_MAX);
    assert_true(mprof__vq_add(INT64_MIN + 1, -5) == INT64_MIN);
    assert_true(mprof__vq_len(INT64_MIN, INT64_MAX) == INT64_MAX);

    server s;
    server_start(&s, NULL);
    static char resp[1 << 20];
    size_t len = 0;
    assert_int_equal(request(s.port, probe, 30000, resp, sizeof resp, &len), 400);
    assert_non_null(strstr(resp, "t1 - t0"));
    /* The widest range, one pixel wide: a few items per level, whatever the capture holds. */
    static const char *const targets[] = {
        "/api/zones?t0=-2305843009213693952&t1=2305843009213693952&w=1",
        "/api/plots?t0=-2305843009213693952&t1=2305843009213693952&w=1",
        "/api/states?t0=-2305843009213693952&t1=2305843009213693952&w=1",
        "/api/cpu?t0=-2305843009213693952&t1=2305843009213693952&w=1",
    };
    size_t full = 0;
    assert_int_equal(request(s.port, "/api/zones?t0=0&t1=100000000000&w=16384", 30000, resp, sizeof resp, &full), 200);
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        assert_int_equal(request(s.port, targets[i], 30000, resp, sizeof resp, &len), 200);
        print_message("%s: %zu bytes (the capture at 16384 pixels: %zu)\n", targets[i], len, full);
        assert_true(len < 16384);
    }
    assert_int_equal(request(s.port, targets[0], 30000, resp, sizeof resp, &len), 200);
    cJSON *j = cJSON_Parse(strstr(resp, "\r\n\r\n") + 4);
    assert_non_null(j);
    cJSON *lv;
    int levels = 0;
    cJSON_ArrayForEach(lv, cJSON_GetObjectItem(j, "levels"))
    {
        /* One pixel: at most the zones and spans that cross it. */
        assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(lv, "z")) / 4 + cJSON_GetArraySize(cJSON_GetObjectItem(lv, "m")) / 3 <= 4);
        levels++;
    }
    assert_true(levels > 0);
    cJSON_Delete(j);
    server_stop(&s);
}

/* 130 connections that send a header line now and then (each line used to reset the 30 s
 * timeout, and they held the server's 64 connections: 0 of 15 real requests were served in
 * 75 s). Now the 15 real requests are answered beside them, and each slow connection is ended
 * when its 10 s to send a whole header run out, told 408. */
static void test_slowloris(void **state)
{
    (void)state;
    server s;
    server_start(&s, NULL);
    slow_set slow;
    slow_start(&slow, s.port, 130);
    sleep_ms(500);
    static char resp[1 << 20];
    int served = 0;
    for (int i = 0; i < 15; i++) {
        served += request(s.port, "/api/meta", 20000, resp, sizeof resp, NULL) == 200;
        sleep_ms(200);
    }
    int ended = slow_wait_ended(&slow, 60);
    slow_stop(&slow);
    const char *said = server_stop(&s);
    print_message("slowloris: %d of 15 real requests served; %d of 130 slow connections ended (%d told 408)\n%s",
                  served, ended, atomic_load(&slow.got_408), said);
    assert_int_equal(served, 15);
    assert_int_equal(ended, 130);
    assert_true(atomic_load(&slow.got_408) > 0);
    assert_non_null(strstr(said, "ended with 408"));
}

/* A thousand requests at once: every one is answered (64 were, and 936 closed without a word). */
static void test_thousand_at_once(void **state)
{
    (void)state;
    server s;
    server_start(&s, NULL);
    burst b = request_burst(s.port, 1000, "/api/meta", 120);
    server_stop(&s);
    print_message("1000 at once: %d answered 200, %d 503, %d other, %d without an answer\n", b.ok, b.full,
                  b.other, b.none);
    assert_int_equal(b.none, 0);
    assert_int_equal(b.other, 0);
    assert_int_equal(b.ok + b.full, 1000);
}

/* A full server says so: with 80 slow connections held and 50 served at once, a thousand real
 * requests are each answered, 503 with Retry-After while it is full; once the slow ones are
 * ended, real requests are served again. */
static void test_full_server_says_503(void **state)
{
    (void)state;
    server s;
    server_start(&s, "50");
    slow_set slow;
    slow_start(&slow, s.port, 80);
    sleep_ms(500);
    burst b = request_burst(s.port, 1000, "/api/meta", 120);
    int ended = slow_wait_ended(&slow, 60);
    slow_stop(&slow);
    static char resp[1 << 20];
    int after = request(s.port, "/api/meta", 20000, resp, sizeof resp, NULL);
    const char *said = server_stop(&s);
    print_message("full: %d answered 200, %d 503 (%d with Retry-After), %d other, %d without an answer; "
                  "%d of 80 slow ended; then %d\n%s",
                  b.ok, b.full, b.full_retry_after, b.other, b.none, ended, after, said);
    assert_int_equal(b.none, 0);
    assert_int_equal(b.other, 0);
    assert_int_equal(b.ok + b.full, 1000);
    assert_true(b.full > 0);
    assert_int_equal(b.full_retry_after, b.full);
    assert_int_equal(ended, 80);
    assert_int_equal(after, 200);
    assert_non_null(strstr(said, "answered 503"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_overflow),
        cmocka_unit_test(test_slowloris),
        cmocka_unit_test(test_thousand_at_once),
        cmocka_unit_test(test_full_server_says_503),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
