/*
 * souls.c - the AI: agents ("souls") that perceive, plan paths and act.
 *
 * A step has four phases, each a red zone:
 *   spawn      despawn agents whose life ran out, spawn new ones towards a target population
 *              that swells and ebbs over time (entities come from the "Souls::entities" pool
 *              of mprof's allocator kit);
 *   perception (jobs) each agent counts neighbours and nearby moving bodies; sightings are
 *              posted to a shared blackboard under its mutex, read-only world access under the
 *              "Souls::world" rwlock;
 *   pathfind   (jobs) agents that asked for a route run A* on the map, with per-thread scratch;
 *   behaviour  (fibers) a few fibers on the main thread share the agents and run each one's
 *              state machine (wander along the path, flee when something is close, idle),
 *              yielding every few agents like a real cooperative AI scheduler.
 * Agents are kept in a list ordered by id and every agent draws from its own random stream,
 * so the outcome does not depend on thread timing.
 */
#include "engine.h"
#include "fiber_sched.h"
#include "jobs.h"
#include "pathfind.h"

#include "mprof/lock.h"
#include "mprof/mprof.h"

#include <stdlib.h>
#include <string.h>

#define MAP_W 64
#define MAP_H 64
#define MAP_CELL 0.5f
#define MAX_PATH 96
#define MAX_PATH_REQUESTS 24
#define N_FIBERS 4
#define FIBER_BATCH 8
#define SEE_RADIUS 3.0f
#define AGRID 16 /* agent grid: 16 x 16 cells of 2 world units */

typedef enum soul_state { SOUL_IDLE = 0, SOUL_WANDER, SOUL_FLEE } soul_state;

typedef struct soul {
    uint32_t id;
    float x, z;
    soul_state state;
    uint32_t life_steps;
    uint32_t idle_steps;
    eng_rng rng;
    int needs_path;
    int goal;
    int32_t path[MAX_PATH];
    int path_len, path_pos;
    /* perception results (written by the perception job for this agent only) */
    uint32_t neighbours;
    float threat_dx, threat_dz;
    int threatened;
} soul;

static struct {
    uint8_t map[MAP_W * MAP_H];
    mprof_pool *pool;
    soul **list; /* live agents ordered by id */
    uint32_t n, cap;
    uint32_t target;
    uint32_t next_id;
    eng_rng rng;
    uint64_t steps;
    float dt;
    pathfind_scratch *scratch; /* one per job thread */
    uint32_t n_scratch;
    soul **requests;
    uint32_t n_requests;
    uint32_t path_failures;
    uint32_t events;
    /* agent grid for perception */
    uint32_t *agrid_start, *agrid_items;
    mprof_rwlock world_lock;
    mprof_mutex blackboard_lock;
    uint32_t blackboard_sightings;
    uint32_t heat[AGRID * AGRID]; /* threat heat map: integer, so merge order cannot matter */
} so;

static const char *const fiber_names[N_FIBERS] = {"Souls fiber 0", "Souls fiber 1",
                                                  "Souls fiber 2", "Souls fiber 3"};
static uint32_t fiber_index[N_FIBERS];

static int walkable(int cell)
{
    return cell >= 0 && cell < MAP_W * MAP_H && so.map[cell] == 0;
}

static int cell_at(float x, float z)
{
    int cx = (int)(x / MAP_CELL), cz = (int)(z / MAP_CELL);
    if (cx < 0) cx = 0;
    if (cz < 0) cz = 0;
    if (cx >= MAP_W) cx = MAP_W - 1;
    if (cz >= MAP_H) cz = MAP_H - 1;
    return cz * MAP_W + cx;
}

static void build_map(void)
{
    memset(so.map, 0, sizeof so.map);
    for (int i = 0; i < MAP_W; i++) {
        so.map[i] = so.map[(MAP_H - 1) * MAP_W + i] = 1;
        so.map[i * MAP_W] = so.map[i * MAP_W + MAP_W - 1] = 1;
    }
    /* Wall segments with gaps: enough to make paths interesting, and a few closed rooms so
     * some goals are unreachable (the AI must cope with failed searches). */
    for (int k = 0; k < 22; k++) {
        int x = 2 + (int)rng_below(&so.rng, MAP_W - 4), z = 2 + (int)rng_below(&so.rng, MAP_H - 4);
        int len = 4 + (int)rng_below(&so.rng, 14), horizontal = (int)rng_below(&so.rng, 2);
        for (int i = 0; i < len; i++) {
            int cx = horizontal ? x + i : x, cz = horizontal ? z : z + i;
            if (cx > 0 && cz > 0 && cx < MAP_W - 1 && cz < MAP_H - 1)
                so.map[cz * MAP_W + cx] = 1;
        }
    }
    for (int k = 0; k < 3; k++) {
        int x = 4 + (int)rng_below(&so.rng, MAP_W - 12), z = 4 + (int)rng_below(&so.rng, MAP_H - 12);
        for (int i = 0; i < 5; i++) {
            so.map[z * MAP_W + x + i] = so.map[(z + 4) * MAP_W + x + i] = 1;
            so.map[(z + i) * MAP_W + x] = so.map[(z + i) * MAP_W + x + 4] = 1;
        }
    }
}

static int random_walkable(eng_rng *r)
{
    for (int tries = 0; tries < 64; tries++) {
        int c = (int)rng_below(r, MAP_W * MAP_H);
        if (walkable(c))
            return c;
    }
    return MAP_W + 1;
}

static void spawn_one(void)
{
    soul *s = mprof_pool_alloc(so.pool);
    if (!s)
        return;
    memset(s, 0, sizeof *s);
    s->id = so.next_id++;
    s->rng = rng_make(so.rng.s, 1000 + s->id);
    int c = random_walkable(&s->rng);
    s->x = ((float)(c % MAP_W) + 0.5f) * MAP_CELL;
    s->z = ((float)(c / MAP_W) + 0.5f) * MAP_CELL;
    s->life_steps = 240 + rng_below(&s->rng, 1200);
    s->state = SOUL_IDLE;
    so.list[so.n++] = s;
    log_msg(ENG_LOG_TRACE, "soul %u spawned at cell %d", s->id, c);
}

static void spawn_phase(void)
{
    MPROF_ZONE_C("Souls::spawn", MPROF_COLOR_AI);
    uint32_t kept = 0, died = 0;
    for (uint32_t i = 0; i < so.n; i++) {
        soul *s = so.list[i];
        if (s->life_steps-- == 0) {
            mprof_pool_free(so.pool, s);
            died++;
        } else {
            so.list[kept++] = s;
        }
    }
    so.n = kept;
    /* The population breathes: the target moves along a slow triangle wave. */
    uint32_t period = 1200, phase = (uint32_t)(so.steps % period);
    uint32_t swing = phase < period / 2 ? phase : period - phase;
    uint32_t target = so.target / 2 + (uint32_t)((uint64_t)so.target * swing / period);
    uint32_t born = 0;
    while (so.n < target && so.n < so.cap && born < 8) {
        spawn_one();
        born++;
    }
    if (died || born)
        log_msg(ENG_LOG_DEBUG, "souls: %u died, %u born, %u alive", died, born, so.n);
}

static void build_agent_grid(void)
{
    MPROF_ZONE_C("Souls::agent_grid", MPROF_COLOR_AI);
    mprof_rwlock_wrlock(&so.world_lock);
    so.agrid_start = eng_frame_calloc(AGRID * AGRID + 1, sizeof *so.agrid_start);
    so.agrid_items = eng_frame_calloc(so.n ? so.n : 1, sizeof *so.agrid_items);
    uint32_t *fill = eng_frame_calloc(AGRID * AGRID, sizeof *fill);
    if (so.agrid_start && so.agrid_items && fill) {
        float cell = (float)(MAP_W * MAP_CELL) / AGRID;
        for (uint32_t i = 0; i < so.n; i++) {
            int gx = (int)(so.list[i]->x / cell), gz = (int)(so.list[i]->z / cell);
            so.agrid_start[(gz & (AGRID - 1)) * AGRID + (gx & (AGRID - 1)) + 1]++;
        }
        for (int c = 0; c < AGRID * AGRID; c++)
            so.agrid_start[c + 1] += so.agrid_start[c];
        memcpy(fill, so.agrid_start, sizeof *fill * AGRID * AGRID);
        for (uint32_t i = 0; i < so.n; i++) {
            int gx = (int)(so.list[i]->x / cell), gz = (int)(so.list[i]->z / cell);
            so.agrid_items[fill[(gz & (AGRID - 1)) * AGRID + (gx & (AGRID - 1))]++] = i;
        }
    } else {
        so.agrid_start = NULL;
    }
    mprof_rwlock_wrunlock(&so.world_lock);
}

static void perception_job(void *user, uint32_t begin, uint32_t end, uint32_t worker)
{
    (void)user;
    (void)worker;
    MPROF_ZONE_C("Souls::perception_job", MPROF_COLOR_AI);
    uint32_t n_bodies;
    const body *bodies = physics_bodies(&n_bodies);
    const float cell = (float)(MAP_W * MAP_CELL) / AGRID;
    mprof_rwlock_rdlock(&so.world_lock);
    for (uint32_t i = begin; i < end; i++) {
        soul *s = so.list[i];
        s->neighbours = 0;
        s->threatened = 0;
        s->threat_dx = s->threat_dz = 0;
        int gx = (int)(s->x / cell), gz = (int)(s->z / cell);
        for (int z = gz - 1; z <= gz + 1; z++)
            for (int x = gx - 1; x <= gx + 1; x++) {
                if (x < 0 || z < 0 || x >= AGRID || z >= AGRID)
                    continue;
                int c = z * AGRID + x;
                for (uint32_t k = so.agrid_start[c]; k < so.agrid_start[c + 1]; k++) {
                    const soul *o = so.list[so.agrid_items[k]];
                    float dx = o->x - s->x, dz = o->z - s->z;
                    if (o != s && dx * dx + dz * dz < SEE_RADIUS * SEE_RADIUS)
                        s->neighbours++;
                }
            }
        /* Moving bodies near the ground are threats. Bodies are few per agent's view, but
         * checking them all is the honest cost of perception without a shared broadphase. */
        for (uint32_t b = 0; b < n_bodies; b += 4) {
            const body *bd = &bodies[b];
            if (bd->asleep || bd->pos.y > 2.0f)
                continue;
            float dx = bd->pos.x - s->x, dz = bd->pos.z - s->z;
            if (dx * dx + dz * dz < 2.0f * 2.0f) {
                s->threatened = 1;
                s->threat_dx += dx;
                s->threat_dz += dz;
            }
        }
    }
    mprof_rwlock_rdunlock(&so.world_lock);
    /* Post this grain's sightings to the shared blackboard: a heat map every agent reads when
     * it picks a goal. Integer sums commute, so the order in which jobs merge is irrelevant. */
    mprof_mutex_lock(&so.blackboard_lock);
    for (uint32_t i = begin; i < end; i++) {
        const soul *s = so.list[i];
        if (!s->threatened)
            continue;
        so.blackboard_sightings++;
        int gx = (int)(s->x / cell), gz = (int)(s->z / cell);
        for (int z = gz - 1; z <= gz + 1; z++)
            for (int x = gx - 1; x <= gx + 1; x++)
                if (x >= 0 && z >= 0 && x < AGRID && z < AGRID)
                    so.heat[z * AGRID + x] += (x == gx && z == gz) ? 4u : 1u;
    }
    mprof_mutex_unlock(&so.blackboard_lock);
}

static void pathfind_job(void *user, uint32_t begin, uint32_t end, uint32_t worker)
{
    (void)user;
    pathfind_scratch *scratch = &so.scratch[worker];
    for (uint32_t i = begin; i < end; i++) {
        soul *s = so.requests[i];
        int len = pathfind(scratch, so.map, cell_at(s->x, s->z), s->goal, s->path, MAX_PATH);
        s->path_len = len < 0 ? 0 : len;
        s->path_pos = 0;
        s->needs_path = len < 0 ? -1 : 0; /* -1: failed, the behaviour picks another goal */
    }
}

static void pathfind_phase(void)
{
    MPROF_ZONE_C("Souls::pathfind", MPROF_COLOR_AI);
    so.n_requests = 0;
    for (uint32_t i = 0; i < so.n && so.n_requests < MAX_PATH_REQUESTS; i++)
        if (so.list[i]->needs_path == 1)
            so.requests[so.n_requests++] = so.list[i];
    MPROF_ZONE_VALUE(so.n_requests);
    jobs_parallel_for(pathfind_job, NULL, so.n_requests, 2);
    uint32_t failed = 0;
    for (uint32_t i = 0; i < so.n_requests; i++)
        failed += so.requests[i]->needs_path == -1;
    if (failed) {
        log_msg(ENG_LOG_DEBUG, "souls: %u of %u path requests found no route", failed,
                so.n_requests);
        if ((so.path_failures + failed) / 16 != so.path_failures / 16)
            log_msg(ENG_LOG_WARN, "souls: %u path searches failed so far (unreachable goals)",
                    so.path_failures + failed);
    }
    so.path_failures += failed;
}

/* Threat heat around a map cell, from the blackboard (complete before behaviours run). */
static uint32_t goal_heat(int cell)
{
    const float agent_cell = (float)(MAP_W * MAP_CELL) / AGRID;
    int gx = (int)(((float)(cell % MAP_W) + 0.5f) * MAP_CELL / agent_cell);
    int gz = (int)(((float)(cell / MAP_W) + 0.5f) * MAP_CELL / agent_cell);
    return so.heat[(gz & (AGRID - 1)) * AGRID + (gx & (AGRID - 1))];
}

/* One agent's state machine for one step. */
static void think(soul *s)
{
    const float speed = s->state == SOUL_FLEE ? 3.0f : 1.4f;
    if (s->threatened && s->state != SOUL_FLEE) {
        s->state = SOUL_FLEE;
        s->path_len = 0;
        so.events++;
    }
    switch (s->state) {
    case SOUL_IDLE:
        if (++s->idle_steps > 20 + rng_below(&s->rng, 60)) {
            s->idle_steps = 0;
            s->goal = random_walkable(&s->rng);
            if (goal_heat(s->goal) > 8) /* somewhere dangerous: think again, once */
                s->goal = random_walkable(&s->rng);
            if (rng_below(&s->rng, 6) == 0)
                s->goal = (int)rng_below(&s->rng, MAP_W * MAP_H); /* sometimes a bad goal */
            s->needs_path = 1;
            s->state = SOUL_WANDER;
            so.events++;
        }
        break;
    case SOUL_WANDER:
        if (s->needs_path == -1) {
            s->needs_path = 0;
            s->state = SOUL_IDLE;
        } else if (!s->needs_path && s->path_pos >= s->path_len) {
            s->state = SOUL_IDLE;
        } else if (!s->needs_path) {
            int c = s->path[s->path_pos];
            float tx = ((float)(c % MAP_W) + 0.5f) * MAP_CELL;
            float tz = ((float)(c / MAP_W) + 0.5f) * MAP_CELL;
            float dx = tx - s->x, dz = tz - s->z, d = sqrtf(dx * dx + dz * dz);
            float step = speed * so.dt;
            if (d <= step) {
                s->x = tx;
                s->z = tz;
                s->path_pos++;
            } else {
                s->x += dx / d * step;
                s->z += dz / d * step;
            }
        }
        break;
    case SOUL_FLEE: {
        float dx = -s->threat_dx, dz = -s->threat_dz, d = sqrtf(dx * dx + dz * dz);
        if (!s->threatened || d < 1e-4f) {
            s->state = SOUL_IDLE;
            break;
        }
        float nx = s->x + dx / d * speed * so.dt, nz = s->z + dz / d * speed * so.dt;
        if (walkable(cell_at(nx, nz))) {
            s->x = nx;
            s->z = nz;
        }
        break;
    }
    }
}

static void behaviour_fiber(void *arg)
{
    uint32_t k = *(const uint32_t *)arg;
    for (;;) {
        uint32_t done = 0;
        for (uint32_t i = k; i < so.n; i += N_FIBERS) {
            {
                MPROF_ZONE_C("Souls::think", MPROF_COLOR_AI);
                think(so.list[i]);
            }
            if (++done % FIBER_BATCH == 0)
                fiber_yield();
        }
        fiber_park();
    }
}

int souls_init(const engine_options *opt)
{
    memset(&so, 0, sizeof so);
    so.rng = rng_make(opt->seed, 2);
    so.target = opt->souls;
    so.cap = opt->souls + 16;
    so.list = calloc(so.cap, sizeof *so.list);
    so.requests = calloc(so.cap, sizeof *so.requests);
    /* Spawns are rare, so each records who allocated it (8 frames of callstack). */
    mprof_pool_desc pd = {.name = "Souls::entities", .block_bytes = sizeof(soul),
                          .n_blocks = so.cap, .callstack_depth = 8};
    if (!so.list || !so.requests || mprof_pool_create(&pd, &so.pool) != MPROF_OK)
        return -1;
    so.n_scratch = jobs_thread_count();
    so.scratch = calloc(so.n_scratch, sizeof *so.scratch);
    if (!so.scratch)
        return -1;
    for (uint32_t i = 0; i < so.n_scratch; i++)
        if (pathfind_scratch_init(&so.scratch[i], MAP_W, MAP_H))
            return -1;
    MPROF_RWLOCK_INIT(&so.world_lock, "Souls::world");
    MPROF_MUTEX_INIT(&so.blackboard_lock, "Souls::blackboard");
    build_map();
    if (fsched_init(N_FIBERS, 64 * 1024))
        return -1;
    for (uint32_t k = 0; k < N_FIBERS; k++) {
        fiber_index[k] = k;
        if (fiber_create(fiber_names[k], behaviour_fiber, &fiber_index[k]))
            return -1;
    }
    for (uint32_t i = 0; i < so.target / 2; i++)
        spawn_one();
    return 0;
}

void souls_shutdown(void)
{
    fsched_shutdown();
    for (uint32_t i = 0; i < so.n_scratch; i++)
        pathfind_scratch_free(&so.scratch[i]);
    free(so.scratch);
    for (uint32_t i = 0; i < so.n; i++) /* the survivors, so the pool balances */
        mprof_pool_free(so.pool, so.list[i]);
    so.n = 0;
    mprof_pool_destroy(so.pool);
    so.pool = NULL;
    free(so.list);
    free(so.requests);
    mprof_rwlock_destroy(&so.world_lock);
    mprof_mutex_destroy(&so.blackboard_lock);
    log_msg(ENG_LOG_INFO, "souls: %u agents ever, %u failed path searches, %u threat sightings",
            so.next_id, so.path_failures, so.blackboard_sightings);
}

void souls_step(float dt)
{
    MPROF_ZONE_C("Souls::step", MPROF_COLOR_AI);
    uint64_t t0 = eng_slow_begin();
    so.dt = dt;
    so.steps++;
    so.events = 0;
    spawn_phase();
    for (int c = 0; c < AGRID * AGRID; c++) /* old sightings fade */
        so.heat[c] -= (so.heat[c] + 7) / 8;
    build_agent_grid();
    if (so.agrid_start) {
        MPROF_ZONE_C("Souls::perception", MPROF_COLOR_AI);
        jobs_parallel_for(perception_job, NULL, so.n, 16);
    }
    pathfind_phase();
    {
        MPROF_ZONE_C("Souls::behaviour", MPROF_COLOR_AI);
        fsched_tick();
    }
    so.agrid_start = so.agrid_items = NULL;
    MPROF_PLOT_INT("entities", so.n);
    eng_slowdown(ENG_SYS_SOULS, t0);
}

uint32_t souls_views(soul_view *out, uint32_t max)
{
    static const uint32_t colors[] = {0xd63a3a, 0xe85d5d, 0xffc857};
    uint32_t n = so.n < max ? so.n : max;
    for (uint32_t i = 0; i < n; i++) {
        const soul *s = so.list[i];
        out[i].pos = v3(s->x, 0.35f, s->z);
        out[i].color = colors[s->state];
        out[i].id = s->id;
    }
    return n;
}

uint32_t souls_count(void)
{
    return so.n;
}

const uint8_t *souls_map(int *out_w, int *out_h, float *out_cell)
{
    *out_w = MAP_W;
    *out_h = MAP_H;
    *out_cell = MAP_CELL;
    return so.map;
}

uint32_t souls_events(void)
{
    return so.events;
}

uint64_t souls_hash(void)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < so.n; i++) {
        uint32_t w[3];
        memcpy(&w[0], &so.list[i]->x, 4);
        memcpy(&w[1], &so.list[i]->z, 4);
        w[2] = so.list[i]->id;
        for (int k = 0; k < 3; k++)
            h = (h ^ w[k]) * 1099511628211ull;
    }
    return h;
}
