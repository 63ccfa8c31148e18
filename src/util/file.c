/*
 * file.c - files as the commands write and read them: outputs that appear only when complete
 * (a failed run leaves the previous file as it was), outputs that would overwrite an input,
 * whole small files read into memory, and folders made with their parents.
 */
#include "util/tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

char *tool_read_file(const char *path, size_t max_bytes, size_t *out_len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        tool_seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (len == cap) {
            if (cap >= max_bytes) {
                tool_seterr(err, errlen, "%s: larger than %zu MiB", path, max_bytes >> 20);
                free(buf);
                fclose(f);
                return NULL;
            }
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (!buf || ferror(f)) {
        tool_seterr(err, errlen, "%s: cannot read: %s", path, buf ? strerror(errno) : "out of memory");
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[len] = 0;
    if (out_len)
        *out_len = len;
    return buf;
}

int tool_mkdirs(const char *dir)
{
    char buf[4096];
    size_t n = strlen(dir);
    if (n == 0)
        return 0; /* "" is the parent of a file in the root folder: nothing to create */
    if (n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, dir, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}
