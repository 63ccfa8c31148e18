/*
 * json_out.h - a small streaming JSON writer (commas, nesting and string escaping handled).
 * Writing JSON needs no library; reading it does, and the tools use cJSON for that.
 */
#ifndef MPROF_JSON_OUT_H
#define MPROF_JSON_OUT_H

#include <stdint.h>
#include <stdio.h>

typedef struct mprof_json {
    FILE *out;
    int depth;
    int first[64]; /* per level: nothing written yet */
    int pretty;
} mprof_json;

void mprof_json_init(mprof_json *j, FILE *out, int pretty);
/* key is NULL inside arrays. */
void mprof_json_obj_begin(mprof_json *j, const char *key);
void mprof_json_obj_end(mprof_json *j);
void mprof_json_arr_begin(mprof_json *j, const char *key);
void mprof_json_arr_end(mprof_json *j);
void mprof_json_str(mprof_json *j, const char *key, const char *v);
void mprof_json_strn(mprof_json *j, const char *key, const char *v, size_t n);
void mprof_json_u64(mprof_json *j, const char *key, uint64_t v);
void mprof_json_i64(mprof_json *j, const char *key, int64_t v);
void mprof_json_f64(mprof_json *j, const char *key, double v); /* NaN/inf become null */
/* A number as cJSON prints one, so that reports keep the figures they always had: %.15g, or
 * %.17g where %.15g does not read back as the same double; NaN/inf become null. */
void mprof_json_num(mprof_json *j, const char *key, double v);
void mprof_json_bool(mprof_json *j, const char *key, int v);
void mprof_json_null(mprof_json *j, const char *key);
/* Writes a string with JSON escaping, quotes included. */
void mprof_json_write_string(FILE *out, const char *s, size_t n);
/* The same, safe inside an HTML <script> element: '<', '>' and '&' are escaped too (the static
 * viewer embeds its document in its page). */
void mprof_json_write_script_string(FILE *out, const char *s, size_t n);
/* A number written alone: %.<digits>g, or, with whole_exact, a whole number below 2^53 as the
 * integer it is; NaN and infinities as not_finite ("null", "0"). Every number json_out writes
 * goes through it. */
void mprof_json_write_number(FILE *out, double v, int digits, int whole_exact,
                             const char *not_finite);

#endif
