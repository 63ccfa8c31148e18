/*
 * fiber_sched.h - a small cooperative fiber scheduler on ucontext, for the souls' behaviours.
 *
 * A fiber is a function with its own stack that runs until it yields. The scheduler runs on
 * one thread (the caller of fsched_tick): each tick it resumes every fiber in creation order,
 * round-robin, until every fiber has called fiber_park() ("done for this tick"). Fibers never
 * migrate between threads. Switching in and out is reported with MPROF_FIBER_ENTER/LEAVE, so
 * each fiber gets its own track in the timeline; a zone must end before its fiber yields.
 */
#ifndef ENGINE_FIBER_SCHED_H
#define ENGINE_FIBER_SCHED_H

#include <stddef.h>
#include <stdint.h>

typedef void (*fiber_fn)(void *arg);

/* Prepares room for max_fibers fibers with stack_bytes stacks each. Returns 0 or -1. */
int fsched_init(uint32_t max_fibers, size_t stack_bytes);
/* Frees every fiber; they must all be parked (fsched_tick returned). */
void fsched_shutdown(void);
/* Creates a fiber; name must be a literal (it names the fiber's track). Returns 0 or -1. The
 * function runs forever: it loops, doing one tick's work and then calling fiber_park(). */
int fiber_create(const char *name, fiber_fn fn, void *arg);
/* From inside a fiber: lets the others run, then continues in this tick. */
void fiber_yield(void);
/* From inside a fiber: done for this tick; returns at the start of the next tick. */
void fiber_park(void);
/* Runs all fibers until each has parked once. Returns the number of switches made. */
uint32_t fsched_tick(void);

#endif
