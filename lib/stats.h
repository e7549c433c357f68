/* stats.h - summary statistics of a sample, as AIPerf reports them.
 *
 * count, avg, min, max, population std (ddof = 0), and the percentiles
 * p1 p5 p10 p25 p50 p75 p90 p95 p99 computed exactly as numpy's default
 * ('linear') method does, including its rounding: h = (n - 1) * q with
 * q = p / 100, lo = floor(h), g = h - lo, and
 *   result = a + (b - a) * g        when g <  0.5
 *   result = b - (b - a) * (1 - g)  when g >= 0.5
 * so numbers exported and re-computed with numpy match bit for bit.
 */
#ifndef HR_STATS_H
#define HR_STATS_H

#include <stddef.h>
#include <stdint.h>

#define STATS_NPCT 9
extern const double stats_pcts[STATS_NPCT];     /* 1 5 10 25 50 75 90 95 99 */
extern const char *const stats_pct_names[STATS_NPCT]; /* "p1" ... "p99" */

struct stats {
	size_t count;
	double avg, min, max, std;
	double p[STATS_NPCT];
};

/* Growable vector of doubles (embedded: dvec_init / dvec_release). */
struct dvec {
	double *v;
	size_t n, cap;
};
void dvec_init(struct dvec *d);
void dvec_release(struct dvec *d);
void dvec_push(struct dvec *d, double x);

/* Sorts vals in place and fills out. n == 0 gives count 0 and NaN elsewhere. */
void stats_compute(double *vals, size_t n, struct stats *out);
/* The same results as stats_compute (bit for bit), leaving vals as they
 * are: selects the order statistics it needs instead of sorting, which is
 * several times faster on large samples. */
void stats_compute_select(const double *vals, size_t n, struct stats *out);
/* Ascending sorts, in place: the doubles come out exactly as a stable sort
 * comparing (a > b) - (a < b) leaves them (-0.0 and 0.0 keep their order). */
void stats_sort(double *vals, size_t n);
void stats_sort_i64(int64_t *vals, size_t n);
/* The numpy 'linear' position of percentile pct (0..100) among n > 0
 * sorted values: the neighbour ranks lo, hi (0-based) and the weight g of
 * the upper one; and numpy's two-branch interpolation between them. */
void stats_pct_pos(size_t n, double pct, size_t *lo, size_t *hi, double *g);
double stats_pct_lerp(double a, double b, double g);
/* What lib/xstat.c needs to reproduce these results from streamed values:
 * numpy's sum is the running total of pairwise sums (stats_pairwise_sum,
 * of x or, sq = 1, of (x - mean)^2) over consecutive blocks of
 * STATS_NP_BUFSIZE values; the sorts order doubles by stats_sort_key
 * (-0.0 as +0.0), and stats_key_value maps a key back (+0.0 for 0). */
#define STATS_NP_BUFSIZE 8192
double stats_pairwise_sum(const double *a, size_t n, int sq, double mean);
uint64_t stats_sort_key(double v);
double stats_key_value(uint64_t k);
/* Percentile (0..100) of an ascending array of n > 0 values, numpy 'linear'. */
double stats_percentile_sorted(const double *sorted, size_t n, double pct);

#endif
