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

/* Adds what the host did to the workers' CPUs to a client section:
 * `headline.host_cpu_wait`, the share of the run's wall time this host's
 * runnable tasks waited for a CPU (the kernel's pressure stall figures),
 * and `headline.host_steal`, the share of the host's CPU time its
 * hypervisor ran something else (/proc/stat steal); NaN: not measured,
 * null. A note names each as a likely cause (`host_contended` over
 * HOST_WAIT_NOTE, `host_steal` over HOST_STEAL_NOTE) when the verdict is
 * not ok or the schedule lag p99 of summary (borrowed, may be NULL) is
 * over LATE_NOTE_MS, the pacing target of a quiet host. The verdict
 * stays. */
#define HOST_WAIT_NOTE 0.05
#define HOST_STEAL_NOTE 0.01
#define LATE_NOTE_MS 1.0
void verdict_host(json_t *client, json_t *summary, double wait, double steal);
/* The 'some' total of /proc/pressure/cpu (microseconds runnable tasks
 * waited for a CPU since boot), or -1 where the kernel does not keep it. */
long long host_cpu_pressure_us(void);
/* The steal and the total of all CPUs' time since boot (/proc/stat, in
 * clock ticks); -1 where not readable. */
int host_cpu_steal(long long *steal, long long *total);

/* The verdict string of a summary's client section, "" when absent. */
const char *verdict_of(json_t *summary);

#endif
