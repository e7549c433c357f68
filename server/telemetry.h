/* telemetry.h - GPU and inference-server telemetry collected during a run.
 *
 * A collector is a thread the runner starts when a run starts and stops
 * when it ends. Every telemetry.interval_ms it samples the local GPUs
 * through NVML (lib/nvml.h) and scrapes the DCGM exporter pages and the
 * inference server's /metrics (lib/prom.h, lib/promap.h), stamping each
 * sample with the wall clock, and hands batches to the store. The first
 * pass is the baseline (before any warm-up), and stopping takes a final
 * pass after the last request. A source that cannot be reached is marked
 * unavailable with the reason; the run goes on regardless.
 *
 * Threading: the collector owns its NVML handle and curl handles; it only
 * talks to the store through store_post.
 */
#ifndef HR_TELEMETRY_H
#define HR_TELEMETRY_H

#include <stdint.h>

#include "spec.h"
#include "store.h"

struct collector;

/* spec is borrowed for the collector's lifetime; nvml_lib may be NULL. */
struct collector *collector_start(struct store *s, int64_t run_id, const struct spec *spec,
				  const char *nvml_lib);
/* Final pass, join, store the sources' status. NULL is a no-op. */
void collector_stop(struct collector *c);

#endif
