/* telemetry.h - GPU and inference-server telemetry collected during a run.
 *
 * A collector is a thread the runner starts when a run starts and stops
 * when it ends. Every telemetry.interval_ms it samples the local GPUs
 * through NVML (lib/nvml.h) and scrapes the DCGM exporter pages and the
 * inference server's /metrics (lib/prom.h, lib/promap.h), stamping each
 * sample with the wall clock, and hands batches to the store. Each source
 * keeps its own schedule and the pages are fetched side by side (one curl
 * multi handle), so a stalled page delays only itself, by at most
 * telemetry.scrape_timeout_ms. The first pass of every source is the
 * baseline: the runner waits for it (collector_wait_baseline) before the
 * first request, warm-up included. Stopping takes a final pass after the
 * last request. A source that cannot be reached is marked unavailable with
 * the reason; the run goes on regardless. Beside the samples it stores
 * each GPU's index, UUID and name as its sources report them, and the
 * daemon's (monotonic, wall) clock anchor.
 *
 * Threading: the collector owns its NVML handle and curl handles; it only
 * talks to the store through store_post.
 */
#ifndef HR_TELEMETRY_H
#define HR_TELEMETRY_H

#include <stdint.h>

#include "netallow.h"
#include "spec.h"
#include "store.h"

struct collector;

/* The baseline wait's allowance beyond the scrape timeout (NVML's reads). */
#define BASELINE_MARGIN_NS 2000000000LL

/* spec and allow (the targets allowed, docs/security.md "Targets"; NULL:
 * all) are borrowed for the collector's lifetime; nvml_lib may be NULL. */
struct collector *collector_start(struct store *s, int64_t run_id, const struct spec *spec,
				  const char *nvml_lib, const struct netallow *allow);
/* Blocks until every source has completed its first pass (the baseline),
 * at most telemetry.scrape_timeout_ms plus BASELINE_MARGIN_NS, or until
 * give_up(ud) (asked every 100 ms; may be NULL) says to stop waiting.
 * Returns 0, or -1 when it stopped waiting (a late baseline is logged).
 * NULL is a no-op. */
int collector_wait_baseline(struct collector *c, int (*give_up)(void *ud), void *ud);
/* Final pass, join, store the sources' status. quick (a cancelled or
 * interrupted run): pages still loading are given up, and sources that
 * failed are not asked again. NULL is a no-op. */
void collector_stop(struct collector *c, int quick);

#endif
