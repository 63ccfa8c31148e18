/*
 * cmd_capture.c - `mprof capture`: records a running instrumented process over the network.
 *
 * Connects (retrying until the process appears), performs the handshake of format/wire.h, and
 * writes the stream to a .mprof file as it arrives: the file header, an INFO chunk made from the
 * handshake, then every chunk verbatim once its header and checksum are checked. Each chunk is
 * written with write(2) as soon as it is complete, so a killed tool or a crashed game leaves a
 * file readable up to the last chunk. Stopping (-s elapsed, Ctrl-C, SIGTERM) asks the process
 * for an orderly end; if its END chunk does not arrive, the tool writes its own, with its own
 * counters, so the file is always finalised when the tool exits normally.
 */
#include "format/wire.h"
#include "mprof_tool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
    EXIT_CONNECT = 4,  /* no process to capture, refused (busy), handshake failed */
    EXIT_PROTOCOL = 5  /* protocol version mismatch or a corrupt stream */
};

static const char *const help =
    "usage: mprof capture -o FILE [options]\n"
    "\n"
    "Captures a running instrumented process over the network into FILE (.mprof). The process\n"
    "listens on 127.0.0.1:8086 by default (MPROF_ADDRESS, MPROF_PORT). The file is written as the\n"
    "stream arrives: a killed tool or a crashed process leaves it readable up to the last chunk.\n"
    "Ctrl-C stops the capture cleanly and finalises the file.\n"
    "\n"
    "Options:\n"
    "  -o FILE           output file (required; parent directories are created)\n"
    "  -a ADDRESS        address of the process (default 127.0.0.1); IPv6 as ::1, [::1] or\n"
    "                    [::1]:PORT (the process listens there with MPROF_ADDRESS=::1)\n"
    "  -p PORT           port of the process (default 8086); give -p several times to\n"
    "                    capture several processes into one capture, each a process of it\n"
    "                    (with one -a for all, or one -a for each -p in order): each is\n"
    "                    captured into a part (FILE.parts/N.mprof), a process that exits or\n"
    "                    dies ends only its own part (marked in mprof report), -s and Ctrl-C\n"
    "                    end them all, and the parts are merged into FILE at the end (if the\n"
    "                    tool is killed, `mprof merge FILE.parts/*.mprof -o FILE` joins them)\n"
    "  -f                overwrite FILE if it exists (refused otherwise)\n"
    "  -s SECONDS        stop after this many seconds of capture (default, and -s 0: until\n"
    "                    the process exits or Ctrl-C)\n"
    "  -m MIB            memory limit for buffering in the process for this capture (default,\n"
    "                    and -m 0: 64, at most the process's memory cap); when the tool cannot keep up,\n"
    "                    chunks past it are dropped and counted as lost events\n"
    "  --history SECONDS also capture up to this many seconds from before the connection (the\n"
    "                    process keeps MPROF_HISTORY_SECONDS of history, default 5)\n"
    "                    A capture started before the process (the tool had to wait for it)\n"
    "                    starts at the process's first event without --history: it asks for\n"
    "                    everything the process kept since it started.\n"
    "  --wait SECONDS    give up if no process answers within this time (default: wait\n"
    "                    forever, retrying); the connect and the handshake never wait past\n"
    "                    it; a process busy with another capture is asked again until then\n"
    "                    (without --wait, busy exits 4 at once)\n"
    "  --fail-on-lost    exit 1 when events were lost\n"
    "  -h, --help        show this help\n"
    "\n"
    "On a terminal a progress line shows elapsed/limit, events, MB written, MB/s, threads and\n"
    "frames; otherwise one line is printed at the start and a summary at the end.\n"
    "\n"
    "Exit status:\n"
    "  0  a valid capture was written (it is read back before the tool exits)\n"
    "  1  events were lost and --fail-on-lost was given (the capture is still valid)\n"
    "  2  usage error\n"
    "  3  output file problem (exists without -f, cannot be created or written; on a full\n"
    "     disk the file ends at the last whole chunk with an end record saying what was not\n"
    "     written)\n"
    "  4  connection or handshake failure (no process within --wait, process busy)\n"
    "  5  protocol mismatch or corrupt stream (the file is finalised up to the last good chunk,\n"
    "     its end record says corrupt-stream), or a written capture that does not read back\n";

static volatile sig_atomic_t g_stop;

/* Set in the child that captures one part of a several-process capture (capture_multi.c). */
int capture_part_mode;

/* A connect not accepted within this is tried again (a full accept queue drops SYNs). */
#define CONNECT_TRY_MS 3000

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int parse_seconds(const char *flag, const char *v, double *out)
{
    char *end;
    if (!v || !*v)
        return tool_error("capture", EXIT_USAGE, "%s needs a value", flag), -1;
    double d = strtod(v, &end);
    if (*end || !(d >= 0) || d > 1e9)
        return tool_error("capture", EXIT_USAGE, "%s: '%s' is not a number of seconds", flag, v), -1;
    *out = d;
    return 0;
}

typedef struct capture {
    const char *out_path, *address;
    unsigned port;
    int force, fail_on_lost, tty;
    double seconds, history, wait;
    unsigned long long mib;
    int fd, sock;
    uint64_t bytes_written;
    uint64_t good_bytes;     /* file size after the last whole chunk */
    uint64_t chunks_written; /* INFO included */
    uint64_t chunks_not_written, bytes_not_written;
    int write_errno;
    mprof_wire_stream st;
    int write_failed;
    char app[128], pid[32];
    char addr_buf[256];
} capture;

/* Connects to address:port once, giving up at until_ns (monotonic): the connect is non-blocking,
 * so a listener whose accept queue is full (its SYNs dropped and retried by the kernel for up to
 * two minutes) cannot hold the tool past --wait. Returns the socket (blocking again), -1 with the
 * reason in why, or -2 when the address cannot be resolved. */
static int connect_once(const capture *c, uint64_t until_ns, char *why, size_t n)
{
    char port[16];
    snprintf(port, sizeof port, "%u", c->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(c->address, port, &hints, &res);
    if (g != 0) {
        snprintf(why, n, "cannot resolve %s: %s", c->address, gai_strerror(g));
        return -2;
    }
    int fd = -1;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0)
            continue;
        int err = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
        while (err == EINPROGRESS || err == EINTR) {
            uint64_t now = now_ns();
            if (now >= until_ns || g_stop) {
                err = ETIMEDOUT;
                break;
            }
            uint64_t left_ms = (until_ns - now) / 1000000u + 1;
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            int r = poll(&pf, 1, left_ms > 100 ? 100 : (int)left_ms);
            if (r < 0 && errno != EINTR) {
                err = errno;
                break;
            }
            if (r > 0) {
                socklen_t el = sizeof err;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
                    err = errno;
            }
        }
        if (err == 0) {
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            break;
        }
        snprintf(why, n, "%s", err == ETIMEDOUT ? "the connection was not accepted in time" : strerror(err));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static int write_all(int fd, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Reads exactly until a complete reply is in buf (or the deadline passes). */
static int read_reply(capture *c, mprof_buf *buf, mprof_wire_reply *rep, size_t *used, char *err,
                      size_t errlen, uint64_t until)
{
    for (;;) {
        if (buf->len) {
            int rc = mprof_wire_decode_reply(buf->data, buf->len, rep, used, err, errlen);
            if (rc != MPROF_WIRE_NEED_MORE)
                return rc == MPROF_WIRE_DONE ? 0 : -1;
        }
        uint64_t t = now_ns();
        if (t >= until) {
            snprintf(err, errlen, "no handshake reply in time (the process is busy or not an "
                     "mprof process)");
            return -1;
        }
        struct pollfd pf = {.fd = c->sock, .events = POLLIN};
        if (poll(&pf, 1, 100) <= 0)
            continue;
        if (mprof_buf_reserve(buf, 65536) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        ssize_t n = recv(c->sock, buf->data + buf->len, 65536, 0);
        if (n <= 0) {
            snprintf(err, errlen, "the process closed the connection during the handshake");
            return -1;
        }
        buf->len += (size_t)n;
    }
}

static void progress(const capture *c, uint64_t t0, int final)
{
    double el = (double)(now_ns() - t0) / 1e9;
    double mb = (double)c->bytes_written / 1e6;
    char lim[32] = "";
    if (c->seconds > 0)
        snprintf(lim, sizeof lim, " / %.0f s", c->seconds);
    fprintf(stderr, "\r%6.1f s%s | %" PRIu64 " events | %.2f MB | %.2f MB/s | %u threads | %" PRIu64
                    " frames%s",
            el, lim, c->st.counts.events, mb, el > 0 ? mb / el : 0.0, c->st.counts.max_thread,
            c->st.counts.frames, final ? "\n" : "   ");
    fflush(stderr);
}

/* Stores a verified chunk: written at once, so the file is always readable up to it. */
static int store_chunk(void *user, const mprof_wire_chunk *ch)
{
    capture *c = user;
    if (write_all(c->fd, ch->bytes, ch->size) != 0) {
        c->write_errno = errno;
        c->write_failed = 1;
        c->chunks_not_written++;
        c->bytes_not_written += ch->size;
        return -1;
    }
    c->bytes_written += ch->size;
    c->good_bytes += ch->size;
    c->chunks_written++;
    return 0;
}

/* Reads the whole capture at path as report would. 0 when it reads to its end. */
static int verify_file(const char *path, char *err, size_t errlen)
{
    mprof_reader *r = mprof_reader_open(path, err, errlen);
    if (!r)
        return -1;
    /* Every chunk and event is decoded and checked; none needs handing out. */
    static const unsigned char none[MPROF_EV_MAX];
    mprof_reader_want(r, none);
    mprof_batch b;
    int rc;
    while ((rc = mprof_reader_next_batch(r, &b)) == 1)
        ;
    if (rc < 0)
        snprintf(err, errlen, "%s", mprof_reader_error(r));
    mprof_reader_close(r);
    return rc < 0 ? -1 : 0;
}

/* Writes an END chunk made by the tool (the process did not send one). */
static int write_own_end(capture *c, const char *why)
{
    mprof_buf kv = {0}, fr = {0};
    char v[64];
    snprintf(v, sizeof v, "%" PRIu64, c->st.counts.events);
    mprof_fmt_kv(&kv, "events", v);
    snprintf(v, sizeof v, "%" PRIu64, c->st.counts.lost);
    mprof_fmt_kv(&kv, "events_lost", v);
    /* Every chunk this tool took in, INFO included, written or not: the reader checks the file
     * against it. */
    snprintf(v, sizeof v, "%" PRIu64, c->chunks_written + c->chunks_not_written);
    mprof_fmt_kv(&kv, "chunks", v);
    mprof_fmt_kv(&kv, "ended_by", why);
    mprof_fmt_kv(&kv, "end_written_by", "mprof capture");
    if (c->write_failed) {
        mprof_fmt_kv(&kv, "write_error", strerror(c->write_errno));
        snprintf(v, sizeof v, "%" PRIu64, c->chunks_not_written);
        mprof_fmt_kv(&kv, "chunks_not_written", v);
        snprintf(v, sizeof v, "%" PRIu64, c->bytes_not_written);
        mprof_fmt_kv(&kv, "bytes_not_written", v);
        /* A failed write left part of a chunk: END goes where the last whole one ended. */
        if (ftruncate(c->fd, (off_t)c->good_bytes) != 0 ||
            lseek(c->fd, (off_t)c->good_bytes, SEEK_SET) < 0) {
            mprof_buf_free(&kv);
            return -1;
        }
        c->bytes_written = c->good_bytes;
    }
    int rc = mprof_fmt_chunk(&fr, MPROF_CHUNK_END, kv.data, kv.len, 0, NULL);
    if (rc == 0)
        rc = write_all(c->fd, fr.data, fr.len);
    if (rc == 0)
        c->bytes_written += fr.len;
    mprof_buf_free(&kv);
    mprof_buf_free(&fr);
    return rc;
}

int cmd_capture(int argc, char **argv)
{
    /* Several -p: one part per process, merged at the end (capture_multi.c). */
    if (!capture_part_mode && capture_port_count(argc, argv) > 1) {
        int rc = capture_multi_run(argc, argv);
        if (rc != -2)
            return rc;
    }
    capture c = {.address = "127.0.0.1", .port = MPROF_WIRE_PORT_DEFAULT, .fd = -1, .sock = -1,
                 .wait = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long u = 0;
        if (tool_is_help(a)) {
            fputs(help, stdout);
            return tool_finish("capture", EXIT_OK);
        } else if (strcmp(a, "-o") == 0) {
            if (!v)
                return tool_error("capture", EXIT_USAGE, "-o needs a file name");
            c.out_path = v;
            i++;
        } else if (strcmp(a, "-a") == 0) {
            if (!v)
                return tool_error("capture", EXIT_USAGE, "-a needs an address");
            c.address = v;
            i++;
            /* [::1] or [::1]:PORT for IPv6, as in URLs. */
            if (v[0] == '[') {
                const char *close_b = strchr(v, ']');
                if (!close_b || close_b == v + 1 || (close_b[1] && close_b[1] != ':'))
                    return tool_error("capture", EXIT_USAGE, "-a: '%s' is not [ADDRESS] or "
                                      "[ADDRESS]:PORT", v);
                snprintf(c.addr_buf, sizeof c.addr_buf, "%.*s", (int)(close_b - v - 1), v + 1);
                c.address = c.addr_buf;
                if (close_b[1] == ':') {
                    if (tool_parse_uint("capture", "-a", close_b + 2, 65535, &u))
                        return EXIT_USAGE;
                    if (u == 0)
                        return tool_error("capture", EXIT_USAGE, "-a: port 0 is not valid");
                    c.port = (unsigned)u;
                }
            }
        } else if (strcmp(a, "-p") == 0) {
            if (tool_parse_uint("capture", "-p", v, 65535, &u))
                return EXIT_USAGE;
            if (u == 0)
                return tool_error("capture", EXIT_USAGE, "-p: port 0 is not valid");
            c.port = (unsigned)u;
            i++;
        } else if (strcmp(a, "-f") == 0) {
            c.force = 1;
        } else if (strcmp(a, "-s") == 0) {
            if (parse_seconds("-s", v, &c.seconds))
                return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "-m") == 0) {
            if (tool_parse_uint("capture", "-m", v, 1u << 20, &c.mib))
                return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--history") == 0) {
            if (parse_seconds("--history", v, &c.history))
                return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--wait") == 0) {
            if (parse_seconds("--wait", v, &c.wait))
                return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--fail-on-lost") == 0) {
            c.fail_on_lost = 1;
        } else {
            return tool_error("capture", EXIT_USAGE, "unknown argument '%s' (see --help)", a);
        }
    }
    if (!c.out_path)
        return tool_error("capture", EXIT_USAGE, "no output file: give -o FILE (see --help)");
    struct stat st;
    if (stat(c.out_path, &st) == 0 && S_ISDIR(st.st_mode))
        return tool_error("capture", EXIT_USAGE, "-o %s is a directory: give a file name (for "
                          "example %s/capture.mprof)", c.out_path, c.out_path);
    if (!c.force && stat(c.out_path, &st) == 0)
        return tool_error("capture", EXIT_IO, "%s already exists; use -f to overwrite it",
                          c.out_path);
    /* Output problems are found now, not after waiting for the process: the directories are
     * created and must be writable (the file itself is created only once the handshake is done,
     * so a failed capture leaves an existing file untouched). */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", c.out_path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = 0;
    else if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    /* The parent folders are made, as the in-process capture makes them. */
    if (tool_mkdirs(dir) != 0 || access(dir, W_OK) != 0)
        return tool_error("capture", EXIT_IO, "cannot write %s: %s", c.out_path, strerror(errno));
    c.tty = isatty(2) && !capture_part_mode;

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Connect, retrying until the process appears. */
    uint64_t t_start = now_ns();
    int said = 0, said_busy = 0, waited = 0;
    char why[256] = "";
    mprof_buf in = {0};
    mprof_wire_reply rep;
    size_t used = 0;
    char err[512];
retry:
    for (;;) {
        /* One try lasts at most CONNECT_TRY_MS, and never past --wait. */
        uint64_t try_until = now_ns() + (uint64_t)CONNECT_TRY_MS * 1000000u;
        if (c.wait >= 0 && t_start + (uint64_t)(c.wait * 1e9) < try_until)
            try_until = t_start + (uint64_t)(c.wait * 1e9);
        c.sock = connect_once(&c, try_until, why, sizeof why);
        if (c.sock >= 0)
            break;
        if (c.sock == -2)
            return tool_error("capture", EXIT_CONNECT, "%s", why);
        if (g_stop)
            return tool_error("capture", EXIT_CONNECT, "interrupted while waiting for %s:%u",
                              c.address, c.port);
        if (c.wait >= 0 && (double)(now_ns() - t_start) / 1e9 >= c.wait)
            return tool_error("capture", EXIT_CONNECT,
                              "no process is listening on %s:%u (%s); waited %.1f s", c.address,
                              c.port, why, c.wait);
        waited = 1;
        if (!said) {
            fprintf(stderr, "mprof capture: waiting for a process on %s:%u...\n", c.address, c.port);
            said = 1;
        }
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    int one = 1;
    setsockopt(c.sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    /* Handshake. A tool that had to wait for the process was started before it, so the capture
     * starts at the process's first event: the process has just started listening and its
     * history ring holds everything since its start, which the tool asks for. */
    double history = waited ? 86400 : c.history;
    unsigned char hb[MPROF_WIRE_HELLO_BYTES];
    mprof_wire_hello hello = {.version = MPROF_WIRE_VERSION,
                              .flags = history > 0 ? MPROF_WIRE_F_HISTORY : 0,
                              /* more than a day of history is a day (the field is 32-bit ms) */
                              .history_ms = (uint32_t)((history < 86400 ? history : 86400) * 1000.0),
                              .queue_mib = (uint32_t)c.mib};
    mprof_wire_encode_hello(hb, &hello);
    if (send(c.sock, hb, sizeof hb, MSG_NOSIGNAL) != (ssize_t)sizeof hb) {
        close(c.sock);
        return tool_error("capture", EXIT_CONNECT, "cannot send the handshake to %s:%u: %s",
                          c.address, c.port, strerror(errno));
    }
    /* The reply within 5 s, and never past --wait (at least half a second for it, though). */
    uint64_t until = now_ns() + 5000000000ull;
    if (c.wait >= 0) {
        uint64_t end = t_start + (uint64_t)(c.wait * 1e9), floor = now_ns() + 500000000ull;
        if (end < floor)
            end = floor;
        if (end < until)
            until = end;
    }
    in.len = 0;
    if (read_reply(&c, &in, &rep, &used, err, sizeof err, until) != 0) {
        close(c.sock);
        mprof_buf_free(&in);
        return tool_error("capture", EXIT_CONNECT, "handshake with %s:%u failed: %s", c.address,
                          c.port, err);
    }
    /* Busy with --wait: another capture holds the process; try again until --wait runs out. */
    if (rep.status == MPROF_WIRE_BUSY && rep.version == MPROF_WIRE_VERSION && c.wait > 0 &&
        !g_stop && (double)(now_ns() - t_start) / 1e9 + 0.5 < c.wait) {
        if (!said_busy) {
            fprintf(stderr, "mprof capture: the process is busy with another capture; retrying "
                            "until --wait runs out...\n");
            said_busy = 1;
        }
        close(c.sock);
        c.sock = -1;
        struct timespec ts = {0, 500000000};
        nanosleep(&ts, NULL);
        goto retry;
    }
    if (rep.status != MPROF_WIRE_OK || rep.version != MPROF_WIRE_VERSION) {
        int code = rep.status == MPROF_WIRE_BUSY ? EXIT_CONNECT : EXIT_PROTOCOL;
        int n = (int)(rep.payload_len > 400 ? 400 : rep.payload_len);
        if (rep.status == MPROF_WIRE_OK)
            tool_error("capture", code, "protocol version mismatch: the process speaks version "
                       "%u, this tool speaks %d", (unsigned)rep.version, MPROF_WIRE_VERSION);
        else {
            /* The peer's message as it came (up to a NUL): tool_error escapes it. */
            char msg[401];
            snprintf(msg, sizeof msg, "%.*s", n, (const char *)rep.payload);
            tool_error("capture", code, "the process refused the capture (%s): %s",
                       mprof_wire_status_name(rep.status), msg);
        }
        close(c.sock);
        mprof_buf_free(&in);
        return code;
    }
    if (!mprof_wire_kv_well_formed(rep.payload, rep.payload_len)) {
        close(c.sock);
        mprof_buf_free(&in);
        return tool_error("capture", EXIT_PROTOCOL, "the process at %s:%u answered with a "
                          "malformed info block: no capture was written", c.address, c.port);
    }
    mprof_wire_kv_get(rep.payload, rep.payload_len, "app", c.app, sizeof c.app);
    mprof_wire_kv_get(rep.payload, rep.payload_len, "pid", c.pid, sizeof c.pid);

    /* The output file: header, then INFO from the handshake. */
    c.fd = open(c.out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (c.force ? 0 : O_EXCL), 0644);
    if (c.fd < 0) {
        int e = errno;
        close(c.sock);
        mprof_buf_free(&in);
        if (e == EEXIST)
            return tool_error("capture", EXIT_IO, "%s already exists; use -f to overwrite it",
                              c.out_path);
        return tool_error("capture", EXIT_IO, "cannot create %s: %s", c.out_path, strerror(e));
    }
    unsigned char fh[MPROF_FMT_HEADER_BYTES];
    mprof_fmt_file_header(fh);
    mprof_buf info = {0};
    int io_failed = write_all(c.fd, fh, sizeof fh) != 0 ||
                    mprof_fmt_chunk(&info, MPROF_CHUNK_INFO, rep.payload, rep.payload_len, 0,
                                    NULL) != 0 ||
                    write_all(c.fd, info.data, info.len) != 0;
    c.bytes_written = c.good_bytes = sizeof fh + info.len;
    c.chunks_written = 1;
    mprof_buf_free(&info);
    /* Drop the reply from the input buffer; what follows is the stream. */
    memmove(in.data, in.data + used, in.len - used);
    in.len -= used;

    if (!io_failed) {
        /* app and pid come from the peer: printed escaped. */
        char app[520], pid[140];
        fprintf(stderr, "mprof capture: capturing %s (pid %s) at %s:%u into %s%s\n",
                c.app[0] ? tool_escape(c.app, sizeof c.app, app, sizeof app) : "?",
                c.pid[0] ? tool_escape(c.pid, sizeof c.pid, pid, sizeof pid) : "?", c.address,
                c.port, c.out_path,
                waited ? " (from the process's first event)"
                       : c.history > 0 ? " (with history)" : "");
    }

    uint64_t t0 = now_ns(), last_progress = 0, stop_sent_at = 0, last_data = t0;
    int said_silent = 0;
    int exit_code = EXIT_OK, eof = 0;
    const char *ended = "process-end";
    while (!io_failed && !c.st.end_seen) {
        uint64_t t = now_ns();
        if (!stop_sent_at && (g_stop || (c.seconds > 0 && (double)(t - t0) / 1e9 >= c.seconds))) {
            unsigned char q = MPROF_WIRE_STOP;
            send(c.sock, &q, 1, MSG_NOSIGNAL);
            stop_sent_at = t;
            ended = g_stop ? "interrupted" : "time-limit";
        }
        if (stop_sent_at && t - stop_sent_at > 5000000000ull) {
            ended = "no-end-from-process";
            break;
        }
        if (c.tty && t - last_progress > 250000000ull) {
            progress(&c, t0, 0);
            last_progress = t;
        }
        if (eof)
            break;
        if (!said_silent && !c.tty && t - last_data > 5000000000ull) {
            /* Without a progress line, a silent process would look like a hung tool. */
            fprintf(stderr, "mprof capture: nothing from the process for 5 s; still waiting "
                            "(%s)\n", c.seconds > 0 ? "until -s runs out" : "Ctrl-C stops");
            said_silent = 1;
        }
        struct pollfd pf = {.fd = c.sock, .events = POLLIN};
        int pr = poll(&pf, 1, 100);
        if (pr <= 0)
            continue;
        last_data = now_ns();
        if (mprof_buf_reserve(&in, 1 << 18) != 0) {
            tool_error("capture", EXIT_IO, "out of memory");
            exit_code = EXIT_IO;
            break;
        }
        ssize_t n = recv(c.sock, in.data + in.len, 1 << 18, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            eof = 1;
        } else {
            in.len += (size_t)n;
        }
        size_t pos = 0;
        int rc = mprof_wire_feed(&c.st, in.data, in.len, &pos, store_chunk, &c);
        if (rc == MPROF_WIRE_ERROR) {
            if (c.write_failed) {
                io_failed = 1;
                break;
            }
            tool_error("capture", EXIT_PROTOCOL, "%s; the capture ends here", c.st.err);
            exit_code = EXIT_PROTOCOL;
            ended = "corrupt-stream";
            eof = 1;
            pos = in.len;
        }
        memmove(in.data, in.data + pos, in.len - pos);
        in.len -= pos;
        if (eof && !c.st.end_seen && exit_code == EXIT_OK && !io_failed) {
            ended = "connection-lost";
            fprintf(stderr, "%smprof capture: the process closed the connection before the end of "
                            "the capture (exited or crashed); finalising the file\n",
                    c.tty ? "\n" : "");
        }
    }
    if (c.tty)
        progress(&c, t0, 1);
    mprof_wire_stream_free(&c.st);
    mprof_buf_free(&in);
    close(c.sock);
    if (!io_failed && !c.st.end_seen)
        io_failed = write_own_end(&c, ended) != 0;
    if (io_failed && c.write_failed) {
        /* A chunk could not be written (a full disk): the file is cut back to its last whole
         * chunk and ends with an END that says so and counts what was not written. */
        int full = c.write_errno == ENOSPC || c.write_errno == EDQUOT;
        int e = c.write_errno;
        int ended_ok = write_own_end(&c, full ? "disk-full" : "write-error") == 0;
        close(c.fd);
        tool_error("capture", EXIT_IO, "writing %s failed: %s; %" PRIu64 " chunk(s) (%" PRIu64
                   " bytes) and what the process sent after them were not written; %s",
                   c.out_path, full ? "the disk is full" : strerror(e), c.chunks_not_written,
                   c.bytes_not_written,
                   ended_ok ? "the file ends at the last whole chunk with an end record saying so"
                            : "the file is cut off at the last whole chunk");
        return EXIT_IO;
    }
    if (io_failed) {
        tool_error("capture", EXIT_IO, "writing %s failed: %s", c.out_path, strerror(errno));
        close(c.fd);
        return EXIT_IO;
    }
    if (close(c.fd) != 0)
        return tool_error("capture", EXIT_IO, "closing %s failed: %s", c.out_path, strerror(errno));
    /* Exit 0 promises a capture the reader accepts: read it back once (a hostile or broken
     * peer can pass every chunk check and still send what no reader takes). */
    char rerr[512];
    if (verify_file(c.out_path, rerr, sizeof rerr) != 0) {
        tool_error("capture", EXIT_PROTOCOL, "the capture written to %s does not read back: %s",
                   c.out_path, rerr);
        return EXIT_PROTOCOL;
    }
    uint64_t lost = c.st.end_events_lost > c.st.counts.lost ? c.st.end_events_lost
                                                             : c.st.counts.lost;
    double el = (double)(now_ns() - t0) / 1e9;
    fprintf(stderr,
            "mprof capture: wrote %s: %.1f s, %" PRIu64 " events, %" PRIu64 " frames, %u threads, "
            "%.1f MB, %" PRIu64 " events lost\n",
            c.out_path, el, c.st.counts.events, c.st.counts.frames, c.st.counts.max_thread,
            (double)c.bytes_written / 1e6, lost);
    if (lost)
        fprintf(stderr, "mprof capture: %" PRIu64 " events were lost (the process's memory cap "
                        "or this tool falling behind -m); they are counted in the capture\n",
                lost);
    if (exit_code == EXIT_OK && lost && c.fail_on_lost)
        exit_code = EXIT_VERDICT;
    return tool_finish("capture", exit_code);
}
