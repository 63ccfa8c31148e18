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

/* ---- atomic outputs ------------------------------------------------------------------------ */

int tool_output_open(tool_output *o, const char *path, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    o->path = path;
    struct stat st;
    int exists = stat(path, &st) == 0; /* links followed: the file a symlink names */
    if (exists && !S_ISREG(st.st_mode)) {
        /* A device or a FIFO (/dev/stdout, a pipe) cannot be replaced: it is written in place. */
        o->f = fopen(path, "wb");
        if (!o->f) {
            snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    /* A symlink is resolved, so the rename replaces the file it names and the link survives. */
    char *target = exists ? realpath(path, NULL) : NULL;
    const char *base = target ? target : path;
    size_t tl = strlen(base) + 8;
    o->tmp = malloc(tl);
    if (!o->tmp) {
        free(target);
        snprintf(err, errlen, "cannot write '%s': out of memory", path);
        return -1;
    }
    snprintf(o->tmp, tl, "%s.XXXXXX", base);
    o->dest = target ? target : strdup(path);
    int fd = o->dest ? mkstemp(o->tmp) : -1;
    if (fd < 0) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(o->dest ? errno : ENOMEM));
        free(o->tmp);
        free(o->dest);
        o->tmp = o->dest = NULL;
        return -1;
    }
    /* mkstemp makes the file 0600: an existing output keeps its mode, a new one gets what a
     * plain create would give it. */
    mode_t mode;
    if (exists) {
        mode = st.st_mode & 07777;
    } else {
        mode_t um = umask(0);
        umask(um);
        mode = 0666 & ~um;
    }
    if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "wb"))) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        free(o->dest);
        o->tmp = o->dest = NULL;
        return -1;
    }
    return 0;
}

int tool_output_close(tool_output *o, int ok, char *err, size_t errlen)
{
    if (!o->f)
        return ok ? 0 : -1;
    if (o->f == stdout) {
        o->f = NULL;
        if (ok && (fflush(stdout) != 0 || ferror(stdout))) {
            snprintf(err, errlen, "writing the output failed: %s", strerror(errno));
            return -1;
        }
        return ok ? 0 : -1;
    }
    int bad = ferror(o->f);
    int e = errno;
    if (fclose(o->f) != 0) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    int rc = 0;
    if (ok && bad) {
        snprintf(err, errlen, "cannot write '%s': %s", o->path, strerror(e ? e : EIO));
        rc = -1;
    } else if (!ok) {
        rc = -1;
    }
    if (o->tmp) {
        if (rc == 0 && rename(o->tmp, o->dest) != 0) {
            snprintf(err, errlen, "cannot write '%s': %s", o->path, strerror(errno));
            rc = -1;
        }
        if (rc != 0)
            unlink(o->tmp);
        free(o->tmp);
        free(o->dest);
        o->tmp = o->dest = NULL;
    }
    return rc;
}

int tool_output_hits_input(const char *out, const char *in)
{
    if (!out || !in || strcmp(out, "-") == 0)
        return 0;
    if (tool_same_file(out, in))
        return 1;
    struct stat st;
    if (stat(in, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    /* The output's folder, resolved (it exists, or the output cannot be created anyway). */
    size_t l = strlen(out);
    char *dir = malloc(l + 2);
    if (!dir)
        return 0;
    memcpy(dir, out, l + 1);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = 0;
    else if (slash)
        *slash = 0;
    else
        strcpy(dir, ".");
    char *rd = realpath(dir, NULL), *ri = realpath(in, NULL);
    int hit = 0;
    if (rd && ri) {
        size_t n = strlen(ri);
        hit = strncmp(rd, ri, n) == 0 && (rd[n] == 0 || rd[n] == '/' || (n == 1 && ri[0] == '/'));
    }
    free(dir);
    free(rd);
    free(ri);
    return hit;
}

const char *tool_escape(const void *s, size_t n, char *out, size_t outn)
{
    const unsigned char *p = s;
    size_t o = 0;
    if (!outn)
        return out;
    for (size_t i = 0; i < n && p[i]; i++) {
        char tmp[8];
        size_t l;
        /* Printable ASCII as it is; controls (escape sequences), DEL and every other byte as
         * \xNN, so a peer cannot move the cursor, clear the screen or forge a line. */
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
            tmp[0] = (char)p[i];
            l = 1;
        } else if (p[i] == '\\') {
            memcpy(tmp, "\\\\", 2);
            l = 2;
        } else {
            l = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", p[i]);
        }
        if (o + l >= outn)
            break;
        memcpy(out + o, tmp, l);
        o += l;
    }
    out[o] = 0;
    return out;
}

int tool_check_rereadable(const char *cmd, const char *path)
{
    struct stat st;
    if (path && strcmp(path, "-") != 0 && stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
        !S_ISBLK(st.st_mode)) {
        tool_error(cmd, EXIT_USAGE, "%s is %s, not a file: mprof %s reads the capture more than "
                   "once; save it to a file first", path,
                   S_ISDIR(st.st_mode) ? "a directory" : "a pipe or device", cmd);
        return -1;
    }
    return 0;
}
