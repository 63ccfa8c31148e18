/*
 * fuzz_doctor.c - libFuzzer target for the file readers of `mprof doctor` (src/doctor/): every
 * /proc and /sys file a check reads gets its contents from the input (the input is split at
 * '\x1e' into one part per file, in the order the doctor asks for them, and a file beyond the
 * parts is missing), and perf_event_open answers from the input's first byte. Whatever the
 * kernel writes there, the checks finish, every text is NUL-terminated within its field, and
 * the JSON and text writers run. Seeds in fuzz/corpus/doctor are the files of real machines;
 * replayed by ctest (fuzz_doctor_replay).
 */
#include "doctor/doctor.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *in;
static size_t in_size, at;
static int answer;

static int read_part(const char *path, char *buf, size_t n)
{
    (void)path;
    if (at > in_size)
        return -1;
    const uint8_t *start = in + at, *end = memchr(start, 0x1e, in_size - at);
    size_t len = end ? (size_t)(end - start) : in_size - at;
    at += len + 1;
    if (len > n - 1)
        len = n - 1;
    memcpy(buf, start, len);
    buf[len] = 0;
    return (int)len;
}

static int fake_open(struct perf_event_attr *a, int pid, int cpu)
{
    (void)a;
    (void)pid;
    (void)cpu;
    return answer;
}

static int fake_mmap(int fd, size_t bytes)
{
    (void)fd;
    (void)bytes;
    return answer < 0 ? answer : 0;
}

static void fake_close(int fd)
{
    (void)fd;
}

static int fake_invariant(void)
{
    return answer % 3 - 1;
}

static int fake_huge(void)
{
    return answer % 2;
}

static const char *fake_getenv(const char *name)
{
    (void)name;
    return answer % 5 == 0 ? "0" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    in = data;
    in_size = size;
    at = 0;
    static const int answers[] = {3, -EACCES, -EPERM, -ENOENT, -ENOSYS, -EINVAL, 7, -EBUSY};
    answer = size ? answers[data[0] % 8] : 3;
    mprof_doctor_sys sys;
    mprof_doctor_sys_default(&sys);
    sys.read_file = read_part;
    sys.perf_open = fake_open;
    sys.perf_mmap = fake_mmap;
    sys.close_fd = fake_close;
    sys.counter_invariant = fake_invariant;
    sys.huge_pages_probe = fake_huge;
    sys.getenv = fake_getenv;
    sys.page_bytes = size > 1 && data[1] & 1 ? 65536 : 4096;
    mprof_doctor_check checks[MPROF_DOCTOR_MAX_CHECKS];
    size_t n = mprof_doctor_run(&sys, checks);
    if (n == 0 || n > MPROF_DOCTOR_MAX_CHECKS)
        abort();
    for (size_t i = 0; i < n; i++)
        if (!memchr(checks[i].found, 0, sizeof checks[i].found) ||
            !memchr(checks[i].gives_up, 0, sizeof checks[i].gives_up) ||
            !memchr(checks[i].fix, 0, sizeof checks[i].fix) || !checks[i].found[0])
            abort();
    FILE *out = fopen("/dev/null", "w");
    if (out) {
        mprof_doctor_print_json(out, checks, n);
        mprof_doctor_print_text(out, checks, n);
        fclose(out);
    }
    return 0;
}
