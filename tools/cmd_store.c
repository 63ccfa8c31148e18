/*
 * cmd_store.c - `mprof store add FILE... --store URL`: put runs made elsewhere (a CI report, or a
 * bare frame export) into the run store, one stored run per file. docs/STORE.md describes it.
 */
#include "ci/report.h"
#include "mprof_tool.h"
#include "store/ci_hooks.h"
#include "store/store.h"
#include "store/store_json.h"

#include <stdlib.h>
#include <string.h>

static const char *const help =
    "usage: mprof store add FILE... --store URL [--verdict V] [--branch B]\n"
    "\n"
    "Adds one run per FILE to the run store. FILE is a CI report (ci-report.json, schema\n"
    "mprof.ciReport.v1: its verdict, command, capture and frame exports are stored) or a frame\n"
    "export (mprof export CAPTURE --format frames; stored with verdict no-baseline, so a\n"
    "rolling baseline may use it).\n"
    "\n"
    "Options:\n"
    "  --store URL     sqlite:PATH or postgresql://... (docs/STORE.md); default $MPROF_STORE\n"
    "  --verdict V     store this verdict instead (pass, regression, inconclusive,\n"
    "                  no-baseline, failed)\n"
    "  --branch B      the git branch (default $MPROF_GIT_BRANCH, else none)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Exit status: 0 every file stored; 2 usage error or a bad URL; 3 a file is unreadable or\n"
    "malformed (nothing of it is stored); 4 the store cannot be reached, its schema is newer than\n"
    "this mprof, or a write failed.\n";

int cmd_store(int argc, char **argv)
{
    if (argc < 2 || tool_is_help(argv[1])) {
        fputs(help, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : tool_finish("store", EXIT_OK);
    }
    if (strcmp(argv[1], "add") != 0)
        return tool_error("store", EXIT_USAGE, "unknown subcommand '%s' (mprof store add FILE... "
                          "--store URL; see --help)", argv[1]);
    const char *url = getenv("MPROF_STORE"), *verdict = NULL, *branch = getenv("MPROF_GIT_BRANCH");
    const char **files = calloc((size_t)argc, sizeof *files);
    if (!files)
        return tool_error("store", EXIT_IO, "out of memory");
    /* After "add": any number of files. */
    tool_args args = tool_args_start("store", help, argc - 1, argv + 1, files, argc);
    for (const char *a; tool_args_option(&args, &a);) {
        if (strcmp(a, "--store") == 0 || strcmp(a, "--verdict") == 0 ||
                   strcmp(a, "--branch") == 0) {
            const char *v = tool_args_value(&args);
            if (!v || !*v) {
                free(files);
                return tool_error("store", EXIT_USAGE, "%s needs a value", a);
            }
            if (a[2] == 's')
                url = v;
            else if (a[2] == 'v')
                verdict = v;
            else
                branch = v;
        } else {
            free(files);
            return tool_args_unknown(&args, a);
        }
    }
    int n_files = args.n_files;
    if (args.stop) {
        free(files);
        return args.code;
    }
    if (!url || !*url) {
        free(files);
        return tool_error("store", EXIT_USAGE, "no store: give --store URL (or set MPROF_STORE)");
    }
    if (verdict && !mprof__ci_verdict_known(verdict)) {
        free(files);
        return tool_error("store", EXIT_USAGE, "--verdict must be pass, regression, inconclusive, "
                          "no-baseline or failed");
    }
    if (n_files == 0) {
        free(files);
        return tool_error("store", EXIT_USAGE, "no file to add (mprof store add FILE... --store URL)");
    }
    char err[2048];
    mprof_store_result rc;
    mprof_store_url parsed;
    if (mprof__store_parse_url(url, &parsed, err, sizeof err) != MPROF_STORE_OK) {
        free(files);
        return tool_error("store", EXIT_USAGE, "%s", err);
    }
    /* Read every file first: a malformed one stores nothing and needs no database. */
    mprof_store_run *runs = calloc((size_t)n_files, sizeof *runs);
    int code = runs ? EXIT_OK : EXIT_IO;
    for (int i = 0; runs && i < n_files && code == EXIT_OK; i++) {
        rc = mprof__store_load_file(files[i], &runs[i], err, sizeof err);
        if (rc != MPROF_STORE_OK) {
            code = tool_error("store", EXIT_IO, "%s", err);
            break;
        }
        if (verdict) {
            free(runs[i].verdict);
            runs[i].verdict = tool_strdup(verdict);
        }
        if (branch && *branch && !runs[i].branch)
            runs[i].branch = tool_strdup(branch);
    }
    mprof_store *s = NULL;
    if (code == EXIT_OK) {
        s = mprof__store_open(url, &rc, err, sizeof err);
        if (!s)
            code = tool_error("store", mprof__store_exit_code(rc), "%s", err);
    }
    for (int i = 0; s && i < n_files && code == EXIT_OK; i++) {
        rc = mprof__store_add(s, &runs[i], err, sizeof err);
        if (rc != MPROF_STORE_OK) {
            code = tool_error("store", mprof__store_exit_code(rc), "%s: %s", files[i], err);
            break;
        }
        printf("stored %s as run %lld in %s (%zu frames, %zu repetition%s, verdict %s)%s\n",
               files[i], (long long)runs[i].id, mprof__store_display(s), runs[i].frame_count,
               runs[i].n_reps, runs[i].n_reps == 1 ? "" : "s", runs[i].verdict,
               mprof__store_added_note(&runs[i]));
    }
    mprof__store_close(s);
    mprof__store_runs_free(runs, runs ? (size_t)n_files : 0);
    free(files);
    return tool_finish("store", code);
}
