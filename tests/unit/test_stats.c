/* test_stats.c - unit tests of lib/stats.c: hand-computed values, the
 * numpy 'linear' percentile formula (both lerp branches) and literals
 * produced by numpy 1.24, large samples, the empty sample and dvec. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "tap.h"

/* Percentile by the formula of stats.h, written out independently. */
static double ref_pct(const double *sorted, size_t n, double pct)
{
	double q = pct / 100.0;
	double h = (double)(n - 1) * q;
	double lo = floor(h);
	size_t i = (size_t)lo;
	if (i >= n - 1)
		return sorted[n - 1];
	double a = sorted[i], b = sorted[i + 1], g = h - lo;
	return g < 0.5 ? a + (b - a) * g : b - (b - a) * (1 - g);
}

static void compute(const double *in, size_t n, struct stats *st)
{
	double buf[64];
	memcpy(buf, in, n * sizeof(double));
	stats_compute(buf, n, st);
}

static void test_names(void)
{
	static const double want[STATS_NPCT] = {1, 5, 10, 25, 50, 75, 90, 95, 99};
	static const char *const names[STATS_NPCT] = {"p1",  "p5",  "p10", "p25", "p50",
	                                              "p75", "p90", "p95", "p99"};
	for (int i = 0; i < STATS_NPCT; i++) {
		CHECK_EQ_DBL(stats_pcts[i], want[i]);
		CHECK_STR(stats_pct_names[i], names[i]);
	}
}

static void test_one_to_four(void)
{
	static const double v[] = {4, 1, 3, 2};
	struct stats st;

	compute(v, 4, &st);
	CHECK_EQ_INT(st.count, 4);
	CHECK_EQ_DBL(st.avg, 2.5);
	CHECK_EQ_DBL(st.min, 1);
	CHECK_EQ_DBL(st.max, 4);
	CHECK_EQ_DBL(st.std, sqrt(1.25));
	CHECK_EQ_DBL(st.p[4], 2.5);  /* p50 */
	CHECK_EQ_DBL(st.p[3], 1.75); /* p25 */
	CHECK_EQ_DBL(st.p[5], 3.25); /* p75 */
	CHECK_NEAR(st.p[8], 3.97, 1e-12);
	/* np.percentile([1,2,3,4], [1,5,10,25,50,75,90,95,99]) */
	static const double np[STATS_NPCT] = {
	    1.03, 1.15, 1.3, 1.75, 2.5, 3.25, 3.7, 3.8499999999999996, 3.9699999999999998};
	for (int i = 0; i < STATS_NPCT; i++)
		CHECK_EQ_DBL(st.p[i], np[i]);
	/* np.std([1,2,3,4]) */
	CHECK_EQ_DBL(st.std, 1.118033988749895);

	static const double sorted[] = {1, 2, 3, 4};
	CHECK_EQ_DBL(stats_percentile_sorted(sorted, 4, 0), 1);
	CHECK_EQ_DBL(stats_percentile_sorted(sorted, 4, 100), 4);
	CHECK_EQ_DBL(stats_percentile_sorted(sorted, 4, 12.5), 1.375);
}

static void test_single(void)
{
	static const double v[] = {7.5};
	struct stats st;

	compute(v, 1, &st);
	CHECK_EQ_INT(st.count, 1);
	CHECK_EQ_DBL(st.avg, 7.5);
	CHECK_EQ_DBL(st.min, 7.5);
	CHECK_EQ_DBL(st.max, 7.5);
	CHECK_EQ_DBL(st.std, 0);
	for (int i = 0; i < STATS_NPCT; i++)
		CHECK_EQ_DBL(st.p[i], 7.5);
	CHECK_EQ_DBL(stats_percentile_sorted(v, 1, 0), 7.5);
	CHECK_EQ_DBL(stats_percentile_sorted(v, 1, 100), 7.5);
}

static void test_two(void)
{
	static const double v[] = {10, 2};
	/* np.percentile([2.0, 10.0], [1,5,10,25,50,75,90,95,99]) */
	static const double np[STATS_NPCT] = {2.08, 2.4, 2.8, 4.0, 6.0, 8.0, 9.2, 9.6, 9.92};
	struct stats st;

	compute(v, 2, &st);
	CHECK_EQ_INT(st.count, 2);
	CHECK_EQ_DBL(st.avg, 6);
	CHECK_EQ_DBL(st.std, 4);
	CHECK_EQ_DBL(st.min, 2);
	CHECK_EQ_DBL(st.max, 10);
	for (int i = 0; i < STATS_NPCT; i++)
		CHECK_EQ_DBL(st.p[i], np[i]);
}

static void test_known_std(void)
{
	/* the textbook sample: mean 5, population std exactly 2 */
	static const double v[] = {2, 4, 4, 4, 5, 5, 7, 9};
	/* np.percentile([2,4,4,4,5,5,7,9], [1,5,10,25,50,75,90,95,99]) */
	static const double np[STATS_NPCT] = {2.14, 2.7, 3.4000000000000004, 4.0, 4.5,
	                                      5.5,  7.6, 8.299999999999999,  8.86};
	struct stats st;

	compute(v, 8, &st);
	CHECK_EQ_DBL(st.avg, 5);
	CHECK_EQ_DBL(st.std, 2);
	for (int i = 0; i < STATS_NPCT; i++)
		CHECK_EQ_DBL(st.p[i], np[i]);
}

static void test_unsorted(void)
{
	static const double v[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
	static const double sorted[] = {1, 1, 2, 3, 3, 4, 5, 5, 6, 9};
	/* np.mean, np.std, np.percentile(x, [1,5,10,25,50,75,90,95,99]) of
	 * x = [3,1,4,1,5,9,2,6,5,3] */
	static const double np[STATS_NPCT] = {
	    1.0, 1.0, 1.0, 2.25, 3.5, 5.0, 6.299999999999999, 7.649999999999997, 8.73};
	double buf[10];
	struct stats st;

	memcpy(buf, v, sizeof(v));
	stats_compute(buf, 10, &st);
	CHECK(memcmp(buf, sorted, sizeof(sorted)) == 0); /* sorted in place */
	CHECK_EQ_INT(st.count, 10);
	CHECK_EQ_DBL(st.min, 1);
	CHECK_EQ_DBL(st.max, 9);
	CHECK_EQ_DBL(st.avg, 3.9);
	CHECK_EQ_DBL(st.std, 2.3430749027719964);
	for (int i = 0; i < STATS_NPCT; i++) {
		CHECK_EQ_DBL(st.p[i], np[i]);
		CHECK_EQ_DBL(st.p[i], ref_pct(sorted, 10, stats_pcts[i]));
	}
}

static void test_tenths(void)
{
	static const double v[] = {0.3, 0.1, 0.2};
	/* np.mean([0.1,0.2,0.3]), np.std(...), np.percentile(..., [1,...,99]) */
	static const double np[STATS_NPCT] = {0.10200000000000001,
	                                      0.11000000000000001,
	                                      0.12000000000000001,
	                                      0.15000000000000002,
	                                      0.2,
	                                      0.25,
	                                      0.28,
	                                      0.29,
	                                      0.298};
	struct stats st;

	compute(v, 3, &st);
	CHECK_EQ_DBL(st.avg, 0.20000000000000004);
	CHECK_EQ_DBL(st.std, 0.0816496580927726);
	for (int i = 0; i < STATS_NPCT; i++)
		CHECK_EQ_DBL(st.p[i], np[i]);
}

/* Cases where a + (b - a) * g and b - (b - a) * (1 - g) differ in the last
 * bit, found by a search with numpy; the literal is numpy's answer. */
static void test_lerp_branches(void)
{
	/* g = 0.8 (>= 0.5): np.percentile([72.6, 22.6, 19.9], 90) */
	static const double a1[] = {19.9, 22.6, 72.6};
	CHECK_EQ_DBL(stats_percentile_sorted(a1, 3, 90), 62.599999999999994);
	CHECK(62.599999999999994 != 22.6 + (72.6 - 22.6) * 0.8); /* the naive lerp: 62.6 */

	/* g = 0.96: np.percentile([68.4, 35.5, 51.9, 76.5, 90.9], 99) */
	static const double a2[] = {35.5, 51.9, 68.4, 76.5, 90.9};
	CHECK_EQ_DBL(stats_percentile_sorted(a2, 5, 99), 90.324);

	/* g = 0.5 exactly takes the b branch: np.percentile([65.9, 30.7, 96.1], 25) */
	static const double a3[] = {30.7, 65.9, 96.1};
	CHECK_EQ_DBL(stats_percentile_sorted(a3, 3, 25), 48.300000000000004);
	CHECK(48.300000000000004 != 30.7 + (65.9 - 30.7) * 0.5); /* naive: 48.3 */

	/* g = 0.75: np.percentile([79.7,12.9,76.7,88.3,19.7,57.4,63.9,60.9], 25) */
	double a4[] = {79.7, 12.9, 76.7, 88.3, 19.7, 57.4, 63.9, 60.9};
	struct stats st;
	stats_compute(a4, 8, &st);
	CHECK_EQ_DBL(st.p[3], 47.974999999999994);

	/* g = 0.02 (< 0.5) where the b branch would be wrong:
	 * np.percentile([49.9, 60.1, 2.9], 1) -> 3.84 (b branch: 3.8399999999999963) */
	static const double a5[] = {2.9, 49.9, 60.1};
	CHECK_EQ_DBL(stats_percentile_sorted(a5, 3, 1), 3.84);

	/* g = 0.9: np.percentile([38.8,32.3,15.0,81.6,37.9,97.9,59.0,60.5,63.8,67.6], 10) */
	double a6[] = {38.8, 32.3, 15.0, 81.6, 37.9, 97.9, 59.0, 60.5, 63.8, 67.6};
	stats_compute(a6, 10, &st);
	CHECK_EQ_DBL(st.p[2], 30.569999999999997);
}

/* 64-bit LCG in [0, 1000); the same numbers in Python:
 *   s = (s * 6364136223846793005 + 1442695040888963407) % 2**64
 *   x = (s >> 11) * 2.0**-53 * 1000.0 */
static void lcg_fill(double *v, size_t n, uint64_t seed)
{
	uint64_t s = seed;
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		v[i] = (double)(s >> 11) * 0x1p-53 * 1000.0;
	}
}

/* Literals from numpy 1.24 on lcg_fill(x, n, 12345):
 * np.mean(x), np.std(x), np.percentile(x, [1,5,10,25,50,75,90,95,99]).
 * n = 1000 exercises numpy's pairwise summation (a plain running sum gives
 * 510.85938456639445), n = 100000 also its 8192-value chunks. */
static void test_numpy_lcg(void)
{
	static const struct {
		size_t n;
		double mean, std, min, max, p[STATS_NPCT];
	} cases[] = {
	    {1000,
	     510.8593845663943,
	     291.38226317132285,
	     0.9227710447768933,
	     999.6580888206038,
	     {12.61022117415477, 57.65138063582045, 110.94182603215697, 265.1455529282816,
	      506.698586712026, 770.2557137266106, 919.6658354975317, 958.4176998844416,
	      990.0204412636103}},
	    {100000,
	     499.83251335286724,
	     288.1402453654388,
	     0.00172597129677321,
	     999.9773140766231,
	     {10.357981877197183, 51.06392461828919, 101.1042659472234, 250.18340268379956,
	      499.80415639128387, 749.1928539490004, 898.9859928261479, 950.1010831066568,
	      990.323975004156}},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t n = cases[c].n;
		double *v = malloc(n * sizeof(double));
		struct stats st;

		lcg_fill(v, n, 12345);
		stats_compute(v, n, &st);
		CHECK_EQ_INT(st.count, n);
		CHECK_EQ_DBL(st.avg, cases[c].mean);
		CHECK_EQ_DBL(st.std, cases[c].std);
		CHECK_EQ_DBL(st.min, cases[c].min);
		CHECK_EQ_DBL(st.max, cases[c].max);
		for (int i = 0; i < STATS_NPCT; i++)
			CHECK_EQ_DBL(st.p[i], cases[c].p[i]);
		free(v);
	}
}

static void test_large(void)
{
	const size_t n = 100000;
	double *v = malloc(n * sizeof(double));
	double lo = INFINITY, hi = -INFINITY, prev = -INFINITY;
	int monotone = 1, formula = 1, sorted = 1;
	struct stats st;

	lcg_fill(v, n, 42);
	for (size_t i = 0; i < n; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	stats_compute(v, n, &st);
	CHECK_EQ_INT(st.count, n);
	CHECK_EQ_DBL(st.min, lo);
	CHECK_EQ_DBL(st.max, hi);
	for (size_t i = 1; i < n; i++)
		sorted &= v[i - 1] <= v[i];
	CHECK(sorted);
	for (int pct = 0; pct <= 100; pct++) {
		double x = stats_percentile_sorted(v, n, pct);
		monotone &= x >= prev;
		formula &= x == ref_pct(v, n, pct);
		prev = x;
	}
	CHECK(monotone);
	CHECK(formula);
	CHECK_EQ_DBL(stats_percentile_sorted(v, n, 0), lo);
	CHECK_EQ_DBL(stats_percentile_sorted(v, n, 100), hi);
	for (int i = 0; i < STATS_NPCT; i++)
		CHECK_EQ_DBL(st.p[i], stats_percentile_sorted(v, n, stats_pcts[i]));
	CHECK(st.p[0] >= st.min && st.p[STATS_NPCT - 1] <= st.max);
	CHECK_NEAR(st.avg, 500, 5);
	CHECK_NEAR(st.std, 1000 / sqrt(12), 5);
	free(v);
}

static void test_constant(void)
{
	double v[100];
	struct stats st;

	for (int i = 0; i < 100; i++)
		v[i] = 0.1;
	stats_compute(v, 100, &st);
	CHECK_EQ_DBL(st.min, 0.1);
	CHECK_EQ_DBL(st.max, 0.1);
	for (int i = 0; i < STATS_NPCT; i++)
		CHECK_EQ_DBL(st.p[i], 0.1);
	CHECK(st.std >= 0 && st.std < 1e-15);
}

static void test_empty(void)
{
	struct stats st;

	memset(&st, 0x5a, sizeof(st));
	stats_compute(NULL, 0, &st);
	CHECK_EQ_INT(st.count, 0);
	CHECK(isnan(st.avg));
	CHECK(isnan(st.min));
	CHECK(isnan(st.max));
	CHECK(isnan(st.std));
	for (int i = 0; i < STATS_NPCT; i++)
		CHECK(isnan(st.p[i]));
	CHECK(isnan(stats_percentile_sorted(NULL, 0, 50)));
}

static void test_dvec(void)
{
	struct dvec d;
	int ok = 1;

	dvec_init(&d);
	CHECK_EQ_INT(d.n, 0);
	CHECK(d.v == NULL);
	for (int i = 0; i < 10000; i++)
		dvec_push(&d, i * 0.5);
	CHECK_EQ_INT(d.n, 10000);
	CHECK(d.cap >= d.n);
	for (int i = 0; i < 10000; i++)
		ok &= d.v[i] == i * 0.5;
	CHECK(ok);

	struct stats st;
	stats_compute(d.v, d.n, &st);
	CHECK_EQ_DBL(st.min, 0);
	CHECK_EQ_DBL(st.max, 4999.5);
	CHECK_EQ_DBL(st.p[4], 2499.75);
	dvec_release(&d);
	CHECK_EQ_INT(d.n, 0);
	CHECK(d.v == NULL);
	dvec_release(&d); /* twice is harmless */
}

int main(void)
{
	test_names();
	test_one_to_four();
	test_single();
	test_two();
	test_known_std();
	test_unsorted();
	test_tenths();
	test_lerp_branches();
	test_numpy_lcg();
	test_large();
	test_constant();
	test_empty();
	test_dvec();
	return tap_done();
}
