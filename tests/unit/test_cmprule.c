/* test_cmprule.c - the verdict rule of a compared figure (lib/cmprule.h),
 * table-driven: each direction, the noise band, significance, a missing
 * interval and a zero base; and the false-alarm rate of the whole
 * comparison (lib/infer.h intervals + the rule) measured by simulation on
 * pairs of samples drawn from one distribution. */
#include <math.h>
#include <stdio.h>

#include "cmprule.h"
#include "infer.h"
#include "rng.h"
#include "stats.h"
#include "tap.h"

#define PAIRS 400
#define N 400

/* A lognormal sample (median 50, sigma 0.3: a latency in ms), sorted. */
static void sample(double *v, uint64_t seed)
{
	for (int i = 0; i < N; i++)
		v[i] = 50 * exp(0.3 * rng_normal(seed, 77, (uint64_t)i));
	stats_sort(v, N);
}

/* Identical distributions: with no noise band a 95% interval calls
 * better/worse about 5% of the time (binomial spread over 400 pairs: 1.1
 * points); the default 5% band can only lower that, and does so the more
 * the narrower the intervals are against it. */
static void test_false_alarms(void)
{
	static double a[N], b[N];
	int alarms0[2] = {0}, alarms5[2] = {0};
	for (int p = 0; p < PAIRS; p++) {
		sample(a, 1000 + 2 * (uint64_t)p);
		sample(b, 1001 + 2 * (uint64_t)p);
		struct infer_ci ci[2];
		struct infer_moments ma, mb;
		infer_moments_of(a, N, &ma);
		infer_moments_of(b, N, &mb);
		CHECK(infer_welch_diff(&ma, &mb, 0.95, &ci[0]) == 0);
		CHECK(infer_boot_pct_diff(a, N, b, N, 50, 0.95, 1000, (uint64_t)p, &ci[1]) == 0);
		double base[2] = {ma.mean, stats_percentile_sorted(a, N, 50)};
		for (int k = 0; k < 2; k++) {
			int v0 = cmp_rule(-1, base[k], ci[k].est, ci[k].ok, ci[k].lo, ci[k].hi, 0);
			int v5 = cmp_rule(-1, base[k], ci[k].est, ci[k].ok, ci[k].lo, ci[k].hi, 5);
			alarms0[k] += v0 == CMP_BETTER || v0 == CMP_WORSE;
			alarms5[k] += v5 == CMP_BETTER || v5 == CMP_WORSE;
		}
	}
	for (int k = 0; k < 2; k++) {
		double r0 = (double)alarms0[k] / PAIRS, r5 = (double)alarms5[k] / PAIRS;
		printf("# %s: false alarms %.2f%% without a noise band, %.2f%% with 5%%\n",
		       k ? "bootstrap p50" : "welch avg", r0 * 100, r5 * 100);
		tap_ok(r0 >= 0.01 && r0 <= 0.09, "%s: %.3f of identical pairs called better/worse "
		       "at noise 0 (want about 0.05)", k ? "p50" : "avg", r0);
		tap_ok(r5 <= r0 && r5 <= 0.05, "%s: %.3f called better/worse with the 5%% band",
		       k ? "p50" : "avg", r5);
	}
}

struct row {
	int dir;
	double base, diff, lo, hi;
	int have;
	double noise;
	int want;
};

int main(void)
{
	static const struct row rows[] = {
		/* latency (lower is better): 10% slower, tight interval */
		{-1, 100, 10, 9, 11, 1, 5, CMP_WORSE},
		{-1, 100, -10, -11, -9, 1, 5, CMP_BETTER},
		/* significant but inside the 5% band: unchanged */
		{-1, 100, 2, 1, 3, 1, 5, CMP_UNCHANGED},
		/* not significant, interval inside the band: unchanged */
		{-1, 100, 1, -2, 4, 1, 5, CMP_UNCHANGED},
		/* not significant, interval wider than the band: inconclusive */
		{-1, 100, 1, -8, 10, 1, 5, CMP_INCONCLUSIVE},
		/* throughput (higher is better) */
		{1, 50, 10, 8, 12, 1, 5, CMP_BETTER},
		{1, 50, -10, -12, -8, 1, 5, CMP_WORSE},
		/* no direction: changed, or unchanged */
		{0, 128, 20, 18, 22, 1, 5, CMP_CHANGED},
		{0, 128, 0, 0, 0, 1, 5, CMP_UNCHANGED},
		/* no interval */
		{-1, 100, 50, NAN, NAN, 0, 5, CMP_INCONCLUSIVE},
		/* zero base: any significant difference decides */
		{-1, 0, 0.01, 0.005, 0.015, 1, 5, CMP_WORSE},
		{-1, 0, 0, 0, 0, 1, 5, CMP_UNCHANGED},
		/* zero noise threshold: significance alone */
		{-1, 100, 0.5, 0.1, 0.9, 1, 0, CMP_WORSE},
		/* a difference exactly at the band edge is not beyond it */
		{-1, 100, 5, 4.5, 5.5, 1, 5, CMP_UNCHANGED},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		int got = cmp_rule(r->dir, r->base, r->diff, r->have, r->lo, r->hi, r->noise);
		tap_ok(got == r->want, "row %zu: want %s, got %s", i, cmp_verdict_name(r->want),
		       cmp_verdict_name(got));
	}
	CHECK_STR(cmp_verdict_name(CMP_WORSE), "worse");
	CHECK_STR(cmp_verdict_name(99), "inconclusive");
	test_false_alarms();
	return tap_done();
}
