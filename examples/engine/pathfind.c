/*
 * pathfind.c - grid A* with a binary heap and lazy deletion (see pathfind.h).
 *
 * The heuristic is the octile distance, admissible for 8-connected moves costing 1 and sqrt 2.
 * Ties break on the smaller cell index, so the path found never depends on heap internals and
 * the simulation stays deterministic.
 */
#include "pathfind.h"

#include "mprof/mprof.h"

#include <math.h>
#include <stdlib.h>

typedef struct pf_node {
    float f;
    int32_t cell;
} pf_node;

int pathfind_scratch_init(pathfind_scratch *s, int w, int h)
{
    size_t n = (size_t)w * (size_t)h;
    s->w = w;
    s->h = h;
    s->g = malloc(n * sizeof *s->g);
    s->parent = malloc(n * sizeof *s->parent);
    s->stamp = calloc(n, sizeof *s->stamp);
    s->heap_cap = (uint32_t)(n * 8);
    s->heap = malloc(s->heap_cap * sizeof *s->heap);
    s->gen = 0;
    if (!s->g || !s->parent || !s->stamp || !s->heap) {
        pathfind_scratch_free(s);
        return -1;
    }
    return 0;
}

void pathfind_scratch_free(pathfind_scratch *s)
{
    free(s->g);
    free(s->parent);
    free(s->stamp);
    free(s->heap);
    s->g = NULL;
    s->parent = NULL;
    s->stamp = NULL;
    s->heap = NULL;
}

static int less(pf_node a, pf_node b)
{
    return a.f < b.f || (a.f == b.f && a.cell < b.cell);
}

static void push(pathfind_scratch *s, uint32_t *n, pf_node v)
{
    if (*n >= s->heap_cap)
        return;
    uint32_t i = (*n)++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!less(v, s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = v;
}

static pf_node pop(pathfind_scratch *s, uint32_t *n)
{
    pf_node top = s->heap[0], last = s->heap[--(*n)];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && less(s->heap[c + 1], s->heap[c]))
            c++;
        if (!less(s->heap[c], last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (*n)
        s->heap[i] = last;
    return top;
}

static float octile(int ax, int ay, int bx, int by)
{
    int dx = abs(ax - bx), dy = abs(ay - by);
    int lo = dx < dy ? dx : dy, hi = dx < dy ? dy : dx;
    return (float)(hi - lo) + 1.41421356f * (float)lo;
}

int pathfind(pathfind_scratch *s, const uint8_t *map, int start, int goal, int32_t *out,
             int max_len)
{
    MPROF_ZONE_C("Souls::astar", MPROF_COLOR_AI);
    const int w = s->w, h = s->h;
    s->expanded = 0;
    if (map[goal] || map[start])
        return -1;
    if (++s->gen == 0) {
        for (int i = 0; i < w * h; i++)
            s->stamp[i] = 0;
        s->gen = 1;
    }
    uint32_t gen = s->gen, n = 0;
    const int gx = goal % w, gy = goal / w;
    s->g[start] = 0;
    s->parent[start] = -1;
    s->stamp[start] = gen;
    push(s, &n, (pf_node){octile(start % w, start / w, gx, gy), start});
    static const int dx[8] = {1, -1, 0, 0, 1, 1, -1, -1};
    static const int dy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
    while (n > 0) {
        pf_node cur = pop(s, &n);
        int c = cur.cell, cx = c % w, cy = c / w;
        if (cur.f > s->g[c] + octile(cx, cy, gx, gy) + 1e-4f)
            continue; /* stale heap entry */
        s->expanded++;
        if (c == goal)
            break;
        for (int k = 0; k < 8; k++) {
            int nx = cx + dx[k], ny = cy + dy[k];
            if (nx < 0 || ny < 0 || nx >= w || ny >= h || map[ny * w + nx])
                continue;
            if (k >= 4 && (map[cy * w + nx] || map[ny * w + cx]))
                continue; /* no cutting corners past walls */
            int nc = ny * w + nx;
            float g = s->g[c] + (k < 4 ? 1.0f : 1.41421356f);
            if (s->stamp[nc] == gen && g >= s->g[nc])
                continue;
            s->stamp[nc] = gen;
            s->g[nc] = g;
            s->parent[nc] = c;
            push(s, &n, (pf_node){g + octile(nx, ny, gx, gy), nc});
        }
    }
    if (s->stamp[goal] != gen)
        return -1;
    int len = 0;
    for (int c = goal; c != start; c = s->parent[c])
        len++;
    int skip = len > max_len ? len - max_len : 0, written = len - skip;
    int i = len;
    for (int c = goal; c != start; c = s->parent[c]) {
        i--;
        if (i < written)
            out[i] = c;
    }
    return written;
}
