/* ep_llm.c - the OpenAI Responses (/v1/responses) and Anthropic Messages
 * (/v1/messages) endpoint handlers (ephandler.h): a conversation's turns
 * as input items or messages, the shared system prompt as Responses'
 * "instructions" or Messages' top-level "system"; typed stream events and
 * whole answers read by llmread.c (docs/metrics.md, "Per endpoint"). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ephandler.h"
#include "hrlimits.h"
#include "llmread.h"
#include "record.h"
#include "reqpart.h"
#include "request.h"
#include "util.h"

struct llm_cfg {
	bool messages;    /* Anthropic Messages, else OpenAI Responses */
	bool with_system; /* extra_body does not set the system prompt's member */
};

static int llm_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	bool messages = s->target.endpoint == SPEC_EP_MESSAGES;
	json_t *extra = s->target.extra_body;
	struct llm_cfg *lc = xcalloc(1, sizeof *lc);
	lc->messages = messages;
	lc->with_system = !json_object_get(extra, messages ? "system" : "instructions");
	c->ep = lc;
	c->with_prompt = !json_object_get(extra, messages ? "messages" : "input");
	c->with_max_tokens = !json_object_get(extra, messages ? "max_tokens" : "max_output_tokens");
	c->sends_osl = c->with_max_tokens;

	/* model and stream, with extra_body merged over them, once */
	json_t *fixed = json_object();
	if (!fixed)
		xalloc_die();
	json_object_set_new(fixed, "model", json_string(s->target.model));
	json_object_set_new(fixed, "stream", json_boolean(s->target.stream));
	if (json_is_object(extra) && json_object_update(fixed, extra) < 0) {
		json_decref(fixed);
		return errf(err, "target.extra_body cannot be merged");
	}
	char *dump = json_dumps(fixed, JSON_COMPACT);
	if (!dump || dump[0] != '{' || dump[1] == '}') {
		free(dump);
		json_decref(fixed);
		return errf(err, "cannot serialise the request body");
	}
	c->tail_members = fixed; /* for a dataset entry's extra (rq_add_tail) */
	c->body_tail = xstrdup(dump + 1);
	c->body_tail_len = strlen(c->body_tail);
	free(dump);
	return 0;
}

static void llm_cfg_release(struct req_cfg *c)
{
	free(c->ep);
	c->ep = NULL;
}

/* The history (chat message fragments, see req_params) split into the
 * shared system prompt's text (JSON-escaped; the first fragment when it is
 * a system message) and the turns after it. */
static void split_system(const struct dynbuf *h, const char **sys, size_t *sys_len,
                         const char **rest, size_t *rest_len)
{
	static const char pre[] = "{\"role\":\"system\",\"content\":\"";
	const size_t pl = sizeof pre - 1;
	*sys = NULL;
	*sys_len = 0;
	*rest = h && h->len ? h->data : "";
	*rest_len = h ? h->len : 0;
	if (*rest_len < pl || memcmp(*rest, pre, pl) != 0)
		return;
	size_t i = pl;
	while (i < h->len && h->data[i] != '"')
		i += h->data[i] == '\\' ? 2 : 1;
	if (i + 3 > h->len || memcmp(h->data + i, "\"},", 3) != 0)
		return; /* (not written by run.c: sent as it is) */
	*sys = h->data + pl;
	*sys_len = i - pl;
	*rest = h->data + i + 3;
	*rest_len = h->len - i - 3;
}

/* The members before the tail: system prompt, turns and prompt, output
 * length. */
static int llm_members(struct req *r, const struct req_params *p, bool with_system,
                       bool with_max, const char *max_key)
{
	const struct req_cfg *c = r->cfg;
	const struct llm_cfg *lc = c->ep;
	struct dynbuf *b = &r->body;
	const char *sys, *rest;
	size_t sys_len, rest_len;

	if (dynbuf_add(b, "{", 1) < 0)
		return -1;
	if (c->with_prompt) {
		split_system(p->history, &sys, &sys_len, &rest, &rest_len);
		if (sys && with_system &&
		    (dynbuf_addstr(b, lc->messages ? "\"system\":\"" : "\"instructions\":\"") < 0 ||
		     dynbuf_add(b, sys, sys_len) < 0 || dynbuf_addstr(b, "\",") < 0))
			return -1;
		if (dynbuf_addstr(b, lc->messages ? "\"messages\":[" : "\"input\":[") < 0 ||
		    (rest_len && dynbuf_add(b, rest, rest_len) < 0))
			return -1;
		r->user_off = b->len;
		if (dynbuf_addstr(b, "{\"role\":\"user\",\"content\":\"") < 0 ||
		    rq_add_prompt(r, p) < 0 || dynbuf_addstr(b, "\"}") < 0)
			return -1;
		r->user_len = b->len - r->user_off;
		if (dynbuf_addstr(b, "],") < 0)
			return -1;
	}
	if (with_max && rq_add_count(b, max_key, r->requested_osl) < 0)
		return -1;
	return 0;
}

/* Responses: {"instructions":SYS,"input":[turns,{"role":"user","content":P}],
 * "max_output_tokens":N,"model":...,"stream":...}; Messages the same with
 * "system", "messages" and "max_tokens". */
static int llm_body(struct req *r, const struct req_params *p)
{
	const struct req_cfg *c = r->cfg;
	const struct llm_cfg *lc = c->ep;

	/* a dataset entry's extra wins over every member but the prompt and
	 * streaming, as for chat (ep_openai.c); its own system prompt or
	 * output length replaces the run's */
	json_t *extra = p->extra ? json_loadb(p->extra, p->extra_len, 0, NULL) : NULL;
	if (!json_is_object(extra)) {
		json_decref(extra);
		extra = NULL;
	}
	if (extra && c->with_prompt)
		json_object_del(extra, lc->messages ? "messages" : "input");
	json_object_del(extra, "stream");
	const char *max_key = lc->messages ? "max_tokens" : "max_output_tokens";
	bool with_max = c->with_max_tokens && !json_object_get(extra, max_key);
	bool with_system = lc->with_system &&
	                   !json_object_get(extra, lc->messages ? "system" : "instructions");
	r->osl_sent = with_max;
	int rc = llm_members(r, p, with_system, with_max, max_key) < 0 || rq_add_tail(r, extra) < 0
	             ? -1
	             : 0;
	json_decref(extra);
	return rc;
}


/* An error event or answer: the request fails with the server's message;
 * no_content when nothing came before it, else malformed_stream (the
 * answer is cut short). */
static void server_error(struct req *r, const char *what, const char *message)
{
	rq_fail(r, r->rec.n_chunks ? HR_ERR_MALFORMED_STREAM : HR_ERR_NO_CONTENT, "%s: %s", what,
	        message ? message : "(no message)");
}

static int llm_event(struct req *r, const char *name, json_t *j, struct chunk_info *ci)
{
	const struct llm_cfg *lc = r->cfg->ep;
	struct llm_event ev;
	llm_read_event(lc->messages, name, j, &ev);
	memset(ci, 0, sizeof *ci);
	ci->prompt_tokens = ev.prompt_tokens;
	ci->completion_tokens = ev.completion_tokens;
	ci->reasoning_tokens = ev.reasoning_tokens;
	if (ev.failed) {
		server_error(r, "error event", ev.message);
		return EV_FAIL;
	}
	ci->content = ev.content;
	ci->reasoning = ev.reasoning;
	ci->final = ev.final;
	if (ev.content)
		rq_capture_json(r, ev.text);
	if (ev.content || ev.reasoning)
		rq_keep_output(r, ev.text);
	return 0;
}

static void answer_piece(void *ud, json_t *text, bool reasoning)
{
	struct req *r = ud;
	if (!reasoning)
		rq_capture_json(r, text);
	rq_keep_output(r, text);
}

static int llm_answer(struct req *r, json_t *j, const json_error_t *je, char **msg)
{
	const struct llm_cfg *lc = r->cfg->ep;
	struct llm_event ev;
	const char *m = NULL;
	if (!j) {
		*msg = xasprintf("response body is not JSON: %s", je->text);
		return HR_ERR_MALFORMED_STREAM;
	}
	if (llm_read_answer(lc->messages, j, &ev, answer_piece, r, &m) < 0) {
		*msg = ev.failed ? xasprintf("error answer: %s", m) : xstrdup(m);
		return ev.failed ? HR_ERR_NO_CONTENT : HR_ERR_MALFORMED_STREAM;
	}
	if (ev.prompt_tokens >= 0)
		r->u_prompt = ev.prompt_tokens;
	if (ev.completion_tokens >= 0)
		r->u_completion = ev.completion_tokens;
	if (ev.reasoning_tokens >= 0)
		r->u_reasoning = ev.reasoning_tokens;
	if (!ev.content && !ev.reasoning) {
		*msg = xstrdup("no output text in the answer");
		return HR_ERR_NO_CONTENT;
	}
	return HR_ERR_NONE;
}

const struct ep_handler ep_responses = {
	.endpoint = SPEC_EP_RESPONSES,
	.content_type = "application/json",
	.reasoning_chunks = true,
	.end_event = true,
	.history = EP_HIST_CHAT,
	.cfg_init = llm_cfg,
	.cfg_release = llm_cfg_release,
	.body = llm_body,
	.event = llm_event,
	.answer = llm_answer,
};

static const char *const messages_headers[] = {"anthropic-version: 2023-06-01", NULL};

const struct ep_handler ep_messages = {
	.endpoint = SPEC_EP_MESSAGES,
	.content_type = "application/json",
	.key_header = "x-api-key",
	.headers = messages_headers,
	.reasoning_chunks = true,
	.end_event = true,
	.history = EP_HIST_CHAT,
	.cfg_init = llm_cfg,
	.cfg_release = llm_cfg_release,
	.body = llm_body,
	.event = llm_event,
	.answer = llm_answer,
};
