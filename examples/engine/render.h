/*
 * render.h - what the renderer front end (renderer.c) shares with its two back ends: the
 * Vulkan one (render_vk.c) and the CPU rasterizer (render_cpu.c).
 *
 * The front end turns the world into instance lists per mesh and camera/light matrices; a back
 * end draws them in three passes (shadow depth from the light, main colour with shadows, post
 * with tone mapping and vignette) and keeps the last frame as RGBA8 for --png. Both back ends
 * draw instances in batches of at most RENDER_MAX_BATCH, so draw-call counts agree.
 */
#ifndef ENGINE_RENDER_H
#define ENGINE_RENDER_H

#include "engine.h"

#include <stdint.h>

#define RENDER_MAX_BATCH 256
#define RENDER_SHADOW_SIZE 512

enum { MESH_SPHERE = 0, MESH_CUBE, MESH_GROUND, MESH_COUNT };

/* Per-instance data, laid out as the vertex shader's instance attributes. */
typedef struct render_instance {
    float pos[3];
    float scale;
    float color[4];
} render_instance;

typedef struct render_vertex {
    float pos[3];
    float normal[3];
} render_vertex;

typedef struct render_mesh {
    const render_vertex *verts;
    uint32_t n_verts;
    const uint16_t *indices;
    uint32_t n_indices;
} render_mesh;

typedef struct render_scene {
    mat4 view_proj;
    mat4 light_view_proj;
    vec3 light_dir; /* towards the light, normalised */
    const render_instance *inst[MESH_COUNT];
    uint32_t n_inst[MESH_COUNT];
    uint64_t frame;
} render_scene;

typedef struct render_stats {
    uint32_t draw_calls;
    uint64_t triangles;
} render_stats;

typedef struct render_backend {
    const char *name;
    /* Returns 0, or -1 when the back end cannot run here (it then cleans up after itself). */
    int (*init)(const engine_options *opt, const render_mesh meshes[MESH_COUNT]);
    void (*frame)(const render_scene *scene, render_stats *out);
    /* The last frame as RGBA8 rows, top to bottom; NULL when none. */
    const uint8_t *(*pixels)(int *out_w, int *out_h);
    void (*shutdown)(void);
} render_backend;

extern const render_backend render_backend_cpu;
extern const render_backend render_backend_vulkan;

/* Draw calls a pass makes for n instances of one mesh. */
static inline uint32_t render_batches(uint32_t n)
{
    return (n + RENDER_MAX_BATCH - 1) / RENDER_MAX_BATCH;
}

/* png_write.c: writes w x h RGBA8 rows. Returns 0 or -1 (with a log line saying why). */
int png_write_rgba(const char *path, const uint8_t *rgba, int w, int h);

#endif
