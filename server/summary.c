/* summary.c - exact run summaries from stored records (see summary.h). */
#include "summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "infer.h"
#include "interfere.h"
#include "metrics.h"
#include "runs.h"
#include "spill.h"
#include "stats.h"
#include "telesum.h"
#include "util.h"
#include "xstat.h"

/* Memory the samples and load times of one summary may hold (headroomd
 * --summary-memory-mb); beyond it, passes over the records (xstat.h) and
 * sorted runs on disk (spill.h). Set once at start, before any thread. */
static size_t summary_memory = SUMMARY_MEMORY_DEFAULT;

void summary_set_memory(size_t bytes)
{
	summary_memory = bytes ? bytes : 1;
}

/* 95% intervals of the mean (Student t) and of each percentile (order
 * statistics, distribution-free) as {"avg": [lo, hi], "p50": ...}.
 * Members without an interval are left out. */
#define SUMMARY_CI_CONF 0.95
static json_t *ci_json(const struct xstat_result *res)
{
	json_t *o = json_object();
	if (res->st.count < 2)
		return o;
	if (res->mean_ci.ok)
		json_object_set_new(o, "avg", json_pack("[f, f]", res->mean_ci.lo, res->mean_ci.hi));
	for (int i = 0; i < STATS_NPCT; i++)
		if (res->pct_ci[i].ok)
			json_object_set_new(o, stats_pct_names[i],
					    json_pack("[f, f]", res->pct_ci[i].lo, res->pct_ci[i].hi));
	return o;
}

static json_t *stats_json(const char *unit, struct xstat *x)
{
	struct xstat_result res;
	xstat_result(x, SUMMARY_CI_CONF, &res);
	const struct stats *st = &res.st;
	json_t *o = json_object();
	json_object_set_new(o, "unit", json_string(unit));
	json_object_set_new(o, "count", json_integer((json_int_t)st->count));
	if (st->count == 0)
		return o;
	json_object_set_new(o, "avg", json_real(st->avg));
	json_object_set_new(o, "min", json_real(st->min));
	json_object_set_new(o, "max", json_real(st->max));
	json_object_set_new(o, "std", json_real(st->std));
	for (int i = 0; i < STATS_NPCT; i++)
		json_object_set_new(o, stats_pct_names[i], json_real(st->p[i]));
	json_object_set_new(o, "ci", ci_json(&res));
	return o;
}

static json_t *scalar_json(const char *unit, double v)
{
	return json_pack("{s:s, s:f}", "unit", unit, "avg", v);
}

static void push_gap(void *ctx, double v)
{
	xstat_add(ctx, v);
}

/* Requested versus achieved load over the profiling phase: the send rate
 * from the actual starts, and the time-weighted concurrency (requests in
 * flight between start and done) with its maximum. starts and dones are
 * finished spills (read ascending). */
static json_t *load_json(const struct spec *spec, struct spill *starts, struct spill *dones,
			 char *err)
{
	json_t *o = json_object();
	const struct spec_load *ld = &spec->load;
	if (spec->n_classes) {
		/* several shapes side by side: each class's summary has its own */
		json_object_set_new(o, "mode", json_string("classes"));
		json_object_set_new(o, "requested_rate", json_null());
		json_object_set_new(o, "requested_concurrency", json_null());
	} else {
		json_object_set_new(o, "mode", json_string(spec_mode_name(ld->mode)));
		json_object_set_new(o, "requested_rate",
				    ld->mode == SPEC_LOAD_RATE ? json_real(ld->rate) : json_null());
		int conc =
		    ld->mode == SPEC_LOAD_CONCURRENCY ? ld->concurrency : ld->max_concurrency;
		json_object_set_new(o, "requested_concurrency",
				    conc ? json_integer(conc) : json_null());
		if (ld->mode == SPEC_LOAD_RATE && ld->batch_size > 0)
			json_object_set_new(o, "batch",
					    json_pack("{s:i, s:f, s:f}", "size", ld->batch_size,
						      "interval_s", ld->batch_interval_s,
						      "jitter_s", ld->batch_jitter_s));
	}
	size_t ns = spill_count(starts), nd = spill_count(dones);
	json_object_set_new(o, "sent", json_integer((json_int_t)ns));
	/* sweep: +1 at each start, -1 at each done (ends first on ties) */
	size_t i = 0, j = 0;
	long long level = 0, peak = 0;
	double area = 0;
	int64_t s_next = 0, d_next = 0, first = 0, last_start = 0, prev = 0, last = 0;
	int rs = ns ? spill_next(starts, &s_next, err) : 0;
	int rd = nd ? spill_next(dones, &d_next, err) : 0;
	if (rs > 0)
		first = prev = last = s_next;
	while (rs > 0 || rd > 0) {
		int64_t t;
		int up;
		if (rd > 0 && (rs <= 0 || d_next <= s_next)) {
			t = d_next;
			up = 0;
			j++;
			rd = j < nd ? spill_next(dones, &d_next, err) : 0;
		} else {
			t = s_next;
			up = 1;
			i++;
			last_start = t;
			rs = i < ns ? spill_next(starts, &s_next, err) : 0;
		}
		area += (double)level * (double)(t - prev);
		prev = t;
		level += up ? 1 : -1;
		if (level > peak)
			peak = level;
		last = t;
	}
	if (rs < 0 || rd < 0) {
		json_decref(o);
		return NULL;
	}
	double rate = NAN;
	if (ns >= 2 && last_start > first)
		rate = (double)(ns - 1) / ((double)(last_start - first) / 1e9);
	json_object_set_new(o, "achieved_rate", isnan(rate) ? json_null() : json_real(rate));
	double span = ns ? (double)(last - first) : 0;
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
	long long discrepant; /* either difference over the threshold */
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

/* a later turn's server count covers the history it resends, the
 * tokenizer's only its new text: inputs are compared on first turns */
static double isl_diff(const struct hr_record *r)
{
	return r->turn == 0 ? diff_pct(r->usage_isl, r->tok_isl) : NAN;
}

static void tokacc_add(struct tokacc *a, const struct hr_record *r, double threshold)
{
	a->isl_src[r->isl_src < HR_TOKSRC__COUNT ? r->isl_src : HR_TOKSRC_NONE]++;
	a->osl_src[r->osl_src < HR_TOKSRC__COUNT ? r->osl_src : HR_TOKSRC_NONE]++;
	double di = isl_diff(r), dout = diff_pct(r->usage_osl, r->tok_osl);
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

/* The samples of one summary: a value per metric, the inter-chunk gaps
 * and the token-count differences. */
struct samples {
	struct xstat_pool pool;
	struct xstat vals[32], gaps, isl_diff, osl_diff;
	size_t nm;
};

static json_t *tokacc_json(const struct tokacc *a, struct samples *sm, double threshold)
{
	return json_pack("{s:o, s:o, s:{s:f, s:o, s:o, s:I}, s:{s:I, s:I, s:I, s:I}}", "isl_sources",
			 sources_json(a->isl_src), "osl_sources", sources_json(a->osl_src),
			 "usage_discrepancy", "threshold_pct", threshold, "isl_diff_pct",
			 stats_json("%", &sm->isl_diff), "osl_diff_pct",
			 stats_json("%", &sm->osl_diff), "over_threshold", (json_int_t)a->discrepant,
			 "osl_mismatch", "requested", (json_int_t)a->requested, "missed",
			 (json_int_t)(a->shorter + a->longer), "shorter", (json_int_t)a->shorter,
			 "longer", (json_int_t)a->longer);
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

static void samples_init(struct samples *sm)
{
	/* half the budget for the samples' values (their statistics need a
	 * copy of the largest), an eighth each for the start and done times */
	xstat_pool_init(&sm->pool, summary_memory / 2 / sizeof(double));
	sm->nm = metric_defs_count;
	if (sm->nm > HR_ARRAY_LEN(sm->vals))
		abort(); /* raise the array with the metric table */
	for (size_t i = 0; i < sm->nm; i++)
		xstat_init(&sm->vals[i], &sm->pool);
	xstat_init(&sm->gaps, &sm->pool);
	xstat_init(&sm->isl_diff, &sm->pool);
	xstat_init(&sm->osl_diff, &sm->pool);
}

static void samples_release(struct samples *sm)
{
	for (size_t i = 0; i < sm->nm; i++)
		xstat_release(&sm->vals[i]);
	xstat_release(&sm->gaps);
	xstat_release(&sm->isl_diff);
	xstat_release(&sm->osl_diff);
}

/* 1 when any sample needs another pass */
static int samples_end_pass(struct samples *sm)
{
	int more = 0;
	for (size_t i = 0; i < sm->nm; i++)
		more |= xstat_end_pass(&sm->vals[i]);
	more |= xstat_end_pass(&sm->gaps);
	more |= xstat_end_pass(&sm->isl_diff);
	more |= xstat_end_pass(&sm->osl_diff);
	return more;
}

static void add_scope(struct samples *sm, const struct hr_record *r, int scope)
{
	for (size_t i = 0; i < sm->nm; i++) {
		if (metric_defs[i].scope != scope)
			continue;
		double v = metric_defs[i].fn(r);
		if (!isnan(v))
			xstat_add(&sm->vals[i], v);
	}
}

/* Feeds a profiling record's values to the samples, the same way every
 * pass; returns whether the record is valid. */
static int samples_add(struct samples *sm, const struct hr_record *r)
{
	if (r->start_ns != HR_NO_TIME)
		add_scope(sm, r, METRIC_SENT);
	if (!record_is_valid(r))
		return 0;
	add_scope(sm, r, METRIC_VALID);
	metrics_chunk_gaps(r, push_gap, &sm->gaps);
	double di = isl_diff(r), dout = diff_pct(r->usage_osl, r->tok_osl);
	if (!isnan(di))
		xstat_add(&sm->isl_diff, di);
	if (!isnan(dout))
		xstat_add(&sm->osl_diff, dout);
	return 1;
}

/* Everything of the summary but the samples, from the first pass. */
struct firstpass {
	struct spill *starts, *dones;
	struct tokacc tok;
	long long requests, valid, warmup, errors_by[HR_ERR__COUNT];
	long long sum_isl, sum_osl, good;
	long long sum_images; /* pictures answered (images_out), when any record has them */
	bool images;
	/* the valid requests' media counts (docs/metrics.md, "Media"): their
	 * sums, how many records had each (0: the field is null throughout),
	 * and how many had any */
	long long media_sum[5], media_n[5], media_requests;
	int64_t first_start, last_end;
};

static int first_pass_add(struct firstpass *f, const struct spec *spec,
			  const struct hr_record *r, int valid, char *err)
{
	f->requests++;
	if (r->start_ns != HR_NO_TIME &&
	    (spill_push(f->starts, r->start_ns, err) < 0 ||
	     spill_push(f->dones, r->done_ns != HR_NO_TIME ? r->done_ns : r->start_ns, err) < 0))
		return -1;
	if (!valid) {
		f->errors_by[r->error < HR_ERR__COUNT ? r->error : HR_ERR_TRANSPORT]++;
		if (r->error == HR_ERR_NONE) /* 200 without content, or odd status */
			f->errors_by[HR_ERR_NO_CONTENT]++;
		return 0;
	}
	f->valid++;
	const struct spec *rs = spec_for_worker(spec, r->worker); /* its class's objectives */
	if (rs->n_slo && summary_meets_slos(rs, r))
		f->good++;
	tokacc_add(&f->tok, r, rs->workload.discrepancy_pct);
	if (r->isl > 0)
		f->sum_isl += r->isl;
	if (r->osl > 0)
		f->sum_osl += r->osl;
	if (r->images_out >= 0) { /* image endpoints */
		f->images = true;
		f->sum_images += r->images_out;
	}
	const int32_t media[5] = {r->images_in, r->audio_in, r->media_bytes_in, r->images_out,
	                          r->bytes_out};
	bool any = false;
	for (int k = 0; k < 5; k++)
		if (media[k] >= 0) {
			f->media_sum[k] += media[k];
			f->media_n[k]++;
			any = true;
		}
	f->media_requests += any;
	if (r->start_ns < f->first_start)
		f->first_start = r->start_ns;
	if (r->end_ns > f->last_end)
		f->last_end = r->end_ns;
	return 0;
}

/* The valid requests' media counts: each field's sum over the records
 * that have it (null when none has), and how many requests had any. */
static json_t *media_json(const struct firstpass *f)
{
	static const char *const names[5] = {"images_in", "audio_in", "media_bytes_in",
	                                     "images_out", "bytes_out"};
	json_t *o = json_pack("{s:I}", "requests", (json_int_t)f->media_requests);
	for (int k = 0; k < 5; k++)
		json_object_set_new(o, names[k],
		                    f->media_n[k] ? json_integer((json_int_t)f->media_sum[k])
		                                  : json_null());
	return o;
}

/* The records a summary covers: the run's, or one class's workers
 * [w_lo, w_hi). */
struct scope {
	uint32_t w_lo, w_hi;
};

/* One pass over the run's records: 1 when the samples want another, 0
 * when done, -1 with err. */
static int summary_pass(struct store *s, int64_t run_id, const struct spec *spec,
			const struct scope *sc, struct samples *sm, struct firstpass *f, char *err)
{
	struct rec_cursor *c = rec_cursor_open(s, run_id);
	if (!c)
		return errf(err, "cannot read the records of run %lld", (long long)run_id);
	const struct hr_record *r;
	int rc;
	while ((rc = rec_cursor_next(c, &r)) == 1) {
		if (r->worker < sc->w_lo || r->worker >= sc->w_hi)
			continue;
		if (r->phase != HR_PHASE_PROFILING) {
			if (f)
				f->warmup++;
			continue;
		}
		int valid = samples_add(sm, r);
		if (f && first_pass_add(f, spec, r, valid, err) < 0) {
			rec_cursor_free(c);
			return -1;
		}
	}
	rec_cursor_free(c);
	if (rc < 0)
		return errf(err, "run %lld: a stored record is malformed", (long long)run_id);
	return samples_end_pass(sm);
}

json_t *summary_compute(struct store *s, int64_t run_id, const struct spec *spec,
			int64_t t0_wall, long long *valid_out, char *err)
{
	return summary_compute_ex(s, run_id, spec, t0_wall, valid_out, NULL, err);
}

/* Whether any objective applies: the run's, or any class's. */
static int has_slos(const struct spec *spec)
{
	int n = spec->n_slo;
	for (int k = 0; k < spec->n_classes; k++)
		n += spec->classes[k].spec->n_slo;
	return n > 0;
}

static json_t *compute(struct store *s, int64_t run_id, const struct spec *spec,
		       const struct scope *sc, int64_t t0_wall, long long *valid_out,
		       struct summary_cost *cost, int whole, char *err);

json_t *summary_compute_ex(struct store *s, int64_t run_id, const struct spec *spec,
			   int64_t t0_wall, long long *valid_out, struct summary_cost *cost,
			   char *err)
{
	struct scope all = {0, UINT32_MAX};
	json_t *out = compute(s, run_id, spec, &all, t0_wall, valid_out, cost, 1, err);
	if (!out || !spec->n_classes)
		return out;
	/* traffic classes: each one's summary over its own workers' records,
	 * against its own spec, then how they slowed each other down */
	json_t *classes = json_object();
	for (int k = 0; k < spec->n_classes; k++) {
		const struct spec_class *c = &spec->classes[k];
		struct scope one = {(uint32_t)c->first_worker,
				    (uint32_t)(c->first_worker + c->workers)};
		json_t *cs = compute(s, run_id, c->spec, &one, t0_wall, NULL, NULL, 0, err);
		if (!cs) {
			json_decref(classes);
			json_decref(out);
			return NULL;
		}
		json_object_del(cs, "run_id");
		json_object_del(cs, "metrics_version");
		json_object_set_new(cs, "workers", json_pack("{s:i, s:i}", "first", c->first_worker,
							     "count", c->workers));
		json_object_set_new(classes, c->name, cs);
	}
	json_object_set_new(out, "classes", classes);
	json_t *itf = interfere_compute(s, run_id, spec, err);
	if (!itf && spec->n_classes >= 2) {
		json_decref(out);
		return NULL;
	}
	if (itf)
		json_object_set_new(out, "interference", itf);
	return out;
}

static json_t *compute(struct store *s, int64_t run_id, const struct spec *spec,
		       const struct scope *sc, int64_t t0_wall, long long *valid_out,
		       struct summary_cost *cost, int whole, char *err)
{
	struct samples sm;
	samples_init(&sm);
	struct firstpass f = {.first_start = INT64_MAX, .last_end = INT64_MIN};
	size_t tcap = summary_memory / 8 / sizeof(int64_t);
	f.starts = spill_new(tcap, NULL);
	f.dones = spill_new(tcap, NULL);
	json_t *out = NULL;
	int passes = 1;
	int rc = summary_pass(s, run_id, spec, sc, &sm, &f, err);
	while (rc == 1 && ++passes)
		rc = summary_pass(s, run_id, spec, sc, &sm, NULL, err);
	if (rc < 0 || spill_finish(f.starts, err) < 0 || spill_finish(f.dones, err) < 0)
		goto done;
	if (cost) {
		cost->passes = passes;
		cost->spill_runs = spill_runs(f.starts) + spill_runs(f.dones);
	}
	json_t *load = load_json(spec, f.starts, f.dones, err);
	if (!load)
		goto done;

	json_t *metrics = json_object();
	for (size_t i = 0; i < sm.nm; i++) {
		json_object_set_new(metrics, metric_defs[i].tag,
				    stats_json(metric_defs[i].unit, &sm.vals[i]));
		if (strcmp(metric_defs[i].tag, "inter_token_latency") == 0)
			json_object_set_new(metrics, "inter_chunk_latency", stats_json("ms", &sm.gaps));
	}
	long long valid = f.valid;
	double window_s = valid ? (double)(f.last_end - f.first_start) / 1e9 : 0;
	if (window_s > 0) {
		json_object_set_new(metrics, "request_throughput",
				    scalar_json("requests/sec", (double)valid / window_s));
		json_object_set_new(metrics, "output_token_throughput",
				    scalar_json("tokens/sec", (double)f.sum_osl / window_s));
		json_object_set_new(
		    metrics, "total_token_throughput",
		    scalar_json("tokens/sec", (double)(f.sum_isl + f.sum_osl) / window_s));
		if (f.images) /* only where pictures are answered: other summaries unchanged */
			json_object_set_new(metrics, "image_throughput",
					    scalar_json("images/sec", (double)f.sum_images / window_s));
		if (has_slos(spec))
			json_object_set_new(metrics, "goodput",
					    scalar_json("requests/sec", (double)f.good / window_s));
	}
	json_t *errors = json_object();
	for (int e = 1; e < HR_ERR__COUNT; e++)
		if (f.errors_by[e])
			json_object_set_new(errors, hr_err_name(e), json_integer(f.errors_by[e]));
	long long nerr = f.requests - valid;
	int64_t ws = 0, we = 0;
	if (t0_wall && valid) {
		ws = t0_wall + f.first_start;
		we = t0_wall + f.last_end;
	}
	/* telemetry is the run's: in a class's summary too it would be the
	 * whole server's, so only the run's summary has it */
	json_t *tele = whole ? telesum_compute(s, run_id, ws, we, f.sum_osl) : json_object();
	out = json_pack("{s:I, s:i, s:f, s:{s:I, s:I, s:I, s:I}, s:o, s:o, s:o, s:o}", "run_id",
			(json_int_t)run_id, "metrics_version", METRICS_VERSION, "window_s",
			window_s, "counts", "requests", (json_int_t)f.requests, "valid",
			(json_int_t)valid, "errors", (json_int_t)nerr, "warmup",
			(json_int_t)f.warmup, "errors", errors, "load", load, "metrics", metrics,
			"telemetry", tele);
	if (out && !whole)
		json_object_del(out, "telemetry");
	if (out && has_slos(spec)) /* goodput: how many valid requests met every objective */
		json_object_set_new(json_object_get(out, "counts"), "good", json_integer(f.good));
	if (out)
		json_object_set_new(out, "tokens",
				    tokacc_json(&f.tok, &sm, spec->workload.discrepancy_pct));
	if (out && whole && f.media_requests) /* media endpoints only: others unchanged */
		json_object_set_new(out, "media", media_json(&f));
	if (valid_out)
		*valid_out = valid;
done:
	samples_release(&sm);
	spill_free(f.starts);
	spill_free(f.dones);
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
	/* traffic classes: each class's metrics as rows classes.NAME.TAG (names
	 * are letters, digits, '_', '-', '.': no quoting) */
	const char *cname;
	json_t *cs;
	json_object_foreach(json_object_get(summary, "classes"), cname, cs)
	{
		json_object_foreach(json_object_get(cs, "metrics"), tag, m)
		{
			const char *unit = json_string_value(json_object_get(m, "unit"));
			dynbuf_printf(&b, "classes.%s.%s,%s", cname, tag, unit ? unit : "");
			for (size_t i = 0; i < HR_ARRAY_LEN(cols); i++)
				csv_num(&b, json_object_get(m, cols[i]));
			dynbuf_addstr(&b, "\n");
		}
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
