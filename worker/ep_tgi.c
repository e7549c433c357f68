/* ep_tgi.c - the Hugging Face TGI endpoint handler (/generate, and
 * /generate_stream when streaming; ephandler.h): "inputs" and "parameters"
 * with the server's own counts asked for (details); token events read by
 * chunkscan first, endpoint.c's reader (jansson) the reference. */
#include <jansson.h>
#include <stdbool.h>

#include "chunkscan.h"
#include "ephandler.h"
#include "reqpart.h"
#include "request.h"

static int tgi_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	json_t *extra = s->target.extra_body;
	c->with_prompt = !json_object_get(extra, "inputs");
	c->with_items = true;
	c->with_max_tokens = !json_object_get(extra, "parameters");
	c->sends_osl = c->with_max_tokens;
	/* TGI serves one model and takes no "model" member */
	return rq_cfg_tail(c, s, false, err);
}

static int tgi_body(struct req *r, const struct req_params *p)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	bool sep = false; /* a member was written */

	if (dynbuf_add(b, "{", 1) < 0)
		return -1;
	if (c->with_prompt && (dynbuf_addstr(b, "\"inputs\":\"") < 0 ||
	                       rq_add_user_text(r, p) < 0 || dynbuf_add(b, "\"", 1) < 0))
		return -1;
	sep = c->with_prompt;
	/* details: the server's own counts (generated_tokens, and
	 * input_length in the last event of a stream) */
	if (c->with_max_tokens &&
	    ((sep && dynbuf_add(b, ",", 1) < 0) ||
	     dynbuf_addstr(b, "\"parameters\":{\"max_new_tokens\":") < 0 ||
	     rq_add_uint(b, r->requested_osl) < 0 || dynbuf_addstr(b, ",\"details\":true}") < 0))
		return -1;
	return rq_end_body(r, sep || c->with_max_tokens);
}

static int tgi_scan(const char *data, size_t len, struct chunk_info *ci, struct chunkscan_memo *m)
{
	return chunkscan(data, len, SPEC_EP_TGI, ci, m);
}

const struct ep_handler ep_tgi = {
	.endpoint = SPEC_EP_TGI,
	.content_type = "application/json",
	.history = EP_HIST_TEXT,
	.cfg_init = tgi_cfg,
	.body = tgi_body,
	.scan = tgi_scan,
	.event = rq_ep_event,
	.answer = rq_ep_answer,
};
