/*
 * main.c - the mprof command: a table of subcommands, git-style.
 */
#include "mprof_tool.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static const mprof_cmd commands[] = {
    {"report", cmd_report, "print statistics of a capture (frames, zones, plots, messages)"},
    {"capture", cmd_capture, "capture a running process over the network into a .mprof file"},
    {"merge", cmd_merge, "merge captures into one, each a process, on one timeline"},
    {"view", cmd_view, "write a self-contained HTML timeline of a capture"},
    {"export", cmd_export, "export a capture as a Perfetto trace, Chrome trace JSON or CSV"},
    {"query", cmd_query, "ask a capture questions in SQL (threads, zones, frames, ... tables)"},
    {"diff", cmd_diff, "compare two captures: frame times and zones by impact"},
    {"gate", cmd_gate, "decide whether frame times regressed against a baseline (statistical)"},
    {"ci", cmd_ci, "run a test command under capture, export, gate and write a CI report"},
    {"store", cmd_store, "add CI reports or frame exports to a run store (SQLite or PostgreSQL)"},
    {"history", cmd_history, "list the runs of a run store, as text, JSON or an HTML trend page"},
    {"doctor", cmd_doctor, "say what this machine allows a capture, and how to enable what it lacks"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: mprof <command> [options]\n\nCommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\n'mprof <command> --help' describes a command; 'mprof --version' prints the "
                 "version.\nOptions take their value as '--opt value' or '--opt=value';\n'--' ends the "
                 "options (what follows is a file, even one named -x.mprof).\nExit codes: 0 ok, 1 verdict failed, 2 usage error, 3 I/O or format error (a closed "
                 "output pipe included).\n");
}

/* Edit distance, to suggest a command for a typo. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];
    if (la >= 63 || lb >= 63)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof cur);
    }
    return prev[lb];
}

/* A closed output pipe (mprof report x | head) makes writes fail with EPIPE, which the
 * commands report as exit 3, instead of killing the tool with SIGPIPE (141). A handler, not
 * SIG_IGN: exec resets it, so the commands mprof ci runs get SIGPIPE as usual. */
static void on_sigpipe(int sig)
{
    (void)sig;
}

/* '--opt=value' becomes '--opt' 'value' for every command but ci, whose own options end where
 * the command it runs begins (its arguments are not mprof's to rewrite); '--' ends the
 * rewriting. Returns the new argv (owned by the process), or argv itself. */
static char **split_equals(int *argc, char **argv)
{
    int n = 0;
    for (int i = 1; i < *argc && strcmp(argv[i], "--") != 0; i++)
        n += strncmp(argv[i], "--", 2) == 0 && strchr(argv[i], '=') != NULL;
    if (!n)
        return argv;
    char **out = calloc((size_t)(*argc + n + 1), sizeof *out);
    if (!out)
        return argv;
    int k = 0, done = 0;
    out[k++] = argv[0];
    for (int i = 1; i < *argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!done && strcmp(argv[i], "--") == 0)
            done = 1;
        if (!done && strncmp(argv[i], "--", 2) == 0 && eq) {
            out[k++] = strndup(argv[i], (size_t)(eq - argv[i]));
            out[k++] = eq + 1;
        } else {
            out[k++] = argv[i];
        }
    }
    *argc = k;
    return out;
}

int main(int argc, char **argv)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_sigpipe;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
    if (argc < 2 || tool_is_help(argv[1])) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : tool_finish("help", EXIT_OK);
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("mprof 0.1\n");
        return tool_finish("version", EXIT_OK);
    }
    /* Captures are decoded with one thread a core unless a command's --jobs says otherwise. */
    mprof_set_read_jobs(0);
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            int n = argc - 1;
            char **v = argv + 1;
            if (strcmp(argv[1], "ci") != 0)
                v = split_equals(&n, v);
            return commands[i].fn(n, v);
        }
    fprintf(stderr, "mprof: '%s' is not an mprof command.", argv[1]);
    size_t best = 99, bi = 0;
    for (size_t i = 0; i < N_COMMANDS; i++) {
        size_t d = distance(argv[1], commands[i].name);
        if (d < best) {
            best = d;
            bi = i;
        }
    }
    if (best <= 2)
        fprintf(stderr, " Did you mean '%s'?", commands[bi].name);
    fprintf(stderr, " See 'mprof --help'.\n");
    return EXIT_USAGE;
}
