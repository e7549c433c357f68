/* test_cmprule.c - the verdict rule of a compared figure (lib/cmprule.h),
 * table-driven: each direction, the noise band, significance, a missing
 * interval and a zero base. */
#include <math.h>

#include "cmprule.h"
#include "tap.h"

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
	return tap_done();
}
