/* ep_image.c - the OpenAI image generation (/v1/images/generations) and
 * image edit (/v1/images/edits) endpoint handlers (ephandler.h).
 *
 * Generation: a JSON body {"prompt", "model", "response_format":
 * "b64_json", "n": 1}, target.extra_body merged over the fixed members
 * (serialised once). Edit: a multipart/form-data upload of one picture of
 * the run's pool (workload.images; field image, filename image.png or
 * image.jpg) with the fields prompt, model, response_format, n and
 * target.extra_body's members; each pool picture's file part and the
 * fields after the prompt are built once per run. Both answers are timed
 * as one piece (their arrival), with the pictures counted (images_out)
 * and the answer's bytes (bytes_out); mediaread.c reads them. A streamed
 * generation or edit (OpenAI's image_generation.partial_image events, then
 * image_generation.completed; image_edit.* for an edit) has a chunk per
 * picture event, the first
 * the first token; images_out counts the completed ones, bytes_out the
 * stream's body bytes.
 *
 * NVIDIA NIM image retrieval (/v1/infer): {"input":[{"type":"image_url",
 * "url":"data:..."},...]} with workload.images' pictures of the run's pool
 * (ep_media.c), answered whole as one piece. */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ep_media.h"
#include "ephandler.h"
#include "form.h"
#include "media.h"
#include "mediaread.h"
#include "record.h"
#include "reqpart.h"
#include "request.h"
#include "rng.h"
#include "util.h"

/* The fixed members: model, response_format, n, then extra_body over them. */
static json_t *fixed_members(const struct spec *s)
{
	json_t *o = json_object();
	if (!o)
		xalloc_die();
	json_object_set_new(o, "model", json_string(s->target.model));
	json_object_set_new(o, "response_format", json_string("b64_json"));
	json_object_set_new(o, "n", json_integer(1));
	if (s->target.stream)
		json_object_set_new(o, "stream", json_true());
	if (json_is_object(s->target.extra_body))
		json_object_update(o, s->target.extra_body);
	return o;
}

static int gen_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	json_t *o = fixed_members(s);
	c->with_prompt = !json_object_get(s->target.extra_body, "prompt");
	json_object_del(o, "prompt");
	char *dump = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!dump || dump[0] != '{') {
		free(dump);
		return errf(err, "cannot serialise the request body");
	}
	c->body_tail = xstrdup(dump + 1);
	c->body_tail_len = strlen(c->body_tail);
	free(dump);
	c->with_max_tokens = false;
	c->sends_osl = false;
	c->one_piece = !s->target.stream; /* streamed: every picture event is a chunk */
	return 0;
}

static int gen_body(struct req *r, const struct req_params *p)
{
	struct dynbuf *b = &r->body;
	r->osl_sent = false;
	if (dynbuf_add(b, "{", 1) < 0)
		return -1;
	if (r->cfg->with_prompt) {
		if (dynbuf_addstr(b, "\"prompt\":\"") < 0 || rq_add_user_text(r, p) < 0 ||
		    dynbuf_add(b, "\"", 1) < 0)
			return -1;
	} else {
		r->requested_isl = -1; /* extra_body's prompt: not counted here */
	}
	return rq_end_body(r, r->cfg->with_prompt);
}

/* A streamed generation's or edit's event: partial pictures, then the
 * completed one. */
static int gen_event(struct req *r, const char *name, json_t *j, struct chunk_info *ci)
{
	struct mr_facts f;
	mr_image_event(name, j, &f);
	int rc = rq_media_event(r, &f, ci);
	if (rc == 0 && f.chunk) /* the pictures completed (partial ones are progress) */
		r->rec.images_out = (r->rec.images_out < 0 ? 0 : r->rec.images_out) + f.images;
	return rc;
}

/* The whole answer, both endpoints. */
static int image_answer(struct req *r, json_t *j, const json_error_t *je, char **msg)
{
	struct mr_facts f;
	if (!j) {
		*msg = xasprintf("response body is not JSON: %s", je->text);
		return HR_ERR_MALFORMED_STREAM;
	}
	mr_image_answer(j, &f);
	if (f.in_tokens >= 0)
		r->u_prompt = f.in_tokens;
	if (f.err) {
		*msg = xstrdup(f.msg);
		return f.err;
	}
	r->rec.images_out = f.images;
	r->rec.bytes_out = r->resp.len > INT32_MAX ? INT32_MAX : (int32_t)r->resp.len;
	/* the pictures are the one chunk, when they arrived */
	if (r->body_ns != HR_NO_TIME && record_add_chunk(&r->rec, r->body_ns, &r->chunk_cap) < 0) {
		*msg = xstrdup("cannot record the answer's arrival");
		return HR_ERR_MALFORMED_STREAM;
	}
	return HR_ERR_NONE;
}

/* --- image edit: a multipart upload ---------------------------------------- */

struct edit_form {
	char boundary[FORM_BOUNDARY_LEN];
	int n;
	struct dynbuf *files; /* per pool picture: its file part, up to the prompt field */
	int32_t *bytes;       /* the picture's file bytes */
	char *rest;           /* the fields after the prompt and the closing boundary */
	size_t rest_len;
	uint64_t seed;
};

static void edit_release(struct req_cfg *c)
{
	struct edit_form *f = c->ep;
	if (f) {
		for (int i = 0; i < f->n; i++)
			dynbuf_release(&f->files[i]);
		free(f->files);
		free(f->bytes);
		free(f->rest);
		free(f);
	}
	c->ep = NULL;
}

static int edit_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	const struct spec_images *im = &s->workload.images;
	struct edit_form *f = xcalloc(1, sizeof *f);
	c->ep = f;
	c->with_prompt = true;
	c->with_max_tokens = false;
	c->sends_osl = false;
	c->one_piece = !s->target.stream; /* streamed: every picture event is a chunk */
	form_boundary(f->boundary, s->workload.seed, RNG_STREAM_IMAGE);
	if (form_content_type(c, s, f->boundary, err) < 0)
		return -1;
	if (im->pool < 1 || im->count != 1)
		return errf(err, "workload.images: one picture a request, from a pool of at least one");
	f->seed = s->workload.seed;
	f->n = im->pool;
	f->files = xcalloc((size_t)f->n, sizeof *f->files);
	f->bytes = xcalloc((size_t)f->n, sizeof *f->bytes);
	struct dynbuf pic;
	dynbuf_init(&pic, SPEC_MAX_MEDIA_POOL_BYTES);
	size_t longest = 0;
	for (int i = 0; i < f->n; i++) {
		char merr[128];
		struct dynbuf *b = &f->files[i];
		dynbuf_init(b, SPEC_MAX_MEDIA_POOL_BYTES);
		dynbuf_reset(&pic);
		if (media_image(s->workload.seed, (uint64_t)i, im->width, im->height, im->format,
		                im->quality, &pic, merr) < 0) {
			dynbuf_release(&pic);
			return errf(err, "workload.images: %s", merr);
		}
		if (dynbuf_printf(b,
		                  "--%s\r\nContent-Disposition: form-data; name=\"image\"; "
		                  "filename=\"image.%s\"\r\nContent-Type: %s\r\n\r\n",
		                  f->boundary, im->format == MEDIA_JPEG ? "jpg" : "png",
		                  media_image_mime(im->format)) < 0 ||
		    dynbuf_add(b, pic.data, pic.len) < 0 || dynbuf_add(b, "\r\n", 2) < 0 ||
		    dynbuf_printf(b,
		                  "--%s\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\n",
		                  f->boundary) < 0) {
			dynbuf_release(&pic);
			return errf(err, "workload.images: the form does not fit its buffer");
		}
		f->bytes[i] = (int32_t)pic.len;
		if (b->len > longest)
			longest = b->len;
	}
	dynbuf_release(&pic);
	/* after the prompt: the fixed fields, extra_body's (as text), the end */
	json_t *o = fixed_members(s);
	struct dynbuf rest;
	dynbuf_init(&rest, 1u << 20);
	int rc = dynbuf_add(&rest, "\r\n", 2);
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		if (rc < 0)
			break;
		rc = form_json_field(&rest, f->boundary, key, v);
	}
	json_decref(o);
	if (rc < 0 || dynbuf_printf(&rest, "--%s--\r\n", f->boundary) < 0) {
		dynbuf_release(&rest);
		return errf(err, "target.extra_body: the form fields do not fit");
	}
	f->rest = dynbuf_take(&rest, &f->rest_len);
	c->body_extra = longest + f->rest_len;
	return 0;
}

/* The picture's part, the prompt (raw text), the fixed fields. */
static int edit_body(struct req *r, const struct req_params *p)
{
	const struct edit_form *f = r->cfg->ep;
	struct dynbuf *b = &r->body;
	int i = (int)(rng_hash(f->seed, RNG_STREAM_IMAGE, p->req_id * SPEC_MAX_MEDIA_COUNT) %
	              (uint64_t)f->n);
	r->osl_sent = false;
	r->rec.images_in = 1;
	r->rec.media_bytes_in = f->bytes[i];
	if (dynbuf_add(b, f->files[i].data, f->files[i].len) < 0)
		return -1;
	/* a dataset's text as it is; synthetic prompts are plain words */
	int rc = p->text ? dynbuf_add(b, p->text, p->text_len) : rq_add_prompt(r, p);
	return rc < 0 || dynbuf_add(b, f->rest, f->rest_len) < 0 ? -1 : 0;
}

/* --- NIM image retrieval: pictures as data URLs -------------------------------- */

static int retr_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	c->with_prompt = !json_object_get(s->target.extra_body, "input");
	c->with_max_tokens = false;
	c->sends_osl = false;
	if (c->with_prompt) {
		int failed;
		struct epm_pool *pool = epm_pool_new(s, EPM_NIM, err, &failed);
		if (failed)
			return -1;
		c->ep = pool;
		if (pool)
			c->body_extra = pool->max_parts_len + 64;
	}
	/* a NIM serves one model: no "model" member, as AIPerf sends it */
	return rq_cfg_tail(c, s, false, err);
}

static void retr_release(struct req_cfg *c)
{
	epm_pool_free(c->ep);
	c->ep = NULL;
}

static int retr_body(struct req *r, const struct req_params *p)
{
	struct dynbuf *b = &r->body;
	const struct epm_pool *pool = r->cfg->ep;
	r->osl_sent = false;
	r->requested_isl = -1; /* no text: the server says, else unknown */
	if (dynbuf_add(b, "{", 1) < 0)
		return -1;
	if (pool) {
		if (dynbuf_addstr(b, "\"input\":[") < 0)
			return -1;
		size_t first = b->len; /* the first part's leading ',' goes */
		if (epm_add_parts(pool, p->req_id, b, &r->rec.images_in, &r->rec.audio_in,
		                  &r->rec.media_bytes_in) < 0)
			return -1;
		r->rec.audio_in = -1;
		memmove(b->data + first, b->data + first + 1, b->len - first - 1);
		b->len--;
		b->data[b->len] = '\0';
		if (dynbuf_add(b, "]", 1) < 0)
			return -1;
	}
	return rq_end_body(r, pool != NULL);
}

static int retr_answer(struct req *r, json_t *j, const json_error_t *je, char **msg)
{
	struct mr_facts f;
	if (!j) {
		*msg = xasprintf("response body is not JSON: %s", je->text);
		return HR_ERR_MALFORMED_STREAM;
	}
	mr_retrieval_answer(j, &f);
	if (f.in_tokens >= 0)
		r->u_prompt = f.in_tokens;
	if (f.err) {
		*msg = xstrdup(f.msg);
		return f.err;
	}
	if (r->body_ns != HR_NO_TIME && record_add_chunk(&r->rec, r->body_ns, &r->chunk_cap) < 0) {
		*msg = xstrdup("cannot record the answer's arrival");
		return HR_ERR_MALFORMED_STREAM;
	}
	return HR_ERR_NONE;
}

const struct ep_handler ep_image_retrieval = {
	.endpoint = SPEC_EP_IMAGE_RETRIEVAL,
	.content_type = "application/json",
	.one_piece = true,
	.history = EP_HIST_TEXT,
	.cfg_init = retr_cfg,
	.cfg_release = retr_release,
	.body = retr_body,
	.answer = retr_answer,
};

const struct ep_handler ep_image_generation = {
	.endpoint = SPEC_EP_IMAGE_GENERATION,
	.content_type = "application/json",
	.one_piece = true,
	.stream_bytes = true,
	.history = EP_HIST_TEXT,
	.cfg_init = gen_cfg,
	.body = gen_body,
	.event = gen_event,
	.answer = image_answer,
};

const struct ep_handler ep_image_edit = {
	.endpoint = SPEC_EP_IMAGE_EDIT,
	.content_type = NULL, /* cfg_init: multipart/form-data with its boundary */
	.one_piece = true,
	.stream_bytes = true,
	.history = EP_HIST_TEXT,
	.cfg_init = edit_cfg,
	.cfg_release = edit_release,
	.body = edit_body,
	.event = gen_event,
	.answer = image_answer,
};
