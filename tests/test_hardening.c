/*
 * test_hardening.c - hardening regression tests, end to end through the real mprof binary:
 * outputs that survive a failed run, gate outputs that would change an input, corrupt and cut
 * captures that must not read as complete, and how a capture ended.
 */
#define MPROF_ENABLE 1
#include "mprof/mprof.h"
#include "test_util.h"

#include "format/wire.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
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


/* A copy of the good capture with edit applied to its bytes. */
static const char *edited_copy(const char *stem, void (*edit)(unsigned char *d, size_t *n))
{
    unsigned char *d;
    size_t n = slurp(good, &d);
    edit(d, &n);
    const char *p = tu_temp_path(stem);
    spit(p, d, n);
    free(d);
    return p;
}

static int flip_bit = 20;

/* One bit of a middle chunk's stored length flipped, so the chunk claims to run past the end:
 * the first chunk from a third of the way in for which it does (the capture's size varies with
 * the system records of the run that made it; a length that still lands inside the file is an
 * error of another kind, a bad header where the next chunk should start). */
static void flip_middle_length(unsigned char *d, size_t *n)
{
    size_t at[4096];
    int k = chunk_offsets(d, *n, at, 4096);
    assert_true(k > 6);
    for (int j = k / 3; j < k - 2; j++) {
        uint32_t len = mprof_rd_u32(d + at[j] + 8), flipped = len ^ (1u << flip_bit);
        if (flipped > len && at[j] + MPROF_FMT_CHUNK_HEADER_BYTES + (size_t)flipped > *n) {
            d[at[j] + 8 + flip_bit / 8] ^= (unsigned char)(1u << (flip_bit % 8));
            return;
        }
    }
    fail_msg("no middle chunk runs past the end with bit %d of its length flipped", flip_bit);
}

/* The last EVENTS chunk's length made longer by one bit from bit 18 up (one that is clear), so
 * that it runs past the end; a stored chunk's raw length too, which must equal it. */
static void flip_last_events_length(unsigned char *d, size_t *n)
{
    size_t at[4096];
    int k = chunk_offsets(d, *n, at, 4096);
    assert_int_equal(d[at[k - 1] + 4], MPROF_CHUNK_END);
    assert_int_equal(d[at[k - 2] + 4], MPROF_CHUNK_EVENTS);
    uint32_t len = mprof_rd_u32(d + at[k - 2] + 8);
    int bit = 18;
    while (len & (1u << bit))
        bit++;
    mprof_wr_u32(d + at[k - 2] + 8, len ^ (1u << bit));
    if (d[at[k - 2] + 5] == MPROF_CODEC_NONE)
        mprof_wr_u32(d + at[k - 2] + 12, len ^ (1u << bit));
}

static void cut_middle_chunk(unsigned char *d, size_t *n)
{
    size_t at[4096];
    int k = chunk_offsets(d, *n, at, 4096);
    size_t a = at[k / 2], b = at[k / 2 + 1];
    memmove(d + a, d + b, *n - b);
    *n -= b - a;
}

/* A flipped bit in a chunk's length is an error, never a cut-off that hides the rest. */
static void test_flipped_length_is_error(void **state)
{
    (void)state;
    int bits[] = {16, 20, 23, 25};
    for (int i = 0; i < 4; i++) {
        flip_bit = bits[i];
        const char *p = edited_copy("flip.mprof", flip_middle_length);
        assert_int_equal(run("report %s", p), 3);
        if (!strstr(out, "damaged"))
            fail_msg("bit %d: the report said: %s", flip_bit, out);
        tu_counts c;
        assert_int_equal(tu_count_capture(p, &c), -1);
    }
    const char *p = edited_copy("fliplast.mprof", flip_last_events_length);
    assert_int_equal(run("report %s", p), 3);
    assert_non_null(strstr(out, "length field is damaged"));
    /* A real cut-off still reads as one. */
    unsigned char *d;
    size_t n = slurp(good, &d);
    const char *cut = tu_temp_path("cut.mprof");
    spit(cut, d, n * 2 / 3);
    free(d);
    assert_int_equal(run("report %s", cut), 0);
    assert_non_null(strstr(out, "incomplete"));
    assert_non_null(strstr(out, "cut-off chunk ignored"));
}

/* A chunk cut out of the middle: END's counts say what is missing, and it is not complete. */
static void test_missing_chunk_reported(void **state)
{
    (void)state;
    assert_int_equal(run("report --json %s", good), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *cap = cJSON_GetObjectItem(j, "capture");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cap, "complete")));
    assert_string_equal(cJSON_GetObjectItem(cap, "ending")->valuestring, "clean");
    assert_int_equal(cJSON_GetObjectItem(cap, "chunks_missing")->valuedouble, 0);
    assert_int_equal(cJSON_GetObjectItem(cap, "events_missing")->valuedouble, 0);
    cJSON_Delete(j);

    const char *p = edited_copy("hole.mprof", cut_middle_chunk);
    assert_int_equal(run("report %s", p), 0);
    assert_non_null(strstr(out, "Missing   1 chunks"));
    assert_non_null(strstr(out, "incomplete: chunks are missing"));
    assert_null(strstr(out, "complete (the process closed"));
    assert_int_equal(run("report --json %s", p), 0);
    j = cJSON_Parse(out);
    assert_non_null(j);
    cap = cJSON_GetObjectItem(j, "capture");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cap, "complete")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cap, "end_record")));
    assert_int_equal(cJSON_GetObjectItem(cap, "chunks_missing")->valuedouble, 1);
    assert_true(cJSON_GetObjectItem(cap, "events_missing")->valuedouble > 0);
    cJSON_Delete(j);
}

/* Writing the capture fails part-way (a file size limit stands in for a full disk: the same
 * write error path, EFBIG instead of ENOSPC): the file still ends with an END that says so, and
 * the report counts what was not written instead of "process was killed, 0 lost". */
static void test_write_failure_said_and_counted(void **state)
{
    (void)state;
    const char *p = tu_temp_path("full.mprof");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {65536, 65536};
        setrlimit(RLIMIT_FSIZE, &rl);
        mprof_config cfg = {.capture_path = p, .listen = MPROF_TOGGLE_OFF, .chunk_bytes = 4096};
        if (mprof_startup(&cfg) != MPROF_OK)
            _exit(9);
        for (int i = 0; i < 100000; i++) {
            MPROF_ZONE("z");
            MPROF_PLOT("v", (int64_t)((unsigned)i * 2654435761u % 1000003u));
            MPROF_FRAME_MARK();
        }
        mprof_shutdown();
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(st.st_size <= 65536);
    assert_int_equal(run("report --json %s", p), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *cap = cJSON_GetObjectItem(j, "capture");
    assert_string_equal(cJSON_GetObjectItem(cap, "ending")->valuestring, "write-error");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cap, "end_record")));
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cap, "complete")));
    assert_true(cJSON_GetObjectItem(cap, "chunks_missing")->valuedouble > 0);
    assert_true(cJSON_GetObjectItem(cap, "events_missing")->valuedouble > 0);
    assert_non_null(cJSON_GetObjectItem(cap, "write_error")->valuestring);
    cJSON_Delete(j);
    assert_int_equal(run("report %s", p), 0);
    assert_non_null(strstr(out, "writing the capture failed"));
    assert_non_null(strstr(out, "were not written"));
    assert_non_null(strstr(out, " not written"));
    assert_null(strstr(out, "events, 0 lost\n"));
}

/* ---- hostile peers: a fake instrumented process on loopback, every wait bounded ------------ */

typedef struct fake_peer {
    int lfd, port;
    mprof_buf send; /* what it answers after the hello */
    pthread_t th;
} fake_peer;

static void *fake_peer_main(void *arg)
{
    fake_peer *f = arg;
    struct pollfd pl = {.fd = f->lfd, .events = POLLIN};
    if (poll(&pl, 1, 20000) <= 0)
        return NULL;
    int c = accept(f->lfd, NULL, NULL);
    if (c < 0)
        return NULL;
    unsigned char hello[MPROF_WIRE_HELLO_BYTES];
    size_t got = 0;
    while (got < sizeof hello) {
        struct pollfd pc = {.fd = c, .events = POLLIN};
        if (poll(&pc, 1, 10000) <= 0)
            break;
        ssize_t n = recv(c, hello + got, sizeof hello - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got == sizeof hello)
        send(c, f->send.data, f->send.len, MSG_NOSIGNAL);
    /* Then it hangs up, as a killed process would. */
    close(c);
    return NULL;
}

static void fake_peer_start(fake_peer *f)
{
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t l = sizeof a;
    assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&a, &l), 0);
    f->port = ntohs(a.sin_port);
    assert_int_equal(listen(f->lfd, 4), 0);
    assert_int_equal(pthread_create(&f->th, NULL, fake_peer_main, f), 0);
}

static void fake_peer_stop(fake_peer *f)
{
    pthread_join(f->th, NULL);
    close(f->lfd);
    mprof_buf_free(&f->send);
}

static void info_payload(mprof_buf *b)
{
    mprof_fmt_kv(b, "app", "fake");
    mprof_fmt_kv(b, "pid", "42");
    mprof_fmt_kv(b, "ns_per_tick", "1");
}

/* OK with a random info block: refused before any file is written (it exited 0 with a file
 * that report refuses). */
static void test_capture_random_info_refused(void **state)
{
    (void)state;
    fake_peer f = {0};
    unsigned char junk[200];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(i * 131u + 7u);
    assert_int_equal(mprof_wire_encode_reply(&f.send, MPROF_WIRE_OK, junk, sizeof junk), 0);
    fake_peer_start(&f);
    const char *p = tu_temp_path("hostile.mprof");
    int rc = run("capture -p %d -o %s --wait 10", f.port, p);
    fake_peer_stop(&f);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(out, "malformed info block"));
    assert_int_equal(access(p, F_OK), -1);
}

/* Chunks that pass every stream check but that no reader takes (an event before any THREAD
 * record): exit 5, not 0. */
static void test_capture_unreadable_stream_not_ok(void **state)
{
    (void)state;
    fake_peer f = {0};
    mprof_buf info = {0}, ev = {0};
    info_payload(&info);
    assert_int_equal(mprof_wire_encode_reply(&f.send, MPROF_WIRE_OK, info.data, info.len), 0);
    assert_int_equal(mprof_buf_reserve(&ev, 4), 0);
    ev.data[0] = MPROF_EV_ZONE_END;
    ev.data[1] = 2; /* a TS delta */
    ev.len = 2;
    assert_int_equal(mprof_fmt_chunk(&f.send, MPROF_CHUNK_EVENTS, ev.data, ev.len, 0, NULL), 0);
    mprof_buf_free(&info);
    mprof_buf_free(&ev);
    fake_peer_start(&f);
    const char *p = tu_temp_path("unreadable.mprof");
    int rc = run("capture -p %d -o %s --wait 10", f.port, p);
    fake_peer_stop(&f);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(out, "does not read back"));
}

/* A BUSY message and an app name with terminal escape sequences are printed escaped. */
static void test_capture_peer_strings_escaped(void **state)
{
    (void)state;
    fake_peer f = {0};
    const char msg[] = "busy\x1b[2J\x1b[1;1Hmprof capture: wrote everything\r\n";
    assert_int_equal(mprof_wire_encode_reply(&f.send, MPROF_WIRE_BUSY, msg, strlen(msg)), 0);
    fake_peer_start(&f);
    const char *p = tu_temp_path("busy.mprof");
    int rc = run("capture -p %d -o %s", f.port, p); /* no --wait: busy exits at once */
    fake_peer_stop(&f);
    assert_int_equal(rc, 4);
    assert_null(strchr(out, 0x1b));
    assert_null(strchr(out, '\r'));
    assert_non_null(strstr(out, "\\x1b[2J"));

    fake_peer g = {0};
    mprof_buf info = {0};
    mprof_fmt_kv(&info, "app", "game\x1b]0;owned\x07\x1b[2K");
    mprof_fmt_kv(&info, "pid", "1\n2");
    mprof_fmt_kv(&info, "ns_per_tick", "1");
    assert_int_equal(mprof_wire_encode_reply(&g.send, MPROF_WIRE_OK, info.data, info.len), 0);
    mprof_buf_free(&info);
    fake_peer_start(&g);
    p = tu_temp_path("escaped.mprof");
    rc = run("capture -p %d -o %s --wait 10", g.port, p);
    fake_peer_stop(&g);
    assert_int_equal(rc, 0); /* the peer vanished: the tool wrote its own END; readable */
    assert_null(strchr(out, 0x1b));
    assert_null(strchr(out, 0x07));
    assert_non_null(strstr(out, "game\\x1b]0;owned\\x07"));
    assert_non_null(strstr(out, "pid 1\\x0a2"));
    /* And the file says the peer was lost, not that it is complete. */
    assert_int_equal(run("report --json %s", p), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *cap = cJSON_GetObjectItem(j, "capture");
    assert_string_equal(cJSON_GetObjectItem(cap, "ending")->valuestring, "peer-lost");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cap, "complete")));
    assert_int_equal(cJSON_GetObjectItem(cap, "chunks_missing")->valuedouble, 0);
    cJSON_Delete(j);
}

/* mprof capture on a full disk (a file size limit stands in for it): exit 3 saying what was not
 * written, and the file ends at its last whole chunk with an END that says so. */
static void test_capture_write_failure(void **state)
{
    (void)state;
    fake_peer f = {0};
    mprof_buf info = {0}, ev = {0};
    info_payload(&info);
    assert_int_equal(mprof_wire_encode_reply(&f.send, MPROF_WIRE_OK, info.data, info.len), 0);
    unsigned x = 12345;
    for (int k = 0; k < 40; k++) {
        ev.len = 0;
        assert_int_equal(mprof_buf_reserve(&ev, 8192), 0);
        unsigned char *o = ev.data;
        *o++ = MPROF_EV_THREAD;
        *o++ = 1;
        for (int m = 0; m < 60; m++) {
            *o++ = MPROF_EV_MESSAGE;
            *o++ = (unsigned char)(2 * m); /* TS: zigzag delta */
            *o++ = 1;                      /* level */
            *o++ = 100;                    /* text length */
            for (int i = 0; i < 100; i++) {
                x = x * 1103515245u + 12345u;
                *o++ = (unsigned char)('a' + (x >> 16) % 26);
            }
        }
        ev.len = (size_t)(o - ev.data);
        assert_int_equal(mprof_fmt_chunk(&f.send, MPROF_CHUNK_EVENTS, ev.data, ev.len, 0, NULL), 0);
    }
    mprof_buf_free(&info);
    mprof_buf_free(&ev);
    fake_peer_start(&f);
    const char *p = tu_temp_path("toolfull.mprof");
    /* Only the soft limit, so that it can be raised back (the hard one cannot without
     * privilege). */
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    struct rlimit rl = {100000, old.rlim_max};
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &rl);
    int rc = run("capture -p %d -o %s --wait 10", f.port, p);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    fake_peer_stop(&f);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "were not written"));
    assert_non_null(strstr(out, "end record saying so"));
    assert_int_equal(run("report --json %s", p), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *cap = cJSON_GetObjectItem(j, "capture");
    assert_string_equal(cJSON_GetObjectItem(cap, "ending")->valuestring, "write-error");
    assert_true(cJSON_GetObjectItem(cap, "events_missing")->valuedouble > 0);
    assert_true(cJSON_GetObjectItem(cap, "chunks_missing")->valuedouble >= 1);
    cJSON_Delete(j);
}

/* ---- a real full disk: a small tmpfs (root only; skipped with the reason otherwise) --------- */

static char tmpfs_dir[512];
static int tmpfs_mounted;

/* Mounts a tmpfs of opts ("size=2m") at a fresh folder; -1 (after saying why) when mounting is
 * not permitted here (not root, no CAP_SYS_ADMIN, a container without mounts). */
static int tmpfs_mount(const char *stem, const char *opts)
{
    snprintf(tmpfs_dir, sizeof tmpfs_dir, "%s", tu_temp_path(stem));
    assert_int_equal(mkdir(tmpfs_dir, 0755), 0);
    if (mount("tmpfs", tmpfs_dir, "tmpfs", 0, opts) != 0) {
        print_message("skipped: cannot mount a tmpfs (%s) at %s: %s; the full-disk path is "
                      "tested with a file size limit only\n", opts, tmpfs_dir, strerror(errno));
        rmdir(tmpfs_dir);
        return -1;
    }
    tmpfs_mounted = 1;
    return 0;
}

static int tmpfs_teardown(void **state)
{
    (void)state;
    if (tmpfs_mounted) {
        umount2(tmpfs_dir, MNT_DETACH);
        rmdir(tmpfs_dir);
        tmpfs_mounted = 0;
    }
    return 0;
}

/* What a capture file holds, counted here without the reader: chunks (header to END, INFO and
 * END included), the events in its EVENTS chunks as mprof_event_counted counts, and END's
 * payload (decompressed into end). */
static void scan_capture(const char *path, int *chunks, uint64_t *events, mprof_buf *end)
{
    unsigned char *d;
    size_t n = slurp(path, &d), pos = MPROF_FMT_HEADER_BYTES;
    mprof_buf raw = {0};
    *chunks = 0;
    *events = 0;
    end->len = 0;
    while (pos < n) {
        mprof_wire_chunk ch;
        size_t used;
        char err[256];
        assert_int_equal(mprof_wire_next_chunk(d + pos, n - pos, &ch, &used, err, sizeof err),
                         MPROF_WIRE_DONE);
        (*chunks)++;
        if (ch.kind == MPROF_CHUNK_EVENTS || ch.kind == MPROF_CHUNK_END) {
            assert_int_equal(mprof_wire_chunk_payload(&ch, &raw, NULL, err, sizeof err), 0);
            if (ch.kind == MPROF_CHUNK_EVENTS) {
                mprof_wire_counts c = {0};
                assert_int_equal(mprof_wire_scan_events(raw.data, raw.len, &c, err, sizeof err), 0);
                *events += c.events;
            } else {
                assert_int_equal(mprof_buf_reserve(end, raw.len), 0);
                memcpy(end->data, raw.data, raw.len);
                end->len = raw.len;
            }
        }
        pos += used;
    }
    mprof_buf_free(&raw);
    free(d);
}

static uint64_t end_u64(const mprof_buf *end, const char *key)
{
    char v[64];
    mprof_wire_kv_get(end->data, end->len, key, v, sizeof v);
    assert_true(v[0] != 0);
    return strtoull(v, NULL, 10);
}

/* The report's account of a capture cut short by a full disk, checked against what the file
 * holds: the ending, the text's wording, and the exact missing counts. */
static void check_disk_full_report(const char *p, uint64_t want_chunks, uint64_t want_events)
{
    assert_int_equal(run("report --json %s", p), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *cap = cJSON_GetObjectItem(j, "capture");
    assert_string_equal(cJSON_GetObjectItem(cap, "ending")->valuestring, "disk-full");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cap, "complete")));
    assert_int_equal((uint64_t)cJSON_GetObjectItem(cap, "chunks_missing")->valuedouble, want_chunks);
    assert_int_equal((uint64_t)cJSON_GetObjectItem(cap, "events_missing")->valuedouble, want_events);
    cJSON_Delete(j);
    assert_int_equal(run("report %s", p), 0);
    assert_non_null(strstr(out, "cut short: the disk was full"));
    assert_null(strstr(out, "killed"));
    char line[256];
    snprintf(line, sizeof line, "Lost      %llu chunks, %llu events were not written (%s)",
             (unsigned long long)want_chunks, (unsigned long long)want_events, strerror(ENOSPC));
    if (!strstr(out, line))
        print_error("no '%s' in:\n%s\n", line, out);
    assert_non_null(strstr(out, line));
}

/* The library capturing into a 2 MiB tmpfs until it is full: END says disk-full and counts the
 * chunks not written; the report's missing chunks and events equal what END counts beyond what
 * the file holds (counted here without the reader). */
static void test_real_disk_full_library(void **state)
{
    (void)state;
    if (tmpfs_mount("fulltmpfs", "size=2m") != 0)
        skip();
    char p[600];
    snprintf(p, sizeof p, "%s/cap.mprof", tmpfs_dir);
    mprof_config cfg = {.capture_path = p, .listen = MPROF_TOGGLE_OFF, .chunk_bytes = 65536};
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    /* Random text does not compress away: about 8 MB of messages for a 2 MiB disk. */
    unsigned x = 99;
    for (int f = 0; f < 2000; f++) {
        for (int i = 0; i < 200; i++) {
            x = x * 1103515245u + 12345u;
            unsigned y = x * 2654435761u;
            MPROF_MESSAGEF(MPROF_LOG_INFO, "%08x%08x%08x%08x", x, y, x ^ y, x + y);
        }
        MPROF_FRAME_MARK();
        if (f % 50 == 0) {
            struct timespec ts = {0, 2000000}; /* let the collector keep up */
            nanosleep(&ts, NULL);
        }
    }
    mprof_shutdown();
    int chunks;
    uint64_t events;
    mprof_buf end = {0};
    scan_capture(p, &chunks, &events, &end);
    char v[64];
    mprof_wire_kv_get(end.data, end.len, "ended_by", v, sizeof v);
    assert_string_equal(v, "disk-full");
    uint64_t end_chunks = end_u64(&end, "chunks"), end_events = end_u64(&end, "events");
    uint64_t not_written = end_u64(&end, "chunks_not_written");
    print_message("library on a full tmpfs: %d chunks in the file, END counts %llu (%llu not "
                  "written), %llu of %llu events in the file\n", chunks,
                  (unsigned long long)end_chunks, (unsigned long long)not_written,
                  (unsigned long long)events, (unsigned long long)end_events);
    assert_true(not_written > 0);
    /* The sink's own count of refused chunks and the collector's count of chunks made agree
     * with the file: chunks before END = made - not written. */
    assert_int_equal(end_chunks - not_written, (uint64_t)(chunks - 1));
    assert_true(end_events > events);
    assert_true(end_events >= 2000 * 201); /* every message and frame mark made was counted */
    mprof_buf_free(&end);
    check_disk_full_report(p, not_written, end_events - events);
}

/* mprof capture writing into a full tmpfs: a peer sends 40 chunks of 60 messages; exit 3 naming
 * the full disk and the one chunk that failed, and the file ends at its last whole chunk with
 * the tool's END (disk-full) counting that chunk and its 60 events. */
static void test_real_disk_full_capture(void **state)
{
    (void)state;
    if (tmpfs_mount("captmpfs", "size=128k") != 0)
        skip();
    fake_peer f = {0};
    mprof_buf info = {0}, ev = {0};
    info_payload(&info);
    assert_int_equal(mprof_wire_encode_reply(&f.send, MPROF_WIRE_OK, info.data, info.len), 0);
    unsigned x = 4242;
    uint64_t per_chunk = 0;
    size_t chunk_size = 0;
    for (int k = 0; k < 40; k++) {
        ev.len = 0;
        assert_int_equal(mprof_buf_reserve(&ev, 8192), 0);
        unsigned char *o = ev.data;
        *o++ = MPROF_EV_THREAD;
        *o++ = 1;
        for (int m = 0; m < 60; m++) {
            *o++ = MPROF_EV_MESSAGE;
            *o++ = (unsigned char)(2 * m);
            *o++ = 1;
            *o++ = 100;
            for (int i = 0; i < 100; i++) {
                x = x * 1103515245u + 12345u;
                *o++ = (unsigned char)('a' + (x >> 16) % 26);
            }
        }
        ev.len = (size_t)(o - ev.data);
        mprof_wire_counts c = {0};
        assert_int_equal(mprof_wire_scan_events(ev.data, ev.len, &c, NULL, 0), 0);
        per_chunk = c.events;
        size_t before = f.send.len;
        assert_int_equal(mprof_fmt_chunk(&f.send, MPROF_CHUNK_EVENTS, ev.data, ev.len, 0, NULL), 0);
        chunk_size = f.send.len - before;
    }
    mprof_buf_free(&info);
    mprof_buf_free(&ev);
    assert_int_equal(per_chunk, 60);
    fake_peer_start(&f);
    char p[600];
    snprintf(p, sizeof p, "%s/tool.mprof", tmpfs_dir);
    int rc = run("capture -p %d -o %s --wait 10", f.port, p);
    fake_peer_stop(&f);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "the disk is full"));
    char said[128];
    snprintf(said, sizeof said, "1 chunk(s) (%zu bytes)", chunk_size);
    assert_non_null(strstr(out, said));
    int chunks;
    uint64_t events;
    mprof_buf end = {0};
    scan_capture(p, &chunks, &events, &end);
    char v[64];
    mprof_wire_kv_get(end.data, end.len, "ended_by", v, sizeof v);
    assert_string_equal(v, "disk-full");
    mprof_wire_kv_get(end.data, end.len, "end_written_by", v, sizeof v);
    assert_string_equal(v, "mprof capture");
    assert_int_equal(end_u64(&end, "chunks_not_written"), 1);
    assert_int_equal(end_u64(&end, "bytes_not_written"), chunk_size);
    assert_true(chunks > 2 && chunks < 42); /* INFO, some chunks, END: the disk filled */
    assert_int_equal(events, (uint64_t)(chunks - 2) * per_chunk);
    mprof_buf_free(&end);
    check_disk_full_report(p, 1, per_chunk);
}

/* ---- the in-process listener against hostile local clients ---------------------------------- */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

/* A client socket connected to the listener within 3 s (a dropped SYN is retried after 1 s),
 * or -1. */
static int connect_ms(int port, int ms);
static int connect_to(int port)
{
    return connect_ms(port, 3000);
}

static int connect_ms(int port, int ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    struct pollfd pf = {.fd = fd, .events = POLLOUT};
    int err = 0;
    socklen_t el = sizeof err;
    if (poll(&pf, 1, ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
        close(fd);
        return -1;
    }
    return fd;
}

static void listen_on(int port)
{
    unsetenv("MPROF_LISTEN");
    mprof_config cfg = {.listen = MPROF_TOGGLE_ON, .listen_address = "127.0.0.1",
                        .listen_port = (uint16_t)port};
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
}

static void listen_off(void)
{
    mprof_shutdown();
    setenv("MPROF_LISTEN", "0", 1);
}

/* Idle connections (no hello) no longer queue a real tool behind them: handshakes are served
 * side by side. (They were served one at a time for 2 s each: six made the tool's 5 s wait for
 * its reply run out.) */
static void test_listener_idle_clients(void **state)
{
    (void)state;
    int port = free_port();
    listen_on(port);
    int idle[6];
    for (int i = 0; i < 6; i++)
        assert_true((idle[i] = connect_to(port)) >= 0);
    const char *p = tu_temp_path("afteridle.mprof");
    int rc = run("capture -p %d -o %s -s 0.5 --wait 30", port, p);
    for (int i = 0; i < 6; i++)
        close(idle[i]);
    listen_off();
    assert_int_equal(rc, 0);
}

static atomic_int producing;

/* Messages of random text, so the stream does not compress away and socket buffers fill. */
static void *producer(void *arg)
{
    (void)arg;
    unsigned x = 7;
    double until = mono_s() + 60;
    while (atomic_load(&producing) && mono_s() < until) {
        for (int i = 0; i < 200; i++) {
            x = x * 1103515245u + 12345u;
            unsigned y = x * 2654435761u;
            MPROF_MESSAGEF(MPROF_LOG_INFO, "%08x%08x%08x%08x", x, y, x ^ y, x + y);
        }
        MPROF_FRAME_MARK();
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* A client that sends a valid hello and then never reads held the only session: every real
 * capture got BUSY. Now a session whose tool takes nothing gives way to a new tool (and is
 * dropped after a while anyway); the real tool retries BUSY within --wait. */
static void test_listener_non_reading_session(void **state)
{
    (void)state;
    int port = free_port();
    listen_on(port);
    int h = connect_to(port);
    assert_true(h >= 0);
    int small = 4096;
    setsockopt(h, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    unsigned char hb[MPROF_WIRE_HELLO_BYTES];
    mprof_wire_hello hello = {.version = MPROF_WIRE_VERSION};
    mprof_wire_encode_hello(hb, &hello);
    assert_int_equal(send(h, hb, sizeof hb, 0), (ssize_t)sizeof hb);
    atomic_store(&producing, 1);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, producer, NULL), 0);
    const char *p = tu_temp_path("afterstall.mprof");
    int rc = run("capture -p %d -o %s -s 0.5 --wait 45", port, p);
    atomic_store(&producing, 0);
    pthread_join(th, NULL);
    close(h);
    listen_off();
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "busy"));
}

/* A flood of connections is served at a bounded rate, so it cannot take the game's CPU: a
 * client that connects, sends a bad hello and reads the refusal as fast as it can for a second
 * gets at most the burst (256) plus the per-second rate (1,000) answered. (It got tens of
 * thousands unbounded, and about 3,000 a second halved the engine's frame rate when each cost a
 * thread wake-up per connection; an accept and its refusal now cost a few microseconds.) */
static void test_listener_flood_rate_limited(void **state)
{
    (void)state;
    int port = free_port();
    listen_on(port);
    const unsigned char junk[MPROF_WIRE_HELLO_BYTES] = "GET / HTTP/1.1\r\nHost: x";
    int answered = 0, tried = 0;
    double t0 = mono_s(), el;
    while ((el = mono_s() - t0) < 1.0 && tried < 100000) {
        tried++;
        int fd = connect_ms(port, 50);
        if (fd < 0)
            continue;
        send(fd, junk, sizeof junk, MSG_NOSIGNAL);
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        unsigned char b[64];
        if (poll(&pf, 1, 50) == 1 && recv(fd, b, sizeof b, MSG_DONTWAIT) > 0)
            answered++;
        close(fd);
    }
    el = mono_s() - t0;
    listen_off();
    print_message("flood: %d answered of %d tried in %.2f s\n", answered, tried, el);
    assert_true(answered > 0);
    assert_true(answered <= 256 + (int)(1000 * el) + 64);
}

/* A live capture's END, relayed from the process by the real mprof capture, carries the chunk
 * and event counts the reader checks: the capture reads whole, and with a middle chunk cut out
 * it reads as missing one chunk and its events. (The live END carried no counts, so a hole in a
 * live capture read as complete.) */
static void test_live_end_counts_checked(void **state)
{
    (void)state;
    int port = free_port();
    unsetenv("MPROF_LISTEN");
    mprof_config cfg = {.listen = MPROF_TOGGLE_ON, .listen_address = "127.0.0.1",
                        .listen_port = (uint16_t)port, .chunk_bytes = 16384};
    assert_int_equal(mprof_startup(&cfg), MPROF_OK);
    atomic_store(&producing, 1);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, producer, NULL), 0);
    const char *p = tu_temp_path("liveend.mprof");
    int rc = run("capture -p %d -o %s -s 1 --wait 30", port, p);
    atomic_store(&producing, 0);
    pthread_join(th, NULL);
    listen_off();
    assert_int_equal(rc, 0);
    /* The END is the process's own, and it counts every chunk before it. */
    unsigned char *d;
    size_t n = slurp(p, &d);
    size_t at[8192];
    int k = chunk_offsets(d, n, at, 8192);
    assert_true(k > 6);
    assert_int_equal(d[at[k - 1] + 4], MPROF_CHUNK_END);
    const unsigned char *end = d + at[k - 1] + MPROF_FMT_CHUNK_HEADER_BYTES;
    char v[64];
    mprof_wire_kv_get(end, mprof_rd_u32(d + at[k - 1] + 8), "chunks", v, sizeof v);
    assert_int_equal(strtoull(v, NULL, 10), (unsigned long long)(k - 1));
    mprof_wire_kv_get(end, mprof_rd_u32(d + at[k - 1] + 8), "end_written_by", v, sizeof v);
    assert_string_equal(v, "");
    assert_int_equal(run("report --json %s", p), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *cap = cJSON_GetObjectItem(j, "capture");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cap, "complete")));
    assert_string_equal(cJSON_GetObjectItem(cap, "ending")->valuestring, "clean");
    assert_int_equal(cJSON_GetObjectItem(cap, "chunks_missing")->valuedouble, 0);
    assert_int_equal(cJSON_GetObjectItem(cap, "events_missing")->valuedouble, 0);
    cJSON_Delete(j);
    /* The same file with a middle chunk cut out. */
    size_t a = at[k / 2], b = at[k / 2 + 1];
    memmove(d + a, d + b, n - b);
    n -= b - a;
    const char *hole = tu_temp_path("liveend_hole.mprof");
    spit(hole, d, n);
    free(d);
    assert_int_equal(run("report %s", hole), 0);
    assert_non_null(strstr(out, "Missing   1 chunks"));
    assert_int_equal(run("report --json %s", hole), 0);
    j = cJSON_Parse(out);
    assert_non_null(j);
    cap = cJSON_GetObjectItem(j, "capture");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cap, "complete")));
    assert_int_equal(cJSON_GetObjectItem(cap, "chunks_missing")->valuedouble, 1);
    assert_true(cJSON_GetObjectItem(cap, "events_missing")->valuedouble > 0);
    cJSON_Delete(j);
}

/* Numeric environment variables are checked by one parser: a bad value is ignored with one
 * warning naming it (MPROF_PORT=70000 listened on 4464, abc on 8086, silently). */
static void test_env_numbers_checked(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"MPROF_PORT=70000", "MPROF_PORT='70000' is not a whole number from 1 to 65535"},
        {"MPROF_PORT=abc", "MPROF_PORT='abc' is not a whole number"},
        {"MPROF_PORT=80x", "MPROF_PORT='80x'"},
        {"MPROF_MEMORY_MIB=-5", "MPROF_MEMORY_MIB='-5'"},
        {"MPROF_ZSTD_LEVEL=99", "MPROF_ZSTD_LEVEL='99'"},
        {"MPROF_HISTORY_SECONDS=nan", "MPROF_HISTORY_SECONDS='nan' is not a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s MPROF_LISTEN=0 %s ci --self-test-workload --frames 2 2>&1",
                 cases[i][0], tu_mprof_bin());
        assert_int_equal(tu_run(cmd, out, sizeof out), 0);
        const char *hit = strstr(out, cases[i][1]);
        if (!hit)
            print_error("%s: no warning in: %s\n", cases[i][0], out);
        assert_non_null(hit);
        assert_null(strstr(hit + 1, cases[i][1])); /* once */
    }
    /* Good values say nothing. */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "MPROF_PORT=9123 MPROF_ZSTD_LEVEL=3 MPROF_HISTORY_SECONDS=2.5 "
             "MPROF_LISTEN=0 %s ci --self-test-workload --frames 2 2>&1", tu_mprof_bin());
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_null(strstr(out, "ignored"));
}

/* The smaller CLI items: option values, outputs, escaping. */
static void test_cli_small_items(void **state)
{
    (void)state;
    /* capture -o DIR: a usage error naming it, before any connection. */
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tu_temp_path("capdir"));
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(run("capture -o %s -p 9 --wait 0", dir), 2);
    assert_non_null(strstr(out, "is a directory"));
    /* [::1]:PORT is parsed as IPv6 address and port; a bad bracket form is a usage error. */
    assert_int_equal(run("capture -a [::1]:9 -o %s/x.mprof --wait 0", dir), 4);
    assert_non_null(strstr(out, "::1"));
    assert_null(strstr(out, "cannot resolve"));
    assert_int_equal(run("capture -a [::1 -o %s/x.mprof --wait 0", dir), 2);
    /* A capture on a pipe: view and report say they need a file, not "bad magic". */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cat %s | %s view /dev/stdin -o %s/v.html 2>&1", good,
             tu_mprof_bin(), dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    assert_null(strstr(out, "bad magic"));
    assert_non_null(strstr(out, "pipe"));
    snprintf(cmd, sizeof cmd, "cat %s | %s report /dev/stdin 2>&1", good, tu_mprof_bin());
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    assert_null(strstr(out, "bad magic"));
    /* A closed output pipe exits 3, not 141 (SIGPIPE). */
    snprintf(cmd, sizeof cmd, "(%s export -f chrome %s; echo $? > %s/rc) | head -c 1 > /dev/null",
             tu_mprof_bin(), good, dir);
    tu_run(cmd, out, sizeof out);
    char rcpath[600];
    snprintf(rcpath, sizeof rcpath, "%s/rc", dir);
    unsigned char *d;
    slurp(rcpath, &d);
    assert_int_equal(atoi((const char *)d), 3);
    free(d);
    /* --opt=value, and --version named in --help. */
    assert_int_equal(run("report --top=1 %s", good), 0);
    assert_non_null(strstr(out, "Zones (1 of 2"));
    assert_int_equal(run("--help"), 0);
    assert_non_null(strstr(out, "--version"));
    /* view A B names the capture that fails. */
    const char *bad = corrupt_copy();
    assert_int_equal(run("view %s %s -o %s/v.html", good, bad, dir), 3);
    assert_non_null(strstr(out, bad));
    assert_int_equal(run("export -f csv %s", bad), 3);
    assert_non_null(strstr(out, bad));
}

/* '--' ends the options of every command that takes files: a capture named -x.mprof (or
 * --json) is read, not taken for an option; without '--' it is an unknown option. */
static void test_double_dash_ends_options(void **state)
{
    (void)state;
    char dir[512], cmd[2048];
    snprintf(dir, sizeof dir, "%s", tu_temp_path("dashdir"));
    assert_int_equal(mkdir(dir, 0755), 0);
    unsigned char *d;
    size_t n = slurp(good, &d);
    char p[600];
    snprintf(p, sizeof p, "%s/-x.mprof", dir);
    spit(p, d, n);
    snprintf(p, sizeof p, "%s/--json", dir);
    spit(p, d, n);
    free(d);
#define IN_DIR(...)                                                                               \
    (snprintf(cmd, sizeof cmd, "cd '%s' && '%s' ", dir, tu_mprof_bin()),                         \
     snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), __VA_ARGS__),                          \
     snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " 2>&1"), tu_run(cmd, out, sizeof out))
    assert_int_equal(IN_DIR("report -x.mprof"), 2);
    assert_non_null(strstr(out, "unknown option '-x.mprof'"));
    assert_int_equal(IN_DIR("report -- -x.mprof"), 0);
    assert_non_null(strstr(out, "Capture   -x.mprof"));
    assert_int_equal(IN_DIR("report --top 1 -- -x.mprof"), 0);
    assert_non_null(strstr(out, "Zones (1 of 2"));
    /* After '--' even an option's name is a file; before it, options still count. */
    assert_int_equal(IN_DIR("report --json -- --json"), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "capture"), "file")->valuestring,
                        "--json");
    cJSON_Delete(j);
    assert_int_equal(IN_DIR("report -- -x.mprof --json"), 2);
    assert_non_null(strstr(out, "one capture at a time"));
    assert_int_equal(IN_DIR("export -f csv -o out.csv -- -x.mprof"), 0);
    snprintf(p, sizeof p, "%s/out.csv", dir);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(st.st_size > 0);
    assert_int_equal(IN_DIR("export -f frames -o ./-frames.json -- -x.mprof"), 0);
    assert_int_equal(IN_DIR("view -o v.html -- -x.mprof --json"), 0);
    snprintf(p, sizeof p, "%s/v.html", dir);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(IN_DIR("diff -- -x.mprof --json"), 0);
    assert_non_null(strstr(out, "A: -x.mprof"));
    assert_non_null(strstr(out, "B: --json"));
    assert_int_equal(IN_DIR("store add --store sqlite:runs.db -- -frames.json"), 0);
    assert_int_equal(IN_DIR("history --store sqlite:runs.db --json"), 0);
    assert_non_null(strstr(out, "no-baseline"));
    /* gate's files are option values, which may start with '-' as they are. */
    assert_int_equal(IN_DIR("gate --baseline -frames.json --current -frames.json"), 0);
#undef IN_DIR
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_output_keeps_file),
        cmocka_unit_test(test_gate_output_over_input),
        cmocka_unit_test(test_flipped_length_is_error),
        cmocka_unit_test(test_missing_chunk_reported),
        cmocka_unit_test(test_write_failure_said_and_counted),
        cmocka_unit_test(test_capture_random_info_refused),
        cmocka_unit_test(test_capture_unreadable_stream_not_ok),
        cmocka_unit_test(test_capture_peer_strings_escaped),
        cmocka_unit_test(test_capture_write_failure),
        cmocka_unit_test_teardown(test_real_disk_full_library, tmpfs_teardown),
        cmocka_unit_test_teardown(test_real_disk_full_capture, tmpfs_teardown),
        cmocka_unit_test(test_listener_idle_clients),
        cmocka_unit_test(test_listener_non_reading_session),
        cmocka_unit_test(test_listener_flood_rate_limited),
        cmocka_unit_test(test_live_end_counts_checked),
        cmocka_unit_test(test_env_numbers_checked),
        cmocka_unit_test(test_cli_small_items),
        cmocka_unit_test(test_double_dash_ends_options),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
