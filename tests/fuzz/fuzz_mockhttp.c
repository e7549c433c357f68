/* fuzz_mockhttp.c - libFuzzer target for headroom-mock's HTTP/1.1 request
 * parser (http_parse in mock/http.c).
 *
 * Input: byte 0 picks a split position; the rest is what a client sent on
 * one connection, parsed as the mock does: request after pipelined
 * request, each from the front of what is left (from a private buffer of
 * exactly that size, as is the prefix at the split position, so that
 * overreads are caught). Checked, for each result:
 *  - HTTP_OK: the request lies inside the input (total_len), its method is
 *    1 to 16 capital letters, its path starts with '/' and holds no
 *    space, control, non-ASCII, '?' or '#' byte, its body ends exactly at
 *    total_len, an Authorization value lies inside the header section;
 *  - HTTP_NEED_BODY: the same fields, and total_len beyond the input;
 *  - HTTP_BAD: a status of 400, 411, 413, 431 or 505 and a message;
 *  - the parser is a pure function of the bytes so far: a prefix of the
 *    input (the split position, and every prefix of a short input) never
 *    gets an answer the whole input contradicts - a request is OK in both
 *    with the same fields, or the prefix needs more; a prefix refused is
 *    refused whole.
 * Any violation aborts.
 *
 * Build: see tests/CMakeLists.txt (mock/http.c is compiled in).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hrlimits.h"
#include "mock.h"

struct result {
	enum http_parse_result r;
	int status;
	struct http_request req;
	/* the request's parts as offsets into the input (the buffers differ) */
	size_t method, path, body, auth;
};

static bool inside(const char *p, size_t n, const char *lo, const char *hi)
{
	return p >= lo && p + n <= hi;
}

/* copy: parse a private copy of exactly len bytes (else in place) */
static struct result parse(const char *in, size_t len, bool copy)
{
	struct result res;
	const char *msg = NULL;
	char *buf = copy ? malloc(len ? len : 1) : (char *)in;
	REQUIRE(buf != NULL);
	if (copy && len)
		memcpy(buf, in, len);
	res.status = 0;
	res.r = http_parse(buf, len, &res.req, &res.status, &msg);
	const struct http_request *q = &res.req;
	res.method = res.path = res.body = res.auth = 0;
	switch (res.r) {
	case HTTP_NEED_MORE:
		break;
	case HTTP_OK:
	case HTTP_NEED_BODY:
		REQUIRE(q->total_len >= q->body_len);
		if (res.r == HTTP_OK)
			REQUIRE(q->total_len <= len);
		else
			REQUIRE(q->total_len > len);
		REQUIRE(q->body_len <= HR_MOCK_MAX_REQUEST_BYTES);
		REQUIRE(q->total_len <= HR_MOCK_MAX_REQUEST_BYTES + 8);
		REQUIRE(q->body + q->body_len == buf + q->total_len);
		REQUIRE(inside(q->method, q->method_len, buf, q->body));
		REQUIRE(q->method_len >= 1 && q->method_len <= 16);
		for (size_t i = 0; i < q->method_len; i++)
			REQUIRE(q->method[i] >= 'A' && q->method[i] <= 'Z');
		REQUIRE(inside(q->path, q->path_len, buf, q->body));
		REQUIRE(q->path_len >= 1 && q->path[0] == '/');
		for (size_t i = 0; i < q->path_len; i++) {
			unsigned char ch = (unsigned char)q->path[i];
			REQUIRE(ch > 0x20 && ch < 0x7f && ch != '?' && ch != '#');
		}
		if (q->auth)
			REQUIRE(inside(q->auth, q->auth_len, buf, q->body));
		res.method = (size_t)(q->method - buf);
		res.path = (size_t)(q->path - buf);
		res.body = (size_t)(q->body - buf);
		res.auth = q->auth ? (size_t)(q->auth - buf) : SIZE_MAX;
		break;
	case HTTP_BAD:
		REQUIRE(res.status == 400 || res.status == 411 || res.status == 413 ||
		        res.status == 431 || res.status == 505);
		REQUIRE(msg != NULL && msg[0] != '\0');
		break;
	default:
		REQUIRE(!"a known result");
	}
	if (copy)
		free(buf);
	/* the pointers may dangle now: only lengths, flags and offsets are compared */
	return res;
}

static bool same_request(const struct result *a, const struct result *b)
{
	const struct http_request *x = &a->req, *y = &b->req;
	return a->method == b->method && x->method_len == y->method_len && a->path == b->path &&
	       x->path_len == y->path_len && a->body == b->body && x->body_len == y->body_len &&
	       x->total_len == y->total_len && x->http10 == y->http10 &&
	       x->keep_alive == y->keep_alive && x->expect_continue == y->expect_continue &&
	       a->auth == b->auth && x->auth_len == y->auth_len;
}

/* What parsing the prefix in[0..k) says must not contradict the whole. */
static void check_prefix(const char *in, size_t k, const struct result *whole, bool copy)
{
	struct result p = parse(in, k, copy);
	switch (p.r) {
	case HTTP_NEED_MORE:
		/* the whole has either more of the header section or an answer */
		break;
	case HTTP_NEED_BODY:
		REQUIRE(whole->r == HTTP_NEED_BODY || whole->r == HTTP_OK);
		/* the header section was complete: the whole has the same request */
		REQUIRE(p.req.total_len == whole->req.total_len);
		REQUIRE(same_request(&p, whole));
		break;
	case HTTP_OK:
		REQUIRE(whole->r == HTTP_OK);
		REQUIRE(same_request(&p, whole));
		break;
	case HTTP_BAD:
		REQUIRE(whole->r == HTTP_BAD);
		break;
	}
	if (whole->r == HTTP_OK && k < whole->req.total_len)
		REQUIRE(p.r == HTTP_NEED_MORE || p.r == HTTP_NEED_BODY);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *in = (const char *)data + 1;
	size_t n = size - 1;
	size_t off = 0;
	for (int k = 0; k < 64 && off <= n; k++) {
		const char *s = in + off;
		size_t len = n - off;
		struct result whole = parse(s, len, true);
		check_prefix(s, data[0] % (len + 1), &whole, true);
		if (len <= 200 && k < 4)
			for (size_t i = 0; i < len; i++)
				check_prefix(s, i, &whole, false);
		if (whole.r != HTTP_OK)
			break;
		REQUIRE(whole.req.total_len > 0); /* the next request starts further on */
		off += whole.req.total_len;
	}
	return 0;
}
