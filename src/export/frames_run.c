/*
 * frames_run.c - the run model of frames_run.h: its figures and its writer.
 *
 * A frame-time summary is defined here once: the gate's side figures, a stored run's figures and
 * each stored repetition's come from mprof__frames_summarize, so one fix lands in all of them.
 * The writer turns a run in memory back into a frame export, which is how the run store hands
 * its rolling baseline to the gate: a file the gate reads like any other.
 */
#include "export/frames_run.h"
#include "analysis/percentile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mprof__frames_run_clear(mprof_frames_run *run)
{
    if (!run)
        return;
    char *strs[] = {run->path, run->file, run->process, run->command_line, run->git_sha,
                    run->hostname, run->cpu, run->build_type, run->start_time,
                    run->system_why_not};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        free(strs[i]);
    free(run->frames_ms);
    free(run->on_cpu_ms);
    free(run->off_cpu_ms);
    free(run->cpu_ms);
    free(run->machine_busy);
    free(run->preempted_ms);
    free(run->blocked_ms);
    free(run->wait_runnable_ms);
    for (size_t i = 0; i < run->n_zones; i++) {
        free(run->zones[i].name);
        free(run->zones[i].function);
        free(run->zones[i].self_ms);
        free(run->zones[i].incl_ms);
        free(run->zones[i].self_off_ms);
    }
    free(run->zones);
    memset(run, 0, sizeof *run);
}

void mprof__frames_runs_free(mprof_frames_runs *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_runs; i++)
        mprof__frames_run_clear(&s->runs[i]);
    free(s->runs);
    free(s->origin);
    free(s);
}

/* ---- figures -------------------------------------------------------------------------------- */

static double mean_of(const double *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return n ? sum / (double)n : 0.0;
}

int mprof__frames_summarize(const double *v, size_t n, size_t runs, mprof_frames_summary *out)
{
    memset(out, 0, sizeof *out);
    out->runs = runs;
    out->frames = n;
    if (n == 0)
        return 0;
    double *s = malloc(n * sizeof *s);
    if (!s) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    memcpy(s, v, n * sizeof *s);
    mprof__sort_doubles(s, n);
    out->p50_ms = mprof__percentile_sorted(s, n, 50);
    out->p90_ms = mprof__percentile_sorted(s, n, 90);
    out->p95_ms = mprof__percentile_sorted(s, n, 95);
    out->p99_ms = mprof__percentile_sorted(s, n, 99);
    out->mean_ms = mean_of(s, n);
    free(s);
    return 0;
}

int mprof__frames_runs_summarize(const mprof_frames_runs *s, mprof_frames_summary *out)
{
    size_t total = 0;
    for (size_t i = 0; i < s->n_runs; i++)
        total += s->runs[i].n_frames;
    double *v = malloc((total ? total : 1) * sizeof *v);
    if (!v) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < s->n_runs; i++) {
        memcpy(v + k, s->runs[i].frames_ms, s->runs[i].n_frames * sizeof *v);
        k += s->runs[i].n_frames;
    }
    int rc = mprof__frames_summarize(v, total, s->n_runs, out);
    free(v);
    return rc;
}

int mprof__frames_run_summarize(mprof_frames_run *run)
{
    memset(&run->summary, 0, sizeof run->summary);
    run->summary.runs = 1;
    run->summary.frames = run->n_frames;
    if (run->frames_ms && mprof__frames_summarize(run->frames_ms, run->n_frames, 1, &run->summary))
        return -1;
    for (size_t z = 0; z < run->n_zones; z++)
        if (run->zones[z].self_ms)
            run->zones[z].self_mean_ms = mean_of(run->zones[z].self_ms, run->n_frames);
    return 0;
}

/* ---- writer --------------------------------------------------------------------------------- */

/* A string that says something, or null. */
static void str_or_null(mprof_json *j, const char *key, const char *v)
{
    if (v && *v)
        mprof_json_str(j, key, v);
    else
        mprof_json_null(j, key);
}

static void num_array(mprof_json *j, const char *key, const double *v, size_t n)
{
    mprof_json_arr_begin(j, key);
    for (size_t i = 0; i < n; i++)
        mprof_json_num(j, NULL, v[i]);
    mprof_json_arr_end(j);
}

int mprof__frames_write(const mprof_frames_run *run, const mprof_frames_origin *origin, FILE *out)
{
    mprof_json j;
    mprof_json_init(&j, out, 0);
    mprof_json_obj_begin(&j, NULL);
    mprof_json_str(&j, "schema", MPROF_FRAMES_SCHEMA);
    mprof_json_obj_begin(&j, "capture");
    mprof_json_str(&j, "file", run->file);
    str_or_null(&j, "commandLine", run->command_line);
    str_or_null(&j, "startTime", run->start_time);
    str_or_null(&j, "gitSha", run->git_sha);
    mprof_json_str(&j, "gitShaSource", origin->git_sha_source);
    str_or_null(&j, "hostname", run->hostname);
    str_or_null(&j, "cpu", run->cpu);
    str_or_null(&j, "buildType", run->build_type);
    mprof_json_bool(&j, "complete", origin->complete);
    if (origin->capture_extra)
        origin->capture_extra(&j, origin->ctx);
    mprof_json_obj_end(&j);
    mprof_json_null(&j, "frameSet");
    mprof_json_num(&j, "frameCount", (double)run->n_frames);
    if (run->n_frames) {
        const mprof_frames_summary *s = &run->summary;
        mprof_json_num(&j, "p50FrameTimeMs", s->p50_ms);
        mprof_json_num(&j, "p90FrameTimeMs", s->p90_ms);
        mprof_json_num(&j, "p95FrameTimeMs", s->p95_ms);
        mprof_json_num(&j, "p99FrameTimeMs", s->p99_ms);
        mprof_json_num(&j, "meanFrameTimeMs", s->mean_ms);
    }
    num_array(&j, "frameTimesMs", run->frames_ms, run->frames_ms ? run->n_frames : 0);
    if (run->on_cpu_ms && run->off_cpu_ms) {
        num_array(&j, "frameOnCpuMs", run->on_cpu_ms, run->n_frames);
        num_array(&j, "frameOffCpuMs", run->off_cpu_ms, run->n_frames);
    }
    mprof_json_arr_begin(&j, "zones");
    for (size_t z = 0; z < run->n_zones; z++) {
        const mprof_frames_zone *zn = &run->zones[z];
        mprof_json_obj_begin(&j, NULL);
        mprof_json_str(&j, "name", zn->name);
        if (zn->function)
            mprof_json_str(&j, "function", zn->function);
        if (isfinite(zn->self_total_ms))
            mprof_json_num(&j, "selfTotalMs", zn->self_total_ms);
        if (zn->incl_ms)
            num_array(&j, "perFrameMs", zn->incl_ms, run->n_frames);
        if (zn->self_ms)
            num_array(&j, "selfPerFrameMs", zn->self_ms, run->n_frames);
        if (zn->self_off_ms)
            num_array(&j, "selfOffCpuPerFrameMs", zn->self_off_ms, run->n_frames);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);
    mprof_json_arr_begin(&j, "warnings");
    mprof_json_arr_end(&j);
    mprof_json_obj_end(&j);
    return ferror(out) ? -1 : 0;
}
