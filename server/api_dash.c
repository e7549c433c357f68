/* api_dash.c - the routes that serve the dashboard: a run's records
 * bucketed on its clock (GET /api/v1/runs/{id}/timeseries), one metric's
 * CDF (/distribution), a few whole records (/requests), a run's
 * one-file HTML report (GET /api/v1/runs/{id}/report.html) and a running
 * run's server-sent events (/live, live.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiint.h"
#include "dashcache.h"
#include "dashdata.h"
#include "dynbuf.h"
#include "live.h"
#include "metrics.h"
#include "runs.h"
#include "timeseries.h"
#include "util.h"
#include "web_assets.h"

/* Whether run k->id has finished (its records no longer change, so its
 * answers may be cached: dashcache.h): 1, 0, or -1 with the answer (404,
 * 500) in *ret. */
static int run_final(struct call *k, enum MHD_Result *ret)
{
	json_t *run;
	if (api_run_get(k, 0, &run, ret) < 0)
		return -1;
	const char *st = json_string_value(json_object_get(run, "state"));
	int fin = st && strcmp(st, "queued") != 0 && strcmp(st, "running") != 0;
	json_decref(run);
	return fin;
}

/* 200 with the cached answer of key, when there is one. */
static int reply_cached(struct call *k, const char *key, enum MHD_Result *ret)
{
	size_t len;
	char *text = dashcache_get(key, &len);
	if (!text)
		return 0;
	*ret = reply_text(k->conn, 200, "application/json", text, len);
	return 1;
}

/* 200 with the answer built in out (taken), kept under key when fin. */
static enum MHD_Result reply_keep(struct call *k, struct dynbuf *out, int fin, const char *key)
{
	size_t len;
	char *text = dynbuf_take(out, &len);
	if (fin)
		dashcache_put(key, text, len);
	return reply_text(k->conn, 200, "application/json", text, len);
}

enum MHD_Result h_timeseries(struct call *k)
{
	long long step = 0;
	const char *s = arg(k->conn, "step_ms");
	if (s && parse_int(s, 1, 86400000, &step) < 0)
		return reply_error(k->conn, 400, "out_of_range", "step_ms",
				   "'step_ms' must be an integer from 1 to 86400000 (ms)");
	long long buckets = 0;
	const char *b = arg(k->conn, "buckets");
	if (b && parse_int(b, 1, HR_MAX_TS_BUCKETS, &buckets) < 0)
		return reply_error(k->conn, 400, "out_of_range", "buckets",
				   "'buckets' must be an integer from 1 to %d", HR_MAX_TS_BUCKETS);
	if (s && b)
		return reply_error(k->conn, 400, "invalid_value", "buckets",
				   "give 'step_ms' or 'buckets', not both");
	enum MHD_Result ret;
	int fin = run_final(k, &ret);
	if (fin < 0)
		return ret;
	char key[96];
	snprintf(key, sizeof key, "%lld timeseries %lld %lld", (long long)k->id, step, buckets);
	if (fin && reply_cached(k, key, &ret))
		return ret;
	char err[HR_ERRLEN];
	struct dynbuf out;
	dynbuf_init(&out, SIZE_MAX / 2);
	int rc = ts_build(k->a->store, k->id, step, (int)buckets, &out, err);
	if (rc == -2) {
		dynbuf_release(&out);
		return reply_error(k->conn, 400, "out_of_range", "step_ms", "%s", err);
	}
	if (rc < 0) {
		dynbuf_release(&out);
		return reply_internal(k->conn, err);
	}
	return reply_keep(k, &out, fin, key);
}

/* An embedded dashboard file (web_assets.h), or NULL. */
static const struct web_asset *asset(const char *path)
{
	for (int i = 0; i < web_assets_count; i++)
		if (strcmp(web_assets[i].path, path) == 0)
			return &web_assets[i];
	return NULL;
}

/* Appends JSON text for a <script> element: every '<' escaped, so no
 * "</script>" or "<!--" in the data can end or bend the element. */
static void add_script_json(struct dynbuf *out, const char *json, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (json[i] == '<')
			dynbuf_addstr(out, "\\u003c");
		else
			dynbuf_add(out, &json[i], 1);
	}
}

/* The run as one HTML file that opens from disk: uPlot, the styles and
 * report.js inlined, the run (with spec and summary) and its time series
 * as data. A download (Content-Disposition: attachment). */
enum MHD_Result h_report(struct call *k)
{
	json_t *run;
	enum MHD_Result ret;
	if (api_run_get(k, 1, &run, &ret) < 0)
		return ret;
	const struct web_asset *parts[] = {asset("/uPlot.min.css"), asset("/style.css"),
					   asset("/uPlot.iife.min.js"), asset("/report.js")};
	for (size_t i = 0; i < HR_ARRAY_LEN(parts); i++)
		if (!parts[i]) {
			json_decref(run);
			return reply_internal(k->conn, "the report's scripts are not built in");
		}
	struct dynbuf ts;
	dynbuf_init(&ts, SIZE_MAX / 2);
	char err[HR_ERRLEN];
	int rc = ts_build(k->a->store, k->id, 0, 200, &ts, err);
	/* the CDFs of TTFT, ITL and latency, as the run's page draws them */
	struct dynbuf dist;
	dynbuf_init(&dist, SIZE_MAX / 2);
	int dm[3], nd = 0;
	for (size_t i = 0; i < metric_defs_count; i++)
		if (strcmp(metric_defs[i].tag, "time_to_first_token") == 0 ||
		    strcmp(metric_defs[i].tag, "inter_token_latency") == 0 ||
		    strcmp(metric_defs[i].tag, "request_latency") == 0)
			dm[nd++] = (int)i;
	if (rc >= 0)
		rc = dash_distribution(k->a->store, k->id, dm, nd, 1000, &dist, err);
	if (rc < 0) {
		json_decref(run);
		dynbuf_release(&ts);
		dynbuf_release(&dist);
		return reply_internal(k->conn, err);
	}
	char *runtext = json_dumps(run, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(run);
	char now[32];
	fmt_time_ms(now, wall_ns() / 1000000);
	struct dynbuf out;
	dynbuf_init(&out, SIZE_MAX / 2);
	dynbuf_printf(&out,
		      "<!doctype html>\n<!-- A headroom run report: opens from disk, no server "
		      "needed. -->\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		      "<title>headroom run %lld</title>\n<style>\n",
		      (long long)k->id);
	dynbuf_add(&out, parts[0]->data, parts[0]->size);
	dynbuf_addstr(&out, "\n");
	dynbuf_add(&out, parts[1]->data, parts[1]->size);
	dynbuf_addstr(&out, "\n</style>\n</head>\n<body>\n<main id=\"view\"></main>\n<script>\n");
	dynbuf_add(&out, parts[2]->data, parts[2]->size);
	dynbuf_addstr(&out, "\n</script>\n<script>\nwindow.HEADROOM_REPORT = {\"generated_at\": \"");
	dynbuf_addstr(&out, now);
	dynbuf_addstr(&out, "\", \"run\": ");
	add_script_json(&out, runtext, strlen(runtext));
	dynbuf_addstr(&out, ", \"timeseries\": ");
	add_script_json(&out, ts.data, ts.len);
	dynbuf_addstr(&out, ", \"distribution\": ");
	add_script_json(&out, dist.data, dist.len);
	dynbuf_addstr(&out, "};\n</script>\n<script>\n");
	dynbuf_add(&out, parts[3]->data, parts[3]->size);
	dynbuf_addstr(&out, "\n</script>\n</body>\n</html>\n");
	free(runtext);
	dynbuf_release(&ts);
	dynbuf_release(&dist);
	size_t len;
	char *text = dynbuf_take(&out, &len);
	struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	char disp[96];
	snprintf(disp, sizeof disp, "attachment; filename=\"headroom-run-%lld.html\"", (long long)k->id);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
	MHD_add_response_header(r, "Content-Disposition", disp);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(k->conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result h_distribution(struct call *k)
{
	const char *m = arg(k->conn, "metric");
	if (!m)
		return reply_error(k->conn, 400, "missing_field", "metric",
				   "'metric' names per-request metrics (time_to_first_token,...)");
	int metrics[DASH_MAX_METRICS], n = 0;
	for (const char *p = m;; p++) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		int found = -1;
		for (size_t i = 0; i < metric_defs_count; i++)
			if (strlen(metric_defs[i].tag) == len && memcmp(metric_defs[i].tag, p, len) == 0)
				found = (int)i;
		for (int j = 0; j < n && found >= 0; j++)
			if (metrics[j] == found)
				found = -2;
		if (found < 0 || n == DASH_MAX_METRICS)
			return reply_error(k->conn, 400, "invalid_value", "metric",
					   "'metric' must be 1 to %d distinct per-request metrics "
					   "(docs/metrics.md), separated by commas",
					   DASH_MAX_METRICS);
		metrics[n++] = found;
		if (!e)
			break;
		p = e;
	}
	long long points = 1000;
	const char *p = arg(k->conn, "points");
	if (p && parse_int(p, 2, HR_MAX_DIST_POINTS, &points) < 0)
		return reply_error(k->conn, 400, "out_of_range", "points",
				   "'points' must be an integer from 2 to %d", HR_MAX_DIST_POINTS);
	enum MHD_Result ret;
	int fin = run_final(k, &ret);
	if (fin < 0)
		return ret;
	char key[160];
	int kl = snprintf(key, sizeof key, "%lld distribution %lld", (long long)k->id, points);
	for (int i = 0; i < n; i++)
		kl += snprintf(key + kl, sizeof key - (size_t)kl, " %d", metrics[i]);
	if (fin && reply_cached(k, key, &ret))
		return ret;
	struct dynbuf out;
	char err[HR_ERRLEN];
	dynbuf_init(&out, SIZE_MAX / 2);
	if (dash_distribution(k->a->store, k->id, metrics, n, (int)points, &out, err) < 0) {
		dynbuf_release(&out);
		return reply_internal(k->conn, err);
	}
	return reply_keep(k, &out, fin, key);
}

enum MHD_Result h_requests(struct call *k)
{
	const char *o = arg(k->conn, "order");
	enum dash_order order = DASH_SLOWEST;
	if (o && strcmp(o, "failed") == 0)
		order = DASH_FAILED;
	else if (o && strcmp(o, "seq") == 0)
		order = DASH_SEQ;
	else if (o && strcmp(o, "slowest") != 0)
		return reply_error(k->conn, 400, "invalid_value", "order",
				   "'order' must be slowest, failed or seq");
	long long limit = 15;
	const char *l = arg(k->conn, "limit");
	if (l && parse_int(l, 1, 100, &limit) < 0)
		return reply_error(k->conn, 400, "out_of_range", "limit",
				   "'limit' must be an integer from 1 to 100");
	/* from=WORKER/SEQ: where order=seq starts (the "next" of a page) */
	long long fw = 0, fs = 0;
	const char *f = arg(k->conn, "from");
	if (f) {
		char w[24], q[24];
		const char *slash = strchr(f, '/');
		size_t wl = slash ? (size_t)(slash - f) : 0;
		if (order != DASH_SEQ)
			return reply_error(k->conn, 400, "invalid_value", "from",
					   "'from' goes with order=seq");
		if (!slash || wl == 0 || wl >= sizeof w || strlen(slash + 1) >= sizeof q)
			return reply_error(k->conn, 400, "invalid_value", "from",
					   "'from' must be WORKER/SEQ, e.g. 0/120");
		memcpy(w, f, wl);
		w[wl] = 0;
		snprintf(q, sizeof q, "%s", slash + 1);
		if (parse_int(w, 0, UINT32_MAX, &fw) < 0 || parse_int(q, 0, INT64_MAX, &fs) < 0)
			return reply_error(k->conn, 400, "invalid_value", "from",
					   "'from' must be WORKER/SEQ, e.g. 0/120");
	}
	enum MHD_Result ret;
	int fin = run_final(k, &ret);
	if (fin < 0)
		return ret;
	/* the slowest and failed lists read every record: kept; a page is cheap */
	fin = fin && order != DASH_SEQ;
	char key[96];
	snprintf(key, sizeof key, "%lld requests %d %lld", (long long)k->id, (int)order, limit);
	if (fin && reply_cached(k, key, &ret))
		return ret;
	struct dynbuf out;
	char err[HR_ERRLEN];
	dynbuf_init(&out, SIZE_MAX / 2);
	if (dash_requests(k->a->store, k->id, order, (int)limit, (uint32_t)fw, (uint64_t)fs, &out,
			  err) < 0) {
		dynbuf_release(&out);
		return reply_internal(k->conn, err);
	}
	return reply_keep(k, &out, fin, key);
}

/* GET /runs/{id}/live: server-sent events of a queued or running run (a
 * finished one gets its hello and end events at once). */
enum MHD_Result h_live(struct call *k)
{
	json_t *run;
	enum MHD_Result ret;
	if (api_run_get(k, 0, &run, &ret) < 0)
		return ret;
	char state[16];
	snprintf(state, sizeof state, "%s", json_string_value(json_object_get(run, "state")) ?: "");
	json_decref(run);
	struct MHD_Response *r = live_response(k->conn, k->id, state);
	if (!r)
		return reply_retry(k->conn, 503, "busy", HR_RETRY_AFTER_S,
				   "%d live streams are open, the most at once: retry in a moment",
				   HR_MAX_LIVE_STREAMS);
	ret = MHD_queue_response(k->conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}
