/* stats.c - summary statistics of a sample (see stats.h).
 *
 * Written to reproduce numpy bit for bit: percentiles follow numpy's
 * 'linear' method with its two-sided lerp; the mean and the population
 * standard deviation are two-pass (mean, then the sum of squared
 * deviations) and use numpy's pairwise summation over the values in the
 * order given, so np.mean(x) and np.std(x) of the same array agree too.
 */
#include "stats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "util.h"

/* No fused multiply-add: numpy rounds every product and sum separately.
 * (GCC does not contract in ISO C mode, -std=c11; clang needs the pragma.) */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

const double stats_pcts[STATS_NPCT] = {1, 5, 10, 25, 50, 75, 90, 95, 99};
const char *const stats_pct_names[STATS_NPCT] = {"p1",  "p5",  "p10", "p25", "p50",
                                                 "p75", "p90", "p95", "p99"};

void dvec_init(struct dvec *d)
{
	d->v = NULL;
	d->n = d->cap = 0;
}

void dvec_release(struct dvec *d)
{
	free(d->v);
	dvec_init(d);
}

void dvec_push(struct dvec *d, double x)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		if (cap < d->cap || cap > SIZE_MAX / sizeof(double))
			xalloc_die();
		d->v = xrealloc(d->v, cap * sizeof(double));
		d->cap = cap;
	}
	d->v[d->n++] = x;
}

/* numpy's pairwise summation (DOUBLE_pairwise_sum): blocks of at most 128
 * values are summed with eight interleaved accumulators, larger ranges are
 * split in two at a multiple of eight. If sq, sums (x - mean)^2 instead. */
#define PW_BLOCKSIZE 128

static double pairwise_sum(const double *a, size_t n, int sq, double mean)
{
	if (n < 8) {
		double res = 0.;
		for (size_t i = 0; i < n; i++) {
			double x = sq ? (a[i] - mean) * (a[i] - mean) : a[i];
			res += x;
		}
		return res;
	}
	if (n <= PW_BLOCKSIZE) {
		double r[8], res;
		size_t i;
		for (int j = 0; j < 8; j++)
			r[j] = sq ? (a[j] - mean) * (a[j] - mean) : a[j];
		for (i = 8; i < n - (n % 8); i += 8) {
			for (int j = 0; j < 8; j++) {
				double x = sq ? (a[i + j] - mean) * (a[i + j] - mean) : a[i + j];
				r[j] += x;
			}
		}
		res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
		for (; i < n; i++) {
			double x = sq ? (a[i] - mean) * (a[i] - mean) : a[i];
			res += x;
		}
		return res;
	}
	size_t n2 = n / 2;
	n2 -= n2 % 8;
	return pairwise_sum(a, n2, sq, mean) + pairwise_sum(a + n2, n - n2, sq, mean);
}

/* np.add.reduce: its iterator hands the loop chunks of NPY_BUFSIZE (8192)
 * values, each summed pairwise and added to the running total. */
#define NPY_BUFSIZE 8192

static double np_sum(const double *a, size_t n, int sq, double mean)
{
	double acc = 0.;

	for (size_t i = 0; i < n; i += NPY_BUFSIZE) {
		size_t m = n - i < NPY_BUFSIZE ? n - i : NPY_BUFSIZE;
		acc += pairwise_sum(a + i, m, sq, mean);
	}
	return acc;
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

double stats_percentile_sorted(const double *sorted, size_t n, double pct)
{
	double q = pct / 100.0;
	double h = (double)(n - 1) * q;
	double a, b, diff, g;
	size_t lo, hi;

	if (n == 0)
		return NAN;
	/* numpy _get_indexes / _get_gamma, including its out-of-range cases */
	if (h >= (double)(n - 1)) {
		lo = hi = n - 1;
		g = h + 1; /* numpy: h - (-1); irrelevant since a == b */
	} else if (h < 0 || isnan(h)) {
		lo = hi = 0;
		g = h;
	} else {
		double fl = floor(h);
		lo = (size_t)fl;
		hi = lo + 1;
		g = h - fl;
	}
	a = sorted[lo];
	b = sorted[hi];
	diff = b - a;
	if (g >= 0.5)
		return b - diff * (1 - g);
	return a + diff * g;
}

void stats_compute(double *vals, size_t n, struct stats *out)
{
	out->count = n;
	if (n == 0) {
		out->avg = out->min = out->max = out->std = NAN;
		for (int i = 0; i < STATS_NPCT; i++)
			out->p[i] = NAN;
		return;
	}
	/* mean and std over the values in the order given, as numpy does */
	double mean = np_sum(vals, n, 0, 0) / (double)n;
	out->avg = mean;
	out->std = sqrt(np_sum(vals, n, 1, mean) / (double)n);

	qsort(vals, n, sizeof(vals[0]), cmp_double);
	out->min = vals[0];
	out->max = vals[n - 1];
	for (int i = 0; i < STATS_NPCT; i++)
		out->p[i] = stats_percentile_sorted(vals, n, stats_pcts[i]);
}
