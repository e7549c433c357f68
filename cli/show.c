/* show.c - renders a run and its summary as text: header lines, the
 * metrics table (known metrics in a fixed order, any others after them
 * alphabetically, so new metrics appear without code changes), counts,
 * errors by category, telemetry, validity and gates. Input is untrusted;
 * every read is type-checked. */
#include "show.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "table.h"
#include "util.h"
#include "view.h"

#define SCALAR_LEN 512 /* longest value shown on a header line */

static const struct {
	const char *tag, *name;
} known_metrics[] = {
    {"time_to_first_token", "Time to First Token"},
    {"time_to_second_token", "Time to Second Token"},
    {"request_latency", "Request Latency"},
    {"inter_token_latency", "Inter Token Latency"},
    {"inter_chunk_latency", "Inter Chunk Latency"},
    {"output_token_throughput_per_user", "Output Token Throughput Per User"},
    {"input_sequence_length", "Input Sequence Length"},
    {"output_sequence_length", "Output Sequence Length"},
    {"request_throughput", "Request Throughput"},
    {"output_token_throughput", "Output Token Throughput"},
    {"total_token_throughput", "Total Token Throughput"},
    {"image_throughput", "Image Throughput"},
};

/* Columns after "Metric", in order. */
static const char *const stat_cols[] = {"avg", "min", "max", "p99", "p90", "p50", "std"};

static int known_index(const char *tag)
{
	for (size_t i = 0; i < HR_ARRAY_LEN(known_metrics); i++)
		if (strcmp(known_metrics[i].tag, tag) == 0)
			return (int)i;
	return -1;
}

char *show_metric_name(const char *tag)
{
	int k = known_index(tag);
	if (k >= 0)
		return xstrdup(known_metrics[k].name);
	char *s = xstrdup(tag);
	int word_start = 1;
	for (char *p = s; *p; p++) {
		if (*p == '_')
			*p = ' ';
		if (*p == ' ') {
			word_start = 1;
		} else {
			if (word_start && *p >= 'a' && *p <= 'z')
				*p = (char)(*p - 'a' + 'A');
			word_start = 0;
		}
	}
	return s;
}

/* "label     value" with value cleaned; NULL value gives "-". */
static void kv_line(FILE *out, const char *label, const char *value)
{
	char *c = view_clean(value);
	fprintf(out, "  %-9s %s\n", label, c);
	free(c);
}

static void time_line(FILE *out, const char *label, const char *ts, const char *extra)
{
	char buf[SCALAR_LEN];
	int64_t ms;
	view_fmt_time(buf, sizeof(buf), ts);
	int parsed = ts && view_parse_time(ts, &ms) == 0;
	fprintf(out, "  %-9s %s%s%s\n", label, buf, parsed ? " UTC" : "", extra ? extra : "");
}

/* Appends "key value" pairs of obj's scalar members to b, separated by
 * ", ": first the keys in order[] (NULL-terminated, may be NULL), then the
 * others in the object's order. */
static void pairs(struct dynbuf *b, json_t *obj, const char *const *order)
{
	char val[SCALAR_LEN];
	const char *key;
	json_t *v;
	int first = 1;
	for (size_t i = 0; order && order[i]; i++) {
		v = json_object_get(obj, order[i]);
		if (!v || json_is_object(v) || json_is_array(v) || json_is_null(v))
			continue;
		dynbuf_printf(b, "%s%s %s", first ? "" : ", ", order[i],
		              view_scalar(val, sizeof(val), v));
		first = 0;
	}
	json_object_foreach(obj, key, v)
	{
		int listed = 0;
		for (size_t i = 0; order && order[i]; i++)
			if (strcmp(order[i], key) == 0)
				listed = 1;
		if (listed || json_is_object(v) || json_is_array(v) || json_is_null(v))
			continue;
		dynbuf_printf(b, "%s%s %s", first ? "" : ", ", key,
		              view_scalar(val, sizeof(val), v));
		first = 0;
	}
}

static void pairs_line(FILE *out, const char *label, json_t *obj, const char *const *order)
{
	if (!json_is_object(obj))
		return;
	struct dynbuf b;
	dynbuf_init(&b, 1u << 20);
	pairs(&b, obj, order);
	if (b.len)
		kv_line(out, label, b.data);
	dynbuf_release(&b);
}

static void target_line(FILE *out, json_t *spec)
{
	json_t *target = json_object_get(spec, "target");
	if (!json_is_object(spec) || !json_is_object(target)) {
		kv_line(out, "target", NULL);
		return;
	}
	char url[SCALAR_LEN], model[SCALAR_LEN], ep[SCALAR_LEN];
	/* target.mock: the spec keeps a placeholder url; the mock's real
	 * address is in the server telemetry source below */
	fprintf(out, "  %-9s %s  model %s  endpoint %s\n", "target",
	        json_is_true(json_object_get(target, "mock"))
	            ? "headroom-mock (started for the run)"
	            : view_scalar(url, sizeof(url), json_object_get(target, "url")),
	        view_scalar(model, sizeof(model), json_object_get(target, "model")),
	        view_scalar(ep, sizeof(ep), json_object_get(target, "endpoint")));
}

static void labels_line(FILE *out, json_t *labels)
{
	if (!json_is_object(labels) || json_object_size(labels) == 0)
		return;
	struct dynbuf b;
	dynbuf_init(&b, 1u << 20);
	char val[SCALAR_LEN];
	const char *key;
	json_t *v;
	json_object_foreach(labels, key, v)
	{
		dynbuf_printf(&b, "%s%s=%s", b.len ? ", " : "", key,
		              view_scalar(val, sizeof(val), v));
	}
	kv_line(out, "labels", b.data);
	dynbuf_release(&b);
}

void show_labels(FILE *out, json_t *run)
{
	char buf[SCALAR_LEN];
	labels_line(out, json_object_get(run, "labels"));
	const char *note = view_str(run, "note");
	if (note && *note)
		kv_line(out, "note", note);
	if (json_is_true(json_object_get(run, "pinned")))
		kv_line(out, "pinned", "yes");
	json_t *group = json_object_get(run, "group_id");
	if (json_is_integer(group))
		kv_line(out, "group", view_scalar(buf, sizeof buf, group));
}

/* The client verdict, first thing after the title: whether the figures
 * below are the server's or the load generator's. */
static void client_lines(FILE *out, json_t *summary)
{
	json_t *cl = json_object_get(summary, "client");
	const char *v = view_str(cl, "verdict");
	if (!v)
		return;
	const char *what = strcmp(v, "ok") == 0 ? "ok: the load generator had room left"
	                   : strcmp(v, "client_bound") == 0
	                       ? "CLIENT_BOUND: the load generator was the limit; the figures "
	                         "below understate the server"
	                       : "inconclusive: not enough evidence either way";
	kv_line(out, "client", what);
	for (int pass = 0; pass < 2; pass++) {
		json_t *list = json_object_get(cl, pass ? "notes" : "reasons");
		size_t i;
		json_t *r;
		json_array_foreach(list, i, r)
		{
			char *m = view_clean(view_str(r, "message"));
			fprintf(out, "  %-9s - %s\n", "", m);
			free(m);
		}
	}
	json_t *h = json_object_get(cl, "headline");
	double busy, late, lag, frac;
	char a[VIEW_NUMLEN], b[VIEW_NUMLEN], c[VIEW_NUMLEN];
	struct dynbuf d;
	dynbuf_init(&d, 1024);
	if (view_num(h, "loop_busy_avg", &busy) && view_num(h, "loop_busy_max", &frac))
		dynbuf_printf(&d, "loop busy %s%% avg, %s%% peak", view_fmt_num(a, busy * 100),
		              view_fmt_num(b, frac * 100));
	if (view_num(h, "schedule_lag_p99_ms", &lag))
		dynbuf_printf(&d, "%sschedule lag p99 %s ms", d.len ? "; " : "",
		              view_fmt_num(c, lag));
	if (view_num(h, "timer_late_max_ms", &late) && late > 0)
		dynbuf_printf(&d, "%stimer late max %s ms", d.len ? "; " : "",
		              view_fmt_num(a, late));
	json_t *ceil = json_object_get(cl, "ceiling");
	if (view_num(ceil, "fraction", &frac)) {
		const char *basis = view_str(ceil, "basis");
		dynbuf_printf(&d, "%sload %s%% of the calibrated %s ceiling", d.len ? "; " : "",
		              view_fmt_num(b, frac * 100),
		              basis && strcmp(basis, "open_loop") == 0 ? "open-loop" : "closed-loop");
	}
	if (d.len)
		fprintf(out, "  %-9s (%s)\n", "", d.data);
	dynbuf_release(&d);
}

static void header(FILE *out, json_t *run)
{
	char id[64], buf[SCALAR_LEN];
	char *name = view_clean(view_str(run, "name"));
	fprintf(out, "Run %s: %s\n", view_scalar(id, sizeof(id), json_object_get(run, "id")), name);
	free(name);
	client_lines(out, json_object_get(run, "summary"));
	kv_line(out, "state", view_str(run, "state"));
	const char *reason = view_str(run, "reason");
	if (reason && *reason)
		kv_line(out, "reason", reason);
	const char *created = view_str(run, "created_at");
	const char *started = view_str(run, "started_at");
	const char *finished = view_str(run, "finished_at");
	time_line(out, "created", created, NULL);
	time_line(out, "started", started, NULL);
	int64_t t0, t1;
	char extra[96] = "";
	if (view_parse_time(started, &t0) == 0 && view_parse_time(finished, &t1) == 0)
		snprintf(extra, sizeof(extra), "  (took %s)",
		         view_fmt_duration(buf, sizeof(buf), t1 - t0));
	time_line(out, "finished", finished, extra);

	json_t *spec = json_object_get(run, "spec");
	target_line(out, spec);
	if (json_is_object(spec)) {
		static const char *const load_order[] = {"mode",     "concurrency", "rate",
		                                         "requests", "duration_s",  NULL};
		if (json_array_size(json_object_get(spec, "classes")))
			kv_line(out, "load", "traffic classes, each with its own (Classes, below)");
		else
			pairs_line(out, "load", json_object_get(spec, "load"), load_order);
		json_t *workers = json_object_get(spec, "workers");
		if (json_is_integer(workers))
			kv_line(out, "workers", view_scalar(buf, sizeof(buf), workers));
	}
	show_labels(out, run);
	static const char *const progress_order[] = {"sent",    "completed", "errors",
	                                             "records", "workers",   NULL};
	pairs_line(out, "progress", json_object_get(run, "progress"), progress_order);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void metric_row(struct table *t, const char *tag, json_t *m)
{
	const char *cells[1 + HR_ARRAY_LEN(stat_cols)];
	char nums[HR_ARRAY_LEN(stat_cols)][VIEW_NUMLEN];
	char *name = show_metric_name(tag);
	const char *unit = view_str(m, "unit");
	char *label = unit && *unit ? xasprintf("%s (%s)", name, unit) : xstrdup(name);
	cells[0] = label;
	for (size_t i = 0; i < HR_ARRAY_LEN(stat_cols); i++) {
		double v;
		cells[1 + i] = view_num(m, stat_cols[i], &v) ? view_fmt_num(nums[i], v) : "-";
	}
	table_add_row(t, cells);
	free(label);
	free(name);
}

static void metrics_table(FILE *out, json_t *metrics)
{
	if (!json_is_object(metrics) || json_object_size(metrics) == 0) {
		fputs("No metrics in the summary.\n", out);
		return;
	}
	struct table *t = table_new(1 + HR_ARRAY_LEN(stat_cols));
	table_column(t, 0, "Metric", TABLE_LEFT);
	for (size_t i = 0; i < HR_ARRAY_LEN(stat_cols); i++)
		table_column(t, 1 + i, stat_cols[i], TABLE_RIGHT);

	for (size_t i = 0; i < HR_ARRAY_LEN(known_metrics); i++) {
		json_t *m = json_object_get(metrics, known_metrics[i].tag);
		if (m)
			metric_row(t, known_metrics[i].tag, m);
	}
	size_t n = 0;
	const char **others = xcalloc(json_object_size(metrics), sizeof(*others));
	const char *key;
	json_t *v;
	json_object_foreach(metrics, key, v)
	{
		if (known_index(key) < 0)
			others[n++] = key;
	}
	qsort(others, n, sizeof(*others), cmp_str);
	for (size_t i = 0; i < n; i++)
		metric_row(t, others[i], json_object_get(metrics, others[i]));
	free(others);

	table_print(t, out, TABLE_BOX);
	table_free(t);
}

struct err_count {
	const char *name;
	double n;
	int has_n;
};

static int cmp_err(const void *a, const void *b)
{
	const struct err_count *x = a, *y = b;
	if (x->has_n != y->has_n)
		return y->has_n - x->has_n;
	if (x->has_n && x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void errors_table(FILE *out, json_t *errors)
{
	if (!json_is_object(errors) || json_object_size(errors) == 0)
		return;
	size_t n = 0;
	struct err_count *e = xcalloc(json_object_size(errors), sizeof(*e));
	const char *key;
	json_t *v;
	json_object_foreach(errors, key, v)
	{
		e[n].name = key;
		e[n].has_n = json_is_number(v);
		e[n].n = e[n].has_n ? json_number_value(v) : 0;
		n++;
	}
	qsort(e, n, sizeof(*e), cmp_err);
	struct table *t = table_new(2);
	table_column(t, 0, "Error category", TABLE_LEFT);
	table_column(t, 1, "Count", TABLE_RIGHT);
	for (size_t i = 0; i < n; i++) {
		char num[SCALAR_LEN];
		const char *cells[2] = {
		    e[i].name, view_scalar(num, sizeof(num), json_object_get(errors, e[i].name))};
		table_add_row(t, cells);
	}
	fputc('\n', out);
	table_print(t, out, TABLE_BOX);
	table_free(t);
	free(e);
}

/* What was asked of the load generator and what it achieved. */
static void load_line(FILE *out, json_t *load)
{
	if (!json_is_object(load))
		return;
	char a[VIEW_NUMLEN], b[VIEW_NUMLEN], c[VIEW_NUMLEN], d[VIEW_NUMLEN];
	double req, ach, avg, max;
	json_t *conc = json_object_get(load, "achieved_concurrency");
	int has_req = view_num(load, "requested_rate", &req);
	int has_ach = view_num(load, "achieved_rate", &ach);
	fprintf(out, "  %-9s rate %s/s requested, %s/s achieved", "load",
		has_req ? view_fmt_num(a, req) : "-", has_ach ? view_fmt_num(b, ach) : "-");
	if (json_is_object(conc) && view_num(conc, "avg", &avg) && view_num(conc, "max", &max))
		fprintf(out, "; in flight avg %s, max %s", view_fmt_num(c, avg),
			view_fmt_num(d, max));
	double unsent;
	if (view_num(load, "unsent", &unsent) && unsent > 0)
		fprintf(out, "; %s arrival(s) never sent (the ceiling held them past the end)",
			view_scalar(c, sizeof c, json_object_get(load, "unsent")));
	fputc('\n', out);
}

/* Token counts: where ISL and OSL came from, the usage discrepancy when
 * both counts were known, and outputs that missed their length. */
static void tokens_lines(FILE *out, json_t *t)
{
	if (!json_is_object(t))
		return;
	struct dynbuf b;
	dynbuf_init(&b, 1u << 20);
	dynbuf_addstr(&b, "isl from ");
	pairs(&b, json_object_get(t, "isl_sources"), NULL);
	dynbuf_addstr(&b, "; osl from ");
	pairs(&b, json_object_get(t, "osl_sources"), NULL);
	kv_line(out, "tokens", b.data);
	dynbuf_release(&b);

	json_t *d = json_object_get(t, "usage_discrepancy");
	char x[VIEW_NUMLEN], y[VIEW_NUMLEN], z[SCALAR_LEN], w[VIEW_NUMLEN];
	double th, over, avg;
	json_t *od = json_object_get(d, "osl_diff_pct"), *id = json_object_get(d, "isl_diff_pct");
	if (view_num(d, "threshold_pct", &th) && view_num(d, "over_threshold", &over) &&
	    (view_num(od, "avg", &avg) || view_num(id, "avg", &avg))) {
		double ia, oa;
		int hi = view_num(id, "avg", &ia), ho = view_num(od, "avg", &oa);
		fprintf(out, "  %-9s usage vs tokenizer: isl %s%%, osl %s%% off on average; %s "
		             "request(s) over %s%%\n",
		        "", hi ? view_fmt_num(x, ia) : "-", ho ? view_fmt_num(y, oa) : "-",
		        view_scalar(z, sizeof z, json_object_get(d, "over_threshold")),
		        view_fmt_num(w, th));
	}
	json_t *m = json_object_get(t, "osl_mismatch");
	double req;
	char a[SCALAR_LEN], bb[SCALAR_LEN], c[SCALAR_LEN], e[SCALAR_LEN];
	if (view_num(m, "requested", &req) && req > 0)
		fprintf(out, "  %-9s output length missed in %s of %s (shorter %s, longer %s)\n", "",
		        view_scalar(a, sizeof a, json_object_get(m, "missed")),
		        view_scalar(bb, sizeof bb, json_object_get(m, "requested")),
		        view_scalar(c, sizeof c, json_object_get(m, "shorter")),
		        view_scalar(e, sizeof e, json_object_get(m, "longer")));
}

/* What the valid requests carried and got back (summary.media, docs/metrics.md,
 * "Media"): the counts the run has, summed. */
static void media_line(FILE *out, json_t *m)
{
	static const char *const f[][2] = {{"images_in", "images in"},
	                                   {"audio_in", "audio clips in"},
	                                   {"media_bytes_in", "media bytes in"},
	                                   {"images_out", "images out"},
	                                   {"bytes_out", "bytes out"}};
	if (!json_is_object(m) || !json_is_integer(json_object_get(m, "requests")))
		return;
	char line[512], a[32];
	int k =
	    snprintf(line, sizeof line,
	             "%s request(s):", view_scalar(a, sizeof a, json_object_get(m, "requests")));
	const char *sep = " ";
	for (size_t i = 0; i < HR_ARRAY_LEN(f); i++) {
		json_t *v = json_object_get(m, f[i][0]);
		if (!json_is_integer(v) || k < 0 || (size_t)k >= sizeof line)
			continue;
		k += snprintf(line + k, sizeof line - (size_t)k, "%s%s %s", sep,
		              view_scalar(a, sizeof a, v), f[i][1]);
		sep = ", ";
	}
	kv_line(out, "media", line);
}

/* A placed run (docs/agents.md): where its workers ran, what was lost. */
static void placement_line(FILE *out, json_t *pl)
{
	if (!json_is_object(pl))
		return;
	char line[1024];
	double local = 0;
	view_num(pl, "local", &local);
	int k = snprintf(line, sizeof line, "%.0f here", local);
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(pl, "agents"), i, a)
	{
		const char *name = view_str(a, "name");
		if (k > 0 && (size_t)k < sizeof line)
			k += snprintf(line + k, sizeof line - (size_t)k, ", %zu on %.64s",
				      json_array_size(json_object_get(a, "workers")),
				      name ? name : "?");
	}
	size_t lost = json_array_size(json_object_get(pl, "lost"));
	if (lost && k > 0 && (size_t)k < sizeof line)
		snprintf(line + k, sizeof line - (size_t)k, "; %zu lost with their agent (%s)", lost,
			 view_str(pl, "on_agent_loss") ? view_str(pl, "on_agent_loss") : "?");
	kv_line(out, "placement", line);
}

/* The workers' clocks against the daemon's (docs/client.md, "One clock"):
 * how many were measured, the largest offset and bound, the drift. */
static void clock_line(FILE *out, json_t *clk)
{
	if (!json_is_object(clk))
		return;
	double measured = 0, bound, off_max = 0, drift_max = 0;
	int have_drift = 0;
	size_t i, n = json_array_size(json_object_get(clk, "workers"));
	json_t *w;
	json_array_foreach(json_object_get(clk, "workers"), i, w)
	{
		double off, d;
		if (view_num(w, "offset_ns", &off) && fabs(off) > fabs(off_max))
			off_max = off;
		if (view_num(w, "drift_ppm", &d) && (!have_drift || fabs(d) > fabs(drift_max))) {
			drift_max = d;
			have_drift = 1;
		}
	}
	view_num(clk, "measured", &measured);
	char a[VIEW_NUMLEN], b[VIEW_NUMLEN], c[VIEW_NUMLEN], line[400];
	if (!view_num(clk, "max_bound_ns", &bound)) {
		snprintf(line, sizeof line, "%zu worker(s), none measured (offsets taken as 0)", n);
	} else {
		int k = snprintf(line, sizeof line,
				 "%.0f of %zu worker(s) measured: largest offset %s ms, known to "
				 "+-%s ms",
				 measured, n, view_fmt_num(a, off_max / 1e6), view_fmt_num(b, bound / 1e6));
		if (have_drift && k > 0 && (size_t)k < sizeof line)
			snprintf(line + k, sizeof line - (size_t)k, "; drift up to %s ppm",
				 view_fmt_num(c, drift_max));
	}
	kv_line(out, "clock", line);
}

/* Where worker i ran: "local", or its agent's name (cleaned, cut) and
 * " (lost)" when it was lost with that agent. buf holds n bytes. */
static const char *worker_host(char *buf, size_t n, json_t *pl, long long i)
{
	snprintf(buf, n, "local");
	size_t k, j;
	json_t *a, *w;
	json_array_foreach(json_object_get(pl, "agents"), k, a)
	{
		json_array_foreach(json_object_get(a, "workers"), j, w)
		{
			if (!json_is_integer(w) || json_integer_value(w) != i)
				continue;
			view_scalar(buf, n < 25 ? n : 25, json_object_get(a, "name"));
		}
	}
	json_array_foreach(json_object_get(pl, "lost"), k, a)
	{
		double wi;
		size_t len = strlen(buf);
		if (view_num(a, "worker", &wi) && (long long)wi == i && len + 8 < n)
			snprintf(buf + len, n - len, " (lost)");
	}
	return buf;
}

#define CLOCK_ROWS 32 /* rows of the per-worker clock table shown at most */

/* Each worker's clock under the clock line (docs/cli.md, "show"): where it
 * ran, its offset, the bound on it and the drift, one row a worker, for a
 * run of more than one worker or a placed one (one local worker has
 * nothing the clock line does not say). */
static void clock_table(FILE *out, json_t *clk, json_t *pl)
{
	json_t *ws = json_object_get(clk, "workers");
	size_t n = json_array_size(ws);
	if (!json_is_object(clk) || n == 0 || (n < 2 && !json_is_object(pl)))
		return;
	fprintf(out, "  %-9s %-6s  %-24s  %12s  %13s  %11s\n", "", "worker", "ran on",
	        "offset (ms)", "+- bound (ms)", "drift (ppm)");
	size_t i;
	json_t *w;
	json_array_foreach(ws, i, w)
	{
		if (i == CLOCK_ROWS) {
			fprintf(out,
			        "  %-9s ... %zu more worker(s): GET /api/v1/runs/ID/summary, "
			        "\"clock\"\n",
			        "", n - CLOCK_ROWS);
			break;
		}
		double idx = (double)i, off, bound, drift;
		view_num(w, "worker", &idx);
		char host[40], o[32] = "-", b[32] = "-", d[32] = "-";
		worker_host(host, sizeof host, pl, (long long)idx);
		if (!json_is_true(json_object_get(w, "measured"))) {
			fprintf(out, "  %-9s %-6.0f  %-24s  %12s\n", "", idx, host,
			        "not measured (taken as 0)");
			continue;
		}
		if (view_num(w, "offset_ns", &off))
			snprintf(o, sizeof o, "%.3f", off / 1e6);
		if (view_num(w, "bound_ns", &bound))
			snprintf(b, sizeof b, "%.3f", bound / 1e6);
		if (view_num(w, "drift_ppm", &drift))
			snprintf(d, sizeof d, "%.2f", drift);
		fprintf(out, "  %-9s %-6.0f  %-24s  %12s  %13s  %11s\n", "", idx, host, o, b, d);
	}
}

/* GPU and server telemetry: which sources answered, and the headline
 * series over the profiling window. */
static void telemetry_block(FILE *out, json_t *t)
{
	if (!json_is_object(t))
		return;
	fputs("\nTelemetry\n", out);
	size_t i;
	json_t *src;
	json_array_foreach(json_object_get(t, "sources"), i, src)
	{
		const char *st = view_str(src, "status"), *d = view_str(src, "detail");
		char name[SCALAR_LEN], target[SCALAR_LEN];
		fprintf(out, "  %-7s %-11s %s%s%s\n",
			view_scalar(name, sizeof name, json_object_get(src, "source")),
			st ? st : "-",
			view_scalar(target, sizeof target, json_object_get(src, "target")),
			d && st && strcmp(st, "ok") != 0 ? ": " : "",
			d && st && strcmp(st, "ok") != 0 ? d : "");
	}
	json_t *ser;
	json_array_foreach(json_object_get(t, "series"), i, ser)
	{
		const char *name = view_str(ser, "name"), *kind = view_str(ser, "kind");
		const char *gpu = view_str(ser, "gpu");
		if (!name || !kind)
			continue;
		char a[VIEW_NUMLEN], b[VIEW_NUMLEN], c[VIEW_NUMLEN];
		double x, y, z;
		char who[64] = "";
		if (gpu && *gpu)
			snprintf(who, sizeof who, " [%.40s]", gpu);
		if (strcmp(kind, "gauge") == 0 && view_num(ser, "avg", &x) &&
		    view_num(ser, "max", &y) && view_num(ser, "min", &z))
			fprintf(out, "  %-34s avg %s  min %s  max %s%s\n", name,
				view_fmt_num(a, x), view_fmt_num(b, z), view_fmt_num(c, y), who);
		else if (strcmp(kind, "counter") == 0 && view_num(ser, "delta", &x))
			fprintf(out, "  %-34s +%s%s%s%s\n", name, view_fmt_num(a, x),
				view_num(ser, "rate", &y) ? "  (" : "",
				view_num(ser, "rate", &y) ? view_fmt_num(b, y) : "",
				view_num(ser, "rate", &y) ? "/s)" : "");
		else if (strcmp(kind, "histogram") == 0 && view_num(ser, "p50", &x) &&
			 view_num(ser, "p99", &y))
			fprintf(out, "  %-34s p50 %s  p99 %s%s\n", name, view_fmt_num(a, x),
				view_fmt_num(b, y), who);
	}
	double e;
	char eb[VIEW_NUMLEN];
	if (view_num(t, "energy_per_output_token_j", &e))
		fprintf(out, "  %-34s %s J\n", "energy per output token", view_fmt_num(eb, e));
}

const char *show_pct(char *buf, double v)
{
	char num[VIEW_NUMLEN];
	view_fmt_num(num, v);
	snprintf(buf, VIEW_NUMLEN + 2, "%s%s%%", v > 0 && strcmp(num, "-") ? "+" : "", num);
	return buf;
}

const char *show_unit(json_t *summary, const char *metric)
{
	if (!metric)
		return NULL;
	const char *u =
	    view_str(json_object_get(json_object_get(summary, "metrics"), metric), "unit");
	return u && *u ? u : NULL;
}

/* "metric.stat", or "metric" for a run-level figure (no stat, or "value"). */
static void metric_stat(struct dynbuf *b, json_t *obj)
{
	const char *metric = view_str(obj, "metric"), *stat = view_str(obj, "stat");
	if (stat && strcmp(stat, "value") == 0)
		stat = NULL;
	dynbuf_printf(b, "%s%s%s", metric ? metric : "?", stat ? "." : "", stat ? stat : "");
}

/* A dynbuf's text cleaned into buf (n bytes), cut at n - 1 bytes. */
static const char *take_text(char *buf, size_t n, struct dynbuf *b)
{
	char *c = view_clean(b->data ? b->data : "");
	snprintf(buf, n, "%s", c);
	free(c);
	dynbuf_release(b);
	return buf;
}

static int is_regression(json_t *g)
{
	const char *kind = view_str(g, "kind");
	return kind && strcmp(kind, "regression") == 0;
}

const char *show_gate_condition(char *buf, size_t n, json_t *g)
{
	struct dynbuf b;
	dynbuf_init(&b, 4096);
	metric_stat(&b, g);
	const char *op = view_str(g, "op");
	json_t *value = json_object_get(g, "value"), *max = json_object_get(g, "max_pct");
	char v[VIEW_NUMLEN];
	if (op && json_is_number(value))
		dynbuf_printf(&b, " %s %s%s", op, view_scalar(v, sizeof v, value),
		              is_regression(g) ? "%" : "");
	else if (is_regression(g) && json_is_number(max))
		dynbuf_printf(&b, " at most %s%% worse than the baseline",
		              view_scalar(v, sizeof v, max));
	return take_text(buf, n, &b);
}

const char *show_gate_name(char *buf, size_t n, json_t *g)
{
	const char *name = view_str(g, "name");
	if (name && *name) {
		char *c = view_clean(name);
		snprintf(buf, n, "%s", c);
		free(c);
		return buf;
	}
	return show_gate_condition(buf, n, g);
}

const char *show_gate_actual(char *buf, size_t n, json_t *g, json_t *summary)
{
	char num[VIEW_NUMLEN], pct[VIEW_NUMLEN + 2];
	double x, d;
	int has_diff = view_num(g, "diff_pct", &d);
	if (is_regression(g) && has_diff) {
		snprintf(buf, n, "%s", show_pct(pct, d));
		return buf;
	}
	if (!view_num(g, "actual", &x)) {
		snprintf(buf, n, "-");
		return buf;
	}
	const char *unit = show_unit(summary, view_str(g, "metric"));
	char *u = view_clean(unit ? unit : "");
	snprintf(buf, n, "%s%s%s", view_fmt_num(num, x), *u ? " " : "", u);
	free(u);
	return buf;
}

const char *show_gate_baseline(char *buf, size_t n, json_t *g, json_t *summary)
{
	if (!is_regression(g)) {
		snprintf(buf, n, "%s", "");
		return buf;
	}
	struct dynbuf b;
	dynbuf_init(&b, 4096);
	json_t *base = json_object_get(g, "baseline");
	const char *name = view_str(base, "name");
	dynbuf_printf(&b, "baseline%s%s", name ? " " : "", name ? name : "");
	json_t *runs = json_object_get(base, "runs");
	if (json_array_size(runs)) {
		dynbuf_printf(&b, "%s%s", name ? " (" : " ",
		              json_array_size(runs) == 1 ? "run " : "runs ");
		size_t i;
		json_t *r;
		json_array_foreach(runs, i, r)
		{
			char id[32];
			dynbuf_printf(&b, "%s%s", i ? "," : "", view_scalar(id, sizeof id, r));
		}
		if (name)
			dynbuf_addstr(&b, ")");
	}
	char x1[VIEW_NUMLEN], x2[VIEW_NUMLEN], p1[VIEW_NUMLEN + 2], p2[VIEW_NUMLEN + 2];
	double bv, hv, d;
	const char *unit = show_unit(summary, view_str(g, "metric"));
	if (view_num(g, "base", &bv) && view_num(g, "actual", &hv))
		dynbuf_printf(&b, ": %s -> %s%s%s", view_fmt_num(x1, bv), view_fmt_num(x2, hv),
		              unit ? " " : "", unit ? unit : "");
	if (view_num(g, "diff_pct", &d))
		dynbuf_printf(&b, ", %s", show_pct(p1, d));
	json_t *ci = json_object_get(g, "ci_pct");
	if (json_array_size(ci) == 2 && json_is_number(json_array_get(ci, 0)) &&
	    json_is_number(json_array_get(ci, 1)))
		dynbuf_printf(&b, " (CI %s .. %s)",
		              show_pct(p1, json_number_value(json_array_get(ci, 0))),
		              show_pct(p2, json_number_value(json_array_get(ci, 1))));
	const char *verdict = view_str(g, "verdict");
	if (verdict)
		dynbuf_printf(&b, ", %s", verdict);
	return take_text(buf, n, &b);
}

/* summary.validity: valid or not and why, then the percentile claims the
 * run's request count supports. */
static void validity_block(FILE *out, json_t *summary)
{
	json_t *v = json_object_get(summary, "validity");
	if (!json_is_object(v))
		return;
	json_t *valid = json_object_get(v, "valid");
	fprintf(out, "\nValidity: %s\n",
	        json_is_true(valid)    ? "valid"
	        : json_is_false(valid) ? "INVALID: the figures do not stand for the server"
	                               : "-");
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(v, "reasons"), i, r)
	{
		char *m = view_clean(view_str(r, "message") ? view_str(r, "message")
		                                            : view_str(r, "code"));
		fprintf(out, "  - %s\n", m);
		free(m);
	}
	json_t *c;
	json_array_foreach(json_object_get(v, "claims"), i, c)
	{
		struct dynbuf b;
		dynbuf_init(&b, 4096);
		metric_stat(&b, c);
		char a[VIEW_NUMLEN], bb[VIEW_NUMLEN], cc[VIEW_NUMLEN], d[VIEW_NUMLEN];
		double x, y;
		json_t *holds = json_object_get(c, "holds");
		if (view_num(c, "limit", &x)) {
			const char *unit = show_unit(summary, view_str(c, "metric"));
			dynbuf_printf(&b, " <= %s%s%s", view_fmt_num(a, x), unit ? " " : "",
			              unit ? unit : "");
		}
		dynbuf_printf(&b, ": %s",
		              json_is_true(holds)    ? "holds"
		              : json_is_false(holds) ? "does not hold"
		                                     : "-");
		int n_over = view_num(c, "over", &x) && view_num(c, "n", &y);
		if (n_over)
			dynbuf_printf(&b, " (%s of %s requests over",
			              view_scalar(a, sizeof a, json_object_get(c, "over")),
			              view_scalar(bb, sizeof bb, json_object_get(c, "n")));
		int few = view_num(c, "max_over", &x) && x < 0; /* n below min_n */
		if (n_over && !few && view_num(c, "max_over", &x))
			dynbuf_printf(&b, ", at most %s allowed",
			              view_scalar(cc, sizeof cc, json_object_get(c, "max_over")));
		if (n_over && view_num(c, "confidence", &x)) {
			snprintf(d, sizeof d, "%.4g", x * 100);
			dynbuf_printf(&b, " at %s%% confidence", d);
		}
		if (n_over && view_num(c, "min_n", &x))
			dynbuf_printf(&b, "; %sthe percentile needs %s requests",
			              few ? "too few: " : "",
			              view_scalar(a, sizeof a, json_object_get(c, "min_n")));
		if (n_over)
			dynbuf_addstr(&b, ")");
		char line[SCALAR_LEN];
		fprintf(out, "  claim %s\n", take_text(line, sizeof line, &b));
	}
}

/* summary.gates: each gate with its condition, actual figure and result;
 * under the table, a regression gate's baseline and the failures' messages. */
static void gates_block(FILE *out, json_t *summary)
{
	json_t *gates = json_object_get(summary, "gates");
	json_t *results = json_object_get(gates, "results");
	if (!json_is_object(gates) || !json_is_array(results))
		return;
	size_t failed = 0, i;
	json_t *g;
	json_array_foreach(results, i, g)
	{
		if (json_is_false(json_object_get(g, "passed")))
			failed++;
	}
	json_t *passed = json_object_get(gates, "passed");
	fprintf(out, "\nGates: %s",
	        json_is_true(passed)    ? "passed"
	        : json_is_false(passed) ? "FAILED"
	                                : "-");
	if (failed)
		fprintf(out, " (%zu of %zu failed)", failed, json_array_size(results));
	fputc('\n', out);
	if (!json_array_size(results))
		return;
	static const char *const titles[] = {"GATE", "KIND", "CONDITION", "ACTUAL", "RESULT"};
	struct table *t = table_new(HR_ARRAY_LEN(titles));
	for (size_t k = 0; k < HR_ARRAY_LEN(titles); k++)
		table_column(t, k, titles[k], k == 3 ? TABLE_RIGHT : TABLE_LEFT);
	json_array_foreach(results, i, g)
	{
		char name[SCALAR_LEN], cond[SCALAR_LEN], actual[SCALAR_LEN];
		json_t *ok = json_object_get(g, "passed");
		const char *cells[5] = {show_gate_name(name, sizeof name, g), view_str(g, "kind"),
		                        show_gate_condition(cond, sizeof cond, g),
		                        show_gate_actual(actual, sizeof actual, g, summary),
		                        json_is_true(ok)    ? "PASS"
		                        : json_is_false(ok) ? "FAIL"
		                                            : "-"};
		table_add_row(t, cells);
	}
	table_print(t, out, TABLE_PLAIN);
	table_free(t);
	json_array_foreach(results, i, g)
	{
		char name[SCALAR_LEN], base[SCALAR_LEN];
		show_gate_name(name, sizeof name, g);
		if (*show_gate_baseline(base, sizeof base, g, summary))
			fprintf(out, "  %s: %s\n", name, base);
		const char *msg = view_str(g, "message");
		if (json_is_false(json_object_get(g, "passed")) && msg && *msg) {
			char *m = view_clean(msg);
			fprintf(out, "  %s: %s\n", name, m);
			free(m);
		}
	}
}

/* The run's credibility card (docs/card.md): every item with its value and
 * where it came from, or "unknown" and how to fill it. */
static void card_block(FILE *out, json_t *card)
{
	json_t *items = json_object_get(card, "items");
	if (!json_is_array(items))
		return;
	fputs("\nCard\n", out);
	size_t i;
	json_t *it;
	json_array_foreach(items, i, it) {
		char *title = view_clean(view_str(it, "title"));
		char *text = view_clean(view_str(it, "text"));
		int unknown = json_is_true(json_object_get(it, "unknown"));
		char *more = view_clean(view_str(it, unknown ? "fill" : "source"));
		fprintf(out, "  %-34s %s%s%s%s\n", title, text, unknown ? "; " : " (",
			more, unknown ? "" : ")");
		free(title);
		free(text);
		free(more);
	}
}

void show_run(FILE *out, json_t *run)
{
	header(out, run);
	json_t *summary = json_object_get(run, "summary");
	if (!json_is_object(summary)) {
		const char *st = view_str(run, "state");
		int ended = st && (strcmp(st, "succeeded") == 0 || strcmp(st, "failed") == 0 ||
		                   strcmp(st, "cancelled") == 0 || strcmp(st, "interrupted") == 0);
		fputs(ended ? "\nNo summary: the run ended without one.\n" : "\nNo summary yet.\n",
		      out);
		card_block(out, json_object_get(run, "card"));
		return;
	}
	double window;
	char wbuf[VIEW_NUMLEN];
	fputc('\n', out);
	if (view_num(summary, "window_s", &window))
		fprintf(out, "Metrics (benchmark window %s s)\n", view_fmt_num(wbuf, window));
	else
		fputs("Metrics\n", out);
	metrics_table(out, json_object_get(summary, "metrics"));

	static const char *const count_order[] = {"requests", "valid", "errors", "warmup", NULL};
	json_t *counts = json_object_get(summary, "counts");
	if (json_is_object(counts)) {
		fputc('\n', out);
		pairs_line(out, "counts", counts, count_order);
	}
	load_line(out, json_object_get(summary, "load"));
	tokens_lines(out, json_object_get(summary, "tokens"));
	media_line(out, json_object_get(summary, "media"));
	clock_line(out, json_object_get(summary, "clock"));
	placement_line(out, json_object_get(summary, "placement"));
	clock_table(out, json_object_get(summary, "clock"), json_object_get(summary, "placement"));
	show_classes(out, run);
	errors_table(out, json_object_get(summary, "errors"));
	telemetry_block(out, json_object_get(summary, "telemetry"));
	validity_block(out, summary);
	gates_block(out, summary);
	card_block(out, json_object_get(run, "card"));
}
