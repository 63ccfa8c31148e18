/*
 * noise.c - what the gate decides on when the machine is noisy. A frame that a busy neighbour
 * preempted is slow, yet its code is not; with system tracing on every run of both sides, the
 * part of each frame that the machine took from the main thread (its off-CPU time, weighted by
 * the machine's busy share when the export has it) is left out of the frame times the gate
 * decides on, and the report says how much of each side's p95 was off the CPU. Without system
 * tracing on both sides the gate decides on raw frame times and says so.
 */
#include "gate/internal.h"

#include <stdlib.h>

double mprof__gate_decision_ms(const mprof_frames_run *run, size_t i, int use_system)
{
    double t = run->frames_ms[i];
    if (!use_system || !run->off_cpu_ms)
        return t;
    double off = run->off_cpu_ms[i];
    if (run->machine_busy)
        off *= run->machine_busy[i];
    double d = t - off;
    /* The frame cannot have taken less than the time its main thread ran. */
    if (run->on_cpu_ms && d < run->on_cpu_ms[i])
        d = run->on_cpu_ms[i] < t ? run->on_cpu_ms[i] : t;
    return d > 0.0 ? d : 0.0;
}

int mprof__gate_pool(const mprof_frames_runs *s, int use_system, double **out_v,
                     size_t **out_starts, size_t *out_runs)
{
    size_t total = 0;
    for (size_t i = 0; i < s->n_runs; i++)
        total += s->runs[i].n_frames;
    double *v = malloc((total ? total : 1) * sizeof *v);
    size_t *st = malloc((s->n_runs + 1) * sizeof *st);
    if (!v || !st) {
        free(v);
        free(st);
        return -1;
    }
    size_t k = 0, nr = 0;
    st[0] = 0;
    for (size_t i = 0; i < s->n_runs; i++) {
        if (s->runs[i].n_frames == 0)
            continue;
        for (size_t f = 0; f < s->runs[i].n_frames; f++)
            v[k++] = mprof__gate_decision_ms(&s->runs[i], f, use_system);
        st[++nr] = k;
    }
    *out_v = v;
    *out_starts = st;
    *out_runs = nr;
    return 0;
}

/* 1 when every run of the side has system tracing of context switches (level 1), and the
 * machine's busy share too (level 2); 0 otherwise. */
static int system_level(const mprof_frames_runs *s)
{
    int level = 2;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_frames_run *run = &s->runs[i];
        if (!run->context_switches)
            return 0;
        if (!run->cpu_usage)
            level = 1;
    }
    return s->n_runs ? level : 0;
}

/* The share of off-CPU time in the frames at or above the side's raw p95 (the frames the p95
 * is made of): sum(off) / sum(t) over them. -1 without system tracing. */
static double p95_off_share(const mprof_frames_runs *s, double p95)
{
    double off = 0, tot = 0;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_frames_run *run = &s->runs[i];
        if (!run->off_cpu_ms)
            return -1.0;
        for (size_t f = 0; f < run->n_frames; f++)
            if (run->frames_ms[f] >= p95) {
                tot += run->frames_ms[f];
                off += run->off_cpu_ms[f] < run->frames_ms[f] ? run->off_cpu_ms[f]
                                                              : run->frames_ms[f];
            }
    }
    return tot > 0 ? off / tot : 0.0;
}

void mprof__gate_noise(const mprof_frames_runs *base, const mprof_frames_runs *cur,
                       mprof_gate_result *r)
{
    int lb = system_level(base), lc = system_level(cur);
    r->noise_model = lb && lc ? (lb < lc ? lb : lc) : 0;
    r->base_p95_off_share = p95_off_share(base, r->base.p95_ms);
    r->cur_p95_off_share = p95_off_share(cur, r->cur.p95_ms);
    if (r->noise_model == 2) {
        snprintf(r->noise_note, sizeof r->noise_note,
                 "frame times less the machine's share of their off-CPU time (system tracing: "
                 "context switches and CPU usage)");
        return;
    }
    if (r->noise_model == 1) {
        snprintf(r->noise_note, sizeof r->noise_note,
                 "frame times less their off-CPU time (system tracing: context switches; no CPU "
                 "usage, so every off-CPU interval counts as the machine's)");
        return;
    }
    const mprof_frames_runs *without = lb ? cur : base;
    const char *why = NULL, *path = NULL;
    for (size_t i = 0; i < without->n_runs && !path; i++)
        if (!without->runs[i].context_switches) {
            path = without->runs[i].path;
            why = without->runs[i].system_why_not;
        }
    snprintf(r->noise_note, sizeof r->noise_note,
             "no system tracing in %s%s%s%s: decided on raw frame times, so machine noise "
             "(preemption, other processes) is not separated from the code", path ? path : "?",
             why ? " (" : "", why ? why : "", why ? ")" : "");
}
