/* request.c - building requests, the libcurl callbacks that timestamp and
 * parse responses, and filling the record (see request.h).
 *
 * Hot path: on_write reads the clock once, then feeds the bytes to the SSE
 * parser; each event's JSON is read by chunkscan (no allocation) or, when
 * chunkscan is not certain, by jansson, and a content-bearing event is
 * counted as a chunk with that one timestamp. Everything else
 * (classification, token counts, messages) happens once per request in
 * req_complete.
 *
 * What differs between endpoints - the body, the reading of stream events
 * and answers, the fast scanner - is the endpoint's handler's (ephandler.h,
 * ep_*.c); the parts handlers build with are declared in reqpart.h.
 */
#include "request.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "chunkscan.h"
#include "ephandler.h"
#include "jsonesc.h"
#include "hrlimits.h"
#include "mediaread.h"
#include "prompt.h"
#include "reqpart.h"
#include "rng.h"
#include "tokenizer.h"
#include "tokprompt.h"
#include "util.h"

/* What target.transport "auto" picks for a plain http:// target. */
#define REQ_AUTO_TRANSPORT SPEC_TRANSPORT_NATIVE

#define WORKER_USER_AGENT "headroom-worker/0.1"


/* --- shared configuration --------------------------------------------- */

static struct curl_slist *slist_add(struct curl_slist *l, const char *s)
{
	struct curl_slist *n = curl_slist_append(l, s);
	if (!n)
		xalloc_die();
	return n;
}

static bool has_header(json_t *headers, const char *name)
{
	const char *k;
	json_t *v;
	json_object_foreach(headers, k, v)
	{
		if (strcasecmp(k, name) == 0)
			return true;
	}
	return false;
}

static int build_headers(struct req_cfg *c, const struct spec *s, char *err)
{
	json_t *h = s->target.headers;
	const char *k;
	json_t *v;
	const struct ep_handler *eh = c->h;

	if (eh->content_type && !has_header(h, "Content-Type")) {
		char *line = xasprintf("Content-Type: %s", eh->content_type);
		c->headers = slist_add(c->headers, line);
		free(line);
	}
	/* the endpoint's own fields ("Name: value"), unless target.headers has them */
	for (const char *const *e = eh->headers; e && *e; e++) {
		const char *colon = strchr(*e, ':');
		char *name = xasprintf("%.*s", colon ? (int)(colon - *e) : 0, *e);
		if (!has_header(h, name))
			c->headers = slist_add(c->headers, *e);
		free(name);
	}
	if (s->target.stream && !has_header(h, "Accept"))
		c->headers = slist_add(c->headers, "Accept: text/event-stream");
	if (!has_header(h, "Expect"))
		c->headers = slist_add(c->headers, "Expect:"); /* no 100-continue wait */
	/* the key's header: Authorization as "Bearer KEY", another the bare key */
	const char *kh = s->target.api_key_header ? s->target.api_key_header
	                 : eh->key_header         ? eh->key_header
	                                          : "Authorization";
	if (s->target.api_key_env) {
		const char *key = getenv(s->target.api_key_env);
		if (!key)
			return errf(err,
			            "target.api_key_env: environment variable %s is not set for "
			            "the worker",
			            s->target.api_key_env);
		for (const char *p = key; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return errf(err,
				            "target.api_key_env: the value of %s contains control "
				            "characters",
				            s->target.api_key_env);
		char *line = strcasecmp(kh, "Authorization") == 0
				     ? xasprintf("Authorization: Bearer %s", key)
				     : xasprintf("%s: %s", kh, key);
		c->headers = slist_add(c->headers, line);
		free(line);
	}
	json_object_foreach(h, k, v)
	{
		const char *val = json_string_value(v);
		if (!val)
			continue; /* the spec guarantees strings */
		if (s->target.api_key_env && strcasecmp(k, kh) == 0)
			continue; /* the key wins */
		/* "Name;" is libcurl's way to send an empty value */
		char *line = *val ? xasprintf("%s: %s", k, val) : xasprintf("%s;", k);
		c->headers = slist_add(c->headers, line);
		free(line);
	}
	return 0;
}

/* The members every body has after extra_body was merged over them (see
 * reqpart.h). */
int rq_cfg_tail(struct req_cfg *c, const struct spec *s, bool model, char *err)
{
	json_t *extra = s->target.extra_body;
	json_t *fixed = json_object();
	if (!fixed)
		xalloc_die();
	if (model)
		json_object_set_new(fixed, "model", json_string(s->target.model));
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

/* Appends s to b (growing it); the head is built once per run. */
static void head_add(char **b, size_t *len, const char *s, size_t n)
{
	*b = xrealloc(*b, *len + n + 1);
	memcpy(*b + *len, s, n);
	*len += n;
	(*b)[*len] = '\0';
}

/* Whether the header list has an entry for name (a replacement, "Name:",
 * or an empty value, "Name;"). */
static bool list_has(const struct curl_slist *l, const char *name)
{
	size_t n = strlen(name);
	for (; l; l = l->next)
		if (strncasecmp(l->data, name, n) == 0 && (l->data[n] == ':' || l->data[n] == ';'))
			return true;
	return false;
}

/* target.transport: which client sends (docs/worker.md, "Transports"), and
 * for the native one the request head up to the Content-Length value, with
 * the fields libcurl would send: Host, User-Agent, Accept unless the list
 * replaces them, then the list in libcurl's syntax ("Name: value"; "Name:"
 * sends nothing and removes a built-in one; "Name;" an empty value). */
static int build_native(struct req_cfg *c, const struct spec *s, char *err)
{
	int tr = s->target.transport;
	const char *env = getenv("HEADROOM_WORKER_TRANSPORT");
	bool http = strncmp(c->url, "http://", 7) == 0;
	if (tr == SPEC_TRANSPORT_AUTO && env && strcmp(env, "native") == 0 && http)
		tr = SPEC_TRANSPORT_NATIVE;
	else if (tr == SPEC_TRANSPORT_AUTO && env && strcmp(env, "curl") == 0)
		tr = SPEC_TRANSPORT_CURL;
	if (tr == SPEC_TRANSPORT_AUTO)
		tr = http ? REQ_AUTO_TRANSPORT : SPEC_TRANSPORT_CURL;
	if (tr != SPEC_TRANSPORT_NATIVE)
		return 0;
	if (!http || !c->curlu || !c->host)
		return errf(err, "target.transport: \"native\" needs a plain http:// URL");
	char *port = NULL, *path = NULL, *query = NULL;
	if (curl_url_get(c->curlu, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    curl_url_get(c->curlu, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
		curl_free(port);
		curl_free(path);
		return errf(err, "target.url: cannot be parsed");
	}
	if (curl_url_get(c->curlu, CURLUPART_QUERY, &query, 0) != CURLUE_OK)
		query = NULL;
	c->tgt = xcalloc(1, sizeof *c->tgt);
	h1_target_init(c->tgt, c->host, port, NULL, NULL);
	char *b = NULL;
	size_t n = 0;
	char *line = xasprintf("POST %s%s%s HTTP/1.1\r\n", path, query ? "?" : "", query ? query : "");
	head_add(&b, &n, line, strlen(line));
	free(line);
	if (!list_has(c->headers, "Host")) {
		line = strcmp(port, "80") == 0 ? xasprintf("Host: %s\r\n", c->host)
		                               : xasprintf("Host: %s:%s\r\n", c->host, port);
		head_add(&b, &n, line, strlen(line));
		free(line);
	}
	if (!list_has(c->headers, "User-Agent"))
		head_add(&b, &n, "User-Agent: " WORKER_USER_AGENT "\r\n",
		         strlen("User-Agent: " WORKER_USER_AGENT "\r\n"));
	if (!list_has(c->headers, "Accept"))
		head_add(&b, &n, "Accept: */*\r\n", 13);
	for (const struct curl_slist *l = c->headers; l; l = l->next) {
		const char *d = l->data;
		const char *colon = strchr(d, ':'), *semi = strchr(d, ';');
		if (semi && (!colon || semi < colon) && semi[1] == '\0') { /* "Name;" */
			head_add(&b, &n, d, (size_t)(semi - d));
			head_add(&b, &n, ":\r\n", 3);
			continue;
		}
		if (!colon)
			continue;
		size_t nl = (size_t)(colon - d);
		const char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!*v)
			continue; /* "Name:": a built-in field removed */
		if ((nl == 14 && strncasecmp(d, "Content-Length", 14) == 0) ||
		    (nl == 17 && strncasecmp(d, "Transfer-Encoding", 17) == 0))
			continue; /* the body's framing is ours */
		head_add(&b, &n, d, strlen(d));
		head_add(&b, &n, "\r\n", 2);
	}
	head_add(&b, &n, "Content-Length: ", 16);
	c->h1_head = b;
	c->h1_head_len = n;
	c->native = true;
	curl_free(port);
	curl_free(path);
	curl_free(query);
	return 0;
}

int req_cfg_init(struct req_cfg *c, const struct spec *s, uint32_t worker, char *err)
{
	memset(c, 0, sizeof *c);
	size_t ul = strlen(s->target.url);
	while (ul > 0 && s->target.url[ul - 1] == '/')
		ul--;
	c->url = xasprintf("%.*s%s", (int)ul, s->target.url, spec_target_path(s));
	/* parsed once, for every request (libcurl otherwise parses the URL
	 * string again for each transfer); the flags are those libcurl uses
	 * for CURLOPT_URL */
	c->curlu = curl_url();
	if (c->curlu && curl_url_set(c->curlu, CURLUPART_URL, c->url,
	                             CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
		curl_url_cleanup(c->curlu);
		c->curlu = NULL;
	}
	char *host = NULL; /* for the allow-list's name entries */
	if (c->curlu && curl_url_get(c->curlu, CURLUPART_HOST, &host, 0) == CURLUE_OK && host)
		c->host = xstrdup(host);
	curl_free(host);
	c->endpoint = s->target.endpoint;
	c->h = ep_handler(c->endpoint);
	if (!c->h) {
		req_cfg_release(c);
		return errf(err, "target.endpoint: no handler for this endpoint");
	}
	c->one_piece = c->h->one_piece;
	c->stream = s->target.stream;
	if (c->stream && !c->h->event) {
		req_cfg_release(c);
		return errf(err, "target.stream: the endpoint %s does not stream",
		            spec_endpoint_name(c->endpoint));
	}
	double ms = s->target.timeout_s * 1000.0;
	c->timeout_ms = ms < 1 ? 1 : (long)(ms + 0.5);
	c->seed = s->workload.seed;
	c->isl = s->workload.isl;
	c->osl = s->workload.osl;
	c->worker = worker;
	c->isl_count = s->workload.isl_count;
	c->block_size = s->workload.block_size > 0 ? s->workload.block_size : 512;
	c->osl_count = s->workload.osl_count;
	c->count_output = c->osl_count == SPEC_COUNT_TOKENIZER && !c->one_piece;
	const char *json_mode = getenv("HEADROOM_WORKER_JSON");
	/* the handler's scanner (chunkscan: chat, completions and TGI events);
	 * jansson for the others, and for everything when the output text is
	 * counted (chunkscan does not lift the reasoning text) */
	c->fast_json = !(json_mode && strcmp(json_mode, "jansson") == 0) && !c->count_output &&
	               c->h->scan;
	if (build_headers(c, s, err) < 0 || c->h->cfg_init(c, s, err) < 0) {
		req_cfg_release(c);
		return -1;
	}
	if (build_native(c, s, err) < 0) {
		req_cfg_release(c);
		return -1;
	}
	return 0;
}

void req_cfg_release(struct req_cfg *c)
{
	if (c->h && c->h->cfg_release)
		c->h->cfg_release(c);
	free(c->url);
	free(c->host);
	curl_url_cleanup(c->curlu);
	curl_slist_free_all(c->headers);
	free(c->body_tail);
	json_decref(c->tail_members);
	ep_template_release(&c->tpl);
	ep_path_release(&c->resp_path);
	ep_path_release(&c->ev_path);
	if (c->tgt)
		h1_target_release(c->tgt);
	free(c->tgt);
	free(c->h1_head);
	memset(c, 0, sizeof *c);
}

/* --- small helpers ---------------------------------------------------- */

void rq_fail(struct req *r, int err, const char *fmt, ...)
{
	if (r->fail)
		return;
	r->fail = err;
	char buf[HR_ERRLEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	free(r->fail_msg);
	r->fail_msg = xstrdup(buf);
}

/* A copy of n bytes safe to store and print: printable ASCII only. */
static char *clean_text(const char *s, size_t n)
{
	if (n > HR_MAX_ERROR_MSG)
		n = HR_MAX_ERROR_MSG;
	char *out = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		out[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : ' ';
	}
	out[n] = '\0';
	return out;
}

bool rq_nonempty_str(json_t *v)
{
	return json_is_string(v) && json_string_length(v) > 0;
}

/* A token count from usage: an integer in [0, INT32_MAX], else -1. */
int64_t rq_get_count(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (!json_is_integer(v))
		return -1;
	json_int_t n = json_integer_value(v);
	return n >= 0 && n <= INT32_MAX ? (int64_t)n : -1;
}

void rq_take_usage(struct req *r, json_t *usage)
{
	int64_t v;
	if ((v = rq_get_count(usage, "prompt_tokens")) >= 0)
		r->u_prompt = v;
	if ((v = rq_get_count(usage, "completion_tokens")) >= 0)
		r->u_completion = v;
	json_t *d = json_object_get(usage, "completion_tokens_details");
	if (json_is_object(d) && (v = rq_get_count(d, "reasoning_tokens")) >= 0)
		r->u_reasoning = v;
}

void rq_take_stream_error(struct req *r, json_t *e)
{
	if (!e || json_is_null(e) || r->stream_error)
		return;
	json_t *m = json_is_object(e) ? json_object_get(e, "message") : e;
	if (json_is_string(m)) {
		r->stream_error = clean_text(json_string_value(m), json_string_length(m));
	} else {
		char *d = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY);
		r->stream_error = d ? clean_text(d, strlen(d)) : xstrdup("error event");
		free(d);
	}
}

/* --- SSE events -------------------------------------------------------- */

/* Keeps n bytes of JSON-escaped answer text. */
static void capture_raw(struct req *r, const char *p, size_t n)
{
	if (r->answer_over)
		return;
	if (dynbuf_add(&r->answer, p, n) < 0)
		r->answer_over = true;
}

/* Keeps a JSON string's text (jansson's tree: escaped again; slow path). */
void rq_capture_json(struct req *r, json_t *str)
{
	if (!r->capture || !json_is_string(str))
		return;
	char *d = json_dumps(str, JSON_ENCODE_ANY | JSON_COMPACT);
	size_t n = d ? strlen(d) : 0;
	if (n >= 2)
		capture_raw(r, d + 1, n - 2); /* without the quotes */
	else
		r->answer_over = true;
	free(d);
}

/* Keeps a content or reasoning string's raw text for the tokenizer's
 * count of the output (workload.token_count.osl "tokenizer"; the jansson
 * reader is the only one then). */
void rq_keep_output(struct req *r, json_t *str)
{
	if (!r->cfg->count_output || r->output_over || !json_is_string(str))
		return;
	if (dynbuf_add(&r->output, json_string_value(str), json_string_length(str)) < 0)
		r->output_over = true;
}

/* What one streamed chunk said, from either reader. */
static int note_chunk(struct req *r, const struct chunk_info *ci)
{
	if (ci->content && ci->text && r->capture)
		capture_raw(r, ci->text, ci->text_len);
	if (ci->content || ci->reasoning) {
		if (record_add_chunk(&r->rec, r->cb_ns, &r->chunk_cap) < 0) {
			rq_fail(r, HR_ERR_MALFORMED_STREAM, "more than %u content chunks",
			         HR_MAX_CHUNKS_PER_REQUEST);
			return EV_FAIL;
		}
		if (ci->content && r->rec.first_output_ns == HR_NO_TIME)
			r->rec.first_output_ns = r->cb_ns;
		if (ci->reasoning)
			r->reasoning_chunks++;
		r->rec.end_ns = r->cb_ns;
	}
	if (ci->prompt_tokens >= 0)
		r->u_prompt = ci->prompt_tokens;
	if (ci->completion_tokens >= 0)
		r->u_completion = ci->completion_tokens;
	if (ci->reasoning_tokens >= 0)
		r->u_reasoning = ci->reasoning_tokens;
	if (ci->final) { /* TGI: the event with generated_text ends the stream */
		r->saw_done = true;
		return EV_STOP;
	}
	return 0;
}

/* A TGI or template stream event (parsed; the reference reader of TGI
 * events, which chunkscan reads too): what it says, into ci. Returns 0,
 * or EV_FAIL (r->fail set). */
int rq_ep_event(struct req *r, const char *name, json_t *j, struct chunk_info *ci)
{
	(void)name;
	struct ep_facts f;
	ep_read_event(r->cfg->endpoint, j, &r->cfg->ev_path, &f);
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
	if (f.chunk && f.text) {
		rq_capture_json(r, f.text);
		rq_keep_output(r, f.text);
	}
	rq_take_stream_error(r, f.error);
	return 0;
}

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
	struct req *r = ud;
	struct chunk_info ci;

	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		r->saw_done = true;
		return EV_STOP;
	}
	/* fast path; jansson whenever the scanner is not certain */
	const struct ep_handler *h = r->cfg->h;
	if (r->cfg->fast_json && h->scan(data, len, &ci, &r->scan_memo) == 0)
		return note_chunk(r, &ci);
	json_error_t je;
	json_t *j = json_loadb(data, len, 0, &je);
	if (!json_is_object(j) && !(j && h->any_json_event)) {
		if (j)
			rq_fail(r, HR_ERR_MALFORMED_STREAM, "stream event is not a JSON object");
		else
			rq_fail(r, HR_ERR_MALFORMED_STREAM, "stream event is not JSON: %s",
			         je.text);
		json_decref(j);
		return EV_FAIL;
	}
	int rc = h->event(r, event, j, &ci);
	json_decref(j);
	return rc ? rc : note_chunk(r, &ci);
}

/* --- libcurl callbacks -------------------------------------------------- */

static long response_code(struct req *r);

static void set_mode(struct req *r)
{
	long code = response_code(r);
	if (code == 200)
		r->mode = r->cfg->stream ? RB_SSE : RB_BODY;
	else
		r->mode = RB_ERROR;
}

/* Whether a Transfer-Encoding field value names chunked: the test libcurl
 * makes (any comma-separated coding equal to "chunked", any case), so the
 * two always agree on how the body is framed. */
static bool te_chunked(const char *v, size_t n)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t a = i, b = i;
		while (i < n && v[i] != ',') {
			if (v[i] != ' ' && v[i] != '\t' && v[i] != '\r' && v[i] != '\n')
				b = i + 1;
			i++;
		}
		if (b - a == 7 && strncasecmp(v + a, "chunked", 7) == 0)
			return true;
	}
	return false;
}

/* A header line that is not the blank one: a status line starts a header
 * block (of an interim or the final response), Transfer-Encoding says
 * whether its body is chunked. */
static void header_line(struct req *r, const char *p, size_t len)
{
	static const char te[] = "Transfer-Encoding:";
	if (r->rec.headers_ns != HR_NO_TIME)
		return; /* trailers */
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		r->chunked = false;
		chunked_init(&r->dechunk);
	} else if (len >= sizeof te - 1 && strncasecmp(p, te, sizeof te - 1) == 0 &&
	           te_chunked(p + sizeof te - 1, len - (sizeof te - 1))) {
		r->chunked = true;
	}
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct req *r = ud;
	size_t len = sz * n;
	if (len > 2 || (len && p[0] != '\r' && p[0] != '\n')) {
		header_line(r, p, len);
		return len;
	}
	/* blank line: the end of a header block */
	int64_t t = mono_ns() - r->cfg->t0;
	if (r->rec.headers_ns != HR_NO_TIME)
		return len; /* trailers */
	long code = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 100 && code < 200)
		return len; /* interim response: the final one follows */
	r->rec.headers_ns = t;
	set_mode(r);
	return len;
}

/* Body bytes, decoded (chunked framing removed). Returns 0, or EV_FAIL
 * when the transfer must be aborted (r->fail is set). */
static int on_body(void *ud, const char *p, size_t len)
{
	struct req *r = ud;
	int rc;

	switch (r->mode) {
	case RB_SSE:
		r->raw_bytes += len;
		if (r->cfg->h->raw) { /* not SSE: each read is a chunk */
			if (r->rec.n_chunks && r->rec.end_ns == r->cb_ns)
				return 0; /* the same read, framed as several HTTP chunks */
			struct chunk_info ci = {.content = true,
			                        .prompt_tokens = -1,
			                        .completion_tokens = -1,
			                        .reasoning_tokens = -1};
			return note_chunk(r, &ci) ? EV_FAIL : 0;
		}
		if (r->saw_done)
			return 0;
		rc = sse_feed(&r->sse, p, len);
		if (rc == 0 || rc == EV_STOP)
			return 0;
		if (rc == SSE_ERR_OVERSIZE)
			rq_fail(r, HR_ERR_MALFORMED_STREAM,
			         "SSE line over %u or event over %u bytes", HR_MAX_SSE_LINE,
			         HR_MAX_SSE_EVENT);
		return EV_FAIL;
	case RB_BODY:
		if (!r->resp.len)
			r->body_ns = r->cb_ns; /* the answer's arrival */
		if (dynbuf_add(&r->resp, p, len) < 0) {
			rq_fail(r, HR_ERR_MALFORMED_STREAM, "response body over %u bytes",
			         HR_MAX_RESPONSE_BYTES);
			return EV_FAIL;
		}
		return 0;
	default: {
		size_t room = REQ_ERR_BODY_MAX - r->err_body_len;
		size_t k = len < room ? len : room;
		memcpy(r->err_body + r->err_body_len, p, k);
		r->err_body_len += k;
		r->err_body[r->err_body_len] = '\0';
		return 0;
	}
	}
}

/* The raw body (transfer decoding is off, see chunked.h): libcurl calls
 * this once per read from the socket, with every chunk that read brought. */
static size_t on_write(char *p, size_t sz, size_t n, void *ud)
{
	struct req *r = ud;
	int64_t t = mono_ns() - r->cfg->t0; /* the one clock read of this callback */
	size_t len = sz * n;
	int rc;

	if (r->fail)
		return 0;
	if (r->mode == RB_UNKNOWN)
		set_mode(r);
	r->cb_ns = t;
	if (!r->chunked)
		return on_body(r, p, len) ? 0 : len;
	rc = chunked_feed(&r->dechunk, p, len, on_body, r);
	/* a framing error is libcurl's to report: its own reading of the same
	 * bytes fails the transfer (a reset), as it always did */
	return rc == 0 || rc == CHUNKED_BAD ? len : 0;
}

/* --- the native transport (h1.h) ----------------------------------------- */

/* The final answer's head; t_ns the clock read of the read that ended it. */
static int nat_head(void *ud, int status, int64_t t_ns)
{
	struct req *r = ud;
	r->h1_status = status;
	r->rec.headers_ns = t_ns - r->cfg->t0;
	set_mode(r);
	return 0;
}

/* Body bytes (decoded) of one socket read, with that read's clock. */
static int nat_body(void *ud, const char *p, size_t len, int64_t t_ns)
{
	struct req *r = ud;
	if (r->fail)
		return 1;
	r->cb_ns = t_ns - r->cfg->t0;
	return on_body(r, p, len) ? 1 : 0;
}

static void nat_done(void *ud, int result)
{
	struct req *r = ud;
	r->h1_done(r->h1_ud, r, result);
}

static const struct h1_ops nat_ops = {nat_head, nat_body, nat_done};

int req_launch_native(struct req *r, void (*done)(void *ud, struct req *r, int result), void *ud)
{
	const struct req_cfg *c = r->cfg;
	struct iovec iov[3] = {
	    {.iov_base = c->h1_head, .iov_len = c->h1_head_len},
	    {.iov_base = r->h1_clen, .iov_len = strlen(r->h1_clen)},
	    {.iov_base = r->body.data, .iov_len = r->body.len},
	};
	r->h1_done = done;
	r->h1_ud = ud;
	r->rec.start_ns = mono_ns() - c->t0;
	return h1_start(&r->conn, iov, r->body.len ? 3 : 2);
}

void req_complete_native(struct req *r, int result, int64_t done_ns)
{
	CURLcode cc;
	switch (result) {
	case H1R_OK:
		cc = CURLE_OK;
		break;
	case H1R_RESOLVE:
		cc = CURLE_COULDNT_RESOLVE_HOST;
		break;
	case H1R_REFUSED:
	case H1R_CONNECT:
		cc = CURLE_COULDNT_CONNECT;
		break;
	case H1R_SEND:
		cc = CURLE_SEND_ERROR;
		break;
	case H1R_RECV:
	case H1R_CHUNK:
		cc = CURLE_RECV_ERROR;
		break;
	case H1R_NOTHING:
		cc = CURLE_GOT_NOTHING;
		break;
	case H1R_PARTIAL:
		cc = CURLE_PARTIAL_FILE;
		break;
	case H1R_ABORT:
		cc = CURLE_WRITE_ERROR;
		break;
	case H1R_TIMEOUT:
		cc = CURLE_OPERATION_TIMEDOUT;
		h1_close(&r->conn);
		snprintf(r->conn.msg, sizeof r->conn.msg, "Operation timed out after %ld milliseconds",
		         r->cfg->timeout_ms);
		break;
	default:
		cc = CURLE_WEIRD_SERVER_REPLY;
		break;
	}
	if (cc != CURLE_OK && r->conn.msg[0])
		snprintf(r->errbuf, sizeof r->errbuf, "%s", r->conn.msg);
	if (r->conn.refused[0])
		memcpy(r->refused, r->conn.refused, sizeof r->refused);
	req_complete(r, cc, done_ns);
}

void req_abort_native(struct req *r)
{
	h1_close(&r->conn);
}

/* --- life of a request ------------------------------------------------- */

/* Every socket libcurl opens for a request: the resolved address is checked
 * against the operator's allow-list first, and a refused one gets no socket,
 * so not a byte is sent (docs/security.md, "Targets"). libcurl may try
 * other addresses of the name; the request fails only if none is allowed. */
static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct req *r = ud;
	char why[sizeof r->refused];
	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKET_BAD;
	if (r->cfg->allow && !netallow_check(r->cfg->allow, &a->addr, r->cfg->host, why,
					     sizeof why)) {
		if (!r->refused[0])
			memcpy(r->refused, why, sizeof why);
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype, a->protocol);
}

struct req *req_new(const struct req_cfg *cfg)
{
	CURL *e = curl_easy_init();
	if (!e)
		return NULL;
	struct req *r = xcalloc(1, sizeof *r);
	r->cfg = cfg;
	r->easy = e;
	record_init(&r->rec);
	tnode_init(&r->deadline, 0);
	tnode_init(&r->tmo, 0);
	h1_conn_init(&r->conn, cfg->tgt, &nat_ops, r);
	/* a prompt of HR_MAX_ISL words (8 letters at most, a space), the
	 * conversation before it, the fixed members (or a template's text) */
	dynbuf_init(&r->body, (size_t)HR_MAX_ISL * 12 + REQ_MAX_CONVERSATION + cfg->body_tail_len +
	                          cfg->tpl.text_len + cfg->body_extra + 256);
	dynbuf_init(&r->answer, REQ_MAX_CONVERSATION);
	dynbuf_init(&r->output, REQ_MAX_CONVERSATION);
	dynbuf_init(&r->resp, HR_MAX_RESPONSE_BYTES);
	sse_init(&r->sse, HR_MAX_SSE_LINE, HR_MAX_SSE_EVENT, on_event, NULL, r);
	r->u_prompt = r->u_completion = r->u_reasoning = -1;

	if (cfg->curlu)
		curl_easy_setopt(e, CURLOPT_CURLU, cfg->curlu);
	else
		curl_easy_setopt(e, CURLOPT_URL, cfg->url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, cfg->headers);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	/* the raw body: one write callback per socket read rather than one
	 * per chunk (on_write decodes the chunked framing) */
	curl_easy_setopt(e, CURLOPT_HTTP_TRANSFER_DECODING, 0L);
	/* a proxy from the environment would sit inside every measurement:
	 * the target is always contacted directly */
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, cfg->timeout_ms);
	curl_easy_setopt(e, CURLOPT_USERAGENT, WORKER_USER_AGENT);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, r);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	return r;
}

void req_free(struct req *r)
{
	if (!r)
		return;
	h1_close(&r->conn);
	curl_easy_cleanup(r->easy);
	sse_release(&r->sse);
	dynbuf_release(&r->body);
	dynbuf_release(&r->resp);
	dynbuf_release(&r->answer);
	dynbuf_release(&r->output);
	record_release(&r->rec);
	free(r->fail_msg);
	free(r->stream_error);
	free(r);
}

void req_reset(struct req *r)
{
	free(r->rec.error_msg);
	r->rec.error_msg = NULL;
	r->rec.n_chunks = 0;
	free(r->fail_msg);
	r->fail_msg = NULL;
	free(r->stream_error);
	r->stream_error = NULL;
	r->fail = 0;
	r->body_ns = HR_NO_TIME;
	r->saw_done = false;
	r->reasoning_chunks = 0;
	r->u_prompt = r->u_completion = r->u_reasoning = -1;
	r->raw_bytes = 0;
	r->mode = RB_UNKNOWN;
	r->h1_status = 0;
	r->chunked = false;
	chunked_init(&r->dechunk);
	chunkscan_memo_reset(&r->scan_memo);
	r->err_body_len = 0;
	r->err_body[0] = '\0';
	r->errbuf[0] = '\0';
	r->refused[0] = '\0';
	dynbuf_reset(&r->resp);
	dynbuf_reset(&r->answer);
	dynbuf_reset(&r->output);
	r->capture = r->answer_over = r->output_over = false;
	r->user_off = r->user_len = 0;
}

/* The new user prompt: trace prefix blocks (workload.block_size tokens each,
 * the same text wherever the same hash id appears), then the request's own
 * words, requested_isl words in all. */
int rq_add_prompt(struct req *r, const struct req_params *p)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	int left = r->requested_isl;
	bool first = true;
	if (p->prefix && (dynbuf_add(b, p->prefix, p->prefix_len) < 0 ||
	                  (!c->tp && !p->text && dynbuf_add(b, " ", 1) < 0)))
		return -1; /* (exact-length pieces start with their own space) */
	if (p->text) /* a dataset's prompt */
		return json_escape_append(b, p->text, p->text_len);
	if (c->tp) {
		/* exact token lengths by the run's tokenizer: the same blocks
		 * for the same hash ids, then the request's own text */
		for (uint32_t i = 0; i < p->n_hash && left > 0; i++) {
			int n = left < c->block_size ? left : c->block_size;
			uint64_t pick = rng_hash(c->seed, RNG_STREAM_PROMPT,
			                         REQ_BLOCK_OFFSET + p->hash_ids[i]);
			if (tokprompt_build(c->tp, pick, n, 1, b) < 0)
				return -1;
			left -= n;
		}
		if (left > 0 && tokprompt_build(c->tp, rng_hash(c->seed, RNG_STREAM_PROMPT, p->req_id),
		                                left, 1, b) < 0)
			return -1;
		return 0;
	}
	for (uint32_t i = 0; i < p->n_hash && left > 0; i++) {
		int n = left < c->block_size ? left : c->block_size;
		if ((!first && dynbuf_add(b, " ", 1) < 0) ||
		    prompt_synthetic(b, c->seed, REQ_BLOCK_OFFSET + p->hash_ids[i], n) < 0)
			return -1;
		left -= n;
		first = false;
	}
	if (left > 0 && ((!first && dynbuf_add(b, " ", 1) < 0) ||
	                 prompt_synthetic(b, c->seed, p->req_id, left) < 0))
		return -1;
	return 0;
}

/* "KEY":N, for a short static key (no printf on the way of every request) */
int rq_add_count(struct dynbuf *b, const char *key, int n)
{
	char buf[64];
	size_t kl = strlen(key), k = 0;
	if (kl > 40)
		return -1;
	buf[k++] = '"';
	memcpy(buf + k, key, kl);
	k += kl;
	buf[k++] = '"';
	buf[k++] = ':';
	char digits[12];
	size_t d = 0;
	unsigned v = n < 0 ? 0 : (unsigned)n; /* lengths are >= 1 */
	do {
		digits[d++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (d)
		buf[k++] = digits[--d];
	buf[k++] = ',';
	return dynbuf_add(b, buf, k);
}

/* n in decimal (no printf on the way of every request) */
int rq_add_uint(struct dynbuf *b, int n)
{
	char digits[12];
	size_t d = 0;
	unsigned v = n < 0 ? 0 : (unsigned)n;
	do {
		digits[d++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	char buf[12];
	for (size_t k = 0; k < d; k++)
		buf[k] = digits[d - 1 - k];
	return dynbuf_add(b, buf, d);
}

/* The prompt as the inside of a JSON string, after the history in text
 * form (as for completions); marks the user part for req_turn. */
int rq_add_user_text(struct req *r, const struct req_params *p)
{
	const struct dynbuf *h = p->history;
	struct dynbuf *b = &r->body;
	if (h && h->len && dynbuf_add(b, h->data, h->len) < 0)
		return -1;
	r->user_off = b->len;
	if (rq_add_prompt(r, p) < 0)
		return -1;
	r->user_len = b->len - r->user_off;
	return 0;
}

/* Text k (>= 1) of a request besides its prompt (a passage, or a further
 * input), between pre and post: its own text and its own length drawn
 * from workload.isl, both from the index (req_id, k). Adds the length to
 * *sum. */
int rq_add_item(struct req *r, const struct req_params *p, int k, const char *pre,
                    const char *post, int64_t *sum)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	uint64_t idx = rng_hash(p->req_id, RNG_STREAM_PROMPT, (uint64_t)k) | (1ULL << 63);
	int n = rng_length(c->seed, RNG_STREAM_ISL, idx, c->isl.mean, c->isl.stddev, 1, HR_MAX_ISL);
	if (dynbuf_addstr(b, pre) < 0 ||
	    (c->tp ? tokprompt_build(c->tp, rng_hash(c->seed, RNG_STREAM_PROMPT, idx), n, 1, b)
	           : prompt_synthetic(b, c->seed, idx, n)) < 0 ||
	    dynbuf_addstr(b, post) < 0)
		return -1;
	*sum += n;
	return 0;
}

/* The fixed members and the closing brace; sep: a member precedes them. */
int rq_end_body(struct req *r, bool sep)
{
	const struct req_cfg *c = r->cfg;
	if (sep && c->body_tail_len > 1 && dynbuf_add(&r->body, ",", 1) < 0)
		return -1;
	return dynbuf_add(&r->body, c->body_tail, c->body_tail_len);
}

/* The body, by the endpoint's handler. */
static int build_body(struct req *r, const struct req_params *p)
{
	dynbuf_reset(&r->body);
	r->osl_sent = r->cfg->sends_osl;
	return r->cfg->h->body(r, p);
}

int req_prepare(struct req *r, const struct req_params *p)
{
	const struct req_cfg *c = r->cfg;
	int64_t *chunks = r->rec.chunk_ns;

	req_reset(r);
	record_init(&r->rec);
	r->rec.chunk_ns = chunks; /* keep the array (and chunk_cap) */
	r->rec.seq = p->seq;
	r->rec.req_id = p->req_id;
	r->rec.worker = c->worker;
	r->rec.phase = p->phase;
	r->rec.session = p->session;
	r->rec.turn = p->turn;
	/* an embeddings or rankings answer is timed as a stream of one chunk */
	r->rec.flags = c->stream || c->one_piece ? HR_REC_STREAMED : 0;
	r->rec.intended_ns = p->intended_ns;
	r->capture = p->capture;
	r->extra_tokens = p->extra_tokens;
	r->requested_isl = p->isl >= 0    ? p->isl
	                   : p->isl == -2 ? -1 /* a text of unknown length */
	                                  : rng_length(c->seed, RNG_STREAM_ISL, p->req_id,
	                                               c->isl.mean, c->isl.stddev, 1, HR_MAX_ISL);
	r->requested_osl = p->osl >= 0 ? p->osl
	                               : rng_length(c->seed, RNG_STREAM_OSL, p->req_id, c->osl.mean,
	                                            c->osl.stddev, 1, HR_MAX_OSL);
	if (c->stream)
		sse_reset(&r->sse); /* a fresh parser per stream (a spent one stays spent) */
	if (build_body(r, p) < 0)
		return -1;
	if (c->native) { /* the rest of the head: the body's length */
		char *d = r->h1_clen + sizeof r->h1_clen;
		*--d = '\0';
		memcpy(d -= 4, "\r\n\r\n", 4);
		size_t v = r->body.len;
		do {
			*--d = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		memmove(r->h1_clen, d, (size_t)(r->h1_clen + sizeof r->h1_clen - d));
		return 0;
	}
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body.len);
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body.data);
	return 0;
}

int req_turn(const struct req *r, struct dynbuf *h)
{
	size_t keep = h->len;
	const char *user = r->body.data + r->user_off;
	int rc;
	if (!r->cfg->with_prompt || r->cfg->one_piece)
		return 0; /* extra_body supplies the prompt (every turn sends it as is), or
		           * the endpoint has no answer to carry on from */
	if (r->answer_over || !r->user_len)
		return -1;
	if (r->cfg->h->history == EP_HIST_CHAT)
		rc = dynbuf_add(h, user, r->user_len) < 0 ||
		     dynbuf_addstr(h, ",{\"role\":\"assistant\",\"content\":\"") < 0 ||
		     dynbuf_add(h, r->answer.data ? r->answer.data : "", r->answer.len) < 0 ||
		     dynbuf_addstr(h, "\"},") < 0;
	else
		rc = dynbuf_add(h, user, r->user_len) < 0 || dynbuf_add(h, " ", 1) < 0 ||
		     dynbuf_add(h, r->answer.data ? r->answer.data : "", r->answer.len) < 0 ||
		     dynbuf_add(h, " ", 1) < 0;
	if (rc) {
		h->len = keep;
		if (h->data)
			h->data[keep] = '\0';
		return -1;
	}
	return 0;
}

int req_launch(struct req *r, int (*add)(void *ud, CURL *easy), void *ud)
{
	r->rec.start_ns = mono_ns() - r->cfg->t0;
	return add(ud, r->easy);
}

int req_curl_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_OK:
		return HR_ERR_NONE;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return HR_ERR_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return HR_ERR_TIMEOUT;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return HR_ERR_RESET;
	default:
		return HR_ERR_TRANSPORT;
	}
}

static int http_error(long code)
{
	if (code == 429)
		return HR_ERR_RATE_LIMITED;
	if (code >= 400 && code < 500)
		return HR_ERR_HTTP_4XX;
	if (code >= 500 && code < 600)
		return HR_ERR_HTTP_5XX;
	return HR_ERR_HTTP_OTHER;
}

/* Token counts and their sources (docs/metrics.md, "Token counts"): every
 * count known goes into the record, and workload.token_count picks which
 * one is the record's ISL and OSL; when the chosen one is missing the
 * next in line stands in (usage, tokenizer, chunks or the requested
 * length), and the source says which. */
static void fill_tokens(struct req *r)
{
	const struct req_cfg *c = r->cfg;
	struct hr_record *rec = &r->rec;
	rec->req_osl = r->osl_sent ? r->requested_osl : -1;
	rec->usage_isl = r->u_prompt >= 0 ? (int32_t)r->u_prompt : -1;
	rec->usage_osl = r->u_completion >= 0 ? (int32_t)r->u_completion : -1;
	/* the prompt headroom wrote is exact by the tokenizer (tokprompt, or a
	 * dataset's text counted when it was chosen) */
	int64_t ti = c->tok && c->with_prompt && r->requested_isl >= 0 ? (int64_t)r->requested_isl + r->extra_tokens
	                                              : -1;
	rec->tok_isl = ti > INT32_MAX ? INT32_MAX : (int32_t)ti;
	rec->tok_osl = -1;
	if (c->count_output && c->tok && !r->output_over) {
		long long n = tok_count(c->tok, r->output.data ? r->output.data : "", r->output.len);
		rec->tok_osl = n < 0 ? -1 : n > INT32_MAX ? INT32_MAX : (int32_t)n;
	}

	if (c->h->stream_bytes && r->mode == RB_SSE) /* streamed pictures: the stream's bytes */
		rec->bytes_out = r->raw_bytes > INT32_MAX ? INT32_MAX : (int32_t)r->raw_bytes;
	if (c->h->raw) { /* a raw answer: read, not counted */
		rec->osl = -1;
		rec->osl_src = HR_TOKSRC_NONE;
		if (r->mode == RB_SSE) /* a 200 stream: its bytes as read */
			rec->bytes_out =
			    r->raw_bytes > INT32_MAX ? INT32_MAX : (int32_t)r->raw_bytes;
	} else if (c->one_piece) { /* embeddings, rankings: nothing is generated */
		rec->osl = 0;
		rec->osl_src = HR_TOKSRC_REQUESTED;
	} else {
		int32_t chunks = c->stream ? (int32_t)rec->n_chunks : -1;
		struct {
			int32_t v;
			uint8_t src;
		} cand[3] = {{rec->usage_osl, HR_TOKSRC_USAGE},
		             {rec->tok_osl, HR_TOKSRC_TOKENIZER},
		             {chunks, HR_TOKSRC_CHUNKS}};
		/* the order they are tried in: the chosen one, then the others
		 * (chunks of a whole answer mean nothing: usage first then) */
		static const int order[3][3] = {[SPEC_COUNT_USAGE] = {0, 1, 2},
		                                [SPEC_COUNT_TOKENIZER] = {1, 0, 2},
		                                [SPEC_COUNT_CHUNKS] = {2, 0, 1}};
		int mode = c->osl_count == SPEC_COUNT_CHUNKS && !c->stream ? SPEC_COUNT_USAGE
		                                                            : c->osl_count;
		rec->osl = -1;
		rec->osl_src = HR_TOKSRC_NONE;
		for (int k = 0; k < 3; k++) {
			int i = order[mode][k];
			if (cand[i].v >= 0) {
				rec->osl = cand[i].v;
				rec->osl_src = cand[i].src;
				break;
			}
		}
	}
	bool tok_first = c->isl_count == SPEC_COUNT_TOKENIZER && rec->tok_isl >= 0;
	if (tok_first || (rec->usage_isl < 0 && rec->tok_isl >= 0)) {
		rec->isl = rec->tok_isl;
		rec->isl_src = HR_TOKSRC_TOKENIZER;
	} else if (rec->usage_isl >= 0) {
		rec->isl = rec->usage_isl;
		rec->isl_src = HR_TOKSRC_USAGE;
	} else if (r->requested_isl >= 0) {
		rec->isl = r->requested_isl;
		rec->isl_src = HR_TOKSRC_REQUESTED;
	} else {
		rec->isl = -1; /* a dataset's text, not counted */
		rec->isl_src = HR_TOKSRC_NONE;
	}
	if (r->u_reasoning >= 0)
		rec->reasoning_tokens = (int32_t)r->u_reasoning;
	else if (c->stream && c->h->reasoning_chunks)
		rec->reasoning_tokens = (int32_t)r->reasoning_chunks;
	else
		rec->reasoning_tokens = -1;
}

static long response_code(struct req *r)
{
	long code = 0;
	if (r->cfg->native)
		return r->h1_status;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
	return code >= 0 && code <= 999 ? code : 0;
}

int rq_add_tail(struct req *r, json_t *extra)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	if (!extra)
		return dynbuf_add(b, c->body_tail, c->body_tail_len);
	json_t *fixed = json_copy(c->tail_members); /* (shallow: only members go) */
	if (!fixed)
		return -1;
	const char *key;
	json_t *v;
	json_object_foreach(extra, key, v)
		json_object_del(fixed, key);
	char *a = json_dumps(fixed, JSON_COMPACT), *e = json_dumps(extra, JSON_COMPACT);
	json_decref(fixed);
	int rc = -1;
	if (a && e) {
		size_t al = strlen(a), el = strlen(e); /* "{...}" each */
		if (al == 2 && el == 2) { /* nothing follows: drop a last ',' */
			if (b->data[b->len - 1] == ',')
				b->len--;
			rc = dynbuf_add(b, "}", 1);
		} else {
			rc = dynbuf_add(b, a + 1, al - 2) < 0 ||
			     (al > 2 && el > 2 && dynbuf_add(b, ",", 1) < 0) ||
			     dynbuf_add(b, e + 1, el - 1) < 0
			         ? -1
			         : 0;
		}
	}
	free(a);
	free(e);
	return rc;
}

int rq_take_answer(struct req *r, const struct ep_facts *f, char **msg)
{
	if (f->err) {
		*msg = xstrdup(f->msg);
		return f->err;
	}
	if (f->prompt_tokens >= 0)
		r->u_prompt = f->prompt_tokens;
	if (f->completion_tokens >= 0)
		r->u_completion = f->completion_tokens;
	rq_capture_json(r, f->text);
	rq_keep_output(r, f->text);
	/* embeddings, rankings: the answer is the one chunk, when it arrived */
	if (r->cfg->one_piece && r->body_ns != HR_NO_TIME &&
	    record_add_chunk(&r->rec, r->body_ns, &r->chunk_cap) < 0) {
		*msg = xstrdup("cannot record the answer's arrival");
		return HR_ERR_MALFORMED_STREAM;
	}
	return HR_ERR_NONE;
}

int rq_media_event(struct req *r, const struct mr_facts *f, struct chunk_info *ci)
{
	memset(ci, 0, sizeof *ci);
	ci->prompt_tokens = f->in_tokens;
	ci->completion_tokens = f->out_tokens;
	ci->reasoning_tokens = -1;
	if (f->err) {
		rq_fail(r, f->err, "%s", f->msg);
		return EV_FAIL;
	}
	ci->content = f->chunk;
	ci->final = f->final;
	rq_take_stream_error(r, f->error);
	return 0;
}

/* A whole 200 body of the other endpoints (j: parsed, or NULL). Returns
 * an HR_ERR_* (message in *msg). */
int rq_ep_answer(struct req *r, json_t *j, const json_error_t *je, char **msg)
{
	struct ep_facts f;
	if (!j) {
		*msg = xasprintf("response body is not JSON: %s", je->text);
		return HR_ERR_MALFORMED_STREAM;
	}
	ep_read_answer(r->cfg->endpoint, j, r->cfg->items, &r->cfg->resp_path, &f);
	return rq_take_answer(r, &f, msg);
}

/* A whole non-streamed 200 body, read by the endpoint's handler. Returns
 * an HR_ERR_* (message in *msg). */
static int parse_body(struct req *r, char **msg)
{
	json_error_t je;
	json_t *j = json_loadb(r->resp.data ? r->resp.data : "", r->resp.len, 0, &je);
	int err = r->cfg->h->answer(r, j, &je, msg);
	json_decref(j);
	return err;
}

void req_complete(struct req *r, CURLcode result, int64_t done_ns)
{
	struct hr_record *rec = &r->rec;
	long code = response_code(r);
	int err = HR_ERR_NONE;
	char *msg = NULL;

	rec->done_ns = done_ns;
	rec->http_status = (int32_t)code;
	if (r->mode == RB_SSE && !r->fail && !r->saw_done && result == CURLE_OK &&
	    sse_finish(&r->sse) == SSE_ERR_OVERSIZE)
		rq_fail(r, HR_ERR_MALFORMED_STREAM, "SSE line or event over bound");

	if (r->fail) {
		err = r->fail;
		msg = r->fail_msg;
		r->fail_msg = NULL;
	} else if (code != 0 && code != 200) {
		err = http_error(code);
		char *body = clean_text(r->err_body, r->err_body_len);
		msg = xasprintf("HTTP %ld%s%s", code, *body ? ": " : "", body);
		free(body);
	} else if (result != CURLE_OK && r->refused[0]) {
		err = HR_ERR_CONNECT;
		msg = xasprintf("address not allowed: %s", r->refused);
	} else if (result != CURLE_OK) {
		err = req_curl_error(result);
		msg = xstrdup(r->errbuf[0] ? r->errbuf : curl_easy_strerror(result));
	} else if (code != 200) {
		err = HR_ERR_HTTP_OTHER;
		msg = xstrdup("no HTTP status");
	} else if (r->cfg->stream) {
		if (rec->n_chunks == 0) {
			err = HR_ERR_NO_CONTENT;
			msg = r->stream_error ? xstrdup(r->stream_error)
			                      : xstrdup("no content-bearing chunk in the stream");
		} else if (r->cfg->h->end_event && !r->saw_done) {
			err = HR_ERR_MALFORMED_STREAM;
			msg = xstrdup("the stream ended before its last event");
		}
	} else {
		err = parse_body(r, &msg);
		if (err == HR_ERR_NONE) { /* (the one chunk of an embeddings or rankings answer) */
			rec->first_output_ns = rec->n_chunks ? rec->chunk_ns[0] : done_ns;
			rec->end_ns = done_ns;
		}
	}
	fill_tokens(r);
	rec->error = (uint8_t)err;
	free(rec->error_msg);
	rec->error_msg = msg ? clean_text(msg, strlen(msg)) : NULL;
	free(msg);
}

void req_cancel(struct req *r, int64_t done_ns, const char *why)
{
	struct hr_record *rec = &r->rec;
	rec->done_ns = done_ns;
	rec->http_status = (int32_t)response_code(r);
	fill_tokens(r);
	rec->error = HR_ERR_CANCELLED;
	free(rec->error_msg);
	rec->error_msg = clean_text(why, strlen(why));
}
