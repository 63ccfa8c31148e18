/*
 * cmd_merge.c - `mprof merge`: several captures as one, each input a process of it.
 *
 * The work is the merger's (src/format/merge.c); this file parses the options, refuses an output
 * that is one of the inputs, and reads the merged capture back before it says it is written.
 */
#include "format/merge.h"
#include "mprof_tool.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const help =
    "usage: mprof merge A.mprof B.mprof ... -o OUT.mprof [options]\n"
    "\n"
    "Writes one capture in which each input is a process, with its name and pid, its threads\n"
    "grouped under it, and its events on one timeline (docs/CAPTURE.md, \"Several processes\").\n"
    "An input that is itself a merged capture keeps its processes. Inputs recorded on one\n"
    "machine with one timer (INFO hostname and timer equal) are placed by their clocks; inputs\n"
    "from different machines by their recorded wall-clock starts; --offset places an input\n"
    "by hand. The merged capture's INFO says which (merge_alignment: clock, wallclock, offset\n"
    "or mixed). A part that ended early (a killed process, a cut-off file) is kept and marked:\n"
    "mprof report shows its processes[].ended_by.\n"
    "\n"
    "Options:\n"
    "  -o FILE             the merged capture (required; written whole or not at all)\n"
    "  -f                  overwrite FILE if it exists (refused otherwise)\n"
    "  --offset FILE=NS    place input FILE's time 0 NS nanoseconds after the first input's\n"
    "                      (negative: before); not for the first input, which the others are\n"
    "                      placed from\n"
    "  --name FILE=NAME    the process name of input FILE (default: its INFO app)\n"
    TOOL_JOBS_HELP
    "  -h, --help          show this help\n"
    "\n"
    "Exit status: 0 merged, 2 usage error, 3 an input cannot be read or is corrupt, or the\n"
    "output cannot be written.\n";

#define MAX_INPUTS 256

/* FILE=VALUE of --offset and --name: the input it names (by the path as given; the first '='
 * after which what comes before is an input, so names and paths may hold '='), and the value.
 * Returns the input's index, or -1 after a usage message. */
static int split_assign(const char *flag, const char *v, const mprof_merge_input *in, int n,
                        const char **value)
{
    for (const char *eq = strchr(v, '='); eq; eq = strchr(eq + 1, '=')) {
        for (int i = 0; i < n; i++) {
            if (strlen(in[i].path) == (size_t)(eq - v) && memcmp(in[i].path, v, (size_t)(eq - v)) == 0) {
                *value = eq + 1;
                return i;
            }
        }
    }
    if (!strchr(v, '='))
        tool_error("merge", EXIT_USAGE, "%s needs FILE=VALUE, not '%s'", flag, v);
    else
        tool_error("merge", EXIT_USAGE, "%s %s: no input is named before its '='", flag, v);
    return -1;
}

int cmd_merge(int argc, char **argv)
{
    mprof_merge_input in[MAX_INPUTS];
    int n = 0, force = 0;
    const char *out = NULL;
    /* Assignments are resolved once every input is known (they may come before it). */
    const char *assigns[2 * MAX_INPUTS];
    int is_offset[2 * MAX_INPUTS], n_assign = 0;
    memset(in, 0, sizeof in);
    tool_args args = tool_args_start("merge", help, argc, argv, NULL, 0);
    for (;;) {
        const char *a;
        int k = tool_args_next(&args, &a);
        if (k == TOOL_ARG_END)
            break;
        if (k == TOOL_ARG_FILE) {
            if (n == MAX_INPUTS)
                return tool_error("merge", EXIT_USAGE, "more than %d inputs", MAX_INPUTS);
            in[n++].path = a;
        } else if (strcmp(a, "-o") == 0) {
            if (!(out = tool_args_value(&args)))
                return tool_error("merge", EXIT_USAGE, "-o needs a file name");
        } else if (strcmp(a, "-f") == 0) {
            force = 1;
        } else if (strcmp(a, "--offset") == 0 || strcmp(a, "--name") == 0) {
            const char *v = tool_args_value(&args);
            if (!v)
                return tool_error("merge", EXIT_USAGE, "%s needs FILE=VALUE", a);
            if (n_assign == 2 * MAX_INPUTS)
                return tool_error("merge", EXIT_USAGE, "too many %s", a);
            is_offset[n_assign] = strcmp(a, "--offset") == 0;
            assigns[n_assign++] = v;
        } else if (strcmp(a, "--jobs") == 0) {
            if (tool_jobs("merge", &args))
                return EXIT_USAGE;
        } else {
            return tool_args_unknown(&args, a);
        }
    }
    if (args.stop)
        return args.code;
    if (!out)
        return tool_error("merge", EXIT_USAGE, "no output file: give -o OUT.mprof (see --help)");
    if (n == 0)
        return tool_error("merge", EXIT_USAGE, "no input capture (see --help)");
    for (int i = 0; i < n_assign; i++) {
        const char *v;
        const char *flag = is_offset[i] ? "--offset" : "--name";
        int k = split_assign(flag, assigns[i], in, n, &v);
        if (k < 0)
            return EXIT_USAGE;
        if (is_offset[i]) {
            char *end;
            errno = 0;
            long long ns = strtoll(v, &end, 10);
            if (!*v || *end || errno)
                return tool_error("merge", EXIT_USAGE, "--offset %s: '%s' is not a whole number "
                                  "of nanoseconds", assigns[i], v);
            if (k == 0)
                return tool_error("merge", EXIT_USAGE, "--offset %s: the first input is where "
                                  "the others are placed from; give the others' offsets",
                                  assigns[i]);
            in[k].has_offset = 1;
            in[k].offset_ns = ns;
        } else {
            in[k].name = v;
        }
    }
    struct stat st;
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
        return tool_error("merge", EXIT_USAGE, "-o %s is a directory", out);
    for (int i = 0; i < n; i++)
        if (tool_same_file(out, in[i].path))
            return tool_error("merge", EXIT_USAGE, "-o %s is also an input", out);
    if (!force && stat(out, &st) == 0)
        return tool_error("merge", EXIT_IO, "%s already exists; use -f to overwrite it", out);
    char err[512];
    mprof_merge_result res;
    if (mprof_merge(in, (uint32_t)n, out, &res, err, sizeof err) != 0)
        return tool_error("merge", EXIT_IO, "%s", err);
    /* Exit 0 promises a capture the reader takes whole: read it back. */
    mprof_reader *r = mprof_reader_open(out, err, sizeof err);
    int rc = r ? 1 : -1;
    if (r) {
        static const unsigned char none[MPROF_EV_MAX];
        mprof_reader_want(r, none);
        mprof_batch b;
        while ((rc = mprof_reader_next_batch(r, &b)) == 1)
            ;
        mprof_reader_stats rs;
        mprof_reader_get_stats(r, &rs);
        if (rc < 0)
            snprintf(err, sizeof err, "%s", mprof_reader_error(r));
        else if (!mprof_reader_stats_whole(&rs))
            rc = -1, snprintf(err, sizeof err, "it is not whole (%s)", mprof_ending_name(rs.ending));
        mprof_reader_close(r);
    }
    if (rc < 0)
        return tool_error("merge", EXIT_IO, "the merged capture %s does not read back: %s", out,
                          err);
    fprintf(stderr, "mprof merge: wrote %s: %" PRIu32 " processes, %" PRIu64 " events, %" PRIu64
            " lost, aligned by %s\n", out, res.processes, res.events, res.events_lost,
            res.alignment);
    if (res.ended_early)
        fprintf(stderr, "mprof merge: %" PRIu32 " process(es) ended early (killed, crashed or "
                        "cut off): mprof report shows which\n", res.ended_early);
    return tool_finish("merge", EXIT_OK);
}
