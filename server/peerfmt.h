/* peerfmt.h - a run written in the shapes other benchmark tools write and
 * read: AIPerf's profile_export_aiperf.json, profile_export_aiperf.csv and
 * per-request profile_export.jsonl, and the result JSON of vLLM's
 * `bench serve` (benchmark_serving.py --save-result). docs/formats.md says
 * where each field comes from and what headroom puts in it.
 */
#ifndef HR_PEERFMT_H
#define HR_PEERFMT_H

#include <jansson.h>
#include <stdint.h>

#include "dynbuf.h"
#include "record.h"

/* What a pass over a run's profiling records adds up (valid records only,
 * as every summary figure): the totals AIPerf and vLLM print. */
struct peer_totals {
	long long requests; /* profiling records, valid or not */
	long long valid;
	long long sum_isl, sum_osl; /* valid records with a known count */
};

/* Adds one record to t (warm-up records are ignored). */
void peer_totals_add(struct peer_totals *t, const struct hr_record *r);

/* profile_export_aiperf.json for a run (GET /runs/{id} with its spec and
 * summary) and its totals. Returns a new object, never NULL. */
json_t *peer_aiperf_json(const json_t *run, const struct peer_totals *t, const char *version);

/* profile_export_aiperf.csv: the request metrics (one per row, AIPerf's
 * statistic columns), a blank line, then the run-level figures. */
void peer_aiperf_csv(struct dynbuf *out, const json_t *run, const struct peer_totals *t);

/* One line of profile_export.jsonl for r (t0_wall: the run's time zero as
 * wall-clock ns, so times are epoch ns as AIPerf writes them). Writes
 * nothing for a warm-up record. 0, or -1 when out is full. */
int peer_aiperf_record(struct dynbuf *out, const struct hr_record *r, int64_t t0_wall);

/* vLLM's result JSON without its closing brace (so the per-request arrays
 * can follow): the headline members from the run and its totals. */
void peer_vllm_head(struct dynbuf *out, const json_t *run, const struct peer_totals *t);

/* The per-request arrays of a vLLM result, built one record at a time. */
struct peer_vllm_arrays {
	struct dynbuf input_lens, output_lens, ttfts, itls, errors, texts;
	long long n;
	size_t bound; /* of all six together, in bytes */
};
void peer_vllm_arrays_init(struct peer_vllm_arrays *a, size_t bound);
/* Adds r (a warm-up record is skipped). 0, or -1 when the arrays together
 * pass their bound (they are then no longer usable). */
int peer_vllm_arrays_add(struct peer_vllm_arrays *a, const struct hr_record *r);
/* Appends ,"input_lens":[...],... to out. 0, or -1 when out is full. */
int peer_vllm_arrays_finish(struct peer_vllm_arrays *a, struct dynbuf *out);
void peer_vllm_arrays_release(struct peer_vllm_arrays *a);

#endif
