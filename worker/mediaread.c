/* mediaread.c - readers of the audio transcription answers and events and
 * of the image answers (mediaread.h), pure functions of a parsed JSON
 * value. */
#include "mediaread.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "record.h"

static void facts_init(struct mr_facts *f)
{
	memset(f, 0, sizeof *f);
	f->in_tokens = f->out_tokens = -1;
}

static int64_t count(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_integer(v))
		return -1;
	json_int_t n = json_integer_value(v);
	return n >= 0 && n <= INT32_MAX ? (int64_t)n : -1;
}

/* usage: OpenAI's token usage of transcriptions, or chat-style names. */
static void take_usage(json_t *u, struct mr_facts *f)
{
	if (!json_is_object(u))
		return;
	f->in_tokens = count(u, "input_tokens");
	if (f->in_tokens < 0)
		f->in_tokens = count(u, "prompt_tokens");
	f->out_tokens = count(u, "output_tokens");
	if (f->out_tokens < 0)
		f->out_tokens = count(u, "completion_tokens");
}

static void take_error(json_t *j, struct mr_facts *f)
{
	json_t *e = json_object_get(j, "error");
	f->error = e && !json_is_null(e) ? e : NULL;
}

static void fail(struct mr_facts *f, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* f's error: err with its message. */
static void fail(struct mr_facts *f, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	f->err = err;
	vsnprintf(f->msg, sizeof f->msg, fmt, ap);
	va_end(ap);
}

/* Every reader's start: f reset, then j must be an object (else
 * malformed: "<what> is not a JSON object"), whose usage is taken.
 * Returns whether j is an object. */
static bool begin(json_t *j, const char *what, struct mr_facts *f)
{
	facts_init(f);
	if (!json_is_object(j)) {
		fail(f, HR_ERR_MALFORMED_STREAM, "%s is not a JSON object", what);
		return false;
	}
	take_usage(json_object_get(j, "usage"), f);
	return true;
}

/* A stream event's type: its JSON "type" member, else its SSE name. */
static const char *event_type(json_t *j, const char *name)
{
	const char *type = json_string_value(json_object_get(j, "type"));
	return type ? type : name ? name : "";
}

void mr_transcript_event(const char *name, json_t *j, struct mr_facts *f)
{
	if (!begin(j, "stream event", f))
		return;
	take_error(j, f);
	const char *type = event_type(j, name);
	if (strcmp(type, "transcript.text.delta") == 0) {
		json_t *d = json_object_get(j, "delta");
		if (!json_is_string(d)) {
			fail(f, HR_ERR_MALFORMED_STREAM,
			     "transcript.text.delta event: 'delta' is not a string");
			return;
		}
		f->chunk = json_string_length(d) > 0;
		f->text = f->chunk ? d : NULL;
		return;
	}
	if (strcmp(type, "transcript.text.done") == 0) {
		json_t *t = json_object_get(j, "text");
		if (t && !json_is_string(t)) {
			fail(f, HR_ERR_MALFORMED_STREAM,
			     "transcript.text.done event: 'text' is not a string");
			return;
		}
		f->final = true;
		return;
	}
	json_t *choices = json_object_get(j, "choices"); /* vLLM's transcription.chunk */
	if (json_is_array(choices) && json_array_size(choices) > 0) {
		json_t *c = json_object_get(json_object_get(json_array_get(choices, 0), "delta"),
		                            "content");
		if (c && !json_is_null(c) && !json_is_string(c)) {
			fail(f, HR_ERR_MALFORMED_STREAM,
			     "transcription chunk: 'choices[0].delta.content' is not a string");
			return;
		}
		f->chunk = json_is_string(c) && json_string_length(c) > 0;
		f->text = f->chunk ? c : NULL;
	}
}

void mr_transcript_answer(json_t *j, struct mr_facts *f)
{
	if (!begin(j, "response body", f))
		return;
	json_t *t = json_object_get(j, "text");
	if (!json_is_string(t)) {
		fail(f, HR_ERR_MALFORMED_STREAM, "'text' is not a string");
		return;
	}
	if (json_string_length(t) == 0) {
		fail(f, HR_ERR_NO_CONTENT, "empty transcript");
		return;
	}
	f->chunk = true;
	f->text = t;
}

void mr_image_answer(json_t *j, struct mr_facts *f)
{
	if (!begin(j, "response body", f))
		return;
	json_t *data = json_object_get(j, "data");
	if (!json_is_array(data)) {
		fail(f, HR_ERR_MALFORMED_STREAM, "'data' is not an array");
		return;
	}
	size_t i;
	json_t *it;
	json_array_foreach(data, i, it)
	{
		json_t *b = json_object_get(it, "b64_json"), *u = json_object_get(it, "url");
		if (!(json_is_string(b) && json_string_length(b) > 0) &&
		    !(json_is_string(u) && json_string_length(u) > 0)) {
			fail(f, HR_ERR_MALFORMED_STREAM,
			     "'data[%zu]' has no non-empty 'b64_json' or 'url'", i);
			return;
		}
	}
	if (json_array_size(data) == 0) {
		fail(f, HR_ERR_NO_CONTENT, "no picture in 'data'");
		return;
	}
	f->images = json_array_size(data) > INT32_MAX ? INT32_MAX : (int)json_array_size(data);
	f->chunk = true;
}

void mr_retrieval_answer(json_t *j, struct mr_facts *f)
{
	if (!begin(j, "response body", f))
		return;
	json_t *data = json_object_get(j, "data");
	if (!json_is_array(data)) {
		fail(f, HR_ERR_MALFORMED_STREAM, "'data' is not an array");
		return;
	}
	if (json_array_size(data) == 0) {
		fail(f, HR_ERR_NO_CONTENT, "empty 'data'");
		return;
	}
	f->chunk = true;
}

void mr_image_event(const char *name, json_t *j, struct mr_facts *f)
{
	if (!begin(j, "stream event", f))
		return;
	take_error(j, f);
	const char *type = event_type(j, name);
	bool partial = strcmp(type, "image_generation.partial_image") == 0 ||
	               strcmp(type, "image_edit.partial_image") == 0;
	bool done = strcmp(type, "image_generation.completed") == 0 ||
	            strcmp(type, "image_edit.completed") == 0;
	if (!partial && !done)
		return;
	json_t *b = json_object_get(j, "b64_json");
	if (!json_is_string(b) || json_string_length(b) == 0) {
		fail(f, HR_ERR_MALFORMED_STREAM, "%s event: 'b64_json' is not a non-empty string",
		     type);
		return;
	}
	f->chunk = true;
	f->final = done;
	f->images = done;
}
