/* route_image.c - OpenAI's image API in headroom-mock, its route handlers
 * (mock.h, struct mock_handler): POST /v1/images/generations (a JSON body)
 * and POST /v1/images/edits (a multipart/form-data upload, read by
 * route_audio.c's bounded reader).
 *
 * Request: `prompt` (required, non-empty; its words are the prompt
 * tokens), `n` (1 to 10, default 1), `size` ("WxH", each side 1 to 4096, or
 * "auto"), `response_format` ("b64_json", the default; the mock serves no
 * URLs), `model`, and `stream` (then `n` 1) with `partial_images` (0 to
 * 3); other fields are ignored. An edit also needs `image`, a PNG
 * or JPEG file (checked by its signature); `mask` and further `image`
 * parts are accepted.
 *
 * Timing: a picture is IMAGE_STEPS denoising steps, generated as chat
 * generates tokens (api.c: TTFT, then ITL a step, or the load model's
 * prefill and decode steps), so n pictures are answered whole after the
 * TTFT and n x IMAGE_STEPS - 1 further steps.
 *
 * Answer: {"created":T,"data":[{"b64_json":PNG},...],"usage":{...}} with
 * n real PNGs (lib/media.c) of the size asked, each side at most
 * IMAGE_MAX_SIDE (so they stay small), picture k of response N drawn from
 * (N, k); usage {"total_tokens","input_tokens","output_tokens",
 * "input_tokens_details":{"text_tokens","image_tokens"}} counts the
 * prompt's words (and 256 per uploaded picture) in and the steps out.
 * A streamed generation sends OpenAI's events: partial picture k
 * ({"type":"image_generation.partial_image","b64_json",...,
 * "partial_image_index":k}) once step (k + 1) x 16 / (partial_images + 1)
 * is done, then {"type":"image_generation.completed","b64_json",...,
 * "usage"} after the last step; a streamed edit the same events typed
 * image_edit.partial_image and image_edit.completed.
 * With --media-dir an edit's uploaded picture is written there
 * (K.edit.png or K.edit.jpg).
 *
 * NVIDIA NIM image retrieval, POST /v1/infer: {"input":[{"type":
 * "image_url","url":...},...]} (1 to 64 items, any non-empty URL), answered
 * whole after one prefill step of 256 tokens a picture, as embeddings are:
 * {"data":[{"index":I,"bounding_boxes":{"table":[],"chart":[],"title":[]}},
 * ...],"model":NAME}, one result per picture. --media-dir writes the URLs
 * (K.image).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "media.h"
#include "mock.h"
#include "util.h"

#define IMAGE_STEPS 16
#define IMAGE_MAX_N 10
#define IMAGE_MAX_SIDE 256
#define IMAGE_DEFAULT_SIDE 256
#define IMAGE_UPLOAD_TOKENS 256

/* size: "WxH" or "auto"; 0, or -1 with err. */
static int parse_size(const char *s, size_t n, struct gen_req *g, char *err)
{
	g->img_w = g->img_h = IMAGE_DEFAULT_SIDE;
	if (n == 4 && memcmp(s, "auto", 4) == 0)
		return 0;
	unsigned long v[2] = {0, 0};
	size_t i = 0;
	for (int k = 0; k < 2; k++) {
		size_t start = i;
		while (i < n && s[i] >= '0' && s[i] <= '9' && i - start < 5)
			v[k] = v[k] * 10 + (unsigned long)(s[i++] - '0');
		if (i == start || v[k] < 1 || v[k] > MEDIA_MAX_SIDE)
			return errf(err, "'size' must be \"WIDTHxHEIGHT\" (1 to %d each) or \"auto\"",
			            MEDIA_MAX_SIDE);
		if (k == 0 && (i >= n || s[i++] != 'x'))
			return errf(err, "'size' must be \"WIDTHxHEIGHT\" or \"auto\"");
	}
	if (i != n)
		return errf(err, "'size' must be \"WIDTHxHEIGHT\" or \"auto\"");
	g->img_w = (uint16_t)v[0];
	g->img_h = (uint16_t)v[1];
	return 0;
}

static int finish(struct gen_req *g, long long n, uint64_t prompt_tokens)
{
	g->img_n = (uint16_t)n;
	g->max_tokens = (uint32_t)n * IMAGE_STEPS;
	g->prompt_tokens = (uint32_t)(prompt_tokens < 1 ? 1 : prompt_tokens);
	g->stream = false;
	return 0;
}

static int gen_parse(struct server *srv, enum mock_api api, bool stream_path,
                     const struct http_request *req, struct gen_req *g, char *err)
{
	(void)srv;
	(void)api;
	(void)stream_path;
	json_t *root = api_load_object(req->body, req->body_len, err);
	if (!root)
		return -1;
	int rc = -1;
	long long n = 1;
	bool stream = false;
	const json_t *prompt = json_object_get(root, "prompt");
	const json_t *size = json_object_get(root, "size");
	const json_t *rf = json_object_get(root, "response_format");
	if (!json_is_string(prompt) || json_string_length(prompt) == 0) {
		errf(err, "'prompt' must be a non-empty string");
		goto out;
	}
	long long partial = 0;
	if (api_check_model(root, err) < 0 || api_opt_bool(root, "stream", "stream", &stream, err) < 0 ||
	    api_opt_int(root, "n", "n", 1, IMAGE_MAX_N, &n, err) < 0 ||
	    api_opt_int(root, "partial_images", "partial_images", 0, 3, &partial, err) < 0)
		goto out;
	if (stream && n != 1) {
		errf(err, "'n' must be 1 when streaming");
		goto out;
	}
	if (rf && !json_is_null(rf) &&
	    (!json_is_string(rf) || strcmp(json_string_value(rf), "b64_json") != 0)) {
		errf(err, "headroom-mock writes 'response_format' b64_json only");
		goto out;
	}
	if (size && !json_is_null(size) && !json_is_string(size)) {
		errf(err, "'size' must be a string");
		goto out;
	}
	g->img_w = g->img_h = IMAGE_DEFAULT_SIDE;
	if (json_is_string(size) &&
	    parse_size(json_string_value(size), json_string_length(size), g, err) < 0)
		goto out;
	rc = finish(g, n, api_text_tokens(json_string_value(prompt), json_string_length(prompt)));
	g->stream = stream;
	g->img_partial = (uint16_t)partial;
out:
	json_decref(root);
	return rc;
}

static int edit_parse(struct server *srv, enum mock_api api, bool stream_path,
                      const struct http_request *req, struct gen_req *g, char *err)
{
	(void)api;
	(void)stream_path;
	char boundary[FORM_MAX_BOUNDARY + 1];
	struct form_part parts[FORM_MAX_PARTS];
	if (mock_form_boundary(req, boundary, err) < 0)
		return -1;
	int np = mock_form_parse(req->body, req->body_len, boundary, parts, err);
	if (np < 0)
		return -1;
	const struct form_part *image = NULL, *prompt = NULL;
	long long n = 1;
	int uploads = 0, partial = 0;
	bool stream = false;
	g->img_w = g->img_h = IMAGE_DEFAULT_SIDE;
	for (int i = 0; i < np; i++) {
		const struct form_part *p = &parts[i];
		if (mock_form_part_is(p, "image") || mock_form_part_is(p, "image[]")) {
			bool png = p->len >= 8 && memcmp(p->data, "\x89PNG\r\n\x1a\n", 8) == 0;
			bool jpeg = p->len >= 3 && memcmp(p->data, "\xff\xd8\xff", 3) == 0;
			if (!png && !jpeg)
				return errf(err, "'image' must be a PNG or JPEG file");
			if (!image)
				image = p;
			uploads++;
		} else if (mock_form_part_is(p, "prompt")) {
			prompt = p;
		} else if (mock_form_part_is(p, "n")) {
			n = 0;
			for (size_t k = 0; k < p->len && n <= IMAGE_MAX_N; k++)
				n = p->data[k] >= '0' && p->data[k] <= '9' ? n * 10 + (p->data[k] - '0')
				                                          : IMAGE_MAX_N + 1;
			if (n < 1 || n > IMAGE_MAX_N)
				return errf(err, "'n' must be an integer from 1 to %d", IMAGE_MAX_N);
		} else if (mock_form_part_is(p, "size")) {
			if (parse_size(p->data, p->len, g, err) < 0)
				return -1;
		} else if (mock_form_part_is(p, "response_format")) {
			if (!mock_form_value_is(p, "b64_json"))
				return errf(err, "headroom-mock writes 'response_format' b64_json only");
		} else if (mock_form_part_is(p, "stream")) {
			if (mock_form_value_is(p, "true"))
				stream = true;
			else if (!mock_form_value_is(p, "false"))
				return errf(err, "'stream' must be true or false");
		} else if (mock_form_part_is(p, "partial_images")) {
			if (p->len != 1 || p->data[0] < '0' || p->data[0] > '3')
				return errf(err, "'partial_images' must be an integer from 0 to 3");
			partial = p->data[0] - '0';
		}
	}
	if (stream && n != 1)
		return errf(err, "'n' must be 1 when streaming");
	if (!image)
		return errf(err, "'image' is required (a multipart part named image)");
	if (!prompt || prompt->len == 0)
		return errf(err, "'prompt' is required and must not be empty");
	if (srv->cfg->media_dir)
		api_save_media(srv->cfg->media_dir, image->data[0] == '\x89' ? "edit.png" : "edit.jpg",
		               image->data, image->len);
	finish(g, n, api_text_tokens(prompt->data, prompt->len) +
	                 (uint64_t)uploads * IMAGE_UPLOAD_TOKENS);
	g->stream = stream;
	g->img_partial = (uint16_t)partial;
	return 0;
}

/* ,"b64_json":"..." of picture `index` of response s. */
static int add_picture(const struct stream *s, unsigned index, struct dynbuf *b)
{
	int w = s->img_w < IMAGE_MAX_SIDE ? s->img_w : IMAGE_MAX_SIDE;
	int h = s->img_h < IMAGE_MAX_SIDE ? s->img_h : IMAGE_MAX_SIDE;
	struct dynbuf pic;
	char merr[128];
	dynbuf_init(&pic, (size_t)IMAGE_MAX_SIDE * IMAGE_MAX_SIDE * 4 + 4096);
	int rc = media_image(s->id, index, w, h, MEDIA_PNG, 0, &pic, merr);
	if (rc == 0)
		rc = ADD_LIT(b, ",\"b64_json\":\"") < 0 || media_base64(pic.data, pic.len, b) < 0 ||
		             ADD_LIT(b, "\"") < 0
		         ? -1
		         : 0;
	dynbuf_release(&pic);
	return rc;
}

/* The streamed events' type prefix: generations and edits have their own. */
static const char *event_prefix(const struct stream *s)
{
	return s->api == API_IMAGE_EDIT ? "{\"type\":\"image_edit." : "{\"type\":\"image_generation.";
}

/* Streamed (n 1): partial picture k once step (k + 1) x steps /
 * (partial_images + 1) is done, then the completed one (events_end). */
static void image_events(struct server *srv, struct conn *c, uint32_t n)
{
	const struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	for (unsigned k = 0; k < s->img_partial; k++) {
		uint32_t at = (uint32_t)(((uint64_t)k + 1) * s->max_tokens / (s->img_partial + 1u));
		if (at < 1)
			at = 1;
		if (at <= s->sent || at > s->sent + n)
			continue;
		dynbuf_reset(b);
		dynbuf_addstr(b, event_prefix(s));
		ADD_LIT(b, "partial_image\"");
		if (add_picture(s, 100 + k, b) < 0)
			continue;
		ADD_LIT(b, ",\"partial_image_index\":");
		api_add_u64(b, k);
		ADD_LIT(b, ",\"created_at\":");
		api_add_u64(b, s->created < 0 ? 0 : (uint64_t)s->created);
		ADD_LIT(b, ",\"output_format\":\"png\",\"quality\":\"auto\",\"size\":\"auto\","
		           "\"background\":\"opaque\"}");
		api_send_event(srv, c, true);
	}
}

static void add_usage(struct dynbuf *b, const struct stream *s)
{
	ADD_LIT(b, "\"usage\":{\"total_tokens\":");
	api_add_u64(b, (uint64_t)s->prompt_tokens + s->max_tokens);
	ADD_LIT(b, ",\"input_tokens\":");
	api_add_u64(b, s->prompt_tokens);
	ADD_LIT(b, ",\"output_tokens\":");
	api_add_u64(b, s->max_tokens);
	ADD_LIT(b, ",\"input_tokens_details\":{\"text_tokens\":");
	api_add_u64(b, s->prompt_tokens);
	ADD_LIT(b, ",\"image_tokens\":0}}");
}

static void image_events_end(struct server *srv, struct conn *c)
{
	const struct stream *s = &c->st;
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	dynbuf_addstr(b, event_prefix(s));
	ADD_LIT(b, "completed\"");
	if (add_picture(s, 0, b) < 0)
		return;
	ADD_LIT(b, ",\"created_at\":");
	api_add_u64(b, s->created < 0 ? 0 : (uint64_t)s->created);
	ADD_LIT(b, ",\"output_format\":\"png\",\"quality\":\"auto\",\"size\":\"auto\","
	           "\"background\":\"opaque\",");
	add_usage(b, s);
	ADD_LIT(b, "}");
	api_send_event(srv, c, true);
}

/* An injected malformed event: a partial picture cut off inside its data. */
static void image_malformed(struct server *srv, struct conn *c)
{
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	dynbuf_addstr(b, event_prefix(&c->st));
	ADD_LIT(b, "partial_image\",\"b64_json\":\"iVBORw0K");
	api_send_event(srv, c, true);
}

/* The answer: n pictures, rendered now. */
static int image_body(struct server *srv, const struct stream *s, struct dynbuf *b, char *extra,
                      size_t extra_size)
{
	(void)srv;
	(void)extra;
	(void)extra_size;
	int w = s->img_w < IMAGE_MAX_SIDE ? s->img_w : IMAGE_MAX_SIDE;
	int h = s->img_h < IMAGE_MAX_SIDE ? s->img_h : IMAGE_MAX_SIDE;
	struct dynbuf pic;
	char merr[128];
	dynbuf_init(&pic, (size_t)IMAGE_MAX_SIDE * IMAGE_MAX_SIDE * 4 + 4096);
	dynbuf_reset(b);
	ADD_LIT(b, "{\"created\":");
	api_add_u64(b, s->created < 0 ? 0 : (uint64_t)s->created);
	ADD_LIT(b, ",\"data\":[");
	int rc = 0;
	for (unsigned k = 0; k < s->img_n && rc == 0; k++) {
		dynbuf_reset(&pic);
		rc = media_image(s->id, k, w, h, MEDIA_PNG, 0, &pic, merr);
		if (rc == 0)
			rc = (k && ADD_LIT(b, ",") < 0) || ADD_LIT(b, "{\"b64_json\":\"") < 0 ||
			             media_base64(pic.data, pic.len, b) < 0 || ADD_LIT(b, "\"}") < 0
			         ? -1
			         : 0;
	}
	dynbuf_release(&pic);
	if (rc < 0)
		return -1;
	ADD_LIT(b, "],");
	add_usage(b, s);
	return ADD_LIT(b, "}");
}

/* NIM image retrieval: {"input":[{"type":"image_url","url":...},...]}. */
#define RETRIEVAL_MAX_INPUTS 64
static int retr_parse(struct server *srv, enum mock_api api, bool stream_path,
                      const struct http_request *req, struct gen_req *g, char *err)
{
	(void)api;
	(void)stream_path;
	json_t *root = api_load_object(req->body, req->body_len, err);
	if (!root)
		return -1;
	int rc = -1;
	const json_t *in = json_object_get(root, "input");
	size_t i;
	const json_t *it;
	if (!json_is_array(in) || json_array_size(in) == 0 ||
	    json_array_size(in) > RETRIEVAL_MAX_INPUTS) {
		errf(err, "'input' must be an array of 1 to %d image_url items", RETRIEVAL_MAX_INPUTS);
		goto out;
	}
	json_array_foreach(in, i, it)
	{
		const json_t *type = json_object_get(it, "type"), *url = json_object_get(it, "url");
		if (!json_is_string(type) || strcmp(json_string_value(type), "image_url") != 0 ||
		    !json_is_string(url) || json_string_length(url) == 0) {
			errf(err, "'input[%zu]' must be {\"type\":\"image_url\",\"url\":...}", i);
			goto out;
		}
	}
	if (srv->cfg->media_dir)
		json_array_foreach(in, i, it)
		{
			const json_t *url = json_object_get(it, "url");
			api_save_media(srv->cfg->media_dir, "image", json_string_value(url),
			               json_string_length(url));
		}
	g->img_n = (uint16_t)json_array_size(in);
	g->max_tokens = 1; /* one step: the prefill, then the answer */
	g->prompt_tokens = (uint32_t)g->img_n * IMAGE_UPLOAD_TOKENS;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* One result per picture: its index and (empty) detections. */
static int retr_body(struct server *srv, const struct stream *s, struct dynbuf *b, char *extra,
                     size_t extra_size)
{
	(void)extra;
	(void)extra_size;
	dynbuf_reset(b);
	ADD_LIT(b, "{\"data\":[");
	for (unsigned i = 0; i < s->img_n; i++) {
		if (i)
			ADD_LIT(b, ",");
		ADD_LIT(b, "{\"index\":");
		api_add_u64(b, i);
		ADD_LIT(b, ",\"bounding_boxes\":{\"table\":[],\"chart\":[],\"title\":[]}}");
	}
	ADD_LIT(b, "],\"model\":");
	dynbuf_add(b, srv->model_json, srv->model_json_len);
	return ADD_LIT(b, "}");
}

const struct mock_handler mock_image_retrieval = {
	.api = API_IMAGE_RETRIEVAL,
	.paths = {{"/v1/infer", false}},
	.pool = true,
	.parse = retr_parse,
	.body = retr_body,
};

/* Not streamed: an injected malformed answer is cut short by api.c. */
const struct mock_handler mock_image_gen = {
	.api = API_IMAGE_GEN,
	.paths = {{"/v1/images/generations", false}},
	.parse = gen_parse,
	.events = image_events,
	.malformed = image_malformed,
	.events_end = image_events_end,
	.body = image_body,
};

const struct mock_handler mock_image_edit = {
	.api = API_IMAGE_EDIT,
	.paths = {{"/v1/images/edits", false}},
	.parse = edit_parse,
	.events = image_events,
	.malformed = image_malformed,
	.events_end = image_events_end,
	.body = image_body,
};
