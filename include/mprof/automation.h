/*
 * automation.h - capture automation: the game arms a capture from code.
 *
 * Overview
 *   An armed automation spawns `mprof capture` against this very process when its trigger
 *   fires (a call, a frame number, or a named event such as "hitch"), lets it capture for the
 *   configured seconds (plus, optionally, the history from before the trigger), and reports
 *   Saved only once the tool has exited successfully and the file is a valid capture.
 *
 * Step by step
 *   mprof_capture_automation_config cfg = {0};          // all defaults
 *   cfg.trigger = MPROF_TRIGGER_NAMED; cfg.event_name = "hitch"; cfg.history_seconds = 3;
 *   mprof_capture_automation *a = mprof_capture_automation_create(&cfg);
 *   ...each frame:  MPROF_FRAME_MARK(); mprof_capture_automation_poll(a);
 *   ...on a hitch:  mprof_capture_automation_fire(a, "hitch");
 *   ...when mprof_capture_automation_poll(a) returns MPROF_CAPTURE_SAVED or _FAILED, read
 *      mprof_capture_automation_output(a) / mprof_capture_automation_reason(a).
 *   mprof_capture_automation_destroy(a);
 *
 * Non-blocking: poll() never waits. It creates the output directories, spawns the tool
 * (posix_spawn), reaps it (waitpid WNOHANG) and validates the file; a frame pays for a few
 * system calls, and for reading the file's chunk headers once, when the tool has exited.
 *
 * The process must be listening (the default when no capture_path is set; see
 * docs/CAPTURE.md). Without MPROF_ENABLE every function below is a static inline no-op returning
 * a typed constant (create returns NULL, poll returns MPROF_CAPTURE_DISABLED), so the calls
 * can stay in shipping code and the program need not link libmprof.
 *
 * Threading: one automation object is used from one thread (usually the main loop); distinct
 * objects are independent.
 */
#ifndef MPROF_AUTOMATION_H
#define MPROF_AUTOMATION_H

#include "mprof/mprof.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mprof_capture_trigger {
    MPROF_TRIGGER_DEFAULT = 0, /* = MANUAL */
    MPROF_TRIGGER_MANUAL = 1,  /* starts on mprof_capture_automation_start() */
    MPROF_TRIGGER_FRAME = 2,   /* starts when MPROF_FRAME_MARK() has been called `frame` times */
    MPROF_TRIGGER_NAMED = 3    /* starts on mprof_capture_automation_fire(a, event_name) */
} mprof_capture_trigger;

typedef enum mprof_capture_status {
    MPROF_CAPTURE_DISABLED = 0,  /* no automation (NULL object, or profiling compiled out) */
    MPROF_CAPTURE_ARMED = 1,     /* waiting for the trigger */
    MPROF_CAPTURE_CAPTURING = 2, /* the tool is running */
    MPROF_CAPTURE_SAVED = 3,     /* the tool exited 0 and the file is a valid capture */
    MPROF_CAPTURE_FAILED = 4     /* see mprof_capture_automation_reason() */
} mprof_capture_status;

typedef struct mprof_capture_automation_config {
    const char *tool_path;   /* the mprof command; default "mprof" found next to the running
                                executable, then on PATH (env MPROF_TOOL) */
    const char *output_path; /* default "Saved/Profiling/mprof/capture.mprof"; an existing
                                file is overwritten; directories are created */
    const char *address;     /* default: the address this process listens on */
    uint16_t port;           /* default: the port this process listens on */
    double seconds;          /* capture length after the trigger; default 5 */
    uint32_t memory_limit_mib; /* the tool's -m; default 0 = the tool's default */
    double history_seconds;  /* history before the trigger to include; default 0 = none */
    mprof_capture_trigger trigger;
    uint64_t frame;          /* FRAME trigger: the frame count that starts the capture */
    const char *event_name;  /* NAMED trigger: the event that starts it (copied) */
    double timeout_seconds;  /* kill the tool if it has not finished by seconds + this;
                                default 30 */
} mprof_capture_automation_config;

typedef struct mprof_capture_automation mprof_capture_automation;

#if defined(MPROF_ENABLE) || defined(MPROF_BUILDING_LIBRARY)

/* Creates an armed automation (the config's strings are copied). NULL when out of memory or
 * when cfg is invalid (NAMED without event_name). Free with mprof_capture_automation_destroy. */
MPROF_API mprof_capture_automation *
mprof_capture_automation_create(const mprof_capture_automation_config *cfg);
/* Kills a running tool (the partial file stays readable) and frees a. NULL is a no-op. */
MPROF_API void mprof_capture_automation_destroy(mprof_capture_automation *a);
/* MANUAL trigger (any trigger, in fact): starts the capture now if armed. Returns MPROF_OK or
 * MPROF_ERR_STATE when not armed; the spawn itself happens in the next poll. */
MPROF_API mprof_result mprof_capture_automation_start(mprof_capture_automation *a);
/* NAMED trigger: starts the capture if armed and event equals the configured event name. */
MPROF_API void mprof_capture_automation_fire(mprof_capture_automation *a, const char *event);
/* Advances the automation without blocking and returns its status. Call once per frame. */
MPROF_API mprof_capture_status mprof_capture_automation_poll(mprof_capture_automation *a);
/* Status without advancing. */
MPROF_API mprof_capture_status mprof_capture_automation_status(const mprof_capture_automation *a);
/* Why it failed ("" otherwise); valid until the next call on a. */
MPROF_API const char *mprof_capture_automation_reason(const mprof_capture_automation *a);
/* The output path. */
MPROF_API const char *mprof_capture_automation_output(const mprof_capture_automation *a);
/* "armed", "capturing", "saved", "failed", "disabled". */
MPROF_API const char *mprof_capture_status_name(mprof_capture_status s);
/* Re-arms a SAVED or FAILED automation for another capture (same config). */
MPROF_API mprof_result mprof_capture_automation_rearm(mprof_capture_automation *a);

#else /* profiling compiled out: typed constants, arguments not evaluated beyond the call */

static inline mprof_capture_automation *
mprof_capture_automation_create(const mprof_capture_automation_config *cfg)
{
    (void)cfg;
    return (mprof_capture_automation *)0;
}
static inline void mprof_capture_automation_destroy(mprof_capture_automation *a) { (void)a; }
static inline mprof_result mprof_capture_automation_start(mprof_capture_automation *a)
{
    (void)a;
    return MPROF_ERR_STATE;
}
static inline void mprof_capture_automation_fire(mprof_capture_automation *a, const char *event)
{
    (void)a;
    (void)event;
}
static inline mprof_capture_status mprof_capture_automation_poll(mprof_capture_automation *a)
{
    (void)a;
    return MPROF_CAPTURE_DISABLED;
}
static inline mprof_capture_status
mprof_capture_automation_status(const mprof_capture_automation *a)
{
    (void)a;
    return MPROF_CAPTURE_DISABLED;
}
static inline const char *mprof_capture_automation_reason(const mprof_capture_automation *a)
{
    (void)a;
    return "profiling is compiled out (MPROF_ENABLE undefined)";
}
static inline const char *mprof_capture_automation_output(const mprof_capture_automation *a)
{
    (void)a;
    return "";
}
static inline const char *mprof_capture_status_name(mprof_capture_status s)
{
    (void)s;
    return "disabled";
}
static inline mprof_result mprof_capture_automation_rearm(mprof_capture_automation *a)
{
    (void)a;
    return MPROF_ERR_STATE;
}

#endif

#ifdef __cplusplus
}
#endif

#endif /* MPROF_AUTOMATION_H */
