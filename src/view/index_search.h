/*
 * index_search.h - the one binary search of the served viewer's index. Every table of the index
 * file (index_file.h) and of its system section (index_sys_file.h) is an array of fixed-size
 * records sorted by an int64_t key (a start, an end, a time stamp), and every answer begins with
 * "the first record at or after t" or "the first record that ends after t".
 */
#ifndef MPROF_VIEW_INDEX_SEARCH_H
#define MPROF_VIEW_INDEX_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The first of the records [lo, hi) of rec bytes each at base, sorted by the int64_t at key_off
 * of each, whose key is at least t, or with after set greater than t; hi when there is none. */
static inline uint64_t mprof__vsearch(const void *base, size_t rec, size_t key_off, uint64_t lo,
                                      uint64_t hi, int64_t t, int after)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int64_t k;
        memcpy(&k, (const unsigned char *)base + mid * rec + key_off, sizeof k);
        if (k < t || (after && k == t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first record of [lo, hi) whose key is at least t. */
static inline uint64_t mprof__vfirst_from(const void *base, size_t rec, size_t key_off,
                                          uint64_t lo, uint64_t hi, int64_t t)
{
    return mprof__vsearch(base, rec, key_off, lo, hi, t, 0);
}

/* The first record of [lo, hi) whose key is greater than t. */
static inline uint64_t mprof__vfirst_after(const void *base, size_t rec, size_t key_off,
                                           uint64_t lo, uint64_t hi, int64_t t)
{
    return mprof__vsearch(base, rec, key_off, lo, hi, t, 1);
}

#endif
