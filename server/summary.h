/* summary.h - a run's summary, computed exactly from its stored records.
 *
 * Reads every record of the run (a reader connection, streaming) into one
 * sample per metric (xstat.h): while the samples fit the memory budget
 * they keep their values and take their statistics by selection (stats.h),
 * beyond it they ask for further passes over the records and give the
 * same figures bit for bit; the start and done times behind the load
 * section are sorted in memory or in runs on disk (spill.h). Counts
 * goodput against the spec's objectives. The
 * result follows docs/api.md ("Summary JSON"); metric definitions are
 * lib/metrics.h, versioned by METRICS_VERSION.
 */
#ifndef HR_SUMMARY_H
#define HR_SUMMARY_H

#include <jansson.h>
#include <stdint.h>

#include "record.h"
#include "spec.h"
#include "store.h"

/* Returns a new summary object, or NULL with err. spec (borrowed) gives
 * the requested load to compare with what was achieved; t0_wall (wall ns
 * of the run's time zero, 0 if it never started) places the profiling
 * window on the telemetry timeline. valid_out (may be
 * NULL) receives the number of valid profiling records. */
/* The memory budget of one summary (headroomd --summary-memory-mb): about
 * half for the samples' values, a quarter for the load times; the passes'
 * own counts add ~1 MiB per metric. Set once at start. */
#define SUMMARY_MEMORY_DEFAULT ((size_t)256 << 20)
void summary_set_memory(size_t bytes);

json_t *summary_compute(struct store *s, int64_t run_id, const struct spec *spec,
			int64_t t0_wall, long long *valid_out, char *err);

/* The same, saying what it took: passes over the records (1 when the
 * values fit the budget) and sorted runs of times written to disk. */
struct summary_cost {
	int passes;
	size_t spill_runs;
};
json_t *summary_compute_ex(struct store *s, int64_t run_id, const struct spec *spec,
			   int64_t t0_wall, long long *valid_out, struct summary_cost *cost,
			   char *err);

/* Goodput: whether a valid record meets every objective of spec. */
int summary_meets_slos(const struct spec *spec, const struct hr_record *r);

/* Summary JSON -> CSV text (caller frees). */
char *summary_to_csv(json_t *summary);

#endif
