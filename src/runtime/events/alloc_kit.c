/*
 * alloc_kit.c - arena, pool, slab and stack allocators that record their lifetimes.
 *
 * Every allocator validates what it is given before it changes anything: a pointer is checked
 * against the allocator's own memory (range, block boundary, an allocated-bit per block) so that
 * a double free or a foreign pointer is reported and refused instead of corrupting a free list.
 * The pool and the slab keep one bit per block; the stack keeps a 16-byte header before each
 * allocation linking it to the previous one, which lets free_to walk the allocations it releases
 * (recording a FREE for each) and lets pop and free_to validate pointers and markers.
 *
 * Built twice: inside libmprof (MPROF_BUILDING_LIBRARY, recording through mprof__alloc and
 * friends) and as the standalone mprof_alloc library without instrumentation.
 */
#if defined(MPROF_BUILDING_LIBRARY) && !defined(MPROF_ENABLE)
#define MPROF_ENABLE
#endif
#include "mprof/alloc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ALIGN 16u

/* ---- shared pieces -------------------------------------------------------------------------- */

typedef struct kit_common {
    const char *kind;
    const char *name;
    mprof_alloc_backing backing;
    mprof_alloc_error_fn on_error;
    void *error_user;
    int depth; /* callstack frames per allocation */
    mprof_alloc_stats st;
} kit_common;

static void *default_alloc(size_t size, size_t align, void *user)
{
    (void)user;
    if (align < sizeof(void *))
        align = sizeof(void *);
    if (size > SIZE_MAX - (align - 1))
        return NULL; /* rounding up would wrap to a tiny block */
    size = (size + align - 1) & ~(align - 1); /* aligned_alloc wants a multiple of align */
    return aligned_alloc(align, size);
}

static void default_free(void *ptr, size_t size, void *user)
{
    (void)size;
    (void)user;
    free(ptr);
}

static void default_on_error(const char *kind, const char *name, const char *message, void *user)
{
    (void)user;
    fprintf(stderr, "mprof: %s '%s': %s\n", kind, name, message);
}

static void common_init(kit_common *c, const char *kind, const char *name,
                        const mprof_alloc_backing *b, mprof_alloc_error_fn on_error, void *user)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->name = name ? name : kind;
    if (b && b->alloc && b->free) {
        c->backing = *b;
    } else {
        c->backing.alloc = default_alloc;
        c->backing.free = default_free;
    }
    c->on_error = on_error ? on_error : default_on_error;
    c->error_user = user;
}

/* Desc-level errors before the allocator exists go to the desc's handler too. */
static void report(kit_common *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(kit_common *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->on_error(c->kind, c->name, msg, c->error_user);
}

static bool is_pow2(size_t v) { return v && !(v & (v - 1)); }
static size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

static void note_alloc(kit_common *c, size_t bytes)
{
    c->st.used_bytes += bytes;
    if (c->st.used_bytes > c->st.peak_bytes)
        c->st.peak_bytes = c->st.used_bytes;
    c->st.n_allocs++;
}

static void note_free(kit_common *c, size_t bytes)
{
    c->st.used_bytes -= bytes;
    c->st.n_frees++;
}

/* Bitmap helpers: one bit per block, set while allocated. */
static bool bit_get(const uint64_t *bm, size_t i) { return (bm[i >> 6] >> (i & 63)) & 1u; }
static void bit_set(uint64_t *bm, size_t i) { bm[i >> 6] |= (uint64_t)1 << (i & 63); }
static void bit_clr(uint64_t *bm, size_t i) { bm[i >> 6] &= ~((uint64_t)1 << (i & 63)); }

/* ---- arena ---------------------------------------------------------------------------------- */

struct mprof_arena {
    kit_common c;
    unsigned char *base;
    size_t cap, top;
    uint64_t live; /* allocations since the last reset */
};

mprof_result mprof_arena_create(const mprof_arena_desc *desc, mprof_arena **out)
{
    if (!out)
        return MPROF_ERR_INVALID;
    *out = NULL;
    if (!desc || desc->capacity_bytes == 0)
        return MPROF_ERR_INVALID;
    mprof_arena *a = calloc(1, sizeof *a);
    if (!a)
        return MPROF_ERR_NOMEM;
    common_init(&a->c, "arena", desc->name, &desc->backing, desc->on_error, desc->error_user);
    a->c.depth = desc->callstack_depth;
    a->base = a->c.backing.alloc(desc->capacity_bytes, DEFAULT_ALIGN, a->c.backing.user);
    if (!a->base) {
        free(a);
        return MPROF_ERR_NOMEM;
    }
    a->cap = desc->capacity_bytes;
    a->c.st.capacity_bytes = a->cap;
    *out = a;
    return MPROF_OK;
}

void mprof_arena_destroy(mprof_arena *a)
{
    if (!a)
        return;
    if (a->live)
        MPROF_POOL_DISCARD(a->c.name);
    a->c.backing.free(a->base, a->cap, a->c.backing.user);
    free(a);
}

void *mprof_arena_alloc(mprof_arena *a, size_t size, size_t align)
{
    if (!a)
        return NULL;
    if (align == 0)
        align = DEFAULT_ALIGN;
    if (!is_pow2(align) || align > 4096) {
        a->c.st.n_failed++;
        report(&a->c, "alignment %zu is not a power of two up to 4096", align);
        return NULL;
    }
    if (size == 0)
        size = 1;
    /* Align the address, not the offset: the base is only DEFAULT_ALIGN-aligned. */
    uintptr_t start = align_up((uintptr_t)(a->base + a->top), align);
    size_t off = (size_t)(start - (uintptr_t)a->base);
    if (off > a->cap || size > a->cap - off) {
        a->c.st.n_failed++;
        report(&a->c, "exhausted: %zu bytes requested, %zu of %zu bytes free", size,
               a->cap - a->top, a->cap);
        return NULL;
    }
    void *p = a->base + off;
    note_alloc(&a->c, off + size - a->top);
    a->top = off + size;
    a->live++;
    MPROF_ALLOC_NAMED_CS(p, size, a->c.name, a->c.depth);
    return p;
}

void mprof_arena_reset(mprof_arena *a)
{
    if (!a)
        return;
    a->c.st.n_frees += a->live;
    a->c.st.n_resets++;
    a->c.st.used_bytes = 0;
    a->top = 0;
    a->live = 0;
    MPROF_POOL_DISCARD(a->c.name);
}

void mprof_arena_stats(const mprof_arena *a, mprof_alloc_stats *out)
{
    if (a && out)
        *out = a->c.st;
}

/* ---- pool ----------------------------------------------------------------------------------- */

struct mprof_pool {
    kit_common c;
    unsigned char *base;
    size_t block_bytes, n_blocks, bytes;
    void *free_list; /* intrusive: the first word of a free block points to the next */
    uint64_t *bits;  /* set = allocated */
};

static void pool_build_free_list(mprof_pool *p)
{
    p->free_list = NULL;
    for (size_t i = p->n_blocks; i-- > 0;) {
        void *b = p->base + i * p->block_bytes;
        memcpy(b, &p->free_list, sizeof(void *));
        p->free_list = b;
    }
    memset(p->bits, 0, ((p->n_blocks + 63) / 64) * sizeof(uint64_t));
}

mprof_result mprof_pool_create(const mprof_pool_desc *desc, mprof_pool **out)
{
    if (!out)
        return MPROF_ERR_INVALID;
    *out = NULL;
    if (!desc || desc->block_bytes == 0 || desc->n_blocks == 0)
        return MPROF_ERR_INVALID;
    size_t align = desc->align ? desc->align : DEFAULT_ALIGN;
    if (!is_pow2(align) || align > 4096)
        return MPROF_ERR_INVALID;
    if (align < sizeof(void *))
        align = sizeof(void *);
    if (desc->block_bytes > SIZE_MAX - align)
        return MPROF_ERR_INVALID; /* align_up would wrap to 0 */
    size_t bb = align_up(desc->block_bytes < sizeof(void *) ? sizeof(void *) : desc->block_bytes,
                         align);
    if (desc->n_blocks > SIZE_MAX / bb)
        return MPROF_ERR_INVALID;
    mprof_pool *p = calloc(1, sizeof *p);
    if (!p)
        return MPROF_ERR_NOMEM;
    common_init(&p->c, "pool", desc->name, &desc->backing, desc->on_error, desc->error_user);
    p->c.depth = desc->callstack_depth;
    p->block_bytes = bb;
    p->n_blocks = desc->n_blocks;
    p->bytes = bb * desc->n_blocks;
    p->bits = calloc((p->n_blocks + 63) / 64, sizeof(uint64_t));
    p->base = p->bits ? p->c.backing.alloc(p->bytes, align, p->c.backing.user) : NULL;
    if (!p->base) {
        free(p->bits);
        free(p);
        return MPROF_ERR_NOMEM;
    }
    p->c.st.capacity_bytes = p->bytes;
    pool_build_free_list(p);
    *out = p;
    return MPROF_OK;
}

void mprof_pool_destroy(mprof_pool *p)
{
    if (!p)
        return;
    if (p->c.st.used_bytes)
        MPROF_POOL_DISCARD(p->c.name);
    p->c.backing.free(p->base, p->bytes, p->c.backing.user);
    free(p->bits);
    free(p);
}

void *mprof_pool_alloc(mprof_pool *p)
{
    if (!p)
        return NULL;
    void *b = p->free_list;
    if (!b) {
        p->c.st.n_failed++;
        report(&p->c, "exhausted: all %zu blocks of %zu bytes are in use", p->n_blocks,
               p->block_bytes);
        return NULL;
    }
    memcpy(&p->free_list, b, sizeof(void *));
    bit_set(p->bits, (size_t)((unsigned char *)b - p->base) / p->block_bytes);
    note_alloc(&p->c, p->block_bytes);
    MPROF_ALLOC_NAMED_CS(b, p->block_bytes, p->c.name, p->c.depth);
    return b;
}

mprof_result mprof_pool_free(mprof_pool *p, void *ptr)
{
    if (!p)
        return MPROF_ERR_INVALID;
    if (!ptr)
        return MPROF_OK;
    uintptr_t u = (uintptr_t)ptr, b = (uintptr_t)p->base;
    if (u < b || u >= b + p->bytes) {
        p->c.st.n_errors++;
        report(&p->c, "free of foreign pointer %p (not in this pool)", ptr);
        return MPROF_ERR_INVALID;
    }
    size_t off = (size_t)(u - b);
    if (off % p->block_bytes) {
        p->c.st.n_errors++;
        report(&p->c, "free of %p, which is inside block %zu, not at its start", ptr,
               off / p->block_bytes);
        return MPROF_ERR_INVALID;
    }
    size_t i = off / p->block_bytes;
    if (!bit_get(p->bits, i)) {
        p->c.st.n_errors++;
        report(&p->c, "double free of %p (block %zu)", ptr, i);
        return MPROF_ERR_INVALID;
    }
    bit_clr(p->bits, i);
    memcpy(ptr, &p->free_list, sizeof(void *));
    p->free_list = ptr;
    note_free(&p->c, p->block_bytes);
    MPROF_FREE_NAMED(ptr, p->c.name);
    return MPROF_OK;
}

void mprof_pool_reset(mprof_pool *p)
{
    if (!p)
        return;
    p->c.st.n_frees += p->c.st.used_bytes / p->block_bytes;
    p->c.st.used_bytes = 0;
    p->c.st.n_resets++;
    pool_build_free_list(p);
    MPROF_POOL_DISCARD(p->c.name);
}

void mprof_pool_stats(const mprof_pool *p, mprof_alloc_stats *out)
{
    if (p && out)
        *out = p->c.st;
}

/* ---- slab ----------------------------------------------------------------------------------- */

/* A page: this header, then blocks of one class. Pages are aligned to page_bytes so a pointer's
 * page is found by masking; the sorted page table says whether that page is ours before its
 * header is read. */
typedef struct slab_page {
    struct slab_page *next_partial; /* in its class's list of pages with free blocks */
    void *free_list;
    uint32_t cls;
    uint32_t n_blocks, n_used;
    uint32_t first_off; /* offset of block 0 from the page start */
    int in_partial;
    uint64_t bits[];    /* set = allocated */
} slab_page;

#define SLAB_MAX_CLASSES 16

struct mprof_slab {
    kit_common c;
    size_t page_bytes, max_size, cap_bytes;
    uint32_t n_classes;
    slab_page *partial[SLAB_MAX_CLASSES];
    uintptr_t *pages; /* sorted page addresses */
    size_t n_pages, pages_cap;
};

static size_t class_size(uint32_t cls) { return (size_t)16 << cls; }

mprof_result mprof_slab_create(const mprof_slab_desc *desc, mprof_slab **out)
{
    if (!out)
        return MPROF_ERR_INVALID;
    *out = NULL;
    if (!desc)
        return MPROF_ERR_INVALID;
    size_t page = desc->page_bytes ? desc->page_bytes : 65536;
    size_t maxs = desc->max_size ? desc->max_size : 2048;
    if (!is_pow2(page) || page < 4096 || !is_pow2(maxs) || maxs < 16 || maxs > page / 8)
        return MPROF_ERR_INVALID;
    if (maxs > class_size(SLAB_MAX_CLASSES - 1)) {
        /* Only SLAB_MAX_CLASSES partial lists exist; a larger page allows more classes. */
        char msg[128];
        snprintf(msg, sizeof msg, "max_size %zu exceeds the largest size class (%zu)", maxs,
                 class_size(SLAB_MAX_CLASSES - 1));
        (desc->on_error ? desc->on_error : default_on_error)("slab", desc->name ? desc->name : "slab",
                                                             msg, desc->error_user);
        return MPROF_ERR_INVALID;
    }
    mprof_slab *s = calloc(1, sizeof *s);
    if (!s)
        return MPROF_ERR_NOMEM;
    common_init(&s->c, "slab", desc->name, &desc->backing, desc->on_error, desc->error_user);
    s->c.depth = desc->callstack_depth;
    s->page_bytes = page;
    s->max_size = maxs;
    s->cap_bytes = desc->capacity_bytes;
    while (class_size(s->n_classes) < maxs)
        s->n_classes++;
    s->n_classes++;
    *out = s;
    return MPROF_OK;
}

void mprof_slab_destroy(mprof_slab *s)
{
    if (!s)
        return;
    if (s->c.st.used_bytes)
        MPROF_POOL_DISCARD(s->c.name);
    for (size_t i = 0; i < s->n_pages; i++)
        s->c.backing.free((void *)s->pages[i], s->page_bytes, s->c.backing.user);
    free(s->pages);
    free(s);
}

/* Index of the page at address pg in the sorted table, or n_pages when absent. */
static size_t slab_find_page(const mprof_slab *s, uintptr_t pg, size_t *insert_at)
{
    size_t lo = 0, hi = s->n_pages;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->pages[mid] < pg)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (insert_at)
        *insert_at = lo;
    return (lo < s->n_pages && s->pages[lo] == pg) ? lo : s->n_pages;
}

static slab_page *slab_new_page(mprof_slab *s, uint32_t cls)
{
    if (s->cap_bytes && (s->n_pages + 1) * s->page_bytes > s->cap_bytes)
        return NULL;
    if (s->n_pages == s->pages_cap) {
        size_t nc = s->pages_cap ? s->pages_cap * 2 : 16;
        uintptr_t *np = realloc(s->pages, nc * sizeof *np);
        if (!np)
            return NULL;
        s->pages = np;
        s->pages_cap = nc;
    }
    unsigned char *mem = s->c.backing.alloc(s->page_bytes, s->page_bytes, s->c.backing.user);
    if (!mem)
        return NULL;
    slab_page *pg = (slab_page *)mem;
    size_t bsz = class_size(cls);
    /* Header size depends on the block count and vice versa: take the upper bound. */
    size_t max_blocks = s->page_bytes / bsz;
    size_t hdr = sizeof(slab_page) + ((max_blocks + 63) / 64) * sizeof(uint64_t);
    size_t first = align_up(hdr, bsz < 64 ? bsz : 64);
    memset(pg, 0, hdr);
    pg->cls = cls;
    pg->first_off = (uint32_t)first;
    pg->n_blocks = (uint32_t)((s->page_bytes - first) / bsz);
    for (size_t i = pg->n_blocks; i-- > 0;) {
        void *b = mem + first + i * bsz;
        memcpy(b, &pg->free_list, sizeof(void *));
        pg->free_list = b;
    }
    size_t at;
    slab_find_page(s, (uintptr_t)mem, &at);
    memmove(s->pages + at + 1, s->pages + at, (s->n_pages - at) * sizeof *s->pages);
    s->pages[at] = (uintptr_t)mem;
    s->n_pages++;
    s->c.st.capacity_bytes += s->page_bytes;
    pg->next_partial = s->partial[cls];
    pg->in_partial = 1;
    s->partial[cls] = pg;
    return pg;
}

void *mprof_slab_alloc(mprof_slab *s, size_t size)
{
    if (!s)
        return NULL;
    if (size == 0)
        size = 1;
    if (size > s->max_size) {
        s->c.st.n_failed++;
        report(&s->c, "%zu bytes exceed the largest size class (%zu)", size, s->max_size);
        return NULL;
    }
    uint32_t cls = 0;
    while (class_size(cls) < size)
        cls++;
    slab_page *pg = s->partial[cls];
    if (!pg && !(pg = slab_new_page(s, cls))) {
        s->c.st.n_failed++;
        report(&s->c, "exhausted: no page for a %zu-byte block (%zu pages of %zu bytes held, cap "
                      "%zu)",
               class_size(cls), s->n_pages, s->page_bytes, s->cap_bytes);
        return NULL;
    }
    void *b = pg->free_list;
    memcpy(&pg->free_list, b, sizeof(void *));
    bit_set(pg->bits, ((size_t)((unsigned char *)b - (unsigned char *)pg) - pg->first_off) >>
                          (cls + 4));
    if (++pg->n_used == pg->n_blocks) {
        s->partial[cls] = pg->next_partial;
        pg->next_partial = NULL;
        pg->in_partial = 0;
    }
    note_alloc(&s->c, class_size(cls));
    MPROF_ALLOC_NAMED_CS(b, size, s->c.name, s->c.depth);
    return b;
}

/* Why slab_locate found no allocated block at a pointer. */
typedef enum slab_miss {
    SLAB_MISS_NONE,
    SLAB_MISS_FOREIGN,  /* not in any page of this slab */
    SLAB_MISS_INTERIOR, /* not the start of a block */
    SLAB_MISS_FREE      /* a block not allocated */
} slab_miss;

/* The page owning ptr and its block index, or NULL with *why set. */
static slab_page *slab_locate(const mprof_slab *s, const void *ptr, size_t *out_idx,
                              slab_miss *why)
{
    uintptr_t pgaddr = (uintptr_t)ptr & ~(uintptr_t)(s->page_bytes - 1);
    if (slab_find_page(s, pgaddr, NULL) == s->n_pages) {
        *why = SLAB_MISS_FOREIGN;
        return NULL;
    }
    slab_page *pg = (slab_page *)pgaddr;
    size_t off = (size_t)((uintptr_t)ptr - pgaddr);
    size_t bsz = class_size(pg->cls);
    if (off < pg->first_off || (off - pg->first_off) % bsz ||
        (off - pg->first_off) / bsz >= pg->n_blocks) {
        *why = SLAB_MISS_INTERIOR;
        return NULL;
    }
    *out_idx = (off - pg->first_off) / bsz;
    if (!bit_get(pg->bits, *out_idx)) {
        *why = SLAB_MISS_FREE;
        return NULL;
    }
    return pg;
}

size_t mprof_slab_block_size(const mprof_slab *s, const void *ptr)
{
    size_t idx;
    slab_miss why;
    if (!s || !ptr)
        return 0;
    slab_page *pg = slab_locate(s, ptr, &idx, &why);
    return pg ? class_size(pg->cls) : 0;
}

mprof_result mprof_slab_free(mprof_slab *s, void *ptr)
{
    if (!s)
        return MPROF_ERR_INVALID;
    if (!ptr)
        return MPROF_OK;
    size_t idx;
    slab_miss why = SLAB_MISS_NONE;
    slab_page *pg = slab_locate(s, ptr, &idx, &why);
    if (!pg) {
        s->c.st.n_errors++;
        if (why == SLAB_MISS_FOREIGN)
            report(&s->c, "free of foreign pointer %p (not in any page of this slab)", ptr);
        else if (why == SLAB_MISS_INTERIOR)
            report(&s->c, "free of %p, which is not the start of a block", ptr);
        else
            report(&s->c, "double free of %p", ptr);
        return MPROF_ERR_INVALID;
    }
    bit_clr(pg->bits, idx);
    memcpy(ptr, &pg->free_list, sizeof(void *));
    pg->free_list = ptr;
    pg->n_used--;
    if (!pg->in_partial) {
        pg->next_partial = s->partial[pg->cls];
        s->partial[pg->cls] = pg;
        pg->in_partial = 1;
    }
    note_free(&s->c, class_size(pg->cls));
    MPROF_FREE_NAMED(ptr, s->c.name);
    return MPROF_OK;
}

void mprof_slab_stats(const mprof_slab *s, mprof_alloc_stats *out)
{
    if (s && out)
        *out = s->c.st;
}

/* ---- stack ---------------------------------------------------------------------------------- */

/* Before each allocation's payload. prev_start is the top before the allocation (where a marker
 * taken just before it points); prev_payload is the previous allocation's payload offset + 1 (0
 * = none). */
typedef struct stack_hdr {
    size_t prev_start;
    size_t prev_payload;
} stack_hdr;

struct mprof_stack {
    kit_common c;
    unsigned char *base;
    size_t cap, top;
    size_t last; /* payload offset of the top allocation + 1, 0 = empty */
};

mprof_result mprof_stack_create(const mprof_stack_desc *desc, mprof_stack **out)
{
    if (!out)
        return MPROF_ERR_INVALID;
    *out = NULL;
    if (!desc || desc->capacity_bytes == 0)
        return MPROF_ERR_INVALID;
    mprof_stack *s = calloc(1, sizeof *s);
    if (!s)
        return MPROF_ERR_NOMEM;
    common_init(&s->c, "stack", desc->name, &desc->backing, desc->on_error, desc->error_user);
    s->c.depth = desc->callstack_depth;
    s->base = s->c.backing.alloc(desc->capacity_bytes, DEFAULT_ALIGN, s->c.backing.user);
    if (!s->base) {
        free(s);
        return MPROF_ERR_NOMEM;
    }
    s->cap = desc->capacity_bytes;
    s->c.st.capacity_bytes = s->cap;
    *out = s;
    return MPROF_OK;
}

void mprof_stack_destroy(mprof_stack *s)
{
    if (!s)
        return;
    if (s->last)
        MPROF_POOL_DISCARD(s->c.name);
    s->c.backing.free(s->base, s->cap, s->c.backing.user);
    free(s);
}

static stack_hdr *stack_hdr_of(const mprof_stack *s, size_t payload_off)
{
    return (stack_hdr *)(s->base + payload_off - sizeof(stack_hdr));
}

void *mprof_stack_alloc(mprof_stack *s, size_t size, size_t align)
{
    if (!s)
        return NULL;
    if (align == 0)
        align = DEFAULT_ALIGN;
    if (!is_pow2(align) || align > 4096) {
        s->c.st.n_failed++;
        report(&s->c, "alignment %zu is not a power of two up to 4096", align);
        return NULL;
    }
    if (align < _Alignof(stack_hdr))
        align = _Alignof(stack_hdr);
    if (size == 0)
        size = 1;
    uintptr_t b = (uintptr_t)s->base;
    uintptr_t pay = align_up(b + s->top + sizeof(stack_hdr), align);
    size_t off = (size_t)(pay - b);
    if (off > s->cap || size > s->cap - off) {
        s->c.st.n_failed++;
        report(&s->c, "exhausted: %zu bytes requested, %zu of %zu bytes free", size,
               s->cap - s->top, s->cap);
        return NULL;
    }
    stack_hdr *h = stack_hdr_of(s, off);
    h->prev_start = s->top;
    h->prev_payload = s->last;
    note_alloc(&s->c, off + size - s->top);
    s->top = off + size;
    s->last = off + 1;
    void *p = s->base + off;
    MPROF_ALLOC_NAMED_CS(p, size, s->c.name, s->c.depth);
    return p;
}

/* Releases the top allocation (validated by the caller). */
static void stack_pop_top(mprof_stack *s)
{
    size_t off = s->last - 1;
    stack_hdr *h = stack_hdr_of(s, off);
    void *p = s->base + off;
    note_free(&s->c, s->top - h->prev_start);
    s->top = h->prev_start;
    s->last = h->prev_payload;
    MPROF_FREE_NAMED(p, s->c.name);
    (void)p;
}

mprof_result mprof_stack_pop(mprof_stack *s, void *ptr)
{
    if (!s)
        return MPROF_ERR_INVALID;
    uintptr_t u = (uintptr_t)ptr, b = (uintptr_t)s->base;
    if (u < b || u >= b + s->cap) {
        s->c.st.n_errors++;
        report(&s->c, "pop of foreign pointer %p (not in this stack)", ptr);
        return MPROF_ERR_INVALID;
    }
    size_t off = (size_t)(u - b);
    if (s->last && off == s->last - 1) {
        stack_pop_top(s);
        return MPROF_OK;
    }
    s->c.st.n_errors++;
    if (off >= s->top)
        report(&s->c, "pop of %p, which is above the top: already freed (double free)", ptr);
    else
        report(&s->c, "pop of %p, which is not the most recent allocation (LIFO order violated)",
               ptr);
    return MPROF_ERR_INVALID;
}

mprof_stack_marker mprof_stack_mark(const mprof_stack *s)
{
    mprof_stack_marker m = {s ? s->top : 0};
    return m;
}

mprof_result mprof_stack_free_to(mprof_stack *s, mprof_stack_marker m)
{
    if (!s)
        return MPROF_ERR_INVALID;
    if (m.offset > s->top) {
        s->c.st.n_errors++;
        report(&s->c, "stale marker at offset %zu: the top is already at %zu", m.offset, s->top);
        return MPROF_ERR_INVALID;
    }
    /* Validate first: walking down must land exactly on the marker. */
    size_t top = s->top, last = s->last;
    while (top > m.offset && last) {
        stack_hdr *h = stack_hdr_of(s, last - 1);
        top = h->prev_start;
        last = h->prev_payload;
    }
    if (top != m.offset) {
        s->c.st.n_errors++;
        report(&s->c, "marker at offset %zu is not at an allocation boundary", m.offset);
        return MPROF_ERR_INVALID;
    }
    while (s->top > m.offset)
        stack_pop_top(s);
    return MPROF_OK;
}

void mprof_stack_reset(mprof_stack *s)
{
    if (!s)
        return;
    while (s->last) {
        stack_hdr *h = stack_hdr_of(s, s->last - 1);
        s->last = h->prev_payload;
        s->c.st.n_frees++;
    }
    s->top = 0;
    s->c.st.used_bytes = 0;
    s->c.st.n_resets++;
    MPROF_POOL_DISCARD(s->c.name);
}

void mprof_stack_stats(const mprof_stack *s, mprof_alloc_stats *out)
{
    if (s && out)
        *out = s->c.st;
}
