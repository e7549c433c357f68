/* judge.c - validity and gates of a finished run (see judge.h). */
#include "judge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "history.h"
#include "infer.h"
#include "metrics.h"
#include "runs.h"
#include "util.h"

double judge_figure(json_t *summary, const char *metric, const char *stat)
{
	if (strcmp(metric, "error_rate") == 0) {
		json_t *c = json_object_get(summary, "counts");
		double req = (double)json_integer_value(json_object_get(c, "requests"));
		return req > 0 ? (double)json_integer_value(json_object_get(c, "errors")) / req : NAN;
	}
	json_t *m = json_object_get(json_object_get(summary, "metrics"), metric);
	json_t *v = json_object_get(m, strcmp(stat, "value") == 0 ? "avg" : stat);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void reason(json_t *reasons, const char *code, json_t *msg /* stolen */)
{
	json_array_append_new(reasons, json_pack("{s:s, s:o}", "code", code, "message", msg));
}

/* The index of tag in metric_catalog, or -1. */
static int catalog_index(const char *tag)
{
	for (size_t i = 0; i < metric_catalog_count; i++)
		if (strcmp(metric_catalog[i].tag, tag) == 0)
			return (int)i;
	return -1;
}

/* One percentile claim: of the run's values of metric (sorted), how many
 * exceed limit, and whether "p<pct> <= limit" holds at conf. */
static json_t *claim_json(const struct cmp_run *r, const char *metric, double pct, double limit,
			  double conf)
{
	int i = catalog_index(metric);
	if (i < 0 || r->vals[i].n == 0)
		return NULL;
	const struct dvec *d = &r->vals[i];
	/* values are sorted: the count over the limit is a binary search away */
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->v[mid] <= limit)
			lo = mid + 1;
		else
			hi = mid;
	}
	long long n = (long long)d->n, over = (long long)(d->n - lo);
	double q = pct / 100;
	char stat[24];
	snprintf(stat, sizeof stat, "p%g", pct);
	return json_pack("{s:s, s:s, s:f, s:I, s:I, s:b, s:f, s:I, s:I}", "metric", metric, "stat",
			 stat, "limit", limit, "n", (json_int_t)n, "over", (json_int_t)over,
			 "holds", infer_claim_holds(n, over, q, conf), "confidence", conf,
			 "max_over", (json_int_t)infer_claim_max_over(n, q, conf), "min_n",
			 (json_int_t)infer_claim_min_n(q, conf));
}

static json_t *validity(const struct spec *spec, json_t *summary, const struct cmp_run *r,
			int loaded)
{
	json_t *reasons = json_array(), *claims = json_array();
	json_t *counts = json_object_get(summary, "counts");
	long long requests = json_integer_value(json_object_get(counts, "requests"));
	long long valid = json_integer_value(json_object_get(counts, "valid"));
	long long errors = json_integer_value(json_object_get(counts, "errors"));
	double window = json_number_value(json_object_get(summary, "window_s"));
	double conf = spec->validity.confidence;
	long long need = 0;
	if (spec->validity.percentile > 0) {
		need = infer_claim_min_n(spec->validity.percentile / 100, conf);
		if (valid < need)
			reason(reasons, "too_few_requests",
			       json_sprintf("p%g needs at least %lld valid requests to be supported at "
					    "%g%% confidence; the run has %lld (send more, or lower "
					    "validity.percentile)",
					    spec->validity.percentile, need, conf * 100, valid));
	}
	if (spec->validity.min_requests && requests < spec->validity.min_requests)
		reason(reasons, "too_few_requests",
		       json_sprintf("%lld requests in the profiling phase; validity.min_requests is "
				    "%lld",
				    requests, (long long)spec->validity.min_requests));
	if (spec->validity.min_duration_s > 0 && window < spec->validity.min_duration_s)
		reason(reasons, "too_short",
		       json_sprintf("the benchmark window was %.3g s; validity.min_duration_s is %g",
				    window, spec->validity.min_duration_s));
	double rate = requests > 0 ? (double)errors / (double)requests : 0;
	if (requests > 0 && rate > spec->validity.max_error_rate)
		reason(reasons, "error_rate",
		       json_sprintf("%.4g%% of requests failed; validity.max_error_rate is %g%%",
				    rate * 100, spec->validity.max_error_rate * 100));
	json_t *cl = json_object_get(summary, "client");
	const char *verdict = json_string_value(json_object_get(cl, "verdict"));
	if (verdict && strcmp(verdict, "client_bound") == 0 && !spec->client.allow_client_bound)
		reason(reasons, "client_bound",
		       json_string("the client verdict is client_bound: the load generator, not "
				   "the server, was the limit"));
	if (requests == 0)
		reason(reasons, "no_requests", json_string("no request was sent"));
	/* the workers' clocks: offsets known only this well put every time
	 * on one timeline (docs/client.md, "One clock") */
	json_t *clk = json_object_get(summary, "clock");
	json_t *mb = json_object_get(clk, "max_bound_ns");
	double limit_ns = spec->validity.max_clock_error_ms * 1e6;
	if (json_is_integer(mb) && (double)json_integer_value(mb) > limit_ns)
		reason(reasons, "clock_bound",
		       json_sprintf("a worker's clock offset is known only to +-%.3g ms; "
				    "validity.max_clock_error_ms is %g",
				    (double)json_integer_value(mb) / 1e6,
				    spec->validity.max_clock_error_ms));
	/* placement.on_agent_loss "degrade": workers lost with their agent
	 * took their share of the schedule with them (docs/agents.md) */
	json_t *lost = json_object_get(json_object_get(summary, "placement"), "lost");
	if (json_array_size(lost) > 0)
		reason(reasons, "agent_lost",
		       json_sprintf("%zu worker(s) were lost with their agent during the run: "
				    "their share of the schedule was not sent",
				    json_array_size(lost)));
	/* claims: each latency goodput objective at the validity percentile,
	 * and each threshold gate on a percentile with < or <= */
	if (loaded) {
		double pct = spec->validity.percentile > 0 ? spec->validity.percentile : 99;
		for (int i = 0; i < spec->n_slo; i++) {
			const struct spec_slo *o = &spec->slo[i];
			if (o->at_least)
				continue;
			json_t *c = claim_json(r, metric_defs[o->metric].tag, pct, o->limit, conf);
			if (c)
				json_array_append_new(claims, c);
		}
		for (int i = 0; i < spec->n_gates; i++) {
			const struct spec_gate *g = &spec->gates[i];
			const char *st = metric_stat_names[g->stat];
			if (g->regression || st[0] != 'p' ||
			    (g->op != SPEC_OP_LT && g->op != SPEC_OP_LE))
				continue;
			json_t *c = claim_json(r, g->metric, atof(st + 1), g->value, conf);
			if (c)
				json_array_append_new(claims, c);
		}
	}
	return json_pack("{s:b, s:o, s:{s:I, s:f, s:f, s:f, s:I}, s:o}", "valid",
			 json_array_size(reasons) == 0, "reasons", reasons, "checks",
			 "valid_requests", (json_int_t)valid, "window_s", window, "error_rate",
			 rate, "percentile", spec->validity.percentile, "percentile_needs",
			 (json_int_t)need, "claims", claims);
}

static int op_holds(int op, double actual, double value)
{
	switch (op) {
	case SPEC_OP_LT:
		return actual < value;
	case SPEC_OP_LE:
		return actual <= value;
	case SPEC_OP_GT:
		return actual > value;
	default:
		return actual >= value;
	}
}

/* A regression gate: the run against its baseline, at the gate's
 * confidence. It fails when the whole interval of the relative difference
 * lies beyond max_pct in the worse direction (worse by more than max_pct
 * at that confidence). */
static void regression(struct store *s, int64_t id, const struct spec_gate *g, json_t *summary,
		       json_t *res)
{
	int64_t ids[COMPARE_MAX_RUNS];
	char err[HR_ERRLEN];
	int n;
	if (g->baseline)
		n = history_baseline_runs(s, g->baseline, id, ids, COMPARE_MAX_RUNS, err);
	else {
		ids[0] = g->baseline_run;
		n = 1;
	}
	json_object_set_new(res, "baseline",
			    json_pack("{s:o, s:o}", "name",
				      g->baseline ? json_string(g->baseline) : json_null(), "runs",
				      json_array()));
	if (n <= 0) {
		json_object_set_new(res, "passed", json_false());
		json_object_set_new(res, "message",
				    json_sprintf(n == -404 ? "no baseline named '%s'"
							   : "baseline '%s' has no run to compare with",
						 g->baseline ? g->baseline : "?"));
		return;
	}
	json_t *runs = json_object_get(json_object_get(res, "baseline"), "runs");
	for (int i = 0; i < n; i++)
		json_array_append_new(runs, json_integer(ids[i]));
	/* a baseline is a finished run with a summary, and not this run */
	for (int i = 0; i < n; i++) {
		json_t *b = NULL;
		int rc = ids[i] == id ? -409 : runs_get(s, ids[i], 1, &b, err);
		const char *st = b ? json_string_value(json_object_get(b, "state")) : NULL;
		int ready = rc == 0 && st && run_state_is_terminal(st) &&
			    json_is_object(json_object_get(b, "summary"));
		json_decref(b);
		if (!ready) {
			json_object_set_new(res, "passed", json_false());
			json_object_set_new(res, "message",
					    json_sprintf(rc == -404 ? "baseline run %lld does not exist"
							 : ids[i] == id
							     ? "run %lld cannot be its own baseline"
							     : "baseline run %lld has not finished",
							 (long long)ids[i]));
			return;
		}
	}
	struct cmp_opts o;
	cmp_opts_default(&o);
	o.conf = g->confidence;
	o.noise_pct = g->max_pct;
	o.only_metric = g->metric;
	o.head_summary = summary;
	json_t *ans = compare_runs(s, ids, n, &id, 1, &o, err);
	const char *stat = metric_stat_names[g->stat];
	const struct metric_info *mi = metric_info(g->metric);
	json_t *e = ans ? compare_entry(ans, g->metric, mi && mi->run_level ? "value" : stat) : NULL;
	if (!e) {
		json_object_set_new(res, "passed", json_false());
		json_object_set_new(res, "message",
				    json_sprintf("cannot compare with the baseline: %s",
						 ans ? "the figure is missing on a side" : err));
		json_decref(ans);
		return;
	}
	json_t *cip = json_object_get(e, "ci_pct");
	double lo = json_number_value(json_array_get(cip, 0)),
	       hi = json_number_value(json_array_get(cip, 1));
	int dir = mi ? mi->direction : 0;
	int worse = json_is_array(cip) &&
		    (dir < 0 ? lo > g->max_pct : dir > 0 ? hi < -g->max_pct
							 : lo > g->max_pct || hi < -g->max_pct);
	json_object_set(res, "base", json_object_get(e, "base"));
	json_object_set(res, "actual", json_object_get(e, "head"));
	json_object_set(res, "diff_pct", json_object_get(e, "diff_pct"));
	json_object_set(res, "ci_pct", cip);
	json_object_set(res, "verdict", json_object_get(e, "verdict"));
	json_object_set_new(res, "passed", json_boolean(!worse));
	json_object_set_new(res, "message",
			    json_sprintf(worse ? "worse than the baseline by more than %g%% at %g%% "
						 "confidence"
					       : "not worse than the baseline by more than %g%% at "
						 "%g%% confidence",
					 g->max_pct, g->confidence * 100));
	json_decref(ans);
}

static json_t *gates(struct store *s, int64_t id, const struct spec *spec, json_t *summary)
{
	json_t *results = json_array();
	int all = 1;
	for (int i = 0; i < spec->n_gates; i++) {
		const struct spec_gate *g = &spec->gates[i];
		const struct metric_info *mi = metric_info(g->metric);
		const char *stat = mi && mi->run_level ? "value" : metric_stat_names[g->stat];
		json_t *res = json_pack("{s:s, s:s, s:s, s:s}", "name", g->name, "kind",
					g->regression ? "regression" : "threshold", "metric",
					g->metric, "stat", stat);
		if (g->regression) {
			json_object_set_new(res, "max_pct", json_real(g->max_pct));
			json_object_set_new(res, "confidence", json_real(g->confidence));
			regression(s, id, g, summary, res);
		} else {
			double actual = judge_figure(summary, g->metric, stat);
			int ok = !isnan(actual) && op_holds(g->op, actual, g->value);
			json_object_set_new(res, "op", json_string(spec_op_names[g->op]));
			json_object_set_new(res, "value", json_real(g->value));
			json_object_set_new(res, "actual", isnan(actual) ? json_null()
									 : json_real(actual));
			json_object_set_new(res, "passed", json_boolean(ok));
			json_object_set_new(
				res, "message",
				isnan(actual) ? json_sprintf("the run has no %s.%s", g->metric, stat)
					      : json_sprintf("%s.%s is %.6g (%s %s %.6g)", g->metric,
							     stat, actual, ok ? "meets" : "fails",
							     spec_op_names[g->op], g->value));
		}
		all &= json_is_true(json_object_get(res, "passed"));
		json_array_append_new(results, res);
	}
	return json_pack("{s:b, s:o}", "passed", all, "results", results);
}

void judge_run(struct store *s, int64_t id, const struct spec *spec, json_t *summary)
{
	if (!summary)
		return;
	struct cmp_run r;
	char err[HR_ERRLEN];
	int need_claims = spec->n_slo > 0 || spec->n_gates > 0;
	int loaded = need_claims && cmp_run_load(s, id, spec, &r, err) == 0;
	json_object_set_new(summary, "validity", validity(spec, summary, &r, loaded));
	if (loaded)
		cmp_run_release(&r);
	if (spec->n_gates)
		json_object_set_new(summary, "gates", gates(s, id, spec, summary));
}
