/*
 * test_fibers.c - fiber tracks: real ucontext fibers resumed on two real threads, and a capture
 * written by hand whose events arrive in the worst order the collector can produce.
 *
 * Real fibers: fiber "A" runs five times, alternating between two worker threads, with a 3 ms
 * sleep of the scheduler between runs; fiber "B" runs three times with 8 ms sleeps. A opens
 * "A.outer" in its first run (thread 1), runs "A.inner" in its second (thread 2) and closes
 * "A.outer" in its third (thread 1 again): one zone, open across two switches and a migration.
 * Expected: runs 5 and 3, migrations 4 and 2, gaps p50 of at least 3 and 8 ms, A.outer once,
 * no unmatched ends anywhere, and the zone also in the report's zone table.
 *
 * Hand-written capture: thread 2's part of the fiber comes first in the file although it
 * happened later; the pass must still close thread 1's zone with thread 2's end.
 */
#include "mprof/mprof.h"

#include "analysis/analysis.h"
#include "analysis/passes.h"
#include "format/format.h"

#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmocka.h>

static char capture_path[256];

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static mprof_analysis *analyse(const char *passes)
{
    char err[512];
    mprof_analysis_opts o = {.top_n = 20, .passes = passes};
    mprof_analysis *a = mprof_analysis_run(capture_path, &o, err, sizeof err);
    if (!a)
        fail_msg("analysis failed: %s", err);
    return a;
}

/* The report as text or JSON, with JSON whitespace removed so that tests can search it. */
static char *report(mprof_analysis *a, int json)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (json)
        mprof_analysis_print_json(a, f);
    else
        mprof_analysis_print_text(a, f);
    fclose(f);
    if (json) {
        size_t o = 0;
        int in_str = 0;
        for (size_t i = 0; text[i]; i++) {
            if (text[i] == '"' && (i == 0 || text[i - 1] != '\\'))
                in_str = !in_str;
            if (in_str || (text[i] != ' ' && text[i] != '\n'))
                text[o++] = text[i];
        }
        text[o] = 0;
    }
    return text;
}

/* ---- real fibers on two threads ------------------------------------------------------------- */

typedef struct fiber {
    const char *name;
    ucontext_t ctx;
    ucontext_t *ret; /* the scheduler context of the thread running it */
    char *stack;
    int finished;
} fiber;

typedef struct worker {
    pthread_t thread;
    sem_t go, done;
    fiber *job; /* NULL = exit */
    ucontext_t sched;
} worker;

static fiber fib_a, fib_b;

/* Zone and switch helpers are separate, non-inlined functions so that no thread-local address
 * is kept in a register across a switch, which could resume on another thread. */
static __attribute__((noinline)) void yield(fiber *f)
{
    swapcontext(&f->ctx, f->ret);
}

static __attribute__((noinline)) void zone_a_outer_begin(void)
{
    MPROF_ZONE_BEGIN("A.outer");
}

static __attribute__((noinline)) void zone_a_inner(void)
{
    MPROF_ZONE_BEGIN("A.inner");
    sleep_ms(1);
    MPROF_ZONE_END();
}

static __attribute__((noinline)) void zone_end(void)
{
    MPROF_ZONE_END();
}

static __attribute__((noinline)) void zone_b_step(void)
{
    MPROF_ZONE_BEGIN("B.step");
    MPROF_ZONE_END();
}

static void fiber_a_main(void)
{
    zone_a_outer_begin(); /* run 1, thread 1 */
    yield(&fib_a);
    zone_a_inner(); /* run 2, thread 2 */
    yield(&fib_a);
    zone_end(); /* run 3, thread 1: closes A.outer */
    yield(&fib_a);
    yield(&fib_a); /* run 4 */
    fib_a.finished = 1; /* run 5: switch back for good (returning would need uc_link) */
    yield(&fib_a);
}

static void fiber_b_main(void)
{
    for (int i = 0; i < 3; i++) {
        zone_b_step();
        if (i < 2)
            yield(&fib_b);
    }
    fib_b.finished = 1;
    yield(&fib_b);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    MPROF_THREAD_NAME("fiber worker");
    for (;;) {
        sem_wait(&w->go);
        fiber *f = w->job;
        if (!f)
            break;
        f->ret = &w->sched;
        MPROF_FIBER_ENTER(f->name);
        swapcontext(&w->sched, &f->ctx);
        MPROF_FIBER_LEAVE();
        sem_post(&w->done);
    }
    return NULL;
}

static void fiber_init(fiber *f, const char *name, void (*fn)(void))
{
    memset(f, 0, sizeof *f);
    f->name = name;
    f->stack = malloc(256 * 1024);
    assert_non_null(f->stack);
    assert_int_equal(getcontext(&f->ctx), 0);
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = 256 * 1024;
    makecontext(&f->ctx, fn, 0);
}

static void run_on(worker *w, fiber *f)
{
    w->job = f;
    sem_post(&w->go);
    sem_wait(&w->done);
}

static void test_ucontext_fibers_on_two_threads(void **state)
{
    (void)state;
    snprintf(capture_path, sizeof capture_path, "/tmp/mprof_test_fibers_%d.mprof", (int)getpid());
    mprof_config cfg = {0};
    cfg.capture_path = capture_path;
    cfg.listen = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);

    worker w[2];
    for (int i = 0; i < 2; i++) {
        sem_init(&w[i].go, 0, 0);
        sem_init(&w[i].done, 0, 0);
        assert_int_equal(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
    }
    fiber_init(&fib_a, "A", fiber_a_main);
    fiber_init(&fib_b, "B", fiber_b_main);
    for (int i = 0; i < 5; i++) {
        if (i)
            sleep_ms(3);
        run_on(&w[i % 2], &fib_a);
    }
    assert_true(fib_a.finished);
    for (int i = 0; i < 3; i++) {
        if (i)
            sleep_ms(8);
        run_on(&w[i % 2], &fib_b);
    }
    assert_true(fib_b.finished);
    for (int i = 0; i < 2; i++) {
        w[i].job = NULL;
        sem_post(&w[i].go);
        pthread_join(w[i].thread, NULL);
    }
    mprof_shutdown();
    free(fib_a.stack);
    free(fib_b.stack);

    mprof_analysis *a = analyse("fibers");
    mprof_fiber_result r;
    assert_int_equal(mprof__fibers_get(a, "A", &r), 0);
    assert_int_equal(r.runs, 5);
    assert_int_equal(r.migrations, 4);
    assert_int_equal(r.gap_count, 4);
    assert_true(r.gap_p50_ns >= 2900000); /* the 3 ms sleep, less the histogram's 3 % */
    assert_true(r.gap_p50_ns < 200000000);
    assert_int_equal(r.open_zones, 0);
    assert_int_equal(r.unmatched_zone_ends, 0);
    mprof_fiber_zone_result z;
    assert_int_equal(mprof__fibers_zone(a, "A", "A.outer", &z), 0);
    assert_int_equal(z.count, 1);
    /* A.outer spans runs 1 to 3: two scheduler sleeps of 3 ms and A.inner's 1 ms. */
    assert_true(z.total_ns >= 7000000);
    assert_int_equal(mprof__fibers_zone(a, "A", "A.inner", &z), 0);
    assert_int_equal(z.count, 1);
    assert_true(z.total_ns >= 1000000);

    mprof_fiber_result rb;
    assert_int_equal(mprof__fibers_get(a, "B", &rb), 0);
    assert_int_equal(rb.runs, 3);
    assert_int_equal(rb.migrations, 2);
    assert_int_equal(rb.gap_count, 2);
    assert_true(rb.gap_p50_ns >= 7700000);
    assert_true(rb.gap_p50_ns > r.gap_p50_ns);
    assert_int_equal(mprof__fibers_zone(a, "B", "B.step", &z), 0);
    assert_int_equal(z.count, 3);

    /* The core zone table has the fiber zones too, and nothing is unmatched. */
    char *j = report(a, 1);
    assert_non_null(strstr(j, "\"unmatched_zone_ends\":0"));
    assert_non_null(strstr(j, "\"name\":\"A.outer\""));
    assert_non_null(strstr(j, "\"fibers\":["));
    free(j);
    char *t = report(a, 0);
    assert_non_null(strstr(t, "\nFibers\n"));
    free(t);
    mprof_analysis_free(a);

    /* Without --fibers the section is absent but the zones are still matched. */
    a = analyse(NULL);
    j = report(a, 1);
    assert_null(strstr(j, "\"fibers\":["));
    assert_non_null(strstr(j, "\"name\":\"A.outer\""));
    assert_non_null(strstr(j, "\"unmatched_zone_ends\":0"));
    free(j);
    mprof_analysis_free(a);
    remove(capture_path);
}

/* ---- a capture in the worst order ----------------------------------------------------------- */

static unsigned char *put_str(unsigned char *o, const char *s)
{
    size_t n = strlen(s);
    o = mprof_put_varint(o, n);
    memcpy(o, s, n);
    return o + n;
}

typedef struct tl {
    uint64_t last;
} tl;

static unsigned char *put_ts(unsigned char *o, tl *t, uint64_t ts)
{
    o = mprof_put_varint(o, mprof_zigzag((int64_t)(ts - t->last)));
    t->last = ts;
    return o;
}

static void write_worst_order_capture(void)
{
    unsigned char ev[1024], *o = ev;
    tl t1 = {0}, t2 = {0};
    /* Definitions: srclocs 1 "outer", 2 "inner", 3 "plain"; string 1 "A". */
    const char *names[] = {"outer", "inner", "plain"};
    for (int i = 0; i < 3; i++) {
        *o++ = MPROF_EV_DEF_SRCLOC;
        o = mprof_put_varint(o, (uint64_t)i + 1);
        o = mprof_put_varint(o, 10 + (uint64_t)i);
        o = mprof_put_varint(o, 0);
        o = put_str(o, names[i]);
        o = put_str(o, "fn");
        o = put_str(o, "file.c");
    }
    *o++ = MPROF_EV_DEF_STRING;
    o = mprof_put_varint(o, 1);
    o = put_str(o, "A");
    /* Thread 2 first: it resumes fiber A at 2000 and closes "outer" at 2500. */
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 2);
    *o++ = MPROF_EV_FIBER_ENTER;
    o = put_ts(o, &t2, 2000);
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_END;
    o = put_ts(o, &t2, 2500);
    *o++ = MPROF_EV_FIBER_LEAVE;
    o = put_ts(o, &t2, 3000);
    /* Thread 1: a plain zone, then A's first run (opens "outer"), then A's third run. */
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_BEGIN;
    o = put_ts(o, &t1, 500);
    o = mprof_put_varint(o, 3);
    *o++ = MPROF_EV_ZONE_END;
    o = put_ts(o, &t1, 600);
    *o++ = MPROF_EV_FIBER_ENTER;
    o = put_ts(o, &t1, 1000);
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_BEGIN;
    o = put_ts(o, &t1, 1100);
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_FIBER_LEAVE;
    o = put_ts(o, &t1, 1500);
    *o++ = MPROF_EV_FIBER_ENTER;
    o = put_ts(o, &t1, 4000);
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ZONE_BEGIN;
    o = put_ts(o, &t1, 4100);
    o = mprof_put_varint(o, 2);
    *o++ = MPROF_EV_ZONE_END;
    o = put_ts(o, &t1, 4200);
    *o++ = MPROF_EV_FIBER_LEAVE;
    o = put_ts(o, &t1, 4500);

    mprof_buf file = {0}, info = {0};
    assert_int_equal(mprof_buf_reserve(&file, MPROF_FMT_HEADER_BYTES), 0);
    mprof_fmt_file_header(file.data);
    file.len = MPROF_FMT_HEADER_BYTES;
    assert_int_equal(mprof_fmt_kv(&info, "ns_per_tick", "1"), 0);
    assert_int_equal(mprof_fmt_kv(&info, "tick0", "0"), 0);
    assert_int_equal(mprof_fmt_chunk(&file, MPROF_CHUNK_INFO, info.data, info.len, 0, NULL), 0);
    assert_int_equal(mprof_fmt_chunk(&file, MPROF_CHUNK_EVENTS, ev, (size_t)(o - ev), 1, NULL), 0);
    assert_int_equal(mprof_fmt_chunk(&file, MPROF_CHUNK_END, "", 0, 0, NULL), 0);
    snprintf(capture_path, sizeof capture_path, "/tmp/mprof_test_fibers_%d_order.mprof",
             (int)getpid());
    FILE *f = fopen(capture_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file.data, 1, file.len, f), file.len);
    fclose(f);
    mprof_buf_free(&file);
    mprof_buf_free(&info);
}

static void test_resume_on_other_thread_read_first(void **state)
{
    (void)state;
    write_worst_order_capture();
    mprof_analysis *a = analyse("fibers");
    mprof_fiber_result r;
    assert_int_equal(mprof__fibers_get(a, "A", &r), 0);
    assert_int_equal(r.runs, 3);
    assert_int_equal(r.migrations, 2);
    assert_int_equal(r.run_ns, 500 + 1000 + 500);
    assert_int_equal(r.gap_count, 2);
    assert_int_equal(r.gap_max_ns, 1000); /* 3000 -> 4000; the other is 1500 -> 2000 */
    assert_int_equal(r.unmatched_zone_ends, 0);
    assert_int_equal(r.open_zones, 0);
    mprof_fiber_zone_result z;
    assert_int_equal(mprof__fibers_zone(a, "A", "outer", &z), 0);
    assert_int_equal(z.count, 1);
    assert_int_equal(z.total_ns, 2500 - 1100);
    assert_int_equal(mprof__fibers_zone(a, "A", "inner", &z), 0);
    assert_int_equal(z.total_ns, 100);
    char *j = report(a, 1);
    assert_non_null(strstr(j, "\"unmatched_zone_ends\":0"));
    assert_non_null(strstr(j, "\"name\":\"outer\""));
    assert_non_null(strstr(j, "\"total_ns\":1400"));
    assert_non_null(strstr(j, "\"name\":\"plain\""));
    free(j);
    mprof_analysis_free(a);
    remove(capture_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ucontext_fibers_on_two_threads),
        cmocka_unit_test(test_resume_on_other_thread_read_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
