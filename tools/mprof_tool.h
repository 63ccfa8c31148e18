/*
 * mprof_tool.h - the subcommands of the mprof command: one cmd_<name>.c each, listed in main.c's
 * table.
 */
#ifndef MPROF_TOOL_H
#define MPROF_TOOL_H

#include "format/batch.h"
#include "util/tool.h"

/* The --jobs line of the help of every command that reads captures. */
#define TOOL_JOBS_HELP                                                                             \
    "  --jobs N        threads that decode the capture (default: one a core; 1: none, for\n"      \
    "                  reproducible timings); the output is the same for any N\n"

/* --jobs N: the reader threads of every capture the command reads from now on (1-256; 0 = one a
 * core). Returns 0, or -1 after a usage message. */
static inline int tool_jobs(const char *cmd, tool_args *args)
{
    unsigned long long v;
    if (tool_parse_uint(cmd, "--jobs", tool_args_value(args), 256, &v))
        return -1;
    mprof_set_read_jobs((int)v);
    return 0;
}

typedef struct mprof_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help; /* one line */
} mprof_cmd;

int cmd_report(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_ci(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

#endif
