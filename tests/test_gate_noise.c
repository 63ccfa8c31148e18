/*
 * test_gate_noise.c - the gate on a loaded machine, with synthetic frame exports whose every
 * figure is chosen: the decision frame time with each noise model (the critical path removes
 * the preemption a CPU hog adds, where the off-CPU x machine-busy estimate removed about half),
 * the model every run allows and the warning that names the run holding it back, the
 * every-frame-slower rule, the --runs advice from the run-to-run spread, the zone that grew
 * past the threshold's share of the frame, and the checks on the frame export's critical-path
 * figures. Timing plays no part: the same inputs always give the same verdict.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gate/gate.h"
#include "gate/stats.h"

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

static double unif(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(rnd(s) % 1000000) / 1e6;
}

static char *tpath(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

/*
 * One run of a sub-millisecond game loop: Render (about 60 % of the frame), Logic (30 %) and
 * Jobs::wait, where the main thread waits for a worker, plus 0.03 ms outside zones. Frames vary
 * with the content (the same sequence in every run), and a whole run may be slower (speed: a
 * busier machine's caches). A CPU hog preempts a share of the frames for 2 to 6 ms inside
 * Render, and preempts the worker while Main waits (the waits' runnable part).
 */
typedef struct run_model {
    size_t frames;
    uint64_t seed;
    double render, logic;  /* scale of each zone's work (1 = unchanged) */
    double speed;          /* the run's machine speed factor on all on-CPU work */
    double hog;            /* share of frames preempted */
    double wait_hog;       /* share of frames whose wait has its worker preempted 1..3 ms */
    const char *path;      /* "wakers", "inferred", NULL: the export's criticalPath */
    int reasons;           /* write the split (switchReasons); 0: an old kernel's export */
    int busy;              /* write frameMachineBusy */
    int switches;          /* "contextSwitches" */
    double hitch;          /* share of frames with a 1 ms Logic hitch (unaffected by render) */
    size_t untraced_from;  /* frames from here on lie outside the switch trace (0: none) */
} run_model;

static void write_run(const char *name, const run_model *m)
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
    double *t = calloc(n, sizeof *t), *on = calloc(n, sizeof *on), *pre = calloc(n, sizeof *pre);
    double *blk = calloc(n, sizeof *blk), *wr = calloc(n, sizeof *wr), *bz = calloc(n, sizeof *bz);
    double *zr = calloc(n, sizeof *zr), *zro = calloc(n, sizeof *zro), *zl = calloc(n, sizeof *zl);
    double *zw = calloc(n, sizeof *zw);
    uint64_t s = m->seed;
    for (size_t i = 0; i < n; i++) {
        double content = 1.0 + 0.3 * sin((double)i * 0.01); /* the level, same in every run */
        double render = 0.18 * content * m->render * unif(&s, 0.97, 1.03) * m->speed;
        double logic = 0.09 * m->logic * unif(&s, 0.97, 1.03) * m->speed;
        if (unif(&s, 0, 1) < m->hitch)
            logic += 1.0;
        double wait = 0.02 * unif(&s, 0.9, 1.1); /* the worker's own work Main waits for */
        double p = unif(&s, 0, 1) < m->hog ? unif(&s, 2.0, 6.0) : 0.0;
        double w = unif(&s, 0, 1) < m->wait_hog ? unif(&s, 1.0, 3.0) : 0.0;
        zr[i] = render + p;
        zro[i] = p;
        zl[i] = logic;
        zw[i] = wait + w;
        on[i] = render + logic + 0.03 * m->speed;
        pre[i] = p;
        blk[i] = wait + w;
        wr[i] = w;
        t[i] = on[i] + pre[i] + blk[i];
        bz[i] = p > 0 || w > 0 ? 0.5 : 0.05;
        if (m->untraced_from && i >= m->untraced_from - 1) /* as the export writes them */
            on[i] = pre[i] = blk[i] = wr[i] = 0.0;
    }
    fprintf(f, "{\"schema\": \"mprof.frames.v1\", \"capture\": {\"hostname\": \"h\", \"cpu\": "
               "\"c\", \"buildType\": \"Release\"},\n\"system\": {\"contextSwitches\": %s, "
               "\"cpuUsage\": %s, \"sampling\": false, \"switchReasons\": %s, "
               "\"criticalPath\": ",
            m->switches ? "true" : "false", m->busy ? "true" : "false",
            m->reasons ? "true" : "false");
    if (m->path)
        fprintf(f, "\"%s\"", m->path);
    else
        fputs("null", f);
    fprintf(f, ", \"pathTruncatedFrames\": 0, \"whyNot\": null},\n\"frameCount\": %zu", n);
    struct {
        const char *key;
        const double *v;
        int want;
    } arrays[] = {
        {"frameTimesMs", t, 1},
        {"frameOnCpuMs", on, m->switches},
        {"frameOffCpuMs", NULL, m->switches},
        {"frameMachineBusy", bz, m->switches && m->busy},
        {"framePreemptedMs", pre, m->switches && m->reasons},
        {"frameBlockedMs", blk, m->switches && m->reasons},
        {"frameWaitRunnableMs", wr, m->switches && m->reasons},
    };
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) {
        if (!arrays[k].want)
            continue;
        fprintf(f, ", \"%s\": [", arrays[k].key);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%.6f", i ? "," : "", arrays[k].v ? arrays[k].v[i] : pre[i] + blk[i]);
        fputc(']', f);
    }
    const char *zn[3] = {"Render", "Logic", "Jobs::wait"};
    double *zs[3] = {zr, zl, zw}, *zo[3] = {zro, NULL, zw};
    fprintf(f, ", \"zones\": [");
    for (int z = 0; z < 3; z++) {
        double tot = 0;
        for (size_t i = 0; i < n; i++)
            tot += zs[z][i];
        fprintf(f, "%s{\"name\": \"%s\", \"totalMs\": %.6f, \"selfTotalMs\": %.6f, "
                   "\"selfPerFrameMs\": [",
                z ? "," : "", zn[z], tot, tot);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%.6f", i ? "," : "", zs[z][i]);
        fputc(']', f);
        if (m->switches) {
            fprintf(f, ", \"selfOffCpuPerFrameMs\": [");
            for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%.6f", i ? "," : "", zo[z] ? zo[z][i] : 0.0);
            fputc(']', f);
        }
        fputc('}', f);
    }
    fprintf(f, "]}\n");
    fclose(f);
    free(t);
    free(on);
    free(pre);
    free(blk);
    free(wr);
    free(bz);
    free(zr);
    free(zro);
    free(zl);
    free(zw);
}

/* Runs 1..k of a side into dir/rK.json; speeds[i] (or 1) is run i's machine speed. */
static void write_side(const char *dir, int k, run_model m, const double *speeds)
{
    uint64_t seed = m.seed;
    for (int i = 0; i < k; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s/r%d.json", dir, i + 1);
        m.seed = seed + (uint64_t)i * 7919;
        m.speed = speeds ? speeds[i] : 1.0;
        write_run(name, &m);
    }
}

static run_model base_model(void)
{
    return (run_model){.frames = 2000, .seed = 1, .render = 1, .logic = 1, .speed = 1,
                       .path = "wakers", .reasons = 1, .busy = 1, .switches = 1};
}

/* The bootstrap's 2000 rounds are not what these tests are about; 500 keep them quick under
 * the sanitizers. */
static mprof_gate_result *compare(const char *b, const char *c, const mprof_gate_opts *opts)
{
    mprof_gate_opts quick = {.n_resamples = 500};
    const mprof_gate_opts *o = &quick;
    if (opts) {
        quick = *opts;
        if (!quick.n_resamples)
            quick.n_resamples = 500;
    }
    char err[512];
    mprof_frames_runs *sb = mprof__frames_load(tpath(b), 0, err, sizeof err);
    if (!sb)
        fail_msg("%s", err);
    mprof_frames_runs *sc = mprof__frames_load(tpath(c), 0, err, sizeof err);
    if (!sc)
        fail_msg("%s", err);
    mprof_gate_result *r = mprof__gate_compare(sb, sc, o, err, sizeof err);
    assert_non_null(r);
    mprof__frames_runs_free(sb);
    mprof__frames_runs_free(sc);
    return r;
}

static cJSON *report_json(const mprof_gate_result *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(mprof__gate_write_json(r, f), 0);
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    assert_non_null(j);
    return j;
}

static char *report_text(const mprof_gate_result *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(mprof__gate_print_text(r, f), 0);
    fclose(f);
    return buf;
}

static int warned(const mprof_gate_result *r, const char *needle)
{
    for (size_t i = 0; i < r->n_warnings; i++)
        if (strstr(r->warnings[i], needle))
            return 1;
    return 0;
}

/* A hog beside the current runs only preempts a third of their frames for longer than the
 * frames themselves and preempts the worker during a fifth of the waits: the raw p95 triples.
 * The critical path takes out exactly that, so the decision p95s agree and the gate passes. The
 * off-CPU x busy estimate (busy 0.5 while preempted) takes out half of it, which is what the
 * old model did: the same runs exported without switch reasons still look 60 % slower. */
static void test_critical_path_removes_preemption(void **state)
{
    (void)state;
    run_model b = base_model(), c = base_model();
    c.seed = 100;
    c.hog = 0.33;
    c.wait_hog = 0.2;
    write_side("cp_base", 3, b, NULL);
    write_side("cp_cur", 3, c, NULL);
    mprof_gate_result *r = compare("cp_base", "cp_cur", NULL);
    assert_int_equal(r->noise_model, MPROF_GATE_NOISE_CRITICAL);
    assert_true(r->raw_p95_ratio > 3.0);
    if (!(r->p95_ratio > 0.97 && r->p95_ratio < 1.03))
        fail_msg("decision p95 ratio %g", r->p95_ratio);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    /* What the capture knows was runnable, and what was removed: all of it. */
    assert_true(r->cur_noise.p95_runnable_share > 0.8);
    assert_float_equal(r->cur_noise.p95_removed_share, r->cur_noise.p95_runnable_share, 1e-6);
    assert_float_equal(r->base_noise.runnable_share, 0.0, 1e-9);
    /* The busy estimate would have removed half of it. */
    assert_true(r->cur_noise.p95_busy_removed_share < 0.6 * r->cur_noise.p95_removed_share);
    cJSON *j = report_json(r);
    cJSON *nz = cJSON_GetObjectItem(j, "noise");
    assert_string_equal(cJSON_GetObjectItem(nz, "model")->valuestring, "critical-path");
    assert_true(cJSON_GetObjectItem(nz, "currentP95RemovedShare")->valuedouble > 0.8);
    assert_true(cJSON_GetObjectItem(nz, "currentP95BusyModelRemovedShare")->valuedouble < 0.5);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(nz, "baselineRunnableShare")));
    assert_true(cJSON_GetObjectItem(j, "rawP95Ratio")->valuedouble > 3.0);
    cJSON_Delete(j);
    char *text = report_text(r);
    assert_non_null(strstr(text, "noise       critical-path: "));
    assert_non_null(strstr(text, "p95 removed"));
    free(text);
    mprof__gate_result_free(r);

    /* The same frames without switch reasons: the old estimate, which leaves half the hog. */
    b.reasons = c.reasons = 0;
    b.path = c.path = NULL;
    write_side("cp_base_old", 3, b, NULL);
    write_side("cp_cur_old", 3, c, NULL);
    r = compare("cp_base_old", "cp_cur_old", NULL);
    assert_int_equal(r->noise_model, MPROF_GATE_NOISE_OFF_CPU_BUSY);
    assert_true(r->p95_ratio > 1.5);
    assert_true(r->cur_noise.p95_runnable_share < 0); /* unknown without reasons */
    assert_true(warned(r, "context switches without reasons"));
    mprof__gate_result_free(r);
}

/* The model is the best every run of both sides allows, and the run that holds it back is named. */
static void test_model_of_the_weakest_run(void **state)
{
    (void)state;
    run_model m = base_model();
    write_side("mw_wakers", 2, m, NULL);
    m.path = "inferred";
    write_side("mw_inferred", 2, m, NULL);
    m.path = NULL;
    m.reasons = 0;
    write_side("mw_noreasons", 2, m, NULL);
    m.busy = 0;
    write_side("mw_nobusy", 2, m, NULL);
    m.switches = 0;
    write_side("mw_none", 2, m, NULL);
    static const struct {
        const char *b, *c;
        int model;
        const char *warn;
    } cases[] = {
        {"mw_wakers", "mw_wakers", MPROF_GATE_NOISE_CRITICAL, NULL},
        {"mw_inferred", "mw_inferred", MPROF_GATE_NOISE_CRITICAL_INFERRED, NULL},
        {"mw_wakers", "mw_inferred", MPROF_GATE_NOISE_PREEMPTED, "inferred wakers"},
        {"mw_inferred", "mw_wakers", MPROF_GATE_NOISE_PREEMPTED, "inferred wakers"},
        {"mw_wakers", "mw_noreasons", MPROF_GATE_NOISE_OFF_CPU_BUSY, "mw_noreasons/r1.json"},
        {"mw_nobusy", "mw_wakers", MPROF_GATE_NOISE_OFF_CPU, "mw_nobusy/r1.json"},
        {"mw_wakers", "mw_none", MPROF_GATE_NOISE_NONE, "no system tracing in"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mprof_gate_result *r = compare(cases[i].b, cases[i].c, NULL);
        if (r->noise_model != cases[i].model)
            fail_msg("%s vs %s: model %d, expected %d", cases[i].b, cases[i].c, r->noise_model,
                     cases[i].model);
        if (cases[i].warn && !warned(r, cases[i].warn))
            fail_msg("%s vs %s: no warning with \"%s\"", cases[i].b, cases[i].c, cases[i].warn);
        assert_int_equal(r->verdict, MPROF_GATE_PASS);
        cJSON *j = report_json(r);
        static const char *const names[] = {"none", "off-cpu", "off-cpu-machine-busy",
                                            "preempted", "critical-path-inferred",
                                            "critical-path"};
        assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "noise"), "model")
                                ->valuestring, names[cases[i].model]);
        cJSON_Delete(j);
        mprof__gate_result_free(r);
    }
}

/* The proof's conditions on a sub-millisecond loop with the hog on both sides and runs up to 2 %
 * apart: Render slowed so that every frame is 15 % slower is a regression naming Render; 2 % of
 * the frame is not; unchanged passes. */
static void test_sub_ms_loop_under_a_hog(void **state)
{
    (void)state;
    const double sb[3] = {1.0, 1.02, 0.99}, sc[3] = {1.01, 0.985, 1.0};
    run_model m = base_model();
    m.hog = 0.15;
    m.wait_hog = 0.05;
    m.frames = 3000;
    write_side("sm_base", 3, m, sb);
    m.seed = 50;
    write_side("sm_same", 3, m, sc);
    m.render = 1.0 + 0.15 / 0.6 * 1.04; /* Render ~ 58 % of the on-CPU frame */
    write_side("sm_slow", 3, m, sc);
    m.render = 1.0 + 0.02 / 0.6;
    write_side("sm_small", 3, m, sc);
    mprof_gate_result *r = compare("sm_base", "sm_same", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    mprof__gate_result_free(r);
    r = compare("sm_base", "sm_slow", NULL);
    if (r->verdict != MPROF_GATE_REGRESSION)
        fail_msg("verdict %d: %s", (int)r->verdict, r->reason);
    assert_string_equal(r->zones[0].name, "Render");
    assert_true(r->zones[0].exceeds);
    assert_true(r->raw_p95_ratio < 1.10); /* the raw p95 is the hog's: the bare rule misses it */
    assert_true(r->p95_ratio > 1.12);
    mprof__gate_result_free(r);
    r = compare("sm_base", "sm_small", NULL);
    assert_true(r->verdict != MPROF_GATE_REGRESSION);
    assert_false(r->shift);
    mprof__gate_result_free(r);
}

/* A run whose main thread's switches stop being recorded part way (a capture fault: its
 * frames there have neither on- nor off-CPU time) has raw, hog-preempted frames beside the
 * others' decision times. They are left out and the run is named; a run with no frame inside
 * its trace keeps its frames, raw, and is named too. */
static void test_untraced_frames_left_out(void **state)
{
    (void)state;
    run_model m = base_model();
    m.hog = 0.3;
    m.wait_hog = 0.1;
    m.frames = 3000;
    write_side("ut_base", 3, m, NULL);
    m.seed = 70;
    write_side("ut_cur", 3, m, NULL);
    m.untraced_from = 900; /* 70 % of the run outside the trace */
    m.seed = 70;
    write_run("ut_cur/r1.json", &m);
    mprof_gate_result *r = compare("ut_base", "ut_cur", NULL);
    if (r->verdict != MPROF_GATE_PASS)
        fail_msg("verdict %d: %s", (int)r->verdict, r->reason);
    assert_true(r->p95_ratio > 0.95 && r->p95_ratio < 1.05);
    assert_true(warned(r, "2101 of its 3000 frames lie outside its context-switch trace"));
    assert_true(warned(r, "ut_cur/r1.json"));
    assert_int_equal(r->cur_dec.frames, 2 * 3000 + 899);
    mprof__gate_result_free(r);

    m.untraced_from = 1; /* none inside */
    write_run("ut_cur/r1.json", &m);
    r = compare("ut_base", "ut_cur", NULL);
    assert_true(warned(r, "none of its 3000 frames lies inside its context-switch trace"));
    assert_int_equal(r->cur_dec.frames, 3 * 3000);
    mprof__gate_result_free(r);
}

/* Runs 10 % apart and a 15 % slower current side: every test points up but the run-level ones
 * cannot separate the change from the spread with three runs a side. The verdict says which
 * `--runs` would, computed from that spread (the smallest k whose t test would clear it). */
static void test_advice_names_runs(void **state)
{
    (void)state;
    const double sb[3] = {1.0, 1.12, 0.89}, sc[3] = {1.15 * 0.92, 1.15 * 1.10, 1.15 * 1.0};
    run_model m = base_model();
    write_side("ad_base", 3, m, sb);
    m.seed = 77;
    write_side("ad_cur", 3, m, sc);
    mprof_gate_result *r = compare("ad_base", "ad_cur", NULL);
    if (r->verdict != MPROF_GATE_INCONCLUSIVE)
        fail_msg("verdict %d: %s", (int)r->verdict, r->reason);
    assert_true(r->recommended_runs > 3 && r->recommended_runs <= MPROF_GATE_MAX_RUNS);
    assert_int_equal(r->need_runs, r->recommended_runs - 3);
    assert_true(r->run_p95_sd > 0.03 && r->run_p95_sd < 0.15);
    char want[64];
    snprintf(want, sizeof want, "rerun with --runs %ld", r->recommended_runs);
    if (!strstr(r->reason, want))
        fail_msg("reason lacks \"%s\": %s", want, r->reason);
    assert_null(strstr(r->reason, "more frames"));
    cJSON *j = report_json(r);
    assert_int_equal(cJSON_GetObjectItem(j, "recommendedRuns")->valueint, (int)r->recommended_runs);
    assert_true(cJSON_GetObjectItem(j, "runP95SpreadPct")->valuedouble > 3.0);
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(j, "shift")));
    cJSON_Delete(j);
    mprof__gate_result_free(r);

    /* Runs 35 % apart and a change of 11 %: more runs than `mprof ci` takes. */
    const double wb[3] = {0.7, 1.0, 1.4}, wc[3] = {1.11 * 1.4, 1.11 * 0.7, 1.11 * 1.0};
    m = base_model();
    write_side("ad_wide_base", 3, m, wb);
    m.seed = 78;
    write_side("ad_wide_cur", 3, m, wc);
    r = compare("ad_wide_base", "ad_wide_cur", NULL);
    assert_int_equal(r->verdict, MPROF_GATE_INCONCLUSIVE);
    assert_int_equal(r->recommended_runs, -1);
    assert_non_null(strstr(r->reason, "more than 32 runs a side"));
    cJSON *jw = report_json(r);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(jw, "recommendedRuns")));
    cJSON_Delete(jw);
    mprof__gate_result_free(r);
}

/* Every frame about 15 % slower while the p95 sits in hitches the change does not touch, and
 * runs that differ by 10 %: the frames and the runs' estimate say every frame grew past the
 * threshold, the runs' interval does not confirm it, and the p95 is within the threshold. Not a
 * pass: inconclusive, with the --runs that the medians' spread calls for. */
static void test_every_frame_unconfirmed(void **state)
{
    (void)state;
    const double sb[3] = {1.0, 1.12, 0.89}, sc[3] = {0.92, 1.10, 1.0};
    run_model m = base_model();
    m.hitch = 0.1;
    write_side("eu_base", 3, m, sb);
    m.seed = 91;
    m.render = 1.0 + 0.15 * 0.29 / 0.18;
    write_side("eu_cur", 3, m, sc);
    mprof_gate_result *r = compare("eu_base", "eu_cur", NULL);
    if (r->verdict != MPROF_GATE_INCONCLUSIVE)
        fail_msg("verdict %d: %s", (int)r->verdict, r->reason);
    assert_false(r->magnitude);
    assert_true(r->shift_frames_ok);
    assert_false(r->shift_runs_ok);
    assert_true(r->run_median_ratio > 1.10);
    assert_true(r->recommended_runs > 3 || r->recommended_runs == -1);
    if (!strstr(r->reason, "every frame may have got slower"))
        fail_msg("reason: %s", r->reason);
    if (r->recommended_runs > 0) {
        char want[64];
        snprintf(want, sizeof want, "rerun with --runs %ld", r->recommended_runs);
        if (!strstr(r->reason, want))
            fail_msg("reason lacks \"%s\": %s", want, r->reason);
    }
    mprof__gate_result_free(r);
}

/* Render grew by 20 % of the frame while Logic shrank by as much: the frame is unchanged and
 * the gate passes, but the zone is named first in the reason and the JSON, and a zone past the
 * threshold's share is listed even beyond --top. */
static void test_zone_past_threshold_is_named(void **state)
{
    (void)state;
    run_model m = base_model();
    write_side("zn_base", 3, m, NULL);
    m.seed = 300;
    m.render = 1.0 + 0.06 / 0.18;
    m.logic = 1.0 - 0.06 / 0.09 + 0.05;
    write_side("zn_cur", 3, m, NULL);
    mprof_gate_opts o = {.top_zones = 1};
    mprof_gate_result *r = compare("zn_base", "zn_cur", &o);
    assert_int_equal(r->verdict, MPROF_GATE_PASS);
    assert_string_equal(r->zones[0].name, "Render");
    assert_true(r->zones[0].exceeds && r->zones[0].significant);
    assert_non_null(strstr(r->reason, "zone \"Render\" grew significantly"));
    assert_non_null(strstr(r->reason, "more than the threshold's share of the frame"));
    cJSON *j = report_json(r);
    cJSON *z0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "zones"), 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(z0, "exceedsThreshold")));
    cJSON_Delete(j);
    char *text = report_text(r);
    assert_non_null(strstr(text, "*!"));
    free(text);
    mprof__gate_result_free(r);
    /* Two zones past the share with --top 1: both are listed. */
    m = base_model();
    m.seed = 301;
    m.render = 1.0 + 0.06 / 0.18;
    m.logic = 1.0 + 0.05 / 0.09;
    write_side("zn_two", 3, m, NULL);
    r = compare("zn_base", "zn_two", &o);
    assert_int_equal(r->n_zones, 2);
    assert_true(r->zones[0].exceeds && r->zones[1].exceeds);
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
    assert_non_null(strstr(err, name));
}

/* The critical-path figures of an export are checked like every other figure. */
static void test_bad_path_input(void **state)
{
    (void)state;
    const char *pre = "{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [1, 2, 3], "
                      "\"frameOffCpuMs\": [0.5, 1, 1], ";
    char buf[768];
    const char *sys = "\"system\": {\"contextSwitches\": true, \"switchReasons\": true";
    snprintf(buf, sizeof buf, "%s%s}}", pre, sys);
    expect_load_error("p_missing.json", buf, "\"framePreemptedMs\" is missing");
    snprintf(buf, sizeof buf, "%s%s, \"criticalPath\": \"psychic\"}}", pre, sys);
    expect_load_error("p_model.json", buf, "\"criticalPath\" must be");
    snprintf(buf, sizeof buf, "%s\"system\": {\"contextSwitches\": true, \"criticalPath\": "
                              "\"wakers\"}}", pre);
    expect_load_error("p_noreasons.json", buf, "\"switchReasons\" is false");
    snprintf(buf, sizeof buf, "%s\"system\": {\"contextSwitches\": true, \"switchReasons\": 1}}",
             pre);
    expect_load_error("p_bool.json", buf, "\"switchReasons\" is not true or false");
    snprintf(buf, sizeof buf, "%s%s, \"pathTruncatedFrames\": -1}}", pre, sys);
    expect_load_error("p_count.json", buf, "\"pathTruncatedFrames\" is not a count");
    const char *arr = "\"framePreemptedMs\": [0.5, 0, 0], \"frameBlockedMs\": [0, 1, 1], ";
    snprintf(buf, sizeof buf, "%s%s\"frameWaitRunnableMs\": [0, 1.5, 0], %s}}", pre, arr, sys);
    expect_load_error("p_wait.json", buf, "frame 1: frameWaitRunnableMs exceeds frameBlockedMs");
    snprintf(buf, sizeof buf, "%s\"framePreemptedMs\": [0.5, 0.5, 0], \"frameBlockedMs\": "
                              "[0, 1, 1], \"frameWaitRunnableMs\": [0, 0, 0], %s}}", pre, sys);
    expect_load_error("p_sum.json", buf, "frame 1: framePreemptedMs + frameBlockedMs is not "
                                         "frameOffCpuMs");
    snprintf(buf, sizeof buf, "{\"schema\": \"mprof.frames.v1\", \"frameTimesMs\": [1, 2, 3], "
                              "\"frameOffCpuMs\": [2, 1, 1], \"framePreemptedMs\": [1, 0, 0], "
                              "\"frameBlockedMs\": [1, 1, 1], "
                              "\"frameWaitRunnableMs\": [0.5, 0, 0], %s}}",
             sys);
    expect_load_error("p_frame.json", buf, "frame 0: framePreemptedMs + frameWaitRunnableMs "
                                           "exceeds the frame time");
    snprintf(buf, sizeof buf, "%s%s\"frameWaitRunnableMs\": [0, 1], %s}}", pre, arr, sys);
    expect_load_error("p_len.json", buf, "\"frameWaitRunnableMs\" has a different length");
    /* A good one reads, skipping frames from every array alike. */
    snprintf(buf, sizeof buf, "%s%s\"frameWaitRunnableMs\": [0, 0.25, 1], %s, "
                              "\"criticalPath\": \"inferred\", \"pathTruncatedFrames\": 2}}",
             pre, arr, sys);
    char err[256];
    mprof_frames_run run;
    assert_int_equal(mprof__frames_parse(buf, strlen(buf), "good", 1, 0, &run, err, sizeof err),
                     0);
    assert_int_equal(run.n_frames, 2);
    assert_true(run.switch_reasons);
    assert_int_equal(run.critical_path, 1);
    assert_int_equal(run.path_truncated, 2);
    assert_float_equal(run.wait_runnable_ms[0], 0.25, 1e-12);
    assert_float_equal(run.preempted_ms[1], 0.0, 1e-12);
    /* Decision time: frame 1 of the file is 2 ms less 0.25 ms of its wait. */
    assert_float_equal(mprof__gate_decision_ms(&run, 0, MPROF_GATE_NOISE_CRITICAL_INFERRED),
                       1.75, 1e-12);
    assert_float_equal(mprof__gate_decision_ms(&run, 0, MPROF_GATE_NOISE_PREEMPTED), 2.0, 1e-12);
    assert_float_equal(mprof__gate_decision_ms(&run, 0, MPROF_GATE_NOISE_OFF_CPU), 1.0, 1e-12);
    mprof__frames_run_clear(&run);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mprof_test_gate_noise_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_critical_path_removes_preemption),
        cmocka_unit_test(test_model_of_the_weakest_run),
        cmocka_unit_test(test_sub_ms_loop_under_a_hog),
        cmocka_unit_test(test_untraced_frames_left_out),
        cmocka_unit_test(test_advice_names_runs),
        cmocka_unit_test(test_every_frame_unconfirmed),
        cmocka_unit_test(test_zone_past_threshold_is_named),
        cmocka_unit_test(test_bad_path_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
