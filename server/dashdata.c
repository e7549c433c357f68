/* dashdata.c - bounded views of a run's records (see dashdata.h). */
#include "dashdata.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "metrics.h"
#include "record.h"
#include "runs.h"
#include "stats.h"
#include "util.h"

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void put_num(struct dynbuf *out, double v)
{
	char buf[64];
	fmt_double(buf, v);
	dynbuf_addstr(out, buf);
}

int dash_distribution(struct store *s, int64_t run_id, int metric, int points,
		      struct dynbuf *out, char *err)
{
	const struct metric_def *d = &metric_defs[metric];
	struct rec_cursor *c = rec_cursor_open(s, run_id);
	if (!c)
		return errf(err, "cannot read the records of run %lld", (long long)run_id);
	struct dvec v;
	dvec_init(&v);
	const struct hr_record *r;
	int rc;
	while ((rc = rec_cursor_next(c, &r)) == 1) {
		if (r->phase != HR_PHASE_PROFILING || r->start_ns == HR_NO_TIME)
			continue;
		if (d->scope == METRIC_VALID && !record_is_valid(r))
			continue;
		double x = d->fn(r);
		if (!isnan(x))
			dvec_push(&v, x);
	}
	rec_cursor_free(c);
	if (rc < 0) {
		dvec_release(&v);
		return errf(err, "run %lld: a stored record is malformed", (long long)run_id);
	}
	if (v.n)
		qsort(v.v, v.n, sizeof *v.v, dbl_cmp);
	int all = v.n <= (size_t)points;
	size_t n = all ? v.n : (size_t)points;
	dynbuf_printf(out, "{\"run_id\":%lld,\"metric\":\"%s\",\"unit\":\"%s\",\"count\":%zu,"
			   "\"exact\":%s,\"values\":[",
		      (long long)run_id, d->tag, d->unit, v.n, all ? "true" : "false");
	for (size_t i = 0; i < n; i++) {
		if (i)
			dynbuf_addstr(out, ",");
		put_num(out, all ? v.v[i]
				 : stats_percentile_sorted(v.v, v.n, 100.0 * (double)i / (double)(n - 1)));
	}
	dynbuf_addstr(out, "],\"fractions\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			dynbuf_addstr(out, ",");
		put_num(out, all ? (double)(i + 1) / (double)n : (double)i / (double)(n - 1));
	}
	dynbuf_addstr(out, "]}\n");
	dvec_release(&v);
	return 0;
}

struct slow {
	double lat;
	uint32_t worker;
	uint64_t seq;
};

/* Slower first; ties by (worker, seq). */
static int slow_before(const struct slow *a, const struct slow *b)
{
	if (a->lat != b->lat)
		return a->lat > b->lat;
	if (a->worker != b->worker)
		return a->worker < b->worker;
	return a->seq < b->seq;
}

static int slow_cmp(const void *a, const void *b)
{
	return slow_before(a, b) ? -1 : slow_before(b, a) ? 1 : 0;
}

/* Keeps the limit slowest in top[0..*n) (unsorted; the fastest kept found by a scan:
 * limit is at most 100). */
static void keep(struct slow *top, int *n, int limit, struct slow x)
{
	if (*n < limit) {
		top[(*n)++] = x;
		return;
	}
	int w = 0;
	for (int i = 1; i < *n; i++)
		if (slow_before(&top[w], &top[i]))
			w = i;
	if (slow_before(&x, &top[w]))
		top[w] = x;
}

int dash_requests(struct store *s, int64_t run_id, enum dash_order order, int limit,
		  struct dynbuf *out, char *err)
{
	dynbuf_printf(out, "{\"run_id\":%lld,\"order\":\"%s\",\"requests\":[", (long long)run_id,
		      order == DASH_SLOWEST ? "slowest" : "failed");
	struct slow top[100];
	int n = 0, written = 0;
	if (limit > 100)
		limit = 100;
	const struct hr_record *r;
	int rc;
	struct rec_cursor *c = rec_cursor_open(s, run_id);
	if (!c)
		return errf(err, "cannot read the records of run %lld", (long long)run_id);
	while ((rc = rec_cursor_next(c, &r)) == 1) {
		if (order == DASH_FAILED) {
			if (record_is_valid(r) || written >= limit)
				continue;
			if (written++)
				dynbuf_addstr(out, ",");
			if (export_record(out, EXPORT_JSONL, r) == 0)
				out->len--; /* the line's newline */
			continue;
		}
		if (r->phase != HR_PHASE_PROFILING || !record_is_valid(r) || r->end_ns == HR_NO_TIME)
			continue;
		keep(top, &n, limit, (struct slow){ns_to_ms(r->end_ns - r->start_ns), r->worker, r->seq});
	}
	rec_cursor_free(c);
	if (rc < 0)
		return errf(err, "run %lld: a stored record is malformed", (long long)run_id);
	if (order == DASH_SLOWEST && n) {
		qsort(top, (size_t)n, sizeof *top, slow_cmp);
		/* second pass: the rows themselves, written in the order of top */
		struct dynbuf *rows = xcalloc((size_t)n, sizeof *rows);
		for (int i = 0; i < n; i++)
			dynbuf_init(&rows[i], SIZE_MAX / 2);
		c = rec_cursor_open(s, run_id);
		if (!c) {
			free(rows);
			return errf(err, "cannot read the records of run %lld", (long long)run_id);
		}
		while ((rc = rec_cursor_next(c, &r)) == 1)
			for (int i = 0; i < n; i++)
				if (top[i].worker == r->worker && top[i].seq == r->seq)
					export_record(&rows[i], EXPORT_JSONL, r);
		rec_cursor_free(c);
		for (int i = 0; i < n; i++) {
			if (rc >= 0 && rows[i].len) {
				if (written++)
					dynbuf_addstr(out, ",");
				dynbuf_add(out, rows[i].data, rows[i].len - 1);
			}
			dynbuf_release(&rows[i]);
		}
		free(rows);
		if (rc < 0)
			return errf(err, "run %lld: a stored record is malformed", (long long)run_id);
	}
	dynbuf_addstr(out, "]}\n");
	return 0;
}
