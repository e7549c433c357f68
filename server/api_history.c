/* api_history.c - the history routes of the REST API (docs/api.md):
 * filtered run lists, label and note edits, deletion, repeat groups,
 * comparisons, baselines and series. Handlers validate their input and
 * hand the work to history.c / compare.c. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiint.h"
#include "auth.h"
#include "card.h"
#include "compare.h"
#include "history.h"
#include "metrics.h"
#include "runs.h"
#include "util.h"

#define COMPARE_MAX_RESAMPLES 100000
#define SERIES_MAX_POINTS 100000

/* --- query parsing ----------------------------------------------------------- */

struct qctx {
	struct run_query *q;
	char field[300];
	char msg[400];
	int bad;
};

static enum MHD_Result collect_selector(void *cls, enum MHD_ValueKind kind, const char *key,
					const char *value)
{
	struct qctx *c = cls;
	if (c->bad || strncmp(key, "label.", 6) != 0)
		return MHD_YES;
	if (c->q->n_sel == HISTORY_MAX_SELECTORS) {
		c->bad = 1;
		snprintf(c->field, sizeof c->field, "%.200s", key);
		snprintf(c->msg, sizeof c->msg, "at most %d label selectors", HISTORY_MAX_SELECTORS);
		return MHD_NO;
	}
	char err[HR_ERRLEN];
	if (history_parse_selector(key, value, &c->q->sel[c->q->n_sel], err) < 0) {
		c->bad = 1;
		snprintf(c->field, sizeof c->field, "%.200s", key);
		snprintf(c->msg, sizeof c->msg, "%.300s", err);
		return MHD_NO;
	}
	c->q->n_sel++;
	return MHD_YES;
}

static const char *const run_states[] = {RUN_QUEUED, RUN_RUNNING,   RUN_SUCCEEDED,
					 RUN_FAILED, RUN_CANCELLED, RUN_INTERRUPTED};

/* The filters shared by GET /runs and GET /series. 0, or -1 with the
 * error in c. */
static int parse_filters(struct MHD_Connection *conn, struct run_query *q, struct qctx *c)
{
	memset(q, 0, sizeof *q);
	c->q = q;
	q->limit = HR_DEFAULT_PAGE_LIMIT;
	q->sort_desc = 1;
	q->since_ms = q->until_ms = -1;
#define BAD(f, ...)                                                                          \
	do {                                                                                 \
		snprintf(c->field, sizeof c->field, "%s", f);                                \
		snprintf(c->msg, sizeof c->msg, __VA_ARGS__);                                \
		return -1;                                                                   \
	} while (0)
	const char *s = arg(conn, "state");
	if (s) {
		for (size_t i = 0; i < HR_ARRAY_LEN(run_states); i++)
			if (strcmp(s, run_states[i]) == 0)
				q->state = run_states[i];
		if (!q->state)
			BAD("state", "'state' must be one of queued, running, succeeded, failed, "
				     "cancelled, interrupted");
	}
	if ((s = arg(conn, "name"))) {
		if (strlen(s) > HR_MAX_NAME_LEN)
			BAD("name", "'name' is longer than %d bytes", HR_MAX_NAME_LEN);
		q->name = s;
	}
	if ((s = arg(conn, "since")) && api_parse_time(s, &q->since_ms) < 0)
		BAD("since", "'since' must be an RFC 3339 UTC time (2026-12-01T10:00:00Z), a date "
			     "(2026-12-01) or Unix seconds");
	if ((s = arg(conn, "until")) && api_parse_time(s, &q->until_ms) < 0)
		BAD("until", "'until' must be an RFC 3339 UTC time (2026-12-01T10:00:00Z), a date "
			     "(2026-12-01) or Unix seconds");
	if ((s = arg(conn, "fingerprint"))) {
		int ok = strlen(s) == HISTORY_FP_LEN;
		for (const char *p = s; ok && *p; p++)
			ok = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f');
		if (!ok)
			BAD("fingerprint", "'fingerprint' must be %d lower-case hex digits",
			    HISTORY_FP_LEN);
		q->fingerprint = s;
	}
	long long v;
	if ((s = arg(conn, "group"))) {
		if (parse_int(s, 1, INT64_MAX, &v) < 0)
			BAD("group", "'group' must be a group id");
		q->group_id = v;
	}
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_selector, c);
	if (c->bad)
		return -1;
#undef BAD
	return 0;
}

static enum MHD_Result bad_query(struct call *k, const struct qctx *c)
{
	return reply_error(k->conn, 400, "invalid_value", c->field, "%s", c->msg);
}

/* --- runs -------------------------------------------------------------------- */

enum MHD_Result h_list(struct call *k)
{
	struct run_query q;
	struct qctx c = {0};
	long long limit = HR_DEFAULT_PAGE_LIMIT, before = 0;
	const char *s = arg(k->conn, "limit");
	if (s && parse_int(s, 1, HR_MAX_PAGE_LIMIT, &limit) < 0)
		return reply_error(k->conn, 400, "out_of_range", "limit",
				   "'limit' must be an integer from 1 to %d", HR_MAX_PAGE_LIMIT);
	s = arg(k->conn, "before");
	if (s && parse_int(s, 1, INT64_MAX, &before) < 0)
		return reply_error(k->conn, 400, "invalid_value", "before",
				   "'before' must be a positive run id");
	if (parse_filters(k->conn, &q, &c) < 0)
		return bad_query(k, &c);
	q.limit = (int)limit;
	q.before = before;
	struct sort_key sk;
	if ((s = arg(k->conn, "sort"))) {
		if (api_parse_sort(s, &sk) == 0) {
			q.sort_by = sk.by;
			q.sort_desc = sk.desc;
			q.sort_metric = sk.metric;
			q.sort_stat = sk.stat;
		} else
			return reply_error(k->conn, 400, "invalid_value", "sort",
					   "'sort' must be id, name, created_at, verdict, valid or "
					   "METRIC.STAT (e.g. time_to_first_token.p99), with '-' for "
					   "descending");
	}
	if (q.before && !(q.sort_by == SORT_ID && q.sort_desc))
		return reply_error(k->conn, 400, "invalid_value", "before",
				   "'before' pages the default order (-id); use 'cursor' with "
				   "'sort'");
	q.cursor = arg(k->conn, "cursor");
	json_t *out;
	char err[HR_ERRLEN];
	int rc = history_list(k->a->store, &q, &out, err);
	if (rc == -400)
		return reply_error(k->conn, 400, "invalid_value", "cursor", "%s", err);
	if (rc < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 200, out);
}

static json_t *body_json(struct call *k, enum MHD_Result *ret)
{
	json_error_t je;
	json_t *body = json_loadb(k->body, k->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!body)
		*ret = reply_error(k->conn, 400, "invalid_json", NULL, "the body is not JSON: %s",
				   je.text);
	return body;
}

enum MHD_Result h_patch(struct call *k)
{
	enum MHD_Result ret;
	json_t *body = body_json(k, &ret);
	if (!body)
		return ret;
	char field[256], err[HR_ERRLEN];
	int rc = history_patch(k->a->store, k->id, body, field, err);
	json_decref(body);
	if (rc == -400)
		return reply_error(k->conn, 400, "invalid_value", field[0] ? field : NULL, "%s",
				   err);
	if (rc == -404)
		return not_found(k);
	if (rc < 0)
		return reply_internal(k->conn, err);
	json_t *run;
	if (runs_get(k->a->store, k->id, 1, &run, err) < 0)
		return reply_internal(k->conn, err);
	auth_run_members(k->a->store, k->id, run); /* as GET /runs/{id} */
	card_run_member(k->a->store, k->id, run);
	return reply_json(k->conn, 200, run);
}

static enum MHD_Result no_content(struct MHD_Connection *c)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret = MHD_queue_response(c, 204, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result h_delete(struct call *k)
{
	char err[HR_ERRLEN];
	int rc = history_delete(k->a->store, k->id, err);
	if (rc == -404)
		return not_found(k);
	if (rc == -409)
		return reply_error(k->conn, 409, "conflict", "id", "%s", err);
	if (rc < 0)
		return reply_internal(k->conn, err);
	return no_content(k->conn);
}

static int parse_conf(struct MHD_Connection *conn, double *conf)
{
	const char *s = arg(conn, "confidence");
	return s ? api_parse_real(s, 0.5, 0.9999, conf) : 0;
}

enum MHD_Result h_group(struct call *k)
{
	double conf = 0.95;
	if (parse_conf(k->conn, &conf) < 0)
		return reply_error(k->conn, 400, "out_of_range", "confidence",
				   "'confidence' must be a number from 0.5 to 0.9999");
	json_t *out;
	char err[HR_ERRLEN];
	int rc = history_group(k->a->store, k->id, conf, &out, err);
	if (rc == -404)
		return reply_error(k->conn, 404, "not_found", "id", "no group %lld",
				   (long long)k->id);
	if (rc < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 200, out);
}

/* --- compare ------------------------------------------------------------------ */

/* A side of a comparison: "12", "12,13,14", "group:5" or "baseline:NAME"
 * into finished run ids. Returns the count, or 0 with the error reply
 * queued in *ret. */
static int resolve_ref(struct call *k, const char *field, int64_t *ids, enum MHD_Result *ret)
{
	const char *s = arg(k->conn, field);
	char err[HR_ERRLEN];
	int n = 0;
	if (!s) {
		*ret = reply_error(k->conn, 400, "missing_field", field,
				   "'%s' is required: a run id, ids separated by commas, "
				   "group:ID or baseline:NAME",
				   field);
		return 0;
	}
	if (strncmp(s, "group:", 6) == 0) {
		long long g;
		if (parse_int(s + 6, 1, INT64_MAX, &g) < 0) {
			*ret = reply_error(k->conn, 400, "invalid_value", field,
					   "'%s': group:ID needs a group id", field);
			return 0;
		}
		n = history_group_runs(k->a->store, g, ids, COMPARE_MAX_RUNS, err);
		if (n == -404 || n == 0) {
			*ret = reply_error(k->conn, 404, "not_found", field,
					   n ? "no group %lld" : "group %lld has no runs", g);
			return 0;
		}
	} else if (strncmp(s, "baseline:", 9) == 0) {
		n = history_baseline_runs(k->a->store, s + 9, 0, ids, COMPARE_MAX_RUNS, err);
		if (n == -404 || n == 0) {
			*ret = reply_error(k->conn, 404, "not_found", field,
					   n ? "no baseline named '%.100s'"
					     : "baseline '%.100s' has no run to compare with",
					   s + 9);
			return 0;
		}
	} else {
		n = api_parse_id_list(s, ids, COMPARE_MAX_RUNS);
		if (n <= 0) {
			*ret = reply_error(k->conn, 400, "invalid_value", field,
					   "'%s' must be a run id, up to %d ids separated by commas, "
					   "group:ID or baseline:NAME",
					   field, COMPARE_MAX_RUNS);
			return 0;
		}
	}
	if (n < 0) {
		*ret = reply_internal(k->conn, err);
		return 0;
	}
	/* every run must exist and be finished, with a summary; a group stands
	 * for its succeeded runs (as a group baseline does) */
	int group = strncmp(s, "group:", 6) == 0, kept = 0;
	for (int i = 0; i < n; i++) {
		json_t *run;
		int rc = runs_get(k->a->store, ids[i], 1, &run, err);
		if (rc == -404) {
			*ret = reply_error(k->conn, 404, "not_found", field, "no run with id %lld",
					   (long long)ids[i]);
			return 0;
		}
		if (rc < 0) {
			*ret = reply_internal(k->conn, err);
			return 0;
		}
		char state[32];
		const char *st = json_string_value(json_object_get(run, "state"));
		snprintf(state, sizeof state, "%s", st ? st : "?");
		int has = json_is_object(json_object_get(run, "summary"));
		json_decref(run);
		if (group && run_state_is_terminal(state) && strcmp(state, RUN_SUCCEEDED) != 0)
			continue;
		if (!run_state_is_terminal(state) || !has) {
			*ret = reply_error(k->conn, 409, "not_ready", field,
					   "run %lld has not finished with a summary (it is %s)",
					   (long long)ids[i], state);
			return 0;
		}
		ids[kept++] = ids[i];
	}
	if (kept == 0) {
		*ret = reply_error(k->conn, 404, "not_found", field, "%s has no succeeded run", s);
		return 0;
	}
	return kept;
}

enum MHD_Result h_compare(struct call *k)
{
	struct cmp_opts o;
	cmp_opts_default(&o);
	if (parse_conf(k->conn, &o.conf) < 0)
		return reply_error(k->conn, 400, "out_of_range", "confidence",
				   "'confidence' must be a number from 0.5 to 0.9999");
	const char *s = arg(k->conn, "noise_pct");
	if (s) {
		char *end;
		o.noise_pct = strtod(s, &end);
		if (end == s || *end || !(o.noise_pct >= 0 && o.noise_pct <= 1000))
			return reply_error(k->conn, 400, "out_of_range", "noise_pct",
					   "'noise_pct' must be a number from 0 to 1000");
	}
	long long v;
	if ((s = arg(k->conn, "resamples"))) {
		if (parse_int(s, 100, COMPARE_MAX_RESAMPLES, &v) < 0)
			return reply_error(k->conn, 400, "out_of_range", "resamples",
					   "'resamples' must be an integer from 100 to %d",
					   COMPARE_MAX_RESAMPLES);
		o.resamples = (unsigned)v;
	}
	if ((s = arg(k->conn, "seed"))) {
		if (parse_int(s, 0, INT64_MAX, &v) < 0)
			return reply_error(k->conn, 400, "invalid_value", "seed",
					   "'seed' must be a non-negative integer");
		o.seed = (uint64_t)v;
	}
	int64_t base[COMPARE_MAX_RUNS], head[COMPARE_MAX_RUNS];
	enum MHD_Result ret;
	int nb = resolve_ref(k, "base", base, &ret);
	if (!nb)
		return ret;
	int nh = resolve_ref(k, "head", head, &ret);
	if (!nh)
		return ret;
	char err[HR_ERRLEN];
	json_t *out = compare_runs(k->a->store, base, nb, head, nh, &o, err);
	if (!out)
		return reply_internal(k->conn, err);
	json_object_set_new(json_object_get(out, "base"), "ref", json_string(arg(k->conn, "base")));
	json_object_set_new(json_object_get(out, "head"), "ref", json_string(arg(k->conn, "head")));
	return reply_json(k->conn, 200, out);
}

/* --- series -------------------------------------------------------------------- */

static int parse_real(struct MHD_Connection *conn, const char *name, double lo, double hi,
		      double *out)
{
	const char *s = arg(conn, name);
	return s ? api_parse_real(s, lo, hi, out) : 0;
}

enum MHD_Result h_series(struct call *k)
{
	struct run_query q;
	struct qctx c = {0};
	if (parse_filters(k->conn, &q, &c) < 0)
		return bad_query(k, &c);
	if (q.state && strcmp(q.state, RUN_SUCCEEDED) != 0)
		return reply_error(k->conn, 400, "invalid_value", "state",
				   "a series is made of succeeded runs only");
	q.state = NULL;
	struct series_opts o = {.lookback = 10, .z = 3, .noise_pct = 5, .conf = 0.95};
	const char *m = arg(k->conn, "metric");
	const struct metric_info *mi = m ? metric_info(m) : NULL;
	if (!mi)
		return reply_error(k->conn, m ? 400 : 400, m ? "invalid_value" : "missing_field",
				   "metric", "'metric' must name a metric (docs/metrics.md), e.g. "
					     "time_to_first_token");
	o.metric = mi->tag;
	const char *st = arg(k->conn, "stat");
	o.stat = metric_stat_index(st ? st : mi->run_level ? "value" : "avg");
	if (o.stat < 0 || (mi->run_level && o.stat != 0) ||
	    (!mi->run_level && st && strcmp(st, "value") == 0))
		return reply_error(k->conn, 400, "invalid_value", "stat",
				   mi->run_level ? "'stat' of %s must be value"
						 : "'stat' of %s must be avg, min, max, std or a "
						   "percentile p1 ... p99",
				   mi->tag);
	const char *gb = arg(k->conn, "group_by");
	if (gb) {
		if (strncmp(gb, "label.", 6) != 0 || !gb[6] || strlen(gb + 6) > HR_MAX_LABEL_LEN)
			return reply_error(k->conn, 400, "invalid_value", "group_by",
					   "'group_by' must be label.KEY");
		o.group_by = gb + 6;
	}
	long long v;
	const char *s = arg(k->conn, "limit");
	q.limit = 1000;
	if (s) {
		if (parse_int(s, 1, SERIES_MAX_POINTS, &v) < 0)
			return reply_error(k->conn, 400, "out_of_range", "limit",
					   "'limit' must be an integer from 1 to %d",
					   SERIES_MAX_POINTS);
		q.limit = (int)v;
	}
	if ((s = arg(k->conn, "lookback"))) {
		if (parse_int(s, 2, 1000, &v) < 0)
			return reply_error(k->conn, 400, "out_of_range", "lookback",
					   "'lookback' must be an integer from 2 to 1000");
		o.lookback = (int)v;
	}
	if (parse_real(k->conn, "z", 0.5, 100, &o.z) < 0)
		return reply_error(k->conn, 400, "out_of_range", "z",
				   "'z' must be a number from 0.5 to 100");
	if (parse_real(k->conn, "noise_pct", 0, 1000, &o.noise_pct) < 0)
		return reply_error(k->conn, 400, "out_of_range", "noise_pct",
				   "'noise_pct' must be a number from 0 to 1000");
	if (parse_conf(k->conn, &o.conf) < 0)
		return reply_error(k->conn, 400, "out_of_range", "confidence",
				   "'confidence' must be a number from 0.5 to 0.9999");
	char *out, err[HR_ERRLEN];
	size_t len;
	if (history_series(k->a->store, &q, &o, &out, &len, err) < 0)
		return reply_internal(k->conn, err);
	return reply_text(k->conn, 200, "application/json", out, len);
}

/* --- baselines ------------------------------------------------------------------ */

static int bad_name(struct call *k, enum MHD_Result *ret)
{
	if (k->name[0])
		return 0;
	*ret = reply_error(k->conn, 400, "invalid_value", "name",
			   "a baseline's name is 1 to %d characters of A-Z a-z 0-9 . _ -",
			   HR_MAX_LABEL_LEN);
	return 1;
}

enum MHD_Result h_baseline_put(struct call *k)
{
	enum MHD_Result ret;
	if (bad_name(k, &ret))
		return ret;
	json_t *body = body_json(k, &ret);
	if (!body)
		return ret;
	char field[256], err[HR_ERRLEN];
	int created = 0;
	int rc = history_baseline_put(k->a->store, k->name, body, &created, field, err);
	json_decref(body);
	if (rc == -400)
		return reply_error(k->conn, 400, "invalid_value", field[0] ? field : NULL, "%s",
				   err);
	if (rc == -404)
		return reply_error(k->conn, 404, "not_found", field[0] ? field : NULL, "%s", err);
	if (rc < 0)
		return reply_internal(k->conn, err);
	json_t *out;
	if (history_baseline_get(k->a->store, k->name, &out, err) < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, created ? 201 : 200, out);
}

enum MHD_Result h_baseline_get(struct call *k)
{
	enum MHD_Result ret;
	if (bad_name(k, &ret))
		return ret;
	json_t *out;
	char err[HR_ERRLEN];
	int rc = history_baseline_get(k->a->store, k->name, &out, err);
	if (rc == -404)
		return reply_error(k->conn, 404, "not_found", "name", "no baseline named '%s'",
				   k->name);
	if (rc < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 200, out);
}

enum MHD_Result h_baseline_list(struct call *k)
{
	json_t *out;
	char err[HR_ERRLEN];
	if (history_baseline_list(k->a->store, &out, err) < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 200, out);
}

enum MHD_Result h_baseline_delete(struct call *k)
{
	enum MHD_Result ret;
	if (bad_name(k, &ret))
		return ret;
	char err[HR_ERRLEN];
	int rc = history_baseline_delete(k->a->store, k->name, err);
	if (rc == -404)
		return reply_error(k->conn, 404, "not_found", "name", "no baseline named '%s'",
				   k->name);
	if (rc < 0)
		return reply_internal(k->conn, err);
	return no_content(k->conn);
}
