/*
 * test_export.c - `mprof export` (Chrome Trace Event JSON, CSV) and `mprof diff` on real
 * captures made by view_demo. The Chrome output is checked against the Trace Event format's
 * rules: known phases, microsecond ts/dur, pid/tid on every event, complete events that nest on
 * each thread, thread_name metadata for every thread used, counters with numeric args.
 */
#include "export/export.h"
#include "mprof/mprof.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char out[1 << 24]; /* a Chrome export of a TSan-slowed capture with system tracing passes 1 MiB */
static char cap_a[512], cap_b[512];
static tu_counts counts_a;

static int run(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", tu_mprof_bin(), args);
    return tu_run(cmd, out, sizeof out);
}

static const char *demo_bin(void)
{
    const char *d = getenv("MPROF_VIEW_DEMO");
    return d ? d : "tests/view_demo";
}

static int make_capture(const char *path, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s 2>&1", demo_bin(), path, args);
    return tu_run(cmd, out, sizeof out);
}

static int setup(void **state)
{
    (void)state;
    snprintf(cap_a, sizeof cap_a, "%s", tu_temp_path("export_a.mprof"));
    snprintf(cap_b, sizeof cap_b, "%s", tu_temp_path("export_b.mprof"));
    if (make_capture(cap_a, "60 40") != 0 || make_capture(cap_b, "60 40 slow") != 0)
        return -1;
    return tu_count_capture(cap_a, &counts_a);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    if (len)
        *len = (size_t)n;
    return s;
}

/* ---- Chrome Trace Event format ------------------------------------------------------------ */

typedef struct xev {
    double pid, tid, ts, dur;
} xev;

static int cmp_xev(const void *a, const void *b)
{
    const xev *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->dur > y->dur ? -1 : x->dur < y->dur;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    assert_non_null(v);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* Checks the rules and returns counts by category through the out parameters. */
static void validate_chrome(const char *json, size_t *out_zones, size_t *out_gpu, size_t *out_msgs,
                            size_t *out_counters, size_t *out_frames, double *out_physics_us)
{
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    assert_true(cJSON_IsArray(evs));
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(root, "displayTimeUnit");
    assert_true(cJSON_IsString(unit) && strcmp(unit->valuestring, "ns") == 0);
    size_t n = (size_t)cJSON_GetArraySize(evs), nx = 0;
    xev *xs = calloc(n + 1, sizeof *xs);
    assert_non_null(xs);
    /* (pid, tid) pairs named by thread_name metadata. */
    double named[256][2];
    size_t n_named = 0;
    static double phys[4096];
    size_t n_phys = 0;
    *out_zones = *out_gpu = *out_msgs = *out_counters = *out_frames = 0;
    *out_physics_us = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, evs)
    {
        assert_true(cJSON_IsObject(e));
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        assert_true(cJSON_IsString(ph) && strlen(ph->valuestring) == 1);
        assert_true(cJSON_IsString(name));
        double pid = num(e, "pid");
        assert_true(pid >= 1 && pid == floor(pid));
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        switch (ph->valuestring[0]) {
        case 'X': {
            double ts = num(e, "ts"), dur = num(e, "dur"), tid = num(e, "tid");
            assert_true(ts >= 0 && dur >= 0 && tid == floor(tid));
            xs[nx++] = (xev){pid, tid, ts, dur};
            assert_true(cJSON_IsString(cat));
            if (strcmp(cat->valuestring, "zone") == 0) {
                (*out_zones)++;
                if (strcmp(name->valuestring, "Physics::step") == 0 && n_phys < 4096)
                    phys[n_phys++] = dur;
                const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
                assert_true(cJSON_IsObject(args));
                /* The source location travels with every zone. */
                assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "file")));
                assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(args, "line")));
                assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "function")));
            } else if (strcmp(cat->valuestring, "gpu") == 0)
                (*out_gpu)++;
            else if (strcmp(cat->valuestring, "frame") == 0)
                (*out_frames)++;
            else if (strcmp(cat->valuestring, "thread state") == 0)
                assert_int_equal((int)pid, 5); /* system tracing (docs/SYSTEM.md) */
            else
                assert_string_equal(cat->valuestring, "lock");
            break;
        }
        case 'i': {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "s");
            assert_true(cJSON_IsString(s));
            assert_non_null(strchr("gpt", s->valuestring[0]));
            assert_true(num(e, "ts") >= 0);
            num(e, "tid");
            /* Severity as a name and as the number of mprof_log_level. */
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "level")));
            double sev = num(args, "severity");
            assert_true(sev >= 0 && sev <= 6);
            (*out_msgs)++;
            break;
        }
        case 'C': {
            assert_true(num(e, "ts") >= 0);
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            assert_true(cJSON_IsObject(args) && args->child);
            const cJSON *a;
            cJSON_ArrayForEach(a, args) assert_true(cJSON_IsNumber(a));
            /* One argument, named after the counter: Tracy's importer names plots by the
             * argument key, so a shared key ("value") would merge every plot into one. */
            assert_null(args->child->next);
            assert_string_equal(args->child->string, name->valuestring);
            (*out_counters)++;
            break;
        }
        case 'M': {
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            assert_true(cJSON_IsObject(args));
            if (strcmp(name->valuestring, "thread_name") == 0) {
                assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "name")));
                assert_true(n_named < 256);
                named[n_named][0] = pid;
                named[n_named][1] = num(e, "tid");
                n_named++;
            } else if (strcmp(name->valuestring, "process_name") == 0)
                assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "name")));
            else
                assert_string_equal(name->valuestring, "thread_sort_index");
            break;
        }
        default:
            fail_msg("unexpected phase '%s'", ph->valuestring);
        }
    }
    /* Complete events on one thread must nest: each starts after the enclosing one starts and
     * ends before it ends (1 ns of rounding allowed). Every thread used is named. */
    qsort(phys, n_phys, sizeof *phys, cmp_double);
    *out_physics_us = n_phys ? phys[n_phys / 2] : 0; /* the median: robust to preemption */
    qsort(xs, nx, sizeof *xs, cmp_xev);
    xev stack[256];
    int depth = 0;
    for (size_t i = 0; i < nx; i++) {
        if (i == 0 || xs[i].pid != xs[i - 1].pid || xs[i].tid != xs[i - 1].tid) {
            depth = 0;
            int found = 0;
            for (size_t k = 0; k < n_named; k++)
                found |= named[k][0] == xs[i].pid && named[k][1] == xs[i].tid;
            if (!found)
                fail_msg("pid %.0f tid %.0f has no thread_name", xs[i].pid, xs[i].tid);
        }
        while (depth && stack[depth - 1].ts + stack[depth - 1].dur <= xs[i].ts + 0.001)
            depth--;
        if (depth) {
            const xev *p = &stack[depth - 1];
            if (xs[i].ts + xs[i].dur > p->ts + p->dur + 0.001)
                fail_msg("events overlap on pid %.0f tid %.0f at ts %.3f", xs[i].pid, xs[i].tid, xs[i].ts);
        }
        assert_true(depth < 256);
        stack[depth++] = xs[i];
    }
    /* A tid belongs to one pid only: importers that ignore pid (Tracy's) keep threads apart. */
    for (size_t a = 0; a < n_named; a++)
        for (size_t b = a + 1; b < n_named; b++)
            if (named[a][1] == named[b][1] && named[a][0] != named[b][0])
                fail_msg("tid %.0f used by pids %.0f and %.0f", named[a][1], named[a][0], named[b][0]);
    free(xs);
    cJSON_Delete(root);
}

static void test_chrome_export(void **state)
{
    (void)state;
    const char *json_path = tu_temp_path("trace.json");
    char args[2048];
    snprintf(args, sizeof args, "export --format chrome -o %s %s", json_path, cap_a);
    assert_int_equal(run(args), 0);
    size_t len;
    char *json = slurp(json_path, &len);
    assert_non_null(json);
    size_t zones, gpu, msgs, counters, frames;
    double physics_us;
    validate_chrome(json, &zones, &gpu, &msgs, &counters, &frames, &physics_us);
    free(json);
    /* Every zone, GPU zone, message, plot point and memory change of the capture is there. */
    assert_int_equal(zones, counts_a.by_type[MPROF_EV_ZONE_BEGIN]);
    assert_int_equal(gpu, counts_a.by_type[MPROF_EV_GPU_ZONE_BEGIN]);
    assert_int_equal(msgs, counts_a.by_type[MPROF_EV_MESSAGE]);
    assert_int_equal(counters, counts_a.by_type[MPROF_EV_PLOT_F64] + counts_a.by_type[MPROF_EV_PLOT_I64] +
                                   counts_a.by_type[MPROF_EV_ALLOC] + counts_a.by_type[MPROF_EV_FREE] +
                                   2 * counts_a.by_type[MPROF_EV_SYS_CPU]);
    /* Main frames between marks, plus the named set's begin/end frames. */
    assert_int_equal(frames, counts_a.by_type[MPROF_EV_FRAME_MARK] - 1 + counts_a.by_type[MPROF_EV_FRAME_BEGIN]);
    /* Units: Physics::step spins 300 us, so its median dur in microseconds is about 300. */
    assert_true(physics_us >= 290.0 && physics_us < 3000.0);
}

static void test_chrome_names_and_stdout(void **state)
{
    (void)state;
    char args[2048];
    snprintf(args, sizeof args, "export -f chrome %s", cap_a);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(out, "\"thread_name\""));
    assert_non_null(strstr(out, "\"name\":\"Main\""));
    assert_non_null(strstr(out, "\"name\":\"Worker\""));
    assert_non_null(strstr(out, "\"name\":\"GPU Vulkan queue\""));
    assert_non_null(strstr(out, "\"text\":\"agents="));
    assert_non_null(strstr(out, "\"name\":\"Audio mix (dynamic)\""));
    char color[64];
    snprintf(color, sizeof color, "\"level\":\"error\",\"severity\":5,\"color\":\"#%06x\"",
             (unsigned)mprof_log_level_color(MPROF_LOG_ERROR));
    assert_non_null(strstr(out, color));
}

/* --frames A:B and --time on every format: only what overlaps the frames is written. */
static void test_export_ranges(void **state)
{
    (void)state;
    char args[2048];
    snprintf(args, sizeof args, "export -f chrome --frames 2:4 %s", cap_a);
    assert_int_equal(run(args), 0);
    size_t zones, gpu, msgs, counters, frames;
    double phys;
    validate_chrome(out, &zones, &gpu, &msgs, &counters, &frames, &phys);
    assert_non_null(strstr(out, "\"name\":\"Frame 2\""));
    assert_non_null(strstr(out, "\"name\":\"Frame 3\""));
    assert_null(strstr(out, "\"name\":\"Frame 1\""));
    assert_null(strstr(out, "\"name\":\"Frame 4\""));
    size_t all_zones, all_frames;
    snprintf(args, sizeof args, "export -f chrome %s", cap_a);
    assert_int_equal(run(args), 0);
    validate_chrome(out, &all_zones, &gpu, &msgs, &counters, &all_frames, &phys);
    assert_true(zones > 0 && zones < all_zones);
    assert_true(frames < all_frames);
    /* The frame export of the same range has exactly those two frames. */
    snprintf(args, sizeof args, "export -f frames --frames 2:4 %s", cap_a);
    assert_int_equal(run(args), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    assert_int_equal((int)num(j, "frameCount"), 2);
    assert_int_equal((int)num(cJSON_GetObjectItemCaseSensitive(j, "range"), "firstFrame"), 2);
    cJSON_Delete(j);
    /* CSV: fewer calls in two frames than in the whole capture. */
    snprintf(args, sizeof args, "export -f csv --frames 2:4 %s", cap_a);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(out, "Physics::step,"));
    /* A time window that holds nothing still makes a valid, empty trace. */
    snprintf(args, sizeof args, "export -f chrome --time 1e6:2e6 %s", cap_a);
    assert_int_equal(run(args), 0);
    validate_chrome(out, &zones, &gpu, &msgs, &counters, &frames, &phys);
    assert_int_equal(zones, 0);
    /* Bad ranges are usage errors naming the option; frames past the end are named too. */
    snprintf(args, sizeof args, "export -f chrome --frames 4:2 %s", cap_a);
    assert_int_equal(run(args), 2);
    assert_non_null(strstr(out, "--frames"));
    snprintf(args, sizeof args, "export -f csv --time abc %s", cap_a);
    assert_int_equal(run(args), 2);
    snprintf(args, sizeof args, "export -f csv --frames 100000: %s", cap_a);
    assert_int_equal(run(args), 3);
    assert_non_null(strstr(out, "frames"));
}

/* Splits one CSV record (RFC 4180) into fields; returns the count, fields unquoted. */
static int csv_split(const char *line, char fields[16][128])
{
    int n = 0, len = 0, quoted = 0;
    for (const char *c = line;; c++) {
        if (quoted) {
            if (*c == '"' && c[1] == '"') {
                fields[n][len++] = '"';
                c++;
            } else if (*c == '"')
                quoted = 0;
            else if (!*c)
                return -1;
            else if (len < 127)
                fields[n][len++] = *c;
            continue;
        }
        if (*c == '"')
            quoted = 1;
        else if (*c == ',' || *c == '\n' || !*c) {
            fields[n][len] = 0;
            n++;
            len = 0;
            if (*c != ',' || n == 16)
                return n;
        } else if (len < 127)
            fields[n][len++] = *c;
    }
}

static void test_csv_stats(void **state)
{
    (void)state;
    char args[2048];
    snprintf(args, sizeof args, "export --format csv %s", cap_a);
    assert_int_equal(run(args), 0);
    assert_true(strncmp(out, "name,function,file,line,count,total_ns,self_ns,mean_ns,min_ns,max_ns,"
                             "stddev_ns,p50_ns,p90_ns,p95_ns,p99_ns\n", 95) == 0);
    const char *row = strstr(out, "\nPhysics::step,frame,");
    assert_non_null(row);
    /* name,function,file,line,count,total,self,mean,min,max,stddev,p50,... */
    const char *p = row + 1;
    for (int comma = 0; comma < 4; comma++)
        p = strchr(p, ',') + 1;
    long long count = atoll(p);
    assert_int_equal(count, 60);
    p = strchr(p, ',') + 1;
    long long total = atoll(p);
    p = strchr(p, ',') + 1;
    long long self = atoll(p);
    assert_true(total >= 60LL * 290000 && self == total); /* a leaf: self is all of it */
    p = strchr(p, ',') + 1;
    long long mean = atoll(p);
    assert_true(mean >= 290000 && mean <= total / 60 + 1);
    /* Rows are sorted by total time, largest first. */
    long long prev = -1;
    char f[16][128];
    int rows = 0;
    for (const char *l = strchr(out, '\n') + 1; *l; l = strchr(l, '\n') + 1) {
        assert_int_equal(csv_split(l, f), 15);
        long long t = atoll(f[5]);
        assert_true(prev < 0 || t <= prev);
        prev = t;
        rows++;
    }
    /* The 10 CPU zone sites of view_demo.c, as in `mprof report` (site_stats.h): lock spans are
     * not zones, and "GPU shadow pass" is a GPU zone, timed by the GPU, with figures of its own. */
    assert_int_equal(rows, 10);
    assert_null(strstr(out, "GPU shadow pass"));
}

static void test_csv_per_zone(void **state)
{
    (void)state;
    const char *csv = tu_temp_path("zones.csv");
    char args[2048];
    snprintf(args, sizeof args, "export --format csv --per-zone -o %s %s", csv, cap_a);
    assert_int_equal(run(args), 0);
    char *s = slurp(csv, NULL);
    assert_non_null(s);
    const char *header = "track,kind,name,file,line,start_ns,dur_ns,self_ns,depth,text,value,unfinished\n";
    assert_true(strncmp(s, header, strlen(header)) == 0);
    size_t rows = 0, ai = 0;
    char f[16][128];
    for (char *l = strchr(s, '\n') + 1; *l; l = strchr(l, '\n') + 1) {
        assert_int_equal(csv_split(l, f), 12);
        rows++;
        assert_true(strcmp(f[1], "thread") == 0 || strcmp(f[1], "fiber") == 0 || strcmp(f[1], "gpu") == 0);
        assert_true(atoll(f[6]) >= atoll(f[7])); /* duration >= self */
        if (strcmp(f[2], "AI::think") == 0) {
            /* The zone text has a comma and quotes: quoted and doubled, read back intact. */
            assert_non_null(strstr(f[9], ", \"crowd\""));
            assert_string_equal(f[0], "Main");
            ai++;
        }
        if (!strchr(l, '\n'))
            break;
    }
    free(s);
    assert_int_equal(ai, 60);
    assert_int_equal(rows, counts_a.by_type[MPROF_EV_ZONE_BEGIN] + counts_a.by_type[MPROF_EV_GPU_ZONE_BEGIN]);
}

static void test_error_names_the_file(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    char err[256];
    assert_int_equal(mprof__export_csv_stats("/nonexistent/x.mprof", f, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/x.mprof"));
    assert_int_equal(mprof__export_chrome("/nonexistent/x.mprof", f, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/x.mprof"));
    fclose(f);
}

static void test_export_usage_and_errors(void **state)
{
    (void)state;
    char args[2048];
    assert_int_equal(run("export --help"), 0);
    assert_non_null(strstr(out, "--per-zone"));
    snprintf(args, sizeof args, "export %s", cap_a);
    assert_int_equal(run(args), 2);
    assert_non_null(strstr(out, "--format is required"));
    snprintf(args, sizeof args, "export --format xml %s", cap_a);
    assert_int_equal(run(args), 2);
    snprintf(args, sizeof args, "export --format chrome --per-zone %s", cap_a);
    assert_int_equal(run(args), 2);
    assert_int_equal(run("export --format chrome /nonexistent.mprof"), 3);
    assert_non_null(strstr(out, "/nonexistent.mprof"));
}

/* Regression: a capture that cannot be read emptied an existing output, and a capture that
 * fails halfway left a half-written one that looked whole (then deleted the user's file). */
static void test_failed_export_keeps_or_removes_output(void **state)
{
    (void)state;
    const char *keep = tu_temp_path("export_keep.json");
    char args[2048];
    static const char *const formats[] = {"chrome", "csv"};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(keep, "w");
        assert_non_null(f);
        fputs("keep", f);
        fclose(f);
        snprintf(args, sizeof args, "export --format %s -o %s /nonexistent.mprof", formats[i],
                 keep);
        assert_int_equal(run(args), 3);
        char *s = slurp(keep, NULL);
        assert_non_null(s);
        assert_string_equal(s, "keep");
        free(s);
    }
    /* A corrupt chunk in the middle: the reader fails after part of the export is written. */
    size_t len;
    char *data = slurp(cap_a, &len);
    assert_non_null(data);
    const char *bad = tu_temp_path("export_corrupt.mprof");
    FILE *f = fopen(bad, "wb");
    assert_non_null(f);
    fwrite(data, 1, len / 2, f);
    for (int i = 0; i < 4096; i++)
        fputc(0xff, f);
    fwrite(data + len / 2, 1, len - len / 2, f);
    fclose(f);
    free(data);
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "export --format %s -o %s %s", formats[i], keep, bad);
        assert_int_equal(run(args), 3);
        /* The export is written beside the output and renamed only on success: the existing
         * file survives, as it is. */
        char *s = slurp(keep, NULL);
        assert_non_null(s);
        assert_string_equal(s, "keep");
        free(s);
    }
}

/* Regression: -o naming the capture itself (or a link to it) truncated it before it was read,
 * in every format. */
static void test_output_is_the_capture(void **state)
{
    (void)state;
    const char *copy = tu_temp_path("export_same.mprof");
    const char *link = tu_temp_path("export_same_link.out");
    char args[2048];
    snprintf(args, sizeof args, "cp %s %s && ln -s %s %s", cap_a, copy, copy, link);
    assert_int_equal(tu_run(args, out, sizeof out), 0);
    struct stat before, after;
    assert_int_equal(stat(copy, &before), 0);
    static const char *const formats[] = {"chrome", "csv", "frames"};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "export --format %s -o %s %s", formats[i], copy, copy);
        assert_int_equal(run(args), 2);
        assert_non_null(strstr(out, "the capture"));
        snprintf(args, sizeof args, "export --format %s -o %s %s", formats[i], link, copy);
        assert_int_equal(run(args), 2);
        assert_int_equal(stat(copy, &after), 0);
        assert_int_equal(after.st_size, before.st_size);
    }
    tu_counts c;
    assert_int_equal(tu_count_capture(copy, &c), 0);
    assert_int_equal(c.events, counts_a.events);
}

/* A capture cut in the middle still exports what it holds, as valid JSON. */
static void test_truncated_capture_streams(void **state)
{
    (void)state;
    size_t len;
    char *data = slurp(cap_a, &len);
    assert_non_null(data);
    const char *cut = tu_temp_path("cut.mprof");
    FILE *f = fopen(cut, "wb");
    assert_non_null(f);
    fwrite(data, 1, len * 2 / 3, f);
    fclose(f);
    free(data);
    const char *json_path = tu_temp_path("cut.json");
    char args[2048];
    snprintf(args, sizeof args, "export --format chrome -o %s %s", json_path, cut);
    assert_int_equal(run(args), 0);
    char *json = slurp(json_path, NULL);
    assert_non_null(json);
    size_t zones, gpu, msgs, counters, frames;
    double physics_us;
    validate_chrome(json, &zones, &gpu, &msgs, &counters, &frames, &physics_us);
    free(json);
    assert_true(zones > 0 && zones <= counts_a.by_type[MPROF_EV_ZONE_BEGIN]);
}

static void test_diff(void **state)
{
    (void)state;
    char args[2048];
    snprintf(args, sizeof args, "diff --json %s %s", cap_a, cap_b);
    assert_int_equal(run(args), 0);
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "a");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "b");
    assert_int_equal((int)num(a, "frames"), 60);
    assert_int_equal((int)num(b, "frames"), 60);
    /* B's Physics::step spins 1.2 ms of wall time in every frame, so no B frame is shorter;
     * load can only lengthen frames, so only lower bounds are asserted (a comparison of the two
     * sides' medians flipped under TSan on a busy machine). */
    assert_true(num(b, "p50_ns") >= 1200000.0);
    const cJSON *zones = cJSON_GetObjectItemCaseSensitive(root, "zones");
    assert_true(cJSON_IsArray(zones) && cJSON_GetArraySize(zones) >= 10);
    /* Sorted by the size of the impact; Physics::step moved by about +900 us per frame. */
    const cJSON *z, *phys = NULL;
    double prev = INFINITY;
    cJSON_ArrayForEach(z, zones)
    {
        double imp = fabs(num(z, "impact_ns"));
        assert_true(imp <= prev + 1e-6);
        prev = imp;
        if (strcmp(cJSON_GetObjectItemCaseSensitive(z, "name")->valuestring, "Physics::step") == 0)
            phys = z;
    }
    assert_non_null(phys);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(phys, "status")->valuestring, "both");
    /* Each side's figures come from its own capture: A spins 0.3 ms, B 1.2 ms (wall time, so
     * these lower bounds hold whatever the load; the histogram's error is under 3 %). */
    assert_true(num(phys, "b_p50_ns") >= 1160000.0);
    assert_true(num(phys, "a_p50_ns") >= 290000.0);
    cJSON_Delete(root);

    snprintf(args, sizeof args, "diff %s %s", cap_a, cap_b);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(out, "Frames (ms)"));
    assert_non_null(strstr(out, "Physics::step"));
    assert_int_equal(run("diff onlyone.mprof"), 2);
    assert_int_equal(run("diff --help"), 0);
    assert_non_null(strstr(out, "usage: mprof diff"));
    snprintf(args, sizeof args, "diff %s /nonexistent.mprof", cap_a);
    assert_int_equal(run(args), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chrome_export),
        cmocka_unit_test(test_chrome_names_and_stdout),
        cmocka_unit_test(test_export_ranges),
        cmocka_unit_test(test_csv_stats),
        cmocka_unit_test(test_csv_per_zone),
        cmocka_unit_test(test_error_names_the_file),
        cmocka_unit_test(test_export_usage_and_errors),
        cmocka_unit_test(test_truncated_capture_streams),
        cmocka_unit_test(test_output_is_the_capture),
        cmocka_unit_test(test_failed_export_keeps_or_removes_output),
        cmocka_unit_test(test_diff),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
