/* redact.h - what counts as a credential in a spec (docs/security.md#secrets):
 * header names that suggest one (Authorization, Proxy-Authorization,
 * Cookie, Set-Cookie, and any with key, token, secret, password, auth,
 * session, cookie, signature or credential in it), URL user-info
 * (http://user:pass@host) and token-like query parameters (key, api_key,
 * token, access_token, sig, signature, password...). The daemon refuses a
 * spec that holds one (it would be stored and shown); URLs it prints go
 * through redact_url.
 */
#ifndef HR_REDACT_H
#define HR_REDACT_H

#include <jansson.h>
#include <stddef.h>

#define REDACTED "[redacted]"

/* 1 when a header of this name (any case) would carry a credential. */
int redact_header_name(const char *name);
/* 1 when a query parameter of this name (any case) would. */
int redact_query_name(const char *name, size_t n);
/* Copies url into out (cap bytes, always terminated when cap > 0) with
 * its user-info and the values of token-like query parameters replaced
 * by REDACTED. Returns 1 when something was replaced, 0 when not, -1 when
 * out was too small (out then holds no part of the url's credentials:
 * it is "" or a truncated redacted copy). */
int redact_url(const char *url, char *out, size_t cap);
/* The first place of a spec (its normalised JSON) holding a credential:
 * a sensitive header of target.headers, or a URL (target.url,
 * target.template.path, target.path, telemetry.dcgm_urls[i],
 * telemetry.metrics_urls[i]); the same in each traffic class's target
 * (classes[k].target...)
 * that redact_url would change. Returns 1 with the dotted field in field,
 * or 0. */
int redact_spec_find(const json_t *spec, char *field, size_t cap);

#endif
