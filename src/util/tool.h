/*
 * tool.h - what every command of the mprof tool shares: exit codes, error messages, outputs
 * that appear only when complete, escaping of outside strings for a terminal, option values.
 *
 * Exit codes (documented in docs/CLI.md): 0 success, 1 a verdict failed (regression, lost
 * events when asked to fail on them), 2 usage error, 3 input/output or format error. Commands
 * with more specific codes (capture, gate, ci) document them in their --help.
 *
 * Threads: the tool's one thread, except tool_escape (pure).
 */
#ifndef MPROF_UTIL_TOOL_H
#define MPROF_UTIL_TOOL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_VERDICT = 1, EXIT_USAGE = 2, EXIT_IO = 3 };
/* The run store cannot be reached or used (mprof ci --store, store, history; docs/STORE.md). */
enum { EXIT_STORE = 4 };

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
/* The one escaping of text from outside (a capture's names, a peer's messages, a store's rows)
 * before it reaches a terminal or a text output. Copies up to n bytes of s (stopping at a NUL)
 * into out: printable ASCII and well-formed UTF-8 kept, a backslash doubled, and as \xNN every
 * byte of a control character (C0, DEL, C1), of a bidirectional override or isolate, of a line
 * or paragraph separator, and of what is not UTF-8; cut to fit outn at a whole character or
 * escape. Returns out. JSON outputs escape as JSON instead (json_out.h). */
const char *tool_escape(const void *s, size_t n, char *out, size_t outn);
/* s (NULL: "") escaped as tool_escape does into buf of n bytes; returns buf, for a %s. */
const char *tool_text(const char *s, char *buf, size_t n);
/* s (NULL: "") escaped as tool_escape does, whole, to f. */
void tool_put_text(FILE *f, const char *s);
/* 0 when path can be read twice (a regular file); otherwise prints why not (a pipe, a device,
 * a directory) and returns -1. report, view, export and diff open a capture more than once. */
int tool_check_rereadable(const char *cmd, const char *path);
/* True when arg is -h or --help. */
int tool_is_help(const char *arg);
/* The options loop every command shares: the arguments in order; after '--' every argument is a
 * file, even one that starts with '-'; a lone '-' is a file (standard input or output); -h and
 * --help print the command's help. main.c has already split '--opt=value' into '--opt' 'value'.
 * A command whose files are plain paths hands tool_args_start where they go and sees only its
 * options:
 *     const char *path = NULL;
 *     tool_args args = tool_args_start("report", help, argc, argv, &path, 1);
 *     for (const char *a; tool_args_option(&args, &a);)
 *         if (strcmp(a, "--top") == 0) value = tool_args_value(&args); ...
 *         else return tool_args_unknown(&args, a);
 *     if (args.stop)
 *         return args.code;
 * A command that treats files itself (files NULL) reads them with tool_args_next. */
typedef struct tool_args {
    const char *cmd;    /* the command's name, for messages */
    const char *help;   /* what -h and --help print */
    const char **files; /* where files go, max_files at most; NULL: tool_args_next returns them */
    int max_files, n_files;
    int refuse_files;   /* a file is an unknown argument, a usage error with this exit code */
    int stop;           /* the command must return code now: help was printed, or a usage error */
    int code;
    int argc;
    char **argv;
    int i;              /* the next argument */
    int files_only;     /* '--' was seen */
} tool_args;
enum { TOOL_ARG_END = 0, TOOL_ARG_FILE, TOOL_ARG_OPTION };
tool_args tool_args_start(const char *cmd, const char *help, int argc, char **argv,
                          const char **files, int max_files);
/* For a command that takes no file: a file, or a '--', is an unknown argument, a usage error
 * that exits with code. */
void tool_args_refuse_files(tool_args *a, int code);
/* The next option in *out: 1. 0 at the end of the arguments, or with stop set when the command
 * must return code (its help printed, a file too many). */
int tool_args_option(tool_args *a, const char **out);
/* The next argument in *out and what it is: an option, a file (when files is NULL), or
 * TOOL_ARG_END at the end or with stop set as for tool_args_option. */
int tool_args_next(tool_args *a, const char **out);
/* After the loop of a command that reads its files more than once: 0 when it may go on; -1 when
 * it must return a->code (help printed, a usage error, fewer than min_files files, or a file
 * that cannot be read twice, such as a pipe). */
int tool_args_finish(tool_args *a, int min_files);
/* "unknown option" for arg, as a usage error; returns EXIT_USAGE. */
int tool_args_unknown(const tool_args *a, const char *arg);
/* The value of the option just read (the next argument, taken), or NULL when none is left. */
const char *tool_args_value(tool_args *a);
/* Parses a non-negative integer option value; returns 0 or prints an error and returns -1. */
int tool_parse_uint(const char *cmd, const char *flag, const char *value, unsigned long long max,
                    unsigned long long *out);
/* A malloc'd copy of s (of its first n bytes, NUL-terminated); NULL for NULL or out of memory. */
char *tool_strdup(const char *s);
char *tool_strndup(const char *s, size_t n);
/* Appends a message formatted from fmt and ap (cut at 511 bytes) to *lines, a malloc'd array of
 * *n malloc'd strings that the caller frees. Out of memory, the message is dropped and the array
 * is unchanged: a warning lost is better than a result lost. The gate and the frame export keep
 * their warnings this way. */
void tool_vappendf(char ***lines, size_t *n, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* Formats a message into err; nothing when err is NULL or errlen is 0. */
void tool_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The whole file at path in a malloc'd buffer with a NUL after its *out_len bytes (out_len may be
 * NULL). NULL with a message naming path in err when it cannot be opened or read, or holds more
 * than max_bytes. */
char *tool_read_file(const char *path, size_t max_bytes, size_t *out_len, char *err, size_t errlen);
/* Creates dir and its missing parents (mkdir -p). 0, or -1 with errno set. */
int tool_mkdirs(const char *dir);
/* A fresh random id of 32 lowercase hex digits (128 bits from the system's random source) in
 * out. Returns 0, or -1 when the system gives no randomness (out is then ""). A run carries one
 * from where it is made to the store, so that a write retried after a lost connection stores it
 * once. */
int tool_random_id(char out[33]);
/* True when s is such an id: exactly 32 lowercase hex digits. */
int tool_is_random_id(const char *s);
/* The commit being built: $MPROF_GIT_SHA, else `git rev-parse HEAD` in the current folder (a hex
 * SHA of 7 digits or more); "" when neither. *source (may be NULL) becomes "environment", "git"
 * or NULL. */
void tool_git_sha(char *out, size_t n, const char **source);
/* The branch: $MPROF_GIT_BRANCH, else `git rev-parse --abbrev-ref HEAD` unless that is "HEAD"
 * (a detached checkout); "" when neither. */
void tool_git_branch(char *out, size_t n);

#endif
