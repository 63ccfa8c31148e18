/*
 * lifecycle.c - starting and stopping the profiler, and who records.
 *
 * Zero setup: the first event on any thread starts the profiler with the default config (plus
 * environment overrides) and registers an atexit handler that flushes and closes the capture.
 * That first event reaches mprof_startup through a direct call (mprof__thread_get, called by
 * every event writer, calls lazy_start), so a static link of a program that uses only the macros
 * still pulls in everything a capture needs.
 *
 * Startup is where the parts meet: the configuration and the clock are settled, the sinks are
 * opened, and the collector is handed the sinks and the list of who contributes to the INFO and
 * END chunks, so that below this file no module names another it does not need. The recording
 * mode (mode.h) is set here, by the collector at the start of its session, and by the live
 * sink's request through the hook it is given here.
 */
#include "lifecycle.h"
#include "buffers.h"
#include "callstack.h"
#include "collector.h"
#include "config.h"
#include "info.h"
#include "mode.h"
#include "platform/platform.h"
#include "sink/file.h"
#include "sink/live.h"
#include "stats.h"
#include "system/system.h"
#include "timer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

_Atomic uint32_t mprof__session;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* startup and shutdown */
static int atexit_registered;
static int lazy_tried;

/* ---- result names -------------------------------------------------------------------------- */

static const char *const result_names[] = {
#define NAME(n, m) "MPROF_" #n,
    MPROF_RESULT_MAP(NAME)
#undef NAME
};
static const char *const result_msgs[] = {
#define MSG(n, m) m,
    MPROF_RESULT_MAP(MSG)
#undef MSG
};

const char *mprof_result_name(mprof_result r)
{
    return (unsigned)r < MPROF_RESULT_COUNT ? result_names[r] : "MPROF_UNKNOWN";
}

const char *mprof_result_str(mprof_result r)
{
    return (unsigned)r < MPROF_RESULT_COUNT ? result_msgs[r] : "unknown result";
}

/* ---- who records --------------------------------------------------------------------------- */

static void lazy_start_once(void)
{
    if (!__atomic_load_n(&lazy_tried, __ATOMIC_ACQUIRE))
        mprof_startup(NULL);
}

/* Threads that race to the first event all wait here until the profiler has started, so no
 * event is lost to start-up. After an explicit startup or a shutdown it does nothing. */
static void lazy_start(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, lazy_start_once);
}

mprof__thread *mprof__thread_get(void)
{
    int mode = mprof__mode_now();
    if (mode != MPROF__MODE_RECORDING) {
        if (mode == MPROF__MODE_OFF)
            lazy_start();
        if (mprof__mode_now() != MPROF__MODE_RECORDING)
            return NULL;
    }
    if (mprof__tls == &mprof__dummy_tbuf)
        return mprof__thread_register();
    return (mprof__thread *)mprof__tls;
}

unsigned char *mprof__reserve(size_t n)
{
    mprof__thread *th = mprof__thread_get();
    if (!th)
        return NULL;
    if (th->tb.cur && (size_t)(th->tb.end - th->tb.cur) >= n)
        return th->tb.cur;
    return mprof__buffer_grow(th);
}

int mprof_is_recording(void)
{
    return mprof__mode_now() == MPROF__MODE_RECORDING;
}

/* The live sink's request: record while a tool is attached, idle when it has gone. Only a
 * switch between the two, so that it never undoes a shutdown. */
static void live_set_recording(int on)
{
    if (on)
        mprof__mode_switch(MPROF__MODE_IDLE, MPROF__MODE_RECORDING);
    else
        mprof__mode_switch(MPROF__MODE_RECORDING, MPROF__MODE_IDLE);
}

/* ---- startup and shutdown ------------------------------------------------------------------ */

/* Who writes the capture's INFO keys, in order: the process and its clock, then system tracing
 * (what it does and why not). The live sink sends the same keys in its handshake reply. */
static const mprof__kv_list info_keys = {{mprof__process_info, mprof__system_info}, 2};
/* Who adds END keys after the collector's own counts. */
static const mprof__kv_list end_keys = {{mprof__system_end_info}, 1};

/* Opens the sinks the configuration asks for and starts the collector's session with them. */
static mprof_result start_session(void)
{
    mprof_result r = mprof__collector_init();
    if (r != MPROF_OK)
        return r;
    mprof__collector_setup s = {.info = info_keys, .end = end_keys,
                                .before_stacks = mprof__modules_emit};
    const char *path = mprof__config.capture_path;
    if (path) {
        mprof__sink *f = mprof__sink_file_open(path);
        if (!f)
            return MPROF_ERR_IO;
        s.sinks[s.n_sinks++] = f;
    }
    int live_recording = 0;
    const mprof__live_hooks hooks = {info_keys, live_set_recording};
    mprof__sink *live = mprof__sink_live_open(&hooks, path != NULL, &live_recording);
    if (live)
        s.sinks[s.n_sinks++] = live;
    s.record = path != NULL || live_recording;
    r = mprof__collector_start(&s);
    if (r != MPROF_OK)
        return r;
    if (mprof__config.verbose == MPROF_TOGGLE_ON)
        mprof__log("started%s%s%s", path ? ", capturing to " : "", path ? path : "",
                   live_recording ? ", keeping history for live capture"
                                  : (s.record ? "" : " (not recording)"));
    return MPROF_OK;
}

static void at_exit(void)
{
    mprof_shutdown();
}

mprof_result mprof_startup(const mprof_config *cfg)
{
    pthread_mutex_lock(&lock);
    if (mprof__mode_now() != MPROF__MODE_OFF) {
        pthread_mutex_unlock(&lock);
        return MPROF_ERR_STATE;
    }
    __atomic_store_n(&lazy_tried, 1, __ATOMIC_RELEASE);
    mprof__config_apply(cfg);
    mprof__timer_init(mprof__config.invariant_check, mprof__config.verbose == MPROF_TOGGLE_ON);
    atomic_fetch_add(&mprof__session, 1);
    mprof__system_probe(); /* before INFO is written: it says what system tracing does */
    mprof_result r = start_session();
    if (r != MPROF_OK) {
        pthread_mutex_unlock(&lock);
        return r;
    }
    mprof__system_start();
    if (!atexit_registered) {
        atexit(at_exit);
        atexit_registered = 1;
    }
    pthread_mutex_unlock(&lock);
    return MPROF_OK;
}

void mprof_shutdown(void)
{
    pthread_mutex_lock(&lock);
    if (mprof__mode_now() == MPROF__MODE_OFF) {
        pthread_mutex_unlock(&lock);
        return;
    }
    mprof__system_stop(); /* while still recording, so its last records reach the capture */
    mprof__mode_set(MPROF__MODE_OFF);
    mprof__collector_stop();
    mprof__buffers_release_pool();
    pthread_mutex_unlock(&lock);
}

void mprof_flush(void)
{
    if (mprof__mode_now() == MPROF__MODE_OFF)
        return;
    mprof__collector_flush();
}

void mprof_get_stats(mprof_stats *out)
{
    memset(out, 0, sizeof *out);
    out->events_recorded = atomic_load(&mprof__stats.events_recorded);
    out->events_lost = atomic_load(&mprof__stats.events_lost);
    out->bytes_raw = atomic_load(&mprof__stats.bytes_raw);
    out->bytes_written = atomic_load(&mprof__stats.bytes_written);
    out->chunks_written = atomic_load(&mprof__stats.chunks_written);
    out->buffered_bytes = atomic_load(&mprof__stats.buffered_bytes);
    out->peak_buffered_bytes = atomic_load(&mprof__stats.peak_buffered_bytes);
    out->sessions_dropped = atomic_load(&mprof__stats.sessions_dropped);
    out->gpu_queries_lost = atomic_load(&mprof__stats.gpu_queries_lost);
    out->threads = mprof__thread_count();
}
