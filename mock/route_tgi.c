/* route_tgi.c - Hugging Face text-generation-inference's native API in
 * headroom-mock, its route handler (mock.h, struct mock_handler): POST
 * /generate and POST /generate_stream, in TGI's wire format
 * (router/src/lib.rs and server.rs of TGI 2.x/3.x).
 *
 * Request: {"inputs": "...", "parameters": {...}} with, of the parameters,
 * max_new_tokens (1 to 1,000,000; default 100, as TGI), details,
 * decoder_input_details, return_full_text, seed, do_sample, stop and
 * best_of checked and the rest ignored. The prompt's tokens are counted
 * as for the other endpoints (words, or --tokenizer).
 *
 * /generate answers {"generated_text": "..."} once its last token is due,
 * with "details" (finish_reason, generated_tokens, seed, prefill [],
 * tokens) when parameters.details (or decoder_input_details) is true, and
 * TGI's x-prompt-tokens / x-generated-tokens headers.
 *
 * /generate_stream sends one SSE event per token, framed as TGI's axum
 * server does ("data:JSON\n\n", no space, no [DONE]):
 *   {"index":I,"token":{"id":..,"text":"..","logprob":..,"special":false},
 *    "generated_text":null,"details":null}
 * with I from 1; the last token's event carries generated_text (the whole
 * text, after the inputs with return_full_text) and, with details, the
 * stream details {finish_reason, generated_tokens, seed, input_length}.
 * A step of --tokens-per-chunk tokens sends that many events at once.
 *
 * Tokens are the mock's words (api.c): token i of a response is word
 * w = (prompt tokens + i) mod 64 of the list, its text the word and a
 * space, its id 100 + w, its logprob -(w mod 8 + 1) / 8. A response ends
 * by length (finish_reason "length"), or with --early-stop, when drawn,
 * after half its max_new_tokens (at least 1) with finish_reason
 * "eos_token" and generated_tokens counting what it produced (api.c;
 * TGI has no ignore_eos or min_tokens). The seed reported is
 * parameters.seed when given, else null.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mock.h"
#include "util.h"

#define TGI_DEFAULT_MAX_NEW_TOKENS 100
#define TGI_ID_BASE 100

static const char *const logprobs[8] = {"-0.125", "-0.25", "-0.375", "-0.5",
                                        "-0.625", "-0.75", "-0.875", "-1.0"};

static int tgi_parse(struct server *srv, enum mock_api api, bool stream,
                     const struct http_request *req, struct gen_req *g, char *err)
{
	(void)srv;
	(void)api;
	const char *body = req->body;
	size_t len = req->body_len;
	json_t *root = api_load_object(body, len, err);
	if (!root)
		return -1;
	int rc = -1;
	bool full_text = false, decoder_details = false, ignored = false;
	const json_t *inputs = json_object_get(root, "inputs");
	if (!json_is_string(inputs)) {
		errf(err, "'inputs' must be a string");
		goto out;
	}
	if (json_string_length(inputs) == 0) {
		errf(err, "'inputs' must not be empty");
		goto out;
	}
	if (api_opt_bool(root, "stream", "stream", &ignored, err) < 0)
		goto out;
	g->max_tokens = TGI_DEFAULT_MAX_NEW_TOKENS;
	const json_t *params = json_object_get(root, "parameters");
	if (params && !json_is_null(params)) {
		if (!json_is_object(params)) {
			errf(err, "'parameters' must be an object");
			goto out;
		}
		long long v;
		int got = api_opt_int(params, "max_new_tokens", "parameters.max_new_tokens", 1,
		                      HR_MAX_OSL, &v, err);
		if (got < 0)
			goto out;
		if (got)
			g->max_tokens = (uint32_t)v;
		if (api_opt_bool(params, "details", "parameters.details", &g->details, err) < 0 ||
		    api_opt_bool(params, "decoder_input_details",
		                 "parameters.decoder_input_details", &decoder_details, err) < 0 ||
		    api_opt_bool(params, "return_full_text", "parameters.return_full_text",
		                 &full_text, err) < 0 ||
		    api_opt_bool(params, "do_sample", "parameters.do_sample", &ignored, err) < 0)
			goto out;
		got = api_opt_int(params, "seed", "parameters.seed", 0, -1, &v, err);
		if (got < 0)
			goto out;
		if (got) {
			g->seed_given = true;
			g->seed = (uint64_t)v;
		}
		const json_t *stop = json_object_get(params, "stop");
		if (stop && !json_is_null(stop)) {
			size_t i;
			const json_t *e;
			if (!json_is_array(stop)) {
				errf(err, "'parameters.stop' must be an array of strings");
				goto out;
			}
			json_array_foreach(stop, i, e)
			{
				if (!json_is_string(e)) {
					errf(err, "'parameters.stop[%zu]' must be a string", i);
					goto out;
				}
			}
		}
		const json_t *best_of = json_object_get(params, "best_of");
		if (best_of && !json_is_null(best_of)) {
			if (!json_is_integer(best_of) || json_integer_value(best_of) < 1) {
				errf(err, "'parameters.best_of' must be a positive integer");
				goto out;
			}
			if (stream && json_integer_value(best_of) != 1) {
				errf(err, "'parameters.best_of' must be 1 when streaming");
				goto out;
			}
		}
	}
	if (stream && decoder_details) {
		errf(err, "'parameters.decoder_input_details' is not supported when streaming");
		goto out;
	}
	if (!stream)
		g->details = g->details || decoder_details;
	if (!stream && g->details && g->max_tokens > MOCK_MAX_TGI_DETAIL_TOKENS) {
		errf(err, "'parameters.max_new_tokens' must be at most %d with details",
		     MOCK_MAX_TGI_DETAIL_TOKENS);
		goto out;
	}
	g->stream = stream;
	/* The body is at most HR_MOCK_MAX_REQUEST_BYTES, so this fits. */
	g->prompt_tokens =
	    (uint32_t)api_text_tokens(json_string_value(inputs), json_string_length(inputs));
	if (full_text) {
		g->prefix_len = json_string_length(inputs);
		g->prefix = xmalloc(g->prefix_len + 1);
		memcpy(g->prefix, json_string_value(inputs), g->prefix_len);
		g->prefix[g->prefix_len] = '\0';
	}
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* {"id":..,"text":"..","logprob":..,"special":false} of token i. */
static void add_token(struct dynbuf *b, const struct stream *s, uint32_t i)
{
	unsigned w = api_word_index(s, i);
	size_t len;
	const char *word = api_word(w, &len);
	ADD_LIT(b, "{\"id\":");
	api_add_u64(b, TGI_ID_BASE + w);
	ADD_LIT(b, ",\"text\":\"");
	dynbuf_add(b, word, len);
	ADD_LIT(b, " \",\"logprob\":");
	dynbuf_addstr(b, logprobs[w % 8]);
	ADD_LIT(b, ",\"special\":false}");
}

/* "..." of generated_text: the inputs first with return_full_text. */
static void add_generated_text(struct dynbuf *b, const struct stream *s)
{
	ADD_LIT(b, "\"");
	if (s->tgi_prefix)
		api_add_json_text(b, s->tgi_prefix, s->tgi_prefix_len);
	api_add_words(b, s, 0, s->max_tokens);
	ADD_LIT(b, "\"");
}

/* TGI's FinishReason: by length, or at the EOS token (--early-stop). */
static void add_finish_reason(struct dynbuf *b, const struct stream *s)
{
	if (s->eos)
		ADD_LIT(b, "\"eos_token\"");
	else
		ADD_LIT(b, "\"length\"");
}

/* The members every "details" object opens with, after its brace. */
static void add_details_head(struct dynbuf *b, const struct stream *s)
{
	ADD_LIT(b, ",\"details\":{\"finish_reason\":");
	add_finish_reason(b, s);
	ADD_LIT(b, ",\"generated_tokens\":");
	api_add_u64(b, s->max_tokens);
	ADD_LIT(b, ",\"seed\":");
	if (s->tgi_seed_given)
		api_add_u64(b, s->tgi_seed);
	else
		ADD_LIT(b, "null");
}

/* Events for the next n tokens of a /generate_stream response. */
static void tgi_events(struct server *srv, struct conn *c, uint32_t n)
{
	struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = s->sent + k;
		dynbuf_reset(b);
		ADD_LIT(b, "{\"index\":");
		api_add_u64(b, (uint64_t)i + 1);
		ADD_LIT(b, ",\"token\":");
		add_token(b, s, i);
		if (i + 1 < s->max_tokens) {
			ADD_LIT(b, ",\"generated_text\":null,\"details\":null}");
		} else {
			ADD_LIT(b, ",\"generated_text\":");
			add_generated_text(b, s);
			if (s->tgi_details) {
				add_details_head(b, s);
				ADD_LIT(b, ",\"input_length\":");
				api_add_u64(b, s->prompt_tokens);
				ADD_LIT(b, "}}");
			} else {
				ADD_LIT(b, ",\"details\":null}");
			}
		}
		api_send_event(srv, c, false);
	}
}

/* An injected malformed event: a token event cut off inside its text. */
static void tgi_event_malformed(struct server *srv, struct conn *c)
{
	struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	ADD_LIT(b, "{\"index\":");
	api_add_u64(b, (uint64_t)s->sent + 1);
	ADD_LIT(b, ",\"token\":{\"id\":");
	api_add_u64(b, TGI_ID_BASE + api_word_index(s, s->sent));
	ADD_LIT(b, ",\"text\":\"");
	api_send_event(srv, c, false);
}

/* The body of a /generate response, with TGI's count headers in extra. */
static int tgi_body(struct server *srv, const struct stream *s, struct dynbuf *b, char *extra,
                    size_t extra_size)
{
	(void)srv;
	snprintf(extra, extra_size, "x-prompt-tokens: %u\r\nx-generated-tokens: %u\r\n",
	         s->prompt_tokens, s->max_tokens);
	dynbuf_reset(b);
	ADD_LIT(b, "{\"generated_text\":");
	add_generated_text(b, s);
	if (s->tgi_details) {
		add_details_head(b, s);
		ADD_LIT(b, ",\"prefill\":[],\"tokens\":[");
		for (uint32_t i = 0; i < s->max_tokens; i++) {
			if (i)
				ADD_LIT(b, ",");
			add_token(b, s, i);
		}
		ADD_LIT(b, "]}");
	}
	return ADD_LIT(b, "}");
}

/* A stream's last token event carries everything: no events_end. */
const struct mock_handler mock_tgi = {
	.api = API_TGI,
	.paths = {{"/generate", false}, {"/generate_stream", true}},
	.parse = tgi_parse,
	.events = tgi_events,
	.malformed = tgi_event_malformed,
	.body = tgi_body,
};
