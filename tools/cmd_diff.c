/*
 * cmd_diff.c - `mprof diff A B`: what changed between two captures.
 */
#include "analysis/diff.h"
#include "mprof_tool.h"

#include <string.h>

static const char *const help =
    "usage: mprof diff [options] A.mprof B.mprof\n"
    "\n"
    "Compares two captures: frame-time count, mean, p50, p90, p95, p99 and max side by side;\n"
    "then every zone (matched by name, file and line) with its count, mean and p95 in A and B\n"
    "and its impact, the change of its total time per frame (per second of capture when a\n"
    "capture has no frames), sorted by the size of the impact; zones found in one capture only\n"
    "are marked. Deltas are B - A: positive means slower in B.\n"
    "When either capture has several processes (mprof merge), both sides' processes are\n"
    "listed and zones pair only within a process of one name, each row with its process.\n"
    "\n"
    "Options:\n"
    "  --json          print one JSON object (docs/EXPORT.md) instead of text\n"
    "  --top N         zone rows (default 30; 0 = all)\n"
    TOOL_JOBS_HELP
    "  -h, --help      show this help\n"
    "\n"
    "mprof view A.mprof B.mprof shows the same comparison in the page of B.\n"
    "Exit status: 0 ok, 2 usage error, 3 a capture cannot be read.\n";

int cmd_diff(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    int json = 0;
    unsigned long long top = 30;
    tool_args args = tool_args_start("diff", help, argc, argv, paths, 2);
    for (const char *a; tool_args_option(&args, &a);) {
        if (strcmp(a, "--jobs") == 0) {
            if (tool_jobs("diff", &args))
                return EXIT_USAGE;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--top") == 0) {
            if (tool_parse_uint("diff", "--top", tool_args_value(&args), 1000000, &top))
                return EXIT_USAGE;
        } else {
            return tool_args_unknown(&args, a);
        }
    }
    if (args.stop)
        return args.code;
    if (args.n_files != 2)
        return tool_error("diff", EXIT_USAGE, "give two captures: mprof diff A.mprof B.mprof");
    char err[512];
    for (int i = 0; i < 2; i++)
        if (paths[i] && tool_check_rereadable("diff", paths[i]))
            return EXIT_USAGE;
    mprof_diff *d = mprof__diff_run(paths[0], paths[1], err, sizeof err);
    if (!d)
        return tool_error("diff", EXIT_IO, "%s", err);
    if (json)
        mprof__diff_print_json(d, stdout, (int)top);
    else
        mprof__diff_print_text(d, stdout, (int)top);
    mprof__diff_free(d);
    return tool_finish("diff", EXIT_OK);
}
