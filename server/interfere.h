/* interfere.h - interference between the traffic classes of one run.
 *
 * For every ordered pair of classes (A, B), A's profiling requests are
 * split by whether any request of B was in flight at some moment while
 * they were ("busy") or none was ("idle"); each split gets count, mean
 * and p50/p90/p99 of time to first token, inter-token latency and
 * request latency with 95% intervals, and the difference busy - idle
 * gets an interval too (Welch for the mean, the bootstrap of
 * docs/compare.md for percentiles) and a direction. docs/metrics.md,
 * "Interference between classes", gives the rule precisely.
 */
#ifndef HR_INTERFERE_H
#define HR_INTERFERE_H

#include <jansson.h>
#include <stdint.h>

#include "spec.h"
#include "store.h"

/* The split holds each request's times and three values in memory
 * (~48 bytes): beyond this many it reports itself skipped. */
#define INTERFERE_MAX_REQUESTS 20000000

/* The summary's "interference" object, NULL when the run has fewer than
 * two classes, or NULL with err set when the records cannot be read. */
json_t *interfere_compute(struct store *s, int64_t run_id, const struct spec *spec, char *err);

#endif
