/*
 * utf8.h - one reading of UTF-8 for the tool's outputs: the text escaper (tool.c) and the JSON
 * writer (json_out.c) both ask it where a character starts and ends, so that a name from a
 * capture is cut, shown or escaped the same way everywhere.
 *
 * Threads: pure; any thread.
 */
#ifndef MPROF_UTIL_UTF8_H
#define MPROF_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length (2 to 4) of the well-formed UTF-8 sequence of a character from U+0080 at p (n bytes
 * available), its code point in *cp; 0 when p does not start one: a stray continuation byte, a
 * sequence cut short, an overlong form, a surrogate, or past U+10FFFF. */
static inline size_t mprof_utf8_char(const unsigned char *p, size_t n, uint32_t *cp)
{
    if (!n || p[0] < 0xc2 || p[0] > 0xf4)
        return 0;
    size_t len = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
    if (n < len)
        return 0;
    uint32_t c = p[0] & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

/* The characters no output shows as they are: the C1 controls (some terminals read U+009B as
 * CSI), the bidirectional overrides and isolates and the marks (they reorder what a terminal or
 * a page shows), and the line and paragraph separators. Text outputs escape them as \xNN, JSON as
 * \uXXXX. */
static inline int mprof_utf8_hidden(uint32_t cp)
{
    return cp < 0xa0 || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

#endif
