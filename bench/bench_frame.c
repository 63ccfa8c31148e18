/*
 * bench_frame.c - whole-process CPU of a fine-grained frame loop, instrumented against the same
 * source built without MPROF_ENABLE (bench_frame_off), in one run.
 *
 * The workload: FRAMES frames of 30 systems x 100 zones (3,000 zones a frame), each zone
 * wrapping about 0.5 us of arithmetic (a fixed amount of work, so CPU time measures cost, not
 * the clock), plus a frame mark and two plots a frame. Each configuration runs as a child
 * process; its CPU time (user + system, all threads: the program, the collector, the
 * listener) comes from wait4. The figure of each configuration is the best of REPS runs,
 * interleaved with the uninstrumented runs, and is printed as a ratio to the best
 * uninstrumented run:
 *   off        bench_frame_off: MPROF_ENABLE undefined (the baseline)
 *   listen0    enabled, MPROF_LISTEN=0, no capture (idle)
 *   history    enabled, listening with the history ring, nothing connected
 *   file       enabled, writing a capture file (not listening)
 *   live       enabled, `mprof capture` connected (the tool's own CPU is not counted)
 *
 * usage: bench_frame [--frames N] [--reps N] [--dir DIR] [--mprof PATH] [--only MODE]
 *        bench_frame --child MODE --frames N   (what the driver runs)
 */
#include "mprof/mprof.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define SYSTEMS 30
#define ZONES_PER_SYSTEM 100
#define WORK_ITERS 360 /* about 0.5 us of dependent multiply-adds on this machine class (2.1 GHz) */

static volatile uint64_t sink;

static uint64_t work(uint64_t x)
{
    for (int i = 0; i < WORK_ITERS; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static void system_update(int s, uint64_t *x)
{
    (void)s;
    MPROF_ZONE("system");
    for (int z = 0; z < ZONES_PER_SYSTEM - 1; z++) {
        MPROF_ZONE("item");
        *x = work(*x);
    }
}

static int run_child(int frames)
{
    uint64_t x = 1;
    for (int f = 0; f < frames; f++) {
        for (int s = 0; s < SYSTEMS; s++)
            system_update(s, &x);
        MPROF_PLOT_INT("frame", f);
        MPROF_PLOT("x", (double)(x >> 40));
        MPROF_FRAME_MARK();
    }
    sink = x;
#ifdef MPROF_ENABLE
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    if (st.events_lost)
        fprintf(stderr, "bench_frame: %llu events lost\n", (unsigned long long)st.events_lost);
#endif
    return 0;
}

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
    unsigned port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &l) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static pid_t spawn_env(char *const argv[], char *const extra_env[], const char *out)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + 8, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "MPROF_", 6) != 0)
            envp[k++] = environ[i];
    for (int i = 0; extra_env && extra_env[i]; i++)
        envp[k++] = extra_env[i];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out) {
        posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    }
    pid_t pid = -1;
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, envp) != 0)
        pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    return pid;
}

static const char *dir = "/tmp";
static const char *mprof_bin = "mprof";
static char self_path[4096], off_path[4200];
static int frames = 1000;

static long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

/* Runs one configuration; returns its CPU seconds, or -1. */
static double run_mode(const char *mode)
{
    char fr[32], port_env[32], cap_env[1200], cap[1100], live[1100], log[1100];
    snprintf(fr, sizeof fr, "%d", frames);
    snprintf(cap, sizeof cap, "%s/bench-frame-%ld.mprof", dir, (long)getpid());
    snprintf(live, sizeof live, "%s/bench-frame-live-%ld.mprof", dir, (long)getpid());
    snprintf(log, sizeof log, "%s/bench-frame-live-%ld.log", dir, (long)getpid());
    unsigned port = free_port();
    snprintf(port_env, sizeof port_env, "MPROF_PORT=%u", port);
    snprintf(cap_env, sizeof cap_env, "MPROF_CAPTURE=%s", cap);
    char *env[8] = {0};
    int e = 0;
    const char *bin = self_path;
    pid_t tool = -1;
    if (!strcmp(mode, "off")) {
        bin = off_path;
    } else if (!strcmp(mode, "listen0")) {
        env[e++] = "MPROF_LISTEN=0";
    } else if (!strcmp(mode, "history")) {
        env[e++] = "MPROF_LISTEN=1";
        env[e++] = port_env;
    } else if (!strcmp(mode, "file")) {
        env[e++] = "MPROF_LISTEN=0";
        env[e++] = cap_env;
    } else if (!strcmp(mode, "live")) {
        env[e++] = "MPROF_LISTEN=1";
        env[e++] = port_env;
        char portbuf[16];
        snprintf(portbuf, sizeof portbuf, "%u", port);
        char *targv[] = {(char *)mprof_bin, "capture", "-f", "-o", live, "-p", portbuf,
                         "--wait", "30", NULL};
        unlink(log);
        tool = spawn_env(targv, NULL, log);
        /* Started first, so the capture holds the run from its first event. */
        for (int t = 0; t < 3000 && file_size(log) <= 0; t++) {
            struct timespec d = {0, 1000000};
            nanosleep(&d, NULL);
        }
    } else {
        return -1;
    }
    char *argv[] = {(char *)bin, "--child", (char *)mode, "--frames", fr, NULL};
    pid_t pid = spawn_env(argv, env, NULL);
    if (pid < 0)
        return -1;
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    if (tool > 0) {
        int ts;
        waitpid(tool, &ts, 0);
    }
    unlink(cap);
    unlink(live);
    unlink(log);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    const char *child = NULL, *only = NULL;
    int reps = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--child") && i + 1 < argc)
            child = argv[++i];
        else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
            frames = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--mprof") && i + 1 < argc)
            mprof_bin = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: bench_frame [--frames N] [--reps N] [--dir DIR] "
                            "[--mprof PATH] [--only MODE]\n");
            return 2;
        }
    }
    if (child)
        return run_child(frames);
#ifndef MPROF_ENABLE
    if (reps > 0) {
        fprintf(stderr, "bench_frame_off only runs as a child of bench_frame\n");
        return 2;
    }
#endif
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 8);
    if (n <= 0)
        return 3;
    self_path[n] = 0;
    snprintf(off_path, sizeof off_path, "%s_off", self_path);
    const char *modes[] = {"listen0", "history", "file", "live"};
    double off = 1e30, best[4] = {1e30, 1e30, 1e30, 1e30};
    uint64_t t0 = now_ns();
    for (int r = 0; r < reps; r++) {
        double o = run_mode("off");
        if (o > 0 && o < off)
            off = o;
        for (int m = 0; m < 4; m++) {
            if (only && strcmp(only, modes[m]))
                continue;
            double c = run_mode(modes[m]);
            if (c > 0 && c < best[m])
                best[m] = c;
        }
    }
    double zones = (double)frames * SYSTEMS * ZONES_PER_SYSTEM;
    printf("{\"bench\":\"frame_loop_off\",\"frames\":%d,\"zones_per_frame\":%d,\"cpu_s\":%.4f,"
           "\"ns_per_zone_of_work\":%.1f}\n",
           frames, SYSTEMS * ZONES_PER_SYSTEM, off, off * 1e9 / zones);
    for (int m = 0; m < 4; m++) {
        if (best[m] >= 1e30)
            continue;
        printf("{\"bench\":\"frame_loop_%s\",\"cpu_s\":%.4f,\"ratio_to_off\":%.3f,"
               "\"ns_per_zone_extra\":%.2f}\n",
               modes[m], best[m], best[m] / off, (best[m] - off) * 1e9 / zones);
    }
    fprintf(stderr, "bench_frame: %.1f s\n", (double)(now_ns() - t0) / 1e9);
    return 0;
}
