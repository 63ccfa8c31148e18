/*
 * test_gpu.c - the generic GPU context API (src/gpu.c): query-id pairs, reuse only after both
 * timestamps returned, exhaustion counted and reported, out-of-order upload, the records in the
 * capture, threads.
 */
#define _POSIX_C_SOURCE 200809L
#define MPROF_ENABLE
#include "mprof/mprof.h"

#include "gpu_capture.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <time.h>

#include <pthread.h>
#include <sys/resource.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>

#include <cmocka.h>

static char capture_path[512];

static int start(void **state)
{
    (void)state;
    gc_temp_path(capture_path, sizeof capture_path, "test_gpu");
    mprof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.capture_path = capture_path;
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.invariant_check = MPROF_TOGGLE_OFF;
    return mprof_startup(&cfg) == MPROF_OK ? 0 : -1;
}

static int stop(void **state)
{
    (void)state;
    mprof_shutdown();
    remove(capture_path);
    return 0;
}

static void test_context_new_rejects_bad_period(void **state)
{
    (void)state;
    assert_int_equal(mprof_gpu_context_new("bad", MPROF_GPU_API_OTHER, 0.0, 8), 0);
    assert_int_equal(mprof_gpu_context_new("bad", MPROF_GPU_API_OTHER, -1.0, 8), 0);
    mprof_gpu_context_destroy(0); /* no-op */
    assert_int_equal(mprof_gpu_zone_begin(0, NULL), MPROF_GPU_NO_QUERY);
    assert_int_equal(mprof_gpu_zone_end(1234, 0), MPROF_GPU_NO_QUERY);
}

static void test_pairs_and_exhaustion(void **state)
{
    (void)state;
    mprof_gpu_ctx ctx = MPROF_GPU_CONTEXT("ring", MPROF_GPU_API_OTHER, 1.0, 8); /* 4 pairs */
    assert_int_not_equal(ctx, 0);
    mprof_stats st0, st1;
    mprof_get_stats(&st0);

    uint32_t q[4];
    for (int i = 0; i < 4; i++) {
        q[i] = MPROF_GPU_ZONE_BEGIN(ctx, "z");
        assert_int_equal(q[i], (uint32_t)(2 * i));
        assert_int_equal(MPROF_GPU_ZONE_END(ctx, q[i]), q[i] + 1);
    }
    uint32_t first = 99;
    assert_int_equal(mprof_gpu_pending(ctx, &first), 8);
    assert_int_equal(first, 0);

    /* All four pairs in flight: the fifth zone is dropped and counted, not a crash. */
    assert_int_equal(MPROF_GPU_ZONE_BEGIN(ctx, "z"), MPROF_GPU_NO_QUERY);
    assert_int_equal(MPROF_GPU_ZONE_END(ctx, MPROF_GPU_NO_QUERY), MPROF_GPU_NO_QUERY);
    mprof_get_stats(&st1);
    assert_int_equal(st1.gpu_queries_lost - st0.gpu_queries_lost, 1);

    /* Half a pair returned does not free it. */
    mprof_gpu_time(ctx, 3, 300);
    assert_int_equal(MPROF_GPU_ZONE_BEGIN(ctx, "z"), MPROF_GPU_NO_QUERY);
    /* Uploading the same id twice is ignored, as is an id never handed out. */
    mprof_gpu_time(ctx, 3, 301);
    mprof_gpu_time(ctx, 1000, 1);
    assert_int_equal(MPROF_GPU_ZONE_BEGIN(ctx, "z"), MPROF_GPU_NO_QUERY);

    /* Pair 1 returns (end before begin): it is reused while pair 0, older, is still out. */
    mprof_gpu_time(ctx, 2, 200);
    uint32_t r = MPROF_GPU_ZONE_BEGIN(ctx, "z");
    assert_int_equal(r, 2);
    assert_int_equal(MPROF_GPU_ZONE_END(ctx, r), 3);
    assert_int_equal(MPROF_GPU_ZONE_BEGIN(ctx, "z"), MPROF_GPU_NO_QUERY);

    /* Pair 0 returns: the window's tail moves past it and the next pair is taken at its end. */
    mprof_gpu_time(ctx, 1, 110);
    mprof_gpu_time(ctx, 0, 100);
    assert_int_equal(mprof_gpu_pending(ctx, &first), 6);
    assert_int_equal(first, 2);
    r = MPROF_GPU_ZONE_BEGIN(ctx, "z");
    assert_int_equal(r, 0);
    (void)MPROF_GPU_ZONE_END(ctx, r);

    mprof_get_stats(&st1);
    assert_int_equal(st1.gpu_queries_lost - st0.gpu_queries_lost, 4);
    mprof_gpu_context_destroy(ctx);
}

/* A model of the ring: random begins and out-of-order uploads; an id is never handed out while
 * in flight, pending always covers every id in flight, and a free pair is always found. */
static void test_ring_model(void **state)
{
    (void)state;
    enum { N = 64 };
    mprof_gpu_ctx ctx = mprof_gpu_context_new("model", MPROF_GPU_API_OTHER, 1.0, N);
    assert_int_not_equal(ctx, 0);
    int inflight[N / 2] = {0};
    int got[N] = {0};
    int n_inflight = 0;
    uint32_t seed = 12345;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t rnd = seed >> 8;
        if (rnd % 3 != 0) {
            uint32_t q = MPROF_GPU_ZONE_BEGIN(ctx, "m");
            if (n_inflight == N / 2) {
                assert_int_equal(q, MPROF_GPU_NO_QUERY);
                continue;
            }
            assert_int_not_equal(q, MPROF_GPU_NO_QUERY);
            assert_int_equal(q % 2, 0);
            assert_false(inflight[q / 2]);
            inflight[q / 2] = 1;
            n_inflight++;
            (void)MPROF_GPU_ZONE_END(ctx, q);
        } else {
            /* Upload one random id of a pair in flight, except pair 5 which stays late for a
             * long stretch (a query stuck in the GPU). */
            uint32_t id = (rnd / 3) % N;
            if (!inflight[id / 2] || got[id] || (id / 2 == 5 && step < 15000))
                continue;
            mprof_gpu_time(ctx, id, (int64_t)step);
            got[id] = 1;
            if (got[id ^ 1u]) {
                inflight[id / 2] = 0;
                got[id] = got[id ^ 1u] = 0;
                n_inflight--;
            }
        }
        uint32_t first = 0, n = mprof_gpu_pending(ctx, &first);
        for (uint32_t p = 0; p < N / 2; p++) {
            if (!inflight[p])
                continue;
            uint32_t off = (2 * p + N - first) % N;
            assert_true(off < n);
        }
    }
    mprof_gpu_context_destroy(ctx);
}

typedef struct worker_arg {
    mprof_gpu_ctx ctx;
    int zones;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    for (int i = 0; i < a->zones; i++) {
        uint32_t q = MPROF_GPU_ZONE_BEGIN(a->ctx, "thread zone");
        if (q == MPROF_GPU_NO_QUERY)
            continue;
        uint32_t e = MPROF_GPU_ZONE_END(a->ctx, q);
        /* The "GPU" answers at once, end first. */
        mprof_gpu_time(a->ctx, e, (int64_t)(2 * i + 1));
        mprof_gpu_time(a->ctx, q, (int64_t)(2 * i));
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    mprof_gpu_ctx ctx = mprof_gpu_context_new("threads", MPROF_GPU_API_OTHER, 1.0, 64);
    assert_int_not_equal(ctx, 0);
    pthread_t th[4];
    worker_arg a = {ctx, 2000};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, &a), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    uint32_t first = 0;
    /* Everything came back, so nothing is pending once the tail has caught up. */
    assert_int_equal(mprof_gpu_pending(ctx, &first), 0);
    mprof_gpu_context_destroy(ctx);
}

/* The capture: context, calibration, zones with both CPU and GPU sides, nesting, out-of-order
 * and late (frames later) uploads, the lost counter in the END chunk. */
static void test_capture_records(void **state)
{
    (void)state;
    /* A fresh capture of its own. */
    mprof_shutdown();
    assert_int_equal(start(NULL), 0);
    mprof_stats st0;
    mprof_get_stats(&st0);

    mprof_gpu_ctx ctx = MPROF_GPU_CONTEXT("Queue", MPROF_GPU_API_OTHER, 2.0, 16);
    assert_int_not_equal(ctx, 0);
    uint64_t cal_ns = mprof_now_ns();
    MPROF_GPU_CALIBRATE(ctx, 1000, cal_ns);
    uint32_t outer = MPROF_GPU_ZONE_BEGIN_C(ctx, "Outer", MPROF_COLOR_RENDERER);
    uint32_t inner = MPROF_GPU_ZONE_BEGIN(ctx, "Inner");
    uint32_t inner_e = MPROF_GPU_ZONE_END(ctx, inner);
    uint32_t outer_e = MPROF_GPU_ZONE_END(ctx, outer);
    /* Upload in reverse, later. */
    MPROF_GPU_TIME(ctx, outer_e, 1900);
    MPROF_GPU_TIME(ctx, inner_e, 1600);
    MPROF_GPU_TIME(ctx, inner, 1500);
    MPROF_GPU_TIME(ctx, outer, 1400);
    /* Exhaust: 8 pairs, 9 zones without uploads. */
    int dropped = 0;
    for (int i = 0; i < 9; i++) {
        uint32_t q = MPROF_GPU_ZONE_BEGIN(ctx, "Flood");
        dropped += q == MPROF_GPU_NO_QUERY;
        (void)MPROF_GPU_ZONE_END(ctx, q);
    }
    assert_int_equal(dropped, 1);
    mprof_stats st1;
    mprof_get_stats(&st1);
    uint64_t lost = st1.gpu_queries_lost;
    assert_true(lost >= st0.gpu_queries_lost + 1);
    mprof_gpu_context_destroy(ctx);
    mprof_shutdown();

    gc_capture c;
    assert_int_equal(gc_read(capture_path, &c), 0);
    assert_true(c.ctx[ctx].seen);
    assert_string_equal(c.ctx[ctx].name, "Queue");
    assert_int_equal(c.ctx[ctx].api, MPROF_GPU_API_OTHER);
    assert_true(c.ctx[ctx].period_ns == 2.0);
    assert_int_equal(c.ctx[ctx].n_calibrations, 1);
    assert_int_equal(c.ctx[ctx].cal_gpu, 1000);
    /* The calibration's CPU time survives the round trip within a tick or so. */
    assert_true(llabs(c.ctx[ctx].cal_cpu_ns - (int64_t)cal_ns) < 100);
    assert_int_equal(c.n_zones, 2 + 8);
    gc_zone *o = &c.zones[0], *in = &c.zones[1];
    assert_string_equal(o->name, "Outer");
    assert_string_equal(in->name, "Inner");
    assert_int_equal(in->parent, 0);
    assert_int_equal(o->depth, 0);
    assert_int_equal(in->depth, 1);
    assert_true(o->got_begin && o->got_end && in->got_begin && in->got_end);
    assert_int_equal(o->gpu_begin, 1400);
    assert_int_equal(o->gpu_end, 1900);
    assert_int_equal(in->gpu_begin, 1500);
    assert_int_equal(in->gpu_end, 1600);
    assert_true(o->cpu_begin_ns <= in->cpu_begin_ns);
    assert_true(in->cpu_end_ns <= o->cpu_end_ns);
    /* GPU ticks map to CPU time through the calibration and the period. */
    assert_true(gc_gpu_to_cpu_ns(&c, ctx, 1400) - (double)c.ctx[ctx].cal_cpu_ns == 800.0);
    assert_int_equal(c.stray_times, 0);
    /* The counter reaches the capture (it counts for the whole process). */
    char want[32];
    snprintf(want, sizeof want, "%llu", (unsigned long long)lost);
    assert_string_equal(c.end_gpu_lost, want);
    gc_free(&c);
    assert_int_equal(start(NULL), 0);
}

/* A context made before the capture starts is announced in it, with its last calibration. */
static void test_announced_in_later_session(void **state)
{
    (void)state;
    mprof_shutdown();
    mprof_gpu_ctx ctx = mprof_gpu_context_new("Early", MPROF_GPU_API_OPENGL, 1.0, 8);
    assert_int_not_equal(ctx, 0);
    mprof_gpu_calibrate(ctx, 77, 0);
    /* Not recording: no query ids are handed out. */
    assert_int_equal(MPROF_GPU_ZONE_BEGIN(ctx, "before"), MPROF_GPU_NO_QUERY);
    assert_int_equal(start(NULL), 0);
    uint32_t q = MPROF_GPU_ZONE_BEGIN(ctx, "after");
    assert_int_not_equal(q, MPROF_GPU_NO_QUERY);
    mprof_gpu_time(ctx, MPROF_GPU_ZONE_END(ctx, q), 90);
    mprof_gpu_time(ctx, q, 80);
    mprof_gpu_context_destroy(ctx);
    mprof_shutdown();
    gc_capture c;
    assert_int_equal(gc_read(capture_path, &c), 0);
    assert_true(c.ctx[ctx].seen);
    assert_string_equal(c.ctx[ctx].name, "Early");
    assert_int_equal(c.ctx[ctx].n_calibrations, 1);
    assert_int_equal(c.ctx[ctx].cal_gpu, 77);
    assert_int_equal(c.n_zones, 1);
    assert_true(c.zones[0].got_begin && c.zones[0].got_end);
    gc_free(&c);
    assert_int_equal(start(NULL), 0);
}

static void test_monotonic_conversion(void **state)
{
    (void)state;
    /* Within the bracket, give or take the offset measurement's own error: half its own
     * bracket, tens of nanoseconds unless the thread is preempted inside it (a loaded machine,
     * a sanitizer), so one of a few tries must hold; a wrong offset fails them all. */
    int ok = 0;
    for (int i = 0; i < 5 && !ok; i++) {
        struct timespec ts;
        uint64_t a = mprof_now_ns();
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t b = mprof_now_ns();
        uint64_t mono = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        uint64_t conv = mprof_gpu_monotonic_to_ns(mono);
        ok = conv + 2000 >= a && conv <= b + 2000;
    }
    assert_true(ok);
}


static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static cJSON *find_ctx(cJSON *root, const char *name)
{
    cJSON *ctxs = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "gpu"), "contexts");
    cJSON *c;
    cJSON_ArrayForEach(c, ctxs)
    {
        cJSON *n = cJSON_GetObjectItem(c, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return c;
    }
    return NULL;
}

/* ---- corrupt input, written by hand ---------------------------------------------------------- */

static unsigned char *put_ts(unsigned char *o, uint64_t *last, uint64_t ts)
{
    o = mprof_put_varint(o, mprof_zigzag((int64_t)(ts - *last)));
    *last = ts;
    return o;
}

/* Writes a capture of the given events to path (1 ns ticks). */
static void write_capture(const char *path, const unsigned char *ev, size_t len)
{
    mprof_buf file = {0}, info = {0};
    assert_int_equal(mprof_buf_reserve(&file, MPROF_FMT_HEADER_BYTES), 0);
    mprof_fmt_file_header(file.data);
    file.len = MPROF_FMT_HEADER_BYTES;
    assert_int_equal(mprof_fmt_kv(&info, "ns_per_tick", "1"), 0);
    assert_int_equal(mprof_fmt_kv(&info, "tick0", "0"), 0);
    assert_int_equal(mprof_fmt_chunk(&file, MPROF_CHUNK_INFO, info.data, info.len, 0, NULL), 0);
    assert_int_equal(mprof_fmt_chunk(&file, MPROF_CHUNK_EVENTS, ev, len, 0, NULL), 0);
    assert_int_equal(mprof_fmt_chunk(&file, MPROF_CHUNK_END, "", 0, 0, NULL), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file.data, 1, file.len, f), file.len);
    fclose(f);
    mprof_buf_free(&file);
    mprof_buf_free(&info);
}

/* The pass used to grow per-context arrays to the largest query pair and source location id
 * read from the file: eight contexts with one zone each at the highest pair (2^19 - 1) and srcloc
 * (2^24 - 1) made a capture of a few hundred bytes take about 700 MB. Both are now looked up in
 * maps, and a query id past the pairs a context may use is refused and counted. */
static void test_report_gpu_huge_ids(void **state)
{
    (void)state;
    enum { N_CTX = 8 };
    unsigned char ev[1024], *o = ev;
    uint64_t t = 0;
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    for (uint32_t c = 1; c <= N_CTX; c++) {
        *o++ = MPROF_EV_GPU_CONTEXT;
        o = put_ts(o, &t, 10 * c);
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, 0);
        *o++ = 1;
        double per = 1.0;
        uint64_t bits;
        memcpy(&bits, &per, 8);
        mprof_wr_u64(o, bits);
        o += 8;
        uint64_t q = 2ull * ((1u << 19) - 1);
        *o++ = MPROF_EV_GPU_ZONE_BEGIN;
        o = put_ts(o, &t, 10 * c + 1);
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, q);
        o = mprof_put_varint(o, (1u << 24) - 1);
        *o++ = MPROF_EV_GPU_ZONE_END;
        o = put_ts(o, &t, 10 * c + 2);
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, q);
        *o++ = MPROF_EV_GPU_TIME;
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, q);
        o = mprof_put_varint(o, mprof_zigzag(0));
        *o++ = MPROF_EV_GPU_TIME;
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, q + 1);
        o = mprof_put_varint(o, mprof_zigzag(1000));
        *o++ = MPROF_EV_GPU_ZONE_BEGIN; /* one pair past the limit: refused */
        o = put_ts(o, &t, 10 * c + 3);
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, q + 2);
        o = mprof_put_varint(o, 1);
    }
    assert_true((size_t)(o - ev) <= sizeof ev);
    char path[512];
    gc_temp_path(path, sizeof path, "test_gpu_huge_ids");
    write_capture(path, ev, (size_t)(o - ev));

    char cmd[1200], out[65536];
    snprintf(cmd, sizeof cmd, "%s report --gpu --json %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    /* The report ran in a child: its peak memory is the largest child's so far. */
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_CHILDREN, &ru), 0);
    assert_true(ru.ru_maxrss < 128 * 1024); /* KiB; it was about 700 MB */
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    cJSON *ctxs = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "gpu"), "contexts");
    assert_int_equal(cJSON_GetArraySize(ctxs), N_CTX);
    cJSON *c;
    cJSON_ArrayForEach(c, ctxs)
    {
        assert_int_equal(cJSON_GetObjectItem(c, "zones_complete")->valueint, 1);
        assert_int_equal(cJSON_GetObjectItem(c, "zones_incomplete")->valueint, 0);
        assert_int_equal(cJSON_GetObjectItem(c, "query_ids_refused")->valueint, 1);
    }
    cJSON_Delete(root);
    snprintf(cmd, sizeof cmd, "%s report --gpu %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "1 records refused: query id past the 524288 pairs"));
    remove(path);
}

/* GPU values that hit undefined behaviour: a tick period of 1e300, GPU times whose difference
 * overflows int64_t, a submit-to-start latency (about 4.6e24 ns) converted from double to an
 * integer. The period and the overflowing zone are counted as corrupt; the huge latency is
 * clamped. */
static void test_report_gpu_corrupt_values(void **state)
{
    (void)state;
    unsigned char ev[512], *o = ev;
    uint64_t t = 0;
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    for (uint32_t c = 1; c <= 2; c++) {
        *o++ = MPROF_EV_GPU_CONTEXT;
        o = put_ts(o, &t, 10 * c);
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, 0);
        *o++ = 1;
        double per = c == 1 ? 1e300 : 1e6;
        uint64_t bits;
        memcpy(&bits, &per, 8);
        mprof_wr_u64(o, bits);
        o += 8;
        if (c == 2) {
            *o++ = MPROF_EV_GPU_CALIBRATE;
            o = put_ts(o, &t, 25);
            o = mprof_put_varint(o, c);
            o = mprof_put_varint(o, mprof_zigzag(-(1ll << 62)));
        }
        *o++ = MPROF_EV_GPU_ZONE_BEGIN;
        o = put_ts(o, &t, 10 * c + 6);
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, 0);
        o = mprof_put_varint(o, 1);
        *o++ = MPROF_EV_GPU_ZONE_END;
        o = put_ts(o, &t, 10 * c + 7);
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, 1);
        *o++ = MPROF_EV_GPU_TIME;
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, 0);
        o = mprof_put_varint(o, mprof_zigzag(c == 1 ? -5 : 0));
        *o++ = MPROF_EV_GPU_TIME;
        o = mprof_put_varint(o, c);
        o = mprof_put_varint(o, 1);
        o = mprof_put_varint(o, mprof_zigzag(c == 1 ? INT64_MAX : 1));
    }
    assert_true((size_t)(o - ev) <= sizeof ev);
    char path[512];
    gc_temp_path(path, sizeof path, "test_gpu_corrupt");
    write_capture(path, ev, (size_t)(o - ev));

    char cmd[1200], out[65536];
    snprintf(cmd, sizeof cmd, "%s report --gpu --json %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    cJSON *ctxs = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "gpu"), "contexts");
    assert_int_equal(cJSON_GetArraySize(ctxs), 2);
    cJSON *c1 = cJSON_GetArrayItem(ctxs, 0), *c2 = cJSON_GetArrayItem(ctxs, 1);
    assert_true(cJSON_GetObjectItem(c1, "period_ns")->valuedouble == 1.0);
    assert_int_equal(cJSON_GetObjectItem(c1, "corrupt_records")->valueint, 2);
    assert_int_equal(cJSON_GetObjectItem(c1, "zones_complete")->valueint, 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(c1, "zones")), 0);
    assert_int_equal(cJSON_GetObjectItem(c2, "corrupt_records")->valueint, 0);
    cJSON *z = cJSON_GetArrayItem(cJSON_GetObjectItem(c2, "zones"), 0);
    assert_non_null(z);
    assert_int_equal(cJSON_GetObjectItem(z, "count")->valueint, 1);
    assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(z, "gpu_ns"), "mean")->valuedouble == 1e6);
    cJSON_Delete(root);
    snprintf(cmd, sizeof cmd, "%s report --gpu %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "2 records ignored as corrupt"));
    remove(path);
}

/* `mprof report --gpu` (the real binary) on a capture with known GPU times: per-zone counts and
 * durations, submit-to-start latency, per-frame busy share and GPU-bound frames. */
static void test_report_gpu(void **state)
{
    (void)state;
    mprof_shutdown();
    assert_int_equal(start(NULL), 0);
    /* GPU ticks of 0.5 ns; calibration: tick 0 is CPU time t0. */
    mprof_gpu_ctx ctx = MPROF_GPU_CONTEXT("Report", MPROF_GPU_API_VULKAN, 0.5, 64);
    uint64_t t0 = mprof_now_ns();
    MPROF_GPU_CALIBRATE(ctx, 0, t0);
    MPROF_FRAME_MARK();
    /* 4 frames of about 2 ms CPU time. Frame 3's GPU work takes 30 ms: GPU-bound. Each pass
     * starts on the GPU 50 us after it was recorded. */
    for (int f = 0; f < 4; f++) {
        uint64_t rec = mprof_now_ns();
        uint32_t q = MPROF_GPU_ZONE_BEGIN(ctx, "Pass");
        uint32_t e = MPROF_GPU_ZONE_END(ctx, q);
        int64_t begin_ticks = (int64_t)(rec - t0 + 50000) * 2;
        int64_t dur_ns = f == 2 ? 30000000 : 100000;
        MPROF_GPU_TIME(ctx, e, begin_ticks + dur_ns * 2);
        MPROF_GPU_TIME(ctx, q, begin_ticks);
        sleep_us(2000);
        MPROF_FRAME_MARK();
    }
    mprof_gpu_context_destroy(ctx);
    mprof_shutdown();

    char cmd[1200], out[65536];
    snprintf(cmd, sizeof cmd, "%s report --gpu --json %s", tu_mprof_bin(), capture_path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    cJSON *c = find_ctx(root, "Report");
    assert_non_null(c);
    assert_string_equal(cJSON_GetObjectItem(c, "api")->valuestring, "Vulkan");
    assert_int_equal(cJSON_GetObjectItem(c, "zones_complete")->valueint, 4);
    assert_int_equal(cJSON_GetObjectItem(c, "zones_incomplete")->valueint, 0);
    cJSON *z = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "zones"), 0);
    assert_string_equal(cJSON_GetObjectItem(z, "name")->valuestring, "Pass");
    assert_int_equal(cJSON_GetObjectItem(z, "count")->valueint, 4);
    cJSON *g = cJSON_GetObjectItem(z, "gpu_ns");
    double mean = cJSON_GetObjectItem(g, "mean")->valuedouble;
    assert_true(fabs(mean - (3 * 100000.0 + 30000000.0) / 4) < 1.0);
    double max = cJSON_GetObjectItem(g, "max")->valuedouble;
    assert_true(max == 30000000.0);
    double p50 = cJSON_GetObjectItem(g, "p50")->valuedouble;
    assert_true(p50 > 97000 && p50 < 103000); /* histogram: within 3 % */
    cJSON *lat = cJSON_GetObjectItem(z, "submit_to_start_ns");
    double lat_mean = cJSON_GetObjectItem(lat, "mean")->valuedouble;
    /* 50 us after the CPU time read just before the begin call: a little less than 50 us. */
    assert_true(lat_mean > 40000 && lat_mean <= 50000);
    cJSON *fr = cJSON_GetObjectItem(c, "frames");
    assert_int_equal(cJSON_GetObjectItem(fr, "count")->valueint, 4);
    assert_int_equal(cJSON_GetObjectItem(fr, "gpu_bound")->valueint, 1);
    cJSON *bound = cJSON_GetObjectItem(fr, "gpu_bound_frames");
    assert_int_equal(cJSON_GetArraySize(bound), 1);
    assert_int_equal(cJSON_GetArrayItem(bound, 0)->valueint, 3);
    cJSON *share = cJSON_GetObjectItem(fr, "busy_share");
    assert_int_equal(cJSON_GetArraySize(share), 4);
    double s0 = cJSON_GetArrayItem(share, 0)->valuedouble;
    assert_true(s0 > 0.0 && s0 < 0.1); /* 100 us of a >= 2 ms frame */
    /* Frame 3's 30 ms pass keeps the GPU busy for the rest of frame 3 (and on into frame 4):
     * the share is the busy part of each frame, never above 1. */
    assert_true(cJSON_GetArrayItem(share, 2)->valuedouble > 0.0);
    assert_true(cJSON_GetArrayItem(share, 2)->valuedouble <= 1.0);
    assert_true(cJSON_GetObjectItem(fr, "busy_share_max")->valuedouble <= 1.0);
    cJSON_Delete(root);

    snprintf(cmd, sizeof cmd, "%s report --gpu %s", tu_mprof_bin(), capture_path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "Vulkan context \"Report\""));
    assert_non_null(strstr(out, "GPU-bound frames 1"));
    /* Without --gpu there is no GPU section. */
    snprintf(cmd, sizeof cmd, "%s report %s", tu_mprof_bin(), capture_path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_null(strstr(out, "\nGPU\n"));
    assert_int_equal(start(NULL), 0);
}

/* A GPU clock that runs 1 % fast: between two calibrations the report interpolates, so a pass
 * that started 50 us after it was recorded shows 50 us, not the 100 us error a single
 * calibration with the nominal period would give. */
static void test_report_gpu_drift(void **state)
{
    (void)state;
    mprof_shutdown();
    assert_int_equal(start(NULL), 0);
    mprof_gpu_ctx ctx = MPROF_GPU_CONTEXT("Drift", MPROF_GPU_API_OTHER, 1.0, 8);
    uint64_t t0 = mprof_now_ns();
    MPROF_GPU_CALIBRATE(ctx, 0, t0);
    uint64_t rec = mprof_now_ns();
    uint32_t q = MPROF_GPU_ZONE_BEGIN(ctx, "Drifting");
    uint32_t e = MPROF_GPU_ZONE_END(ctx, q);
    /* The second calibration is 10 ms after the zone, on both clocks. */
    uint64_t t1 = rec + 10000000;
    MPROF_GPU_CALIBRATE(ctx, (int64_t)((double)(t1 - t0) * 1.01), t1);
    int64_t gb = (int64_t)((double)(rec + 50000 - t0) * 1.01);
    MPROF_GPU_TIME(ctx, q, gb);
    MPROF_GPU_TIME(ctx, e, gb + 1010);
    mprof_gpu_context_destroy(ctx);
    mprof_shutdown();

    char cmd[1200], out[65536];
    snprintf(cmd, sizeof cmd, "%s report --gpu --json %s", tu_mprof_bin(), capture_path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    cJSON *c = find_ctx(root, "Drift");
    assert_non_null(c);
    assert_int_equal(cJSON_GetObjectItem(c, "calibrations")->valueint, 2);
    cJSON *z = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "zones"), 0);
    double lat = cJSON_GetObjectItem(cJSON_GetObjectItem(z, "submit_to_start_ns"), "mean")->valuedouble;
    assert_true(lat > 40000 && lat < 50500);
    cJSON_Delete(root);
    assert_int_equal(start(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_new_rejects_bad_period),
        cmocka_unit_test(test_pairs_and_exhaustion),
        cmocka_unit_test(test_ring_model),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_capture_records),
        cmocka_unit_test(test_announced_in_later_session),
        cmocka_unit_test(test_monotonic_conversion),
        cmocka_unit_test(test_report_gpu),
        cmocka_unit_test(test_report_gpu_drift),
        cmocka_unit_test(test_report_gpu_huge_ids),
        cmocka_unit_test(test_report_gpu_corrupt_values),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
