/* dynbuf.h - a growable byte buffer with a hard maximum size.
 *
 * Every buffer that grows with outside input is a dynbuf created with the
 * bound from limits.h that applies; adding past the bound fails instead of
 * allocating. The contents are always NUL-terminated for convenience (the
 * terminator is not counted in len). Embedded struct: dynbuf_init /
 * dynbuf_release.
 */
#ifndef HR_DYNBUF_H
#define HR_DYNBUF_H

#include <stddef.h>

struct dynbuf {
	char *data; /* owned; NULL until the first add */
	size_t len;
	size_t cap;
	size_t max; /* len never exceeds this */
};

void dynbuf_init(struct dynbuf *b, size_t max);
void dynbuf_release(struct dynbuf *b);
/* Append n bytes. Returns 0, or -1 (buffer unchanged) when len would pass max. */
int dynbuf_add(struct dynbuf *b, const void *p, size_t n);
int dynbuf_addstr(struct dynbuf *b, const char *s);
/* Formats into the spare capacity; a second pass only when it did not fit. */
int dynbuf_printf(struct dynbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Room for writing in place: returns where n more bytes go (plus the
 * terminator), or NULL (buffer unchanged) when len + n would pass max.
 * Write at most n bytes there, then dynbuf_commit the number written. */
char *dynbuf_space(struct dynbuf *b, size_t n);
void dynbuf_commit(struct dynbuf *b, size_t n); /* len += n, and terminates */
void dynbuf_reset(struct dynbuf *b); /* len = 0, keeps the allocation */
/* Hands the contents to the caller (caller frees) and resets the buffer. */
char *dynbuf_take(struct dynbuf *b, size_t *len);

#endif
