/*
 * info.c - the process's INFO keys: who recorded the capture, with which clock, on which
 * machine.
 *
 * The collector writes them into the capture's INFO chunk; live capture sends them in the
 * handshake reply, which `mprof capture` stores as the INFO chunk of its file. Both get them
 * from the same contributor list (lifecycle.c), so the two captures describe the process the
 * same way.
 */
#include "info.h"
#include "config.h"
#include "timer.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

void mprof__kvf(mprof_buf *b, const char *key, const char *fmt, ...)
{
    char v[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    mprof_fmt_kv(b, key, v);
}

static void read_small_file(const char *path, char *out, size_t n, int nul_to_space)
{
    out[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    size_t got = fread(out, 1, n - 1, f);
    fclose(f);
    out[got] = 0;
    for (size_t i = 0; i < got; i++)
        if (out[i] == 0 && nul_to_space)
            out[i] = ' ';
    while (got && (out[got - 1] == ' ' || out[got - 1] == '\n'))
        out[--got] = 0;
}

static void cpu_model(char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ')
                    c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(out, n, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

void mprof__process_info(mprof_buf *out)
{
    mprof_buf b = *out;
    struct utsname u;
    char buf[1024];
    mprof__kvf(&b, "format", "mprof %d.%d", MPROF_FMT_VERSION_MAJOR, MPROF_FMT_VERSION_MINOR);
    mprof__kvf(&b, "library", "%d.%d", MPROF_VERSION_MAJOR, MPROF_VERSION_MINOR);
    mprof__kvf(&b, "app", "%s", mprof__config.app_name);
    mprof__kvf(&b, "pid", "%ld", (long)getpid());
    read_small_file("/proc/self/cmdline", buf, sizeof buf, 1);
    mprof__kvf(&b, "cmdline", "%s", buf);
    mprof__kvf(&b, "start_unix_ns", "%" PRIu64, mprof__clock.real0_ns);
    mprof__kvf(&b, "timer", "%s", mprof__clock.timer_name);
    mprof__kvf(&b, "ns_per_tick", "%.17g", mprof__clock.ns_per_tick);
    mprof__kvf(&b, "tick0", "%" PRIu64, mprof__clock.tick0);
    if (mprof__clock.zone_cost_ns > 0)
        mprof__kvf(&b, "zone_cost_ns", "%.1f", mprof__clock.zone_cost_ns);
    if (uname(&u) == 0) {
        mprof__kvf(&b, "hostname", "%s", u.nodename);
        mprof__kvf(&b, "os", "%s %s %s", u.sysname, u.release, u.machine);
    }
    cpu_model(buf, sizeof buf);
    if (buf[0])
        mprof__kvf(&b, "cpu", "%s", buf);
    mprof__kvf(&b, "cores", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    const char *v;
    if ((v = getenv("MPROF_GIT_SHA")) && *v)
        mprof__kvf(&b, "git_sha", "%s", v);
    if ((v = getenv("MPROF_BUILD_TYPE")) && *v)
        mprof__kvf(&b, "build_type", "%s", v);
    mprof__kvf(&b, "memory_limit_bytes", "%zu", mprof__config.memory_limit_bytes);
    *out = b;
}

