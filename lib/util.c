/* util.c - allocation wrappers, clocks, error formatting, number output. */
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Noreturn void xalloc_die(void)
{
	fputs("headroom: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		xalloc_die();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		xalloc_die();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		xalloc_die();
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		xalloc_die();
	char *p = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int errf(char *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, HR_ERRLEN, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int fmt_double(char *buf, double v)
{
	if (!isfinite(v))
		return snprintf(buf, 32, "%s", isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
	for (int prec = 15; prec <= 17; prec++) {
		int n = snprintf(buf, 32, "%.*g", prec, v);
		if (prec == 17 || strtod(buf, NULL) == v)
			return n;
	}
	return 0; /* not reached */
}

int parse_hostport(const char *s, char *host, int *port, char *err)
{
	const char *colon;
	size_t hlen;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':')
			return errf(err, "bad address '%s': want [IPV6]:PORT", s);
		hlen = (size_t)(close - s - 1);
		s++;
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return errf(err, "bad address '%s': want HOST:PORT", s);
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= 256)
		return errf(err, "bad address: host part empty or too long");
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	char *end;
	errno = 0;
	long p = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || p < 0 || p > 65535)
		return errf(err, "bad port in '%s'", colon + 1);
	*port = (int)p;
	return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid, -1 when
 * it is cut short by the terminating NUL. */
static int utf8_seq(const unsigned char *s)
{
	unsigned char c = s[0];
	int n;
	unsigned int cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (int i = 1; i < n; i++) {
		if (s[i] == 0)
			return -1;
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

char *utf8_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;
	while (*p) {
		int n = utf8_seq(p);
		if (n > 0) {
			p += n;
		} else if (n < 0) {
			*p = '\0';
			break;
		} else {
			*p++ = '?';
		}
	}
	return s;
}
