/*
 * fuzz_env_number.c - libFuzzer target for the parser of numeric environment variables
 * (mprof__parse_number, src/env_number.c). The first byte picks one of the ranges the library
 * uses; the rest, up to a NUL, is the value. A value it takes must be in range, whole where a
 * whole number is meant, written only with the characters of a plain decimal number, and equal
 * to what strtod reads from it; a refusal leaves the output alone. Seeds in
 * fuzz/corpus/env_number; replayed by ctest (fuzz_env_number_replay).
 */
#include "env_number.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
    double lo, hi;
    int integer;
} ranges[] = {
    {1, 1 << 20, 1}, /* MPROF_MEMORY_MIB */
    {1, 19, 1},      /* MPROF_ZSTD_LEVEL */
    {1, 65535, 1},   /* MPROF_PORT */
    {0, 86400, 0},   /* MPROF_HISTORY_SECONDS */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    int k = data[0] % (int)(sizeof ranges / sizeof ranges[0]);
    char *v = malloc(size);
    if (!v)
        abort();
    memcpy(v, data + 1, size - 1);
    v[size - 1] = 0;
    double d = -12345.0;
    int rc = mprof__parse_number(v, ranges[k].lo, ranges[k].hi, ranges[k].integer, &d);
    if (rc != 0 && rc != -1)
        abort();
    if (rc == -1 && d != -12345.0)
        abort(); /* a refusal changed the output */
    if (rc == 0) {
        if (!(d >= ranges[k].lo && d <= ranges[k].hi))
            abort();
        if (ranges[k].integer && d != (double)(long long)d)
            abort();
        for (const char *q = v; *q; q++)
            if (!strchr("0123456789.+- \t", *q) && !(!ranges[k].integer && (*q == 'e' || *q == 'E')))
                abort();
        if (strtod(v, NULL) != d)
            abort();
    }
    free(v);
    return 0;
}
