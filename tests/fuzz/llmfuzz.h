/* llmfuzz.h - the body the two libFuzzer targets of worker/llmread.c share
 * (fuzz_llmresponses.c, fuzz_llmmessages.c): the input read as an SSE
 * stream whose every event goes to llm_read_event, and whole as an answer
 * body to llm_read_answer. Checked: an event is at most one of content,
 * reasoning, final and failed (final may come with usage); a text is a
 * non-empty string of the event; counts are -1 or in [0, INT32_MAX];
 * reading is a pure function (the same event read twice says the same);
 * an answer gives only non-empty strings, and a message when it fails. */
#ifndef HR_FUZZ_LLMFUZZ_H
#define HR_FUZZ_LLMFUZZ_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "hrlimits.h"
#include "llmread.h"
#include "sse.h"

static bool llm_messages;

static void check_count(int64_t v)
{
	REQUIRE(v == -1 || (v >= 0 && v <= INT32_MAX));
}

static void check_event(const struct llm_event *ev, json_t *j)
{
	int kinds = ev->content + ev->reasoning + ev->failed;
	REQUIRE(kinds <= 1);
	REQUIRE(!(ev->final && (ev->content || ev->reasoning || ev->failed)));
	if (ev->content || ev->reasoning) {
		REQUIRE(json_is_string(ev->text) && json_string_length(ev->text) > 0);
	} else {
		REQUIRE(ev->text == NULL);
	}
	REQUIRE(!ev->message || ev->failed);
	if (ev->message)
		REQUIRE(strlen(ev->message) < (size_t)1 << 30);
	check_count(ev->prompt_tokens);
	check_count(ev->completion_tokens);
	check_count(ev->reasoning_tokens);
	(void)j;
}

static int on_event(void *ud, const char *name, const char *data, size_t len)
{
	(void)ud;
	json_t *j = json_loadb(data, len, JSON_DECODE_ANY, NULL);
	if (!j)
		return 0;
	struct llm_event a, b;
	llm_read_event(llm_messages, name, j, &a);
	check_event(&a, j);
	llm_read_event(llm_messages, name, j, &b);
	REQUIRE(memcmp(&a, &b, sizeof a) == 0);
	json_decref(j);
	return 0;
}

static size_t pieces;

static void on_piece(void *ud, json_t *text, bool reasoning)
{
	(void)ud;
	(void)reasoning;
	REQUIRE(json_is_string(text) && json_string_length(text) > 0);
	pieces++;
}

static int llm_fuzz(bool messages, const uint8_t *data, size_t size)
{
	llm_messages = messages;
	struct sse_parser p;
	sse_init(&p, HR_MAX_SSE_LINE, HR_MAX_SSE_EVENT, on_event, NULL, NULL);
	if (sse_feed(&p, (const char *)data, size) == 0)
		sse_finish(&p);
	sse_release(&p);

	json_t *j = json_loadb((const char *)data, size, 0, NULL);
	struct llm_event ev;
	const char *msg = NULL;
	pieces = 0;
	int rc = llm_read_answer(messages, j, &ev, on_piece, NULL, &msg);
	if (rc < 0) {
		REQUIRE(msg != NULL);
	} else {
		REQUIRE(rc == 0);
		REQUIRE((ev.content || ev.reasoning) == (pieces > 0));
		check_count(ev.prompt_tokens);
		check_count(ev.completion_tokens);
		check_count(ev.reasoning_tokens);
	}
	json_decref(j);
	return 0;
}

#endif
