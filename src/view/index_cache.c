/*
 * index_cache.c - the served viewer's index cache (index_cache.h).
 *
 * An index is many times smaller than it once was, but still a file the user did not ask for:
 * it lives in the user's cache folder, not beside the capture, and the folder has a size cap.
 * Using an index marks it (its modification time), so eviction takes the least recently used
 * first. A build writes "NAME.build-XXXXXX" beside its index under an exclusive flock(2); the lock
 * dies with the process, so any such file whose lock can be taken belongs to a dead build and is
 * removed, whoever left it.
 */
#define _DEFAULT_SOURCE /* flock, realpath */
#include "view/index_cache.h"

#include "util/tool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define BUILD_TAG ".build-"

static int mkdir_p(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

int mprof__vcache_path(const char *capture_path, char *out, size_t n, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(dir, sizeof dir, "%s/mprof", xdg);
    else if (home && home[0])
        snprintf(dir, sizeof dir, "%s/.cache/mprof", home);
    else {
        tool_seterr(err, errlen, "no cache folder: neither XDG_CACHE_HOME nor HOME is set");
        return -1;
    }
    if (mkdir_p(dir) != 0) {
        tool_seterr(err, errlen, "cannot create the cache folder %s: %s", dir, strerror(errno));
        return -1;
    }
    char abs[PATH_MAX];
    if (!realpath(capture_path, abs))
        snprintf(abs, sizeof abs, "%s", capture_path);
    const char *base = strrchr(abs, '/');
    base = base ? base + 1 : abs;
    unsigned long long h = (unsigned long long)XXH3_64bits(abs, strlen(abs));
    if (snprintf(out, n, "%s/%.80s-%016llx.vidx", dir, base, h) >= (int)n) {
        tool_seterr(err, errlen, "cache path too long");
        return -1;
    }
    return 0;
}

/* Whether name (in dir) is the temporary file of a build: "*.build-XXXXXX". */
static int is_build_temp(const char *name)
{
    const char *t = strstr(name, BUILD_TAG);
    return t && strlen(t) == strlen(BUILD_TAG) + 6;
}

int mprof__vcache_sweep(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_build_temp(e->d_name))
            continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p)
            continue;
        int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            continue;
        /* Held by a running build: leave it. Free: its builder is gone. */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && unlink(p) == 0)
            removed++;
        close(fd);
    }
    closedir(d);
    return removed;
}

int mprof__vcache_temp(const char *index_path, char **out_tmp, char *err, size_t errlen)
{
    size_t l = strlen(index_path);
    char *tmp = malloc(l + sizeof BUILD_TAG + 7);
    char *dir = malloc(l + 2);
    if (!tmp || !dir) {
        free(tmp);
        free(dir);
        tool_seterr(err, errlen, "out of memory");
        return -1;
    }
    memcpy(dir, index_path, l + 1);
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = 0; /* "/" */
    else
        *slash = 0;
    int swept = mprof__vcache_sweep(dir);
    if (swept)
        fprintf(stderr, "mprof view: removed %d temporary file%s of an interrupted index build in %s\n", swept,
                swept > 1 ? "s" : "", dir);
    free(dir);
    snprintf(tmp, l + sizeof BUILD_TAG + 7, "%s" BUILD_TAG "XXXXXX", index_path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        tool_seterr(err, errlen, "cannot create '%s': %s", index_path, strerror(errno));
        free(tmp);
        return -1;
    }
    if (flock(fd, LOCK_EX) != 0) {
        tool_seterr(err, errlen, "cannot lock '%s': %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    *out_tmp = tmp;
    return fd;
}

uint64_t mprof__vcache_cap_bytes(void)
{
    const char *v = getenv("MPROF_VIEW_CACHE_MB");
    char *end;
    unsigned long long mb = v && *v ? strtoull(v, &end, 10) : MPROF_VCACHE_DEFAULT_MB;
    if (v && *v && (*end || mb == 0 || mb > (1ull << 30)))
        mb = MPROF_VCACHE_DEFAULT_MB; /* documented: a positive number of MiB */
    return (uint64_t)mb << 20;
}

typedef struct centry {
    char name[NAME_MAX + 1];
    uint64_t bytes;
    int64_t mtime_ns;
} centry;

static int cmp_age(const void *a, const void *b)
{
    const centry *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

uint64_t mprof__vcache_touch_evict(const char *index_path)
{
    utimensat(AT_FDCWD, index_path, NULL, 0); /* used now */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", index_path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = 0;
    const char *keep = strrchr(index_path, '/') + 1; /* its name within dir */
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    centry *es = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0, removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".vidx") != 0)
            continue;
        char p[PATH_MAX];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || lstat(p, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 16;
            centry *q = realloc(es, c * sizeof *q);
            if (!q)
                break;
            es = q;
            cap = c;
        }
        if (len >= sizeof es[n].name)
            continue;
        memcpy(es[n].name, e->d_name, len + 1);
        es[n].bytes = (uint64_t)st.st_size;
        es[n].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        total += es[n].bytes;
        n++;
    }
    closedir(d);
    uint64_t limit = mprof__vcache_cap_bytes();
    if (total > limit) {
        qsort(es, n, sizeof *es, cmp_age);
        for (size_t i = 0; i < n && total > limit; i++) {
            if (strcmp(es[i].name, keep) == 0)
                continue;
            char p[PATH_MAX + NAME_MAX + 2];
            snprintf(p, sizeof p, "%s/%s", dir, es[i].name);
            if (unlink(p) == 0) {
                total -= es[i].bytes;
                removed += es[i].bytes;
                fprintf(stderr, "mprof view: the index cache is over %llu MiB: removed %s, the least recently used\n",
                        (unsigned long long)(limit >> 20), es[i].name);
            }
        }
    }
    free(es);
    return removed;
}
