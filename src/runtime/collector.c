/*
 * collector.c - the background thread that drains thread buffers into capture chunks, and the
 * session it runs: INFO at the start, END at the stop.
 *
 * The thread wakes every flush_interval_ms (or when asked), drains what every thread and the
 * process queue published (buffers.c) through the encoder (encoder.c), and closes the current
 * chunk early when a flush asks for it, when it has waited 250 ms (so a crash loses at most
 * that much), or when a sink needs a chunk boundary. The sinks and the INFO/END contributors are
 * handed over at start (collector.h); the collector never names one.
 */
#include "collector.h"
#include "buffers.h"
#include "config.h"
#include "encoder.h"
#include "info.h"
#include "mode.h"
#include "platform/platform.h"
#include "stats.h"

#include <inttypes.h>
#include <pthread.h>
#include <time.h>

static struct {
    pthread_t thread;
    pthread_mutex_t m;
    pthread_cond_t wake, done;
    int running, stop;
    uint64_t flush_req, flush_done;
    mprof__sink *sinks[MPROF__MAX_SINKS]; /* the sinks of this session */
    int n_sinks;
    int whole_capture;     /* a sink stores whole captures: INFO first, END last */
    mprof__kv_list info, end;
    mprof_buf proc_work;   /* the process queue's records being translated */
} C = {.m = PTHREAD_MUTEX_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER,
       .done = PTHREAD_COND_INITIALIZER};

/* ---- INFO and END chunks ------------------------------------------------------------------- */

static void write_info(void)
{
    mprof_buf b = {0};
    mprof__kv_list_write(&C.info, &b);
    mprof__kvf(&b, "process_chunks", "separate");
    mprof__encoder_emit(MPROF_CHUNK_INFO, &b);
    mprof_buf_free(&b);
}

static void write_end(void)
{
    mprof_buf b = {0};
    mprof__kvf(&b, "events", "%" PRIu64, mprof__encoder_events());
    mprof__kvf(&b, "events_lost", "%" PRIu64, atomic_load(&mprof__stats.events_lost));
    mprof__kvf(&b, "bytes_raw", "%" PRIu64, atomic_load(&mprof__stats.bytes_raw));
    mprof__kvf(&b, "chunks", "%" PRIu64, atomic_load(&mprof__stats.chunks_written));
    mprof__kvf(&b, "peak_buffered_bytes", "%" PRIu64,
               atomic_load(&mprof__stats.peak_buffered_bytes));
    mprof__kvf(&b, "gpu_queries_lost", "%" PRIu64, atomic_load(&mprof__stats.gpu_queries_lost));
    mprof__kvf(&b, "end_ticks", "%" PRIu64, mprof__ticks());
    mprof__encoder_end_keys(&b);
    mprof__kv_list_write(&C.end, &b);
    mprof__encoder_emit(MPROF_CHUNK_END, &b);
    mprof_buf_free(&b);
}

/* ---- the thread ---------------------------------------------------------------------------- */

/* Translates the process-context records handed over since the last call. */
static void drain_process_records(void)
{
    mprof__process_queue_take(&C.proc_work);
    if (C.proc_work.len)
        mprof__encoder_process(C.proc_work.data, C.proc_work.data + C.proc_work.len);
    C.proc_work.len = 0;
}

/* A sink asks for a chunk boundary (live capture: a tool finished its handshake, and its stream
 * starts on a boundary): close the current chunk, then let the sink go on. */
static void sinks_poll(void)
{
    for (int i = 0; i < C.n_sinks; i++) {
        mprof__sink *s = C.sinks[i];
        if (s->ops->want_boundary && s->ops->want_boundary(s)) {
            mprof__encoder_emit_chunk();
            s->ops->boundary(s);
        }
    }
}

static void *collector_main(void *arg)
{
    (void)arg;
    mprof__set_os_thread_name("mprof-collector");
    uint64_t last_cal = mprof__mono_ns();
    pthread_mutex_lock(&C.m);
    while (!C.stop) {
        uint64_t req = C.flush_req;
        pthread_mutex_unlock(&C.m);

        mprof__buffers_drain(mprof__encoder_translate);
        drain_process_records();
        sinks_poll();
        uint64_t now = mprof__mono_ns();
        if (now - last_cal > 1000000000ull) {
            /* A (ticks, ns) pair every second lets a reader check the rate over the capture. */
            mprof__encoder_calibration();
            last_cal = now;
        }
        if (!mprof__encoder_chunk_empty() &&
            (req != C.flush_done || now - mprof__encoder_chunk_started_ns() > 250000000ull))
            mprof__encoder_emit_chunk();

        pthread_mutex_lock(&C.m);
        if (req != C.flush_done) {
            C.flush_done = req;
            pthread_cond_broadcast(&C.done);
        }
        if (C.stop || C.flush_req != C.flush_done)
            continue;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)mprof__config.flush_interval_ms * 1000000u;
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&C.wake, &C.m, &ts);
    }
    pthread_mutex_unlock(&C.m);
    mprof__buffers_drain(mprof__encoder_translate);
    drain_process_records();
    mprof__encoder_emit_chunk();
    return NULL;
}

/* ---- the session --------------------------------------------------------------------------- */

static void close_sinks(void)
{
    for (int i = C.n_sinks; i-- > 0;)
        C.sinks[i]->ops->close(C.sinks[i]);
    C.n_sinks = 0;
    C.whole_capture = 0;
}

mprof_result mprof__collector_init(void)
{
    return mprof__encoder_init();
}

mprof_result mprof__collector_start(const mprof__collector_setup *setup)
{
    C.n_sinks = 0;
    C.whole_capture = 0;
    for (int i = 0; i < setup->n_sinks; i++) {
        C.sinks[C.n_sinks++] = setup->sinks[i];
        if (setup->sinks[i]->ops->whole_capture)
            C.whole_capture = 1;
    }
    C.info = setup->info;
    C.end = setup->end;
    /* A new session: leftovers written after the previous stop are discarded, and every
     * definition is announced again. */
    mprof__buffers_drain(NULL);
    mprof__encoder_begin(C.sinks, C.n_sinks, setup->before_stacks);
    mprof__stats_new_session();

    if (C.whole_capture)
        write_info();
    C.stop = 0;
    C.flush_req = C.flush_done = 0;
    /* The mode is set before the thread starts so that a capture session attached by the
     * collector (which may switch IDLE to RECORDING) is never overwritten. */
    mprof__mode_set(setup->record ? MPROF__MODE_RECORDING : MPROF__MODE_IDLE);
    if (pthread_create(&C.thread, NULL, collector_main, NULL) != 0) {
        mprof__mode_set(MPROF__MODE_OFF);
        close_sinks();
        return MPROF_ERR_STATE;
    }
    C.running = 1;
    mprof__process_queue_open();
    return MPROF_OK;
}

void mprof__collector_stop(void)
{
    if (!C.running)
        return;
    pthread_mutex_lock(&C.m);
    C.stop = 1;
    pthread_cond_signal(&C.wake);
    pthread_mutex_unlock(&C.m);
    pthread_join(C.thread, NULL);
    C.running = 0;
    mprof__process_queue_close();
    uint64_t lost = atomic_load(&mprof__stats.events_lost);
    if (C.whole_capture)
        write_end();
    close_sinks();
    if (lost)
        mprof__log("%" PRIu64 " events were dropped (memory cap %zu MiB reached); they are "
                   "counted in the capture",
                   lost, mprof__config.memory_limit_bytes >> 20);
    if (mprof__config.verbose == MPROF_TOGGLE_ON)
        mprof__log("stopped: %" PRIu64 " events, %" PRIu64 " bytes written",
                   mprof__encoder_events(), atomic_load(&mprof__stats.bytes_written));
}

void mprof__collector_flush(void)
{
    pthread_mutex_lock(&C.m);
    if (!C.running) {
        pthread_mutex_unlock(&C.m);
        return;
    }
    uint64_t want = ++C.flush_req;
    pthread_cond_signal(&C.wake);
    while (C.flush_done < want && !C.stop)
        pthread_cond_wait(&C.done, &C.m);
    pthread_mutex_unlock(&C.m);
}
