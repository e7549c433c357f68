/* test_endpoint.c - the worker's endpoint readers (worker/endpoint.c):
 * dotted JSON paths, template bodies compiled and filled in, and what
 * embeddings, rankings, TGI and template answers and stream events are
 * taken to say, valid and malformed; chunkscan's fast reading of TGI
 * events (worker/chunkscan.c) against that reference.
 *
 * The worker's sources are not part of the core library, so the module is
 * compiled into this test directly. */
#include "../../worker/chunkscan.c"
#include "../../worker/endpoint.c"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"

static json_t *J(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
	if (!j)
		tap_ok(0, "bad test JSON %s: %s", text, je.text);
	return j;
}

static void test_paths(void)
{
	struct ep_path p;
	json_t *j = J("{\"choices\":[{\"text\":\"hi\",\"delta\":{\"content\":\"c\"}}],"
	              "\"a\":{\"0\":5,\"s\":\"str\"},\"token\":{\"text\":\"t\"}}");
	CHECK_EQ_INT(ep_path_init(&p, "choices.0.text"), 0);
	CHECK_EQ_INT(p.n, 3);
	CHECK_STR(p.text, "choices.0.text");
	CHECK_STR(json_string_value(ep_path_get(&p, j)), "hi");
	ep_path_release(&p);
	CHECK_EQ_INT(ep_path_init(&p, "choices.0.delta.content"), 0);
	CHECK_STR(json_string_value(ep_path_get(&p, j)), "c");
	ep_path_release(&p);
	CHECK_EQ_INT(ep_path_init(&p, "a.0"), 0); /* digits name a member of an object */
	CHECK_EQ_INT(json_integer_value(ep_path_get(&p, j)), 5);
	ep_path_release(&p);
	static const char *const nowhere[] = {"choices.1.text",  "choices.x",       "a.s.t", "b",
	                                      "token.text.more", "choices.0.text.0"};
	for (size_t i = 0; i < sizeof nowhere / sizeof nowhere[0]; i++) {
		CHECK_EQ_INT(ep_path_init(&p, nowhere[i]), 0);
		if (!CHECK(ep_path_get(&p, j) == NULL))
			tap_ok(0, "path %s found something", nowhere[i]);
		ep_path_release(&p);
	}
	static const char *const invalid[] = {"", ".", "a.", ".a", "a..b"};
	for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
		CHECK_EQ_INT(ep_path_init(&p, invalid[i]), -1);
		CHECK(p.buf == NULL && p.text == NULL);
	}
	char deep[128] = "a";
	for (int i = 1; i < SPEC_MAX_JSON_PATH_SEGS + 1; i++)
		strcat(deep, ".a");
	CHECK_EQ_INT(ep_path_init(&p, deep), -1);
	deep[strlen(deep) - 2] = '\0'; /* exactly the maximum */
	CHECK_EQ_INT(ep_path_init(&p, deep), 0);
	CHECK_EQ_INT(p.n, SPEC_MAX_JSON_PATH_SEGS);
	ep_path_release(&p);
	CHECK_EQ_INT(ep_path_init(&p, NULL), 0); /* no path: nothing found */
	CHECK_EQ_INT(p.n, 0);
	ep_path_release(&p);
	json_decref(j);
}

/* A template filled in the way request.c does it. */
static json_t *fill_in(const struct ep_template *t, const char *prompt, int max_tokens)
{
	char out[4096];
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct ep_piece *pc = &t->piece[i];
		n += (size_t)snprintf(out + n, sizeof out - n, "%.*s", (int)pc->len,
		                      t->text + pc->off);
		if (pc->slot == EP_SLOT_PROMPT)
			n += (size_t)snprintf(out + n, sizeof out - n, "%s", prompt);
		else if (pc->slot == EP_SLOT_MAX_TOKENS)
			n += (size_t)snprintf(out + n, sizeof out - n, "%d", max_tokens);
	}
	json_error_t je;
	json_t *j = json_loadb(out, n, 0, &je);
	if (!j)
		tap_ok(0, "filled template is not JSON (%s): %s", je.text, out);
	return j;
}

static void test_templates(void)
{
	struct ep_template t;
	char err[HR_ERRLEN];
	json_t *body = J("{\"model\":\"{{model}}\",\"prompt\":\"Q: {{prompt}}!\","
	                 "\"max_tokens\":\"{{max_tokens}}\",\"stream\":\"{{stream}}\","
	                 "\"s\":\"x{{stream}}y{{max_tokens}}{{model}}\","
	                 "\"q\":\"\\\"{{max_tokens}}\\\"\",\"jinja\":\"{{ x }}{{{prompt}}}\","
	                 "\"other\":\"{{unknown}}\",\"{{prompt}}\":[\"{{prompt}}\",1],"
	                 "\"temperature\":1}");
	json_t *extra = J("{\"temperature\":0,\"n\":\"{{max_tokens}}\"}");
	if (!CHECK_EQ_INT(ep_template_compile(&t, body, extra, "m\"x", true, err), 0)) {
		tap_ok(0, "compile: %s", err);
		return;
	}
	CHECK_EQ_INT(t.piece[t.n - 1].slot, EP_SLOT_END);
	json_t *got = fill_in(&t, "say \\\"hi\\\"", 42);
	json_t *want = J("{\"model\":\"m\\\"x\",\"prompt\":\"Q: say \\\"hi\\\"!\","
	                 "\"max_tokens\":42,\"stream\":true,\"s\":\"xtruey42m\\\"x\","
	                 "\"q\":\"\\\"42\\\"\",\"jinja\":\"{{ x }}{say \\\"hi\\\"}\","
	                 "\"other\":\"{{unknown}}\",\"say \\\"hi\\\"\":[\"say \\\"hi\\\"\",1],"
	                 "\"temperature\":0,\"n\":42}");
	if (!CHECK(got && json_equal(got, want))) {
		char *d = got ? json_dumps(got, JSON_COMPACT) : NULL;
		tap_ok(0, "filled template: %s", d ? d : "(none)");
		free(d);
	}
	json_decref(got);
	json_decref(want);
	ep_template_release(&t);
	json_decref(extra);

	/* no placeholders at all, stream false */
	json_t *noslot = J("{\"a\":\"{{stream}}\"}");
	CHECK_EQ_INT(ep_template_compile(&t, noslot, NULL, "m", false, err), 0);
	CHECK_EQ_INT(t.n, 1);
	CHECK_STR(t.text, "{\"a\":false}");
	ep_template_release(&t);
	json_decref(noslot);
	json_decref(body);
	CHECK_EQ_INT(ep_template_compile(&t, NULL, NULL, "m", false, err), -1);
}

struct answer_case {
	int endpoint;
	const char *body;
	int items;
	int err;
	const char *msg; /* part of the message, or the content text when valid */
	int64_t prompt, completion;
};

static const struct answer_case answers[] = {
    /* embeddings */
    {SPEC_EP_EMBEDDINGS,
     "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,\"embedding\":[0.5,-1]},"
     "{\"index\":1,\"embedding\":\"AAAA\"}],\"usage\":{\"prompt_tokens\":9,\"total_tokens\":9}}",
     2, HR_ERR_NONE, NULL, 9, -1},
    {SPEC_EP_EMBEDDINGS, "{\"data\":[{\"embedding\":[1]}]}", 0, HR_ERR_NONE, NULL, -1, -1},
    {SPEC_EP_EMBEDDINGS, "{\"data\":[{\"embedding\":[1]}],\"usage\":{\"total_tokens\":4}}", 1,
     HR_ERR_NONE, NULL, 4, -1},
    {SPEC_EP_EMBEDDINGS, "[]", 1, HR_ERR_MALFORMED_STREAM, "not a JSON object", -1, -1},
    {SPEC_EP_EMBEDDINGS, "{\"data\":{}}", 1, HR_ERR_MALFORMED_STREAM, "'data' is not an array", -1,
     -1},
    {SPEC_EP_EMBEDDINGS, "{\"data\":[]}", 1, HR_ERR_NO_CONTENT, "no embeddings", -1, -1},
    {SPEC_EP_EMBEDDINGS, "{\"data\":[{\"embedding\":[1]}]}", 2, HR_ERR_MALFORMED_STREAM,
     "1 embeddings for 2 inputs", -1, -1},
    {SPEC_EP_EMBEDDINGS, "{\"data\":[{\"embedding\":[1]},{\"embedding\":[]}]}", 2,
     HR_ERR_MALFORMED_STREAM, "'data[1].embedding'", -1, -1},
    {SPEC_EP_EMBEDDINGS, "{\"data\":[{\"embedding\":[1,\"x\"]}]}", 1, HR_ERR_MALFORMED_STREAM,
     "'data[0].embedding'", -1, -1},
    {SPEC_EP_EMBEDDINGS, "{\"data\":[{\"embedding\":\"\"}]}", 1, HR_ERR_MALFORMED_STREAM,
     "'data[0].embedding'", -1, -1},
    {SPEC_EP_EMBEDDINGS, "{\"data\":[{\"vector\":[1]}]}", 1, HR_ERR_MALFORMED_STREAM,
     "'data[0].embedding'", -1, -1},
    /* chat embeddings (vLLM): the embeddings answer, one input */
    {SPEC_EP_CHAT_EMBEDDINGS,
     "{\"data\":[{\"index\":0,\"embedding\":[0.25,-0.5]}],\"usage\":{\"prompt_tokens\":7}}", 1,
     HR_ERR_NONE, NULL, 7, -1},
    {SPEC_EP_CHAT_EMBEDDINGS, "{\"data\":[{\"embedding\":[1]},{\"embedding\":[2]}]}", 1,
     HR_ERR_MALFORMED_STREAM, "2 embeddings for 1 inputs", -1, -1},
    {SPEC_EP_CHAT_EMBEDDINGS, "{\"data\":[]}", 1, HR_ERR_NO_CONTENT, "no embeddings", -1, -1},
    {SPEC_EP_CHAT_EMBEDDINGS, "{\"choices\":[]}", 1, HR_ERR_MALFORMED_STREAM,
     "'data' is not an array", -1, -1},
    /* NIM */
    {SPEC_EP_RANKINGS_NIM,
     "{\"rankings\":[{\"index\":1,\"logit\":4},{\"index\":0,\"logit\":-1.5}],"
     "\"usage\":{\"prompt_tokens\":12,\"total_tokens\":12}}",
     2, HR_ERR_NONE, NULL, 12, -1},
    {SPEC_EP_RANKINGS_NIM, "{\"rankings\":[]}", 2, HR_ERR_NO_CONTENT, "no results", -1, -1},
    {SPEC_EP_RANKINGS_NIM, "{\"rankings\":[{\"index\":2,\"logit\":1}]}", 2, HR_ERR_MALFORMED_STREAM,
     "'rankings[0]'", -1, -1},
    {SPEC_EP_RANKINGS_NIM, "{\"rankings\":[{\"index\":0,\"score\":1}]}", 2, HR_ERR_MALFORMED_STREAM,
     "'logit'", -1, -1},
    {SPEC_EP_RANKINGS_NIM,
     "{\"rankings\":[{\"index\":0,\"logit\":1},{\"index\":0,\"logit\":1},"
     "{\"index\":0,\"logit\":1}]}",
     2, HR_ERR_MALFORMED_STREAM, "3 results for 2 passages", -1, -1},
    {SPEC_EP_RANKINGS_NIM, "{\"results\":[{\"index\":0,\"logit\":1}]}", 2, HR_ERR_MALFORMED_STREAM,
     "'rankings' is not an array", -1, -1},
    /* Cohere (vLLM's usage carries total_tokens only; top_n may cut) */
    {SPEC_EP_RANKINGS_COHERE,
     "{\"id\":\"rerank-mock-1\",\"results\":[{\"index\":1,\"relevance_score\":0.98}],"
     "\"meta\":{\"billed_units\":{\"search_units\":1}},\"usage\":{\"total_tokens\":20}}",
     4, HR_ERR_NONE, NULL, 20, -1},
    {SPEC_EP_RANKINGS_COHERE, "{\"results\":[{\"index\":-1,\"relevance_score\":0.5}]}", 4,
     HR_ERR_MALFORMED_STREAM, "'results[0]'", -1, -1},
    {SPEC_EP_RANKINGS_COHERE, "{\"results\":[{\"index\":1.0,\"relevance_score\":0.5}]}", 4,
     HR_ERR_MALFORMED_STREAM, "'results[0]'", -1, -1},
    /* TEI: the body is the array */
    {SPEC_EP_RANKINGS_TEI, "[{\"index\":1,\"score\":0.98},{\"index\":0,\"score\":0.01}]", 2,
     HR_ERR_NONE, NULL, -1, -1},
    {SPEC_EP_RANKINGS_TEI, "{\"results\":[]}", 2, HR_ERR_MALFORMED_STREAM, "not a JSON array", -1,
     -1},
    {SPEC_EP_RANKINGS_TEI, "[]", 2, HR_ERR_NO_CONTENT, "no results", -1, -1},
    {SPEC_EP_RANKINGS_TEI, "[{\"index\":1}]", 2, HR_ERR_MALFORMED_STREAM, "'score'", -1, -1},
    /* TGI /generate */
    {SPEC_EP_TGI, "{\"generated_text\":\"brown fox \"}", 0, HR_ERR_NONE, "brown fox ", -1, -1},
    {SPEC_EP_TGI,
     "{\"generated_text\":\"a b \",\"details\":{\"finish_reason\":\"length\","
     "\"generated_tokens\":2,\"seed\":null,\"prefill\":[],\"tokens\":[]}}",
     0, HR_ERR_NONE, "a b ", -1, 2},
    {SPEC_EP_TGI, "{\"generated_text\":\"\"}", 0, HR_ERR_NO_CONTENT, "empty", -1, -1},
    {SPEC_EP_TGI, "{\"text\":\"x\"}", 0, HR_ERR_MALFORMED_STREAM, "'generated_text' is missing", -1,
     -1},
    {SPEC_EP_TGI, "[{\"generated_text\":\"x\"}]", 0, HR_ERR_MALFORMED_STREAM, "not a JSON object",
     -1, -1},
};

static void test_answers(void)
{
	for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
		const struct answer_case *c = &answers[i];
		json_t *j = J(c->body);
		struct ep_facts f;
		ep_read_answer(c->endpoint, j, c->items, NULL, &f);
		if (!CHECK_EQ_INT(f.err, c->err))
			tap_ok(0, "case %zu: %s", i, f.msg);
		if (c->err) {
			if (!CHECK(c->msg && strstr(f.msg, c->msg) != NULL))
				tap_ok(0, "case %zu: message '%s' lacks '%s'", i, f.msg, c->msg);
		} else if (c->msg)
			CHECK_STR(json_string_value(f.text), c->msg);
		else
			CHECK(f.text == NULL);
		CHECK_EQ_INT(f.prompt_tokens, c->prompt);
		CHECK_EQ_INT(f.completion_tokens, c->completion);
		json_decref(j);
	}
}

static void test_template_answers(void)
{
	struct ep_path p;
	struct ep_facts f;
	CHECK_EQ_INT(ep_path_init(&p, "choices.0.text"), 0);
	json_t *j = J("{\"choices\":[{\"text\":\"hello\"}],\"usage\":{\"prompt_tokens\":3,"
	              "\"completion_tokens\":1}}");
	ep_read_answer(SPEC_EP_TEMPLATE, j, 0, &p, &f);
	CHECK_EQ_INT(f.err, HR_ERR_NONE);
	CHECK_STR(json_string_value(f.text), "hello");
	CHECK_EQ_INT(f.prompt_tokens, 3);
	CHECK_EQ_INT(f.completion_tokens, 1);
	json_decref(j);
	static const struct {
		const char *body;
		int err;
		const char *msg;
	} bad[] = {
	    {"{\"choices\":[]}", HR_ERR_NO_CONTENT, "'choices.0.text' is not in the response"},
	    {"{\"choices\":[{\"text\":null}]}", HR_ERR_NO_CONTENT, "not in the response"},
	    {"{\"choices\":[{\"text\":\"\"}]}", HR_ERR_NO_CONTENT, "is empty"},
	    {"{\"choices\":[{\"text\":7}]}", HR_ERR_MALFORMED_STREAM, "is a number, not a string"},
	    {"{\"choices\":[{\"text\":{}}]}", HR_ERR_MALFORMED_STREAM, "is an object"},
	    {"\"text\"", HR_ERR_NO_CONTENT, "not in the response"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		j = J(bad[i].body);
		ep_read_answer(SPEC_EP_TEMPLATE, j, 0, &p, &f);
		CHECK_EQ_INT(f.err, bad[i].err);
		if (!CHECK(strstr(f.msg, bad[i].msg) != NULL))
			tap_ok(0, "message '%s' lacks '%s'", f.msg, bad[i].msg);
		CHECK(f.text == NULL);
		json_decref(j);
	}
	ep_path_release(&p);
	/* a top-level array is fine for a template */
	CHECK_EQ_INT(ep_path_init(&p, "0.generated_text"), 0);
	j = J("[{\"generated_text\":\"g\"}]");
	ep_read_answer(SPEC_EP_TEMPLATE, j, 0, &p, &f);
	CHECK_EQ_INT(f.err, HR_ERR_NONE);
	CHECK_STR(json_string_value(f.text), "g");
	json_decref(j);
	ep_path_release(&p);
}

static void test_events(void)
{
	struct ep_facts f;
	/* TGI: one event per token, the last with generated_text and details */
	json_t *j = J("{\"index\":1,\"token\":{\"id\":102,\"text\":\"brown \",\"logprob\":-0.375,"
	              "\"special\":false},\"generated_text\":null,\"details\":null}");
	ep_read_event(SPEC_EP_TGI, j, NULL, &f);
	CHECK_EQ_INT(f.err, HR_ERR_NONE);
	CHECK(f.chunk && !f.final);
	CHECK_STR(json_string_value(f.text), "brown ");
	CHECK_EQ_INT(f.completion_tokens, -1);
	json_decref(j);
	j = J("{\"index\":3,\"token\":{\"id\":2,\"text\":\"</s>\",\"special\":true},"
	      "\"generated_text\":\"brown fox \",\"details\":{\"finish_reason\":\"eos_token\","
	      "\"generated_tokens\":3,\"seed\":null,\"input_length\":2}}");
	ep_read_event(SPEC_EP_TGI, j, NULL, &f);
	CHECK(f.chunk && f.final);
	CHECK(f.text == NULL); /* a special token is counted, not kept */
	CHECK_EQ_INT(f.completion_tokens, 3);
	CHECK_EQ_INT(f.prompt_tokens, 2);
	json_decref(j);
	j = J("{\"error\":\"Request failed during generation: out of memory\","
	      "\"error_type\":\"generation\"}");
	ep_read_event(SPEC_EP_TGI, j, NULL, &f);
	CHECK(!f.chunk && !f.final && f.error != NULL);
	json_decref(j);
	j = J("{\"index\":1,\"token\":null}");
	ep_read_event(SPEC_EP_TGI, j, NULL, &f);
	CHECK(!f.chunk && f.error == NULL);
	json_decref(j);

	/* template: the value at the stream path */
	struct ep_path p;
	CHECK_EQ_INT(ep_path_init(&p, "token.text"), 0);
	j = J(
	    "{\"token\":{\"text\":\"x\"},\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}");
	ep_read_event(SPEC_EP_TEMPLATE, j, &p, &f);
	CHECK(f.chunk && !f.final);
	CHECK_STR(json_string_value(f.text), "x");
	CHECK_EQ_INT(f.prompt_tokens, 4);
	CHECK_EQ_INT(f.completion_tokens, 2);
	json_decref(j);
	static const char *const none[] = {"{\"token\":{\"text\":\"\"}}", "{\"token\":null}", "{}",
	                                   "{\"choices\":[]}", "[1]"};
	for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
		j = J(none[i]);
		ep_read_event(SPEC_EP_TEMPLATE, j, &p, &f);
		CHECK_EQ_INT(f.err, HR_ERR_NONE);
		CHECK(!f.chunk && f.text == NULL);
		json_decref(j);
	}
	j = J("{\"token\":{\"text\":[\"x\"]}}");
	ep_read_event(SPEC_EP_TEMPLATE, j, &p, &f);
	CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
	if (!CHECK(strstr(f.msg, "'token.text' in the stream event is an array") != NULL))
		tap_ok(0, "message: %s", f.msg);
	CHECK(!f.chunk);
	json_decref(j);
	ep_path_release(&p);
}

/* chunkscan's reading of TGI events against the reference (jansson and
 * ep_read_event): whenever chunkscan answers, it says the same. */
static int tgi_same(const char *ev, size_t n, int *fast)
{
	struct chunk_info ci;
	if (chunkscan(ev, n, SPEC_EP_TGI, &ci, NULL) != 0)
		return 0; /* jansson's to read */
	++*fast;
	json_error_t je;
	json_t *j = json_loadb(ev, n, 0, &je);
	if (!json_is_object(j)) {
		tap_ok(0, "chunkscan read a TGI event jansson rejects: %.*s", (int)n, ev);
		json_decref(j);
		return 1;
	}
	struct ep_facts f;
	ep_read_event(SPEC_EP_TGI, j, NULL, &f);
	int bad = f.err || f.error || ci.content != f.chunk || ci.final != f.final ||
	          ci.prompt_tokens != f.prompt_tokens ||
	          ci.completion_tokens != f.completion_tokens || ci.reasoning ||
	          (!ci.text) != (!f.text);
	if (!bad && ci.text) { /* the raw bytes decode to jansson's text */
		char q[1100];
		snprintf(q, sizeof q, "\"%.*s\"", (int)ci.text_len, ci.text);
		json_t *t = json_loads(q, JSON_DECODE_ANY, &je);
		bad = !t || !json_equal(t, f.text);
		json_decref(t);
	}
	if (bad)
		tap_ok(0,
		       "TGI event read differently: %.*s (chunk %d/%d final %d/%d in %lld/%lld "
		       "gen %lld/%lld text %d/%d)",
		       (int)n, ev, ci.content, f.chunk, ci.final, f.final,
		       (long long)ci.prompt_tokens, (long long)f.prompt_tokens,
		       (long long)ci.completion_tokens, (long long)f.completion_tokens,
		       ci.text != NULL, f.text != NULL);
	json_decref(j);
	return bad;
}

static void test_tgi_chunkscan(void)
{
	static const char *const cases[] = {
	    "{\"index\":1,\"token\":{\"id\":102,\"text\":\"brown \",\"logprob\":-0.375,"
	    "\"special\":false},\"generated_text\":null,\"details\":null}",
	    "{\"index\":3,\"token\":{\"id\":2,\"text\":\"</s>\",\"logprob\":-0.1,\"special\":true},"
	    "\"generated_text\":\"brown fox \",\"details\":{\"finish_reason\":\"length\","
	    "\"generated_tokens\":3,\"seed\":null,\"input_length\":2}}",
	    "{\"token\":{\"text\":\"\"}}",
	    "{\"token\":{}}",
	    "{\"token\":null}",
	    "{\"token\":[{\"text\":\"x\"}]}",
	    "{\"token\":{\"text\":\"a\\n\\u00e9\\\"\"},\"token\":{\"text\":\"b\"}}",
	    "{\"token\":{\"text\":\"a\"},\"token\":null}",
	    "{\"token\":{\"text\":\"a\",\"special\":\"true\"}}",
	    "{\"token\":{\"text\":\"a\",\"special\":true,\"special\":false}}",
	    "{\"token\":{\"text\":\"a\",\"text\":5}}",
	    "{\"token\":{\"text\":{\"x\":1}}}",
	    "{\"generated_text\":\"\"}",
	    "{\"generated_text\":true}",
	    "{\"generated_text\":\"x\",\"generated_text\":null}",
	    "{\"details\":{\"generated_tokens\":3.0,\"input_length\":-1}}",
	    "{\"details\":{\"generated_tokens\":2147483648,\"input_length\":7}}",
	    "{\"details\":{\"generated_tokens\":4},\"details\":null}",
	    "{\"details\":[1,2]}",
	    "{\"error\":null,\"token\":{\"text\":\"e\"}}",
	    "{\"error\":\"out of memory\",\"error_type\":\"generation\"}",
	    "{\"choices\":[{\"text\":\"not tgi\"}],\"usage\":{\"prompt_tokens\":5}}",
	    " {\"token\" : {\"text\" : \"w\" } } ",
	    "{\"tok\\u0065n\":{\"text\":\"escaped key\"}}",
	    "[]",
	    "{\"token\":{\"text\":\"cut",
	};
	int bad = 0, fast = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		bad += tgi_same(cases[i], strlen(cases[i]), &fast);
	CHECK_EQ_INT(bad, 0);
	CHECK(fast >= 20);
	/* an error event, an escaped key and broken JSON go to jansson */
	struct chunk_info ci;
	const char *e = "{\"error\":\"boom\"}";
	CHECK_EQ_INT(chunkscan(e, strlen(e), SPEC_EP_TGI, &ci, NULL), -1);

	/* random mutations of a token event */
	const char *base = cases[1];
	static const char alphabet[] = "{}[]\",:\\ \t0123456789.eE+-truefalsnul"
	                               "tokenxtspecialgeneratd_\x01\x80\xc3\xa9\xff";
	size_t blen = strlen(base);
	char ev[1024];
	fast = 0;
	for (uint64_t it = 0; it < 20000 && bad < 10; it++) {
		memcpy(ev, base, blen);
		size_t n = blen;
		int edits = 1 + (int)(it % 4);
		for (int k = 0; k < edits; k++) {
			uint64_t h = (it * 8 + (uint64_t)k + 1) * 0x9e3779b97f4a7c15ULL;
			h ^= h >> 29;
			h *= 0xbf58476d1ce4e5b9ULL;
			h ^= h >> 32;
			size_t at = (size_t)(h % (n + 1));
			char ch = alphabet[(h >> 40) % (sizeof alphabet - 1)];
			switch ((h >> 20) % 3) {
			case 0:
				if (at < n)
					ev[at] = ch;
				break;
			case 1:
				if (n < sizeof ev - 1) {
					memmove(ev + at + 1, ev + at, n - at);
					ev[at] = ch;
					n++;
				}
				break;
			default:
				if (at < n) {
					memmove(ev + at, ev + at + 1, n - at - 1);
					n--;
				}
				break;
			}
		}
		bad += tgi_same(ev, n, &fast);
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(fast > 2000); /* the fast path answered many of them */
}

int main(void)
{
	test_paths();
	test_templates();
	test_answers();
	test_template_answers();
	test_events();
	test_tgi_chunkscan();
	return tap_done();
}
