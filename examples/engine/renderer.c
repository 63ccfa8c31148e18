/*
 * renderer.c - the renderer's front end: meshes, the scene's instance lists, cameras, plots.
 *
 * The scene is drawn with three meshes, each instanced many times: an icosahedron for every
 * rigid body, a cube for every soul and every wall cell of the AI's map, and the ground quad.
 * The back end is Vulkan when a device can be created (lavapipe on machines without a GPU)
 * and the CPU rasterizer otherwise; the choice is logged once. Every zone here is blue.
 */
#include "render.h"

#include "mprof/mprof.h"

#include <stdlib.h>
#include <string.h>

static struct {
    const render_backend *be;
    render_vertex sphere_v[12], cube_v[24], ground_v[4];
    uint16_t sphere_i[60], cube_i[36], ground_i[6];
    render_mesh meshes[MESH_COUNT];
    render_instance *walls;
    uint32_t n_walls;
    soul_view *souls;
    uint32_t max_souls;
    int width, height;
    int frame_images; /* --frame-images */
    render_stats last;
} rn;

static void make_meshes(void)
{
    /* Icosahedron: the vertices are the cyclic permutations of (0, +-1, +-phi). */
    const float p = 1.6180339f, s = 1.0f / sqrtf(1 + p * p);
    const float iv[12][3] = {{-1, p, 0}, {1, p, 0},  {-1, -p, 0}, {1, -p, 0},
                             {0, -1, p}, {0, 1, p},  {0, -1, -p}, {0, 1, -p},
                             {p, 0, -1}, {p, 0, 1},  {-p, 0, -1}, {-p, 0, 1}};
    static const uint16_t ii[60] = {0, 11, 5,  0, 5,  1, 0, 1, 7, 0, 7,  10, 0, 10, 11,
                                    1, 5,  9,  5, 11, 4, 11, 10, 2, 10, 7, 6, 7, 1, 8,
                                    3, 9,  4,  3, 4,  2, 3, 2, 6, 3, 6,  8, 3, 8,  9,
                                    4, 9,  5,  2, 4, 11, 6, 2, 10, 8, 6, 7, 9, 8,  1};
    for (int i = 0; i < 12; i++)
        for (int k = 0; k < 3; k++)
            rn.sphere_v[i].pos[k] = rn.sphere_v[i].normal[k] = iv[i][k] * s;
    memcpy(rn.sphere_i, ii, sizeof ii);

    /* Cube: 6 faces x 4 vertices with face normals. */
    static const float fn[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0},
                                   {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
    for (int f = 0; f < 6; f++) {
        vec3 n = v3(fn[f][0], fn[f][1], fn[f][2]);
        vec3 u = fabsf(n.y) > 0.5f ? v3(1, 0, 0) : v3(0, 1, 0);
        vec3 t = v3_cross(n, u);
        u = v3_cross(t, n);
        const float su[4] = {-1, 1, 1, -1}, sv[4] = {-1, -1, 1, 1};
        for (int k = 0; k < 4; k++) {
            vec3 q = v3_add(n, v3_add(v3_scale(t, su[k]), v3_scale(u, sv[k])));
            render_vertex *v = &rn.cube_v[f * 4 + k];
            v->pos[0] = q.x, v->pos[1] = q.y, v->pos[2] = q.z;
            v->normal[0] = n.x, v->normal[1] = n.y, v->normal[2] = n.z;
        }
        const uint16_t b = (uint16_t)(f * 4);
        /* Counter-clockwise seen from outside, like the other meshes. */
        const uint16_t q6[6] = {b, (uint16_t)(b + 2), (uint16_t)(b + 1),
                                b, (uint16_t)(b + 3), (uint16_t)(b + 2)};
        memcpy(&rn.cube_i[f * 6], q6, sizeof q6);
    }

    /* Ground: a unit quad in the xz plane facing up; the instance scale stretches it. */
    const float gq[4][2] = {{0, 0}, {0, 1}, {1, 1}, {1, 0}};
    for (int k = 0; k < 4; k++) {
        rn.ground_v[k].pos[0] = gq[k][0];
        rn.ground_v[k].pos[1] = 0;
        rn.ground_v[k].pos[2] = gq[k][1];
        rn.ground_v[k].normal[0] = 0;
        rn.ground_v[k].normal[1] = 1;
        rn.ground_v[k].normal[2] = 0;
    }
    static const uint16_t gi[6] = {0, 1, 2, 0, 2, 3};
    memcpy(rn.ground_i, gi, sizeof gi);

    rn.meshes[MESH_SPHERE] = (render_mesh){rn.sphere_v, 12, rn.sphere_i, 60};
    rn.meshes[MESH_CUBE] = (render_mesh){rn.cube_v, 24, rn.cube_i, 36};
    rn.meshes[MESH_GROUND] = (render_mesh){rn.ground_v, 4, rn.ground_i, 6};
}

static void set_color(render_instance *in, uint32_t rgb)
{
    in->color[0] = (float)((rgb >> 16) & 0xff) / 255.0f;
    in->color[1] = (float)((rgb >> 8) & 0xff) / 255.0f;
    in->color[2] = (float)(rgb & 0xff) / 255.0f;
    in->color[3] = 1.0f;
}

static int build_walls(void)
{
    int w, h;
    float cell;
    const uint8_t *map = souls_map(&w, &h, &cell);
    uint32_t n = 0;
    for (int i = 0; i < w * h; i++)
        n += map[i] != 0;
    rn.walls = calloc(n ? n : 1, sizeof *rn.walls);
    if (!rn.walls)
        return -1;
    for (int i = 0; i < w * h; i++) {
        if (!map[i])
            continue;
        render_instance *in = &rn.walls[rn.n_walls++];
        in->pos[0] = ((float)(i % w) + 0.5f) * cell;
        in->pos[1] = cell * 0.5f;
        in->pos[2] = ((float)(i / w) + 0.5f) * cell;
        in->scale = cell * 0.5f;
        set_color(in, 0x8a8f98);
    }
    return 0;
}

int renderer_init(const engine_options *opt)
{
    MPROF_ZONE_C("Renderer::init", MPROF_COLOR_RENDERER);
    memset(&rn, 0, sizeof rn);
    rn.width = opt->width;
    rn.height = opt->height;
    rn.frame_images = opt->frame_images;
    make_meshes();
    rn.max_souls = opt->souls + 16;
    rn.souls = calloc(rn.max_souls, sizeof *rn.souls);
    if (!rn.souls || build_walls())
        return -1;
    if (opt->renderer != ENG_RENDERER_CPU) {
        if (render_backend_vulkan.init(opt, rn.meshes) == 0) {
            rn.be = &render_backend_vulkan;
        } else if (opt->renderer == ENG_RENDERER_VULKAN) {
            log_msg(ENG_LOG_ERROR, "renderer: --renderer vulkan: no usable Vulkan device");
            return -1;
        } else {
            log_msg(ENG_LOG_WARN, "renderer: no usable Vulkan device; using the CPU rasterizer");
        }
    }
    if (!rn.be) {
        if (render_backend_cpu.init(opt, rn.meshes) != 0)
            return -1;
        rn.be = &render_backend_cpu;
    }
    MPROF_PLOT_CONFIG("draw_calls", MPROF_PLOT_FORMAT_NUMBER, MPROF_PLOT_STYLE_STEP,
                      MPROF_COLOR_RENDERER);
    MPROF_PLOT_CONFIG("triangles", MPROF_PLOT_FORMAT_NUMBER, MPROF_PLOT_STYLE_STEP,
                      MPROF_COLOR_RENDERER);
    log_msg(ENG_LOG_INFO, "renderer: %s back end, %dx%d, %u wall instances", rn.be->name,
            rn.width, rn.height, rn.n_walls);
    return 0;
}

void renderer_shutdown(void)
{
    if (rn.be)
        rn.be->shutdown();
    free(rn.walls);
    free(rn.souls);
    rn.walls = NULL;
    rn.souls = NULL;
}

const char *renderer_backend_name(void)
{
    return rn.be ? rn.be->name : "none";
}

void renderer_frame(uint64_t frame)
{
    MPROF_ZONE_C("Renderer::frame", MPROF_COLOR_RENDERER);
    uint64_t t0 = eng_slow_begin();
    render_scene sc;
    memset(&sc, 0, sizeof sc);
    sc.frame = frame;
    {
        MPROF_ZONE_C("Renderer::build_scene", MPROF_COLOR_RENDERER);
        uint32_t n_bodies;
        const body *bodies = physics_bodies(&n_bodies);
        render_instance *spheres = eng_frame_calloc(n_bodies ? n_bodies : 1, sizeof *spheres);
        uint32_t n_souls = souls_views(rn.souls, rn.max_souls);
        render_instance *cubes = eng_frame_calloc(rn.n_walls + n_souls + 1, sizeof *cubes);
        render_instance *ground = eng_frame_calloc(1, sizeof *ground);
        if (!spheres || !cubes || !ground) {
            log_msg(ENG_LOG_ERROR, "renderer: frame arena exhausted, frame %llu skipped",
                    (unsigned long long)frame);
            return;
        }
        for (uint32_t i = 0; i < n_bodies; i++) {
            memcpy(spheres[i].pos, &bodies[i].pos, sizeof spheres[i].pos);
            spheres[i].scale = bodies[i].radius;
            set_color(&spheres[i], bodies[i].color);
        }
        memcpy(cubes, rn.walls, sizeof *cubes * rn.n_walls);
        for (uint32_t i = 0; i < n_souls; i++) {
            render_instance *in = &cubes[rn.n_walls + i];
            memcpy(in->pos, &rn.souls[i].pos, sizeof in->pos);
            in->scale = 0.2f;
            set_color(in, rn.souls[i].color);
        }
        vec3 ws = physics_world_size();
        ground->pos[0] = ground->pos[1] = ground->pos[2] = 0;
        ground->scale = ws.x;
        set_color(ground, 0x3b4252);
        sc.inst[MESH_SPHERE] = spheres;
        sc.n_inst[MESH_SPHERE] = n_bodies;
        sc.inst[MESH_CUBE] = cubes;
        sc.n_inst[MESH_CUBE] = rn.n_walls + n_souls;
        sc.inst[MESH_GROUND] = ground;
        sc.n_inst[MESH_GROUND] = 1;

        /* A camera slowly circling the arena, and a fixed sun. */
        vec3 c = v3(ws.x * 0.5f, 0, ws.z * 0.5f);
        float a = (float)frame * 0.004f;
        vec3 eye = v3_add(c, v3(sinf(a) * 26.0f, 24.0f, -cosf(a) * 26.0f));
        sc.view_proj = m4_mul(m4_perspective(0.9f, (float)rn.width / (float)rn.height, 1.0f, 120.0f),
                              m4_look_at(eye, c, v3(0, 1, 0)));
        sc.light_dir = v3_norm(v3(0.45f, 1.0f, 0.3f));
        vec3 leye = v3_add(c, v3_scale(sc.light_dir, 40.0f));
        sc.light_view_proj = m4_mul(m4_ortho(-26, 26, -26, 26, 1.0f, 90.0f),
                                    m4_look_at(leye, c, v3(0, 0, 1)));
    }
    render_stats st = {0, 0};
    rn.be->frame(&sc, &st);
    rn.last = st;
    if (rn.frame_images) {
        /* The frame just drawn, as a thumbnail of this frame (--frame-images). The CPU back end
         * hands its buffer; Vulkan's pixels() waits for the frames in flight and reads the image
         * back, so with Vulkan this costs a GPU round trip per frame. */
        MPROF_ZONE_C("Renderer::frame_image", MPROF_COLOR_RENDERER);
        int w = 0, h = 0;
        const uint8_t *px = rn.be->pixels(&w, &h);
        if (px && w > 0 && h > 0)
            MPROF_FRAME_IMAGE(px, (uint32_t)w, (uint32_t)h);
    }
    MPROF_PLOT_INT("draw_calls", st.draw_calls);
    MPROF_PLOT_INT("triangles", (int64_t)st.triangles);
    eng_slowdown(ENG_SYS_RENDERER, t0);
}

int renderer_write_png(const char *path)
{
    MPROF_ZONE_C("Renderer::write_png", MPROF_COLOR_RENDERER);
    int w, h;
    const uint8_t *px = rn.be ? rn.be->pixels(&w, &h) : NULL;
    if (!px) {
        log_msg(ENG_LOG_ERROR, "renderer: --png %s: no frame was rendered", path);
        return -1;
    }
    if (png_write_rgba(path, px, w, h) != 0)
        return -1;
    log_msg(ENG_LOG_INFO, "renderer: wrote %s (%dx%d)", path, w, h);
    return 0;
}
