/* route_llm.c - headroom-mock's OpenAI Responses (/v1/responses) and
 * Anthropic Messages (/v1/messages) route handlers (mock.h, struct
 * mock_handler): bodies read by jansson, typed SSE events ("event: NAME"
 * before each data line) in the order the two APIs send them, whole
 * answers; --reasoning-tokens gives a reasoning summary (Responses) or a
 * thinking block (Messages) before the text (docs/mock.md). */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "mock.h"
#include "util.h"

#define DEFAULT_MAX_TOKENS 16

/* --- requests ---------------------------------------------------------------------- */

/* Words of a string, or of the text parts of an array of parts / blocks
 * ({"type":..., "text":...}); name is how errors call it. */
static int text_words(const json_t *v, const char *name, uint64_t *n, char *err)
{
	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		*n += api_text_tokens(json_string_value(v), json_string_length(v));
		return 0;
	}
	if (!json_is_array(v))
		return errf(err, "'%s' must be a string or an array of content parts", name);
	size_t i;
	const json_t *part;
	json_array_foreach(v, i, part)
	{
		if (!json_is_object(part))
			return errf(err, "each part of '%s' must be an object", name);
		const char *type = json_string_value(json_object_get(part, "type"));
		if (!type)
			return errf(err, "each part of '%s' needs a string 'type'", name);
		if (strcmp(type, "text") && strcmp(type, "input_text") &&
		    strcmp(type, "output_text"))
			continue;
		const json_t *text = json_object_get(part, "text");
		if (!json_is_string(text))
			return errf(err, "a text part of '%s' needs a string 'text'", name);
		*n += api_text_tokens(json_string_value(text), json_string_length(text));
	}
	return 0;
}

/* A list of messages / input items: each an object with a string role
 * (one of roles, NULL-terminated) and its content. */
static int message_words(const json_t *list, const char *name, const char *const *roles,
                         uint64_t *n, char *err)
{
	if (!json_is_array(list) || json_array_size(list) == 0)
		return errf(err, "'%s' must be a non-empty array", name);
	size_t i;
	const json_t *m;
	json_array_foreach(list, i, m)
	{
		if (!json_is_object(m))
			return errf(err, "each item of '%s' must be an object", name);
		const json_t *type = json_object_get(m, "type");
		if (type && (!json_is_string(type) || strcmp(json_string_value(type), "message")))
			continue; /* (Responses: other input items carry no prompt text here) */
		const char *role = json_string_value(json_object_get(m, "role"));
		const char *const *r = roles;
		while (role && *r && strcmp(role, *r))
			r++;
		if (!role || !*r)
			return errf(err, "each message of '%s' needs a valid 'role'", name);
		if (text_words(json_object_get(m, "content"), "content", n, err) < 0)
			return -1;
	}
	return 0;
}

static int llm_parse(struct server *srv, enum mock_api api, bool stream_path,
                     const struct http_request *req, struct gen_req *g, char *err)
{
	static const char *const oa_roles[] = {"user", "assistant", "system", "developer", NULL};
	static const char *const an_roles[] = {"user", "assistant", NULL};
	(void)srv;
	(void)stream_path;
	bool messages = api == API_MESSAGES;
	json_t *root = api_load_object(req->body, req->body_len, err);
	if (!root)
		return -1;
	int rc = -1;
	long long v;
	uint64_t words = 0;
	const char *mkey = messages ? "max_tokens" : "max_output_tokens";
	if (api_check_model(root, err) < 0 ||
	    api_opt_bool(root, "stream", "stream", &g->stream, err) < 0)
		goto out;
	int got = api_opt_int(root, mkey, mkey, messages ? 1 : 0, HR_MAX_OSL, &v, err);
	if (got < 0)
		goto out;
	if (!got && messages) {
		errf(err, "'max_tokens' is required");
		goto out;
	}
	g->max_tokens = got ? (uint32_t)v : DEFAULT_MAX_TOKENS;
	if (messages) {
		if (text_words(json_object_get(root, "system"), "system", &words, err) < 0 ||
		    message_words(json_object_get(root, "messages"), "messages", an_roles, &words,
		                  err) < 0)
			goto out;
	} else {
		const json_t *in = json_object_get(root, "input");
		const json_t *ins = json_object_get(root, "instructions");
		if (ins && !json_is_null(ins) && !json_is_string(ins)) {
			errf(err, "'instructions' must be a string");
			goto out;
		}
		if (text_words(ins, "instructions", &words, err) < 0)
			goto out;
		if (json_is_string(in)) {
			words += api_text_tokens(json_string_value(in), json_string_length(in));
		} else if (message_words(in, "input", oa_roles, &words, err) < 0) {
			goto out;
		}
	}
	/* The body is at most HR_MOCK_MAX_REQUEST_BYTES, so this fits. */
	g->prompt_tokens = (uint32_t)words;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* --- shared -------------------------------------------------------------------------- */

/* The text and reasoning tokens of a response: reasoning first. */
static uint32_t text_tokens(const struct stream *s)
{
	return s->max_tokens - s->reasoning;
}

/* Whether tokens [from, from + n) start the text after reasoning. */
static bool text_starts(const struct stream *s, uint32_t from, uint32_t n)
{
	return s->reasoning > 0 && from <= s->reasoning && s->reasoning < from + n;
}

/* A piece from a formatted buffer. */
static struct api_piece fmt_piece(const char *buf, int n)
{
	return (struct api_piece){buf, n > 0 ? (size_t)n : 0, 0};
}

/* --- OpenAI Responses ------------------------------------------------------------------ */

/* The response object: in progress (no output, no usage) or complete. */
static void resp_object(struct server *srv, struct dynbuf *b, const struct stream *s, bool done)
{
	dynbuf_printf(b,
	              "{\"id\":\"resp_mock_%llu\",\"object\":\"response\",\"created_at\":%lld,"
	              "\"status\":\"%s\",\"model\":",
	              (unsigned long long)s->id, (long long)(s->created < 0 ? 0 : s->created),
	              done ? "completed" : "in_progress");
	dynbuf_add(b, srv->model_json, srv->model_json_len);
	ADD_LIT(b, ",\"output\":[");
	if (done && s->reasoning) {
		dynbuf_printf(b,
		              "{\"id\":\"rs_mock_%llu\",\"type\":\"reasoning\",\"summary\":["
		              "{\"type\":\"summary_text\",\"text\":\"",
		              (unsigned long long)s->id);
		api_add_words(b, s, 0, s->reasoning);
		ADD_LIT(b, "\"}]}");
	}
	if (done && text_tokens(s)) {
		dynbuf_printf(b,
		              "%s{\"id\":\"msg_mock_%llu\",\"type\":\"message\",\"status\":"
		              "\"completed\",\"role\":\"assistant\",\"content\":["
		              "{\"type\":\"output_text\",\"text\":\"",
		              s->reasoning ? "," : "", (unsigned long long)s->id);
		api_add_words(b, s, s->reasoning, text_tokens(s));
		ADD_LIT(b, "\",\"annotations\":[]}]}");
	}
	ADD_LIT(b, "]");
	if (done)
		dynbuf_printf(
		    b,
		    ",\"usage\":{\"input_tokens\":%u,\"input_tokens_details\":"
		    "{\"cached_tokens\":0},\"output_tokens\":%u,\"output_tokens_details\":"
		    "{\"reasoning_tokens\":%u},\"total_tokens\":%llu}",
		    s->prompt_tokens, s->sent, s->reasoning,
		    (unsigned long long)s->prompt_tokens + s->sent);
	else
		ADD_LIT(b, ",\"usage\":null");
	ADD_LIT(b, "}");
}

/* srv->scratch as the event `type` with its sequence_number, then rest
 * (JSON members after a ',' or NULL), as an event. */
static void resp_send(struct server *srv, struct conn *c, const char *type, const char *rest)
{
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	dynbuf_printf(b, "{\"type\":\"%s\",\"sequence_number\":%u%s%s}", type, c->st.evseq++,
	              rest ? "," : "", rest ? rest : "");
	api_send_named_event(srv, c, type);
}

/* The message item and its text part begin (output index oi). */
static void resp_open_message(struct server *srv, struct conn *c, unsigned oi)
{
	char buf[256];
	unsigned long long id = (unsigned long long)c->st.id;
	snprintf(buf, sizeof buf,
	         "\"output_index\":%u,\"item\":{\"id\":\"msg_mock_%llu\",\"type\":\"message\","
	         "\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}",
	         oi, id);
	resp_send(srv, c, "response.output_item.added", buf);
	snprintf(buf, sizeof buf,
	         "\"item_id\":\"msg_mock_%llu\",\"output_index\":%u,\"content_index\":0,"
	         "\"part\":{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[]}",
	         id, oi);
	resp_send(srv, c, "response.content_part.added", buf);
}

static void resp_start(struct server *srv, struct conn *c)
{
	struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	static const char *const types[2] = {"response.created", "response.in_progress"};
	for (int k = 0; k < 2; k++) {
		dynbuf_reset(b);
		dynbuf_printf(b, "{\"type\":\"%s\",\"sequence_number\":%u,\"response\":", types[k],
		              s->evseq++);
		resp_object(srv, b, s, false);
		ADD_LIT(b, "}");
		api_send_named_event(srv, c, types[k]);
	}
	if (s->reasoning) {
		char buf[160];
		snprintf(
		    buf, sizeof buf,
		    "\"output_index\":0,\"item\":{\"id\":\"rs_mock_%llu\",\"type\":\"reasoning\","
		    "\"summary\":[]}",
		    (unsigned long long)s->id);
		resp_send(srv, c, "response.output_item.added", buf);
	} else if (s->max_tokens) {
		resp_open_message(srv, c, 0);
	}
}

/* The delta event of tokens [from, from + n): reasoning summary or text. */
static void resp_delta(struct conn *c, bool reasoning, uint32_t from, uint32_t n)
{
	struct stream *s = &c->st;
	char head[256];
	const char *type =
	    reasoning ? "response.reasoning_summary_text.delta" : "response.output_text.delta";
	int hl = reasoning ? snprintf(head, sizeof head,
	                              "{\"type\":\"%s\",\"sequence_number\":%u,\"item_id\":"
	                              "\"rs_mock_%llu\",\"output_index\":0,\"summary_index\":0,"
	                              "\"delta\":\"",
	                              type, s->evseq++, (unsigned long long)s->id)
	                   : snprintf(head, sizeof head,
	                              "{\"type\":\"%s\",\"sequence_number\":%u,\"item_id\":"
	                              "\"msg_mock_%llu\",\"output_index\":%u,\"content_index\":0,"
	                              "\"delta\":\"",
	                              type, s->evseq++, (unsigned long long)s->id,
	                              s->reasoning ? 1u : 0u);
	struct api_piece pc[3] = {fmt_piece(head, hl),
	                          {NULL, n, from},
	                          reasoning ? API_PIECE("\"}") : API_PIECE("\",\"logprobs\":[]}")};
	api_put_named_event(c, type, pc, 3);
}

static void resp_events(struct server *srv, struct conn *c, uint32_t n)
{
	struct stream *s = &c->st;
	uint32_t from = s->sent, r = 0;
	if (from < s->reasoning)
		r = s->reasoning - from < n ? s->reasoning - from : n;
	if (r)
		resp_delta(c, true, from, r);
	if (text_starts(s, from, n)) {
		char buf[128];
		snprintf(
		    buf, sizeof buf,
		    "\"output_index\":0,\"item\":{\"id\":\"rs_mock_%llu\",\"type\":\"reasoning\"}",
		    (unsigned long long)s->id);
		resp_send(srv, c, "response.output_item.done", buf);
		resp_open_message(srv, c, 1);
	}
	if (r < n)
		resp_delta(c, false, from + r, n - r);
}

static void resp_end(struct server *srv, struct conn *c)
{
	struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	if (text_tokens(s)) {
		dynbuf_reset(b);
		dynbuf_printf(b,
		              "{\"type\":\"response.output_text.done\",\"sequence_number\":%u,"
		              "\"item_id\":\"msg_mock_%llu\",\"output_index\":%u,"
		              "\"content_index\":0,\"text\":\"",
		              s->evseq++, (unsigned long long)s->id, s->reasoning ? 1u : 0u);
		api_add_words(b, s, s->reasoning, text_tokens(s));
		ADD_LIT(b, "\"}");
		api_send_named_event(srv, c, "response.output_text.done");
	}
	dynbuf_reset(b);
	dynbuf_printf(
	    b, "{\"type\":\"response.completed\",\"sequence_number\":%u,\"response\":", s->evseq++);
	resp_object(srv, b, s, true);
	ADD_LIT(b, "}");
	api_send_named_event(srv, c, "response.completed");
}

/* A text delta cut off inside its text. */
static void resp_malformed(struct server *srv, struct conn *c)
{
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	dynbuf_printf(b,
	              "{\"type\":\"response.output_text.delta\",\"sequence_number\":%u,"
	              "\"item_id\":\"msg_mock_%llu\",\"delta\":\"",
	              c->st.evseq++, (unsigned long long)c->st.id);
	api_send_named_event(srv, c, "response.output_text.delta");
}

static int resp_body(struct server *srv, const struct stream *s, struct dynbuf *b, char *extra,
                     size_t extra_size)
{
	(void)extra;
	(void)extra_size;
	dynbuf_reset(b);
	resp_object(srv, b, s, true);
	return b->len && b->data[b->len - 1] == '}' ? 0 : -1;
}

/* --- Anthropic Messages ---------------------------------------------------------------- */

static const char *stop_reason(const struct stream *s)
{
	return s->eos ? "end_turn" : "max_tokens";
}

/* content_block_start of block i: a thinking block or a text block. */
static void msg_block_start(struct server *srv, struct conn *c, unsigned i, bool thinking)
{
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	dynbuf_printf(b, "{\"type\":\"content_block_start\",\"index\":%u,\"content_block\":%s}", i,
	              thinking ? "{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}"
	                       : "{\"type\":\"text\",\"text\":\"\"}");
	api_send_named_event(srv, c, "content_block_start");
}

static void msg_block_stop(struct server *srv, struct conn *c, unsigned i)
{
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	dynbuf_printf(b, "{\"type\":\"content_block_stop\",\"index\":%u}", i);
	api_send_named_event(srv, c, "content_block_stop");
}

static void msg_start(struct server *srv, struct conn *c)
{
	struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	dynbuf_printf(b,
	              "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_mock_%llu\","
	              "\"type\":\"message\",\"role\":\"assistant\",\"model\":",
	              (unsigned long long)s->id);
	dynbuf_add(b, srv->model_json, srv->model_json_len);
	dynbuf_printf(b,
	              ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
	              "\"usage\":{\"input_tokens\":%u,\"output_tokens\":0}}}",
	              s->prompt_tokens);
	api_send_named_event(srv, c, "message_start");
	dynbuf_reset(b);
	ADD_LIT(b, "{\"type\":\"ping\"}");
	api_send_named_event(srv, c, "ping");
	if (s->max_tokens)
		msg_block_start(srv, c, 0, s->reasoning > 0);
}

static void msg_delta(struct conn *c, unsigned index, bool thinking, uint32_t from, uint32_t n)
{
	char head[128];
	int hl = snprintf(head, sizeof head,
	                  "{\"type\":\"content_block_delta\",\"index\":%u,\"delta\":{\"type\":"
	                  "\"%s\",\"%s\":\"",
	                  index, thinking ? "thinking_delta" : "text_delta",
	                  thinking ? "thinking" : "text");
	struct api_piece pc[3] = {fmt_piece(head, hl), {NULL, n, from}, API_PIECE("\"}}")};
	api_put_named_event(c, "content_block_delta", pc, 3);
}

static void msg_events(struct server *srv, struct conn *c, uint32_t n)
{
	struct stream *s = &c->st;
	uint32_t from = s->sent, r = 0;
	if (from < s->reasoning)
		r = s->reasoning - from < n ? s->reasoning - from : n;
	if (r)
		msg_delta(c, 0, true, from, r);
	if (text_starts(s, from, n)) {
		msg_block_stop(srv, c, 0);
		msg_block_start(srv, c, 1, false);
	}
	if (r < n)
		msg_delta(c, s->reasoning ? 1 : 0, false, from + r, n - r);
}

static void msg_end(struct server *srv, struct conn *c)
{
	struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	if (s->max_tokens)
		msg_block_stop(srv, c, s->reasoning && text_tokens(s) ? 1 : 0);
	dynbuf_reset(b);
	dynbuf_printf(b,
	              "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"%s\","
	              "\"stop_sequence\":null},\"usage\":{\"output_tokens\":%u}}",
	              stop_reason(s), s->sent);
	api_send_named_event(srv, c, "message_delta");
	dynbuf_reset(b);
	ADD_LIT(b, "{\"type\":\"message_stop\"}");
	api_send_named_event(srv, c, "message_stop");
}

/* A text delta cut off inside its text. */
static void msg_malformed(struct server *srv, struct conn *c)
{
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	dynbuf_printf(b,
	              "{\"type\":\"content_block_delta\",\"index\":%u,\"delta\":{\"type\":"
	              "\"text_delta\",\"text\":\"",
	              c->st.reasoning ? 1u : 0u);
	api_send_named_event(srv, c, "content_block_delta");
}

static int msg_body(struct server *srv, const struct stream *s, struct dynbuf *b, char *extra,
                    size_t extra_size)
{
	(void)extra;
	(void)extra_size;
	dynbuf_reset(b);
	dynbuf_printf(b,
	              "{\"id\":\"msg_mock_%llu\",\"type\":\"message\",\"role\":\"assistant\","
	              "\"model\":",
	              (unsigned long long)s->id);
	dynbuf_add(b, srv->model_json, srv->model_json_len);
	ADD_LIT(b, ",\"content\":[");
	if (s->reasoning) {
		ADD_LIT(b, "{\"type\":\"thinking\",\"thinking\":\"");
		api_add_words(b, s, 0, s->reasoning);
		ADD_LIT(b, "\",\"signature\":\"\"}");
	}
	if (text_tokens(s)) {
		dynbuf_addstr(b, s->reasoning ? ",{\"type\":\"text\",\"text\":\""
		                              : "{\"type\":\"text\",\"text\":\"");
		api_add_words(b, s, s->reasoning, text_tokens(s));
		ADD_LIT(b, "\"}");
	}
	dynbuf_printf(b,
	              "],\"stop_reason\":\"%s\",\"stop_sequence\":null,\"usage\":"
	              "{\"input_tokens\":%u,\"output_tokens\":%u}}",
	              stop_reason(s), s->prompt_tokens, s->sent);
	return b->len && b->data[b->len - 1] == '}' ? 0 : -1;
}

const struct mock_handler mock_responses = {
	.api = API_RESPONSES,
	.paths = {{"/v1/responses", false}},
	.reasoning = true,
	.parse = llm_parse,
	.stream_start = resp_start,
	.events = resp_events,
	.malformed = resp_malformed,
	.events_end = resp_end,
	.body = resp_body,
};

const struct mock_handler mock_messages = {
	.api = API_MESSAGES,
	.paths = {{"/v1/messages", false}},
	.reasoning = true,
	.parse = llm_parse,
	.stream_start = msg_start,
	.events = msg_events,
	.malformed = msg_malformed,
	.events_end = msg_end,
	.body = msg_body,
};
