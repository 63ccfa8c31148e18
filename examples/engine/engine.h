/*
 * engine.h - what the engine's modules share: options, the subsystem list, the clock and each
 * module's entry points.
 *
 * The frame (kernel.c): nexus (client send, server, client receive) -> fixed-step simulation
 * (physics then souls AI, twice per frame at 120 Hz) -> audio mix -> render (shadow, main and
 * post passes) -> frame mark. Modules talk through the small read-only views declared here
 * (bodies, agents, the map), never through each other's internals.
 */
#ifndef ENGINE_ENGINE_H
#define ENGINE_ENGINE_H

#include "emath.h"

#include "mprof/alloc.h"
#include "mprof/mprof.h"

#include <stdint.h>

/* Subsystems, for --slow and for the per-subsystem timings. */
typedef enum eng_sys {
    ENG_SYS_NONE = 0,
    ENG_SYS_RENDERER,
    ENG_SYS_PHYSICS,
    ENG_SYS_SOULS,
    ENG_SYS_NEXUS,
    ENG_SYS_AUDIO,
    ENG_SYS_COUNT
} eng_sys;

typedef enum eng_renderer_kind {
    ENG_RENDERER_AUTO = 0, /* Vulkan when a device exists, else the CPU rasterizer */
    ENG_RENDERER_VULKAN,
    ENG_RENDERER_CPU
} eng_renderer_kind;

typedef struct engine_options {
    uint32_t frames;          /* --frames; 0 = no frame limit */
    double seconds;           /* --seconds; 0 = no time limit */
    const char *capture_path; /* --capture */
    int listen;               /* --listen */
    eng_sys slow_sys;         /* --slow SYS=PCT, --slow-cpu SYS=PCT */
    int slow_pct;
    int slow_cpu;             /* --slow-cpu: PCT of the subsystem's CPU time, not its wall time */
    int threads;              /* --threads: worker threads */
    uint64_t seed;            /* --seed */
    const char *png_path;     /* --png */
    int frame_images;         /* --frame-images: MPROF_FRAME_IMAGE of every rendered frame */
    eng_renderer_kind renderer; /* --renderer */
    int width, height;        /* --size WxH of the rendered frame */
    uint32_t bodies;          /* --bodies */
    uint32_t souls;           /* --souls */
    int quiet;                /* --quiet: only warnings and errors on stderr */
    int verbose;              /* --verbose: debug lines on stderr too */
    const char *auto_capture; /* --auto-capture now|frame:N|event:NAME */
    double auto_capture_seconds;      /* --auto-capture-seconds (default 1) */
    const char *auto_capture_output;  /* --auto-capture-output */
} engine_options;

#define ENG_SIM_HZ 120
#define ENG_STEPS_PER_FRAME 2
#define ENG_SIM_DT (1.0f / ENG_SIM_HZ)

/* ---- kernel.c ---- */
/* Runs the engine until the frame or time limit (or SIGINT). Returns the process exit code. */
int kernel_run(const engine_options *opt);
/* CLOCK_MONOTONIC in nanoseconds: the engine's own clock (never used for simulation). */
uint64_t eng_now_ns(void);
/* The named subsystem, for --slow ("physics", "Physics::step", "renderer"...), or ENG_SYS_NONE. */
eng_sys eng_sys_from_name(const char *name);
const char *eng_sys_name(eng_sys s);
/* --slow: when sys is the slowed subsystem, burns (now - t0) * pct / 100 of real CPU work, where
 * t0 comes from eng_slow_begin() at the subsystem's start: wall time with --slow, the calling
 * thread's CPU time with --slow-cpu (which a busy machine does not stretch). */
uint64_t eng_slow_begin(void);
void eng_slowdown(eng_sys sys, uint64_t t0_ns);
/* The frame arena ("Kernel::frame_arena", mprof's allocator kit): everything allocated from it
 * dies at the end of the frame. Main thread only. */
mprof_arena *eng_frame_arena(void);
/* count zeroed elements of size bytes from the frame arena, 16-byte aligned; NULL when full. */
void *eng_frame_calloc(size_t count, size_t size);

/* ---- capture.c: capture automation (--auto-capture) ---- */
/* 0 when spec is now, frame:N or event:NAME. */
int capture_parse_spec(const char *spec);
/* Arms the automation (main thread, after the profiler started). */
int capture_auto_begin(const engine_options *o);
/* Fires a named engine event ("level-loaded", "hitch") for an event:NAME trigger. */
void capture_auto_event(const char *name);
/* Once per frame: advances the automation without blocking. */
void capture_auto_frame(void);
/* After the main loop: lets a running capture finish (bounded), prints auto_capture=STATUS on
 * stdout and returns 0 when it was saved (or never triggered), 1 when it failed. */
int capture_auto_end(void);

/* ---- log.c ---- */
/* The profiler's message levels, one for one, so a line keeps its severity in the timeline. */
typedef enum eng_log_level {
    ENG_LOG_TRACE = (int)MPROF_LOG_TRACE,
    ENG_LOG_DEBUG = (int)MPROF_LOG_DEBUG,
    ENG_LOG_INFO = (int)MPROF_LOG_INFO,
    ENG_LOG_WARN = (int)MPROF_LOG_WARN,
    ENG_LOG_ERROR = (int)MPROF_LOG_ERROR,
    ENG_LOG_FATAL = (int)MPROF_LOG_FATAL
} eng_log_level;
/* Lines at or above level go to stderr; every line goes to the timeline. */
void log_set_level(eng_log_level level);
void log_msg(eng_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Lines written so far at each level (index by eng_log_level). */
uint64_t log_count(eng_log_level level);

/* ---- physics.c ---- */
typedef struct body {
    vec3 pos, vel;
    float radius;
    uint32_t color; /* 0xRRGGBB */
    uint32_t still_steps; /* steps below the sleep speed */
    int asleep;
} body;
int physics_init(const engine_options *opt);
void physics_shutdown(void);
void physics_step(float dt);
const body *physics_bodies(uint32_t *out_count);
uint32_t physics_active_bodies(void);
/* Contacts found in the last step and their summed closing speed (drives audio). */
uint32_t physics_impacts(float *out_energy);
vec3 physics_world_size(void);
uint64_t physics_hash(void);

/* ---- souls.c (AI) ---- */
typedef struct soul_view {
    vec3 pos;
    uint32_t color;
    uint32_t id;
} soul_view;
int souls_init(const engine_options *opt);
void souls_shutdown(void);
void souls_step(float dt);
/* Writes up to max agents into out; returns how many. */
uint32_t souls_views(soul_view *out, uint32_t max);
uint32_t souls_count(void);
/* The map: w x h cells, 1 = wall; cell size in world units. */
const uint8_t *souls_map(int *out_w, int *out_h, float *out_cell);
/* Agents that started a new behaviour this step (drives audio cues). */
uint32_t souls_events(void);
uint64_t souls_hash(void);

/* ---- nexus.c (networking) ---- */
int nexus_init(const engine_options *opt);
void nexus_shutdown(void);
void nexus_frame(uint64_t frame);
uint64_t nexus_packets_received(void);

/* ---- audio.c ---- */
/* Asset streaming (streaming.c): requests made on the game thread, loaded on a loader thread,
 * taken in frames later; each request is an async span. */
int streaming_init(const engine_options *opt);
void streaming_frame(uint64_t frame);
void streaming_shutdown(void);

int audio_init(const engine_options *opt);
void audio_shutdown(void);
/* Starts voices for this frame's events and mixes one frame of sound. */
void audio_frame(uint32_t impacts, float impact_energy, uint32_t soul_events);
uint32_t audio_voices(void);
uint64_t audio_hash(void);

/* ---- renderer.c ---- */
int renderer_init(const engine_options *opt);
void renderer_shutdown(void);
void renderer_frame(uint64_t frame);
/* Writes the last rendered frame as a PNG. Returns 0 or -1. */
int renderer_write_png(const char *path);
const char *renderer_backend_name(void);

#endif
