/* web_assets.h - the dashboard's static files, compiled in from web/. */
#ifndef HR_WEB_ASSETS_H
#define HR_WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
	const char *path; /* "/index.html" */
	const char *type; /* Content-Type */
	size_t size;
	const unsigned char *data;
};

extern const struct web_asset web_assets[];
extern const int web_assets_count;

#endif
