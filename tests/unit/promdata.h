/* promdata.h - reads the exporter pages of tests/unit/data/prom/ for the
 * unit tests of lib/prom.c and lib/promap.c. */
#ifndef HR_TEST_PROMDATA_H
#define HR_TEST_PROMDATA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "prom.h"
#include "tap.h"

/* tests/unit/data/prom/NAME: under $HEADROOM_SRC when set, else next to
 * this source file. Returns the contents (caller frees) or NULL. */
static inline char *read_data(const char *name, size_t *len)
{
	const char *src = getenv("HEADROOM_SRC");
	char path[4096];
	if (src && *src) {
		snprintf(path, sizeof(path), "%s/tests/unit/data/prom/%s", src, name);
	} else {
		const char *f = __FILE__, *slash = strrchr(f, '/');
		int dir = slash ? (int)(slash - f + 1) : 0;
		snprintf(path, sizeof(path), "%.*sdata/prom/%s", dir, f, name);
	}
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		tap_ok(0, "cannot open %s", path);
		return NULL;
	}
	struct dynbuf b;
	char chunk[4096];
	size_t got;
	dynbuf_init(&b, PROM_MAX_INPUT_BYTES);
	while ((got = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		dynbuf_add(&b, chunk, got);
	fclose(fp);
	return dynbuf_take(&b, len);
}

#endif
