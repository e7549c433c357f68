/* fuzz_mediaread.c - libFuzzer target for the readers of the audio
 * transcription answers and stream events and of the image answers
 * (worker/mediaread.c).
 *
 * Input: byte 0 picks the SSE event name the event reader is given (none,
 * "transcript.text.delta", "transcript.text.done", another); the rest is
 * one JSON text, read by both readers whenever jansson parses it. Checked:
 * an error comes with a message and says nothing else; a chunk's text is a
 * non-empty string; an answer with no error has its text; a final event is
 * no chunk; usage counts are -1 or in [0, INT32_MAX]; the error member is
 * never JSON null; a valid image answer counts 1 to |data| pictures, an
 * invalid one none; a valid retrieval answer has a non-empty data; and
 * reading the same value twice gives the same facts.
 *
 * Build: see tests/CMakeLists.txt (worker/mediaread.c is compiled in).
 */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "mediaread.h"
#include "record.h"

static void check(const struct mr_facts *f)
{
	REQUIRE(f->in_tokens >= -1 && f->in_tokens <= INT32_MAX);
	REQUIRE(f->out_tokens >= -1 && f->out_tokens <= INT32_MAX);
	REQUIRE(!f->error || !json_is_null(f->error));
	if (f->err) {
		REQUIRE(f->err == HR_ERR_MALFORMED_STREAM || f->err == HR_ERR_NO_CONTENT);
		REQUIRE(f->msg[0] != '\0');
		REQUIRE(!f->chunk && !f->final && !f->text);
		return;
	}
	if (f->chunk)
		REQUIRE(json_is_string(f->text) && json_string_length(f->text) > 0);
	else
		REQUIRE(f->text == NULL);
	REQUIRE(!(f->chunk && f->final));
}

static bool same(const struct mr_facts *a, const struct mr_facts *b)
{
	return a->err == b->err && a->chunk == b->chunk && a->final == b->final &&
	       a->text == b->text && a->error == b->error && a->in_tokens == b->in_tokens &&
	       a->out_tokens == b->out_tokens && strcmp(a->msg, b->msg) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {NULL, "transcript.text.delta", "transcript.text.done",
	                                    "message"};
	if (size < 1)
		return 0;
	const char *name = names[data[0] % 4];
	json_t *j = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY, NULL);
	if (!j)
		return 0;
	struct mr_facts a, b;
	mr_transcript_event(name, j, &a);
	check(&a);
	mr_transcript_event(name, j, &b);
	REQUIRE(same(&a, &b));
	if (!json_is_object(j))
		REQUIRE(a.err == HR_ERR_MALFORMED_STREAM);
	mr_transcript_answer(j, &a);
	check(&a);
	REQUIRE(!a.final);
	if (!a.err)
		REQUIRE(a.chunk);
	mr_transcript_answer(j, &b);
	REQUIRE(same(&a, &b));
	mr_image_answer(j, &a);
	REQUIRE(a.in_tokens >= -1 && a.in_tokens <= INT32_MAX);
	if (a.err) {
		REQUIRE(a.images == 0 && !a.chunk && a.msg[0] != '\0');
	} else {
		json_t *arr = json_object_get(j, "data");
		REQUIRE(a.chunk && json_is_array(arr));
		REQUIRE(a.images >= 1 && (size_t)a.images == json_array_size(arr));
	}
	mr_image_answer(j, &b);
	REQUIRE(same(&a, &b) && a.images == b.images);
	mr_image_event(name, j, &a);
	REQUIRE(a.in_tokens >= -1 && a.out_tokens >= -1 && !a.text);
	if (a.err)
		REQUIRE(!a.chunk && !a.final && a.images == 0 && a.msg[0] != '\0');
	else
		REQUIRE(a.images == (a.final ? 1 : 0) && (!a.final || a.chunk));
	mr_image_event(name, j, &b);
	REQUIRE(same(&a, &b));
	mr_retrieval_answer(j, &a);
	REQUIRE(a.in_tokens >= -1 && a.in_tokens <= INT32_MAX && !a.text && !a.final);
	if (a.err)
		REQUIRE(!a.chunk && a.msg[0] != '\0');
	else
		REQUIRE(a.chunk && json_array_size(json_object_get(j, "data")) > 0);
	json_decref(j);
	return 0;
}
