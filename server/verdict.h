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

/* Adds the host's CPU contention to a client section: `headline.host_cpu_wait`,
 * the share of the run's wall time this host's runnable tasks waited for a
 * CPU (the kernel's pressure stall figures; NaN: not measured, null), and,
 * when the verdict is not ok and the share is over HOST_WAIT_NOTE, a note
 * `host_contended` naming it as a likely cause. The verdict stays. */
#define HOST_WAIT_NOTE 0.05
void verdict_host_wait(json_t *client, double wait);
/* The 'some' total of /proc/pressure/cpu (microseconds runnable tasks
 * waited for a CPU since boot), or -1 where the kernel does not keep it. */
long long host_cpu_pressure_us(void);

/* The verdict string of a summary's client section, "" when absent. */
const char *verdict_of(json_t *summary);

#endif
