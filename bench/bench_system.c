/*
 * bench_system.c - what system tracing costs (docs/SYSTEM.md): CPU time of the system thread
 * per thousand context switches and per callstack sample.
 *
 * Three child processes, each a fresh capture, each running for the same wall time:
 *   idle      one thread sleeps: the system thread's polling cost alone (every 10 ms a
 *             /proc/self/task scan and a ring-buffer check, every 100 ms /proc/stat)
 *   switches  4 threads sleep 20 us in a loop: many switches (2 records each)
 *   samples   2 threads spin with MPROF_SAMPLE_HZ=1000: samples, few switches
 * The system thread's CPU time comes from the capture's END key system.thread_cpu_ns
 * (CLOCK_THREAD_CPUTIME_ID); the idle run's cost per second is subtracted from the others.
 * Output: one JSON object per line, with the load average (the figures are CPU time, so load
 * changes them less than wall time would, but a busy machine still adds cache misses).
 */
#include "mprof/mprof.h"
#include "format/format.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double run_seconds = 1.0;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *sleeper(void *arg)
{
    (void)arg;
    double end = now_s() + run_seconds;
    struct timespec d = {0, 20000};
    while (now_s() < end)
        nanosleep(&d, NULL);
    return NULL;
}

static void *spinner(void *arg)
{
    (void)arg;
    double end = now_s() + run_seconds;
    volatile double x = 0;
    while (now_s() < end)
        for (int i = 0; i < 10000; i++)
            x += i;
    return x > 0 ? NULL : arg; /* x is read, which keeps clang's unused-but-set check quiet */
}

static void *idler(void *arg)
{
    (void)arg;
    struct timespec d = {(time_t)run_seconds, (long)((run_seconds - (double)(time_t)run_seconds) * 1e9)};
    nanosleep(&d, NULL);
    return NULL;
}

/* Runs a case in a child; returns 0 and fills the END figures. */
static int run_case(const char *name, const char *path, void *(*fn)(void *), int threads,
                    const char *sample_hz, double *cpu_ns, double *switch_records,
                    double *samples, double *lost)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setenv("MPROF_SAMPLE_HZ", sample_hz, 1);
        mprof_config cfg = {0};
        cfg.capture_path = path;
        if (mprof_startup(&cfg) != MPROF_OK)
            _exit(2);
        MPROF_ZONE_BEGIN("bench");
        pthread_t t[8];
        for (int i = 0; i < threads; i++)
            pthread_create(&t[i], NULL, fn, NULL);
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
        MPROF_ZONE_END();
        mprof_shutdown();
        _exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench_system: case %s failed\n", name);
        return -1;
    }
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "bench_system: %s\n", err);
        return -1;
    }
    mprof_event ev;
    while (mprof_reader_next(r, &ev) == 1) {
    }
    const char *on = mprof_reader_info(r, "system.context_switches");
    if (!on || strcmp(on, "on") != 0) {
        const char *why = mprof_reader_info(r, "system.context_switches.why_not");
        printf("{\"bench\":\"system\",\"case\":\"%s\",\"skipped\":\"%s\"}\n", name,
               why ? why : "no system tracing");
        mprof_reader_close(r);
        return 1;
    }
    const char *v;
    *cpu_ns = (v = mprof_reader_end_info(r, "system.thread_cpu_ns")) ? atof(v) : 0;
    *switch_records = (v = mprof_reader_end_info(r, "system.switch_records")) ? atof(v) : 0;
    *samples = (v = mprof_reader_end_info(r, "system.samples")) ? atof(v) : 0;
    *lost = (v = mprof_reader_end_info(r, "system.lost_records")) ? atof(v) : 0;
    mprof_reader_close(r);
    remove(path);
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            run_seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--mprof") == 0 && i + 1 < argc)
            i++; /* scripts/bench.sh passes the tool's path to every benchmark */
    }
    if (run_seconds < 0.2)
        run_seconds = 0.2;
    char path[256], load[64] = "?";
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (!fgets(load, sizeof load, lf))
            snprintf(load, sizeof load, "?");
        load[strcspn(load, " ")] = 0;
        fclose(lf);
    }
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, sizeof path, "%s/bench-system-%ld.mprof", dir, (long)getpid());

    double idle_cpu, sw_cpu, sa_cpu, idle_sw, sw_sw, sa_sw, idle_s, sw_s, sa_s, l0, l1, l2;
    int rc = run_case("idle", path, idler, 1, "0", &idle_cpu, &idle_sw, &idle_s, &l0);
    if (rc != 0)
        return rc < 0 ? 1 : 0;
    if (run_case("switches", path, sleeper, 4, "0", &sw_cpu, &sw_sw, &sw_s, &l1) != 0 ||
        run_case("samples", path, spinner, 2, "1000", &sa_cpu, &sa_sw, &sa_s, &l2) != 0)
        return 1;
    printf("{\"bench\":\"system\",\"case\":\"idle\",\"seconds\":%.2f,\"thread_cpu_us\":%.0f,"
           "\"switch_records\":%.0f,\"load1\":\"%s\"}\n",
           run_seconds, idle_cpu / 1e3, idle_sw, load);
    double sw_extra = sw_cpu - idle_cpu;
    double switches = sw_sw / 2; /* one off and one on record per switch */
    double per_k = switches > 0 ? sw_extra / switches * 1000 / 1e3 : 0;
    printf("{\"bench\":\"system\",\"case\":\"switches\",\"thread_cpu_us\":%.0f,\"switches\":%.0f,"
           "\"lost_records\":%.0f,\"us_per_1000_switches\":%.1f,\"load1\":\"%s\"}\n",
           sw_cpu / 1e3, switches, l1, per_k, load);
    double sa_extra = sa_cpu - idle_cpu - (sa_sw / 2) * (per_k * 1e3 / 1000);
    printf("{\"bench\":\"system\",\"case\":\"samples\",\"thread_cpu_us\":%.0f,\"samples\":%.0f,"
           "\"lost_records\":%.0f,\"ns_per_sample\":%.0f,\"load1\":\"%s\"}\n",
           sa_cpu / 1e3, sa_s, l2, sa_s > 0 ? sa_extra / sa_s : 0, load);
    return 0;
}
