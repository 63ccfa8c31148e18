/*
 * mem.h - the engine's allocators: a frame arena (bump pointer, reset every frame) and a
 * fixed-size pool (free list) for entities.
 *
 * Every allocation and free is reported to the profiler under the allocator's name
 * (MPROF_ALLOC_NAMED / MPROF_FREE_NAMED), and an arena reset discards its whole pool at once
 * (MPROF_POOL_DISCARD), so `mprof report --memory` shows each allocator as a named pool whose
 * allocations and frees balance. These are deliberately small: when include/mprof/alloc.h (the
 * library's allocator kit) is available the engine uses the same calls on top of it.
 */
#ifndef ENGINE_MEM_H
#define ENGINE_MEM_H

#include <stddef.h>
#include <stdint.h>

typedef struct eng_arena {
    const char *name; /* pool name in the capture (literal) */
    unsigned char *base;
    size_t cap_bytes;
    size_t used_bytes;
    size_t peak_bytes;
} eng_arena;

/* Creates an arena of cap_bytes. Returns 0, or -1 when out of memory. Owner: the caller, who
 * destroys it with arena_destroy. One thread at a time. */
int arena_init(eng_arena *a, const char *name, size_t cap_bytes);
void arena_destroy(eng_arena *a);
/* Returns size bytes aligned to 16, or NULL when the arena is full (the caller degrades). */
void *arena_alloc(eng_arena *a, size_t size);
/* Allocates count zeroed elements. */
void *arena_calloc(eng_arena *a, size_t count, size_t size);
/* Frees everything allocated since the last reset. */
void arena_reset(eng_arena *a);

typedef struct eng_pool {
    const char *name; /* pool name in the capture (literal) */
    unsigned char *base;
    size_t elem_bytes;
    uint32_t capacity;
    uint32_t in_use;
    uint32_t free_head; /* index of the first free element, capacity = none */
    uint32_t *next;     /* free-list links */
} eng_pool;

int pool_init(eng_pool *p, const char *name, size_t elem_bytes, uint32_t capacity);
/* Frees every element still in use (reported as frees) and the pool's memory. */
void pool_destroy(eng_pool *p);
/* A zeroed element, or NULL when the pool is exhausted. */
void *pool_alloc(eng_pool *p);
void pool_free(eng_pool *p, void *elem);
/* Index of an element in the pool (stable for its lifetime). */
uint32_t pool_index(const eng_pool *p, const void *elem);
/* Element at index i if it is in use, else NULL. */
void *pool_at(const eng_pool *p, uint32_t i);

#endif
