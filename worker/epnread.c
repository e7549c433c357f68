/* epnread.c - the answers and stream events of the native endpoint types
 * (see epnread.h; docs/worker.md, "Endpoints").
 *
 * What makes an answer valid:
 *  - nim_embeddings: as OpenAI's embeddings (endpoint.c);
 *  - cohere_embeddings: an object whose "embeddings" is an object with at
 *    least one member (an embedding type: "float", "int8", ...), each an
 *    array of one entry per input sent, each a non-empty array of numbers
 *    or a non-empty (base64) string; usage: meta.billed_units.input_tokens;
 *  - tei_embeddings: an array of one entry per input, each a non-empty
 *    array of numbers; no usage;
 *  - vllm_generate: an object whose "choices" is a non-empty array whose
 *    first entry has "token_ids", an array of integers (empty: no
 *    content); output tokens = its length; usage.prompt_tokens if given;
 *  - sglang_generate: an object with "text" a string and, when present,
 *    "output_ids" an array of integers and "meta_info" an object; no text
 *    and no ids is no content; usage from meta_info (prompt_tokens,
 *    completion_tokens).
 * An empty result is no_content, any other shape malformed_stream.
 */
#include "epnread.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "record.h"
#include "spec.h"

/* A vector: a non-empty array of numbers, or (strings allowed) a
 * non-empty base64 string. */
static bool vector_ok(json_t *v, bool strings)
{
	if (strings && json_is_string(v))
		return json_string_length(v) > 0;
	if (!json_is_array(v) || json_array_size(v) == 0)
		return false;
	size_t k;
	json_t *x;
	json_array_foreach(v, k, x)
	{
		if (!json_is_number(x))
			return false;
	}
	return true;
}

/* An array of vectors, one per input; what: its name in messages. */
static int vectors(json_t *a, const char *what, int items, bool strings, struct ep_facts *f)
{
	if (!json_is_array(a))
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "%s is not an array", what);
	size_t n = json_array_size(a);
	if (n == 0)
		return ep_bad(f, HR_ERR_NO_CONTENT, "%s has no embeddings", what);
	if (items > 0 && n != (size_t)items)
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "%s has %zu embeddings for %d inputs",
		              what, n, items);
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
	{
		if (!vector_ok(e, strings))
			return ep_bad(f, HR_ERR_MALFORMED_STREAM,
			              "%s[%zu] is not a non-empty array of numbers%s", what, i,
			              strings ? " or a base64 string" : "");
	}
	return 0;
}

static void read_cohere(json_t *root, int items, struct ep_facts *f)
{
	if (!json_is_object(root)) {
		ep_bad(f, HR_ERR_MALFORMED_STREAM, "response body is not a JSON object");
		return;
	}
	json_t *emb = json_object_get(root, "embeddings");
	if (!json_is_object(emb)) {
		ep_bad(f, HR_ERR_MALFORMED_STREAM,
		       "'embeddings' is not an object (by embedding type)");
		return;
	}
	if (json_object_size(emb) == 0) {
		ep_bad(f, HR_ERR_NO_CONTENT, "'embeddings' has no embedding type");
		return;
	}
	const char *k;
	json_t *a;
	json_object_foreach(emb, k, a)
	{
		char what[80];
		snprintf(what, sizeof what, "'embeddings.%.40s'", k);
		if (vectors(a, what, items, true, f) < 0)
			return;
	}
	json_t *bu = json_object_get(json_object_get(root, "meta"), "billed_units");
	if (json_is_object(bu))
		f->prompt_tokens = ep_count(bu, "input_tokens");
}

/* An array of integers (token ids); false when it is not one. */
static bool ids_ok(json_t *a)
{
	if (!json_is_array(a))
		return false;
	size_t k;
	json_t *x;
	json_array_foreach(a, k, x)
	{
		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return false;
	}
	return true;
}

static void read_vllm(json_t *root, struct ep_facts *f)
{
	if (!json_is_object(root)) {
		ep_bad(f, HR_ERR_MALFORMED_STREAM, "response body is not a JSON object");
		return;
	}
	json_t *ch = json_object_get(root, "choices");
	if (!json_is_array(ch)) {
		ep_bad(f, HR_ERR_MALFORMED_STREAM, "'choices' is not an array");
		return;
	}
	if (json_array_size(ch) == 0) {
		ep_bad(f, HR_ERR_NO_CONTENT, "'choices' is empty");
		return;
	}
	json_t *ids = json_object_get(json_array_get(ch, 0), "token_ids");
	if (!ids_ok(ids)) {
		ep_bad(f, HR_ERR_MALFORMED_STREAM,
		       "'choices[0].token_ids' is not an array of token ids (integers)");
		return;
	}
	if (json_array_size(ids) == 0) {
		ep_bad(f, HR_ERR_NO_CONTENT, "'choices[0].token_ids' is empty");
		return;
	}
	size_t n = json_array_size(ids);
	f->completion_tokens = n > INT32_MAX ? INT32_MAX : (int64_t)n;
	json_t *u = json_object_get(root, "usage");
	if (json_is_object(u))
		f->prompt_tokens = ep_count(u, "prompt_tokens");
}

/* meta_info's counts (an SGLang answer or event). */
static void sglang_meta(json_t *root, struct ep_facts *f)
{
	json_t *mi = json_object_get(root, "meta_info");
	if (!json_is_object(mi))
		return;
	f->prompt_tokens = ep_count(mi, "prompt_tokens");
	f->completion_tokens = ep_count(mi, "completion_tokens");
}

/* The members an SGLang answer or event has: "text" a string (or absent
 * in an event), "output_ids" integers when present, "meta_info" an object
 * when present. Returns 0 or -1 (f->err set). */
static int sglang_shape(json_t *root, bool text_needed, struct ep_facts *f)
{
	if (!json_is_object(root))
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "response body is not a JSON object");
	json_t *t = json_object_get(root, "text");
	if ((t || text_needed) && !json_is_string(t))
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "'text' is not a string");
	json_t *ids = json_object_get(root, "output_ids");
	if (ids && !json_is_null(ids) && !ids_ok(ids))
		return ep_bad(f, HR_ERR_MALFORMED_STREAM,
		              "'output_ids' is not an array of token ids (integers)");
	json_t *mi = json_object_get(root, "meta_info");
	if (mi && !json_is_null(mi) && !json_is_object(mi))
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "'meta_info' is not an object");
	return 0;
}

static void read_sglang(json_t *root, struct ep_facts *f)
{
	if (sglang_shape(root, true, f) < 0)
		return;
	json_t *t = json_object_get(root, "text");
	json_t *ids = json_object_get(root, "output_ids");
	if (json_string_length(t) == 0 && json_array_size(ids) == 0) {
		ep_bad(f, HR_ERR_NO_CONTENT, "empty 'text' and no 'output_ids'");
		return;
	}
	if (json_string_length(t) > 0)
		f->text = t;
	sglang_meta(root, f);
}

void epn_read_answer(int ep, json_t *root, int items, struct ep_facts *f)
{
	ep_facts_init(f);
	switch (ep) {
	case SPEC_EP_EMBEDDINGS_NIM:
		ep_read_answer(SPEC_EP_EMBEDDINGS, root, items, NULL, f);
		break;
	case SPEC_EP_EMBEDDINGS_COHERE:
		read_cohere(root, items, f);
		break;
	case SPEC_EP_EMBEDDINGS_TEI:
		vectors(root, "response body", items, false, f);
		break;
	case SPEC_EP_VLLM_GENERATE:
		read_vllm(root, f);
		break;
	case SPEC_EP_SGLANG_GENERATE:
		read_sglang(root, f);
		break;
	default:
		ep_bad(f, HR_ERR_MALFORMED_STREAM, "no reader for this endpoint");
		break;
	}
	if (f->err)
		f->text = NULL;
}

/* An event brings new output when its completion_tokens grew; without
 * that count, when it has output ids (or, without them, text). */
void epn_read_sglang_event(json_t *root, int64_t prev_completion, struct ep_facts *f)
{
	ep_facts_init(f);
	json_t *e = json_object_get(root, "error");
	if (e && !json_is_null(e))
		f->error = e;
	if (sglang_shape(root, false, f) < 0)
		return;
	sglang_meta(root, f);
	json_t *ids = json_object_get(root, "output_ids");
	json_t *t = json_object_get(root, "text");
	if (f->completion_tokens >= 0)
		f->chunk = f->completion_tokens > (prev_completion < 0 ? 0 : prev_completion);
	else
		f->chunk = json_array_size(ids) > 0 || (!ids && json_string_length(t) > 0);
	json_t *fr = json_object_get(json_object_get(root, "meta_info"), "finish_reason");
	if (fr && !json_is_null(fr)) {
		f->final = true;
		if (json_string_length(t) > 0)
			f->text = t;
	}
}
