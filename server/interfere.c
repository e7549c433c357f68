/* interfere.c - how the traffic classes of one run slow each other down
 * (see interfere.h; the rule and the intervals: docs/metrics.md,
 * "Interference between classes"). */
#include "interfere.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer.h"
#include "metrics.h"
#include "rng.h"
#include "runs.h"
#include "stats.h"
#include "util.h"

#define CONF 0.95
#define RESAMPLES 2000
#define SEED 0x1a7e5feeULL

/* the metrics split: the ones the interactive/agent question is about */
static const char *const split_tags[] = {"time_to_first_token", "inter_token_latency",
					 "request_latency"};
#define NSPLIT (sizeof split_tags / sizeof split_tags[0])
static const char *const split_stats[] = {"avg", "p50", "p90", "p99"};
#define NSTAT (sizeof split_stats / sizeof split_stats[0])

/* One class's profiling requests that were sent: when each was in flight
 * ([start, done), done = start when it never ended) and its metric values
 * (NaN when it has none: an error, or no such metric). */
struct cls {
	int64_t *start, *done;      /* per request, in record order */
	int64_t *start_s, *done_s;  /* sorted copies, for counting overlaps */
	double *val[NSPLIT];
	size_t n, cap;
};

static void cls_push(struct cls *c, const struct hr_record *r, const int *mi)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 1024;
		c->start = xrealloc(c->start, c->cap * sizeof *c->start);
		c->done = xrealloc(c->done, c->cap * sizeof *c->done);
		for (size_t m = 0; m < NSPLIT; m++)
			c->val[m] = xrealloc(c->val[m], c->cap * sizeof *c->val[m]);
	}
	c->start[c->n] = r->start_ns;
	c->done[c->n] = r->done_ns != HR_NO_TIME && r->done_ns > r->start_ns ? r->done_ns
									      : r->start_ns;
	int valid = record_is_valid(r);
	for (size_t m = 0; m < NSPLIT; m++)
		c->val[m][c->n] = valid && mi[m] >= 0 ? metric_defs[mi[m]].fn(r) : NAN;
	c->n++;
}

static void cls_free(struct cls *c)
{
	free(c->start);
	free(c->done);
	free(c->start_s);
	free(c->done_s);
	for (size_t m = 0; m < NSPLIT; m++)
		free(c->val[m]);
}

/* how many of the n sorted values are < x (strict) or <= x */
static size_t count_below(const int64_t *v, size_t n, int64_t x, int inclusive)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] < x || (inclusive && v[mid] == x))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Requests of b in flight at some moment of [s, e): those started before
 * e and not done by s (a request done by s started by then too). */
static size_t overlapping(const struct cls *b, int64_t s, int64_t e)
{
	if (e <= s)
		e = s + 1; /* an instant: what was in flight then */
	size_t started = count_below(b->start_s, b->n, e, 0);
	size_t done = count_below(b->done_s, b->n, s, 1);
	return started > done ? started - done : 0;
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* ci[key] = [lo, hi] when the interval exists (as the run's summary: a
 * statistic the values cannot bound is left out) */
static void set_ci(json_t *ci, const char *key, const struct infer_ci *c)
{
	if (c->ok && isfinite(c->lo) && isfinite(c->hi))
		json_object_set_new(ci, key, json_pack("[f, f]", c->lo, c->hi));
}

/* A split's statistics of one metric: {count, avg, p50, p90, p99, ci{...}}
 * over the sorted values. */
static json_t *split_stats_json(const double *sorted, size_t n)
{
	json_t *o = json_pack("{s:I}", "count", (json_int_t)n);
	if (!n)
		return o;
	struct infer_moments m;
	infer_moments_of(sorted, n, &m);
	json_object_set_new(o, "avg", num(m.mean));
	json_t *ci = json_object();
	struct infer_ci c;
	if (n >= 2 && infer_t_mean(&m, CONF, &c) == 0)
		set_ci(ci, "avg", &c);
	for (size_t k = 1; k < NSTAT; k++) {
		double pct = atof(split_stats[k] + 1);
		json_object_set_new(o, split_stats[k], num(stats_percentile_sorted(sorted, n, pct)));
		if (infer_pct_ci(sorted, n, pct, CONF, &c) == 0)
			set_ci(ci, split_stats[k], &c);
	}
	json_object_set_new(o, "ci", ci);
	return o;
}

/* busy - idle for each statistic: {est, lo, hi, direction} where the
 * direction is "higher" or "lower" when the interval excludes 0, else
 * "no_difference" (or null when either side is empty). */
static json_t *diff_json(const double *idle, size_t ni, const double *busy, size_t nb,
			 uint64_t seed)
{
	json_t *o = json_object();
	for (size_t k = 0; k < NSTAT; k++) {
		struct infer_ci c = {.ok = 0};
		if (ni && nb) {
			if (k == 0) {
				struct infer_moments mi, mb;
				infer_moments_of(idle, ni, &mi);
				infer_moments_of(busy, nb, &mb);
				c.est = mb.mean - mi.mean;
				if (ni >= 2 && nb >= 2)
					infer_welch_diff(&mi, &mb, CONF, &c);
			} else {
				double pct = atof(split_stats[k] + 1);
				infer_boot_pct_diff(idle, ni, busy, nb, pct, CONF, RESAMPLES,
						    rng_hash(seed, k, (uint64_t)pct), &c);
				c.est = stats_percentile_sorted(busy, nb, pct) -
					stats_percentile_sorted(idle, ni, pct);
			}
		}
		if (!ni || !nb) {
			json_object_set_new(o, split_stats[k], json_null());
			continue;
		}
		const char *dir = "no_difference";
		if (c.ok && c.lo > 0)
			dir = "higher";
		else if (c.ok && c.hi < 0)
			dir = "lower";
		json_object_set_new(o, split_stats[k],
				    json_pack("{s:o, s:o, s:o, s:s}", "est", num(c.est), "lo",
					      c.ok ? num(c.lo) : json_null(), "hi",
					      c.ok ? num(c.hi) : json_null(), "direction", dir));
	}
	return o;
}

/* the values of metric m over the requests of a picked by `pick` (1: busy,
 * 0: idle), sorted, NaNs left out */
static double *pick_sorted(const struct cls *a, size_t m, const unsigned char *busy, int want,
			   size_t *n)
{
	double *v = xmalloc((a->n ? a->n : 1) * sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < a->n; i++)
		if (busy[i] == want && !isnan(a->val[m][i]))
			v[k++] = a->val[m][i];
	stats_sort(v, k);
	*n = k;
	return v;
}

/* class a's requests split by whether b had any in flight during theirs */
static json_t *pair_json(const struct cls *a, const struct cls *b, uint64_t seed)
{
	unsigned char *busy = xmalloc(a->n ? a->n : 1);
	long long nbusy = 0;
	for (size_t i = 0; i < a->n; i++) {
		busy[i] = overlapping(b, a->start[i], a->done[i]) > 0;
		nbusy += busy[i];
	}
	json_t *jb = json_pack("{s:I}", "requests", (json_int_t)nbusy);
	json_t *ji = json_pack("{s:I}", "requests", (json_int_t)((long long)a->n - nbusy));
	json_t *jd = json_object();
	for (size_t m = 0; m < NSPLIT; m++) {
		size_t ni, nb;
		double *vi = pick_sorted(a, m, busy, 0, &ni);
		double *vb = pick_sorted(a, m, busy, 1, &nb);
		json_object_set_new(ji, split_tags[m], split_stats_json(vi, ni));
		json_object_set_new(jb, split_tags[m], split_stats_json(vb, nb));
		json_object_set_new(jd, split_tags[m], diff_json(vi, ni, vb, nb, rng_hash(seed, m, 0)));
		free(vi);
		free(vb);
	}
	free(busy);
	return json_pack("{s:o, s:o, s:o}", "idle", ji, "busy", jb, "difference", jd);
}

/* "interactive time_to_first_token p99: 7.4 ms with no agents request in
 * flight, 250.1 ms with agents requests in flight (+242.7 ms, 95% interval
 * +229.3 to +247.8)" */
static json_t *headline(const char *an, const char *bn, json_t *pair)
{
	json_t *i = json_object_get(json_object_get(pair, "idle"), "time_to_first_token");
	json_t *b = json_object_get(json_object_get(pair, "busy"), "time_to_first_token");
	json_t *d = json_object_get(json_object_get(json_object_get(pair, "difference"),
						    "time_to_first_token"),
				    "p99");
	json_t *pi = json_object_get(i, "p99"), *pb = json_object_get(b, "p99");
	if (!json_is_number(pi) || !json_is_number(pb) || !json_is_object(d))
		return json_null();
	char buf[400];
	json_t *lo = json_object_get(d, "lo"), *hi = json_object_get(d, "hi");
	int n = snprintf(buf, sizeof buf,
			 "%s time_to_first_token p99: %.1f ms with no %s request in flight, %.1f ms "
			 "with %s requests in flight (%+.1f ms",
			 an, json_number_value(pi), bn, json_number_value(pb), bn,
			 json_number_value(pb) - json_number_value(pi));
	if (json_is_number(lo) && json_is_number(hi) && n > 0 && (size_t)n < sizeof buf)
		n += snprintf(buf + n, sizeof buf - (size_t)n, ", %.0f%% interval %+.1f to %+.1f",
			      CONF * 100, json_number_value(lo), json_number_value(hi));
	if (n > 0 && (size_t)n < sizeof buf)
		snprintf(buf + n, sizeof buf - (size_t)n, ")");
	return json_string(buf);
}

json_t *interfere_compute(struct store *s, int64_t run_id, const struct spec *spec, char *err)
{
	int nc = spec->n_classes;
	if (nc < 2)
		return NULL;
	int mi[NSPLIT];
	for (size_t m = 0; m < NSPLIT; m++) {
		mi[m] = -1;
		for (size_t d = 0; d < metric_defs_count; d++)
			if (strcmp(metric_defs[d].tag, split_tags[m]) == 0)
				mi[m] = (int)d;
	}
	struct cls *cl = xcalloc((size_t)nc, sizeof *cl);
	json_t *out = NULL;
	struct rec_cursor *c = rec_cursor_open(s, run_id);
	if (!c) {
		errf(err, "cannot read the records of run %lld", (long long)run_id);
		goto done;
	}
	const struct hr_record *r;
	int rc;
	size_t total = 0;
	while ((rc = rec_cursor_next(c, &r)) == 1) {
		if (r->phase != HR_PHASE_PROFILING || r->start_ns == HR_NO_TIME)
			continue;
		int k = spec_class_of_worker(spec, r->worker);
		if (k < 0)
			continue;
		if (++total > INTERFERE_MAX_REQUESTS) {
			rec_cursor_free(c);
			out = json_pack("{s:s, s:s}", "rule", "overlap", "skipped",
					"more requests than the split holds in memory");
			goto done;
		}
		cls_push(&cl[k], r, mi);
	}
	rec_cursor_free(c);
	if (rc < 0) {
		errf(err, "run %lld: a stored record is malformed", (long long)run_id);
		goto done;
	}
	for (int k = 0; k < nc; k++) {
		size_t n = cl[k].n;
		cl[k].start_s = xmalloc((n ? n : 1) * sizeof(int64_t));
		cl[k].done_s = xmalloc((n ? n : 1) * sizeof(int64_t));
		if (n) {
			memcpy(cl[k].start_s, cl[k].start, n * sizeof(int64_t));
			memcpy(cl[k].done_s, cl[k].done, n * sizeof(int64_t));
		}
		stats_sort_i64(cl[k].start_s, n);
		stats_sort_i64(cl[k].done_s, n);
	}
	json_t *by = json_object(), *heads = json_array();
	for (int a = 0; a < nc; a++) {
		json_t *pairs = json_object();
		for (int b = 0; b < nc; b++) {
			if (a == b)
				continue;
			json_t *p = pair_json(&cl[a], &cl[b], rng_hash(SEED, (uint64_t)a, (uint64_t)b));
			json_t *h = headline(spec->classes[a].name, spec->classes[b].name, p);
			if (json_is_string(h))
				json_array_append(heads, h);
			json_object_set_new(p, "headline", h);
			json_object_set_new(pairs, spec->classes[b].name, p);
		}
		json_object_set_new(by, spec->classes[a].name, pairs);
	}
	out = json_pack("{s:s, s:f, s:s, s:i, s:o, s:o}", "rule", "overlap", "confidence", CONF,
			"intervals", "avg: Welch t; percentiles: bootstrap", "resamples",
			RESAMPLES, "classes", by, "headlines", heads);
done:
	for (int k = 0; k < nc; k++)
		cls_free(&cl[k]);
	free(cl);
	return out;
}
