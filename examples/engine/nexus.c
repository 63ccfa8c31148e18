/*
 * nexus.c - networking: a client and a server exchanging game state over UDP on loopback.
 *
 * Both ends live in this process and bind 127.0.0.1 on ports the kernel picks, so nothing
 * outside the machine is touched and runs never collide. Each frame the client sends an input
 * packet stamped with its send time; the server answers every input with an acknowledgement
 * that echoes the stamp, followed by a snapshot of the souls' positions split into packets of
 * at most 64 entries. The client measures the round trip from the echo. The client's traffic
 * feeds the network-stats helper (include/mprof/netstats.h), which emits the packet rate,
 * bandwidth and RTT plots. Sockets are non-blocking: a frame never waits on the network.
 * The server queues each outgoing packet in a buffer sized to it from a slab allocator
 * ("Nexus::packets", mprof's allocator kit) and frees it once sent.
 */
#include "engine.h"

#include "mprof/alloc.h"
#include "mprof/mprof.h"
#include "mprof/netstats.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PKT_INPUT 1
#define PKT_SNAPSHOT 2
#define SNAP_PER_PACKET 64
#define MAX_PACKET 1400
#define MAX_SNAPSHOT 256
#define MAX_QUEUED (MAX_SNAPSHOT / SNAP_PER_PACKET + 1)

typedef struct out_packet {
    unsigned char *data; /* from the packet slab */
    size_t len;
} out_packet;

static struct {
    int server_fd, client_fd;
    struct sockaddr_in server_addr;
    uint32_t seq;
    uint64_t sent, received, bytes_sent, bytes_received, server_packets;
    uint64_t rtt_sum_ns, rtt_samples;
    mprof_slab *packets;
    out_packet queue[MAX_QUEUED];
    uint32_t n_queued;
    mprof_netstats stats;
} nx = {.server_fd = -1, .client_fd = -1};

static int udp_socket(struct sockaddr_in *bound)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)bound, &len) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int nexus_init(const engine_options *opt)
{
    (void)opt;
    struct sockaddr_in client_addr;
    nx.server_fd = udp_socket(&nx.server_addr);
    nx.client_fd = udp_socket(&client_addr);
    if (nx.server_fd < 0 || nx.client_fd < 0 ||
        connect(nx.client_fd, (struct sockaddr *)&nx.server_addr, sizeof nx.server_addr) != 0) {
        log_msg(ENG_LOG_ERROR, "nexus: cannot open UDP sockets on 127.0.0.1: %s", strerror(errno));
        nexus_shutdown();
        return -1;
    }
    mprof_slab_desc sd = {.name = "Nexus::packets", .max_size = 2048};
    if (mprof_slab_create(&sd, &nx.packets) != MPROF_OK) {
        log_msg(ENG_LOG_ERROR, "nexus: out of memory for the packet slab");
        nexus_shutdown();
        return -1;
    }
    MPROF_NETSTATS_INIT(&nx.stats, NULL);
    log_msg(ENG_LOG_INFO, "nexus: server on 127.0.0.1:%u, client on 127.0.0.1:%u",
            ntohs(nx.server_addr.sin_port), ntohs(client_addr.sin_port));
    return 0;
}

void nexus_shutdown(void)
{
    if (nx.server_fd >= 0)
        close(nx.server_fd);
    if (nx.client_fd >= 0)
        close(nx.client_fd);
    mprof_slab_destroy(nx.packets);
    nx.packets = NULL;
    if (nx.sent)
        log_msg(ENG_LOG_INFO,
                "nexus: %llu packets sent, %llu received (%llu bytes in), mean rtt %.1f us",
                (unsigned long long)nx.sent, (unsigned long long)nx.received,
                (unsigned long long)nx.bytes_received,
                nx.rtt_samples ? (double)nx.rtt_sum_ns / (double)nx.rtt_samples / 1e3 : 0.0);
    nx.server_fd = nx.client_fd = -1;
}

static void client_send(uint64_t frame)
{
    MPROF_ZONE_C("Nexus::client_send", MPROF_COLOR_NETWORK);
    unsigned char p[64];
    memset(p, 0, sizeof p);
    p[0] = PKT_INPUT;
    uint32_t seq = ++nx.seq;
    uint64_t now = eng_now_ns();
    memcpy(p + 1, &seq, 4);
    memcpy(p + 5, &now, 8);
    for (int i = 13; i < (int)sizeof p; i++) /* the "input": a few axes and buttons */
        p[i] = (unsigned char)(frame * 31u + (unsigned)i);
    ssize_t n = send(nx.client_fd, p, sizeof p, 0);
    if (n > 0) {
        nx.sent++;
        nx.bytes_sent += (uint64_t)n;
        MPROF_NETSTATS_SENT(&nx.stats, (size_t)n);
    }
}

static void server_update(void)
{
    MPROF_ZONE_C("Nexus::server", MPROF_COLOR_NETWORK);
    unsigned char in[MAX_PACKET];
    struct sockaddr_in from;
    socklen_t fromlen = sizeof from;
    soul_view views[MAX_SNAPSHOT];
    uint32_t n_views = souls_views(views, MAX_SNAPSHOT);
    for (;;) {
        ssize_t n = recvfrom(nx.server_fd, in, sizeof in, 0, (struct sockaddr *)&from, &fromlen);
        if (n < 13 || in[0] != PKT_INPUT)
            break;
        nx.server_packets++;
        /* Snapshot packets: [type][ack seq u32][echo u64][first u16][count u16][entries]. */
        for (uint32_t first = 0; first == 0 || first < n_views; first += SNAP_PER_PACKET) {
            uint16_t count = (uint16_t)(n_views - first < SNAP_PER_PACKET ? n_views - first
                                                                           : SNAP_PER_PACKET);
            uint16_t first16 = (uint16_t)first;
            unsigned char *out = mprof_slab_alloc(nx.packets, 17u + 16u * count);
            if (!out || nx.n_queued == MAX_QUEUED) {
                mprof_slab_free(nx.packets, out);
                break;
            }
            out[0] = PKT_SNAPSHOT;
            memcpy(out + 1, in + 1, 12); /* seq and echoed send time */
            memcpy(out + 13, &first16, 2);
            memcpy(out + 15, &count, 2);
            unsigned char *e = out + 17;
            for (uint32_t i = 0; i < count; i++, e += 16) {
                const soul_view *v = &views[first + i];
                memcpy(e, &v->id, 4);
                memcpy(e + 4, &v->pos.x, 4);
                memcpy(e + 8, &v->pos.z, 4);
                memcpy(e + 12, &v->color, 4);
            }
            nx.queue[nx.n_queued++] = (out_packet){out, (size_t)(e - out)};
            if (n_views == 0)
                break;
        }
        /* Flush this client's queue: send, then give each buffer back to the slab. */
        for (uint32_t i = 0; i < nx.n_queued; i++) {
            sendto(nx.server_fd, nx.queue[i].data, nx.queue[i].len, 0, (struct sockaddr *)&from,
                   fromlen);
            mprof_slab_free(nx.packets, nx.queue[i].data);
        }
        nx.n_queued = 0;
    }
}

static void client_receive(void)
{
    MPROF_ZONE_C("Nexus::client_receive", MPROF_COLOR_NETWORK);
    unsigned char p[MAX_PACKET];
    for (;;) {
        ssize_t n = recv(nx.client_fd, p, sizeof p, 0);
        if (n < 17 || p[0] != PKT_SNAPSHOT)
            break;
        nx.received++;
        nx.bytes_received += (uint64_t)n;
        MPROF_NETSTATS_RECEIVED(&nx.stats, (size_t)n);
        uint16_t first;
        memcpy(&first, p + 13, 2);
        if (first == 0) { /* the first packet of a reply carries the round trip */
            uint64_t sent_ns, now = eng_now_ns();
            memcpy(&sent_ns, p + 5, 8);
            if (now >= sent_ns) {
                nx.rtt_sum_ns += now - sent_ns;
                nx.rtt_samples++;
                MPROF_NETSTATS_RTT(&nx.stats, now - sent_ns);
            }
        }
    }
}

void nexus_frame(uint64_t frame)
{
    if (nx.client_fd < 0)
        return;
    MPROF_ZONE_C("Nexus::frame", MPROF_COLOR_NETWORK);
    uint64_t t0 = eng_slow_begin();
    client_send(frame);
    server_update();
    client_receive();
    MPROF_NETSTATS_TICK(&nx.stats, eng_now_ns());
    eng_slowdown(ENG_SYS_NEXUS, t0);
}

uint64_t nexus_packets_received(void)
{
    return nx.received;
}
