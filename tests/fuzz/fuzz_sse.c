/* fuzz_sse.c - libFuzzer target for the SSE parser (lib/sse.c).
 *
 * Input: byte 0 picks a split position and a callback stop point; the rest
 * is the stream. The stream is parsed whole, split in two at that position
 * and one byte at a time, with roomy and with small bounds, and compared
 * against a slow, obviously correct reference parser. Checked: every way
 * of feeding gives the same callbacks and result; with small bounds the
 * callbacks are a prefix of the unbounded ones (equal when no error); data
 * is NUL-terminated and within the bounds; total data bytes never exceed
 * the input size; a callback stop ends parsing at exactly that event.
 *
 * Build: clang -fsanitize=fuzzer,address -Ilib tests/fuzz/fuzz_sse.c \
 *        lib/sse.c lib/dynbuf.c lib/util.c
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "fuzz.h"
#include "sse.h"

#define BIG (1u << 24)
#define SMALL_LINE 24
#define SMALL_EVENT 40

/* Callback record: 'E' event NUL len data, 'C' len text, 'R' rc. */
struct run {
	struct dynbuf log;
	size_t max_line, max_event;
	size_t events, data_bytes;
	size_t stop_at; /* 0: never stop */
};

static void log_len(struct dynbuf *b, size_t n)
{
	uint64_t v = n;
	REQUIRE(dynbuf_add(b, &v, sizeof(v)) == 0);
}

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
	struct run *r = ud;

	REQUIRE(event != NULL && data != NULL);
	REQUIRE(data[len] == '\0');
	REQUIRE(len <= r->max_event);
	REQUIRE(strlen(event) <= r->max_line);
	r->events++;
	r->data_bytes += len;
	REQUIRE(dynbuf_add(&r->log, "E", 1) == 0);
	REQUIRE(dynbuf_add(&r->log, event, strlen(event) + 1) == 0);
	log_len(&r->log, len);
	REQUIRE(dynbuf_add(&r->log, data, len) == 0);
	if (r->stop_at && r->events == r->stop_at)
		return 9;
	return 0;
}

static void on_comment(void *ud, const char *text, size_t len)
{
	struct run *r = ud;

	REQUIRE(len <= r->max_line);
	REQUIRE(dynbuf_add(&r->log, "C", 1) == 0);
	log_len(&r->log, len);
	REQUIRE(dynbuf_add(&r->log, text, len) == 0);
}

/* mode: 0 whole, 1 split at `at`, 2 one byte at a time. Returns the first
 * nonzero feed result, or that of sse_finish. */
static int parse(struct run *r, const char *in, size_t n, int mode, size_t at, size_t max_line,
                 size_t max_event, size_t stop_at)
{
	struct sse_parser p;
	int rc = 0;

	dynbuf_init(&r->log, BIG);
	r->max_line = max_line;
	r->max_event = max_event;
	r->events = r->data_bytes = 0;
	r->stop_at = stop_at;
	sse_init(&p, max_line, max_event, on_event, on_comment, r);
	if (mode == 0) {
		rc = sse_feed(&p, in, n);
	} else if (mode == 1) {
		rc = sse_feed(&p, in, at);
		if (rc == 0)
			rc = sse_feed(&p, in + at, n - at);
	} else {
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = sse_feed(&p, in + i, 1);
	}
	if (rc == SSE_ERR_OVERSIZE) {
		REQUIRE(sse_feed(&p, "\n\n", 2) == SSE_ERR_OVERSIZE); /* spent */
		REQUIRE(sse_finish(&p) == SSE_ERR_OVERSIZE);
	} else {
		int frc = sse_finish(&p);
		REQUIRE(frc == 0);
		if (rc == 0)
			rc = frc;
	}
	sse_release(&p);
	REQUIRE(dynbuf_add(&r->log, "R", 1) == 0);
	REQUIRE(dynbuf_add(&r->log, &rc, sizeof(rc)) == 0);
	REQUIRE(r->data_bytes <= n);
	return rc;
}

/* ---- reference: the rules of sse.h applied line by line, unbounded ---- */

static void ref_value(const char *s, size_t n, size_t skip, const char **v, size_t *vlen)
{
	*v = s + skip;
	*vlen = n - skip;
	if (*vlen && **v == ' ') {
		(*v)++;
		(*vlen)--;
	}
}

static void ref_parse(const char *in, size_t n, struct run *r)
{
	struct dynbuf data, event;
	int has_data = 0;
	size_t i = 0;

	dynbuf_init(&r->log, BIG);
	dynbuf_init(&data, BIG);
	dynbuf_init(&event, BIG);
	r->max_line = r->max_event = BIG;
	r->events = r->data_bytes = 0;
	r->stop_at = 0;
	if (n >= 3 && memcmp(in, "\xEF\xBB\xBF", 3) == 0)
		i = 3;
	while (i < n) {
		size_t j = i;
		while (j < n && in[j] != '\r' && in[j] != '\n')
			j++;
		const char *s = in + i, *v;
		size_t len = j - i, vlen;
		if (j == n) { /* unterminated final line: only a comment matters */
			if (len && s[0] == ':') {
				ref_value(s, len, 1, &v, &vlen);
				on_comment(r, v, vlen);
			}
			break;
		}
		i = j + 1;
		if (in[j] == '\r' && i < n && in[i] == '\n')
			i++;
		if (len == 0) {
			if (has_data)
				on_event(r, event.len ? event.data : "message",
				         data.data ? data.data : "", data.len);
			dynbuf_reset(&data);
			dynbuf_reset(&event);
			has_data = 0;
			continue;
		}
		if (s[0] == ':') {
			ref_value(s, len, 1, &v, &vlen);
			on_comment(r, v, vlen);
			continue;
		}
		const char *colon = memchr(s, ':', len);
		size_t nlen = colon ? (size_t)(colon - s) : len;
		if (colon)
			ref_value(s, len, nlen + 1, &v, &vlen);
		else {
			v = "";
			vlen = 0;
		}
		if (nlen == 4 && memcmp(s, "data", 4) == 0) {
			if (has_data)
				dynbuf_add(&data, "\n", 1);
			dynbuf_add(&data, v, vlen);
			has_data = 1;
		} else if (nlen == 5 && memcmp(s, "event", 5) == 0) {
			dynbuf_reset(&event);
			dynbuf_add(&event, v, vlen);
		}
	}
	int rc = 0;
	REQUIRE(dynbuf_add(&r->log, "R", 1) == 0);
	REQUIRE(dynbuf_add(&r->log, &rc, sizeof(rc)) == 0);
	dynbuf_release(&data);
	dynbuf_release(&event);
}

static int same_log(const struct run *a, const struct run *b)
{
	return a->log.len == b->log.len && memcmp(a->log.data, b->log.data, a->log.len) == 0;
}

/* a's log, without its result record, is a prefix of b's */
static int prefix_log(const struct run *a, const struct run *b)
{
	size_t n = a->log.len - 1 - sizeof(int);
	return n <= b->log.len && memcmp(a->log.data, b->log.data, n) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run ref, whole, split, bytes, small[3], stop;
	const char *in;
	size_t n, at;
	int rc;

	if (size == 0)
		return 0;
	in = (const char *)data + 1;
	n = size - 1;
	at = data[0] % (n + 1);

	ref_parse(in, n, &ref);

	/* roomy bounds: all three feeding patterns match the reference */
	rc = parse(&whole, in, n, 0, 0, BIG, BIG, 0);
	REQUIRE(rc == 0);
	REQUIRE(same_log(&whole, &ref));
	parse(&split, in, n, 1, at, BIG, BIG, 0);
	REQUIRE(same_log(&split, &whole));
	parse(&bytes, in, n, 2, 0, BIG, BIG, 0);
	REQUIRE(same_log(&bytes, &whole));

	/* small bounds: the same for every feeding pattern, a prefix of the
	 * unbounded run, and equal to it when no bound was hit */
	for (int mode = 0; mode < 3; mode++) {
		rc = parse(&small[mode], in, n, mode, at, SMALL_LINE, SMALL_EVENT, 0);
		REQUIRE(rc == 0 || rc == SSE_ERR_OVERSIZE);
		REQUIRE(same_log(&small[mode], &small[0]));
		REQUIRE(prefix_log(&small[mode], &whole));
		if (rc == 0)
			REQUIRE(same_log(&small[mode], &whole));
	}

	/* a callback stop ends parsing at that event */
	size_t stop_at = (size_t)(data[0] >> 5) + 1;
	rc = parse(&stop, in, n, 1, at, BIG, BIG, stop_at);
	if (whole.events >= stop_at) {
		REQUIRE(rc == 9);
		REQUIRE(stop.events == stop_at);
	} else {
		REQUIRE(rc == 0);
		REQUIRE(same_log(&stop, &whole));
	}
	REQUIRE(prefix_log(&stop, &whole));

	dynbuf_release(&ref.log);
	dynbuf_release(&whole.log);
	dynbuf_release(&split.log);
	dynbuf_release(&bytes.log);
	for (int mode = 0; mode < 3; mode++)
		dynbuf_release(&small[mode].log);
	dynbuf_release(&stop.log);
	return 0;
}
