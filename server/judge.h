/* judge.h - a finished run's validity and gates (docs/compare.md).
 *
 * Validity says whether the run's numbers can be trusted as a result:
 * enough valid requests for the highest percentile it must support, long
 * and large enough for the spec's minimums, an error rate within its
 * limit, and a client that kept up. Percentile claims ("p99 of TTFT <= 200
 * ms") are judged by the binomial rule of infer.h. Gates are thresholds
 * on any figure and regressions against a baseline (compare.h). Both run
 * on the runner thread once the summary and the client verdict exist.
 */
#ifndef HR_JUDGE_H
#define HR_JUDGE_H

#include <jansson.h>
#include <stdint.h>

#include "spec.h"
#include "store.h"

/* Adds "validity" and (when the spec has gates) "gates" to summary
 * (borrowed, changed in place). Never fails: what cannot be judged says so
 * in the result. */
void judge_run(struct store *s, int64_t id, const struct spec *spec, json_t *summary);

/* The figure metric.stat of a summary (stat "value" for run-level ones);
 * NaN when absent. */
double judge_figure(json_t *summary, const char *metric, const char *stat);

#endif
