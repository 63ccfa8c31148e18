/*
 * bench_core.c - what a zone costs, how fast captures drain, how small they are, and what
 * `mprof report` costs. Prints one JSON object per line; every timing is also given as a ratio
 * to a baseline measured in the same run (two raw timer reads), since this machine is shared
 * and noisy. Each figure is the best of several repetitions.
 *
 * usage: bench_core [--zones N] [--dir DIR] [--mprof PATH]
 */
#define MPROF_ENABLE 1
#include "mprof/mprof.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;
static uint64_t n_zones = 20000000;
static const char *dir = "/tmp";
static const char *mprof_bin = "mprof";
#define REPS 5

/* ---- the workloads ------------------------------------------------------------------------ */

static double timer_pair_ns(uint64_t n)
{
    uint64_t acc = 0, t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t a = mprof__ticks();
        uint64_t b = mprof__ticks();
        acc += b - a;
    }
    uint64_t t1 = now_ns();
    sink += acc;
    return (double)(t1 - t0) / (double)n;
}

static double flat_zones(uint64_t n)
{
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        MPROF_ZONE("flat");
    }
    return (double)(now_ns() - t0) / (double)n;
}

/* An async span begun and ended (on one thread: the cost of each call does not depend on which
 * thread makes it), the same work as a zone's begin and end. */
static double async_pairs(uint64_t n)
{
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        MPROF_ASYNC_BEGIN("loads", i, "load");
        MPROF_ASYNC_END("loads", i);
    }
    return (double)(now_ns() - t0) / (double)n;
}

static double nested_zones(uint64_t n)
{
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n / 4; i++) {
        MPROF_ZONE("n0");
        {
            MPROF_ZONE("n1");
            {
                MPROF_ZONE("n2");
                {
                    MPROF_ZONE("n3");
                }
            }
        }
    }
    return (double)(now_ns() - t0) / (double)(n / 4 * 4);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long thread_minflt(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : 0;
}

/* One of two threads that run at once. Both start together (a barrier), and each reports its
 * wall time and its own CPU time per zone (or per timer pair): on a machine with fewer free
 * cores than two producers plus the collector, wall time includes the time a thread was
 * preempted, which is no cost of the zone; CPU time does not, but still counts what the thread
 * itself paid (its page faults, its cache misses). */
typedef struct two_arg {
    int timer; /* 1: two timer reads per iteration, 0: a flat zone */
    pthread_barrier_t *bar;
    double wall_ns, cpu_ns;
    long minflt;
} two_arg;

static void *two_thread(void *p)
{
    two_arg *a = p;
    uint64_t n = n_zones / 16;
    {
        MPROF_ZONE("warm"); /* registered, first block taken, before the clock starts */
    }
    pthread_barrier_wait(a->bar);
    long f0 = thread_minflt();
    uint64_t c0 = thread_cpu_ns();
    a->wall_ns = a->timer ? timer_pair_ns(n) : flat_zones(n);
    a->cpu_ns = (double)(thread_cpu_ns() - c0) / (double)n;
    a->minflt = thread_minflt() - f0;
    return NULL;
}

typedef struct two_result {
    double wall_ns, cpu_ns, minflt_per_mzone;
} two_result;

static two_result two_threads(int timer)
{
    pthread_t t[2];
    two_arg a[2];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    for (int i = 0; i < 2; i++) {
        a[i] = (two_arg){.timer = timer, .bar = &bar};
        pthread_create(&t[i], NULL, two_thread, &a[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    two_result r = {(a[0].wall_ns + a[1].wall_ns) / 2, (a[0].cpu_ns + a[1].cpu_ns) / 2,
                    (double)(a[0].minflt + a[1].minflt) / 2 / ((double)n_zones / 16) * 1e6};
    return r;
}

/* A capture path for stem; the caller frees it. */
static char *capture_path(const char *stem)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s/bench-%ld-%s.mprof", dir, (long)getpid(), stem);
    return strdup(buf);
}

static void start(const char *path)
{
    mprof_config cfg = {0};
    cfg.capture_path = path;
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.memory_limit_bytes = (size_t)6 << 30;
    if (mprof_startup(&cfg) != MPROF_OK) {
        fprintf(stderr, "bench: cannot start a capture to %s\n", path ? path : "(none)");
        exit(1);
    }
}

static long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static double best(double a, double b)
{
    return a < b ? a : b;
}

/* CPU nanoseconds the collector thread ("mprof-collector") has used, from the scheduler's
 * per-thread accounting (/proc/self/task/TID/schedstat); -1 when it cannot be found. */
static double collector_cpu_ns(void)
{
    DIR *d = opendir("/proc/self/task");
    double ns = -1;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], buf[64];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int is = fgets(buf, sizeof buf, f) && strncmp(buf, "mprof-collector", 15) == 0;
        fclose(f);
        if (!is)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        if ((f = fopen(path, "r"))) {
            unsigned long long v;
            if (fscanf(f, "%llu", &v) == 1)
                ns = (double)v;
            fclose(f);
        }
    }
    if (d)
        closedir(d);
    return ns;
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

/* A frame-like mix: nested zones, a frame mark and a plot now and then. */
static void collector_workload(uint64_t n)
{
    for (uint64_t i = 0; i < n / 4; i++) {
        MPROF_ZONE("c0");
        {
            MPROF_ZONE("c1");
        }
        if ((i & 1023) == 0) {
            MPROF_PLOT_INT("i", (int64_t)i);
            MPROF_FRAME_MARK();
        }
    }
}

/* Collector CPU per event for one sink: "file", "history" (listening, nothing connected) or
 * "live" (`mprof capture` connected); "history_steady" is history once the ring is full (it
 * keeps 0.05 s, and n events go by before the measurement): each new chunk then reuses the
 * memory of the ones the ring dropped, as in a program running longer than
 * MPROF_HISTORY_SECONDS, while "history" measures the ring's first seconds, when every chunk
 * takes new memory. Returns ns per event, or -1. */
static double collector_cost(const char *sink_kind, uint64_t n, double *out_events)
{
    mprof_config cfg = {0};
    cfg.memory_limit_bytes = (size_t)6 << 30;
    int steady = !strcmp(sink_kind, "history_steady");
    if (steady) {
        sink_kind = "history";
        cfg.history_seconds = 0.05;
    }
    char *p = capture_path("collector"), *live = capture_path("collector-live");
    char portbuf[16];
    unsigned port = free_port();
    snprintf(portbuf, sizeof portbuf, "%u", port);
    pid_t tool = -1;
    setenv("MPROF_LISTEN", strcmp(sink_kind, "file") ? "1" : "0", 1); /* env beats cfg */
    if (!strcmp(sink_kind, "file")) {
        cfg.capture_path = p;
        cfg.listen = MPROF_TOGGLE_OFF;
    } else {
        cfg.listen = MPROF_TOGGLE_ON;
        cfg.listen_port = (uint16_t)port;
    }
    if (!strcmp(sink_kind, "live")) {
        char *argv[] = {(char *)mprof_bin, "capture", "-f", "-o", live, "-p", portbuf, "--wait",
                        "30", NULL};
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        if (posix_spawnp(&tool, mprof_bin, &fa, NULL, argv, environ) != 0)
            tool = -1;
        posix_spawn_file_actions_destroy(&fa);
        if (tool < 0)
            return -1;
    }
    if (mprof_startup(&cfg) != MPROF_OK)
        return -1;
    if (tool > 0) {
        /* Connected once the tool has written its header and first chunk. */
        for (int t = 0; t < 10000 && file_size(live) < 400; t++) {
            struct timespec d = {0, 1000000};
            nanosleep(&d, NULL);
        }
    }
    if (steady)
        collector_workload(n);
    mprof_flush();
    mprof_stats st0, st1;
    mprof_get_stats(&st0);
    double c0 = collector_cpu_ns();
    collector_workload(n);
    mprof_flush();
    double c1 = collector_cpu_ns();
    mprof_get_stats(&st1);
    mprof_shutdown();
    if (tool > 0) {
        int ws;
        waitpid(tool, &ws, 0);
    }
    unlink(p);
    unlink(live);
    free(p);
    free(live);
    double ev = (double)(st1.events_recorded - st0.events_recorded);
    *out_events = ev;
    return c0 < 0 || c1 < 0 || ev <= 0 ? -1 : (c1 - c0) / ev;
}

/* Peak resident memory (VmHWM, KiB) of a running process, or -1. */
static long vm_hwm_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

/* Runs `mprof report --json` on path; returns seconds, and the report's own peak RSS in KiB.
 * The peak is read from /proc while the child runs: getrusage's ru_maxrss would also count the
 * memory of this process that the child inherited before exec. */
static double report_cost(const char *path, long *rss_kib)
{
    uint64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        execlp(mprof_bin, mprof_bin, "report", "--json", path, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    long peak = -1;
    for (;;) {
        /* VmHWM only grows within one program; the last reading before exit is the report's
         * own peak (earlier readings may still be of the forked copy of this process). */
        long k = vm_hwm_kib(pid);
        if (k > 0)
            peak = k;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid || w < 0)
            break;
        struct timespec d = {0, 2 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    *rss_kib = peak;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "bench: mprof report failed on %s\n", path);
    return (double)(now_ns() - t0) / 1e9;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--zones") == 0 && i + 1 < argc)
            n_zones = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--mprof") == 0 && i + 1 < argc)
            mprof_bin = argv[++i];
        else {
            fprintf(stderr, "usage: bench_core [--zones N] [--dir DIR] [--mprof PATH]\n");
            return 2;
        }
    }
    uint64_t n = n_zones / 4;

    /* Enabled but not recording: started with no capture and no listener. */
    setenv("MPROF_LISTEN", "0", 1);
    start(NULL);
    double idle = 1e9, timer = 1e9;
    for (int r = 0; r < REPS; r++) {
        idle = best(idle, flat_zones(n));
        timer = best(timer, timer_pair_ns(n));
    }
    mprof_shutdown();

    /* Recording to a file: flat, nested, two threads. */
    char *p = capture_path("cost");
    start(p);
    double flat = 1e9, nested = 1e9, timer2 = 1e9, flat_flt = 0, async = 1e9;
    two_result two = {1e9, 1e9, 0}, two_timer = {1e9, 1e9, 0};
    for (int r = 0; r < REPS; r++) {
        timer2 = best(timer2, timer_pair_ns(n / 4));
        long f0 = thread_minflt();
        double fz = flat_zones(n / 4);
        if (fz < flat)
            flat = fz, flat_flt = (double)(thread_minflt() - f0) / ((double)n / 4) * 1e6;
        nested = best(nested, nested_zones(n / 4));
        async = best(async, async_pairs(n / 8));
        two_result z = two_threads(0), t = two_threads(1);
        if (z.cpu_ns < two.cpu_ns)
            two.cpu_ns = z.cpu_ns, two.minflt_per_mzone = z.minflt_per_mzone;
        two.wall_ns = best(two.wall_ns, z.wall_ns);
        two_timer.cpu_ns = best(two_timer.cpu_ns, t.cpu_ns);
        two_timer.wall_ns = best(two_timer.wall_ns, t.wall_ns);
    }
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    unlink(p);
    free(p);
    timer = best(timer, timer2);
    printf("{\"bench\":\"timer_pair\",\"ns\":%.2f}\n", timer);
    printf("{\"bench\":\"zone_idle\",\"ns_per_zone\":%.2f,\"ratio_to_timer_pair\":%.3f}\n", idle,
           idle / timer);
    printf("{\"bench\":\"zone_flat_1t\",\"ns_per_zone\":%.2f,\"ratio_to_timer_pair\":%.3f,"
           "\"minor_faults_per_mzone\":%.0f}\n",
           flat, flat / timer, flat_flt);
    printf("{\"bench\":\"zone_nested_1t\",\"ns_per_zone\":%.2f,\"ratio_to_timer_pair\":%.3f}\n",
           nested, nested / timer);
    /* An async begin/end pair beside a zone: two out-of-line calls of a plot's weight each. */
    printf("{\"bench\":\"async_pair_1t\",\"ns_per_pair\":%.2f,\"ratio_to_timer_pair\":%.3f,"
           "\"ratio_to_zone\":%.3f}\n",
           async, async / timer, async / flat);
    /* Two threads at once, each against the timer floor also taken by two threads at once:
     * cpu_ratio (thread CPU time) is the zone's cost; wall_ratio adds whatever preemption the
     * machine imposed (docs/OVERHEAD.md). */
    printf("{\"bench\":\"zone_flat_2t\",\"ns_per_zone\":%.2f,\"cpu_ns_per_zone\":%.2f,"
           "\"timer_pair_2t_ns\":%.2f,\"timer_pair_2t_cpu_ns\":%.2f,\"cpu_ratio\":%.3f,"
           "\"wall_ratio\":%.3f,\"ratio_to_timer_pair\":%.3f,\"minor_faults_per_mzone\":%.0f,"
           "\"lost\":%llu}\n",
           two.wall_ns, two.cpu_ns, two_timer.wall_ns, two_timer.cpu_ns,
           two.cpu_ns / two_timer.cpu_ns, two.wall_ns / two_timer.wall_ns, two.wall_ns / timer,
           two.minflt_per_mzone, (unsigned long long)st.events_lost);

    /* Sustained: n_zones from one thread, from the first zone until the file is closed. */
    p = capture_path("sustained");
    start(p);
    uint64_t t0 = now_ns();
    flat_zones(n_zones);
    uint64_t t1 = now_ns();
    mprof_get_stats(&st);
    mprof_shutdown();
    uint64_t t2 = now_ns();
    long bytes = file_size(p);
    printf("{\"bench\":\"sustained_file\",\"zones\":%llu,\"zones_per_s\":%.0f,"
           "\"producer_zones_per_s\":%.0f,\"lost\":%llu,\"bytes_per_zone\":%.3f,"
           "\"raw_bytes_per_zone\":26,\"peak_buffered_mib\":%.1f,\"file_mib\":%.1f}\n",
           (unsigned long long)n_zones, (double)n_zones / ((double)(t2 - t0) / 1e9),
           (double)n_zones / ((double)(t1 - t0) / 1e9), (unsigned long long)st.events_lost,
           (double)bytes / (double)n_zones, (double)st.peak_buffered_bytes / 1048576.0,
           (double)bytes / 1048576.0);

    /* Collector CPU per event for each sink (best of REPS). */
    const char *kinds[] = {"file", "history", "history_steady", "live"};
    for (int k = 0; k < 4; k++) {
        double b = 1e30, ev = 0;
        for (int r = 0; r < REPS; r++) {
            double c = collector_cost(kinds[k], n_zones / 4, &ev);
            if (c > 0 && c < b)
                b = c;
        }
        if (b < 1e30)
            printf("{\"bench\":\"collector_%s\",\"events\":%.0f,\"collector_ns_per_event\":%.2f,"
                   "\"ratio_to_timer_pair\":%.3f}\n",
                   kinds[k], ev, b, b / timer);
        else
            printf("{\"bench\":\"collector_%s\",\"error\":\"not measured\"}\n", kinds[k]);
    }
    setenv("MPROF_LISTEN", "0", 1);

    /* mprof report: events/s, and peak memory for 1x and 4x the events. */
    char *small = capture_path("report1");
    start(small);
    for (uint64_t i = 0; i < n_zones / 8; i++) {
        MPROF_ZONE("a");
        MPROF_ZONE("b");
    }
    mprof_shutdown();
    long rss1, rss4;
    double s1 = report_cost(small, &rss1);
    double s4 = report_cost(p, &rss4);
    printf("{\"bench\":\"report\",\"events\":%llu,\"seconds\":%.3f,\"events_per_s\":%.0f,"
           "\"peak_rss_kib\":%ld,\"events_small\":%llu,\"peak_rss_small_kib\":%ld,"
           "\"rss_ratio_for_%.0fx_events\":%.3f,\"seconds_small\":%.3f}\n",
           (unsigned long long)(2 * n_zones), s4, (double)(2 * n_zones) / s4, rss4,
           (unsigned long long)(n_zones / 2), rss1, (double)(2 * n_zones) / (double)(n_zones / 2),
           (double)rss4 / (double)rss1, s1);
    unlink(small);
    unlink(p);
    free(small);
    free(p);
    return 0;
}
