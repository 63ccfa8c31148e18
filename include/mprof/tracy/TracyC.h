/*
 * tracy/TracyC.h - Tracy's C API, recorded by mprof: a drop-in for programs instrumented for
 * Tracy.
 *
 * Overview
 *   A program written against Tracy's C header builds unchanged against this one: put
 *   <prefix>/include/mprof first on the include path (-I<prefix>/include/mprof, or
 *   `pkg-config --cflags --libs mprof-tracy`, or CMake's mprof::tracy), so that its own
 *   `#include <tracy/TracyC.h>` (or "tracy/TracyC.h", or "TracyC.h" with -I.../tracy) finds this
 *   file, and link libmprof_tracy and libmprof instead of TracyClient. TRACY_ENABLE turns
 *   recording on, as with Tracy; without it every macro expands to nothing and no mprof symbol
 *   is referenced. The captures are mprof's: MPROF_CAPTURE=game.mprof ./game, then
 *   `mprof report game.mprof`.
 *
 * What maps (docs/MIGRATING.md has the table)
 *   Zones (TracyCZone, N, C, NC, End, Text, TextF, Name, NameF, Value) become mprof zones with
 *   the same call sites: name, function, file, line and color; a zone without a name is named
 *   after its function, as Tracy shows it. Frames (TracyCFrameMark, Named, Start, End, Image),
 *   plots (TracyCPlot, F, I, Config), messages (TracyCMessage, L, C, LC), memory (TracyCAlloc,
 *   Free, the N, S, NS and Secure forms, MemoryDiscard), locks (TracyCLock* and
 *   TracyCSharedLock*, as mprof lock events: waits, holds, contention), fibers, thread names,
 *   app info, TracyCIsConnected and TracyCIsStarted, and the manual-lifetime calls
 *   ___tracy_startup_profiler, ___tracy_shutdown_profiler and ___tracy_profiler_started.
 *
 * What does not map is a compile error that says why, never a silent no-op: zone and message
 *   callstacks (the S forms, TRACY_CALLSTACK), TracyCZoneColor, TracyCLockMark,
 *   TracyPlotFormatWatt, TracyCFrameImage with a frame offset, sampling control, and the GPU
 *   functions (use mprof/vulkan.h, gl.h, cuda.h).
 *
 * Differences that compile
 *   A message's color is not kept: mprof colors messages by level, and these are level info.
 *   A plot's fill flag is not kept (mprof draws lines or steps). Tracy's "secure" allocation
 *   forms are the plain ones (mprof's memory events are safe before start-up and after
 *   shutdown).
 *
 * Names
 *   The ___tracy_* and TracyC* names are Tracy's API, kept as they are so that code written for
 *   it compiles; mprof's own names never begin with an underscore.
 *
 * Threading: as Tracy's and mprof's: any thread; a zone ends on the thread that began it.
 */
#ifndef MPROF_TRACY_TRACYC_H
#define MPROF_TRACY_TRACYC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* mprof.h declares the entry points and the inline hot path whether or not MPROF_ENABLE is
 * defined; only its own macros depend on it, and this header does not use them. */
#include "../mprof.h"

#if defined(MPROF_SHIPPING) && defined(TRACY_ENABLE)
#error "mprof: shipping builds must not enable profiling (TRACY_ENABLE); instrumentation is stripped by leaving TRACY_ENABLE undefined."
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A use of what mprof cannot record: a compile error with msg, in C11 and in C++11. */
#ifdef __cplusplus
#define MPROF_TRACY_UNMAPPED(msg) ((void)[] { static_assert(sizeof(int) == 0, msg); })
#define MPROF_TRACY__REQUIRE_ZERO(x, msg) ((void)[] { static_assert((x) == 0, msg); })
#else
#define MPROF_TRACY_UNMAPPED(msg)                                                                  \
    ((void)sizeof(struct {                                                                         \
        _Static_assert(0, msg);                                                                    \
        int mprof_tracy_unmapped;                                                                  \
    }))
#define MPROF_TRACY__REQUIRE_ZERO(x, msg)                                                          \
    ((void)sizeof(struct {                                                                         \
        _Static_assert((x) == 0, msg);                                                             \
        int mprof_tracy_unmapped;                                                                  \
    }))
#endif

#define MPROF_TRACY__MSG_CALLSTACK                                                                 \
    "mprof: Tracy zone and message callstacks (the S forms, TRACY_CALLSTACK) are not recorded: "  \
    "use the form without S, and MPROF_SAMPLE_HZ for callstack samples (docs/MIGRATING.md)"
#define MPROF_TRACY__MSG_ZONE_COLOR                                                                \
    "mprof: TracyCZoneColor: a zone's color belongs to its call site in mprof; give it with "     \
    "TracyCZoneC/TracyCZoneNC (docs/MIGRATING.md)"
#define MPROF_TRACY__MSG_LOCK_MARK                                                                 \
    "mprof: TracyCLockMark is not recorded: mprof attributes a lock wait to the innermost zone "  \
    "of the waiting thread instead (docs/MIGRATING.md)"
#define MPROF_TRACY__MSG_WATT                                                                      \
    "mprof: TracyPlotFormatWatt: mprof plots are numbers, memory or percentages; use "            \
    "TracyPlotFormatNumber (docs/MIGRATING.md)"
#define MPROF_TRACY__MSG_IMAGE_OFFSET                                                              \
    "mprof: TracyCFrameImage with a frame offset: mprof keeps an image with the frame that is "   \
    "running when it is recorded, so the offset must be the constant 0 (call it in the frame "   \
    "the image shows; docs/MIGRATING.md)"
#define MPROF_TRACY__MSG_SAMPLING                                                                  \
    "mprof: sampling is not switched on and off from code: set MPROF_SAMPLE_HZ=N before the "     \
    "program starts (docs/SYSTEM.md)"
#define MPROF_TRACY__MSG_GPU                                                                       \
    "mprof: Tracy's C GPU functions are not mapped: use mprof's GPU zones (mprof/vulkan.h, "      \
    "mprof/gl.h, mprof/cuda.h, or MPROF_GPU_ZONE_BEGIN in mprof/mprof.h; docs/GPU.md)"

enum TracyPlotFormatEnum {
    TracyPlotFormatNumber,
    TracyPlotFormatMemory,
    TracyPlotFormatPercentage
};
#define TracyPlotFormatWatt MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_WATT)

enum TracyMessageSeverity {
    TracyMessageSeverityTrace,
    TracyMessageSeverityDebug,
    TracyMessageSeverityInfo,
    TracyMessageSeverityWarning,
    TracyMessageSeverityError,
    TracyMessageSeverityFatal
};

#ifndef TracyFunction
#define TracyFunction __func__
#endif
#ifndef TracyFile
#define TracyFile __FILE__
#endif
#ifndef TracyLine
#define TracyLine __LINE__
#endif

/* What mprof cannot record fails wherever it is used, recording or not: the program finds out
 * on its first build against this header, not on the first profiling build. */
#define TracyCZoneColor(ctx, color) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_ZONE_COLOR);
#define TracyCZoneS(ctx, depth, active) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_CALLSTACK);
#define TracyCZoneNS(ctx, name, depth, active) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_CALLSTACK);
#define TracyCZoneCS(ctx, color, depth, active) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_CALLSTACK);
#define TracyCZoneNCS(ctx, name, color, depth, active)                                             \
    MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_CALLSTACK);
#define TracyCMessageS(txt, size, depth) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_CALLSTACK);
#define TracyCMessageLS(txt, depth) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_CALLSTACK);
#define TracyCMessageCS(txt, size, color, depth) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_CALLSTACK);
#define TracyCMessageLCS(txt, color, depth) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_CALLSTACK);
#define TracyCLockMark(lock) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_LOCK_MARK);
#define TracyCSharedLockMark(lock) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_LOCK_MARK);
#define TracyCBeginSamplingProfiling() MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_SAMPLING)
#define TracyCEndSamplingProfiling() MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_SAMPLING)

#ifndef TRACY_ENABLE

typedef const void *TracyCZoneCtx;
typedef const void *TracyCLockCtx;
typedef const void *TracyCSharedLockCtx;

#define TracyCSetThreadName(name)
#define TracyCZone(ctx, active)
#define TracyCZoneN(ctx, name, active)
#define TracyCZoneC(ctx, color, active)
#define TracyCZoneNC(ctx, name, color, active)
#define TracyCZoneEnd(ctx)
#define TracyCZoneText(ctx, txt, size)
#define TracyCZoneTextF(ctx, fmt, ...)
#define TracyCZoneName(ctx, txt, size)
#define TracyCZoneNameF(ctx, fmt, ...)
#define TracyCZoneValue(ctx, value)

#define TracyCAlloc(ptr, size)
#define TracyCFree(ptr)
#define TracyCSecureAlloc(ptr, size)
#define TracyCSecureFree(ptr)
#define TracyCMemoryDiscard(name)
#define TracyCSecureMemoryDiscard(name)
#define TracyCAllocN(ptr, size, name)
#define TracyCFreeN(ptr, name)
#define TracyCSecureAllocN(ptr, size, name)
#define TracyCSecureFreeN(ptr, name)
#define TracyCAllocS(ptr, size, depth)
#define TracyCFreeS(ptr, depth)
#define TracyCSecureAllocS(ptr, size, depth)
#define TracyCSecureFreeS(ptr, depth)
#define TracyCMemoryDiscardS(name, depth)
#define TracyCSecureMemoryDiscardS(name, depth)
#define TracyCAllocNS(ptr, size, depth, name)
#define TracyCFreeNS(ptr, depth, name)
#define TracyCSecureAllocNS(ptr, size, depth, name)
#define TracyCSecureFreeNS(ptr, depth, name)

#define TracyCFrameMark
#define TracyCFrameMarkNamed(name)
#define TracyCFrameMarkStart(name)
#define TracyCFrameMarkEnd(name)
/* These two check their argument as the recording build does (a frame offset must be 0, a
 * plot format must be one mprof has), without evaluating it. */
#define TracyCFrameImage(image, width, height, offset, flip)                                       \
    MPROF_TRACY__REQUIRE_ZERO(offset, MPROF_TRACY__MSG_IMAGE_OFFSET);

#define TracyCPlot(name, val)
#define TracyCPlotF(name, val)
#define TracyCPlotI(name, val)
#define TracyCPlotConfig(name, type, step, fill, color) ((void)sizeof(type));

#define TracyCMessage(txt, size)
#define TracyCMessageL(txt)
#define TracyCMessageC(txt, size, color)
#define TracyCMessageLC(txt, color)
#define TracyCAppInfo(txt, size)

#define TracyCLockCtx(lock)
#define TracyCLockAnnounce(lock)
#define TracyCLockTerminate(lock)
#define TracyCLockBeforeLock(lock)
#define TracyCLockAfterLock(lock)
#define TracyCLockAfterUnlock(lock)
#define TracyCLockAfterTryLock(lock, acquired)
#define TracyCLockCustomName(lock, name, size)

#define TracyCSharedLockCtx(lock)
#define TracyCSharedLockAnnounce(lock)
#define TracyCSharedLockAnnonce(lock)
#define TracyCSharedLockTerminate(lock)
#define TracyCSharedLockBeforeLock(lock)
#define TracyCSharedLockAfterLock(lock)
#define TracyCSharedLockAfterUnlock(lock)
#define TracyCSharedLockAfterTryLock(lock, acquired)
#define TracyCSharedLockBeforeSharedLock(lock)
#define TracyCSharedLockAfterSharedLock(lock)
#define TracyCSharedLockAfterSharedUnlock(lock)
#define TracyCSharedLockAfterTrySharedLock(lock, acquired)
#define TracyCSharedLockCustomName(lock, name, size)

#define TracyCIsConnected 0
#define TracyCIsStarted 0

#define TracyCFiberEnter(fiber)
#define TracyCFiberLeave

#else /* TRACY_ENABLE */

#if defined(TRACY_CALLSTACK) && (TRACY_CALLSTACK + 0) > 0
#error "mprof: TRACY_CALLSTACK: mprof records no callstack with zones or messages; remove it (allocation stacks: TracyCAllocS; callstack samples: MPROF_SAMPLE_HZ; docs/MIGRATING.md)"
#endif

#ifndef TracyConcat
#define TracyConcat(x, y) TracyConcatIndirect(x, y)
#endif
#ifndef TracyConcatIndirect
#define TracyConcatIndirect(x, y) x##y
#endif

/* Tracy's call-site description; the same fields, in the same order, as mprof_srcloc. */
struct ___tracy_source_location_data {
    const char *name;
    const char *function;
    const char *file;
    uint32_t line;
    uint32_t color;
};

/* A zone in flight. id: mprof's state of it (0 not recorded, 1 recorded, 2 dropped at the
 * memory cap, its end dropped too); active: whether it is recorded, as Tracy's. */
struct ___tracy_c_zone_context {
    uint32_t id;
    int32_t active;
};
typedef struct ___tracy_c_zone_context TracyCZoneCtx;

struct __tracy_lockable_context_data;
struct __tracy_shared_lockable_context_data;
typedef struct __tracy_lockable_context_data *TracyCLockCtx;
typedef struct __tracy_shared_lockable_context_data *TracyCSharedLockCtx;

/* Tracy's GPU data, declared so that code naming them reaches the clear error below. */
struct ___tracy_gpu_time_data {
    int64_t gpuTime;
    uint16_t queryId;
    uint8_t context;
};
struct ___tracy_gpu_zone_begin_data {
    uint64_t srcloc;
    uint16_t queryId;
    uint8_t context;
};
struct ___tracy_gpu_zone_begin_callstack_data {
    uint64_t srcloc;
    int32_t depth;
    uint16_t queryId;
    uint8_t context;
};
struct ___tracy_gpu_zone_end_data {
    uint16_t queryId;
    uint8_t context;
};
struct ___tracy_gpu_new_context_data {
    int64_t gpuTime;
    float period;
    uint8_t context;
    uint8_t flags;
    uint8_t type;
};
struct ___tracy_gpu_context_name_data {
    uint8_t context;
    const char *name;
    uint16_t len;
};
struct ___tracy_gpu_calibration_data {
    int64_t gpuTime;
    int64_t cpuDelta;
    uint8_t context;
};
struct ___tracy_gpu_time_sync_data {
    int64_t gpuTime;
    uint8_t context;
};

/* The exported functions, in libmprof_tracy (src/tracy/tracy.c), for code that calls them
 * rather than the macros. A callstack depth given to them is not recorded (said once on
 * stderr); the macros refuse it at compile time. */
MPROF_API void ___tracy_set_thread_name(const char *name);
MPROF_API void ___tracy_startup_profiler(void);
MPROF_API void ___tracy_shutdown_profiler(void);
MPROF_API int32_t ___tracy_profiler_started(void);
MPROF_API int32_t ___tracy_connected(void);
MPROF_API int64_t ___tracy_get_time(void);

MPROF_API uint64_t ___tracy_alloc_srcloc(uint32_t line, const char *source, size_t sourceSz,
                                         const char *function, size_t functionSz, uint32_t color);
MPROF_API uint64_t ___tracy_alloc_srcloc_name(uint32_t line, const char *source, size_t sourceSz,
                                              const char *function, size_t functionSz,
                                              const char *name, size_t nameSz, uint32_t color);
MPROF_API TracyCZoneCtx ___tracy_emit_zone_begin(const struct ___tracy_source_location_data *srcloc,
                                                 int32_t active);
MPROF_API TracyCZoneCtx ___tracy_emit_zone_begin_callstack(
    const struct ___tracy_source_location_data *srcloc, int32_t depth, int32_t active);
MPROF_API TracyCZoneCtx ___tracy_emit_zone_begin_alloc(uint64_t srcloc, int32_t active);
MPROF_API TracyCZoneCtx ___tracy_emit_zone_begin_alloc_callstack(uint64_t srcloc, int32_t depth,
                                                                 int32_t active);
MPROF_API void ___tracy_emit_zone_end(TracyCZoneCtx ctx);
MPROF_API void ___tracy_emit_zone_text(TracyCZoneCtx ctx, const char *txt, size_t size);
MPROF_API void ___tracy_emit_zone_text_fmt(TracyCZoneCtx ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
MPROF_API void ___tracy_emit_zone_name(TracyCZoneCtx ctx, const char *txt, size_t size);
MPROF_API void ___tracy_emit_zone_name_fmt(TracyCZoneCtx ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
MPROF_API void ___tracy_emit_zone_value(TracyCZoneCtx ctx, uint64_t value);

MPROF_API void ___tracy_emit_memory_alloc(const void *ptr, size_t size, int32_t secure);
MPROF_API void ___tracy_emit_memory_alloc_callstack(const void *ptr, size_t size, int32_t depth,
                                                    int32_t secure);
MPROF_API void ___tracy_emit_memory_free(const void *ptr, int32_t secure);
MPROF_API void ___tracy_emit_memory_free_callstack(const void *ptr, int32_t depth, int32_t secure);
MPROF_API void ___tracy_emit_memory_alloc_named(const void *ptr, size_t size, int32_t secure,
                                                const char *name);
MPROF_API void ___tracy_emit_memory_alloc_callstack_named(const void *ptr, size_t size,
                                                          int32_t depth, int32_t secure,
                                                          const char *name);
MPROF_API void ___tracy_emit_memory_free_named(const void *ptr, int32_t secure, const char *name);
MPROF_API void ___tracy_emit_memory_free_callstack_named(const void *ptr, int32_t depth,
                                                         int32_t secure, const char *name);
MPROF_API void ___tracy_emit_memory_discard(const char *name, int32_t secure);
MPROF_API void ___tracy_emit_memory_discard_callstack(const char *name, int32_t secure,
                                                      int32_t depth);

MPROF_API void ___tracy_emit_message(const char *txt, size_t size, int32_t callstack_depth);
MPROF_API void ___tracy_emit_messageL(const char *txt, int32_t callstack_depth);
MPROF_API void ___tracy_emit_messageC(const char *txt, size_t size, uint32_t color,
                                      int32_t callstack_depth);
MPROF_API void ___tracy_emit_messageLC(const char *txt, uint32_t color, int32_t callstack_depth);
MPROF_API void ___tracy_emit_logString(int8_t severity, int32_t color, int32_t callstack_depth,
                                       size_t size, const char *txt);
MPROF_API void ___tracy_emit_logStringL(int8_t severity, int32_t color, int32_t callstack_depth,
                                        const char *txt);
MPROF_API void ___tracy_emit_message_appinfo(const char *txt, size_t size);

MPROF_API void ___tracy_emit_frame_mark(const char *name);
MPROF_API void ___tracy_emit_frame_mark_start(const char *name);
MPROF_API void ___tracy_emit_frame_mark_end(const char *name);
MPROF_API void ___tracy_emit_frame_image(const void *image, uint16_t w, uint16_t h, uint8_t offset,
                                         int32_t flip);

MPROF_API void ___tracy_emit_plot(const char *name, double val);
MPROF_API void ___tracy_emit_plot_float(const char *name, float val);
MPROF_API void ___tracy_emit_plot_int(const char *name, int64_t val);
MPROF_API void ___tracy_emit_plot_config(const char *name, int32_t type, int32_t step,
                                         int32_t fill, uint32_t color);

MPROF_API void ___tracy_fiber_enter(const char *fiber);
MPROF_API void ___tracy_fiber_leave(void);

MPROF_API struct __tracy_lockable_context_data *
___tracy_announce_lockable_ctx(const struct ___tracy_source_location_data *srcloc);
MPROF_API void ___tracy_terminate_lockable_ctx(struct __tracy_lockable_context_data *lockdata);
MPROF_API int32_t ___tracy_before_lock_lockable_ctx(struct __tracy_lockable_context_data *lockdata);
MPROF_API void ___tracy_after_lock_lockable_ctx(struct __tracy_lockable_context_data *lockdata);
MPROF_API void ___tracy_after_unlock_lockable_ctx(struct __tracy_lockable_context_data *lockdata);
MPROF_API void ___tracy_after_try_lock_lockable_ctx(struct __tracy_lockable_context_data *lockdata,
                                                    int32_t acquired);
MPROF_API void ___tracy_custom_name_lockable_ctx(struct __tracy_lockable_context_data *lockdata,
                                                 const char *name, size_t nameSz);

MPROF_API struct __tracy_shared_lockable_context_data *
___tracy_announce_shared_lockable_ctx(const struct ___tracy_source_location_data *srcloc);
MPROF_API void
___tracy_terminate_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *lockdata);
MPROF_API int32_t
___tracy_before_lock_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *lockdata);
MPROF_API void
___tracy_after_lock_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *lockdata);
MPROF_API void
___tracy_after_unlock_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *lockdata);
MPROF_API void
___tracy_after_try_lock_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *lockdata,
                                            int32_t acquired);
MPROF_API int32_t ___tracy_before_lock_shared_shared_lockable_ctx(
    struct __tracy_shared_lockable_context_data *lockdata);
MPROF_API void ___tracy_after_lock_shared_shared_lockable_ctx(
    struct __tracy_shared_lockable_context_data *lockdata);
MPROF_API void ___tracy_after_unlock_shared_shared_lockable_ctx(
    struct __tracy_shared_lockable_context_data *lockdata);
MPROF_API void ___tracy_after_try_lock_shared_shared_lockable_ctx(
    struct __tracy_shared_lockable_context_data *lockdata, int32_t acquired);
MPROF_API void
___tracy_custom_name_shared_lockable_ctx(struct __tracy_shared_lockable_context_data *lockdata,
                                         const char *name, size_t nameSz);

/* Tracy's GPU functions: a use is the compile error that names mprof's GPU API. */
#define ___tracy_emit_gpu_zone_begin(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_zone_begin_callstack(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_zone_begin_alloc(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_zone_begin_alloc_callstack(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_zone_end(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_time(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_new_context(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_context_name(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_calibration(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_time_sync(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_zone_begin_serial(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_zone_begin_callstack_serial(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_zone_begin_alloc_serial(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_zone_begin_alloc_callstack_serial(data)                                  \
    MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_zone_end_serial(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_time_serial(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_new_context_serial(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_context_name_serial(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_calibration_serial(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)
#define ___tracy_emit_gpu_time_sync_serial(data) MPROF_TRACY_UNMAPPED(MPROF_TRACY__MSG_GPU)

/* The zone macros use mprof's inline hot path directly (no call into libmprof_tracy): a Tracy
 * zone costs what an MPROF_ZONE costs. */
static inline TracyCZoneCtx mprof_tracy__zone_begin(const mprof_srcloc *loc, int active)
{
    TracyCZoneCtx ctx;
    ctx.id = active ? (uint32_t)mprof__zone_begin(loc) : 0u;
    ctx.active = ctx.id != 0;
    return ctx;
}

static inline void mprof_tracy__zone_end(TracyCZoneCtx ctx)
{
    int state = (int)ctx.id;
    mprof__zone_cleanup(&state);
}

#define MPROF_TRACY__ZONE(ctx, name, color, active)                                                \
    static const mprof_srcloc TracyConcat(mprof_tracy__loc_, TracyLine) = {                        \
        name, __func__, TracyFile, (uint32_t)TracyLine, (uint32_t)(color)};                        \
    TracyCZoneCtx ctx = mprof_tracy__zone_begin(&TracyConcat(mprof_tracy__loc_, TracyLine), (active));

#define TracyCSetThreadName(name) mprof__thread_name(name);
#define TracyCZone(ctx, active) MPROF_TRACY__ZONE(ctx, __func__, 0, active)
#define TracyCZoneN(ctx, name, active) MPROF_TRACY__ZONE(ctx, name, 0, active)
#define TracyCZoneC(ctx, color, active) MPROF_TRACY__ZONE(ctx, __func__, color, active)
#define TracyCZoneNC(ctx, name, color, active) MPROF_TRACY__ZONE(ctx, name, color, active)
#define TracyCZoneEnd(ctx) mprof_tracy__zone_end(ctx);
#define TracyCZoneText(ctx, txt, size) ___tracy_emit_zone_text(ctx, txt, size);
#define TracyCZoneTextF(ctx, fmt, ...) ___tracy_emit_zone_text_fmt(ctx, fmt, ##__VA_ARGS__);
#define TracyCZoneName(ctx, txt, size) ___tracy_emit_zone_name(ctx, txt, size);
#define TracyCZoneNameF(ctx, fmt, ...) ___tracy_emit_zone_name_fmt(ctx, fmt, ##__VA_ARGS__);
#define TracyCZoneValue(ctx, value) ___tracy_emit_zone_value(ctx, value);

#define TracyCAlloc(ptr, size) mprof__alloc((ptr), (size), NULL, 0)
#define TracyCFree(ptr) mprof__free((ptr), NULL, 0)
#define TracyCSecureAlloc(ptr, size) mprof__alloc((ptr), (size), NULL, 0)
#define TracyCSecureFree(ptr) mprof__free((ptr), NULL, 0)
#define TracyCMemoryDiscard(name) mprof__pool_discard(name);
#define TracyCSecureMemoryDiscard(name) mprof__pool_discard(name);
#define TracyCAllocN(ptr, size, name) mprof__alloc((ptr), (size), (name), 0)
#define TracyCFreeN(ptr, name) mprof__free((ptr), (name), 0)
#define TracyCSecureAllocN(ptr, size, name) mprof__alloc((ptr), (size), (name), 0)
#define TracyCSecureFreeN(ptr, name) mprof__free((ptr), (name), 0)
#define TracyCAllocS(ptr, size, depth) mprof__alloc((ptr), (size), NULL, (depth))
#define TracyCFreeS(ptr, depth) mprof__free((ptr), NULL, (depth))
#define TracyCSecureAllocS(ptr, size, depth) mprof__alloc((ptr), (size), NULL, (depth))
#define TracyCSecureFreeS(ptr, depth) mprof__free((ptr), NULL, (depth))
#define TracyCMemoryDiscardS(name, depth) mprof__pool_discard(name)
#define TracyCSecureMemoryDiscardS(name, depth) mprof__pool_discard(name)
#define TracyCAllocNS(ptr, size, depth, name) mprof__alloc((ptr), (size), (name), (depth))
#define TracyCFreeNS(ptr, depth, name) mprof__free((ptr), (name), (depth))
#define TracyCSecureAllocNS(ptr, size, depth, name) mprof__alloc((ptr), (size), (name), (depth))
#define TracyCSecureFreeNS(ptr, depth, name) mprof__free((ptr), (name), (depth))

#define TracyCFrameMark mprof__frame_mark(NULL);
#define TracyCFrameMarkNamed(name) mprof__frame_mark(name);
#define TracyCFrameMarkStart(name) mprof__frame_begin(name);
#define TracyCFrameMarkEnd(name) mprof__frame_end(name);
#define TracyCFrameImage(image, width, height, offset, flip)                                       \
    (MPROF_TRACY__REQUIRE_ZERO(offset, MPROF_TRACY__MSG_IMAGE_OFFSET),                             \
     ___tracy_emit_frame_image((image), (uint16_t)(width), (uint16_t)(height), 0, (flip)));

#define TracyCPlot(name, val) mprof__plot_f64((name), (double)(val));
#define TracyCPlotF(name, val) mprof__plot_f64((name), (double)(val));
#define TracyCPlotI(name, val) mprof__plot_i64((name), (int64_t)(val));
#define TracyCPlotConfig(name, type, step, fill, color)                                            \
    ___tracy_emit_plot_config((name), (type), (step), (fill), (color));

#define TracyCMessage(txt, size) mprof__message(MPROF_LOG_INFO, (txt), (size));
#define TracyCMessageL(txt) ___tracy_emit_messageL((txt), 0);
#define TracyCMessageC(txt, size, color) mprof__message(MPROF_LOG_INFO, (txt), (size));
#define TracyCMessageLC(txt, color) ___tracy_emit_messageL((txt), 0);
#define TracyCAppInfo(txt, size) mprof__app_info((txt), (size));

/* A lock's call site is named after the expression that holds the lock ("queue->lock"), since
 * Tracy's C locks are nameless until TracyCLockCustomName. */
#define MPROF_TRACY__LOCK_SITE(lock)                                                               \
    static const struct ___tracy_source_location_data TracyConcat(mprof_tracy__lock_, TracyLine) = \
        {#lock, __func__, TracyFile, (uint32_t)TracyLine, 0}
#define TracyCLockAnnounce(lock)                                                                   \
    MPROF_TRACY__LOCK_SITE(lock);                                                                  \
    lock = ___tracy_announce_lockable_ctx(&TracyConcat(mprof_tracy__lock_, TracyLine));
#define TracyCLockTerminate(lock) ___tracy_terminate_lockable_ctx(lock);
#define TracyCLockBeforeLock(lock) ___tracy_before_lock_lockable_ctx(lock);
#define TracyCLockAfterLock(lock) ___tracy_after_lock_lockable_ctx(lock);
#define TracyCLockAfterUnlock(lock) ___tracy_after_unlock_lockable_ctx(lock);
#define TracyCLockAfterTryLock(lock, acquired) ___tracy_after_try_lock_lockable_ctx(lock, acquired);
#define TracyCLockCustomName(lock, name, size) ___tracy_custom_name_lockable_ctx(lock, name, size);

#define TracyCSharedLockAnnounce(lock)                                                             \
    MPROF_TRACY__LOCK_SITE(lock);                                                                  \
    lock = ___tracy_announce_shared_lockable_ctx(&TracyConcat(mprof_tracy__lock_, TracyLine));
#define TracyCSharedLockTerminate(lock) ___tracy_terminate_shared_lockable_ctx(lock);
#define TracyCSharedLockBeforeLock(lock) ___tracy_before_lock_shared_lockable_ctx(lock);
#define TracyCSharedLockAfterLock(lock) ___tracy_after_lock_shared_lockable_ctx(lock);
#define TracyCSharedLockAfterUnlock(lock) ___tracy_after_unlock_shared_lockable_ctx(lock);
#define TracyCSharedLockAfterTryLock(lock, acquired)                                               \
    ___tracy_after_try_lock_shared_lockable_ctx(lock, acquired);
#define TracyCSharedLockBeforeSharedLock(lock) ___tracy_before_lock_shared_shared_lockable_ctx(lock);
#define TracyCSharedLockAfterSharedLock(lock) ___tracy_after_lock_shared_shared_lockable_ctx(lock);
#define TracyCSharedLockAfterSharedUnlock(lock)                                                    \
    ___tracy_after_unlock_shared_shared_lockable_ctx(lock);
#define TracyCSharedLockAfterTrySharedLock(lock, acquired)                                         \
    ___tracy_after_try_lock_shared_shared_lockable_ctx(lock, acquired);
#define TracyCSharedLockCustomName(lock, name, size)                                               \
    ___tracy_custom_name_shared_lockable_ctx(lock, name, size);

#define TracyCIsConnected ___tracy_connected()
#ifdef TRACY_MANUAL_LIFETIME
#define TracyCIsStarted ___tracy_profiler_started()
#else
#define TracyCIsStarted 1
#endif

#define TracyCFiberEnter(fiber) mprof__fiber_enter(fiber);
#define TracyCFiberLeave mprof__fiber_leave();

#endif /* TRACY_ENABLE */

#ifdef __cplusplus
}
#endif

#endif /* MPROF_TRACY_TRACYC_H */
