/*
 * test_hostile_ci.c - nothing of a run outlives `mprof ci`, however it ends: the real mprof ci
 * runs a command that starts the instrumented workload in the background (a script's game, a
 * grandchild of ci) beside its live capture, and is killed with SIGKILL, which it cannot catch.
 * The command, the workload and the capture tool all end, and the port the workload listened on
 * is free again. (They kept running and held the port, and the next run fell back to its
 * in-process capture.)
 *
 * This test is a child subreaper (PR_SET_CHILD_SUBREAPER): the orphans of the killed ci become
 * its children, so "nothing is left" is checked exactly, by reaping until there is no child.
 */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

/* Can a listener take the port (no process listens on it any more)? */
static int port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0;
    close(fd);
    return ok;
}

static int file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[2048];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static void test_ci_sigkill_leaves_nothing(void **state)
{
    (void)state;
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    const char *bin = tu_mprof_bin();
    char dir[512], pidfile[600], script[2048], port_s[16], log[600], caplog[700];
    snprintf(dir, sizeof dir, "%s", tu_temp_path("cikill"));
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(pidfile, sizeof pidfile, "%s/workload.pid", dir);
    snprintf(log, sizeof log, "%s/ci.log", dir);
    snprintf(caplog, sizeof caplog, "%s/out/capture.log", dir);
    int port = free_port();
    snprintf(port_s, sizeof port_s, "%d", port);
    /* The workload is a grandchild of ci: a script that runs the game in the background. */
    snprintf(script, sizeof script, "'%s' ci --self-test-workload --frames 10000000 & echo $! > '%s'; wait",
             bin, pidfile);
    char outdir[600];
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    pid_t ci = fork();
    assert_true(ci >= 0);
    if (ci == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(bin, bin, "ci", "--runs", "1", "--output-dir", outdir, "--port", port_s, "--", "sh", "-c",
              script, (char *)NULL);
        _exit(127);
    }
    /* Until the capture is under way and the workload listens. */
    double until = mono_s() + 60;
    while (mono_s() < until && !(file_has(caplog, "capturing") && access(pidfile, R_OK) == 0))
        sleep_ms(100);
    assert_true(file_has(caplog, "capturing"));
    FILE *pf = fopen(pidfile, "r");
    assert_non_null(pf);
    long wl = 0;
    assert_int_equal(fscanf(pf, "%ld", &wl), 1);
    fclose(pf);
    assert_true(wl > 0 && kill((pid_t)wl, 0) == 0);
    assert_false(port_free(port));

    assert_int_equal(kill(ci, SIGKILL), 0);
    int st;
    assert_int_equal(waitpid(ci, &st, 0), ci);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

    /* Every orphan (the command's shell, the workload, the capture tool, ci's watchdog) is now
     * this test's child: reap them until none is left. */
    int reaped = 0, none_left = 0;
    until = mono_s() + 30;
    while (mono_s() < until) {
        pid_t w = waitpid(-1, &st, WNOHANG);
        if (w > 0) {
            reaped++;
            continue;
        }
        if (w < 0 && errno == ECHILD) {
            none_left = 1;
            break;
        }
        sleep_ms(50);
    }
    double waited = 30 - (until - mono_s());
    int wl_gone = kill((pid_t)wl, 0) != 0 && errno == ESRCH;
    int freed = port_free(port);
    print_message("ci killed: %d orphans ended within %.1f s; workload gone %d; port free %d\n", reaped,
                  waited, wl_gone, freed);
    if (!none_left) {
        /* Leave nothing behind for the next test either. */
        kill((pid_t)wl, SIGKILL);
        while (waitpid(-1, &st, WNOHANG) > 0) {
        }
    }
    assert_true(none_left);
    assert_true(reaped >= 3); /* at least the shell, the workload and the capture tool */
    assert_true(wl_gone);
    assert_true(freed);
    /* The capture tool was told too: it finished its file. */
    assert_true(file_has(caplog, "wrote"));
}

int main(void)
{
    setenv("MPROF_LISTEN", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ci_sigkill_leaves_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
