/* ep_openai.c - the OpenAI chat (/v1/chat/completions) and completions
 * (/v1/completions) endpoint handlers (ephandler.h), and vLLM's chat
 * embeddings (/v1/embeddings with chat messages, its answer an embeddings
 * answer read by endpoint.c, one piece): a body built around a
 * tail serialised once per run (chat's user message a content array with
 * the run's synthetic pictures and clips when workload.images or
 * workload.audio asks, ep_media.h); streamed chunks read by chunkscan's hand
 * scanner (no allocation per chunk) and by jansson when it is not certain;
 * whole answers by jansson. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chunkscan.h"
#include "ep_media.h"
#include "ephandler.h"
#include "hrlimits.h"
#include "record.h"
#include "reqpart.h"
#include "request.h"
#include "util.h"

/* The members every body has, after extra_body was merged over them,
 * serialised once; a request body is "{" + per-request members + this. */
static int openai_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	json_t *fixed = json_object();
	json_t *extra = s->target.extra_body;
	if (!fixed)
		xalloc_die();
	json_object_set_new(fixed, "model", json_string(s->target.model));
	json_object_set_new(fixed, "stream", json_boolean(s->target.stream));
	if (s->workload.ignore_eos)
		json_object_set_new(fixed, "ignore_eos", json_true());
	if (s->target.stream) {
		json_t *so = json_object();
		json_object_set_new(so, "include_usage", json_true());
		json_object_set_new(fixed, "stream_options", so);
	}
	if (json_is_object(extra) && json_object_update(fixed, extra) < 0) {
		json_decref(fixed);
		return errf(err, "target.extra_body cannot be merged");
	}
	const char *prompt_key = s->target.endpoint == SPEC_EP_CHAT ? "messages" : "prompt";
	c->with_prompt = !json_object_get(extra, prompt_key);
	c->max_tokens_key = s->target.max_tokens_field == SPEC_MAXTOK_COMPLETION
	                        ? "max_completion_tokens"
	                        : "max_tokens";
	/* extra_body setting the output length (by either name) sets it alone */
	c->with_max_tokens = !json_object_get(extra, "max_tokens") &&
	                     !json_object_get(extra, "max_completion_tokens");
	c->min_tokens = s->workload.ignore_eos && c->with_max_tokens &&
	                !json_object_get(extra, "min_tokens");
	char *dump = json_dumps(fixed, JSON_COMPACT);
	if (!dump || dump[0] != '{' || dump[1] == '}') {
		free(dump);
		json_decref(fixed);
		return errf(err, "cannot serialise the request body");
	}
	c->body_tail = xstrdup(dump + 1);
	c->body_tail_len = strlen(c->body_tail);
	c->tail_members = fixed;
	free(dump);
	c->sends_osl = c->with_max_tokens;
	if (s->target.endpoint == SPEC_EP_CHAT && s->workload.kind == SPEC_WL_DATASET)
		c->body_extra = HR_MAX_DATASET_LINE; /* an entry's media, as given */
	if (s->target.endpoint == SPEC_EP_CHAT && c->with_prompt) {
		int failed;
		struct epm_pool *pool = epm_pool_new(s, EPM_CHAT, err, &failed);
		if (failed)
			return -1;
		c->ep = pool;
		if (pool) /* the parts and the content array's own bytes */
			c->body_extra += pool->max_parts_len + 64;
	}
	return 0;
}

static void openai_cfg_release(struct req_cfg *c)
{
	epm_pool_free(c->ep);
	c->ep = NULL;
}

/* The prompt member of a chat or completions body (and its ','). */
static int build_messages(struct req *r, const struct req_params *p, const struct dynbuf *h)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	if (c->with_prompt) {
		/* prompt_synthetic writes JSON-safe text (see prompt.h), the
		 * history is escaped already */
		bool chat = c->endpoint == SPEC_EP_CHAT || c->endpoint == SPEC_EP_CHAT_EMBEDDINGS;
		if (dynbuf_addstr(b, chat ? "\"messages\":[" : "\"prompt\":\"") < 0 ||
		    (h && h->len && dynbuf_add(b, h->data, h->len) < 0))
			return -1;
		r->user_off = b->len;
		const struct epm_pool *media = chat ? c->ep : NULL;
		const char *own = chat ? p->media : NULL; /* a dataset entry's, as given */
		if (media || own) { /* a content array: the text, the pictures and clips */
			if (dynbuf_addstr(b, "{\"role\":\"user\",\"content\":[{\"type\":\"text\","
			                     "\"text\":\"") < 0 ||
			    rq_add_prompt(r, p) < 0 || dynbuf_addstr(b, "\"}") < 0 ||
			    (own && dynbuf_add(b, own, p->media_len) < 0) ||
			    (media && epm_add_parts(media, p->req_id, b, &r->rec.images_in,
			                            &r->rec.audio_in, &r->rec.media_bytes_in) < 0) ||
			    dynbuf_addstr(b, "]}") < 0)
				return -1;
			if (own && media) {
				int64_t sum = (int64_t)r->rec.media_bytes_in + p->media_bytes;
				r->rec.images_in += p->media_images;
				r->rec.audio_in += p->media_audio;
				r->rec.media_bytes_in = sum > INT32_MAX ? INT32_MAX : (int32_t)sum;
			} else if (own) {
				r->rec.images_in = p->media_images;
				r->rec.audio_in = p->media_audio;
				r->rec.media_bytes_in = p->media_bytes;
			}
		} else if ((chat && dynbuf_addstr(b, "{\"role\":\"user\",\"content\":\"") < 0) ||
		           rq_add_prompt(r, p) < 0 || (chat && dynbuf_addstr(b, "\"}") < 0)) {
			return -1;
		}
		r->user_len = b->len - r->user_off;
		if (dynbuf_addstr(b, chat ? "]," : "\",") < 0)
			return -1;
	}
	return 0;
}


/* The body of a chat or completions request. */
static int openai_body(struct req *r, const struct req_params *p)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	const struct dynbuf *h = p->history;

	/* a dataset entry's extra wins over every member but the prompt and
	 * streaming (how the answer is read is the run's); when it sets the
	 * output length, min_tokens is its business too */
	json_t *extra = p->extra ? json_loadb(p->extra, p->extra_len, 0, NULL) : NULL;
	if (!json_is_object(extra)) {
		json_decref(extra);
		extra = NULL;
	}
	const char *prompt_key = c->endpoint == SPEC_EP_CHAT ? "messages" : "prompt";
	if (extra && c->with_prompt)
		json_object_del(extra, prompt_key);
	json_object_del(extra, "stream");
	json_object_del(extra, "stream_options");
	bool own_max = json_object_get(extra, "max_tokens") ||
	               json_object_get(extra, "max_completion_tokens");
	bool with_max = c->with_max_tokens && !own_max;
	bool with_min = c->min_tokens && !own_max && !json_object_get(extra, "min_tokens");
	r->osl_sent = with_max;
	int rc = dynbuf_add(b, "{", 1) < 0 || build_messages(r, p, h) < 0 ||
	         (with_max && rq_add_count(b, c->max_tokens_key, r->requested_osl) < 0) ||
	         (with_min && rq_add_count(b, "min_tokens", r->requested_osl) < 0) ||
	         rq_add_tail(r, extra) < 0
	             ? -1
	             : 0;
	json_decref(extra);
	return rc;
}

/* The reference reader: one parsed streamed chunk (a JSON object). */
static int openai_event(struct req *r, const char *name, json_t *j, struct chunk_info *ci)
{
	(void)name;
	json_t *choices = json_object_get(j, "choices");

	ci->content = ci->reasoning = ci->final = false;
	ci->text = NULL;
	ci->text_len = 0;
	ci->prompt_tokens = ci->completion_tokens = ci->reasoning_tokens = -1;
	if (json_is_array(choices) && json_array_size(choices) > 0) {
		json_t *c0 = json_array_get(choices, 0);
		json_t *src = r->cfg->endpoint == SPEC_EP_CHAT ? json_object_get(c0, "delta") : c0;
		const char *ckey = r->cfg->endpoint == SPEC_EP_CHAT ? "content" : "text";
		json_t *rc = json_object_get(src, "reasoning_content");
		if (!rq_nonempty_str(rc))
			rc = json_object_get(src, "reasoning");
		if (rq_nonempty_str(json_object_get(src, ckey))) {
			ci->content = true;
			rq_capture_json(r, json_object_get(src, ckey));
			rq_keep_output(r, rc); /* (a chunk with both: the reasoning came first) */
			rq_keep_output(r, json_object_get(src, ckey));
		} else if (rq_nonempty_str(rc)) {
			ci->reasoning = true;
			rq_keep_output(r, rc);
		}
	}
	json_t *usage = json_object_get(j, "usage");
	if (json_is_object(usage)) {
		ci->prompt_tokens = rq_get_count(usage, "prompt_tokens");
		ci->completion_tokens = rq_get_count(usage, "completion_tokens");
		json_t *d = json_object_get(usage, "completion_tokens_details");
		if (json_is_object(d))
			ci->reasoning_tokens = rq_get_count(d, "reasoning_tokens");
	}
	rq_take_stream_error(r, json_object_get(j, "error"));
	return 0;
}

/* A whole chat or completions answer (choices[0]; usage). */
static int openai_answer(struct req *r, json_t *j, const json_error_t *je, char **msg)
{
	int err = HR_ERR_NONE;

	if (!json_is_object(j)) {
		*msg = xasprintf("response body is not a JSON object%s%s", j ? "" : ": ",
		                 j ? "" : je->text);
		return HR_ERR_MALFORMED_STREAM;
	}
	json_t *usage = json_object_get(j, "usage");
	if (json_is_object(usage))
		rq_take_usage(r, usage);
	json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
	json_t *src = r->cfg->endpoint == SPEC_EP_CHAT ? json_object_get(c0, "message") : c0;
	json_t *content =
	    json_object_get(src, r->cfg->endpoint == SPEC_EP_CHAT ? "content" : "text");
	json_t *rc = json_object_get(src, "reasoning_content");
	if (!json_is_string(rc))
		rc = json_object_get(src, "reasoning");
	if (!json_is_string(content) && !json_is_string(rc)) {
		*msg = xstrdup(r->cfg->endpoint == SPEC_EP_CHAT
		                   ? "choices[0].message.content is not a string"
		                   : "choices[0].text is not a string");
		err = HR_ERR_MALFORMED_STREAM;
	} else if (!rq_nonempty_str(content) && !rq_nonempty_str(rc)) {
		*msg = xstrdup("empty completion");
		err = HR_ERR_NO_CONTENT;
	} else {
		rq_capture_json(r, content);
		rq_keep_output(r, rc);
		rq_keep_output(r, content);
	}
	return err;
}

/* Chat embeddings: the members after the messages ("model",
 * "encoding_format" float, extra_body merged over them), serialised once;
 * the user message as chat writes it, with the run's pictures. */
static int chatemb_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	json_t *fixed = json_object();
	json_t *extra = s->target.extra_body;
	if (!fixed)
		xalloc_die();
	json_object_set_new(fixed, "model", json_string(s->target.model));
	json_object_set_new(fixed, "encoding_format", json_string("float"));
	if (json_is_object(extra) && json_object_update(fixed, extra) < 0) {
		json_decref(fixed);
		return errf(err, "target.extra_body cannot be merged");
	}
	char *dump = json_dumps(fixed, JSON_COMPACT);
	json_decref(fixed);
	if (!dump || dump[0] != '{' || dump[1] == '}') {
		free(dump);
		return errf(err, "cannot serialise the request body");
	}
	c->body_tail = xstrdup(dump + 1);
	c->body_tail_len = strlen(c->body_tail);
	free(dump);
	c->with_prompt = !json_object_get(extra, "messages");
	c->items = 1; /* one embedding for the conversation */
	c->sends_osl = false;
	if (s->workload.kind == SPEC_WL_DATASET)
		c->body_extra = HR_MAX_DATASET_LINE; /* an entry's media, as given */
	if (c->with_prompt) {
		int failed;
		struct epm_pool *pool = epm_pool_new(s, EPM_CHAT, err, &failed);
		if (failed)
			return -1;
		c->ep = pool;
		if (pool)
			c->body_extra += pool->max_parts_len + 64;
	}
	return 0;
}

static int chatemb_body(struct req *r, const struct req_params *p)
{
	struct dynbuf *b = &r->body;
	r->osl_sent = false;
	if (dynbuf_add(b, "{", 1) < 0 || build_messages(r, p, NULL) < 0)
		return -1;
	return dynbuf_add(b, r->cfg->body_tail, r->cfg->body_tail_len);
}

static int chat_scan(const char *data, size_t len, struct chunk_info *ci,
                     struct chunkscan_memo *m)
{
	return chunkscan(data, len, SPEC_EP_CHAT, ci, m);
}

static int completions_scan(const char *data, size_t len, struct chunk_info *ci,
                            struct chunkscan_memo *m)
{
	return chunkscan(data, len, SPEC_EP_COMPLETIONS, ci, m);
}

const struct ep_handler ep_chat = {
	.endpoint = SPEC_EP_CHAT,
	.content_type = "application/json",
	.reasoning_chunks = true,
	.history = EP_HIST_CHAT,
	.cfg_init = openai_cfg,
	.cfg_release = openai_cfg_release,
	.body = openai_body,
	.scan = chat_scan,
	.event = openai_event,
	.answer = openai_answer,
};

const struct ep_handler ep_completions = {
	.endpoint = SPEC_EP_COMPLETIONS,
	.content_type = "application/json",
	.reasoning_chunks = true,
	.history = EP_HIST_TEXT,
	.cfg_init = openai_cfg,
	.body = openai_body,
	.scan = completions_scan,
	.event = openai_event,
	.answer = openai_answer,
};

const struct ep_handler ep_chat_embeddings = {
	.endpoint = SPEC_EP_CHAT_EMBEDDINGS,
	.content_type = "application/json",
	.one_piece = true,
	.cfg_init = chatemb_cfg,
	.cfg_release = openai_cfg_release,
	.body = chatemb_body,
	.answer = rq_ep_answer,
};
