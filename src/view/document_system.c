/*
 * document_system.c - the "system" object of `mprof view`'s data document (docs/VIEW.md): per traced
 * thread its off-CPU intervals and why (the viewer draws running / preempted / blocked under
 * the thread's header), the CPU-usage samples (drawn as two plots) and the callstack samples
 * with symbolised frames (the viewer's sample flame graph of a selected range). Everything is
 * limited to the embedded range; samples are capped at MAX_SAMPLES (the document says so).
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include "analysis/symbolize.h"
#include "analysis/system.h"
#include "view/document.h"
#include "util/umap.h"
#include "util/json_out.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SAMPLES 200000u

typedef struct vsample {
    int64_t ts;
    uint64_t tid;
    uint32_t stack;
} vsample;

static void jstr(FILE *o, const char *s)
{
    mprof_json_write_script_string(o, s, strlen(s));
}

/* Shares of the machine and percentages: 4 digits are plenty. */
static void jnum(FILE *o, double v)
{
    mprof_json_write_number(o, v, 4, 0, "0");
}

/* Whether off interval k of thread i overlaps [t0, t1], with its bounds and reason. "off" and
 * "wk" list the same intervals, so both ask this. */
static int off_in_range(const mprof_sysmodel *m, uint32_t i, uint32_t k, int64_t t0, int64_t t1,
                        int64_t *a, int64_t *b, int *why)
{
    mprof__sys_tid_off(m, i, k, a, b, why);
    return !(*b < t0 || *a > t1);
}

/* Whether CPU-usage sample i lies within 200 ms of [t0, t1] (so that the plot's lines enter and
 * leave the range), with its time and the other processes' and this one's share. "ts", "other"
 * and "self" list the same samples, so all three ask this. */
static int cpu_in_range(const mprof_sysmodel *m, uint32_t i, int64_t t0, int64_t t1, int64_t *ts,
                        double *other, double *self)
{
    mprof__sys_cpu_sample(m, i, ts, other, self);
    return !(*ts < t0 - 200000000 || *ts > t1 + 200000000);
}

static int write_json(const char *path, FILE *out, int64_t t0, int64_t t1)
{
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    if (!r)
        return -1;
    mprof_sys_status st;
    mprof__sys_status(r, &st);
    mprof_sysmodel *m = mprof__sys_new();
    mprof_symbolizer *sym = NULL;
    vsample *vs = NULL;
    uint32_t n_vs = 0, cap_vs = 0;
    uint64_t samples_left_out = 0;
    mprof_strtab nm = {0};
    int rc = -1;
    if (!m)
        goto out;
    /* The system records and modules only (the model takes the others' latest time from
     * each batch). */
    unsigned char want[MPROF_EV_MAX] = {0};
    mprof__sys_want(want);
    want[MPROF_EV_DEF_MODULE] = 1;
    mprof_reader_want(r, want);
    mprof_batch bt;
    int more;
    while ((more = mprof_reader_next_batch(r, &bt)) == 1) {
        if (mprof__sys_batch(m, r, &bt) != 0)
            goto out;
        for (uint32_t i = 0; i < bt.n_ev; i++) {
            const mprof_event *ev = &bt.ev[i];
            if (ev->type == MPROF_EV_SYS_SAMPLE && ev->ts_ns >= t0 && ev->ts_ns <= t1) {
                if (n_vs >= MAX_SAMPLES) {
                    samples_left_out++;
                    continue;
                }
                if (mprof_array_reserve((void **)&vs, &cap_vs, n_vs + 1, sizeof *vs) != 0)
                    goto out;
                vs[n_vs++] = (vsample){ev->ts_ns, ev->u[0], (uint32_t)ev->u[1]};
            } else if (ev->type == MPROF_EV_DEF_MODULE) {
                if (!sym && !(sym = mprof_symbolizer_new()))
                    goto out;
                mprof_symbolizer_add_event(sym, ev);
            }
        }
    }
    if (more < 0)
        goto out;
    mprof__sys_finish(m, r);
    uint32_t nt = mprof__sys_tid_count(m), nc = mprof__sys_cpu_count(m);
    if (!mprof_reader_info(r, "system.context_switches") && !nt && !nc && !n_vs) {
        rc = 0; /* a capture without system tracing: no object */
        goto out;
    }
    fprintf(out, ",\"system\":{\"context_switches\":%s,\"cpu_usage\":%s,\"sampling\":%s,\"hz\":%u,"
                 "\"why_not\":",
            st.context_switches ? "true" : "false", st.cpu_usage ? "true" : "false",
            st.sampling ? "true" : "false", st.sample_hz);
    if (st.why_not)
        jstr(out, st.why_not);
    else
        fputs("null", out);
    fputs(",\"threads\":[", out);
    for (uint32_t i = 0; i < nt; i++) {
        uint64_t tid;
        int64_t s, e;
        uint32_t n_off;
        mprof__sys_tid_info(m, i, &tid, &s, &e, &n_off);
        fprintf(out, "%s{\"tid\":%" PRIu64 ",\"start\":%" PRId64 ",\"end\":%" PRId64 ",\"off\":[",
                i ? "," : "", tid, s, e);
        /* [start, duration, reason] per interval overlapping the range, start delta-encoded. */
        int64_t prev = 0;
        int first = 1;
        for (uint32_t k = 0; k < n_off; k++) {
            int64_t a, b;
            int why;
            if (!off_in_range(m, i, k, t0, t1, &a, &b, &why))
                continue;
            fprintf(out, "%s%" PRId64 ",%" PRId64 ",%d", first ? "" : ",", a - prev, b - a, why);
            prev = a;
            first = 0;
        }
        fputc(']', out);
        if (mprof__sys_has_wakes(m)) {
            /* who woke each interval of "off": an index into "wakers", -1 when unknown */
            fputs(",\"wk\":[", out);
            first = 1;
            for (uint32_t k = 0; k < n_off; k++) {
                int64_t a, b;
                int why;
                if (!off_in_range(m, i, k, t0, t1, &a, &b, &why))
                    continue;
                uint32_t w = mprof__sys_tid_waker(m, i, k);
                fprintf(out, "%s%ld", first ? "" : ",", w == UINT32_MAX ? -1L : (long)w);
                first = 0;
            }
            fputc(']', out);
        }
        fputc('}', out);
    }
    if (mprof__sys_has_wakes(m)) {
        static const char *const ctx_names[] = {"task", "hardirq", "softirq", "nmi"};
        fputs("],\"wakers\":[", out);
        for (uint32_t w = 0; w < mprof__sys_waker_count(m); w++) {
            uint64_t tid, pid;
            int ctx;
            const char *comm;
            mprof__sys_waker_info(m, w, &tid, &pid, &ctx, &comm);
            fprintf(out, "%s{\"tid\":%" PRIu64 ",\"pid\":%" PRIu64 ",\"context\":\"%s\",\"name\":",
                    w ? "," : "", tid, pid, ctx_names[ctx & 3]);
            if (comm)
                jstr(out, comm);
            else
                fputs("null", out);
            fputc('}', out);
        }
    }
    fputs("],\"cpu\":{\"ts\":[", out);
    int64_t prev = 0;
    int first = 1;
    for (uint32_t i = 0; i < nc; i++) {
        int64_t ts;
        double o, sf;
        if (!cpu_in_range(m, i, t0, t1, &ts, &o, &sf))
            continue;
        fprintf(out, "%s%" PRId64, first ? "" : ",", ts - prev);
        prev = ts;
        first = 0;
    }
    fputs("],\"other\":[", out);
    for (int pass = 0; pass < 2; pass++) {
        first = 1;
        for (uint32_t i = 0; i < nc; i++) {
            int64_t ts;
            double o, sf;
            if (!cpu_in_range(m, i, t0, t1, &ts, &o, &sf))
                continue;
            if (!first)
                fputc(',', out);
            jnum(out, 100 * (pass ? sf : o));
            first = 0;
        }
        fputs(pass ? "]}" : "],\"self\":[", out);
    }
    /* Samples: outermost frame first, as the flame graph builds its tree. */
    fputs(",\"samples\":{\"ts\":[", out);
    prev = 0;
    for (uint32_t i = 0; i < n_vs; i++) {
        fprintf(out, "%s%" PRId64, i ? "," : "", vs[i].ts - prev);
        prev = vs[i].ts;
    }
    fputs("],\"tid\":[", out);
    for (uint32_t i = 0; i < n_vs; i++)
        fprintf(out, "%s%" PRIu64, i ? "," : "", vs[i].tid);
    fputs("],\"stack\":[", out);
    for (uint32_t i = 0; i < n_vs; i++) {
        uint32_t depth = 0;
        const uint64_t *fr = mprof_reader_callstack(r, vs[i].stack, &depth);
        fputs(i ? ",[" : "[", out);
        for (uint32_t d = depth; fr && d-- > 0;) {
            char buf[128];
            uint32_t id =
                mprof_strtab_id(&nm, mprof_symbolizer_frame_name(sym, fr[d], buf, sizeof buf));
            if (id == UINT32_MAX)
                goto out;
            fprintf(out, "%s%" PRIu32, d + 1 == depth ? "" : ",", id);
        }
        fputc(']', out);
    }
    fprintf(out, "],\"left_out\":%" PRIu64 "},\"functions\":[", samples_left_out);
    for (uint32_t i = 0; i < nm.n; i++) {
        if (i)
            fputc(',', out);
        jstr(out, nm.s[i]);
    }
    fputs("]}", out);
    rc = ferror(out) ? -1 : 0;
out:
    mprof_strtab_free(&nm);
    free(vs);
    mprof_symbolizer_free(sym);
    mprof__sys_free(m);
    mprof_reader_close(r);
    return rc;
}

int mprof__document_system_json(const char *path, FILE *out, int64_t t0, int64_t t1)
{
    /* Built aside, so that a failure half-way leaves the document without the object rather
     * than with half of it. */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return -1;
    int rc = write_json(path, mem, t0, t1);
    if (fclose(mem) != 0)
        rc = -1;
    if (rc == 0 && len && fwrite(text, 1, len, out) != len)
        rc = -1;
    free(text);
    return rc;
}
