/*
 * supervise.c - one command run beside `mprof capture`, and both seen to their end.
 *
 * The command runs as a child with MPROF_LISTEN=1 and the chosen address and port in its
 * environment; `mprof capture` (this same binary) runs beside it with --history, so the frames
 * from before the tool connected are in the capture too. When the command ends, the process
 * hands the session its last chunks and END, and the capture tool exits by itself; if it does not
 * within --drain-seconds (the process never connected, say), it is stopped with SIGINT, which
 * finalises whatever it wrote. The command also writes an in-process capture file, which
 * artifact.c falls back to when the live capture missed the run.
 *
 * Nothing of a run outlives ci, however ci ends (a SIGKILL included): the capture tool asks the
 * kernel for SIGTERM when ci dies (PR_SET_PDEATHSIG; it then finalises its file and exits); the
 * command runs in a process group of its own, so that whatever it starts (a script's game) is
 * found again, and a watchdog forked from ci, told of ci's death the same way, ends that group
 * (SIGTERM, then SIGKILL after WATCHDOG_GRACE_S) and with it the port the process listened on.
 * While ci lives, the watchdog only waits; ci ends it when the run is over.
 *
 * A Ctrl-C reaches ci and the tool (the terminal's process group); ci passes SIGINT or SIGTERM
 * on to the command's group, once, and stays to collect what there is and write the report.
 */
#define _POSIX_C_SOURCE 200809L

#include "ci/ci.h"
#include "util/tool.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What the command's group gets between SIGTERM and SIGKILL once ci is gone. */
#define WATCHDOG_GRACE_S 5

static volatile sig_atomic_t g_interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

int mprof__ci_interrupted(void)
{
    return g_interrupted != 0;
}

void mprof__ci_clear_interrupt(void)
{
    g_interrupted = 0;
}

double mprof__ci_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int mprof__ci_self_path(char *out, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", out, n - 1);
    if (len <= 0)
        return -1;
    out[len] = '\0';
    return 0;
}

/* Waits for pid until deadline (monotonic seconds; <0 = forever). Returns 1 and the status when
 * it exited, 0 when still running at the deadline. */
static int wait_until(pid_t pid, double deadline, int *status)
{
    for (;;) {
        pid_t w = waitpid(pid, status, deadline < 0 ? 0 : WNOHANG);
        if (w == pid)
            return 1;
        if (w < 0 && errno != EINTR) {
            *status = 0;
            return 1;
        }
        if (deadline >= 0 && mprof__ci_now() >= deadline)
            return 0;
        if (deadline >= 0) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

static pid_t spawn_capture(const mprof_ci_opts *o, const char *self, const char *artifact,
                           const char *log)
{
    char port[16], secs[32];
    snprintf(port, sizeof port, "%u", o->port);
    snprintf(secs, sizeof secs, "%g", o->seconds);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* Told when ci dies, however: SIGTERM makes the tool finalise its file and exit. A ci that
     * died before the request took effect is seen by its pid. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
        _exit(127);
    FILE *f = freopen(log, "w", stdout);
    if (f)
        dup2(fileno(stdout), 2);
    const char *argv[20];
    int k = 0;
    argv[k++] = self;
    argv[k++] = "capture";
    argv[k++] = "-o";
    argv[k++] = artifact;
    argv[k++] = "-f";
    argv[k++] = "-a";
    argv[k++] = o->address;
    argv[k++] = "-p";
    argv[k++] = port;
    argv[k++] = "--history";
    argv[k++] = "60";
    if (o->seconds > 0) {
        argv[k++] = "-s";
        argv[k++] = secs;
    }
    argv[k] = NULL;
    execv(self, (char *const *)argv);
    _exit(127);
}

static pid_t spawn_command(const mprof_ci_opts *o, char **argv, const char *sha,
                           const char *inprocess)
{
    char port[16];
    snprintf(port, sizeof port, "%u", o->port);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid > 0)
        setpgid(pid, pid); /* here as well as in the child: whichever runs first */
    if (pid != 0)
        return pid;
    setpgid(0, 0);
    /* The command itself is told too, for the moment before the watchdog is there. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
        _exit(127);
    setenv("MPROF_LISTEN", "1", 1);
    setenv("MPROF_ADDRESS", o->address, 1);
    setenv("MPROF_PORT", port, 1);
    /* Both sinks: the live session, and an in-process file in case the command ends before the
     * tool has connected (a run shorter than the tool's 100 ms retry). */
    setenv("MPROF_CAPTURE", inprocess, 1);
    if (sha[0])
        setenv("MPROF_GIT_SHA", sha, 1);
    if (o->quiet) {
        FILE *f = freopen("/dev/null", "w", stdout);
        (void)f;
    }
    execvp(argv[0], argv);
    fprintf(stderr, "mprof ci: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* The watchdog of the command's process group: a fork of ci that waits for ci's death
 * (PR_SET_PDEATHSIG) and then ends the group. Returns its pid, or -1. It never returns in the
 * child. */
static pid_t spawn_watchdog(pid_t group)
{
    pid_t parent = getpid();
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    /* Blocked before the fork, so a death between fork and sigwait is not missed. */
    sigprocmask(SIG_BLOCK, &term, &old);
    pid_t pid = fork();
    if (pid != 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        return pid;
    }
    /* A Ctrl-C is for ci to pass on, not for the watchdog. */
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) == 0) {
        /* SIGTERM comes from the kernel when ci dies; ci itself ends the watchdog with SIGKILL.
         * The parent's pid is looked at too, once a second, in case the request was late. */
        while (getppid() == parent) {
            struct timespec one = {1, 0};
            if (sigtimedwait(&term, NULL, &one) == SIGTERM)
                break;
        }
    } else {
        while (getppid() == parent)
            sleep(1);
    }
    if (kill(-group, SIGTERM) != 0)
        _exit(0); /* the group is gone already */
    for (int i = 0; i < WATCHDOG_GRACE_S * 10; i++) {
        struct timespec t = {0, 100 * 1000 * 1000};
        nanosleep(&t, NULL);
        if (kill(-group, 0) != 0)
            _exit(0);
    }
    kill(-group, SIGKILL);
    _exit(0);
}

/* True when the file at path contains needle (the capture tool's log). */
static int log_says(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* Waits for the command, passing a signal that reached ci alone on to it, once; fills r's
 * command fields and reasons. Returns 1 when it failed. */
static int wait_command(const mprof_ci_opts *o, pid_t cmd, mprof_ci_result *r)
{
    int status = 0, forwarded = 0;
    for (;;) {
        pid_t w = waitpid(cmd, &status, 0);
        if (w == cmd || (w < 0 && errno != EINTR))
            break;
        if (g_interrupted && !forwarded) {
            kill(-cmd, SIGINT); /* its group: the terminal's Ctrl-C does not reach it */
            forwarded = 1;
        }
    }
    r->cmd_ran = 1;
    if (WIFEXITED(status)) {
        r->cmd_exit = WEXITSTATUS(status);
        if (!mprof__ci_exit_expected(o, r->cmd_exit)) {
            if (r->cmd_exit == 127)
                mprof__ci_reason(r, "the command could not be run (exit 127)");
            else
                mprof__ci_reason(r, "the command failed with exit code %d%s", r->cmd_exit,
                                 o->n_expect_exit ? " (not one of --expect-exit)" : "");
        }
    } else if (WIFSIGNALED(status)) {
        r->cmd_signal = WTERMSIG(status);
        mprof__ci_reason(r, "the command was killed by signal %d", r->cmd_signal);
    }
    return !mprof__ci_exit_expected(o, r->cmd_exit) || r->cmd_signal != 0;
}

/* Lets the capture finish on its own (the process sends END at exit), then stops it. A tool that
 * never connected gets one second, not the whole drain time. */
static void drain_capture(const mprof_ci_opts *o, pid_t cap, mprof_ci_result *r)
{
    double td = mprof__ci_now();
    int cst = 0;
    double first = o->drain_seconds < 1.0 ? o->drain_seconds : 1.0;
    int exited = wait_until(cap, mprof__ci_now() + first, &cst);
    if (!exited && log_says(r->capture_log, "capturing"))
        exited = wait_until(cap, td + o->drain_seconds, &cst);
    if (!exited) {
        kill(cap, SIGINT);
        if (!wait_until(cap, mprof__ci_now() + 5.0, &cst)) {
            kill(cap, SIGKILL);
            wait_until(cap, -1, &cst);
        }
    }
    r->capture_exit =
        WIFEXITED(cst) ? WEXITSTATUS(cst) : 128 + (WIFSIGNALED(cst) ? WTERMSIG(cst) : 0);
    r->t_drain = mprof__ci_now() - td;
}

int mprof__ci_supervise(const mprof_ci_opts *o, char **argv, const char *artifact,
                        const char *self, const char *inprocess, mprof_ci_result *r,
                        pid_t *out_cmd)
{
    int failed = 0;
    fflush(stdout);
    fflush(stderr);
    /* The children get default handlers back at exec. */
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    *out_cmd = -1;
    pid_t cap = spawn_capture(o, self, artifact, r->capture_log);
    if (cap < 0) {
        mprof__ci_reason(r, "cannot start mprof capture: %s", strerror(errno));
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        return -1;
    }
    double tc = mprof__ci_now();
    tool_remove_partial(inprocess);
    pid_t cmd = spawn_command(o, argv, r->git_sha, inprocess);
    pid_t dog = -1;
    if (cmd < 0) {
        mprof__ci_reason(r, "cannot start the command: %s", strerror(errno));
        failed = 1;
    } else {
        dog = spawn_watchdog(cmd);
        if (dog < 0)
            mprof__ci_warning(r, "cannot start the watchdog of the command (%s): if ci is killed, the command "
                              "may outlive it", strerror(errno));
        failed = wait_command(o, cmd, r);
    }
    *out_cmd = cmd;
    r->t_command = mprof__ci_now() - tc;
    if (g_interrupted) {
        mprof__ci_reason(r, "interrupted (SIGINT or SIGTERM) while the command ran");
        failed = 1;
    }
    drain_capture(o, cap, r);
    if (dog > 0) {
        int dst;
        kill(dog, SIGKILL);
        wait_until(dog, -1, &dst);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return failed;
}
