/*
 * events.c - the instrumentation entry points other than zone begin/end: annotations, frames,
 * plots, messages, thread names. Each reserves a raw record in the calling thread's buffer
 * (format.h gives the layout), fills it and commits it. None of them blocks or takes a lock.
 */
#include "buffers.h"
#include "lifecycle.h"
#include "stats.h"

#include <stdarg.h>
#include <stdio.h>

static void record_str(int tag, const char *text, size_t len)
{
    unsigned char *p = mprof__reserve(1 + MPROF__STR_BYTES(len));
    if (!p)
        return;
    p[0] = (unsigned char)tag;
    mprof__commit(mprof__w_str(p + 1, text, len));
}

void mprof__zone_text(const char *text, size_t len)
{
    record_str(MPROF_EV_ZONE_TEXT, text, len);
}

void mprof__zone_name(const char *text, size_t len)
{
    record_str(MPROF_EV_ZONE_NAME, text, len);
}

void mprof__zone_value(uint64_t value)
{
    unsigned char *p = mprof__reserve(9);
    if (!p)
        return;
    p[0] = MPROF_EV_ZONE_VALUE;
    mprof__commit(mprof__w_u64(p + 1, value));
}

void mprof__frame_mark(const char *name)
{
    if (!name)
        atomic_fetch_add_explicit(&mprof__stats.frames_marked, 1, memory_order_relaxed);
    mprof__record_name(MPROF_EV_FRAME_MARK, name);
}

void mprof__frame_begin(const char *name)
{
    mprof__record_name(MPROF_EV_FRAME_BEGIN, name);
}

void mprof__frame_end(const char *name)
{
    mprof__record_name(MPROF_EV_FRAME_END, name);
}

void mprof__plot_f64(const char *name, double value)
{
    unsigned char *p = mprof__record(MPROF_EV_PLOT_F64, 25);
    if (!p)
        return;
    p = mprof__w_ptr(p, name);
    mprof__commit(mprof__w_f64(p, value));
}

void mprof__plot_i64(const char *name, int64_t value)
{
    unsigned char *p = mprof__record(MPROF_EV_PLOT_I64, 25);
    if (!p)
        return;
    p = mprof__w_ptr(p, name);
    mprof__commit(mprof__w_u64(p, (uint64_t)value));
}

void mprof_plot_config(const char *name, mprof_plot_format format, mprof_plot_style style,
                       uint32_t color)
{
    unsigned char *p = mprof__reserve(15);
    if (!p)
        return;
    p[0] = MPROF_EV_PLOT_CONFIG;
    p = mprof__w_ptr(p + 1, name);
    p = mprof__w_u8(p, (uint8_t)format);
    p = mprof__w_u8(p, (uint8_t)style);
    mprof__commit(mprof__w_u32(p, color));
}

void mprof__message(int level, const char *text, size_t len)
{
    if (level < MPROF_LOG_TRACE || level > MPROF_LOG_FATAL)
        level = MPROF_LOG_INFO;
    unsigned char *p = mprof__record(MPROF_EV_MESSAGE, 10 + MPROF__STR_BYTES(len));
    if (!p)
        return;
    p = mprof__w_u8(p, (uint8_t)level);
    mprof__commit(mprof__w_str(p, text, len));
}

void mprof__messagef(int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    mprof__message(level, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

void mprof__thread_name(const char *name)
{
    /* Late captures learn the name from live.c's copy of sticky records, not from here. */
    size_t len = strlen(name);
    record_str(MPROF_EV_THREAD_NAME, name, len < 255 ? len : 255);
}

void mprof__app_info(const char *text, size_t len)
{
    record_str(MPROF_EV_APP_INFO, text, len);
}
