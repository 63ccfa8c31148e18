/*
 * view_link.c - from a gate's verdict to the captures it judged, side by side: the command that
 * serves both in the viewer's comparison (`mprof view --serve BASE CURRENT`, docs/VIEW.md) and
 * the page address that opens it on the zone that grew most. Each writer prints it (text,
 * Markdown, JSON), so whoever reads a regression is one command away from its frames and zones.
 */
#include "gate/internal.h"

#include <stdio.h>
#include <string.h>

/* s quoted for a POSIX shell when it needs to be. */
static void shell_word(char *out, size_t n, const char *s)
{
    int plain = *s != 0;
    for (const char *c = s; *c; c++)
        plain &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                 strchr("/._-+:,@%", *c) != NULL;
    size_t o = 0;
    if (plain) {
        snprintf(out, n, "%s", s);
        return;
    }
    if (o + 1 < n)
        out[o++] = '\'';
    for (const char *c = s; *c && o + 5 < n; c++) {
        if (*c == '\'') {
            memcpy(out + o, "'\\''", 4);
            o += 4;
        } else
            out[o++] = *c;
    }
    if (o + 1 < n)
        out[o++] = '\'';
    out[o] = 0;
}

int mprof__gate_view_link(const mprof_gate_result *r, char *cmd, size_t cn, char *addr, size_t an)
{
    if (!r->base_capture || !r->cur_capture || !r->base_capture[0] || !r->cur_capture[0] ||
        r->verdict == MPROF_GATE_BAD_INPUT)
        return -1;
    char a[1024], b[1024];
    shell_word(a, sizeof a, r->base_capture);
    shell_word(b, sizeof b, r->cur_capture);
    snprintf(cmd, cn, "mprof view --serve %s %s", a, b);
    /* The zone that grew most, percent-encoded for the address's fragment. */
    size_t o = (size_t)snprintf(addr, an, "#compare");
    if (r->n_zones > 0 && r->zones[0].name && o + 6 < an) {
        memcpy(addr + o, "&zone=", 6);
        o += 6;
        static const char hex[] = "0123456789ABCDEF";
        for (const unsigned char *c = (const unsigned char *)r->zones[0].name; *c && o + 4 < an; c++) {
            if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("-_.~:", *c))
                addr[o++] = (char)*c;
            else {
                addr[o++] = '%';
                addr[o++] = hex[*c >> 4];
                addr[o++] = hex[*c & 15];
            }
        }
        addr[o] = 0;
    }
    return 0;
}
