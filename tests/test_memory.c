/*
 * test_memory.c - allocation events, callstacks, the module map, the symbolizer and the memory
 * pass, end to end: a real capture from real threads, read back by the real analysis.
 *
 * Known input, exact expectations: three allocations from leak_site() are never freed, so the
 * leak set is exactly one group of 3 x 100 bytes whose top frame symbolises to leak_site in this
 * file; blocks handed to another thread and freed there all pair up (no unmatched frees); an
 * allocator-kit arena reset discards exactly what it allocated.
 */
#include "mprof/alloc.h"
#include "mprof/mprof.h"

#include "analysis/analysis.h"
#include "analysis/passes.h"
#include "analysis/symbolize.h"
#include "callstack.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* Fault injection: calloc is interposed so that a test can make it fail (the analysis has no
 * allocator hook of its own). Not under AddressSanitizer or ThreadSanitizer, which own calloc;
 * those tests then skip. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CAN_FAIL_CALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CAN_FAIL_CALLOC 0
#endif
#endif
#ifndef CAN_FAIL_CALLOC
#define CAN_FAIL_CALLOC 1
extern void *__libc_calloc(size_t n, size_t size);
#endif
static long calloc_fail_at;  /* the Nth calloc from now fails; 0 = none */
static int calloc_fail_all; /* every calloc fails */

#if CAN_FAIL_CALLOC
void *calloc(size_t n, size_t size)
{
    if (calloc_fail_all || (calloc_fail_at > 0 && --calloc_fail_at == 0))
        return NULL;
    return __libc_calloc(n, size);
}
#endif

static char capture_path[256];

static void start_capture(const char *tag)
{
    snprintf(capture_path, sizeof capture_path, "/tmp/mprof_test_memory_%d_%s.mprof", (int)getpid(),
             tag);
    mprof_config cfg = {0};
    cfg.capture_path = capture_path;
    cfg.listen = MPROF_TOGGLE_OFF;
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
}

static mprof_analysis *stop_and_analyse(void)
{
    mprof_shutdown();
    char err[512];
    mprof_analysis_opts o = {.top_n = 20, .passes = "memory"};
    mprof_analysis *a = mprof_analysis_run(capture_path, &o, err, sizeof err);
    if (!a)
        fail_msg("analysis failed: %s", err);
    return a;
}

/* Module map straight from mprof__modules_emit, decoded as a reader would. */
static mprof_symbolizer *symbolizer_for_self(void)
{
    mprof_buf b = {0};
    mprof__modules_emit(&b);
    assert_true(b.len > 0);
    mprof_symbolizer *s = mprof_symbolizer_new();
    assert_non_null(s);
    const unsigned char *p = b.data, *end = b.data + b.len;
    int n = 0;
    while (p < end) {
        assert_int_equal(*p++, MPROF_EV_DEF_MODULE);
        uint64_t start, size, pl, bl;
        assert_int_equal(mprof_get_varint(&p, end, &start), 0);
        assert_int_equal(mprof_get_varint(&p, end, &size), 0);
        assert_int_equal(mprof_get_varint(&p, end, &pl), 0);
        char path[4096];
        assert_true(pl < sizeof path);
        memcpy(path, p, pl);
        path[pl] = 0;
        p += pl;
        assert_int_equal(mprof_get_varint(&p, end, &bl), 0);
        char bid[160];
        assert_true(bl < sizeof bid);
        memcpy(bid, p, bl);
        bid[bl] = 0;
        p += bl;
        assert_int_equal(path[0], '/');
        if (n++ == 0) /* the main program comes first, with a build id */
            assert_true(bl >= 16);
        assert_int_equal(mprof_symbolizer_add_module(s, start, size, path, bid), 0);
    }
    mprof_buf_free(&b);
    return s;
}

static int capture_line;

static __attribute__((noinline)) int capture_here(uint64_t *frames, int method)
{
    capture_line = __LINE__ + 1;
    int n = mprof__callstack_capture_with(method, frames, 8, 0);
    __asm__ __volatile__("" ::: "memory"); /* keep the call from becoming a tail call */
    return n;
}

static __attribute__((noinline)) int capture_outer(uint64_t *frames, int method)
{
    int n = capture_here(frames, method);
    __asm__ __volatile__("" ::: "memory");
    return n;
}

static void test_callstack_symbolised(void **state)
{
    (void)state;
    mprof_symbolizer *s = symbolizer_for_self();
    for (int method = MPROF__CS_UNWIND; method <= MPROF__CS_FP; method++) {
        uint64_t frames[8];
        int n = capture_outer(frames, method);
        assert_true(n >= 3);
        mprof_symbol sym;
        assert_int_equal(mprof_symbolizer_lookup(s, frames[0], &sym), 1);
        assert_string_equal(sym.function, "capture_here");
        assert_non_null(sym.file);
        assert_non_null(strstr(sym.file, "test_memory.c"));
        assert_int_equal(sym.line, capture_line);
        assert_int_equal(mprof_symbolizer_lookup(s, frames[1], &sym), 1);
        assert_string_equal(sym.function, "capture_outer");
        char buf[256];
        mprof_symbolizer_format(s, frames[0], buf, sizeof buf);
        assert_non_null(strstr(buf, "capture_here (tests/test_memory.c:"));
    }
    /* An address in no module. */
    mprof_symbol sym;
    assert_int_equal(mprof_symbolizer_lookup(s, 0x10, &sym), 0);
    assert_null(sym.module);
    mprof_symbolizer_free(s);
}

static void test_symbolizer_refuses_rebuilt_module(void **state)
{
    (void)state;
    mprof_symbolizer *s = mprof_symbolizer_new();
    char self[4096];
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(l > 0);
    self[l] = 0;
    /* Same file, wrong build id: must not be trusted. */
    assert_int_equal(mprof_symbolizer_add_module(s, 0x100000, 0x100000, self, "00112233"), 0);
    assert_int_equal(mprof_symbolizer_add_module(s, 0x300000, 0x1000, "/nonexistent/lib.so", ""), 0);
    mprof_symbol sym;
    assert_int_equal(mprof_symbolizer_lookup(s, 0x100100, &sym), 0);
    assert_string_equal(sym.module, self);
    assert_int_equal(sym.module_offset, 0x100);
    assert_int_equal(mprof_symbolizer_lookup(s, 0x300010, &sym), 0);
    char buf[256];
    assert_string_equal(mprof_symbolizer_format(s, 0x300010, buf, sizeof buf), "nonexistent/lib.so+0x10");
    const char *w = mprof_symbolizer_warning(s);
    assert_non_null(w);
    assert_non_null(strstr(w, "build id differs"));
    assert_non_null(strstr(w, "/nonexistent/lib.so: not found"));
    mprof_symbolizer_free(s);
}

/* ---- end to end ----------------------------------------------------------------------------- */

static void *leaked[3];
static volatile int n_leaks = 3;

static __attribute__((noinline)) void leak_site(int i)
{
    leaked[i] = malloc(100);
    MPROF_ALLOC_CS(leaked[i], 100, 8);
    __asm__ __volatile__("" ::: "memory");
}

static __attribute__((noinline)) void churn_site(void)
{
    void *p = malloc(40);
    MPROF_ALLOC_CS(p, 40, 8);
    MPROF_FREE(p);
    free(p);
}

typedef struct handoff {
    void *blocks[50];
} handoff;

static void *free_on_other_thread(void *arg)
{
    handoff *h = arg;
    for (int i = 0; i < 50; i++) {
        MPROF_FREE_NAMED(h->blocks[i], "xfer");
        free(h->blocks[i]);
    }
    return NULL;
}

static void test_capture_leaks_pools_and_threads(void **state)
{
    (void)state;
    start_capture("e2e");
    for (int i = 0; i < 10; i++)
        churn_site();
    MPROF_FRAME_MARK();
    for (int i = 0; i < n_leaks; i++) /* volatile bound: one call site, not an unrolled three */
        leak_site(i);
    /* Allocations handed to another thread and freed there. */
    handoff h;
    for (int i = 0; i < 50; i++) {
        h.blocks[i] = malloc(64);
        MPROF_ALLOC_NAMED(h.blocks[i], 64, "xfer");
    }
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, free_on_other_thread, &h), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    MPROF_FRAME_MARK();
    /* The allocator kit: an arena reset each frame, with callstacks. */
    mprof_arena *ar = NULL;
    mprof_arena_desc d = {.name = "frame_arena", .capacity_bytes = 4096, .callstack_depth = 4};
    assert_int_equal(mprof_arena_create(&d, &ar), MPROF_OK);
    for (int f = 0; f < 3; f++) {
        for (int i = 0; i < 5; i++)
            assert_non_null(mprof_arena_alloc(ar, 100, 0));
        mprof_arena_reset(ar);
        MPROF_FRAME_MARK();
    }
    mprof_arena_destroy(ar);
    /* A pool whose blocks live exactly two frames. */
    mprof_pool *pl = NULL;
    mprof_pool_desc pd = {.name = "nodes", .block_bytes = 32, .n_blocks = 8};
    assert_int_equal(mprof_pool_create(&pd, &pl), MPROF_OK);
    void *b = mprof_pool_alloc(pl);
    MPROF_FRAME_MARK();
    MPROF_FRAME_MARK();
    assert_int_equal(mprof_pool_free(pl, b), MPROF_OK);
    mprof_pool_destroy(pl);

    mprof_analysis *a = stop_and_analyse();
    mprof_pool_result p;
    assert_int_equal(mprof__memory_pool(a, "heap", &p), 0);
    assert_int_equal(p.allocs, 13);
    assert_int_equal(p.frees, 10);
    assert_int_equal(p.unmatched_frees, 0);
    assert_int_equal(p.live_count, 3);
    assert_int_equal(p.live_bytes, 300);
    assert_int_equal(p.peak_bytes, 300);
    assert_int_equal(p.lifetime_count, 10);

    /* Exactly one leak group: 3 x 100 bytes from leak_site. */
    mprof_leak_result lk;
    assert_int_equal(mprof__memory_leak(a, 0, &lk), 0);
    assert_string_equal(lk.pool, "heap");
    assert_int_equal(lk.count, 3);
    assert_int_equal(lk.bytes, 300);
    assert_int_equal(mprof__memory_leak(a, 1, &lk), -1);
    mprof__memory_leak(a, 0, &lk);
    uint32_t depth = 0;
    const uint64_t *fr = mprof_reader_callstack(mprof_analysis_reader(a), lk.callstack, &depth);
    assert_non_null(fr);
    assert_true(depth >= 2 && depth <= 8);
    /* The peak was reached by the third leak: the same callstack. */
    assert_int_equal(p.peak_callstack, lk.callstack);

    /* Symbolised from the capture's own module map, through the report. */
    char *text = NULL;
    size_t tlen = 0;
    FILE *mf = open_memstream(&text, &tlen);
    mprof_analysis_print_text(a, mf);
    fclose(mf);
    assert_non_null(strstr(text, "Leaks: 3 allocations (300 B) still live at the end"));
    assert_non_null(strstr(text, "leak_site (tests/test_memory.c:"));
    free(text);
    mf = open_memstream(&text, &tlen);
    mprof_analysis_print_json(a, mf);
    fclose(mf);
    assert_non_null(strstr(text, "\"memory\""));
    assert_non_null(strstr(text, "leak_site"));
    assert_non_null(strstr(text, "\"leaks\""));
    free(text);

    assert_int_equal(mprof__memory_pool(a, "xfer", &p), 0);
    assert_int_equal(p.allocs, 50);
    assert_int_equal(p.frees, 50);
    assert_int_equal(p.unmatched_frees, 0);
    assert_int_equal(p.live_count, 0);
    assert_int_equal(p.peak_bytes, 50 * 64);

    assert_int_equal(mprof__memory_pool(a, "frame_arena", &p), 0);
    assert_int_equal(p.allocs, 15);
    assert_int_equal(p.discards, 3);
    assert_int_equal(p.discarded_allocs, 15);
    assert_int_equal(p.live_count, 0);
    assert_int_equal(p.peak_bytes, 500);
    assert_int_equal(p.lifetime_frames_max, 0); /* reset before each frame mark */
    assert_true(p.peak_callstack != 0);

    assert_int_equal(mprof__memory_pool(a, "nodes", &p), 0);
    assert_int_equal(p.allocs, 1);
    assert_int_equal(p.frees, 1);
    assert_int_equal(p.lifetime_frames_p50, 2);
    mprof_analysis_free(a);
    remove(capture_path);
}

static __attribute__((noinline)) void *fp_site(void)
{
    void *p = malloc(24);
    MPROF_ALLOC_CS(p, 24, 8);
    __asm__ __volatile__("" ::: "memory");
    return p;
}

/* The frame-pointer method through the real allocation path (library built with frame
 * pointers): the recorded stack starts in the instrumented function. */
static void test_fp_method_end_to_end(void **state)
{
    (void)state;
    mprof__callstack_set_method(MPROF__CS_FP);
    start_capture("fp");
    void *p = fp_site();
    mprof_analysis *a = stop_and_analyse();
    mprof__callstack_set_method(MPROF__CS_UNWIND);
    mprof_leak_result lk;
    assert_int_equal(mprof__memory_leak(a, 0, &lk), 0);
    assert_int_equal(lk.count, 1);
    uint32_t depth = 0;
    const uint64_t *fr = mprof_reader_callstack(mprof_analysis_reader(a), lk.callstack, &depth);
    assert_non_null(fr);
    assert_true(depth >= 2);
    char *text = NULL;
    size_t tlen = 0;
    FILE *mf = open_memstream(&text, &tlen);
    mprof_analysis_print_text(a, mf);
    fclose(mf);
    const char *leaks = strstr(text, "Leaks:");
    assert_non_null(leaks);
    const char *first = strstr(leaks, "        ");
    assert_non_null(first);
    assert_true(strncmp(first + 8, "fp_site (tests/test_memory.c:", 29) == 0);
    assert_non_null(strstr(leaks, "test_fp_method_end_to_end (tests/test_memory.c:"));
    free(text);
    mprof_analysis_free(a);
    free(p);
    remove(capture_path);
}

/* ---- out-of-order input, written by hand ----------------------------------------------------- */

static unsigned char *put_str(unsigned char *o, const char *str)
{
    size_t n = strlen(str);
    o = mprof_put_varint(o, n);
    memcpy(o, str, n);
    return o + n;
}

static unsigned char *put_ts(unsigned char *o, uint64_t *last, uint64_t ts)
{
    o = mprof_put_varint(o, mprof_zigzag((int64_t)(ts - *last)));
    *last = ts;
    return o;
}

static void write_capture(const unsigned char *ev, size_t len)
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
    snprintf(capture_path, sizeof capture_path, "/tmp/mprof_test_memory_%d_order.mprof",
             (int)getpid());
    FILE *f = fopen(capture_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file.data, 1, file.len, f), file.len);
    fclose(f);
    mprof_buf_free(&file);
    mprof_buf_free(&info);
}

/* Thread 2's part is written first although thread 1's happened earlier, and far enough apart
 * (seconds) that the reorder window has already let thread 2's events through: the free of 0x100
 * is read before its allocation, the discard of the arena before an allocation made in it. */
static void test_out_of_order_beyond_window(void **state)
{
    (void)state;
    unsigned char ev[512], *o = ev;
    uint64_t t1 = 0, t2 = 0;
    *o++ = MPROF_EV_DEF_STRING;
    o = mprof_put_varint(o, 1);
    o = put_str(o, "arena");
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 2);
    *o++ = MPROF_EV_FREE; /* frees 0x100, allocated at 1 s on thread 1 */
    o = put_ts(o, &t2, 2000000000);
    o = mprof_put_varint(o, 0x100);
    o = mprof_put_varint(o, 0);
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_FREE; /* never allocated in the capture */
    o = put_ts(o, &t2, 2100000000);
    o = mprof_put_varint(o, 0x900);
    o = mprof_put_varint(o, 0);
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_POOL_DISCARD;
    o = put_ts(o, &t2, 3000000000);
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    *o++ = MPROF_EV_ALLOC;
    o = put_ts(o, &t1, 1000000000);
    o = mprof_put_varint(o, 0x100);
    o = mprof_put_varint(o, 48);
    o = mprof_put_varint(o, 0);
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_ALLOC; /* in the arena, before its discard */
    o = put_ts(o, &t1, 2500000000);
    o = mprof_put_varint(o, 0x200);
    o = mprof_put_varint(o, 16);
    o = mprof_put_varint(o, 1);
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_ALLOC; /* a leak */
    o = put_ts(o, &t1, 4000000000);
    o = mprof_put_varint(o, 0x300);
    o = mprof_put_varint(o, 8);
    o = mprof_put_varint(o, 0);
    o = mprof_put_varint(o, 0);
    write_capture(ev, (size_t)(o - ev));

    char err[512];
    mprof_analysis_opts opts = {.top_n = 20, .passes = "memory"};
    mprof_analysis *a = mprof_analysis_run(capture_path, &opts, err, sizeof err);
    if (!a)
        fail_msg("analysis failed: %s", err);
    mprof_pool_result p;
    assert_int_equal(mprof__memory_pool(a, "heap", &p), 0);
    assert_int_equal(p.allocs, 2);
    assert_int_equal(p.frees, 1);
    assert_int_equal(p.unmatched_frees, 1);
    assert_int_equal(p.live_count, 1);
    assert_int_equal(p.live_bytes, 8);
    assert_int_equal(p.lifetime_count, 1);
    assert_int_equal(p.lifetime_max_ns, 1000000000);
    assert_int_equal(mprof__memory_pool(a, "arena", &p), 0);
    assert_int_equal(p.allocs, 1);
    assert_int_equal(p.discards, 1);
    assert_int_equal(p.discarded_allocs, 1);
    assert_int_equal(p.live_count, 0);
    mprof_leak_result lk;
    assert_int_equal(mprof__memory_leak(a, 0, &lk), 0);
    assert_int_equal(lk.count, 1);
    assert_int_equal(lk.bytes, 8);
    assert_int_equal(mprof__memory_leak(a, 1, &lk), -1);
    mprof_analysis_free(a);
    remove(capture_path);
}

/* A crafted capture with more pools than key_of can tell apart (pool index + 1 lives in 16 bits)
 * made keys collide and an address 0 gave key 0, the map's empty slot, so a free followed an
 * uninitialised entry. Pools past the first 0xffff and null addresses are now refused and
 * counted. */
static void test_too_many_pools_and_null_address(void **state)
{
    (void)state;
    enum { N = 0xffff };
    size_t cap = (size_t)N * 40 + 256;
    unsigned char *ev = malloc(cap), *o = ev;
    assert_non_null(ev);
    uint64_t t = 0;
    char name[16];
    for (uint32_t n = 1; n <= N; n++) {
        *o++ = MPROF_EV_DEF_STRING;
        o = mprof_put_varint(o, n);
        snprintf(name, sizeof name, "p%u", n);
        o = put_str(o, name);
    }
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    for (uint32_t n = 1; n <= N; n++) { /* pools 0 .. 0xfffe */
        *o++ = MPROF_EV_ALLOC;
        o = put_ts(o, &t, n);
        o = mprof_put_varint(o, 0x1000 + n);
        o = mprof_put_varint(o, 8);
        o = mprof_put_varint(o, n);
        o = mprof_put_varint(o, 0);
    }
    for (int k = 0; k < 2; k++) { /* the 0x10000th pool ("heap"): refused */
        *o++ = MPROF_EV_ALLOC;
        o = put_ts(o, &t, 70000 + k);
        o = mprof_put_varint(o, 0x2000 + k);
        o = mprof_put_varint(o, 8);
        o = mprof_put_varint(o, 0);
        o = mprof_put_varint(o, 0);
    }
    *o++ = MPROF_EV_ALLOC; /* a null address: refused */
    o = put_ts(o, &t, 80000);
    o = mprof_put_varint(o, 0);
    o = mprof_put_varint(o, 8);
    o = mprof_put_varint(o, 1);
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_FREE; /* likewise */
    o = put_ts(o, &t, 80001);
    o = mprof_put_varint(o, 0);
    o = mprof_put_varint(o, 1);
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_FREE; /* a real free in the last pool kept */
    o = put_ts(o, &t, 80002);
    o = mprof_put_varint(o, 0x1000 + N);
    o = mprof_put_varint(o, N);
    o = mprof_put_varint(o, 0);
    assert_true((size_t)(o - ev) <= cap);
    write_capture(ev, (size_t)(o - ev));
    free(ev);

    char err[512];
    mprof_analysis_opts opts = {.top_n = 5, .passes = "memory"};
    mprof_analysis *a = mprof_analysis_run(capture_path, &opts, err, sizeof err);
    if (!a)
        fail_msg("analysis failed: %s", err);
    mprof_pool_result p;
    assert_int_equal(mprof__memory_pool(a, "p1", &p), 0);
    assert_int_equal(p.allocs, 1);
    assert_int_equal(p.frees, 0);
    assert_int_equal(p.live_bytes, 8);
    snprintf(name, sizeof name, "p%u", (unsigned)N);
    assert_int_equal(mprof__memory_pool(a, name, &p), 0);
    assert_int_equal(p.allocs, 1);
    assert_int_equal(p.frees, 1);
    assert_int_equal(p.live_count, 0);
    assert_int_equal(mprof__memory_pool(a, "heap", &p), -1);
    char *text = NULL;
    size_t text_len = 0;
    FILE *out = open_memstream(&text, &text_len);
    assert_non_null(out);
    mprof_analysis_print_text(a, out);
    fclose(out);
    assert_non_null(strstr(text, "4 memory events ignored as corrupt"));
    free(text);
    mprof_analysis_free(a);
    remove(capture_path);
}

/* Capture values that overflowed signed arithmetic (undefined behaviour): sizes near 2^63 summed
 * into live bytes, and timestamps 10^19 ns apart subtracted for a lifetime, a lock wait or a
 * lock hold. Such sizes and intervals are now ignored and counted as corrupt. The locks pass is
 * checked here too, on the same hand-written capture. */
static void test_corrupt_sizes_and_times(void **state)
{
    (void)state;
    const uint64_t early = (uint64_t)-5000000000000000000ll, late = 5000000000000000000ull;
    unsigned char ev[512], *o = ev;
    uint64_t t = 0;
    *o++ = MPROF_EV_DEF_STRING;
    o = mprof_put_varint(o, 1);
    o = put_str(o, "big");
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    for (int k = 0; k < 3; k++) { /* sizes past 2^48: refused */
        *o++ = MPROF_EV_ALLOC;
        o = put_ts(o, &t, 10 + k);
        o = mprof_put_varint(o, 0x100 + k);
        o = mprof_put_varint(o, 0x7fffffffffffffffull);
        o = mprof_put_varint(o, 1);
        o = mprof_put_varint(o, 0);
    }
    *o++ = MPROF_EV_ALLOC; /* the largest size accepted */
    o = put_ts(o, &t, 20);
    o = mprof_put_varint(o, 0x200);
    o = mprof_put_varint(o, 1ull << 48);
    o = mprof_put_varint(o, 1);
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_LOCK_ANNOUNCE;
    o = put_ts(o, &t, 30);
    o = mprof_put_varint(o, 1);
    o = mprof_put_varint(o, 1);
    *o++ = 1;
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_LOCK_OBTAINED; /* held from -5e18 ... */
    o = put_ts(o, &t, early);
    o = mprof_put_varint(o, 1);
    *o++ = 0;
    *o++ = MPROF_EV_ALLOC; /* ... and an allocation made then */
    o = put_ts(o, &t, early);
    o = mprof_put_varint(o, 0x300);
    o = mprof_put_varint(o, 8);
    o = mprof_put_varint(o, 0);
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_FREE; /* freed 10^19 ns later */
    o = put_ts(o, &t, late);
    o = mprof_put_varint(o, 0x300);
    o = mprof_put_varint(o, 0);
    o = mprof_put_varint(o, 0);
    *o++ = MPROF_EV_LOCK_RELEASED; /* ... to +5e18 */
    o = put_ts(o, &t, late);
    o = mprof_put_varint(o, 1);
    *o++ = 0;
    *o++ = MPROF_EV_LOCK_WAIT; /* a wait from +5e18 ... */
    o = put_ts(o, &t, late + 1);
    o = mprof_put_varint(o, 2);
    *o++ = 0;
    *o++ = MPROF_EV_LOCK_OBTAINED; /* ... that ends at -5e18 */
    o = put_ts(o, &t, early + 1024); /* a multiple of 1024: exact as a double */
    o = mprof_put_varint(o, 2);
    *o++ = 0;
    *o++ = MPROF_EV_LOCK_RELEASED;
    o = put_ts(o, &t, early + 3072);
    o = mprof_put_varint(o, 2);
    *o++ = 0;
    assert_true((size_t)(o - ev) <= sizeof ev);
    write_capture(ev, (size_t)(o - ev));

    char err[512];
    mprof_analysis_opts opts = {.top_n = 5, .passes = "memory,locks"};
    mprof_analysis *a = mprof_analysis_run(capture_path, &opts, err, sizeof err);
    if (!a)
        fail_msg("analysis failed: %s", err);
    mprof_pool_result p;
    assert_int_equal(mprof__memory_pool(a, "big", &p), 0);
    assert_int_equal(p.allocs, 1);
    assert_int_equal(p.live_bytes, 1ll << 48);
    assert_int_equal(mprof__memory_pool(a, "heap", &p), 0);
    assert_int_equal(p.allocs, 1);
    assert_int_equal(p.frees, 1);
    assert_int_equal(p.live_count, 0);
    assert_int_equal(p.lifetime_count, 0);
    mprof_lock_result l;
    assert_int_equal(mprof__locks_get(a, "big", &l), 0);
    assert_int_equal(l.acquisitions, 1);
    assert_int_equal(l.hold_count, 0);
    assert_int_equal(l.hold_total_ns, 0);
    assert_int_equal(mprof__locks_get(a, "lock #2", &l), 0);
    assert_int_equal(l.contended, 1);
    assert_int_equal(l.wait_count, 0);
    assert_int_equal(l.wait_total_ns, 0);
    assert_int_equal(l.hold_count, 1);
    assert_int_equal(l.hold_total_ns, 2048);
    char *text = NULL;
    size_t text_len = 0;
    FILE *out = open_memstream(&text, &text_len);
    assert_non_null(out);
    /* The two passes' sections only: the capture summary has its own overflow (analysis.c). */
    mprof__memory_pass.print_text(mprof_analysis_pass_state(a, "memory"), a, out, 5);
    mprof__locks_pass.print_text(mprof_analysis_pass_state(a, "locks"), a, out, 5);
    fclose(out);
    assert_non_null(strstr(text, "4 memory events ignored as corrupt"));
    assert_non_null(strstr(text, "2 waits or holds ignored as corrupt"));
    free(text);
    mprof_analysis_free(a);
    remove(capture_path);
}

/* The symbol cache grows at half full; when it could not, it kept caching until no slot was
 * empty and the next lookup probed forever. Now a lookup that finds the cache nearly full and
 * unable to grow returns the symbol uncached. */
static void test_symbol_cache_cannot_grow(void **state)
{
    (void)state;
    if (!CAN_FAIL_CALLOC)
        skip();
    mprof_symbolizer *s = mprof_symbolizer_new();
    assert_non_null(s);
    mprof_symbol sym;
    calloc_fail_all = 1;
    for (uint64_t i = 1; i <= 5000; i++)
        mprof_symbolizer_lookup(s, i * 16, &sym);
    for (uint64_t i = 1; i <= 5000; i++)
        mprof_symbolizer_lookup(s, i * 16, &sym); /* cached or not, each lookup ends */
    calloc_fail_all = 0;
    mprof_symbolizer_free(s);
}

/* An allocation whose key could not be added to the live map (out of memory) used to stay
 * linked into its pool's live list, uncounted; a discard then released it, leaving the pool's
 * live count wrapped around and its live bytes negative. Fail each calloc of the analysis in
 * turn: the pool must always end consistent. */
static void test_live_map_out_of_memory(void **state)
{
    (void)state;
    if (!CAN_FAIL_CALLOC)
        skip();
    enum { N = 300 };
    unsigned char ev[N * 16 + 64], *o = ev;
    uint64_t t = 0;
    *o++ = MPROF_EV_DEF_STRING;
    o = mprof_put_varint(o, 1);
    o = put_str(o, "arena");
    *o++ = MPROF_EV_THREAD;
    o = mprof_put_varint(o, 1);
    for (uint32_t i = 0; i < N; i++) {
        *o++ = MPROF_EV_ALLOC;
        o = put_ts(o, &t, 1000 + i);
        o = mprof_put_varint(o, 0x10000 + 16 * i);
        o = mprof_put_varint(o, 16);
        o = mprof_put_varint(o, 1);
        o = mprof_put_varint(o, 0);
    }
    *o++ = MPROF_EV_POOL_DISCARD;
    o = put_ts(o, &t, 5000);
    o = mprof_put_varint(o, 1);
    assert_true((size_t)(o - ev) <= sizeof ev);
    write_capture(ev, (size_t)(o - ev));
    mprof_analysis_opts opts = {.top_n = 5, .passes = "memory"};
    char err[512];
    for (long n = 1;; n++) {
        calloc_fail_at = n;
        mprof_analysis *a = mprof_analysis_run(capture_path, &opts, err, sizeof err);
        long left = calloc_fail_at;
        calloc_fail_at = 0;
        mprof_pool_result p;
        if (a && mprof__memory_pool(a, "arena", &p) == 0) {
            assert_true(p.allocs <= N);
            assert_int_equal(p.live_count, 0);
            assert_int_equal(p.live_bytes, 0);
            assert_int_equal(p.discarded_allocs, p.allocs);
            if (left)
                assert_int_equal(p.allocs, N); /* no failure this time */
        }
        mprof_analysis_free(a);
        if (left)
            break; /* every calloc has been failed once */
    }
    remove(capture_path);
}

/* Run in a fresh process (see main): an allocation is the very first event, so it starts the
 * profiler from MPROF_CAPTURE; its timestamp must be on the calibrated clock. */
static int first_alloc_child(void)
{
    void *p = malloc(32);
    MPROF_ALLOC(p, 32);
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    MPROF_FREE(p);
    free(p);
    return 0; /* the atexit handler writes the capture */
}

static void test_first_event_is_an_allocation(void **state)
{
    (void)state;
    snprintf(capture_path, sizeof capture_path, "/tmp/mprof_test_memory_%d_first.mprof",
             (int)getpid());
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("MPROF_CAPTURE", capture_path, 1);
        setenv("MPROF_LISTEN", "0", 1);
        execl("/proc/self/exe", "test_memory", "--first-alloc", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char err[512];
    mprof_analysis_opts opts = {.top_n = 20, .passes = "memory"};
    mprof_analysis *a = mprof_analysis_run(capture_path, &opts, err, sizeof err);
    if (!a)
        fail_msg("analysis failed: %s", err);
    mprof_pool_result p;
    assert_int_equal(mprof__memory_pool(a, "heap", &p), 0);
    assert_int_equal(p.allocs, 1);
    assert_int_equal(p.frees, 1);
    assert_true(p.peak_ns >= 0 && p.peak_ns < 10000000000ll);
    assert_true(p.lifetime_max_ns >= 1900000 && p.lifetime_max_ns < 10000000000ull);
    mprof_analysis_free(a);
    remove(capture_path);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--first-alloc") == 0)
        return first_alloc_child();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_event_is_an_allocation),
        cmocka_unit_test(test_callstack_symbolised),
        cmocka_unit_test(test_symbolizer_refuses_rebuilt_module),
        cmocka_unit_test(test_capture_leaks_pools_and_threads),
        cmocka_unit_test(test_fp_method_end_to_end),
        cmocka_unit_test(test_out_of_order_beyond_window),
        cmocka_unit_test(test_too_many_pools_and_null_address),
        cmocka_unit_test(test_corrupt_sizes_and_times),
        cmocka_unit_test(test_symbol_cache_cannot_grow),
        cmocka_unit_test(test_live_map_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
