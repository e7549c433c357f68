/* compare.c - run comparisons with intervals and verdicts (see compare.h). */
#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmprule.h"
#include "imports.h"
#include "infer.h"
#include "metrics.h"
#include "rng.h"
#include "runs.h"
#include "summary.h"
#include "util.h"

#define BATCHES 10          /* batch means: windows per run */
#define MAX_SPEC_DIFFS 100
#define FEW_RECORDS 30

/* The statistics compared for every distribution metric. */
static const char *const cmp_stats[] = {"avg", "p50", "p90", "p95", "p99"};

void cmp_opts_default(struct cmp_opts *o)
{
	memset(o, 0, sizeof *o);
	o->conf = 0.95;
	o->noise_pct = 5;
	o->resamples = 2000;
	o->seed = 1;
}

/* --- loading one run ------------------------------------------------------------ */

static void push_gap(void *ctx, double v)
{
	dvec_push(ctx, v);
}

/* metric_defs index of a catalog entry; -1 for inter_chunk_latency and the
 * run-level figures. */
static int def_index(const char *tag)
{
	for (size_t i = 0; i < metric_defs_count; i++)
		if (strcmp(metric_defs[i].tag, tag) == 0)
			return (int)i;
	return -1;
}

int cmp_run_load(struct store *s, int64_t id, const struct spec *spec, struct cmp_run *out,
		 char *err)
{
	memset(out, 0, sizeof *out);
	out->id = id;
	out->n_dist = metric_catalog_count;
	if (out->n_dist > HR_ARRAY_LEN(out->vals))
		abort(); /* raise the array with the catalog */
	for (size_t i = 0; i < out->n_dist; i++)
		dvec_init(&out->vals[i]);
	dvec_init(&out->ends_s);
	dvec_init(&out->osl);
	dvec_init(&out->tokens);
	dvec_init(&out->good);
	dvec_init(&out->images);
	out->have_slo = spec && spec->n_slo > 0;
	int defs[32], gaps = -1;
	for (size_t i = 0; i < out->n_dist; i++) {
		defs[i] = metric_catalog[i].run_level ? -1 : def_index(metric_catalog[i].tag);
		if (strcmp(metric_catalog[i].tag, "inter_chunk_latency") == 0)
			gaps = (int)i;
	}
	struct rec_cursor *c = rec_cursor_open(s, id);
	if (!c)
		return errf(err, "cannot read the records of run %lld", (long long)id);
	const struct hr_record *r;
	int rc;
	out->first_start = INT64_MAX;
	out->last_end = INT64_MIN;
	while ((rc = rec_cursor_next(c, &r)) == 1) {
		if (r->phase != HR_PHASE_PROFILING)
			continue;
		out->requests++;
		int valid = record_is_valid(r);
		if (r->start_ns != HR_NO_TIME)
			for (size_t i = 0; i < out->n_dist; i++) {
				if (defs[i] < 0)
					continue;
				const struct metric_def *d = &metric_defs[defs[i]];
				if (d->scope == METRIC_VALID && !valid)
					continue;
				double v = d->fn(r);
				if (!isnan(v))
					dvec_push(&out->vals[i], v);
			}
		if (!valid) {
			out->errors++;
			continue;
		}
		out->valid++;
		if (gaps >= 0)
			metrics_chunk_gaps(r, push_gap, &out->vals[gaps]);
		if (r->start_ns < out->first_start)
			out->first_start = r->start_ns;
		if (r->end_ns > out->last_end)
			out->last_end = r->end_ns;
		dvec_push(&out->ends_s, (double)r->end_ns / 1e9);
		double osl = r->osl > 0 ? r->osl : 0, isl = r->isl > 0 ? r->isl : 0;
		dvec_push(&out->osl, osl);
		dvec_push(&out->tokens, osl + isl);
		dvec_push(&out->good, out->have_slo && summary_meets_slos(spec, r) ? 1 : 0);
		dvec_push(&out->images, r->images_out > 0 ? r->images_out : 0);
	}
	rec_cursor_free(c);
	if (rc < 0) {
		cmp_run_release(out);
		return errf(err, "run %lld: a stored record is malformed", (long long)id);
	}
	for (size_t i = 0; i < out->n_dist; i++)
		stats_sort(out->vals[i].v, out->vals[i].n);
	return 0;
}

void cmp_run_release(struct cmp_run *r)
{
	for (size_t i = 0; i < r->n_dist; i++)
		dvec_release(&r->vals[i]);
	dvec_release(&r->ends_s);
	dvec_release(&r->osl);
	dvec_release(&r->tokens);
	dvec_release(&r->good);
	dvec_release(&r->images);
	r->n_dist = 0;
}

/* --- one figure -------------------------------------------------------------------- */

static json_t *pair(double lo, double hi)
{
	return json_pack("[f, f]", lo, hi);
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static const char *dir_name(int d)
{
	return d < 0 ? "lower" : d > 0 ? "higher" : "none";
}

/* Builds one entry and counts its verdict. */
static json_t *entry(const struct metric_info *mi, const char *stat, double base, double head,
		     const struct infer_ci *ci, const char *method, const struct cmp_opts *o,
		     json_t *counts)
{
	double diff = head - base;
	int have = ci && ci->ok && isfinite(ci->lo) && isfinite(ci->hi);
	int v = cmp_rule(mi->direction, base, diff, have, have ? ci->lo : NAN, have ? ci->hi : NAN,
			 o->noise_pct);
	int pct_ok = base != 0 && isfinite(base);
	json_t *e = json_pack("{s:s, s:s, s:s, s:s}", "metric", mi->tag, "stat", stat, "unit",
			      mi->unit, "direction", dir_name(mi->direction));
	json_object_set_new(e, "base", num(base));
	json_object_set_new(e, "head", num(head));
	json_object_set_new(e, "diff", num(diff));
	json_object_set_new(e, "diff_pct", pct_ok ? num(diff / fabs(base) * 100) : json_null());
	json_object_set_new(e, "ci", have ? pair(ci->lo, ci->hi) : json_null());
	json_object_set_new(e, "ci_pct", have && pct_ok ? pair(ci->lo / fabs(base) * 100,
								    ci->hi / fabs(base) * 100)
							  : json_null());
	json_object_set_new(e, "verdict", json_string(cmp_verdict_name(v)));
	json_object_set_new(e, "method", json_string(method));
	const char *vn = cmp_verdict_name(v);
	json_object_set_new(counts, vn, json_integer(json_integer_value(json_object_get(counts, vn)) +
						     1));
	return e;
}

static double stat_of_sorted(const struct dvec *d, const char *stat)
{
	if (d->n == 0)
		return NAN;
	if (strcmp(stat, "avg") == 0) {
		struct infer_moments m;
		infer_moments_of(d->v, d->n, &m);
		return m.mean;
	}
	return stats_percentile_sorted(d->v, d->n, atof(stat + 1));
}

/* Batch means: the run's window cut into BATCHES equal parts, each part's
 * sum of w (per valid request, by its end) over the part's length. */
static void batch_rates(const struct cmp_run *r, const struct dvec *w, double *out, int *n)
{
	*n = 0;
	if (r->valid < 2 || r->last_end <= r->first_start)
		return;
	double t0 = (double)r->first_start / 1e9, span = (double)(r->last_end - r->first_start) / 1e9;
	double len = span / BATCHES, sum[BATCHES] = {0};
	for (size_t i = 0; i < r->ends_s.n; i++) {
		int b = (int)((r->ends_s.v[i] - t0) / len);
		b = b < 0 ? 0 : b >= BATCHES ? BATCHES - 1 : b;
		sum[b] += w ? w->v[i] : 1;
	}
	for (int b = 0; b < BATCHES; b++)
		out[b] = sum[b] / len;
	*n = BATCHES;
}

/* Wilson score interval of a proportion. */
static void wilson(double x, double n, double z, double *lo, double *hi)
{
	double p = x / n, z2 = z * z;
	double c = (p + z2 / (2 * n)) / (1 + z2 / n);
	double h = z / (1 + z2 / n) * sqrt(p * (1 - p) / n + z2 / (4 * n * n));
	*lo = c - h;
	*hi = c + h;
}

/* Newcombe's hybrid score interval of p_head - p_base (his method 10). */
static void newcombe(double xb, double nb, double xh, double nh, double conf, struct infer_ci *ci)
{
	double z = infer_norm_ppf(0.5 + conf / 2), l1, u1, l2, u2;
	wilson(xb, nb, z, &l1, &u1);
	wilson(xh, nh, z, &l2, &u2);
	double p1 = xb / nb, p2 = xh / nh, d = p2 - p1;
	ci->est = d;
	ci->lo = d - sqrt((p2 - l2) * (p2 - l2) + (u1 - p1) * (u1 - p1));
	ci->hi = d + sqrt((u2 - p2) * (u2 - p2) + (p1 - l1) * (p1 - l1));
	ci->ok = 1;
}

/* The summary's figure of a run-level metric (NaN when absent). */
static double summary_figure(json_t *summary, const char *tag)
{
	if (strcmp(tag, "error_rate") == 0) {
		json_t *c = json_object_get(summary, "counts");
		double req = (double)json_integer_value(json_object_get(c, "requests"));
		return req > 0 ? (double)json_integer_value(json_object_get(c, "errors")) / req : NAN;
	}
	json_t *v = json_object_get(json_object_get(json_object_get(summary, "metrics"), tag), "avg");
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void requests_level(json_t *arr, json_t *shifts, const struct cmp_run *a,
			   const struct cmp_run *b, json_t *sa, json_t *sb,
			   const struct cmp_opts *o, json_t *counts)
{
	for (size_t i = 0; i < metric_catalog_count; i++) {
		const struct metric_info *mi = &metric_catalog[i];
		if (o->only_metric && strcmp(o->only_metric, mi->tag) != 0)
			continue;
		if (mi->run_level) {
			double base = summary_figure(sa, mi->tag), head = summary_figure(sb, mi->tag);
			if (isnan(base) && isnan(head))
				continue;
			struct infer_ci ci = {0};
			const char *method = "batch_means";
			if (strcmp(mi->tag, "error_rate") == 0) {
				method = "newcombe";
				if (a->requests > 0 && b->requests > 0)
					newcombe((double)a->errors, (double)a->requests,
						 (double)b->errors, (double)b->requests, o->conf, &ci);
			} else if (strcmp(mi->tag, "goodput") != 0 || (a->have_slo && b->have_slo)) {
				const struct dvec *wa = NULL, *wb = NULL;
				if (strcmp(mi->tag, "output_token_throughput") == 0)
					wa = &a->osl, wb = &b->osl;
				else if (strcmp(mi->tag, "total_token_throughput") == 0)
					wa = &a->tokens, wb = &b->tokens;
				else if (strcmp(mi->tag, "goodput") == 0)
					wa = &a->good, wb = &b->good;
				else if (strcmp(mi->tag, "image_throughput") == 0)
					wa = &a->images, wb = &b->images;
				double ra[BATCHES], rb[BATCHES];
				int na, nb;
				batch_rates(a, wa, ra, &na);
				batch_rates(b, wb, rb, &nb);
				struct infer_moments ma, mb;
				if (na && nb) {
					infer_moments_of(ra, (size_t)na, &ma);
					infer_moments_of(rb, (size_t)nb, &mb);
					if (infer_welch_diff(&ma, &mb, o->conf, &ci) == 0 && ci.ok) {
						/* centred on the whole-window difference */
						double d = head - base;
						ci.lo = d - (ci.est - ci.lo);
						ci.hi = d + (ci.hi - ci.est);
						ci.est = d;
					}
				}
			}
			json_array_append_new(arr, entry(mi, "value", base, head, &ci, method, o,
							 counts));
			continue;
		}
		const struct dvec *va = &a->vals[i], *vb = &b->vals[i];
		if (va->n == 0 && vb->n == 0)
			continue;
		for (size_t k = 0; k < HR_ARRAY_LEN(cmp_stats); k++) {
			const char *stat = cmp_stats[k];
			struct infer_ci ci = {0};
			const char *method;
			if (k == 0) {
				method = "welch";
				struct infer_moments ma, mb;
				infer_moments_of(va->v, va->n, &ma);
				infer_moments_of(vb->v, vb->n, &mb);
				if (va->n >= 2 && vb->n >= 2)
					infer_welch_diff(&ma, &mb, o->conf, &ci);
				/* the means just computed (stat_of_sorted would make
				 * the same passes over every value again) */
				json_array_append_new(arr, entry(mi, stat, ma.mean, mb.mean, &ci,
								 method, o, counts));
				continue;
			} else {
				method = "bootstrap";
				double pct = atof(stat + 1);
				if (va->n && vb->n)
					infer_boot_pct_diff(va->v, va->n, vb->v, vb->n, pct, o->conf,
							    o->resamples,
							    rng_hash(o->seed, i, (uint64_t)pct), &ci);
			}
			json_array_append_new(arr, entry(mi, stat, stat_of_sorted(va, stat),
							 stat_of_sorted(vb, stat), &ci, method, o,
							 counts));
		}
		struct infer_mwu u;
		if (va->n && vb->n && infer_mannwhitney(va->v, va->n, vb->v, vb->n, &u) == 0)
			json_array_append_new(shifts,
					      json_pack("{s:s, s:f, s:o, s:f}", "metric", mi->tag, "u",
							u.u, "p_value", num(u.p), "prob_greater",
							u.prob_greater));
	}
}

/* --- groups of runs: their own figures ----------------------------------------------- */

/* The figure metric.stat of each run (from run_metrics) into out; returns
 * how many runs have it. */
static size_t run_figures(sqlite3 *db, const int64_t *ids, int n, const char *metric,
			  const char *stat, double *out)
{
	char sql[160];
	snprintf(sql, sizeof sql, "SELECT %s FROM run_metrics WHERE run_id = ? AND metric = ?",
		 strcmp(stat, "value") == 0 ? "avg" : stat);
	sqlite3_stmt *st = NULL;
	size_t k = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	for (int i = 0; i < n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, ids[i]);
		sqlite3_bind_text(st, 2, metric, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
			out[k++] = sqlite3_column_double(st, 0);
	}
	sqlite3_finalize(st);
	return k;
}

static void runs_level(struct store *s, json_t *arr, const int64_t *base, int nb,
		       const int64_t *head, int nh, const struct cmp_opts *o, json_t *counts)
{
	sqlite3 *db = store_reader(s);
	double xa[COMPARE_MAX_RUNS], xb[COMPARE_MAX_RUNS];
	for (size_t i = 0; i < metric_catalog_count; i++) {
		const struct metric_info *mi = &metric_catalog[i];
		if (o->only_metric && strcmp(o->only_metric, mi->tag) != 0)
			continue;
		size_t ns = mi->run_level ? 1 : HR_ARRAY_LEN(cmp_stats);
		for (size_t k = 0; k < ns; k++) {
			const char *stat = mi->run_level ? "value" : cmp_stats[k];
			size_t na = run_figures(db, base, nb, mi->tag, stat, xa);
			size_t nbb = run_figures(db, head, nh, mi->tag, stat, xb);
			if (!na || !nbb)
				continue;
			struct infer_moments ma, mb;
			infer_moments_of(xa, na, &ma);
			infer_moments_of(xb, nbb, &mb);
			struct infer_ci ci = {0};
			infer_welch_diff(&ma, &mb, o->conf, &ci);
			json_array_append_new(arr, entry(mi, stat, ma.mean, mb.mean, &ci, "runs_welch",
							 o, counts));
		}
	}
	store_reader_put(s, db);
}

/* --- what differs between the sides --------------------------------------------------- */

static json_t *short_value(json_t *v)
{
	char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_t *out;
	if (!v)
		out = json_null();
	else if (t && strlen(t) > 200)
		out = json_sprintf("<%zu bytes of JSON>", strlen(t));
	else
		out = json_incref(v);
	free(t);
	return out;
}

static void spec_diff(json_t *a, json_t *b, char *path, size_t plen, json_t *out)
{
	if (json_array_size(out) >= MAX_SPEC_DIFFS)
		return;
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *v;
		size_t len = strlen(path);
		json_object_foreach(a, k, v)
		{
			snprintf(path + len, plen - len, "%s%s", len ? "." : "", k);
			spec_diff(v, json_object_get(b, k), path, plen, out);
		}
		json_object_foreach(b, k, v)
		{
			if (json_object_get(a, k))
				continue;
			snprintf(path + len, plen - len, "%s%s", len ? "." : "", k);
			spec_diff(NULL, v, path, plen, out);
		}
		path[len] = '\0';
		return;
	}
	if (a && b && json_equal(a, b))
		return;
	json_array_append_new(out, json_pack("{s:s, s:o, s:o}", "field", path, "base",
					     short_value(a), "head", short_value(b)));
}

/* --- the comparison ------------------------------------------------------------------ */

/* One side's description; *first_summary / *first_spec: the first run's
 * (new references) for the request level. */
static json_t *side_json(struct store *s, const char *which, const int64_t *ids, int n,
			 json_t *warnings, json_t **first, char *err)
{
	json_t *runs = json_array(), *verdicts = json_array(), *valid = json_array();
	json_t *side = json_pack("{s:o, s:i}", "runs", runs, "n_runs", n);
	for (int i = 0; i < n; i++) {
		json_t *run;
		if (runs_get(s, ids[i], 1, &run, err) < 0) {
			json_decref(side);
			json_decref(verdicts);
			json_decref(valid);
			return NULL;
		}
		json_array_append_new(runs, json_integer(ids[i]));
		json_t *v = json_object_get(run, "verdict");
		json_array_append(verdicts, v);
		json_array_append(valid, json_object_get(run, "valid"));
		const char *state = json_string_value(json_object_get(run, "state"));
		if (state && strcmp(state, RUN_SUCCEEDED) != 0)
			json_array_append_new(warnings,
					      json_pack("{s:s, s:s, s:o}", "side", which, "code",
							"not_succeeded", "message",
							json_sprintf("run %lld ended %s",
								     (long long)ids[i], state)));
		if (json_is_string(v) && strcmp(json_string_value(v), "client_bound") == 0)
			json_array_append_new(
				warnings,
				json_pack("{s:s, s:s, s:o}", "side", which, "code", "client_bound",
					  "message",
					  json_sprintf("run %lld is client_bound: its load generator "
						       "was the limit, not the server",
						       (long long)ids[i])));
		if (json_is_false(json_object_get(run, "valid")))
			json_array_append_new(warnings,
					      json_pack("{s:s, s:s, s:o}", "side", which, "code",
							"invalid", "message",
							json_sprintf("run %lld is invalid (see its "
								     "summary's validity)",
								     (long long)ids[i])));
		if (i == 0) {
			json_object_set(side, "name", json_object_get(run, "name"));
			json_object_set(side, "labels", json_object_get(run, "labels"));
			*first = run;
		} else {
			json_decref(run);
		}
	}
	json_object_set_new(side, "verdicts", verdicts);
	json_object_set_new(side, "valid", valid);
	return side;
}

json_t *compare_runs(struct store *s, const int64_t *base, int nb, const int64_t *head, int nh,
		     const struct cmp_opts *o, char *err)
{
	json_t *warnings = json_array(), *ra = NULL, *rb = NULL, *out = NULL;
	json_t *sa = side_json(s, "base", base, nb, warnings, &ra, err);
	json_t *sb = sa ? side_json(s, "head", head, nh, warnings, &rb, err) : NULL;
	if (!sa || !sb)
		goto done;
	json_t *arr = json_array(), *shifts = json_array();
	json_t *counts = json_pack("{s:i, s:i, s:i, s:i, s:i}", "better", 0, "worse", 0,
				   "unchanged", 0, "inconclusive", 0, "changed", 0);
	int requests = nb == 1 && nh == 1;
	/* an imported run without per-request records has only its figures:
	 * the comparison is of those, and says so */
	json_t *firsts[2] = {ra, rb};
	for (int k = 0; k < 2; k++)
		if (imports_summary_only(firsts[k])) {
			requests = 0;
			json_array_append_new(
				warnings,
				json_pack("{s:s, s:s, s:o}", "side", k ? "head" : "base", "code",
					  "summary_only", "message",
					  json_sprintf("run %lld was imported from a file without "
						       "per-request records: only its summary's "
						       "figures are compared, without intervals",
						       (long long)(k ? head[0] : base[0]))));
		}
	if (requests) {
		struct spec spa, spb;
		struct spec_error se;
		int pa = spec_from_json(json_object_get(ra, "spec"), 1, &spa, &se);
		int pb = spec_from_json(json_object_get(rb, "spec"), 1, &spb, &se);
		struct cmp_run la, lb;
		int ok = cmp_run_load(s, base[0], pa == 0 ? &spa : NULL, &la, err) == 0;
		if (ok && cmp_run_load(s, head[0], pb == 0 ? &spb : NULL, &lb, err) < 0) {
			cmp_run_release(&la);
			ok = 0;
		}
		if (pa == 0)
			spec_release(&spa);
		if (pb == 0)
			spec_release(&spb);
		if (!ok) {
			json_decref(arr);
			json_decref(shifts);
			json_decref(counts);
			goto done;
		}
		json_object_set_new(sa, "records", json_integer(la.requests));
		json_object_set_new(sb, "records", json_integer(lb.requests));
		const struct cmp_run *sides[2] = {&la, &lb};
		for (int k = 0; k < 2; k++)
			if (sides[k]->valid < FEW_RECORDS)
				json_array_append_new(
					warnings,
					json_pack("{s:s, s:s, s:o}", "side", k ? "head" : "base",
						  "code", "few_records", "message",
						  json_sprintf("%lld valid requests (fewer than %d): "
							       "intervals are wide and tails "
							       "unsupported",
							       sides[k]->valid, FEW_RECORDS)));
		requests_level(arr, shifts, &la, &lb, json_object_get(ra, "summary"),
			       o->head_summary ? o->head_summary : json_object_get(rb, "summary"),
			       o, counts);
		cmp_run_release(&la);
		cmp_run_release(&lb);
	} else {
		runs_level(s, arr, base, nb, head, nh, o, counts);
	}
	json_t *sd = json_array(), *ld = json_array();
	char path[512] = "";
	json_t *speca = json_deep_copy(json_object_get(ra, "spec"));
	json_t *specb = json_deep_copy(json_object_get(rb, "spec"));
	json_object_del(speca, "labels");
	json_object_del(specb, "labels");
	spec_diff(speca, specb, path, sizeof path, sd);
	json_decref(speca);
	json_decref(specb);
	json_t *la_ = json_object_get(ra, "labels"), *lb_ = json_object_get(rb, "labels");
	const char *k;
	json_t *v;
	json_object_foreach(la_, k, v)
	{
		json_t *w = json_object_get(lb_, k);
		if (!w || !json_equal(v, w))
			json_array_append_new(ld, json_pack("{s:s, s:O, s:o}", "label", k, "base", v,
							    "head", w ? json_incref(w) : json_null()));
	}
	json_object_foreach(lb_, k, v)
	{
		if (!json_object_get(la_, k))
			json_array_append_new(ld, json_pack("{s:s, s:n, s:O}", "label", k, "base",
							    "head", v));
	}
	out = json_pack("{s:o, s:o, s:s, s:f, s:f, s:i, s:I, s:o, s:o, s:o, s:o, s:O, s:o}",
			"base", sa, "head", sb, "level", requests ? "requests" : "runs",
			"confidence", o->conf, "noise_pct", o->noise_pct, "resamples",
			(int)o->resamples, "seed", (json_int_t)o->seed, "metrics", arr, "shifts",
			shifts, "spec_differences", sd, "label_differences", ld, "warnings",
			warnings, "counts", counts);
	sa = sb = NULL;
done:
	json_decref(sa);
	json_decref(sb);
	json_decref(ra);
	json_decref(rb);
	json_decref(warnings);
	return out;
}

json_t *compare_entry(json_t *answer, const char *metric, const char *stat)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(answer, "metrics"), i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "metric")), metric) == 0 &&
		    strcmp(json_string_value(json_object_get(e, "stat")), stat) == 0)
			return e;
	}
	return NULL;
}
