/* fuzz_epnative.c - libFuzzer target for the answer and stream-event
 * readers of the native endpoint types (worker/epnread.c): NIM, Cohere and
 * TEI embeddings, vLLM's and SGLang's generate answers, SGLang's events.
 *
 * Input: byte 0 picks the reader (and, for answers, the inputs expected:
 * byte 0 / 8 mod 4, 0 meaning not known), byte 1 an earlier
 * completion_tokens for the event reader (255: none); the rest is the
 * body, parsed by jansson as the worker does. Checked: every reader
 * returns (no crash, no leak); a verdict is none, malformed_stream or
 * no_content, with a message when not none; facts that are set are in
 * range (counts -1 or from 0 to INT32_MAX; text a non-empty string, and
 * none with an error); an event that is a chunk and final carries no
 * error; reading twice gives the same facts.
 *
 * Build: clang -fsanitize=fuzzer,address -Ilib -Iworker \
 *        tests/fuzz/fuzz_epnative.c worker/epnread.c worker/endpoint.c \
 *        and the core library's sources, -ljansson
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "endpoint.h"
#include "epnread.h"
#include "fuzz.h"
#include "record.h"
#include "spec.h"

static const int answers[] = {SPEC_EP_EMBEDDINGS_NIM, SPEC_EP_EMBEDDINGS_COHERE,
                              SPEC_EP_EMBEDDINGS_TEI, SPEC_EP_VLLM_GENERATE,
                              SPEC_EP_SGLANG_GENERATE};
#define N_ANSWERS (sizeof answers / sizeof answers[0])

static void check(const struct ep_facts *f)
{
	REQUIRE(f->err == HR_ERR_NONE || f->err == HR_ERR_MALFORMED_STREAM ||
	        f->err == HR_ERR_NO_CONTENT);
	REQUIRE(!f->err || f->msg[0]);
	REQUIRE(memchr(f->msg, '\0', sizeof f->msg) != NULL);
	REQUIRE(f->prompt_tokens >= -1 && f->prompt_tokens <= INT32_MAX);
	REQUIRE(f->completion_tokens >= -1 && f->completion_tokens <= INT32_MAX);
	REQUIRE(!f->text || (json_is_string(f->text) && json_string_length(f->text) > 0));
	REQUIRE(!f->err || !f->text);
}

static void same(const struct ep_facts *a, const struct ep_facts *b)
{
	REQUIRE(a->err == b->err && a->chunk == b->chunk && a->final == b->final);
	REQUIRE(a->text == b->text && a->error == b->error);
	REQUIRE(a->prompt_tokens == b->prompt_tokens);
	REQUIRE(a->completion_tokens == b->completion_tokens);
	REQUIRE(strcmp(a->msg, b->msg) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	unsigned pick = data[0] % (N_ANSWERS + 1);
	int items = (data[0] / 8) % 4;
	int64_t prev = data[1] == 255 ? -1 : data[1];
	json_t *root = json_loadb((const char *)data + 2, size - 2, JSON_DECODE_ANY, NULL);
	if (!root)
		return 0;
	struct ep_facts f, g;
	if (pick < N_ANSWERS) {
		epn_read_answer(answers[pick], root, items, &f);
		check(&f);
		REQUIRE(!f.chunk && !f.final);
		epn_read_answer(answers[pick], root, items, &g);
	} else if (json_is_object(root)) {
		epn_read_sglang_event(root, prev, &f);
		check(&f);
		REQUIRE(!f.err || (!f.chunk && !f.final));
		/* a count that grew is a chunk */
		if (!f.err && f.completion_tokens >= 0)
			REQUIRE(f.chunk == (f.completion_tokens > (prev < 0 ? 0 : prev)));
		epn_read_sglang_event(root, prev, &g);
	} else {
		json_decref(root);
		return 0;
	}
	same(&f, &g);
	json_decref(root);
	return 0;
}
