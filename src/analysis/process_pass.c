/*
 * process_pass.c - the processes of a capture with several (format 1.5, `mprof merge`, `mprof
 * capture -p A -p B`): each with its pid, name, threads (those with events), how its part ended
 * when it ended early, and its main frames: the unnamed frame marks of the first of its threads
 * that made one, the times between them summarised as the report's frames are (site_stats.h).
 * A capture of one process prints nothing here: its process is the capture's header.
 */
#include "analysis/analysis.h"
#include "analysis/site_stats.h"
#include "util/tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct proc_acc {
    uint32_t main_thread; /* 0 until its first unnamed mark */
    int64_t last_mark;
    double *ms; /* frame times */
    uint64_t n, cap;
    uint32_t threads;
} proc_acc;

typedef struct procs_state {
    proc_acc *p;
    uint32_t n;
    unsigned char *seen; /* threads with events */
    uint32_t n_seen;
    int oom;
} procs_state;

static void *procs_create(mprof_analysis *a)
{
    (void)a;
    return calloc(1, sizeof(procs_state));
}

static void procs_destroy(void *state)
{
    procs_state *s = state;
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n; i++)
        free(s->p[i].ms);
    free(s->p);
    free(s->seen);
    free(s);
}

static void see_thread(procs_state *s, uint32_t t)
{
    if (t >= s->n_seen && mprof_grow_zeroed((void **)&s->seen, &s->n_seen, t, 1, 1u << 20)) {
        s->oom = 1;
        return;
    }
    s->seen[t] = 1;
}

static void mark(procs_state *s, const mprof_reader *r, const mprof_event *ev)
{
    if (ev->type != MPROF_EV_FRAME_MARK || ev->u[0] != 0 || !ev->thread)
        return;
    const mprof_thread_def *t = mprof_reader_thread(r, ev->thread);
    uint32_t pi = t ? t->process : 0;
    if (pi >= s->n && mprof_grow_zeroed((void **)&s->p, &s->n, pi, sizeof *s->p, 1u << 16)) {
        s->oom = 1;
        return;
    }
    proc_acc *p = &s->p[pi];
    if (!p->main_thread) {
        p->main_thread = ev->thread;
        p->last_mark = ev->ts_ns;
        return;
    }
    if (ev->thread != p->main_thread)
        return;
    if (p->n == p->cap) {
        uint64_t nc = p->cap ? 2 * p->cap : 256;
        double *v = realloc(p->ms, nc * sizeof *v);
        if (!v) {
            s->oom = 1;
            return;
        }
        p->ms = v;
        p->cap = nc;
    }
    p->ms[p->n++] = (double)(ev->ts_ns - p->last_mark) / 1e6;
    p->last_mark = ev->ts_ns;
}

static void procs_event(void *state, mprof_analysis *a, const mprof_event *ev)
{
    procs_state *s = state;
    see_thread(s, ev->thread);
    mark(s, mprof_analysis_reader(a), ev);
}

static void procs_batch(void *state, mprof_analysis *a, const mprof_batch *b)
{
    procs_state *s = state;
    /* A capture of one process has nothing for this pass. */
    if (mprof_reader_process_count(mprof_analysis_reader(a)) < 2)
        return;
    for (uint32_t i = 0; i < b->n_run; i++)
        see_thread(s, b->run[i].thread);
    for (uint32_t i = 0; i < b->n_ev; i++)
        mark(s, mprof_analysis_reader(a), &b->ev[i]);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void procs_finish(void *state, mprof_analysis *a)
{
    procs_state *s = state;
    const mprof_reader *r = mprof_analysis_reader(a);
    uint32_t np = mprof_reader_process_count(r);
    if (np && np - 1 >= s->n &&
        mprof_grow_zeroed((void **)&s->p, &s->n, np - 1, sizeof *s->p, 1u << 16)) {
        s->oom = 1;
        return;
    }
    for (uint32_t t = 1; t < s->n_seen; t++) {
        const mprof_thread_def *d = mprof_reader_thread(r, t);
        if (s->seen[t] && d && d->process < s->n)
            s->p[d->process].threads++;
    }
    for (uint32_t i = 0; i < s->n; i++)
        if (s->p[i].n)
            qsort(s->p[i].ms, s->p[i].n, sizeof(double), cmp_double);
}

static void procs_print_text(void *state, mprof_analysis *a, FILE *out, int top_n)
{
    (void)top_n;
    procs_state *s = state;
    const mprof_reader *r = mprof_analysis_reader(a);
    uint32_t np = mprof_reader_process_count(r);
    if (np < 2)
        return;
    char e[256];
    const char *al = mprof_reader_info(r, "merge_alignment");
    fprintf(out, "\nProcesses (%u%s%s)\n", np, al ? ", aligned by " : "",
            al ? tool_text(al, e, sizeof e) : "");
    for (uint32_t i = 0; i < np && i < s->n; i++) {
        const mprof_process_def *d = mprof_reader_process(r, i);
        const proc_acc *p = &s->p[i];
        mprof_frame_summary f = mprof__frame_summary(p->ms, p->n);
        fprintf(out, "  %u. %s (pid %" PRIu64 "), %u threads, %" PRIu64 " frames", i + 1,
                tool_text(d->name, e, sizeof e), d->pid, p->threads, f.count);
        if (f.count)
            fprintf(out, ": mean %.3f ms, p50 %.3f ms, p95 %.3f ms", f.mean, f.p50, f.p95);
        fputc('\n', out);
        if (d->ended_by)
            fprintf(out, "     ended early: %s\n", tool_text(d->ended_by, e, sizeof e));
        /* Its threads, under it. */
        for (uint32_t t = 1; t < s->n_seen; t++) {
            const mprof_thread_def *td = mprof_reader_thread(r, t);
            if (!s->seen[t] || !td || td->process != i)
                continue;
            if (td->name)
                fprintf(out, "     thread %u: %s\n", t, tool_text(td->name, e, sizeof e));
            else
                fprintf(out, "     thread %u\n", t);
        }
    }
    if (s->oom)
        fprintf(out, "  (out of memory: the figures are incomplete)\n");
}

static void procs_print_json(void *state, mprof_analysis *a, mprof_json *j)
{
    procs_state *s = state;
    const mprof_reader *r = mprof_analysis_reader(a);
    uint32_t np = mprof_reader_process_count(r);
    /* Only with several processes: the JSON of a one-process capture stays as it was. */
    if (np < 2)
        return;
    mprof_json_str(j, "merge_alignment", mprof_reader_info(r, "merge_alignment"));
    mprof_json_arr_begin(j, "processes");
    for (uint32_t i = 0; i < np && i < s->n; i++) {
        const mprof_process_def *d = mprof_reader_process(r, i);
        const proc_acc *p = &s->p[i];
        mprof_frame_summary f = mprof__frame_summary(p->ms, p->n);
        mprof_json_obj_begin(j, NULL);
        mprof_json_u64(j, "pid", d->pid);
        mprof_json_str(j, "name", d->name);
        mprof_json_u64(j, "threads", p->threads);
        if (d->ended_by)
            mprof_json_str(j, "ended_by", d->ended_by);
        mprof_json_u64(j, "events", d->events);
        mprof_json_u64(j, "events_lost", d->events_lost);
        mprof_json_u64(j, "main_thread", p->main_thread);
        mprof_json_obj_begin(j, "frames");
        mprof_json_u64(j, "count", f.count);
        mprof_json_f64(j, "mean_ms", f.mean);
        mprof_json_f64(j, "p50_ms", f.p50);
        mprof_json_f64(j, "p95_ms", f.p95);
        mprof_json_f64(j, "max_ms", f.max);
        mprof_json_f64(j, "total_ms", f.total);
        mprof_json_obj_end(j);
        mprof_json_obj_end(j);
    }
    mprof_json_arr_end(j);
    if (s->oom)
        mprof_json_bool(j, "processes_incomplete", 1);
}

static void procs_fields(unsigned char need[MPROF_EV_MAX])
{
    need[MPROF_EV_FRAME_MARK] = 1;
}

const mprof_pass_vtbl mprof__process_pass = {
    .name = "processes",
    .always = true, /* shown whenever a capture has several processes */
    MPROF_PASS_HOOKS(procs),
    .batch = procs_batch,
    .fields = procs_fields,
};
