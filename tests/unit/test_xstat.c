/* test_xstat.c - unit tests of lib/xstat.c: every statistic and interval
 * computed in passes equals, bit for bit, what lib/stats.c and lib/infer.c
 * give on the whole sample, for samples with ties, zeros of both signs,
 * negative values, one repeated value, nanosecond-like millisecond values
 * and tiny sizes; groups collected whole and groups narrowed digit by
 * digit down to single keys; and a pool that switches to passes part way
 * through the first one. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infer.h"
#include "rng.h"
#include "stats.h"
#include "tap.h"
#include "xstat.h"

#define CONF 0.95

/* The whole-sample answer, from the functions the summary used before. */
static void reference(const double *in, size_t n, struct xstat_result *out)
{
	double *v = calloc(n ? n : 1, sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = in[i] + 0.0; /* xstat takes -0.0 as +0.0 */
	memset(out, 0, sizeof *out);
	stats_compute_select(v, n, &out->st);
	if (n >= 2) {
		struct infer_moments m;
		stats_sort(v, n);
		infer_moments_of(v, n, &m);
		infer_t_mean(&m, CONF, &out->mean_ci);
		for (int i = 0; i < STATS_NPCT; i++)
			infer_pct_ci(v, n, stats_pcts[i], CONF, &out->pct_ci[i]);
	}
	free(v);
}

static int same(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static int check_equal(const char *what, const struct xstat_result *a,
		       const struct xstat_result *b)
{
	int ok = a->st.count == b->st.count && same(a->st.avg, b->st.avg) &&
		 same(a->st.std, b->st.std) && same(a->st.min, b->st.min) &&
		 same(a->st.max, b->st.max) && a->mean_ci.ok == b->mean_ci.ok;
	for (int i = 0; i < STATS_NPCT; i++)
		ok = ok && same(a->st.p[i], b->st.p[i]);
	if (a->mean_ci.ok && b->mean_ci.ok)
		ok = ok && same(a->mean_ci.lo, b->mean_ci.lo) && same(a->mean_ci.hi, b->mean_ci.hi);
	for (int i = 0; i < STATS_NPCT; i++) {
		ok = ok && a->pct_ci[i].ok == b->pct_ci[i].ok;
		if (a->pct_ci[i].ok && b->pct_ci[i].ok)
			ok = ok && same(a->pct_ci[i].lo, b->pct_ci[i].lo) &&
			     same(a->pct_ci[i].hi, b->pct_ci[i].hi);
	}
	tap_ok(ok, "%s: passes equal the whole sample (n %zu: avg %.17g/%.17g std %.17g/%.17g "
		   "p50 %.17g/%.17g p99 %.17g/%.17g)",
	       what, a->st.count, a->st.avg, b->st.avg, a->st.std, b->st.std, a->st.p[4],
	       b->st.p[4], a->st.p[8], b->st.p[8]);
	return ok;
}

/* Feeds v through a pool of the given budget until no pass is asked for;
 * returns the number of passes. */
static int run_passes(const double *v, size_t n, size_t budget, size_t collect_min,
		      struct xstat_result *out)
{
	struct xstat_pool pool;
	struct xstat x;
	xstat_pool_init(&pool, budget);
	pool.collect_min = collect_min;
	xstat_init(&x, &pool);
	int passes = 0, more;
	do {
		for (size_t i = 0; i < n; i++)
			xstat_add(&x, v[i]);
		more = xstat_end_pass(&x);
		passes++;
	} while (more && passes < 20);
	xstat_result(&x, CONF, out);
	xstat_release(&x);
	return passes;
}

static void check_sample(const char *what, const double *v, size_t n)
{
	struct xstat_result ref, mem, p;
	reference(v, n, &ref);
	int np = run_passes(v, n, (size_t)1 << 30, 4096, &mem);
	CHECK_EQ_INT(np, 1); /* fits: one pass, values kept */
	check_equal(what, &mem, &ref);
	size_t collects[] = {1, 64, 4096};
	for (size_t c = 0; c < 3; c++) {
		np = run_passes(v, n, 0, collects[c], &p);
		CHECK(np <= 7);
		check_equal(what, &p, &ref);
	}
}

static double *sample(size_t n, int kind, uint64_t seed)
{
	double *v = malloc((n ? n : 1) * sizeof *v);
	for (size_t i = 0; i < n; i++) {
		double u = rng_uniform(seed, 1, i), z = rng_normal(seed, 2, i);
		switch (kind) {
		case 0: /* log-normal latencies in ms from integer nanoseconds */
			v[i] = (double)(int64_t)(exp(16 + 0.5 * z)) / 1e6;
			break;
		case 1: /* heavy ties: a few values */
			v[i] = (double)(int)(u * 5) * 0.25;
			break;
		case 2: /* both signs, zeros of both signs */
			v[i] = u < 0.1 ? 0.0 : u < 0.2 ? -0.0 : z * 1e3;
			break;
		case 3: /* one value repeated */
			v[i] = 12.5;
			break;
		default: /* wide range */
			v[i] = ldexp(u, (int)(z * 40));
			break;
		}
	}
	return v;
}

static void test_samples(void)
{
	size_t sizes[] = {0, 1, 2, 3, 7, 100, 1000, 5000, 70001};
	const char *kinds[] = {"lognormal-ns", "ties", "signed", "constant", "wide"};
	for (int k = 0; k < 5; k++)
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
			double *v = sample(sizes[s], k, 7 + (uint64_t)s);
			check_sample(kinds[k], v, sizes[s]);
			free(v);
		}
}

/* Several samples of one pool: the budget runs out part way through the
 * first pass, so the samples that kept values replay them into passes. */
static void test_switch_mid_pass(void)
{
	size_t n = 20000;
	double *a = sample(n, 0, 11), *b = sample(n, 2, 12);
	struct xstat_pool pool;
	struct xstat xa, xb;
	xstat_pool_init(&pool, n / 2);
	xstat_init(&xa, &pool);
	xstat_init(&xb, &pool);
	int passes = 0, more;
	do {
		for (size_t i = 0; i < n; i++) {
			xstat_add(&xa, a[i]);
			if (i % 3 == 0) /* b gets fewer values: it switches at its end */
				xstat_add(&xb, b[i]);
		}
		more = xstat_end_pass(&xa);
		more |= xstat_end_pass(&xb);
		passes++;
	} while (more && passes < 20);
	CHECK(pool.passes);
	CHECK(passes > 1);
	CHECK_EQ_INT(pool.held, 0);
	struct xstat_result ra, rb, refa, refb;
	xstat_result(&xa, CONF, &ra);
	xstat_result(&xb, CONF, &rb);
	reference(a, n, &refa);
	size_t nb = 0;
	for (size_t i = 0; i < n; i += 3)
		b[nb++] = b[i];
	reference(b, nb, &refb);
	check_equal("switch a", &ra, &refa);
	check_equal("switch b", &rb, &refb);
	xstat_release(&xa);
	xstat_release(&xb);
	free(a);
	free(b);
}

int main(void)
{
	test_samples();
	test_switch_mid_pass();
	return tap_done();
}
