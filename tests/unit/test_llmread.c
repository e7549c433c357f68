/* test_llmread.c - the readers of OpenAI Responses and Anthropic Messages
 * events and answers (worker/llmread.c): what each event type is taken to
 * say (text, reasoning, usage, the last event, errors), what is skipped,
 * the data's type winning over the SSE event name, counts out of range,
 * and whole answers, valid, failed and malformed.
 *
 * The worker's sources are not part of the core library, so the module is
 * compiled into this test directly. */
#include "../../worker/llmread.c"

#include <jansson.h>
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

/* What an event says, in a line: c/r TEXT, F (final), E MESSAGE, counts. */
static void said(bool messages, const char *name, const char *data, char *out, size_t n)
{
	json_t *j = J(data);
	struct llm_event ev;
	llm_read_event(messages, name, j, &ev);
	snprintf(out, n, "%s%s%s%s%s %lld %lld %lld", ev.content ? "c:" : "",
	         ev.reasoning ? "r:" : "", ev.text ? json_string_value(ev.text) : "",
	         ev.final ? "F" : "", ev.failed ? (ev.message ? ev.message : "E") : "",
	         (long long)ev.prompt_tokens, (long long)ev.completion_tokens,
	         (long long)ev.reasoning_tokens);
	json_decref(j);
}

#define SAYS(messages, name, data, want)                                                           \
	do {                                                                                       \
		char got_[256];                                                                    \
		said(messages, name, data, got_, sizeof got_);                                     \
		CHECK_STR(got_, want);                                                             \
	} while (0)

static void test_responses_events(void)
{
	SAYS(false, "response.output_text.delta",
	     "{\"type\":\"response.output_text.delta\",\"delta\":\"hi \"}", "c:hi  -1 -1 -1");
	SAYS(false, "response.output_text.delta",
	     "{\"type\":\"response.output_text.delta\",\"delta\":\"\"}", " -1 -1 -1");
	SAYS(false, NULL, "{\"type\":\"response.output_text.delta\",\"delta\":7}", " -1 -1 -1");
	SAYS(false, "x", "{\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"hm\"}",
	     "r:hm -1 -1 -1");
	SAYS(false, "x", "{\"type\":\"response.reasoning_text.delta\",\"delta\":\"hm\"}",
	     "r:hm -1 -1 -1");
	/* the name when the data has no type; the data's type wins */
	SAYS(false, "response.output_text.delta", "{\"delta\":\"n\"}", "c:n -1 -1 -1");
	SAYS(false, "response.output_text.delta",
	     "{\"type\":\"response.output_text.done\",\"text\":\"all\",\"delta\":\"n\"}",
	     " -1 -1 -1");
	SAYS(false, "message", "{\"delta\":\"n\"}", " -1 -1 -1");
	SAYS(false, NULL,
	     "{\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":5,"
	     "\"output_tokens\":7,\"output_tokens_details\":{\"reasoning_tokens\":2}}}}",
	     "F 5 7 2");
	SAYS(false, NULL,
	     "{\"type\":\"response.incomplete\",\"response\":{\"usage\":{\"input_tokens\":-1,"
	     "\"output_tokens\":2147483648}}}",
	     "F -1 -1 -1");
	SAYS(false, NULL, "{\"type\":\"response.completed\"}", "F -1 -1 -1");
	SAYS(false, NULL,
	     "{\"type\":\"response.failed\",\"response\":{\"error\":{\"message\":\"boom\"}}}",
	     "boom -1 -1 -1");
	SAYS(false, NULL, "{\"type\":\"response.failed\"}", "E -1 -1 -1");
	SAYS(false, "error", "{\"type\":\"error\",\"message\":\"bad\"}", "bad -1 -1 -1");
	SAYS(false, "error", "{\"error\":{\"message\":\"worse\"}}", "worse -1 -1 -1");
	SAYS(false, NULL, "{\"type\":\"response.created\",\"response\":{}}", " -1 -1 -1");
	SAYS(false, NULL, "[1]", " -1 -1 -1");
	SAYS(false, "error", "\"str\"", "E -1 -1 -1"); /* named error, any data */
}

static void test_messages_events(void)
{
	SAYS(true, "content_block_delta",
	     "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
	     "\"text\":\"a \"}}",
	     "c:a  -1 -1 -1");
	SAYS(true, NULL,
	     "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\","
	     "\"thinking\":\"t\"}}",
	     "r:t -1 -1 -1");
	SAYS(true, NULL,
	     "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"signature_delta\","
	     "\"signature\":\"s\"}}",
	     " -1 -1 -1");
	SAYS(true, NULL,
	     "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"input_json_delta\","
	     "\"partial_json\":\"{\"}}",
	     " -1 -1 -1");
	SAYS(true, NULL,
	     "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\"}}",
	     " -1 -1 -1");
	SAYS(true, NULL,
	     "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\","
	     "\"text\":\"wrong member\"}}",
	     " -1 -1 -1");
	/* the start's input (with the cached tokens), never its output placeholder */
	SAYS(true, "message_start",
	     "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,"
	     "\"cache_creation_input_tokens\":3,\"cache_read_input_tokens\":4,\"output_tokens\":1}}"
	     "}",
	     " 17 -1 -1");
	SAYS(true, NULL,
	     "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":2147483647,"
	     "\"cache_read_input_tokens\":4}}}",
	     " 2147483647 -1 -1");
	SAYS(true, NULL, "{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}",
	     " -1 9 -1");
	SAYS(true, NULL, "{\"type\":\"message_stop\"}", "F -1 -1 -1");
	SAYS(true, "ping", "{\"type\":\"ping\"}", " -1 -1 -1");
	SAYS(true, "content_block_start",
	     "{\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\",\"text\":"
	     "\"x\"}}",
	     " -1 -1 -1");
	SAYS(true, "error",
	     "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}",
	     "busy -1 -1 -1");
	SAYS(true, "message_stop", "{}", "F -1 -1 -1");
	/* the other API's events mean nothing here */
	SAYS(true, NULL, "{\"type\":\"response.output_text.delta\",\"delta\":\"x\"}", " -1 -1 -1");
	SAYS(false, NULL, "{\"type\":\"message_stop\"}", " -1 -1 -1");
}

struct pieces {
	char text[256];
};

static void on_piece(void *ud, json_t *t, bool reasoning)
{
	struct pieces *p = ud;
	size_t n = strlen(p->text);
	snprintf(p->text + n, sizeof p->text - n, "%s%s|", reasoning ? "r:" : "",
	         json_string_value(t));
}

/* An answer in a line: "ok PIECES counts" or "err MESSAGE (failed)". */
static void answered(bool messages, const char *data, char *out, size_t n)
{
	json_t *j = data ? J(data) : NULL;
	struct llm_event ev;
	struct pieces p = {""};
	const char *msg = NULL;
	if (llm_read_answer(messages, j, &ev, on_piece, &p, &msg) < 0)
		snprintf(out, n, "err %s%s", msg, ev.failed ? " (failed)" : "");
	else
		snprintf(out, n, "ok %s %lld %lld %lld%s%s", p.text, (long long)ev.prompt_tokens,
		         (long long)ev.completion_tokens, (long long)ev.reasoning_tokens,
		         ev.content ? " c" : "", ev.reasoning ? " r" : "");
	json_decref(j);
}

#define ANSWERS(messages, data, want)                                                              \
	do {                                                                                       \
		char got_[512];                                                                    \
		answered(messages, data, got_, sizeof got_);                                       \
		CHECK_STR(got_, want);                                                             \
	} while (0)

static void test_answers(void)
{
	ANSWERS(
	    false,
	    "{\"status\":\"completed\",\"output\":[{\"type\":\"reasoning\",\"summary\":[{\"type\":"
	    "\"summary_text\",\"text\":\"think\"}]},{\"type\":\"message\",\"content\":[{\"type\":"
	    "\"output_text\",\"text\":\"a\"},{\"type\":\"refusal\",\"refusal\":\"no\"},{\"type\":"
	    "\"output_text\",\"text\":\"b\"}]},{\"type\":\"function_call\"}],\"usage\":{"
	    "\"input_tokens\":4,\"output_tokens\":3,\"output_tokens_details\":{"
	    "\"reasoning_tokens\":1}}}",
	    "ok r:think|a|b| 4 3 1 c r");
	ANSWERS(false, "{\"status\":\"incomplete\",\"output\":[]}", "ok  -1 -1 -1");
	ANSWERS(false, "{\"status\":\"failed\",\"error\":{\"message\":\"nope\"}}",
	        "err nope (failed)");
	ANSWERS(false, "{\"status\":\"failed\"}", "err error answer (failed)");
	ANSWERS(false, "{\"output\":{}}", "err output is not an array");
	ANSWERS(false, "[]", "err response body is not a JSON object");
	ANSWERS(false, NULL, "err response body is not a JSON object");
	ANSWERS(true,
	        "{\"type\":\"message\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\"},"
	        "{\"type\":\"tool_use\",\"id\":\"x\"},{\"type\":\"text\",\"text\":\"\"},{\"type\":"
	        "\"text\",\"text\":\"hello\"}],\"usage\":{\"input_tokens\":6,\"output_tokens\":2}}",
	        "ok r:t|hello| 6 2 -1 c r");
	ANSWERS(
	    true,
	    "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}",
	    "err busy (failed)");
	ANSWERS(true, "{\"type\":\"message\",\"content\":\"text\"}", "err content is not an array");
	ANSWERS(true, "{\"type\":\"message\",\"content\":[],\"usage\":{\"output_tokens\":\"2\"}}",
	        "ok  -1 -1 -1");
}

int main(void)
{
	test_responses_events();
	test_messages_events();
	test_answers();
	return tap_done();
}
