/*
 * mprof.h - the mprof instrumentation API (C11 and C++).
 *
 * Overview
 *   mprof is a frame profiler for real-time C programs. You mark regions of code (zones), frame
 *   boundaries, plots, log messages, allocations, locks, fibers, async spans (work that begins
 *   on one thread and ends on another) and GPU work; a background collector compresses what
 *   your threads record and writes it to a capture file (.mprof) or streams it to
 *   `mprof capture`. `mprof report`, `mprof view` and friends read captures.
 *
 * Step by step
 *   1. Compile the code you want to profile with -DMPROF_ENABLE and link libmprof
 *      (CMake: find_package(mprof) + target_link_libraries(app mprof::mprof); pkg-config: mprof).
 *   2. Put MPROF_ZONE_C("Physics::step", MPROF_COLOR_PHYSICS); at the top of a function or block,
 *      MPROF_FRAME_MARK(); at the end of each main-loop iteration.
 *   3. Run with MPROF_CAPTURE=out.mprof (or call mprof_startup() with config.capture_path), then
 *      `mprof report out.mprof`.
 *   Nothing else is needed: the first event starts the profiler and an atexit handler flushes.
 *
 * Compile-time options
 *   MPROF_ENABLE    defined: instrumentation records. Undefined (the default): every macro expands
 *                   to ((void)0) or a typed constant and never evaluates its arguments; the program
 *                   references no mprof symbol and need not link libmprof.
 *   MPROF_SHIPPING  marks a shipping build. Defining it together with MPROF_ENABLE is a compile
 *                   error, so a shipping binary can never carry the profiler.
 *   MPROF_NO_CLEANUP_ATTR  use only the explicit begin/end zone forms (for compilers without
 *                   __attribute__((cleanup)); set automatically for such compilers).
 *
 * Threading
 *   Every macro may be called from any thread. Each thread writes only its own buffer; the zone
 *   hot path takes no lock, makes no system call and allocates only when its buffer block fills.
 *   mprof_startup() and mprof_shutdown() are called from one thread (usually main), not
 *   concurrently with each other.
 *
 * Errors
 *   Recording never fails visibly: when the memory cap is reached events are dropped, counted,
 *   written into the capture as a LOST record and shown by `mprof report`. Functions that can
 *   fail return mprof_result (0 = MPROF_OK); mprof_result_str() names the result.
 *
 * Strings
 *   Zone, plot, frame, pool, lock, fiber and async track names must have static storage duration
 *   (string literals): only their address travels on the hot path. Texts passed to
 *   MPROF_ZONE_TEXT, MPROF_ZONE_NAME, MPROF_MESSAGEF, MPROF_THREAD_NAME, MPROF_APP_INFO and
 *   MPROF_ASYNC_BEGIN_DYN are copied.
 *
 * Environment (overrides the config passed to mprof_startup; see docs/API.md for the table)
 *   MPROF_CAPTURE=path          write the capture straight to this file
 *   MPROF_MEMORY_MIB=n          cap on buffered event memory (default 256)
 *   MPROF_ZSTD_LEVEL=n          compression level (default 1)
 *   MPROF_NO_INVARIANT_CHECK=1  skip the invariant-TSC check
 *   MPROF_ADDRESS, MPROF_PORT, MPROF_LISTEN, MPROF_HISTORY_SECONDS: live capture
 *   MPROF_VERBOSE=1             print start-up and shutdown lines on stderr
 *   MPROF_CONTEXT_SWITCHES=0, MPROF_CPU_USAGE=0, MPROF_SAMPLE_HZ=N: system tracing
 *                               (docs/SYSTEM.md; switches and CPU usage on, sampling off)
 */
#ifndef MPROF_MPROF_H
#define MPROF_MPROF_H

#if defined(MPROF_SHIPPING) && defined(MPROF_ENABLE)
#error "mprof: shipping builds must not enable profiling (MPROF_ENABLE); instrumentation is stripped by leaving MPROF_ENABLE undefined."
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPROF_VERSION_MAJOR 0
#define MPROF_VERSION_MINOR 1

#if defined(_WIN32)
#define MPROF_API
#elif defined(__GNUC__)
#define MPROF_API __attribute__((visibility("default")))
#else
#define MPROF_API
#endif

#if !defined(__GNUC__) && !defined(MPROF_NO_CLEANUP_ATTR)
#define MPROF_NO_CLEANUP_ATTR
#endif

/* ---------------------------------------------------------------------------------------------
 * Colors: 0xRRGGBB. 0 means "no color" (the viewer picks one from the name).
 * The subsystem colors are the convention every engine that adopts mprof shares, so a timeline
 * reads the same in every project: renderer blue, physics green, AI red.
 */
#define MPROF_COLOR_DEFAULT  0x000000u
#define MPROF_COLOR_RENDERER 0x2f6fdeu /* blue */
#define MPROF_COLOR_PHYSICS  0x2fa84fu /* green */
#define MPROF_COLOR_AI       0xd63a3au /* red */
#define MPROF_COLOR_AUDIO    0x9b59d0u /* purple */
#define MPROF_COLOR_NETWORK  0xe08a1eu /* orange */
#define MPROF_COLOR_IO       0x8a6d3bu /* brown */
#define MPROF_COLOR_JOBS     0x22a6b3u /* teal */

/* Message levels; each has a default color in the timeline. */
typedef enum mprof_log_level {
    MPROF_LOG_TRACE = 1,
    MPROF_LOG_DEBUG = 2,
    MPROF_LOG_INFO = 3,
    MPROF_LOG_WARN = 4,
    MPROF_LOG_ERROR = 5,
    MPROF_LOG_FATAL = 6
} mprof_log_level;

/* The default timeline color of each message level (0xRRGGBB), used by the viewer and by
 * exports: trace grey, debug blue, info white-grey, warn amber, error red, fatal magenta. */
static inline uint32_t mprof_log_level_color(mprof_log_level level)
{
    static const uint32_t colors[7] = {0x808080u, 0x8c8c8cu, 0x5fa8d3u, 0xd0d0d0u,
                                       0xf2c14eu, 0xe05a47u, 0xc2188bu};
    return colors[(unsigned)level <= 6u ? (unsigned)level : 0u];
}

/* Plot display options (mprof_plot_config). 0 is the default in each enum. */
typedef enum mprof_plot_format {
    MPROF_PLOT_FORMAT_DEFAULT = 0, /* number */
    MPROF_PLOT_FORMAT_NUMBER = 1,
    MPROF_PLOT_FORMAT_MEMORY = 2, /* bytes, shown as KiB/MiB */
    MPROF_PLOT_FORMAT_PERCENTAGE = 3
} mprof_plot_format;

typedef enum mprof_plot_style {
    MPROF_PLOT_STYLE_DEFAULT = 0, /* line */
    MPROF_PLOT_STYLE_LINE = 1,
    MPROF_PLOT_STYLE_STEP = 2
} mprof_plot_style;

typedef enum mprof_toggle {
    MPROF_TOGGLE_DEFAULT = 0,
    MPROF_TOGGLE_ON = 1,
    MPROF_TOGGLE_OFF = 2
} mprof_toggle;

/* Results of the functions that can fail. 0 is success. Names and messages: mprof_result_str. */
#define MPROF_RESULT_MAP(X)                                                                        \
    X(OK, "success")                                                                               \
    X(ERR_INVALID, "invalid argument")                                                             \
    X(ERR_NOMEM, "out of memory")                                                                  \
    X(ERR_IO, "input/output error")                                                                \
    X(ERR_STATE, "call not valid in the current state")                                            \
    X(ERR_NET, "network error")                                                                    \
    X(ERR_UNSUPPORTED, "not supported on this platform or build")

typedef enum mprof_result {
#define MPROF__RESULT_ENUM(name, msg) MPROF_##name,
    MPROF_RESULT_MAP(MPROF__RESULT_ENUM)
#undef MPROF__RESULT_ENUM
    MPROF_RESULT_COUNT
} mprof_result;

/* A call site's static description. Each instrumented site owns one; only its address travels. */
typedef struct mprof_srcloc {
    const char *name;     /* zone name (literal) */
    const char *function; /* __func__ */
    const char *file;     /* __FILE__ */
    uint32_t line;        /* __LINE__ */
    uint32_t color;       /* 0xRRGGBB, 0 = default */
} mprof_srcloc;

/*
 * Start-up configuration. A zero-initialised struct means all defaults:
 * mprof_startup(&(mprof_config){0}) works. Environment variables override these fields.
 */
typedef struct mprof_config {
    const char *capture_path;      /* write the capture to this file; default NULL = no file
                                      (env MPROF_CAPTURE). Parent directories are created. */
    size_t memory_limit_bytes;     /* cap on buffered, not yet written events; default 256 MiB
                                      (env MPROF_MEMORY_MIB). Past it events are dropped. */
    int compression_level;         /* zstd level 1..19; default 1 (env MPROF_ZSTD_LEVEL) */
    uint32_t flush_interval_ms;    /* how often the collector drains buffers; default 2 */
    uint32_t chunk_bytes;          /* uncompressed bytes per capture chunk; default 1 MiB */
    mprof_toggle invariant_check;  /* check that the TSC is invariant; default on
                                      (env MPROF_NO_INVARIANT_CHECK=1 turns it off) */
    const char *app_name;          /* process name in the capture; default: the program name */
    /* Live capture (see docs/CAPTURE.md). */
    mprof_toggle listen;           /* listen for `mprof capture`; default on when no
                                      capture_path is set (env MPROF_LISTEN=0/1) */
    const char *listen_address;    /* default "127.0.0.1" (env MPROF_ADDRESS) */
    uint16_t listen_port;          /* default 8086 (env MPROF_PORT) */
    double history_seconds;        /* events kept in memory for late captures; default 5
                                      (env MPROF_HISTORY_SECONDS), 0 = default, <0 = none */
    mprof_toggle verbose;          /* print start/stop lines on stderr; default off */
} mprof_config;

/* Counters of the running profiler (mprof_get_stats). */
typedef struct mprof_stats {
    uint64_t events_recorded;  /* events taken from thread buffers by the collector */
    uint64_t events_lost;      /* events dropped because the memory cap was reached */
    uint64_t bytes_raw;        /* uncompressed capture bytes produced */
    uint64_t bytes_written;    /* bytes written to the file sink */
    uint64_t chunks_written;
    uint64_t buffered_bytes;   /* bytes in thread blocks not yet collected */
    uint64_t peak_buffered_bytes;
    uint32_t threads;          /* threads that have recorded */
    uint32_t sessions_dropped; /* live sessions that ended because the peer vanished */
    uint64_t gpu_queries_lost; /* GPU zones not recorded: query ids exhausted */
} mprof_stats;

/* ---------------------------------------------------------------------------------------------
 * Functions. These exist whether or not MPROF_ENABLE is defined in the caller (they live in
 * libmprof); the macros are what compiles away.
 */

/* Starts the profiler with cfg (NULL = defaults). Main thread, once; a second call without
 * mprof_shutdown returns MPROF_ERR_STATE. On failure nothing is started. */
MPROF_API mprof_result mprof_startup(const mprof_config *cfg);
/* Flushes every thread's events, finalises the capture and stops the collector. Safe to call
 * when not started. Threads that record afterwards are ignored until the next startup. */
MPROF_API void mprof_shutdown(void);
/* Non-zero while events are being recorded (a capture or the history ring is active). */
MPROF_API int mprof_is_recording(void);
/* Copies the current counters into *out. Any thread. */
MPROF_API void mprof_get_stats(mprof_stats *out);
/* Forces the collector to write everything recorded so far (blocks until written). */
MPROF_API void mprof_flush(void);
/* Name of a result code ("MPROF_ERR_IO") and its message. */
MPROF_API const char *mprof_result_name(mprof_result r);
MPROF_API const char *mprof_result_str(mprof_result r);
/* Nanoseconds of the profiler clock (the same clock zones use). Any thread. */
MPROF_API uint64_t mprof_now_ns(void);

/* Plot display: format, style and color (0 = default). name is a literal. Any thread. */
MPROF_API void mprof_plot_config(const char *name, mprof_plot_format format,
                                 mprof_plot_style style, uint32_t color);

/* ---------------------------------------------------------------------------------------------
 * Internal entry points used by the macros. Not API: names and signatures may change.
 */
MPROF_API int mprof__zone_begin_slow(const mprof_srcloc *loc);
MPROF_API void mprof__zone_end_slow(void);
MPROF_API void mprof__zone_end_lost(void);
MPROF_API void mprof__zone_text(const char *text, size_t len);
MPROF_API void mprof__zone_name(const char *text, size_t len);
MPROF_API void mprof__zone_value(uint64_t value);
MPROF_API void mprof__frame_mark(const char *name);
MPROF_API void mprof__frame_begin(const char *name);
MPROF_API void mprof__frame_end(const char *name);
MPROF_API void mprof__frame_image(const void *rgba, uint32_t width, uint32_t height);
MPROF_API void mprof__plot_f64(const char *name, double value);
MPROF_API void mprof__plot_i64(const char *name, int64_t value);
MPROF_API void mprof__message(int level, const char *text, size_t len);
MPROF_API void mprof__messagef(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
MPROF_API void mprof__thread_name(const char *name);
MPROF_API void mprof__app_info(const char *text, size_t len);
/* Memory (implemented in src/memory.c). pool NULL = the default heap; depth 0 = no callstack.
 * ptr is only recorded, never read: access(none) stops GCC warning that fresh, uninitialised
 * memory is passed to a const pointer parameter. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#define MPROF__NO_ACCESS(i) __attribute__((access(none, i)))
#else
#define MPROF__NO_ACCESS(i)
#endif
MPROF_API void mprof__alloc(const void *ptr, size_t size, const char *pool, int depth)
    MPROF__NO_ACCESS(1);
MPROF_API void mprof__free(const void *ptr, const char *pool, int depth) MPROF__NO_ACCESS(1);
MPROF_API void mprof__pool_discard(const char *pool);
/* Fibers (src/runtime/events/fiber.c). */
MPROF_API void mprof__fiber_enter(const char *name);
MPROF_API void mprof__fiber_leave(void);
/* Async spans (src/runtime/events/async.c). */
MPROF_API void mprof__async_begin(const char *track, uint64_t id, const char *name);
MPROF_API void mprof__async_begin_dyn(const char *track, uint64_t id, const char *name);
MPROF_API void mprof__async_end(const char *track, uint64_t id);

/* The per-thread write cursor. cur is written by its thread and read by the collector. */
typedef struct mprof__tbuf {
    unsigned char *cur;
    unsigned char *end;
} mprof__tbuf;

#define MPROF__EV_ZONE_BEGIN 0x10
#define MPROF__EV_ZONE_END 0x11
#define MPROF__ZONE_BEGIN_BYTES 17
#define MPROF__ZONE_END_BYTES 9
#define MPROF__MODE_RECORDING 2

#if defined(__GNUC__)
#define MPROF__LIKELY(x) __builtin_expect(!!(x), 1)
#define MPROF__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define MPROF__LIKELY(x) (x)
#define MPROF__UNLIKELY(x) (x)
#endif

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__aarch64__)) && !defined(MPROF_NO_INLINE)
#define MPROF__INLINE_HOT 1
extern MPROF_API int mprof__mode;
extern MPROF_API int mprof__use_tsc;
extern MPROF_API __thread mprof__tbuf *mprof__tls;
MPROF_API uint64_t mprof__ticks_os(void);

/* Raw timestamp: the invariant cycle counter when usable, else CLOCK_MONOTONIC nanoseconds. */
static inline uint64_t mprof__ticks(void)
{
    if (MPROF__LIKELY(mprof__use_tsc)) {
#if defined(__x86_64__)
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
#else
        uint64_t v;
        __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
        return v;
#endif
    }
    return mprof__ticks_os();
}

static inline int mprof__zone_begin(const mprof_srcloc *loc)
{
    /* Declarations first: the header compiles under -Wdeclaration-after-statement. */
    int mode = __atomic_load_n(&mprof__mode, __ATOMIC_RELAXED);
    mprof__tbuf *t;
    unsigned char *c;
    uint64_t ts;
    if (MPROF__UNLIKELY(mode != MPROF__MODE_RECORDING))
        return mode == 0 ? mprof__zone_begin_slow(loc) : 0; /* 0: not started yet */
    t = mprof__tls;
    c = t->cur;
    if (MPROF__UNLIKELY((size_t)(t->end - c) < MPROF__ZONE_BEGIN_BYTES))
        return mprof__zone_begin_slow(loc);
    ts = mprof__ticks();
    c[0] = MPROF__EV_ZONE_BEGIN;
    memcpy(c + 1, &ts, 8);
    memcpy(c + 9, &loc, 8);
    __atomic_store_n(&t->cur, c + MPROF__ZONE_BEGIN_BYTES, __ATOMIC_RELEASE);
    return 1;
}

static inline void mprof__zone_end(void)
{
    uint64_t ts;
    mprof__tbuf *t;
    unsigned char *c;
    if (MPROF__UNLIKELY(__atomic_load_n(&mprof__mode, __ATOMIC_RELAXED) != MPROF__MODE_RECORDING))
        return;
    ts = mprof__ticks();
    t = mprof__tls;
    c = t->cur;
    if (MPROF__UNLIKELY((size_t)(t->end - c) < MPROF__ZONE_END_BYTES)) {
        mprof__zone_end_slow();
        return;
    }
    c[0] = MPROF__EV_ZONE_END;
    memcpy(c + 1, &ts, 8);
    __atomic_store_n(&t->cur, c + MPROF__ZONE_END_BYTES, __ATOMIC_RELEASE);
}
#else
#define mprof__zone_begin mprof__zone_begin_slow
#define mprof__zone_end mprof__zone_end_slow
#endif

/* active: 0 = the begin was not recorded (profiler off), 1 = recorded, 2 = dropped at the
 * memory cap, so the end is dropped and counted too and the capture stays balanced. */
static inline void mprof__zone_cleanup(int *active)
{
    if (MPROF__LIKELY(*active == 1))
        mprof__zone_end();
    else if (*active == 2)
        mprof__zone_end_lost();
}

/* ---------------------------------------------------------------------------------------------
 * GPU contexts (generic; the Vulkan, OpenGL and CUDA helpers in mprof/vulkan.h, mprof/gl.h and
 * mprof/cuda.h build on these). See docs/GPU.md.
 *
 * A context is one GPU timeline (a queue, a GL context, a CUDA device) with its timestamp period.
 * mprof_gpu_zone_begin records the CPU time at which the work is recorded/submitted and reserves a
 * pair of query ids (begin = an even id q, end = q + 1); the program writes the GPU timestamps of
 * those queries with its API and uploads them later with mprof_gpu_time, in any order, possibly
 * frames later. A pair is reused only after both its timestamps were uploaded; when every pair
 * is in flight, begin returns MPROF_GPU_NO_QUERY and counts the zone in
 * mprof_stats.gpu_queries_lost (logged once), and the program writes no timestamp for it.
 */
typedef uint32_t mprof_gpu_ctx; /* 0 = invalid */
#define MPROF_GPU_NO_QUERY 0xffffffffu

typedef enum mprof_gpu_api {
    MPROF_GPU_API_DEFAULT = 0,
    MPROF_GPU_API_VULKAN = 1,
    MPROF_GPU_API_OPENGL = 2,
    MPROF_GPU_API_CUDA = 3,
    MPROF_GPU_API_OTHER = 4
} mprof_gpu_api;

/* Creates a context. name is a literal; period_ns is the length of one GPU timestamp tick in
 * nanoseconds (Vulkan: VkPhysicalDeviceLimits.timestampPeriod; GL: 1); n_queries is the number
 * of query ids the program has (rounded down to even, 0 = 4096, at most 1 << 20). Works before
 * mprof_startup: the context is announced in every capture it records into. Returns 0 for a
 * period that is not positive, when out of memory, or when 255 contexts exist. Any thread. */
MPROF_API mprof_gpu_ctx mprof_gpu_context_new(const char *name, mprof_gpu_api api,
                                              double period_ns, uint32_t n_queries);
/* Frees the context. Queries still in flight are forgotten. No other thread may use ctx during or
 * after the call. destroy(0) is a no-op. */
MPROF_API void mprof_gpu_context_destroy(mprof_gpu_ctx ctx);
/* Records that GPU timestamp gpu_ts (ticks) and CPU time cpu_ns (the mprof_now_ns clock; 0 = now)
 * were taken at the same instant. Call once at start and again from time to time to follow drift.
 * Any thread. */
MPROF_API void mprof_gpu_calibrate(mprof_gpu_ctx ctx, int64_t gpu_ts, uint64_t cpu_ns);
/* Converts a CLOCK_MONOTONIC time in nanoseconds (what VK_EXT_calibrated_timestamps returns for
 * VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT) to the mprof_now_ns clock. Any thread. */
MPROF_API uint64_t mprof_gpu_monotonic_to_ns(uint64_t monotonic_ns);
/* Begins a GPU zone: records the CPU time and reserves a query pair. Returns the begin query id
 * (write the GPU begin timestamp there), or MPROF_GPU_NO_QUERY when not recording or out of
 * queries (write nothing then). Any thread. */
MPROF_API uint32_t mprof_gpu_zone_begin(mprof_gpu_ctx ctx, const mprof_srcloc *loc);
/* Ends the zone begun with begin_query: records the CPU time and returns the end query id
 * (begin_query + 1), or MPROF_GPU_NO_QUERY when begin_query is MPROF_GPU_NO_QUERY. Any thread. */
MPROF_API uint32_t mprof_gpu_zone_end(mprof_gpu_ctx ctx, uint32_t begin_query);
/* Uploads the GPU timestamp (ticks) of query_id; frees the pair once both of its ids are in.
 * Any thread, any order. Ids not in flight are ignored. */
MPROF_API void mprof_gpu_time(mprof_gpu_ctx ctx, uint32_t query_id, int64_t gpu_ts);
/* The ids that may be in flight: *out_first gets the oldest; the return value is how many ids,
 * from there in ring order (wrapping at n_queries), to poll. Any thread. */
MPROF_API uint32_t mprof_gpu_pending(mprof_gpu_ctx ctx, uint32_t *out_first);

/* ---------------------------------------------------------------------------------------------
 * Locks. mprof_mutex / mprof_rwlock wrap pthreads in include/mprof/lock.h. To track a lock the
 * program already has, announce it once and annotate its wait/obtain/release points.
 */
typedef uint32_t mprof_lock_id; /* 0 = not tracked */
typedef enum mprof_lock_kind {
    MPROF_LOCK_KIND_DEFAULT = 0, /* mutex */
    MPROF_LOCK_KIND_MUTEX = 1,
    MPROF_LOCK_KIND_RWLOCK = 2,
    MPROF_LOCK_KIND_SPIN = 3
} mprof_lock_kind;
MPROF_API mprof_lock_id mprof__lock_announce(const char *name, mprof_lock_kind kind,
                                             const mprof_srcloc *loc);
MPROF_API void mprof__lock_wait(mprof_lock_id id, int shared);
MPROF_API void mprof__lock_obtained(mprof_lock_id id, int shared);
MPROF_API void mprof__lock_released(mprof_lock_id id, int shared);
MPROF_API void mprof__lock_try_failed(mprof_lock_id id, int shared);

/* ---------------------------------------------------------------------------------------------
 * The macros.
 */
#define MPROF__CAT2(a, b) a##b
#define MPROF__CAT(a, b) MPROF__CAT2(a, b)
#define MPROF__SRCLOC(var, name_, color_)                                                         \
    static const mprof_srcloc var = {name_, __func__, __FILE__, (uint32_t)__LINE__,                \
                                     (uint32_t)(color_)}

#ifdef MPROF_ENABLE

#ifndef MPROF_NO_CLEANUP_ATTR
#define MPROF_ZONE_C(name, color)                                                                  \
    MPROF__SRCLOC(MPROF__CAT(mprof__loc_, __LINE__), name, color);                                \
    int MPROF__CAT(mprof__zone_, __LINE__) __attribute__((cleanup(mprof__zone_cleanup), unused)) = \
        mprof__zone_begin(&MPROF__CAT(mprof__loc_, __LINE__))
#define MPROF_ZONE(name) MPROF_ZONE_C(name, 0)
#endif
#define MPROF_ZONE_BEGIN_C(name, color)                                                            \
    do {                                                                                           \
        MPROF__SRCLOC(mprof__loc_b, name, color);                                                  \
        (void)mprof__zone_begin(&mprof__loc_b);                                                    \
    } while (0)
#define MPROF_ZONE_BEGIN(name) MPROF_ZONE_BEGIN_C(name, 0)
#define MPROF_ZONE_END() mprof__zone_end()
#define MPROF_ZONE_TEXT(str, len) mprof__zone_text((str), (len))
#define MPROF_ZONE_NAME(str, len) mprof__zone_name((str), (len))
#define MPROF_ZONE_VALUE(v) mprof__zone_value((uint64_t)(v))

#define MPROF_FRAME_MARK() mprof__frame_mark(NULL)
#define MPROF_FRAME_MARK_NAMED(name) mprof__frame_mark(name)
#define MPROF_FRAME_BEGIN(name) mprof__frame_begin(name)
#define MPROF_FRAME_END(name) mprof__frame_end(name)
/* MPROF_FRAME_IMAGE(pixels, width, height): a picture of the frame, shown when the frame graph of
 * `mprof view --serve` is hovered. pixels: width x height RGBA bytes, rows top to bottom, read
 * during the call only. The library keeps a thumbnail of at most 96 x 54 (aspect kept, box
 * filtered, compressed, a few KB) with the time of the call, so it belongs to the frame that is
 * running. Any thread; not for the hot path (it scales and compresses in the calling thread, about
 * a tenth of a millisecond for a 640 x 360 picture); nothing happens when not recording. */
#define MPROF_FRAME_IMAGE(pixels, width, height)                                                   \
    mprof__frame_image((pixels), (uint32_t)(width), (uint32_t)(height))

#define MPROF_PLOT(name, v) mprof__plot_f64((name), (double)(v))
#define MPROF_PLOT_INT(name, v) mprof__plot_i64((name), (int64_t)(v))
#define MPROF_PLOT_CONFIG(name, format, style, color) mprof_plot_config(name, format, style, color)

#define MPROF_MESSAGE(level, literal) mprof__message((level), "" literal, sizeof(literal) - 1)
#define MPROF_MESSAGEF(level, ...) mprof__messagef((level), __VA_ARGS__)
#define MPROF_THREAD_NAME(name) mprof__thread_name(name)
#define MPROF_APP_INFO(text) mprof__app_info((text), strlen(text))

#define MPROF_ALLOC(ptr, size) mprof__alloc((ptr), (size), NULL, 0)
#define MPROF_FREE(ptr) mprof__free((ptr), NULL, 0)
#define MPROF_ALLOC_NAMED(ptr, size, pool) mprof__alloc((ptr), (size), (pool), 0)
#define MPROF_FREE_NAMED(ptr, pool) mprof__free((ptr), (pool), 0)
#define MPROF_ALLOC_CS(ptr, size, depth) mprof__alloc((ptr), (size), NULL, (depth))
#define MPROF_FREE_CS(ptr, depth) mprof__free((ptr), NULL, (depth))
#define MPROF_ALLOC_NAMED_CS(ptr, size, pool, depth) mprof__alloc((ptr), (size), (pool), (depth))
#define MPROF_FREE_NAMED_CS(ptr, pool, depth) mprof__free((ptr), (pool), (depth))
#define MPROF_POOL_DISCARD(pool) mprof__pool_discard(pool)

#define MPROF_FIBER_ENTER(name) mprof__fiber_enter(name)
#define MPROF_FIBER_LEAVE() mprof__fiber_leave()

/* Async spans: work begun on one thread and ended on any thread (an asset load handed to an I/O
 * thread, a job passed along a pipeline). track and name are string literals; id is a uint64_t
 * of the program's choosing, unique in its track while the span is open; spans of one track may
 * overlap, and each track gets its own rows in the viewer. _DYN takes a name built at run time
 * (copied). Any thread; each call costs about what a plot does, with no lock. */
#define MPROF_ASYNC_BEGIN(track, id, name) mprof__async_begin("" track, (uint64_t)(id), "" name)
#define MPROF_ASYNC_BEGIN_DYN(track, id, name)                                                     \
    mprof__async_begin_dyn("" track, (uint64_t)(id), (name))
#define MPROF_ASYNC_END(track, id) mprof__async_end("" track, (uint64_t)(id))

#define MPROF_LOCK_ANNOUNCE(name, kind)                                                           \
    mprof__lock_announce((name), (kind), ({                                                        \
                             MPROF__SRCLOC(mprof__loc_l, name, 0);                                 \
                             &mprof__loc_l;                                                        \
                         }))
#define MPROF_LOCK_WAIT(id, shared) mprof__lock_wait((id), (shared))
#define MPROF_LOCK_OBTAINED(id, shared) mprof__lock_obtained((id), (shared))
#define MPROF_LOCK_RELEASED(id, shared) mprof__lock_released((id), (shared))
#define MPROF_LOCK_TRY_FAILED(id, shared) mprof__lock_try_failed((id), (shared))

#define MPROF_GPU_CONTEXT(name, api, period_ns, n_queries)                                         \
    mprof_gpu_context_new((name), (api), (period_ns), (n_queries))
#define MPROF_GPU_CALIBRATE(ctx, gpu_ts, cpu_ns) mprof_gpu_calibrate((ctx), (gpu_ts), (cpu_ns))
#define MPROF_GPU_ZONE_BEGIN_C(ctx, name, color)                                                   \
    mprof_gpu_zone_begin((ctx), ({                                                                 \
                             MPROF__SRCLOC(mprof__loc_g, name, color);                             \
                             &mprof__loc_g;                                                        \
                         }))
#define MPROF_GPU_ZONE_BEGIN(ctx, name) MPROF_GPU_ZONE_BEGIN_C(ctx, name, 0)
#define MPROF_GPU_ZONE_END(ctx, query) mprof_gpu_zone_end((ctx), (query))
#define MPROF_GPU_TIME(ctx, query, gpu_ts) mprof_gpu_time((ctx), (query), (gpu_ts))

#else /* !MPROF_ENABLE: nothing is evaluated, nothing is referenced. */

#define MPROF_ZONE_C(name, color) ((void)0)
#define MPROF_ZONE(name) ((void)0)
#define MPROF_ZONE_BEGIN_C(name, color) ((void)0)
#define MPROF_ZONE_BEGIN(name) ((void)0)
#define MPROF_ZONE_END() ((void)0)
#define MPROF_ZONE_TEXT(str, len) ((void)0)
#define MPROF_ZONE_NAME(str, len) ((void)0)
#define MPROF_ZONE_VALUE(v) ((void)0)
#define MPROF_FRAME_MARK() ((void)0)
#define MPROF_FRAME_MARK_NAMED(name) ((void)0)
#define MPROF_FRAME_BEGIN(name) ((void)0)
#define MPROF_FRAME_END(name) ((void)0)
#define MPROF_FRAME_IMAGE(pixels, width, height) ((void)0)
#define MPROF_PLOT(name, v) ((void)0)
#define MPROF_PLOT_INT(name, v) ((void)0)
#define MPROF_PLOT_CONFIG(name, format, style, color) ((void)0)
#define MPROF_MESSAGE(level, literal) ((void)0)
#define MPROF_MESSAGEF(level, ...) ((void)0)
#define MPROF_THREAD_NAME(name) ((void)0)
#define MPROF_APP_INFO(text) ((void)0)
#define MPROF_ALLOC(ptr, size) ((void)0)
#define MPROF_FREE(ptr) ((void)0)
#define MPROF_ALLOC_NAMED(ptr, size, pool) ((void)0)
#define MPROF_FREE_NAMED(ptr, pool) ((void)0)
#define MPROF_ALLOC_CS(ptr, size, depth) ((void)0)
#define MPROF_FREE_CS(ptr, depth) ((void)0)
#define MPROF_ALLOC_NAMED_CS(ptr, size, pool, depth) ((void)0)
#define MPROF_FREE_NAMED_CS(ptr, pool, depth) ((void)0)
#define MPROF_POOL_DISCARD(pool) ((void)0)
#define MPROF_FIBER_ENTER(name) ((void)0)
#define MPROF_FIBER_LEAVE() ((void)0)
#define MPROF_ASYNC_BEGIN(track, id, name) ((void)0)
#define MPROF_ASYNC_BEGIN_DYN(track, id, name) ((void)0)
#define MPROF_ASYNC_END(track, id) ((void)0)
#define MPROF_LOCK_ANNOUNCE(name, kind) ((mprof_lock_id)0)
#define MPROF_LOCK_WAIT(id, shared) ((void)0)
#define MPROF_LOCK_OBTAINED(id, shared) ((void)0)
#define MPROF_LOCK_RELEASED(id, shared) ((void)0)
#define MPROF_LOCK_TRY_FAILED(id, shared) ((void)0)
#define MPROF_GPU_CONTEXT(name, api, period_ns, n_queries) ((mprof_gpu_ctx)0)
#define MPROF_GPU_CALIBRATE(ctx, gpu_ts, cpu_ns) ((void)0)
#define MPROF_GPU_ZONE_BEGIN_C(ctx, name, color) ((uint32_t)MPROF_GPU_NO_QUERY)
#define MPROF_GPU_ZONE_BEGIN(ctx, name) ((uint32_t)MPROF_GPU_NO_QUERY)
#define MPROF_GPU_ZONE_END(ctx, query) ((void)sizeof(query), (uint32_t)MPROF_GPU_NO_QUERY)
#define MPROF_GPU_TIME(ctx, query, gpu_ts) ((void)0)

#endif /* MPROF_ENABLE */

#ifdef __cplusplus
}
#endif

#endif /* MPROF_MPROF_H */
