/* chunkscan.h - the fast path for one streamed chunk's JSON.
 *
 * Parsing every SSE event with jansson builds a tree (a dozen allocations)
 * only to read three or four members; at 64-token streams that was most of
 * the worker's CPU. chunkscan validates the event in one pass without
 * allocating and picks out just what the worker needs.
 *
 * It is deliberately partial: it answers only when it is certain that
 * jansson (json_loadb, flags 0) would accept the text as an object and that
 * reading the tree would give the same facts (duplicate keys: the last one
 * wins, as in jansson). Anything else - invalid JSON, a non-object, an
 * escaped key, a number jansson might reject as overflowing, a non-null
 * "error" member, deep nesting - returns -1 and the caller parses the event
 * with jansson, which stays the reference and produces the error messages.
 */
#ifndef HR_WORKER_CHUNKSCAN_H
#define HR_WORKER_CHUNKSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct chunk_info {
	bool content; /* non-empty choices[0].delta.content (chat) / choices[0].text */
	/* when content: that string's raw bytes between the quotes, escapes
	 * untouched - valid JSON string contents, so they can be copied into
	 * a request body as they are (points into the scanned text) */
	const char *text;
	size_t text_len;
	bool reasoning; /* else non-empty ...reasoning_content or ...reasoning */
	/* usage.prompt_tokens, usage.completion_tokens,
	 * usage.completion_tokens_details.reasoning_tokens: integers in
	 * [0, INT32_MAX], or -1 when absent or not such a count */
	int64_t prompt_tokens, completion_tokens, reasoning_tokens;
};

/* endpoint: SPEC_EP_CHAT or SPEC_EP_COMPLETIONS. Returns 0 with *out
 * filled, or -1: parse with jansson instead. */
int chunkscan(const char *text, size_t len, int endpoint, struct chunk_info *out);

#endif
