/* ep_media.h - the synthetic media of multimodal chat (workload.images,
 * workload.audio): a pool of pictures and clips rendered once per run
 * (lib/media.c), each already written as the JSON content part that
 * carries it, and the parts of one request drawn from the seed.
 *
 * Thread affinity: the loop's thread (the pool is read-only after init).
 */
#ifndef HR_WORKER_EP_MEDIA_H
#define HR_WORKER_EP_MEDIA_H

#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"
#include "spec.h"

struct epm_item {
	char *part; /* owned: ',{"type":"image_url",...}' (with its leading ',') */
	size_t len;
	int64_t bytes; /* the media file's size before base64 */
};

/* How a picture's part is written: chat's content part, or NIM's input item. */
enum epm_shape { EPM_CHAT = 0, EPM_NIM };

struct epm_pool {
	uint64_t seed;
	int n_images, n_audio; /* per request */
	int pool_images, pool_audio;
	struct epm_item *images, *audio; /* owned */
	size_t max_parts_len;            /* the longest request's parts, in bytes */
};

/* Renders the pools the spec asks for. Returns NULL when it asks for no
 * media (or the endpoint takes none), else a pool; NULL with err set when
 * rendering failed. */
struct epm_pool *epm_pool_new(const struct spec *s, enum epm_shape shape, char *err,
                              int *failed);
void epm_pool_free(struct epm_pool *p);

/* Appends request req_id's media parts (each with its leading ',') to b
 * and sets the counts. Returns 0, or -1 when b is full. */
int epm_add_parts(const struct epm_pool *p, uint64_t req_id, struct dynbuf *b, int32_t *images,
                  int32_t *audio, int32_t *bytes);

#endif
