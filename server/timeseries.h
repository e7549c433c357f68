/* timeseries.h - a run's records bucketed on its clock for the dashboard's
 * charts (GET /api/v1/runs/{id}/timeseries; docs/api.md, "Time series"):
 * per step the intended and actual sends, completions, errors by kind,
 * requests in flight, output tokens per second and percentiles of TTFT,
 * ITL, latency and schedule lag, computed exactly from the stored records.
 */
#ifndef HR_TIMESERIES_H
#define HR_TIMESERIES_H

#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"
#include "store.h"

/* Writes the JSON answer for run_id into out. step_ms 0 picks a step
 * (1, 2 or 5 times a power of ten ms) that makes at most max_buckets
 * buckets (1..HR_MAX_TS_BUCKETS; 0: HR_TS_AUTO_BUCKETS). Returns 0; -2
 * when step_ms would make more than HR_MAX_TS_BUCKETS buckets (err says
 * the smallest step allowed); -1 on error (err). */
int ts_build(struct store *s, int64_t run_id, long long step_ms, int max_buckets,
	     struct dynbuf *out, char *err);

/* Sorts n doubles (no NaN) ascending: a radix sort past 64. */
void ts_sort_doubles(double *v, size_t n);

#endif
