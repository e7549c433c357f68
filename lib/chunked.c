/* chunked.c - push decoder of the HTTP/1.1 chunked transfer coding (see
 * chunked.h). A state machine for the framing with the usual CRLF ends
 * taken whole, memchr past chunk extensions, and the data handed out in
 * one piece per chunk and feed. */
#include "chunked.h"

#include <string.h>

enum {
	S_SIZE, /* hex digits of a size line */
	S_EXT,  /* after the digits: skip to LF */
	S_DATA, /* chunk data */
	S_POST, /* after the data: CR* LF */
	S_END,  /* the last chunk was seen */
	S_BAD,  /* framing error */
};

#define MAX_DIGITS 16 /* as libcurl: the size fits 64 bits */

void chunked_init(struct chunked *c)
{
	c->state = S_SIZE;
	c->digits = 0;
	c->left = 0;
	c->used = 0;
}

bool chunked_done(const struct chunked *c)
{
	return c->state == S_END;
}

static int hexval(unsigned char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch |= 0x20;
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

int chunked_feed(struct chunked *c, const char *buf, size_t len, chunked_data_fn fn, void *ud)
{
	const char *p = buf, *end = buf + len;

	c->used = len;
	while (p < end) {
		switch (c->state) {
		case S_SIZE: {
			int v;
			while (p < end && (v = hexval((unsigned char)*p)) >= 0) {
				if (c->digits == MAX_DIGITS) {
					c->state = S_BAD;
					return CHUNKED_BAD;
				}
				c->left = c->left * 16 + (uint64_t)v;
				c->digits++;
				p++;
			}
			if (p == end)
				return 0;
			if (c->digits == 0) {
				c->state = S_BAD;
				return CHUNKED_BAD;
			}
			if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') { /* the usual end */
				p += 2;
				c->state = c->left ? S_DATA : S_END;
			} else {
				c->state = S_EXT; /* extensions: up to the LF */
			}
			break;
		}
		case S_EXT: {
			const char *lf = memchr(p, '\n', (size_t)(end - p));
			if (!lf)
				return 0;
			p = lf + 1;
			c->state = c->left ? S_DATA : S_END;
			break;
		}
		case S_DATA: {
			size_t have = (size_t)(end - p);
			size_t n = c->left < have ? (size_t)c->left : have;
			c->left -= n;
			if (c->left == 0)
				c->state = S_POST;
			const char *piece = p;
			p += n;
			int rc = fn(ud, piece, n);
			if (rc)
				return rc;
			break;
		}
		case S_POST:
			if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') { /* the usual end */
				p += 2;
			} else if (*p == '\n') {
				p++;
			} else if (*p == '\r') {
				p++;
				break;
			} else {
				c->state = S_BAD;
				return CHUNKED_BAD;
			}
			c->state = S_SIZE;
			c->digits = 0;
			c->left = 0;
			break;
		case S_END:
			c->used = (size_t)(p - buf);
			return 0;
		default:
			return CHUNKED_BAD;
		}
	}
	return c->state == S_BAD ? CHUNKED_BAD : 0;
}
