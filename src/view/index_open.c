/*
 * index_open.c - opening the served viewer's index: the file is mapped read-only and checked
 * against its capture (size and modification time) and against itself (every table inside the
 * file and aligned), so that a stale index is rebuilt and a damaged one is never read outside the
 * map. An index that cannot be kept beside its capture goes to $TMPDIR.
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index_file.h"

#include "util/tool.h"
#include "view/index_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int mprof__vidx_stamp(const char *path, uint64_t *size, int64_t *mtime_ns)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    *size = (uint64_t)st.st_size;
    *mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return 0;
}

/* Maps and checks an index; NULL when it is missing, stale or damaged (reason in err). */
static mprof_vindex *try_open(const char *cap_path, const char *index_path, char *err, size_t errlen)
{
    uint64_t cs = 0;
    int64_t cm = 0;
    if (cap_path && mprof__vidx_stamp(cap_path, &cs, &cm) != 0) {
        tool_seterr(err, errlen, "%s: %s", cap_path, strerror(errno));
        return NULL;
    }
    int fd = open(index_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tool_seterr(err, errlen, "no index");
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < sizeof(vhead)) {
        close(fd);
        tool_seterr(err, errlen, "index too short");
        return NULL;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        tool_seterr(err, errlen, "cannot map the index: %s", strerror(errno));
        return NULL;
    }
    mprof_vindex *x = calloc(1, sizeof *x);
    if (!x) {
        munmap(m, (size_t)st.st_size);
        tool_seterr(err, errlen, "out of memory");
        return NULL;
    }
    x->map = m;
    x->size = (size_t)st.st_size;
    x->h = m;
    const vhead *h = x->h;
    const char *why = NULL;
    if (memcmp(h->magic, VIDX_MAGIC, 8) != 0 || h->version != VIDX_VERSION || h->head_bytes != sizeof *h)
        why = "index of another version";
    else if (cap_path && (h->cap_size != cs || h->cap_mtime_ns != cm))
        why = "index older than the capture";
    else if (h->file_bytes != x->size || !mprof__vidx_in_file(x, h->levels_off, h->n_levels, sizeof(vlevel)) ||
             !mprof__vidx_in_file(x, h->locs_off, h->n_locs, sizeof(vloc)) ||
             !mprof__vidx_in_file(x, h->plots_off, h->n_plots, sizeof(vplot)) ||
             !mprof__vidx_in_file(x, h->msgs_off, h->n_msgs, sizeof(vmsg)) || !mprof__vidx_in_file(x, h->text_off, h->text_len, 1) ||
             !mprof__vidx_in_file(x, h->frames_off, h->n_frames, sizeof(vframe)) || !mprof__vidx_in_file(x, h->meta_off, h->meta_len, 1) ||
             !mprof__vidx_in_file(x, h->images_off, h->n_images, sizeof(vimage)) ||
             !mprof__vidx_in_file(x, h->image_bytes_off, h->image_bytes_len, 1) ||
             !mprof__vidx_in_file(x, h->tiers_off, h->n_tiers, sizeof(vtier)) || !mprof__vidx_in_file(x, h->sys_off, h->sys_len, 1) ||
             (h->sys_len && h->sys_off % 8) || !mprof__vsys_check(x->map + h->sys_off, h->sys_len))
        why = "damaged index";
    if (!why) {
        x->levels = (const vlevel *)(x->map + h->levels_off);
        x->locs = (const vloc *)(x->map + h->locs_off);
        x->plots = (const vplot *)(x->map + h->plots_off);
        x->tiers = (const vtier *)(x->map + h->tiers_off);
        for (uint64_t i = 0; i < h->n_levels && !why; i++)
            if (!mprof__vidx_in_file(x, x->levels[i].off, x->levels[i].n, sizeof(vzone)) ||
                (uint64_t)x->levels[i].tier0 + x->levels[i].n_tiers > h->n_tiers)
                why = "damaged index";
        for (uint64_t i = 0; i < h->n_tiers && !why; i++)
            if (!mprof__vidx_in_file(x, x->tiers[i].off, x->tiers[i].n, sizeof(vrun)))
                why = "damaged index";
        for (uint64_t i = 0; i < h->n_locs && !why; i++)
            if (!mprof__vidx_in_file(x, x->locs[i].off, x->locs[i].n, sizeof(vinst)) ||
                (x->locs[i].hist_off && !mprof__vidx_in_file(x, x->locs[i].hist_off, HIST_BUCKETS, sizeof(uint64_t))))
                why = "damaged index";
        for (uint64_t i = 0; i < h->n_plots && !why; i++)
            if (!mprof__vidx_in_file(x, x->plots[i].off, x->plots[i].n, sizeof(vpoint)) || x->plots[i].pyr_levels > 20)
                why = "damaged index";
    }
    if (why) {
        tool_seterr(err, errlen, "%s", why);
        munmap(m, x->size);
        free(x);
        return NULL;
    }
    x->path = tool_strdup(index_path);
    if (!x->path) {
        munmap(m, x->size);
        free(x);
        tool_seterr(err, errlen, "out of memory");
        return NULL;
    }
    return x;
}

mprof_vindex *mprof__vindex_open(const char *capture_path, const char *index_path, int *out_built,
                                 char *err, size_t errlen)
{
    char def[4096], why[256];
    int remove = 0;
    if (out_built)
        *out_built = 0;
    if (!index_path) {
        if (snprintf(def, sizeof def, "%s.vidx", capture_path) >= (int)sizeof def) {
            tool_seterr(err, errlen, "capture name too long");
            return NULL;
        }
        index_path = def;
    }
    mprof_vindex *x = try_open(capture_path, index_path, why, sizeof why);
    if (x)
        return x;
    if (mprof__vindex_build(capture_path, index_path, err, errlen) != 0) {
        if (index_path != def || strncmp(err, "cannot create", 13) != 0)
            return NULL;
        /* The capture's folder is read-only: a private index in $TMPDIR, removed on close. */
        const char *tmpdir = getenv("TMPDIR");
        const char *base = strrchr(capture_path, '/');
        snprintf(def, sizeof def, "%s/mprof-%ld-%s.vidx", tmpdir && *tmpdir ? tmpdir : "/tmp",
                 (long)getpid(), base ? base + 1 : capture_path);
        if (mprof__vindex_build(capture_path, def, err, errlen) != 0)
            return NULL;
        remove = 1;
    }
    if (out_built)
        *out_built = 1;
    x = try_open(capture_path, index_path, why, sizeof why);
    if (!x) {
        tool_seterr(err, errlen, "%s: %s after building it", index_path, why);
        if (remove)
            unlink(index_path);
        return NULL;
    }
    x->remove_on_close = remove;
    return x;
}

mprof_vindex *mprof__vindex_open_built(const char *index_path, char *err, size_t errlen)
{
    return try_open(NULL, index_path, err, errlen);
}

void mprof__vindex_close(mprof_vindex *x)
{
    if (!x)
        return;
    munmap((void *)x->map, x->size);
    if (x->remove_on_close)
        unlink(x->path);
    free(x->path);
    free(x);
}

uint64_t mprof__vindex_zone_count(const mprof_vindex *x)
{
    return x->h->total_zones;
}

uint64_t mprof__vindex_size_bytes(const mprof_vindex *x)
{
    return x->size;
}

const char *mprof__vindex_path(const mprof_vindex *x)
{
    return x->path;
}

uint64_t mprof__vindex_tier_count(const mprof_vindex *x, uint64_t *out_runs)
{
    uint64_t runs = 0;
    for (uint64_t i = 0; i < x->h->n_tiers; i++)
        runs += x->tiers[i].n;
    if (out_runs)
        *out_runs = runs;
    return x->h->n_tiers;
}
