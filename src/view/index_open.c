/*
 * index_open.c - opening the served viewer's index: the header is checked against its own
 * checksum and against the capture (size, modification time and a fingerprint of its first and
 * last 64 KiB), the directory, metadata and system section are read, checked and decoded into
 * memory, every table entry is checked to point inside the file and its arrays, and every data
 * block's checksum is checked once. An index that fails anything is rebuilt, never served.
 *
 * The file stays open for the answers, which read its blocks with pread (index_block.h): nothing
 * is mapped, so a file cut or rewritten under a running server makes an answer fail, never the
 * server. Opening sweeps the folder of what killed builds left (index_cache.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index_block.h"
#include "view/index_cache.h"

#include "util/tool.h"
#include "view/index_sys.h"
#include "view/index_sys_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

int mprof__vidx_stamp(const char *path, uint64_t *size, int64_t *mtime_ns, uint64_t *print)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    *size = (uint64_t)st.st_size;
    *mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    /* The first and last 64 KiB: a capture replaced by another of the same size and time (a copy
     * that kept the time, a rebuilt file system) is still told apart. */
    enum { SPAN = 65536 };
    unsigned char *buf = malloc(2 * SPAN);
    if (!buf) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    ssize_t a = pread(fd, buf, SPAN, 0);
    ssize_t b = st.st_size > SPAN ? pread(fd, buf + (a > 0 ? a : 0), SPAN, st.st_size > 2 * SPAN ? st.st_size - SPAN : SPAN) : 0;
    close(fd);
    size_t n = (size_t)(a > 0 ? a : 0) + (size_t)(b > 0 ? b : 0);
    *print = XXH3_64bits(buf, n);
    free(buf);
    return 0;
}

/* A block of the file read whole into memory (decompressed), checked. NULL when it fails. */
static unsigned char *read_ref(int fd, uint64_t size, const vref *r, size_t max_raw)
{
    if (r->off < sizeof(vhead) || r->off > size || r->len > size - r->off || r->raw_len > max_raw ||
        r->len > r->raw_len)
        return NULL;
    unsigned char *stored = malloc(r->len ? r->len : 1), *raw = NULL;
    if (!stored || pread(fd, stored, r->len, (off_t)r->off) != (ssize_t)r->len ||
        (XXH3_64bits(stored, r->len) != r->csum && !mprof__vidx_fuzz_no_checksum)) {
        free(stored);
        return NULL;
    }
    if (r->len == r->raw_len) {
        unsigned char *p = realloc(stored, (size_t)r->raw_len + 1);
        if (p)
            p[r->raw_len] = 0;
        else
            free(stored);
        return p;
    }
    raw = malloc((size_t)r->raw_len + 1);
    size_t z = raw ? ZSTD_decompress(raw, r->raw_len, stored, r->len) : 0;
    free(stored);
    if (!raw || ZSTD_isError(z) || z != r->raw_len) {
        free(raw);
        return NULL;
    }
    raw[r->raw_len] = 0;
    return raw;
}

/* Table n records of rec bytes at off of the directory buffer of len bytes. */
static int table_ok(uint64_t len, uint64_t off, uint64_t n, size_t rec)
{
    return off <= len && off % 8 == 0 && n <= (len - off) / rec;
}

/* Whether a is a good array of the directory of codec, rec (rec 0: any raw record size). */
static int array_ok(const mprof_vindex *x, uint32_t ai, uint32_t codec, uint32_t rec)
{
    if (ai >= x->d->n_arrays)
        return 0;
    const varr *a = &x->arrays[ai];
    return a->codec == codec && (!rec || a->rec == rec);
}

static const char *check_dir(mprof_vindex *x, size_t len)
{
    const vdir *d = x->d;
    if (len < sizeof *d || !table_ok(len, d->blocks_off, d->n_blocks, sizeof(vblk)) ||
        !table_ok(len, d->arrays_off, d->n_arrays, sizeof(varr)) || !table_ok(len, d->levels_off, d->n_levels, sizeof(vlevel)) ||
        !table_ok(len, d->tiers_off, d->n_tiers, sizeof(vtier)) || !table_ok(len, d->locs_off, d->n_locs, sizeof(vloc)) ||
        !table_ok(len, d->loclevels_off, d->n_loclevels, sizeof(uint32_t)) ||
        !table_ok(len, d->hbuckets_off, d->n_hbuckets, sizeof(vhb)) || !table_ok(len, d->plots_off, d->n_plots, sizeof(vplot)) ||
        !table_ok(len, d->sets_off, d->n_sets, sizeof(vset)) || !table_ok(len, d->frames_off, d->n_frames, sizeof(vframe)))
        return "a table past the directory";
    x->blocks = (const vblk *)(x->dir_buf + d->blocks_off);
    x->arrays = (const varr *)(x->dir_buf + d->arrays_off);
    x->levels = (const vlevel *)(x->dir_buf + d->levels_off);
    x->tiers = (const vtier *)(x->dir_buf + d->tiers_off);
    x->locs = (const vloc *)(x->dir_buf + d->locs_off);
    x->loclevels = (const uint32_t *)(x->dir_buf + d->loclevels_off);
    x->hbuckets = (const vhb *)(x->dir_buf + d->hbuckets_off);
    x->plots = (const vplot *)(x->dir_buf + d->plots_off);
    x->sets = (const vset *)(x->dir_buf + d->sets_off);
    x->frames = (const vframe *)(x->dir_buf + d->frames_off);
    /* Arrays: their blocks in the directory, records counted, each block inside the file. */
    for (uint64_t i = 0; i < d->n_arrays; i++) {
        const varr *a = &x->arrays[i];
        if ((a->codec != VC_RAW && a->codec != VC_ZONES && a->codec != VC_RUNS) || !a->rec || a->rec > 64 ||
            ((a->codec != VC_RAW) && a->rec != sizeof(vzone)) || a->blk0 > d->n_blocks || a->n_blocks > d->n_blocks - a->blk0)
            return "a damaged array";
        uint64_t at = 0;
        for (uint64_t k = 0; k < a->n_blocks; k++) {
            const vblk *b = &x->blocks[a->blk0 + k];
            uint32_t most = a->codec == VC_RAW ? (uint32_t)(REC_BLOCK_BYTES / a->rec + 1) : ZONE_BLOCK;
            if (b->first != at || !b->n || b->n > most || b->at.off < sizeof(vhead) || b->at.off > x->size ||
                b->at.len > x->size - b->at.off || b->at.len > b->at.raw_len ||
                b->at.raw_len > mprof__vblk_raw_max(a->codec, a->rec, b->n))
                return "a damaged block entry";
            at += b->n;
        }
        if (at != a->n)
            return "an array that does not add up";
    }
    for (uint64_t i = 0; i < d->n_levels; i++) {
        const vlevel *l = &x->levels[i];
        if (!array_ok(x, l->arr, VC_ZONES, 0) || l->tier0 > d->n_tiers || l->n_tiers > d->n_tiers - l->tier0)
            return "a damaged level";
        /* An async lane's threads: one record per span (index_async.c); no other level has them. */
        if ((l->kind == VTRACK_ASYNC) != (l->thr != VNONE) ||
            (l->thr != VNONE && (!array_ok(x, l->thr, VC_RAW, sizeof(vthr)) || x->arrays[l->thr].n != x->arrays[l->arr].n)))
            return "a damaged level";
    }
    for (uint64_t i = 0; i < d->n_tiers; i++)
        if (!array_ok(x, x->tiers[i].arr, VC_RUNS, 0) || x->tiers[i].res_ns < 1)
            return "a damaged tier";
    for (uint64_t i = 0; i < d->n_locs; i++) {
        const vloc *l = &x->locs[i];
        if (l->slot >= MAX_LOC_SLOTS || l->h0 > d->n_hbuckets || l->n_h > d->n_hbuckets - l->h0 || l->lv0 > d->n_loclevels ||
            l->n_lv > d->n_loclevels - l->lv0 || (i && l->slot <= x->locs[i - 1].slot))
            return "a damaged source location";
        for (uint32_t k = 0; k < l->n_h; k++)
            if (x->hbuckets[l->h0 + k].bucket >= MPROF_HIST_BUCKETS)
                return "a damaged histogram";
    }
    for (uint64_t i = 0; i < d->n_loclevels; i++)
        if (x->loclevels[i] >= d->n_levels)
            return "a damaged location level";
    for (uint64_t i = 0; i < d->n_plots; i++) {
        const vplot *p = &x->plots[i];
        if (!array_ok(x, p->points, VC_RAW, sizeof(vpoint)) || p->n_pyr > PYR_LEVELS)
            return "a damaged plot";
        for (uint32_t k = 0; k < p->n_pyr; k++)
            if (!array_ok(x, p->pyr[k], VC_RAW, sizeof(vmm)))
                return "a damaged plot";
    }
    for (uint64_t i = 0; i < d->n_sets; i++)
        if (x->sets[i].f0 > d->n_frames || x->sets[i].n > d->n_frames - x->sets[i].f0)
            return "a damaged frame set";
    if (!array_ok(x, d->msgs, VC_RAW, sizeof(vmsg)) || !array_ok(x, d->text, VC_RAW, 1) ||
        !array_ok(x, d->images, VC_RAW, sizeof(vimage)) || !array_ok(x, d->image_bytes, VC_RAW, 1))
        return "a damaged message or image table";
    return NULL;
}

/* Every data block's checksum, once: a damaged index is found at open, not in the middle of
 * serving it. */
static const char *check_blocks(mprof_vindex *x)
{
    unsigned char *buf = NULL;
    size_t cap = 0;
    const char *why = NULL;
    for (uint64_t i = 0; i < x->d->n_blocks && !why; i++) {
        const vblk *b = &x->blocks[i];
        if (b->at.len > cap) {
            unsigned char *p = realloc(buf, b->at.len);
            if (!p) {
                why = "out of memory";
                break;
            }
            buf = p;
            cap = b->at.len;
        }
        if (pread(x->fd, buf, b->at.len, (off_t)b->at.off) != (ssize_t)b->at.len)
            why = "index cut short";
        else if (XXH3_64bits(buf, b->at.len) != b->at.csum)
            why = "a block fails its checksum";
    }
    free(buf);
    return why;
}

static void vindex_free(mprof_vindex *x)
{
    if (!x)
        return;
    if (x->fd >= 0)
        close(x->fd);
    free(x->dir_buf);
    free(x->meta);
    free(x->sys);
    free(x->loc_of_slot);
    free(x->path);
    free(x);
}

/* Opens and checks an index; NULL when it is missing, stale or damaged (reason in err). */
static mprof_vindex *try_open(const char *cap_path, const char *index_path, char *err, size_t errlen)
{
    uint64_t cs = 0, cp = 0;
    int64_t cm = 0;
    if (cap_path && mprof__vidx_stamp(cap_path, &cs, &cm, &cp) != 0) {
        tool_seterr(err, errlen, "%s: %s", cap_path, strerror(errno));
        return NULL;
    }
    mprof_vindex *x = calloc(1, sizeof *x);
    if (!x) {
        tool_seterr(err, errlen, "out of memory");
        return NULL;
    }
    x->fd = open(index_path, O_RDONLY | O_CLOEXEC);
    if (x->fd < 0) {
        vindex_free(x);
        tool_seterr(err, errlen, "no index");
        return NULL;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(x->fd, &st) != 0 || (uint64_t)st.st_size < sizeof(vhead) ||
        pread(x->fd, &x->h, sizeof x->h, 0) != (ssize_t)sizeof x->h)
        why = "index too short";
    x->size = (uint64_t)st.st_size;
    vhead hc = x->h;
    hc.head_csum = 0;
    if (!why && (memcmp(x->h.magic, VIDX_MAGIC, 8) != 0 || x->h.version != VIDX_VERSION || x->h.head_bytes != sizeof x->h))
        why = "index of another version";
    else if (!why && XXH3_64bits(&hc, sizeof hc) != x->h.head_csum && !mprof__vidx_fuzz_no_checksum)
        why = "damaged index (its header fails its checksum)";
    else if (!why && cap_path && (x->h.cap_size != cs || x->h.cap_mtime_ns != cm || x->h.cap_print != cp))
        why = "index of another capture, or older than the capture";
    else if (!why && x->h.file_bytes != x->size)
        why = "damaged index (cut short or grown)";
    if (!why) {
        /* What zstd may make of the stored bytes, at most (a damaged size must not allocate). */
        size_t most = x->size < ((size_t)1 << 21) ? (size_t)1 << 31 >> 10 : (size_t)1 << 31;
        x->dir_buf = read_ref(x->fd, x->size, &x->h.dir, most);
        x->meta = (char *)read_ref(x->fd, x->size, &x->h.meta, most);
        x->sys = read_ref(x->fd, x->size, &x->h.sys, most);
        x->meta_len = x->meta ? x->h.meta.raw_len : 0;
        x->sys_len = x->sys ? x->h.sys.raw_len : 0;
        if (!x->dir_buf || !x->meta || !x->sys)
            why = "damaged index (its directory, metadata or system section fails its checksum)";
    }
    if (!why) {
        x->d = (const vdir *)x->dir_buf;
        why = check_dir(x, x->h.dir.raw_len);
        if (!why && !mprof__vsys_check(x))
            why = "damaged index (its system section)";
        if (!why && !mprof__vidx_fuzz_no_checksum)
            why = check_blocks(x);
    }
    if (!why) {
        /* slot -> location, for the answers. */
        x->n_slots = x->d->n_locs ? x->locs[x->d->n_locs - 1].slot + 1 : 0;
        x->loc_of_slot = malloc(((size_t)x->n_slots + 1) * sizeof *x->loc_of_slot);
        x->path = tool_strdup(index_path);
        if (!x->loc_of_slot || !x->path)
            why = "out of memory";
        else {
            for (uint32_t s = 0; s < x->n_slots; s++)
                x->loc_of_slot[s] = UINT32_MAX;
            for (uint64_t i = 0; i < x->d->n_locs; i++)
                x->loc_of_slot[x->locs[i].slot] = (uint32_t)i;
        }
    }
    if (why) {
        tool_seterr(err, errlen, "%s", why);
        vindex_free(x);
        return NULL;
    }
    return x;
}

mprof_vindex *mprof__vindex_open(const char *capture_path, const char *index_path, int *out_built,
                                 char *err, size_t errlen)
{
    char def[4096], why[256];
    int remove = 0, cached = 0;
    if (out_built)
        *out_built = 0;
    if (!index_path) {
        if (mprof__vcache_path(capture_path, def, sizeof def, why, sizeof why) == 0) {
            index_path = def;
            cached = 1;
        } else {
            /* No cache folder: a private index in $TMPDIR, removed on close. */
            const char *tmpdir = getenv("TMPDIR");
            const char *base = strrchr(capture_path, '/');
            snprintf(def, sizeof def, "%s/mprof-%ld-%s.vidx", tmpdir && *tmpdir ? tmpdir : "/tmp", (long)getpid(),
                     base ? base + 1 : capture_path);
            fprintf(stderr, "mprof view: %s; the index goes to %s\n", why, def);
            index_path = def;
            remove = 1;
        }
    }
    /* What killed builds left in this folder goes first, whether or not this run builds. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", index_path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = 0; /* "/" */
    else
        *slash = 0;
    int swept = mprof__vcache_sweep(dir);
    if (swept)
        fprintf(stderr, "mprof view: removed %d temporary file%s of an interrupted index build in %s\n", swept,
                swept > 1 ? "s" : "", dir);
    mprof_vindex *x = try_open(capture_path, index_path, why, sizeof why);
    if (!x) {
        if (strcmp(why, "no index") != 0)
            fprintf(stderr, "mprof view: rebuilding the index %s: %s\n", index_path, why);
        if (mprof__vindex_build(capture_path, index_path, err, errlen) != 0) {
            if (remove)
                unlink(index_path);
            if (!cached || strncmp(err, "cannot create", 13) != 0)
                return NULL;
            /* A cache folder that cannot be written: a private index in $TMPDIR, removed on
             * close. */
            const char *tmpdir = getenv("TMPDIR");
            const char *base = strrchr(capture_path, '/');
            fprintf(stderr, "mprof view: %s; the index goes to $TMPDIR instead\n", err);
            snprintf(def, sizeof def, "%s/mprof-%ld-%s.vidx", tmpdir && *tmpdir ? tmpdir : "/tmp", (long)getpid(),
                     base ? base + 1 : capture_path);
            index_path = def;
            cached = 0;
            remove = 1;
            if (mprof__vindex_build(capture_path, index_path, err, errlen) != 0) {
                unlink(index_path);
                return NULL;
            }
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
    }
    x->remove_on_close = remove;
    if (cached)
        mprof__vcache_touch_evict(index_path);
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
    if (x->remove_on_close && x->path)
        unlink(x->path);
    vindex_free(x);
}

uint64_t mprof__vindex_zone_count(const mprof_vindex *x)
{
    return x->d->total_zones;
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
    for (uint64_t i = 0; i < x->d->n_tiers; i++)
        runs += x->arrays[x->tiers[i].arr].n;
    if (out_runs)
        *out_runs = runs;
    return x->d->n_tiers;
}

static uint64_t array_bytes(const mprof_vindex *x, uint32_t ai)
{
    uint64_t n = 0;
    const varr *a = &x->arrays[ai];
    for (uint64_t b = 0; b < a->n_blocks; b++)
        n += x->blocks[a->blk0 + b].at.len;
    return n;
}

void mprof__vindex_parts(const mprof_vindex *x, mprof_vindex_parts *out)
{
    memset(out, 0, sizeof *out);
    for (uint64_t i = 0; i < x->d->n_levels; i++) {
        out->zones += array_bytes(x, x->levels[i].arr);
        if (x->levels[i].thr != VNONE) /* async spans' threads: part of their zones */
            out->zones += array_bytes(x, x->levels[i].thr);
    }
    for (uint64_t i = 0; i < x->d->n_tiers; i++)
        out->tiers += array_bytes(x, x->tiers[i].arr);
    for (uint64_t i = 0; i < x->d->n_plots; i++) {
        out->plots += array_bytes(x, x->plots[i].points);
        for (uint32_t k = 0; k < x->plots[i].n_pyr; k++)
            out->plots += array_bytes(x, x->plots[i].pyr[k]);
    }
    out->messages = array_bytes(x, x->d->msgs) + array_bytes(x, x->d->text);
    out->images = array_bytes(x, x->d->images) + array_bytes(x, x->d->image_bytes);
    out->directory = x->h.dir.len;
    out->meta = x->h.meta.len;
    out->system = x->h.sys.len;
    /* The system section's arrays are the directory's last (index_write.c). */
    if (x->sys_len >= sizeof(shead))
        for (uint64_t i = ((const shead *)x->sys)->off_arr; i < x->d->n_arrays; i++)
            out->system += array_bytes(x, (uint32_t)i);
    out->header = sizeof(vhead);
}
