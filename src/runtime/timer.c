/*
 * timer.c - the profiler clock.
 *
 * Zones are stamped with the CPU's invariant counter (rdtsc on x86-64, cntvct_el0 on arm64):
 * a few nanoseconds per read and no system call. The counter is only usable when it ticks at a
 * constant rate on every core, which x86 advertises with CPUID 0x80000007 EDX bit 8 ("invariant
 * TSC"); arm64's generic timer is architecturally constant-rate. When the check fails we fall back
 * to CLOCK_MONOTONIC with one warning and never abort (MPROF_NO_INVARIANT_CHECK=1 skips the check
 * for virtual machines that hide the bit but do keep the TSC stable).
 *
 * Ticks are converted to nanoseconds by the reader, with the rate measured here against
 * CLOCK_MONOTONIC_RAW and stored in the capture (INFO "ns_per_tick", "tick0").
 */
#include "timer.h"
#include "platform/platform.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int mprof__use_tsc;
mprof__clock_state mprof__clock;

uint64_t mprof__ticks_os(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t raw_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int counter_is_invariant(void)
{
#if defined(__x86_64__)
    uint32_t a, b, c, d;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
    if (a < 0x80000007u)
        return 0;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
    return (d >> 8) & 1;
#elif defined(__aarch64__)
    return 1;
#else
    return 0;
#endif
}

static uint64_t read_counter(void)
{
    /* mprof__ticks() reads the counter only when mprof__use_tsc is set; read it directly here. */
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return mprof__ticks_os();
#endif
}

/* Pairs a counter read with a clock read, keeping the pair with the tightest bracket. */
static void pair(uint64_t *ticks, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t a = raw_ns();
        uint64_t t = read_counter();
        uint64_t b = raw_ns();
        if (b - a < best) {
            best = b - a;
            *ticks = t;
            *ns = a + (b - a) / 2;
        }
    }
}

/*
 * What an empty zone costs on this machine, in ns: the hot path's work for a begin and an end
 * (two clock reads, two raw records) timed over a batch, best of five batches so that an
 * interrupt does not count. Zones whose mean is near this are mostly the profiler's own time
 * (the report flags them). About 0.1 ms at start-up; INFO "zone_cost_ns".
 */
static double zone_cost_ns(void)
{
    enum { BATCH = 1000 };
    static unsigned char scratch[40];
    const void *loc = scratch; /* stands in for the call site's source location */
    double best = 0;
    for (int b = 0; b < 5; b++) {
        uint64_t n0 = raw_ns();
        for (int i = 0; i < BATCH; i++) {
            uint64_t t = mprof__use_tsc ? read_counter() : mprof__ticks_os();
            scratch[0] = 0x10;
            memcpy(scratch + 1, &t, 8);
            memcpy(scratch + 9, &loc, sizeof loc);
            atomic_signal_fence(memory_order_seq_cst); /* keep each record's stores in place */
            t = mprof__use_tsc ? read_counter() : mprof__ticks_os();
            scratch[17] = 0x11;
            memcpy(scratch + 18, &t, 8);
            atomic_signal_fence(memory_order_seq_cst);
        }
        double per = (double)(raw_ns() - n0) / BATCH;
        if (b == 0 || per < best)
            best = per;
    }
    return best;
}

static uint64_t measure_quantum(void);

void mprof__timer_init(mprof_toggle check, bool verbose)
{
#if defined(__x86_64__) || defined(__aarch64__)
    int ok = check == MPROF_TOGGLE_OFF || (check != MPROF__FORCE_OS_CLOCK && counter_is_invariant());
    if (!ok && check != MPROF__FORCE_OS_CLOCK)
        mprof__log("the CPU counter is not invariant; using the OS clock (slower). Set "
                   "MPROF_NO_INVARIANT_CHECK=1 to use the counter anyway.");
#else
    int ok = 0;
#endif
    if (ok) {
        /* 5 ms between two tight pairs bounds the rate error to ~10 ppm. */
        uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
        pair(&t0, &n0);
        struct timespec d = {0, 5 * 1000 * 1000};
        nanosleep(&d, NULL);
        pair(&t1, &n1);
        if (t1 > t0 && n1 > n0) {
            mprof__clock.ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
            mprof__clock.tick0 = t1;
#if defined(__x86_64__)
            mprof__clock.timer_name = "tsc";
#else
            mprof__clock.timer_name = "cntvct";
#endif
            __atomic_store_n(&mprof__use_tsc, 1, __ATOMIC_RELEASE);
            if (verbose)
                mprof__log("timer: %s at %.3f MHz", mprof__clock.timer_name,
                           1e3 / mprof__clock.ns_per_tick);
        } else {
            ok = 0;
        }
    }
    if (!ok) {
        mprof__clock.ns_per_tick = 1.0;
        mprof__clock.tick0 = mprof__ticks_os();
        mprof__clock.timer_name = "clock";
        __atomic_store_n(&mprof__use_tsc, 0, __ATOMIC_RELEASE);
    }
    mprof__clock.mono0_ns = mprof__use_tsc ? raw_ns() : mprof__clock.tick0;
    mprof__clock.real0_ns = mprof__real_ns();
    mprof__clock.zone_cost_ns = zone_cost_ns();
    /* MPROF_TIMER_STEP=n states the step instead (tests use it to force scaled deltas that do
     * not fit, which the collector must then store unscaled). */
    const char *step = getenv("MPROF_TIMER_STEP");
    unsigned long long q = step && *step ? strtoull(step, NULL, 10) : 0;
    mprof__clock.tick_quantum = q >= 1 && q < (1u << 20) ? q : measure_quantum();
    if (verbose && mprof__clock.tick_quantum > 1)
        mprof__log("timer: the counter advances in steps of %llu ticks",
                   (unsigned long long)mprof__clock.tick_quantum);
}

/* The counter's step. Some virtual machines advance the counter in multiples of a fixed step
 * (this project's VM: 21 ticks); the collector then stores timestamp deltas in units of it
 * (TS_SCALE, docs/FORMAT.md), which is exact and smaller. The gcd of a few thousand successive
 * differences; 1 as soon as they share no factor (a real counter gets there in a few reads). */
static uint64_t measure_quantum(void)
{
    uint64_t g = 0, prev = mprof__ticks();
    for (int i = 0; i < 4096 && g != 1; i++) {
        uint64_t t = mprof__ticks(), d = t - prev, a = g;
        prev = t;
        if (!d || d > ((uint64_t)1 << 40))
            continue;
        while (d) {
            uint64_t r = a % d;
            a = d;
            d = r;
        }
        g = a;
    }
    return g && g < ((uint64_t)1 << 20) ? g : 1;
}

uint64_t mprof__ticks_to_ns(uint64_t ticks)
{
    return (uint64_t)((double)(int64_t)(ticks - mprof__clock.tick0) * mprof__clock.ns_per_tick);
}

uint64_t mprof_now_ns(void)
{
    return mprof__ticks_to_ns(mprof__ticks());
}
