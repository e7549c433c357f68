/* test_epnread.c - the answer and event readers of the native endpoint
 * types (worker/epnread.c): NIM, Cohere and TEI embeddings, vLLM's and
 * SGLang's generate answers and SGLang's stream events, valid and
 * malformed, each mapped to its verdict (none, malformed_stream,
 * no_content) and its counts.
 *
 * The worker's sources are not part of the core library, so the modules
 * are compiled into this test directly. */
#include "../../worker/endpoint.c"
#include "../../worker/epnread.c"

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

struct acase {
	int ep;
	int items;
	const char *body;
	int err;
	int64_t prompt, completion;
	const char *text; /* the text kept, or NULL */
	const char *msg;  /* a part of the message, or NULL */
};

static void test_answers(void)
{
	static const struct acase cases[] = {
	    /* NIM: OpenAI's shape */
	    {SPEC_EP_EMBEDDINGS_NIM, 1,
	     "{\"data\":[{\"embedding\":[0.1,0.2]}],"
	     "\"usage\":{\"prompt_tokens\":4,\"total_tokens\":4}}",
	     HR_ERR_NONE, 4, -1, NULL, NULL},
	    {SPEC_EP_EMBEDDINGS_NIM, 2, "{\"data\":[{\"embedding\":[0.1]}]}",
	     HR_ERR_MALFORMED_STREAM, -1, -1, NULL, "1 embeddings for 2 inputs"},
	    {SPEC_EP_EMBEDDINGS_NIM, 1, "{\"data\":[]}", HR_ERR_NO_CONTENT, -1, -1, NULL, NULL},
	    /* Cohere */
	    {SPEC_EP_EMBEDDINGS_COHERE, 2,
	     "{\"embeddings\":{\"float\":[[1,2],[3,4]]},\"meta\":{\"billed_units\":"
	     "{\"input_tokens\":9}}}",
	     HR_ERR_NONE, 9, -1, NULL, NULL},
	    {SPEC_EP_EMBEDDINGS_COHERE, 1, "{\"embeddings\":{\"base64\":[\"AAAA\"]}}", HR_ERR_NONE,
	     -1, -1, NULL, NULL},
	    {SPEC_EP_EMBEDDINGS_COHERE, 1, "{\"embeddings\":{}}", HR_ERR_NO_CONTENT, -1, -1, NULL,
	     "no embedding type"},
	    {SPEC_EP_EMBEDDINGS_COHERE, 1, "{\"embeddings\":{\"float\":[]}}", HR_ERR_NO_CONTENT, -1,
	     -1, NULL, NULL},
	    {SPEC_EP_EMBEDDINGS_COHERE, 1, "{\"embeddings\":[[1]]}", HR_ERR_MALFORMED_STREAM, -1,
	     -1, NULL, "'embeddings'"},
	    {SPEC_EP_EMBEDDINGS_COHERE, 1, "{\"embeddings\":{\"float\":[[]]}}",
	     HR_ERR_MALFORMED_STREAM, -1, -1, NULL, "'embeddings.float'[0]"},
	    {SPEC_EP_EMBEDDINGS_COHERE, 1, "[1]", HR_ERR_MALFORMED_STREAM, -1, -1, NULL, NULL},
	    /* TEI */
	    {SPEC_EP_EMBEDDINGS_TEI, 2, "[[0.5],[1e-3,2]]", HR_ERR_NONE, -1, -1, NULL, NULL},
	    {SPEC_EP_EMBEDDINGS_TEI, 0, "[]", HR_ERR_NO_CONTENT, -1, -1, NULL, NULL},
	    {SPEC_EP_EMBEDDINGS_TEI, 1, "[\"AAAA\"]", HR_ERR_MALFORMED_STREAM, -1, -1, NULL, NULL},
	    {SPEC_EP_EMBEDDINGS_TEI, 3, "[[1],[2]]", HR_ERR_MALFORMED_STREAM, -1, -1, NULL,
	     "2 embeddings for 3 inputs"},
	    {SPEC_EP_EMBEDDINGS_TEI, 1, "{\"embeddings\":[[1]]}", HR_ERR_MALFORMED_STREAM, -1, -1,
	     NULL, NULL},
	    /* vLLM */
	    {SPEC_EP_VLLM_GENERATE, 0,
	     "{\"choices\":[{\"token_ids\":[1,2,3],\"finish_reason\":\"length\"}]}", HR_ERR_NONE,
	     -1, 3, NULL, NULL},
	    {SPEC_EP_VLLM_GENERATE, 0,
	     "{\"choices\":[{\"token_ids\":[7]}],\"usage\":{\"prompt_tokens\":11}}", HR_ERR_NONE,
	     11, 1, NULL, NULL},
	    {SPEC_EP_VLLM_GENERATE, 0, "{\"choices\":[]}", HR_ERR_NO_CONTENT, -1, -1, NULL, NULL},
	    {SPEC_EP_VLLM_GENERATE, 0, "{\"choices\":[{\"token_ids\":[]}]}", HR_ERR_NO_CONTENT, -1,
	     -1, NULL, NULL},
	    {SPEC_EP_VLLM_GENERATE, 0, "{\"choices\":[{\"token_ids\":[1,\"2\"]}]}",
	     HR_ERR_MALFORMED_STREAM, -1, -1, NULL, "token_ids"},
	    {SPEC_EP_VLLM_GENERATE, 0, "{\"choices\":[{\"text\":\"x\"}]}", HR_ERR_MALFORMED_STREAM,
	     -1, -1, NULL, NULL},
	    {SPEC_EP_VLLM_GENERATE, 0, "{\"choices\":{}}", HR_ERR_MALFORMED_STREAM, -1, -1, NULL,
	     "'choices'"},
	    /* SGLang, whole */
	    {SPEC_EP_SGLANG_GENERATE, 0,
	     "{\"text\":\"a b \",\"output_ids\":[1,2],\"meta_info\":{\"prompt_tokens\":5,"
	     "\"completion_tokens\":2,\"finish_reason\":{\"type\":\"length\"}}}",
	     HR_ERR_NONE, 5, 2, "a b ", NULL},
	    {SPEC_EP_SGLANG_GENERATE, 0, "{\"text\":\"\",\"output_ids\":[4]}", HR_ERR_NONE, -1, -1,
	     NULL, NULL},
	    {SPEC_EP_SGLANG_GENERATE, 0, "{\"text\":\"\"}", HR_ERR_NO_CONTENT, -1, -1, NULL, NULL},
	    {SPEC_EP_SGLANG_GENERATE, 0, "{\"output_ids\":[1]}", HR_ERR_MALFORMED_STREAM, -1, -1,
	     NULL, "'text'"},
	    {SPEC_EP_SGLANG_GENERATE, 0, "{\"text\":\"x\",\"meta_info\":5}",
	     HR_ERR_MALFORMED_STREAM, -1, -1, NULL, "'meta_info'"},
	    {SPEC_EP_SGLANG_GENERATE, 0, "{\"text\":\"x\",\"output_ids\":[-1]}",
	     HR_ERR_MALFORMED_STREAM, -1, -1, NULL, "'output_ids'"},
	    /* no reader */
	    {SPEC_EP_RAW, 0, "{}", HR_ERR_MALFORMED_STREAM, -1, -1, NULL, "no reader"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct acase *c = &cases[i];
		json_t *j = J(c->body);
		struct ep_facts f;
		epn_read_answer(c->ep, j, c->items, &f);
		if (!CHECK_EQ_INT(f.err, c->err))
			tap_ok(0, "case %zu: %s -> %d (%s)", i, c->body, f.err, f.msg);
		CHECK_EQ_INT(f.prompt_tokens, c->prompt);
		CHECK_EQ_INT(f.completion_tokens, c->completion);
		if (c->text)
			CHECK_STR(json_string_value(f.text), c->text);
		else
			CHECK(f.text == NULL);
		if (c->msg && !CHECK(strstr(f.msg, c->msg) != NULL))
			tap_ok(0, "case %zu: message '%s' lacks '%s'", i, f.msg, c->msg);
		json_decref(j);
	}
}

struct ecase {
	const char *body;
	int64_t prev;
	int err;
	bool chunk, final;
	int64_t completion;
	const char *text;
};

static void test_events(void)
{
	static const struct ecase cases[] = {
	    {"{\"text\":\"a \",\"output_ids\":[3],\"meta_info\":{\"completion_tokens\":1,"
	     "\"finish_reason\":null}}",
	     -1, HR_ERR_NONE, true, false, 1, NULL},
	    /* the count did not grow: no new output */
	    {"{\"text\":\"a \",\"output_ids\":[],\"meta_info\":{\"completion_tokens\":1}}", 1,
	     HR_ERR_NONE, false, false, 1, NULL},
	    /* cumulative ids: the count says how many are new */
	    {"{\"text\":\"a b \",\"output_ids\":[3,4],\"meta_info\":{\"completion_tokens\":2}}", 1,
	     HR_ERR_NONE, true, false, 2, NULL},
	    {"{\"text\":\"a b c\",\"output_ids\":[5],\"meta_info\":{\"completion_tokens\":3,"
	     "\"finish_reason\":{\"type\":\"stop\"}}}",
	     2, HR_ERR_NONE, true, true, 3, "a b c"},
	    /* without counts: ids, else text */
	    {"{\"text\":\"a\",\"output_ids\":[9]}", -1, HR_ERR_NONE, true, false, -1, NULL},
	    {"{\"text\":\"a\",\"output_ids\":[]}", -1, HR_ERR_NONE, false, false, -1, NULL},
	    {"{\"text\":\"a\"}", -1, HR_ERR_NONE, true, false, -1, NULL},
	    {"{\"text\":\"\"}", -1, HR_ERR_NONE, false, false, -1, NULL},
	    {"{\"error\":{\"message\":\"overloaded\"}}", -1, HR_ERR_NONE, false, false, -1, NULL},
	    {"{\"text\":7}", -1, HR_ERR_MALFORMED_STREAM, false, false, -1, NULL},
	    {"{\"output_ids\":[1.5]}", -1, HR_ERR_MALFORMED_STREAM, false, false, -1, NULL},
	    {"{\"text\":\"a\",\"meta_info\":[]}", -1, HR_ERR_MALFORMED_STREAM, false, false, -1,
	     NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct ecase *c = &cases[i];
		json_t *j = J(c->body);
		struct ep_facts f;
		epn_read_sglang_event(j, c->prev, &f);
		if (!CHECK_EQ_INT(f.err, c->err))
			tap_ok(0, "event %zu: %s -> %d (%s)", i, c->body, f.err, f.msg);
		CHECK_EQ_INT(f.chunk, c->chunk);
		CHECK_EQ_INT(f.final, c->final);
		CHECK_EQ_INT(f.completion_tokens, c->completion);
		if (c->text)
			CHECK_STR(json_string_value(f.text), c->text);
		else
			CHECK(f.text == NULL);
		json_decref(j);
	}
	json_t *j = J("{\"error\":{\"message\":\"x\"}}");
	struct ep_facts f;
	epn_read_sglang_event(j, -1, &f);
	CHECK(f.error == json_object_get(j, "error"));
	json_decref(j);
}

int main(void)
{
	test_answers();
	test_events();
	return tap_done();
}
