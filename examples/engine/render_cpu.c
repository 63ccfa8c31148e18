/*
 * render_cpu.c - the CPU rasterizer back end: the same three passes as the Vulkan back end,
 * drawn in software so the engine runs on machines without any Vulkan driver.
 *
 * Each geometry pass first transforms every instance's vertices (a parallel job over
 * instances), then rasterizes all triangles in horizontal bands (a parallel job over bands:
 * each band owns its rows, so no two threads write the same pixel). Triangles are lit per
 * vertex (Lambert), depth-tested per pixel and shadowed per pixel against the light's depth
 * map. The post pass tone-maps the HDR colour buffer, adds a vignette and writes RGBA8.
 * Attributes are interpolated linearly in screen space, which is good enough at this scale.
 */
#include "jobs.h"
#include "render.h"

#include "mprof/mprof.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#define BANDS 8
#define MIN2(a, b) ((a) < (b) ? (a) : (b))
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
#define MIN3(a, b, c) MIN2(MIN2(a, b), c)
#define MAX3(a, b, c) MAX2(MAX2(a, b), c)

typedef struct tvert {
    float x, y, z;     /* pixels, pixels, depth 0..1 */
    float lu, lv, ld;  /* light-space texel coordinates and depth (main pass) */
    float diff;        /* Lambert term */
    float r, g, b;
    int clipped;       /* behind the near plane */
} tvert;

static struct {
    int w, h;
    float *color; /* w * h * 3, linear HDR */
    float *depth;
    float *shadow; /* RENDER_SHADOW_SIZE^2 */
    uint8_t *rgba;
    int have_frame;
    const render_mesh *meshes;
} cpu;

/* Work shared by the jobs of one pass. */
typedef struct pass {
    const render_scene *sc;
    const mat4 *vp;
    int shadow;               /* depth-only from the light */
    int tw, th;               /* target size */
    float *depth;
    uint32_t inst_base[MESH_COUNT + 1]; /* flattened instance index of each mesh */
    uint32_t vert_base[MESH_COUNT];
    int n_meshes;             /* meshes drawn (the shadow pass skips the ground) */
    tvert *tv;
} pass;

static int cpu_init(const engine_options *opt, const render_mesh meshes[MESH_COUNT])
{
    cpu.w = opt->width;
    cpu.h = opt->height;
    size_t n = (size_t)cpu.w * (size_t)cpu.h;
    cpu.color = malloc(n * 3 * sizeof *cpu.color);
    cpu.depth = malloc(n * sizeof *cpu.depth);
    cpu.shadow = malloc((size_t)RENDER_SHADOW_SIZE * RENDER_SHADOW_SIZE * sizeof *cpu.shadow);
    cpu.rgba = malloc(n * 4);
    cpu.meshes = meshes;
    cpu.have_frame = 0;
    if (!cpu.color || !cpu.depth || !cpu.shadow || !cpu.rgba) {
        free(cpu.color);
        free(cpu.depth);
        free(cpu.shadow);
        free(cpu.rgba);
        memset(&cpu, 0, sizeof cpu);
        return -1;
    }
    return 0;
}

static void cpu_shutdown(void)
{
    free(cpu.color);
    free(cpu.depth);
    free(cpu.shadow);
    free(cpu.rgba);
    memset(&cpu, 0, sizeof cpu);
}

static void transform_job(void *user, uint32_t begin, uint32_t end, uint32_t worker)
{
    (void)worker;
    MPROF_ZONE_C("Renderer::cpu_transform", MPROF_COLOR_RENDERER);
    pass *p = user;
    const render_scene *sc = p->sc;
    for (uint32_t g = begin; g < end; g++) {
        int m = 0;
        while (g >= p->inst_base[m + 1])
            m++;
        uint32_t i = g - p->inst_base[m];
        const render_instance *in = &sc->inst[m][i];
        const render_mesh *mesh = &cpu.meshes[m];
        tvert *out = &p->tv[p->vert_base[m] + i * mesh->n_verts];
        for (uint32_t v = 0; v < mesh->n_verts; v++) {
            const render_vertex *rv = &mesh->verts[v];
            vec3 wp = v3(in->pos[0] + rv->pos[0] * in->scale, in->pos[1] + rv->pos[1] * in->scale,
                         in->pos[2] + rv->pos[2] * in->scale);
            float w;
            vec3 c = m4_point(p->vp, wp, &w);
            tvert *t = &out[v];
            t->clipped = w < 1e-3f;
            float iw = t->clipped ? 0 : 1.0f / w;
            t->x = (c.x * iw * 0.5f + 0.5f) * (float)p->tw;
            t->y = (c.y * iw * 0.5f + 0.5f) * (float)p->th;
            t->z = c.z * iw;
            if (p->shadow)
                continue;
            float lw;
            vec3 l = m4_point(&sc->light_view_proj, wp, &lw);
            t->lu = (l.x * 0.5f + 0.5f) * RENDER_SHADOW_SIZE;
            t->lv = (l.y * 0.5f + 0.5f) * RENDER_SHADOW_SIZE;
            t->ld = l.z;
            float d = rv->normal[0] * sc->light_dir.x + rv->normal[1] * sc->light_dir.y +
                      rv->normal[2] * sc->light_dir.z;
            t->diff = d > 0 ? d : 0;
            t->r = in->color[0];
            t->g = in->color[1];
            t->b = in->color[2];
        }
    }
}

static void raster_tri(const pass *p, const tvert *a, const tvert *b, const tvert *c, int y0,
                       int y1)
{
    /* Cheapest test first: most triangles miss this band. (MIN/MAX rather than fminf/fmaxf,
     * which are library calls under strict C11 because of their NaN rules.) */
    float miny = MIN3(a->y, b->y, c->y), maxy = MAX3(a->y, b->y, c->y);
    if (maxy < (float)y0 || miny > (float)y1 || a->clipped || b->clipped || c->clipped)
        return;
    float area = (b->x - a->x) * (c->y - a->y) - (c->x - a->x) * (b->y - a->y);
    if (area > -1e-6f)
        return; /* back-facing or degenerate (front faces are clockwise in pixel space) */
    float minx = MIN3(a->x, b->x, c->x), maxx = MAX3(a->x, b->x, c->x);
    int ix0 = minx < 0 ? 0 : (int)minx, iy0 = miny < (float)y0 ? y0 : (int)miny;
    int ix1 = maxx > (float)(p->tw - 1) ? p->tw - 1 : (int)maxx + 1;
    int iy1 = maxy > (float)(y1 - 1) ? y1 - 1 : (int)maxy + 1;
    if (ix1 > p->tw - 1)
        ix1 = p->tw - 1;
    if (iy1 > y1 - 1)
        iy1 = y1 - 1;
    if (ix0 > ix1 || iy0 > iy1)
        return;
    const float inv = 1.0f / area;
    for (int y = iy0; y <= iy1; y++) {
        float py = (float)y + 0.5f;
        for (int x = ix0; x <= ix1; x++) {
            float px = (float)x + 0.5f;
            float w0 = ((b->x - px) * (c->y - py) - (c->x - px) * (b->y - py)) * inv;
            float w1 = ((c->x - px) * (a->y - py) - (a->x - px) * (c->y - py)) * inv;
            float w2 = 1.0f - w0 - w1;
            if (w0 < 0 || w1 < 0 || w2 < 0)
                continue;
            float z = w0 * a->z + w1 * b->z + w2 * c->z;
            size_t idx = (size_t)y * (size_t)p->tw + (size_t)x;
            if (z < 0 || z >= p->depth[idx])
                continue;
            p->depth[idx] = z;
            if (p->shadow)
                continue;
            float lu = w0 * a->lu + w1 * b->lu + w2 * c->lu;
            float lv = w0 * a->lv + w1 * b->lv + w2 * c->lv;
            float ld = w0 * a->ld + w1 * b->ld + w2 * c->ld;
            int su = (int)lu, sv = (int)lv;
            float lit = 1.0f;
            if (su >= 0 && sv >= 0 && su < RENDER_SHADOW_SIZE && sv < RENDER_SHADOW_SIZE &&
                ld - 0.004f > cpu.shadow[sv * RENDER_SHADOW_SIZE + su])
                lit = 0.3f;
            float diff = w0 * a->diff + w1 * b->diff + w2 * c->diff;
            float k = 0.22f + 0.9f * diff * lit;
            float *out = &cpu.color[idx * 3];
            out[0] = (w0 * a->r + w1 * b->r + w2 * c->r) * k;
            out[1] = (w0 * a->g + w1 * b->g + w2 * c->g) * k;
            out[2] = (w0 * a->b + w1 * b->b + w2 * c->b) * k;
        }
    }
}

static void raster_job(void *user, uint32_t begin, uint32_t end, uint32_t worker)
{
    (void)worker;
    pass *p = user;
    MPROF_ZONE_C("Renderer::cpu_raster", MPROF_COLOR_RENDERER);
    for (uint32_t band = begin; band < end; band++) {
        int y0 = (int)band * p->th / BANDS, y1 = ((int)band + 1) * p->th / BANDS;
        for (int y = y0; y < y1; y++)
            for (int x = 0; x < p->tw; x++) {
                size_t idx = (size_t)y * (size_t)p->tw + (size_t)x;
                p->depth[idx] = 1.0f;
                if (!p->shadow) { /* sky: a vertical gradient */
                    float t = (float)y / (float)p->th;
                    cpu.color[idx * 3 + 0] = 0.18f + 0.25f * t;
                    cpu.color[idx * 3 + 1] = 0.24f + 0.25f * t;
                    cpu.color[idx * 3 + 2] = 0.38f + 0.2f * t;
                }
            }
        for (int m = 0; m < p->n_meshes; m++) {
            const render_mesh *mesh = &cpu.meshes[m];
            for (uint32_t i = 0; i < p->sc->n_inst[m]; i++) {
                const tvert *tv = &p->tv[p->vert_base[m] + i * mesh->n_verts];
                for (uint32_t k = 0; k + 2 < mesh->n_indices; k += 3)
                    raster_tri(p, &tv[mesh->indices[k]], &tv[mesh->indices[k + 1]],
                               &tv[mesh->indices[k + 2]], y0, y1);
            }
        }
    }
}

static void post_job(void *user, uint32_t begin, uint32_t end, uint32_t worker)
{
    (void)user;
    (void)worker;
    MPROF_ZONE_C("Renderer::cpu_post", MPROF_COLOR_RENDERER);
    for (uint32_t band = begin; band < end; band++) {
        int y0 = (int)band * cpu.h / BANDS, y1 = ((int)band + 1) * cpu.h / BANDS;
        for (int y = y0; y < y1; y++)
            for (int x = 0; x < cpu.w; x++) {
                size_t idx = (size_t)y * (size_t)cpu.w + (size_t)x;
                float dx = ((float)x + 0.5f) / (float)cpu.w - 0.5f;
                float dy = ((float)y + 0.5f) / (float)cpu.h - 0.5f;
                float vig = 1.0f - 0.8f * (dx * dx + dy * dy);
                for (int k = 0; k < 3; k++) {
                    float c = cpu.color[idx * 3 + k] * 1.6f;
                    c = c / (1.0f + c) * vig;
                    c = sqrtf(c < 0 ? 0 : c);
                    cpu.rgba[idx * 4 + k] = (uint8_t)(c >= 1.0f ? 255 : (int)(c * 255.0f + 0.5f));
                }
                cpu.rgba[idx * 4 + 3] = 255;
            }
    }
}

static int geometry_pass(pass *p)
{
    uint32_t n_inst = 0, n_verts = 0;
    for (int m = 0; m < p->n_meshes; m++) {
        p->inst_base[m] = n_inst;
        p->vert_base[m] = n_verts;
        n_inst += p->sc->n_inst[m];
        n_verts += p->sc->n_inst[m] * cpu.meshes[m].n_verts;
    }
    p->inst_base[p->n_meshes] = n_inst;
    p->tv = mprof_arena_alloc(eng_frame_arena(), sizeof *p->tv * (n_verts ? n_verts : 1), 16);
    if (!p->tv)
        return -1;
    jobs_parallel_for(transform_job, p, n_inst, 64);
    jobs_parallel_for(raster_job, p, BANDS, 1);
    return 0;
}

static void count_pass(const render_scene *sc, int n_meshes, render_stats *out)
{
    for (int m = 0; m < n_meshes; m++) {
        out->draw_calls += render_batches(sc->n_inst[m]);
        out->triangles += (uint64_t)sc->n_inst[m] * (cpu.meshes[m].n_indices / 3);
    }
}

static void cpu_frame(const render_scene *sc, render_stats *out)
{
    {
        MPROF_ZONE_C("Renderer::shadow_pass", MPROF_COLOR_RENDERER);
        pass p;
        memset(&p, 0, sizeof p);
        p.sc = sc;
        p.vp = &sc->light_view_proj;
        p.shadow = 1;
        p.tw = p.th = RENDER_SHADOW_SIZE;
        p.depth = cpu.shadow;
        p.n_meshes = MESH_GROUND; /* the ground only receives shadows */
        if (geometry_pass(&p))
            return;
        count_pass(sc, p.n_meshes, out);
    }
    {
        MPROF_ZONE_C("Renderer::main_pass", MPROF_COLOR_RENDERER);
        pass p;
        memset(&p, 0, sizeof p);
        p.sc = sc;
        p.vp = &sc->view_proj;
        p.tw = cpu.w;
        p.th = cpu.h;
        p.depth = cpu.depth;
        p.n_meshes = MESH_COUNT;
        if (geometry_pass(&p))
            return;
        count_pass(sc, p.n_meshes, out);
    }
    {
        MPROF_ZONE_C("Renderer::post_pass", MPROF_COLOR_RENDERER);
        jobs_parallel_for(post_job, NULL, BANDS, 1);
        out->draw_calls += 1;
        out->triangles += 1;
    }
    cpu.have_frame = 1;
}

static const uint8_t *cpu_pixels(int *out_w, int *out_h)
{
    *out_w = cpu.w;
    *out_h = cpu.h;
    return cpu.have_frame ? cpu.rgba : NULL;
}

const render_backend render_backend_cpu = {"cpu", cpu_init, cpu_frame, cpu_pixels, cpu_shutdown};
