/* ep_media.c - the media pool of multimodal chat (ep_media.h): pictures
 * (PNG or JPEG) and WAV clips from lib/media.c, rendered once per run as
 * the OpenAI content parts that carry them (image_url with a data URL,
 * input_audio with base64 data); a request takes its parts by index, so
 * building a body copies bytes and encodes nothing. */
#include "ep_media.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media.h"
#include "rng.h"
#include "util.h"

/* A part's bytes: the prefix, the base64 of the file, the suffix. */
static int render(struct epm_item *it, const char *pre, const struct dynbuf *file,
                  const char *post, char *err)
{
	struct dynbuf b;
	dynbuf_init(&b, (size_t)SPEC_MAX_MEDIA_POOL_BYTES * 2);
	if (dynbuf_addstr(&b, pre) < 0 || media_base64(file->data, file->len, &b) < 0 ||
	    dynbuf_addstr(&b, post) < 0) {
		dynbuf_release(&b);
		return errf(err, "a media part does not fit its buffer");
	}
	it->bytes = (int64_t)file->len;
	it->part = dynbuf_take(&b, &it->len);
	return 0;
}

static size_t longest(const struct epm_item *items, int n)
{
	size_t m = 0;
	for (int i = 0; i < n; i++)
		if (items[i].len > m)
			m = items[i].len;
	return m;
}

struct epm_pool *epm_pool_new(const struct spec *s, enum epm_shape shape, char *err,
                              int *failed)
{
	const struct spec_images *im = &s->workload.images;
	const struct spec_audio *au = &s->workload.audio;
	*failed = 0;
	if (im->count <= 0 && au->count <= 0)
		return NULL;
	struct epm_pool *p = xcalloc(1, sizeof *p);
	p->seed = s->workload.seed;
	struct dynbuf file;
	dynbuf_init(&file, SPEC_MAX_MEDIA_POOL_BYTES);
	char merr[128];
	if (im->count > 0) {
		p->n_images = im->count;
		p->pool_images = im->pool;
		p->images = xcalloc((size_t)im->pool, sizeof *p->images);
		char pre[96];
		snprintf(pre, sizeof pre,
		         shape == EPM_NIM ? ",{\"type\":\"image_url\",\"url\":\"data:%s;base64,"
		                          : ",{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:%s;"
		                            "base64,",
		         media_image_mime(im->format));
		for (int i = 0; i < im->pool; i++) {
			dynbuf_reset(&file);
			if (media_image(p->seed, (uint64_t)i, im->width, im->height, im->format,
			                im->quality, &file, merr) < 0) {
				errf(err, "workload.images: %s", merr);
				goto fail;
			}
			if (render(&p->images[i], pre, &file, shape == EPM_NIM ? "\"}" : "\"}}", err) < 0)
				goto fail;
		}
	}
	if (au->count > 0) {
		p->n_audio = au->count;
		p->pool_audio = au->pool;
		p->audio = xcalloc((size_t)au->pool, sizeof *p->audio);
		for (int i = 0; i < au->pool; i++) {
			dynbuf_reset(&file);
			if (media_wav(p->seed, (uint64_t)i, au->duration_ms, au->rate, &file, merr) < 0) {
				errf(err, "workload.audio: %s", merr);
				goto fail;
			}
			if (render(&p->audio[i], ",{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"",
			           &file, "\",\"format\":\"wav\"}}", err) < 0)
				goto fail;
		}
	}
	dynbuf_release(&file);
	p->max_parts_len = longest(p->images, p->pool_images) * (size_t)p->n_images +
	                   longest(p->audio, p->pool_audio) * (size_t)p->n_audio;
	return p;
fail:
	dynbuf_release(&file);
	epm_pool_free(p);
	*failed = 1;
	return NULL;
}

void epm_pool_free(struct epm_pool *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->pool_images; i++)
		free(p->images[i].part);
	for (int i = 0; i < p->pool_audio; i++)
		free(p->audio[i].part);
	free(p->images);
	free(p->audio);
	free(p);
}

int epm_add_parts(const struct epm_pool *p, uint64_t req_id, struct dynbuf *b, int32_t *images,
                  int32_t *audio, int32_t *bytes)
{
	int64_t sum = 0;
	for (int k = 0; k < p->n_images; k++) {
		uint64_t h = rng_hash(p->seed, RNG_STREAM_IMAGE,
		                      req_id * SPEC_MAX_MEDIA_COUNT + (uint64_t)k);
		const struct epm_item *it = &p->images[h % (uint64_t)p->pool_images];
		if (dynbuf_add(b, it->part, it->len) < 0)
			return -1;
		sum += it->bytes;
	}
	for (int k = 0; k < p->n_audio; k++) {
		uint64_t h = rng_hash(p->seed, RNG_STREAM_AUDIO,
		                      req_id * SPEC_MAX_MEDIA_COUNT + (uint64_t)k);
		const struct epm_item *it = &p->audio[h % (uint64_t)p->pool_audio];
		if (dynbuf_add(b, it->part, it->len) < 0)
			return -1;
		sum += it->bytes;
	}
	*images = p->n_images;
	*audio = p->n_audio;
	*bytes = sum > INT32_MAX ? INT32_MAX : (int32_t)sum;
	return 0;
}
