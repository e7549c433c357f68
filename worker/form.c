/* form.c - multipart/form-data pieces for the upload endpoints (form.h). */
#include "form.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "request.h"
#include "rng.h"
#include "spec.h"
#include "util.h"

void form_boundary(char out[FORM_BOUNDARY_LEN], uint64_t seed, uint64_t stream)
{
	snprintf(out, FORM_BOUNDARY_LEN, "headroom-form-%016llx",
	         (unsigned long long)rng_hash(seed, stream, UINT64_MAX));
}

int form_content_type(struct req_cfg *c, const struct spec *s, const char *boundary, char *err)
{
	const char *k;
	json_t *v;
	json_object_foreach(s->target.headers, k, v)
	{
		if (strcasecmp(k, "Content-Type") == 0)
			return 0;
	}
	char line[FORM_BOUNDARY_LEN + 64];
	snprintf(line, sizeof line, "Content-Type: multipart/form-data; boundary=%s", boundary);
	struct curl_slist *l = curl_slist_append(c->headers, line);
	if (!l)
		return errf(err, "cannot add the Content-Type header");
	c->headers = l;
	return 0;
}

int form_field(struct dynbuf *b, const char *boundary, const char *name, const char *value,
               size_t n)
{
	return dynbuf_printf(b, "--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n",
	                     boundary, name) < 0 ||
	               dynbuf_add(b, value, n) < 0 || dynbuf_add(b, "\r\n", 2) < 0
	           ? -1
	           : 0;
}

int form_json_field(struct dynbuf *b, const char *boundary, const char *name, json_t *v)
{
	if (json_is_string(v))
		return form_field(b, boundary, name, json_string_value(v), json_string_length(v));
	char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	int rc = text ? form_field(b, boundary, name, text, strlen(text)) : -1;
	free(text);
	return rc;
}
