/*
 * index_cache.h - where the served viewer keeps its indexes (index_cache.c): a cache folder
 * ($XDG_CACHE_HOME/mprof, else ~/.cache/mprof) with one index per capture, named after the
 * capture's absolute path, a size cap with the least recently used indexes evicted first, and the
 * temporary files of builds: each is locked while it is written, so that a later run finds those
 * whose builder died (killed, out of disk) and removes them.
 *
 * Threads: the command's thread.
 */
#ifndef MPROF_VIEW_INDEX_CACHE_H
#define MPROF_VIEW_INDEX_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The cache's size cap when MPROF_VIEW_CACHE_MB does not say (MiB). */
#define MPROF_VCACHE_DEFAULT_MB 4096

/* The cache index of capture_path into out ("DIR/NAME-HASH.vidx"), creating the folder. 0, or -1
 * with err set (no home, a folder that cannot be made). */
int mprof__vcache_path(const char *capture_path, char *out, size_t n, char *err, size_t errlen);

/* A new temporary file for building index_path, beside it, locked for the build; *out_tmp gets
 * its name (caller frees). Removes first the temporary files of dead builds of that folder.
 * Returns the open descriptor, or -1 with err set. */
int mprof__vcache_temp(const char *index_path, char **out_tmp, char *err, size_t errlen);

/* Removes the temporary files of builds that no process is writing any more, in dir. Returns how
 * many were removed. */
int mprof__vcache_sweep(const char *dir);

/* Marks index_path used now and evicts the least recently used indexes of its folder until the
 * folder's indexes fit the cap (MPROF_VIEW_CACHE_MB, else the default; never index_path itself).
 * Returns the bytes removed. */
uint64_t mprof__vcache_touch_evict(const char *index_path);

/* The cap in bytes (the environment's, else the default). */
uint64_t mprof__vcache_cap_bytes(void);

#endif
