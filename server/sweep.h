/* sweep.h - sweeps and capacity searches (docs/sweeps.md).
 *
 * A sweep runs one base spec at several values of one numeric spec field
 * (the variable: load.rate, load.concurrency, or any number in the spec),
 * each value as ordinary runs in the history linked to the sweep. Either
 * the values are given (a list, or a range), and the sweep queues them
 * all; or the sweep searches for the largest value that meets its SLOs,
 * queueing one run at a time: the two ends of the range first, then
 * points inside the bracket until it is narrower than the resolution.
 *
 * Each SLO is an upper limit on a latency percentile, judged as a claim
 * from the run's request counts (infer.h: proven to hold, proven to fail,
 * or uncertain at the sweep's confidence), or on the error rate, judged
 * the same way from the binomial count. An uncertain value is run again
 * (the counts pooled) up to `repeats` times, then counted as not passing.
 * A value whose client verdict is client_bound stops the search: the load
 * generator, not the server, was the limit there.
 *
 * Everything a sweep shows is recomputed from its runs' stored summaries;
 * the decisions are taken when a run of it ends (the runner thread) and
 * when a daemon starts (sweep_settle_all).
 */
#ifndef HR_SWEEP_H
#define HR_SWEEP_H

#include <jansson.h>
#include <stdint.h>

#include "store.h"

#define SWEEP_MAX_VALUES 64
#define SWEEP_MAX_SLOS 8
#define SWEEP_MAX_RUNS 200 /* runs one sweep may spend in all */

/* Validates a request body (borrowed; its "spec" already admitted by the
 * API as a run spec would be, normalised in *spec_json, stolen) and
 * queues the sweep's first runs, submitted by `who` (NULL: open daemon).
 * Returns 0 and *id; -400 with field and msg (256 bytes each); -1 with
 * msg on a store error. */
struct spec;
/* A check of each spec the sweep may run, beyond its own rules (the API:
 * the submitter's quotas): 0, or -1 with a message (256 bytes). */
typedef int (*sweep_check_fn)(void *ctx, const struct spec *spec, char *msg);
/* ... and -403 with field and msg when check refused the spec at a value.
 * The runs queued at once (every value's of a list; a search's first one
 * or two) count against the submitter's queued runs and the daemon's
 * queue (0: no bound): -429 (field "max_queued") or -503 with msg, and no
 * sweep. */
struct sweep_queue_limits {
	long long token_max_queued; /* the token's quota.max_queued */
	int max_queued_runs;        /* headroomd --max-queued-runs */
};
int sweep_create(struct store *s, json_t *body, json_t *spec_json, const char *who,
		 sweep_check_fn check, void *check_ctx, const struct sweep_queue_limits *lim,
		 int64_t *id, char *field, char *msg);
/* The sweep with its steps and result (new reference), or NULL: unknown id. */
json_t *sweep_get(struct store *s, int64_t id);
/* The newest first, at most limit, without steps. */
json_t *sweep_list(struct store *s, int limit);
/* The curve as CSV (caller frees), or NULL: unknown id. */
char *sweep_csv(struct store *s, int64_t id);
/* Cancels a running sweep and its queued or running runs: 0, -404, -409
 * (already over; *state its state). cancelled(ctx, run_id, state_before)
 * is called for each run it cancelled (the API stops a running one). */
int sweep_cancel(struct store *s, int64_t id, const char **state,
		 void (*cancelled)(void *ctx, int64_t run_id, const char *state), void *ctx);
/* A run ended (or was cancelled while queued): when it belongs to a
 * running sweep, take the sweep's next decision. */
void sweep_run_finished(struct store *s, int64_t run_id);
/* Takes the next decision of every running sweep (at start-up). */
void sweep_settle_all(struct store *s);

#endif
