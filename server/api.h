/* api.h - the REST API (docs/api.md, api/openapi.yaml) on libmicrohttpd.
 *
 * Threading: MHD runs a small pool of threads; a handler validates its
 * input, then either reads through a pooled reader connection or hands a
 * write to the store thread and waits for it (a few milliseconds at most).
 * Record exports stream from a cursor and never hold a run in memory.
 *
 * Bounded under abuse (docs/limits.md): each request takes one reader
 * before its handler runs, waiting at most reader_wait_ms (else 503 busy,
 * Retry-After); streamed exports read through the store's separate export
 * pool (none free: 503 busy at once), so stalled downloads never hold the
 * API's readers; connections are capped in total and per client address
 * (MHD refuses the rest); POST /runs past max_queued_runs is 503
 * queue_full.
 */
#ifndef HR_API_H
#define HR_API_H

#include <stdio.h>

#include "auth.h"
#include "netallow.h"
#include "runner.h"
#include "store.h"

struct api;

struct api_opts {
	const char *listen;    /* HOST:PORT; port 0 picks a free one */
	int default_workers;   /* for specs without "workers" */
	const char *web_dir;   /* static dashboard files, may be NULL */
	const struct secrets *secrets; /* declared secrets (secrets.h); may be NULL */
	/* bounds; 0 takes the default from lib/hrlimits.h */
	int reader_wait_ms;            /* HR_READER_WAIT_MS */
	int max_connections;           /* HR_MAX_CONNECTIONS */
	int max_connections_per_client; /* HR_MAX_CONNECTIONS_PER_CLIENT */
	int max_queued_runs;           /* HR_MAX_QUEUED_RUNS */
	struct auth_opts auth;         /* tokens, TLS, allowed hosts (auth.h) */
	/* borrowed: the targets allowed (netallow.h), or NULL; a literal
	 * address that it refuses is answered 400 at submission */
	const struct netallow *allow;
	const char *backup_dir; /* POST /backups writes its backups here */
};

int api_start(struct store *s, struct runner *r, const struct api_opts *o, struct api **out,
	      char *err);
/* The address actually bound, "HOST:PORT" (borrowed). */
const char *api_address(const struct api *a);
void api_free(struct api *a);

/* Writes "METHOD PATH" per route, one per line (for the OpenAPI test). */
void api_list_routes(FILE *out);

#endif
