/*
 * capture_multi.c - `mprof capture -o FILE -p PORT -p PORT2 ...`: several processes into one
 * capture.
 *
 * Each process is captured by this command's own one-process capture, in a child of its own,
 * into a part file (FILE.parts/<n>.mprof), so each part is as crash-safe as a one-process
 * capture: written chunk by chunk, finalised by its child whatever its process does. A process
 * that exits or dies ends only its part (its child writes the end record that says so); -s, Ctrl-C
 * and SIGTERM end them all (the children get the signal, or have it passed on). When every part
 * has ended, the merger (src/format/merge.c) joins them into FILE, one process each, marking a
 * part that ended early, and the parts are removed. If this tool is killed, the parts stay and
 * `mprof merge` joins them.
 *
 * capture_multi_start and capture_multi_wait are the two halves, so that another front end (a
 * live view of several processes) can start the parts and read them as they grow.
 */
#include "format/merge.h"
#include "mprof_tool.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_multi_stop;

static void on_multi_signal(int sig)
{
    (void)sig;
    g_multi_stop = 1;
}

/* Options with a value, as the one-process capture takes them. */
static int takes_value(const char *a)
{
    return strcmp(a, "-o") == 0 || strcmp(a, "-a") == 0 || strcmp(a, "-p") == 0 ||
           strcmp(a, "-s") == 0 || strcmp(a, "-m") == 0 || strcmp(a, "--history") == 0 ||
           strcmp(a, "--wait") == 0;
}

int capture_port_count(int argc, char **argv)
{
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-p") == 0)
            n++;
        if (takes_value(argv[i]))
            i++;
    }
    return n;
}

int capture_multi_start(capture_multi *m, int argc, char **argv)
{
    memset(m, 0, sizeof *m);
    const char *addrs[CAPTURE_MAX_PARTS];
    int n_addr = 0, force = 0;
    /* The options every part takes as they are: -s, -m, --history, --wait, --fail-on-lost. */
    char *common[32];
    int n_common = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (tool_is_help(a))
            return -2;
        if (takes_value(a) && !v)
            return tool_error("capture", EXIT_USAGE, "%s needs a value", a);
        if (strcmp(a, "-o") == 0) {
            m->out = v;
        } else if (strcmp(a, "-p") == 0) {
            if (m->n == CAPTURE_MAX_PARTS)
                return tool_error("capture", EXIT_USAGE, "more than %d ports", CAPTURE_MAX_PARTS);
            unsigned long long u;
            if (tool_parse_uint("capture", "-p", v, 65535, &u))
                return EXIT_USAGE;
            if (u == 0)
                return tool_error("capture", EXIT_USAGE, "-p: port 0 is not valid");
            m->port[m->n++] = v;
        } else if (strcmp(a, "-a") == 0) {
            if (n_addr == CAPTURE_MAX_PARTS)
                return tool_error("capture", EXIT_USAGE, "more than %d addresses",
                                  CAPTURE_MAX_PARTS);
            addrs[n_addr++] = v;
        } else if (strcmp(a, "-f") == 0) {
            force = 1;
        } else if (strcmp(a, "--fail-on-lost") == 0 || takes_value(a)) {
            if (n_common + 2 > 30)
                return tool_error("capture", EXIT_USAGE, "too many options");
            common[n_common++] = argv[i];
            if (takes_value(a))
                common[n_common++] = argv[i + 1];
        } else {
            return tool_error("capture", EXIT_USAGE, "unknown argument '%s' (see --help)", a);
        }
        if (takes_value(a))
            i++;
    }
    if (!m->out)
        return tool_error("capture", EXIT_USAGE, "no output file: give -o FILE (see --help)");
    if (n_addr > 1 && n_addr != m->n)
        return tool_error("capture", EXIT_USAGE, "%d addresses for %d ports: give one -a for all "
                          "of them or one for each -p, in order", n_addr, m->n);
    struct stat st;
    if (stat(m->out, &st) == 0 && S_ISDIR(st.st_mode))
        return tool_error("capture", EXIT_USAGE, "-o %s is a directory: give a file name",
                          m->out);
    if (!force && stat(m->out, &st) == 0)
        return tool_error("capture", EXIT_IO, "%s already exists; use -f to overwrite it", m->out);
    snprintf(m->dir, sizeof m->dir, "%s.parts", m->out);
    if (!force && stat(m->dir, &st) == 0)
        return tool_error("capture", EXIT_IO, "%s already exists (the parts of a capture whose "
                          "tool was killed? `mprof merge %s/*.mprof -o %s` joins them); use -f "
                          "to replace it", m->dir, m->dir, m->out);
    if (tool_mkdirs(m->dir) != 0)
        return tool_error("capture", EXIT_IO, "cannot create %s: %s", m->dir, strerror(errno));
    for (int k = 0; k < m->n; k++)
        snprintf(m->part[k], sizeof m->part[k], "%s/%d.mprof", m->dir, k + 1);

    struct sigaction sa = {0};
    sa.sa_handler = on_multi_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    fprintf(stderr, "mprof capture: capturing %d processes into %s (the parts are in %s until "
                    "every one has ended; if this tool is killed, `mprof merge %s/*.mprof -o %s` "
                    "joins them)\n", m->n, m->out, m->dir, m->dir, m->out);
    fflush(stderr);
    for (int k = 0; k < m->n; k++) {
        char *av[48];
        int ac = 0;
        av[ac++] = "capture";
        av[ac++] = "-o";
        av[ac++] = m->part[k];
        av[ac++] = "-f";
        if (n_addr) {
            av[ac++] = "-a";
            av[ac++] = (char *)addrs[n_addr == 1 ? 0 : k];
        }
        av[ac++] = "-p";
        av[ac++] = (char *)m->port[k];
        for (int c = 0; c < n_common; c++)
            av[ac++] = common[c];
        av[ac] = NULL;
        pid_t pid = fork();
        if (pid < 0) {
            tool_error("capture", EXIT_IO, "cannot start the capture of port %s: %s", m->port[k],
                       strerror(errno));
            m->code[k] = EXIT_IO;
            continue;
        }
        if (pid == 0) {
            /* The child: the one-process capture, without a progress line (several would
             * overwrite each other). */
            capture_part_mode = 1;
            fflush(NULL);
            _exit(cmd_capture(ac, av));
        }
        m->pid[k] = pid;
    }
    return 0;
}

int capture_multi_wait(capture_multi *m)
{
    int live = 0, passed_on = 0;
    for (int k = 0; k < m->n; k++)
        live += m->pid[k] > 0;
    while (live) {
        if (g_multi_stop && !passed_on) {
            /* Ctrl-C reaches the children from the terminal; SIGTERM sent to this tool alone
             * does not: pass it on, once (a second one is harmless to them). */
            for (int k = 0; k < m->n; k++)
                if (m->pid[k] > 0)
                    kill(m->pid[k], SIGTERM);
            passed_on = 1;
        }
        int status;
        pid_t p = waitpid(-1, &status, 0);
        if (p < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int k = 0; k < m->n; k++) {
            if (m->pid[k] != p)
                continue;
            m->code[k] = WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_IO;
            if (!WIFEXITED(status))
                fprintf(stderr, "mprof capture: the capture of port %s was killed (signal %d); "
                                "its part is kept up to its last chunk\n",
                        m->port[k], WIFSIGNALED(status) ? WTERMSIG(status) : 0);
            m->pid[k] = 0;
            live--;
        }
    }
    return 0;
}

int capture_multi_finish(capture_multi *m)
{
    mprof_merge_input in[CAPTURE_MAX_PARTS];
    int n = 0, worst = 0;
    struct stat st;
    for (int k = 0; k < m->n; k++) {
        if (m->code[k] > worst)
            worst = m->code[k];
        if (stat(m->part[k], &st) == 0) {
            memset(&in[n], 0, sizeof in[n]);
            in[n++].path = m->part[k];
        }
    }
    if (n == 0) {
        rmdir(m->dir);
        return tool_error("capture", worst ? worst : EXIT_IO, "no process was captured; %s was "
                          "not written", m->out);
    }
    char err[512];
    mprof_merge_result res;
    if (mprof_merge(in, (uint32_t)n, m->out, &res, err, sizeof err) != 0)
        return tool_error("capture", EXIT_IO, "joining the parts failed: %s; the parts stay in "
                          "%s (`mprof merge %s/*.mprof -o %s` joins them)", err, m->dir, m->dir,
                          m->out);
    for (int k = 0; k < n; k++)
        unlink(in[k].path);
    rmdir(m->dir);
    fprintf(stderr, "mprof capture: wrote %s: %" PRIu32 " processes, %" PRIu64 " events, %" PRIu64
            " lost, aligned by %s\n", m->out, res.processes, res.events, res.events_lost,
            res.alignment);
    if (res.ended_early)
        fprintf(stderr, "mprof capture: %" PRIu32 " process(es) ended before the capture did "
                        "(exited, killed or crashed): mprof report shows which\n",
                res.ended_early);
    return tool_finish("capture", worst);
}

int capture_multi_run(int argc, char **argv)
{
    capture_multi m;
    int rc = capture_multi_start(&m, argc, argv);
    if (rc == -2)
        return -2;
    if (rc != 0)
        return rc;
    capture_multi_wait(&m);
    return capture_multi_finish(&m);
}
