/* api.c - the endpoints of headroom-mock: routing, and the response
 * machinery every generation endpoint shares (the steps of the timing
 * model, SSE framing, injected failures, the mock's words). What one API
 * reads and writes is its route handler's (mock.h, struct mock_handler;
 * the table in routes.c):
 *
 *   GET  /health               {"status":"ok"}
 *   GET  /v1/models            a list with the one served model
 *   GET  /v1/models/NAME       that model
 *   POST /v1/chat/completions  chat.completion / chat.completion.chunk (route_openai.c)
 *   POST /v1/completions       text_completion (route_openai.c)
 *   POST /generate             Hugging Face TGI (route_tgi.c)
 *   POST /generate_stream      TGI's token stream (route_tgi.c)
 *   POST /v1/embeddings        OpenAI embeddings (route_pool.c)
 *   POST /v1/ranking           NVIDIA NIM rankings (route_pool.c)
 *   POST /v2/rerank            Cohere rerank, also on /v1/rerank (route_pool.c)
 *   POST /rerank               Hugging Face TEI rerank (route_pool.c)
 *   GET  /metrics              vLLM-like Prometheus page (telemetry.c)
 *
 * A connection accepted on --dcgm-listen serves only GET /metrics, the
 * DCGM-exporter-like page.
 *
 * Output length is max_completion_tokens, else max_tokens, else 16. One
 * token is one word and a space, taken from a fixed list starting at a
 * place set by the prompt's word count, so a client that counts
 * whitespace-separated words sees exactly the tokens asked for, and the
 * same prompt always gives the same text. The prompt's token count is its
 * number of whitespace-separated words (summed over chat messages and
 * text parts; a completions prompt given as token ids counts one per id),
 * or with --tokenizer the tokens that tokenizer gives.
 *
 * With --early-stop F a share F of the generation responses (chat,
 * completions and TGI; fault.c draws which from --fail-seed and the
 * response number) ends early, as a model emitting EOS would: it produces
 * max(floor(max / 2), 1, min_tokens) tokens, ends with finish_reason
 * "stop" (TGI: "eos_token") instead of "length", and reports the tokens
 * produced in usage.completion_tokens (TGI: generated_tokens). A request
 * with "ignore_eos": true, or "min_tokens" at least its max tokens, is
 * never stopped early; nor is one with max tokens 0.
 *
 * With --reasoning-tokens R a chat response's first min(R, max_tokens)
 * tokens are reasoning content (delta.reasoning_content when streamed,
 * message.reasoning_content when not) and the rest its content; all count
 * in usage.completion_tokens, the first ones also in
 * usage.completion_tokens_details.reasoning_tokens.
 *
 * A streamed response is text/event-stream in HTTP chunks, one event per
 * chunk, "data: JSON\n\n" each, the events in vLLM's order: for chat a
 * role delta, one content delta per step, an empty delta carrying
 * finish_reason; for completions one text per step, the last carrying
 * finish_reason; then the usage event (choices []) when
 * stream_options.include_usage, then "data: [DONE]". Output JSON is
 * written by hand (every string in it is known ASCII or pre-encoded);
 * requests are parsed with jansson.
 *
 * Every endpoint that answers a POST with a valid body is a generation
 * request: it gets the next response number (its id), draws its injected
 * failure, and runs through the timing model (model.c). Embeddings and
 * rankings are a single step with no generated token, answered whole when
 * it is due (after TTFT, or the load model's prefill).
 *
 * Injected failures (--fail-*; fault.c draws which request gets which):
 * a 429 (with Retry-After) or a 500 is the answer at once, with an
 * OpenAI-style error body. The others happen at the failure point: for a
 * streamed response when the chunk after the first max_tokens / 2 tokens
 * is due (or its end is, when there is no such chunk), for one that is
 * not streamed when its body is due. There a reset sends what is ready
 * (for a body: the headers and half of it) and resets the connection; a
 * malformed event is a content event cut off inside its text, after which
 * the stream goes on (a body is cut in half, with a Content-Length that
 * matches); a stall sends nothing more for --stall-ms, or ever, while the
 * generation itself goes on (what became due meanwhile follows at once).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "mock.h"
#include "tokenizer.h"
#include "util.h"

/* clang-format off */
#define W(s) {s, sizeof(s) - 1}
static const struct word {
	const char *s;
	size_t len;
} words[] = {
	W("the"),     W("quick"),   W("brown"),   W("fox"),     W("jumps"),   W("over"),
	W("lazy"),    W("dog"),     W("a"),       W("model"),   W("serves"),  W("tokens"),
	W("at"),      W("steady"),  W("pace"),    W("while"),   W("many"),    W("users"),
	W("wait"),    W("for"),     W("their"),   W("answers"), W("to"),      W("arrive"),
	W("each"),    W("word"),    W("counts"),  W("as"),      W("one"),     W("token"),
	W("and"),     W("every"),   W("stream"),  W("ends"),    W("with"),    W("done"),
	W("light"),   W("moves"),   W("fast"),    W("through"), W("quiet"),   W("rooms"),
	W("where"),   W("numbers"), W("grow"),    W("into"),    W("long"),    W("tables"),
	W("of"),      W("timing"),  W("data"),    W("that"),    W("tell"),    W("how"),
	W("servers"), W("behave"),  W("under"),   W("load"),    W("when"),    W("batches"),
	W("fill"),    W("up"),      W("again"),   W("soon"),
};
#undef W
/* clang-format on */

#define NWORDS HR_ARRAY_LEN(words)

static uint64_t count_words(const char *s, size_t n)
{
	uint64_t w = 0;
	bool in = false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		bool sp =
		    ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
		if (!sp && !in)
			w++;
		in = !sp;
	}
	return w;
}

static const struct tok *prompt_tok;

void openai_use_tokenizer(const struct tok *tok)
{
	prompt_tok = tok;
}

/* Tokens of one prompt text: by the tokenizer given with --tokenizer (as
 * the server's own would count them), else one per word. */
uint64_t api_text_tokens(const char *s, size_t n)
{
	if (prompt_tok) {
		long long t = tok_count(prompt_tok, s, n);
		return t > 0 ? (uint64_t)t : 0;
	}
	return count_words(s, n);
}

int api_opt_bool(const json_t *obj, const char *key, const char *name, bool *out, char *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return errf(err, "'%s' must be a boolean", name);
	*out = json_is_true(v);
	return 0;
}

int api_opt_int(const json_t *obj, const char *key, const char *name, long long lo,
                long long hi, long long *out, char *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo ||
	    (hi >= 0 && json_integer_value(v) > hi))
		return hi < 0 ? errf(err, "'%s' must be a non-negative integer", name)
		              : errf(err, "'%s' must be an integer from %lld to %lld", name, lo, hi);
	*out = (long long)json_integer_value(v);
	return 1;
}

json_t *api_load_object(const char *body, size_t len, char *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(body, len, 0, &jerr);
	if (!root) {
		errf(err, "invalid JSON body: %s (line %d, column %d)", jerr.text, jerr.line,
		     jerr.column);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		errf(err, "the request body must be a JSON object");
		return NULL;
	}
	return root;
}

int api_check_model(const json_t *root, char *err)
{
	const json_t *model = json_object_get(root, "model");
	if (model && !json_is_string(model))
		return errf(err, "'model' must be a string");
	return 0;
}

unsigned api_word_index(const struct stream *s, uint32_t i)
{
	return (unsigned)(((uint64_t)s->prompt_tokens + i) % NWORDS);
}

const char *api_word(unsigned idx, size_t *len)
{
	const struct word *w = &words[idx % NWORDS];
	*len = w->len;
	return w->s;
}

/* The word list twice over, each word followed by its space: any run of
 * up to NWORDS consecutive tokens is one contiguous substring, so a run's
 * text is a few memcpy calls and its length two lookups, however many
 * tokens it holds. ring_off[k] is where word k (mod NWORDS) starts in the
 * first or second pass; ring_cycle the bytes of one pass. */
static char ring[2 * NWORDS * 16];
static uint32_t ring_off[2 * NWORDS + 1];
static size_t ring_cycle;

static void ring_init(void)
{
	size_t o = 0;
	for (unsigned k = 0; k < 2 * NWORDS; k++) {
		const struct word *w = &words[k % NWORDS];
		ring_off[k] = (uint32_t)o;
		memcpy(ring + o, w->s, w->len);
		o += w->len;
		ring[o++] = ' ';
	}
	ring_off[2 * NWORDS] = (uint32_t)o;
	ring_cycle = ring_off[NWORDS];
}

/* Bytes of the tokens [from, from + n) of s's output, spaces included. */
static size_t words_len(const struct stream *s, uint32_t from, uint32_t n)
{
	if (!ring_cycle)
		ring_init();
	unsigned st = api_word_index(s, from);
	return (size_t)(n / NWORDS) * ring_cycle + ring_off[st + n % NWORDS] - ring_off[st];
}

/* Writes those bytes at w (words_len() of them); returns their end. */
static char *words_put(char *w, const struct stream *s, uint32_t from, uint32_t n)
{
	if (!ring_cycle)
		ring_init();
	unsigned st = api_word_index(s, from);
	for (uint32_t k = n / NWORDS; k; k--) {
		memcpy(w, ring + ring_off[st], ring_cycle);
		w += ring_cycle;
	}
	size_t r = ring_off[st + n % NWORDS] - ring_off[st];
	memcpy(w, ring + ring_off[st], r);
	return w + r;
}

void api_add_words(struct dynbuf *b, const struct stream *s, uint32_t from, uint32_t n)
{
	size_t len = words_len(s, from, n);
	char *w = dynbuf_space(b, len);
	if (w) {
		words_put(w, s, from, n);
		dynbuf_commit(b, len);
		return;
	}
	/* Past the buffer's bound: add word by word as far as it goes (the
	 * caller sees the failure of what it adds next). */
	for (uint32_t i = from; i < from + n; i++) {
		const struct word *wd = &words[api_word_index(s, i)];
		dynbuf_add(b, wd->s, wd->len);
		dynbuf_add(b, " ", 1);
	}
}

/* Decimal without printf: formatting is most of the work of a stream. */
void api_add_u64(struct dynbuf *b, uint64_t v)
{
	char tmp[24];
	size_t i = sizeof(tmp);
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	dynbuf_add(b, tmp + i, sizeof(tmp) - i);
}

void api_add_json_text(struct dynbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0; /* bytes copied as they are, pending */
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch != '"' && ch != '\\') {
			run++;
			continue;
		}
		dynbuf_add(b, s + i - run, run);
		run = 0;
		char esc[6] = {'\\', (char)ch, 0, 0, 0, 0};
		size_t len = 2;
		if (ch == '\n') {
			esc[1] = 'n';
		} else if (ch == '\r') {
			esc[1] = 'r';
		} else if (ch == '\t') {
			esc[1] = 't';
		} else if (ch < 0x20) {
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[ch >> 4];
			esc[5] = hex[ch & 15];
			len = 6;
		}
		dynbuf_add(b, esc, len);
	}
	dynbuf_add(b, s + n - run, run);
}

void api_put_event(struct conn *c, bool space, const struct api_piece *pc, size_t np)
{
	static const char hex[] = "0123456789abcdef";
	const struct stream *s = &c->st;
	size_t len = (space ? 6 : 5) + 2;
	for (size_t i = 0; i < np; i++)
		len += pc[i].p ? pc[i].n : words_len(s, pc[i].from, (uint32_t)pc[i].n);
	char *w = dynbuf_space(&c->out, len + 20); /* + the chunk's size line and CRLF */
	if (!w) {
		c->overflow = true;
		return;
	}
	char *start = w;
	if (s->chunked) {
		char size[16];
		size_t i = sizeof(size), n = len;
		do {
			size[--i] = hex[n & 15];
			n >>= 4;
		} while (n);
		memcpy(w, size + i, sizeof(size) - i);
		w += sizeof(size) - i;
		*w++ = '\r';
		*w++ = '\n';
	}
	memcpy(w, "data: ", 6);
	w += space ? 6 : 5;
	for (size_t i = 0; i < np; i++) {
		if (pc[i].p) {
			memcpy(w, pc[i].p, pc[i].n);
			w += pc[i].n;
		} else {
			w = words_put(w, s, pc[i].from, (uint32_t)pc[i].n);
		}
	}
	*w++ = '\n';
	*w++ = '\n';
	if (s->chunked) {
		*w++ = '\r';
		*w++ = '\n';
	}
	dynbuf_commit(&c->out, (size_t)(w - start));
}

void api_send_event(struct server *srv, struct conn *c, bool space)
{
	struct api_piece pc = {srv->scratch.data ? srv->scratch.data : "", srv->scratch.len, 0};
	api_put_event(c, space, &pc, 1);
}

enum body_cut {
	BODY_WHOLE,
	BODY_CUT_JSON, /* half the JSON, with a Content-Length that matches */
	BODY_CUT_WIRE, /* the whole Content-Length, but half the body in the output */
};

/* The whole body of a response that is not streamed. */
static void plain_body(struct server *srv, struct conn *c, enum body_cut cut)
{
	struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	char extra[128];
	extra[0] = '\0';
	int rc = mock_handler(s->api)->body(srv, s, b, extra, sizeof(extra));
	if (rc < 0) {
		c->overflow = true;
		return;
	}
	if (cut == BODY_CUT_JSON)
		b->len /= 2;
	http_respond(c, 200, "application/json", b->data, b->len, extra[0] ? extra : NULL);
	if (cut == BODY_CUT_WIRE && !c->overflow) {
		c->out.len -= b->len - b->len / 2;
		c->out.data[c->out.len] = '\0';
	}
}

/* The failure injected into c's response happens now; due: when the step
 * it stops was due. Returns whether the response goes no further here. */
static bool fault_happens(struct server *srv, struct conn *c, int64_t due)
{
	struct stream *s = &c->st;
	enum mock_fault f = (enum mock_fault)s->fault;
	s->fault = FAULT_NONE;
	srv->faults[f]++;
	switch (f) {
	case FAULT_RESET:
		if (!s->sse)
			plain_body(srv, c, BODY_CUT_WIRE);
		c->reset = true; /* mock.c sends what is ready, then resets */
		return true;
	case FAULT_MALFORMED:
		if (s->sse)
			mock_handler(s->api)->malformed(srv, c);
		else
			s->cut_body = true;
		return false;
	case FAULT_STALL:
		s->hold_ns =
		    srv->cfg->stall_ns == MOCK_NEVER ? MOCK_NEVER : due + srv->cfg->stall_ns;
		return false;
	default:
		return false;
	}
}

void api_stream_free(struct stream *s)
{
	free(s->tgi_prefix);
	s->tgi_prefix = NULL;
	s->tgi_prefix_len = 0;
	pool_free(s->pq);
	s->pq = NULL;
}

/* The end of a streamed response: the API's last events (a TGI stream's
 * last token event carried everything), then the last chunk. */
static void stream_end(struct server *srv, struct conn *c)
{
	const struct mock_handler *h = mock_handler(c->st.api);
	if (h->events_end)
		h->events_end(srv, c);
	if (c->st.chunked)
		out_add(c, "0\r\n\r\n", 5);
	else
		c->close_after = true; /* HTTP/1.0: the body ends with the connection */
}

void api_pump(struct server *srv, struct conn *c, int64_t now)
{
	struct stream *s = &c->st;
	if (c->reset)
		return; /* an injected reset: nothing more, the connection goes */
	while (s->active && !c->overflow && c->out.len - c->out_off < MOCK_OUT_HIGH_WATER) {
		if (s->hold_ns > now)
			return; /* an injected stall */
		bool more = s->sent < s->max_tokens;
		if (more && s->next_ns > now)
			return;
		if (s->fault && (s->sse ? s->sent >= s->max_tokens / 2 : !more)) {
			if (fault_happens(srv, c, more ? s->next_ns : now))
				return;
			continue;
		}
		if (more) {
			if (s->chunks == 0)
				tel_first_chunk(srv, s, s->next_ns);
			s->due_ns = s->next_ns;
			uint32_t n = s->max_tokens - s->sent;
			if (n > srv->cfg->tokens_per_chunk)
				n = srv->cfg->tokens_per_chunk;
			if (s->sse)
				mock_handler(s->api)->events(srv, c, n);
			s->sent += n;
			s->chunks++;
			s->next_ns = model_next_ns(&srv->model, s, n);
			continue;
		}
		if (s->chunks == 0) /* max_tokens 0: answered now */
			tel_first_chunk(srv, s, now);
		tel_finished(srv, s, s->chunks ? s->due_ns : now);
		if (s->sse)
			stream_end(srv, c);
		else
			plain_body(srv, c, s->cut_body ? BODY_CUT_JSON : BODY_WHOLE);
		model_stream_end(&srv->model, s);
		api_stream_free(s);
		s->active = false;
	}
}

static void gen_req_free(struct gen_req *g)
{
	free(g->prefix);
	g->prefix = NULL;
	pool_free(g->pq);
	g->pq = NULL;
}

static void generate(struct server *srv, struct conn *c, const struct http_request *req,
                     const struct mock_handler *h, bool stream_path, int64_t now)
{
	enum mock_api api = h->api;
	struct gen_req g;
	char err[HR_ERRLEN];
	memset(&g, 0, sizeof(g));
	if (h->parse(srv, api, stream_path, req, &g, err) < 0) {
		gen_req_free(&g);
		http_error(c, 400, err, NULL);
		return;
	}
	uint64_t id = ++srv->next_id;
	enum mock_fault f = fault_draw(srv->cfg, id);
	if (f == FAULT_429) {
		char extra[64], msg[128];
		snprintf(extra, sizeof(extra), "Retry-After: %d\r\n", MOCK_RETRY_AFTER_S);
		snprintf(msg, sizeof(msg),
		         "rate limit reached, retry after %d s (failure injected by headroom-mock)",
		         MOCK_RETRY_AFTER_S);
		srv->faults[f]++;
		gen_req_free(&g);
		http_error_type(c, 429, "rate_limit_error", msg, extra);
		return;
	}
	if (f == FAULT_500) {
		srv->faults[f]++;
		gen_req_free(&g);
		http_error_type(c, 500, "server_error",
		                "internal server error (failure injected by headroom-mock)", NULL);
		return;
	}
	struct stream *s = &c->st;
	api_stream_free(s);
	memset(s, 0, sizeof(*s));
	s->active = true;
	s->fault = (uint8_t)f;
	s->api = (uint8_t)api;
	s->pool = h->pool;
	s->sse = g.stream;
	s->include_usage = g.include_usage;
	s->chunked = !req->http10;
	s->prompt_tokens = g.prompt_tokens;
	s->max_tokens = g.max_tokens;
	if (!s->pool && g.max_tokens > 0 && !g.ignore_eos && g.min_tokens < g.max_tokens &&
	    early_stop_draw(srv->cfg, id)) {
		/* as at an EOS token: half the tokens, at least 1 and min_tokens */
		uint32_t n = g.max_tokens / 2;
		if (n < 1)
			n = 1;
		if (n < g.min_tokens)
			n = g.min_tokens;
		s->max_tokens = n;
		s->eos = true;
	}
	if (h->reasoning && srv->cfg->reasoning)
		s->reasoning = srv->cfg->reasoning_tokens < s->max_tokens
		                   ? srv->cfg->reasoning_tokens
		                   : s->max_tokens;
	s->tgi_details = g.details;
	s->tgi_seed_given = g.seed_given;
	s->tgi_seed = g.seed;
	s->tgi_prefix = g.prefix;
	s->tgi_prefix_len = g.prefix_len;
	s->pq = g.pq;
	s->id = id;
	s->created = wall_ns() / 1000000000LL;
	model_stream_start(&srv->model, s, now);
	if (!s->sse)
		return;
	srv->nstreams++;
	out_printf(c,
	           "HTTP/1.1 200 OK\r\nServer: " MOCK_SERVER "\r\n"
	           "Content-Type: text/event-stream; charset=utf-8\r\n"
	           "Cache-Control: no-cache\r\n%s\r\n",
	           s->chunked
	               ? (c->close_after ? "Transfer-Encoding: chunked\r\nConnection: close\r\n"
	                                 : "Transfer-Encoding: chunked\r\n")
	               : "Connection: close\r\n");
	if (h->stream_start)
		h->stream_start(srv, c);
}

static void model_object(struct server *srv, struct dynbuf *b)
{
	dynbuf_addstr(b, "{\"id\":");
	dynbuf_add(b, srv->model_json, srv->model_json_len);
	dynbuf_printf(b, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"headroom-mock\"}",
	              (long long)srv->started);
}

static void respond_scratch(struct server *srv, struct conn *c)
{
	http_respond(c, 200, "application/json", srv->scratch.data, srv->scratch.len, NULL);
}

static const char get_only[] = "Allow: GET, HEAD\r\n";

/* The DCGM listener: GET /metrics and nothing else. */
static void dcgm_handle(struct server *srv, struct conn *c, const struct http_request *req,
                        int64_t now)
{
	if (!http_path_is(req, "/metrics")) {
		http_error(c, 404, "no such endpoint", NULL);
	} else if (!http_method_is(req, "GET") && !c->head) {
		http_error(c, 405, "use GET", get_only);
	} else {
		tel_dcgm_page(srv, &srv->scratch, now);
		http_respond(c, 200, MOCK_PROM_CTYPE, srv->scratch.data, srv->scratch.len, NULL);
	}
}

/* --api-key: a POST must carry "Authorization: Bearer KEY" exactly. */
static bool authorized(const struct server *srv, const struct http_request *req)
{
	const char *key = srv->cfg->api_key;
	if (!key)
		return true;
	size_t klen = strlen(key);
	return req->auth && req->auth_len == klen + 7 && strncasecmp(req->auth, "Bearer ", 7) == 0 &&
	       memcmp(req->auth + 7, key, klen) == 0;
}

void api_handle(struct server *srv, struct conn *c, const struct http_request *req, int64_t now)
{
	static const char post_only[] = "Allow: POST\r\n";
	static const char models_prefix[] = "/v1/models/";
	static const size_t plen = sizeof(models_prefix) - 1;
	struct dynbuf *b = &srv->scratch;
	srv->nrequests++;
	c->head = http_method_is(req, "HEAD"); /* answered like GET, without the body */
	if (c->dcgm) {
		dcgm_handle(srv, c, req, now);
		return;
	}

	/* the POST endpoints, each a generation request: the paths of the
	 * route handlers (routes.c) */
	const struct mock_handler *h = NULL;
	const struct mock_path *mp = NULL;
	for (int pass = 0; pass < 2 && !mp; pass++) /* first the handlers that claim */
		for (unsigned a = 0; !mp && (h = mock_handler(a)) != NULL; a++)
			for (const struct mock_path *q = h->paths;
			     !mp && q->path && (pass == 0) == (h->claims != NULL); q++)
				if (http_path_is(req, q->path) && (pass == 1 || h->claims(req)))
					mp = q;
	if (mp) {
		if (http_method_is(req, "POST") && !authorized(srv, req))
			http_error_type(c, 401, "authentication_error",
			                "missing or wrong API key (Authorization: Bearer KEY)",
			                "WWW-Authenticate: Bearer\r\n");
		else if (http_method_is(req, "POST"))
			generate(srv, c, req, h, mp->stream, now);
		else
			http_error(c, 405, "use POST", post_only);
		return;
	}
	bool is_model = req->path_len > plen && memcmp(req->path, models_prefix, plen) == 0;
	bool metrics = http_path_is(req, "/metrics");
	if (!http_path_is(req, "/health") && !http_path_is(req, "/v1/models") && !is_model &&
	    !metrics) {
		http_error(c, 404, "no such endpoint", NULL);
	} else if (!http_method_is(req, "GET") && !c->head) {
		http_error(c, 405, "use GET", get_only);
	} else if (metrics) {
		tel_vllm_page(srv, b);
		http_respond(c, 200, MOCK_PROM_CTYPE, b->data, b->len, NULL);
	} else if (http_path_is(req, "/health")) {
		static const char ok[] = "{\"status\":\"ok\"}";
		http_respond(c, 200, "application/json", ok, sizeof(ok) - 1, NULL);
	} else if (!is_model) {
		dynbuf_reset(b);
		dynbuf_addstr(b, "{\"object\":\"list\",\"data\":[");
		model_object(srv, b);
		dynbuf_addstr(b, "]}");
		respond_scratch(srv, c);
	} else if (strlen(srv->cfg->model) != req->path_len - plen ||
	           memcmp(srv->cfg->model, req->path + plen, req->path_len - plen) != 0) {
		http_error(c, 404, "the model does not exist", NULL);
	} else {
		dynbuf_reset(b);
		model_object(srv, b);
		respond_scratch(srv, c);
	}
}
