/*
 * noise.c - what the gate decides on when the machine is noisy. A frame is the code's time plus
 * whatever kept its critical path from running: the main thread preempted, and, while it waited
 * for a thread of the program, that thread preempted. The frame export carries both per frame
 * (framePreemptedMs, frameWaitRunnableMs: analysis/system.h walks the critical path), so the
 * gate's decision frame time is the frame less them, exactly as far as the capture can tell.
 *
 * Captures that cannot tell so much get the best model they allow, the same for every run of
 * both sides (a model that removes more on one side than the other would fake a change):
 *   critical-path            reasons and the wakers the sched tracepoints recorded;
 *   critical-path-inferred   reasons, and wakers inferred from who ran last before a wait ended;
 *   preempted                reasons on every run but the two kinds of wakers mixed: the main
 *                            thread's own preemption only;
 *   off-cpu-machine-busy     no reasons (a kernel before 4.17): off-CPU time weighted by the
 *                            machine's busy share;
 *   off-cpu                  no reasons and no CPU usage: all off-CPU time;
 *   none                     no context switches on some run: raw frame times.
 * The report says which model decided, and how much of each side's time it removed next to
 * how much the capture knows was runnable but not running.
 */
#include "gate/internal.h"

#include <stdlib.h>

/* What the model removes from frame i of run (ms), before the clamps. */
static double removed_ms(const mprof_frames_run *run, size_t i, int model)
{
    switch (model) {
    case MPROF_GATE_NOISE_CRITICAL:
    case MPROF_GATE_NOISE_CRITICAL_INFERRED:
        return run->preempted_ms[i] + run->wait_runnable_ms[i];
    case MPROF_GATE_NOISE_PREEMPTED:
        return run->preempted_ms[i];
    case MPROF_GATE_NOISE_OFF_CPU_BUSY:
        return run->machine_busy ? run->off_cpu_ms[i] * run->machine_busy[i] : run->off_cpu_ms[i];
    case MPROF_GATE_NOISE_OFF_CPU:
        return run->off_cpu_ms[i];
    default:
        return 0.0;
    }
}

/* Whether the main thread's context switches cover frame i of run. A frame's on- and off-CPU
 * times add up to the part of it the system trace covers, so a frame whose two add up to less
 * than half of it lies (mostly) outside the trace: the thread's switches were not recorded for
 * it (tracing began late or ended early). Nothing can be removed from it, and deciding on its
 * raw time beside the other frames' decision times would mix two measures. */
static int frame_untraced(const mprof_frames_run *run, size_t i, int model)
{
    if (model == MPROF_GATE_NOISE_NONE || !run->on_cpu_ms || !run->off_cpu_ms)
        return 0;
    double t = run->frames_ms[i];
    return t > 0.0 && run->on_cpu_ms[i] + run->off_cpu_ms[i] < 0.5 * t;
}

/* The frames of run outside the trace (frame_untraced), and whether the run is left with none
 * inside it: then its frames are all kept, undecided, rather than leaving the run out. */
static size_t run_untraced(const mprof_frames_run *run, int model, int *out_all)
{
    size_t n = 0;
    for (size_t f = 0; f < run->n_frames; f++)
        n += (size_t)frame_untraced(run, f, model);
    *out_all = run->n_frames > 0 && n == run->n_frames;
    return n;
}

/* Whether frame f of run enters the decision: every frame but those outside the trace of a run
 * that has frames inside it. */
static int frame_decided(const mprof_frames_run *run, size_t f, int model, int all_untraced)
{
    return all_untraced || !frame_untraced(run, f, model);
}

double mprof__gate_decision_ms(const mprof_frames_run *run, size_t i, int model)
{
    double t = run->frames_ms[i];
    if (model == MPROF_GATE_NOISE_NONE || !run->off_cpu_ms)
        return t;
    if (model >= MPROF_GATE_NOISE_PREEMPTED && !run->preempted_ms)
        return t;
    double d = t - removed_ms(run, i, model);
    /* The frame cannot have taken less than the time its main thread ran. */
    if (run->on_cpu_ms && d < run->on_cpu_ms[i])
        d = run->on_cpu_ms[i] < t ? run->on_cpu_ms[i] : t;
    return d > 0.0 ? d : 0.0;
}

int mprof__gate_pool(const mprof_frames_runs *s, int model, double **out_v, size_t **out_starts,
                     size_t *out_runs)
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
        int all;
        run_untraced(&s->runs[i], model, &all);
        for (size_t f = 0; f < s->runs[i].n_frames; f++)
            if (frame_decided(&s->runs[i], f, model, all))
                v[k++] = mprof__gate_decision_ms(&s->runs[i], f, model);
        st[++nr] = k;
    }
    *out_v = v;
    *out_starts = st;
    *out_runs = nr;
    return 0;
}

/* The best model every run of the side allows, and the first run that holds it back (*out_why:
 * what that run lacks) when it is not the best there is. */
static int side_model(const mprof_frames_runs *s, const mprof_frames_run **out_run,
                      const char **out_why)
{
    int model = MPROF_GATE_NOISE_CRITICAL;
    int any_wakers = 0, any_inferred = 0;
    *out_run = NULL;
    *out_why = NULL;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_frames_run *run = &s->runs[i];
        int m;
        const char *why;
        if (!run->context_switches) {
            m = MPROF_GATE_NOISE_NONE;
            why = "no system tracing";
        } else if (!run->preempted_ms) {
            m = run->cpu_usage ? MPROF_GATE_NOISE_OFF_CPU_BUSY : MPROF_GATE_NOISE_OFF_CPU;
            why = "context switches without reasons (a kernel before 4.17 without the sched "
                  "tracepoints, or an older mprof)";
        } else {
            m = run->critical_path == 2 ? MPROF_GATE_NOISE_CRITICAL
                                        : MPROF_GATE_NOISE_CRITICAL_INFERRED;
            why = "no wakers recorded (the sched tracepoints were not used)";
            any_wakers |= run->critical_path == 2;
            any_inferred |= run->critical_path != 2;
        }
        if (m < model) {
            model = m;
            *out_run = run;
            *out_why = why;
        }
    }
    if (!s->n_runs)
        return MPROF_GATE_NOISE_NONE;
    if (model >= MPROF_GATE_NOISE_CRITICAL_INFERRED && any_wakers && any_inferred) {
        model = MPROF_GATE_NOISE_PREEMPTED;
        *out_why = "inferred wakers while other runs recorded theirs";
    }
    return model;
}

/* The figures of a side's frames: the off-CPU share, the share that the capture knows its
 * critical path spent runnable (main thread preempted + its waits' runnable part), and the
 * share the model removed, over all its frames and over the frames at or above its raw p95;
 * and what the off-CPU x busy model would have removed of those. */
static void side_figures(const mprof_frames_runs *s, int model, double p95,
                         mprof_gate_noise_side *out)
{
    double tot = 0, run_ms = 0, rem = 0, ptot = 0, poff = 0, prun = 0, prem = 0, pbusy = 0;
    int off = 1, reasons = 1, busy = 1;
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_frames_run *run = &s->runs[i];
        off &= run->off_cpu_ms != NULL;
        reasons &= run->preempted_ms != NULL;
        busy &= run->machine_busy != NULL && run->off_cpu_ms != NULL;
    }
    for (size_t i = 0; i < s->n_runs; i++) {
        const mprof_frames_run *run = &s->runs[i];
        int all;
        run_untraced(run, model, &all);
        for (size_t f = 0; f < run->n_frames; f++) {
            if (!frame_decided(run, f, model, all))
                continue;
            double t = run->frames_ms[f];
            double r = t - mprof__gate_decision_ms(run, f, model);
            double k = reasons ? run->preempted_ms[f] + run->wait_runnable_ms[f] : 0.0;
            tot += t;
            rem += r;
            run_ms += k < t ? k : t;
            if (t < p95)
                continue;
            ptot += t;
            prem += r;
            prun += k < t ? k : t;
            if (off)
                poff += run->off_cpu_ms[f] < t ? run->off_cpu_ms[f] : t;
            if (busy)
                pbusy += t - mprof__gate_decision_ms(run, f, MPROF_GATE_NOISE_OFF_CPU_BUSY);
        }
    }
    out->p95_off_share = off && s->n_runs ? (ptot > 0 ? poff / ptot : 0.0) : -1.0;
    out->runnable_share = reasons && s->n_runs ? (tot > 0 ? run_ms / tot : 0.0) : -1.0;
    out->p95_runnable_share = reasons && s->n_runs ? (ptot > 0 ? prun / ptot : 0.0) : -1.0;
    out->removed_share = tot > 0 ? rem / tot : 0.0;
    out->p95_removed_share = ptot > 0 ? prem / ptot : 0.0;
    out->p95_busy_removed_share = busy && s->n_runs ? (ptot > 0 ? pbusy / ptot : 0.0) : -1.0;
    out->truncated_frames = 0;
    for (size_t i = 0; i < s->n_runs; i++)
        out->truncated_frames += s->runs[i].path_truncated;
}

static const char *const model_notes[] = {
    [MPROF_GATE_NOISE_OFF_CPU] =
        "frame times less their off-CPU time (context switches without reasons and no CPU "
        "usage, so every off-CPU interval counts as the machine's)",
    [MPROF_GATE_NOISE_OFF_CPU_BUSY] =
        "frame times less the machine's share of their off-CPU time (context switches without "
        "reasons, so preemption is estimated from the machine's busy share)",
    [MPROF_GATE_NOISE_PREEMPTED] =
        "frame times less the time the main thread was preempted (the runs differ in how their "
        "waits' wakers are known, so waits are not followed)",
    [MPROF_GATE_NOISE_CRITICAL_INFERRED] =
        "frame times less the time their critical path was runnable but not running: the main "
        "thread preempted, and inside its waits the wake-up latency and the waker's preemption "
        "(wakers inferred: the program thread that ran last before each wait ended)",
    [MPROF_GATE_NOISE_CRITICAL] =
        "frame times less the time their critical path was runnable but not running: the main "
        "thread preempted, and inside its waits the wake-up latency and the waker's preemption "
        "(wakers recorded by the sched tracepoints)",
};

const char *mprof__gate_noise_model_name(int model)
{
    static const char *const names[] = {"none", "off-cpu", "off-cpu-machine-busy", "preempted",
                                        "critical-path-inferred", "critical-path"};
    return model >= 0 && model <= MPROF_GATE_NOISE_CRITICAL ? names[model] : "none";
}

/* Says which runs have frames outside their trace, and what the gate did with them. */
static void untraced_warnings(const mprof_frames_runs *base, const mprof_frames_runs *cur,
                              mprof_gate_result *r)
{
    const mprof_frames_runs *sides[2] = {base, cur};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->n_runs; i++) {
            const mprof_frames_run *run = &sides[s]->runs[i];
            int all;
            size_t n = run_untraced(run, r->noise_model, &all);
            if (!n)
                continue;
            if (all)
                mprof__gate_warn(r, "%s: none of its %zu frames lies inside its context-switch "
                                 "trace (the main thread's switches were not recorded): decided "
                                 "on their raw times; record it again",
                                 run->path ? run->path : "a run", run->n_frames);
            else
                mprof__gate_warn(r, "%s: %zu of its %zu frames lie outside its context-switch "
                                 "trace (the main thread's switches were not recorded for them): "
                                 "left out of the decision",
                                 run->path ? run->path : "a run", n, run->n_frames);
        }
}

void mprof__gate_noise(const mprof_frames_runs *base, const mprof_frames_runs *cur,
                       mprof_gate_result *r)
{
    const mprof_frames_run *rb, *rc;
    const char *wb, *wc;
    int lb = side_model(base, &rb, &wb), lc = side_model(cur, &rc, &wc);
    r->noise_model = lb < lc ? lb : lc;
    if (r->noise_model >= MPROF_GATE_NOISE_CRITICAL_INFERRED && lb != lc) {
        r->noise_model = MPROF_GATE_NOISE_PREEMPTED; /* one side recorded wakers, one inferred */
        const char *mixed = "inferred wakers while the other side's runs recorded theirs";
        if (lb < lc)
            wb = mixed;
        else
            wc = mixed;
    }
    side_figures(base, r->noise_model, r->base.p95_ms, &r->base_noise);
    side_figures(cur, r->noise_model, r->cur.p95_ms, &r->cur_noise);
    r->base_p95_off_share = r->base_noise.p95_off_share;
    r->cur_p95_off_share = r->cur_noise.p95_off_share;
    if (r->noise_model != MPROF_GATE_NOISE_NONE) {
        snprintf(r->noise_note, sizeof r->noise_note, "%s", model_notes[r->noise_model]);
        /* Which run held the model back, so that the user knows what to change. */
        const mprof_frames_run *held = lb <= lc ? rb : rc;
        const char *why = lb <= lc ? wb : wc;
        if (held && r->noise_model < MPROF_GATE_NOISE_CRITICAL_INFERRED)
            mprof__gate_warn(r, "noise model %s: %s has %s; the critical path needs switch "
                             "reasons on every run of both sides (docs/GATE.md, DECISION TIME)",
                             mprof__gate_noise_model_name(r->noise_model), held->path, why);
        untraced_warnings(base, cur, r);
        size_t trunc = r->base_noise.truncated_frames + r->cur_noise.truncated_frames;
        if (trunc && r->noise_model >= MPROF_GATE_NOISE_CRITICAL_INFERRED)
            mprof__gate_warn(r, "the critical path of %zu frames was followed only part of the "
                             "way (too many waits): less was removed from them than the capture "
                             "could tell", trunc);
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
