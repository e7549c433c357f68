/* fuzz_chunked.c - libFuzzer target for the chunked transfer decoder
 * (lib/chunked.c).
 *
 * Input: byte 0 picks a split position and a callback stop point; the rest
 * is a raw response body. It is decoded whole and split in two at that
 * position, each feed from a private buffer of exactly its size, and one
 * byte at a time, and compared with a slow reference that applies the
 * rules of chunked.h byte by byte. Checked: every way of feeding gives the
 * reference's data (concatenated), result (0 or CHUNKED_BAD) and end
 * (chunked_done); every piece handed out is non-empty and lies inside the
 * buffer of its feed; after CHUNKED_BAD every feed answers CHUNKED_BAD,
 * and after the end every feed answers 0 and hands out nothing; a
 * callback's nonzero answer is returned at once, with exactly the pieces
 * up to it delivered. Any violation aborts.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -Ilib \
 *        tests/fuzz/fuzz_chunked.c lib/chunked.c lib/dynbuf.c lib/util.c
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunked.h"
#include "dynbuf.h"
#include "fuzz.h"

#define BIG ((size_t)1 << 24)

struct sink {
	struct dynbuf data;
	const char *lo, *hi; /* the buffer of the feed in progress */
	size_t pieces;
	size_t stop_at; /* 0: never */
};

static int on_data(void *ud, const char *p, size_t n)
{
	struct sink *s = ud;
	REQUIRE(n > 0);
	REQUIRE(p >= s->lo && p + n <= s->hi);
	REQUIRE(dynbuf_add(&s->data, p, n) == 0);
	s->pieces++;
	if (s->stop_at && s->pieces == s->stop_at)
		return 7;
	return 0;
}

/* One feed from a private copy of exactly n bytes. */
static int feed(struct chunked *c, struct sink *s, const char *in, size_t n)
{
	char *buf = malloc(n ? n : 1);
	REQUIRE(buf != NULL);
	if (n)
		memcpy(buf, in, n);
	s->lo = buf;
	s->hi = buf + n;
	int rc = chunked_feed(c, buf, n, on_data, s);
	free(buf);
	return rc;
}

/* One feed of in[0..n) in place (one-byte feeds: a copy each is slow). */
static int feed_here(struct chunked *c, struct sink *s, const char *in, size_t n)
{
	s->lo = in;
	s->hi = in + n;
	return chunked_feed(c, in, n, on_data, s);
}

/* ---- reference: the rules of chunked.h, one byte at a time ---- */

enum { R_SIZE, R_EXT, R_DATA, R_POST, R_END, R_BAD };

static int ref_decode(const char *in, size_t n, struct dynbuf *out, bool *done)
{
	int st = R_SIZE, digits = 0;
	uint64_t left = 0;
	for (size_t i = 0; i < n && st != R_END && st != R_BAD; i++) {
		unsigned char ch = (unsigned char)in[i];
		int v = ch >= '0' && ch <= '9'   ? ch - '0'
		        : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
		        : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
		                                 : -1;
		switch (st) {
		case R_SIZE:
			if (v >= 0) {
				if (digits == 16) {
					st = R_BAD;
					break;
				}
				left = left * 16 + (uint64_t)v;
				digits++;
				break;
			}
			if (digits == 0) {
				st = R_BAD;
				break;
			}
			st = R_EXT; /* anything up to LF, this byte included */
			            /* fall through */
		case R_EXT:
			if (ch == '\n')
				st = left ? R_DATA : R_END;
			break;
		case R_DATA:
			REQUIRE(dynbuf_add(out, &in[i], 1) == 0);
			if (--left == 0)
				st = R_POST;
			break;
		case R_POST:
			if (ch == '\n') {
				st = R_SIZE;
				digits = 0;
				left = 0;
			} else if (ch != '\r') {
				st = R_BAD;
			}
			break;
		}
	}
	*done = st == R_END;
	return st == R_BAD ? CHUNKED_BAD : 0;
}

/* mode 0: whole, 1: split at `at`, 2: one byte at a time. */
static int decode(const char *in, size_t n, int mode, size_t at, size_t stop_at, struct sink *s,
                  struct chunked *c)
{
	int rc = 0;
	dynbuf_init(&s->data, BIG);
	s->pieces = 0;
	s->stop_at = stop_at;
	chunked_init(c);
	if (mode == 0) {
		rc = feed(c, s, in, n);
	} else if (mode == 1) {
		rc = feed(c, s, in, at);
		if (rc == 0)
			rc = feed(c, s, in + at, n - at);
	} else {
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = feed_here(c, s, in + i, 1);
	}
	return rc;
}

static bool same_data(const struct sink *a, const struct dynbuf *b)
{
	return a->data.len == b->len && (b->len == 0 || memcmp(a->data.data, b->data, b->len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *in = (const char *)data + 1;
	size_t n = size - 1;
	size_t at = data[0] % (n + 1);

	struct dynbuf ref;
	bool ref_done;
	dynbuf_init(&ref, BIG);
	int ref_rc = ref_decode(in, n, &ref, &ref_done);

	for (int mode = 0; mode < 3; mode++) {
		struct sink s;
		struct chunked c;
		int rc = decode(in, n, mode, at, 0, &s, &c);
		if (rc != ref_rc || !same_data(&s, &ref) || chunked_done(&c) != ref_done) {
			fprintf(
			    stderr,
			    "mode %d: rc %d (reference %d), %zu data bytes (%zu), done %d (%d)\n",
			    mode, rc, ref_rc, s.data.len, ref.len, chunked_done(&c), ref_done);
			REQUIRE(!"the decoder agrees with the reference");
		}
		/* a spent decoder stays spent; an ended one ignores what follows */
		size_t before = s.data.len;
		if (rc == CHUNKED_BAD) {
			REQUIRE(feed(&c, &s, "0\r\n\r\n", 5) == CHUNKED_BAD);
			REQUIRE(!chunked_done(&c));
		} else if (ref_done) {
			REQUIRE(feed(&c, &s, "5\r\nhello\r\n", 10) == 0);
			REQUIRE(chunked_done(&c));
		}
		REQUIRE(s.data.len == before);
		dynbuf_release(&s.data);
	}

	/* a callback's stop is returned at once: the pieces up to it are a
	 * prefix of the data */
	struct sink s;
	struct chunked c;
	size_t stop_at = (size_t)(data[0] >> 5) + 1;
	int rc = decode(in, n, 1, at, stop_at, &s, &c);
	REQUIRE(rc == 0 || rc == 7 || rc == CHUNKED_BAD);
	if (rc == 7)
		REQUIRE(s.pieces == stop_at);
	else
		REQUIRE(s.pieces < stop_at);
	REQUIRE(s.data.len <= ref.len &&
	        (s.data.len == 0 || memcmp(s.data.data, ref.data, s.data.len) == 0));
	dynbuf_release(&s.data);
	dynbuf_release(&ref);
	return 0;
}
