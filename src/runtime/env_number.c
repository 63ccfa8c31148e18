/*
 * env_number.c - the parser of numeric environment variables.
 *
 * strtod alone accepts too much for a setting an operator types ("inf", "nan", "0x10", "1e3"
 * for a port), so a value is taken only when strtod consumed all of it (but blanks), it lies in
 * range, it is whole where a whole number is meant, and every character is one a plain decimal
 * number is written with.
 */
#include "env_number.h"

#include <errno.h>
#include <stdlib.h>

int mprof__parse_number(const char *v, double lo, double hi, int integer, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    while (*end == ' ' || *end == '\t')
        end++;
    int ok = end != v && !*end && errno == 0 && d >= lo && d <= hi &&
             (!integer || d == (double)(long long)d);
    for (const char *q = v; ok && *q; q++)
        if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == '-' || *q == '+' || *q == ' ' ||
              *q == '\t' || (!integer && (*q == 'e' || *q == 'E'))))
            ok = 0;
    if (!ok)
        return -1;
    *out = d;
    return 0;
}
