/* jsonesc.h - appending text as the inside of a JSON string. */
#ifndef HR_JSONESC_H
#define HR_JSONESC_H

#include <stddef.h>

#include "dynbuf.h"

/* Appends s[0..n) escaped for the inside of a JSON string ("\"", "\\\\",
 * control characters; other bytes as they are, so valid UTF-8 stays
 * valid). Returns 0, or -1 when out would pass its maximum. */
int json_escape_append(struct dynbuf *out, const char *s, size_t n);

#endif
