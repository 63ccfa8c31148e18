/*
 * perfetto.c - a capture as a Perfetto protobuf trace, written while the capture is read
 * (perfetto.h; docs/EXPORT.md has the mapping).
 *
 * The trace is a stream of TracePackets, each on a packet sequence: one per capture thread
 * (its zones, messages, plots and memory changes, in the thread's own time order), one per
 * frame set, per lock row and per GPU queue, and one for the system records. A sequence starts
 * with a packet that clears its incremental state, sets its default track and defines its own
 * incremental clock, so each later packet carries only the delta from the previous one, and
 * names and source locations are interned: a zone costs a few bytes for its begin and its end.
 *
 * Zones are written as they happen: a slice's BEGIN when its thread's next event shows that
 * no more annotations (text, name, value) are coming, its END when it ends. So the output is
 * in time order per track, nesting is never ambiguous (a parent's BEGIN always precedes its
 * child's, even at the same nanosecond), and memory holds only the open zones. A packet that
 * must go out of time order on its sequence (a lock span of a row, a zone held back until it
 * reached a --time window) is timed on the absolute clock instead of the delta clock.
 *
 * Contents: output and sequences - interning - descriptors - zones - events - the walker's
 * hooks - the export.
 */
#include "export/perfetto_internal.h"
#include "util/tool.h"
#include "mprof/mprof.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_BYTES (1u << 20)
#define BODIES_PER_SEQ 4096 /* message texts interned per sequence; later ones go inline */
#define NO_TS INT64_MIN

/* ---- output and sequences -------------------------------------------------------------------- */

int pf_flush(pf *x, int force)
{
    if (x->buf.oom)
        return -1;
    if (x->buf.depth || (!force && x->buf.len < FLUSH_BYTES) || !x->buf.len)
        return 0;
    size_t n = fwrite(x->buf.p, 1, x->buf.len, x->out);
    x->st->bytes += n;
    int bad = n != x->buf.len;
    x->buf.len = 0;
    return bad ? -1 : 0;
}

static uint64_t tsv(pf *x, int64_t ts)
{
    if (ts < 0) {
        x->st->clamped_ts++;
        return 0;
    }
    return (uint64_t)ts;
}

uint32_t pf_seq_new(pf *x, int incremental, uint64_t default_track)
{
    if (MPROF_GROW(x->seqs, x->seqs_cap, x->n_seqs + 1, 16) != 0) {
        x->oom = 1;
        return PF_NONE;
    }
    pf_seq *s = &x->seqs[x->n_seqs];
    memset(s, 0, sizeof *s);
    s->id = x->n_seqs + 1;
    s->incremental = incremental;
    s->default_track = default_track;
    s->next_iid = 1;
    return x->n_seqs++;
}

/* The first packet of a sequence: its state starts empty, its default track, and its clock
 * (clock 64 of this sequence, incremental, equal to the trace's boot clock at ts0). */
static void seq_start(pf *x, pf_seq *s, int64_t ts0)
{
    mprof_pb *b = &x->buf;
    s->started = 1;
    mprof__pb_open(b, PF_TRACE_PACKET);
    mprof__pb_varint(b, PF_PKT_SEQUENCE_ID, s->id);
    mprof__pb_varint(b, PF_PKT_SEQUENCE_FLAGS, PF_SEQ_INCREMENTAL_STATE_CLEARED);
    if (s->incremental || s->default_track) {
        mprof__pb_open(b, PF_PKT_DEFAULTS);
        if (s->incremental)
            mprof__pb_varint(b, PF_DEFAULTS_CLOCK_ID, PF_CLOCK_SEQUENCE);
        if (s->default_track) {
            mprof__pb_open(b, PF_DEFAULTS_TRACK_EVENT);
            mprof__pb_varint(b, PF_TE_DEFAULTS_TRACK_UUID, s->default_track);
            mprof__pb_close(b);
        }
        mprof__pb_close(b);
    }
    if (s->incremental) {
        uint64_t t = tsv(x, ts0);
        mprof__pb_open(b, PF_PKT_CLOCK_SNAPSHOT);
        mprof__pb_open(b, PF_CLOCKS);
        mprof__pb_varint(b, PF_CLOCK_ID, PF_CLOCK_SEQUENCE);
        mprof__pb_varint(b, PF_CLOCK_TIMESTAMP, t);
        mprof__pb_varint(b, PF_CLOCK_INCREMENTAL, 1);
        mprof__pb_close(b);
        mprof__pb_open(b, PF_CLOCKS);
        mprof__pb_varint(b, PF_CLOCK_ID, PF_CLOCK_BOOTTIME);
        mprof__pb_varint(b, PF_CLOCK_TIMESTAMP, t);
        mprof__pb_close(b);
        mprof__pb_close(b);
        s->last_ts = (int64_t)t;
    }
    mprof__pb_close(b);
    x->st->packets++;
}

void pf_packet_begin(pf *x, uint32_t si, int64_t ts)
{
    pf_seq *s = &x->seqs[si];
    mprof_pb *b = &x->buf;
    if (!s->started)
        seq_start(x, s, ts == NO_TS ? 0 : ts);
    mprof__pb_open(b, PF_TRACE_PACKET);
    if (ts != NO_TS) {
        uint64_t t = tsv(x, ts);
        if (s->incremental && (int64_t)t >= s->last_ts) {
            mprof__pb_varint(b, PF_PKT_TIMESTAMP, t - (uint64_t)s->last_ts);
            s->last_ts = (int64_t)t;
        } else {
            mprof__pb_varint(b, PF_PKT_TIMESTAMP, t);
            if (s->incremental)
                mprof__pb_varint(b, PF_PKT_TIMESTAMP_CLOCK_ID, PF_CLOCK_BOOTTIME);
        }
    }
    mprof__pb_varint(b, PF_PKT_SEQUENCE_ID, s->id);
}

void pf_packet_end(pf *x)
{
    mprof__pb_close(&x->buf);
    x->st->packets++;
}

/* ---- interning ------------------------------------------------------------------------------- */

static const char *fixed_name(int k)
{
    static const char *const names[PF_FIX_COUNT] = {
        [PF_FIX_TEXT] = "text", [PF_FIX_VALUE] = "value", [PF_FIX_UNFINISHED] = "unfinished",
        [PF_FIX_LOST] = "lost_end", [PF_FIX_SHARED] = "shared", [PF_FIX_LATE_NAME] = "zone_name",
        [PF_FIX_FRAME] = "frame", [PF_FIX_INCOMPLETE] = "incomplete",
        [PF_FIX_WAITING] = "waiting", [PF_FIX_HOLDING] = "holding",
        [PF_FIX_CAT_GPU_SUBMIT] = "gpu_submit", [PF_FIX_CAT_LOCK] = "lock",
        [PF_FIX_CAT_FRAME] = "frame", [PF_FIX_CAT_GPU] = "gpu", [PF_FIX_CAT_LOG] = "log",
        [PF_FIX_LEVEL0 + 1] = "trace", [PF_FIX_LEVEL0 + 2] = "debug",
        [PF_FIX_LEVEL0 + 3] = "info", [PF_FIX_LEVEL0 + 4] = "warn",
        [PF_FIX_LEVEL0 + 5] = "error", [PF_FIX_LEVEL0 + 6] = "fatal"};
    return k >= 0 && k < PF_FIX_COUNT && names[k] ? names[k] : "?";
}

/* Which InternedData field a fixed name belongs to. */
static uint32_t fixed_field(int k)
{
    if (k >= PF_FIX_CAT_GPU_SUBMIT && k <= PF_FIX_CAT_LOG)
        return PF_ID_EVENT_CATEGORIES;
    if (k == PF_FIX_WAITING || k == PF_FIX_HOLDING || k > PF_FIX_LEVEL0)
        return PF_ID_EVENT_NAMES;
    return PF_ID_ANNOTATION_NAMES;
}

static int loc_sent(pf *x, pf_seq *s, uint32_t loc)
{
    if (loc >= s->loc_cap) {
        uint32_t old = s->loc_cap;
        if (loc >= (1u << 24) || MPROF_GROW(s->loc_sent, s->loc_cap, PF_LOC_IID(loc), 256) != 0) {
            x->oom = 1;
            return 1; /* nothing more is written once out of memory */
        }
        memset(s->loc_sent + old, 0, s->loc_cap - old);
    }
    return s->loc_sent[loc];
}

void pf_intern(pf *x, uint32_t si, uint32_t fixed_mask, uint32_t loc)
{
    pf_seq *s = &x->seqs[si];
    mprof_pb *b = &x->buf;
    uint32_t need = fixed_mask & ~s->fixed_sent;
    int need_loc = loc != PF_NONE && !loc_sent(x, s, loc);
    if (!need && !need_loc)
        return;
    mprof__pb_open(b, PF_PKT_INTERNED_DATA);
    if (need_loc) {
        const mprof_srcloc_def *d = mprof_reader_srcloc(x->r, loc);
        mprof__pb_open(b, PF_ID_EVENT_NAMES);
        mprof__pb_varint(b, PF_IID, PF_LOC_IID(loc));
        mprof__pb_str(b, PF_INAME, d && d->name ? d->name : "?");
        mprof__pb_close(b);
        mprof__pb_open(b, PF_ID_SOURCE_LOCATIONS);
        mprof__pb_varint(b, PF_IID, PF_LOC_IID(loc));
        if (d && d->file)
            mprof__pb_str(b, PF_SL_FILE, d->file);
        if (d && d->function)
            mprof__pb_str(b, PF_SL_FUNCTION, d->function);
        if (d && d->line)
            mprof__pb_varint(b, PF_SL_LINE, d->line);
        mprof__pb_close(b);
        s->loc_sent[loc] = 1;
    }
    for (int k = 0; k < PF_FIX_COUNT; k++) {
        if (!(need >> k & 1))
            continue;
        mprof__pb_open(b, fixed_field(k));
        mprof__pb_varint(b, PF_IID, PF_FIX_IID(k));
        mprof__pb_str(b, PF_INAME, fixed_name(k));
        mprof__pb_close(b);
    }
    s->fixed_sent |= need;
    mprof__pb_close(b);
}

static uint64_t hash_str(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ull;
    }
    h ^= h >> 29;
    return h ? h : 1;
}

/* The iid of a message text on sequence si, interning it (in the open interned_data of the
 * packet being written: the caller opened it) when it is new. Past BODIES_PER_SEQ texts a new
 * one gets a fresh iid that is not remembered, so memory stays bounded. */
static uint64_t intern_body(pf *x, uint32_t si, const char *str, uint32_t len, int *opened)
{
    pf_seq *s = &x->seqs[si];
    uint64_t h = hash_str(str, len);
    uint32_t *v = mprof_umap_get(&s->bodies, h);
    if (v)
        return *v;
    uint64_t iid = s->next_iid++;
    if (s->bodies.n < BODIES_PER_SEQ && iid < UINT32_MAX &&
        mprof_umap_put(&s->bodies, h, (uint32_t)iid) != 0)
        x->oom = 1;
    if (!*opened) {
        mprof__pb_open(&x->buf, PF_PKT_INTERNED_DATA);
        *opened = 1;
    }
    mprof__pb_open(&x->buf, PF_ID_LOG_BODIES);
    mprof__pb_varint(&x->buf, PF_IID, iid);
    mprof__pb_bytes(&x->buf, PF_INAME, str, len);
    mprof__pb_close(&x->buf);
    return iid;
}

/* ---- descriptors ----------------------------------------------------------------------------- */

void pf_describe(pf *x, uint64_t uuid, uint64_t parent, const char *name, int counter_unit,
                 int32_t rank)
{
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, 0, NO_TS);
    mprof__pb_open(b, PF_PKT_TRACK_DESCRIPTOR);
    mprof__pb_varint(b, PF_TD_UUID, uuid);
    if (parent)
        mprof__pb_varint(b, PF_TD_PARENT_UUID, parent);
    mprof__pb_str(b, PF_TD_NAME, name);
    if (counter_unit) {
        mprof__pb_open(b, PF_TD_COUNTER);
        if (counter_unit == PF_CD_UNIT_SIZE_BYTES || counter_unit == PF_CD_UNIT_COUNT)
            mprof__pb_varint(b, PF_CD_UNIT, (uint64_t)counter_unit);
        else if (counter_unit < 0)
            mprof__pb_str(b, PF_CD_UNIT_NAME, "%");
        mprof__pb_close(b);
    }
    if (rank != INT32_MIN)
        mprof__pb_int(b, PF_TD_SIBLING_ORDER_RANK, rank);
    mprof__pb_close(b);
    pf_packet_end(x);
}

/* Process k's pid and track uuid (process 0's in a one-process capture). */
static int64_t process_pid(const pf *x, uint32_t k)
{
    return k < x->n_processes ? x->pids[k] : x->pid;
}
static uint64_t process_uuid(const pf *x, uint32_t k)
{
    return k < x->n_processes ? x->process_uuids[k] : x->process_uuid;
}
uint64_t pf_process_uuid(const pf *x, uint32_t k)
{
    return process_uuid(x, k);
}
/* The process of reader thread t. */
static uint32_t thread_process(const pf *x, uint32_t t)
{
    const mprof_thread_def *d = mprof_reader_thread(x->r, t);
    return d ? d->process : 0;
}

static void describe_process_k(pf *x, uint32_t k, const char *name, const char *description)
{
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, 0, NO_TS);
    mprof__pb_open(b, PF_PKT_TRACK_DESCRIPTOR);
    mprof__pb_varint(b, PF_TD_UUID, process_uuid(x, k));
    mprof__pb_open(b, PF_TD_PROCESS);
    mprof__pb_int(b, PF_PD_PID, process_pid(x, k));
    mprof__pb_str(b, PF_PD_PROCESS_NAME, name);
    mprof__pb_close(b);
    if (description)
        mprof__pb_str(b, PF_TD_DESCRIPTION, description);
    mprof__pb_close(b);
    pf_packet_end(x);
}

static const char *thread_name(pf *x, uint32_t t, char *buf, size_t len)
{
    const mprof_thread_def *d = mprof_reader_thread(x->r, t);
    if (d && d->name)
        return d->name;
    snprintf(buf, len, "thread %" PRIu32, t);
    return buf;
}

static void describe_thread(pf *x, uint32_t t)
{
    pf_thread *th = &x->threads[t];
    char buf[64];
    const char *name = thread_name(x, t, buf, sizeof buf);
    if (th->described_name && strcmp(th->described_name, name) == 0)
        return;
    free(th->described_name);
    th->described_name = tool_strndup(name, strlen(name));
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, 0, NO_TS);
    mprof__pb_open(b, PF_PKT_TRACK_DESCRIPTOR);
    mprof__pb_varint(b, PF_TD_UUID, x->ztracks[th->track].uuid);
    mprof__pb_open(b, PF_TD_THREAD);
    mprof__pb_int(b, PF_THD_PID, process_pid(x, thread_process(x, t)));
    mprof__pb_int(b, PF_THD_TID, (int64_t)th->tid);
    mprof__pb_str(b, PF_THD_THREAD_NAME, name);
    mprof__pb_close(b);
    mprof__pb_int(b, PF_TD_SIBLING_ORDER_RANK, (int32_t)t);
    mprof__pb_close(b);
    pf_packet_end(x);
}

/* A synthetic thread id for a capture thread without an OS thread id: above Linux's largest
 * (2^22), so it cannot be taken for a real thread. */
#define SYNTHETIC_TID_BASE 0x40000000u

static uint32_t new_ztrack(pf *x, uint64_t uuid, uint32_t fiber_name, uint32_t thread)
{
    if (MPROF_GROW(x->ztracks, x->ztracks_cap, x->n_ztracks + 1, 16) != 0) {
        x->oom = 1;
        return PF_NONE;
    }
    pf_ztrack *k = &x->ztracks[x->n_ztracks];
    memset(k, 0, sizeof *k);
    k->uuid = uuid;
    k->fiber_name = fiber_name;
    k->thread = thread;
    return x->n_ztracks++;
}

/* The state of capture thread t, created with its track, sequence and descriptor on first use;
 * NULL when out of memory. */
static pf_thread *thread_of(pf *x, uint32_t t)
{
    if (t >= x->threads_cap) {
        uint32_t old = x->threads_cap;
        if (t >= (1u << 20) || MPROF_GROW(x->threads, x->threads_cap, (uint64_t)t + 1, 16) != 0) {
            x->oom = 1;
            return NULL;
        }
        memset(x->threads + old, 0, (x->threads_cap - old) * sizeof *x->threads);
    }
    pf_thread *th = &x->threads[t];
    if (th->used)
        return th;
    uint64_t uuid = pf_uuid(PF_UUID_THREAD, t);
    uint32_t k = new_ztrack(x, uuid, 0, t);
    uint32_t si = k == PF_NONE ? PF_NONE : pf_seq_new(x, 1, uuid);
    if (si == PF_NONE)
        return NULL;
    th = &x->threads[t];
    th->used = 1;
    th->track = k;
    th->seq = si;
    th->fiber = th->pending = PF_NONE;
    const mprof_thread_def *d = mprof_reader_thread(x->r, t);
    th->tid = d && d->os_tid ? d->os_tid : SYNTHETIC_TID_BASE + t;
    describe_thread(x, t);
    return th;
}

static uint32_t fiber_track(pf *x, uint32_t name, uint32_t thread)
{
    uint32_t *v = mprof_umap_get(&x->fiber_tracks, (uint64_t)name + 1);
    if (v)
        return *v;
    uint64_t uuid = pf_uuid(PF_UUID_FIBER, name);
    uint32_t k = new_ztrack(x, uuid, name, thread);
    if (k == PF_NONE || mprof_umap_put(&x->fiber_tracks, (uint64_t)name + 1, k) != 0) {
        x->oom = 1;
        return PF_NONE;
    }
    const char *nm = mprof_reader_string(x->r, name);
    char buf[300];
    snprintf(buf, sizeof buf, "fiber %s", nm ? nm : "?");
    pf_describe(x, uuid, process_uuid(x, thread_process(x, thread)), buf, 0,
                (int32_t)(0x10000 + k));
    return k;
}

/* ---- zones ----------------------------------------------------------------------------------- */

static void annotation_str(mprof_pb *b, int k, const char *s, uint32_t n)
{
    mprof__pb_open(b, PF_TE_DEBUG_ANNOTATIONS);
    mprof__pb_varint(b, PF_DA_NAME_IID, PF_FIX_IID(k));
    mprof__pb_bytes(b, PF_DA_STRING, s, n);
    mprof__pb_close(b);
}

static void annotation_uint(mprof_pb *b, int k, uint64_t v)
{
    mprof__pb_open(b, PF_TE_DEBUG_ANNOTATIONS);
    mprof__pb_varint(b, PF_DA_NAME_IID, PF_FIX_IID(k));
    mprof__pb_varint(b, PF_DA_UINT, v);
    mprof__pb_close(b);
}

static void annotation_bool(mprof_pb *b, int k)
{
    mprof__pb_open(b, PF_TE_DEBUG_ANNOTATIONS);
    mprof__pb_varint(b, PF_DA_NAME_IID, PF_FIX_IID(k));
    mprof__pb_varint(b, PF_DA_BOOL, 1);
    mprof__pb_close(b);
}

static void clear_annotations(pf_open *z)
{
    free(z->name);
    free(z->text);
    z->name = z->text = NULL;
    z->has_value = z->late_name = 0;
}

static void write_begin(pf *x, uint32_t si, pf_ztrack *k, pf_open *z)
{
    mprof_pb *b = &x->buf;
    uint32_t mask = (z->text ? 1u << PF_FIX_TEXT : 0) | (z->has_value ? 1u << PF_FIX_VALUE : 0);
    pf_packet_begin(x, si, z->start);
    pf_intern(x, si, mask, z->loc);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_SLICE_BEGIN);
    if (k->uuid != x->seqs[si].default_track)
        mprof__pb_varint(b, PF_TE_TRACK_UUID, k->uuid);
    if (z->name)
        mprof__pb_bytes(b, PF_TE_NAME, z->name, z->name_len);
    else
        mprof__pb_varint(b, PF_TE_NAME_IID, PF_LOC_IID(z->loc));
    mprof__pb_varint(b, PF_TE_SOURCE_LOCATION_IID, PF_LOC_IID(z->loc));
    if (z->text)
        annotation_str(b, PF_FIX_TEXT, z->text, z->text_len);
    if (z->has_value)
        annotation_uint(b, PF_FIX_VALUE, z->value);
    mprof__pb_close(b);
    pf_packet_end(x);
    clear_annotations(z);
    z->state = PF_Z_WRITTEN;
    x->st->zones++;
}

/* how: 0 ended, PF_FIX_UNFINISHED, PF_FIX_LOST. */
static void write_end(pf *x, uint32_t si, pf_ztrack *k, pf_open *z, int64_t ts, int how)
{
    mprof_pb *b = &x->buf;
    uint32_t mask = (z->text ? 1u << PF_FIX_TEXT : 0) | (z->has_value ? 1u << PF_FIX_VALUE : 0) |
                    (z->late_name ? 1u << PF_FIX_LATE_NAME : 0) | (how ? 1u << how : 0);
    pf_packet_begin(x, si, ts);
    pf_intern(x, si, mask, PF_NONE);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_SLICE_END);
    if (k->uuid != x->seqs[si].default_track)
        mprof__pb_varint(b, PF_TE_TRACK_UUID, k->uuid);
    /* Annotations that came after the BEGIN was written: the END's are merged into the slice. */
    if (z->text)
        annotation_str(b, PF_FIX_TEXT, z->text, z->text_len);
    if (z->has_value)
        annotation_uint(b, PF_FIX_VALUE, z->value);
    if (z->late_name && z->name)
        annotation_str(b, PF_FIX_LATE_NAME, z->name, z->name_len);
    if (how)
        annotation_bool(b, how);
    mprof__pb_close(b);
    pf_packet_end(x);
    clear_annotations(z);
}

/* The sequence that writes for track k now: its thread's (a fiber's last thread's). */
static uint32_t track_seq(pf *x, pf_ztrack *k)
{
    return x->threads[k->thread].seq;
}

/* Zones of track k held back before a --time window: written now that the track reached ts. */
static void catch_up(pf *x, pf_ztrack *k, int64_t ts)
{
    if (!x->range || !x->range->active || ts <= x->range->t0_ns)
        return;
    for (uint32_t i = 0; i < k->depth; i++)
        if (k->stack[i].state == PF_Z_HELD)
            write_begin(x, track_seq(x, k), k, &k->stack[i]);
}

/* Writes the BEGIN that thread th held back for its annotations. */
static void flush_pending(pf *x, pf_thread *th)
{
    if (th->pending == PF_NONE)
        return;
    pf_ztrack *k = &x->ztracks[th->pending];
    th->pending = PF_NONE;
    if (k->depth && k->stack[k->depth - 1].state == PF_Z_PENDING)
        write_begin(x, th->seq, k, &k->stack[k->depth - 1]);
}

static pf_ztrack *current_track(pf *x, pf_thread *th)
{
    return &x->ztracks[th->fiber != PF_NONE ? th->fiber : th->track];
}

static void zone_begin(pf *x, uint32_t t, pf_thread *th, int64_t ts, uint32_t loc)
{
    uint32_t ki = th->fiber != PF_NONE ? th->fiber : th->track;
    pf_ztrack *k = &x->ztracks[ki];
    k->thread = t;
    catch_up(x, k, ts);
    if (MPROF_GROW(k->stack, k->cap, (uint64_t)k->depth + 1, 16) != 0) {
        x->oom = 1;
        return;
    }
    pf_open *z = &k->stack[k->depth++];
    memset(z, 0, sizeof *z);
    z->loc = loc;
    z->start = ts;
    const mprof_export_range *r = x->range;
    if (r && r->active && ts >= r->t1_ns) {
        z->state = PF_Z_SKIPPED;
    } else if (r && r->active && ts < r->t0_ns) {
        z->state = PF_Z_HELD;
    } else {
        z->state = PF_Z_PENDING;
        th->pending = ki;
    }
}

static void zone_end(pf *x, uint32_t t, pf_thread *th, int64_t ts)
{
    pf_ztrack *k = current_track(x, th);
    k->thread = t;
    if (!k->depth) {
        x->st->unmatched_ends++;
        return;
    }
    catch_up(x, k, ts);
    pf_open *z = &k->stack[k->depth - 1];
    if (z->state == PF_Z_WRITTEN)
        write_end(x, th->seq, k, z, ts < z->start ? z->start : ts, 0);
    clear_annotations(z);
    k->depth--;
}

static char *dup_str(pf *x, const char *s, uint32_t n)
{
    char *c = tool_strndup(s ? s : "", n);
    if (!c)
        x->oom = 1;
    return c;
}

static void zone_annotate(pf *x, pf_thread *th, const mprof_event *ev)
{
    pf_ztrack *k = th->pending != PF_NONE ? &x->ztracks[th->pending] : current_track(x, th);
    if (!k->depth)
        return;
    pf_open *z = &k->stack[k->depth - 1];
    if (z->state == PF_Z_SKIPPED)
        return;
    if (ev->type == MPROF_EV_ZONE_VALUE) {
        z->value = ev->u[0];
        z->has_value = 1;
    } else if (ev->type == MPROF_EV_ZONE_TEXT) {
        free(z->text);
        z->text = dup_str(x, ev->str, ev->str_len);
        z->text_len = ev->str_len;
    } else {
        free(z->name);
        z->name = dup_str(x, ev->str, ev->str_len);
        z->name_len = ev->str_len;
        z->late_name = z->state == PF_Z_WRITTEN;
    }
}

/* LOST on thread th: its current track's open zones cannot be trusted (mprof report drops them).
 * Those already written end here, marked; the others are never written. */
static void zones_lost(pf *x, pf_thread *th, int64_t ts)
{
    pf_ztrack *k = current_track(x, th);
    th->pending = PF_NONE;
    while (k->depth) {
        pf_open *z = &k->stack[--k->depth];
        if (z->state == PF_Z_WRITTEN) {
            write_end(x, th->seq, k, z, ts < z->start ? z->start : ts, PF_FIX_LOST);
            x->st->zones_cut_by_loss++;
        } else if (z->state != PF_Z_SKIPPED) {
            x->st->zones_dropped_by_loss++;
        }
        clear_annotations(z);
    }
}

/* The end of the capture: open zones end at its last timestamp, marked unfinished. */
static void zones_finish(pf *x, int64_t last)
{
    for (uint32_t i = 0; i < x->n_ztracks; i++) {
        pf_ztrack *k = &x->ztracks[i];
        uint32_t si = track_seq(x, k);
        for (uint32_t d = 0; d < k->depth; d++) {
            pf_open *z = &k->stack[d];
            if (z->state == PF_Z_PENDING ||
                (z->state == PF_Z_HELD && x->range && last > x->range->t0_ns))
                write_begin(x, si, k, z);
        }
        while (k->depth) {
            pf_open *z = &k->stack[--k->depth];
            if (z->state == PF_Z_WRITTEN) {
                write_end(x, si, k, z, last < z->start ? z->start : last, PF_FIX_UNFINISHED);
                x->st->zones_unfinished++;
            }
            clear_annotations(z);
        }
    }
}

/* ---- events ---------------------------------------------------------------------------------- */

static void message(pf *x, pf_thread *th, const mprof_event *ev)
{
    mprof_pb *b = &x->buf;
    int level = ev->u[0] >= 1 && ev->u[0] <= 6 ? (int)ev->u[0] : MPROF_LOG_INFO;
    pf_packet_begin(x, th->seq, ev->ts_ns);
    pf_intern(x, th->seq, 1u << (PF_FIX_LEVEL0 + level) | 1u << PF_FIX_CAT_LOG, PF_NONE);
    int opened = 0;
    uint64_t body = intern_body(x, th->seq, ev->str ? ev->str : "", ev->str_len, &opened);
    if (opened)
        mprof__pb_close(b);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_INSTANT);
    mprof__pb_varint(b, PF_TE_CATEGORY_IIDS, PF_FIX_IID(PF_FIX_CAT_LOG));
    mprof__pb_varint(b, PF_TE_NAME_IID, PF_FIX_IID(PF_FIX_LEVEL0 + level));
    mprof__pb_open(b, PF_TE_LOG_MESSAGE);
    mprof__pb_varint(b, PF_LOG_BODY_IID, body);
    /* mprof's levels 1 trace .. 6 fatal are Perfetto's priorities 2 verbose .. 7 fatal. */
    mprof__pb_varint(b, PF_LOG_PRIO, (uint64_t)level + 1);
    mprof__pb_close(b);
    mprof__pb_close(b);
    pf_packet_end(x);
    x->st->messages++;
}

void pf_counter(pf *x, uint32_t si, uint64_t uuid, int64_t ts, double v, int integer)
{
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, si, ts);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_COUNTER);
    mprof__pb_varint(b, PF_TE_TRACK_UUID, uuid);
    if (integer)
        mprof__pb_int(b, PF_TE_COUNTER_VALUE, (int64_t)v);
    else
        mprof__pb_double(b, PF_TE_DOUBLE_COUNTER_VALUE, isfinite(v) ? v : 0.0);
    mprof__pb_close(b);
    pf_packet_end(x);
    x->st->counter_values++;
}

/* A counter track's descriptor, written once per key (and again when the unit changes). */
static void counter_track(pf *x, uint64_t uuid, const char *name, int unit, uint32_t process)
{
    uint32_t *v = mprof_umap_get(&x->counters, uuid);
    if (v && *v == (uint32_t)(unit + 100))
        return;
    if (mprof_umap_put(&x->counters, uuid, (uint32_t)(unit + 100)) != 0) {
        x->oom = 1;
        return;
    }
    pf_describe(x, uuid, process_uuid(x, process), name, unit, INT32_MIN);
}

static int plot_unit(int format)
{
    return format == MPROF_PLOT_FORMAT_MEMORY       ? PF_CD_UNIT_SIZE_BYTES
           : format == MPROF_PLOT_FORMAT_PERCENTAGE ? -1
                                                    : PF_CD_UNIT_COUNT;
}

/* Plot formats from PLOT_CONFIG, by plot name id (0 = not configured). */
static int plot_format(pf *x, uint32_t name, int set)
{
    static const uint64_t key_base = 0xfe00000000000000ull;
    uint32_t *v = mprof_umap_get(&x->counters, key_base | name);
    if (set >= 0 && mprof_umap_put(&x->counters, key_base | name, (uint32_t)set) != 0)
        x->oom = 1;
    return set >= 0 ? set : v ? (int)*v : 0;
}

/* A plot's counter track: (process, name), so two processes' plots of one name stay apart;
 * process 0's key is its name alone, as in a one-process capture. */
static uint64_t plot_uuid(const pf *x, uint32_t name, uint32_t thread)
{
    return pf_uuid(PF_UUID_PLOT, (uint64_t)thread_process(x, thread) << 32 | name);
}

static void plot(pf *x, pf_thread *th, const mprof_event *ev)
{
    uint32_t name = (uint32_t)ev->u[0];
    const char *nm = mprof_reader_string(x->r, name);
    uint64_t uuid = plot_uuid(x, name, ev->thread);
    counter_track(x, uuid, nm ? nm : "plot", plot_unit(plot_format(x, name, -1)),
                  thread_process(x, ev->thread));
    if (ev->type == MPROF_EV_PLOT_F64)
        pf_counter(x, th->seq, uuid, ev->ts_ns, mprof_event_f64(ev, 1), 0);
    else
        pf_counter(x, th->seq, uuid, ev->ts_ns, (double)(int64_t)ev->u[1], 1);
}

static int thread_event(int type)
{
    return type >= 0x10 && !MPROF_EV_IS_PROCESS(type);
}

static void on_event(pf *x, const mprof_event *ev)
{
    if (ev->type == MPROF_EV_LOST)
        x->st->lost_events += ev->u[0];
    if (MPROF_EV_IS_PROCESS(ev->type) || ev->type == MPROF_EV_DEF_MODULE) {
        if (x->sys)
            pf_sys_event(x, ev);
        return;
    }
    if (!thread_event(ev->type) && ev->type != MPROF_EV_LOST && ev->type != MPROF_EV_THREAD_EXIT)
        return;
    pf_thread *th = thread_of(x, ev->thread);
    if (!th)
        return;
    int annotation = ev->type == MPROF_EV_ZONE_TEXT || ev->type == MPROF_EV_ZONE_NAME ||
                     ev->type == MPROF_EV_ZONE_VALUE;
    if (!annotation)
        flush_pending(x, th);
    switch (ev->type) {
    case MPROF_EV_ZONE_BEGIN:
        zone_begin(x, ev->thread, th, ev->ts_ns, (uint32_t)ev->u[0]);
        break;
    case MPROF_EV_ZONE_END:
        zone_end(x, ev->thread, th, ev->ts_ns);
        break;
    case MPROF_EV_ZONE_TEXT:
    case MPROF_EV_ZONE_NAME:
    case MPROF_EV_ZONE_VALUE:
        zone_annotate(x, th, ev);
        break;
    case MPROF_EV_LOST:
        zones_lost(x, th, ev->ts_ns);
        break;
    case MPROF_EV_FIBER_ENTER:
        th->fiber = fiber_track(x, (uint32_t)ev->u[0], ev->thread);
        break;
    case MPROF_EV_FIBER_LEAVE:
    case MPROF_EV_THREAD_EXIT:
        th->fiber = PF_NONE;
        break;
    case MPROF_EV_MESSAGE:
        if (mprof__range_has(x->range, ev->ts_ns))
            message(x, th, ev);
        break;
    case MPROF_EV_PLOT_F64:
    case MPROF_EV_PLOT_I64:
        if (mprof__range_has(x->range, ev->ts_ns))
            plot(x, th, ev);
        break;
    case MPROF_EV_PLOT_CONFIG: {
        uint32_t name = (uint32_t)ev->u[0];
        int was = plot_format(x, name, -1);
        plot_format(x, name, (int)ev->u[1]);
        uint64_t uuid = plot_uuid(x, name, ev->thread);
        if (was != (int)ev->u[1] && mprof_umap_get(&x->counters, uuid)) {
            const char *nm = mprof_reader_string(x->r, name);
            counter_track(x, uuid, nm ? nm : "plot", plot_unit((int)ev->u[1]),
                          thread_process(x, ev->thread));
        }
        break;
    }
    case MPROF_EV_GPU_ZONE_BEGIN:
        pf_gpu_submit(x, ev, th->seq, current_track(x, th)->uuid);
        break;
    default:
        break;
    }
}

/* ---- the walker's hooks ---------------------------------------------------------------------- */

static void on_zone(void *user, const mprof_tl_zone *z)
{
    pf *x = user;
    const mprof_tl_track *t = mprof__walker_track(x->w, z->track);
    if (t && t->kind == MPROF_TRACK_GPU)
        pf_gpu_zone(x, z);
}

static void on_memory(void *user, uint32_t pool, int64_t ts, int64_t bytes)
{
    pf *x = user;
    if (!mprof__range_has(x->range, ts) || x->cur_thread >= x->threads_cap ||
        !x->threads[x->cur_thread].used)
        return;
    const mprof_tl_pool *p = mprof__walker_pool(x->w, pool);
    const char *nm = p && p->name ? mprof_reader_string(x->r, p->name) : "heap";
    char name[300];
    snprintf(name, sizeof name, "Memory: %s", nm ? nm : "pool");
    uint64_t uuid = pf_uuid(PF_UUID_MEMORY, pool);
    counter_track(x, uuid, name, PF_CD_UNIT_SIZE_BYTES, p ? p->process : 0);
    pf_counter(x, x->threads[x->cur_thread].seq, uuid, ts, (double)bytes, 1);
}

static void on_frame(void *user, uint32_t set, uint64_t index, int64_t s, int64_t e)
{
    pf *x = user;
    if (!mprof__range_overlaps(x->range, s, e))
        return;
    if (set >= x->frame_seqs_cap) {
        uint32_t old = x->frame_seqs_cap;
        if (set >= (1u << 16) ||
            MPROF_GROW(x->frame_seqs, x->frame_seqs_cap, (uint64_t)set + 1, 8) != 0) {
            x->oom = 1;
            return;
        }
        memset(x->frame_seqs + old, 0, (x->frame_seqs_cap - old) * sizeof *x->frame_seqs);
    }
    const mprof_tl_frameset *f = mprof__walker_frameset(x->w, set);
    const char *nm = f && f->name ? mprof_reader_string(x->r, f->name) : NULL;
    uint64_t uuid = pf_uuid(PF_UUID_FRAMES, set);
    if (!x->frame_seqs[set]) {
        uint32_t si = pf_seq_new(x, 1, uuid);
        if (si == PF_NONE)
            return;
        x->frame_seqs[set] = si + 1;
        char tn[300];
        snprintf(tn, sizeof tn, nm ? "Frames: %s" : "Frames", nm);
        pf_describe(x, uuid, process_uuid(x, f ? f->process : 0), tn, 0,
                    -1 - (int32_t)(set & 0xffff));
    }
    uint32_t si = x->frame_seqs[set] - 1;
    char name[300];
    snprintf(name, sizeof name, "%s %" PRIu64, nm ? nm : "Frame", index);
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, si, s);
    pf_intern(x, si, 1u << PF_FIX_CAT_FRAME | 1u << PF_FIX_FRAME, PF_NONE);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_SLICE_BEGIN);
    mprof__pb_varint(b, PF_TE_CATEGORY_IIDS, PF_FIX_IID(PF_FIX_CAT_FRAME));
    mprof__pb_str(b, PF_TE_NAME, name);
    annotation_uint(b, PF_FIX_FRAME, index);
    mprof__pb_close(b);
    pf_packet_end(x);
    pf_packet_begin(x, si, e);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_SLICE_END);
    mprof__pb_close(b);
    pf_packet_end(x);
    x->st->frames++;
}

static void on_async(void *user, const mprof_async_span *s)
{
    pf_async_span(user, s);
}

static void on_lock(void *user, const mprof_tl_lockspan *s)
{
    pf *x = user;
    if (!mprof__range_overlaps(x->range, s->start_ns, s->end_ns))
        return;
    uint64_t key = ((uint64_t)s->lock << 20 | (s->row & 0xfffff)) + 1;
    uint64_t uuid = pf_uuid(PF_UUID_LOCK_ROW, key);
    uint32_t *v = mprof_umap_get(&x->lock_rows, key);
    uint32_t si;
    if (v) {
        si = *v;
    } else {
        si = pf_seq_new(x, 1, uuid);
        if (si == PF_NONE || mprof_umap_put(&x->lock_rows, key, si) != 0) {
            x->oom = 1;
            return;
        }
        const mprof_tl_lock *lk = mprof__walker_lock(x->w, s->lock);
        const char *ln = lk ? mprof_reader_string(x->r, lk->name) : NULL;
        uint64_t group = pf_uuid(PF_UUID_LOCK, s->lock);
        if (!mprof_umap_get(&x->counters, group)) {
            char gn[300];
            snprintf(gn, sizeof gn, "lock %s", ln ? ln : "?");
            if (mprof_umap_put(&x->counters, group, 1) != 0)
                x->oom = 1;
            const mprof_tl_track *lt = lk ? mprof__walker_track(x->w, lk->track) : NULL;
            pf_describe(x, group, process_uuid(x, lt ? lt->process : 0), gn, 0,
                        (int32_t)(0x20000 + s->lock));
        }
        char rb[128], name[400];
        snprintf(name, sizeof name, "%s (%s)", ln ? ln : "lock",
                 mprof__walker_lock_row_name(x->w, s->lock, s->row, rb, sizeof rb));
        pf_describe(x, uuid, group, name, 0, (int32_t)s->row);
    }
    int k = s->waiting ? PF_FIX_WAITING : PF_FIX_HOLDING;
    mprof_pb *b = &x->buf;
    pf_packet_begin(x, si, s->start_ns);
    pf_intern(x, si, 1u << k | 1u << PF_FIX_CAT_LOCK | (s->shared ? 1u << PF_FIX_SHARED : 0),
              PF_NONE);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_SLICE_BEGIN);
    mprof__pb_varint(b, PF_TE_CATEGORY_IIDS, PF_FIX_IID(PF_FIX_CAT_LOCK));
    mprof__pb_varint(b, PF_TE_NAME_IID, PF_FIX_IID(k));
    if (s->shared)
        annotation_bool(b, PF_FIX_SHARED);
    mprof__pb_close(b);
    pf_packet_end(x);
    pf_packet_begin(x, si, s->end_ns < s->start_ns ? s->start_ns : s->end_ns);
    mprof__pb_open(b, PF_PKT_TRACK_EVENT);
    mprof__pb_varint(b, PF_TE_TYPE, PF_TYPE_SLICE_END);
    mprof__pb_close(b);
    pf_packet_end(x);
    x->st->lock_spans++;
}

/* ---- the export ------------------------------------------------------------------------------ */

static void summary(pf *x, char *buf, size_t len, const char *name)
{
    const mprof_perfetto_stats *s = x->st;
    snprintf(buf, len,
             "Exported by mprof from %s: %" PRIu64 " zones, %" PRIu64 " GPU zones, %" PRIu64
             " messages, %" PRIu64 " counter values, %" PRIu64 " lock spans, %" PRIu64
             " frames, %" PRIu64 " context switches, %" PRIu64 " wake-ups, %" PRIu64
             " samples. Events lost by the capture: %" PRIu64 ". Zones open when their thread"
             " lost events (ended there, lost_end): %" PRIu64 "; begun and then lost, not"
             " written: %" PRIu64 "; open at the end (unfinished): %" PRIu64
             "; ends without a begin: %" PRIu64 "; timestamps before the capture's start"
             " written as 0: %" PRIu64 "; GPU zones put on a late lane: %" PRIu64 ".",
             name, s->zones, s->gpu_zones, s->messages, s->counter_values, s->lock_spans,
             s->frames, s->sched_switches, s->sched_wakings, s->samples, s->lost_events,
             s->zones_cut_by_loss, s->zones_dropped_by_loss, s->zones_unfinished,
             s->unmatched_ends, s->clamped_ts, s->gpu_late);
}

static const char *process_name(pf *x)
{
    const char *app = mprof_reader_info(x->r, "app");
    if (!app)
        app = mprof_reader_info(x->r, "process");
    return app ? app : "process";
}

/* Settles the processes once they are known (a merged capture defines them all before the
 * first thread's events, so after its first batch) and writes their descriptors: one process,
 * the capture's pid and name as ever; several, a ProcessDescriptor each with its own pid and
 * name. description (NULL: none) goes to process 0; a process whose part ended early says so in
 * its own. Returns 0, or -1 out of memory. */
static int describe_processes(pf *x, const char *description)
{
    uint32_t n = mprof_reader_process_count(x->r);
    if (!x->processes_described && n > 1) {
        x->pids = calloc(n, sizeof *x->pids);
        x->process_uuids = calloc(n, sizeof *x->process_uuids);
        if (!x->pids || !x->process_uuids)
            return -1;
        x->n_processes = n;
        for (uint32_t k = 0; k < n; k++) {
            const mprof_process_def *p = mprof_reader_process(x->r, k);
            int64_t pid = p ? (int64_t)p->pid : 0;
            if (pid <= 0 || pid > INT32_MAX)
                pid = 0x3fffffff - (int64_t)k; /* unknown: ids no real process has */
            x->pids[k] = pid;
            /* Keyed by index too: two machines' processes may share a pid. */
            x->process_uuids[k] = pf_uuid(PF_UUID_PROCESS, (uint64_t)k << 32 | (uint64_t)pid);
        }
        x->pid = x->pids[0];
        x->process_uuid = x->process_uuids[0];
    }
    x->processes_described = 1;
    if (!x->n_processes) {
        describe_process_k(x, 0, process_name(x), description);
        return 0;
    }
    for (uint32_t k = 0; k < x->n_processes; k++) {
        const mprof_process_def *p = mprof_reader_process(x->r, k);
        char desc[1200];
        const char *d = k == 0 ? description : NULL;
        if (p && p->ended_by) {
            snprintf(desc, sizeof desc, "%s%sIts part of the capture ended early (%s).",
                     d ? d : "", d ? " " : "", p->ended_by);
            d = desc;
        }
        describe_process_k(x, k, p && *p->name ? p->name : "process", d);
    }
    return 0;
}

/* ---- reading batches -------------------------------------------------------------------------
 * The export handles every event itself, zones included, and the walker's hooks (memory, frames,
 * locks, GPU zones) write among them: the bytes are those of one event at a time, where each
 * event is handled (on_event), then applied by the walker, then followed by after_event. The
 * walker walks a batch and calls on_other before it applies each event other than a zone's;
 * there the zone records before that event are handled first, so the order stays the same. */

/* What follows an event once the walker has applied it: GPU zones due by then go out, and the
 * buffer is written when full. */
static void after_event(pf *x, int64_t ts)
{
    if (ts)
        pf_gpu_advance(x, ts);
    if (!x->oom && !x->buf.oom && pf_flush(x, 0) != 0)
        x->write_failed = 1;
}

/* A zone record: what on_event does with a ZONE_BEGIN or ZONE_END, without the event (the bulk
 * of a capture: building and classifying a 128-byte event for each was a sixth of the export). */
static void zone_record(pf *x, uint32_t thread, int type, int64_t ts, uint32_t loc)
{
    x->cur_thread = thread;
    pf_thread *th = thread_of(x, thread);
    if (th) {
        flush_pending(x, th);
        if (type == MPROF_EV_ZONE_BEGIN)
            zone_begin(x, thread, th, ts, loc);
        else
            zone_end(x, thread, th, ts);
    }
    after_event(x, ts);
}

/* Handles the batch's records from the cursor up to the record of its event ev_index (which the
 * caller handles), or to the end of the batch (UINT32_MAX). */
static void handle_records(pf *x, uint32_t ev_index)
{
    const mprof_batch *b = x->bat;
    if (x->post) {
        x->post = 0;
        after_event(x, x->post_ts);
    }
    for (; x->cur_run < b->n_run; x->cur_run++) {
        const mprof_run *run = &b->run[x->cur_run];
        if (x->cur_rec < run->first)
            x->cur_rec = run->first;
        for (; x->cur_rec < run->end; x->cur_rec++) {
            if (x->oom || x->buf.oom || x->write_failed)
                return;
            const mprof_rec *e = &b->rec[x->cur_rec];
            switch (mprof_rec_type(e)) {
            case MPROF_REC_LEAF:
                zone_record(x, run->thread, MPROF_EV_ZONE_BEGIN, e->ts_ns, e->x);
                zone_record(x, run->thread, MPROF_EV_ZONE_END, e->ts_ns + mprof_rec_dur(e), 0);
                break;
            case MPROF_EV_ZONE_BEGIN:
                zone_record(x, run->thread, MPROF_EV_ZONE_BEGIN, e->ts_ns, e->x);
                break;
            case MPROF_EV_ZONE_END:
                zone_record(x, run->thread, MPROF_EV_ZONE_END, e->ts_ns, 0);
                break;
            default:
                if (e->x == ev_index) {
                    x->cur_rec++;
                    return;
                }
                break; /* the walker hands every other event to on_other: not reached */
            }
        }
    }
}

static int on_other(void *user, const mprof_event *ev)
{
    pf *x = user;
    handle_records(x, (uint32_t)(ev - x->bat->ev));
    if (x->oom || x->buf.oom || x->write_failed)
        return -1;
    x->cur_thread = ev->thread;
    on_event(x, ev);
    x->post = 1;
    x->post_ts = ev->ts_ns;
    return x->oom || x->buf.oom ? -1 : 0;
}

static void pf_free(pf *x)
{
    for (uint32_t i = 0; i < x->n_ztracks; i++) {
        for (uint32_t d = 0; d < x->ztracks[i].depth; d++)
            clear_annotations(&x->ztracks[i].stack[d]);
        free(x->ztracks[i].stack);
    }
    free(x->ztracks);
    for (uint32_t i = 0; i < x->threads_cap; i++)
        free(x->threads[i].described_name);
    free(x->threads);
    for (uint32_t i = 0; i < x->n_seqs; i++) {
        free(x->seqs[i].loc_sent);
        mprof_umap_free(&x->seqs[i].bodies);
    }
    free(x->seqs);
    free(x->frame_seqs);
    mprof_umap_free(&x->fiber_tracks);
    mprof_umap_free(&x->lock_rows);
    mprof_umap_free(&x->counters);
    free(x->pids);
    free(x->process_uuids);
    pf_gpu_free(x->gpu);
    pf_async_free(x->async);
    pf_sys_free(x->sys);
    mprof__walker_free(x->w);
    mprof__pb_free(&x->buf);
}

int mprof__export_perfetto_reader(mprof_reader *r, const char *name,
                                  const mprof_export_range *range, FILE *out,
                                  mprof_perfetto_stats *stats, char *err, size_t errlen)
{
    mprof_perfetto_stats local;
    pf x = {.out = out, .r = r, .range = range && range->active ? range : NULL,
            .st = stats ? stats : &local};
    memset(x.st, 0, sizeof *x.st);
    const char *pid = mprof_reader_info(r, "pid");
    x.pid = pid ? strtoll(pid, NULL, 10) : 0;
    if (x.pid <= 0 || x.pid > INT32_MAX)
        x.pid = 0x3fffffff; /* a capture that does not say: any id no real process has */
    x.process_uuid = pf_uuid(PF_UUID_PROCESS, (uint64_t)x.pid);
    mprof_tl_hooks h = {.user = &x, .zone = on_zone, .lock_span = on_lock, .memory = on_memory,
                        .frame = on_frame, .async_span = on_async, .other = on_other};
    x.w = mprof__walker_new(r, &h, 0);
    x.gpu = pf_gpu_new();
    x.sys = pf_sys_new();
    x.async = pf_async_new();
    if (!x.w || !x.gpu || !x.sys || !x.async || pf_seq_new(&x, 0, 0) == PF_NONE) {
        pf_free(&x);
        tool_seterr(err, errlen, "%s: out of memory", name);
        return -1;
    }
    mprof_batch b;
    int rc;
    while ((rc = mprof_reader_next_batch(r, &b)) == 1) {
        if (!x.processes_described && describe_processes(&x, NULL) != 0) {
            rc = -2;
            break;
        }
        x.bat = &b;
        x.cur_run = x.cur_rec = 0;
        x.post = 0;
        int wrc = mprof__walker_batch(x.w, &b);
        if (!x.oom && !x.buf.oom && !x.write_failed)
            handle_records(&x, UINT32_MAX); /* the zone records after its last other event */
        if (wrc != 0 && !x.write_failed)
            x.oom = 1;
        if (x.oom || x.buf.oom) {
            rc = -2;
            break;
        }
        if (x.write_failed) {
            rc = -3;
            break;
        }
    }
    if (rc == 0 && !x.processes_described && describe_processes(&x, NULL) != 0)
        rc = -2;
    if (rc == 0) {
        mprof__walker_finish(x.w);
        zones_finish(&x, mprof__walker_last_ns(x.w));
        pf_gpu_finish(&x);
        pf_sys_finish(&x);
        pf_async_finish(&x);
        for (uint32_t t = 0; t < x.threads_cap; t++)
            if (x.threads[t].used)
                describe_thread(&x, t); /* names given after the first event */
        char desc[1024];
        summary(&x, desc, sizeof desc, name);
        if (describe_processes(&x, desc) != 0)
            x.oom = 1;
        if (x.oom || x.buf.oom)
            rc = -2;
        else if (pf_flush(&x, 1) != 0)
            rc = -3;
    }
    int ret = 0;
    if (rc == -1) {
        tool_seterr(err, errlen, "%s: %s", name, mprof_reader_error(r));
        ret = -1;
    } else if (rc == -2) {
        tool_seterr(err, errlen, "%s: out of memory", name);
        ret = -1;
    } else if (rc == -3) {
        tool_seterr(err, errlen, "%s: writing the trace failed", name);
        ret = -1;
    }
    pf_free(&x);
    return ret;
}

int mprof__export_perfetto(const char *path, const mprof_export_range *range, FILE *out,
                           mprof_perfetto_stats *stats, char *err, size_t errlen)
{
    mprof_reader *r = mprof_reader_open(path, err, errlen);
    if (!r)
        return -1;
    int rc = mprof__export_perfetto_reader(r, path, range, out, stats, err, errlen);
    mprof_reader_close(r);
    return rc;
}
