/*
 * log.c - the engine's one logger.
 *
 * Every line goes to the profiler's timeline as a message with the line's severity
 * (MPROF_MESSAGEF), whether or not it is printed, so a capture shows what the engine said at
 * the moment it said it. Lines at or above the chosen level also go to stderr. Any thread.
 */
#include "engine.h"

#include "mprof/mprof.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

static _Atomic int print_level = ENG_LOG_INFO;
static _Atomic uint64_t counts[ENG_LOG_FATAL + 1];

static const char *const level_names[] = {"", "trace", "debug", "info", "warn", "error", "fatal"};

void log_set_level(eng_log_level level)
{
    atomic_store(&print_level, (int)level);
}

void log_msg(eng_log_level level, const char *fmt, ...)
{
    if (level < ENG_LOG_TRACE || level > ENG_LOG_FATAL)
        level = ENG_LOG_INFO;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    atomic_fetch_add(&counts[level], 1);
    MPROF_MESSAGEF((int)level, "%s", line);
    if ((int)level >= atomic_load(&print_level))
        fprintf(stderr, "engine: %s: %s\n", level_names[level], line);
}

uint64_t log_count(eng_log_level level)
{
    if (level < ENG_LOG_TRACE || level > ENG_LOG_FATAL)
        return 0;
    return atomic_load(&counts[level]);
}
