/* dynbuf.c - bounded growable buffer. */
#include "dynbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void dynbuf_init(struct dynbuf *b, size_t max)
{
	b->data = NULL;
	b->len = b->cap = 0;
	b->max = max;
}

void dynbuf_release(struct dynbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

static int dynbuf_reserve(struct dynbuf *b, size_t n)
{
	if (n > b->max || b->len + n > b->max)
		return -1;
	size_t need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	if (b->max < SIZE_MAX && cap > b->max + 1) /* SIZE_MAX: no bound (max + 1 wraps) */
		cap = b->max + 1;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
	return 0;
}

int dynbuf_add(struct dynbuf *b, const void *p, size_t n)
{
	if (dynbuf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int dynbuf_addstr(struct dynbuf *b, const char *s)
{
	return dynbuf_add(b, s, strlen(s));
}

int dynbuf_printf(struct dynbuf *b, const char *fmt, ...)
{
	va_list ap;
	/* the spare capacity, terminator included: cap <= max + 1, so what
	 * fits there never passes max */
	size_t room = b->cap - b->len;
	va_start(ap, fmt);
	int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < room) {
		b->len += (size_t)n;
		return 0;
	}
	if (room)
		b->data[b->len] = '\0'; /* a truncated attempt: unchanged */
	if (n < 0 || dynbuf_reserve(b, (size_t)n) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *dynbuf_space(struct dynbuf *b, size_t n)
{
	if (dynbuf_reserve(b, n) < 0)
		return NULL;
	return b->data + b->len;
}

void dynbuf_commit(struct dynbuf *b, size_t n)
{
	b->len += n;
	b->data[b->len] = '\0';
}

void dynbuf_reset(struct dynbuf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *dynbuf_take(struct dynbuf *b, size_t *len)
{
	char *p = b->data ? b->data : xstrdup("");
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}
