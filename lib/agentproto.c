/* agentproto.c - small parsers of the daemon <-> agent link (agentproto.h). */
#include "agentproto.h"

#include <string.h>

#include "hrlimits.h"

int agentproto_chan(const void *s, size_t n, int64_t *run, int *idx)
{
	const char *p = s, *end = p + n;
	if (n == 0 || n > 40)
		return -1;
	int64_t r = 0;
	int digits = 0;
	while (p < end && *p >= '0' && *p <= '9' && digits < 18) {
		r = r * 10 + (*p++ - '0');
		digits++;
	}
	if (!digits || p == end || *p++ != ':')
		return -1;
	long i = 0;
	digits = 0;
	while (p < end && *p >= '0' && *p <= '9' && digits < 4) {
		i = i * 10 + (*p++ - '0');
		digits++;
	}
	if (!digits || p != end || i >= HR_MAX_WORKERS || r <= 0)
		return -1;
	*run = r;
	*idx = (int)i;
	return 0;
}

int agentproto_name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}
