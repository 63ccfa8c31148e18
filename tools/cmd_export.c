/*
 * cmd_export.c - `mprof export`: a capture in another tool's format (Perfetto's protobuf trace,
 * Chrome Trace Event JSON, CSV), or the frame-time file of `--format frames`. Exports stream:
 * see export/export.h and export/perfetto.h.
 */
#include "export/export.h"
#include "format/format.h"
#include "export/frames.h"
#include "export/perfetto.h"
#include "mprof_tool.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

static const char *const help =
    "usage: mprof export --format FORMAT [options] FILE.mprof\n"
    "\n"
    "Formats:\n"
    "  perfetto Perfetto's native protobuf trace (.pftrace): opens in ui.perfetto.dev and\n"
    "           Perfetto's trace processor. Zones are slices on thread tracks (source\n"
    "           locations interned), plots, memory and CPU usage are counter tracks, messages\n"
    "           are log messages with their priority, GPU zones are slices on their queue's\n"
    "           track with a flow from their CPU submit, lock waits and holds and frames have\n"
    "           their tracks, context switches and wake-ups are scheduler events (thread\n"
    "           states, CPU lanes), callstack samples are perf samples. A tenth of the size\n"
    "           of the Chrome JSON or less.\n"
    "  chrome   Chrome Trace Event JSON: opens in Perfetto (ui.perfetto.dev), chrome://tracing\n"
    "           and Tracy's importer. Zones are complete events with thread names, GPU zones\n"
    "           and lock spans have their own tracks, frames are events on a Frames track,\n"
    "           messages are instant events, plots and memory are counters.\n"
    "  csv      zone statistics, one row per source location: name, function, file, line,\n"
    "           count, total, self, mean, min, max, stddev, p50, p90, p95, p99 (ns).\n"
    "           With --per-zone: one row per zone with its track, start, duration and self time.\n"
    "  frames   frame times for mprof gate (see docs/GATE.md); a capture of several\n"
    "           processes (mprof merge) needs --process\n"
    "\n"
    "Options:\n"
    "  -f, --format F  perfetto, chrome, csv or frames (required)\n"
    "  -o FILE         output file (default: standard output)\n"
    "  --per-zone      csv: one row per zone occurrence\n"
    "  --frames A:B    only frames A to B - 1 of the main frame set (from 0, as in mprof view;\n"
    "                  A: or :B leave a side open): zones, spans and frames overlapping them,\n"
    "                  messages, plots and memory changes inside them; every format\n"
    "  --time S0:S1    the same for a time window, in seconds on the capture's clock (the\n"
    "                  Chrome export's ts / 1e6)\n"
    "  --process NAME  frames: the frames of process NAME of a capture of several (its main\n"
    "                  thread's marks, its zones, its identity; --frames A:B numbers its\n"
    "                  frames); refused when NAME is not one of the capture's processes\n"
    TOOL_JOBS_HELP
    "  -h, --help      show this help\n"
    "\n"
    "The capture is read once, as a stream: a capture larger than memory exports.\n"
    "A capture of several processes (mprof merge): perfetto and chrome put each process's\n"
    "threads under its own pid and name, csv adds a first column, process.\n"
    "Exit status: 0 ok, 2 usage error (a frame export of several processes without\n"
    "--process, an unknown process), 3 the capture cannot be read or the output not written.\n";

int cmd_export(int argc, char **argv)
{
    const char *path = NULL, *format = NULL, *out_path = NULL, *process = NULL;
    int per_zone = 0;
    mprof_export_range range = {.first_frame = -1};
    char rerr[512];
    tool_args args = tool_args_start("export", help, argc, argv, &path, 1);
    for (const char *a; tool_args_option(&args, &a);) {
        if (strcmp(a, "--jobs") == 0) {
            if (tool_jobs("export", &args))
                return EXIT_USAGE;
        } else if (strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) {
            if (!(format = tool_args_value(&args)))
                return tool_error("export", EXIT_USAGE, "%s needs a value: perfetto, chrome, csv or frames", a);
        } else if (strncmp(a, "--format=", 9) == 0) {
            format = a + 9;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (!(out_path = tool_args_value(&args)))
                return tool_error("export", EXIT_USAGE, "%s needs a file name", a);
        } else if (strcmp(a, "--process") == 0) {
            if (!(process = tool_args_value(&args)))
                return tool_error("export", EXIT_USAGE, "--process needs a process name");
        } else if (strcmp(a, "--per-zone") == 0) {
            per_zone = 1;
        } else if (strcmp(a, "--frames") == 0 || strcmp(a, "--time") == 0) {
            if (range.active)
                return tool_error("export", EXIT_USAGE, "one of --frames and --time, once");
            const char *v = tool_args_value(&args);
            if (!v)
                return tool_error("export", EXIT_USAGE, "%s needs a value (A:B)", a);
            int bad = a[2] == 'f' ? mprof__export_range_parse_frames(v, &range, rerr, sizeof rerr)
                                  : mprof__export_range_parse_time(v, &range, rerr, sizeof rerr);
            if (bad)
                return tool_error("export", EXIT_USAGE, "%s", rerr);
        } else {
            return tool_args_unknown(&args, a);
        }
    }
    if (tool_args_finish(&args, 1) != 0)
        return args.code;
    if (!format)
        return tool_error("export", EXIT_USAGE,
                          "--format is required: perfetto, chrome, csv or frames");
    int is_chrome = strcmp(format, "chrome") == 0, is_csv = strcmp(format, "csv") == 0;
    int is_perfetto = strcmp(format, "perfetto") == 0;
    if (out_path && strcmp(out_path, "-") != 0 && tool_same_file(path, out_path))
        return tool_error("export", EXIT_USAGE, "-o %s is the capture '%s' itself: writing would "
                          "destroy it; choose another output", out_path, path);
    if (strcmp(format, "frames") != 0 && !is_chrome && !is_csv && !is_perfetto)
        return tool_error("export", EXIT_USAGE,
                          "unknown format '%s': perfetto, chrome, csv or frames", format);
    if (mprof__export_range_resolve_process(path, &range, process, rerr, sizeof rerr) != 0)
        return tool_error("export", EXIT_IO, "%s", rerr);
    if (strcmp(format, "frames") == 0) {
        if (per_zone)
            return tool_error("export", EXIT_USAGE, "--per-zone applies to --format csv");
        char ferr[1536];
        int frc = mprof__export_frames_process(path, &range, process, out_path ? out_path : "-",
                                               ferr, sizeof ferr);
        if (frc != 0)
            return tool_error("export", frc == -2 ? EXIT_USAGE : EXIT_IO, "%s", ferr);
        return out_path && strcmp(out_path, "-") != 0 ? EXIT_OK : tool_finish("export", EXIT_OK);
    }
    if (per_zone && !is_csv)
        return tool_error("export", EXIT_USAGE, "--per-zone applies to --format csv");
    if (process)
        return tool_error("export", EXIT_USAGE, "--process applies to --format frames (the "
                          "other formats show every process)");
    int to_stdout = !out_path || strcmp(out_path, "-") == 0;
    if (is_perfetto && to_stdout && isatty(STDOUT_FILENO))
        return tool_error("export", EXIT_USAGE,
                          "a Perfetto trace is binary: give -o FILE.pftrace (or redirect it)");
    char err[512];
    /* A capture that cannot even be opened must not cost the user an existing output. */
    mprof_reader *probe = mprof_reader_open(path, err, sizeof err);
    if (!probe)
        return tool_error("export", EXIT_IO, "%s", err);
    mprof_reader_close(probe);
    /* The export goes to a temporary file renamed into place on success: a failure, even
     * half-way through, leaves an existing output as it was (half an export looks whole). */
    tool_output out;
    if (tool_output_open(&out, to_stdout ? NULL : out_path, err, sizeof err) != 0)
        return tool_error("export", EXIT_IO, "%s", err);
    mprof_perfetto_stats ps;
    int rc = is_perfetto ? mprof__export_perfetto(path, &range, out.f, &ps, err, sizeof err)
             : is_chrome ? mprof__export_chrome_range(path, &range, out.f, err, sizeof err)
             : per_zone  ? mprof__export_csv_zones_range(path, &range, out.f, err, sizeof err)
                         : mprof__export_csv_stats_range(path, &range, out.f, err, sizeof err);
    char oerr[512];
    if (tool_output_close(&out, rc == 0, oerr, sizeof oerr) != 0)
        return tool_error("export", EXIT_IO, "%s", rc != 0 ? err : oerr);
    /* What the trace could not show as the capture had it: said here as in the trace. */
    if (is_perfetto && (ps.zones_cut_by_loss || ps.zones_dropped_by_loss || ps.lost_events ||
                        ps.kernel_lost || ps.gpu_late || ps.clamped_ts))
        fprintf(stderr,
                "mprof export: %s: the capture lost %" PRIu64 " events (%" PRIu64 " zones open"
                " then are ended there and marked lost_end, %" PRIu64 " are left out) and the"
                " kernel %" PRIu64 " scheduler records; %" PRIu64 " GPU zones came too late for"
                " their lane; %" PRIu64 " timestamps before the start were written as 0\n",
                path, ps.lost_events, ps.zones_cut_by_loss, ps.zones_dropped_by_loss,
                ps.kernel_lost, ps.gpu_late, ps.clamped_ts);
    return to_stdout ? tool_finish("export", EXIT_OK) : EXIT_OK;
}
