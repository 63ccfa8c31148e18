/*
 * gpu_capture.h - test helper: reads a capture and joins its GPU records into zones, on its own
 * (independently of src/analysis/gpu.c), so the GPU tests check the capture itself.
 */
#ifndef MPROF_TESTS_GPU_CAPTURE_H
#define MPROF_TESTS_GPU_CAPTURE_H

#include "format/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GC_MAX_CTX 8

typedef struct gc_zone {
    uint32_t ctx, query, thread;
    char name[64];
    int64_t cpu_begin_ns, cpu_end_ns; /* -1 until seen */
    int64_t gpu_begin, gpu_end;       /* ticks */
    int got_begin, got_end;           /* GPU_TIME seen */
    int depth;                        /* nesting depth at submission on its thread (0 = top) */
    int parent;                       /* index of the enclosing zone, -1 for none */
} gc_zone;

typedef struct gc_ctx {
    int seen;
    char name[64];
    int api;
    double period_ns;
    int n_calibrations;
    int64_t cal_gpu;   /* latest */
    int64_t cal_cpu_ns;
    uint32_t queries_max; /* largest query id seen + 1 */
} gc_ctx;

typedef struct gc_capture {
    gc_ctx ctx[GC_MAX_CTX + 1];
    gc_zone *zones;
    int n_zones, cap;
    int64_t last_ts_ns;
    uint64_t n_gpu_time;
    uint64_t stray_times; /* GPU_TIME with no matching zone */
    char end_gpu_lost[32];
} gc_capture;

/* CPU nanoseconds of GPU ticks v under ctx's latest calibration. */
static inline double gc_gpu_to_cpu_ns(const gc_capture *c, uint32_t ctx, int64_t v)
{
    const gc_ctx *x = &c->ctx[ctx];
    return (double)x->cal_cpu_ns + (double)(v - x->cal_gpu) * x->period_ns;
}

static inline int gc_find(gc_capture *c, uint32_t ctx, uint32_t begin_query)
{
    /* Latest zone with this begin id (ids are reused after they return). */
    for (int i = c->n_zones - 1; i >= 0; i--)
        if (c->zones[i].ctx == ctx && c->zones[i].query == begin_query)
            return i;
    return -1;
}

/* Reads path. Returns 0, or -1 with a message on stderr. */
static inline int gc_read(const char *path, gc_capture *c)
{
    memset(c, 0, sizeof *c);
    char err[256];
    mprof_reader *r = mprof_reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    /* Open zone stack per thread (for nesting), small fixed bound is enough for tests. */
    int stack[64][32];
    int depth[64];
    memset(depth, 0, sizeof depth);
    mprof_event ev;
    int rc;
    while ((rc = mprof_reader_next(r, &ev)) == 1) {
        if (ev.ts_ns > c->last_ts_ns)
            c->last_ts_ns = ev.ts_ns;
        uint32_t t = ev.thread < 64 ? ev.thread : 63;
        switch (ev.type) {
        case MPROF_EV_GPU_CONTEXT: {
            uint32_t id = (uint32_t)ev.u[0];
            if (id > GC_MAX_CTX)
                break;
            gc_ctx *x = &c->ctx[id];
            x->seen = 1;
            const char *s = mprof_reader_string(r, (uint32_t)ev.u[1]);
            snprintf(x->name, sizeof x->name, "%s", s ? s : "");
            x->api = (int)ev.u[2];
            x->period_ns = mprof_event_f64(&ev, 3);
            break;
        }
        case MPROF_EV_GPU_CALIBRATE: {
            uint32_t id = (uint32_t)ev.u[0];
            if (id > GC_MAX_CTX)
                break;
            c->ctx[id].n_calibrations++;
            c->ctx[id].cal_gpu = (int64_t)ev.u[1];
            c->ctx[id].cal_cpu_ns = ev.ts_ns;
            break;
        }
        case MPROF_EV_GPU_ZONE_BEGIN: {
            if (c->n_zones == c->cap) {
                c->cap = c->cap ? c->cap * 2 : 256;
                c->zones = (gc_zone *)realloc(c->zones, (size_t)c->cap * sizeof *c->zones);
            }
            gc_zone *z = &c->zones[c->n_zones];
            memset(z, 0, sizeof *z);
            z->ctx = (uint32_t)ev.u[0];
            z->query = (uint32_t)ev.u[1];
            z->thread = ev.thread;
            const mprof_srcloc_def *loc = mprof_reader_srcloc(r, (uint32_t)ev.u[2]);
            snprintf(z->name, sizeof z->name, "%s", loc && loc->name ? loc->name : "?");
            z->cpu_begin_ns = ev.ts_ns;
            z->cpu_end_ns = -1;
            z->depth = depth[t];
            z->parent = depth[t] > 0 ? stack[t][depth[t] - 1] : -1;
            if (depth[t] < 32)
                stack[t][depth[t]++] = c->n_zones;
            if (z->ctx <= GC_MAX_CTX && z->query + 2 > c->ctx[z->ctx].queries_max)
                c->ctx[z->ctx].queries_max = z->query + 2;
            c->n_zones++;
            break;
        }
        case MPROF_EV_GPU_ZONE_END: {
            int i = gc_find(c, (uint32_t)ev.u[0], (uint32_t)ev.u[1] - 1);
            if (i >= 0)
                c->zones[i].cpu_end_ns = ev.ts_ns;
            if (depth[t] > 0)
                depth[t]--;
            break;
        }
        case MPROF_EV_GPU_TIME: {
            c->n_gpu_time++;
            uint32_t q = (uint32_t)ev.u[1];
            int i = gc_find(c, (uint32_t)ev.u[0], q & ~1u);
            if (i < 0) {
                c->stray_times++;
                break;
            }
            if (q & 1u) {
                c->zones[i].gpu_end = (int64_t)ev.u[2];
                c->zones[i].got_end = 1;
            } else {
                c->zones[i].gpu_begin = (int64_t)ev.u[2];
                c->zones[i].got_begin = 1;
            }
            break;
        }
        default:
            break;
        }
    }
    const char *lost = mprof_reader_end_info(r, "gpu_queries_lost");
    snprintf(c->end_gpu_lost, sizeof c->end_gpu_lost, "%s", lost ? lost : "");
    if (rc < 0)
        fprintf(stderr, "reader: %s\n", mprof_reader_error(r));
    mprof_reader_close(r);
    return rc < 0 ? -1 : 0;
}

static inline void gc_free(gc_capture *c)
{
    free(c->zones);
    c->zones = NULL;
}

/* A capture path under the build's temporary directory, unique per test program. */
static inline void gc_temp_path(char *out, size_t n, const char *stem)
{
    const char *dir = getenv("TMPDIR");
    snprintf(out, n, "%s/%s-%ld.mprof", dir && *dir ? dir : "/tmp", stem, (long)getpid());
}

#endif
