/* route_native.c - the native generate routes of vLLM and SGLang in
 * headroom-mock, their route handlers (mock.h, struct mock_handler).
 *
 * vLLM, POST /inference/v1/generate (tokens in, tokens out):
 *   {"token_ids": [ids...], "sampling_params": {"max_tokens": N,
 *    "ignore_eos", "min_tokens", ...}, "model", "stream": false}
 *   token_ids is required, a non-empty array of non-negative integers
 *   (the prompt's tokens: one per id); max_tokens 1 to 1,000,000, default
 *   16 (vLLM's); "stream" true is refused (the mock serves this route
 *   whole). The answer, once its last token is due:
 *   {"request_id": "gen-mock-N", "choices": [{"index": 0,
 *    "token_ids": [...], "finish_reason": "length"|"stop"}],
 *    "prompt_token_count": P}
 *
 * SGLang, POST /generate when the body has "text" or "input_ids" and no
 * "inputs" (which is TGI's, route_tgi.c): {"text": PROMPT | "input_ids":
 * [ids], "sampling_params": {"max_new_tokens": N (default 128, SGLang's),
 * "ignore_eos", "min_new_tokens", ...}, "stream"}. Streamed, one SSE
 * event per step ("data: JSON\n\n"), then "data: [DONE]":
 *   {"text": the output so far, "output_ids": [this step's ids],
 *    "meta_info": {"id", "finish_reason": null | {"type": "length"} |
 *    {"type": "stop", "matched": 2}, "prompt_tokens", "completion_tokens",
 *    "cached_tokens": 0}}
 * Not streamed, one object with the whole text, all the ids and the
 * final meta_info.
 *
 * Tokens are the mock's words (api.c), as for TGI: token i is word
 * w = (prompt tokens + i) mod 64, its text the word and a space, its id
 * 100 + w. --early-stop ends a response after half its tokens (finish
 * "stop") unless ignore_eos, or min_tokens / min_new_tokens forbid it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mock.h"
#include "util.h"

#define NATIVE_ID_BASE 100
#define VLLM_DEFAULT_MAX_TOKENS 16
#define SGLANG_DEFAULT_MAX_NEW_TOKENS 128

/* An array of token ids: its count, or -1 with a message. */
static long long token_ids(const json_t *a, const char *name, char *err)
{
	if (!json_is_array(a) || json_array_size(a) == 0) {
		errf(err, "'%s' must be a non-empty array of token ids", name);
		return -1;
	}
	size_t i;
	const json_t *id;
	json_array_foreach(a, i, id)
	{
		if (!json_is_integer(id) || json_integer_value(id) < 0) {
			errf(err, "'%s[%zu]' must be a token id (a non-negative integer)", name, i);
			return -1;
		}
	}
	return (long long)json_array_size(a);
}

/* sampling_params: the output length (key, default dflt), ignore_eos and
 * the minimum (min_key). */
static int sampling(const json_t *root, const char *key, const char *min_key, uint32_t dflt,
                    struct gen_req *g, char *err)
{
	const json_t *sp = json_object_get(root, "sampling_params");
	g->max_tokens = dflt;
	if (!sp || json_is_null(sp))
		return 0;
	if (!json_is_object(sp))
		return errf(err, "'sampling_params' must be an object");
	char name[64];
	long long v;
	snprintf(name, sizeof name, "sampling_params.%s", key);
	int got = api_opt_int(sp, key, name, 1, HR_MAX_OSL, &v, err);
	if (got < 0)
		return -1;
	if (got)
		g->max_tokens = (uint32_t)v;
	snprintf(name, sizeof name, "sampling_params.%s", min_key);
	got = api_opt_int(sp, min_key, name, 0, HR_MAX_OSL, &v, err);
	if (got < 0)
		return -1;
	if (got)
		g->min_tokens = (uint32_t)v;
	return api_opt_bool(sp, "ignore_eos", "sampling_params.ignore_eos", &g->ignore_eos, err);
}

static int vllm_parse(struct server *srv, enum mock_api api, bool stream_path,
                      const struct http_request *req, struct gen_req *g, char *err)
{
	(void)srv;
	(void)api;
	(void)stream_path;
	json_t *root = api_load_object(req->body, req->body_len, err);
	if (!root)
		return -1;
	int rc = -1;
	bool stream = false;
	long long n = token_ids(json_object_get(root, "token_ids"), "token_ids", err);
	if (n < 0 || api_check_model(root, err) < 0 ||
	    api_opt_bool(root, "stream", "stream", &stream, err) < 0 ||
	    sampling(root, "max_tokens", "min_tokens", VLLM_DEFAULT_MAX_TOKENS, g, err) < 0)
		goto out;
	if (stream) {
		errf(err,
		     "'stream' must be false: this server answers /inference/v1/generate whole");
		goto out;
	}
	g->prompt_tokens = (uint32_t)n; /* at most the body's size */
	rc = 0;
out:
	json_decref(root);
	return rc;
}

static void add_ids(struct dynbuf *b, const struct stream *s, uint32_t from, uint32_t n)
{
	for (uint32_t i = from; i < from + n; i++) {
		if (i > from)
			ADD_LIT(b, ",");
		api_add_u64(b, NATIVE_ID_BASE + api_word_index(s, i));
	}
}

static int vllm_body(struct server *srv, const struct stream *s, struct dynbuf *b, char *extra,
                     size_t extra_size)
{
	(void)srv;
	(void)extra;
	(void)extra_size;
	dynbuf_reset(b);
	ADD_LIT(b, "{\"request_id\":\"gen-mock-");
	api_add_u64(b, s->id);
	ADD_LIT(b, "\",\"choices\":[{\"index\":0,\"token_ids\":[");
	add_ids(b, s, 0, s->max_tokens);
	ADD_LIT(b, "],\"finish_reason\":");
	if (s->eos)
		ADD_LIT(b, "\"stop\"");
	else
		ADD_LIT(b, "\"length\"");
	ADD_LIT(b, "}],\"prompt_token_count\":");
	api_add_u64(b, s->prompt_tokens);
	return ADD_LIT(b, "}");
}

const struct mock_handler mock_vllm_gen = {
	.api = API_VLLM_GEN,
	.paths = {{"/inference/v1/generate", false}},
	.parse = vllm_parse,
	.body = vllm_body,
};

/* --- SGLang ------------------------------------------------------------------ */

/* A /generate body that is SGLang's: "text" or "input_ids", no "inputs".
 * Read without parsing: the route's parse checks it whole. */
static bool sglang_claims(const struct http_request *req)
{
	json_t *root = json_loadb(req->body, req->body_len, 0, NULL);
	bool mine = json_is_object(root) && !json_object_get(root, "inputs") &&
	            (json_object_get(root, "text") || json_object_get(root, "input_ids"));
	json_decref(root);
	return mine;
}

static int sglang_parse(struct server *srv, enum mock_api api, bool stream_path,
                        const struct http_request *req, struct gen_req *g, char *err)
{
	(void)srv;
	(void)api;
	(void)stream_path;
	json_t *root = api_load_object(req->body, req->body_len, err);
	if (!root)
		return -1;
	int rc = -1;
	bool stream = false;
	const json_t *text = json_object_get(root, "text");
	const json_t *ids = json_object_get(root, "input_ids");
	if (text && ids) {
		errf(err, "give 'text' or 'input_ids', not both");
		goto out;
	}
	if (text) {
		if (!json_is_string(text) || json_string_length(text) == 0) {
			errf(err, "'text' must be a non-empty string");
			goto out;
		}
		g->prompt_tokens =
		    (uint32_t)api_text_tokens(json_string_value(text), json_string_length(text));
	} else {
		long long n = token_ids(ids, "input_ids", err);
		if (n < 0)
			goto out;
		g->prompt_tokens = (uint32_t)n;
	}
	if (api_opt_bool(root, "stream", "stream", &stream, err) < 0 ||
	    sampling(root, "max_new_tokens", "min_new_tokens", SGLANG_DEFAULT_MAX_NEW_TOKENS, g,
	             err) < 0)
		goto out;
	g->stream = stream;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* "meta_info":{...} after the output of `done` tokens; last: finished. */
static void add_meta(struct dynbuf *b, const struct stream *s, uint32_t done, bool last)
{
	ADD_LIT(b, "\"meta_info\":{\"id\":\"mock-");
	api_add_u64(b, s->id);
	ADD_LIT(b, "\",\"finish_reason\":");
	if (!last)
		ADD_LIT(b, "null");
	else if (s->eos)
		ADD_LIT(b, "{\"type\":\"stop\",\"matched\":2}");
	else
		ADD_LIT(b, "{\"type\":\"length\",\"length\":");
	if (last && !s->eos) {
		api_add_u64(b, s->max_tokens);
		ADD_LIT(b, "}");
	}
	ADD_LIT(b, ",\"prompt_tokens\":");
	api_add_u64(b, s->prompt_tokens);
	ADD_LIT(b, ",\"completion_tokens\":");
	api_add_u64(b, done);
	ADD_LIT(b, ",\"cached_tokens\":0}");
}

static void sglang_events(struct server *srv, struct conn *c, uint32_t n)
{
	struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	uint32_t done = s->sent + n;
	dynbuf_reset(b);
	ADD_LIT(b, "{\"text\":\"");
	api_add_words(b, s, 0, done);
	ADD_LIT(b, "\",\"output_ids\":[");
	add_ids(b, s, s->sent, n);
	ADD_LIT(b, "],");
	add_meta(b, s, done, done >= s->max_tokens);
	ADD_LIT(b, "}");
	api_send_event(srv, c, true);
}

/* An injected malformed event: cut off inside its text. */
static void sglang_malformed(struct server *srv, struct conn *c)
{
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	ADD_LIT(b, "{\"text\":\"");
	api_add_words(b, &c->st, 0, c->st.sent);
	api_send_event(srv, c, true);
}

static void sglang_end(struct server *srv, struct conn *c)
{
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	ADD_LIT(b, "[DONE]");
	api_send_event(srv, c, true);
}

static int sglang_body(struct server *srv, const struct stream *s, struct dynbuf *b, char *extra,
                       size_t extra_size)
{
	(void)srv;
	(void)extra;
	(void)extra_size;
	dynbuf_reset(b);
	ADD_LIT(b, "{\"text\":\"");
	api_add_words(b, s, 0, s->max_tokens);
	ADD_LIT(b, "\",\"output_ids\":[");
	add_ids(b, s, 0, s->max_tokens);
	ADD_LIT(b, "],");
	add_meta(b, s, s->max_tokens, true);
	return ADD_LIT(b, "}");
}

const struct mock_handler mock_sglang_gen = {
	.api = API_SGLANG_GEN,
	.paths = {{"/generate", false}},
	.claims = sglang_claims,
	.parse = sglang_parse,
	.events = sglang_events,
	.malformed = sglang_malformed,
	.events_end = sglang_end,
	.body = sglang_body,
};
