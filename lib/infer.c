/* infer.c - statistical inference for comparing runs (see infer.h).
 *
 * Everything here is a pure function of its arguments: no I/O, no global
 * state (lgamma_r rather than lgamma, which writes signgam), and the only
 * allocation is the bootstrap's array of replicates, freed before it
 * returns. Results of the random parts are functions of (inputs, seed)
 * alone, bit for bit, through rng.h's counter-based generator.
 *
 * Return convention, for every function that fills a struct infer_ci:
 * 0 with out->ok = 1, or -1 with out->ok = 0 and lo = hi = NaN; the two
 * always agree. out->est holds the point estimate whenever it is defined
 * (at least one value on each side it needs), even when the call returns
 * -1 because an interval is not, and NaN otherwise. conf must lie in
 * (0, 1) and a percentile in [0, 100], or the call returns -1.
 *
 * The pieces, from the bottom up:
 *
 * 1. The regularized incomplete beta function I_x(a, b), which gives the
 *    Student t CDF, (t < 0) F(t) = I_x(df/2, 1/2) / 2 with
 *    x = df / (df + t^2), and the binomial CDF,
 *    P(X <= k) = I_{1-p}(n - k, k + 1). It is computed as
 *      I_x(a, b) = x^a y^b / (a B(a, b)) * CF,   y = 1 - x,
 *    with the continued fraction CF of Abramowitz & Stegun 26.5.8 in its
 *    even (contracted) form, evaluated by the modified Lentz method, on
 *    the side where it converges quickly: for I_x(a, b) when
 *    x < (a + 1) / (a + b + 2), else for I_y(b, a) = 1 - I_x(a, b). So the
 *    side computed directly is the smaller tail, which keeps its relative
 *    accuracy; the other one is its complement.
 *    Two things make it accurate for parameters in the millions (t with
 *    df = 1e7, binomials with n = 1e9), where the textbook form
 *    exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a log x + b log y) loses
 *    up to half of the digits to cancellation between numbers near 1e8:
 *    - The power term x^a y^b / B(a, b) is written with Stirling's series
 *      (log Gamma(z) = (z - 1/2) log z - z + log sqrt(2 pi) + d(z), d the
 *      small remainder) so that the large terms cancel analytically:
 *        log(x^a y^b / B(a, b)) = a log1pmx(-l / a) + b log1pmx(l / b)
 *            + log(a b / (2 pi (a + b))) / 2 - d(a) - d(b) + d(a + b),
 *      where log1pmx(r) = log(1 + r) - r (computed by a series near 0)
 *      and l = a - (a + b) x = (a + b) y - b is the distance from the
 *      mean, computed from whichever of x and y is the smaller (and so
 *      exact to the last bit). This is the device of Loader's binomial
 *      density and of DiDonato & Morris (TOMS 708).
 *    - The even part of the continued fraction has the partial
 *      denominators 1 + d(2m) + d(2m+1), which cancel badly near the
 *      mean when written with x; rewritten with l and y they have no
 *      cancellation left (see beta_cf), so a rounded x = 1 - y never
 *      costs more than a few ulps.
 *    Its derivative comes for free: dI_x/dx = x^(a-1) y^(b-1) / B(a, b),
 *    the power term over x y, which drives the Newton steps below.
 *
 * 2. The t quantile solves F(t) = p for |t| by Newton's method on
 *    log-log scales (u = log|t| against the log of a tail probability),
 *    where the function is nearly a straight line in both regimes: slope
 *    about -df in the tail (F ~ C |t|^-df) and about 1 near the centre
 *    (F - 1/2 ~ |t| f(0)). Below a quarter the lower tail F(t) is matched;
 *    above, the centre mass F(t) - 1/2 = |p - 1/2| (exact in floating
 *    point there), so that quantiles near the median keep relative
 *    accuracy too. The starting point is the better of the Cornish-Fisher
 *    expansion around the normal quantile and the power-law tail
 *    (Hill's two regimes); every evaluation narrows a bracket, and a step
 *    that leaves it bisects instead (in log|t|), so it converges from any
 *    start. df = 1 and df = 2 have closed forms. Beyond df = 1e12 the t
 *    distribution is the normal one with a first-order correction
 *    (Cornish-Fisher for the quantile, the matching Edgeworth term for
 *    the CDF); the neglected terms are O(1/df^2).
 *
 * 3. The normal quantile is Wichura's AS 241 (PPND16, about 1e-16
 *    relative) followed by one Halley step against erfc; the CDF is
 *    erfc(-z / sqrt 2) / 2.
 *
 * 4. The bootstrap of a percentile difference draws each replicate's
 *    order statistics directly instead of resampling the arrays: see
 *    boot_pct. Its Beta variates are ratios of Gamma variates
 *    (Marsaglia & Tsang 2000), its normals Box-Muller over rng_uniform.
 */
#include "infer.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "rng.h"
#include "stats.h"
#include "util.h"

#define LN_SQRT_2PI 0.918938533204672741780329736406 /* log(sqrt(2 pi)) */
#define SQRT_2PI 2.50662827463100050241576528481     /* sqrt(2 pi) */
#define CF_TINY 1e-300                               /* Lentz's guard against 0 */
#define CF_EPS (2 * DBL_EPSILON)                     /* Lentz's stopping rule */
/* Past this many degrees of freedom the t distribution is taken as the
 * normal one corrected to first order in 1/df (error O(1/df^2)). */
#define T_NORMAL_DF 1e12

/* rng.h streams of this file, well clear of enum rng_stream. */
#define INFER_STREAM_BOOT 101

static void ci_none(struct infer_ci *out, double est)
{
	out->est = est;
	out->lo = out->hi = NAN;
	out->ok = 0;
}

static int ci_set(struct infer_ci *out, double est, double lo, double hi)
{
	if (isnan(est) || isnan(lo) || isnan(hi)) {
		ci_none(out, est);
		return -1;
	}
	out->est = est;
	out->lo = lo;
	out->hi = hi;
	out->ok = 1;
	return 0;
}

static int conf_ok(double conf)
{
	return conf > 0 && conf < 1;
}

/* --- special functions -------------------------------------------------------- */

/* log(1 + r) - r, accurate near r = 0 (r >= -1). With v = r / (2 + r),
 * log(1 + r) = 2 atanh(v) = 2 (v + v^3/3 + v^5/5 + ...) and 2 v - r =
 * -r v, so the result is -r v + 2 (v^3/3 + v^5/5 + ...): no cancellation
 * for |r| <= 1/2, where |v| <= 1/3. */
static double log1pmx(double r)
{
	if (fabs(r) > 0.5)
		return log1p(r) - r;
	double v = r / (2 + r), v2 = v * v, term = v * v2, sum = 0;
	for (int k = 3; k < 200; k += 2) {
		double t = term / k;
		sum += t;
		if (fabs(t) <= 1e-17 * fabs(sum))
			break;
		term *= v2;
	}
	return 2 * sum - r * v;
}

/* Stirling's remainder d(z) = log Gamma(z) - ((z - 1/2) log z - z +
 * log sqrt(2 pi)) for z > 0: its asymptotic series from z = 15 on
 * (truncation error below 4e-18 there), lgamma below (absolute error a
 * few ulps of lgamma's value, under 1e-14). */
static double stirlerr(double z)
{
	if (z < 15) {
		int sign;
		return lgamma_r(z, &sign) - (z - 0.5) * log(z) + z - LN_SQRT_2PI;
	}
	double r = 1 / z, r2 = r * r;
	return r * (1.0 / 12 -
	            r2 * (1.0 / 360 -
	                  r2 * (1.0 / 1260 -
	                        r2 * (1.0 / 1680 - r2 * (1.0 / 1188 - r2 * (691.0 / 360360))))));
}

/* log(x^a y^b / B(a, b)) with l = a - (a + b) x = (a + b) y - b (see the
 * top of the file). a log1pmx(-l / a) is a log((a + b) x / a) + l: where
 * (a + b) x < a / 2 it is computed so, since 1 - l / a would have lost
 * the digits of a small x (and x is then the smaller, exact one); the
 * same for b and y. */
static double beta_log_power(double a, double b, double x, double y, double l)
{
	double n = a + b;
	double ta = -l / a < -0.5 ? a * log(n * x / a) + l : a * log1pmx(-l / a);
	double tb = l / b < -0.5 ? b * log(n * y / b) - l : b * log1pmx(l / b);
	return ta + tb + 0.5 * log(a / n * b / (2 * M_PI)) - stirlerr(a) - stirlerr(b) +
	       stirlerr(n);
}

/* The continued fraction of I_x(a, b) (A&S 26.5.8):
 *   I_x(a, b) = x^a y^b / (a B(a, b)) * 1 / (1 + d1 / (1 + d2 / (1 + ...)))
 *   d(2m+1) = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))
 *   d(2m)   = m (b - m) x / ((a + 2m - 1)(a + 2m))
 * in its even contraction 1 / (B0 + A1 / (B1 + A2 / (B2 + ...))) with
 *   B0 = 1 + d1,  Am = -d(2m-1) d(2m),  Bm = 1 + d(2m) + d(2m+1).
 * Substituting (a + b) x = a - l and x = 1 - y,
 *   1 + d(2m+1) = (m (2a + 3m + 2) + a + (a + m)(l + m y)) / ((a + 2m)(a + 2m + 1))
 * whose numerator has no cancellation but through l, which is exact; in
 * particular B0 = (1 + l) / (a + 1). Evaluated by the modified Lentz
 * method; for an integer b the fraction ends at m = b (Am = 0). Returns
 * the value of the fraction (the factor after the power term / a). Used
 * only where x < (a + 1) / (a + b + 2), i.e. l > -1, where it converges
 * fast: under 50 terms for any t distribution (b = 1/2), and about
 * sqrt(min(a, b)) / 7 at the centre of a binomial (4500 terms at n = 1e9,
 * p = 1/2; a few dozen in the tails). */
static double beta_cf(double a, double b, double x, double y, double l)
{
	double n = a + b;
	double f = (1 + l) / (a + 1);
	if (fabs(f) < CF_TINY)
		f = CF_TINY;
	double c = f, d = 0;
	for (long m = 1; m < 10000000; m++) {
		double dm = (double)m, m2 = 2 * dm;
		double e1 = a + m2 - 1, e2 = a + m2;
		double am = (a + dm - 1) / (a + m2 - 2) * ((n + dm - 1) / e1) *
		            (dm * (b - dm) / (e1 * e2)) * x * x;
		double bm =
		    dm * (b - dm) * x / (e1 * e2) +
		    (dm * (2 * a + 3 * dm + 2) + a + (a + dm) * (l + dm * y)) / (e2 * (e2 + 1));
		d = bm + am * d;
		if (fabs(d) < CF_TINY)
			d = CF_TINY;
		d = 1 / d;
		c = bm + am / c;
		if (fabs(c) < CF_TINY)
			c = CF_TINY;
		double delta = c * d;
		f *= delta;
		if (fabs(delta - 1) < CF_EPS)
			break;
	}
	return 1 / f;
}

/* I_x(a, b) into *ix and I_y(b, a) = 1 - I_x(a, b) into *iy, for a, b > 0
 * and x + y = 1, both given so that the smaller one can be exact (the
 * other may carry a rounding error). *power gets x^a y^b / B(a, b). */
static void incbeta(double a, double b, double x, double y, double *ix, double *iy, double *power)
{
	if (!(x > 0)) {
		*ix = 0;
		*iy = 1;
		*power = 0;
		return;
	}
	if (!(y > 0)) {
		*ix = 1;
		*iy = 0;
		*power = 0;
		return;
	}
	double n = a + b;
	double l = x < y ? a - n * x : n * y - b;
	double pw = exp(beta_log_power(a, b, x, y, l));
	int xside = x < y ? (n + 2) * x < a + 1 : (n + 2) * y > b + 1;
	double v;

	*power = pw;
	if (xside) {
		v = pw / a * beta_cf(a, b, x, y, l);
		v = v > 1 ? 1 : v;
		*ix = v;
		*iy = 1 - v;
	} else {
		v = pw / b * beta_cf(b, a, y, x, -l);
		v = v > 1 ? 1 : v;
		*iy = v;
		*ix = 1 - v;
	}
}

/* --- normal ------------------------------------------------------------------- */

double infer_norm_cdf(double z)
{
	return 0.5 * erfc(-z * M_SQRT1_2);
}

/* A polynomial c[0] + c[1] x + ... + c[n - 1] x^(n - 1), by Horner's rule. */
static double poly(const double *c, int n, double x)
{
	double v = c[n - 1];
	for (int i = n - 2; i >= 0; i--)
		v = v * x + c[i];
	return v;
}

/* Wichura, Algorithm AS 241 (PPND16), Applied Statistics 37 (1988): three
 * rational approximations, near the median in q = p - 1/2, then in
 * r = sqrt(-log(tail)) up to r = 5 (tails down to about 1e-11) and beyond. */
static const double as241_a[8] = {3.3871328727963666080,   1.3314166789178437745e2,
                                  1.9715909503065514427e3, 1.3731693765509461125e4,
                                  4.5921953931549871457e4, 6.7265770927008700853e4,
                                  3.3430575583588128105e4, 2.5090809287301226727e3};
static const double as241_b[8] = {1.00000000000000000000,  4.2313330701600911252e1,
                                  6.8718700749205790830e2, 5.3941960214247511077e3,
                                  2.1213794301586595867e4, 3.9307895800092710610e4,
                                  2.8729085735721942674e4, 5.2264952788528545610e3};
static const double as241_c[8] = {1.42343711074968357734,    4.63033784615654529590,
                                  5.76949722146069140550,    3.64784832476320460504,
                                  1.27045825245236838258,    2.41780725177450611770e-1,
                                  2.27238449892691845833e-2, 7.74545014278341407640e-4};
static const double as241_d[8] = {1.00000000000000000000,    2.05319162663775882187,
                                  1.67638483018380384940,    6.89767334985100004550e-1,
                                  1.48103976427480074590e-1, 1.51986665636164571966e-2,
                                  5.47593808499534494600e-4, 1.05075007164441684324e-9};
static const double as241_e[8] = {6.65790464350110377720,    5.46378491116411436990,
                                  1.78482653991729133580,    2.96560571828504891230e-1,
                                  2.65321895265761230930e-2, 1.24266094738807843860e-3,
                                  2.71155556874348757815e-5, 2.01033439929228813265e-7};
static const double as241_f[8] = {1.00000000000000000000,    5.99832206555887937690e-1,
                                  1.36929880922735805310e-1, 1.48753612908506148525e-2,
                                  7.86869131145613259100e-4, 1.84631831751005468180e-5,
                                  1.42151175831644588870e-7, 2.04426310338993978564e-15};

static double ppnd16(double p)
{
	double q = p - 0.5, r, v;

	if (fabs(q) <= 0.425) {
		r = 0.180625 - q * q;
		return q * poly(as241_a, 8, r) / poly(as241_b, 8, r);
	}
	r = sqrt(-log(q < 0 ? p : 1 - p));
	if (r <= 5) {
		r -= 1.6;
		v = poly(as241_c, 8, r) / poly(as241_d, 8, r);
	} else {
		r -= 5;
		v = poly(as241_e, 8, r) / poly(as241_f, 8, r);
	}
	return q < 0 ? -v : v;
}

double infer_norm_ppf(double p)
{
	if (isnan(p) || p < 0 || p > 1)
		return NAN;
	if (p == 0)
		return -INFINITY;
	if (p == 1)
		return INFINITY;
	double x = ppnd16(p);
	/* One Halley step on the tail that holds x, against the error
	 * e = Phi(x) - p (for x > 0 from the upper tail, 1 - p being exact
	 * there); skipped where exp(x^2 / 2) would overflow. */
	if (fabs(x) < 37) {
		double e =
		    x < 0 ? 0.5 * erfc(-x * M_SQRT1_2) - p : (1 - p) - 0.5 * erfc(x * M_SQRT1_2);
		double u = e * SQRT_2PI * exp(0.5 * x * x);
		double nx = x - u / (1 + 0.5 * x * u);
		if (isfinite(nx))
			x = nx;
	}
	return x;
}

/* --- Student t ---------------------------------------------------------------- */

/* x = df / (df + s^2) and y = s^2 / (df + s^2) for s >= 0, each to a few
 * ulps (neither is computed as 1 minus the other). */
static void t_xy(double s, double df, double *x, double *y)
{
	if (s * s < df) {
		double r = s * s / df;
		*x = 1 / (1 + r);
		*y = r / (1 + r);
	} else {
		double r = df / s / s;
		*x = r / (1 + r);
		*y = 1 / (1 + r);
	}
}

/* The normal density. */
static double norm_pdf(double z)
{
	return exp(-0.5 * z * z) / SQRT_2PI;
}

/* log F(-s) for s > T_FAR (s = exp(u)), where x = df / (df + s^2) may
 * underflow (df < 2 and p down to 1e-300): F(-s) = x^a y^(1/2) / (2 a
 * B(a, 1/2)) (1 + O(x)), a = df / 2, x = df / s^2 to within 1 + 1e-290 df. */
#define T_FAR 1e150
static double t_far_log(double u, double df)
{
	int sign;
	double a = df / 2;
	double lbeta = lgamma_r(a, &sign) + lgamma_r(0.5, &sign) - lgamma_r(a + 0.5, &sign);
	return a * (log(df) - 2 * u) - log(2 * a) - lbeta;
}

double infer_t_cdf(double t, double df)
{
	if (isnan(t) || !(df > 0))
		return NAN;
	if (t == 0)
		return 0.5;
	if (isinf(t))
		return t < 0 ? 0 : 1;
	if (df > T_NORMAL_DF) /* Edgeworth: F = Phi(t) - phi(t) (t^3 + t) / (4 df) + O(df^-2) */
		return infer_norm_cdf(t) - norm_pdf(t) * (t * t * t + t) / (4 * df);
	if (fabs(t) > T_FAR) {
		double lo = exp(t_far_log(log(fabs(t)), df));
		return t < 0 ? lo : 1 - lo;
	}
	double x, y, ix, iy, pw;
	t_xy(fabs(t), df, &x, &y);
	incbeta(df / 2, 0.5, x, y, &ix, &iy, &pw);
	return t < 0 ? 0.5 * ix : 0.5 + 0.5 * iy;
}

/* One step of the quantile search at s = exp(u): g = log P - log target
 * and its derivative dg/du, P being the lower tail F(-s) (centre = 0) or
 * the centre mass F(s) - 1/2 (centre = 1). */
static void t_eval(double u, double df, int centre, double ltarget, double *g, double *dg)
{
	double x, y, ix, iy, pw;
	if (!centre && u > log(T_FAR)) {
		*g = t_far_log(u, df) - ltarget;
		*dg = -df;
		return;
	}
	t_xy(exp(u), df, &x, &y);
	incbeta(df / 2, 0.5, x, y, &ix, &iy, &pw);
	/* d/ds F(-s) = -pw / s, so d log F(-s) / du = -pw / F(-s) */
	if (centre) {
		*g = log(0.5 * iy) - ltarget;
		*dg = pw / (0.5 * iy);
	} else {
		*g = log(0.5 * ix) - ltarget;
		*dg = -pw / (0.5 * ix);
	}
}

/* |t| with F(-|t|) = q (centre = 0, q <= 1/4) or F(|t|) - 1/2 = q
 * (centre = 1, q <= 1/4), for 0 < q. */
static double t_solve(double q, int centre, double df)
{
	double ltarget = log(q), z, s0, u, g, dg;

	/* Cornish-Fisher: t = z + (z^3 + z) / (4 df) + (5z^5 + 16z^3 + 3z) / (96 df^2) */
	if (centre && q < 1e-6)
		z = q * SQRT_2PI; /* q = Phi(z) - 1/2 ~ z phi(0) */
	else
		z = fabs(infer_norm_ppf(centre ? 0.5 + q : q));
	s0 = z + (z * z * z + z) / (4 * df) +
	     (5 * pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * df * df);
	u = log(s0);
	t_eval(u, df, centre, ltarget, &g, &dg);
	if (!centre) {
		/* The power-law tail: F(-s) ~ x^a / (2 a B(a, 1/2)) with a = df / 2,
		 * x = df / (df + s^2); better than the above for small df. */
		int sign;
		double a = df / 2;
		double lb = lgamma_r(a, &sign) + lgamma_r(0.5, &sign) - lgamma_r(a + 0.5, &sign);
		double lx = (log(2 * q * a) + lb) / a;
		double u2 = 0.5 * (log(df) + log1p(-exp(lx)) - lx), g2, dg2;
		if (lx < 0 && isfinite(u2)) {
			t_eval(u2, df, centre, ltarget, &g2, &dg2);
			if (isfinite(g2) && !(fabs(g2) >= fabs(g))) {
				u = u2;
				g = g2;
				dg = dg2;
			}
		}
	}

	/* Safeguarded Newton in u: [ulo, uhi] brackets the root once both
	 * sides have been seen; g increases with u at the centre, decreases in
	 * the tail. */
	double ulo = -INFINITY, uhi = INFINITY;
	for (int it = 0; it < 200; it++) {
		if (g == 0)
			break;
		int below = centre ? g < 0 : g > 0; /* the root lies above u */
		if (below)
			ulo = u;
		else
			uhi = u;
		double next = NAN, step = NAN;
		if (isfinite(g) && isfinite(dg) && dg != 0) {
			step = -g / dg;
			if (step > 10)
				step = 10;
			if (step < -10)
				step = -10;
			next = u + step;
		}
		if (!(next > ulo && next < uhi)) {
			if (isfinite(ulo) && isfinite(uhi))
				next = 0.5 * (ulo + uhi);
			else
				next = below ? u + 1 : u - 1;
			step = NAN;
		}
		u = next;
		/* quadratic convergence: after a step this small the error is
		 * far below an ulp */
		if (fabs(step) < 1e-11 || uhi - ulo <= 1e-15 * fmax(1, fabs(u)))
			break;
		t_eval(u, df, centre, ltarget, &g, &dg);
	}
	return exp(u);
}

double infer_t_ppf(double p, double df)
{
	if (isnan(p) || !(df > 0) || p < 0 || p > 1)
		return NAN;
	if (p == 0)
		return -INFINITY;
	if (p == 1)
		return INFINITY;
	if (p == 0.5)
		return 0;
	if (df > T_NORMAL_DF) {
		double z = infer_norm_ppf(p);
		return z + (z * z * z + z) / (4 * df);
	}
	/* q: the smaller tail (exact: 1 - p is, for p >= 1/2); d = |p - 1/2|
	 * (exact for q >= 1/4) */
	double q = p < 0.5 ? p : 1 - p, d = 0.5 - q, s;
	if (df == 1) {
		s = q < 0.25 ? 1 / tan(M_PI * q) : tan(M_PI * d);
	} else if (df == 2) {
		s = 2 * d / sqrt(2 * q * (1 - q));
	} else {
		s = q < 0.25 ? t_solve(q, 0, df) : t_solve(d, 1, df);
	}
	return p < 0.5 ? -s : s;
}

/* --- means -------------------------------------------------------------------- */

/* Neumaier's compensated sum of v[i] - shift, or of its square (sq). */
void infer_csum_add(struct infer_csum *k, double x)
{
	double t = k->s + x;
	if (fabs(k->s) >= fabs(x))
		k->c += (k->s - t) + x;
	else
		k->c += (x - t) + k->s;
	k->s = t;
}

double infer_csum_total(const struct infer_csum *k)
{
	return k->s + k->c;
}

static double csum(const double *v, size_t n, double shift, int sq)
{
	struct infer_csum k = {0, 0};
	for (size_t i = 0; i < n; i++)
		infer_csum_add(&k, sq ? (v[i] - shift) * (v[i] - shift) : v[i] - shift);
	return infer_csum_total(&k);
}

/* Two passes: the mean, then the squared deviations corrected by their
 * sum (the "corrected two-pass" algorithm of Chan, Golub & LeVeque), each
 * a compensated sum. n = 0 leaves mean and var NaN, n = 1 var (as numpy's
 * var(ddof=1) of one value). */
void infer_moments_of(const double *v, size_t n, struct infer_moments *out)
{
	double mean = n ? csum(v, n, 0, 0) / (double)n : NAN;
	double s1 = n > 1 ? csum(v, n, mean, 0) : 0, s2 = n > 1 ? csum(v, n, mean, 1) : 0;
	infer_moments_set(out, n, mean, s1, s2);
}

void infer_moments_set(struct infer_moments *out, size_t n, double mean, double s1, double s2)
{
	out->n = n;
	out->mean = out->var = NAN;
	if (n == 0)
		return;
	out->mean = mean;
	if (n < 2)
		return;
	double var = (s2 - s1 * s1 / (double)n) / (double)(n - 1);
	out->var = var < 0 ? 0 : var;
}

/* Needs n >= 2 and a positive, finite variance. */
int infer_t_mean(const struct infer_moments *m, double conf, struct infer_ci *out)
{
	ci_none(out, m->n >= 1 ? m->mean : NAN);
	if (m->n < 2 || !conf_ok(conf) || !(m->var > 0) || !isfinite(m->var) || !isfinite(m->mean))
		return -1;
	double half =
	    -infer_t_ppf((1 - conf) / 2, (double)(m->n - 1)) * sqrt(m->var / (double)m->n);
	return ci_set(out, m->mean, m->mean - half, m->mean + half);
}

/* Welch: se^2 = va/na + vb/nb, df = se^4 / ((va/na)^2/(na-1) + (vb/nb)^2/(nb-1)),
 * as scipy.stats.ttest_ind(b, a, equal_var=False). Needs se > 0 (one
 * side's variance may be 0). With one side of a single value, that side
 * is exact: the other side's one-sample interval shifted (b's interval
 * minus a's value, or b's value minus a's interval). */
int infer_welch_diff(const struct infer_moments *a, const struct infer_moments *b, double conf,
                     struct infer_ci *out)
{
	double est = a->n >= 1 && b->n >= 1 ? b->mean - a->mean : NAN;
	struct infer_ci one;

	ci_none(out, est);
	if (a->n < 1 || b->n < 1 || (a->n < 2 && b->n < 2) || !conf_ok(conf) || !isfinite(est))
		return -1;
	if (a->n == 1) {
		if (infer_t_mean(b, conf, &one) < 0)
			return -1;
		return ci_set(out, est, one.lo - a->mean, one.hi - a->mean);
	}
	if (b->n == 1) {
		if (infer_t_mean(a, conf, &one) < 0)
			return -1;
		return ci_set(out, est, b->mean - one.hi, b->mean - one.lo);
	}
	if (!(a->var >= 0) || !(b->var >= 0))
		return -1;
	double va = a->var / (double)a->n, vb = b->var / (double)b->n, se2 = va + vb;
	if (!(se2 > 0) || !isfinite(se2))
		return -1;
	double df = se2 * se2 / (va * va / (double)(a->n - 1) + vb * vb / (double)(b->n - 1));
	double half = -infer_t_ppf((1 - conf) / 2, df) * sqrt(se2);
	return ci_set(out, est, est - half, est + half);
}

/* --- Mann-Whitney ------------------------------------------------------------- */

/* Ascending and free of NaN. */
static int sorted_ok(const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (isnan(v[i]) || (i > 0 && v[i] < v[i - 1]))
			return 0;
	return 1;
}

/* One merge over the two sorted arrays, a group of equal values at a time
 * (-0.0 and 0.0 are equal): the group's cx values from x each beat the
 * ny_below values of y already passed and tie with its cy from y, so
 * 2 U = sum cx (2 ny_below + cy) (an integer, summed exactly); the group
 * adds t^3 - t, t = cx + cy, to the tie term. Then, as scipy:
 *   mu = nx ny / 2,  s = sqrt(nx ny / 12 ((n + 1) - ties / (n (n - 1))))
 *   z = (|U - mu| - 1/2) / s  (sign of U - mu; 0 when |U - mu| < 1/2)
 *   p = 2 (1 - Phi(|z|)), at most 1
 * scipy reports p = 1 when every value is equal (s = 0); so does this,
 * with z = 0. z > 0 when x tends to be the larger. */
int infer_mannwhitney(const double *x, size_t nx, const double *y, size_t ny, struct infer_mwu *out)
{
	out->u = out->z = out->p = out->prob_greater = NAN;
	if (nx == 0 || ny == 0 || !sorted_ok(x, nx) || !sorted_ok(y, ny))
		return -1;

	uint64_t u2 = 0;
	double ties = 0;
	size_t i = 0, j = 0;
	while (i < nx || j < ny) {
		double v = i < nx && (j >= ny || x[i] <= y[j]) ? x[i] : y[j];
		size_t cx = 0, cy = 0, below = j;
		while (i < nx && x[i] == v) {
			i++;
			cx++;
		}
		while (j < ny && y[j] == v) {
			j++;
			cy++;
		}
		u2 += (uint64_t)cx * (2 * (uint64_t)below + cy);
		double t = (double)(cx + cy);
		ties += t * (t - 1) * (t + 1);
	}

	double fx = (double)nx, fy = (double)ny, n = fx + fy;
	double u = (double)u2 / 2, mu = fx * fy / 2;
	double w = fx * fy / 12 * ((n + 1) - ties / (n * (n - 1)));
	double s = w > 0 ? sqrt(w) : 0, dev = fabs(u - mu) - 0.5;
	out->u = u;
	out->prob_greater = 1 - u / (fx * fy);
	if (s > 0 && dev > 0) {
		out->z = copysign(dev / s, u - mu);
		out->p = fmin(1, erfc(dev / s * M_SQRT1_2));
	} else {
		out->z = 0;
		out->p = 1;
	}
	return 0;
}

/* --- bootstrap ---------------------------------------------------------------- */


/* Every random number of the bootstrap is rng_uniform(seed,
 * INFER_STREAM_BOOT, index) with index = replicate << 32 | side << 31 |
 * variate << 28 | counter: one block of 2^28 numbers per variate of a
 * replicate's side, of which a Gamma draw uses three per attempt. So
 * replicate r is the same whatever the number of replicates, and the two
 * sides and the variates never share numbers. */
enum { VAR_GAMMA_K, VAR_GAMMA_REST, VAR_BETA1 };
#define VAR_BLOCK ((uint64_t)1 << 28)

static uint64_t boot_index(uint64_t rep, unsigned side)
{
	return rep << 32 | (uint64_t)side << 31;
}

/* Uniform in (0, 1]. */
static double unif_pos(uint64_t seed, uint64_t index)
{
	return 1 - rng_uniform(seed, INFER_STREAM_BOOT, index);
}

/* Gamma(shape, 1), shape > 0, from the block of numbers at base:
 * Marsaglia & Tsang's squeeze (ACM TOMS 26, 2000) for shape >= 1, three
 * numbers per attempt (two for a Box-Muller normal, one to accept); for
 * shape < 1 their boost Gamma(shape) = Gamma(shape + 1) U^(1/shape), U the
 * block's last number (unused by the bootstrap, whose shapes are integers
 * >= 1). */
static double gamma_draw(double shape, uint64_t seed, uint64_t base)
{
	double boost = 1;
	if (shape < 1) {
		boost = pow(unif_pos(seed, base + VAR_BLOCK - 1), 1 / shape);
		shape += 1;
	}
	double d = shape - 1.0 / 3, c = 1 / sqrt(9 * d);
	for (uint64_t ctr = 0;; ctr += 3) {
		double z = sqrt(-2 * log(unif_pos(seed, base + ctr))) *
		           cos(2 * M_PI * rng_uniform(seed, INFER_STREAM_BOOT, base + ctr + 1));
		double v = 1 + c * z;
		if (v <= 0)
			continue;
		v = v * v * v;
		double u = unif_pos(seed, base + ctr + 2);
		if (u < 1 - 0.0331 * (z * z) * (z * z) ||
		    log(u) < 0.5 * z * z + d * (1 - v + log(v)))
			return d * v * boost;
	}
}

/* The 0-based index of the value a uniform u picks, ceil(n u) - 1, within
 * [0, n - 1]. */
static size_t pick(size_t n, double u)
{
	double c = ceil((double)n * u);
	if (!(c >= 1))
		return 0;
	if (c >= (double)n)
		return n - 1;
	return (size_t)c - 1;
}

/* One bootstrap replicate of the numpy-linear percentile of x (sorted, n
 * values): the percentile of n values drawn from x with replacement,
 * drawn directly. Such a draw is x[ceil(n U_j) - 1] for n uniforms U_j,
 * and that map is monotone, so the resample's k-th smallest value is
 * x[ceil(n U_(k)) - 1] with U_(k) the k-th smallest of the uniforms,
 * which is Beta(k, n + 1 - k) (here the ratio of two Gamma variates,
 * or 1 - V^(1/n) for k = 1). Given U_(k) = u, the other n - k uniforms
 * are uniform on (u, 1), so U_(k+1) = u + (1 - u) Beta(1, n - k), with
 * Beta(1, m) = 1 - V^(1/m) = -expm1(log(V) / m). With numpy's h = (n -
 * 1) q, lo = floor(h), the percentile needs the order statistics lo and
 * lo + 1 (0-based), k = lo + 1; they are interpolated exactly as stats.h
 * does. Two or three variates per replicate whatever n is. */
static double boot_pct(const double *x, size_t n, double pct, uint64_t seed, uint64_t base)
{
	size_t lo, hi;
	double g, u1, c1; /* U_(k) and 1 - U_(k) */

	stats_pct_pos(n, pct, &lo, &hi, &g);
	if (lo == 0) {
		double e = log(unif_pos(seed, base + VAR_BETA1 * VAR_BLOCK + 1)) / (double)n;
		u1 = -expm1(e);
		c1 = exp(e);
	} else {
		double gk = gamma_draw((double)(lo + 1), seed, base + VAR_GAMMA_K * VAR_BLOCK);
		double gr = gamma_draw((double)(n - lo), seed, base + VAR_GAMMA_REST * VAR_BLOCK);
		u1 = gk / (gk + gr);
		c1 = gr / (gk + gr);
	}
	size_t i1 = pick(n, u1);
	if (hi == lo)
		return x[i1];
	double m = (double)(n - lo - 1); /* >= 1: hi = lo + 1 <= n - 1 */
	double b = -expm1(log(unif_pos(seed, base + VAR_BETA1 * VAR_BLOCK)) / m);
	size_t i2 = pick(n, u1 + c1 * b);
	return stats_pct_lerp(x[i1], x[i2 < i1 ? i1 : i2], g);
}

/* Replicate r is boot_pct(b) - boot_pct(a) with the numbers of replicate
 * r; the interval is the numpy-linear percentiles (1 - conf) / 2 and
 * (1 + conf) / 2 of the sorted replicates. Needs two values on each side
 * (with one the replicates would not vary on that side) and resamples >= 1;
 * est is the observed difference whenever both sides have a value. */
int infer_boot_pct_diff(const double *a, size_t na, const double *b, size_t nb, double pct,
                        double conf, unsigned resamples, uint64_t seed, struct infer_ci *out)
{
	double est = NAN;
	int valid = pct >= 0 && pct <= 100;

	if (na >= 1 && nb >= 1 && valid)
		est = stats_percentile_sorted(b, nb, pct) - stats_percentile_sorted(a, na, pct);
	ci_none(out, est);
	if (na < 2 || nb < 2 || !valid || !conf_ok(conf) || resamples == 0 || isnan(est))
		return -1;

	double *rep = xmalloc((size_t)resamples * sizeof(double));
	for (uint64_t r = 0; r < resamples; r++)
		rep[r] = boot_pct(b, nb, pct, seed, boot_index(r, 1)) -
		         boot_pct(a, na, pct, seed, boot_index(r, 0));
	stats_sort(rep, resamples);
	double lo = stats_percentile_sorted(rep, resamples, (1 - conf) / 2 * 100);
	double hi = stats_percentile_sorted(rep, resamples, (1 + conf) / 2 * 100);
	free(rep);
	return ci_set(out, est, lo, hi);
}

/* --- order statistics and binomials ------------------------------------------ */

/* P(X <= k) into *le and P(X > k) into *gt, X ~ Binomial(n, p), for
 * 0 <= k < n and 0 < p < 1: I_{1-p}(n - k, k + 1) and I_p(k + 1, n - k). */
static void binom_tails(long long k, long long n, double p, double *le, double *gt)
{
	double pw;
	incbeta((double)(n - k), (double)(k + 1), 1 - p, p, le, gt, &pw);
}

double infer_binom_cdf(long long k, long long n, double p)
{
	double le, gt;

	if (n < 0 || isnan(p) || p < 0 || p > 1)
		return NAN;
	if (k < 0)
		return 0;
	if (k >= n || p == 0)
		return 1;
	if (p == 1)
		return 0;
	binom_tails(k, n, p, &le, &gt);
	return le;
}

/* P(X >= k), for 0 <= k <= n + 1. */
static double binom_ge(long long k, long long n, double p)
{
	double le, gt;

	if (k <= 0)
		return 1;
	if (k > n || p == 0)
		return 0;
	if (p == 1)
		return 1;
	binom_tails(k - 1, n, p, &le, &gt);
	return gt;
}

/* The rule: with B ~ Binomial(n, q) the number of values below the true
 * q-quantile, x_(l) <= quantile <= x_(u) (1-based ranks) holds exactly
 * when l <= B < u for a continuous distribution, so its probability is
 * 1 - P(B <= l - 1) - P(B >= u) (for a discrete one, at least that).
 * Equal tails, each at most (1 - conf) / 2:
 *   l = the largest rank with P(B <= l - 1) <= (1 - conf) / 2,
 *   u = the smallest rank with P(B >= u) <= (1 - conf) / 2,
 * found by bisection. l = 0 (no such rank: P(B = 0) = (1 - q)^n is
 * already too large) or u = n + 1 (P(B = n) = q^n too large) means no
 * bound on that side: then ok = 0 and -1. At 95%, p50 needs n >= 6
 * (0.5^6 <= 0.025 < 0.5^5) and p99 n >= 368 (0.99^368 <= 0.025). Since
 * tail < 1/2, l < u always. */
int infer_pct_ci_ranks(size_t n, double pct, double conf, size_t *lr, size_t *ur)
{
	if (n < 1 || !(pct >= 0 && pct <= 100) || !conf_ok(conf))
		return -1;
	long long nn = (long long)n;
	double q = pct / 100, tail = (1 - conf) / 2;

	/* P(B <= k - 1) <= tail holds for k in [0, l]: lo holds, hi fails */
	long long lo = 0, hi = nn + 1;
	while (hi - lo > 1) {
		long long mid = lo + (hi - lo) / 2;
		if (infer_binom_cdf(mid - 1, nn, q) <= tail)
			lo = mid;
		else
			hi = mid;
	}
	long long l = lo;
	/* P(B >= k) <= tail holds for k in [u, n + 1]: hi holds, lo fails */
	lo = 0;
	hi = nn + 1;
	while (hi - lo > 1) {
		long long mid = lo + (hi - lo) / 2;
		if (binom_ge(mid, nn, q) <= tail)
			hi = mid;
		else
			lo = mid;
	}
	long long u = hi;
	if (l < 1 || u > nn)
		return -1;
	*lr = (size_t)(l - 1);
	*ur = (size_t)(u - 1);
	return 0;
}

int infer_pct_ci(const double *sorted, size_t n, double pct, double conf, struct infer_ci *out)
{
	int valid = pct >= 0 && pct <= 100;
	size_t l, u;

	ci_none(out, n >= 1 && valid ? stats_percentile_sorted(sorted, n, pct) : NAN);
	if (infer_pct_ci_ranks(n, pct, conf, &l, &u) < 0)
		return -1;
	return ci_set(out, out->est, sorted[l], sorted[u]);
}

/* --- percentile claims -------------------------------------------------------- */

int infer_claim_holds(long long n, long long over, double q, double conf)
{
	if (n < 1 || over < 0 || over > n || !(q > 0 && q < 1) || !conf_ok(conf))
		return 0;
	return infer_binom_cdf(over, n, 1 - q) <= 1 - conf;
}

long long infer_claim_max_over(long long n, double q, double conf)
{
	if (!infer_claim_holds(n, 0, q, conf))
		return -1;
	long long lo = 0, hi = n; /* holds at lo; never at n (P = 1) */
	while (hi - lo > 1) {
		long long mid = lo + (hi - lo) / 2;
		if (infer_claim_holds(n, mid, q, conf))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* With none over, P(B <= 0) = q^n: the first n with q^n <= 1 - conf is
 * about log(1 - conf) / log(q), then stepped to agree exactly with
 * infer_claim_holds. */
long long infer_claim_min_n(double q, double conf)
{
	if (!(q > 0 && q < 1) || !conf_ok(conf))
		return -1;
	double est = ceil(log(1 - conf) / log(q));
	if (!(est < 1e15))
		return -1;
	long long n = est < 1 ? 1 : (long long)est;
	while (n > 1 && infer_claim_holds(n - 1, 0, q, conf))
		n--;
	while (!infer_claim_holds(n, 0, q, conf))
		n++;
	return n;
}
