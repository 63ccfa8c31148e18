/*
 * alloc.h - the mprof allocator kit: arena, pool, slab and stack allocators for engines.
 *
 * Overview
 *   Four allocators that game engines use every frame, each recording its allocations, frees and
 *   resets under its own pool name, so `mprof report --memory` shows per-allocator live bytes,
 *   peaks, leaks and lifetimes:
 *     arena  bump allocation, freed all at once by mprof_arena_reset (typically once per frame);
 *     pool   fixed-size blocks with O(1) alloc/free (particles, entities, nodes);
 *     slab   power-of-two size classes carved from pages (small, varied objects);
 *     stack  LIFO allocation with markers: free everything after a marker in one call.
 *
 * Step by step
 *   mprof_pool *p = NULL;
 *   mprof_pool_desc d = {.name = "particles", .block_bytes = 64, .n_blocks = 1024};
 *   if (mprof_pool_create(&d, &p) != MPROF_OK) ...;
 *   void *b = mprof_pool_alloc(p);
 *   mprof_pool_free(p, b);
 *   mprof_pool_destroy(p);
 *
 * Recording
 *   The kit in libmprof records ALLOC/FREE/POOL_DISCARD events through the same entry points as
 *   MPROF_ALLOC_NAMED; they cost one load while no capture is running. The static library
 *   mprof_alloc (CMake target mprof::alloc) is the same kit built without instrumentation, for
 *   shipping builds that do not link libmprof. Pool names must be string literals (only their
 *   address is recorded) and should be distinct per instance: a reset discards everything
 *   recorded under the name. A NULL name gives the kind's default ("arena", "pool", "slab",
 *   "stack").
 *
 * Errors
 *   Misuse never corrupts an allocator: a double free, a free of a pointer the allocator does not
 *   own, a LIFO violation, a stale marker, a bad alignment or exhaustion is detected, leaves the
 *   allocator unchanged, is counted in the stats (n_errors or n_failed), and is reported through
 *   the desc's on_error callback with a message that names the allocator and the pointer. The
 *   default callback prints "mprof: pool 'particles': double free of 0x... (block 3)" on stderr.
 *   Allocation failures return NULL; the other calls return mprof_result (MPROF_ERR_INVALID for
 *   misuse).
 *
 * Threading
 *   An allocator instance is not thread-safe: one thread at a time may call its functions (give
 *   each thread its own arena, or lock around a shared pool). Distinct instances are independent.
 *
 * Memory
 *   Each allocator takes its memory from the desc's backing functions (default: aligned_alloc and
 *   free), once at create (arena, pool, stack) or page by page (slab), and returns it at destroy.
 *   destroy(NULL) is a no-op.
 */
#ifndef MPROF_ALLOC_H
#define MPROF_ALLOC_H

#include "mprof/mprof.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where an allocator gets its memory. Zero-init = aligned_alloc/free. alloc must return memory
 * aligned to align (a power of two, at most the slab page size) or NULL. */
typedef struct mprof_alloc_backing {
    void *(*alloc)(size_t size, size_t align, void *user);
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
} mprof_alloc_backing;

/* Called on misuse or exhaustion. kind is "arena", "pool", "slab" or "stack"; name is the pool
 * name; message is one sentence without the prefix. Called on the allocating thread. */
typedef void (*mprof_alloc_error_fn)(const char *kind, const char *name, const char *message,
                                     void *user);

/* Counters common to all four allocators. */
typedef struct mprof_alloc_stats {
    size_t capacity_bytes; /* bytes the allocator may hand out (slab: pages held so far) */
    size_t used_bytes;     /* bytes handed out and not yet freed (slab/pool: whole blocks) */
    size_t peak_bytes;     /* highest used_bytes since create */
    uint64_t n_allocs;     /* successful allocations */
    uint64_t n_frees;      /* successful frees, each allocation released by a reset included */
    uint64_t n_resets;     /* reset/discard calls */
    uint64_t n_failed;     /* allocations that returned NULL (exhaustion, bad size or align) */
    uint64_t n_errors;     /* rejected frees: double free, foreign pointer, LIFO violation */
} mprof_alloc_stats;

/* ---- arena: bump allocation, reset all at once ----------------------------------------------- */

typedef struct mprof_arena mprof_arena;
typedef struct mprof_arena_desc {
    const char *name;               /* pool name (literal); default "arena" */
    int callstack_depth;            /* frames recorded per allocation; default 0 = none */
    size_t capacity_bytes;          /* required, > 0 */
    mprof_alloc_backing backing;    /* default aligned_alloc/free */
    mprof_alloc_error_fn on_error;  /* default: print on stderr */
    void *error_user;
} mprof_arena_desc;

/* Creates an arena. On failure *out is NULL (MPROF_ERR_INVALID: bad desc; MPROF_ERR_NOMEM). */
MPROF_API mprof_result mprof_arena_create(const mprof_arena_desc *desc, mprof_arena **out);
MPROF_API void mprof_arena_destroy(mprof_arena *a);
/* size bytes aligned to align (power of two; 0 = 16). NULL when the arena is full. size 0 gives
 * a unique non-NULL pointer of 1 byte. */
MPROF_API void *mprof_arena_alloc(mprof_arena *a, size_t size, size_t align);
/* Frees everything at once (records POOL_DISCARD). */
MPROF_API void mprof_arena_reset(mprof_arena *a);
MPROF_API void mprof_arena_stats(const mprof_arena *a, mprof_alloc_stats *out);

/* ---- pool: fixed-size blocks ---------------------------------------------------------------- */

typedef struct mprof_pool mprof_pool;
typedef struct mprof_pool_desc {
    const char *name;               /* pool name (literal); default "pool" */
    int callstack_depth;            /* frames recorded per allocation; default 0 = none */
    size_t block_bytes;             /* required, > 0; rounded up to the alignment */
    size_t n_blocks;                /* required, > 0 */
    size_t align;                   /* block alignment, power of two; default 16 */
    mprof_alloc_backing backing;
    mprof_alloc_error_fn on_error;
    void *error_user;
} mprof_pool_desc;

MPROF_API mprof_result mprof_pool_create(const mprof_pool_desc *desc, mprof_pool **out);
MPROF_API void mprof_pool_destroy(mprof_pool *p);
/* One block, or NULL when every block is in use. */
MPROF_API void *mprof_pool_alloc(mprof_pool *p);
/* Returns a block. MPROF_ERR_INVALID (pool unchanged) for a double free or a pointer that is not
 * the start of one of this pool's blocks. NULL is accepted and ignored. */
MPROF_API mprof_result mprof_pool_free(mprof_pool *p, void *ptr);
/* Frees every block at once (records POOL_DISCARD). */
MPROF_API void mprof_pool_reset(mprof_pool *p);
MPROF_API void mprof_pool_stats(const mprof_pool *p, mprof_alloc_stats *out);

/* ---- slab: power-of-two size classes -------------------------------------------------------- */

typedef struct mprof_slab mprof_slab;
typedef struct mprof_slab_desc {
    const char *name;               /* pool name (literal); default "slab" */
    int callstack_depth;            /* frames recorded per allocation; default 0 = none */
    size_t max_size;                /* largest class; power of two in [16, page_bytes/8] and
                                       at most 524288 (16 classes); default 2048. Classes: 16,
                                       32, ..., max_size. */
    size_t page_bytes;              /* page size, power of two >= 4096; default 65536 */
    size_t capacity_bytes;          /* cap on pages held; 0 = no cap */
    mprof_alloc_backing backing;
    mprof_alloc_error_fn on_error;
    void *error_user;
} mprof_slab_desc;

MPROF_API mprof_result mprof_slab_create(const mprof_slab_desc *desc, mprof_slab **out);
MPROF_API void mprof_slab_destroy(mprof_slab *s);
/* size bytes (1..max_size; 0 counts as 1) from the smallest class that fits, 16-byte aligned.
 * NULL when size exceeds max_size, the cap is reached or the backing allocator fails. */
MPROF_API void *mprof_slab_alloc(mprof_slab *s, size_t size);
/* MPROF_ERR_INVALID (slab unchanged) for a double free or a pointer it does not own. NULL is
 * accepted and ignored. */
MPROF_API mprof_result mprof_slab_free(mprof_slab *s, void *ptr);
/* Size class of a live pointer, or 0 when the slab does not own it. */
MPROF_API size_t mprof_slab_block_size(const mprof_slab *s, const void *ptr);
MPROF_API void mprof_slab_stats(const mprof_slab *s, mprof_alloc_stats *out);

/* ---- stack: LIFO with markers --------------------------------------------------------------- */

typedef struct mprof_stack mprof_stack;
typedef struct mprof_stack_desc {
    const char *name;               /* pool name (literal); default "stack" */
    int callstack_depth;            /* frames recorded per allocation; default 0 = none */
    size_t capacity_bytes;          /* required, > 0 (each allocation also uses 16 header bytes) */
    mprof_alloc_backing backing;
    mprof_alloc_error_fn on_error;
    void *error_user;
} mprof_stack_desc;

/* A position in a stack; everything allocated after it is freed by mprof_stack_free_to. */
typedef struct mprof_stack_marker {
    size_t offset;
} mprof_stack_marker;

MPROF_API mprof_result mprof_stack_create(const mprof_stack_desc *desc, mprof_stack **out);
MPROF_API void mprof_stack_destroy(mprof_stack *s);
/* size bytes aligned to align (power of two; 0 = 16), or NULL when full. */
MPROF_API void *mprof_stack_alloc(mprof_stack *s, size_t size, size_t align);
/* Frees the most recent allocation, which ptr must be. MPROF_ERR_INVALID (stack unchanged) for
 * any other pointer: not the top (LIFO violation), already freed, or foreign. */
MPROF_API mprof_result mprof_stack_pop(mprof_stack *s, void *ptr);
MPROF_API mprof_stack_marker mprof_stack_mark(const mprof_stack *s);
/* Frees every allocation made after m. MPROF_ERR_INVALID (stack unchanged) when m is above the
 * top (stale: memory under it was already freed) or not at an allocation boundary. */
MPROF_API mprof_result mprof_stack_free_to(mprof_stack *s, mprof_stack_marker m);
/* Frees everything (records POOL_DISCARD). */
MPROF_API void mprof_stack_reset(mprof_stack *s);
MPROF_API void mprof_stack_stats(const mprof_stack *s, mprof_alloc_stats *out);

#ifdef __cplusplus
}
#endif

#endif
