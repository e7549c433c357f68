/* test_h1parse.c - the native transport's response parser (worker/h1parse.c):
 * real answers (a chunked SSE stream, a Content-Length JSON body, a 100
 * Continue before the answer, a close-delimited body, a 5xx with a body,
 * trailers, 204, bare LF line ends) fed whole, at every split into two
 * and byte by byte, with the next answer's bytes behind them; malformed
 * and oversized heads; a connection closing early; a callback stopping. */
#include <stdlib.h>
#include <string.h>

#include "../../worker/h1parse.c"
#include "dynbuf.h"
#include "tap.h"

struct out {
	struct dynbuf body;
	int heads, status;
	int stop_body; /* stop at this piece (0: never) */
	int pieces;
};

static int on_head(void *ud, int status)
{
	struct out *o = ud;
	o->heads++;
	o->status = status;
	return 0;
}

static int on_body(void *ud, const char *p, size_t n)
{
	struct out *o = ud;
	o->pieces++;
	dynbuf_add(&o->body, p, n);
	return o->stop_body && o->pieces == o->stop_body ? 1 : 0;
}

/* Feeds in[0..len) in pieces split at cut (and one byte at a time when
 * bytewise); returns the last result and the offset where the response
 * ended (H1_DONE) in *end. */
static int feed(struct h1_parser *p, struct out *o, const char *in, size_t len, size_t cut,
                bool bytewise, size_t *end)
{
	size_t at = 0;
	int rc = H1_MORE;
	*end = (size_t)-1;
	while (at < len) {
		size_t to = bytewise ? at + 1 : (at < cut ? cut : len);
		char *copy = malloc(to - at ? to - at : 1); /* exactly its size (ASan) */
		memcpy(copy, in + at, to - at);
		rc = h1_feed(p, copy, to - at, on_head, on_body, o);
		free(copy);
		if (rc == H1_DONE) {
			*end = at + p->used;
			return rc;
		}
		if (rc < 0)
			return rc;
		at = to;
	}
	return rc;
}

struct case_ {
	const char *name, *in;
	int status;
	const char *body;
	size_t resp_len; /* bytes of the response (what follows is the next one's): set below */
	bool keep;
	bool need_eof; /* close-delimited */
};

static void run_case(const struct case_ *k)
{
	size_t len = strlen(k->in);
	int bad = 0;
	for (size_t mode = 0; mode <= len + 1; mode++) {
		struct h1_parser p;
		struct out o = {0};
		dynbuf_init(&o.body, 1 << 20);
		h1_init(&p);
		size_t end;
		int rc = feed(&p, &o, k->in, len, mode <= len ? mode : 0, mode == len + 1, &end);
		if (k->need_eof) {
			if (rc == H1_MORE)
				rc = h1_eof(&p);
			end = len;
		}
		bool ok = rc == H1_DONE && o.heads == 1 && o.status == k->status &&
		          o.body.len == strlen(k->body) &&
		          memcmp(o.body.data ? o.body.data : "", k->body, o.body.len) == 0 &&
		          end == k->resp_len && p.keep_alive == k->keep;
		if (!ok && bad++ < 3)
			tap_ok(0, "%s at split %zu: rc %d heads %d status %d body %zu end %zu keep %d",
			       k->name, mode, rc, o.heads, o.status, o.body.len, end, p.keep_alive);
		dynbuf_release(&o.body);
	}
	tap_ok(bad == 0, "%s: every split", k->name);
}

#define SSE_HEAD                                                                                   \
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"        \
	"Transfer-Encoding: chunked\r\n\r\n"
#define SSE_BODY                                                                                   \
	"22\r\ndata: {\"choices\":[{\"delta\":{}}]}\n\n\r\n"                                      \
	"2F;ext=1\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n\r\n"               \
	"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"
#define SSE_TEXT                                                                                   \
	"data: {\"choices\":[{\"delta\":{}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n" \
	"data: [DONE]\n\n"
#define JSON_RESP                                                                                  \
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length:  17 \r\n\r\n"        \
	"{\"choices\":[1,2]}"
#define NEXT "HTTP/1.1 200 OK\r\n" /* the next answer on the connection */

static void real_streams(void)
{
	const struct case_ cases[] = {
	    {"chunked SSE", SSE_HEAD SSE_BODY NEXT, 200, SSE_TEXT, 0, true,
	     false},
	    {"content-length JSON", JSON_RESP NEXT, 200, "{\"choices\":[1,2]}", 0,
	     true, false},
	    {"100 continue first",
	     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" JSON_RESP,
	     200, "{\"choices\":[1,2]}",
	     0,
	     true, false},
	    {"5xx with a body, closing",
	     "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 4\r\n\r\nbusy",
	     503, "busy", 0, false, false},
	    {"close-delimited", "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nabc\ndef", 200,
	     "abc\ndef", 0, false, true},
	    {"trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n"
	                 "X-Checksum: 1\r\nX-Other: 2\r\n\r\n" NEXT,
	     200, "abc", 0, true, false},
	    {"204", "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n" NEXT, 204, "", 0, true,
	     false},
	    {"bare LF, 1.0 keep-alive",
	     "HTTP/1.0 200 OK\nConnection: Keep-Alive\nContent-Length: 2\n\nok" NEXT, 200, "ok", 0,
	     true, false},
	    {"no reason, folded line",
	     "\r\nHTTP/1.1 200\r\nX-A: 1\r\n  folded\r\nConnection: keep-alive, close\r\n"
	     "Content-Length: 1\r\n\r\nz",
	     200, "z", 0, false, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct case_ k = cases[i];
		size_t len = strlen(k.in), nl = strlen(NEXT);
		k.resp_len = len > nl && strcmp(k.in + len - nl, NEXT) == 0 ? len - nl : len;
		run_case(&k);
	}
}

static int one(const char *in, size_t len)
{
	struct h1_parser p;
	struct out o = {0};
	dynbuf_init(&o.body, 1 << 20);
	h1_init(&p);
	int rc = h1_feed(&p, in, len, on_head, on_body, &o);
	dynbuf_release(&o.body);
	return rc;
}

static int bad(const char *in)
{
	return one(in, strlen(in));
}

static void malformed(void)
{
	CHECK_EQ_INT(bad("HTTP/2 200 OK\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 20x OK\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 2000 OK\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 099 Low\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("ICY 200 OK\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\n: empty name\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nabcde"),
	             H1_DONE);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387904\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"), H1_EBAD);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), H1_ECHUNK);
	CHECK_EQ_INT(bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"),
	             H1_ECHUNK);
	/* a spent parser answers the same */
	struct h1_parser p;
	struct out o = {0};
	dynbuf_init(&o.body, 1024);
	h1_init(&p);
	CHECK_EQ_INT(h1_feed(&p, "HTTP/9", 6, on_head, on_body, &o), H1_MORE);
	CHECK_EQ_INT(h1_feed(&p, " 200\r\n", 6, on_head, on_body, &o), H1_EBAD);
	CHECK_EQ_INT(h1_feed(&p, "x", 1, on_head, on_body, &o), H1_EBAD);
	CHECK_EQ_INT(h1_eof(&p), H1_EBAD);
	CHECK_EQ_INT(o.heads, 0);
	dynbuf_release(&o.body);
}

static void oversized(void)
{
	/* a head over the bound, in many lines of no interest */
	struct dynbuf b;
	dynbuf_init(&b, 1 << 22);
	dynbuf_addstr(&b, "HTTP/1.1 200 OK\r\n");
	while (b.len <= HR_MAX_RESPONSE_HEAD)
		dynbuf_addstr(&b, "X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
	dynbuf_addstr(&b, "\r\n");
	CHECK_EQ_INT(one(b.data, b.len), H1_EBIG);
	/* one endless line */
	dynbuf_reset(&b);
	dynbuf_addstr(&b, "HTTP/1.1 200 OK\r\nX-Long: ");
	while (b.len <= HR_MAX_RESPONSE_HEAD)
		dynbuf_addstr(&b, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
	CHECK_EQ_INT(one(b.data, b.len), H1_EBIG);
	/* a long line of no interest within the bound is skipped */
	dynbuf_reset(&b);
	dynbuf_addstr(&b, "HTTP/1.1 200 OK\r\nX-Long: ");
	for (int i = 0; i < 100; i++)
		dynbuf_addstr(&b, "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
	dynbuf_addstr(&b, "\r\nContent-Length: 2\r\n\r\nok");
	CHECK_EQ_INT(one(b.data, b.len), H1_DONE);
	/* a Content-Length line too long to read */
	dynbuf_reset(&b);
	dynbuf_addstr(&b, "HTTP/1.1 200 OK\r\nContent-Length: ");
	for (int i = 0; i < 40; i++)
		dynbuf_addstr(&b, "                                                  ");
	dynbuf_addstr(&b, "2\r\n\r\nok");
	CHECK_EQ_INT(one(b.data, b.len), H1_EBIG);
	/* endless interim answers count into the bound */
	dynbuf_reset(&b);
	while (b.len <= HR_MAX_RESPONSE_HEAD)
		dynbuf_addstr(&b, "HTTP/1.1 100 Continue\r\n\r\n");
	CHECK_EQ_INT(one(b.data, b.len), H1_EBIG);
	dynbuf_release(&b);
}

static void early_close(void)
{
	struct {
		const char *in;
		int want;
	} cases[] = {
	    {"", H1_ETRUNC},
	    {"HTTP/1.1 200 OK\r\nContent-Le", H1_ETRUNC},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", H1_ETRUNC},
	    {SSE_HEAD "1f\r\ndata: {", H1_ETRUNC},
	    {SSE_HEAD "0\r\n", H1_ETRUNC}, /* (the trailer section's end missing) */
	    {"HTTP/1.1 200 OK\r\n\r\nall of it", H1_DONE},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct h1_parser p;
		struct out o = {0};
		dynbuf_init(&o.body, 1024);
		h1_init(&p);
		int rc = h1_feed(&p, cases[i].in, strlen(cases[i].in), on_head, on_body, &o);
		CHECK_EQ_INT(rc, H1_MORE);
		CHECK_EQ_INT(h1_eof(&p), cases[i].want);
		dynbuf_release(&o.body);
	}
}

static void stopping(void)
{
	const char *in = SSE_HEAD SSE_BODY;
	struct h1_parser p;
	struct out o = {0};
	dynbuf_init(&o.body, 1024);
	o.stop_body = 2;
	h1_init(&p);
	CHECK_EQ_INT(h1_feed(&p, in, strlen(in), on_head, on_body, &o), H1_ESTOP);
	CHECK_EQ_INT(o.pieces, 2);
	CHECK_EQ_INT(h1_feed(&p, "x", 1, on_head, on_body, &o), H1_ESTOP);
	dynbuf_release(&o.body);
	/* a Content-Length body stopped */
	dynbuf_init(&o.body, 1024);
	o.pieces = 0;
	o.stop_body = 1;
	h1_init(&p);
	CHECK_EQ_INT(h1_feed(&p, JSON_RESP, strlen(JSON_RESP), on_head, on_body, &o), H1_ESTOP);
	dynbuf_release(&o.body);
	/* after the end: nothing more is this response's */
	h1_init(&p);
	dynbuf_init(&o.body, 1024);
	o.stop_body = 0;
	CHECK_EQ_INT(h1_feed(&p, JSON_RESP, strlen(JSON_RESP), on_head, on_body, &o), H1_DONE);
	CHECK_EQ_INT(h1_feed(&p, "more", 4, on_head, on_body, &o), H1_DONE);
	CHECK_EQ_INT(p.used, 0);
	CHECK(h1_head_done(&p));
	dynbuf_release(&o.body);
}

int main(void)
{
	real_streams();
	malformed();
	oversized();
	early_close();
	stopping();
	return tap_done();
}
