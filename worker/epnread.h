/* epnread.h - the answer and stream-event readers of the native endpoint
 * types (NIM, Cohere and TEI embeddings; vLLM's and SGLang's generate
 * routes): what an answer or event says, as struct ep_facts (endpoint.h).
 * No request state: the handlers in ep_native.c apply the facts, and the
 * fuzz target (tests/fuzz/fuzz_epnative.c) calls these directly.
 *
 * Thread affinity: none.
 */
#ifndef HR_WORKER_EPNREAD_H
#define HR_WORKER_EPNREAD_H

#include <jansson.h>
#include <stdint.h>

#include "endpoint.h"

/* A whole 200 answer of endpoint ep (SPEC_EP_EMBEDDINGS_NIM ...
 * SPEC_EP_SGLANG_GENERATE), parsed (any JSON value). items: the inputs
 * sent (embeddings), 0 when not known. vLLM: completion_tokens is the
 * number of token ids generated. */
void epn_read_answer(int ep, json_t *root, int items, struct ep_facts *f);

/* One SGLang stream event (an object). prev_completion: the
 * completion_tokens of the event before (-1: none seen), to tell an event
 * that brings new output. f->chunk: it does; f->final: its meta_info has
 * a finish_reason (f->text is then the whole output text). */
void epn_read_sglang_event(json_t *root, int64_t prev_completion, struct ep_facts *f);

#endif
