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
#include "timeseries.h"
#include "util.h"

static void put_num(struct dynbuf *out, double v)
{
	char buf[64];
	fmt_double(buf, v);
	dynbuf_addstr(out, buf);
}

int dash_distribution(struct store *s, int64_t run_id, const int *metrics, int n_metrics,
		      int points, struct dynbuf *out, char *err)
{
	struct dvec v[DASH_MAX_METRICS];
	for (int m = 0; m < n_metrics; m++)
		dvec_init(&v[m]);
	struct rec_cursor *c = rec_cursor_open(s, run_id);
	if (!c)
		return errf(err, "cannot read the records of run %lld", (long long)run_id);
	const struct hr_record *r;
	int rc;
	while ((rc = rec_cursor_next(c, &r)) == 1) {
		if (r->phase != HR_PHASE_PROFILING || r->start_ns == HR_NO_TIME)
			continue;
		int valid = record_is_valid(r);
		for (int m = 0; m < n_metrics; m++) {
			const struct metric_def *d = &metric_defs[metrics[m]];
			if (d->scope == METRIC_VALID && !valid)
				continue;
			double x = d->fn(r);
			if (!isnan(x))
				dvec_push(&v[m], x);
		}
	}
	rec_cursor_free(c);
	if (rc < 0) {
		for (int m = 0; m < n_metrics; m++)
			dvec_release(&v[m]);
		return errf(err, "run %lld: a stored record is malformed", (long long)run_id);
	}
	dynbuf_printf(out, "{\"run_id\":%lld,\"metrics\":[", (long long)run_id);
	for (int m = 0; m < n_metrics; m++) {
		const struct metric_def *d = &metric_defs[metrics[m]];
		ts_sort_doubles(v[m].v, v[m].n);
		int all = v[m].n <= (size_t)points;
		size_t n = all ? v[m].n : (size_t)points;
		dynbuf_printf(out, "%s{\"metric\":\"%s\",\"unit\":\"%s\",\"count\":%zu,\"exact\":%s,"
				   "\"values\":[",
			      m ? "," : "", d->tag, d->unit, v[m].n, all ? "true" : "false");
		for (size_t i = 0; i < n; i++) {
			if (i)
				dynbuf_addstr(out, ",");
			put_num(out, all ? v[m].v[i]
					 : stats_percentile_sorted(v[m].v, v[m].n,
								   100.0 * (double)i / (double)(n - 1)));
		}
		dynbuf_addstr(out, "],\"fractions\":[");
		for (size_t i = 0; i < n; i++) {
			if (i)
				dynbuf_addstr(out, ",");
			put_num(out, all ? (double)(i + 1) / (double)n : (double)i / (double)(n - 1));
		}
		dynbuf_addstr(out, "]}");
		dvec_release(&v[m]);
	}
	dynbuf_addstr(out, "]}\n");
	return 0;
}

struct slow {
	double lat;
	uint32_t worker;
	uint64_t seq;
	struct dynbuf row; /* the record as the JSONL export writes it */
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

/* Keeps the limit slowest in top[0..*n), each with its row written when it
 * enters (rarely, once the top has filled with slow ones); the fastest kept
 * is found by a scan: limit is at most 100. */
static void keep(struct slow *top, int *n, int limit, double lat, const struct hr_record *r)
{
	struct slow x = {lat, r->worker, r->seq, {0}};
	int w;
	if (*n < limit) {
		w = (*n)++;
		dynbuf_init(&top[w].row, SIZE_MAX / 2);
	} else {
		w = 0;
		for (int i = 1; i < *n; i++)
			if (slow_before(&top[w], &top[i]))
				w = i;
		if (!slow_before(&x, &top[w]))
			return;
	}
	x.row = top[w].row;
	dynbuf_reset(&x.row);
	export_record(&x.row, EXPORT_JSONL, r);
	top[w] = x;
}

/* DASH_SEQ: limit records from (worker, seq) on. */
static int requests_seq(struct store *s, int64_t run_id, int limit, uint32_t worker,
			uint64_t seq, struct dynbuf *out, char *err)
{
	struct rec_cursor *c = rec_cursor_open_at(s, run_id, worker, seq);
	if (!c)
		return errf(err, "cannot read the records of run %lld", (long long)run_id);
	const struct hr_record *r;
	int rc, written = 0;
	char next[48] = "null";
	while ((rc = rec_cursor_next(c, &r)) == 1) {
		if (written == limit) {
			snprintf(next, sizeof next, "\"%u/%llu\"", r->worker, (unsigned long long)r->seq);
			break;
		}
		if (written++)
			dynbuf_addstr(out, ",");
		if (export_record(out, EXPORT_JSONL, r) == 0)
			out->len--; /* the line's newline */
	}
	rec_cursor_free(c);
	if (rc < 0)
		return errf(err, "run %lld: a stored record is malformed", (long long)run_id);
	dynbuf_printf(out, "],\"next\":%s,\"total\":%lld}\n", next,
		      runs_count_records(s, run_id));
	return 0;
}

int dash_requests(struct store *s, int64_t run_id, enum dash_order order, int limit,
		  uint32_t from_worker, uint64_t from_seq, struct dynbuf *out, char *err)
{
	dynbuf_printf(out, "{\"run_id\":%lld,\"order\":\"%s\",\"requests\":[", (long long)run_id,
		      order == DASH_SLOWEST ? "slowest" : order == DASH_FAILED ? "failed" : "seq");
	if (order == DASH_SEQ)
		return requests_seq(s, run_id, limit, from_worker, from_seq, out, err);
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
			if (record_is_valid(r))
				continue;
			if (written++)
				dynbuf_addstr(out, ",");
			if (export_record(out, EXPORT_JSONL, r) == 0)
				out->len--; /* the line's newline */
			if (written == limit)
				break; /* the first limit failed ones: no need to read on */
			continue;
		}
		if (r->phase != HR_PHASE_PROFILING || !record_is_valid(r) || r->end_ns == HR_NO_TIME)
			continue;
		keep(top, &n, limit, ns_to_ms(r->end_ns - r->start_ns), r);
	}
	rec_cursor_free(c);
	qsort(top, (size_t)n, sizeof *top, slow_cmp);
	for (int i = 0; i < n; i++) {
		if (rc >= 0 && top[i].row.len) {
			if (written++)
				dynbuf_addstr(out, ",");
			dynbuf_add(out, top[i].row.data, top[i].row.len - 1);
		}
		dynbuf_release(&top[i].row);
	}
	if (rc < 0)
		return errf(err, "run %lld: a stored record is malformed", (long long)run_id);
	dynbuf_addstr(out, "]}\n");
	return 0;
}
