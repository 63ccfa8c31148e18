/*
 * cmd_view.c - `mprof view`: one self-contained HTML page showing a capture (timeline, frame
 * graph, statistics, flame graph, memory, locks), and a comparison when given two captures.
 */
#include "analysis/diff.h"
#include "analysis/timeline.h"
#include "view/document.h"
#include "format/format.h"
#include "mprof_tool.h"
#include "view/serve.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const help =
    "usage: mprof view [options] FILE.mprof [NEW.mprof]\n"
    "       mprof view --serve FILE.mprof [OTHER.mprof] [--address ADDR] [--port P] [--index FILE]\n"
    "                  [--max-connections N]\n"
    "       mprof view --live -o FILE.mprof [-a ADDR] [-p PORT]... [-f] [--address ADDR] [--port P]\n"
    "\n"
    "Writes one HTML file that shows the capture in any browser, with no network access and\n"
    "nothing to install: a frame-time graph with p50/p95/budget lines (click a frame to zoom),\n"
    "a timeline with a track per thread, fiber, GPU context and lock, nested zones in their\n"
    "colors, a track per async track name with its spans in lanes, frame boundaries, messages\n"
    "and plots; tooltips; a sortable zone table (async tracks and span names too); a flame\n"
    "graph of the selected range; memory and lock views when the capture has those events.\n"
    "A capture of several processes (mprof merge, mprof capture -p A -p B) shows each\n"
    "process's thread tracks under a header row \"NAME (pid N)\" that folds them, and names the\n"
    "process in tooltips, statistics and find zone.\n"
    "Given two captures, the page shows the second one and a comparison with the first\n"
    "(as mprof diff FILE NEW).\n"
    "\n"
    "Options:\n"
    "  -o FILE         output file (default: the capture's name with .html)\n"
    "  --frames A:B    embed frames A to B-1 (0-based, as in the frame graph)\n"
    "  --max-zones N   embed at most about N zones (default 1000000); a larger capture embeds\n"
    "                  the frames around its worst frame and the page says what was left out\n"
    "  --budget MS     frame budget line in milliseconds (default 16.7)\n"
    "  --json          write the page's data document (docs/VIEW.md) instead of HTML\n"
    "  --serve         instead of a file, serve the viewer over HTTP for the whole capture, any\n"
    "                  size: it is indexed in one pass (kept in the index cache, rebuilt when\n"
    "                  the capture changes or the index does not check out) and the page asks\n"
    "                  for what it draws; Ctrl-C stops. Given two captures, the page compares\n"
    "                  them (Compare tab; the timeline switches between A and B)\n"
    "  --address ADDR  numeric address to listen on (default 127.0.0.1: this machine only)\n"
    "  --port P        port (default 8717; 0 = any free one); the URL is printed on stdout\n"
    "  --index FILE    where to keep the (first) capture's index (default: the index cache,\n"
    "                  $XDG_CACHE_HOME/mprof or ~/.cache/mprof, capped at MPROF_VIEW_CACHE_MB\n"
    "                  MiB, default 4096, the least recently used evicted first)\n"
    "  --max-connections N  with --serve or --live: connections served at once (default 1024);\n"
    "                  as many again are answered 503 with Retry-After, and a connection whose\n"
    "                  request is not in within 10 s, or its answer not taken within 30 s, ends\n"
    "  --live          capture a running process as `mprof capture -o FILE -a ADDR -p PORT` does\n"
    "                  and serve the capture while it grows: the page follows its end\n"
    "  -a ADDR, -p PORT  with --live: the process to attach to (default 127.0.0.1:8086); several\n"
    "                  -p (one -a for all, or one for each -p in order) capture several\n"
    "                  processes into one capture as `mprof capture` does, and the page shows\n"
    "                  them all as they grow (the parts in FILE.parts merged on each refresh)\n"
    "  -f              with --live: overwrite FILE\n"
    TOOL_JOBS_HELP
    "  -h, --help      show this help\n"
    "\n"
    "Exit status: 0 ok, 2 usage error, 3 a capture cannot be read or the output not written.\n";

static int parse_frames(const char *s, long long *a, long long *b)
{
    char *end;
    errno = 0;
    *a = strtoll(s, &end, 10);
    if (errno || end == s || *end != ':' || *a < 0)
        return -1;
    const char *t = end + 1;
    *b = strtoll(t, &end, 10);
    if (errno || end == t || *end || *b <= *a)
        return -1;
    return 0;
}

/* The comparison document as a string (caller frees), or NULL with err set. */
static char *diff_json(const char *a, const char *b, char *err, size_t errlen)
{
    mprof_diff *d = mprof__diff_run(a, b, err, errlen);
    if (!d)
        return NULL;
    FILE *t = tmpfile();
    char *s = NULL;
    if (t) {
        mprof__diff_print_json(d, t, 0);
        long n = ftell(t);
        if (n >= 0 && fseek(t, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1)) != NULL) {
            if (fread(s, 1, (size_t)n, t) != (size_t)n) {
                free(s);
                s = NULL;
            } else
                s[n] = 0;
        }
        fclose(t);
    }
    if (!s)
        snprintf(err, errlen, "cannot hold the comparison (temporary file or memory)");
    mprof__diff_free(d);
    return s;
}

int cmd_view(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    int json = 0, serve = 0, live = 0, force = 0;
    const char *address = "127.0.0.1", *index_path = NULL, *proc_address = "127.0.0.1";
    unsigned long long port = 8717, proc_port = 8086, max_conns = 0;
    /* --live: every -a and -p in order (several -p: several processes). */
    const char *live_addrs[MPROF_VIEW_LIVE_MAX];
    unsigned live_ports[MPROF_VIEW_LIVE_MAX];
    unsigned n_live_addrs = 0, n_live_ports = 0;
    const char *out_path = NULL;
    mprof_view_opts opts = {.first_frame = -1, .last_frame = -1};
    tool_args args = tool_args_start("view", help, argc, argv, paths, 2);
    for (const char *a; tool_args_option(&args, &a);) {
        if (strcmp(a, "--jobs") == 0) {
            if (tool_jobs("view", &args))
                return EXIT_USAGE;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (!(out_path = tool_args_value(&args)))
                return tool_error("view", EXIT_USAGE, "%s needs a file name", a);
        } else if (strcmp(a, "--frames") == 0) {
            const char *v = tool_args_value(&args);
            long long fa, fb;
            if (!v || parse_frames(v, &fa, &fb) != 0)
                return tool_error("view", EXIT_USAGE, "--frames wants A:B with 0 <= A < B (got '%s')",
                                  v ? v : "");
            opts.first_frame = fa;
            opts.last_frame = fb;
        } else if (strcmp(a, "--max-zones") == 0) {
            unsigned long long v;
            if (tool_parse_uint("view", "--max-zones", tool_args_value(&args), 1ull << 40, &v))
                return EXIT_USAGE;
            if (!v)
                return tool_error("view", EXIT_USAGE, "--max-zones must be at least 1");
            opts.max_zones = v;
        } else if (strcmp(a, "--budget") == 0) {
            const char *v = tool_args_value(&args);
            char *end;
            if (!v)
                v = "";
            opts.budget_ms = strtod(v, &end);
            if (end == v || *end || !(opts.budget_ms > 0 && opts.budget_ms < 1e6))
                return tool_error("view", EXIT_USAGE, "--budget wants milliseconds > 0 (got '%s')", v);
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--serve") == 0) {
            serve = 1;
        } else if (strcmp(a, "--live") == 0) {
            live = 1;
        } else if (strcmp(a, "-f") == 0) {
            force = 1;
        } else if (strcmp(a, "--address") == 0 || strcmp(a, "-a") == 0) {
            const char *v = tool_args_value(&args);
            if (!v || !v[0])
                return tool_error("view", EXIT_USAGE, "%s needs an address", a);
            if (a[1] == 'a') {
                proc_address = v;
                if (n_live_addrs == MPROF_VIEW_LIVE_MAX)
                    return tool_error("view", EXIT_USAGE, "more than %d -a", MPROF_VIEW_LIVE_MAX);
                live_addrs[n_live_addrs++] = v;
            } else
                address = v;
        } else if (strcmp(a, "--port") == 0 || strcmp(a, "-p") == 0) {
            if (tool_parse_uint("view", a, tool_args_value(&args), 65535, a[1] == 'p' ? &proc_port : &port))
                return EXIT_USAGE;
            if (a[1] == 'p' && !proc_port)
                return tool_error("view", EXIT_USAGE, "-p: port 0 is not valid");
            if (a[1] == 'p') {
                if (n_live_ports == MPROF_VIEW_LIVE_MAX)
                    return tool_error("view", EXIT_USAGE, "more than %d -p", MPROF_VIEW_LIVE_MAX);
                live_ports[n_live_ports++] = (unsigned)proc_port;
            }
        } else if (strcmp(a, "--max-connections") == 0) {
            if (tool_parse_uint("view", a, tool_args_value(&args), 65536, &max_conns))
                return EXIT_USAGE;
            if (!max_conns)
                return tool_error("view", EXIT_USAGE, "--max-connections must be at least 1");
        } else if (strcmp(a, "--index") == 0) {
            if (!(index_path = tool_args_value(&args)) || !index_path[0])
                return tool_error("view", EXIT_USAGE, "--index needs a file name");
        } else {
            return tool_args_unknown(&args, a);
        }
    }
    if (args.stop)
        return args.code;
    int n_paths = args.n_files;
    if (max_conns && !serve && !live)
        return tool_error("view", EXIT_USAGE, "--max-connections goes with --serve or --live");
    if (live) {
        if (serve || json || n_paths || !out_path)
            return tool_error("view", EXIT_USAGE, "--live takes -o FILE and no capture to read, --serve or --json");
        if (n_live_ports > 1 && n_live_addrs > 1 && n_live_addrs != n_live_ports)
            return tool_error("view", EXIT_USAGE, "give one -a for all the -p, or one for each (%u -a, %u -p)",
                              n_live_addrs, n_live_ports);
        mprof_view_live_opts lo = {.capture = out_path, .index_path = index_path, .process_address = proc_address,
                                   .port = (unsigned)proc_port, .address = address, .http_port = (unsigned)port,
                                   .force = force, .max_connections = (unsigned)max_conns,
                                   .ports = live_ports, .n_ports = n_live_ports,
                                   .process_addresses = live_addrs, .n_addresses = n_live_addrs};
        return mprof__view_live(&lo);
    }
    if (!n_paths)
        return tool_error("view", EXIT_USAGE, "no capture file given (see --help)");
    for (int i = 0; i < n_paths; i++)
        if (tool_check_rereadable("view", paths[i]))
            return EXIT_USAGE;
    if (serve) {
        if (out_path || json)
            return tool_error("view", EXIT_USAGE, "--serve takes one or two captures and no -o or --json");
        for (int i = 0; i < n_paths; i++)
            if (index_path && tool_same_file(paths[i], index_path))
                return tool_error("view", EXIT_USAGE, "--index %s is the capture itself", index_path);
        return mprof__view_serve(paths[0], n_paths == 2 ? paths[1] : NULL, index_path, address, (unsigned)port,
                                 (unsigned)max_conns);
    }
    const char *shown = paths[n_paths - 1];
    char def_out[4096];
    if (!out_path) {
        size_t l = strlen(shown);
        if (l > 6 && strcmp(shown + l - 6, ".mprof") == 0)
            l -= 6;
        if (l + 6 >= sizeof def_out)
            return tool_error("view", EXIT_USAGE, "capture name too long; give -o");
        snprintf(def_out, sizeof def_out, "%.*s.%s", (int)l, shown, json ? "json" : "html");
        out_path = def_out;
    }
    for (int i = 0; i < n_paths; i++)
        if (strcmp(out_path, "-") != 0 && tool_same_file(paths[i], out_path))
            return tool_error("view", EXIT_USAGE, "-o %s is the capture '%s' itself: writing would "
                              "destroy it; choose another output", out_path, paths[i]);
    char err[512];
    char *diff = NULL;
    if (n_paths == 2) {
        diff = diff_json(paths[0], paths[1], err, sizeof err);
        if (!diff)
            return tool_error("view", EXIT_IO, "%s", err);
        opts.diff_json = diff;
    }
    /* A capture that cannot even be opened must not cost the user an existing output. */
    mprof_reader *probe = mprof_reader_open(shown, err, sizeof err);
    if (!probe) {
        free(diff);
        return tool_error("view", EXIT_IO, "%s", err);
    }
    mprof_reader_close(probe);
    int to_stdout = strcmp(out_path, "-") == 0;
    /* Written to a temporary file renamed into place on success: a failure leaves an existing
     * output as it was. */
    tool_output out;
    if (tool_output_open(&out, to_stdout ? NULL : out_path, err, sizeof err) != 0) {
        free(diff);
        return tool_error("view", EXIT_IO, "%s", err);
    }
    int rc = json ? mprof__view_write(shown, &opts, out.f, err, sizeof err)
                  : mprof__view_write_html(shown, &opts, out.f, err, sizeof err);
    free(diff);
    char oerr[512];
    if (tool_output_close(&out, rc == 0, oerr, sizeof oerr) != 0) {
        if (rc == 0)
            return tool_error("view", EXIT_IO, "%s", oerr);
        return tool_error("view", strncmp(err, "--frames", 8) == 0 ? EXIT_USAGE : EXIT_IO, "%s", err);
    }
    if (!to_stdout) {
        fprintf(stderr, "mprof view: wrote %s\n", out_path);
        return EXIT_OK;
    }
    return tool_finish("view", EXIT_OK);
}
