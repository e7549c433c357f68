/* calibrate.c - calibrations of this host's client ceiling (calibrate.h). */
#include "calibrate.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hrlimits.h"
#include "log.h"
#include "runs.h"
#include "spec.h"
#include "util.h"

#define CAL_MAX_POINTS 8
#define CAL_BUSY_SATURATED 0.9 /* the worker was the limit when its loop was this busy */

/* --- the request --------------------------------------------------------------- */

#define CAL_MAX_RATES 8
#define CAL_DEFAULT_MAX_LAG_MS 1.0 /* the brief's "sustained": schedule lag p99 within 1 ms */
#define CAL_MIN_ARRIVALS 100       /* an open-loop step's rate x duration: enough for a p99 */

struct cal_params {
	int osl[CAL_MAX_POINTS], n;
	int isl, concurrency;
	double duration_s;
	/* open loop: Poisson rates (requests/s, ascending) tried per output
	 * length; the highest one sent punctually is the sustained rate */
	double rates[CAL_MAX_RATES];
	int n_rates;
	double max_lag_ms;
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

static int parse_rates(json_t *body, struct cal_params *p, char *field, char *msg)
{
	json_t *rates = json_object_get(body, "rates"), *v;
	p->n_rates = 0;
	if (rates && !json_is_null(rates)) {
		if (!json_is_array(rates) || json_array_size(rates) > CAL_MAX_RATES)
			return bad(field, msg, "rates",
				   "'rates' must be an array of at most 8 request rates");
		size_t i;
		json_array_foreach(rates, i, v)
		{
			double r = json_is_number(v) ? json_number_value(v) : NAN;
			if (!(r >= 1 && r <= 1e6))
				return bad(field, msg, "rates",
					   "'rates' entries must be numbers from 1 to 1000000 "
					   "(requests/s)");
			for (int k = 0; k < p->n_rates; k++)
				if (p->rates[k] == r)
					return bad(field, msg, "rates", "'rates' repeats a value");
			/* insertion keeps them ascending */
			int k = p->n_rates++;
			for (; k > 0 && p->rates[k - 1] > r; k--)
				p->rates[k] = p->rates[k - 1];
			p->rates[k] = r;
		}
	}
	if (p->n_rates && p->rates[0] * p->duration_s < CAL_MIN_ARRIVALS) {
		char m[256];
		snprintf(m, sizeof m,
			 "'rates' x 'duration_s' must give at least %d arrivals per step "
			 "(%.10g/s x %.10g s does not)",
			 CAL_MIN_ARRIVALS, p->rates[0], p->duration_s);
		return bad(field, msg, "rates", m);
	}
	json_t *lag = json_object_get(body, "max_lag_ms");
	p->max_lag_ms = CAL_DEFAULT_MAX_LAG_MS;
	if (lag && !json_is_null(lag)) {
		double l = json_is_number(lag) ? json_number_value(lag) : NAN;
		if (!(l >= 0.01 && l <= 1000))
			return bad(field, msg, "max_lag_ms",
				   "'max_lag_ms' must be a number from 0.01 to 1000");
		p->max_lag_ms = l;
	}
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
		    strcmp(key, "duration_s") && strcmp(key, "rates") && strcmp(key, "max_lag_ms")) {
			char m[256];
			snprintf(m, sizeof m, "unknown field '%.100s' (osl, isl, concurrency, "
					      "duration_s, rates, max_lag_ms)", key);
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
	return parse_rates(body, p, field, msg);
}

static json_t *params_json(const struct cal_params *p)
{
	json_t *osl = json_array();
	for (int i = 0; i < p->n; i++)
		json_array_append_new(osl, json_integer(p->osl[i]));
	json_t *rates = json_array();
	for (int i = 0; i < p->n_rates; i++)
		json_array_append_new(rates, json_real(p->rates[i]));
	return json_pack("{s:o, s:i, s:i, s:f, s:o, s:f}", "osl", osl, "isl", p->isl,
			 "concurrency", p->concurrency, "duration_s", p->duration_s, "rates", rates,
			 "max_lag_ms", p->max_lag_ms);
}

/* The run at output length osl: closed loop at the concurrency when rate
 * is 0, else open loop (Poisson arrivals) at rate requests/s. */
static json_t *run_spec(int64_t id, const struct cal_params *p, int osl, double rate)
{
	char name[128], label[32];
	json_t *load;
	if (rate > 0) {
		snprintf(name, sizeof name, "calibration %lld: output length %d at %.10g/s",
			 (long long)id, osl, rate);
		load = json_pack("{s:s, s:f, s:s, s:f}", "mode", "rate", "rate", rate, "arrival",
				 "poisson", "duration_s", p->duration_s);
	} else {
		snprintf(name, sizeof name, "calibration %lld: output length %d", (long long)id,
			 osl);
		load = json_pack("{s:s, s:i, s:f}", "mode", "concurrency", "concurrency",
				 p->concurrency, "duration_s", p->duration_s);
	}
	snprintf(label, sizeof label, "%lld", (long long)id);
	return json_pack(
	    "{s:s, s:{s:s}, s:{s:b, s:s, s:s, s:b},"
	    " s:{s:s, s:{s:i, s:i}, s:{s:i, s:i}, s:i},"
	    " s:o, s:i, s:{s:b, s:b, s:[]}, s:{s:b}}",
	    "name", name, "labels", "calibration", label, "target", "mock", 1, "endpoint", "chat",
	    "model", "mock-model", "stream", 1, "workload", "kind", "synthetic", "isl", "mean",
	    p->isl, "stddev", 0, "osl", "mean", osl, "stddev", 0, "seed", 1, "load", load,
	    "workers", 1, "telemetry", "nvml", 0, "server_metrics", 0, "dcgm_urls", "client",
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
	/* per output length: the closed-loop run, then one per rate */
	json_t *ids = json_array();
	for (int i = 0; i < p.n * (1 + p.n_rates); i++) {
		int k = i % (1 + p.n_rates);
		json_t *spec_in = run_spec(a.id, &p, p.osl[i / (1 + p.n_rates)],
					   k ? p.rates[k - 1] : 0);
		struct spec spec;
		struct spec_error se;
		int64_t rid;
		if (spec_from_json(spec_in, 1, &spec, &se) < 0) {
			/* the request was checked: this is a bug, not bad input */
			snprintf(msg, 256, "calibration run spec rejected: %.200s", se.message);
			rc = -1;
		} else {
			rc = runs_create(s, spec.json, &rid, err);
			spec_release(&spec);
			if (rc < 0)
				snprintf(msg, 256, "%s", err);
		}
		json_decref(spec_in);
		if (rc < 0) {
			/* the calibration ends failed, not running for ever; runs
			 * already queued run as ordinary runs */
			json_decref(ids);
			struct update_args f = {.id = a.id, .state = "failed", .error = msg};
			store_exec(s, update_job, &f, err); /* best effort: the store may have failed */
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

/* Calibrations stored before open-loop steps existed read as having none. */
static void fill_open_loop_defaults(json_t *o)
{
	json_t *params = json_object_get(o, "params");
	if (json_is_object(params) && !json_object_get(params, "rates")) {
		json_object_set_new(params, "rates", json_array());
		json_object_set_new(params, "max_lag_ms", json_real(CAL_DEFAULT_MAX_LAG_MS));
	}
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(json_object_get(o, "result"), "points"), i, p)
	{
		if (json_is_object(p) && !json_object_get(p, "open_loop")) {
			json_object_set_new(p, "open_loop", json_array());
			json_object_set_new(p, "sustained_requests_per_s", json_null());
			json_object_set_new(p, "sustained_lower_bound", json_false());
		}
	}
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
	fill_open_loop_defaults(o);
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

/* One open-loop step: the rate tried and how its run went (out: the run's
 * state, reason and summary, see settle). Sustained: the run succeeded with
 * no errors, nothing left unsent, and the schedule lag p99 within
 * max_lag_ms (sent on time, so the achieved rate is the schedule's). */
static json_t *open_step(double rate, json_int_t run_id, json_t *out, double max_lag_ms,
			 int *sustained)
{
	json_t *sum = json_object_get(out, "summary");
	int succeeded = strcmp(json_string_value(json_object_get(out, "state")), RUN_SUCCEEDED) == 0;
	double lag = num_at(sum, "metrics", "schedule_lag", "p99");
	json_t *errs = json_object_get(json_object_get(sum, "counts"), "errors");
	json_t *unsent = json_object_get(json_object_get(sum, "load"), "unsent");
	json_int_t n_unsent = json_is_integer(unsent) ? json_integer_value(unsent) : 0;
	*sustained = succeeded && isfinite(lag) && lag <= max_lag_ms && json_is_integer(errs) &&
		     json_integer_value(errs) == 0 && n_unsent == 0;
	json_t *ach = json_object_get(json_object_get(sum, "load"), "achieved_rate");
	return json_pack("{s:f, s:I, s:O, s:O, s:o, s:o, s:O, s:o, s:b}", "rate", rate, "run_id",
			 run_id, "run_state", json_object_get(out, "state"), "reason",
			 json_object_get(out, "reason"), "achieved_rate",
			 json_is_number(ach) ? json_incref(ach) : json_null(), "schedule_lag_p99_ms",
			 real_or_null(lag), "errors", json_is_integer(errs) ? errs : json_null(),
			 "unsent", json_is_object(sum) ? json_integer(n_unsent) : json_null(),
			 "sustained", *sustained);
}

/* The closed-loop point of one output length, with its open-loop steps
 * (sums: the summaries of its runs, closed loop first). */
static json_t *make_point(json_t *osl, json_t *ids, json_t *sums, size_t first_run, json_t *rates,
			  double max_lag_ms)
{
	json_t *sum = json_object_get(json_array_get(sums, first_run), "summary");
	double busy = num_at(sum, "client", "headline", "loop_busy_avg");
	json_t *p = json_object();
	json_object_set(p, "osl", osl);
	json_object_set(p, "run_id", json_array_get(ids, first_run));
	json_object_set_new(p, "requests_per_s",
			    real_or_null(num_at(sum, "metrics", "request_throughput", "avg")));
	json_object_set_new(p, "tokens_per_s",
			    real_or_null(num_at(sum, "metrics", "output_token_throughput", "avg")));
	json_object_set_new(p, "loop_busy_avg", real_or_null(busy));
	json_object_set_new(p, "cpu_avg", real_or_null(num_at(sum, "client", "headline",
								 "cpu_avg")));
	/* below saturation the mock (or the host) was the limit: the figure is
	 * then a lower bound of the worker's ceiling */
	json_object_set_new(p, "client_saturated", json_boolean(busy >= CAL_BUSY_SATURATED));
	json_t *steps = json_array();
	double best = NAN;
	for (size_t j = 0; j < json_array_size(rates); j++) {
		double rate = json_number_value(json_array_get(rates, j));
		int ok;
		json_array_append_new(
		    steps, open_step(rate, json_integer_value(json_array_get(ids, first_run + 1 + j)),
				     json_array_get(sums, first_run + 1 + j), max_lag_ms, &ok));
		if (ok)
			best = rate; /* ascending: the last sustained is the highest */
	}
	json_object_set_new(p, "open_loop", steps);
	json_object_set_new(p, "sustained_requests_per_s", real_or_null(best));
	/* the highest rate tried was sustained: the worker may pace more */
	json_object_set_new(p, "sustained_lower_bound",
			    json_boolean(isfinite(best) && best == json_number_value(json_array_get(
									rates, json_array_size(rates) - 1))));
	return p;
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
	json_t *params = json_object_get(cal, "params");
	json_t *osls = json_object_get(params, "osl"), *rates = json_object_get(params, "rates");
	size_t per = 1 + json_array_size(rates);
	if (!state || strcmp(state, "running") != 0 ||
	    json_array_size(ids) != json_array_size(osls) * per) {
		json_decref(cal);
		return;
	}
	/* every run must be over. An open-loop run that failed is a rate the
	 * worker could not cope with (a step not sustained); any other run
	 * that did not succeed fails the calibration. sums: per run, its
	 * {state, reason, summary} */
	json_t *sums = json_array();
	char errbuf[512] = "";
	size_t i;
	json_t *idv;
	json_array_foreach(ids, i, idv)
	{
		json_t *run;
		char err[HR_ERRLEN];
		long long rid = (long long)json_integer_value(idv);
		if (runs_get(s, rid, 1, &run, err) < 0) {
			snprintf(errbuf, sizeof errbuf, "run %lld cannot be read", rid);
			json_array_append_new(sums, json_null());
			continue;
		}
		const char *rs = json_string_value(json_object_get(run, "state"));
		if (!rs || !run_state_is_terminal(rs)) {
			json_decref(run);
			json_decref(sums);
			json_decref(cal);
			return;
		}
		json_t *sum = json_object_get(run, "summary");
		json_t *why = json_object_get(run, "reason");
		int ok = strcmp(rs, RUN_SUCCEEDED) == 0 && json_is_object(sum);
		if (ok || (i % per != 0 && strcmp(rs, RUN_FAILED) == 0)) {
			json_array_append_new(
			    sums, json_pack("{s:s, s:O, s:O}", "state", ok ? RUN_SUCCEEDED : RUN_FAILED,
					    "reason", json_is_string(why) ? why : json_null(),
					    "summary", json_is_object(sum) ? sum : json_null()));
		} else {
			const char *w = json_string_value(why);
			snprintf(errbuf, sizeof errbuf, "run %lld %s%s%s", rid, rs, w ? ": " : "",
				 w ? w : "");
			json_array_append_new(sums, json_null());
		}
		json_decref(run);
	}
	struct update_args u = {.id = cid};
	if (errbuf[0]) {
		u.state = "failed";
		u.error = errbuf;
	} else {
		double max_lag = json_number_value(json_object_get(params, "max_lag_ms"));
		json_t *points = json_array();
		for (i = 0; i < json_array_size(osls); i++)
			json_array_append_new(points, make_point(json_array_get(osls, i), ids, sums,
								 i * per, rates,
								 max_lag > 0 ? max_lag
									     : CAL_DEFAULT_MAX_LAG_MS));
		u.state = "succeeded";
		json_t *res = json_pack("{s:o}", "points", points);
		u.result = json_dumps(res, JSON_COMPACT | JSON_REAL_PRECISION(17));
		json_decref(res);
	}
	char err[HR_ERRLEN];
	if (store_exec(s, update_job, &u, err) < 0)
		hlog(LOG_INFO, "calibrate", "calibration %lld: %s\n", cid, err);
	else
		hlog(LOG_INFO, "calibrate", "calibration %lld %s\n", cid, u.state);
	free(u.result);
	json_decref(sums);
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
