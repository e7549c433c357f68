/* form.h - the multipart/form-data pieces of the upload endpoints
 * (ep_audio.c: a transcription's clip; ep_image.c: an edit's picture): a
 * boundary drawn from the seed, the Content-Type header naming it, and text
 * fields. A body is built once per pool item in cfg_init, so none of this
 * is on a request's path. */
#ifndef HR_WORKER_FORM_H
#define HR_WORKER_FORM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"

struct req_cfg;
struct spec;

#define FORM_BOUNDARY_LEN 64

/* "headroom-form-" and 16 hex digits of the seed's hash on that stream. */
void form_boundary(char out[FORM_BOUNDARY_LEN], uint64_t seed, uint64_t stream);
/* Adds "Content-Type: multipart/form-data; boundary=..." to c->headers,
 * unless target.headers gives a Content-Type. Returns 0, or -1 with err. */
int form_content_type(struct req_cfg *c, const struct spec *s, const char *boundary, char *err);
/* One text field: its part header, the value's n bytes, CRLF. */
int form_field(struct dynbuf *b, const char *boundary, const char *name, const char *value,
               size_t n);
/* A JSON value as a text field: a string as it is, anything else as JSON
 * writes it (numbers, booleans...). */
int form_json_field(struct dynbuf *b, const char *boundary, const char *name, json_t *v);

#endif
