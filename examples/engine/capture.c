/*
 * capture.c - capture automation in the engine. --auto-capture arms mprof's in-process
 * automation (include/mprof/automation.h) on a frame number, a named engine event ("hitch",
 * "level-loaded") or at once, polls it once per frame from the main loop, and reports how it
 * ended. The game never waits on the capture tool: spawning and reaping happen inside poll.
 */
#include "engine.h"

#include "mprof/automation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static mprof_capture_automation *autocap;
static mprof_capture_status shown = MPROF_CAPTURE_DISABLED;
static double capture_seconds;

int capture_parse_spec(const char *spec)
{
    return strcmp(spec, "now") == 0 || strncmp(spec, "frame:", 6) == 0 ||
                   strncmp(spec, "event:", 6) == 0
               ? 0
               : -1;
}

static void show(mprof_capture_status s)
{
    if (s == shown)
        return;
    shown = s;
    if (s == MPROF_CAPTURE_FAILED)
        log_msg(ENG_LOG_ERROR, "capture: failed: %s", mprof_capture_automation_reason(autocap));
    else
        log_msg(ENG_LOG_INFO, "capture: %s (%s)", mprof_capture_status_name(s),
                mprof_capture_automation_output(autocap));
}

int capture_auto_begin(const engine_options *o)
{
    if (!o->auto_capture)
        return 0;
    mprof_capture_automation_config c;
    memset(&c, 0, sizeof c);
    c.output_path = o->auto_capture_output; /* NULL: Saved/Profiling/mprof/capture.mprof */
    c.seconds = capture_seconds = o->auto_capture_seconds > 0 ? o->auto_capture_seconds : 1.0;
    const char *spec = o->auto_capture;
    if (strncmp(spec, "frame:", 6) == 0) {
        c.trigger = MPROF_TRIGGER_FRAME;
        c.frame = strtoull(spec + 6, NULL, 10);
    } else if (strncmp(spec, "event:", 6) == 0) {
        c.trigger = MPROF_TRIGGER_NAMED;
        c.event_name = spec + 6;
    } else {
        c.trigger = MPROF_TRIGGER_MANUAL;
    }
    autocap = mprof_capture_automation_create(&c);
    if (!autocap) {
        log_msg(ENG_LOG_WARN, "capture: automation is not available in this build "
                "(profiling compiled out)");
        return 0;
    }
    if (c.trigger == MPROF_TRIGGER_MANUAL)
        mprof_capture_automation_start(autocap);
    show(mprof_capture_automation_poll(autocap));
    return 0;
}

void capture_auto_event(const char *name)
{
    if (autocap)
        mprof_capture_automation_fire(autocap, name);
}

void capture_auto_frame(void)
{
    if (autocap)
        show(mprof_capture_automation_poll(autocap));
}

int capture_auto_end(void)
{
    if (!autocap)
        return 0;
    /* A capture still running when the game ends is allowed to finish (bounded). */
    struct timespec tick = {0, 10 * 1000 * 1000};
    uint64_t until = eng_now_ns() + (uint64_t)((capture_seconds + 15.0) * 1e9);
    mprof_capture_status s = mprof_capture_automation_poll(autocap);
    while (s == MPROF_CAPTURE_CAPTURING && eng_now_ns() < until) {
        nanosleep(&tick, NULL);
        s = mprof_capture_automation_poll(autocap);
    }
    show(s);
    int rc = 0;
    if (s == MPROF_CAPTURE_SAVED) {
        printf("auto_capture=saved path=%s\n", mprof_capture_automation_output(autocap));
    } else if (s == MPROF_CAPTURE_FAILED) {
        printf("auto_capture=failed reason=%s\n", mprof_capture_automation_reason(autocap));
        rc = 1;
    } else {
        printf("auto_capture=%s\n", mprof_capture_status_name(s));
        rc = s == MPROF_CAPTURE_ARMED ? 0 : 1;
    }
    mprof_capture_automation_destroy(autocap);
    autocap = NULL;
    return rc;
}
