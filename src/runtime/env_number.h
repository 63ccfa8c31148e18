/*
 * env_number.h - the parser of numeric environment variables (MPROF_PORT, MPROF_MEMORY_MIB...).
 *
 * Kept apart from config.c so that its fuzz target (fuzz/fuzz_env_number.c) links it alone.
 */
#ifndef MPROF_ENV_NUMBER_H
#define MPROF_ENV_NUMBER_H

/* 0 with *out set when v is a plain decimal number from lo to hi (a whole number when integer
 * is set; surrounding blanks allowed; no "inf", "nan", hex or trailing text), -1 otherwise
 * (*out unchanged). Touches only its arguments: any thread may call it. */
int mprof__parse_number(const char *v, double lo, double hi, int integer, double *out);

#endif
