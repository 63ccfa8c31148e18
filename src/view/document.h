/*
 * document.h - the document that `mprof view` embeds in its self-contained HTML page (schema in
 * docs/VIEW.md), and the page itself (document.c; its "system" object: document_system.c). The
 * walker (analysis/timeline.h) runs twice over the capture: once to learn the frames and where
 * zones fall, once to keep the zones of the chosen range. Its "async" object is
 * document_async.c's.
 */
#ifndef MPROF_VIEW_DOCUMENT_H
#define MPROF_VIEW_DOCUMENT_H

#include "analysis/timeline.h"

#include <stdint.h>
#include <stdio.h>

typedef struct mprof_view_opts {
    uint64_t max_zones;     /* zones to embed at most; 0 = 1,000,000 */
    int64_t first_frame;    /* --frames A:B (B exclusive); first_frame < 0 = not given */
    int64_t last_frame;
    double budget_ms;       /* frame budget line; 0 = 16.7 */
    const char *diff_json;  /* a comparison document to embed as "diff" (mprof view A B), or NULL */
    const char *display_name; /* capture name shown; NULL = path */
} mprof_view_opts;

/* Writes the view document (JSON) for the capture at path to out. Returns 0, or -1 with a
 * message in err (I/O, format, out of memory, or --frames outside the capture). */
int mprof__view_write(const char *path, const mprof_view_opts *opts, FILE *out, char *err,
                      size_t errlen);

/* Writes the whole HTML report: the embedded viewer around the document. */
int mprof__view_write_html(const char *path, const mprof_view_opts *opts, FILE *out, char *err,
                           size_t errlen);

/* The "system" object of the viewer's data document (docs/VIEW.md) for [t0, t1], written as
 * ",\"system\":{...}" (nothing when the capture has no system records). Reads the capture at
 * path once more. Returns 0, or -1 when it cannot be read or memory runs out. */
int mprof__document_system_json(const char *path, FILE *out, int64_t t0, int64_t t1);

/* The "async" object (document_async.c): async spans kept from the walker's async_span hook
 * during the second pass. Spans that overlap [t0, t1] (any when keep_all) are kept, at most
 * max_keep; every completed span counts in its track's figures. NULL when out of memory. */
typedef struct mprof_vasync mprof_vasync;
mprof_vasync *mprof__vasync_new(int64_t t0, int64_t t1, int keep_all, uint64_t max_keep);
void mprof__vasync_free(mprof_vasync *a); /* NULL is a no-op */
/* The walker's async_span hook (user: the mprof_vasync). */
void mprof__vasync_span(mprof_vasync *a, const mprof_async_span *s);
/* Non-zero when memory ran out while spans were kept. */
int mprof__vasync_oom(const mprof_vasync *a);
/* After the walker finished: writes ",\"async\":{...}" (docs/VIEW.md), nothing when the capture has
 * no async span. Returns 0, or -1 when out of memory. */
int mprof__vasync_write(mprof_vasync *a, const mprof_walker *w, const mprof_reader *r, FILE *out);

#endif
