/*
 * test_profiler.c - the instrumentation macros and the runtime: every macro reaches the
 * capture with the right fields, zones nest and match, many threads record exact counts, and a
 * tiny memory cap drops events that are then counted, never lost silently.
 */
#define MPROF_ENABLE 1
#include "mprof/mprof.h"
#include "test_util.h"
#include "buffers.h"
#include "lifecycle.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *start_capture(const char *stem, size_t cap_bytes)
{
    const char *path = tu_temp_path(stem);
    mprof_config cfg = {0};
    cfg.capture_path = path;
    cfg.memory_limit_bytes = cap_bytes;
    cfg.listen = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    assert_true(mprof_is_recording());
    return path;
}

/* ---- every macro ----------------------------------------------------------------------------- */

static void nested(int depth)
{
    MPROF_ZONE_C("nested", MPROF_COLOR_PHYSICS);
    if (depth > 0)
        nested(depth - 1);
}

static void test_every_macro(void **state)
{
    (void)state;
    const char *path = start_capture("macros.mprof", 0);
    MPROF_THREAD_NAME("test-main");
    MPROF_APP_INFO("build 42");
    MPROF_PLOT_CONFIG("memory", MPROF_PLOT_FORMAT_MEMORY, MPROF_PLOT_STYLE_STEP, 0x112233);
    for (int f = 0; f < 3; f++) {
        {
            MPROF_ZONE("scoped");
            MPROF_ZONE_TEXT("hello", 5);
            MPROF_ZONE_VALUE(1234);
            MPROF_ZONE_NAME("renamed", 7);
            nested(9);
        }
        MPROF_ZONE_BEGIN_C("explicit", MPROF_COLOR_RENDERER);
        MPROF_ZONE_BEGIN("inner");
        MPROF_ZONE_END();
        MPROF_ZONE_END();
        MPROF_PLOT("fps", 59.5 + f);
        MPROF_PLOT_INT("memory", 1000 * f);
        MPROF_MESSAGE(MPROF_LOG_WARN, "literal message");
        MPROF_MESSAGEF(MPROF_LOG_ERROR, "formatted %d", f);
        MPROF_FRAME_MARK_NAMED("physics");
        MPROF_FRAME_BEGIN("load");
        MPROF_FRAME_END("load");
        MPROF_FRAME_MARK();
    }
    for (int l = MPROF_LOG_TRACE; l <= MPROF_LOG_FATAL; l++)
        MPROF_MESSAGEF(l, "level %d", l);
    mprof_shutdown();
    assert_false(mprof_is_recording());

    mprof_reader *r;
    char err[256];
    r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    mprof_event ev;
    int zb = 0, ze = 0, text = 0, value = 0, name = 0, fm = 0, fm_named = 0, fb = 0, fe = 0;
    int plot_f = 0, plot_i = 0, cfg = 0, warn = 0, error = 0, thread_named = 0, app = 0;
    int levels[7] = {0};
    uint32_t nested_loc = 0;
    int max_depth = 0, depth = 0;
    while (mprof_reader_next(r, &ev) == 1) {
        switch (ev.type) {
        case MPROF_EV_ZONE_BEGIN: {
            zb++;
            depth++;
            if (depth > max_depth)
                max_depth = depth;
            const mprof_srcloc_def *d = mprof_reader_srcloc(r, (uint32_t)ev.u[0]);
            assert_non_null(d);
            if (strcmp(d->name, "nested") == 0) {
                nested_loc = (uint32_t)ev.u[0];
                assert_int_equal(d->color, MPROF_COLOR_PHYSICS);
                assert_string_equal(d->function, "nested");
                assert_non_null(strstr(d->file, "test_profiler.c"));
            }
            if (strcmp(d->name, "explicit") == 0)
                assert_int_equal(d->color, MPROF_COLOR_RENDERER);
            break;
        }
        case MPROF_EV_ZONE_END:
            ze++;
            depth--;
            assert_true(depth >= 0);
            break;
        case MPROF_EV_ZONE_TEXT:
            text++;
            assert_int_equal(ev.str_len, 5);
            assert_memory_equal(ev.str, "hello", 5);
            break;
        case MPROF_EV_ZONE_VALUE:
            value++;
            assert_int_equal(ev.u[0], 1234);
            break;
        case MPROF_EV_ZONE_NAME:
            name++;
            assert_memory_equal(ev.str, "renamed", 7);
            break;
        case MPROF_EV_FRAME_MARK:
            if (ev.u[0] == 0)
                fm++;
            else {
                fm_named++;
                assert_string_equal(mprof_reader_string(r, (uint32_t)ev.u[0]), "physics");
            }
            break;
        case MPROF_EV_FRAME_BEGIN:
            fb++;
            assert_string_equal(mprof_reader_string(r, (uint32_t)ev.u[0]), "load");
            break;
        case MPROF_EV_FRAME_END:
            fe++;
            break;
        case MPROF_EV_PLOT_F64:
            assert_string_equal(mprof_reader_string(r, (uint32_t)ev.u[0]), "fps");
            assert_true(mprof_event_f64(&ev, 1) == 59.5 + plot_f);
            plot_f++;
            break;
        case MPROF_EV_PLOT_I64:
            assert_string_equal(mprof_reader_string(r, (uint32_t)ev.u[0]), "memory");
            assert_int_equal((int64_t)ev.u[1], 1000 * plot_i);
            plot_i++;
            break;
        case MPROF_EV_PLOT_CONFIG:
            cfg++;
            assert_int_equal(ev.u[1], MPROF_PLOT_FORMAT_MEMORY);
            assert_int_equal(ev.u[2], MPROF_PLOT_STYLE_STEP);
            assert_int_equal(ev.u[3], 0x112233);
            break;
        case MPROF_EV_MESSAGE:
            assert_true(ev.u[0] >= 1 && ev.u[0] <= 6);
            levels[ev.u[0]]++;
            if (ev.u[0] == MPROF_LOG_WARN && ev.str_len == 15) {
                assert_memory_equal(ev.str, "literal message", 15);
                warn++;
            }
            if (ev.u[0] == MPROF_LOG_ERROR && ev.str_len == 11)
                error++;
            break;
        case MPROF_EV_THREAD_NAME:
            assert_memory_equal(ev.str, "test-main", 9);
            thread_named++;
            break;
        case MPROF_EV_APP_INFO:
            assert_memory_equal(ev.str, "build 42", 8);
            app++;
            break;
        }
    }
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    assert_true(st.complete);
    assert_int_equal(st.truncated_bytes, 0);
    assert_string_equal(mprof_reader_thread(r, 1)->name, "test-main");
    mprof_reader_close(r);
    /* per frame: scoped + 10 nested + explicit + inner */
    assert_int_equal(zb, 3 * 13);
    assert_int_equal(ze, zb);
    assert_int_equal(max_depth, 11);
    assert_true(nested_loc != 0);
    assert_int_equal(text, 3);
    assert_int_equal(value, 3);
    assert_int_equal(name, 3);
    assert_int_equal(fm, 3);
    assert_int_equal(fm_named, 3);
    assert_int_equal(fb, 3);
    assert_int_equal(fe, 3);
    assert_int_equal(plot_f, 3);
    assert_int_equal(plot_i, 3);
    assert_int_equal(cfg, 1);
    assert_int_equal(warn, 3);
    assert_int_equal(error, 3);
    assert_int_equal(thread_named, 1);
    assert_int_equal(app, 1);
    for (int l = 1; l <= 6; l++)
        assert_true(levels[l] >= 1);
}

/* ---- timestamps ----------------------------------------------------------------------------- */

static void sleep_ms(int ms)
{
    struct timespec d = {0, ms * 1000000L};
    nanosleep(&d, NULL);
}

static void check_sleep_zone(const char *path)
{
    mprof_reader *r;
    char err[256];
    r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    mprof_event ev;
    int64_t begin = -1, dur = -1;
    while (mprof_reader_next(r, &ev) == 1) {
        if (ev.type == MPROF_EV_ZONE_BEGIN)
            begin = ev.ts_ns;
        if (ev.type == MPROF_EV_ZONE_END)
            dur = ev.ts_ns - begin;
    }
    mprof_reader_close(r);
    /* A 20 ms sleep: at least 20 ms, and not wildly more on a loaded machine. */
    assert_true(dur >= 19500000);
    assert_true(dur < 200000000);
}

static void test_clock_measures_time(void **state)
{
    (void)state;
    const char *path = start_capture("clock.mprof", 0);
    {
        MPROF_ZONE("sleep");
        sleep_ms(20);
    }
    mprof_shutdown();
    check_sleep_zone(path);
}

static void test_os_clock_fallback(void **state)
{
    (void)state;
    setenv("MPROF_TIMER", "clock", 1);
    const char *path = start_capture("osclock.mprof", 0);
    {
        MPROF_ZONE("sleep");
        sleep_ms(20);
    }
    mprof_shutdown();
    unsetenv("MPROF_TIMER");
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    assert_string_equal(mprof_reader_info(r, "timer"), "clock");
    mprof_reader_close(r);
    check_sleep_zone(path);
}

/* Timestamp deltas stored in units of the counter's step (TS_SCALE) come back exact: each zone
 * begins between two counter reads the program made around it (recorded as the zone's value),
 * across many small chunks, with the measured step and with a step of 4 that most deltas do
 * not fit (the collector must then drop the scale for the rest of the chunk). */
static void check_scaled_timestamps(const char *step)
{
    if (step)
        setenv("MPROF_TIMER_STEP", step, 1);
    const char *path = tu_temp_path("scale.mprof");
    mprof_config cfg = {0};
    cfg.capture_path = path;
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.chunk_bytes = 4096;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    enum { N = 20000 };
    for (int i = 0; i < N; i++) {
        uint64_t before = mprof__ticks();
        MPROF_ZONE_BEGIN("scaled");
        MPROF_ZONE_VALUE(before);
        MPROF_ZONE_END();
    }
    uint64_t after = mprof__ticks();
    mprof_shutdown();
    unsetenv("MPROF_TIMER_STEP");

    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    double ns_per_tick = strtod(mprof_reader_info(r, "ns_per_tick"), NULL);
    uint64_t tick0 = strtoull(mprof_reader_info(r, "tick0"), NULL, 10);
    mprof_event ev;
    int64_t begin = INT64_MIN, prev_end = INT64_MIN, prev_before = INT64_MIN;
    uint64_t zones = 0, values = 0;
    while (mprof_reader_next(r, &ev) == 1) {
        if (ev.type == MPROF_EV_ZONE_BEGIN) {
            begin = ev.ts_ns;
            assert_true(begin >= prev_end);
            zones++;
        } else if (ev.type == MPROF_EV_ZONE_VALUE) {
            /* The counter was read before the begin; the same conversion as the reader's. */
            int64_t b = (int64_t)((double)(int64_t)(ev.u[0] - tick0) * ns_per_tick);
            assert_true(b <= begin + 1);
            assert_true(b >= prev_before);
            prev_before = b;
            values++;
        } else if (ev.type == MPROF_EV_ZONE_END) {
            assert_true(ev.ts_ns >= begin);
            prev_end = ev.ts_ns;
        }
    }
    assert_string_equal(mprof_reader_error(r), "");
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    assert_true(st.chunks > 20);
    mprof_reader_close(r);
    assert_int_equal(zones, N);
    assert_int_equal(values, N);
    assert_true(prev_end <= (int64_t)((double)(int64_t)(after - tick0) * ns_per_tick) + 1);
}

static void test_scaled_timestamps_exact(void **state)
{
    (void)state;
    check_scaled_timestamps(NULL);
    check_scaled_timestamps("4");
}

/* A zone record with chosen timestamps, in the raw form the hot path writes. */
static void raw_zone(const mprof_srcloc *loc, uint64_t begin, uint64_t end)
{
    unsigned char *p = mprof__reserve(MPROF__ZONE_BEGIN_BYTES);
    assert_non_null(p);
    p[0] = MPROF__EV_ZONE_BEGIN;
    memcpy(p + 1, &begin, 8);
    memcpy(p + 9, &loc, 8);
    mprof__commit(p + MPROF__ZONE_BEGIN_BYTES);
    p = mprof__reserve(MPROF__ZONE_END_BYTES);
    assert_non_null(p);
    p[0] = MPROF__EV_ZONE_END;
    memcpy(p + 1, &end, 8);
    mprof__commit(p + MPROF__ZONE_END_BYTES);
}

/* A capture to a file with the counter's step stated (MPROF_TIMER_STEP) and the calling thread
 * registered by one zone named "first"; chunk_bytes 0 = the default. */
static const char *start_stepped(const char *name, const char *step, size_t chunk_bytes)
{
    setenv("MPROF_TIMER_STEP", step, 1);
    const char *path = tu_temp_path(name);
    mprof_config cfg = {0};
    cfg.capture_path = path;
    cfg.listen = MPROF_TOGGLE_OFF;
    cfg.chunk_bytes = chunk_bytes;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    unsetenv("MPROF_TIMER_STEP");
    {
        MPROF_ZONE("first");
    }
    return path;
}

/* Opens a capture and reads its clock, to convert expected ticks as the reader does. */
typedef struct clock_of {
    double ns_per_tick;
    uint64_t tick0;
} clock_of;

static mprof_reader *open_with_clock(const char *path, clock_of *c)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    c->ns_per_tick = strtod(mprof_reader_info(r, "ns_per_tick"), NULL);
    c->tick0 = strtoull(mprof_reader_info(r, "tick0"), NULL, 10);
    return r;
}

static int64_t clock_ns(const clock_of *c, uint64_t ticks)
{
    return (int64_t)((double)(int64_t)(ticks - c->tick0) * c->ns_per_tick);
}

/* One delta that is not a multiple of the step (a context switch record's timestamp is
 * anywhere between two steps) costs a TS_SCALE 1 and a TS_SCALE back, not the scale for the rest
 * of the chunk: 20,000 zones 400 ticks apart in steps of 8, one in 100 off the step by 3 ticks,
 * in 1 MiB chunks. Scaled, a zone is 5 bytes (tag, delta, location; tag, delta); unscaled 7
 * (each delta of 400 ticks needs two bytes), which the rest of the chunk paid before. Every
 * timestamp comes back exact. */
static void test_scale_restored_after_odd_delta(void **state)
{
    (void)state;
    static const mprof_srcloc loc = {"stepped", "test", "test_profiler.c", 1, 0};
    const char *path = start_stepped("rescale.mprof", "8", 0);
    enum { N = 20000, ODD_EVERY = 100, GAP = 400 };
    uint64_t t0 = (mprof__ticks() + 1000000) & ~(uint64_t)7, t = t0;
    for (int i = 0; i < N; i++, t += 2 * GAP) {
        uint64_t b = i % ODD_EVERY == ODD_EVERY / 2 ? t + 3 : t;
        raw_zone(&loc, b, b + GAP);
    }
    mprof_shutdown();

    clock_of clk;
    mprof_reader *r = open_with_clock(path, &clk);
    mprof_event ev;
    int i = -1, bad = 0;
    uint64_t expect_begin = 0;
    while (mprof_reader_next(r, &ev) == 1) {
        if (ev.type != MPROF_EV_ZONE_BEGIN && ev.type != MPROF_EV_ZONE_END)
            continue;
        if (ev.type == MPROF_EV_ZONE_BEGIN) {
            if (++i == 0)
                continue; /* "first" */
            int k = i - 1;
            expect_begin = t0 + (uint64_t)k * 2 * GAP + (k % ODD_EVERY == ODD_EVERY / 2 ? 3 : 0);
        } else if (i == 0) {
            continue;
        }
        uint64_t ticks = ev.type == MPROF_EV_ZONE_BEGIN ? expect_begin : expect_begin + GAP;
        if (ev.ts_ns != clock_ns(&clk, ticks))
            bad++;
    }
    assert_string_equal(mprof_reader_error(r), "");
    const char *raw = mprof_reader_end_info(r, "bytes_raw");
    assert_non_null(raw);
    uint64_t bytes_raw = strtoull(raw, NULL, 10);
    mprof_reader_close(r);
    assert_int_equal(i, N);
    assert_int_equal(bad, 0);
    /* 5 bytes a zone, 8 more for each odd one (two TS_SCALE pairs), and the definitions. */
    uint64_t bound = (uint64_t)N * 5 + (uint64_t)N / ODD_EVERY * 8 + 2048;
    if (bytes_raw > bound)
        print_message("bytes_raw %llu, expected at most %llu\n", (unsigned long long)bytes_raw,
                      (unsigned long long)bound);
    assert_true(bytes_raw <= bound);
}

/* Zones without children a few clock steps long are one byte each (ZONE_LEAF, format 1.2) and
 * come back exact: 30,000 zones in steps of 8 ticks, their begin 0..8 steps after the previous
 * timestamp and their length 0..16 steps (the ends of both ranges do not fit a ZONE_LEAF), at
 * three locations taken in turns of different lengths, every fifth one a parent with one child;
 * a record that does not fit is written in full. */
static void test_leaf_zones_exact(void **state)
{
    (void)state;
    static const mprof_srcloc locs[3] = {{"leaf_a", "test", "test_profiler.c", 1, 0},
                                         {"leaf_b", "test", "test_profiler.c", 2, 0},
                                         {"parent", "test", "test_profiler.c", 3, 0}};
    /* Many chunks: the leaf location is per chunk. */
    const char *path = start_stepped("leaf.mprof", "8", 16384);
    enum { N = 30000 };
    static uint64_t want[4 * N];
    static uint32_t want_loc[2 * N];
    size_t nw = 0, nl = 0;
    uint64_t t = (mprof__ticks() + 1000000) & ~(uint64_t)7;
    for (int i = 0; i < N; i++) {
        uint64_t b = t + 8 * (uint64_t)(i % 9), e = b + 8 * (uint64_t)((i * 7) % 17);
        const mprof_srcloc *loc = &locs[(i / (1 + i % 3)) % 2];
        if (i % 5 == 0) {
            /* A parent (its begin then its child's): neither is a leaf by itself. */
            unsigned char *p = mprof__reserve(MPROF__ZONE_BEGIN_BYTES);
            assert_non_null(p);
            const mprof_srcloc *pl = &locs[2];
            p[0] = MPROF__EV_ZONE_BEGIN;
            memcpy(p + 1, &b, 8);
            memcpy(p + 9, &pl, 8);
            mprof__commit(p + MPROF__ZONE_BEGIN_BYTES);
            want[nw++] = b;
            want_loc[nl++] = 3;
            raw_zone(loc, b + 8, e + 8);
            want[nw++] = b + 8;
            want[nw++] = e + 8;
            want_loc[nl++] = loc == &locs[0] ? 1 : 2;
            p = mprof__reserve(MPROF__ZONE_END_BYTES);
            assert_non_null(p);
            uint64_t pe = e + 16;
            p[0] = MPROF__EV_ZONE_END;
            memcpy(p + 1, &pe, 8);
            mprof__commit(p + MPROF__ZONE_END_BYTES);
            want[nw++] = pe;
            t = pe;
        } else {
            raw_zone(loc, b, e);
            want[nw++] = b;
            want[nw++] = e;
            want_loc[nl++] = loc == &locs[0] ? 1 : 2;
            t = e;
        }
    }
    mprof_shutdown();

    clock_of clk;
    mprof_reader *r = open_with_clock(path, &clk);
    mprof_event ev;
    size_t k = 0, kl = 0, bad_ts = 0, bad_loc = 0, zones = 0;
    int seen_first = 0;
    while (mprof_reader_next(r, &ev) == 1) {
        if (ev.type != MPROF_EV_ZONE_BEGIN && ev.type != MPROF_EV_ZONE_END)
            continue;
        if (!seen_first) {
            seen_first = ev.type == MPROF_EV_ZONE_END; /* "first" begins and ends */
            continue;
        }
        assert_true(k < nw);
        if (ev.ts_ns != clock_ns(&clk, want[k]))
            bad_ts++;
        k++;
        if (ev.type == MPROF_EV_ZONE_BEGIN) {
            const mprof_srcloc_def *d = mprof_reader_srcloc(r, (uint32_t)ev.u[0]);
            const char *wn = locs[want_loc[kl++] - 1].name;
            if (!d || strcmp(d->name, wn) != 0)
                bad_loc++;
            zones++;
        }
    }
    assert_string_equal(mprof_reader_error(r), "");
    mprof_reader_stats st;
    mprof_reader_get_stats(r, &st);
    uint64_t bytes_raw = strtoull(mprof_reader_end_info(r, "bytes_raw"), NULL, 10);
    mprof_reader_close(r);
    assert_int_equal(k, nw);
    assert_int_equal(bad_ts, 0);
    assert_int_equal(bad_loc, 0);
    assert_int_equal(zones, nl);
    assert_true(st.complete);
    assert_int_equal(st.events_missing, 0);
    /* In full records these are 180,490 raw bytes (5 a zone); here about 3 a zone, the leaves
     * one byte and their locations changing every 1-3 zones. */
    print_message("%zu zones in %llu raw bytes\n", zones, (unsigned long long)bytes_raw);
    assert_true(bytes_raw < 4 * (uint64_t)zones);
}

/* ---- threads -------------------------------------------------------------------------------- */

typedef struct worker_arg {
    uint64_t zones;
    int id;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    char name[32];
    snprintf(name, sizeof name, "worker-%d", a->id);
    MPROF_THREAD_NAME(name);
    for (uint64_t i = 0; i < a->zones; i++) {
        MPROF_ZONE("outer");
        {
            MPROF_ZONE("inner");
        }
    }
    return NULL;
}

static void test_threads_exact_counts(void **state)
{
    (void)state;
    enum { N = 3 };
    uint64_t per = (uint64_t)(1000000 * tu_scale());
    const char *path = start_capture("threads.mprof", (size_t)4 << 30);
    pthread_t t[N];
    worker_arg a[N];
    for (int i = 0; i < N; i++) {
        a[i] = (worker_arg){per, i};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &a[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    assert_int_equal(st.events_lost, 0);

    tu_counts c;
    assert_int_equal(tu_count_capture(path, &c), 0);
    assert_int_equal(c.by_type[MPROF_EV_ZONE_BEGIN], N * per * 2);
    assert_int_equal(c.by_type[MPROF_EV_ZONE_END], N * per * 2);
    assert_int_equal(c.by_type[MPROF_EV_THREAD_NAME], N);
    assert_int_equal(c.by_type[MPROF_EV_THREAD_EXIT], N);
    assert_int_equal(c.by_type[MPROF_EV_LOST], 0);
    assert_true(c.st.complete);

    /* The report's zone statistics are exact too. */
    char cmd[1024], out[1 << 16];
    snprintf(cmd, sizeof cmd, "%s report --json %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    char want[64];
    snprintf(want, sizeof want, "\"count\": %llu", (unsigned long long)(N * per));
    const char *outer = strstr(out, "\"name\": \"outer\"");
    const char *inner = strstr(out, "\"name\": \"inner\"");
    assert_non_null(outer);
    assert_non_null(inner);
    assert_non_null(strstr(outer, want));
    assert_non_null(strstr(inner, want));
    assert_non_null(strstr(out, "\"lost\": 0"));
}

/* ---- dropped events ------------------------------------------------------------------------- */

/* A drained block goes to any thread's next block (a pool), not back to malloc: threads that
 * start after others have exited record into blocks whose pages are already in memory (a fresh
 * page costs a fault: ~11 us on this project's VM). A first wave of two threads writes ~80
 * blocks each; after it has been drained, its blocks (first_wave fresh ones) are all in the
 * pool. Seven more waves of two new threads then write at most 80 % of that many blocks in all,
 * so whatever the collector's pace they find every block in the pool: fewer than one fresh block
 * a wave (none expected). Without the pool each new thread mallocs at least its first block. Every
 * zone arrives. */
/* ---- async spans ---------------------------------------------------------------------------- */

#define N_ASYNC 200

static void *async_ender(void *arg)
{
    (void)arg;
    /* Ends every span the main thread began, in reverse order (spans of a track overlap). */
    for (int i = N_ASYNC - 1; i >= 0; i--)
        MPROF_ASYNC_END("loads", (uint64_t)i * 7 + 1);
    MPROF_ASYNC_END("jobs", 42);
    return NULL;
}

static void test_async_spans_cross_threads(void **state)
{
    (void)state;
    const char *path = start_capture("async.mprof", 0);
    for (int i = 0; i < N_ASYNC; i++) {
        if (i % 2)
            MPROF_ASYNC_BEGIN("loads", (uint64_t)i * 7 + 1, "texture");
        else
            MPROF_ASYNC_BEGIN_DYN("loads", (uint64_t)i * 7 + 1, i % 4 ? "odd name" : "mesh 0");
    }
    MPROF_ASYNC_BEGIN("jobs", 42, "bake");
    /* What does not pair: an end without a begin, an id begun again while open, a begin never
     * ended. */
    MPROF_ASYNC_END("odd", 1);
    MPROF_ASYNC_BEGIN("odd", 2, "twice");
    MPROF_ASYNC_BEGIN("odd", 2, "twice");
    MPROF_ASYNC_END("odd", 2);
    MPROF_ASYNC_BEGIN("odd", 3, "never ended");
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, async_ender, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    mprof_shutdown();

    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    assert_non_null(r);
    mprof_event ev;
    int begins = 0, dyn = 0, ends = 0, jobs = 0;
    uint32_t begin_thread = 0, end_thread = 0;
    int64_t last_begin = 0, first_end = INT64_MAX, total = 0, max = 0;
    /* File order is time order within a thread only: an end can be read before its begin. */
    static char seen_begin[N_ASYNC], seen_end[N_ASYNC];
    static int64_t began[N_ASYNC], ended[N_ASYNC];
    while (mprof_reader_next(r, &ev) == 1) {
        if (ev.type != MPROF_EV_ASYNC_BEGIN && ev.type != MPROF_EV_ASYNC_BEGIN_DYN &&
            ev.type != MPROF_EV_ASYNC_END)
            continue;
        const char *track = mprof_reader_string(r, (uint32_t)ev.u[0]);
        assert_non_null(track);
        if (strcmp(track, "jobs") == 0) {
            assert_int_equal(ev.u[1], 42);
            jobs++;
            continue;
        }
        if (strcmp(track, "odd") == 0)
            continue;
        assert_string_equal(track, "loads");
        assert_int_equal((ev.u[1] - 1) % 7, 0);
        int i = (int)((ev.u[1] - 1) / 7);
        assert_true(i >= 0 && i < N_ASYNC);
        if (ev.type == MPROF_EV_ASYNC_END) {
            assert_int_equal(seen_end[i], 0);
            seen_end[i] = 1;
            ended[i] = ev.ts_ns;
            ends++;
            end_thread = ev.thread;
            if (ev.ts_ns < first_end)
                first_end = ev.ts_ns;
            continue;
        }
        assert_int_equal(seen_begin[i], 0);
        seen_begin[i] = 1;
        began[i] = ev.ts_ns;
        begins++;
        begin_thread = ev.thread;
        last_begin = ev.ts_ns;
        if (ev.type == MPROF_EV_ASYNC_BEGIN) {
            assert_string_equal(mprof_reader_string(r, (uint32_t)ev.u[2]), "texture");
        } else {
            dyn++;
            const char *want = i % 4 ? "odd name" : "mesh 0";
            assert_int_equal(ev.str_len, strlen(want));
            assert_memory_equal(ev.str, want, ev.str_len);
        }
    }
    mprof_reader_close(r);
    assert_int_equal(begins, N_ASYNC);
    assert_int_equal(dyn, N_ASYNC / 2);
    assert_int_equal(ends, N_ASYNC);
    assert_int_equal(jobs, 2);
    assert_true(begin_thread != 0 && end_thread != 0 && begin_thread != end_thread);
    assert_true(first_end >= last_begin); /* every end came after the last begin */
    for (int i = 0; i < N_ASYNC; i++) {
        total += ended[i] - began[i];
        if (ended[i] - began[i] > max)
            max = ended[i] - began[i];
    }

    /* mprof report pairs them the same way: counts and durations exact, anomalies counted. */
    char cmd[1024], out[1 << 16], want[160];
    snprintf(cmd, sizeof cmd, "%s report --json %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    const char *loads = strstr(out, "\"track\": \"loads\"");
    assert_non_null(loads);
    snprintf(want, sizeof want, "\"count\": %d,\n      \"total_ns\": %lld,", N_ASYNC,
             (long long)total);
    assert_non_null(strstr(loads, want));
    snprintf(want, sizeof want, "\"max_ns\": %lld,\n      \"open_at_end\": 0,\n      "
             "\"unmatched_ends\": 0,\n      \"reused_ids\": 0", (long long)max);
    assert_non_null(strstr(loads, want));
    const char *odd = strstr(out, "\"track\": \"odd\"");
    assert_non_null(odd);
    assert_non_null(strstr(odd, "\"count\": 2,")); /* the reused span and its successor */
    assert_non_null(strstr(odd, "\"open_at_end\": 1,\n      \"unmatched_ends\": 1,\n      "
                                "\"reused_ids\": 1"));
    assert_non_null(strstr(strstr(out, "\"track\": \"jobs\""), "\"count\": 1,"));
}

static void test_blocks_recycled_across_threads(void **state)
{
    (void)state;
    enum { WAVES = 8, N = 2, RAW_PER_ITER = 52 /* two nested zones: 17 + 17 + 9 + 9 bytes */ };
    const char *path = start_capture("waves.mprof", (size_t)1 << 30);
    uint64_t first_wave = 0, per = 100000, total = 0;
    uint64_t base = atomic_load(&mprof__blocks_allocated);
    for (int w = 0; w < WAVES; w++) {
        pthread_t t[N];
        worker_arg a[N];
        for (int i = 0; i < N; i++) {
            a[i] = (worker_arg){per, w * N + i};
            assert_int_equal(pthread_create(&t[i], NULL, worker, &a[i]), 0);
        }
        for (int i = 0; i < N; i++)
            pthread_join(t[i], NULL);
        total += N * per;
        mprof_flush(); /* the collector drains the exited threads and pools their blocks */
        if (w == 0) {
            first_wave = atomic_load(&mprof__blocks_allocated) - base;
            assert_true(first_wave >= 4);
            uint64_t pooled = first_wave < 256 ? first_wave : 256;
            /* Each thread of a later wave: at most 80 % of its share of the pooled blocks,
             * less one for its thread name and exit. */
            per = ((pooled * 4 / 5) / N - 1) * MPROF__BLOCK_BYTES / RAW_PER_ITER;
        }
    }
    uint64_t later = atomic_load(&mprof__blocks_allocated) - base - first_wave;
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    print_message("fresh blocks: first wave %llu, the %d waves after it %llu\n",
                  (unsigned long long)first_wave, WAVES - 1, (unsigned long long)later);
    assert_int_equal(st.events_lost, 0);
    assert_true(later < WAVES - 1);
    tu_counts c;
    assert_int_equal(tu_count_capture(path, &c), 0);
    assert_int_equal(c.by_type[MPROF_EV_ZONE_BEGIN], total * 2);
    assert_int_equal(c.by_type[MPROF_EV_ZONE_END], total * 2);
    assert_int_equal(c.by_type[MPROF_EV_THREAD_EXIT], WAVES * N);
    assert_true(c.st.complete);
}

static void test_tiny_cap_counts_drops(void **state)
{
    (void)state;
    /* Two 64 KiB blocks and a burst far larger than the collector can drain meanwhile. */
    const char *path = start_capture("drops.mprof", 2 * 64 * 1024 + 1024);
    uint64_t produced = 0;
    for (int i = 0; i < 2000000; i++) {
        MPROF_ZONE("burst");
        produced += 2;
    }
    mprof_stats st;
    mprof_get_stats(&st);
    mprof_shutdown();
    assert_true(st.events_lost > 0);
    assert_true(st.peak_buffered_bytes <= 2 * 64 * 1024 + 1024 + 4096);

    tu_counts c;
    assert_int_equal(tu_count_capture(path, &c), 0);
    uint64_t recorded = c.by_type[MPROF_EV_ZONE_BEGIN] + c.by_type[MPROF_EV_ZONE_END];
    /* Every event is either in the capture or counted as lost. */
    assert_int_equal(recorded + st.events_lost, produced);

    char cmd[1024], out[1 << 16], want[64];
    snprintf(cmd, sizeof cmd, "%s report --json %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    snprintf(want, sizeof want, "\"lost\": %llu", (unsigned long long)st.events_lost);
    assert_non_null(strstr(out, want));
    snprintf(cmd, sizeof cmd, "%s report %s", tu_mprof_bin(), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "events were dropped"));
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

static void test_startup_twice_and_restart(void **state)
{
    (void)state;
    const char *p1 = start_capture("s1.mprof", 0);
    assert_int_equal(mprof_startup(NULL), MPROF_ERR_STATE);
    {
        MPROF_ZONE("first");
    }
    mprof_shutdown();
    mprof_shutdown(); /* harmless */
    {
        MPROF_ZONE("not recorded");
    }
    const char *p2 = start_capture("s2.mprof", 0);
    {
        MPROF_ZONE("second");
    }
    mprof_flush();
    mprof_stats st;
    mprof_get_stats(&st);
    assert_true(st.bytes_written > 0);
    mprof_shutdown();
    tu_counts c1, c2;
    assert_int_equal(tu_count_capture(p1, &c1), 0);
    assert_int_equal(tu_count_capture(p2, &c2), 0);
    assert_int_equal(c1.by_type[MPROF_EV_ZONE_BEGIN], 1);
    assert_int_equal(c2.by_type[MPROF_EV_ZONE_BEGIN], 1);
    /* Each capture announces its own definitions. */
    assert_int_equal(c2.by_type[MPROF_EV_DEF_SRCLOC], 1);
    assert_string_equal(mprof_result_name(MPROF_ERR_IO), "MPROF_ERR_IO");
    assert_string_equal(mprof_result_str(MPROF_OK), "success");
}

static void test_unwritable_path_fails_cleanly(void **state)
{
    (void)state;
    mprof_config cfg = {0};
    cfg.capture_path = "/proc/no/such/dir/x.mprof";
    cfg.listen = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_ERR_IO);
    assert_false(mprof_is_recording());
    /* Nothing started: a valid startup works afterwards. */
    start_capture("after.mprof", 0);
    mprof_shutdown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_macro),
        cmocka_unit_test(test_clock_measures_time),
        cmocka_unit_test(test_os_clock_fallback),
        cmocka_unit_test(test_scaled_timestamps_exact),
        cmocka_unit_test(test_scale_restored_after_odd_delta),
        cmocka_unit_test(test_leaf_zones_exact),
        cmocka_unit_test(test_threads_exact_counts),
        cmocka_unit_test(test_async_spans_cross_threads),
        cmocka_unit_test(test_blocks_recycled_across_threads),
        cmocka_unit_test(test_tiny_cap_counts_drops),
        cmocka_unit_test(test_startup_twice_and_restart),
        cmocka_unit_test(test_unwritable_path_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
