/* test_sse.c - unit tests of lib/sse.c: a vLLM-style stream fed whole, split
 * at every byte, one byte at a time and in random chunks; line endings;
 * the field rules; BOM; comments; bounds; callback stop; sse_finish. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "sse.h"
#include "tap.h"

/* What the callbacks saw, as text: "event|data\n" per event (newlines and
 * backslashes in data escaped), "#text\n" per comment, "!rc\n" when a feed
 * failed and "F rc\n" for the result of sse_finish. */
struct rec {
	struct dynbuf log;
	int events, comments;
	int stop_at, stop_rc; /* the stop_at-th event returns stop_rc */
	int bad;              /* data not NUL-terminated, bad event name */
};

static void rec_init(struct rec *r)
{
	dynbuf_init(&r->log, 1 << 24);
	r->events = r->comments = 0;
	r->stop_at = 0;
	r->stop_rc = 0;
	r->bad = 0;
}

static void log_escaped(struct dynbuf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			dynbuf_addstr(b, "\\n");
		else if (s[i] == '\r')
			dynbuf_addstr(b, "\\r");
		else if (s[i] == '\\')
			dynbuf_addstr(b, "\\\\");
		else
			dynbuf_add(b, s + i, 1);
	}
}

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
	struct rec *r = ud;

	r->events++;
	if (data[len] != '\0' || event == NULL || event[0] == '\0')
		r->bad++;
	dynbuf_addstr(&r->log, event);
	dynbuf_addstr(&r->log, "|");
	log_escaped(&r->log, data, len);
	dynbuf_addstr(&r->log, "\n");
	if (r->stop_at && r->events == r->stop_at)
		return r->stop_rc;
	return 0;
}

static void on_comment(void *ud, const char *text, size_t len)
{
	struct rec *r = ud;

	r->comments++;
	dynbuf_addstr(&r->log, "#");
	log_escaped(&r->log, text, len);
	dynbuf_addstr(&r->log, "\n");
}

struct opts {
	size_t max_line, max_event;
	int stop_at, stop_rc;
	int no_comment_cb;
};

static const struct opts defaults = {1 << 16, 1 << 20, 0, 0, 0};

/* Feeds in[0..len) in pieces ending at cuts[0..ncuts) (ascending), then
 * calls sse_finish; returns the log (caller frees). */
static char *run_cuts(const char *in, size_t len, const size_t *cuts, size_t ncuts,
                      const struct opts *o)
{
	struct sse_parser p;
	struct rec r;
	size_t at = 0;
	int rc = 0;

	rec_init(&r);
	r.stop_at = o->stop_at;
	r.stop_rc = o->stop_rc;
	sse_init(&p, o->max_line, o->max_event, on_event, o->no_comment_cb ? NULL : on_comment, &r);
	for (size_t i = 0; i <= ncuts && rc == 0; i++) {
		size_t to = i < ncuts ? cuts[i] : len;
		rc = sse_feed(&p, in + at, to - at);
		at = to;
	}
	if (rc)
		dynbuf_printf(&r.log, "!%d\n", rc);
	dynbuf_printf(&r.log, "F %d\n", sse_finish(&p));
	if (r.bad)
		dynbuf_printf(&r.log, "BAD %d\n", r.bad);
	sse_release(&p);
	return dynbuf_take(&r.log, NULL);
}

static char *run_whole(const char *in, size_t len, const struct opts *o)
{
	return run_cuts(in, len, NULL, 0, o);
}

static char *run_split(const char *in, size_t len, size_t at, const struct opts *o)
{
	return run_cuts(in, len, &at, 1, o);
}

static char *run_bytes(const char *in, size_t len, const struct opts *o)
{
	size_t *cuts = malloc((len + 1) * sizeof(size_t));
	for (size_t i = 0; i < len; i++)
		cuts[i] = i;
	char *log = run_cuts(in, len, cuts, len, o);
	free(cuts);
	return log;
}

/* Checks the whole feed against want, then every single split, then one
 * byte at a time; reports one failure per kind at most. */
static void check_all_splits(const char *in, size_t len, const struct opts *o, const char *want)
{
	char *got = run_whole(in, len, o);
	CHECK_STR(got, want);
	free(got);

	size_t bad_at = (size_t)-1;
	for (size_t at = 0; at <= len && bad_at == (size_t)-1; at++) {
		got = run_split(in, len, at, o);
		if (strcmp(got, want) != 0)
			bad_at = at;
		free(got);
	}
	tap_ok(bad_at == (size_t)-1, "split at every position (first bad split: %zu of %zu)",
	       bad_at, len);
	if (bad_at != (size_t)-1) {
		got = run_split(in, len, bad_at, o);
		CHECK_STR(got, want);
		free(got);
	}

	got = run_bytes(in, len, o);
	CHECK_STR(got, want);
	free(got);
}

static void check_str_all(const char *in, const char *want)
{
	check_all_splits(in, strlen(in), &defaults, want);
}

/* ---- a vLLM-style chat completion stream ---- */

static const char *const vllm_data[] = {
    "{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1717000000,"
    "\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,\"delta\":"
    "{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}",
    "{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1717000000,"
    "\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,\"delta\":"
    "{\"content\":\"Hello\"},\"logprobs\":null,\"finish_reason\":null}]}",
    "{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1717000000,"
    "\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,\"delta\":"
    "{\"content\":\", w\\u00f6rld \\u2014 \xe2\x9c\x93\"},\"logprobs\":null,"
    "\"finish_reason\":null}]}",
    "{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1717000000,"
    "\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,\"delta\":"
    "{\"content\":\"!\"},\"logprobs\":null,\"finish_reason\":\"stop\",\"stop_reason\":null}]}",
    "{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1717000000,"
    "\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[],\"usage\":{"
    "\"prompt_tokens\":12,\"total_tokens\":15,\"completion_tokens\":3}}",
    "[DONE]",
};
#define VLLM_N (sizeof(vllm_data) / sizeof(vllm_data[0]))

/* The stream with the given line terminator. */
static char *vllm_stream(const char *eol)
{
	struct dynbuf b;

	dynbuf_init(&b, 1 << 20);
	for (size_t i = 0; i < VLLM_N; i++)
		dynbuf_printf(&b, "data: %s%s%s", vllm_data[i], eol, eol);
	return dynbuf_take(&b, NULL);
}

/* The log line of one event, as on_event writes it. */
static void want_event(struct dynbuf *b, const char *event, const char *data)
{
	dynbuf_printf(b, "%s|", event);
	log_escaped(b, data, strlen(data));
	dynbuf_addstr(b, "\n");
}

static char *vllm_want(void)
{
	struct dynbuf b;

	dynbuf_init(&b, 1 << 20);
	for (size_t i = 0; i < VLLM_N; i++)
		want_event(&b, "message", vllm_data[i]);
	dynbuf_addstr(&b, "F 0\n");
	return dynbuf_take(&b, NULL);
}

static void test_vllm(void)
{
	static const char *const eols[] = {"\n", "\r\n", "\r"};
	char *want = vllm_want();

	for (size_t i = 0; i < 3; i++) {
		char *in = vllm_stream(eols[i]);
		check_all_splits(in, strlen(in), &defaults, want);
		free(in);
	}
	free(want);
}

/* Keep-alive comments between the chunks, as servers send them. */
static void test_vllm_with_pings(void)
{
	struct dynbuf b, w;

	dynbuf_init(&b, 1 << 20);
	dynbuf_init(&w, 1 << 20);
	dynbuf_addstr(&b, ": ping\n\n");
	dynbuf_addstr(&w, "#ping\n");
	for (size_t i = 0; i < VLLM_N; i++) {
		dynbuf_printf(&b, "data: %s\n\n: ping\n\n", vllm_data[i]);
		want_event(&w, "message", vllm_data[i]);
		dynbuf_addstr(&w, "#ping\n");
	}
	dynbuf_addstr(&w, "F 0\n");
	check_all_splits(b.data, b.len, &defaults, w.data);
	dynbuf_release(&b);
	dynbuf_release(&w);
}

/* ---- line endings ---- */

static void test_line_endings(void)
{
	const char *want = "message|a\\nb\nmessage|c\nF 0\n";

	check_str_all("data: a\ndata: b\n\ndata: c\n\n", want);
	check_str_all("data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", want);
	check_str_all("data: a\rdata: b\r\rdata: c\r\r", want);
	check_str_all("data: a\rdata: b\n\r\ndata: c\r\n\n", want);
	check_str_all("data: a\r\ndata: b\r\rdata: c\n\r", want);
	/* LF CR is two line ends: the CR is an empty line */
	check_str_all("data: a\n\rdata: b\n\n", "message|a\nmessage|b\nF 0\n");
	/* CR CR LF: a line end, then an empty line (CRLF) */
	check_str_all("data: a\r\r\ndata: b\n\n", "message|a\nmessage|b\nF 0\n");
}

static void test_crlf_across_feeds(void)
{
	struct sse_parser p;
	struct rec r;

	rec_init(&r);
	sse_init(&p, 1024, 1024, on_event, on_comment, &r);
	CHECK_EQ_INT(sse_feed(&p, "data: a\r", 8), 0);
	CHECK_EQ_INT(sse_feed(&p, "", 0), 0); /* an empty feed keeps the pending CR */
	CHECK_EQ_INT(sse_feed(&p, "\ndata: b\r", 9), 0);
	CHECK_EQ_INT(r.events, 0); /* the LF after CR is not an empty line */
	CHECK_EQ_INT(sse_feed(&p, "\n", 1), 0);
	CHECK_EQ_INT(r.events, 0);
	CHECK_EQ_INT(sse_feed(&p, "\r", 1), 0); /* the blank line */
	CHECK_EQ_INT(r.events, 1);
	CHECK_EQ_INT(sse_feed(&p, "\n", 1), 0); /* its LF */
	CHECK_EQ_INT(sse_feed(&p, "data: c\r", 8), 0);
	CHECK_EQ_INT(sse_feed(&p, "\r", 1), 0); /* CR CR: two line ends */
	CHECK_EQ_INT(r.events, 2);
	CHECK_EQ_INT(sse_finish(&p), 0);
	CHECK_STR(r.log.data, "message|a\\nb\nmessage|c\n");
	sse_release(&p);
	dynbuf_release(&r.log);
}

/* ---- fields ---- */

static void test_comments(void)
{
	check_str_all(": ping\n\n", "#ping\nF 0\n");
	check_str_all(":ping\n\n", "#ping\nF 0\n");
	check_str_all(":  two spaces\n", "# two spaces\nF 0\n");
	check_str_all(":\n", "#\nF 0\n");
	/* a comment inside an event does not split or end it */
	check_str_all("data: a\n: keep-alive\ndata: b\n\n", "#keep-alive\nmessage|a\\nb\nF 0\n");
	/* without a comment callback: ignored */
	struct opts o = defaults;
	o.no_comment_cb = 1;
	const char *in = ": ping\n\ndata: x\n: y\n\n";
	check_all_splits(in, strlen(in), &o, "message|x\nF 0\n");
}

static void test_multiline_data(void)
{
	check_str_all("data: a\ndata: b\ndata: c\n\n", "message|a\\nb\\nc\nF 0\n");
	check_str_all("data: a\ndata:\n\n", "message|a\\n\nF 0\n");
	check_str_all("data:\ndata:\n\n", "message|\\n\nF 0\n");
	check_str_all("data: {\"a\":\ndata:  1}\n\n", "message|{\"a\":\\n 1}\nF 0\n");
}

static void test_event_field(void)
{
	check_str_all("event: token\ndata: x\n\n", "token|x\nF 0\n");
	/* the event name applies to one event only */
	check_str_all("event: token\ndata: x\n\ndata: y\n\n", "token|x\nmessage|y\nF 0\n");
	/* an event name is dropped with an event that had no data */
	check_str_all("event: token\n\ndata: y\n\n", "message|y\nF 0\n");
	/* the last event field wins; an empty one means "message" */
	check_str_all("event: a\nevent: b\ndata: x\n\n", "b|x\nF 0\n");
	check_str_all("event: a\nevent:\ndata: x\n\n", "message|x\nF 0\n");
	check_str_all("event:usage\ndata: x\n\n", "usage|x\nF 0\n");
	/* order does not matter within an event */
	check_str_all("data: x\nevent: late\n\n", "late|x\nF 0\n");
}

static void test_field_without_colon(void)
{
	/* "data" alone is a data field with an empty value */
	check_str_all("data\n\n", "message|\nF 0\n");
	check_str_all("data\ndata\n\n", "message|\\n\nF 0\n");
	check_str_all("data: a\ndata\n\n", "message|a\\n\nF 0\n");
	/* "event" alone: empty name, i.e. "message" */
	check_str_all("event: x\nevent\ndata: y\n\n", "message|y\nF 0\n");
	/* unknown fields, with and without colon, are ignored */
	check_str_all("foo\nbar: baz\ndata: y\n\n", "message|y\nF 0\n");
}

static void test_space_rule(void)
{
	check_str_all("data:x\n\n", "message|x\nF 0\n");
	check_str_all("data: x\n\n", "message|x\nF 0\n");
	check_str_all("data:  x\n\n", "message| x\nF 0\n");
	check_str_all("data: x \n\n", "message|x \nF 0\n");
	check_str_all("data:\tx\n\n", "message|\tx\nF 0\n");
	check_str_all("data: a:b: c\n\n", "message|a:b: c\nF 0\n");
	/* field names are exact and case-sensitive */
	check_str_all("Data: x\n\n", "F 0\n");
	check_str_all("data : x\n\n", "F 0\n");
	check_str_all(" data: x\n\n", "F 0\n");
	check_str_all("datax: x\n\n", "F 0\n");
}

static void test_no_data_no_event(void)
{
	check_str_all("event: a\nid: 1\nretry: 5000\n\n", "F 0\n");
	check_str_all("\n\n\n\n", "F 0\n");
	check_str_all("id: 7\ndata: x\nretry: 10\n\n", "message|x\nF 0\n");
	check_str_all("\r\n\r\ndata: x\r\n\r\n\r\n", "message|x\nF 0\n");
}

static void test_bom(void)
{
	check_str_all("\xEF\xBB\xBF"
	              "data: x\n\n",
	              "message|x\nF 0\n");
	check_str_all("\xEF\xBB\xBF"
	              ": c\n",
	              "#c\nF 0\n");
	check_str_all("\xEF\xBB\xBF"
	              "\ndata: x\n\n",
	              "message|x\nF 0\n");
	check_str_all("\xEF\xBB\xBF", "F 0\n");
	/* only one BOM, only at the very start */
	check_str_all("\xEF\xBB\xBF\xEF\xBB\xBF"
	              "data: x\n\n",
	              "F 0\n");
	check_str_all("data: a\n\n\xEF\xBB\xBF"
	              "data: b\n\n",
	              "message|a\nF 0\n");
	/* a partial BOM is content: "\xEF\xBB" "data" is an unknown field */
	check_str_all("\xEF\xBB"
	              "data: x\n\ndata: y\n\n",
	              "message|y\nF 0\n");
	check_str_all("\xEF"
	              "\n"
	              "data: y\n\n",
	              "message|y\nF 0\n");
	check_str_all("\xEF\xBB"
	              ":c\n",
	              "F 0\n");
	/* a BOM inside data is kept */
	check_str_all("data: \xEF\xBB\xBF\n\n", "message|\xEF\xBB\xBF\nF 0\n");
}

static void test_empty_input(void)
{
	struct sse_parser p;
	struct rec r;

	rec_init(&r);
	sse_init(&p, 1024, 1024, on_event, on_comment, &r);
	CHECK_EQ_INT(sse_feed(&p, "", 0), 0);
	CHECK_EQ_INT(sse_feed(&p, NULL, 0), 0);
	CHECK_EQ_INT(sse_finish(&p), 0);
	CHECK_EQ_INT(r.events, 0);
	CHECK_EQ_INT(r.comments, 0);
	CHECK_EQ_INT(r.log.len, 0);
	sse_release(&p);
	dynbuf_release(&r.log);

	/* finish right after init; release without any feed */
	sse_init(&p, 1024, 1024, on_event, NULL, NULL);
	CHECK_EQ_INT(sse_finish(&p), 0);
	sse_release(&p);
	sse_release(&p);
}

/* ---- sse_finish ---- */

static void test_finish(void)
{
	/* an event not terminated by a blank line is discarded */
	check_str_all("data: x\n\ndata: y", "message|x\nF 0\n");
	check_str_all("data: x\n\ndata: y\n", "message|x\nF 0\n");
	check_str_all("data: x\n\ndata: y\r", "message|x\nF 0\n");
	check_str_all("data: x\n\nevent: e\ndata: y\ndata: z\n", "message|x\nF 0\n");
	/* a final unterminated comment line is still processed */
	check_str_all("data: x\n\n: bye", "message|x\n#bye\nF 0\n");

	/* after finish the parser starts a new stream */
	struct sse_parser p;
	struct rec r;
	rec_init(&r);
	sse_init(&p, 1024, 1024, on_event, on_comment, &r);
	CHECK_EQ_INT(sse_feed(&p, "data: a\n\ndata: lost\r", 20), 0);
	CHECK_EQ_INT(sse_finish(&p), 0);
	CHECK_EQ_INT(sse_feed(&p,
	                      "\xEF\xBB\xBF"
	                      "data: b\n\n",
	                      12),
	             0);
	CHECK_EQ_INT(sse_finish(&p), 0);
	CHECK_STR(r.log.data, "message|a\nmessage|b\n");
	sse_release(&p);
	dynbuf_release(&r.log);
}

/* ---- bounds ---- */

static void test_oversize_line(void)
{
	struct opts o = defaults;
	const char *in;

	o.max_line = 16;
	/* exactly max_line bytes is fine, in every line form */
	in = "data: 0123456789\n\n: 34567890abcdef\nevent: 012345678\ndata\n\n";
	check_all_splits(in, strlen(in), &o,
	                 "message|0123456789\n#34567890abcdef\n012345678|\nF 0\n");
	/* one more is malformed; earlier events are delivered */
	in = "data: a\n\ndata: 01234567890\n\ndata: b\n\n";
	check_all_splits(in, strlen(in), &o, "message|a\n!-1\nF -1\n");
	in = "data: a\n\n: 234567890abcdefg\n";
	check_all_splits(in, strlen(in), &o, "message|a\n!-1\nF -1\n");
	/* detected before the line ends */
	in = "data: a\n\ndata: 0123456789abcdef";
	check_all_splits(in, strlen(in), &o, "message|a\n!-1\nF -1\n");
	in = "data: a\r\n\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n";
	check_all_splits(in, strlen(in), &o, "message|a\n!-1\nF -1\n");

	/* the parser is spent: every later call fails the same way */
	struct sse_parser p;
	struct rec r;
	rec_init(&r);
	sse_init(&p, 16, 1024, on_event, on_comment, &r);
	CHECK_EQ_INT(sse_feed(&p, "data: 0123456789", 16), 0);
	CHECK_EQ_INT(sse_feed(&p, "X", 1), SSE_ERR_OVERSIZE);
	CHECK_EQ_INT(sse_feed(&p, "\n\n", 2), SSE_ERR_OVERSIZE);
	CHECK_EQ_INT(sse_feed(&p, "data: x\n\n", 9), SSE_ERR_OVERSIZE);
	CHECK_EQ_INT(sse_feed(&p, "", 0), SSE_ERR_OVERSIZE);
	CHECK_EQ_INT(sse_finish(&p), SSE_ERR_OVERSIZE);
	CHECK_EQ_INT(sse_feed(&p, "data: x\n\n", 9), SSE_ERR_OVERSIZE);
	CHECK_EQ_INT(r.events, 0);
	sse_release(&p);
	dynbuf_release(&r.log);

	/* a pending BOM prefix counts against the line bound */
	o.max_line = 1;
	in = "\xEF\xBB"
	     "\n";
	check_all_splits(in, strlen(in), &o, "!-1\nF -1\n");
}

static void test_oversize_event(void)
{
	struct opts o = defaults;
	const char *in;

	o.max_event = 8;
	/* 5 + 1 + 2 = 8: fits exactly */
	in = "data: 12345\ndata: 67\n\ndata: 12345678\n\n";
	check_all_splits(in, strlen(in), &o, "message|12345\\n67\nmessage|12345678\nF 0\n");
	/* 5 + 1 + 3 = 9 */
	in = "data: x\n\ndata: 12345\ndata: 678\n\ndata: y\n\n";
	check_all_splits(in, strlen(in), &o, "message|x\n!-1\nF -1\n");
	/* separators count: nine empty data lines are 8 bytes, ten are 9 */
	in = "data\ndata\ndata\ndata\ndata\ndata\ndata\ndata\ndata\n\n";
	check_all_splits(in, strlen(in), &o, "message|\\n\\n\\n\\n\\n\\n\\n\\n\nF 0\n");
	in = "data\ndata\ndata\ndata\ndata\ndata\ndata\ndata\ndata\ndata\n\n";
	check_all_splits(in, strlen(in), &o, "!-1\nF -1\n");
	/* the bound is per event: data is reset after each dispatch */
	in = "data: 1234\n\ndata: 5678\n\ndata: 12345678\n\n";
	check_all_splits(in, strlen(in), &o, "message|1234\nmessage|5678\nmessage|12345678\nF 0\n");
}

/* ---- callback stop ---- */

static void test_callback_stop(void)
{
	struct opts o = defaults;
	const char *in = "data: 1\n\ndata: 2\n\ndata: 3\n\n";

	o.stop_at = 2;
	o.stop_rc = 7;
	check_all_splits(in, strlen(in), &o, "message|1\nmessage|2\n!7\nF 0\n");
	o.stop_rc = -5;
	check_all_splits(in, strlen(in), &o, "message|1\nmessage|2\n!-5\nF 0\n");

	struct sse_parser p;
	struct rec r;
	rec_init(&r);
	r.stop_at = 1;
	r.stop_rc = 42;
	sse_init(&p, 1024, 1024, on_event, on_comment, &r);
	CHECK_EQ_INT(sse_feed(&p, in, strlen(in)), 42);
	CHECK_EQ_INT(r.events, 1);
	CHECK_STR(r.log.data, "message|1\n");
	sse_release(&p);
	dynbuf_release(&r.log);
}

/* ---- no allocation per event once warmed up ---- */

static void test_buffers_reused(void)
{
	struct sse_parser p;
	struct rec r;
	char *in = vllm_stream("\n");
	size_t len = strlen(in);

	rec_init(&r);
	sse_init(&p, 1 << 16, 1 << 20, on_event, NULL, &r);
	/* warm up with the stream split at every position */
	for (size_t at = 0; at <= len; at++) {
		sse_feed(&p, in, at);
		sse_feed(&p, in + at, len - at);
	}
	const char *data = p.data.data, *line = p.line.data, *event = p.event.data;
	size_t cap = p.data.cap;
	for (int k = 0; k < 3; k++) {
		for (size_t at = 0; at <= len; at++) {
			sse_feed(&p, in, at);
			sse_feed(&p, in + at, len - at);
		}
	}
	CHECK(data != NULL);
	CHECK(p.data.data == data);
	CHECK(p.line.data == line);
	CHECK(p.event.data == event);
	CHECK_EQ_INT(p.data.cap, cap);
	CHECK_EQ_INT(r.events, (int)(4 * (len + 1) * VLLM_N));
	CHECK_EQ_INT(r.bad, 0);
	sse_release(&p);
	dynbuf_release(&r.log);
	free(in);
}

/* ---- random streams in random pieces ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)(rng_state >> 33) % n;
}

static void test_random(void)
{
	static const char *const parts[] = {
	    "data: ",   "data:", "data",  "event: ",   "event:", ": ",           ":",    "id: 1",
	    "retry: 9", "x",     "hello", "{\"a\":1}", " ",      "\xEF\xBB\xBF", "\xEF", "\n",
	    "\r",       "\r\n",  "\n\n",  "\r\n\r\n",  "\r\r",   "::",           "é",
	};
	struct opts o = defaults;
	int mismatches = 0;

	for (int t = 0; t < 3000; t++) {
		struct dynbuf b;
		dynbuf_init(&b, 1 << 20);
		unsigned nparts = rnd(40);
		for (unsigned i = 0; i < nparts; i++)
			dynbuf_addstr(&b, parts[rnd(sizeof(parts) / sizeof(parts[0]))]);
		if (b.data == NULL)
			dynbuf_addstr(&b, "");

		o.max_line = t % 3 == 0 ? 1 + rnd(12) : 1 << 16;
		o.max_event = t % 5 == 0 ? rnd(10) : 1 << 20;
		char *want = run_whole(b.data, b.len, &o);

		size_t cuts[8], ncuts = rnd(8);
		for (size_t i = 0; i < ncuts; i++)
			cuts[i] = b.len ? rnd((unsigned)b.len + 1) : 0;
		/* ascending */
		for (size_t i = 1; i < ncuts; i++)
			for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
				size_t tmp = cuts[j];
				cuts[j] = cuts[j - 1];
				cuts[j - 1] = tmp;
			}
		char *got = run_cuts(b.data, b.len, cuts, ncuts, &o);
		if (strcmp(got, want) != 0 && mismatches++ == 0)
			CHECK_STR(got, want);
		free(got);
		got = run_bytes(b.data, b.len, &o);
		if (strcmp(got, want) != 0 && mismatches++ == 0)
			CHECK_STR(got, want);
		free(got);
		free(want);
		dynbuf_release(&b);
	}
	CHECK_EQ_INT(mismatches, 0);
}

/* Every way to cut a short mixed stream into three pieces. */
static void test_all_double_splits(void)
{
	const char *in = "\xEF\xBB\xBF: hi\r\nevent: e\rdata: a\r\ndata:b\n\r\ndata\r\r: x\n";
	const char *want = "#hi\ne|a\\nb\nmessage|\n#x\nF 0\n";
	size_t len = strlen(in);
	int bad = 0;

	for (size_t i = 0; i <= len; i++) {
		for (size_t j = i; j <= len; j++) {
			size_t cuts[2] = {i, j};
			char *got = run_cuts(in, len, cuts, 2, &defaults);
			if (strcmp(got, want) != 0 && bad++ == 0)
				CHECK_STR(got, want);
			free(got);
		}
	}
	CHECK_EQ_INT(bad, 0);
}

/* sse_reset: a spent parser takes a new stream; small buffers are kept,
 * a buffer grown past SSE_KEEP_BYTES is given back. */
static void test_reset(void)
{
	struct sse_parser p;
	struct rec r;

	rec_init(&r);
	sse_init(&p, 1024, 1 << 20, on_event, NULL, &r);
	CHECK_EQ_INT(sse_feed(&p, "data: a\n\ndata: partial", 22), 0);
	const char *data = p.data.data;
	sse_reset(&p);
	CHECK_EQ_INT(sse_feed(&p, "\xEF\xBB\xBF" "data: b\n\n", 12), 0); /* a BOM again */
	CHECK(p.data.data == data);
	char big[2000];
	memset(big, 'x', sizeof big);
	CHECK_EQ_INT(sse_feed(&p, big, sizeof big), SSE_ERR_OVERSIZE);
	CHECK_EQ_INT(sse_feed(&p, "data: c\n\n", 10), SSE_ERR_OVERSIZE);
	sse_reset(&p);
	CHECK_EQ_INT(sse_feed(&p, "data: d\n\n", 10), 0);
	/* an event of 100 KiB: its buffer is not kept */
	char *huge = malloc(100 * 1024 + 16);
	memcpy(huge, "data: ", 6);
	memset(huge + 6, 'y', 100 * 1024);
	memcpy(huge + 6 + 100 * 1024, "\n", 1);
	sse_release(&p);
	sse_init(&p, 1 << 20, 1 << 20, on_event, NULL, &r);
	CHECK_EQ_INT(sse_feed(&p, huge, 100 * 1024 + 7), 0);
	CHECK(p.data.cap > SSE_KEEP_BYTES);
	sse_reset(&p);
	CHECK(p.data.data == NULL && p.data.cap == 0 && p.data.max == 1 << 20);
	CHECK(p.line.cap <= SSE_KEEP_BYTES);
	CHECK_EQ_INT(sse_feed(&p, "data: e\n\n", 10), 0);
	CHECK_STR(r.log.data, "message|a\nmessage|b\nmessage|d\nmessage|e\n");
	free(huge);
	sse_release(&p);
	dynbuf_release(&r.log);
}

int main(void)
{
	test_vllm();
	test_vllm_with_pings();
	test_line_endings();
	test_crlf_across_feeds();
	test_comments();
	test_multiline_data();
	test_event_field();
	test_field_without_colon();
	test_space_rule();
	test_no_data_no_event();
	test_bom();
	test_empty_input();
	test_finish();
	test_oversize_line();
	test_oversize_event();
	test_callback_stop();
	test_buffers_reused();
	test_reset();
	test_random();
	test_all_double_splits();
	return tap_done();
}
