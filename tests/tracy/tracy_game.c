/*
 * tracy_game.c - a small game loop instrumented only with Tracy's C API (tracy/TracyC.h), as an
 * engine instrumented for Tracy is: zones named and unnamed, colored, annotated, made at run
 * time and switched off; frames, secondary frame sets, a discontinuous frame and frame images;
 * plots and their configuration; messages; allocations, named pools, allocation stacks and a
 * pool discard; a lock shared by worker threads and a shared (reader/writer) lock; a fiber; thread names; app info; and Tracy's
 * manual lifetime. Built unchanged against mprof's tracy/TracyC.h (tests/tracy/CMakeLists.txt),
 * it records into an mprof capture, and it counts what it did: with an argument it writes those
 * counts as JSON, which tests/test_tracy.c holds the real `mprof report` of the capture to.
 *
 * Nothing here names mprof: only Tracy's macros and functions.
 */
#define _POSIX_C_SOURCE 200809L
#include <tracy/TracyC.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FRAMES 120
#define WORKERS 3
#define JOBS_PER_WORKER 200

#ifdef TRACY_ENABLE
static TracyCLockCtx queue_lock_ctx;
static TracyCSharedLockCtx world_lock_ctx;
#endif
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t world_lock = PTHREAD_RWLOCK_INITIALIZER;
static int queue_jobs, world_version;

/* What the program did, as the report should count it. */
static struct {
    long frame, physics, ai, render, disabled, script, job, loader, load_step, binding;
    long physics_ticks, loads, images, plots_entities, plots_draw, plots_ms, messages, allocs,
        frees, asset_allocs, asset_frees, stack_allocs, lock_acquisitions, world_reads, world_writes;
} n;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void spin_us(long us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void physics_step(void)
{
    TracyCZoneNC(ctx, "Physics::step", 0x2fa84f, 1);
    TracyCZoneValue(ctx, 42);
    spin_us(200);
    n.physics++;
    TracyCZoneEnd(ctx);
}

static void ai_think(int frame)
{
    TracyCZone(ctx, 1); /* unnamed: Tracy shows the function, so does mprof */
    int agents = 10 + frame % 5;
    TracyCZoneTextF(ctx, "agents=%d", agents);
    spin_us(90 + agents);
    n.ai++;
    TracyCZoneEnd(ctx);
}

static void render(void)
{
    TracyCZoneC(ctx, 0x2f6fde, 1);
    TracyCZoneText(ctx, "opaque pass", 11);
    spin_us(150);
    n.render++;
    TracyCZoneEnd(ctx);
}

static void run_script(int frame)
{
    /* A zone made at run time, as a scripting layer does: the name is built each time, and each
     * distinct name is one site. Tracy's functions are declared only with TRACY_ENABLE. */
    char name[32];
    snprintf(name, sizeof name, "Script::%s", frame >= 0 ? "tick" : "none");
#ifdef TRACY_ENABLE
    static const char file[] = __FILE__, fn[] = "run_script";
    uint64_t loc = ___tracy_alloc_srcloc_name(__LINE__, file, strlen(file), fn, strlen(fn), name,
                                              strlen(name), 0xd63a3a);
    TracyCZoneCtx ctx = ___tracy_emit_zone_begin_alloc(loc, 1);
#endif
    spin_us(50);
    n.script++;
#ifdef TRACY_ENABLE
    ___tracy_emit_zone_end(ctx);
#endif
}

/* A zone through Tracy's functions, as a language binding makes one: its own call-site struct,
 * with no name (Tracy shows the function then). */
static void from_binding(void)
{
#ifdef TRACY_ENABLE
    static const struct ___tracy_source_location_data loc = {NULL, "from_binding", __FILE__,
                                                             (uint32_t)__LINE__, 0};
    TracyCZoneCtx ctx = ___tracy_emit_zone_begin(&loc, 1);
    spin_us(10);
    ___tracy_emit_zone_end(ctx);
#endif
    n.binding++;
}

static void *worker(void *arg)
{
    char name[32];
    snprintf(name, sizeof name, "Worker %d", (int)(intptr_t)arg);
    TracyCSetThreadName(name);
    for (int j = 0; j < JOBS_PER_WORKER; j++) {
        TracyCZoneNC(ctx, "Job", 0x22a6b3, 1);
        TracyCLockBeforeLock(queue_lock_ctx);
        pthread_mutex_lock(&queue_lock);
        TracyCLockAfterLock(queue_lock_ctx);
        queue_jobs++;
        spin_us(20);
        pthread_mutex_unlock(&queue_lock);
        TracyCLockAfterUnlock(queue_lock_ctx);
        /* The world is read under a shared lock that the main thread writes each frame. */
        TracyCSharedLockBeforeSharedLock(world_lock_ctx);
        pthread_rwlock_rdlock(&world_lock);
        TracyCSharedLockAfterSharedLock(world_lock_ctx);
        int seen = world_version;
        pthread_rwlock_unlock(&world_lock);
        TracyCSharedLockAfterSharedUnlock(world_lock_ctx);
        spin_us(30 + seen % 2);
        TracyCZoneEnd(ctx);
        pthread_mutex_lock(&count_lock);
        n.job++;
        n.lock_acquisitions++;
        n.world_reads++;
        pthread_mutex_unlock(&count_lock);
    }
    return NULL;
}

static void load_level(void)
{
    TracyCFrameMarkStart("Load");
    TracyCFiberEnter("Loader");
    for (int i = 0; i < 3; i++) {
        TracyCZoneN(ctx, "Load::step", 1);
        spin_us(80);
        n.load_step++;
        TracyCZoneEnd(ctx);
    }
    TracyCFiberLeave;
    n.loader++;
    TracyCFrameMarkEnd("Load");
    n.loads++;
}

int main(int argc, char **argv)
{
#ifdef TRACY_MANUAL_LIFETIME
    ___tracy_startup_profiler();
    if (!TracyCIsStarted) {
        fprintf(stderr, "tracy_game: the profiler did not start\n");
        return 1;
    }
#endif
    TracyCSetThreadName("Main");
    TracyCAppInfo("tracy_game 1.0", 14);
    TracyCPlotConfig("heap", TracyPlotFormatMemory, 1, 1, 0x9b59d0);
    TracyCLockAnnounce(queue_lock_ctx);
    TracyCLockCustomName(queue_lock_ctx, "JobQueue", 8);
    TracyCSharedLockAnnounce(world_lock_ctx); /* named after the expression: world_lock_ctx */

    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);

    static unsigned char image[32 * 16 * 4];
    size_t heap = 0;
    for (int f = 0; f < FRAMES; f++) {
        TracyCZoneN(frame, "Frame", 1);
        TracyCSharedLockBeforeLock(world_lock_ctx);
        pthread_rwlock_wrlock(&world_lock);
        TracyCSharedLockAfterLock(world_lock_ctx);
        world_version++;
        pthread_rwlock_unlock(&world_lock);
        TracyCSharedLockAfterUnlock(world_lock_ctx);
        n.world_writes++;
        physics_step();
        if (f % 2 == 1) {
            TracyCFrameMarkNamed("Physics tick");
            n.physics_ticks++;
        }
        ai_think(f);
        render();
        run_script(f);
        from_binding();
        {
            TracyCZoneN(off, "Debug::disabled", 0); /* active 0: never recorded */
            n.disabled++;
            TracyCZoneEnd(off);
        }
        void *p = malloc(256);
        TracyCAlloc(p, 256);
        n.allocs++;
        void *asset = malloc(4096);
        TracyCAllocN(asset, 4096, "Assets");
        n.asset_allocs++;
        void *s = malloc(64);
        TracyCAllocS(s, 64, 4);
        n.stack_allocs++;
        n.allocs++;
        heap += 256;
        TracyCPlot("entities", 100.0 + f);
        TracyCPlotI("draw_calls", 40 + f % 7);
        TracyCPlotF("frame_ms", 16.5f);
        n.plots_entities++;
        n.plots_draw++;
        n.plots_ms++;
        if (f % 30 == 0) {
            TracyCMessageL("checkpoint");
            TracyCMessage("saved 3 slots", 13);
            TracyCMessageC("low memory", 10, 0xff0000);
            TracyCMessageLC("shader cache warm", 0x00ff00);
            n.messages += 4;
        }
        if (f == 10)
            load_level();
        if (f % 40 == 0) {
            for (size_t i = 0; i < sizeof image; i++)
                image[i] = (unsigned char)(i * 7 + (size_t)f);
            TracyCFrameImage(image, 32, 16, 0, 1);
            n.images++;
        }
        TracyCFree(p); /* before the free, as Tracy asks: the address may be reused at once */
        free(p);
        TracyCFreeS(s, 4);
        free(s);
        n.frees += 2;
        TracyCFreeN(asset, "Assets");
        free(asset);
        n.asset_frees++;
        n.frame++;
        TracyCZoneEnd(frame);
        TracyCFrameMark;
    }
    TracyCMemoryDiscard("Scratch");
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    TracyCLockTerminate(queue_lock_ctx);
    TracyCSharedLockTerminate(world_lock_ctx);
    (void)heap;
#ifdef TRACY_MANUAL_LIFETIME
    ___tracy_shutdown_profiler();
#endif
    if (argc > 1) {
        FILE *o = fopen(argv[1], "w");
        if (!o)
            return 1;
        fprintf(o,
                "{\"zones\": {\"Frame\": %ld, \"Physics::step\": %ld, \"ai_think\": %ld, "
                "\"render\": %ld, \"Script::tick\": %ld, \"Job\": %ld, \"Load::step\": %ld, "
                "\"from_binding\": %ld, \"Debug::disabled\": 0},\n"
                " \"frames\": %ld, \"frame_sets\": {\"Physics tick\": %ld, \"Load\": %ld},\n"
                " \"images\": %ld, \"plots\": {\"entities\": %ld, \"draw_calls\": %ld, "
                "\"frame_ms\": %ld},\n"
                " \"messages\": %ld, \"allocs\": %ld, \"asset_allocs\": %ld, "
                "\"lock_acquisitions\": %ld, \"queue_jobs\": %d, \"world_reads\": %ld, "
                "\"world_writes\": %ld}\n",
                n.frame, n.physics, n.ai, n.render, n.script, n.job, n.load_step, n.binding, n.frame,
                n.physics_ticks, n.loads, n.images, n.plots_entities, n.plots_draw, n.plots_ms,
                n.messages, n.allocs, n.asset_allocs, n.lock_acquisitions, queue_jobs,
                n.world_reads, n.world_writes);
        fclose(o);
    }
    return 0;
}
