/* secrets.c - the operator's declared secrets (secrets.h): parsing
 * --secret, the host check of a spec's target.url, and reading a value
 * from its environment variable or file when a run starts. */
#include "secrets.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define SECRET_MAX_BYTES 4096

struct secret_host {
	char *host; /* lower case, without brackets */
	long port;  /* 0: any */
};

struct secret {
	char *name;
	int is_file;
	char *src; /* the variable's name or the file's path */
	struct secret_host *hosts;
	size_t nhosts;
};

static int name_ok(const char *s, size_t n)
{
	if (n == 0 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
			return 0;
	return 1;
}

static char *lower_host(const char *h, size_t n)
{
	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		h++;
		n -= 2;
	}
	char *s = xcalloc(n + 1, 1);
	for (size_t i = 0; i < n; i++)
		s[i] = (h[i] >= 'A' && h[i] <= 'Z') ? (char)(h[i] + 32) : h[i];
	return s;
}

/* "host", "host:port", "[v6]" or "[v6]:port" */
static int parse_host(const char *h, size_t n, struct secret_host *out)
{
	const char *colon = NULL;
	if (n && h[0] == '[') {
		const char *rb = memchr(h, ']', n);
		if (!rb)
			return -1;
		if ((size_t)(rb - h) + 1 < n) {
			if (rb[1] != ':')
				return -1;
			colon = rb + 1;
		}
	} else {
		colon = memchr(h, ':', n);
		if (colon && memchr(colon + 1, ':', n - (size_t)(colon + 1 - h)))
			return -1;
	}
	size_t hn = colon ? (size_t)(colon - h) : n;
	if (hn == 0)
		return -1;
	for (size_t i = 0; i < hn; i++)
		if ((unsigned char)h[i] <= ' ' || h[i] == '/' || h[i] == '@' || h[i] == ',')
			return -1;
	out->port = 0;
	if (colon) {
		char buf[8];
		size_t pn = n - hn - 1;
		if (pn == 0 || pn >= sizeof buf)
			return -1;
		memcpy(buf, colon + 1, pn);
		buf[pn] = '\0';
		char *end;
		long p = strtol(buf, &end, 10);
		if (*end || p < 1 || p > 65535 || buf[0] < '0' || buf[0] > '9')
			return -1;
		out->port = p;
	}
	out->host = lower_host(h, hn);
	return 0;
}

static void secret_clear(struct secret *x)
{
	free(x->name);
	free(x->src);
	for (size_t i = 0; i < x->nhosts; i++)
		free(x->hosts[i].host);
	free(x->hosts);
}

int secrets_add(struct secrets *s, const char *decl, char *err, size_t errlen)
{
	const char *eq = strchr(decl, '=');
	const char *at = strrchr(decl, '@');
	if (!eq || !name_ok(decl, (size_t)(eq - decl))) {
		snprintf(
		    err, errlen,
		    "--secret: give NAME=env:VAR@HOST[,HOST...] or NAME=file:PATH@HOST[,HOST...] "
		    "(NAME: 1 to 128 of A-Z a-z 0-9 _ - .)");
		return -1;
	}
	if (!at || at < eq || !at[1]) {
		snprintf(err, errlen,
		         "--secret %.*s: name the hosts it may be sent to (@HOST[,HOST...])",
		         (int)(eq - decl), decl);
		return -1;
	}
	struct secret x = {0};
	x.name = xstrndup(decl, (size_t)(eq - decl));
	const char *src = eq + 1;
	size_t srcn = (size_t)(at - src);
	if (srcn > 4 && strncmp(src, "env:", 4) == 0 && name_ok(src + 4, srcn - 4)) {
		x.src = xstrndup(src + 4, srcn - 4);
	} else if (srcn > 5 && strncmp(src, "file:", 5) == 0) {
		x.is_file = 1;
		x.src = xstrndup(src + 5, srcn - 5);
	} else {
		snprintf(err, errlen, "--secret %s: the value comes from env:VAR or file:PATH",
		         x.name);
		secret_clear(&x);
		return -1;
	}
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, x.name) == 0) {
			snprintf(err, errlen, "--secret %s: declared twice", x.name);
			secret_clear(&x);
			return -1;
		}
	const char *h = at + 1;
	for (;;) {
		const char *comma = strchr(h, ',');
		size_t hn = comma ? (size_t)(comma - h) : strlen(h);
		struct secret_host sh;
		if (parse_host(h, hn, &sh) < 0) {
			snprintf(err, errlen, "--secret %s: '%.*s' is not HOST or HOST:PORT",
			         x.name, (int)(hn > 200 ? 200 : hn), h);
			secret_clear(&x);
			return -1;
		}
		x.hosts = xrealloc(x.hosts, (x.nhosts + 1) * sizeof *x.hosts);
		x.hosts[x.nhosts++] = sh;
		if (!comma)
			break;
		h = comma + 1;
	}
	s->v = xrealloc(s->v, (s->n + 1) * sizeof *s->v);
	s->v[s->n++] = x;
	return 0;
}

void secrets_free(struct secrets *s)
{
	for (size_t i = 0; i < s->n; i++)
		secret_clear(&s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static const struct secret *find(const struct secrets *s, const char *name)
{
	for (size_t i = 0; s && name && i < s->n; i++)
		if (strcmp(s->v[i].name, name) == 0)
			return &s->v[i];
	return NULL;
}

static int undeclared(const char *name, char *err, size_t errlen)
{
	(void)name; /* the message is the same for every name */
	snprintf(err, errlen,
	         "target.api_key_secret: not a secret this daemon declares (headroomd --secret "
	         "NAME=env:VAR@HOST or NAME=file:PATH@HOST)");
	return -1;
}

int secrets_allow(const struct secrets *s, const char *name, const char *url, char *err,
                  size_t errlen)
{
	const struct secret *x = find(s, name);
	if (!x)
		return undeclared(name, err, errlen);
	if (!url) /* target.mock: the daemon's own mock, checked when it starts */
		return 0;
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL;
	int ok = 0;
	if (u && url && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
		char *lh = lower_host(host, strlen(host));
		long p = strtol(port, NULL, 10);
		for (size_t i = 0; i < x->nhosts && !ok; i++)
			ok = strcmp(x->hosts[i].host, lh) == 0 &&
			     (x->hosts[i].port == 0 || x->hosts[i].port == p);
		free(lh);
	}
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	if (!ok) {
		snprintf(err, errlen,
		         "target.url: secret '%s' may not be sent to this host (its --secret "
		         "declaration lists the hosts it may)",
		         x->name);
		return -1;
	}
	return 0;
}

static int one_line(char *buf, size_t n)
{
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	int bad = n == 0;
	for (size_t i = 0; i < n; i++)
		bad |= (unsigned char)buf[i] < 0x20 || buf[i] == 0x7f;
	return bad ? -1 : 0;
}

int secrets_read(const struct secrets *s, const char *name, char *buf, size_t cap, char *err,
                 size_t errlen)
{
	const struct secret *x = find(s, name);
	if (!x)
		return undeclared(name, err, errlen);
	if (cap > SECRET_MAX_BYTES + 1)
		cap = SECRET_MAX_BYTES + 1;
	if (!x->is_file) {
		const char *v = getenv(x->src);
		size_t n = v ? strlen(v) : 0;
		if (!v || n + 1 > cap) {
			snprintf(err, errlen,
			         "target.api_key_secret: secret '%s': its variable %s is %s",
			         x->name, x->src,
			         v ? "too long" : "not set in the daemon's environment");
			return -1;
		}
		memcpy(buf, v, n + 1);
		if (one_line(buf, n) < 0) {
			explicit_bzero(buf, cap);
			snprintf(err, errlen,
			         "target.api_key_secret: secret '%s' must be one line of text",
			         x->name);
			return -1;
		}
		return 0;
	}
	int fd = open(x->src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0) {
		snprintf(err, errlen, "target.api_key_secret: secret '%s': cannot open %s (%s)",
		         x->name, x->src, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size >= cap) {
		close(fd);
		snprintf(
		    err, errlen,
		    "target.api_key_secret: secret '%s': %s is not a file of at most %zu bytes",
		    x->name, x->src, cap - 1);
		return -1;
	}
	if (st.st_mode & 077) {
		close(fd);
		snprintf(
		    err, errlen,
		    "target.api_key_secret: secret '%s': %s is readable by others (chmod 600 it)",
		    x->name, x->src);
		return -1;
	}
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "target.api_key_secret: secret '%s': cannot read %s: %s",
		         x->name, x->src, strerror(errno));
		return -1;
	}
	if (one_line(buf, (size_t)n) < 0) {
		explicit_bzero(buf, cap);
		snprintf(err, errlen,
		         "target.api_key_secret: secret '%s': %s must hold one line of text",
		         x->name, x->src);
		return -1;
	}
	return 0;
}
