/* import.c - vLLM and AIPerf result files and GuideLLM reports (JSON or
 * YAML, one result per benchmark) read into a spec, records and a
 * summary (see import.h; the mappings are docs/formats.md, "Imports"). */
#include "import.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hrlimits.h"
#include "metrics.h"
#include "util.h"
#include "yaml2json.h"

static int fail(struct import_error *e, const char *code, const char *field, long line,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail(struct import_error *e, const char *code, const char *field, long line,
		const char *fmt, ...)
{
	snprintf(e->code, sizeof e->code, "%s", code);
	snprintf(e->field, sizeof e->field, "%s", field);
	e->line = line;
	size_t off = 0;
	if (line > 0) /* the message names the line too */
		off = (size_t)snprintf(e->message, sizeof e->message, "line %ld: ", line);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message + off, sizeof e->message - off, fmt, ap);
	va_end(ap);
	return -1;
}

/* Nesting deeper than HR_MAX_IMPORT_DEPTH is refused before the parser
 * sees it (a scan outside strings). */
static int depth_ok(const char *s, size_t len)
{
	int depth = 0, in_str = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
		} else if (c == '"') {
			in_str = 1;
		} else if (c == '[' || c == '{') {
			if (++depth > HR_MAX_IMPORT_DEPTH)
				return 0;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return 1;
}

static json_t *load_doc(const char *text, size_t len, const char *field, long line,
			struct import_error *e)
{
	if (!depth_ok(text, len)) {
		fail(e, "too_deep", field, line, "'%s' nests arrays and objects deeper than %d levels",
		     field, HR_MAX_IMPORT_DEPTH);
		return NULL;
	}
	json_error_t je;
	/* a member given twice counts once, the last, as Python's json reads
	 * it (the tools' own readers) */
	json_t *doc = json_loadb(text, len, 0, &je);
	if (!doc) {
		if (line > 0)
			fail(e, "invalid_json", field, line, "not JSON: %s (column %d)", je.text,
			     je.column);
		else
			fail(e, "invalid_json", field, 0, "'%s' is not JSON: %s (line %d, column %d)",
			     field, je.text, je.line, je.column);
		return NULL;
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		fail(e, "wrong_type", field, line, "'%s' must be a JSON object", field);
		return NULL;
	}
	return doc;
}

/* The value of an unmapped member as kept: itself, or a note when its JSON
 * passes HR_MAX_IMPORT_UNMAPPED (the original file keeps it whole). */
static void keep_unmapped(json_t *unmapped, const char *key, json_t *v)
{
	char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	size_t n = t ? strlen(t) : 0;
	free(t);
	if (n > HR_MAX_IMPORT_UNMAPPED)
		json_object_set_new(unmapped, key,
				    json_pack("{s:s, s:I}", "omitted",
					      "too large to keep here: it is in the original file",
					      "bytes", (json_int_t)n));
	else
		json_object_set(unmapped, key, v);
}

static double clampd(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* A number member (NAN when absent or null); -1 with err when another type. */
static int opt_num(json_t *o, const char *key, const char *prefix, double *out,
		   struct import_error *e)
{
	json_t *v = json_object_get(o, key);
	*out = NAN;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v)) {
		char f[200];
		snprintf(f, sizeof f, "%s%s", prefix, key);
		return fail(e, "wrong_type", f, 0, "'%s' must be a number", f);
	}
	*out = json_number_value(v);
	return 0;
}

/* Times of an imported file, in ns, stay below this (about 126 years:
 * epoch times and every sum of them fit an int64 with room to spare). */
#define IMPORT_MAX_NS 4000000000000000000LL

/* Seconds (or ms) as nanoseconds, checked (at most ~11.6 days: a single
 * request's time). */
static int to_ns(double v, double scale, int64_t *out)
{
	double ns = v * scale;
	if (!isfinite(ns) || ns < 0 || ns > 1e15)
		return -1;
	*out = (int64_t)llround(ns);
	return 0;
}

/* --- start times where the file has none ------------------------------------------------ */

/* vLLM keeps no start times: lay the requests out as its client sent them,
 * in the file's order, at most conc in flight (0: no bound), one every
 * 1/rate seconds when a rate was set. Each record holds its times relative
 * to a start of 0; they are shifted here. */
static int layout(struct hr_record *recs, size_t n, long long conc, double rate)
{
	size_t slots = conc > 0 && (size_t)conc < n ? (size_t)conc : n;
	if (slots == 0)
		return 0;
	int64_t *heap = xcalloc(slots, sizeof *heap); /* min-heap of slot free times */
	for (size_t i = 0; i < n; i++) {
		struct hr_record *r = &recs[i];
		double at = rate > 0 ? (double)i / rate * 1e9 : 0;
		int64_t dur = r->done_ns - r->start_ns;
		if (!(at < (double)IMPORT_MAX_NS) || heap[0] > IMPORT_MAX_NS - dur) {
			free(heap);
			return -1; /* the requests one after another pass IMPORT_MAX_NS */
		}
		int64_t arrival = (int64_t)llround(at);
		int64_t start = heap[0] > arrival ? heap[0] : arrival;
		if (start > IMPORT_MAX_NS - dur) {
			free(heap);
			return -1;
		}
		int64_t *t[] = {&r->start_ns, &r->first_output_ns, &r->end_ns, &r->done_ns};
		for (size_t k = 0; k < HR_ARRAY_LEN(t); k++)
			if (*t[k] != HR_NO_TIME)
				*t[k] += start;
		for (uint32_t k = 0; k < r->n_chunks; k++)
			r->chunk_ns[k] += start;
		/* the slot is free again at this request's end: sift down */
		heap[0] = start + dur;
		size_t j = 0;
		for (;;) {
			size_t l = 2 * j + 1, m = j;
			if (l < slots && heap[l] < heap[m])
				m = l;
			if (l + 1 < slots && heap[l + 1] < heap[m])
				m = l + 1;
			if (m == j)
				break;
			int64_t x = heap[j];
			heap[j] = heap[m];
			heap[m] = x;
			j = m;
		}
	}
	free(heap);
	return 0;
}

static void record_blank(struct hr_record *r, size_t i)
{
	record_init(r);
	r->seq = i;
	r->req_id = i;
	r->phase = HR_PHASE_PROFILING;
	r->intended_ns = r->headers_ns = HR_NO_TIME;
	r->isl = r->osl = r->reasoning_tokens = -1;
	r->req_osl = r->usage_isl = r->usage_osl = r->tok_isl = r->tok_osl = -1;
}

static void free_recs(struct hr_record *recs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		record_release(&recs[i]);
	free(recs);
}

/* The error category of a message "category: text" (headroom's own
 * export writes that), else fallback; *msg past the category. */
static int err_category(const char *s, int fallback, const char **msg)
{
	*msg = s;
	const char *colon = strstr(s, ": ");
	if (colon && colon - s < 32) {
		char name[32];
		memcpy(name, s, (size_t)(colon - s));
		name[colon - s] = 0;
		int e = hr_err_from_name(name);
		if (e > 0) {
			*msg = colon + 2;
			return e;
		}
	}
	return fallback;
}

static char *short_msg(const char *s)
{
	size_t n = strlen(s);
	if (n > HR_MAX_ERROR_MSG)
		n = HR_MAX_ERROR_MSG;
	return utf8_sanitize(xstrndup(s, n));
}

/* The statistics a summary keeps of a distribution (AIPerf's too). */
static const char *const aiperf_stats[] = {"avg", "min", "max", "std", "p1",  "p5",
					   "p10", "p25", "p50", "p75", "p90", "p95", "p99"};

/* --- vLLM ------------------------------------------------------------------------------- */

static const char *const vllm_metrics[][2] = {
	{"ttft", "time_to_first_token"},
	{"tpot", "inter_token_latency"},
	{"itl", "inter_chunk_latency"},
	{"e2el", "request_latency"},
};

/* "mean_ttft_ms" -> metric index and the statistic ("avg", "p50", "std",
 * "p99"...; "median" is p50); -1 when not one of vLLM's figures. */
static int vllm_stat_key(const char *key, char *stat, size_t n)
{
	size_t len = strlen(key);
	if (len < 4 || strcmp(key + len - 3, "_ms") != 0)
		return -1;
	for (int m = 0; m < (int)HR_ARRAY_LEN(vllm_metrics); m++) {
		char suffix[16];
		snprintf(suffix, sizeof suffix, "_%s_ms", vllm_metrics[m][0]);
		size_t sl = strlen(suffix);
		if (len <= sl || strcmp(key + len - sl, suffix) != 0)
			continue;
		size_t pl = len - sl;
		char pre[16];
		if (pl >= sizeof pre)
			return -1;
		memcpy(pre, key, pl);
		pre[pl] = 0;
		if (strcmp(pre, "mean") == 0)
			snprintf(stat, n, "avg");
		else if (strcmp(pre, "median") == 0)
			snprintf(stat, n, "p50");
		else if (strcmp(pre, "std") == 0)
			snprintf(stat, n, "std");
		else if (pre[0] == 'p' && pre[1] && strspn(pre + 1, "0123456789.") == pl - 1)
			snprintf(stat, n, "%s", pre);
		else
			return -1;
		return m;
	}
	return -1;
}

static const char *const vllm_mapped[] = {
	"date", "backend", "model_id", "num_prompts", "request_rate", "burstiness",
	"max_concurrency", "duration", "completed", "total_input_tokens", "total_output_tokens",
	"request_throughput", "output_throughput", "total_token_throughput", "request_goodput:",
	"input_lens", "output_lens", "ttfts", "itls", "errors"};

static int is_vllm_mapped(const char *key)
{
	char stat[16];
	for (size_t i = 0; i < HR_ARRAY_LEN(vllm_mapped); i++)
		if (strcmp(key, vllm_mapped[i]) == 0)
			return 1;
	return vllm_stat_key(key, stat, sizeof stat) >= 0;
}

/* The per-request arrays into records (start 0: layout places them). */
static int vllm_records(json_t *doc, struct import_result *out, struct import_error *e)
{
	static const char *const names[] = {"ttfts", "itls", "input_lens", "output_lens", "errors"};
	json_t *a[5];
	size_t n = 0;
	int have = 0;
	for (int k = 0; k < 5; k++) {
		a[k] = json_object_get(doc, names[k]);
		if (a[k] && !json_is_array(a[k])) {
			char f[64];
			snprintf(f, sizeof f, "file.%s", names[k]);
			return fail(e, "wrong_type", f, 0, "'%s' must be an array", f);
		}
		if (a[k])
			have++;
	}
	if (!have)
		return 0;
	for (int k = 0; k < 5; k++) {
		char f[64];
		snprintf(f, sizeof f, "file.%s", names[k]);
		if (!a[k] && k != 4) /* errors may be left out: then none failed */
			return fail(e, "missing_field", f, 0,
				    "'%s' is missing: vLLM's per-request arrays come together "
				    "(ttfts, itls, input_lens, output_lens)",
				    f);
		if (!a[k])
			continue;
		size_t len = json_array_size(a[k]);
		if (len > HR_MAX_IMPORT_RECORDS)
			return fail(e, "too_large", f, 0, "'%s' has %zu entries: at most %d requests",
				    f, len, HR_MAX_IMPORT_RECORDS);
		if (k == 0)
			n = len;
		else if (len != n)
			return fail(e, "invalid_value", f, 0,
				    "'%s' has %zu entries but 'file.ttfts' has %zu: one per request",
				    f, len, n);
	}
	struct hr_record *recs = xcalloc(n ? n : 1, sizeof *recs);
	for (size_t i = 0; i < n; i++) {
		struct hr_record *r = &recs[i];
		record_blank(r, i);
		char f[96];
		json_t *ev = a[4] ? json_array_get(a[4], i) : NULL;
		if (ev && !json_is_string(ev) && !json_is_null(ev)) {
			snprintf(f, sizeof f, "file.errors[%zu]", i);
			free_recs(recs, i + 1);
			return fail(e, "wrong_type", f, 0, "'%s' must be a string", f);
		}
		const char *emsg = ev && json_is_string(ev) ? json_string_value(ev) : "";
		json_t *il = json_array_get(a[2], i), *ol = json_array_get(a[3], i);
		if (!json_is_null(il)) {
			if (!json_is_integer(il) || json_integer_value(il) < 0 ||
			    json_integer_value(il) > HR_MAX_ISL * 100LL) {
				snprintf(f, sizeof f, "file.input_lens[%zu]", i);
				free_recs(recs, i + 1);
				return fail(e, "wrong_type", f, 0,
					    "'%s' must be an integer from 0 to %d (or null)", f,
					    HR_MAX_ISL * 100);
			}
			r->isl = (int32_t)json_integer_value(il);
		}
		r->start_ns = 0;
		if (emsg[0]) { /* a failed request: vLLM keeps only its message */
			const char *m;
			r->error = (uint8_t)err_category(emsg, HR_ERR_TRANSPORT, &m);
			r->error_msg = short_msg(m);
			r->http_status = 0;
			r->end_ns = r->done_ns = 0;
			continue;
		}
		if (!json_is_integer(ol) || json_integer_value(ol) < 0 ||
		    json_integer_value(ol) > HR_MAX_OSL * 100LL) {
			snprintf(f, sizeof f, "file.output_lens[%zu]", i);
			free_recs(recs, i + 1);
			return fail(e, "wrong_type", f, 0, "'%s' must be an integer from 0 to %d", f,
				    HR_MAX_OSL * 100);
		}
		r->osl = (int32_t)json_integer_value(ol);
		json_t *tv = json_array_get(a[0], i), *gaps = json_array_get(a[1], i);
		int64_t t;
		if (!json_is_number(tv) || to_ns(json_number_value(tv), 1e9, &t) < 0) {
			snprintf(f, sizeof f, "file.ttfts[%zu]", i);
			free_recs(recs, i + 1);
			return fail(e, "wrong_type", f, 0,
				    "'%s' must be a number of seconds, 0 or more", f);
		}
		if (!json_is_array(gaps) || json_array_size(gaps) >= HR_MAX_CHUNKS_PER_REQUEST) {
			snprintf(f, sizeof f, "file.itls[%zu]", i);
			free_recs(recs, i + 1);
			return fail(e, "wrong_type", f, 0,
				    "'%s' must be an array of fewer than %u numbers", f,
				    HR_MAX_CHUNKS_PER_REQUEST);
		}
		r->http_status = 200;
		r->flags = HR_REC_STREAMED;
		uint32_t cap = 0;
		int64_t at = t;
		record_add_chunk(r, at, &cap);
		size_t g;
		json_t *gv;
		json_array_foreach(gaps, g, gv)
		{
			int64_t d;
			if (!json_is_number(gv) || to_ns(json_number_value(gv), 1e9, &d) < 0 ||
			    at > IMPORT_MAX_NS - d) {
				snprintf(f, sizeof f, "file.itls[%zu][%zu]", i, g);
				free_recs(recs, i + 1);
				return fail(e, "wrong_type", f, 0,
					    "'%s' must be a number of seconds, 0 or more", f);
			}
			at += d;
			record_add_chunk(r, at, &cap);
		}
		r->first_output_ns = r->chunk_ns[0];
		r->end_ns = r->done_ns = at;
	}
	out->recs = recs;
	out->n = n;
	return 0;
}

static json_t *vllm_spec(json_t *doc, const struct import_result *res)
{
	const char *model = json_string_value(json_object_get(doc, "model_id"));
	const char *backend = json_string_value(json_object_get(doc, "backend"));
	const char *ep = backend && strcmp(backend, "openai") == 0 ? "completions" : "chat";
	json_t *target = json_pack("{s:s, s:s, s:s}", "url", "http://imported.invalid", "model",
				   model && model[0] && strlen(model) <= HR_MAX_NAME_LEN ? model
											: "unknown",
				   "endpoint", ep);
	json_t *load = json_object();
	json_t *rate = json_object_get(doc, "request_rate");
	json_t *mc = json_object_get(doc, "max_concurrency");
	json_t *np = json_object_get(doc, "num_prompts");
	long long conc = json_is_integer(mc) ? json_integer_value(mc) : 0;
	if (json_is_number(rate) && json_number_value(rate) > 0 && isfinite(json_number_value(rate))) {
		json_object_set_new(load, "mode", json_string("rate"));
		json_object_set_new(load, "rate", json_real(clampd(json_number_value(rate), 1e-6,
								   HR_MAX_RATE)));
		json_t *b = json_object_get(doc, "burstiness");
		if (json_is_number(b) && json_number_value(b) != 1.0) {
			json_object_set_new(load, "arrival", json_string("gamma"));
			json_object_set_new(load, "smoothness",
					    json_real(clampd(json_number_value(b), HR_MIN_SMOOTHNESS,
							     HR_MAX_SMOOTHNESS)));
		} else {
			json_object_set_new(load, "arrival", json_string("poisson"));
		}
		if (conc > 0)
			json_object_set_new(load, "max_concurrency",
					    json_integer(conc > HR_MAX_CONCURRENCY ? HR_MAX_CONCURRENCY
										   : conc));
	} else {
		long long c = conc > 0 ? conc : json_is_integer(np) ? json_integer_value(np) : 1;
		c = c < 1 ? 1 : c > HR_MAX_CONCURRENCY ? HR_MAX_CONCURRENCY : c;
		json_object_set_new(load, "mode", json_string("concurrency"));
		json_object_set_new(load, "concurrency", json_integer(c));
	}
	if (json_is_integer(np) && json_integer_value(np) >= 1)
		json_object_set_new(load, "requests",
				    json_integer(json_integer_value(np) > HR_MAX_REQUESTS
							 ? HR_MAX_REQUESTS
							 : json_integer_value(np)));
	/* the mean lengths the file shows */
	long long valid = 0, si = 0, so = 0;
	for (size_t i = 0; i < res->n; i++)
		if (res->recs[i].error == HR_ERR_NONE) {
			valid++;
			si += res->recs[i].isl > 0 ? res->recs[i].isl : 0;
			so += res->recs[i].osl > 0 ? res->recs[i].osl : 0;
		}
	if (!res->n) {
		json_t *c = json_object_get(doc, "completed");
		json_t *ti = json_object_get(doc, "total_input_tokens");
		json_t *to = json_object_get(doc, "total_output_tokens");
		valid = json_is_integer(c) ? json_integer_value(c) : 0;
		si = json_is_integer(ti) ? json_integer_value(ti) : 0;
		so = json_is_integer(to) ? json_integer_value(to) : 0;
	}
	json_t *workload = json_object();
	if (valid > 0 && si >= 0 && so >= 0) {
		json_object_set_new(workload, "isl",
				    json_pack("{s:I}", "mean",
					      (json_int_t)clampd(llround((double)si / (double)valid),
								 0, HR_MAX_ISL)));
		json_object_set_new(workload, "osl",
				    json_pack("{s:I}", "mean",
					      (json_int_t)clampd(llround((double)so / (double)valid),
								 0, HR_MAX_OSL)));
	}
	return json_pack("{s:o, s:o, s:o, s:i, s:{s:b, s:b}}", "target", target, "load", load,
			 "workload", workload, "workers", 1, "telemetry", "nvml", 0,
			 "server_metrics", 0);
}

/* A summary from vLLM's own figures (no per-request arrays). */
static json_t *vllm_summary(json_t *doc, json_t *figures)
{
	json_t *metrics = json_object();
	const char *key;
	json_t *v;
	json_object_foreach(doc, key, v)
	{
		char stat[16];
		int m = vllm_stat_key(key, stat, sizeof stat);
		if (m < 0 || !json_is_number(v))
			continue;
		int known = 0; /* statistics headroom keeps; the others stay in 'stated' */
		for (size_t i = 0; i < HR_ARRAY_LEN(aiperf_stats); i++)
			known |= strcmp(stat, aiperf_stats[i]) == 0;
		if (!known)
			continue;
		json_t *o = json_object_get(metrics, vllm_metrics[m][1]);
		if (!o) {
			o = json_pack("{s:s}", "unit", "ms");
			json_object_set_new(metrics, vllm_metrics[m][1], o);
		}
		json_object_set_new(o, stat, json_real(json_number_value(v)));
	}
	json_t *c = json_object_get(doc, "completed"), *np = json_object_get(doc, "num_prompts");
	json_int_t valid = json_is_integer(c) ? json_integer_value(c) : 0;
	json_int_t req = json_is_integer(np) ? json_integer_value(np) : valid;
	if (req < valid)
		req = valid;
	json_t *w = json_object_get(figures, "window_s");
	return json_pack("{s:i, s:f, s:{s:I, s:I, s:I, s:i}, s:{}, s:o, s:b}", "metrics_version",
			 METRICS_VERSION, "window_s", json_is_number(w) ? json_number_value(w) : 0.0,
			 "counts", "requests", req, "valid", valid, "errors", req - valid, "warmup", 0,
			 "errors", "metrics", metrics, "summary_only", 1);
}

static int parse_vllm(json_t *doc, struct import_result *out, struct import_error *e)
{
	snprintf(out->producer, sizeof out->producer, "vllm");
	snprintf(out->format, sizeof out->format, "vllm");
	/* types of the headline members */
	static const char *const nums[] = {"duration", "request_throughput", "output_throughput",
					   "total_token_throughput", "request_goodput:",
					   "burstiness"};
	double d[HR_ARRAY_LEN(nums)];
	for (size_t i = 0; i < HR_ARRAY_LEN(nums); i++)
		if (opt_num(doc, nums[i], "file.", &d[i], e) < 0)
			return -1;
	static const char *const ints[] = {"num_prompts", "completed", "max_concurrency",
					   "total_input_tokens", "total_output_tokens"};
	for (size_t i = 0; i < HR_ARRAY_LEN(ints); i++) {
		json_t *v = json_object_get(doc, ints[i]);
		if (v && !json_is_null(v) && (!json_is_integer(v) || json_integer_value(v) < 0)) {
			char f[64];
			snprintf(f, sizeof f, "file.%s", ints[i]);
			return fail(e, "wrong_type", f, 0, "'%s' must be an integer, 0 or more", f);
		}
	}
	json_t *rate = json_object_get(doc, "request_rate");
	if (rate && !json_is_null(rate) && !json_is_number(rate) &&
	    !(json_is_string(rate) && strcmp(json_string_value(rate), "inf") == 0))
		return fail(e, "wrong_type", "file.request_rate", 0,
			    "'file.request_rate' must be a number or \"inf\"");
	static const char *const strs[] = {"model_id", "backend", "date"};
	for (size_t i = 0; i < HR_ARRAY_LEN(strs); i++) {
		json_t *v = json_object_get(doc, strs[i]);
		if (v && !json_is_null(v) && !json_is_string(v)) {
			char f[64];
			snprintf(f, sizeof f, "file.%s", strs[i]);
			return fail(e, "wrong_type", f, 0, "'%s' must be a string", f);
		}
	}
	const char *key;
	json_t *v;
	json_object_foreach(doc, key, v)
	{
		char stat[16];
		if (vllm_stat_key(key, stat, sizeof stat) >= 0) {
			if (!json_is_number(v) && !json_is_null(v)) {
				char f[96];
				snprintf(f, sizeof f, "file.%s", key);
				return fail(e, "wrong_type", f, 0, "'%s' must be a number", f);
			}
			json_object_set(out->stated, key, v);
		} else if (!is_vllm_mapped(key)) {
			keep_unmapped(out->unmapped, key, v);
		}
	}
	static const char *const fig_tags[] = {NULL, "request_throughput",
					       "output_token_throughput", "total_token_throughput",
					       "goodput", NULL};
	for (size_t i = 0; i < HR_ARRAY_LEN(nums); i++) {
		if (isnan(d[i]))
			continue;
		json_object_set_new(out->stated, nums[i], json_real(d[i]));
		if (i == 0 && d[i] > 0)
			json_object_set_new(out->figures, "window_s", json_real(d[i]));
		else if (fig_tags[i])
			json_object_set_new(out->figures, fig_tags[i], json_real(d[i]));
	}
	if (vllm_records(doc, out, e) < 0)
		return -1;
	out->spec = vllm_spec(doc, out);
	if (out->n) {
		json_t *mc = json_object_get(doc, "max_concurrency");
		double r = json_is_number(rate) ? json_number_value(rate) : 0;
		if (layout(out->recs, out->n, json_is_integer(mc) ? json_integer_value(mc) : 0,
			   r > 0 && isfinite(r) ? r : 0) < 0)
			return fail(e, "out_of_range", "file.ttfts", 0,
				    "the requests laid out as the file's load sends them would take "
				    "more than a century: their times or 'file.request_rate' are "
				    "out of range");
		out->layout = 1;
	} else {
		out->summary = vllm_summary(doc, out->figures);
	}
	return 0;
}

/* --- AIPerf ----------------------------------------------------------------------------- */


/* A metric of metric_catalog: 1 per request, 2 run-level, 0 not one. */
static int catalog_kind(const char *tag)
{
	for (size_t i = 0; i < metric_catalog_count; i++)
		if (strcmp(metric_catalog[i].tag, tag) == 0)
			return metric_catalog[i].run_level ? 2 : 1;
	return 0;
}

/* One line of profile_export.jsonl into a record (times absolute, epoch
 * ns; the caller shifts them). */
static int aiperf_line(json_t *o, long line, size_t idx, json_t *workers, struct hr_record *r,
		       struct import_error *e)
{
	record_blank(r, idx);
	json_t *md = json_object_get(o, "metadata"), *mt = json_object_get(o, "metrics");
	json_t *er = json_object_get(o, "error");
	if (!json_is_object(md))
		return fail(e, md ? "wrong_type" : "missing_field", "jsonl.metadata", line,
			    "'metadata' must be an object");
	if (mt && !json_is_null(mt) && !json_is_object(mt))
		return fail(e, "wrong_type", "jsonl.metrics", line, "'metrics' must be an object");
	if (er && !json_is_null(er) && !json_is_object(er))
		return fail(e, "wrong_type", "jsonl.error", line, "'error' must be an object or null");
	static const char *const times[] = {"request_start_ns", "request_ack_ns", "request_end_ns",
					    "cancellation_time_ns"};
	int64_t t[4];
	for (int k = 0; k < 4; k++) {
		json_t *v = json_object_get(md, times[k]);
		t[k] = HR_NO_TIME;
		if (!v || json_is_null(v)) {
			if (k == 0)
				return fail(e, "missing_field", "jsonl.metadata.request_start_ns",
					    line, "'metadata.request_start_ns' is required");
			continue;
		}
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > IMPORT_MAX_NS / 2) {
			char f[96];
			snprintf(f, sizeof f, "jsonl.metadata.%s", times[k]);
			return fail(e, "wrong_type", f, line,
				    "'metadata.%s' must be an integer of nanoseconds", times[k]);
		}
		t[k] = json_integer_value(v);
	}
	r->start_ns = t[0];
	r->headers_ns = t[1];
	/* workers numbered in the order they first appear (AIPerf's ids are
	 * names, worker_359d423a; headroom's own export writes worker_N in
	 * order, so N comes back) */
	json_t *w = json_object_get(md, "worker_id");
	if (json_is_string(w) && json_string_length(w) <= 256) {
		json_t *k = json_object_get(workers, json_string_value(w));
		if (!k) {
			k = json_integer((json_int_t)json_object_size(workers));
			json_object_set_new(workers, json_string_value(w), k);
		}
		r->worker = (uint32_t)json_integer_value(k);
	}
	json_t *sn = json_object_get(md, "session_num");
	if (json_is_integer(sn) && json_integer_value(sn) >= 0)
		r->req_id = (uint64_t)json_integer_value(sn);
	json_t *ti = json_object_get(md, "turn_index");
	if (json_is_integer(ti) && json_integer_value(ti) >= 0 &&
	    json_integer_value(ti) <= HR_MAX_TURNS)
		r->turn = (uint32_t)json_integer_value(ti);
	json_t *ph = json_object_get(md, "benchmark_phase");
	if (json_is_string(ph) && strcmp(json_string_value(ph), "warmup") == 0)
		r->phase = HR_PHASE_WARMUP;
	/* the per-request metrics: {value, unit} */
	double ms[5];
	static const char *const tags[] = {"time_to_first_token", "time_to_first_output_token",
					   "request_latency", "input_sequence_length",
					   "output_sequence_length"};
	for (int k = 0; k < 5; k++) {
		ms[k] = NAN;
		json_t *m = json_object_get(mt, tags[k]);
		if (!m && k == 3)
			m = json_object_get(mt, "error_isl");
		if (!m || json_is_null(m))
			continue;
		json_t *val = json_object_get(m, "value"), *unit = json_object_get(m, "unit");
		double scale = 1;
		const char *u = json_string_value(unit);
		if (k < 3 && u && strcmp(u, "ns") == 0)
			scale = 1e-6;
		else if (k < 3 && u && (strcmp(u, "sec") == 0 || strcmp(u, "s") == 0))
			scale = 1e3;
		else if (k < 3 && u && strcmp(u, "ms") != 0)
			u = NULL;
		if (!json_is_object(m) || !json_is_number(val) || json_number_value(val) < 0 ||
		    (k < 3 && unit && !u)) {
			char f[96];
			snprintf(f, sizeof f, "jsonl.metrics.%s", tags[k]);
			return fail(e, "wrong_type", f, line,
				    "'metrics.%s' must be {value: a number 0 or more, unit%s}",
				    tags[k], k < 3 ? ": ms, ns or sec" : "");
		}
		ms[k] = json_number_value(val) * scale;
	}
	if (!isnan(ms[3]))
		r->isl = (int32_t)clampd(ms[3], 0, HR_MAX_ISL * 100.0);
	int valid = !er || json_is_null(er);
	json_t *wc = json_object_get(md, "was_cancelled");
	if (json_is_true(wc))
		valid = 0;
	if (!valid) {
		json_t *code = json_object_get(er, "code"), *type = json_object_get(er, "type");
		json_t *msg = json_object_get(er, "message");
		long long status = json_is_integer(code) ? json_integer_value(code) : 0;
		r->http_status = status > 0 && status < 1000 ? (int32_t)status : 0;
		int cat = status == 429		       ? HR_ERR_RATE_LIMITED
			  : status >= 400 && status < 500 ? HR_ERR_HTTP_4XX
			  : status >= 500 && status < 600 ? HR_ERR_HTTP_5XX
			  : status > 0			 ? HR_ERR_HTTP_OTHER
							 : HR_ERR_TRANSPORT;
		if (json_is_true(wc))
			cat = HR_ERR_CANCELLED;
		if (json_is_string(type) && hr_err_from_name(json_string_value(type)) > 0)
			cat = hr_err_from_name(json_string_value(type));
		r->error = (uint8_t)cat;
		r->error_msg = short_msg(json_is_string(msg)    ? json_string_value(msg)
					 : json_is_string(type) ? json_string_value(type)
								: "error");
		int64_t end = t[2] != HR_NO_TIME ? t[2] : t[3] != HR_NO_TIME ? t[3] : t[0];
		r->end_ns = r->done_ns = end < t[0] ? t[0] : end;
		return 0;
	}
	r->http_status = 200;
	if (!isnan(ms[4]))
		r->osl = (int32_t)clampd(ms[4], 0, HR_MAX_OSL * 100.0);
	int64_t ttft;
	if (!isnan(ms[0]) && to_ns(ms[0], 1e6, &ttft) < 0)
		return fail(e, "out_of_range", "jsonl.metrics.time_to_first_token", line,
			    "'metrics.time_to_first_token' must be 0 to 1e9 ms");
	if (!isnan(ms[0])) {
		r->flags = HR_REC_STREAMED;
		uint32_t cap = 0;
		int64_t at = t[0] + ttft;
		record_add_chunk(r, at, &cap);
		json_t *m = json_object_get(mt, "inter_chunk_latency");
		json_t *val = json_object_get(m, "value");
		if (m && !json_is_null(m)) {
			const char *u = json_string_value(json_object_get(m, "unit"));
			double scale = u && strcmp(u, "ns") == 0 ? 1 : 1e6;
			if (json_is_number(val))
				val = NULL; /* a single figure (a mean), not the gaps */
			else if (!json_is_array(val) ||
				 json_array_size(val) >= HR_MAX_CHUNKS_PER_REQUEST)
				return fail(e, "wrong_type", "jsonl.metrics.inter_chunk_latency.value",
					    line,
					    "'metrics.inter_chunk_latency.value' must be a list of "
					    "fewer than %u numbers",
					    HR_MAX_CHUNKS_PER_REQUEST);
			size_t g;
			json_t *gv;
			json_array_foreach(val, g, gv)
			{
				int64_t dn;
				if (!json_is_number(gv) || to_ns(json_number_value(gv), scale, &dn) < 0 ||
				    at > IMPORT_MAX_NS - dn)
					return fail(e, "wrong_type",
						    "jsonl.metrics.inter_chunk_latency.value", line,
						    "'metrics.inter_chunk_latency.value[%zu]' must be a "
						    "number, 0 or more",
						    g);
				at += dn;
				record_add_chunk(r, at, &cap);
			}
		}
		int64_t tf;
		r->first_output_ns = !isnan(ms[1]) && to_ns(ms[1], 1e6, &tf) == 0 ? t[0] + tf
										    : r->chunk_ns[0];
		r->end_ns = at;
	}
	int64_t lat;
	if (t[2] != HR_NO_TIME)
		r->end_ns = t[2];
	else if (r->n_chunks == 0 && !isnan(ms[2]) && to_ns(ms[2], 1e6, &lat) == 0)
		r->end_ns = t[0] + lat;
	if (r->n_chunks == 0 && r->end_ns == HR_NO_TIME)
		return fail(e, "missing_field", "jsonl.metadata.request_end_ns", line,
			    "a request without error needs 'metadata.request_end_ns' or "
			    "'metrics.request_latency'");
	if (r->end_ns < t[0])
		return fail(e, "out_of_range", "jsonl.metadata.request_end_ns", line,
			    "'metadata.request_end_ns' is before 'metadata.request_start_ns'");
	if (r->n_chunks) { /* the last chunk by the metrics, the end by the metadata */
		int64_t last = r->chunk_ns[r->n_chunks - 1];
		if (r->end_ns < last - 1000)
			return fail(e, "out_of_range", "jsonl.metadata.request_end_ns", line,
				    "'metadata.request_end_ns' is before the last chunk that "
				    "'metrics.time_to_first_token' and 'inter_chunk_latency' place");
		if (r->end_ns < last) /* within a microsecond: rounding of the ms figures */
			r->end_ns = last;
	}
	r->done_ns = r->end_ns;
	return 0;
}

static int aiperf_jsonl(const char *text, size_t len, struct import_result *out,
			struct import_error *e)
{
	size_t cap = 1024, n = 0;
	struct hr_record *recs = xcalloc(cap, sizeof *recs);
	json_t *workers = json_object();
	const char *p = text, *end = text + len;
	long line = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		line++;
		const char *s = p;
		p = nl ? nl + 1 : end;
		size_t l = (size_t)(le - s);
		while (l && (s[l - 1] == '\r' || s[l - 1] == ' ' || s[l - 1] == '\t'))
			l--;
		if (l == 0)
			continue;
		if (n == HR_MAX_IMPORT_RECORDS) {
			free_recs(recs, n);
			json_decref(workers);
			return fail(e, "too_large", "jsonl", line, "more than %d requests",
				    HR_MAX_IMPORT_RECORDS);
		}
		json_t *o = load_doc(s, l, "jsonl", line, e);
		if (!o) {
			free_recs(recs, n);
			json_decref(workers);
			return -1;
		}
		if (n == cap) {
			cap *= 2;
			recs = xrealloc(recs, cap * sizeof *recs);
		}
		int rc = aiperf_line(o, line, (size_t)(line - 1), workers, &recs[n], e);
		json_decref(o);
		n++;
		if (rc < 0) {
			free_recs(recs, n);
			json_decref(workers);
			return -1;
		}
	}
	json_decref(workers);
	if (n == 0) {
		free(recs);
		return fail(e, "invalid_value", "jsonl", 0, "'jsonl' holds no records");
	}
	/* time zero: the earliest start */
	int64_t t0 = INT64_MAX;
	for (size_t i = 0; i < n; i++)
		if (recs[i].start_ns < t0)
			t0 = recs[i].start_ns;
	for (size_t i = 0; i < n; i++) {
		struct hr_record *r = &recs[i];
		int64_t *t[] = {&r->start_ns, &r->headers_ns, &r->first_output_ns, &r->end_ns,
				&r->done_ns};
		for (size_t k = 0; k < HR_ARRAY_LEN(t); k++)
			if (*t[k] != HR_NO_TIME)
				*t[k] -= t0;
		for (uint32_t k = 0; k < r->n_chunks; k++)
			r->chunk_ns[k] -= t0;
	}
	out->recs = recs;
	out->n = n;
	out->t0_wall_ns = t0;
	return 0;
}

static json_t *aiperf_spec(json_t *doc)
{
	json_t *ic = json_object_get(doc, "input_config");
	json_t *ep = json_object_get(ic, "endpoint"), *lg = json_object_get(ic, "loadgen");
	json_t *names = json_object_get(ep, "model_names");
	const char *model = json_string_value(json_array_get(names, 0));
	json_t *target = json_pack("{s:s, s:s}", "url", "http://imported.invalid", "model",
				   model && model[0] && strlen(model) <= HR_MAX_NAME_LEN ? model
											: "unknown");
	const char *url = json_string_value(json_array_get(json_object_get(ep, "urls"), 0));
	if (url && strlen(url) <= HR_MAX_URL_LEN &&
	    (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0) &&
	    !strchr(url, '@') && !strchr(url, '?'))
		json_object_set_new(target, "url", json_string(url));
	const char *type = json_string_value(json_object_get(ep, "type"));
	static const char *const eps[] = {"chat", "completions", "embeddings"};
	for (size_t i = 0; type && i < HR_ARRAY_LEN(eps); i++)
		if (strcmp(type, eps[i]) == 0)
			json_object_set_new(target, "endpoint", json_string(eps[i]));
	json_t *st = json_object_get(ep, "streaming");
	if (json_is_boolean(st) && (!type || strcmp(type, "embeddings") != 0))
		json_object_set(target, "stream", st);
	json_t *load = json_object();
	json_t *rate = json_object_get(lg, "request_rate"), *conc = json_object_get(lg, "concurrency");
	json_t *mc = json_object_get(lg, "max_concurrency");
	if (json_is_number(rate) && json_number_value(rate) > 0) {
		json_object_set_new(load, "mode", json_string("rate"));
		json_object_set_new(load, "rate",
				    json_real(clampd(json_number_value(rate), 1e-6, HR_MAX_RATE)));
		json_t *c = json_is_integer(mc) ? mc : conc;
		if (json_is_integer(c) && json_integer_value(c) >= 1)
			json_object_set_new(load, "max_concurrency",
					    json_integer((json_int_t)clampd(
						(double)json_integer_value(c), 1, HR_MAX_CONCURRENCY)));
	} else {
		json_object_set_new(load, "mode", json_string("concurrency"));
		long long c = json_is_integer(conc) ? json_integer_value(conc) : 1;
		json_object_set_new(load, "concurrency",
				    json_integer((json_int_t)clampd((double)c, 1, HR_MAX_CONCURRENCY)));
	}
	json_t *rc = json_object_get(lg, "request_count"), *bd = json_object_get(lg, "benchmark_duration");
	if (json_is_integer(rc) && json_integer_value(rc) >= 1)
		json_object_set_new(load, "requests",
				    json_integer((json_int_t)clampd((double)json_integer_value(rc),
								    1, (double)HR_MAX_REQUESTS)));
	else if (json_is_number(bd) && json_number_value(bd) > 0)
		json_object_set_new(load, "duration_s",
				    json_real(clampd(json_number_value(bd), 0.001, HR_MAX_DURATION_S)));
	return json_pack("{s:o, s:o, s:i, s:{s:b, s:b}}", "target", target, "load", load,
			 "workers", 1, "telemetry", "nvml", 0, "server_metrics", 0);
}

static int parse_aiperf(json_t *doc, const char *jsonl, size_t jlen, struct import_result *out,
			struct import_error *e)
{
	const char *prod = json_string_value(json_object_get(doc, "producer"));
	const char *ver = json_string_value(json_object_get(doc, "producer_version"));
	if (!prod || !prod[0] || strlen(prod) >= sizeof out->producer)
		prod = "aiperf", ver = json_string_value(json_object_get(doc, "aiperf_version"));
	snprintf(out->producer, sizeof out->producer, "%s", prod);
	snprintf(out->version, sizeof out->version, "%s", ver ? ver : "");
	snprintf(out->format, sizeof out->format, "aiperf-json");
	json_t *metrics = json_object();
	json_int_t valid = -1, errors = -1, good = -1;
	double window = NAN;
	const char *key;
	json_t *v;
	json_object_foreach(doc, key, v)
	{
		char f[160];
		snprintf(f, sizeof f, "file.%s", key);
		int kind = catalog_kind(key);
		int counter = strcmp(key, "request_count") == 0 ||
			      strcmp(key, "error_request_count") == 0 ||
			      strcmp(key, "good_request_count") == 0 ||
			      strcmp(key, "benchmark_duration") == 0 ||
			      strcmp(key, "total_isl") == 0 || strcmp(key, "total_osl") == 0;
		if (!kind && !counter) {
			if (strcmp(key, "producer") != 0 && strcmp(key, "producer_version") != 0 &&
			    strcmp(key, "aiperf_version") != 0)
				keep_unmapped(out->unmapped, key, v);
			continue;
		}
		if (!json_is_object(v))
			return json_decref(metrics), fail(e, "wrong_type", f, 0, "'%s' must be an object {unit, avg, ...}",
				    f);
		json_t *unit = json_object_get(v, "unit");
		if (unit && !json_is_string(unit))
			return json_decref(metrics), fail(e, "wrong_type", f, 0, "'%s.unit' must be a string", f);
		json_t *m = json_pack("{s:s}", "unit", unit ? json_string_value(unit) : "");
		for (size_t i = 0; i < HR_ARRAY_LEN(aiperf_stats); i++) {
			json_t *s = json_object_get(v, aiperf_stats[i]);
			if (!s || json_is_null(s))
				continue;
			if (!json_is_number(s)) {
				json_decref(m);
				return json_decref(metrics), fail(e, "wrong_type", f, 0, "'%s.%s' must be a number", f,
					    aiperf_stats[i]);
			}
			json_object_set(m, aiperf_stats[i], s);
		}
		const char *sk;
		json_t *sv;
		json_object_foreach(v, sk, sv) /* what AIPerf has and headroom does not */
		{
			int known = strcmp(sk, "unit") == 0;
			for (size_t i = 0; i < HR_ARRAY_LEN(aiperf_stats); i++)
				known |= strcmp(sk, aiperf_stats[i]) == 0;
			if (!known) {
				json_t *u = json_object_get(out->unmapped, key);
				if (!u) {
					u = json_object();
					json_object_set_new(out->unmapped, key, u);
				}
				keep_unmapped(u, sk, sv);
			}
		}
		json_object_set(out->stated, key, m);
		json_t *avg = json_object_get(m, "avg");
		if (counter) {
			double a = json_is_number(avg) ? json_number_value(avg) : NAN;
			if (strcmp(key, "benchmark_duration") == 0)
				window = a;
			else if (strcmp(key, "total_isl") != 0 && strcmp(key, "total_osl") != 0) {
				if (!(a >= 0 && a <= 1e15)) {
					json_decref(m);
					return json_decref(metrics), fail(e, "out_of_range", f, 0,
						    "'%s.avg' must be a count, 0 or more", f);
				}
				json_int_t c = (json_int_t)llround(a);
				if (strcmp(key, "request_count") == 0)
					valid = c;
				else if (strcmp(key, "error_request_count") == 0)
					errors = c;
				else
					good = c;
			}
			json_decref(m);
		} else if (kind == 2) {
			if (json_is_number(avg))
				json_object_set_new(out->figures, key, json_real(json_number_value(avg)));
			json_object_set_new(metrics, key, m);
		} else {
			json_object_set_new(metrics, key, m);
		}
	}
	if (isfinite(window) && window > 0)
		json_object_set_new(out->figures, "window_s", json_real(window));
	out->spec = aiperf_spec(doc);
	if (jsonl) {
		json_decref(metrics);
		return aiperf_jsonl(jsonl, jlen, out, e);
	}
	if (valid < 0)
		valid = 0;
	if (errors < 0)
		errors = 0;
	out->summary = json_pack("{s:i, s:f, s:{s:I, s:I, s:I, s:i}, s:{}, s:o, s:b}",
				 "metrics_version", METRICS_VERSION, "window_s",
				 isfinite(window) && window > 0 ? window : 0.0, "counts", "requests",
				 valid + errors, "valid", valid, "errors", errors, "warmup", 0,
				 "errors", "metrics", metrics, "summary_only", 1);
	if (good >= 0)
		json_object_set_new(json_object_get(out->summary, "counts"), "good",
				    json_integer(good));
	return 0;
}

/* --- GuideLLM --------------------------------------------------------------------------- */

struct gctx {
	const struct yaml_lines *lines; /* the YAML's lines, NULL for JSON */
	struct import_error *e;
	size_t chunks;
};

static int gfail(struct gctx *g, json_t *node, const char *code, const char *field,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int gfail(struct gctx *g, json_t *node, const char *code, const char *field,
		 const char *fmt, ...)
{
	char m[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	return fail(g->e, code, field, yaml_line_of(g->lines, node), "%s", m);
}

/* A number member of o (NAN when absent or null); -1 when another type. */
static int gnum(struct gctx *g, json_t *o, const char *key, const char *prefix, double *out)
{
	json_t *v = json_object_get(o, key);
	*out = NAN;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v)) {
		char f[700];
		snprintf(f, sizeof f, "%s.%s", prefix, key);
		return gfail(g, v, "wrong_type", f, "'%s' must be a number", f);
	}
	*out = json_number_value(v);
	return 0;
}

/* An object member (NULL when absent or null); -1 when another type. */
static int gobj(struct gctx *g, json_t *o, const char *key, const char *prefix, json_t **out)
{
	json_t *v = json_object_get(o, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v)) {
		char f[700];
		snprintf(f, sizeof f, "%s.%s", prefix, key);
		return gfail(g, v, "wrong_type", f, "'%s' must be an object", f);
	}
	*out = v;
	return 0;
}

/* GuideLLM's distributions (StatusDistributionSummary: successful, errored,
 * incomplete, total, each a DistributionSummary) with a headroom tag. */
static const struct {
	const char *key, *tag, *unit;
	double scale;
} g_dists[] = {
	{"time_to_first_token_ms", "time_to_first_token", "ms", 1},
	{"time_to_first_output_token_ms", "time_to_first_output_token", "ms", 1},
	{"inter_token_latency_ms", "inter_token_latency", "ms", 1},
	{"request_latency", "request_latency", "ms", 1000},
	{"prompt_token_count", "input_sequence_length", "tokens", 1},
	{"output_token_count", "output_sequence_length", "tokens", 1},
};

/* Rates over the benchmark's time: their successful mean is the run-level figure. */
static const char *const g_rates[][2] = {
	{"requests_per_second", "request_throughput"},
	{"output_tokens_per_second", "output_token_throughput"},
	{"tokens_per_second", "total_token_throughput"},
};

/* Stated with the run but without a headroom counterpart. */
static const char *const g_stated_only[] = {"time_per_output_token_ms", "request_concurrency",
					    "request_totals"};

static const char *const g_pcts[][2] = {{"p01", "p1"},	{"p05", "p5"},	{"p10", "p10"},
				       {"p25", "p25"},	{"p50", "p50"}, {"p75", "p75"},
				       {"p90", "p90"},	{"p95", "p95"}, {"p99", "p99"}};

/* The successful requests' DistributionSummary of v as headroom's
 * statistics (scaled); NULL in *out when the file has none. */
static int g_dist(struct gctx *g, json_t *v, const char *f, double scale, const char *unit,
		  json_t **out)
{
	*out = NULL;
	if (!json_is_object(v))
		return gfail(g, v, "wrong_type", f, "'%s' must be an object {successful, errored, "
						    "incomplete, total}", f);
	char p[600];
	snprintf(p, sizeof p, "%s", f);
	json_t *s;
	if (gobj(g, v, "successful", p, &s) < 0)
		return -1;
	if (!s)
		return 0;
	snprintf(p, sizeof p, "%s.successful", f);
	static const char *const plain[][2] = {
		{"mean", "avg"}, {"min", "min"}, {"max", "max"}, {"std_dev", "std"}};
	json_t *m = json_pack("{s:s}", "unit", unit);
	double x;
	for (size_t i = 0; i < HR_ARRAY_LEN(plain); i++) {
		if (gnum(g, s, plain[i][0], p, &x) < 0)
			return json_decref(m), -1;
		if (isfinite(x))
			json_object_set_new(m, plain[i][1], json_real(x * scale));
	}
	json_t *pc;
	if (gobj(g, s, "percentiles", p, &pc) < 0)
		return json_decref(m), -1;
	char pp[700];
	snprintf(pp, sizeof pp, "%s.percentiles", p);
	for (size_t i = 0; pc && i < HR_ARRAY_LEN(g_pcts); i++) {
		if (gnum(g, pc, g_pcts[i][0], pp, &x) < 0)
			return json_decref(m), -1;
		if (isfinite(x))
			json_object_set_new(m, g_pcts[i][1], json_real(x * scale));
	}
	/* older reports have no p50 in percentiles: the median is it */
	if (!json_object_get(m, "p50")) {
		if (gnum(g, s, "median", p, &x) < 0)
			return json_decref(m), -1;
		if (isfinite(x))
			json_object_set_new(m, "p50", json_real(x * scale));
	}
	*out = m;
	return 0;
}

/* One request of a report as times (epoch seconds) and lengths. Current
 * reports (GenerativeRequestStats): info.timings.{request_start,
 * first_token_iteration, last_token_iteration, token_iterations,
 * first_output_token_iteration, request_end}, info.error; older ones
 * (0.3): start_time, first_token_time, last_token_time, end_time, error. */
struct greq {
	double start, end, first, last, first_out, isl, osl, iters;
	const char *err;
	json_t *node;
	char field[600];
};

static int g_request(struct gctx *g, json_t *r, const char *f, struct greq *q)
{
	memset(q, 0, sizeof *q);
	snprintf(q->field, sizeof q->field, "%s", f);
	q->node = r;
	if (!json_is_object(r))
		return gfail(g, r, "wrong_type", f, "'%s' must be an object", f);
	json_t *info, *tm = NULL;
	char p[600];
	if (gobj(g, r, "info", f, &info) < 0)
		return -1;
	if (info) {
		snprintf(p, sizeof p, "%s.info", f);
		if (gobj(g, info, "timings", p, &tm) < 0)
			return -1;
		snprintf(p, sizeof p, "%s.info.timings", f);
		double rs, rvs, re, rve;
		if (gnum(g, tm, "request_start", p, &rs) < 0 ||
		    gnum(g, tm, "resolve_start", p, &rvs) < 0 ||
		    gnum(g, tm, "request_end", p, &re) < 0 ||
		    gnum(g, tm, "resolve_end", p, &rve) < 0 ||
		    gnum(g, tm, "first_token_iteration", p, &q->first) < 0 ||
		    gnum(g, tm, "last_token_iteration", p, &q->last) < 0 ||
		    gnum(g, tm, "first_output_token_iteration", p, &q->first_out) < 0 ||
		    gnum(g, tm, "token_iterations", p, &q->iters) < 0)
			return -1;
		q->start = isnan(rs) ? rvs : rs;
		q->end = isnan(re) ? rve : re;
		json_t *er = json_object_get(info, "error");
		if (er && !json_is_null(er) && !json_is_string(er)) {
			snprintf(p, sizeof p, "%s.info.error", f);
			return gfail(g, er, "wrong_type", p, "'%s' must be a string or null", p);
		}
		q->err = json_string_value(er);
	} else {
		if (gnum(g, r, "start_time", f, &q->start) < 0 ||
		    gnum(g, r, "end_time", f, &q->end) < 0 ||
		    gnum(g, r, "first_token_time", f, &q->first) < 0 ||
		    gnum(g, r, "last_token_time", f, &q->last) < 0)
			return -1;
		json_t *er = json_object_get(r, "error");
		if (er && !json_is_null(er) && !json_is_string(er)) {
			snprintf(p, sizeof p, "%s.error", f);
			return gfail(g, er, "wrong_type", p, "'%s' must be a string or null", p);
		}
		q->err = json_string_value(er);
		q->iters = NAN;
	}
	if (gnum(g, r, "prompt_tokens", f, &q->isl) < 0 ||
	    gnum(g, r, "output_tokens", f, &q->osl) < 0)
		return -1;
	json_t *im = json_object_get(r, "input_metrics"), *om = json_object_get(r, "output_metrics");
	if (isnan(q->isl) && json_is_number(json_object_get(im, "total_tokens")))
		q->isl = json_number_value(json_object_get(im, "total_tokens"));
	if (isnan(q->osl) && json_is_number(json_object_get(om, "total_tokens")))
		q->osl = json_number_value(json_object_get(om, "total_tokens"));
	if (isnan(q->osl) && q->iters > 0) /* as GuideLLM: one token per iteration */
		q->osl = q->iters;
	if (isnan(q->iters))
		q->iters = q->osl;
	static const char *const names[][2] = {{"isl", "prompt_tokens"}, {"osl", "output_tokens"}};
	double *lens[] = {&q->isl, &q->osl, &q->iters};
	for (int k = 0; k < 3; k++)
		if (!isnan(*lens[k]) && !(*lens[k] >= 0 && *lens[k] <= 1e9 &&
					  *lens[k] == floor(*lens[k]))) {
			snprintf(p, sizeof p, "%s.%s", f,
				 k < 2 ? names[k][1] : info ? "info.timings.token_iterations"
							    : "output_tokens");
			return gfail(g, r, "out_of_range", p, "'%s' must be a whole count, 0 or more",
				     p);
		}
	double *times[] = {&q->start, &q->end, &q->first, &q->last, &q->first_out};
	for (int k = 0; k < 5; k++)
		if (!isnan(*times[k]) && !(*times[k] >= 0 && *times[k] < 4e9)) {
			snprintf(p, sizeof p, "%s", f);
			return gfail(g, r, "out_of_range", p,
				     "the times of '%s' must be epoch seconds from 0 to 4e9", p);
		}
	return 0;
}

/* Seconds b - a as ns (a <= b, both known): -1 when out of order or range. */
static int g_ns(double a, double b, int64_t *out)
{
	if (isnan(a) || isnan(b) || b < a)
		return -1;
	return to_ns(b - a, 1e9, out);
}

static int g_record(struct gctx *g, const struct greq *q, int status, double t0, size_t idx,
		    struct hr_record *r)
{
	record_blank(r, idx);
	int64_t s0;
	if (g_ns(t0, q->start, &s0) < 0)
		return gfail(g, q->node, "out_of_range", q->field,
			     "'%s' starts more than 11 days after the report's first request",
			     q->field);
	r->start_ns = s0;
	if (!isnan(q->isl))
		r->isl = (int32_t)clampd(q->isl, 0, HR_MAX_ISL * 100.0);
	int64_t d;
	if (status != 0) { /* errored (1) or incomplete (2) */
		const char *m = q->err && q->err[0] ? q->err : status == 2 ? "incomplete" : "error";
		const char *rest;
		r->error = (uint8_t)(status == 2 ? HR_ERR_CANCELLED
						 : err_category(m, HR_ERR_TRANSPORT, &rest));
		if (status == 2)
			rest = m;
		r->error_msg = short_msg(rest);
		r->end_ns = r->done_ns = g_ns(q->start, q->end, &d) == 0 ? s0 + d : s0;
		return 0;
	}
	r->http_status = 200;
	if (!isnan(q->osl))
		r->osl = (int32_t)clampd(q->osl, 0, HR_MAX_OSL * 100.0);
	if (isnan(q->first)) { /* not streamed: its end only */
		if (g_ns(q->start, q->end, &d) < 0)
			return gfail(g, q->node, "out_of_range", q->field,
				     "'%s' needs an end at or after its start", q->field);
		r->end_ns = r->done_ns = s0 + d;
		return 0;
	}
	int64_t ft, lt;
	double last = isnan(q->last) ? q->first : q->last;
	if (g_ns(q->start, q->first, &ft) < 0 || g_ns(q->start, last, &lt) < 0 || lt < ft)
		return gfail(g, q->node, "out_of_range", q->field,
			     "'%s' must have start <= first token <= last token", q->field);
	size_t n = q->iters >= 1 ? (size_t)q->iters : 1;
	if (n < 2 && lt > ft)
		n = 2;
	if (n >= HR_MAX_CHUNKS_PER_REQUEST || g->chunks + n > HR_MAX_IMPORT_CHUNKS)
		return gfail(g, q->node, "too_large", q->field,
			     "'%s': more than %u token iterations in one request or %u in the "
			     "report",
			     q->field, HR_MAX_CHUNKS_PER_REQUEST - 1, HR_MAX_IMPORT_CHUNKS);
	g->chunks += n;
	r->flags = HR_REC_STREAMED;
	uint32_t cap = 0;
	/* the iterations evenly spaced from the first token to the last, as
	 * GuideLLM itself spaces them (GenerativeRequestStats.iter_tokens_timings) */
	for (size_t k = 0; k < n; k++) {
		int64_t at = n == 1 ? ft
				    : ft + (int64_t)llround((double)(lt - ft) * (double)k /
							    (double)(n - 1));
		record_add_chunk(r, s0 + at, &cap);
	}
	r->first_output_ns = r->chunk_ns[0];
	int64_t fo;
	if (g_ns(q->start, q->first_out, &fo) == 0 && fo >= ft && fo <= lt)
		r->first_output_ns = s0 + fo;
	r->end_ns = s0 + lt; /* the last content chunk: headroom's request end */
	r->done_ns = g_ns(q->start, q->end, &d) == 0 && d > lt ? s0 + d : r->end_ns;
	return 0;
}

/* The benchmark's per-request lists into records when they are complete
 * (as many as request_totals counts: GuideLLM may keep only a sample). */
static int g_records(struct gctx *g, json_t *b, const char *bf, json_t *totals, double bstart,
		     struct import_result *out, int *complete)
{
	static const char *const st[] = {"successful", "errored", "incomplete"};
	json_t *reqs = json_object_get(b, "requests"), *lists[3];
	char f[400];
	*complete = 0;
	if (!reqs || json_is_null(reqs))
		return 0;
	snprintf(f, sizeof f, "%s.requests", bf);
	if (!json_is_object(reqs))
		return gfail(g, reqs, "wrong_type", f, "'%s' must be an object {successful, "
						       "errored, incomplete}", f);
	size_t n = 0;
	int full = 1;
	for (int k = 0; k < 3; k++) {
		lists[k] = json_object_get(reqs, st[k]);
		snprintf(f, sizeof f, "%s.requests.%s", bf, st[k]);
		if (lists[k] && !json_is_null(lists[k]) && !json_is_array(lists[k]))
			return gfail(g, lists[k], "wrong_type", f, "'%s' must be an array or null",
				     f);
		size_t len = json_array_size(lists[k]);
		if (len > HR_MAX_IMPORT_RECORDS || n + len > HR_MAX_IMPORT_RECORDS)
			return gfail(g, lists[k], "too_large", f,
				     "'%s': more than %d requests in one benchmark", f,
				     HR_MAX_IMPORT_RECORDS);
		n += len;
		json_t *t = json_object_get(totals, st[k]);
		if (!json_is_integer(t) || (size_t)json_integer_value(t) != len)
			full = 0;
	}
	if (!full || n == 0)
		return 0; /* a sample, or nothing: the file's figures only */
	struct greq *q = xcalloc(n, sizeof *q);
	int *status = xcalloc(n, sizeof *status);
	size_t i = 0;
	double t0 = INFINITY;
	for (int k = 0; k < 3; k++) {
		size_t j;
		json_t *r;
		json_array_foreach(lists[k], j, r)
		{
			snprintf(f, sizeof f, "%s.requests.%s[%zu]", bf, st[k], j);
			if (g_request(g, r, f, &q[i]) < 0)
				goto bad;
			if (isnan(q[i].start)) {
				if (k == 0 || isnan(bstart)) {
					gfail(g, r, "missing_field", f,
					      "'%s' has no start time (request_start)", f);
					goto bad;
				}
				q[i].start = bstart; /* never sent: at the benchmark's start */
			}
			if (q[i].start < t0)
				t0 = q[i].start;
			status[i++] = k;
		}
	}
	struct hr_record *recs = xcalloc(n, sizeof *recs);
	for (i = 0; i < n; i++)
		if (g_record(g, &q[i], status[i], t0, i, &recs[i]) < 0) {
			free_recs(recs, i + 1);
			goto bad;
		}
	free(q);
	free(status);
	out->recs = recs;
	out->n = n;
	out->t0_wall_ns = (int64_t)llround(t0 * 1e9);
	*complete = 1;
	return 0;
bad:
	free(q);
	free(status);
	return -1;
}

/* The first string of o's members keys (an object's), for the spec. */
static const char *g_str(json_t *o, const char *const *keys)
{
	for (; *keys; keys++) {
		const char *s = json_string_value(json_object_get(o, *keys));
		if (s && s[0])
			return s;
	}
	return NULL;
}

static json_t *g_spec(json_t *doc, json_t *b, json_t *metrics, json_int_t total)
{
	json_t *cfg = json_object_get(b, "config"), *args = json_object_get(b, "args");
	json_t *where[] = {json_object_get(cfg, "backend"), json_object_get(b, "worker"),
			   json_object_get(json_object_get(json_object_get(doc, "config"), "spec"),
					   "backend"),
			   json_object_get(doc, "config")};
	static const char *const mkeys[] = {"model", "backend_model", NULL};
	static const char *const tkeys[] = {"target", "backend_target", NULL};
	const char *model = NULL, *url = NULL;
	for (size_t i = 0; i < HR_ARRAY_LEN(where) && (!model || !url); i++) {
		if (!model)
			model = g_str(where[i], mkeys);
		if (!url)
			url = g_str(where[i], tkeys);
	}
	json_t *target = json_pack("{s:s, s:s}", "url", "http://imported.invalid", "model",
				   model && strlen(model) <= HR_MAX_NAME_LEN ? model : "unknown");
	if (url && strlen(url) <= HR_MAX_URL_LEN &&
	    (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0) &&
	    !strchr(url, '@') && !strchr(url, '?'))
		json_object_set_new(target, "url", json_string(url));
	json_t *strat = json_object_get(cfg, "strategy");
	if (!strat)
		strat = json_object_get(args, "strategy");
	const char *type = json_string_value(json_object_get(strat, "type_"));
	json_t *load = json_object();
	double rate = json_number_value(json_object_get(strat, "rate"));
	json_t *streams = json_object_get(strat, "streams"), *mc = json_object_get(strat,
										     "max_concurrency");
	if (type && (strcmp(type, "constant") == 0 || strcmp(type, "poisson") == 0) && rate > 0 &&
	    isfinite(rate)) {
		json_object_set_new(load, "mode", json_string("rate"));
		json_object_set_new(load, "rate", json_real(clampd(rate, 1e-6, HR_MAX_RATE)));
		json_object_set_new(load, "arrival", json_string(type));
		if (json_is_integer(mc) && json_integer_value(mc) >= 1)
			json_object_set_new(load, "max_concurrency",
					    json_integer((json_int_t)clampd(
						(double)json_integer_value(mc), 1,
						HR_MAX_CONCURRENCY)));
	} else {
		long long c = 1;
		if (type && strcmp(type, "concurrent") == 0 && json_is_integer(streams))
			c = json_integer_value(streams);
		else if (type && strcmp(type, "throughput") == 0)
			c = json_is_integer(mc) ? json_integer_value(mc) : total;
		json_object_set_new(load, "mode", json_string("concurrency"));
		json_object_set_new(load, "concurrency",
				    json_integer((json_int_t)clampd((double)c, 1,
								    HR_MAX_CONCURRENCY)));
	}
	if (total >= 1)
		json_object_set_new(load, "requests",
				    json_integer(total > HR_MAX_REQUESTS ? HR_MAX_REQUESTS : total));
	json_t *workload = json_object();
	static const char *const lens[][2] = {{"prompt_token_count", "isl"},
					      {"output_token_count", "osl"}};
	for (size_t i = 0; i < 2; i++) {
		json_t *mean = json_object_get(
		    json_object_get(json_object_get(metrics, lens[i][0]), "successful"), "mean");
		if (json_is_number(mean) && json_number_value(mean) >= 0)
			json_object_set_new(
			    workload, lens[i][1],
			    json_pack("{s:I}", "mean",
				      (json_int_t)clampd(llround(json_number_value(mean)), 0,
							 i ? HR_MAX_OSL : HR_MAX_ISL)));
	}
	return json_pack("{s:o, s:o, s:o, s:i, s:{s:b, s:b}}", "target", target, "load", load,
			 "workload", workload, "workers", 1, "telemetry", "nvml", 0,
			 "server_metrics", 0);
}

static int g_benchmark(struct gctx *g, json_t *doc, json_t *report, json_t *b, size_t idx,
		       size_t count, int yaml, struct import_result *out)
{
	char bf[64], f[400];
	snprintf(bf, sizeof bf, "file.benchmarks[%zu]", idx);
	if (!json_is_object(b))
		return gfail(g, b, "wrong_type", bf, "'%s' must be an object", bf);
	const char *ver = json_string_value(
	    json_object_get(json_object_get(doc, "metadata"), "guidellm_version"));
	snprintf(out->producer, sizeof out->producer, "guidellm");
	snprintf(out->version, sizeof out->version, "%s",
		 ver && strlen(ver) < sizeof out->version ? ver : "");
	snprintf(out->format, sizeof out->format, yaml ? "guidellm-yaml" : "guidellm-json");
	json_t *metrics;
	if (gobj(g, b, "metrics", bf, &metrics) < 0)
		return -1;
	if (!metrics) {
		snprintf(f, sizeof f, "%s.metrics", bf);
		return gfail(g, b, "missing_field", f, "'%s' is required", f);
	}
	snprintf(f, sizeof f, "%s.metrics", bf);
	/* counts: metrics.request_totals (current) or request_totals (0.3) */
	json_t *totals = json_object_get(metrics, "request_totals");
	const char *tf = "metrics.request_totals";
	if (!totals) {
		totals = json_object_get(b, "request_totals");
		tf = "request_totals";
	}
	json_int_t cnt[4] = {0, 0, 0, -1};
	static const char *const ck[] = {"successful", "errored", "incomplete", "total"};
	if (totals && !json_is_object(totals)) {
		snprintf(f, sizeof f, "%s.%s", bf, tf);
		return gfail(g, totals, "wrong_type", f, "'%s' must be an object", f);
	}
	for (int k = 0; k < 4; k++) {
		json_t *v = json_object_get(totals, ck[k]);
		if (!v || json_is_null(v))
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > (json_int_t)1e15) {
			snprintf(f, sizeof f, "%s.%s.%s", bf, tf, ck[k]);
			return gfail(g, v, "wrong_type", f, "'%s' must be a count, 0 or more", f);
		}
		cnt[k] = json_integer_value(v);
	}
	if (cnt[3] < 0)
		cnt[3] = cnt[0] + cnt[1] + cnt[2];
	/* the measured window */
	double start, end, dur;
	if (gnum(g, b, "start_time", bf, &start) < 0 || gnum(g, b, "end_time", bf, &end) < 0 ||
	    gnum(g, b, "duration", bf, &dur) < 0)
		return -1;
	if (isnan(dur) && end >= start)
		dur = end - start;
	if (isfinite(dur) && dur > 0)
		json_object_set_new(out->figures, "window_s", json_real(dur));
	/* the distributions */
	json_t *hm = json_object();
	char mf[400];
	for (size_t i = 0; i < HR_ARRAY_LEN(g_dists); i++) {
		json_t *v = json_object_get(metrics, g_dists[i].key), *m;
		if (!v || json_is_null(v))
			continue;
		snprintf(mf, sizeof mf, "%s.metrics.%s", bf, g_dists[i].key);
		if (g_dist(g, v, mf, g_dists[i].scale, g_dists[i].unit, &m) < 0)
			return json_decref(hm), -1;
		keep_unmapped(out->stated, g_dists[i].key, v);
		if (m)
			json_object_set_new(hm, g_dists[i].tag, m);
	}
	for (size_t i = 0; i < HR_ARRAY_LEN(g_rates); i++) {
		json_t *v = json_object_get(metrics, g_rates[i][0]), *m;
		if (!v || json_is_null(v))
			continue;
		snprintf(mf, sizeof mf, "%s.metrics.%s", bf, g_rates[i][0]);
		if (g_dist(g, v, mf, 1, "", &m) < 0)
			return json_decref(hm), -1;
		keep_unmapped(out->stated, g_rates[i][0], v);
		json_t *avg = json_object_get(m, "avg");
		if (json_is_number(avg) && isfinite(json_number_value(avg)))
			json_object_set_new(out->figures, g_rates[i][1],
					    json_real(json_number_value(avg)));
		json_decref(m);
	}
	const char *key;
	json_t *v;
	json_t *um = json_object();
	json_object_foreach(metrics, key, v)
	{
		int mapped = 0;
		for (size_t i = 0; i < HR_ARRAY_LEN(g_dists); i++)
			mapped |= strcmp(key, g_dists[i].key) == 0;
		for (size_t i = 0; i < HR_ARRAY_LEN(g_rates); i++)
			mapped |= strcmp(key, g_rates[i][0]) == 0;
		for (size_t i = 0; i < HR_ARRAY_LEN(g_stated_only); i++)
			if (strcmp(key, g_stated_only[i]) == 0) {
				keep_unmapped(out->stated, key, v);
				mapped = 1;
			}
		if (!mapped)
			keep_unmapped(um, key, v);
	}
	if (json_object_size(um))
		json_object_set_new(out->unmapped, "metrics", um);
	else
		json_decref(um);
	if (strcmp(tf, "request_totals") == 0 && totals)
		keep_unmapped(out->stated, "request_totals", totals);
	json_object_set_new(out->stated, "benchmark",
			    json_pack("{s:I, s:I, s:O?}", "index", (json_int_t)idx, "of",
				      (json_int_t)count, "id",
				      json_is_string(json_object_get(b, "id_"))
					  ? json_object_get(b, "id_")
					  : json_object_get(json_object_get(b, "config"), "id_")));
	/* the per-request lists */
	int complete;
	if (g_records(g, b, bf, totals, start, out, &complete) < 0)
		return json_decref(hm), -1;
	json_object_foreach(b, key, v)
	{
		static const char *const mapped[] = {"metrics", "start_time", "end_time",
						     "duration", "request_totals"};
		int m = complete && strcmp(key, "requests") == 0;
		for (size_t i = 0; i < HR_ARRAY_LEN(mapped); i++)
			m |= strcmp(key, mapped[i]) == 0;
		if (!m)
			keep_unmapped(out->unmapped, key, v);
	}
	json_object_update(out->unmapped, report); /* the report's own members, with each run */
	out->spec = g_spec(doc, b, metrics, cnt[3]);
	if (complete) {
		json_decref(hm);
		return 0;
	}
	out->summary = json_pack("{s:i, s:f, s:{s:I, s:I, s:I, s:i}, s:{}, s:o, s:b}",
				 "metrics_version", METRICS_VERSION, "window_s",
				 isfinite(dur) && dur > 0 ? dur : 0.0, "counts", "requests", cnt[3],
				 "valid", cnt[0], "errors", cnt[3] - cnt[0], "warmup", 0, "errors",
				 "metrics", hm, "summary_only", 1);
	return 0;
}

/* Every benchmark of a GuideLLM report: one result each. */
static int parse_guidellm(json_t *doc, const struct yaml_lines *lines, int yaml,
			  struct import_result **outp, size_t *np, struct import_error *e)
{
	struct gctx g = {.lines = lines, .e = e};
	json_t *bs = json_object_get(doc, "benchmarks");
	if (!json_is_array(bs))
		return gfail(&g, bs ? bs : doc, bs ? "wrong_type" : "missing_field",
			     "file.benchmarks", "'file.benchmarks' must be an array (GuideLLM's "
					       "report: one entry per benchmark)");
	size_t n = json_array_size(bs);
	if (n == 0)
		return gfail(&g, bs, "invalid_value", "file.benchmarks",
			     "'file.benchmarks' is empty: no benchmark to import");
	if (n > HR_MAX_IMPORT_BENCHMARKS)
		return gfail(&g, bs, "too_large", "file.benchmarks",
			     "'file.benchmarks' has %zu entries: at most %d", n,
			     HR_MAX_IMPORT_BENCHMARKS);
	json_t *md = json_object_get(doc, "metadata");
	if (md && !json_is_null(md) && !json_is_object(md))
		return gfail(&g, md, "wrong_type", "file.metadata", "'file.metadata' must be an "
								     "object");
	json_t *gv = json_object_get(md, "guidellm_version");
	if (gv && !json_is_null(gv) && !json_is_string(gv))
		return gfail(&g, gv, "wrong_type", "file.metadata.guidellm_version",
			     "'file.metadata.guidellm_version' must be a string");
	/* the report's own members, kept once for all its runs */
	json_t *report = json_object();
	const char *key;
	json_t *v;
	json_object_foreach(doc, key, v)
		if (strcmp(key, "benchmarks") != 0)
			keep_unmapped(report, key, v);
	struct import_result *out = xcalloc(n, sizeof *out);
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		out[i].stated = json_object();
		out[i].unmapped = json_object();
		out[i].figures = json_object();
		if (g_benchmark(&g, doc, report, json_array_get(bs, i), i, n, yaml, &out[i]) < 0 ||
		    (total += out[i].n) > HR_MAX_IMPORT_RECORDS) {
			if (total > HR_MAX_IMPORT_RECORDS)
				fail(e, "too_large", "file.benchmarks", 0,
				     "the report holds more than %d requests",
				     HR_MAX_IMPORT_RECORDS);
			for (size_t k = 0; k <= i; k++)
				import_result_release(&out[k]);
			free(out);
			json_decref(report);
			return -1;
		}
	}
	json_decref(report);
	*outp = out;
	*np = n;
	return 0;
}

/* --- detection ------------------------------------------------------------------------------ */

static int looks_vllm(json_t *doc)
{
	return json_object_get(doc, "ttfts") || json_object_get(doc, "mean_ttft_ms") ||
	       (json_object_get(doc, "num_prompts") && json_object_get(doc, "backend"));
}

static int looks_aiperf(json_t *doc)
{
	if (json_object_get(doc, "aiperf_version") || json_object_get(doc, "input_config") ||
	    json_object_get(doc, "schema_version"))
		return 1;
	json_t *t = json_object_get(doc, "time_to_first_token");
	if (!t)
		t = json_object_get(doc, "request_latency");
	return json_is_object(t) && json_object_get(t, "unit");
}

/* The first byte that is not white space (or a BOM) opens JSON's object
 * or array: JSON; otherwise YAML (GuideLLM's benchmarks.yaml). */
static int is_json_text(const char *s, size_t len)
{
	size_t i = 0;
	if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
		i = 3;
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	return i < len && (s[i] == '{' || s[i] == '[');
}

int import_parse_all(const char *file, size_t len, const char *jsonl, size_t jlen,
		     const char *format, struct import_result **outp, size_t *np,
		     struct import_error *err)
{
	*outp = NULL;
	*np = 0;
	memset(err, 0, sizeof *err);
	int fmt = 0; /* 1 vllm, 2 aiperf, 3 guidellm */
	if (!format || strcmp(format, "auto") == 0)
		fmt = 0;
	else if (strcmp(format, "vllm") == 0)
		fmt = 1;
	else if (strcmp(format, "aiperf") == 0)
		fmt = 2;
	else if (strcmp(format, "guidellm") == 0)
		fmt = 3;
	else
		return fail(err, "invalid_value", "format", 0,
			    "'format' must be auto, vllm, aiperf or guidellm");
	if (len > HR_MAX_IMPORT_BYTES || jlen > HR_MAX_IMPORT_BYTES)
		return fail(err, "too_large", len > HR_MAX_IMPORT_BYTES ? "file" : "jsonl", 0,
			    "an imported file may have at most %u MiB",
			    HR_MAX_IMPORT_BYTES >> 20);
	json_t *doc;
	struct yaml_lines lines = {0};
	int yaml = (fmt == 0 || fmt == 3) && !is_json_text(file, len);
	if (yaml) {
		long line;
		char msg[300];
		doc = yaml_to_json(file, len, HR_MAX_IMPORT_DEPTH, &lines, &line, msg, sizeof msg);
		if (!doc)
			return fail(err, "invalid_yaml", "file", line,
				    "'file' is neither JSON nor YAML headroom reads: %s", msg);
		if (!json_is_object(doc)) {
			json_decref(doc);
			yaml_lines_release(&lines);
			return fail(err, "wrong_type", "file", 0,
				    "'file' must be a JSON object or a YAML mapping");
		}
	} else {
		doc = load_doc(file, len, "file", 0, err);
		if (!doc)
			return -1;
	}
	if (fmt == 0) {
		fmt = json_is_array(json_object_get(doc, "benchmarks")) ? 3
		      : looks_vllm(doc)					? 1
		      : looks_aiperf(doc)				? 2
									: 0;
		if (!fmt) {
			json_decref(doc);
			yaml_lines_release(&lines);
			return fail(err, "unsupported_format", "file", 0,
				    "not a file headroom imports: neither vLLM's result JSON "
				    "(ttfts, mean_ttft_ms, num_prompts and backend), AIPerf's "
				    "profile_export_aiperf.json (schema_version, input_config, "
				    "metrics as {unit, avg, ...}) nor a GuideLLM report (benchmarks)");
		}
	}
	if (jsonl && fmt != 2) {
		json_decref(doc);
		yaml_lines_release(&lines);
		return fail(err, "invalid_value", "jsonl", 0,
			    "'jsonl' (AIPerf's profile_export.jsonl) goes with an AIPerf file only");
	}
	struct import_result *out = NULL;
	size_t n = 0;
	int rc;
	if (fmt == 3) {
		rc = parse_guidellm(doc, &lines, yaml, &out, &n, err);
	} else {
		out = xcalloc(1, sizeof *out);
		n = 1;
		out->stated = json_object();
		out->unmapped = json_object();
		out->figures = json_object();
		rc = fmt == 1 ? parse_vllm(doc, out, err) : parse_aiperf(doc, jsonl, jlen, out, err);
		if (rc < 0) {
			import_result_release(out);
			free(out);
			out = NULL;
			n = 0;
		}
	}
	json_decref(doc);
	yaml_lines_release(&lines);
	if (rc < 0)
		return rc;
	/* a spec says when its run stops: the requests the file holds when it
	 * states neither a count nor a duration */
	for (size_t i = 0; i < n; i++) {
		json_t *load = json_object_get(out[i].spec, "load");
		if (!json_object_get(load, "requests") && !json_object_get(load, "duration_s")) {
			json_int_t k = (json_int_t)out[i].n;
			if (!k)
				k = json_integer_value(json_object_get(
				    json_object_get(out[i].summary, "counts"), "requests"));
			json_object_set_new(load, "requests",
					    json_integer(k < 1		       ? 1
							 : k > HR_MAX_REQUESTS ? HR_MAX_REQUESTS
									       : k));
		}
	}
	*outp = out;
	*np = n;
	return 0;
}

void import_results_release(struct import_result *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++)
		import_result_release(&r[i]);
	free(r);
}

void import_result_release(struct import_result *r)
{
	json_decref(r->spec);
	json_decref(r->summary);
	json_decref(r->figures);
	json_decref(r->stated);
	json_decref(r->unmapped);
	free_recs(r->recs, r->n);
	memset(r, 0, sizeof *r);
}
