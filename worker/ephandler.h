/* ephandler.h - one handler per endpoint type: everything the worker does
 * differently for one endpoint, in one place (ARCHITECTURE.md, "Endpoint
 * handlers").
 *
 * request.c is the transport-independent part of a request (timing, SSE
 * framing, the record); for what an endpoint sends and how its answers
 * are read it calls the handler of target.endpoint, found in the table of
 * ephandler.c. Both transports (libcurl and h1.c) go through the same
 * handler. The handlers live in ep_*.c; the helpers they share with
 * request.c (prompts, captured text, failures) are declared in reqpart.h.
 *
 * The endpoint's name, default path and spec rules stay in lib/spec.c.
 *
 * Thread affinity: none (the table is constant).
 */
#ifndef HR_WORKER_EPHANDLER_H
#define HR_WORKER_EPHANDLER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "chunkscan.h"
#include "dynbuf.h"
#include "spec.h"

struct req;
struct req_cfg;
struct req_params;

/* How a conversation's earlier turns are written into the next body
 * (req_params.history). */
enum ep_history {
	EP_HIST_TEXT = 0, /* the texts, each followed by one space (a prompt string) */
	EP_HIST_CHAT,     /* {"role":...,"content":...}, message fragments */
};

struct ep_handler {
	int endpoint; /* SPEC_EP_*: its name, default path and spec rules (lib/spec.c) */
	/* The request's head. content_type: the body's Content-Type unless
	 * target.headers gives one (NULL: cfg_init adds its own, a multipart
	 * boundary say). key_header: where target.api_key_env's key goes unless
	 * target.api_key_header says: NULL or "Authorization" as "Bearer KEY",
	 * another name the bare key. headers: further fixed "Name: value" lines
	 * (NULL-terminated, or NULL), each unless target.headers names it. */
	const char *content_type;
	const char *key_header;
	const char *const *headers;
	/* What is measured: one_piece, the answer is timed as one chunk and
	 * nothing is generated (output 0, first token = the answer's arrival);
	 * otherwise every content-bearing stream event is a chunk, the first
	 * one the first token. reasoning_chunks: streamed reasoning chunks
	 * stand in for usage's reasoning_tokens. any_json_event: a stream
	 * event may be any JSON value, not only an object. end_event: a
	 * stream is whole only with its last event (the event reader's
	 * ci->final); one that ends without it is malformed_stream. */
	bool one_piece;
	/* raw: the answer is not parsed. Not streamed, it is one piece (the
	 * handler's answer times it); streamed, it is no SSE: every read of
	 * the body is a chunk, the first the first token, and no output
	 * length is known. Its bytes go to the record's bytes_out. */
	bool raw;
	/* stream_bytes: a streamed answer's body bytes go to bytes_out (the
	 * pictures of a streamed image generation) */
	bool stream_bytes;
	bool reasoning_chunks;
	bool any_json_event;
	bool end_event;
	enum ep_history history;

	/* Once per run, from the validated spec (after the headers): the
	 * shared body parts (c->body_tail, c->tpl, ...) and c->with_prompt,
	 * c->with_max_tokens, c->sends_osl. Returns 0, or -1 with err. */
	int (*cfg_init)(struct req_cfg *c, const struct spec *s, char *err);
	/* Optional: frees what cfg_init put in c->ep (request.c frees the rest). */
	void (*cfg_release)(struct req_cfg *c);
	/* Per request: the body into r->body (reset, r->osl_sent set to
	 * c->sends_osl; the handler may change it). Returns 0 or -1 (too long). */
	int (*body)(struct req *r, const struct req_params *p);
	/* Optional fast path for a stream event's data: 0 with *ci filled,
	 * or -1 when not certain (event then parses the data with jansson).
	 * Must give exactly what event gives. */
	int (*scan)(const char *data, size_t len, struct chunk_info *ci, struct chunkscan_memo *m);
	/* One stream event, parsed (an object unless any_json_event); name:
	 * its SSE event: field ("message" when none). Fills *ci (note_chunk
	 * stamps it). Returns 0, or EV_FAIL with the request's failure set.
	 * NULL: the endpoint does not stream. */
	int (*event)(struct req *r, const char *name, json_t *j, struct chunk_info *ci);
	/* The whole body of a non-streamed 200 answer (j: parsed, or NULL
	 * with je saying why). Returns an HR_ERR_* (message in *msg). */
	int (*answer)(struct req *r, json_t *j, const json_error_t *je, char **msg);
};

/* The handler of an endpoint (SPEC_EP_*), or NULL when there is none. */
const struct ep_handler *ep_handler(int endpoint);

/* The handlers (ep_*.c), for the table only. */
extern const struct ep_handler ep_chat, ep_completions, ep_embeddings, ep_rankings_nim,
    ep_rankings_cohere, ep_rankings_tei, ep_tgi, ep_template, ep_embeddings_nim,
    ep_embeddings_cohere, ep_embeddings_tei, ep_vllm_generate, ep_sglang_generate, ep_raw,
    ep_responses, ep_messages, ep_audio_transcription, ep_image_generation, ep_image_edit,
    ep_image_retrieval, ep_chat_embeddings;

#endif
