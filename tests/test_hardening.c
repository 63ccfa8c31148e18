/*
 * test_hardening.c - issue 14's regression tests, end to end through the real mprof binary:
 * outputs that survive a failed run, gate outputs that would change an input, corrupt and cut
 * captures that must not read as complete, and how a capture ended.
 */
#define MPROF_ENABLE 1
#include "mprof/mprof.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char out[1 << 17];
static char good[512]; /* a clean capture made once by the group setup */

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char args[3072], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", tu_mprof_bin(), args);
    return tu_run(cmd, out, sizeof out);
}

static size_t slurp(const char *path, unsigned char **data)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *data = malloc((size_t)n + 1);
    assert_non_null(*data);
    assert_int_equal(fread(*data, 1, (size_t)n, f), (size_t)n);
    (*data)[n] = 0;
    fclose(f);
    return (size_t)n;
}

static void spit(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Offsets of every chunk header in a capture (at most max), read from the file itself. */
static int chunk_offsets(const unsigned char *d, size_t n, size_t *at, int max)
{
    int k = 0;
    size_t p = MPROF_FMT_HEADER_BYTES;
    while (p + MPROF_FMT_CHUNK_HEADER_BYTES <= n && k < max) {
        at[k++] = p;
        p += MPROF_FMT_CHUNK_HEADER_BYTES + mprof_rd_u32(d + p + 8);
    }
    return k;
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(good, sizeof good, "%s", tu_temp_path("good.mprof"));
    mprof_config cfg = {.capture_path = good, .listen = MPROF_TOGGLE_OFF, .chunk_bytes = 4096};
    if (mprof_startup(&cfg) != MPROF_OK)
        return -1;
    for (int f = 0; f < 3000; f++) {
        MPROF_ZONE("frame work");
        {
            MPROF_ZONE("inner");
        }
        MPROF_FRAME_MARK();
    }
    mprof_shutdown();
    return 0;
}

/* A copy of the good capture with one byte of a middle chunk's payload flipped: it opens
 * fine (INFO is intact) and fails half-way through. */
static const char *corrupt_copy(void)
{
    unsigned char *d;
    size_t n = slurp(good, &d);
    size_t at[4096];
    int k = chunk_offsets(d, n, at, 4096);
    assert_true(k > 6);
    d[at[k / 2] + MPROF_FMT_CHUNK_HEADER_BYTES + 1] ^= 0x10;
    const char *p = tu_temp_path("bad.mprof");
    spit(p, d, n);
    free(d);
    return p;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* export and view on a capture that fails half-way keep an existing output byte for byte, and
 * leave no temporary file behind. */
static void test_failed_output_keeps_file(void **state)
{
    (void)state;
    const char *bad = corrupt_copy();
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tu_temp_path("outs"));
    assert_int_equal(mkdir(dir, 0755), 0);
    char keep[600];
    snprintf(keep, sizeof keep, "%s/keep.out", dir);
    const char *cmds[] = {"export -f csv %s -o %s", "export -f chrome %s -o %s",
                          "export -f csv --per-zone %s -o %s", "view %s -o %s",
                          "view --json %s -o %s"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        spit(keep, "precious\n", 9);
        assert_int_equal(run(cmds[i], bad, keep), 3);
        unsigned char *d;
        size_t n = slurp(keep, &d);
        assert_int_equal(n, 9);
        assert_memory_equal(d, "precious\n", 9);
        free(d);
        assert_int_equal(count_entries(dir), 1);
        assert_null(strstr(out, "XXXXXX"));
        assert_null(strstr(out, ".out."));
    }
    /* The same commands on the good capture replace the file, and keep its mode. */
    chmod(keep, 0640);
    assert_int_equal(run("export -f csv %s -o %s", good, keep), 0);
    struct stat st;
    assert_int_equal(stat(keep, &st), 0);
    assert_true(st.st_size > 9);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(count_entries(dir), 1);
    /* A symlinked output: the file it names is replaced, the link stays a link. */
    char link[600];
    snprintf(link, sizeof link, "%s/link.out", dir);
    assert_int_equal(symlink(keep, link), 0);
    assert_int_equal(run("view --json %s -o %s", good, link), 0);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    unsigned char *d;
    slurp(keep, &d);
    assert_int_equal(d[0], '{');
    free(d);
    assert_int_equal(count_entries(dir), 2);
}

/* gate --json/--markdown over an input, or inside an input folder, is refused and the input
 * stays as it was. */
static void test_gate_output_over_input(void **state)
{
    (void)state;
    char bdir[512], base[600], cur[600], inside[600];
    snprintf(bdir, sizeof bdir, "%s", tu_temp_path("bdir"));
    assert_int_equal(mkdir(bdir, 0755), 0);
    snprintf(base, sizeof base, "%s/base.json", bdir);
    snprintf(cur, sizeof cur, "%s", tu_temp_path("cur.json"));
    snprintf(inside, sizeof inside, "%s/r.json", bdir);
    assert_int_equal(run("export -f frames %s -o %s", good, base), 0);
    assert_int_equal(run("export -f frames %s -o %s", good, cur), 0);
    unsigned char *before, *after;
    size_t nb = slurp(base, &before);
    assert_int_equal(run("gate --baseline %s --current %s --json %s", base, cur, base), 3);
    assert_non_null(strstr(out, "--json"));
    assert_int_equal(run("gate --baseline %s --current %s --markdown %s", base, cur, cur), 3);
    assert_int_equal(run("gate --baseline %s --current %s --json %s", bdir, cur, inside), 3);
    assert_non_null(strstr(out, "inside"));
    assert_int_equal(access(inside, F_OK), -1);
    size_t na = slurp(base, &after);
    assert_int_equal(na, nb);
    assert_memory_equal(before, after, nb);
    free(before);
    free(after);
    /* Outside the inputs it is written. */
    const char *ok = tu_temp_path("gate.json");
    int rc = run("gate --baseline %s --current %s --json %s", base, cur, ok);
    assert_true(rc == 0 || rc == 1 || rc == 4);
    assert_int_equal(access(ok, F_OK), 0);
    /* --resamples is bounded. */
    assert_int_equal(run("gate --baseline %s --current %s --resamples 100000000", base, cur), 3);
    assert_non_null(strstr(out, "--resamples"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_output_keeps_file),
        cmocka_unit_test(test_gate_output_over_input),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
