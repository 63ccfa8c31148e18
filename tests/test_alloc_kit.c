/*
 * test_alloc_kit.c - the arena, pool, slab and stack allocators on their own: normal use, every
 * misuse the header promises to catch (double free, foreign pointer, interior pointer, LIFO
 * violation, stale marker, exhaustion), and backing-allocator failure. After each misuse the
 * allocator must still work exactly as before, which is what "no corruption" means here.
 */
#include "mprof/alloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct err_log {
    int count;
    char last[256];
    char kind[16];
} err_log;

static void on_error(const char *kind, const char *name, const char *message, void *user)
{
    err_log *l = user;
    l->count++;
    snprintf(l->kind, sizeof l->kind, "%s", kind);
    snprintf(l->last, sizeof l->last, "%s: %s", name, message);
}

/* A backing allocator that fails from the Nth call on (fail_at 0 = never). */
typedef struct fail_backing {
    int calls, fail_at, live;
} fail_backing;

static void *fb_alloc(size_t size, size_t align, void *user)
{
    fail_backing *f = user;
    if (f->fail_at && ++f->calls >= f->fail_at)
        return NULL;
    size = (size + align - 1) & ~(align - 1);
    void *p = aligned_alloc(align, size);
    if (p)
        f->live++;
    return p;
}

static void fb_free(void *ptr, size_t size, void *user)
{
    (void)size;
    fail_backing *f = user;
    f->live--;
    free(ptr);
}

/* ---- arena ---------------------------------------------------------------------------------- */

static void test_arena_bump_and_reset(void **state)
{
    (void)state;
    err_log log = {0};
    mprof_arena *a = NULL;
    mprof_arena_desc d = {.name = "frame", .capacity_bytes = 256, .on_error = on_error,
                          .error_user = &log};
    assert_int_equal(mprof_arena_create(&d, &a), MPROF_OK);
    char *p1 = mprof_arena_alloc(a, 10, 0);
    char *p2 = mprof_arena_alloc(a, 10, 64);
    assert_non_null(p1);
    assert_non_null(p2);
    assert_int_equal((uintptr_t)p1 % 16, 0);
    assert_int_equal((uintptr_t)p2 % 64, 0);
    assert_true(p2 >= p1 + 10);
    memset(p1, 0xaa, 10);
    memset(p2, 0xbb, 10);
    assert_int_equal((unsigned char)p1[9], 0xaa);

    mprof_alloc_stats st;
    mprof_arena_stats(a, &st);
    assert_int_equal(st.n_allocs, 2);
    assert_true(st.used_bytes >= 20 && st.used_bytes <= 256);

    /* Exhaustion: NULL, one clear error, arena unchanged. */
    size_t used = st.used_bytes;
    assert_null(mprof_arena_alloc(a, 1000, 0));
    assert_int_equal(log.count, 1);
    assert_non_null(strstr(log.last, "frame: exhausted: 1000 bytes requested"));
    mprof_arena_stats(a, &st);
    assert_int_equal(st.used_bytes, used);
    assert_int_equal(st.n_failed, 1);

    /* Bad alignment. */
    assert_null(mprof_arena_alloc(a, 8, 3));
    assert_int_equal(log.count, 2);
    assert_non_null(strstr(log.last, "alignment 3"));

    /* Reset returns all memory: the next allocation starts at the beginning again. */
    mprof_arena_reset(a);
    mprof_arena_stats(a, &st);
    assert_int_equal(st.used_bytes, 0);
    assert_int_equal(st.n_frees, 2);
    assert_int_equal(st.n_resets, 1);
    assert_ptr_equal(mprof_arena_alloc(a, 10, 0), p1);
    /* The whole capacity is usable after a reset. */
    mprof_arena_reset(a);
    assert_non_null(mprof_arena_alloc(a, 256, 0));
    assert_null(mprof_arena_alloc(a, 1, 1));
    mprof_arena_destroy(a);
    mprof_arena_destroy(NULL);
}

static void test_arena_bad_desc_and_backing_failure(void **state)
{
    (void)state;
    mprof_arena *a = (mprof_arena *)1;
    mprof_arena_desc d = {0};
    assert_int_equal(mprof_arena_create(&d, &a), MPROF_ERR_INVALID);
    assert_null(a);
    fail_backing fb = {.fail_at = 1};
    d.capacity_bytes = 64;
    d.backing = (mprof_alloc_backing){fb_alloc, fb_free, &fb};
    assert_int_equal(mprof_arena_create(&d, &a), MPROF_ERR_NOMEM);
    assert_null(a);
    fb.fail_at = 0;
    assert_int_equal(mprof_arena_create(&d, &a), MPROF_OK);
    assert_int_equal(fb.live, 1);
    mprof_arena_destroy(a);
    assert_int_equal(fb.live, 0);
}

/* The default backing allocator rounds the size up to the alignment; near SIZE_MAX that used to
 * wrap to a tiny block recorded with a huge capacity. Creation must fail instead. */
static void test_huge_capacity_fails_cleanly(void **state)
{
    (void)state;
    mprof_arena *a = (mprof_arena *)1;
    mprof_arena_desc ad = {.capacity_bytes = SIZE_MAX - 3};
    assert_int_equal(mprof_arena_create(&ad, &a), MPROF_ERR_NOMEM);
    assert_null(a);
    mprof_stack *s = (mprof_stack *)1;
    mprof_stack_desc sd = {.capacity_bytes = SIZE_MAX - 3};
    assert_int_equal(mprof_stack_create(&sd, &s), MPROF_ERR_NOMEM);
    assert_null(s);
}

/* ---- pool ----------------------------------------------------------------------------------- */

static void test_pool_blocks(void **state)
{
    (void)state;
    err_log log = {0};
    mprof_pool *p = NULL;
    mprof_pool_desc d = {.name = "particles", .block_bytes = 24, .n_blocks = 4,
                         .on_error = on_error, .error_user = &log};
    assert_int_equal(mprof_pool_create(&d, &p), MPROF_OK);
    void *b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = mprof_pool_alloc(p);
        assert_non_null(b[i]);
        assert_int_equal((uintptr_t)b[i] % 16, 0);
        memset(b[i], i, 24);
    }
    /* Blocks are distinct and do not overlap (24 rounds up to 32). */
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++) {
            intptr_t dist = (char *)b[i] - (char *)b[j];
            assert_true(dist >= 32 || dist <= -32);
        }
    /* Exhaustion. */
    assert_null(mprof_pool_alloc(p));
    assert_int_equal(log.count, 1);
    assert_non_null(strstr(log.last, "particles: exhausted: all 4 blocks of 32 bytes"));

    assert_int_equal(mprof_pool_free(p, b[1]), MPROF_OK);
    /* Double free: refused, and the block is not handed out twice afterwards. */
    assert_int_equal(mprof_pool_free(p, b[1]), MPROF_ERR_INVALID);
    assert_int_equal(log.count, 2);
    assert_non_null(strstr(log.last, "double free of"));
    assert_non_null(strstr(log.last, "(block 1)"));
    /* Foreign pointer and interior pointer. */
    int local;
    assert_int_equal(mprof_pool_free(p, &local), MPROF_ERR_INVALID);
    assert_non_null(strstr(log.last, "foreign pointer"));
    assert_int_equal(mprof_pool_free(p, (char *)b[2] + 8), MPROF_ERR_INVALID);
    assert_non_null(strstr(log.last, "inside block 2"));
    assert_int_equal(log.count, 4);
    assert_int_equal(mprof_pool_free(p, NULL), MPROF_OK);

    mprof_alloc_stats st;
    mprof_pool_stats(p, &st);
    assert_int_equal(st.n_errors, 3);
    assert_int_equal(st.n_failed, 1);
    assert_int_equal(st.used_bytes, 3 * 32);
    /* Exactly one block is free, it is b[1], and the other blocks kept their contents. */
    assert_ptr_equal(mprof_pool_alloc(p), b[1]);
    assert_null(mprof_pool_alloc(p));
    assert_int_equal(((unsigned char *)b[2])[23], 2);
    assert_int_equal(((unsigned char *)b[3])[0], 3);

    mprof_pool_reset(p);
    mprof_pool_stats(p, &st);
    assert_int_equal(st.used_bytes, 0);
    assert_int_equal(st.n_frees, 1 + 4);
    for (int i = 0; i < 4; i++)
        assert_non_null(mprof_pool_alloc(p));
    mprof_pool_destroy(p);
}

static void test_pool_bad_desc(void **state)
{
    (void)state;
    mprof_pool *p = NULL;
    mprof_pool_desc d = {.block_bytes = 16, .n_blocks = 0};
    assert_int_equal(mprof_pool_create(&d, &p), MPROF_ERR_INVALID);
    d.n_blocks = 2;
    d.align = 24;
    assert_int_equal(mprof_pool_create(&d, &p), MPROF_ERR_INVALID);
    d.align = 0;
    d.n_blocks = SIZE_MAX / 8;
    assert_int_equal(mprof_pool_create(&d, &p), MPROF_ERR_INVALID);
    assert_null(p);
    /* Rounding block_bytes up to the alignment used to wrap to 0, then divide by it. */
    d.n_blocks = 1;
    d.block_bytes = SIZE_MAX - 3;
    assert_int_equal(mprof_pool_create(&d, &p), MPROF_ERR_INVALID);
    d.block_bytes = SIZE_MAX;
    d.align = 4096;
    assert_int_equal(mprof_pool_create(&d, &p), MPROF_ERR_INVALID);
    assert_null(p);
    d.align = 0;
    d.block_bytes = 16;
    fail_backing fb = {.fail_at = 1};
    d.n_blocks = 2;
    d.backing = (mprof_alloc_backing){fb_alloc, fb_free, &fb};
    assert_int_equal(mprof_pool_create(&d, &p), MPROF_ERR_NOMEM);
    assert_int_equal(fb.live, 0);
}

/* ---- slab ----------------------------------------------------------------------------------- */

/* A page of 8 MiB allows max_size up to 1 MiB by the page_bytes/8 rule, 17 classes, but the slab
 * has partial lists for 16 (16 B .. 512 KiB): indexing the 17th wrote past the array. */
static void test_slab_max_size_limit(void **state)
{
    (void)state;
    err_log log = {0};
    mprof_slab *s = (mprof_slab *)1;
    mprof_slab_desc d = {.name = "big", .max_size = (size_t)1 << 20, .page_bytes = (size_t)1 << 23,
                         .on_error = on_error, .error_user = &log};
    assert_int_equal(mprof_slab_create(&d, &s), MPROF_ERR_INVALID);
    assert_null(s);
    assert_int_equal(log.count, 1);
    assert_non_null(strstr(log.last, "largest size class (524288)"));
    d.max_size = (size_t)1 << 19;
    assert_int_equal(mprof_slab_create(&d, &s), MPROF_OK);
    void *b = mprof_slab_alloc(s, (size_t)1 << 19);
    assert_non_null(b);
    assert_int_equal(mprof_slab_block_size(s, b), (size_t)1 << 19);
    assert_int_equal(mprof_slab_free(s, b), MPROF_OK);
    mprof_slab_destroy(s);
    assert_int_equal(log.count, 1);
}

static void test_slab_classes(void **state)
{
    (void)state;
    err_log log = {0};
    mprof_slab *s = NULL;
    mprof_slab_desc d = {.name = "small", .max_size = 256, .page_bytes = 4096,
                         .capacity_bytes = 3 * 4096, .on_error = on_error, .error_user = &log};
    assert_int_equal(mprof_slab_create(&d, &s), MPROF_OK);
    void *a = mprof_slab_alloc(s, 1);
    void *b = mprof_slab_alloc(s, 17);
    void *c = mprof_slab_alloc(s, 256);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_int_equal(mprof_slab_block_size(s, a), 16);
    assert_int_equal(mprof_slab_block_size(s, b), 32);
    assert_int_equal(mprof_slab_block_size(s, c), 256);
    assert_int_equal((uintptr_t)c % 16, 0);
    memset(c, 0x5a, 256);

    /* Too large for any class. */
    assert_null(mprof_slab_alloc(s, 257));
    assert_non_null(strstr(log.last, "257 bytes exceed the largest size class (256)"));

    /* Misuse: double free, foreign, interior. */
    assert_int_equal(mprof_slab_free(s, a), MPROF_OK);
    assert_int_equal(mprof_slab_block_size(s, a), 0);
    assert_int_equal(mprof_slab_free(s, a), MPROF_ERR_INVALID);
    assert_non_null(strstr(log.last, "double free of"));
    char foreign[64];
    assert_int_equal(mprof_slab_free(s, foreign + 16), MPROF_ERR_INVALID);
    assert_non_null(strstr(log.last, "foreign pointer"));
    assert_int_equal(mprof_slab_free(s, (char *)c + 16), MPROF_ERR_INVALID);
    assert_non_null(strstr(log.last, "not the start of a block"));
    assert_int_equal(((unsigned char *)c)[255], 0x5a);

    mprof_alloc_stats st;
    mprof_slab_stats(s, &st);
    assert_int_equal(st.n_errors, 3);
    assert_int_equal(st.used_bytes, 32 + 256);
    assert_int_equal(st.capacity_bytes, 3 * 4096); /* one page per class used */

    /* Exhaustion: the cap is three pages and all are taken by classes 32 and 256 and 16; a
     * 64-byte class needs a fourth page. */
    assert_null(mprof_slab_alloc(s, 64));
    assert_non_null(strstr(log.last, "small: exhausted"));
    /* Filling the 256 class: its page holds (4096 - header) / 256 blocks; the next one fails. */
    int n = 1;
    while (mprof_slab_alloc(s, 200))
        n++;
    assert_true(n >= 14 && n <= 15);
    /* Freeing one makes room again, in the same page. */
    assert_int_equal(mprof_slab_free(s, c), MPROF_OK);
    assert_ptr_equal(mprof_slab_alloc(s, 256), c);
    mprof_slab_destroy(s);
}

static void test_slab_many_pages(void **state)
{
    (void)state;
    fail_backing fb = {0};
    mprof_slab *s = NULL;
    mprof_slab_desc d = {.page_bytes = 4096, .max_size = 512, .backing = {fb_alloc, fb_free, &fb}};
    assert_int_equal(mprof_slab_create(&d, &s), MPROF_OK);
    enum { N = 2000 };
    static void *ptrs[N];
    for (int i = 0; i < N; i++) {
        ptrs[i] = mprof_slab_alloc(s, (size_t)(1 + (i * 37) % 512));
        assert_non_null(ptrs[i]);
        memset(ptrs[i], i & 0xff, 1);
    }
    assert_true(fb.live > 10);
    for (int i = 0; i < N; i += 2)
        assert_int_equal(mprof_slab_free(s, ptrs[i]), MPROF_OK);
    for (int i = 1; i < N; i += 2)
        assert_int_equal(*(unsigned char *)ptrs[i], i & 0xff);
    for (int i = 1; i < N; i += 2)
        assert_int_equal(mprof_slab_free(s, ptrs[i]), MPROF_OK);
    mprof_alloc_stats st;
    mprof_slab_stats(s, &st);
    assert_int_equal(st.used_bytes, 0);
    assert_int_equal(st.n_allocs, N);
    assert_int_equal(st.n_frees, N);
    /* Backing failure on a new page: NULL, counted. */
    fb.fail_at = fb.calls + 1;
    fb.calls = fb.fail_at; /* every further call fails */
    int got = 0;
    for (int i = 0; i < 10000 && mprof_slab_alloc(s, 512); i++)
        got++;
    mprof_slab_stats(s, &st);
    assert_int_equal(st.n_failed, 1);
    mprof_slab_destroy(s);
    assert_int_equal(fb.live, 0);
    (void)got;
    /* Bad descs. */
    d = (mprof_slab_desc){.page_bytes = 1000};
    assert_int_equal(mprof_slab_create(&d, &s), MPROF_ERR_INVALID);
    d = (mprof_slab_desc){.max_size = 100};
    assert_int_equal(mprof_slab_create(&d, &s), MPROF_ERR_INVALID);
    d = (mprof_slab_desc){.page_bytes = 4096, .max_size = 1024};
    assert_int_equal(mprof_slab_create(&d, &s), MPROF_ERR_INVALID);
}

/* ---- stack ---------------------------------------------------------------------------------- */

static void test_stack_lifo_and_markers(void **state)
{
    (void)state;
    err_log log = {0};
    mprof_stack *s = NULL;
    mprof_stack_desc d = {.name = "scratch", .capacity_bytes = 1024, .on_error = on_error,
                          .error_user = &log};
    assert_int_equal(mprof_stack_create(&d, &s), MPROF_OK);
    char *a = mprof_stack_alloc(s, 100, 0);
    mprof_stack_marker m = mprof_stack_mark(s);
    char *b = mprof_stack_alloc(s, 50, 32);
    char *c = mprof_stack_alloc(s, 10, 0);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_int_equal((uintptr_t)b % 32, 0);
    memset(a, 1, 100);

    /* LIFO violation: b is not the top. */
    assert_int_equal(mprof_stack_pop(s, b), MPROF_ERR_INVALID);
    assert_non_null(strstr(log.last, "scratch: pop of"));
    assert_non_null(strstr(log.last, "LIFO order violated"));
    assert_int_equal(mprof_stack_pop(s, c), MPROF_OK);
    /* Double free: c is above the top now. */
    assert_int_equal(mprof_stack_pop(s, c), MPROF_ERR_INVALID);
    assert_non_null(strstr(log.last, "already freed"));
    int local;
    assert_int_equal(mprof_stack_pop(s, &local), MPROF_ERR_INVALID);
    assert_non_null(strstr(log.last, "foreign pointer"));

    /* Marker: frees b (and would free anything above it). */
    mprof_stack_marker top = mprof_stack_mark(s);
    assert_int_equal(mprof_stack_free_to(s, m), MPROF_OK);
    mprof_alloc_stats st;
    mprof_stack_stats(s, &st);
    assert_int_equal(st.n_allocs, 3);
    assert_int_equal(st.n_frees, 2);
    /* The marker taken later is now stale. */
    assert_int_equal(mprof_stack_free_to(s, top), MPROF_ERR_INVALID);
    assert_non_null(strstr(log.last, "stale marker"));
    /* A forged marker inside an allocation is refused and changes nothing. */
    mprof_stack_marker forged = {m.offset - 10};
    assert_int_equal(mprof_stack_free_to(s, forged), MPROF_ERR_INVALID);
    assert_non_null(strstr(log.last, "not at an allocation boundary"));
    mprof_stack_stats(s, &st);
    assert_int_equal(st.n_errors, 5);
    assert_int_equal(st.n_frees, 2);
    assert_int_equal(a[99], 1);
    /* The next allocation after the marker reuses b's place. */
    assert_ptr_equal(mprof_stack_alloc(s, 50, 32), b);

    /* Exhaustion. */
    assert_null(mprof_stack_alloc(s, 2000, 0));
    assert_non_null(strstr(log.last, "exhausted"));
    mprof_stack_reset(s);
    mprof_stack_stats(s, &st);
    assert_int_equal(st.used_bytes, 0);
    assert_int_equal(st.n_frees, 4);
    assert_ptr_equal(mprof_stack_alloc(s, 100, 0), a);
    assert_int_equal(mprof_stack_free_to(s, (mprof_stack_marker){0}), MPROF_OK);
    mprof_stack_stats(s, &st);
    assert_int_equal(st.used_bytes, 0);
    mprof_stack_destroy(s);
    mprof_stack_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_bump_and_reset),
        cmocka_unit_test(test_arena_bad_desc_and_backing_failure),
        cmocka_unit_test(test_huge_capacity_fails_cleanly),
        cmocka_unit_test(test_pool_blocks),
        cmocka_unit_test(test_pool_bad_desc),
        cmocka_unit_test(test_slab_max_size_limit),
        cmocka_unit_test(test_slab_classes),
        cmocka_unit_test(test_slab_many_pages),
        cmocka_unit_test(test_stack_lifo_and_markers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
