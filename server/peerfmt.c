/* peerfmt.c - AIPerf and vLLM result files written from a run (see
 * peerfmt.h; the field lists and their sources are in docs/formats.md). */
#include "peerfmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "jsonesc.h"
#include "metrics.h"
#include "util.h"

void peer_totals_add(struct peer_totals *t, const struct hr_record *r)
{
	if (r->phase != HR_PHASE_PROFILING)
		return;
	t->requests++;
	if (!record_is_valid(r))
		return;
	t->valid++;
	if (r->isl > 0)
		t->sum_isl += r->isl;
	if (r->osl > 0)
		t->sum_osl += r->osl;
}

/* --- shared reading of the run ------------------------------------------------------ */

static const json_t *member(const json_t *o, const char *path)
{
	/* a dotted path of object members: "summary.counts.valid" */
	char key[64];
	while (o && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof key)
			return NULL;
		memcpy(key, path, n);
		key[n] = 0;
		o = json_object_get(o, key);
		path += n + (path[n] == '.');
	}
	return o;
}

static double num(const json_t *o, const char *path)
{
	const json_t *v = member(o, path);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(const json_t *o, const char *path)
{
	return json_string_value(member(o, path));
}

/* A finite number, or null. */
static json_t *jnum(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* A distribution of the summary with values (count > 0), or NULL. */
static const json_t *distribution(const json_t *run, const char *tag)
{
	const json_t *m = json_object_get(member(run, "summary.metrics"), tag);
	const json_t *c = json_object_get(m, "count");
	return json_is_integer(c) && json_integer_value(c) > 0 ? m : NULL;
}

/* Wall-clock ns as ISO 8601 UTC with microseconds, as Python's
 * datetime.isoformat() writes an aware time. */
static void iso_ns(char *buf, size_t len, int64_t ns)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;
	gmtime_r(&s, &tm);
	char day[40];
	strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06lld+00:00", day, (long long)(ns % 1000000000) / 1000);
}

/* The profiling window's wall-clock ends from the summary (telemetry
 * section), 0 when unknown. */
static int64_t window_ns(const json_t *run, int end)
{
	double v = num(run, end ? "summary.telemetry.window_end_ns"
				: "summary.telemetry.window_start_ns");
	return isfinite(v) ? (int64_t)v : 0;
}

/* --- AIPerf ----------------------------------------------------------------------------- */

/* AIPerf's statistic keys for a distribution, in JsonMetricResult's order. */
static const char *const aiperf_stats[] = {"avg", "p1",  "p5",  "p10", "p25", "p50",
					   "p75", "p90", "p95", "p99", "min", "max", "std"};

/* Run-level figures of the AIPerf file, in its tag names. */
struct aiperf_scalar {
	const char *tag, *unit, *header;
	double v;
};

static size_t aiperf_scalars(const json_t *run, const struct peer_totals *t,
			     struct aiperf_scalar *out)
{
	size_t n = 0;
	const json_t *m = member(run, "summary.metrics");
	static const struct {
		const char *tag, *header;
	} rates[] = {{"request_throughput", "Request Throughput"},
		     {"output_token_throughput", "Output Token Throughput"},
		     {"total_token_throughput", "Total Token Throughput"},
		     {"goodput", "Goodput"}};
	for (size_t i = 0; i < HR_ARRAY_LEN(rates); i++) {
		const json_t *r = json_object_get(m, rates[i].tag);
		double v = num(r, "avg");
		if (isfinite(v))
			out[n++] = (struct aiperf_scalar){rates[i].tag, str(r, "unit"),
							  rates[i].header, v};
	}
	double errors = num(run, "summary.counts.errors");
	out[n++] = (struct aiperf_scalar){"request_count", "requests", "Request Count",
					  (double)t->valid};
	out[n++] = (struct aiperf_scalar){"error_request_count", "requests", "Error Request Count",
					  isfinite(errors) ? errors : (double)(t->requests - t->valid)};
	double good = num(run, "summary.counts.good");
	if (isfinite(good))
		out[n++] = (struct aiperf_scalar){"good_request_count", "requests",
						  "Good Request Count", good};
	out[n++] = (struct aiperf_scalar){"benchmark_duration", "sec", "Benchmark Duration",
					  num(run, "summary.window_s")};
	out[n++] = (struct aiperf_scalar){"total_isl", "tokens", "Total Input Sequence Length",
					  (double)t->sum_isl};
	out[n++] = (struct aiperf_scalar){"total_osl", "tokens", "Total Output Sequence Length",
					  (double)t->sum_osl};
	return n;
}

/* The per-request distributions AIPerf's files carry: every metric of
 * lib/metrics.h, and the pooled inter-chunk latency. */
static size_t distributions(const json_t *run, const char **tags, const char **labels)
{
	size_t n = 0;
	for (size_t i = 0; i < metric_defs_count; i++)
		if (distribution(run, metric_defs[i].tag)) {
			tags[n] = metric_defs[i].tag;
			labels[n++] = metric_defs[i].label;
		}
	if (distribution(run, "inter_chunk_latency")) {
		tags[n] = "inter_chunk_latency";
		labels[n++] = "Inter Chunk Latency";
	}
	return n;
}

/* The run's credibility card (run.card, docs/card.md) as one flat object:
 * each item's text, or "unknown; " and how to fill it. NULL without one. */
static json_t *card_flat(const json_t *run)
{
	const json_t *items = member(run, "card.items");
	if (!json_is_array(items))
		return NULL;
	json_t *o = json_object();
	size_t i;
	const json_t *it;
	json_array_foreach(items, i, it) {
		const char *key = str(it, "key"), *text = str(it, "text"), *fill = str(it, "fill");
		if (!key)
			continue;
		if (json_is_true(json_object_get(it, "unknown"))) {
			char *u = xasprintf("unknown; %s", fill ? fill : "");
			json_object_set_new(o, key, json_string(u));
			free(u);
		} else {
			json_object_set_new(o, key, json_string(text ? text : ""));
		}
	}
	return o;
}

/* AIPerf's UserConfig, in the parts a headroom spec can fill. */
static json_t *aiperf_input_config(const json_t *run)
{
	const json_t *spec = json_object_get(run, "spec");
	const json_t *target = json_object_get(spec, "target"), *load = json_object_get(spec, "load");
	const char *model = str(target, "model"), *mode = str(load, "mode");
	json_t *ep = json_pack("{s:[s?], s:s?, s:O?, s:[s?]}", "model_names", model, "type",
			       str(target, "endpoint"), "streaming", json_object_get(target, "stream"),
			       "urls", str(target, "url"));
	json_t *lg = json_object();
	if (mode && strcmp(mode, "concurrency") == 0)
		json_object_set(lg, "concurrency", json_object_get(load, "concurrency"));
	if (json_object_get(load, "max_concurrency"))
		json_object_set(lg, "concurrency", json_object_get(load, "max_concurrency"));
	if (json_object_get(load, "rate"))
		json_object_set(lg, "request_rate", json_object_get(load, "rate"));
	if (json_object_get(load, "requests"))
		json_object_set(lg, "request_count", json_object_get(load, "requests"));
	if (json_object_get(load, "duration_s"))
		json_object_set(lg, "benchmark_duration", json_object_get(load, "duration_s"));
	const json_t *wu = member(spec, "warmup.requests");
	if (wu)
		json_object_set(lg, "warmup_request_count", (json_t *)wu);
	json_t *cfg = json_pack("{s:o, s:o}", "endpoint", ep, "loadgen", lg);
	json_t *card = card_flat(run);
	if (card) /* what AIPerf's config cannot say: the host, server, lengths sent */
		json_object_set_new(cfg, "headroom_card", card);
	return cfg;
}

json_t *peer_aiperf_json(const json_t *run, const struct peer_totals *t, const char *version)
{
	json_t *o = json_object();
	char id[48];
	snprintf(id, sizeof id, "headroom-run-%lld",
		 (long long)json_integer_value(json_object_get(run, "id")));
	json_object_set_new(o, "schema_version", json_string("1.0"));
	json_object_set_new(o, "producer", json_string("headroom"));
	json_object_set_new(o, "producer_version", json_string(version));
	json_object_set_new(o, "benchmark_id", json_string(id));
	const char *tags[64], *labels[64];
	size_t nd = distributions(run, tags, labels);
	for (size_t i = 0; i < nd; i++) {
		const json_t *m = distribution(run, tags[i]);
		json_t *d = json_pack("{s:O}", "unit", json_object_get(m, "unit"));
		for (size_t k = 0; k < HR_ARRAY_LEN(aiperf_stats); k++)
			json_object_set_new(d, aiperf_stats[k], jnum(num(m, aiperf_stats[k])));
		json_object_set_new(o, tags[i], d);
	}
	struct aiperf_scalar sc[16];
	size_t ns = aiperf_scalars(run, t, sc);
	for (size_t i = 0; i < ns; i++)
		json_object_set_new(o, sc[i].tag,
				    json_pack("{s:s, s:o}", "unit", sc[i].unit, "avg", jnum(sc[i].v)));
	json_object_set_new(o, "input_config", aiperf_input_config(run));
	const char *state = str(run, "state");
	json_object_set_new(o, "was_cancelled",
			    json_boolean(state && strcmp(state, "cancelled") == 0));
	json_t *es = json_array();
	const char *cat;
	json_t *cnt;
	json_object_foreach((json_t *)member(run, "summary.errors"), cat, cnt)
	{
		json_array_append_new(es, json_pack("{s:{s:n, s:s, s:s}, s:O}", "error_details",
						    "code", "type", cat, "message", cat, "count",
						    cnt));
	}
	json_object_set_new(o, "error_summary", es);
	char buf[64];
	int64_t ws = window_ns(run, 0), we = window_ns(run, 1);
	if (ws) {
		iso_ns(buf, sizeof buf, ws);
		json_object_set_new(o, "start_time", json_string(buf));
	}
	if (we) {
		iso_ns(buf, sizeof buf, we);
		json_object_set_new(o, "end_time", json_string(buf));
	}
	return o;
}

/* A number as AIPerf's CSV writes it: an integer as itself, a real with
 * two decimals, nothing when absent. */
static void csv_num(struct dynbuf *out, const json_t *v)
{
	if (json_is_integer(v))
		dynbuf_printf(out, ",%lld", (long long)json_integer_value(v));
	else if (json_is_real(v) && isfinite(json_real_value(v)))
		dynbuf_printf(out, ",%.2f", json_real_value(v));
	else
		dynbuf_addstr(out, ",");
}

static void csv_name(struct dynbuf *out, const char *header, const char *unit)
{
	char name[128];
	if (unit && strcasecmp(unit, "count") != 0 && strcasecmp(unit, "requests") != 0)
		snprintf(name, sizeof name, "%s (%s)", header, unit);
	else
		snprintf(name, sizeof name, "%s", header);
	/* a unit such as tokens/sec/user has no comma: no quoting needed */
	dynbuf_addstr(out, name);
}

static int by_tag(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int by_scalar_tag(const void *a, const void *b)
{
	return strcmp(((const struct aiperf_scalar *)a)->tag, ((const struct aiperf_scalar *)b)->tag);
}

void peer_aiperf_csv(struct dynbuf *out, const json_t *run, const struct peer_totals *t)
{
	/* AIPerf's STAT_KEYS, the column order of its request section */
	static const char *const cols[] = {"avg", "min", "max", "sum", "p1",  "p5",  "p10",
					   "p25", "p50", "p75", "p90", "p95", "p99", "std"};
	const char *tags[64], *labels[64];
	size_t nd = distributions(run, tags, labels);
	/* AIPerf sorts the rows by tag; the label travels with its tag */
	const char *pairs[64][2];
	for (size_t i = 0; i < nd; i++) {
		pairs[i][0] = tags[i];
		pairs[i][1] = labels[i];
	}
	qsort(pairs, nd, sizeof pairs[0], by_tag);
	if (nd) {
		dynbuf_addstr(out, "Metric");
		for (size_t k = 0; k < HR_ARRAY_LEN(cols); k++)
			dynbuf_printf(out, ",%s", cols[k]);
		dynbuf_addstr(out, "\n");
	}
	for (size_t i = 0; i < nd; i++) {
		const json_t *m = distribution(run, pairs[i][0]);
		csv_name(out, pairs[i][1], str(m, "unit"));
		for (size_t k = 0; k < HR_ARRAY_LEN(cols); k++)
			csv_num(out, json_object_get(m, cols[k])); /* "sum": none kept */
		dynbuf_addstr(out, "\n");
	}
	struct aiperf_scalar sc[16];
	size_t ns = aiperf_scalars(run, t, sc);
	qsort(sc, ns, sizeof sc[0], by_scalar_tag);
	if (nd)
		dynbuf_addstr(out, "\n");
	dynbuf_addstr(out, "Metric,Value\n");
	for (size_t i = 0; i < ns; i++) {
		csv_name(out, sc[i].header, sc[i].unit);
		int whole = strcmp(sc[i].unit, "requests") == 0 || strcmp(sc[i].unit, "tokens") == 0;
		if (!isfinite(sc[i].v))
			dynbuf_addstr(out, ",\n");
		else if (whole)
			dynbuf_printf(out, ",%lld\n", (long long)sc[i].v);
		else
			dynbuf_printf(out, ",%.2f\n", sc[i].v);
	}
}

/* --- profile_export.jsonl --------------------------------------------------------------- */

static void add_num(struct dynbuf *out, double v)
{
	char b[32];
	if (isfinite(v)) {
		fmt_double(b, v);
		dynbuf_addstr(out, b);
	} else {
		dynbuf_addstr(out, "null");
	}
}

static void add_time(struct dynbuf *out, int64_t t0, int64_t t)
{
	if (t == HR_NO_TIME)
		dynbuf_addstr(out, "null");
	else
		dynbuf_printf(out, "%lld", (long long)(t0 + t));
}

static void add_str(struct dynbuf *out, const char *s)
{
	dynbuf_addstr(out, "\"");
	json_escape_append(out, s, strlen(s));
	dynbuf_addstr(out, "\"");
}

struct gaps {
	struct dynbuf *out;
	int n;
};

static void push_gap(void *ctx, double v)
{
	struct gaps *g = ctx;
	if (g->n++)
		dynbuf_addstr(g->out, ",");
	add_num(g->out, v);
}

int peer_aiperf_record(struct dynbuf *out, const struct hr_record *r, int64_t t0)
{
	if (r->phase != HR_PHASE_PROFILING)
		return 0;
	size_t mark = out->len;
	int valid = record_is_valid(r), cancelled = r->error == HR_ERR_CANCELLED;
	dynbuf_printf(out,
		      "{\"metadata\":{\"session_num\":%llu,\"x_request_id\":\"w%u-%llu\","
		      "\"x_correlation_id\":\"%c%llu\",\"conversation_id\":null,"
		      "\"turn_index\":%u,\"request_start_ns\":",
		      r->session ? (unsigned long long)r->session : (unsigned long long)r->req_id,
		      r->worker, (unsigned long long)r->seq, r->session ? 's' : 'r',
		      r->session ? (unsigned long long)r->session : (unsigned long long)r->req_id,
		      r->turn);
	add_time(out, t0, r->start_ns);
	dynbuf_addstr(out, ",\"request_ack_ns\":");
	add_time(out, t0, r->headers_ns);
	dynbuf_addstr(out, ",\"request_end_ns\":");
	add_time(out, t0, r->end_ns != HR_NO_TIME ? r->end_ns : r->done_ns);
	dynbuf_printf(out,
		      ",\"worker_id\":\"worker_%u\",\"record_processor_id\":null,"
		      "\"benchmark_phase\":\"profiling\",\"was_cancelled\":%s,"
		      "\"cancellation_time_ns\":",
		      r->worker, cancelled ? "true" : "false");
	if (cancelled)
		add_time(out, t0, r->done_ns);
	else
		dynbuf_addstr(out, "null");
	dynbuf_addstr(out, "},\"metrics\":{");
	int n = 0;
	if (valid) {
		for (size_t i = 0; i < metric_defs_count; i++) {
			double v = metric_defs[i].fn(r);
			if (!isfinite(v))
				continue;
			dynbuf_printf(out, "%s\"%s\":{\"value\":", n++ ? "," : "", metric_defs[i].tag);
			add_num(out, v);
			dynbuf_printf(out, ",\"unit\":\"%s\"}", metric_defs[i].unit);
		}
		if ((r->flags & HR_REC_STREAMED) && r->n_chunks >= 2) {
			dynbuf_printf(out, "%s\"inter_chunk_latency\":{\"value\":[", n++ ? "," : "");
			struct gaps g = {out, 0};
			metrics_chunk_gaps(r, push_gap, &g);
			dynbuf_addstr(out, "],\"unit\":\"ms\"}");
		}
	} else if (r->isl >= 0) {
		dynbuf_printf(out, "\"error_isl\":{\"value\":%d,\"unit\":\"tokens\"}", r->isl);
	}
	dynbuf_addstr(out, "},\"error\":");
	if (valid) {
		dynbuf_addstr(out, "null");
	} else {
		dynbuf_addstr(out, "{\"code\":");
		if (r->http_status > 0)
			dynbuf_printf(out, "%d", r->http_status);
		else
			dynbuf_addstr(out, "null");
		dynbuf_addstr(out, ",\"type\":");
		add_str(out, r->error != HR_ERR_NONE ? hr_err_name(r->error) : "no_content");
		dynbuf_addstr(out, ",\"message\":");
		add_str(out, r->error_msg ? r->error_msg : "");
		dynbuf_addstr(out, "}");
	}
	if (dynbuf_addstr(out, "}\n") < 0) {
		out->len = mark; /* a line that did not fit is not half written */
		return -1;
	}
	return 0;
}

/* --- vLLM ------------------------------------------------------------------------------- */

/* vLLM writes np.mean(x or 0): a metric without values is 0. */
static double or0(double v)
{
	return isfinite(v) ? v : 0.0;
}

void peer_vllm_head(struct dynbuf *out, const json_t *run, const struct peer_totals *t)
{
	const json_t *spec = json_object_get(run, "spec");
	const json_t *target = json_object_get(spec, "target"), *load = json_object_get(spec, "load");
	const char *ep = str(target, "endpoint"), *mode = str(load, "mode");
	const char *arrival = str(load, "arrival");
	json_t *o = json_object();
	/* date: the run's start, as benchmark_serving.py's "%Y%m%d-%H%M%S" */
	char date[32] = "";
	int64_t ws = window_ns(run, 0);
	if (ws) {
		time_t s = (time_t)(ws / 1000000000);
		struct tm tm;
		gmtime_r(&s, &tm);
		strftime(date, sizeof date, "%Y%m%d-%H%M%S", &tm);
	}
	json_object_set_new(o, "date", date[0] ? json_string(date) : json_null());
	json_object_set_new(o, "backend", json_string(ep && strcmp(ep, "chat") == 0 ? "openai-chat"
						      : ep && strcmp(ep, "completions") == 0
							  ? "openai"
							  : ep ? ep : "openai"));
	const char *model = str(target, "model");
	json_object_set_new(o, "model_id", model ? json_string(model) : json_null());
	const char *tok = str(spec, "workload.tokenizer");
	json_object_set_new(o, "tokenizer_id", tok ? json_string(tok) : model ? json_string(model)
										: json_null());
	json_object_set_new(o, "best_of", json_integer(1));
	json_object_set_new(o, "num_prompts", json_integer(t->requests));
	if (mode && strcmp(mode, "rate") == 0 && json_is_number(json_object_get(load, "rate")))
		json_object_set(o, "request_rate", json_object_get(load, "rate"));
	else
		json_object_set_new(o, "request_rate", json_string("inf"));
	/* vLLM's burstiness is the gamma shape of its arrivals: 1 is Poisson,
	 * and its default, written without a rate too; it has no constant
	 * arrivals */
	if (arrival && strcmp(arrival, "gamma") == 0)
		json_object_set_new(o, "burstiness", jnum(num(load, "smoothness")));
	else if (arrival && strcmp(arrival, "constant") == 0)
		json_object_set_new(o, "burstiness", json_null());
	else
		json_object_set_new(o, "burstiness", json_real(1.0));
	const json_t *mc = json_object_get(load, "max_concurrency");
	if (!mc && mode && strcmp(mode, "concurrency") == 0)
		mc = json_object_get(load, "concurrency");
	json_object_set_new(o, "max_concurrency", mc ? json_deep_copy(mc) : json_null());
	json_object_set_new(o, "duration", jnum(num(run, "summary.window_s")));
	json_object_set_new(o, "completed", json_integer(t->valid));
	json_object_set_new(o, "total_input_tokens", json_integer(t->sum_isl));
	json_object_set_new(o, "total_output_tokens", json_integer(t->sum_osl));
	const json_t *m = member(run, "summary.metrics");
	json_object_set_new(o, "request_throughput",
			    json_real(or0(num(m, "request_throughput.avg"))));
	double good = num(m, "goodput.avg");
	json_object_set_new(o, "request_goodput:", jnum(good)); /* sic: vLLM's key */
	json_object_set_new(o, "output_throughput",
			    json_real(or0(num(m, "output_token_throughput.avg"))));
	json_object_set_new(o, "total_token_throughput",
			    json_real(or0(num(m, "total_token_throughput.avg"))));
	/* vLLM's names: TPOT is headroom's (and AIPerf's) inter-token latency,
	 * its ITL every gap between chunks (inter_chunk_latency) */
	static const char *const vmap[][2] = {{"ttft", "time_to_first_token"},
					      {"tpot", "inter_token_latency"},
					      {"itl", "inter_chunk_latency"},
					      {"e2el", "request_latency"}};
	static const char *const pcts[] = {"p1",  "p5",  "p10", "p25", "p50",
					   "p75", "p90", "p95", "p99"};
	for (size_t i = 0; i < HR_ARRAY_LEN(vmap); i++) {
		const json_t *d = json_object_get(m, vmap[i][1]);
		char key[48];
		snprintf(key, sizeof key, "mean_%s_ms", vmap[i][0]);
		json_object_set_new(o, key, json_real(or0(num(d, "avg"))));
		snprintf(key, sizeof key, "median_%s_ms", vmap[i][0]);
		json_object_set_new(o, key, json_real(or0(num(d, "p50"))));
		snprintf(key, sizeof key, "std_%s_ms", vmap[i][0]);
		json_object_set_new(o, key, json_real(or0(num(d, "std"))));
		for (size_t k = 0; k < HR_ARRAY_LEN(pcts); k++) {
			snprintf(key, sizeof key, "%s_%s_ms", pcts[k], vmap[i][0]);
			json_object_set_new(o, key, json_real(or0(num(d, pcts[k]))));
		}
	}
	json_t *card = card_flat(run);
	if (card) /* beside the fields, as vLLM's --metadata keys are */
		json_object_set_new(o, "headroom_card", card);
	char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(o);
	size_t n = s ? strlen(s) : 0;
	if (n >= 2) /* without its closing brace */
		dynbuf_add(out, s, n - 1);
	else
		dynbuf_addstr(out, "{");
	free(s);
}

void peer_vllm_arrays_init(struct peer_vllm_arrays *a, size_t bound)
{
	memset(a, 0, sizeof *a);
	a->bound = bound;
	dynbuf_init(&a->input_lens, bound);
	dynbuf_init(&a->output_lens, bound);
	dynbuf_init(&a->ttfts, bound);
	dynbuf_init(&a->itls, bound);
	dynbuf_init(&a->errors, bound);
	dynbuf_init(&a->texts, bound);
}

void peer_vllm_arrays_release(struct peer_vllm_arrays *a)
{
	dynbuf_release(&a->input_lens);
	dynbuf_release(&a->output_lens);
	dynbuf_release(&a->ttfts);
	dynbuf_release(&a->itls);
	dynbuf_release(&a->errors);
	dynbuf_release(&a->texts);
}

int peer_vllm_arrays_add(struct peer_vllm_arrays *a, const struct hr_record *r)
{
	if (r->phase != HR_PHASE_PROFILING)
		return 0;
	const char *sep = a->n++ ? "," : "";
	int valid = record_is_valid(r), streamed = (r->flags & HR_REC_STREAMED) != 0;
	int rc = 0;
	if (r->isl >= 0)
		rc |= dynbuf_printf(&a->input_lens, "%s%d", sep, r->isl);
	else
		rc |= dynbuf_printf(&a->input_lens, "%snull", sep);
	/* vLLM: a failed request's output length is 0 */
	if (!valid)
		rc |= dynbuf_printf(&a->output_lens, "%s0", sep);
	else if (r->osl >= 0)
		rc |= dynbuf_printf(&a->output_lens, "%s%d", sep, r->osl);
	else
		rc |= dynbuf_printf(&a->output_lens, "%snull", sep);
	/* seconds, as vLLM keeps them: exactly ns / 1e9; 0.0 without a first token */
	char b[32];
	rc |= dynbuf_addstr(&a->ttfts, sep);
	if (valid && streamed && r->n_chunks >= 1) {
		fmt_double(b, (double)(r->chunk_ns[0] - r->start_ns) / 1e9);
		rc |= dynbuf_addstr(&a->ttfts, b);
	} else {
		rc |= dynbuf_addstr(&a->ttfts, "0.0");
	}
	rc |= dynbuf_printf(&a->itls, "%s[", sep);
	if (valid && streamed)
		for (uint32_t i = 1; i < r->n_chunks; i++) {
			fmt_double(b, (double)(r->chunk_ns[i] - r->chunk_ns[i - 1]) / 1e9);
			rc |= dynbuf_printf(&a->itls, "%s%s", i > 1 ? "," : "", b);
		}
	rc |= dynbuf_addstr(&a->itls, "]");
	rc |= dynbuf_printf(&a->errors, "%s\"", sep);
	if (!valid) {
		const char *cat = r->error != HR_ERR_NONE ? hr_err_name(r->error) : "no_content";
		rc |= json_escape_append(&a->errors, cat, strlen(cat));
		if (r->error_msg && *r->error_msg) {
			rc |= dynbuf_addstr(&a->errors, ": ");
			rc |= json_escape_append(&a->errors, r->error_msg, strlen(r->error_msg));
		}
	}
	rc |= dynbuf_addstr(&a->errors, "\"");
	/* headroom keeps no generated text */
	rc |= dynbuf_printf(&a->texts, "%s\"\"", sep);
	size_t total = a->input_lens.len + a->output_lens.len + a->ttfts.len + a->itls.len +
		       a->errors.len + a->texts.len;
	return rc || total > a->bound ? -1 : 0;
}

int peer_vllm_arrays_finish(struct peer_vllm_arrays *a, struct dynbuf *out)
{
	static const char *const names[] = {"input_lens", "output_lens", "ttfts",
					    "itls",       "generated_texts", "errors"};
	struct dynbuf *bufs[] = {&a->input_lens, &a->output_lens, &a->ttfts,
				 &a->itls,       &a->texts,       &a->errors};
	int rc = 0;
	for (size_t i = 0; i < HR_ARRAY_LEN(names); i++) {
		rc |= dynbuf_printf(out, ",\"%s\":[", names[i]);
		rc |= dynbuf_add(out, bufs[i]->data ? bufs[i]->data : "", bufs[i]->len);
		rc |= dynbuf_addstr(out, "]");
	}
	return rc ? -1 : 0;
}
