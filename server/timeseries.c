/* timeseries.c - a run's records bucketed on its clock (see timeseries.h).
 *
 * Two passes over the record cursor: the first finds the span of the
 * records' times (and the warm-up's), the second counts each record into
 * its buckets and keeps (bucket, value) pairs of the metrics whose
 * percentiles are asked for; the pairs are then sorted and each bucket's
 * percentiles taken numpy-exactly. Memory: the counters (bounded by
 * HR_MAX_TS_BUCKETS) and 16 bytes per metric value.
 */
#include "timeseries.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hrlimits.h"
#include "metrics.h"
#include "record.h"
#include "runs.h"
#include "stats.h"
#include "util.h"

/* The metrics with percentiles per bucket, each bucketed by its request's
 * send (start_ns). */
static const char *const ts_metrics[] = {"time_to_first_token", "inter_token_latency",
					 "request_latency", "schedule_lag"};
#define TS_NMET (sizeof ts_metrics / sizeof ts_metrics[0])
static const double ts_pcts[] = {50, 90, 99};
static const char *const ts_pct_names[] = {"p50", "p90", "p99"};
#define TS_NPCT 3

struct pair {
	uint32_t b;
	double v;
};

struct pairs {
	struct pair *p;
	size_t n, cap;
};

static void pairs_push(struct pairs *ps, uint32_t b, double v)
{
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 1024;
		ps->p = xrealloc(ps->p, ps->cap * sizeof *ps->p);
	}
	ps->p[ps->n++] = (struct pair){b, v};
}

/* When a request ended (its answer complete or abandoned), or HR_NO_TIME. */
static int64_t end_of(const struct hr_record *r)
{
	return r->end_ns != HR_NO_TIME ? r->end_ns : r->done_ns;
}

/* When a failed request is counted: its end, else its send, else its
 * intended send. */
static int64_t error_time(const struct hr_record *r)
{
	int64_t t = end_of(r);
	if (t == HR_NO_TIME)
		t = r->start_ns;
	if (t == HR_NO_TIME)
		t = r->intended_ns;
	return t;
}

static void span(int64_t t, int64_t *lo, int64_t *hi)
{
	if (t == HR_NO_TIME)
		return;
	if (t < *lo)
		*lo = t;
	if (t > *hi)
		*hi = t;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

struct ts {
	int64_t step_ns, first; /* bucket i covers [(first + i) * step, (first + i + 1) * step) */
	size_t n;
	long long *intended, *sent, *completed, *errors, *starts, *ends;
	long long *kinds[HR_ERR__COUNT];
	double *tokens;
	struct pairs vals[TS_NMET];
};

static uint32_t bucket(const struct ts *t, int64_t ns)
{
	int64_t b = floor_div(ns, t->step_ns) - t->first;
	if (b < 0)
		b = 0;
	if ((size_t)b >= t->n)
		b = (int64_t)t->n - 1;
	return (uint32_t)b;
}

static void add_record(struct ts *t, const struct hr_record *r, const int *defs)
{
	if (r->intended_ns != HR_NO_TIME)
		t->intended[bucket(t, r->intended_ns)]++;
	int64_t end = end_of(r);
	if (r->start_ns != HR_NO_TIME) {
		uint32_t b = bucket(t, r->start_ns);
		t->sent[b]++;
		t->starts[b]++;
		if (end != HR_NO_TIME)
			t->ends[bucket(t, end)]++;
	}
	int valid = record_is_valid(r);
	if (!valid) {
		int64_t et = error_time(r);
		if (et != HR_NO_TIME) {
			uint32_t b = bucket(t, et);
			t->errors[b]++;
			int k = r->error < HR_ERR__COUNT ? r->error : HR_ERR_TRANSPORT;
			if (!t->kinds[k])
				t->kinds[k] = xcalloc(t->n, sizeof(long long));
			t->kinds[k][b]++;
		}
	} else if (end != HR_NO_TIME) {
		t->completed[bucket(t, end)]++;
		if (r->osl > 0) {
			if ((r->flags & HR_REC_STREAMED) && r->n_chunks > 0) {
				double each = (double)r->osl / r->n_chunks;
				for (uint32_t i = 0; i < r->n_chunks; i++)
					t->tokens[bucket(t, r->chunk_ns[i])] += each;
			} else {
				t->tokens[bucket(t, end)] += r->osl;
			}
		}
	}
	if (r->start_ns == HR_NO_TIME)
		return;
	uint32_t b = bucket(t, r->start_ns);
	for (size_t m = 0; m < TS_NMET; m++) {
		const struct metric_def *d = &metric_defs[defs[m]];
		if (d->scope == METRIC_VALID && !valid)
			continue;
		double v = d->fn(r);
		if (!isnan(v))
			pairs_push(&t->vals[m], b, v);
	}
}

static void put_num(struct dynbuf *out, double v)
{
	char buf[64];
	if (!isfinite(v)) {
		dynbuf_addstr(out, "null");
		return;
	}
	fmt_double(buf, v);
	dynbuf_addstr(out, buf);
}

static void put_counts(struct dynbuf *out, const char *name, const long long *c, size_t n)
{
	dynbuf_printf(out, ",\"%s\":[", name);
	for (size_t i = 0; i < n; i++)
		dynbuf_printf(out, "%s%lld", i ? "," : "", c[i]);
	dynbuf_addstr(out, "]");
}

/* The percentiles of one metric: {"unit", "count": [...], "p50": [...], ...}. */
/* A double's bits as an unsigned key in the same order (negative values
 * flipped whole, positive ones with the sign bit set). */
static uint64_t dkey(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return (u >> 63) ? ~u : u | (1ULL << 63);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void ts_sort_doubles(double *v, size_t n)
{
	if (n < 64) { /* a radix sort's eight passes cost more than this */
		if (n)
			qsort(v, n, sizeof *v, dbl_cmp);
		return;
	}
	/* LSD radix sort, 8-bit digits: eight stable counting passes */
	double *tmp = xmalloc(n * sizeof *tmp);
	size_t *cnt = xmalloc(256 * sizeof *cnt);
	double *src = v, *dst = tmp;
	for (int pass = 0; pass < 8; pass++) {
		int sh = pass * 8;
		memset(cnt, 0, 256 * sizeof *cnt);
		for (size_t i = 0; i < n; i++)
			cnt[(dkey(src[i]) >> sh) & 0xff]++;
		size_t sum = 0;
		for (size_t d = 0; d < 256; d++) {
			size_t c = cnt[d];
			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[(dkey(src[i]) >> sh) & 0xff]++] = src[i];
		double *t = src;
		src = dst;
		dst = t;
	}
	/* an even number of passes: the sorted values are back in v */
	free(cnt);
	free(tmp);
}

static void put_metric(struct dynbuf *out, struct ts *t, size_t m, const char *unit)
{
	struct pairs *ps = &t->vals[m];
	double *pct[TS_NPCT];
	long long *count = xcalloc(t->n, sizeof *count);
	/* the values grouped by bucket (a counting sort), then each bucket sorted */
	size_t *start = xcalloc(t->n + 1, sizeof *start);
	for (size_t i = 0; i < ps->n; i++)
		count[ps->p[i].b]++;
	for (size_t b = 0; b < t->n; b++)
		start[b + 1] = start[b] + (size_t)count[b];
	double *vals = xmalloc((ps->n ? ps->n : 1) * sizeof *vals);
	size_t *at = xmalloc((t->n ? t->n : 1) * sizeof *at);
	memcpy(at, start, t->n * sizeof *at);
	for (size_t i = 0; i < ps->n; i++)
		vals[at[ps->p[i].b]++] = ps->p[i].v;
	free(at);
	for (int k = 0; k < TS_NPCT; k++) {
		pct[k] = xmalloc((t->n ? t->n : 1) * sizeof(double));
		for (size_t i = 0; i < t->n; i++)
			pct[k][i] = NAN;
	}
	for (size_t b = 0; b < t->n; b++) {
		size_t nb = start[b + 1] - start[b];
		if (!nb)
			continue;
		ts_sort_doubles(vals + start[b], nb);
		for (int k = 0; k < TS_NPCT; k++)
			pct[k][b] = stats_percentile_sorted(vals + start[b], nb, ts_pcts[k]);
	}
	free(start);
	dynbuf_printf(out, "%s\"%s\":{\"unit\":\"%s\"", m ? "," : "", ts_metrics[m], unit);
	put_counts(out, "count", count, t->n);
	for (int k = 0; k < TS_NPCT; k++) {
		dynbuf_printf(out, ",\"%s\":[", ts_pct_names[k]);
		for (size_t i = 0; i < t->n; i++) {
			if (i)
				dynbuf_addstr(out, ",");
			put_num(out, pct[k][i]);
		}
		dynbuf_addstr(out, "]");
		free(pct[k]);
	}
	dynbuf_addstr(out, "}");
	free(vals);
	free(count);
}

static void ts_free(struct ts *t)
{
	free(t->intended);
	free(t->sent);
	free(t->completed);
	free(t->errors);
	free(t->starts);
	free(t->ends);
	free(t->tokens);
	for (int k = 0; k < HR_ERR__COUNT; k++)
		free(t->kinds[k]);
	for (size_t m = 0; m < TS_NMET; m++)
		free(t->vals[m].p);
}

/* The smallest step of 1, 2 or 5 times a power of ten ms giving at most
 * max buckets over [lo, hi]. */
static long long auto_step_ms(int64_t lo, int64_t hi, int max)
{
	for (long long p = 1;; p *= 10)
		for (int k = 0; k < 3; k++) {
			static const int mul[] = {1, 2, 5};
			long long step = p * mul[k];
			int64_t ns = step * 1000000LL;
			if (floor_div(hi, ns) - floor_div(lo, ns) + 1 <= max ||
			    step >= 86400000LL * 1000)
				return step;
		}
}

int ts_build(struct store *s, int64_t run_id, long long step_ms, int max_buckets,
	     struct dynbuf *out, char *err)
{
	if (max_buckets <= 0 || max_buckets > HR_MAX_TS_BUCKETS)
		max_buckets = HR_TS_AUTO_BUCKETS;
	int defs[TS_NMET];
	for (size_t m = 0; m < TS_NMET; m++) {
		defs[m] = -1;
		for (size_t i = 0; i < metric_defs_count; i++)
			if (strcmp(metric_defs[i].tag, ts_metrics[m]) == 0)
				defs[m] = (int)i;
		if (defs[m] < 0)
			abort(); /* ts_metrics names a metric metric_defs lacks */
	}
	/* pass 1: the span of every time a record is counted at */
	int64_t lo = INT64_MAX, hi = INT64_MIN, wlo = INT64_MAX, whi = INT64_MIN;
	long long records = 0, untimed = 0;
	struct rec_cursor *c = rec_cursor_open(s, run_id);
	if (!c)
		return errf(err, "cannot read the records of run %lld", (long long)run_id);
	const struct hr_record *r;
	int rc;
	while ((rc = rec_cursor_next(c, &r)) == 1) {
		records++;
		if (r->intended_ns == HR_NO_TIME && r->start_ns == HR_NO_TIME &&
		    end_of(r) == HR_NO_TIME) {
			untimed++;
			continue;
		}
		span(r->intended_ns, &lo, &hi);
		span(r->start_ns, &lo, &hi);
		span(end_of(r), &lo, &hi);
		for (uint32_t i = 0; i < r->n_chunks; i++)
			span(r->chunk_ns[i], &lo, &hi);
		if (r->phase == HR_PHASE_WARMUP) {
			span(r->start_ns != HR_NO_TIME ? r->start_ns : r->intended_ns, &wlo, &whi);
			span(end_of(r), &wlo, &whi);
		}
	}
	rec_cursor_free(c);
	if (rc < 0)
		return errf(err, "run %lld: a stored record is malformed", (long long)run_id);
	struct ts t = {0};
	if (lo > hi) { /* no timed record: no buckets */
		lo = hi = 0;
		if (!step_ms)
			step_ms = 1000;
	} else if (!step_ms) {
		step_ms = auto_step_ms(lo, hi, max_buckets);
	}
	t.step_ns = (int64_t)step_ms * 1000000LL;
	t.first = floor_div(lo, t.step_ns);
	int64_t nb = floor_div(hi, t.step_ns) - t.first + 1;
	if (records == untimed)
		nb = 0;
	if (nb > HR_MAX_TS_BUCKETS) {
		long long min_ms =
			(long long)((hi - lo) / ((int64_t)(HR_MAX_TS_BUCKETS - 1) * 1000000LL)) + 1;
		errf(err,
		     "a step of %lld ms makes %lld buckets over this run's %.3f s, more than %d: "
		     "the step must be at least %lld ms",
		     step_ms, (long long)nb, (double)(hi - lo) / 1e9, HR_MAX_TS_BUCKETS, min_ms);
		return -2;
	}
	t.n = (size_t)nb;
	size_t cells = t.n ? t.n : 1;
	t.intended = xcalloc(cells, sizeof(long long));
	t.sent = xcalloc(cells, sizeof(long long));
	t.completed = xcalloc(cells, sizeof(long long));
	t.errors = xcalloc(cells, sizeof(long long));
	t.starts = xcalloc(cells, sizeof(long long));
	t.ends = xcalloc(cells, sizeof(long long));
	t.tokens = xcalloc(cells, sizeof(double));
	/* pass 2: count */
	if (t.n) {
		c = rec_cursor_open(s, run_id);
		if (!c) {
			ts_free(&t);
			return errf(err, "cannot read the records of run %lld", (long long)run_id);
		}
		while ((rc = rec_cursor_next(c, &r)) == 1)
			add_record(&t, r, defs);
		rec_cursor_free(c);
		if (rc < 0) {
			ts_free(&t);
			return errf(err, "run %lld: a stored record is malformed", (long long)run_id);
		}
	}
	int64_t t0 = runs_t0_wall(s, run_id);
	dynbuf_printf(out, "{\"run_id\":%lld,\"t0_wall_ns\":", (long long)run_id);
	if (t0 > 0)
		dynbuf_printf(out, "%lld", (long long)t0);
	else
		dynbuf_addstr(out, "null");
	dynbuf_printf(out, ",\"step_ms\":%lld,\"buckets\":%zu,\"records\":%lld,\"untimed\":%lld",
		      step_ms, t.n, records, untimed);
	if (wlo <= whi)
		dynbuf_printf(out, ",\"warmup_ms\":[%lld,%lld]", (long long)floor_div(wlo, 1000000),
			      (long long)floor_div(whi + 999999, 1000000));
	else
		dynbuf_addstr(out, ",\"warmup_ms\":null");
	dynbuf_addstr(out, ",\"t_ms\":[");
	for (size_t i = 0; i < t.n; i++)
		dynbuf_printf(out, "%s%lld", i ? "," : "",
			      (long long)((t.first + (int64_t)i) * step_ms));
	dynbuf_addstr(out, "]");
	put_counts(out, "intended", t.intended, t.n);
	put_counts(out, "sent", t.sent, t.n);
	put_counts(out, "completed", t.completed, t.n);
	put_counts(out, "errors", t.errors, t.n);
	/* in flight at each bucket's end: sent before it and not yet ended */
	long long fly = 0;
	for (size_t i = 0; i < t.n; i++) {
		fly += t.starts[i] - t.ends[i];
		t.starts[i] = fly;
	}
	put_counts(out, "in_flight", t.starts, t.n);
	dynbuf_addstr(out, ",\"output_tokens_per_s\":[");
	for (size_t i = 0; i < t.n; i++) {
		if (i)
			dynbuf_addstr(out, ",");
		put_num(out, t.tokens[i] / ((double)step_ms / 1000.0));
	}
	dynbuf_addstr(out, "],\"error_kinds\":{");
	int first = 1;
	for (int k = 0; k < HR_ERR__COUNT; k++) {
		if (!t.kinds[k])
			continue;
		dynbuf_printf(out, "%s\"%s\":[", first ? "" : ",",
			      k == HR_ERR_NONE ? "invalid" : hr_err_name(k));
		for (size_t i = 0; i < t.n; i++)
			dynbuf_printf(out, "%s%lld", i ? "," : "", t.kinds[k][i]);
		dynbuf_addstr(out, "]");
		first = 0;
	}
	dynbuf_addstr(out, "},\"metrics\":{");
	for (size_t m = 0; m < TS_NMET; m++)
		put_metric(out, &t, m, metric_defs[defs[m]].unit);
	dynbuf_addstr(out, "}}\n");
	ts_free(&t);
	return 0;
}
