/* jsonesc.c - JSON string escaping into a dynbuf (jsonesc.h). */
#include "jsonesc.h"

#include <stdio.h>
#include <string.h>

int json_escape_append(struct dynbuf *out, const char *s, size_t n)
{
	size_t from = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		char esc[8];
		if (c == '\n')
			memcpy(esc, "\\n", 3);
		else if (c == '"' || c == '\\')
			esc[0] = '\\', esc[1] = (char)c, esc[2] = '\0';
		else
			snprintf(esc, sizeof esc, "\\u%04x", c);
		if (dynbuf_add(out, s + from, i - from) < 0 || dynbuf_addstr(out, esc) < 0)
			return -1;
		from = i + 1;
	}
	return dynbuf_add(out, s + from, n - from);
}
