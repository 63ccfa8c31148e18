/*
 * stats.c - the Mann-Whitney U test and a hierarchical bootstrap.
 *
 * The idea: a gate that compares two p95s on their own flips on noise, because a p95 of a few
 * hundred frames moves by several percent between identical runs. So the gate asks two further
 * questions of the data. Is one distribution shifted against the other (a rank test, which does
 * not care about the shape of the tail)? And how far could the p95 ratio move if we re-ran the
 * same experiment (a bootstrap, which resamples the runs we have instead of assuming a formula)?
 * Both are implemented here in plain C with no dependencies beyond libm.
 */
#include "gate/stats.h"
#include "analysis/percentile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double mprof__normal_sf(double z)
{
    return 0.5 * erfc(z / sqrt(2.0));
}

double mprof__normal_isf(double p)
{
    if (p <= 0.0)
        return INFINITY;
    if (p >= 1.0)
        return -INFINITY;
    /* Bisection on the monotone upper tail; 200 halvings of [-40, 40] reach double precision. */
    double lo = -40.0, hi = 40.0;
    for (int i = 0; i < 200 && hi - lo > 1e-12; i++) {
        double mid = 0.5 * (lo + hi);
        if (mprof__normal_sf(mid) > p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

double mprof__mwu_min_p(size_t na, size_t nb)
{
    /* 1 / C(na + nb, na), computed as a product to stay in range. */
    double c = 1.0;
    size_t k = na < nb ? na : nb, n = na + nb;
    for (size_t i = 1; i <= k; i++)
        c = c * (double)(n - k + i) / (double)i;
    return 1.0 / c;
}

double mprof__t_isf(double p, double df)
{
    double z = mprof__normal_isf(p);
    if (!(df > 0.0))
        return INFINITY;
    if (df > 1e6)
        return z;
    /* Below 3 degrees of freedom the expansion is too short (11 % low at 1): the exact
     * quantiles of 1 and 2 degrees, taken at the whole degrees below df (wider, so safe). */
    if (df < 2.0)
        return tan(3.14159265358979323846 * (0.5 - p));
    if (df < 3.0) {
        double q = 1.0 - p;
        return (2.0 * q - 1.0) / sqrt(2.0 * q * (1.0 - q));
    }
    /* Cornish-Fisher expansion of Student's t quantile in powers of 1 / df (Abramowitz and
     * Stegun 26.7.5), to the fourth term. */
    double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
    double g1 = (z3 + z) / 4.0;
    double g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
    double g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
    double g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92160.0;
    return z + g1 / df + g2 / (df * df) + g3 / (df * df * df) + g4 / (df * df * df * df);
}

int mprof__runs_diff_greater(const double *base, size_t nb, const double *cur, size_t nc,
                             double alpha, double *out_t)
{
    *out_t = 0.0;
    if (nb < 2 || nc < 2)
        return 0;
    double mb = 0, mc = 0, vb = 0, vc = 0;
    for (size_t i = 0; i < nb; i++)
        mb += base[i];
    for (size_t i = 0; i < nc; i++)
        mc += cur[i];
    mb /= (double)nb;
    mc /= (double)nc;
    for (size_t i = 0; i < nb; i++)
        vb += (base[i] - mb) * (base[i] - mb);
    for (size_t i = 0; i < nc; i++)
        vc += (cur[i] - mc) * (cur[i] - mc);
    /* Pooled, for the reason given in mprof__runs_log_ratio_ci. */
    double df = (double)(nb + nc - 2);
    double se2 = (vb + vc) / df * (1.0 / (double)nb + 1.0 / (double)nc);
    double d = mc - mb;
    if (!(se2 > 0.0)) {
        *out_t = d > 0.0 ? INFINITY : 0.0;
        return d > 0.0;
    }
    *out_t = d / sqrt(se2);
    return *out_t > mprof__t_isf(alpha, df);
}

int mprof__runs_log_ratio_ci(const double *base, size_t nb, const double *cur, size_t nc,
                              double level, mprof_ratio_ci *out, double *out_df)
{
    memset(out, 0, sizeof *out);
    *out_df = 0.0;
    if (nb < 2 || nc < 2)
        return -1;
    double mb = 0, mc = 0, vb = 0, vc = 0;
    for (size_t i = 0; i < nb; i++) {
        if (!(base[i] > 0.0))
            return -1;
        mb += log(base[i]);
    }
    for (size_t i = 0; i < nc; i++) {
        if (!(cur[i] > 0.0))
            return -1;
        mc += log(cur[i]);
    }
    mb /= (double)nb;
    mc /= (double)nc;
    for (size_t i = 0; i < nb; i++)
        vb += (log(base[i]) - mb) * (log(base[i]) - mb);
    for (size_t i = 0; i < nc; i++)
        vc += (log(cur[i]) - mc) * (log(cur[i]) - mc);
    /* Pooled variance: interleaved runs of both sides on one machine share its run-to-run
     * spread. (Welch's unequal-variance form is not used: with two or three runs a side, the
     * two sample variances differ by large factors by chance alone, and its degrees of freedom
     * then collapse towards 1.) */
    double df = (double)(nb + nc - 2);
    double sp2 = (vb + vc) / df;
    double se2 = sp2 * (1.0 / (double)nb + 1.0 / (double)nc);
    double d = mc - mb;
    out->point = exp(d);
    *out_df = df;
    if (se2 <= 0.0) {
        out->lo = out->hi = out->point;
        return 0;
    }
    double t = mprof__t_isf((1.0 - level) / 2.0, df);
    out->lo = exp(d - t * sqrt(se2));
    out->hi = exp(d + t * sqrt(se2));
    return 0;
}

int mprof__runs_log_spread(const double *base, size_t nb, const double *cur, size_t nc,
                           double *out_diff, double *out_sd)
{
    *out_diff = *out_sd = 0.0;
    if (nb < 2 || nc < 2)
        return -1;
    double mb = 0, mc = 0, v = 0;
    for (size_t i = 0; i < nb; i++) {
        if (!(base[i] > 0.0))
            return -1;
        mb += log(base[i]);
    }
    for (size_t i = 0; i < nc; i++) {
        if (!(cur[i] > 0.0))
            return -1;
        mc += log(cur[i]);
    }
    mb /= (double)nb;
    mc /= (double)nc;
    for (size_t i = 0; i < nb; i++)
        v += (log(base[i]) - mb) * (log(base[i]) - mb);
    for (size_t i = 0; i < nc; i++)
        v += (log(cur[i]) - mc) * (log(cur[i]) - mc);
    *out_diff = mc - mb;
    *out_sd = sqrt(v / (double)(nb + nc - 2));
    return 0;
}

long mprof__runs_needed(double diff, double sd, double alpha, long max_runs)
{
    if (!(diff > 0.0))
        return 0;
    for (long k = 2; k <= max_runs; k++)
        if (diff > mprof__t_isf(alpha, (double)(2 * k - 2)) * sd * sqrt(2.0 / (double)k))
            return k;
    return -1;
}

typedef struct vidx {
    double v;
    size_t idx; /* < na: a's value idx; else na + b's value idx */
} vidx;

static int cmp_vidx(const void *pa, const void *pb)
{
    const vidx *a = pa, *b = pb;
    return (a->v > b->v) - (a->v < b->v);
}

/* Ranks (1-based) of a's and b's values pooled, a group of ties sharing the mean of its ranks:
 * the rank sum of b's values, the tie term sum(t^3 - t) over the groups, and with rk each
 * value's rank (a's values first, then b's, in their order). 0, or -1 out of memory. */
static int pooled_ranks(const double *a, size_t na, const double *b, size_t nb, double *rk,
                        double *out_rank_sum_b, double *out_tie_term)
{
    size_t n = na + nb;
    vidx *it = malloc(n * sizeof *it);
    if (!it)
        return -1;
    for (size_t i = 0; i < na; i++)
        it[i] = (vidx){a[i], i};
    for (size_t i = 0; i < nb; i++)
        it[na + i] = (vidx){b[i], na + i};
    qsort(it, n, sizeof *it, cmp_vidx);
    double tie_term = 0.0, rank_sum_b = 0.0;
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && it[j].v == it[i].v)
            j++;
        double t = (double)(j - i);
        double avg = ((double)(i + 1) + (double)j) / 2.0;
        for (size_t k = i; k < j; k++) {
            if (rk)
                rk[it[k].idx] = avg;
            if (it[k].idx >= na)
                rank_sum_b += avg;
        }
        tie_term += t * t * t - t;
        i = j;
    }
    free(it);
    *out_rank_sum_b = rank_sum_b;
    *out_tie_term = tie_term;
    return 0;
}

/* The normal approximation of U's tails: the tie-corrected variance, inflated by the design
 * effect de, and a continuity correction of 1/2. */
static void normal_tails(double u, size_t na, size_t nb, double tie_term, double de,
                         mprof_mwu *out)
{
    double dna = (double)na, dnb = (double)nb, dn = (double)(na + nb);
    double mu = dna * dnb / 2.0;
    double var = dna * dnb / 12.0 * ((dn + 1.0) - tie_term / (dn * (dn - 1.0))) * de;
    if (var <= 0.0) {
        /* Every value is tied: no evidence either way. */
        out->p_greater = 1.0;
        out->p_less = 1.0;
        return;
    }
    double sd = sqrt(var);
    out->z = (u - mu) / sd;
    out->p_greater = fmin(1.0, mprof__normal_sf((u - mu - 0.5) / sd));
    out->p_less = fmin(1.0, mprof__normal_sf((mu - u - 0.5) / sd));
}

#define EXACT_MAX 20

/* Exact upper tail P(U >= u) for sizes m (a) and n (b) without ties: counts of the arrangements
 * of m a's and n b's by U, from f(m, n, u) = f(m, n-1, u-m) + f(m-1, n, u) (the largest value is
 * either a b, which beats all m a's, or an a, which adds nothing). */
static double exact_upper_tail(size_t m, size_t n, double u)
{
    size_t maxu = m * n;
    /* f[j] for the current i holds arrays for n' = 0..n; we build row by row over m' = 0..m. */
    double *prev[EXACT_MAX + 1], *cur[EXACT_MAX + 1];
    double result = 1.0;
    memset(prev, 0, sizeof prev);
    memset(cur, 0, sizeof cur);
    for (size_t i = 0; i <= m; i++) {
        for (size_t j = 0; j <= n; j++) {
            size_t len = i * j + 1;
            double *f = calloc(len, sizeof *f);
            if (!f)
                goto out;
            if (i == 0 || j == 0) {
                f[0] = 1.0;
            } else {
                for (size_t uu = 0; uu < len; uu++) {
                    double s = 0.0;
                    if (uu >= i && uu - i <= i * (j - 1))
                        s += cur[j - 1][uu - i];
                    if (uu <= (i - 1) * j)
                        s += prev[j][uu];
                    f[uu] = s;
                }
            }
            cur[j] = f;
        }
        for (size_t j = 0; j <= n; j++) {
            free(prev[j]);
            prev[j] = cur[j];
            cur[j] = NULL;
        }
    }
    {
        const double *f = prev[n];
        double total = 0.0, tail = 0.0;
        for (size_t uu = 0; uu <= maxu; uu++) {
            total += f[uu];
            if ((double)uu >= u - 1e-9)
                tail += f[uu];
        }
        result = tail / total;
    }
out:
    for (size_t j = 0; j <= EXACT_MAX; j++) {
        free(prev[j]);
        free(cur[j]);
    }
    return result;
}

int mprof__mann_whitney(const double *a, size_t na, const double *b, size_t nb, mprof_mwu *out)
{
    memset(out, 0, sizeof *out);
    if (na == 0 || nb == 0)
        return -1;
    double rank_sum_b, tie_term;
    if (pooled_ranks(a, na, b, nb, NULL, &rank_sum_b, &tie_term))
        return -1;
    double dna = (double)na, dnb = (double)nb;
    double u = rank_sum_b - dnb * (dnb + 1.0) / 2.0;
    out->u = u;
    out->effect = u / (dna * dnb);
    if (na <= EXACT_MAX && nb <= EXACT_MAX && tie_term == 0.0) {
        out->exact = 1;
        out->p_greater = exact_upper_tail(na, nb, u);
        /* By symmetry of U around na nb / 2, P(U <= u) = P(U >= na nb - u). */
        out->p_less = exact_upper_tail(na, nb, dna * dnb - u);
        return 0;
    }
    normal_tails(u, na, nb, tie_term, 1.0, out);
    return 0;
}

/* Batch-means design effect of one side's ranks (rk: ranks of the side's values, in the side's
 * order), or 1 when the side is not blocked or too short. */
static double design_effect(const mprof_sample_runs *s, const double *rk)
{
    size_t k = s->blocks_per_run;
    if (k < 2)
        return 1.0;
    size_t n = s->run_start[s->n_runs] - s->run_start[0];
    double mean = 0.0, var = 0.0;
    for (size_t i = 0; i < n; i++)
        mean += rk[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        var += (rk[i] - mean) * (rk[i] - mean);
    var /= (double)(n > 1 ? n - 1 : 1);
    if (var <= 0.0)
        return 1.0;
    double bsum = 0.0;
    size_t nb = 0;
    for (size_t r = 0; r < s->n_runs; r++) {
        size_t b = s->run_start[r] - s->run_start[0], len = s->run_start[r + 1] - s->run_start[r];
        if (len < 2 * k)
            continue;
        for (size_t j = 0; j < k; j++) {
            size_t st = b + j * len / k, en = b + (j + 1) * len / k;
            double bm = 0.0;
            for (size_t i = st; i < en; i++)
                bm += rk[i];
            bm /= (double)(en - st);
            bsum += (double)(en - st) * (bm - mean) * (bm - mean);
            nb++;
        }
    }
    if (nb < 2)
        return 1.0;
    /* sum of m_j (mean_j - mean)^2 / (nb - 1) estimates m * var(block mean). */
    double de = bsum / (double)(nb - 1) / var;
    return de > 1.0 ? de : 1.0;
}

int mprof__mann_whitney_runs(const mprof_sample_runs *a, const mprof_sample_runs *b,
                             mprof_mwu *out)
{
    memset(out, 0, sizeof *out);
    if (!a || !b || a->n_runs == 0 || b->n_runs == 0)
        return -1;
    size_t na = a->run_start[a->n_runs] - a->run_start[0];
    size_t nb = b->run_start[b->n_runs] - b->run_start[0];
    const double *va = a->values + a->run_start[0], *vb = b->values + b->run_start[0];
    if (a->blocks_per_run < 2 && b->blocks_per_run < 2) {
        int rc = mprof__mann_whitney(va, na, vb, nb, out);
        out->design_effect = 1.0;
        return rc;
    }
    if (na == 0 || nb == 0)
        return -1;
    double *rk = malloc((na + nb) * sizeof *rk);
    double rank_sum_b, tie_term;
    if (!rk || pooled_ranks(va, na, vb, nb, rk, &rank_sum_b, &tie_term)) {
        free(rk);
        return -1;
    }
    double dna = (double)na, dnb = (double)nb;
    double u = rank_sum_b - dnb * (dnb + 1.0) / 2.0;
    double de = (design_effect(a, rk) + design_effect(b, rk + na)) / 2.0;
    free(rk);
    if (de < 1.0)
        de = 1.0;
    out->u = u;
    out->effect = u / (dna * dnb);
    out->design_effect = de;
    normal_tails(u, na, nb, tie_term, de, out);
    return 0;
}

/* ---- bootstrap ------------------------------------------------------------------------------ */

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(rng *g, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        g->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna). */
static uint64_t rng_next(rng *g)
{
    uint64_t *s = g->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform integer in [0, n), without modulo bias (rejection of the short last interval). */
static size_t rng_below(rng *g, size_t n)
{
    uint64_t bound = (uint64_t)n;
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        uint64_t x = rng_next(g);
        if (x >= threshold)
            return (size_t)(x % bound);
    }
}

static size_t runs_total(const mprof_sample_runs *s)
{
    return s->run_start[s->n_runs] - s->run_start[0];
}

/* Draws one run's worth of values from values[b .. b + n) into out: n single values, or, with
 * k >= 2 blocks, k whole contiguous blocks. Returns the count written. */
static size_t draw_run(const double *values, size_t b, size_t n, size_t k, rng *g, double *out)
{
    size_t len = 0;
    if (k < 2 || n < 2 * k) {
        for (size_t i = 0; i < n; i++)
            out[len++] = values[b + rng_below(g, n)];
        return len;
    }
    for (size_t j = 0; j < k; j++) {
        size_t blk = rng_below(g, k);
        size_t s = b + blk * n / k, e = b + (blk + 1) * n / k;
        memcpy(out + len, values + s, (e - s) * sizeof *out);
        len += e - s;
    }
    return len;
}

/* One resample of a side into out (capacity: see resample_cap); returns its length. */
static size_t resample(const mprof_sample_runs *s, rng *g, double *out)
{
    if (s->n_runs == 1)
        return draw_run(s->values, s->run_start[0], s->run_start[1] - s->run_start[0],
                        s->blocks_per_run, g, out);
    size_t len = 0;
    for (size_t k = 0; k < s->n_runs; k++) {
        size_t run = rng_below(g, s->n_runs);
        size_t b = s->run_start[run], n = s->run_start[run + 1] - b;
        len += draw_run(s->values, b, n, s->blocks_per_run, g, out + len);
    }
    return len;
}

/* The largest resample: n_runs copies of the longest run (blocks may round up by one each). */
static size_t resample_cap(const mprof_sample_runs *s)
{
    size_t longest = 0;
    for (size_t k = 0; k < s->n_runs; k++) {
        size_t n = s->run_start[k + 1] - s->run_start[k];
        if (n > longest)
            longest = n;
    }
    return (longest + s->blocks_per_run + 1) * s->n_runs;
}

/* A side of the bootstrap by rank: its values sorted, and each value's place among them. A
 * resample is then a count per place, and its percentile a walk down from the largest place:
 * the same numbers as selecting in the resampled values (a value's place keeps its order; ties
 * hold equal values), at a fraction of the cost, since the 2,000 resamples of a run of frames
 * are most of what the gate spends. */
typedef struct ranked {
    double *sorted;  /* the side's n values, ascending */
    uint32_t *rank;  /* rank[i]: the place of values[base + i] in sorted */
    uint32_t *count; /* per place: the times the resample drew it (zero between resamples) */
    size_t n, base;
} ranked;

typedef struct valued {
    double v;
    uint32_t i;
} valued;

static int cmp_valued(const void *pa, const void *pb)
{
    double a = ((const valued *)pa)->v, b = ((const valued *)pb)->v;
    return (a > b) - (a < b);
}

/* Ranks a side; returns 0, or -1 when out of memory or a value is not finite (the side is then
 * resampled value by value). */
static int rank_side(const mprof_sample_runs *s, ranked *rk)
{
    memset(rk, 0, sizeof *rk);
    rk->base = s->run_start[0];
    rk->n = runs_total(s);
    if (rk->n >= UINT32_MAX)
        return -1;
    for (size_t i = 0; i < rk->n; i++)
        if (!isfinite(s->values[rk->base + i]))
            return -1;
    valued *vi = malloc((rk->n ? rk->n : 1) * sizeof *vi);
    rk->sorted = malloc((rk->n ? rk->n : 1) * sizeof *rk->sorted);
    rk->rank = malloc((rk->n ? rk->n : 1) * sizeof *rk->rank);
    rk->count = calloc(rk->n ? rk->n : 1, sizeof *rk->count);
    if (!vi || !rk->sorted || !rk->rank || !rk->count) {
        free(vi);
        return -1;
    }
    for (size_t i = 0; i < rk->n; i++)
        vi[i] = (valued){s->values[rk->base + i], (uint32_t)i};
    qsort(vi, rk->n, sizeof *vi, cmp_valued);
    for (size_t j = 0; j < rk->n; j++) {
        rk->sorted[j] = vi[j].v;
        rk->rank[vi[j].i] = (uint32_t)j;
    }
    free(vi);
    return 0;
}

static void ranked_free(ranked *rk)
{
    free(rk->sorted);
    free(rk->rank);
    free(rk->count);
}

/* draw_run, counting the places drawn instead of copying values; the same draws. */
static size_t draw_run_ranks(ranked *rk, size_t b, size_t n, size_t k, rng *g)
{
    const uint32_t *rank = rk->rank + (b - rk->base);
    uint32_t *count = rk->count;
    if (k < 2 || n < 2 * k) {
        for (size_t i = 0; i < n; i++)
            count[rank[rng_below(g, n)]]++;
        return n;
    }
    size_t len = 0;
    for (size_t j = 0; j < k; j++) {
        size_t blk = rng_below(g, k);
        size_t s = blk * n / k, e = (blk + 1) * n / k;
        for (size_t i = s; i < e; i++)
            count[rank[i]]++;
        len += e - s;
    }
    return len;
}

/* resample, into the side's counts; the same draws. Returns the resample's length. */
static size_t resample_ranks(const mprof_sample_runs *s, ranked *rk, rng *g)
{
    if (s->n_runs == 1)
        return draw_run_ranks(rk, s->run_start[0], s->run_start[1] - s->run_start[0],
                              s->blocks_per_run, g);
    size_t len = 0;
    for (size_t k = 0; k < s->n_runs; k++) {
        size_t run = rng_below(g, s->n_runs);
        size_t b = s->run_start[run], n = s->run_start[run + 1] - b;
        len += draw_run_ranks(rk, b, n, s->blocks_per_run, g);
    }
    return len;
}

/* mprof__percentile_select of the resample counted in rk (len values), with its arithmetic;
 * the counts are zero again afterwards. */
static double percentile_counted(ranked *rk, size_t len, double p)
{
    double r = 0.0;
    if (len > 0) {
        if (p < 0.0)
            p = 0.0;
        if (p > 100.0)
            p = 100.0;
        double h = (double)(len - 1) * p / 100.0;
        size_t k = (size_t)h;
        double frac = h - (double)k;
        /* The k-th smallest is the m-th largest: walk down the places until the one that holds
         * it; the (k+1)-th smallest is in the same place or the last one passed. */
        size_t m = len - 1 - k, cum = 0, j = rk->n, above = rk->n;
        while (j > 0) {
            uint32_t c = rk->count[--j];
            if (!c)
                continue;
            if (cum + c > m)
                break;
            cum += c;
            above = j;
        }
        double x = rk->sorted[j];
        if (frac <= 0.0 || k + 1 >= len) {
            r = x;
        } else {
            double y = m >= 1 && m - 1 >= cum ? x : rk->sorted[above];
            r = x + frac * (y - x);
        }
    }
    memset(rk->count, 0, rk->n * sizeof *rk->count);
    return r;
}

int mprof__bootstrap_ratio_ci(const mprof_sample_runs *base, const mprof_sample_runs *cur, double p,
                              int n_resamples, double level, uint64_t seed, mprof_ratio_ci *out)
{
    memset(out, 0, sizeof *out);
    if (!base || !cur || base->n_runs == 0 || cur->n_runs == 0 || n_resamples < 1)
        return -1;
    for (size_t k = 0; k < base->n_runs; k++)
        if (base->run_start[k + 1] <= base->run_start[k])
            return -1;
    for (size_t k = 0; k < cur->n_runs; k++)
        if (cur->run_start[k + 1] <= cur->run_start[k])
            return -1;

    size_t nb = runs_total(base), nc = runs_total(cur);
    size_t cap_b = resample_cap(base), cap_c = resample_cap(cur);
    size_t cap = cap_b > cap_c ? cap_b : cap_c;
    if (nb > cap)
        cap = nb;
    if (nc > cap)
        cap = nc;
    double *buf = malloc(cap * sizeof *buf);
    double *scratch = malloc(cap * sizeof *scratch);
    double *ratios = malloc((size_t)n_resamples * sizeof *ratios);
    int rc = -1;
    if (!buf || !scratch || !ratios)
        goto done;

    double pb = mprof__percentile_select(base->values + base->run_start[0], nb, p, scratch);
    double pc = mprof__percentile_select(cur->values + cur->run_start[0], nc, p, scratch);
    if (!(pb > 0.0))
        goto done;
    out->point = pc / pb;

    rng g;
    rng_seed(&g, seed);
    int kept = 0;
    ranked rb_ = {0}, rc_k = {0};
    if (rank_side(base, &rb_) == 0 && rank_side(cur, &rc_k) == 0) {
        for (int i = 0; i < n_resamples; i++) {
            size_t lb = resample_ranks(base, &rb_, &g);
            double rb = percentile_counted(&rb_, lb, p);
            size_t lc = resample_ranks(cur, &rc_k, &g);
            double rc_ = percentile_counted(&rc_k, lc, p);
            if (rb > 0.0)
                ratios[kept++] = rc_ / rb;
        }
    } else {
        for (int i = 0; i < n_resamples; i++) {
            size_t lb = resample(base, &g, buf);
            double rb = mprof__percentile_select(buf, lb, p, scratch);
            size_t lc = resample(cur, &g, buf);
            double rc_ = mprof__percentile_select(buf, lc, p, scratch);
            if (rb > 0.0)
                ratios[kept++] = rc_ / rb;
        }
    }
    ranked_free(&rb_);
    ranked_free(&rc_k);
    if (kept == 0)
        goto done;
    mprof__sort_doubles(ratios, (size_t)kept);
    double tail = (1.0 - level) / 2.0 * 100.0;
    out->lo = mprof__percentile_sorted(ratios, (size_t)kept, tail);
    out->hi = mprof__percentile_sorted(ratios, (size_t)kept, 100.0 - tail);
    rc = 0;
done:
    free(buf);
    free(scratch);
    free(ratios);
    return rc;
}
