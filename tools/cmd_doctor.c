/*
 * cmd_doctor.c - `mprof doctor`: what this machine allows a capture, what each missing piece
 * costs, and the command that enables it. The checks are in src/doctor/.
 */
#include "doctor/doctor.h"
#include "mprof_tool.h"

#include <string.h>

static const char *const help =
    "usage: mprof doctor [--json]\n"
    "\n"
    "Checks what this machine lets a capture record, the way the profiled program will ask for\n"
    "it: the clock zones are stamped with (an invariant CPU counter, or the OS clock and its\n"
    "clocksource), perf_event_paranoid and this process's privileges, per-thread context-switch\n"
    "events, tracefs and the system-wide sched tracepoints, cpu-clock callstack sampling, the\n"
    "locked-memory limit for the perf rings, and transparent huge pages for the live-capture\n"
    "history ring. For each: what it found, what a capture gives up without it, and the exact\n"
    "command that enables it. Run it as the user (and with the capabilities) the program runs\n"
    "with: a program given CAP_PERFMON with setcap may be allowed more than this shell.\n"
    "\n"
    "Options:\n"
    "  --json          print one JSON object (schema mprof.doctor.v1, docs/DOCTOR.md)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Exit status: 0 everything a full capture needs is there (some checks may still say\n"
    "'degraded': complete, but costlier); 1 something is missing; 2 usage error; 3 the output\n"
    "could not be written.\n";

int cmd_doctor(int argc, char **argv)
{
    int json = 0;
    tool_args args = tool_args_start("doctor", help, argc, argv, NULL, 0);
    tool_args_refuse_files(&args, EXIT_USAGE);
    for (const char *a; tool_args_option(&args, &a);) {
        if (strcmp(a, "--json") == 0)
            json = 1;
        else
            return tool_args_unknown(&args, a);
    }
    if (args.stop)
        return args.code;
    mprof_doctor_sys sys;
    mprof_doctor_sys_default(&sys);
    mprof_doctor_check checks[MPROF_DOCTOR_MAX_CHECKS];
    size_t n = mprof_doctor_run(&sys, checks);
    if (json)
        mprof_doctor_print_json(stdout, checks, n);
    else
        mprof_doctor_print_text(stdout, checks, n);
    return tool_finish("doctor", mprof_doctor_ready(checks, n) ? EXIT_OK : EXIT_VERDICT);
}
