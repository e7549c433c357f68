/* record.h - the per-request record and its compact binary codec.
 *
 * A record is what a worker measured for one request (see docs/metrics.md
 * for each field's meaning). Times are nanoseconds since the run's time
 * zero on the worker's CLOCK_MONOTONIC; HR_NO_TIME marks a moment that
 * never happened (no headers, no chunk...).
 *
 * Wire/storage form: records travel in batches inside PROTO_RECORDS
 * messages, encoded with LEB128 varints (zigzag for signed fields, chunk
 * arrivals as deltas). The same delta encoding is what the store keeps in
 * the `chunks` column, so a request's raw chunk arrivals are kept compactly
 * and metrics can be recomputed later. Decoding is defensive: every length
 * and count is checked against the input and limits.h.
 */
#ifndef HR_RECORD_H
#define HR_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"

#define HR_NO_TIME (-1)

enum hr_phase { HR_PHASE_WARMUP = 0, HR_PHASE_PROFILING = 1, HR_PHASE__COUNT };

/* Error categories. Names (hr_err_name) are the stable strings in exports. */
enum hr_err {
	HR_ERR_NONE = 0,
	HR_ERR_CONNECT,          /* could not connect (refused, DNS, unreachable) */
	HR_ERR_TIMEOUT,          /* request timeout (target.timeout_s) */
	HR_ERR_RESET,            /* connection closed or reset mid-response */
	HR_ERR_HTTP_4XX,
	HR_ERR_HTTP_5XX,
	HR_ERR_HTTP_OTHER,       /* any other non-200 status */
	HR_ERR_MALFORMED_STREAM, /* unparseable SSE/JSON, oversize line */
	HR_ERR_NO_CONTENT,       /* 200 but no content-bearing chunk */
	HR_ERR_CANCELLED,        /* cancelled by the client (stop, grace, policy) */
	HR_ERR_TRANSPORT,        /* any other transport failure */
	HR_ERR_RATE_LIMITED,     /* HTTP 429 (new categories go last: the numbers are stored) */
	HR_ERR__COUNT
};

/* Where a token count came from. */
enum hr_toksrc {
	HR_TOKSRC_NONE = 0,   /* unknown */
	HR_TOKSRC_USAGE,      /* the server's usage block */
	HR_TOKSRC_CHUNKS,     /* one token per content-bearing chunk */
	HR_TOKSRC_REQUESTED,  /* the length the workload asked for */
	HR_TOKSRC_TOKENIZER,  /* counted by a tokenizer */
	HR_TOKSRC__COUNT
};

#define HR_REC_STREAMED 0x01u /* timed by chunks: a streamed response, or an embeddings or
                               * rankings answer (one chunk: its arrival) */

struct hr_record {
	uint64_t seq;    /* per-worker sequence number, 0.. */
	uint64_t req_id; /* global request index (seeds its prompt) */
	uint32_t worker;
	uint32_t session, turn; /* 0 when not part of a session */
	uint8_t phase, error, isl_src, osl_src, flags;
	int32_t http_status; /* 0: no response */
	int64_t intended_ns, start_ns, headers_ns, first_output_ns, end_ns, done_ns;
	int32_t isl, osl, reasoning_tokens; /* -1: unknown */
	/* the counts behind isl and osl (docs/metrics.md, "Token counts"), -1
	 * when unknown: the output length asked for, the server's usage and
	 * the run's tokenizer over the text sent and received */
	int32_t req_osl, usage_isl, usage_osl, tok_isl, tok_osl;
	/* what a multimodal or media request carried and got back, -1 when
	 * the endpoint has none (docs/metrics.md, "Media"): pictures and audio
	 * clips sent, their bytes (as files, before base64), pictures in the
	 * answer, and the answer body's bytes as received */
	int32_t images_in, audio_in, media_bytes_in, images_out, bytes_out;
	uint32_t n_chunks;
	int64_t *chunk_ns; /* owned; arrival of each content-bearing chunk */
	char *error_msg;   /* owned; NULL when none */
};

const char *hr_err_name(int err);       /* "" for HR_ERR_NONE, "?" out of range */
const char *hr_toksrc_name(int src);
const char *hr_phase_name(int phase);   /* "warmup" | "profiling" */
int hr_err_from_name(const char *name); /* -1 when unknown */

void record_init(struct hr_record *r);
void record_release(struct hr_record *r); /* frees chunk_ns and error_msg */
/* Appends a chunk arrival, growing the array (bounded by
 * HR_MAX_CHUNKS_PER_REQUEST). Returns 0 or -1 when full. */
int record_add_chunk(struct hr_record *r, int64_t t_ns, uint32_t *cap);

/* Batch codec. A batch is: "HRB" 3 (version), varint count, records; a
 * version 2 batch (records without the media counts) is still read. */
void record_batch_begin(struct dynbuf *out, uint32_t count_hint);
int record_encode(struct dynbuf *out, const struct hr_record *r);
/* Decodes a whole batch. On success *recs (caller frees each with
 * record_release, then the array) and *n are set and 0 is returned; on
 * malformed input -1 with a reason in err and nothing allocated. */
int record_batch_decode(const void *buf, size_t len, struct hr_record **recs, size_t *n,
			char *err);

/* Chunk blob as stored: varint n, then zigzag deltas (first from start_ns). */
void record_chunks_encode(struct dynbuf *out, const struct hr_record *r);
/* Decodes into a caller-owned array (realloc'ed as needed: *arr / *cap).
 * Returns the number of chunks, or -1 when the blob is malformed. */
long record_chunks_decode(const void *blob, size_t len, int64_t start_ns, int64_t **arr,
			  size_t *cap);

#endif
