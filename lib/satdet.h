/* satdet.h - over-saturation within one run: requests in flight and time
 * to first token both growing without bound (docs/sweeps.md).
 *
 * An open-loop run (rate or trace) above what the server can serve keeps
 * sending while completions fall behind: the requests in flight grow
 * linearly and each new request queues behind more of them, so its time
 * to first token grows too. A run with `load.stop_on_saturation` (set by
 * capacity searches on their runs) stops as soon as both trends are
 * established, instead of spending its whole duration on a hopeless
 * value. The test, over the profiling phase after its first 0.5 s:
 *
 *   in flight  >= 8 samples spanning >= 2 s; the least-squares slope of
 *              in-flight on time is at least 1 request/s and at least 5
 *              standard errors above 0; the mean of the last third of the
 *              samples is at least twice the first third's plus 1;
 *   TTFT       >= 30 completed requests; Spearman's rank correlation of
 *              completion time and TTFT is at least 0.5; the median TTFT
 *              of the last third (by completion) is at least twice the
 *              first third's.
 *
 * A closed-loop run cannot trip it (its in-flight count is bounded), and
 * noise around a steady state does not: both conditions need a sustained,
 * large trend. Memory is fixed: the newest 240 in-flight samples and 4096
 * completions.
 */
#ifndef HR_SATDET_H
#define HR_SATDET_H

#include <stddef.h>

#define SATDET_SAMPLES 240
#define SATDET_DONE 4096

struct satdet {
	double t[SATDET_SAMPLES], infl[SATDET_SAMPLES]; /* ring, newest at (head - 1) */
	size_t n, head;
	double dt[SATDET_DONE], ttft[SATDET_DONE];
	size_t nd, dhead;
};

void satdet_init(struct satdet *d);
/* In flight at t_s seconds into the profiling phase. */
void satdet_inflight(struct satdet *d, double t_s, double in_flight);
/* A request completed at t_s seconds into the profiling phase with its
 * time to first token (or latency, for an unstreamed one) in ms. */
void satdet_done(struct satdet *d, double t_s, double ttft_ms);
/* 1 when both trends hold, with a sentence saying so in why; else 0. */
int satdet_check(const struct satdet *d, char *why, size_t n);

#endif
