#include "test_util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *tu_temp_path(const char *stem)
{
    static char buf[8][512];
    static int slot;
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    static unsigned n;
    char *p = buf[slot++ & 7];
    snprintf(p, 512, "%s/mprof-test-%ld-%u-%s", dir, (long)getpid(), n++, stem);
    unlink(p);
    return p;
}

int tu_count_capture(const char *path, tu_counts *out)
{
    memset(out, 0, sizeof *out);
    mprof_reader *r = mprof_reader_open(path, out->err, sizeof out->err);
    if (!r) {
        out->rc = -1;
        return -1;
    }
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        out->by_type[ev.type & 0xff]++;
        out->events++;
    }
    out->rc = rc;
    if (rc < 0)
        snprintf(out->err, sizeof out->err, "%s", mprof_reader_error(r));
    mprof_reader_get_stats(r, &out->st);
    mprof_reader_close(r);
    return rc < 0 ? -1 : 0;
}

int tu_run(const char *cmd, char *out, size_t n)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t got = 0;
    if (out && n) {
        size_t k;
        while (got + 1 < n && (k = fread(out + got, 1, n - 1 - got, p)) > 0)
            got += k;
        out[got] = 0;
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0)
        ;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

double tu_scale(void)
{
    const char *s = getenv("MPROF_TEST_SCALE");
    double v = s ? strtod(s, NULL) : 1.0;
    return v > 0 ? v : 1.0;
}

const char *tu_mprof_bin(void)
{
    const char *b = getenv("MPROF_BIN");
    return b && *b ? b : "mprof";
}
