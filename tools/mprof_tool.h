/*
 * mprof_tool.h - the subcommands of the mprof command: one cmd_<name>.c each, listed in main.c's
 * table.
 */
#ifndef MPROF_TOOL_H
#define MPROF_TOOL_H

#include "util/tool.h"

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
