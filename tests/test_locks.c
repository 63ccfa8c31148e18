/*
 * test_locks.c - mprof_mutex, mprof_rwlock and the annotation macros recorded from real threads,
 * read back through the locks pass with exact expectations.
 *
 * Forced contention: the main thread holds "Contended" while a worker, inside the zone
 * "Worker::fetch", tries to take it. The main thread does not release until the worker is
 * really blocked in the kernel (glibc marks a mutex with sleeping waiters with lock word 2), and
 * then holds it 2 ms longer. So every one of the N rounds is contended, exactly N, and each wait
 * is at least 2 ms.
 */
#include "mprof/lock.h"
#include "mprof/mprof.h"

#include "analysis/analysis.h"
#include "analysis/passes.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define ROUNDS 12

static char capture_path[256];

static void sleep_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static mprof_analysis *analyse(void)
{
    char err[512];
    mprof_analysis_opts o = {.top_n = 20, .passes = "locks"};
    mprof_analysis *a = mprof_analysis_run(capture_path, &o, err, sizeof err);
    if (!a)
        fail_msg("analysis failed: %s", err);
    return a;
}

static mprof_mutex contended;
static sem_t go, done;

static void *worker(void *arg)
{
    (void)arg;
    MPROF_THREAD_NAME("fetcher");
    for (int i = 0; i < ROUNDS; i++) {
        sem_wait(&go);
        {
            MPROF_ZONE("Worker::fetch");
            mprof_mutex_lock(&contended);
            mprof_mutex_unlock(&contended);
        }
        sem_post(&done);
    }
    return NULL;
}

/* True once a thread sleeps on m (glibc: lock word 2 = locked with waiters). */
static int has_waiter(mprof_mutex *m)
{
    return __atomic_load_n(&m->m.__data.__lock, __ATOMIC_ACQUIRE) == 2;
}

static void test_forced_contention_and_uncontended(void **state)
{
    (void)state;
    snprintf(capture_path, sizeof capture_path, "/tmp/mprof_test_locks_%d.mprof", (int)getpid());
    mprof_config cfg = {0};
    cfg.capture_path = capture_path;
    cfg.listen = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);

    assert_int_equal(MPROF_MUTEX_INIT(&contended, "Contended"), 0);
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, worker, NULL), 0);
    for (int i = 0; i < ROUNDS; i++) {
        mprof_mutex_lock(&contended);
        sem_post(&go);
        int spins = 0;
        while (!has_waiter(&contended)) {
            sleep_ns(50000);
            assert_true(++spins < 100000); /* 5 s: the worker never blocked */
        }
        sleep_ns(2000000);
        mprof_mutex_unlock(&contended);
        sem_wait(&done);
    }
    assert_int_equal(pthread_join(t, NULL), 0);

    /* Uncontended, single thread. */
    mprof_mutex quiet;
    assert_int_equal(mprof_mutex_init(&quiet, "Quiet"), 0);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(mprof_mutex_lock(&quiet), 0);
        assert_int_equal(mprof_mutex_unlock(&quiet), 0);
    }
    /* trylock: succeeds when free, fails (EBUSY) while held. */
    assert_int_equal(mprof_mutex_trylock(&quiet), 0);
    assert_int_equal(mprof_mutex_unlock(&quiet), 0);
    mprof_mutex_destroy(&quiet);

    /* rwlock: shared and exclusive holds, and a failed trywrlock while a reader holds it. */
    mprof_rwlock rw;
    assert_int_equal(MPROF_RWLOCK_INIT(&rw, "World"), 0);
    assert_int_equal(mprof_rwlock_rdlock(&rw), 0);
    assert_int_equal(mprof_rwlock_rdlock(&rw), 0); /* recursive shared hold */
    assert_int_equal(mprof_rwlock_trywrlock(&rw), EBUSY);
    assert_int_equal(mprof_rwlock_rdunlock(&rw), 0);
    assert_int_equal(mprof_rwlock_rdunlock(&rw), 0);
    assert_int_equal(mprof_rwlock_wrlock(&rw), 0);
    assert_int_equal(mprof_rwlock_tryrdlock(&rw), EBUSY);
    assert_int_equal(mprof_rwlock_wrunlock(&rw), 0);
    assert_int_equal(mprof_rwlock_tryrdlock(&rw), 0);
    assert_int_equal(mprof_rwlock_rdunlock(&rw), 0);
    mprof_rwlock_destroy(&rw);

    /* A lock the program already has: a spinlock annotated with the macros. */
    static atomic_flag spin = ATOMIC_FLAG_INIT;
    mprof_lock_id sid = MPROF_LOCK_ANNOUNCE("Spin", MPROF_LOCK_KIND_SPIN);
    assert_true(sid != 0);
    for (int i = 0; i < 10; i++) {
        if (atomic_flag_test_and_set(&spin)) {
            MPROF_LOCK_WAIT(sid, 0);
            while (atomic_flag_test_and_set(&spin)) {
            }
        }
        MPROF_LOCK_OBTAINED(sid, 0);
        MPROF_LOCK_RELEASED(sid, 0);
        atomic_flag_clear(&spin);
    }
    mprof_shutdown();
    mprof_mutex_destroy(&contended);

    mprof_analysis *a = analyse();
    mprof_lock_result r;
    assert_int_equal(mprof__locks_get(a, "Contended", &r), 0);
    assert_int_equal(r.acquisitions, 2 * ROUNDS);
    assert_int_equal(r.contended, ROUNDS);
    assert_int_equal(r.wait_count, ROUNDS);
    assert_int_equal(r.waits_abandoned, 0);
    assert_true(r.wait_p50_ns >= 1900000); /* >= 2 ms, less the histogram's 3 % */
    assert_true(r.wait_max_ns >= r.wait_p50_ns);
    assert_true(r.wait_total_ns >= (int64_t)ROUNDS * 2000000);
    assert_int_equal(r.hold_count, 2 * ROUNDS);
    assert_non_null(r.top_zone);
    assert_string_equal(r.top_zone, "Worker::fetch");
    const mprof_thread_def *td = mprof_reader_thread(mprof_analysis_reader(a), r.top_thread);
    assert_non_null(td);
    assert_non_null(td->name);
    assert_string_equal(td->name, "fetcher");

    assert_int_equal(mprof__locks_get(a, "Quiet", &r), 0);
    assert_int_equal(r.acquisitions, 101);
    assert_int_equal(r.contended, 0);
    assert_int_equal(r.try_failed, 0);
    assert_int_equal(r.hold_count, 101);
    assert_null(r.top_zone);

    assert_int_equal(mprof__locks_get(a, "World", &r), 0);
    assert_int_equal(r.acquisitions, 4);
    assert_int_equal(r.shared_acquisitions, 3);
    assert_int_equal(r.try_failed, 2);
    assert_int_equal(r.contended, 0);
    assert_int_equal(r.hold_count, 3); /* the recursive shared hold counts once */

    assert_int_equal(mprof__locks_get(a, "Spin", &r), 0);
    assert_int_equal(r.acquisitions, 10);
    assert_int_equal(r.contended, 0);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    mprof_analysis_print_text(a, f);
    fclose(f);
    assert_non_null(strstr(text, "\nLocks\n"));
    assert_non_null(strstr(text, "'Contended' waited longest in: fetcher"));
    free(text);
    f = open_memstream(&text, &len);
    mprof_analysis_print_json(a, f);
    fclose(f);
    assert_non_null(strstr(text, "\"locks\""));
    assert_non_null(strstr(text, "Worker::fetch"));
    free(text);
    mprof_analysis_free(a);
    remove(capture_path);
}

/* Locks created before any capture and used in two sessions are announced in each. */
static void test_announced_per_session(void **state)
{
    (void)state;
    mprof_mutex m;
    assert_int_equal(mprof_mutex_init(&m, "Long-lived"), 0);
    for (int session = 0; session < 2; session++) {
        snprintf(capture_path, sizeof capture_path, "/tmp/mprof_test_locks_%d_s%d.mprof",
                 (int)getpid(), session);
        mprof_config cfg = {0};
        cfg.capture_path = capture_path;
        cfg.listen = MPROF_TOGGLE_OFF;
        assert_int_equal(mprof_startup(&cfg), MPROF_OK);
        for (int i = 0; i < 3 + session; i++) {
            mprof_mutex_lock(&m);
            mprof_mutex_unlock(&m);
        }
        mprof_shutdown();
        mprof_analysis *a = analyse();
        mprof_lock_result r;
        assert_int_equal(mprof__locks_get(a, "Long-lived", &r), 0);
        assert_int_equal(r.acquisitions, 3 + session);
        mprof_analysis_free(a);
        remove(capture_path);
    }
    mprof_mutex_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forced_contention_and_uncontended),
        cmocka_unit_test(test_announced_per_session),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
