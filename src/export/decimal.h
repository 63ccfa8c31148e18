/*
 * decimal.h - numbers as the text exports write them, without stdio: an event of a Chrome
 * export is a few dozen bytes, and printf's parsing of its format cost more than the rest of
 * writing it.
 */
#ifndef MPROF_EXPORT_DECIMAL_H
#define MPROF_EXPORT_DECIMAL_H

#include <stdint.h>
#include <stdio.h>

/* Writes v in decimal at p (room for 20 digits); returns the end. Two digits a step, from the
 * last. */
static inline char *mprof__fmt_u64(char *p, uint64_t v)
{
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930"
                                   "31323334353637383940414243444546474849505152535455565758596061"
                                   "62636465666768697071727374757677787980818283848586878889909192"
                                   "939495969798990";
    static const uint64_t pow10[20] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull,
                                       1000000ull, 10000000ull, 100000000ull, 1000000000ull,
                                       10000000000ull, 100000000000ull, 1000000000000ull,
                                       10000000000000ull, 100000000000000ull,
                                       1000000000000000ull, 10000000000000000ull,
                                       100000000000000000ull, 1000000000000000000ull,
                                       10000000000000000000ull};
    /* Digits from the bit length (1233/4096 ~ log10 2), corrected by one comparison. */
    int bits = 64 - __builtin_clzll(v | 1);
    int n = (bits * 1233) >> 12;
    n += v >= pow10[n];
    n += n == 0;
    char *q = p + n;
    while (v > UINT32_MAX) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        q -= 2;
        q[0] = pairs[2 * r];
        q[1] = pairs[2 * r + 1];
    }
    uint32_t w = (uint32_t)v; /* 32-bit steps are cheaper */
    while (w >= 100) {
        unsigned r = w % 100;
        w /= 100;
        q -= 2;
        q[0] = pairs[2 * r];
        q[1] = pairs[2 * r + 1];
    }
    v = w;
    if (v >= 10) {
        q[-2] = pairs[2 * v];
        q[-1] = pairs[2 * v + 1];
    } else {
        q[-1] = (char)('0' + v);
    }
    return p + n;
}

/* Nanoseconds as microseconds with three decimals at p (integer arithmetic: exact for any
 * capture length); returns the end. At most 26 bytes. */
static inline char *mprof__fmt_us(char *p, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0)
        *p++ = '-';
    p = mprof__fmt_u64(p, a / 1000);
    unsigned f = (unsigned)(a % 1000);
    p[0] = '.';
    p[1] = (char)('0' + f / 100);
    p[2] = (char)('0' + f / 10 % 10);
    p[3] = (char)('0' + f % 10);
    return p + 4;
}


/* ns as microseconds with three decimals, to o. */
static inline void mprof__write_us(FILE *o, int64_t ns)
{
    char b[32];
    fwrite(b, 1, (size_t)(mprof__fmt_us(b, ns) - b), o);
}

#endif
