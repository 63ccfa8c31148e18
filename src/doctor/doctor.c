/*
 * doctor.c - runs the checks of `mprof doctor` and writes what they found, as text or JSON.
 *
 * The facts several checks need (perf_event_paranoid, the capabilities, the CPUs) are read once
 * here; each check then fills one mprof_doctor_check: its status, what it found, what a capture
 * gives up without it and the command that enables it.
 */
#include "doctor/internal.h"
#include "util/json_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int doctor_read(const mprof_doctor_sys *sys, const char *path, char *buf, size_t n)
{
    if (sys->read_file)
        return n ? sys->read_file(path, buf, n) : -1;
    char full[1024];
    snprintf(full, sizeof full, "%s%s", sys->root ? sys->root : "", path);
    FILE *f = fopen(full, "r");
    if (!f || n == 0) {
        if (f)
            fclose(f);
        return -1;
    }
    size_t got = fread(buf, 1, n - 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return -1;
    buf[got] = 0;
    return (int)got;
}

int doctor_read_long(const mprof_doctor_sys *sys, const char *path, long *out)
{
    char buf[64], *end;
    if (doctor_read(sys, path, buf, sizeof buf) <= 0)
        return -1;
    long v = strtol(buf, &end, 10);
    if (end == buf)
        return -1;
    *out = v;
    return 0;
}

/* The count of CPUs in a list such as "0-3,6,8-9". */
static long count_cpus(const char *s)
{
    long n = 0;
    while (*s >= '0' && *s <= '9') {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        s = end;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            s = end;
        }
        if (b >= a && b - a < 65536)
            n += b - a + 1;
        if (*s != ',')
            break;
        s++;
    }
    return n;
}

void doctor_learn(const mprof_doctor_sys *sys, doctor_facts *f)
{
    memset(f, 0, sizeof *f);
    long v;
    f->paranoid = doctor_read_long(sys, "/proc/sys/kernel/perf_event_paranoid", &v) == 0
                      ? (int)v
                      : DOCTOR_NO_PERF;
    f->uid = -1;
    char st[8192];
    if (doctor_read(sys, "/proc/self/status", st, sizeof st) > 0) {
        const char *p = strstr(st, "\nCapEff:");
        if (p) {
            f->cap_eff = strtoull(p + 8, NULL, 16);
            f->have_caps = 1;
        }
        p = strstr(st, "\nUid:");
        if (p)
            f->uid = (int)strtol(p + 5, NULL, 10);
    }
    char cpus[256];
    f->online_cpus = 1;
    if (doctor_read(sys, "/sys/devices/system/cpu/online", cpus, sizeof cpus) > 0) {
        long n = count_cpus(cpus);
        if (n > 0)
            f->online_cpus = n;
    }
}

int doctor_has_cap(const doctor_facts *f, int cap)
{
    if (!f->have_caps)
        return f->uid == 0;
    if (cap == DOCTOR_CAP_PERFMON && (f->cap_eff >> DOCTOR_CAP_SYS_ADMIN & 1))
        return 1;
    return (int)(f->cap_eff >> cap & 1);
}

int doctor_perf_privileged(const doctor_facts *f)
{
    return doctor_has_cap(f, DOCTOR_CAP_PERFMON);
}

void doctor_begin(mprof_doctor_check *c, const char *id, const char *title)
{
    memset(c, 0, sizeof *c);
    c->id = id;
    c->title = title;
    c->status = MPROF_DOCTOR_OK;
}

void doctor_say(char *field, size_t size, const char *fmt, ...)
{
    size_t len = strlen(field);
    if (len + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(field + len, size - len, fmt, ap);
    va_end(ap);
}

void doctor_fix_paranoid(mprof_doctor_check *c, int value)
{
    SAY(c, fix,
        "sudo sysctl -w kernel.perf_event_paranoid=%d (after a reboot too: echo "
        "'kernel.perf_event_paranoid = %d' | sudo tee /etc/sysctl.d/60-mprof.conf)",
        value, value);
}

size_t mprof_doctor_run(const mprof_doctor_sys *sys, mprof_doctor_check *out)
{
    static void (*const checks[])(const mprof_doctor_sys *, const doctor_facts *,
                                  mprof_doctor_check *) = {
        doctor_check_clock,    doctor_check_perf,    doctor_check_switches,
        doctor_check_sched,    doctor_check_sampling, doctor_check_memlock,
        doctor_check_huge_pages,
    };
    doctor_facts f;
    doctor_learn(sys, &f);
    size_t n = sizeof checks / sizeof checks[0];
    for (size_t i = 0; i < n && i < MPROF_DOCTOR_MAX_CHECKS; i++)
        checks[i](sys, &f, &out[i]);
    return n;
}

int mprof_doctor_ready(const mprof_doctor_check *checks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (checks[i].status == MPROF_DOCTOR_MISSING)
            return 0;
    return 1;
}

const char *mprof_doctor_status_name(mprof_doctor_status s)
{
    switch (s) {
    case MPROF_DOCTOR_OK:
        return "ok";
    case MPROF_DOCTOR_DEGRADED:
        return "degraded";
    case MPROF_DOCTOR_MISSING:
        return "missing";
    }
    return "unknown";
}

/* One text field, wrapped at 96 columns under a label. */
static void print_field(FILE *out, const char *label, const char *text)
{
    if (!text[0])
        return;
    fprintf(out, "    %-10s", label);
    size_t col = 0;
    const char *s = text;
    while (*s) {
        const char *sp = strchr(s, ' ');
        size_t w = sp ? (size_t)(sp - s) : strlen(s);
        if (col && col + 1 + w > 83) {
            fprintf(out, "\n    %-10s", "");
            col = 0;
        } else if (col) {
            fputc(' ', out);
            col++;
        }
        fwrite(s, 1, w, out);
        col += w;
        s += w;
        while (*s == ' ')
            s++;
    }
    fputc('\n', out);
}

void mprof_doctor_print_text(FILE *out, const mprof_doctor_check *checks, size_t n)
{
    size_t missing = 0, degraded = 0;
    for (size_t i = 0; i < n; i++) {
        const mprof_doctor_check *c = &checks[i];
        const char *mark = c->status == MPROF_DOCTOR_OK ? "ok" : c->status == MPROF_DOCTOR_MISSING
                                                                    ? "MISSING"
                                                                    : "degraded";
        fprintf(out, "[%-8s] %s\n", mark, c->title);
        print_field(out, "found:", c->found);
        print_field(out, "gives up:", c->gives_up);
        print_field(out, "fix:", c->fix);
        missing += c->status == MPROF_DOCTOR_MISSING;
        degraded += c->status == MPROF_DOCTOR_DEGRADED;
    }
    if (!missing && !degraded)
        fprintf(out, "\nEverything a full capture needs is there.\n");
    else if (!missing)
        fprintf(out, "\nA full capture is possible; %zu check(s) cost overhead or history (see "
                     "above).\n", degraded);
    else
        fprintf(out, "\n%zu check(s) MISSING: captures on this machine lack what they say "
                     "(run the fix commands, then mprof doctor again).\n", missing);
}

void mprof_doctor_print_json(FILE *out, const mprof_doctor_check *checks, size_t n)
{
    mprof_json j;
    mprof_json_init(&j, out, 1);
    mprof_json_obj_begin(&j, NULL);
    mprof_json_str(&j, "schema", "mprof.doctor.v1");
    mprof_json_bool(&j, "ready", mprof_doctor_ready(checks, n));
    mprof_json_arr_begin(&j, "checks");
    for (size_t i = 0; i < n; i++) {
        const mprof_doctor_check *c = &checks[i];
        mprof_json_obj_begin(&j, NULL);
        mprof_json_str(&j, "id", c->id);
        mprof_json_str(&j, "title", c->title);
        mprof_json_str(&j, "status", mprof_doctor_status_name(c->status));
        mprof_json_str(&j, "found", c->found);
        mprof_json_str(&j, "gives_up", c->gives_up);
        mprof_json_str(&j, "fix", c->fix);
        mprof_json_obj_end(&j);
    }
    mprof_json_arr_end(&j);
    mprof_json_obj_end(&j);
    fputc('\n', out);
}
