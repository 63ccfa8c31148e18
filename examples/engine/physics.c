/*
 * physics.c - rigid spheres in a box: broadphase grid, narrow phase, integration.
 *
 * Each step: (1) the broadphase sorts bodies into a uniform grid over the floor plane (a
 * counting sort, under the grid's write lock); (2) the narrow phase, split
 * between the job threads, tests each body against the bodies of its 3x3 neighbouring cells
 * (reading the grid under its read lock) and accumulates, for that body only, a position
 * correction and a velocity impulse; (3) integration, also split, applies them with gravity,
 * walls and sleeping. Since every job writes only its own bodies and sums run in index order,
 * the result does not depend on which thread ran what: the simulation is deterministic.
 *
 * A step's scratch (grid cells, contact accumulators) comes from a stack allocator,
 * "Physics::scratch": marked when the step starts, freed back to the mark when it ends.
 */
#include "engine.h"
#include "jobs.h"

#include "mprof/lock.h"
#include "mprof/mprof.h"

#include <stdlib.h>
#include <string.h>

#define WORLD_X 32.0f
#define WORLD_Y 14.0f
#define WORLD_Z 32.0f
#define CELL 1.25f
#define GRAVITY 9.81f
#define RESTITUTION 0.45f
#define SLEEP_SPEED 0.08f
#define SLEEP_STEPS 45
#define KICK_EVERY_STEPS 30

typedef struct contact_acc {
    vec3 corr;         /* position correction */
    vec3 dv;           /* velocity change */
    uint32_t impacts;  /* contacts with a higher-index body, closing */
    float energy;      /* their closing speeds */
    int wake;
} contact_acc;

static struct {
    body *bodies;
    uint32_t n;
    int gx, gz;            /* grid cells */
    uint32_t *cell_start;  /* n_cells + 1, step scratch */
    uint32_t *cell_items;  /* n, step scratch */
    contact_acc *acc;      /* n, step scratch */
    mprof_stack *scratch;
    mprof_rwlock grid_lock;
    eng_rng rng;
    uint64_t steps;
    uint32_t active;
    uint32_t impacts;
    float impact_energy;
    float dt;
} ph;

static int cell_of(float v, int n)
{
    int c = (int)(v / CELL);
    return c < 0 ? 0 : c >= n ? n - 1 : c;
}

int physics_init(const engine_options *opt)
{
    memset(&ph, 0, sizeof ph);
    ph.n = opt->bodies;
    ph.bodies = calloc(ph.n ? ph.n : 1, sizeof *ph.bodies);
    if (!ph.bodies)
        return -1;
    ph.gx = (int)(WORLD_X / CELL) + 1;
    ph.gz = (int)(WORLD_Z / CELL) + 1;
    ph.rng = rng_make(opt->seed, 1);
    MPROF_RWLOCK_INIT(&ph.grid_lock, "Physics::grid");
    /* Scratch for one step: the grid, the sorted items, the accumulators, with room to spare. */
    size_t n_cells = (size_t)ph.gx * (size_t)ph.gz;
    mprof_stack_desc sd = {.name = "Physics::scratch",
                           .capacity_bytes = 4096 + 2 * (n_cells + 1) * sizeof(uint32_t) +
                                             (size_t)ph.n * (sizeof(uint32_t) + sizeof(contact_acc)) +
                                             8 * 64};
    if (mprof_stack_create(&sd, &ph.scratch) != MPROF_OK)
        return -1;
    static const uint32_t palette[] = {0xe6c229, 0xf17105, 0xd11149, 0x6610f2, 0x1a8fe3,
                                       0x2ec4b6, 0xe71d36, 0xff9f1c};
    for (uint32_t i = 0; i < ph.n; i++) {
        body *b = &ph.bodies[i];
        b->radius = rng_range(&ph.rng, 0.3f, 0.6f);
        b->pos = v3(rng_range(&ph.rng, 1, WORLD_X - 1), rng_range(&ph.rng, 1, WORLD_Y - 1),
                    rng_range(&ph.rng, 1, WORLD_Z - 1));
        b->vel = v3(rng_range(&ph.rng, -2, 2), 0, rng_range(&ph.rng, -2, 2));
        b->color = palette[rng_below(&ph.rng, 8)];
    }
    return 0;
}

void physics_shutdown(void)
{
    mprof_rwlock_destroy(&ph.grid_lock);
    mprof_stack_destroy(ph.scratch);
    ph.scratch = NULL;
    free(ph.bodies);
    ph.bodies = NULL;
}

static void broadphase(void)
{
    MPROF_ZONE_C("Physics::broadphase", MPROF_COLOR_PHYSICS);
    uint32_t n_cells = (uint32_t)(ph.gx * ph.gz);
    mprof_rwlock_wrlock(&ph.grid_lock);
    ph.cell_start = mprof_stack_alloc(ph.scratch, sizeof *ph.cell_start * (n_cells + 1), 0);
    ph.cell_items = mprof_stack_alloc(ph.scratch, sizeof *ph.cell_items * (ph.n ? ph.n : 1), 0);
    ph.acc = mprof_stack_alloc(ph.scratch, sizeof *ph.acc * (ph.n ? ph.n : 1), 0);
    if (ph.cell_start && ph.cell_items && ph.acc) {
        memset(ph.cell_start, 0, sizeof *ph.cell_start * (n_cells + 1));
        memset(ph.acc, 0, sizeof *ph.acc * (ph.n ? ph.n : 1));
        for (uint32_t i = 0; i < ph.n; i++) {
            const body *b = &ph.bodies[i];
            ph.cell_start[cell_of(b->pos.z, ph.gz) * ph.gx + cell_of(b->pos.x, ph.gx) + 1]++;
        }
        for (uint32_t c = 0; c < n_cells; c++)
            ph.cell_start[c + 1] += ph.cell_start[c];
        uint32_t *fill = mprof_stack_alloc(ph.scratch, sizeof *fill * n_cells, 0);
        if (fill) {
            memcpy(fill, ph.cell_start, sizeof *fill * n_cells);
            for (uint32_t i = 0; i < ph.n; i++) {
                const body *b = &ph.bodies[i];
                int c = cell_of(b->pos.z, ph.gz) * ph.gx + cell_of(b->pos.x, ph.gx);
                ph.cell_items[fill[c]++] = i;
            }
        }
    }
    mprof_rwlock_wrunlock(&ph.grid_lock);
}

static void narrow_job(void *user, uint32_t begin, uint32_t end, uint32_t worker)
{
    (void)user;
    (void)worker;
    MPROF_ZONE_C("Physics::narrowphase_job", MPROF_COLOR_PHYSICS);
    mprof_rwlock_rdlock(&ph.grid_lock);
    for (uint32_t i = begin; i < end; i++) {
        const body *a = &ph.bodies[i];
        contact_acc *acc = &ph.acc[i];
        int cx = cell_of(a->pos.x, ph.gx), cz = cell_of(a->pos.z, ph.gz);
        for (int z = cz - 1; z <= cz + 1; z++) {
            if (z < 0 || z >= ph.gz)
                continue;
            for (int x = cx - 1; x <= cx + 1; x++) {
                if (x < 0 || x >= ph.gx)
                    continue;
                int c = z * ph.gx + x;
                for (uint32_t k = ph.cell_start[c]; k < ph.cell_start[c + 1]; k++) {
                    uint32_t j = ph.cell_items[k];
                    if (j == i)
                        continue;
                    const body *b = &ph.bodies[j];
                    if (a->asleep && b->asleep)
                        continue;
                    vec3 d = v3_sub(a->pos, b->pos);
                    float dist2 = v3_dot(d, d), rsum = a->radius + b->radius;
                    if (dist2 >= rsum * rsum || dist2 < 1e-12f)
                        continue;
                    float dist = sqrtf(dist2);
                    vec3 nrm = v3_scale(d, 1.0f / dist);
                    acc->corr = v3_add(acc->corr, v3_scale(nrm, (rsum - dist) * 0.5f));
                    float closing = v3_dot(v3_sub(a->vel, b->vel), nrm);
                    if (closing < 0) {
                        acc->dv = v3_sub(acc->dv, v3_scale(nrm, closing * (1 + RESTITUTION) * 0.5f));
                        if (j > i && closing < -0.5f) {
                            acc->impacts++;
                            acc->energy += -closing;
                        }
                    }
                    if (b->asleep == 0)
                        acc->wake = 1;
                }
            }
        }
    }
    mprof_rwlock_rdunlock(&ph.grid_lock);
}

static void integrate_job(void *user, uint32_t begin, uint32_t end, uint32_t worker)
{
    (void)user;
    (void)worker;
    MPROF_ZONE_C("Physics::integrate_job", MPROF_COLOR_PHYSICS);
    float dt = ph.dt;
    const vec3 lo = v3(0, 0, 0), hi = v3(WORLD_X, WORLD_Y, WORLD_Z);
    for (uint32_t i = begin; i < end; i++) {
        body *b = &ph.bodies[i];
        const contact_acc *acc = &ph.acc[i];
        if (b->asleep && !acc->wake)
            continue;
        b->asleep = 0;
        b->vel = v3_add(b->vel, acc->dv);
        b->pos = v3_add(b->pos, acc->corr);
        b->vel.y -= GRAVITY * dt;
        b->pos = v3_add(b->pos, v3_scale(b->vel, dt));
        float *p = &b->pos.x, *v = &b->vel.x;
        const float *l = &lo.x, *h = &hi.x;
        for (int k = 0; k < 3; k++) {
            if (p[k] - b->radius < l[k]) {
                p[k] = l[k] + b->radius;
                if (v[k] < 0)
                    v[k] = -v[k] * RESTITUTION;
            } else if (p[k] + b->radius > h[k]) {
                p[k] = h[k] - b->radius;
                if (v[k] > 0)
                    v[k] = -v[k] * RESTITUTION;
            }
        }
        if (b->pos.y - b->radius <= 1e-3f) {
            b->vel.x *= 0.98f; /* floor friction */
            b->vel.z *= 0.98f;
        }
        if (v3_len(b->vel) < SLEEP_SPEED) {
            if (++b->still_steps > SLEEP_STEPS) {
                b->asleep = 1;
                b->vel = v3(0, 0, 0);
            }
        } else {
            b->still_steps = 0;
        }
    }
}

/* Every so often a few bodies get thrown back into the air, so the scene never settles. */
static void kick(void)
{
    if (ph.steps % KICK_EVERY_STEPS != 0 || ph.n == 0)
        return;
    uint32_t k = 4 + rng_below(&ph.rng, 12);
    for (uint32_t i = 0; i < k; i++) {
        body *b = &ph.bodies[rng_below(&ph.rng, ph.n)];
        b->asleep = 0;
        b->still_steps = 0;
        b->vel = v3_add(b->vel, v3(rng_range(&ph.rng, -4, 4), rng_range(&ph.rng, 6, 12),
                                   rng_range(&ph.rng, -4, 4)));
    }
}

void physics_step(float dt)
{
    MPROF_ZONE_C("Physics::step", MPROF_COLOR_PHYSICS);
    uint64_t t0 = eng_slow_begin();
    ph.dt = dt;
    ph.steps++;
    kick();
    mprof_stack_marker mark = mprof_stack_mark(ph.scratch);
    broadphase();
    if (ph.cell_start && ph.cell_items && ph.acc) {
        {
            MPROF_ZONE_C("Physics::narrowphase", MPROF_COLOR_PHYSICS);
            jobs_parallel_for(narrow_job, NULL, ph.n, 128);
        }
        {
            MPROF_ZONE_C("Physics::integrate", MPROF_COLOR_PHYSICS);
            jobs_parallel_for(integrate_job, NULL, ph.n, 256);
        }
        MPROF_ZONE_C("Physics::stats", MPROF_COLOR_PHYSICS);
        uint32_t active = 0, impacts = 0;
        float energy = 0;
        for (uint32_t i = 0; i < ph.n; i++) {
            active += ph.bodies[i].asleep == 0;
            impacts += ph.acc[i].impacts;
            energy += ph.acc[i].energy;
        }
        ph.active = active;
        ph.impacts = impacts;
        ph.impact_energy = energy;
    }
    mprof_stack_free_to(ph.scratch, mark); /* the step's scratch, all at once */
    ph.cell_start = NULL;
    ph.cell_items = NULL;
    ph.acc = NULL;
    MPROF_PLOT_INT("bodies", ph.active);
    eng_slowdown(ENG_SYS_PHYSICS, t0);
}

const body *physics_bodies(uint32_t *out_count)
{
    *out_count = ph.n;
    return ph.bodies;
}

uint32_t physics_active_bodies(void)
{
    return ph.active;
}

uint32_t physics_impacts(float *out_energy)
{
    *out_energy = ph.impact_energy;
    return ph.impacts;
}

vec3 physics_world_size(void)
{
    return v3(WORLD_X, WORLD_Y, WORLD_Z);
}

uint64_t physics_hash(void)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < ph.n; i++) {
        uint32_t w[3];
        memcpy(w, &ph.bodies[i].pos, sizeof w);
        for (int k = 0; k < 3; k++)
            h = (h ^ w[k]) * 1099511628211ull;
    }
    return h;
}
