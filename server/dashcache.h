/* dashcache.h - the dashboard's answers about finished runs, kept in
 * memory: a finished run's records never change, so its time series and
 * distributions (GET /runs/{id}/timeseries, /distribution), which read
 * every record, are computed once and then answered from here. Bounded:
 * at most DASHCACHE_ENTRIES answers and DASHCACHE_BYTES bytes, the least
 * recently used dropped first. Thread-safe. Keys start with the run's id;
 * run ids are never reused, and a route asks the store whether the run
 * still exists (and has finished) before it looks here, so a deleted run's
 * answers are never served (they age out).
 */
#ifndef HR_DASHCACHE_H
#define HR_DASHCACHE_H

#include <stddef.h>
#include <stdint.h>

#define DASHCACHE_ENTRIES 64
#define DASHCACHE_BYTES (32u << 20)

/* A malloc'ed copy of the answer kept under key (len set), or NULL. */
char *dashcache_get(const char *key, size_t *len);
/* Keeps a copy of text[0..len) under key (one over DASHCACHE_BYTES / 4 is not kept). */
void dashcache_put(const char *key, const char *text, size_t len);
#endif
