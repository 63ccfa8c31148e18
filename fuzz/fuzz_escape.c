/*
 * fuzz_escape.c - libFuzzer target for tool_escape (src/util/tool.c), the one escaping that every
 * string from outside (a capture's names, a peer's messages, a store's rows) goes through before
 * it reaches a terminal. Whatever the bytes and the room, the result is NUL-terminated inside the
 * room, holds no control character (C0, DEL) and no byte above 0x7f that is not part of a
 * well-formed UTF-8 character outside the escaped set (C1 controls, bidirectional overrides and
 * isolates, line and paragraph separators); it reads back to the input up to its first NUL; a
 * character that may be shown is never escaped; and a smaller room gives a prefix of the whole
 * result cut at a whole character or escape, as long as fits. The first byte picks the room.
 * Seeds in fuzz/corpus/escape; replayed by ctest (fuzz_escape_replay).
 */
#include "util/tool.h"
#include "util/utf8.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The characters tool_escape must escape even when they are well-formed. */
static int must_escape(uint32_t cp)
{
    return cp < 0xa0 || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    size_t room = data[0];
    const uint8_t *s = data + 1;
    size_t n = size - 1;
    size_t full_n = 4 * n + 1;
    char *full = malloc(full_n), *cut = malloc(room ? room : 1);
    unsigned char *back = malloc(n + 1);
    /* Where each piece of the result starts: a character or an escape, the escapes of one
     * character's bytes being one piece. */
    size_t *starts = malloc((full_n + 1) * sizeof *starts), n_starts = 0;
    if (!full || !cut || !back || !starts)
        abort();
    if (tool_escape(s, n, full, full_n) != full)
        abort();
    size_t fl = strnlen(full, full_n);
    if (fl >= full_n)
        abort();
    /* Read the result back: the input up to its first NUL. */
    size_t bl = 0, escaped_tail = 0;
    for (size_t i = 0; i < fl;) {
        unsigned char c = (unsigned char)full[i];
        if (!escaped_tail)
            starts[n_starts++] = i;
        if (c < 0x20 || c == 0x7f)
            abort(); /* a control character reached the output */
        if (c >= 0x80) {
            uint32_t cp;
            size_t len = mprof_utf8_char((const unsigned char *)full + i, fl - i, &cp);
            if (!len || must_escape(cp))
                abort(); /* a byte that is not a character that may be shown */
            memcpy(back + bl, full + i, len);
            bl += len;
            i += len;
            escaped_tail = 0;
        } else if (c != '\\') {
            back[bl++] = c;
            i++;
            escaped_tail = 0;
        } else if (i + 1 < fl && full[i + 1] == '\\') {
            back[bl++] = '\\';
            i += 2;
            escaped_tail = 0;
        } else if (i + 3 < fl && full[i + 1] == 'x' && hexval(full[i + 2]) >= 0 && hexval(full[i + 3]) >= 0) {
            unsigned char b = (unsigned char)(hexval(full[i + 2]) * 16 + hexval(full[i + 3]));
            if (b >= 0x20 && b < 0x7f && b != '\\')
                abort(); /* a printable byte was escaped */
            if (b >= 0x80 && !escaped_tail) {
                /* Escaped: not a character that may be shown, or the first byte of one that may
                 * not (whose other bytes follow, escaped too). */
                uint32_t cp;
                size_t len = mprof_utf8_char(s + bl, n - bl, &cp);
                if (len && !must_escape(cp))
                    abort();
                escaped_tail = len ? len - 1 : 0;
            } else if (escaped_tail) {
                escaped_tail--;
            }
            back[bl++] = b;
            i += 4;
        } else {
            abort(); /* a backslash that starts no escape */
        }
    }
    size_t want = strnlen((const char *)s, n);
    if (bl != want || memcmp(back, s, want) != 0)
        abort();
    if (room) {
        tool_escape(s, n, cut, room);
        size_t cl = strnlen(cut, room);
        if (cl >= room || memcmp(cut, full, cl) != 0)
            abort();
        /* Cut at a whole piece, and as much as fits: the next piece would not. */
        if (cl < fl) {
            size_t k = 0;
            while (k < n_starts && starts[k] < cl)
                k++;
            if (k == n_starts || starts[k] != cl)
                abort();
            size_t next = k + 1 < n_starts ? starts[k + 1] : fl;
            if (next < room)
                abort();
        }
    }
    free(full);
    free(cut);
    free(back);
    free(starts);
    return 0;
}
