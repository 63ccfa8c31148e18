/*
 * self_test.c - `mprof ci --self-test`: checks an installation end to end on the instrumented
 * workload of workload.c, run by this same binary. Three invocations of the ci sequence: record
 * (no baseline), unchanged (three runs of the workload interleaved with three baseline runs of
 * the same: must pass) and slowed (Physics 30 % slower against three interleaved baseline runs:
 * must be a regression naming Physics). A timing check: it belongs to `make proof`, not to
 * `make test`.
 */
#define _POSIX_C_SOURCE 200809L

#include "ci/self_test.h"
#include "util/tool.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SELF_TEST_RUNS 3

/* A free TCP port on the loopback interface (the kernel's pick), or 0. */
static unsigned free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    unsigned port = 0;
    if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(s);
    return port;
}

int mprof__ci_self_test(const char *dir, mprof_ci_sequence run)
{
    char self[1024];
    if (strlen(dir) > 900)
        return tool_error("ci", EXIT_USAGE, "--output-dir is too long");
    if (mprof__ci_self_path(self, sizeof self))
        return tool_error("ci", EXIT_IO, "cannot find the mprof executable");
    char steps[3][1000], art[3][1100];
    const char *names[3] = {"record-baseline", "unchanged", "slowed"};
    const char *slow[3] = {"0", "0", "30"};
    char *base_cmd[] = {self, (char *)"ci", (char *)"--self-test-workload", (char *)"--slow",
                        (char *)"0", NULL};
    int ok = 1;
    printf("mprof ci --self-test in %s\n", dir);
    for (int i = 0; i < 3; i++) {
        snprintf(steps[i], sizeof steps[i], "%.900s/%s", dir, names[i]);
        snprintf(art[i], sizeof art[i], "%.950s/ci-capture.mprof", steps[i]);
        char *cmd[] = {self, (char *)"ci", (char *)"--self-test-workload", (char *)"--slow",
                       (char *)slow[i], NULL};
        unsigned port = free_port();
        mprof_ci_opts o = {.dir = steps[i], .artifact = art[i], .address = "127.0.0.1",
                           .threshold = 10, .skip_frames = 10, .port = port ? port : 8086,
                           .drain_seconds = 10, .command = cmd, .n_command = 5,
                           .runs = i ? SELF_TEST_RUNS : 1,
                           .baseline_cmd = i ? "(the workload)" : NULL,
                           .baseline_argv = i ? base_cmd : NULL, .quiet = 1};
        mprof_ci_result r;
        int code = run(&o, &r);
        const char *want = i == 0 ? "no-baseline" : (i == 1 ? "pass" : "regression");
        int good = strcmp(r.verdict, want) == 0 && (i < 2 || strcmp(r.top_zone, "Physics") == 0);
        printf("  %-16s %-13s exit %d, %d run(s) per side, %ld frames, p95 %.4f ms%s%s  [%s]\n",
               names[i], r.verdict, code, o.runs, r.frames, r.p95,
               r.top_zone[0] ? ", top zone " : "", r.top_zone, good ? "ok" : "UNEXPECTED");
        for (int k = 0; !good && k < r.n_reasons; k++)
            printf("    %s\n", r.reasons[k]);
        if (!good && r.gate_reason[0])
            printf("    gate: %s\n", r.gate_reason);
        ok &= good;
        if (!ok)
            break;
    }
    printf("mprof ci --self-test: %s\n", ok ? "PASS" : "FAIL");
    return tool_finish("ci", ok ? EXIT_OK : EXIT_VERDICT);
}
