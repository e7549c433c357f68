/* http.c - HTTP/1.1 for headroom-mock: parsing one request at the front of
 * a connection's input, and framing responses into its output.
 *
 * The parser is a pure function of the bytes received so far, so it is
 * safe with pipelining (a request ends exactly at its Content-Length, the
 * next one starts right after) and with any split of the input into
 * reads. Every input is treated as hostile: anything that does not parse
 * is a 400 (431 for a header section over MOCK_MAX_HEADER_BYTES, 413 for
 * a request over HR_MOCK_MAX_REQUEST_BYTES, 411 for a chunked request
 * body, 505 for an HTTP version other than 1.0/1.1) and the connection is
 * closed after the error, since its framing can no longer be trusted.
 */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "mock.h"
#include "util.h"

#define MAX_METHOD_LEN 16

void out_add(struct conn *c, const void *p, size_t n)
{
	if (dynbuf_add(&c->out, p, n) < 0)
		c->overflow = true;
}

void out_str(struct conn *c, const char *s)
{
	out_add(c, s, strlen(s));
}

void out_printf(struct conn *c, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		c->overflow = true;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		out_add(c, small, (size_t)n);
		return;
	}
	char *big = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	out_add(c, big, (size_t)n);
	free(big);
}

const char *http_reason(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 411:
		return "Length Required";
	case 413:
		return "Content Too Large";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Unknown";
	}
}

void http_respond(struct conn *c, int status, const char *ctype, const char *body, size_t len,
                  const char *extra)
{
	out_printf(c,
	           "HTTP/1.1 %d %s\r\nServer: " MOCK_SERVER "\r\nContent-Type: %s\r\n"
	           "Content-Length: %zu\r\n%s%s\r\n",
	           status, http_reason(status), ctype, len, extra ? extra : "",
	           c->close_after ? "Connection: close\r\n" : "");
	if (!c->head)
		out_add(c, body, len);
}

void http_error(struct conn *c, int status, const char *msg, const char *extra)
{
	http_error_type(c, status, "invalid_request_error", msg, extra);
}

void http_error_type(struct conn *c, int status, const char *type, const char *msg,
                     const char *extra)
{
	/* The message may quote the input: keep it printable ASCII so it is
	 * valid UTF-8 for the encoder and harmless in a log. */
	char clean[HR_MAX_ERROR_MSG];
	size_t n = 0;
	for (; msg[n] && n + 1 < sizeof(clean); n++) {
		unsigned char ch = (unsigned char)msg[n];
		clean[n] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
	}
	clean[n] = '\0';
	json_t *o =
	    json_pack("{s:{s:s,s:s,s:i}}", "error", "message", clean, "type", type, "code", status);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (s) {
		http_respond(c, status, "application/json", s, strlen(s), extra);
		free(s);
	} else {
		static const char fallback[] = "{\"error\":{\"message\":\"error\","
		                               "\"type\":\"invalid_request_error\",\"code\":400}}";
		http_respond(c, status, "application/json", fallback, sizeof(fallback) - 1, extra);
	}
}

void http_body_chunk(struct conn *c, bool chunked, const char *p, size_t n)
{
	if (!n)
		return; /* a zero-size chunk would end the body */
	if (chunked)
		out_printf(c, "%zx\r\n", n);
	out_add(c, p, n);
	if (chunked)
		out_add(c, "\r\n", 2);
}

bool http_path_is(const struct http_request *req, const char *path)
{
	size_t n = strlen(path);
	return req->path_len == n && memcmp(req->path, path, n) == 0;
}

bool http_method_is(const struct http_request *req, const char *method)
{
	size_t n = strlen(method);
	return req->method_len == n && memcmp(req->method, method, n) == 0;
}

/* RFC 9110 tchar */
static bool is_tchar(unsigned char ch)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
		return true;
	return ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static bool ieq(const char *a, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(a, lit, n) == 0;
}

static bool is_ows(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* Does the comma-separated list v[0..n) contain token (case-insensitive)? */
static bool list_has(const char *v, size_t n, const char *token)
{
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && v[j] != ',')
			j++;
		size_t a = i, b = j;
		while (a < b && is_ows(v[a]))
			a++;
		while (b > a && is_ows(v[b - 1]))
			b--;
		if (ieq(v + a, b - a, token))
			return true;
		i = j + 1;
	}
	return false;
}

static enum http_parse_result bad(int *status, const char **msg, int st, const char *m)
{
	*status = st;
	*msg = m;
	return HTTP_BAD;
}

/* Reject early what cannot become a request line, so that a client
 * speaking something else (TLS, garbage) is answered at once. */
static bool plausible_start(const char *buf, size_t len)
{
	for (size_t i = 0; i < len && i <= MAX_METHOD_LEN; i++) {
		if (buf[i] == ' ')
			return i > 0;
		if (buf[i] < 'A' || buf[i] > 'Z')
			return false;
	}
	return len <= MAX_METHOD_LEN;
}

static enum http_parse_result parse_request_line(const char *p, const char *eol,
                                                 struct http_request *req, int *status,
                                                 const char **msg)
{
	const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
	if (!sp1 || sp1 == p || sp1 - p > MAX_METHOD_LEN)
		return bad(status, msg, 400, "malformed request line");
	for (const char *q = p; q < sp1; q++)
		if (*q < 'A' || *q > 'Z')
			return bad(status, msg, 400, "malformed request method");
	req->method = p;
	req->method_len = (size_t)(sp1 - p);
	const char *t = sp1 + 1;
	const char *sp2 = memchr(t, ' ', (size_t)(eol - t));
	if (!sp2 || sp2 == t)
		return bad(status, msg, 400, "malformed request line");
	if (*t != '/')
		return bad(status, msg, 400, "request target must be an absolute path");
	for (const char *q = t; q < sp2; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f)
			return bad(status, msg, 400, "malformed request target");
	req->path = t;
	req->path_len = (size_t)(sp2 - t);
	for (size_t i = 0; i < req->path_len; i++) {
		if (t[i] == '?' || t[i] == '#') {
			req->path_len = i;
			break;
		}
	}
	const char *v = sp2 + 1;
	size_t vlen = (size_t)(eol - v);
	if (vlen == 8 && memcmp(v, "HTTP/1.1", 8) == 0) {
		req->http10 = false;
	} else if (vlen == 8 && memcmp(v, "HTTP/1.0", 8) == 0) {
		req->http10 = true;
	} else if (vlen == 8 && memcmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' &&
	           v[6] == '.' && v[7] >= '0' && v[7] <= '9') {
		return bad(status, msg, 505, "only HTTP/1.0 and HTTP/1.1 are supported");
	} else {
		return bad(status, msg, 400, "malformed HTTP version");
	}
	return HTTP_OK;
}

enum http_parse_result http_parse(const char *buf, size_t len, struct http_request *req,
                                  int *status, const char **msg)
{
	memset(req, 0, sizeof(*req));
	/* RFC 9112 2.2: ignore empty lines before a request line. */
	size_t skip = 0;
	while (len - skip >= 2 && buf[skip] == '\r' && buf[skip + 1] == '\n') {
		skip += 2;
		if (skip > 8)
			return bad(status, msg, 400, "empty lines before the request line");
	}
	const char *start = buf + skip;
	size_t avail = len - skip;
	const char *end = memmem(start, avail, "\r\n\r\n", 4);
	if (!end) {
		if (avail >= MOCK_MAX_HEADER_BYTES)
			return bad(status, msg, 431, "request header section too large");
		if (avail == 1 && start[0] == '\r')
			return HTTP_NEED_MORE; /* perhaps an empty line, split after its CR */
		if (!plausible_start(start, avail))
			return bad(status, msg, 400, "malformed request line");
		if (memchr(start, '\0', avail))
			return bad(status, msg, 400, "NUL byte in request header");
		return HTTP_NEED_MORE;
	}
	size_t hlen = (size_t)(end - start) + 4;
	if (hlen > MOCK_MAX_HEADER_BYTES)
		return bad(status, msg, 431, "request header section too large");

	const char *p = start;
	const char *eol = memmem(p, hlen, "\r\n", 2); /* found: end is one */
	enum http_parse_result r = parse_request_line(p, eol, req, status, msg);
	if (r != HTTP_OK)
		return r;

	bool have_len = false, conn_close = false, conn_keep = false;
	unsigned long long clen = 0;
	unsigned nheaders = 0;
	p = eol + 2;
	while (p < end + 2) {
		eol = memmem(p, (size_t)(end + 2 - p), "\r\n", 2);
		if (eol == p)
			break; /* not reached: end + 2 starts the empty line */
		if (++nheaders > MOCK_MAX_HEADERS)
			return bad(status, msg, 431, "too many request headers");
		if (is_ows(*p))
			return bad(status, msg, 400, "obsolete header line folding");
		const char *colon = p;
		while (colon < eol && is_tchar((unsigned char)*colon))
			colon++;
		if (colon == p || colon == eol || *colon != ':')
			return bad(status, msg, 400, "malformed header field");
		const char *name = p;
		size_t nlen = (size_t)(colon - p);
		const char *v = colon + 1, *ve = eol;
		for (const char *q = v; q < ve; q++) {
			unsigned char ch = (unsigned char)*q;
			if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				return bad(status, msg, 400, "control character in header value");
		}
		while (v < ve && is_ows(*v))
			v++;
		while (ve > v && is_ows(ve[-1]))
			ve--;
		size_t vlen = (size_t)(ve - v);

		if (ieq(name, nlen, "content-length")) {
			if (have_len)
				return bad(status, msg, 400, "repeated Content-Length");
			if (vlen == 0 || vlen > 18)
				return bad(status, msg, 400, "malformed Content-Length");
			for (size_t i = 0; i < vlen; i++) {
				if (v[i] < '0' || v[i] > '9')
					return bad(status, msg, 400, "malformed Content-Length");
				clen = clen * 10 + (unsigned)(v[i] - '0');
			}
			have_len = true;
		} else if (ieq(name, nlen, "transfer-encoding")) {
			return bad(status, msg, 411,
			           "Transfer-Encoding request bodies are not supported; "
			           "send Content-Length");
		} else if (ieq(name, nlen, "connection")) {
			conn_close |= list_has(v, vlen, "close");
			conn_keep |= list_has(v, vlen, "keep-alive");
		} else if (ieq(name, nlen, "authorization")) {
			req->auth = v;
			req->auth_len = vlen;
		} else if (ieq(name, nlen, "x-api-key")) {
			req->x_api_key = v;
			req->x_api_key_len = vlen;
		} else if (ieq(name, nlen, "content-type")) {
			req->content_type = v;
			req->content_type_len = vlen;
		} else if (ieq(name, nlen, "expect")) {
			if (ieq(v, vlen, "100-continue"))
				req->expect_continue = true;
		}
		p = eol + 2;
	}

	if (clen > HR_MOCK_MAX_REQUEST_BYTES || hlen + clen > HR_MOCK_MAX_REQUEST_BYTES)
		return bad(status, msg, 413, "request too large");
	req->keep_alive = req->http10 ? (conn_keep && !conn_close) : !conn_close;
	req->body = start + hlen;
	req->body_len = (size_t)clen;
	req->total_len = skip + hlen + (size_t)clen;
	if (avail < hlen + clen)
		return HTTP_NEED_BODY;
	return HTTP_OK;
}
