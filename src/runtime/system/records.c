/*
 * records.c - the SYS_* records of system tracing.
 *
 * Records are built in one buffer (raw form, format.h's event table) and handed to the
 * collector after each poll through the buffers' process queue, as process-context records:
 * the system thread is not an instrumented thread, so captures have no extra thread, name or
 * exit because of it. The counts END reports are kept here, beside the records they count.
 */
#include "system/records.h"
#include "buffers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

mprof__sys_counts mprof__sys_count;

static mprof_buf out;        /* raw records waiting to be handed over */
static uint64_t out_records; /* how many */

void mprof__sys_records_reset(void)
{
    mprof__sys_counts *c = &mprof__sys_count;
    c->n_switches = c->n_samples = c->n_lost_records = c->n_threads = c->n_untracked = 0;
    c->n_dropped = 0;
    out.len = 0;
    out_records = 0;
}

void mprof__sys_records_free(void)
{
    mprof_buf_free(&out);
}

void mprof__sys_dropped(uint64_t n)
{
    mprof__sys_count.n_dropped += n;
}

/* Records are built in out (raw form) and handed to the collector after each poll as
 * process-context records: the system thread is not an instrumented thread, so captures have no
 * extra thread, name or exit because of it. */
static unsigned char *reserve(size_t n)
{
    if (mprof_buf_reserve(&out, n) != 0) {
        mprof__sys_count.n_dropped++;
        return NULL;
    }
    return out.data + out.len;
}

/* reserve() for a record of tag at ticks: the pointer after its tag and timestamp, or NULL. */
static unsigned char *begin(int tag, size_t n, uint64_t ticks)
{
    unsigned char *p = reserve(n);
    if (!p)
        return NULL;
    p[0] = (unsigned char)tag;
    return mprof__w_u64(p + 1, ticks);
}

static void commit(unsigned char *end)
{
    out.len = (size_t)(end - out.data);
    out_records++;
}

void mprof__sys_hand_over(void)
{
    if (!out.len)
        return;
    if (mprof__process_records(out.data, out.len, out_records) != 0)
        mprof__sys_count.n_dropped += out_records;
    out.len = 0;
    out_records = 0;
}

void mprof__sys_untraced(uint64_t tid, const char *what, int err)
{
    mprof__sys_count.n_untracked++;
    snprintf(mprof__sys_count.untracked_why, sizeof mprof__sys_count.untracked_why,
             "thread %" PRIu64 ": %s: %s", tid, what, strerror(err));
}

void mprof__sys_rec_cpu(uint64_t ticks, double other, double self)
{
    unsigned char *p = begin(MPROF_EV_SYS_CPU, 25, ticks);
    if (!p)
        return;
    p = mprof__w_f64(p, other);
    commit(mprof__w_f64(p, self));
}

void mprof__sys_rec_cpu_core(uint64_t ticks, uint32_t cpu, double other, double self)
{
    unsigned char *p = begin(MPROF_EV_SYS_CPU_CORE, 1 + 8 + 4 + 16, ticks);
    if (!p)
        return;
    p = mprof__w_u32(p, cpu);
    p = mprof__w_f64(p, other);
    commit(mprof__w_f64(p, self));
}

void mprof__sys_rec_thread(uint64_t ticks, uint64_t tid, int what, int state)
{
    unsigned char *p = begin(MPROF_EV_SYS_THREAD, 19, ticks);
    if (!p)
        return;
    p = mprof__w_u64(p, tid);
    p = mprof__w_u8(p, (uint8_t)what);
    commit(mprof__w_u8(p, (uint8_t)state));
}

void mprof__sys_rec_switch(uint64_t ticks, uint64_t tid, int dir, int reason, uint32_t cpu)
{
    unsigned char *p = begin(MPROF_EV_SYS_SWITCH, 23, ticks);
    if (!p)
        return;
    p = mprof__w_u64(p, tid);
    p = mprof__w_u8(p, (uint8_t)dir);
    p = mprof__w_u8(p, (uint8_t)reason);
    commit(mprof__w_u32(p, cpu));
    mprof__sys_count.n_switches++;
}

void mprof__sys_rec_lost(uint64_t ticks, uint64_t tid, uint64_t n)
{
    unsigned char *p = begin(MPROF_EV_SYS_LOST, 25, ticks);
    if (!p)
        return;
    p = mprof__w_u64(p, tid);
    commit(mprof__w_u64(p, n));
    mprof__sys_count.n_lost_records += n;
}

void mprof__sys_rec_sample(uint64_t ticks, uint64_t tid, const uint64_t *ips, unsigned n)
{
    if (n > MPROF_FMT_MAX_CALLSTACK)
        n = MPROF_FMT_MAX_CALLSTACK;
    unsigned char *p = begin(MPROF_EV_SYS_SAMPLE, 18 + 8u * n, ticks);
    if (!p)
        return;
    p = mprof__w_u64(p, tid);
    p = mprof__w_u8(p, (uint8_t)n);
    for (unsigned i = 0; i < n; i++)
        p = mprof__w_u64(p, ips[i]);
    commit(p);
    mprof__sys_count.n_samples++;
}

void mprof__sys_rec_wake(uint64_t ticks, uint64_t tid, uint64_t waker_tid, uint64_t waker_pid,
                         int ctx, uint32_t cpu)
{
    unsigned char *p = begin(MPROF_EV_SYS_WAKE, 1 + 8 * 4 + 1 + 4, ticks);
    if (!p)
        return;
    p = mprof__w_u64(p, tid);
    p = mprof__w_u64(p, waker_tid);
    p = mprof__w_u64(p, waker_pid);
    p = mprof__w_u8(p, (uint8_t)ctx);
    commit(mprof__w_u32(p, cpu));
}

void mprof__sys_rec_comm(uint64_t ticks, uint64_t tid, uint64_t pid, const char *comm)
{
    size_t n = strnlen(comm, 16);
    unsigned char *p = begin(MPROF_EV_SYS_COMM, 1 + 8 * 3 + 2 + n, ticks);
    if (!p)
        return;
    p = mprof__w_u64(p, tid);
    p = mprof__w_u64(p, pid);
    commit(mprof__w_str(p, comm, n));
}

void mprof__sys_rec_track_start(uint64_t ticks, uint64_t tid, int state)
{
    mprof__sys_count.n_threads++;
    mprof__sys_rec_thread(ticks, tid, MPROF_SYS_TRACK_START, state);
}
