/* infer.h - statistical inference for comparing runs (docs/compare.md).
 *
 * Pure functions on arrays, no I/O, no allocation beyond what a call
 * frees before it returns: confidence intervals for a difference of two
 * samples' statistics, a rank test for a shift, order-statistic intervals
 * for one sample's percentile, and the binomial arithmetic behind
 * percentile claims ("p99 <= 200 ms at 95% confidence", as MLPerf
 * LoadGen's early stopping). Percentiles are numpy's 'linear' method
 * (stats.h). Randomness comes from rng.h (seeded, counter-based), so the
 * same inputs and seed give the same interval bit for bit.
 *
 * Conventions: conf is a two-sided confidence level in (0, 1), e.g. 0.95;
 * a difference is always head - base (b - a); functions return 0, or -1
 * when the input cannot support an answer (too few values, zero variance
 * where one is needed), leaving out->ok = 0.
 */
#ifndef HR_INFER_H
#define HR_INFER_H

#include <stddef.h>
#include <stdint.h>

/* Standard normal CDF and quantile (p in (0, 1)). */
double infer_norm_cdf(double z);
double infer_norm_ppf(double p);
/* Student's t CDF and quantile with df > 0 degrees of freedom (real df,
 * as Welch's approximation gives). Accurate to ~1e-10 relative. */
double infer_t_cdf(double t, double df);
double infer_t_ppf(double p, double df);

/* An estimate with its interval. */
struct infer_ci {
	double est, lo, hi;
	int ok; /* 0: no interval (lo, hi are NaN) */
};

/* Count, mean and sample variance (ddof = 1) of a sample. */
struct infer_moments {
	size_t n;
	double mean, var;
};
void infer_moments_of(const double *v, size_t n, struct infer_moments *out);
/* The same from streamed sums (lib/xstat.c): mean = the compensated sum
 * of the values / n, s1 and s2 the compensated sums of (x - mean) and
 * (x - mean)^2, each over the values in the order infer_moments_of takes
 * them: the results are bit for bit those of infer_moments_of. */
void infer_moments_set(struct infer_moments *out, size_t n, double mean, double s1, double s2);
/* A compensated (Neumaier) running sum, the one infer_moments_of uses. */
struct infer_csum {
	double s, c;
};
void infer_csum_add(struct infer_csum *k, double x);
double infer_csum_total(const struct infer_csum *k);

/* Student-t interval of a mean (n >= 2). */
int infer_t_mean(const struct infer_moments *m, double conf, struct infer_ci *out);
/* Welch's interval of mean(b) - mean(a) (both n >= 2), as
 * scipy.stats.ttest_ind(b, a, equal_var=False) with its Welch-Satterthwaite
 * degrees of freedom. When one side has n == 1, its value is taken as
 * exact and the other side's one-sample t interval is shifted by it. */
int infer_welch_diff(const struct infer_moments *a, const struct infer_moments *b, double conf,
		     struct infer_ci *out);

/* Mann-Whitney U test of x against y, both sorted ascending: u is the U
 * statistic of x (as scipy.stats.mannwhitneyu(x, y).statistic), p the
 * two-sided p-value by the normal approximation with tie correction and
 * continuity correction (scipy's method='asymptotic'), and prob_greater
 * the common-language effect P(Y > X) + P(Y = X) / 2 = 1 - u / (nx ny).
 * O(nx + ny). Needs nx, ny >= 1. */
struct infer_mwu {
	double u, z, p, prob_greater;
};
int infer_mannwhitney(const double *x, size_t nx, const double *y, size_t ny,
		      struct infer_mwu *out);

/* Bootstrap interval of pct(b) - pct(a), where pct is the numpy-linear
 * percentile (0..100), from two sorted samples, with `resamples`
 * replicates drawn from seed. Exact in distribution without resampling the
 * arrays: a resample's k-th order statistic is x[ceil(n U) - 1] with U
 * the k-th order statistic of n uniforms (Beta(k, n + 1 - k)), and the
 * next one follows from it (docs/compare.md). O(resamples) after sorting.
 * est is the observed difference; [lo, hi] the percentile interval. */
int infer_boot_pct_diff(const double *a, size_t na, const double *b, size_t nb, double pct,
			double conf, unsigned resamples, uint64_t seed, struct infer_ci *out);

/* Distribution-free interval of one sample's percentile (sorted, n >= 1):
 * order statistics x[l], x[u] with l, u from Binomial(n, pct / 100) so
 * that P(x[l] <= true quantile <= x[u]) >= conf. est is the numpy-linear
 * percentile. ok = 0 when n is too small for either bound to exist. */
int infer_pct_ci(const double *sorted, size_t n, double pct, double conf, struct infer_ci *out);
/* The 0-based ranks of infer_pct_ci's bounds among n sorted values; -1
 * when there is no interval (n too small, or pct or conf out of range). */
int infer_pct_ci_ranks(size_t n, double pct, double conf, size_t *l, size_t *u);

/* Binomial CDF P(X <= k), X ~ Binomial(n, p), stable for n up to 1e9. */
double infer_binom_cdf(long long k, long long n, double p);

/* Percentile claims (MLPerf LoadGen's early-stopping rule): of n requests,
 * `over` exceeded the limit. The claim "the q-quantile (q in (0, 1), e.g.
 * 0.99) is within the limit" holds at confidence conf when
 * P(Binomial(n, 1 - q) <= over) <= 1 - conf. */
int infer_claim_holds(long long n, long long over, double q, double conf);
/* The largest `over` for which the claim holds with n requests, or -1. */
long long infer_claim_max_over(long long n, double q, double conf);
/* The fewest requests, none over the limit, for the claim to hold
 * (e.g. 299 for q = 0.99 at conf 0.95). */
long long infer_claim_min_n(double q, double conf);

#endif
