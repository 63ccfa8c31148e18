/*
 * json_out.c - streaming JSON writer.
 */
#include "util/json_out.h"

#include "util/utf8.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

void mprof_json_init(mprof_json *j, FILE *out, int pretty)
{
    memset(j, 0, sizeof *j);
    j->out = out;
    j->pretty = pretty;
    j->first[0] = 1;
}

/* script: '<', '>' and '&' as \u00XX too. A name from a capture may hold any bytes: the result
 * is always JSON (valid UTF-8), and safe on a terminal. */
static void write_string(FILE *out, const char *s, size_t n, int script)
{
    fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        /* The short escapes JSON has, \u00XX for other controls and DEL, the byte itself else. */
        const char *e = c == '"'    ? "\\\""
                        : c == '\\' ? "\\\\"
                        : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r"
                        : c == '\t' ? "\\t"
                                    : NULL;
        if (e) {
            fputs(e, out);
        } else if (c < 0x20 || c == 0x7f || (script && (c == '<' || c == '>' || c == '&'))) {
            fprintf(out, "\\u%04x", c);
        } else if (c >= 0x80) {
            /* A whole UTF-8 character as it is, but as \uXXXX the C1 controls (which some
             * terminals obey), the bidirectional overrides and isolates and the line and
             * paragraph separators; a byte that is not UTF-8 as U+FFFD, the replacement
             * character. */
            uint32_t cp;
            size_t len = mprof_utf8_char((const unsigned char *)s + i, n - i, &cp);
            if (!len)
                fputs("\\ufffd", out);
            else if (mprof_utf8_hidden(cp))
                fprintf(out, "\\u%04x", (unsigned)cp);
            else
                fwrite(s + i, 1, len, out);
            if (len)
                i += len - 1;
        } else {
            fputc(c, out);
        }
    }
    fputc('"', out);
}

void mprof_json_write_string(FILE *out, const char *s, size_t n)
{
    write_string(out, s, n, 0);
}

void mprof_json_write_script_string(FILE *out, const char *s, size_t n)
{
    write_string(out, s, n, 1);
}

void mprof_json_write_number(FILE *out, double v, int digits, int whole_exact,
                             const char *not_finite)
{
    if (!isfinite(v))
        fputs(not_finite, out);
    else if (whole_exact && v == floor(v) && fabs(v) < 9e15)
        fprintf(out, "%.0f", v);
    else
        fprintf(out, "%.*g", digits, v);
}

static void prefix(mprof_json *j, const char *key)
{
    if (!j->first[j->depth])
        fputc(',', j->out);
    j->first[j->depth] = 0;
    if (j->pretty && j->depth > 0) {
        fputc('\n', j->out);
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->out);
    }
    if (key) {
        mprof_json_write_string(j->out, key, strlen(key));
        fputs(j->pretty ? ": " : ":", j->out);
    }
}

static void open_(mprof_json *j, const char *key, char c)
{
    prefix(j, key);
    fputc(c, j->out);
    if (j->depth < 63)
        j->depth++;
    j->first[j->depth] = 1;
}

static void close_(mprof_json *j, char c)
{
    int empty = j->first[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (j->pretty && !empty) {
        fputc('\n', j->out);
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->out);
    }
    fputc(c, j->out);
    if (j->depth == 0)
        fputc('\n', j->out);
}

void mprof_json_obj_begin(mprof_json *j, const char *key) { open_(j, key, '{'); }
void mprof_json_obj_end(mprof_json *j) { close_(j, '}'); }
void mprof_json_arr_begin(mprof_json *j, const char *key) { open_(j, key, '['); }
void mprof_json_arr_end(mprof_json *j) { close_(j, ']'); }

void mprof_json_str(mprof_json *j, const char *key, const char *v)
{
    if (!v) {
        mprof_json_null(j, key);
        return;
    }
    mprof_json_strn(j, key, v, strlen(v));
}

void mprof_json_strn(mprof_json *j, const char *key, const char *v, size_t n)
{
    prefix(j, key);
    mprof_json_write_string(j->out, v, n);
}

void mprof_json_u64(mprof_json *j, const char *key, uint64_t v)
{
    prefix(j, key);
    fprintf(j->out, "%" PRIu64, v);
}

void mprof_json_i64(mprof_json *j, const char *key, int64_t v)
{
    prefix(j, key);
    fprintf(j->out, "%" PRId64, v);
}

void mprof_json_f64(mprof_json *j, const char *key, double v)
{
    prefix(j, key);
    mprof_json_write_number(j->out, v, 6, 0, "null");
}

void mprof_json_num(mprof_json *j, const char *key, double v)
{
    prefix(j, key);
    if (!isfinite(v)) {
        fputs("null", j->out);
        return;
    }
    char buf[32];
    double back = 0;
    snprintf(buf, sizeof buf, "%1.15g", v);
    if (sscanf(buf, "%lg", &back) != 1 ||
        !(fabs(back - v) <= fmax(fabs(back), fabs(v)) * DBL_EPSILON))
        snprintf(buf, sizeof buf, "%1.17g", v);
    fputs(buf, j->out);
}

void mprof_json_bool(mprof_json *j, const char *key, int v)
{
    prefix(j, key);
    fputs(v ? "true" : "false", j->out);
}

void mprof_json_null(mprof_json *j, const char *key)
{
    prefix(j, key);
    fputs("null", j->out);
}
