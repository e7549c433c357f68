/* sched.h - the arrival schedule of a rate-mode run: when request k is
 * meant to go out.
 *
 * The schedule is a pure function of (arrival law, rate, smoothness, ramp,
 * seed, stream): arrival k's interval is drawn from rng stream `stream` at
 * index k, so every worker can generate the same global sequence and take
 * its own arrivals (k mod workers == index) without any message per
 * request, and the merged traffic is exactly the requested process.
 *
 * Laws (mean interval 1/rate in all three):
 *   constant  every interval is 1/rate
 *   poisson   exponential intervals (coefficient of variation 1)
 *   gamma     gamma(k = smoothness, scale = 1/(k*rate)): CV = 1/sqrt(k);
 *             k = 1 is Poisson, k < 1 burstier, k > 1 smoother
 * (with batches, the law spaces the batches: see sched_set_batch).
 * Arrival 0 is at time 0. A ramp makes the rate rise linearly from 0 to
 * `rate` over ramp_s: arrivals are generated at the full rate in
 * "operational time" s and mapped to wall time t by inverting
 * s(t) = t^2 / (2 ramp_s) for t < ramp_s, and t - ramp_s / 2 after.
 */
#ifndef HR_SCHED_H
#define HR_SCHED_H

#include <stdint.h>

enum sched_law { SCHED_CONSTANT = 0, SCHED_POISSON, SCHED_GAMMA };

struct sched {
	int law;
	double rate, smoothness, ramp_s;
	uint64_t seed, stream;
	uint64_t k;  /* index of the next arrival */
	double s;    /* operational time of the next arrival (of its batch), seconds */
	int batch;       /* arrivals per batch; 0 or 1: none */
	double jitter_s; /* a batch's arrivals spread over this */
	int64_t last;    /* the previous arrival (batches never go back in time) */
};

void sched_init(struct sched *s, int law, double rate, double smoothness, double ramp_s,
		uint64_t seed, uint64_t stream);
/* Batches (load.batch): arrivals come `batch` at a time, the batches
 * spaced by the law at rate / batch; arrival j of a batch is
 * jitter_s * (j + u) / batch after the batch's time (u uniform from the
 * stream's own indices), never before the previous arrival. The mean rate
 * stays `rate`. Call after sched_init; batch <= 1 turns batches off. */
void sched_set_batch(struct sched *s, int batch, double jitter_s);
/* Time of arrival s->k in ns since the phase start (at most HR_FAR_NS);
 * advances to k + 1. */
int64_t sched_next(struct sched *s);

/* One gamma(shape, 1) variate from the counter-based stream (exposed for tests). */
double sched_gamma(uint64_t seed, uint64_t stream, uint64_t index, double shape);

#endif
