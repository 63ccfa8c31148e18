/*
 * mem.c - frame arena and entity pool (see mem.h).
 *
 * The pool keeps an "in use" mark per slot (next[i] == USED) so pool_destroy can report the
 * frees of whatever is still alive at exit, which makes the allocation and free counts of every
 * named pool balance in the capture.
 */
#include "mem.h"

#include "mprof/mprof.h"

#include <stdlib.h>
#include <string.h>

#define USED 0xfffffffeu

int arena_init(eng_arena *a, const char *name, size_t cap_bytes)
{
    memset(a, 0, sizeof *a);
    a->base = malloc(cap_bytes);
    if (!a->base)
        return -1;
    a->name = name;
    a->cap_bytes = cap_bytes;
    return 0;
}

void arena_destroy(eng_arena *a)
{
    if (!a->base)
        return;
    arena_reset(a);
    free(a->base);
    a->base = NULL;
}

void *arena_alloc(eng_arena *a, size_t size)
{
    size_t start = (a->used_bytes + 15u) & ~(size_t)15u;
    if (size > a->cap_bytes || start > a->cap_bytes - size)
        return NULL;
    void *p = a->base + start;
    a->used_bytes = start + size;
    if (a->used_bytes > a->peak_bytes)
        a->peak_bytes = a->used_bytes;
    MPROF_ALLOC_NAMED(p, size, a->name);
    return p;
}

void *arena_calloc(eng_arena *a, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = arena_alloc(a, count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void arena_reset(eng_arena *a)
{
    if (a->used_bytes)
        MPROF_POOL_DISCARD(a->name);
    a->used_bytes = 0;
}

int pool_init(eng_pool *p, const char *name, size_t elem_bytes, uint32_t capacity)
{
    memset(p, 0, sizeof *p);
    p->elem_bytes = (elem_bytes + 15u) & ~(size_t)15u;
    p->base = calloc(capacity, p->elem_bytes);
    p->next = malloc(sizeof *p->next * (capacity ? capacity : 1));
    if (!p->base || !p->next) {
        free(p->base);
        free(p->next);
        return -1;
    }
    p->name = name;
    p->capacity = capacity;
    for (uint32_t i = 0; i < capacity; i++)
        p->next[i] = i + 1;
    p->free_head = 0;
    return 0;
}

void pool_destroy(eng_pool *p)
{
    if (!p->base)
        return;
    for (uint32_t i = 0; i < p->capacity; i++)
        if (p->next[i] == USED)
            pool_free(p, p->base + (size_t)i * p->elem_bytes);
    free(p->base);
    free(p->next);
    p->base = NULL;
    p->next = NULL;
}

void *pool_alloc(eng_pool *p)
{
    if (p->free_head >= p->capacity)
        return NULL;
    uint32_t i = p->free_head;
    p->free_head = p->next[i];
    p->next[i] = USED;
    p->in_use++;
    void *e = p->base + (size_t)i * p->elem_bytes;
    memset(e, 0, p->elem_bytes);
    MPROF_ALLOC_NAMED(e, p->elem_bytes, p->name);
    return e;
}

void pool_free(eng_pool *p, void *elem)
{
    uint32_t i = pool_index(p, elem);
    if (i >= p->capacity || p->next[i] != USED)
        return;
    MPROF_FREE_NAMED(elem, p->name);
    p->next[i] = p->free_head;
    p->free_head = i;
    p->in_use--;
}

uint32_t pool_index(const eng_pool *p, const void *elem)
{
    return (uint32_t)(((const unsigned char *)elem - p->base) / p->elem_bytes);
}

void *pool_at(const eng_pool *p, uint32_t i)
{
    return i < p->capacity && p->next[i] == USED ? p->base + (size_t)i * p->elem_bytes : NULL;
}
