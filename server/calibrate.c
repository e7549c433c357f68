/* calibrate.c - calibrations of this host's client ceiling (calibrate.h). */
#include "calibrate.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "limits.h"
#include "runs.h"
#include "spec.h"
#include "util.h"

#define CAL_MAX_POINTS 8
#define CAL_BUSY_SATURATED 0.9 /* the worker was the limit when its loop was this busy */

/* --- the request --------------------------------------------------------------- */

struct cal_params {
	int osl[CAL_MAX_POINTS], n;
	int isl, concurrency;
	double duration_s;
};

static int bad(char *field, char *msg, const char *f, const char *m)
{
	snprintf(field, 256, "%s", f);
	snprintf(msg, 256, "%s", m);
	return -400;
}

static int get_int(json_t *body, const char *key, int def, int lo, int hi, int *out, char *field,
		   char *msg)
{
	json_t *v = json_object_get(body, key);
	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		char m[256];
		snprintf(m, sizeof m, "'%s' must be an integer from %d to %d", key, lo, hi);
		return bad(field, msg, key, m);
	}
	*out = (int)json_integer_value(v);
	return 0;
}

static int parse_params(json_t *body, struct cal_params *p, char *field, char *msg)
{
	if (!json_is_object(body))
		return bad(field, msg, "", "the body must be a JSON object");
	const char *key;
	json_t *v;
	json_object_foreach(body, key, v)
	{
		if (strcmp(key, "osl") && strcmp(key, "isl") && strcmp(key, "concurrency") &&
		    strcmp(key, "duration_s")) {
			char m[256];
			snprintf(m, sizeof m, "unknown field '%.100s' (osl, isl, concurrency, "
					      "duration_s)", key);
			return bad(field, msg, key, m);
		}
	}
	json_t *osl = json_object_get(body, "osl");
	if (!osl || json_is_null(osl)) {
		static const int def[] = {16, 128, 512};
		p->n = 3;
		memcpy(p->osl, def, sizeof def);
	} else {
		if (!json_is_array(osl) || json_array_size(osl) < 1 ||
		    json_array_size(osl) > CAL_MAX_POINTS)
			return bad(field, msg, "osl", "'osl' must be an array of 1 to 8 output lengths");
		p->n = 0;
		size_t i;
		json_array_foreach(osl, i, v)
		{
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > 65536)
				return bad(field, msg, "osl",
					   "'osl' entries must be integers from 1 to 65536");
			int o = (int)json_integer_value(v);
			for (int k = 0; k < p->n; k++)
				if (p->osl[k] == o)
					return bad(field, msg, "osl", "'osl' repeats a value");
			p->osl[p->n++] = o;
		}
		/* ascending: the verdict interpolates between neighbours */
		for (int a = 1; a < p->n; a++)
			for (int b = a; b > 0 && p->osl[b - 1] > p->osl[b]; b--) {
				int t = p->osl[b];
				p->osl[b] = p->osl[b - 1];
				p->osl[b - 1] = t;
			}
	}
	if (get_int(body, "isl", 128, 1, 65536, &p->isl, field, msg) < 0 ||
	    get_int(body, "concurrency", 64, 1, 4096, &p->concurrency, field, msg) < 0)
		return -400;
	json_t *d = json_object_get(body, "duration_s");
	p->duration_s = 3;
	if (d && !json_is_null(d)) {
		if (!json_is_number(d) || json_number_value(d) < 0.5 || json_number_value(d) > 600)
			return bad(field, msg, "duration_s",
				   "'duration_s' must be a number from 0.5 to 600");
		p->duration_s = json_number_value(d);
	}
	return 0;
}

static json_t *params_json(const struct cal_params *p)
{
	json_t *osl = json_array();
	for (int i = 0; i < p->n; i++)
		json_array_append_new(osl, json_integer(p->osl[i]));
	return json_pack("{s:o, s:i, s:i, s:f}", "osl", osl, "isl", p->isl, "concurrency",
			 p->concurrency, "duration_s", p->duration_s);
}

static json_t *run_spec(int64_t id, const struct cal_params *p, int osl)
{
	char name[96], label[32];
	snprintf(name, sizeof name, "calibration %lld: output length %d", (long long)id, osl);
	snprintf(label, sizeof label, "%lld", (long long)id);
	return json_pack(
	    "{s:s, s:{s:s}, s:{s:b, s:s, s:s, s:b},"
	    " s:{s:s, s:{s:i, s:i}, s:{s:i, s:i}, s:i},"
	    " s:{s:s, s:i, s:f}, s:i, s:{s:b, s:b, s:[]}, s:{s:b}}",
	    "name", name, "labels", "calibration", label, "target", "mock", 1, "endpoint", "chat",
	    "model", "mock-model", "stream", 1, "workload", "kind", "synthetic", "isl", "mean",
	    p->isl, "stddev", 0, "osl", "mean", osl, "stddev", 0, "seed", 1, "load", "mode",
	    "concurrency", "concurrency", p->concurrency, "duration_s", p->duration_s, "workers", 1,
	    "telemetry", "nvml", 0, "server_metrics", 0, "dcgm_urls", "client",
	    "allow_client_bound", 1);
}

/* --- store jobs ------------------------------------------------------------------- */

struct create_args {
	json_t *params;
	char host[256];
	int64_t id;
};

static int create_job(struct store_tx *tx, void *arg, char *err)
{
	struct create_args *a = arg;
	static const char sql[] = "INSERT INTO calibrations (created_ns, state, host, params, "
				  "run_ids) VALUES (?, 'running', ?, ?, '[]')";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	char *params = json_dumps(a->params, JSON_COMPACT);
	sqlite3_bind_int64(st, 1, wall_ns());
	sqlite3_bind_text(st, 2, a->host, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, params, -1, free);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "calibration insert: %s", sqlite3_errmsg(tx->db));
	a->id = sqlite3_last_insert_rowid(tx->db);
	return 0;
}

struct update_args {
	int64_t id;
	const char *state; /* NULL: only run_ids */
	char *run_ids, *result, *error;
};

static int update_job(struct store_tx *tx, void *arg, char *err)
{
	struct update_args *a = arg;
	if (!a->state) {
		static const char sql[] = "UPDATE calibrations SET run_ids = ? WHERE id = ?";
		sqlite3_stmt *st = store_tx_stmt(tx, sql);
		sqlite3_bind_text(st, 1, a->run_ids, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, a->id);
		if (sqlite3_step(st) != SQLITE_DONE)
			return errf(err, "calibration update: %s", sqlite3_errmsg(tx->db));
		return 0;
	}
	/* finish once: a calibration already over stays as it is */
	static const char sql[] = "UPDATE calibrations SET state = ?, finished_ns = ?, result = ?, "
				  "error = ? WHERE id = ? AND state = 'running'";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_text(st, 1, a->state, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, wall_ns());
	if (a->result)
		sqlite3_bind_text(st, 3, a->result, -1, SQLITE_STATIC);
	if (a->error)
		sqlite3_bind_text(st, 4, a->error, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, a->id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "calibration update: %s", sqlite3_errmsg(tx->db));
	return 0;
}

int calib_create(struct store *s, json_t *body, int64_t *id, char *field, char *msg)
{
	struct cal_params p;
	int rc = parse_params(body, &p, field, msg);
	if (rc < 0)
		return rc;
	struct create_args a = {.params = params_json(&p)};
	if (gethostname(a.host, sizeof a.host - 1) < 0)
		snprintf(a.host, sizeof a.host, "unknown");
	char err[HR_ERRLEN];
	rc = store_exec(s, create_job, &a, err);
	json_decref(a.params);
	if (rc < 0) {
		snprintf(msg, 256, "%s", err);
		return -1;
	}
	json_t *ids = json_array();
	for (int i = 0; i < p.n; i++) {
		json_t *spec_in = run_spec(a.id, &p, p.osl[i]);
		struct spec spec;
		struct spec_error se;
		if (spec_from_json(spec_in, 1, &spec, &se) < 0) {
			/* the request was checked: this is a bug, not bad input */
			snprintf(msg, 256, "calibration run spec rejected: %.200s", se.message);
			json_decref(spec_in);
			json_decref(ids);
			return -1;
		}
		int64_t rid;
		rc = runs_create(s, spec.json, &rid, err);
		spec_release(&spec);
		json_decref(spec_in);
		if (rc < 0) {
			snprintf(msg, 256, "%s", err);
			json_decref(ids);
			struct update_args f = {.id = a.id, .state = "failed", .error = msg};
			store_exec(s, update_job, &f, err); /* best effort: the store failed */
			return -1;
		}
		json_array_append_new(ids, json_integer((json_int_t)rid));
	}
	struct update_args u = {.id = a.id, .run_ids = json_dumps(ids, JSON_COMPACT)};
	json_decref(ids);
	rc = store_exec(s, update_job, &u, err);
	free(u.run_ids);
	if (rc < 0) {
		snprintf(msg, 256, "%s", err);
		return -1;
	}
	*id = a.id;
	return 0;
}

/* --- reading -------------------------------------------------------------------------- */

static json_t *parse_col(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	json_t *j = t ? json_loads(t, 0, NULL) : NULL;
	return j ? j : json_null();
}

static json_t *row_json(sqlite3_stmt *st)
{
	json_t *o = json_object();
	json_object_set_new(o, "id", json_integer(sqlite3_column_int64(st, 0)));
	json_object_set_new(o, "created_ns", json_integer(sqlite3_column_int64(st, 1)));
	json_object_set_new(o, "finished_ns", sqlite3_column_type(st, 2) == SQLITE_NULL
						   ? json_null()
						   : json_integer(sqlite3_column_int64(st, 2)));
	json_object_set_new(o, "state", json_string((const char *)sqlite3_column_text(st, 3)));
	json_object_set_new(o, "host", json_string((const char *)sqlite3_column_text(st, 4)));
	json_object_set_new(o, "params", parse_col(st, 5));
	json_object_set_new(o, "run_ids", parse_col(st, 6));
	json_object_set_new(o, "result", parse_col(st, 7));
	const char *e = (const char *)sqlite3_column_text(st, 8);
	json_object_set_new(o, "error", e ? json_string(e) : json_null());
	return o;
}

static json_t *query(struct store *s, const char *where, int64_t arg, int limit)
{
	sqlite3 *db = store_reader(s);
	char sql[512];
	snprintf(sql, sizeof sql,
		 "SELECT id, created_ns, finished_ns, state, host, params, run_ids, result, error "
		 "FROM calibrations %s ORDER BY id DESC LIMIT %d",
		 where, limit);
	sqlite3_stmt *st = NULL;
	json_t *out = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (strchr(where, '?'))
			sqlite3_bind_int64(st, 1, arg);
		out = json_array();
		while (sqlite3_step(st) == SQLITE_ROW)
			json_array_append_new(out, row_json(st));
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return out;
}

static json_t *first(json_t *list)
{
	json_t *o = json_array_size(list) ? json_incref(json_array_get(list, 0)) : NULL;
	json_decref(list);
	return o;
}

static void settle(struct store *s, long long cid);

json_t *calib_get(struct store *s, int64_t id)
{
	json_t *c = first(query(s, "WHERE id = ?", id, 1));
	const char *st = json_string_value(json_object_get(c, "state"));
	if (st && strcmp(st, "running") == 0) {
		json_decref(c);
		settle(s, (long long)id);
		c = first(query(s, "WHERE id = ?", id, 1));
	}
	return c;
}

json_t *calib_list(struct store *s, int limit)
{
	calib_settle_all(s);
	json_t *l = query(s, "", 0, limit);
	return l ? l : json_array();
}

json_t *calib_latest(struct store *s)
{
	return first(query(s, "WHERE state = 'succeeded'", 0, 1));
}

/* --- completion ------------------------------------------------------------------------ */

static double num_at(json_t *o, const char *a, const char *b, const char *c)
{
	json_t *v = json_object_get(json_object_get(json_object_get(o, a), b), c);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *real_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* Finishes calibration cid when every run it queued is over (whichever way
 * they ended: run by the runner, cancelled while queued, interrupted by a
 * daemon restart). Called when one of its runs ends, and whenever a
 * calibration is read while running, so none stays running for ever. */
static void settle(struct store *s, long long cid)
{
	json_t *cal = first(query(s, "WHERE id = ?", cid, 1));
	if (!cal)
		return;
	const char *state = json_string_value(json_object_get(cal, "state"));
	json_t *ids = json_object_get(cal, "run_ids");
	size_t want = json_array_size(json_object_get(json_object_get(cal, "params"), "osl"));
	if (!state || strcmp(state, "running") != 0 || json_array_size(ids) != want) {
		json_decref(cal);
		return;
	}
	json_t *points = json_array();
	char errbuf[512] = "";
	size_t i;
	json_t *idv;
	int done = 1;
	json_array_foreach(ids, i, idv)
	{
		json_t *run;
		char err[HR_ERRLEN];
		if (runs_get(s, json_integer_value(idv), 1, &run, err) < 0) {
			snprintf(errbuf, sizeof errbuf, "run %lld cannot be read",
				 (long long)json_integer_value(idv));
			continue;
		}
		const char *rs = json_string_value(json_object_get(run, "state"));
		if (!rs || !run_state_is_terminal(rs)) {
			done = 0;
			json_decref(run);
			break;
		}
		json_t *sum = json_object_get(run, "summary");
		if (strcmp(rs, RUN_SUCCEEDED) != 0 || !json_is_object(sum)) {
			const char *why = json_string_value(json_object_get(run, "reason"));
			snprintf(errbuf, sizeof errbuf, "run %lld %s%s%s",
				 (long long)json_integer_value(idv), rs, why ? ": " : "",
				 why ? why : "");
			json_decref(run);
			continue;
		}
		double busy = num_at(sum, "client", "headline", "loop_busy_avg");
		json_t *p = json_object();
		json_object_set(p, "osl", json_array_get(json_object_get(json_object_get(cal, "params"),
									 "osl"),
							 i));
		json_object_set_new(p, "run_id", json_integer(json_integer_value(idv)));
		json_object_set_new(p, "requests_per_s",
				    real_or_null(num_at(sum, "metrics", "request_throughput", "avg")));
		json_object_set_new(p, "tokens_per_s",
				    real_or_null(num_at(sum, "metrics", "output_token_throughput",
							"avg")));
		json_object_set_new(p, "loop_busy_avg", real_or_null(busy));
		json_object_set_new(p, "cpu_avg", real_or_null(num_at(sum, "client", "headline",
									 "cpu_avg")));
		/* below saturation the mock (or the host) was the limit: the
		 * figure is then a lower bound of the worker's ceiling */
		json_object_set_new(p, "client_saturated", json_boolean(busy >= CAL_BUSY_SATURATED));
		json_array_append_new(points, p);
		json_decref(run);
	}
	if (!done) {
		json_decref(points);
		json_decref(cal);
		return;
	}
	struct update_args u = {.id = cid};
	char err[HR_ERRLEN];
	if (errbuf[0]) {
		u.state = "failed";
		u.error = errbuf;
	} else {
		u.state = "succeeded";
		json_t *res = json_pack("{s:O}", "points", points);
		u.result = json_dumps(res, JSON_COMPACT | JSON_REAL_PRECISION(17));
		json_decref(res);
	}
	if (store_exec(s, update_job, &u, err) < 0)
		fprintf(stderr, "headroomd: calibration %lld: %s\n", cid, err);
	else
		fprintf(stderr, "headroomd: calibration %lld %s\n", cid, u.state);
	free(u.result);
	json_decref(points);
	json_decref(cal);
}

void calib_run_finished(struct store *s, int64_t run_id, json_t *spec)
{
	const char *label =
	    json_string_value(json_object_get(json_object_get(spec, "labels"), "calibration"));
	if (!label)
		return;
	char *end;
	long long cid = strtoll(label, &end, 10);
	if (*end || cid <= 0)
		return;
	settle(s, cid);
	(void)run_id;
}

void calib_settle_all(struct store *s)
{
	json_t *list = query(s, "WHERE state = 'running'", 0, 1000);
	size_t i;
	json_t *c;
	json_array_foreach(list, i, c)
		settle(s, (long long)json_integer_value(json_object_get(c, "id")));
	json_decref(list);
}
