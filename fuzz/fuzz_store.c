/*
 * fuzz_store.c - libFuzzer target over what the run store reads from outside: store URLs, the
 * rows a database hands back (cells as text, checked by the decoders), per-frame arrays as
 * stored, and frame exports given to `mprof store add`. The first byte picks which; the rest is
 * the input. A frame export that parses must survive the trip to a baseline export and back
 * (the store's own output must be readable), or the target aborts.
 *
 * Build: cmake -DMPROF_BUILD_FUZZ=ON -DCMAKE_C_COMPILER=clang; the corpus in fuzz/corpus/store is
 * replayed by ctest (fuzz_store_replay). Rows: cells separated by 0x1f, rows by 0x1e, and a cell
 * holding only 0x1d is SQL NULL.
 */
#include "store/store.h"
#include "store/store_json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Splits text into rows of n_cols cells (short rows padded with NULL). */
static int split_rows(const char *text, size_t len, size_t n_cols, mprof_store_rows *rows)
{
    memset(rows, 0, sizeof *rows);
    rows->n_cols = n_cols;
    size_t n_rows = 1;
    for (size_t i = 0; i < len; i++)
        n_rows += text[i] == 0x1e;
    if (n_rows > 64)
        return -1;
    rows->cells = calloc(n_rows * n_cols, sizeof *rows->cells);
    if (!rows->cells)
        return -1;
    rows->n_rows = n_rows;
    size_t r = 0, c = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != 0x1e && text[i] != 0x1f)
            continue;
        size_t l = i - start;
        if (c < n_cols && !(l == 1 && text[start] == 0x1d)) {
            char *v = malloc(l + 1);
            if (v) {
                memcpy(v, text + start, l);
                v[l] = '\0';
            }
            rows->cells[r * n_cols + c] = v;
        }
        c++;
        if (i < len && text[i] == 0x1e) {
            r++;
            c = 0;
        }
        start = i + 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char *z = malloc(len + 1); /* NUL-terminated copy for the string APIs */
    if (!z)
        return 0;
    memcpy(z, text, len);
    z[len] = '\0';
    char err[2048];
    mprof_store_rows rows;
    switch (data[0] % 5) {
    case 0: {
        mprof_store_url u;
        if (strlen(z) == len && mprof__store_parse_url(z, &u, err, sizeof err) == MPROF_STORE_OK &&
            (strlen(u.display) == 0 || strlen(u.target) == 0))
            abort(); /* an accepted URL names something */
        break;
    }
    case 1:
        if (split_rows(text, len, MPROF_STORE_RUN_COLS, &rows) == 0) {
            for (size_t i = 0; i < rows.n_rows; i++) {
                mprof_store_run run;
                if (mprof__store_decode_run(&rows, i, &run, err, sizeof err) == MPROF_STORE_OK)
                    mprof__store_run_clear(&run);
            }
            mprof__store_rows_clear(&rows);
        }
        break;
    case 2:
        if (split_rows(text, len, MPROF_STORE_REP_COLS, &rows) == 0) {
            for (size_t i = 0; i < rows.n_rows; i++) {
                mprof_frames_run rep;
                if (mprof__store_decode_rep(&rows, i, &rep, err, sizeof err) == MPROF_STORE_OK)
                    mprof__frames_run_clear(&rep);
            }
            mprof__store_rows_clear(&rows);
        }
        break;
    case 3: {
        double *v;
        size_t n;
        if (mprof__store_decode_array(z, SIZE_MAX, &v, &n, err, sizeof err) == MPROF_STORE_OK)
            free(v);
        break;
    }
    default: {
        mprof_store_run run;
        memset(&run, 0, sizeof run);
        if (mprof__store_parse_export(text, len, "fuzz.json", &run, err, sizeof err) ==
                MPROF_STORE_OK &&
            mprof__store_summarise(&run) == 0) {
            char *again = NULL;
            size_t again_len = 0;
            FILE *f = open_memstream(&again, &again_len);
            int wrote = f && mprof__store_write_export(&run, 0, f) == 0;
            if (f && fclose(f) != 0)
                wrote = 0;
            if (!wrote) {
                free(again);
                again = NULL;
            }
            mprof_store_run back;
            if (again && mprof__store_parse_file(again, strlen(again), "again", &back, err,
                                                 sizeof err) != MPROF_STORE_OK)
                abort(); /* the store wrote an export it cannot read */
            if (again)
                mprof__store_run_clear(&back);
            free(again);
        }
        mprof__store_run_clear(&run);
    }
    }
    free(z);
    return 0;
}
