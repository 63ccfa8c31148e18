/*
 * live_listener.c - the listener of live capture: accepts `mprof capture` and does handshakes.
 *
 * One thread polls the listening socket and the connections whose hello is being read. Every
 * pending connection is accepted (at most ACCEPTS_PER_S a second, in bursts of ACCEPT_BURST, so
 * that a flood costs the game a bounded, small share of a core) and its hello read at once: a
 * real tool sends it with its connect, so it is answered on the spot, whatever idle or half-open
 * connections came before it. Those wait in up to MAX_HANDSHAKES slots, each until HANDSHAKE_MS
 * after its accept; when the slots are full, a new connection takes the place of the oldest,
 * which has had the longest time to say something. A hello that checks out gets the INFO keys in
 * its reply and becomes the session (live_session.c); one that does not is refused with a message
 * the tool prints.
 */
#include "live_listener.h"
#include "config.h"
#include "format/wire.h"
#include "live_session.h"
#include "platform/platform.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HANDSHAKE_MS 2000
#define MAX_HANDSHAKES 64
#define ACCEPTS_PER_S 1000
#define ACCEPT_BURST 256
/* The listen backlog: a burst of connections waits in it rather than having its SYNs dropped (a
 * dropped SYN costs a real tool a one-second retry). */
#define LISTEN_BACKLOG 1024

static struct {
    int listen_fd;
    int wake[2];
    pthread_t thread;
    mprof__kv_list info; /* set before the thread starts */
    double history_s;
} LS = {.listen_fd = -1, .wake = {-1, -1}};

static void refuse(int fd, int status, const char *msg)
{
    mprof__live_reply(fd, status, msg, strlen(msg));
    shutdown(fd, SHUT_WR);
    close(fd);
}

/* A complete hello was read from fd: refuse it or start the session. Listener thread. */
static void handshake_done(int fd, const mprof_wire_hello *hp)
{
    mprof_wire_hello hello = *hp;
    char msg[256];
    if (hello.version != MPROF_WIRE_VERSION) {
        snprintf(msg, sizeof msg,
                 "protocol version mismatch: this process (pid %ld) speaks mprof capture protocol "
                 "%d, the tool speaks %u; use the mprof tool that matches the library",
                 (long)getpid(), MPROF_WIRE_VERSION, (unsigned)hello.version);
        refuse(fd, MPROF_WIRE_VERSION_MISMATCH, msg);
        return;
    }
    int busy = mprof__live_session_busy();
    if (busy && mprof__live_session_evict_stalled()) {
        mprof__live_session_reap();
        busy = mprof__live_session_busy();
    }
    if (busy) {
        snprintf(msg, sizeof msg,
                 "busy: another capture of this process (pid %ld) is in progress; one capture "
                 "session at a time",
                 (long)getpid());
        refuse(fd, MPROF_WIRE_BUSY, msg);
        return;
    }
    mprof__live_session *s = mprof__live_session_new(fd, &hello);
    if (!s) {
        refuse(fd, MPROF_WIRE_BUSY, "out of memory");
        return;
    }
    mprof_buf info = {0};
    mprof__kv_list_write(&LS.info, &info);
    char v[64];
    mprof_fmt_kv(&info, "capture", "live");
    /* The collector writes the process-context records in chunks of their own in every session,
     * and the sender's END counts them (docs/FORMAT.md "Process chunks"). */
    mprof_fmt_kv(&info, "process_chunks", "separate");
    snprintf(v, sizeof v, "%g", LS.history_s > 0 ? LS.history_s : 0.0);
    mprof_fmt_kv(&info, "history_seconds", v);
    mprof__live_reply(fd, MPROF_WIRE_OK, info.data, info.len);
    mprof_buf_free(&info);
    mprof__live_session_begin(s);
}

/* A connection whose hello is being read. */
typedef struct hs_slot {
    int fd;
    uint64_t until_ns;
    size_t got;
    unsigned char h[MPROF_WIRE_HELLO_BYTES];
} hs_slot;

/* Reads what fd has of its hello. 1 when the slot is finished (answered or closed), 0 while
 * more is needed. */
static int hs_progress(hs_slot *h)
{
    ssize_t n = recv(h->fd, h->h + h->got, sizeof h->h - h->got, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        close(h->fd);
        return 1;
    }
    if (n > 0)
        h->got += (size_t)n;
    if (h->got < 10)
        return 0;
    mprof_wire_hello hello;
    char err[160];
    int rc = mprof_wire_decode_hello(h->h, h->got, &hello, err, sizeof err);
    if (rc == MPROF_WIRE_NEED_MORE && h->got < sizeof h->h)
        return 0;
    if (rc != MPROF_WIRE_DONE)
        refuse(h->fd, MPROF_WIRE_BAD_HELLO, err);
    else
        handshake_done(h->fd, &hello);
    return 1;
}

/* The slot of the connection accepted longest ago. */
static int oldest_slot(const hs_slot *slots, int n)
{
    int o = 0;
    for (int i = 1; i < n; i++)
        if (slots[i].until_ns < slots[o].until_ns)
            o = i;
    return o;
}

static void *listener_main(void *arg)
{
    (void)arg;
    mprof__set_os_thread_name("mprof-listener");
    hs_slot slots[MAX_HANDSHAKES];
    int n_slots = 0;
    double tokens = ACCEPT_BURST;
    uint64_t refilled = mprof__mono_ns();
    for (;;) {
        uint64_t now = mprof__mono_ns();
        tokens += (double)(now - refilled) * ACCEPTS_PER_S / 1e9;
        if (tokens > ACCEPT_BURST)
            tokens = ACCEPT_BURST;
        refilled = now;
        /* The listening socket is watched only while a token is free: past the rate, a pending
         * connection waits in the backlog instead of waking this thread again and again. */
        int can_accept = tokens >= 1.0;
        struct pollfd pf[2 + MAX_HANDSHAKES];
        int np = 0;
        pf[np++] = (struct pollfd){.fd = LS.wake[0], .events = POLLIN};
        int li = -1;
        if (can_accept) {
            li = np;
            pf[np++] = (struct pollfd){.fd = LS.listen_fd, .events = POLLIN};
        }
        int first_slot = np;
        int timeout = 200;
        for (int i = 0; i < n_slots; i++) {
            pf[np++] = (struct pollfd){.fd = slots[i].fd, .events = POLLIN};
            int left = slots[i].until_ns > now ? (int)((slots[i].until_ns - now) / 1000000u) + 1 : 0;
            if (left < timeout)
                timeout = left;
        }
        if (!can_accept) {
            int wait_token = (int)((1.0 - tokens) * 1000.0 / ACCEPTS_PER_S) + 1;
            if (wait_token < timeout)
                timeout = wait_token;
        }
        int n = poll(pf, (nfds_t)np, timeout);
        mprof__live_session_reap();
        if (n < 0 && errno != EINTR)
            break;
        if (pf[0].revents)
            break;
        now = mprof__mono_ns();
        /* Handshakes in progress: read, answer, or drop a peer that ran out of time. */
        for (int i = n_slots - 1; i >= 0; i--) {
            int done = 0;
            if (n > 0 && pf[first_slot + i].revents)
                done = hs_progress(&slots[i]);
            if (!done && now >= slots[i].until_ns) {
                close(slots[i].fd);
                done = 1;
            }
            if (done)
                slots[i] = slots[--n_slots];
        }
        if (li < 0 || n <= 0 || !(pf[li].revents & POLLIN))
            continue;
        /* Everything pending, as far as the tokens go. */
        while (tokens >= 1.0) {
            int fd = accept4(LS.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0) {
                /* Out of descriptors: the connection stays pending and poll would return at
                 * once; back off instead of spinning a core. */
                if (errno == EMFILE || errno == ENFILE)
                    poll(&pf[0], 1, 100);
                break;
            }
            tokens -= 1.0;
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            hs_slot h = {.fd = fd, .until_ns = now + (uint64_t)HANDSHAKE_MS * 1000000u};
            /* A real tool's hello came with its connect: answer it now. */
            if (hs_progress(&h))
                continue;
            if (n_slots == MAX_HANDSHAKES) {
                int o = oldest_slot(slots, n_slots);
                close(slots[o].fd);
                slots[o] = slots[--n_slots];
            }
            slots[n_slots++] = h;
        }
    }
    for (int i = 0; i < n_slots; i++)
        close(slots[i].fd);
    return NULL;
}

static int open_listener(void)
{
    char port[16];
    snprintf(port, sizeof port, "%u", (unsigned)mprof__config.listen_port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(mprof__config.listen_address, port, &hints, &res);
    if (gai != 0) {
        mprof__log("live capture disabled: cannot resolve listen address %s: %s",
                   mprof__config.listen_address, gai_strerror(gai));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        /* Non-blocking: the listener takes every pending connection until accept says none. */
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, LISTEN_BACKLOG) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        mprof__log("live capture disabled: cannot listen on %s:%s: %s",
                   mprof__config.listen_address, port, strerror(err));
    return fd;
}

int mprof__live_listener_open(const mprof__kv_list *info, double history_s)
{
    LS.info = *info;
    LS.history_s = history_s;
    LS.listen_fd = open_listener();
    if (LS.listen_fd < 0)
        return -1;
    int piped = pipe2(LS.wake, O_CLOEXEC) == 0;
    if (!piped || pthread_create(&LS.thread, NULL, listener_main, NULL) != 0) {
        mprof__log("live capture disabled: cannot start the listener thread");
        if (piped) {
            close(LS.wake[0]);
            close(LS.wake[1]);
        }
        close(LS.listen_fd);
        LS.listen_fd = -1;
        return -1;
    }
    return 0;
}

void mprof__live_listener_close(void)
{
    if (write(LS.wake[1], "x", 1) < 0)
        mprof__log("cannot wake the listener: %s", strerror(errno));
    pthread_join(LS.thread, NULL);
    close(LS.listen_fd);
    close(LS.wake[0]);
    close(LS.wake[1]);
    LS.listen_fd = LS.wake[0] = LS.wake[1] = -1;
}
