/* ep_pool.c - the embeddings (OpenAI /v1/embeddings) and rankings (NVIDIA
 * NIM /v1/ranking, Cohere /v2/rerank, Hugging Face TEI /rerank) endpoint
 * handlers (ephandler.h): a query or inputs and the passages drawn per
 * request; the answer, read by endpoint.c, is timed as one chunk and
 * generates nothing. */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ephandler.h"
#include "reqpart.h"
#include "request.h"

static int pool_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	json_t *extra = s->target.extra_body;
	int ep = s->target.endpoint;
	const char *prompt_key = "query", *items_key = NULL;

	switch (ep) {
	case SPEC_EP_EMBEDDINGS:
		prompt_key = "input";
		c->items = s->workload.batch_size;
		break;
	case SPEC_EP_RANKINGS_NIM:
		items_key = "passages";
		c->items = s->workload.passages;
		break;
	case SPEC_EP_RANKINGS_COHERE:
		items_key = "documents";
		c->items = s->workload.passages;
		break;
	case SPEC_EP_RANKINGS_TEI:
		items_key = "texts";
		c->items = s->workload.passages;
		break;
	default:
		break;
	}
	c->with_prompt = !json_object_get(extra, prompt_key);
	c->with_items = !items_key || !json_object_get(extra, items_key);
	if (!c->with_items || (ep == SPEC_EP_EMBEDDINGS && !c->with_prompt))
		c->items = 0; /* the extra body's, not counted here */
	/* TEI serves one model and takes no "model" member */
	return rq_cfg_tail(c, s, ep != SPEC_EP_RANKINGS_TEI, err);
}

/* Embeddings and rankings (docs/worker.md, "Endpoints"). The input length
 * requested becomes what the server reads: embeddings the inputs' lengths
 * summed, rankings the query's once per passage plus the passages' (a
 * cross-encoder reads query-passage pairs). */
static int pool_body(struct req *r, const struct req_params *p)
{
	const struct req_cfg *c = r->cfg;
	struct dynbuf *b = &r->body;
	int ep = c->endpoint;
	bool sep = false; /* a member was written */
	int64_t q = r->requested_isl, sum = 0;

	if (dynbuf_add(b, "{", 1) < 0)
		return -1;
	bool emb = ep == SPEC_EP_EMBEDDINGS, batch = emb && c->items > 1;
	if (c->with_prompt) {
		const char *open = emb ? (batch ? "\"input\":[\"" : "\"input\":\"")
		                   : ep == SPEC_EP_RANKINGS_NIM ? "\"query\":{\"text\":\""
		                                                : "\"query\":\"";
		const char *close = ep == SPEC_EP_RANKINGS_NIM ? "\"}" : "\"";
		if (dynbuf_addstr(b, open) < 0 || rq_add_user_text(r, p) < 0 ||
		    dynbuf_addstr(b, close) < 0)
			return -1;
		for (int k = 1; batch && k < c->items; k++)
			if (rq_add_item(r, p, k, ",\"", "\"", &sum) < 0)
				return -1;
		if (batch && dynbuf_add(b, "]", 1) < 0)
			return -1;
		sep = true;
	}
	if (!emb && c->with_items) {
		const char *open = ep == SPEC_EP_RANKINGS_NIM      ? "\"passages\":["
		                   : ep == SPEC_EP_RANKINGS_COHERE ? "\"documents\":["
		                                                   : "\"texts\":[";
		bool nim = ep == SPEC_EP_RANKINGS_NIM;
		if ((sep && dynbuf_add(b, ",", 1) < 0) || dynbuf_addstr(b, open) < 0)
			return -1;
		for (int k = 1; k <= c->items; k++)
			if (rq_add_item(r, p, k,
			             nim ? (k > 1 ? ",{\"text\":\"" : "{\"text\":\"")
			                 : (k > 1 ? ",\"" : "\""),
			             nim ? "\"}" : "\"", &sum) < 0)
				return -1;
		if (dynbuf_add(b, "]", 1) < 0)
			return -1;
		sep = true;
	}
	if (!c->with_prompt || !c->with_items || q < 0)
		r->requested_isl = -1; /* not all of it is ours to count */
	else if ((sum += emb ? q : q * c->items) > INT32_MAX)
		r->requested_isl = INT32_MAX;
	else
		r->requested_isl = (int)sum;
	return rq_end_body(r, sep);
}

const struct ep_handler ep_embeddings = {
	.endpoint = SPEC_EP_EMBEDDINGS,
	.content_type = "application/json",
	.one_piece = true,
	.cfg_init = pool_cfg,
	.body = pool_body,
	.answer = rq_ep_answer,
};

const struct ep_handler ep_rankings_nim = {
	.endpoint = SPEC_EP_RANKINGS_NIM,
	.content_type = "application/json",
	.one_piece = true,
	.cfg_init = pool_cfg,
	.body = pool_body,
	.answer = rq_ep_answer,
};

const struct ep_handler ep_rankings_cohere = {
	.endpoint = SPEC_EP_RANKINGS_COHERE,
	.content_type = "application/json",
	.one_piece = true,
	.cfg_init = pool_cfg,
	.body = pool_body,
	.answer = rq_ep_answer,
};

const struct ep_handler ep_rankings_tei = {
	.endpoint = SPEC_EP_RANKINGS_TEI,
	.content_type = "application/json",
	.one_piece = true,
	.cfg_init = pool_cfg,
	.body = pool_body,
	.answer = rq_ep_answer,
};
