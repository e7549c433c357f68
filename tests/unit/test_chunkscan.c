/* test_chunkscan.c - the worker's fast chunk reader (worker/chunkscan.c)
 * against jansson, and its memo against scans without one: edge cases,
 * vLLM-style streams, and random mutations of streamed events.
 *
 * The worker's sources are not part of the core library, so the module is
 * compiled into this test directly. */
#include "../../worker/chunkscan.c"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "rng.h"
#include "tap.h"

/* What the worker learns from one event. */
struct facts_out {
	int rc;
	bool content, reasoning;
	char text[256]; /* decoded content text (when content and it fits) */
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

/* The reference: jansson's tree read as request.c reads it. rc -1 when
 * jansson rejects the text or it is not an object, or has an error. */
static struct facts_out reference(const char *t, size_t n, int ep)
{
	struct facts_out o = {.prompt = -1, .completion = -1, .rtokens = -1};
	json_error_t je;
	json_t *j = json_loadb(t, n, 0, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		o.rc = -1;
		return o;
	}
	json_t *e = json_object_get(j, "error");
	if (e && !json_is_null(e)) {
		json_decref(j);
		o.rc = -2; /* an error event: chunkscan must leave it to jansson */
		return o;
	}
	json_t *choices = json_object_get(j, "choices");
	if (json_is_array(choices) && json_array_size(choices) > 0) {
		json_t *c0 = json_array_get(choices, 0);
		json_t *src = ep == SPEC_EP_CHAT ? json_object_get(c0, "delta") : c0;
		json_t *c = json_object_get(src, ep == SPEC_EP_CHAT ? "content" : "text");
		if (nonempty(c)) {
			o.content = true;
			snprintf(o.text, sizeof o.text, "%s", json_string_value(c));
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

static struct facts_out scan(const char *t, size_t n, int ep, struct chunkscan_memo *m)
{
	struct facts_out o = {.prompt = -1, .completion = -1, .rtokens = -1};
	struct chunk_info ci;
	o.rc = chunkscan(t, n, ep, &ci, m);
	if (o.rc < 0)
		return o;
	o.content = ci.content;
	o.reasoning = ci.reasoning;
	o.prompt = ci.prompt_tokens;
	o.completion = ci.completion_tokens;
	o.rtokens = ci.reasoning_tokens;
	if (ci.content) {
		/* the raw bytes are valid string contents: decode them */
		char *q = malloc(ci.text_len + 3);
		q[0] = '"';
		memcpy(q + 1, ci.text, ci.text_len);
		q[ci.text_len + 1] = '"';
		json_t *s = json_loadb(q, ci.text_len + 2, JSON_DECODE_ANY, NULL);
		free(q);
		if (json_is_string(s))
			snprintf(o.text, sizeof o.text, "%s", json_string_value(s));
		else
			snprintf(o.text, sizeof o.text, "<undecodable>");
		json_decref(s);
	} else if (ci.text) {
		snprintf(o.text, sizeof o.text, "<text without content>");
	}
	return o;
}

static bool same(const struct facts_out *a, const struct facts_out *b)
{
	return a->rc == b->rc && a->content == b->content && a->reasoning == b->reasoning &&
	       strcmp(a->text, b->text) == 0 && a->prompt == b->prompt &&
	       a->completion == b->completion && a->rtokens == b->rtokens;
}

static void show(const char *what, const char *t, size_t n, const struct facts_out *a,
                 const struct facts_out *b)
{
	printf("# %s: %.*s\n#   got rc %d content %d reasoning %d text '%s' usage %lld %lld %lld\n"
	       "#  want rc %d content %d reasoning %d text '%s' usage %lld %lld %lld\n",
	       what, (int)n, t, a->rc, a->content, a->reasoning, a->text, (long long)a->prompt,
	       (long long)a->completion, (long long)a->rtokens, b->rc, b->content, b->reasoning,
	       b->text, (long long)b->prompt, (long long)b->completion, (long long)b->rtokens);
}

/* chunkscan either steps aside (-1) or agrees with jansson; it must step
 * aside whenever jansson rejects the text or finds an error member. */
static bool agrees(const struct facts_out *got, const struct facts_out *ref)
{
	if (got->rc < 0)
		return true;
	struct facts_out r = *ref;
	return r.rc == 0 && same(got, &r);
}

static int n_fast; /* how many events the fast path answered */

/* Checks one event: without a memo against jansson, and with the memo
 * (updated) against without. Returns 0 when all agreed. */
static int check_event(const char *t, size_t n, int ep, struct chunkscan_memo *m, const char *what)
{
	struct facts_out ref = reference(t, n, ep);
	struct facts_out alone = scan(t, n, ep, NULL);
	struct facts_out memo = scan(t, n, ep, m);
	int bad = 0;
	if (alone.rc == 0)
		n_fast++;
	if (!agrees(&alone, &ref)) {
		show(what, t, n, &alone, &ref);
		bad++;
	}
	if (!same(&memo, &alone)) {
		show(what, t, n, &memo, &alone);
		bad++;
	}
	return bad;
}

/* Edge cases, each scanned alone (as tests/integration/test_worker.py's
 * DIFF_CASES) and must be answered exactly as jansson would. */
static const char *const CASES[] = {
    "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}",
    "{\"choices\":[{\"delta\":{\"content\":\"a\",\"content\":\"\"}}]}",
    "{\"choices\":[{\"delta\":{\"content\":\"\"},\"delta\":{\"content\":\"x\"}}]}",
    "{\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"choices\":[]}",
    "{\"choices\":[{\"delta\":{\"content\":\"\\u00e9\\ud83d\\ude00\\n\"}}]}",
    "{\"choices\":[{\"delta\":{\"content\":\"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\"}}]}",
    "{\"choices\":[{\"delta\":{\"reasoning\":\"r\"}}]}",
    "{\"choices\":[{\"delta\":{\"content\":null,\"reasoning_content\":\"r\"}}]}",
    "{\"choices\":[{\"delta\":{\"content\":5}}]}",
    "{\"choices\":[{\"delta\":{}},{\"delta\":{\"content\":\"x\"}}]}",
    "{\"choices\":{\"0\":{\"delta\":{\"content\":\"x\"}}}}",
    "{\"choices\":[{\"delta\":\"content\"}]}",
    "{\"choices\":[{\"text\":\"x\",\"delta\":{\"content\":\"y\"}}]}",
    "{\"x\":[1.5e10,-0,0.25,1E+2,-1234567890,true,false,null,{},[]],"
    "\"choices\":[{\"delta\":{\"content\":\"n\"}}]}",
    "{\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7,\"completion_tokens\":3,"
    "\"completion_tokens_details\":{\"reasoning_tokens\":2}}}",
    "{\"usage\":{\"prompt_tokens\":-1,\"completion_tokens\":2.0}}",
    "{\"usage\":{\"prompt_tokens\":4},\"usage\":null}",
    "{\"choices\":[{\"delta\":{\"cont\\u0065nt\":\"x\"}}]}",
    "{\"error\":null,\"choices\":[{\"delta\":{\"content\":\"z\"}}]}",
    "{\"error\":{\"message\":\"boom\"}}",
    " \t{ \"choices\" : [ { \"delta\" : { \"content\" : \"w\" } } ] }\r ",
    "{\"a\":1,}",
    "{\"a\":01}",
    "{\"a\":\"\\u0000\"}",
    "{\"a\":\"\\ud800\"}",
    "{\"a\":\"\\udc00\\ud800\"}",
    "{\"a\":\"\xc0\x80\"}",
    "{\"a\":\"\xed\xa0\x80\"}",
    "{\"a\":\"\xf4\x90\x80\x80\"}",
    "{\"a\":\"\x01\"}",
    "{\"a\":1e999}",
    "{\"a\":123456789012345678901}",
    "{\"a\":-}",
    "{\"a\":1.}",
    "[1]",
    "{\"a\":1} x",
    "{\"a\":tru}",
    "{\"a\":\"\\x\"}",
    "{\"a\" 1}",
    "",
    "{}",
    "{\"choices\":[]}",
    "{\"choices\":[{}]}",
    "{\"choices\":[{\"delta\":{\"content\":\"a b c d e f g h i j k l m n o p\"}}]}",
    "{\"choices\":[{\"delta\":{\"content\":\"12345678\\\"12345678\\\\\"}}]}",
};

static void test_cases(void)
{
	int bad = 0;
	for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
		struct chunkscan_memo m;
		chunkscan_memo_reset(&m);
		bad += check_event(CASES[i], strlen(CASES[i]), SPEC_EP_CHAT, &m, "case");
		bad += check_event(CASES[i], strlen(CASES[i]), SPEC_EP_COMPLETIONS, &m, "case/cmpl");
	}
	/* one memo carried through all of them, in both orders */
	for (int rev = 0; rev < 2; rev++) {
		struct chunkscan_memo m;
		chunkscan_memo_reset(&m);
		size_t n = sizeof CASES / sizeof CASES[0];
		for (size_t k = 0; k < 3 * n; k++) {
			size_t i = rev ? n - 1 - k % n : k % n;
			bad += check_event(CASES[i], strlen(CASES[i]), SPEC_EP_CHAT, &m, "carried");
		}
	}
	CHECK_EQ_INT(bad, 0);
}

/* A vLLM-like stream: role chunk, content chunks, finish, usage. */
static void test_stream(void)
{
	static const char *const words[] = {"fox ", "jumps", " \\\"quoted\\\"", "\xc3\xa9t\xc3\xa9",
	                                    "\\n", "over the lazy dog", "\\u00e9", "x"};
	char ev[1024];
	struct chunkscan_memo m;
	int bad = 0;
	chunkscan_memo_reset(&m);
	const char *pre = "{\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\","
	                  "\"created\":1700000000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\","
	                  "\"choices\":[{\"index\":0,\"delta\":";
	snprintf(ev, sizeof ev, "%s{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
	                        "\"finish_reason\":null}]}", pre);
	bad += check_event(ev, strlen(ev), SPEC_EP_CHAT, &m, "role");
	for (int i = 0; i < 200; i++) {
		snprintf(ev, sizeof ev, "%s{\"content\":\"%s\"},\"logprobs\":null,"
		                        "\"finish_reason\":null}]}", pre, words[i % 8]);
		bad += check_event(ev, strlen(ev), SPEC_EP_CHAT, &m, "content");
	}
	CHECK(m.pre_len > 0); /* a template was kept */
	snprintf(ev, sizeof ev, "%s{},\"logprobs\":null,\"finish_reason\":\"length\"}]}", pre);
	bad += check_event(ev, strlen(ev), SPEC_EP_CHAT, &m, "finish");
	snprintf(ev, sizeof ev, "%s{\"content\":\"again\"}}],\"usage\":{\"prompt_tokens\":3,"
	                        "\"completion_tokens\":201}}", pre);
	bad += check_event(ev, strlen(ev), SPEC_EP_CHAT, &m, "content+usage");
	snprintf(ev, sizeof ev, "{\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\","
	                        "\"choices\":[],\"usage\":{\"prompt_tokens\":3,"
	                        "\"completion_tokens\":201,\"total_tokens\":204}}");
	bad += check_event(ev, strlen(ev), SPEC_EP_CHAT, &m, "usage");
	/* the same prefix, then something else where the content was */
	const char *tails[] = {"{\"content\":5}}]}", "{\"content\":\"a\"}", "{\"content\":\"a\"}}]}x",
	                       "{\"content\":\"a\",\"content\":\"\"}}]}", "{}}]}", "{\"content\"",
	                       "{\"reasoning\":\"r\"}}]}", "{ \"content\":\"sp\"}}]}",
	                       "{\"content\":\"\xff\"}}]}", "{\"content\":\"a\"}}]}   "};
	for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
		snprintf(ev, sizeof ev, "%s{\"content\":\"prime\"}}]}", pre);
		bad += check_event(ev, strlen(ev), SPEC_EP_CHAT, &m, "prime");
		snprintf(ev, sizeof ev, "%s%s", pre, tails[i]);
		bad += check_event(ev, strlen(ev), SPEC_EP_CHAT, &m, "tail");
	}
	/* the content string is overridden after it: no template may stand in
	 * for the scan (the same bytes around another text) */
	const char *later[] = {"}}],\"choices\":[]}", "},\"delta\":{}}]}",
	                       ",\"content\":null}}]}", ",\"content\":\"\"}}]}",
	                       "},\"delta\":{\"content\":\"z\"}}]}", "}}],\"choices\":[{}]}"};
	for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
		for (int k = 0; k < 3; k++) {
			snprintf(ev, sizeof ev, "%s{\"content\":\"%s\"%s", pre, k == 1 ? "" : "t",
			         later[i]);
			bad += check_event(ev, strlen(ev), SPEC_EP_CHAT, &m, "overridden");
		}
	}
	/* completions: the content is the first member of choices[0] */
	chunkscan_memo_reset(&m);
	for (int i = 0; i < 50; i++) {
		snprintf(ev, sizeof ev, "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,"
		                        "\"model\":\"m\",\"choices\":[{\"text\":\"%s\",\"index\":0,"
		                        "\"logprobs\":null,\"finish_reason\":null}]}", words[i % 8]);
		bad += check_event(ev, strlen(ev), SPEC_EP_COMPLETIONS, &m, "completions");
	}
	CHECK(m.pre_len > 0);
	CHECK_EQ_INT(bad, 0);
}

/* Random mutations of an event after the memo was primed with the original:
 * whatever the bytes, the memo changes nothing. */
static void test_mutations(void)
{
	const char *base = "{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"created\":17,"
	                   "\"model\":\"mock-model\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
	                   "\"assistant\",\"content\":\"hello\"},\"logprobs\":null,"
	                   "\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":1,"
	                   "\"completion_tokens\":2,\"completion_tokens_details\":"
	                   "{\"reasoning_tokens\":0}}}";
	static const char alphabet[] = "{}[]\",:\\ \t\r\n0123456789.eE+-truefalsnul"
	                               "contentxyz\x01\x7f\x80\xc3\xa9\xed\xf4\xff";
	size_t blen = strlen(base);
	char ev[1024];
	int bad = 0;
	n_fast = 0;
	for (uint64_t it = 0; it < 20000; it++) {
		struct chunkscan_memo m;
		chunkscan_memo_reset(&m);
		bad += check_event(base, blen, SPEC_EP_CHAT, &m, "base");
		memcpy(ev, base, blen);
		size_t n = blen;
		int edits = 1 + (int)(rng_hash(7, 1, it) % 4);
		for (int e = 0; e < edits; e++) {
			uint64_t h = rng_hash(7, 2, it * 8 + (uint64_t)e);
			size_t at = (size_t)(h % (n + 1));
			char ch = alphabet[(h >> 32) % (sizeof alphabet - 1)];
			switch ((h >> 20) % 3) {
			case 0: /* replace */
				if (at < n)
					ev[at] = ch;
				break;
			case 1: /* insert */
				if (n < sizeof ev - 1) {
					memmove(ev + at + 1, ev + at, n - at);
					ev[at] = ch;
					n++;
				}
				break;
			default: /* delete */
				if (at < n) {
					memmove(ev + at, ev + at + 1, n - at - 1);
					n--;
				}
				break;
			}
		}
		bad += check_event(ev, n, SPEC_EP_CHAT, &m, "mutated");
		bad += check_event(base, blen, SPEC_EP_CHAT, &m, "base again");
		if (bad > 10)
			break;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(n_fast > 20000); /* the fast path answered most of them */
}

/* Deep nesting: up to 32 open containers are read, deeper is jansson's. */
static void test_depth(void)
{
	char ev[256];
	for (int d = 28; d <= 36; d++) {
		size_t n = 0;
		n += (size_t)snprintf(ev + n, sizeof ev - n, "{\"a\":");
		for (int i = 1; i < d; i++)
			ev[n++] = '[';
		for (int i = 1; i < d; i++)
			ev[n++] = ']';
		n += (size_t)snprintf(ev + n, sizeof ev - n, ",\"choices\":[{\"delta\":{\"content\":\"d\"}}]}");
		struct facts_out got = scan(ev, n, SPEC_EP_CHAT, NULL);
		CHECK_EQ_INT(got.rc, d <= 32 ? 0 : -1);
		if (got.rc == 0)
			CHECK(got.content);
	}
}

int main(void)
{
	test_cases();
	test_stream();
	test_mutations();
	test_depth();
	return tap_done();
}
