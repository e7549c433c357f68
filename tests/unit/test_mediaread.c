/* test_mediaread.c - the readers of audio transcription answers and stream
 * events and of image answers (worker/mediaread.c): OpenAI's delta and
 * done events, vLLM's chunks, event names standing in for a missing type,
 * usage in both spellings, pictures as b64_json or URLs, NIM retrieval
 * results, and every
 * malformed shape mapped to its error class (malformed_stream,
 * no_content) as for the other endpoints.
 *
 * The worker's sources are not part of the core library, so the module is
 * compiled into this test directly. */
#include "../../worker/mediaread.c"

#include <jansson.h>
#include <string.h>

#include "tap.h"

static struct mr_facts ev(const char *name, const char *text)
{
	struct mr_facts f;
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	if (!j)
		tap_ok(0, "bad test JSON %s", text);
	mr_transcript_event(name, j, &f);
	f.text = NULL; /* (borrowed from j) */
	f.error = f.error ? (json_t *)1 : NULL;
	json_decref(j);
	return f;
}

static struct mr_facts ans(const char *text)
{
	struct mr_facts f;
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	mr_transcript_answer(j, &f);
	f.text = NULL;
	json_decref(j);
	return f;
}

static void test_events(void)
{
	struct mr_facts f = ev(NULL, "{\"type\":\"transcript.text.delta\",\"delta\":\"hi \"}");
	CHECK(f.chunk && !f.final && !f.err);
	CHECK_EQ_INT(f.in_tokens, -1);
	f = ev(NULL, "{\"type\":\"transcript.text.delta\",\"delta\":\"\"}");
	CHECK(!f.chunk && !f.err);
	f = ev(NULL, "{\"type\":\"transcript.text.done\",\"text\":\"hi\",\"usage\":{\"type\":"
	             "\"tokens\",\"input_tokens\":100,\"output_tokens\":6,\"total_tokens\":106}}");
	CHECK(f.final && !f.chunk && !f.err);
	CHECK_EQ_INT(f.in_tokens, 100);
	CHECK_EQ_INT(f.out_tokens, 6);
	/* the SSE event name when the JSON has no type */
	f = ev("transcript.text.delta", "{\"delta\":\"word\"}");
	CHECK(f.chunk);
	f = ev("transcript.text.done", "{\"text\":\"word\"}");
	CHECK(f.final);
	f = ev("message", "{\"delta\":\"word\"}");
	CHECK(!f.chunk && !f.final && !f.err);
	/* vLLM's chunks, chat-style usage */
	f = ev(NULL, "{\"object\":\"transcription.chunk\",\"choices\":[{\"delta\":{\"content\":"
	             "\"a\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}");
	CHECK(f.chunk && !f.err);
	CHECK_EQ_INT(f.in_tokens, 5);
	CHECK_EQ_INT(f.out_tokens, 1);
	f = ev(NULL, "{\"choices\":[{\"delta\":{\"content\":null}}]}");
	CHECK(!f.chunk && !f.err);
	/* counts out of range are not counts */
	f = ev(NULL, "{\"usage\":{\"input_tokens\":-3,\"output_tokens\":99999999999}}");
	CHECK_EQ_INT(f.in_tokens, -1);
	CHECK_EQ_INT(f.out_tokens, -1);
	/* an error member is kept for the message */
	f = ev(NULL, "{\"error\":{\"message\":\"overloaded\"}}");
	CHECK(f.error && !f.chunk && !f.err);
	f = ev(NULL, "{\"error\":null}");
	CHECK(!f.error);
	/* malformed shapes */
	f = ev(NULL, "{\"type\":\"transcript.text.delta\",\"delta\":3}");
	CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
	CHECK(strstr(f.msg, "'delta'") != NULL);
	f = ev(NULL, "{\"type\":\"transcript.text.delta\"}");
	CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
	f = ev(NULL, "{\"type\":\"transcript.text.done\",\"text\":[]}");
	CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
	f = ev(NULL, "{\"choices\":[{\"delta\":{\"content\":7}}]}");
	CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
	f = ev(NULL, "[1]");
	CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
	CHECK(!f.chunk && !f.final);
}

static void test_answers(void)
{
	struct mr_facts f = ans("{\"text\":\"a transcript\",\"usage\":{\"type\":\"duration\","
	                        "\"seconds\":3}}");
	CHECK(f.chunk && !f.err);
	CHECK_EQ_INT(f.in_tokens, -1);
	f = ans("{\"text\":\"x\",\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}");
	CHECK_EQ_INT(f.in_tokens, 9);
	CHECK_EQ_INT(f.out_tokens, 1);
	f = ans("{\"text\":\"\"}");
	CHECK_EQ_INT(f.err, HR_ERR_NO_CONTENT);
	f = ans("{\"text\":null}");
	CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
	f = ans("{}");
	CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
	CHECK(strstr(f.msg, "'text'") != NULL);
	f = ans("\"text\"");
	CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
	f = ans("3");
	CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
}

static void test_images(void)
{
	struct mr_facts f;
	json_t *j = json_loads("{\"created\":1,\"data\":[{\"b64_json\":\"iVBO\"},{\"url\":"
	                       "\"http://x/a.png\"}],\"usage\":{\"input_tokens\":12}}",
	                       0, NULL);
	mr_image_answer(j, &f);
	CHECK(f.chunk && !f.err);
	CHECK_EQ_INT(f.images, 2);
	CHECK_EQ_INT(f.in_tokens, 12);
	json_decref(j);
	static const struct {
		const char *text;
		int err;
	} bad[] = {
	    {"{\"data\":[]}", HR_ERR_NO_CONTENT},
	    {"{}", HR_ERR_MALFORMED_STREAM},
	    {"{\"data\":{}}", HR_ERR_MALFORMED_STREAM},
	    {"{\"data\":[{\"b64_json\":\"\"}]}", HR_ERR_MALFORMED_STREAM},
	    {"{\"data\":[{\"b64_json\":\"x\"},3]}", HR_ERR_MALFORMED_STREAM},
	    {"[]", HR_ERR_MALFORMED_STREAM},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		j = json_loads(bad[i].text, JSON_DECODE_ANY, NULL);
		mr_image_answer(j, &f);
		CHECK_EQ_INT(f.err, bad[i].err);
		CHECK_EQ_INT(f.images, 0);
		json_decref(j);
	}
}

static void test_retrieval(void)
{
	static const struct {
		const char *text;
		int err;
	} cases[] = {
	    {"{\"data\":[{\"index\":0,\"bounding_boxes\":{}}]}", HR_ERR_NONE},
	    {"{\"data\":[]}", HR_ERR_NO_CONTENT},
	    {"{\"data\":null}", HR_ERR_MALFORMED_STREAM},
	    {"{}", HR_ERR_MALFORMED_STREAM},
	    {"7", HR_ERR_MALFORMED_STREAM},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct mr_facts f;
		json_t *j = json_loads(cases[i].text, JSON_DECODE_ANY, NULL);
		mr_retrieval_answer(j, &f);
		CHECK_EQ_INT(f.err, cases[i].err);
		CHECK(f.chunk == (cases[i].err == HR_ERR_NONE));
		json_decref(j);
	}
}

static void test_image_events(void)
{
	struct mr_facts f;
	json_t *j = json_loads("{\"type\":\"image_generation.partial_image\",\"b64_json\":"
	                       "\"iVBO\",\"partial_image_index\":0}",
	                       0, NULL);
	mr_image_event(NULL, j, &f);
	CHECK(f.chunk && !f.final && !f.err);
	CHECK_EQ_INT(f.images, 0);
	json_decref(j);
	j = json_loads("{\"type\":\"image_generation.completed\",\"b64_json\":\"iVBO\","
	                       "\"usage\":{\"input_tokens\":3,\"output_tokens\":16}}",
	                       0, NULL);
	mr_image_event(NULL, j, &f);
	CHECK(f.chunk && f.final && !f.err);
	CHECK_EQ_INT(f.images, 1);
	CHECK_EQ_INT(f.out_tokens, 16);
	json_decref(j);
	static const char *const bad[] = {
	    "{\"type\":\"image_generation.partial_image\"}",
	    "{\"type\":\"image_generation.completed\",\"b64_json\":\"\"}",
	    "{\"type\":\"image_generation.completed\",\"b64_json\":1}",
	    "[]",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		j = json_loads(bad[i], JSON_DECODE_ANY, NULL);
		mr_image_event(NULL, j, &f);
		CHECK_EQ_INT(f.err, HR_ERR_MALFORMED_STREAM);
		CHECK(!f.chunk && !f.final);
		json_decref(j);
	}
	j = json_loads("{\"b64_json\":\"x\"}", 0, NULL);
	mr_image_event("image_generation.partial_image", j, &f); /* the SSE event name */
	CHECK(f.chunk);
	mr_image_event("message", j, &f);
	CHECK(!f.chunk && !f.err);
	json_decref(j);
}

int main(void)
{
	test_image_events();
	test_retrieval();
	test_events();
	test_answers();
	test_images();
	return tap_done();
}
