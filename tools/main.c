/*
 * main.c - the mprof command: a table of subcommands, git-style.
 */
#include "mprof_tool.h"

#include <string.h>

static const mprof_cmd commands[] = {
    {"report", cmd_report, "print statistics of a capture (frames, zones, plots, messages)"},
    {"capture", cmd_capture, "capture a running process over the network into a .mprof file"},
    {"view", cmd_view, "write a self-contained HTML timeline of a capture"},
    {"export", cmd_export, "export a capture as Chrome trace JSON or CSV"},
    {"diff", cmd_diff, "compare two captures: frame times and zones by impact"},
    {"gate", cmd_gate, "decide whether frame times regressed against a baseline (statistical)"},
    {"ci", cmd_ci, "run a test command under capture, export, gate and write a CI report"},
    {"store", cmd_store, "add CI reports or frame exports to a run store (SQLite or PostgreSQL)"},
    {"history", cmd_history, "list the runs of a run store, as text, JSON or an HTML trend page"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: mprof <command> [options]\n\nCommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\n'mprof <command> --help' describes a command. Exit codes: 0 ok, 1 verdict "
                 "failed, 2 usage error, 3 I/O or format error.\n");
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

int main(int argc, char **argv)
{
    if (argc < 2 || tool_is_help(argv[1])) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : tool_finish("help", EXIT_OK);
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("mprof 0.1\n");
        return tool_finish("version", EXIT_OK);
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
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
