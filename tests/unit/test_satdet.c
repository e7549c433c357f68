/* test_satdet.c - unit tests of lib/satdet.c: a steady open-loop run
 * (noisy in-flight and TTFT around a level) never trips the detector; one
 * whose in-flight count and TTFT both grow does, and says by how much;
 * either trend alone does not; too short a window does not; samples of
 * the first half second are ignored. */
#include <math.h>
#include <string.h>

#include "rng.h"
#include "satdet.h"
#include "tap.h"

/* 4 samples a second for secs seconds and done_rate completions a
 * second; in-flight = base + grow_in * t (+ noise), TTFT = tt0 + grow_tt * t */
static int feed(double secs, double base, double grow_in, double tt0, double grow_tt,
		double done_rate, uint64_t seed, char *why)
{
	struct satdet d;
	satdet_init(&d);
	int k = 0;
	for (double t = 0; t <= secs; t += 0.25, k++) {
		double noise = (rng_uniform(seed, 1, (uint64_t)k) - 0.5) * 4;
		satdet_inflight(&d, t, fmax(0, base + grow_in * t + noise));
	}
	int n = (int)(secs * done_rate);
	for (int i = 0; i < n; i++) {
		double t = (i + 0.5) / done_rate;
		double noise = rng_uniform(seed, 2, (uint64_t)i) * 0.3 * tt0;
		satdet_done(&d, t, tt0 + grow_tt * t + noise);
	}
	return satdet_check(&d, why, 400);
}

int main(void)
{
	char why[400] = "";
	/* steady: 20 in flight, TTFT 40 ms, for 30 s */
	CHECK_EQ_INT(feed(30, 20, 0, 40, 0, 40, 1, why), 0);
	/* oversaturated: in flight +60/s, TTFT +300 ms/s */
	CHECK_EQ_INT(feed(4, 10, 60, 40, 300, 40, 2, why), 1);
	CHECK(strstr(why, "oversaturated: requests in flight grew") == why);
	CHECK(strstr(why, "time to first token from") != NULL);
	/* in flight grows, TTFT flat (a slow start that catches up): no */
	CHECK_EQ_INT(feed(10, 5, 20, 40, 0, 40, 3, why), 0);
	/* TTFT grows, in flight flat (a closed loop on a slowing server): no */
	CHECK_EQ_INT(feed(10, 32, 0, 40, 50, 40, 4, why), 0);
	/* both grow, but only 1.5 s of samples: not yet */
	CHECK_EQ_INT(feed(1.5, 10, 60, 40, 300, 40, 5, why), 0);
	/* both grow, too few completions (20): not yet */
	CHECK_EQ_INT(feed(4, 10, 60, 40, 300, 5, 6, why), 0);
	/* the first half second is not taken: samples only there count for nothing */
	struct satdet d;
	satdet_init(&d);
	for (int i = 0; i < 100; i++)
		satdet_inflight(&d, 0.004 * i, i);
	CHECK_EQ_INT(d.n, 0);
	/* the rings keep the newest samples: a long steady run, then a
	 * saturating end, trips it on the end alone */
	satdet_init(&d);
	for (int k = 0; k < 400; k++)
		satdet_inflight(&d, 1 + 0.25 * k, 20);
	for (int i = 0; i < 5000; i++)
		satdet_done(&d, 1 + i * 0.02, 40);
	CHECK_EQ_INT(satdet_check(&d, why, sizeof why), 0);
	for (int k = 0; k < 40; k++)
		satdet_inflight(&d, 101 + 0.25 * k, 20 + 15.0 * k);
	for (int i = 0; i < 4096; i++)
		satdet_done(&d, 101 + i * 0.0025, 40 + i);
	CHECK_EQ_INT(satdet_check(&d, why, sizeof why), 1);
	return tap_done();
}
