/*
 * internal.h - what the files of the gate share and nothing else uses: the noise model's
 * decision frame times, the attribution step, and the result's warnings and wording.
 */
#ifndef MPROF_GATE_INTERNAL_H
#define MPROF_GATE_INTERNAL_H

#include "gate/gate.h"

/* Adds a warning (a note that does not change the verdict); dropped when out of memory. */
void mprof__gate_warn(mprof_gate_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "= 0.034" or "< 1e-16" (a normal tail below double precision prints as 0 otherwise). */
const char *mprof__gate_pstr(double p, char *buf, size_t n);
/* 100 * (cur / base - 1), 0 when base is not positive. */
double mprof__gate_pct_change(double cur, double base);
/* True when the significance tests were made (a verdict on enough frames), so that the writers
 * show them. */
int mprof__gate_tested(const mprof_gate_result *r);
/* What the writers say of the noise model: its note, or that there is none. */
const char *mprof__gate_noise_text(const mprof_gate_result *r);

/* noise.c */
/* Pooled frame times of a side with run boundaries (run_start has n_runs + 1 entries): the
 * decision frame times under model (MPROF_GATE_NOISE_NONE: the raw ones). Runs without frames
 * are left out.
 * Returns 0, or -1 out of memory. */
int mprof__gate_pool(const mprof_frames_runs *s, int model, double **out_v, size_t **out_starts,
                     size_t *out_runs);
/* "none", "off-cpu", ..., "critical-path": the JSON name of a MPROF_GATE_NOISE_* model. */
const char *mprof__gate_noise_model_name(int model);
/* Sets r->noise_model, r->noise_note, the sides' noise figures and the p95 off-CPU shares (r->base
 * and r->cur must hold the raw figures); warns when a run holds the model back. */
void mprof__gate_noise(const mprof_frames_runs *base, const mprof_frames_runs *cur,
                       mprof_gate_result *r);

/* shift.c. The pooled decision frame times of both sides with their run boundaries (bs, cs:
 * bruns + 1 and cruns + 1 entries), as decide.c holds them. */
typedef struct mprof_gate_sides {
    const double *bv, *cv;
    const size_t *bs, *cs;
    size_t bruns, cruns;
} mprof_gate_sides;
/* Whether every frame got slower by more than the threshold (r->shift and its figures; needs
 * r->opts). Returns 0, or -1 out of memory. */
int mprof__gate_shift(const mprof_gate_sides *s, mprof_gate_result *r);
/* The --runs that would settle an inconclusive verdict (r->recommended_runs, r->run_p95_sd),
 * from the run-to-run spread and the tests' figures in r. Returns 0, or -1 out of memory. */
int mprof__gate_advise(const mprof_gate_sides *s, mprof_gate_result *r);

/* attribution.c: r->zones, r->n_zones from every zone of both sides (r->opts filled in).
 * Returns 0, or -1 out of memory. */
int mprof__gate_attribute(const mprof_frames_runs *b, const mprof_frames_runs *c,
                          mprof_gate_result *r);

/* view_link.c: the command that serves the two sides' captures in the viewer's comparison
 * (their first runs) into cmd, and the page address of the zone that grew most into addr
 * ("#compare&zone=NAME"). Returns 0, or -1 when the exports do not name their captures. */
int mprof__gate_view_link(const mprof_gate_result *r, char *cmd, size_t cn, char *addr, size_t an);

#endif
