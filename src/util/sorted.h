/*
 * sorted.h - searching ascending arrays of times. Frame ends, frame marks, loss times and
 * off-CPU intervals are kept sorted by time, and each question about them ("the first frame
 * that ends after a", "the frame that holds t") is one binary search for the first value past
 * an instant, so that search is written once.
 */
#ifndef MPROF_UTIL_SORTED_H
#define MPROF_UTIL_SORTED_H

#include <stddef.h>
#include <stdint.h>

/* The index of the first of the n ascending values v that is greater than t; n when none is. */
static inline size_t mprof_first_after(const int64_t *v, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
