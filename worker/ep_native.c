/* ep_native.c - the endpoint handlers (ephandler.h) of the servers' own
 * APIs beside OpenAI's: NVIDIA NIM (/v1/embeddings with input_type and
 * truncate), Cohere (/v2/embed) and Hugging Face TEI (/embed) embeddings;
 * vLLM's token-in/token-out /inference/v1/generate; SGLang's native
 * /generate (streamed); and raw, a body sent as given whose answer is
 * timed but not parsed. Answers and events are read by epnread.c.
 * docs/worker.md, "Endpoints", says what each sends. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ephandler.h"
#include "epnread.h"
#include "record.h"
#include "reqpart.h"
#include "request.h"
#include "rng.h"
#include "tokenizer.h"
#include "util.h"

/* --- embeddings ------------------------------------------------------------ */

/* The member holding the inputs, per endpoint. */
static const char *inputs_key(int ep)
{
	return ep == SPEC_EP_EMBEDDINGS_COHERE ? "texts"
	       : ep == SPEC_EP_EMBEDDINGS_TEI  ? "inputs"
	                                       : "input";
}

static int emb_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	json_t *extra = s->target.extra_body;
	int ep = s->target.endpoint;
	c->with_prompt = !json_object_get(extra, inputs_key(ep));
	c->with_items = c->with_prompt;
	c->items = c->with_prompt ? s->workload.batch_size : 0;
	json_t *fixed = json_object();
	if (!fixed)
		xalloc_die();
	if (ep != SPEC_EP_EMBEDDINGS_TEI) /* TEI serves one model and takes no "model" */
		json_object_set_new(fixed, "model", json_string(s->target.model));
	if (ep == SPEC_EP_EMBEDDINGS_NIM) {
		json_object_set_new(fixed, "input_type", json_string("query"));
		json_object_set_new(fixed, "encoding_format", json_string("float"));
		json_object_set_new(fixed, "truncate", json_string("NONE"));
	} else if (ep == SPEC_EP_EMBEDDINGS_COHERE) {
		json_object_set_new(fixed, "input_type", json_string("search_document"));
		json_object_set_new(fixed, "embedding_types", json_pack("[s]", "float"));
	}
	if (json_is_object(extra) && json_object_update(fixed, extra) < 0) {
		json_decref(fixed);
		return errf(err, "target.extra_body cannot be merged");
	}
	char *dump = json_dumps(fixed, JSON_COMPACT);
	json_decref(fixed);
	if (!dump || dump[0] != '{') {
		free(dump);
		return errf(err, "cannot serialise the request body");
	}
	c->body_tail = xstrdup(dump + 1);
	c->body_tail_len = strlen(c->body_tail);
	free(dump);
	return 0;
}

/* {"input": [prompt, item 2, ...], <fixed members>}: always an array (the
 * three APIs take one); the input length is the texts' lengths summed. */
static int emb_body(struct req *r, const struct req_params *p)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	int64_t sum = 0;

	if (dynbuf_add(b, "{", 1) < 0)
		return -1;
	if (!c->with_prompt) {
		r->requested_isl = -1;
		return rq_end_body(r, false);
	}
	if (dynbuf_add(b, "\"", 1) < 0 || dynbuf_addstr(b, inputs_key(c->endpoint)) < 0 ||
	    dynbuf_addstr(b, "\":[\"") < 0 || rq_add_user_text(r, p) < 0 ||
	    dynbuf_add(b, "\"", 1) < 0)
		return -1;
	for (int k = 1; k < c->items; k++)
		if (rq_add_item(r, p, k, ",\"", "\"", &sum) < 0)
			return -1;
	if (dynbuf_add(b, "]", 1) < 0)
		return -1;
	if (r->requested_isl >= 0)
		r->requested_isl =
		    sum + r->requested_isl > INT32_MAX ? INT32_MAX : (int)(sum + r->requested_isl);
	return rq_end_body(r, true);
}

/* A whole answer, read by epnread.c; one_piece: its arrival is the one chunk. */
static int epn_answer(struct req *r, json_t *j, const json_error_t *je, char **msg)
{
	struct ep_facts f;
	if (!j) {
		*msg = xasprintf("response body is not JSON: %s", je->text);
		return HR_ERR_MALFORMED_STREAM;
	}
	epn_read_answer(r->cfg->endpoint, j, r->cfg->items, &f);
	return rq_take_answer(r, &f, msg);
}

const struct ep_handler ep_embeddings_nim = {
	.endpoint = SPEC_EP_EMBEDDINGS_NIM,
	.content_type = "application/json",
	.one_piece = true,
	.cfg_init = emb_cfg,
	.body = emb_body,
	.answer = epn_answer,
};

const struct ep_handler ep_embeddings_cohere = {
	.endpoint = SPEC_EP_EMBEDDINGS_COHERE,
	.content_type = "application/json",
	.one_piece = true,
	.cfg_init = emb_cfg,
	.body = emb_body,
	.answer = epn_answer,
};

const struct ep_handler ep_embeddings_tei = {
	.endpoint = SPEC_EP_EMBEDDINGS_TEI,
	.content_type = "application/json",
	.one_piece = true,
	.cfg_init = emb_cfg,
	.body = emb_body,
	.answer = epn_answer,
};

/* --- vLLM /inference/v1/generate -------------------------------------------- */

#define VLLM_ID_BASE 100    /* synthetic ids: from here ... */
#define VLLM_ID_SPAN 32000u /* ... over this many */

static int vllm_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	json_t *extra = s->target.extra_body;
	c->with_prompt = !json_object_get(extra, "token_ids");
	c->with_max_tokens = !json_object_get(extra, "sampling_params");
	c->sends_osl = c->with_max_tokens;
	c->min_tokens = s->workload.ignore_eos && c->with_max_tokens;
	return rq_cfg_tail(c, s, true, err);
}

/* Appends the i-th id (from 0) of a run of ids drawn from base. */
static int add_drawn_id(struct dynbuf *b, uint64_t base, int i, bool sep)
{
	uint64_t h = rng_hash(base, RNG_STREAM_PROMPT, (uint64_t)i);
	return (sep && dynbuf_add(b, ",", 1) < 0) ||
	               rq_add_uint(b, VLLM_ID_BASE + (int)(h % VLLM_ID_SPAN)) < 0
	           ? -1
	           : 0;
}

/* One id per whitespace-separated word of s[0..n) (FNV-1a of its bytes),
 * so that the same text always gives the same ids; *count grows by the
 * words. */
static int add_word_ids(struct dynbuf *b, const char *s, size_t n, int64_t *count)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
			i++;
		if (i == n)
			break;
		uint64_t h = 0xcbf29ce484222325ULL;
		while (i < n && s[i] != ' ' && s[i] != '\n' && s[i] != '\t' && s[i] != '\r') {
			h = (h ^ (unsigned char)s[i++]) * 0x100000001b3ULL;
		}
		if ((*count && dynbuf_add(b, ",", 1) < 0) ||
		    rq_add_uint(b, VLLM_ID_BASE + (int)(h % VLLM_ID_SPAN)) < 0)
			return -1;
		++*count;
	}
	return 0;
}

/* The prompt's token ids. With workload.tokenizer: the prompt headroom
 * writes (shared prefix included) encoded by it. Without: one id per word
 * of a shared prefix and of a dataset's text (a hash of the word), and a
 * synthetic prompt's requested_isl ids drawn from the seed: a trace's
 * prefix blocks from their hash ids (the same block, the same ids), the
 * rest from the request. The ISL is then the ids sent. */
static int vllm_ids(struct req *r, const struct req_params *p)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	size_t off = b->len;
	if (c->tok) {
		if (dynbuf_add(b, "\"", 1) < 0 || rq_add_prompt(r, p) < 0 ||
		    dynbuf_add(b, "\"", 1) < 0)
			return -1;
		json_t *s = json_loadb(b->data + off, b->len - off, JSON_DECODE_ANY, NULL);
		b->len = off;
		struct tok_ids ids;
		tok_ids_init(&ids);
		if (!json_is_string(s) ||
		    tok_encode(c->tok, json_string_value(s), json_string_length(s), &ids) < 0) {
			json_decref(s);
			tok_ids_release(&ids);
			return -1;
		}
		json_decref(s);
		int rc = 0;
		for (size_t i = 0; rc == 0 && i < ids.len; i++)
			rc = (i && dynbuf_add(b, ",", 1) < 0) || rq_add_uint(b, (int)ids.v[i]) < 0
			         ? -1
			         : 0;
		/* the record adds the shared prompts' tokens (extra_tokens) itself */
		int64_t own = (int64_t)ids.len - r->extra_tokens;
		r->requested_isl = own < 0 ? 0 : own > INT32_MAX ? INT32_MAX : (int)own;
		tok_ids_release(&ids);
		return rc;
	}
	int64_t n = 0;
	if (p->prefix) {
		/* the prefix is JSON-escaped text: its words, unescaped enough */
		if (add_word_ids(b, p->prefix, p->prefix_len, &n) < 0)
			return -1;
	}
	if (p->text) {
		if (add_word_ids(b, p->text, p->text_len, &n) < 0)
			return -1;
	} else {
		int left = r->requested_isl < 1 ? 1 : r->requested_isl;
		for (uint32_t i = 0; i < p->n_hash && left > 0; i++) {
			int k = left < c->block_size ? left : c->block_size;
			uint64_t base = rng_hash(c->seed, RNG_STREAM_PROMPT,
			                         REQ_BLOCK_OFFSET + p->hash_ids[i]);
			for (int j = 0; j < k; j++, n++)
				if (add_drawn_id(b, base, j, n > 0) < 0)
					return -1;
			left -= k;
		}
		uint64_t base = rng_hash(c->seed, RNG_STREAM_PROMPT, p->req_id);
		for (int j = 0; j < left; j++, n++)
			if (add_drawn_id(b, base, j, n > 0) < 0)
				return -1;
	}
	if (n == 0 && add_drawn_id(b, rng_hash(c->seed, RNG_STREAM_PROMPT, p->req_id), 0, false) < 0)
		return -1;
	if (n == 0)
		n = 1;
	r->requested_isl = n > INT32_MAX ? INT32_MAX : (int)n;
	return 0;
}

static int vllm_body(struct req *r, const struct req_params *p)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	if (dynbuf_add(b, "{", 1) < 0)
		return -1;
	if (c->with_prompt && (dynbuf_addstr(b, "\"token_ids\":[") < 0 || vllm_ids(r, p) < 0 ||
	                       dynbuf_add(b, "]", 1) < 0))
		return -1;
	if (!c->with_prompt)
		r->requested_isl = -1;
	if (c->with_max_tokens &&
	    ((c->with_prompt && dynbuf_add(b, ",", 1) < 0) ||
	     dynbuf_addstr(b, "\"sampling_params\":{\"max_tokens\":") < 0 ||
	     rq_add_uint(b, r->requested_osl) < 0 ||
	     (c->min_tokens &&
	      (dynbuf_addstr(b, ",\"ignore_eos\":true") < 0 ||
	       dynbuf_addstr(b, ",\"min_tokens\":") < 0 || rq_add_uint(b, r->requested_osl) < 0)) ||
	     dynbuf_add(b, "}", 1) < 0))
		return -1;
	if (dynbuf_addstr(b, c->with_prompt || c->with_max_tokens ? ",\"stream\":false"
	                                                          : "\"stream\":false") < 0)
		return -1;
	return rq_end_body(r, true);
}

const struct ep_handler ep_vllm_generate = {
	.endpoint = SPEC_EP_VLLM_GENERATE,
	.content_type = "application/json",
	.cfg_init = vllm_cfg,
	.body = vllm_body,
	.answer = epn_answer,
};

/* --- SGLang /generate -------------------------------------------------------- */

static int sglang_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	json_t *extra = s->target.extra_body;
	c->with_prompt = !json_object_get(extra, "text") && !json_object_get(extra, "input_ids");
	c->with_max_tokens = !json_object_get(extra, "sampling_params");
	c->sends_osl = c->with_max_tokens;
	c->min_tokens = s->workload.ignore_eos && c->with_max_tokens;
	/* SGLang serves the model it was started with; "model" is not in its
	 * GenerateReqInput */
	return rq_cfg_tail(c, s, false, err);
}

static int sglang_body(struct req *r, const struct req_params *p)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	if (dynbuf_add(b, "{", 1) < 0)
		return -1;
	if (c->with_prompt && (dynbuf_addstr(b, "\"text\":\"") < 0 || rq_add_user_text(r, p) < 0 ||
	                       dynbuf_add(b, "\"", 1) < 0))
		return -1;
	if (c->with_max_tokens &&
	    ((c->with_prompt && dynbuf_add(b, ",", 1) < 0) ||
	     dynbuf_addstr(b, "\"sampling_params\":{\"max_new_tokens\":") < 0 ||
	     rq_add_uint(b, r->requested_osl) < 0 ||
	     (c->min_tokens && (dynbuf_addstr(b, ",\"ignore_eos\":true") < 0 ||
	                        dynbuf_addstr(b, ",\"min_new_tokens\":") < 0 ||
	                        rq_add_uint(b, r->requested_osl) < 0)) ||
	     dynbuf_add(b, "}", 1) < 0))
		return -1;
	const char *st = c->stream ? "\"stream\":true" : "\"stream\":false";
	if (((c->with_prompt || c->with_max_tokens) && dynbuf_add(b, ",", 1) < 0) ||
	    dynbuf_addstr(b, st) < 0)
		return -1;
	return rq_end_body(r, true);
}

static int sglang_event(struct req *r, const char *name, json_t *j, struct chunk_info *ci)
{
	(void)name;
	struct ep_facts f;
	epn_read_sglang_event(j, r->u_completion, &f);
	memset(ci, 0, sizeof *ci);
	ci->prompt_tokens = f.prompt_tokens;
	ci->completion_tokens = f.completion_tokens;
	ci->reasoning_tokens = -1;
	if (f.err) {
		rq_fail(r, f.err, "%s", f.msg);
		return EV_FAIL;
	}
	ci->content = f.chunk;
	ci->final = f.final;
	if (f.text) { /* the last event's text is the whole output */
		rq_capture_json(r, f.text);
		rq_keep_output(r, f.text);
	}
	rq_take_stream_error(r, f.error);
	return 0;
}

const struct ep_handler ep_sglang_generate = {
	.endpoint = SPEC_EP_SGLANG_GENERATE,
	.content_type = "application/json",
	.history = EP_HIST_TEXT,
	.cfg_init = sglang_cfg,
	.body = sglang_body,
	.event = sglang_event,
	.answer = epn_answer,
};

/* --- raw --------------------------------------------------------------------- */

struct raw_state {
	char *body;
	size_t len;
};

static int raw_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	json_t *body = s->target.raw_body;
	struct raw_state *st = xcalloc(1, sizeof *st);
	c->ep = st;
	if (json_is_string(body)) {
		st->len = json_string_length(body);
		st->body = xmalloc(st->len + 1);
		memcpy(st->body, json_string_value(body), st->len);
		st->body[st->len] = '\0';
	} else {
		st->body = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!st->body)
			return errf(err, "target.raw.body: cannot serialise it");
		st->len = strlen(st->body);
	}
	c->with_prompt = false;
	c->sends_osl = false;
	c->one_piece = !s->target.stream; /* a whole answer: one chunk at its arrival */
	bool given = false;
	const char *k;
	json_t *v;
	json_object_foreach(s->target.headers, k, v)
	{
		given = given || strcasecmp(k, "Content-Type") == 0;
	}
	if (!given) {
		char *line = xasprintf("Content-Type: %s", s->target.raw_content_type
		                                               ? s->target.raw_content_type
		                                               : "application/json");
		struct curl_slist *n = curl_slist_append(c->headers, line);
		free(line);
		if (!n)
			xalloc_die();
		c->headers = n;
	}
	return 0;
}

static void raw_release(struct req_cfg *c)
{
	struct raw_state *st = c->ep;
	if (st)
		free(st->body);
	free(st);
	c->ep = NULL;
}

static int raw_body(struct req *r, const struct req_params *p)
{
	(void)p;
	const struct raw_state *st = r->cfg->ep;
	r->requested_isl = -1;
	return dynbuf_add(&r->body, st->body, st->len);
}

/* Never called: a raw stream is not read as SSE (ephandler.h, raw). */
static int raw_event(struct req *r, const char *name, json_t *j, struct chunk_info *ci)
{
	(void)name;
	(void)j;
	memset(ci, 0, sizeof *ci);
	rq_fail(r, HR_ERR_MALFORMED_STREAM, "a raw answer has no events");
	return EV_FAIL;
}

/* The answer is not read: it is timed, one piece at the body's end (the
 * clock of the read that brought its last bytes), and its bytes counted. */
static int raw_answer(struct req *r, json_t *j, const json_error_t *je, char **msg)
{
	(void)j;
	(void)je;
	r->rec.bytes_out = r->resp.len > INT32_MAX ? INT32_MAX : (int32_t)r->resp.len;
	if (r->body_ns == HR_NO_TIME) {
		*msg = xstrdup("empty response body");
		return HR_ERR_NO_CONTENT;
	}
	if (record_add_chunk(&r->rec, r->cb_ns, &r->chunk_cap) < 0) {
		*msg = xstrdup("cannot record the answer's arrival");
		return HR_ERR_MALFORMED_STREAM;
	}
	return HR_ERR_NONE;
}

const struct ep_handler ep_raw = {
	.endpoint = SPEC_EP_RAW,
	.content_type = NULL, /* target.raw.content_type, added by raw_cfg */
	.raw = true,
	.cfg_init = raw_cfg,
	.cfg_release = raw_release,
	.body = raw_body,
	.event = raw_event,
	.answer = raw_answer,
};
