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
#include <string.h>

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

double stats_pairwise_sum(const double *a, size_t n, int sq, double mean)
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
	return stats_pairwise_sum(a, n2, sq, mean) + stats_pairwise_sum(a + n2, n - n2, sq, mean);
}

/* np.add.reduce: its iterator hands the loop chunks of NPY_BUFSIZE (8192)
 * values, each summed pairwise and added to the running total. */
static double np_sum(const double *a, size_t n, int sq, double mean)
{
	double acc = 0.;

	for (size_t i = 0; i < n; i += STATS_NP_BUFSIZE) {
		size_t m = n - i < STATS_NP_BUFSIZE ? n - i : STATS_NP_BUFSIZE;
		acc += stats_pairwise_sum(a + i, m, sq, mean);
	}
	return acc;
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

/* --- sorting ------------------------------------------------------------------
 * LSD radix sort on an order-preserving unsigned key: 11-bit digits, all six
 * histograms counted in one pass, passes where every key has the same digit
 * skipped. It is stable, and -0.0 and +0.0 share a key, so the result is the
 * same array a stable comparison sort with (a > b) - (a < b) gives (glibc's
 * qsort is a merge sort). With a NaN, whose order such a comparison leaves
 * undefined, the doubles go to qsort as before. */
#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)
#define RADIX_PASSES 6 /* 6 * 11 >= 64 */
#define RADIX_MIN 64   /* below this, insertion sort */

/* The sort key of an element's 64 bits: order-preserving for doubles
 * (dbl) or for two's complement integers. */
static inline uint64_t sort_key(uint64_t u, int dbl)
{
	if (!dbl)
		return u ^ 0x8000000000000000ULL;
	if (u == 0x8000000000000000ULL)
		u = 0; /* -0.0 sorts as +0.0 */
	return (u >> 63) ? ~u : u | 0x8000000000000000ULL;
}

static inline uint64_t load64(const unsigned char *base, size_t i)
{
	uint64_t u;
	memcpy(&u, base + i * 8, 8);
	return u;
}

uint64_t stats_sort_key(double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	return sort_key(u, 1);
}

double stats_key_value(uint64_t k)
{
	uint64_t u = (k >> 63) ? k & ~0x8000000000000000ULL : ~k;
	double v;
	memcpy(&v, &u, 8);
	return v;
}

static inline void store64(unsigned char *base, size_t i, uint64_t u)
{
	memcpy(base + i * 8, &u, 8);
}

/* Sorts n elements of 8 bytes (doubles or int64_t) at v. */
static void radix_sort(void *v, size_t n, int dbl)
{
	unsigned char *a = v;
	size_t sorted = 1;
	while (sorted < n && sort_key(load64(a, sorted - 1), dbl) <= sort_key(load64(a, sorted), dbl))
		sorted++;
	if (sorted >= n)
		return; /* already in order (often so for times) */
	if (n < RADIX_MIN) { /* stable insertion sort */
		for (size_t i = 1; i < n; i++) {
			uint64_t x = load64(a, i), kx = sort_key(x, dbl);
			size_t j = i;
			for (; j > 0 && sort_key(load64(a, j - 1), dbl) > kx; j--)
				store64(a, j, load64(a, j - 1));
			store64(a, j, x);
		}
		return;
	}
	size_t(*hist)[RADIX_SIZE] = xcalloc(RADIX_PASSES, sizeof *hist);
	for (size_t i = 0; i < n; i++) {
		uint64_t k = sort_key(load64(a, i), dbl);
		for (int p = 0; p < RADIX_PASSES; p++)
			hist[p][(k >> (p * RADIX_BITS)) & (RADIX_SIZE - 1)]++;
	}
	unsigned char *tmp = NULL, *src = a;
	uint64_t k0 = sort_key(load64(a, 0), dbl);
	for (int p = 0; p < RADIX_PASSES; p++) {
		int shift = p * RADIX_BITS;
		size_t *h = hist[p], sum = 0;
		if (h[(k0 >> shift) & (RADIX_SIZE - 1)] == n)
			continue; /* the same digit everywhere: nothing moves */
		for (unsigned d = 0; d < RADIX_SIZE; d++) {
			size_t c = h[d];
			h[d] = sum;
			sum += c;
		}
		if (!tmp)
			tmp = xmalloc(n * 8);
		unsigned char *dst = src == a ? tmp : a;
		for (size_t i = 0; i < n; i++) {
			uint64_t x = load64(src, i);
			store64(dst, h[(sort_key(x, dbl) >> shift) & (RADIX_SIZE - 1)]++, x);
		}
		src = dst;
	}
	if (src != a)
		memcpy(a, src, n * 8);
	free(tmp);
	free(hist);
}

void stats_sort(double *vals, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (isnan(vals[i])) {
			qsort(vals, n, sizeof(vals[0]), cmp_double);
			return;
		}
	radix_sort(vals, n, 1);
}

void stats_sort_i64(int64_t *vals, size_t n)
{
	radix_sort(vals, n, 0);
}

/* numpy _get_indexes / _get_gamma, including its out-of-range cases:
 * the two neighbours (ranks) and the weight of the upper one. n > 0. */
void stats_pct_pos(size_t n, double pct, size_t *lo, size_t *hi, double *g)
{
	double q = pct / 100.0;
	double h = (double)(n - 1) * q;
	if (h >= (double)(n - 1)) {
		*lo = *hi = n - 1;
		*g = h + 1; /* numpy: h - (-1); irrelevant since a == b */
	} else if (h < 0 || isnan(h)) {
		*lo = *hi = 0;
		*g = h;
	} else {
		double fl = floor(h);
		*lo = (size_t)fl;
		*hi = *lo + 1;
		*g = h - fl;
	}
}

/* numpy's two-sided lerp */
double stats_pct_lerp(double a, double b, double g)
{
	double diff = b - a;
	if (g >= 0.5)
		return b - diff * (1 - g);
	return a + diff * g;
}

double stats_percentile_sorted(const double *sorted, size_t n, double pct)
{
	size_t lo, hi;
	double g;

	if (n == 0)
		return NAN;
	stats_pct_pos(n, pct, &lo, &hi, &g);
	return stats_pct_lerp(sorted[lo], sorted[hi], g);
}

static void stats_empty(struct stats *out)
{
	out->count = 0;
	out->avg = out->min = out->max = out->std = NAN;
	for (int i = 0; i < STATS_NPCT; i++)
		out->p[i] = NAN;
}

/* mean and std over the values in the order given, as numpy does */
static void stats_moments(const double *vals, size_t n, struct stats *out)
{
	double mean = np_sum(vals, n, 0, 0) / (double)n;
	out->count = n;
	out->avg = mean;
	out->std = sqrt(np_sum(vals, n, 1, mean) / (double)n);
}

void stats_compute(double *vals, size_t n, struct stats *out)
{
	if (n == 0) {
		stats_empty(out);
		return;
	}
	stats_moments(vals, n, out);
	stats_sort(vals, n);
	out->min = vals[0];
	out->max = vals[n - 1];
	for (int i = 0; i < STATS_NPCT; i++)
		out->p[i] = stats_percentile_sorted(vals, n, stats_pcts[i]);
}

/* --- selection ----------------------------------------------------------------
 * The order statistics stats_compute reads from the sorted array (min, max,
 * two neighbours per percentile) found without sorting: a radix selection
 * on the same keys as the sort, 16 bits at a time from the top. Each level
 * counts the keys' next digit, then copies the elements of the digits that
 * hold a wanted rank, in their original order, and goes on with each such
 * group alone; a small group is sorted. Since the order within a group is
 * the original one and the final sort is stable, the element of rank r is
 * the one the stable sort puts at index r. */
#define SEL_BITS 16
#define SEL_SIZE (1u << SEL_BITS)
#define SEL_SMALL 1024 /* groups this small are sorted */
#define SEL_MAX_RANKS (2 + 2 * STATS_NPCT)

/* ranks[0..nr) ascending and distinct, relative to v[0..n); the element of
 * each rank goes to out[]. scratch: SEL_SIZE counters. */
static void select_ranks(const double *v, size_t n, int level, const size_t *ranks, size_t nr,
			 double *out, uint32_t *scratch)
{
	if (n <= SEL_SMALL || level * SEL_BITS >= 64) {
		/* below 64 bits every key of the group is the same: no order to make */
		double *t = NULL;
		if (level * SEL_BITS < 64) {
			t = xmalloc(n * sizeof *t);
			memcpy(t, v, n * sizeof *t);
			radix_sort(t, n, 1);
			v = t;
		}
		for (size_t i = 0; i < nr; i++)
			out[i] = v[ranks[i]];
		free(t);
		return;
	}
	int shift = 64 - SEL_BITS * (level + 1);
	uint32_t *cnt = scratch;
	memset(cnt, 0, SEL_SIZE * sizeof *cnt);
	for (size_t i = 0; i < n; i++)
		cnt[(sort_key(load64((const unsigned char *)v, i), 1) >> shift) & (SEL_SIZE - 1)]++;

	/* the digits holding wanted ranks, and where their groups go */
	struct {
		unsigned digit;
		size_t base, start, count, r0, r1; /* ranks[r0..r1) */
	} grp[SEL_MAX_RANKS];
	size_t ng = 0, below = 0, copied = 0, j = 0;
	for (unsigned d = 0; d < SEL_SIZE && j < nr; d++) {
		size_t c = cnt[d];
		if (ranks[j] >= below + c) {
			below += c;
			continue;
		}
		grp[ng].digit = d;
		grp[ng].base = below;
		grp[ng].start = copied;
		grp[ng].count = c;
		grp[ng].r0 = j;
		while (j < nr && ranks[j] < below + c)
			j++;
		grp[ng].r1 = j;
		ng++;
		copied += c;
		below += c;
	}
	if (ng == 1 && grp[0].count == n) { /* one digit for all: the next level */
		select_ranks(v, n, level + 1, ranks, nr, out, scratch);
		return;
	}
	/* counters become write positions for the wanted digits */
	const uint32_t skip = UINT32_MAX;
	for (unsigned d = 0; d < SEL_SIZE; d++)
		cnt[d] = skip;
	for (size_t k = 0; k < ng; k++)
		cnt[grp[k].digit] = (uint32_t)grp[k].start;
	double *g = xmalloc(copied * sizeof *g);
	for (size_t i = 0; i < n; i++) {
		uint64_t x = load64((const unsigned char *)v, i);
		uint32_t *pos = &cnt[(sort_key(x, 1) >> shift) & (SEL_SIZE - 1)];
		if (*pos != skip)
			store64((unsigned char *)g, (*pos)++, x);
	}
	for (size_t k = 0; k < ng; k++) {
		size_t rel[SEL_MAX_RANKS];
		size_t m = grp[k].r1 - grp[k].r0;
		for (size_t i = 0; i < m; i++)
			rel[i] = ranks[grp[k].r0 + i] - grp[k].base;
		select_ranks(g + grp[k].start, grp[k].count, level + 1, rel, m, out + grp[k].r0,
			     scratch);
	}
	free(g);
}

static size_t rank_index(const size_t *want, size_t nd, size_t r)
{
	size_t i = 0;
	while (i < nd - 1 && want[i] != r)
		i++;
	return i;
}

void stats_compute_select(const double *vals, size_t n, struct stats *out)
{
	if (n == 0) {
		stats_empty(out);
		return;
	}
	int nan = 0;
	for (size_t i = 0; i < n; i++)
		nan |= isnan(vals[i]);
	if (nan || n <= SEL_SMALL || n >= UINT32_MAX) { /* sort a copy */
		double *t = xmalloc(n * sizeof *t);
		memcpy(t, vals, n * sizeof *t);
		stats_compute(t, n, out);
		free(t);
		return;
	}
	stats_moments(vals, n, out);
	/* the ranks needed, ascending and distinct */
	size_t want[SEL_MAX_RANKS], lo[STATS_NPCT], hi[STATS_NPCT];
	double gam[STATS_NPCT];
	size_t nw = 0;
	want[nw++] = 0;
	for (int i = 0; i < STATS_NPCT; i++) {
		stats_pct_pos(n, stats_pcts[i], &lo[i], &hi[i], &gam[i]);
		want[nw++] = lo[i];
		want[nw++] = hi[i];
	}
	want[nw++] = n - 1;
	for (size_t i = 1; i < nw; i++) /* insertion sort, then drop repeats */
		for (size_t k = i; k > 0 && want[k - 1] > want[k]; k--) {
			size_t t = want[k];
			want[k] = want[k - 1];
			want[k - 1] = t;
		}
	size_t nd = 0;
	for (size_t i = 0; i < nw; i++)
		if (nd == 0 || want[nd - 1] != want[i])
			want[nd++] = want[i];
	double got[SEL_MAX_RANKS];
	uint32_t *scratch = xmalloc(SEL_SIZE * sizeof *scratch);
	select_ranks(vals, n, 0, want, nd, got, scratch);
	free(scratch);
	out->min = got[0];
	out->max = got[nd - 1];
	for (int i = 0; i < STATS_NPCT; i++)
		out->p[i] = stats_pct_lerp(got[rank_index(want, nd, lo[i])],
					   got[rank_index(want, nd, hi[i])], gam[i]);
}
