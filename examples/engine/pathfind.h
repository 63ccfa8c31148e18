/*
 * pathfind.h - A* on a grid of walkable (0) and wall (1) cells, 8-connected, no corner cutting.
 *
 * A search needs scratch proportional to the grid; each job thread owns one pathfind_scratch,
 * so searches run in parallel without sharing anything.
 */
#ifndef ENGINE_PATHFIND_H
#define ENGINE_PATHFIND_H

#include <stdint.h>

typedef struct pathfind_scratch {
    int w, h;
    float *g;          /* cost from start */
    int32_t *parent;   /* cell we came from */
    uint32_t *stamp;   /* search generation that touched the cell */
    uint32_t gen;
    struct pf_node *heap;
    uint32_t heap_cap;
    uint32_t expanded; /* nodes expanded by the last search */
} pathfind_scratch;

int pathfind_scratch_init(pathfind_scratch *s, int w, int h);
void pathfind_scratch_free(pathfind_scratch *s);

/* Finds a path from cell start to cell goal (cell = y * w + x). Writes at most max_len cells
 * of it, from the first step after start up to the goal, into out; returns how many, or -1
 * when the goal cannot be reached. A path longer than max_len is cut after max_len steps. */
int pathfind(pathfind_scratch *s, const uint8_t *map, int start, int goal, int32_t *out,
             int max_len);

#endif
