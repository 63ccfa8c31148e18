/*
 * bench_view_index.c - the index of `mprof view --serve`: its size per zone (and where the bytes
 * go), its build rate in zones per second against a baseline taken in the same run (one plain
 * read of the capture, which the build cannot be faster than), and the time to answer a zoom
 * step (the page's /api/zones at 1600 pixels) and range statistics on a big capture.
 *
 * Without --capture it records one with tests/view_demo: frames x tiny zones, about --zones zones
 * (default 15 M), or with --deep N a recursion N deep in each of --frames frames (the shape of a
 * game's render walk). It builds the index --repeat times (default 1; the best is kept, each with
 * its read baseline just before), then zooms from the whole capture into its middle by a factor
 * of 0.6 a step down to about 10 us, and pans once at each scale, answering each view as the
 * server would (into /dev/null), and asks the statistics of a few ranges. Prints JSON lines: the
 * build, where the bytes go, one per zoom step, a zoom summary with the worst and median step,
 * and the statistics.
 *
 * The first step is the cold one: the index was just written, so its blocks are in the page cache
 * but not yet in the answer's reader. --no-lod answers from the zones themselves (lod=0).
 *
 * usage: bench_view_index [--mprof PATH] [--demo VIEW_DEMO] [--capture FILE] [--zones N]
 *                         [--deep N --frames F] [--repeat R] [--no-lod]
 */
#define _POSIX_C_SOURCE 200809L
#include "format/format.h"
#include "view/index.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One plain read of the capture (decoding every event), the build's floor. Seconds of CPU. */
static double read_pass(const char *path, uint64_t *events)
{
    char err[512];
    double c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    *events = 0;
    if (!r)
        return -1;
    mprof_event ev;
    while (mprof_reader_next(r, &ev) == 1)
        (*events)++;
    mprof_reader_close(r);
    return now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
}

int main(int argc, char **argv)
{
    const char *mprof = "build/mprof", *demo = NULL, *capture = NULL;
    double zones_wanted = 15e6;
    int no_lod = 0, deep = 0, frames_wanted = 0, repeat = 1;
    for (int i = 1; i < argc; i += 2) {
        if (strcmp(argv[i], "--no-lod") == 0) {
            no_lod = 1; /* answer from the zones, not the tiers of detail (as /api/zones?lod=0) */
            i--;
        } else if (i + 1 >= argc)
            zones_wanted = -1;
        else if (strcmp(argv[i], "--mprof") == 0)
            mprof = argv[i + 1];
        else if (strcmp(argv[i], "--demo") == 0)
            demo = argv[i + 1];
        else if (strcmp(argv[i], "--capture") == 0)
            capture = argv[i + 1];
        else if (strcmp(argv[i], "--zones") == 0)
            zones_wanted = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--deep") == 0)
            deep = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--frames") == 0)
            frames_wanted = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--repeat") == 0)
            repeat = atoi(argv[i + 1]);
        else
            zones_wanted = -1;
        if (zones_wanted < 0 || repeat < 1 || deep < 0) {
            fprintf(stderr, "usage: bench_view_index [--mprof PATH] [--demo VIEW_DEMO] [--capture FILE] [--zones N] "
                            "[--deep N --frames F] [--repeat R] [--no-lod]\n");
            return 2;
        }
    }
    char cap[2048], demo_path[2048], cmd[8192], idx[2100];
    if (!capture) {
        if (!demo) {
            const char *slash = strrchr(mprof, '/');
            snprintf(demo_path, sizeof demo_path, "%.*stests/view_demo", slash ? (int)(slash - mprof + 1) : 0, mprof);
            demo = demo_path;
        }
        snprintf(cap, sizeof cap, "%s/mprof-bench-view-%ld.mprof", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                 (long)getpid());
        /* view_demo writes about tiny + 60 zones a frame. */
        long frames = 1000, tiny = (long)(zones_wanted / (double)frames) - 60;
        if (tiny < 1)
            tiny = 1;
        if (deep)
            snprintf(cmd, sizeof cmd, "%s %s %d 1 deep=%d > /dev/null 2>&1", demo, cap, frames_wanted ? frames_wanted : 4823,
                     deep);
        else
            snprintf(cmd, sizeof cmd, "%s %s %ld %ld > /dev/null 2>&1", demo, cap, frames, tiny);
        double t = now_s(CLOCK_MONOTONIC);
        if (system(cmd) != 0) {
            fprintf(stderr, "bench_view_index: '%s' failed\n", cmd);
            return 3;
        }
        fprintf(stderr, "bench_view_index: recorded %s in %.1f s\n", cap, now_s(CLOCK_MONOTONIC) - t);
        capture = cap;
    }
    snprintf(idx, sizeof idx, "%s.bench.vidx", capture);
    char err[512];
    double wall = 1e30, cpu = 1e30, base = 1e30, best_ratio = 1e30;
    uint64_t events = 0;
    for (int k = 0; k < repeat; k++) {
        double rd = read_pass(capture, &events); /* the baseline, just before: the same load */
        double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        if (mprof__vindex_build(capture, idx, err, sizeof err) != 0) {
            fprintf(stderr, "bench_view_index: %s\n", err);
            return 3;
        }
        double w = now_s(CLOCK_MONOTONIC) - w0, c = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (c < cpu) {
            cpu = c;
            wall = w;
        }
        if (rd > 0 && rd < base)
            base = rd;
        if (rd > 0 && c / rd < best_ratio)
            best_ratio = c / rd;
    }
    mprof_vindex *x = mprof__vindex_open(capture, idx, NULL, err, sizeof err);
    if (!x) {
        fprintf(stderr, "bench_view_index: %s\n", err);
        return 3;
    }
    double mz = (double)mprof__vindex_zone_count(x) / 1e6;
    uint64_t runs = 0, tiers = mprof__vindex_tier_count(x, &runs);
    printf("{\"bench\":\"view_index_build\",\"zones\":%llu,\"events\":%llu,\"index_bytes\":%llu,"
           "\"bytes_per_zone\":%.2f,\"build_wall_s\":%.3f,\"build_cpu_s\":%.3f,\"build_zones_per_s\":%.0f,"
           "\"read_cpu_s\":%.3f,\"read_zones_per_s\":%.0f,\"build_over_read\":%.2f,\"repeat\":%d,\"tiers\":%llu,"
           "\"tier_runs\":%llu}\n",
           (unsigned long long)mprof__vindex_zone_count(x), (unsigned long long)events,
           (unsigned long long)mprof__vindex_size_bytes(x), (double)mprof__vindex_size_bytes(x) / (mz * 1e6), wall, cpu,
           mz * 1e6 / cpu, base, mz * 1e6 / base, best_ratio, repeat, (unsigned long long)tiers, (unsigned long long)runs);
    mprof_vindex_parts pa;
    mprof__vindex_parts(x, &pa);
    double zn = (double)mprof__vindex_zone_count(x);
    printf("{\"bench\":\"view_index_parts\",\"zones_bytes_per_zone\":%.2f,\"tiers_bytes_per_zone\":%.2f,"
           "\"plots_bytes\":%llu,\"messages_bytes\":%llu,\"images_bytes\":%llu,\"directory_bytes\":%llu,"
           "\"meta_bytes\":%llu,\"system_bytes\":%llu}\n",
           (double)pa.zones / zn, (double)pa.tiers / zn, (unsigned long long)pa.plots, (unsigned long long)pa.messages,
           (unsigned long long)pa.images, (unsigned long long)pa.directory, (unsigned long long)pa.meta,
           (unsigned long long)pa.system);
    /* The whole span, from the metadata. */
    mprof_vquery q;
    memset(&q, 0, sizeof q);
    q.kind = MPROF_VQ_META;
    char *meta = NULL;
    size_t ml = 0;
    FILE *m = open_memstream(&meta, &ml);
    mprof__vindex_answer(x, &q, m, err, sizeof err);
    fclose(m);
    const char *e = strstr(meta, "\"end_ns\":");
    long long end = e ? atoll(e + 9) : 1000000000;
    free(meta);
    FILE *null = fopen("/dev/null", "w");
    double steps[256], worst = 0;
    int n = 0;
    double span = (double)end, c = (double)end / 2;
    while (span > 1e4 && n < 250) {
        for (int pan = 0; pan < 2 && n < 250; pan++) {
            memset(&q, 0, sizeof q);
            q.kind = MPROF_VQ_ZONES;
            double center = c + pan * span * 0.25;
            q.t0 = (int64_t)(center - span / 2);
            q.t1 = (int64_t)(center + span / 2) + 1;
            q.w = 1600;
            q.has_t = 1;
            q.no_lod = no_lod;
            double t = now_s(CLOCK_MONOTONIC), tc = now_s(CLOCK_PROCESS_CPUTIME_ID);
            if (mprof__vindex_answer(x, &q, null, err, sizeof err) != 0) {
                fprintf(stderr, "bench_view_index: %s\n", err);
                return 3;
            }
            double dt = (now_s(CLOCK_MONOTONIC) - t) * 1e3, dc = (now_s(CLOCK_PROCESS_CPUTIME_ID) - tc) * 1e3;
            printf("{\"bench\":\"view_index_zoom_step\",\"span_ns\":%.0f,\"pan\":%d,\"wall_ms\":%.2f,\"cpu_ms\":%.2f}\n",
                   span, pan, dt, dc);
            steps[n++] = dc;
            if (dc > worst)
                worst = dc;
        }
        span *= 0.6;
    }
    qsort(steps, (size_t)n, sizeof steps[0], cmp_d);
    printf("{\"bench\":\"view_index_zoom\",\"zones\":%llu,\"steps\":%d,\"median_cpu_ms\":%.2f,\"worst_cpu_ms\":%.2f,"
           "\"target_ms\":100}\n",
           (unsigned long long)mprof__vindex_zone_count(x), n, steps[n / 2], worst);
    /* Statistics: the whole capture (the build's figures) and ranges of a tenth, a hundredth and a
     * thousandth of it (read from the levels, the recursion rule of a range). */
    for (int k = 0; k < 4; k++) {
        double frac = k == 0 ? 1.0 : k == 1 ? 0.1 : k == 2 ? 0.01 : 0.001;
        memset(&q, 0, sizeof q);
        q.kind = MPROF_VQ_STATS;
        q.has_t = 1;
        q.t0 = k == 0 ? -1 : (int64_t)(c - (double)end * frac / 2);
        q.t1 = k == 0 ? end + 1 : (int64_t)(c + (double)end * frac / 2) + 1;
        double tc = now_s(CLOCK_PROCESS_CPUTIME_ID);
        if (mprof__vindex_answer(x, &q, null, err, sizeof err) != 0) {
            fprintf(stderr, "bench_view_index: %s\n", err);
            return 3;
        }
        printf("{\"bench\":\"view_index_stats\",\"range\":%.3f,\"cpu_ms\":%.2f}\n", frac,
               (now_s(CLOCK_PROCESS_CPUTIME_ID) - tc) * 1e3);
    }
    fclose(null);
    mprof__vindex_close(x);
    unlink(idx);
    if (capture == cap)
        unlink(cap);
    return 0;
}
