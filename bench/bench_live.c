/*
 * bench_live.c - sustained event rate over loopback live capture, against the in-process file
 * capture of the same run.
 *
 * Each step starts the profiler with both sinks (a capture file and the listener), spawns the
 * real `mprof capture` against it, has producer threads record zones at a target rate for a
 * fixed time, shuts down, and reads both captures back. A step passes when the live capture
 * holds every event of the file capture and nothing was lost. The rate doubles until a step
 * fails (or the producers cannot reach it); the last passing step is the sustained rate.
 * Prints one JSON object per step and a summary line.
 *
 * usage: bench_live [--mprof PATH] [--dir DIR] [--seconds S] [--threads N] [--max-rate R]
 */
#define MPROF_ENABLE 1
#include "mprof/mprof.h"
#include "format/format.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *mprof_bin = "mprof";
static const char *dir = "/tmp";
static double seconds = 1.0;
static int n_threads = 2;
static double max_rate = 64e6;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &l) != 0) {
        close(fd);
        return 0;
    }
    close(fd);
    return ntohs(a.sin_port);
}

typedef struct producer {
    pthread_t t;
    double rate; /* zones per second for this thread; 0 = as fast as possible */
    uint64_t deadline_ns, zones;
} producer;

static void *produce(void *arg)
{
    producer *p = arg;
    uint64_t t0 = now_ns(), n = 0;
    for (;;) {
        for (int i = 0; i < 1000; i++) {
            MPROF_ZONE("bench_live_zone");
        }
        n += 1000;
        uint64_t t = now_ns();
        if (t >= p->deadline_ns)
            break;
        if (p->rate > 0) {
            uint64_t due = t0 + (uint64_t)((double)n / p->rate * 1e9);
            if (due > t) {
                struct timespec ts = {0, (long)(due - t)};
                if (due - t < 1000000000u)
                    nanosleep(&ts, NULL);
            }
        }
    }
    p->zones = n;
    return NULL;
}

typedef struct counts {
    uint64_t zones, lost;
    long bytes;
    int ok;
} counts;

static counts read_capture(const char *path)
{
    counts c = {0};
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "bench_live: %s\n", err);
        return c;
    }
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        if (ev.type == MPROF_EV_ZONE_BEGIN)
            c.zones++;
        else if (ev.type == MPROF_EV_LOST)
            c.lost += ev.u[0];
    }
    const char *el = mprof_reader_end_info(r, "events_lost");
    if (el && strtoull(el, NULL, 10) > c.lost)
        c.lost = strtoull(el, NULL, 10);
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    c.ok = rc == 0 && st.complete;
    c.bytes = (long)st.file_bytes;
    mprof_reader_close(r);
    return c;
}

/* One step at the given total rate (0 = unlimited). live_on: also capture live (else the file
 * only, the baseline). Returns 1 when every capture is whole and nothing was lost. */
static int step(double rate, int live_on, double *achieved)
{
    char file[512], live[512], log[512], portbuf[16];
    snprintf(file, sizeof file, "%s/bench_live_file_%d.mprof", dir, (int)getpid());
    snprintf(live, sizeof live, "%s/bench_live_live_%d.mprof", dir, (int)getpid());
    snprintf(log, sizeof log, "%s/bench_live_tool_%d.log", dir, (int)getpid());
    unsigned port = free_port();
    snprintf(portbuf, sizeof portbuf, "%u", port);
    mprof_config cfg = {0};
    cfg.capture_path = file;
    cfg.listen = live_on ? MPROF_TOGGLE_ON : MPROF_TOGGLE_OFF;
    cfg.listen_port = (uint16_t)port;
    cfg.history_seconds = 30; /* the tool asks for all of it: nothing before it connects is missed */
    if (mprof_startup(&cfg) != MPROF_OK) {
        fprintf(stderr, "bench_live: mprof_startup failed\n");
        return 0;
    }
    char *argv[] = {(char *)mprof_bin, "capture", "-f", "-o", live, "-p", portbuf, "--history", "30",
                    "--wait", "10", "-m", "256", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t tool = -1;
    if (live_on && posix_spawnp(&tool, mprof_bin, &fa, NULL, argv, environ) != 0) {
        fprintf(stderr, "bench_live: cannot run %s\n", mprof_bin);
        mprof_shutdown();
        return 0;
    }
    posix_spawn_file_actions_destroy(&fa);
    struct timespec settle = {0, 300000000};
    nanosleep(&settle, NULL);

    producer p[16];
    uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)(seconds * 1e9);
    for (int i = 0; i < n_threads; i++) {
        p[i] = (producer){.rate = rate / n_threads, .deadline_ns = deadline};
        pthread_create(&p[i].t, NULL, produce, &p[i]);
    }
    uint64_t produced = 0;
    for (int i = 0; i < n_threads; i++) {
        pthread_join(p[i].t, NULL);
        produced += p[i].zones;
    }
    double el = (double)(now_ns() - t0) / 1e9;
    uint64_t t_stop = now_ns();
    mprof_shutdown();
    double drain_s = (double)(now_ns() - t_stop) / 1e9;
    int st = 0;
    if (tool > 0)
        waitpid(tool, &st, 0);
    counts f = read_capture(file), l = live_on ? read_capture(live) : f;
    *achieved = (double)produced / el;
    int whole = f.ok && l.ok && l.lost == 0 && f.lost == 0 && l.zones == f.zones &&
                f.zones == produced;
    printf("{\"bench\":\"live\",\"mode\":\"%s\",\"target_zones_per_s\":%.0f,\"produced_zones\":%llu,"
           "\"events_per_s\":%.0f,\"threads\":%d,\"file_zones\":%llu,\"file_lost\":%llu,"
           "\"live_zones\":%llu,\"live_lost\":%llu,\"file_mb\":%.2f,\"live_mb\":%.2f,"
           "\"shutdown_s\":%.3f,\"tool_exit\":%d,\"nothing_lost\":%s}\n",
           live_on ? "file+live" : "file", rate, (unsigned long long)produced, *achieved * 2, n_threads,
           (unsigned long long)f.zones, (unsigned long long)f.lost, (unsigned long long)l.zones,
           (unsigned long long)l.lost, (double)f.bytes / 1e6, (double)l.bytes / 1e6, drain_s,
           WIFEXITED(st) ? WEXITSTATUS(st) : -1, whole ? "true" : "false");
    fflush(stdout);
    unlink(file);
    unlink(live);
    unlink(log);
    return whole;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mprof"))
            mprof_bin = argv[i + 1];
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            n_threads = atoi(argv[i + 1]) < 1 ? 1 : atoi(argv[i + 1]) > 16 ? 16 : atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-rate"))
            max_rate = atof(argv[i + 1]);
        else {
            fprintf(stderr, "usage: bench_live [--mprof PATH] [--dir DIR] [--seconds S] "
                            "[--threads N] [--max-rate R]\n");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    double best = 0;
    for (double rate = 1e6; rate <= max_rate; rate *= 2) {
        double got;
        int whole = step(rate, 1, &got);
        if (!whole)
            break;
        if (got * 2 > best)
            best = got * 2;
        if (got < rate * 0.9)
            break; /* the producers cannot go faster: this is the machine's limit */
    }
    /* As fast as the producers can go, with and without the live sink. */
    double file_only = 0, with_live = 0;
    int file_whole = step(0, 0, &file_only);
    int live_whole = step(0, 1, &with_live);
    printf("{\"bench\":\"live_summary\",\"sustained_events_per_s_nothing_lost\":%.0f,"
           "\"unlimited_file_only_events_per_s\":%.0f,\"unlimited_file_only_nothing_lost\":%s,"
           "\"unlimited_file_live_events_per_s\":%.0f,\"unlimited_file_live_nothing_lost\":%s,"
           "\"note\":\"events = zone begin + zone end; the live capture is compared with the "
           "file capture of the same run\"}\n",
           best, file_only * 2, file_whole ? "true" : "false", with_live * 2,
           live_whole ? "true" : "false");
    return 0;
}
