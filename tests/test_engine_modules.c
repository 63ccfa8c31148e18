/*
 * test_engine_modules.c - the sample engine's reusable pieces on their own: the A* path finder,
 * the fiber scheduler and the job system. Built from the engine's sources without
 * MPROF_ENABLE (the macros vanish), so these test the engine logic, not the profiler.
 */
#include "test_util.h"

#include "fiber_sched.h"
#include "jobs.h"
#include "pathfind.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* jobs.c takes the engine's clock from kernel.c, which this test does not link. */
uint64_t eng_now_ns(void);
uint64_t eng_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- A* ------------------------------------------------------------------------------------ */

#define W 16
#define H 12

static void test_path_straight_and_diagonal(void **state)
{
    (void)state;
    uint8_t map[W * H];
    memset(map, 0, sizeof map);
    pathfind_scratch s;
    assert_int_equal(pathfind_scratch_init(&s, W, H), 0);
    int32_t path[64];
    /* Straight: 5 steps along a row, ending on the goal. */
    int n = pathfind(&s, map, 1 * W + 1, 1 * W + 6, path, 64);
    assert_int_equal(n, 5);
    assert_int_equal(path[n - 1], 1 * W + 6);
    /* Diagonal: (1,1) -> (5,5) is 4 diagonal steps. */
    n = pathfind(&s, map, 1 * W + 1, 5 * W + 5, path, 64);
    assert_int_equal(n, 4);
    for (int i = 0; i < n; i++)
        assert_int_equal(path[i], (2 + i) * W + (2 + i));
    pathfind_scratch_free(&s);
}

static void test_path_around_wall_and_unreachable(void **state)
{
    (void)state;
    uint8_t map[W * H];
    memset(map, 0, sizeof map);
    for (int y = 0; y < H - 1; y++) /* a wall at x = 8 with a gap at the bottom row */
        map[y * W + 8] = 1;
    pathfind_scratch s;
    assert_int_equal(pathfind_scratch_init(&s, W, H), 0);
    int32_t path[64];
    int n = pathfind(&s, map, 0 * W + 6, 0 * W + 10, path, 64);
    assert_true(n > 4);
    for (int i = 0; i < n; i++)
        assert_int_equal(map[path[i]], 0); /* never through the wall */
    int crossed = 0;
    for (int i = 0; i < n; i++)
        crossed |= path[i] == (H - 1) * W + 8; /* through the gap */
    assert_true(crossed);
    /* Consecutive cells are neighbours (8-connected). */
    int prev = 0 * W + 6;
    for (int i = 0; i < n; i++) {
        int dx = abs(path[i] % W - prev % W), dy = abs(path[i] / W - prev / W);
        assert_true(dx <= 1 && dy <= 1 && dx + dy > 0);
        prev = path[i];
    }
    /* Close the gap: unreachable. A wall as the goal: unreachable. */
    map[(H - 1) * W + 8] = 1;
    assert_int_equal(pathfind(&s, map, 0 * W + 6, 0 * W + 10, path, 64), -1);
    assert_int_equal(pathfind(&s, map, 0 * W + 6, 3 * W + 8, path, 64), -1);
    /* A long path is cut after max_len steps, which start at the start. */
    memset(map, 0, sizeof map);
    n = pathfind(&s, map, 0, W - 1, path, 3);
    assert_int_equal(n, 3);
    assert_int_equal(path[0], 1);
    assert_int_equal(path[2], 3);
    pathfind_scratch_free(&s);
}

/* ---- fibers -------------------------------------------------------------------------------- */

static char trace[256];
static size_t trace_len;
static int ticks_seen[2];

static void fiber_body(void *arg)
{
    int id = *(int *)arg;
    for (;;) {
        for (int step = 0; step < 3; step++) {
            if (trace_len + 1 < sizeof trace)
                trace[trace_len++] = (char)('a' + id);
            if (step < 2)
                fiber_yield();
        }
        ticks_seen[id]++;
        fiber_park();
    }
}

static void test_fibers_round_robin(void **state)
{
    (void)state;
    static int ids[2] = {0, 1};
    assert_int_equal(fsched_init(2, 64 * 1024), 0);
    assert_int_equal(fiber_create("f0", fiber_body, &ids[0]), 0);
    assert_int_equal(fiber_create("f1", fiber_body, &ids[1]), 0);
    assert_int_equal(fiber_create("f2", fiber_body, &ids[0]), -1); /* over max_fibers */
    trace_len = 0;
    uint32_t switches = fsched_tick();
    trace[trace_len] = 0;
    /* Each fiber runs three slices, alternating; a parked fiber is not resumed this tick. */
    assert_string_equal(trace, "ababab");
    assert_int_equal(switches, 6);
    assert_int_equal(ticks_seen[0], 1);
    assert_int_equal(ticks_seen[1], 1);
    /* The next tick resumes them from where they parked. */
    trace_len = 0;
    fsched_tick();
    trace[trace_len] = 0;
    assert_string_equal(trace, "ababab");
    assert_int_equal(ticks_seen[0], 2);
    fsched_shutdown();
}

/* ---- jobs ---------------------------------------------------------------------------------- */

static _Atomic int hits[10000];
static _Atomic int max_worker;

static void mark_job(void *user, uint32_t begin, uint32_t end, uint32_t worker)
{
    (void)user;
    for (uint32_t i = begin; i < end; i++)
        atomic_fetch_add(&hits[i], 1);
    int w = (int)worker, m = atomic_load(&max_worker);
    while (w > m && !atomic_compare_exchange_weak(&max_worker, &m, w)) {
    }
}

static void run_parallel_for(int workers)
{
    assert_int_equal(jobs_init(workers), 0);
    assert_int_equal(jobs_thread_count(), (uint32_t)workers + 1);
    static const uint32_t counts[] = {0, 1, 7, 1000, 10000};
    for (int rep = 0; rep < 20; rep++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            memset((void *)hits, 0, sizeof hits);
            jobs_parallel_for(mark_job, NULL, counts[c], 16);
            for (uint32_t i = 0; i < 10000; i++)
                assert_int_equal(atomic_load(&hits[i]), i < counts[c] ? 1 : 0);
        }
    assert_true(atomic_load(&max_worker) <= workers);
    jobs_shutdown();
}

static void test_jobs_every_item_once(void **state)
{
    (void)state;
    run_parallel_for(0);
    run_parallel_for(3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_straight_and_diagonal),
        cmocka_unit_test(test_path_around_wall_and_unreachable),
        cmocka_unit_test(test_fibers_round_robin),
        cmocka_unit_test(test_jobs_every_item_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
