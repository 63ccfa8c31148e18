/*
 * test_timeline.c - the walker (src/analysis/timeline.c) on hand-made event streams: nesting and
 * self time, zone text/name/value, a fiber resumed on another thread, GPU zones whose ends and
 * timestamps come out of order, lock waits and holds, memory with frees of unknown pointers and
 * pool discards, lost events, zones left open at the end, and frames of both kinds.
 */
#include "analysis/timeline.h"
#include "test_util.h"

#include <string.h>

#define MAX_REC 64

typedef struct rec {
    mprof_tl_zone z[MAX_REC];
    char text[MAX_REC][32];
    int nz;
    mprof_tl_lockspan l[MAX_REC];
    int nl;
    int64_t mem_ts[MAX_REC], mem_bytes[MAX_REC];
    uint32_t mem_pool[MAX_REC];
    int nm;
    int64_t fs[MAX_REC], fe[MAX_REC];
    uint32_t fset[MAX_REC];
    uint64_t fidx[MAX_REC];
    int nf;
} rec;

static void on_zone(void *user, const mprof_tl_zone *z)
{
    rec *r = user;
    assert_true(r->nz < MAX_REC);
    r->z[r->nz] = *z;
    r->text[r->nz][0] = 0;
    if (z->text)
        snprintf(r->text[r->nz], sizeof r->text[0], "%.*s", (int)z->text_len, z->text);
    r->z[r->nz].text = NULL; /* valid during the hook only */
    r->z[r->nz].name = NULL;
    r->nz++;
}

static void on_lock(void *user, const mprof_tl_lockspan *s)
{
    rec *r = user;
    assert_true(r->nl < MAX_REC);
    r->l[r->nl++] = *s;
}

static void on_memory(void *user, uint32_t pool, int64_t ts, int64_t bytes)
{
    rec *r = user;
    assert_true(r->nm < MAX_REC);
    r->mem_pool[r->nm] = pool;
    r->mem_ts[r->nm] = ts;
    r->mem_bytes[r->nm++] = bytes;
}

static void on_frame(void *user, uint32_t set, uint64_t index, int64_t s, int64_t e)
{
    rec *r = user;
    assert_true(r->nf < MAX_REC);
    r->fidx[r->nf] = index;
    r->fset[r->nf] = set;
    r->fs[r->nf] = s;
    r->fe[r->nf++] = e;
}

static mprof_walker *walker(rec *r)
{
    memset(r, 0, sizeof *r);
    mprof_tl_hooks h = {.user = r, .zone = on_zone, .lock_span = on_lock, .memory = on_memory};
    mprof_walker *w = mprof__walker_new(NULL, &h, 1);
    assert_non_null(w);
    return w;
}

static void feed(mprof_walker *w, int type, uint32_t thread, int64_t ts, uint64_t u0, uint64_t u1,
                 uint64_t u2)
{
    mprof_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = type;
    ev.thread = thread;
    ev.ts_ns = ts;
    ev.u[0] = u0;
    ev.u[1] = u1;
    ev.u[2] = u2;
    assert_int_equal(mprof__walker_event(w, &ev), 0);
}

static void feed_str(mprof_walker *w, int type, uint32_t thread, const char *s)
{
    mprof_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = type;
    ev.thread = thread;
    ev.str = s;
    ev.str_len = (uint32_t)strlen(s);
    assert_int_equal(mprof__walker_event(w, &ev), 0);
}

static void test_nesting_and_self_time(void **state)
{
    (void)state;
    rec r;
    mprof_walker *w = walker(&r);
    feed(w, MPROF_EV_ZONE_BEGIN, 1, 100, 7, 0, 0);
    feed(w, MPROF_EV_ZONE_BEGIN, 1, 110, 8, 0, 0);
    feed_str(w, MPROF_EV_ZONE_TEXT, 1, "hello");
    feed(w, MPROF_EV_ZONE_VALUE, 1, 0, 42, 0, 0);
    feed(w, MPROF_EV_ZONE_END, 1, 150, 0, 0, 0);
    feed(w, MPROF_EV_ZONE_BEGIN, 1, 160, 9, 0, 0);
    feed(w, MPROF_EV_ZONE_END, 1, 170, 0, 0, 0);
    feed(w, MPROF_EV_ZONE_END, 1, 200, 0, 0, 0);
    feed(w, MPROF_EV_ZONE_END, 1, 210, 0, 0, 0); /* unmatched: ignored */
    mprof__walker_finish(w);
    assert_int_equal(r.nz, 3);
    assert_int_equal(r.z[0].loc, 8);
    assert_int_equal(r.z[0].depth, 1);
    assert_string_equal(r.text[0], "hello");
    assert_true(r.z[0].has_value && r.z[0].value == 42);
    assert_int_equal(r.z[2].loc, 7);
    assert_int_equal(r.z[2].depth, 0);
    assert_int_equal(r.z[2].end_ns - r.z[2].start_ns, 100);
    assert_int_equal(r.z[2].child_ns, 40 + 10); /* self = 50 */
    assert_int_equal(mprof__walker_zone_count(w), 3);
    assert_int_equal(mprof__walker_track_count(w), 1);
    assert_int_equal(mprof__walker_track(w, 0)->kind, MPROF_TRACK_THREAD);
    assert_int_equal(mprof__walker_track(w, 0)->max_depth, 1);
    mprof__walker_free(w);
}

static void test_fiber_moves_between_threads(void **state)
{
    (void)state;
    rec r;
    mprof_walker *w = walker(&r);
    feed(w, MPROF_EV_ZONE_BEGIN, 1, 10, 1, 0, 0);      /* thread 1's own zone */
    feed(w, MPROF_EV_FIBER_ENTER, 1, 20, 5, 0, 0);     /* fiber 5 on thread 1 */
    feed(w, MPROF_EV_ZONE_BEGIN, 1, 30, 2, 0, 0);      /* fiber zone */
    feed(w, MPROF_EV_FIBER_LEAVE, 1, 40, 0, 0, 0);
    feed(w, MPROF_EV_ZONE_END, 1, 50, 0, 0, 0);        /* ends thread 1's zone */
    feed(w, MPROF_EV_FIBER_ENTER, 2, 60, 5, 0, 0);     /* fiber 5 resumes on thread 2 */
    feed(w, MPROF_EV_ZONE_END, 2, 70, 0, 0, 0);        /* ends the fiber zone */
    mprof__walker_finish(w);
    assert_int_equal(r.nz, 2);
    assert_int_equal(r.z[0].loc, 1);
    assert_int_equal(r.z[0].end_ns, 50);
    assert_int_equal(r.z[1].loc, 2);
    assert_int_equal(r.z[1].start_ns, 30);
    assert_int_equal(r.z[1].end_ns, 70);
    const mprof_tl_track *ft = mprof__walker_track(w, r.z[1].track);
    assert_int_equal(ft->kind, MPROF_TRACK_FIBER);
    assert_int_equal(ft->ref, 5);
    assert_int_equal(mprof__walker_track(w, r.z[0].track)->kind, MPROF_TRACK_THREAD);
    mprof__walker_free(w);
}

static void test_gpu_out_of_order(void **state)
{
    (void)state;
    rec r;
    mprof_walker *w = walker(&r);
    mprof_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = MPROF_EV_GPU_CONTEXT;
    ev.ts_ns = 1;
    ev.u[0] = 3;
    double period = 2.0; /* ns per tick */
    memcpy(&ev.u[3], &period, sizeof period);
    assert_int_equal(mprof__walker_event(w, &ev), 0);
    feed(w, MPROF_EV_GPU_CALIBRATE, 1, 1000, 3, 100, 0);  /* tick 100 = 1000 ns */
    feed(w, MPROF_EV_GPU_ZONE_BEGIN, 1, 1100, 3, 0, 11);  /* A: queries 0/1 */
    feed(w, MPROF_EV_GPU_ZONE_BEGIN, 2, 1200, 3, 2, 12);  /* B: queries 2/3, other thread */
    feed(w, MPROF_EV_GPU_ZONE_END, 1, 1300, 3, 1, 0);     /* A ends first: matched by query */
    feed(w, MPROF_EV_GPU_ZONE_END, 2, 1400, 3, 3, 0);
    feed(w, MPROF_EV_GPU_TIME, 0, 0, 3, 3, 400);          /* B end, before any begin time */
    feed(w, MPROF_EV_GPU_TIME, 0, 0, 3, 1, 300);
    assert_int_equal(r.nz, 0); /* nothing complete yet */
    feed(w, MPROF_EV_GPU_TIME, 0, 0, 3, 0, 150);
    assert_int_equal(r.nz, 1);
    assert_int_equal(r.z[0].loc, 11);
    assert_int_equal(r.z[0].start_ns, 1000 + 50 * 2);
    assert_int_equal(r.z[0].end_ns, 1000 + 200 * 2);
    feed(w, MPROF_EV_GPU_TIME, 0, 0, 3, 2, 200);
    assert_int_equal(r.nz, 2);
    assert_int_equal(r.z[1].loc, 12);
    assert_int_equal(r.z[1].start_ns, 1200);
    assert_int_equal(r.z[1].end_ns, 1600);
    assert_int_equal(r.z[1].depth, 1); /* begun while A was open */
    assert_int_equal(mprof__walker_track(w, r.z[1].track)->kind, MPROF_TRACK_GPU);
    feed(w, MPROF_EV_GPU_TIME, 0, 0, 3, 1u << 30, 5); /* an unknown query: ignored */
    mprof__walker_finish(w);
    assert_int_equal(r.nz, 2);
    mprof__walker_free(w);
}

static void test_locks(void **state)
{
    (void)state;
    rec r;
    mprof_walker *w = walker(&r);
    feed(w, MPROF_EV_LOCK_ANNOUNCE, 1, 0, 4, 77, 1);
    feed(w, MPROF_EV_LOCK_WAIT, 1, 100, 4, 0, 0);
    feed(w, MPROF_EV_LOCK_OBTAINED, 1, 200, 4, 0, 0);   /* 100 ns: not contention */
    feed(w, MPROF_EV_LOCK_WAIT, 2, 250, 4, 0, 0);
    feed(w, MPROF_EV_LOCK_RELEASED, 1, 5000, 4, 0, 0);
    feed(w, MPROF_EV_LOCK_OBTAINED, 2, 5100, 4, 0, 0);  /* waited 4850 ns */
    feed(w, MPROF_EV_LOCK_TRY_FAILED, 1, 5200, 4, 0, 0);
    mprof__walker_finish(w);                             /* thread 2 still holds it */
    assert_int_equal(mprof__walker_lock_count(w), 1);
    const mprof_tl_lock *l = mprof__walker_lock(w, 0);
    assert_int_equal(l->name, 77);
    assert_int_equal(l->acquisitions, 2);
    assert_int_equal(l->contended, 1);
    assert_int_equal(l->wait_ns, 4850);
    assert_int_equal(l->try_failed, 1);
    assert_int_equal(l->hold_ns, 4800);
    assert_int_equal(l->n_rows, 2);
    assert_int_equal(r.nl, 3); /* hold by 1, wait by 2, hold by 2 (closed at the end) */
    assert_int_equal(r.l[0].waiting, 0);
    assert_int_equal(r.l[0].row, 0);
    assert_int_equal(r.l[1].waiting, 1);
    assert_int_equal(r.l[1].row, 1);
    assert_int_equal(r.l[1].end_ns - r.l[1].start_ns, 4850);
    assert_int_equal(r.l[2].start_ns, 5100);
    assert_int_equal(r.l[2].end_ns, 5200); /* the capture's last timestamp */
    mprof__walker_free(w);
}

static void test_memory(void **state)
{
    (void)state;
    rec r;
    mprof_walker *w = walker(&r);
    /* ALLOC: ptr, size, pool; FREE: ptr, pool; POOL_DISCARD: pool. */
    for (uint64_t i = 0; i < 40; i++)
        feed(w, MPROF_EV_ALLOC, 1, (int64_t)i, 0x1000 + i * 16, 100, 0);
    feed(w, MPROF_EV_ALLOC, 1, 50, 0x1000, 64, 9); /* same address, other pool */
    for (uint64_t i = 0; i < 40; i += 2)
        feed(w, MPROF_EV_FREE, 1, 60 + (int64_t)i, 0x1000 + i * 16, 0, 0);
    feed(w, MPROF_EV_FREE, 1, 200, 0xdead, 0, 0); /* unknown pointer */
    feed(w, MPROF_EV_FREE, 1, 201, 0, 0, 0);      /* free(NULL): nothing */
    assert_int_equal(mprof__walker_pool_count(w), 2);
    const mprof_tl_pool *heap = mprof__walker_pool(w, 0), *pool9 = mprof__walker_pool(w, 1);
    assert_int_equal(heap->allocs, 40);
    assert_int_equal(heap->frees, 21);
    assert_int_equal(heap->bad_frees, 1);
    assert_int_equal(heap->live, 20);
    assert_int_equal(heap->in_use, 2000);
    assert_int_equal(heap->peak, 4000);
    assert_int_equal(pool9->in_use, 64);
    feed(w, MPROF_EV_POOL_DISCARD, 1, 300, 0, 0, 0);
    assert_int_equal(heap->in_use, 0);
    assert_int_equal(heap->live, 0);
    assert_int_equal(pool9->in_use, 64); /* other pools keep theirs */
    /* Frees after the discard find nothing. */
    feed(w, MPROF_EV_FREE, 1, 301, 0x1000 + 16, 0, 0);
    assert_int_equal(heap->bad_frees, 2);
    assert_int_equal(r.mem_bytes[r.nm - 1], 0);
    assert_int_equal(r.mem_ts[r.nm - 1], 300);
    mprof__walker_free(w);
}

static void test_lost_and_unfinished(void **state)
{
    (void)state;
    rec r;
    mprof_walker *w = walker(&r);
    feed(w, MPROF_EV_ZONE_BEGIN, 1, 10, 1, 0, 0);
    feed(w, MPROF_EV_LOST, 1, 20, 5, 0, 0);  /* the open zone cannot be trusted: dropped */
    feed(w, MPROF_EV_ZONE_END, 1, 30, 0, 0, 0);
    feed(w, MPROF_EV_ZONE_BEGIN, 1, 40, 2, 0, 0);
    feed(w, MPROF_EV_MESSAGE, 1, 90, 3, 0, 0);
    mprof__walker_finish(w);
    assert_int_equal(mprof__walker_lost_events(w), 5);
    assert_int_equal(r.nz, 1);
    assert_int_equal(r.z[0].loc, 2);
    assert_true(r.z[0].unfinished);
    assert_int_equal(r.z[0].end_ns, 90);
    assert_int_equal(mprof__walker_first_ns(w), 10);
    assert_int_equal(mprof__walker_last_ns(w), 90);
    mprof__walker_free(w);
}

static void test_frames(void **state)
{
    (void)state;
    rec r;
    memset(&r, 0, sizeof r);
    mprof_tl_hooks h = {.user = &r, .frame = on_frame};
    mprof_walker *w = mprof__walker_new(NULL, &h, 1);
    assert_non_null(w);
    assert_null(mprof__walker_main_frames(w));
    feed(w, MPROF_EV_FRAME_MARK, 1, 100, 0, 0, 0);
    feed(w, MPROF_EV_FRAME_MARK, 1, 250, 0, 0, 0);
    feed(w, MPROF_EV_FRAME_MARK, 1, 300, 0, 0, 0);
    const mprof_tl_frameset *f = mprof__walker_main_frames(w);
    assert_non_null(f);
    assert_int_equal(f->n, 2);
    assert_int_equal(f->start[0], 100);
    assert_int_equal(f->dur[0], 150);
    assert_int_equal(f->dur[1], 50);
    /* A named, discontinuous set: BEGIN/END pairs; an END without BEGIN is ignored. */
    feed(w, MPROF_EV_FRAME_END, 1, 310, 6, 0, 0);
    feed(w, MPROF_EV_FRAME_BEGIN, 1, 320, 6, 0, 0);
    feed(w, MPROF_EV_FRAME_END, 1, 330, 6, 0, 0);
    assert_int_equal(mprof__walker_frameset_count(w), 2);
    const mprof_tl_frameset *g = mprof__walker_frameset(w, 1);
    assert_int_equal(g->name, 6);
    assert_int_equal(g->n, 1);
    assert_int_equal(g->dur[0], 10);
    assert_int_equal(r.nf, 3);
    assert_int_equal(r.fset[1], 0);
    assert_int_equal(r.fidx[1], 1); /* second frame of the main set */
    assert_int_equal(r.fset[2], 1);
    assert_int_equal(r.fidx[2], 0); /* first frame of the named set */
    assert_int_equal(r.fe[2] - r.fs[2], 10);
    mprof__walker_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nesting_and_self_time),
        cmocka_unit_test(test_fiber_moves_between_threads),
        cmocka_unit_test(test_gpu_out_of_order),
        cmocka_unit_test(test_locks),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_lost_and_unfinished),
        cmocka_unit_test(test_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
