/*
 * config.h - the effective configuration (config.c): defaults and environment applied.
 */
#ifndef MPROF_CONFIG_H
#define MPROF_CONFIG_H

#include "mprof/mprof.h"
#include "visibility.h"

/* Written by mprof__config_apply at startup, under the lifecycle lock and before any other
 * thread of the profiler starts; read-only while a session runs. */
extern MPROF__HIDDEN mprof_config mprof__config;

/* Makes in (NULL: all defaults) the effective configuration: environment overrides first, then
 * a default for every field still zero, then clamping to what the runtime supports. */
void mprof__config_apply(const mprof_config *in);

#endif
