/* test_chunked.c - the chunked transfer decoder (lib/chunked.c): bodies fed
 * whole, at every split and byte by byte; extensions, trailers, upper-case
 * hex, what follows the last chunk; framing errors; stopping. */
#include <stdlib.h>
#include <string.h>

#include "chunked.h"
#include "dynbuf.h"
#include "rng.h"
#include "tap.h"

struct out {
	struct dynbuf data;
	int pieces;
	int stop_after; /* the n-th piece returns 7 (0: never) */
};

static int on_data(void *ud, const char *p, size_t n)
{
	struct out *o = ud;
	o->pieces++;
	dynbuf_add(&o->data, p, n);
	return o->stop_after && o->pieces == o->stop_after ? 7 : 0;
}

/* Feeds in[0..len) cut at the given points; returns the first nonzero
 * feed result (or 0), the decoded bytes in *o. */
static int feed_cuts(const char *in, size_t len, const size_t *cuts, size_t ncuts, struct out *o,
                     struct chunked *c)
{
	size_t at = 0;
	chunked_init(c);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t to = i < ncuts ? cuts[i] : len;
		int rc = chunked_feed(c, in + at, to - at, on_data, o);
		if (rc)
			return rc;
		at = to;
	}
	return 0;
}

/* Decodes in every way (whole, each single split, byte by byte) and checks
 * the result, the decoded bytes and whether the end was seen. */
static void check(const char *in, int want_rc, const char *want, bool want_done)
{
	size_t len = strlen(in);
	int bad = 0;
	for (size_t split = 0; split <= len + 1; split++) {
		struct out o = {.pieces = 0};
		struct chunked c;
		dynbuf_init(&o.data, 1 << 20);
		int rc;
		if (split <= len) {
			rc = feed_cuts(in, len, &split, 1, &o, &c);
		} else { /* byte by byte */
			size_t *cuts = malloc((len + 1) * sizeof *cuts);
			for (size_t i = 0; i < len; i++)
				cuts[i] = i;
			rc = feed_cuts(in, len, cuts, len, &o, &c);
			free(cuts);
		}
		const char *got = o.data.data ? o.data.data : "";
		if ((rc != want_rc || strcmp(got, want) != 0 || chunked_done(&c) != want_done) &&
		    bad++ == 0) {
			CHECK_EQ_INT(rc, want_rc);
			CHECK_STR(got, want);
			CHECK_EQ_INT(chunked_done(&c), want_done);
		}
		dynbuf_release(&o.data);
	}
	CHECK_EQ_INT(bad, 0);
}

static void test_framing(void)
{
	check("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 0, "hello world", true);
	check("5\nhello\n0\n\n", 0, "hello", true);                       /* bare LFs */
	check("a\r\n0123456789\r\nA\r\nabcdefghij\r\n0\r\n\r\n", 0, "0123456789abcdefghij", true);
	check("005;name=value;x\r\nhello\r\n0;last\r\n\r\n", 0, "hello", true); /* extensions */
	check("3 \r\nabc\r\n0\r\n\r\n", 0, "abc", true);                  /* space after the size */
	check("3\r\nabc\r\r\n0\r\n\r\n", 0, "abc", true);                  /* CRs before the LF */
	check("3\r\nabc\r\n0\r\nTrailer: x\r\nMore: y\r\n\r\n", 0, "abc", true);
	check("3\r\nabc\r\n0\r\n\r\nwhatever follows", 0, "abc", true);
	check("3\r\na\nc\r\n0\r\n\r\n", 0, "a\nc", true);                 /* data is data */
	check("3\r\nab", 0, "ab", false);                                   /* not yet */
	check("fffffffffffffff\r\nxy", 0, "xy", false);                     /* 15 digits */
	check("", 0, "", false);
}

static void test_errors(void)
{
	check("x\r\n", CHUNKED_BAD, "", false);
	check("\r\n5\r\nhello\r\n", CHUNKED_BAD, "", false);
	check("3\r\nabcX\r\n", CHUNKED_BAD, "abc", false);
	check("3\r\nabc\r\n;\r\n", CHUNKED_BAD, "abc", false);
	check("10000000000000000\r\n", CHUNKED_BAD, "", false); /* 17 digits */
	/* spent: every later feed says so */
	struct chunked c;
	struct out o = {.pieces = 0};
	dynbuf_init(&o.data, 1024);
	chunked_init(&c);
	CHECK_EQ_INT(chunked_feed(&c, "zz", 2, on_data, &o), CHUNKED_BAD);
	CHECK_EQ_INT(chunked_feed(&c, "1\r\na\r\n", 6, on_data, &o), CHUNKED_BAD);
	CHECK_EQ_INT(chunked_feed(&c, "", 0, on_data, &o), CHUNKED_BAD);
	CHECK_EQ_INT(o.pieces, 0);
	dynbuf_release(&o.data);
}

static void test_stop(void)
{
	struct chunked c;
	struct out o = {.stop_after = 2};
	dynbuf_init(&o.data, 1024);
	chunked_init(&c);
	const char *in = "1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n\r\n";
	CHECK_EQ_INT(chunked_feed(&c, in, strlen(in), on_data, &o), 7);
	CHECK_EQ_INT(o.pieces, 2);
	CHECK_STR(o.data.data, "ab");
	dynbuf_release(&o.data);
}

/* Random bodies of random chunk sizes, fed in random pieces. */
static void test_random(void)
{
	int bad = 0;
	for (uint64_t it = 0; it < 300; it++) {
		struct dynbuf body, plain;
		dynbuf_init(&body, 1 << 22);
		dynbuf_init(&plain, 1 << 22);
		int nchunks = (int)(rng_hash(3, 1, it) % 20);
		for (int k = 0; k < nchunks; k++) {
			size_t n = 1 + rng_hash(3, 2, it * 64 + (uint64_t)k) % 3000;
			dynbuf_printf(&body, (k & 1) ? "%zX\r\n" : "%zx;ext=%d\r\n", n, k);
			for (size_t i = 0; i < n; i++) {
				char ch = (char)('a' + (rng_hash(3, 3, it * 100000 + i) % 26));
				dynbuf_add(&body, &ch, 1);
				dynbuf_add(&plain, &ch, 1);
			}
			dynbuf_addstr(&body, "\r\n");
		}
		dynbuf_addstr(&body, "0\r\n\r\n");
		size_t cuts[64], nc = 0, at = 0;
		while (nc < 64) {
			at += 1 + rng_hash(3, 4, it * 64 + nc) % 700;
			if (at >= body.len)
				break;
			cuts[nc++] = at;
		}
		struct out o = {.pieces = 0};
		struct chunked c;
		dynbuf_init(&o.data, 1 << 22);
		int rc = feed_cuts(body.data, body.len, cuts, nc, &o, &c);
		if ((rc != 0 || o.data.len != plain.len ||
		     (plain.len && memcmp(o.data.data, plain.data, plain.len) != 0) ||
		     !chunked_done(&c)) &&
		    bad++ == 0)
			CHECK_MEM(o.data.data ? o.data.data : "", o.data.len,
			          plain.data ? plain.data : "", plain.len);
		dynbuf_release(&o.data);
		dynbuf_release(&body);
		dynbuf_release(&plain);
	}
	CHECK_EQ_INT(bad, 0);
}

int main(void)
{
	test_framing();
	test_errors();
	test_stop();
	test_random();
	return tap_done();
}
