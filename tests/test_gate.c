/*
 * test_gate.c - the regression gate (src/gate/) on frame exports with known
 * distributions: identical sides pass, a 15 % slower frame caused by one zone is a regression
 * that names the zone, too few frames or runs are inconclusive and say how many more are needed,
 * bad input is refused with a message that names the file.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gate/gate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64];

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* Uniform in [lo, hi). */
static double unif(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(rnd(s) % 1000000) / 1e6;
}

typedef struct model {
    size_t frames;
    uint64_t seed;
    double render_scale;   /* multiplies the Render zone */
    size_t warmup;         /* leading frames that take 100 ms */
    const char *hostname;  /* NULL: field omitted */
} model;

/* Writes a frame export whose frames are Physics (~4 ms) + Render (~8 ms) + AI (~2 ms) plus
 * 0.5 ms outside zones, each zone with +-15 % uniform noise and a 3 % chance of a 1.5x hitch. */
static void write_export(const char *name, const model *m)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdir(path, 0755);
    *slash = '/';
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    size_t n = m->frames;
    double *zone[3], *frame = malloc(n * sizeof *frame);
    const char *zname[3] = {"Physics", "Render", "AI"};
    const double zmean[3] = {4.0, 8.0, 2.0};
    uint64_t s = m->seed;
    for (int z = 0; z < 3; z++)
        zone[z] = malloc(n * sizeof *zone[z]);
    for (size_t i = 0; i < n; i++) {
        frame[i] = 0.5;
        for (int z = 0; z < 3; z++) {
            double v = zmean[z] * unif(&s, 0.85, 1.15);
            if (unif(&s, 0, 1) < 0.03)
                v *= 1.5;
            if (z == 1)
                v *= m->render_scale;
            if (i < m->warmup)
                v = 30.0;
            zone[z][i] = v;
            frame[i] += v;
        }
    }
    fprintf(f, "{\"schema\": \"mprof.frames.v1\", \"capture\": {\"file\": \"%s.mprof\", "
               "\"process\": \"test\", \"gitSha\": \"abc123\", \"cpu\": \"Test CPU\", "
               "\"buildType\": \"Release\"",
            name);
    if (m->hostname)
        fprintf(f, ", \"hostname\": \"%s\"", m->hostname);
    fprintf(f, "}, \"frameCount\": %zu, \"frameTimesMs\": [", n);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%.4f", i ? "," : "", frame[i]);
    fprintf(f, "], \"zones\": [");
    for (int z = 0; z < 3; z++) {
        double tot = 0;
        for (size_t i = 0; i < n; i++)
            tot += zone[z][i];
        fprintf(f, "%s{\"name\": \"%s\", \"totalMs\": %.4f, \"selfTotalMs\": %.4f, "
                   "\"selfPerFrameMs\": [",
                z ? "," : "", zname[z], tot, tot);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%.4f", i ? "," : "", zone[z][i]);
        fprintf(f, "]}");
    }
    fprintf(f, "]}\n");
    fclose(f);
    for (int z = 0; z < 3; z++)
        free(zone[z]);
    free(frame);
}

static char *tpath(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static mprof_gate_result *compare(const char *b, const char *c, const mprof_gate_opts *o)
{
    char err[512];
    int skip = o ? o->skip_frames : 0;
    mprof_frames_runs *sb = mprof__frames_load(tpath(b), skip, err, sizeof err);
    if (!sb)
        fail_msg("%s", err);
    mprof_frames_runs *sc = mprof__frames_load(tpath(c), skip, err, sizeof err);
    if (!sc)
        fail_msg("%s", err);
    mprof_gate_result *r = mprof__gate_compare(sb, sc, o, err, sizeof err);
    assert_non_null(r);
    mprof__frames_runs_free(sb);
    mprof__frames_runs_free(sc);
    return r;
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mprof_test_gate_XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_identical_passes(void **state)
{
    (void)state;
    write_export("id_base.json", &(model){600, 1, 1.0, 0, "host-a"});
    write_export("id_cur.json", &(model){600, 2, 1.0, 0, "host-a"});
    mprof_gate_result *r = compare("id_base.json", "id_cur.json", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    assert_int_equal(r->base.frames, 600);
    assert_false(r->magnitude);
    assert_true(r->p95_ratio > 0.9 && r->p95_ratio < 1.1);
    assert_true(r->ci_lo <= 1.0 && r->ci_hi >= 1.0);
    assert_float_equal(r->opts.threshold_pct, 10.0, 0);
    mprof__gate_result_free(r);
}

static void test_slower_zone_is_regression(void **state)
{
    (void)state;
    /* Render 8 ms -> 10.2 ms lifts the ~15.5 ms p95 frame by about 15 %. */
    write_export("sl_base.json", &(model){600, 3, 1.0, 0, "host-a"});
    write_export("sl_cur.json", &(model){600, 4, 1.28, 0, "host-a"});
    /* One run per side: every test agrees, but a run-wide offset (a busier machine during one
     * of the two runs) would look the same, so the verdict asks for a second run per side. */
    mprof_gate_result *r = compare("sl_base.json", "sl_cur.json", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_INCONCLUSIVE);
    assert_true(r->magnitude);
    assert_false(r->significant);
    assert_true(r->ci_lo > 1.0 && r->rank_p < 0.05);
    assert_int_equal(r->need_runs, 2);
    assert_int_equal(r->recommended_runs, 3);
    assert_non_null(strstr(r->reason, "rerun with --runs 3"));
    mprof__gate_result_free(r);

    write_export("sl_base/r1.json", &(model){600, 3, 1.0, 0, "host-a"});
    write_export("sl_base/r2.json", &(model){600, 13, 1.0, 0, "host-a"});
    write_export("sl_cur/r1.json", &(model){600, 4, 1.28, 0, "host-a"});
    write_export("sl_cur/r2.json", &(model){600, 14, 1.28, 0, "host-a"});
    r = compare("sl_base", "sl_cur", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_REGRESSION);
    assert_true(r->magnitude);
    assert_true(r->significant);
    assert_true(r->p95_ratio > 1.10);
    assert_true(r->ci_lo > 1.0);
    assert_true(r->rank_p < 0.05);
    assert_true(r->n_zones >= 1);
    assert_string_equal(r->zones[0].name, "Render");
    assert_true(r->zones[0].delta_ms > 1.5 && r->zones[0].delta_ms < 3.0);
    assert_true(r->zones[0].delta_pct > 20 && r->zones[0].delta_pct < 36);
    assert_true(r->zones[0].per_frame);
    assert_true(r->zones[0].p < 1e-6);
    assert_non_null(strstr(r->reason, "\"Render\""));
    /* The other zones did not grow much. */
    for (size_t i = 1; i < r->n_zones; i++)
        assert_true(fabs(r->zones[i].delta_ms) < 0.3);

    /* A looser threshold turns the same data into a pass. */
    mprof_gate_opts o = {.threshold_pct = 40};
    mprof_gate_result *r2 = compare("sl_base", "sl_cur", &o);
    assert_int_equal(r2->verdict, MPROF_GATE_PASS);
    assert_true(r2->significant);
    assert_non_null(strstr(r2->reason, "significant"));
    mprof__gate_result_free(r2);

    /* Writers: the JSON report parses and carries the verdict; Markdown names the zone. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(mprof__gate_write_json(r, f), 0);
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "schema")->valuestring, "mprof.gateReport.v1");
    assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "regression");
    assert_int_equal(cJSON_GetObjectItem(j, "exitCode")->valueint, 1);
    cJSON *zones = cJSON_GetObjectItem(j, "zones");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(zones, 0), "name")->valuestring,
                        "Render");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "baseline"), "gitSha")->valuestring, "abc123");
    cJSON_Delete(j);
    free(buf);
    f = open_memstream(&buf, &len);
    assert_int_equal(mprof__gate_write_markdown(r, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "### mprof gate: **regression**"));
    assert_non_null(strstr(buf, "| `Render` |"));
    free(buf);
    f = open_memstream(&buf, &len);
    assert_int_equal(mprof__gate_print_text(r, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "mprof gate: REGRESSION (exit 1)"));
    free(buf);
    mprof__gate_result_free(r);
}

static void test_too_few_frames_inconclusive(void **state)
{
    (void)state;
    write_export("few_base.json", &(model){40, 5, 1.0, 0, NULL});
    write_export("few_cur.json", &(model){40, 6, 1.5, 0, NULL});
    mprof_gate_result *r = compare("few_base.json", "few_cur.json", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_INCONCLUSIVE);
    assert_int_equal(r->need_frames, 20); /* default minimum 60 */
    assert_non_null(strstr(r->reason, "record 20 more"));
    /* Unknown hostnames are a warning, not a refusal. */
    assert_true(r->n_warnings >= 1);
    assert_non_null(strstr(r->warnings[0], "hostname"));
    mprof__gate_result_free(r);
    /* --min-frames lowers the bar; the 50 % slower zone then passes the frame-level tests, and
     * what is missing is a second run per side. */
    mprof_gate_opts o = {.min_frames = 30};
    r = compare("few_base.json", "few_cur.json", &o);
    assert_int_equal(r->verdict, MPROF_GATE_INCONCLUSIVE);
    assert_true(r->rank_p < 0.05 && r->ci_lo > 1.0);
    assert_int_equal(r->need_frames, 0);
    assert_int_equal(r->need_runs, 2);
    mprof__gate_result_free(r);
}

static void test_runs(void **state)
{
    (void)state;
    char name[64];
    /* runs2: 2 runs per side, Render 28 % slower; runs4: 4 per side; mixed: 4 baseline runs and
     * 4 current runs of which only two are slower (run-to-run variation, not a code change). */
    for (int i = 0; i < 4; i++) {
        if (i < 2) {
            snprintf(name, sizeof name, "runs2_base/run%d.json", i);
            write_export(name, &(model){300, 100 + (uint64_t)i, 1.0, 0, "h"});
            snprintf(name, sizeof name, "runs2_cur/run%d.json", i);
            write_export(name, &(model){300, 200 + (uint64_t)i, 1.28, 0, "h"});
        }
        snprintf(name, sizeof name, "runs4_base/run%d.json", i);
        write_export(name, &(model){300, 300 + (uint64_t)i, 1.0, 0, "h"});
        snprintf(name, sizeof name, "runs4_cur/run%d.json", i);
        write_export(name, &(model){300, 400 + (uint64_t)i, 1.28, 0, "h"});
        snprintf(name, sizeof name, "mixed_cur/run%d.json", i);
        write_export(name, &(model){300, 500 + (uint64_t)i, i < 2 ? 1.0 : 1.6, 0, "h"});
    }
    /* Two runs per side: the per-run rank test cannot go below 1/6, so it is not made (a
     * warning says so) and the hierarchical bootstrap carries the run-to-run variation. */
    mprof_gate_result *r = compare("runs2_base", "runs2_cur", NULL);
    assert_int_equal(r->base.runs, 2);
    assert_false(r->run_test);
    assert_int_equal(r->verdict, MPROF_GATE_REGRESSION);
    int warned = 0;
    for (size_t i = 0; i < r->n_warnings; i++)
        warned |= strstr(r->warnings[i], "needs 4 per side") != NULL;
    assert_true(warned);
    mprof__gate_result_free(r);
    /* Four per side, every current run slower: run test p = 1/70. */
    r = compare("runs4_base", "runs4_cur", NULL);
    assert_int_equal(r->base.runs, 4);
    assert_int_equal(r->base.frames, 1200);
    assert_true(r->run_test);
    assert_float_equal(r->run_p, 1.0 / 70.0, 1e-12);
    assert_int_equal(r->verdict, MPROF_GATE_REGRESSION);
    assert_string_equal(r->zones[0].name, "Render");
    mprof__gate_result_free(r);
    /* Half the current runs slower: the pooled p95 crosses the threshold and the frames differ,
     * but the runs do not agree, so the verdict is inconclusive and asks for more runs. */
    r = compare("runs4_base", "mixed_cur", NULL);
    assert_true(r->magnitude);
    assert_true(r->run_test);
    assert_true(r->run_p > 0.05);
    assert_int_equal(r->verdict, MPROF_GATE_INCONCLUSIVE);
    assert_true(r->need_runs >= 1);
    assert_non_null(strstr(r->reason, "per-run p95s do not differ"));
    if (!strstr(r->reason, "rerun with --runs ") && !strstr(r->reason, "more than 32 runs"))
        fail_msg("%s", r->reason);
    mprof__gate_result_free(r);
}

/* Unchanged code, but the three current runs met a machine busier by different amounts (their
 * Render 2 %, 10 % and 40 % slower): the pooled p95 crosses the threshold, the frames differ and
 * the bootstrap over three runs lies above 1, but the run-level t interval sees how far apart the
 * runs are, and the verdict stays inconclusive. */
static void test_run_offsets_are_not_evidence(void **state)
{
    (void)state;
    write_export("off_base/r1.json", &(model){600, 31, 1.0, 0, "h"});
    write_export("off_base/r2.json", &(model){600, 32, 1.02, 0, "h"});
    write_export("off_base/r3.json", &(model){600, 33, 0.98, 0, "h"});
    write_export("off_cur/r1.json", &(model){600, 34, 1.02, 0, "h"});
    write_export("off_cur/r2.json", &(model){600, 35, 1.10, 0, "h"});
    write_export("off_cur/r3.json", &(model){600, 36, 1.40, 0, "h"});
    mprof_gate_result *r = compare("off_base", "off_cur", NULL);
    assert_true(r->magnitude);
    assert_true(r->rank_p < 0.05);
    assert_true(r->ci_lo > 1.0); /* the bootstrap over three runs alone would have said so */
    assert_true(r->run_ci);
    assert_float_equal(r->run_ci_df, 4.0, 0);
    if (!(r->run_ci_lo < 1.0 && r->run_ci_hi > 1.2))
        fail_msg("run interval %g..%g, bootstrap %g..%g, verdict %d: %s", r->run_ci_lo, r->run_ci_hi, r->ci_lo, r->ci_hi, (int)r->verdict, r->reason);
    assert_false(r->significant);
    assert_int_equal(r->verdict, MPROF_GATE_INCONCLUSIVE);
    assert_non_null(strstr(r->reason, "the runs' p95s vary too much"));
    assert_true(r->need_runs >= 1);
    mprof__gate_result_free(r);
}

static void test_guard_and_skip(void **state)
{
    (void)state;
    write_export("g_base.json", &(model){300, 7, 1.0, 0, "host-a"});
    write_export("g_cur.json", &(model){300, 8, 1.0, 20, "host-b"});
    mprof_gate_result *r = compare("g_base.json", "g_cur.json", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_BAD_INPUT);
    assert_non_null(strstr(r->reason, "hostname differs"));
    assert_non_null(strstr(r->reason, "--allow-different-machines"));
    mprof__gate_result_free(r);
    /* Allowed, but the 20 warm-up frames of 90 ms inflate the current p95 without --skip. */
    mprof_gate_opts o = {.allow_different_machines = 1};
    r = compare("g_base.json", "g_cur.json", &o);
    assert_int_not_equal(r->verdict, MPROF_GATE_BAD_INPUT);
    assert_true(r->magnitude);
    assert_non_null(strstr(r->warnings[0], "hostname differs"));
    mprof__gate_result_free(r);
    o.skip_frames = 20;
    r = compare("g_base.json", "g_cur.json", &o);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    assert_int_equal(r->cur.frames, 280);
    assert_int_equal(r->base.frames, 280);
    mprof__gate_result_free(r);
}

static void write_frames(const char *name, const double *v, size_t n)
{
    FILE *f = fopen(tpath(name), "w");
    assert_non_null(f);
    fprintf(f, "{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%.4f", i ? "," : "", v[i]);
    fprintf(f, "]}");
    fclose(f);
}

/* A side with no frames at all is bad input, not a too-small sample: more frames of a run that
 * records none would never come. Both causes are named: no frame marks, everything skipped. */
static void test_no_frames_is_bad_input(void **state)
{
    (void)state;
    write_export("nf_base.json", &(model){300, 7, 1.0, 0, NULL});
    write_frames("nf_empty.json", NULL, 0);
    mprof_gate_result *r = compare("nf_base.json", "nf_empty.json", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_BAD_INPUT);
    assert_non_null(strstr(r->reason, "no frames in CURRENT: the run recorded no frame marks"));
    mprof__gate_result_free(r);
    r = compare("nf_empty.json", "nf_base.json", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_BAD_INPUT);
    assert_non_null(strstr(r->reason, "no frames in BASELINE"));
    mprof__gate_result_free(r);
    mprof_gate_opts o = {.skip_frames = 500};
    r = compare("nf_base.json", "nf_base.json", &o);
    assert_int_equal(r->verdict, MPROF_GATE_BAD_INPUT);
    assert_non_null(strstr(r->reason, "all 300 were skipped (--skip-frames 500)"));
    mprof__gate_result_free(r);
}

/* Only the slowest tenth of the frames got slower: the p95 crosses the threshold, but 200
 * frames are not enough for the rank test to be sure, so the verdict asks for more frames. */
static void test_tail_only_inconclusive(void **state)
{
    (void)state;
    double b[200], c[200];
    uint64_t s = 11;
    for (int i = 0; i < 200; i++) {
        b[i] = 10.0 + unif(&s, 0, 1);
        c[i] = 10.0 + unif(&s, 0, 1);
        if (c[i] > 10.9)
            c[i] += 2.0;
    }
    write_frames("tail_base.json", b, 200);
    write_frames("tail_cur.json", c, 200);
    mprof_gate_result *r = compare("tail_base.json", "tail_cur.json", NULL);
    assert_true(r->magnitude);
    assert_false(r->significant);
    assert_true(r->rank_p >= 0.05);
    assert_int_equal(r->verdict, MPROF_GATE_INCONCLUSIVE);
    assert_true(r->need_frames > 0);
    assert_int_equal(r->need_runs, 2); /* one run per side: runs are what is missing */
    assert_non_null(strstr(r->reason, "but not significantly"));
    assert_non_null(strstr(r->reason, "rerun with --runs 3"));
    /* No zones in these exports: the attribution is empty, and the writers cope. */
    assert_int_equal(r->n_zones, 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(mprof__gate_write_markdown(r, f), 0);
    fclose(f);
    assert_null(strstr(buf, "| Zone |"));
    free(buf);
    mprof__gate_result_free(r);
}

static void expect_load_error(const char *name, const char *content, const char *needle)
{
    char *p = tpath(name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    char err[512] = "";
    mprof_frames_runs *s = mprof__frames_load(p, 0, err, sizeof err);
    assert_null(s);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" lacks \"%s\"", err, needle);
    assert_non_null(strstr(err, name)); /* the message names the file */
}

/* ---- system tracing (the frame export's contract with the system-tracing export) ---------- */

/* A run of the engine-like model with system tracing: per frame Renderer (on the main thread,
 * ~8 ms of CPU times render_scale), Physics (~4 ms times physics_scale) and Jobs::wait, in which
 * the main thread sleeps ~2 ms until the workers finish (off-CPU by design). A CPU hog adds
 * preemption: with probability hog, a frame loses a further 2..6 ms off the CPU inside
 * Renderer, while other processes hold busy of the machine. */
typedef struct sysmodel {
    size_t frames;
    uint64_t seed;
    double render_scale, physics_scale;
    double hog;          /* share of frames preempted */
    double busy;         /* frameMachineBusy during preempted frames (idle frames 0.05) */
    int cpu_usage;       /* write frameMachineBusy and "cpuUsage": true */
    int zone_off;        /* write selfOffCpuPerFrameMs */
    double shift;        /* ms added to the Renderer of every frame without a hitch */
    double hitch;        /* share of frames whose Physics takes 10 ms more */
    int spin_zone;       /* list a zone "Renderer::frame" of spin_ms per frame (on-CPU) */
    double spin_ms;      /* 0: the zone is listed with whole-capture totals only (0.001 ms a
                            frame), as an export lists a zone outside its per-frame top zones */
} sysmodel;

static void write_sys_export(const char *name, const sysmodel *m)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdir(path, 0755);
    *slash = '/';
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    size_t n = m->frames;
    double *t = calloc(n, sizeof *t), *off = calloc(n, sizeof *off), *busy = calloc(n, sizeof *busy);
    double *zs[3], *zo[3];
    for (int z = 0; z < 3; z++) {
        zs[z] = calloc(n, sizeof *zs[z]);
        zo[z] = calloc(n, sizeof *zo[z]);
    }
    uint64_t s = m->seed;
    for (size_t i = 0; i < n; i++) {
        double render = 8.0 * unif(&s, 0.9, 1.1) * m->render_scale;
        double physics = 4.0 * unif(&s, 0.9, 1.1) * m->physics_scale;
        if (unif(&s, 0, 1) < m->hitch)
            physics += 10.0;
        else
            render += m->shift;
        double wait = 2.0 * unif(&s, 0.9, 1.1);
        double pre = unif(&s, 0, 1) < m->hog ? unif(&s, 2.0, 6.0) : 0.0;
        zs[0][i] = render + pre;
        zo[0][i] = pre;
        zs[1][i] = physics;
        zs[2][i] = wait;
        zo[2][i] = wait;
        t[i] = 0.5 + zs[0][i] + zs[1][i] + zs[2][i] + m->spin_ms;
        off[i] = pre + wait;
        busy[i] = pre > 0 ? m->busy : 0.05;
    }
    fprintf(f, "{\"schema\": \"mprof.frames.v1\", \"capture\": {\"hostname\": \"h\", "
               "\"cpu\": \"c\", \"buildType\": \"Release\"},\n\"system\": {\"contextSwitches\": "
               "true, \"cpuUsage\": %s, \"sampling\": false, \"whyNot\": null},\n"
               "\"frameCount\": %zu",
            m->cpu_usage ? "true" : "false", n);
    const char *ak[4] = {"frameTimesMs", "frameOnCpuMs", "frameOffCpuMs", "frameCpuMs"};
    for (int k = 0; k < 4; k++) {
        fprintf(f, ", \"%s\": [", ak[k]);
        for (size_t i = 0; i < n; i++) {
            double v = k == 0 ? t[i] : (k == 2 ? off[i] : t[i] - off[i]);
            fprintf(f, "%s%.4f", i ? "," : "", v);
        }
        fprintf(f, "]");
    }
    if (m->cpu_usage) {
        fprintf(f, ", \"frameMachineBusy\": [");
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%.4f", i ? "," : "", busy[i]);
        fprintf(f, "]");
    }
    const char *zn[3] = {"Renderer::draw", "Physics::step", "Jobs::wait"};
    fprintf(f, ", \"zones\": [");
    for (int z = 0; z < 3; z++) {
        double tot = 0;
        for (size_t i = 0; i < n; i++)
            tot += zs[z][i];
        fprintf(f, "%s{\"name\": \"%s\", \"totalMs\": %.4f, \"selfTotalMs\": %.4f, "
                   "\"selfPerFrameMs\": [",
                z ? "," : "", zn[z], tot, tot);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%.4f", i ? "," : "", zs[z][i]);
        fprintf(f, "]");
        if (m->zone_off) {
            fprintf(f, ", \"selfOffCpuPerFrameMs\": [");
            for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%.4f", i ? "," : "", zo[z][i]);
            fprintf(f, "]");
        }
        fprintf(f, "}");
    }
    if (m->spin_zone && m->spin_ms > 0) {
        fprintf(f, ",{\"name\": \"Renderer::frame\", \"totalMs\": %.4f, \"selfTotalMs\": %.4f, "
                   "\"selfPerFrameMs\": [", m->spin_ms * (double)n, m->spin_ms * (double)n);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%.4f", i ? "," : "", m->spin_ms);
        fprintf(f, "], \"selfOffCpuPerFrameMs\": [");
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s0", i ? "," : "");
        fprintf(f, "]}");
    } else if (m->spin_zone) {
        fprintf(f, ",{\"name\": \"Renderer::frame\", \"totalMs\": %.4f, \"selfTotalMs\": %.4f}",
                0.001 * (double)n, 0.001 * (double)n);
    }
    fprintf(f, "]}\n");
    fclose(f);
    for (int z = 0; z < 3; z++) {
        free(zs[z]);
        free(zo[z]);
    }
    free(t);
    free(off);
    free(busy);
}

/* Writes runs 1..k of a side into dir/rK.json, seeds seed+K. */
static void write_sys_side(const char *dir, int k, sysmodel m)
{
    uint64_t seed = m.seed;
    for (int i = 1; i <= k; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s/r%d.json", dir, i);
        m.seed = seed + (uint64_t)i;
        write_sys_export(name, &m);
    }
}

/* A CPU hog beside the current runs only (the worst case: it came and went between runs) lifts
 * the raw p95 by far more than 10 %; the noise-accounted frame times do not move, so the gate
 * passes, reports how much of each p95 was off the CPU, and does not blame the zones. */
static void test_noise_is_not_a_regression(void **state)
{
    (void)state;
    write_sys_side("nz_base", 3, (sysmodel){600, 100, 1.0, 1.0, 0.0, 0.0, 1, 1, 0, 0, 0, 0});
    write_sys_side("nz_cur", 3, (sysmodel){600, 200, 1.0, 1.0, 0.3, 1.0, 1, 1, 0, 0, 0, 0});
    mprof_gate_result *r = compare("nz_base", "nz_cur", NULL);
    assert_int_equal(r->noise_model, 2);
    assert_true(r->raw_p95_ratio > 1.15); /* a bare "p95 up 10 %" rule would fail this build */
    assert_true(r->p95_ratio > 0.95 && r->p95_ratio < 1.05);
    assert_false(r->magnitude);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    assert_non_null(strstr(r->reason, "noise accounted"));
    /* Baseline p95 frames: only Jobs::wait off the CPU (~2 of ~15 ms); current: preemption. */
    assert_true(r->base_p95_off_share > 0.10 && r->base_p95_off_share < 0.16);
    assert_true(r->cur_p95_off_share > 0.30);
    /* The Renderer's wall-clock self time grew with the preemption, its on-CPU time did not. */
    for (size_t i = 0; i < r->n_zones; i++) {
        assert_true(r->zones[i].on_cpu);
        if (strcmp(r->zones[i].name, "Renderer::draw") == 0)
            assert_true(r->zones[i].cur_off_ms > 0.5 && fabs(r->zones[i].delta_ms) < 0.1);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(mprof__gate_write_json(r, f), 0);
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    cJSON *nz = cJSON_GetObjectItem(j, "noise");
    assert_string_equal(cJSON_GetObjectItem(nz, "model")->valuestring, "off-cpu-machine-busy");
    assert_true(cJSON_GetObjectItem(nz, "currentP95OffCpuShare")->valuedouble > 0.30);
    assert_true(cJSON_GetObjectItem(j, "rawP95Ratio")->valuedouble > 1.15);
    cJSON_Delete(j);
    free(buf);
    mprof__gate_result_free(r);

    /* Without frameMachineBusy (context switches only), all off-CPU time counts as noise. */
    write_sys_side("nz_base1", 3, (sysmodel){600, 100, 1.0, 1.0, 0.0, 0.0, 0, 1, 0, 0, 0, 0});
    write_sys_side("nz_cur1", 3, (sysmodel){600, 200, 1.0, 1.0, 0.3, 1.0, 0, 1, 0, 0, 0, 0});
    r = compare("nz_base1", "nz_cur1", NULL);
    assert_int_equal(r->noise_model, 1);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    mprof__gate_result_free(r);

    /* One side without system tracing: today's statistics on raw frame times, and it says so. */
    write_export("nz_plain/r1.json", &(model){600, 1, 1.0, 0, "h"});
    r = compare("nz_plain", "nz_cur", &(mprof_gate_opts){.allow_different_machines = 1});
    assert_int_equal(r->noise_model, 0);
    assert_true(r->base_p95_off_share < 0);
    int said = 0;
    for (size_t i = 0; i < r->n_warnings; i++)
        said |= strstr(r->warnings[i], "no system tracing in") != NULL;
    assert_true(said);
    mprof__gate_result_free(r);
}

/* Renderer 30 % slower on the CPU, with the hog beside both sides (interleaved runs): a
 * regression named after the Renderer; Jobs::wait, whose off-CPU wait grew with the hog, is not
 * blamed. The same data with Physics 15 % slower (~4 % of the frame) is no regression. */
static void test_attribution_on_cpu(void **state)
{
    (void)state;
    write_sys_side("at_base", 3, (sysmodel){600, 300, 1.0, 1.0, 0.2, 0.6, 1, 1, 0, 0, 0, 0});
    write_sys_side("at_cur", 3, (sysmodel){600, 400, 1.3, 1.0, 0.2, 0.6, 1, 1, 0, 0, 0, 0});
    mprof_gate_result *r = compare("at_base", "at_cur", NULL);
    if (r->verdict != MPROF_GATE_REGRESSION)
        fail_msg("verdict %d: %s", (int)r->verdict, r->reason);
    assert_string_equal(r->zones[0].name, "Renderer::draw");
    assert_true(r->zones[0].significant && r->zones[0].on_cpu);
    assert_true(r->zones[0].delta_ms > 2.0 && r->zones[0].delta_ms < 2.9);
    for (size_t i = 0; i < r->n_zones; i++)
        if (strcmp(r->zones[i].name, "Jobs::wait") == 0)
            assert_false(r->zones[i].significant);
    assert_non_null(strstr(r->reason, "\"Renderer::draw\""));
    assert_non_null(strstr(r->reason, "on-CPU"));
    mprof__gate_result_free(r);

    write_sys_side("at_phys", 3, (sysmodel){600, 500, 1.0, 1.15, 0.2, 0.6, 1, 1, 0, 0, 0, 0});
    r = compare("at_base", "at_phys", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    assert_false(r->magnitude);
    mprof__gate_result_free(r);

    /* Without per-zone off-CPU times the zones are compared on wall-clock self time. */
    write_sys_side("at_base_nz", 2, (sysmodel){600, 300, 1.0, 1.0, 0.2, 0.6, 1, 0, 0, 0, 0, 0});
    write_sys_side("at_cur_nz", 2, (sysmodel){600, 400, 1.3, 1.0, 0.2, 0.6, 1, 0, 0, 0, 0, 0});
    r = compare("at_base_nz", "at_cur_nz", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_REGRESSION);
    assert_false(r->zones[0].on_cpu);
    assert_string_equal(r->zones[0].name, "Renderer::draw");
    mprof__gate_result_free(r);
}

/* The slowdown lands in a zone too small in the baseline to be among the export's per-frame
 * zones (listed with totals only), as --slow renderer=30 does in the sample engine's
 * Renderer::frame: the run-level test still decides it, and it is named first, ahead of zones
 * with per-frame data that grew by a hair. */
static void test_attribution_zone_without_per_frame_data(void **state)
{
    (void)state;
    sysmodel base = {600, 900, 1.0, 1.0, 0.2, 0.6, 1, 1, 0, 0, 1, 0.0};
    sysmodel cur = base;
    cur.seed = 1000;
    cur.spin_ms = 3.0;
    write_sys_side("pf_base", 3, base);
    write_sys_side("pf_cur", 3, cur);
    mprof_gate_result *r = compare("pf_base", "pf_cur", NULL);
    if (r->verdict != MPROF_GATE_REGRESSION)
        fail_msg("verdict %d: %s", (int)r->verdict, r->reason);
    assert_string_equal(r->zones[0].name, "Renderer::frame");
    assert_false(r->zones[0].per_frame);
    assert_true(r->zones[0].significant && r->zones[0].run_significant);
    assert_true(r->zones[0].delta_ms > 2.9 && r->zones[0].delta_ms < 3.1);
    assert_non_null(strstr(r->reason, "\"Renderer::frame\""));
    mprof__gate_result_free(r);
}

/* One current run whose Physics ran 30 % slower (a noisy neighbour during that run only) and two
 * that did not: the frame-level rank test sees hundreds of slower frames, but the runs' means do
 * not separate from the baseline's, so Physics is not blamed. */
static void test_zone_run_offset_not_blamed(void **state)
{
    (void)state;
    sysmodel base = {600, 1100, 1.0, 1.0, 0.0, 0.0, 1, 1, 0, 0, 0, 0};
    write_sys_side("ro_base", 3, base);
    sysmodel cur = base;
    cur.seed = 1200;
    write_sys_side("ro_cur", 3, cur);
    cur.seed = 1300;
    cur.physics_scale = 1.3;
    write_sys_export("ro_cur/r1.json", &cur);
    mprof_gate_result *r = compare("ro_base", "ro_cur", NULL);
    int seen = 0;
    for (size_t i = 0; i < r->n_zones; i++)
        if (strcmp(r->zones[i].name, "Physics::step") == 0) {
            seen = 1;
            assert_true(r->zones[i].delta_ms > 0.2);
            assert_true(r->zones[i].per_frame && r->zones[i].p < 0.05);
            assert_false(r->zones[i].run_significant);
            assert_false(r->zones[i].significant);
        }
    assert_true(seen);
    mprof__gate_result_free(r);
}

/* Runs whose tails differ from run to run (8 % of each run's frames slower by X ms, X drawn per
 * run), the current build 25 % slower on every frame: the runs' p95s scatter with X, so their
 * interval does not clear 1, while the runs' means (X moves them by 0.08 X) do; a regression.
 * The same runs without the slowdown are none. */
static void scatter_side(const char *dir, const double *x, double base_ms)
{
    double v[400];
    char name[64];
    mkdir(tpath(dir), 0755);
    for (int r = 0; r < 3; r++) {
        uint64_t s = 77 + (uint64_t)r;
        for (int i = 0; i < 400; i++)
            v[i] = base_ms * unif(&s, 0.98, 1.02) + (i % 25 < 2 ? x[r] : 0.0);
        snprintf(name, sizeof name, "%s/r%d.json", dir, r + 1);
        write_frames(name, v, 400);
    }
}

static void test_scattered_run_p95s(void **state)
{
    (void)state;
    const double xb[3] = {4.0, 6.0, 5.0}, xc[3] = {5.0, 3.5, 4.5}, xs[3] = {5.0, 4.0, 5.5};
    scatter_side("sc_base", xb, 10.0);
    scatter_side("sc_cur", xc, 12.5);
    scatter_side("sc_same", xs, 10.0);
    mprof_gate_result *r = compare("sc_base", "sc_cur", NULL);
    assert_true(r->run_ci);
    assert_true(r->run_ci_lo < 1.0);      /* the p95s alone would leave it inconclusive */
    assert_true(r->run_mean_ci_lo > 1.0); /* the means see the slowdown */
    if (r->verdict != MPROF_GATE_REGRESSION)
        fail_msg("verdict %d: %s", (int)r->verdict, r->reason);
    mprof__gate_result_free(r);
    r = compare("sc_base", "sc_same", NULL);
    assert_true(r->verdict != MPROF_GATE_REGRESSION);
    assert_true(r->run_mean_ci_lo < 1.0);
    mprof__gate_result_free(r);
}

/* Most frames 3 ms slower, the slowest ones (a Physics hitch) not: the p95 stays within 10 % but
 * the median moved by 20 %. With two runs a side the frames and the runs agree that the bulk of
 * the frames is more than 10 % slower: a regression whatever the p95 did (DOOM's doubled blit,
 * mean +98 % and p95 +5 %). With one run a side that cannot be told from a busier machine: a
 * pass with a warning, not a silent pass. */
static void test_shift_below_threshold(void **state)
{
    (void)state;
    write_sys_side("sh_base", 2, (sysmodel){600, 600, 1.0, 1.0, 0.0, 0.0, 1, 1, 0, 0.1, 0, 0});
    write_sys_side("sh_cur", 2, (sysmodel){600, 700, 1.0, 1.0, 0.0, 0.0, 1, 1, 3.0, 0.1, 0, 0});
    write_sys_side("sh_same", 2, (sysmodel){600, 800, 1.0, 1.0, 0.0, 0.0, 1, 1, 0, 0.1, 0, 0});
    mprof_gate_result *r = compare("sh_base", "sh_cur", NULL);
    if (r->verdict != MPROF_GATE_REGRESSION)
        fail_msg("verdict %d: %s", (int)r->verdict, r->reason);
    assert_false(r->magnitude);
    assert_true(r->p95_ratio < 1.05);
    assert_true(r->shift_tested && r->shift && r->shift_runs_ok);
    assert_true(r->shift_p < 0.05);
    assert_true(r->run_median_ratio > 1.15 && r->run_median_lo > 1.0);
    assert_non_null(strstr(r->reason, "every frame got slower by more than the +10 % threshold"));
    assert_non_null(strstr(r->reason, "\"Renderer::draw\""));
    mprof__gate_result_free(r);
    /* A threshold above the shift: the frames are not 25 % slower, so a pass that warns. */
    r = compare("sh_base", "sh_cur", &(mprof_gate_opts){.threshold_pct = 25});
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    assert_false(r->shift);
    mprof__gate_result_free(r);
    /* One run a side: no shift test, the warning instead. */
    r = compare("sh_base/r1.json", "sh_cur/r1.json", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    assert_false(r->shift_tested);
    assert_true(r->shifted);
    int said = 0;
    for (size_t i = 0; i < r->n_warnings; i++)
        said |= strstr(r->warnings[i], "distribution shifted") != NULL;
    assert_true(said);
    mprof__gate_result_free(r);
    /* Unchanged: neither. */
    r = compare("sh_base", "sh_same", NULL);
    assert_false(r->shifted);
    assert_false(r->shift);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    mprof__gate_result_free(r);
}

static void test_bad_system_input(void **state)
{
    (void)state;
    const char *pre = "{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [1, 2, 3], ";
    char buf[512];
    snprintf(buf, sizeof buf, "%s\"system\": {\"contextSwitches\": true}, "
                              "\"frameOffCpuMs\": [1, 2]}", pre);
    expect_load_error("sys_len.json", buf, "\"frameOffCpuMs\" has a different length");
    snprintf(buf, sizeof buf, "%s\"system\": {\"contextSwitches\": true, \"cpuUsage\": true}, "
                              "\"frameOffCpuMs\": [0, 0, 0], \"frameMachineBusy\": [0, 2, 0]}", pre);
    expect_load_error("sys_busy.json", buf, "above 1");
    snprintf(buf, sizeof buf, "%s\"system\": {\"contextSwitches\": 1}}", pre);
    expect_load_error("sys_bool.json", buf, "\"contextSwitches\" is not true or false");
    snprintf(buf, sizeof buf, "%s\"system\": []}", pre);
    expect_load_error("sys_obj.json", buf, "\"system\" is not an object");
    snprintf(buf, sizeof buf, "%s\"zones\": [{\"name\": \"Z\", \"selfPerFrameMs\": [1, 1, 1], "
                              "\"selfOffCpuPerFrameMs\": [1, -1, 1]}]}", pre);
    expect_load_error("sys_zone.json", buf, "not a non-negative number");
}

static void test_bad_input(void **state)
{
    (void)state;
    expect_load_error("bad1.json", "{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [1, 2,",
                      "malformed JSON");
    expect_load_error("bad2.json", "[1, 2, 3]", "not a JSON object");
    expect_load_error("bad3.json", "{\"schema\": \"other\", \"frameTimesMs\": []}",
                      "\"schema\" must be \"mprof.frames.v1\"");
    expect_load_error("bad4.json", "{\"schema\": \"mprof.frames.v1\"}", "\"frameTimesMs\" is missing");
    expect_load_error("bad5.json", "{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [1, -2]}",
                      "not a non-negative number");
    expect_load_error("bad6.json", "{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [1, \"x\"]}",
                      "not a non-negative number");
    expect_load_error("bad7.json",
                      "{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [1, 2], \"zones\": "
                      "[{\"name\": \"A\", \"selfPerFrameMs\": [1]}]}",
                      "different length");
    expect_load_error("bad8.json",
                      "{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [1], \"zones\": [{}]}",
                      "no \"name\"");
    expect_load_error("bad9.json",
                      "{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [1], \"capture\": "
                      "{\"hostname\": 5}}",
                      "not a string");
    char err[256];
    assert_null(mprof__frames_load(tpath("does-not-exist.json"), 0, err, sizeof err));
    assert_non_null(strstr(err, "does-not-exist.json"));
    mkdir(tpath("empty_dir"), 0755);
    assert_null(mprof__frames_load(tpath("empty_dir"), 0, err, sizeof err));
    assert_non_null(strstr(err, "no frame exports"));
    /* A parse from memory leaves nothing allocated on failure (checked by ASan in CI). */
    mprof_frames_run run;
    assert_int_equal(mprof__frames_parse("\x01\x02", 2, "mem", 0, 0, &run, err, sizeof err), -1);
    assert_null(run.frames_ms);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical_passes),
        cmocka_unit_test(test_slower_zone_is_regression),
        cmocka_unit_test(test_too_few_frames_inconclusive),
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_run_offsets_are_not_evidence),
        cmocka_unit_test(test_tail_only_inconclusive),
        cmocka_unit_test(test_guard_and_skip),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_no_frames_is_bad_input),
        cmocka_unit_test(test_noise_is_not_a_regression),
        cmocka_unit_test(test_attribution_on_cpu),
        cmocka_unit_test(test_attribution_zone_without_per_frame_data),
        cmocka_unit_test(test_zone_run_offset_not_blamed),
        cmocka_unit_test(test_scattered_run_p95s),
        cmocka_unit_test(test_shift_below_threshold),
        cmocka_unit_test(test_bad_system_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
