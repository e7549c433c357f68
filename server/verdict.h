/* verdict.h - did the load generator have room left? The `client` section
 * of every summary: a verdict (ok, client_bound, inconclusive), the
 * reasons with their evidence, headline figures, and the run's load as a
 * fraction of this host's calibrated ceiling (docs/client.md).
 */
#ifndef HR_SERVER_VERDICT_H
#define HR_SERVER_VERDICT_H

#include <jansson.h>
#include <stdint.h>

#include "spec.h"
#include "store.h"

/* The client section for a finished run: reads its client samples and the
 * latest calibration, takes schedule lag and load from summary (borrowed;
 * may be NULL). workers: how many workers the run started. Never NULL. */
json_t *verdict_compute(struct store *s, int64_t run_id, const struct spec *spec, int workers,
			json_t *summary);

/* The verdict string of a summary's client section, "" when absent. */
const char *verdict_of(json_t *summary);

#endif
