/*
 * fiber_sched.c - ucontext fibers, round-robin (see fiber_sched.h).
 *
 * makecontext() passes only int arguments, so the entry trampoline finds its fiber through
 * the scheduler's "current" field instead of a pointer argument.
 *
 * Under ThreadSanitizer every switch is announced with its fiber API, which keeps its view of
 * the stacks right (the engine's TSan runs check the job system around the fibers).
 */
#include "fiber_sched.h"

#include "mprof/mprof.h"

#include <stdlib.h>
#include <ucontext.h>

#if defined(__SANITIZE_THREAD__)
#define FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FIBER_TSAN 1
#endif
#endif
#ifdef FIBER_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#define TSAN_ONLY(x) x
#else
#define TSAN_ONLY(x)
#endif

typedef struct fiber {
    ucontext_t ctx;
    const char *name;
    fiber_fn fn;
    void *arg;
    void *stack;
    int parked;
    void *tsan_fiber;
} fiber;

static struct {
    ucontext_t sched_ctx;
    fiber *fibers;
    uint32_t n, max;
    size_t stack_bytes;
    fiber *current;
    void *tsan_sched; /* the scheduler thread's own TSan fiber */
} fs;

int fsched_init(uint32_t max_fibers, size_t stack_bytes)
{
    fs.fibers = calloc(max_fibers ? max_fibers : 1, sizeof *fs.fibers);
    if (!fs.fibers)
        return -1;
    fs.n = 0;
    fs.max = max_fibers;
    fs.stack_bytes = stack_bytes;
    fs.current = NULL;
    return 0;
}

void fsched_shutdown(void)
{
    for (uint32_t i = 0; i < fs.n; i++) {
        TSAN_ONLY(__tsan_destroy_fiber(fs.fibers[i].tsan_fiber));
        free(fs.fibers[i].stack);
    }
    free(fs.fibers);
    fs.fibers = NULL;
    fs.n = 0;
}

static void trampoline(void)
{
    fiber *f = fs.current;
    f->fn(f->arg); /* fibers loop forever; returning would end the context */
    for (;;)
        fiber_park();
}

int fiber_create(const char *name, fiber_fn fn, void *arg)
{
    if (fs.n >= fs.max)
        return -1;
    fiber *f = &fs.fibers[fs.n];
    f->stack = malloc(fs.stack_bytes);
    if (!f->stack || getcontext(&f->ctx) != 0) {
        free(f->stack);
        return -1;
    }
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = fs.stack_bytes;
    f->ctx.uc_link = &fs.sched_ctx;
    f->name = name;
    f->fn = fn;
    f->arg = arg;
    f->parked = 0;
    makecontext(&f->ctx, trampoline, 0);
    f->tsan_fiber = NULL;
    TSAN_ONLY(f->tsan_fiber = __tsan_create_fiber(0));
    fs.n++;
    return 0;
}

static void switch_out(void)
{
    fiber *f = fs.current;
    TSAN_ONLY(__tsan_switch_to_fiber(fs.tsan_sched, 0));
    swapcontext(&f->ctx, &fs.sched_ctx);
}

void fiber_yield(void)
{
    switch_out();
}

void fiber_park(void)
{
    fs.current->parked = 1;
    switch_out();
}

uint32_t fsched_tick(void)
{
    uint32_t switches = 0;
    for (uint32_t i = 0; i < fs.n; i++)
        fs.fibers[i].parked = 0;
    for (;;) {
        uint32_t running = 0;
        for (uint32_t i = 0; i < fs.n; i++) {
            fiber *f = &fs.fibers[i];
            if (f->parked)
                continue;
            running++;
            fs.current = f;
            MPROF_FIBER_ENTER(f->name);
            TSAN_ONLY(fs.tsan_sched = __tsan_get_current_fiber());
            TSAN_ONLY(__tsan_switch_to_fiber(f->tsan_fiber, 0));
            swapcontext(&fs.sched_ctx, &f->ctx);
            MPROF_FIBER_LEAVE();
            fs.current = NULL;
            switches++;
        }
        if (running == 0)
            return switches;
    }
}
