/*
 * query.c - the parser of the requests `mprof view --serve` answers (view/query.h).
 *
 * A request target is outside input from whatever can reach the port, so the parser accepts
 * only what the page sends: a known /api/ path with its keys, each at most once, values that are
 * decimal integers within their range; or a page file name made of [a-z0-9_.-/] without "..".
 * Anything else is refused with a message that names the offending part. The server never maps
 * a request to a file of the machine: page files come from a table compiled into mprof.
 */
#include "view/query.h"

#include "util/tool.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

typedef struct api_path {
    const char *path;
    int kind;
    const char *keys; /* accepted keys, space-separated; a leading '!' marks a required one */
} api_path;

static const api_path paths[] = {
    {"/api/meta", MPROF_VQ_META, ""},
    {"/api/live", MPROF_VQ_LIVE, ""},
    {"/api/image", MPROF_VQ_IMAGE, "!frame"},
    {"/api/zones", MPROF_VQ_ZONES, "!t0 !t1 !w lod"},
    {"/api/plots", MPROF_VQ_PLOTS, "!t0 !t1 !w"},
    {"/api/messages", MPROF_VQ_MESSAGES, "!t0 !t1 limit"},
    {"/api/frames", MPROF_VQ_FRAMES, "from to !w set"},
    {"/api/stats", MPROF_VQ_STATS, "!t0 !t1 set"},
    {"/api/hist", MPROF_VQ_HIST, "!loc t0 t1 set"},
    {"/api/instances", MPROF_VQ_INSTANCES, "!loc dmin dmax limit t0 t1 set"},
    {"/api/pairs", MPROF_VQ_PAIRS, ""},
    {"/api/system", MPROF_VQ_SYSTEM, ""},
    {"/api/states", MPROF_VQ_STATES, "!t0 !t1 !w"},
    {"/api/cpu", MPROF_VQ_CPU, "!t0 !t1 !w"},
    {"/api/samples", MPROF_VQ_SAMPLES, "!t0 !t1 track"},
    {"/api/locks", MPROF_VQ_LOCKS, "!t0 !t1"},
};

#define MAX_NS (INT64_C(1) << 62)

/* Parses a decimal integer of s[0, n) into *v within [lo, hi]. */
static int parse_int(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *v)
{
    size_t i = 0;
    int neg = 0;
    if (n && s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (i == n || n - i > 19)
        return -1;
    uint64_t acc = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        acc = acc * 10 + (uint64_t)(s[i] - '0');
    }
    if (acc > (uint64_t)INT64_MAX)
        return -1;
    int64_t r = neg ? -(int64_t)acc : (int64_t)acc;
    if (r < lo || r > hi)
        return -1;
    *v = r;
    return 0;
}

/* Is key (k, kn) in the space-separated list? *required gets whether it is marked '!'. */
static int key_allowed(const char *list, const char *k, size_t kn, int *required)
{
    const char *p = list;
    while (*p) {
        while (*p == ' ')
            p++;
        int req = *p == '!';
        if (req)
            p++;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        if ((size_t)(e - p) == kn && memcmp(p, k, kn) == 0) {
            *required = req;
            return 1;
        }
        p = e;
    }
    return 0;
}

static const char *const key_names[] = {"t0",  "t1",    "w",   "loc", "dmin", "dmax", "limit",
                                        "from", "to", "frame", "lod", "track", "set", "c"};
#define N_KEYS (sizeof key_names / sizeof key_names[0])

static int key_index(const char *k, size_t kn)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strlen(key_names[i]) == kn && memcmp(key_names[i], k, kn) == 0)
            return (int)i;
    return -1;
}

static int fail(char *err, size_t errlen, const char *what, const char *s, size_t n)
{
    tool_seterr(err, errlen, "%s '%.*s'", what, (int)(n > 64 ? 64 : n), s);
    return -1;
}

static int is_asset_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' || c == '/';
}

int mprof__vquery_parse(const char *target, size_t len, mprof_vquery *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!len || target[0] != '/')
        return fail(err, errlen, "the request target must start with '/':", target, len);
    if (memchr(target, 0, len))
        return fail(err, errlen, "a NUL byte in the request target", "", 0);
    const char *qm = memchr(target, '?', len);
    size_t plen = qm ? (size_t)(qm - target) : len;
    const api_path *ap = NULL;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (strlen(paths[i].path) == plen && memcmp(paths[i].path, target, plen) == 0)
            ap = &paths[i];
    if (!ap) {
        /* A page file: no query, a short name of safe characters, no "..", no "//". */
        if (qm)
            return fail(err, errlen, "page files take no query:", target, len);
        if (plen >= 4 && memcmp(target, "/api", 4) == 0)
            return fail(err, errlen, "unknown query path", target, plen);
        if (plen - 1 >= sizeof out->asset)
            return fail(err, errlen, "file name too long:", target, plen);
        for (size_t i = 1; i < plen; i++)
            if (!is_asset_char(target[i]) || (target[i] == '.' && target[i - 1] == '.') ||
                (target[i] == '/' && target[i - 1] == '/'))
                return fail(err, errlen, "no such file:", target, plen);
        out->kind = MPROF_VQ_ASSET;
        memcpy(out->asset, target + 1, plen - 1);
        out->asset[plen - 1] = 0;
        return 0;
    }
    out->kind = ap->kind;
    int64_t vals[N_KEYS];
    int seen[N_KEYS] = {0};
    const char *p = qm ? qm + 1 : target + len, *end = target + len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(e - p));
        if (!eq)
            return fail(err, errlen, "a query part without '=':", p, (size_t)(e - p));
        size_t kn = (size_t)(eq - p);
        int req, ki = key_index(p, kn);
        /* c= (which capture of a comparison) goes with every query. */
        if (ki < 0 || (ki != 13 && !key_allowed(ap->keys, p, kn, &req)))
            return fail(err, errlen, "unknown query key", p, kn);
        if (seen[ki])
            return fail(err, errlen, "query key given twice:", p, kn);
        seen[ki] = 1;
        int64_t lo = 0, hi = MAX_NS;
        if (ki == 2) { /* w */
            lo = 1;
            hi = 16384;
        } else if (ki == 3 || ki == 11) { /* loc, track */
            hi = UINT32_MAX;
        } else if (ki == 6) { /* limit */
            lo = 1;
            hi = 10000;
        } else if (ki == 0 || ki == 1) { /* t0, t1: the page may look before the start */
            lo = -MAX_NS;
        } else if (ki == 10 || ki == 13) { /* lod: 0 or 1; c: capture 0 or 1 */
            hi = 1;
        } else if (ki == 12) { /* set */
            hi = UINT32_MAX;
        }
        if (parse_int(eq + 1, (size_t)(e - eq - 1), lo, hi, &vals[ki]) != 0) {
            char what[96];
            snprintf(what, sizeof what, "%.*s wants an integer in [%" PRId64 ", %" PRId64 "], not", (int)kn, p, lo, hi);
            return fail(err, errlen, what, eq + 1, (size_t)(e - eq - 1));
        }
        if (amp && amp + 1 == end)
            return fail(err, errlen, "the query ends with '&':", target, len);
        p = amp ? amp + 1 : end;
    }
    for (size_t i = 0; i < N_KEYS; i++) {
        int req;
        if (!seen[i] && key_allowed(ap->keys, key_names[i], strlen(key_names[i]), &req) && req) {
            tool_seterr(err, errlen, "%s needs %s", ap->path, key_names[i]);
            return -1;
        }
    }
    if (seen[0] != seen[1]) {
        tool_seterr(err, errlen, "%s wants t0 and t1 together", ap->path);
        return -1;
    }
    if (seen[0]) {
        out->t0 = vals[0];
        out->t1 = vals[1];
        out->has_t = 1;
        if (out->t1 <= out->t0) {
            tool_seterr(err, errlen, "t1 must be after t0");
            return -1;
        }
        if ((uint64_t)out->t1 - (uint64_t)out->t0 > (uint64_t)MPROF_VQ_MAX_SPAN_NS) {
            tool_seterr(err, errlen, "t1 - t0 must be at most %" PRId64 " ns", MPROF_VQ_MAX_SPAN_NS);
            return -1;
        }
    }
    if (seen[2])
        out->w = (uint32_t)vals[2];
    if (seen[3]) {
        out->loc = (uint32_t)vals[3];
        out->has_loc = 1;
    }
    if (seen[11]) { /* the track filter of /api/samples, kept in loc */
        out->loc = (uint32_t)vals[11];
        out->has_loc = 1;
    }
    if (seen[4])
        out->dmin = vals[4];
    if (seen[5])
        out->dmax = vals[5];
    if (seen[6])
        out->limit = (uint32_t)vals[6];
    if (seen[9])
        out->from = vals[9]; /* the frame of /api/image */
    if (seen[10])
        out->no_lod = vals[10] == 0;
    if (seen[12]) {
        out->set = (uint32_t)vals[12];
        out->has_set = 1;
    }
    if (seen[13])
        out->cap = (uint32_t)vals[13];
    if (seen[7] || seen[8]) {
        if (!seen[7] || !seen[8] || vals[8] < vals[7]) {
            tool_seterr(err, errlen, "frames want from and to with from <= to");
            return -1;
        }
        out->from = vals[7];
        out->to = vals[8];
        out->has_frames = 1;
    }
    return 0;
}
