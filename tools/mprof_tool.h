/*
 * mprof_tool.h - what the subcommands of the mprof command share.
 *
 * Exit codes (documented in docs/CLI.md): 0 success, 1 a verdict failed (regression, lost
 * events when asked to fail on them), 2 usage error, 3 input/output or format error. Commands
 * with more specific codes (capture, gate, ci) document them in their --help.
 */
#ifndef MPROF_TOOL_H
#define MPROF_TOOL_H

#include <stdio.h>

enum { EXIT_OK = 0, EXIT_VERDICT = 1, EXIT_USAGE = 2, EXIT_IO = 3 };
/* The run store cannot be reached or used (mprof ci --store, store, history; docs/STORE.md). */
enum { EXIT_STORE = 4 };

typedef struct mprof_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help; /* one line */
} mprof_cmd;

/* Prints "mprof CMD: message" on stderr and returns code. */
int tool_error(const char *cmd, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Flushes stdout; returns EXIT_IO when writing it failed (a closed pipe, a full disk). */
int tool_finish(const char *cmd, int code);
/* Removes a partly written output after a failure, but only when it is a regular file. */
void tool_remove_partial(const char *path);
/* True when both paths name one existing file (same device and inode, links followed): an
 * output that is also an input would be truncated before it is read. */
int tool_same_file(const char *a, const char *b);
/* An output file that appears only when it is complete. tool_output_open("-" or NULL) writes to
 * stdout; a regular file, a new name or a symlink to a file is written to a fresh temporary
 * file beside it (mkstemp, so no file of the user's is opened) that tool_output_close renames
 * into place, so a failed run leaves the previous file as it was; a device or FIFO is written in
 * place. Both return 0, or -1 with a message naming the user's path (never the temporary one)
 * in err. tool_output_close(o, 0, ...) discards the output. */
typedef struct tool_output {
    FILE *f;          /* where to write */
    const char *path; /* the user's path; NULL for stdout */
    char *tmp;        /* the temporary file (owned), NULL when writing in place or to stdout */
    char *dest;       /* what tmp is renamed to: path, or the file a symlink names (owned) */
} tool_output;
int tool_output_open(tool_output *o, const char *path, char *err, size_t errlen);
int tool_output_close(tool_output *o, int ok, char *err, size_t errlen);
/* True when out would land inside the folder in (in is a directory and out's parent directory is
 * in or below it), or out and in are one file: an output that would change an input. */
int tool_output_hits_input(const char *out, const char *in);
/* Copies up to n bytes of s (stopping at a NUL) into out as printable text: printable ASCII
 * kept, a backslash doubled, every other byte as \xNN; cut to fit outn. Returns out. For
 * strings from outside (a peer's messages, app names) before they reach a terminal. */
const char *tool_escape(const void *s, size_t n, char *out, size_t outn);
/* 0 when path can be read twice (a regular file); otherwise prints why not (a pipe, a device,
 * a directory) and returns -1. report, view, export and diff open a capture more than once. */
int tool_check_rereadable(const char *cmd, const char *path);
/* True when arg is -h or --help. */
int tool_is_help(const char *arg);
/* Parses a non-negative integer option value; returns 0 or prints an error and returns -1. */
int tool_parse_uint(const char *cmd, const char *flag, const char *value, unsigned long long max,
                    unsigned long long *out);

int cmd_report(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_ci(int argc, char **argv);
/* mprof view --serve (tools/view_serve.c): indexes capture (index_path NULL = beside it) and
 * serves the viewer on address:port (0 = any free port, printed on stdout) until SIGINT or
 * SIGTERM. Returns an exit code. */
int mprof__view_serve(const char *capture, const char *index_path, const char *address, unsigned port);
/* mprof view --live: runs `mprof capture` into capture and serves the growing capture. */
typedef struct mprof_view_live_opts {
    const char *capture, *index_path;   /* -o FILE; --index */
    const char *process_address;        /* -a: the process (default 127.0.0.1) */
    unsigned port;                      /* -p: its port */
    const char *address;                /* --address: the viewer's server */
    unsigned http_port;                 /* --port */
    int force;                          /* -f */
} mprof_view_live_opts;
int mprof__view_live(const mprof_view_live_opts *o);
int cmd_store(int argc, char **argv);
int cmd_history(int argc, char **argv);
/* The instrumented workload of `mprof ci --self-test` (tools/ci_workload.c). */
int mprof__ci_workload(long frames, double slow_pct);

#endif
