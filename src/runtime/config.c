/*
 * config.c - the effective configuration: the caller's mprof_config, then the environment's
 * overrides, then a default for every field left zero.
 *
 * The environment wins over the program so that an operator can redirect or tune a capture
 * without rebuilding (docs list every variable). A value that is not a number in range is named
 * in one warning and ignored, never half-applied. The result is one struct that the other
 * modules read; only mprof__config_apply writes it, at startup.
 */
#include "config.h"
#include "buffers.h"
#include "env_number.h"
#include "platform/platform.h"
#include "timer.h"

#include <stdlib.h>
#include <string.h>

mprof_config mprof__config;

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int env_flag(const char *name, int dflt)
{
    const char *v = env(name);
    if (!v)
        return dflt;
    return !(strcmp(v, "0") == 0 || strcmp(v, "false") == 0 || strcmp(v, "off") == 0 ||
             strcmp(v, "no") == 0);
}

/* The one parser of numeric environment variables: 1 with *out set when name holds a number
 * from lo to hi (an integer when integer is set); 0 when it is unset; -1, after one warning
 * naming the variable, the value and the range, when it holds anything else (the setting then
 * keeps its configured or default value). */
static int env_number(const char *name, double lo, double hi, int integer, double *out)
{
    const char *v = env(name);
    if (!v)
        return 0;
    if (mprof__parse_number(v, lo, hi, integer, out) != 0) {
        mprof__log("%s='%s' is not %s from %g to %g; ignored", name, v,
                   integer ? "a whole number" : "a number", lo, hi);
        return -1;
    }
    return 1;
}

void mprof__config_apply(const mprof_config *in)
{
    mprof_config c = in ? *in : (mprof_config){0};
    const char *v;
    if ((v = env("MPROF_CAPTURE")))
        c.capture_path = v;
    double d;
    if (env_number("MPROF_MEMORY_MIB", 1, 1 << 20, 1, &d) > 0)
        c.memory_limit_bytes = (size_t)d << 20;
    if (env_number("MPROF_ZSTD_LEVEL", 1, 19, 1, &d) > 0)
        c.compression_level = (int)d;
    if ((v = env("MPROF_TIMER")) && strcmp(v, "clock") == 0)
        c.invariant_check = MPROF__FORCE_OS_CLOCK;
    if (env("MPROF_NO_INVARIANT_CHECK") && env_flag("MPROF_NO_INVARIANT_CHECK", 0))
        c.invariant_check = MPROF_TOGGLE_OFF;
    if ((v = env("MPROF_LISTEN")))
        c.listen = env_flag("MPROF_LISTEN", 1) ? MPROF_TOGGLE_ON : MPROF_TOGGLE_OFF;
    if ((v = env("MPROF_ADDRESS")))
        c.listen_address = v;
    if (env_number("MPROF_PORT", 1, 65535, 1, &d) > 0)
        c.listen_port = (uint16_t)d;
    if (env_number("MPROF_HISTORY_SECONDS", 0, 86400, 0, &d) > 0)
        c.history_seconds = d;
    if ((v = env("MPROF_VERBOSE")))
        c.verbose = env_flag("MPROF_VERBOSE", 0) ? MPROF_TOGGLE_ON : MPROF_TOGGLE_OFF;

    if (!c.memory_limit_bytes)
        c.memory_limit_bytes = (size_t)256 << 20;
    if (c.memory_limit_bytes < 2 * MPROF__BLOCK_BYTES)
        c.memory_limit_bytes = 2 * MPROF__BLOCK_BYTES;
    if (c.compression_level <= 0)
        c.compression_level = 1;
    if (c.compression_level > 19)
        c.compression_level = 19;
    if (!c.flush_interval_ms)
        c.flush_interval_ms = 2;
    if (!c.chunk_bytes)
        c.chunk_bytes = 1u << 20;
    if (c.chunk_bytes < 4096)
        c.chunk_bytes = 4096;
    if (c.chunk_bytes > MPROF_FMT_MAX_CHUNK_BYTES / 2)
        c.chunk_bytes = MPROF_FMT_MAX_CHUNK_BYTES / 2;
    if (!c.app_name)
        c.app_name = mprof__program_name();
    if (!c.listen_address)
        c.listen_address = "127.0.0.1";
    if (!c.listen_port)
        c.listen_port = 8086;
    if (c.history_seconds == 0)
        c.history_seconds = 5;
    mprof__config = c;
}
