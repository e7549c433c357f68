/* mediaread.h - the pure readers of the media endpoints' answers and
 * stream events (audio transcription, image generation and edit): what one parsed JSON value says,
 * with no request state, so that the endpoint handlers (ep_audio.c,
 * ep_image.c) and
 * the fuzz target (tests/fuzz/fuzz_mediaread.c) read exactly the same way.
 *
 * Thread affinity: none (pure).
 */
#ifndef HR_WORKER_MEDIAREAD_H
#define HR_WORKER_MEDIAREAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct mr_facts {
	int err;         /* HR_ERR_NONE, or MALFORMED_STREAM / NO_CONTENT with msg */
	char msg[160];
	bool chunk;      /* a content-bearing event: text is its non-empty text */
	bool final;      /* the stream's last event (transcript.text.done) */
	json_t *text;    /* borrowed from the value read, or NULL */
	json_t *error;   /* a non-null "error" member (borrowed), or NULL */
	int64_t in_tokens, out_tokens; /* usage; -1: not given */
	int images; /* pictures in an image answer */
};

/* One streamed transcription event (name: its SSE event field, "message"
 * when none; the JSON "type" member wins): OpenAI's
 * {"type":"transcript.text.delta","delta":"..."} (a chunk when the delta
 * is not empty) and {"type":"transcript.text.done","text":...,"usage":...}
 * (final), or vLLM's {"choices":[{"delta":{"content":"..."}}],"usage"?}.
 * Other event types carry nothing; a delta that is not a string is
 * malformed. */
void mr_transcript_event(const char *name, json_t *j, struct mr_facts *f);

/* A whole transcription answer: an object whose "text" is a non-empty
 * string (empty: no_content; absent or another type: malformed), with an
 * optional usage ({"input_tokens","output_tokens"} or
 * {"prompt_tokens","completion_tokens"}). */
void mr_transcript_answer(json_t *j, struct mr_facts *f);

/* A whole image generation or edit answer: an object whose "data" is an
 * array of pictures, each an object with a non-empty string "b64_json" or
 * "url" (images: how many; none: no_content; anything else: malformed),
 * with an optional usage as above. chunk is set when it is valid. */
void mr_image_answer(json_t *j, struct mr_facts *f);

/* One streamed image generation or edit event (the JSON "type", else the
 * SSE event name): image_generation.partial_image / image_edit.partial_image
 * (a chunk) and image_generation.completed / image_edit.completed (a
 * chunk, final, images 1, usage), each with
 * a non-empty string "b64_json" (else malformed); other types carry
 * nothing. */
void mr_image_event(const char *name, json_t *j, struct mr_facts *f);

/* A whole NIM image retrieval answer: an object whose "data" is a
 * non-empty array (empty: no_content; absent or not an array: malformed);
 * chunk is set when it is valid. */
void mr_retrieval_answer(json_t *j, struct mr_facts *f);

#endif
