/*
 * grow.h - growable arrays: the one way the tools make room for one more element.
 *
 *     if (MPROF_GROW(v->items, v->cap, v->n + 1, 64) != 0)
 *         return -1;               (out of memory: the array is unchanged)
 *     v->items[v->n++] = x;
 *
 * The capacity doubles from min, so appending n elements costs O(n) copies in all. arr is any
 * pointer lvalue, cap a uint32_t, uint64_t or size_t lvalue; need the elements wanted.
 */
#ifndef MPROF_UTIL_GROW_H
#define MPROF_UTIL_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The capacity after doubling cap (or min when 0) until it holds need, reallocating *arr to it;
 * -1 when that passes max or memory runs out (*arr and cap unchanged). */
static inline int mprof__grow(void **arr, uint64_t *cap, uint64_t need, size_t es, uint64_t min,
                              uint64_t max)
{
    uint64_t nc = *cap ? *cap : min;
    while (nc < need) {
        if (nc > max / 2)
            return -1;
        nc *= 2;
    }
    if (nc > max || nc > SIZE_MAX / es)
        return -1;
    void *p = realloc(*arr, (size_t)nc * es);
    if (!p)
        return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

static inline int mprof__grow64(void **arr, uint64_t *cap, uint64_t need, size_t es, uint64_t min)
{
    return mprof__grow(arr, cap, need, es, min, UINT64_MAX);
}

static inline int mprof__grow32(void **arr, uint32_t *cap, uint64_t need, size_t es, uint64_t min)
{
    uint64_t c = *cap;
    if (mprof__grow(arr, &c, need, es, min, UINT32_MAX) != 0)
        return -1;
    *cap = (uint32_t)c;
    return 0;
}

/* The same as a function, from 16 elements: room for n elements of size es in *arr. */
static inline int mprof_array_reserve(void **arr, uint32_t *cap, uint32_t n, size_t es)
{
    return n <= *cap ? 0 : mprof__grow32(arr, cap, n, es, 16);
}

#define MPROF_GROW(arr, cap, need, min)                                                           \
    ((uint64_t)(need) <= (uint64_t)(cap)                                                          \
         ? 0                                                                                      \
         : _Generic(&(cap), uint32_t *: mprof__grow32, default: mprof__grow64)(                   \
               (void **)&(arr), &(cap), (uint64_t)(need), sizeof *(arr), (uint64_t)(min)))

#endif
