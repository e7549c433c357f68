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
 *
 * TGI's token events are read the same way (see chunk_info).
 *
 * A memo (one per stream) lets a scan skip what a chunk shares with the
 * stream's earlier chunks: the bytes before and after the content text of
 * a chunk that was read are kept as a template, and a chunk that matches
 * it but for the text is read by scanning that text alone. The result is
 * the same as without the memo.
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
	/* TGI events (endpoint SPEC_EP_TGI): content is "token" being an
	 * object, text its "text" unless "special" is true (NULL then, or
	 * when not a string), prompt_tokens and completion_tokens
	 * details.input_length and details.generated_tokens, and final that
	 * "generated_text" is a string (the stream's last event) */
	bool final;
};

#define CHUNKSCAN_MEMO_BYTES 512 /* template bytes kept (before + after the text) */

/* Internal to chunkscan.c; the owner only resets it (at a new stream). */
struct chunkscan_memo {
	uint16_t pre_len; /* template bytes before the text; 0: no template */
	uint16_t suf_len; /* ... and from the text's closing quote to the end */
	bool chat;
	uint8_t flags; /* reasoning facts read with the template */
	int64_t prompt, completion, rtokens;
	unsigned char bytes[CHUNKSCAN_MEMO_BYTES];
};

void chunkscan_memo_reset(struct chunkscan_memo *m);

/* endpoint: SPEC_EP_CHAT, SPEC_EP_COMPLETIONS or SPEC_EP_TGI; memo: NULL,
 * or the stream's memo (read and updated; not used for TGI). Returns 0
 * with *out filled, or -1: parse with jansson instead. */
int chunkscan(const char *text, size_t len, int endpoint, struct chunk_info *out,
              struct chunkscan_memo *memo);

#endif
