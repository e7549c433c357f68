/* fuzz_chunkscan.c - libFuzzer target for the worker's fast chunk reader
 * (worker/chunkscan.c), against jansson as the reference.
 *
 * Input: byte 0 picks the endpoint (chat, completions, TGI); the rest is a
 * stream of events separated by newlines, scanned in order, each from a
 * private buffer of exactly its size (so overreads are caught), once
 * without a memo and once with the stream's memo. Checked: whenever
 * chunkscan answers (0), jansson accepts the event as an object without a
 * non-null "error" member and the facts are those the worker would read
 * from jansson's tree (content and its text, reasoning, the three usage
 * counts; for TGI, ep_read_event's chunk, final, text and counts); the
 * text points inside the event and its raw bytes decode to jansson's
 * string; an error event is never answered; and the memo changes nothing
 * (the same answer and facts as the scan without it). Any violation
 * aborts.
 *
 * Build: see tests/CMakeLists.txt (worker/chunkscan.c and
 * worker/endpoint.c are compiled in).
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunkscan.h"
#include "endpoint.h"
#include "fuzz.h"
#include "spec.h"

/* What the worker learns from one event. */
struct facts {
	int rc;
	bool content, reasoning, final;
	json_t *text; /* the content string (owned), or NULL */
	int64_t prompt, completion, rtokens;
};

static int64_t count_of(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_integer(v))
		return -1;
	json_int_t n = json_integer_value(v);
	return n >= 0 && n <= INT32_MAX ? (int64_t)n : -1;
}

static bool nonempty(json_t *v)
{
	return json_is_string(v) && json_string_length(v) > 0;
}

/* The reference: jansson's tree read as request.c and endpoint.c read it.
 * rc -1 when jansson rejects the text or it is not an object, -2 when it
 * has a non-null error member. */
static struct facts reference(const char *t, size_t n, int ep)
{
	struct facts o = {.prompt = -1, .completion = -1, .rtokens = -1};
	json_t *j = json_loadb(t, n, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		o.rc = -1;
		return o;
	}
	json_t *e = json_object_get(j, "error");
	if (e && !json_is_null(e)) {
		json_decref(j);
		o.rc = -2;
		return o;
	}
	if (ep == SPEC_EP_TGI) {
		struct ep_facts f;
		ep_read_event(SPEC_EP_TGI, j, NULL, &f);
		REQUIRE(f.error == NULL);
		o.rc = f.err ? -3 : 0;
		o.content = f.chunk;
		o.final = f.final;
		o.text = f.text ? json_incref(f.text) : NULL;
		o.prompt = f.prompt_tokens;
		o.completion = f.completion_tokens;
		json_decref(j);
		return o;
	}
	json_t *choices = json_object_get(j, "choices");
	if (json_is_array(choices) && json_array_size(choices) > 0) {
		json_t *c0 = json_array_get(choices, 0);
		json_t *src = ep == SPEC_EP_CHAT ? json_object_get(c0, "delta") : c0;
		json_t *c = json_object_get(src, ep == SPEC_EP_CHAT ? "content" : "text");
		if (nonempty(c)) {
			o.content = true;
			o.text = json_incref(c);
		} else if (nonempty(json_object_get(src, "reasoning_content")) ||
		           nonempty(json_object_get(src, "reasoning"))) {
			o.reasoning = true;
		}
	}
	json_t *u = json_object_get(j, "usage");
	if (json_is_object(u)) {
		o.prompt = count_of(u, "prompt_tokens");
		o.completion = count_of(u, "completion_tokens");
		json_t *d = json_object_get(u, "completion_tokens_details");
		if (json_is_object(d))
			o.rtokens = count_of(d, "reasoning_tokens");
	}
	json_decref(j);
	return o;
}

static struct facts scan(const char *t, size_t n, int ep, struct chunkscan_memo *m)
{
	struct facts o = {.prompt = -1, .completion = -1, .rtokens = -1};
	struct chunk_info ci;
	o.rc = chunkscan(t, n, ep, &ci, m);
	REQUIRE(o.rc == 0 || o.rc == -1);
	if (o.rc < 0)
		return o;
	o.content = ci.content;
	o.reasoning = ci.reasoning;
	o.final = ci.final;
	o.prompt = ci.prompt_tokens;
	o.completion = ci.completion_tokens;
	o.rtokens = ci.reasoning_tokens;
	REQUIRE(o.prompt >= -1 && o.prompt <= INT32_MAX);
	REQUIRE(o.completion >= -1 && o.completion <= INT32_MAX);
	REQUIRE(o.rtokens >= -1 && o.rtokens <= INT32_MAX);
	if (ep != SPEC_EP_TGI)
		REQUIRE(!ci.final);
	if (ci.text) {
		REQUIRE(ci.text > t && ci.text + ci.text_len < t + n); /* inside the quotes */
		REQUIRE(ci.text[-1] == '"' && ci.text[ci.text_len] == '"');
		/* the raw bytes are valid string contents: decode them */
		char *q = malloc(ci.text_len + 2);
		REQUIRE(q != NULL);
		q[0] = '"';
		memcpy(q + 1, ci.text, ci.text_len);
		q[ci.text_len + 1] = '"';
		o.text = json_loadb(q, ci.text_len + 2, JSON_DECODE_ANY, NULL);
		free(q);
		REQUIRE(json_is_string(o.text));
	}
	if (ep != SPEC_EP_TGI)
		REQUIRE(ci.content == (ci.text != NULL));
	else if (ci.text)
		REQUIRE(ci.content);
	return o;
}

static bool same_text(json_t *a, json_t *b)
{
	if (!a || !b)
		return a == b;
	return json_equal(a, b);
}

static bool same(const struct facts *a, const struct facts *b)
{
	return a->rc == b->rc && a->content == b->content && a->reasoning == b->reasoning &&
	       a->final == b->final && same_text(a->text, b->text) && a->prompt == b->prompt &&
	       a->completion == b->completion && a->rtokens == b->rtokens;
}

static void show(const char *what, const char *t, size_t n, const struct facts *a)
{
	fprintf(stderr,
	        "%s: rc %d content %d reasoning %d final %d text %s counts %lld %lld %lld\n", what,
	        a->rc, a->content, a->reasoning, a->final,
	        a->text ? json_string_value(a->text) : "(none)", (long long)a->prompt,
	        (long long)a->completion, (long long)a->rtokens);
	fprintf(stderr, "  event: %.*s\n", (int)n, t);
}

static void check_event(const char *ev, size_t n, int ep, struct chunkscan_memo *memo)
{
	char *t = malloc(n ? n : 1); /* exactly n bytes */
	REQUIRE(t != NULL);
	if (n)
		memcpy(t, ev, n);
	struct facts alone = scan(t, n, ep, NULL);
	struct facts with = scan(t, n, ep, ep == SPEC_EP_TGI ? NULL : memo);
	if (!same(&alone, &with)) {
		show("without the memo", t, n, &alone);
		show("with the memo", t, n, &with);
		REQUIRE(!"the memo changes nothing");
	}
	if (alone.rc == 0) {
		struct facts ref = reference(t, n, ep);
		if (!same(&alone, &ref)) {
			show("chunkscan", t, n, &alone);
			show("jansson", t, n, &ref);
			REQUIRE(!"chunkscan agrees with jansson");
		}
		json_decref(ref.text);
	}
	json_decref(alone.text);
	json_decref(with.text);
	free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int eps[3] = {SPEC_EP_CHAT, SPEC_EP_COMPLETIONS, SPEC_EP_TGI};
	if (size < 1)
		return 0;
	int ep = eps[data[0] % 3];
	const char *p = (const char *)data + 1, *end = (const char *)data + size;
	struct chunkscan_memo memo;
	chunkscan_memo_reset(&memo);
	while (p <= end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		check_event(p, (size_t)(e - p), ep, &memo);
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}
