/*
 * zone_key.c - zone identity across captures (see zone_key.h).
 *
 * Pairing sorts both sides by name, so only zones that share a name are ever compared: the
 * work is O((n_a + n_b) log n) plus the size of the equal-name groups, which are small (a name
 * shared by many sites, like "Update", still forms groups of tens).
 */
#include "analysis/zone_key.h"
#include "util/grow.h"

#include <stdlib.h>
#include <string.h>

static int known(const char *s)
{
    return s && *s;
}

/* The component of path that ends just before *end (moving *end to its start), skipping "."
 * and empty components; returns its length, 0 at the start of the path or at "..". */
static size_t prev_component(const char *path, const char **end, const char **out)
{
    for (;;) {
        const char *e = *end;
        while (e > path && e[-1] == '/')
            e--;
        const char *s = e;
        while (s > path && s[-1] != '/')
            s--;
        *end = s;
        size_t n = (size_t)(e - s);
        if (n == 0)
            return 0;
        if (n == 1 && s[0] == '.')
            continue;
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return 0;
        *out = s;
        return n;
    }
}

int mprof__zone_key_path_common(const char *a, const char *b)
{
    if (!known(a) || !known(b))
        return 0;
    const char *ea = a + strlen(a), *eb = b + strlen(b);
    int common = 0;
    for (;;) {
        const char *ca = NULL, *cb = NULL; /* set whenever the length is not 0 */
        size_t na = prev_component(a, &ea, &ca), nb = prev_component(b, &eb, &cb);
        if (!na || na != nb || memcmp(ca, cb, na) != 0)
            return common;
        common++;
    }
}

int mprof__zone_key_score(const mprof_zone_key *a, const mprof_zone_key *b)
{
    if (!a->name || !b->name || strcmp(a->name, b->name) != 0)
        return 0;
    int score = 1;
    if (known(a->function) && known(b->function)) {
        if (strcmp(a->function, b->function) != 0)
            return 0;
        score += 1 << 12; /* the function outweighs any tie-breaker */
    }
    int common = mprof__zone_key_path_common(a->file, b->file);
    score += 2 * (common < 1000 ? common : 1000);
    if (a->line && a->line == b->line)
        score += 1;
    return score;
}

int mprof__zone_key_same(const mprof_zone_key *a, const mprof_zone_key *b)
{
    return mprof__zone_key_score(a, b) > 0;
}

typedef struct cand {
    int score;
    size_t i, j;
} cand;

typedef struct ent {
    const char *name;
    size_t i;
} ent;

static int cmp_ent(const void *x, const void *y)
{
    const ent *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    if (c)
        return c;
    return (a->i > b->i) - (a->i < b->i);
}

static int cmp_cand(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (a->i != b->i)
        return a->i < b->i ? -1 : 1;
    return (a->j > b->j) - (a->j < b->j);
}

/* Indices of k sorted by name (no shared state: callers may run on several threads). */
static size_t *sorted_order(const mprof_zone_key *k, size_t n)
{
    size_t *o = malloc((n ? n : 1) * sizeof *o);
    ent *e = malloc((n ? n : 1) * sizeof *e);
    if (!o || !e) {
        free(o);
        free(e);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        e[i] = (ent){k[i].name ? k[i].name : "", i};
    qsort(e, n, sizeof *e, cmp_ent);
    for (size_t i = 0; i < n; i++)
        o[i] = e[i].i;
    free(e);
    return o;
}

int mprof__zone_key_pair(const mprof_zone_key *a, size_t n_a, const mprof_zone_key *b, size_t n_b,
                         ptrdiff_t *out_b_of_a)
{
    for (size_t i = 0; i < n_a; i++)
        out_b_of_a[i] = -1;
    size_t *oa = sorted_order(a, n_a), *ob = sorted_order(b, n_b);
    cand *c = NULL;
    size_t nc = 0, cap = 0;
    unsigned char *taken = calloc(n_b ? n_b : 1, 1);
    int rc = -1;
    if (!oa || !ob || !taken)
        goto out;
    size_t ib = 0;
    for (size_t ia = 0; ia < n_a;) {
        const char *name = a[oa[ia]].name ? a[oa[ia]].name : "";
        size_t ea = ia;
        while (ea < n_a && strcmp(a[oa[ea]].name ? a[oa[ea]].name : "", name) == 0)
            ea++;
        while (ib < n_b && strcmp(b[ob[ib]].name ? b[ob[ib]].name : "", name) < 0)
            ib++;
        size_t eb = ib;
        while (eb < n_b && strcmp(b[ob[eb]].name ? b[ob[eb]].name : "", name) == 0)
            eb++;
        for (size_t x = ia; x < ea; x++)
            for (size_t y = ib; y < eb; y++) {
                int s = mprof__zone_key_score(&a[oa[x]], &b[ob[y]]);
                if (s <= 0)
                    continue;
                if (MPROF_GROW(c, cap, nc + 1, 64) != 0)
                    goto out;
                c[nc++] = (cand){s, oa[x], ob[y]};
            }
        ia = ea;
        ib = eb;
    }
    qsort(c, nc, sizeof *c, cmp_cand);
    for (size_t k = 0; k < nc; k++)
        if (out_b_of_a[c[k].i] < 0 && !taken[c[k].j]) {
            out_b_of_a[c[k].i] = (ptrdiff_t)c[k].j;
            taken[c[k].j] = 1;
        }
    rc = 0;
out:
    if (rc)
        for (size_t i = 0; i < n_a; i++)
            out_b_of_a[i] = -1;
    free(oa);
    free(ob);
    free(c);
    free(taken);
    return rc;
}
