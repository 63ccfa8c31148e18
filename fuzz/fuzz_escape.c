/*
 * fuzz_escape.c - libFuzzer target for tool_escape (src/util/tool.c), which every string from a
 * peer (BUSY messages, app names) goes through before it reaches a terminal. Whatever the bytes
 * and the room, the result is NUL-terminated inside the room, holds only printable ASCII, reads
 * back to the input up to its first NUL when the room is large enough, and a smaller room gives
 * a prefix of that cut at a whole escape. The first byte picks the room. Seeds in
 * fuzz/corpus/escape; replayed by ctest (fuzz_escape_replay).
 */
#include "util/tool.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
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
    if (!full || !cut || !back)
        abort();
    if (tool_escape(s, n, full, full_n) != full)
        abort();
    size_t fl = strnlen(full, full_n);
    if (fl >= full_n)
        abort();
    for (size_t i = 0; i < fl; i++)
        if (full[i] < 0x20 || full[i] > 0x7e)
            abort();
    /* Read the escapes back: the input up to its first NUL. */
    size_t bl = 0;
    for (size_t i = 0; i < fl;) {
        if (full[i] != '\\') {
            back[bl++] = (unsigned char)full[i++];
        } else if (i + 1 < fl && full[i + 1] == '\\') {
            back[bl++] = '\\';
            i += 2;
        } else if (i + 3 < fl && full[i + 1] == 'x' && hexval(full[i + 2]) >= 0 &&
                   hexval(full[i + 3]) >= 0) {
            unsigned char c = (unsigned char)(hexval(full[i + 2]) * 16 + hexval(full[i + 3]));
            if (c >= 0x20 && c < 0x7f && c != '\\')
                abort(); /* a printable byte was escaped: not what the comment promises */
            back[bl++] = c;
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
        /* Cut at a whole escape: what follows in the full text does not continue one. */
        if (cl < fl && cl > 0) {
            size_t i = 0;
            while (i < cl)
                i += full[i] != '\\' ? 1 : full[i + 1] == '\\' ? 2 : 4;
            if (i != cl)
                abort();
            /* ...and as much as fits: the next escape would not. */
            size_t next = full[cl] != '\\' ? 1 : full[cl + 1] == '\\' ? 2 : 4;
            if (cl + next < room)
                abort();
        }
    }
    free(full);
    free(cut);
    free(back);
    return 0;
}
