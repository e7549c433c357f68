/* llmread.h - what one event or one whole answer of the OpenAI Responses
 * (/v1/responses) and Anthropic Messages (/v1/messages) APIs says, read
 * from its parsed JSON without any request state (ep_llm.c turns it into
 * chunks, counts and failures; the fuzz target reads it alone).
 *
 * Thread affinity: none.
 */
#ifndef HR_WORKER_LLMREAD_H
#define HR_WORKER_LLMREAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* What an event says (docs/metrics.md, "Per endpoint"). */
struct llm_event {
	bool content;        /* output text: Responses' response.output_text.delta,
	                      * Messages' content_block_delta with a text_delta */
	bool reasoning;      /* reasoning text: Responses' reasoning (summary) text
	                      * deltas, Messages' thinking_delta */
	json_t *text;        /* the non-empty string of either (borrowed from the event) */
	bool final;          /* the stream's last event: response.completed or
	                      * response.incomplete; message_stop */
	bool failed;         /* an error event (error, response.failed) */
	const char *message; /* its message (borrowed), or NULL */
	/* usage, each an integer in [0, INT32_MAX] or -1 when absent */
	int64_t prompt_tokens, completion_tokens, reasoning_tokens;
};

/* One stream event: its SSE event name (NULL or "message": none) and its
 * data, parsed (any JSON value). The data's "type" wins over the name. */
void llm_read_event(bool messages, const char *name, json_t *j, struct llm_event *ev);

/* A whole answer. Calls piece(ud, text, reasoning) for each non-empty text
 * of the output in order. Returns 0 with the usage counts in *ev (and
 * ev->content / ev->reasoning saying whether any such text came), or -1
 * with a message in *msg (static text, or ev->message for an error
 * answer, ev->failed set then). */
int llm_read_answer(bool messages, json_t *j, struct llm_event *ev,
                    void (*piece)(void *ud, json_t *text, bool reasoning), void *ud,
                    const char **msg);

#endif
