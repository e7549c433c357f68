/* clocksync.c - clock offsets by the minimum-delay filter (see clocksync.h). */
#include "clocksync.h"

#include <math.h>

int clock_eval(const struct clock_sample *s, int64_t *offset_ns, int64_t *delay_ns)
{
	if (s->t4 < s->t1 || s->t3 < s->t2)
		return -1;
	int64_t delay = (s->t4 - s->t1) - (s->t3 - s->t2);
	if (delay < 0)
		return -1;
	/* halves first: no overflow whatever the clocks' origins */
	int64_t a = s->t2 - s->t1, b = s->t3 - s->t4;
	*offset_ns = a / 2 + b / 2 + (a % 2 + b % 2) / 2;
	*delay_ns = delay;
	return 0;
}

void clock_estimate(const struct clock_sample *s, size_t n, struct clock_est *out)
{
	out->ok = 0;
	out->offset_ns = out->bound_ns = out->delay_ns = out->at_ns = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t off, del;
		if (clock_eval(&s[i], &off, &del) < 0)
			continue;
		if (!out->ok || del < out->delay_ns) {
			out->ok = 1;
			out->offset_ns = off;
			out->delay_ns = del;
			out->bound_ns = (del + 1) / 2;
			out->at_ns = s[i].t1 + (s[i].t4 - s[i].t1) / 2;
		}
	}
}

double clock_drift_ppm(const struct clock_est *e, size_t n)
{
	size_t k = 0;
	double mt = 0, mo = 0;
	int64_t t0 = 0, o0 = 0, tmin = INT64_MAX, tmax = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].ok)
			continue;
		if (!k) {
			t0 = e[i].at_ns;
			o0 = e[i].offset_ns;
		}
		k++;
		mt += (double)(e[i].at_ns - t0);
		mo += (double)(e[i].offset_ns - o0);
		if (e[i].at_ns < tmin)
			tmin = e[i].at_ns;
		if (e[i].at_ns > tmax)
			tmax = e[i].at_ns;
	}
	if (k < 2 || tmax - tmin < 1000000000LL)
		return NAN;
	mt /= (double)k;
	mo /= (double)k;
	double sxy = 0, sxx = 0;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].ok)
			continue;
		double x = (double)(e[i].at_ns - t0) - mt, y = (double)(e[i].offset_ns - o0) - mo;
		sxy += x * y;
		sxx += x * x;
	}
	return sxx > 0 ? sxy / sxx * 1e6 : NAN;
}

int64_t clock_timeline_bound(const struct clock_est *used, const struct clock_est *e, size_t n)
{
	int64_t b = used->bound_ns, best = INT64_MAX;
	for (size_t k = 0; k < n; k++)
		if (e[k].ok && e[k].bound_ns < best)
			best = e[k].bound_ns;
	for (size_t k = 0; k < n; k++) {
		if (!e[k].ok || e[k].at_ns <= used->at_ns || e[k].bound_ns > 4 * best)
			continue;
		int64_t d = e[k].offset_ns - used->offset_ns;
		int64_t at = (d < 0 ? -d : d) + e[k].bound_ns;
		if (at > b)
			b = at;
	}
	return b;
}
