/* cmprule.h - the verdict of one compared figure (docs/compare.md,
 * "Verdicts"): better, worse, unchanged, inconclusive or changed, from the
 * base value, the observed difference head - base and its interval, the
 * metric's direction and the noise threshold. Pure: the comparison API,
 * regression gates and their unit test share it.
 */
#ifndef HR_CMPRULE_H
#define HR_CMPRULE_H

#include <math.h>

enum cmp_verdict {
	CMP_UNCHANGED = 0,
	CMP_BETTER,
	CMP_WORSE,
	CMP_INCONCLUSIVE,
	CMP_CHANGED, /* a metric without a direction moved beyond the noise */
};

static inline const char *cmp_verdict_name(int v)
{
	static const char *const names[] = {"unchanged", "better", "worse", "inconclusive",
					    "changed"};
	return v >= 0 && v <= CMP_CHANGED ? names[v] : "inconclusive";
}

/* direction: -1 lower is better, 1 higher is better, 0 none. diff = head -
 * base, [lo, hi] its interval (have_ci 0: none), noise_pct >= 0.
 *  - no interval: inconclusive;
 *  - the interval excludes 0 and |diff| is beyond the noise band
 *    (noise_pct of |base|): better / worse (changed without a direction);
 *  - otherwise, if the interval lies inside the band, or excludes 0 with a
 *    difference inside it (significant but tiny): unchanged;
 *  - otherwise (the interval is too wide to tell): inconclusive.
 * With base == 0 the band is empty: a significant difference decides. */
static inline int cmp_rule(int direction, double base, double diff, int have_ci, double lo,
			   double hi, double noise_pct)
{
	if (!have_ci || isnan(lo) || isnan(hi) || isnan(diff))
		return CMP_INCONCLUSIVE;
	double band = fabs(base) * noise_pct / 100.0;
	int significant = lo > 0 || hi < 0;
	if (significant && fabs(diff) > band) {
		if (direction == 0)
			return CMP_CHANGED;
		return (diff > 0) == (direction > 0) ? CMP_BETTER : CMP_WORSE;
	}
	if ((lo >= -band && hi <= band) || significant)
		return CMP_UNCHANGED;
	return CMP_INCONCLUSIVE;
}

#endif
