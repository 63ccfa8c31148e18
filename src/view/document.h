/*
 * document.h - the document that `mprof view` embeds in its self-contained HTML page (schema in
 * docs/VIEW.md), and the page itself (document.c; its "system" object: document_system.c). The
 * walker (analysis/timeline.h) runs twice over the capture: once to learn the frames and where
 * zones fall, once to keep the zones of the chosen range.
 */
#ifndef MPROF_VIEW_DOCUMENT_H
#define MPROF_VIEW_DOCUMENT_H

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

#endif
