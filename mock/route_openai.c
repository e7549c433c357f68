/* route_openai.c - headroom-mock's OpenAI-compatible chat
 * (/v1/chat/completions) and text completions (/v1/completions) route
 * handlers (mock.h, struct mock_handler), shaped like vLLM's responses,
 * with reasoning content (api.c describes the behaviour): the bodies read
 * in one pass (genreq.c) or by jansson, the streamed events written from a
 * head rendered once per response, the whole answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mock.h"
#include "util.h"

#define DEFAULT_MAX_TOKENS 16

static uint64_t string_words(const json_t *v)
{
	return api_text_tokens(json_string_value(v), json_string_length(v));
}

/* One chat message's content: a string, null, or an array of parts of
 * which the {"type":"text","text":...} ones count; image_url and
 * input_audio parts must be well formed and count no prompt tokens. */
static int content_words(const json_t *content, uint64_t *n, char *err)
{
	if (!content || json_is_null(content))
		return 0;
	if (json_is_string(content)) {
		*n += string_words(content);
		return 0;
	}
	if (!json_is_array(content))
		return errf(err, "'content' must be a string or an array of content parts");
	size_t i;
	const json_t *part;
	json_array_foreach(content, i, part)
	{
		if (!json_is_object(part))
			return errf(err, "each content part must be an object");
		const json_t *type = json_object_get(part, "type");
		if (!json_is_string(type))
			return errf(err, "each content part needs a string 'type'");
		const char *t = json_string_value(type);
		if (strcmp(t, "image_url") == 0) {
			/* {"image_url": {"url": ...}} (OpenAI), or the URL alone (vLLM) */
			const json_t *iu = json_object_get(part, "image_url");
			if (json_is_object(iu))
				iu = json_object_get(iu, "url");
			if (!json_is_string(iu) || json_string_length(iu) == 0)
				return errf(err, "an image_url content part needs a string "
				                 "'image_url.url'");
			continue;
		}
		if (strcmp(t, "input_audio") == 0) {
			const json_t *ia = json_object_get(part, "input_audio");
			if (!json_is_object(ia) || !json_is_string(json_object_get(ia, "data")) ||
			    !json_is_string(json_object_get(ia, "format")))
				return errf(err, "an input_audio content part needs string "
				                 "'input_audio.data' and 'input_audio.format'");
			continue;
		}
		if (strcmp(t, "text") != 0)
			continue;
		const json_t *text = json_object_get(part, "text");
		if (!json_is_string(text))
			return errf(err, "a text content part needs a string 'text'");
		*n += string_words(text);
	}
	return 0;
}

int api_chat_prompt(const json_t *root, uint64_t *n, char *err)
{
	const json_t *msgs = json_object_get(root, "messages");
	if (!json_is_array(msgs) || json_array_size(msgs) == 0)
		return errf(err, "'messages' must be a non-empty array");
	size_t i;
	const json_t *m;
	json_array_foreach(msgs, i, m)
	{
		if (!json_is_object(m))
			return errf(err, "each message must be an object");
		const json_t *role = json_object_get(m, "role");
		if (!json_is_string(role))
			return errf(err, "each message needs a string 'role'");
		if (content_words(json_object_get(m, "content"), n, err) < 0)
			return -1;
	}
	return 0;
}

/* prompt: a string, an array of strings, an array of token ids, or an
 * array of arrays of token ids. */
static int completion_prompt(const json_t *root, uint64_t *n, char *err)
{
	const json_t *p = json_object_get(root, "prompt");
	if (json_is_string(p)) {
		*n += string_words(p);
		return 0;
	}
	if (!json_is_array(p))
		return errf(err, "'prompt' must be a string or an array");
	size_t i, j;
	const json_t *e, *id;
	json_array_foreach(p, i, e)
	{
		if (json_is_string(e)) {
			*n += string_words(e);
		} else if (json_is_integer(e)) {
			*n += 1;
		} else if (json_is_array(e)) {
			json_array_foreach(e, j, id)
			{
				if (!json_is_integer(id))
					return errf(err, "token id prompts must hold integers");
				*n += 1;
			}
		} else {
			return errf(err, "'prompt' array elements must be strings or token ids");
		}
	}
	return 0;
}

int api_parse_gen_json(const char *body, size_t len, bool chat, struct gen_req *g, char *err)
{
	json_t *root = api_load_object(body, len, err);
	if (!root)
		return -1;
	int rc = -1;
	if (api_check_model(root, err) < 0)
		goto out;
	if (api_opt_bool(root, "stream", "stream", &g->stream, err) < 0)
		goto out;
	const json_t *so = json_object_get(root, "stream_options");
	if (so && !json_is_null(so)) {
		if (!json_is_object(so)) {
			errf(err, "'stream_options' must be an object");
			goto out;
		}
		if (api_opt_bool(so, "include_usage", "stream_options.include_usage",
		                 &g->include_usage, err) < 0)
			goto out;
	}
	const json_t *mct = json_object_get(root, "max_completion_tokens");
	const char *key = mct && !json_is_null(mct) ? "max_completion_tokens" : "max_tokens";
	long long v;
	int got = api_opt_int(root, key, key, 0, HR_MAX_OSL, &v, err);
	if (got < 0)
		goto out;
	g->max_tokens = got ? (uint32_t)v : DEFAULT_MAX_TOKENS;
	if (api_opt_bool(root, "ignore_eos", "ignore_eos", &g->ignore_eos, err) < 0)
		goto out;
	got = api_opt_int(root, "min_tokens", "min_tokens", 0, -1, &v, err);
	if (got < 0)
		goto out;
	if (got)
		g->min_tokens = v > HR_MAX_OSL ? HR_MAX_OSL + 1 : (uint32_t)v;
	uint64_t words_in = 0;
	if ((chat ? api_chat_prompt(root, &words_in, err) : completion_prompt(root, &words_in, err)) <
	    0)
		goto out;
	/* The body is at most HR_MOCK_MAX_REQUEST_BYTES, so this fits. */
	g->prompt_tokens = (uint32_t)words_in;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* A chat or text completion body: the usual ones in one pass (genreq.c),
 * anything else, errors included, through jansson. */
static int parse_gen(const char *body, size_t len, bool chat, struct gen_req *g, char *err)
{
	if (gen_parse_fast(body, len, chat, g))
		return 0;
	return api_parse_gen_json(body, len, chat, g, err);
}

/* {"id":...,"object":...,"created":...,"model":... */
static void add_head(struct server *srv, struct dynbuf *b, const struct stream *s,
                     const char *object)
{
	if (s->api == API_CHAT)
		ADD_LIT(b, "{\"id\":\"chatcmpl-mock-");
	else
		ADD_LIT(b, "{\"id\":\"cmpl-mock-");
	api_add_u64(b, s->id);
	ADD_LIT(b, "\",\"object\":\"");
	dynbuf_addstr(b, object);
	ADD_LIT(b, "\",\"created\":");
	api_add_u64(b, s->created < 0 ? 0 : (uint64_t)s->created);
	ADD_LIT(b, ",\"model\":");
	dynbuf_add(b, srv->model_json, srv->model_json_len);
}

/* "usage":{...}; with --reasoning-tokens a chat response's also carries
 * completion_tokens_details.reasoning_tokens. */
static void add_usage(struct server *srv, struct dynbuf *b, const struct stream *s)
{
	dynbuf_printf(b,
	              "\"usage\":{\"prompt_tokens\":%u,\"completion_tokens\":%u,"
	              "\"total_tokens\":%llu",
	              s->prompt_tokens, s->sent, (unsigned long long)s->prompt_tokens + s->sent);
	if (s->api == API_CHAT && srv->cfg->reasoning)
		dynbuf_printf(b, ",\"completion_tokens_details\":{\"reasoning_tokens\":%u}",
		              s->reasoning);
	ADD_LIT(b, "}");
}

/* How a response ends: by length, or early as at an EOS token. */
static const char *finish_reason(const struct stream *s)
{
	return s->eos ? "stop" : "length";
}

/* The head every event of c's streamed chat or text completion starts
 * with ({"id":...,"object":...,"created":...,"model":...), rendered once
 * per response into the connection's ev_head: the events themselves only
 * add what changes. */
static void stream_start(struct server *srv, struct conn *c)
{
	struct stream *s = &c->st;
	dynbuf_reset(&c->ev_head);
	add_head(srv, &c->ev_head, s,
	         s->api == API_CHAT ? "chat.completion.chunk" : "text_completion");
}

static struct api_piece head_piece(const struct conn *c)
{
	return (struct api_piece){c->ev_head.data ? c->ev_head.data : "", c->ev_head.len, 0};
}

/* After the SSE head: the head of every event rendered, and for chat the
 * role delta. */
static void chat_start(struct server *srv, struct conn *c)
{
	stream_start(srv, c);
	struct api_piece pc[2] = {
	    head_piece(c),
	    API_PIECE(",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
	          "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}"),
	};
	api_put_event(c, true, pc, 2);
}

/* A content event of tokens [s->sent, s->sent + n). Chat: a delta with
 * reasoning_content for tokens before s->reasoning and content for the
 * rest (a chunk across the boundary carries both); text completions: the
 * text, the last one with its finish_reason. */
static void events(struct server *srv, struct conn *c, uint32_t n)
{
	struct stream *s = &c->st;
	uint32_t from = s->sent;
	struct api_piece pc[8];
	size_t np = 0;
	pc[np++] = head_piece(c);
	if (s->api == API_CHAT) {
		uint32_t r = 0;
		if (from < s->reasoning)
			r = s->reasoning - from < n ? s->reasoning - from : n;
		if (r) {
			pc[np++] = API_PIECE(",\"choices\":[{\"index\":0,\"delta\":{"
			                 "\"reasoning_content\":\"");
			pc[np++] = (struct api_piece){NULL, r, from};
			if (r < n) {
				pc[np++] = API_PIECE("\",\"content\":\"");
				pc[np++] = (struct api_piece){NULL, n - r, from + r};
			}
		} else {
			pc[np++] = API_PIECE(",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");
			pc[np++] = (struct api_piece){NULL, n, from};
		}
		pc[np++] = API_PIECE("\"},\"logprobs\":null,\"finish_reason\":null}]}");
	} else {
		pc[np++] = API_PIECE(",\"choices\":[{\"index\":0,\"text\":\"");
		pc[np++] = (struct api_piece){NULL, n, from};
		if (from + n == s->max_tokens) {
			pc[np++] = API_PIECE("\",\"logprobs\":null,\"finish_reason\":\"");
			pc[np++] = s->eos ? API_PIECE("stop") : API_PIECE("length");
			pc[np++] = API_PIECE("\",\"stop_reason\":null}]}");
		} else {
			pc[np++] = API_PIECE("\",\"logprobs\":null,\"finish_reason\":null,"
			                 "\"stop_reason\":null}]}");
		}
	}
	api_put_event(c, true, pc, np);
}

/* The end of a streamed response: the finish_reason event (for
 * completions the last text event carried it, unless there was none),
 * usage, [DONE]. */
static void events_end(struct server *srv, struct conn *c)
{
	struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	if (s->api == API_CHAT || s->max_tokens == 0) {
		dynbuf_reset(b);
		if (s->api == API_CHAT) {
			add_head(srv, b, s, "chat.completion.chunk");
			dynbuf_addstr(b,
			              ",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,"
			              "\"finish_reason\":\"");
			dynbuf_addstr(b, finish_reason(s));
			dynbuf_addstr(b, "\",\"stop_reason\":null}]}");
		} else {
			add_head(srv, b, s, "text_completion");
			dynbuf_addstr(b,
			              ",\"choices\":[{\"index\":0,\"text\":\"\",\"logprobs\":null,"
			              "\"finish_reason\":\"length\",\"stop_reason\":null}]}");
		}
		api_send_event(srv, c, true);
	}
	if (s->include_usage) {
		dynbuf_reset(b);
		add_head(srv, b, s,
		         s->api == API_CHAT ? "chat.completion.chunk" : "text_completion");
		dynbuf_addstr(b, ",\"choices\":[],");
		add_usage(srv, b, s);
		dynbuf_addstr(b, "}");
		api_send_event(srv, c, true);
	}
	dynbuf_reset(b);
	dynbuf_addstr(b, "[DONE]");
	api_send_event(srv, c, true);
}

/* An injected malformed event: the head of a content event, cut off inside
 * its text. */
static void malformed(struct server *srv, struct conn *c)
{
	struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	if (s->api == API_CHAT) {
		add_head(srv, b, s, "chat.completion.chunk");
		dynbuf_addstr(b,
		              s->sent < s->reasoning
		                  ? ",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\""
		                  : ",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");
	} else {
		add_head(srv, b, s, "text_completion");
		dynbuf_addstr(b, ",\"choices\":[{\"index\":0,\"text\":\"");
	}
	api_send_event(srv, c, true);
}

/* A chat message's text member: the words [from, from + n), or null when
 * there are none and reasoning is on (as vLLM's reasoning parsers give). */
static void message_text(struct server *srv, struct dynbuf *b, const struct stream *s,
                         const char *key, uint32_t from, uint32_t n)
{
	dynbuf_addstr(b, key);
	if (n == 0 && srv->cfg->reasoning) {
		ADD_LIT(b, "null");
		return;
	}
	ADD_LIT(b, "\"");
	api_add_words(b, s, from, n);
	ADD_LIT(b, "\"");
}

/* The body of a chat or text completion that is not streamed, into b. */
static int completion_body(struct server *srv, const struct stream *s, struct dynbuf *b,
                           char *extra, size_t extra_size)
{
	(void)extra;
	(void)extra_size;
	dynbuf_reset(b);
	if (s->api == API_CHAT) {
		add_head(srv, b, s, "chat.completion");
		dynbuf_addstr(b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\"");
		if (srv->cfg->reasoning)
			message_text(srv, b, s, ",\"reasoning_content\":", 0, s->reasoning);
		message_text(srv, b, s, ",\"content\":", s->reasoning,
		             s->max_tokens - s->reasoning);
		dynbuf_addstr(b, "},\"logprobs\":null,\"finish_reason\":\"");
	} else {
		add_head(srv, b, s, "text_completion");
		dynbuf_addstr(b, ",\"choices\":[{\"index\":0,\"text\":\"");
		api_add_words(b, s, 0, s->max_tokens);
		dynbuf_addstr(b, "\",\"logprobs\":null,\"finish_reason\":\"");
	}
	dynbuf_addstr(b, finish_reason(s));
	dynbuf_addstr(b, "\"}],");
	add_usage(srv, b, s);
	return dynbuf_addstr(b, "}");
}

/* A short, file-name-safe format name, or "bin". */
static const char *safe_format(const json_t *f)
{
	const char *s = json_string_value(f);
	size_t n = json_string_length(f);
	if (!s || n == 0 || n > 8)
		return "bin";
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return "bin";
	return s;
}

void api_save_chat_media(const char *dir, const char *body, size_t len)
{
	json_t *root = json_loadb(body, len, 0, NULL);
	size_t i, k;
	const json_t *m, *part;
	json_array_foreach(json_object_get(root, "messages"), i, m)
	{
		json_array_foreach(json_object_get(m, "content"), k, part)
		{
			const char *t = json_string_value(json_object_get(part, "type"));
			if (!t)
				continue;
			const json_t *v = json_object_get(part, "image_url");
			if (strcmp(t, "image_url") == 0) {
				if (json_is_object(v))
					v = json_object_get(v, "url");
				if (json_is_string(v))
					api_save_media(dir, "image", json_string_value(v),
					               json_string_length(v));
			} else if (strcmp(t, "input_audio") == 0) {
				v = json_object_get(part, "input_audio");
				const json_t *d = json_object_get(v, "data");
				if (json_is_string(d)) {
					char kind[32];
					snprintf(kind, sizeof kind, "audio.%s",
					         safe_format(json_object_get(v, "format")));
					api_save_media(dir, kind, json_string_value(d),
					               json_string_length(d));
				}
			}
		}
	}
	json_decref(root);
}

static int openai_parse(struct server *srv, enum mock_api api, bool stream_path,
                        const struct http_request *req, struct gen_req *g, char *err)
{
	(void)stream_path;
	int rc = parse_gen(req->body, req->body_len, api == API_CHAT, g, err);
	if (rc == 0 && api == API_CHAT && srv->cfg->media_dir)
		api_save_chat_media(srv->cfg->media_dir, req->body, req->body_len);
	return rc;
}

const struct mock_handler mock_chat = {
	.api = API_CHAT,
	.paths = {{"/v1/chat/completions", false}},
	.reasoning = true,
	.parse = openai_parse,
	.stream_start = chat_start,
	.events = events,
	.malformed = malformed,
	.events_end = events_end,
	.body = completion_body,
};

const struct mock_handler mock_completion = {
	.api = API_COMPLETION,
	.paths = {{"/v1/completions", false}},
	.parse = openai_parse,
	.stream_start = stream_start,
	.events = events,
	.malformed = malformed,
	.events_end = events_end,
	.body = completion_body,
};
