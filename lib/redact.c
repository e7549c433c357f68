/* redact.c - recognising and removing credentials in header names, URLs
 * and specs (redact.h). */
#include "redact.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int contains_ci(const char *s, size_t n, const char *w)
{
	size_t wn = strlen(w);
	for (size_t i = 0; i + wn <= n; i++)
		if (strncasecmp(s + i, w, wn) == 0)
			return 1;
	return 0;
}

static const char *const sensitive_words[] = {"key",        "token",   "secret", "passw",
                                              "auth",       "session", "cookie", "signature",
                                              "credential", "bearer",  "jwt"};

static int sensitive(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof sensitive_words / sizeof *sensitive_words; i++)
		if (contains_ci(s, n, sensitive_words[i]))
			return 1;
	return 0;
}

int redact_header_name(const char *name)
{
	return name && sensitive(name, strlen(name));
}

int redact_query_name(const char *name, size_t n)
{
	static const char *const exact[] = {"sig", "pass", "pwd", "pw", "code", "sid"};
	for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
		if (n == strlen(exact[i]) && strncasecmp(name, exact[i], n) == 0)
			return 1;
	return sensitive(name, n);
}

/* appends n bytes of s; 0, or -1 when out is full */
static int put(char *out, size_t cap, size_t *k, const char *s, size_t n)
{
	if (*k + n + 1 > cap)
		return -1;
	memcpy(out + *k, s, n);
	*k += n;
	out[*k] = '\0';
	return 0;
}

int redact_url(const char *url, char *out, size_t cap)
{
	if (cap == 0)
		return -1;
	out[0] = '\0';
	size_t n = strlen(url), k = 0;
	int changed = 0;
	const char *p = url, *end = url + n;
	/* user-info: between "//" (the URL's first '/', with no '?' or '#'
	 * before it) and the last '@' of the authority */
	const char *auth = strchr(url, '/');
	if (auth && auth[1] == '/' && strcspn(url, "?#") > (size_t)(auth - url)) {
		auth += 2;
		size_t an = strcspn(auth, "/?#");
		const char *at = NULL;
		for (size_t i = 0; i < an; i++)
			if (auth[i] == '@')
				at = auth + i;
		if (at) {
			if (put(out, cap, &k, p, (size_t)(auth - p)) < 0 ||
			    put(out, cap, &k, REDACTED, strlen(REDACTED)) < 0)
				goto full;
			p = at;
			changed = 1;
		}
	}
	const char *q = strchr(p, '?');
	const char *hash = strchr(p, '#');
	if (q && hash && hash < q)
		q = NULL;
	if (!q)
		return put(out, cap, &k, p, (size_t)(end - p)) < 0 ? (out[0] = '\0', -1) : changed;
	if (put(out, cap, &k, p, (size_t)(q + 1 - p)) < 0)
		goto full;
	const char *qe = hash && hash > q ? hash : end;
	const char *s = q + 1;
	while (s <= qe) {
		size_t pn = 0;
		while (s + pn < qe && s[pn] != '&' && s[pn] != ';')
			pn++;
		const char *eq = memchr(s, '=', pn);
		size_t nn = eq ? (size_t)(eq - s) : pn;
		if (eq && redact_query_name(s, nn)) {
			if (put(out, cap, &k, s, nn + 1) < 0 ||
			    put(out, cap, &k, REDACTED, strlen(REDACTED)) < 0)
				goto full;
			changed = 1;
		} else if (put(out, cap, &k, s, pn) < 0) {
			goto full;
		}
		if (s + pn >= qe)
			break;
		if (put(out, cap, &k, s + pn, 1) < 0)
			goto full;
		s += pn + 1;
	}
	if (put(out, cap, &k, qe, (size_t)(end - qe)) < 0)
		goto full;
	return changed;
full:
	out[0] = '\0';
	return -1;
}

static int url_has(const char *u)
{
	if (!u)
		return 0;
	size_t cap = strlen(u) * 2 + 64;
	char buf[8192];
	if (cap > sizeof buf)
		cap = sizeof buf;
	int r = redact_url(u, buf, cap);
	return r != 0; /* -1 (too long to tell): counted as holding one */
}

/* A target's headers, url, template path and path; pre names it
 * ("target", "classes[1].target"). */
static int target_find(const json_t *t, const char *pre, char *field, size_t cap)
{
	const char *hk;
	json_t *hv;
	json_object_foreach(json_object_get(t, "headers"), hk, hv)
	{
		if (redact_header_name(hk)) {
			snprintf(field, cap, "%s.headers.%s", pre, hk);
			return 1;
		}
	}
	if (url_has(json_string_value(json_object_get(t, "url")))) {
		snprintf(field, cap, "%s.url", pre);
		return 1;
	}
	if (url_has(json_string_value(json_object_get(json_object_get(t, "template"), "path")))) {
		snprintf(field, cap, "%s.template.path", pre);
		return 1;
	}
	if (url_has(json_string_value(json_object_get(t, "path")))) {
		snprintf(field, cap, "%s.path", pre);
		return 1;
	}
	return 0;
}

int redact_spec_find(const json_t *spec, char *field, size_t cap)
{
	if (target_find(json_object_get(spec, "target"), "target", field, cap))
		return 1;
	size_t k;
	json_t *c;
	json_array_foreach(json_object_get(spec, "classes"), k, c)
	{ /* a traffic class's own target fields are stored too */
		char pre[48];
		snprintf(pre, sizeof pre, "classes[%zu].target", k);
		if (target_find(json_object_get(c, "target"), pre, field, cap))
			return 1;
	}
	static const char *const lists[] = {"dcgm_urls", "metrics_urls"};
	json_t *tel = json_object_get(spec, "telemetry");
	for (size_t l = 0; l < 2; l++) {
		size_t i;
		json_t *u;
		json_array_foreach(json_object_get(tel, lists[l]), i, u)
		{
			if (url_has(json_string_value(u))) {
				snprintf(field, cap, "telemetry.%s[%zu]", lists[l], i);
				return 1;
			}
		}
	}
	return 0;
}
