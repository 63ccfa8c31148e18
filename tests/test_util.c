#include "test_util.h"

#include "format/batch.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *tu_temp_path(const char *stem)
{
    static char buf[8][512];
    static int slot;
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    static unsigned n;
    char *p = buf[slot++ & 7];
    snprintf(p, 512, "%s/mprof-test-%ld-%u-%s", dir, (long)getpid(), n++, stem);
    unlink(p);
    return p;
}

int tu_count_capture(const char *path, tu_counts *out)
{
    memset(out, 0, sizeof *out);
    mprof_reader *r = mprof_reader_open(path, out->err, sizeof out->err);
    if (!r) {
        out->rc = -1;
        return -1;
    }
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        out->by_type[ev.type & 0xff]++;
        out->events++;
    }
    out->rc = rc;
    if (rc < 0)
        snprintf(out->err, sizeof out->err, "%s", mprof_reader_error(r));
    mprof_reader_get_stats(r, &out->st);
    mprof_reader_close(r);
    return rc < 0 ? -1 : 0;
}

static int is_def(int t)
{
    return t == MPROF_EV_DEF_SRCLOC || t == MPROF_EV_DEF_STRING || t == MPROF_EV_DEF_THREAD ||
           t == MPROF_EV_DEF_CALLSTACK || t == MPROF_EV_DEF_MODULE || t == MPROF_EV_THREAD;
}

mprof_reader *tu_first_read_of(const char *path, int process_only, tu_first_read *s)
{
    char err[256];
    memset(s, 0, sizeof *s);
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    if (!r)
        fail_msg("%s", err);
    if (process_only)
        mprof_reader_process_only(r);
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        if (is_def(ev.type))
            continue;
        if (ev.thread == 0) {
            s->process[ev.type]++;
            continue;
        }
        s->thread_events++;
        if (ev.type != MPROF_EV_FRAME_MARK || ev.u[0] != 0)
            continue;
        if (!s->main_thread)
            s->main_thread = ev.thread;
        if (ev.thread != s->main_thread)
            continue;
        if (!s->marks || ev.ts_ns < s->first)
            s->first = ev.ts_ns;
        if (!s->marks || ev.ts_ns > s->last)
            s->last = ev.ts_ns;
        s->marks++;
    }
    if (rc < 0)
        fail_msg("%s: %s", path, mprof_reader_error(r));
    return r;
}

int tu_run(const char *cmd, char *out, size_t n)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t got = 0;
    if (out && n) {
        size_t k;
        while (got + 1 < n && (k = fread(out + got, 1, n - 1 - got, p)) > 0)
            got += k;
        out[got] = 0;
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0)
        ;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

double tu_scale(void)
{
    const char *s = getenv("MPROF_TEST_SCALE");
    double v = s ? strtod(s, NULL) : 1.0;
    return v > 0 ? v : 1.0;
}

const char *tu_mprof_bin(void)
{
    const char *b = getenv("MPROF_BIN");
    return b && *b ? b : "mprof";
}

/* ---- synthetic captures --------------------------------------------------------------------- */

static void cap_put(tu_cap *c, const void *p, size_t n)
{
    if (mprof_buf_reserve(&c->ev, n) != 0)
        abort();
    memcpy(c->ev.data + c->ev.len, p, n);
    c->ev.len += n;
}

static void cap_u8(tu_cap *c, unsigned v)
{
    unsigned char b = (unsigned char)v;
    cap_put(c, &b, 1);
}

static void cap_var(tu_cap *c, uint64_t v)
{
    unsigned char b[10], *e = mprof_put_varint(b, v);
    cap_put(c, b, (size_t)(e - b));
}

static void cap_str(tu_cap *c, const char *s)
{
    cap_var(c, strlen(s));
    cap_put(c, s, strlen(s));
}

static void cap_ts(tu_cap *c, int64_t ts)
{
    cap_var(c, mprof_zigzag(ts - c->last[c->thread]));
    c->last[c->thread] = ts;
}

void tu_cap_thread(tu_cap *c, uint32_t t)
{
    cap_u8(c, MPROF_EV_THREAD);
    cap_var(c, t);
    c->thread = t < 64 ? t : 63;
}

void tu_cap_loc(tu_cap *c, uint32_t id, const char *name, const char *fn, const char *file, uint32_t line)
{
    cap_u8(c, MPROF_EV_DEF_SRCLOC);
    cap_var(c, id);
    cap_var(c, line);
    cap_var(c, 0);
    cap_str(c, name);
    cap_str(c, fn);
    cap_str(c, file);
}

void tu_cap_string(tu_cap *c, uint32_t id, const char *s)
{
    cap_u8(c, MPROF_EV_DEF_STRING);
    cap_var(c, id);
    cap_str(c, s);
}

void tu_cap_begin(tu_cap *c, int64_t ts, uint32_t loc)
{
    cap_u8(c, MPROF_EV_ZONE_BEGIN);
    cap_ts(c, ts);
    cap_var(c, loc);
}

void tu_cap_end(tu_cap *c, int64_t ts)
{
    cap_u8(c, MPROF_EV_ZONE_END);
    cap_ts(c, ts);
}

void tu_cap_zone(tu_cap *c, int64_t start, int64_t end, uint32_t loc)
{
    tu_cap_begin(c, start, loc);
    tu_cap_end(c, end);
}

static void cap_frame(tu_cap *c, unsigned tag, int64_t ts, uint32_t name)
{
    cap_u8(c, tag);
    cap_ts(c, ts);
    cap_var(c, name);
}

void tu_cap_mark(tu_cap *c, int64_t ts, uint32_t name)
{
    cap_frame(c, MPROF_EV_FRAME_MARK, ts, name);
}

void tu_cap_frame_begin(tu_cap *c, int64_t ts, uint32_t name)
{
    cap_frame(c, MPROF_EV_FRAME_BEGIN, ts, name);
}

void tu_cap_frame_end(tu_cap *c, int64_t ts, uint32_t name)
{
    cap_frame(c, MPROF_EV_FRAME_END, ts, name);
}

void tu_cap_lock(tu_cap *c, unsigned tag, int64_t ts, uint32_t id, int shared)
{
    cap_u8(c, tag);
    cap_ts(c, ts);
    cap_var(c, id);
    cap_u8(c, shared ? 1 : 0);
}

int tu_cap_write(tu_cap *c, const char *path)
{
    mprof_buf out = {0}, inf = {0}, fin = {0};
    int rc = -1;
    if (mprof_buf_reserve(&out, MPROF_FMT_HEADER_BYTES) != 0)
        goto done;
    mprof_fmt_file_header(out.data);
    out.len = MPROF_FMT_HEADER_BYTES;
    mprof_fmt_kv(&inf, "app", "synthetic");
    mprof_fmt_kv(&inf, "pid", "7");
    mprof_fmt_kv(&inf, "ns_per_tick", "1");
    mprof_fmt_kv(&inf, "tick0", "0");
    mprof_fmt_kv(&fin, "events_lost", "0");
    if (mprof_fmt_chunk(&out, MPROF_CHUNK_INFO, inf.data, inf.len, 0, NULL) != 0 ||
        mprof_fmt_chunk(&out, MPROF_CHUNK_EVENTS, c->ev.data, c->ev.len, 3, NULL) != 0 ||
        mprof_fmt_chunk(&out, MPROF_CHUNK_END, fin.data, fin.len, 0, NULL) != 0)
        goto done;
    FILE *f = fopen(path, "wb");
    if (!f)
        goto done;
    rc = fwrite(out.data, 1, out.len, f) == out.len ? 0 : -1;
    if (fclose(f) != 0)
        rc = -1;
done:
    mprof_buf_free(&out);
    mprof_buf_free(&inf);
    mprof_buf_free(&fin);
    mprof_buf_free(&c->ev);
    memset(c, 0, sizeof *c);
    return rc;
}
