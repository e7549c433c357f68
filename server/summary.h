/* summary.h - a run's summary, computed exactly from its stored records.
 *
 * Reads every record of the run (a reader connection, streaming), keeps
 * one array of values per metric and takes their statistics by selection
 * (stats.h: the same figures as sorting, without sorting), counts goodput
 * against the spec's objectives, and adds the load section. The
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
json_t *summary_compute(struct store *s, int64_t run_id, const struct spec *spec,
			int64_t t0_wall, long long *valid_out, char *err);

/* Goodput: whether a valid record meets every objective of spec. */
int summary_meets_slos(const struct spec *spec, const struct hr_record *r);

/* Summary JSON -> CSV text (caller frees). */
char *summary_to_csv(json_t *summary);

#endif
