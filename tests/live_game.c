/*
 * live_game.c - a small instrumented "game" driven by the live-capture tests (test_live.c).
 *
 * Runs a main loop of frames with nested zones, plots, a named worker thread, and optional
 * capture automation. Live-capture settings come from the environment (MPROF_PORT, MPROF_LISTEN,
 * MPROF_HISTORY_SECONDS), as an operator would set them.
 *
 *   --frames N          frames to run (default 100)
 *   --frame-ms MS       sleep per frame (default 5)
 *   --capture PATH      also write an in-process capture (listening stays on: both sinks)
 *   --ready FILE        create FILE after --ready-after frames (default 20)
 *   --until FILE        after the frames, keep running until FILE exists (at most 20 s)
 *   --automation KIND   manual | frame | named: arm a capture (tool from MPROF_TOOL or --tool)
 *   --tool PATH         tool path for the automation
 *   --auto-out PATH     automation output path
 *   --noise N           N extra zones per frame, each with 256 bytes of random text (a heavy,
 *                       poorly compressible stream, to make a slow tool fall behind)
 * Prints "stats: ..." and, with --automation, "automation: STATUS: REASON" before exiting.
 */
#define MPROF_ENABLE 1
#include "mprof/automation.h"
#include "mprof/mprof.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Atomic int stop_worker;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int exists(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0;
}

static void *worker(void *arg)
{
    (void)arg;
    MPROF_THREAD_NAME("worker");
    while (!stop_worker) {
        MPROF_ZONE("job");
        sleep_ms(2);
    }
    return NULL;
}

static void spin_us(int us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static int noise;

static void noise_zones(void)
{
    static uint64_t x = 88172645463325252ull;
    char text[256];
    for (int k = 0; k < noise; k++) {
        MPROF_ZONE("noise");
        for (size_t j = 0; j < sizeof text; j++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            text[j] = (char)('!' + (x % 90));
        }
        MPROF_ZONE_TEXT(text, sizeof text);
    }
}

static void frame(int i, int early)
{
    MPROF_ZONE("frame");
    {
        MPROF_ZONE("update");
        spin_us(100);
    }
    {
        MPROF_ZONE("render");
        spin_us(100);
    }
    if (early) {
        MPROF_ZONE("early_zone");
        spin_us(20);
    } else {
        MPROF_ZONE("late_zone");
        spin_us(20);
    }
    noise_zones();
    void *mem = malloc(64);
    MPROF_ALLOC_CS(mem, 64, 8);
    MPROF_FREE_CS(mem, 8);
    free(mem);
    MPROF_PLOT_INT("frame_index", i);
    MPROF_PLOT("load", (double)(i % 10) / 10.0);
}

int main(int argc, char **argv)
{
    int frames = 100, frame_ms = 5, ready_after = 20, flush_ms = 0;
    const char *capture = NULL, *ready = NULL, *until = NULL, *automation = NULL;
    const char *tool = NULL, *auto_out = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--frames"))
            frames = atoi(v);
        else if (!strcmp(a, "--frame-ms"))
            frame_ms = atoi(v);
        else if (!strcmp(a, "--capture"))
            capture = v;
        else if (!strcmp(a, "--ready"))
            ready = v;
        else if (!strcmp(a, "--ready-after"))
            ready_after = atoi(v);
        else if (!strcmp(a, "--until"))
            until = v;
        else if (!strcmp(a, "--automation"))
            automation = v;
        else if (!strcmp(a, "--tool"))
            tool = v;
        else if (!strcmp(a, "--auto-out"))
            auto_out = v;
        else if (!strcmp(a, "--noise"))
            noise = atoi(v);
        else if (!strcmp(a, "--flush-ms"))
            flush_ms = atoi(v);
        else {
            fprintf(stderr, "live_game: unknown option %s\n", a);
            return 2;
        }
    }
    mprof_config cfg = {0};
    cfg.capture_path = capture;
    cfg.flush_interval_ms = (uint32_t)flush_ms; /* 0: the default */
    if (capture)
        cfg.listen = MPROF_TOGGLE_ON;
    if (mprof_startup(&cfg) != MPROF_OK) {
        fprintf(stderr, "live_game: mprof_startup failed\n");
        return 1;
    }
    mprof_capture_automation *au = NULL;
    if (automation) {
        mprof_capture_automation_config ac = {0};
        ac.tool_path = tool;
        ac.output_path = auto_out;
        ac.seconds = 0.3;
        if (!strcmp(automation, "frame")) {
            ac.trigger = MPROF_TRIGGER_FRAME;
            ac.frame = 10;
        } else if (!strcmp(automation, "named")) {
            ac.trigger = MPROF_TRIGGER_NAMED;
            ac.event_name = "hitch";
        } else {
            ac.trigger = MPROF_TRIGGER_MANUAL;
        }
        au = mprof_capture_automation_create(&ac);
        if (!au) {
            fprintf(stderr, "live_game: cannot create the automation\n");
            return 1;
        }
        if (!strcmp(automation, "manual"))
            mprof_capture_automation_start(au);
    }
    MPROF_PLOT_CONFIG("load", MPROF_PLOT_FORMAT_PERCENTAGE, MPROF_PLOT_STYLE_LINE, 0);
    MPROF_THREAD_NAME("main");
    pthread_t w;
    pthread_create(&w, NULL, worker, NULL);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mprof_capture_status st = MPROF_CAPTURE_DISABLED;
    for (int i = 0;; i++) {
        int more = i < frames;
        if (!more && until && !exists(until)) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            more = t.tv_sec - t0.tv_sec < 20;
        }
        if (!more && au && (st == MPROF_CAPTURE_ARMED || st == MPROF_CAPTURE_CAPTURING)) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            more = t.tv_sec - t0.tv_sec < 30;
        }
        if (!more)
            break;
        frame(i, i < ready_after);
        MPROF_FRAME_MARK();
        if (au) {
            if (i == 15)
                mprof_capture_automation_fire(au, "hitch");
            st = mprof_capture_automation_poll(au);
        }
        if (ready && i + 1 == ready_after) {
            mprof_flush();
            FILE *f = fopen(ready, "w");
            if (f)
                fclose(f);
        }
        sleep_ms(frame_ms);
    }
    stop_worker = 1;
    pthread_join(w, NULL);
    if (au) {
        printf("automation: %s: %s\n", mprof_capture_status_name(st),
               mprof_capture_automation_reason(au));
        mprof_capture_automation_destroy(au);
    }
    mprof_stats s;
    mprof_get_stats(&s);
    mprof_shutdown();
    printf("stats: sessions_dropped=%u events_lost=%llu\n", s.sessions_dropped,
           (unsigned long long)s.events_lost);
    fflush(stdout);
    return 0;
}
