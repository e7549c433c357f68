/* llmread.c - the readers of the OpenAI Responses and Anthropic Messages
 * events and answers (llmread.h). Every member is checked for its type;
 * anything unexpected is skipped, never trusted. */
#include <string.h>

#include "llmread.h"

static int64_t count(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (!json_is_integer(v))
		return -1;
	json_int_t n = json_integer_value(v);
	return n >= 0 && n <= INT32_MAX ? (int64_t)n : -1;
}

static bool nonempty(json_t *v)
{
	return json_is_string(v) && json_string_length(v) > 0;
}

static bool is(const char *type, const char *want)
{
	return type && strcmp(type, want) == 0;
}

/* The message of an error object ({"message":...}), or NULL. */
static const char *error_message(json_t *e)
{
	return json_is_object(e) ? json_string_value(json_object_get(e, "message")) : NULL;
}

/* A Responses usage object: input_tokens, output_tokens,
 * output_tokens_details.reasoning_tokens. */
static void responses_usage(json_t *u, struct llm_event *ev)
{
	if (!json_is_object(u))
		return;
	ev->prompt_tokens = count(u, "input_tokens");
	ev->completion_tokens = count(u, "output_tokens");
	ev->reasoning_tokens =
	    count(json_object_get(u, "output_tokens_details"), "reasoning_tokens");
}

/* A Messages usage object: input_tokens plus the cached ones
 * (cache_creation_input_tokens, cache_read_input_tokens) as the input,
 * output_tokens. */
static void messages_usage(json_t *u, struct llm_event *ev)
{
	if (!json_is_object(u))
		return;
	int64_t in = count(u, "input_tokens");
	if (in >= 0) {
		int64_t cc = count(u, "cache_creation_input_tokens");
		int64_t cr = count(u, "cache_read_input_tokens");
		in += (cc > 0 ? cc : 0) + (cr > 0 ? cr : 0);
		ev->prompt_tokens = in <= INT32_MAX ? in : INT32_MAX;
	}
	int64_t out = count(u, "output_tokens");
	if (out >= 0)
		ev->completion_tokens = out;
}

static void clear(struct llm_event *ev)
{
	memset(ev, 0, sizeof *ev);
	ev->prompt_tokens = ev->completion_tokens = ev->reasoning_tokens = -1;
}

static void responses_event(const char *type, json_t *j, struct llm_event *ev)
{
	if (is(type, "response.output_text.delta")) {
		json_t *d = json_object_get(j, "delta");
		if (nonempty(d)) {
			ev->content = true;
			ev->text = d;
		}
	} else if (is(type, "response.reasoning_summary_text.delta") ||
	           is(type, "response.reasoning_text.delta")) {
		json_t *d = json_object_get(j, "delta");
		if (nonempty(d)) {
			ev->reasoning = true;
			ev->text = d;
		}
	} else if (is(type, "response.completed") || is(type, "response.incomplete")) {
		responses_usage(json_object_get(json_object_get(j, "response"), "usage"), ev);
		ev->final = true;
	} else if (is(type, "response.failed")) {
		ev->failed = true;
		ev->message =
		    error_message(json_object_get(json_object_get(j, "response"), "error"));
	} else if (is(type, "error")) {
		ev->failed = true;
		ev->message = json_string_value(json_object_get(j, "message"));
		if (!ev->message)
			ev->message = error_message(json_object_get(j, "error"));
	}
}

static void messages_event(const char *type, json_t *j, struct llm_event *ev)
{
	if (is(type, "content_block_delta")) {
		json_t *d = json_object_get(j, "delta");
		const char *dt = json_string_value(json_object_get(d, "type"));
		if (is(dt, "text_delta") && nonempty(json_object_get(d, "text"))) {
			ev->content = true;
			ev->text = json_object_get(d, "text");
		} else if (is(dt, "thinking_delta") && nonempty(json_object_get(d, "thinking"))) {
			ev->reasoning = true;
			ev->text = json_object_get(d, "thinking");
		}
	} else if (is(type, "message_start")) {
		messages_usage(json_object_get(json_object_get(j, "message"), "usage"), ev);
		ev->completion_tokens = -1; /* (the start's count is a placeholder) */
	} else if (is(type, "message_delta")) {
		messages_usage(json_object_get(j, "usage"), ev);
	} else if (is(type, "message_stop")) {
		ev->final = true;
	} else if (is(type, "error")) {
		ev->failed = true;
		ev->message = error_message(json_object_get(j, "error"));
	}
}

void llm_read_event(bool messages, const char *name, json_t *j, struct llm_event *ev)
{
	clear(ev);
	const char *type = json_string_value(json_object_get(j, "type"));
	if (!type && name && strcmp(name, "message") != 0)
		type = name;
	if (messages)
		messages_event(type, j, ev);
	else
		responses_event(type, j, ev);
}

/* The texts of one Responses output item: a message's output_text parts,
 * a reasoning item's summary (and content) texts. */
static void responses_item(json_t *item, struct llm_event *ev,
                           void (*piece)(void *ud, json_t *text, bool reasoning), void *ud)
{
	const char *type = json_string_value(json_object_get(item, "type"));
	bool reasoning = is(type, "reasoning");
	if (!reasoning && !is(type, "message"))
		return;
	const char *lists[2] = {reasoning ? "summary" : "content", reasoning ? "content" : NULL};
	for (int l = 0; l < 2 && lists[l]; l++) {
		json_t *parts = json_object_get(item, lists[l]);
		size_t i;
		json_t *p;
		json_array_foreach(parts, i, p)
		{
			const char *pt = json_string_value(json_object_get(p, "type"));
			json_t *t = json_object_get(p, "text");
			if (!nonempty(t))
				continue;
			if (reasoning ? (is(pt, "summary_text") || is(pt, "reasoning_text"))
			              : is(pt, "output_text")) {
				piece(ud, t, reasoning);
				if (reasoning)
					ev->reasoning = true;
				else
					ev->content = true;
			}
		}
	}
}

int llm_read_answer(bool messages, json_t *j, struct llm_event *ev,
                    void (*piece)(void *ud, json_t *text, bool reasoning), void *ud,
                    const char **msg)
{
	clear(ev);
	if (!json_is_object(j)) {
		*msg = "response body is not a JSON object";
		return -1;
	}
	const char *type = json_string_value(json_object_get(j, messages ? "type" : "status"));
	if (messages ? is(type, "error") : is(type, "failed")) {
		ev->failed = true;
		ev->message = error_message(json_object_get(j, "error"));
		*msg = ev->message ? ev->message : "error answer";
		return -1;
	}
	json_t *list = json_object_get(j, messages ? "content" : "output");
	if (!json_is_array(list)) {
		*msg = messages ? "content is not an array" : "output is not an array";
		return -1;
	}
	size_t i;
	json_t *item;
	json_array_foreach(list, i, item)
	{
		if (!messages) {
			responses_item(item, ev, piece, ud);
			continue;
		}
		const char *bt = json_string_value(json_object_get(item, "type"));
		json_t *t = is(bt, "text")       ? json_object_get(item, "text")
		            : is(bt, "thinking") ? json_object_get(item, "thinking")
		                                 : NULL;
		if (nonempty(t)) {
			bool reasoning = is(bt, "thinking");
			piece(ud, t, reasoning);
			if (reasoning)
				ev->reasoning = true;
			else
				ev->content = true;
		}
	}
	json_t *u = json_object_get(j, "usage");
	if (messages)
		messages_usage(u, ev);
	else
		responses_usage(u, ev);
	return 0;
}
