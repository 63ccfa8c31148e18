/*
 * bench_read.c - how fast the tools read captures: `mprof report`, the frame export, the Chrome
 * and Perfetto exports and the served viewer's index build, each as events a second and as a ratio to the
 * floor, `zstd -d` of the same chunks' payloads, measured in the same run; with --jobs 1 (one
 * core) and --jobs N (all cores), and each command's peak memory. Optionally the same commands
 * of another mprof (--base) side by side, and what `mprof ci` spends exporting and gating a
 * 2,000 frames/s program against the program's own run time.
 *
 * The capture is bench_core's (20 M flat zones from one thread, 40 M events, recorded here)
 * unless --capture names others (a real program's). Each figure is the best of --reps runs,
 * interleaved; wall time is the figure (CPU time, user + system of the whole command, is printed
 * beside it), and the load average is printed at the start and the end: a busy machine makes
 * every figure slower, and the ratios to the floor taken in the same run are what compare.
 * Prints one JSON object per line.
 *
 * usage: bench_read [--mprof PATH] [--base PATH] [--capture FILE]... [--zones N] [--reps N]
 *                   [--jobs N] [--dir DIR] [--no-index] [--no-ci] [--ci-seconds S]
 *                   [--base-program PATH]
 *        bench_read --frame-loop SECONDS   (the 2,000 frames/s program mprof ci runs)
 *        bench_read [--zones N] --record FILE  (only records the flat capture, for a profiler)
 *
 * The base runs without --jobs (an mprof that may not know it), so at its own default: "jobs":0
 * in the output.
 *
 * --base-program: the frame loop built with the --base mprof's library (this program built
 * from that tree), for the base's mprof ci: a capture is read by the mprof of its library.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MPROF_ENABLE 1
#include "mprof/mprof.h"
#include "format/format.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *mprof_bin = "mprof", *base_bin = NULL, *dir = "/tmp", *base_program = NULL;
static int reps = 3, jobs_all = 0, do_index = 1, do_ci = 1;
static double ci_seconds = 3.0;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void loadavg(char *out, size_t n)
{
    FILE *f = fopen("/proc/loadavg", "r");
    out[0] = 0;
    if (f) {
        if (fgets(out, (int)n, f))
            out[strcspn(out, " ")] = 0; /* the one-minute figure */
        fclose(f);
    }
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

typedef struct result {
    double wall, cpu; /* seconds */
    long rss_kib;
    int ok;
} result;

/* Runs argv with stdout to out_path (or /dev/null); until_line: stop it (SIGINT) once its stdout
 * has a line, as `mprof view --serve` prints its URL when the index is built. The peak memory is
 * read from /proc while it runs: getrusage's figure would include this process's memory that the
 * child shares until its exec. */
static result run(char *const argv[], const char *out_path, int until_line)
{
    result r = {0, 0, -1, 0};
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s/bench-read-%ld.out", dir, (long)getpid());
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, until_line ? tmp : out_path ? out_path : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    double t0 = now_s();
    pid_t pid;
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return r;
    }
    posix_spawn_file_actions_destroy(&fa);
    int st = 0, stopped = 0;
    struct rusage ru;
    for (;;) {
        long k = vm_hwm_kib(pid);
        if (k > 0)
            r.rss_kib = k;
        pid_t w = wait4(pid, &st, WNOHANG, &ru);
        if (w == pid || w < 0)
            break;
        if (until_line && !stopped) {
            struct stat s;
            if (stat(tmp, &s) == 0 && s.st_size > 0) {
                r.wall = now_s() - t0;
                kill(pid, SIGINT);
                stopped = 1;
            }
        }
        struct timespec d = {0, 1000 * 1000};
        nanosleep(&d, NULL);
    }
    if (!until_line)
        r.wall = now_s() - t0;
    r.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    r.ok = until_line ? stopped : WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (until_line)
        unlink(tmp);
    return r;
}

/* The capture's events and the payloads of its EVENTS chunks, stored as they are (zstd frames),
 * written one after another to zst_path: what `zstd -d` decompresses as the floor. */
static int payloads(const char *capture, const char *zst_path, uint64_t *events, uint64_t *raw)
{
    char err[512];
    mprof_reader *r = mprof_reader_open(capture, err, sizeof err);
    if (!r) {
        fprintf(stderr, "bench_read: %s\n", err);
        return -1;
    }
    mprof_event ev;
    while (mprof_reader_next(r, &ev) == 1)
        ;
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    *events = st.events;
    mprof_reader_close(r);
    FILE *in = fopen(capture, "rb"), *out = fopen(zst_path, "wb");
    unsigned char h[MPROF_FMT_CHUNK_HEADER_BYTES];
    *raw = 0;
    if (!in || !out || fseek(in, MPROF_FMT_HEADER_BYTES, SEEK_SET) != 0) {
        if (in)
            fclose(in);
        if (out)
            fclose(out);
        return -1;
    }
    unsigned char *buf = NULL;
    while (fread(h, 1, sizeof h, in) == sizeof h) {
        int kind, codec;
        uint32_t stored, rawlen;
        if (mprof_fmt_check_chunk_header(h, &kind, &codec, &stored, &rawlen))
            break;
        unsigned char *nb = realloc(buf, stored ? stored : 1);
        if (!nb || fread(nb, 1, stored, in) != stored) {
            buf = nb ? nb : buf;
            break;
        }
        buf = nb;
        if (kind == MPROF_CHUNK_EVENTS && codec == MPROF_CODEC_ZSTD) {
            fwrite(buf, 1, stored, out);
            *raw += rawlen;
        }
    }
    free(buf);
    fclose(in);
    return fclose(out) == 0 ? 0 : -1;
}

static void best(result *b, result r)
{
    if (!r.ok)
        return;
    if (!b->ok || r.wall < b->wall)
        *b = r;
}

/* The bench_core capture: n zones from one thread, in a child (this process's profiler then
 * starts and stops cleanly). */
static int record_flat(const char *path, uint64_t n)
{
    pid_t pid = fork();
    if (pid == 0) {
        mprof_config cfg = {0};
        cfg.capture_path = path;
        cfg.listen = MPROF_TOGGLE_OFF;
        cfg.memory_limit_bytes = (size_t)6 << 30;
        setenv("MPROF_LISTEN", "0", 1);
        if (mprof_startup(&cfg) != MPROF_OK)
            _exit(1);
        for (uint64_t i = 0; i < n; i++) {
            MPROF_ZONE("flat");
        }
        mprof_shutdown();
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static volatile uint64_t sink;

/* The program mprof ci runs: frames of 30 systems x 20 zones, each zone about 0.8 us of fixed
 * work (about 2,000 frames a second on this machine class), a frame mark and two plots a frame,
 * for the given seconds. */
static int frame_loop(double seconds)
{
    uint64_t x = 1;
    double t_end = now_s() + seconds;
    for (long f = 0; now_s() < t_end; f++) {
        for (int s = 0; s < 30; s++) {
            MPROF_ZONE("system");
            for (int z = 0; z < 19; z++) {
                MPROF_ZONE("item");
                for (int i = 0; i < 560; i++)
                    x = x * 6364136223846793005ull + 1442695040888963407ull;
            }
        }
        MPROF_PLOT_INT("frame", f);
        MPROF_PLOT("x", (double)(x >> 40));
        MPROF_FRAME_MARK();
    }
    sink = x;
    mprof_shutdown();
    return 0;
}

/* The value of a "key": number in a JSON file, or -1. */
static double json_number(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? strtod(p + strlen(pat), NULL) : -1;
}

/* mprof ci on the frame loop: the export's and the gate's seconds against the command's. The
 * first ci run makes the baseline, the second is measured. */
static void bench_ci(const char *self, const char *bin, const char *tool)
{
    char d[1100], secs[32], base[1200], cmd[2400];
    snprintf(d, sizeof d, "%s/bench-read-ci-%ld", dir, (long)getpid());
    snprintf(secs, sizeof secs, "%.1f", ci_seconds);
    snprintf(base, sizeof base, "%s/base", d);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", d, base);
    if (system(cmd) != 0)
        return;
    char *argv1[] = {(char *)bin, "ci", "--runs", "1", "--output-dir", d, "--",
                     (char *)self, "--frame-loop", secs, NULL};
    result r1 = run(argv1, NULL, 0);
    snprintf(cmd, sizeof cmd, "cp '%s'/current/*.json '%s'/", d, base);
    if (!r1.ok || system(cmd) != 0) {
        printf("{\"bench\":\"ci\",\"tool\":\"%s\",\"error\":\"the first mprof ci run failed\"}\n", tool);
        return;
    }
    char *argv2[] = {(char *)bin, "ci", "--runs", "1", "--output-dir", d, "--baseline", base,
                     "--", (char *)self, "--frame-loop", secs, NULL};
    result r2 = run(argv2, NULL, 0);
    char rep[1200], la[32];
    snprintf(rep, sizeof rep, "%s/ci-report.json", d);
    double cs = json_number(rep, "commandSeconds"), es = json_number(rep, "exportSeconds"),
           gs = json_number(rep, "gateSeconds"), fr = json_number(rep, "frameCount");
    loadavg(la, sizeof la);
    printf("{\"bench\":\"ci\",\"tool\":\"%s\",\"ok\":%s,\"frames\":%.0f,\"frames_per_s\":%.0f,"
           "\"command_s\":%.3f,\"export_s\":%.3f,\"gate_s\":%.3f,"
           "\"export_and_gate_share_of_command\":%.3f,\"loadavg\":%s}\n",
           tool, r2.ok ? "true" : "false", fr, cs > 0 ? fr / cs : 0, cs, es, gs,
           cs > 0 ? (es + gs) / cs : -1, la);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_read: cannot remove %s\n", d);
}

typedef struct what {
    const char *name;
    int index; /* the served viewer's index: stop at the URL */
} what;

/* The command line of what for bin with jobs (0: no --jobs, the base binary's way). */
static int argv_of(const what *w, const char *bin, int jobs, const char *capture,
                   const char *index_path, char *jobs_s, char *argv[16])
{
    int n = 0;
    argv[n++] = (char *)bin;
    if (strcmp(w->name, "report") == 0) {
        argv[n++] = "report";
        argv[n++] = "--json";
    } else if (strcmp(w->name, "index") == 0) {
        argv[n++] = "view";
        argv[n++] = "--serve";
        argv[n++] = "--port";
        argv[n++] = "0";
        argv[n++] = "--index";
        argv[n++] = (char *)index_path;
    } else {
        argv[n++] = "export";
        argv[n++] = "--format";
        argv[n++] = strcmp(w->name, "frames_export") == 0   ? "frames"
                    : strcmp(w->name, "perfetto_export") == 0 ? "perfetto"
                                                              : "chrome";
        argv[n++] = "-o";
        argv[n++] = "/dev/null";
    }
    if (jobs) {
        argv[n++] = "--jobs";
        argv[n++] = jobs_s;
    }
    argv[n++] = (char *)capture;
    argv[n] = NULL;
    return n;
}

static void bench_capture(const char *capture)
{
    char zst[1100], la0[32], la1[32];
    uint64_t events = 0, raw = 0;
    snprintf(zst, sizeof zst, "%s/bench-read-%ld.zst", dir, (long)getpid());
    if (payloads(capture, zst, &events, &raw) != 0) {
        printf("{\"bench\":\"read\",\"capture\":\"%s\",\"error\":\"cannot read it\"}\n", capture);
        return;
    }
    struct stat cs;
    stat(capture, &cs);
    loadavg(la0, sizeof la0);
    char index_path[1100];
    snprintf(index_path, sizeof index_path, "%s/bench-read-%ld.vidx", dir, (long)getpid());
    const what whats[] = {{"report", 0},          {"frames_export", 0}, {"chrome_export", 0},
                          {"perfetto_export", 0}, {"index", 1}};
    const int n_whats = do_index ? 5 : 4; /* the index last */
    int jobs[2] = {1, jobs_all};
    result floor = {0}, res[5][3];
    memset(res, 0, sizeof res);
    for (int rep = 0; rep < reps; rep++) {
        char *zargv[] = {"zstd", "-d", "-q", "-c", zst, NULL};
        char zstd_path[] = "/usr/bin/zstd";
        zargv[0] = zstd_path;
        best(&floor, run(zargv, NULL, 0));
        for (int k = 0; k < n_whats; k++) {
            for (int t = 0; t < 3; t++) {
                const char *bin = t < 2 ? mprof_bin : base_bin;
                if (!bin)
                    continue;
                char js[16], *argv[16];
                snprintf(js, sizeof js, "%d", t < 2 ? jobs[t] : 0);
                argv_of(&whats[k], bin, t < 2 ? jobs[t] : 0, capture, index_path, js, argv);
                unlink(index_path);
                best(&res[k][t], run(argv, NULL, whats[k].index));
            }
        }
    }
    unlink(index_path);
    unlink(zst);
    loadavg(la1, sizeof la1);
    printf("{\"bench\":\"read_floor\",\"capture\":\"%s\",\"events\":%llu,\"file_bytes\":%lld,"
           "\"payload_bytes\":%llu,\"zstd_d_s\":%.4f,\"zstd_d_events_per_s\":%.0f,"
           "\"loadavg_start\":%s,\"loadavg_end\":%s}\n",
           capture, (unsigned long long)events, (long long)cs.st_size, (unsigned long long)raw,
           floor.wall, floor.wall > 0 ? (double)events / floor.wall : 0, la0, la1);
    for (int k = 0; k < n_whats; k++)
        for (int t = 0; t < 3; t++) {
            const result *r = &res[k][t];
            if (t == 2 && !base_bin)
                continue;
            if (!r->ok) {
                printf("{\"bench\":\"read\",\"what\":\"%s\",\"tool\":\"%s\",\"error\":\"failed\"}\n",
                       whats[k].name, t < 2 ? "new" : "base");
                continue;
            }
            printf("{\"bench\":\"read\",\"what\":\"%s\",\"tool\":\"%s\",\"jobs\":%d,"
                   "\"seconds\":%.4f,\"cpu_seconds\":%.4f,\"events_per_s\":%.0f,"
                   "\"ratio_to_zstd_d\":%.2f,\"peak_rss_kib\":%ld}\n",
                   whats[k].name, t < 2 ? "new" : "base", t < 2 ? jobs[t] : 0, r->wall, r->cpu,
                   (double)events / r->wall, floor.wall > 0 ? r->wall / floor.wall : 0,
                   r->rss_kib);
        }
}

int main(int argc, char **argv)
{
    const char *captures[16];
    int n_captures = 0;
    uint64_t zones = 20000000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--frame-loop") == 0 && v)
            return frame_loop(atof(v));
        if (strcmp(a, "--record") == 0 && v)
            return record_flat(v, zones) == 0 ? 0 : 1;
        if (strcmp(a, "--no-index") == 0) {
            do_index = 0;
            continue;
        }
        if (strcmp(a, "--no-ci") == 0) {
            do_ci = 0;
            continue;
        }
        if (!v) {
            fprintf(stderr, "usage: bench_read [--mprof PATH] [--base PATH] [--capture FILE]... "
                            "[--zones N] [--reps N] [--jobs N] [--dir DIR] [--no-index] "
                            "[--no-ci] [--ci-seconds S]\n");
            return 2;
        }
        i++;
        if (strcmp(a, "--mprof") == 0)
            mprof_bin = v;
        else if (strcmp(a, "--base") == 0)
            base_bin = v;
        else if (strcmp(a, "--capture") == 0 && n_captures < 16)
            captures[n_captures++] = v;
        else if (strcmp(a, "--zones") == 0)
            zones = strtoull(v, NULL, 10);
        else if (strcmp(a, "--reps") == 0)
            reps = atoi(v) > 0 ? atoi(v) : 1;
        else if (strcmp(a, "--jobs") == 0)
            jobs_all = atoi(v);
        else if (strcmp(a, "--dir") == 0)
            dir = v;
        else if (strcmp(a, "--ci-seconds") == 0)
            ci_seconds = atof(v);
        else if (strcmp(a, "--base-program") == 0)
            base_program = v;
        else {
            fprintf(stderr, "bench_read: unknown option %s\n", a);
            return 2;
        }
    }
    if (jobs_all <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        jobs_all = n > 0 ? (int)n : 1;
    }
    char flat[1100] = "";
    int recorded = !n_captures;
    if (recorded) {
        snprintf(flat, sizeof flat, "%s/bench-read-%ld-flat.mprof", dir, (long)getpid());
        if (record_flat(flat, zones) != 0) {
            fprintf(stderr, "bench_read: cannot record %s\n", flat);
            return 1;
        }
        captures[n_captures++] = flat;
    }
    for (int i = 0; i < n_captures; i++)
        bench_capture(captures[i]);
    if (recorded)
        unlink(flat);
    if (do_ci) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
            self[n] = 0;
            bench_ci(self, mprof_bin, "new");
            if (base_bin && base_program)
                bench_ci(base_program, base_bin, "base");
        }
    }
    return 0;
}
