/* ep_template.c - the template endpoint handler (target.template: the
 * user's path and body; ephandler.h): the body compiled once with the
 * prompt and the output length cut out, answers and stream events read at
 * the template's dotted paths by endpoint.c. */
#include <jansson.h>
#include <stdbool.h>

#include "endpoint.h"
#include "ephandler.h"
#include "reqpart.h"
#include "request.h"
#include "util.h"

static int template_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	c->with_prompt = c->with_max_tokens = true;
	if (ep_template_compile(&c->tpl, s->target.template_body, s->target.extra_body,
	                        s->target.model, s->target.stream, err) < 0)
		return -1;
	if (ep_path_init(&c->resp_path, s->target.response_path) < 0 ||
	    ep_path_init(&c->ev_path, s->target.stream_path) < 0)
		return errf(err, "target.template: invalid response_path or stream_path");
	c->sends_osl = false;
	for (size_t i = 0; i < c->tpl.n; i++)
		c->sends_osl |= c->tpl.piece[i].slot == EP_SLOT_MAX_TOKENS;
	return 0;
}

static int template_body(struct req *r, const struct req_params *p)
{
	const struct ep_template *t = &r->cfg->tpl;
	struct dynbuf *b = &r->body;
	for (size_t i = 0; i < t->n; i++) {
		const struct ep_piece *pc = &t->piece[i];
		if (dynbuf_add(b, t->text + pc->off, pc->len) < 0 ||
		    (pc->slot == EP_SLOT_PROMPT && rq_add_user_text(r, p) < 0) ||
		    (pc->slot == EP_SLOT_MAX_TOKENS && rq_add_uint(b, r->requested_osl) < 0))
			return -1;
	}
	return 0;
}

const struct ep_handler ep_template = {
	.endpoint = SPEC_EP_TEMPLATE,
	.content_type = "application/json",
	.any_json_event = true,
	.history = EP_HIST_TEXT,
	.cfg_init = template_cfg,
	.body = template_body,
	.event = rq_ep_event,
	.answer = rq_ep_answer,
};
