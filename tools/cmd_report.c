/*
 * cmd_report.c - `mprof report`: a readable (or JSON) summary of a capture.
 */
#include "analysis/analysis.h"
#include "mprof_tool.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *const help =
    "usage: mprof report [options] FILE.mprof\n"
    "\n"
    "Prints a summary of a capture: duration, threads, events and lost events; frame\n"
    "statistics (count, mean, p50, p90, p95, p99, max; per named frame set too), frames that\n"
    "spanned lost events counted apart, the time before the first and after the last frame\n"
    "mark, and the share of main-thread frame time inside zones; zone statistics per source\n"
    "location sorted by total time (total counts recursion once; %frame and ms/frame count\n"
    "only time inside frames; * marks zones near the cost of an empty zone, measured at\n"
    "start-up); plots; messages per level. docs/STATISTICS.md says what each number means.\n"
    "\n"
    "Options:\n"
    "  --json          print one JSON object (schema mprof.report.v1) instead of text\n"
    "  --top N         rows in each text table (default 20; 0 = all; JSON lists all)\n"
    "  --memory        add the memory section (pools, leaks, callstacks)\n"
    "  --locks         add the lock contention section\n"
    "  --fibers        add the fiber section\n"
    "  --gpu           add the GPU section\n"
    "  --samples       add the hot functions of the callstack samples (MPROF_SAMPLE_HZ),\n"
    "                  overall and per innermost zone (docs/SYSTEM.md)\n"
    "  --all           add every section\n"
    TOOL_JOBS_HELP
    "  -h, --help      show this help\n"
    "\n"
    "The capture is read in two streaming passes: memory grows with the number of distinct\n"
    "zones and frames, not with the number of events.\n"
    "Exit status: 0 ok, 2 usage error, 3 the file cannot be read or is corrupt.\n";

int cmd_report(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0;
    unsigned long long top = 20;
    char passes[256] = "";
    tool_args args = tool_args_start("report", help, argc, argv, &path, 1);
    for (const char *a; tool_args_option(&args, &a);) {
        if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--top") == 0) {
            if (tool_parse_uint("report", "--top", tool_args_value(&args), 100000, &top))
                return EXIT_USAGE;
        } else if (strcmp(a, "--jobs") == 0) {
            if (tool_jobs("report", &args))
                return EXIT_USAGE;
        } else if (strcmp(a, "--all") == 0) {
            snprintf(passes, sizeof passes, "all");
        } else if (strcmp(a, "--memory") == 0 || strcmp(a, "--locks") == 0 ||
                   strcmp(a, "--fibers") == 0 || strcmp(a, "--gpu") == 0 ||
                   strcmp(a, "--samples") == 0) {
            if (strcmp(passes, "all") != 0) {
                size_t l = strlen(passes);
                snprintf(passes + l, sizeof passes - l, "%s%s", l ? "," : "", a + 2);
            }
        } else {
            return tool_args_unknown(&args, a);
        }
    }
    if (tool_args_finish(&args, 1) != 0)
        return args.code;
    mprof_analysis_opts opts = {.top_n = top ? (int)top : INT_MAX,
                                .passes = passes[0] ? passes : NULL};
    char err[512];
    mprof_analysis *an = mprof_analysis_run(path, &opts, err, sizeof err);
    if (!an)
        return tool_error("report", EXIT_IO, "%s", err);
    if (json)
        mprof_analysis_print_json(an, stdout);
    else
        mprof_analysis_print_text(an, stdout);
    mprof_analysis_free(an);
    return tool_finish("report", EXIT_OK);
}
