/*
 * umap.h - a small open-addressing map from nonzero 64-bit keys to 32-bit values (values are
 * usually indices into the user's own arrays), and a table of distinct strings built on it.
 * Deletion uses backward-shift, so lookups never see tombstones.
 */
#ifndef MPROF_UTIL_UMAP_H
#define MPROF_UTIL_UMAP_H

#include "util/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct mprof_umap {
    uint64_t *keys; /* 0 = empty */
    uint32_t *vals;
    size_t cap, n;
} mprof_umap;

static inline size_t mprof_umap_slot(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

/* Pointer to the value of k, or NULL. */
static inline uint32_t *mprof_umap_get(const mprof_umap *m, uint64_t k)
{
    if (!m->cap)
        return NULL;
    for (size_t i = mprof_umap_slot(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == k)
            return &m->vals[i];
        if (!m->keys[i])
            return NULL;
    }
}

static inline int mprof_umap_grow(mprof_umap *m)
{
    size_t nc = m->cap ? m->cap * 2 : 64;
    uint64_t *nk = calloc(nc, sizeof *nk);
    uint32_t *nv = malloc(nc * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = mprof_umap_slot(m->keys[i], nc);
        while (nk[j])
            j = (j + 1) & (nc - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = nc;
    return 0;
}

/* Sets k (nonzero) to v. Returns 0, or -1 when out of memory (map unchanged). */
static inline int mprof_umap_put(mprof_umap *m, uint64_t k, uint32_t v)
{
    uint32_t *p = mprof_umap_get(m, k);
    if (p) {
        *p = v;
        return 0;
    }
    if ((m->n + 1) * 4 > m->cap * 3 && mprof_umap_grow(m) != 0)
        return -1;
    size_t i = mprof_umap_slot(k, m->cap);
    while (m->keys[i])
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = k;
    m->vals[i] = v;
    m->n++;
    return 0;
}

static inline void mprof_umap_del(mprof_umap *m, uint64_t k)
{
    if (!m->cap)
        return;
    size_t i = mprof_umap_slot(k, m->cap);
    while (m->keys[i] != k) {
        if (!m->keys[i])
            return;
        i = (i + 1) & (m->cap - 1);
    }
    size_t mask = m->cap - 1;
    for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        size_t home = mprof_umap_slot(m->keys[j], m->cap);
        /* Move j back to i when its home is not in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
    m->n--;
}

static inline void mprof_umap_free(mprof_umap *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}

/* Distinct strings, each with a small index in the order first met (function names of samples,
 * say). Zero-initialised is empty. */
typedef struct mprof_strtab {
    char **s;
    uint32_t n, cap;
    mprof_umap by_hash;
} mprof_strtab;

/* The index of str in t, added (copied) when new; UINT32_MAX when out of memory. */
static inline uint32_t mprof_strtab_id(mprof_strtab *t, const char *str)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = str; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    for (h |= 1;; h = (h * 31 + 7) | 1) {
        uint32_t *v = mprof_umap_get(&t->by_hash, h);
        if (!v)
            break;
        if (strcmp(t->s[*v], str) == 0)
            return *v;
    }
    if (mprof_array_reserve((void **)&t->s, &t->cap, t->n + 1, sizeof *t->s) != 0)
        return UINT32_MAX;
    size_t len = strlen(str) + 1;
    char *c = malloc(len);
    if (!c || mprof_umap_put(&t->by_hash, h, t->n) != 0) {
        free(c);
        return UINT32_MAX;
    }
    memcpy(c, str, len);
    t->s[t->n] = c;
    return t->n++;
}

static inline void mprof_strtab_free(mprof_strtab *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    mprof_umap_free(&t->by_hash);
    memset(t, 0, sizeof *t);
}

#endif
