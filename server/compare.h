/* compare.h - comparing runs metric by metric (docs/compare.md).
 *
 * One run against one run compares their per-request distributions from
 * the stored records: a seeded bootstrap of each percentile's difference,
 * Welch's interval for the mean, a Mann-Whitney rank test for a shift,
 * batch means for throughputs and Newcombe's interval for the error rate.
 * When either side is a group of repeats, the runs' own figures
 * (run_metrics) are compared across runs with Welch's interval. Every
 * figure gets a verdict by lib/cmprule.h. Also the per-run loader that
 * validity and gates use. Runs on the calling thread (an API thread or
 * the runner), with a reader connection per side while loading.
 */
#ifndef HR_COMPARE_H
#define HR_COMPARE_H

#include <jansson.h>
#include <stdint.h>

#include "hrlimits.h"
#include "spec.h"
#include "stats.h"
#include "store.h"

#define COMPARE_MAX_RUNS HR_MAX_REPEAT /* runs on one side */

struct cmp_opts {
	double conf;      /* two-sided confidence, default 0.95 */
	double noise_pct; /* default 5 */
	unsigned resamples;
	uint64_t seed;
	const char *only_metric; /* compute this metric only (gates), or NULL */
	json_t *head_summary;    /* borrowed: the head's summary when it is not
				  * stored yet (a run being judged), or NULL */
};
void cmp_opts_default(struct cmp_opts *o);

/* One run's per-request values (profiling phase), as the summary takes
 * them: one sorted array per distribution metric of metric_catalog (index
 * by catalog position; run-level entries stay empty), and what batch
 * means need per valid request. */
struct cmp_run {
	int64_t id;
	struct dvec vals[32];
	size_t n_dist;
	long long requests, valid, errors;
	int64_t first_start, last_end;
	struct dvec ends_s, osl, tokens, good, images; /* per valid request */
	int have_slo;
};
/* Loads run id's records; spec (borrowed) gives its goodput objectives.
 * Returns 0, or -1 with err. */
int cmp_run_load(struct store *s, int64_t id, const struct spec *spec, struct cmp_run *out,
		 char *err);
void cmp_run_release(struct cmp_run *r);

/* Compares head against base (each 1..COMPARE_MAX_RUNS finished runs).
 * Returns the answer of GET /compare (docs/api.md), or NULL with err. */
json_t *compare_runs(struct store *s, const int64_t *base, int nb, const int64_t *head, int nh,
		     const struct cmp_opts *o, char *err);

/* The entry of metric/stat in a compare answer (borrowed), or NULL. */
json_t *compare_entry(json_t *answer, const char *metric, const char *stat);

#endif
