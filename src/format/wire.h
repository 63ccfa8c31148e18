/*
 * wire.h - the live-capture protocol between `mprof capture` and an instrumented process.
 *
 * The tool connects and sends a HELLO; the process answers with a REPLY, then (when the reply
 * says OK) a stream of capture chunks framed exactly as in a .mprof file, ending with an END
 * chunk. The tool writes the file header, an INFO chunk holding the reply's payload, then every
 * chunk verbatim, so a live capture and an in-process capture are the same format.
 *
 *   HELLO (tool -> process, 24 bytes)
 *     magic "MPRFCAPT" | u16 version | u16 flags | u32 history_ms | u32 queue_mib | u32 reserved
 *   REPLY (process -> tool, 16-byte header + payload)
 *     magic "MPRFCAPT" | u16 version | u16 status | u32 payload_len
 *     status OK: payload = the INFO key/value payload (process name, pid, clock calibration)
 *     otherwise: payload = a human-readable message (BUSY, VERSION_MISMATCH, BAD_HELLO)
 *   STREAM (process -> tool): framed chunks (format.h); the tool may send one byte,
 *     MPROF_WIRE_STOP, to ask for an orderly end: the process then sends what it has queued and
 *     an END chunk, and closes.
 *
 * The magic and version occupy the same first ten bytes in every version, so a process and a
 * tool of different versions always recognise each other and can refuse clearly. All integers
 * are little-endian. The decoders below take bytes and never trust a length: they are the
 * functions the fuzzer drives (fuzz/fuzz_wire.c). They touch only their arguments: any thread
 * may call them, on distinct objects.
 */
#ifndef MPROF_WIRE_H
#define MPROF_WIRE_H

#include "format/format.h"

#define MPROF_WIRE_MAGIC "MPRFCAPT"
#define MPROF_WIRE_MAGIC_LEN 8
#define MPROF_WIRE_VERSION 1
#define MPROF_WIRE_HELLO_BYTES 24
#define MPROF_WIRE_REPLY_HEADER_BYTES 16
#define MPROF_WIRE_MAX_REPLY_PAYLOAD (1u << 20)
#define MPROF_WIRE_STOP 'Q'
#define MPROF_WIRE_PORT_DEFAULT 8086

/* HELLO flags. */
#define MPROF_WIRE_F_HISTORY 0x0001u /* send the history ring (history_ms of it) first */

enum {
    MPROF_WIRE_OK = 0,
    MPROF_WIRE_BUSY = 1,             /* another capture session is active */
    MPROF_WIRE_VERSION_MISMATCH = 2, /* the peers speak different protocol versions */
    MPROF_WIRE_BAD_HELLO = 3         /* the hello was not an mprof capture request */
};

typedef struct mprof_wire_hello {
    uint16_t version;
    uint16_t flags;
    uint32_t history_ms;
    uint32_t queue_mib; /* the tool's memory limit: queued bytes beyond it are dropped */
} mprof_wire_hello;

typedef struct mprof_wire_reply {
    uint16_t version;
    uint16_t status;
    uint32_t payload_len;
    const unsigned char *payload; /* points into the decoded bytes */
} mprof_wire_reply;

/* Decoder results: bytes consumed are returned through *consumed. */
enum { MPROF_WIRE_NEED_MORE = 0, MPROF_WIRE_DONE = 1, MPROF_WIRE_ERROR = -1 };

void mprof_wire_encode_hello(unsigned char out[MPROF_WIRE_HELLO_BYTES], const mprof_wire_hello *h);
/* Decodes a hello. DONE with *out filled (out->version may differ from ours: the caller refuses
 * it), NEED_MORE, or ERROR with a message in err (not an mprof tool). */
int mprof_wire_decode_hello(const unsigned char *p, size_t n, mprof_wire_hello *out, char *err,
                            size_t errlen);

/* Appends a reply (header and payload) to out. Returns 0 or -1 (out of memory, out unchanged). */
int mprof_wire_encode_reply(mprof_buf *out, uint16_t status, const void *payload, size_t len);
/* Decodes a reply from p. DONE fills *out and *consumed; ERROR puts a message in err. A reply
 * of another version is still decoded (DONE) so the caller can print its message. */
int mprof_wire_decode_reply(const unsigned char *p, size_t n, mprof_wire_reply *out,
                            size_t *consumed, char *err, size_t errlen);

/* Counts kept by mprof_wire_scan_events over an EVENTS payload. */
typedef struct mprof_wire_counts {
    uint64_t events;
    uint64_t zones;   /* ZONE_BEGIN */
    uint64_t frames;  /* FRAME_MARK */
    uint64_t plots;   /* PLOT_F64 and PLOT_I64 */
    uint64_t lost;    /* sum of LOST records */
    uint32_t max_thread;
} mprof_wire_counts;

/* One chunk of the stream: header fields and the extent in the input (header included). */
typedef struct mprof_wire_chunk {
    int kind, codec;
    uint32_t stored_len, raw_len;
    const unsigned char *bytes; /* header + payload */
    size_t size;
} mprof_wire_chunk;

/* Decodes the next framed chunk at p: checks the header and the checksum. DONE fills *out and
 * *consumed (= out->size); NEED_MORE; ERROR with a message in err. */
int mprof_wire_next_chunk(const unsigned char *p, size_t n, mprof_wire_chunk *out,
                          size_t *consumed, char *err, size_t errlen);

/* Walks the compact records of an uncompressed EVENTS payload and adds to *c. Returns 0, or -1
 * with a message in err when a record is malformed (what was counted before it stays). */
int mprof_wire_scan_events(const unsigned char *p, size_t n, mprof_wire_counts *c, char *err,
                           size_t errlen);

/* Decompresses a chunk's payload into raw (replaced). Returns 0 or -1 with a message. */
int mprof_wire_chunk_payload(const mprof_wire_chunk *ch, mprof_buf *raw, void *dctx, char *err,
                             size_t errlen);

/* The tool's side of the stream: feed it bytes as they arrive. */
typedef struct mprof_wire_stream {
    mprof_wire_counts counts; /* over every EVENTS chunk so far */
    uint64_t chunks;
    int end_seen;             /* the END chunk arrived: the stream is over */
    uint64_t end_events_lost; /* END's events_lost */
    mprof_buf raw;            /* scratch: the last decompressed payload */
    void *dctx;               /* ZSTD_DCtx, created on first use */
    char err[256];
} mprof_wire_stream;

/* Called for each verified chunk, before it is decoded; non-zero stops the feed (ERROR). */
typedef int (*mprof_wire_chunk_fn)(void *user, const mprof_wire_chunk *ch);

/* Consumes every complete chunk in [p, p + n): checks it, hands it to fn (may be NULL), counts
 * EVENTS payloads, notes END. *consumed gets the bytes used (whole chunks). Returns DONE when the
 * END chunk was consumed, NEED_MORE when more bytes are needed, ERROR with s->err set when the
 * stream is corrupt (or fn failed). */
int mprof_wire_feed(mprof_wire_stream *s, const unsigned char *p, size_t n, size_t *consumed,
                    mprof_wire_chunk_fn fn, void *user);
void mprof_wire_stream_free(mprof_wire_stream *s);

/* Value of key in a key/value (INFO/END) payload, copied into out ("" when absent). */
void mprof_wire_kv_get(const unsigned char *p, size_t n, const char *key, char *out, size_t outn);
/* 1 when p..p+n is a whole key/value list (INFO's payload: pairs of varint-prefixed strings,
 * nothing left over), 0 otherwise. `mprof capture` refuses a handshake whose info block is not
 * (fuzz/fuzz_kv.c). */
int mprof_wire_kv_well_formed(const unsigned char *p, size_t n);

/* Name of a reply status ("OK", "BUSY", ...). */
const char *mprof_wire_status_name(int status);

#endif
