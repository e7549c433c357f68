/* satdet.c - over-saturation within one run (see satdet.h). */
#include "satdet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "util.h"

#define SKIP_S 0.5

void satdet_init(struct satdet *d)
{
	memset(d, 0, sizeof *d);
}

void satdet_inflight(struct satdet *d, double t_s, double in_flight)
{
	if (!(t_s >= SKIP_S) || !isfinite(in_flight))
		return;
	d->t[d->head] = t_s;
	d->infl[d->head] = in_flight;
	d->head = (d->head + 1) % SATDET_SAMPLES;
	if (d->n < SATDET_SAMPLES)
		d->n++;
}

void satdet_done(struct satdet *d, double t_s, double ttft_ms)
{
	if (!(t_s >= SKIP_S) || !isfinite(ttft_ms))
		return;
	d->dt[d->dhead] = t_s;
	d->ttft[d->dhead] = ttft_ms;
	d->dhead = (d->dhead + 1) % SATDET_DONE;
	if (d->nd < SATDET_DONE)
		d->nd++;
}

/* The ring's i-th oldest element */
#define AT(arr, head, n, cap, i) (arr)[((head) + (cap) - (n) + (i)) % (cap)]

static int cmp_pair(const void *a, const void *b)
{
	const double *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* average ranks (1-based) of v[0..n), ties shared; idx is scratch */
static void ranks(const double *v, size_t n, double *rk, double (*pair)[2])
{
	for (size_t i = 0; i < n; i++) {
		pair[i][0] = v[i];
		pair[i][1] = (double)i;
	}
	qsort(pair, n, sizeof pair[0], cmp_pair);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && pair[j + 1][0] == pair[i][0])
			j++;
		double r = (double)(i + j) / 2 + 1;
		for (size_t k = i; k <= j; k++)
			rk[(size_t)pair[k][1]] = r;
		i = j + 1;
	}
}

static double median_of(double *v, size_t n)
{
	stats_sort(v, n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int inflight_grows(const struct satdet *d, double *slope, double *first, double *last)
{
	size_t n = d->n;
	if (n < 8)
		return 0;
	double t0 = AT(d->t, d->head, n, SATDET_SAMPLES, 0);
	double t1 = AT(d->t, d->head, n, SATDET_SAMPLES, n - 1);
	if (t1 - t0 < 2)
		return 0;
	double mt = 0, my = 0;
	for (size_t i = 0; i < n; i++) {
		mt += AT(d->t, d->head, n, SATDET_SAMPLES, i);
		my += AT(d->infl, d->head, n, SATDET_SAMPLES, i);
	}
	mt /= (double)n;
	my /= (double)n;
	double sxx = 0, sxy = 0;
	for (size_t i = 0; i < n; i++) {
		double x = AT(d->t, d->head, n, SATDET_SAMPLES, i) - mt;
		sxx += x * x;
		sxy += x * (AT(d->infl, d->head, n, SATDET_SAMPLES, i) - my);
	}
	if (!(sxx > 0))
		return 0;
	double b = sxy / sxx, a = my - b * mt, sse = 0;
	for (size_t i = 0; i < n; i++) {
		double e = AT(d->infl, d->head, n, SATDET_SAMPLES, i) -
			   (a + b * AT(d->t, d->head, n, SATDET_SAMPLES, i));
		sse += e * e;
	}
	double se = sqrt(sse / (double)(n - 2) / sxx);
	size_t third = n / 3;
	double f = 0, l = 0;
	for (size_t i = 0; i < third; i++) {
		f += AT(d->infl, d->head, n, SATDET_SAMPLES, i);
		l += AT(d->infl, d->head, n, SATDET_SAMPLES, n - 1 - i);
	}
	f /= (double)third;
	l /= (double)third;
	*slope = b;
	*first = f;
	*last = l;
	return b >= 1 && (se == 0 || b / se >= 5) && l >= 2 * f + 1;
}

static int ttft_grows(const struct satdet *d, double *rho, double *first, double *last)
{
	size_t n = d->nd;
	if (n < 30)
		return 0;
	double *t = xmalloc(n * sizeof *t), *y = xmalloc(n * sizeof *y);
	double *rt = xmalloc(n * sizeof *rt), *ry = xmalloc(n * sizeof *ry);
	double(*pair)[2] = xmalloc(n * sizeof *pair);
	for (size_t i = 0; i < n; i++) {
		t[i] = AT(d->dt, d->dhead, n, SATDET_DONE, i);
		y[i] = AT(d->ttft, d->dhead, n, SATDET_DONE, i);
	}
	ranks(t, n, rt, pair);
	ranks(y, n, ry, pair);
	double m = ((double)n + 1) / 2, sxy = 0, sxx = 0, syy = 0;
	for (size_t i = 0; i < n; i++) {
		sxy += (rt[i] - m) * (ry[i] - m);
		sxx += (rt[i] - m) * (rt[i] - m);
		syy += (ry[i] - m) * (ry[i] - m);
	}
	*rho = sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
	/* thirds by completion time: order y by t */
	for (size_t i = 0; i < n; i++) {
		pair[i][0] = t[i];
		pair[i][1] = y[i];
	}
	qsort(pair, n, sizeof pair[0], cmp_pair);
	size_t third = n / 3;
	for (size_t i = 0; i < third; i++) {
		t[i] = pair[i][1];
		rt[i] = pair[n - 1 - i][1];
	}
	*first = median_of(t, third);
	*last = median_of(rt, third);
	free(t);
	free(y);
	free(rt);
	free(ry);
	free(pair);
	return *rho >= 0.5 && *last >= 2 * *first;
}

int satdet_check(const struct satdet *d, char *why, size_t n)
{
	double slope, f_in, l_in, rho, f_tt, l_tt;
	if (!inflight_grows(d, &slope, &f_in, &l_in) || !ttft_grows(d, &rho, &f_tt, &l_tt))
		return 0;
	snprintf(why, n,
		 "oversaturated: requests in flight grew %.1f/s (from %.0f to %.0f on average) and "
		 "time to first token from %.1f to %.1f ms (median; rank correlation with time "
		 "%.2f)",
		 slope, f_in, l_in, f_tt, l_tt, rho);
	return 1;
}
