/*
 * system.h - the operating system's side of a capture, for the tools: when each thread was on
 * and off the CPU (SYS_SWITCH / SYS_THREAD), how busy the other processes kept the machine
 * (SYS_CPU) and the callstack samples (SYS_SAMPLE). docs/SYSTEM.md describes them.
 *
 * Two users: the report's "samples" pass (per-thread, per-zone and per-function figures; always
 * on) and the frame export (per-frame figures for the gate). Both feed every event of a capture
 * to a model, then query it. Switch records come from the library's system thread, so they are
 * not in time order with the zones they explain; the model keeps them per OS thread and only
 * answers after mprof__sys_finish. Memory grows with the number of switches and samples.
 */
#ifndef MPROF_ANALYSIS_SYSTEM_H
#define MPROF_ANALYSIS_SYSTEM_H

#include "analysis/analysis.h"
#include "format/batch.h"
#include "format/format.h"
#include "util/umap.h"

#include <stdint.h>
#include <stdio.h>

/* What the capture says about system tracing (its INFO keys), always filled. */
typedef struct mprof_sys_status {
    int context_switches, cpu_usage, sampling; /* booleans */
    unsigned sample_hz;
    const char *why_not; /* the first reason something is off, NULL when all is on; owned by the
                            reader */
} mprof_sys_status;

void mprof__sys_status(const mprof_reader *r, mprof_sys_status *out);

typedef struct mprof_sysmodel mprof_sysmodel;

/* NULL when out of memory. */
mprof_sysmodel *mprof__sys_new(void);
void mprof__sys_free(mprof_sysmodel *m); /* NULL is a no-op */
/* Feeds one event (any kind; the rest are ignored). Returns 0, or -1 when out of memory (the
 * model then answers with what it kept, and mprof__sys_incomplete says so). */
int mprof__sys_event(mprof_sysmodel *m, const mprof_reader *r, const mprof_event *ev);
/* The tags mprof__sys_event reads, set in want (a read that hands out only these feeds the
 * model with mprof__sys_batch). */
void mprof__sys_want(unsigned char want[MPROF_EV_MAX]);
/* Feeds the events of a batch, and the latest time of those it left out. Returns 0, or -1 as
 * mprof__sys_event. */
int mprof__sys_batch(mprof_sysmodel *m, const mprof_reader *r, const mprof_batch *b);
/* The capture reached time ts (what mprof__sys_event notes of every event; a reader that feeds
 * the model only some events gives it each batch's max_ts_ns). */
void mprof__sys_saw(mprof_sysmodel *m, int64_t ts);
/* After the last event: maps OS thread ids to capture threads and builds the timelines. */
void mprof__sys_finish(mprof_sysmodel *m, const mprof_reader *r);
int mprof__sys_incomplete(const mprof_sysmodel *m);

/* Whether any switch record was seen. */
int mprof__sys_has_switches(const mprof_sysmodel *m);
/* Off-CPU and traced time of capture thread idx within [a, b) (ns since the capture's start).
 * Traced time is the part of [a, b) during which the thread was traced; on-CPU = traced - off.
 * Both 0 for a thread that was never traced. */
void mprof__sys_thread_time(const mprof_sysmodel *m, uint32_t idx, int64_t a, int64_t b,
                            int64_t *out_off, int64_t *out_traced);
/* The same in two steps, for a walk through one thread's times in order: off_at gives the
 * thread's off-CPU time before t (t clamped to its traced range; timeline tx as
 * mprof__sys_thread_tidx gives it), keeping its place in *cursor (0 to start) so that later
 * times cost no search (a time before the last one asked still gets the right answer), and the
 * span [*out_lo, *out_hi] around t in which the answer is the same. The off-CPU time within
 * [a, b) is off_at(b) - off_at(a) when the clamped b is after the clamped a, else 0;
 * mprof__sys_tid_clamp says what the clamped a and b are. */
int64_t mprof__sys_off_at(const mprof_sysmodel *m, uint32_t tx, int64_t t, uint32_t *cursor,
                          int64_t *out_lo, int64_t *out_hi);
void mprof__sys_tid_clamp(const mprof_sysmodel *m, uint32_t tx, int64_t *a, int64_t *b);
/* Switches off the CPU of capture thread idx, and whether it was traced at all. */
uint64_t mprof__sys_thread_switches(const mprof_sysmodel *m, uint32_t idx);
int mprof__sys_thread_traced(const mprof_sysmodel *m, uint32_t idx);
/* On-CPU time of every traced thread of the process within [a, b). */
int64_t mprof__sys_process_cpu(const mprof_sysmodel *m, int64_t a, int64_t b);
/* Mean share (0..1) of the machine's CPUs used by other processes during [a, b); -1 when the
 * capture has no CPU-usage samples there. */
double mprof__sys_machine_busy(const mprof_sysmodel *m, int64_t a, int64_t b);

/* Whether the capture has CPU-usage samples. */
int mprof__sys_has_busy(const mprof_sysmodel *m);
/* CPU-usage samples: how many, the mean and largest share of the machine used by other
 * processes, and the mean share used by this one (0..1). */
void mprof__sys_busy_summary(const mprof_sysmodel *m, uint32_t *out_n, double *out_mean,
                             double *out_max, double *out_self_mean);
/* Per frame [fs[i], fe[i]): on-CPU and off-CPU milliseconds of capture thread idx, CPU
 * milliseconds of the whole process, and the machine's busy share (0 when unknown). Any output
 * may be NULL. */
void mprof__sys_frames(const mprof_sysmodel *m, uint32_t idx, const int64_t *fs,
                       const int64_t *fe, size_t nf, double *out_on_ms, double *out_off_ms,
                       double *out_cpu_ms, double *out_busy);
/* Adds to acc[i] the off-CPU nanoseconds of thread idx during [a, b) within frame i. */
void mprof__sys_spread_off(const mprof_sysmodel *m, uint32_t idx, const int64_t *fs,
                           const int64_t *fe, size_t nf, int64_t a, int64_t b, int64_t *acc);

/* The critical path of a frame (docs/GATE.md, "Decision time"): how much of it was runnable but
 * not running. The model says how the waits are followed: not at all when the switches carry no
 * reasons (a kernel before 4.17 without the sched tracepoints marks every switch-out blocked, so
 * preemption cannot be told from waiting), by the wakers the sched tracepoints recorded, or by
 * wakers inferred from which program thread ran last before a wait ended. */
enum {
    MPROF_SYS_PATH_NONE = 0,
    MPROF_SYS_PATH_INFERRED = 1,
    MPROF_SYS_PATH_WAKERS = 2
};
int mprof__sys_path_model(const mprof_sysmodel *m);
/* Per frame [fs[i], fe[i]) of capture thread idx: the milliseconds it was preempted, and the
 * milliseconds inside its waits (blocked intervals) that the critical path was runnable but not
 * running: the wake-up latency, and the waker's preempted time and its own waits' share,
 * followed back. Both 0 with MPROF_SYS_PATH_NONE. Returns the frames whose walk stopped at its
 * budget of visits (their wait figures are then lower bounds); *out_unrecorded gets the waits
 * followed whose wake-up the tracepoints did not record (their waker was inferred). Any output
 * may be NULL. */
size_t mprof__sys_frames_path(const mprof_sysmodel *m, uint32_t idx, const int64_t *fs,
                              const int64_t *fe, size_t nf, double *out_preempted_ms,
                              double *out_wait_ms, size_t *out_unrecorded);

/* Raw timelines, for the viewer: traced OS threads (index i < count) with their traced range and
 * off-CPU intervals (sorted, with reasons), and the CPU-usage samples. */
uint32_t mprof__sys_tid_count(const mprof_sysmodel *m);
void mprof__sys_tid_info(const mprof_sysmodel *m, uint32_t i, uint64_t *out_tid,
                         int64_t *out_start, int64_t *out_end, uint32_t *out_n_off);
void mprof__sys_tid_off(const mprof_sysmodel *m, uint32_t i, uint32_t k, int64_t *out_s,
                        int64_t *out_e, int *out_reason);
/* The sched tracepoints' extras (docs/SYSTEM.md): whether any SYS_WAKE was seen; off-CPU ns
 * of capture thread idx by reason (out[MPROF_SYS_REASON_MAX + 1]); the model's index of capture
 * thread idx for the _tid_ calls (-1 when untraced); who woke off-CPU interval k of traced
 * thread i (UINT32_MAX: unknown); and the wakers: an OS thread (tid, pid, its name from SYS_COMM
 * or NULL) or, with ctx != MPROF_SYS_WAKE_TASK, an interrupt (tid = pid = 0). */
int mprof__sys_has_wakes(const mprof_sysmodel *m);
void mprof__sys_thread_reasons(const mprof_sysmodel *m, uint32_t idx, int64_t *out);
int64_t mprof__sys_thread_tidx(const mprof_sysmodel *m, uint32_t idx);
uint32_t mprof__sys_tid_waker(const mprof_sysmodel *m, uint32_t i, uint32_t k);
uint32_t mprof__sys_waker_count(const mprof_sysmodel *m);
void mprof__sys_waker_info(const mprof_sysmodel *m, uint32_t w, uint64_t *out_tid,
                           uint64_t *out_pid, int *out_ctx, const char **out_comm);
/* Per-CPU usage (SYS_CPU_CORE, from the tracepoints): CPUs, and each one's samples and means. */
uint32_t mprof__sys_core_count(const mprof_sysmodel *m);
void mprof__sys_core(const mprof_sysmodel *m, uint32_t i, uint32_t *out_cpu, uint32_t *out_n,
                     double *out_other_mean, double *out_self_mean);
uint32_t mprof__sys_cpu_count(const mprof_sysmodel *m);
void mprof__sys_cpu_sample(const mprof_sysmodel *m, uint32_t i, int64_t *out_ts,
                           double *out_other, double *out_self);
/* The names of OS threads from SYS_COMM records, by thread id (the last name of a thread
 * wins). Zero-initialised is empty. */
typedef struct mprof_sys_comm {
    uint64_t tid, pid;
    char name[17];
} mprof_sys_comm;
typedef struct mprof_sys_comms {
    mprof_sys_comm *v;
    uint32_t n, cap;
    mprof_umap by_tid; /* tid + 1 -> index into v */
} mprof_sys_comms;
/* Records the name of a SYS_COMM event; printable replaces every byte a terminal or JSON would
 * need escaped with '?'. 0, or -1 for a bad thread id, past 2^20 threads, or out of memory. */
int mprof__sys_comms_note(mprof_sys_comms *c, const mprof_event *ev, int printable);
/* The name of thread tid of process pid, or NULL when no SYS_COMM named it. */
const char *mprof__sys_comms_name(const mprof_sys_comms *c, uint64_t tid, uint64_t pid);
void mprof__sys_comms_free(mprof_sys_comms *c);

/* The report pass ("samples", always on; --samples adds the hot-function tables to the text).
 * Hooks for the core pass's tables: the zone's off-CPU time (-1 when the capture has no
 * switches), and the extra keys of a zones[] / threads[] JSON object. */
extern const mprof_pass_vtbl mprof__system_pass;
int64_t mprof__system_zone_off_ns(const mprof_analysis *a, uint32_t loc);
void mprof__system_zone_json(const mprof_analysis *a, mprof_json *j, uint32_t loc);
void mprof__system_thread_json(const mprof_analysis *a, mprof_json *j, uint32_t idx);

#endif
