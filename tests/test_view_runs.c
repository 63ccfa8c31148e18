/*
 * test_view_runs.c - the sorted runs of the served viewer's index (src/view/index_runs.h) and the
 * lock spans of its system section, which arrive when released, not in start order.
 *
 * Fed out of order (released at their ends, reversed, or tied), every run written is sorted with
 * prefix sums that add up, a range's count, total and longest span summed over the runs are
 * those of the spans themselves, and the builder never holds more than its windows and one block
 * per level. End to end, a capture of 40 threads taking a shared lock (long holds released after
 * thousands of short ones that began later) is indexed, and /api/locks gives exactly the
 * figures counted from the spans written, while the section the server holds in memory stays a
 * few hundred bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include "view/index.h"
#include "view/index_runs.h"
#include "view/query.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct span { int64_t s, d; } span;

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A heavy-tailed duration: mostly short, now and then a thousand times longer. */
static int64_t duration(void)
{
    uint64_t r = rnd() % 1000;
    return r < 3 ? (int64_t)(1000000 + rnd() % 4000000) : r < 4 ? 50000000 : (int64_t)(100 + rnd() % 3000);
}

/* The runs written, readable as an index's arrays. */
typedef struct fake {
    mprof_vindex x;
    vblk *blocks;
    varr *arrays;
} fake;

static void fake_open(fake *f, const vruns *g, int fd)
{
    uint64_t nb = 0;
    for (uint32_t k = 0; k < g->n_done; k++)
        nb += g->done[k].n_blk;
    memset(f, 0, sizeof *f);
    f->blocks = calloc(nb + 1, sizeof *f->blocks);
    f->arrays = calloc(g->n_done + 1, sizeof *f->arrays);
    assert_non_null(f->blocks);
    assert_non_null(f->arrays);
    nb = 0;
    for (uint32_t k = 0; k < g->n_done; k++) {
        const vab *a = &g->done[k];
        memcpy(f->blocks + nb, a->blk, a->n_blk * sizeof *a->blk);
        f->arrays[k] = (varr){a->codec, a->rec, a->n, nb, a->n_blk};
        nb += a->n_blk;
    }
    f->x.fd = fd;
    f->x.blocks = f->blocks;
    f->x.arrays = f->arrays;
}

static void fake_close(fake *f)
{
    free(f->blocks);
    free(f->arrays);
}

/* The builder holds at most its windows and a block being filled per level. */
static void check_held(const vruns *g)
{
    for (int k = 0; k < VRUN_LEVELS; k++) {
        assert_true(g->lv[k].n <= VRUN_WINDOW);
        assert_true((uint64_t)g->lv[k].run.pend * g->lv[k].run.rec < REC_BLOCK_BYTES);
    }
}

static int64_t brute(const span *sp, size_t n, int64_t t0, int64_t t1, uint64_t *out_n, int64_t *out_max)
{
    int64_t total = 0, mx = 0;
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (sp[i].s >= t0 && sp[i].s < t1) {
            c++;
            total += sp[i].d;
            if (sp[i].d > mx)
                mx = sp[i].d;
        }
    *out_n = c;
    *out_max = mx;
    return total;
}

/* Feeds spans in the order given, then checks every run and ranges against the spans. Returns
 * the runs written. */
static uint32_t feed_and_check(const span *order, size_t n, int64_t lo, int64_t hi)
{
    const char *path = tu_temp_path("runs.bin");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    unlink(path);
    vout o;
    memset(&o, 0, sizeof o);
    o.fd = fd;
    vruns g;
    mprof__vruns_init(&g, VRUN_SPANS);
    for (size_t i = 0; i < n; i++) {
        vrun_item it = {order[i].s, (uint64_t)order[i].d};
        assert_int_equal(mprof__vruns_add(&g, &o, &it), 0);
        check_held(&g);
    }
    assert_int_equal(mprof__vruns_finish(&g, &o), 0);
    assert_int_equal(g.n, n);
    fake f;
    fake_open(&f, &g, fd);
    vread r;
    mprof__vread_init(&r, &f.x);
    /* Each run sorted, its prefix sums its durations, ending with its sentinel. */
    uint64_t seen = 0;
    for (uint32_t k = 0; k < g.n_done; k++) {
        const varr *a = &f.arrays[k];
        assert_true(a->n >= 2);
        int64_t prev_s = INT64_MIN, prev_pre = 0;
        for (uint64_t i = 0; i < a->n; i++) {
            const vrspan *x = mprof__vread_rec(&r, a, i);
            assert_true(x->s >= prev_s);
            assert_true(x->pre >= prev_pre);
            prev_s = x->s;
            prev_pre = x->pre;
        }
        assert_true(prev_s == INT64_MAX);
        seen += a->n - 1;
    }
    assert_int_equal(seen, n);
    assert_false(r.err);
    /* Ranges: the whole, empty, reversed, and random ones. */
    for (int q = 0; q < 400; q++) {
        int64_t t0, t1;
        if (q == 0) {
            t0 = INT64_MIN;
            t1 = INT64_MAX;
        } else if (q == 1) {
            t0 = t1 = lo + (hi - lo) / 2;
        } else if (q == 2) {
            t0 = hi;
            t1 = lo;
        } else {
            t0 = lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
            t1 = t0 + (int64_t)(rnd() % (uint64_t)((hi - lo) / (q % 7 + 1) + 1));
        }
        uint64_t cn, bn;
        int64_t ct, cm, bm;
        mprof__vruns_span_range(&r, 0, g.n_done, t0, t1, &cn, &ct, &cm);
        int64_t bt = brute(order, n, t0, t1, &bn, &bm);
        assert_int_equal(cn, bn);
        assert_int_equal(ct, bt);
        assert_int_equal(cm, bm);
    }
    assert_false(r.err);
    mprof__vread_free(&r);
    fake_close(&f);
    uint32_t runs = g.n_done;
    mprof__vruns_free(&g);
    mprof__vout_free(&o);
    close(fd);
    return runs;
}

static int by_end(const void *a, const void *b)
{
    const span *x = a, *y = b;
    int64_t ex = x->s + x->d, ey = y->s + y->d;
    return ex < ey ? -1 : ex > ey;
}

/* Spans of 40 overlapping streams released at their ends, as the walker hands them out: a long
 * one comes after thousands that started after it. */
static void test_released_at_end(void **state)
{
    (void)state;
    enum { N = 200000 };
    span *sp = malloc(N * sizeof *sp);
    assert_non_null(sp);
    int64_t t[40] = {0};
    for (size_t i = 0; i < N; i++) {
        int k = (int)(rnd() % 40);
        t[k] += (int64_t)(rnd() % 2000);
        sp[i] = (span){t[k], duration()};
        t[k] += sp[i].d;
    }
    qsort(sp, N, sizeof *sp, by_end);
    int64_t hi = 0;
    for (size_t i = 0; i < N; i++)
        if (sp[i].s > hi)
            hi = sp[i].s;
    uint32_t runs = feed_and_check(sp, N, 0, hi);
    assert_true(runs >= 1 && runs <= 64); /* the windows put most of them back in order */
    free(sp);
}

/* The worst order: every span starts before all that came before it, so no window helps; runs
 * close one after another, and the figures are still exact. */
static void test_reversed(void **state)
{
    (void)state;
    enum { N = 20000 };
    span *sp = malloc(N * sizeof *sp);
    assert_non_null(sp);
    for (size_t i = 0; i < N; i++)
        sp[i] = (span){(int64_t)(N - i) * 1000, (int64_t)(rnd() % 5000)};
    uint32_t runs = feed_and_check(sp, N, 0, (int64_t)N * 1000);
    assert_true(runs > 2);
    free(sp);
}

/* Ties and a group of one: equal starts in any order, a single span. */
static void test_ties(void **state)
{
    (void)state;
    enum { N = 9000 };
    span *sp = malloc(N * sizeof *sp);
    assert_non_null(sp);
    for (size_t i = 0; i < N; i++)
        sp[i] = (span){(int64_t)(rnd() % 16) * 100, (int64_t)(rnd() % 50)};
    feed_and_check(sp, N, 0, 1600);
    feed_and_check(sp, 1, 0, 1600);
    free(sp);
}

/* ---- end to end ------------------------------------------------------------------------------ */

typedef struct lev { int64_t ts; uint32_t thread, seq, tag; } lev;

static int by_time(const void *a, const void *b)
{
    const lev *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static cJSON *ask(const mprof_vindex *x, const char *target)
{
    mprof_vquery q;
    char err[256], *buf = NULL;
    size_t len = 0;
    assert_int_equal(mprof__vquery_parse(target, strlen(target), &q, err, sizeof err), 0);
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    if (mprof__vindex_answer(x, &q, m, err, sizeof err) != 0)
        fail_msg("%s: %s", target, err);
    fclose(m);
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    assert_non_null(j);
    return j;
}

static int64_t field(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    assert_true(cJSON_IsNumber(v));
    return (int64_t)v->valuedouble;
}

static void test_shared_lock_capture(void **state)
{
    (void)state;
    enum { THREADS = 40, HOLDS = 3000 };
    size_t n_ev = 0, cap_ev = (size_t)THREADS * HOLDS * 3;
    lev *ev = malloc(cap_ev * sizeof *ev);
    span *holds = malloc((size_t)THREADS * HOLDS * sizeof *holds);
    span *waits = malloc((size_t)THREADS * HOLDS * sizeof *waits);
    assert_non_null(ev);
    assert_non_null(holds);
    assert_non_null(waits);
    size_t nh = 0, nw = 0;
    for (uint32_t th = 1; th <= THREADS; th++) {
        int64_t t = 1000;
        uint32_t seq = 0;
        for (int k = 0; k < HOLDS; k++) {
            t += 1 + (int64_t)(rnd() % 2000);
            if (rnd() % 3 == 0) {
                int64_t w = (int64_t)(rnd() % 4000);
                ev[n_ev++] = (lev){t, th, seq++, MPROF_EV_LOCK_WAIT};
                if (w >= 1000)
                    waits[nw++] = (span){t, w};
                t += w;
            }
            int64_t d = duration();
            ev[n_ev++] = (lev){t, th, seq++, MPROF_EV_LOCK_OBTAINED};
            ev[n_ev++] = (lev){t + d, th, seq++, MPROF_EV_LOCK_RELEASED};
            holds[nh++] = (span){t, d};
            t += d;
        }
    }
    qsort(ev, n_ev, sizeof *ev, by_time);
    tu_cap c;
    memset(&c, 0, sizeof c);
    uint32_t cur = UINT32_MAX;
    for (size_t i = 0; i < n_ev; i++) {
        if (ev[i].thread != cur)
            tu_cap_thread(&c, cur = ev[i].thread);
        tu_cap_lock(&c, ev[i].tag, ev[i].ts, 7, 1);
    }
    char cap[512], idx[512], err[512];
    snprintf(cap, sizeof cap, "%s", tu_temp_path("runs_locks.mprof"));
    snprintf(idx, sizeof idx, "%s", tu_temp_path("runs_locks.vidx"));
    assert_int_equal(tu_cap_write(&c, cap), 0);
    mprof_vindex *x = mprof__vindex_open(cap, idx, NULL, err, sizeof err);
    if (!x)
        fail_msg("%s", err);
    /* The server holds the section's small tables only: no span is in memory. */
    assert_true(x->sys_len < 4096);
    int64_t hi = 0;
    for (size_t i = 0; i < nh; i++)
        if (holds[i].s > hi)
            hi = holds[i].s;
    for (int q = 0; q < 60; q++) {
        int64_t t0 = q ? (int64_t)(rnd() % (uint64_t)hi) : 0, t1 = q ? t0 + (int64_t)(rnd() % (uint64_t)(hi / (q % 5 + 1))) : hi + 1;
        char target[128];
        snprintf(target, sizeof target, "/api/locks?t0=%lld&t1=%lld", (long long)t0, (long long)t1);
        cJSON *a = ask(x, target);
        const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a, "locks"), 0);
        assert_non_null(l);
        uint64_t bn;
        int64_t bm, bt = brute(holds, nh, t0, t1, &bn, &bm);
        assert_int_equal(field(l, "holds"), (int64_t)bn);
        assert_int_equal(field(l, "hold_ns"), bt);
        assert_int_equal(field(l, "max_hold_ns"), bm);
        bt = brute(waits, nw, t0, t1, &bn, &bm);
        assert_int_equal(field(l, "waits"), (int64_t)bn);
        assert_int_equal(field(l, "wait_ns"), bt);
        assert_int_equal(field(l, "max_wait_ns"), bm);
        cJSON_Delete(a);
    }
    mprof__vindex_close(x);
    unlink(idx);
    unlink(cap);
    free(ev);
    free(holds);
    free(waits);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_released_at_end),
        cmocka_unit_test(test_reversed),
        cmocka_unit_test(test_ties),
        cmocka_unit_test(test_shared_lock_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
