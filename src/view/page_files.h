/*
 * page_files.h - the viewer's page files, compiled into mprof from page/ by the build, so that
 * neither the static page nor the server ever reads a file of the machine at run time.
 *
 * The static page (`mprof view`): page/embed.cmake assembles template.html, style.css and the
 * scripts of js/ into one HTML page and writes it split at its @MPROF_DATA@ marker (view_html.c
 * in the build folder); the document goes between the two halves (document.c).
 *
 * The served page (`mprof view --serve`): page/embed_files.cmake writes every file of page/ as a
 * table (view_files.c in the build folder) that the server answers page requests from.
 */
#ifndef MPROF_VIEW_PAGE_FILES_H
#define MPROF_VIEW_PAGE_FILES_H

#include <stddef.h>

/* The static page before and after its document. */
extern const unsigned char mprof__view_head[], mprof__view_tail[];
extern const size_t mprof__view_head_len, mprof__view_tail_len;

/* A file of the served page by its name under page/ ("serve/index.html", "style.css",
 * "js/util.js", ...); NULL when name is unknown. */
typedef struct mprof_view_file {
    const char *name;
    const unsigned char *data;
    size_t len;
} mprof_view_file;
const mprof_view_file *mprof__view_file(const char *name);

#endif
