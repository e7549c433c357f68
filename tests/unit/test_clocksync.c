/* test_clocksync.c - clock offsets by the minimum-delay filter
 * (lib/clocksync.c): known offsets and asymmetric delays, the bound
 * always holding the truth, drift slopes, impossible exchanges. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "clocksync.h"
#include "rng.h"
#include "tap.h"

/* An exchange at daemon time t with the worker's clock `off` ahead, the
 * request taking `up` ns, the worker `work` ns, the answer `down` ns. */
static struct clock_sample xchg(int64_t t, int64_t off, int64_t up, int64_t work, int64_t down)
{
	struct clock_sample s = {t, t + up + off, t + up + work + off, t + up + work + down};
	return s;
}

static void test_exact(void)
{
	int64_t off, del;
	struct clock_sample s = xchg(1000000, 5000000000LL, 30000, 7000, 30000);
	CHECK_EQ_INT(clock_eval(&s, &off, &del), 0);
	CHECK_EQ_INT(off, 5000000000LL); /* symmetric: exact */
	CHECK_EQ_INT(del, 60000);
	/* negative offsets, clocks far apart */
	s = xchg(INT64_C(9000000000000), -INT64_C(8000000000000), 100, 10, 300);
	CHECK_EQ_INT(clock_eval(&s, &off, &del), 0);
	CHECK(llabs(off - -INT64_C(8000000000000)) <= 200 / 2 + 1);
	CHECK_EQ_INT(del, 400);
	/* impossible ones */
	struct clock_sample bad = {100, 50, 40, 200};
	CHECK_EQ_INT(clock_eval(&bad, &off, &del), -1);
	struct clock_sample back = {100, 150, 160, 90};
	CHECK_EQ_INT(clock_eval(&back, &off, &del), -1);
	struct clock_est e;
	clock_estimate(&bad, 1, &e);
	CHECK_EQ_INT(e.ok, 0);
}

/* random asymmetric delays: the chosen bound holds the truth, and the
 * least delay wins */
static void test_min_delay(void)
{
	int bad = 0;
	for (uint64_t trial = 0; trial < 2000; trial++) {
		int64_t truth = (int64_t)(rng_uniform(7, 1, trial) * 2e10) - (int64_t)1e10;
		struct clock_sample s[16];
		int64_t best = INT64_MAX;
		for (int k = 0; k < 16; k++) {
			uint64_t i = trial * 64 + (uint64_t)k * 3;
			int64_t up = 5000 + (int64_t)(rng_uniform(7, 2, i) * 2e6);
			int64_t down = 5000 + (int64_t)(rng_uniform(7, 2, i + 1) * 2e6);
			int64_t work = (int64_t)(rng_uniform(7, 2, i + 2) * 1e5);
			s[k] = xchg(1000000000LL + k * 10000000LL, truth, up, work, down);
			if (up + down < best)
				best = up + down;
		}
		struct clock_est e;
		clock_estimate(s, 16, &e);
		bad += !e.ok || e.delay_ns != best || llabs(e.offset_ns - truth) > e.bound_ns;
	}
	CHECK_EQ_INT(bad, 0);
}

static void test_drift(void)
{
	struct clock_est e[10];
	for (int i = 0; i < 10; i++) {
		int64_t t = (int64_t)i * 2000000000LL; /* every 2 s */
		e[i] = (struct clock_est){
		    .ok = 1, .at_ns = 1000 + t, .offset_ns = 42000 + t / 1000000 * 25};
	}
	/* 25 ns per ms of daemon time: 25 ppm */
	CHECK_NEAR(clock_drift_ppm(e, 10), 25.0, 1e-6);
	CHECK(isnan(clock_drift_ppm(e, 1)));
	e[1].at_ns = e[0].at_ns + 1000; /* two within a microsecond: too short a span */
	CHECK(isnan(clock_drift_ppm(e, 2)));
	e[3].ok = 0; /* unusable ones are left out */
	CHECK(!isnan(clock_drift_ppm(e, 10)));
}

/* A timeline mapped with its first estimate: the bound holds the truth at
 * every later burst of a drifting clock, loose bursts are passed over. */
static void test_timeline(void)
{
	struct clock_est e[4] = {
	    {1, 1000000, 50000, 100000, 0},                    /* START's: offset 1 ms +- 50 us */
	    {1, 1000000 + 300000, 40000, 80000, 5000000000LL}, /* 5 s on: drifted 300 us */
	    {1, 1000000 + 9000000, 900000, 1800000, 7000000000LL}, /* a busy, loose burst */
	    {1, 1000000 + 600000, 60000, 120000, 10000000000LL},   /* 10 s on: 600 us */
	};
	CHECK_EQ_INT(clock_timeline_bound(&e[0], e, 1), 50000);
	CHECK_EQ_INT(clock_timeline_bound(&e[0], e, 2), 340000);
	/* the loose one (bound over 4x the tightest) does not widen it */
	CHECK_EQ_INT(clock_timeline_bound(&e[0], e, 4), 660000);
	/* the truth at each tight burst is within the bound of the timeline */
	for (int k = 1; k < 4; k += 2) {
		int64_t truth_lo = e[k].offset_ns - e[k].bound_ns,
		        truth_hi = e[k].offset_ns + e[k].bound_ns;
		CHECK(llabs(truth_lo - e[0].offset_ns) <= clock_timeline_bound(&e[0], e, 4));
		CHECK(llabs(truth_hi - e[0].offset_ns) <= clock_timeline_bound(&e[0], e, 4));
	}
	/* estimates from before the one used, and unusable ones, count for nothing */
	struct clock_est early[2] = {{1, 0, 10, 20, -1}, {0, 99999999, 1, 2, 9}};
	CHECK_EQ_INT(clock_timeline_bound(&e[0], early, 2), 50000);
}

int main(void)
{
	test_exact();
	test_min_delay();
	test_drift();
	test_timeline();
	return tap_done();
}
