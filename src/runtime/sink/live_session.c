/*
 * live_session.c - a connected tool's session: its queue, the sender thread, and the
 * collector's side that attaches it and delivers chunks to it.
 *
 * Threads: the collector thread produces (never blocking: when the queue is over the tool's
 * limit the chunk is dropped, counted, announced with a LOST record, and the definitions are
 * re-sent before the next delivered chunk); one sender thread per session writes the queue to
 * a non-blocking socket with MSG_NOSIGNAL, so a vanished or stalled tool costs the game nothing
 * but the dropped chunks. The live stream starts on a chunk boundary because the collector
 * closes its chunk before attaching the session. Everything a session shares is under S.m; the
 * session may end at any time on its sender thread, so the collector looks it up again by id
 * under the lock before applying anything to it.
 *
 * How far behind the tool is: the age of the oldest byte of the stream that its side has not
 * acknowledged (the socket's unacknowledged bytes, TIOCOUTQ, against what was handed to it, and
 * the time each chunk was queued; a chunk still in the queue counts from when it was queued). A
 * tool that reads slowly but steadily falls behind as surely as one that reads nothing, and no
 * trickle of reads resets the measure: only keeping up does.
 */
#include "live_session.h"
#include "config.h"
#include "live_defs.h"
#include "live_ring.h"
#include "platform/platform.h"
#include "stats.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define SHUTDOWN_FLUSH_MS 2000
#define DEFAULT_QUEUE_MIB 64
/* Replies are small and go to a fresh socket's buffer, so REPLY_MS is plenty. */
#define REPLY_MS 250
/* A session whose tool is more than SESSION_LAG_MS behind is ended; one more than
 * PREEMPT_LAG_MS behind gives its place to a new tool that asks (docs/CAPTURE.md). */
#define SESSION_LAG_MS 10000
#define PREEMPT_LAG_MS 1000
/* Chunks handed to the socket and not yet known to be acknowledged, with when each was queued. */
#define LAG_SPANS 512

typedef mprof__live_blob blob;

typedef struct qitem {
    blob *b;
    uint64_t enq_ns; /* when it was queued: its bytes are behind from then until acknowledged */
    struct qitem *next;
} qitem;

/* The sender's record of the stream it handed to the socket: span k covers the stream's bytes
 * up to q[k].end and was queued at q[k].enq_ns. */
typedef struct lag_meter {
    uint64_t planned; /* the end of the last span */
    uint64_t sent;    /* bytes the socket took */
    struct {
        uint64_t end, enq_ns;
    } q[LAG_SPANS];
    unsigned head, n;
    int blind; /* the system cannot say what is unacknowledged: taken counts as acknowledged */
} lag_meter;

typedef struct mprof__live_session {
    int fd;
    pthread_t thread;
    mprof_wire_hello hello;
    size_t limit_bytes;
    /* Under S.m. */
    qitem *head, *tail;
    size_t queued_bytes;
    int attached, closing;
    _Atomic int shutdown;
    uint64_t id;
    uint64_t dropped_chunks, dropped_events;
    uint64_t lost_at_attach; /* mprof__stats.events_lost when the stream began */
    int need_defs;            /* re-send definitions before the next delivered chunk */
    uint64_t unannounced_lost; /* dropped events not yet written as a LOST record */
    /* Sender thread writes, listener reads: when the oldest byte the tool has not acknowledged
     * was queued (0 while nothing is pending), and a request to drop the session. */
    _Atomic uint64_t behind_since_ns;
    _Atomic int evict;
    lag_meter *lag; /* the sender's; NULL for a reply on a fresh connection */
    int cut;        /* sender: ended behind or evicted, so what the socket still holds is dropped */
} session;

static struct {
    pthread_mutex_t m;
    session *pending, *active, *reap; /* under m */
    uint64_t next_session_id;         /* under m */
    /* Set before the listener starts, read-only while it runs. */
    int has_file;                     /* a file sink keeps the process recording */
    double history_s;                 /* > 0: the history ring keeps it recording */
    void (*set_recording)(int on);
} S = {.m = PTHREAD_MUTEX_INITIALIZER};

void mprof__live_sessions_open(int has_file, double history_s, void (*set_recording)(int on))
{
    S.has_file = has_file;
    S.history_s = history_s;
    S.set_recording = set_recording;
}

/* ---- session queue (under S.m) ------------------------------------------------------------- */

/* The sender polls its socket every 20 ms while the queue is empty, so it needs no wake-up: a
 * chunk waits at most that long, and the collector never signals anything. */

static int enqueue_locked(session *s, blob *b)
{
    qitem *q = malloc(sizeof *q);
    if (!q)
        return -1;
    mprof__live_blob_ref(b);
    q->b = b;
    q->enq_ns = mprof__mono_ns();
    q->next = NULL;
    if (s->tail)
        s->tail->next = q;
    else
        s->head = q;
    s->tail = q;
    s->queued_bytes += b->len;
    return 0;
}

static void queue_clear_locked(session *s)
{
    while (s->head) {
        qitem *q = s->head;
        s->head = q->next;
        mprof__live_blob_unref(q->b);
        free(q);
    }
    s->tail = NULL;
    s->queued_bytes = 0;
}

/* ---- the collector's side ------------------------------------------------------------------ */

static int always_recording(void)
{
    return S.has_file || S.history_s > 0;
}


int mprof__live_session_pending(void)
{
    pthread_mutex_lock(&S.m);
    int p = S.pending != NULL;
    pthread_mutex_unlock(&S.m);
    return p;
}

int mprof__live_session_streaming(void)
{
    pthread_mutex_lock(&S.m);
    int on = S.active && S.active->attached && !S.active->closing;
    pthread_mutex_unlock(&S.m);
    return on;
}

void mprof__live_session_attach(void)
{
    pthread_mutex_lock(&S.m);
    session *s = S.pending;
    S.pending = NULL;
    mprof_wire_hello hello = s ? s->hello : (mprof_wire_hello){0};
    uint64_t id = s ? s->id : 0;
    size_t limit = s ? s->limit_bytes : 0;
    pthread_mutex_unlock(&S.m);
    if (!s)
        return;
    /* History is chosen newest-first within half the tool's limit, then sent oldest-first.
     * History kept unframed while nobody could read it is compressed first, now that a tool
     * asks (so the limit applies to what is sent; the ring keeps the framed form, for the next
     * tool). A chunk that cannot be compressed (out of memory) is dropped and counted. */
    mprof__live_pick hist = {0};
    if ((hello.flags & MPROF_WIRE_F_HISTORY) && hello.history_ms)
        mprof__live_ring_pick((uint64_t)hello.history_ms * 1000000u, limit / 2, &hist);
    /* Sticky events are stamped with the start of what the tool receives: the production time
     * of the chunk before the first history chunk sent, or now without history. */
    uint64_t ts = mprof__ticks();
    if (hist.first)
        ts = hist.start_ticks;
    blob *d = mprof__live_defs_blob(ts, 0);
    pthread_mutex_lock(&S.m);
    s = S.active;
    if (s && s->id == id && !s->closing) {
        if (!d || enqueue_locked(s, d) != 0)
            s->need_defs = 1; /* out of memory: the next delivered chunk carries them */
        s->dropped_chunks += hist.n_raw_failed; /* could not be compressed: out of memory */
        s->dropped_events += hist.raw_failed.events;
        if (hist.raw_failed.events) {
            /* A LOST record before the next chunk. */
            s->unannounced_lost += hist.raw_failed.events;
            s->need_defs = 1;
        }
        size_t n_hist = hist.n;
        for (mprof__live_hnode *h = hist.first; h && n_hist; h = h->next, n_hist--)
            if (h->b->raw || enqueue_locked(s, h->b) != 0)
                s->dropped_chunks += h->b->raw ? 0 : 1;
        s->lost_at_attach = atomic_load(&mprof__stats.events_lost);
        s->attached = 1;
        if (!always_recording())
            S.set_recording(1);
    }
    pthread_mutex_unlock(&S.m);
    mprof__live_blob_unref(d);
}


/* framed NULL with lazy set: keep the raw payload (history nobody may read yet). */
void mprof__live_deliver(const mprof__chunk *c, const mprof_buf *framed, int lazy)
{
    uint64_t events = c->events;
    blob *b = lazy     ? mprof__live_raw_blob_new(c->raw->data, c->raw->len)
              : framed ? mprof__live_blob_new(framed->data, framed->len)
                       : NULL;
    if (!b) {
        /* Out of memory: a connected tool misses this chunk, which is counted as a drop. */
        pthread_mutex_lock(&S.m);
        session *s = S.active;
        if (s && s->attached && !s->closing) {
            s->dropped_chunks++;
            s->dropped_events += events;
            s->unannounced_lost += events;
            s->need_defs = 1;
        }
        pthread_mutex_unlock(&S.m);
        return;
    }
    b->events = events;
    b->flags = c->flags;
    b->marks = c->marks;
    if (S.history_s > 0)
        mprof__live_ring_push(b);
    /* The session may end at any time on its sender thread: it is looked up again by id under
     * the lock before anything is applied to it. The slow parts run outside the lock. */
    pthread_mutex_lock(&S.m);
    session *s = S.active;
    int live = s && s->attached && !s->closing;
    uint64_t id = live ? s->id : 0, lost = live ? s->unannounced_lost : 0;
    /* An empty queue takes any chunk, so a limit below one chunk's size still delivers. */
    int fits = live && (s->queued_bytes == 0 || s->queued_bytes + b->len <= s->limit_bytes);
    int need_defs = live && s->need_defs;
    pthread_mutex_unlock(&S.m);
    if (!live || b->raw) {
        /* A raw blob is only made while no tool is attached, and only the collector thread
         * attaches one, so a raw blob never reaches a queue. */
        mprof__live_blob_unref(b);
        return;
    }
    blob *d = NULL;
    if (fits && need_defs && !(d = mprof__live_defs_blob(mprof__ticks(), lost)))
        fits = 0; /* out of memory: the chunk cannot be delivered decodable, so drop it */
    pthread_mutex_lock(&S.m);
    s = S.active;
    if (s && s->id == id && !s->closing) {
        if (!fits) {
            /* The tool cannot keep up: drop this chunk, count its events, and re-send the
             * definitions it may have carried before the next chunk that is delivered. */
            s->dropped_chunks++;
            s->dropped_events += events;
            s->unannounced_lost += events;
            s->need_defs = 1;
        } else {
            int defs_ok = !d || enqueue_locked(s, d) == 0;
            if (d && defs_ok) {
                s->need_defs = 0;
                s->unannounced_lost -= lost;
            }
            if (!defs_ok || enqueue_locked(s, b) != 0) {
                /* Out of memory for a queue entry: the same as a drop. */
                s->dropped_chunks++;
                s->dropped_events += events;
                s->unannounced_lost += events;
                s->need_defs = 1;
            }
        }
    }
    pthread_mutex_unlock(&S.m);
    mprof__live_blob_unref(d);
    mprof__live_blob_unref(b);
}

/* ---- the sender ---------------------------------------------------------------------------- */

/* A span of len bytes queued at enq_ns is handed to the socket. A full record merges it into
 * the newest span, which keeps the older time: the lag is then over- rather than understated. */
static void lag_push(lag_meter *m, size_t len, uint64_t enq_ns)
{
    m->planned += len;
    if (m->n == LAG_SPANS) {
        m->q[(m->head + m->n - 1) % LAG_SPANS].end = m->planned;
        return;
    }
    unsigned k = (m->head + m->n++) % LAG_SPANS;
    m->q[k].end = m->planned;
    m->q[k].enq_ns = enq_ns;
}

/* When the oldest byte the tool has not acknowledged was queued: in a span handed to the
 * socket, else the queue's head; 0 when nothing is pending. Sender thread. */
static uint64_t lag_oldest(session *s)
{
    lag_meter *m = s->lag;
    uint64_t unacked = 0;
    if (!m->blind && mprof__socket_unacked(s->fd, &unacked) != 0)
        m->blind = 1;
    uint64_t acked = unacked < m->sent ? m->sent - unacked : 0;
    while (m->n && m->q[m->head].end <= acked) {
        m->head = (m->head + 1) % LAG_SPANS;
        m->n--;
    }
    if (m->n)
        return m->q[m->head].enq_ns;
    pthread_mutex_lock(&S.m);
    uint64_t t = s->head ? s->head->enq_ns : 0;
    pthread_mutex_unlock(&S.m);
    return t;
}

/* Publishes how far behind the tool is; -1 when it is more than SESSION_LAG_MS behind, or was
 * asked to give its place to a new tool. */
static int lag_check(session *s)
{
    if (atomic_load(&s->evict)) {
        s->cut = 1;
        return -1;
    }
    if (!s->lag)
        return 0;
    uint64_t oldest = lag_oldest(s), now = mprof__mono_ns();
    atomic_store(&s->behind_since_ns, oldest);
    if (oldest && now > oldest && now - oldest > (uint64_t)SESSION_LAG_MS * 1000000u) {
        mprof__log("the capture tool fell %.1f s behind the stream; its session is ended",
                   (double)(now - oldest) / 1e9);
        s->cut = 1;
        return -1;
    }
    return 0;
}

/* Sends len bytes, queued at enq_ns. Returns 0, or -1 when the peer is gone, falls too far
 * behind or is evicted, or (give_up_ns != 0) time ran out. While waiting it reads what the tool
 * sends: a STOP byte sets *stop; EOF means gone. */
static int send_all(session *s, const unsigned char *p, size_t len, uint64_t enq_ns,
                    uint64_t give_up_ns, int *stop)
{
    if (s->lag)
        lag_push(s->lag, len, enq_ns);
    while (len) {
        ssize_t n = send(s->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            if (s->lag)
                s->lag->sent += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        /* The socket is full: a tool that falls behind by more than SESSION_LAG_MS is gone
         * (or one evicted for a new tool), else a client that reads nothing, or a trickle,
         * would hold the only session for as long as it likes. */
        if (lag_check(s) != 0)
            return -1;
        if (!give_up_ns && atomic_load(&s->shutdown))
            give_up_ns = mprof__mono_ns() + (uint64_t)SHUTDOWN_FLUSH_MS * 1000000u;
        if (give_up_ns && mprof__mono_ns() > give_up_ns)
            return -1;
        struct pollfd pf = {.fd = s->fd, .events = POLLOUT | POLLIN};
        if (poll(&pf, 1, 100) > 0 && (pf.revents & (POLLIN | POLLHUP | POLLERR))) {
            unsigned char c[64];
            ssize_t r = recv(s->fd, c, sizeof c, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
                return -1;
            for (ssize_t i = 0; i < r; i++)
                if (c[i] == MPROF_WIRE_STOP)
                    *stop = 1;
        }
    }
    return 0;
}

/* What the sender delivered, counted as the reader counts a capture, so that END can carry the
 * counts the reader checks the file against: a chunk lost between here and the file (or cut
 * out of the file later) is then reported missing, as for an in-process capture. */
typedef struct sent_counts {
    uint64_t chunks, events;
    int events_unknown; /* a delivered chunk could not be counted (out of memory) */
    uint64_t process_chunks;  /* delivered with MPROF_CHUNK_F_PROCESS */
    mprof__chunk_marks marks; /* the main frames of what was delivered, summed */
    mprof_buf raw;      /* scratch: the last payload */
    void *dctx;         /* ZSTD_DCtx, made on first use */
} sent_counts;

/* Adds a chunk that was sent whole. A chunk of the collector's comes with its count; any other
 * (the definitions chunk, made rarely) is decompressed and walked, which costs the sender about
 * what the tool spends on the same chunk. */
static void count_sent(sent_counts *sc, const blob *b)
{
    mprof_wire_chunk ch;
    size_t used;
    sc->chunks++;
    if (b->flags & MPROF_CHUNK_F_PROCESS)
        sc->process_chunks++;
    if (b->events != MPROF__LIVE_EVENTS_UNKNOWN) {
        sc->events += b->events;
        const mprof__chunk_marks *m = &b->marks;
        mprof__chunk_marks *t = &sc->marks;
        t->others += m->others;
        if (!m->marks)
            return;
        if (t->marks && m->thread != t->thread)
            t->others += m->marks; /* not the thread that made the file's first mark */
        else {
            if (!t->marks || m->first_ticks < t->first_ticks)
                t->first_ticks = m->first_ticks;
            if (!t->marks || m->last_ticks > t->last_ticks)
                t->last_ticks = m->last_ticks;
            t->thread = m->thread;
            t->marks += m->marks;
        }
        return;
    }
    if (mprof_wire_next_chunk(b->data, b->len, &ch, &used, NULL, 0) != MPROF_WIRE_DONE) {
        sc->events_unknown = 1;
        return;
    }
    if (ch.kind != MPROF_CHUNK_EVENTS)
        return;
    if (!sc->dctx)
        sc->dctx = ZSTD_createDCtx(); /* NULL: a context per call, slower but the same */
    mprof_wire_counts c = {0};
    if (mprof_wire_chunk_payload(&ch, &sc->raw, sc->dctx, NULL, 0) != 0 ||
        mprof_wire_scan_events(sc->raw.data, sc->raw.len, &c, NULL, 0) != 0)
        sc->events_unknown = 1;
    sc->events += c.events;
}

static blob *end_blob(session *s, const char *why, const sent_counts *sc)
{
    mprof_buf kv = {0}, fr = {0};
    char v[64];
    /* The chunks before END in the tool's file: its INFO chunk (made from the handshake reply)
     * and every chunk delivered; the events in them, as mprof_event_counted counts. */
    snprintf(v, sizeof v, "%" PRIu64, sc->chunks + 1);
    mprof_fmt_kv(&kv, "chunks", v);
    if (!sc->events_unknown) {
        snprintf(v, sizeof v, "%" PRIu64, sc->events);
        mprof_fmt_kv(&kv, "events", v);
    }
    /* The process chunks and main frames of what was delivered, as an in-process END gives
     * them, so that a reader's first read takes the process chunks alone. Left out when a
     * delivered chunk could not be counted, or when another thread made unnamed marks (then the
     * main frames are the reader's to find): the reader then reads the whole file. */
    const mprof__chunk_marks *m = &sc->marks;
    if (!sc->events_unknown && !m->others) {
        snprintf(v, sizeof v, "%" PRIu64, sc->process_chunks);
        mprof_fmt_kv(&kv, "process_chunks", v);
        if (m->marks) {
            snprintf(v, sizeof v, "%" PRIu32, m->thread);
            mprof_fmt_kv(&kv, "main_frame_thread", v);
            snprintf(v, sizeof v, "%" PRIu64, m->marks);
            mprof_fmt_kv(&kv, "main_frame_marks", v);
            snprintf(v, sizeof v, "%" PRIu64, m->first_ticks);
            mprof_fmt_kv(&kv, "main_frame_first_ticks", v);
            snprintf(v, sizeof v, "%" PRIu64, m->last_ticks);
            mprof_fmt_kv(&kv, "main_frame_last_ticks", v);
        }
    }
    pthread_mutex_lock(&S.m);
    uint64_t dropped = s->dropped_events, dchunks = s->dropped_chunks;
    pthread_mutex_unlock(&S.m);
    uint64_t lost = atomic_load(&mprof__stats.events_lost) - s->lost_at_attach + dropped;
    snprintf(v, sizeof v, "%" PRIu64, lost);
    mprof_fmt_kv(&kv, "events_lost", v);
    snprintf(v, sizeof v, "%" PRIu64, dropped);
    mprof_fmt_kv(&kv, "live_events_dropped", v);
    snprintf(v, sizeof v, "%" PRIu64, dchunks);
    mprof_fmt_kv(&kv, "live_chunks_dropped", v);
    snprintf(v, sizeof v, "%" PRIu64, mprof__ticks());
    mprof_fmt_kv(&kv, "end_ticks", v);
    mprof_fmt_kv(&kv, "ended_by", why);
    blob *b = NULL;
    if (mprof_fmt_chunk(&fr, MPROF_CHUNK_END, kv.data, kv.len, 0, NULL) == 0)
        b = mprof__live_blob_new(fr.data, fr.len);
    mprof_buf_free(&kv);
    mprof_buf_free(&fr);
    return b;
}

static void *sender_main(void *arg)
{
    session *s = arg;
    mprof__set_os_thread_name("mprof-sender");
    lag_meter *lag = calloc(1, sizeof *lag);
    pthread_mutex_lock(&S.m);
    s->lag = lag; /* NULL when out of memory: the session then goes without the lag limit */
    pthread_mutex_unlock(&S.m);
    int stop = 0, gone = 0;
    uint64_t deadline = 0;
    sent_counts sc = {0};
    for (;;) {
        pthread_mutex_lock(&S.m);
        if (stop && !s->closing)
            s->closing = 1; /* the collector stops handing chunks; the queue is flushed */
        if (atomic_load(&s->shutdown) && !deadline)
            deadline = mprof__mono_ns() + (uint64_t)SHUTDOWN_FLUSH_MS * 1000000u;
        qitem *q = s->head;
        if (q) {
            s->head = q->next;
            if (!s->head)
                s->tail = NULL;
        }
        int closing = s->closing;
        pthread_mutex_unlock(&S.m);
        if (!q) {
            if (closing)
                break;
            /* What was sent may still be unacknowledged: the lag keeps counting, and a new tool
             * may ask for the place of one that is behind. */
            if (lag_check(s) != 0) {
                gone = 1;
                break;
            }
            /* Nothing to send: watch the socket for STOP or EOF for a little while. */
            struct pollfd pf = {.fd = s->fd, .events = POLLIN};
            if (poll(&pf, 1, 20) > 0) {
                unsigned char c[64];
                ssize_t r = recv(s->fd, c, sizeof c, MSG_DONTWAIT);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                    gone = 1;
                    break;
                }
                for (ssize_t i = 0; i < r; i++)
                    if (c[i] == MPROF_WIRE_STOP)
                        stop = 1;
            }
            continue;
        }
        int rc = send_all(s, q->b->data, q->b->len, q->enq_ns, deadline, &stop);
        if (rc == 0)
            count_sent(&sc, q->b);
        if (rc == 0 && lag_check(s) != 0)
            rc = -1;
        pthread_mutex_lock(&S.m);
        s->queued_bytes -= q->b->len;
        pthread_mutex_unlock(&S.m);
        mprof__live_blob_unref(q->b);
        free(q);
        if (rc != 0) {
            gone = 1;
            break;
        }
    }
    pthread_mutex_lock(&S.m);
    s->closing = 1;
    queue_clear_locked(s);
    pthread_mutex_unlock(&S.m);
    if (!gone) {
        blob *e = end_blob(s, atomic_load(&s->shutdown) ? "process-exit" : "tool-stop", &sc);
        if (e && send_all(s, e->data, e->len, mprof__mono_ns(),
                          mprof__mono_ns() + (uint64_t)SHUTDOWN_FLUSH_MS * 1000000u, &stop) != 0)
            gone = 1;
        mprof__live_blob_unref(e);
        /* Let the tool read everything before the socket goes away. */
        shutdown(s->fd, SHUT_WR);
        uint64_t until = mprof__mono_ns() + 1000000000ull;
        while (!gone && mprof__mono_ns() < until) {
            struct pollfd pf = {.fd = s->fd, .events = POLLIN};
            if (poll(&pf, 1, 50) > 0) {
                unsigned char c[64];
                ssize_t r = recv(s->fd, c, sizeof c, MSG_DONTWAIT);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
                    break;
            }
        }
    }
    if (gone) {
        atomic_fetch_add(&mprof__stats.sessions_dropped, 1);
        if (mprof__config.verbose == MPROF_TOGGLE_ON)
            mprof__log("the capture tool went away; the session is closed");
    }
    mprof_buf_free(&sc.raw);
    ZSTD_freeDCtx(sc.dctx);
    pthread_mutex_lock(&S.m);
    s->lag = NULL;
    pthread_mutex_unlock(&S.m);
    free(lag);
    if (s->cut) {
        /* A reset, not an orderly end: the megabytes still in the socket would otherwise keep
         * a slow reader busy, and the tool's next read says at once that the session ended. */
        struct linger now = {1, 0};
        setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
    }
    close(s->fd);
    s->fd = -1;
    pthread_mutex_lock(&S.m);
    if (S.active == s)
        S.active = NULL;
    /* A session that ends before the collector attached it must not be attached later: the
     * listener frees it once reaped. */
    if (S.pending == s)
        S.pending = NULL;
    queue_clear_locked(s); /* anything attached after the first clear */
    S.reap = s;
    /* Under the lock, so a session attaching meanwhile cannot be switched off by this one. */
    if (!S.active && !always_recording())
        S.set_recording(0);
    pthread_mutex_unlock(&S.m);
    return NULL;
}

void mprof__live_session_reap(void)
{
    pthread_mutex_lock(&S.m);
    session *r = S.reap;
    S.reap = NULL;
    pthread_mutex_unlock(&S.m);
    if (r) {
        pthread_join(r->thread, NULL);
        free(r);
    }
}

/* ---- the listener's side ------------------------------------------------------------------- */

void mprof__live_reply(int fd, int status, const void *payload, size_t len)
{
    mprof_buf b = {0};
    if (mprof_wire_encode_reply(&b, (uint16_t)status, payload, len) == 0) {
        session tmp = {.fd = fd};
        int stop = 0;
        send_all(&tmp, b.data, b.len, 0, mprof__mono_ns() + (uint64_t)REPLY_MS * 1000000u, &stop);
    }
    mprof_buf_free(&b);
}

/* True when the active session's tool is more than PREEMPT_LAG_MS behind: it is asked to go,
 * and this waits (briefly) until it has. Listener thread. */
int mprof__live_session_evict_stalled(void)
{
    pthread_mutex_lock(&S.m);
    session *a = S.active;
    uint64_t since = a ? atomic_load(&a->behind_since_ns) : 0, now = mprof__mono_ns();
    int stalled = a && since && now > since && now - since > (uint64_t)PREEMPT_LAG_MS * 1000000u;
    if (stalled)
        atomic_store(&a->evict, 1);
    pthread_mutex_unlock(&S.m);
    if (!stalled)
        return 0;
    /* The sender sees evict within its 100 ms poll. */
    for (int i = 0; i < 50; i++) {
        pthread_mutex_lock(&S.m);
        int gone = S.active != a;
        pthread_mutex_unlock(&S.m);
        if (gone)
            return 1;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int mprof__live_session_busy(void)
{
    pthread_mutex_lock(&S.m);
    int busy = S.active != NULL;
    pthread_mutex_unlock(&S.m);
    return busy;
}

mprof__live_session *mprof__live_session_new(int fd, const mprof_wire_hello *hello)
{
    session *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fd = fd;
    s->hello = *hello;
    atomic_init(&s->shutdown, 0);
    atomic_init(&s->behind_since_ns, 0);
    atomic_init(&s->evict, 0);
    /* The tool's -m, but never more than this process's own memory cap. */
    s->limit_bytes = (size_t)(hello->queue_mib ? hello->queue_mib : DEFAULT_QUEUE_MIB) << 20;
    if (s->limit_bytes > mprof__config.memory_limit_bytes)
        s->limit_bytes = mprof__config.memory_limit_bytes;
    return s;
}

void mprof__live_session_begin(mprof__live_session *s)
{
    mprof__live_session_reap(); /* S.reap has one slot: empty it before a new session can end */
    pthread_mutex_lock(&S.m);
    s->id = ++S.next_session_id;
    S.active = s;
    S.pending = s;
    pthread_mutex_unlock(&S.m);
    if (pthread_create(&s->thread, NULL, sender_main, s) != 0) {
        pthread_mutex_lock(&S.m);
        S.active = NULL;
        if (S.pending == s)
            S.pending = NULL;
        pthread_mutex_unlock(&S.m);
        /* The collector may have queued chunks meanwhile (it reaches a session only through
         * S.active under the lock, which is cleared now): free them. */
        pthread_mutex_lock(&S.m);
        queue_clear_locked(s);
        pthread_mutex_unlock(&S.m);
        close(s->fd);
        free(s);
    }
}

/* ---- shutdown ------------------------------------------------------------------------------ */

void mprof__live_sessions_close(void)
{
    /* A session that finished its handshake but was not attached yet still gets its stream. */
    if (mprof__live_session_pending())
        mprof__live_session_attach();
    pthread_mutex_lock(&S.m);
    session *s = S.active;
    if (s) {
        atomic_store(&s->shutdown, 1);
        s->closing = 1;
    }
    pthread_mutex_unlock(&S.m);
    if (s) {
        pthread_join(s->thread, NULL);
        pthread_mutex_lock(&S.m);
        if (S.reap == s)
            S.reap = NULL;
        pthread_mutex_unlock(&S.m);
        free(s);
    }
    mprof__live_session_reap();
}
