/*
 * util.c - small helpers shared by the subcommands.
 */
#include "mprof_tool.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tool_error(const char *cmd, int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "mprof %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

int tool_finish(const char *cmd, int code)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        return tool_error(cmd, EXIT_IO, "writing the output failed: %s", strerror(errno));
    return code;
}

int tool_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int tool_parse_uint(const char *cmd, const char *flag, const char *value, unsigned long long max,
                    unsigned long long *out)
{
    if (!value || !*value) {
        tool_error(cmd, EXIT_USAGE, "%s needs a value", flag);
        return -1;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (errno || *end || value[0] == '-' || v > max) {
        tool_error(cmd, EXIT_USAGE, "%s: '%s' is not a number from 0 to %llu", flag, value, max);
        return -1;
    }
    *out = v;
    return 0;
}

int tool_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!a || !b || stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void tool_remove_partial(const char *path)
{
    /* Only a regular file is ours to delete: an output of /dev/null or a FIFO must survive a
     * failed run (running as root, a plain remove() would delete the device node). */
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
        unlink(path);
}
