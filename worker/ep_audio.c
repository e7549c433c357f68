/* ep_audio.c - the OpenAI audio transcription endpoint handler
 * (/v1/audio/transcriptions; ephandler.h): a multipart/form-data upload of
 * one WAV clip (filename clip.wav) with the form fields model, stream and
 * target.extra_body's members. The whole body of every pool clip is built
 * once per run, so a request copies one of them. A whole answer
 * ({"text": ...}) is timed as one piece (its arrival); a streamed one as
 * transcript.text.delta events, the first the first token, ended by
 * transcript.text.done (mediaread.c reads both). */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ephandler.h"
#include "form.h"
#include "media.h"
#include "mediaread.h"
#include "record.h"
#include "reqpart.h"
#include "request.h"
#include "rng.h"
#include "util.h"

struct audio_form {
	int n;
	struct dynbuf *bodies; /* one whole multipart body per pool clip */
	int32_t *bytes;        /* the clip's WAV bytes */
	uint64_t seed;
};

static void form_free(struct audio_form *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->n; i++)
		dynbuf_release(&f->bodies[i]);
	free(f->bodies);
	free(f->bytes);
	free(f);
}

/* The fields after the file: model (unless extra_body gives it), stream,
 * extra_body's members (strings as they are, numbers and booleans as JSON
 * writes them); then the closing boundary. */
static int add_fields(struct dynbuf *b, const char *boundary, const struct spec *s)
{
	json_t *extra = s->target.extra_body;
	if (!json_object_get(extra, "model") &&
	    form_field(b, boundary, "model", s->target.model, strlen(s->target.model)) < 0)
		return -1;
	if (s->target.stream && form_field(b, boundary, "stream", "true", 4) < 0)
		return -1;
	const char *key;
	json_t *v;
	json_object_foreach(extra, key, v)
	{
		if (form_json_field(b, boundary, key, v) < 0)
			return -1;
	}
	return dynbuf_printf(b, "--%s--\r\n", boundary);
}

static int audio_cfg(struct req_cfg *c, const struct spec *s, char *err)
{
	const struct spec_audio *au = &s->workload.audio;
	char boundary[FORM_BOUNDARY_LEN];
	form_boundary(boundary, s->workload.seed, RNG_STREAM_AUDIO);
	c->with_prompt = false;
	c->with_max_tokens = false;
	c->sends_osl = false;
	/* a whole transcript is a whole answer, as chat's: no first token, its
	 * output length from usage (else the tokenizer's count of its text) */
	if (form_content_type(c, s, boundary, err) < 0)
		return -1;
	if (au->pool < 1 || au->count != 1)
		return errf(err, "workload.audio: one clip a request, from a pool of at least one");
	struct audio_form *f = xcalloc(1, sizeof *f);
	f->seed = s->workload.seed;
	f->bodies = xcalloc((size_t)au->pool, sizeof *f->bodies);
	f->bytes = xcalloc((size_t)au->pool, sizeof *f->bytes);
	f->n = au->pool;
	c->ep = f;
	struct dynbuf wav;
	dynbuf_init(&wav, SPEC_MAX_MEDIA_POOL_BYTES);
	size_t longest = 0;
	for (int i = 0; i < au->pool; i++) {
		char merr[128];
		struct dynbuf *b = &f->bodies[i];
		dynbuf_init(b, SPEC_MAX_MEDIA_POOL_BYTES);
		dynbuf_reset(&wav);
		if (media_wav(s->workload.seed, (uint64_t)i, au->duration_ms, au->rate, &wav, merr) <
		    0) {
			dynbuf_release(&wav);
			return errf(err, "workload.audio: %s", merr);
		}
		if (dynbuf_printf(b,
		                  "--%s\r\nContent-Disposition: form-data; name=\"file\"; "
		                  "filename=\"clip.wav\"\r\nContent-Type: audio/wav\r\n\r\n",
		                  boundary) < 0 ||
		    dynbuf_add(b, wav.data, wav.len) < 0 || dynbuf_add(b, "\r\n", 2) < 0 ||
		    add_fields(b, boundary, s) < 0) {
			dynbuf_release(&wav);
			return errf(err, "workload.audio: the form does not fit its buffer");
		}
		f->bytes[i] = (int32_t)wav.len;
		if (b->len > longest)
			longest = b->len;
	}
	dynbuf_release(&wav);
	c->body_extra = longest;
	return 0;
}

static void audio_cfg_release(struct req_cfg *c)
{
	form_free(c->ep);
	c->ep = NULL;
}

static int audio_body(struct req *r, const struct req_params *p)
{
	const struct audio_form *f = r->cfg->ep;
	int i = (int)(rng_hash(f->seed, RNG_STREAM_AUDIO, p->req_id * SPEC_MAX_MEDIA_COUNT) %
	              (uint64_t)f->n);
	r->requested_isl = -1; /* the server says (usage), else unknown */
	r->osl_sent = false;
	r->rec.audio_in = 1;
	r->rec.media_bytes_in = f->bytes[i];
	return dynbuf_add(&r->body, f->bodies[i].data, f->bodies[i].len);
}

static void take_counts(struct req *r, const struct mr_facts *f)
{
	if (f->in_tokens >= 0)
		r->u_prompt = f->in_tokens;
	if (f->out_tokens >= 0)
		r->u_completion = f->out_tokens;
}

static int audio_event(struct req *r, const char *name, json_t *j, struct chunk_info *ci)
{
	struct mr_facts f;
	mr_transcript_event(name, j, &f);
	int rc = rq_media_event(r, &f, ci);
	if (rc == 0 && f.chunk) {
		rq_capture_json(r, f.text);
		rq_keep_output(r, f.text);
	}
	return rc;
}

static int audio_answer(struct req *r, json_t *j, const json_error_t *je, char **msg)
{
	struct mr_facts f;
	if (!j) {
		*msg = xasprintf("response body is not JSON: %s", je->text);
		return HR_ERR_MALFORMED_STREAM;
	}
	mr_transcript_answer(j, &f);
	take_counts(r, &f);
	if (f.err) {
		*msg = xstrdup(f.msg);
		return f.err;
	}
	rq_keep_output(r, f.text);
	return HR_ERR_NONE;
}

const struct ep_handler ep_audio_transcription = {
	.endpoint = SPEC_EP_AUDIO_TRANSCRIPTION,
	.content_type = NULL, /* cfg_init: multipart/form-data with its boundary */
	.history = EP_HIST_TEXT,
	.cfg_init = audio_cfg,
	.cfg_release = audio_cfg_release,
	.body = audio_body,
	.event = audio_event,
	.answer = audio_answer,
};
