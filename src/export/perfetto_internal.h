/*
 * perfetto_internal.h - what the files of the Perfetto export share: the field numbers it
 * writes, its packet sequences and tracks, and the writer's state.
 *
 * The export is one writer (perfetto.c) with two helpers that own a kind of data each:
 * perfetto_gpu.c (GPU zones on their queue's tracks, flows from their CPU submit) and
 * perfetto_sched.c (scheduler data, CPU usage and callstack samples from the system records).
 * Every packet goes through pf_packet_begin/pf_packet_end, which keep each sequence's
 * incremental clock, so the helpers never write a timestamp themselves.
 *
 * Field numbers are facts of Perfetto's trace format (its documented schema, perfetto.dev's
 * "TracePacket" reference); each name below is the message and field it stands for, and only
 * the fields mprof writes are named. docs/EXPORT.md lists them.
 */
#ifndef MPROF_EXPORT_PERFETTO_INTERNAL_H
#define MPROF_EXPORT_PERFETTO_INTERNAL_H

#include "analysis/range.h"
#include "analysis/timeline.h"
#include "export/pb.h"
#include "export/perfetto.h"
#include "format/batch.h"
#include "format/format.h"
#include "util/umap.h"

#include <stdint.h>
#include <stdio.h>

/* ---- field numbers ---------------------------------------------------------------------- */

enum {
    PF_TRACE_PACKET = 1,

    PF_PKT_FTRACE_EVENTS = 1,
    PF_PKT_PROCESS_TREE = 2,
    PF_PKT_CLOCK_SNAPSHOT = 6,
    PF_PKT_TIMESTAMP = 8,
    PF_PKT_SEQUENCE_ID = 10, /* trusted_packet_sequence_id */
    PF_PKT_TRACK_EVENT = 11,
    PF_PKT_INTERNED_DATA = 12,
    PF_PKT_SEQUENCE_FLAGS = 13,
    PF_PKT_TIMESTAMP_CLOCK_ID = 58,
    PF_PKT_DEFAULTS = 59, /* trace_packet_defaults */
    PF_PKT_TRACK_DESCRIPTOR = 60,
    PF_PKT_PERF_SAMPLE = 66,

    PF_SEQ_INCREMENTAL_STATE_CLEARED = 1,

    PF_DEFAULTS_CLOCK_ID = 58,
    PF_DEFAULTS_TRACK_EVENT = 11,
    PF_TE_DEFAULTS_TRACK_UUID = 11,

    PF_CLOCKS = 1,        /* ClockSnapshot.clocks */
    PF_CLOCK_ID = 1,
    PF_CLOCK_TIMESTAMP = 2,
    PF_CLOCK_INCREMENTAL = 3,
    PF_CLOCK_BOOTTIME = 6,
    PF_CLOCK_SEQUENCE = 64, /* the first sequence-scoped clock id */

    PF_TD_UUID = 1, /* TrackDescriptor */
    PF_TD_NAME = 2,
    PF_TD_PROCESS = 3,
    PF_TD_THREAD = 4,
    PF_TD_PARENT_UUID = 5,
    PF_TD_COUNTER = 8,
    PF_TD_CHILD_ORDERING = 11,
    PF_TD_SIBLING_ORDER_RANK = 12,
    PF_TD_DESCRIPTION = 14,
    PF_TD_CHILD_ORDERING_EXPLICIT = 3,
    PF_PD_PID = 1, /* ProcessDescriptor */
    PF_PD_PROCESS_NAME = 6,
    PF_THD_PID = 1, /* ThreadDescriptor */
    PF_THD_TID = 2,
    PF_THD_THREAD_NAME = 5,
    PF_CD_UNIT = 3, /* CounterDescriptor */
    PF_CD_UNIT_NAME = 6,
    PF_CD_UNIT_COUNT = 2,
    PF_CD_UNIT_SIZE_BYTES = 3,

    PF_TE_CATEGORY_IIDS = 3, /* TrackEvent */
    PF_TE_DEBUG_ANNOTATIONS = 4,
    PF_TE_TYPE = 9,
    PF_TE_NAME_IID = 10,
    PF_TE_TRACK_UUID = 11,
    PF_TE_LOG_MESSAGE = 21,
    PF_TE_NAME = 23,
    PF_TE_COUNTER_VALUE = 30,
    PF_TE_SOURCE_LOCATION_IID = 34,
    PF_TE_DOUBLE_COUNTER_VALUE = 44,
    PF_TE_FLOW_IDS = 47,
    PF_TE_TERMINATING_FLOW_IDS = 48,
    PF_TYPE_SLICE_BEGIN = 1,
    PF_TYPE_SLICE_END = 2,
    PF_TYPE_INSTANT = 3,
    PF_TYPE_COUNTER = 4,

    PF_DA_NAME_IID = 1, /* DebugAnnotation */
    PF_DA_BOOL = 2,
    PF_DA_UINT = 3,
    PF_DA_INT = 4,
    PF_DA_STRING = 6,
    PF_DA_NAME = 10,

    PF_LOG_SOURCE_LOCATION_IID = 1, /* LogMessage */
    PF_LOG_BODY_IID = 2,
    PF_LOG_PRIO = 3,

    PF_ID_EVENT_CATEGORIES = 1, /* InternedData */
    PF_ID_EVENT_NAMES = 2,
    PF_ID_ANNOTATION_NAMES = 3,
    PF_ID_SOURCE_LOCATIONS = 4,
    PF_ID_FUNCTION_NAMES = 5,
    PF_ID_FRAMES = 6,
    PF_ID_CALLSTACKS = 7,
    PF_ID_BUILD_IDS = 16,
    PF_ID_MAPPING_PATHS = 17,
    PF_ID_MAPPINGS = 19,
    PF_ID_LOG_BODIES = 20,
    PF_IID = 1,      /* the iid of every interned message */
    PF_INAME = 2,    /* EventName.name, EventCategory.name, DebugAnnotationName.name,
                        InternedString.str, LogMessageBody.body */
    PF_SL_FILE = 2,  /* SourceLocation */
    PF_SL_FUNCTION = 3,
    PF_SL_LINE = 4,
    PF_FRAME_FUNCTION_NAME_ID = 2, /* Frame */
    PF_FRAME_MAPPING_ID = 3,
    PF_FRAME_REL_PC = 4,
    PF_CALLSTACK_FRAME_IDS = 2,   /* Callstack */
    PF_MAPPING_BUILD_ID = 2,      /* Mapping */
    PF_MAPPING_START_OFFSET = 3,
    PF_MAPPING_START = 4,
    PF_MAPPING_END = 5,
    PF_MAPPING_PATH_STRING_IDS = 7,

    PF_BUNDLE_CPU = 1, /* FtraceEventBundle */
    PF_BUNDLE_EVENT = 2,
    PF_BUNDLE_LOST_EVENTS = 3,
    PF_BUNDLE_COMPACT_SCHED = 4,
    PF_CS_SWITCH_TIMESTAMP = 1, /* FtraceEventBundle.CompactSched */
    PF_CS_SWITCH_PREV_STATE = 2,
    PF_CS_SWITCH_NEXT_PID = 3,
    PF_CS_SWITCH_NEXT_PRIO = 4,
    PF_CS_INTERN_TABLE = 5,
    PF_CS_SWITCH_NEXT_COMM_INDEX = 6,
    PF_FT_TIMESTAMP = 1, /* FtraceEvent */
    PF_FT_PID = 2,
    PF_FT_COMMON_FLAGS = 5,
    PF_FT_SCHED_WAKING = 20,
    PF_WK_COMM = 1, /* SchedWakingFtraceEvent */
    PF_WK_PID = 2,
    PF_WK_PRIO = 3,
    PF_WK_SUCCESS = 4,
    PF_WK_TARGET_CPU = 5,

    PF_PS_PID = 2, /* PerfSample */
    PF_PS_TID = 3,
    PF_PS_CALLSTACK_IID = 4,

    PF_PT_PROCESSES = 1, /* ProcessTree */
    PF_PT_THREADS = 2,
    PF_PTP_PID = 1,
    PF_PTP_PPID = 2,
    PF_PTP_CMDLINE = 3,
    PF_PTT_TID = 1,
    PF_PTT_NAME = 2,
    PF_PTT_TGID = 3
};

/* LogMessage priorities. */
enum { PF_PRIO_VERBOSE = 2, PF_PRIO_DEBUG = 3, PF_PRIO_INFO = 4, PF_PRIO_WARN = 5,
       PF_PRIO_ERROR = 6, PF_PRIO_FATAL = 7 };

/* ---- interned names every sequence may use ------------------------------------------------ */

/* Event names, categories and annotation names that are not strings of the capture get fixed
 * small iids (1 + k), and source location n uses iid n + 32 for its name and its location, so
 * the capture's ids need no table of their own and the iids zones carry stay one or two bytes.
 * A sequence interns each on first use (pf_seq.fixed_sent, pf_seq.loc_sent). */
enum {
    PF_FIX_TEXT,          /* annotation: MPROF_ZONE_TEXT */
    PF_FIX_VALUE,         /* annotation: MPROF_ZONE_VALUE */
    PF_FIX_UNFINISHED,    /* annotation: open at the end of the capture */
    PF_FIX_LOST,          /* annotation: open when its thread lost events */
    PF_FIX_SHARED,        /* annotation: a shared (reader) lock */
    PF_FIX_LATE_NAME,     /* annotation: MPROF_ZONE_NAME given after the zone's first child */
    PF_FIX_FRAME,         /* annotation: the frame's number */
    PF_FIX_INCOMPLETE,    /* annotation: a frame across events its marking thread lost */
    PF_FIX_WAITING,       /* event name */
    PF_FIX_HOLDING,       /* event name */
    PF_FIX_CAT_GPU_SUBMIT, /* category */
    PF_FIX_CAT_LOCK,      /* category */
    PF_FIX_CAT_FRAME,     /* category */
    PF_FIX_CAT_GPU,       /* category */
    PF_FIX_CAT_LOG,       /* category */
    PF_FIX_LEVEL0,        /* event names of messages: "trace" ... "fatal" (PF_FIX_LEVEL0 + 1..6) */
    PF_FIX_COUNT = PF_FIX_LEVEL0 + 7
};
#define PF_FIX_IID(k) ((uint64_t)(k) + 1)
#define PF_LOC_IID(loc) ((uint64_t)(loc) + 32)
_Static_assert(PF_FIX_COUNT < 32, "fixed iids stay below the source locations'");

/* ---- sequences ------------------------------------------------------------------------------ */

typedef struct pf_seq {
    uint32_t id;            /* trusted_packet_sequence_id */
    int started;            /* its first packet (state cleared, clock, defaults) is written */
    int incremental;        /* timestamps are deltas on the sequence's clock */
    int64_t last_ts;        /* of the last packet timed on that clock */
    uint64_t default_track; /* track_event_defaults.track_uuid, 0 = none */
    unsigned char *loc_sent; /* per source location id: its name and location are interned */
    uint32_t loc_cap;
    uint32_t fixed_sent;    /* bit k: PF_FIX k is interned */
    mprof_umap bodies;      /* hash of a message body -> iid (capped: pf_intern_body) */
    uint64_t next_iid;
} pf_seq;

/* ---- the writer ------------------------------------------------------------------------------ */

#define PF_NONE UINT32_MAX

typedef struct pf_open {
    uint32_t loc;
    int64_t start;
    int state; /* PF_Z_*: what has been written of it */
    char *name, *text; /* annotations not yet written (the BEGIN is pending, or they came late) */
    uint32_t name_len, text_len;
    uint64_t value;
    int has_value, late_name;
} pf_open;
/* HELD: begun before a --time window, written if it lasts into it; PENDING: its BEGIN waits for
 * the thread's next event (annotations come right after a begin). */
enum { PF_Z_HELD = 0, PF_Z_WRITTEN = 1, PF_Z_SKIPPED = 2, PF_Z_PENDING = 3 };

/* A track that holds zones: a thread's own, or a fiber's. */
typedef struct pf_ztrack {
    uint64_t uuid;
    uint32_t fiber_name; /* string id; 0 = a thread's own track */
    uint32_t thread;     /* the thread whose track it is */
    pf_open *stack;
    uint32_t depth, cap;
    int described;
} pf_ztrack;

typedef struct pf_thread {
    int used;
    uint32_t seq;     /* index into pf.seqs */
    uint32_t track;   /* its own ztrack */
    uint32_t fiber;   /* the ztrack of the fiber it is in, PF_NONE */
    uint32_t pending; /* the ztrack whose top zone's BEGIN waits for its annotations */
    char *described_name; /* the name its descriptor was written with */
    uint64_t tid;
} pf_thread;

typedef struct pf_gpu pf_gpu;
typedef struct pf_sys pf_sys;
typedef struct pf_async pf_async;

typedef struct pf {
    FILE *out;
    mprof_pb buf;             /* whole packets waiting to be written to out */
    mprof_reader *r;
    mprof_walker *w;
    const mprof_export_range *range; /* NULL = everything */
    mprof_perfetto_stats *st;
    int64_t pid;               /* process 0's (the capture's with one process) */
    uint64_t process_uuid;
    /* A capture of several processes (mprof merge): each process's pid and track uuid (index
     * 0 = pid and process_uuid above); NULL with one process. */
    int64_t *pids;
    uint64_t *process_uuids;
    uint32_t n_processes;
    int processes_described;   /* the processes' descriptors are written */
    pf_seq *seqs;
    uint32_t n_seqs, seqs_cap;
    pf_thread *threads;
    uint32_t threads_cap;
    pf_ztrack *ztracks;
    uint32_t n_ztracks, ztracks_cap;
    mprof_umap fiber_tracks;   /* fiber name id + 1 -> ztrack */
    mprof_umap lock_rows;      /* (lock << 20 | row) + 1 -> sequence index */
    mprof_umap counters;       /* counter key -> 1 when its descriptor is written */
    uint32_t *frame_seqs;      /* per walker frame set: sequence index + 1 */
    uint32_t frame_seqs_cap;
    uint32_t cur_thread;       /* thread of the event being handled (memory hook) */
    pf_gpu *gpu;
    pf_sys *sys;
    pf_async *async;
    int oom;
    int write_failed;
    /* The batch being read (perfetto.c): its records up to cur_rec are handled; post: the
     * event handled last waits for its GPU and flush step (after_event) at post_ts. */
    const mprof_batch *bat;
    uint32_t cur_run, cur_rec;
    int post;
    int64_t post_ts;
} pf;

/* The track uuid of process k (mprof_reader_process): its own in a capture of several, the
 * process's otherwise. */
uint64_t pf_process_uuid(const pf *x, uint32_t k);
/* A fresh sequence; incremental: its timestamps are deltas on its own clock. Returns its index,
 * or PF_NONE when out of memory. */
uint32_t pf_seq_new(pf *x, int incremental, uint64_t default_track);
/* Opens a packet of sequence si at ts (INT64_MIN: a packet without a timestamp); the caller
 * adds its fields, then pf_packet_end. */
void pf_packet_begin(pf *x, uint32_t si, int64_t ts);
void pf_packet_end(pf *x);
/* Writes the interned data a track event needs on sequence si before the event's packet
 * fields: fixed names (bit mask of PF_FIX), the name and location of source location loc
 * (PF_NONE: none). Call between pf_packet_begin and the track event. */
void pf_intern(pf *x, uint32_t si, uint32_t fixed_mask, uint32_t loc);
/* A track descriptor: uuid, parent (0 = none), name, and a counter's unit (0 = not a counter,
 * else PF_CD_UNIT_*), rank among its siblings (INT32_MIN = none). */
void pf_describe(pf *x, uint64_t uuid, uint64_t parent, const char *name, int counter_unit,
                 int32_t rank);
/* A counter value on counter track uuid (described by the caller), written on sequence si. */
void pf_counter(pf *x, uint32_t si, uint64_t uuid, int64_t ts, double v, int integer);
/* Writes out buffered packets when there are enough of them (force: all). -1 on a write error. */
int pf_flush(pf *x, int force);

/* Track uuids: an index and a kind in the low four bits, so that the uuid a track event names
 * (a fiber's, a counter's) is a one- or two-byte varint. */
enum { PF_UUID_PROCESS = 1, PF_UUID_THREAD, PF_UUID_FIBER, PF_UUID_GPU, PF_UUID_LOCK,
       PF_UUID_LOCK_ROW, PF_UUID_FRAMES, PF_UUID_PLOT, PF_UUID_MEMORY, PF_UUID_CPU,
       PF_UUID_GROUP, PF_UUID_ASYNC };
static inline uint64_t pf_uuid(int kind, uint64_t index)
{
    return (index & 0x0fffffffffffffffull) << 4 | (uint64_t)kind;
}

/* perfetto_async.c: async spans, kept to the end, then on lanes of a track per async track. */
pf_async *pf_async_new(void);
void pf_async_free(pf_async *a);
/* A span the walker completed (its async_span hook). */
void pf_async_span(pf *x, const mprof_async_span *s);
/* The end: every track's spans are laid out and written. */
void pf_async_finish(pf *x);

/* perfetto_gpu.c: GPU zones, reordered per queue, on lanes that nest, with a flow from the
 * instant of their CPU submit. */
pf_gpu *pf_gpu_new(void);
void pf_gpu_free(pf_gpu *g);
/* A GPU zone began on the CPU (GPU_ZONE_BEGIN of the event stream) on sequence si, while the
 * thread's zones go to track_uuid: an instant there starts the flow to the GPU zone. */
void pf_gpu_submit(pf *x, const mprof_event *ev, uint32_t si, uint64_t track_uuid);
/* The walker completed a GPU zone. */
void pf_gpu_zone(pf *x, const mprof_tl_zone *z);
/* The stream reached ts: zones that can no longer be preceded are written. */
void pf_gpu_advance(pf *x, int64_t ts);
/* The end: every buffered zone is written. */
void pf_gpu_finish(pf *x);
/* The flow id joining a submit to its GPU zone. */
uint64_t pf_gpu_flow_id(uint32_t ctx, uint32_t thread, int64_t cpu_ns, uint32_t loc);

/* perfetto_sched.c: scheduler data, CPU usage counters, callstack samples, process tree. */
pf_sys *pf_sys_new(void);
void pf_sys_free(pf_sys *s);
/* Handles a system record (and DEF_MODULE, for the samples' mappings); others are ignored. */
void pf_sys_event(pf *x, const mprof_event *ev);
/* The end: buffered scheduler events and the process tree are written. */
void pf_sys_finish(pf *x);
/* The name of a capture thread as the scheduler's comm (15 bytes at most) into buf. */
const char *pf_thread_comm(pf *x, uint64_t tid, char *buf, size_t len);

#endif
