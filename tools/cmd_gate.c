/*
 * cmd_gate.c - `mprof gate`: compare frame exports of a baseline and a current build and decide
 * pass / regression / inconclusive (src/gate/ does the work; docs/GATE.md explains it).
 */
#include "gate/gate.h"
#include "mprof_tool.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RESAMPLES 1000000

static const char *const help =
    "usage: mprof gate --baseline DIR_OR_FILE --current DIR_OR_FILE [options]\n"
    "\n"
    "Compares frame times of a current build with a baseline and decides whether the current\n"
    "build regressed. Each side is a frame export (`mprof export CAPTURE --format frames`) or a\n"
    "directory of them (every *.json file, one per run; several runs make a distribution).\n"
    "\n"
    "A regression needs either\n"
    "  the p95 rule  current p95 frame time > baseline p95 * (1 + threshold / 100), and\n"
    "                significance: two or more runs per side, a one-sided Mann-Whitney rank\n"
    "                test on the frame times gives p < alpha, the bootstrap interval of the p95\n"
    "                ratio (runs, then blocks of frames resampled) and a run-level interval lie\n"
    "                above 1.0, and with enough runs per side a rank test on the per-run p95s\n"
    "                gives p < alpha; or\n"
    "  every frame   the frames (their median past the baseline's * (1 + threshold / 100), the\n"
    "  slower        rank test significant) and the runs (their medians' ratio past the same,\n"
    "                its one-sided interval above 1.0) agree that every frame got slower by\n"
    "                more than the threshold, whatever the p95 did.\n"
    "Frame times are decision times: with system tracing, each frame less the time its critical\n"
    "path was runnable but not running (the main thread preempted; inside its waits, the\n"
    "wake-up latency and the preemption of the thread it waited for), with the best model\n"
    "every run of both sides allows (critical-path, critical-path-inferred, preempted,\n"
    "off-cpu-machine-busy, off-cpu); the report names the model and how much it removed.\n"
    "Without system tracing, raw frame times, and a warning says so.\n"
    "When the p95 rule holds without the evidence, or the frames and the runs' estimate say\n"
    "every frame got slower past the threshold but the runs' interval does not confirm it,\n"
    "the verdict is inconclusive and says which --runs (runs a side) the measured run-to-run\n"
    "spread says would settle it. A regression\n"
    "names the zone whose self time per frame (on-CPU with system tracing) grew most\n"
    "significantly; a zone that grew significantly by more than the threshold's share of the\n"
    "frame is named first in every verdict; a pass whose distribution clearly shifted gets a\n"
    "warning.\n"
    "\n"
    "Options:\n"
    "  --baseline PATH            baseline frame export or directory (required)\n"
    "  --current PATH             current frame export or directory (required)\n"
    "  --threshold PCT            magnitude threshold in percent (default 10)\n"
    "  --alpha A                  significance level (default 0.05)\n"
    "  --skip-frames N            drop N warm-up frames at the start of each run (default 0)\n"
    "  --min-frames N             frames needed per side after skipping (default 60)\n"
    "  --allow-different-machines compare exports whose hostname, CPU or build type differ\n"
    "  --process NAME             every export of both sides must be of process NAME (its\n"
    "                             capture.process: `mprof export --process NAME` of a capture\n"
    "                             of several processes); bad input otherwise\n"
    "  --resamples N              bootstrap rounds (default 2000, at most 1000000)\n"
    "  --seed N                   bootstrap seed (default fixed, so verdicts repeat)\n"
    "  --top N                    zones in the attribution (default 5; 0 = all)\n"
    "  --json OUT                 write the report as JSON (schema mprof.gateReport.v1)\n"
    "  --markdown OUT             write the report as a Markdown table (a PR comment)\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Exit status: 0 pass, 1 regression, 2 inconclusive, 3 bad input (an unreadable or\n"
    "malformed export, exports from different machines or build types or of another process\n"
    "than --process, a usage error).\n"
    "Usage errors exit 3 here, not 2, so that 2 always means inconclusive.\n";

static int parse_double(const char *flag, const char *value, double lo, double hi, double *out)
{
    if (!value || !*value) {
        tool_error("gate", EXIT_IO, "%s needs a value", flag);
        return -1;
    }
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || *end || !isfinite(v) || v < lo || v > hi) {
        tool_error("gate", EXIT_IO, "%s: '%s' is not a number from %g to %g", flag, value, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* Writes a report (the result, or why there is none) to a temporary file renamed into place: a
 * failed run keeps the previous report. */
static int write_out(const char *path, const mprof_gate_result *r, const char *err_reason,
                     int (*fn)(const mprof_gate_result *, FILE *),
                     int (*refused)(const char *, FILE *))
{
    tool_output out;
    char oerr[512];
    if (tool_output_open(&out, path, oerr, sizeof oerr) != 0)
        return tool_error("gate", EXIT_IO, "%s", oerr);
    /* When the inputs could not be read the report still says so, for CI logs. */
    int rc = r ? fn(r, out.f) : refused(err_reason, out.f);
    if (tool_output_close(&out, rc == 0, oerr, sizeof oerr) != 0)
        return tool_error("gate", EXIT_IO, "%s", rc == 0 ? oerr : "writing the report failed");
    return 0;
}

int cmd_gate(int argc, char **argv)
{
    const char *base_path = NULL, *cur_path = NULL, *json_path = NULL, *md_path = NULL;
    mprof_gate_opts o = {0};
    unsigned long long u;
    tool_args args = tool_args_start("gate", help, argc, argv, NULL, 0);
    tool_args_refuse_files(&args, EXIT_IO);
    for (const char *a; tool_args_option(&args, &a);) {
        if (strcmp(a, "--baseline") == 0 || strcmp(a, "--current") == 0 ||
                   strcmp(a, "--json") == 0 || strcmp(a, "--markdown") == 0) {
            const char *v = tool_args_value(&args);
            if (!v || !*v)
                return tool_error("gate", EXIT_IO, "%s needs a path (see --help)", a);
            if (a[2] == 'b')
                base_path = v;
            else if (a[2] == 'c')
                cur_path = v;
            else if (a[2] == 'j')
                json_path = v;
            else
                md_path = v;
        } else if (strcmp(a, "--threshold") == 0) {
            if (parse_double(a, tool_args_value(&args), 0, 10000, &o.threshold_pct))
                return EXIT_IO;
            if (o.threshold_pct == 0)
                o.threshold_pct = -1; /* an explicit 0 %, not the default */
        } else if (strcmp(a, "--alpha") == 0) {
            if (parse_double(a, tool_args_value(&args), 1e-9, 0.5, &o.alpha))
                return EXIT_IO;
        } else if (strcmp(a, "--resamples") == 0) {
            /* Bounded: each round resamples every frame, so 1e8 rounds would run for minutes in
             * gigabytes without a word; a million is far past where the interval settles. */
            if (tool_parse_uint("gate", a, tool_args_value(&args), MAX_RESAMPLES, &u))
                return EXIT_IO;
            o.n_resamples = u ? (int)u : 1;
        } else if (strcmp(a, "--skip-frames") == 0 || strcmp(a, "--min-frames") == 0 ||
                   strcmp(a, "--top") == 0) {
            if (tool_parse_uint("gate", a, tool_args_value(&args), 100000000, &u))
                return EXIT_IO;
            if (strcmp(a, "--skip-frames") == 0)
                o.skip_frames = (int)u;
            else if (strcmp(a, "--min-frames") == 0)
                o.min_frames = u ? (int)u : 1;
            else
                o.top_zones = u ? (int)u : INT_MAX;
        } else if (strcmp(a, "--seed") == 0) {
            if (tool_parse_uint("gate", a, tool_args_value(&args), ~0ull, &u))
                return EXIT_IO;
            o.seed = u;
        } else if (strcmp(a, "--process") == 0) {
            const char *v = tool_args_value(&args);
            if (!v || !*v)
                return tool_error("gate", EXIT_IO, "--process needs a process name");
            o.process = v;
        } else if (strcmp(a, "--allow-different-machines") == 0) {
            o.allow_different_machines = 1;
        } else {
            return tool_error("gate", EXIT_IO, "unknown argument '%s' (see --help)", a);
        }
    }
    if (args.stop)
        return args.code;
    if (!base_path || !cur_path)
        return tool_error("gate", EXIT_IO, "--baseline and --current are required (see --help)");
    /* A report written over an input, or into an input folder, destroys the baseline or breaks
     * every later run that reads the folder. */
    const char *outs[2] = {json_path, md_path}, *ins[2] = {base_path, cur_path};
    for (int k = 0; k < 2; k++)
        for (int m = 0; m < 2; m++)
            if (tool_output_hits_input(outs[k], ins[m]))
                return tool_error("gate", EXIT_IO, "%s %s would overwrite or land inside the %s "
                                  "'%s'; choose an output outside the inputs",
                                  k ? "--markdown" : "--json", outs[k],
                                  m ? "current" : "baseline", ins[m]);
    if (json_path && md_path && strcmp(json_path, "-") != 0 &&
        (strcmp(json_path, md_path) == 0 || tool_same_file(json_path, md_path)))
        return tool_error("gate", EXIT_IO, "--json and --markdown name one file '%s'", json_path);

    char err[1024] = "";
    mprof_frames_runs *base = mprof__frames_load(base_path, o.skip_frames, err, sizeof err);
    mprof_frames_runs *cur = base ? mprof__frames_load(cur_path, o.skip_frames, err, sizeof err)
                                  : NULL;
    mprof_gate_result *r = NULL;
    if (base && cur)
        r = mprof__gate_compare(base, cur, &o, err, sizeof err);
    mprof__frames_runs_free(base);
    mprof__frames_runs_free(cur);

    int code;
    if (r) {
        code = (int)r->verdict;
        if (mprof__gate_print_text(r, stdout))
            code = EXIT_IO;
        if (r->verdict == MPROF_GATE_BAD_INPUT)
            fprintf(stderr, "mprof gate: %s\n", r->reason);
    } else {
        code = tool_error("gate", EXIT_IO, "%s", err);
    }
    if (json_path &&
        write_out(json_path, r, err, mprof__gate_write_json, mprof__gate_write_json_refused))
        code = EXIT_IO;
    if (md_path && write_out(md_path, r, err, mprof__gate_write_markdown,
                             mprof__gate_write_markdown_refused))
        code = EXIT_IO;
    mprof__gate_result_free(r);
    return tool_finish("gate", code);
}
