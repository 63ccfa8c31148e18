/*
 * emath.h - the engine's small math kit: a deterministic random generator, 3-vectors and
 * column-major 4x4 matrices. Header-only, static inline, no profiler code.
 *
 * Determinism: every random decision in the engine draws from an eng_rng seeded from --seed
 * (never from time or addresses), and every floating-point reduction runs in a fixed order, so
 * two runs with the same seed and frame count end with the same world hash.
 */
#ifndef ENGINE_EMATH_H
#define ENGINE_EMATH_H

#include <math.h>
#include <stdint.h>

typedef struct eng_rng {
    uint64_t s;
} eng_rng;

/* splitmix64: good enough statistically, one word of state, trivially seedable. */
static inline uint64_t rng_next(eng_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline eng_rng rng_make(uint64_t seed, uint64_t stream)
{
    eng_rng r = {seed ^ (stream * 0xd1b54a32d192ed03ull)};
    (void)rng_next(&r);
    return r;
}
/* Uniform in [0, 1). */
static inline float rng_float(eng_rng *r)
{
    return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f);
}
static inline float rng_range(eng_rng *r, float lo, float hi)
{
    return lo + (hi - lo) * rng_float(r);
}
/* Uniform in [0, n). */
static inline uint32_t rng_below(eng_rng *r, uint32_t n)
{
    return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

typedef struct vec3 {
    float x, y, z;
} vec3;

static inline vec3 v3(float x, float y, float z)
{
    vec3 v = {x, y, z};
    return v;
}
static inline vec3 v3_add(vec3 a, vec3 b) { return v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static inline vec3 v3_sub(vec3 a, vec3 b) { return v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static inline vec3 v3_scale(vec3 a, float s) { return v3(a.x * s, a.y * s, a.z * s); }
static inline float v3_dot(vec3 a, vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static inline vec3 v3_cross(vec3 a, vec3 b)
{
    return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static inline float v3_len(vec3 a) { return sqrtf(v3_dot(a, a)); }
static inline vec3 v3_norm(vec3 a)
{
    float l = v3_len(a);
    return l > 1e-12f ? v3_scale(a, 1.0f / l) : v3(0, 0, 0);
}

/* Column-major: m[col * 4 + row], the layout GLSL expects. */
typedef struct mat4 {
    float m[16];
} mat4;

static inline mat4 m4_mul(mat4 a, mat4 b)
{
    mat4 r;
    for (int c = 0; c < 4; c++)
        for (int row = 0; row < 4; row++) {
            float s = 0;
            for (int k = 0; k < 4; k++)
                s += a.m[k * 4 + row] * b.m[c * 4 + k];
            r.m[c * 4 + row] = s;
        }
    return r;
}
static inline mat4 m4_look_at(vec3 eye, vec3 at, vec3 up)
{
    vec3 f = v3_norm(v3_sub(at, eye));
    vec3 s = v3_norm(v3_cross(f, up));
    vec3 u = v3_cross(s, f);
    mat4 r = {{s.x, u.x, -f.x, 0, s.y, u.y, -f.y, 0, s.z, u.z, -f.z, 0, -v3_dot(s, eye),
               -v3_dot(u, eye), v3_dot(f, eye), 1}};
    return r;
}
/* Vulkan clip space: y down, depth 0..1. */
static inline mat4 m4_perspective(float fovy, float aspect, float zn, float zf)
{
    float t = 1.0f / tanf(fovy * 0.5f);
    mat4 r = {{t / aspect, 0, 0, 0, 0, -t, 0, 0, 0, 0, zf / (zn - zf), -1, 0, 0,
               zn * zf / (zn - zf), 0}};
    return r;
}
static inline mat4 m4_ortho(float l, float rt, float b, float t, float zn, float zf)
{
    mat4 r = {{2 / (rt - l), 0, 0, 0, 0, -2 / (t - b), 0, 0, 0, 0, -1 / (zf - zn), 0,
               -(rt + l) / (rt - l), (t + b) / (t - b), -zn / (zf - zn), 1}};
    return r;
}
/* Transforms a point: returns clip coordinates (x, y, z) and w in *out_w. */
static inline vec3 m4_point(const mat4 *a, vec3 p, float *out_w)
{
    const float *m = a->m;
    *out_w = m[3] * p.x + m[7] * p.y + m[11] * p.z + m[15];
    return v3(m[0] * p.x + m[4] * p.y + m[8] * p.z + m[12],
              m[1] * p.x + m[5] * p.y + m[9] * p.z + m[13],
              m[2] * p.x + m[6] * p.y + m[10] * p.z + m[14]);
}

#endif
