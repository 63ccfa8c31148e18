/*
 * automation.c - capture automation (include/mprof/automation.h).
 *
 * A small state machine advanced by mprof_capture_automation_poll() from the game's main loop:
 * ARMED -> (trigger) -> spawn `mprof capture` against this process -> CAPTURING -> (the tool
 * exits) -> validate the file -> SAVED or FAILED. Nothing here blocks: the tool is started with
 * posix_spawn and reaped with waitpid(WNOHANG); the file check reads only chunk headers and the
 * first chunks. The tool's stderr goes to OUTPUT.log, kept only when the capture failed, so the
 * reason string can quote the tool's own message.
 */
#include "config.h"
#include "platform/platform.h"
#include "stats.h"
#include "format/format.h"
#include "mprof/automation.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define DEFAULT_OUTPUT "Saved/Profiling/mprof/capture.mprof"

struct mprof_capture_automation {
    mprof_capture_automation_config cfg;
    char *tool_path, *output, *address, *event_name, *log_path;
    mprof_capture_status status;
    int triggered;
    pid_t pid;
    uint64_t started_ns, deadline_ns;
    int sent_int;
    char reason[512];
};

static char *dup_or(const char *s, const char *dflt)
{
    const char *v = s && *s ? s : dflt;
    return v ? strdup(v) : NULL;
}

mprof_capture_automation *mprof_capture_automation_create(const mprof_capture_automation_config *cfg)
{
    mprof_capture_automation_config c = cfg ? *cfg : (mprof_capture_automation_config){0};
    if (c.trigger == MPROF_TRIGGER_NAMED && (!c.event_name || !*c.event_name))
        return NULL;
    if (c.trigger == MPROF_TRIGGER_DEFAULT)
        c.trigger = MPROF_TRIGGER_MANUAL;
    mprof_capture_automation *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    const char *env_tool = getenv("MPROF_TOOL");
    a->tool_path = dup_or(env_tool && *env_tool ? env_tool : c.tool_path, "mprof");
    a->output = dup_or(c.output_path, DEFAULT_OUTPUT);
    /* The listening address and port default to the profiler's, looked up when the tool is
     * spawned: the automation may be created before mprof_startup applies MPROF_PORT. */
    a->address = c.address ? strdup(c.address) : NULL;
    a->event_name = dup_or(c.event_name, "");
    size_t ol = a->output ? strlen(a->output) : 0;
    a->log_path = malloc(ol + 5);
    if (!a->tool_path || !a->output || (c.address && !a->address) || !a->event_name ||
        !a->log_path) {
        mprof_capture_automation_destroy(a);
        return NULL;
    }
    snprintf(a->log_path, ol + 5, "%s.log", a->output);
    if (c.seconds <= 0)
        c.seconds = 5;
    if (c.timeout_seconds <= 0)
        c.timeout_seconds = 30;
    c.tool_path = a->tool_path;
    c.output_path = a->output;
    c.address = a->address;
    c.event_name = a->event_name;
    a->cfg = c;
    a->status = MPROF_CAPTURE_ARMED;
    a->pid = -1;
    return a;
}

static void kill_and_wait(mprof_capture_automation *a)
{
    if (a->pid <= 0)
        return;
    kill(a->pid, SIGINT);
    for (int i = 0; i < 200; i++) {
        if (waitpid(a->pid, NULL, WNOHANG) == a->pid) {
            a->pid = -1;
            return;
        }
        usleep(10000);
    }
    kill(a->pid, SIGKILL);
    waitpid(a->pid, NULL, 0);
    a->pid = -1;
}

void mprof_capture_automation_destroy(mprof_capture_automation *a)
{
    if (!a)
        return;
    kill_and_wait(a);
    free(a->tool_path);
    free(a->output);
    free(a->address);
    free(a->event_name);
    free(a->log_path);
    free(a);
}

mprof_result mprof_capture_automation_start(mprof_capture_automation *a)
{
    if (!a || a->status != MPROF_CAPTURE_ARMED)
        return MPROF_ERR_STATE;
    a->triggered = 1;
    return MPROF_OK;
}

void mprof_capture_automation_fire(mprof_capture_automation *a, const char *event)
{
    if (a && event && a->status == MPROF_CAPTURE_ARMED && a->cfg.trigger == MPROF_TRIGGER_NAMED &&
        strcmp(event, a->event_name) == 0)
        a->triggered = 1;
}

mprof_result mprof_capture_automation_rearm(mprof_capture_automation *a)
{
    if (!a || (a->status != MPROF_CAPTURE_SAVED && a->status != MPROF_CAPTURE_FAILED))
        return MPROF_ERR_STATE;
    a->status = MPROF_CAPTURE_ARMED;
    a->triggered = 0;
    a->reason[0] = 0;
    return MPROF_OK;
}

static mprof_capture_status fail(mprof_capture_automation *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static mprof_capture_status fail(mprof_capture_automation *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->reason, sizeof a->reason, fmt, ap);
    va_end(ap);
    a->status = MPROF_CAPTURE_FAILED;
    return a->status;
}

static int executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Resolves the tool: a path with a slash as given; a bare name next to the running executable,
 * then on PATH. Returns 0 with out filled, or -1. */
static int find_tool(const char *name, char *out, size_t n)
{
    if (strchr(name, '/')) {
        snprintf(out, n, "%s", name);
        return executable(out) ? 0 : -1;
    }
    char exe[2048];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
        exe[l] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(out, n, "%s/%s", exe, name);
            if (executable(out))
                return 0;
        }
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t dl = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(out, n, "%.*s/%s", (int)dl, dl ? path : ".", name);
        if (executable(out))
            return 0;
        path = colon ? colon + 1 : NULL;
    }
    return -1;
}

static void spawn(mprof_capture_automation *a)
{
    char tool[4096];
    if (find_tool(a->tool_path, tool, sizeof tool) != 0) {
        fail(a, "capture tool not found: '%s' (looked %s)", a->tool_path,
             strchr(a->tool_path, '/') ? "at that path" : "next to this executable and on PATH");
        return;
    }
    if (mprof__mkdirs_for(a->output) != 0) {
        fail(a, "cannot create the directories for %s: %s", a->output, strerror(errno));
        return;
    }
    char port[16], secs[32], hist[32], mib[16];
    unsigned listen_port = a->cfg.port ? a->cfg.port
                           : mprof__config.listen_port ? mprof__config.listen_port : 8086u;
    char *address = a->address ? a->address
                    : mprof__config.listen_address ? (char *)mprof__config.listen_address
                                                  : (char *)"127.0.0.1";
    snprintf(port, sizeof port, "%u", listen_port);
    snprintf(secs, sizeof secs, "%g", a->cfg.seconds);
    snprintf(hist, sizeof hist, "%g", a->cfg.history_seconds);
    snprintf(mib, sizeof mib, "%u", (unsigned)a->cfg.memory_limit_mib);
    char *argv[24];
    int n = 0;
    argv[n++] = tool;
    argv[n++] = "capture";
    argv[n++] = "-o";
    argv[n++] = a->output;
    argv[n++] = "-f";
    argv[n++] = "-a";
    argv[n++] = address;
    argv[n++] = "-p";
    argv[n++] = port;
    argv[n++] = "-s";
    argv[n++] = secs;
    argv[n++] = "--wait";
    argv[n++] = "5";
    if (a->cfg.history_seconds > 0) {
        argv[n++] = "--history";
        argv[n++] = hist;
    }
    if (a->cfg.memory_limit_mib) {
        argv[n++] = "-m";
        argv[n++] = mib;
    }
    argv[n] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, a->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    /* The tool must get SIGINT (the deadline's clean stop) even if the game blocks or ignores
     * it on the polling thread. */
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGINT);
    sigaddset(&dflt, SIGTERM);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dflt);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, tool, &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fail(a, "cannot start the capture tool %s: %s", tool, strerror(rc));
        return;
    }
    a->pid = pid;
    a->sent_int = 0;
    a->started_ns = mprof__mono_ns();
    a->deadline_ns = a->started_ns + (uint64_t)((a->cfg.seconds + a->cfg.timeout_seconds) * 1e9);
    a->status = MPROF_CAPTURE_CAPTURING;
}

/* The last non-empty line of the tool's log, for the reason string. */
static void last_log_line(const char *path, char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[400];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0])
            snprintf(out, n, "%s", line);
    }
    fclose(f);
}

/* Checks that path is a complete, valid capture: the reader accepts it and its first chunks,
 * every chunk header is valid, and the last chunk is END. Returns NULL or what is wrong. */
static const char *validate(const char *path, char *buf, size_t n)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    if (!r) {
        snprintf(buf, n, "%s", err);
        return buf;
    }
    mprof_event ev;
    int rc = mprof_reader_next(r, &ev);
    if (rc < 0) {
        snprintf(buf, n, "%s: %s", path, mprof_reader_error(r));
        mprof_reader_close(r);
        return buf;
    }
    mprof_reader_close(r);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(buf, n, "%s: %s", path, strerror(errno));
        return buf;
    }
    int last = 0;
    const char *why = NULL;
    unsigned char h[MPROF_FMT_CHUNK_HEADER_BYTES];
    if (fseek(f, MPROF_FMT_HEADER_BYTES, SEEK_SET) != 0)
        why = "too short";
    while (!why) {
        size_t got = fread(h, 1, sizeof h, f);
        if (got == 0)
            break;
        int kind, codec;
        uint32_t stored, raw;
        if (got < sizeof h || (why = mprof_fmt_check_chunk_header(h, &kind, &codec, &stored, &raw)))
            why = why ? why : "cut off inside a chunk header";
        else if (fseek(f, (long)stored, SEEK_CUR) != 0)
            why = "cut off inside a chunk";
        else
            last = kind;
    }
    long end = ftell(f);
    fseek(f, 0, SEEK_END);
    if (!why && ftell(f) != end)
        why = "cut off inside a chunk";
    fclose(f);
    if (!why && last != MPROF_CHUNK_END)
        why = "the capture has no END chunk (incomplete)";
    if (why) {
        snprintf(buf, n, "%s: %s", path, why);
        return buf;
    }
    return NULL;
}

static const char *exit_meaning(int code)
{
    switch (code) {
    case 1:
        return "events were lost";
    case 2:
        return "usage error";
    case 3:
        return "output file problem";
    case 4:
        return "could not connect to the process";
    case 5:
        return "protocol mismatch or a corrupt stream";
    default:
        return "unexpected exit code";
    }
}

mprof_capture_status mprof_capture_automation_poll(mprof_capture_automation *a)
{
    if (!a)
        return MPROF_CAPTURE_DISABLED;
    switch (a->status) {
    case MPROF_CAPTURE_ARMED:
        if (a->cfg.trigger == MPROF_TRIGGER_FRAME &&
            atomic_load_explicit(&mprof__stats.frames_marked, memory_order_relaxed) >= a->cfg.frame)
            a->triggered = 1;
        if (a->triggered)
            spawn(a);
        break;
    case MPROF_CAPTURE_CAPTURING: {
        int st;
        pid_t r = waitpid(a->pid, &st, WNOHANG);
        if (r == 0) {
            uint64_t now = mprof__mono_ns();
            if (now > a->deadline_ns && !a->sent_int) {
                kill(a->pid, SIGINT); /* the tool finalises the file on SIGINT */
                a->sent_int = 1;
            } else if (now > a->deadline_ns + 5000000000ull) {
                kill(a->pid, SIGKILL);
            }
            break;
        }
        a->pid = -1;
        if (r < 0)
            return fail(a, "cannot wait for the capture tool: %s", strerror(errno));
        char line[400], vbuf[600];
        if (WIFSIGNALED(st)) {
            last_log_line(a->log_path, line, sizeof line);
            return fail(a, "the capture tool was killed by signal %d%s%s", WTERMSIG(st),
                        line[0] ? ": " : "", line);
        }
        if (WEXITSTATUS(st) != 0) {
            last_log_line(a->log_path, line, sizeof line);
            return fail(a, "the capture tool exited with code %d (%s)%s%s", WEXITSTATUS(st),
                        exit_meaning(WEXITSTATUS(st)), line[0] ? ": " : "", line);
        }
        struct stat sb;
        if (stat(a->output, &sb) != 0)
            return fail(a, "the capture tool exited 0 but wrote no file at %s", a->output);
        const char *why = validate(a->output, vbuf, sizeof vbuf);
        if (why)
            return fail(a, "the capture is not valid: %s", why);
        unlink(a->log_path);
        a->status = MPROF_CAPTURE_SAVED;
        break;
    }
    default:
        break;
    }
    return a->status;
}

mprof_capture_status mprof_capture_automation_status(const mprof_capture_automation *a)
{
    return a ? a->status : MPROF_CAPTURE_DISABLED;
}

const char *mprof_capture_automation_reason(const mprof_capture_automation *a)
{
    return a ? a->reason : "no automation";
}

const char *mprof_capture_automation_output(const mprof_capture_automation *a)
{
    return a ? a->output : "";
}

const char *mprof_capture_status_name(mprof_capture_status s)
{
    switch (s) {
    case MPROF_CAPTURE_ARMED:
        return "armed";
    case MPROF_CAPTURE_CAPTURING:
        return "capturing";
    case MPROF_CAPTURE_SAVED:
        return "saved";
    case MPROF_CAPTURE_FAILED:
        return "failed";
    default:
        return "disabled";
    }
}
