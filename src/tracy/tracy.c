/*
 * tracy.c - libmprof_tracy: the functions of Tracy's C API, recorded through mprof's public
 * entry points.
 *
 * include/mprof/tracy/TracyC.h maps most of Tracy's macros straight onto mprof's inline hot path;
 * what needs state lives here: call sites made at run time (___tracy_alloc_srcloc), which mprof
 * needs to outlive the capture and to be one site per distinct name, so they are interned and
 * never freed; Tracy's lock contexts, whose annotations (before lock, after lock, after unlock)
 * become mprof's lock events, with a wait recorded only when the lock is held by another thread,
 * so that `mprof report --locks` counts contended acquisitions rather than every one; and the
 * conversions (plot formats, message severities, flipped frame images).
 *
 * What Tracy's functions ask for and mprof cannot record (a callstack depth, a frame image for
 * an earlier frame) is said once on stderr; the macros refuse it at compile time already.
 *
 * Threads: any. The intern table and lazy lock announcements take one mutex; the zone, plot,
 * message and frame functions take none.
 */
#include "internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tracy's call-site struct is read as an mprof_srcloc: the layouts must agree. */
_Static_assert(sizeof(struct ___tracy_source_location_data) == sizeof(mprof_srcloc),
               "Tracy's source location and mprof_srcloc differ in size");
_Static_assert(offsetof(struct ___tracy_source_location_data, color) ==
                   offsetof(mprof_srcloc, color),
               "Tracy's source location and mprof_srcloc differ in layout");

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- saying once what is not recorded ----------------------------------------------------- */

enum { WARN_CALLSTACK, WARN_IMAGE_OFFSET, WARN_N };
static atomic_int warned[WARN_N];

static void warn_once(int which, const char *msg)
{
    if (atomic_exchange_explicit(&warned[which], 1, memory_order_relaxed) == 0)
        fprintf(stderr, "mprof: %s\n", msg);
}

static void check_depth(int32_t depth)
{
    if (depth > 0)
        warn_once(WARN_CALLSTACK, "Tracy callstack depths given to ___tracy_* functions are not "
                                  "recorded for zones and messages (mprof records allocation "
                                  "stacks and samples; docs/MIGRATING.md)");
}

/* ---- interned call sites and names -------------------------------------------------------- */

typedef struct site {
    uint64_t hash;
    mprof_srcloc loc; /* its strings are owned by the site */
} site;

static site **sites;
static size_t n_sites, cap_sites; /* cap_sites is a power of two */

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* a separator between fields */
}

static char *copy(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c) {
        if (n)
            memcpy(c, s, n);
        c[n] = 0;
    }
    return c;
}

static int same(const char *a, const char *b, size_t n)
{
    return strlen(a) == n && (n == 0 || memcmp(a, b, n) == 0);
}

/* The site with these fields, made on first use; NULL when out of memory. Caller holds lock. */
static const mprof_srcloc *intern_locked(const char *name, size_t nn, const char *fn, size_t fnn,
                                         const char *file, size_t filen, uint32_t line,
                                         uint32_t color)
{
    uint64_t h = fnv(fnv(fnv(14695981039346656037ull, name, nn), fn, fnn), file, filen);
    h = (h ^ line) * 1099511628211ull;
    h = (h ^ color) * 1099511628211ull;
    if (cap_sites) {
        for (size_t i = h & (cap_sites - 1);; i = (i + 1) & (cap_sites - 1)) {
            site *s = sites[i];
            if (!s)
                break;
            if (s->hash == h && s->loc.line == line && s->loc.color == color &&
                same(s->loc.name, name, nn) && same(s->loc.function, fn, fnn) &&
                same(s->loc.file, file, filen))
                return &s->loc;
        }
    }
    if ((n_sites + 1) * 2 > cap_sites) {
        size_t nc = cap_sites ? cap_sites * 2 : 256;
        site **ns = calloc(nc, sizeof *ns);
        if (!ns)
            return NULL;
        for (size_t i = 0; i < cap_sites; i++) {
            if (!sites[i])
                continue;
            size_t j = sites[i]->hash & (nc - 1);
            while (ns[j])
                j = (j + 1) & (nc - 1);
            ns[j] = sites[i];
        }
        free(sites);
        sites = ns;
        cap_sites = nc;
    }
    site *s = calloc(1, sizeof *s);
    char *a = copy(name, nn), *b = copy(fn, fnn), *c = copy(file, filen);
    if (!s || !a || !b || !c) {
        free(s);
        free(a);
        free(b);
        free(c);
        return NULL;
    }
    s->hash = h;
    s->loc = (mprof_srcloc){a, b, c, line, color};
    size_t j = h & (cap_sites - 1);
    while (sites[j])
        j = (j + 1) & (cap_sites - 1);
    sites[j] = s;
    n_sites++;
    return &s->loc;
}

const mprof_srcloc *mprof_tracy__intern(const char *name, size_t nn, const char *fn, size_t fnn,
                                        const char *file, size_t filen, uint32_t line,
                                        uint32_t color)
{
    pthread_mutex_lock(&lock);
    const mprof_srcloc *l = intern_locked(name, nn, fn, fnn, file, filen, line, color);
    pthread_mutex_unlock(&lock);
    return l;
}

static size_t len0(const char *s)
{
    return s ? strlen(s) : 0;
}

/* A static Tracy site as mprof reads it: itself, or, when it has no name (Tracy shows the
 * function then), an interned copy named after its function. The copy is remembered per thread
 * by the site's address, so a zone begun through the function form takes the intern table's
 * lock only the first time a thread meets the site. */
static const mprof_srcloc *as_mprof(const struct ___tracy_source_location_data *s)
{
    enum { CACHE = 64 };
    static _Thread_local struct {
        const void *site;
        const mprof_srcloc *loc;
    } cache[CACHE];
    if (!s)
        return NULL;
    if (s->name)
        return (const mprof_srcloc *)(const void *)s;
    size_t slot = ((uintptr_t)s >> 4) % CACHE;
    if (cache[slot].site == s)
        return cache[slot].loc;
    const char *fn = s->function ? s->function : "";
    const char *file = s->file ? s->file : "";
    const mprof_srcloc *l =
        mprof_tracy__intern(fn, strlen(fn), fn, strlen(fn), file, strlen(file), s->line, s->color);
    if (l) {
        cache[slot].site = s;
        cache[slot].loc = l;
    }
    return l;
}

/* ---- lifetime ------------------------------------------------------------------------------ */

void ___tracy_startup_profiler(void)
{
    (void)mprof_startup(NULL);
}

void ___tracy_shutdown_profiler(void)
{
    mprof_shutdown();
}

int32_t ___tracy_profiler_started(void)
{
    return mprof_is_recording() != 0;
}

int32_t ___tracy_connected(void)
{
    return mprof_is_recording() != 0;
}

int64_t ___tracy_get_time(void)
{
    return (int64_t)mprof_now_ns();
}

void ___tracy_set_thread_name(const char *name)
{
    if (name)
        mprof__thread_name(name);
}

/* ---- zones --------------------------------------------------------------------------------- */

uint64_t ___tracy_alloc_srcloc(uint32_t line, const char *source, size_t sourceSz,
                               const char *function, size_t functionSz, uint32_t color)
{
    return (uint64_t)(uintptr_t)mprof_tracy__intern(function ? function : "", function ? functionSz : 0,
                                       function ? function : "", function ? functionSz : 0,
                                       source ? source : "", source ? sourceSz : 0, line, color);
}

uint64_t ___tracy_alloc_srcloc_name(uint32_t line, const char *source, size_t sourceSz,
                                    const char *function, size_t functionSz, const char *name,
                                    size_t nameSz, uint32_t color)
{
    if (!name || !nameSz)
        return ___tracy_alloc_srcloc(line, source, sourceSz, function, functionSz, color);
    return (uint64_t)(uintptr_t)mprof_tracy__intern(name, nameSz, function ? function : "",
                                       function ? functionSz : 0, source ? source : "",
                                       source ? sourceSz : 0, line, color);
}

static TracyCZoneCtx begin(const mprof_srcloc *loc, int32_t active)
{
    TracyCZoneCtx ctx = {0, 0};
    if (!active || !loc)
        return ctx;
    ctx.id = (uint32_t)mprof__zone_begin(loc);
    ctx.active = ctx.id != 0;
    return ctx;
}

TracyCZoneCtx ___tracy_emit_zone_begin(const struct ___tracy_source_location_data *srcloc,
                                       int32_t active)
{
    return begin(as_mprof(srcloc), active);
}

TracyCZoneCtx ___tracy_emit_zone_begin_callstack(const struct ___tracy_source_location_data *srcloc,
                                                 int32_t depth, int32_t active)
{
    check_depth(depth);
    return begin(as_mprof(srcloc), active);
}

TracyCZoneCtx ___tracy_emit_zone_begin_alloc(uint64_t srcloc, int32_t active)
{
    return begin((const mprof_srcloc *)(uintptr_t)srcloc, active);
}

TracyCZoneCtx ___tracy_emit_zone_begin_alloc_callstack(uint64_t srcloc, int32_t depth,
                                                       int32_t active)
{
    check_depth(depth);
    return begin((const mprof_srcloc *)(uintptr_t)srcloc, active);
}

void ___tracy_emit_zone_end(TracyCZoneCtx ctx)
{
    int state = (int)ctx.id;
    mprof__zone_cleanup(&state);
}

void ___tracy_emit_zone_text(TracyCZoneCtx ctx, const char *txt, size_t size)
{
    if (ctx.id == 1 && txt)
        mprof__zone_text(txt, size);
}

void ___tracy_emit_zone_name(TracyCZoneCtx ctx, const char *txt, size_t size)
{
    if (ctx.id == 1 && txt)
        mprof__zone_name(txt, size);
}

/* Formats into a buffer on the stack, or a heap one for a long text. */
static void emit_fmt(TracyCZoneCtx ctx, int name, const char *fmt, va_list ap)
{
    if (ctx.id != 1 || !fmt)
        return;
    char small[1024], *buf = small;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= (int)sizeof small) {
        buf = malloc((size_t)n + 1);
        if (buf)
            vsnprintf(buf, (size_t)n + 1, fmt, again);
    }
    va_end(again);
    if (n >= 0 && buf) {
        if (name)
            mprof__zone_name(buf, (size_t)n);
        else
            mprof__zone_text(buf, (size_t)n);
    }
    if (buf != small)
        free(buf);
}

void ___tracy_emit_zone_text_fmt(TracyCZoneCtx ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit_fmt(ctx, 0, fmt, ap);
    va_end(ap);
}

void ___tracy_emit_zone_name_fmt(TracyCZoneCtx ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit_fmt(ctx, 1, fmt, ap);
    va_end(ap);
}

void ___tracy_emit_zone_value(TracyCZoneCtx ctx, uint64_t value)
{
    if (ctx.id == 1)
        mprof__zone_value(value);
}

/* ---- memory -------------------------------------------------------------------------------- */

void ___tracy_emit_memory_alloc(const void *ptr, size_t size, int32_t secure)
{
    (void)secure;
    mprof__alloc(ptr, size, NULL, 0);
}

void ___tracy_emit_memory_alloc_callstack(const void *ptr, size_t size, int32_t depth,
                                          int32_t secure)
{
    (void)secure;
    mprof__alloc(ptr, size, NULL, depth > 0 ? depth : 0);
}

void ___tracy_emit_memory_free(const void *ptr, int32_t secure)
{
    (void)secure;
    mprof__free(ptr, NULL, 0);
}

void ___tracy_emit_memory_free_callstack(const void *ptr, int32_t depth, int32_t secure)
{
    (void)secure;
    mprof__free(ptr, NULL, depth > 0 ? depth : 0);
}

void ___tracy_emit_memory_alloc_named(const void *ptr, size_t size, int32_t secure,
                                      const char *name)
{
    (void)secure;
    mprof__alloc(ptr, size, name, 0);
}

void ___tracy_emit_memory_alloc_callstack_named(const void *ptr, size_t size, int32_t depth,
                                                int32_t secure, const char *name)
{
    (void)secure;
    mprof__alloc(ptr, size, name, depth > 0 ? depth : 0);
}

void ___tracy_emit_memory_free_named(const void *ptr, int32_t secure, const char *name)
{
    (void)secure;
    mprof__free(ptr, name, 0);
}

void ___tracy_emit_memory_free_callstack_named(const void *ptr, int32_t depth, int32_t secure,
                                               const char *name)
{
    (void)secure;
    mprof__free(ptr, name, depth > 0 ? depth : 0);
}

void ___tracy_emit_memory_discard(const char *name, int32_t secure)
{
    (void)secure;
    mprof__pool_discard(name);
}

void ___tracy_emit_memory_discard_callstack(const char *name, int32_t secure, int32_t depth)
{
    (void)secure;
    (void)depth; /* a discard is one event of the pool; mprof keeps no stack with it */
    mprof__pool_discard(name);
}

/* ---- messages, app info -------------------------------------------------------------------- */

/* Tracy's messages have no level but a color; mprof's have a level and take their color from
 * it. They are recorded as info. */
void ___tracy_emit_message(const char *txt, size_t size, int32_t callstack_depth)
{
    check_depth(callstack_depth);
    if (txt)
        mprof__message(MPROF_LOG_INFO, txt, size);
}

void ___tracy_emit_messageL(const char *txt, int32_t callstack_depth)
{
    ___tracy_emit_message(txt, len0(txt), callstack_depth);
}

void ___tracy_emit_messageC(const char *txt, size_t size, uint32_t color, int32_t callstack_depth)
{
    (void)color;
    ___tracy_emit_message(txt, size, callstack_depth);
}

void ___tracy_emit_messageLC(const char *txt, uint32_t color, int32_t callstack_depth)
{
    (void)color;
    ___tracy_emit_message(txt, len0(txt), callstack_depth);
}

void ___tracy_emit_logString(int8_t severity, int32_t color, int32_t callstack_depth, size_t size,
                             const char *txt)
{
    static const mprof_log_level levels[] = {MPROF_LOG_TRACE, MPROF_LOG_DEBUG, MPROF_LOG_INFO,
                                             MPROF_LOG_WARN,  MPROF_LOG_ERROR, MPROF_LOG_FATAL};
    (void)color;
    check_depth(callstack_depth);
    if (txt)
        mprof__message(severity >= 0 && severity <= 5 ? levels[severity] : MPROF_LOG_INFO, txt,
                       size);
}

void ___tracy_emit_logStringL(int8_t severity, int32_t color, int32_t callstack_depth,
                              const char *txt)
{
    ___tracy_emit_logString(severity, color, callstack_depth, len0(txt), txt);
}

void ___tracy_emit_message_appinfo(const char *txt, size_t size)
{
    if (txt)
        mprof__app_info(txt, size);
}

/* ---- frames, plots, fibers ----------------------------------------------------------------- */

void ___tracy_emit_frame_mark(const char *name)
{
    mprof__frame_mark(name);
}

void ___tracy_emit_frame_mark_start(const char *name)
{
    mprof__frame_begin(name);
}

void ___tracy_emit_frame_mark_end(const char *name)
{
    mprof__frame_end(name);
}

void ___tracy_emit_frame_image(const void *image, uint16_t w, uint16_t h, uint8_t offset,
                               int32_t flip)
{
    if (!image || !w || !h)
        return;
    if (offset) {
        warn_once(WARN_IMAGE_OFFSET, "frame images given for an earlier frame (offset > 0) are "
                                     "not recorded: mprof keeps an image with the frame that is "
                                     "running when it is recorded");
        return;
    }
    if (!flip) {
        mprof__frame_image(image, w, h);
        return;
    }
    /* Rows bottom to top: turned over into a copy, since mprof reads them top to bottom. */
    size_t row = (size_t)w * 4;
    unsigned char *turned = malloc(row * h);
    if (!turned)
        return;
    for (size_t y = 0; y < h; y++)
        memcpy(turned + y * row, (const unsigned char *)image + (h - 1 - y) * row, row);
    mprof__frame_image(turned, w, h);
    free(turned);
}

void ___tracy_emit_plot(const char *name, double val)
{
    mprof__plot_f64(name, val);
}

void ___tracy_emit_plot_float(const char *name, float val)
{
    mprof__plot_f64(name, (double)val);
}

void ___tracy_emit_plot_int(const char *name, int64_t val)
{
    mprof__plot_i64(name, val);
}

void ___tracy_emit_plot_config(const char *name, int32_t type, int32_t step, int32_t fill,
                               uint32_t color)
{
    (void)fill; /* mprof draws a line or steps, never a filled area */
    mprof_plot_format f = type == TracyPlotFormatMemory       ? MPROF_PLOT_FORMAT_MEMORY
                          : type == TracyPlotFormatPercentage ? MPROF_PLOT_FORMAT_PERCENTAGE
                                                              : MPROF_PLOT_FORMAT_NUMBER;
    mprof_plot_config(name, f, step ? MPROF_PLOT_STYLE_STEP : MPROF_PLOT_STYLE_LINE, color);
}

void ___tracy_fiber_enter(const char *fiber)
{
    mprof__fiber_enter(fiber);
}

void ___tracy_fiber_leave(void)
{
    mprof__fiber_leave();
}
