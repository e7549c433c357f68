/* selfmet.h - the daemon's own metrics, GET /metrics in the Prometheus text
 * format (docs/operations.md, "Metrics"): HTTP requests and their latency
 * by route, store commits and their latency, records ingested, workers
 * alive, and, read when scraped, runs by state, the writer's backlog, free
 * disk and build info. The counters are process-wide and thread-safe
 * (the API threads, the store writer and the runner update them).
 */
#ifndef HR_SELFMET_H
#define HR_SELFMET_H

#include <stdint.h>

#include "store.h"

/* One HTTP request ended: its route pattern ("/api/v1/runs/{id}", "asset",
 * "other"), method, status and duration. */
void selfmet_http(const char *route, const char *method, unsigned status, double seconds);
/* A store transaction committed (ok) or failed, and how long it took. */
void selfmet_commit(int ok, double seconds);
/* Records received from workers and passed to the store. */
void selfmet_records(long long n);
/* Workers of the run in progress that are alive (0 between runs). */
void selfmet_workers(int alive);
/* The runner thread is alive: it calls this at least once a second. */
void selfmet_runner_tick(void);
/* Seconds since the runner's last tick (a large number if it never ran). */
double selfmet_runner_idle_s(void);

/* The exposition text (caller frees): the counters above and what is read
 * now from the store (runs by state, the writer's backlog). */
char *selfmet_render(struct store *s);

#endif
