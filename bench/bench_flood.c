/*
 * bench_flood.c - the sample engine's frame rate while a local client floods its capture port
 * with connections (about 3,000 handshakes a second is the flood it must survive).
 *
 * The real engine (examples/engine, --listen --renderer cpu) runs a fixed number of frames
 * three ways, interleaved so that a change in the machine's load hits all of them alike:
 *   quiet    nothing connects;
 *   flood    another process connects to the engine's port as fast as it can, sends a hello
 *            that is not mprof's and hangs up (what tests/test_hardening.c's flood does);
 *   control  the same flooder against a port held by a third process that accepts and answers
 *            in the same way, so the flooder's own CPU (and the kernel's) is taken from the
 *            engine without the engine's listener doing anything.
 * It prints one JSON object per run and a summary with flood/quiet and flood/control frame-rate
 * ratios (medians over the repeats) and the load average. flood/control near 1 means the
 * listener costs the game nothing beyond what any flood of the machine costs.
 *
 * usage: bench_flood [--engine PATH | --mprof PATH] [--frames N] [--repeats N]
 *   --mprof PATH: the engine is looked for at DIR/examples/engine/mprof_engine beside it.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 128) != 0)
        return -1;
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return fd;
}

static int free_port(void)
{
    int port = 0, fd = listen_any(&port);
    close(fd);
    return port;
}

/* The flooder: keeps 64 connections in flight; each connects, sends a hello that is not
 * mprof's, reads the answer if one comes, and is hung up after 20 ms at most; as fast as it can
 * until SIGTERM. Writes its counts to fd out at the end. */
static volatile sig_atomic_t stop_flag;
static void on_term(int sig)
{
    (void)sig;
    stop_flag = 1;
}

#define IN_FLIGHT 64

static void flooder(int port, int out)
{
    signal(SIGTERM, on_term);
    static const unsigned char junk[24] = "GET / HTTP/1.1\r\nHost: x";
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    long tried = 0, connected = 0, answered = 0;
    struct pollfd pf[IN_FLIGHT];
    double until[IN_FLIGHT];
    int sent[IN_FLIGHT];
    for (int i = 0; i < IN_FLIGHT; i++)
        pf[i].fd = -1;
    double t0 = mono_s();
    while (!stop_flag) {
        double now = mono_s();
        for (int i = 0; i < IN_FLIGHT; i++) {
            if (pf[i].fd >= 0 && now > until[i]) {
                close(pf[i].fd);
                pf[i].fd = -1;
            }
            if (pf[i].fd < 0) {
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
                if (fd < 0)
                    continue;
                tried++;
                if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
                    close(fd);
                    continue;
                }
                pf[i] = (struct pollfd){.fd = fd, .events = POLLOUT};
                until[i] = now + 0.02;
                sent[i] = 0;
            }
        }
        if (poll(pf, IN_FLIGHT, 5) <= 0)
            continue;
        for (int i = 0; i < IN_FLIGHT; i++) {
            if (pf[i].fd < 0 || !pf[i].revents)
                continue;
            if (pf[i].revents & (POLLERR | POLLHUP)) {
                close(pf[i].fd);
                pf[i].fd = -1;
            } else if (!sent[i] && (pf[i].revents & POLLOUT)) {
                connected++;
                send(pf[i].fd, junk, sizeof junk, MSG_NOSIGNAL);
                sent[i] = 1;
                pf[i].events = POLLIN;
            } else if (pf[i].revents & POLLIN) {
                unsigned char b[256];
                if (recv(pf[i].fd, b, sizeof b, MSG_DONTWAIT) > 0)
                    answered++;
                close(pf[i].fd);
                pf[i].fd = -1;
            }
        }
    }
    double el = mono_s() - t0;
    char line[160];
    int n = snprintf(line, sizeof line, "%ld %ld %ld %.3f\n", tried, connected, answered, el);
    (void)!write(out, line, (size_t)n);
    _exit(0);
}

/* The control's listener: accepts, reads the hello, answers 16 bytes, hangs up. */
static void acceptor(int lfd)
{
    signal(SIGTERM, SIG_DFL);
    for (;;) {
        int c = accept(lfd, NULL, NULL);
        if (c < 0)
            continue;
        unsigned char b[64];
        struct pollfd pf = {.fd = c, .events = POLLIN};
        if (poll(&pf, 1, 50) == 1 && recv(c, b, sizeof b, 0) > 0)
            send(c, "MPRFCAPT\1\0\3\0\0\0\0\0", 16, MSG_NOSIGNAL);
        close(c);
    }
}

typedef struct run_result {
    double fps;
    long tried, connected, answered;
    double flood_s;
} run_result;

/* Runs the engine for frames frames listening on a free port; mode 0 quiet, 1 flood, 2 control.
 * 0, or -1 when the engine failed or printed no frame rate. */
static int run_engine(const char *engine, long frames, int mode, run_result *r)
{
    memset(r, 0, sizeof *r);
    int port = free_port();
    int pipe_out[2], pipe_cnt[2];
    if (pipe(pipe_out) != 0 || pipe(pipe_cnt) != 0)
        return -1;
    pid_t eng = fork();
    if (eng == 0) {
        char ps[16], fs[32];
        snprintf(ps, sizeof ps, "%d", port);
        snprintf(fs, sizeof fs, "%ld", frames);
        setenv("MPROF_PORT", ps, 1);
        setenv("MPROF_ADDRESS", "127.0.0.1", 1);
        dup2(pipe_out[1], 1);
        close(pipe_out[0]);
        close(pipe_cnt[0]);
        close(pipe_cnt[1]);
        execl(engine, engine, "--listen", "--frames", fs, "--renderer", "cpu", "--quiet",
              (char *)NULL);
        _exit(127);
    }
    close(pipe_out[1]);
    pid_t acc = -1, fl = -1;
    int target = port;
    if (mode == 2) {
        int lfd = listen_any(&target);
        acc = fork();
        if (acc == 0) {
            close(pipe_cnt[0]);
            close(pipe_cnt[1]);
            acceptor(lfd);
        }
        close(lfd);
    }
    if (mode) {
        /* Start flooding once the engine listens (a refused connect is cheap and counts as
         * tried, so a short head start is enough). */
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
        fl = fork();
        if (fl == 0) {
            close(pipe_cnt[0]);
            flooder(target, pipe_cnt[1]);
        }
    }
    close(pipe_cnt[1]);
    char buf[4096];
    size_t got = 0;
    ssize_t n;
    while (got + 1 < sizeof buf && (n = read(pipe_out[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = 0;
    close(pipe_out[0]);
    int st;
    waitpid(eng, &st, 0);
    if (fl > 0) {
        kill(fl, SIGTERM);
        char cb[160] = "";
        ssize_t k = read(pipe_cnt[0], cb, sizeof cb - 1);
        if (k > 0) {
            cb[k] = 0;
            sscanf(cb, "%ld %ld %ld %lf", &r->tried, &r->connected, &r->answered, &r->flood_s);
        }
        waitpid(fl, NULL, 0);
    }
    close(pipe_cnt[0]);
    if (acc > 0) {
        kill(acc, SIGTERM);
        waitpid(acc, NULL, 0);
    }
    const char *s = strstr(buf, "seconds=");
    long fr = 0;
    const char *f = strstr(buf, "frames=");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !s || !f || sscanf(f, "frames=%ld", &fr) != 1)
        return -1;
    double sec = strtod(s + 8, NULL);
    if (!(sec > 0))
        return -1;
    r->fps = (double)fr / sec;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    const char *engine = NULL;
    static char guess[4096];
    long frames = 300;
    int repeats = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc) {
            engine = argv[++i];
        } else if (strcmp(argv[i], "--mprof") == 0 && i + 1 < argc) {
            const char *m = argv[++i], *slash = strrchr(m, '/');
            snprintf(guess, sizeof guess, "%.*s%sexamples/engine/mprof_engine",
                     slash ? (int)(slash - m) : 0, m, slash ? "/" : "");
            if (!engine)
                engine = guess;
        } else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc) {
            frames = atol(argv[++i]);
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_flood [--engine PATH | --mprof PATH] [--frames N] "
                            "[--repeats N]\n");
            return 2;
        }
    }
    if (!engine || access(engine, X_OK) != 0) {
        fprintf(stderr, "bench_flood: no engine at %s (build the examples, or give --engine)\n",
                engine ? engine : "(none)");
        return 0; /* nothing to measure in a build without the examples */
    }
    if (repeats < 1 || repeats > 20 || frames < 10)
        return 2;
    static const char *const names[3] = {"quiet", "flood", "control"};
    double fps[3][20];
    double rate_sum = 0;
    int n_flood = 0;
    for (int k = 0; k < repeats; k++)
        for (int m = 0; m < 3; m++) {
            run_result r;
            if (run_engine(engine, frames, m, &r) != 0) {
                fprintf(stderr, "bench_flood: the engine run (%s) failed\n", names[m]);
                return 1;
            }
            fps[m][k] = r.fps;
            double rate = r.flood_s > 0 ? (double)r.tried / r.flood_s : 0;
            if (m == 1) {
                rate_sum += rate;
                n_flood++;
            }
            printf("{\"bench\":\"flood_run\",\"mode\":\"%s\",\"frames\":%ld,\"fps\":%.2f,"
                   "\"connects_per_s\":%.0f,\"connected\":%ld,\"answered\":%ld}\n",
                   names[m], frames, r.fps, rate, r.connected, r.answered);
            fflush(stdout);
        }
    double q = median(fps[0], repeats), f = median(fps[1], repeats), c = median(fps[2], repeats);
    char load[128] = "?";
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fgets(load, sizeof load, la))
            load[strcspn(load, "\n")] = 0;
        fclose(la);
    }
    printf("{\"bench\":\"flood\",\"frames\":%ld,\"repeats\":%d,\"fps_quiet\":%.2f,"
           "\"fps_flood\":%.2f,\"fps_control\":%.2f,\"flood_over_quiet\":%.3f,"
           "\"flood_over_control\":%.3f,\"flood_connects_per_s\":%.0f,\"loadavg\":\"%s\"}\n",
           frames, repeats, q, f, c, f / q, f / c, n_flood ? rate_sum / n_flood : 0.0, load);
    return 0;
}
