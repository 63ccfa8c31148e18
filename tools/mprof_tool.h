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
int cmd_merge(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_ci(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/* Several processes in one capture (capture_multi.c): one child per port runs the one-process
 * capture (cmd_capture, with capture_part_mode set: no progress line) into a part file, and the
 * parts are merged when all have ended. */
#define CAPTURE_MAX_PARTS 64
typedef struct capture_multi {
    const char *out;
    char dir[4096];                       /* FILE.parts */
    int n;
    const char *port[CAPTURE_MAX_PARTS];
    char part[CAPTURE_MAX_PARTS][4200];   /* FILE.parts/<n>.mprof */
    int pid[CAPTURE_MAX_PARTS];           /* the child, 0 once it has ended */
    int code[CAPTURE_MAX_PARTS];          /* its exit status */
} capture_multi;
extern int capture_part_mode;
/* The -p options of a capture command line. */
int capture_port_count(int argc, char **argv);
/* Checks the options, makes FILE.parts and starts a child per port. Returns 0, -2 when help was
 * asked for (cmd_capture prints it), or an exit status after a message. */
int capture_multi_start(capture_multi *m, int argc, char **argv);
/* Waits until every child has ended; a SIGINT or SIGTERM to this tool is passed on to them. */
int capture_multi_wait(capture_multi *m);
/* Merges the parts into FILE and removes them (kept when merging fails). Returns the exit
 * status: the worst of the children's, or 3 when merging fails. */
int capture_multi_finish(capture_multi *m);
/* The three above in a row; -2 for help. */
int capture_multi_run(int argc, char **argv);

#endif
