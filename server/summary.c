/* summary.c - exact run summaries from stored records (see summary.h). */
#include "summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "infer.h"
#include "metrics.h"
#include "runs.h"
#include "stats.h"
#include "telesum.h"
#include "util.h"

/* 95% intervals of the mean (Student t) and of each percentile (order
 * statistics, distribution-free) as {"avg": [lo, hi], "p50": ...}; sorts
 * vals in place. Members without an interval are left out. */
#define SUMMARY_CI_CONF 0.95
static json_t *ci_json(double *vals, size_t n)
{
	json_t *o = json_object();
	if (n < 2)
		return o;
	stats_sort(vals, n);
	struct infer_moments m;
	struct infer_ci ci;
	infer_moments_of(vals, n, &m);
	if (infer_t_mean(&m, SUMMARY_CI_CONF, &ci) == 0 && ci.ok)
		json_object_set_new(o, "avg", json_pack("[f, f]", ci.lo, ci.hi));
	for (int i = 0; i < STATS_NPCT; i++)
		if (infer_pct_ci(vals, n, stats_pcts[i], SUMMARY_CI_CONF, &ci) == 0 && ci.ok)
			json_object_set_new(o, stats_pct_names[i], json_pack("[f, f]", ci.lo, ci.hi));
	return o;
}

static json_t *stats_json(const char *unit, double *vals, size_t n)
{
	struct stats st;
	stats_compute_select(vals, n, &st); /* as stats_compute, without sorting */
	json_t *o = json_object();
	json_object_set_new(o, "unit", json_string(unit));
	json_object_set_new(o, "count", json_integer((json_int_t)st.count));
	if (st.count == 0)
		return o;
	json_object_set_new(o, "avg", json_real(st.avg));
	json_object_set_new(o, "min", json_real(st.min));
	json_object_set_new(o, "max", json_real(st.max));
	json_object_set_new(o, "std", json_real(st.std));
	for (int i = 0; i < STATS_NPCT; i++)
		json_object_set_new(o, stats_pct_names[i], json_real(st.p[i]));
	json_object_set_new(o, "ci", ci_json(vals, n));
	return o;
}

static json_t *scalar_json(const char *unit, double v)
{
	return json_pack("{s:s, s:f}", "unit", unit, "avg", v);
}

static void push_gap(void *ctx, double v)
{
	dvec_push(ctx, v);
}

struct ivec {
	int64_t *v;
	size_t n, cap;
};

static void ivec_push(struct ivec *a, int64_t x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 1024;
		a->v = xrealloc(a->v, a->cap * sizeof *a->v);
	}
	a->v[a->n++] = x;
}

/* Requested versus achieved load over the profiling phase: the send rate
 * from the actual starts, and the time-weighted concurrency (requests in
 * flight between start and done) with its maximum. */
static json_t *load_json(const struct spec *spec, struct ivec *starts, struct ivec *dones)
{
	json_t *o = json_object();
	const struct spec_load *ld = &spec->load;
	json_object_set_new(o, "mode", json_string(spec_mode_name(ld->mode)));
	json_object_set_new(o, "requested_rate",
			    ld->mode == SPEC_LOAD_RATE ? json_real(ld->rate) : json_null());
	int conc = ld->mode == SPEC_LOAD_CONCURRENCY ? ld->concurrency : ld->max_concurrency;
	json_object_set_new(o, "requested_concurrency", conc ? json_integer(conc) : json_null());
	json_object_set_new(o, "sent", json_integer((json_int_t)starts->n));
	stats_sort_i64(starts->v, starts->n);
	stats_sort_i64(dones->v, dones->n);
	double rate = NAN;
	if (starts->n >= 2 && starts->v[starts->n - 1] > starts->v[0])
		rate = (double)(starts->n - 1) /
		       ((double)(starts->v[starts->n - 1] - starts->v[0]) / 1e9);
	json_object_set_new(o, "achieved_rate", isnan(rate) ? json_null() : json_real(rate));
	/* sweep: +1 at each start, -1 at each done (ends first on ties) */
	size_t i = 0, j = 0;
	long long level = 0, peak = 0;
	double area = 0;
	int64_t prev = starts->n ? starts->v[0] : 0, last = prev;
	while (i < starts->n || j < dones->n) {
		int64_t t;
		int up;
		if (j < dones->n && (i >= starts->n || dones->v[j] <= starts->v[i])) {
			t = dones->v[j++];
			up = 0;
		} else {
			t = starts->v[i++];
			up = 1;
		}
		area += (double)level * (double)(t - prev);
		prev = t;
		level += up ? 1 : -1;
		if (level > peak)
			peak = level;
		last = t;
	}
	double span = starts->n ? (double)(last - starts->v[0]) : 0;
	json_object_set_new(o, "achieved_concurrency",
			    json_pack("{s:o, s:I}", "avg",
				      span > 0 ? json_real(area / span) : json_null(), "max",
				      (json_int_t)peak));
	return o;
}

/* Token counts over the valid profiling records (docs/metrics.md, "Token
 * counts"): where ISL and OSL came from, how far the server's usage is
 * from the tokenizer's count, and how many outputs missed the length the
 * request asked for. */
struct tokacc {
	long long isl_src[HR_TOKSRC__COUNT], osl_src[HR_TOKSRC__COUNT];
	struct dvec isl_diff, osl_diff; /* |usage - tokenizer| / tokenizer, % */
	long long discrepant;           /* either difference over the threshold */
	long long requested, shorter, longer;
};

/* |usage - tok| / tok in %; NaN (not counted) unless both are known and
 * the tokenizer's count is positive */
static double diff_pct(int32_t usage, int32_t tok)
{
	if (usage < 0 || tok <= 0)
		return NAN;
	return fabs((double)usage - tok) * 100.0 / tok;
}

static void tokacc_add(struct tokacc *a, const struct hr_record *r, double threshold)
{
	a->isl_src[r->isl_src < HR_TOKSRC__COUNT ? r->isl_src : HR_TOKSRC_NONE]++;
	a->osl_src[r->osl_src < HR_TOKSRC__COUNT ? r->osl_src : HR_TOKSRC_NONE]++;
	/* a later turn's server count covers the history it resends, the
	 * tokenizer's only its new text: inputs are compared on first turns */
	double di = r->turn == 0 ? diff_pct(r->usage_isl, r->tok_isl) : NAN;
	double dout = diff_pct(r->usage_osl, r->tok_osl);
	if (!isnan(di))
		dvec_push(&a->isl_diff, di);
	if (!isnan(dout))
		dvec_push(&a->osl_diff, dout);
	if ((!isnan(di) && di > threshold) || (!isnan(dout) && dout > threshold))
		a->discrepant++;
	if (r->req_osl >= 0 && r->osl >= 0) {
		a->requested++;
		a->shorter += r->osl < r->req_osl;
		a->longer += r->osl > r->req_osl;
	}
}

static json_t *sources_json(const long long *n)
{
	json_t *o = json_object();
	for (int i = 0; i < HR_TOKSRC__COUNT; i++)
		if (n[i])
			json_object_set_new(o, hr_toksrc_name(i), json_integer(n[i]));
	return o;
}

static json_t *tokacc_json(const struct tokacc *a, double threshold)
{
	return json_pack("{s:o, s:o, s:{s:f, s:o, s:o, s:I}, s:{s:I, s:I, s:I, s:I}}", "isl_sources",
			 sources_json(a->isl_src), "osl_sources", sources_json(a->osl_src),
			 "usage_discrepancy", "threshold_pct", threshold, "isl_diff_pct",
			 stats_json("%", a->isl_diff.v, a->isl_diff.n), "osl_diff_pct",
			 stats_json("%", a->osl_diff.v, a->osl_diff.n), "over_threshold",
			 (json_int_t)a->discrepant, "osl_mismatch", "requested",
			 (json_int_t)a->requested, "missed", (json_int_t)(a->shorter + a->longer),
			 "shorter", (json_int_t)a->shorter, "longer", (json_int_t)a->longer);
}

/* goodput: a valid request meets every objective of the spec */
int summary_meets_slos(const struct spec *spec, const struct hr_record *r)
{
	for (int i = 0; i < spec->n_slo; i++) {
		const struct spec_slo *o = &spec->slo[i];
		double v = metric_defs[o->metric].fn(r);
		if (isnan(v) || (o->at_least ? v < o->limit : v > o->limit))
			return 0;
	}
	return 1;
}

json_t *summary_compute(struct store *s, int64_t run_id, const struct spec *spec,
			int64_t t0_wall, long long *valid_out, char *err)
{
	struct rec_cursor *c = rec_cursor_open(s, run_id);
	if (!c) {
		errf(err, "cannot read the records of run %lld", (long long)run_id);
		return NULL;
	}
	struct dvec vals[32], gaps;
	struct ivec starts = {0}, dones = {0};
	size_t nm = metric_defs_count;
	if (nm > HR_ARRAY_LEN(vals))
		abort(); /* raise the array with the metric table */
	for (size_t i = 0; i < nm; i++)
		dvec_init(&vals[i]);
	dvec_init(&gaps);
	struct tokacc tok = {0};
	dvec_init(&tok.isl_diff);
	dvec_init(&tok.osl_diff);
	long long requests = 0, valid = 0, warmup = 0, errors_by[HR_ERR__COUNT] = {0};
	long long sum_isl = 0, sum_osl = 0, good = 0;
	int64_t first_start = INT64_MAX, last_end = INT64_MIN;
	const struct hr_record *r;
	int rc;
	while ((rc = rec_cursor_next(c, &r)) == 1) {
		if (r->phase != HR_PHASE_PROFILING) {
			warmup++;
			continue;
		}
		requests++;
		if (r->start_ns != HR_NO_TIME) {
			ivec_push(&starts, r->start_ns);
			ivec_push(&dones, r->done_ns != HR_NO_TIME ? r->done_ns : r->start_ns);
			for (size_t i = 0; i < nm; i++) {
				if (metric_defs[i].scope != METRIC_SENT)
					continue;
				double v = metric_defs[i].fn(r);
				if (!isnan(v))
					dvec_push(&vals[i], v);
			}
		}
		if (!record_is_valid(r)) {
			errors_by[r->error < HR_ERR__COUNT ? r->error : HR_ERR_TRANSPORT]++;
			if (r->error == HR_ERR_NONE) /* 200 without content, or odd status */
				errors_by[HR_ERR_NO_CONTENT]++;
			continue;
		}
		valid++;
		if (spec->n_slo && summary_meets_slos(spec, r))
			good++;
		for (size_t i = 0; i < nm; i++) {
			if (metric_defs[i].scope != METRIC_VALID)
				continue;
			double v = metric_defs[i].fn(r);
			if (!isnan(v))
				dvec_push(&vals[i], v);
		}
		metrics_chunk_gaps(r, push_gap, &gaps);
		tokacc_add(&tok, r, spec->workload.discrepancy_pct);
		if (r->isl > 0)
			sum_isl += r->isl;
		if (r->osl > 0)
			sum_osl += r->osl;
		if (r->start_ns < first_start)
			first_start = r->start_ns;
		if (r->end_ns > last_end)
			last_end = r->end_ns;
	}
	rec_cursor_free(c);
	json_t *out = NULL;
	if (rc < 0) {
		errf(err, "run %lld: a stored record is malformed", (long long)run_id);
		goto done;
	}

	json_t *metrics = json_object();
	for (size_t i = 0; i < nm; i++) {
		json_object_set_new(metrics, metric_defs[i].tag,
				    stats_json(metric_defs[i].unit, vals[i].v, vals[i].n));
		if (strcmp(metric_defs[i].tag, "inter_token_latency") == 0)
			json_object_set_new(metrics, "inter_chunk_latency",
					    stats_json("ms", gaps.v, gaps.n));
	}
	double window_s = valid ? (double)(last_end - first_start) / 1e9 : 0;
	if (window_s > 0) {
		json_object_set_new(metrics, "request_throughput",
				    scalar_json("requests/sec", (double)valid / window_s));
		json_object_set_new(metrics, "output_token_throughput",
				    scalar_json("tokens/sec", (double)sum_osl / window_s));
		json_object_set_new(metrics, "total_token_throughput",
				    scalar_json("tokens/sec", (double)(sum_isl + sum_osl) / window_s));
		if (spec->n_slo)
			json_object_set_new(metrics, "goodput",
					    scalar_json("requests/sec", (double)good / window_s));
	}
	json_t *errors = json_object();
	long long nerr = 0;
	for (int e = 1; e < HR_ERR__COUNT; e++)
		if (errors_by[e]) {
			json_object_set_new(errors, hr_err_name(e), json_integer(errors_by[e]));
		}
	nerr = requests - valid;
	int64_t ws = 0, we = 0;
	if (t0_wall && valid) {
		ws = t0_wall + first_start;
		we = t0_wall + last_end;
	}
	json_t *tele = telesum_compute(s, run_id, ws, we, sum_osl);
	out = json_pack("{s:I, s:i, s:f, s:{s:I, s:I, s:I, s:I}, s:o, s:o, s:o, s:o}", "run_id",
			(json_int_t)run_id, "metrics_version", METRICS_VERSION, "window_s",
			window_s, "counts", "requests", (json_int_t)requests, "valid",
			(json_int_t)valid, "errors", (json_int_t)nerr, "warmup", (json_int_t)warmup,
			"errors", errors, "load", load_json(spec, &starts, &dones), "metrics",
			metrics, "telemetry", tele);
	if (out && spec->n_slo) /* goodput: how many valid requests met every objective */
		json_object_set_new(json_object_get(out, "counts"), "good", json_integer(good));
	if (out)
		json_object_set_new(out, "tokens", tokacc_json(&tok, spec->workload.discrepancy_pct));
	if (valid_out)
		*valid_out = valid;
done:
	for (size_t i = 0; i < nm; i++)
		dvec_release(&vals[i]);
	dvec_release(&gaps);
	dvec_release(&tok.isl_diff);
	dvec_release(&tok.osl_diff);
	free(starts.v);
	free(dones.v);
	return out;
}

static void csv_num(struct dynbuf *b, json_t *v)
{
	char buf[32];
	if (json_is_number(v)) {
		if (json_is_integer(v))
			dynbuf_printf(b, ",%lld", (long long)json_integer_value(v));
		else {
			fmt_double(buf, json_number_value(v));
			dynbuf_printf(b, ",%s", buf);
		}
	} else {
		dynbuf_add(b, ",", 1);
	}
}

/* A cell quoted when it holds a comma, a quote, CR or LF. */
static void csv_text(struct dynbuf *b, const char *s)
{
	if (!s[strcspn(s, ",\"\r\n")]) {
		dynbuf_addstr(b, s);
		return;
	}
	dynbuf_add(b, "\"", 1);
	for (; *s; s++)
		dynbuf_add(b, *s == '"' ? "\"\"" : s, *s == '"' ? 2 : 1);
	dynbuf_add(b, "\"", 1);
}

/* The unit of a telemetry concept, from its name (docs/prometheus.md). */
static const char *tele_unit(const char *name)
{
	static const char *const u[][2] = {
		{"_w", "W"},
		{"_j", "J"},
		{"_pct", "%"},
		{"_bytes", "bytes"},
		{"_c", "C"},
		{"_mhz", "MHz"},
		{"_seconds", "s"},
		{"_tokens_total", "tokens"},
		{"preemptions_total", "preemptions"},
		{"_running", "requests"},
		{"_waiting", "requests"},
		{"_usage", "fraction"},
		{"_hit_rate", "fraction"},
	};
	size_t n = strlen(name);
	for (size_t i = 0; i < HR_ARRAY_LEN(u); i++) {
		size_t k = strlen(u[i][0]);
		if (n >= k && strcmp(name + n - k, u[i][0]) == 0)
			return u[i][1];
	}
	return "";
}

/* The metric cell of a telemetry row: telemetry.NAME[.SUFFIX]{source="..",
 * gpu="..",LABELS}, the gpu only when there is one. */
static void tele_metric(struct dynbuf *b, json_t *o, const char *name, const char *suffix)
{
	struct dynbuf k;
	dynbuf_init(&k, 64 * 1024);
	const char *gpu = json_string_value(json_object_get(o, "gpu"));
	const char *labels = json_string_value(json_object_get(o, "labels"));
	const char *src = json_string_value(json_object_get(o, "source"));
	dynbuf_printf(&k, "telemetry.%s%s%s{source=\"%s\"", name, suffix ? "." : "",
		      suffix ? suffix : "", src ? src : "");
	if (gpu && *gpu) {
		dynbuf_addstr(&k, ",gpu=\"");
		for (const char *p = gpu; *p; p++) {
			if (*p == '"' || *p == '\\')
				dynbuf_add(&k, "\\", 1);
			dynbuf_add(&k, p, 1);
		}
		dynbuf_add(&k, "\"", 1);
	}
	if (labels && labels[0] == '{' && labels[1] && labels[1] != '}') /* {k="v",...} */
		dynbuf_printf(&k, ",%s", labels + 1);
	else
		dynbuf_add(&k, "}", 1);
	csv_text(b, k.data ? k.data : "");
	dynbuf_release(&k);
}

/* One telemetry row whose only figure is v, in the avg column (none when
 * v is not a number). */
static void tele_figure_row(struct dynbuf *b, size_t ncols, json_t *o, const char *name,
			    const char *suffix, const char *unit, json_t *v)
{
	if (!json_is_number(v))
		return;
	if (o)
		tele_metric(b, o, name, suffix);
	else
		dynbuf_printf(b, "telemetry.%s", name);
	dynbuf_add(b, ",", 1);
	csv_text(b, unit);
	csv_num(b, json_null()); /* count */
	csv_num(b, v);           /* avg */
	for (size_t i = 2; i < ncols; i++)
		dynbuf_add(b, ",", 1);
	dynbuf_addstr(b, "\n");
}

/* The summary's telemetry as rows (docs/api.md, "Summary CSV"): each GPU
 * (its model name in the unit column, its index in avg), each series'
 * window statistics in their columns (a counter as .delta and .rate rows),
 * then the energy figures. */
static void tele_csv(struct dynbuf *b, json_t *tele, const char *const *cols, size_t ncols)
{
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(tele, "gpus"), i, o)
	{
		tele_metric(b, o, "gpu", NULL);
		const char *name = json_string_value(json_object_get(o, "name"));
		dynbuf_add(b, ",", 1);
		csv_text(b, name ? name : "");
		csv_num(b, json_null());                 /* count */
		csv_num(b, json_object_get(o, "index")); /* avg */
		for (size_t c = 2; c < ncols; c++)
			dynbuf_add(b, ",", 1);
		dynbuf_addstr(b, "\n");
	}
	json_array_foreach(json_object_get(tele, "series"), i, o)
	{
		const char *name = json_string_value(json_object_get(o, "name"));
		const char *kind = json_string_value(json_object_get(o, "kind"));
		if (!name || !kind)
			continue;
		const char *unit = tele_unit(name);
		if (strcmp(kind, "counter") == 0) {
			char per_s[32];
			snprintf(per_s, sizeof per_s, "%s/s", unit);
			tele_figure_row(b, ncols, o, name, "delta", unit,
					json_object_get(o, "delta"));
			tele_figure_row(b, ncols, o, name, "rate", unit[0] ? per_s : "",
					json_object_get(o, "rate"));
			continue;
		}
		tele_metric(b, o, name, NULL);
		dynbuf_add(b, ",", 1);
		csv_text(b, unit);
		for (size_t c = 0; c < ncols; c++)
			csv_num(b, json_object_get(o, cols[c]));
		dynbuf_addstr(b, "\n");
	}
	tele_figure_row(b, ncols, NULL, "energy_j", NULL, "J", json_object_get(tele, "energy_j"));
	tele_figure_row(b, ncols, NULL, "energy_per_output_token_j", NULL, "J/token",
			json_object_get(tele, "energy_per_output_token_j"));
}

char *summary_to_csv(json_t *summary)
{
	static const char *const cols[] = {"count", "avg", "min", "max", "std", "p1",  "p5",
					   "p10",   "p25", "p50", "p75", "p90", "p95", "p99"};
	struct dynbuf b;
	dynbuf_init(&b, 16u << 20);
	dynbuf_addstr(&b, "metric,unit");
	for (size_t i = 0; i < HR_ARRAY_LEN(cols); i++)
		dynbuf_printf(&b, ",%s", cols[i]);
	dynbuf_addstr(&b, "\n");
	const char *tag;
	json_t *m;
	json_object_foreach(json_object_get(summary, "metrics"), tag, m)
	{
		const char *unit = json_string_value(json_object_get(m, "unit"));
		dynbuf_printf(&b, "%s,%s", tag, unit ? unit : "");
		for (size_t i = 0; i < HR_ARRAY_LEN(cols); i++)
			csv_num(&b, json_object_get(m, cols[i]));
		dynbuf_addstr(&b, "\n");
	}
	/* the client verdict: its word in the unit column, then the headline
	 * figures as rows with their value in the avg column */
	json_t *cl = json_object_get(summary, "client");
	const char *verdict = json_string_value(json_object_get(cl, "verdict"));
	if (verdict) {
		dynbuf_printf(&b, "client.verdict,%s", verdict);
		for (size_t i = 0; i < HR_ARRAY_LEN(cols); i++)
			dynbuf_add(&b, ",", 1);
		dynbuf_addstr(&b, "\n");
		json_t *v;
		json_object_foreach(json_object_get(cl, "headline"), tag, v)
		{
			if (!json_is_number(v))
				continue;
			dynbuf_printf(&b, "client.%s,", tag);
			csv_num(&b, json_null()); /* count */
			csv_num(&b, v);           /* avg */
			for (size_t i = 2; i < HR_ARRAY_LEN(cols); i++)
				dynbuf_add(&b, ",", 1);
			dynbuf_addstr(&b, "\n");
		}
	}
	tele_csv(&b, json_object_get(summary, "telemetry"), cols, HR_ARRAY_LEN(cols));
	return dynbuf_take(&b, NULL);
}
