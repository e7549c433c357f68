/* fuzz_h1parse.c - libFuzzer target for the native transport's response
 * parser (worker/h1parse.c).
 *
 * Input: byte 0 picks a split position; the rest is what a server sent on
 * a connection. It is parsed fed whole, split in two at that position
 * and one byte at a time, each feed from a private buffer of exactly its
 * size, then the connection is closed (h1_eof). Checked: every way of
 * feeding gives the same result, status, body, end of the response and
 * keep-alive verdict; the head is reported at most once, before any body
 * byte, with a status from 200 to 999; every body piece is non-empty and
 * lies inside the buffer of its feed; the head never grows past
 * HR_MAX_RESPONSE_HEAD; a spent parser answers its error again. Any
 * violation aborts.
 *
 * Build: make fuzz (HR_FUZZ_SRC_h1parse in tests/CMakeLists.txt).
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "fuzz.h"
#include "h1parse.h"
#include "hrlimits.h"

struct sink {
	struct dynbuf body;
	const char *lo, *hi;
	int heads, status;
};

static int on_head(void *ud, int status)
{
	struct sink *s = ud;
	REQUIRE(s->heads == 0 && s->body.len == 0);
	REQUIRE(status >= 200 && status <= 999);
	s->heads++;
	s->status = status;
	return 0;
}

static int on_body(void *ud, const char *p, size_t n)
{
	struct sink *s = ud;
	REQUIRE(s->heads == 1);
	REQUIRE(n > 0 && p >= s->lo && p + n <= s->hi);
	REQUIRE(dynbuf_add(&s->body, p, n) == 0);
	return 0;
}

struct outcome {
	int rc, eof;
	size_t end; /* where the response ended, or SIZE_MAX */
	bool keep;
};

static struct outcome parse(const char *in, size_t len, size_t step, struct sink *s)
{
	struct h1_parser p;
	struct outcome o = {H1_MORE, H1_MORE, SIZE_MAX, false};
	h1_init(&p);
	size_t at = 0;
	while (at < len) {
		size_t n = len - at < step ? len - at : step;
		char *buf = malloc(n);
		REQUIRE(buf != NULL);
		memcpy(buf, in + at, n);
		s->lo = buf;
		s->hi = buf + n;
		o.rc = h1_feed(&p, buf, n, on_head, on_body, s);
		free(buf);
		REQUIRE(p.head_bytes <= HR_MAX_RESPONSE_HEAD);
		if (o.rc == H1_DONE) {
			REQUIRE(p.used <= n);
			o.end = at + p.used;
			o.keep = p.keep_alive;
			break;
		}
		if (o.rc < 0) {
			REQUIRE(h1_feed(&p, "x", 1, on_head, on_body, s) == o.rc);
			break;
		}
		at += n;
	}
	o.eof = h1_eof(&p);
	if (o.rc < 0)
		REQUIRE(o.eof == o.rc);
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 20))
		return 0;
	const char *in = (const char *)data + 1;
	size_t len = size - 1;
	size_t cut = len ? data[0] % (len + 1) : 0;
	struct sink a = {0}, b = {0}, c = {0};
	dynbuf_init(&a.body, 1u << 21);
	dynbuf_init(&b.body, 1u << 21);
	dynbuf_init(&c.body, 1u << 21);
	struct outcome whole = parse(in, len, len ? len : 1, &a);
	struct outcome ones = parse(in, len, 1, &c);
	struct outcome two;
	{ /* split in two at cut */
		struct h1_parser p;
		h1_init(&p);
		two = (struct outcome){H1_MORE, H1_MORE, SIZE_MAX, false};
		size_t parts[2][2] = {{0, cut}, {cut, len}};
		for (int i = 0; i < 2; i++) {
			size_t n = parts[i][1] - parts[i][0];
			if (!n)
				continue;
			char *buf = malloc(n);
			REQUIRE(buf != NULL);
			memcpy(buf, in + parts[i][0], n);
			b.lo = buf;
			b.hi = buf + n;
			two.rc = h1_feed(&p, buf, n, on_head, on_body, &b);
			free(buf);
			if (two.rc == H1_DONE) {
				two.end = parts[i][0] + p.used;
				two.keep = p.keep_alive;
				break;
			}
			if (two.rc < 0)
				break;
		}
		two.eof = h1_eof(&p);
	}
	struct outcome *o[2] = {&two, &ones};
	struct sink *s[2] = {&b, &c};
	for (int i = 0; i < 2; i++) {
		REQUIRE(o[i]->rc == whole.rc);
		REQUIRE(o[i]->eof == whole.eof);
		REQUIRE(o[i]->end == whole.end);
		REQUIRE(o[i]->keep == whole.keep);
		REQUIRE(s[i]->heads == a.heads && s[i]->status == a.status);
		/* an error stops a piece short at a different place per split;
		 * what was handed out is always a prefix of the whole body */
		if (whole.rc >= 0)
			REQUIRE(s[i]->body.len == a.body.len);
	}
	dynbuf_release(&a.body);
	dynbuf_release(&b.body);
	dynbuf_release(&c.body);
	return 0;
}
