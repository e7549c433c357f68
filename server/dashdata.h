/* dashdata.h - bounded views of a run's records for the dashboard: one
 * metric's distribution as at most N points of its CDF, and a few whole
 * records (the slowest, the failed) without reading every record into the
 * browser (docs/api.md, "Distributions and requests").
 */
#ifndef HR_DASHDATA_H
#define HR_DASHDATA_H

#include <stdint.h>

#include "dynbuf.h"
#include "store.h"

#define DASH_MAX_METRICS 8 /* metrics of one GET /runs/{id}/distribution */

/* The JSON answer of GET /runs/{id}/distribution for n_metrics metrics
 * (indexes of metric_defs, distinct; the caller checked them) into out,
 * all from one read of the records: each metric's values over the valid
 * profiling records (every sent one for a METRIC_SENT metric), every value
 * in order when there are at most points of them, else the quantiles at
 * fractions i / (points - 1). 0, or -1 with err. */
int dash_distribution(struct store *s, int64_t run_id, const int *metrics, int n_metrics,
		      int points, struct dynbuf *out, char *err);

enum dash_order { DASH_SLOWEST, DASH_FAILED, DASH_SEQ };

/* The JSON answer of GET /runs/{id}/requests: {"run_id", "order",
 * "requests": [records as the JSONL export writes them]}, the limit
 * slowest valid profiling requests by request latency (slowest first, ties
 * by worker and seq), the first limit failed ones (worker, seq order), or
 * (DASH_SEQ) every request in (worker, seq) order from (from_worker,
 * from_seq) on, limit of them, with "next" (the "worker/seq" of the one
 * after the last, or null) and "total" (the run's records): paging
 * through any request. 0, or -1 with err. */
int dash_requests(struct store *s, int64_t run_id, enum dash_order order, int limit,
		  uint32_t from_worker, uint64_t from_seq, struct dynbuf *out, char *err);

#endif
