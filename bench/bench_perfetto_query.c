/*
 * bench_perfetto_query.c - the Perfetto export and mprof query on one capture, in one run: trace
 * bytes per zone against the Chrome JSON of the same capture, export events per second, and the
 * query database's build (materialization) in zones per second with its peak memory.
 *
 * Without --capture it records one with tests/view_demo (about --zones zones; default 5 M). Each
 * command runs as a child of this program (the real mprof binary), timed by wall clock and by
 * the child's own CPU time and peak RSS (wait4), so the figures are the command's. The load
 * average is printed beside them: on a shared machine compare the ratios, not the seconds.
 * Prints one JSON line per command and a summary line.
 *
 * usage: bench_perfetto_query [--mprof PATH] [--demo VIEW_DEMO] [--capture FILE] [--zones N]
 */
#define _DEFAULT_SOURCE
#include "format/format.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double load1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

typedef struct run {
    double wall_s, cpu_s, rss_mb;
    int status;
} run;

/* Runs argv as a child, its output to out_path (NULL: /dev/null). */
static run child(char *const argv[], const char *out_path)
{
    run r = {0};
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        FILE *o = freopen(out_path ? out_path : "/dev/null", "w", stdout);
        (void)o;
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) < 0) {
        r.status = -1;
        return r;
    }
    r.wall_s = now_s() - t0;
    r.cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
              (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    r.rss_mb = (double)ru.ru_maxrss / 1024.0;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

static long long file_bytes(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

int main(int argc, char **argv)
{
    const char *mprof = "build/mprof", *demo = NULL, *capture = NULL;
    double zones_wanted = 5e6;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc)
            zones_wanted = -1;
        else if (strcmp(argv[i], "--mprof") == 0)
            mprof = argv[i + 1];
        else if (strcmp(argv[i], "--demo") == 0)
            demo = argv[i + 1];
        else if (strcmp(argv[i], "--capture") == 0)
            capture = argv[i + 1];
        else if (strcmp(argv[i], "--zones") == 0)
            zones_wanted = atof(argv[i + 1]);
        else
            zones_wanted = -1;
        if (zones_wanted < 0) {
            fprintf(stderr, "usage: bench_perfetto_query [--mprof PATH] [--demo VIEW_DEMO] "
                            "[--capture FILE] [--zones N]\n");
            return 2;
        }
    }
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char cap[2048], demo_path[2048], cmd[8192];
    if (!capture) {
        if (!demo) {
            const char *slash = strrchr(mprof, '/');
            snprintf(demo_path, sizeof demo_path, "%.*stests/view_demo",
                     slash ? (int)(slash - mprof + 1) : 0, mprof);
            demo = demo_path;
        }
        snprintf(cap, sizeof cap, "%s/mprof-bench-pq-%ld.mprof", tmp, (long)getpid());
        long frames = 1000, tiny = (long)(zones_wanted / (double)frames) - 60;
        snprintf(cmd, sizeof cmd, "%s %s %ld %ld > /dev/null 2>&1", demo, cap, frames,
                 tiny < 1 ? 1 : tiny);
        if (system(cmd) != 0) {
            fprintf(stderr, "bench_perfetto_query: %s failed\n", cmd);
            return 3;
        }
        capture = cap;
    }
    /* The capture's events and zones, from the reader itself. */
    char err[512];
    mprof_reader *r = mprof_reader_open(capture, err, sizeof err);
    if (!r) {
        fprintf(stderr, "bench_perfetto_query: %s\n", err);
        return 3;
    }
    mprof_event ev;
    uint64_t events = 0, zones = 0;
    while (mprof_reader_next(r, &ev) == 1) {
        events += mprof_event_counted(ev.type);
        zones += ev.type == MPROF_EV_ZONE_BEGIN || ev.type == MPROF_EV_GPU_ZONE_BEGIN;
    }
    mprof_reader_close(r);
    char json[2100], pf[2100], db[2100];
    snprintf(json, sizeof json, "%s/mprof-bench-pq-%ld.json", tmp, (long)getpid());
    snprintf(pf, sizeof pf, "%s/mprof-bench-pq-%ld.pftrace", tmp, (long)getpid());
    snprintf(db, sizeof db, "%s/mprof-bench-pq-%ld.qdb", tmp, (long)getpid());
    char *cap_arg = (char *)capture;
    char *chrome_argv[] = {(char *)mprof, "export", cap_arg, "--format", "chrome", "-o", json, NULL};
    char *pf_argv[] = {(char *)mprof, "export", cap_arg, "--format", "perfetto", "-o", pf, NULL};
    char *q_argv[] = {(char *)mprof, "query", cap_arg, "--rebuild", "--db", db,
                      "SELECT count(*) FROM zones", NULL};
    double l0 = load1();
    run rc = child(chrome_argv, NULL);
    run rp = child(pf_argv, NULL);
    run rq = child(q_argv, NULL);
    double l1 = load1();
    if (rc.status || rp.status || rq.status) {
        fprintf(stderr, "bench_perfetto_query: a command failed (%d %d %d)\n", rc.status,
                rp.status, rq.status);
        return 3;
    }
    long long jb = file_bytes(json), pb = file_bytes(pf), qb = file_bytes(db);
    printf("{\"bench\":\"perfetto_query\",\"capture\":\"%s\",\"capture_bytes\":%lld,\"events\":%llu,"
           "\"zones\":%llu,\"load1_before\":%.2f,\"load1_after\":%.2f}\n",
           capture, file_bytes(capture), (unsigned long long)events, (unsigned long long)zones,
           l0, l1);
    const struct {
        const char *name;
        run *r;
        long long bytes;
    } rows[] = {{"export_chrome", &rc, jb}, {"export_perfetto", &rp, pb}, {"query_build", &rq, qb}};
    for (int i = 0; i < 3; i++)
        printf("{\"command\":\"%s\",\"wall_s\":%.3f,\"cpu_s\":%.3f,\"peak_rss_mb\":%.1f,"
               "\"output_bytes\":%lld,\"bytes_per_zone\":%.2f,\"events_per_s\":%.0f,"
               "\"zones_per_s\":%.0f}\n",
               rows[i].name, rows[i].r->wall_s, rows[i].r->cpu_s, rows[i].r->rss_mb,
               rows[i].bytes, zones ? (double)rows[i].bytes / (double)zones : 0,
               (double)events / rows[i].r->wall_s, (double)zones / rows[i].r->wall_s);
    printf("{\"summary\":\"perfetto_vs_chrome\",\"size_ratio\":%.2f,\"perfetto_bytes_per_zone\":%.2f,"
           "\"chrome_bytes_per_zone\":%.2f,\"perfetto_speed_vs_chrome\":%.2f,"
           "\"query_zones_per_s\":%.0f,\"query_peak_rss_mb\":%.1f}\n",
           pb > 0 ? (double)jb / (double)pb : 0, zones ? (double)pb / (double)zones : 0,
           zones ? (double)jb / (double)zones : 0, rp.wall_s > 0 ? rc.wall_s / rp.wall_s : 0,
           (double)zones / rq.wall_s, rq.rss_mb);
    unlink(json);
    unlink(pf);
    unlink(db);
    if (capture == cap)
        unlink(cap);
    return 0;
}
