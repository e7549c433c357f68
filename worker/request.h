/* request.h - one HTTP request to the target: building it, measuring it,
 * turning what happened into a record.
 *
 * A `struct req` is a pooled libcurl easy handle with everything one
 * in-flight request needs (body buffer, SSE parser, the record being
 * filled). It is reused for request after request, so its buffers and its
 * connection (through the multi's cache) are warm.
 *
 * Timing points (ns since t0, monotonic; see docs/worker.md):
 *   start_ns      req_launch, just before curl_multi_add_handle
 *   headers_ns    header callback, the blank line ending the final
 *                 (non-1xx) response's header block
 *   chunk_ns[i]   one clock read per write callback; every content-bearing
 *                 SSE event parsed from that callback's bytes gets it
 *   done_ns       given by the caller when libcurl reports completion
 * The hot path (write callback) reads the clock first and then parses; JSON
 * work never delays the timestamp of the bytes being parsed.
 *
 * Thread affinity: the loop's thread.
 */
#ifndef HR_WORKER_REQUEST_H
#define HR_WORKER_REQUEST_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#include "chunked.h"
#include "chunkscan.h"
#include "dynbuf.h"
#include "endpoint.h"
#include "h1.h"
#include "netallow.h"
#include "record.h"
#include "spec.h"
#include "sse.h"
#include "timers.h"

/* What every request of a run shares; built once from the spec. */
struct tokprompt;  /* tokprompt.h */
struct ep_handler; /* ephandler.h */

struct req_cfg {
	char *url;                  /* owned: target.url + endpoint path */
	CURLU *curlu;               /* owned: url, parsed once (NULL: libcurl parses url) */
	struct curl_slist *headers; /* owned */
	char *body_tail;            /* owned: fixed JSON members + '}' */
	size_t body_tail_len;
	json_t *tail_members;       /* owned: the same members as an object (chat and
	                             * completions; a dataset entry's extra is merged
	                             * over them), else NULL */
	bool with_prompt;     /* extra_body does not replace the prompt */
	bool with_max_tokens; /* extra_body does not replace max_tokens */
	const char *max_tokens_key; /* "max_tokens" or "max_completion_tokens" (static) */
	bool min_tokens;      /* workload.ignore_eos: send min_tokens = the requested output */
	int endpoint;         /* SPEC_EP_* */
	const struct ep_handler *h; /* the endpoint's handler (ephandler.h; borrowed, static) */
	void *ep;                   /* the handler's own run state (its cfg_release frees it) */
	bool stream;
	bool fast_json; /* chunkscan fast path; HEADROOM_WORKER_JSON=jansson: off */
	long timeout_ms;
	uint64_t seed;
	struct spec_dist isl, osl;
	const struct tokprompt *tp; /* workload.tokenizer: prompts of exact token lengths */
	const struct tok *tok;      /* workload.tokenizer (borrowed), or NULL */
	int isl_count, osl_count;   /* workload.token_count: SPEC_COUNT_* */
	int block_size;             /* workload.block_size: tokens (words) of a trace hash id */
	bool count_output;          /* keep the output text for the tokenizer's count */
	bool sends_osl;             /* the body asks for an output length */
	uint32_t worker;
	int64_t t0; /* absolute monotonic ns of time zero; set at START */
	/* endpoints besides chat and completions (docs/worker.md, "Endpoints") */
	bool one_piece;   /* embeddings, rankings: no output; the answer is timed as one chunk */
	bool with_items;  /* extra_body does not replace the passages / the inputs */
	int items;        /* passages (rankings) or inputs (embeddings) per request; 0: unknown */
	struct ep_template tpl;            /* template: the body */
	struct ep_path resp_path, ev_path; /* template: response_path, stream_path */
	/* the operator's allow-list (borrowed; NULL: none), checked on each
	 * address libcurl is about to connect to, and the URL's host for its
	 * name entries (owned) */
	const struct netallow *allow;
	char *host;
	/* the native transport (h1.h), chosen by target.transport: the target
	 * (owned; its allow and loop set by the runner) and the request head
	 * up to the Content-Length value, built once (owned) */
	bool native;
	struct h1_target *tgt;
	char *h1_head;
	size_t h1_head_len;
};

/* Builds the shared request parts from a validated spec (borrowed; nothing
 * is kept from it). Fails (-1, message in err) when api_key_env names an
 * unset variable or one whose value cannot go into a header. */
int req_cfg_init(struct req_cfg *c, const struct spec *s, uint32_t worker, char *err);
void req_cfg_release(struct req_cfg *c);

enum req_body_mode { RB_UNKNOWN = 0, RB_SSE, RB_BODY, RB_ERROR };

/* What one request is: identity, timing, content. */
struct req_params {
	uint64_t seq, req_id;
	int64_t intended_ns;
	uint8_t phase;            /* HR_PHASE_* */
	uint32_t session, turn;   /* record fields; 0 outside sessions */
	int isl, osl;             /* -1: drawn from the workload with req_id; isl -2:
	                           * unknown (a dataset's text of uncounted length) */
	const char *text;         /* a dataset's prompt (UTF-8, raw), or NULL: synthetic */
	size_t text_len;
	const char *extra;        /* a dataset entry's `extra`: a compact JSON object merged
	                           * over the body (chat, completions), or NULL */
	size_t extra_len;
	const char *prefix;       /* a shared prefix prompt, JSON-escaped, put before the
	                           * prompt in the same message; NULL: none */
	size_t prefix_len;
	const uint64_t *hash_ids; /* trace: prefix blocks of the prompt */
	uint32_t n_hash;
	/* A conversation: history holds the earlier turns, JSON-escaped -
	 * chat: `{"role":"user","content":"..."},{"role":"assistant",...},`
	 * fragments; completions: the text, every part followed by one
	 * space. NULL: a single request. */
	const struct dynbuf *history;
	bool capture; /* keep the answer's text (another turn follows) */
	int extra_tokens; /* tokenizer tokens of the shared system and prefix prompts
	                   * this request carries (counted into its tokenizer ISL) */
};

#define REQ_ERR_BODY_MAX 256             /* bytes of a non-200 body kept for the message */
#define REQ_MAX_CONVERSATION (16u << 20) /* bytes of a conversation's history / an answer */
#define REQ_BLOCK_OFFSET (1ULL << 41)    /* block h's text is prompt index this + h */

struct req {
	const struct req_cfg *cfg; /* borrowed */
	CURL *easy;                /* owned; CURLOPT_PRIVATE points here */
	int index;                 /* free for the owner (position in its table) */

	void *owner;           /* free for the owner (the conversation of a turn) */
	struct tnode deadline; /* free for the owner (cancellation by policy) */

	struct hr_record rec; /* the record being filled */
	uint32_t chunk_cap;   /* capacity of rec.chunk_ns, kept across requests */
	int requested_isl, requested_osl;

	struct dynbuf body; /* request body */
	struct dynbuf resp; /* non-streamed response body */
	char err_body[REQ_ERR_BODY_MAX + 1];
	size_t err_body_len;
	struct sse_parser sse;
	struct chunkscan_memo scan_memo; /* the stream's chunkscan memo */
	char errbuf[CURL_ERROR_SIZE];
	char refused[200]; /* why the allow-list refused an address ("": it did not) */

	int mode;               /* enum req_body_mode */
	bool chunked;           /* the response body is chunked (decoded here) */
	struct chunked dechunk; /* its decoder */
	int64_t cb_ns;          /* clock of the current write callback, since t0 */
	int64_t body_ns;        /* non-streamed: when the first body bytes arrived */
	int fail;       /* HR_ERR_* decided by our callbacks, or 0 */
	char *fail_msg; /* owned */
	bool saw_done;  /* data: [DONE] seen */
	uint32_t reasoning_chunks;
	int64_t u_prompt, u_completion, u_reasoning; /* from usage; -1: none */
	/* native transport */
	struct h1_conn conn;    /* the slot's connection, kept between requests */
	int h1_status;          /* the final answer's status; 0: none yet */
	char h1_clen[32];       /* "NNN\r\n\r\n": the rest of the head */
	struct tnode tmo;       /* target.timeout_s (the runner's heap) */
	void (*h1_done)(void *ud, struct req *r, int result); /* who hears of the end */
	void *h1_ud;
	char *stream_error; /* owned: message of an in-stream {"error":...} */
	int64_t raw_bytes;  /* a raw stream's body bytes (ephandler.h, raw) */

	/* conversations */
	bool capture;              /* collect the answer */
	bool answer_over;          /* it did not fit: the conversation cannot go on */
	struct dynbuf answer;      /* the answer's content text, JSON-escaped */
	struct dynbuf output;      /* cfg->count_output: content and reasoning text, raw */
	bool output_over;          /* it did not fit: no tokenizer count */
	int extra_tokens;          /* req_params.extra_tokens */
	bool osl_sent;             /* this body asks for an output length */
	size_t user_off, user_len; /* the new user part within body (see req_turn) */
};

/* Returns a new request with its easy handle configured (caller frees with
 * req_free), or NULL when libcurl cannot make a handle. */
struct req *req_new(const struct req_cfg *cfg);
void req_free(struct req *r);

/* Prepares the request (lengths, prompt, body, a fresh record). Returns
 * 0, or -1 when the body cannot be built (too long). */
int req_prepare(struct req *r, const struct req_params *p);
/* After a successful turn with capture: appends this turn (the user part
 * and the answer) to a conversation history in the form req_params
 * describes (nothing when target.extra_body replaces the prompt). Returns
 * 0, or -1 when it does not fit. */
int req_turn(const struct req *r, struct dynbuf *history);
/* Stamps start_ns and hands the handle to the multi (loop_add is passed
 * in so this module needs no loop). Returns 0 or -1. */
int req_launch(struct req *r, int (*add)(void *ud, CURL *easy), void *ud);

/* Native transport: stamps start_ns and sends the request on the slot's
 * connection; done(ud, r, result) is called when it ends (h1_result).
 * Returns H1R_OK, or an h1_result when it could not go out (done is not
 * called then: record it with req_complete_native). */
int req_launch_native(struct req *r, void (*done)(void *ud, struct req *r, int result), void *ud);
/* Fills the record of a native request that ended with result (an
 * h1_result; H1R_TIMEOUT: target.timeout_s passed, the connection is
 * closed here). */
void req_complete_native(struct req *r, int result, int64_t done_ns);
/* Drops a native request's connection (cancellation). */
void req_abort_native(struct req *r);

/* Fills the record from what the transfer produced. result is libcurl's
 * verdict; done_ns the completion time since t0. The handle must already
 * be out of the multi. */
void req_complete(struct req *r, CURLcode result, int64_t done_ns);
/* Fills the record as cancelled at done_ns (handle already removed). */
void req_cancel(struct req *r, int64_t done_ns, const char *why);

/* Clears the per-request state after the record was consumed, keeping
 * buffers for the next request. */
void req_reset(struct req *r);

/* Maps a libcurl result to an HR_ERR_* category. */
int req_curl_error(CURLcode rc);

#endif
