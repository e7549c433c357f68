/* telesum.h - telemetry over a run's profiling window, for the summary,
 * and the raw samples, the GPUs seen and the clock anchors for exports
 * (GET /runs/{id}/telemetry).
 *
 * Window statistics (docs/metrics.md, "Telemetry"): gauges get count,
 * avg, min, max, p50, p90, p99 of the samples inside the window; counters
 * their increase and rate between the samples that bracket the window;
 * histograms the bucket increase over the window and estimated
 * percentiles. GPU energy is the energy counter's increase (or mean power
 * times the window when only power is known), per output token too.
 */
#ifndef HR_TELESUM_H
#define HR_TELESUM_H

#include <jansson.h>
#include <stdint.h>

#include "dynbuf.h"
#include "store.h"

/* The summary's "telemetry" object (new reference). win_start/win_end are
 * wall-clock ns (0, 0 when the run has no window); output_tokens is the
 * run's total OSL for energy per token. */
json_t *telesum_compute(struct store *s, int64_t run_id, int64_t win_start, int64_t win_end,
			long long output_tokens);

/* Raw samples, streamed: a cursor yielding one CSV or JSON row at a time. */
struct tele_cursor;
/* t0_wall is the run's time zero (rows carry t_s relative to it). */
struct tele_cursor *tele_cursor_open(struct store *s, int64_t run_id, int64_t t0_wall);
/* Appends the next row to out (CSV line or JSON object without separator).
 * Returns 1, 0 at the end, -1 on error. */
int tele_cursor_next(struct tele_cursor *c, int csv, struct dynbuf *out);
void tele_cursor_free(struct tele_cursor *c);
/* The CSV header line. */
extern const char tele_csv_header[];
/* The sources' status as a JSON array (new reference). */
json_t *tele_sources(struct store *s, int64_t run_id);
/* The GPUs the sources reported, as a JSON array of {source, gpu, index,
 * uuid, name} (new reference; null members when a source did not say). */
json_t *tele_gpus(struct store *s, int64_t run_id);
/* The clock anchors: {"daemon": {mono_ns, wall_ns} or null, "workers":
 * [{worker, mono_ns, wall_ns}]} (new reference). */
json_t *tele_clock(struct store *s, int64_t run_id);
/* The export's members before its samples: ,"sources":[..],"gpus":[..],"clock":{..} */
void tele_export_members(struct store *s, int64_t run_id, struct dynbuf *out);

#endif
